// The updates of one stream entry form a group, and the client applies a group as one change:
// over a real WebSocket, with updates arriving in bursts cut anywhere (inside groups too), no
// listener and no `view` read ever sees a state between two updates of one entry.
import fc from 'fast-check';
import type { TaskView, Update } from '@baton/protocol';
import { initialTaskState, type TaskState } from '@baton/activity';
import { CLAUDE_CAPS, Owner, play, snapshotOf, streams } from '@baton/testing';
import { BatonClient, stepUpdate, type Subscription } from '../src';
import { TOKEN, WireServer, visibleTo } from './wire-server';
import { startedSession, viewsOneByOne, waitFor } from '@baton/testing';

jest.setTimeout(120_000);

let server: WireServer;
let client: BatonClient;
let tasks = 0;

beforeAll(async () => {
  server = await WireServer.start();
  client = new BatonClient({ requestTimeoutMs: 10_000 });
  await client.connect(server.url, TOKEN);
});
afterAll(async () => {
  await client.close();
  await server.close();
});

/** What a subscription (to the task, or to one of its sessions) shows of a view. */
function shown(view: TaskView, sessionId: string | undefined): string {
  // (Not its task id: each run watches a task of its own.)
  const { taskId: _taskId, ...rest } = view;
  if (sessionId === undefined) return JSON.stringify(rest);
  const { activity, sessions } = view;
  return JSON.stringify({ activity, sessions: sessions.filter((s) => s.sessionId === sessionId) });
}

/** Every state after a whole entry: the only views a client may ever show. */
function wholeGroupViews(states: readonly TaskState[], sessionId: string | undefined): Set<string> {
  return new Set(states.map((s) => shown(snapshotOf(s), sessionId)));
}

/**
 * Subscribes a fresh task (its snapshot: the empty task), sends `updates` in bursts of the given
 * sizes with a round trip after each, and returns every view the client let anyone see: each
 * onView, `sub.view` at each `update` event and after each burst.
 */
async function watch(
  updates: readonly Update[],
  bursts: readonly number[],
  sessionId: string | undefined,
): Promise<{ seen: TaskView[]; views: number; sub: Subscription; taskId: string }> {
  const taskId = `g${++tasks}`;
  const seen: TaskView[] = [];
  let views = 0;
  const sub = client.subscribe(taskId, {
    ...(sessionId !== undefined ? { sessionId } : {}),
    onView: (v, cause) => {
      seen.push(v);
      if (cause === 'update') views++;
    },
  });
  const off = client.on('update', (u) => {
    if (u.taskId === taskId && sub.view) seen.push(sub.view);
  });
  await sub.ready;
  // Stamped as the projector stamps them; renamed to this task; filtered as the gateway would.
  const sent = visibleTo(
    updates.map((u) => ({ ...u, taskId })),
    sessionId,
  );
  let i = 0;
  for (let b = 0; i < sent.length; b++) {
    const n = 1 + (bursts.length > 0 ? bursts[b % bursts.length]! : 0);
    for (const u of sent.slice(i, i + n)) server.sendUpdate(u);
    i += n;
    await client.ping();
    if (sub.view) seen.push(sub.view);
  }
  off();
  await client.unsubscribe(taskId);
  return { seen, views, sub, taskId };
}

describe('a client applies the updates of one entry as one change', () => {
  it('never exposes a state that is not the state after some whole group', async () => {
    let partialStates = 0;
    await fc.assert(
      fc.asyncProperty(
        streams,
        fc.array(fc.nat(6), { maxLength: 8 }),
        fc.constantFrom(undefined, 's1', 's2'),
        async (steps, bursts, sessionId) => {
          const { owner, checkpoints } = play(steps);
          const states = [initialTaskState('t1'), ...checkpoints.map((c) => c.state)];
          const allowed = wholeGroupViews(states, sessionId);
          // The control: applied one at a time, the same updates do show states between groups.
          let v = snapshotOf(states[0]!);
          for (const u of owner.updates) {
            const r = stepUpdate(v, u);
            if (r.kind === 'applied') v = r.view;
            if (!allowed.has(shown(v, sessionId))) partialStates++;
          }
          const groups = checkpoints.filter((c) => c.updates.length > 0).length;
          const { seen, views } = await watch(owner.updates, bursts, sessionId);
          for (const view of seen) expect(allowed).toContain(shown(view, sessionId));
          // One view per group at most, and the last one is the state after the last entry.
          expect(views).toBeLessThanOrEqual(groups);
          if (owner.updates.length > 0) {
            const last = seen[seen.length - 1]!;
            expect(shown(last, sessionId)).toBe(shown(snapshotOf(owner.state), sessionId));
          }
        },
      ),
      { numRuns: 60 },
    );
    // Without groups the generated streams do reach states that never existed.
    expect(partialStates).toBeGreaterThan(0);
  });

  it('never shows a subagent count of 1 with an empty work list', async () => {
    const { o, x } = startedSession(CLAUDE_CAPS);
    const promptId = o.submit('s1', 'k1');
    x.dispatch(promptId, o.session('s1').turn!.generation);
    x.output();
    const from = o.updates.length;
    x.subagent('a1');
    const group = o.updates.slice(from);
    // One entry, several updates: the count and the work list move in separate updates.
    expect(new Set(group.map((u) => u.entry)).size).toBe(1);
    expect(group.map((u) => u.last)).toEqual([...group.slice(1).map(() => false), true]);
    expect(group.map((u) => u.type)).toEqual(
      expect.arrayContaining(['session.activity', 'chat/backgroundWorkSet']),
    );
    const inconsistent = (view: TaskView) =>
      view.sessions.some(
        (s) => s.activity.activeSubagentCount === 1 && s.backgroundWork.length === 0,
      );
    // Applied one update at a time, a client would show it.
    const oneByOne = viewsOneByOne(snapshotOf(initialTaskState('t1')), o.updates);
    expect(oneByOne.some(inconsistent)).toBe(true);
    // The client, given every update in its own frame with a round trip between, never does.
    for (const sessionId of [undefined, 's1']) {
      const { seen } = await watch(
        o.updates,
        o.updates.map(() => 0),
        sessionId,
      );
      expect(seen.filter(inconsistent)).toEqual([]);
      const last = seen[seen.length - 1]!;
      expect(last.sessions[0]!.activity.activeSubagentCount).toBe(1);
      expect(last.sessions[0]!.backgroundWork.map((w) => w.id)).toEqual(['a1']);
    }
  });

  it('forgets a half-received group when the connection drops, and applies it whole on resume', async () => {
    const taskId = `g${++tasks}`;
    const seen: TaskView[] = [];
    const sub = client.subscribe(taskId, { onView: (v) => seen.push(v) });
    await sub.ready;
    const o = new Owner(taskId);
    const x = o.execution('s1', 'e1', 1);
    x.start(CLAUDE_CAPS);
    const before = o.updates.length;
    x.subagent('a1');
    const group = o.updates.slice(before);
    expect(group.length).toBeGreaterThan(1);
    for (const u of o.updates.slice(0, before)) server.sendUpdate(u);
    // Half the group arrives, then the connection drops: the half is not applied...
    server.sendUpdate(group[0]!);
    await client.ping();
    expect(sub.seq).toBe(before);
    expect(sub.view).toEqual(seen[seen.length - 1]);
    // ...and the resumed subscription (from the group's start) gets all of it again.
    server.owners.set(taskId, o);
    server.terminateAll();
    await waitFor(() => sub.state === 'live' && sub.seq === o.state.seq, 'condition');
    expect(sub.view).toEqual(snapshotOf(o.state));
    expect(seen.every((v) => v.seq <= before || v.seq === o.state.seq)).toBe(true);
    await client.unsubscribe(taskId);
  });
});

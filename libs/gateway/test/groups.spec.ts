// Updates of one stream entry form a group, end to end: a real projector stamps them, a real
// gateway forwards them (closing each group for a client subscribed to one session), and
// @baton/client applies each group as one change. One Redis, one projector, one gateway.
import { BatonClient } from '@baton/client';
import type { TaskView } from '@baton/protocol';
import { Client, FakeWorker, subagentStarted, tenantStack, waitFor } from '@baton/testing';

jest.setTimeout(90_000);

const files = tenantStack('groups', { gateways: 1, projectors: 1 });
const { tok, K } = files;

type Json = Record<string, unknown>;
const subagent = (id: string) => subagentStarted(id, '2026-12-02T00:00:00Z');

/**
 * The updates a client got, checked as groups: each names a stream entry of the task and says
 * whether it ends its group; a group's updates come together and the last one sent ends it.
 */
function groupsOf(updates: readonly Json[], entryIds: ReadonlySet<string>): Json[][] {
  const groups: Json[][] = [];
  let open: Json[] = [];
  for (const u of updates) {
    expect(typeof u.entry).toBe('string');
    expect(typeof u.last).toBe('boolean');
    expect(entryIds.has(u.entry as string)).toBe(true);
    if (open.length > 0) expect(u.entry).toBe(open[0]!.entry);
    open.push(u);
    if (u.last === true) {
      groups.push(open);
      open = [];
    }
  }
  expect(open).toEqual([]);
  return groups;
}

describe('groups of updates through a real projector and gateway', () => {
  it('every update carries its entry and the group end, for task and session subscriptions; the client applies whole groups', async () => {
    const taskId = 'g1';
    // The tenant has the task (as a prompt or an execution start records it): subscribe first.
    await files.stack.store.tenants.add('groups', taskId);
    const [whole, s2Only] = await Promise.all([
      Client.connect(files.A, tok),
      Client.connect(files.A, tok),
    ]);
    expect((await whole.request({ op: 'subscribe', taskId })).ok).toBe(true);
    // s1's entries end their groups with s1 or task updates, which a subscriber of s2 never gets.
    expect((await s2Only.request({ op: 'subscribe', taskId, sessionId: 's2' })).ok).toBe(true);
    const client = new BatonClient();
    await client.connect(`${files.A}/ws`, tok);
    const views: TaskView[] = [];
    const seenAtUpdate: TaskView[] = [];
    const sub = client.subscribe(taskId, { onView: (v) => views.push(v) });
    client.on('update', () => {
      if (sub.view) seenAtUpdate.push(sub.view);
    });
    await sub.ready;
    const w1 = new FakeWorker(files.stack.store, K(taskId), 's1');
    const w2 = new FakeWorker(files.stack.store, K(taskId), 's2');
    await w1.start();
    await w2.start();
    const reply = await whole.request({
      op: 'prompt',
      taskId,
      sessionId: 's1',
      text: 'go',
      idempotencyKey: 'k1',
    });
    const promptId = (reply.result as Json).promptId as string;
    await w1.fact('prompt.dispatched', { promptId, admissionGeneration: 1 });
    await w1.fact('foreground.output', { channel: 'message' });
    await w1.fact('background.started', subagent('sub-a'));
    await w2.fact('background.started', subagent('sub-b'));
    await w1.fact('background.ended', { workId: 'sub-a', status: 'completed' });
    await w1.fact('turn.ended', { admissionGeneration: 1, stopReason: 'end_turn' });
    await w2.fact('background.ended', { workId: 'sub-b', status: 'completed' });

    const last = await waitFor(async () => {
      const v = await files.stack.store.views.read(K(taskId));
      const idle = v?.sessions.every(
        (s) => s.backgroundWork.length === 0 && !s.activity.runningGeneration,
      );
      return idle && v!.seq > 0 && v!.seq;
    }, 'the projector to settle');
    await waitFor(() => whole.updates(taskId).some((u) => u.seq === last), 'every update');
    await waitFor(() => sub.seq === last, 'the client to catch up');
    await waitFor(
      async () => (await s2Only.request({ op: 'ping' })).ok && s2Only.updates(taskId).length > 0,
      's2 updates',
    );

    const entries = (await files.stack.store.readTask(K(taskId))).items;
    const ids = new Set(entries.map((e) => e.id));
    // The whole task: every update, in groups that are exactly the entries' (several of them
    // with more than one update), each closed by the projector's own marker.
    const all = whole.updates(taskId);
    expect(all.map((u) => u.seq)).toEqual(all.map((_, i) => i + 1));
    const groups = groupsOf(all, ids);
    expect(groups.some((g) => g.length > 1)).toBe(true);
    expect(new Set(groups.map((g) => g[0]!.entry)).size).toBe(groups.length);
    const order = entries.map((e) => e.id);
    const at = groups.map((g) => order.indexOf(g[0]!.entry as string));
    expect(at).toEqual([...at].sort((a, b) => a - b));

    // One session: only its own and the task's updates, and each group it gets is closed, even
    // when the group's last update was another session's (then the gateway marks its last).
    const mine = s2Only.updates(taskId);
    for (const u of mine) expect([undefined, 's2']).toContain((u.data as Json).sessionId);
    const closedByGateway = groupsOf(mine, ids).filter((g) => {
      const ended = g[g.length - 1]!;
      const original = all.find((u) => u.seq === ended.seq)!;
      return original.last === false;
    });
    expect(closedByGateway.length).toBeGreaterThan(0);

    // The client: one view per group at most, none of them between two updates of one entry.
    expect(views.filter((v) => v.seq > 0).length).toBeLessThanOrEqual(groups.length);
    const ends = new Set(groups.map((g) => g[g.length - 1]!.seq as number));
    for (const v of [...views, ...seenAtUpdate]) expect(v.seq === 0 || ends.has(v.seq)).toBe(true);
    for (const v of views)
      for (const s of v.sessions)
        expect(s.activity.activeSubagentCount > 0 && s.backgroundWork.length === 0).toBe(false);
    expect(sub.view).toEqual({ ...(await files.stack.store.views.read(K(taskId)))!, taskId });

    await Promise.all([whole.close(), s2Only.close(), client.close()]);
  });
});

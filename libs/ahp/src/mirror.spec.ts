import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import type { QueueView, SessionActivityView, SessionView, Update } from '@baton/protocol';
import { transcriptOf, type RecordedFrame } from '@baton/transcript';
import { activityView as activity, reduce as clientReduce } from '@baton/testing';
import {
  ChatMirror,
  SessionMirror,
  chatActions,
  chatSummaryStatus,
  emptyChat,
  rootState,
} from './mirror';
import { parseSessionUri, sessionUri } from './wire';
import { Status, chatReducer, type ChatState } from './reducer';

/** The fixtures' rule: `null` stands for an absent key; compare with absent keys dropped. */
const norm = (v: unknown): unknown =>
  JSON.parse(JSON.stringify(v, (_k, x) => (x === null ? undefined : x)));

type Fixture = {
  file: string;
  description: string;
  reducer: string;
  initial: ChatState;
  actions: { type: string }[];
  expected: unknown;
};
const load = (dir: string): Fixture[] =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => ({
      file: f,
      ...(JSON.parse(readFileSync(join(dir, f), 'utf8')) as Omit<Fixture, 'file'>),
    }));

// Upstream AHP v1.0.0 reducer fixtures (types/test-cases/reducers, as vendored unchanged by
// softov/ahpd@79be3dde) for what Baton's chats use: turns, tool calls and their confirmation
// (019–021, 024–026, 028, 029, 096), pending/queued messages, backgroundWork.
// Baton's own, in the same form (b01–b04): the actions the host sends for a permission request
// and each way it is settled, folded by the spec's reducer.
const fixtures = [
  ...load(join(__dirname, '..', 'fixtures', 'reducers')),
  ...load(join(__dirname, '..', 'fixtures', 'baton')),
  ...load(join(__dirname, '..', 'fixtures', 'background-work')),
];

describe('AHP chat reducer (from the spec) against the upstream fixtures', () => {
  it('has the turn, pending-message and background-work fixtures', () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(35);
    // Every upstream steering fixture (039–044, 052, 008).
    for (const n of ['008', '039', '040', '041', '042', '043', '044', '052']) {
      expect(fixtures.some((f) => f.file.startsWith(`${n}-`))).toBe(true);
    }
    // The tool-call confirmation fixtures (a permission request is a pending-confirmation call).
    for (const n of ['019', '020', '021', '024', '025', '026', '028', '029', '096']) {
      expect(fixtures.some((f) => f.file.startsWith(`${n}-`))).toBe(true);
    }
  });
  it.each(fixtures.map((f) => [f.file, f] as const))('%s', (_f, f) => {
    expect(f.reducer).toBe('chat');
    const initial = norm(f.initial) as ChatState;
    const after = f.actions.reduce((s, a) => chatReducer(s, a), initial);
    expect(norm(after)).toEqual(norm(f.expected));
    // The client's reducer the conformance suite uses agrees on every fixture it models.
    const viaClient = f.actions.reduce(
      (s, a) => clientReduce(s, a),
      initial as Record<string, unknown>,
    );
    expect(norm(viaClient)).toEqual(norm(f.expected));
  });
  it('a removal that matches nothing returns the very same state', () => {
    const s = emptyChat('ahp-chat:/t/s', 's', '2026-01-01T00:00:00.000Z');
    expect(chatReducer(s, { type: 'chat/backgroundWorkRemoved', id: 'x' })).toBe(s);
    expect(chatReducer(s, { type: 'chat/pendingMessageRemoved', kind: 'queued', id: 'x' })).toBe(s);
    expect(chatReducer(s, { type: 'x-baton/queue' })).toBe(s);
  });
});

const queue = (keys: string[]): QueueView => ({
  autoRun: true,
  capacity: 0,
  entries: keys.map((k) => ({
    promptId: `p-${k}`,
    idempotencyKey: k,
    text: `text ${k}`,
    origin: 'human',
  })),
  blockedBy: keys.length ? 'busy' : null,
});
/** An update of session `s` of task `t`, as the projector publishes it. */
const update = (type: string, data: object): Update =>
  ({ v: 1, taskId: 't', seq: 1, type, data: { sessionId: 's', ...data } }) as unknown as Update;
/** Baton admits prompt `promptId` (by `idempotencyKey`) as turn `gen`, which starts running. */
const turnAdmitted = (promptId: string, idempotencyKey: string, gen: number): Update[] => [
  update('prompt.decided', {
    promptId,
    idempotencyKey,
    decision: { outcome: 'admitted', mode: 'turn', admissionGeneration: gen },
  }),
  update('session.activity', activity({ runningGeneration: gen, state: 'running' })),
];
const shell = (id: string, label = id) => ({
  kind: 'shell' as const,
  id,
  label,
  command: id,
  startedAt: '2026-12-01T00:00:00.000Z',
});

/** Arbitrary Baton views of one session, one step at a time. */
const step = fc.record({
  gen: fc.option(fc.integer({ min: 1, max: 4 }), { nil: null }),
  state: fc.constantFrom('idle', 'running', 'waiting_for_input', 'failed', 'cancelled'),
  fg: fc.constantFrom('generating', 'background', null),
  queued: fc.uniqueArray(fc.constantFrom('k1', 'k2', 'k3', 'k4'), { maxLength: 4 }),
  work: fc.uniqueArray(fc.constantFrom('w1', 'w2', 'w3'), { maxLength: 3 }),
  relabel: fc.boolean(),
  /** Baton admits a steer of this generation (a prompt delivered into the running turn). */
  steer: fc.option(fc.integer({ min: 1, max: 5 }), { nil: null }),
  /** The agent asks permission (a new request opens). */
  ask: fc.boolean(),
  /** The oldest open request is settled, and how (`unseen`: the host is not told how). */
  answer: fc.option(fc.constantFrom('allow', 'reject', 'timeout', 'cancelled', 'unseen'), {
    nil: null,
  }),
});

const OPTIONS = [
  { optionId: 'allow', name: 'Allow', kind: 'allow_once' },
  { optionId: 'always', name: 'Always allow', kind: 'allow_always' },
  { optionId: 'reject', name: 'Reject', kind: 'reject_once' },
];
const request = (id: string) => ({
  requestId: id,
  toolCallId: `toolu_${id}`,
  title: `Bash: rm -rf ${id}`,
  toolKind: 'execute',
  options: OPTIONS,
  executionId: 'e1',
});
type Step = Parameters<Parameters<typeof step.map>[0]>[0];
/** The session view a step stands for, with these permission requests open. */
const viewOf = (x: Step, open: string[] = []): SessionView => ({
  sessionId: 's',
  activity: activity({
    runningGeneration: x.gen,
    state: x.state as SessionActivityView['state'],
    foregroundActivity: x.fg as SessionActivityView['foregroundActivity'],
  }),
  queue: queue(x.queued),
  backgroundWork: x.work.map((w) => shell(w, x.relabel ? `${w}!` : w)),
  permissions: open.map(request),
});
/** How a request was settled, as session.permissions says it. */
const settledAs = (id: string, how: string) =>
  how === 'allow'
    ? { requestId: id, outcome: 'selected', optionId: 'allow', by: 'person' }
    : how === 'reject'
      ? { requestId: id, outcome: 'selected', optionId: 'reject', by: 'person' }
      : how === 'timeout'
        ? { requestId: id, outcome: 'selected', optionId: 'reject', by: 'timeout' }
        : { requestId: id, outcome: 'cancelled', by: 'turn_cancelled' };

describe('Baton view → AHP chat actions (pure mapping)', () => {
  it('at every step, a client folding the actions from the snapshot has exactly the host’s state, and its status is the spec’s derivation', () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 25 }), (steps) => {
        const mirror = new ChatMirror('t', 's', '2026-12-01T00:00:00.000Z');
        let open: string[] = [];
        const view = (x: Step) => viewOf(x, open);
        mirror.sync(view(steps[0]!), '2026-12-01T00:00:00.000Z');
        let client = norm(mirror.ahp) as Record<string, unknown>;
        let steer: number | null = null;
        steps.slice(1).forEach((x, i) => {
          const now = new Date(
            Date.parse('2026-12-01T00:00:00.000Z') + (i + 1) * 1000,
          ).toISOString();
          if (x.steer !== null) {
            const decided = {
              v: 1,
              taskId: 't',
              seq: i + 1,
              type: 'prompt.decided',
              data: {
                sessionId: 's',
                promptId: `ps${x.steer}`,
                idempotencyKey: `steer-${x.steer}`,
                decision: { outcome: 'admitted', mode: 'steer', admissionGeneration: x.steer },
              },
            } as unknown as Update;
            for (const a of mirror.applyGroup([decided], now)) client = clientReduce(client, a);
            expect(norm(client)).toEqual(norm(mirror.ahp));
            if (steer === null || x.steer >= steer) steer = x.steer;
          }
          // Permission requests: one opens, the oldest is settled (session.permissions says how).
          const before = open;
          if (x.answer !== null && open.length > 0) open = open.slice(1);
          if (x.ask) open = [...open, `r${i}`];
          if (before.join() !== open.join()) {
            const left = before.filter((r) => !open.includes(r));
            const perms = {
              v: 1,
              taskId: 't',
              seq: i + 1,
              type: 'session.permissions',
              data: {
                sessionId: 's',
                requests: open.map(request),
                ...(x.answer !== 'unseen' && left.length > 0
                  ? { resolved: left.map((r) => settledAs(r, x.answer!)) }
                  : {}),
              },
            } as unknown as Update;
            for (const a of mirror.applyGroup([perms], now)) client = clientReduce(client, a);
            expect(norm(client)).toEqual(norm(mirror.ahp));
          }
          const actions = mirror.sync(view(x), now);
          for (const a of actions) client = clientReduce(client, a);
          expect(norm(client)).toEqual(norm(mirror.ahp));
          // An open request is a tool call of the running turn awaiting confirmation (status
          // InputNeeded); a settled one has left pending-confirmation.
          const calls = (mirror.ahp.activeTurn?.responseParts ?? []).map(
            (p) => (p as { toolCall: { toolCallId: string; status: string } }).toolCall,
          );
          const pending = calls.filter((c) => c.status === 'pending-confirmation');
          if (mirror.ahp.activeTurn) {
            for (const r of open) {
              const c = calls.find((t) => t.toolCallId === r);
              // Opened in this turn: awaiting confirmation.
              if (c) expect(c.status).toBe('pending-confirmation');
            }
            expect(pending.every((c) => open.includes(c.toolCallId))).toBe(true);
            expect(mirror.ahp.status & 0b11111).toBe(
              pending.length > 0 ? Status.InputNeeded : Status.InProgress,
            );
          }
          // The steering message is Baton's steer while a turn of an earlier generation runs.
          const steering = steer !== null && x.gen !== null && x.gen < steer;
          expect(mirror.ahp.steeringMessage?.id).toBe(steering ? `steer-${steer}` : undefined);
          const s = mirror.ahp;
          // Status bits as the spec derives them: busy iff a turn is active, never from background
          // work; a tool call awaiting confirmation makes it InputNeeded (which has the busy bit).
          if (s.activeTurn) expect(s.status & Status.InProgress).toBe(Status.InProgress);
          else
            expect(s.status & 0b11111).toBe(
              s.turns.at(-1)?.state === 'error' ? Status.Error : Status.Idle,
            );
          // The running generation is the active turn; the queue is queuedMessages, in order.
          expect(Boolean(s.activeTurn)).toBe(x.gen !== null);
          expect((s.queuedMessages ?? []).map((m) => m.id)).toEqual(x.queued);
          // AHP has no reorder for background work (Set appends, Baton's list grows the same way):
          // the entries are the view's.
          expect((s.backgroundWork ?? []).map((w) => w.id).sort()).toEqual([...x.work].sort());
        });
      }),
      { numRuns: 300 },
    );
  });

  it('a reconnecting client: the mirror restored from what it had at any step and brought to a later view gives the actions that take it there', () => {
    // What a reconnect's reply carries after the window's envelopes (the gateway's catch-up):
    // the client, away since some step, folds them and has the host's state, as one that never
    // left would.
    const at = (i: number) =>
      new Date(Date.parse('2026-12-01T00:00:00.000Z') + i * 1000).toISOString();
    const view = (x: Step) => viewOf(x);
    fc.assert(
      fc.property(fc.array(step, { minLength: 2, maxLength: 20 }), fc.nat(), (steps, pick) => {
        const stayed = new ChatMirror('t', 's', at(0));
        const had: { state: ChatState; knowledge: string }[] = [];
        steps.forEach((x, i) => {
          stayed.sync(view(x), at(i));
          had.push({ state: structuredClone(stayed.ahp), knowledge: stayed.knowledge() });
        });
        const left = had[pick % (had.length - 1)]!;
        const back = new ChatMirror('t', 's', at(0));
        back.restore(structuredClone(left.state), left.knowledge);
        let client = norm(left.state) as Record<string, unknown>;
        for (const a of back.sync(view(steps.at(-1)!), at(steps.length))) {
          client = clientReduce(client, a);
        }
        expect(norm(client)).toEqual(norm(back.ahp));
        // What it has is Baton's view now, and every turn it had is still there, ended.
        const last = steps.at(-1)!;
        const s = back.ahp;
        expect(Boolean(s.activeTurn)).toBe(last.gen !== null);
        expect((s.queuedMessages ?? []).map((m) => m.id)).toEqual(last.queued);
        expect((s.backgroundWork ?? []).map((w) => [w.id, w.label]).sort()).toEqual(
          last.work.map((w) => [w, last.relabel ? `${w}!` : w]).sort(),
        );
        const ids = s.turns.map((t) => t.id);
        for (const t of left.state.turns) expect(ids).toContain(t.id);
        if (left.state.activeTurn && s.activeTurn?.id !== left.state.activeTurn.id) {
          expect(ids).toContain(left.state.activeTurn.id);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('idle after a turn is Idle (not InProgress|InputNeeded); background work alone is not busy; an open turn with background work is InProgress', () => {
    const m = new ChatMirror('t', 's', '2026-12-01T00:00:00.000Z');
    const v = (
      gen: number | null,
      state: SessionActivityView['state'],
      fg: SessionActivityView['foregroundActivity'],
      work: string[],
    ): SessionView => ({
      sessionId: 's',
      activity: activity({ runningGeneration: gen, state, foregroundActivity: fg }),
      queue: queue([]),
      backgroundWork: work.map((w) => shell(w)),
    });
    m.sync(v(1, 'running', 'generating', []), '2026-12-01T00:00:00.000Z');
    expect(m.ahp.status).toBe(Status.InProgress);
    m.sync(v(1, 'running', 'background', ['w1']), '2026-12-01T00:00:01.000Z');
    expect(m.ahp.status).toBe(Status.InProgress);
    m.sync(v(null, 'waiting_for_input', 'background', ['w1']), '2026-12-01T00:00:02.000Z');
    expect(m.ahp.status).toBe(Status.Idle);
    expect(m.ahp.backgroundWork?.map((w) => w.id)).toEqual(['w1']);
    m.sync(v(null, 'waiting_for_input', null, []), '2026-12-01T00:00:03.000Z');
    expect(m.ahp.status).toBe(Status.Idle);
    expect(m.ahp.turns.map((t) => [t.state, t.duration])).toEqual([['complete', 2000]]);
  });

  it('a chat whose agent waits for a person is InputNeeded in the catalog, in a turn or outside one', () => {
    const request = {
      requestId: 'r1',
      options: [{ optionId: 'allow', name: 'Allow', kind: 'allow_once' as const }],
      executionId: 'e1',
    };
    const inTurn = activity({ runningGeneration: 1, state: 'running', foregroundActivity: null });
    expect(chatSummaryStatus({ ...inTurn, waitingForPerson: true }, [request])).toBe(
      Status.InputNeeded,
    );
    // Outside a turn (output of its own, background work asking): the chat's own status cannot
    // hold it, its catalog entry does.
    const outside = activity({ state: 'waiting_for_input', foregroundActivity: 'background' });
    expect(chatSummaryStatus({ ...outside, waitingForPerson: true }, [request])).toBe(
      Status.InputNeeded,
    );
    expect(chatSummaryStatus({ ...outside, waitingForPerson: false }, [])).toBe(Status.Idle);
    // Answered: the agent goes on.
    expect(chatSummaryStatus({ ...inTurn, waitingForPerson: false }, [])).toBe(Status.InProgress);
    // A view written before the field existed reads as it did: open requests in a turn.
    expect(chatSummaryStatus(inTurn, [request])).toBe(Status.InputNeeded);
    expect(chatSummaryStatus(inTurn, [])).toBe(Status.InProgress);
  });

  it('a turn that failed ends with chat/error (status Error); a cancelled one with chat/turnCancelled', () => {
    const m = new ChatMirror('t', 's', '2026-12-01T00:00:00.000Z');
    m.sync(
      { sessionId: 's', activity: activity(), queue: queue([]), backgroundWork: [] },
      '2026-12-01T00:00:00.000Z',
    );
    let out = m.applyGroup(turnAdmitted('p1', 'turn-a', 1), '2026-12-01T00:00:01.000Z');
    expect(out[0]).toMatchObject({ type: 'chat/turnStarted', turnId: 'p1' });
    out = m.applyGroup(
      [
        update('prompt.decided', {
          promptId: 'p1',
          idempotencyKey: 'turn-a',
          decision: { outcome: 'failed', reason: 'abandoned', message: 'never started' },
        }),
        update('session.activity', activity({ state: 'failed' })),
      ],
      '2026-12-01T00:00:02.000Z',
    );
    expect(out[0]).toMatchObject({ type: 'chat/error', turnId: 'p1', duration: 1000 });
    expect(m.ahp.status).toBe(Status.Error);
    m.applyGroup(turnAdmitted('p2', 'turn-b', 2), '2026-12-01T00:00:03.000Z');
    expect(m.ahp.status).toBe(Status.InProgress);
    out = m.applyGroup(
      [update('session.activity', activity({ state: 'cancelled' }))],
      '2026-12-01T00:00:04.000Z',
    );
    expect(out[0]).toMatchObject({ type: 'chat/turnCancelled', turnId: 'p2' });
    expect(m.ahp.status).toBe(Status.Idle);
  });

  it('an open permission request is a tool call of the running turn in pending-confirmation (InputNeeded); settled, it leaves it as the spec says', () => {
    // A mirror synced to turn s#1 whose tool call awaits confirmation, the agent's options.
    const synced = () => {
      const m = new ChatMirror('t', 's', '2026-12-01T00:00:00.000Z');
      const actions = m.sync(
        {
          sessionId: 's',
          activity: activity({ runningGeneration: 1, state: 'running' }),
          queue: queue([]),
          backgroundWork: [],
          permissions: [request('r1')],
        },
        '2026-12-01T00:00:00.000Z',
      );
      return { m, actions };
    };
    const start = (resolved: object[]) => {
      const { m } = synced();
      const out = m.applyGroup(
        [update('session.permissions', { requests: [], resolved })],
        '2026-12-01T00:00:01.000Z',
      );
      return { m, out };
    };
    // The snapshot: turn s#1 with the tool call awaiting confirmation, the agent's options.
    const { m: fresh, actions } = synced();
    expect(actions.map((a) => a.type)).toEqual([
      'chat/turnStarted',
      'chat/toolCallStart',
      'chat/toolCallReady',
    ]);
    expect(fresh.ahp.status).toBe(Status.InputNeeded);
    expect(fresh.ahp.activeTurn?.responseParts).toEqual([
      {
        kind: 'toolCall',
        toolCall: expect.objectContaining({
          status: 'pending-confirmation',
          toolCallId: 'r1',
          toolName: 'execute',
          displayName: 'Bash: rm -rf r1',
          confirmationTitle: 'Bash: rm -rf r1',
          options: [
            { id: 'allow', label: 'Allow', kind: 'approve', group: 0 },
            { id: 'always', label: 'Always allow', kind: 'approve', group: 0 },
            { id: 'reject', label: 'Reject', kind: 'deny', group: 1 },
          ],
          _meta: {
            'x-baton': {
              requestId: 'r1',
              executionId: 'e1',
              toolCallId: 'toolu_r1',
              toolKind: 'execute',
            },
          },
        }),
      },
    ]);
    const confirmed = (resolved: object[]) => start(resolved).out;
    expect(
      confirmed([{ requestId: 'r1', outcome: 'selected', optionId: 'always', by: 'person' }]),
    ).toEqual([
      {
        type: 'chat/toolCallConfirmed',
        turnId: 's#1',
        toolCallId: 'r1',
        approved: true,
        confirmed: 'user-action',
        selectedOptionId: 'always',
      },
    ]);
    expect(
      confirmed([{ requestId: 'r1', outcome: 'selected', optionId: 'reject', by: 'timeout' }]),
    ).toEqual([
      {
        type: 'chat/toolCallConfirmed',
        turnId: 's#1',
        toolCallId: 'r1',
        approved: false,
        reason: 'denied',
        selectedOptionId: 'reject',
        reasonMessage: 'nobody answered in time',
      },
    ]);
    expect(confirmed([{ requestId: 'r1', outcome: 'cancelled', by: 'execution_ended' }])).toEqual([
      {
        type: 'chat/toolCallConfirmed',
        turnId: 's#1',
        toolCallId: 'r1',
        approved: false,
        reason: 'skipped',
        reasonMessage: "the agent's execution ended",
      },
    ]);
    const approved = start([
      { requestId: 'r1', outcome: 'selected', optionId: 'allow', by: 'person' },
    ]);
    const part = (x: ChatMirror) =>
      (x.ahp.activeTurn?.responseParts[0] as { toolCall: Record<string, unknown> }).toolCall;
    expect(part(approved.m)).toMatchObject({
      status: 'running',
      selectedOption: { id: 'allow', kind: 'approve' },
    });
    expect(approved.m.ahp.status).toBe(Status.InProgress);
    // A reconnect elsewhere still knows how it was settled (a late answer is told).
    const again = new ChatMirror('t', 's', '2026-12-01T00:00:03.000Z');
    again.restore(approved.m.ahp, approved.m.knowledge());
    expect(again.settledOf('r1')).toEqual({
      requestId: 'r1',
      outcome: 'selected',
      optionId: 'allow',
      by: 'person',
    });
    // A turn cancelled while a request waits: the spec's turn end cancels the call (skipped).
    const { m: cancelled } = synced();
    const out = cancelled.applyGroup(
      [
        update('session.permissions', {
          requests: [],
          resolved: [{ requestId: 'r1', outcome: 'cancelled', by: 'turn_cancelled' }],
        }),
        update('session.activity', activity({ state: 'cancelled' })),
      ],
      '2026-12-01T00:00:02.000Z',
    );
    expect(out.map((a) => a.type)).toEqual(['chat/turnCancelled', 'x-baton/sessionActivity']);
    expect(cancelled.ahp.turns[0]!.responseParts[0]).toMatchObject({
      toolCall: { status: 'cancelled', reason: 'skipped', toolCallId: 'r1' },
    });
    expect(cancelled.ahp.status).toBe(Status.Idle);
  });

  it('a steer is the steering message while the turn it steers runs, and carries on as the next turn (turnStarted removes it by queuedMessageId)', () => {
    const m = new ChatMirror('t', 's', '2026-12-01T00:00:00.000Z');
    const decided = (key: string, gen: number, mode: string) =>
      update('prompt.decided', {
        promptId: `p-${key}`,
        idempotencyKey: key,
        decision: { outcome: 'admitted', mode, admissionGeneration: gen },
      });
    m.sync(
      { sessionId: 's', activity: activity(), queue: queue([]), backgroundWork: [] },
      '2026-12-01T00:00:00.000Z',
    );
    m.remember('steer-b', { text: 'focus on tests', origin: { kind: 'user' } });
    m.applyGroup(
      [
        decided('turn-a', 1, 'turn'),
        update('session.activity', activity({ runningGeneration: 1 })),
      ],
      '2026-12-01T00:00:01.000Z',
    );
    let out = m.applyGroup([decided('steer-b', 2, 'steer')], '2026-12-01T00:00:02.000Z');
    expect(out).toEqual([
      {
        type: 'chat/pendingMessageSet',
        kind: 'steering',
        id: 'steer-b',
        message: { text: 'focus on tests', origin: { kind: 'user' } },
      },
    ]);
    expect(m.ahp.steeringMessage?.id).toBe('steer-b');
    // The turn's id is the Baton prompt id; a steer is known by its key until it is a turn.
    expect(m.ahp.activeTurn?.id).toBe('p-turn-a');
    out = m.applyGroup(
      [update('session.activity', activity({ runningGeneration: 2 }))],
      '2026-12-01T00:00:03.000Z',
    );
    expect(out.map((a) => [a.type, a.turnId, a.queuedMessageId])).toEqual([
      ['chat/turnComplete', 'p-turn-a', undefined],
      ['chat/turnStarted', 'p-steer-b', 'steer-b'],
      ['x-baton/sessionActivity', undefined, undefined],
    ]);
    expect(m.ahp.steeringMessage).toBeUndefined();
    // A steer that goes back to the queue is no longer the steering message.
    m.applyGroup([decided('steer-c', 3, 'steer')], '2026-12-01T00:00:04.000Z');
    expect(m.ahp.steeringMessage?.id).toBe('steer-c');
    out = m.applyGroup(
      [
        update('prompt.decided', {
          promptId: 'p-steer-c',
          idempotencyKey: 'steer-c',
          decision: { outcome: 'queued', position: 1, reason: 'released' },
        }),
      ],
      '2026-12-01T00:00:05.000Z',
    );
    expect(out).toEqual([{ type: 'chat/pendingMessageRemoved', kind: 'steering', id: 'steer-c' }]);
  });

  it('a queued prompt that runs starts its turn with queuedMessageId (the spec removes it from the queue)', () => {
    const s0 = {
      ...emptyChat('c', 's', '2026-12-01T00:00:00.000Z'),
      queuedMessages: [{ id: 'k1', message: { text: 'x', origin: { kind: 'user' } } }],
    };
    const actions = chatActions(
      s0,
      {
        activeTurn: { id: 'k1', message: { text: 'x', origin: { kind: 'user' } } },
        ended: () => ({ state: 'complete' }),
        queued: [],
        work: undefined,
      },
      '2026-12-01T00:00:01.000Z',
    );
    expect(actions).toEqual([
      {
        type: 'chat/turnStarted',
        turnId: 'k1',
        startedAt: '2026-12-01T00:00:01.000Z',
        message: { text: 'x', origin: { kind: 'user' } },
        queuedMessageId: 'k1',
      },
    ]);
  });

  it('session URIs round-trip; root agents come from the profiles', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 50 }), (id) =>
        expect(parseSessionUri(sessionUri(id))).toBe(id),
      ),
    );
    expect(parseSessionUri('ahp-session:/a/b')).toBeNull();
    expect(
      rootState({
        b: { kind: 'replay', speed: 1, description: 'B' } as never,
        a: { kind: 'replay', speed: 1 } as never,
      }),
    ).toEqual({
      agents: [
        { provider: 'a', displayName: 'a', description: '', models: [] },
        { provider: 'b', displayName: 'b', description: 'B', models: [] },
      ],
    });
  });
});

describe('Baton task → AHP session (pure mapping)', () => {
  /** The session catalog's reducer as a client has it, from the spec alone. */
  const clientSession = (s: Record<string, unknown>, a: Record<string, unknown>) => {
    const chats = s.chats as { resource: string }[];
    switch (a.type) {
      case 'session/chatAdded': {
        const sum = a.summary as { resource: string };
        const i = chats.findIndex((c) => c.resource === sum.resource);
        return { ...s, chats: i < 0 ? [...chats, sum] : chats.map((c, j) => (j === i ? sum : c)) };
      }
      case 'session/chatRemoved':
        return { ...s, chats: chats.filter((c) => c.resource !== a.chat) };
      case 'session/chatUpdated':
        return {
          ...s,
          chats: chats.map((c) =>
            c.resource === a.chat ? { ...c, ...(a.changes as object), resource: c.resource } : c,
          ),
        };
      case 'session/defaultChatChanged': {
        const { defaultChat: _, ...rest } = s;
        return a.defaultChat === undefined ? rest : { ...rest, defaultChat: a.defaultChat };
      }
      default:
        return s;
    }
  };
  it('a client folding the session actions has the host’s catalog: one chat per Baton session, its status', () => {
    const sess = fc.record({
      id: fc.constantFrom('a', 'b', 'c'),
      gen: fc.option(fc.constant(1), { nil: null }),
      failed: fc.boolean(),
    });
    fc.assert(
      fc.property(
        fc.array(fc.uniqueArray(sess, { selector: (x) => x.id, maxLength: 3 }), {
          minLength: 1,
          maxLength: 12,
        }),
        (steps) => {
          const view = (ss: (typeof steps)[number]) => ({
            taskId: 't',
            status: 'active' as const,
            seq: 1,
            activity: { foregroundActivity: null, activeSubagentCount: 0 },
            sessions: ss.map((x) => ({
              sessionId: x.id,
              activity: activity({ runningGeneration: x.gen, state: x.failed ? 'failed' : 'idle' }),
              queue: queue([]),
              backgroundWork: [],
            })),
          });
          const m = new SessionMirror('t', view(steps[0]!), '2026-12-01T00:00:00.000Z');
          let client = JSON.parse(JSON.stringify(m.state)) as Record<string, unknown>;
          for (const ss of steps.slice(1)) {
            for (const a of m.sync(view(ss), '2026-12-01T00:00:01.000Z'))
              client = clientSession(client, a);
            expect(norm(client)).toEqual(norm(m.state));
            expect(m.state.chats.map((c) => c.resource).sort()).toEqual(
              ss.map((x) => `ahp-chat:/t/${x.id}`).sort(),
            );
            // The default chat is one of the chats (none without chats).
            const d = m.state.defaultChat as string | undefined;
            if (ss.length === 0) expect(d).toBeUndefined();
            else expect(m.state.chats.map((c) => c.resource)).toContain(d);
            for (const x of ss) {
              const c = m.state.chats.find((y) => y.resource === `ahp-chat:/t/${x.id}`)!;
              expect(c.status).toBe(
                x.gen !== null ? Status.InProgress : x.failed ? Status.Error : Status.Idle,
              );
            }
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('a chat that follows the transcript', () => {
  const at = (s: number) =>
    new Date(Date.parse('2026-12-01T00:00:00.000Z') + s * 1000).toISOString();
  const base = { phase: 'turn' as const };
  const turnEvents = (id: string, said: string, ended: boolean) => [
    {
      ...base,
      turn: id,
      type: 'prompt' as const,
      item: `u-${id}`,
      promptId: id,
      content: [{ type: 'text' as const, text: { text: `prompt ${id}` } }],
    },
    {
      ...base,
      turn: id,
      type: 'text' as const,
      item: `m-${id}`,
      role: 'agent' as const,
      delta: said,
    },
    ...(ended ? [{ ...base, turn: id, type: 'turn_end' as const, stopReason: 'end_turn' }] : []),
  ];
  let n = 0;
  const stored = (events: object[]) =>
    events.map((event) => ({ id: `1-${++n}`, event: event as never }));

  it('a late subscriber sees the earlier turns and the running one under their prompt ids, with their content', () => {
    const m = new ChatMirror('t', 's', at(0));
    m.followTranscript();
    m.applyTranscript(
      stored([
        ...turnEvents('p1', 'one', true),
        ...turnEvents('p2', 'two', true),
        ...turnEvents('p3', 'thr', false),
      ]),
      at(0),
    );
    m.sync(
      {
        sessionId: 's',
        activity: activity({ state: 'running', runningGeneration: 3 }),
        queue: queue([]),
        backgroundWork: [],
      },
      at(0),
    );
    m.seedHistory(at(0));
    m.recheck(at(0));
    const chat = m.ahp;
    expect(chat.turns.map((t) => [t.id, t.message.text, t.responseParts])).toEqual([
      ['p1', 'prompt p1', [{ kind: 'markdown', id: 'm-p1', content: 'one' }]],
      ['p2', 'prompt p2', [{ kind: 'markdown', id: 'm-p2', content: 'two' }]],
    ]);
    expect(chat.activeTurn).toMatchObject({
      id: 'p3',
      message: { text: 'prompt p3' },
      responseParts: [{ kind: 'markdown', id: 'm-p3', content: 'thr' }],
    });
  });

  it('a live turn starts under its prompt id, streams, and ends once the transcript has its end', () => {
    const m = new ChatMirror('t', 's', at(0));
    m.followTranscript();
    m.sync({ sessionId: 's', activity: activity(), queue: queue([]), backgroundWork: [] }, at(0));
    let client: ChatState = m.ahp;
    const fold = (as: { type: string }[]) => {
      for (const a of as) client = chatReducer(client, a as never);
    };
    // Admitted elsewhere (no text known yet): the turn waits for the transcript's prompt.
    fold(m.applyGroup(turnAdmitted('p9', 'k9', 1), at(1)));
    expect(client.activeTurn).toBeUndefined();
    expect(m.waitingForTranscript).toBe(true);
    const [prompt, text, end] = turnEvents('p9', 'hello world', true);
    fold(m.applyTranscript(stored([prompt!]), at(1)));
    expect(client.activeTurn).toMatchObject({ id: 'p9', message: { text: 'prompt p9' } });
    fold(m.applyTranscript(stored([{ ...text!, delta: 'hello ' }]), at(1)));
    fold(m.applyTranscript(stored([{ ...text!, delta: 'world' }]), at(1)));
    expect(client.activeTurn?.responseParts).toEqual([
      { kind: 'markdown', id: 'm-p9', content: 'hello world' },
    ]);
    // Baton says the turn ended before the transcript has its end: it waits (a while).
    fold(m.applyGroup([update('session.activity', activity())], at(2)));
    expect(client.activeTurn?.id).toBe('p9');
    fold(m.applyTranscript(stored([end!]), at(2)));
    expect(client.activeTurn).toBeUndefined();
    expect(client.turns.map((t) => [t.id, t.state])).toEqual([['p9', 'complete']]);
    expect(client).toEqual(m.ahp);
  });

  it('a turn whose transcript never ends it ends after the grace', () => {
    const m = new ChatMirror('t', 's', at(0));
    m.followTranscript();
    m.sync(
      { sessionId: 's', activity: activity(), queue: queue(['k1']), backgroundWork: [] },
      at(0),
    );
    m.applyGroup([...turnAdmitted('p1', 'k1', 1), update('session.queue', queue([]))], at(1));
    expect(m.ahp.activeTurn).toMatchObject({ id: 'p1', message: { text: 'text k1' } });
    m.applyTranscript(stored(turnEvents('p1', 'partial', false)), at(1));
    m.applyGroup([update('session.activity', activity())], at(2));
    expect(m.ahp.activeTurn?.id).toBe('p1');
    m.recheck(at(6));
    expect(m.ahp.activeTurn).toBeUndefined();
    expect(m.ahp.turns.map((t) => t.id)).toEqual(['p1']);
  });
});

describe('a chat that follows the transcript (property)', () => {
  it('in any pages, some read twice, a real recording gives the client the chat one read gives, and the host’s own state', () => {
    const frames = readFileSync(
      join(__dirname, '../../acp/fixtures/claude-real-plain-shell.jsonl'),
      'utf8',
    )
      .split('\n')
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l) as RecordedFrame);
    const events = transcriptOf(frames).events.map((event, i) => ({ id: `1-${i + 1}`, event }));
    const promptIds = [
      ...new Set(events.flatMap((e) => (e.event.type === 'prompt' ? [e.event.turn!] : []))),
    ];
    expect(promptIds.length).toBeGreaterThan(0);
    const at = (s: number) => new Date(Date.parse('2026-12-01T00:00:00.000Z') + s).toISOString();
    /** Runs the session's turns with the transcript in pages; returns the client's chat. */
    const run = (pages: number[], again: boolean[]) => {
      const m = new ChatMirror('t', 's', at(0));
      m.followTranscript();
      m.sync({ sessionId: 's', activity: activity(), queue: queue([]), backgroundWork: [] }, at(0));
      let client: ChatState = m.ahp;
      const fold = (as: { type: string }[]) => {
        for (const a of as) client = clientReduce(client, a as never) as ChatState;
      };
      promptIds.forEach((p, g) =>
        fold(
          m.applyGroup(
            [
              update('prompt.decided', {
                promptId: p,
                idempotencyKey: `k-${p}`,
                decision: { outcome: 'admitted', mode: 'turn', admissionGeneration: g + 1 },
              }),
              update('session.activity', activity({ state: 'running', runningGeneration: g + 1 })),
            ],
            at(1),
          ),
        ),
      );
      let i = 0;
      let k = 0;
      while (i < events.length) {
        const n = pages[k % pages.length]!;
        const page = events.slice(i, i + n);
        fold(m.applyTranscript(page, at(2)));
        if (again[k % again.length]) fold(m.applyTranscript(events.slice(0, i + n), at(2)));
        i += n;
        k++;
      }
      fold(m.applyGroup([update('session.activity', activity())], at(3)));
      expect(norm(client)).toEqual(norm(m.ahp));
      return client;
    };
    const once = run([events.length], [false]);
    expect(once.turns.length).toBeGreaterThan(0);
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 10 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 5 }),
        (pages, again) => {
          expect(norm(run(pages, again))).toEqual(norm(once));
        },
      ),
      { numRuns: 40 },
    );
  });
});

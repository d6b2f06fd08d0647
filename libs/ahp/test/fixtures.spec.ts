import { BackgroundWork, SCHEMA_VERSION, type StreamEntry, type Update } from '@baton/protocol';
import { fold, initialTaskState } from '@baton/activity';
import { backgroundWorkFixtures } from '@baton/testing';
import { reduceBackgroundWork, type ChatWithBackgroundWork } from '../src';

/** AHP reducer fixtures, in AHP's own `{description, reducer, initial, actions, expected}` form. */
const fixtures = backgroundWorkFixtures<ChatWithBackgroundWork>();

describe('AHP chat reducer fixtures for backgroundWork', () => {
  it('has fixtures', () => expect(fixtures.length).toBeGreaterThanOrEqual(8));

  it.each(fixtures.map((f) => [f.file, f] as const))('%s', (_file, f) => {
    const after = f.actions.reduce(reduceBackgroundWork, f.initial);
    expect(after).toStrictEqual(f.expected);
    for (const a of f.actions)
      if (a.type === 'chat/backgroundWorkSet')
        expect(BackgroundWork.safeParse(a.work).success).toBe(true);
  });

  it('an absent remove returns the very same state object', () => {
    const state: ChatWithBackgroundWork = { title: 'x' };
    expect(reduceBackgroundWork(state, { type: 'chat/backgroundWorkRemoved', id: 'missing' })).toBe(
      state,
    );
  });

  it("the projector's published actions rebuild exactly the session's backgroundWork", () => {
    // What a client that knows only AHP sees: fold the updates Baton publishes through the reducer.
    let state = initialTaskState('t');
    const updates: Update[] = [];
    const f = (
      type: string,
      data: unknown,
      extra: object = { executionId: 'e', generation: 1 },
    ) => {
      const r = fold(state, {
        v: SCHEMA_VERSION,
        taskId: 't',
        sessionId: 's',
        writer: { role: 'worker', instance: 'w', seq: 0 },
        type,
        data,
        ...extra,
      } as StreamEntry);
      state = r.state;
      updates.push(...r.updates);
    };
    f('execution.started', { startedAt: '2026-11-30T00:00:00Z' });
    f('capabilities.negotiated', {
      agent: { name: 'a' },
      dialect: 'claude',
      promptQueueing: false,
      handoff: false,
      attestedKinds: ['shell', 'subagent'],
      unambiguousCompletionKinds: [],
    });
    for (const w of fixtures[0]!.actions)
      f('background.started', { attested: true, work: (w as { work: BackgroundWork }).work });
    f('background.started', {
      attested: false,
      work: {
        kind: 'futureKind',
        id: 'future-1',
        label: 'x',
        startedAt: '2026-11-30T00:00:00Z',
        target: 'reviewer',
      },
    });
    f('background.ended', { workId: 'shell-1', status: 'completed' });
    f('background.ended', { workId: 'subagent-1', status: 'completed' });
    f('background.ended', { workId: 'future-1', status: 'completed' });
    let chat: ChatWithBackgroundWork = {};
    for (const u of updates) {
      if (u.type === 'chat/backgroundWorkSet')
        chat = reduceBackgroundWork(chat, { type: u.type, work: u.data.work });
      if (u.type === 'chat/backgroundWorkRemoved')
        chat = reduceBackgroundWork(chat, { type: u.type, id: u.data.id });
    }
    expect(chat).toEqual({ backgroundWork: [] });
    expect(updates.filter((u) => u.type.startsWith('chat/')).map((u) => u.type)).toEqual([
      'chat/backgroundWorkSet',
      'chat/backgroundWorkSet',
      'chat/backgroundWorkSet',
      'chat/backgroundWorkRemoved',
      'chat/backgroundWorkRemoved',
      'chat/backgroundWorkRemoved',
    ]);
  });
});

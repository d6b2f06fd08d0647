import type { BackgroundWork, SessionView } from '@baton/protocol';
import {
  INDICATORS,
  activityOf,
  canPrompt,
  composerMode,
  decisionText,
  sessionIndicator,
  taskIndicator,
  tokenClaims,
  workLine,
} from '../src/model';

const shell: BackgroundWork = {
  kind: 'shell',
  id: 'shell:1',
  label: 'Run the tests',
  command: 'npm test',
  startedAt: '2026-11-30T10:00:00.000Z',
};

function session(over: Partial<SessionView['activity']> = {}, work: BackgroundWork[] = []) {
  return {
    sessionId: 's1',
    activity: {
      state: 'idle',
      foregroundActivity: null,
      activeSubagentCount: 0,
      supportsSteering: false,
      runningGeneration: null,
      admission: 'coarse',
      ...over,
    },
    queue: { autoRun: true, capacity: 10, entries: [] },
    backgroundWork: work,
  } satisfies SessionView;
}

describe('the tri-state indicator', () => {
  it('has a distinct accessible label and tooltip for each state', () => {
    const all = Object.values(INDICATORS);
    expect(new Set(all.map((i) => i.label)).size).toBe(3);
    expect(new Set(all.map((i) => i.title)).size).toBe(3);
    expect(all.map((i) => i.label)).toEqual([
      'Generating',
      'Working in the background',
      'Idle, done',
    ]);
  });

  it('is never "done" while background work is listed', () => {
    expect(activityOf({ foregroundActivity: null }, true)).toBe('background');
    expect(sessionIndicator(session({}, [shell])).activity).toBe('background');
    expect(sessionIndicator(session({ foregroundActivity: 'generating' }, [shell])).activity).toBe(
      'generating',
    );
    expect(sessionIndicator(session()).activity).toBe('idle');
  });

  it("shows a task's aggregate: the most active session wins", () => {
    const view = {
      taskId: 't1',
      seq: 3,
      activity: { foregroundActivity: 'background' as const, activeSubagentCount: 1 },
      sessions: [session(), session({ foregroundActivity: 'background' })],
    };
    expect(taskIndicator(view).label).toBe('Working in the background');
  });
});

describe('background work lines', () => {
  it('names shells with their command, subagents and Monitor watches, and unknown kinds as they come', () => {
    expect(workLine(shell)).toMatchObject({ kindText: 'Shell', detail: 'npm test' });
    expect(
      workLine({ ...shell, kind: 'subagent', chat: 'ahp-chat:/x', id: 'a' } as BackgroundWork),
    ).toMatchObject({ kindText: 'Subagent', label: 'Run the tests' });
    expect(workLine({ ...shell, kind: 'monitor' } as BackgroundWork).kindText).toBe(
      'Monitor watch',
    );
    expect(workLine({ ...shell, kind: 'futureKind' } as BackgroundWork)).toMatchObject({
      kindText: 'Other work (futureKind)',
      label: 'Run the tests',
      detail: null,
    });
  });
});

describe('the composer', () => {
  const live = { canPrompt: true, online: true };

  it('is unavailable, with its reason, without prompt scope, offline, or without a session', () => {
    expect(composerMode(session(), { ...live, canPrompt: false })).toMatchObject({
      kind: 'unavailable',
      reason: 'read_only',
    });
    expect(composerMode(session(), { ...live, online: false })).toMatchObject({
      kind: 'unavailable',
      reason: 'offline',
    });
    expect(composerMode(undefined, live)).toMatchObject({ reason: 'no_session' });
    expect(composerMode(undefined, { ...live, deleted: true })).toMatchObject({
      reason: 'session_deleted',
    });
  });

  it('sends to a ready agent and queues behind a running turn', () => {
    expect(composerMode(session(), live)).toMatchObject({ kind: 'send', how: 'turn' });
    expect(
      composerMode(session({ state: 'running', foregroundActivity: 'generating' }), live),
    ).toMatchObject({ kind: 'queue', reason: 'busy', position: 1 });
    expect(composerMode(session({ state: 'created' }), live)).toMatchObject({
      kind: 'queue',
      reason: 'no_execution',
    });
  });
});

describe('decisions in words', () => {
  it('says where a queued prompt stands and why a refused one was refused', () => {
    expect(decisionText({ outcome: 'queued', position: 2, reason: 'busy' })).toBe(
      'Queued at position 2 (the session is busy).',
    );
    expect(
      decisionText({ outcome: 'rejected', reason: 'queue_full', message: 'the queue is full' }),
    ).toBe('Refused: the queue is full');
  });
});

describe('token claims', () => {
  const encode = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

  it('reads tenant and scopes for display, and lets an opaque token try', () => {
    const token = `${encode({ alg: 'HS256' })}.${encode({ tenant: 'ünï', scope: 'read' })}.sig`;
    expect(tokenClaims(token)).toEqual({ tenant: 'ünï', scopes: ['read'] });
    expect(canPrompt(tokenClaims(token).scopes)).toBe(false);
    expect(canPrompt(['admin'])).toBe(true);
    expect(tokenClaims('opaque')).toEqual({ tenant: null, scopes: null });
    expect(canPrompt(null)).toBe(true);
  });
});

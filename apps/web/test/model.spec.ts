import type { Attention, BackgroundWork, SessionView } from '@baton/protocol';
import {
  INDICATORS,
  activityOf,
  attentionLine,
  canPrompt,
  needsYouText,
  composerMode,
  decisionText,
  queueBlockedText,
  sessionIndicator,
  taskIndicator,
  taskStatusText,
  tokenClaims,
  usageText,
  workLine,
} from '../src/model';
import { EMPTY_QUEUE, activityView } from '@baton/testing';

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
    activity: activityView(over),
    queue: EMPTY_QUEUE,
    backgroundWork: work,
  } satisfies SessionView;
}

describe('the tri-state indicator', () => {
  it('has a distinct accessible label and tooltip for each state', () => {
    const all = Object.values(INDICATORS);
    expect(new Set(all.map((i) => i.label)).size).toBe(4);
    expect(new Set(all.map((i) => i.title)).size).toBe(4);
    expect(all.map((i) => i.label)).toEqual([
      'Waits for you',
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

  it('does not call work busy that is only possibly finished', () => {
    const maybe = { ...shell, possiblyFinished: true as const };
    expect(sessionIndicator(session({}, [maybe])).activity).toBe('idle');
    expect(sessionIndicator(session({}, [maybe, { ...shell, id: 'shell:2' }])).activity).toBe(
      'background',
    );
    const view = {
      taskId: 't1',
      status: 'active' as const,
      seq: 3,
      activity: { foregroundActivity: null, activeSubagentCount: 0 },
      sessions: [session({}, [maybe])],
    };
    expect(taskIndicator(view).activity).toBe('idle');
  });

  it('says "waits for you", not a spinner, while the agent waits for a person', () => {
    const waiting = session({ state: 'running', waitingForPerson: true }, [shell]);
    expect(sessionIndicator(waiting).activity).toBe('waiting');
    expect(sessionIndicator(waiting).text).toBe('waits for you');
    expect(
      sessionIndicator(session({ state: 'running', foregroundActivity: 'generating' })).activity,
    ).toBe('generating');
    // A view from before the field: its attention says it.
    const older = session({
      state: 'running',
      foregroundActivity: 'generating',
      attention: { kind: 'needs_person', reason: 'permission_requested', message: 'asks' },
    });
    expect(sessionIndicator(older).activity).toBe('waiting');
    // The task: a session waiting for a person comes before the most active one.
    const view = {
      taskId: 't1',
      status: 'active' as const,
      seq: 3,
      activity: { foregroundActivity: 'generating' as const, activeSubagentCount: 0 },
      sessions: [session({ foregroundActivity: 'generating' }), waiting],
    };
    expect(taskIndicator(view).label).toBe('Waits for you');
  });

  it("shows a task's aggregate: the most active session wins", () => {
    const view = {
      taskId: 't1',
      status: 'active' as const,
      seq: 3,
      activity: { foregroundActivity: 'background' as const, activeSubagentCount: 1 },
      sessions: [session(), session({ foregroundActivity: 'background' })],
    };
    expect(taskIndicator(view).label).toBe('Working in the background');
  });
});

describe('background work lines', () => {
  it('names shells with their command, subagents and Monitor watches, and unknown kinds as they come', () => {
    expect(workLine(shell)).toMatchObject({
      kindText: 'Shell',
      detail: 'npm test',
      possiblyFinished: false,
    });
    expect(workLine({ ...shell, possiblyFinished: true }).possiblyFinished).toBe(true);
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

  it('is unavailable on an archived task, and on a deleted one, saying which', () => {
    expect(composerMode(session(), { ...live, taskStatus: 'archived' })).toMatchObject({
      kind: 'unavailable',
      reason: 'task_archived',
      hint: 'This task is archived: unarchive it to send prompts.',
    });
    expect(composerMode(undefined, { ...live, taskStatus: 'deleted' })).toMatchObject({
      kind: 'unavailable',
      reason: 'task_deleted',
    });
    expect(composerMode(session(), { ...live, taskStatus: 'active' })).toMatchObject({
      kind: 'send',
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

  it('says why a prompt was dropped, failed or ended', () => {
    expect(decisionText({ outcome: 'removed', reason: 'task_deleted' })).toBe(
      'The prompt was dropped: the task was deleted.',
    );
    expect(decisionText({ outcome: 'removed', reason: 'task_archived' })).toBe(
      'The prompt was dropped: the task was archived.',
    );
    expect(
      decisionText({ outcome: 'failed', reason: 'abandoned', message: 'the turn never started' }),
    ).toBe("The prompt's turn failed: the turn never started");
    expect(
      decisionText({ outcome: 'cancelled', reason: 'force_released', message: 'agent hung' }),
    ).toBe("The prompt's turn was ended by an operator: agent hung");
    expect(decisionText({ outcome: 'queued', position: 1, reason: 'waiting_for_worker' })).toBe(
      'Queued at position 1 (the agent waits for a free worker).',
    );
  });
});

describe('attention, blocked queues and task status', () => {
  const entry = { promptId: 'p', idempotencyKey: 'k', text: 'x', origin: 'human' as const };

  it('shows each kind of attention with its headline and the server’s message', () => {
    expect(attentionLine(session())).toBeNull();
    const cases: Array<[Attention, string]> = [
      [{ kind: 'failed', reason: 'turn_abandoned', message: 'the turn never started' }, 'Failed'],
      [{ kind: 'waiting', reason: 'waiting_for_worker', message: 'position 2' }, 'Waiting'],
      [
        { kind: 'needs_operator', reason: 'no_execution', message: 'start an execution' },
        'Needs an operator',
      ],
      [
        {
          kind: 'needs_person',
          reason: 'permission_requested',
          message: 'the agent asks permission: Edit src/a.ts',
        },
        'Needs you',
      ],
    ];
    for (const [attention, headline] of cases) {
      expect(attentionLine(session({ attention }))).toEqual({
        kind: attention.kind,
        headline,
        message: attention.message,
      });
    }
  });

  it('says why a queue waits, only when something waits', () => {
    expect(queueBlockedText({ blockedBy: 'no_execution', entries: [] })).toBeNull();
    expect(queueBlockedText({ blockedBy: null, entries: [entry] })).toBeNull();
    expect(queueBlockedText({ blockedBy: 'execution_stopping', entries: [entry] })).toBe(
      'Waiting: the agent is being stopped; prompts wait for the next one.',
    );
    expect(queueBlockedText({ blockedBy: 'no_execution', entries: [entry] })).toBe(
      'Waiting: no agent is running.',
    );
  });

  it('names archived and deleted tasks, and the tombstone rule', () => {
    expect(taskStatusText('active')).toBeNull();
    expect(taskStatusText('archived')).toMatch(/^Archived: /);
    expect(taskStatusText('deleted')).toMatch(/id stays taken; a new task needs a new id/);
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

describe('sessions that need a person', () => {
  it('counts them in words for the task', () => {
    expect(needsYouText(0)).toBe('');
    expect(needsYouText(1)).toBe('1 session needs you');
    expect(needsYouText(2)).toBe('2 sessions need you');
  });
});

describe('context pressure on the session card', () => {
  it('shows how full the context window is, as the agent last reported it', () => {
    expect(usageText({ used: 90_000, size: 200_000 })).toBe('context 45% (90k / 200k)');
    expect(
      usageText({ used: 110, size: 1_000_000, cost: { amount: 0.003, currency: 'USD' } }),
    ).toBe('context 0% (110 / 1M)');
    expect(usageText({ used: 1_250_000, size: 2_000_000 })).toBe('context 63% (1.3M / 2M)');
    expect(usageText({ used: 5_000 })).toBe('context 5k tokens');
  });

  it('shows nothing until the agent reports its context, or once it is cleared', () => {
    expect(usageText(undefined)).toBeNull();
    expect(usageText(null)).toBeNull();
    expect(usageText({ tokens: { total: 440 } })).toBeNull();
  });
});

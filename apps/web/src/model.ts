/**
 * What the page shows, derived from the views alone: pure functions, no DOM, so they are tested
 * in Node (and the composer's prediction against the domain core's own decisions).
 */
import type {
  Attention,
  BackgroundWork,
  PromptOutcome,
  QueueReason,
  QueueView,
  SessionView,
  TaskActivityView,
  TaskStatus,
  TaskView,
} from '@baton/protocol';

export type Activity = 'waiting' | 'generating' | 'background' | 'idle';

export interface Indicator {
  readonly activity: Activity;
  /** The accessible name: distinct per activity. */
  readonly label: string;
  /** The tooltip: what the state means. */
  readonly title: string;
  /** A short visible word next to the symbol, so colour is never the only cue. */
  readonly text: string;
}

export const INDICATORS: Record<Activity, Indicator> = {
  waiting: {
    activity: 'waiting',
    label: 'Waits for you',
    title:
      'Waits for you: the agent asked permission and does nothing until a person answers (or the request times out)',
    text: 'waits for you',
  },
  generating: {
    activity: 'generating',
    label: 'Generating',
    title: 'Generating: the agent is working on a turn in the foreground',
    text: 'generating',
  },
  background: {
    activity: 'background',
    label: 'Working in the background',
    title:
      'Working in the background: the foreground is idle or has yielded, but shells, subagents or watches still run — not done',
    text: 'background',
  },
  idle: {
    activity: 'idle',
    label: 'Idle, done',
    title: 'Idle: nothing runs in the foreground or the background — done',
    text: 'idle',
  },
};

/**
 * The headline of a session or a task aggregate. A wait for a person comes first: nothing moves
 * until someone answers. Background work that is still listed, and not possibly finished, keeps
 * a session out of "done" even if a view ever said its foreground was idle.
 */
export function activityOf(
  a: Pick<TaskActivityView, 'foregroundActivity'>,
  backgroundWorkListed = false,
  waitingForPerson = false,
): Activity {
  if (waitingForPerson) return 'waiting';
  if (a.foregroundActivity === 'generating') return 'generating';
  if (a.foregroundActivity === 'background' || backgroundWorkListed) return 'background';
  return 'idle';
}

/** The session waits for a person (a view from before `waitingForPerson`: its attention says). */
function waitsForPerson(s: SessionView): boolean {
  return s.activity.waitingForPerson ?? s.activity.attention?.kind === 'needs_person';
}

/** Listed work that may still run: what "possibly finished" marks is shown as such, not as busy. */
function workKnownToRun(s: SessionView): boolean {
  return s.backgroundWork.some((w) => w.possiblyFinished !== true);
}

export function sessionIndicator(s: SessionView): Indicator {
  return INDICATORS[activityOf(s.activity, workKnownToRun(s), waitsForPerson(s))];
}

/** The task's aggregate: a session waiting for a person first, else the most active session. */
export function taskIndicator(t: TaskView): Indicator {
  return INDICATORS[
    activityOf(t.activity, t.sessions.some(workKnownToRun), t.sessions.some(waitsForPerson))
  ];
}

const STATE_TEXT: Record<SessionView['activity']['state'], string> = {
  created: 'no agent yet',
  starting: 'agent starting',
  idle: 'agent ready',
  running: 'turn running',
  waiting_for_input: 'agent ready',
  completed: 'agent finished',
  failed: 'agent failed',
  cancelled: 'agent cancelled',
};

/** The coarse state in words (the execution's life, next to the tri-state). */
export function stateText(s: SessionView): string {
  return STATE_TEXT[s.activity.state];
}

/** The task's count of sessions waiting for a person ("2 sessions need you"); '' for none. */
export function needsYouText(n: number): string {
  return n === 0 ? '' : n === 1 ? '1 session needs you' : `${n} sessions need you`;
}

export function subagentText(n: number): string {
  return n === 1 ? '1 subagent' : `${n} subagents`;
}

const tokens = (n: number): string =>
  n < 1_000
    ? `${n}`
    : n < 1_000_000
      ? `${Math.round(n / 1_000)}k`
      : `${Math.round(n / 100_000) / 10}M`;

/**
 * How full the agent's context window is, as it last reported ("context 45% (90k / 200k)"), or
 * null when it reported no use of it.
 */
export function usageText(usage: SessionView['activity']['usage']): string | null {
  if (!usage || usage.used === undefined) return null;
  if (!usage.size) return `context ${tokens(usage.used)} tokens`;
  const pct = Math.round((usage.used / usage.size) * 100);
  return `context ${pct}% (${tokens(usage.used)} / ${tokens(usage.size)})`;
}

/** One background work entry as shown: its kind in words, its label, and what it runs. */
export interface WorkLine {
  readonly id: string;
  readonly kind: string;
  readonly kindText: string;
  readonly label: string;
  /** The shell's command, or the subagent's chat; unknown kinds have none. */
  readonly detail: string | null;
  readonly startedAt: string;
  /** The agent said some work finished without saying which, and this could be it. */
  readonly possiblyFinished: boolean;
}

export function workLine(w: BackgroundWork): WorkLine {
  const base = {
    id: w.id,
    kind: w.kind,
    label: w.label,
    startedAt: w.startedAt,
    possiblyFinished: w.possiblyFinished === true,
  };
  switch (w.kind) {
    case 'shell':
      return { ...base, kindText: 'Shell', detail: String((w as { command: unknown }).command) };
    case 'subagent':
      return { ...base, kindText: 'Subagent', detail: null };
    case 'monitor':
      return { ...base, kindText: 'Monitor watch', detail: null };
    default:
      // A kind this page does not know: shown as it is named, never dropped.
      return { ...base, kindText: `Other work (${w.kind})`, detail: null };
  }
}

/**
 * What the composer does with a human prompt right now, predicted from the session's view the
 * way the owner's admission decides it: with a queue, behind it (or refused when it is full);
 * otherwise now when the session has a ready agent and no turn (or the turn yielded to attested
 * background work: a handoff, or the agent takes steering), else into the queue.
 */
export type ComposerMode =
  | { readonly kind: 'send'; readonly how: 'turn' | 'handoff' | 'steer'; readonly hint: string }
  | {
      readonly kind: 'queue';
      readonly reason: 'busy' | 'no_execution' | 'queue_not_empty';
      readonly position: number;
      readonly hint: string;
    }
  | { readonly kind: 'unavailable'; readonly reason: UnavailableReason; readonly hint: string };

export type UnavailableReason =
  | 'no_session'
  | 'session_deleted'
  | 'task_archived'
  | 'task_deleted'
  | 'queue_full'
  | 'read_only'
  | 'offline';

export interface ComposerContext {
  /** The token's scopes include `prompt` (or `admin`). */
  readonly canPrompt: boolean;
  /** The connection is up and the view is current. */
  readonly online: boolean;
  /** The selected session was in the task's view before and is gone now. */
  readonly deleted?: boolean;
  /** The task's lifecycle: an archived or deleted task takes no prompts. */
  readonly taskStatus?: TaskStatus;
}

export function composerMode(session: SessionView | undefined, ctx: ComposerContext): ComposerMode {
  if (!ctx.canPrompt)
    return unavailable('read_only', 'Your token may read but not send prompts (no prompt scope).');
  if (ctx.taskStatus === 'deleted')
    return unavailable(
      'task_deleted',
      'This task was deleted: it takes no more prompts (a new task needs a new id).',
    );
  if (ctx.taskStatus === 'archived')
    return unavailable('task_archived', 'This task is archived: unarchive it to send prompts.');
  if (!session) {
    return ctx.deleted
      ? unavailable('session_deleted', 'This session was deleted: it takes no more prompts.')
      : unavailable('no_session', 'Select a session to send it a prompt.');
  }
  if (!ctx.online)
    return unavailable('offline', 'Reconnecting: prompts can be sent again once the page is live.');
  const { activity, queue } = session;
  const queued = queue.entries.length;
  if (queued > 0) {
    if (queue.capacity > 0 && queued >= queue.capacity)
      return unavailable(
        'queue_full',
        `The queue is full (${queue.capacity} prompts): cancel or wait for one to run.`,
      );
    return queue_('queue_not_empty', queued + 1, `Other prompts wait first`);
  }
  if (activity.state === 'idle' || activity.state === 'waiting_for_input')
    return {
      kind: 'send',
      how: 'turn',
      hint:
        activity.foregroundActivity === 'background'
          ? 'The agent is ready (background work does not hold prompts back): the prompt runs now.'
          : 'The agent is ready: the prompt runs now.',
    };
  if (activity.state === 'running') {
    if (activity.foregroundActivity === 'background')
      return {
        kind: 'send',
        how: 'handoff',
        hint: 'The turn yielded to background work: the prompt runs now (handoff).',
      };
    if (activity.supportsSteering)
      return {
        kind: 'send',
        how: 'steer',
        hint: 'The agent takes steering: the prompt joins the running turn now.',
      };
    return queue_('busy', 1, 'The session is busy');
  }
  return queue_('no_execution', 1, 'No agent is running for this session');
}

function queue_(
  reason: 'busy' | 'no_execution' | 'queue_not_empty',
  position: number,
  why: string,
): ComposerMode {
  return {
    kind: 'queue',
    reason,
    position,
    hint: `${why}: the prompt will be queued at position ${position} and runs when its turn comes.`,
  };
}

function unavailable(reason: UnavailableReason, hint: string): ComposerMode {
  return { kind: 'unavailable', reason, hint };
}

/** A prompt's decision in words. */
export function decisionText(d: PromptOutcome): string {
  switch (d.outcome) {
    case 'admitted':
      return d.mode === 'turn'
        ? 'The prompt runs now.'
        : d.mode === 'handoff'
          ? 'The prompt runs now (handoff from background work).'
          : 'The prompt steers the running turn.';
    case 'queued':
      return `Queued at position ${d.position} (${QUEUE_REASON[d.reason] ?? d.reason}).`;
    case 'rejected':
      return `Refused: ${d.message}`;
    case 'removed':
      return REMOVED[d.reason];
    case 'failed':
      return `The prompt's turn failed: ${d.message}`;
    case 'cancelled':
      return d.reason === 'force_released'
        ? `The prompt's turn was ended by an operator: ${d.message}`
        : d.reason === 'cancel_timeout'
          ? `The prompt's turn was ended: the agent did not answer the cancel (${d.message})`
          : `The prompt's turn was ended: ${d.message}`;
  }
}

const REMOVED: Record<Extract<PromptOutcome, { outcome: 'removed' }>['reason'], string> = {
  cancelled: 'The prompt was cancelled.',
  session_deleted: 'The prompt was dropped: the session was deleted.',
  task_archived: 'The prompt was dropped: the task was archived.',
  task_deleted: 'The prompt was dropped: the task was deleted.',
};

const QUEUE_REASON: Record<QueueReason, string> = {
  busy: 'the session is busy',
  no_execution: 'no agent is running',
  queue_not_empty: 'other prompts wait first',
  auto_run_off: 'auto-run is off',
  released: 'its turn was released',
  execution_stopping: 'the agent is being stopped; prompts wait for the next one',
  waiting_for_worker: 'the agent waits for a free worker',
  task_archived: 'the task is archived',
};

/** Why the head of the queue does not run now, in words; null when nothing holds it back. */
export function queueBlockedText(q: Pick<QueueView, 'blockedBy' | 'entries'>): string | null {
  if (q.blockedBy === null || q.entries.length === 0) return null;
  return `Waiting: ${QUEUE_REASON[q.blockedBy]}.`;
}

/** What a session's attention shows: a headline for its kind, and the server's message. */
export interface AttentionLine {
  readonly kind: Attention['kind'];
  readonly headline: string;
  readonly message: string;
}

const ATTENTION_HEADLINE: Record<Attention['kind'], string> = {
  failed: 'Failed',
  waiting: 'Waiting',
  needs_operator: 'Needs an operator',
  needs_person: 'Needs you',
};

export function attentionLine(s: SessionView): AttentionLine | null {
  const a = s.activity.attention;
  if (!a) return null;
  return { kind: a.kind, headline: ATTENTION_HEADLINE[a.kind], message: a.message };
}

/** A task's lifecycle in words; null for an active task (nothing to say). */
export function taskStatusText(status: TaskStatus): string | null {
  switch (status) {
    case 'active':
      return null;
    case 'archived':
      return 'Archived: takes no prompts and runs nothing until it is unarchived.';
    case 'deleted':
      return 'Deleted: this task is a tombstone. Its id stays taken; a new task needs a new id.';
  }
}

/** Scopes and tenant read from a token's payload, for the page only (the gateway verifies). */
export function tokenClaims(token: string): { tenant: string | null; scopes: string[] | null } {
  const part = token.split('.')[1];
  if (!part) return { tenant: null, scopes: null };
  try {
    const b64 = part.replace(/-/g, '+').replace(/_/g, '/');
    const json = JSON.parse(
      decodeURIComponent(
        Array.from(atob(b64.padEnd(b64.length + ((4 - (b64.length % 4)) % 4), '=')))
          .map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`)
          .join(''),
      ),
    ) as { tenant?: unknown; scope?: unknown };
    return {
      tenant: typeof json.tenant === 'string' ? json.tenant : null,
      scopes: typeof json.scope === 'string' ? json.scope.split(' ').filter(Boolean) : null,
    };
  } catch {
    return { tenant: null, scopes: null };
  }
}

/** Whether scopes allow prompting; unknown scopes (an opaque token) do not block the page. */
export function canPrompt(scopes: string[] | null): boolean {
  return scopes === null || scopes.includes('prompt') || scopes.includes('admin');
}

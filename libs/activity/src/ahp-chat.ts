import {
  AhpStatus,
  chatUri,
  type AhpAction,
  type AhpChatState,
  type BackgroundWork,
  type QueueView,
  type SessionActivityView,
  type SessionView,
  type Update,
} from '@baton/protocol';

/** The `_meta` key under which a ChatState carries what is Baton's own. */
export const BATON_META_KEY = 'x-baton';

/**
 * AHP status bits of a session: foreground generation (or a busy coarse state with nothing more
 * precise known) is InProgress; a foreground that yielded to background work is Idle — the work
 * shows in `backgroundWork`, never as a status bit of its own.
 */
export function ahpStatus(a: SessionActivityView): number {
  if (a.foregroundActivity === 'generating') return AhpStatus.InProgress;
  if (a.foregroundActivity === 'background') return AhpStatus.Idle;
  switch (a.state) {
    case 'running':
    case 'starting':
      return AhpStatus.InProgress;
    case 'waiting_for_input':
      return AhpStatus.InputNeeded;
    case 'failed':
      return AhpStatus.Error;
    default:
      return AhpStatus.Idle;
  }
}

/**
 * What one AHP client has been told about one session's chat, so that everything sent next is a
 * correct AHP action on top of it: Set for new or changed entries, Removed only for entries the
 * client has, and — after a gap (updates no longer retained, a slow client) — the difference
 * between what it has and the session's current view, as AHP asks hosts to reconcile.
 */
/** Baton's `possiblyFinished` is not AHP's: AHP clients get it as the `x-` extension. */
export const ahpWork = (work: BackgroundWork): BackgroundWork => {
  if (work.possiblyFinished === undefined) return work;
  const { possiblyFinished, ...rest } = work;
  return { ...rest, 'x-possiblyFinished': possiblyFinished } as BackgroundWork;
};

export class ChatMirror {
  /** Absent until an inventory was published (AHP: missing = none yet, `[]` = no active work). */
  private work: BackgroundWork[] | undefined;
  private activity: SessionActivityView | undefined;
  private queue: QueueView | undefined;
  readonly resource: string;

  constructor(
    readonly taskId: string,
    readonly sessionId: string,
  ) {
    this.resource = chatUri(taskId, sessionId);
  }

  /** Takes the session's current view as what the client has (it is sent as a snapshot). */
  reset(session: SessionView | undefined): void {
    this.work = session ? [...session.backgroundWork] : undefined;
    this.activity = session?.activity;
    this.queue = session?.queue;
  }

  /** The ChatState of what the client has. */
  state(modifiedAt: string): AhpChatState {
    const state: AhpChatState = {
      resource: this.resource,
      title: this.sessionId,
      status: this.activity ? ahpStatus(this.activity) : AhpStatus.Idle,
      modifiedAt,
      turns: [],
      _meta: {
        [BATON_META_KEY]: {
          taskId: this.taskId,
          sessionId: this.sessionId,
          ...(this.activity ? { activity: this.activity } : {}),
          ...(this.queue ? { queue: this.queue } : {}),
        },
      },
    };
    if (this.work) state.backgroundWork = this.work.map(ahpWork);
    return state;
  }

  /** Actions that take the client from what it has to the session's current view. */
  reconcile(session: SessionView | undefined): AhpAction[] {
    const out: AhpAction[] = [];
    const target = session?.backgroundWork ?? [];
    const had = new Map((this.work ?? []).map((w) => [w.id, JSON.stringify(w)]));
    for (const w of target) {
      if (had.get(w.id) !== JSON.stringify(w)) out.push(this.set(w));
    }
    const keep = new Set(target.map((w) => w.id));
    for (const id of had.keys()) if (!keep.has(id)) out.push(this.remove(id)!);
    if (session) {
      out.push(...this.activityChanged(session.activity));
      out.push(...this.queueChanged(session.queue));
    }
    return out;
  }

  /** The actions one update of the task means for this chat (none for other sessions). */
  apply(u: Update): AhpAction[] {
    if (!('sessionId' in u.data) || u.data.sessionId !== this.sessionId) return [];
    switch (u.type) {
      case 'chat/backgroundWorkSet':
        return [this.set(u.data.work)];
      case 'chat/backgroundWorkRemoved': {
        const a = this.remove(u.data.id);
        return a ? [a] : [];
      }
      case 'session.activity': {
        const { sessionId: _, ...activity } = u.data;
        return this.activityChanged(activity);
      }
      case 'session.queue': {
        const { sessionId: _, ...queue } = u.data;
        return this.queueChanged(queue);
      }
      case 'session.deleted':
        return [{ type: 'x-baton/sessionDeleted' }];
      default:
        return [];
    }
  }

  private set(work: BackgroundWork): AhpAction {
    const list = this.work ?? [];
    const i = list.findIndex((w) => w.id === work.id);
    this.work = i === -1 ? [...list, work] : list.map((w, j) => (j === i ? work : w));
    return { type: 'chat/backgroundWorkSet', work: ahpWork(work) };
  }

  /** Never a Removed for an id the client was not told about. */
  private remove(id: string): AhpAction | null {
    if (!this.work?.some((w) => w.id === id)) return null;
    this.work = this.work.filter((w) => w.id !== id);
    return { type: 'chat/backgroundWorkRemoved', id };
  }

  private activityChanged(activity: SessionActivityView): AhpAction[] {
    if (this.activity && JSON.stringify(activity) === JSON.stringify(this.activity)) return [];
    this.activity = activity;
    return [{ type: 'x-baton/sessionActivity', activity, status: ahpStatus(activity) }];
  }

  private queueChanged(queue: QueueView): AhpAction[] {
    if (this.queue && JSON.stringify(queue) === JSON.stringify(this.queue)) return [];
    this.queue = queue;
    return [{ type: 'x-baton/queue', queue }];
  }
}

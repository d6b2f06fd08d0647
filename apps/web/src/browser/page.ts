/** What the parts of the live page share: the App holds it, each part reads what it needs. */
import type { BatonClient, Subscription } from '@baton/client';
import type { SessionView, TaskView } from '@baton/protocol';
import type { ActionOutcome } from './rest';

/** A watched task: its subscription and latest view, or why it cannot be watched. */
export interface TaskEntry {
  readonly taskId: string;
  sub: Subscription | null;
  view: TaskView | null;
  error: string | null;
}

export type ConnectionState = 'connecting' | 'live' | 'reconnecting' | 'resyncing';

export interface Selection {
  readonly taskId: string;
  readonly sessionId: string;
}

export interface Page {
  readonly token: string;
  /** The token may prompt (and answer, and work queues). */
  readonly canPrompt: boolean;
  readonly client: BatonClient;
  readonly stopped: boolean;
  readonly connection: ConnectionState;
  /** The watched tasks, by id. */
  readonly tasks: ReadonlyMap<string, TaskEntry>;
  /** Tasks of the tenant past the page's limit. */
  readonly notShown: number;
  readonly selected: Selection | null;
  /** The selected session appeared in a view: its absence later means it was deleted. */
  readonly selectedSeen: boolean;
  /** Lifecycle commands under way, by task (and session): their buttons wait for the answer. */
  readonly busyActions: ReadonlySet<string>;
  /** Renders on the next animation frame. */
  schedule(): void;
  /** Adds an event listener that `stop` removes. */
  listen(target: EventTarget, type: string, fn: EventListener): void;
  select(sel: Selection): void;
  /** The selected session's task view and session (and notes that the session was seen). */
  selectedSession(): { view: TaskView | null; session: SessionView | undefined };
  /** Runs a lifecycle command under `key` (its buttons wait) and shows what it came to. */
  act(key: string, run: () => Promise<ActionOutcome>): Promise<void>;
}

/** The gateway holds at most GATEWAY_MAX_SUBSCRIPTIONS (100 by default) per connection. */
export const MAX_TASKS = 50;

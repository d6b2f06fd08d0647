import { CommandResult, PongResult, QueueListResult, type Update } from '@baton/protocol';
import { Connection, type ConnectionEvents, type ConnectionOptions } from './connection';
import { Emitter } from './emitter';
import { BatonError } from './errors';
import { readFrame } from './incoming';
import {
  Prompts,
  type PendingPrompt,
  type PromptDecision,
  type PromptEvents,
  type PromptOptions,
  type PromptRequest,
} from './prompts';
import { parseResult, Requests, type Outgoing, type RequestOptions } from './requests';
import { Subscriptions, type SubscribeOptions, type Subscription } from './subscriptions';
import { Transcripts, type TranscriptOptions, type TranscriptReader } from './transcripts';

export type { PendingPrompt, PromptDecision, PromptRequest } from './prompts';
export type { SubscribeOptions, Subscription, SubscriptionState, ViewCause } from './subscriptions';
export type { TranscriptOptions, TranscriptReader } from './transcripts';

export interface BatonClientOptions extends ConnectionOptions, RequestOptions, PromptOptions {}

export interface ClientEvents extends ConnectionEvents, PromptEvents {
  /**
   * Every new update (a duplicate of one already applied is not told again), once its group (the
   * updates of one stream entry) is complete: the updates of a group come one after the other,
   * before the group is applied to its subscription.
   */
  update: Update;
}

type SessionRef = { readonly taskId: string; readonly sessionId: string };

/**
 * A Baton WebSocket client: reconnects by itself, resumes every subscription from its last
 * applied seq, keeps a local view per task with the pure reducer, and resolves prompts with
 * their admission decision (re-sending them under the same idempotency key after a reconnect,
 * so none is ever made twice).
 *
 * Its parts: the connection (socket, redial with backoff, heartbeats), the requests (replies
 * matched by id, timeouts), the subscriptions (resume, resync) and the prompts (pending ones
 * asked about again under their key); this class wires them and reads what the server sends.
 */
export class BatonClient extends Emitter<ClientEvents> {
  private readonly connection: Connection;
  private readonly requests: Requests;
  private readonly subscriptions: Subscriptions;
  private readonly prompts: Prompts;
  private readonly transcripts: Transcripts;

  readonly queue = {
    list: (ref: SessionRef) =>
      this.requests
        .request({ op: 'queue.list', ...ref }, 'resend')
        .then((r) => parseResult(QueueListResult, r)),
    cancel: (ref: SessionRef & { promptId: string }) =>
      this.command({ op: 'queue.cancel', ...ref }),
    sendNow: (ref: SessionRef & { promptId: string; observedGeneration?: number }) =>
      this.command({ op: 'queue.send_now', ...ref }),
    setAutoRun: (ref: SessionRef & { enabled: boolean }) =>
      this.command({ op: 'queue.auto_run', ...ref }),
  };

  constructor(options: BatonClientOptions = {}) {
    super();
    const emit = <K extends keyof ClientEvents>(event: K, payload: ClientEvents[K]) =>
      this.emit(event, payload);
    this.connection = new Connection(options, emit, {
      // Subscriptions first, so decisions reach them, then the rest.
      resume: () => {
        this.subscriptions.resume();
        this.transcripts.resume();
        this.prompts.resume();
        this.requests.resume();
      },
      message: (text) => this.receive(text),
      lost: () => {
        this.requests.lost();
        this.subscriptions.lost();
      },
      heartbeat: () => this.requests.request({ op: 'ping' }, 'reject').catch(() => {}),
      end: () => void this.close(),
    });
    this.requests = new Requests(options, this.connection);
    this.subscriptions = new Subscriptions(this.connection, this.requests, (e) =>
      this.emit('error', e),
    );
    this.prompts = new Prompts(options, this.connection, this.requests, emit);
    this.transcripts = new Transcripts(this.connection, this.requests, (e) =>
      this.emit('error', e),
    );
  }

  /** True while a connection is open. */
  get connected(): boolean {
    return this.connection.open;
  }

  /**
   * Opens the connection; resolves once it is open. A refused token rejects with `unauthorized`
   * or `forbidden` and is never retried; other failures of the first attempt reject unless
   * `retryInitialConnect` is set. Later drops reconnect on their own until `close()`.
   */
  async connect(url: string, token: string): Promise<void> {
    return this.connection.connect(url, token);
  }

  /** Closes the connection for good: pending requests and prompts reject with `closed`. */
  async close(): Promise<void> {
    if (this.connection.idle) return;
    this.connection.halt();
    const error = new BatonError('closed', 'the client was closed');
    this.requests.rejectAll(error);
    this.prompts.rejectAll(error);
    this.subscriptions.endAll();
    this.transcripts.endAll();
    await this.connection.hangUp(error);
    this.emit('close', { code: 1000, reason: 'client closed', willReconnect: false });
  }

  /**
   * Subscribes to a task (or one of its sessions): a snapshot, then every update in order. The
   * subscription survives reconnects: it is renewed with its last applied seq, so it gets what it
   * missed or, when that is no longer retained, a fresh snapshot (`onResync`).
   */
  subscribe(taskId: string, options: SubscribeOptions = {}): Subscription {
    return this.subscriptions.subscribe(taskId, options);
  }

  /**
   * Reads a session's transcript: every event after `after` (or from the start), then live, each
   * once and in order (`onEvents`; `onItems` gets them folded into whole items). After a
   * reconnect it subscribes again from the last cursor it got: nothing missed, nothing twice.
   */
  transcript(taskId: string, sessionId: string, options: TranscriptOptions): TranscriptReader {
    return this.transcripts.open(taskId, sessionId, options);
  }

  async unsubscribe(taskId: string): Promise<void> {
    return this.subscriptions.unsubscribe(taskId);
  }

  /**
   * Submits a prompt and resolves with its decision: admitted, queued (with its position) or
   * rejected. When the server answers `pending`, `onPending` is called and the promise waits for
   * the `prompt.decided` update. If the connection drops first, the prompt is sent again under
   * the same idempotency key after the reconnect, and the server answers with the same decision.
   */
  prompt(
    request: PromptRequest,
    options: { onPending?: (p: PendingPrompt) => void } = {},
  ): Promise<PromptDecision> {
    return this.prompts.prompt(request, options);
  }

  /** Prompts sent but not decided yet. */
  get pendingPrompts(): PendingPrompt[] {
    return this.prompts.pending;
  }

  /**
   * Answers a permission request the agent waits on (the session view's `permissions`) with one
   * of the options it offered. A request already answered (by anyone, or by its timeout or a
   * cancel) comes back `failed` with reason `permission_answered`, and nothing changes.
   */
  answerPermission(
    ref: SessionRef & { requestId: string; optionId: string },
  ): Promise<CommandResult> {
    return this.command({ op: 'permission.respond', ...ref });
  }

  /** Cancels the session's running turn (only the one at `observedGeneration`, when given). */
  cancel(ref: SessionRef & { observedGeneration?: number }): Promise<CommandResult> {
    return this.command({ op: 'session.cancel', ...ref });
  }

  /** A round trip to the server. */
  async ping(): Promise<void> {
    parseResult(PongResult, await this.requests.request({ op: 'ping' }, 'reject'));
  }

  private async command(message: Outgoing): Promise<CommandResult> {
    return parseResult(CommandResult, await this.requests.request(message, 'reject'));
  }

  private receive(text: string): void {
    const frame = readFrame(text);
    if ('error' in frame) return this.emit('error', frame.error);
    if ('future' in frame) return this.onUpdate(frame.future);
    const m = frame.message;
    switch (m.type) {
      case 'reply':
        this.requests.reply(m.id, m.ok ? { result: m.result } : BatonError.fromWire(m.error));
        return;
      case 'snapshot':
        this.subscriptions.snapshot(m.task, m.resync);
        return;
      case 'update':
        return this.onUpdate(m.update);
      case 'error':
        this.emit('error', BatonError.fromWire(m.error));
        return;
      case 'transcript':
        this.transcripts.receive(m);
        return;
    }
  }

  private onUpdate(update: Update): void {
    this.subscriptions.receive(update, (u) => {
      this.emit('update', u);
      if (u.type === 'prompt.decided') this.prompts.decided(u);
    });
  }
}

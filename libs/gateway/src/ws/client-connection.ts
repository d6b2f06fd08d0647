import {
  SCHEMA_VERSION,
  type ClientMessage,
  type CommandResult,
  type PromptResult,
  type QueueListResult,
  type SubscribeResult,
  type TaskView,
  type WireError,
} from '@baton/protocol';
import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import { LIFECYCLE_SCOPE, allows, type Principal, type Scope } from '../auth/auth';
import type { Commands, QueueCommand } from '../commands/commands';
import { WireFailure, toWireError } from '../errors';
import type { Logger } from '../logger';
import type { GatewayMetrics } from '../metrics/metrics';
import type { ResolvedOptions } from '../options';
import type { Executions } from '../rest/executions';
import {
  BehindError,
  Subscription,
  type SubscriptionHooks,
  type SubscriptionSink,
} from '../subscriptions/subscription';
import type { UpdateFrame, UpdateHub } from '../updates/update-hub';
import { clientUpdate, type Tenancy } from '../tenancy';
import { Connection } from './connection';
import { idOf, parseMessage, readJson } from './frames';
import type { TenantLimits } from './tenant-limits';
import type { HostLog } from '../ahp/host-log';

/** What a connection handler needs from the process. */
export interface Services {
  opts: ResolvedOptions;
  hub: UpdateHub;
  tenancy: Tenancy;
  commands: Commands;
  /** Starts the execution that resumes a parked session when a prompt comes for it. */
  executions: Executions;
  metrics: GatewayMetrics;
  log: Logger;
  limits: TenantLimits;
  /** The /ahp host's serverSeq and replay windows (libs/gateway/src/ahp). */
  ahpLog: HostLog;
}

export function requireScope(p: Principal, scope: Scope): void {
  if (!allows(p, scope)) {
    throw new WireFailure('forbidden', `the token's scope does not include ${scope}`);
  }
}

/**
 * One /ws client: Baton's own protocol (libs/protocol wire.ts). It is its subscriptions' sink
 * itself (no object per connection for it).
 */
export class ClientConnection extends Connection implements SubscriptionSink {
  /** subscribe and unsubscribe run one at a time, in the order they came (none: all done). */
  private ops: Promise<void> | undefined;

  constructor(
    ws: WebSocket,
    socket: Socket,
    principal: Principal,
    private readonly s: Services,
  ) {
    super(ws, socket, s.hub.writes, principal, 'ws', s.opts, s.metrics, s.log, s.limits);
  }

  handleFrame(data: string | Buffer): void {
    if (!this.admit()) {
      const j = readJson(data, this.opts.maxMessageBytes);
      this.fail(j.ok ? idOf(j.value) : undefined, {
        code: 'rate_limited',
        message: `more than ${this.opts.maxMessagesPerSecond} messages per second; slow down`,
      });
      return;
    }
    const j = readJson(data, this.opts.maxMessageBytes);
    if (!j.ok) {
      this.s.metrics.messages.inc({ endpoint: 'ws', type: 'invalid' });
      this.fail(undefined, j.error);
      return;
    }
    const parsed = parseMessage(j.value);
    if (!parsed.ok) {
      this.s.metrics.messages.inc({ endpoint: 'ws', type: 'invalid' });
      this.fail(parsed.id, parsed.error);
      return;
    }
    const msg = parsed.message;
    this.s.metrics.messages.inc({ endpoint: 'ws', type: msg.op });
    this.handle(msg).catch((err: unknown) => {
      const { error, internal } = toWireError(err);
      if (internal) this.s.log.error({ err, op: msg.op }, 'request failed');
      this.fail(msg.id, error);
    });
  }

  /** {@link SubscriptionSink}: the view as one Buffer per version, shared by its subscribers. */
  snapshot(view: TaskView, resync: boolean): boolean {
    // Every subscriber it goes to is of one tenant: it carries the client's task id, not the key.
    const frame = this.s.hub.snapshotFrame(view, resync);
    if (!this.writable(frame.length)) return false;
    this.sendFrame(frame, frame.length);
    return true;
  }

  /** {@link SubscriptionSink}: an update, as the hub encoded it once for every subscriber. */
  update(frame: UpdateFrame): void {
    this.sendFrame(frame.payload, frame.bytes);
  }

  internalError(): void {
    this.fail(undefined, { code: 'internal', message: 'internal error' });
  }

  private reply(id: string, result: unknown): void {
    const text = JSON.stringify({ v: SCHEMA_VERSION, type: 'reply', id, ok: true, result });
    // A large reply (queue.list) that does not fit is refused rather than the connection closed.
    if (!this.roomForReply(Buffer.byteLength(text))) {
      this.fail(id, { code: 'unavailable', message: this.behindMessage() });
      return;
    }
    this.sendText(text);
  }

  private fail(id: string | undefined, error: WireError): void {
    this.s.metrics.errors.inc({ code: error.code });
    this.send(
      id === undefined
        ? { v: SCHEMA_VERSION, type: 'error', error }
        : { v: SCHEMA_VERSION, type: 'reply', id, ok: false, error },
    );
  }

  private serial(op: () => Promise<void>): Promise<void> {
    const next = (this.ops ?? Promise.resolve()).then(op);
    const done = next.then(settled, settled);
    // An idle connection keeps no settled chain.
    void done.then(() => {
      if (this.ops === done) this.ops = undefined;
    });
    this.ops = done;
    return next;
  }

  private async handle(msg: ClientMessage): Promise<void> {
    const tenant = this.principal.tenant;
    switch (msg.op) {
      case 'ping':
        this.reply(msg.id, { pong: true });
        return;
      case 'subscribe':
        requireScope(this.principal, 'read');
        return this.serial(async () => {
          // A snapshot is what it would be sent first: not while it has not read what it has.
          if (this.behind) throw new WireFailure('unavailable', this.behindMessage());
          if (!this.subs.has(msg.taskId) && this.subs.size >= this.opts.maxSubscriptions) {
            throw new WireFailure(
              'too_many_subscriptions',
              `a connection may hold ${this.opts.maxSubscriptions} subscriptions; unsubscribe first`,
            );
          }
          // Never claims nor writes: a task the tenant has not written to (another tenant's
          // of the same id included) is an empty one, until the tenant writes to it.
          await this.subscribe(msg, this.s.tenancy.key(tenant, msg.taskId));
        });
      case 'unsubscribe':
        return this.serial(async () => {
          const sub = this.subs.get(msg.taskId);
          if (sub) this.unsubscribe(msg.taskId, sub);
          this.reply(msg.id, { taskId: msg.taskId, subscribed: false });
        });
      case 'prompt': {
        requireScope(this.principal, 'prompt');
        const key = await this.s.tenancy.write(tenant, msg.taskId);
        const result: PromptResult = await this.s.commands.prompt(
          { ...msg, taskId: key },
          (late) => {
            // A subscriber gets the decision from its subscription; anyone else gets it here,
            // alone: the only update of its group this connection gets, so it ends the group.
            if (!this.subs.has(msg.taskId)) {
              const update = { ...clientUpdate(late), last: true };
              this.send({ v: SCHEMA_VERSION, type: 'update', update });
            }
          },
        );
        this.reply(msg.id, { ...result, taskId: msg.taskId });
        return;
      }
      case 'queue.list': {
        requireScope(this.principal, 'read');
        const key = await this.s.tenancy.existing(tenant, msg.taskId);
        if (this.behind) throw new WireFailure('unavailable', this.behindMessage());
        const view = await this.s.hub.view(key);
        const session = view.sessions.find((x) => x.sessionId === msg.sessionId);
        if (!session) {
          throw new WireFailure('not_found', `session ${msg.sessionId} not found`, 'sessionId');
        }
        const result: QueueListResult = {
          taskId: msg.taskId,
          sessionId: msg.sessionId,
          ...session.queue,
        };
        this.reply(msg.id, result);
        return;
      }
      case 'queue.cancel':
      case 'queue.send_now':
      case 'queue.auto_run':
      case 'session.cancel': {
        requireScope(this.principal, 'prompt');
        const key = await this.s.tenancy.write(tenant, msg.taskId);
        const result: CommandResult = await this.s.commands.command(
          key,
          msg.sessionId,
          commandOf(msg),
        );
        this.reply(msg.id, result);
        return;
      }
      case 'permission.respond': {
        requireScope(this.principal, 'prompt');
        const key = await this.s.tenancy.existing(tenant, msg.taskId);
        const result: CommandResult = await this.s.commands.command(key, msg.sessionId, {
          type: 'permission.respond',
          requestId: msg.requestId,
          optionId: msg.optionId,
          ...(this.principal.subject !== undefined
            ? { subject: this.principal.subject.slice(0, 200) }
            : {}),
        });
        this.reply(msg.id, result);
        return;
      }
      case 'session.reset':
      case 'session.delete':
      case 'session.force_release': {
        requireScope(this.principal, LIFECYCLE_SCOPE[msg.op]);
        // Never creates the task: absent and another tenant's are the same not_found.
        const key = await this.s.tenancy.existing(tenant, msg.taskId);
        const result: CommandResult = await this.s.commands.command(
          key,
          msg.sessionId,
          msg.op === 'session.force_release'
            ? {
                type: 'session.force_release',
                ...(msg.reason !== undefined ? { reason: msg.reason } : {}),
              }
            : { type: msg.op },
        );
        this.reply(msg.id, result);
        return;
      }
      case 'task.archive':
      case 'task.unarchive':
      case 'task.delete': {
        requireScope(this.principal, LIFECYCLE_SCOPE[msg.op]);
        const key = await this.s.tenancy.existing(tenant, msg.taskId);
        const result: CommandResult = await this.s.commands.taskCommand(key, msg.op);
        this.reply(msg.id, result);
        return;
      }
    }
  }

  private async subscribe(
    msg: Extract<ClientMessage, { op: 'subscribe' }>,
    key: string,
  ): Promise<void> {
    const old = this.subs.get(msg.taskId);
    if (old) this.unsubscribe(msg.taskId, old);
    const over = this.tenantLimitMessage(msg.taskId);
    if (over) throw new WireFailure('too_many_subscriptions', over);
    // The sink and the hooks are shared (per connection, per process): no closure here may
    // outlive the request, or it would keep this call's context (the message and all) per
    // subscription for as long as it lives.
    const sub = new Subscription(key, msg.sessionId, this.s.hub, this, hooksOf(this.s));
    this.subs.set(msg.taskId, sub);
    this.s.hub.follow(key, sub);
    try {
      await sub.start(msg.afterSeq, (r) => {
        const result: SubscribeResult = {
          taskId: msg.taskId,
          ...(msg.sessionId !== undefined ? { sessionId: msg.sessionId } : {}),
          ...r,
        };
        this.reply(msg.id, result);
      });
    } catch (err) {
      this.unsubscribe(msg.taskId, sub);
      if (err instanceof BehindError) throw new WireFailure('unavailable', this.behindMessage());
      throw err;
    }
  }

  /** `taskId` is the client's id: subscriptions of a connection are all of its tenant. */
  private unsubscribe(taskId: string, sub: Subscription): void {
    this.releaseSubscription(sub);
    if (this.subs.get(taskId) === sub) this.subs.delete(taskId);
  }

  protected releaseSubscription(sub: Subscription): void {
    sub.close();
    this.s.hub.unfollow(sub.taskId, sub);
  }
}

function settled(): void {}

function commandOf(
  msg: Extract<
    ClientMessage,
    { op: 'queue.cancel' | 'queue.send_now' | 'queue.auto_run' | 'session.cancel' }
  >,
): QueueCommand {
  switch (msg.op) {
    case 'queue.cancel':
      return { type: 'queue.cancel', promptId: msg.promptId };
    case 'queue.send_now':
      return {
        type: 'queue.send_now',
        promptId: msg.promptId,
        ...(msg.observedGeneration !== undefined
          ? { observedGeneration: msg.observedGeneration }
          : {}),
      };
    case 'queue.auto_run':
      return { type: 'queue.set_auto_run', enabled: msg.enabled };
    case 'session.cancel':
      return {
        type: 'session.cancel',
        ...(msg.observedGeneration !== undefined
          ? { observedGeneration: msg.observedGeneration }
          : {}),
      };
  }
}

const hooksByProcess = new WeakMap<Services, SubscriptionHooks>();

/** The /ws subscriptions' hooks: metrics and logs of the process, one object for all. */
function hooksOf(s: Services): SubscriptionHooks {
  let hooks = hooksByProcess.get(s);
  if (!hooks) {
    hooks = {
      onResync: (reason) => s.metrics.resyncs.inc({ reason }),
      onError: (err, taskId) => s.log.warn({ err, taskId }, 'subscription catch-up failed'),
      onDelivered: () => s.metrics.delivered++,
    };
    hooksByProcess.set(s, hooks);
  }
  return hooks;
}

import {
  SCHEMA_VERSION,
  type ClientMessage,
  type CommandResult,
  type PromptResult,
  type QueueListResult,
} from '@baton/protocol';
import { Inject, UseFilters, UseGuards } from '@nestjs/common';
import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import { LIFECYCLE_SCOPE } from '../auth/auth';
import type { QueueCommand } from '../commands/commands';
import { WireFailure } from '../errors';
import { SERVICES } from '../options';
import { clientUpdate } from '../tenancy';
import { ClientConnection, RATE_LIMITED, type Services, type WsRequest } from './client-connection';
import { ClientMessagePipe, RequiresScope, ScopeGuard, WireErrors } from './pipeline';
import type { Admission, ConnectionFactory } from './ws-adapter';

type Msg<Op extends ClientMessage['op']> = Extract<ClientMessage, { op: Op }>;

/** The valid message of a request its pipe has passed. */
const msgOf = <Op extends ClientMessage['op']>(req: WsRequest) => req.msg as Msg<Op>;

/**
 * /ws, Baton's own client protocol (libs/protocol wire.ts): one handler per op. Scopes are the
 * guard's, validation the pipe's, failures the filter's (pipeline.ts); each handler answers its
 * request on the connection, which is lean (client-connection.ts) and its subscriptions' sink.
 */
@WebSocketGateway({ path: '/ws' })
@UseGuards(ScopeGuard)
@UseFilters(WireErrors)
export class WsGateway implements ConnectionFactory {
  readonly path = '/ws';
  readonly inProtocolAuth = false;

  constructor(@Inject(SERVICES) private readonly s: Services) {}

  open(ws: WebSocket, socket: Socket, a: Admission): ClientConnection {
    return new ClientConnection(ws, socket, a.principal, this.s);
  }

  /** A message over GATEWAY_MAX_MESSAGES_PER_SECOND, answered in turn with the ones before it. */
  @SubscribeMessage(RATE_LIMITED)
  rateLimited(@MessageBody(ClientMessagePipe) req: WsRequest): void {
    req.conn.fail(req.id, {
      code: 'rate_limited',
      message: `more than ${this.s.opts.maxMessagesPerSecond} messages per second; slow down`,
    });
  }

  @SubscribeMessage('ping')
  ping(@MessageBody(ClientMessagePipe) req: WsRequest): void {
    req.conn.reply(msgOf<'ping'>(req).id, { pong: true });
  }

  @SubscribeMessage('subscribe')
  @RequiresScope('read')
  subscribe(@MessageBody(ClientMessagePipe) req: WsRequest): Promise<void> {
    const { conn } = req;
    const msg = msgOf<'subscribe'>(req);
    return conn.serial(async () => {
      // A snapshot is what it would be sent first: not while it has not read what it has.
      if (conn.behind) throw new WireFailure('unavailable', conn.behindMessage());
      if (!conn.subs.has(msg.taskId) && conn.allSubscriptions >= this.s.opts.maxSubscriptions) {
        throw new WireFailure(
          'too_many_subscriptions',
          `a connection may hold ${this.s.opts.maxSubscriptions} subscriptions; unsubscribe first`,
        );
      }
      // Never claims nor writes: a task the tenant has not written to (another tenant's of the
      // same id included) is an empty one, until the tenant writes to it.
      await conn.subscribe(msg, this.s.tenancy.key(conn.principal.tenant, msg.taskId));
    });
  }

  @SubscribeMessage('unsubscribe')
  unsubscribe(@MessageBody(ClientMessagePipe) req: WsRequest): Promise<void> {
    const { conn } = req;
    const msg = msgOf<'unsubscribe'>(req);
    return conn.serial(async () => {
      const sub = conn.subs.get(msg.taskId);
      if (sub) conn.unsubscribe(msg.taskId, sub);
      conn.reply(msg.id, { taskId: msg.taskId, subscribed: false });
    });
  }

  @SubscribeMessage('transcript.subscribe')
  @RequiresScope('read')
  transcriptSubscribe(@MessageBody(ClientMessagePipe) req: WsRequest): Promise<void> {
    const { conn } = req;
    const msg = msgOf<'transcript.subscribe'>(req);
    return conn.serial(async () => {
      if (conn.behind) throw new WireFailure('unavailable', conn.behindMessage());
      const max = this.s.opts.maxSubscriptions;
      if (!conn.hasTranscript(msg.taskId, msg.sessionId) && conn.allSubscriptions >= max) {
        throw new WireFailure(
          'too_many_subscriptions',
          `a connection may hold ${max} subscriptions; unsubscribe first`,
        );
      }
      // As for activity: never claims nor writes; another tenant's task is its own key, empty.
      await conn.subscribeTranscript(msg, this.s.tenancy.key(conn.principal.tenant, msg.taskId));
    });
  }

  @SubscribeMessage('transcript.unsubscribe')
  transcriptUnsubscribe(@MessageBody(ClientMessagePipe) req: WsRequest): Promise<void> {
    const { conn } = req;
    const msg = msgOf<'transcript.unsubscribe'>(req);
    return conn.serial(async () => {
      conn.unsubscribeTranscript(msg.taskId, msg.sessionId);
      conn.reply(msg.id, { taskId: msg.taskId, sessionId: msg.sessionId, subscribed: false });
    });
  }

  @SubscribeMessage('prompt')
  @RequiresScope('prompt')
  async prompt(@MessageBody(ClientMessagePipe) req: WsRequest): Promise<void> {
    const { conn } = req;
    const msg = msgOf<'prompt'>(req);
    const tenant = conn.principal.tenant;
    const key = await this.s.tenancy.write(tenant, msg.taskId);
    const result: PromptResult = await this.s.commands.prompt({ ...msg, taskId: key }, (late) => {
      // A subscriber gets the decision from its subscription; anyone else gets it here, alone:
      // the only update of its group this connection gets, so it ends the group.
      if (!conn.subs.has(msg.taskId)) {
        const update = { ...clientUpdate(late), last: true };
        conn.send({ v: SCHEMA_VERSION, type: 'update', update });
      }
    });
    conn.reply(msg.id, { ...result, taskId: msg.taskId });
  }

  @SubscribeMessage('queue.list')
  @RequiresScope('read')
  async queueList(@MessageBody(ClientMessagePipe) req: WsRequest): Promise<void> {
    const { conn } = req;
    const msg = msgOf<'queue.list'>(req);
    const key = await this.s.tenancy.existing(conn.principal.tenant, msg.taskId);
    if (conn.behind) throw new WireFailure('unavailable', conn.behindMessage());
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
    conn.reply(msg.id, result);
  }

  @SubscribeMessage('queue.cancel')
  @RequiresScope('prompt')
  queueCancel(@MessageBody(ClientMessagePipe) req: WsRequest): Promise<void> {
    return this.queueCommand(req);
  }

  @SubscribeMessage('queue.send_now')
  @RequiresScope('prompt')
  queueSendNow(@MessageBody(ClientMessagePipe) req: WsRequest): Promise<void> {
    return this.queueCommand(req);
  }

  @SubscribeMessage('queue.auto_run')
  @RequiresScope('prompt')
  queueAutoRun(@MessageBody(ClientMessagePipe) req: WsRequest): Promise<void> {
    return this.queueCommand(req);
  }

  @SubscribeMessage('session.cancel')
  @RequiresScope('prompt')
  sessionCancel(@MessageBody(ClientMessagePipe) req: WsRequest): Promise<void> {
    return this.queueCommand(req);
  }

  @SubscribeMessage('permission.respond')
  @RequiresScope('prompt')
  async permissionRespond(@MessageBody(ClientMessagePipe) req: WsRequest): Promise<void> {
    const { conn } = req;
    const msg = msgOf<'permission.respond'>(req);
    const key = await this.s.tenancy.existing(conn.principal.tenant, msg.taskId);
    const subject = conn.principal.subject;
    const result: CommandResult = await this.s.commands.command(key, msg.sessionId, {
      type: 'permission.respond',
      requestId: msg.requestId,
      optionId: msg.optionId,
      ...(subject !== undefined ? { subject: subject.slice(0, 200) } : {}),
    });
    conn.reply(msg.id, result);
  }

  @SubscribeMessage('session.reset')
  @RequiresScope(LIFECYCLE_SCOPE['session.reset'])
  sessionReset(@MessageBody(ClientMessagePipe) req: WsRequest): Promise<void> {
    return this.lifecycle(req);
  }

  @SubscribeMessage('session.delete')
  @RequiresScope(LIFECYCLE_SCOPE['session.delete'])
  sessionDelete(@MessageBody(ClientMessagePipe) req: WsRequest): Promise<void> {
    return this.lifecycle(req);
  }

  @SubscribeMessage('session.force_release')
  @RequiresScope(LIFECYCLE_SCOPE['session.force_release'])
  sessionForceRelease(@MessageBody(ClientMessagePipe) req: WsRequest): Promise<void> {
    return this.lifecycle(req);
  }

  @SubscribeMessage('task.archive')
  @RequiresScope(LIFECYCLE_SCOPE['task.archive'])
  taskArchive(@MessageBody(ClientMessagePipe) req: WsRequest): Promise<void> {
    return this.taskCommand(req);
  }

  @SubscribeMessage('task.unarchive')
  @RequiresScope(LIFECYCLE_SCOPE['task.unarchive'])
  taskUnarchive(@MessageBody(ClientMessagePipe) req: WsRequest): Promise<void> {
    return this.taskCommand(req);
  }

  @SubscribeMessage('task.delete')
  @RequiresScope(LIFECYCLE_SCOPE['task.delete'])
  taskDelete(@MessageBody(ClientMessagePipe) req: WsRequest): Promise<void> {
    return this.taskCommand(req);
  }

  private async queueCommand(req: WsRequest): Promise<void> {
    const { conn } = req;
    const msg = msgOf<'queue.cancel' | 'queue.send_now' | 'queue.auto_run' | 'session.cancel'>(req);
    const key = await this.s.tenancy.write(conn.principal.tenant, msg.taskId);
    const result: CommandResult = await this.s.commands.command(key, msg.sessionId, commandOf(msg));
    conn.reply(msg.id, result);
  }

  private async lifecycle(req: WsRequest): Promise<void> {
    const { conn } = req;
    const msg = msgOf<'session.reset' | 'session.delete' | 'session.force_release'>(req);
    // Never creates the task: absent and another tenant's are the same not_found.
    const key = await this.s.tenancy.existing(conn.principal.tenant, msg.taskId);
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
    conn.reply(msg.id, result);
  }

  private async taskCommand(req: WsRequest): Promise<void> {
    const { conn } = req;
    const msg = msgOf<'task.archive' | 'task.unarchive' | 'task.delete'>(req);
    const key = await this.s.tenancy.existing(conn.principal.tenant, msg.taskId);
    const result: CommandResult = await this.s.commands.taskCommand(key, msg.op);
    conn.reply(msg.id, result);
  }
}

function commandOf(
  msg: Msg<'queue.cancel' | 'queue.send_now' | 'queue.auto_run' | 'session.cancel'>,
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

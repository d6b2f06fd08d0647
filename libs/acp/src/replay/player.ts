import { agent, type AgentConnection, type Stream } from '@agentclientprotocol/sdk';
import { classify, type Frame } from '../frames';
import { isRecord, type JsonRecord } from '../json';

/**
 * Plays a recording (the raw-frame log format) as a real ACP agent. The recording is one script:
 * its client->agent requests are wait points (the N-th recorded `session/prompt` waits for the
 * N-th live one), its agent->client responses answer the live request bound at that wait point,
 * and everything else the agent sent is sent again, in order, with the recorded gaps scaled by
 * `pace` (0 = as fast as possible). A live `session/cancel` the recording does not expect answers
 * every open prompt with `cancelled` and skips to the next recorded prompt.
 */
export interface ReplayOptions {
  pace?: number;
  /** Stop playing (and exit, in the CLI) before this many agent->client frames have been sent. */
  crashAfterFrames?: number;
  /** Never answer `initialize`: an agent that hangs. */
  hangOnInitialize?: boolean;
  /** Take every `session/prompt` and never answer it, nor send anything for it: a turn that never starts. */
  hangOnPrompt?: boolean;
  /** Ignore `session/cancel`: an agent that never answers a cancel. */
  ignoreCancel?: boolean;
  onCrash?: () => void;
}

interface LiveRequest {
  method: string;
  requestId: unknown;
  answer: (result: { result: unknown } | { error: JsonRecord }) => void;
}

class Waiter<T> {
  private items: T[] = [];
  private waiting: ((v: T) => void)[] = [];
  push(v: T): void {
    const w = this.waiting.shift();
    if (w) w(v);
    else this.items.push(v);
  }
  next(): Promise<T> {
    const v = this.items.shift();
    if (v !== undefined) return Promise.resolve(v);
    return new Promise((resolve) => this.waiting.push(resolve));
  }
  get size(): number {
    return this.items.length;
  }
}

const ANSWERED = [
  'initialize',
  'session/new',
  'session/load',
  'session/resume',
  'session/set_mode',
  'session/set_config_option',
  'session/prompt',
] as const;

/** Setup requests a recording may lack: a live one is then answered `{}`. */
const OPTIONAL = new Set<string>(['session/set_mode', 'session/set_config_option']);

export class ReplayAgent {
  private readonly live = new Map<string, Waiter<LiveRequest>>();
  private readonly cancels = new Waiter<true>();
  private readonly written = new Map<string, () => void>();
  private readonly openPrompts = new Set<LiveRequest>();
  private connection?: AgentConnection;
  /** A recording made without a session mode plays the same whatever mode the client sets. */
  private readonly recorded: Set<string>;

  constructor(
    private readonly frames: Frame[],
    private readonly options: ReplayOptions = {},
  ) {
    for (const m of ANSWERED) this.live.set(m, new Waiter());
    this.recorded = new Set(
      frames.flatMap((f) =>
        f.direction === 'client->agent' &&
        isRecord(f.message) &&
        typeof f.message.method === 'string'
          ? [f.message.method]
          : [],
      ),
    );
  }

  /** Called by the agent's own output tap: a response line has really been written. */
  sawOutgoing(line: string): void {
    // Only an answer being waited for matters; the notifications between answers are not parsed.
    if (this.written.size === 0) return;
    let msg: unknown;
    try {
      msg = JSON.parse(line);
    } catch {
      return;
    }
    if (isRecord(msg) && 'id' in msg && !('method' in msg)) {
      const key = JSON.stringify(msg.id);
      this.written.get(key)?.();
      this.written.delete(key);
    }
  }

  connect(stream: Stream): AgentConnection {
    const app = agent({ name: 'baton-replay' });
    for (const method of ANSWERED) {
      app.onRequest(
        method,
        ((ctx: { requestId: unknown }) =>
          new Promise((resolve, reject) => {
            const req: LiveRequest = {
              method,
              requestId: ctx.requestId,
              answer: (r) => ('result' in r ? resolve(r.result) : reject(r.error)),
            };
            if (method === 'initialize' && this.options.hangOnInitialize) return;
            if (method === 'session/prompt' && this.options.hangOnPrompt) return;
            if (OPTIONAL.has(method) && !this.recorded.has(method)) return resolve({});
            if (method === 'session/prompt') this.openPrompts.add(req);
            this.live.get(method)?.push(req);
          })) as never,
      );
    }
    app.onNotification('session/cancel', () => {
      if (!this.options.ignoreCancel) this.cancels.push(true);
    });
    this.connection = app.connect(stream);
    void this.play().catch(() => this.connection?.close());
    return this.connection;
  }

  private async answer(req: LiveRequest, response: JsonRecord): Promise<void> {
    const written = new Promise<void>((r) => this.written.set(JSON.stringify(req.requestId), r));
    this.openPrompts.delete(req);
    if ('error' in response && isRecord(response.error)) req.answer({ error: response.error });
    else req.answer({ result: response.result ?? {} });
    // Later frames must not overtake this answer on the wire.
    await written;
  }

  private async play(): Promise<void> {
    const bound = new Map<string, LiveRequest>();
    const agentRequests = new Map<string, Promise<unknown>>();
    let prevAt: number | undefined;
    let sent = 0;
    for (let i = 0; i < this.frames.length; i++) {
      const frame = this.frames[i] as Frame;
      const msg = frame.message;
      if (!isRecord(msg)) continue;
      const kind = classify(msg);
      const key = JSON.stringify(msg.id);

      if (frame.direction === 'client->agent') {
        if (kind === 'request') {
          const waiter = this.live.get(msg.method as string);
          if (waiter) bound.set(key, await waiter.next());
        } else if (kind === 'notification' && msg.method === 'session/cancel') {
          await this.cancels.next();
        } else if (kind === 'response') {
          await agentRequests.get(key)?.catch(() => undefined);
        }
        continue;
      }

      if (this.cancels.size > 0 && !this.cancelAhead(i)) {
        await this.cancels.next();
        for (const p of [...this.openPrompts])
          await this.answer(p, { result: { stopReason: 'cancelled' } });
        i = this.nextPrompt(i) - 1;
        continue;
      }
      if (this.options.crashAfterFrames !== undefined && sent >= this.options.crashAfterFrames) {
        this.options.onCrash?.();
        return;
      }
      const pace = this.options.pace ?? 1;
      // At full speed (pace 0) times are not read: a Date.parse a frame is a cost for nothing.
      if (pace > 0) {
        const at = Date.parse(frame.at);
        if (prevAt !== undefined && at > prevAt) {
          await new Promise((r) => setTimeout(r, (at - prevAt!) * pace));
        }
        prevAt = at;
      }
      sent++;
      const conn = this.connection!;
      if (kind === 'response') {
        const req = bound.get(key);
        if (req) await this.answer(req, msg);
      } else if (kind === 'request') {
        agentRequests.set(key, conn.client.request(msg.method as string, msg.params));
      } else if (kind === 'notification') {
        await conn.client.notify(msg.method as string, msg.params);
      }
    }
  }

  /** Whether the recording itself cancels before the open prompts are answered. */
  private cancelAhead(from: number): boolean {
    for (let j = from; j < this.frames.length; j++) {
      const m = this.frames[j]?.message;
      if (!isRecord(m)) continue;
      if (this.frames[j]?.direction === 'client->agent' && m.method === 'session/cancel')
        return true;
      if (this.frames[j]?.direction === 'client->agent' && m.method === 'session/prompt')
        return false;
    }
    return false;
  }

  private nextPrompt(from: number): number {
    for (let j = from; j < this.frames.length; j++) {
      const m = this.frames[j]?.message;
      if (
        this.frames[j]?.direction === 'client->agent' &&
        isRecord(m) &&
        m.method === 'session/prompt'
      )
        return j;
    }
    return this.frames.length;
  }
}

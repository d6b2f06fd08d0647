import { backoffDelay } from '@baton/backoff';
import {
  MAX_PROMPT_CHARS,
  PromptResult,
  type PromptOrigin,
  type PromptOutcome,
  type Update,
} from '@baton/protocol';
import type { Connection } from './connection';
import type { Emit } from './emitter';
import { BatonError } from './errors';
import { parseResult, RETRYABLE, type Requests } from './requests';

export interface PromptOptions {
  /** Idempotency keys for prompts that come without one. */
  readonly newKey?: () => string;
  /**
   * A prompt answered `pending` is asked about again (same key, so never made twice) after this
   * long, then at doubling intervals up to ten times it, in case its decision update is lost
   * (default 30 s; 0: never).
   */
  readonly pendingRecheckMs?: number;
}

export interface PromptRequest {
  readonly taskId: string;
  readonly sessionId: string;
  readonly text: string;
  /** Reused on every retry, so the prompt is never made twice; generated when absent. */
  readonly idempotencyKey?: string;
  readonly origin?: PromptOrigin;
}

export interface PendingPrompt {
  readonly taskId: string;
  readonly sessionId: string;
  readonly idempotencyKey: string;
  /** `sending`: no reply yet (or the connection dropped first); `pending`: accepted, undecided. */
  readonly status: 'sending' | 'pending';
}

export interface PromptDecision {
  readonly taskId: string;
  readonly sessionId: string;
  readonly idempotencyKey: string;
  readonly promptId: string;
  readonly decision: PromptOutcome;
  /** The reply said `pending` first and the decision came later as an update. */
  readonly wasPending: boolean;
}

export interface PromptEvents extends Record<string, unknown> {
  'prompt.pending': PendingPrompt;
  'prompt.decided': PromptDecision;
}

interface PromptEntry {
  readonly request: Required<PromptRequest>;
  status: 'sending' | 'pending';
  retries: number;
  rechecks: number;
  wasPending: boolean;
  readonly promise: Promise<PromptDecision>;
  resolve(d: PromptDecision): void;
  reject(e: BatonError): void;
  readonly onPending: Array<(p: PendingPrompt) => void>;
}

const MAX_PROMPT_RETRIES = 8;

/**
 * Prompts sent and not decided yet, each under its key (task, session, idempotency key): re-sent
 * under the same key after a reconnect or a "not now", and asked about again while pending.
 */
export class Prompts {
  private readonly prompts = new Map<string, PromptEntry>();

  constructor(
    private readonly options: PromptOptions,
    private readonly connection: Pick<Connection, 'open' | 'closed' | 'later'>,
    private readonly requests: Pick<Requests, 'request'>,
    private readonly emit: Emit<PromptEvents>,
  ) {}

  prompt(
    request: PromptRequest,
    options: { onPending?: (p: PendingPrompt) => void } = {},
  ): Promise<PromptDecision> {
    const full: Required<PromptRequest> = {
      taskId: request.taskId,
      sessionId: request.sessionId,
      text: request.text,
      origin: request.origin ?? 'human',
      idempotencyKey: request.idempotencyKey ?? (this.options.newKey ?? randomKey)(),
    };
    if (full.text.length > MAX_PROMPT_CHARS) {
      return Promise.reject(
        new BatonError(
          'prompt_too_long',
          `the prompt has ${full.text.length} characters, the limit is ${MAX_PROMPT_CHARS}`,
          'text',
        ),
      );
    }
    const key = promptKey(full);
    const existing = this.prompts.get(key);
    if (existing) {
      if (options.onPending) existing.onPending.push(options.onPending);
      return existing.promise;
    }
    let resolve!: (d: PromptDecision) => void;
    let reject!: (e: BatonError) => void;
    const promise = new Promise<PromptDecision>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const entry: PromptEntry = {
      request: full,
      status: 'sending',
      retries: 0,
      rechecks: 0,
      wasPending: false,
      promise,
      resolve,
      reject,
      onPending: options.onPending ? [options.onPending] : [],
    };
    this.prompts.set(key, entry);
    if (this.connection.closed)
      this.reject(entry, new BatonError('closed', 'the client is closed'));
    else this.send(entry);
    return promise;
  }

  /** Prompts sent but not decided yet. */
  get pending(): PendingPrompt[] {
    return [...this.prompts.values()].map((p) => pendingOf(p));
  }

  /** A `prompt.decided` update: the prompt it decides, if it is one of these, resolves. */
  decided(u: Extract<Update, { type: 'prompt.decided' }>): void {
    const entry = this.prompts.get(promptKey({ ...u.data, taskId: u.taskId }));
    if (entry) this.decide(entry, { ...u.data, taskId: u.taskId });
  }

  /** After (re)connecting: every prompt is sent again under its key. */
  resume(): void {
    for (const p of this.prompts.values()) this.send(p);
  }

  rejectAll(error: BatonError): void {
    for (const p of [...this.prompts.values()]) this.reject(p, error);
  }

  /**
   * The decision of a pending prompt comes as an update; should that never reach this connection
   * (say, the gateway that promised it died), asking again under the same key gets it.
   */
  private recheckLater(entry: PromptEntry): void {
    const base = this.options.pendingRecheckMs ?? 30_000;
    if (base <= 0) return;
    const delay = backoffDelay(entry.rechecks++, {
      initialMs: base,
      maxMs: 10 * base,
      jitter: false,
    });
    const t = setTimeout(() => {
      if (
        !this.connection.closed &&
        this.connection.open &&
        this.prompts.get(promptKey(entry.request)) === entry
      )
        this.send(entry);
    }, delay);
    (t as { unref?: () => void }).unref?.();
  }

  private send(entry: PromptEntry): void {
    if (!this.connection.open) return; // sent by resume() once connected
    const { taskId, sessionId, text, idempotencyKey, origin } = entry.request;
    this.requests
      .request({ op: 'prompt', taskId, sessionId, text, idempotencyKey, origin }, 'reject')
      .then(
        (raw) => {
          if (this.prompts.get(promptKey(entry.request)) !== entry) return;
          let result: PromptResult;
          try {
            result = parseResult(PromptResult, raw);
          } catch (err) {
            this.reject(entry, err as BatonError);
            return;
          }
          if (result.status === 'decided') return this.decide(entry, result);
          const first = entry.status !== 'pending';
          entry.status = 'pending';
          entry.wasPending = true;
          this.recheckLater(entry);
          if (!first) return;
          const pending = pendingOf(entry);
          for (const f of entry.onPending) f(pending);
          this.emit('prompt.pending', pending);
        },
        (err: BatonError) => {
          if (this.prompts.get(promptKey(entry.request)) !== entry) return;
          // Dropped before the reply: resume() sends it again under the same key.
          if (err.code === 'disconnected') return;
          // The same key again is safe: it never makes a second prompt.
          if (RETRYABLE.has(err.code) && entry.retries < MAX_PROMPT_RETRIES) {
            this.connection.later(entry.retries++, () => {
              if (this.prompts.get(promptKey(entry.request)) === entry) this.send(entry);
            });
            return;
          }
          this.reject(entry, err);
        },
      );
  }

  private decide(
    entry: PromptEntry,
    d: {
      taskId: string;
      sessionId: string;
      idempotencyKey: string;
      promptId: string;
      decision: PromptOutcome;
    },
  ): void {
    this.prompts.delete(promptKey(entry.request));
    const decided: PromptDecision = {
      taskId: d.taskId,
      sessionId: d.sessionId,
      idempotencyKey: d.idempotencyKey,
      promptId: d.promptId,
      decision: d.decision,
      wasPending: entry.wasPending,
    };
    entry.resolve(decided);
    this.emit('prompt.decided', decided);
  }

  private reject(entry: PromptEntry, error: BatonError): void {
    this.prompts.delete(promptKey(entry.request));
    entry.reject(error);
  }
}

function promptKey(p: { taskId: string; sessionId: string; idempotencyKey: string }): string {
  return `${p.taskId}\u0000${p.sessionId}\u0000${p.idempotencyKey}`;
}

function pendingOf(p: PromptEntry): PendingPrompt {
  const { taskId, sessionId, idempotencyKey } = p.request;
  return { taskId, sessionId, idempotencyKey, status: p.status };
}

function randomKey(): string {
  const c = (
    globalThis as {
      crypto?: { randomUUID?: () => string; getRandomValues?: (b: Uint8Array) => Uint8Array };
    }
  ).crypto;
  if (c?.randomUUID) return c.randomUUID();
  // randomUUID needs a secure context in browsers; getRandomValues does not.
  const b = new Uint8Array(16);
  if (c?.getRandomValues) c.getRandomValues(b);
  else for (let i = 0; i < 16; i++) b[i] = Math.floor(Math.random() * 256);
  return [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
}

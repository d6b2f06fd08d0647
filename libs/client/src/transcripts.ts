import {
  TranscriptSubscribeResult,
  type TranscriptEntry,
  type TranscriptGap,
  type TranscriptMessage,
} from '@baton/protocol';
import { foldTranscript, type TranscriptItem } from '@baton/transcript';
import type { Connection } from './connection';
import { BatonError } from './errors';
import { parseResult, RETRYABLE, type Requests } from './requests';

export interface TranscriptOptions {
  /** Start after this cursor (a stream id a previous reader got); from the start without it. */
  readonly after?: string;
  /** Every event once, in order, with the cursor to resume after. */
  readonly onEvents: (events: readonly TranscriptEntry[], cursor: string) => void;
  /**
   * The transcript so far as whole items (foldTranscript of every event this reader got), after
   * each batch of events.
   */
  readonly onItems?: (items: TranscriptItem[]) => void;
  /**
   * The transcript's retention removed events after this reader's cursor before it read them
   * (`gap.after` to `gap.through`): they are lost, and the reader goes on after them. Without
   * this handler the loss is reported as an error (`transcript_gap`) to the client's onError.
   */
  readonly onGap?: (gap: TranscriptGap) => void;
  /** The subscription was refused for good (a scope the token lacks, an invalid cursor). */
  readonly onError?: (error: BatonError) => void;
}

export interface TranscriptReader {
  readonly taskId: string;
  readonly sessionId: string;
  /** The last cursor the server gave: what a new reader would resume after. */
  readonly cursor: string | undefined;
  /** Resolves once the server first confirmed the subscription. */
  readonly ready: Promise<void>;
  close(): Promise<void>;
}

const keyOf = (taskId: string, sessionId: string) => JSON.stringify([taskId, sessionId]);

/**
 * The client's transcript readers, one per session: each subscribes again after a reconnect with
 * the last cursor it got, so it misses nothing and gets nothing twice (an event at or before the
 * cursor, should one come, is dropped here too).
 */
export class Transcripts {
  private readonly readers = new Map<string, Reader>();

  constructor(
    private readonly connection: Pick<Connection, 'open' | 'later'>,
    private readonly requests: Pick<Requests, 'request'>,
    private readonly report: (error: BatonError) => void,
  ) {}

  open(taskId: string, sessionId: string, options: TranscriptOptions): TranscriptReader {
    const key = keyOf(taskId, sessionId);
    if (this.readers.has(key)) {
      throw new Error(`BatonClient: already reading the transcript of ${taskId}/${sessionId}`);
    }
    const r = new Reader(this, taskId, sessionId, options);
    this.readers.set(key, r);
    if (this.connection.open) this.send(r);
    return r;
  }

  async close(r: Reader): Promise<void> {
    const key = keyOf(r.taskId, r.sessionId);
    if (this.readers.get(key) !== r) return;
    this.readers.delete(key);
    r.closed = true;
    if (this.connection.open) {
      await this.requests
        .request(
          { op: 'transcript.unsubscribe', taskId: r.taskId, sessionId: r.sessionId },
          'reject',
        )
        .catch(() => {});
    }
  }

  receive(m: TranscriptMessage): void {
    const r = this.readers.get(keyOf(m.taskId, m.sessionId));
    if (!r || r.closed) return;
    if ('resync' in m) return; // the server catches up from the cursor the reader already has
    if ('gap' in m) {
      r.skip(m.cursor);
      if (r.options.onGap) r.options.onGap(m.gap);
      else this.report(gapError(m.taskId, m.sessionId, m.gap));
      return;
    }
    r.take(m.events, m.cursor);
  }

  resume(): void {
    for (const r of this.readers.values()) this.send(r);
  }

  endAll(): void {
    for (const r of this.readers.values()) r.closed = true;
    this.readers.clear();
  }

  private send(r: Reader): void {
    const after = r.cursor ?? r.options.after;
    this.requests
      .request(
        {
          op: 'transcript.subscribe',
          taskId: r.taskId,
          sessionId: r.sessionId,
          ...(after !== undefined ? { after } : {}),
        },
        'reject',
      )
      .then(
        (raw) => {
          if (r.closed) return;
          try {
            parseResult(TranscriptSubscribeResult, raw);
          } catch (err) {
            this.report(err as BatonError);
            return;
          }
          r.retries = 0;
          r.confirm();
        },
        (err: BatonError) => {
          if (r.closed) return;
          if (err.code === 'disconnected' || err.code === 'closed') return; // renewed on reconnect
          if (RETRYABLE.has(err.code)) {
            this.connection.later(r.retries++, () => {
              if (!r.closed && this.connection.open) this.send(r);
            });
            return;
          }
          this.readers.delete(keyOf(r.taskId, r.sessionId));
          r.closed = true;
          r.fail(err);
        },
      );
  }
}

class Reader implements TranscriptReader {
  cursor: string | undefined;
  closed = false;
  retries = 0;
  readonly ready: Promise<void>;
  private readonly events: TranscriptEntry['event'][] = [];
  private resolveReady!: () => void;
  private rejectReady!: (e: BatonError) => void;

  constructor(
    private readonly owner: Transcripts,
    readonly taskId: string,
    readonly sessionId: string,
    readonly options: TranscriptOptions,
  ) {
    this.ready = new Promise((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    this.ready.catch(() => {});
  }

  take(entries: readonly TranscriptEntry[], cursor: string): void {
    const last = this.cursor ?? this.options.after;
    const fresh = last === undefined ? entries : entries.filter((e) => after(e.id, last));
    if (last === undefined || after(cursor, last)) this.cursor = cursor;
    if (fresh.length === 0) return;
    this.options.onEvents(fresh, cursor);
    if (this.options.onItems) {
      for (const e of fresh) this.events.push(e.event);
      this.options.onItems(foldTranscript(this.events));
    }
  }

  /** Events up to `cursor` are gone: resume after them. */
  skip(cursor: string): void {
    const last = this.cursor ?? this.options.after;
    if (last === undefined || after(cursor, last)) this.cursor = cursor;
  }

  confirm(): void {
    this.resolveReady();
  }

  fail(err: BatonError): void {
    this.rejectReady(err);
    this.options.onError?.(err);
  }

  close(): Promise<void> {
    return this.owner.close(this);
  }
}

/** Whether stream id `a` comes after `b`. */
function after(a: string, b: string): boolean {
  const [am, as] = a.split('-').map(BigInt) as [bigint, bigint];
  const [bm, bs] = b.split('-').map(BigInt) as [bigint, bigint];
  return am !== bm ? am > bm : (as ?? 0n) > (bs ?? 0n);
}

function gapError(taskId: string, sessionId: string, gap: TranscriptGap): BatonError {
  return new BatonError(
    'transcript_gap',
    `transcript of ${taskId}/${sessionId}: events after ${gap.after} up to ${gap.through} ` +
      `were removed by its retention before this reader read them`,
  );
}

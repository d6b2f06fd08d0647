import { splitTaskKey, type StreamEntry, type Writer } from '@baton/protocol';
import { within } from '@baton/health';
import { isUnavailableError, type EventStore } from '@baton/store';
import { WireFailure } from '../errors';

/** How long a command waits for its tenant's quota counter before it goes uncharged. */
const QUOTA_WAIT_MS = 500;

/** A tenant's quota of stored bytes: what its commands may append over a window; 0: none. */
export interface StoredQuota {
  bytes: number;
  windowMs: number;
}

/**
 * Appends this gateway's commands to task streams under its writer instance with a growing seq.
 * Appends to one task go one at a time, so the store's per-writer dedupe (which keeps the highest
 * seq) never sees them reordered; every command of the process (prompts, queue and session
 * commands, execution requests) goes through the one writer for that reason.
 */
export class CommandWriter {
  private seq = 0;
  private readonly chains = new Map<string, Promise<unknown>>();

  constructor(
    private readonly store: EventStore,
    private readonly writerInstance: string,
    /** No caller waits longer than this for its append, however many wait before it. */
    private readonly storeTimeoutMs: number,
    private readonly quota: StoredQuota = { bytes: 0, windowMs: 86_400_000 },
  ) {}

  append(taskId: string, make: (writer: Writer) => StreamEntry): Promise<string> {
    const prev = this.chains.get(taskId) ?? Promise.resolve();
    const next = prev
      .catch(() => undefined)
      .then(async () => {
        const entry = make({ role: 'gateway', instance: this.writerInstance, seq: ++this.seq });
        await this.charge(taskId, entry);
        const [id] = await this.store.append(taskId, [entry]);
        if (!id) throw new Error('the store took a fresh writer seq for a duplicate');
        return id;
      });
    this.chains.set(taskId, next);
    void next
      .catch(() => undefined)
      .finally(() => {
        if (this.chains.get(taskId) === next) this.chains.delete(taskId);
      });
    return this.bounded(next);
  }

  /**
   * Charges the command's bytes to its tenant's quota, or refuses it. Charged before the append:
   * an append that then fails still counts (the quota errs toward refusing).
   */
  private async charge(taskId: string, entry: StreamEntry): Promise<void> {
    const { bytes: quota, windowMs } = this.quota;
    const tenant = splitTaskKey(taskId)?.tenant;
    if (quota === 0 || tenant === undefined) return;
    const bytes = Buffer.byteLength(JSON.stringify(entry));
    const r = await this.chargeWithin(tenant, bytes);
    if (r !== null && !r.charged) {
      throw new WireFailure(
        'rate_limited',
        `the tenant's commands hold ${r.stored} bytes of the last ${windowMs} ms; ${bytes} more would pass its quota of ${quota} (GATEWAY_MAX_STORED_BYTES_PER_TENANT)`,
      );
    }
  }

  /**
   * The charge, or null when the tenant's counter cannot be reached within QUOTA_WAIT_MS. The
   * counter lives on one Redis node while the tenant's tasks are spread over every shard: with
   * that node down (a Cluster master without replicas), refusing would stop the tenant's tasks on
   * every healthy master too. So the quota lets the command through uncharged meanwhile — a
   * protective bound lapses during an outage of its own node; the tenant's tasks stay served.
   */
  private async chargeWithin(
    tenant: string,
    bytes: number,
  ): Promise<{ charged: boolean; stored: number } | null> {
    const { bytes: quota, windowMs } = this.quota;
    const charged = this.store.tenants
      .chargeStored(tenant, bytes, quota, windowMs)
      .catch((err: unknown) => {
        if (isUnavailableError(err)) return null;
        throw err;
      });
    return within(charged, QUOTA_WAIT_MS, null);
  }

  /**
   * Each command's own Redis time is bounded by the connection; behind a stalled task chain, a
   * caller would wait for every append before its own. It gives up at its own bound instead
   * (`unavailable`); the append may still land, and a retry under the same key finds it.
   */
  private bounded<T>(p: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new Error(`Command timed out: the store took no append in ${this.storeTimeoutMs} ms`),
          ),
        this.storeTimeoutMs,
      );
    });
    return Promise.race([p, late]).finally(() => clearTimeout(timer));
  }
}

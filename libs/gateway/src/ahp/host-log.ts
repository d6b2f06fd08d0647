import type { RedisClient } from '@baton/store';

/** An action as sent: AHP's ActionEnvelope. */
export interface Envelope {
  channel: string;
  action: { type: string; [k: string]: unknown };
  serverSeq: number;
  origin?: { clientId: string; clientSeq: number };
  rejectionReason?: string;
}

/** What a reconnecting client can be given. */
export type Recovery =
  | { kind: 'unknown' }
  | { kind: 'snapshot' }
  | {
      kind: 'replay';
      /** What the client missed: the envelopes after its lastSeenServerSeq. */
      envelopes: Envelope[];
      /** Every envelope of the window, to rebuild each channel's state from its snapshot. */
      all: Envelope[];
      /** By channel: the snapshot the client was given (`{ fromSeq, state }`); `<channel>#k`: what the host knew. */
      states: Record<string, string>;
    };

/**
 * The host's one `serverSeq` and each client's replay window, in Redis so that every gateway
 * agrees: the counter only grows (INCRBY), and what a client was sent — its envelopes, and the
 * state each of its chats is in after them — is kept for `ttlSeconds` after its last action, up to
 * `maxEntries` envelopes (past that the window is gone and a reconnect gets snapshots).
 * A client is `<tenant>` + its `clientId`: another tenant's client of the same id is another client.
 */
export class HostLog {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly ttlSeconds = 300,
    private readonly maxEntries = 5_000,
  ) {}

  private get seqKey() {
    return `${this.prefix}:ahp:serverSeq`;
  }
  private clientKey(tenant: string, clientId: string, part: 'log' | 'state') {
    return `${this.prefix}:ahp:client:{${encodeURIComponent(tenant)}:${encodeURIComponent(clientId)}}:${part}`;
  }

  /** The host's current serverSeq. */
  async current(): Promise<number> {
    return Number((await this.redis.get(this.seqKey)) ?? 0);
  }

  /** Starts the client's window afresh (initialize): nothing before `seq` can be replayed. */
  async begin(tenant: string, clientId: string, seq: number): Promise<void> {
    const log = this.clientKey(tenant, clientId, 'log');
    const state = this.clientKey(tenant, clientId, 'state');
    await this.redis
      .multi()
      .del(log, state)
      .hset(state, '#floor', String(seq))
      .expire(state, this.ttlSeconds)
      .exec();
  }

  /** Reserves `n` consecutive serverSeqs; returns the first. */
  async reserve(n: number): Promise<number> {
    const last = await this.redis.incrby(this.seqKey, n);
    return last - n + 1;
  }

  /**
   * Records envelopes sent to the client (serialized, the last one's serverSeq `lastSeq`) and
   * what a reconnect through any gateway continues from (a channel's snapshot, what the host
   * knew). Past `maxEntries` the window is gone.
   */
  async record(
    tenant: string,
    clientId: string,
    envelopes: readonly (string | Buffer)[],
    lastSeq: number,
    states: Record<string, string | Buffer>,
  ): Promise<void> {
    const log = this.clientKey(tenant, clientId, 'log');
    const state = this.clientKey(tenant, clientId, 'state');
    const m = this.redis.multi();
    if (envelopes.length > 0) m.rpush(log, ...envelopes);
    if (Object.keys(states).length > 0) m.hset(state, states);
    m.expire(log, this.ttlSeconds).expire(state, this.ttlSeconds).llen(log);
    const res = await m.exec();
    const len = Number(res?.at(-1)?.[1] ?? 0);
    if (len > this.maxEntries && envelopes.length > 0) {
      // The window is full: forget it (the states it rebuilds from too): nothing before the last
      // envelope can be replayed now.
      await this.begin(tenant, clientId, lastSeq);
    }
  }

  /** What a client that saw everything up to `lastSeen` can get back. */
  async recover(tenant: string, clientId: string, lastSeen: number): Promise<Recovery> {
    const [[, raw], [, states]] = (await this.redis
      .multi()
      .lrange(this.clientKey(tenant, clientId, 'log'), 0, -1)
      .hgetall(this.clientKey(tenant, clientId, 'state'))
      .exec()) as [[unknown, string[]], [unknown, Record<string, string>]];
    if (!states || !('#floor' in states)) return { kind: 'unknown' };
    const floor = Number(states['#floor']);
    const { '#floor': _, ...chats } = states;
    const envelopes = raw.map((r) => JSON.parse(r) as Envelope);
    const top = envelopes.at(-1)?.serverSeq ?? floor;
    if (lastSeen < floor || lastSeen > top) return { kind: 'snapshot' };
    return {
      kind: 'replay',
      envelopes: envelopes.filter((e) => e.serverSeq > lastSeen),
      all: envelopes,
      states: chats,
    };
  }
}

import type { StoreContext } from './shared';

/** One execution of one session of a task. */
export interface ExecutionRef {
  taskId: string;
  sessionId: string;
  executionId: string;
}

export interface ExpiredExecutionLease extends ExecutionRef {
  /** Server time (ms) at which the lease lapsed or lapses. */
  expiresAt: number;
  /** The lease's period as its worker last took it (ms); null when not recorded. */
  ttlMs?: number | null;
}

function executionMember(ref: ExecutionRef): string {
  return JSON.stringify([ref.taskId, ref.sessionId, ref.executionId]);
}

function parseExecutionMember(member: string): ExecutionRef | null {
  try {
    const v: unknown = JSON.parse(member);
    if (Array.isArray(v) && v.length === 3) {
      const [taskId, sessionId, executionId] = v as unknown[];
      if (
        typeof taskId === 'string' &&
        typeof sessionId === 'string' &&
        typeof executionId === 'string'
      ) {
        return { taskId, sessionId, executionId };
      }
    }
  } catch {
    // fall through: a member Baton did not write
  }
  return null;
}

/**
 * Executions: their leases (`xleases`, with their periods in `xleasettl`), renewed by the worker
 * hosting each, and the generations of a session's executions (`xgen:`).
 */
export class Executions {
  constructor(private readonly ctx: StoreContext) {}

  /**
   * The next generation of a session's executions (1, 2, ...). Taken once per execution when it
   * starts, so a restarted execution always carries a higher generation than its predecessor.
   */
  async nextGeneration(taskId: string, sessionId: string): Promise<number> {
    return this.ctx.redis.hincrby(this.ctx.keys.executionGenerations(taskId), sessionId, '1');
  }

  /** Takes or renews an execution's lease for `ttlMs` by the server clock; returns the expiry. */
  async renewLease(ref: ExecutionRef, ttlMs: number): Promise<number> {
    return this.ctx.scripts.executionLeaseRenew(this.leaseKeys(ref), [executionMember(ref), ttlMs]);
  }

  /**
   * Extends a lease the execution still holds; null when it holds none any more: its owner
   * declared it lost (and dropped the lease), so its worker must stop it rather than revive it.
   */
  async extendLease(ref: ExecutionRef, ttlMs: number): Promise<number | null> {
    const r = await this.ctx.scripts.executionLeaseRenew(this.leaseKeys(ref), [
      executionMember(ref),
      ttlMs,
      '1',
    ]);
    return r === -1 ? null : r;
  }

  /** Drops an execution's lease (its end is recorded, or it was declared lost). */
  async dropLease(ref: ExecutionRef): Promise<void> {
    const [leases, ttls] = this.leaseKeys(ref);
    await this.ctx.redis.zrem(leases, executionMember(ref));
    await this.ctx.redis.hdel(ttls, executionMember(ref));
  }

  /** Leases of a shard that lapsed by the server clock, oldest first. */
  async expiredLeases(shard: number, limit = 1_000): Promise<ExpiredExecutionLease[]> {
    const { keys } = this.ctx;
    const flat = await this.ctx.scripts.executionLeasesExpired(
      [keys.executionLeases(shard), keys.executionLeaseTtls(shard)],
      [limit],
    );
    const out: ExpiredExecutionLease[] = [];
    for (let i = 0; i + 2 < flat.length; i += 3) {
      const ref = parseExecutionMember(flat[i]!);
      const ttl = Number(flat[i + 2]);
      if (ref) out.push({ ...ref, expiresAt: Number(flat[i + 1]), ttlMs: ttl > 0 ? ttl : null });
    }
    return out;
  }

  /** Every execution holding a lease in a shard, live or lapsed. */
  async leases(shard: number): Promise<ExpiredExecutionLease[]> {
    const flat = await this.ctx.redis.zrange(
      this.ctx.keys.executionLeases(shard),
      '0',
      '-1',
      'WITHSCORES',
    );
    const out: ExpiredExecutionLease[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const ref = parseExecutionMember(flat[i]!);
      if (ref) out.push({ ...ref, expiresAt: Number(flat[i + 1]) });
    }
    return out;
  }

  private leaseKeys(ref: ExecutionRef): [leases: string, ttls: string] {
    const shard = this.ctx.shardOf(ref.taskId);
    return [this.ctx.keys.executionLeases(shard), this.ctx.keys.executionLeaseTtls(shard)];
  }
}

import { ServiceMetrics } from '@baton/health';

/** Per-shard figures read at scrape time. */
export interface ShardStats {
  shard: number;
  tasks: number;
  /** Tasks whose stream has entries the owner has not folded yet. */
  tasksBehind: number;
  /** How long the oldest of those entries has been waiting, in seconds (0 when caught up). */
  lagSeconds: number;
  /** Prompts waiting in the sessions' queues. */
  queuedPrompts: number;
  /** Sessions held, by {@link headlineKey} (coarse state and attention kind). */
  sessions: ReadonlyMap<string, number>;
}

const SEP = '\u0000';
/** The key of {@link ShardStats.sessions}: a session's coarse state and attention kind. */
export const headlineKey = (state: string, attention: string): string =>
  `${state}${SEP}${attention}`;

export class Metrics extends ServiceMetrics {
  readonly entriesFolded = this.counter(
    'baton_projector_entries_folded_total',
    'Task stream entries folded (replays after a takeover included)',
    ['shard'],
  );
  readonly decisions = this.counter(
    'baton_projector_decisions_total',
    'Decisions by type and outcome (appended, conflict: retried after catching up, fenced: lease lost)',
    ['type', 'outcome'],
  );
  readonly leaseChanges = this.counter(
    'baton_projector_lease_changes_total',
    'Shard lease changes of this instance (acquired, released, lost)',
    ['change'],
  );
  readonly updatesPublished = this.counter(
    'baton_projector_updates_published_total',
    'Client updates published (seqs already published by a previous owner are not counted)',
    ['shard'],
  );
  readonly inboxMessages = this.counter(
    'baton_projector_inbox_messages_total',
    'Messages handed to execution inboxes',
    ['type'],
  );
  readonly fencedWrites = this.counter(
    'baton_projector_fenced_writes_total',
    'Writes refused because this instance no longer held the shard lease',
    ['shard'],
  );
  readonly snapshots = this.counter('baton_projector_snapshots_total', 'Task snapshots written', [
    'shard',
  ]);
  readonly timers = this.counter(
    'baton_projector_timers_total',
    'Timers raised into decisions (execution_lease_expired, watchdog)',
    ['type'],
  );
  readonly errors = this.counter(
    'baton_projector_errors_total',
    'Operations that failed and will be retried',
    ['op'],
  );
  readonly tasksLoaded = this.counter(
    'baton_projector_tasks_loaded_total',
    'Tasks taken into memory (a shard taken over, a new task, a task put away that came back)',
    ['shard'],
  );
  readonly tasksEvicted = this.counter(
    'baton_projector_tasks_evicted_total',
    'Tasks put away (at rest and quiet for PROJECTOR_EVICT_IDLE_MS; their snapshot kept)',
    ['shard'],
  );
  readonly tasksTrimmed = this.counter(
    'baton_projector_tasks_trimmed_total',
    'Retention trims of tasks put away (PROJECTOR_RETENTION_MS after their last entry)',
    ['shard'],
  );

  constructor(stats: () => ShardStats[]) {
    super('baton_projector_');
    this.gauge(
      'baton_projector_tasks_held',
      'Tasks held in memory, all owned shards together',
      [],
      (g) => {
        let n = 0;
        for (const s of stats()) n += s.tasks;
        g.set(n);
      },
    );
    this.gauge('baton_projector_owned_shards', 'Shards this instance owns', [], (g) =>
      g.set(stats().length),
    );
    const perShard = (name: string, help: string, pick: (s: ShardStats) => number) =>
      this.gauge(name, help, ['shard'], (g) => {
        g.reset();
        for (const s of stats()) g.set({ shard: String(s.shard) }, pick(s));
      });
    perShard('baton_projector_shard_tasks', 'Tasks held in memory per owned shard', (s) => s.tasks);
    perShard(
      'baton_projector_shard_prompts_queued',
      "Prompts waiting in the sessions' queues, per owned shard",
      (s) => s.queuedPrompts,
    );
    this.gauge(
      'baton_projector_sessions',
      'Sessions of the tasks held, by coarse state and attention kind ("none": nothing to see to)',
      ['state', 'attention'],
      (g) => {
        g.reset();
        const total = new Map<string, number>();
        for (const s of stats())
          for (const [key, n] of s.sessions) total.set(key, (total.get(key) ?? 0) + n);
        for (const [key, n] of total) {
          const [state, attention] = key.split(SEP) as [string, string];
          g.set({ state, attention }, n);
        }
      },
    );
    perShard(
      'baton_projector_shard_tasks_behind',
      'Tasks with appended entries not folded yet, per owned shard',
      (s) => s.tasksBehind,
    );
    perShard(
      'baton_projector_shard_lag_seconds',
      'Age of the oldest appended entry not folded yet, per owned shard',
      (s) => s.lagSeconds,
    );
  }
}

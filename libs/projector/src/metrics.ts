import { ServiceMetrics } from '@baton/health';
import { Counter, Gauge } from 'prom-client';

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
  readonly entriesFolded: Counter<'shard'>;
  readonly decisions: Counter<'type' | 'outcome'>;
  readonly leaseChanges: Counter<'change'>;
  readonly updatesPublished: Counter<'shard'>;
  readonly inboxMessages: Counter<'type'>;
  readonly fencedWrites: Counter<'shard'>;
  readonly snapshots: Counter<'shard'>;
  readonly timers: Counter<'type'>;
  readonly errors: Counter<'op'>;
  readonly tasksLoaded: Counter<'shard'>;
  readonly tasksEvicted: Counter<'shard'>;
  readonly tasksTrimmed: Counter<'shard'>;
  constructor(stats: () => ShardStats[]) {
    super('baton_projector_');
    const registers = [this.registry];
    this.entriesFolded = new Counter({
      name: 'baton_projector_entries_folded_total',
      help: 'Task stream entries folded (replays after a takeover included)',
      labelNames: ['shard'],
      registers,
    });
    this.decisions = new Counter({
      name: 'baton_projector_decisions_total',
      help: 'Decisions by type and outcome (appended, conflict: retried after catching up, fenced: lease lost)',
      labelNames: ['type', 'outcome'],
      registers,
    });
    this.leaseChanges = new Counter({
      name: 'baton_projector_lease_changes_total',
      help: 'Shard lease changes of this instance (acquired, released, lost)',
      labelNames: ['change'],
      registers,
    });
    this.updatesPublished = new Counter({
      name: 'baton_projector_updates_published_total',
      help: 'Client updates published (seqs already published by a previous owner are not counted)',
      labelNames: ['shard'],
      registers,
    });
    this.inboxMessages = new Counter({
      name: 'baton_projector_inbox_messages_total',
      help: 'Messages handed to execution inboxes',
      labelNames: ['type'],
      registers,
    });
    this.fencedWrites = new Counter({
      name: 'baton_projector_fenced_writes_total',
      help: 'Writes refused because this instance no longer held the shard lease',
      labelNames: ['shard'],
      registers,
    });
    this.snapshots = new Counter({
      name: 'baton_projector_snapshots_total',
      help: 'Task snapshots written',
      labelNames: ['shard'],
      registers,
    });
    this.timers = new Counter({
      name: 'baton_projector_timers_total',
      help: 'Timers raised into decisions (execution_lease_expired, watchdog)',
      labelNames: ['type'],
      registers,
    });
    this.errors = new Counter({
      name: 'baton_projector_errors_total',
      help: 'Operations that failed and will be retried',
      labelNames: ['op'],
      registers,
    });
    this.tasksLoaded = new Counter({
      name: 'baton_projector_tasks_loaded_total',
      help: 'Tasks taken into memory (a shard taken over, a new task, a task put away that came back)',
      labelNames: ['shard'],
      registers,
    });
    this.tasksEvicted = new Counter({
      name: 'baton_projector_tasks_evicted_total',
      help: 'Tasks put away (at rest and quiet for PROJECTOR_EVICT_IDLE_MS; their snapshot kept)',
      labelNames: ['shard'],
      registers,
    });
    this.tasksTrimmed = new Counter({
      name: 'baton_projector_tasks_trimmed_total',
      help: 'Retention trims of tasks put away (PROJECTOR_RETENTION_MS after their last entry)',
      labelNames: ['shard'],
      registers,
    });
    const held = new Gauge({
      name: 'baton_projector_tasks_held',
      help: 'Tasks held in memory, all owned shards together',
      registers,
      collect() {
        let n = 0;
        for (const s of stats()) n += s.tasks;
        this.set(n);
      },
    });
    void held;
    const owned = new Gauge({
      name: 'baton_projector_owned_shards',
      help: 'Shards this instance owns',
      registers,
      collect() {
        this.set(stats().length);
      },
    });
    void owned;
    const perShard = (name: string, help: string, pick: (s: ShardStats) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['shard'],
        registers,
        collect() {
          this.reset();
          for (const s of stats()) this.set({ shard: String(s.shard) }, pick(s));
        },
      });
    perShard('baton_projector_shard_tasks', 'Tasks held in memory per owned shard', (s) => s.tasks);
    perShard(
      'baton_projector_shard_prompts_queued',
      "Prompts waiting in the sessions' queues, per owned shard",
      (s) => s.queuedPrompts,
    );
    const sessions = new Gauge({
      name: 'baton_projector_sessions',
      help: 'Sessions of the tasks held, by coarse state and attention kind ("none": nothing to see to)',
      labelNames: ['state', 'attention'],
      registers,
      collect() {
        this.reset();
        const total = new Map<string, number>();
        for (const s of stats())
          for (const [key, n] of s.sessions) total.set(key, (total.get(key) ?? 0) + n);
        for (const [key, n] of total) {
          const [state, attention] = key.split(SEP) as [string, string];
          this.set({ state, attention }, n);
        }
      },
    });
    void sessions;
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

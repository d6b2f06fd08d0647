/**
 * The capacity model's arithmetic, pure: measured per-unit costs × an assumed load → how many
 * processes and machines of each role, and which Redis. bench/capacity.bench.ts measures the
 * units and prints the plan; capacity.spec.ts checks the arithmetic.
 *
 * The model is linear on purpose: every unit is measured on this 2-core machine at one load, and
 * the plan multiplies it out. What it leaves out is stated where the plan is printed.
 */

/** Per-unit costs, as measured. CPU in µs of one core; memory in bytes. */
export interface Units {
  /** CPU per fact appended (the fold, its update published, its view written). */
  projectorCpuPerFactUs: number;
  /**
   * CPU per fact fanned out to the task's watchers (the watchers per task of the measurement),
   * each update read once.
   */
  gatewayCpuPerFactUs: number;
  /**
   * Gateway CPU per update it reads from a shard's stream for none of its own watchers: what each
   * further gateway that tails the shard pays again (the gateway suite, scale-out).
   */
  gatewayCpuPerUpdateReadUs: number;
  /** Updates published per fact appended (the e2e suite). */
  updatesPerFact: number;
  /** Redis CPU per fact: the append, the projector's reads and writes, the gateway's tail. */
  redisCpuPerFactUs: number;
  /** Worker CPU per fact (ACP frames in, facts appended), the agent excluded. */
  workerCpuPerFactUs: number;
  /** Projector memory per session it holds. */
  projectorBytesPerSession: number;
  /** Gateway memory per connection subscribed to one task. */
  gatewayBytesPerConnection: number;
  /** Worker memory per execution it hosts, the agent process excluded. */
  workerBytesPerExecution: number;
  /**
   * Redis memory per active session-day: what it keeps of a day (its task stream for the hot
   * window, history spans and checkpoints, transcript, raw frames) and its view and updates.
   */
  redisBytesPerSession: number;
}

export interface Load {
  activeSessions: number;
  watchersPerSession: number;
  /** Facts per second one active session appends. */
  factsPerSessionPerSecond: number;
  /** The watchers per task the gateway's CPU per fact was measured with; it scales with watchers. */
  measuredWatchers: number;
  /** BATON_SHARDS: a gateway tails a shard's update stream, all of it, if it serves any of it. */
  shards: number;
  /**
   * How watchers reach gateways. `by-shard`: a task's watchers go to the gateways that serve its
   * shard (gateways ≤ shards: each shard read by one). `any`: wherever the balancer sends them, so
   * each gateway tails every shard one of its connections' tasks is on.
   */
  routing: 'by-shard' | 'any';
}

export interface Machine {
  name: string;
  cores: number;
  memoryBytes: number;
  /** Share of each core a Node process (one per core) may use: headroom for bursts and GC. */
  cpuTarget: number;
  /** Share of the machine's memory the processes may hold. */
  memoryTarget: number;
  /** Memory a Node process of the role holds with nothing in it. */
  processBaseBytes: number;
}

export interface RedisNode {
  /** Share of its one main thread a Redis master may use. */
  cpuTarget: number;
  /** maxmemory of one master. */
  memoryBytes: number;
}

export interface RolePlan {
  role: 'projector' | 'gateway' | 'worker';
  /** Cores of CPU the role needs. */
  cores: number;
  memoryBytes: number;
  processes: number;
  machines: number;
  boundBy: 'cpu' | 'memory';
  /** Gateways only: how many gateways read each update (1 when each shard is read once). */
  readersPerUpdate?: number;
}

export interface RedisPlan {
  cores: number;
  memoryBytes: number;
  masters: number;
  boundBy: 'cpu' | 'memory';
  /** "single instance" or "Cluster of N masters". */
  kind: string;
}

export interface Plan {
  load: Load;
  factsPerSecond: number;
  connections: number;
  roles: RolePlan[];
  redis: RedisPlan;
  /**
   * The least BATON_SHARDS the plan works with: a shard is owned by one projector at a time, so
   * projectors past the shard count own nothing; routed by shard, gateways past it read a shard
   * twice.
   */
  shardsNeeded: number;
}

function role(
  name: RolePlan['role'],
  cpuUsPerSecond: number,
  memoryBytes: number,
  m: Machine,
): RolePlan {
  const cores = cpuUsPerSecond / 1e6;
  // One Node process per core: a process is one event loop, so a core is what it can use.
  const perProcessMemory = (m.memoryBytes * m.memoryTarget) / m.cores - m.processBaseBytes;
  if (perProcessMemory <= 0) throw new Error(`capacity: a ${m.name} holds no ${name} process`);
  const byCpu = Math.ceil(cores / m.cpuTarget);
  const byMemory = Math.ceil(memoryBytes / perProcessMemory);
  const processes = Math.max(1, byCpu, byMemory);
  return {
    role: name,
    cores,
    memoryBytes: memoryBytes + processes * m.processBaseBytes,
    processes,
    machines: Math.ceil(processes / m.cores),
    boundBy: byMemory > byCpu ? 'memory' : 'cpu',
  };
}

/**
 * Redis memory one active session holds: what the projector keeps per session (view, snapshot,
 * its share of the updates), plus every fact it appends for as long as the stream keeps it
 * (the retention behind the snapshot, plus the time until the snapshot).
 */
export function redisBytesPerSession(
  fixedBytes: number,
  bytesPerFact: number,
  factsPerSecond: number,
  retainedSeconds: number,
): number {
  return fixedBytes + bytesPerFact * factsPerSecond * retainedSeconds;
}

/**
 * How many gateways read each update when `gateways` serve the load. By shard: one per shard while
 * there are no more gateways than shards, then gateways ÷ shards. Any: a gateway whose C
 * connections each watch a task drawn over S shards tails 1 − (1 − 1/S)^C of them.
 */
export function readersPerUpdate(gateways: number, load: Load): number {
  if (load.routing === 'by-shard') return Math.max(1, gateways / load.shards);
  const connectionsPerGateway = (load.activeSessions * load.watchersPerSession) / gateways;
  const tailed = 1 - (1 - 1 / load.shards) ** connectionsPerGateway;
  return Math.max(1, gateways * tailed);
}

/**
 * The gateways: fan-out and one read of each update (the measured CPU per fact), plus the reads
 * of the same updates by every further gateway that tails their shard. More gateways can mean
 * more reads, so the count is a fixed point.
 */
function gatewayRole(units: Units, load: Load, m: Machine): RolePlan {
  const factsPerSecond = load.activeSessions * load.factsPerSessionPerSecond;
  const updatesPerSecond = factsPerSecond * units.updatesPerFact;
  const fanout = load.watchersPerSession / load.measuredWatchers;
  const deliveries = factsPerSecond * units.gatewayCpuPerFactUs * fanout;
  const memory = load.activeSessions * load.watchersPerSession * units.gatewayBytesPerConnection;
  const at = (g: number) => {
    const readers = readersPerUpdate(g, load);
    const reads = updatesPerSecond * (readers - 1) * units.gatewayCpuPerUpdateReadUs;
    return { ...role('gateway', deliveries + reads, memory, m), readersPerUpdate: readers };
  };
  // p(g), the processes g gateways need, grows with g and is bounded (a gateway tails at most
  // every shard), so iterating from one process reaches the least fixed point.
  let g = 1;
  for (let i = 0; i < 10_000; i++) {
    const r = at(g);
    if (r.processes <= g) return r;
    g = r.processes;
  }
  throw new Error(`capacity: the gateway count did not settle (${g} after 10,000 steps)`);
}

export function plan(units: Units, load: Load, machine: Machine, redis: RedisNode): Plan {
  const factsPerSecond = load.activeSessions * load.factsPerSessionPerSecond;
  const connections = load.activeSessions * load.watchersPerSession;
  const roles = [
    role(
      'projector',
      factsPerSecond * units.projectorCpuPerFactUs,
      load.activeSessions * units.projectorBytesPerSession,
      machine,
    ),
    gatewayRole(units, load, machine),
    role(
      'worker',
      factsPerSecond * units.workerCpuPerFactUs,
      load.activeSessions * units.workerBytesPerExecution,
      machine,
    ),
  ];
  const redisCores = (factsPerSecond * units.redisCpuPerFactUs) / 1e6;
  const redisMemory = load.activeSessions * units.redisBytesPerSession;
  const byCpu = Math.ceil(redisCores / redis.cpuTarget);
  const byMemory = Math.ceil(redisMemory / redis.memoryBytes);
  const masters = Math.max(1, byCpu, byMemory);
  const processes = (r: RolePlan['role']) => roles.find((x) => x.role === r)!.processes;
  return {
    load,
    factsPerSecond,
    connections,
    roles,
    shardsNeeded: Math.max(
      processes('projector'),
      load.routing === 'by-shard' ? processes('gateway') : 1,
    ),
    redis: {
      cores: redisCores,
      memoryBytes: redisMemory,
      masters,
      boundBy: byMemory > byCpu ? 'memory' : 'cpu',
      kind: masters === 1 ? 'single instance' : `Cluster of ${masters} masters`,
    },
  };
}

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const gb = (b: number) => `${(b / 2 ** 30).toFixed(b < 10 * 2 ** 30 ? 2 : 0)} GB`;
const cores = (c: number) => (c < 10 ? c.toFixed(2) : c.toFixed(0));

/** The plans side by side, one row per role: a markdown table. */
export function formatPlans(plans: readonly Plan[], machine: Machine): string {
  const head = `| role | ${plans.map((p) => `${int(p.load.activeSessions)} active sessions (${int(p.factsPerSecond)} facts/s, ${int(p.connections)} connections)`).join(' | ')} |`;
  const sep = `|---|${plans.map(() => '---').join('|')}|`;
  const rows = (['projector', 'gateway', 'worker'] as const).map((r) => {
    const cells = plans.map((p) => {
      const x = p.roles.find((y) => y.role === r)!;
      const reads =
        x.readersPerUpdate === undefined
          ? ''
          : `; each update read by ${x.readersPerUpdate.toFixed(x.readersPerUpdate < 10 ? 2 : 0)} gateway${x.readersPerUpdate === 1 ? '' : 's'}`;
      return `${x.machines} × ${machine.name} (${x.processes} process${x.processes === 1 ? '' : 'es'}; ${cores(x.cores)} cores, ${gb(x.memoryBytes)}; bound by ${x.boundBy}${reads})`;
    });
    return `| ${r} | ${cells.join(' | ')} |`;
  });
  const redis = plans.map(
    (p) =>
      `${p.redis.kind} (${cores(p.redis.cores)} cores of Redis main thread, ${gb(p.redis.memoryBytes)}; bound by ${p.redis.boundBy})`,
  );
  const shards = plans.map(
    (p) =>
      `BATON_SHARDS ≥ ${int(p.shardsNeeded)}${p.shardsNeeded > p.load.shards ? ` (NOT the planned ${int(p.load.shards)}: chosen once, at the first deployment)` : ` (planned: ${int(p.load.shards)})`}`,
  );
  return [
    head,
    sep,
    ...rows,
    `| Redis | ${redis.join(' | ')} |`,
    `| shards | ${shards.join(' | ')} |`,
  ].join('\n');
}

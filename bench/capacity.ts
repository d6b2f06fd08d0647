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
  /** CPU per fact fanned out to the task's watchers (the watchers per task of the measurement). */
  gatewayCpuPerFactUs: number;
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
  /** Redis memory per session: its stream with the retention kept, view, snapshot, updates. */
  redisBytesPerSession: number;
}

export interface Load {
  activeSessions: number;
  watchersPerSession: number;
  /** Facts per second one active session appends. */
  factsPerSessionPerSecond: number;
  /** The watchers per task the gateway's CPU per fact was measured with; it scales with watchers. */
  measuredWatchers: number;
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

export function plan(units: Units, load: Load, machine: Machine, redis: RedisNode): Plan {
  const factsPerSecond = load.activeSessions * load.factsPerSessionPerSecond;
  const connections = load.activeSessions * load.watchersPerSession;
  const fanout = load.watchersPerSession / load.measuredWatchers;
  const roles = [
    role(
      'projector',
      factsPerSecond * units.projectorCpuPerFactUs,
      load.activeSessions * units.projectorBytesPerSession,
      machine,
    ),
    role(
      'gateway',
      factsPerSecond * units.gatewayCpuPerFactUs * fanout,
      connections * units.gatewayBytesPerConnection,
      machine,
    ),
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
  return {
    load,
    factsPerSecond,
    connections,
    roles,
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
      return `${x.machines} × ${machine.name} (${x.processes} process${x.processes === 1 ? '' : 'es'}; ${cores(x.cores)} cores, ${gb(x.memoryBytes)}; bound by ${x.boundBy})`;
    });
    return `| ${r} | ${cells.join(' | ')} |`;
  });
  const redis = plans.map(
    (p) =>
      `${p.redis.kind} (${cores(p.redis.cores)} cores of Redis main thread, ${gb(p.redis.memoryBytes)}; bound by ${p.redis.boundBy})`,
  );
  return [head, sep, ...rows, `| Redis | ${redis.join(' | ')} |`].join('\n');
}

import {
  formatPlans,
  plan,
  redisBytesPerSession,
  type Load,
  type Machine,
  type RedisNode,
  type Units,
} from './capacity';

const GB = 2 ** 30;
const units: Units = {
  projectorCpuPerFactUs: 300,
  gatewayCpuPerFactUs: 200,
  redisCpuPerFactUs: 100,
  workerCpuPerFactUs: 50,
  projectorBytesPerSession: 1_000,
  gatewayBytesPerConnection: 10_000,
  workerBytesPerExecution: 1_000_000,
  redisBytesPerSession: 1_000_000,
};
const machine: Machine = {
  name: '8 cores 32 GB',
  cores: 8,
  memoryBytes: 32 * GB,
  cpuTarget: 0.5,
  memoryTarget: 0.75,
  processBaseBytes: 0,
};
const redis: RedisNode = { cpuTarget: 0.5, memoryBytes: 20 * GB };
const load = (activeSessions: number): Load => ({
  activeSessions,
  watchersPerSession: 10,
  factsPerSessionPerSecond: 1,
  measuredWatchers: 10,
});

describe('capacity plan', () => {
  it('sizes each role by CPU when memory is plenty', () => {
    const p = plan(units, load(10_000), machine, redis);
    expect(p.factsPerSecond).toBe(10_000);
    expect(p.connections).toBe(100_000);
    const projector = p.roles.find((r) => r.role === 'projector')!;
    // 10,000 facts/s × 300 µs = 3 cores; at half a core per process, 6 processes on one machine.
    expect(projector.cores).toBeCloseTo(3);
    expect(projector).toMatchObject({ processes: 6, machines: 1, boundBy: 'cpu' });
    const gateway = p.roles.find((r) => r.role === 'gateway')!;
    expect(gateway).toMatchObject({ processes: 4, machines: 1, boundBy: 'cpu' });
  });

  it('sizes by memory when memory binds, and counts the machines', () => {
    // 100,000 executions × 1 MB = ~95 GB; 3 GB per process (32 GB × 0.75 / 8) → 32 processes.
    const p = plan(units, load(100_000), machine, redis);
    const worker = p.roles.find((r) => r.role === 'worker')!;
    expect(worker).toMatchObject({ processes: 32, machines: 4, boundBy: 'memory' });
  });

  it('scales the gateway CPU with the watchers per session', () => {
    const ten = plan(units, load(10_000), machine, redis).roles[1]!.cores;
    const twenty = plan(units, { ...load(10_000), watchersPerSession: 20 }, machine, redis)
      .roles[1]!.cores;
    expect(twenty).toBeCloseTo(2 * ten);
  });

  it('picks a single Redis until CPU or memory needs a Cluster', () => {
    expect(plan(units, load(1_000), machine, redis).redis).toMatchObject({
      masters: 1,
      kind: 'single instance',
    });
    // 100,000 facts/s × 100 µs = 10 cores of Redis at half a thread each → 20 masters;
    // 100,000 × 1 MB = ~95 GB at 20 GB each → 5: CPU binds.
    expect(plan(units, load(100_000), machine, redis).redis).toMatchObject({
      masters: 20,
      boundBy: 'cpu',
      kind: 'Cluster of 20 masters',
    });
  });

  it('keeps the facts of a session in Redis for as long as they are retained', () => {
    // 2 facts/s × 100 B × one hour, + 5 KB of view and snapshot.
    expect(redisBytesPerSession(5_000, 100, 2, 3_600)).toBe(5_000 + 720_000);
  });

  it('adds the base memory of each process', () => {
    const p = plan(units, load(10), { ...machine, processBaseBytes: 100 * 2 ** 20 }, redis);
    expect(p.roles[0]!.memoryBytes).toBe(10 * 1_000 + 100 * 2 ** 20);
  });

  it('prints one column per load and one row per role and Redis', () => {
    const text = formatPlans([plan(units, load(10_000), machine, redis)], machine);
    expect(text.split('\n')).toHaveLength(6);
    expect(text).toContain('| projector | 1 × 8 cores 32 GB (6 processes');
    expect(text).toContain('| Redis | Cluster of 2 masters');
  });
});

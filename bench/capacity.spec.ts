import {
  formatPlans,
  plan,
  readersPerUpdate,
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
  gatewayCpuPerUpdateReadUs: 20,
  updatesPerFact: 1,
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
  shards: 64,
  routing: 'by-shard',
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

  it('reads each update once while watchers are routed by shard and gateways ≤ shards', () => {
    const gw = plan(units, load(10_000), machine, redis).roles[1]!;
    expect(gw.readersPerUpdate).toBe(1);
    // Only the fan-out: 10,000 facts/s × 200 µs = 2 cores, as before reads were charged.
    expect(gw.cores).toBeCloseTo(2);
  });

  it('charges a gateway per process for what it reads, routed by shard: flat in the count', () => {
    // 1,000,000 sessions: 1,000,000 facts/s × 200 µs = 200 cores → 400 processes on 64 shards,
    // each shard read by 400 / 64 gateways; what each process reads stays 1/64 of the stream.
    const gw = plan(units, load(1_000_000), machine, redis).roles[1]!;
    expect(gw.readersPerUpdate).toBeCloseTo(gw.processes / 64);
    const readsPerProcess = (1_000_000 * 20 * (gw.readersPerUpdate! - 1)) / 1e6 / gw.processes;
    expect(readsPerProcess).toBeLessThan((1_000_000 * 20) / 1e6 / 64);
  });

  it('charges every further gateway that tails a shard when watchers are not routed', () => {
    const routed = plan(units, load(10_000), machine, redis).roles[1]!;
    const any = plan(units, { ...load(10_000), routing: 'any' }, machine, redis).roles[1]!;
    // 100,000 connections over 4+ gateways: each tails all 64 shards, so reads every update.
    expect(any.readersPerUpdate).toBeCloseTo(any.processes, 1);
    expect(any.cores).toBeCloseTo(2 + (10_000 * 20 * (any.processes - 1)) / 1e6);
    expect(any.processes).toBeGreaterThan(routed.processes);
    // The count is a fixed point: the plan's processes can carry their own reads.
    expect(any.cores / machine.cpuTarget).toBeLessThanOrEqual(any.processes);
  });

  it('multiplies unrouted gateways until each holds too few connections to tail every shard', () => {
    // 1 fact/s per session, 100 µs per update read: one gateway reading all of 100,000 updates/s
    // would spend 10 cores. Unrouted, gateways multiply until each holds few enough connections
    // to tail few shards.
    const slow = { ...units, gatewayCpuPerUpdateReadUs: 100 };
    const any = plan(slow, { ...load(100_000), routing: 'any' }, machine, redis).roles[1]!;
    const routed = plan(slow, load(100_000), machine, redis).roles[1]!;
    expect(routed).toMatchObject({ processes: 40, readersPerUpdate: 1 });
    // ~300,000 gateways of ~3 connections each, every update read by ~15,000 of them.
    expect(any.processes).toBeGreaterThan(1_000 * routed.processes);
    expect(any.cores / machine.cpuTarget).toBeLessThanOrEqual(any.processes);
  });

  it('needs a shard per projector process: more would own nothing', () => {
    // 1,000,000 facts/s × 300 µs = 300 cores → 600 projector processes, past 64 shards.
    // With shards enough, 400 gateways (200 cores) read each update once: the projectors bind.
    const p = plan(units, { ...load(1_000_000), shards: 4_096 }, machine, redis);
    expect(p.roles[0]!.processes).toBe(600);
    expect(p.roles[1]!).toMatchObject({ processes: 400, readersPerUpdate: 1 });
    expect(p.shardsNeeded).toBe(600);
    expect(formatPlans([p], machine)).toContain('BATON_SHARDS ≥ 600 (planned: 4,096)');
    const few = plan(units, load(1_000_000), machine, redis);
    expect(formatPlans([few], machine)).toMatch(/BATON_SHARDS ≥ [\d,]+ \(NOT the planned 64/);
  });

  it('counts the shards a gateway tails from its connections when unrouted', () => {
    const l = { ...load(100), routing: 'any' as const };
    // 1,000 connections on one gateway: it tails every shard, but one gateway reads once.
    expect(readersPerUpdate(1, l)).toBeCloseTo(1);
    // 1,000 gateways of one connection each: each tails one shard; every update read by ~15.6.
    expect(readersPerUpdate(1_000, l)).toBeCloseTo(1_000 / 64, 0);
  });

  it('prints one column per load and one row per role and Redis', () => {
    const text = formatPlans([plan(units, load(10_000), machine, redis)], machine);
    expect(text.split('\n')).toHaveLength(7);
    expect(text).toContain('| shards | BATON_SHARDS ≥ 6 (planned: 64) |');
    expect(text).toContain('| projector | 1 × 8 cores 32 GB (6 processes');
    expect(text).toContain('| Redis | Cluster of 2 masters');
  });
});

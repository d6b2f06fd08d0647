import { parseRecording, replayAgentCommand, type FactBody } from '@baton/acp';
import { evolve, initialTaskState, sessionView } from '@baton/activity';
import { enqueueExecution, type ExecutionQueue } from '@baton/jobs';
import type { AgentProfileInput } from '@baton/config';
import type { EventStore } from '@baton/store';
import { copyFileSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  EXPECTED,
  ROOT,
  body,
  childrenOf,
  factsOf,
  groupAlive,
  readAll,
  recordedPrompts,
  spawnWorker,
  startOwnedQueueStore,
  waitFor,
  writeBusyRecording,
  type OwnedQueueStore,
  type OwnerDouble,
  type WorkerProcess,
} from '@baton/testing';

/**
 * Real worker processes (`node dist/apps/worker/src/main.js`) against a real redis-server,
 * hosting real replay agents. A test double of the shard owner holds the shard leases and writes
 * the execution inboxes (prompts, stops), as the projector does.
 */

// Real processes on a machine that may be busy: each test waits on conditions, not on the clock.
jest.setTimeout(120_000);

const PREFIX = 'wt';
const SHARDS = 4;
const FIXTURES = join(ROOT, 'libs', 'acp', 'fixtures');

let rig: OwnedQueueStore;
let store: EventStore;
let queue: ExecutionQueue;
let owner: OwnerDouble;
let n = 0;

beforeAll(async () => {
  rig = await startOwnedQueueStore(PREFIX, SHARDS);
  ({ store, queue, owner } = rig);
});
afterAll(() => rig.stop());

const env = (extra: Record<string, string> = {}) => ({
  ...rig.env,
  WORKER_EXECUTION_LEASE_MS: '1500',
  BATON_PROFILES: JSON.stringify({ profiles: PROFILES }),
  ...extra,
});

const newRef = () => {
  n++;
  return { taskId: `local/task-${n}`, sessionId: `session-${n}`, executionId: `exec-${n}` };
};
type Ref = ReturnType<typeof newRef>;

/** The profiles these workers run: replays, and commands that misbehave on purpose. */
const PROFILES: Record<string, AgentProfileInput> = {
  // The default `ask` would wait for a person at generic-turn's permission request; these tests
  // are about hosting (test/permissions.spec.ts, end to end, covers permissions).
  replay: { kind: 'replay', permissionPolicy: 'deny' },
  'replay-raw': {
    kind: 'replay',
    permissionPolicy: 'deny',
    capabilities: { rawSdkMessages: true },
  },
  crash: {
    kind: 'command',
    ...replayAgentCommand(join(FIXTURES, 'generic-turn.jsonl'), { pace: 0, crashAfterFrames: 5 }),
  },
  hang: {
    kind: 'command',
    ...replayAgentCommand(join(FIXTURES, 'generic-turn.jsonl'), { hangOnInitialize: true }),
  },
  garbage: {
    kind: 'command',
    command: process.execPath,
    args: ['-e', "process.stdout.write('Hello from a CLI\\n'); setInterval(() => {}, 1000)"],
  },
};

const TENANT = 'local';

/** Starts an execution of a profile on a new task of TENANT, as the gateway would. */
const start = async (profile: string, extra: { recording?: string; speed?: number } = {}) => {
  const ref = newRef();
  await store.tenants.add(TENANT, ref.taskId.slice(TENANT.length + 1));
  await enqueueExecution(queue, { v: 1, ...ref, tenant: TENANT, profile, ...extra });
  return ref;
};

const factTypes = async (ref: Ref) =>
  factsOf(await readAll(store, ref.taskId), ref.executionId).map((f) => f.type);

const ended = (ref: Ref) =>
  waitFor(async () => {
    const facts = factsOf(await readAll(store, ref.taskId), ref.executionId);
    return facts.find((f) => f.type === 'execution.ended');
  }, `execution.ended of ${ref.executionId}`);

/**
 * The frames the worker sent with `method`, once there is one: the raw-frame log is written up
 * to a second late, its last write just after the end (it is drained after the facts).
 */
const sentFrames = (ref: Ref, method: string) =>
  waitFor(async () => {
    const raw = (await store.rawFrames.read(ref.taskId, ref.executionId)).items;
    const sent = raw.filter((f) => f.direction === 'out' && f.line.includes(method));
    return sent.length > 0 && sent;
  }, `${method} in the raw-frame log`);

const leaseHeld = async (ref: Ref) =>
  (await store.executions.leases(store.shardOf(ref.taskId))).some(
    (l) => l.executionId === ref.executionId,
  );

const NOW = '2026-11-10T12:00:00.000Z';
const normalise = (f: FactBody): FactBody =>
  f.type === 'background.started'
    ? { ...f, data: { ...f.data, work: { ...f.data.work, startedAt: NOW } } }
    : f;

describe('one worker process', () => {
  let worker: WorkerProcess;

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-recordings-'));
    for (const f of readdirSync(FIXTURES)) copyFileSync(join(FIXTURES, f), join(dir, f));
    writeBusyRecording(join(dir, 'busy.jsonl'), 600, 100);
    worker = await spawnWorker(
      env({
        WORKER_CONCURRENCY: '1',
        WORKER_COALESCE_MS: '0',
        // Long enough for a replay agent to start on a loaded machine; the hung one still fails.
        WORKER_SETUP_TIMEOUT_MS: '10000',
        WORKER_RECORDINGS_DIR: dir,
      }),
    );
  });
  afterAll(async () => {
    worker.child.kill('SIGTERM');
    await worker.exited;
  });

  it.each([
    'claude-subagent-background-raw',
    'claude-handoff-held-prompt',
    'codex-exec-command',
    'codex-subagent-1x',
    'claude-real-plain-shell',
    'claude-real-subagents-subagent',
    'qwen-real-plain',
    'qwen-real-background',
    'opencode-real-plain',
    'opencode-real-subagent',
  ])('replays %s: the facts land in the task stream in wire order', async (fixture) => {
    const recording = parseRecording(readFileSync(join(FIXTURES, `${fixture}.jsonl`), 'utf8'));
    // A profile that asks for raw task messages and sets no mode: a replay advertises what its
    // recording's client advertised instead, and sets the mode that client set, so recordings
    // negotiate (and attest) as they were recorded and none waits for a setup step.
    const ref = await start('replay-raw', { recording: fixture, speed: 0 });
    const agentFrames = async () =>
      (await store.rawFrames.read(ref.taskId, ref.executionId)).items.filter(
        (f) => f.direction === 'in',
      ).length;
    // The owner hands each prompt over once the agent has said what it said before it.
    for (const p of recordedPrompts(recording)) {
      await waitFor(async () => (await agentFrames()) >= p.after, `${p.after} agent frames`);
      await owner.deliver(ref, p.promptId, p.admissionGeneration);
    }
    const total = recording.filter((f) => f.direction === 'agent->client').length;
    await waitFor(async () => (await agentFrames()) >= total, 'the whole recording played');
    await owner.stopExecution(ref);
    await ended(ref);

    const entries = await readAll(store, ref.taskId);
    const facts = factsOf(entries, ref.executionId);
    const [first, ...all] = facts;
    const last = all.pop();
    // The worker's own report of the ACP session (what parking resumes), once; the rest is the
    // dialect's.
    expect(all.filter((f) => f.type === 'agent.session')).toHaveLength(1);
    const rest = all.filter((f) => f.type !== 'agent.session');
    expect(first).toMatchObject({
      type: 'execution.started',
      generation: 1,
      data: { workerId: worker.instanceId },
    });
    expect(last).toMatchObject({ type: 'execution.ended', data: { reason: 'cancelled' } });
    expect(rest.map(body).map(normalise)).toEqual(EXPECTED[fixture]!.map(normalise));
    // The session shows the latest of each usage field the agent reported.
    const reported = rest.flatMap((f) => (f.type === 'usage.reported' ? [f.data] : []));
    const state = entries.reduce(evolve, initialTaskState(ref.taskId));
    expect(sessionView(state.sessions[ref.sessionId]!).activity.usage).toEqual(
      reported.length > 0 ? Object.assign({}, ...reported) : undefined,
    );
    // One writer per execution start, its sequence growing by one in stream order.
    expect(new Set(facts.map((f) => f.writer.instance)).size).toBe(1);
    expect(facts.map((f) => f.writer.seq)).toEqual(facts.map((_, i) => i + 1));
    // The raw-frame log holds every line in both directions.
    expect(await agentFrames()).toBe(total);
    // Ended, so: lease dropped, inbox removed.
    await waitFor(async () => !(await leaseHeld(ref)), 'lease dropped');
    await waitFor(
      async () => (await store.redis.exists(store.keys.inbox(ref.taskId, ref.executionId))) === 0,
      'inbox removed',
    );
  });

  it('ends each misbehaving agent with a clear reason, then runs the next execution', async () => {
    const crash = await start('crash');
    const hang = await start('hang');
    const garbage = await start('garbage');
    const outside = await start('replay', { recording: '../../../package.json' });
    const healthy = await start('replay', { recording: 'generic-turn', speed: 0 });
    // Prompts may be handed over before the job runs: the worker reads its inbox from the start.
    await owner.deliver(crash, 'p1', 1);
    await owner.deliver(healthy, 'p1', 1);

    expect((await ended(crash)).data).toMatchObject({ reason: 'crashed', exitCode: 70 });
    expect(await factTypes(crash)).toContain('prompt.dispatched');
    expect((await ended(hang)).data).toMatchObject({
      reason: 'failed',
      error: expect.stringMatching(/in time/),
    });
    expect((await ended(garbage)).data).toMatchObject({
      reason: 'failed',
      error: expect.stringMatching(/not JSON-RPC to stdout: "Hello from a CLI"/),
    });
    expect((await ended(outside)).data).toMatchObject({
      reason: 'failed',
      error: expect.stringMatching(/outside the recordings folder/),
    });
    // Each of them still started in the stream, so its end reaches the session.
    for (const ref of [crash, hang, garbage, outside]) {
      expect((await factTypes(ref))[0]).toBe('execution.started');
      expect(await leaseHeld(ref)).toBe(false);
    }

    // The same worker (concurrency 1) then runs a healthy execution through its turn.
    await waitFor(async () => (await factTypes(healthy)).includes('turn.ended'), 'healthy turn');
    await owner.stopExecution(healthy);
    expect((await ended(healthy)).data).toMatchObject({ reason: 'cancelled' });
    const types = await factTypes(healthy);
    expect(types.slice(0, 4)).toEqual([
      'execution.started',
      'capabilities.negotiated',
      'agent.session',
      'prompt.dispatched',
    ]);
    expect(types.filter((t) => t === 'prompt.dispatched')).toHaveLength(1);
  });

  it('stops an execution its owner declared lost (its lease dropped) instead of reviving it', async () => {
    const ref = await start('replay', { recording: 'generic-turn', speed: 0 });
    await waitFor(async () => (await factTypes(ref)).includes('capabilities.negotiated'), 'ready');
    // What the owner does after it appends execution.lost.
    await store.executions.dropLease(ref);
    expect((await ended(ref)).data).toMatchObject({ reason: 'cancelled' });
    expect(await leaseHeld(ref)).toBe(false);
  });

  it('cancels the running turn, and ignores a cancel of a turn that is not running', async () => {
    const ref = await start('replay', { recording: 'busy' });
    await owner.deliver(ref, 'p1', 1);
    await waitFor(async () => (await factTypes(ref)).includes('foreground.output'), 'generating');
    await owner.cancelTurn(ref, 7);
    await owner.cancelTurn(ref, 1);
    const turnEnd = await waitFor(async () => {
      const facts = factsOf(await readAll(store, ref.taskId), ref.executionId);
      return facts.find((f) => f.type === 'turn.ended');
    }, 'turn ended');
    expect(turnEnd.data).toEqual({ admissionGeneration: 1, stopReason: 'cancelled' });
    // A cancel of turn 7, had it been sent, is in the same write as turn 1's or before it.
    expect(await sentFrames(ref, 'session/cancel')).toHaveLength(1);
    await owner.stopExecution(ref);
    await ended(ref);
  });

  it('sends a prompt delivered twice once', async () => {
    const ref = await start('replay', { recording: 'generic-turn', speed: 0 });
    await owner.deliver(ref, 'p1', 1);
    await owner.deliver(ref, 'p1', 1);
    await waitFor(async () => (await factTypes(ref)).includes('turn.ended'), 'turn ended');
    await owner.stopExecution(ref);
    await ended(ref);
    expect(await sentFrames(ref, 'session/prompt')).toHaveLength(1);
  });
});

describe('output coalescing in the worker', () => {
  let worker: WorkerProcess;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-recordings-'));
    worker = await spawnWorker(env({ WORKER_COALESCE_MS: '10000', WORKER_RECORDINGS_DIR: dir }));
  });
  afterAll(async () => {
    worker.child.kill('SIGTERM');
    await worker.exited;
  });

  it('reports a burst of output and usage as few facts, chars summed, the latest usage, flushed before the turn ends', async () => {
    writeBusyRecording(join(dir, 'burst.jsonl'), 200, 1, 10);
    const ref = await start('replay', { recording: 'burst', speed: 0 });
    await owner.deliver(ref, 'p1', 1);
    await waitFor(async () => (await factTypes(ref)).includes('turn.ended'), 'turn ended');
    await owner.stopExecution(ref);
    await ended(ref);
    const facts = factsOf(await readAll(store, ref.taskId), ref.executionId).map(body);
    const outputs = facts.filter((f) => f.type === 'foreground.output');
    const chars = Array.from({ length: 200 }, (_, i) => `chunk ${i} `.length).reduce(
      (a, b) => a + b,
    );
    // The first chunk at once; the rest (within the 10 s period) flushed before turn.ended.
    expect(outputs).toHaveLength(2);
    expect(
      outputs.reduce((s, f) => s + (f.type === 'foreground.output' ? (f.data.chars ?? 0) : 0), 0),
    ).toBe(chars);
    // Usage likewise, on its own clock: the first report at once, the latest before turn.ended.
    expect(facts.filter((f) => f.type === 'usage.reported').map((f) => f.data)).toEqual([
      { used: 10, size: 1_000 },
      { used: 200, size: 1_000 },
    ]);
    expect(facts.map((f) => f.type)).toEqual([
      'execution.started',
      'capabilities.negotiated',
      'agent.session',
      'prompt.dispatched',
      'foreground.output',
      'usage.reported',
      'foreground.output',
      'usage.reported',
      'turn.ended',
      'execution.ended',
    ]);
  });
});

describe('SIGTERM', () => {
  it('ends every running execution with its fact, kills the agent groups, exits 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-recordings-'));
    writeBusyRecording(join(dir, 'busy.jsonl'), 600, 100);
    const worker = await spawnWorker(
      env({ WORKER_CONCURRENCY: '3', WORKER_RECORDINGS_DIR: dir, WORKER_COALESCE_MS: '50' }),
    );
    const refs = [];
    for (let i = 0; i < 3; i++) {
      const ref = await start('replay', { recording: 'busy' });
      await owner.deliver(ref, 'p1', 1);
      refs.push(ref);
    }
    for (const ref of refs) {
      await waitFor(async () => (await factTypes(ref)).includes('foreground.output'), 'busy');
    }
    const groups = childrenOf(worker.pid);
    expect(groups).toHaveLength(3);
    for (const g of groups) expect(groupAlive(g)).toBe(true);

    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);

    for (const ref of refs) {
      const facts = factsOf(await readAll(store, ref.taskId), ref.executionId);
      expect(facts.at(-1)).toMatchObject({
        type: 'execution.ended',
        data: { reason: expect.stringMatching(/^(cancelled|completed)$/) },
      });
      expect(facts.filter((f) => f.type === 'execution.ended')).toHaveLength(1);
      expect(await leaseHeld(ref)).toBe(false);
    }
    for (const g of groups) expect(groupAlive(g)).toBe(false);
  });
});

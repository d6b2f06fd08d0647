import { replayAgentCommand } from '@baton/acp';
import type { AgentProfileInput } from '@baton/config';
import type { ExecutionQueue } from '@baton/jobs';
import type { StreamEntry, TaskView } from '@baton/protocol';
import type { EventStore } from '@baton/store';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GatewayDouble } from '@baton/testing';
import {
  ROOT,
  groupAlive,
  readAll,
  startExecution,
  waitFor,
  startWorkerStack,
  type WorkerStack,
  readUpdatesOf,
} from '@baton/testing';

/**
 * The ways a session could be stranded, with every part real: a projector process owns the tasks
 * and its clocks bound every wait, a worker process hosts agents that misbehave on purpose (they
 * take a prompt and never answer it, and ignore session/cancel), and a gateway double writes
 * commands.
 * What must survive: no session stays running; each prompt's outcome says what happened; the
 * agent's whole process group is gone once the owner stopped its execution.
 */

jest.setTimeout(120_000);

const PREFIX = 'lv';
const SHARDS = 2;
const FIXTURE = join(ROOT, 'libs', 'acp', 'fixtures', 'generic-turn.jsonl');
const pids = mkdtempSync(join(tmpdir(), 'baton-liveness-'));

/** An agent that takes every prompt and never answers it, and ignores cancels. */
const deaf = (name: string): AgentProfileInput => ({
  kind: 'command',
  ...replayAgentCommand(FIXTURE, {
    pace: 0,
    hangOnPrompt: true,
    ignoreCancel: true,
    spawnChildPidFile: join(pids, `${name}.pid`),
  }),
});
const PROFILES: Record<string, AgentProfileInput> = {
  silent: deaf('silent'),
  deaf: deaf('deaf'),
};

let stack: WorkerStack;
let store: EventStore;
let queue: ExecutionQueue;
let gateway: GatewayDouble;

beforeAll(async () => {
  stack = await startWorkerStack({
    prefix: PREFIX,
    shards: SHARDS,
    projectorEnv: {
      PROJECTOR_STALL_MS: '3000',
      PROJECTOR_CANCEL_GRACE_MS: '1000',
      PROJECTOR_QUIET_MS: '1000',
    },
    workerEnv: { BATON_PROFILES: JSON.stringify({ profiles: PROFILES }) },
  });
  ({ store, queue, gateway } = stack);
});
afterAll(() => stack?.stop());

const decisionOf = async (taskId: string, promptId: string) =>
  (await readUpdatesOf(store, taskId))
    .filter((u) => u.type === 'prompt.decided' && u.data.promptId === promptId)
    .map((u) => (u.type === 'prompt.decided' ? u.data.decision : null))
    .at(-1);

const sessionOf = (view: TaskView | null, sessionId: string) =>
  view?.sessions.find((s) => s.sessionId === sessionId);

const ofType =
  (type: StreamEntry['type']) =>
  (e: StreamEntry): boolean =>
    e.type === type;

/** The decision of a prompt, once it is `outcome`. */
const decided = async (taskId: string, promptId: string, outcome: string, what: string) =>
  (await waitFor(async () => {
    const d = await decisionOf(taskId, promptId);
    return d?.outcome === outcome && d;
  }, what))!;

/** The task's stream, once its execution ended. */
const untilEnded = (taskId: string) =>
  waitFor(async () => {
    const all = await readAll(store, taskId);
    return all.some(ofType('execution.ended')) ? all : false;
  }, 'the execution ended');

/** The agent's process group (the adapter and the child it started), by the child's pid. */
const agentGroup = async (name: string): Promise<number> => {
  const pid = await waitFor(() => {
    try {
      return Number(readFileSync(join(pids, `${name}.pid`), 'utf8')) || false;
    } catch {
      return false;
    }
  }, `${name} agent started`);
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
};

it('a turn that never starts fails visibly, and its execution is stopped (the default policy)', async () => {
  const ref = { taskId: 'local/never-starts', sessionId: 's', executionId: 'x1' };
  await startExecution(store, queue, ref, { profile: 'silent' });
  const group = await agentGroup('silent');
  await gateway.submit(ref, 'p1');
  await gateway.submit(ref, 'p2');

  expect(await decided(ref.taskId, 'p1', 'failed', 'p1 failed')).toMatchObject({
    outcome: 'failed',
    reason: 'abandoned',
  });
  const entries = await untilEnded(ref.taskId);
  expect(entries.find(ofType('turn.abandoned'))).toMatchObject({
    data: { promptId: 'p1', then: 'stop_execution' },
  });
  expect(entries.find(ofType('execution.ended'))).toMatchObject({ data: { reason: 'cancelled' } });
  await waitFor(() => !groupAlive(group), 'the agent process group is gone');
  // p2 waits, and both the queue and the session say why.
  const view = await waitFor(async () => {
    const v = await store.views.read(ref.taskId);
    return sessionOf(v, 's')?.activity.attention?.reason === 'turn_abandoned' ? v : false;
  }, 'the session shows the failure');
  const s = sessionOf(view, 's')!;
  expect(s.activity.state).not.toBe('running');
  expect(s.queue.entries.map((e) => e.promptId)).toEqual(['p2']);
  expect(s.queue.blockedBy).toBe('no_execution');
});

it('a cancel the agent never answers ends the turn after the grace, and the worker kills the agent', async () => {
  const ref = { taskId: 'local/deaf-to-cancel', sessionId: 's', executionId: 'x1' };
  await startExecution(store, queue, ref, { profile: 'deaf' });
  const group = await agentGroup('deaf');
  await gateway.submit(ref, 'p1');
  await waitFor(
    async () => (await readAll(store, ref.taskId)).some(ofType('prompt.dispatched')),
    'p1 reached the agent',
  );
  await gateway.command(ref, 'session.cancel', {});

  expect(await decided(ref.taskId, 'p1', 'cancelled', 'p1 cancelled by the timeout')).toMatchObject(
    {
      outcome: 'cancelled',
      reason: 'cancel_timeout',
    },
  );
  const entries = await untilEnded(ref.taskId);
  const order = ['turn.cancel_requested', 'turn.cancel_timed_out', 'execution.ended'].map((t) =>
    entries.findIndex(ofType(t as StreamEntry['type'])),
  );
  expect(order.every((i, k) => i >= 0 && (k === 0 || i > order[k - 1]!))).toBe(true);
  // The cancel grace, not the stall threshold, ended it: nothing was abandoned.
  expect(entries.some(ofType('turn.abandoned'))).toBe(false);
  await waitFor(() => !groupAlive(group), 'the agent process group is gone');
  const view = await waitFor(async () => {
    const v = await store.views.read(ref.taskId);
    return sessionOf(v, 's')?.activity.attention?.reason === 'cancel_timeout' ? v : false;
  }, 'the session shows the cancel timeout');
  expect(sessionOf(view, 's')!.activity).toMatchObject({
    state: 'cancelled',
    runningGeneration: null,
    attention: { kind: 'failed', reason: 'cancel_timeout', promptId: 'p1' },
  });
});

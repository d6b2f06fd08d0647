import { parseRecording } from '@baton/acp';
import type { AgentProfileInput } from '@baton/config';
import { enqueueExecution, type ExecutionQueue } from '@baton/jobs';
import type { EventStore } from '@baton/store';
import {
  foldTranscript,
  transcriptOf,
  type PermissionItem,
  type RecordedFrame,
  type TranscriptItem,
} from '@baton/transcript';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ROOT,
  factsOf,
  readAll,
  spawnWorker,
  startOwnedQueueStore,
  waitFor,
  type OwnedQueueStore,
  type OwnerDouble,
  type WorkerProcess,
} from '@baton/testing';

/**
 * A real worker process replays real recordings; the transcript it writes to Redis, read back
 * and folded, is what the reducer makes of the recording itself.
 */

jest.setTimeout(120_000);

const PREFIX = 'tr';
const SHARDS = 4;
const FIXTURES = join(ROOT, 'libs', 'acp', 'fixtures');
const SECRET = 'sekrit-env-value-7f3a';

const PROFILES: Record<string, AgentProfileInput> = {
  // The real recordings set the session mode; their env must never reach the transcript.
  'replay-mode': {
    kind: 'replay',
    mode: 'default',
    permissionPolicy: 'deny',
    env: { SOME_TOKEN: SECRET },
  },
  'replay-allow': { kind: 'replay', permissionPolicy: 'allow-once' },
};

let rig: OwnedQueueStore;
let store: EventStore;
let queue: ExecutionQueue;
let owner: OwnerDouble;
let worker: WorkerProcess;
let n = 0;

beforeAll(async () => {
  rig = await startOwnedQueueStore(PREFIX, SHARDS);
  ({ store, queue, owner } = rig);
  worker = await spawnWorker({
    ...rig.env,
    BATON_PROFILES: JSON.stringify({ profiles: PROFILES }),
    WORKER_CONCURRENCY: '1',
    WORKER_SETUP_TIMEOUT_MS: '10000',
  });
});
afterAll(async () => {
  worker.child.kill('SIGTERM');
  await worker.exited;
  await rig.stop();
});

/** Plays a bundled recording on the worker, handing over its prompts as recorded; its ref. */
async function play(fixture: string, profile: string) {
  n++;
  const ref = { taskId: `local/tr-${n}`, sessionId: `session-${n}`, executionId: `exec-${n}` };
  await store.tenants.add('local', ref.taskId.slice('local/'.length));
  await enqueueExecution(queue, {
    v: 1,
    ...ref,
    tenant: 'local',
    profile,
    recording: fixture,
    speed: 0,
  });
  const frames = parseRecording(
    readFileSync(join(FIXTURES, `${fixture}.jsonl`), 'utf8'),
  ) as RecordedFrame[];
  const agentFrames = async () =>
    (await store.rawFrames.read(ref.taskId, ref.executionId)).items.filter(
      (f) => f.direction === 'in',
    ).length;
  let seen = 0;
  for (const f of frames) {
    if (f.direction === 'agent->client') seen++;
    const m = f.message as {
      method?: string;
      params?: {
        prompt?: { text?: string }[];
        _meta?: { baton?: { promptId: string; admissionGeneration: number } };
      };
    };
    const b = m.params?._meta?.baton;
    if (f.direction !== 'client->agent' || m.method !== 'session/prompt' || !b) continue;
    const after = seen;
    await waitFor(async () => (await agentFrames()) >= after, `${after} agent frames`);
    await owner.deliver(ref, b.promptId, b.admissionGeneration, m.params!.prompt![0]!.text!);
  }
  const total = frames.filter((f) => f.direction === 'agent->client').length;
  await waitFor(async () => (await agentFrames()) >= total, 'the whole recording played');
  await owner.stopExecution(ref);
  await waitFor(
    async () =>
      factsOf(await readAll(store, ref.taskId), ref.executionId).some(
        (f) => f.type === 'execution.ended',
      ),
    'execution.ended',
  );
  // The transcript is drained before the lease goes.
  await waitFor(
    async () =>
      !(await store.executions.leases(store.shardOf(ref.taskId))).some(
        (l) => l.executionId === ref.executionId,
      ),
    'lease dropped',
  );
  return { ref, frames };
}

async function storedItems(taskId: string, sessionId: string): Promise<TranscriptItem[]> {
  const events = [];
  let after = '0-0';
  for (;;) {
    const page = await store.transcripts.read(taskId, { sessionId, after, limit: 7 });
    events.push(...page.items.map((e) => e.event));
    if (page.lastId === after) return foldTranscript(events);
    after = page.lastId;
  }
}

it('writes the transcript of a real Claude recording: what the recording holds', async () => {
  const { ref, frames } = await play('claude-real-terminal-shell', 'replay-mode');
  const items = await storedItems(ref.taskId, ref.sessionId);
  expect(items).toEqual(foldTranscript(transcriptOf(frames, undefined, 'g1.').events));
  // The parts a reader shows, spelled out.
  const texts = items.flatMap((i) => (i.type === 'message' ? [i.text] : []));
  expect(texts).toEqual(['Starting it.', 'It runs in the background.', 'Noted.']);
  expect(items.find((i) => i.type === 'tool')).toMatchObject({
    toolCallId: 'toolu_shell',
    status: 'completed',
    output: { text: expect.stringMatching(/^Command running in background with ID: bgyp2uzhc/) },
  });
  expect(items.find((i) => i.type === 'turn_end')).toMatchObject({
    turn: 'p-RUN-SHELL',
    tokens: { input: 200, output: 20, total: 220 },
  });
  // Coalesced: fewer stream entries than the reducer's events.
  const stored = await store.transcripts.read(ref.taskId, { limit: 1_000 });
  expect(stored.items.length).toBeLessThan(transcriptOf(frames).events.length);
  // The profile's env never reaches the transcript.
  const raw = await store.redis.xrange(store.keys.transcript(ref.taskId), '-', '+');
  expect(JSON.stringify(raw)).not.toContain(SECRET);
  // A turn reads back whole.
  const turn = await store.transcripts.readTurn(ref.taskId, ref.sessionId, 'p-RUN-SHELL');
  expect(turn[0]?.event).toMatchObject({ type: 'prompt', promptId: 'p-RUN-SHELL' });
  expect(turn.every((e) => e.event.turn === 'p-RUN-SHELL')).toBe(true);
});

it('records a permission request and how the worker settled it', async () => {
  const { ref, frames } = await play('claude-shell-background-plain', 'replay-allow');
  const items = await storedItems(ref.taskId, ref.sessionId);
  const expected = foldTranscript(transcriptOf(frames, undefined, 'g1.').events);
  const settledAt = (xs: TranscriptItem[]) =>
    xs.map((i) =>
      i.type === 'permission' && i.settled
        ? { ...i, settled: { ...i.settled, at: '', by: '' } }
        : i,
    );
  expect(settledAt(items)).toEqual(settledAt(expected));
  const p = items.find((i): i is PermissionItem => i.type === 'permission')!;
  expect(p).toMatchObject({
    toolCallId: 'toolu_B',
    title: 'sleep 100',
    options: [{ optionId: 'allow' }, { optionId: 'reject' }],
    settled: { outcome: 'selected', optionId: 'allow', optionKind: 'allow_once', by: 'policy' },
  });
  expect(Number.isNaN(Date.parse(p.settled!.at))).toBe(false);
});

it('writes the transcript of a real Codex recording: answer, command, output, usage', async () => {
  const { ref, frames } = await play('codex-real-terminal-exec', 'replay-mode');
  const items = await storedItems(ref.taskId, ref.sessionId);
  expect(items).toEqual(foldTranscript(transcriptOf(frames, undefined, 'g1.').events));
  expect(items.flatMap((i) => (i.type === 'message' ? [i.text] : []))).toEqual([
    'It printed hello.',
  ]);
  expect(items.find((i) => i.type === 'tool')).toMatchObject({
    input: { command: { text: 'until [ -f release-exec ]; do sleep 0.1; done; echo hello' } },
    output: { text: 'hello\n' },
    exit: { code: 0 },
  });
  expect(items.find((i) => i.type === 'usage')).toMatchObject({ used: 110, size: 258_400 });
});

/**
 * Redis bytes per active session-day, by family, from the bundled recordings at their own pace.
 *
 * One session's task stream is played from the recordings (bench/replay-facts.ts) into its own
 * redis-server, with a checkpoint every hour of facts at the recordings' rate and the history span
 * before each, written through the store as the owner writes them; MEMORY USAGE of each key gives
 * bytes per fact (stream, spans) and per checkpoint. The demo recordings' frames go through the
 * worker's transcript reducer (coalesced per 75 ms of their clock) into the transcript stream and,
 * as raw lines gathered a second at a time as the worker writes them, into the raw-frame log:
 * bytes per recorded second. The transcript is then compacted by the store as the owner
 * compacts it behind the hot window (each recording one
 * compacted range, the recordings played 40 times over: the owner's ranges are a checkpoint
 * interval, a quarter of the hot window (7.5 min by default), and zlib does better on them, so this is an upper bound), MEMORY USAGE of the
 * compacted front per recorded second. A
 * day is then what each family keeps of 86,400 s at that pace: the stream what the hot window
 * (and the checkpoint interval) keeps, spans the whole day, the transcript its hot window (and a
 * checkpoint interval) as deltas and the rest of the day compacted, the raw-frame log its hot
 * window.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUNDLED_RECORDINGS_DIR, parseRecording } from '@baton/acp';
import { fold, initialTaskState, type TaskState } from '@baton/activity';
import type { StreamEntry } from '@baton/protocol';
import { startRedis } from '@baton/redis-server';
import { EventStore, type Lease, type RawFrame, type TranscriptWrite } from '@baton/store';
import {
  coalesceEvents,
  initialTranscriptState,
  reduceTranscript,
  shapeOfFrames,
  type RecordedFrame,
  type TranscriptEvent,
} from '@baton/transcript';
import { writeCheckpointAndSpan } from './checkpoints';
import { recordings, TaskPlayer } from './replay-facts';

const DAY_S = 86_400;
const FACTS = 40_000;
const TRANSCRIPT_WINDOW_MS = 75;
/** The worker's raw frames: a write (one compressed entry) per second from its first frame. */
const RAW_FRAMES_LINGER_MS = 1_000;
const RAW_BATCH = 50;
/** Times the recordings' transcript is compacted over (two ranges each: ~47 min of them). */
const COMPACTED_ROUNDS = 40;

/** What a deployment keeps: the history's retention, the raw entries' hot window. */
export interface Retention {
  /** How long the history (checkpoints, spans) and the transcript are kept. */
  retentionMs: number;
  /** How long raw task-stream entries are kept (0, or ≥ the retention: for the retention). */
  hotWindowMs: number;
  /** How long raw ACP frames are kept (Infinity: until their length bound, never by age). */
  rawFramesMs: number;
  snapshotMs: number;
}

/** The defaults before the hot window: every raw entry for the retention, raw frames for good. */
export const BEFORE: Retention = {
  retentionMs: 86_400_000,
  hotWindowMs: 0,
  rawFramesMs: Infinity,
  snapshotMs: 30_000,
};
/** The defaults now (PROJECTOR_HOT_WINDOW_MS, the store's rawFramesRetentionMs). */
export const NOW: Retention = {
  retentionMs: 86_400_000,
  hotWindowMs: 1_800_000,
  rawFramesMs: 1_800_000,
  snapshotMs: 30_000,
};

/** The checkpoint interval the owner keeps (libs/projector task-owner). */
export function checkpointEveryMs(r: Retention): number {
  const hot = r.hotWindowMs > 0 && r.hotWindowMs < r.retentionMs ? r.hotWindowMs / 4 : Infinity;
  return Math.max(r.snapshotMs, Math.floor(Math.min(r.retentionMs / 24, hot)));
}

export interface SessionDayUnits {
  factsPerSecond: number;
  streamBytesPerFact: number;
  spanBytesPerFact: number;
  checkpointBytes: number;
  snapshotBytes: number;
  /** The transcript as written: a delta per entry. */
  transcriptBytesPerSecond: number;
  /** The transcript compacted (whole items, zlib), as the store keeps it behind the hot window. */
  transcriptCompactedBytesPerSecond: number;
  rawFrameBytesPerSecond: number;
}

/** Bytes per session-day by family, under a retention, from the measured units. */
export function sessionDay(u: SessionDayUnits, r: Retention): Record<string, number> {
  const every = checkpointEveryMs(r) / 1e3;
  const dayS = Math.min(DAY_S, r.retentionMs / 1e3);
  const hot = r.hotWindowMs > 0 && r.hotWindowMs < r.retentionMs;
  // Raw entries: the hot window, up to a checkpoint interval more (the cut is at a checkpoint),
  // and what the snapshot does not cover yet; without a hot window, the retention (a day).
  const streamS = hot ? r.hotWindowMs / 1e3 + every + r.snapshotMs / 1e3 : dayS;
  // The transcript: deltas for the hot window and up to a checkpoint interval more (the owner
  // compacts at its checkpoints), the rest of the retention compacted; without one, deltas.
  const deltasS = hot ? Math.min(dayS, r.hotWindowMs / 1e3 + every) : dayS;
  return {
    'task stream (raw entries)': u.streamBytesPerFact * u.factsPerSecond * Math.min(DAY_S, streamS),
    'history spans': u.spanBytesPerFact * u.factsPerSecond * dayS,
    checkpoints: u.checkpointBytes * (Math.ceil(dayS / every) + 1),
    snapshot: u.snapshotBytes,
    'transcript (deltas)': u.transcriptBytesPerSecond * deltasS,
    'transcript (compacted)': u.transcriptCompactedBytesPerSecond * (dayS - deltasS),
    'raw-frame log': u.rawFrameBytesPerSecond * Math.min(DAY_S, r.rawFramesMs / 1e3),
  };
}

export const total = (families: Record<string, number>): number =>
  Object.values(families).reduce((a, b) => a + b, 0);

function demoFrames() {
  return readdirSync(BUNDLED_RECORDINGS_DIR)
    .filter((f) => f.startsWith('demo-') && f.endsWith('.jsonl'))
    .sort()
    .map((f) => parseRecording(readFileSync(join(BUNDLED_RECORDINGS_DIR, f), 'utf8')));
}

/** Facts per second of the demo recordings on their own clocks (as the capacity model's load). */
function demoRate(): number {
  const facts = new Map(recordings().map((r) => [r.name, r.bodies.length + 2]));
  let n = 0;
  let ms = 0;
  for (const f of readdirSync(BUNDLED_RECORDINGS_DIR)) {
    if (!f.startsWith('demo-') || !f.endsWith('.jsonl')) continue;
    const frames = parseRecording(readFileSync(join(BUNDLED_RECORDINGS_DIR, f), 'utf8'));
    n += facts.get(f.replace(/\.jsonl$/, '')) ?? 0;
    ms += Date.parse(frames.at(-1)!.at) - Date.parse(frames[0]!.at);
  }
  return (n * 1e3) / ms;
}

/**
 * What the worker writes of a recording's frames to the transcript: its reducer's events, a
 * window per 75 ms of the recording's clock, coalesced (libs/worker execution).
 */
function transcriptWrites(
  frames: readonly RecordedFrame[],
  executionId: string,
): TranscriptWrite[][] {
  const windows: TranscriptWrite[][] = [];
  let ts = initialTranscriptState(shapeOfFrames(frames));
  let window: TranscriptEvent[] = [];
  let windowEnd = -1;
  const flush = () => {
    if (window.length > 0)
      windows.push(
        coalesceEvents(window).map((event) => ({ sessionId: 's0', executionId, event })),
      );
    window = [];
  };
  for (const f of frames) {
    const at = Date.parse(f.at);
    if (windowEnd >= 0 && at >= windowEnd) {
      flush();
      windowEnd = -1;
    }
    const out = reduceTranscript(ts, { kind: 'frame', ...f });
    ts = out.state;
    if (out.out.length > 0) {
      window.push(...out.out);
      if (windowEnd < 0) windowEnd = at + TRANSCRIPT_WINDOW_MS;
    }
  }
  flush();
  return windows;
}

/**
 * What the worker writes of a recording's frames to the raw-frame log: a write per linger (a
 * second from the first frame it holds, on the recording's clock), as its pump sends them.
 */
function rawFrameWrites(frames: readonly RecordedFrame[]): RawFrame[][] {
  const writes: RawFrame[][] = [];
  let write: RawFrame[] = [];
  let writeAt = -1;
  for (const f of frames) {
    const at = Date.parse(f.at);
    if (writeAt >= 0 && at > writeAt) {
      writes.push(write);
      write = [];
      writeAt = -1;
    }
    if (writeAt < 0) writeAt = at + RAW_FRAMES_LINGER_MS;
    write.push({
      direction: f.direction === 'agent->client' ? 'in' : 'out',
      line: JSON.stringify(f.message),
    });
  }
  if (write.length > 0) writes.push(write);
  return writes;
}

/** The units, measured with the checkpoint interval of `r`. */
export async function measureSessionDay(r: Retention = NOW): Promise<SessionDayUnits> {
  const server = await startRedis();
  const store = EventStore.connect({ url: server.url }, { shards: 1, prefix: 'sd' });
  const memory = async (key: string) =>
    Number(await store.redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
  try {
    const rate = demoRate();
    const factsPerCheckpoint = Math.max(1, Math.round((rate * checkpointEveryMs(r)) / 1e3));
    const { lease } = (await store.leases.acquire(0, 'bench', 600_000)) as { lease: Lease };

    // The task stream, its checkpoints and spans.
    const player = new TaskPlayer('sd-task', 1, 'bench-session-day', 7);
    const taskId = player.taskId;
    let state: TaskState = initialTaskState(taskId);
    let checkpoints = 0;
    let sinceCheckpoint = factsPerCheckpoint;
    for (let i = 0; i < FACTS; i += RAW_BATCH) {
      const batch: StreamEntry[] = [];
      for (let j = 0; j < RAW_BATCH; j++) batch.push(player.next().entry);
      const ids = await store.append(taskId, batch);
      for (const e of batch) state = fold(state, e).state;
      sinceCheckpoint += batch.length;
      if (sinceCheckpoint >= factsPerCheckpoint) {
        sinceCheckpoint = 0;
        // Every write here is a checkpoint (interval 1 ms): the bench sets the hour in facts.
        const written = await writeCheckpointAndSpan(store, lease, taskId, ids.at(-1)!, state);
        checkpoints++;
        if (written && !written.kept) throw new Error('bench: span not kept');
      }
    }
    const k = store.keys;
    const streamBytesPerFact = (await memory(k.taskStream(taskId))) / FACTS;
    // The spans cover the facts up to the last checkpoint.
    const spanned = (checkpoints - 1) * factsPerCheckpoint;
    const spanBytesPerFact = (await memory(k.historySpans(taskId))) / spanned;
    const checkpointBytes = (await memory(k.checkpoints(taskId))) / checkpoints;
    const snapshotBytes = await memory(k.snapshot(taskId));

    // The transcript and the raw-frame log, from the demo recordings' frames.
    let recordedMs = 0;
    let rawKeys: string[] = [];
    for (const [r, frames] of demoFrames().entries()) {
      const executionId = `sd-x${r}`;
      for (const window of transcriptWrites(frames, executionId))
        await store.transcripts.append(taskId, window);
      for (const write of rawFrameWrites(frames))
        await store.rawFrames.append(taskId, executionId, write);
      rawKeys.push(k.rawFrames(taskId, executionId));
      recordedMs += Date.parse(frames.at(-1)!.at) - Date.parse(frames[0]!.at);
    }
    const transcriptBytesPerSecond = (await memory(k.transcript(taskId))) / (recordedMs / 1e3);

    // The same transcript compacted as the owner compacts it, a recording a range, the
    // recordings played COMPACTED_ROUNDS times (a compacted front of many ranges, as a day's):
    // written again to a task of its own, compacted after each recording.
    const compactedTask = `${taskId}-compacted`;
    for (let round = 0; round < COMPACTED_ROUNDS; round++)
      for (const [r, frames] of demoFrames().entries()) {
        const writes = transcriptWrites(frames, `sd-c${round}-${r}`);
        let last: string | null = null;
        for (const window of writes) last = await store.transcripts.append(compactedTask, window);
        if (last === null) continue;
        const before = Number(last.split('-')[0]) + 1;
        const compacted = await store.transcripts.compact(compactedTask, before);
        if (compacted === 0) throw new Error('bench: transcript not compacted');
      }
    if ((await store.redis.xlen(k.transcript(compactedTask))) !== 0)
      throw new Error('bench: transcript left uncompacted');
    const transcriptCompactedBytesPerSecond =
      (await memory(k.transcriptCompacted(compactedTask))) /
      ((COMPACTED_ROUNDS * recordedMs) / 1e3);
    let rawBytes = 0;
    for (const key of rawKeys) rawBytes += await memory(key);
    const rawFrameBytesPerSecond = rawBytes / (recordedMs / 1e3);
    rawKeys = [];

    return {
      factsPerSecond: rate,
      streamBytesPerFact,
      spanBytesPerFact,
      checkpointBytes,
      snapshotBytes,
      transcriptBytesPerSecond,
      transcriptCompactedBytesPerSecond,
      rawFrameBytesPerSecond,
    };
  } finally {
    await store.close();
    await server.stop();
  }
}

if (require.main === module) {
  void measureSessionDay().then((u) => {
    const mb = (b: number) => `${(b / 2 ** 20).toFixed(2)} MB`;
    console.log(u);
    for (const [name, r] of [
      ['before', BEFORE],
      ['now', NOW],
    ] as const) {
      const day = sessionDay(u, r);
      console.log(name, mb(total(day)));
      for (const [k, v] of Object.entries(day)) console.log(`  ${k}: ${mb(v)}`);
    }
  });
}

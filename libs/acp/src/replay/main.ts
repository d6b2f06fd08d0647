/**
 * The replay agent as a stdio process:
 *   node dist/libs/acp/src/replay/main.js RECORDING.jsonl [--pace F] [--crash-after N]
 *     [--hang-on-initialize] [--hang-on-prompt] [--ignore-cancel] [--spawn-child PIDFILE]
 * `--spawn-child` starts a long-lived child in the agent's process group and writes its pid, as
 * real adapters do with their CLI, so hosts can prove they tear the whole group down.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { parseRecording } from '../recording';
import { tappedNdJsonStream } from '../tap';
import { ReplayAgent, type ReplayOptions } from './player';

const args = process.argv.slice(2);
const flag = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i === -1 ? undefined : args[i + 1];
};
const recordingPath = args[0];
if (recordingPath === undefined) {
  process.stderr.write('usage: replay RECORDING.jsonl [--pace F] [--crash-after N]\n');
  process.exit(2);
}

const childPidFile = flag('--spawn-child');
if (childPidFile !== undefined) {
  const child = spawn('sleep', ['3600'], { stdio: 'ignore' });
  writeFileSync(childPidFile, String(child.pid));
}

/** The most bytes of frames held back to be written together. */
const BURST_BYTES = 16 * 1024;
let burst: Uint8Array[] = [];
let burstBytes = 0;
let flushScheduled = false;
let failed: ((err: unknown) => void) | undefined;

/** Writes the frames held back, at once; `then` once stdout has taken all of it. */
function flush(then?: () => void): void {
  if (burst.length > 0) {
    const bytes = Buffer.concat(burst, burstBytes);
    burst = [];
    burstBytes = 0;
    process.stdout.write(bytes);
  }
  if (then === undefined) return;
  if (process.stdout.writableLength === 0) then();
  else void drained().then(then);
}

/** Settles once stdout has written what it queued (a pipe's writes are asynchronous), or failed. */
const drained = (): Promise<void> =>
  new Promise((resolve) => {
    const done = () => {
      process.stdout.off('drain', done).off('error', done).off('close', done);
      resolve();
    };
    process.stdout.on('drain', done).on('error', done).on('close', done);
  });

/**
 * stdout for the frames, written a burst at a time: what the player sends before it next yields
 * to the event loop goes out in one write, at most BURST_BYTES of it. At full speed a write per
 * frame (a syscall through the web stream adapter, and a wake-up of the host reading the pipe)
 * was the largest part of the replay's CPU in a turn. Paced frames still go out one by one: the
 * player yields between them. A host that does not read holds the player, as before: a write
 * waits while stdout's queue is full.
 */
const toHost = new WritableStream<Uint8Array>({
  start(controller) {
    // A host gone (EPIPE) fails the SDK's sends, as it did when stdout was the stream itself.
    failed = (err) => controller.error(err);
  },
  write(chunk) {
    burst.push(chunk);
    burstBytes += chunk.length;
    if (burstBytes >= BURST_BYTES) flush();
    else if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(() => {
        flushScheduled = false;
        flush();
      });
    }
    return process.stdout.writableNeedDrain ? drained() : undefined;
  },
  close: () => new Promise<void>((resolve) => flush(resolve)),
});
process.stdout.on('error', (err) => failed?.(err));

const options: ReplayOptions = {
  pace: Number(flag('--pace') ?? '1'),
  hangOnInitialize: args.includes('--hang-on-initialize'),
  hangOnPrompt: args.includes('--hang-on-prompt'),
  ignoreCancel: args.includes('--ignore-cancel'),
  // What was played before the crash reaches the host first.
  onCrash: () => flush(() => process.exit(70)),
};
const crash = flag('--crash-after');
if (crash !== undefined) options.crashAfterFrames = Number(crash);

const replay = new ReplayAgent(parseRecording(readFileSync(recordingPath, 'utf8')), options);
const stream = tappedNdJsonStream(
  toHost,
  Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
  (direction, line) => {
    if (direction === 'agent->client') replay.sawOutgoing(line);
  },
  'agent->client',
);
const connection = replay.connect(stream);
void connection.closed.then(() => flush(() => process.exit(0)));

/**
 * The replay agent as a stdio process:
 *   node dist/libs/acp/src/replay/main.js RECORDING.jsonl [--pace F] [--crash-after N]
 *     [--hang-on-initialize] [--hang-on-prompt] [--ignore-cancel] [--spawn-child PIDFILE]
 * `--spawn-child` starts a long-lived child in the agent's process group and writes its pid, as
 * real adapters do with their CLI, so hosts can prove they tear the whole group down.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { Readable, Writable } from 'node:stream';
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

const options: ReplayOptions = {
  pace: Number(flag('--pace') ?? '1'),
  hangOnInitialize: args.includes('--hang-on-initialize'),
  hangOnPrompt: args.includes('--hang-on-prompt'),
  ignoreCancel: args.includes('--ignore-cancel'),
  onCrash: () => process.exit(70),
};
const crash = flag('--crash-after');
if (crash !== undefined) options.crashAfterFrames = Number(crash);

const replay = new ReplayAgent(parseRecording(readFileSync(recordingPath, 'utf8')), options);
const stream = tappedNdJsonStream(
  Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
  Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
  (direction, line) => {
    if (direction === 'agent->client') replay.sawOutgoing(line);
  },
  'agent->client',
);
const connection = replay.connect(stream);
void connection.closed.then(() => process.exit(0));

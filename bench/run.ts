// One entry point for every benchmark of the project: `npm run bench`.
// Runs each suite in turn, prints a table and rewrites BENCHMARKS.md (results, machine, command, date).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { formatResults, type BenchResult } from './lib';
import { runFoldBench } from './fold.bench';
import { runStoreBench } from './store.bench';
import { runWorkerBench } from './worker.bench';
import { runProjectorBench } from './projector.bench';
import { runGatewayBench } from './gateway.bench';

const NOTES_MARKER = '<!-- notes below are kept by bench/run.ts -->';

interface Suite {
  /** What `bench/run.ts <key>` selects it by (its title selects it too). */
  key: string;
  title: string;
  note: string;
  run: () => Promise<BenchResult[]>;
}

const SUITES: Suite[] = [
  {
    key: 'fold',
    title: 'Domain core (libs/activity)',
    note:
      'Replays a recorded stream (executions, prompts with their decisions, coalesced output, tools, subagents) through `fold` = `evolve` + sequenced updates. ' +
      'Baseline: `JSON.parse` of the same entries, the cost a projector pays anyway to read them.',
    run: runFoldBench,
  },
  {
    key: 'store',
    title: 'Event store (libs/store)',
    note: 'Against its own redis-server on a free port; baselines are raw pipelined XADD and raw XRANGE + JSON.parse of the same payloads, in the same run.',
    run: runStoreBench,
  },
  {
    key: 'worker',
    title: 'Worker (apps/worker)',
    note:
      'A real worker (startWorker, in-process) hosting real replay agent processes at speed 0 against its own redis-server; each recording is one turn of 20,000 tool frames over 100 tool calls (one fact per frame). ' +
      'Rate measured on the stream (between the ids of `capabilities.negotiated` and `turn.ended`). Baseline: raw pipelined XADD of exactly those facts, same run. Agents, worker and Redis share the 2 cores.',
    run: runWorkerBench,
  },
  {
    key: 'projector',
    title: 'Projector (apps/projector)',
    note:
      'In-process projector instances (startProjector) against their own redis-server. A takeover is timed from start to `ready()` (lease, snapshot read, XRANGE pages with zod, fold, views; updates were published by a first owner). ' +
      'Baseline: raw XREAD + JSON.parse of the same streams, in the same run, interleaved. Streams are recorded like the fold benchmark; the one-task stream has 10 sessions of ~10,000 entries each.',
    run: runProjectorBench,
  },
  {
    key: 'gateway',
    title: 'Gateway (apps/gateway)',
    note:
      'In-process gateway (startGateway) against its own redis-server; WebSocket clients in a child process. ' +
      'Admission: prompts at 100/s round-robin over 1,000 sessions that each have a ready execution, a real projector (startProjector) in the gateway’s process deciding; round trip = prompt sent → reply with its decision, first 100 excluded. ' +
      'Fan-out: the test owns the shard and publishes 200 updates per round (batches of 50) that the gateway tails from Redis and sends to 1,000 subscribers of one task; baseline: a raw `ws` server broadcasting the very same frames to 1,000 clients (plain `send` per frame, and corked 50 frames per write like the gateway’s batches), rounds interleaved, median of 3.',
    run: runGatewayBench,
  },
];

/** The `## title` sections of a BENCHMARKS.md (above the notes), by title. */
function sectionsOf(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const parts = text.split(/^(?=## )/m).filter((p) => p.startsWith('## '));
  for (const part of parts)
    out.set(part.slice(3, part.indexOf('\n')).trim(), part.trimEnd() + '\n');
  return out;
}

async function main(): Promise<void> {
  const only = process.argv.slice(2);
  const date = new Date().toISOString().slice(0, 10);
  // Written analysis (what bounds an unmet goal, the next step) lives below the marker and survives reruns.
  const file = join(__dirname, '..', 'BENCHMARKS.md');
  const previous = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const at = previous.indexOf(NOTES_MARKER);
  const notes = at === -1 ? `${NOTES_MARKER}\n` : previous.slice(at);
  // A partial run (`bench/run.ts fold`) rewrites its own sections and keeps the others as they were.
  const kept = sectionsOf(at === -1 ? previous : previous.slice(0, at));
  const sections: string[] = [];
  const selects = (o: string, suite: Suite) =>
    o.toLowerCase() === suite.key || suite.title.toLowerCase().includes(o.toLowerCase());
  const unknown = only.filter((o) => !SUITES.some((suite) => selects(o, suite)));
  if (unknown.length > 0) {
    throw new Error(
      `no suite matches ${unknown.join(', ')}; suites: ${SUITES.map((x) => x.key).join(', ')}`,
    );
  }
  for (const suite of SUITES) {
    if (only.length > 0 && !only.some((o) => selects(o, suite))) {
      const old = kept.get(suite.title);
      if (old) sections.push(old);
      continue;
    }
    console.log(`\n## ${suite.title}`);
    const results = await suite.run();
    const table = formatResults(results);
    console.log(table);
    sections.push(`## ${suite.title}\n\n${suite.note} Measured ${date}.\n\n${table}\n`);
  }
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${process.platform}`;
  const header = [
    '# Benchmarks',
    '',
    `Command: \`npm run bench\` (= \`node --expose-gc --import tsx bench/run.ts\`; \`bench/run.ts fold projector\` runs only those suites, by key or by a word of their title, and keeps the other sections as they were). Last run: ${date}${only.length > 0 ? ` (${only.join(', ')})` : ''}. Machine: ${machine}.`,
    '',
    'Every figure is measured side by side with its baseline in the same run; ratios are value / baseline. This machine is a noisy shared 2-core VM: compare ratios, not absolute figures.',
    '',
  ].join('\n');
  writeFileSync(file, `${header}${sections.join('\n')}\n${notes}`);
  console.log('\nBENCHMARKS.md rewritten');
}

void main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);

// Child process of bench/e2e.bench.ts: pure CPU work (JSON.parse of the facts the load plays),
// to measure how much faster N processes get a fixed amount of work done than one on this
// machine — the ceiling of any scaling by processes here, before Redis takes its share.
// argv[2]: the number of parses this process does. stdin "go" starts; it answers {done}.
import { createInterface } from 'node:readline';
import { TaskPlayer } from './replay-facts';

const count = Number(process.argv[2]);
const player = new TaskPlayer('cpu-0', 3, 'cpu', 7);
const texts = Array.from({ length: 1_000 }, () => JSON.stringify(player.next().entry));

createInterface({ input: process.stdin }).on('line', () => {
  let n = 0;
  for (let i = 0; i < count; i++) n += (JSON.parse(texts[i % texts.length]!) as { v: number }).v;
  process.stdout.write(`${JSON.stringify({ done: n })}\n`);
});
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);

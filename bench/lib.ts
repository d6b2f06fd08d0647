/**
 * One measured figure. `ratio` is value / baseline; `goal` is the ratio it should reach.
 * `atMost` / `atLeast` are absolute goals on the value itself (a latency bound, a rate).
 */
export interface BenchResult {
  name: string;
  value: number;
  unit: string;
  baseline?: number;
  ratio?: number;
  goal?: number;
  atMost?: number;
  atLeast?: number;
}

/** What a suite returns: its figures, and optionally text printed under its table. */
export type SuiteOutput = BenchResult[] | { results: BenchResult[]; details?: string };

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** The nearest-rank `p`th percentile of `sorted` (ascending); NaN when it is empty. */
export function percentile(sorted: Float64Array | readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Items per second of `fn`, which processes `items` items. */
export async function rate(items: number, fn: () => Promise<void>): Promise<number> {
  const t0 = process.hrtime.bigint();
  await fn();
  const ns = Number(process.hrtime.bigint() - t0);
  return (items * 1e9) / ns;
}

function fmt(n: number): string {
  if (Number.isNaN(n)) return 'n/a';
  return n < 100 ? n.toFixed(2) : Math.round(n).toLocaleString('en-US');
}

function goalText(r: BenchResult): string {
  const parts: string[] = [];
  if (r.goal !== undefined) {
    const met = r.ratio !== undefined && r.ratio >= r.goal;
    parts.push(`≥ ${(r.goal * 100).toFixed(0)}%: ${met ? 'met' : 'NOT met'}`);
  }
  if (r.atMost !== undefined) {
    const met = r.value <= r.atMost;
    const by = met
      ? ''
      : ` (${fmt(r.value - r.atMost)} ${r.unit} over, +${((r.value / r.atMost - 1) * 100).toFixed(0)}%)`;
    parts.push(`≤ ${fmt(r.atMost)} ${r.unit}: ${met ? 'met' : `NOT met${by}`}`);
  }
  if (r.atLeast !== undefined) {
    const met = r.value >= r.atLeast;
    const by = met ? '' : ` (${((1 - r.value / r.atLeast) * 100).toFixed(0)}% short)`;
    parts.push(`≥ ${fmt(r.atLeast)} ${r.unit}: ${met ? 'met' : `NOT met${by}`}`);
  }
  return parts.join('; ');
}

export function formatResults(results: readonly BenchResult[]): string {
  const rows = results.map((r) => {
    const base = r.baseline === undefined ? '' : `${fmt(r.baseline)} ${r.unit}`;
    const ratio =
      r.ratio === undefined
        ? ''
        : Number.isFinite(r.ratio)
          ? `${(r.ratio * 100).toFixed(0)}%`
          : 'n/a';
    return `| ${r.name} | ${fmt(r.value)} ${r.unit} | ${base} | ${ratio} | ${goalText(r)} |`;
  });
  return ['| benchmark | value | baseline | ratio | goal |', '|---|---|---|---|---|', ...rows].join(
    '\n',
  );
}

/** The figures of a suite's output. */
export function resultsOf(out: SuiteOutput): { results: BenchResult[]; details?: string } {
  return Array.isArray(out) ? { results: out } : out;
}

/**
 * The heap in use after a full collection (run with --expose-gc, as `npm run bench` does; without
 * it, whatever is in use). A turn of the event loop first lets closed sockets and timers let go;
 * collected twice, since what the first collection frees can hold more (weak maps, finalizers).
 */
export async function heapAfterGc(): Promise<number> {
  await new Promise((r) => setImmediate(r));
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
}

/** A figure against a baseline: its ratio is value / baseline. */
export function versus(
  name: string,
  value: number,
  unit: string,
  baseline: number,
  goals: Pick<BenchResult, 'goal' | 'atMost' | 'atLeast'> = {},
): BenchResult {
  return { name, value, unit, baseline, ratio: value / baseline, ...goals };
}

/**
 * Runs a suite as a script (`npx tsx bench/<suite>.bench.ts`): prints its table and details and
 * exits 0, or prints the error and exits 1 (its child processes and sockets would keep it alive).
 */
export function runAsScript(suite: () => Promise<SuiteOutput>): void {
  suite().then(
    (out) => {
      const { results, details } = resultsOf(out);
      console.log(formatResults(results));
      if (details) console.log(details);
      process.exit(0);
    },
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}

/**
 * Frames per second of `reduce` over frames whose messages are `lines`, against `JSON.parse` of
 * those lines (the baseline, what reading them off the wire costs anyway): interleaved `rounds`
 * times, so both see the same machine state, the best round of each. `timed` gives the runs per
 * second of one call.
 */
export function againstParse(
  name: string,
  lines: readonly string[],
  rounds: number,
  timed: (fn: () => number) => number,
  reduce: () => number,
  goals: Pick<BenchResult, 'goal' | 'atMost' | 'atLeast'> = {},
): BenchResult {
  let parseRate = 0;
  let rate = 0;
  for (let round = 0; round < rounds; round++) {
    parseRate = Math.max(
      parseRate,
      lines.length *
        timed(() => {
          let n = 0;
          for (const l of lines) n += JSON.parse(l) ? 1 : 0;
          return n;
        }),
    );
    rate = Math.max(rate, lines.length * timed(reduce));
  }
  return versus(name, rate, 'frames/s', parseRate, goals);
}

/** One measured figure. `ratio` is value / baseline; `goal` is the ratio it should reach. */
export interface BenchResult {
  name: string;
  value: number;
  unit: string;
  baseline?: number;
  ratio?: number;
  goal?: number;
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Items per second of `fn`, which processes `items` items. */
export async function rate(items: number, fn: () => Promise<void>): Promise<number> {
  const t0 = process.hrtime.bigint();
  await fn();
  const ns = Number(process.hrtime.bigint() - t0);
  return (items * 1e9) / ns;
}

function fmt(n: number): string {
  return n < 100 ? n.toFixed(2) : Math.round(n).toLocaleString('en-US');
}

export function formatResults(results: readonly BenchResult[]): string {
  const rows = results.map((r) => {
    const base = r.baseline === undefined ? '' : `${fmt(r.baseline)} ${r.unit}`;
    const ratio = r.ratio === undefined ? '' : `${(r.ratio * 100).toFixed(0)}%`;
    const met = r.ratio !== undefined && r.goal !== undefined && r.ratio >= r.goal;
    const goal =
      r.goal === undefined ? '' : `≥ ${(r.goal * 100).toFixed(0)}%: ${met ? 'met' : 'NOT met'}`;
    return `| ${r.name} | ${fmt(r.value)} ${r.unit} | ${base} | ${ratio} | ${goal} |`;
  });
  return ['| benchmark | value | baseline | ratio | goal |', '|---|---|---|---|---|', ...rows].join(
    '\n',
  );
}

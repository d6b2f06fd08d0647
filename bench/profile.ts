/**
 * Summarizes a V8 CPU profile (`node --cpu-prof`): the functions with the most self time, and
 * the share of each package/area. `BENCH_CPU_PROF=<dir> npm run bench -- e2e` writes one profile
 * per Baton process (main thread: the larger file of a pid).
 *
 * Run: npx tsx bench/profile.ts <file.cpuprofile> [top=15]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  totalMs: number;
  idleMs: number;
  top: { name: string; where: string; ms: number; share: number }[];
  areas: { area: string; ms: number; share: number }[];
}

function areaOf(url: string, name: string): string {
  if (name === '(garbage collector)') return 'GC';
  if (name === '(program)' || name === '(idle)') return name;
  if (!url) return 'node internals / native';
  const nm = url.lastIndexOf('node_modules/');
  if (nm !== -1) {
    const rest = url.slice(nm + 13).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  const m = /\/(apps|libs)\/([^/]+)\//.exec(url);
  if (m) return `${m[1]}/${m[2]}`;
  if (url.startsWith('node:')) return 'node internals / native';
  return url;
}

export function summarize(file: string, top = 15): ProfileSummary {
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) {
    self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + (p.timeDeltas[i] ?? 0));
  }
  const fns = new Map<string, { name: string; where: string; us: number }>();
  const areas = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const [id, us] of self) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const name = functionName || '(anonymous)';
    total += us;
    if (name === '(idle)') {
      idle += us;
      continue;
    }
    const short = url.replace(/^.*\/(node_modules|apps|libs)\//, '$1/').replace(/^file:\/\//, '');
    const where = url ? `${short}:${lineNumber + 1}` : '';
    const key = `${name}@${where}`;
    const f = fns.get(key) ?? { name, where, us: 0 };
    f.us += us;
    fns.set(key, f);
    const area = areaOf(url, name);
    areas.set(area, (areas.get(area) ?? 0) + us);
  }
  const busy = total - idle;
  return {
    totalMs: total / 1e3,
    idleMs: idle / 1e3,
    top: [...fns.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map((f) => ({ name: f.name, where: f.where, ms: f.us / 1e3, share: f.us / busy })),
    areas: [...areas]
      .sort((a, b) => b[1] - a[1])
      .map(([area, us]) => ({ area, ms: us / 1e3, share: us / busy })),
  };
}

export function formatSummary(s: ProfileSummary): string {
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  const lines = [
    `profile: ${(s.totalMs / 1e3).toFixed(1)} s, idle ${pct(s.idleMs / s.totalMs)}; shares below are of the busy time`,
    'by area: ' +
      s.areas
        .slice(0, 10)
        .map((a) => `${a.area} ${pct(a.share)}`)
        .join(', '),
    'top functions by self time:',
    ...s.top.map((f) => `  ${pct(f.share).padStart(6)}  ${f.name}  ${f.where}`),
  ];
  return lines.join('\n');
}

if (require.main === module) {
  const [file, top] = process.argv.slice(2);
  if (!file) {
    console.error('usage: npx tsx bench/profile.ts <file.cpuprofile> [top]');
    process.exit(2);
  }
  console.log(formatSummary(summarize(file, top ? Number(top) : 15)));
}

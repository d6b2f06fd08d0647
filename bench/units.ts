/**
 * Per-unit costs the suites measure for the capacity model (bench/capacity.bench.ts): CPU per
 * fact from the end-to-end run, memory per session, connection and execution from the others.
 * They are kept in bench/units.json, committed with BENCHMARKS.md (not in dist/, which every build
 * empties), so that a partial run (`npm run bench -- capacity`), on a fresh clone too, models from
 * the last figures each suite measured, and says when they were measured.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '@baton/config';

export interface UnitSet {
  /** ISO time of the run that measured them. */
  at: string;
  values: Record<string, number>;
}

const FILE = join(packageRoot(__dirname), 'bench', 'units.json');

export function readUnits(): Record<string, UnitSet> {
  if (!existsSync(FILE)) return {};
  try {
    return JSON.parse(readFileSync(FILE, 'utf8')) as Record<string, UnitSet>;
  } catch {
    return {};
  }
}

/** Replaces what `suite` measured before. */
export function recordUnits(suite: string, values: Record<string, number>): void {
  const all = readUnits();
  all[suite] = { at: new Date().toISOString(), values };
  writeFileSync(FILE, `${JSON.stringify(all, null, 2)}\n`);
}

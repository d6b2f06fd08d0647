import { existsSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';

/**
 * Where a `recording` agent's file is. A job names a recording; the worker plays only files
 * inside its recordings folder (WORKER_RECORDINGS_DIR, or the bundled recordings), whatever the
 * name says: `../`, absolute paths and symbolic links that lead out of the folder are refused, so
 * a job cannot make the worker read an arbitrary file. `.jsonl` may be left out of the name.
 */
export class RecordingError extends Error {
  override readonly name = 'RecordingError';
}

const inside = (dir: string, file: string): boolean => {
  const rel = relative(dir, file);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
};

export function resolveRecording(name: string, dir: string): string {
  if (!existsSync(dir)) throw new RecordingError(`recordings folder ${dir} does not exist`);
  const root = realpathSync(dir);
  const candidates = [resolve(root, name)];
  if (!name.endsWith('.jsonl')) candidates.push(resolve(root, `${name}.jsonl`));
  for (const candidate of candidates) {
    if (!inside(root, candidate)) {
      throw new RecordingError(
        `recording ${JSON.stringify(name)} is outside the recordings folder`,
      );
    }
    if (!existsSync(candidate) || !statSync(candidate).isFile()) continue;
    const real = realpathSync(candidate);
    if (!inside(root, real)) {
      throw new RecordingError(
        `recording ${JSON.stringify(name)} leads outside the recordings folder`,
      );
    }
    return real;
  }
  throw new RecordingError(`recording ${JSON.stringify(name)} not found in the recordings folder`);
}

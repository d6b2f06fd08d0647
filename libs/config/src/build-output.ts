import { existsSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

/** The folder of the package.json above `from`: the checkout, or /app in the image. */
export function packageRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

/**
 * The build's output folder (`npm run build`): dist/ beside package.json, whether the caller runs
 * from it (every process) or from sources (in-process tests).
 */
export function buildOutputDir(from: string): string {
  return join(packageRoot(from), 'dist');
}

/**
 * The compiled counterpart of a module of this package: the file itself when it is already the
 * build's output, else its place under dist/. Tests run sources in-process, but every process
 * they start runs the build, as in production.
 */
export function compiledPath(file: string): string {
  if (!file.endsWith('.ts')) return file;
  const root = packageRoot(dirname(file));
  return join(root, 'dist', relative(root, file).replace(/\.ts$/, '.js'));
}

import { WorkspacePath } from '@baton/protocol';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';

/**
 * Where an execution's agent runs. The worker chooses: a folder per tenant under the workspace
 * root (WORKER_WORKSPACE_ROOT), and in it a fresh folder per execution, removed when it ends —
 * or, when the client named one, a subfolder of the tenant's folder (kept, created when absent).
 * A named subfolder is refused when it is absolute, has a `.`, `..` or empty segment, or leads
 * out of the tenant's folder through a symbolic link: it is resolved one segment at a time with
 * realpath, so a link an agent left in the workspace cannot lead the next execution elsewhere.
 */
export class WorkspaceError extends Error {
  override readonly name = 'WorkspaceError';
}

export interface Workspace {
  dir: string;
  /** A fresh folder of this execution only: removed when it ends. */
  temporary: boolean;
}

const within = (root: string, path: string): boolean => {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
};

/** The folder name of a tenant: its id when that is a plain name, else a hash of it. */
export const tenantFolderName = (tenant: string): string =>
  /^[A-Za-z0-9_-]{1,64}$/.test(tenant)
    ? tenant
    : `~${createHash('sha256').update(tenant).digest('hex').slice(0, 32)}`;

/** The tenant's folder (created, owner-only), resolved. */
export function tenantWorkspace(root: string, tenant: string): string {
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const realRoot = realpathSync(root);
  const dir = join(realRoot, tenantFolderName(tenant));
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const real = realpathSync(dir);
  if (real === realRoot || !within(realRoot, real)) {
    throw new WorkspaceError(
      `the workspace of tenant ${JSON.stringify(tenant)} leads outside the workspace root`,
    );
  }
  return real;
}

export function prepareWorkspace(
  root: string,
  tenant: string,
  subfolder: string | undefined,
): Workspace {
  const base = tenantWorkspace(root, tenant);
  if (subfolder === undefined) return { dir: mkdtempSync(join(base, 'x-')), temporary: true };
  const shown = JSON.stringify(subfolder);
  if (!WorkspacePath.safeParse(subfolder).success) {
    throw new WorkspaceError(
      `workspace ${shown} must be a relative folder without . or .. segments`,
    );
  }
  let cur = base;
  for (const segment of subfolder.split('/')) {
    const next = join(cur, segment);
    if (!existsSync(next)) {
      try {
        mkdirSync(next, { mode: 0o700 });
      } catch (err) {
        throw new WorkspaceError(`workspace ${shown}: ${(err as Error).message}`);
      }
    }
    const real = realpathSync(next);
    if (!within(base, real)) {
      throw new WorkspaceError(`workspace ${shown} leads outside the tenant's workspace`);
    }
    if (!statSync(real).isDirectory())
      throw new WorkspaceError(`workspace ${shown} is not a folder`);
    cur = real;
  }
  return { dir: cur, temporary: false };
}

import { z } from 'zod';
import { Id } from './common';

/**
 * Task ids belong to tenants. A client names a task by its own id; below the gateway (streams,
 * projector shards, views, inboxes, execution jobs) the task is its key `<tenant>/<task id>`, so
 * the same id of two tenants is two tasks, and a task of another tenant is simply absent.
 *
 * A tenant id holds no `/` (the first `/` of a key ends the tenant; a task id may hold any) and no
 * braces (a tenant's task list is a Redis key tagged `{t:<tenant>}` for Redis Cluster).
 */
export const MAX_TENANT_CHARS = 200;
export const TenantId = z
  .string()
  .min(1, 'must not be empty')
  .max(MAX_TENANT_CHARS)
  .regex(/^[^/{}]+$/, 'must not contain "/" or braces');

/** Longest key: a tenant, `/`, a task id (Id allows 200 characters). */
export const MAX_TASK_KEY_CHARS = MAX_TENANT_CHARS + 1 + 200;

/**
 * The task id of stream entries, updates, views and execution jobs: a task key below the gateway
 * (a client only ever sees its own task id in the same fields, which this also accepts).
 */
export const TaskKey = z.string().min(1).max(MAX_TASK_KEY_CHARS);

/** The key of `taskId` of `tenant`. Throws on a tenant or task id that cannot be one. */
export function taskKey(tenant: string, taskId: string): string {
  if (!TenantId.safeParse(tenant).success) throw new RangeError(`bad tenant id: ${tenant}`);
  if (!Id.safeParse(taskId).success) throw new RangeError('bad task id');
  return `${tenant}/${taskId}`;
}

/** The tenant and task id of a key, or null when `key` is not one. */
export function splitTaskKey(key: string): { tenant: string; taskId: string } | null {
  const i = key.indexOf('/');
  if (i <= 0) return null;
  const tenant = key.slice(0, i);
  const taskId = key.slice(i + 1);
  if (!TenantId.safeParse(tenant).success || !Id.safeParse(taskId).success) return null;
  return { tenant, taskId };
}

// docker-compose.yml as data, for the tests that run its services as local processes.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ROOT } from '@baton/testing';

export interface ComposeService {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string>;
  deploy?: { replicas?: number };
  healthcheck?: { test: string[] };
  ports?: string[];
  restart?: string;
  depends_on?: Record<string, { condition: string }>;
}

export type Role = 'gateway' | 'projector' | 'worker';
export const ROLES: readonly Role[] = ['gateway', 'projector', 'worker'];

export function composeServices(): Record<string, ComposeService> {
  const file = parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
    services: Record<string, ComposeService>;
  };
  return file.services;
}

/** Compose's variable interpolation: ${VAR}, ${VAR:-default}, ${VAR:?error}. */
export function interpolate(value: string, vars: Record<string, string>): string {
  return value.replace(
    /\$\{(\w+)(?::([?-])([^}]*))?\}/g,
    (_, name: string, op?: string, arg?: string) => {
      const v = vars[name];
      if (v !== undefined && v !== '') return v;
      if (op === '?') throw new Error(`compose needs ${name}: ${arg}`);
      return op === '-' ? (arg ?? '') : '';
    },
  );
}

/** The secrets an operator puts in .env (docs/deploying.md, secrets), as the tests set them. */
export const COMPOSE_SECRETS: Readonly<Record<string, string>> = {
  BATON_JWT_SECRET: 'compose-test-secret-of-at-least-32-chars',
  BATON_REDIS_GATEWAY_PASSWORD: 'a1'.repeat(32),
  BATON_REDIS_PROJECTOR_PASSWORD: 'b2'.repeat(32),
  BATON_REDIS_WORKER_PASSWORD: 'c3'.repeat(32),
};

/** The arguments of the compose file's redis-server (its command after the binary). */
export function composeRedisArgs(vars: Record<string, string> = COMPOSE_SECRETS): string[] {
  const [binary, ...args] = composeServices().redis!.command!;
  if (binary !== 'redis-server') throw new Error(`redis runs ${binary}, not redis-server`);
  return args.map((a) => interpolate(a, vars));
}

/** A role's REDIS_URL from the compose file, pointed at a local server instead of `redis:6379`. */
export function composeRedisUrl(
  role: Role,
  localUrl: string,
  vars: Record<string, string> = COMPOSE_SECRETS,
): string {
  const raw = composeServices()[role]!.environment!.REDIS_URL!;
  const { host } = new URL(localUrl);
  return interpolate(raw, vars).replace('@redis:6379', `@${host}`);
}

/**
 * A role's Redis env as the compose file gives it, on a local server: its own Redis user, and
 * the key prefix (`baton`) that the users' key patterns are written for.
 */
export function composeEnv(role: Role, localUrl: string, shards: number): Record<string, string> {
  return {
    REDIS_URL: composeRedisUrl(role, localUrl),
    BATON_PREFIX: 'baton',
    BATON_SHARDS: String(shards),
  };
}

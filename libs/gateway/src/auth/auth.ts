import { errors, jwtVerify } from 'jose';
import type { IncomingMessage } from 'node:http';
import { TenantId } from '@baton/protocol';
import { z } from 'zod';
import { SCOPES, type Scope } from '@baton/auth';

export { SCOPES, type Scope };

/** The scope each lifecycle operation needs (same over /ws and REST). */
export const LIFECYCLE_SCOPE = {
  'session.reset': 'prompt',
  'session.delete': 'delete',
  'session.force_release': 'admin',
  'task.archive': 'prompt',
  'task.unarchive': 'prompt',
  'task.delete': 'delete',
} as const satisfies Record<string, Scope>;

/** Who a request acts for: a tenant and what it may do there. */
export interface Principal {
  tenant: string;
  scopes: ReadonlySet<Scope>;
  subject?: string;
  /** Seconds since the epoch at which the token lapses. */
  expiresAt?: number;
}

export class AuthError extends Error {
  override readonly name = 'AuthError';
}

const Claims = z.object({
  /** No `/` (it ends the tenant in a task key) and no braces (Redis Cluster hash tags). */
  tenant: TenantId,
  scope: z
    .string()
    .max(200)
    .refine(
      (s) => s.split(' ').every((p) => p === '' || (SCOPES as readonly string[]).includes(p)),
      `must be a space-separated subset of "${SCOPES.join(' ')}"`,
    ),
  sub: z.string().optional(),
  exp: z.number().optional(),
});

/** `admin` may do everything; otherwise the scope must be granted as such. */
export function allows(p: Principal, scope: Scope): boolean {
  return p.scopes.has(scope) || p.scopes.has('admin');
}

/**
 * The scope sets of tokens, one per combination of scopes (at most 2^5, the claim being checked
 * against SCOPES): every connection of the same scopes shares one, where a Set of its own cost
 * each idle connection ~240 bytes. Read-only, as Principal types them.
 */
const SCOPE_SETS = new Map<string, ReadonlySet<Scope>>();

function scopeSet(claim: string): ReadonlySet<Scope> {
  const granted = claim.split(' ');
  const key = SCOPES.filter((s) => granted.includes(s)).join(' ');
  let set = SCOPE_SETS.get(key);
  if (!set) {
    set = new Set(key.split(' ').filter(Boolean) as Scope[]);
    SCOPE_SETS.set(key, set);
  }
  return set;
}

/** Verifies HS256 client tokens: signature, `exp`, `iss` when configured, and Baton's claims. */
export class Authenticator {
  private readonly key: Uint8Array;

  constructor(
    secret: string,
    private readonly issuer?: string,
  ) {
    this.key = new TextEncoder().encode(secret);
  }

  async verify(token: string | undefined): Promise<Principal> {
    if (!token) throw new AuthError('missing bearer token');
    let payload: unknown;
    try {
      ({ payload } = await jwtVerify(token, this.key, {
        algorithms: ['HS256'],
        ...(this.issuer ? { issuer: this.issuer } : {}),
      }));
    } catch (err) {
      throw new AuthError(reason(err));
    }
    const r = Claims.safeParse(payload);
    if (!r.success) {
      const i = r.error.issues[0]!;
      throw new AuthError(`bad token claim ${i.path.join('.') || '(root)'}: ${i.message}`);
    }
    const c = r.data;
    return {
      tenant: c.tenant,
      scopes: scopeSet(c.scope),
      ...(c.sub ? { subject: c.sub } : {}),
      ...(c.exp !== undefined ? { expiresAt: c.exp } : {}),
    };
  }

  /** Bearer token of an HTTP request or WebSocket upgrade: the header, else `?token=`. */
  static tokenOf(req: IncomingMessage): string | undefined {
    const h = req.headers.authorization;
    if (h) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
      return m ? m[1] : undefined;
    }
    const q = new URL(req.url ?? '/', 'http://x').searchParams.get('token');
    return q ?? undefined;
  }
}

function reason(err: unknown): string {
  if (err instanceof errors.JWTExpired) return 'token expired';
  if (err instanceof errors.JWTClaimValidationFailed) return `bad token: ${err.message}`;
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'bad token signature';
  if (err instanceof errors.JOSEAlgNotAllowed) return 'bad token: only HS256 is accepted';
  if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid) {
    return 'malformed token';
  }
  return 'bad token';
}

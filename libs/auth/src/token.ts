import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT } from 'jose';

/**
 * What a token may do: `read` views and updates, `prompt` prompts, queue and session commands
 * (reset, archive and unarchive included), `execute` start agent executions (of
 * operator-configured profiles), `delete` delete sessions and tasks, `admin` everything
 * (force-release only with it).
 */
export const SCOPES = ['read', 'prompt', 'execute', 'delete', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

/** Signs a client token (HS256) carrying a tenant and scopes, as the gateway verifies them. */
export async function mintToken(
  secret: string,
  claims: { tenant: string; scopes: readonly Scope[]; subject?: string; issuer?: string },
  expiresIn = '30d',
): Promise<string> {
  let jwt = new SignJWT({ tenant: claims.tenant, scope: claims.scopes.join(' ') })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(claims.subject ?? claims.tenant)
    .setIssuedAt()
    .setExpirationTime(expiresIn);
  if (claims.issuer) jwt = jwt.setIssuer(claims.issuer);
  return jwt.sign(new TextEncoder().encode(secret));
}

/**
 * The one-process run's signing secret when BATON_JWT_SECRET is not set: made once, kept in the
 * data folder (readable by its owner only), so tokens stay valid across restarts.
 */
export function localSecret(dataDir: string): string {
  const file = join(dataDir, 'jwt-secret');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(32).toString('base64url');
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}

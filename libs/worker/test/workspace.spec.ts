import { AgentProfile } from '@baton/config';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentEnv } from '../src/execution';
import { WorkspaceError, prepareWorkspace, tenantFolderName } from '../src/workspace';

describe('prepareWorkspace', () => {
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'baton-ws-')));
  const root = join(base, 'root');
  const outside = join(base, 'outside');
  mkdirSync(outside);

  it('makes a fresh folder per execution inside the tenant’s folder', () => {
    const a = prepareWorkspace(root, 'acme', undefined);
    const b = prepareWorkspace(root, 'acme', undefined);
    expect(a.temporary).toBe(true);
    expect(a.dir).not.toBe(b.dir);
    expect(a.dir.startsWith(join(root, 'acme') + '/')).toBe(true);
  });

  it('names odd tenants by a hash, so a tenant id is never a path', () => {
    for (const tenant of ['..', '.', 'a/b', '../../etc', 'x y']) {
      const name = tenantFolderName(tenant);
      expect(name).toMatch(/^~[0-9a-f]{32}$/);
      const ws = prepareWorkspace(root, tenant, undefined);
      expect(ws.dir.startsWith(join(root, name) + '/')).toBe(true);
    }
    expect(tenantFolderName('acme-1')).toBe('acme-1');
  });

  it('uses (and creates) a named subfolder of the tenant’s folder', () => {
    const ws = prepareWorkspace(root, 'acme', 'repo/src');
    expect(ws).toEqual({ dir: join(root, 'acme', 'repo', 'src'), temporary: false });
    expect(existsSync(ws.dir)).toBe(true);
    expect(prepareWorkspace(root, 'acme', 'repo/src')).toEqual(ws);
  });

  it.each(['../x', '/etc', 'a/../../x', '.', 'a//b', 'a\\b', ''])('refuses %j', (sub) => {
    expect(() => prepareWorkspace(root, 'acme', sub)).toThrow(WorkspaceError);
  });

  it('refuses a subfolder that leads out through a symbolic link, at any depth', () => {
    mkdirSync(join(root, 'acme', 'deep'), { recursive: true });
    symlinkSync(outside, join(root, 'acme', 'deep', 'out'));
    symlinkSync(join(root, 'other-tenant'), join(root, 'acme', 'sideways'));
    mkdirSync(join(root, 'other-tenant'), { recursive: true });
    expect(() => prepareWorkspace(root, 'acme', 'deep/out')).toThrow(/leads outside/);
    expect(() => prepareWorkspace(root, 'acme', 'deep/out/more')).toThrow(/leads outside/);
    expect(() => prepareWorkspace(root, 'acme', 'sideways')).toThrow(/leads outside/);
    expect(existsSync(join(outside, 'more'))).toBe(false);
    // A link that stays inside the tenant's folder is fine.
    symlinkSync(join(root, 'acme', 'repo'), join(root, 'acme', 'alias'));
    expect(prepareWorkspace(root, 'acme', 'alias').dir).toBe(join(root, 'acme', 'repo'));
  });

  it('refuses a file where a folder should be', () => {
    writeFileSync(join(root, 'acme', 'file'), '');
    expect(() => prepareWorkspace(root, 'acme', 'file')).toThrow(/not a folder/);
  });
});

describe('agentEnv', () => {
  const worker = {
    PATH: '/usr/bin',
    HOME: '/home/w',
    REDIS_URL: 'redis://:pw@r:6379',
    BATON_JWT_SECRET: 'x'.repeat(32),
    API_KEY: 'k',
    OTHER: 'o',
  };

  it('is PATH, HOME, the inherited names and the profile’s env — nothing else', () => {
    const p = AgentProfile.parse({
      kind: 'command',
      command: 'agent',
      env: { MODEL: 'm' },
      inheritEnv: ['API_KEY', 'MISSING'],
    });
    expect(agentEnv(p, worker)).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/w',
      API_KEY: 'k',
      MODEL: 'm',
    });
    expect(agentEnv(AgentProfile.parse({ kind: 'replay' }), worker)).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/w',
    });
  });
});

import {
  COMMON,
  ConfigError,
  GATEWAY,
  PROJECTOR,
  SETTINGS,
  loadConfig,
  option,
  optionSchemas,
  optionValues,
  optional,
  settingsTable,
} from './index';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

describe('configuration', () => {
  it('applies the defaults and coerces values', () => {
    const c = loadConfig(
      { ...COMMON, ...PROJECTOR },
      { BATON_SHARDS: '16', PROJECTOR_LEASE_TTL_MS: '' },
    );
    expect(c.REDIS_URL).toBe('redis://127.0.0.1:6379');
    expect(c.BATON_SHARDS).toBe(16);
    expect(c.PROJECTOR_LEASE_TTL_MS).toBe(2000);
    expect(c.BATON_INSTANCE_ID).toBeUndefined();
  });

  it('names every bad variable, its value and the rule, in one error', () => {
    let error: unknown;
    try {
      loadConfig(
        { ...COMMON, ...GATEWAY },
        {
          REDIS_URL: 'http://x',
          BATON_SHARDS: 'many',
          GATEWAY_PORT: '70000',
          BATON_JWT_SECRET: 'short',
        },
      );
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems).toHaveLength(4);
    expect(problems[0]).toMatch(/^REDIS_URL="http:\/\/x": must be a redis/);
    expect(problems[1]).toMatch(/^BATON_SHARDS="many": /);
    expect(problems[2]).toMatch(/^GATEWAY_PORT="70000": .*65535/);
    expect(problems[3]).toMatch(/^BATON_JWT_SECRET="short": must be at least 32 characters/);
  });

  it('requires BATON_JWT_SECRET of the gateway, unless a process declares it optional', () => {
    expect(() => loadConfig({ ...COMMON, ...GATEWAY }, {})).toThrow(
      'BATON_JWT_SECRET="": required by the gateway (at least 32 characters)',
    );
    const local = { ...COMMON, ...GATEWAY, BATON_JWT_SECRET: optional(GATEWAY.BATON_JWT_SECRET) };
    expect(loadConfig(local, {}).BATON_JWT_SECRET).toBeUndefined();
    expect(() => loadConfig(local, { BATON_JWT_SECRET: 'short' })).toThrow(/at least 32/);
  });

  it('is documented in docs/configuration.md, every variable', () => {
    const readme = readFileSync(join(__dirname, '../../../docs/configuration.md'), 'utf8');
    for (const group of Object.values(SETTINGS)) {
      for (const name of Object.keys(group)) expect(readme).toContain(`\`${name}\``);
    }
    expect(settingsTable().split('\n').length).toBe(
      2 + Object.values(SETTINGS).reduce((n, g) => n + Object.keys(g).length, 0),
    );
  });
});

describe('a library option from its setting', () => {
  it('has the setting’s range, default and meaning, and takes numbers, not strings', () => {
    const lease = option(PROJECTOR.PROJECTOR_LEASE_TTL_MS);
    expect(lease.parse(undefined)).toBe(2000);
    expect(lease.parse(5000)).toBe(5000);
    expect(lease.safeParse(199).success).toBe(false);
    expect(lease.safeParse('5000').success).toBe(false);
    expect(lease.description).toBe(PROJECTOR.PROJECTOR_LEASE_TTL_MS.meaning);
  });

  it('maps options to settings by name, both ways', () => {
    const names = { lease: 'PROJECTOR_LEASE_TTL_MS', shards: 'BATON_SHARDS' } as const;
    const group = { ...COMMON, ...PROJECTOR };
    const schemas = optionSchemas(group, names);
    expect(schemas.lease.parse(undefined)).toBe(2000);
    expect(schemas.shards.parse(undefined)).toBe(64);
    const config = loadConfig(group, { PROJECTOR_LEASE_TTL_MS: '3000' });
    expect(optionValues(config, names)).toEqual({ lease: 3000, shards: 64 });
  });
});

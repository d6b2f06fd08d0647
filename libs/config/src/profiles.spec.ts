import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AgentProfile,
  ProfilesError,
  builtinProfiles,
  checkProfileRequest,
  loadProfiles,
  parseProfiles,
  unknownProfile,
} from './profiles';

const file = (profiles: unknown) => JSON.stringify({ profiles });
const problem = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ProfilesError);
    return (err as Error).message;
  }
  throw new Error('no error');
};

describe('agent profiles', () => {
  it('applies safe defaults: permissions asked of a person, no raw messages, no env', () => {
    const p = parseProfiles(file({ a: { kind: 'command', command: '/usr/bin/agent' } }), 'x');
    expect(p.a).toEqual({
      kind: 'command',
      command: '/usr/bin/agent',
      args: [],
      env: {},
      inheritEnv: [],
      permissionPolicy: 'ask',
      capabilities: {
        rawSdkMessages: false,
        terminalOutput: false,
        subagents: false,
        protocolVersion: 1,
      },
    });
    const r = parseProfiles(file({ r: { kind: 'replay' } }), 'x');
    expect(r.r).toMatchObject({ kind: 'replay', speed: 1, permissionPolicy: 'ask' });
  });

  it('refuses unknown keys, at every level, naming them', () => {
    expect(
      problem(() => parseProfiles(file({ a: { kind: 'command', command: 'x', cwd: '/' } }), 'F')),
    ).toMatch(/^F: profiles\.a: Unrecognized key: "cwd"/);
    expect(
      problem(() =>
        parseProfiles(file({ a: { kind: 'replay', capabilities: { terminal: true } } }), 'F'),
      ),
    ).toMatch(/profiles\.a\.capabilities: Unrecognized key: "terminal"/);
    expect(problem(() => parseProfiles(JSON.stringify({ profiles: {}, extra: 1 }), 'F'))).toMatch(
      /Unrecognized key: "extra"/,
    );
  });

  it('refuses Baton settings in env and inheritEnv', () => {
    for (const name of ['REDIS_URL', 'BATON_JWT_SECRET', 'BATON_PREFIX', 'WORKER_CONCURRENCY']) {
      expect(
        problem(() =>
          parseProfiles(file({ a: { kind: 'command', command: 'x', env: { [name]: 'v' } } }), 'F'),
        ),
      ).toMatch(/Baton settings .* are never given to agents/);
      expect(
        problem(() =>
          parseProfiles(file({ a: { kind: 'command', command: 'x', inheritEnv: [name] } }), 'F'),
        ),
      ).toMatch(/never given to agents/);
    }
    expect(
      parseProfiles(
        file({ a: { kind: 'command', command: 'x', env: { ANTHROPIC_MODEL: 'm' } } }),
        'F',
      ).a!.env,
    ).toEqual({ ANTHROPIC_MODEL: 'm' });
  });

  it('refuses a command profile without a command, a bad name, a bad policy, an empty set', () => {
    expect(problem(() => parseProfiles(file({ a: { kind: 'command' } }), 'F'))).toMatch(
      /profiles\.a\.command/,
    );
    expect(problem(() => parseProfiles(file({ '../x': { kind: 'replay' } }), 'F'))).toMatch(
      /profile names/,
    );
    expect(
      problem(() => parseProfiles(file({ a: { kind: 'replay', permissionPolicy: 'yes' } }), 'F')),
    ).toMatch(/permissionPolicy/);
    expect(problem(() => parseProfiles(file({}), 'F'))).toMatch(/at least one profile/);
    expect(problem(() => parseProfiles('{', 'F'))).toMatch(/^F: not JSON/);
  });

  it('reads BATON_PROFILES_FILE or BATON_PROFILES, not both; one line per error', () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-profiles-'));
    const path = join(dir, 'profiles.json');
    writeFileSync(path, file({ mine: { kind: 'command', command: 'agent', args: ['--acp'] } }));
    expect(Object.keys(loadProfiles({ BATON_PROFILES_FILE: path }))).toEqual(['mine']);
    expect(Object.keys(loadProfiles({ BATON_PROFILES: file({ r: { kind: 'replay' } }) }))).toEqual([
      'r',
    ]);
    expect(
      problem(() => loadProfiles({ BATON_PROFILES_FILE: path, BATON_PROFILES: file({}) })),
    ).toMatch(/both set/);
    const missing = problem(() => loadProfiles({ BATON_PROFILES_FILE: join(dir, 'nope.json') }));
    expect(missing).toMatch(/^BATON_PROFILES_FILE=".*nope\.json": cannot read it/);
    expect(missing.split('\n')).toHaveLength(1);
  });

  it('defaults to replay, plus claude only when its adapter is installed', () => {
    expect(Object.keys(builtinProfiles(null))).toEqual(['replay']);
    const withClaude = builtinProfiles('/opt/claude-agent-acp/dist/index.js');
    expect(Object.keys(withClaude).sort()).toEqual(['claude', 'replay']);
    expect(withClaude.claude).toMatchObject({
      kind: 'command',
      args: ['/opt/claude-agent-acp/dist/index.js'],
      env: {},
      permissionPolicy: 'ask',
      capabilities: { rawSdkMessages: true },
    });
    expect(Object.keys(loadProfiles({}))).toContain('replay');
  });

  it('checks what a client asks of a profile', () => {
    const profiles = {
      replay: AgentProfile.parse({ kind: 'replay' }),
      demo: AgentProfile.parse({ kind: 'replay', recording: 'demo' }),
      agent: AgentProfile.parse({ kind: 'command', command: 'agent' }),
    };
    expect(checkProfileRequest(profiles, { profile: 'x' })).toBe(
      'unknown profile "x"; known: agent, demo, replay',
    );
    expect(checkProfileRequest(profiles, { profile: 'toString' })).toBe(
      unknownProfile('toString', profiles),
    );
    expect(checkProfileRequest(profiles, { profile: 'agent', recording: 'r' })).toMatch(
      /replay profiles only/,
    );
    expect(checkProfileRequest(profiles, { profile: 'replay' })).toMatch(/needs a recording/);
    expect(checkProfileRequest(profiles, { profile: 'replay', recording: 'r', speed: 0 })).toBe(
      null,
    );
    expect(checkProfileRequest(profiles, { profile: 'demo' })).toBe(null);
    expect(checkProfileRequest(profiles, { profile: 'agent' })).toBe(null);
  });
});

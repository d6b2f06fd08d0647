// Agents in the image: deploy/Dockerfile's `worker` target carries the agents a worker
// hosts, at the versions Baton is tested against, with an init process; the compose worker uses
// it; the profiles every role reads name them and pass each its credentials only. (No Docker
// daemon in CI: the image is not built here. test/compose.spec.ts runs the runtime stage's files.)
import { parseProfiles } from '@baton/config';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { composeServices } from './compose-file';
import { ROOT } from '@baton/testing';

const dockerfile = readFileSync(join(ROOT, 'deploy', 'Dockerfile'), 'utf8');
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version: string; bin?: Record<string, string> }>;
};
const stage = (name: string): string => {
  const start = dockerfile.indexOf(` AS ${name}\n`);
  expect(start).toBeGreaterThan(-1);
  const next = dockerfile.indexOf('\nFROM ', start);
  return dockerfile.slice(start, next === -1 ? undefined : next);
};

describe('the worker image', () => {
  it('pins the adapter and the Claude Code CLI at the versions package-lock.json tests', () => {
    const adapter = lock.packages['node_modules/@agentclientprotocol/claude-agent-acp']!;
    const sdk = lock.packages['node_modules/@anthropic-ai/claude-agent-sdk']!;
    const agents = stage('agents');
    expect(agents).toContain(`ARG CLAUDE_AGENT_ACP_VERSION=${adapter.version}\n`);
    expect(agents).toContain(`ARG CLAUDE_AGENT_SDK_VERSION=${sdk.version}\n`);
    expect(agents).toContain('WORKDIR /opt/agents');
    // The native CLI of the image's platform is there, or the build fails.
    expect(agents).toMatch(/test -x .*claude-agent-sdk-linux-/);
  });

  it('pins codex-acp, Qwen Code and OpenCode at the versions package-lock.json tests', () => {
    const agents = stage('agents');
    for (const [arg, pkg] of [
      ['CODEX_ACP_VERSION', '@zed-industries/codex-acp'],
      ['QWEN_CODE_VERSION', '@qwen-code/qwen-code'],
      ['OPENCODE_VERSION', 'opencode-ai'],
    ] as const) {
      expect(agents).toContain(`ARG ${arg}=${lock.packages[`node_modules/${pkg}`]!.version}\n`);
      expect(agents).toContain(`"${pkg}@\${${arg}}"`);
    }
    // Each native binary is checked where the profiles name it.
    expect(agents).toMatch(/test -x .*codex-acp-linux-/);
    expect(agents).toContain('ln -s ');
    expect(agents).toContain('bin/opencode');
  });

  it('is the runtime plus the agents, with tini as PID 1 (exited agents are reaped)', () => {
    const worker = stage('worker');
    expect(worker).toMatch(/^ AS worker\n/);
    expect(dockerfile).toContain('FROM runtime AS worker');
    expect(worker).toContain('COPY --from=agents /opt/agents /opt/agents');
    expect(worker).toContain('ENTRYPOINT ["/usr/bin/tini", "--"]');
    expect(worker).toContain('USER node');
    expect(worker).toContain('dist/apps/worker/src/main.js');
  });

  it('is what the compose worker builds; every role reads the same profiles', () => {
    const services = composeServices();
    expect(services.worker!.build).toMatchObject({
      dockerfile: 'deploy/Dockerfile',
      target: 'worker',
    });
    for (const role of ['gateway', 'projector', 'worker'])
      expect(services[role]!.environment?.BATON_PROFILES_FILE).toBe('deploy/profiles.json');
    expect(stage('runtime')).toContain('COPY deploy/profiles.json ./deploy/profiles.json');
    // The key reaches the worker process, which passes it to the claude profile alone.
    expect(services.worker!.environment?.ANTHROPIC_API_KEY).toBe('${ANTHROPIC_API_KEY:-}');
    expect(services.gateway!.environment?.ANTHROPIC_API_KEY).toBeUndefined();
  });

  it("names the installed adapter's entry point, and gives each profile only its credentials", () => {
    const profiles = parseProfiles(
      readFileSync(join(ROOT, 'deploy', 'profiles.json'), 'utf8'),
      'deploy/profiles.json',
    );
    const adapter = lock.packages['node_modules/@agentclientprotocol/claude-agent-acp']!;
    const claude = profiles.claude!;
    expect(claude).toMatchObject({
      kind: 'command',
      command: 'node',
      args: [
        `/opt/agents/node_modules/@agentclientprotocol/claude-agent-acp/${adapter.bin!['claude-agent-acp']}`,
      ],
      inheritEnv: ['ANTHROPIC_API_KEY'],
      env: {},
      permissionPolicy: 'ask',
    });
    expect(profiles.replay).toMatchObject({ kind: 'replay', inheritEnv: [], env: {} });
    expect(profiles.codex).toMatchObject({
      kind: 'command',
      command: 'node',
      args: ['/opt/agents/node_modules/@zed-industries/codex-acp/bin/codex-acp.js'],
      inheritEnv: ['OPENAI_API_KEY'],
      env: {},
      permissionPolicy: 'ask',
    });
    const qwen = lock.packages['node_modules/@qwen-code/qwen-code']!;
    expect(profiles.qwen).toMatchObject({
      kind: 'command',
      command: 'node',
      args: [
        `/opt/agents/node_modules/@qwen-code/qwen-code/${qwen.bin!.qwen!.replace(/^\.\//, '')}`,
        '--acp',
        '--auth-type',
        'openai',
      ],
      inheritEnv: ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'OPENAI_MODEL'],
      env: {},
      permissionPolicy: 'ask',
    });
    expect(profiles.opencode).toMatchObject({
      kind: 'command',
      command: '/opt/agents/bin/opencode',
      args: ['acp'],
      env: {},
      permissionPolicy: 'ask',
    });
  });
});

import { AgentHost, replayAgentCommand, type FactBody } from '../src';
import { fixturePath } from './helpers';

/**
 * How an execution ends when the agent misbehaves on its ACP channel, or when the host stops it,
 * with real child processes. A hung setup is covered in host.e2e.spec.ts.
 */

/** A minimal ACP agent in plain Node: answers setup by request id, then writes `onPrompt`. */
const scriptedAgent = (onPrompt: string) => {
  const script = `
    const rl = require('node:readline').createInterface({ input: process.stdin });
    rl.on('line', (line) => {
      const m = JSON.parse(line);
      const reply = (result) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result }) + '\\n');
      if (m.method === 'initialize') reply({ protocolVersion: 1, agentInfo: { name: 'scripted' } });
      else if (m.method === 'session/new') reply({ sessionId: 's1' });
      else if (m.method === 'session/prompt') process.stdout.write(${JSON.stringify(onPrompt)});
    });`;
  return { command: process.execPath, args: ['-e', script] };
};

describe('AgentHost ends the execution with a clear reason', () => {
  it('when the agent writes something other than JSON-RPC before answering initialize', async () => {
    const facts: FactBody[] = [];
    await expect(
      AgentHost.start({
        command: process.execPath,
        args: ['-e', "process.stdout.write('Welcome to my CLI!\\n'); setInterval(() => {}, 1000)"],
        sessionCwd: '/tmp',
        // Far beyond the test's own timeout: the failure must come from the garbage, not a timer.
        setupTimeoutMs: 600_000,
        onFact: (f) => facts.push(f),
      }),
    ).rejects.toThrow();
    expect(facts.map((f) => f.type)).toEqual(['execution.started', 'execution.ended']);
    expect(facts[1]).toMatchObject({
      data: {
        reason: 'failed',
        error: expect.stringMatching(/not JSON-RPC to stdout: "Welcome to my CLI!"/),
      },
    });
  });

  it('when the agent writes garbage mid-turn: the prompt fails and the group is torn down', async () => {
    const facts: FactBody[] = [];
    const host = await AgentHost.start({
      ...scriptedAgent('{"half a frame\n'),
      sessionCwd: '/tmp',
      onFact: (f) => facts.push(f),
    });
    await expect(
      host.prompt({ promptId: 'p1', admissionGeneration: 1, text: 'go' }),
    ).rejects.toThrow();
    await host.exited;
    expect(facts).toContainEqual({
      type: 'prompt.dispatched',
      data: { promptId: 'p1', admissionGeneration: 1 },
    });
    expect(facts.at(-1)).toMatchObject({
      type: 'execution.ended',
      data: { reason: 'failed', error: expect.stringContaining('{\\"half a frame') },
    });
    expect(() => process.kill(-host.pid, 0)).toThrow(expect.objectContaining({ code: 'ESRCH' }));
  });

  it('as cancelled when the host stops it before its work is done', async () => {
    const facts: FactBody[] = [];
    const { command, args } = replayAgentCommand(fixturePath('generic-turn'), { pace: 0 });
    const host = await AgentHost.start({
      command,
      args,
      sessionCwd: '/tmp',
      onFact: (f) => facts.push(f),
    });
    await host.close('cancelled');
    expect(facts.at(-1)).toMatchObject({ type: 'execution.ended', data: { reason: 'cancelled' } });
    expect(facts.at(-1)).not.toHaveProperty('data.error');
  });
});

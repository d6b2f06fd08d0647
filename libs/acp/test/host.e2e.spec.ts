import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AgentHost,
  recordedAdvertisement,
  replayAgentCommand,
  type ClientAdvertisement,
  type FactBody,
  type Frame,
  type ReplayCommandOptions,
} from '../src';
import { recordedPrompts } from '@baton/testing';
import { EXPECTED } from '@baton/testing';
import { assertValidFact, fixturePath, loadFixture } from './helpers';

/**
 * AgentHost drives the replay agent as a real child process over stdio ACP. The dialect facts it
 * emits must equal the fixture's expected facts. The only normalisation is time: the host stamps
 * frames with its clock, fixed here, where the fixture carries recorded times.
 */

const NOW = '2026-11-10T12:00:00.000Z';

const atNow = (f: FactBody): FactBody =>
  f.type === 'background.started'
    ? { ...f, data: { ...f.data, work: { ...f.data.work, startedAt: NOW } } }
    : f;

interface Run {
  host: AgentHost;
  facts: FactBody[];
  frames: Frame[];
}

const startHost = async (
  fixture: string,
  opts: ReplayCommandOptions & {
    rawSdkMessages?: boolean;
    advertise?: ClientAdvertisement;
    setupTimeoutMs?: number;
    mode?: string;
  } = {},
): Promise<Run> => {
  const facts: FactBody[] = [];
  const frames: Frame[] = [];
  const { command, args } = replayAgentCommand(fixturePath(fixture), { pace: 0, ...opts });
  const host = await AgentHost.start({
    command,
    args,
    sessionCwd: '/tmp',
    permissionPolicy: 'allow-once',
    clock: () => NOW,
    onFact: (f) => facts.push(f),
    onRawFrame: (f) => frames.push(f),
    ...(opts.rawSdkMessages !== undefined ? { rawSdkMessages: opts.rawSdkMessages } : {}),
    ...(opts.advertise !== undefined ? { advertise: opts.advertise } : {}),
    ...(opts.setupTimeoutMs !== undefined ? { setupTimeoutMs: opts.setupTimeoutMs } : {}),
    ...(opts.mode !== undefined ? { mode: opts.mode } : {}),
  });
  return { host, facts, frames };
};

/** Prompts once (generation 1) and closes the host, however the prompt ends; its answer. */
const promptOnce = async (run: Run, promptId: string) => {
  try {
    return await run.host.prompt({ promptId, admissionGeneration: 1, text: 'go' });
  } finally {
    await run.host.close();
  }
};

/** The requests and notifications the client sent the agent, in order. */
const clientMessages = (run: Run) =>
  run.frames
    .filter((f) => f.direction === 'client->agent')
    .map((f) => f.message as { method?: string; params?: unknown })
    .filter((m) => m.method !== undefined);

const agentFrames = (frames: Frame[]) =>
  frames.filter((f) => f.direction === 'agent->client').length;

/** Resolves once `cond` holds, checking after every raw frame; jest's timeout bounds it. */
const until = async (cond: () => boolean): Promise<void> => {
  while (!cond()) await new Promise((r) => setTimeout(r, 10));
};

const E2E = Object.keys(EXPECTED).filter((n) => n !== 'claude-session-load-history');

describe('AgentHost with the replay agent (real child processes, stdio ACP)', () => {
  it.each(E2E)('%s: the host emits the fixture facts', async (fixture) => {
    const recording = loadFixture(fixture);
    // As the worker replays: advertising what the recording's own client advertised, and
    // setting the mode and options it set before its first prompt.
    const run = await startHost(fixture, { advertise: recordedAdvertisement(recording)! });
    try {
      // The client side of the recording, replayed: each prompt goes out when the agent frames
      // that preceded it in the recording have arrived.
      const turns: Promise<unknown>[] = [];
      for (const { after, promptId, admissionGeneration } of recordedPrompts(recording)) {
        await until(() => agentFrames(run.frames) >= after);
        turns.push(run.host.prompt({ promptId, admissionGeneration, text: `prompt ${promptId}` }));
      }
      // A recorded cancel goes out when the agent frames that preceded it have arrived.
      const cancelAt = recording.findIndex(
        (f) => (f.message as { method?: string }).method === 'session/cancel',
      );
      if (cancelAt !== -1) {
        await until(() => agentFrames(run.frames) >= agentFrames(recording.slice(0, cancelAt)));
        await run.host.cancel();
      }
      await Promise.all(turns);
      // Everything the agent recorded, including cycles after the last turn, has been played.
      await until(() => agentFrames(run.frames) >= agentFrames(recording));
    } finally {
      await run.host.close();
    }
    const [started, ...rest] = run.facts;
    const ended = rest.pop();
    expect(started).toMatchObject({ type: 'execution.started', data: { startedAt: NOW } });
    expect(ended).toMatchObject({ type: 'execution.ended', data: { reason: 'completed' } });
    expect(rest).toEqual((EXPECTED[fixture] as FactBody[]).map(atNow));
    run.facts.forEach(assertValidFact);
  });

  it('an agent that answers a v1 initialize in ACP v2 fails the execution, naming the version; no session is read', async () => {
    const facts: FactBody[] = [];
    const { command, args } = replayAgentCommand(fixturePath('claude-v2-initialize'), { pace: 0 });
    await expect(
      AgentHost.start({
        command,
        args,
        sessionCwd: '/tmp',
        clock: () => NOW,
        onFact: (f) => facts.push(f),
      }),
    ).rejects.toThrow();
    expect(facts.map((f) => f.type)).toEqual(['execution.started', 'execution.ended']);
    expect(facts[1]).toMatchObject({
      type: 'execution.ended',
      data: {
        reason: 'failed',
        error:
          'the agent answered initialize with protocolVersion 2; Baton asked for ACP protocol version 1 and speaks no other in this session',
      },
    });
  });

  it('taps every raw line in both directions, including extension messages the SDK would drop', async () => {
    const run = await startHost('claude-subagent-background-raw', { rawSdkMessages: true });
    await promptOnce(run, 'p1');
    const methods = run.frames.map((f) => (f.message as { method?: string }).method);
    expect(methods).toContain('_claude/sdkMessage');
    const newSession = run.frames.find(
      (f) => (f.message as { method?: string }).method === 'session/new',
    );
    expect(newSession?.direction).toBe('client->agent');
    expect(newSession?.message).toMatchObject({
      params: { _meta: { claudeCode: { emitRawSDKMessages: expect.any(Array) } } },
    });
  });

  it("replays the recorded client's session setup, in place of the profile's mode", async () => {
    const recording = loadFixture('codex-real-plain');
    const advertise = recordedAdvertisement(recording)!;
    expect(advertise.setup).toEqual([
      { method: 'session/set_mode', params: { modeId: 'full-access' } },
    ]);
    const run = await startHost('codex-real-plain', { advertise, mode: 'read-only' });
    await promptOnce(run, 'p-SAY-HELLO');
    const sent = clientMessages(run);
    expect(sent.map((m) => m.method)).toEqual([
      'initialize',
      'session/new',
      'session/set_mode',
      'session/prompt',
    ]);
    expect(sent[2]!.params).toEqual({ sessionId: run.host.sessionId, modeId: 'full-access' });
    expect(run.facts.some((f) => f.type === 'turn.ended')).toBe(true);
  });

  it('sets the configured session mode right after session/new, before any prompt', async () => {
    const run = await startHost('claude-real-shell', { rawSdkMessages: true, mode: 'default' });
    await promptOnce(run, 'p-RUN-SHELL');
    const methods = clientMessages(run).map((m) => m.method);
    expect(methods.slice(0, 4)).toEqual([
      'initialize',
      'session/new',
      'session/set_mode',
      'session/prompt',
    ]);
    const setMode = run.frames.find(
      (f) => (f.message as { method?: string }).method === 'session/set_mode',
    );
    expect(setMode?.message).toMatchObject({
      params: { sessionId: run.host.sessionId, modeId: 'default' },
    });
  });

  it('a recording made without a session mode accepts whatever mode the host sets', async () => {
    const run = await startHost('generic-turn', { mode: 'default' });
    expect((await promptOnce(run, 'p1')).stopReason).toBe('end_turn');
  });

  it('a live cancel the recording does not expect answers the open prompt with cancelled', async () => {
    const run = await startHost('claude-subagent-background-plain', { pace: 1 });
    let stop: string;
    try {
      const turn = run.host.prompt({ promptId: 'p1', admissionGeneration: 1, text: 'go' });
      await until(() => run.facts.some((f) => f.type === 'tool.started'));
      await run.host.cancel();
      stop = (await turn).stopReason;
    } finally {
      await run.host.close();
    }
    expect(stop).toBe('cancelled');
    expect(run.facts).toContainEqual({
      type: 'turn.ended',
      data: { admissionGeneration: 1, stopReason: 'cancelled' },
    });
  });

  it('closing the host kills the whole process group, children included', async () => {
    const pidFile = join(mkdtempSync(join(tmpdir(), 'baton-acp-')), 'child.pid');
    const run = await startHost('generic-turn', { spawnChildPidFile: pidFile });
    await until(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8') !== '');
    const childPid = Number(readFileSync(pidFile, 'utf8'));
    expect(alive(run.host.pid)).toBe(true);
    expect(alive(childPid)).toBe(true);
    await run.host.close();
    await until(() => !alive(childPid));
    expect(alive(run.host.pid)).toBe(false);
  });

  it('an agent that crashes mid-turn ends the execution as crashed and fails the prompt', async () => {
    const run = await startHost('generic-turn', { crashAfterFrames: 5 });
    await expect(
      run.host.prompt({ promptId: 'p1', admissionGeneration: 1, text: 'go' }),
    ).rejects.toThrow();
    await run.host.exited;
    expect(run.facts.at(-1)).toMatchObject({
      type: 'execution.ended',
      data: { reason: 'crashed', exitCode: 70 },
    });
    expect(run.facts).toContainEqual({
      type: 'prompt.dispatched',
      data: { promptId: 'p1', admissionGeneration: 1 },
    });
  });

  it('an agent that never answers initialize ends as failed and the host gives up', async () => {
    const facts: FactBody[] = [];
    const { command, args } = replayAgentCommand(fixturePath('generic-turn'), {
      hangOnInitialize: true,
    });
    await expect(
      AgentHost.start({
        command,
        args,
        sessionCwd: '/tmp',
        setupTimeoutMs: 1_000,
        onFact: (f) => facts.push(f),
      }),
    ).rejects.toThrow(/in time/);
    expect(facts.map((f) => f.type)).toEqual(['execution.started', 'execution.ended']);
    expect(facts[1]).toMatchObject({ data: { reason: 'failed' } });
  });

  it('a read gate holds the agent at its pipe: nothing more is read while it is shut, and nothing is lost', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'baton-acp-')), 'long-turn.jsonl');
    writeFileSync(file, longTurn(5_000));
    const play = async (gated: boolean) => {
      const facts: FactBody[] = [];
      let frames = 0;
      let gate: { promise: Promise<void>; open: () => void } | undefined;
      const { command, args } = replayAgentCommand(file, { pace: 0 });
      const host = await AgentHost.start({
        command,
        args,
        sessionCwd: '/tmp',
        clock: () => NOW,
        onFact: (f) => facts.push(f),
        onRawFrame: () => frames++,
        readGate: () => gate?.promise,
      });
      try {
        if (gated) {
          let open!: () => void;
          gate = { promise: new Promise<void>((r) => (open = r)), open };
        }
        const turn = host.prompt({ promptId: 'p1', admissionGeneration: 1, text: 'go' });
        if (gate) {
          const before = frames;
          await until(() => frames > before);
          // Shut: the host has read one chunk of the turn and reads no more, however long it
          // waits (the agent's writes block on the full pipe instead of piling up in memory).
          await new Promise((r) => setTimeout(r, 300));
          const held = frames;
          await new Promise((r) => setTimeout(r, 300));
          expect(frames).toBe(held);
          expect(held).toBeLessThan(5_000);
          const g = gate;
          gate = undefined;
          g.open();
        }
        await turn;
      } finally {
        await host.close();
      }
      return facts;
    };
    const free = await play(false);
    const gated = await play(true);
    expect(gated.length).toBeGreaterThan(5_000);
    expect(gated).toEqual(free);
  });

  it('a prompt that cannot reach the agent is reported as a failed dispatch', async () => {
    const run = await startHost('generic-turn');
    await run.host.close();
    await expect(
      run.host.prompt({ promptId: 'p9', admissionGeneration: 9, text: 'late' }),
    ).rejects.toThrow();
    expect(run.facts).toContainEqual(
      expect.objectContaining({
        type: 'prompt.dispatch_failed',
        data: expect.objectContaining({ promptId: 'p9', admissionGeneration: 9 }),
      }),
    );
  });
});

/** A recording of one turn of `updates` tool frames (~150 bytes each: far more than a pipe holds). */
function longTurn(updates: number): string {
  const at = '2026-11-10T10:00:00.000Z';
  const line = (direction: string, message: unknown) => JSON.stringify({ direction, at, message });
  const lines = [
    line('client->agent', { jsonrpc: '2.0', id: 0, method: 'initialize' }),
    line('agent->client', {
      jsonrpc: '2.0',
      id: 0,
      result: { protocolVersion: 1, agentInfo: { name: 'long-agent', version: '1.0.0' } },
    }),
    line('client->agent', { jsonrpc: '2.0', id: 1, method: 'session/new' }),
    line('agent->client', { jsonrpc: '2.0', id: 1, result: { sessionId: 's' } }),
    line('client->agent', { jsonrpc: '2.0', id: 2, method: 'session/prompt' }),
  ];
  for (let i = 0; i < updates; i++) {
    const update =
      i === 0
        ? {
            sessionUpdate: 'tool_call',
            toolCallId: 't1',
            title: 'Run the suite',
            kind: 'execute',
            status: 'in_progress',
          }
        : {
            sessionUpdate: 'tool_call_update',
            toolCallId: 't1',
            status: i === updates - 1 ? 'completed' : 'in_progress',
            content: [
              {
                type: 'content',
                content: { type: 'text', text: `line ${i} of the suite's output` },
              },
            ],
          };
    lines.push(
      line('agent->client', {
        jsonrpc: '2.0',
        method: 'session/update',
        params: { sessionId: 's', update },
      }),
    );
  }
  lines.push(line('agent->client', { jsonrpc: '2.0', id: 2, result: { stopReason: 'end_turn' } }));
  return lines.join('\n') + '\n';
}

/** A zombie (exited, not yet reaped) counts as dead. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

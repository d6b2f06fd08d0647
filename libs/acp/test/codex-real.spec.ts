import {
  foregroundActivity,
  liveRegistrations,
  sessionActivity,
  sessionView,
} from '@baton/activity';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { clientAdvertisement, type ClientProfileOptions } from '../src';
import {
  CODEX_ACP_VERSION,
  findCodexInstall,
  offlineCodexEnv,
  writeOfflineCodexConfig,
  type CodexInstall,
} from './support/codex-acp';
import { OfflineSession, type OfflineRun } from './support/offline-session';
import {
  startScriptedResponsesServer,
  type ResponsesItem,
  type ResponsesTurn,
} from './support/scripted-responses-server';
import { CHILD_TASK, say, subagentTurns } from './support/scripted-script';
import {
  describeWhereInstalled,
  expectNegotiated,
  expectSettled,
  toolDone,
  toolStarted,
  turnEnded,
  waitForFile,
} from './support/real-session';

/**
 * The real codex-acp 0.16.0 adapter (Codex 0.137 inside), fully offline: the model is a scripted
 * OpenAI Responses API on 127.0.0.1 (support/scripted-responses-server.ts), HOME and CODEX_HOME
 * are private, the provider needs no login, and the tools really run (exec_command in a real
 * shell, spawn_agent children with their own model conversations). AgentHost hosts the adapter
 * as a worker would (session mode `full-access`: this machine has no bubblewrap for Codex's
 * sandbox) and its facts are folded by @baton/activity with `decide` after each one.
 *
 * The adapter is a pinned devDependency: its platform package brings the binary, so this runs in
 * every CI run on linux-x64; it is skipped, with the reason, only on a platform the adapter ships
 * no binary for.
 * BATON_RECORD_CODEX_FIXTURES=1 rewrites fixtures/codex-real-*.jsonl from these runs; what each
 * must show is checked on the recordings in codex-real-recordings.spec.ts (offline, in CI).
 */

const install = findCodexInstall();

jest.setTimeout(120_000);

/**
 * `yield_time_ms` at its maximum by default: the call returns when the command exits (well
 * before). With a short yield, a command still running is left to run as a unified-exec process
 * and the call returns "Process running with session ID …".
 */
const exec = (cmd: string, yieldMs = 30_000): ResponsesItem => ({
  type: 'function_call',
  name: 'exec_command',
  arguments: { cmd, yield_time_ms: yieldMs },
});
const MULTI_AGENT = 'multi_agent_v1';
const agentIdOf = (output: string | undefined): string => {
  const id = (JSON.parse(output ?? '{}') as { agent_id?: unknown }).agent_id;
  if (typeof id !== 'string') throw new Error(`spawn_agent returned no agent_id: ${output}`);
  return id;
};

const SCRIPTS = {
  plain: [{ name: 'answer', when: { last: 'SAY-HELLO' }, reply: say('Hello from the script.') }],
  exec: [
    {
      name: 'run command',
      when: { last: 'RUN-EXEC' },
      reply: [exec(`${waitForFile('release-exec')}; echo hello`)],
    },
    { name: 'command done', when: { afterTool: 'exec_command' }, reply: say('It printed hello.') },
  ],
  longExec: [
    {
      name: 'start long command',
      when: { last: 'RUN-LONG' },
      reply: [exec(`${waitForFile('release-long')}; echo late > long-done`, 250)],
    },
    {
      name: 'left running',
      when: { afterTool: 'exec_command' },
      reply: say('It keeps running in the background.'),
    },
    { name: 'second prompt', when: { last: 'SECOND' }, reply: say('Second answer.') },
  ],
  subagent: [
    // The child's own conversation starts with the task spawn_agent gave it.
    ...subagentTurns(exec, 'exec_command', {
      type: 'function_call',
      name: 'spawn_agent',
      namespace: MULTI_AGENT,
      arguments: { message: CHILD_TASK },
    }),
    {
      name: 'wait for child',
      when: { afterTool: 'spawn_agent' },
      reply: (r) => [
        {
          type: 'function_call',
          name: 'wait_agent',
          namespace: MULTI_AGENT,
          arguments: { targets: [agentIdOf(r.lastToolOutput)], timeout_ms: 60_000 },
        },
      ],
    },
    {
      name: 'child finished',
      when: { afterTool: 'wait_agent' },
      reply: say('The child finished.'),
    },
    {
      name: 'notification',
      when: { last: '<subagent_notification>' },
      reply: say('Noted.'),
      repeat: true,
    },
  ],
} satisfies Record<string, ResponsesTurn[]>;
type Scenario = keyof typeof SCRIPTS;

const CLIENT_PROFILES = {
  plain: {},
  terminal: { terminalOutput: true },
} satisfies Record<string, ClientProfileOptions>;
type ClientProfile = keyof typeof CLIENT_PROFILES;

export const codexFixtureName = (profile: ClientProfile, scenario: Scenario): string =>
  profile === 'plain' ? `codex-real-${scenario}` : `codex-real-${profile}-${scenario}`;

/** The scenario's run: codex-acp with a private CODEX_HOME, against the scripted Responses API. */
const codexRun = (scenario: Scenario, profile: ClientProfile, codex: CodexInstall): OfflineRun => ({
  agent: 'codex',
  scenario,
  fixture: codexFixtureName(profile, scenario),
  record: process.env.BATON_RECORD_CODEX_FIXTURES === '1',
  startServer: (options) => startScriptedResponsesServer({ script: SCRIPTS[scenario], ...options }),
  configure: (home, server) => {
    writeOfflineCodexConfig(join(home, '.codex'), server.url);
    return {
      command: codex.binary,
      args: [],
      env: offlineCodexEnv(home),
      advertise: clientAdvertisement(CLIENT_PROFILES[profile]),
      mode: 'full-access',
    };
  },
  scrubRewrite: () => {
    const processes = new Map<string, string>();
    return (message, at) => scrubCodexTool(message, at, processes);
  },
});

/**
 * Codex's exec cards carry clock readings and a process id: rebased on the frame's time and named
 * by order of appearance, so a re-recording differs only where the traffic does.
 */
const scrubCodexTool = (
  message: Record<string, unknown>,
  at: string,
  processes: Map<string, string>,
): void => {
  const update = (message.params as { update?: Record<string, unknown> } | undefined)?.update;
  for (const key of ['rawInput', 'rawOutput'] as const) {
    const raw = update?.[key] as Record<string, unknown> | undefined;
    if (raw === undefined || typeof raw !== 'object') continue;
    for (const f of ['started_at_ms', 'completed_at_ms'])
      if (typeof raw[f] === 'number') raw[f] = Date.parse(at);
    if (typeof raw.process_id === 'string') {
      const known = processes.get(raw.process_id) ?? `proc${processes.size + 1}`;
      processes.set(raw.process_id, known);
      raw.process_id = known;
    }
    if (raw.duration !== undefined) raw.duration = { secs: 0, nanos: 0 };
  }
};

const describeReal = describeWhereInstalled(install, 'codex-real.spec');

/** Whether the agent told the client that tool call `id` completed. */
function agentCompleted(s: OfflineSession, id: string): boolean {
  return s.frames.some((f) => {
    const u = (f.message as { params?: { update?: Record<string, unknown> } }).params?.update;
    return (
      u?.sessionUpdate === 'tool_call_update' && u.toolCallId === id && u.status === 'completed'
    );
  });
}

describeReal(`codex-acp ${CODEX_ACP_VERSION}, offline against a scripted Responses API`, () => {
  const codex = install as CodexInstall;
  let s: OfflineSession | undefined;

  afterEach(async () => {
    await s?.dispose();
    s = undefined;
  });

  const cases = (['plain', 'terminal'] as const).flatMap((profile) =>
    (Object.keys(SCRIPTS) as Scenario[]).map((scenario) => [profile, scenario] as const),
  );

  it.each(cases)('%s profile, %s', async (profile, scenario) => {
    s = await OfflineSession.start(codexRun(scenario, profile, codex));
    const session = s;
    expectNegotiated(s, { name: 'codex-acp', version: CODEX_ACP_VERSION }, 'codex');
    const prompt = {
      plain: 'SAY-HELLO',
      exec: 'RUN-EXEC',
      longExec: 'RUN-LONG',
      subagent: 'RUN-AGENT',
    }[scenario];
    s.submit(prompt);
    /** The adapter ended the turn without the command's completion (exec, below). */
    let completionOmitted = false;

    if (scenario === 'exec') {
      // The command runs in the foreground: a tool of the turn, never background work.
      await s.until('the command to start', () => session.has(toolStarted));
      expect(sessionActivity(s.session())).toMatchObject({ state: 'running' });
      expect(foregroundActivity(s.session())).toBe('generating');
      s.release('release-exec');
      // codex-acp 0.16.0 does not always send the completion of a command that exits at once
      // (its card's last update carries no status): then the turn's end is what retires it.
      await s.until(
        'the command to complete, or the turn to end',
        () => session.has(toolDone) || session.has(turnEnded(1)),
      );
      if (agentCompleted(s, 'call_scripted1')) {
        await s.until('the command to complete', () => session.has(toolDone));
      } else {
        completionOmitted = true;
        expect(s.has(toolDone)).toBe(false);
        await s.until('the turn to end', () => session.has(turnEnded(1)));
        // Nothing is shown running after its end: the session is promptable, not generating.
        expect(sessionActivity(s.session())).toMatchObject({ state: 'waiting_for_input' });
        expect(foregroundActivity(s.session())).not.toBe('generating');
      }
    }
    if (scenario === 'subagent') {
      // The child runs its own command; nothing of it reaches the ACP client: the parent's turn
      // (waiting in wait_agent) is all Baton can show.
      await s.until('the child to run its command', () =>
        session.server.used.includes('child: command'),
      );
      expect(s.has(toolStarted)).toBe(false);
      expect(liveRegistrations(s.session())).toEqual([]);
      expect(sessionActivity(s.session())).toMatchObject({ state: 'running' });
      s.release('release-agent');
    }
    await s.until('the turn to end', () => session.has(turnEnded(1)));
    if (scenario === 'longExec') {
      // The turn ended with the command still running and its card still in progress; the
      // session is promptable. The process then exits: the adapter says nothing of it.
      expect(s.has(toolStarted)).toBe(true);
      expect(s.has(toolDone)).toBe(false);
      expect(sessionActivity(s.session())).toMatchObject({ state: 'waiting_for_input' });
      s.release('release-long');
      await s.until('the process to exit', () => existsSync(join(session.work, 'long-done')));
      await new Promise((r) => setTimeout(r, 1_500));
      expect(s.has(toolDone)).toBe(false);
      s.submit('SECOND');
      await s.until('the second turn to end', () => session.has(turnEnded(2)));
      expect(s.has(toolDone)).toBe(false);
      // Registered at the first turn's end, shown possibly finished, never ended.
      expect(liveRegistrations(s.session()).map((r) => r.work.kind)).toEqual(['shell']);
      expect(sessionView(s.session()).backgroundWork).toEqual([
        expect.objectContaining({ kind: 'shell', possiblyFinished: true }),
      ]);
      // Nothing possibly finished is known to run: the headline claims no background work.
      expect(sessionActivity(s.session())).toMatchObject({
        state: 'waiting_for_input',
        foregroundActivity: null,
      });
    }
    await s.finish();

    // The host's close ended the execution: nothing is left registered.
    expectSettled(s);
    // A card the turn ended with still open is registered as a shell that may have finished.
    if (scenario !== 'longExec' && !completionOmitted)
      expect(s.facts.filter((f) => f.type.startsWith('background.'))).toEqual([]);
    if (scenario === 'subagent')
      expect(s.server.used).toEqual(
        expect.arrayContaining([
          'spawn child',
          'child: command',
          'child: report',
          'wait for child',
          'child finished',
        ]),
      );
  });
});

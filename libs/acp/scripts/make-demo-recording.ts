/**
 * Writes the demo recordings, Claude sessions in the frames of claude-agent-acp 0.101.0 (as in
 * fixtures/claude-real-shell.jsonl and claude-real-all.jsonl, raw task messages on):
 *
 * - fixtures/demo-claude.jsonl (the tests' steady story): three prompts; each turn generates for
 *   a few seconds, starts a background shell and ends while the shell runs on for a few more
 *   seconds, so a newcomer sees generating → background → idle, and prompts queueing and draining.
 * - fixtures/demo-busy-claude.jsonl (what the one-process run's demo plays): a varied history.
 *   Turn 1 starts two background shells at once (tests and lint, the lint ends first); turn 2 starts
 *   a background subagent while the tests still run (a shell and a subagent at once); turn 3
 *   generates for a long time, long enough for the demo to cancel it (a live cancel the recording
 *   does not expect ends the turn `cancelled`, see docs/recordings.md).
 *
 *   npx tsx libs/acp/scripts/make-demo-recording.ts
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const SESSION = 'sess-demo';
const TURNS = 3;
const start = Date.parse('2026-11-30T09:00:00.000Z');
let lines: string[] = [];
let clock = start;
let id = 0;

const at = (ms: number) => new Date((clock += ms)).toISOString();
const agent = (ms: number, message: object) =>
  lines.push(JSON.stringify({ direction: 'agent->client', at: at(ms), message }));
const client = (ms: number, message: object) =>
  lines.push(JSON.stringify({ direction: 'client->agent', at: at(ms), message }));
const update = (ms: number, u: object) =>
  agent(ms, {
    jsonrpc: '2.0',
    method: 'session/update',
    params: { sessionId: SESSION, update: u },
  });
const sdk = (ms: number, message: object) =>
  agent(ms, {
    jsonrpc: '2.0',
    method: '_claude/sdkMessage',
    params: { sessionId: SESSION, message: { ...message, session_id: SESSION } },
  });
const usage = (ms: number, origin?: object) =>
  update(ms, {
    sessionUpdate: 'usage_update',
    used: 110,
    size: 1_000_000,
    _meta: { ...(origin ? { '_claude/origin': origin } : {}), '_claude/model': 'claude-demo' },
  });
const say = (ms: number, text: string, messageId: string) =>
  update(ms, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text }, messageId });

/** The handshake: `initialize`, then `session/new` asking for the raw task messages. */
function handshake(): void {
  client(0, {
    jsonrpc: '2.0',
    id: id,
    method: 'initialize',
    params: {
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    },
  });
  agent(40, {
    jsonrpc: '2.0',
    id: id++,
    result: {
      protocolVersion: 1,
      agentCapabilities: {
        _meta: { claudeCode: { promptQueueing: true } },
        promptCapabilities: { image: true, embeddedContext: true },
        loadSession: true,
      },
      authMethods: [],
      agentInfo: {
        name: '@agentclientprotocol/claude-agent-acp',
        title: 'Claude Agent',
        version: '0.101.0',
      },
    },
  });
  client(10, {
    jsonrpc: '2.0',
    id: id,
    method: 'session/new',
    params: {
      cwd: '/work/demo',
      mcpServers: [],
      _meta: {
        claudeCode: {
          emitRawSDKMessages: [
            { type: 'system', subtype: 'task_started' },
            { type: 'system', subtype: 'task_updated' },
            { type: 'system', subtype: 'task_notification' },
          ],
        },
      },
    },
  });
  agent(200, { jsonrpc: '2.0', id: id++, result: { sessionId: SESSION } });
}

/** A recording starts from the same clock and request ids every time. */
function begin(): void {
  lines = [];
  clock = start;
  id = 0;
  handshake();
}

function write(name: string): void {
  writeFileSync(join(__dirname, '..', 'fixtures', name), `${lines.join('\n')}\n`);
  console.log(`${name}: wrote ${lines.length} frames`);
}

/** A prompt from the client; returns its request id, which the turn's end answers. */
const prompt = (ms: number, text: string): number => {
  const request = id++;
  client(ms, {
    jsonrpc: '2.0',
    id: request,
    method: 'session/prompt',
    params: { sessionId: SESSION, prompt: [{ type: 'text', text }] },
  });
  return request;
};
const endTurn = (ms: number, request: number) =>
  agent(ms, {
    jsonrpc: '2.0',
    id: request,
    result: {
      stopReason: 'end_turn',
      usage: { inputTokens: 200, outputTokens: 40, totalTokens: 240 },
    },
  });
/** A message streamed a word a chunk. */
const words = (text: string, messageId: string, every = 220) => {
  for (const [i, w] of text.split(' ').entries()) say(i === 0 ? 100 : every, `${w} `, messageId);
};

/** The names one piece of background work goes by, and where its raw messages' uuids come from. */
interface Background {
  tool: string;
  task: string;
  run: string;
  uuid: () => string;
}
const background = (recording: string, n: string, uuid: () => string): Background => ({
  tool: `toolu_${recording}_${n}`,
  task: `task_${recording}_${n}`,
  run: `run_${recording}_${n}`,
  uuid,
});

/** A Bash run in the background: its tool call, `task_started`, and the launch's answer. */
const shell = (work: Background, command: string, description: string) => {
  const { tool, task } = work;
  update(200, {
    _meta: { claudeCode: { toolName: 'Bash' } },
    toolCallId: tool,
    sessionUpdate: 'tool_call',
    rawInput: {},
    status: 'pending',
    title: 'Terminal',
    kind: 'execute',
    content: [],
  });
  update(20, {
    _meta: { claudeCode: { toolName: 'Bash' } },
    toolCallId: tool,
    sessionUpdate: 'tool_call_update',
    rawInput: { command, description, run_in_background: true },
    title: command,
    kind: 'execute',
  });
  sdk(60, {
    type: 'system',
    subtype: 'task_started',
    task_id: task,
    run_id: work.run,
    tool_use_id: tool,
    description,
    is_backgrounded: true,
    task_type: 'local_bash',
    uuid: work.uuid(),
  });
  update(30, {
    _meta: {
      claudeCode: {
        toolResponse: {
          stdout: '',
          stderr: '',
          interrupted: false,
          isImage: false,
          noOutputExpected: false,
          backgroundTaskId: task,
        },
        toolName: 'Bash',
      },
    },
    toolCallId: tool,
    sessionUpdate: 'tool_call_update',
  });
  update(5, {
    _meta: { claudeCode: { toolName: 'Bash' } },
    toolCallId: tool,
    sessionUpdate: 'tool_call_update',
    status: 'completed',
    rawOutput: `Command running in background with ID: ${task}.`,
  });
};

/** Background work ends: `task_updated` completed (at `endTime`), then its `task_notification`. */
const completed = (ms: number, work: Background, summary: string, endTime: number) => {
  sdk(ms, {
    type: 'system',
    subtype: 'task_updated',
    task_id: work.task,
    run_id: work.run,
    patch: { status: 'completed', end_time: endTime },
    uuid: work.uuid(),
  });
  sdk(5, {
    type: 'system',
    subtype: 'task_notification',
    task_id: work.task,
    run_id: work.run,
    tool_use_id: work.tool,
    status: 'completed',
    summary,
    uuid: work.uuid(),
  });
};

begin();
for (let turn = 1; turn <= TURNS; turn++) {
  let uuid = 0;
  const tests = background('demo', `${turn}`, () => `uuid-demo-${turn}-${++uuid}`);
  const request = prompt(10, `demo prompt ${turn}`);
  usage(300);
  words(
    `Step ${turn}: reading the code, planning the change and writing it down as I go.`,
    `msg_${turn}_a`,
  );
  shell(tests, `npm test -- step-${turn}`, `Run the tests of step ${turn}`);
  say(300, 'The tests run in the background; I will report when they finish.', `msg_${turn}_b`);
  usage(100, { kind: 'human' });
  endTurn(10, request);
  // The shell runs on after the turn: the session is idle in the foreground, busy in the background.
  completed(
    6_000,
    tests,
    `Background command "Run the tests of step ${turn}" completed (exit code 0)`,
    clock,
  );
  usage(50);
  say(300, 'The tests passed.', `msg_${turn}_c`);
  usage(200, { kind: 'task-notification', producer: 'session-task', runId: tests.run });
}
write('demo-claude.jsonl');

// ---------------------------------------------------------------------------------------------
// demo-busy-claude.jsonl: overlapping background work, and a long turn to cancel.

let uuid = 0;
const busy = (n: string) => background('busy', n, () => `uuid-busy-${++uuid}`);
/** An Agent run in the background (a subagent), as claude-real-all.jsonl launches one. */
const subagent = (n: string, description: string, task: string) => {
  const work = busy(n);
  const { tool } = work;
  update(200, {
    _meta: { claudeCode: { toolName: 'Agent' } },
    toolCallId: tool,
    sessionUpdate: 'tool_call',
    name: 'Agent',
    rawInput: {},
    status: 'pending',
    title: 'Task',
    kind: 'think',
    content: [],
  });
  update(20, {
    _meta: { claudeCode: { toolName: 'Agent' } },
    toolCallId: tool,
    sessionUpdate: 'tool_call_update',
    rawInput: {
      description,
      prompt: task,
      subagent_type: 'general-purpose',
      run_in_background: true,
    },
    title: description,
  });
  sdk(30, {
    type: 'system',
    subtype: 'task_started',
    task_id: work.task,
    run_id: work.run,
    tool_use_id: tool,
    description,
    subagent_type: 'general-purpose',
    is_backgrounded: true,
    spawn_depth: 1,
    task_type: 'local_agent',
    prompt: task,
    uuid: work.uuid(),
  });
  update(15, {
    _meta: {
      claudeCode: {
        toolResponse: {
          isAsync: true,
          status: 'async_launched',
          agentId: work.task,
          description,
          resolvedModel: 'claude-demo',
          prompt: task,
        },
        toolName: 'Agent',
      },
    },
    toolCallId: tool,
    sessionUpdate: 'tool_call_update',
  });
  update(50, {
    _meta: { claudeCode: { toolName: 'Agent' } },
    toolCallId: tool,
    sessionUpdate: 'tool_call_update',
    status: 'completed',
    rawOutput: [
      { type: 'text', text: `Async agent launched successfully.\nagentId: ${work.task}` },
    ],
  });
};
/** Background work of the busy recording ends, and the agent is woken by its notification. */
const ended = (ms: number, n: string, summary: string) => {
  const work = busy(n);
  completed(ms, work, summary, clock + ms);
  usage(50, { kind: 'task-notification', producer: 'session-task', runId: work.run });
};

begin();
// Turn 1: two background shells at once; the lint ends first, the tests run on into turn 2.
const first = prompt(10, 'demo prompt 1');
usage(300);
words('Reading the code and planning the change.', 'msg_busy_1a');
shell(busy('tests'), 'npm test', 'Run the tests');
say(250, 'The tests run; meanwhile the linter.', 'msg_busy_1b');
shell(busy('lint'), 'npm run lint', 'Lint the change');
say(300, 'Both run in the background; I will report when they finish.', 'msg_busy_1c');
usage(100, { kind: 'human' });
endTurn(10, first);
ended(4_000, 'lint', 'Background command "Lint the change" completed (exit code 0)');
say(300, 'The lint is clean.', 'msg_busy_1d');
// Turn 2 (queued behind turn 1): a background subagent while the tests still run.
const second = prompt(10, 'demo prompt 2');
usage(300);
words('Asking a subagent to review the diff while the tests run.', 'msg_busy_2a');
subagent('review', 'Review the diff', 'Review the change for mistakes and report');
say(300, 'The review runs in the background.', 'msg_busy_2b');
usage(100, { kind: 'human' });
endTurn(10, second);
ended(4_000, 'tests', 'Background command "Run the tests" completed (exit code 0)');
say(300, 'The tests passed.', 'msg_busy_2c');
ended(4_000, 'review', 'The diff looks right; no mistakes found.');
say(300, 'The review found nothing to fix.', 'msg_busy_2d');
// Turn 3: a long answer, long enough to be cancelled while it generates.
const third = prompt(10, 'demo prompt 3');
usage(300);
words(
  'Writing the release notes: every change of this session, why it was made, what it touches, ' +
    'how it was tested, and what a reviewer should look at first, one paragraph each, with the ' +
    'commands to try it out and the risks I see, so that a person reading them later knows what ' +
    'happened and why, without reading the whole diff again.',
  'msg_busy_3a',
  300,
);
usage(100, { kind: 'human' });
endTurn(10, third);
write('demo-busy-claude.jsonl');

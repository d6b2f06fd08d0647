/**
 * Writes fixtures/demo-claude.jsonl, the recording the one-process run's demo plays: a Claude
 * session (the frames of claude-agent-acp 0.101.0, as in fixtures/claude-real-shell.jsonl) that
 * takes three prompts; each turn generates for a few seconds, starts a background shell and
 * ends while the shell runs on for a few more seconds, so a newcomer sees generating →
 * background → idle, and prompts queueing and draining.
 *
 *   npx tsx libs/acp/scripts/make-demo-recording.ts
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const SESSION = 'sess-demo';
const TURNS = 3;
const start = Date.parse('2026-11-30T09:00:00.000Z');
const lines: string[] = [];
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

for (let turn = 1; turn <= TURNS; turn++) {
  const promptRequest = id++;
  const tool = `toolu_demo_${turn}`;
  const task = `task_demo_${turn}`;
  client(10, {
    jsonrpc: '2.0',
    id: promptRequest,
    method: 'session/prompt',
    params: { sessionId: SESSION, prompt: [{ type: 'text', text: `demo prompt ${turn}` }] },
  });
  usage(300);
  const words =
    `Step ${turn}: reading the code, planning the change and writing it down as I go.`.split(' ');
  for (const [i, w] of words.entries()) say(i === 0 ? 100 : 220, `${w} `, `msg_${turn}_a`);
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
    rawInput: {
      command: `npm test -- step-${turn}`,
      description: `Run the tests of step ${turn}`,
      run_in_background: true,
    },
    title: `npm test -- step-${turn}`,
    kind: 'execute',
  });
  sdk(60, {
    type: 'system',
    subtype: 'task_started',
    task_id: task,
    run_id: `run_demo_${turn}`,
    tool_use_id: tool,
    description: `Run the tests of step ${turn}`,
    is_backgrounded: true,
    task_type: 'local_bash',
    uuid: `uuid-demo-${turn}-1`,
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
  say(300, 'The tests run in the background; I will report when they finish.', `msg_${turn}_b`);
  usage(100, { kind: 'human' });
  agent(10, {
    jsonrpc: '2.0',
    id: promptRequest,
    result: {
      stopReason: 'end_turn',
      usage: { inputTokens: 200, outputTokens: 40, totalTokens: 240 },
    },
  });
  // The shell runs on after the turn: the session is idle in the foreground, busy in the background.
  sdk(6_000, {
    type: 'system',
    subtype: 'task_updated',
    task_id: task,
    run_id: `run_demo_${turn}`,
    patch: { status: 'completed', end_time: clock },
    uuid: `uuid-demo-${turn}-2`,
  });
  sdk(5, {
    type: 'system',
    subtype: 'task_notification',
    task_id: task,
    run_id: `run_demo_${turn}`,
    tool_use_id: tool,
    status: 'completed',
    summary: `Background command "Run the tests of step ${turn}" completed (exit code 0)`,
    uuid: `uuid-demo-${turn}-3`,
  });
  usage(50);
  say(300, 'The tests passed.', `msg_${turn}_c`);
  usage(200, { kind: 'task-notification', producer: 'session-task', runId: `run_demo_${turn}` });
}

writeFileSync(join(__dirname, '..', 'fixtures', 'demo-claude.jsonl'), `${lines.join('\n')}\n`);
console.log(`wrote ${lines.length} frames`);

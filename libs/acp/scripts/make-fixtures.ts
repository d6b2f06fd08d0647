/**
 * Writes libs/acp/fixtures/*.jsonl: frame recordings reconstructed from
 * shared/reference/acp-traffic.md ("Lifecycle signals per adapter" and the reconstructed frames of
 * §2.12 and §3.5). Shapes follow the reference verbatim; ids, texts and times are illustrative.
 * Authoring them as data keeps ids and timestamps consistent; the JSONL files are what tests and
 * the replay agent read. Run: npx tsx libs/acp/scripts/make-fixtures.ts
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

type Direction = 'agent->client' | 'client->agent';
interface Line {
  direction: Direction;
  at: string;
  message: unknown;
}

const SESSION = 'sess-1';
const START = Date.parse('2026-11-10T10:00:00.000Z');

class Recording {
  readonly lines: Line[] = [];
  private t = START;
  private nextId = 0;

  private push(direction: Direction, message: unknown, gapMs = 20): void {
    this.t += gapMs;
    this.lines.push({ direction, at: new Date(this.t).toISOString(), message });
  }

  client(message: unknown, gapMs?: number) {
    this.push('client->agent', { jsonrpc: '2.0', ...(message as object) }, gapMs);
    return this;
  }

  agent(message: unknown, gapMs?: number) {
    this.push('agent->client', { jsonrpc: '2.0', ...(message as object) }, gapMs);
    return this;
  }

  initialize(agentInfo: object, agentCapabilities: object = {}) {
    const id = this.nextId++;
    this.client({
      id,
      method: 'initialize',
      params: {
        protocolVersion: 1,
        clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
        clientInfo: { name: 'baton', version: '0.1.0' },
      },
    });
    return this.agent({
      id,
      result: { protocolVersion: 1, agentCapabilities, authMethods: [], agentInfo },
    });
  }

  session(meta?: object, method = 'session/new') {
    const id = this.nextId++;
    this.client({
      id,
      method,
      params: {
        ...(method === 'session/new' ? {} : { sessionId: SESSION }),
        cwd: '/home/dev/repo',
        mcpServers: [],
        ...(meta ? { _meta: meta } : {}),
      },
    });
    return id;
  }

  sessionAnswer(id: number, result: object = { sessionId: SESSION }) {
    return this.agent({ id, result });
  }

  /** Returns the JSON-RPC id, to answer it later (prompts may be held open and overlap). */
  prompt(admissionGeneration: number, text: string) {
    const id = this.nextId++;
    this.client({
      id,
      method: 'session/prompt',
      params: {
        sessionId: SESSION,
        prompt: [{ type: 'text', text }],
        _meta: { baton: { promptId: `p${admissionGeneration}`, admissionGeneration } },
      },
    });
    return id;
  }

  stop(id: number, stopReason = 'end_turn') {
    return this.agent({
      id,
      result: {
        stopReason,
        usage: { totalTokens: 0, inputTokens: 0, outputTokens: 0 },
        _meta: { quota: { token_count: {}, model_usage: [] } },
      },
    });
  }

  cancel() {
    return this.client({ method: 'session/cancel', params: { sessionId: SESSION } });
  }

  update(update: object) {
    return this.agent({ method: 'session/update', params: { sessionId: SESSION, update } });
  }

  text(text: string, extra: object = {}) {
    return this.update({
      sessionUpdate: 'agent_message_chunk',
      messageId: 'msg',
      content: { type: 'text', text },
      ...extra,
    });
  }

  thought(text: string) {
    return this.update({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text } });
  }

  sdk(message: object) {
    return this.agent({
      method: '_claude/sdkMessage',
      params: { sessionId: SESSION, message: { session_id: 'cli-1', uuid: 'u', ...message } },
    });
  }

  /** The `usage_update` sent at each SDK result, stamped with the cycle's origin. */
  usage(origin?: string) {
    return this.update({
      sessionUpdate: 'usage_update',
      used: 52632,
      size: 200000,
      cost: { amount: 3.17, currency: 'USD' },
      _meta: {
        '_claude/model': 'claude-sonnet-4-6',
        ...(origin ? { '_claude/origin': { kind: origin } } : {}),
      },
    });
  }

  permission(toolCallId: string, title: string) {
    const id = `perm-${toolCallId}`;
    this.agent({
      id,
      method: 'session/request_permission',
      params: {
        sessionId: SESSION,
        toolCall: { toolCallId, title },
        options: [
          { optionId: 'allow', name: 'Allow', kind: 'allow_once' },
          { optionId: 'reject', name: 'Reject', kind: 'reject_once' },
        ],
      },
    });
    return this.client({ id, result: { outcome: { outcome: 'selected', optionId: 'allow' } } });
  }

  toJsonl(): string {
    return this.lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
  }
}

// ---- Claude (claude-agent-acp 0.101.0, plain v1 client) -------------------------------------

const CLAUDE_INFO = {
  name: '@agentclientprotocol/claude-agent-acp',
  title: 'Claude Agent',
  version: '0.101.0',
};
const CLAUDE_CAPS = {
  loadSession: true,
  promptCapabilities: { image: true, embeddedContext: true },
  mcpCapabilities: { http: true, sse: true },
  _meta: { claudeCode: { promptQueueing: true } },
};
const RAW_OPT_IN = {
  claudeCode: {
    emitRawSDKMessages: [
      { type: 'system', subtype: 'task_started' },
      { type: 'system', subtype: 'task_notification' },
      { type: 'system', subtype: 'task_updated' },
      { type: 'system', subtype: 'background_tasks_changed' },
    ],
  },
};

const cc = (toolName: string, extra: object = {}) => ({
  _meta: { claudeCode: { toolName, ...extra } },
});

/**
 * How claude-agent-acp opens every tool call: a pending card, its input still empty. `tail` ends
 * it (the tool's `_meta` unless told).
 */
const pendingCard = (
  toolCallId: string,
  name: string,
  title: string,
  kind: string,
  tail: object = cc(name),
) => ({
  sessionUpdate: 'tool_call',
  toolCallId,
  name,
  title,
  kind,
  status: 'pending',
  rawInput: {},
  content: [],
  ...tail,
});

const claude = (raw: boolean) => {
  const r = new Recording().initialize(CLAUDE_INFO, CLAUDE_CAPS);
  r.sessionAnswer(r.session(raw ? RAW_OPT_IN : undefined));
  return r;
};

/** §2.12 background subagent launch: pending card, refinement, async result, hook response. */
const launchBackgroundAgent = (r: Recording, id: string, agentId: string) =>
  r
    .update(pendingCard(id, 'Agent', 'Task', 'think'))
    .update({
      sessionUpdate: 'tool_call_update',
      toolCallId: id,
      title: 'Background review',
      rawInput: {
        description: 'Background review',
        prompt: 'Review the diff',
        subagent_type: 'general-purpose',
        run_in_background: true,
      },
      ...cc('Agent'),
    })
    .update({
      sessionUpdate: 'tool_call_update',
      toolCallId: id,
      status: 'completed',
      content: [
        { type: 'content', content: { type: 'text', text: 'Async agent launched successfully.' } },
      ],
      rawOutput: `Async agent launched successfully.\nagentId: ${agentId} (use SendMessage to continue)`,
      ...cc('Agent'),
    })
    .update({
      sessionUpdate: 'tool_call_update',
      toolCallId: id,
      ...cc('Agent', {
        toolResponse: {
          status: 'async_launched',
          isAsync: true,
          agentId,
          description: 'Background review',
          prompt: 'Review the diff',
          outputFile: `/tmp/tasks/${agentId}.output`,
        },
      }),
    });

/** §2.12 child work of a subagent: a child tool call and a child message, both stamped. */
const childWork = (r: Recording, parent: string, readId: string) =>
  r
    .update(
      pendingCard(readId, 'Read', 'Read File', 'read', {
        locations: [],
        ...cc('Read', { parentToolUseId: parent }),
      }),
    )
    .text('Reviewing now.', { _meta: { claudeCode: { parentToolUseId: parent } } })
    .update({
      sessionUpdate: 'tool_call_update',
      toolCallId: readId,
      status: 'completed',
      ...cc('Read', { parentToolUseId: parent }),
    });

const fixtures: Record<string, Recording> = {};

fixtures['claude-subagent-foreground'] = (() => {
  const r = claude(false);
  const p = r.prompt(1, 'Review the diff with a subagent');
  r.text('Starting a review subagent.')
    .update(pendingCard('toolu_F', 'Agent', 'Task', 'think'))
    .update({
      sessionUpdate: 'tool_call_update',
      toolCallId: 'toolu_F',
      title: 'Review',
      rawInput: {
        description: 'Review',
        prompt: 'Review the diff',
        subagent_type: 'general-purpose',
      },
      ...cc('Agent'),
    });
  childWork(r, 'toolu_F', 'toolu_R1');
  // 0.60 sends a child's PostToolUse hook update without the lineage stamp: no reclassification.
  r.update({
    sessionUpdate: 'tool_call_update',
    toolCallId: 'toolu_R1',
    ...cc('Read', { toolResponse: { type: 'text', file: { filePath: '/home/dev/repo/a.ts' } } }),
  })
    .update({
      sessionUpdate: 'tool_call_update',
      toolCallId: 'toolu_F',
      status: 'in_progress',
      ...cc('Agent', { toolResponse: { elapsedTimeSeconds: 5, subagentType: 'general-purpose' } }),
    })
    .update({
      sessionUpdate: 'tool_call_update',
      toolCallId: 'toolu_F',
      status: 'completed',
      content: [{ type: 'content', content: { type: 'text', text: 'Looks good.' } }],
      rawOutput: 'Looks good.\nagentId: a1 (use SendMessage to continue)',
      ...cc('Agent'),
    })
    .update({
      sessionUpdate: 'tool_call_update',
      toolCallId: 'toolu_F',
      ...cc('Agent', {
        toolResponse: {
          status: 'completed',
          agentId: 'a1',
          totalDurationMs: 5000,
          totalTokens: 900,
        },
      }),
    })
    .text('The review found nothing.')
    .usage('human')
    .stop(p);
  return r;
})();

const backgroundSubagent = (raw: boolean) => {
  const r = claude(raw);
  const p = r.prompt(1, 'Review in the background');
  launchBackgroundAgent(r, 'toolu_A', 'a2');
  if (raw) {
    r.sdk({
      type: 'system',
      subtype: 'task_started',
      task_id: 'a2',
      task_type: 'local_agent',
      description: 'Background review',
      tool_use_id: 'toolu_A',
      is_backgrounded: true,
    });
  }
  r.text('I started a background review.');
  childWork(r, 'toolu_A', 'toolu_R');
  // §2.6: the foreground cycle ended while the prompt stays held for the subagent.
  r.usage('human');
  if (raw) {
    r.sdk({
      type: 'system',
      subtype: 'task_notification',
      task_id: 'a2',
      status: 'completed',
      summary: 'Review done',
      output_file: '/tmp/tasks/a2.output',
      tool_use_id: 'toolu_A',
    });
  }
  r.text('The background review finished: no issues.', { messageId: 'msg_followup' })
    .usage('task-notification')
    .stop(p);
  return r;
};
fixtures['claude-subagent-background-raw'] = backgroundSubagent(true);
fixtures['claude-subagent-background-plain'] = backgroundSubagent(false);

const launchBackgroundShell = (r: Recording, raw: boolean) => {
  r.update(pendingCard('toolu_B', 'Bash', 'Terminal', 'execute')).update({
    sessionUpdate: 'tool_call_update',
    toolCallId: 'toolu_B',
    title: 'sleep 100',
    rawInput: { command: 'sleep 100', description: 'Wait', run_in_background: true },
    content: [{ type: 'content', content: { type: 'text', text: 'Wait' } }],
    ...cc('Bash'),
  });
  r.permission('toolu_B', 'sleep 100');
  if (raw) {
    // The SDK may report the task before the tool result (§2.7 ordering note).
    r.sdk({
      type: 'system',
      subtype: 'task_started',
      task_id: 'bash_1',
      task_type: 'local_bash',
      description: 'Wait',
      tool_use_id: 'toolu_B',
    });
  }
  return r
    .update({
      sessionUpdate: 'tool_call_update',
      toolCallId: 'toolu_B',
      status: 'completed',
      rawOutput:
        'Command running in background with ID: bash_1. Output is being written to: /tmp/tasks/bash_1.output. You will be notified when it completes.',
      content: [
        {
          type: 'content',
          content: {
            type: 'text',
            text: '```console\nCommand running in background with ID: bash_1.\n```',
          },
        },
      ],
      ...cc('Bash'),
    })
    .update({
      sessionUpdate: 'tool_call_update',
      toolCallId: 'toolu_B',
      ...cc('Bash', {
        toolResponse: {
          stdout: '',
          stderr: '',
          interrupted: false,
          isImage: false,
          backgroundTaskId: 'bash_1',
        },
      }),
    });
};

const backgroundShell = (raw: boolean) => {
  const r = claude(raw);
  const p = r.prompt(1, 'Wait in the background');
  launchBackgroundShell(r, raw);
  // Shells never hold the prompt; completion arrives later with no prompt open (§2.7).
  r.text('Started it in the background.').usage('human').stop(p);
  if (raw) {
    r.sdk(
      {
        type: 'system',
        subtype: 'task_notification',
        task_id: 'bash_1',
        status: 'completed',
        output_file: '/tmp/tasks/bash_1.output',
        tool_use_id: 'toolu_B',
      },
      // illustrative: the shell runs for a while after the turn
    );
  }
  r.text('The background command finished.').usage('task-notification');
  return r;
};
fixtures['claude-shell-background-raw'] = backgroundShell(true);
fixtures['claude-shell-background-plain'] = backgroundShell(false);

fixtures['claude-shell-taskstop'] = (() => {
  const r = claude(false);
  const p = r.prompt(1, 'Wait in the background');
  launchBackgroundShell(r, false);
  r.text('Started.').usage('human').stop(p);
  const p2 = r.prompt(2, 'Stop it');
  r.update(pendingCard('toolu_S', 'TaskStop', 'TaskStop', 'other'))
    .update({
      sessionUpdate: 'tool_call_update',
      toolCallId: 'toolu_S',
      rawInput: { task_id: 'bash_1' },
      ...cc('TaskStop'),
    })
    .update({
      sessionUpdate: 'tool_call_update',
      toolCallId: 'toolu_S',
      status: 'completed',
      rawOutput: '{"message":"Successfully stopped task: bash_1","task_id":"bash_1"}',
      ...cc('TaskStop'),
    })
    .text('Stopped.')
    .usage('human')
    .stop(p2);
  return r;
})();

const monitor = (raw: boolean) => {
  const r = claude(raw);
  const p = r.prompt(1, 'Watch the CI run');
  r.update({
    sessionUpdate: 'tool_call',
    toolCallId: 'toolu_M',
    name: 'Monitor',
    title: 'Monitor',
    kind: 'other',
    status: 'pending',
    rawInput: { command: 'gh run watch 42' },
    content: [],
    ...cc('Monitor'),
  });
  if (raw) {
    r.sdk({
      type: 'system',
      subtype: 'task_started',
      task_id: 'b7x2',
      task_type: 'local_bash',
      description: 'gh run watch 42',
      tool_use_id: 'toolu_M',
    });
  }
  r.update({
    sessionUpdate: 'tool_call_update',
    toolCallId: 'toolu_M',
    status: 'completed',
    content: [
      {
        type: 'content',
        content: {
          type: 'text',
          text: 'Monitor started (task b7x2, timeout 600000ms). You will be notified on each event.',
        },
      },
    ],
    rawOutput: 'Monitor started (task b7x2, timeout 600000ms). You will be notified on each event.',
    ...cc('Monitor'),
  })
    .text('Watching the run.')
    .usage('human')
    .stop(p);
  // §2.8: each event wakes a cycle that ends with a task-notification origin; the watch goes on.
  r.text('CI step 1 passed.').usage('task-notification');
  r.text('CI step 2 passed.').usage('task-notification');
  if (raw) {
    r.sdk({
      type: 'system',
      subtype: 'task_updated',
      task_id: 'b7x2',
      patch: { status: 'completed' },
    });
  }
  return r;
};
fixtures['claude-monitor-raw'] = monitor(true);
fixtures['claude-monitor-plain'] = monitor(false);

/**
 * `promptQueueing` handoff: the first prompt is held open by a background subagent; its human
 * cycle ended, so a second human prompt runs; each human-origin idle belongs to its own prompt.
 */
fixtures['claude-handoff-held-prompt'] = (() => {
  const r = claude(true);
  const p1 = r.prompt(1, 'Review in the background');
  launchBackgroundAgent(r, 'toolu_A', 'a2');
  r.text('Started a background review.').usage('human');
  const p2 = r.prompt(2, 'Meanwhile, what is 2+2?');
  r.text('4.').usage('human').stop(p2);
  r.sdk({
    type: 'system',
    subtype: 'task_notification',
    task_id: 'a2',
    status: 'completed',
    tool_use_id: 'toolu_A',
  });
  r.text('The review finished.').usage('task-notification').stop(p1);
  return r;
})();

/** `session/load` replays history as ordinary updates before answering: none of it is live. */
fixtures['claude-session-load-history'] = (() => {
  const r = new Recording().initialize(CLAUDE_INFO, CLAUDE_CAPS);
  const load = r.session(undefined, 'session/load');
  r.update({ sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'old prompt' } })
    .text('old answer')
    .update({
      sessionUpdate: 'tool_call',
      toolCallId: 'toolu_OLD',
      name: 'Bash',
      title: 'Terminal',
      kind: 'execute',
      status: 'completed',
      rawInput: { command: 'sleep 1', run_in_background: true },
      ...cc('Bash'),
    })
    .sessionAnswer(load, {});
  const p = r.prompt(1, 'Continue');
  r.text('Continuing.').usage('human').stop(p);
  return r;
})();

/** A Claude adapter too old to stamp lineage (0.16): no ownership is claimed for any tool. */
fixtures['claude-legacy-no-lineage'] = (() => {
  const r = new Recording().initialize(
    { name: '@zed-industries/claude-code-acp', version: '0.16.2' },
    { loadSession: true },
  );
  r.sessionAnswer(r.session());
  const p = r.prompt(1, 'List files');
  r.update({
    sessionUpdate: 'tool_call',
    toolCallId: 'toolu_L',
    title: 'ls',
    kind: 'execute',
    status: 'pending',
    rawInput: { command: 'ls' },
    ...cc('Bash'),
  })
    .update({ sessionUpdate: 'tool_call_update', toolCallId: 'toolu_L', status: 'completed' })
    .text('Done.')
    .stop(p);
  return r;
})();

// ---- Codex (@agentclientprotocol/codex-acp, legacy rendering) --------------------------------

const codex = (version: string) => {
  const r = new Recording().initialize(
    { name: '@agentclientprotocol/codex-acp', title: 'Codex', version },
    { loadSession: true, promptCapabilities: { image: true, embeddedContext: true } },
  );
  r.sessionAnswer(r.session());
  return r;
};

/** Codex's spawnAgent call as it starts: thread-main asks for a child on thread-paris. */
const spawnAgent = (rawInput: object) => ({
  sessionUpdate: 'tool_call',
  toolCallId: 'call-spawn',
  kind: 'other',
  title: 'spawnAgent',
  status: 'in_progress',
  rawInput: {
    prompt: 'Find the current weather in Paris.',
    senderThreadId: 'thread-main',
    receiverThreadIds: ['thread-paris'],
    ...rawInput,
  },
});

fixtures['codex-subagent-1x'] = (() => {
  const r = codex('1.6.2');
  const p = r.prompt(1, 'Find the weather in Paris with a subagent');
  r.update({
    ...spawnAgent({
      agentsStates: { 'thread-paris': { status: 'running', message: 'Checking weather' } },
      model: null,
      reasoningEffort: null,
      status: 'inProgress',
    }),
    _meta: {
      codex: {
        collaboration: {
          tool: 'spawnAgent',
          senderThreadId: 'thread-main',
          receiverThreadIds: ['thread-paris'],
        },
      },
    },
  })
    .update({
      sessionUpdate: 'tool_call',
      toolCallId: 'call-act',
      title: 'Start subagent weather_research',
      kind: 'other',
      status: 'completed',
      rawInput: {
        agentThreadId: 'thread-paris',
        agentPath: '/root/weather_research',
        activityKind: 'started',
      },
      _meta: {
        codex: {
          subagent: {
            threadId: 'thread-paris',
            path: '/root/weather_research',
            activity: 'started',
          },
        },
      },
    })
    .update({ sessionUpdate: 'tool_call_update', toolCallId: 'call-spawn', status: 'completed' })
    .update({
      sessionUpdate: 'tool_call',
      toolCallId: 'call-wait',
      kind: 'other',
      title: 'wait',
      status: 'completed',
      rawInput: {
        senderThreadId: 'thread-main',
        receiverThreadIds: ['thread-paris'],
        agentsStates: { 'thread-paris': { status: 'completed', message: '18°C, cloudy' } },
        status: 'completed',
      },
      _meta: {
        codex: {
          collaboration: {
            tool: 'wait',
            senderThreadId: 'thread-main',
            receiverThreadIds: ['thread-paris'],
          },
        },
      },
    })
    .text('It is 18°C and cloudy in Paris.')
    .update({ sessionUpdate: 'usage_update', used: 12000, size: 272000 })
    .stop(p);
  return r;
})();

/** 2.6.0 legacy: no `_meta.codex`; the child is found by title and thread id, and never ends. */
fixtures['codex-subagent-2x-no-end'] = (() => {
  const r = codex('2.6.0');
  const p = r.prompt(1, 'Research in a subagent');
  r.update({
    ...spawnAgent({ status: 'inProgress' }),
    content: [
      { type: 'content', content: { type: 'text', text: 'Find the current weather in Paris.' } },
    ],
  })
    .update({ sessionUpdate: 'tool_call_update', toolCallId: 'call-spawn', status: 'completed' })
    .text('The subagent is researching.')
    .stop(p);
  return r;
})();

fixtures['codex-exec-command'] = (() => {
  const r = codex('2.6.0');
  const p = r.prompt(1, 'Run the tests');
  r.thought('I should run the tests.')
    .update({
      sessionUpdate: 'tool_call',
      toolCallId: 'item_7',
      kind: 'execute',
      title: 'npm test',
      status: 'in_progress',
      content: [{ type: 'terminal', terminalId: 'item_7' }],
      rawInput: { command: 'npm test', cwd: '/home/dev/repo' },
      _meta: { terminal_info: { cwd: '/home/dev/repo', terminal_id: 'item_7' } },
    })
    .update({
      sessionUpdate: 'tool_call_update',
      toolCallId: 'item_7',
      _meta: { terminal_output_delta: { data: 'PASS\n', terminal_id: 'item_7' } },
    })
    .update({
      sessionUpdate: 'tool_call_update',
      toolCallId: 'item_7',
      status: 'completed',
      _meta: { terminal_exit: { exit_code: 0, signal: null, terminal_id: 'item_7' } },
    })
    .text('All tests pass.')
    .stop(p);
  return r;
})();

// ---- Any other ACP agent ---------------------------------------------------------------------

fixtures['generic-turn'] = (() => {
  const r = new Recording().initialize(
    { name: 'opencode', version: '1.2.0' },
    { loadSession: false },
  );
  r.sessionAnswer(r.session());
  const p = r.prompt(1, 'Fix the bug');
  r.update({
    sessionUpdate: 'plan',
    entries: [{ content: 'Find the bug', priority: 'high', status: 'in_progress' }],
  })
    .thought('Looking.')
    .update({
      sessionUpdate: 'tool_call',
      toolCallId: 'tc-1',
      title: 'Edit src/a.ts',
      kind: 'edit',
      status: 'pending',
    });
  r.permission('tc-1', 'Edit src/a.ts');
  r.update({ sessionUpdate: 'tool_call_update', toolCallId: 'tc-1', status: 'in_progress' })
    .update({ sessionUpdate: 'tool_call_update', toolCallId: 'tc-1', status: 'completed' })
    .update({ sessionUpdate: 'some_future_update', payload: { anything: true } })
    .text('Fixed.')
    .stop(p);
  return r;
})();

fixtures['generic-cancelled'] = (() => {
  const r = new Recording().initialize({ name: 'goose', version: '1.0.0' });
  r.sessionAnswer(r.session());
  const p = r.prompt(1, 'Write a long essay');
  r.text('Once upon a time').cancel().text(' there').stop(p, 'cancelled');
  return r;
})();

const dir = join(__dirname, '..', 'fixtures');
for (const [name, rec] of Object.entries(fixtures)) {
  writeFileSync(join(dir, `${name}.jsonl`), rec.toJsonl());
}
console.log(`wrote ${Object.keys(fixtures).length} fixtures to ${dir}`);

// Dialect benchmark for libs/acp: frames/s of each dialect (the whole frame-to-fact reducer,
// `reduceFrame`) over a recording with thousands of distinct tool calls, beside JSON.parse of the
// same frames in the same run (the cost the host pays anyway to read them off the wire).
// Run alone: `npx tsx --expose-gc bench/dialect.bench.ts`.
import { initialAcpState, reduceFrame, type Frame } from '@baton/acp';
import { againstParse, runAsScript, type BenchResult } from './lib';

const AT = '2026-12-02T09:00:00.000Z';
const TOOLS = 5_000;

const agentInfo = {
  claude: {
    agentInfo: { name: '@agentclientprotocol/claude-agent-acp', version: '0.101.0' },
    agentCapabilities: { _meta: { claudeCode: { promptQueueing: true } } },
  },
  codex: { agentInfo: { name: '@agentclientprotocol/codex-acp', version: '2.6.0' } },
  generic: { agentInfo: { name: 'goose', version: '1.0.0' } },
} as const;
type DialectKey = keyof typeof agentInfo;

const c2a = (message: unknown): Frame => ({ direction: 'client->agent', at: AT, message });
const a2c = (message: unknown): Frame => ({ direction: 'agent->client', at: AT, message });
const update = (u: Record<string, unknown>) =>
  a2c({ jsonrpc: '2.0', method: 'session/update', params: { sessionId: 's', update: u } });

/** A session of `TOOLS` distinct tool calls (each: start, input, result, hook), as the adapter streams them. */
export function recording(dialect: DialectKey, tools = TOOLS): Frame[] {
  const frames: Frame[] = [
    c2a({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: 1 } }),
    a2c({ jsonrpc: '2.0', id: 0, result: { protocolVersion: 1, ...agentInfo[dialect] } }),
    c2a({
      jsonrpc: '2.0',
      id: 1,
      method: 'session/new',
      params: {
        cwd: '/w',
        mcpServers: [],
        _meta: { claudeCode: { emitRawSDKMessages: [{ type: 'system' }] } },
      },
    }),
    a2c({ jsonrpc: '2.0', id: 1, result: { sessionId: 's' } }),
    c2a({
      jsonrpc: '2.0',
      id: 2,
      method: 'session/prompt',
      params: {
        sessionId: 's',
        prompt: [{ type: 'text', text: 'go' }],
        _meta: { baton: { promptId: 'p1', admissionGeneration: 1 } },
      },
    }),
  ];
  for (let i = 0; i < tools; i++) {
    const toolCallId = `toolu_${i.toString(36).padStart(8, '0')}`;
    const meta = { claudeCode: { toolName: 'Read' } };
    frames.push(
      update({
        sessionUpdate: 'tool_call',
        toolCallId,
        title: 'Read File',
        kind: 'read',
        status: 'pending',
        rawInput: {},
        content: [],
        _meta: meta,
      }),
      update({
        sessionUpdate: 'tool_call_update',
        toolCallId,
        title: `Read src/file-${i}.ts`,
        rawInput: { file_path: `/w/src/file-${i}.ts` },
        _meta: meta,
      }),
      update({
        sessionUpdate: 'tool_call_update',
        toolCallId,
        status: 'completed',
        rawOutput: 'export const x = 1;\n',
        _meta: meta,
      }),
      update({
        sessionUpdate: 'agent_message_chunk',
        messageId: `m${i}`,
        content: { type: 'text', text: 'Reading the next file.' },
      }),
    );
  }
  frames.push(a2c({ jsonrpc: '2.0', id: 2, result: { stopReason: 'end_turn' } }));
  return frames;
}

const fold = (frames: readonly Frame[]): number => {
  let state = initialAcpState();
  let facts = 0;
  for (const f of frames) {
    const r = reduceFrame(state, f);
    state = r.state;
    facts += r.facts.length;
  }
  return facts;
};

const best = (runs: number, fn: () => number): number => {
  let top = 0;
  for (let i = 0; i < runs; i++) {
    globalThis.gc?.();
    const t0 = process.hrtime.bigint();
    fn();
    top = Math.max(top, 1e9 / Number(process.hrtime.bigint() - t0));
  }
  return top;
};

export async function runDialectBench(tools = TOOLS): Promise<BenchResult[]> {
  const out: BenchResult[] = [];
  for (const dialect of Object.keys(agentInfo) as DialectKey[]) {
    const frames = recording(dialect, tools);
    const lines = frames.map((f) => JSON.stringify(f.message));
    if (fold(frames) < tools) throw new Error(`${dialect}: the recording produced too few facts`);
    // Interleaved, best of 3 each: the baseline and the dialect see the same machine state.
    out.push(
      againstParse(
        `${dialect} dialect: ${tools.toLocaleString('en-US')} distinct tool calls (${frames.length.toLocaleString('en-US')} frames)`,
        lines,
        3,
        (fn) => best(1, fn),
        () => fold(frames),
        { goal: 0.5 },
      ),
    );
  }
  await Promise.resolve();
  return out;
}

if (require.main === module) runAsScript(() => runDialectBench());

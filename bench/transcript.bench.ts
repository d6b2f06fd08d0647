// Transcript benchmark for libs/transcript: frames/s of the transcript reducer (`reduceTranscript`,
// frames already parsed) beside JSON.parse of the same frames' messages in the same run (the cost
// the worker pays anyway to read them off the wire). Three sessions: the dialect benchmark's 5,000
// distinct tool calls (Claude's and Codex's shapes), and a token stream (many small text deltas).
// Run alone: `npx tsx --expose-gc bench/transcript.bench.ts`.
import type { Frame } from '@baton/acp';
import { initialTranscriptState, reduceTranscript, shapeOfFrames } from '@baton/transcript';
import { recording } from './dialect.bench';
import { againstParse, runAsScript, type BenchResult } from './lib';

const AT = '2026-12-02T09:00:00.000Z';
const TOOLS = 5_000;
const CHUNKS = 50_000;

/** One turn of `chunks` agent message chunks of a few tokens each, as Claude's adapter streams. */
function tokenStream(chunks = CHUNKS): Frame[] {
  const frames: Frame[] = [
    {
      direction: 'client->agent',
      at: AT,
      message: {
        jsonrpc: '2.0',
        id: 2,
        method: 'session/prompt',
        params: {
          sessionId: 's',
          prompt: [{ type: 'text', text: 'explain' }],
          _meta: { baton: { promptId: 'p1', admissionGeneration: 1 } },
        },
      },
    },
  ];
  for (let i = 0; i < chunks; i++)
    frames.push({
      direction: 'agent->client',
      at: AT,
      message: {
        jsonrpc: '2.0',
        method: 'session/update',
        params: {
          sessionId: 's',
          update: {
            sessionUpdate: i % 10 < 2 ? 'agent_thought_chunk' : 'agent_message_chunk',
            messageId: `msg_${Math.floor(i / 500)}`,
            content: { type: 'text', text: ` token${i % 97} and` },
          },
        },
      },
    });
  frames.push({
    direction: 'agent->client',
    at: AT,
    message: { jsonrpc: '2.0', id: 2, result: { stopReason: 'end_turn' } },
  });
  return frames;
}

const reduce = (frames: readonly Frame[]): number => {
  let state = initialTranscriptState(shapeOfFrames(frames));
  let events = 0;
  for (const f of frames) {
    const r = reduceTranscript(state, { kind: 'frame', ...f });
    state = r.state;
    events += r.out.length;
  }
  return events;
};

/**
 * Runs per second of `fn`, by this process's CPU time: on a shared machine the wall clock also
 * counts other processes' turns, which swung the ratio 37–113% from run to run.
 */
const once = (fn: () => number): number => {
  globalThis.gc?.();
  const c0 = process.cpuUsage();
  fn();
  const c = process.cpuUsage(c0);
  return 1e6 / Math.max(1, c.user + c.system);
};

export async function runTranscriptBench(): Promise<BenchResult[]> {
  const sessions: [string, Frame[]][] = [
    [`claude: ${TOOLS.toLocaleString('en-US')} distinct tool calls`, recording('claude', TOOLS)],
    [`codex: ${TOOLS.toLocaleString('en-US')} distinct tool calls`, recording('codex', TOOLS)],
    [`token stream: ${CHUNKS.toLocaleString('en-US')} text chunks`, tokenStream()],
  ];
  const out: BenchResult[] = [];
  for (const [name, frames] of sessions) {
    const lines = frames.map((f) => JSON.stringify(f.message));
    if (reduce(frames) === 0) throw new Error(`${name}: no transcript events`);
    // Interleaved, best of 15 each: the baseline and the reducer see the same machine state.
    out.push(
      againstParse(
        `transcript reducer, ${name} (${frames.length.toLocaleString('en-US')} frames)`,
        lines,
        15,
        once,
        () => reduce(frames),
        { goal: 0.5 },
      ),
    );
  }
  await Promise.resolve();
  return out;
}

if (require.main === module) runAsScript(runTranscriptBench);

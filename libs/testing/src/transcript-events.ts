// Transcript events as a worker writes them, for tests of what is stored and served.
import type { TranscriptEvent } from '@baton/transcript';

/** The agent's text `delta` to message `item` of `turn`. */
export const textEvent = (turn: string, item: string, delta: string): TranscriptEvent => ({
  type: 'text',
  turn,
  phase: 'turn',
  item,
  role: 'agent',
  delta,
});

/** The prompt that opens `turn` (its item `p-<turn>`, its text `do <turn>`). */
export const promptEvent = (turn: string): TranscriptEvent => ({
  type: 'prompt',
  turn,
  phase: 'turn',
  item: `p-${turn}`,
  promptId: turn,
  content: [{ type: 'text', text: { text: `do ${turn}` } }],
});

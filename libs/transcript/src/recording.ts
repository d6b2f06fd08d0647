import {
  initialTranscriptState,
  reduceTranscript,
  shapeOf,
  type Shape,
  type TranscriptInput,
  type TranscriptLimits,
  type TranscriptState,
} from './reducer';
import type { TranscriptEvent } from './schema';

/** One line of a raw-frame log: `{direction, at, message}`. */
export interface RecordedFrame {
  direction: 'agent->client' | 'client->agent';
  at: string;
  message: unknown;
}

/** The shape of a recording, read off its `initialize` answer (Claude's when it has none). */
export function shapeOfFrames(frames: readonly RecordedFrame[]): Shape {
  for (const f of frames) {
    const m = f.message as { id?: unknown; result?: { protocolVersion?: unknown } } | null;
    if (f.direction === 'agent->client' && m?.id === 0 && m.result?.protocolVersion !== undefined)
      return shapeOf(m.result);
  }
  return 'claude';
}

/** Every event a run of frames makes, from a fresh state of their shape. */
export function transcriptOf(
  frames: readonly RecordedFrame[],
  limits?: TranscriptLimits,
  scope?: string,
): { state: TranscriptState; events: TranscriptEvent[] } {
  let state = initialTranscriptState(shapeOfFrames(frames), limits, scope);
  const events: TranscriptEvent[] = [];
  for (const f of frames) {
    const input: TranscriptInput = { kind: 'frame', ...f };
    const r = reduceTranscript(state, input);
    state = r.state;
    for (const e of r.out) events.push(e);
  }
  return { state, events };
}

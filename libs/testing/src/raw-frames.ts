import type { EventStore, RawFrame } from '@baton/store';
import { waitFor } from './wait';

/**
 * An execution's raw-frame log once `ready` holds for it. The worker writes that log up to a
 * second late (a second of frames to a compressed entry) and drains it after the facts, so a
 * test that reads it right after a fact it waited for can miss the last frames: wait for a frame
 * at or after the last one the test looks at, then read.
 */
export function rawFramesOnceThere(
  store: EventStore,
  taskId: string,
  executionId: string,
  ready: (frames: RawFrame[]) => boolean,
  what: string,
): Promise<RawFrame[]> {
  return waitFor(async () => {
    const frames = (await store.rawFrames.read(taskId, executionId)).items;
    return ready(frames) && frames;
  }, `${what} in the raw-frame log of ${executionId}`);
}

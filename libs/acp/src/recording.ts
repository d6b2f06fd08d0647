import { join } from 'node:path';
import { DIRECTIONS, type Direction, type Frame } from './frames';
import { isRecord } from './json';

/**
 * A recording is the raw-frame log: one JSON object per line,
 * `{"direction": "agent->client" | "client->agent", "at": ISO-8601, "message": <JSON-RPC>}`.
 * `at` orders nothing (line order does); it gives the replay its relative timing and the dialect
 * its clock. Blank lines are skipped; anything else malformed is an error with its line number,
 * because a recording is a test input we wrote, not agent output.
 */
export const parseRecording = (source: string): Frame[] =>
  source.split('\n').flatMap((line, i) => {
    if (line.trim() === '') return [];
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch (e) {
      throw new Error(`recording line ${i + 1}: not JSON (${(e as Error).message})`);
    }
    if (
      !isRecord(v) ||
      !DIRECTIONS.includes(v.direction as Direction) ||
      typeof v.at !== 'string' ||
      Number.isNaN(Date.parse(v.at)) ||
      !('message' in v)
    ) {
      throw new Error(`recording line ${i + 1}: expected {direction, at, message}`);
    }
    return [{ direction: v.direction as Direction, at: v.at, message: v.message }];
  });

export const toRecordingLine = (frame: Frame): string => JSON.stringify(frame);

/** The recordings that ship with Baton (the dialect fixtures), for demos and tests. */
export const BUNDLED_RECORDINGS_DIR = join(__dirname, '..', 'fixtures');

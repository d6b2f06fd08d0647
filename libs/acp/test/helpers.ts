import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseRecording, toFact, type FactBody, type FactEnvelope, type Frame } from '../src';

export const FIXTURES = join(__dirname, '..', 'fixtures');
export const fixturePath = (name: string): string => join(FIXTURES, `${name}.jsonl`);
export const loadFixture = (name: string): Frame[] =>
  parseRecording(readFileSync(fixturePath(name), 'utf8'));

const ENVELOPE: FactEnvelope = {
  v: 1,
  taskId: 'task-1',
  sessionId: 'session-1',
  executionId: 'exec-1',
  generation: 1,
  writer: { role: 'worker', instance: 'worker-1', seq: 0 },
};

/** Throws unless the body is a valid protocol fact once the worker wraps it. */
export const assertValidFact = (body: FactBody): void => {
  toFact(ENVELOPE, body);
};

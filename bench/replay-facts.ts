/**
 * Replay-driven load: the facts a worker would append while playing the bundled recordings
 * (libs/acp/fixtures, real ACP traffic), not synthetic noise.
 *
 * Each recording is turned into facts the way a worker does it: frame by frame through the
 * dialects (`reduceFrame`), foreground output coalesced per 250 ms of the recording's own clock
 * (`coalesce`, the worker's default WORKER_COALESCE_MS), wrapped between `execution.started` and
 * `execution.ended`. A {@link TaskPlayer} then plays one task: a few sessions at once, each
 * running one recording after another as successive executions (new execution id, next
 * generation), facts interleaved across its sessions.
 *
 * The stream such a player writes holds facts only, so the projector decides nothing and the
 * updates it publishes are a pure function of the facts: whoever folds the same facts
 * (`@baton/activity` fold) knows which update sequence numbers each fact produces.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  BUNDLED_RECORDINGS_DIR,
  coalesce,
  flushAll,
  flushDue,
  initialAcpState,
  initialCoalesceState,
  parseRecording,
  reduceFrame,
  toFact,
  type FactBody,
} from '@baton/acp';
import { decide, fold, initialTaskState, type TaskState } from '@baton/activity';
import type { StreamEntry, Update } from '@baton/protocol';

const COALESCE_MS = 250;

export interface Recording {
  name: string;
  /** The facts between the execution's start and end, as a worker reports them. */
  bodies: FactBody[];
}

let cached: Recording[] | undefined;

/** Every bundled recording, as facts. */
export function recordings(): Recording[] {
  if (cached) return cached;
  const out: Recording[] = [];
  for (const file of readdirSync(BUNDLED_RECORDINGS_DIR).sort()) {
    if (!file.endsWith('.jsonl')) continue;
    const frames = parseRecording(readFileSync(join(BUNDLED_RECORDINGS_DIR, file), 'utf8'));
    let acp = initialAcpState();
    let co = initialCoalesceState();
    const bodies: FactBody[] = [];
    let at = 0;
    for (const frame of frames) {
      at = Date.parse(frame.at);
      // The worker's flush timer, driven by the recording's clock.
      const due = flushDue(co, at, COALESCE_MS);
      co = due.state;
      bodies.push(...due.facts);
      const r = reduceFrame(acp, frame);
      acp = r.state;
      for (const f of r.facts) {
        const c = coalesce(co, f, at, COALESCE_MS);
        co = c.state;
        bodies.push(...c.facts);
      }
    }
    bodies.push(...flushAll(co, at).facts);
    out.push({ name: file.replace(/\.jsonl$/, ''), bodies });
  }
  cached = out;
  return out;
}

/** Deterministic PRNG (mulberry32), so every run plays the same mix. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

interface SessionCursor {
  sessionId: string;
  generation: number;
  executionId: string;
  bodies: FactBody[];
  /** -1: execution.started is next; bodies.length: execution.ended is next. */
  at: number;
}

export interface ExecutionRefLike {
  taskId: string;
  sessionId: string;
  executionId: string;
}

export interface PlayedFact {
  entry: StreamEntry;
  /** Set on an execution's first fact: its lease must exist before the fact is appended. */
  starts?: ExecutionRefLike;
  /** Set on an execution's last fact: its worker drops the lease once the fact is stored. */
  ends?: ExecutionRefLike;
}

/** One task's facts, in the order a worker fleet would append them. */
export class TaskPlayer {
  private readonly sessions: SessionCursor[];
  private readonly random: () => number;
  private turn = 0;
  private writerSeq = 0;
  private executions = 0;

  constructor(
    readonly taskId: string,
    sessions: number,
    private readonly writer: string,
    seed: number,
  ) {
    this.random = rng(seed);
    this.sessions = Array.from({ length: sessions }, (_, s) => this.execution(`s${s}`, 0));
  }

  private execution(sessionId: string, generation: number): SessionCursor {
    const all = recordings();
    const rec = all[Math.floor(this.random() * all.length)]!;
    this.executions += 1;
    return {
      sessionId,
      generation: generation + 1,
      executionId: `${this.taskId}-${sessionId}-x${this.executions}`,
      bodies: rec.bodies,
      at: -1,
    };
  }

  next(): PlayedFact {
    const k = this.turn++ % this.sessions.length;
    let c = this.sessions[k]!;
    if (c.at > c.bodies.length) {
      c = this.execution(c.sessionId, c.generation);
      this.sessions[k] = c;
    }
    const body: FactBody =
      c.at === -1
        ? { type: 'execution.started', data: { startedAt: new Date().toISOString() } }
        : c.at === c.bodies.length
          ? { type: 'execution.ended', data: { reason: 'completed', exitCode: 0 } }
          : c.bodies[c.at]!;
    const ref = { taskId: this.taskId, sessionId: c.sessionId, executionId: c.executionId };
    const starts = c.at === -1 ? ref : undefined;
    const ends = c.at === c.bodies.length ? ref : undefined;
    c.at += 1;
    const entry = toFact(
      {
        v: 1,
        taskId: this.taskId,
        sessionId: c.sessionId,
        executionId: c.executionId,
        generation: c.generation,
        writer: { role: 'worker', instance: this.writer, seq: ++this.writerSeq },
      },
      body,
    );
    return { entry, ...(starts ? { starts } : {}), ...(ends ? { ends } : {}) };
  }
}

/**
 * The task's folded state as its owner will have it: predicts the update sequence numbers each
 * fact makes the owner publish. Throws if the owner would decide something (a decision would be
 * appended by the projector at a place the load cannot know, and the prediction would be off).
 */
export class UpdatePredictor {
  state: TaskState;
  constructor(taskId: string) {
    this.state = initialTaskState(taskId);
  }

  /** Folds the fact; returns the seqs of the updates it produces. */
  apply(entry: StreamEntry): number[] {
    return this.updates(entry).map((u) => u.seq);
  }

  /**
   * Folds the fact; returns the updates it produces, as the owner publishes them (under the task
   * id the predictor was made with: a client's task id gives what the gateway sends its clients).
   */
  updates(entry: StreamEntry): Update[] {
    const before = this.state;
    const f = fold(before, entry);
    this.state = f.state;
    if (f.state !== before && decide(this.state).length > 0) {
      throw new Error(`bench: the owner of ${entry.taskId} would decide after ${entry.type}`);
    }
    return f.updates;
  }
}

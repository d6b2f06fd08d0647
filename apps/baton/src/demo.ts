import { BatonClient } from '@baton/client';
import type { SessionView, TaskView } from '@baton/protocol';
import { randomBytes } from 'node:crypto';

/**
 * The bundled recording the demo plays (libs/acp/fixtures; made by
 * libs/acp/scripts/make-demo-recording.ts): two background shells at once, a background subagent
 * beside a shell, and a long last turn.
 */
export const DEMO_RECORDING = 'demo-busy-claude.jsonl';
export const DEMO_TASKS = ['demo-1', 'demo-2', 'demo-3'];
const SESSION = 'main';
/** How long the third turn generates (at speed 1) before the demo cancels it. */
export const CANCEL_AFTER_MS = 4_000;

export interface DemoOptions {
  gatewayUrl: string;
  token: string;
  say: (line: string) => void;
  /** The demo's tasks (default DEMO_TASKS). */
  tasks?: readonly string[];
  /** Replay speed (default 1: the recorded timing). */
  speed?: number;
}

/** What the demo does next, as a client would: send a prompt, or cancel the running turn. */
export type DemoStep =
  { kind: 'prompt'; n: number } | { kind: 'cancel'; generation: number; afterMs: number };

/**
 * The demo's script for one session, driven by its views: prompt 1 at once (it queues until the
 * agent is ready); prompt 2 as soon as turn 1 runs (it queues behind it and waits); prompt 3 once
 * everything is done, turn 2's background work included; then cancel turn 3 while it generates.
 * Each step is returned once.
 */
export class DemoScript {
  private readonly generations: number[] = [];
  private prompted = 1;
  private cancelled = false;

  constructor(private readonly speed = 1) {}

  /** The first step: prompt 1. */
  start(): DemoStep[] {
    return [{ kind: 'prompt', n: 1 }];
  }

  next(s: SessionView): DemoStep[] {
    const steps: DemoStep[] = [];
    const g = s.activity.runningGeneration;
    if (g !== null && !this.generations.includes(g)) this.generations.push(g);
    const turns = this.generations.length;
    if (this.prompted === 1 && turns >= 1) steps.push({ kind: 'prompt', n: ++this.prompted });
    const allDone =
      g === null &&
      s.activity.foregroundActivity === null &&
      s.backgroundWork.length === 0 &&
      s.queue.entries.length === 0;
    if (this.prompted === 2 && turns >= 2 && allDone)
      steps.push({ kind: 'prompt', n: ++this.prompted });
    if (this.prompted === 3 && turns >= 3 && !this.cancelled && g === this.generations[2]) {
      this.cancelled = true;
      steps.push({
        kind: 'cancel',
        generation: g,
        afterMs: this.speed > 0 ? CANCEL_AFTER_MS / this.speed : 0,
      });
    }
    return steps;
  }
}

/**
 * Starts a replay execution of the demo recording on each demo task (the `replay` profile),
 * through the gateway's REST API with the run's token as any client would, then plays
 * DemoScript on each through the gateway's WebSocket API: a prompt that queues behind a running
 * turn, overlapping background work, a cancelled turn. Prints each session's activity as it
 * changes, and what the demo does.
 */
export async function startDemo(o: DemoOptions): Promise<{ stop(): Promise<void> }> {
  const client = new BatonClient({ retryInitialConnect: true });
  await client.connect(o.gatewayUrl.replace(/^http/, 'ws') + '/ws', o.token);
  const run = randomBytes(3).toString('hex');
  const timers = new Set<NodeJS.Timeout>();
  let stopped = false;

  for (const taskId of o.tasks ?? DEMO_TASKS) {
    const say = (line: string) => {
      if (!stopped) o.say(`demo ${taskId}/${SESSION}: ${line}`);
    };
    const script = new DemoScript(o.speed ?? 1);
    const act = (step: DemoStep) => {
      if (step.kind === 'prompt') {
        const i = step.n;
        void client
          .prompt({
            taskId,
            sessionId: SESSION,
            text: `demo prompt ${i}`,
            idempotencyKey: `${taskId}-${run}-${i}`,
          })
          .then(
            (d) => say(`prompt ${i} ${outcome(d.decision)}`),
            (e: unknown) => say(`prompt ${i} failed: ${String(e)}`),
          );
        return;
      }
      const timer = setTimeout(() => {
        timers.delete(timer);
        say(`cancelling the running turn (generation ${step.generation})`);
        client.cancel({ taskId, sessionId: SESSION, observedGeneration: step.generation }).then(
          (r) => say(`cancel ${r.status}${r.status === 'failed' ? ` (${r.reason})` : ''}`),
          (e: unknown) => say(`cancel failed: ${String(e)}`),
        );
      }, step.afterMs);
      timers.add(timer);
    };
    let last = '';
    const sub = client.subscribe(taskId, {
      sessionId: SESSION,
      onView: (view: TaskView) => {
        const s = view.sessions.find((x) => x.sessionId === SESSION);
        if (!s) return;
        const line = describe(s);
        if (line !== last) say((last = line));
        for (const step of script.next(s)) act(step);
      },
    });
    await sub.ready;
    await startExecution(o, taskId, {
      executionId: `${taskId}-${run}`,
      profile: 'replay',
      recording: DEMO_RECORDING,
      speed: o.speed ?? 1,
    });
    for (const step of script.start()) act(step);
  }
  return {
    stop: async () => {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      await client.close();
    },
  };
}

async function startExecution(
  o: DemoOptions,
  taskId: string,
  body: Record<string, unknown>,
): Promise<void> {
  const url = `${o.gatewayUrl}/v1/tasks/${encodeURIComponent(taskId)}/sessions/${SESSION}/executions`;
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${o.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) {
    throw new Error(
      `demo ${taskId}: starting its execution failed: ${res.status} ${await res.text()}`,
    );
  }
}

function outcome(d: { outcome: string; position?: number; reason?: string }): string {
  if (d.outcome === 'queued') return `queued at ${d.position} (${d.reason})`;
  return d.reason ? `${d.outcome} (${d.reason})` : d.outcome;
}

function describe(s: SessionView): string {
  const activity = s.activity.foregroundActivity ?? 'idle';
  const work = s.backgroundWork.map((w) => `${w.kind} "${w.label ?? w.id}"`).join(', ');
  const queued = s.queue.entries.length;
  return `${activity}${work ? ` — background: ${work}` : ''}${queued ? ` — ${queued} queued` : ''} [${s.activity.state}]`;
}

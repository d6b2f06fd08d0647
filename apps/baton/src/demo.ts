import { BatonClient } from '@baton/client';
import type { TaskView } from '@baton/protocol';
import { randomBytes } from 'node:crypto';

/** The bundled recording the demo plays (libs/acp/fixtures; made by libs/acp/scripts). */
export const DEMO_RECORDING = 'demo-claude.jsonl';
export const DEMO_TASKS = ['demo-1', 'demo-2', 'demo-3'];
const SESSION = 'main';

export interface DemoOptions {
  gatewayUrl: string;
  token: string;
  say: (line: string) => void;
}

/**
 * Starts a replay execution of the demo recording on each demo task (the `replay` profile),
 * through the gateway's REST API with the run's token as any client would, then sends three prompts per task through the gateway as a client would: they
 * queue while the agent starts (no execution yet), then run one by one as turns end. Prints each
 * session's activity as it changes.
 */
export async function startDemo(o: DemoOptions): Promise<{ stop(): Promise<void> }> {
  const client = new BatonClient({ retryInitialConnect: true });
  await client.connect(o.gatewayUrl.replace(/^http/, 'ws') + '/ws', o.token);
  const run = randomBytes(3).toString('hex');

  for (const taskId of DEMO_TASKS) {
    let last = '';
    const sub = client.subscribe(taskId, {
      sessionId: SESSION,
      onView: (view: TaskView) => {
        const line = describe(view);
        if (line && line !== last) o.say(`demo ${taskId}/${SESSION}: ${(last = line)}`);
      },
    });
    await sub.ready;
    await startExecution(o, taskId, {
      executionId: `${taskId}-${run}`,
      profile: 'replay',
      recording: DEMO_RECORDING,
      speed: 1,
    });
    for (let i = 1; i <= 3; i++) {
      void client
        .prompt({
          taskId,
          sessionId: SESSION,
          text: `demo prompt ${i}`,
          idempotencyKey: `${taskId}-${run}-${i}`,
        })
        .then(
          (d) => o.say(`demo ${taskId}/${SESSION}: prompt ${i} ${outcome(d.decision)}`),
          (e: unknown) => o.say(`demo ${taskId}/${SESSION}: prompt ${i} failed: ${String(e)}`),
        );
    }
  }
  return {
    stop: async () => {
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

function describe(view: TaskView): string | null {
  const s = view.sessions.find((x) => x.sessionId === SESSION);
  if (!s) return null;
  const activity = s.activity.foregroundActivity ?? 'idle';
  const work = s.backgroundWork.map((w) => `${w.kind} "${w.label ?? w.id}"`).join(', ');
  const queued = s.queue.entries.length;
  return `${activity}${work ? ` — background: ${work}` : ''}${queued ? ` — ${queued} queued` : ''} [${s.activity.state}]`;
}

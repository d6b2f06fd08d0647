import { BatonClient } from '@baton/client';
import { enqueueExecution, executionQueue } from '@baton/jobs';
import { SCHEMA_VERSION, type TaskView } from '@baton/protocol';
import { connectRedis, redisTargetFromUrl } from '@baton/store';
import { randomBytes } from 'node:crypto';

/** The bundled recording the demo plays (libs/acp/fixtures; made by libs/acp/scripts). */
export const DEMO_RECORDING = 'demo-claude.jsonl';
export const DEMO_TASKS = ['demo-1', 'demo-2', 'demo-3'];
const SESSION = 'main';

export interface DemoOptions {
  gatewayUrl: string;
  token: string;
  redisUrl: string;
  prefix: string;
  say: (line: string) => void;
}

/**
 * Starts a replay execution of the demo recording on each demo task, through the same queue any
 * client uses, then sends three prompts per task through the gateway as a client would: they
 * queue while the agent starts (no execution yet), then run one by one as turns end. Prints each
 * session's activity as it changes.
 */
export async function startDemo(o: DemoOptions): Promise<{ stop(): Promise<void> }> {
  const redis = connectRedis(redisTargetFromUrl(o.redisUrl), { maxRetriesPerRequest: null });
  const queue = executionQueue(redis, o.prefix);
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
    await enqueueExecution(queue, {
      v: SCHEMA_VERSION,
      taskId,
      sessionId: SESSION,
      executionId: `${taskId}-${run}`,
      agent: { kind: 'recording', recording: DEMO_RECORDING, speed: 1 },
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
      await queue.close();
      redis.disconnect();
    },
  };
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

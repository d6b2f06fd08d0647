// A projector process and a worker process on one Redis: the owner and the host of executions,
// as the fault tests and the worker's end-to-end tests start and stop them.
import {
  spawnLeasedProjector,
  spawnWorker,
  type ProjectorProcess,
  type WorkerProcess,
} from './worker';

export interface ProjectorAndWorker {
  projector: ProjectorProcess;
  worker: WorkerProcess;
  /** Ends both (SIGTERM: each drains) and resolves once both are gone. */
  stop(): Promise<void>;
}

/** Starts both at once, each with its own environment; resolves when both are ready. */
export async function spawnProjectorAndWorker(
  projectorEnv: Record<string, string>,
  workerEnv: Record<string, string>,
): Promise<ProjectorAndWorker> {
  const [projector, worker] = await Promise.all([
    spawnLeasedProjector(projectorEnv),
    spawnWorker(workerEnv),
  ]);
  const both = [worker, projector];
  const stop = async () => {
    for (const p of both) p.child.kill('SIGTERM');
    await Promise.all(both.map((p) => p.exited));
  };
  return { projector, worker, stop };
}

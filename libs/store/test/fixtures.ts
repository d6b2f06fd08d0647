import type { InboxMessage, StreamEntry, Update } from '@baton/protocol';
import { connectRedis, type RedisClient } from '../src';
import { startRedis, startRedisCluster } from '@baton/redis-server';

/** A valid ~300-byte fact, the typical entry of a task stream. */
export function fact(taskId: string, instance: string, seq: number, chars = seq): StreamEntry {
  return {
    v: 1,
    type: 'foreground.output',
    taskId,
    sessionId: `${taskId}-session`,
    executionId: `${taskId}-exec-1`,
    generation: 1,
    writer: { role: 'worker', instance, seq },
    data: { channel: 'message', chars },
  };
}

export function decision(taskId: string, seq: number, promptId = `p${seq}`): StreamEntry {
  return {
    v: 1,
    type: 'prompt.queued',
    taskId,
    sessionId: `${taskId}-session`,
    writer: { role: 'projector', instance: 'projector-a', seq },
    data: { promptId, position: 1, reason: 'busy' },
  };
}

export function update(taskId: string, seq: number): Update {
  return {
    v: 1,
    taskId,
    seq,
    entry: `${seq}-0`,
    last: true,
    type: 'session.deleted',
    data: { sessionId: `${taskId}-session` },
  };
}

export interface Backend {
  name: string;
  client: () => RedisClient;
  stop: () => Promise<void>;
}

/** A single redis-server or a 3-master Cluster, each with one shared client for the suite. */
export async function startBackend(kind: 'single' | 'cluster'): Promise<Backend> {
  const server = kind === 'single' ? await startRedis() : await startRedisCluster(3);
  const client = connectRedis('nodes' in server ? { cluster: server.nodes } : { url: server.url });
  return {
    name: kind,
    client: () => client,
    stop: async () => {
      client.disconnect();
      await server.stop();
    },
  };
}

let prefixes = 0;
/** A fresh key prefix, so tests sharing one Redis never see each other's keys. */
export function freshPrefix(): string {
  prefixes += 1;
  return `t${process.pid}x${prefixes}`;
}

/** An admitted prompt handed to an execution's inbox. */
export function delivery(taskId: string, executionId: string, generation: number): InboxMessage {
  return {
    v: 1,
    type: 'prompt.deliver',
    taskId,
    sessionId: `${taskId}-session`,
    executionId,
    data: {
      promptId: `p${generation}`,
      admissionGeneration: generation,
      mode: 'turn',
      origin: 'human',
      text: `prompt ${generation}`,
    },
  };
}

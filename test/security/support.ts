import { taskKey } from '@baton/protocol';
import { seedQueuedTask, startStack, tokenFor, type Stack } from '@baton/testing';

export interface OneGateway extends Stack {
  /** The gateway's ws:// address (Client.connect adds the endpoint's path). */
  ws: string;
  /** Its http:// address, for REST. */
  http: string;
}

/** Redis, one projector and one gateway, each a real process (startStack), every shard owned. */
export async function startOneGateway(): Promise<OneGateway> {
  const stack = await startStack({ gateways: 1, projectors: 1 });
  return { ...stack, ws: stack.gateways[0]!.wsUrl, http: stack.gateways[0]!.url };
}

/** Tenant X, whose task the tenancy attacks aim at: its token (read prompt) and its task keys. */
export const tenantX = {
  id: 'tenant-x',
  token: tokenFor('tenant-x'),
  key: (task: string) => taskKey('tenant-x', task),
};

/** {@link startOneGateway}, with X's task `task` seeded: a live execution on s1, k1 running, k2 queued. */
export async function startWithTaskOfX(task: string): Promise<OneGateway> {
  const stack = await startOneGateway();
  await seedQueuedTask(stack, tenantX.id, task, ['k1', 'k2']);
  return stack;
}

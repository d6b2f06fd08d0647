// What the AHP specs share: one tenant on two real gateways and a projector, the handshake as a
// spec client sends it, and dispatching actions on a channel with the host's answer to each.
import { taskKey } from '@baton/protocol';
import { startStack, tokenFor, type Client, type Stack } from './gateway';

type Json = Record<string, unknown>;

/** The handshake: `initialize` on the root channel, subscribed to `subscriptions`. */
function ahpInitialize(
  c: Client,
  clientId: string,
  subscriptions: string[] = ['ahp-root://'],
  clientInfo?: { name: string; version: string },
): Promise<Json> {
  return c.rpc('initialize', {
    channel: 'ahp-root://',
    protocolVersions: ['1.0.0'],
    clientId,
    ...(clientInfo ? { clientInfo } : {}),
    initialSubscriptions: subscriptions,
  });
}

/** The action envelopes a client was sent, on one channel or on all. */
const ahpEnvelopes = (c: Client, channel?: string): Json[] =>
  c.messages
    .filter((m) => m.method === 'action')
    .map((m) => m.params as Json)
    .filter((e) => channel === undefined || e.channel === channel);

/** Dispatches actions on one channel, and waits for the host's answer (the echo) to each. */
function ahpDispatcher(c: Client, channel: string) {
  return {
    send: (clientSeq: number, action: Json) =>
      c.send({ jsonrpc: '2.0', method: 'dispatchAction', params: { channel, clientSeq, action } }),
    answer: (clientSeq: number) =>
      c.next(
        (m) =>
          m.method === 'action' &&
          ((m.params as Json).origin as Json | undefined)?.clientSeq === clientSeq,
        `the answer to clientSeq ${clientSeq} on ${channel}`,
      ),
  };
}

/** What `startStack` takes. */
type StackOptions = Parameters<typeof startStack>[0];

/**
 * A stack started before the file's tests and stopped after them, and a tenant's token and task
 * keys on it. Read `stack`, `A` and `B` (its first two gateways' WebSocket URLs) inside tests.
 */
export function tenantStack(tenant: string, options: StackOptions) {
  let started: Stack | undefined;
  beforeAll(async () => {
    started = await startStack(options);
  });
  afterAll(() => started?.stop());
  const stack = (): Stack => {
    if (!started) throw new Error('the stack starts in beforeAll: read it inside a test');
    return started;
  };
  return {
    get stack() {
      return stack();
    },
    get A() {
      return stack().gateways[0]!.wsUrl;
    },
    get B() {
      return stack().gateways[1]!.wsUrl;
    },
    tok: tokenFor(tenant),
    K: (taskId: string) => taskKey(tenant, taskId),
  };
}

/**
 * A stack of two gateways (A, B) and a projector for a tenant ({@link tenantStack}), and the
 * steps of a client written from the AHP specification.
 */
export function ahpStack(tenant: string) {
  return Object.assign(tenantStack(tenant, { gateways: 2, projectors: 1 }), {
    initialize: ahpInitialize,
    envelopes: ahpEnvelopes,
    dispatcher: ahpDispatcher,
  });
}

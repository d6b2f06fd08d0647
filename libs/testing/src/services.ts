import { spawnGateway, spawnProjector, type GatewayProc, type ServiceProc } from './gateway';
import { waitFor } from './wait';

/** Resolves once the gateway is ready: its /readyz answers 200, every shard has an owner. */
export async function everyShardOwned(gateway: GatewayProc, timeoutMs = 30_000): Promise<void> {
  await waitFor(
    async () => (await fetch(`${gateway.url}/readyz`)).status === 200,
    'every shard owned',
    timeoutMs,
  );
}

export interface Services {
  projectors: ServiceProc[];
  gateway: GatewayProc;
  stop(): Promise<void>;
}

/**
 * Projectors and a gateway on a Redis the test started its own way (a cluster, the compose
 * file's users, a link it can cut), each a real process with the env given; resolves once
 * every shard is owned.
 */
export async function startProjectorsAndGateway(o: {
  projectors: Record<string, string>[];
  gateway: Record<string, string>;
}): Promise<Services> {
  const [gateway, ...projectors] = await Promise.all([
    spawnGateway(o.gateway),
    ...o.projectors.map((env) => spawnProjector(env)),
  ]);
  const stop = async () => {
    await Promise.all([gateway.stop(), ...projectors.map((p) => p.stop())]);
  };
  await everyShardOwned(gateway).catch(async (err: unknown) => {
    await stop();
    throw err;
  });
  return { projectors, gateway, stop };
}

import { existsSync } from 'node:fs';
import { Redis } from 'ioredis';
import { startRedis } from './index';

jest.setTimeout(30_000);

describe('redis harness', () => {
  it('restarts a killed AOF server on the same port with its data, and cleans up on stop', async () => {
    const server = await startRedis({ aof: true });
    expect(server.port).not.toBe(6379);
    const client = new Redis({ port: server.port, maxRetriesPerRequest: null, lazyConnect: true });
    client.on('error', () => undefined);
    await client.set('k', 'v');
    await server.kill();
    await server.restart();
    expect(await client.get('k')).toBe('v');
    client.disconnect();
    await server.stop();
    expect(existsSync(server.dir)).toBe(false);
  });
});

import { Counter, Registry } from 'prom-client';
import { serveHealth, within, type HealthCheck } from './index';

describe('serveHealth', () => {
  it('serves /metrics, and /healthz as its check says: ok, the reason, a failure, a timeout', async () => {
    const registry = new Registry();
    new Counter({ name: 'x_total', help: 'x', registers: [registry] }).inc();
    let check: HealthCheck = () => null;
    const h = await serveHealth({
      registry,
      port: 0,
      host: '127.0.0.1',
      check: () => check(),
      checkTimeoutMs: 100,
      timeoutReason: 'too slow',
    });
    const get = async (path: string) => {
      const res = await fetch(`http://127.0.0.1:${h.port}${path}`);
      return [res.status, await res.text()] as const;
    };
    try {
      expect((await get('/metrics'))[1]).toContain('x_total 1');
      expect(await get('/healthz')).toEqual([200, 'ok\n']);
      check = async () => 'Redis has not answered for 3000 ms';
      expect(await get('/healthz')).toEqual([
        503,
        'unhealthy: Redis has not answered for 3000 ms\n',
      ]);
      check = () => {
        throw new Error('boom');
      };
      expect(await get('/healthz')).toEqual([503, 'unhealthy: health check failed: boom\n']);
      check = () => new Promise(() => undefined);
      expect(await get('/healthz')).toEqual([503, 'unhealthy: too slow\n']);
      expect((await get('/other'))[0]).toBe(404);
    } finally {
      await h.close();
    }
  });
});

describe('within', () => {
  it('gives the value when it comes in time, the fallback when it does not, and passes a rejection on', async () => {
    await expect(within(Promise.resolve(7), 1_000, 'late')).resolves.toBe(7);
    const never = new Promise<number>(() => undefined);
    await expect(within(never, 10, 'late')).resolves.toBe('late');
    await expect(within(Promise.reject(new Error('down')), 1_000, 'late')).rejects.toThrow('down');
  });
});

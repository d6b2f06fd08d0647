import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pump, sendDroppingRefused } from '../src/pump';
import { RecordingError, resolveRecording } from '../src/recordings';

describe('resolveRecording', () => {
  const root = mkdtempSync(join(tmpdir(), 'baton-rec-'));
  const dir = join(root, 'recordings');
  mkdirSync(join(dir, 'sub'), { recursive: true });
  writeFileSync(join(dir, 'a.jsonl'), '');
  writeFileSync(join(dir, 'sub', 'b.jsonl'), '');
  writeFileSync(join(root, 'secret.jsonl'), '');
  symlinkSync(join(root, 'secret.jsonl'), join(dir, 'link.jsonl'));

  it('finds a recording by name, with or without .jsonl, in sub-folders too', () => {
    expect(resolveRecording('a', dir)).toBe(join(dir, 'a.jsonl'));
    expect(resolveRecording('a.jsonl', dir)).toBe(join(dir, 'a.jsonl'));
    expect(resolveRecording('sub/b', dir)).toBe(join(dir, 'sub', 'b.jsonl'));
    expect(resolveRecording(join(dir, 'a.jsonl'), dir)).toBe(join(dir, 'a.jsonl'));
  });

  it('refuses whatever leads out of the folder', () => {
    for (const name of [
      '../secret',
      '../secret.jsonl',
      join(root, 'secret.jsonl'),
      '/etc/passwd',
    ]) {
      expect(() => resolveRecording(name, dir)).toThrow(/outside the recordings folder/);
    }
    expect(() => resolveRecording('link', dir)).toThrow(/leads outside/);
    expect(() => resolveRecording('.', dir)).toThrow(RecordingError);
  });

  it('says when a recording or the folder is missing', () => {
    expect(() => resolveRecording('nope', dir)).toThrow(/not found/);
    expect(() => resolveRecording('sub', dir)).toThrow(/not found/);
    expect(() => resolveRecording('a', join(root, 'missing'))).toThrow(/does not exist/);
  });
});

describe('Pump', () => {
  /** A pump of 2-item batches bounded at 3 pending, with 1..6 pushed; `full` has each onFull. */
  const overfilled = (send: (batch: number[]) => Promise<void>) => {
    const full: number[] = [];
    const pump = new Pump<number>({
      send,
      maxBatch: 2,
      maxPending: 3,
      onFull: (pending) => full.push(pending),
    });
    for (let i = 1; i <= 6; i++) pump.push(i);
    return { pump, full };
  };

  it('batches what arrives together, keeps order, and retries a failed batch as it was', async () => {
    const sent: number[][] = [];
    let failures = 1;
    const pump = new Pump<number>({
      send: async (batch) => {
        if (failures-- > 0) throw new Error('redis down');
        sent.push(batch);
      },
    });
    pump.push(1, 2);
    pump.push(3);
    await pump.drain();
    pump.push(4);
    await pump.drain();
    expect(sent).toEqual([[1, 2, 3], [4]]);
  });

  it('with a linger, gathers what arrives within it into one send, and a drain sends at once', async () => {
    const sent: number[][] = [];
    const pump = new Pump<number>({
      send: async (batch) => {
        sent.push(batch);
      },
      lingerMs: 200,
    });
    const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));
    pump.push(1);
    await tick(20);
    pump.push(2);
    await tick(20);
    expect(sent).toEqual([]);
    await tick(300);
    expect(sent).toEqual([[1, 2]]);
    pump.push(3);
    const started = Date.now();
    await pump.drain();
    expect(Date.now() - started).toBeLessThan(150);
    expect(sent).toEqual([[1, 2], [3]]);
  });

  it('sends what arrives during a send in the next batch, behind it', async () => {
    const sent: number[][] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const pump = new Pump<number>({
      send: async (batch) => {
        sent.push(batch);
        if (sent.length === 1) await gate;
      },
    });
    pump.push(1);
    await Promise.resolve();
    await Promise.resolve();
    pump.push(2);
    pump.push(3);
    release();
    await pump.drain();
    expect(sent).toEqual([[1], [2, 3]]);
  });

  it('holds everything through an outage, says once when past its bound, drops nothing', async () => {
    const sent: number[] = [];
    let down = true;
    const { pump, full } = overfilled(async (batch) => {
      if (down) throw new Error('redis down');
      sent.push(...batch);
    });
    await new Promise((r) => setTimeout(r, 150));
    expect(pump.pending).toBe(6);
    expect(full).toEqual([6]);
    down = false;
    await pump.drain();
    expect(sent).toEqual([1, 2, 3, 4, 5, 6]);
    expect(pump.pending).toBe(0);
  });

  it('counts no backlog behind sends that succeed as an outage', async () => {
    let release!: () => void;
    const { pump, full } = overfilled(() => new Promise<void>((r) => (release = r)));
    await new Promise((r) => setTimeout(r, 10));
    expect(pump.pending).toBe(6);
    for (let i = 0; i < 3; i++) {
      release();
      await new Promise((r) => setTimeout(r, 10));
    }
    await pump.drain();
    expect(full).toEqual([]);
  });

  it('asks a producer ahead of sends that succeed to wait until half its high water is left, never while sends fail', async () => {
    const releases: (() => void)[] = [];
    let failing = false;
    const pump = new Pump<number>({
      send: () =>
        failing
          ? Promise.reject(new Error('redis down'))
          : new Promise<void>((r) => releases.push(r)),
      maxBatch: 2,
      highWater: 4,
    });
    const tick = () => new Promise((r) => setTimeout(r, 5));
    for (let i = 1; i <= 4; i++) pump.push(i);
    expect(pump.backlog()).toBeUndefined(); // at the high water, not past it
    pump.push(5, 6);
    await tick();
    const wait = pump.backlog();
    expect(wait).toBeInstanceOf(Promise);
    let waited = false;
    void wait!.then(() => (waited = true));
    releases.shift()!(); // 4 left: still past half
    await tick();
    expect(waited).toBe(false);
    releases.shift()!(); // 2 left: half the high water
    await tick();
    expect(waited).toBe(true);
    // An outage: the backlog grows but nobody is asked to wait (maxPending is that bound), and a
    // producer already waiting is let go.
    for (let i = 7; i <= 12; i++) pump.push(i);
    await tick();
    const before = pump.backlog();
    expect(before).toBeInstanceOf(Promise);
    let letGo = false;
    void before!.then(() => (letGo = true));
    failing = true;
    releases.shift()!();
    await tick();
    await tick();
    expect(letGo).toBe(true);
    expect(pump.backlog()).toBeUndefined();
    void pump.drain(0);
  });

  it('gives up after its attempts, or at a drain deadline, and says so', async () => {
    const given: number[][] = [];
    const limited = new Pump<number>({
      send: () => Promise.reject(new Error('no')),
      maxAttempts: 2,
      onGiveUp: (_e, batch) => given.push(batch),
    });
    limited.push(1);
    await limited.drain();
    expect(given).toEqual([[1]]);

    const stuck = new Pump<number>({
      send: () => Promise.reject(new Error('no')),
      onGiveUp: (_e, batch) => given.push(batch),
    });
    stuck.push(2);
    expect(await stuck.drain(100)).toBe(false);
    await stuck.drain();
    expect(given).toEqual([[1], [2]]);
  });
});

describe('sendDroppingRefused', () => {
  class Refused extends Error {
    constructor(readonly index: number) {
      super(`item ${index} refused`);
    }
  }
  /** Refuses (writing nothing) any batch holding a negative item, naming the first. */
  const receiver = () => {
    const written: number[] = [];
    const send = (items: readonly number[]) => {
      const bad = items.findIndex((i) => i < 0);
      if (bad !== -1) return Promise.reject(new Refused(bad));
      written.push(...items);
      return Promise.resolve();
    };
    return { written, send };
  };
  const refusedAt = (err: unknown) => (err instanceof Refused ? err.index : undefined);

  it('drops each refused item alone and sends the rest, in order', async () => {
    const { written, send } = receiver();
    const dropped: number[] = [];
    await sendDroppingRefused([-1, 1, 2, -2, 3, -3], send, refusedAt, (i) => dropped.push(i));
    expect(written).toEqual([1, 2, 3]);
    expect(dropped).toEqual([-1, -2, -3]);
  });

  it('throws any other error, for the batch to be retried as it was', async () => {
    const boom = new Error('redis');
    await expect(
      sendDroppingRefused(
        [1],
        () => Promise.reject(boom),
        refusedAt,
        () => undefined,
      ),
    ).rejects.toBe(boom);
  });
});

import { parseMessage, readJson, takeToken } from './frames';

describe('frames', () => {
  it('refuses binary, oversize and non-JSON frames with their own errors', () => {
    expect(readJson(Buffer.from('{}'), 100)).toMatchObject({
      ok: false,
      error: { code: 'invalid_message', message: expect.stringMatching(/^binary frames/) },
    });
    expect(readJson('"é"'.repeat(20), 20)).toMatchObject({
      ok: false,
      error: { code: 'message_too_large', message: 'message is 80 bytes, the limit is 20' },
    });
    expect(readJson('{', 100)).toMatchObject({ ok: false, error: { code: 'invalid_message' } });
    expect(readJson('{"a":1}', 100)).toEqual({ ok: true, value: { a: 1 } });
  });

  it('names the field and the rule, and answers with the request id when there is one', () => {
    expect(parseMessage([1])).toEqual({
      ok: false,
      error: { code: 'invalid_message', message: '(root): expected a JSON object' },
    });
    expect(parseMessage({ v: 1, id: 'a', op: 'fly' })).toMatchObject({
      ok: false,
      id: 'a',
      error: {
        code: 'invalid_message',
        path: 'op',
        message: expect.stringMatching(/^op: unknown op "fly"; expected one of subscribe, /),
      },
    });
    expect(parseMessage({ v: 1, id: 'b', op: 'subscribe', taskId: '' })).toEqual({
      ok: false,
      id: 'b',
      op: 'subscribe',
      error: {
        code: 'invalid_message',
        path: 'taskId',
        message: 'taskId: Too small: expected string to have >=1 characters',
      },
    });
    expect(parseMessage({ v: 2, op: 'ping', id: 'c' })).toMatchObject({
      ok: false,
      error: { path: 'v' },
    });
    expect(parseMessage({ v: 1, op: 'ping', id: 5 })).toMatchObject({
      ok: false,
      error: { path: 'id' },
    });
    expect(parseMessage({ v: 1, op: 'ping', id: 5 })).not.toHaveProperty('id');
    const long = parseMessage({
      v: 1,
      id: 'd',
      op: 'prompt',
      taskId: 't',
      sessionId: 's',
      idempotencyKey: 'k',
      text: 'x'.repeat(100_001),
    });
    expect(long).toMatchObject({ ok: false, error: { code: 'prompt_too_long', path: 'text' } });
    const prompt = {
      v: 1,
      id: 'e',
      op: 'prompt',
      taskId: 't',
      sessionId: 's',
      idempotencyKey: 'k',
      text: 'hi',
    };
    expect(parseMessage(prompt)).toEqual({ ok: true, message: { ...prompt, origin: 'human' } });
  });

  it('rate limiter: a burst of `rate`, then `rate` per second', () => {
    const b = { tokens: 10, tokensAt: 0 };
    const take = (now: number) => takeToken(b, 10, now);
    let taken = 0;
    for (let i = 0; i < 20; i++) if (take(0)) taken++;
    expect(taken).toBe(10);
    expect(take(50)).toBe(false);
    expect(take(100)).toBe(true);
    expect(take(100)).toBe(false);
    for (let i = 0; i < 20; i++) take(10_000);
    expect(take(10_000)).toBe(false);
  });
});

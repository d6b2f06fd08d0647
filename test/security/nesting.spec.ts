// Deeply nested frames: as deep as the default message limit allows (256 KiB of brackets is
// ~130,000 levels). A parser, validator or logger that recurses would overflow its stack; each
// must answer with an error, keep the connection usable and write nothing.
import { Client, loneGatewayForFile, streamLengths, tokenFor } from '@baton/testing';

jest.setTimeout(60_000);

const LIMIT = 262_144; // GATEWAY_MAX_MESSAGE_BYTES' default
const PREFIX = 'nest';
const lone = loneGatewayForFile(PREFIX, 2);
const tok = tokenFor('deep', 'read prompt');

/** `value` wrapped in arrays and objects until the frame is just under the limit. */
function deep(wrap: (inner: string) => string, frame: (value: string) => string): string {
  const open = wrap('\u0000').split('\u0000');
  const room = LIMIT - frame('0').length - 16;
  const depth = Math.floor(room / (open[0]!.length + open[1]!.length));
  return frame(`${open[0]!.repeat(depth)}0${open[1]!.repeat(depth)}`);
}

const shapes = {
  arrays: (s: string) => `[${s}]`,
  objects: (s: string) => `{"a":${s}}`,
};

describe('deeply nested frames', () => {
  it.each(Object.entries(shapes))(
    '/ws: %s nested to the size limit get an error',
    async (_, wrap) => {
      const before = await streamLengths(lone.store, PREFIX);
      const c = await Client.connect(lone.gw.wsUrl, tok);
      const frames = [
        deep(wrap, (v) => v),
        deep(wrap, (v) => `{"id":1,"op":"subscribe","taskId":${v}}`),
        deep(
          wrap,
          (v) =>
            `{"id":2,"op":"prompt","taskId":"t1","sessionId":"s1","text":"x","idempotencyKey":"k","extra":${v}}`,
        ),
      ];
      for (const f of frames) {
        expect(Buffer.byteLength(f)).toBeLessThanOrEqual(LIMIT);
        const from = c.messages.length;
        c.send(f);
        const answer = await c.next(() => true, 'an answer to the nested frame', from);
        const error = (answer.type === 'reply' ? answer.error : answer.error) as
          { code: string; message: string } | undefined;
        expect(error).toMatchObject({ code: expect.any(String), message: expect.any(String) });
      }
      expect((await c.request({ op: 'ping' })).ok).toBe(true);
      expect(c.closed).toBeUndefined();
      await c.close();
      expect(await streamLengths(lone.store, PREFIX)).toEqual(before);
    },
  );

  it.each(Object.entries(shapes))(
    '/ahp: %s nested to the size limit get a JSON-RPC error',
    async (_, wrap) => {
      const c = await Client.connect(lone.gw.wsUrl, tok, '/ahp');
      const frames = [
        deep(wrap, (v) => v),
        deep(wrap, (v) => `{"jsonrpc":"2.0","id":1,"method":"initialize","params":${v}}`),
        deep(wrap, (v) => `{"jsonrpc":"2.0","id":${v},"method":"ping"}`),
      ];
      for (const f of frames) {
        const from = c.messages.length;
        c.send(f);
        const answer = await c.next(() => true, 'an answer to the nested frame', from);
        expect(answer.error).toMatchObject({
          code: expect.any(Number),
          message: expect.any(String),
        });
      }
      expect((await c.rpc('ping')).result).toEqual({});
      expect(c.closed).toBeUndefined();
      await c.close();
      expect((await fetch(`${lone.gw.url}/healthz`)).status).toBe(200);
    },
  );
});

import { ndJsonStream, type Stream } from '@agentclientprotocol/sdk';
import type { Direction } from './frames';

/** Receives every raw NDJSON line, in wire order per direction, before the SDK parses it. */
export type RawLineSink = (direction: Direction, line: string) => void;

const NEWLINE = 0x0a;

/**
 * A byte pass-through that reports each complete line to `sink`. Bytes go on unchanged: the SDK
 * downstream parses exactly what the agent wrote, while the sink sees even the variants the SDK
 * would reject and drop. Lines split on the newline byte, which never occurs inside a UTF-8
 * multi-byte sequence, so decoding per line is safe. Blank lines are skipped, as the SDK does.
 */
export const lineTap = (
  direction: Direction,
  sink: RawLineSink,
): TransformStream<Uint8Array, Uint8Array> => {
  const decoder = new TextDecoder();
  let pending: Uint8Array[] = [];
  const emit = (parts: Uint8Array[]) => {
    const size = parts.reduce((n, p) => n + p.length, 0);
    const bytes = new Uint8Array(size);
    let off = 0;
    for (const p of parts) {
      bytes.set(p, off);
      off += p.length;
    }
    const line = decoder.decode(bytes).replace(/\r$/, '');
    if (line.trim() !== '') sink(direction, line);
  };
  return new TransformStream({
    transform(chunk, controller) {
      let start = 0;
      for (let i = chunk.indexOf(NEWLINE); i !== -1; i = chunk.indexOf(NEWLINE, start)) {
        emit([...pending, chunk.subarray(start, i)]);
        pending = [];
        start = i + 1;
      }
      if (start < chunk.length) pending.push(chunk.slice(start));
      controller.enqueue(chunk);
    },
    flush() {
      // The SDK also handles a last line without a newline; so must the log.
      if (pending.length > 0) emit(pending);
      pending = [];
    },
  });
};

/**
 * An SDK `Stream` over a pair of byte streams with both directions tapped. `toPeer` is where this
 * side writes (a child's stdin, or an agent's stdout); `fromPeer` is what it reads. `outgoing`
 * names the direction of what this side writes.
 */
export const tappedNdJsonStream = (
  toPeer: WritableStream<Uint8Array>,
  fromPeer: ReadableStream<Uint8Array>,
  sink: RawLineSink,
  outgoing: Direction = 'client->agent',
): Stream => {
  const incoming: Direction = outgoing === 'client->agent' ? 'agent->client' : 'client->agent';
  const out = lineTap(outgoing, sink);
  // A write error surfaces on the SDK side as a failed send; nothing to add here.
  out.readable.pipeTo(toPeer).catch(() => undefined);
  return ndJsonStream(out.writable, fromPeer.pipeThrough(lineTap(incoming, sink)));
};

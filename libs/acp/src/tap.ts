import { ndJsonStream, type Stream } from '@agentclientprotocol/sdk';
import type { Direction } from './frames';

/**
 * Receives every raw NDJSON line, in wire order per direction, before the SDK parses it. Returning
 * `false` withholds the line from the SDK (the sink has handled it and the SDK has nothing to do
 * with it); anything else lets it go on.
 */
export type RawLineSink = (direction: Direction, line: string) => boolean | void;

/**
 * Asked after each chunk read from the peer: a promise holds the next read until it settles. Not
 * reading is how a reader pushes back: the pipe fills and the peer's writes block.
 */
export type ReadGate = () => Promise<void> | undefined;

const NEWLINE = 0x0a;

const concat = (parts: readonly Uint8Array[]): Uint8Array => {
  const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) {
    bytes.set(p, off);
    off += p.length;
  }
  return bytes;
};

/**
 * A byte pass-through that reports each complete line to `sink`. The bytes of every line the
 * sink does not withhold go on unchanged: the SDK downstream parses exactly what the agent wrote,
 * while the sink sees even the variants the SDK would reject and drop. Lines split on the newline
 * byte, which never occurs inside a UTF-8 multi-byte sequence, so decoding per line is safe.
 * Blank lines are skipped, as the SDK does.
 *
 * A line is passed on once it is complete (the sink decides on whole lines), in one piece with
 * its neighbours where they are kept too: a chunk of lines that all go on is enqueued as it came.
 * A line within one chunk is decoded where it lies, without a copy.
 */
export const lineTap = (
  direction: Direction,
  sink: RawLineSink,
  gate?: ReadGate,
): TransformStream<Uint8Array, Uint8Array> => {
  const decoder = new TextDecoder();
  /** The start of a line that began in earlier chunks (copies: chunks are not ours to keep). */
  let pending: Uint8Array[] = [];
  const report = (bytes: Uint8Array): boolean => {
    let line = decoder.decode(bytes);
    if (line.endsWith('\r')) line = line.slice(0, -1);
    return line.trim() === '' || sink(direction, line) !== false;
  };
  return new TransformStream({
    transform(chunk, controller) {
      // chunk[from, start) holds complete lines that go on and have not been enqueued yet.
      let from = 0;
      let start = 0;
      for (let i = chunk.indexOf(NEWLINE); i !== -1; i = chunk.indexOf(NEWLINE, start)) {
        if (pending.length > 0) {
          // Only the first line of a chunk can have begun earlier: here from = start = 0.
          const keep = report(concat([...pending, chunk.subarray(0, i)]));
          if (keep) for (const p of pending) controller.enqueue(p);
          else from = i + 1;
          pending = [];
        } else if (!report(chunk.subarray(start, i))) {
          if (start > from) controller.enqueue(chunk.subarray(from, start));
          from = i + 1;
        }
        start = i + 1;
      }
      if (from === 0 && start === chunk.length) controller.enqueue(chunk);
      else if (start > from) controller.enqueue(chunk.subarray(from, start));
      if (start < chunk.length) pending.push(chunk.slice(start));
      // The stream asks for the next chunk only once this promise settles.
      return gate?.();
    },
    flush(controller) {
      // The SDK also handles a last line without a newline; so must the log.
      if (pending.length > 0 && report(concat(pending))) {
        for (const p of pending) controller.enqueue(p);
      }
      pending = [];
    },
  });
};

/**
 * An SDK `Stream` over a pair of byte streams with both directions tapped. `toPeer` is where this
 * side writes (a child's stdin, or an agent's stdout); `fromPeer` is what it reads. `outgoing`
 * names the direction of what this side writes; `gate` can hold the reading of `fromPeer`.
 */
export const tappedNdJsonStream = (
  toPeer: WritableStream<Uint8Array>,
  fromPeer: ReadableStream<Uint8Array>,
  sink: RawLineSink,
  outgoing: Direction = 'client->agent',
  gate?: ReadGate,
): Stream => {
  const incoming: Direction = outgoing === 'client->agent' ? 'agent->client' : 'client->agent';
  const out = lineTap(outgoing, sink);
  // A write error surfaces on the SDK side as a failed send; nothing to add here.
  out.readable.pipeTo(toPeer).catch(() => undefined);
  return ndJsonStream(out.writable, fromPeer.pipeThrough(lineTap(incoming, sink, gate)));
};

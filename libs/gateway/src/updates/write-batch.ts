import type { Socket } from 'node:net';

/** Past this many bytes written to one socket in a batch, it is flushed, and its buffer looked at. */
export const FLUSH_AT = 64 * 1024;

/**
 * The tail hands updates over in batches; while one batch is fanned out, each socket that gets
 * something is corked, so its updates leave in one write instead of one per update. Connections
 * recognise "the current batch" by its epoch (cheaper than a set lookup per update).
 */
export class WriteBatch {
  /** Grows with every batch. */
  epoch = 0;
  active = false;
  private readonly corked: Socket[] = [];

  run(fn: () => void): void {
    this.epoch++;
    this.active = true;
    try {
      fn();
    } finally {
      this.active = false;
      for (const s of this.corked) s.uncork();
      this.corked.length = 0;
    }
  }

  /** Corks `socket` until the batch ends (once per socket and batch). */
  cork(socket: Socket): void {
    socket.cork();
    this.corked.push(socket);
  }
}

import type { Socket } from 'node:net';

/** Past this many unsent bytes a corked socket is flushed, so that corking never hides a backlog. */
const FLUSH_AT = 64 * 1024;

/**
 * The tail hands updates over in batches; while one batch is fanned out, each socket that gets
 * something is corked, so its updates leave in one write instead of one per update.
 */
export class WriteBatch {
  private active = false;
  private readonly corked = new Set<Socket>();

  run(fn: () => void): void {
    this.active = true;
    try {
      fn();
    } finally {
      this.active = false;
      for (const s of this.corked) s.uncork();
      this.corked.clear();
    }
  }

  /** Before writing to `socket`: cork it if a batch is being fanned out. */
  before(socket: Socket): void {
    if (this.active && !this.corked.has(socket)) {
      socket.cork();
      this.corked.add(socket);
    }
  }

  /** After writing to `socket`: flush it early when enough waits. */
  after(socket: Socket): void {
    if (socket.writableLength > FLUSH_AT && this.corked.delete(socket)) socket.uncork();
  }
}

/** A minimal typed event emitter (no node:events, so it runs in browsers). */
export class Emitter<Events extends Record<string, unknown>> {
  private readonly listeners = new Map<keyof Events, Set<(payload: never) => void>>();

  /** Adds a listener; returns the function that removes it. */
  on<K extends keyof Events>(event: K, listener: (payload: Events[K]) => void): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(listener as (payload: never) => void);
    return () => set.delete(listener as (payload: never) => void);
  }

  /** Resolves with the next payload of `event` that satisfies `test`. */
  next<K extends keyof Events>(
    event: K,
    test: (payload: Events[K]) => boolean = () => true,
  ): Promise<Events[K]> {
    return new Promise((resolve) => {
      const off = this.on(event, (p) => {
        if (!test(p)) return;
        off();
        resolve(p);
      });
    });
  }

  protected emit<K extends keyof Events>(event: K, payload: Events[K]): void {
    for (const l of [...(this.listeners.get(event) ?? [])]) {
      try {
        (l as (payload: Events[K]) => void)(payload);
      } catch (err) {
        // A throwing listener must not break the connection's message loop; report it the way
        // the platform reports errors of event handlers.
        const report = (globalThis as { reportError?: (e: unknown) => void }).reportError;
        if (report) report(err);
        else console.error(err);
      }
    }
  }
}

/** How a part of the client tells its owner's listeners: the owner's `emit`, narrowed to `Events`. */
export type Emit<Events> = <K extends keyof Events>(event: K, payload: Events[K]) => void;

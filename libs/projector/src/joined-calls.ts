/**
 * Calls of tasks made in one turn of the event loop (a shard's publications; the reads of a read
 * group: every shard's on a single Redis, a shard's on a Cluster), sent together: a task asks with
 * {@link JoinedCalls.call}, and once the turn is over (setImmediate: the replies that came back
 * together, and what their tasks did with them, are through) the calls go out in batches of at
 * most `most` tasks, each task once per batch (a task has one step in flight; were it here twice,
 * the second call waits for the next batch: batches go out in order on one connection, so Redis
 * runs a task's calls in the order they were made). A batch's answer holds one
 * reply per call, an Error for a call that failed alone; a batch that fails fails every call in it.
 */
export class JoinedCalls<I extends { readonly taskId: string }, R> {
  private pending: { item: I; resolve(r: R): void; reject(err: unknown): void }[] = [];
  private scheduled = false;

  constructor(
    private readonly send: (items: I[]) => Promise<(R | Error)[]>,
    private readonly most: number,
    /** The weight of a call (1 by default): a batch holds at most `mostWeight` of it. */
    private readonly weight: (item: I) => number = () => 1,
    private readonly mostWeight = Infinity,
  ) {}

  call(item: I): Promise<R> {
    return new Promise((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    this.scheduled = false;
    const queue = this.pending;
    this.pending = [];
    while (queue.length > 0) {
      const batch: typeof queue = [];
      const tasks = new Set<string>();
      let weight = 0;
      for (let i = 0; i < queue.length && batch.length < this.most;) {
        const p = queue[i]!;
        const w = this.weight(p.item);
        if (tasks.has(p.item.taskId) || (batch.length > 0 && weight + w > this.mostWeight)) {
          i++;
          continue;
        }
        tasks.add(p.item.taskId);
        weight += w;
        batch.push(p);
        queue.splice(i, 1);
      }
      void this.sendBatch(batch);
    }
  }

  private async sendBatch(
    batch: readonly { item: I; resolve(r: R): void; reject(err: unknown): void }[],
  ) {
    try {
      const replies = await this.send(batch.map((p) => p.item));
      batch.forEach((p, i) => {
        const r = replies[i];
        if (r === undefined) p.reject(new Error('no reply for a joined call'));
        else if (r instanceof Error) p.reject(r);
        else p.resolve(r);
      });
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  }
}

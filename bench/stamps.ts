// Timestamps of updates, kept compact: a run of millions of them must not weigh on the heap it
// measures beside.

/** (task, seq, at) triples in one growing Float64Array. */
export class Stamps {
  buf = new Float64Array(3 * 65_536);
  n = 0;
  add(task: number, seq: number, at: number) {
    if (3 * (this.n + 1) > this.buf.length) {
      const bigger = new Float64Array(this.buf.length * 2);
      bigger.set(this.buf);
      this.buf = bigger;
    }
    const i = 3 * this.n++;
    this.buf[i] = task;
    this.buf[i + 1] = seq;
    this.buf[i + 2] = at;
  }
}

/**
 * REST requests per tenant on this gateway: a token bucket per tenant, `perSecond` refilled each
 * second up to a burst of twice that. Over it, a request is answered 429 before it does anything.
 * (WebSocket messages have a rate per connection, and connections a count per tenant.)
 */
export class TenantRequestRate {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly burst: number;

  constructor(
    private readonly perSecond: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.burst = perSecond * 2;
  }

  /** Takes one request of `tenant`: 0 when it may go on, else the ms until it may. */
  take(tenant: string): number {
    const now = this.now();
    let b = this.buckets.get(tenant);
    if (!b) {
      // A full bucket needs no entry: tenants that stopped sending are forgotten (bounded memory).
      if (this.buckets.size >= 10_000) this.sweep(now);
      this.buckets.set(tenant, (b = { tokens: this.burst, at: now }));
    }
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) * this.perSecond) / 1_000);
    b.at = now;
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - b.tokens) * 1_000) / this.perSecond);
  }

  private sweep(now: number): void {
    for (const [tenant, b] of this.buckets) {
      if (b.tokens + ((now - b.at) * this.perSecond) / 1_000 >= this.burst) {
        this.buckets.delete(tenant);
      }
    }
  }
}

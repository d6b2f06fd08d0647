/**
 * What one tenant holds on this gateway: WebSocket connections (both endpoints) and
 * subscriptions (every connection, both endpoints), each bounded by a setting. Counts are per
 * process: N gateways let a tenant hold N times as much, each bounded.
 */
export class TenantLimits {
  private readonly connections = new Map<string, number>();
  private readonly subscriptions = new Map<string, number>();

  constructor(
    readonly maxConnections: number,
    readonly maxSubscriptions: number,
  ) {}

  /** Takes a connection of `tenant`; false when it holds as many as it may. */
  openConnection(tenant: string): boolean {
    const n = this.connections.get(tenant) ?? 0;
    if (n >= this.maxConnections) return false;
    this.connections.set(tenant, n + 1);
    return true;
  }

  /** Gives back a connection {@link openConnection} took (once per connection: the caller's). */
  closeConnection(tenant: string): void {
    dec(this.connections, tenant);
  }

  connectionsOf(tenant: string): number {
    return this.connections.get(tenant) ?? 0;
  }

  /** True when `tenant` may add one more subscription. */
  maySubscribe(tenant: string): boolean {
    return (this.subscriptions.get(tenant) ?? 0) < this.maxSubscriptions;
  }

  subscriptionsOf(tenant: string): number {
    return this.subscriptions.get(tenant) ?? 0;
  }

  addSubscription(tenant: string): void {
    this.subscriptions.set(tenant, (this.subscriptions.get(tenant) ?? 0) + 1);
  }

  removeSubscription(tenant: string, n = 1): void {
    dec(this.subscriptions, tenant, n);
  }
}

function dec(m: Map<string, number>, key: string, n = 1): void {
  const left = (m.get(key) ?? 0) - n;
  if (left > 0) m.set(key, left);
  else m.delete(key);
}

/**
 * A connection's subscriptions by key, counted against its tenant: every key added or removed
 * moves the tenant's count, whatever code path adds or removes it.
 */
export class TenantCountedMap<V> extends Map<string, V> {
  constructor(
    private readonly limits: TenantLimits | undefined,
    private tenant: string,
  ) {
    super();
  }

  /** Counts against another tenant from now on (an /ahp connection that authenticated); empty only. */
  retenant(tenant: string): void {
    if (this.size > 0) throw new Error('retenant a map that holds subscriptions');
    this.tenant = tenant;
  }

  override set(key: string, value: V): this {
    // Map's constructor calls set for initial entries, before the fields exist.
    if (this.limits && !this.has(key)) this.limits.addSubscription(this.tenant);
    return super.set(key, value);
  }

  override delete(key: string): boolean {
    const had = super.delete(key);
    if (had) this.limits?.removeSubscription(this.tenant);
    return had;
  }

  override clear(): void {
    if (this.size > 0) this.limits?.removeSubscription(this.tenant, this.size);
    super.clear();
  }
}

// An AHP client written from the spec, not from the gateway's code: raw JSON-RPC over /ahp, the
// chat's state folded with the spec's reducer (spec-reducer.ts).
import { Client } from './gateway';
import { reduce } from './spec-reducer';
import { waitFor } from './wait';

type Json = Record<string, unknown>;

/** Connects, initializes as VS Code does, then folds every action the host sends on one chat. */
export class AhpClient {
  state: Json = {};
  lastSeq = 0;
  private constructor(
    readonly c: Client,
    readonly chat: string,
  ) {}

  /**
   * A client `clientId` on the gateway at `wsUrl`, subscribed from the start to `chat` (and to
   * `alsoSubscribe`), holding the chat's snapshot.
   */
  static async open(
    wsUrl: string,
    token: string,
    clientId: string,
    chat: string,
    alsoSubscribe: string[] = [],
  ): Promise<AhpClient> {
    const c = await Client.connect(wsUrl, token, '/ahp');
    const me = new AhpClient(c, chat);
    const init = await c.rpc('initialize', {
      channel: 'ahp-root://',
      protocolVersions: ['1.0.0'],
      clientId,
      clientInfo: { name: 'Visual Studio Code', version: '1.107.0' },
      initialSubscriptions: [...alsoSubscribe, chat],
    });
    if (init.error !== undefined) throw new Error(`initialize: ${JSON.stringify(init.error)}`);
    const snaps = (init.result as Json).snapshots as Json[];
    const snap = snaps.find((s) => s.resource === chat)!;
    me.state = snap.state as Json;
    me.lastSeq = snap.fromSeq as number;
    return me;
  }

  /** Sends a chat action (`dispatchAction`), numbered `clientSeq` as the client counts them. */
  dispatch(clientSeq: number, action: Json): void {
    this.c.send({
      jsonrpc: '2.0',
      method: 'dispatchAction',
      params: { channel: this.chat, clientSeq, action },
    });
  }

  /** Starts a turn as VS Code does: the user's message, under the client's own turn id. */
  startTurn(clientSeq: number, turnId: string, text: string): void {
    this.dispatch(clientSeq, {
      type: 'chat/turnStarted',
      turnId,
      startedAt: new Date().toISOString(),
      message: { text, origin: { kind: 'user' } },
    });
  }

  /** Folds what the host sent since the last look (in serverSeq order). */
  fold(): Json {
    for (const m of this.c.messages as Json[]) {
      if (m.method !== 'action') continue;
      const p = m.params as Json;
      if (p.channel !== this.chat || (p.serverSeq as number) <= this.lastSeq) continue;
      this.state = reduce(this.state, p.action as Json);
      this.lastSeq = p.serverSeq as number;
    }
    return this.state;
  }

  actions(): Json[] {
    return (this.c.messages as Json[])
      .filter((m) => m.method === 'action' && (m.params as Json).channel === this.chat)
      .map((m) => (m.params as Json).action as Json);
  }

  async turnEnded(id: string): Promise<Json> {
    return waitFor(
      () => ((this.fold().turns as Json[]) ?? []).find((x) => x.id === id) ?? null,
      `turn ${id} to end`,
      60_000,
    );
  }
}

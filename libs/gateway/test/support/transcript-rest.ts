// A session's transcript as the gateway's transcript specs write and read it: session s1's events
// with session s2's between them, and REST pages from a cursor to the end.
import type { TranscriptEntry } from '@baton/protocol';
import type { EventStore, TranscriptWrite } from '@baton/store';
import type { TranscriptEvent } from '@baton/transcript';

export interface TranscriptPage {
  events: TranscriptEntry[];
  cursor: string;
  gap?: unknown;
}

/** GETs on one gateway with one tenant's token. */
export class RestReader {
  constructor(
    private readonly http: string,
    private readonly tok: string,
  ) {}

  async get(path: string): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${this.http}${path}`, {
      headers: { authorization: `Bearer ${this.tok}` },
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  /** Every page of transcript `path` from `after`, `limit` at a time, until an empty one. */
  async pageAll(
    path: string,
    limit: number,
    after?: string,
  ): Promise<{ pages: TranscriptPage[]; events: TranscriptEntry[] }> {
    const pages: TranscriptPage[] = [];
    for (;;) {
      const r = await this.get(`${path}?limit=${limit}${after ? `&after=${after}` : ''}`);
      expect(r.status).toBe(200);
      const page = r.body as unknown as TranscriptPage;
      pages.push(page);
      if (page.events.length === 0) return { pages, events: pages.flatMap((p) => p.events) };
      after = page.cursor;
    }
  }
}

/**
 * Appends `s1Events` to session s1 of `key` (execution x1) one write each, every one followed by
 * `s2Between(i)` of session s2 (execution x2): a page of s1 has to read on past s2's entries.
 */
export async function appendBetween(
  store: EventStore,
  key: string,
  s1Events: readonly TranscriptEvent[],
  s2Between: (i: number) => TranscriptEvent[],
): Promise<void> {
  const write = (sessionId: string, executionId: string, event: TranscriptEvent) =>
    ({ sessionId, executionId, event }) satisfies TranscriptWrite;
  for (const [i, e] of s1Events.entries()) {
    await store.transcripts.append(key, [write('s1', 'x1', e)]);
    await store.transcripts.append(
      key,
      s2Between(i).map((o) => write('s2', 'x2', o)),
    );
  }
}

import { stepUpdate } from '@baton/ahp';
import { SCHEMA_VERSION, endsGroup, type TaskView, type Update } from '@baton/protocol';
import { clientView } from '../tenancy';

interface Entry {
  taskId: string;
  /** The view's seq: a stored view never changes for a seq (commit-6.lua keeps the first). */
  seq: number;
  /** When the view was last known to be the task's current one. */
  checkedAt: number;
  view: TaskView;
  /**
   * The view serialized as its tenant's clients see it, the core of every full-task frame; made
   * when first needed for a view advanced by updates.
   */
  json: string | undefined;
  /** The size of `json`, or while it is not made, an estimate (the last one plus the updates'). */
  jsonBytes: number;
  /** Updates of an entry whose group has not ended yet, applied: the view once it ends. */
  partial: TaskView | undefined;
  /** One session's part of the view, built once per session asked for. */
  sessions: Map<string, TaskView>;
  /** /ws snapshot frames by session filter and resync flag. */
  frames: Map<string, Buffer>;
  bytes: number;
  /** Last use (Date.now()): entries are kept in order of it, least recently used first. */
  usedAt: number;
}

/**
 * Task views by (task, version), each serialized once and shared by every subscriber: a
 * subscribe, a resync or a REST read of a version already seen costs neither a read of the view
 * from Redis nor its parsing nor its serialization, and the snapshot frames sent to many
 * sockets are one Buffer (ws does not copy a Buffer it is given). Bounded by bytes, least
 * recently used first out; only the newest version of a task is kept. A view nobody asked for
 * in `idleMs` is dropped too, so a gateway that has served many tasks over time holds the views
 * of those still in use, not the bound's worth of every task it ever served.
 */
export class ViewCache {
  private readonly byTask = new Map<string, Entry>();
  /** A view object handed out (the task's, or one session's part) → its entry and filter. */
  private readonly owners = new WeakMap<TaskView, { entry: Entry; session: string }>();
  private total = 0;

  private sweptAt: number;

  constructor(
    readonly maxBytes: number,
    /** 0: kept until the byte bound pushes them out. */
    readonly idleMs = 0,
    private readonly now: () => number = () => Date.now(),
  ) {
    this.sweptAt = now();
  }

  get enabled(): boolean {
    return this.maxBytes > 0;
  }

  get bytes(): number {
    return this.total;
  }

  get size(): number {
    return this.byTask.size;
  }

  /** The cached view of `taskId` at `seq`, if any (and marks it recently used). */
  get(taskId: string, seq: number): TaskView | undefined {
    const e = this.byTask.get(taskId);
    if (!e || e.seq !== seq) return undefined;
    e.checkedAt = e.usedAt = this.now();
    this.byTask.delete(taskId);
    this.byTask.set(taskId, e);
    return e.view;
  }

  /** The cached view of `taskId` if it was current at most `maxAgeMs` ago. */
  recent(taskId: string, maxAgeMs: number): TaskView | undefined {
    const e = this.byTask.get(taskId);
    if (!e || this.now() - e.checkedAt > maxAgeMs) return undefined;
    e.usedAt = this.now();
    this.byTask.delete(taskId);
    this.byTask.set(taskId, e);
    return e.view;
  }

  /** Keeps `view` as its task's current one (unless a newer one is kept); returns the kept one. */
  put(view: TaskView): TaskView {
    const old = this.byTask.get(view.taskId);
    if (old && old.seq >= view.seq) return old.seq === view.seq ? old.view : view;
    if (old) this.drop(old);
    const json = JSON.stringify(clientView(view));
    const now = this.now();
    this.sweep(now);
    const e: Entry = {
      taskId: view.taskId,
      seq: view.seq,
      checkedAt: now,
      usedAt: now,
      view,
      json,
      jsonBytes: json.length,
      partial: undefined,
      sessions: new Map(),
      frames: new Map(),
      bytes: json.length,
    };
    if (e.bytes > this.maxBytes) return view;
    this.byTask.set(view.taskId, e);
    this.owners.set(view, { entry: e, session: '' });
    this.total += e.bytes;
    this.evict(e);
    return view;
  }

  /** The view with only `sessionId`'s session, the same object for every caller of a version. */
  session(view: TaskView, sessionId: string): TaskView {
    const o = this.owners.get(view);
    const build = (): TaskView => ({
      ...view,
      sessions: view.sessions.filter((s) => s.sessionId === sessionId),
    });
    if (!o || o.session !== '' || this.byTask.get(o.entry.taskId) !== o.entry) return build();
    let part = o.entry.sessions.get(sessionId);
    if (!part) {
      part = build();
      o.entry.sessions.set(sessionId, part);
      this.owners.set(part, { entry: o.entry, session: sessionId });
    }
    return part;
  }

  /**
   * The /ws `snapshot` message of `view` (keyed by the task key; the message carries the client's
   * task id: a key's subscribers are all of its tenant), serialized once per version, filter and
   * flag.
   */
  snapshotFrame(view: TaskView, resync: boolean): Buffer {
    const o = this.owners.get(view);
    const head = `{"v":${SCHEMA_VERSION},"type":"snapshot","resync":${resync},"task":`;
    if (!o || this.byTask.get(o.entry.taskId) !== o.entry) {
      return Buffer.from(`${head}${JSON.stringify(clientView(view))}}`);
    }
    const key = `${o.session}\u0000${resync}`;
    let frame = o.entry.frames.get(key);
    if (!frame) {
      const json = o.session === '' ? this.jsonOf(o.entry) : JSON.stringify(clientView(view));
      frame = Buffer.from(`${head}${json}}`);
      o.entry.frames.set(key, frame);
      o.entry.bytes += frame.length;
      this.total += frame.length;
      this.evict(o.entry);
    }
    return frame;
  }

  private jsonOf(e: Entry): string {
    if (e.json !== undefined) return e.json;
    const json = JSON.stringify(clientView(e.view));
    e.json = json;
    e.bytes += json.length - e.jsonBytes;
    this.total += json.length - e.jsonBytes;
    e.jsonBytes = json.length;
    return json;
  }

  /**
   * Applies an update the gateway's tail decoded to the task's cached view, so that the next
   * version is neither read from Redis nor parsed (nor serialized, until a snapshot needs it). A
   * view is kept only at the end of an update's group, as the owner stores it; an update it
   * cannot follow (a gap, a session it does not have) drops it: the next ask reads it again.
   * `bytes` gives the update's wire size, what the view's estimate grows by (asked for only
   * when the task's view is cached).
   */
  advance(u: Update, bytes: () => number): void {
    const e = this.byTask.get(u.taskId);
    if (!e) return;
    const base = e.partial ?? e.view;
    if (u.seq <= base.seq) return;
    const r = stepUpdate(base, u);
    if (r.kind !== 'applied') {
      this.drop(e);
      return;
    }
    if (!endsGroup(u)) {
      e.partial = r.view;
      return;
    }
    const jsonBytes = e.jsonBytes + bytes();
    const next: Entry = {
      taskId: e.taskId,
      seq: r.view.seq,
      checkedAt: this.now(),
      // Kept in order of use: a view whose task moves is one its watchers are about to ask for.
      usedAt: this.now(),
      view: r.view,
      json: undefined,
      jsonBytes,
      partial: undefined,
      sessions: new Map(),
      frames: new Map(),
      bytes: jsonBytes,
    };
    this.drop(e);
    if (next.bytes > this.maxBytes) return;
    this.byTask.set(next.taskId, next);
    this.owners.set(next.view, { entry: next, session: '' });
    this.total += next.bytes;
    this.evict(next);
  }

  /**
   * Drops the views not used for `idleMs`, at most every quarter of it (on a put: a gateway that
   * reads nothing new keeps what it has, within the byte bound). The map is in order of use, so
   * this stops at the first view still in use.
   */
  private sweep(now: number): void {
    if (this.idleMs <= 0 || now - this.sweptAt < this.idleMs / 4) return;
    this.sweptAt = now;
    for (const e of this.byTask.values()) {
      if (now - e.usedAt < this.idleMs) return;
      this.drop(e);
    }
  }

  /** Forgets the task's view: what was cached may be no longer the task's history. */
  forget(taskId: string): void {
    const e = this.byTask.get(taskId);
    if (e) this.drop(e);
  }

  private drop(e: Entry): void {
    this.byTask.delete(e.taskId);
    this.total -= e.bytes;
  }

  /** Least recently used out until within the bound; `keep` (in use right now) stays. */
  private evict(keep: Entry): void {
    for (const e of this.byTask.values()) {
      if (this.total <= this.maxBytes) return;
      if (e !== keep) this.drop(e);
    }
  }
}

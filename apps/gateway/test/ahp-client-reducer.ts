// AHP 1.0.0's chat reducer as a client has it, written from the specification alone (no Baton
// code): the turn lifecycle, pending messages and backgroundWork. The conformance tests fold what
// the host sends through it.
type Json = Record<string, unknown>;

/** AHP's chat reducer as the spec states it (turns, pending messages, backgroundWork). */
export function reduce(s: Json, a: Json): Json {
  const status = (st: Json, activity: number) => ((st.status as number) & ~31) | activity;
  const active = s.activeTurn as Json | undefined;
  switch (a.type) {
    case 'chat/turnStarted': {
      let n: Json = {
        ...s,
        activeTurn: {
          id: a.turnId,
          startedAt: a.startedAt,
          message: a.message,
          responseParts: [],
          usage: undefined,
        },
        modifiedAt: a.startedAt,
      };
      n.status = status(n, 8) & ~32;
      if (a.queuedMessageId) {
        if ((n.steeringMessage as Json | undefined)?.id === a.queuedMessageId) {
          n = { ...n, steeringMessage: undefined };
        }
        const q = ((n.queuedMessages as Json[] | undefined) ?? []).filter(
          (m) => m.id !== a.queuedMessageId,
        );
        n = { ...n, queuedMessages: q.length ? q : undefined };
      }
      return n;
    }
    case 'chat/turnComplete':
    case 'chat/turnCancelled':
    case 'chat/error': {
      if (!active || active.id !== a.turnId) return s;
      const state =
        a.type === 'chat/turnComplete'
          ? 'complete'
          : a.type === 'chat/turnCancelled'
            ? 'cancelled'
            : 'error';
      const turn = { ...active, duration: a.duration, state };
      const n: Json = {
        ...s,
        turns: [...(s.turns as Json[]), turn],
        activeTurn: undefined,
        modifiedAt: new Date(
          Date.parse(active.startedAt as string) + (a.duration as number),
        ).toISOString(),
      };
      n.status = status(n, state === 'error' ? 2 : 1);
      return n;
    }
    case 'chat/pendingMessageSet': {
      if (a.kind === 'steering') return { ...s, steeringMessage: { id: a.id, message: a.message } };
      const q = (s.queuedMessages as Json[] | undefined) ?? [];
      const e = { id: a.id, message: a.message };
      const i = q.findIndex((m) => m.id === a.id);
      return { ...s, queuedMessages: i < 0 ? [...q, e] : q.map((m, j) => (j === i ? e : m)) };
    }
    case 'chat/pendingMessageRemoved': {
      if (a.kind === 'steering') {
        const m = s.steeringMessage as Json | undefined;
        return m?.id === a.id ? { ...s, steeringMessage: undefined } : s;
      }
      const q = s.queuedMessages as Json[] | undefined;
      if (!q?.some((m) => m.id === a.id)) return s;
      const r = q.filter((m) => m.id !== a.id);
      return { ...s, queuedMessages: r.length ? r : undefined };
    }
    case 'chat/queuedMessagesReordered': {
      const q = s.queuedMessages as Json[] | undefined;
      if (!q) return s;
      const order = (a.order as string[]).filter((id, i, all) => all.indexOf(id) === i);
      const head = order.flatMap((id) => q.filter((m) => m.id === id));
      return {
        ...s,
        queuedMessages: [...head, ...q.filter((m) => !order.includes(m.id as string))],
      };
    }
    case 'chat/backgroundWorkSet': {
      const l = (s.backgroundWork as Json[] | undefined) ?? [];
      const w = a.work as Json;
      const i = l.findIndex((x) => x.id === w.id);
      return { ...s, backgroundWork: i < 0 ? [...l, w] : l.map((x, j) => (j === i ? w : x)) };
    }
    case 'chat/backgroundWorkRemoved': {
      const l = s.backgroundWork as Json[] | undefined;
      if (!l?.some((x) => x.id === a.id)) return s;
      return { ...s, backgroundWork: l.filter((x) => x.id !== a.id) };
    }
    default:
      return s;
  }
}

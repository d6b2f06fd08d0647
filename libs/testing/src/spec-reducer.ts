// AHP 1.0.0's chat reducer as a client has it, written from the specification alone (no Baton
// code): the turn lifecycle, response parts (markdown, reasoning), usage, tool calls with their
// content and confirmation, pending messages and backgroundWork. The conformance tests fold what
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
    case 'chat/toolCallStart': {
      if (!active || active.id !== a.turnId) return s;
      const toolCall = {
        status: 'streaming',
        toolCallId: a.toolCallId,
        toolName: a.toolName,
        displayName: a.displayName,
        intention: a.intention,
        contributor: a.contributor,
        _meta: a._meta,
      };
      const parts = [...(active.responseParts as Json[]), { kind: 'toolCall', toolCall }];
      return { ...s, activeTurn: { ...active, responseParts: parts } };
    }
    case 'chat/responsePart': {
      if (!active || active.id !== a.turnId) return s;
      const parts = [...(active.responseParts as Json[]), a.part as Json];
      return { ...s, activeTurn: { ...active, responseParts: parts } };
    }
    case 'chat/delta':
    case 'chat/reasoning': {
      // Appends to the markdown (delta) or reasoning part the action names.
      if (!active || active.id !== a.turnId) return s;
      const kind = a.type === 'chat/delta' ? 'markdown' : 'reasoning';
      const parts = (active.responseParts as Json[]).map((p) =>
        p.kind === kind && p.id === a.partId
          ? { ...p, content: `${(p.content as string) ?? ''}${a.content as string}` }
          : p,
      );
      return { ...s, activeTurn: { ...active, responseParts: parts } };
    }
    case 'chat/usage':
      if (!active || active.id !== a.turnId) return s;
      return { ...s, activeTurn: { ...active, usage: a.usage } };
    case 'chat/toolCallContentChanged':
    case 'chat/toolCallDelta':
    case 'chat/toolCallReady':
    case 'chat/toolCallConfirmed':
    case 'chat/toolCallComplete':
      return toolCall(s, a);
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
      // Tool calls still open end cancelled ('skipped').
      const responseParts = (active.responseParts as Json[]).map((p) => {
        const tc = p.toolCall as Json | undefined;
        if (p.kind !== 'toolCall' || !tc || tc.status === 'completed' || tc.status === 'cancelled')
          return p;
        const streaming = tc.status === 'streaming';
        return {
          kind: 'toolCall',
          toolCall: {
            status: 'cancelled',
            ...base(tc),
            invocationMessage: streaming ? (tc.invocationMessage ?? '') : tc.invocationMessage,
            toolInput: streaming ? undefined : tc.toolInput,
            reason: 'skipped',
          },
        };
      });
      const turn = { ...active, responseParts, duration: a.duration, state };
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

const base = (tc: Json, meta?: unknown) => ({
  toolCallId: tc.toolCallId,
  toolName: tc.toolName,
  displayName: tc.displayName,
  intention: tc.intention,
  contributor: tc.contributor,
  _meta: meta ?? tc._meta,
});

/** The tool-call state machine: one tool call of the active turn moves; the status follows. */
function toolCall(s: Json, a: Json): Json {
  const active = s.activeTurn as Json | undefined;
  if (!active || active.id !== a.turnId) return s;
  const parts = active.responseParts as Json[];
  const i = parts.findIndex(
    (p) => p.kind === 'toolCall' && (p.toolCall as Json).toolCallId === a.toolCallId,
  );
  if (i < 0) return s;
  const tc = parts[i]!.toolCall as Json;
  let next: Json | undefined;
  if (a.type === 'chat/toolCallContentChanged' && tc.status === 'running') {
    next = { ...tc, content: a.content };
  } else if (a.type === 'chat/toolCallDelta' && tc.status === 'streaming') {
    next = {
      ...tc,
      ...(a._meta !== undefined ? { _meta: a._meta } : {}),
      partialInput: ((tc.partialInput as string | undefined) ?? '') + ((a.content as string) ?? ''),
      invocationMessage: a.invocationMessage ?? tc.invocationMessage,
    };
  } else if (
    a.type === 'chat/toolCallReady' &&
    ['streaming', 'running', 'pending-confirmation'].includes(tc.status as string)
  ) {
    const p = tc.status === 'pending-confirmation' ? tc : ({} as Json);
    next = a.confirmed
      ? {
          status: 'running',
          ...base(tc, a._meta),
          invocationMessage: a.invocationMessage,
          toolInput: a.toolInput,
          confirmed: a.confirmed,
        }
      : {
          status: 'pending-confirmation',
          ...base(tc, a._meta),
          invocationMessage: a.invocationMessage,
          toolInput: a.toolInput ?? p.toolInput,
          confirmationTitle: a.confirmationTitle ?? p.confirmationTitle,
          riskAssessment: a.riskAssessment ?? p.riskAssessment,
          edits: a.edits ?? p.edits,
          editable: a.editable ?? p.editable,
          ...((a.options ?? p.options) ? { options: a.options ?? p.options } : {}),
        };
  } else if (a.type === 'chat/toolCallConfirmed' && tc.status === 'pending-confirmation') {
    const chosen = ((tc.options as Json[] | undefined) ?? []).find(
      (o) => o.id === a.selectedOptionId,
    );
    next = a.approved
      ? {
          status: 'running',
          ...base(tc, a._meta),
          invocationMessage: tc.invocationMessage,
          toolInput: a.editedToolInput ?? tc.toolInput,
          confirmed: a.confirmed,
          ...(chosen ? { selectedOption: chosen } : {}),
        }
      : {
          status: 'cancelled',
          ...base(tc, a._meta),
          invocationMessage: tc.invocationMessage,
          toolInput: tc.toolInput,
          reason: a.reason,
          reasonMessage: a.reasonMessage,
          userSuggestion: a.userSuggestion,
          ...(chosen ? { selectedOption: chosen } : {}),
        };
  } else if (
    a.type === 'chat/toolCallComplete' &&
    (tc.status === 'running' || tc.status === 'pending-confirmation')
  ) {
    next = {
      status: a.requiresResultConfirmation ? 'pending-result-confirmation' : 'completed',
      ...base(tc, a._meta),
      invocationMessage: tc.invocationMessage,
      toolInput: tc.toolInput,
      confirmed: tc.status === 'running' ? tc.confirmed : 'not-needed',
      ...(tc.status === 'running' && tc.selectedOption
        ? { selectedOption: tc.selectedOption }
        : {}),
      ...(a.result as Json),
    };
  }
  if (!next) return s;
  const responseParts = parts.map((p, j) => (j === i ? { ...p, toolCall: next } : p));
  const n: Json = { ...s, activeTurn: { ...active, responseParts } };
  const blocked = responseParts.some((p) =>
    ['pending-confirmation', 'pending-result-confirmation', 'auth-required'].includes(
      (p.toolCall as Json | undefined)?.status as string,
    ),
  );
  return { ...n, status: ((s.status as number) & ~31) | (blocked ? 24 : 8) };
}

import type { Capabilities } from '@baton/protocol';
import { claudeDialect, isClaudeAgent, type ClaudeState } from './dialects/claude';
import { codexDialect, codexTurnEnded, isCodexAgent, type CodexState } from './dialects/codex';
import { isQwenAgent, qwenDialect, type QwenState } from './dialects/qwen';
import { genericDialect, type GenericState } from './dialects/generic';
import type {
  AgentIdentity,
  Dialect,
  DialectName,
  SessionSetup,
  StepContext,
} from './dialects/types';
import { turnUsageFact } from './dialects/common';
import type { FactBody } from './facts';
import { classify, idKey, type Frame } from './frames';
import { asId, path, rec, text, type JsonRecord } from './json';

/**
 * The whole frame-to-fact function for one execution: shared JSON-RPC bookkeeping (which request
 * a response answers, prompt dispatch and turn end, `session/load` history) plus the dialect the
 * agent's own `initialize` answer selects. Its facts depend on the frames alone and its state is
 * plain data, so the raw frame log alone reproduces every fact (the state is updated in place:
 * see `reduceFrame`).
 */

/** Where a prompt's Baton identity rides on the wire: `session/prompt` `_meta.baton`. */
export const BATON_META_KEY = 'baton';
export interface PromptIdentity {
  promptId: string;
  admissionGeneration: number;
}

/** Each dialect's state, by the dialect's name. */
interface DialectStates {
  claude: ClaudeState;
  codex: CodexState;
  qwen: QwenState;
  generic: GenericState;
}
/** The dialect at work: its name and a state of that dialect, never another's. */
type ActiveDialect = { [N in DialectName]: { name: N; state: DialectStates[N] } }[DialectName];

interface PendingRequest {
  method: string;
  prompt?: PromptIdentity;
  setup?: SessionSetup;
}

export interface AcpState {
  agent?: AgentIdentity;
  /** `clientCapabilities` of the client's `initialize` request: what the client advertised. */
  clientCapabilities?: JsonRecord;
  /** The protocol version the client's `initialize` asked for. */
  askedVersion?: unknown;
  /** What the agent's `initialize` result answered. */
  answered?: NonNullable<Capabilities['answered']>;
  setup?: SessionSetup;
  dialect?: ActiveDialect;
  /** Client-originated requests still waiting for an answer, by JSON-RPC id. */
  pending: Record<string, PendingRequest>;
  /**
   * Admission generations of dispatched prompts whose human cycle has not ended yet, oldest
   * first. A human-origin idle belongs to the oldest: queued prompts run in order.
   */
  awaitingYield: number[];
  /** Updates sent while a `session/load` is answered are history, not activity. */
  loading: boolean;
  negotiated: boolean;
  /**
   * Set when the agent answered `initialize` in a protocol version Baton does not speak: nothing
   * the agent says after that is read (no dialect guesses at it) and the host ends the execution.
   */
  refused?: string;
  /** The protocol version both sides speak in this session, once `initialize` is answered. */
  version?: number;
  /**
   * v2: prompts the agent took in (answered with a `messageId`) whose turn has not ended, oldest
   * first. A v2 turn ends at a `state_update` `idle` with a `stopReason`, not at the answer.
   */
  openTurns: number[];
}

/** The ACP protocol versions a dialect here is written for. */
export const SPOKEN_PROTOCOL_VERSIONS: readonly number[] = [1, 2];

export const initialAcpState = (): AcpState => ({
  pending: {},
  openTurns: [],
  awaitingYield: [],
  loading: false,
  negotiated: false,
});

const DIALECTS: { [N in DialectName]: Dialect<DialectStates[N]> } = {
  claude: claudeDialect,
  codex: codexDialect,
  qwen: qwenDialect,
  generic: genericDialect,
};

/** Chosen from what the agent reports about itself, never from what a user called it. */
export const selectDialect = (agent: AgentIdentity): DialectName =>
  isClaudeAgent(agent)
    ? 'claude'
    : isCodexAgent(agent)
      ? 'codex'
      : isQwenAgent(agent)
        ? 'qwen'
        : 'generic';

/** Reads the agent's identity from an `initialize` result. */
export const agentIdentity = (result: unknown): AgentIdentity => {
  // v1 says `agentInfo` / `agentCapabilities`, v2 `info` / `capabilities`.
  const info = rec(path(result, 'agentInfo')) ?? rec(path(result, 'info'));
  const name = text(info?.name, 200) ?? 'unknown';
  const version = text(info?.version, 100);
  const capabilitiesMeta =
    rec(path(result, 'agentCapabilities', '_meta')) ?? rec(path(result, 'capabilities', '_meta'));
  return {
    name,
    ...(version !== undefined ? { version } : {}),
    ...(capabilitiesMeta !== undefined ? { capabilitiesMeta } : {}),
  };
};

/**
 * Why an `initialize` result cannot be read, or undefined when it is in a version Baton speaks.
 * The agent answers with the version it will speak (ours if it supports it, else its latest):
 * an answer in another version, or with none, is refused, never read by the nearest dialect.
 */
export const unspokenProtocol = (result: unknown, asked: unknown = 1): string | undefined => {
  const v = path(result, 'protocolVersion');
  // Baton speaks the version it asked for in this session, and no other.
  if (typeof v === 'number' && SPOKEN_PROTOCOL_VERSIONS.includes(v) && v === asked)
    return undefined;
  const said =
    v === undefined ? 'no protocolVersion' : `protocolVersion ${JSON.stringify(v).slice(0, 40)}`;
  return `the agent answered initialize with ${said}; Baton asked for ACP protocol version ${JSON.stringify(asked).slice(0, 40)} and speaks no other in this session`;
};

/** Capabilities of an agent as a pure function of its `initialize` result and session setup. */
export const negotiate = (initializeResult: unknown, setup?: SessionSetup): Capabilities => {
  const agent = agentIdentity(initializeResult);
  return DIALECTS[selectDialect(agent)].capabilities(agent, setup);
};

const promptIdentity = (params: unknown): PromptIdentity | undefined => {
  const baton = rec(path(params, '_meta', BATON_META_KEY));
  const promptId = asId(baton?.promptId);
  const gen = baton?.admissionGeneration;
  if (promptId === undefined || typeof gen !== 'number' || !Number.isSafeInteger(gen) || gen < 0) {
    return undefined;
  }
  return { promptId, admissionGeneration: gen };
};

/** What an agent or client said, kept in a fact only when small: else a note that it was not. */
const MAX_RECORDED_CHARS = 8_000;
function bounded(v: JsonRecord): JsonRecord;
function bounded(v: JsonRecord | undefined): JsonRecord | undefined;
function bounded(v: JsonRecord | undefined): JsonRecord | undefined {
  if (v === undefined) return undefined;
  const size = JSON.stringify(v).length;
  return size <= MAX_RECORDED_CHARS ? v : { 'x-baton-omitted': `${size} characters` };
}

const SETUP_METHODS = new Set(['session/new', 'session/load', 'session/resume']);

export interface Reduction {
  state: AcpState;
  facts: FactBody[];
}

const onClientRequest = (state: AcpState, message: JsonRecord): Reduction => {
  const method = message.method as string;
  const entry: PendingRequest = { method };
  const facts: FactBody[] = [];
  let next = state;
  if (method === 'session/prompt') {
    const prompt = promptIdentity(message.params);
    if (prompt !== undefined) {
      entry.prompt = prompt;
      facts.push({ type: 'prompt.dispatched', data: prompt });
      next = { ...next, awaitingYield: [...next.awaitingYield, prompt.admissionGeneration] };
    }
  } else if (method === 'initialize') {
    const clientCapabilities = bounded(rec(path(message.params, 'clientCapabilities')));
    next = { ...next, askedVersion: path(message.params, 'protocolVersion') };
    if (clientCapabilities !== undefined) next = { ...next, clientCapabilities };
  } else if (SETUP_METHODS.has(method)) {
    const meta = rec(path(message.params, '_meta'));
    entry.setup = {
      method,
      ...(meta !== undefined ? { meta } : {}),
      ...(next.clientCapabilities !== undefined
        ? { clientCapabilities: next.clientCapabilities }
        : {}),
      ...(next.version === 2 ? { protocolVersion: 2 } : {}),
    };
    if (method === 'session/load') next = { ...next, loading: true };
  }
  return { state: { ...next, pending: { ...next.pending, [idKey(message)]: entry } }, facts };
};

/*
 * TypeScript cannot carry the pairing of a dialect's name and its state from a name of the union
 * (or a generic one) to the union of ActiveDialect: hence the cast in the two below, where the
 * state comes from the dialect of that very name.
 */
const startDialect = (agent: AgentIdentity, setup: SessionSetup | undefined): ActiveDialect => {
  const name = selectDialect(agent);
  return { name, state: DIALECTS[name].initial(agent, setup) } as ActiveDialect;
};

const stepDialect = <N extends DialectName>(
  active: { name: N; state: DialectStates[N] },
  ctx: StepContext,
): { dialect: ActiveDialect; facts: FactBody[] } => {
  const { state, facts } = DIALECTS[active.name].step(active.state, ctx);
  return { dialect: { name: active.name, state } as ActiveDialect, facts };
};

const onAgentResponse = (state: AcpState, message: JsonRecord): Reduction => {
  const key = idKey(message);
  const request = state.pending[key];
  if (request === undefined) return { state, facts: [] };
  const pending = { ...state.pending };
  delete pending[key];
  let next: AcpState = { ...state, pending };
  const ok = 'result' in message;
  const facts: FactBody[] = [];

  if (request.method === 'initialize' && ok) {
    const refused = unspokenProtocol(message.result, next.askedVersion ?? 1);
    const agentCapabilities = bounded(
      rec(path(message.result, 'agentCapabilities')) ?? rec(path(message.result, 'capabilities')),
    );
    const answered = {
      protocolVersion: path(message.result, 'protocolVersion'),
      ...(agentCapabilities !== undefined ? { agentCapabilities } : {}),
    };
    next =
      refused === undefined
        ? {
            ...next,
            agent: agentIdentity(message.result),
            answered,
            version: path(message.result, 'protocolVersion') as number,
          }
        : { ...next, refused };
  } else if (next.refused !== undefined) {
    // An agent in a protocol we do not speak: its session and turns mean nothing we can read.
  } else if (request.setup !== undefined) {
    if (request.method === 'session/load') next = { ...next, loading: false };
    if (ok && !next.negotiated) {
      const agent = next.agent ?? { name: 'unknown' };
      const dialect = startDialect(agent, request.setup);
      next = { ...next, setup: request.setup, dialect, negotiated: true };
      const asked = {
        ...(next.askedVersion !== undefined ? { protocolVersion: next.askedVersion } : {}),
        ...(next.clientCapabilities !== undefined
          ? { clientCapabilities: next.clientCapabilities }
          : {}),
        ...(request.setup.meta !== undefined ? { sessionMeta: bounded(request.setup.meta) } : {}),
      };
      facts.push({
        type: 'capabilities.negotiated',
        data: {
          ...DIALECTS[dialect.name].capabilities(agent, request.setup),
          asked,
          ...(next.answered !== undefined ? { answered: next.answered } : {}),
        },
      });
    }
  } else if (
    request.method === 'session/prompt' &&
    request.prompt !== undefined &&
    next.version === 2 &&
    ok
  ) {
    // v2 answers when the agent takes the prompt in: its turn runs until a state_update ends it.
    next = { ...next, openTurns: [...next.openTurns, request.prompt.admissionGeneration] };
  } else if (request.method === 'session/prompt' && request.prompt !== undefined) {
    const gen = request.prompt.admissionGeneration;
    // An error answer still ends the turn: the agent is no longer working on that prompt.
    const stopReason = ok ? (text(path(message.result, 'stopReason'), 100) ?? 'unknown') : 'error';
    next = { ...next, awaitingYield: next.awaitingYield.filter((g) => g !== gen) };
    if (next.dialect?.name === 'codex' && !next.loading) {
      const r = codexTurnEnded(next.dialect.state);
      next = { ...next, dialect: { name: 'codex', state: r.state } };
      facts.push(...r.facts);
    }
    const usage = ok && !next.loading ? turnUsageFact(path(message.result, 'usage')) : undefined;
    if (usage !== undefined) facts.push(usage);
    facts.push({ type: 'turn.ended', data: { admissionGeneration: gen, stopReason } });
  }
  return { state: next, facts };
};

const runDialect = (state: AcpState, message: JsonRecord, at: string): Reduction => {
  if (state.loading || state.refused !== undefined) return { state, facts: [] };
  const active = state.dialect ?? startDialect(state.agent ?? { name: 'unknown' }, state.setup);
  const { dialect, facts } = stepDialect(active, { message, at });
  let awaitingYield = state.awaitingYield;
  for (let i = 0; i < facts.length; i++) {
    const f = facts[i]!;
    if (f.type !== 'foreground.idle' || f.data.origin !== 'human') continue;
    const [gen, ...rest] = awaitingYield;
    if (gen === undefined) continue;
    awaitingYield = rest;
    facts[i] = { type: 'foreground.idle', data: { ...f.data, admissionGeneration: gen } };
  }
  // v2: a state_update idle with a stop reason ends the oldest open turn (an autonomous cycle's
  // end has no turn open), after what the same frame's background list registered.
  if (state.version === 2 && state.openTurns.length > 0) {
    const update = rec(path(message, 'params', 'update'));
    if (
      message.method === 'session/update' &&
      update?.sessionUpdate === 'state_update' &&
      update.state === 'idle' &&
      update.stopReason !== undefined
    ) {
      const [gen, ...rest] = state.openTurns;
      state.openTurns = rest;
      awaitingYield = awaitingYield.filter((g) => g !== gen);
      const stopReason = text(update.stopReason, 100) ?? 'unknown';
      facts.push({ type: 'turn.ended', data: { admissionGeneration: gen!, stopReason } });
    }
  }
  // Owned (see reduceFrame): no copy of the whole state per frame.
  state.dialect = dialect;
  state.awaitingYield = awaitingYield;
  return { state, facts };
};

/**
 * One frame in, the facts it proves out. Never throws, whatever the frame holds. It takes the
 * state by ownership (the dialect's maps are updated in place): fold forward, never from an old
 * state twice.
 */
export const reduceFrame = (state: AcpState, frame: Frame): Reduction => {
  const message = frame.message;
  const kind = classify(message);
  if (kind === 'invalid') return { state, facts: [] };
  const m = message as JsonRecord;
  if (frame.direction === 'client->agent') {
    return kind === 'request' && state.refused === undefined
      ? onClientRequest(state, m)
      : { state, facts: [] };
  }
  if (kind === 'response') return onAgentResponse(state, m);
  return runDialect(state, m, frame.at);
};

/** Folds a whole recording: the fixture tests' entry point, and a raw-log re-derivation. */
export const reduceFrames = (
  frames: Iterable<Frame>,
  state: AcpState = initialAcpState(),
): Reduction => {
  let s = state;
  const facts: FactBody[] = [];
  for (const frame of frames) {
    const r = reduceFrame(s, frame);
    s = r.state;
    facts.push(...r.facts);
  }
  return { state: s, facts };
};

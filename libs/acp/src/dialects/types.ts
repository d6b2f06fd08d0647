import type { Capabilities } from '@baton/protocol';
import type { FactBody } from '../facts';
import type { JsonRecord } from '../json';

export type DialectName = 'claude' | 'codex' | 'qwen' | 'generic';

/** What the agent said about itself in its `initialize` result. */
export interface AgentIdentity {
  name: string;
  version?: string;
  /** `agentCapabilities._meta`, where adapters advertise their extensions. */
  capabilitiesMeta?: JsonRecord;
}

/** What the client asked for when it set up the session (`session/new`, `load` or `resume`). */
export interface SessionSetup {
  method: string;
  meta?: JsonRecord;
  /** What the client advertised at `initialize` (`clientCapabilities`). */
  clientCapabilities?: JsonRecord;
  /** The protocol version of the session, when not 1. */
  protocolVersion?: 2;
}

/** Context a dialect step gets from the composite reducer. */
export interface StepContext {
  /** When the tap saw the frame: the only clock a pure dialect has. */
  at: string;
  /** The agent->client message (notification or request) as parsed JSON. */
  message: JsonRecord;
}

export interface Step<S> {
  state: S;
  facts: FactBody[];
}

/**
 * A dialect is a reducer over the agent->client messages of one session, plus the capabilities
 * it attests for the agent that answered `initialize`. Its state is plain data and the facts
 * depend on the frames alone, but `step` owns the state it is given: its maps (tool calls, work)
 * are updated in place, since copying them on every frame made a session with thousands of tool
 * calls quadratic. Never step an old state twice. Turn bookkeeping (prompt
 * dispatch, turn end, `session/load` history) is shared and lives in the composite reducer.
 */
export interface Dialect<S> {
  name: DialectName;
  capabilities(agent: AgentIdentity, setup: SessionSetup | undefined): Capabilities;
  initial(agent: AgentIdentity, setup: SessionSetup | undefined): S;
  /** An agent->client notification or request in the live session. */
  step(state: S, ctx: StepContext): Step<S>;
  /**
   * The agent answered a prompt (ACP v1): that turn is over. Its facts come before the turn's
   * `turn.ended`. Only for what a dialect can learn from a turn ending and nothing else.
   */
  turnEnded?(state: S): Step<S>;
}

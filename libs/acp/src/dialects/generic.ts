import type { Capabilities } from '@baton/protocol';
import { readUpdate, toolFact } from './common';
import type { AgentIdentity, Dialect, Step } from './types';

export interface GenericState {
  /** Tool calls already announced, so a repeated `tool_call` is an update, not a second start. */
  tools: Record<string, true>;
}

export const baseCapabilities = (dialect: string, agent: AgentIdentity): Capabilities => ({
  agent:
    agent.version === undefined
      ? { name: agent.name }
      : { name: agent.name, version: agent.version },
  dialect,
  promptQueueing: false,
  handoff: false,
  attestedKinds: [],
  unambiguousCompletionKinds: [],
});

/**
 * Any ACP agent. It attests nothing about background work, so it never registers any: whatever
 * runs, runs in the foreground, and the session is busy until the prompt answers. Without
 * lineage every tool call is the foreground's.
 */
export const genericDialect: Dialect<GenericState> = {
  name: 'generic',
  capabilities: (agent) => baseCapabilities('generic', agent),
  initial: () => ({ tools: {} }),
  step(state, { message }): Step<GenericState> {
    const read = readUpdate(message);
    if ('facts' in read) return { state, facts: read.facts };
    const { frame } = read;
    if (state.tools[frame.toolCallId] === undefined) {
      state.tools[frame.toolCallId] = true;
      return {
        state,
        facts: [toolFact(frame, { started: frame.first, ownership: 'foreground' })],
      };
    }
    return {
      state,
      facts: frame.status === undefined ? [] : [toolFact(frame, { started: false })],
    };
  },
};

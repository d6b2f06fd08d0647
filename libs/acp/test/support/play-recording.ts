import type { StreamEntry } from '@baton/protocol';
import { Owner } from '@baton/testing';
import { toFact, type FactBody } from '../../src';

/** The session a recording's facts are folded into. */
export const SESSION = 's1';

/**
 * Folds a recording's facts as the owner does, under `policy`: from the execution's start, each
 * prompt submitted just before its dispatch, a decision after each fact, which `observe` then
 * sees. Returns the owner and the outcomes of the prompts' decisions, in order.
 */
export const playRecording = (
  facts: FactBody[],
  policy: 'handoff' | 'coarse',
  observe: (fact: FactBody, o: Owner) => void,
): { o: Owner; decisions: string[] } => {
  const o = new Owner();
  o.command(SESSION, 'session.configure', { admission: policy });
  let seq = 0;
  const decisions: string[] = [];
  const started: FactBody = {
    type: 'execution.started',
    data: { startedAt: '2026-11-10T10:00:00.000Z' },
  };
  for (const f of [started, ...facts]) {
    if (f.type === 'prompt.dispatched') {
      o.submit(SESSION, f.data.promptId, 'human', f.data.promptId);
      decisions.push(...o.decisionsFor(f.data.promptId).map((d) => d?.outcome ?? 'none'));
    }
    const envelope = {
      v: 1 as const,
      taskId: o.taskId,
      sessionId: SESSION,
      executionId: 'e1',
      generation: 1,
      writer: { role: 'worker' as const, instance: 'w', seq: ++seq },
    };
    o.append(toFact(envelope, f) as StreamEntry);
    o.decideNow();
    observe(f, o);
  }
  return { o, decisions };
};

import { PromptSubmit, SCHEMA_VERSION } from '@baton/protocol';
import { Owner } from '@baton/testing';
import { outbox, snapshotOf, stateFromSnapshot } from '../src';

/**
 * A prompt's trace context (one trace per prompt, across processes) is data the core carries,
 * not a decision it makes: what the submit entry brought is what its delivery says, through a
 * queue and a snapshot reload (a new owner after a failover), and nothing is made up where the
 * entry had none.
 */

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

const deliveries = (o: Owner) =>
  outbox(o.state).owed.flatMap((w) =>
    w.message.type === 'prompt.deliver' ? [w.message.data] : [],
  );

function submitTraced(o: Owner, key: string, traceparent?: string): string {
  const promptId = `p-${key}`;
  o.command('s1', 'prompt.submit', {
    promptId,
    idempotencyKey: key,
    text: `prompt ${key}`,
    origin: 'human',
    ...(traceparent ? { traceparent } : {}),
  });
  return promptId;
}

it('delivers a prompt with the trace context it was submitted under', () => {
  const o = new Owner();
  o.execution('s1', 'e1', 1).start();
  const p = submitTraced(o, 'k1', TRACEPARENT);
  expect(deliveries(o)).toEqual([
    expect.objectContaining({ promptId: p, traceparent: TRACEPARENT }),
  ]);
});

it('keeps it while the prompt waits in the queue and across a snapshot (a new owner)', () => {
  const o = new Owner();
  const x = o.execution('s1', 'e1', 1);
  x.start();
  const first = submitTraced(o, 'k1');
  x.dispatch(first, 1);
  const queued = submitTraced(o, 'k2', TRACEPARENT);
  expect(o.session().queue).toEqual([queued]);
  // The stored snapshot is JSON: a new owner reads it back.
  const reloaded = stateFromSnapshot(
    JSON.parse(JSON.stringify(snapshotOf(o.state))),
    o.state.taskId,
  );
  expect(reloaded).not.toBeNull();
  o.state = reloaded!;
  x.fact('turn.ended', { admissionGeneration: 1, stopReason: 'end_turn' });
  x.idle('turn_end', 1);
  const owed = deliveries(o);
  expect(owed).toEqual([expect.objectContaining({ promptId: queued, traceparent: TRACEPARENT })]);
});

it('adds no trace context to a prompt submitted without one', () => {
  const o = new Owner();
  o.execution('s1', 'e1', 1).start();
  submitTraced(o, 'k1');
  expect(deliveries(o)).toHaveLength(1);
  expect(deliveries(o)[0]).not.toHaveProperty('traceparent');
});

it('refuses a submit whose trace context is not a W3C traceparent', () => {
  const entry = (traceparent: string) => ({
    v: SCHEMA_VERSION,
    type: 'prompt.submit',
    taskId: 'acme/t1',
    sessionId: 's1',
    writer: { role: 'gateway', instance: 'g1', seq: 1 },
    data: {
      commandId: 'c1',
      promptId: 'p1',
      idempotencyKey: 'k1',
      text: 'hi',
      origin: 'human',
      traceparent,
    },
  });
  expect(PromptSubmit.safeParse(entry(TRACEPARENT)).success).toBe(true);
  for (const bad of [
    '',
    'not-a-trace',
    TRACEPARENT.toUpperCase(),
    `${TRACEPARENT}\n`,
    '01-' + TRACEPARENT.slice(3),
  ])
    expect([bad, PromptSubmit.safeParse(entry(bad)).success]).toEqual([bad, false]);
});

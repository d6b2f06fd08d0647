import { Fact } from '@baton/protocol';

/** Envelope fields the worker adds; a dialect knows none of them. */
export type FactEnvelopeKey =
  'v' | 'taskId' | 'sessionId' | 'executionId' | 'generation' | 'writer';

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** A fact as a dialect produces it: `{type, data}` for one of the protocol's fact types. */
export type FactBody = DistributiveOmit<Fact, FactEnvelopeKey>;
export type FactEnvelope = Pick<Fact, FactEnvelopeKey>;
export type FactBodyOf<T extends FactBody['type']> = Extract<FactBody, { type: T }>;

/** Wraps a body in its envelope and validates the whole entry against the protocol schema. */
export const toFact = (envelope: FactEnvelope, body: FactBody): Fact =>
  Fact.parse({ ...envelope, ...body });

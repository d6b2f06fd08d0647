export * from './state';
export { own } from './records';
export { evolve } from './evolve';
export { decide, draftEntry, type DecisionDraft, type Timer } from './decide';
export { fold, type Folded } from './fold';
export { taskDecider, type Decider } from './decider';
export { dueTimers, type DueTimers, type OwnerClocks, type TimerBounds } from './due';
export { outbox, type Outbox, type Owed } from './outbox';
export * from './views';
export { STATE_VERSION, snapshotOf, stateFromSnapshot, type TaskSnapshot } from './snapshot';
export * from './history';
export * from './history-query';
export { decisionFenceRefusal, fenceFloorAfter, type FenceHistory } from './fence';
export {
  DEFAULT_ADMISSION_LIMITS,
  queueLimitRefusal,
  utf8Length,
  type AdmissionLimits,
  type LimitRefusal,
} from './admission-limits';

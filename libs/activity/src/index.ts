export * from './state';
export { evolve } from './evolve';
export { decide, draftEntry, type DecisionDraft, type Timer } from './decide';
export { fold, type Folded } from './fold';
export * from './views';
export { STATE_VERSION, snapshotOf, stateFromSnapshot, type TaskSnapshot } from './snapshot';
export * from './history';
export * from './history-query';

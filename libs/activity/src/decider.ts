import type { StreamEntry } from '@baton/protocol';
import { decide, type DecisionDraft, type Timer } from './decide';
import { evolve } from './evolve';
import type { AdmissionLimits } from './admission-limits';
import { initialTaskState, type TaskState } from './state';

/**
 * The shape of a decider (as emmett's `Decider`): where a state starts, how an entry changes it,
 * and what to decide on it. Here a decision answers what the state holds unanswered (commands,
 * queues), or a trigger from outside the stream (a timer).
 */
export interface Decider<State, Entry, Trigger, Decision> {
  readonly initialState: (id: string) => State;
  readonly evolve: (state: State, entry: Entry) => State;
  readonly decide: (state: State, trigger?: Trigger, limits?: AdmissionLimits) => Decision[];
}

/** The domain core of one task: its stream folds into a TaskState, on which the owner decides. */
export const taskDecider: Decider<TaskState, StreamEntry, Timer, DecisionDraft> = {
  initialState: initialTaskState,
  evolve,
  decide,
};

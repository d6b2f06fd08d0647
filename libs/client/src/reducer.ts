// The task view's reducer is shared with the gateway's view cache: one definition of what an
// update does to a view.
export {
  aggregateActivity,
  applyGroup,
  applySessionUpdate,
  applyUpdate,
  GroupBuffer,
  mergeDefined,
  stepUpdate,
  UpdateGapError,
  type StepResult,
} from '@baton/ahp';

export * from './wire';
export * from './background-work';
export * from './reducer';
export * from './mirror';
export * from './turn-content';
export * from './task-view';

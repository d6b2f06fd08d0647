export * from './common';
export * from './background-work';
export * from './entries';
export * from './views';
export * from './updates';
export * from './wire';
export * from './execution';
export * from './json-schema';

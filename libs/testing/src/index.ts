// Test scaffolding shared across projects: only tests and benchmarks import it (eslint.config.mjs).
export * from './wait';
export * from './processes';
export * from './gateway';
export * from './worker';
export * from './owner';
export * from './streams';
export * from './spec-reducer';
export * from './expected-facts';

export * from './schema';
export * from './reducer';
export * from './fold';
export * from './recording';
export * from './usage';

export * from './reducer';

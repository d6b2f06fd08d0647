export * from './reducer';
export * from './client';
export * from './errors';
export { backoffDelay, type BackoffOptions } from '@baton/backoff';
export { Emitter } from './emitter';
export type { WebSocketConstructor, WebSocketLike } from './socket';

export * from './reducer';
export * from './client';
export * from './errors';
export { backoffDelay, type BackoffOptions } from '@baton/backoff';
export { Emitter } from './emitter';
export { duration } from './format';
export type { WebSocketConstructor, WebSocketLike } from './socket';
export {
  foldTranscript,
  type TranscriptEvent,
  type TranscriptItem,
  type MessageItem,
  type ToolItem,
  type PermissionItem,
  type SubagentItem,
} from '@baton/transcript';
export type { TranscriptEntry, TranscriptMessage } from '@baton/protocol';

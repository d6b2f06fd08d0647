export { EventStore, type EventStoreOptions } from './event-store';
export type { DeadLetter } from './families/dead-letters';
export type { ExecutionRef, ExpiredExecutionLease } from './families/executions';
export type { StoredInboxMessage } from './families/inbox';
export type { AcquireResult, EpochHistory, Lease, PutAway } from './families/leases';
export type { RawFrame } from './families/raw-frames';
export type {
  StoredTranscriptEvent,
  TranscriptPage,
  TranscriptWrite,
} from './families/transcripts';
export type { Page } from './families/shared';
export type { Snapshot } from './families/snapshots';
export type { FeedNote, StoredEntry } from './families/task-streams';
export type {
  Committed,
  HistoryRewritten,
  Publication,
  Step,
  StoredUpdate,
  UpdateStreamItem,
} from './families/updates';
export { PUBLISH_MANY_TASKS } from './families/updates';
export { StreamTail } from './tail';
export { decodeStoredEntry, decodeStoredUpdate, type Decoded } from './stored';
export {
  connectRedis,
  duplicateForBlocking,
  logAvailability,
  parseRedisUrl,
  redact,
  redisTargetFromUrl,
  isCluster,
  unixSocketUrl,
} from './connection';
export type {
  AvailabilityChange,
  AvailabilityLog,
  ConnectOptions,
  RedisClient,
  RedisNode,
  RedisTarget,
} from './connection';
export { KeyLayout, fnv1a32, DEFAULT_SHARDS, DEFAULT_PREFIX } from './keys';
export {
  ConflictError,
  FencedError,
  GapError,
  InvalidEntryError,
  StaleSnapshotError,
  StreamBehindError,
  isUnavailableError,
  quietDuringOutages,
} from './errors';
export { compareIds, idTime, maxId } from './ids';

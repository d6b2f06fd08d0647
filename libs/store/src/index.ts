export { EventStore } from './event-store';
export type {
  AcquireResult,
  DeadLetter,
  ExecutionRef,
  ExpiredExecutionLease,
  StoredInboxMessage,
  EventStoreOptions,
  FeedNote,
  Lease,
  Page,
  RawFrame,
  Snapshot,
  StoredEntry,
  StoredUpdate,
} from './event-store';
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
  isUnavailableError,
  quietDuringOutages,
} from './errors';
export { compareIds, maxId } from './ids';

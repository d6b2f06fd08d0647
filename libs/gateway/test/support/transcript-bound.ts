import { EventStore } from '@baton/store';

/**
 * `store` as a worker whose transcript bound is `maxLen` events sees it: its appends trim the
 * transcript stream in Redis.
 */
export const withTranscriptBound = (store: EventStore, maxLen: number): EventStore =>
  new EventStore(store.redis, {
    shards: store.keys.shards,
    prefix: store.keys.prefix,
    transcriptMaxLen: maxLen,
  });

-- Record an entry that failed validation on its way out, with the reason, at most once per source
-- entry: every replica that reads the same stream meets the same bad entry, and the dead-letter
-- stream should hold it once. The source entry stays where it is: stream ids anchor expected-
-- version appends and resume positions, so readers skip it rather than delete it.
--
-- KEYS[1] shard dead-letter stream   KEYS[2] shard hash of recorded sources (source|id -> 1)
-- ARGV[1] source stream key          ARGV[2] source entry id
-- ARGV[3] reason                     ARGV[4] raw fields (JSON)
-- ARGV[5] MAXLEN (approximate); the index is dropped once it holds twice that many sources, which
--         bounds it at the cost of a possible repeat of a very old bad entry.
--
-- Returns the dead-letter id, or 0 when the source entry was already recorded.
local src = ARGV[1] .. '|' .. ARGV[2]
if redis.call('HSETNX', KEYS[2], src, 1) == 0 then return 0 end
if redis.call('HLEN', KEYS[2]) > 2 * tonumber(ARGV[5]) then
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[2], src, 1)
end
return redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[5], '*',
  'src', ARGV[1], 'id', ARGV[2], 'reason', ARGV[3], 'raw', ARGV[4])

--[[
  Record an entry that failed validation on its way out, with the reason, at most once per source
  entry: every replica that reads the same stream meets the same bad entry, and the dead-letter
  stream should hold it once. The source entry stays where it is: stream ids anchor expected-
  version appends and resume positions, so readers skip it rather than delete it.

  Input:
    KEYS[1] shard dead-letter stream
    KEYS[2] shard hash of recorded sources (source|id -> 1)

    ARGV[1] source stream key
    ARGV[2] source entry id
    ARGV[3] reason
    ARGV[4] raw fields (JSON)
    ARGV[5] MAXLEN (approximate); the index is dropped once it holds twice that many sources, which
            bounds it at the cost of a possible repeat of a very old bad entry.

  Output:
    the dead-letter id, or 0 when the source entry was already recorded
]]
local deadKey, indexKey = unpack(KEYS, 1, 2)

local source, sourceId, reason, raw, maxLen = unpack(ARGV, 1, 5)

local src = source .. '|' .. sourceId
if redis.call('HSETNX', indexKey, src, 1) == 0 then return 0 end
if redis.call('HLEN', indexKey) > 2 * tonumber(maxLen) then
  redis.call('DEL', indexKey)
  redis.call('HSET', indexKey, src, 1)
end
return redis.call('XADD', deadKey, 'MAXLEN', '~', maxLen, '*',
  'src', source, 'id', sourceId, 'reason', reason, 'raw', raw)

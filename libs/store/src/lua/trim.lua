-- Trim a task stream strictly behind the id its snapshot covers (XTRIM MINID keeps that entry and
-- everything after it), fenced by the lease. Without a snapshot nothing is trimmed.
--
-- KEYS[1] shard lease hash     KEYS[2] task snapshot hash     KEYS[3] task stream
-- ARGV[1] epoch
--
-- Returns the number of entries removed. Error "FENCED ...".
local fenced = baton_fence(KEYS[1], ARGV[1])
if fenced then return redis.error_reply(fenced) end
local id = redis.call('HGET', KEYS[2], 'id')
if not id then return 0 end
return redis.call('XTRIM', KEYS[3], 'MINID', id)

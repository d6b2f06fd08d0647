-- Store a task's current view (the read model gateways serve), fenced, and never older than the
-- one already stored: a view carries the update seq it reflects.
--
-- KEYS[1] shard lease hash     KEYS[2] shard hash: task id -> view JSON
-- KEYS[3] shard hash: task id -> seq of the stored view
-- ARGV[1] epoch                ARGV[2] task id              ARGV[3] seq
-- ARGV[4] view JSON
--
-- Returns 1 when written, 0 when the stored view is as new or newer. Error "FENCED ...".
local fenced = baton_fence(KEYS[1], ARGV[1])
if fenced then return redis.error_reply(fenced) end
local stored = tonumber(redis.call('HGET', KEYS[3], ARGV[2]) or '-1')
if stored >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[4])
redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
return 1

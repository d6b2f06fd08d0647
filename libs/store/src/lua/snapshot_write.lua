-- Write a task's snapshot: the folded state and the stream id it covers, fenced by the lease.
-- A snapshot never moves back to an older id, so a trim based on it never removes entries that a
-- later reader would still need to replay.
--
-- KEYS[1] shard lease hash     KEYS[2] task snapshot hash (state, id, epoch)
-- ARGV[1] epoch                ARGV[2] stream id covered     ARGV[3] state JSON
--
-- Errors: "FENCED ...", "STALE <current id>" when the stored snapshot covers a later id.
local fenced = baton_fence(KEYS[1], ARGV[1])
if fenced then return redis.error_reply(fenced) end
local cur = redis.call('HGET', KEYS[2], 'id')
if cur and baton_id_cmp(ARGV[2], cur) < 0 then
  return redis.error_reply('STALE ' .. cur)
end
redis.call('HSET', KEYS[2], 'id', ARGV[2], 'state', ARGV[3], 'epoch', ARGV[1])
return 'OK'

-- Release a lease held by the caller at its epoch, so another owner can take it at once. The epoch
-- counter stays: the next owner's epoch is still greater.
--
-- KEYS[1] shard lease hash
-- ARGV[1] owner id             ARGV[2] epoch
--
-- Returns 1 when released, 0 when the caller did not hold it.
local cur = redis.call('HMGET', KEYS[1], 'owner', 'epoch')
if cur[1] == ARGV[1] and cur[2] == ARGV[2] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0

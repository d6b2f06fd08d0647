-- Renew a lease the caller still holds at its epoch. A lease that expired (even if nobody took it)
-- cannot be renewed: the caller must acquire again and gets a new epoch.
--
-- KEYS[1] shard lease hash
-- ARGV[1] owner id             ARGV[2] epoch            ARGV[3] TTL in ms
--
-- Returns the new expiresAt (server ms). Error "FENCED ..." when the lease is not held.
local fenced = baton_fence(KEYS[1], ARGV[2])
if fenced then return redis.error_reply(fenced) end
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return redis.error_reply('FENCED lease held by another owner')
end
local expires = baton_now_ms() + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'expiresAt', expires)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return expires

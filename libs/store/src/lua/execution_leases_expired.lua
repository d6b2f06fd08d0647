-- List execution leases that have lapsed by the server's clock, oldest first. Reading does not
-- remove them: the shard owner removes one only after it has recorded the execution's end.
--
-- KEYS[1] shard zset of execution leases
-- KEYS[2] shard hash of their periods (member -> ttl ms)
-- ARGV[1] most to return
--
-- Returns a flat list: member, expiry, ttl ('' when not recorded), member, expiry, ttl, ...
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[1]))
local out = {}
for i = 1, #lapsed, 2 do
  out[#out + 1] = lapsed[i]
  out[#out + 1] = lapsed[i + 1]
  out[#out + 1] = redis.call('HGET', KEYS[2], lapsed[i]) or ''
end
return out

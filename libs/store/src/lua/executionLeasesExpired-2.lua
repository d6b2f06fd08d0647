--[[
  List execution leases that have lapsed by the server's clock, oldest first. Reading does not
  remove them: the shard owner removes one only after it has recorded the execution's end.

  Input:
    KEYS[1] shard zset of execution leases
    KEYS[2] shard hash of their periods (member -> ttl ms)

    ARGV[1] most to return

  Output:
    a flat list: member, expiry, ttl ('' when not recorded), member, expiry, ttl, ...
]]
local leasesKey, ttlsKey = unpack(KEYS, 1, 2)

local limit = tonumber(ARGV[1])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lapsed = redis.call('ZRANGEBYSCORE', leasesKey, '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
local out = {}
for i = 1, #lapsed, 2 do
  out[#out + 1] = lapsed[i]
  out[#out + 1] = lapsed[i + 1]
  out[#out + 1] = redis.call('HGET', ttlsKey, lapsed[i]) or ''
end
return out

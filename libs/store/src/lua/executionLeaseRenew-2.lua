--[[
  Renew (or take) an execution's lease: the worker hosting it proves, every few seconds, that the
  agent process is alive. The score is the server time at which the lease lapses, so every
  process compares against one clock (Redis's), never its own. The lease's period (its ttl) is
  recorded beside it: the owner gives a lease one full period to be renewed after it could not
  reach Redis (an outage), before it declares the execution lost.

  Input:
    KEYS[1] shard zset of execution leases (member: JSON [taskId, sessionId, executionId])
    KEYS[2] shard hash of their periods (member -> ttl ms)

    ARGV[1] member
    ARGV[2] ttl in ms
    ARGV[3] '1': extend only a lease still held (the owner drops it once the execution is lost)

  Output:
    the new expiry (server ms), or -1 when ARGV[3] is '1' and the lease is not held
]]
local leasesKey, ttlsKey = unpack(KEYS, 1, 2)

local member, ttlMs, extendOnly = unpack(ARGV, 1, 3)

if extendOnly == '1' and not redis.call('ZSCORE', leasesKey, member) then
  return -1
end
local t = redis.call('TIME')
local expires = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ttlMs)
redis.call('ZADD', leasesKey, expires, member)
redis.call('HSET', ttlsKey, member, ttlMs)
return expires

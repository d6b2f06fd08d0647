--[[
  Renew a lease the caller still holds at its epoch. A lease that expired (even if nobody took it)
  cannot be renewed: the caller must acquire again and gets a new epoch.

  Input:
    KEYS[1] shard lease hash

    ARGV[1] owner id
    ARGV[2] epoch
    ARGV[3] TTL in ms

  Output:
    the new expiresAt (server ms)
    errors: "FENCED ..." when the lease is not held
]]
local leaseKey = KEYS[1]

local owner, epoch, ttlMs = unpack(ARGV, 1, 3)

--- @include "includes/fence"

local fenced = baton_fence(leaseKey, epoch .. ':' .. owner)
if fenced then return redis.error_reply(fenced) end
local expires = baton_now_ms() + tonumber(ttlMs)
redis.call('HSET', leaseKey, 'expiresAt', expires)
redis.call('PEXPIRE', leaseKey, ttlMs)
return expires

--[[
  Acquire a shard lease that is free or expired. Every acquisition takes a new fencing epoch from a
  counter that is never deleted or expired, so the epoch only grows, across expiry and takeover.
  An owner acquiring a lease it already holds also gets a new epoch: a process that lost track of
  its epoch (or a twin with the same name) must not keep writing under the old one.

  Each acquisition is also recorded in the shard's epoch history (epoch -> owner): the owner's
  fold counts a decision only under a fence the shard's lease really had, and a worker's or a
  gateway's credential cannot write it. `from` is the server time of the first acquisition that
  kept a history: decisions written before it carry no fence (they predate fences).

  Input:
    KEYS[1] shard lease hash (owner, epoch, expiresAt; PEXPIREs with the lease)
    KEYS[2] shard epoch counter (never expires)
    KEYS[3] shard epoch history hash (epoch -> owner, `from`; never expires)

    ARGV[1] owner id
    ARGV[2] TTL in ms

  Output:
    {1, epoch, expiresAt} when acquired, {0, current owner, expiresAt} when held by another
]]
local leaseKey, epochKey, historyKey = unpack(KEYS, 1, 3)

local owner, ttlMs = unpack(ARGV, 1, 2)

--- @include "includes/fence"

local now = baton_now_ms()
local cur = redis.call('HMGET', leaseKey, 'owner', 'expiresAt')
if cur[1] and cur[1] ~= owner and tonumber(cur[2]) > now then
  return {0, cur[1], tonumber(cur[2])}
end
local epoch = redis.call('INCR', epochKey)
local expires = now + tonumber(ttlMs)
redis.call('DEL', leaseKey)
redis.call('HSET', leaseKey, 'owner', owner, 'epoch', epoch, 'expiresAt', expires)
redis.call('PEXPIRE', leaseKey, ttlMs)
redis.call('HSETNX', historyKey, 'from', now)
redis.call('HSET', historyKey, epoch, owner)
return {1, epoch, expires}

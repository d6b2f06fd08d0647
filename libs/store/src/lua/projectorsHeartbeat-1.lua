--[[
  A projector instance announces that it is alive, and learns which others are: instances that
  own no shard yet still count when shards are balanced. Expiry is by the server's clock, so a
  paused or dead instance drops out after `ttl` without anyone's local clock being trusted.

  Input:
    KEYS[1] zset of instances (score: server time at which the heartbeat lapses)

    ARGV[1] instance id
    ARGV[2] ttl in ms

  Output:
    the live instances (this one included), sorted by id
]]
local instancesKey = KEYS[1]

local instance, ttlMs = unpack(ARGV, 1, 2)

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', instancesKey, '-inf', now)
redis.call('ZADD', instancesKey, now + tonumber(ttlMs), instance)
local live = redis.call('ZRANGE', instancesKey, 0, -1)
table.sort(live)
return live

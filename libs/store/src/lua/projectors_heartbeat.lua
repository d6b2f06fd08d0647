-- A projector instance announces that it is alive, and learns which others are: instances that
-- own no shard yet still count when shards are balanced. Expiry is by the server's clock, so a
-- paused or dead instance drops out after `ttl` without anyone's local clock being trusted.
--
-- KEYS[1] zset of instances (score: server time at which the heartbeat lapses)
-- ARGV[1] instance id          ARGV[2] ttl in ms
--
-- Returns the live instances (this one included), sorted by id.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
local live = redis.call('ZRANGE', KEYS[1], 0, -1)
table.sort(live)
return live

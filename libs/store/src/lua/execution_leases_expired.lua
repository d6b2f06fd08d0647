-- List execution leases that have lapsed by the server's clock, oldest first. Reading does not
-- remove them: the shard owner removes one only after it has recorded the execution's end.
--
-- KEYS[1] shard zset of execution leases
-- ARGV[1] most to return
--
-- Returns a flat list: member, expiry, member, expiry, ...
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[1]))

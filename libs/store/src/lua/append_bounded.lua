-- Append a batch to a bounded log (an execution's raw frames) in one round trip and one atomic
-- step, so a batch of frames is never half-written. Not fenced: workers write their own logs.
--
-- KEYS[1] stream
-- ARGV[1] MAXLEN (approximate)  ARGV[2 ..] pairs: direction, raw line
--
-- Returns the id of the last frame appended.
local id = nil
for i = 2, #ARGV, 2 do
  id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'd', ARGV[i], 'f', ARGV[i + 1])
end
return id

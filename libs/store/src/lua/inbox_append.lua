-- Append messages to an execution's inbox, fenced: only the shard owner hands prompts to workers.
--
-- KEYS[1] shard lease hash     KEYS[2] execution inbox stream
-- ARGV[1] epoch                ARGV[2] inbox MAXLEN (approximate)
-- ARGV[3 ..] message JSON, one per message
--
-- Returns the new stream ids. Error "FENCED ...".
local fenced = baton_fence(KEYS[1], ARGV[1])
if fenced then return redis.error_reply(fenced) end
local ids = {}
for i = 3, #ARGV do
  ids[#ids + 1] = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', 'e', ARGV[i])
end
return ids

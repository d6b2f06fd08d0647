-- Fenced, expected-version append: the shard owner's decisions enter a task stream only if the
-- owner still holds the lease at its epoch and has processed the stream up to its last entry.
--
-- KEYS[1] shard lease hash     KEYS[2] task stream     KEYS[3] shard feed stream
-- ARGV[1] writer's epoch       ARGV[2] expected last id of the stream ('0-0' for an empty one)
-- ARGV[3] task id              ARGV[4] feed MAXLEN (approximate)
-- ARGV[5 ..] entry JSON, one per entry
--
-- Errors: "FENCED ..." (lease lost or epoch moved on), "CONFLICT <actual last id>".
-- Returns the new stream ids, in order.
local fenced = baton_fence(KEYS[1], ARGV[1])
if fenced then return redis.error_reply(fenced) end
local actual = baton_last_id(KEYS[2])
if actual ~= ARGV[2] then return redis.error_reply('CONFLICT ' .. actual) end
local ids = {}
for i = 5, #ARGV do
  ids[#ids + 1] = redis.call('XADD', KEYS[2], '*', 'e', ARGV[i])
end
if #ids > 0 then
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[4], '*', 't', ARGV[3], 'l', ids[#ids])
end
return ids

--[[
  Append a window of transcript events to a task's transcript stream in one round trip and one
  atomic step, bounded by length and by age. Not fenced: a worker writes its executions' events.

  Input:
    KEYS[1] transcript stream

    ARGV[1] MAXLEN (approximate)
    ARGV[2] retention, ms (0: kept until MAXLEN cuts them)
    ARGV[3 ..] triples: session id, execution id, event JSON

  Output:
    the id of the last event appended
]]
local streamKey = KEYS[1]

local maxLen = ARGV[1]
local retainMs = tonumber(ARGV[2])
local FIRST = 3

local id = nil
for i = FIRST, #ARGV, 3 do
  id = redis.call('XADD', streamKey, 'MAXLEN', '~', maxLen, '*',
    's', ARGV[i], 'x', ARGV[i + 1], 'e', ARGV[i + 2])
end
if retainMs > 0 and id then
  -- The history's retention, by the server's clock: what is older goes, and a transcript nobody
  -- writes to any more goes whole once its last event is that old.
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('XTRIM', streamKey, 'MINID', '~', tostring(now - retainMs) .. '-0')
  redis.call('PEXPIRE', streamKey, retainMs)
end
return id

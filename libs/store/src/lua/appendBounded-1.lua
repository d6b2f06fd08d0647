--[[
  Append a batch to a bounded log (an execution's raw frames) in one round trip and one atomic
  step, so a batch of frames is never half-written. Not fenced: workers write their own logs.

  Input:
    KEYS[1] stream

    ARGV[1] MAXLEN (approximate)
    ARGV[2 ..] pairs: direction, raw line

  Output:
    the id of the last frame appended
]]
local streamKey = KEYS[1]

local maxLen = ARGV[1]
local FIRST_PAIR = 2

local id = nil
for i = FIRST_PAIR, #ARGV, 2 do
  id = redis.call('XADD', streamKey, 'MAXLEN', '~', maxLen, '*', 'd', ARGV[i], 'f', ARGV[i + 1])
end
return id

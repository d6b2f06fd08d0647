--[[
  Append one entry to a bounded log (an execution's raw frames: a worker's write, its frames in
  one compressed field) in one round trip and one atomic step, bounded by length and by age. Not
  fenced: workers write their own logs.

  Input:
    KEYS[1] stream

    ARGV[1] MAXLEN (approximate, in entries)
    ARGV[2] retention, ms (0: kept until MAXLEN cuts them)
    ARGV[3 ..] the entry's fields: name, value pairs

  Output:
    the id of the entry appended
]]
local streamKey = KEYS[1]

local maxLen = ARGV[1]
local retainMs = tonumber(ARGV[2]) or 0
local FIRST_FIELD = 3

local id = redis.call('XADD', streamKey, 'MAXLEN', '~', maxLen, '*', unpack(ARGV, FIRST_FIELD))
if retainMs > 0 then
  -- By the server's clock: what is older goes, and a log nobody writes to any more goes whole
  -- once its last entry is that old.
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('XTRIM', streamKey, 'MINID', '~', tostring(now - retainMs) .. '-0')
  redis.call('PEXPIRE', streamKey, retainMs)
end
return id

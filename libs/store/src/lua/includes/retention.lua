--[[
  The age bound of a stream kept for a retention, shared by transcriptAppend-2.lua and
  transcriptCompact-2.lua; taken in with `--- @include "includes/retention"`. Not a script by
  itself.
]]

-- Removes the entries of stream `key` older than `retainMs` (by the server's clock) and keeps the
-- key for the retention after this write, so a stream nobody writes to any more goes whole once
-- its last entry is that old. Returns the id of the last entry removed, or nil.
local function baton_trim_older(key, retainMs)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local minId = tostring(now - retainMs) .. '-0'
  local old = redis.call('XREVRANGE', key, '(' .. minId, '-', 'COUNT', 1)
  local removed = nil
  if old[1] then
    removed = old[1][1]
    redis.call('XTRIM', key, 'MINID', minId)
  end
  redis.call('PEXPIRE', key, retainMs)
  return removed
end

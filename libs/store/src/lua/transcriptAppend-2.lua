--[[
  Append a window of transcript events to a task's transcript stream in one round trip and one
  atomic step, bounded by length and by age. Not fenced: a worker writes its executions' events.

  Input:
    KEYS[1] transcript stream
    KEYS[2] the transcript's compacted front (transcriptCompact-2.lua), where it exists: kept
            for the retention after this write too, so it never expires before the stream
            whose front it holds (an expired key says nothing of what it held)

    ARGV[1] MAXLEN (approximate: trimmed in batches of TRIM_BATCH)
    ARGV[2] retention, ms (0: kept until MAXLEN cuts them)
    ARGV[3 ..] triples: session id, execution id, event JSON

  Output:
    the id of the last event appended

  Trimmed exactly, and the last event removed is recorded as the stream's max-deleted-entry-id
  (XSETID: trimming alone does not set it): a reader whose cursor lies before it lost events,
  and is told so.
]]
--- @include "includes/retention"

local streamKey, compactedKey = unpack(KEYS, 1, 2)

local maxLen = tonumber(ARGV[1])
local retainMs = tonumber(ARGV[2])
local FIRST = 3
-- What MAXLEN ~ lets a stream grow by (a radix node's entries) before it is cut back.
local TRIM_BATCH = 100

local function before(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, bm = tonumber(am), tonumber(bm)
  if am ~= bm then return am < bm end
  return tonumber(as) < tonumber(bs)
end

local id = nil
for i = FIRST, #ARGV, 3 do
  id = redis.call('XADD', streamKey, '*', 's', ARGV[i], 'x', ARGV[i + 1], 'e', ARGV[i + 2])
end
if not id then return id end

local removed = nil
local over = redis.call('XLEN', streamKey) - maxLen
if over >= TRIM_BATCH then
  local gone = redis.call('XRANGE', streamKey, '-', '+', 'COUNT', over)
  removed = gone[#gone][1]
  redis.call('XTRIM', streamKey, 'MAXLEN', maxLen)
end
if retainMs > 0 then
  -- The history's retention: what is older goes, and a transcript nobody writes to any more goes
  -- whole once its last event is that old.
  local old = baton_trim_older(streamKey, retainMs)
  if old and (removed == nil or before(removed, old)) then removed = old end
end
if removed then redis.call('XSETID', streamKey, id, 'MAXDELETEDID', removed) end
if retainMs > 0 then redis.call('PEXPIRE', compactedKey, retainMs) end
return id

--[[
  Compact the front of a task's transcript: a range of its stream, from its first entry to
  `last`, replaced by one entry of the compacted transcript holding the range's events compacted
  (libs/transcript compactTranscript: each item's deltas or patches joined into its first event,
  which keeps its id) and zlib-compressed. Readers read the compacted transcript first, then the
  stream after its last entry (libs/store Transcripts).

  Not fenced: compaction is derived from the range by a pure function, and refused unless the
  stream still begins where the caller read it (a compaction or a trim since moved it), so two
  writers cannot both compact a range, and nothing the range held is lost. The workers only add
  at the stream's end; what is compacted is older than the hot window.

  Input:
    KEYS[1] transcript stream
    KEYS[2] compacted transcript stream (chunk id: the last id of its range; `f` its first id,
            `z` the compacted events)

    ARGV[1] the stream's first id, as the caller read it: the range's first
    ARGV[2] the range's last id (the chunk's id)
    ARGV[3] retention, ms (0: the compacted transcript is kept without an age bound)
    ARGV[4] the compacted events, zlib of their JSON

  Output:
    1 when compacted, 0 when refused (the stream no longer begins at ARGV[1], or does not hold
    ARGV[2])

  A chunk the retention removes is recorded as the compacted stream's max-deleted-entry-id
  (XSETID, as transcriptAppend does): a reader whose cursor lies before it lost events, and is
  told so. Cutting the stream here records nothing: its events are in the chunk.
]]
--- @include "includes/retention"

local streamKey, compactedKey = unpack(KEYS, 1, 2)

local first, last = unpack(ARGV, 1, 2)
local retainMs = tonumber(ARGV[3])
local chunk = ARGV[4]

local head = redis.call('XRANGE', streamKey, '-', '+', 'COUNT', 1)
if not head[1] or head[1][1] ~= first then return 0 end
if not redis.call('XRANGE', streamKey, last, last)[1] then return 0 end

redis.call('XADD', compactedKey, last, 'f', first, 'z', chunk)
-- Exact: every entry up to `last` is in the chunk, none after it.
local ms, seq = string.match(last, '^(%d+)-(%d+)$')
redis.call('XTRIM', streamKey, 'MINID', ms .. '-' .. string.format('%d', tonumber(seq) + 1))

if retainMs > 0 then
  -- `last`, just added, is the stream's last id whatever the trim took.
  local old = baton_trim_older(compactedKey, retainMs)
  if old then redis.call('XSETID', compactedKey, last, 'MAXDELETEDID', old) end
end
return 1

--[[
  One fenced write of a task owner's step: its decisions (an expected-version append), the client
  updates it folded (the gapless per-task sequence), and the task's view, in one call with one
  lease check. Every check runs before anything is written, so a refused call writes nothing.

  Updates: seqs already published are skipped (a new owner re-publishing is harmless); a seq past
  last + 1 is a gap. An update of an entry this call appends does not know its id yet: its JSON
  ends with `"entry":"` and the script closes it with the id and `"}`.

  View: the stored view always reflects exactly the updates published up to the seq it carries
  (written in the same call as them), so there is no separate seq to keep for it: readers take the
  task's last published seq as the view's version. The view is stored only when its seq is the last
  published seq after this call, which makes it never older than the stored one; and a view already
  stored at that seq is kept (readers cache a view by seq), which only needs reading it when this
  call published nothing (a new owner's first step).

  Input:
    KEYS[1] shard lease hash
    KEYS[2] task stream
    KEYS[3] shard feed stream
    KEYS[4] shard update stream
    KEYS[5] shard hash: task id -> last published update seq
    KEYS[6] shard hash: task id -> view JSON

    ARGV[1] fencing token: <epoch>:<owner> of the writer's lease
    ARGV[2] task id
    ARGV[3] expected last id of the task stream (checked only when entries are appended)
    ARGV[4] feed MAXLEN (approximate)
    ARGV[5] update stream MAXLEN (approximate)
    ARGV[6] number of entries n
    ARGV[7] view seq ('' for no view)
    ARGV[8] view JSON ('' for no view)
    ARGV[9 .. 8 + n] entry JSON, one per entry
    ARGV[9 + n ..] triples: seq, k, update JSON (seqs ascending; k = 0: the JSON is complete;
                   k >= 1: the update of the k-th entry above, its JSON open at the entry id)

  Output:
    {published, last published seq, 1 if the view was stored else 0, new entry id ...}
    errors: "FENCED ...", "CONFLICT <actual last id>", "GAP <last> <seq>"
]]
local leaseKey, streamKey, feedKey, updatesKey, seqsKey, viewsKey = unpack(KEYS, 1, 6)

local token, taskId, expectedLastId, feedMaxLen, updatesMaxLen = unpack(ARGV, 1, 5)
local n = tonumber(ARGV[6])
local viewSeq = ARGV[7]
local view = ARGV[8]
local FIRST_ENTRY = 9
local FIRST_TRIPLE = FIRST_ENTRY + n

--- @include "includes/fence"
--- @include "includes/append"
--- @include "includes/publish"

local fenced = baton_fence(leaseKey, token)
if fenced then return redis.error_reply(fenced) end
if n > 0 then
  local actual = baton_last_id(streamKey)
  if actual ~= expectedLastId then return redis.error_reply('CONFLICT ' .. actual) end
end
local last = tonumber(redis.call('HGET', seqsKey, taskId) or '0')
local gap, after = baton_update_gap(last, FIRST_TRIPLE, #ARGV, 3)
if gap then return redis.error_reply('GAP ' .. after .. ' ' .. gap) end

local out = baton_append_entries(streamKey, feedKey, feedMaxLen, taskId, FIRST_ENTRY,
  FIRST_TRIPLE - 1, {0, 0, 0})

local published
last, published = baton_publish_updates(updatesKey, updatesMaxLen, taskId, last, FIRST_TRIPLE,
  #ARGV, 3, function(i)
    local k = tonumber(ARGV[i + 1])
    if k > 0 then return ARGV[i + 2] .. out[3 + k] .. '"}' end
    return ARGV[i + 2]
  end)
if published > 0 then redis.call('HSET', seqsKey, taskId, last) end

local stored = 0
if baton_view_due(viewsKey, taskId, view, viewSeq, last, published) then
  redis.call('HSET', viewsKey, taskId, view)
  stored = 1
end
out[1] = published
out[2] = last
out[3] = stored
return out

--[[
  The steps without decisions of several tasks of one shard, in one fenced call: each task's
  client updates (its gapless per-task sequence) and its view, as commit-6.lua writes them for a
  step that appends nothing. One lease check for the whole call: a stale owner's call is refused
  whole, before anything is written. The sequence checks are each task's own: a task whose updates
  would leave a gap writes nothing and is answered so, the others are written. The seqs are read
  with one HMGET and written with one HSET, the views with one HSET, whatever the number of tasks.

  Per task, as in commit-6.lua: seqs already published are skipped (a new owner re-publishing is
  harmless); a seq past last + 1 is a gap. The view is stored only when its seq is the task's last
  published seq after this call, and a view already stored at that seq is kept (read only when the
  call published nothing for the task).

  Input:
    KEYS[1] shard lease hash
    KEYS[2] shard update stream
    KEYS[3] shard hash: task id -> last published update seq
    KEYS[4] shard hash: task id -> view JSON

    ARGV[1] fencing token: <epoch>:<owner> of the writer's lease
    ARGV[2] update stream MAXLEN (approximate)
    ARGV[3] number of tasks m (each task at most once)
    ARGV[4 ..] m steps, each: task id, view seq ('' for no view), view JSON ('' for no view),
               number of updates u, then u pairs: seq, update JSON (seqs ascending)

  Output:
    one reply per task, in order: {1, published, last published seq, 1 if the view was stored
    else 0}, or {0, last published seq, seq} when its updates would leave a gap after that seq
    errors: "FENCED ..."
]]
local leaseKey, updatesKey, seqsKey, viewsKey = unpack(KEYS, 1, 4)

local token, updatesMaxLen = unpack(ARGV, 1, 2)
local m = tonumber(ARGV[3])
local FIRST_STEP = 4

--- @include "includes/fence"
--- @include "includes/publish"

local fenced = baton_fence(leaseKey, token)
if fenced then return redis.error_reply(fenced) end

-- Where each step starts in ARGV, and its task.
local starts = {}
local taskIds = {}
local at = FIRST_STEP
for i = 1, m do
  starts[i] = at
  taskIds[i] = ARGV[at]
  at = at + 4 + 2 * tonumber(ARGV[at + 3])
end

local lasts = redis.call('HMGET', seqsKey, unpack(taskIds))
local seqFields = {}
local viewFields = {}
local out = {}
local function updateJson(j) return ARGV[j + 1] end
for i = 1, m do
  local s = starts[i]
  local taskId = taskIds[i]
  local viewSeq = ARGV[s + 1]
  local view = ARGV[s + 2]
  local u = tonumber(ARGV[s + 3])
  local first = s + 4
  local stop = first + 2 * u - 1
  local last = tonumber(lasts[i] or '0')
  local gap = baton_update_gap(last, first, stop, 2)
  if gap then
    out[i] = {0, last, gap}
  else
    local published
    last, published = baton_publish_updates(updatesKey, updatesMaxLen, taskId, last, first, stop,
      2, updateJson)
    if published > 0 then
      seqFields[#seqFields + 1] = taskId
      seqFields[#seqFields + 1] = last
    end
    local stored = 0
    if baton_view_due(viewsKey, taskId, view, viewSeq, last, published) then
      viewFields[#viewFields + 1] = taskId
      viewFields[#viewFields + 1] = view
      stored = 1
    end
    out[i] = {1, published, last, stored}
  end
end
if #seqFields > 0 then redis.call('HSET', seqsKey, unpack(seqFields)) end
if #viewFields > 0 then redis.call('HSET', viewsKey, unpack(viewFields)) end
return out

--[[
  The publication of a task's client updates and of its view, shared by commit-6.lua (one task's
  step) and publishMany-4.lua (the steps of several tasks of a shard); taken in with
  `--- @include "includes/publish"`. Not a script by itself.

  A task's updates are a run of ARGV from `first` to `stop`, one every `step` arguments, each
  starting with its seq (seqs ascending). Seqs already published are skipped (a new owner
  re-publishing is harmless); a seq past last + 1 is a gap.
]]

-- The first seq of the run that would leave a gap, and the seq it would follow (the task's last
-- published one or one of the run); nil when the run leaves none.
local function baton_update_gap(last, first, stop, step)
  local expect = last
  for i = first, stop, step do
    local seq = tonumber(ARGV[i])
    if seq > expect + 1 then return seq, expect end
    if seq == expect + 1 then expect = seq end
  end
  return nil
end

-- Appends the run's updates after `last` to the shard's update stream, `json_at(i)` giving the
-- JSON of the update whose seq is ARGV[i]. Returns the last published seq and how many were.
local function baton_publish_updates(updates_key, max_len, task_id, last, first, stop, step, json_at)
  local published = 0
  for i = first, stop, step do
    local seq = tonumber(ARGV[i])
    if seq == last + 1 then
      redis.call('XADD', updates_key, 'MAXLEN', '~', max_len, '*', 't', task_id, 's', seq,
        'u', json_at(i))
      last = seq
      published = published + 1
    end
  end
  return last, published
end

-- Whether a task's view ('' for none) is to be stored: the stored view always reflects exactly the
-- updates published up to its seq, so only a view at the last published seq is, which makes it
-- never older than the stored one; and a view already stored at that seq is kept (readers cache a
-- view by seq), which needs reading it only when nothing was published for the task.
local function baton_view_due(views_key, task_id, view, view_seq, last, published)
  if view == '' or tonumber(view_seq) ~= last then return false end
  if published > 0 then return true end
  local current = redis.call('HGET', views_key, task_id)
  local ok, decoded = pcall(cjson.decode, current or '')
  return not ok or type(decoded) ~= 'table' or tonumber(decoded.seq or -1) < last
end

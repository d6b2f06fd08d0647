--[[
  The append of entries to a task stream and its note in the shard's feed, shared by append-4.lua,
  appendFenced-3.lua and commit-6.lua; taken in with `--- @include "includes/append"`. Not a
  script by itself.
]]

-- Notes a task's new entries in its shard's feed: the task (t) and its last new entry (l), which
-- is what an owner's feed tail reads. The feed is bounded (MAXLEN, approximate).
local function baton_note_feed(feed_key, max_len, task_id, last_id)
  redis.call('XADD', feed_key, 'MAXLEN', '~', max_len, '*', 't', task_id, 'l', last_id)
end

-- Appends ARGV[first .. last] to the task stream, one entry each, their ids after those already in
-- `ids`, and notes the last in the feed when there was any. Returns `ids`.
local function baton_append_entries(stream_key, feed_key, feed_max_len, task_id, first, last, ids)
  for i = first, last do
    ids[#ids + 1] = redis.call('XADD', stream_key, '*', 'e', ARGV[i])
  end
  if last >= first then baton_note_feed(feed_key, feed_max_len, task_id, ids[#ids]) end
  return ids
end

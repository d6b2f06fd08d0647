--[[
  Idempotent batch append to one task stream, plus a note in the shard's feed, and the task in the
  shard's live set: a new owner loads every task there, so a task with entries no owner has folded
  is found whatever became of its note (the feed is bounded, and cut behind what an owner read).
  A task leaves the live set only when its owner puts it away (tasksPutAway-6.lua), which also
  drops the hash's renewal stamp; so the task is added back with the expiry's renewal, not by
  every append: an append that finds the stamp gone (put away, or the hash expired) renews.

  Contract: for one task, each writer's seqs increase in the order its appends reach Redis, and a
  writer retries an append until it is acknowledged before appending later seqs to that task. Then
  "seq <= highest seq seen from this writer" means "already appended" and the state stays one
  number per writer per task. The hash expires between 3/4 of the TTL and the TTL after the last
  append to the task, which bounds the state of finished tasks; a retry older than that would be
  appended again. Its expiry is renewed only when a quarter of the TTL has passed since the last
  renewal (kept in the hash, by the stream's clock: the new entry's id), not by every append.

  Input:
    KEYS[1] task stream
    KEYS[2] the task's dedupe hash (writer instance -> highest seq; RENEWED -> ms of the last
            expiry renewal)
    KEYS[3] shard feed stream
    KEYS[4] shard live task set

    ARGV[1] task id
    ARGV[2] feed MAXLEN (approximate)
    ARGV[3] dedupe TTL in ms
    ARGV[4] number of entries n
    ARGV[5 ..] n triples: writer instance, writer seq, entry JSON

  Output:
    a list with one element per entry: the new stream id, or 0 when it was a duplicate
]]
local streamKey, dedupeKey, feedKey, liveKey = unpack(KEYS, 1, 4)

local taskId, feedMaxLen, dedupeTtlMs = unpack(ARGV, 1, 3)
local n = tonumber(ARGV[4])
local FIRST_TRIPLE = 5

--- @include "includes/append"

-- Not a writer instance (those have no NUL): when the hash's expiry was last renewed.
local RENEWED = '\0renewed'

local highest = {}
local renewedAt = nil
local out = {}
local last = nil
for i = 0, n - 1 do
  local writer = ARGV[FIRST_TRIPLE + i * 3]
  local seq = tonumber(ARGV[FIRST_TRIPLE + 1 + i * 3])
  local seen = highest[writer]
  if seen == nil then
    if renewedAt == nil then
      local r = redis.call('HMGET', dedupeKey, writer, RENEWED)
      seen = tonumber(r[1] or '-1')
      renewedAt = tonumber(r[2] or '0')
    else
      seen = tonumber(redis.call('HGET', dedupeKey, writer) or '-1')
    end
  end
  if seq > seen then
    last = redis.call('XADD', streamKey, '*', 'e', ARGV[FIRST_TRIPLE + 2 + i * 3])
    highest[writer] = seq
    out[i + 1] = last
  else
    highest[writer] = seen
    out[i + 1] = 0
  end
end
if last then
  local fields = {}
  for writer, seq in pairs(highest) do
    fields[#fields + 1] = writer
    fields[#fields + 1] = seq
  end
  local now = tonumber(string.match(last, '^(%d+)'))
  local renew = now - renewedAt > tonumber(dedupeTtlMs) / 4
  if renew then
    fields[#fields + 1] = RENEWED
    fields[#fields + 1] = now
  end
  redis.call('HSET', dedupeKey, unpack(fields))
  if renew then
    redis.call('PEXPIRE', dedupeKey, dedupeTtlMs)
    redis.call('SADD', liveKey, taskId)
  end
  baton_note_feed(feedKey, feedMaxLen, taskId, last)
end
return out

--[[
  Idempotent batch append to one task stream, plus a note in the shard's feed, and the task in the
  shard's live set: a new owner loads every task there, so a task with entries no owner has folded
  is found whatever became of its note (the feed is bounded, and cut behind what an owner read).

  Contract: for one task, each writer's seqs increase in the order its appends reach Redis, and a
  writer retries an append until it is acknowledged before appending later seqs to that task. Then
  "seq <= highest seq seen from this writer" means "already appended" and the state stays one
  number per writer per task. The hash expires after the TTL without appends to the task, which
  bounds the state of finished tasks; a retry older than the TTL would be appended again.

  Input:
    KEYS[1] task stream
    KEYS[2] the task's dedupe hash (writer instance -> highest seq)
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
local streamKey = KEYS[1]
local dedupeKey = KEYS[2]
local feedKey = KEYS[3]
local liveKey = KEYS[4]

local taskId = ARGV[1]
local feedMaxLen = ARGV[2]
local dedupeTtlMs = ARGV[3]
local n = tonumber(ARGV[4])
local FIRST_TRIPLE = 5

local highest = {}
local out = {}
local last = nil
for i = 0, n - 1 do
  local writer = ARGV[FIRST_TRIPLE + i * 3]
  local seq = tonumber(ARGV[FIRST_TRIPLE + 1 + i * 3])
  local seen = highest[writer]
  if seen == nil then
    seen = tonumber(redis.call('HGET', dedupeKey, writer) or '-1')
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
  for writer, seq in pairs(highest) do
    redis.call('HSET', dedupeKey, writer, seq)
  end
  redis.call('PEXPIRE', dedupeKey, dedupeTtlMs)
  redis.call('SADD', liveKey, taskId)
  redis.call('XADD', feedKey, 'MAXLEN', '~', feedMaxLen, '*', 't', taskId, 'l', last)
end
return out

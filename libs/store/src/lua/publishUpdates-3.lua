--[[
  Publish a task's client updates to the shard update stream, fenced, in a per-task sequence with
  no gaps. Seqs already published are skipped, so a new owner that folds the same stream and
  re-publishes is harmless; a seq beyond last + 1 is a gap and nothing of the batch is written.

  Input:
    KEYS[1] shard lease hash
    KEYS[2] shard update stream
    KEYS[3] shard hash: task id -> last published seq

    ARGV[1] epoch
    ARGV[2] task id
    ARGV[3] update stream MAXLEN (approximate)
    ARGV[4 ..] pairs: seq, update JSON (seqs ascending)

  Output:
    {number published, last published seq}
    errors: "FENCED ...", "GAP <last> <seq>"
]]
local leaseKey = KEYS[1]
local updatesKey = KEYS[2]
local seqsKey = KEYS[3]

local epoch = ARGV[1]
local taskId = ARGV[2]
local maxLen = ARGV[3]
local FIRST_PAIR = 4

--- @include "includes/fence"

local fenced = baton_fence(leaseKey, epoch)
if fenced then return redis.error_reply(fenced) end
local last = tonumber(redis.call('HGET', seqsKey, taskId) or '0')
local expect = last
for i = FIRST_PAIR, #ARGV, 2 do
  local seq = tonumber(ARGV[i])
  if seq > expect + 1 then
    return redis.error_reply('GAP ' .. expect .. ' ' .. seq)
  end
  if seq == expect + 1 then expect = seq end
end
local published = 0
for i = FIRST_PAIR, #ARGV, 2 do
  local seq = tonumber(ARGV[i])
  if seq == last + 1 then
    redis.call('XADD', updatesKey, 'MAXLEN', '~', maxLen, '*', 't', taskId, 's', seq, 'u', ARGV[i + 1])
    last = seq
    published = published + 1
  end
end
if published > 0 then redis.call('HSET', seqsKey, taskId, last) end
return {published, last}

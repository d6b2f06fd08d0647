-- Publish a task's client updates to the shard update stream, fenced, in a per-task sequence with
-- no gaps. Seqs already published are skipped, so a new owner that folds the same stream and
-- re-publishes is harmless; a seq beyond last + 1 is a gap and nothing of the batch is written.
--
-- KEYS[1] shard lease hash     KEYS[2] shard update stream
-- KEYS[3] shard hash: task id -> last published seq
-- ARGV[1] epoch                ARGV[2] task id              ARGV[3] update stream MAXLEN (approx.)
-- ARGV[4 ..] pairs: seq, update JSON (seqs ascending)
--
-- Returns {number published, last published seq}. Errors: "FENCED ...", "GAP <last> <seq>".
local fenced = baton_fence(KEYS[1], ARGV[1])
if fenced then return redis.error_reply(fenced) end
local last = tonumber(redis.call('HGET', KEYS[3], ARGV[2]) or '0')
local expect = last
for i = 4, #ARGV, 2 do
  local seq = tonumber(ARGV[i])
  if seq > expect + 1 then
    return redis.error_reply('GAP ' .. expect .. ' ' .. seq)
  end
  if seq == expect + 1 then expect = seq end
end
local published = 0
for i = 4, #ARGV, 2 do
  local seq = tonumber(ARGV[i])
  if seq == last + 1 then
    redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', 't', ARGV[2], 's', seq, 'u', ARGV[i + 1])
    last = seq
    published = published + 1
  end
end
if published > 0 then redis.call('HSET', KEYS[3], ARGV[2], last) end
return {published, last}

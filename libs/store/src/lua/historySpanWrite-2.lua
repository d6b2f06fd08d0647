--[[
  Keep a task's history span: what each entry between two of its checkpoints changed (see
  libs/activity HistorySpan). Not fenced: a span is derived from the stream by the same fold
  whoever builds it (the owner when it keeps a checkpoint, a history query that found none), so
  any two writers write the same. Kept only while both its checkpoints are, so a span a retention
  trim removed never comes back.

  Input:
    KEYS[1] task checkpoints hash (stream id -> state JSON)
    KEYS[2] task history spans hash (checkpoint id -> span JSON)

    ARGV[1] the checkpoint the span starts after ('0-0': the stream's start)
    ARGV[2] the checkpoint it ends at
    ARGV[3] span JSON

  Output:
    1 when kept, 0 when a checkpoint of it is gone
]]
local checkpointsKey, spansKey = unpack(KEYS, 1, 2)

local from, to, span = unpack(ARGV, 1, 3)

-- '0-0' is the stream's start, the state every task begins in: not stored as a checkpoint.
if (from ~= '0-0' and redis.call('HEXISTS', checkpointsKey, from) == 0)
    or redis.call('HEXISTS', checkpointsKey, to) == 0 then
  return 0
end
redis.call('HSET', spansKey, from, span)
return 1

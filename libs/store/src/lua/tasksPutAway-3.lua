--[[
  Put tasks of a shard away, fenced by the lease: they leave the set a new owner loads at its
  takeover (their snapshots hold all they are, and their next entry's feed note brings them back),
  and those whose stream keeps entries for the history's retention are scheduled for the trim
  that the retention owes them (an owner trims only the tasks it holds).

  A stale owner must not do this: a task it puts away may be held by the new owner, with work
  that would then be lost to a later takeover. Hence the fence.

  Input:
    KEYS[1] shard lease hash
    KEYS[2] shard task set (the tasks a new owner loads)
    KEYS[3] shard trim schedule (zset: task id -> server time in ms its retention trim is due)

    ARGV[1] fencing token: <epoch>:<owner> of the writer's lease
    ARGV[2 ..] pairs: task id, trim due time in ms ('' for no trim owed)

  Output:
    the number of tasks removed from the set
    errors: "FENCED ..."
]]
local leaseKey = KEYS[1]
local tasksKey = KEYS[2]
local trimsKey = KEYS[3]

local token = ARGV[1]
local FIRST_PAIR = 2

--- @include "includes/fence"

local fenced = baton_fence(leaseKey, token)
if fenced then return redis.error_reply(fenced) end
local removed = 0
for i = FIRST_PAIR, #ARGV, 2 do
  local taskId = ARGV[i]
  removed = removed + redis.call('SREM', tasksKey, taskId)
  if ARGV[i + 1] ~= '' then
    redis.call('ZADD', trimsKey, ARGV[i + 1], taskId)
  end
end
return removed

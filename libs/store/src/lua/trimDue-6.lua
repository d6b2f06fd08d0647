--[[
  The retention trim a task put away is owed, once due, fenced by the lease: an owner trims a
  task's stream at its snapshots, and a task put away takes none, so without this its last
  retained day would stay for good. The due time is checked here, by the server's clock (the one
  the trim's retention is judged by), and the schedule entry goes only with the trim it was for.

  Input:
    KEYS[1] shard lease hash
    KEYS[2] shard trim schedule (zset: task id -> server time in ms its trim is due)
    KEYS[3] task snapshot hash
    KEYS[4] task stream
    KEYS[5] task checkpoints hash
    KEYS[6] task history spans hash

    ARGV[1] fencing token: <epoch>:<owner> of the writer's lease
    ARGV[2] task id
    ARGV[3] retention in ms

  Output:
    the number of entries removed, or -1 when the task's trim is not due (or not scheduled)
    errors: "FENCED ..."
]]
local leaseKey, trimsKey, snapshotKey, streamKey, checkpointsKey, spansKey = unpack(KEYS, 1, 6)

local token, taskId, retainMs = unpack(ARGV, 1, 3)

--- @include "includes/fence"
--- @include "includes/trim"

local fenced = baton_fence(leaseKey, token)
if fenced then return redis.error_reply(fenced) end
local due = redis.call('ZSCORE', trimsKey, taskId)
if not due or tonumber(due) > baton_now_ms() then return -1 end
redis.call('ZREM', trimsKey, taskId)
return baton_trim(snapshotKey, streamKey, checkpointsKey, spansKey, retainMs, 0)

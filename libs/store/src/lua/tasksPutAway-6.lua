--[[
  Put a task of a shard away, fenced by the lease: it leaves the set a new owner loads at its
  takeover (its snapshot holds all it is, and its next entry's feed note brings it back; the
  append's dedupe hash loses its renewal stamp, so that append puts the task back), and, when
  its stream keeps entries for the history's retention, its trim is scheduled (an owner trims only
  the tasks it holds).

  Only if Redis holds the task as the owner folded it: its snapshot at the last entry folded (a
  failover to a replica without the latest writes leaves an older state, which a new load must
  see), and the stream's last entry that one: nothing appended after it (an entry appended since
  has a note that will bring the task back, and the set must keep it until then), and nothing lost
  (a stream behind what the owner folded is a Redis that lost writes; the owner reloads the task). And only by the owner: a task a stale owner puts away
  may be held by the new owner, with work a later takeover would then not find.

  Input:
    KEYS[1] shard lease hash
    KEYS[2] shard live task set (the tasks a new owner loads)
    KEYS[3] shard trim schedule (zset: task id -> server time in ms its retention trim is due)
    KEYS[4] task stream
    KEYS[5] task snapshot hash
    KEYS[6] the task's append dedupe hash (its renewal stamp is dropped)

    ARGV[1] fencing token: <epoch>:<owner> of the writer's lease
    ARGV[2] task id
    ARGV[3] id of the last entry the owner folded
    ARGV[4] trim due time in ms ('' for no trim owed)

  Output:
    1 when put away, 0 when Redis does not hold the task as folded (it stays listed)
    errors: "FENCED ..."
]]
local leaseKey, liveKey, trimsKey, streamKey, snapshotKey, dedupeKey = unpack(KEYS, 1, 6)

local token, taskId, foldedId, trimDue = unpack(ARGV, 1, 4)

--- @include "includes/fence"

local fenced = baton_fence(leaseKey, token)
if fenced then return redis.error_reply(fenced) end
if (redis.call('HGET', snapshotKey, 'id') or '0-0') ~= foldedId then return 0 end
if baton_last_id(streamKey) ~= foldedId then return 0 end
redis.call('SREM', liveKey, taskId)
-- Not a writer instance: append-4.lua's RENEWED.
redis.call('HDEL', dedupeKey, '\0renewed')
if trimDue ~= '' then redis.call('ZADD', trimsKey, trimDue, taskId) end
return 1

--[[
  Store a task's current view (the read model gateways serve), fenced, and never older than the
  one already stored: a view carries the update seq it reflects.

  Input:
    KEYS[1] shard lease hash
    KEYS[2] shard hash: task id -> view JSON
    KEYS[3] shard hash: task id -> seq of the stored view

    ARGV[1] epoch
    ARGV[2] task id
    ARGV[3] seq
    ARGV[4] view JSON

  Output:
    1 when written, 0 when the stored view is as new or newer
    errors: "FENCED ..."
]]
local leaseKey = KEYS[1]
local viewsKey = KEYS[2]
local seqsKey = KEYS[3]

local epoch = ARGV[1]
local taskId = ARGV[2]
local seq = ARGV[3]
local view = ARGV[4]

--- @include "includes/fence"

local fenced = baton_fence(leaseKey, epoch)
if fenced then return redis.error_reply(fenced) end
local stored = tonumber(redis.call('HGET', seqsKey, taskId) or '-1')
if stored >= tonumber(seq) then return 0 end
redis.call('HSET', viewsKey, taskId, view)
redis.call('HSET', seqsKey, taskId, seq)
return 1

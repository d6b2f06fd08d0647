--[[
  Fenced, expected-version append: the shard owner's decisions enter a task stream only if the
  owner still holds the lease at its epoch and has processed the stream up to its last entry.

  Input:
    KEYS[1] shard lease hash
    KEYS[2] task stream
    KEYS[3] shard feed stream

    ARGV[1] fencing token: <epoch>:<owner> of the writer's lease
    ARGV[2] expected last id of the stream ('0-0' for an empty one)
    ARGV[3] task id
    ARGV[4] feed MAXLEN (approximate)
    ARGV[5 ..] entry JSON, one per entry

  Output:
    the new stream ids, in order
    errors: "FENCED ..." (lease lost or epoch moved on), "CONFLICT <actual last id>"
]]
local leaseKey, streamKey, feedKey = unpack(KEYS, 1, 3)

local token, expectedLastId, taskId, feedMaxLen = unpack(ARGV, 1, 4)
local FIRST_ENTRY = 5

--- @include "includes/fence"
--- @include "includes/append"

local fenced = baton_fence(leaseKey, token)
if fenced then return redis.error_reply(fenced) end
local actual = baton_last_id(streamKey)
if actual ~= expectedLastId then return redis.error_reply('CONFLICT ' .. actual) end
return baton_append_entries(streamKey, feedKey, feedMaxLen, taskId, FIRST_ENTRY, #ARGV, {})

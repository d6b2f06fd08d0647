--[[
  Append messages to an execution's inbox, fenced: only the shard owner hands prompts to workers.

  Input:
    KEYS[1] shard lease hash
    KEYS[2] execution inbox stream

    ARGV[1] fencing token: <epoch>:<owner> of the writer's lease
    ARGV[2] inbox MAXLEN (approximate)
    ARGV[3 ..] message JSON, one per message

  Output:
    the new stream ids
    errors: "FENCED ..."
]]
local leaseKey, inboxKey = unpack(KEYS, 1, 2)

local token, maxLen = unpack(ARGV, 1, 2)
local FIRST_MESSAGE = 3

--- @include "includes/fence"

local fenced = baton_fence(leaseKey, token)
if fenced then return redis.error_reply(fenced) end
local ids = {}
for i = FIRST_MESSAGE, #ARGV do
  ids[#ids + 1] = redis.call('XADD', inboxKey, 'MAXLEN', '~', maxLen, '*', 'e', ARGV[i])
end
return ids

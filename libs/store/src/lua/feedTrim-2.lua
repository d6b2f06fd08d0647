--[[
  Trim a shard's feed through the notes its owner has handled, fenced by the lease. A note is
  handled once its task is in the shard's live set (its append put it there; an owner registers a
  task whose note came from an older writer) or put away with a snapshot that covers it: a new
  owner finds such a task through the set, so the note need not stay for it. The feed then holds
  what no owner has read, and a takeover replays that, not the last MAXLEN notes.

  Fenced because only the owner that reads the feed may cut it.

  Input:
    KEYS[1] shard lease hash
    KEYS[2] shard feed stream

    ARGV[1] fencing token: <epoch>:<owner> of the writer's lease
    ARGV[2] the id of the first note to keep (XTRIM MINID: every note before it goes)

  Output:
    the number of notes removed
    errors: "FENCED ..."
]]
local leaseKey, feedKey = unpack(KEYS, 1, 2)

local token, keepFrom = unpack(ARGV, 1, 2)

--- @include "includes/fence"

local fenced = baton_fence(leaseKey, token)
if fenced then return redis.error_reply(fenced) end
return redis.call('XTRIM', feedKey, 'MINID', keepFrom)

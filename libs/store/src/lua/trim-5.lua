--[[
  Trim a task stream behind the id its snapshot covers (XTRIM MINID keeps that entry and
  everything after it), fenced by the lease. Without a snapshot nothing is trimmed.

  With a retention, what is younger than it (by the server's clock) stays, and so does a state
  to fold it from: the stream is cut at the newest checkpoint no younger than the retention's
  start, and the checkpoints before it go, with the history spans that start at them. With no
  such checkpoint yet, nothing is trimmed. With a hot window, raw entries older than it go too
  where the history spans answer for them (includes/trim.lua); checkpoints and spans stay.

  Input:
    KEYS[1] shard lease hash
    KEYS[2] task snapshot hash
    KEYS[3] task stream
    KEYS[4] task checkpoints hash (stream id -> state JSON)
    KEYS[5] task history spans hash (checkpoint id -> span JSON)

    ARGV[1] fencing token: <epoch>:<owner> of the writer's lease
    ARGV[2] retention in ms (0: trim right up to the snapshot)
    ARGV[3] hot window in ms (0 or not below the retention: raw entries kept for the retention)

  Output:
    the number of entries removed
    errors: "FENCED ..."
]]
local leaseKey, snapshotKey, streamKey, checkpointsKey, spansKey = unpack(KEYS, 1, 5)

local token, retainMs, hotMs = unpack(ARGV, 1, 3)

--- @include "includes/fence"
--- @include "includes/trim"

local fenced = baton_fence(leaseKey, token)
if fenced then return redis.error_reply(fenced) end
return baton_trim(snapshotKey, streamKey, checkpointsKey, spansKey, retainMs, hotMs)

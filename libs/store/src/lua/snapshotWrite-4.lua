--[[
  Write a task's snapshot: the folded state and the stream id it covers, fenced by the lease.
  A snapshot never moves back to an older id, so a trim based on it never removes entries that a
  later reader would still need to replay. When checkpoints are kept and the newest is at least
  ARGV[4] ms older than this snapshot, the snapshot is also kept as a checkpoint: a state the
  history query can fold forward from, and the point a retention trim may cut the stream to.

  A snapshot never covers more than the stream holds: an owner whose Redis lost its latest writes
  (a failover to a replica behind, a restart from an older dump) has folded entries that are no
  longer there, and a snapshot of that state would make every later load start from them.

  Input:
    KEYS[1] shard lease hash
    KEYS[2] task snapshot hash (state, id, epoch)
    KEYS[3] task checkpoints hash (stream id -> state JSON)
    KEYS[4] task stream

    ARGV[1] fencing token: <epoch>:<owner> of the writer's lease
    ARGV[2] stream id covered
    ARGV[3] state JSON
    ARGV[4] checkpoint interval in ms (0: no checkpoints)

  Output:
    the id of the checkpoint before this one when the snapshot was kept as a checkpoint: the
    history span between the two can now be built; '0-0' for the first checkpoint of a stream
    that still holds its start (the span from the start, which lets a hot-window trim cut the
    start while the history still answers for it); else ''
    errors: "FENCED ...", "STALE <current id>" when the stored snapshot covers a later id (one
            at an entry the stream does not hold is replaced),
            "BEHIND <last id>" when the stream's last entry is before the id
]]
local leaseKey, snapshotKey, checkpointsKey, streamKey = unpack(KEYS, 1, 4)

local token, id, state, checkpointEveryMs = unpack(ARGV, 1, 4)

--- @include "includes/fence"

local fenced = baton_fence(leaseKey, token)
if fenced then return redis.error_reply(fenced) end
local last = baton_last_id(streamKey)
if baton_id_cmp(id, last) > 0 then return redis.error_reply('BEHIND ' .. last) end
local cur = redis.call('HGET', snapshotKey, 'id')
-- A stored snapshot at an entry the stream does not hold is of writes Redis lost: replaced.
if cur and baton_id_cmp(id, cur) < 0 and #redis.call('XRANGE', streamKey, cur, cur) > 0 then
  return redis.error_reply('STALE ' .. cur)
end
redis.call('HSET', snapshotKey, 'id', id, 'state', state, 'epoch', baton_token_epoch(token))
local every = tonumber(checkpointEveryMs) or 0
if every > 0 then
  local newest = nil
  for _, c in ipairs(redis.call('HKEYS', checkpointsKey)) do
    if not newest or baton_id_cmp(c, newest) > 0 then newest = c end
  end
  local ms = tonumber(string.match(id, '^(%d+)'))
  if not newest then
    redis.call('HSET', checkpointsKey, id, state)
    local info = {}
    if redis.call('EXISTS', streamKey) == 1 then info = redis.call('XINFO', 'STREAM', streamKey) end
    local added, length = nil, nil
    for i = 1, #info, 2 do
      if info[i] == 'entries-added' then added = info[i + 1] end
      if info[i] == 'length' then length = info[i + 1] end
    end
    if added ~= nil and added == length then return '0-0' end
  elseif ms - tonumber(string.match(newest, '^(%d+)')) >= every then
    redis.call('HSET', checkpointsKey, id, state)
    return newest
  end
end
return ''

--[[
  Trim a shard's feed through the notes its owner has handled, fenced by the lease, and record how
  far. A note is handled once its task is in the shard's live set (or put away with a snapshot
  that covers it): a new owner finds such a task through the set, so the note need not stay for
  it. The feed then holds what no owner has handled, and a takeover replays that, not the last
  MAXLEN notes. The record lets an owner tell its feed is whole: it keeps how many notes had left
  the feed after this trim (entries added minus length), so notes that leave it otherwise (a
  writer's MAXLEN while no owner kept up, which deletes the oldest, handled or not) show as more
  gone than recorded; the owner then loads every task the shard has seen instead.

  Fenced because a stale owner's registrations may land after the new owner listed the set: only
  the owner that reads the feed may cut it.

  Input:
    KEYS[1] shard lease hash
    KEYS[2] shard feed stream
    KEYS[3] shard feed record (hash): `id` handled through, `gone` notes removed after this trim

    ARGV[1] fencing token: <epoch>:<owner> of the writer's lease
    ARGV[2] the id of the last note handled ('0-0': none; the record is brought up to date only)
    ARGV[3] the least id after it (XTRIM MINID: every note before it goes)

  Output:
    the number of notes removed
    errors: "FENCED ..."
]]
local leaseKey = KEYS[1]
local feedKey = KEYS[2]
local handledKey = KEYS[3]

local token = ARGV[1]
local handledId = ARGV[2]
local keepFrom = ARGV[3]

--- @include "includes/fence"

local fenced = baton_fence(leaseKey, token)
if fenced then return redis.error_reply(fenced) end
local current = redis.call('HGET', handledKey, 'id')
if not current or baton_id_cmp(handledId, current) > 0 then
  redis.call('HSET', handledKey, 'id', handledId)
end
local removed = redis.call('XTRIM', feedKey, 'MINID', keepFrom)
local added, length = 0, 0
if redis.call('EXISTS', feedKey) == 1 then
  local info = redis.call('XINFO', 'STREAM', feedKey)
  for i = 1, #info, 2 do
    if info[i] == 'entries-added' then added = info[i + 1] end
    if info[i] == 'length' then length = info[i + 1] end
  end
end
redis.call('HSET', handledKey, 'gone', added - length)
return removed

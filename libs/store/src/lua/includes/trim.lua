--[[
  The trim of a task stream, shared by trim-5.lua (the owner's, at a snapshot) and trimDue-6.lua
  (a task put away, when its retention has passed); taken in with
  `--- @include "includes/trim"` after includes/fence. Not a script by itself.

  Trims behind the id the snapshot covers (XTRIM MINID keeps that entry and everything after it);
  without a snapshot nothing is trimmed. With a retention, what is younger than it (by the
  server's clock) stays, and so does a state to fold it from: the stream is cut at the newest
  checkpoint no younger than the retention's start, and the checkpoints before it go, with the
  history spans that start at them. With no such checkpoint yet, nothing is trimmed. Returns the
  number of entries removed. Nothing is cut at an entry the stream does not hold.
]]
local function baton_trim(snapshot_key, stream_key, checkpoints_key, spans_key, retain_ms)
  local id = redis.call('HGET', snapshot_key, 'id')
  if not id then return 0 end
  local retain = tonumber(retain_ms) or 0
  if retain > 0 then
    local cutoff = baton_now_ms() - retain
    local base = nil
    local ids = redis.call('HKEYS', checkpoints_key)
    for _, c in ipairs(ids) do
      if tonumber(string.match(c, '^(%d+)')) <= cutoff and baton_id_cmp(c, id) <= 0 then
        if not base or baton_id_cmp(c, base) > 0 then base = c end
      end
    end
    if not base then return 0 end
    for _, c in ipairs(ids) do
      if baton_id_cmp(c, base) < 0 then
        redis.call('HDEL', checkpoints_key, c)
        redis.call('HDEL', spans_key, c)
      end
    end
    id = base
  end
  -- A cut at an entry the stream does not hold would take what follows it too (a snapshot an
  -- earlier version wrote after Redis lost writes): nothing is cut then.
  if #redis.call('XRANGE', stream_key, id, id) == 0 then return 0 end
  return redis.call('XTRIM', stream_key, 'MINID', id)
end

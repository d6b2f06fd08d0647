--[[
  The trim of a task stream, shared by trim-5.lua (the owner's, at a snapshot) and trimDue-6.lua
  (a task put away, when its retention has passed); taken in with
  `--- @include "includes/trim"`. Not a script by itself.

  Trims behind the id the snapshot covers (XTRIM MINID keeps that entry and everything after it);
  without a snapshot nothing is trimmed. With a retention, what is younger than it (by the
  server's clock) stays, and so does a state to fold it from: the stream is cut at the newest
  checkpoint no younger than the retention's start, and the checkpoints before it go, with the
  history spans that start at them. With no such checkpoint yet, nothing is trimmed.

  With a hot window shorter than the retention, raw entries older than it go too while the
  history spans still answer for them: the cut moves on from the retention's checkpoint (or the
  stream's start, whose span is kept under '0-0') to each next checkpoint no younger than the hot
  window, as long as the span from the one before exists. The checkpoints and spans stay for the
  retention, so a history query folds nothing it cannot read. Returns the number of entries
  removed. Nothing is cut at an entry the stream does not hold.
]]

--- @include "includes/fence"

local function baton_trim(snapshot_key, stream_key, checkpoints_key, spans_key, retain_ms, hot_ms)
  local id = redis.call('HGET', snapshot_key, 'id')
  if not id then return 0 end
  local retain = tonumber(retain_ms) or 0
  if retain > 0 then
    local now = baton_now_ms()
    local cutoff = now - retain
    local base = nil
    local ids = redis.call('HKEYS', checkpoints_key)
    for _, c in ipairs(ids) do
      if tonumber(string.match(c, '^(%d+)')) <= cutoff and baton_id_cmp(c, id) <= 0 then
        if not base or baton_id_cmp(c, base) > 0 then base = c end
      end
    end
    if base then
      for _, c in ipairs(ids) do
        if baton_id_cmp(c, base) < 0 then
          redis.call('HDEL', checkpoints_key, c)
          redis.call('HDEL', spans_key, c)
        end
      end
      -- The span from the stream's start answers only while the start is kept.
      redis.call('HDEL', spans_key, '0-0')
    end
    local cut = base
    local hot = tonumber(hot_ms) or 0
    if hot > 0 and hot < retain then
      local hot_cutoff = now - hot
      table.sort(ids, function(a, b) return baton_id_cmp(a, b) < 0 end)
      local at = base or '0-0'
      for _, c in ipairs(ids) do
        if baton_id_cmp(c, at) > 0 then
          if tonumber(string.match(c, '^(%d+)')) > hot_cutoff or baton_id_cmp(c, id) > 0 then break end
          if redis.call('HEXISTS', spans_key, at) == 0 then break end
          cut = c
          at = c
        end
      end
    end
    if not cut then return 0 end
    id = cut
  end
  -- A cut at an entry the stream does not hold would take what follows it too (a snapshot an
  -- earlier version wrote after Redis lost writes): nothing is cut then.
  if #redis.call('XRANGE', stream_key, id, id) == 0 then return 0 end
  return redis.call('XTRIM', stream_key, 'MINID', id)
end

--[[
  Functions shared by the fenced scripts, which take them in with the line
  `--- @include "includes/fence"` (the loader puts this file in its place; Redis scripts cannot
  import one another). Not a script by itself: it has no key count in its name.
]]

-- A write is fenced when the shard's lease does not carry the writer's epoch or has expired by the
-- server's clock. The key's own PEXPIRE normally removes an expired lease; comparing expiresAt with
-- TIME as well keeps the check exact even before Redis actively expires the key.
local function baton_now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function baton_fence(lease_key, epoch)
  local l = redis.call('HMGET', lease_key, 'epoch', 'expiresAt')
  if not l[1] or l[1] ~= epoch then
    return 'FENCED lease epoch is ' .. tostring(l[1] or 'none') .. ', writer has ' .. epoch
  end
  if tonumber(l[2]) <= baton_now_ms() then
    return 'FENCED lease expired'
  end
  return nil
end

-- Stream ids compare as (ms, seq) pairs; both parts stay below 2^53, exact in Lua numbers.
local function baton_id_parts(id)
  local dash = string.find(id, '-', 1, true)
  if not dash then return tonumber(id), 0 end
  return tonumber(string.sub(id, 1, dash - 1)), tonumber(string.sub(id, dash + 1))
end

local function baton_id_cmp(a, b)
  local am, as = baton_id_parts(a)
  local bm, bs = baton_id_parts(b)
  if am ~= bm then return am < bm and -1 or 1 end
  if as ~= bs then return as < bs and -1 or 1 end
  return 0
end

local function baton_last_id(stream_key)
  local last = redis.call('XREVRANGE', stream_key, '+', '-', 'COUNT', 1)
  if last[1] then return last[1][1] end
  return '0-0'
end

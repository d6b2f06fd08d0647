--[[
  Functions shared by the fenced scripts, which take them in with the line
  `--- @include "includes/fence"` (the loader puts this file in its place; Redis scripts cannot
  import one another). Not a script by itself: it has no key count in its name.
]]

local function baton_now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A write is fenced unless the shard's lease is held by the writer: its fencing token names both
-- the epoch and the owner, "<epoch>:<owner>". The owner counts too: a failover that lost an
-- acquisition (asynchronous replication) hands the same epoch number out again, to another owner.
-- An expired lease is no lease: leaseAcquire and leaseRenew set the key's PEXPIRE with its
-- expiresAt, and Redis never returns a key past its expiry to a read (it checks on every access,
-- by the script's start time inside a script), whether or not it has removed it yet. So no TIME
-- is needed here.
local function baton_fence(lease_key, token)
  local l = redis.call('HMGET', lease_key, 'epoch', 'owner')
  local held = l[1] and (l[1] .. ':' .. tostring(l[2])) or 'none'
  if held ~= token then
    return 'FENCED lease is ' .. held .. ', writer has ' .. token
  end
  return nil
end

-- The epoch of a fencing token: its digits before the first ':'.
local function baton_token_epoch(token)
  return string.match(token, '^(%d+):')
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

--[[
  Charges the bytes a tenant's clients append against its quota of stored bytes, or refuses them.
  What a task stream keeps beyond its snapshots is what was appended within the retention, so the
  quota counts the bytes appended over a sliding window of that length, in buckets (the oldest
  bucket still in the window counts whole). Check and charge are one call: two gateways charging
  together never both pass the quota.

  Input:
    KEYS[1] tenant quota hash: bucket start (server ms) -> bytes appended in it

    ARGV[1] bytes to charge
    ARGV[2] quota (bytes over the window)
    ARGV[3] window (ms)
    ARGV[4] bucket (ms)

  Output:
    {1, bytes in the window with these} charged, {0, bytes in the window} refused
]]
local key = KEYS[1]
local bytes = tonumber(ARGV[1])
local quota = tonumber(ARGV[2])
local windowMs = tonumber(ARGV[3])
local bucketMs = tonumber(ARGV[4])

--- @include "includes/fence"

local now = baton_now_ms()
local since = now - windowMs
local total = 0
local buckets = redis.call('HGETALL', key)
for i = 1, #buckets, 2 do
  local start = tonumber(buckets[i])
  if start == nil or start + bucketMs <= since then
    redis.call('HDEL', key, buckets[i])
  else
    total = total + (tonumber(buckets[i + 1]) or 0)
  end
end
if total + bytes > quota then return {0, total} end
redis.call('HINCRBY', key, tostring(now - (now % bucketMs)), bytes)
redis.call('PEXPIRE', key, windowMs + bucketMs)
return {1, total + bytes}

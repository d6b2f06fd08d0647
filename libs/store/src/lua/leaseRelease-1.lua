--[[
  Release a lease held by the caller at its epoch, so another owner can take it at once. The epoch
  counter stays: the next owner's epoch is still greater.

  Input:
    KEYS[1] shard lease hash

    ARGV[1] owner id
    ARGV[2] epoch

  Output:
    1 when released, 0 when the caller did not hold it
]]
local leaseKey = KEYS[1]

local owner, epoch = unpack(ARGV, 1, 2)

local cur = redis.call('HMGET', leaseKey, 'owner', 'epoch')
if cur[1] == owner and cur[2] == epoch then
  redis.call('DEL', leaseKey)
  return 1
end
return 0

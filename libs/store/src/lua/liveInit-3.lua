--[[
  Start a shard's live set from the task set of the owners before it (which listed every task
  they had loaded, put away or not), once: later owners load the live set alone. Idempotent.

  Input:
    KEYS[1] shard live task set
    KEYS[2] shard task set of earlier versions (every task loaded)
    KEYS[3] shard marker: the live set was started

  Output:
    1 when it was started now, 0 when it had been
]]
local liveKey, tasksKey, markerKey = unpack(KEYS, 1, 3)

if redis.call('EXISTS', markerKey) == 1 then return 0 end
redis.call('SUNIONSTORE', liveKey, liveKey, tasksKey)
redis.call('SET', markerKey, '1')
return 1

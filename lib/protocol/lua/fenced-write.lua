-- fenced-write.lua: writes a value only if the writer's fencing token is not older than the newest one
-- this resource has accepted, so a holder that lost its lock (a long pause, a partition) cannot
-- overwrite what a newer holder wrote. The same holder may write again with the same token.
-- KEYS[1] the resource: a hash { v = value, f = highest fence accepted }
-- ARGV[1] fence    the writer's lease.fence
-- ARGV[2] value
-- ARGV[3] ttl ms   0 keeps the resource forever
-- Returns {1, fence} when written, {0, newest fence} when refused as stale.

local fence = tonumber(ARGV[1])
local newest = tonumber(redis.call('HGET', KEYS[1], 'f') or '-1')
if fence < newest then
  return {0, string.format('%.0f', newest)}
end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 'f', ARGV[1])
local ttl = tonumber(ARGV[3])
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
return {1, ARGV[1]}

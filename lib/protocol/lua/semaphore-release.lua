-- semaphore-release.lua: a holder gives its permit back; the first waiters in line are granted the
-- permits free, in the same step.
-- KEYS/ARGV[1..7]: see semaphore.lua
-- Returns 1 if the caller held a permit, 0 if it did not (its hold ended, or it never had one).

local ends = redis.call('ZSCORE', holders_key, token)
if not ends then return 0 end
redis.call('ZREM', holders_key, token)
redis.call('HDEL', owner_key, token)
served_after_leaving()
return tonumber(ends) > now_ms and 1 or 0

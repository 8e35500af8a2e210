-- semaphore-extend.lua: a holder resets its hold to a full ttl (also how a granted waiter confirms).
-- KEYS/ARGV[1..7]: see semaphore.lua (ARGV[2]: the new ttl)
-- Returns 1 if the caller holds a permit (now for ttl), -1 if its hold ended or it never had one.

local ends = redis.call('ZSCORE', holders_key, token)
if not ends or tonumber(ends) < now_ms then return -1 end
hold_for(token, ttl)
outlive(now_ms + ttl, false)
return 1

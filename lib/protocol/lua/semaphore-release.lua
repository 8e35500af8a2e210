-- semaphore-release.lua: a holder gives its permit back; the first waiters in line are granted the
-- permits free, in the same step.
-- KEYS/ARGV[1..7]: see semaphore.lua
-- Returns 1 if the caller held a permit, 0 if it did not (its hold ended, or it never had one).

if not redis.call('ZSCORE', holders_key, token) then return 0 end
-- A hold that ended is dropped all the same (remove_holder finds it gone), and the line served.
local held = remove_holder(token)
served_after_leaving()
return held and 1 or 0

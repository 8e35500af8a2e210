-- release.lua: the owner gives the lock up; the next live waiter, if any, is granted it in the same step.
-- KEYS/ARGV[1..6]: see common.lua
-- Returns 1 if the caller held the lock, 0 if it did not (expired, taken over, or never held).

if redis.call('GET', owner_key) ~= token then return 0 end
give_up()
return 1

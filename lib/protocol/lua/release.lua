-- release.lua: the owner gives the lock up; the next live waiter, if any, is granted it in the same step.
-- KEYS/ARGV[1..6]: see prelude.lua
-- Returns 1 if the caller held the lock, 0 if it did not (expired, taken over, or never held).

if redis.call('GET', owner_key) ~= token then return 0 end
-- Nobody queued, the usual case: free the key without defining the hand-off helpers below.
local head = redis.call('LPOP', queue_key)
if not head then
  redis.call('DEL', owner_key)
  return 1
end

-- @common
give_up(head)
return 1

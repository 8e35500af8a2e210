-- release.lua: the owner gives the lock up; the next live waiter, if any, is granted it in the same step.
-- KEYS/ARGV[1..6]: see prelude.lua
-- Returns 1 if the caller held the lock, 0 if it did not (expired, taken over, or never held); when it
-- went to a waiter of the caller's own service, that grant instead of 1 (hand_off in common.lua): the
-- service wakes its waiter from this reply, so nothing is published to it.

if redis.call('GET', owner_key) ~= token then return 0 end
-- Nobody queued, the usual case: free the key without defining the hand-off helpers below.
local head = redis.call('LPOP', queue_key)
if not head then
  redis.call('DEL', owner_key)
  return 1
end

-- @common
if is_reservation(head) then
  -- A reservation keeps its place: put it back. If it was the only entry the queue key went with it,
  -- so the key's expiry is set again, to the reservation's own.
  if redis.call('LPUSH', queue_key, head) == 1 then
    local expires = tonumber(string.match(head, '^%^(%d+)%^')) or 0
    redis.call('PEXPIRE', queue_key, math.max(1, expires - math.floor(server_time_us() / 1000)))
  end
  return give_up(nil, true) or 1
end
return give_up(head, true) or 1

-- release.lua: the owner gives the lock up; the next live waiter, if any, is granted it in the same step.
-- KEYS/ARGV[1..6]: see prelude.lua
--   ARGV[7] from       optional: the token the lock is held under in Redis when the caller is a follower
--                      it was handed on to locally, not yet recorded (docs/protocol.md, "Local hand-off")
--   ARGV[8..]          with ARGV[7]: the followers handed the lock since (the caller among them), who
--                      leave the line now
-- Returns 1 if the caller held the lock, 0 if it did not (expired, taken over, or never held); when it
-- went to a waiter of the caller's own service, that grant instead (hand_off in common.lua), with 1 or
-- 0 appended: the service wakes its waiter from this reply, so nothing is published to it.

local current = redis.call('GET', owner_key)
local held = current == token
if not held then
  if not ARGV[7] then return 0 end
  -- They were at the front of the line, so each LREM stops at once. They leave it even when the lock
  -- is no longer held under ARGV[7]: none of them waits any more.
  for i = 8, #ARGV do redis.call('LREM', queue_key, 1, ARGV[i]) end
  held = current == ARGV[7]
  -- Another owner: nothing more to do. No owner (it ran out, or was evicted): the line is served now,
  -- as the next waiter's own re-check would serve it, and the caller learns it did not hold the lock.
  if not held and current then return 0 end
end
-- Nobody queued, the usual case: free the key without defining the hand-off helpers below.
local head = redis.call('LPOP', queue_key)
if not head then
  if not held then return 0 end
  redis.call('DEL', owner_key)
  return 1
end

-- @common
if is_reservation(head) then
  -- A reservation keeps its place: put it back. If it was the only entry
  -- the queue key went with it, so the key's expiry is set again, to a reservation's own (a waiter's
  -- line lives at least a claim window more).
  if redis.call('LPUSH', queue_key, head) == 1 then
    local expires = tonumber(string.match(head, '^%^(%d+)%^'))
    local left = expires and expires - math.floor(server_time_us() / 1000) or claim_of(head)
    redis.call('PEXPIRE', queue_key, math.max(1, left))
  end
  head = nil
end
local grant = give_up(head, true)
if grant then grant[5] = held and 1 or 0 end
return grant or (held and 1 or 0)

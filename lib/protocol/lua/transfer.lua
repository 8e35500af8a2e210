-- transfer.lua: the owner hands the lock to the waiter that was first in line after it when it was
-- granted, a waiter of its own service, which has already started on the rest of the owner's validity
-- (the local hand-off: docs/protocol.md). This records it: the waiter becomes the owner for its full ttl
-- and leaves the queue, with the fence set aside for it then. Run again after a lost reply, it only
-- renews.
-- KEYS/ARGV[1..6]: see prelude.lua; the token and ttl are the new owner's
--   ARGV[7] from   the token of the owner handing on
-- Returns {1} the new owner holds the lock for its ttl, or {1, successor, fence} when the waiter now
--         first in line is of the same service too (set aside for the next local hand-off, as in
--         common.lua); {0} another owner holds it, {-1} nobody does (the owner's lease ran out).

local current = redis.call('GET', owner_key)
if current == token then
  redis.call('PEXPIRE', owner_key, ttl)
  return {1}
end
if current ~= ARGV[7] then return {current and 0 or -1} end
redis.call('SET', owner_key, token, 'PX', ttl)
-- It was at the front when the owner learnt of it, and only a hand-off (the owner's) moves the front:
-- LREM stops at once. Its own cancel may have taken it out already, which changes nothing here.
redis.call('LREM', queue_key, 1, token)

-- @common

local next_head, next_at, follows = successor_of(token)
if follows then return {1, next_head, next_fence(server_time_us())} end
notify_head(ttl, next_head, next_at)
return {1}

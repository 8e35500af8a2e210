-- transfer.lua: records a local hand-off (docs/protocol.md). The owner's service handed the lock to the
-- waiters that followed it in line (common.lua, followers_of), one after another, without telling Redis;
-- the caller, one of them, now needs the lock in its own name (to renew it, or because its work is long):
-- it becomes the owner for its full ttl, and it and the followers before it leave the line. Run again
-- after a lost reply, it only renews.
-- KEYS/ARGV[1..6]: see prelude.lua; the token and ttl are the new owner's
--   ARGV[7] from     the token the lock is held under in Redis (the owner that handed it on)
--   ARGV[8] follow   "1": the caller has no followers left, so name new ones (as a grant would)
--   ARGV[9..]        the followers handed the lock so far, the caller among them: they leave the line
-- Returns {1} the new owner holds the lock for its ttl, or {1, followers joined by spaces, the first
--         one's fence} when waiters of the same service are now first in line; {0} another owner holds
--         it, {-1} nobody does (the owner's lease ran out).

local current = redis.call('GET', owner_key)
if current == token then
  redis.call('PEXPIRE', owner_key, ttl)
  return {1}
end
-- They were at the front when the owner learnt of them, and only this service's hand-offs move the
-- front while it holds the lock: each LREM stops at once. A follower's own cancel may have taken it out
-- already, which changes nothing here. They leave the line even when the lock is no longer held under
-- ARGV[7]: none of them waits any more.
for i = 9, #ARGV do redis.call('LREM', queue_key, 1, ARGV[i]) end
if current ~= ARGV[7] then return {current and 0 or -1} end
redis.call('SET', owner_key, token, 'PX', ttl)
-- Followers still to come were named with fences set aside: nobody else needs telling.
if ARGV[8] ~= '1' then return {1} end

-- @common

local next_head, next_at, follows = followers_of(token)
if #follows > 0 then return {1, table.concat(follows, ' '), next_fence(server_time_us(), #follows)} end
notify_head(ttl, next_head, next_at)
return {1}

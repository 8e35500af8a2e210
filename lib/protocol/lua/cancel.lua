-- cancel.lua: a waiter gives up (timeout, abort, shutdown). It leaves the queue; if a grant raced in
-- and made it the owner, the grant is passed on to the next waiter instead of stalling for a claim window.
-- KEYS/ARGV[1..6]: see prelude.lua
--   ARGV[7] reserved   the caller's reservation on this key (reserve.lua), or "": it goes too
-- Returns 1 if the caller had been granted the lock (and passed it on), else 0.

-- @common

local was_head = first_active() == token
redis.call('LREM', queue_key, 0, token)
if ARGV[7] and ARGV[7] ~= '' then redis.call('LREM', queue_key, 0, ARGV[7]) end
if redis.call('GET', owner_key) == token then
  give_up()
  return 1
end
if was_head then
  -- The waiter now first must learn when the current hold ends, as the one that left would have.
  local head, at = first_active()
  if head then notify_head(math.max(redis.call('PTTL', owner_key), 0), head, at) end
end
return 0

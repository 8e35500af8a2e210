-- cancel.lua: a waiter gives up (timeout, abort, shutdown). It leaves the queue; if a grant raced in
-- and made it the owner, the grant is passed on to the next waiter instead of stalling for a claim window.
-- KEYS/ARGV[1..6]: see prelude.lua
--   ARGV[7] reserved   the caller's reservation on this key (reserve.lua), or "": it goes too
-- Returns 1 if the caller had been granted the lock (and passed it on), else 0.

-- @common

local was_told = first_told() == token
redis.call('LREM', queue_key, 0, token)
if ARGV[7] and ARGV[7] ~= '' then redis.call('LREM', queue_key, 0, ARGV[7]) end
local current = redis.call('GET', owner_key)
if current == token then
  back_in()
  give_up()
  return 1
end
-- Its service was passed over as stalled and is running again: if nobody holds the lock, its waiters
-- were all that was left in line, and the first of them is served now.
if back_in() and not current then
  give_up()
  return 0
end
if was_told then
  -- The waiter told in its place must learn when the current hold ends, as it would have.
  local head, at = first_told()
  if head then notify_head(math.max(redis.call('PTTL', owner_key), 0), head, at) end
end
return 0

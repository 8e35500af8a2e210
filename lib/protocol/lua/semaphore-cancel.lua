-- semaphore-cancel.lua: a waiter gives up (timeout, abort, shutdown). It leaves the line; if a grant
-- raced in, its permit goes to the next waiter at once instead of after a claim window.
-- KEYS/ARGV[1..7]: see semaphore.lua
-- Returns 1 if the caller had been granted a permit (and passed it on), else 0.

-- Whether it was the waiter told when the first hold ends (notify_head): first in line, or, while grants
-- pushed to other services are pending, the first waiter of a service with none.
local pending = redis.call('EXISTS', pending_set) == 1 and pending_instances() or nil
local was_head = redis.call('LINDEX', queue_key, 0) == token or (pending ~= nil and first_waiter(pending) == token)
redis.call('LREM', queue_key, 0, token)
-- Its service was passed over as stalled and is running again: its waiters are served in their places.
local returned = back_in()
if redis.call('ZSCORE', holders_key, token) then
  remove_holder(token)
  served_after_leaving()
  return 1
end
if returned then
  served_after_leaving()
  return 0
end
-- The new head must learn when the first hold ends, as the old head would have.
if was_head then notify_head(pending) end
return 0

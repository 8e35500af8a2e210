-- semaphore-cancel.lua: a waiter gives up (timeout, abort, shutdown). It leaves the line; if a grant
-- raced in, its permit goes to the next waiter at once instead of after a claim window.
-- KEYS/ARGV[1..7]: see semaphore.lua
-- Returns 1 if the caller had been granted a permit (and passed it on), else 0.

local was_told = is_told(token)
redis.call('LREM', queue_key, 0, token)
if redis.call('ZSCORE', holders_key, token) then
  remove_holder(token)
  served_after_leaving()
  return 1
end
-- The waiter told in its place must learn when the first hold ends, as it would have.
if was_told then notify_head() end
return 0

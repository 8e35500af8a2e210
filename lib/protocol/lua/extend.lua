-- extend.lua: the owner resets its lease to a full ttl. Also how a granted waiter confirms its grant.
-- KEYS[1] owner
-- KEYS[2] pending  optional, for the confirmation of a grant pushed to another process as its waiter
--                  starts: the note that the grant is pending ("<owner>:g") goes if it names the caller
-- ARGV[1] token, ARGV[2] ttl ms
-- Returns 1 if the caller holds the lock (now for ttl); 0 if another caller does; -1 if the owner key is
-- gone (expired, evicted under maxmemory, or deleted): the engine tells these apart in LockLostError.

if KEYS[2] and redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
local owner = redis.call('GET', KEYS[1])
if owner == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if owner == false then return -1 end
return 0

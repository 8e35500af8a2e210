-- extend.lua: the owner resets its lease to a full ttl. Also how a granted waiter confirms its grant.
-- KEYS[1] owner
-- ARGV[1] token, ARGV[2] ttl ms
-- Returns 1 if the caller holds the lock (now for ttl); 0 if another caller does; -1 if the owner key is
-- gone (expired, evicted under maxmemory, or deleted): the engine tells these apart in LockLostError.

local owner = redis.call('GET', KEYS[1])
if owner == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if owner == false then return -1 end
return 0

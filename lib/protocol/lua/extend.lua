-- extend.lua: the owner resets its lease to a full ttl. Also how a granted waiter confirms its grant.
-- KEYS[1] owner
-- ARGV[1] token, ARGV[2] ttl ms
-- Returns 1 if the caller holds the lock (now for ttl), 0 if it does not.

if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1

-- quorum-release.lua: the caller gives the lock up on one node (its lease ended, its attempt failed, or
-- it stopped waiting), and tells whoever waits for it there: a release on any node is a hint to try
-- again (waiters also re-check when the hold would run out).
-- KEYS[1] owner, KEYS[2] waiters
-- ARGV[1] token, ARGV[2] wake channel, ARGV[3] the lock key (the message),
-- ARGV[4] "1" when the caller leaves (it no longer waits), "0" after a failed attempt (it waits on)
-- Returns 1 if the caller held the lock on this node, else 0.

if ARGV[4] == '1' then redis.call('ZREM', KEYS[2], ARGV[1]) end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1

-- quorum-release.lua: the caller gives the lock up on one node, and tells whoever waits for it there
-- (a release on any node is a hint to try again; waiters also re-check when the hold would run out).
-- KEYS[1] owner
-- ARGV[1] token, ARGV[2] wake channel, ARGV[3] the lock key (the message)
-- Returns 1 if the caller held the lock on this node, else 0.

if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1

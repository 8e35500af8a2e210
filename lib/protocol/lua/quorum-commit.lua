-- quorum-commit.lua: records a quorum grant's fence on a node that voted for it (or handed it the lock),
-- while the caller still holds the lock there, renews the hold to the full ttl, and takes the caller out
-- of the lock's line. Any later majority shares a node
-- with the majority that committed, and that node's next floor (quorum-vote.lua) is above this fence:
-- fences strictly increase across grants as long as a majority of nodes keep their state.
-- KEYS[1] owner, KEYS[2] fence, KEYS[3] waiters, KEYS[4] line
-- ARGV[1] token, ARGV[2] fence, ARGV[3] how long the fence outlives the grant, ms, ARGV[4] ttl, ms
-- Returns 1 if recorded (the caller still holds the lock here), else 0: also when this node knows a
-- higher fence than the one proposed (a hand-off's fence computed from stale state), which must not
-- be reused.

if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local known = tonumber(redis.call('GET', KEYS[2]) or '0')
if known > tonumber(ARGV[2]) then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
if tonumber(ARGV[2]) > known then redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3]) end
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
return 1

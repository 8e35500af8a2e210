-- quorum-restore.lua: puts a holder's key back on a node that lost it (restarted without persistence,
-- evicted, deleted), during a renewal that found the holder's key on a majority of the other nodes. Such
-- a majority already keeps every other caller out, so one more node recording the same holder only makes
-- the lease survive the next node to lose its state (a rolling restart). Never over another owner: a
-- caller that voted here meanwhile keeps its vote (it is given back when its attempt fails).
-- KEYS[1] owner
-- ARGV[1] token, ARGV[2] ttl, ms
-- Returns 1 if the key was put back, else 0.

if redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then return 1 end
return 0

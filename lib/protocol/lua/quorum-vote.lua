-- quorum-vote.lua: one node's vote for a grant of a lock kept on a quorum of independent masters
-- (Redlock; lib/store/quorum-store.ts). The node takes the lock for the caller if it is free here (or
-- already the caller's: a repeated vote renews it), and says the lowest fence it could issue next. A
-- caller that will wait is recorded among the lock's waiters here (what inspect counts), until its
-- grant is committed or it leaves (quorum-release.lua).
-- KEYS[1] owner "<prefix>{<key>}", KEYS[2] fence "<prefix>{<key>}:fence", KEYS[3] waiters "<prefix>{<key>}:w"
-- ARGV[1] token, ARGV[2] ttl ms, ARGV[3] how long a waiter stays recorded (0: a try, not recorded), ms
-- Returns {1, floor}   voted: the caller holds the lock on this node for ttl; floor = max(last fence
--                      committed here + 1, this server's clock in µs), so a fence chosen above every
--                      voter's floor exceeds every fence a majority including this node committed
--         {0, pttl}    the lock is someone else's on this node for pttl more ms

local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[1] then
  local wait = tonumber(ARGV[3])
  if wait > 0 then
    local now_ms = math.floor(now_us / 1000)
    redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now_ms)
    redis.call('ZADD', KEYS[3], now_ms + wait, ARGV[1])
    if redis.call('PTTL', KEYS[3]) < wait then redis.call('PEXPIRE', KEYS[3], wait) end
  end
  return {0, redis.call('PTTL', KEYS[1])}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
return {1, math.max(last + 1, now_us)}

-- quorum-vote.lua: one node's vote for a grant of a lock kept on a quorum of independent masters
-- (Redlock; lib/store/quorum-store.ts). The node takes the lock for the caller if it is free here, or
-- already the caller's (a repeated vote: the hold is renewed to the full ttl; a hand-off from
-- quorum-release.lua keeps the claim window it announced, which a failed attempt does not give back,
-- until a commit renews it), and says the lowest fence it could issue next. A caller that will wait is
-- put in line here: the line is ordered by the caller's arrival time, which the caller sends the same
-- to every node, so that the nodes agree on who is next without talking to each other.
-- KEYS[1] owner "<prefix>{<key>}", KEYS[2] fence "<prefix>{<key>}:fence",
-- KEYS[3] waiters "<prefix>{<key>}:w" (scored by when each entry expires, ms),
-- KEYS[4] line "<prefix>{<key>}:l" (scored by arrival), KEYS[5] the caller a release here last handed
-- the lock to "<prefix>{<key>}:h" (quorum-release.lua)
-- ARGV[1] token, ARGV[2] ttl ms, ARGV[3] how long a waiter stays in line (0: a try, not put in line), ms,
-- ARGV[4] arrival: when the caller started waiting (its clock, ms; only compared with other callers')
-- Returns {1, floor, now}   voted: the caller holds the lock on this node for ttl; floor = max(last
--                      fence committed here + 1, this server's clock in µs), so a fence chosen above
--                      every voter's floor exceeds every fence a majority including this node committed
--         {0, pttl, owner, first, now}  the lock is `owner`'s on this node for pttl more ms; first = 1
--                      when the caller is first in line here
-- `now` is this server's clock in µs: the caller bounds the offset between its clock and this node's
-- with it, to date a hand-off this node announces later (quorum-release.lua).

local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[1] then
  local wait = tonumber(ARGV[3])
  local first = 0
  if wait > 0 then
    local now_ms = math.floor(now_us / 1000)
    redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now_ms)
    redis.call('ZADD', KEYS[3], now_ms + wait, ARGV[1])
    -- NX: a waiter keeps its place when it asks again.
    redis.call('ZADD', KEYS[4], 'NX', ARGV[4], ARGV[1])
    for _, k in ipairs({KEYS[3], KEYS[4]}) do
      if redis.call('PTTL', k) < wait then redis.call('PEXPIRE', k, wait) end
    end
    if redis.call('ZRANK', KEYS[4], ARGV[1]) == 0 then first = 1 end
  end
  return {0, redis.call('PTTL', KEYS[1]), current, first, now_us}
end
if current ~= ARGV[1] or redis.call('GET', KEYS[5]) ~= ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
return {1, math.max(last + 1, now_us), now_us}

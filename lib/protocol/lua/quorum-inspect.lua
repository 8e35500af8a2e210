-- quorum-inspect.lua: one node's view of a lock kept on a quorum, read in one step.
-- KEYS[1] owner, KEYS[2] fence, KEYS[3] waiters
-- Returns {owner token or false, owner pttl ms (-2 when free), waiters recorded and not expired, last fence or 0,
--          this server's clock in ms}

local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return {
  redis.call('GET', KEYS[1]),
  redis.call('PTTL', KEYS[1]),
  redis.call('ZCOUNT', KEYS[3], '(' .. now_ms, '+inf'),
  tonumber(redis.call('GET', KEYS[2]) or '0'),
  now_ms,
}

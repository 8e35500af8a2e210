-- quorum-release.lua: the caller gives the lock up on one node. When it leaves (its lease ended, or it
-- stopped waiting) and held the lock here, the node hands the lock to the first caller in its line
-- whose service still listens: it holds the lock here for that caller's claim window, takes it out of
-- line, and tells it, with the next fence (the releaser's fence + 1, or this node's last + 1 if higher,
-- recorded here at once) and this server's clock. The nodes order their lines alike (by the arrival
-- each caller sent) and know the same releaser's fence, so a majority hands the lock to the same caller
-- with the same fence: that fence is already recorded on a majority, and the caller may start at once,
-- for the claim window counted from the earliest these nodes can have handed it over; it then confirms
-- with a renewal. Callers that cannot, commit it (quorum-commit.lua) or vote again. After a failed attempt (the
-- caller still waits) the node is only freed: handing it on would only start another attempt that
-- fails while someone else holds a majority. But not a hold this node handed the caller: the caller
-- may already count that hand-off towards a majority (its message can reach it after the attempt
-- that failed started), so the node keeps it for the hand-off's claim window, as it announced.
-- KEYS[1] owner, KEYS[2] waiters, KEYS[3] line, KEYS[4] fence, KEYS[5] the caller last handed the lock
-- here, for its claim window
-- ARGV[1] token, ARGV[2] wake channel prefix (a waiter of service I is told on prefix .. I),
-- ARGV[3] "1" when the caller leaves, "0" after a failed attempt (it waits on),
-- ARGV[4] the caller's fence (0 if it held no lease), ARGV[5] how long a fence is kept, ms
-- Returns 1 if the caller held the lock on this node, else 0.

local leaving = ARGV[3] == '1'
if leaving then
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if not leaving and redis.call('GET', KEYS[5]) == ARGV[1] then return 1 end
redis.call('DEL', KEYS[1])
if not leaving then return 1 end
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now_ms = math.floor(now_us / 1000)
-- Callers that gave up without being able to say so, or whose service is gone, are dropped on the way
-- (a bounded number per release, so a long line of the dead costs a few releases, never a stall).
for _ = 1, 16 do
  local head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
  if not head then return 1 end
  local expires = tonumber(redis.call('ZSCORE', KEYS[2], head) or '0')
  local channel = ARGV[2] .. string.match(head, '^(.-):')
  if expires > now_ms and redis.call('PUBSUB', 'NUMSUB', channel)[2] > 0 then
    local claim = tonumber(string.match(head, '~(%d+)$')) or 1000
    redis.call('SET', KEYS[1], head, 'PX', claim)
    redis.call('SET', KEYS[5], head, 'PX', claim)
    redis.call('ZREM', KEYS[3], head)
    redis.call('ZREM', KEYS[2], head)
    local fence = math.max(tonumber(redis.call('GET', KEYS[4]) or '0'), tonumber(ARGV[4])) + 1
    redis.call('SET', KEYS[4], string.format('%d', fence), 'PX', ARGV[5])
    redis.call('PUBLISH', channel, head .. ' ' .. string.format('%d', fence) .. ' ' .. string.format('%d', now_us))
    return 1
  end
  redis.call('ZREM', KEYS[3], head)
  redis.call('ZREM', KEYS[2], head)
end
return 1

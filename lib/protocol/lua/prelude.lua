-- prelude.lua: the arguments and the fencing token, prepended to every script that can change the
-- lock's owner. The hand-off helpers (common.lua) are spliced in where a script writes `-- @common`,
-- after its fast path: an uncontended acquire or release never defines them, which keeps those two
-- calls as cheap for Redis as the work they do.
--
-- KEYS (same for every lock script)
--   KEYS[1] owner  "<prefix>{<key>}"          the holder's token, with a server-side PX expiry
--   KEYS[2] queue  "<prefix>{<key>}:q"        FIFO list of waiting tokens
--   KEYS[3] fence  "<prefix>{<key>}:fence"    highest fencing token handed out for this lock
-- ARGV (same first six for every lock script)
--   ARGV[1] token            the caller's token, "<instance>:<n>~<claim window ms>"
--   ARGV[2] ttl              lease time to live, ms
--   ARGV[3] claim window     the caller's claim window, ms: for a waiter's token that does not carry one
--   ARGV[4] channel prefix   waiter tokens of instance I are woken on channel prefix .. I
--   ARGV[5] trust receivers  "1" when PUBLISH's receiver count is reliable (one server, not Cluster)
--   ARGV[6] fence retention  how long the fence counter outlives the last grant, ms

local owner_key, queue_key, fence_key = KEYS[1], KEYS[2], KEYS[3]
local token = ARGV[1]
local ttl = tonumber(ARGV[2])
local claim_window = tonumber(ARGV[3])
local channel_prefix = ARGV[4]
local trust_receivers = ARGV[5] == '1'
local fence_retention = tonumber(ARGV[6])

-- Server clock in microseconds. Only ever compared with other server readings, never with a client's.
local function server_time_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- Hands out the next fencing token and records it, in one call in the usual case. Tokens must exceed
-- every earlier token of this lock even after the counter expired or Redis restarted without
-- persistence, so a token is at least the server clock in microseconds (and above the last one).
-- `count` n > 1 also sets aside the n - 1 tokens after it, for the waiters next in line that their own
-- service will hand the lock on to without asking Redis first (common.lua): the counter records the last.
local function next_fence(now_us, count)
  local extra = (count or 1) - 1
  local retention = math.max(fence_retention, ttl)
  local last = tonumber(redis.call('SET', fence_key, string.format('%.0f', now_us + extra), 'PX', retention, 'GET') or '0')
  if last < now_us then return now_us end
  -- More than one grant in one microsecond, or the clock stepped back: count on from the last token.
  local fence = last + 1
  redis.call('SET', fence_key, string.format('%.0f', fence + extra), 'PX', retention)
  return fence
end

-- The service part of a token ("<instance>:..."): whose wake channel reaches it.
local function instance_of(t)
  return string.match(t, '^(.-):')
end

local function channel_of(waiter)
  return channel_prefix .. instance_of(waiter)
end

-- A service may queue a waiter before its wake subscription is live, so that the line keeps the order
-- its calls came in (docs/protocol.md, "The first wait"). Its join then sets a key named after its wake
-- channel, for `ms` (a claim window): while that key exists, a push that reached nobody does not mean
-- the service is gone. The key counts such pushes; the service reads it once it listens and has its
-- waiters re-check if any was missed.
local function listening_later(ms)
  local mark = channel_of(token)
  if not redis.call('SET', mark, 0, 'PX', ms, 'NX') then redis.call('PEXPIRE', mark, ms) end
end

-- Whether `waiter` heard (or will hear) a push that reached `receivers` subscribers. Only one server's
-- count is trusted: on a Cluster, PUBLISH counts the receivers of the node that ran the script.
local function heard(waiter, receivers)
  if receivers > 0 or not trust_receivers then return true end
  local mark = channel_of(waiter)
  if redis.call('EXISTS', mark) == 0 then return false end
  redis.call('INCR', mark)
  return true
end

-- Whether `waiter`'s service listens on its wake channel, or will (see listening_later).
local function listens(waiter)
  if not trust_receivers then return true end
  local channel = channel_of(waiter)
  return redis.call('PUBSUB', 'NUMSUB', channel)[2] > 0 or redis.call('EXISTS', channel) == 1
end

-- How long a grant to `waiter` stays reserved until it confirms. A waiter's token ends in "~<ms>": the
-- smaller of its service's claim window and its own ttl, the figure its validity is counted from, so
-- a short lease never leaves the queue stalled for longer than the lease itself. A token without one
-- gets the caller's window.
local function claim_of(waiter)
  return tonumber(string.match(waiter, '~(%d+)$')) or claim_window
end

-- The pace a key's line moves at, ms per place, left ("<owner>:p") by a service that has seen it move,
-- for services that have not: a new instance protects its callers from its first join (join_door). Kept
-- 10 s and not replaced meanwhile, and offered by a service with one join every 2 s at most, so it costs
-- a busy line one write per 10 s and a command per service every 2 s; a stale pace only sets a door a
-- little off, never a wrong grant.
local pace_key = owner_key .. ':p'
local PACE_TTL = 10000

-- The door of a "join" (ARGV[11..13] of acquire.lua and semaphore-acquire.lua): `places` as its service
-- set it; or, from a service that has not seen the line move, as many as its wait (`cold_wait`, ms) could
-- see through at the pace left here, with that pace (a string, as stored) to tell it. A service that knows
-- the pace offers it (`pace`), left if none is.
local function join_door(places, cold_wait, pace)
  if pace and pace ~= '' then redis.call('SET', pace_key, pace, 'PX', PACE_TTL, 'NX') end
  if places or not cold_wait then return places, nil end
  local left = redis.call('GET', pace_key)
  local per_place = tonumber(left)
  if not per_place or per_place <= 0 then return nil, nil end
  return math.max(1, math.floor(cold_wait / per_place)), left
end

-- How a grant to `waiter` is pushed: a "G" when a call of the waiter's own service makes it (that
-- service is running: it sends this call), else a "g". Either lasts the waiter's claim window until it
-- confirms.
local function push_kind(waiter)
  if instance_of(waiter) == instance_of(token) then return 'G ' end
  return 'g '
end

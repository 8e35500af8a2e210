-- common.lua: shared by every script that can change the lock's owner. It is prepended to each such
-- script at load time, so each script below still runs as one atomic EVALSHA.
--
-- KEYS (same for every lock script)
--   KEYS[1] owner  "<prefix>{<key>}"          the holder's token, with a server-side PX expiry
--   KEYS[2] queue  "<prefix>{<key>}:q"        FIFO list of waiting tokens
--   KEYS[3] fence  "<prefix>{<key>}:fence"    highest fencing token handed out for this lock
-- ARGV (same first six for every lock script)
--   ARGV[1] token            the caller's token, "<instance>:<n>"
--   ARGV[2] ttl              lease time to live, ms
--   ARGV[3] claim window     how long a grant waits for its waiter to confirm, ms
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
local function next_fence(now_us)
  local retention = math.max(fence_retention, ttl)
  local last = tonumber(redis.call('SET', fence_key, string.format('%.0f', now_us), 'PX', retention, 'GET') or '0')
  if last < now_us then return now_us end
  -- More than one grant in one microsecond, or the clock stepped back: count on from the last token.
  local fence = last + 1
  redis.call('SET', fence_key, string.format('%.0f', fence), 'PX', retention)
  return fence
end

local function channel_of(waiter)
  return channel_prefix .. string.match(waiter, '^(.-):')
end

-- Tell the waiter now at the head of the queue how long the current owner's hold lasts, so that it
-- (and only it) re-checks when that hold runs out: a grant nobody confirms then costs one claim window.
-- On one server a head whose process no longer listens is dropped at once: it can never confirm.
local function notify_head(hold_ms)
  while true do
    local head = redis.call('LINDEX', queue_key, 0)
    if not head then return end
    local receivers = redis.call('PUBLISH', channel_of(head), 'h ' .. head .. ' ' .. hold_ms)
    if receivers > 0 or not trust_receivers then return end
    redis.call('LPOP', queue_key)
  end
end

-- Hands the (free) lock to the first live waiter. If that is the caller itself it takes the lock with
-- its full ttl; anyone else gets a grant that lasts one claim window until it confirms (extend.lua).
-- The owner key is overwritten, never deleted first: a caller giving the lock up deletes it only when
-- nobody took it. Returns the fence granted to the caller, or false and whether another waiter got it.
local function hand_off(caller)
  local now_us
  while true do
    local head = redis.call('LPOP', queue_key)
    if not head then return false, false end
    -- Read the clock only once someone is queued: an uncontended release needs no TIME call.
    now_us = now_us or server_time_us()
    -- A token handed to a waiter that turns out to be gone is simply skipped: tokens only need to grow.
    local fence = next_fence(now_us)
    if head == caller then
      redis.call('SET', owner_key, head, 'PX', ttl)
      notify_head(ttl)
      return fence, false
    end
    local grant = 'g ' .. head .. ' ' .. string.format('%.0f', fence) .. ' ' .. string.format('%.0f', now_us)
    local receivers = redis.call('PUBLISH', channel_of(head), grant)
    if receivers > 0 or not trust_receivers then
      redis.call('SET', owner_key, head, 'PX', claim_window)
      notify_head(claim_window)
      return false, true
    end
    -- Nobody listens for this waiter any more (its process is gone): skip it rather than stall.
  end
end

-- The owner (or a waiter a grant made owner) gives the lock up: the next live waiter gets it, else the
-- owner key goes.
local function give_up()
  local _, granted = hand_off(nil)
  if not granted then redis.call('DEL', owner_key) end
end

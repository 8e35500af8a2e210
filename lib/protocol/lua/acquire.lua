-- acquire.lua: take the lock, or join its queue, or confirm a grant. Idempotent per token, so a waiter
-- calls it again to re-check after a wake-up, a timeout of its fallback timer, or a reconnect.
-- KEYS/ARGV[1..6]: see prelude.lua
--   ARGV[7] mode       "try": never queue; "join": a waiter's first call, joins the queue if the lock is
--                      not free; "wait": a waiter's later call (re-check, confirm), joins if not yet queued
--   ARGV[8] queue ttl  the queue outlives its newest waiter by this much, ms
-- Returns {1, fence, server_us}                          the caller holds the lock for ttl
--         {0, owner_pttl, server_us, is_head}           the caller waits (or, for "try", gave up)

local mode = ARGV[7]
local queue_ttl = tonumber(ARGV[8])
local now_us = server_time_us()

-- The usual case: nobody queued and the key free. SET NX checks and takes it in one call.
local queued = redis.call('LLEN', queue_key)
if queued == 0 and redis.call('SET', owner_key, token, 'NX', 'PX', ttl) then
  return {1, next_fence(now_us), now_us}
end

-- @common

-- PEXPIRE's GT option (Redis 7) keeps a longer expiry in one call; Redis 6.2 needs PTTL first.
local has_expire_gt = (redis.REDIS_VERSION_NUM or 0) >= 0x070000

-- Queues the caller; `absent` when it cannot be queued already. Returns its position (1 = head).
local function join_queue(absent)
  if not absent then
    local at = redis.call('LPOS', queue_key, token)
    if at then return at + 1 end
  end
  local length = redis.call('RPUSH', queue_key, token)
  if length == 1 then
    redis.call('PEXPIRE', queue_key, queue_ttl)
  elseif has_expire_gt then
    redis.call('PEXPIRE', queue_key, queue_ttl, 'GT')
  elseif redis.call('PTTL', queue_key) < queue_ttl then
    redis.call('PEXPIRE', queue_key, queue_ttl)
  end
  return length
end

local function waiting(position)
  local is_head = position == 1 and 1 or 0
  return {0, redis.call('PTTL', owner_key), now_us, is_head}
end

local function head_position()
  return redis.call('LINDEX', queue_key, 0) == token and 1 or 0
end

if mode ~= 'wait' then
  -- A first call ("try" or "join") brings a token Redis has never seen: it is neither the owner nor
  -- queued. SET NX failing on an empty queue already says somebody holds the lock.
  if queued == 0 or redis.call('EXISTS', owner_key) == 1 then
    if mode == 'try' then return waiting(0) end
    return waiting(join_queue(true))
  end
  -- Free, but others queued first (their grant expired or their holder died): FIFO, so the head goes
  -- first. A joining caller queues before the hand-off, so it is served if everyone ahead is gone.
  if mode == 'join' then join_queue(true) end
  local fence = hand_off(token)
  if fence then return {1, fence, now_us} end
  if mode == 'try' then return waiting(0) end
  return waiting(head_position())
end

local current = redis.call('GET', owner_key)
if current == token then
  -- A grant reached us (or we already hold it): confirm with the full ttl.
  redis.call('PEXPIRE', owner_key, ttl)
  return {1, tonumber(redis.call('GET', fence_key) or '0'), now_us}
end

if not current then
  -- Free, but others queued first (see above).
  join_queue(false)
  local fence = hand_off(token)
  if fence then return {1, fence, now_us} end
end

return waiting(join_queue(false))

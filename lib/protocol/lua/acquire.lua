-- acquire.lua: take the lock, or join its queue, or confirm a grant. Idempotent per token, so a waiter
-- calls it again to re-check after a wake-up, a timeout of its fallback timer, or a reconnect.
-- KEYS/ARGV[1..6]: see common.lua
--   ARGV[7] mode       "try": never queue; "wait": join the queue (once) if the lock is not free
--   ARGV[8] queue ttl  the queue outlives its newest waiter by this much, ms
-- Returns {1, fence, server_us}                          the caller holds the lock for ttl
--         {0, owner_pttl, server_us, is_head}           the caller waits (or, for "try", gave up)

local mode = ARGV[7]
local queue_ttl = tonumber(ARGV[8])
local now_us = server_time_us()

-- The usual case: nobody queued and the key free. SET NX checks and takes it in one call.
if redis.call('LLEN', queue_key) == 0 and redis.call('SET', owner_key, token, 'NX', 'PX', ttl) then
  return {1, next_fence(now_us), now_us}
end

local current = redis.call('GET', owner_key)
if current == token then
  -- A grant reached us (or we already hold it): confirm with the full ttl.
  redis.call('PEXPIRE', owner_key, ttl)
  return {1, tonumber(redis.call('GET', fence_key) or '0'), now_us}
end

local function join_queue()
  if not redis.call('LPOS', queue_key, token) then
    redis.call('RPUSH', queue_key, token)
  end
  if redis.call('PTTL', queue_key) < queue_ttl then
    redis.call('PEXPIRE', queue_key, queue_ttl)
  end
end

if not current then
  -- Free, but others queued first (their grant expired or their holder died): FIFO, so the head goes
  -- first. A waiting caller joins before the hand-off, so it is served if everyone ahead is gone.
  if mode == 'wait' then join_queue() end
  local fence = hand_off(token)
  if fence then return {1, fence, now_us} end
end

if mode == 'wait' then join_queue() end
local is_head = redis.call('LINDEX', queue_key, 0) == token and 1 or 0
return {0, redis.call('PTTL', owner_key), now_us, is_head}

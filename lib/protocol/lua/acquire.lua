-- acquire.lua: take the lock, or join its queue, or confirm a grant. Idempotent per token, so a waiter
-- calls it again to re-check after a wake-up, a timeout of its fallback timer, or a reconnect.
-- KEYS/ARGV[1..6]: see prelude.lua
--   ARGV[7] mode       "try": never queue; "join": a waiter's first call, joins the queue if the lock is
--                      not free; "wait": a waiter's later call (re-check, confirm), joins if not yet queued;
--                      "late": a "wait" from a waiter that was granted the lock but learnt of it too late
--                      to start on it (its process was stalled): it goes back to the front of the line,
--                      the place it was granted from, rather than the back
--   ARGV[8] queue ttl  the queue outlives its newest waiter by this much, ms
--   ARGV[9] reserved   the caller's reservation on this key (reserve.lua), or "": a "wait" call that
--                      finds it claims it, taking its place in line instead of joining at the back
--   ARGV[10] listening later  for a "join" from a service whose wake subscription is not live yet: how
--                      long its place is kept though pushes reach nobody, ms (prelude.lua, listening_later)
--                      ("" for none)
--   ARGV[11] door      for a "join": the most that may be in line before it; with that many or more the
--                      caller is turned away, unqueued (its service's estimate of the line it could wait
--                      through; the newest is refused at the door, the line is never reordered) ("": none)
--   ARGV[12] cold wait for a "join" from a service that has not seen the line move: its wait, ms; the
--                      door is then set by the pace left here (prelude.lua, join_door) ("": none)
--   ARGV[13] pace      for a "join" from a service that has: the line's ms per place, left for others
-- Returns {1, fence, server_us}                          the caller holds the lock for ttl
--         {0, owner_pttl, server_us, is_head}           the caller waits (or, for "try", gave up)
--         {0, owner_pttl, server_us, is_head, place, 0, pace}   a "join" that joined: its place in line
--                                                       (1: first), and the pace a cold door was set by
--         {0, owner_pttl, server_us, 0, in_line, 1, pace}   a "join" turned away at the door, not queued

local mode = ARGV[7]
local late = mode == 'late'
if late then mode = 'wait' end
local queue_ttl = tonumber(ARGV[8])
local listen_later = tonumber(ARGV[10])
local now_us = server_time_us()

-- A first call that ran before, its reply lost on a connection that dropped, which the client sent again
-- on a new one (ioredis does after a reconnect), finds the lock held under its own token. It holds it:
-- it says so again, with its full ttl. That write is also what makes a WAIT behind this call cover the
-- grant: from Redis 7.2 a WAIT counts only the writes of its own connection, and this one wrote nothing.
local function granted_again()
  redis.call('PEXPIRE', owner_key, ttl)
  return {1, tonumber(redis.call('GET', fence_key) or '0'), now_us}
end

-- SET NX checks and takes a free key in one call. On Redis 7 it also GETs, at no extra cost: a
-- semaphore's hash at this key (semaphore.lua) then answers with an error instead of being queued
-- behind, so one key is never used as both kinds of lock. Returns nil when it took the key, else the
-- owner it found (Redis 6.2: true, the owner unread), or Redis' error.
local function take_if_free()
  if not redis_7 then return not redis.call('SET', owner_key, token, 'NX', 'PX', ttl) or nil end
  local previous = redis.pcall('SET', owner_key, token, 'NX', 'PX', ttl, 'GET')
  if type(previous) == 'table' and previous.err then
    -- Anything but a wrong type (OOM on a full server) is Redis' own refusal: pass it on as it is.
    if string.sub(previous.err, 1, 9) ~= 'WRONGTYPE' then return previous end
    local permits = redis.pcall('HGET', owner_key, '#')
    if type(permits) == 'string' then return redis.error_reply('LOCKKIND ' .. permits .. ' 1') end
    return redis.error_reply('WRONGTYPE the lock key ' .. owner_key .. ' holds a ' ..
      redis.call('TYPE', owner_key)['ok'] .. ', not a lock')
  end
  return previous
end

-- `queued`: the line's length, read only where it decides something. A first call on Redis 7 tries the
-- key before reading the line: the owner SET NX GET returns is all a call that finds the key held needs
-- (itself: sent again; another: it queues, and its RPUSH counts the line), so a contended join reads
-- neither the line's length nor the owner again. Taken while others are queued (their grant ran out, or
-- their holder died), it is given back at once (`freed`): FIFO, the line is served below, in the same
-- script, so nobody saw it taken. A later call ("wait"), and any on Redis 6.2, reads the line first.
local queued, freed
if mode == 'wait' or not redis_7 then queued = redis.call('LLEN', queue_key) end
if queued == nil or queued == 0 then
  local previous = take_if_free()
  if type(previous) == 'table' then return previous end
  if previous == token and mode ~= 'wait' then return granted_again() end
  if not previous then
    queued = queued or redis.call('LLEN', queue_key)
    if queued == 0 then return {1, next_fence(now_us), now_us} end
    redis.call('DEL', owner_key)
    freed = true
  end
end

if mode ~= 'wait' then
  -- A first call ("try" or "join") brings a token Redis has never seen (unless sent again, below). The
  -- key is held (SET NX failed: PTTL is what the reply carries), or free with others in line (-2).
  local owner_ttl = freed and -2 or redis.call('PTTL', owner_key)
  -- A lock key always expires; one without an expiry that is not a string was written by something
  -- else, and no wait would ever end: say so now, before queueing.
  if owner_ttl == -1 then
    local kind = redis.call('TYPE', owner_key)['ok']
    if kind ~= 'string' then
      return redis.error_reply('WRONGTYPE the lock key ' .. owner_key .. ' holds a ' .. kind .. ', not a lock')
    end
  end
  if owner_ttl ~= -2 then
    -- Sent again (see granted_again) after a hand-off made it the owner: Redis 7's SET NX GET said so
    -- above; Redis 6.2 reads the owner.
    if not redis_7 and queued > 0 and owner_ttl > 0 and redis.call('GET', owner_key) == token then
      return granted_again()
    end
    local at = mode == 'join' and queued ~= 0 and queued_before(token)
    if at then return {0, owner_ttl, now_us, at == 0 and 1 or 0} end
    if mode == 'try' then return {0, owner_ttl, now_us, 0} end
    local door, told = join_door(tonumber(ARGV[11]), tonumber(ARGV[12]), ARGV[13])
    -- The reply of RPUSH says how many are ahead: past the door, the caller is taken off the tail again
    -- (the script is atomic: the tail is its own entry) and turned away. Nobody ahead: it is first
    -- (unless only reservations are: it then learns it from the next hand-off's head note, or at its
    -- fallback re-check a claim window after the hold; reading the line to tell would cost every join a
    -- command).
    local length = redis.call('RPUSH', queue_key, token)
    if door and length > door then
      redis.call('RPOP', queue_key)
      return {0, owner_ttl, now_us, 0, length - 1, 1, told}
    end
    expire_queue(length, queue_ttl)
    if listen_later then listening_later(listen_later) end
    return {0, owner_ttl, now_us, length == 1 and 1 or 0, length, 0, told}
  end
end

local current = mode == 'wait' and redis.call('GET', owner_key)
if current == token then
  -- A grant reached us (or we already hold it): confirm with the full ttl.
  redis.call('PEXPIRE', owner_key, ttl)
  return {1, tonumber(redis.call('GET', fence_key) or '0'), now_us}
end

-- What is left hands the lock on: a free lock with others in line, or a waiter's re-check.
-- @common

local reserved = ARGV[9] or ''

-- Queues the caller; `absent` when it cannot be queued already. Returns the queue's length when the
-- caller was appended, else 0.
local function join_queue(absent)
  if not absent then
    if redis.call('LPOS', queue_key, token) then
      -- Already back in line (a re-check ran before the late grant was read): move it to the front.
      if late and redis.call('LINDEX', queue_key, 0) ~= token then
        redis.call('LREM', queue_key, 1, token)
        redis.call('LPUSH', queue_key, token)
      end
      return 0
    end
    if reserved ~= '' then
      local at = redis.call('LPOS', queue_key, reserved)
      if at then
        redis.call('LSET', queue_key, at, token)
        return 0
      end
    end
  end
  return push_entry(token, queue_ttl, late)
end

-- `queued`: whether the caller is in line. The reply says if it is first (reservations passed over).
local function waiting(queued)
  local is_head = queued and first_active() == token and 1 or 0
  return {0, redis.call('PTTL', owner_key), now_us, is_head}
end

-- Nobody could use the free lock (only reservations in line, or waiters that are gone): the caller takes it.
local function take()
  redis.call('SET', owner_key, token, 'PX', ttl)
  return {1, next_fence(now_us), now_us}
end

if mode ~= 'wait' then
  -- Free, but others queued first (their grant expired or their holder died): FIFO, so the first waiter
  -- goes first. A joining caller queues before the hand-off, so it is served if everyone ahead is gone;
  -- unless it is in line already: a join sent again after its reply was lost with its connection
  -- (queue.lua), which would otherwise hold two places.
  if mode == 'join' and not queued_before(token) then join_queue(true) end
  local fence, other = hand_off(token)
  if fence then return {1, fence, now_us} end
  if other then
    if mode == 'join' and listen_later then listening_later(listen_later) end
    return waiting(mode == 'join')
  end
  return take()
end

join_queue(false)
if not current then
  -- Free, but others queued first (see above).
  local fence, other = hand_off(token)
  if fence then return {1, fence, now_us} end
  if not other then return take() end
end
return waiting(true)

-- common.lua: the hand-off, shared by every script that can change the lock's owner. Spliced in where
-- the script writes `-- @common`, after prelude.lua, so each script still runs as one atomic EVALSHA.

local function channel_of(waiter)
  return channel_prefix .. string.match(waiter, '^(.-):')
end

-- How long a grant to `waiter` stays reserved until it confirms. A waiter's token ends in "~<ms>": the
-- smaller of its service's claim window and its own ttl, the figure its validity is counted from, so
-- a short lease never leaves the queue stalled for longer than the lease itself. A token without one
-- gets the caller's window.
local function claim_of(waiter)
  return tonumber(string.match(waiter, '~(%d+)$')) or claim_window
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

-- Hands the (free) lock to the first live waiter; `head` is that waiter when the caller already popped
-- it. If that is the caller itself it takes the lock with its full ttl; anyone else gets a grant that
-- lasts its own claim window until it confirms (extend.lua). The owner key is overwritten, never deleted
-- first: a caller giving the lock up deletes it only when nobody took it. Returns the fence granted to
-- the caller, or false and whether another waiter got it.
local function hand_off(caller, head)
  local now_us
  while true do
    head = head or redis.call('LPOP', queue_key)
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
      local window = claim_of(head)
      redis.call('SET', owner_key, head, 'PX', window)
      notify_head(window)
      return false, true
    end
    -- Nobody listens for this waiter any more (its process is gone): skip it rather than stall.
    head = nil
  end
end

-- The owner (or a waiter a grant made owner) gives the lock up: the next live waiter gets it, else the
-- owner key goes. `head`: the first waiter, if the caller already popped it.
local function give_up(head)
  local _, granted = hand_off(nil, head)
  if not granted then redis.call('DEL', owner_key) end
end

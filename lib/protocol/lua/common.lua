-- common.lua: the hand-off, shared by every script that can change the lock's owner. Spliced in where
-- the script writes `-- @common`, after prelude.lua, so each script still runs as one atomic EVALSHA.

-- A reservation, "^<expires ms>^<token>", keeps a place in line for a multi-key call that does not hold
-- this key's predecessors yet (reserve.lua): it is passed over, keeping its place, until its caller
-- claims it (acquire.lua), and it is never granted.
local function is_reservation(entry)
  return string.byte(entry, 1) == 94
end

-- Whether a reservation expired or its process no longer listens (on one server): a caller that died
-- while waiting for its other keys leaves its reservations behind.
local function reservation_gone(entry, now_us)
  local expires, owner = string.match(entry, '^%^(%d+)%^(.*)$')
  if not expires or tonumber(expires) * 1000 <= now_us then return true end
  return not listens(owner)
end

-- The first waiter in line (reservations passed over, keeping their places) and its index, or nil:
-- one LINDEX when it is the first, the usual case; past it, read 16 at a time (what is passed over is
-- few: one reservation per waiting multi-key call and later key). Given the time, it first drops the
-- reservations at the front that are gone (before each hand-off, so a dead one costs a command or two
-- until it reaches the front, never a stall).
local function first_active(now_us)
  local head = redis.call('LINDEX', queue_key, 0)
  while now_us and head and is_reservation(head) and reservation_gone(head, now_us) do
    redis.call('LPOP', queue_key)
    head = redis.call('LINDEX', queue_key, 0)
  end
  if not head or not is_reservation(head) then return head, 0 end
  local from = 1
  while true do
    local chunk = redis.call('LRANGE', queue_key, from, from + 15)
    for i, entry in ipairs(chunk) do
      if not is_reservation(entry) then return entry, from + i - 1 end
    end
    if #chunk < 16 then return nil end
    from = from + 16
  end
end

-- Takes `entry`, found at index `at`, out of the queue.
local function remove_at(entry, at)
  if at == 0 then
    redis.call('LPOP', queue_key)
  else
    redis.call('LREM', queue_key, 1, entry)
  end
end

-- Tell the waiter now first in line how long the current owner's hold lasts, so that it (and only it)
-- re-checks when that hold runs out: a grant nobody confirms then costs one claim window.
-- On one server a waiter whose process no longer listens is dropped at once: it can never confirm.
-- `head`, `at`: that waiter and its index, when the caller already looked them up.
local function notify_head(hold_ms, head, at)
  if at == nil then head, at = first_active() end
  while head do
    local receivers = redis.call('PUBLISH', channel_of(head), 'h ' .. head .. ' ' .. hold_ms)
    if heard(head, receivers) then return end
    remove_at(head, at)
    head, at = first_active()
  end
end

-- How many waiters of one service a grant may name to follow its owner (each with a fence set aside).
local MAX_FOLLOWERS = 8

-- The waiters at the very front of the line after `owner` was granted that are of the same service, in
-- order (at most MAX_FOLLOWERS): that service hands the lock from one to the next itself, without a
-- round trip, and tells Redis only when the last is done (docs/protocol.md, "Local hand-off"). Returns
-- the first waiter in line and its index, then that list (empty when the first is of another service):
-- followers are told nothing here, their service relays the hold to them; anyone else gets the usual
-- head note from the caller.
local function followers_of(owner)
  local front = redis.call('LRANGE', queue_key, 0, MAX_FOLLOWERS - 1)
  local head = front[1]
  local follows = {}
  if not head then return false, 0, follows end
  -- Only from the very front: a reservation ahead could be claimed meanwhile (acquire.lua's LSET), and
  -- its caller would then be first. Nothing else moves the front but the owner's hand-off or a
  -- follower's own cancel, both of which that service sees.
  if is_reservation(head) then
    local active, at = first_active()
    return active, at, follows
  end
  local instance = instance_of(owner)
  for _, entry in ipairs(front) do
    if is_reservation(entry) or instance_of(entry) ~= instance then break end
    follows[#follows + 1] = entry
  end
  return head, 0, follows
end

-- Hands the (free) lock to the first live waiter (reservations passed over); `head` is that waiter when
-- the caller already took it out of the queue. If that is the caller itself it takes the lock with its
-- full ttl; anyone else gets a grant that lasts its claim window until it confirms (extend.lua). The
-- owner key is overwritten, never deleted first: a caller giving the lock up deletes it only when
-- nobody took it. A grant names its followers (followers_of); their fences follow its own, set aside.
-- `in_reply`: the caller's service learns of a grant to one of its own waiters from the reply, so none
-- is published (release.lua). Returns the fence granted to the caller, or false; whether another waiter
-- got it; and, for a grant made in the reply, {waiter, fence, server us, followers joined by spaces or ""}.
local function hand_off(caller, head, in_reply)
  local now_us
  while true do
    if not head then
      now_us = now_us or server_time_us()
      local at
      head, at = first_active(now_us)
      if not head then return false, false end
      remove_at(head, at)
    end
    -- Read the clock only once someone is queued: an uncontended release needs no TIME call.
    now_us = now_us or server_time_us()
    if head == caller then
      -- A token handed to a waiter that turns out to be gone is simply skipped: tokens only need to grow.
      local fence = next_fence(now_us)
      redis.call('SET', owner_key, head, 'PX', ttl)
      notify_head(ttl)
      return fence, false
    end
    local window = claim_of(head)
    local next_head, next_at, follows = followers_of(head)
    local fence = next_fence(now_us, 1 + #follows)
    local after = #follows > 0 and table.concat(follows, ' ') or nil
    if in_reply and instance_of(head) == instance_of(token) then
      -- The releasing service is alive, so its waiter is: no receiver count to check.
      redis.call('SET', owner_key, head, 'PX', window)
      if not after then notify_head(window, next_head, next_at) end
      return false, true, {head, fence, now_us, after or ''}
    end
    local grant = push_kind(head) .. head .. ' ' .. string.format('%.0f', fence) .. ' ' .. string.format('%.0f', now_us)
    if after then grant = grant .. ' ' .. after end
    local receivers = redis.call('PUBLISH', channel_of(head), grant)
    if heard(head, receivers) then
      redis.call('SET', owner_key, head, 'PX', window)
      if not after then notify_head(window, next_head, next_at) end
      return false, true
    end
    -- Nobody listens for this waiter any more (its process is gone): skip it rather than stall.
    head = nil
  end
end

-- The owner (or a waiter a grant made owner) gives the lock up: the next live waiter gets it, else the
-- owner key goes. `head`: the first waiter, if the caller already took it out of the queue; `in_reply`:
-- see hand_off. Returns hand_off's grant made in the reply, if any.
local function give_up(head, in_reply)
  local _, granted, local_grant = hand_off(nil, head, in_reply)
  if not granted then redis.call('DEL', owner_key) end
  return local_grant
end

-- semaphore-acquire.lua: take a permit (a semaphore's, or a read-write lock's share or whole), or join
-- the line, or confirm a grant; idempotent per token, as acquire.lua is for a mutex (the same modes).
-- KEYS/ARGV[1..7]: see semaphore.lua
--   ARGV[8] mode       "try", "join", "wait" or "late" (acquire.lua)
--   ARGV[9] queue ttl  the line outlives its newest waiter by this much, ms
--   ARGV[10] listening later  as acquire.lua's: a "join" from a service not subscribed yet, ms ("": none)
--   ARGV[11] door      as acquire.lua's: a "join" finding this many or more in line is turned away
--   ARGV[12] cold wait, ARGV[13] pace   as acquire.lua's (prelude.lua, join_door)
-- Returns {1, fence, server_us}                       the caller holds a permit for ttl
--         {0, first hold left, server_us, is_head}   the caller waits (or, for "try", gave up)
--         {0, first hold left, server_us, is_head, place, 0, pace}   a "join" that joined: its place
--                                                    (1: first), and the pace a cold door was set by
--         {0, first hold left, server_us, 0, in_line, 1, pace}   a "join" turned away at the door

local refused = kind_refused()
if refused then return refused end
local mode = ARGV[8]
local late = mode == 'late'
if late then mode = 'wait' end
local queue_ttl = tonumber(ARGV[9])
local listen_later = tonumber(ARGV[10])

live_holders()
-- A grant reached us (or we already hold a permit): confirm it with the full ttl. A first call finds its
-- token here only when it ran before, its reply was lost and the client sent it again (acquire.lua): it
-- holds its permit, and the write lets a WAIT behind it on the new connection cover the grant.
-- The set alone counts the holders: a fence left in the hash after the set lost the token (evicted or
-- deleted) is no grant, and the caller takes a permit or waits as anyone would.
local held = redis.call('ZSCORE', holders_key, token) and redis.call('HGET', owner_key, token)
if held then
  hold_for(token, ttl)
  outlive(now_ms + ttl, false)
  return {1, tonumber(held), now_us}
end

-- Nobody in line and a permit free: take it. Otherwise nobody barges: the line is served first.
local queued = redis.call('LLEN', queue_key)
if queued == 0 and fits(token) then
  local fence = next_fence(now_us)
  add_holder(token, ttl, fence)
  return {1, fence, now_us}
end
if mode == 'try' then return {0, first_hold_left(), now_us, 0} end

local length, told = 0, nil
if mode == 'join' then
  -- Unless it is a join sent again after a reconnect, in line already (queue.lua).
  if queued == 0 or not queued_before(token) then
    local door
    door, told = join_door(tonumber(ARGV[11]), tonumber(ARGV[12]), ARGV[13])
    if door and queued >= door then return {0, first_hold_left(), now_us, 0, queued, 1, told} end
    length = push_entry(token, queue_ttl)
  end
elseif not redis.call('LPOS', queue_key, token) then
  -- A late waiter goes back to the front, where it was granted from (acquire.lua).
  length = push_entry(token, queue_ttl, late)
elseif late and redis.call('LINDEX', queue_key, 0) ~= token then
  redis.call('LREM', queue_key, 1, token)
  redis.call('LPUSH', queue_key, token)
end

-- Room with others in line (their grants expired, their holders died): serve in order.
local fence, count = serve(token)
if count > 0 then notify_head() end
if fence then return {1, fence, now_us} end
if mode == 'join' and listen_later then listening_later(listen_later) end
if mode == 'join' and length > 0 then
  return {0, first_hold_left(), now_us, length == 1 and 1 or 0, length, 0, told}
end
-- First in line: the waiter told when the first hold ends.
local is_head = length == 1 or is_told(token)
return {0, first_hold_left(), now_us, is_head and 1 or 0}

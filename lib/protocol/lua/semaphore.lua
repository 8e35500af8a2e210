-- semaphore.lua: a lock that several callers hold at once, served first come first served: a semaphore
-- (up to `permits` holders) or a read-write lock (readers share it, a writer holds it alone), see
-- docs/protocol.md, "Semaphores" and "Read-write locks". Spliced after prelude.lua and queue.lua into
-- every script of both.
--
-- KEYS[1] "<prefix>{<key>}"     hash: "#" the kind (the permits, or "rw"), then each holder's token and
--                               its fence. Its place is the mutex's owner key, so the kinds refuse each other.
-- KEYS[2] "<prefix>{<key>}:sq"  FIFO list of waiting tokens (the semaphore's own line)
-- KEYS[3] "<prefix>{<key>}:fence", as for a mutex: one counter, so fences grow across both kinds
-- KEYS[4] "<prefix>{<key>}:s"   sorted set: each holder's token, scored by when its hold ends (server ms)
-- KEYS[5] "<prefix>{<key>}:q"   the mutex's line, only read: waiters there make the key a mutex
-- ARGV[1..6] as prelude.lua; ARGV[7] the kind: the permits, or "rw" for a read-write lock, whose readers'
-- tokens end in "!~<claim ms>" (lib/store/token.ts)
-- The hash and the sorted set expire with the last hold at the latest: nothing outlives a crashed
-- holder's ttl.

local holders_key, mutex_queue_key = KEYS[4], KEYS[5]
local kind = ARGV[7]
local rw = kind == 'rw'
local permits = tonumber(kind)
local now_us = server_time_us()
local now_ms = math.floor(now_us / 1000)

-- Scores and times are sent as whole numbers: Lua would write a large one as 1.7e+12.
local function ms(value)
  return string.format('%.0f', value)
end

-- One key is one kind of lock: a mutex (a string at KEYS[1], or waiters in its line), a semaphore with
-- one number of permits, or a read-write lock. A mix is refused with an error naming both kinds (a
-- mutex is "1", a read-write lock "rw").
local function kind_refused()
  local stored = redis.pcall('HGET', owner_key, '#')
  local found
  if type(stored) == 'table' then
    local kind = redis.call('TYPE', owner_key)['ok']
    if kind ~= 'string' then
      return redis.error_reply('WRONGTYPE the lock key ' .. owner_key .. ' holds a ' .. kind .. ', not a lock')
    end
    found = '1'
  elseif stored then
    if stored == kind then return nil end
    found = stored
  elseif redis.call('LLEN', mutex_queue_key) > 0 then
    found = '1'
  else
    return nil
  end
  return redis.error_reply('LOCKKIND ' .. found .. ' ' .. kind)
end

-- What the script knows of the holders, read once and kept up to date as it changes them: how many
-- there are, and when the first hold ends (false: nobody holds one; nil: not known, read it again).
-- `first_token` is that first holder's token.
local holder_count, first_end, first_token

local function read_first_end()
  local first = redis.call('ZRANGE', holders_key, 0, 0, 'WITHSCORES')
  first_end = first[2] and tonumber(first[2]) or false
  first_token = first[1]
end

-- Drops the holds that ended (a crashed holder's permit comes back this way, at the end of its ttl,
-- or a granted waiter's that never confirmed, at the end of its claim window). Returns how many are left.
-- A hold scored `ends` lasts through that whole ms, as a key's PEXPIRE does: it began at `now_ms`, the
-- time rounded down, so ending it within the ms it was scored for would cut up to 1 ms off its ttl.
local function live_holders()
  if holder_count then return holder_count end
  read_first_end()
  if first_end and first_end < now_ms then
    local gone = redis.call('ZRANGEBYSCORE', holders_key, '-inf', '(' .. ms(now_ms))
    redis.call('ZREMRANGEBYSCORE', holders_key, '-inf', '(' .. ms(now_ms))
    for i = 1, #gone, 500 do
      redis.call('HDEL', owner_key, unpack(gone, i, math.min(i + 499, #gone)))
    end
    read_first_end()
  end
  holder_count = redis.call('ZCARD', holders_key)
  return holder_count
end

-- ms until the first hold ends (when a permit comes back unless renewed); -2 when nobody holds one.
local function first_hold_left()
  if first_end == nil then read_first_end() end
  if not first_end then return -2 end
  return math.max(first_end + 1 - now_ms, 0)
end

-- Both keys outlive the hold that ends at `ends`: a grant or a renewal pushes their expiry out, never
-- in, so they go with the last hold (or sooner, deleted with the last holder). `fresh`: nobody held a
-- permit before, so the keys have no expiry of their own yet (PEXPIRE GT would keep "none"). `new_hash`:
-- the hash was just created beside holds already in the set (it had been evicted), so it has no expiry
-- either, and takes the last hold's end.
local function outlive(ends, fresh, new_hash)
  local at = ms(ends + 1)
  if fresh then
    redis.call('PEXPIREAT', owner_key, at)
    redis.call('PEXPIREAT', holders_key, at)
  elseif redis_7 and not new_hash then
    redis.call('PEXPIREAT', owner_key, at, 'GT')
    redis.call('PEXPIREAT', holders_key, at, 'GT')
  else
    local last = redis.call('ZRANGE', holders_key, -1, -1, 'WITHSCORES')
    at = ms(tonumber(last[2]) + 1)
    redis.call('PEXPIREAT', owner_key, at)
    redis.call('PEXPIREAT', holders_key, at)
  end
end

-- `holder` holds a permit for `hold` ms from now, under `fence`.
local function add_holder(holder, hold, fence)
  local ends = now_ms + hold
  local fresh = live_holders() == 0
  redis.call('ZADD', holders_key, ms(ends), holder)
  -- Both fields new: the hash did not exist.
  local new_hash = redis.call('HSET', owner_key, '#', kind, holder, ms(fence)) == 2
  outlive(ends, fresh, new_hash and not fresh)
  holder_count = holder_count + 1
  if first_end ~= nil and (not first_end or ends < first_end) then
    first_end = ends
    first_token = holder
  end
end

-- A holder's hold now ends `hold` ms from now (renewed, confirmed, or kept for minHold).
local function hold_for(holder, hold)
  redis.call('ZADD', holders_key, 'XX', ms(now_ms + hold), holder)
  first_end = nil
end

-- Takes `holder` out; returns whether it still held a permit (its hold had not ended).
local function remove_holder(holder)
  live_holders()
  if redis.call('ZREM', holders_key, holder) == 0 then return false end
  redis.call('HDEL', owner_key, holder)
  holder_count = holder_count - 1
  first_end = nil
  return true
end

-- A reader of a read-write lock: its token says so.
local function is_reader(t)
  return string.find(t, '!~%d+$') ~= nil
end

-- Whether `entry` could hold the key now, beside its holders: a semaphore while a permit is free; a
-- read-write lock when nobody holds it, or a reader when readers do (a writer is always alone, so the
-- first holder stands for them all).
local function fits(entry)
  local count = live_holders()
  if not rw then return count < permits end
  if count == 0 then return true end
  if first_end == nil then read_first_end() end
  return is_reader(entry) and is_reader(first_token)
end

-- Whether `entry` is the waiter told when the first hold ends (notify_head): the first in line.
local function is_told(entry)
  return redis.call('LINDEX', queue_key, 0) == entry
end

-- Grants the key to the waiters first in line, in order, while the first of them fits: none is passed
-- over while it could be served, so nobody is overtaken, and a writer in line holds back every reader
-- behind it. One whose process no longer listens (on one server) is skipped.
-- A waiter gets its claim window to confirm (extend); `caller` (when it is in line) its full ttl.
-- Returns the caller's fence if it was served (else false), and how many were granted.
local function serve(caller)
  local mine, granted = false, 0
  while true do
    if rw then
      -- Whether the head fits depends on its mode: look before taking it out of the line.
      local head = redis.call('LINDEX', queue_key, 0)
      if not head or not fits(head) then break end
    elseif not fits(caller) then
      break
    end
    local head = redis.call('LPOP', queue_key)
    if not head then break end
    local fence = next_fence(now_us)
    if head == caller then
      add_holder(head, ttl, fence)
      mine = fence
      granted = granted + 1
    else
      local receivers = redis.call('PUBLISH', channel_of(head), push_kind(head) .. head .. ' ' .. ms(fence) .. ' ' .. ms(now_us))
      if heard(head, receivers) then
        add_holder(head, claim_of(head), fence)
        granted = granted + 1
      end
      -- Otherwise its process is gone: skipped rather than granted.
    end
  end
  return mine, granted
end

-- Tells the first waiter in line when the first hold ends, so that it (and only it) re-checks then;
-- one whose process no longer listens is dropped (one server).
local function notify_head()
  local hold = first_hold_left()
  local target = redis.call('LINDEX', queue_key, 0)
  while target do
    if heard(target, redis.call('PUBLISH', channel_of(target), 'h ' .. target .. ' ' .. hold)) then return end
    redis.call('LPOP', queue_key)
    target = redis.call('LINDEX', queue_key, 0)
  end
end

-- A permit given back (released, cancelled after a grant): the line is served and told; with no
-- holder left the keys go.
local function served_after_leaving()
  local _, granted = serve(nil)
  if granted > 0 then notify_head() end
  if live_holders() == 0 then redis.call('DEL', owner_key, holders_key) end
end

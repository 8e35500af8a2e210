-- queue.lua: joining the line, spliced after prelude.lua into the scripts that append to it (acquire,
-- reserve), before their `-- @common` line: a waiter joining behind a held lock never defines the
-- hand-off helpers.

-- Redis 7: PEXPIRE's GT option keeps a longer expiry in one call (6.2 needs PTTL first), and SET takes
-- NX and GET together (acquire.lua).
local redis_7 = (redis.REDIS_VERSION_NUM or 0) >= 0x070000

-- The queue, `length` long after an entry was added, outlives that entry by at least `queue_ttl` ms.
local function expire_queue(length, queue_ttl)
  if length == 1 then
    redis.call('PEXPIRE', queue_key, queue_ttl)
  elseif redis_7 then
    redis.call('PEXPIRE', queue_key, queue_ttl, 'GT')
  elseif redis.call('PTTL', queue_key) < queue_ttl then
    redis.call('PEXPIRE', queue_key, queue_ttl)
  end
end

-- Appends `entry` to the queue (puts it first with `front`), which then outlives it by at least
-- `queue_ttl` ms. Returns the length.
local function push_entry(entry, queue_ttl, front)
  local length = redis.call(front and 'LPUSH' or 'RPUSH', queue_key, entry)
  expire_queue(length, queue_ttl)
  return length
end

-- A first call the client sent again after a reconnect (its reply lost; ioredis resends) finds itself in
-- line already, put there by its first run: it must not queue twice. Looked for near the back only
-- (`LPOS … RANK -1 MAXLEN`), where it is: few can join behind it while its client reconnects, and a join
-- pays no scan of a long line. Returns the entry's index, or nil.
local function queued_before(entry)
  return redis.call('LPOS', queue_key, entry, 'RANK', -1, 'MAXLEN', 64)
end

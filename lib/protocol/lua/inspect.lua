-- inspect.lua: a consistent snapshot of one lock, mutex or semaphore, read in one step.
-- KEYS[1] owner, KEYS[2] queue, KEYS[3] fence, KEYS[4] a semaphore's holders, KEYS[5] a semaphore's line
-- Returns {owner token or false, owner pttl ms (-2 when free), waiters queued, last fence or 0,
--          reservations queued (entries starting with "^", see reserve.lua), the kind (1 for a mutex, a
--          semaphore's permits, "rw" for a read-write lock),
--          the waiting tokens in line order, for a semaphore its holders: token, ms left, fence, ...,
--          and the server's clock in ms (fences are the server's µs at their grant: how long a hold lasted)}

local fence = tonumber(redis.call('GET', KEYS[3]) or '0')
local kind = redis.call('TYPE', KEYS[1])['ok']
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if kind == 'hash' or (kind == 'none' and redis.call('EXISTS', KEYS[5]) == 1) then
  local holders = {}
  local scored = redis.call('ZRANGE', KEYS[4], 0, -1, 'WITHSCORES')
  for i = 1, #scored, 2 do
    local left = tonumber(scored[i + 1]) - now_ms
    if left > 0 then
      holders[#holders + 1] = scored[i]
      holders[#holders + 1] = left
      holders[#holders + 1] = tonumber(redis.call('HGET', KEYS[1], scored[i]) or '0')
    end
  end
  local line = redis.call('LRANGE', KEYS[5], 0, -1)
  local first_left = holders[2] or -2
  return {holders[1] or false, first_left, #line, fence, 0, redis.call('HGET', KEYS[1], '#') or '0', line,
    holders, now_ms}
end

local entries = redis.call('LRANGE', KEYS[2], 0, -1)
local line = {}
for _, entry in ipairs(entries) do
  if string.byte(entry, 1) ~= 94 then line[#line + 1] = entry end
end
return {
  redis.call('GET', KEYS[1]),
  redis.call('PTTL', KEYS[1]),
  #line,
  fence,
  #entries - #line,
  1,
  line,
  {},
  now_ms,
}

-- inspect.lua: a consistent snapshot of one lock, read in one step.
-- KEYS[1] owner, KEYS[2] queue, KEYS[3] fence
-- Returns {owner token or false, owner pttl ms (-2 when free), waiters queued, last fence or 0,
--          reservations queued (entries starting with "^", see reserve.lua)}

local entries = redis.call('LRANGE', KEYS[2], 0, -1)
local reserved = 0
for _, entry in ipairs(entries) do
  if string.byte(entry, 1) == 94 then reserved = reserved + 1 end
end
return {
  redis.call('GET', KEYS[1]),
  redis.call('PTTL', KEYS[1]),
  #entries - reserved,
  tonumber(redis.call('GET', KEYS[3]) or '0'),
  reserved,
}

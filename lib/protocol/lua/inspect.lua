-- inspect.lua: a consistent snapshot of one lock, read in one step.
-- KEYS[1] owner, KEYS[2] queue, KEYS[3] fence
-- Returns {owner token or false, owner pttl ms (-2 when free), queue length, last fence or 0}

return {
  redis.call('GET', KEYS[1]),
  redis.call('PTTL', KEYS[1]),
  redis.call('LLEN', KEYS[2]),
  tonumber(redis.call('GET', KEYS[3]) or '0'),
}

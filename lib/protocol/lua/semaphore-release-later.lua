-- semaphore-release-later.lua: the holder's work ended before its minHold had passed. It keeps its
-- permit, unrenewed, for the time left; the head of the line re-checks when the first hold ends.
-- KEYS/ARGV[1..7]: see semaphore.lua
--   ARGV[8] hold   ms the permit stays held from now
-- Returns 1 if the caller held a permit, 0 if it did not.

local ends = redis.call('ZSCORE', holders_key, token)
if not ends or tonumber(ends) < now_ms then return 0 end
-- The keys keep their expiry: they outlive this shorter hold, and go with the last one.
hold_for(token, tonumber(ARGV[8]))
notify_head()
return 1

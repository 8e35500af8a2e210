-- release-later.lua: the owner's work ended before its minHold had passed. The lock stays held by the
-- same token, no longer renewed, with a server-side expiry of the time left; nobody else is granted it
-- until then. When the key expires the head of the queue takes it on its re-check, which the hold note
-- below schedules for that moment: the queue is served in order, woken by that push, not by polling.
-- KEYS/ARGV[1..6]: see prelude.lua
--   ARGV[7] hold   ms the lock stays held from now (what is left of minHold, at most the ttl)
-- Returns 1 if the caller held the lock (it now expires in `hold` ms), 0 if it did not.

if redis.call('GET', owner_key) ~= token then return 0 end
local hold = tonumber(ARGV[7])
redis.call('PEXPIRE', owner_key, hold)

-- @common

notify_head(hold)
return 1

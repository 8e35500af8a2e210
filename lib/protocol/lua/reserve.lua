-- reserve.lua: keeps a place in line on a later key of a multi-key call while the call still waits for
-- the keys before it. The reservation is never granted and blocks nobody: whoever hands the lock on
-- passes it over (common.lua), so the call, which will hold this key only after those keys, can never
-- make a caller that holds one of them wait. Once it holds them, its "wait" call on this key
-- (acquire.lua) claims the reservation and is served from that place: it waits behind the callers that
-- reached this key before it did, not behind everyone who came while it waited for the others.
-- KEYS/ARGV[1..6]: see prelude.lua
--   ARGV[7] queue ttl  the reservation (and the queue) last this long unless claimed or cancelled, ms
-- Returns the reservation, "^<expires ms>^<token>": what the caller claims or cancels it by. It hands
-- nothing on, so it has no `-- @common` line: queue.lua is all it needs.

local queue_ttl = tonumber(ARGV[7])
local now_ms = math.floor(server_time_us() / 1000)
local entry = '^' .. string.format('%.0f', now_ms + queue_ttl) .. '^' .. token
push_entry(entry, queue_ttl)
return entry

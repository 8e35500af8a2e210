-- quorum-vote.lua: one node's vote for a grant of a lock kept on a quorum of independent masters
-- (Redlock; lib/store/quorum-store.ts). The node takes the lock for the caller if it is free here (or
-- already the caller's: a repeated vote renews it), and says the lowest fence it could issue next.
-- KEYS[1] owner "<prefix>{<key>}", KEYS[2] fence "<prefix>{<key>}:fence"
-- ARGV[1] token, ARGV[2] ttl ms
-- Returns {1, floor}   voted: the caller holds the lock on this node for ttl; floor = max(last fence
--                      committed here + 1, this server's clock in µs), so a fence chosen above every
--                      voter's floor exceeds every fence a majority including this node committed
--         {0, pttl}    the lock is someone else's on this node for pttl more ms

local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[1] then return {0, redis.call('PTTL', KEYS[1])} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
return {1, math.max(last + 1, now_us)}

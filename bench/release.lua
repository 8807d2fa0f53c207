-- CL.RELEASE over the sorted-set semaphore (lease.lua): 1 when the holder's lease was live.
-- KEYS[1]; ARGV: holder.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return redis.call('ZREM', KEYS[1], ARGV[1])

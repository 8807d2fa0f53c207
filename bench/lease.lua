-- CL.LEASE as the sorted-set semaphore people paste into their services: one member per
-- holder, scored by its lease's end in ms. KEYS[1]; ARGV: limit, lease time (s), holder.
-- Same five-integer reply.
local limit, lease, holder = tonumber(ARGV[1]), tonumber(ARGV[2]) * 1000, ARGV[3]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local live = redis.call('ZCARD', KEYS[1])
local own = redis.call('ZSCORE', KEYS[1], holder)
if not own and live >= limit then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  return {1, limit, 0, math.ceil((tonumber(first[2]) - now) / 1000),
          math.ceil((tonumber(last[2]) - now) / 1000)}
end
redis.call('ZADD', KEYS[1], now + lease, holder)
if not own then live = live + 1 end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], tonumber(last[2]))
return {0, limit, limit - live, -1, math.ceil((tonumber(last[2]) - now) / 1000)}

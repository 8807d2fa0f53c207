-- CL.WINDOW as the sorted-set sliding log people paste into their services: one member per
-- admitted unit, scored by its millisecond. KEYS[1]; ARGV: limit, period (s), quantity.
-- Same five-integer reply.
local limit, period, quantity = tonumber(ARGV[1]), tonumber(ARGV[2]) * 1000, tonumber(ARGV[3])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - period)
local used = redis.call('ZCARD', KEYS[1])
if used + quantity > limit then
  local retry = -1
  if quantity <= limit then
    local leaving = redis.call('ZRANGE', KEYS[1], used + quantity - limit - 1, used + quantity - limit - 1, 'WITHSCORES')
    retry = math.ceil((tonumber(leaving[2]) + period - now) / 1000)
  end
  local newest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  return {1, limit, limit - used, retry, math.ceil((tonumber(newest[2]) + period - now) / 1000)}
end
for i = 1, quantity do
  -- Unique members, so that units in the same millisecond are all counted.
  redis.call('ZADD', KEYS[1], now, now .. ':' .. math.random(1, 1000000000))
end
if quantity > 0 then redis.call('PEXPIRE', KEYS[1], period) end
return {0, limit, limit - used - quantity, -1, math.ceil(period / 1000)}

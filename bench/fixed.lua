-- CL.FIXED as the INCR + PEXPIRE script people paste into their services.
-- KEYS[1]; ARGV: limit, period (s), quantity. Same five-integer reply.
local limit, period, quantity = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count + quantity > limit then
  local wait = math.ceil(redis.call('PTTL', KEYS[1]) / 1000)
  local retry = -1
  if quantity <= limit then retry = wait end
  return {1, limit, limit - count, retry, wait}
end
if quantity > 0 then
  count = redis.call('INCRBY', KEYS[1], quantity)
  if count == quantity then redis.call('PEXPIRE', KEYS[1], period * 1000) end
end
return {0, limit, limit - count, -1, math.ceil(redis.call('PTTL', KEYS[1]) / 1000)}

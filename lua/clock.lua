-- The server's clock, read once per call as the module reads it: in microseconds where the
-- module API has RedisModule_Microseconds (Redis 7.2 and later, and Valkey, which answers as
-- 7.2), in milliseconds on Redis 7.0 and 6.2, so that both decide at the same instant.

-- Now, as the module's Instant: `ms` and `us` as numbers (exact: now is under 2^53 µs);
-- clock_ns gives the exact nanoseconds GCRA computes with.
local function clock_now()
  local time = redis.call('TIME')
  local micros = tonumber(time[2])
  if not (redis.REDIS_VERSION_NUM and redis.REDIS_VERSION_NUM >= 0x070200) then
    micros = math.floor(micros / 1000) * 1000
  end
  local seconds = tonumber(time[1])
  return { ms = seconds * 1000 + math.floor(micros / 1000), us = seconds * 1000000 + micros }
end

-- Now in nanoseconds, exact, computed once.
local function clock_ns(now)
  if now.ns == nil then now.ns = exact_mul(exact_of_number(now.us), { neg = false, 1000 }) end
  return now.ns
end

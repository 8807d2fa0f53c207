-- The server's clock, read once per call as the module reads it: in microseconds where the
-- module API has RedisModule_Microseconds (Redis 7.2 and later, and Valkey, which answers as
-- 7.2), in milliseconds on Redis 7.0 and 6.2, so that both decide at the same instant.

-- Now, as the module's Instant: `ns` exact, and `ms` (whole milliseconds) as a number.
local function clock_now()
  local time = redis.call('TIME')
  local micros = tonumber(time[2])
  if not (redis.REDIS_VERSION_NUM and redis.REDIS_VERSION_NUM >= 0x070200) then
    micros = math.floor(micros / 1000) * 1000
  end
  return {
    ms = tonumber(time[1]) * 1000 + math.floor(micros / 1000),
    ns = exact_add(exact_mul(exact_parse(time[1]), ARGS_NANOS.s),
      exact_mul(exact_of_number(micros), { neg = false, 1000 })),
  }
end

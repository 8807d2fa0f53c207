-- The server's clock, read as the module reads it: in microseconds where the module API has
-- RedisModule_Microseconds (Redis 7.2 and later, and Valkey, which answers as 7.2), in
-- milliseconds on Redis 7.0 and 6.2, so that both decide at the same instant.

local function clock_now_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

-- Now in nanoseconds, exact.
local function clock_now_ns()
  local time = redis.call('TIME')
  local micros = time[2]
  if not (redis.REDIS_VERSION_NUM and redis.REDIS_VERSION_NUM >= 0x070200) then
    micros = string.format('%d', math.floor(tonumber(micros) / 1000) * 1000)
  end
  return exact_add(exact_mul(exact_parse(time[1]), ARGS_NANOS.s),
    exact_mul(exact_parse(micros), { neg = false, 1000 }))
end

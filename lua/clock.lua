-- The server's clock, read once per call as the module reads it: in microseconds where the
-- module API has RedisModule_Microseconds (Redis 7.2 and later, and Valkey, which answers as
-- 7.2), in milliseconds on Redis 7.0 and 6.2, so that both decide at the same instant.

-- The last call's seconds, as TIME's text and as a number, kept between calls: they change
-- once a second, and a tonumber's strtod costs as much as the rest of the clock. Each call
-- compares its own text with the kept one.
local CLOCK_SECONDS_TEXT = ''
local CLOCK_SECONDS = 0

-- Whether TIME's microseconds are the module's too, asked once.
local CLOCK_IN_MICROS = nil

-- Now, as the module's Instant: in µs and in whole ms, two numbers (exact: now is under
-- 2^53 µs).
local function clock_now()
  local time = redis.call('TIME')
  local micros = tonumber(time[2])
  if CLOCK_IN_MICROS == nil then
    CLOCK_IN_MICROS = redis.REDIS_VERSION_NUM ~= nil and redis.REDIS_VERSION_NUM >= 0x070200
  end
  if not CLOCK_IN_MICROS then micros = micros - micros % 1000 end
  local text = time[1]
  if text ~= CLOCK_SECONDS_TEXT then
    CLOCK_SECONDS_TEXT = text
    CLOCK_SECONDS = tonumber(text)
  end
  local seconds = CLOCK_SECONDS
  return seconds * 1000000 + micros, seconds * 1000 + (micros - micros % 1000) / 1000
end

-- Now in nanoseconds, exact.
local function clock_ns(now_us)
  return exact_mul(exact_of_number(now_us), { neg = false, 1000 })
end

-- CL.SMOOTH in the library: Guava's SmoothRateLimiter as the module computes it
-- (src/smooth.rs, src/smooth/state.rs), on the same 32-byte key. Guava's arithmetic is in
-- doubles, as Lua's is, operation for operation; its integer microseconds are numbers here,
-- exact below 2^53 µs (the year 2255): a reservation that would reach past that is refused.

local SMOOTH_LEN = 32
local SMOOTH_I64 = 9223372036854775808
local SMOOTH_FILL_SPAN = 1152921504606846976
local SMOOTH_ADJUSTMENTS = 4
local SMOOTH_ROUNDING = 1e-12
local SMOOTH_MAX_PERMITS = 1e40
local SMOOTH_TOO_FAR = ERRORS.inexact('quantity')
local SMOOTH_INFINITY = 1 / 0

-- Java's and Rust's `(long) x`: toward zero, saturating, NaN as 0. (x - x % 1 is floor(x),
-- exactly, with no C call.)
local function smooth_long(x)
  if x >= 0 and x < SMOOTH_I64 then return x - x % 1 end
  if x ~= x then return 0 end
  if x >= SMOOTH_I64 then return SMOOTH_I64 - 1 end
  if x <= -SMOOTH_I64 then return -SMOOTH_I64 end
  local whole = x - x % 1
  if whole < x then return whole + 1 end
  return whole
end

-- math.ceil(x), with no C call.
local function smooth_ceil(x)
  local whole = x - x % 1
  if whole < x then return whole + 1 end
  return whole
end

-- An instant or span in µs, once added: refused past 2^53, where a number stops being exact.
local function smooth_add(a, b)
  local sum = a + b
  if sum >= BYTES_EXACT or sum <= -BYTES_EXACT then state_fail(SMOOTH_TOO_FAR) end
  return sum
end

local function smooth_min(a, b)
  if a <= b then return a end
  return b
end

-- A span in the call's unit, in seconds.
local function smooth_seconds(span, unit)
  if unit == 'ms' then return span / 1000.0 end
  return span
end

-- Guava's setRate for the call's shape (Rate::new), into `rate`: the plain calls' is one
-- table kept between calls (a function runs alone), the others' a table of their own.
local function smooth_rate_into(rate, permits, period, unit, burst, warmup, cold)
  local per_second = permits / smooth_seconds(period, unit)
  local stable = 1e6 / per_second
  rate.stable, rate.limit = stable, nil
  if warmup == nil then
    rate.max_permits, rate.cool_down, rate.warming = smooth_seconds(burst, unit) * per_second, stable, false
    return rate
  end
  local warmup_micros = warmup * (unit == 'ms' and 1000 or 1000000)
  local cold_interval = stable * cold
  local threshold = 0.5 * warmup_micros / stable
  local max_permits = threshold + 2.0 * warmup_micros / (stable + cold_interval)
  rate.max_permits, rate.cool_down, rate.warming = max_permits, warmup_micros / max_permits, true
  rate.threshold, rate.slope = threshold, (cold_interval - stable) / (max_permits - threshold)
  return rate
end

local function smooth_rate(p)
  return smooth_rate_into({}, p.permits, p.period, p.unit, p.burst, p.warmup, p.cold)
end

-- How many calls of one permit a new key admits at one instant, kept in the rate once known
-- (the plain calls' rate lives on between calls).
local function smooth_limit(rate)
  if rate.limit then return rate.limit end
  local limit = 1
  if not rate.warming then
    limit = smooth_long(rate.max_permits)
    -- The reply's limit, one more, must be exact.
    if limit >= BYTES_EXACT then state_fail(ERRORS.inexact('permits')) end
    limit = limit + 1
  end
  rate.limit = limit
  return limit
end

-- storedPermitsToWaitTime of a warming rate (a bursty one's stored permits are free): what
-- taking `take` of `stored` permits costs, in µs; a permit's price is stable + permits ·
-- slope above the threshold.
local function smooth_stored_wait(rate, stored, take)
  local above = stored - rate.threshold
  local micros = 0
  if above > 0.0 then
    local take_above = smooth_min(above, take)
    local length = (rate.stable + above * rate.slope) + (rate.stable + (above - take_above) * rate.slope)
    micros = smooth_long(take_above * length / 2.0)
    take = take - take_above
  end
  return smooth_add(micros, smooth_long(rate.stable * take))
end

-- resync: time past the next free instant stores permits, at the cool-down interval. The
-- state (next free instant, stored permits) at now.
local function smooth_resync(next_free, stored, now, max_permits, cool_down)
  if now > next_free then
    return now, smooth_min(max_permits, stored + (now - next_free) / cool_down)
  end
  return next_free, stored
end

-- reserveEarliestAvailable: the state once `quantity` permits are taken at now.
local function smooth_reserve(next_free, stored, quantity, now, rate)
  next_free, stored = smooth_resync(next_free, stored, now, rate.max_permits, rate.cool_down)
  local spend = smooth_min(quantity, stored)
  local fresh = quantity - spend
  local stored_wait = rate.warming and smooth_stored_wait(rate, stored, spend) or 0
  local wait = smooth_add(stored_wait, smooth_long(fresh * rate.stable))
  return smooth_add(next_free, wait), stored - spend
end

-- The first instant at which the limiter equals a new key's (Guava::full_at): d µs on,
-- the least d at which `stored + d / cool_down >= most`.
local function smooth_full_at(next_free, stored, rate)
  local most, cool_down = rate.max_permits, rate.cool_down
  if stored == most then return next_free end
  local estimate = (most - stored) * cool_down
  if estimate < 0.0 then estimate = 0.0 end
  if estimate > SMOOTH_FILL_SPAN then estimate = SMOOTH_FILL_SPAN end
  -- Within [0, 2^60]: smooth_long's first case, written out.
  local d = estimate - estimate % 1 + 1
  if stored + d / cool_down >= most then
    for _ = 1, SMOOTH_ADJUSTMENTS do
      if d == 1 or stored + (d - 1) / cool_down < most then break end
      d = d - 1
    end
  else
    local steps = 0
    while stored + d / cool_down < most do
      steps = steps + 1
      if steps > SMOOTH_ADJUSTMENTS then
        d = SMOOTH_FILL_SPAN
        break
      end
      d = d + 1
    end
  end
  return smooth_add(next_free, d)
end

-- How many calls of one permit would go one after another at now, at most the limit.
local function smooth_at_once(next_free, stored, now, rate, limit)
  if next_free > now then return 0 end
  if rate.warming then return 1 end
  local _, free = smooth_resync(next_free, stored, now, rate.max_permits, rate.cool_down)
  local whole = smooth_long(free)
  local fraction = free - whole
  -- A rate's interval is positive and below 2^63 µs: smooth_long's first case, written out.
  local stable = rate.stable - rate.stable % 1
  local first_paid = stable
  if fraction > 0.0 then first_paid = smooth_long((1.0 - fraction) * rate.stable) end
  local paid
  if first_paid >= 1 then
    paid = 1
  elseif fraction > 0.0 and stable >= 1 then
    paid = 2
  else
    return limit
  end
  return smooth_min(whole + paid, limit)
end

local function smooth_positive(x)
  return x == x and x > 0 and x ~= SMOOTH_INFINITY
end

-- The key's state (next free instant, stored permits) under the call's rate: a new key's,
-- the stored one, or the stored one rescaled as setRate does when it was kept at another
-- rate. `rescale` false: nil where the stored rate is another (the plain call's hand-over).
local function smooth_state(v, now, rate, rescale)
  if v == nil then return now, rate.max_permits end
  if #v ~= SMOOTH_LEN then state_corrupt() end
  -- An i64 read as a double: past 2^53 it is rounded, and refused below as out of reach.
  local next_free, stored, max_permits, cool_down = struct.unpack('<i8ddd', v)
  local warming = cool_down < 0
  if warming then cool_down = -cool_down end
  local rated = smooth_positive(max_permits) and max_permits <= SMOOTH_MAX_PERMITS
    and smooth_positive(cool_down)
  local most = max_permits * (1.0 + SMOOTH_ROUNDING)
  if not (rated and stored >= 0.0 and stored <= most) or next_free >= BYTES_EXACT or next_free < 0 then
    state_corrupt()
  end
  if warming ~= rate.warming then
    if warming then state_fail(ERRORS.smooth_warming) end
    state_fail(ERRORS.smooth_bursty)
  end
  if max_permits ~= rate.max_permits or cool_down ~= rate.cool_down then
    if not rescale then return nil end
    next_free, stored = smooth_resync(next_free, stored, now, max_permits, cool_down)
    stored = smooth_min(stored * rate.max_permits / max_permits, rate.max_permits * (1.0 + SMOOTH_ROUNDING))
  end
  return next_free, stored
end

-- A wait in µs rounded up to the unit, as Outcome::to_reply rounds its nanoseconds
-- (saturating at i64::MAX ns).
local function smooth_rounded(us, unit)
  if us < 0 then return 0 end
  if us > 9223372036854775 then return unit == 'ms' and 9223372036855 or 9223372037 end
  if unit == 'ms' then return smooth_ceil(us / 1000) end
  return smooth_ceil(us / 1000000)
end

-- The five integers, from waits in µs.
local function smooth_reply(limited, limit, remaining, retry_us, reset_us, unit)
  if remaining < 0 then remaining = 0 end
  if remaining > limit then remaining = limit end
  return { limited and 1 or 0, limit, remaining, retry_us and smooth_rounded(retry_us, unit) or -1,
    smooth_rounded(reset_us, unit) }
end

-- Decides a call of `quantity` at now (Smooth::decide, as tryAcquire with no wait) on the
-- state next_free, stored: the reply, and when admitted the value to write and its expiry.
local function smooth_decide(quantity, unit, rate, next_free, stored, now)
  local limit = smooth_limit(rate)
  local admitted = next_free <= now
  if quantity == 0 or not admitted then
    local reset = smooth_full_at(next_free, stored, rate) - now
    if not admitted and quantity > 0 then
      return smooth_reply(true, limit, 0, next_free - now, reset, unit)
    end
    return smooth_reply(false, limit, smooth_at_once(next_free, stored, now, rate, limit), nil, reset, unit)
  end
  next_free, stored = smooth_reserve(next_free, stored, quantity, now, rate)
  local full_at = smooth_full_at(next_free, stored, rate)
  local value = struct.pack('<i8ddd', next_free, stored, rate.max_permits,
    rate.warming and -rate.cool_down or rate.cool_down)
  local reply = smooth_reply(false, limit, smooth_at_once(next_free, stored, now, rate, limit), nil,
    full_at - now, unit)
  return reply, value, smooth_ceil(full_at / 1000)
end

-- The decision of `quantity` on the stored value v at `rate`; nil where v is kept at another
-- rate and `rescale` is false.
local function smooth_decided(quantity, unit, rate, v, now, rescale)
  local next_free, stored = smooth_state(v, now, rate, rescale)
  if next_free == nil then return nil end
  return smooth_decide(quantity, unit, rate, next_free, stored, now)
end

-- The kind (single.lua).
local SMOOTH = {
  read = function(key, _, _, now_ms) return state_bytes(key, now_ms) end,
  decide = function(p, v, now_us)
    local reply, value, expire_at_ms = smooth_decided(p.quantity, p.unit, smooth_rate(p), v, now_us, true)
    return reply, value and { value = value, expire_at_ms = expire_at_ms }
  end,
  peek = function(p, v, now_us)
    return (smooth_decided(0, p.unit, smooth_rate(p), v, now_us, true))
  end,
  write = function(key, _, change) redis.call('SET', key, change.value, 'PXAT', change.expire_at_ms) end,
}

-- The plain call's rate, kept between calls by the function form (a function runs alone).
local SMOOTH_PLAIN_RATE = {}

-- The plain call, `permits period [quantity]` with each a canonical integer below 10^14 and
-- the period in seconds, on a key absent or holding a bursty state at this rate: decided
-- with no table but the reply and the rate kept between calls. nil for any other call, or
-- one that fails, before anything is written: cl_smooth then reads and decides it in full,
-- and answers its errors (as throttle_plain).
local function smooth_plain(key, args)
  local quantity, permits, period = args_plain_call(args, #args, 2)
  -- args_plain_rate's test, written out: its call would cost this path 500 instructions, and
  -- the path is within 200 of its target (docs/benchmark.md).
  if not quantity or permits == 0 or period == 0 or period > ARGS_MAX_SPAN.s or quantity > 2147483647 then
    return nil
  end
  -- Guava's default burst: one second. A route's rate repeats: made again only when the
  -- call's differs from the last one's.
  local rate = SMOOTH_PLAIN_RATE
  if rate.permits ~= permits or rate.period ~= period then
    smooth_rate_into(rate, permits, period, 's', 1, nil, 3)
    rate.permits, rate.period = permits, period
  end
  local now = clock_now()
  local v = redis.pcall('GET', key)
  if v and type(v) ~= 'string' then return nil end
  local ok, reply, value, expire_at_ms = pcall(smooth_decided, quantity, 's', rate, v or nil, now, false)
  if not (ok and reply) then return nil end
  if value then redis.call('SET', key, value, 'PXAT', string.format('%d', expire_at_ms)) end
  return reply
end

-- FCALL cl_smooth 1 key permits period [quantity] [MS] [BURST span] [WARMUP span [COLD factor]]
-- [DRYRUN]
local function cl_smooth(keys, args)
  if #keys ~= 1 then return redis.error_reply(ERRORS.wrong_arity('cl.smooth')) end
  local plain = smooth_plain(keys[1], args)
  if plain then return plain end
  local p, err = args_smooth(args)
  if p == nil then return redis.error_reply(err) end
  return single_run(keys[1], SMOOTH, p)
end

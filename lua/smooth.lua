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

-- Java's and Rust's `(long) x`: toward zero, saturating, NaN as 0.
local function smooth_long(x)
  if x ~= x then return 0 end
  if x >= SMOOTH_I64 then return SMOOTH_I64 - 1 end
  if x <= -SMOOTH_I64 then return -SMOOTH_I64 end
  if x >= 0 then return math.floor(x) end
  return math.ceil(x)
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

-- Guava's setRate for the call's shape (Rate::new).
local function smooth_rate(p)
  local function seconds(span)
    if p.unit == 'ms' then return span / 1000.0 end
    return span
  end
  local per_second = p.permits / seconds(p.period)
  local stable = 1e6 / per_second
  if p.warmup == nil then
    return { stable = stable, max_permits = seconds(p.burst) * per_second, cool_down = stable }
  end
  local warmup_micros = p.warmup * (p.unit == 'ms' and 1000 or 1000000)
  local cold_interval = stable * p.cold
  local threshold = 0.5 * warmup_micros / stable
  local max_permits = threshold + 2.0 * warmup_micros / (stable + cold_interval)
  return { stable = stable, max_permits = max_permits, cool_down = warmup_micros / max_permits,
    warming = true, threshold = threshold,
    slope = (cold_interval - stable) / (max_permits - threshold) }
end

-- How many calls of one permit a new key admits at one instant.
local function smooth_limit(rate)
  if rate.warming then return 1 end
  local limit = smooth_long(rate.max_permits)
  -- The reply's limit, one more, must be exact.
  if limit >= BYTES_EXACT then state_fail(ERRORS.inexact('permits')) end
  return limit + 1
end

-- storedPermitsToWaitTime: what taking `take` of `stored` permits costs, in µs.
local function smooth_stored_wait(rate, stored, take)
  if not rate.warming then return 0 end
  local function to_time(permits) return rate.stable + permits * rate.slope end
  local above = stored - rate.threshold
  local micros = 0
  if above > 0.0 then
    local take_above = smooth_min(above, take)
    local length = to_time(above) + to_time(above - take_above)
    micros = smooth_long(take_above * length / 2.0)
    take = take - take_above
  end
  return smooth_add(micros, smooth_long(rate.stable * take))
end

-- resync: time past the next free instant stores permits, at the cool-down interval.
local function smooth_resync(g, now, max_permits, cool_down)
  if now > g.next_free then
    g.stored = smooth_min(max_permits, g.stored + (now - g.next_free) / cool_down)
    g.next_free = now
  end
end

-- reserveEarliestAvailable: takes `quantity` permits at now; the instant the caller may go.
local function smooth_reserve(g, quantity, now, rate)
  smooth_resync(g, now, rate.max_permits, rate.cool_down)
  local moment = g.next_free
  local spend = smooth_min(quantity, g.stored)
  local fresh = quantity - spend
  local wait = smooth_add(smooth_stored_wait(rate, g.stored, spend), smooth_long(fresh * rate.stable))
  g.next_free = smooth_add(g.next_free, wait)
  g.stored = g.stored - spend
  return moment
end

-- The first instant at which the limiter equals a new key's (Guava::full_at).
local function smooth_full_at(g, rate)
  if g.stored == rate.max_permits then return g.next_free end
  local function fills(d) return g.stored + d / rate.cool_down >= rate.max_permits end
  local estimate = (rate.max_permits - g.stored) * rate.cool_down
  if estimate < 0.0 then estimate = 0.0 end
  if estimate > SMOOTH_FILL_SPAN then estimate = SMOOTH_FILL_SPAN end
  local d = smooth_long(estimate) + 1
  if fills(d) then
    for _ = 1, SMOOTH_ADJUSTMENTS do
      if d == 1 or not fills(d - 1) then break end
      d = d - 1
    end
  else
    local steps = 0
    while not fills(d) do
      steps = steps + 1
      if steps > SMOOTH_ADJUSTMENTS then
        d = SMOOTH_FILL_SPAN
        break
      end
      d = d + 1
    end
  end
  return smooth_add(g.next_free, d)
end

-- How many calls of one permit would go one after another at now, at most the limit.
local function smooth_at_once(g, now, rate, limit)
  if g.next_free > now then return 0 end
  if rate.warming then return 1 end
  local free = { next_free = g.next_free, stored = g.stored }
  smooth_resync(free, now, rate.max_permits, rate.cool_down)
  local whole = smooth_long(free.stored)
  local fraction = free.stored - whole
  local stable = smooth_long(rate.stable)
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

-- The key's state under the call's rate: a new key's, the stored one, or the stored one
-- rescaled as setRate does when it was kept at another rate.
local function smooth_state(v, now, rate)
  if v == nil then return { next_free = now, stored = rate.max_permits } end
  if #v ~= SMOOTH_LEN then state_corrupt() end
  local next_free = bytes_i64(v, 0)
  local stored, max_permits, cool_down = struct.unpack('<ddd', string.sub(v, 9))
  local function positive(x) return x == x and x > 0 and x ~= math.huge end
  local rated = positive(max_permits) and max_permits <= SMOOTH_MAX_PERMITS and positive(math.abs(cool_down))
  local most = max_permits * (1.0 + SMOOTH_ROUNDING)
  if not (rated and stored >= 0.0 and stored <= most) or next_free == nil or next_free < 0 then
    state_corrupt()
  end
  local warming = cool_down < 0
  if warming ~= (rate.warming == true) then
    if warming then state_fail(ERRORS.smooth_warming) end
    state_fail(ERRORS.smooth_bursty)
  end
  cool_down = math.abs(cool_down)
  local g = { next_free = next_free, stored = stored }
  if max_permits ~= rate.max_permits or cool_down ~= rate.cool_down then
    smooth_resync(g, now, max_permits, cool_down)
    g.stored = smooth_min(g.stored * rate.max_permits / max_permits,
      rate.max_permits * (1.0 + SMOOTH_ROUNDING))
  end
  return g
end

-- The five integers, from waits in µs, rounded up to the unit as Outcome::to_reply rounds
-- its nanoseconds (saturating at i64::MAX ns).
local function smooth_reply(limited, limit, remaining, retry_us, reset_us, unit)
  local function rounded(us)
    if us < 0 then return 0 end
    if us > 9223372036854775 then return unit == 'ms' and 9223372036855 or 9223372037 end
    if unit == 'ms' then return math.ceil(us / 1000) end
    return math.ceil(us / 1000000)
  end
  if remaining < 0 then remaining = 0 end
  if remaining > limit then remaining = limit end
  return { limited and 1 or 0, limit, remaining, retry_us and rounded(retry_us) or -1, rounded(reset_us) }
end

-- Decides the call at now (Smooth::decide, as tryAcquire with no wait): the reply, and the
-- value and expiry to write when admitted.
local function smooth_decide(p, rate, v, now)
  local g = smooth_state(v, now, rate)
  local limit = smooth_limit(rate)
  local function reset(state) return smooth_full_at(state, rate) - now end
  local admitted = g.next_free <= now
  if p.quantity == 0 or not admitted then
    if not admitted and p.quantity > 0 then
      return smooth_reply(true, limit, 0, g.next_free - now, reset(g), p.unit)
    end
    return smooth_reply(false, limit, smooth_at_once(g, now, rate, limit), nil, reset(g), p.unit)
  end
  smooth_reserve(g, p.quantity, now, rate)
  local full_at = smooth_full_at(g, rate)
  local value = bytes_of_i64(g.next_free)
    .. struct.pack('<ddd', g.stored, rate.max_permits, rate.warming and -rate.cool_down or rate.cool_down)
  local reply = smooth_reply(false, limit, smooth_at_once(g, now, rate, limit), nil, full_at - now, p.unit)
  return reply, { value = value, expire_at_ms = math.ceil(full_at / 1000) }
end

-- The kind (single.lua).
local SMOOTH = {
  read = function(key, _, _, now_ms) return state_bytes(key, now_ms) end,
  decide = function(p, v, now_us) return smooth_decide(p, smooth_rate(p), v, now_us) end,
  peek = function(p, v, now_us)
    return (smooth_decide({ quantity = 0, unit = p.unit }, smooth_rate(p), v, now_us))
  end,
  write = function(key, _, change) redis.call('SET', key, change.value, 'PXAT', change.expire_at_ms) end,
}

-- FCALL cl_smooth 1 key permits period [quantity] [MS] [BURST span] [WARMUP span [COLD factor]]
-- [DRYRUN]
local function cl_smooth(keys, args)
  if #keys ~= 1 then return redis.error_reply(ERRORS.wrong_arity('cl.smooth')) end
  local p, err = args_smooth(args)
  if p == nil then return redis.error_reply(err) end
  return single_run(keys[1], SMOOTH, p)
end

-- CL.THROTTLE in the library: the module's GCRA (src/gcra.rs) on the same key, a decimal
-- theoretical arrival time (TAT) in nanoseconds that expires when the limiter has drained.
-- A TAT has 19 digits, past a double's exact integers, so GCRA decides in one of two forms
-- (integers.lua): in numbers, as nanoseconds after now, where the constants and the stored
-- TAT lie within 2^51 ns (26 days) of now, so that every sum stays exact; else in exact
-- integers, as absolute nanoseconds.

local THROTTLE_ONE = { neg = false, 1 }
-- 2^51: how far from now the numbers form reaches.
local THROTTLE_NUMBERS_BELOW = 2251799813685248

-- GCRA's constants in exact integers (Gcra::new), or the module's error: the emission
-- interval T, the tolerance τ = T·limit, the limit (max_burst + 1), and the call's increment
-- T·quantity.
local function throttle_gcra_exact(p)
  local function exact(name) return p[name .. '_exact'] or exact_of_number(p[name]) end
  local unit_ns = ARGS_NANOS[p.unit]
  local interval = exact_divmod(exact_mul(exact_of_number(p.period), unit_ns), exact('count'))
  if exact_cmp(interval, THROTTLE_ONE) < 0 then
    return nil, ERRORS.sub_nanosecond
  end
  local limit = exact_add(exact('max_burst'), THROTTLE_ONE)
  if exact_cmp(limit, ARGS_I64_MAX) > 0 then return nil, ERRORS.too_large('max_burst') end
  local tolerance = exact_mul(interval, limit)
  if exact_cmp(tolerance, ARGS_MAX_SPAN_NS) > 0 then return nil, ERRORS.too_large('max_burst') end
  local increment = exact_mul(interval, exact('quantity'))
  if exact_cmp(increment, exact_sub(ARGS_MAX_SPAN_NS, tolerance)) > 0 then
    return nil, ERRORS.too_large('quantity')
  end
  return { k = INTEGERS_EXACT, interval = interval, tolerance = tolerance, limit = limit,
    increment = increment, unit_ns = unit_ns }
end

-- GCRA's constants in numbers (interval, limit, tolerance, increment), where they keep
-- within 2^51 ns; nil where they do not. Below 2^51 each product is exact, and the
-- numbers' own: the exact form would answer no error for them (its bounds lie past 2^53)
-- but for an interval under 1 ns. ((a - a % b) / b is a / b floored, with no C call.)
local function throttle_numbers(max_burst, count, period, quantity, unit_ns)
  local period_ns = period * unit_ns
  local interval = (period_ns - period_ns % count) / count
  local limit = max_burst + 1
  local tolerance = interval * limit
  local increment = interval * quantity
  if period_ns < THROTTLE_NUMBERS_BELOW and interval >= 1 and tolerance + increment < THROTTLE_NUMBERS_BELOW then
    return interval, limit, tolerance, increment
  end
  return nil
end

-- GCRA's constants, in numbers where they keep within 2^51 ns, or the module's error.
local function throttle_gcra(p)
  local unit_ns = p.unit == 'ms' and 1000000 or 1000000000
  if not (p.max_burst_exact or p.count_exact or p.quantity_exact) then
    local interval, limit, tolerance, increment = throttle_numbers(p.max_burst, p.count, p.period,
      p.quantity, unit_ns)
    if interval then
      return { k = INTEGERS_NUMBERS, interval = interval, tolerance = tolerance, limit = limit,
        increment = increment, unit_ns = unit_ns }
    end
  end
  return throttle_gcra_exact(p)
end

-- Now in g's form: 0 in numbers, which count from now.
local function throttle_now(g, now_us)
  if g.k == INTEGERS_NUMBERS then return 0 end
  return clock_ns(now_us)
end

-- Now as whole seconds and the nanoseconds past them: the two parts a TAT's text is read and
-- written in.
local function throttle_now_parts(now_us)
  local micros = now_us % 1000000
  return (now_us - micros) / 1000000, micros * 1000
end

-- The stored TAT as ns after now, when it is canonical and within reach of the numbers form
-- (a TAT at or before now is now: GCRA reads no further); nil if not.
local function throttle_tat_number(text, now_us)
  local n = #text
  if n > 19 then return nil end
  -- One match checks the digits and cuts the seconds from the nanoseconds (a TAT of this
  -- century has 19 digits); the parts are numbers once used in arithmetic.
  local seconds, nanos = 0, text
  if n > 9 then
    seconds, nanos = string.match(text, '^([1-9]%d*)(%d%d%d%d%d%d%d%d%d)$')
    if seconds == nil then return nil end
  elseif not string.find(text, '^[1-9]%d*$') then
    return nil
  end
  local now_s, now_nanos = throttle_now_parts(now_us)
  local after = (seconds - now_s) * 1000000000 + nanos - now_nanos
  if after <= 0 then return 0 end
  if after >= THROTTLE_NUMBERS_BELOW then return nil end
  return after
end

-- The stored TAT in the form of p.gcra, which turns exact where the TAT is out of the numbers'
-- reach; nil for no key, or nil and the error.
local function throttle_read(key, p, now_us, now_ms)
  local text, err = state_bytes(key, now_ms)
  if text == nil then return nil, err end
  if p.gcra.k == INTEGERS_NUMBERS then
    local after = throttle_tat_number(text, now_us)
    if after then return after end
    -- The numbers' constants passed, so the exact ones do.
    p.gcra = throttle_gcra_exact(p)
  end
  return state_exact(text)
end

-- A wait in nanoseconds in whole units, rounded up.
local function throttle_units(g, ns)
  local k = g.k
  if k.cmp(ns, k.zero) < 0 then return 0 end
  return k.tonumber(k.ceil_div(ns, g.unit_ns))
end

-- The units left once a TAT ttl ahead of now: the tolerance's room over it, in intervals.
local function throttle_remaining(g, ttl)
  local k = g.k
  local room = k.sub(g.tolerance, ttl)
  if k.cmp(room, k.zero) < 0 then return 0 end
  local units = k.div(room, g.interval)
  if k.cmp(units, g.limit) > 0 then units = g.limit end
  return k.tonumber(units)
end

-- Decides asking for `increment` at now (in g's form) against the stored TAT: the reply,
-- and the TAT to write.
local function throttle_decide(g, stored, now, increment)
  local k = g.k
  local tat = stored and k.max(stored, now) or now
  local new_tat = k.saturate(k.add(tat, increment))
  local allow_at = k.sub(new_tat, g.tolerance)
  local limit = k.tonumber(g.limit)
  if k.cmp(allow_at, now) > 0 then
    local ttl = k.sub(tat, now)
    local retry = -1
    if k.cmp(increment, g.tolerance) <= 0 then retry = throttle_units(g, k.sub(allow_at, now)) end
    return { 1, limit, throttle_remaining(g, ttl), retry, throttle_units(g, ttl) }, nil
  end
  local ttl = k.sub(new_tat, now)
  local new = nil
  if k.cmp(increment, k.zero) > 0 then new = new_tat end
  return { 0, limit, throttle_remaining(g, ttl), -1, throttle_units(g, ttl) }, new
end

-- REFUND: the TAT moves back by the increment, never before now.
local function throttle_refund(g, stored, now)
  local k = g.k
  local new = nil
  if stored and k.cmp(stored, now) > 0 then
    local moved = k.max(k.sub(stored, g.increment), now)
    if k.cmp(moved, stored) ~= 0 then new = moved end
  end
  local reply = throttle_decide(g, new or stored, now, k.zero)
  reply[1] = 0
  reply[4] = -1
  return reply, new
end

-- A TAT tat ns after now (the numbers form), written as its text and its expiry, rounded
-- up to the millisecond.
local function throttle_write_after(key, tat, now_us)
  local now_s, now_nanos = throttle_now_parts(now_us)
  local nanos = now_nanos + tat
  local carry = nanos % 1000000000
  carry = (nanos - carry) / 1000000000
  local seconds = now_s + carry
  nanos = nanos - carry * 1000000000
  local text = seconds > 0 and string.format('%d%09d', seconds, nanos) or string.format('%d', nanos)
  local ms = nanos + 999999
  -- The expiry as text made here: the server would print a number with "%.17g", which
  -- costs more than the C call.
  redis.call('SET', key, text, 'PXAT', string.format('%d', seconds * 1000 + (ms - ms % 1000000) / 1000000))
end

-- The TAT's text and its expiry, rounded up to the millisecond.
local function throttle_write(key, p, tat, _, now_us)
  if p.gcra.k == INTEGERS_EXACT then
    redis.call('SET', key, exact_tostring(tat), 'PXAT', exact_tostring(exact_ceil_div(tat, ARGS_NANOS.ms)))
    return
  end
  throttle_write_after(key, tat, now_us)
end

-- A wait of ns > 0 in whole units of unit_ns (seconds or, with MS, milliseconds), rounded
-- up (throttle_units for a plain call).
local function throttle_rounded(ns, unit_ns)
  ns = ns + unit_ns - 1
  return (ns - ns % unit_ns) / unit_ns
end

-- A plain limiter's GCRA numbers (interval, limit, tolerance, increment) for
-- `max_burst count period` and quantity, each a canonical integer below 10^14, the period in
-- units of unit_ns; nil where a number is 0 or a constant leaves the numbers' reach.
local function throttle_plain_numbers(quantity, max_burst, count, period, unit_ns)
  if count == 0 or period == 0 then return nil end
  return throttle_numbers(max_burst, count, period, quantity, unit_ns)
end

-- A plain limiter (throttle_plain_numbers's) decided at now_us on a key absent or holding a
-- canonical TAT, where every value stays in the numbers' reach: throttle_decide in numbers,
-- with no table but the reply, its waits in units of unit_ns. The reply and the TAT to write
-- (nil: none); nil for any other key, having written nothing. throttle_plain's, and CL.ALL's
-- (all_plain).
local function throttle_plain_decide(key, interval, limit, tolerance, increment, now_us, unit_ns)
  local tat = 0
  local value = redis.pcall('GET', key)
  if value then
    -- Anything but a canonical TAT within reach (another type, the banned form, damage) is
    -- the full reading's.
    if type(value) ~= 'string' then return nil end
    tat = throttle_tat_number(value, now_us)
    if tat == nil then return nil end
  end
  local new_tat = tat + increment
  local allow_at = new_tat - tolerance
  local limited = allow_at > 0
  local ttl = limited and tat or new_tat
  local room = tolerance - ttl
  local remaining = 0
  if room > 0 then
    remaining = (room - room % interval) / interval
    if remaining > limit then remaining = limit end
  end
  local retry = -1
  local write = nil
  if limited then
    if increment <= tolerance then retry = throttle_rounded(allow_at, unit_ns) end
  elseif increment > 0 then
    write = new_tat
  end
  return { limited and 1 or 0, limit, remaining, retry, ttl > 0 and throttle_rounded(ttl, unit_ns) or 0 }, write
end

-- The plain call, `max_burst count period [quantity] [MS]`, decided by throttle_plain_decide
-- and written; nil for any other call, before anything is written: cl_throttle then reads and
-- decides it in full, and answers its errors. As the module's plain bodies run first, a call
-- that names no option but MS (which the Go client's redis_rate drop-in always sends) pays for
-- none.
local function throttle_plain(key, args)
  local n, unit_ns = #args, 1000000000
  if n >= 4 and args[n] == 'MS' then
    n, unit_ns = n - 1, 1000000
  end
  local quantity, max_burst, count, period = args_plain_call(args, n, 3)
  if not quantity then return nil end
  local interval, limit, tolerance, increment = throttle_plain_numbers(quantity, max_burst, count, period, unit_ns)
  if interval == nil then return nil end
  local now_us = clock_now()
  local reply, tat = throttle_plain_decide(key, interval, limit, tolerance, increment, now_us, unit_ns)
  if tat then throttle_write_after(key, tat, now_us) end
  return reply
end

-- The kind (single.lua), its call's GCRA made by throttle_limiter.
local THROTTLE = {
  read = throttle_read,
  decide = function(p, tat, now_us)
    local g = p.gcra
    if p.refund then return throttle_refund(g, tat, throttle_now(g, now_us)) end
    return throttle_decide(g, tat, throttle_now(g, now_us), g.increment)
  end,
  peek = function(p, tat, now_us)
    local g = p.gcra
    return (throttle_decide(g, tat, throttle_now(g, now_us), g.k.zero))
  end,
  write = throttle_write,
}

-- Makes the call's GCRA (p.gcra), or answers the module's error for its numbers.
local function throttle_limiter(p)
  local g, err = throttle_gcra(p)
  if g == nil then return err end
  p.gcra = g
  return nil
end

-- The call's GCRA for a call with ATMOST or without (src/commands/single.rs gcra_quantity):
-- with it the quantity is a cap, and no call is ever granted more than the limit, so the
-- GCRA is made for at most that, and a cap past it is no error.
local function throttle_made(p, at_most)
  local quantity, exact = p.quantity, p.quantity_exact
  if at_most and not p.max_burst_exact and quantity > p.max_burst + 1 then
    p.quantity, p.quantity_exact = p.max_burst + 1, false
  end
  local err = throttle_limiter(p)
  p.quantity, p.quantity_exact = quantity, exact
  return err
end

-- Fewer units than the call's quantity, in the form its GCRA was made in, which the stored
-- TAT was read in: a smaller increment keeps every sum within that form's reach.
THROTTLE.take = function(p, quantity)
  local g = p.gcra
  p.quantity = quantity
  if g.k == INTEGERS_NUMBERS then
    g.increment = g.interval * quantity
  else
    g.increment = exact_mul(g.interval, exact_of_number(quantity))
  end
end

-- The numbers the library refuses past 2^53 − 1.
local THROTTLE_EXACT = { 'max_burst', 'count', 'period', 'quantity' }

-- FCALL cl_throttle 1 key max_burst count period [quantity] [MS] [REFUND] [DRYRUN]
local function cl_throttle(keys, args)
  if #keys ~= 1 then return redis.error_reply(ERRORS.wrong_arity('cl.throttle')) end
  local plain = throttle_plain(keys[1], args)
  if plain then return plain end
  local p, err = args_throttle(args)
  if p == nil then return redis.error_reply(err) end
  local gcra_err = throttle_made(p, p.at_most)
  if gcra_err then return redis.error_reply(gcra_err) end
  if p.block then return redis.error_reply(ERRORS.cannot_wait('cl.throttle')) end
  local inexact = args_exact_enough(p, THROTTLE_EXACT)
  if inexact then return redis.error_reply(inexact) end
  return single_run(keys[1], THROTTLE, p)
end

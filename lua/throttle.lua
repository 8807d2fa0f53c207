-- CL.THROTTLE in the library: the module's GCRA (src/gcra.rs) on the same key, a decimal
-- theoretical arrival time (TAT) in nanoseconds that expires when the limiter has drained,
-- computed in exact integers, since a TAT has 19 digits.

local THROTTLE_ONE = { neg = false, 1 }

-- The GCRA's constants (Gcra::new), or the module's error: the emission interval T, the
-- tolerance τ = T·limit, the limit (max_burst + 1), and the call's increment T·quantity.
local function throttle_gcra(p)
  local interval = exact_divmod(p.period_ns, p.count)
  if exact_cmp(interval, THROTTLE_ONE) < 0 then
    return nil, 'ERR count is too large for period: the emission interval would be under 1 ns'
  end
  local limit = exact_add(p.max_burst, THROTTLE_ONE)
  if exact_cmp(limit, ARGS_I64_MAX) > 0 then return nil, args_too_large('max_burst') end
  local tolerance = exact_mul(interval, limit)
  if exact_cmp(tolerance, ARGS_MAX_SPAN_NS) > 0 then return nil, args_too_large('max_burst') end
  local increment = exact_mul(interval, p.quantity)
  if exact_cmp(increment, exact_sub(ARGS_MAX_SPAN_NS, tolerance)) > 0 then
    return nil, args_too_large('quantity')
  end
  return { interval = interval, tolerance = tolerance, limit = limit, increment = increment }
end

-- A wait in nanoseconds in whole units, rounded up.
local function throttle_units(ns, unit_ns)
  if ns.neg then return 0 end
  return exact_tonumber(exact_ceil_div(ns, unit_ns))
end

-- Decides a call at `now` (ns) against the stored TAT: the reply, and the TAT to write.
local function throttle_decide(g, stored, now, unit_ns)
  local tat = stored and exact_max(stored, now) or now
  local new_tat = exact_add(tat, g.increment)
  if exact_cmp(new_tat, ARGS_I64_MAX) > 0 then new_tat = ARGS_I64_MAX end
  local allow_at = exact_sub(new_tat, g.tolerance)
  local function remaining(ttl)
    local room = exact_sub(g.tolerance, ttl)
    if room.neg then return 0 end
    local units = exact_divmod(room, g.interval)
    if exact_cmp(units, g.limit) > 0 then units = g.limit end
    return exact_tonumber(units)
  end
  local limit = exact_tonumber(g.limit)
  if exact_cmp(allow_at, now) > 0 then
    local ttl = exact_sub(tat, now)
    local retry = -1
    if exact_cmp(g.increment, g.tolerance) <= 0 then
      retry = throttle_units(exact_sub(allow_at, now), unit_ns)
    end
    return { 1, limit, remaining(ttl), retry, throttle_units(ttl, unit_ns) }, nil
  end
  local ttl = exact_sub(new_tat, now)
  local new = nil
  if #g.increment > 0 then new = new_tat end
  return { 0, limit, remaining(ttl), -1, throttle_units(ttl, unit_ns) }, new
end

-- REFUND: the TAT moves back by the increment, never before now.
local function throttle_refund(g, stored, now, unit_ns)
  local new = nil
  if stored and exact_cmp(stored, now) > 0 then
    local moved = exact_max(exact_sub(stored, g.increment), now)
    if exact_cmp(moved, stored) ~= 0 then new = moved end
  end
  local peek = { interval = g.interval, tolerance = g.tolerance, limit = g.limit,
    increment = { neg = false } }
  local reply = throttle_decide(peek, new or stored, now, unit_ns)
  reply[1] = 0
  reply[4] = -1
  return reply, new
end

-- The limiter of a parsed call (single.lua), or the module's error for its numbers.
local function throttle_limiter(p)
  local g, err = throttle_gcra(p)
  if g == nil then return nil, err end
  local unit_ns = ARGS_NANOS[p.unit]
  local peek = { interval = g.interval, tolerance = g.tolerance, limit = g.limit,
    increment = { neg = false } }
  return {
    read = function(key) return state_integer(key) end,
    decide = function(tat, now)
      if p.refund then return throttle_refund(g, tat, clock_ns(now), unit_ns) end
      return throttle_decide(g, tat, clock_ns(now), unit_ns)
    end,
    peek = function(tat, now) return (throttle_decide(peek, tat, clock_ns(now), unit_ns)) end,
    write = function(key, tat)
      -- Expires at the TAT, rounded up to the millisecond.
      redis.call('SET', key, exact_tostring(tat), 'PXAT', exact_tostring(exact_ceil_div(tat, ARGS_NANOS.ms)))
    end,
  }
end

-- The numbers the library refuses past 2^53 − 1.
local THROTTLE_EXACT = { 'max_burst', 'count', 'period', 'quantity' }

-- FCALL cl_throttle 1 key max_burst count period [quantity] [MS] [REFUND] [DRYRUN]
local function cl_throttle(keys, args)
  if #keys ~= 1 then return redis.error_reply(args_wrong_arity('cl.throttle')) end
  local p, err = args_throttle(args)
  if p == nil then return redis.error_reply(err) end
  local limiter, gcra_err = throttle_limiter(p)
  if limiter == nil then return redis.error_reply(gcra_err) end
  if p.block then return redis.error_reply(args_cannot_wait('cl.throttle')) end
  local inexact = args_exact_enough(p, THROTTLE_EXACT)
  if inexact then return redis.error_reply(inexact) end
  return single_run(keys[1], limiter, p.dry_run)
end

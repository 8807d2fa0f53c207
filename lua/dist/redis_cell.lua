#!lua name=redis_cell
-- Generated from lua/*.lua by scripts/lua_forms.py: edit those, not this.

-- Exact integers for the library (docs/without-the-module.md, once it lands): the module
-- keeps a GCRA's TAT as 19 decimal digits of nanoseconds and multiplies periods by
-- quantities, and a Lua number, a double, holds integers exactly only up to 2^53. An exact
-- integer is a table of limbs of 10^7, least significant first, with no zero limb on top
-- (zero has none), and `neg`; a product of two limbs and a carry stays below 2^53.

local EXACT_BASE = 10000000
local EXACT_DIGITS = 7
local EXACT_I64_MAX = '9223372036854775807'
local EXACT_I64_MIN = '9223372036854775808'

-- a without its zero limbs on top; zero is never negative.
local function exact_trim(a)
  local n = #a
  while n > 0 and a[n] == 0 do
    a[n] = nil
    n = n - 1
  end
  if n == 0 then a.neg = false end
  return a
end

-- The limbs of a string of decimal digits with no sign (no check).
local function exact_of_digits(digits, neg)
  local a = { neg = neg }
  local i = 1
  for stop = #digits, 1, -EXACT_DIGITS do
    local start = stop - EXACT_DIGITS + 1
    if start < 1 then start = 1 end
    a[i] = tonumber(string.sub(digits, start, stop))
    i = i + 1
  end
  return exact_trim(a)
end

-- Reads an integer as Redis's string2ll does, where Lua's tonumber would also take "0x10",
-- "1e3" and " 5": an optional '-', digits with no leading zero, no sign on zero, and a value
-- that fits in 64 bits. nil for anything else.
local function exact_parse(text)
  if type(text) ~= 'string' then return nil end
  local neg = string.sub(text, 1, 1) == '-'
  local digits = neg and string.sub(text, 2) or text
  if digits == '0' then
    if neg then return nil end
    return { neg = false }
  end
  if #digits > 19 or not string.find(digits, '^[1-9][0-9]*$') then return nil end
  -- Of equal length, digit strings compare as their values.
  if #digits == 19 and digits > (neg and EXACT_I64_MIN or EXACT_I64_MAX) then return nil end
  return exact_of_digits(digits, neg)
end

-- An integer-valued double, any size: its exact decimal, which C's printf gives.
local function exact_of_number(x)
  local text = string.format('%.0f', x)
  if string.sub(text, 1, 1) == '-' then return exact_of_digits(string.sub(text, 2), true) end
  return exact_of_digits(text, false)
end

local function exact_tostring(a)
  local n = #a
  if n == 0 then return '0' end
  local parts = { a.neg and '-' or '', string.format('%d', a[n]) }
  for i = n - 1, 1, -1 do
    parts[#parts + 1] = string.format('%07d', a[i])
  end
  return table.concat(parts)
end

-- The nearest double: exact up to 2^53, for replies and estimates.
local function exact_tonumber(a)
  local x = 0
  for i = #a, 1, -1 do
    x = x * EXACT_BASE + a[i]
  end
  return a.neg and -x or x
end

local function exact_mag_cmp(a, b)
  if #a ~= #b then return #a < #b and -1 or 1 end
  for i = #a, 1, -1 do
    if a[i] ~= b[i] then return a[i] < b[i] and -1 or 1 end
  end
  return 0
end

-- -1, 0 or 1 as a is below, equal to or above b.
local function exact_cmp(a, b)
  if a.neg ~= b.neg then return a.neg and -1 or 1 end
  local c = exact_mag_cmp(a, b)
  return a.neg and -c or c
end

local function exact_mag_add(a, b, neg)
  local r = { neg = neg }
  local carry = 0
  for i = 1, math.max(#a, #b) do
    local s = (a[i] or 0) + (b[i] or 0) + carry
    if s >= EXACT_BASE then
      r[i] = s - EXACT_BASE
      carry = 1
    else
      r[i] = s
      carry = 0
    end
  end
  if carry > 0 then r[#r + 1] = carry end
  return r
end

-- |a| - |b|, for |a| >= |b|.
local function exact_mag_sub(a, b, neg)
  local r = { neg = neg }
  local borrow = 0
  for i = 1, #a do
    local d = a[i] - (b[i] or 0) - borrow
    if d < 0 then
      r[i] = d + EXACT_BASE
      borrow = 1
    else
      r[i] = d
      borrow = 0
    end
  end
  return exact_trim(r)
end

local function exact_add(a, b)
  if a.neg == b.neg then return exact_mag_add(a, b, a.neg) end
  if exact_mag_cmp(a, b) >= 0 then return exact_mag_sub(a, b, a.neg) end
  return exact_mag_sub(b, a, b.neg)
end

local function exact_neg(a)
  local r = { neg = #a > 0 and not a.neg }
  for i = 1, #a do r[i] = a[i] end
  return r
end

local function exact_sub(a, b)
  return exact_add(a, exact_neg(b))
end

local function exact_mul(a, b)
  if #a == 0 or #b == 0 then return { neg = false } end
  local r = { neg = a.neg ~= b.neg }
  for i = 1, #a + #b do r[i] = 0 end
  for i = 1, #a do
    local carry = 0
    local ai = a[i]
    for j = 1, #b do
      local t = r[i + j - 1] + ai * b[j] + carry
      carry = math.floor(t / EXACT_BASE)
      r[i + j - 1] = t - carry * EXACT_BASE
    end
    local k = i + #b
    while carry > 0 do
      local t = r[k] + carry
      carry = math.floor(t / EXACT_BASE)
      r[k] = t - carry * EXACT_BASE
      k = k + 1
    end
  end
  return exact_trim(r)
end

-- a / b truncated toward zero, as the module's integer division, and the remainder (with
-- a's sign); b must not be zero. Each round takes the quotient of the two as doubles, close
-- to the true one but for rounding, and corrects the remainder by it, down or up, until it
-- lies in [0, |b|): two or three rounds.
local function exact_divmod(a, b)
  local r = { neg = false }
  for i = 1, #a do r[i] = a[i] end
  local d = { neg = false }
  for i = 1, #b do d[i] = b[i] end
  local q = { neg = false }
  local divisor = exact_tonumber(d)
  while r.neg or exact_mag_cmp(r, d) >= 0 do
    local estimate = math.floor(exact_tonumber(r) / divisor)
    if estimate == 0 then estimate = r.neg and -1 or 1 end
    local step = exact_of_number(estimate)
    q = exact_add(q, step)
    r = exact_sub(r, exact_mul(step, d))
  end
  if #q > 0 then q.neg = a.neg ~= b.neg end
  if #r > 0 then r.neg = a.neg end
  return q, r
end

local function exact_max(a, b)
  if exact_cmp(a, b) >= 0 then return a end
  return b
end

-- a / b rounded up, for a >= 0 and b > 0.
local function exact_ceil_div(a, b)
  local q, r = exact_divmod(a, b)
  if #r > 0 then q = exact_add(q, { neg = false, 1 }) end
  return q
end

-- The module's argument grammar (src/args.rs) and its error texts (src/error.rs), in the
-- order the module checks them, so that the library refuses what the module refuses with
-- the same words. A parser answers its arguments, or nil and the error's text.

-- Constants as limbs of 10^7, least significant first: FUNCTION LOAD runs a library's top
-- level with almost no globals (no type, string or tonumber), so nothing is parsed here.
-- 2^62 ns (4611686018427387904): every span and instant the module accepts lies within it.
local ARGS_MAX_SPAN_NS = { neg = false, 7387904, 8601842, 46116 }
local ARGS_NANOS = { s = { neg = false, 0, 100 }, ms = { neg = false, 1000000 } }
-- The library's numbers are doubles: integers past 2^53 − 1 (9007199254740991) would be
-- rounded.
local ARGS_LIBRARY_MAX = { neg = false, 4740991, 719925, 90 }
-- 9223372036854775807, past which the module's 64-bit arithmetic overflows.
local ARGS_I64_MAX = { neg = false, 4775807, 7203685, 92233 }
-- The module reads at most 12 arguments, the command's name and the key among them.
local ARGS_MAX_AFTER_KEY = 10

-- The module's TooLarge: the named argument makes the limiter's time arithmetic overflow.
local function args_too_large(name)
  return 'ERR ' .. name .. ' is too large: the limiter\'s time span would overflow'
end

local function args_wrong_arity(command)
  return "ERR wrong number of arguments for '" .. command .. "' command"
end

-- An integer no smaller than min (a Lua number), as exact.
local function args_integer(text, name, min)
  local value = exact_parse(text)
  if value == nil then return nil, 'ERR ' .. name .. ' is not an integer or out of range' end
  if exact_cmp(value, exact_of_number(min)) < 0 then
    return nil, 'ERR ' .. name .. ' must be >= ' .. min
  end
  return value
end

-- A span of at least 1 in this unit ('s' or 'ms'), within 2^62 ns.
local function args_span(text, name, unit)
  local span, err = args_integer(text, name, 1)
  if span == nil then return nil, err end
  if exact_cmp(exact_mul(span, ARGS_NANOS[unit]), ARGS_MAX_SPAN_NS) > 0 then
    return nil, args_too_large(name)
  end
  return span
end

local ARGS_FLAGS = { MS = 'ms', REFUND = 'refund', DRYRUN = 'dry_run', COUNTDENIED = 'count_denied' }

local function args_flag(word)
  return ARGS_FLAGS[string.upper(word)]
end

-- `[quantity] [MS] [REFUND] [DRYRUN]`, and `[COUNTDENIED]` where the command counts denials:
-- a quantity first if any, then the flags in any order, each once.
local function args_tail(tail, command, counts_denied)
  local parsed = { quantity = { neg = false, 1 }, unit = 's' }
  if #tail == 0 then return parsed end
  if #tail == 1 and string.find(tail[1], '^%d') then
    local quantity, err = args_integer(tail[1], 'quantity', 0)
    if quantity == nil then return nil, err end
    parsed.quantity = quantity
    return parsed
  end
  local flags_taken = counts_denied and 4 or 3
  if #tail > 1 + flags_taken then return nil, args_wrong_arity(command) end
  local first = 1
  local quantity_text
  if args_flag(tail[1]) == nil then
    quantity_text = tail[1]
    first = 2
  end
  for i = first, #tail do
    local flag = args_flag(tail[i])
    if flag == nil or parsed[flag] then return nil, 'ERR syntax error' end
    parsed[flag] = true
  end
  if quantity_text ~= nil then
    local quantity, err = args_integer(quantity_text, 'quantity', 0)
    if quantity == nil then return nil, err end
    parsed.quantity = quantity
  end
  if parsed.count_denied and not counts_denied then return nil, 'ERR syntax error' end
  if parsed.ms then parsed.unit = 'ms' end
  return parsed
end

-- The library refuses what it cannot keep exact, once the module's own checks pass.
local function args_exact_enough(parsed, names)
  for i = 1, #names do
    local value = parsed[names[i]]
    if exact_cmp(value, ARGS_LIBRARY_MAX) > 0 then
      return 'ERR ' .. names[i] .. ' is too large for the library'
    end
  end
  return nil
end

-- The longest BLOCK the module takes, in ms: 2^62 ns (4611686018427).
local ARGS_MAX_BLOCK_MS = { neg = false, 6018427, 461168 }

-- A trailing `BLOCK timeout`, read as the module reads it before anything else (args::block):
-- how many arguments come before it, and whether it was there; or the timeout's error.
local function args_block(args)
  local n = #args
  if n >= 2 and string.upper(args[n - 1]) == 'BLOCK' then
    local timeout, err = args_integer(args[n], 'timeout', 0)
    if timeout == nil then return nil, nil, err end
    if exact_cmp(timeout, ARGS_MAX_BLOCK_MS) > 0 then
      return nil, nil, 'ERR timeout must be <= 4611686018427'
    end
    return n - 2, true
  end
  return n, false
end

-- What the module answers to BLOCK beside a flag that never waits (never_waits).
local function args_never_waits(parsed)
  if not parsed.block then return nil end
  for _, flag in ipairs({ { 'refund', 'REFUND' }, { 'dry_run', 'DRYRUN' }, { 'count_denied', 'COUNTDENIED' } }) do
    if parsed[flag[1]] then
      return 'ERR ' .. flag[2] .. ' and BLOCK options at the same time are not compatible: a call with ' .. flag[2] .. ' never waits'
    end
  end
  return nil
end

-- A BLOCK the module would take: it waits; the library cannot.
local function args_cannot_wait(command)
  return 'ERR ' .. command .. ' cannot wait in the library: BLOCK needs the redis-cell module'
end

-- CL.FIXED's arguments after the key: `limit period [quantity] [MS] [REFUND] [DRYRUN]
-- [COUNTDENIED] [BLOCK timeout]`; its replication form's `AT unix-ms` is the module's, and
-- refused.
local function args_fixed(args)
  local command = 'cl.fixed'
  if #args < 2 or #args > ARGS_MAX_AFTER_KEY then return nil, args_wrong_arity(command) end
  local n, block, block_err = args_block(args)
  if n == nil then return nil, block_err end
  local at = false
  if n >= 2 and string.upper(args[n - 1]) == 'AT' then
    local instant, at_err = args_integer(args[n], 'AT', 0)
    if instant == nil then return nil, at_err end
    if exact_cmp(exact_mul(instant, ARGS_NANOS.ms), ARGS_MAX_SPAN_NS) > 0 then
      return nil, args_too_large('AT')
    end
    at = true
    n = n - 2
  end
  if n < 2 then return nil, args_wrong_arity(command) end
  local tail = {}
  for i = 3, n do tail[#tail + 1] = args[i] end
  local parsed, tail_err = args_tail(tail, command, true)
  if parsed == nil then return nil, tail_err end
  local limit, limit_err = args_integer(args[1], 'limit', 1)
  if limit == nil then return nil, limit_err end
  local period, period_err = args_span(args[2], 'period', parsed.unit)
  if period == nil then return nil, period_err end
  parsed.block = block
  local never = args_never_waits(parsed)
  if never then return nil, never end
  if at then return nil, 'ERR AT is accepted only from the replication stream or the AOF' end
  if block then return nil, args_cannot_wait(command) end
  parsed.limit = limit
  parsed.period = period
  local inexact = args_exact_enough(parsed, { 'limit', 'quantity' })
  if inexact then return nil, inexact end
  return parsed
end

-- CL.THROTTLE's arguments after the key: `max_burst count period [quantity] [MS] [REFUND]
-- [DRYRUN] [BLOCK timeout]`, the period in nanoseconds as `period_ns`. A BLOCK the module
-- would take is `block`, refused by the caller once the module's own checks pass.
local function args_throttle(args)
  local command = 'cl.throttle'
  if #args < 3 or #args > ARGS_MAX_AFTER_KEY then return nil, args_wrong_arity(command) end
  local n, block, block_err = args_block(args)
  if n == nil then return nil, block_err end
  if n < 3 then return nil, args_wrong_arity(command) end
  local tail = {}
  for i = 4, n do tail[#tail + 1] = args[i] end
  local parsed, tail_err = args_tail(tail, command, false)
  if parsed == nil then return nil, tail_err end
  local names = { 'max_burst', 'count', 'period' }
  local mins = { 0, 1, 1 }
  for i = 1, 3 do
    local value, value_err = args_integer(args[i], names[i], mins[i])
    if value == nil then return nil, value_err end
    parsed[names[i]] = value
  end
  parsed.period_ns = exact_mul(parsed.period, ARGS_NANOS[parsed.unit])
  if exact_cmp(parsed.period_ns, ARGS_I64_MAX) > 0 then
    return nil, args_too_large('period')
  end
  parsed.block = block
  local never = args_never_waits(parsed)
  if never then return nil, never end
  return parsed
end

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

-- A limiter's key read as the module reads it (src/store.rs): absent, an integer, or the
-- error the module answers for another type or a string that is not one.

local STATE_WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
local STATE_CORRUPT = 'ERR the value at this key is not a valid state for this command'

-- The key's integer (exact), nil for no key, or nil and the error.
local function state_integer(key)
  local kind = redis.call('TYPE', key)['ok']
  if kind == 'none' then return nil end
  if kind ~= 'string' then return nil, STATE_WRONGTYPE end
  -- No 64-bit integer takes more than 20 bytes: a longer value is not read whole.
  if redis.call('STRLEN', key) > 20 then return nil, STATE_CORRUPT end
  local value = exact_parse(redis.call('GET', key))
  if value == nil then return nil, STATE_CORRUPT end
  return value
end

-- The key's absolute expiry in ms, or -1 for none. Redis 6.2 has no PEXPIRETIME: there it is
-- now plus PTTL, which can read a millisecond off where the two straddle one.
local function state_expire_at_ms(key, now_ms)
  if redis.REDIS_VERSION_NUM then return redis.call('PEXPIRETIME', key) end
  local ttl = redis.call('PTTL', key)
  if ttl < 0 then return ttl end
  return now_ms + ttl
end

-- CL.FIXED in the library: the module's fixed window (src/fixed.rs) on the same key, a
-- decimal count whose expiry is the window's end, read, decided and written as the module
-- does, so that a key carries over either way. Counts are exact (a key may hold any 64-bit
-- count); the limit, the quantity and the instants are doubles, exact below 2^53.

local FIXED_ZERO = { neg = false }
-- Where the module's count saturates.
local FIXED_COUNT_MAX = ARGS_I64_MAX

-- The key's window: nil when there is none, or the error the module answers: a count is
-- never negative, and a window always ends.
local function fixed_read(key, now_ms)
  local count, err = state_integer(key)
  if count == nil then return nil, err end
  local end_ms = state_expire_at_ms(key, now_ms)
  if count.neg or end_ms < 0 then return nil, STATE_CORRUPT end
  return { count = count, end_ms = end_ms }
end

-- The five integers, the waits rounded up to whole units as the module rounds them.
local function fixed_reply(limited, limit, remaining, retry_ms, reset_ms, unit)
  local function rounded(ms)
    -- The module counts the wait in 64-bit nanoseconds, saturating: an expiry someone set
    -- centuries away answers i64::MAX ns.
    if ms > 9223372036854 then return unit == 'ms' and 9223372036855 or 9223372037 end
    if unit == 'ms' then return ms end
    return math.floor((ms + 999) / 1000)
  end
  if remaining < 0 then remaining = 0 end
  return { limited and 1 or 0, limit, remaining, retry_ms and rounded(retry_ms) or -1, rounded(reset_ms) }
end

-- The limit left over a count (0 past the limit), as a number.
local function fixed_left(p, count)
  if exact_cmp(count, p.limit_exact) >= 0 then return 0 end
  return p.limit - exact_tonumber(count)
end

-- Decides a call at now_ms against the stored window: the reply, and the window to write
-- (with `opens` when its end is new), if any.
local function fixed_decide(p, stored, now_ms)
  local open = nil
  if stored and now_ms < stored.end_ms then open = stored end
  local count = open and open.count or FIXED_ZERO
  local function wait(window) return window and window.end_ms - now_ms or 0 end
  local end_ms = open and open.end_ms or now_ms + p.period_ms
  local wanted = exact_add(count, p.quantity)
  if exact_cmp(wanted, p.limit_exact) <= 0 then
    local new
    if p.quantity_n > 0 then new = { count = wanted, end_ms = end_ms } end
    local after = new or open
    return fixed_reply(false, p.limit, p.limit - exact_tonumber(wanted), nil, wait(after), p.unit), new
  end
  local new
  if p.count_denied and p.quantity_n > 0 then
    if exact_cmp(wanted, FIXED_COUNT_MAX) > 0 then wanted = FIXED_COUNT_MAX end
    new = { count = wanted, end_ms = end_ms }
  end
  local after = new or open
  local retry = nil
  if open and p.quantity_n <= p.limit then retry = wait(open) end
  local reply = fixed_reply(true, p.limit, fixed_left(p, after and after.count or FIXED_ZERO),
    retry, wait(after), p.unit)
  if new and open and exact_cmp(new.count, open.count) == 0 and new.end_ms == open.end_ms then
    new = nil
  end
  return reply, new
end

-- REFUND: the open window's count drops by the quantity, never below 0; 0 clears the key.
local function fixed_refund(p, stored, now_ms)
  local new
  if stored and now_ms < stored.end_ms and #stored.count > 0 and p.quantity_n > 0 then
    local count = exact_sub(stored.count, p.quantity)
    if count.neg then count = FIXED_ZERO end
    new = { count = count, end_ms = stored.end_ms }
  end
  local left = stored
  if new then left = #new.count > 0 and new or nil end
  local peek = { limit = p.limit, limit_exact = p.limit_exact, period_ms = p.period_ms, quantity = FIXED_ZERO, quantity_n = 0,
    count_denied = p.count_denied, unit = p.unit }
  local reply = fixed_decide(peek, left, now_ms)
  reply[1] = 0
  reply[4] = -1
  return reply, new
end

-- FCALL cl_fixed 1 key limit period [quantity] [MS] [REFUND] [DRYRUN] [COUNTDENIED]
local function cl_fixed(keys, args)
  if #keys ~= 1 then return redis.error_reply(args_wrong_arity('cl.fixed')) end
  local p, err = args_fixed(args)
  if p == nil then return redis.error_reply(err) end
  -- The limit both ways: exact to compare with counts, a number to answer.
  p.limit_exact = p.limit
  p.limit = exact_tonumber(p.limit)
  p.quantity_n = exact_tonumber(p.quantity)
  p.period_ms = exact_tonumber(p.period) * (p.unit == 'ms' and 1 or 1000)
  local key = keys[1]
  local now_ms = clock_now_ms()
  local stored, read_err = fixed_read(key, now_ms)
  if read_err then return redis.error_reply(read_err) end
  local reply, new
  if p.refund then
    reply, new = fixed_refund(p, stored, now_ms)
  else
    reply, new = fixed_decide(p, stored, now_ms)
  end
  if new and not p.dry_run then
    if #new.count == 0 then
      redis.call('DEL', key)
    elseif stored == nil or stored.end_ms ~= new.end_ms or now_ms >= stored.end_ms then
      redis.call('SET', key, exact_tostring(new.count), 'PXAT', new.end_ms)
    else
      redis.call('SET', key, exact_tostring(new.count), 'KEEPTTL')
    end
  end
  return reply
end

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

-- FCALL cl_throttle 1 key max_burst count period [quantity] [MS] [REFUND] [DRYRUN]
local function cl_throttle(keys, args)
  if #keys ~= 1 then return redis.error_reply(args_wrong_arity('cl.throttle')) end
  local p, err = args_throttle(args)
  if p == nil then return redis.error_reply(err) end
  local g, gcra_err = throttle_gcra(p)
  if g == nil then return redis.error_reply(gcra_err) end
  if p.block then return redis.error_reply(args_cannot_wait('cl.throttle')) end
  local inexact = args_exact_enough(p, { 'max_burst', 'count', 'period', 'quantity' })
  if inexact then return redis.error_reply(inexact) end
  local key = keys[1]
  local stored, read_err = state_integer(key)
  if read_err then return redis.error_reply(read_err) end
  local now = clock_now_ns()
  local unit_ns = ARGS_NANOS[p.unit]
  local reply, new
  if p.refund then
    reply, new = throttle_refund(g, stored, now, unit_ns)
  else
    reply, new = throttle_decide(g, stored, now, unit_ns)
  end
  if new and not p.dry_run then
    -- Expires at the TAT, rounded up to the millisecond.
    redis.call('SET', key, exact_tostring(new), 'PXAT', exact_tostring(exact_ceil_div(new, ARGS_NANOS.ms)))
  end
  return reply
end

-- The library's functions, as the generated forms register them (scripts/lua_forms.py): by
-- name, with the flags the module's commands have. Each entry's callback takes the keys and
-- the arguments, as FCALL hands them.

local CELL_VERSION = '0.1.0'

-- The library's version, which a client compares with its own before it calls (FCALL_RO).
local function cl_version(keys, args)
  return CELL_VERSION
end

-- The script form's answer to a name it has no function for.
local function cell_unknown(name)
  return redis.error_reply('ERR the library has no function ' .. tostring(name))
end

local CELL_FUNCTIONS = {
  { name = 'cl_version', callback = cl_version, flags = { 'no-writes' } },
  { name = 'cl_throttle', callback = cl_throttle, flags = {} },
  { name = 'cl_fixed', callback = cl_fixed, flags = {} },
}

for i = 1, #CELL_FUNCTIONS do
  local f = CELL_FUNCTIONS[i]
  redis.register_function{ function_name = f.name, callback = f.callback, flags = f.flags }
end

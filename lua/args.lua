-- The module's argument grammar (src/args.rs) and its error texts (src/error.rs), in the
-- order the module checks them, so that the library refuses what the module refuses with
-- the same words. A parser answers its arguments, or nil and the error's text.
--
-- Numbers come back as Lua numbers, exact up to 2^53 − 1 and rounded past it: the module's
-- bounds lie below 2^53, so a rounded number still compares with them as its value does,
-- and the library refuses what it cannot keep exact. Only GCRA's numbers may be used past
-- 2^53 (throttle.lua): those keep their exact value too, as `<name>_exact`.

-- Constants as limbs of 10^7, least significant first: FUNCTION LOAD runs a library's top
-- level with almost no globals (no type, string or tonumber), so nothing is parsed here.
-- 2^62 ns (4611686018427387904): every span and instant the module accepts lies within it.
local ARGS_MAX_SPAN_NS = { neg = false, 7387904, 8601842, 46116 }
local ARGS_NANOS = { s = { neg = false, 0, 100 }, ms = { neg = false, 1000000 } }
-- The library's numbers are doubles: integers past 2^53 − 1 would be rounded.
local ARGS_LIBRARY_MAX = 9007199254740991
-- The longest span the module takes, 2^62 ns, in whole units.
local ARGS_MAX_SPAN = { s = 4611686018, ms = 4611686018427 }
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

-- An integer no smaller than min, as a number, and as exact when it is past 2^53 − 1; or nil
-- and the error.
local function args_integer(text, name, min)
  local x = exact_small(text)
  local exact = nil
  if x == nil then
    local value = exact_parse(text)
    if value == nil then return nil, 'ERR ' .. name .. ' is not an integer or out of range' end
    x = exact_tonumber(value)
    if x > ARGS_LIBRARY_MAX then exact = value end
  end
  if x < min then return nil, 'ERR ' .. name .. ' must be >= ' .. min end
  return x, exact
end

-- A span of at least 1 in this unit ('s' or 'ms'), within 2^62 ns.
local function args_span(text, name, unit)
  local span, err = args_integer(text, name, 1)
  if span == nil then return nil, err end
  if span > ARGS_MAX_SPAN[unit] then return nil, args_too_large(name) end
  return span
end

-- A span as args_span reads it, in milliseconds (args::span_ms).
local function args_span_ms(text, name, unit)
  local span, err = args_span(text, name, unit)
  if span == nil then return nil, err end
  return span * (unit == 'ms' and 1 or 1000)
end

local ARGS_FLAGS = { MS = 'ms', REFUND = 'refund', DRYRUN = 'dry_run', COUNTDENIED = 'count_denied' }

local function args_flag(word)
  return ARGS_FLAGS[string.upper(word)]
end

-- `[quantity] [MS] [REFUND] [DRYRUN]`, and `[COUNTDENIED]` where the command counts denials:
-- a quantity first if any, then the flags in any order, each once.
local function args_tail(tail, command, counts_denied)
  -- Every field the parsers set, made at once rather than grown.
  local parsed = { quantity = 1, quantity_exact = false, unit = 's', ms = false, refund = false,
    dry_run = false, count_denied = false, block = false, limit = false, period_ms = false,
    buckets = false, max_burst = false, max_burst_exact = false, count = false,
    count_exact = false, period = false, gcra = false }
  if #tail == 0 then return parsed end
  if #tail == 1 and string.find(tail[1], '^%d') then
    local quantity, exact = args_integer(tail[1], 'quantity', 0)
    if quantity == nil then return nil, exact end
    parsed.quantity, parsed.quantity_exact = quantity, exact
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
    local quantity, exact = args_integer(quantity_text, 'quantity', 0)
    if quantity == nil then return nil, exact end
    parsed.quantity, parsed.quantity_exact = quantity, exact
  end
  if parsed.count_denied and not counts_denied then return nil, 'ERR syntax error' end
  if parsed.ms then parsed.unit = 'ms' end
  return parsed
end

-- The library refuses what it cannot keep exact, once the module's own checks pass.
local function args_inexact(name)
  return 'ERR ' .. name .. ' is too large for the library'
end

local function args_exact_enough(parsed, names)
  for i = 1, #names do
    if parsed[names[i]] > ARGS_LIBRARY_MAX then return args_inexact(names[i]) end
  end
  return nil
end

-- The names a window's call holds to args_exact_enough.
local ARGS_WINDOW_EXACT = { 'limit', 'quantity' }

-- BLOCK's timeout's error, if it has one (args::block_timeout): at most 2^62 ns.
local function args_block_timeout(text)
  local timeout, err = args_integer(text, 'timeout', 0)
  if timeout == nil then return err end
  if timeout > ARGS_MAX_SPAN.ms then return 'ERR timeout must be <= 4611686018427' end
  return nil
end

-- A trailing `BLOCK timeout`, read as the module reads it before anything else (args::block):
-- how many arguments come before it, and whether it was there; or the timeout's error.
local function args_block(args)
  local n = #args
  if n >= 2 and #args[n - 1] == 5 and string.upper(args[n - 1]) == 'BLOCK' then
    local err = args_block_timeout(args[n])
    if err then return nil, nil, err end
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

-- A BLOCK among options read in any order (CL.LEASE, CL.SMOOTH): its timeout's error, or
-- the one for BLOCK beside DRYRUN; nil when the module would wait.
local function args_block_option(timeout_text, dry_run)
  local err = args_block_timeout(timeout_text)
  if err then return err end
  if dry_run then return args_never_waits({ block = true, dry_run = true }) end
  return nil
end

-- A BLOCK the module would take: it waits; the library cannot.
local function args_cannot_wait(command)
  return 'ERR ' .. command .. ' cannot wait in the library: BLOCK needs the redis-cell module'
end

local function args_is_buckets(word)
  return string.upper(word) == 'BUCKETS'
end

-- CL.WINDOW's tail: the single-key commands' tail, with `BUCKETS n` among its flags; n's
-- text comes back too, read once the period is known (args::sliding_tail).
local function args_sliding_tail(tail, command)
  local n = #tail
  if n == 0 or (n == 1 and string.find(tail[1], '^%d')) then return args_tail(tail, command, false) end
  local at = nil
  for i = 1, n do
    if args_is_buckets(tail[i]) then
      at = i
      break
    end
  end
  -- Most calls that name the cells name them last, once: what comes before is a plain tail.
  if at ~= nil and at == n - 1 and n - 2 <= 4 then
    local parsed, err = args_tail({ unpack(tail, 1, n - 2) }, command, false)
    if parsed == nil then return nil, err end
    return parsed, tail[n]
  end
  if at == nil then return args_tail(tail, command, false) end
  -- A quantity, the three flags, and BUCKETS with its value.
  if n > 6 then return nil, args_wrong_arity(command) end
  if at + 1 > n then return nil, 'ERR syntax error' end
  local rest = {}
  for i = 1, n do
    if i ~= at and i ~= at + 1 then rest[#rest + 1] = tail[i] end
  end
  -- The quantity comes first: BUCKETS n before it is out of place.
  if at == 1 and rest[1] and args_flag(rest[1]) == nil then return nil, 'ERR syntax error' end
  local parsed, err = args_tail(rest, command, false)
  if parsed == nil then return nil, err end
  return parsed, tail[at + 1]
end

-- `BUCKETS n`'s count of cells, which must cut the period into whole milliseconds.
local function args_bucket_count(text, period_ms)
  local n, err = args_integer(text, 'BUCKETS', 2)
  if n == nil then return nil, err end
  if n > 1024 then return nil, 'ERR BUCKETS must be <= 1024' end
  if period_ms % n ~= 0 then return nil, 'ERR period must be a multiple of BUCKETS, in milliseconds' end
  return n
end

-- `limit period` in the parsed tail's unit (args::limit_and_period): the limit and
-- `period_ms`; or the error.
local function args_limit_and_period(parsed, limit_text, period_text)
  local limit, limit_err = args_integer(limit_text, 'limit', 1)
  if limit == nil then return limit_err end
  local period_ms, period_err = args_span_ms(period_text, 'period', parsed.unit)
  if period_ms == nil then return period_err end
  parsed.limit = limit
  parsed.period_ms = period_ms
  return nil
end

-- A window command's arguments after the key: `limit period [quantity] [MS] [REFUND]
-- [DRYRUN] [BLOCK timeout]`, with `[COUNTDENIED]` for CL.FIXED and `[BUCKETS n]` for
-- CL.WINDOW (`sliding`), with the period as `period_ms`. The replication form's
-- `AT unix-ms` is the module's, and refused.
local function args_window(args, command, sliding)
  if #args < 2 or #args > ARGS_MAX_AFTER_KEY then return nil, args_wrong_arity(command) end
  local n, block, block_err = args_block(args)
  if n == nil then return nil, block_err end
  local at = false
  if n >= 2 and #args[n - 1] == 2 and string.upper(args[n - 1]) == 'AT' then
    local instant, at_err = args_integer(args[n], 'AT', 0)
    if instant == nil then return nil, at_err end
    if instant > ARGS_MAX_SPAN.ms then return nil, args_too_large('AT') end
    at = true
    n = n - 2
  end
  if n < 2 then return nil, args_wrong_arity(command) end
  local tail = {}
  for i = 3, n do tail[#tail + 1] = args[i] end
  local parsed, tail_err, buckets
  if sliding then
    parsed, tail_err = args_sliding_tail(tail, command)
    buckets = tail_err
  else
    parsed, tail_err = args_tail(tail, command, true)
  end
  if parsed == nil then return nil, tail_err end
  local numbers_err = args_limit_and_period(parsed, args[1], args[2])
  if numbers_err then return nil, numbers_err end
  if buckets then
    local cells, cells_err = args_bucket_count(buckets, parsed.period_ms)
    if cells == nil then return nil, cells_err end
    parsed.buckets = cells
  end
  parsed.block = block
  local never = args_never_waits(parsed)
  if never then return nil, never end
  if at then return nil, 'ERR AT is accepted only from the replication stream or the AOF' end
  if block then return nil, args_cannot_wait(command) end
  local inexact = args_exact_enough(parsed, ARGS_WINDOW_EXACT)
  if inexact then return nil, inexact end
  return parsed
end

-- The longest period GCRA takes, i64::MAX ns, in whole units.
local ARGS_MAX_PERIOD = { s = 9223372036, ms = 9223372036854 }

-- `max_burst count period` in the parsed tail's unit (args::throttle_params), with
-- `max_burst_exact` and `count_exact` (the period is below 2^53); or the error.
local function args_throttle_params(parsed, max_burst, count, period)
  local value, exact = args_integer(max_burst, 'max_burst', 0)
  if value == nil then return exact end
  parsed.max_burst, parsed.max_burst_exact = value, exact
  value, exact = args_integer(count, 'count', 1)
  if value == nil then return exact end
  parsed.count, parsed.count_exact = value, exact
  value, exact = args_integer(period, 'period', 1)
  if value == nil then return exact end
  if value > ARGS_MAX_PERIOD[parsed.unit] then return args_too_large('period') end
  parsed.period = value
  return nil
end

-- CL.THROTTLE's arguments after the key: `max_burst count period [quantity] [MS] [REFUND]
-- [DRYRUN] [BLOCK timeout]`, the period in the call's unit. A BLOCK the module
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
  local numbers_err = args_throttle_params(parsed, args[1], args[2], args[3])
  if numbers_err then return nil, numbers_err end
  parsed.block = block
  local never = args_never_waits(parsed)
  if never then return nil, never end
  return parsed
end

local function args_bad_option(command, position)
  return "ERR syntax error: argument " .. position .. " of '" .. command
    .. "' is not one of its options, repeats one, or lacks its value"
end

-- A holder's name: 1 to 255 bytes, any bytes.
local function args_holder(holder)
  if #holder < 1 or #holder > 255 then return nil, 'ERR holder must be 1 to 255 bytes' end
  return holder
end

-- `AT unix-ms`, which only the module's replication stream sends: its errors, or the
-- refusal every client call with it gets.
local function args_at(text)
  local instant, err = args_integer(text, 'AT', 0)
  if instant == nil then return err end
  if instant > ARGS_MAX_SPAN.ms then return args_too_large('AT') end
  return 'ERR AT is accepted only from the replication stream or the AOF'
end

-- `limit lease_time` in the parsed unit (args::lease_params): the limit and `lease_ms`; or
-- the error.
local function args_lease_params(parsed, limit_text, time_text)
  local limit, limit_err = args_integer(limit_text, 'limit', 1)
  if limit == nil then return limit_err end
  local lease_ms, time_err = args_span_ms(time_text, 'lease_time', parsed.unit)
  if lease_ms == nil then return time_err end
  parsed.limit = limit
  parsed.lease_ms = lease_ms
  return nil
end

-- The names a lease's call holds to args_exact_enough.
local ARGS_LEASE_EXACT = { 'limit' }

-- CL.LEASE's arguments after the key: `limit lease_time holder [MS] [DRYRUN] [BLOCK timeout]`,
-- the options in any order, each once (args::lease). The lease time comes back in ms.
local function args_lease(args)
  local command = 'cl.lease'
  if #args < 3 or #args > ARGS_MAX_AFTER_KEY then return nil, args_wrong_arity(command) end
  local seen = {}
  local i = 4
  while i <= #args do
    local word = string.upper(args[i])
    local takes_value = word == 'AT' or word == 'BLOCK'
    local known = word == 'MS' or word == 'DRYRUN' or takes_value
    if not known or seen[word] or (takes_value and i + 1 > #args) then
      return nil, args_bad_option(command, i + 1)
    end
    seen[word] = i
    i = i + (takes_value and 2 or 1)
  end
  local parsed = { unit = seen.MS and 'ms' or 's', dry_run = seen.DRYRUN ~= nil }
  local numbers_err = args_lease_params(parsed, args[1], args[2])
  if numbers_err then return nil, numbers_err end
  local holder, holder_err = args_holder(args[3])
  if holder == nil then return nil, holder_err end
  local at_err = seen.AT and args_at(args[seen.AT + 1])
  if at_err and not string.find(at_err, '^ERR AT is accepted') then return nil, at_err end
  if seen.BLOCK then
    local err = args_block_option(args[seen.BLOCK + 1], seen.DRYRUN)
    if err then return nil, err end
  end
  if at_err then return nil, at_err end
  if seen.BLOCK then return nil, args_cannot_wait(command) end
  parsed.holder = holder
  local inexact = args_exact_enough(parsed, ARGS_LEASE_EXACT)
  if inexact then return nil, inexact end
  return parsed
end

-- CL.RELEASE's arguments after the key: `holder` (args::release): the holder, or the error.
local function args_release(args)
  local command = 'cl.release'
  if #args < 1 or #args > ARGS_MAX_AFTER_KEY then return nil, args_wrong_arity(command) end
  local holder, err = args_holder(args[1])
  if holder == nil then return nil, err end
  local n = #args - 1
  if n == 0 then return holder end
  local first = string.upper(args[2])
  if n == 2 and first == 'AT' then return nil, args_at(args[3]) end
  for i = 2, #args, 2 do
    if string.upper(args[i]) == 'BLOCK' then
      return nil, 'ERR ' .. command .. ' does not wait: BLOCK is not one of its arguments'
    end
  end
  if n >= 2 and first == 'AT' then return nil, args_bad_option(command, 5) end
  return nil, args_bad_option(command, 3)
end

-- CL.HOLDERS's arguments after the key: `[MS]`: the unit, or the error.
local function args_holders(args)
  if #args == 0 then return 's' end
  if #args == 1 then
    if string.upper(args[1]) == 'MS' then return 'ms' end
    return nil, args_bad_option('cl.holders', 2)
  end
  return nil, args_wrong_arity('cl.holders')
end

local ARGS_SMOOTH_OPTIONS = { MS = false, DRYRUN = false, BURST = true, WARMUP = true, COLD = true, BLOCK = true }

-- CL.SMOOTH's arguments after the key: `permits period [quantity] [MS] [BURST span]
-- [WARMUP span [COLD factor]] [DRYRUN] [BLOCK timeout]` (args::smooth), as numbers; spans in
-- the call's unit.
local function args_smooth(args)
  local command = 'cl.smooth'
  if #args < 2 or #args > ARGS_MAX_AFTER_KEY then return nil, args_wrong_arity(command) end
  local first = 3
  local quantity_text = nil
  if args[3] and string.find(args[3], '^%d') then
    quantity_text = args[3]
    first = 4
  end
  local seen = {}
  local i = first
  while i <= #args do
    local word = string.upper(args[i])
    if word == 'REFUND' then
      return nil, 'ERR ' .. command .. ' does not refund: its reservations are instants, not units; REFUND is not one of its arguments'
    end
    local takes_value = ARGS_SMOOTH_OPTIONS[word]
    if takes_value == nil or seen[word] or (takes_value and i + 1 > #args) then
      return nil, args_bad_option(command, i + 1)
    end
    seen[word] = takes_value and args[i + 1] or word
    i = i + (takes_value and 2 or 1)
  end
  local p = { unit = seen.MS and 'ms' or 's', dry_run = seen.DRYRUN ~= nil }
  local permits, err = args_integer(args[1], 'permits', 1)
  if permits == nil then return nil, err end
  local period
  period, err = args_span(args[2], 'period', p.unit)
  if period == nil then return nil, err end
  local quantity = 1
  if quantity_text then
    quantity, err = args_integer(quantity_text, 'quantity', 0)
    if quantity == nil then return nil, err end
    if quantity > 2147483647 then return nil, 'ERR quantity must be <= 2147483647' end
  end
  if seen.BURST and seen.WARMUP then
    return nil, 'ERR BURST and WARMUP options at the same time are not compatible'
  end
  if seen.COLD and not seen.WARMUP then return nil, 'ERR COLD is given, but no WARMUP for it to shape' end
  local cold = 3
  if seen.WARMUP then
    local warmup
    warmup, err = args_span(seen.WARMUP, 'WARMUP', p.unit)
    if warmup == nil then return nil, err end
    p.warmup = warmup
    if seen.COLD then
      cold, err = args_integer(seen.COLD, 'COLD', 1)
      if cold == nil then return nil, err end
    end
  else
    -- Guava's default maxBurstSeconds: one second.
    p.burst = p.unit == 'ms' and 1000 or 1
    if seen.BURST then
      local burst
      burst, err = args_span(seen.BURST, 'BURST', p.unit)
      if burst == nil then return nil, err end
      p.burst = burst
    end
  end
  if seen.BLOCK then return nil, args_block_option(seen.BLOCK, p.dry_run) or args_cannot_wait(command) end
  if permits > ARGS_LIBRARY_MAX then return nil, args_inexact('permits') end
  if cold > ARGS_LIBRARY_MAX then return nil, args_inexact('COLD') end
  p.permits = permits
  p.period = period
  p.quantity = quantity
  p.cold = cold
  return p
end

-- The module's argument grammar, read by the table it parses by (src/grammar.rs, whose Lua
-- form is grammar.lua) in the order the module checks it: the shape of the options, then
-- the values, then the rules between options; the words are error.rs's (errors.lua). A
-- parser answers its arguments, or nil and the error's text.
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
-- The module reads at most 14 arguments, the command's name and the key among them.
local ARGS_MAX_AFTER_KEY = 12
-- Every limiter but CL.SMOOTH takes any quantity.
local ARGS_ANY_QUANTITY = 1e308

-- An integer no smaller than min, as a number, and as exact when it is past 2^53 − 1; or nil
-- and the error.
local function args_integer(text, name, min)
  local x = exact_small(text)
  local exact = nil
  if x == nil then
    local value = exact_parse(text)
    if value == nil then return nil, ERRORS.not_an_integer(name) end
    x = exact_tonumber(value)
    if x > ARGS_LIBRARY_MAX then exact = value end
  end
  if x < min then return nil, ERRORS.below_minimum(name, min) end
  return x, exact
end

-- The plain calls' numbers, remembered by their text: a route's or a tier's limits come
-- again and again, and reading one costs a pattern and a strtod. At most ARGS_PLAIN_KEPT
-- texts are kept, then the memo starts again, so that no stream of numbers grows it. (The
-- function form keeps it between calls; the script form runs the whole chunk each call.)
local ARGS_PLAIN_KEPT = 256
local ARGS_PLAIN_MEMO = {}
local ARGS_PLAIN_COUNT = 0

-- A canonical decimal integer below 10^14, as a number, with no table (a pattern, and the
-- string's coercion); nil for anything else.
local function args_canonical(text)
  if text == '0' then return 0 end
  if #text <= 14 and string.find(text, '^[1-9]%d*$') then return text + 0 end
  return nil
end

-- A number of a plain call's arguments (`throttle_plain` and its kind), remembered; nil for
-- anything else, which the full reader then reads and answers for. (A key's state is read
-- with args_canonical: counts would crowd the limits out of the memo.)
local function args_plain(text)
  local known = ARGS_PLAIN_MEMO[text]
  if known then return known end
  local x = args_canonical(text)
  if x == nil then return nil end
  if ARGS_PLAIN_COUNT >= ARGS_PLAIN_KEPT then ARGS_PLAIN_MEMO, ARGS_PLAIN_COUNT = {}, 0 end
  ARGS_PLAIN_MEMO[text] = x
  ARGS_PLAIN_COUNT = ARGS_PLAIN_COUNT + 1
  return x
end

-- A plain call's quantity (1 when not given) and its `params` numbers (2 or 3), from
-- args[1..n], each read by args_plain; nil unless n is params or params + 1 and each reads.
local function args_plain_call(args, n, params)
  if n ~= params and n ~= params + 1 then return nil end
  local quantity = 1
  if n > params then
    quantity = args_plain(args[n])
    if quantity == nil then return nil end
  end
  local a, b = args_plain(args[1]), args_plain(args[2])
  if a == nil or b == nil then return nil end
  if params == 2 then return quantity, a, b end
  local c = args_plain(args[3])
  if c == nil then return nil end
  return quantity, a, b, c
end

-- Whether a plain call's count and span (canonical integers below 10^14, the span in
-- seconds: a period, a lease's time) are ones the plain paths take: neither 0, the span
-- within 2^62 ns.
local function args_plain_rate(count, period)
  return count > 0 and period > 0 and period <= ARGS_MAX_SPAN.s
end

-- A span of at least 1 in this unit ('s' or 'ms'), within 2^62 ns.
local function args_span(text, name, unit)
  local span, err = args_integer(text, name, 1)
  if span == nil then return nil, err end
  if span > ARGS_MAX_SPAN[unit] then return nil, ERRORS.too_large(name) end
  return span
end

-- The words from args[first] on, read for their shape (Given::read): the quantity's text,
-- and where each option's keyword is, by keyword (nil when the call names none), with the
-- rows of the table whose values there are to read (`valued` to `valued_to`) and whose
-- rules there are to check (`ruled` to `ruled_to`) once the values are read; or
-- nil, nil, the error and, for a word out of place, its index. args[first] is the server's argument `position` (the name is 0). A
-- limiter that takes its quantity first reads its first word as the quantity unless it
-- names an option, its own or another command's.
local function args_given(command, args, first, position)
  local n = #args
  if first > n then return nil, nil end
  local quantity = nil
  local word = args[first]
  if GRAMMAR_QUANTITY_FIRST[command]
      and (string.find(word, '^%d') or GRAMMAR_ROWS[string.upper(word)] == nil) then
    if first == n then return word, nil end
    quantity = word
  end
  local at = {}
  -- The first and last rows named that take a value, and that have a rule.
  local valued, valued_to, ruled, ruled_to = 99, 0, 99, 0
  local i = quantity and first + 1 or first
  while i <= n do
    local row = GRAMMAR_ROWS[string.upper(args[i])]
    if row and row.refused and row.refused[command] then return nil, nil, row.refused[command] end
    local takes_value = row and row.value ~= 'flag'
    if row == nil or not row.takers[command] or at[row.keyword] or (takes_value and i == n) then
      return nil, nil, ERRORS.bad_option(command, position + i - first), i
    end
    at[row.keyword] = i
    local index = row.index
    if takes_value then
      if index < valued then valued = index end
      if index > valued_to then valued_to = index end
    end
    if row.rules then
      if index < ruled then ruled = index end
      if index > ruled_to then ruled_to = index end
    end
    i = i + (takes_value and 2 or 1)
  end
  if valued_to > 0 then at.valued, at.valued_to = valued, valued_to end
  if ruled_to > 0 then at.ruled, at.ruled_to = ruled, ruled_to end
  return quantity, at
end

-- Whether a rule (grammar::Rule) holds for the options named in `at`, with p's period a
-- calendar's unit or not.
local function args_rule_holds(rule, at, p)
  local kind = rule.rule
  if kind == 'excludes' then return at[rule.other] == nil end
  if kind == 'needs' then return at[rule.other] ~= nil end
  if kind == 'needs_grid' then return p.calendar or at.ALIGN ~= nil end
  return not p.calendar
end

-- The error of the first rule the named options break, in the table's order; or nil.
local function args_broken(p, at)
  if at.ruled == nil then return nil end
  for r = at.ruled, at.ruled_to do
    local row = GRAMMAR_OPTIONS[r]
    local rules = row.rules
    if rules and at[row.keyword] then
      for j = 1, #rules do
        if not args_rule_holds(rules[j], at, p) then return rules[j].error end
      end
    end
  end
  return nil
end

-- `BUCKETS n`'s count of cells, which must cut the period into whole milliseconds.
local function args_bucket_count(text, period_ms)
  local n, err = args_integer(text, 'BUCKETS', 2)
  if n == nil then return nil, err end
  if n > 1024 then return nil, ERRORS.above_maximum('BUCKETS', 1024) end
  if period_ms % n ~= 0 then return nil, ERRORS.period_not_cut end
  return n
end

-- A holder's name: 1 to 255 bytes, any bytes.
local function args_holder(holder)
  if #holder < 1 or #holder > 255 then return nil, ERRORS.holder_length end
  return holder
end

-- BLOCK's timeout (grammar::block_timeout): at most 2^62 ns.
local function args_block_timeout(text)
  local timeout, err = args_integer(text, 'timeout', 0)
  if timeout == nil then return nil, err end
  if timeout > ARGS_MAX_SPAN.ms then return nil, ERRORS.above_maximum('timeout', ARGS_MAX_SPAN.ms) end
  return timeout
end

-- A quantity of at most max, into p; or the error.
local function args_quantity(p, text, _, max)
  local quantity, exact = args_integer(text, 'quantity', 0)
  if quantity == nil then return exact end
  if quantity > max then return ERRORS.above_maximum('quantity', max) end
  p.quantity, p.quantity_exact = quantity, exact
end

-- Each kind of value (grammar::Value), read into p's field named after its keyword.
local ARGS_VALUES = {
  quantity = args_quantity,
  cells = function(p, text, row)
    local n, err = args_bucket_count(text, p.period_ms)
    p.buckets = n
    return err
  end,
  span = function(p, text, row)
    local span, err = args_span(text, row.keyword, p.unit)
    p[string.lower(row.keyword)] = span
    return err
  end,
  factor = function(p, text, row)
    -- Past 2^53 − 1 the second answer is the exact value, not an error: the caller refuses
    -- what the library cannot keep exact once the module's own checks pass.
    local factor, err = args_integer(text, row.keyword, 1)
    if factor == nil then return err end
    p[string.lower(row.keyword)] = factor
  end,
  holder = function(p, text)
    local holder, err = args_holder(text)
    p.holder = holder
    return err
  end,
  instant = function(p, text)
    local instant, err = args_integer(text, 'AT', 0)
    if instant == nil then return err end
    if instant > ARGS_MAX_SPAN.ms then return ERRORS.too_large('AT') end
    p.at = instant
  end,
  timeout = function(p, text)
    local timeout, err = args_block_timeout(text)
    p.block = timeout
    return err
  end,
  offset = function(p, text)
    local minutes, err = args_integer(text, 'OFFSET', -1439)
    if minutes == nil then return err end
    if minutes > 1439 then return ERRORS.above_maximum('OFFSET', 1439) end
    p.offset = minutes
  end,
}

-- The values, once the positional parameters are read (Given::read_values): the quantity, of
-- at most max_quantity, then each option's, in the table's order, into p; then the rules
-- between the options. Or the error.
local function args_values(p, args, quantity, at, max_quantity)
  if quantity then
    local err = args_quantity(p, quantity, nil, max_quantity)
    if err then return err end
  end
  if at == nil then return nil end
  if at.valued then
    for i = at.valued, at.valued_to do
      local row = GRAMMAR_OPTIONS[i]
      local index = at[row.keyword]
      if index and row.value ~= 'flag' then
        local err = ARGS_VALUES[row.value](p, args[index + 1], row, max_quantity)
        if err then return err end
      end
    end
  end
  return args_broken(p, at)
end

-- Milliseconds in each unit.
local ARGS_MS_PER = { s = 1000, ms = 1 }

-- Each command's parameters, and each of CL.ALL's limiters' numbers, by their readers
-- (grammar.lua): ARGS_READ[command](p, args, first) reads them into p, or answers the error.
local ARGS_READ = grammar_params(args_integer, args_holder)

-- The table a limiter's call is read into: every field the parsers set on a call whose
-- numbers are below 2^53, made at once rather than grown, with the flags the call names.
local function args_parsed(at)
  local ms = at ~= nil and at.MS ~= nil
  return { quantity = 1, quantity_exact = false, unit = ms and 'ms' or 's', ms = ms,
    refund = at ~= nil and at.REFUND ~= nil, dry_run = at ~= nil and at.DRYRUN ~= nil,
    count_denied = at ~= nil and at.COUNTDENIED ~= nil, at_most = at ~= nil and at.ATMOST ~= nil,
    align = at ~= nil and at.ALIGN ~= nil, offset = 0, calendar = false, ban = false,
    block = false, at = false, limit = false,
    period_ms = false, buckets = false, max_burst = false, max_burst_exact = false, count = false,
    count_exact = false, period = false, gcra = false }
end

local function args_exact_enough(parsed, names)
  for i = 1, #names do
    if parsed[names[i]] > ARGS_LIBRARY_MAX then return ERRORS.inexact(names[i]) end
  end
  return nil
end

-- The names a window's call holds to args_exact_enough.
local ARGS_WINDOW_EXACT = { 'limit', 'quantity' }

-- A window command's arguments after the key: `limit period [quantity] [BUCKETS n] [MS]
-- [REFUND] [DRYRUN] [COUNTDENIED] [BLOCK timeout]` (BUCKETS CL.WINDOW's, COUNTDENIED
-- CL.FIXED's), with the period as `period_ms`. The replication form's `AT unix-ms` is the
-- module's, and refused; so is a BLOCK, once the module's own checks pass.
local function args_window(args, command)
  local n = #args
  if n < GRAMMAR_PARAMS[command] or n > ARGS_MAX_AFTER_KEY then return nil, ERRORS.wrong_arity(command) end
  local quantity, at, err = args_given(command, args, 3, 4)
  if err then return nil, err end
  local p = args_parsed(at)
  err = ARGS_READ[command](p, args, 1)
  if err then return nil, err end
  -- Before the options: BUCKETS must cut it. A calendar's unit stands for its longest.
  p.period_ms = p.calendar and p.calendar.longest_ms or p.period * ARGS_MS_PER[p.unit]
  err = args_values(p, args, quantity, at, ARGS_ANY_QUANTITY)
  if err then return nil, err end
  if p.at then return nil, ERRORS.at_from_client end
  if p.block then return nil, ERRORS.cannot_wait(command) end
  local inexact = args_exact_enough(p, ARGS_WINDOW_EXACT)
  if inexact then return nil, inexact end
  return p
end

-- CL.THROTTLE's arguments after the key: `max_burst count period [quantity] [MS] [REFUND]
-- [DRYRUN] [BLOCK timeout]`, the period in the call's unit. A BLOCK the module would take
-- is `block`, refused by the caller once the module's own checks pass.
local function args_throttle(args)
  local command = 'cl.throttle'
  local n = #args
  if n < GRAMMAR_PARAMS[command] or n > ARGS_MAX_AFTER_KEY then return nil, ERRORS.wrong_arity(command) end
  local quantity, at, err = args_given(command, args, 4, 5)
  if err then return nil, err end
  local p = args_parsed(at)
  err = ARGS_READ[command](p, args, 1)
    or args_values(p, args, quantity, at, ARGS_ANY_QUANTITY)
  if err then return nil, err end
  return p
end

-- The names a lease's call holds to args_exact_enough.
local ARGS_LEASE_EXACT = { 'limit' }

-- CL.LEASE's arguments after the key: `limit lease_time holder [MS] [DRYRUN] [BLOCK
-- timeout]` (args::lease). The lease time comes back in ms.
local function args_lease(args)
  local command = 'cl.lease'
  local n = #args
  if n < GRAMMAR_PARAMS[command] or n > ARGS_MAX_AFTER_KEY then return nil, ERRORS.wrong_arity(command) end
  local _, at, err = args_given(command, args, 4, 5)
  if err then return nil, err end
  local p = { unit = (at and at.MS) and 'ms' or 's', dry_run = at ~= nil and at.DRYRUN ~= nil,
    block = false, at = false, limit = false, lease_time = false, lease_ms = false, holder = false }
  err = ARGS_READ[command](p, args, 1)
    or args_values(p, args, nil, at, ARGS_ANY_QUANTITY)
  if err then return nil, err end
  if p.at then return nil, ERRORS.at_from_client end
  if p.block then return nil, ERRORS.cannot_wait(command) end
  p.lease_ms = p.lease_time * ARGS_MS_PER[p.unit]
  local inexact = args_exact_enough(p, ARGS_LEASE_EXACT)
  if inexact then return nil, inexact end
  return p
end

-- A plain CL.LEASE, `limit lease_time holder` with both numbers canonical (args_plain): the
-- table args_lease reads it into; nil for anything else, which args_lease reads and answers.
local function args_lease_plain(args)
  if #args ~= 3 then return nil end
  local limit, lease_time, holder = args_plain(args[1]), args_plain(args[2]), args[3]
  if not (limit and lease_time and args_plain_rate(limit, lease_time)) or #holder == 0 or #holder > 255 then
    return nil
  end
  return { unit = 's', dry_run = false, block = false, at = false, limit = limit, lease_time = lease_time,
    lease_ms = lease_time * 1000, holder = holder }
end

-- CL.RELEASE's arguments after the key: `holder` (args::release): the holder, or the error.
local function args_release(args)
  local command = 'cl.release'
  local n = #args
  if n < GRAMMAR_PARAMS[command] or n > ARGS_MAX_AFTER_KEY then return nil, ERRORS.wrong_arity(command) end
  local _, at, err = args_given(command, args, 2, 3)
  if err then return nil, err end
  local p = { at = false }
  err = ARGS_READ[command](p, args, 1)
    or args_values(p, args, nil, at, ARGS_ANY_QUANTITY)
  if err then return nil, err end
  if p.at then return nil, ERRORS.at_from_client end
  return p.holder
end

-- CL.HOLDERS's arguments after the key: `[MS]`: the unit, or the error.
local function args_holders(args)
  if #args > ARGS_MAX_AFTER_KEY then return nil, ERRORS.wrong_arity('cl.holders') end
  local _, at, err = args_given('cl.holders', args, 1, 2)
  if err then return nil, err end
  return (at and at.MS) and 'ms' or 's'
end

-- CL.SMOOTH's arguments after the key: `permits period [quantity] [MS] [BURST span]
-- [WARMUP span [COLD factor]] [DRYRUN] [BLOCK timeout]` (args::smooth), as numbers; spans in
-- the call's unit.
local function args_smooth(args)
  local command = 'cl.smooth'
  local n = #args
  if n < GRAMMAR_PARAMS[command] or n > ARGS_MAX_AFTER_KEY then return nil, ERRORS.wrong_arity(command) end
  local quantity, at, err = args_given(command, args, 3, 4)
  if err then return nil, err end
  local p = { unit = (at and at.MS) and 'ms' or 's', dry_run = at ~= nil and at.DRYRUN ~= nil,
    quantity = 1, block = false, permits = false, period = false }
  err = ARGS_READ[command](p, args, 1)
    or args_values(p, args, quantity, at, 2147483647)
  if err then return nil, err end
  -- Guava's default maxBurstSeconds: one second.
  if p.warmup == nil and p.burst == nil then p.burst = p.unit == 'ms' and 1000 or 1 end
  p.cold = p.cold or 3
  if p.block then return nil, ERRORS.cannot_wait(command) end
  if p.permits > ARGS_LIBRARY_MAX then return nil, ERRORS.inexact('permits') end
  if p.cold > ARGS_LIBRARY_MAX then return nil, ERRORS.inexact('COLD') end
  return p
end

-- Generated from lua/*.lua by scripts/lua_forms.py: edit those, not this.
-- EVAL script 0|n [key ...] name [arg ...]: the function `name`, as FCALL would call it.

-- Redis 6.2 replicates a script's effects only when asked; later servers always do.
if redis.replicate_commands then redis.replicate_commands() end

local exact_small,
  exact_parse,
  exact_of_number,
  exact_tostring,
  exact_tonumber,
  exact_cmp,
  exact_add,
  exact_sub,
  exact_mul,
  exact_divmod,
  exact_max,
  exact_min,
  exact_ceil_div,
  BYTES_2_32,
  BYTES_2_31,
  BYTES_EXACT,
  bytes_u32,
  bytes_u64,
  bytes_signed,
  bytes_i64,
  bytes_array_u32,
  bytes_array_u64,
  bytes_of_u32,
  bytes_of_u64,
  bytes_of_i64,
  bytes_add,
  bytes_sub,
  bytes_cmp,
  bytes_pair,
  bytes_number,
  bytes_varint,
  bytes_of_varint,
  bytes_checksum,
  ARGS_MAX_SPAN_NS,
  ARGS_NANOS,
  ARGS_LIBRARY_MAX,
  ARGS_I64_MAX,
  args_too_large,
  args_wrong_arity,
  args_integer,
  args_exact_enough,
  ARGS_WINDOW_EXACT,
  args_block_timeout,
  args_never_waits,
  args_cannot_wait,
  args_is_buckets,
  args_bucket_count,
  args_limit_and_period,
  args_window,
  args_throttle_params,
  args_throttle,
  args_holder,
  args_lease_params,
  ARGS_LEASE_EXACT,
  args_lease,
  args_release,
  args_holders,
  args_smooth,
  INTEGERS_NUMBERS,
  INTEGERS_EXACT,
  clock_now,
  clock_ns,
  STATE_CORRUPT,
  state_bytes,
  state_exact,
  state_expire_at_ms,
  state_fail,
  state_corrupt,
  state_caught,
  reply_rounded,
  reply_ms,
  single_run,
  FIXED,
  cl_fixed,
  THROTTLE,
  throttle_limiter,
  THROTTLE_EXACT,
  cl_throttle,
  buckets_cells_in,
  buckets_decide,
  buckets_refund,
  WINDOW,
  cl_window,
  LEASE,
  cl_lease,
  cl_release,
  cl_holders,
  SMOOTH,
  cl_smooth,
  args_all,
  cl_all,
  cell_unknown,
  CELL_FUNCTIONS

do
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

-- A canonical decimal below 10^14 in magnitude, as a number without a table: Lua reads it,
-- and prints it back as it came (no sign on zero, leading zero, space, exponent or hex).
-- nil for anything else, which exact_parse reads.
function exact_small(text)
  local x = tonumber(text)
  if x and x < 1e14 and x > -1e14 and x % 1 == 0 and (x ~= 0 or text == '0') and tostring(x) == text then
    return x
  end
  return nil
end

-- Reads an integer as Redis's string2ll does, where Lua's tonumber would also take "0x10",
-- "1e3" and " 5": an optional '-', digits with no leading zero, no sign on zero, and a value
-- that fits in 64 bits. nil for anything else.
function exact_parse(text)
  if type(text) ~= 'string' then return nil end
  local neg = string.byte(text, 1) == 45
  local digits = neg and string.sub(text, 2) or text
  if digits == '0' then
    if neg then return nil end
    return { neg = false }
  end
  if #digits > 19 or not string.find(digits, '^[1-9][0-9]*$') then return nil end
  -- Of equal length, digit strings compare as their values.
  if #digits == 19 and digits > (neg and EXACT_I64_MIN or EXACT_I64_MAX) then return nil end
  -- Most arguments are one limb: no loop.
  if #digits <= EXACT_DIGITS then return { neg = neg, tonumber(digits) } end
  return exact_of_digits(digits, neg)
end

-- An integer-valued double, any size: its exact decimal, which C's printf gives. Below 2^53,
-- as most are, its limbs by arithmetic.
function exact_of_number(x)
  if x > -9007199254740992 and x < 9007199254740992 then
    local neg = x < 0
    if neg then x = -x end
    local a = { neg = neg }
    local i = 1
    while x > 0 do
      local high = math.floor(x / EXACT_BASE)
      a[i] = x - high * EXACT_BASE
      x = high
      i = i + 1
    end
    if i == 1 then a.neg = false end
    return a
  end
  local text = string.format('%.0f', x)
  if string.sub(text, 1, 1) == '-' then return exact_of_digits(string.sub(text, 2), true) end
  return exact_of_digits(text, false)
end

function exact_tostring(a)
  local n = #a
  if n == 0 then return '0' end
  local parts = { a.neg and '-' or '', string.format('%d', a[n]) }
  for i = n - 1, 1, -1 do
    parts[#parts + 1] = string.format('%07d', a[i])
  end
  return table.concat(parts)
end

-- The nearest double: exact up to 2^53, for replies and estimates.
function exact_tonumber(a)
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
function exact_cmp(a, b)
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

function exact_add(a, b)
  if a.neg == b.neg then return exact_mag_add(a, b, a.neg) end
  if exact_mag_cmp(a, b) >= 0 then return exact_mag_sub(a, b, a.neg) end
  return exact_mag_sub(b, a, b.neg)
end

local function exact_neg(a)
  local r = { neg = #a > 0 and not a.neg }
  for i = 1, #a do r[i] = a[i] end
  return r
end

function exact_sub(a, b)
  return exact_add(a, exact_neg(b))
end

function exact_mul(a, b)
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
function exact_divmod(a, b)
  -- Both under 10^14, so under 2^53, and not negative: the doubles' quotient, floored, is
  -- the exact one (its rounding error is under 1/b), and so is the remainder.
  if #a <= 2 and #b <= 2 and #b > 0 and not a.neg and not b.neg then
    local x, y = exact_tonumber(a), exact_tonumber(b)
    local q = math.floor(x / y)
    return exact_of_number(q), exact_of_number(x - q * y)
  end
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

function exact_max(a, b)
  if exact_cmp(a, b) >= 0 then return a end
  return b
end

function exact_min(a, b)
  if exact_cmp(a, b) <= 0 then return a end
  return b
end

-- a / b rounded up, for a >= 0 and b > 0.
function exact_ceil_div(a, b)
  local q, r = exact_divmod(a, b)
  if #r > 0 then q = exact_add(q, { neg = false, 1 }) end
  return q
end
end

do
-- The module's binary values read and written in Lua (src/bytes.rs): little-endian fields,
-- LEB128 varints, and the 64-bit counters they hold. Offsets are 0-based, as the module's
-- formats give them. A u64 is a pair of 32-bit halves (hi, lo), exact where one double
-- would not be; an i64 is a number, and one past 2^53 is refused by its reader (nil), since
-- it could not be computed with.

BYTES_2_32 = 4294967296
BYTES_2_31 = 2147483648
-- The largest magnitude a double holds exactly with everything beside it: 2^53.
BYTES_EXACT = 9007199254740992

function bytes_u32(v, at)
  local a, b, c, d = string.byte(v, at + 1, at + 4)
  return a + b * 256 + c * 65536 + d * 16777216
end

-- A u64 as (hi, lo).
function bytes_u64(v, at)
  return bytes_u32(v, at + 4), bytes_u32(v, at)
end

-- The i64 of a u64's halves as a number, or nil past ±2^53.
function bytes_signed(hi, lo)
  if hi >= BYTES_2_31 then hi = hi - BYTES_2_32 end
  if hi >= 2097152 or hi < -2097152 then return nil end
  return hi * BYTES_2_32 + lo
end

-- An i64 as a number, or nil past ±2^53.
function bytes_i64(v, at)
  return bytes_signed(bytes_u64(v, at))
end

-- Where a value's first bytes are read once into an array b (b[at + 1] the byte at `at`),
-- its fields are read from there: one C call for them all.
function bytes_array_u32(b, at)
  return b[at + 1] + b[at + 2] * 256 + b[at + 3] * 65536 + b[at + 4] * 16777216
end

function bytes_array_u64(b, at)
  return bytes_array_u32(b, at + 4), bytes_array_u32(b, at)
end

-- x's low 32 bits. (Integer division as (x - x % d) / d: exact, and no call to math.floor.)
function bytes_of_u32(x)
  local a = x % 256
  x = (x - a) / 256
  local b = x % 256
  x = (x - b) / 256
  local c = x % 256
  return string.char(a, b, c, (x - c) / 256 % 256)
end

function bytes_of_u64(hi, lo)
  return bytes_of_u32(lo) .. bytes_of_u32(hi)
end

-- An i64 given as a number within ±2^53.
function bytes_of_i64(x)
  local lo = x % BYTES_2_32
  return bytes_of_u64(((x - lo) / BYTES_2_32) % BYTES_2_32, lo)
end

-- u64 arithmetic, wrapping at 2^64 as the module's wrapping_add and wrapping_sub do.
function bytes_add(ah, al, bh, bl)
  local lo = al + bl
  local carry = 0
  if lo >= BYTES_2_32 then
    lo = lo - BYTES_2_32
    carry = 1
  end
  return (ah + bh + carry) % BYTES_2_32, lo
end

function bytes_sub(ah, al, bh, bl)
  local lo = al - bl
  local borrow = 0
  if lo < 0 then
    lo = lo + BYTES_2_32
    borrow = 1
  end
  return (ah - bh - borrow) % BYTES_2_32, lo
end

-- -1, 0 or 1 as a < b, a == b, a > b.
function bytes_cmp(ah, al, bh, bl)
  if ah ~= bh then return ah < bh and -1 or 1 end
  if al ~= bl then return al < bl and -1 or 1 end
  return 0
end

-- A u64 pair of a non-negative number below 2^53.
function bytes_pair(x)
  local lo = x % BYTES_2_32
  return (x - lo) / BYTES_2_32, lo
end

-- The number a pair stands for; past 2^53 the nearest double, which callers only compare
-- with numbers below 2^53.
function bytes_number(hi, lo)
  return hi * BYTES_2_32 + lo
end

-- A varint at `at` read no further than `limit` (exclusive): (hi, lo, the offset after it), or
-- nil where it runs past limit or past 64 bits.
function bytes_varint(v, at, limit)
  if at >= limit then return nil end
  local byte = string.byte(v, at + 1)
  if byte < 128 then return 0, byte, at + 1 end
  local hi, lo, shift = 0, 0, 0
  while true do
    if at >= limit then return nil end
    byte = string.byte(v, at + 1)
    at = at + 1
    -- The tenth byte holds the 64th bit alone.
    if shift == 63 and byte > 1 then return nil end
    local bits = byte % 128
    if shift + 7 <= 32 then
      lo = lo + bits * 2 ^ shift
    elseif shift >= 32 then
      hi = hi + bits * 2 ^ (shift - 32)
    else
      local low_bits = 2 ^ (32 - shift)
      lo = lo + (bits % low_bits) * 2 ^ shift
      hi = hi + math.floor(bits / low_bits)
    end
    if byte < 128 then return hi, lo, at end
    shift = shift + 7
  end
end

function bytes_of_varint(hi, lo)
  -- Most are one byte.
  if hi == 0 and lo < 128 then return string.char(lo) end
  local out = {}
  while hi > 0 or lo >= 128 do
    out[#out + 1] = lo % 128 + 128
    -- Shift the pair right by 7 bits.
    lo = math.floor(lo / 128) + (hi % 128) * 33554432
    hi = math.floor(hi / 128)
  end
  out[#out + 1] = lo
  return string.char(unpack(out))
end

-- The multiplicative hash the module seals a header's first `len` bytes with (a multiple of
-- 4), given as an array: each 32-bit word xored in, multiplied by 0x9e3779b1 and rotated
-- left by 13. The bit library answers signed 32-bit words: `% 2^32` makes them the
-- module's u32. The product and the rotation are arithmetic on parts a double holds
-- exactly: a C call costs far more than the arithmetic.
function bytes_checksum(b, len)
  local hash = 2166136261
  for at = 0, len - 4, 4 do
    local mixed = bit.bxor(hash, bytes_array_u32(b, at)) % BYTES_2_32
    local low = mixed % 65536
    local product = (((mixed - low) / 65536 * 2654435761) % 65536 * 65536 + low * 2654435761) % BYTES_2_32
    -- Left by 13: the low 19 bits go up, the high 13 come round.
    local kept = product % 524288
    hash = kept * 8192 + (product - kept) / 524288
  end
  return hash
end
end

do
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
ARGS_MAX_SPAN_NS = { neg = false, 7387904, 8601842, 46116 }
ARGS_NANOS = { s = { neg = false, 0, 100 }, ms = { neg = false, 1000000 } }
-- The library's numbers are doubles: integers past 2^53 − 1 would be rounded.
ARGS_LIBRARY_MAX = 9007199254740991
-- The longest span the module takes, 2^62 ns, in whole units.
local ARGS_MAX_SPAN = { s = 4611686018, ms = 4611686018427 }
-- 9223372036854775807, past which the module's 64-bit arithmetic overflows.
ARGS_I64_MAX = { neg = false, 4775807, 7203685, 92233 }
-- The module reads at most 12 arguments, the command's name and the key among them.
local ARGS_MAX_AFTER_KEY = 10

-- The module's TooLarge: the named argument makes the limiter's time arithmetic overflow.
function args_too_large(name)
  return 'ERR ' .. name .. ' is too large: the limiter\'s time span would overflow'
end

function args_wrong_arity(command)
  return "ERR wrong number of arguments for '" .. command .. "' command"
end

-- An integer no smaller than min, as a number, and as exact when it is past 2^53 − 1; or nil
-- and the error.
function args_integer(text, name, min)
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

function args_exact_enough(parsed, names)
  for i = 1, #names do
    if parsed[names[i]] > ARGS_LIBRARY_MAX then return args_inexact(names[i]) end
  end
  return nil
end

-- The names a window's call holds to args_exact_enough.
ARGS_WINDOW_EXACT = { 'limit', 'quantity' }

-- BLOCK's timeout's error, if it has one (args::block_timeout): at most 2^62 ns.
function args_block_timeout(text)
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
function args_never_waits(parsed)
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
function args_cannot_wait(command)
  return 'ERR ' .. command .. ' cannot wait in the library: BLOCK needs the redis-cell module'
end

function args_is_buckets(word)
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
function args_bucket_count(text, period_ms)
  local n, err = args_integer(text, 'BUCKETS', 2)
  if n == nil then return nil, err end
  if n > 1024 then return nil, 'ERR BUCKETS must be <= 1024' end
  if period_ms % n ~= 0 then return nil, 'ERR period must be a multiple of BUCKETS, in milliseconds' end
  return n
end

-- `limit period` in the parsed tail's unit (args::limit_and_period): the limit and
-- `period_ms`; or the error.
function args_limit_and_period(parsed, limit_text, period_text)
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
function args_window(args, command, sliding)
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
function args_throttle_params(parsed, max_burst, count, period)
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
function args_throttle(args)
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
function args_holder(holder)
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
function args_lease_params(parsed, limit_text, time_text)
  local limit, limit_err = args_integer(limit_text, 'limit', 1)
  if limit == nil then return limit_err end
  local lease_ms, time_err = args_span_ms(time_text, 'lease_time', parsed.unit)
  if lease_ms == nil then return time_err end
  parsed.limit = limit
  parsed.lease_ms = lease_ms
  return nil
end

-- The names a lease's call holds to args_exact_enough.
ARGS_LEASE_EXACT = { 'limit' }

-- CL.LEASE's arguments after the key: `limit lease_time holder [MS] [DRYRUN] [BLOCK timeout]`,
-- the options in any order, each once (args::lease). The lease time comes back in ms.
function args_lease(args)
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
function args_release(args)
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
function args_holders(args)
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
function args_smooth(args)
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
end

do
-- The integers a decision computes with, in either of two forms behind the same operations,
-- so that a limiter decides in one piece of code whichever it is given: Lua numbers, which
-- make no table, where every value the decision can reach stays below 2^53; exact integers
-- (exact.lua) where one may not. `of` takes a number below 2^53 into the form.

INTEGERS_NUMBERS = {
  of = function(x) return x end,
  tonumber = function(a) return a end,
  tostring = function(a) return string.format('%d', a) end,
  add = function(a, b) return a + b end,
  sub = function(a, b) return a - b end,
  cmp = function(a, b)
    if a < b then return -1 end
    if a > b then return 1 end
    return 0
  end,
  max = function(a, b)
    if a < b then return b end
    return a
  end,
  -- Never past the module's 64-bit counts: the values stay below 2^53.
  saturate = function(a) return a end,
  -- a / b truncated, for 0 <= a < 2^52 and b > 0 (as every caller's are): the doubles'
  -- quotient floored is the exact one, its rounding error being under 1/b.
  div = function(a, b) return math.floor(a / b) end,
  ceil_div = function(a, b)
    local q = math.floor(a / b)
    if q * b < a then return q + 1 end
    return q
  end,
  zero = 0,
}

INTEGERS_EXACT = {
  of = exact_of_number,
  tonumber = exact_tonumber,
  tostring = exact_tostring,
  add = exact_add,
  sub = exact_sub,
  cmp = exact_cmp,
  max = exact_max,
  saturate = function(a) return exact_min(a, ARGS_I64_MAX) end,
  div = function(a, b) return (exact_divmod(a, b)) end,
  ceil_div = exact_ceil_div,
  zero = { neg = false },
}
end

do
-- The server's clock, read once per call as the module reads it: in microseconds where the
-- module API has RedisModule_Microseconds (Redis 7.2 and later, and Valkey, which answers as
-- 7.2), in milliseconds on Redis 7.0 and 6.2, so that both decide at the same instant.

-- Now, as the module's Instant: in µs and in whole ms, two numbers (exact: now is under
-- 2^53 µs).
function clock_now()
  local time = redis.call('TIME')
  local micros = tonumber(time[2])
  if not (redis.REDIS_VERSION_NUM and redis.REDIS_VERSION_NUM >= 0x070200) then
    micros = micros - micros % 1000
  end
  local seconds = tonumber(time[1])
  return seconds * 1000000 + micros, seconds * 1000 + (micros - micros % 1000) / 1000
end

-- Now in nanoseconds, exact.
function clock_ns(now_us)
  return exact_mul(exact_of_number(now_us), { neg = false, 1000 })
end
end

do
-- A limiter's key read as the module reads it (src/store.rs): absent, an integer, or the
-- error the module answers for another type or a string that is not one.

local STATE_WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
STATE_CORRUPT = 'ERR the value at this key is not a valid state for this command'

-- The key's string, nil for no key, or nil and WRONGTYPE: one GET, whose refusal of another
-- type is the module's error too. (GET copies the value: for a window's log, as a search
-- over it reads it; a state that is a number is at most 20 bytes, and a longer one is damage.)
function state_bytes(key)
  local value = redis.pcall('GET', key)
  if type(value) == 'table' and value.err then
    if string.find(value.err, '^WRONGTYPE') then return nil, STATE_WRONGTYPE end
    error(value)
  end
  if not value then return nil end
  return value
end

-- A key's text read as an integer, exact, or nil and the error.
function state_exact(text)
  -- No 64-bit integer takes more than 20 bytes.
  if #text > 20 then return nil, STATE_CORRUPT end
  local value = exact_parse(text)
  if value == nil then return nil, STATE_CORRUPT end
  return value
end

-- The key's absolute expiry in ms, or -1 for none. Redis 6.2 has no PEXPIRETIME: there it is
-- now plus PTTL, which can read a millisecond off where the two straddle one.
function state_expire_at_ms(key, now_ms)
  if redis.REDIS_VERSION_NUM then return redis.call('PEXPIRETIME', key) end
  local ttl = redis.call('PTTL', key)
  if ttl < 0 then return ttl end
  return now_ms + ttl
end

-- An error reply's text thrown from deep in a decision with error(), which the command's
-- pcall turns back into its reply (state_caught).
function state_fail(text)
  error({ err = text }, 0)
end

function state_corrupt()
  state_fail(STATE_CORRUPT)
end

-- The reply text of what a pcall caught: Valkey's pcall hands back a thrown table's text,
-- Redis's the table. Anything else is a defect, raised on as the server's script error.
function state_caught(thrown)
  local text = type(thrown) == 'table' and thrown.err or thrown
  if type(text) == 'string' and string.find(text, '^ERR ') then return text end
  error(thrown, 0)
end
end

do
-- The five integers every command answers, from waits in whole milliseconds: rounded up to
-- the call's unit as the module's Outcome::to_reply rounds its nanoseconds, so that a
-- client that waits the time answered is never early.

-- A wait in whole ms, in the call's unit, rounded up.
function reply_rounded(ms, unit)
  if ms < 0 then return 0 end
  -- The module counts the wait in 64-bit nanoseconds, saturating: an expiry someone set
  -- centuries away answers i64::MAX ns.
  if ms > 9223372036854 then return unit == 'ms' and 9223372036855 or 9223372037 end
  if unit == 'ms' then return ms end
  return math.floor((ms + 999) / 1000)
end

function reply_ms(limited, limit, remaining, retry_ms, reset_ms, unit)
  if remaining < 0 then remaining = 0 end
  if remaining > limit then remaining = limit end
  return { limited and 1 or 0, limit, remaining, retry_ms and reply_rounded(retry_ms, unit) or -1,
    reply_rounded(reset_ms, unit) }
end
end

do
-- A single-key command's body, as src/commands/single.rs runs it: read the key, decide at
-- one instant, write what changed unless the call is a dry run. A kind of limiter is a
-- table of four steps (THROTTLE, FIXED, WINDOW, LEASE, SMOOTH), each given the call's
-- parsed arguments p and now, in µs and in ms:
--   read(key, p, now_us, now_ms)                    the stored state, or nil and the error
--   decide(p, stored, now_us, now_ms)               the reply and the change; errors thrown
--                                                   (state_fail)
--   peek(p, stored, now_us, now_ms)                 the reply to asking for nothing
--   write(key, p, change, stored, now_us, now_ms)

function single_run(key, kind, p)
  local now_us, now_ms = clock_now()
  local stored, err = kind.read(key, p, now_us, now_ms)
  if err then return redis.error_reply(err) end
  local ok, reply, change = pcall(kind.decide, p, stored, now_us, now_ms)
  if not ok then return redis.error_reply(state_caught(reply)) end
  if change and not p.dry_run then kind.write(key, p, change, stored, now_us, now_ms) end
  return reply
end
end

do
-- CL.FIXED in the library: the module's fixed window (src/fixed.rs) on the same key, a
-- decimal count whose expiry is the window's end, read, decided and written as the module
-- does, so that a key carries over either way. Counts are exact (a key may hold any 64-bit
-- count): numbers while a count (read as one when under 10^14, exact_small) and the
-- quantity stay below 2^52, so that their sum is exact; else exact integers (integers.lua). The limit, the quantity and the instants are
-- numbers, exact below 2^53.

local FIXED_NUMBERS_BELOW = 4503599627370496

-- The key's window, { count, end_ms, k } with k the count's form; nil when there is none,
-- or the error the module answers: a count is never negative, and a window always ends.
local function fixed_read(key, p, _, now_ms)
  local text, err = state_bytes(key)
  if text == nil then return nil, err end
  local k = INTEGERS_NUMBERS
  local count = exact_small(text)
  if count == nil or p.quantity >= FIXED_NUMBERS_BELOW then
    k = INTEGERS_EXACT
    count, err = state_exact(text)
    if count == nil then return nil, err end
  end
  local end_ms = state_expire_at_ms(key, now_ms)
  if k.cmp(count, k.zero) < 0 or end_ms < 0 then return nil, STATE_CORRUPT end
  return { count = count, end_ms = end_ms, k = k }
end

local function fixed_wait(window, now_ms)
  return window and window.end_ms - now_ms or 0
end

-- Decides asking for `quantity` at now_ms against the stored window: the reply, and the
-- window to write, if any.
local function fixed_decide_quantity(p, stored, now_ms, quantity)
  local k = stored and stored.k or INTEGERS_NUMBERS
  if stored == nil and quantity >= FIXED_NUMBERS_BELOW then k = INTEGERS_EXACT end
  local open = nil
  if stored and now_ms < stored.end_ms then open = stored end
  local count = open and open.count or k.zero
  local end_ms = open and open.end_ms or now_ms + p.period_ms
  local limit = k.of(p.limit)
  local wanted = k.add(count, k.of(quantity))
  if k.cmp(wanted, limit) <= 0 then
    local new
    if quantity > 0 then new = { count = wanted, end_ms = end_ms, k = k } end
    return reply_ms(false, p.limit, p.limit - k.tonumber(wanted), nil, fixed_wait(new or open, now_ms), p.unit), new
  end
  local new
  if p.count_denied and quantity > 0 then new = { count = k.saturate(wanted), end_ms = end_ms, k = k } end
  local after = new or open
  local retry = nil
  if open and quantity <= p.limit then retry = fixed_wait(open, now_ms) end
  -- Past the limit, nothing is left.
  local left = 0
  if after == nil then
    left = p.limit
  elseif k.cmp(after.count, limit) < 0 then
    left = p.limit - k.tonumber(after.count)
  end
  local reply = reply_ms(true, p.limit, left, retry, fixed_wait(after, now_ms), p.unit)
  if new and open and k.cmp(new.count, open.count) == 0 and new.end_ms == open.end_ms then
    new = nil
  end
  return reply, new
end

-- REFUND: the open window's count drops by the quantity, never below 0; 0 clears the key.
local function fixed_refund(p, stored, now_ms)
  local new
  if stored and now_ms < stored.end_ms and p.quantity > 0 then
    local k = stored.k
    if k.cmp(stored.count, k.zero) > 0 then
      local count = k.max(k.sub(stored.count, k.of(p.quantity)), k.zero)
      new = { count = count, end_ms = stored.end_ms, k = k }
    end
  end
  local left = stored
  if new then left = new.k.cmp(new.count, new.k.zero) > 0 and new or nil end
  local reply = fixed_decide_quantity(p, left, now_ms, 0)
  reply[1] = 0
  reply[4] = -1
  return reply, new
end

-- The kind (single.lua).
FIXED = {
  read = fixed_read,
  decide = function(p, stored, _, now_ms)
    if p.refund then return fixed_refund(p, stored, now_ms) end
    return fixed_decide_quantity(p, stored, now_ms, p.quantity)
  end,
  peek = function(p, stored, _, now_ms) return (fixed_decide_quantity(p, stored, now_ms, 0)) end,
  write = function(key, _, new, stored, _, now_ms)
    local k = new.k
    if k.cmp(new.count, k.zero) == 0 then
      redis.call('DEL', key)
    elseif stored == nil or stored.end_ms ~= new.end_ms or now_ms >= stored.end_ms then
      redis.call('SET', key, k.tostring(new.count), 'PXAT', new.end_ms)
    else
      redis.call('SET', key, k.tostring(new.count), 'KEEPTTL')
    end
  end,
}

-- FCALL cl_fixed 1 key limit period [quantity] [MS] [REFUND] [DRYRUN] [COUNTDENIED]
function cl_fixed(keys, args)
  if #keys ~= 1 then return redis.error_reply(args_wrong_arity('cl.fixed')) end
  local p, err = args_window(args, 'cl.fixed', false)
  if p == nil then return redis.error_reply(err) end
  return single_run(keys[1], FIXED, p)
end
end

do
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
    return nil, 'ERR count is too large for period: the emission interval would be under 1 ns'
  end
  local limit = exact_add(exact('max_burst'), THROTTLE_ONE)
  if exact_cmp(limit, ARGS_I64_MAX) > 0 then return nil, args_too_large('max_burst') end
  local tolerance = exact_mul(interval, limit)
  if exact_cmp(tolerance, ARGS_MAX_SPAN_NS) > 0 then return nil, args_too_large('max_burst') end
  local increment = exact_mul(interval, exact('quantity'))
  if exact_cmp(increment, exact_sub(ARGS_MAX_SPAN_NS, tolerance)) > 0 then
    return nil, args_too_large('quantity')
  end
  return { k = INTEGERS_EXACT, interval = interval, tolerance = tolerance, limit = limit,
    increment = increment, unit_ns = unit_ns }
end

-- GCRA's constants, in numbers where they keep within 2^51 ns, or the module's error.
local function throttle_gcra(p)
  local unit_ns = p.unit == 'ms' and 1000000 or 1000000000
  if not (p.max_burst_exact or p.count_exact or p.quantity_exact) then
    local period_ns = p.period * unit_ns
    local interval = math.floor(period_ns / p.count)
    local limit = p.max_burst + 1
    local tolerance = interval * limit
    local increment = interval * p.quantity
    -- Below 2^51 each product is exact, and the numbers' own: the exact form would answer
    -- no error for them (its bounds lie past 2^53) but for an interval under 1 ns.
    if period_ns < THROTTLE_NUMBERS_BELOW and interval >= 1 and tolerance + increment < THROTTLE_NUMBERS_BELOW then
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
  if n > 19 or not string.find(text, '^[1-9]%d*$') then return nil end
  local seconds, nanos = 0, tonumber(text)
  if n > 9 then
    seconds = tonumber(string.sub(text, 1, n - 9))
    nanos = tonumber(string.sub(text, n - 8))
  end
  local now_s, now_nanos = throttle_now_parts(now_us)
  local after = (seconds - now_s) * 1000000000 + nanos - now_nanos
  if after <= 0 then return 0 end
  if after >= THROTTLE_NUMBERS_BELOW then return nil end
  return after
end

-- The stored TAT in the form of p.gcra, which turns exact where the TAT is out of the numbers'
-- reach; nil for no key, or nil and the error.
local function throttle_read(key, p, now_us)
  local text, err = state_bytes(key)
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

-- The TAT's text and its expiry, rounded up to the millisecond.
local function throttle_write(key, p, tat, _, now_us)
  if p.gcra.k == INTEGERS_EXACT then
    redis.call('SET', key, exact_tostring(tat), 'PXAT', exact_tostring(exact_ceil_div(tat, ARGS_NANOS.ms)))
    return
  end
  local now_s, now_nanos = throttle_now_parts(now_us)
  local nanos = now_nanos + tat
  local carry = math.floor(nanos / 1000000000)
  local seconds = now_s + carry
  nanos = nanos - carry * 1000000000
  local text = seconds > 0 and string.format('%d%09d', seconds, nanos) or string.format('%d', nanos)
  redis.call('SET', key, text, 'PXAT', seconds * 1000 + math.ceil(nanos / 1000000))
end

-- The kind (single.lua), its call's GCRA made by throttle_limiter.
THROTTLE = {
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
function throttle_limiter(p)
  local g, err = throttle_gcra(p)
  if g == nil then return err end
  p.gcra = g
  return nil
end

-- The numbers the library refuses past 2^53 − 1.
THROTTLE_EXACT = { 'max_burst', 'count', 'period', 'quantity' }

-- FCALL cl_throttle 1 key max_burst count period [quantity] [MS] [REFUND] [DRYRUN]
function cl_throttle(keys, args)
  if #keys ~= 1 then return redis.error_reply(args_wrong_arity('cl.throttle')) end
  local p, err = args_throttle(args)
  if p == nil then return redis.error_reply(err) end
  local gcra_err = throttle_limiter(p)
  if gcra_err then return redis.error_reply(gcra_err) end
  if p.block then return redis.error_reply(args_cannot_wait('cl.throttle')) end
  local inexact = args_exact_enough(p, THROTTLE_EXACT)
  if inexact then return redis.error_reply(inexact) end
  return single_run(keys[1], THROTTLE, p)
end
end

do
-- CL.WINDOW's bucketed form (`BUCKETS n`) in the library: the module's cells
-- (src/buckets.rs, src/buckets/cells.rs) on the same key, read and written as the module
-- does. Cell indexes and counts are numbers: a value whose cells, sum or instants pass 2^53
-- is refused as not a valid state.

local BUCKETS_HEADER = 32
local BUCKETS_CELL_MAX = { 255, 65535, nil, 4294967295 }

-- The header of value v as the module checks it (Cells::decode), or nil. Counts past 2^53
-- are refused here too (`exact` false) once the module's own checks pass.
local function buckets_decode(v)
  if #v < BUCKETS_HEADER or string.sub(v, 1, 4) ~= 'CLB\1' then return nil end
  local h = {
    cell_bytes = string.byte(v, 5),
    n = string.byte(v, 6) + string.byte(v, 7) * 256,
    origin = string.byte(v, 8) + string.byte(v, 9) * 256,
    width_ms = bytes_u32(v, 9) + (string.byte(v, 14) + string.byte(v, 15) * 256) * BYTES_2_32,
  }
  local newest_hi, newest_lo = bytes_u64(v, 15)
  local sum_hi, sum_lo = bytes_u64(v, 23)
  local cb = h.cell_bytes
  local cells_len = #v - BUCKETS_HEADER
  if not (cb == 1 or cb == 2 or cb == 4 or cb == 8) then return nil end
  if h.n < 2 or h.n > 1024 or h.origin >= h.n or h.width_ms < 1 then return nil end
  if newest_hi >= BYTES_2_31 or sum_hi >= BYTES_2_31 or string.byte(v, 32) ~= 0 then return nil end
  if cells_len % cb ~= 0 or cells_len / cb < 1 or cells_len / cb > h.n then return nil end
  -- The instant the newest cell leaves, (newest + n) * width, must be an i64.
  local newest = exact_add(exact_mul(exact_of_number(newest_hi), exact_of_number(BYTES_2_32)),
    exact_of_number(newest_lo))
  local leaves = exact_mul(exact_add(newest, exact_of_number(h.n)), exact_of_number(h.width_ms))
  if exact_cmp(leaves, ARGS_I64_MAX) > 0 then return nil end
  h.slots = cells_len / cb
  h.newest = bytes_number(newest_hi, newest_lo)
  h.sum = bytes_number(sum_hi, sum_lo)
  h.exact = exact_tonumber(leaves) <= ARGS_LIBRARY_MAX and sum_hi < 2097152
  return h
end

-- The number of cells a value holds, if it is a bucketed window: for the error that names
-- the form a key holds.
function buckets_cells_in(v)
  local h = buckets_decode(v)
  return h and h.n
end

local function buckets_mod(a, n)
  return a - math.floor(a / n) * n
end

-- The units at a slot of the stored value; a slot past its end is empty.
local function buckets_read_slot(v, h, slot)
  if slot >= h.slots then return 0 end
  local at = BUCKETS_HEADER + slot * h.cell_bytes
  local cb = h.cell_bytes
  if cb == 1 then return string.byte(v, at + 1) end
  if cb == 2 then return string.byte(v, at + 1) + string.byte(v, at + 2) * 256 end
  if cb == 4 then return bytes_u32(v, at) end
  local hi, lo = bytes_u64(v, at)
  if hi >= 2097152 then state_corrupt() end
  return bytes_number(hi, lo)
end

-- A key's cells on the call's grid { n, width_ms }: the ring { origin, newest, sum, get }
-- (Ring::on). Cells stored on another grid move, each whole, to the call's cell that holds
-- its last millisecond; those that land before the ring are dropped.
local function buckets_ring(v, grid)
  local h = buckets_decode(v)
  if h == nil then state_corrupt() end
  if not h.exact then state_corrupt() end
  local ring = { newest = h.newest, sum = h.sum, origin = h.origin, stored = h, v = v }
  if h.n == grid.n and h.width_ms == grid.width_ms then
    ring.get = function(cell) return buckets_read_slot(v, h, buckets_mod(cell - h.origin, grid.n)) end
    return ring
  end
  local function moved(cell)
    return math.floor(((cell + 1) * h.width_ms - 1) / grid.width_ms)
  end
  local newest = moved(h.newest)
  local slots, sum = {}, 0
  for cell = h.newest - h.n + 1, h.newest do
    local units = buckets_read_slot(v, h, buckets_mod(cell - h.origin, h.n))
    local to = moved(cell)
    if units ~= 0 and to > newest - grid.n then
      local slot = buckets_mod(to, grid.n)
      slots[slot] = (slots[slot] or 0) + units
      sum = sum + units
      if sum >= BYTES_EXACT then state_corrupt() end
    end
  end
  ring.origin, ring.newest, ring.sum, ring.stored = 0, newest, sum, nil
  ring.get = function(cell) return slots[buckets_mod(cell, grid.n)] or 0 end
  return ring
end

local function buckets_oldest_live(ring, grid, now_cell)
  return math.max(ring.newest - grid.n + 1, now_cell - grid.n + 1)
end

-- The units in the window at now_cell, or nil when every cell has left.
local function buckets_live(ring, grid, now_cell)
  if ring.newest <= now_cell - grid.n then return nil end
  local count = ring.sum
  local from = ring.newest - grid.n + 1
  local to = math.min(buckets_oldest_live(ring, grid, now_cell) - 1, from + grid.n - 1)
  for cell = from, to do
    count = count - ring.get(cell)
  end
  if count < 0 then state_corrupt() end
  return count
end

-- The cell by whose leaving `must_leave` units (≥ 1) have left, oldest first.
local function buckets_leaving_by(ring, grid, now_cell, must_leave)
  local gone = 0
  local from = buckets_oldest_live(ring, grid, now_cell)
  for cell = from, math.min(ring.newest, from + grid.n - 1) do
    gone = gone + ring.get(cell)
    if gone >= must_leave then return cell end
  end
  state_corrupt()
end

local function buckets_cell_bytes_for(most)
  if most <= 255 then return 1 end
  if most <= 65535 then return 2 end
  if most <= 4294967295 then return 4 end
  return 8
end

local function buckets_header(grid, cell_bytes, origin, newest, sum)
  return 'CLB\1' .. string.char(cell_bytes, grid.n % 256, math.floor(grid.n / 256), origin % 256,
    math.floor(origin / 256)) .. string.sub(bytes_of_i64(grid.width_ms), 1, 6)
    .. bytes_of_i64(newest) .. bytes_of_i64(sum) .. '\0'
end

local function buckets_cell(cell_bytes, units)
  if cell_bytes == 8 then return bytes_of_i64(units) end
  return string.sub(bytes_of_u32(units), 1, cell_bytes)
end

-- The value an edit leaves, and whether it moves the key's expiry (Form::InPlace into the
-- newest cell does not): the slots of the cells in `emptied` (inclusive ranges) emptied,
-- then `cell` holding `units`, newest `newest`, the sum `sum`.
local function buckets_plan(p, grid, ring, edit)
  local leaves_at = (edit.newest + grid.n) * grid.width_ms
  -- An expiry past 2^53 ms could not be written exactly (a crafted value's).
  if leaves_at >= BYTES_EXACT then state_corrupt() end
  local plan = { expire_at_ms = leaves_at, moves = true }
  if ring == nil then
    local cb = buckets_cell_bytes_for(math.max(edit.units, p.limit))
    plan.whole = buckets_header(grid, cb, buckets_mod(edit.cell, grid.n), edit.newest, edit.sum)
      .. buckets_cell(cb, edit.units)
    return plan
  end
  local h = ring.stored
  local slots = {}
  local cb, origin, count
  if h and edit.units <= (BUCKETS_CELL_MAX[h.cell_bytes] or BYTES_EXACT) then
    -- In place: the stored slots, growing to the one written when it is past the end.
    cb, origin, count = h.cell_bytes, h.origin, h.slots
    for slot = 0, h.slots - 1 do slots[slot] = buckets_read_slot(ring.v, h, slot) end
    plan.moves = h.newest ~= edit.newest
  else
    -- Whole, from origin 0: every one of the n slots.
    local most = edit.units
    for cell = ring.newest - grid.n + 1, ring.newest do
      local units = ring.get(cell)
      slots[buckets_mod(cell, grid.n)] = units
      if units > most then most = units end
    end
    cb, origin, count = buckets_cell_bytes_for(math.max(most, p.limit)), 0, grid.n
  end
  local function slot_of(cell) return buckets_mod(cell - origin, grid.n) end
  for _, range in ipairs(edit.emptied) do
    for cell = range[1], math.min(range[2], range[1] + grid.n - 1) do
      slots[slot_of(cell)] = 0
    end
  end
  local slot = slot_of(edit.cell)
  slots[slot] = edit.units
  if slot + 1 > count then count = slot + 1 end
  local out = { buckets_header(grid, cb, origin, edit.newest, edit.sum) }
  for i = 0, count - 1 do out[#out + 1] = buckets_cell(cb, slots[i] or 0) end
  plan.whole = table.concat(out)
  return plan
end

-- Decides a call at now_ms against the stored value v (nil for none): the reply, and the
-- plan when it counts units.
function buckets_decide(p, v, now_ms)
  local grid = { n = p.buckets, width_ms = p.period_ms / p.buckets }
  local now_cell = math.floor(now_ms / grid.width_ms)
  local ring = v and buckets_ring(v, grid)
  local count = ring and buckets_live(ring, grid, now_cell)
  if count == nil then ring, count = nil, 0 end
  local function leaves_in(cell) return (cell + grid.n) * grid.width_ms - now_ms end
  local newest = ring and ring.newest
  local reset_now = newest and leaves_in(newest) or 0
  local wanted = count + p.quantity
  if wanted > p.limit then
    local retry = nil
    if ring and p.quantity <= p.limit then
      retry = leaves_in(buckets_leaving_by(ring, grid, now_cell, count - (p.limit - p.quantity)))
    end
    return reply_ms(true, p.limit, p.limit - count, retry, reset_now, p.unit)
  end
  if p.quantity == 0 then return reply_ms(false, p.limit, p.limit - wanted, nil, reset_now, p.unit) end
  -- A clock that stepped back counts into the newest cell the key holds.
  local at = newest and math.max(newest, now_cell) or now_cell
  local before = (ring and at == newest) and ring.get(at) or 0
  local emptied = { newest and { newest + 1, at } or { 1, 0 } }
  local plan = buckets_plan(p, grid, ring,
    { emptied = emptied, cell = at, units = before + p.quantity, newest = at, sum = wanted })
  return reply_ms(false, p.limit, p.limit - wanted, nil, leaves_in(at), p.unit), plan
end

-- REFUND: the newest units in the window leave, newest cell first.
function buckets_refund(p, v, now_ms)
  local function peek()
    local reply = buckets_decide({ limit = p.limit, quantity = 0, period_ms = p.period_ms,
      buckets = p.buckets, unit = p.unit }, v, now_ms)
    reply[1], reply[4] = 0, -1
    return reply
  end
  local grid = { n = p.buckets, width_ms = p.period_ms / p.buckets }
  local now_cell = math.floor(now_ms / grid.width_ms)
  if v == nil then return peek() end
  local ring = buckets_ring(v, grid)
  local count = buckets_live(ring, grid, now_cell)
  if count == nil or p.quantity == 0 then return peek() end
  if p.quantity >= count then return reply_ms(false, p.limit, p.limit, nil, 0, p.unit), { clear = true } end
  local oldest_live = buckets_oldest_live(ring, grid, now_cell)
  local left, cell, kept = p.quantity, ring.newest, nil
  while true do
    if cell < oldest_live then state_corrupt() end
    local units = ring.get(cell)
    if units > left then
      kept = units - left
      break
    end
    left = left - units
    cell = cell - 1
  end
  local sum = count - p.quantity
  local plan = buckets_plan(p, grid, ring, {
    emptied = { { ring.newest - grid.n + 1, oldest_live - 1 }, { cell + 1, ring.newest } },
    cell = cell, units = kept, newest = cell, sum = sum })
  return reply_ms(false, p.limit, p.limit - sum, nil, (cell + grid.n) * grid.width_ms - now_ms, p.unit), plan
end
end

do
-- CL.WINDOW in the library: the module's exact sliding window (src/window.rs) on the same
-- key, its compact log read and written byte for byte as src/window/log.rs and trim.rs do,
-- so that a key carries over either way. The log is read whole (GET) and searched as the
-- module searches it; an admission writes only the bytes it changes (SETRANGE), and a
-- refund, which shortens the value, writes it whole. Instants are numbers, refused past
-- 2^53 ms; the units counts are u64 pairs (bytes.lua).

local WINDOW_HEADER = 48
local WINDOW_CHECKSUMMED = 44
local WINDOW_BLOCK = 128
local WINDOW_BLOCK_HEADER = 16
-- Most entries one block holds: a first entry of 1 byte, then 2 bytes or more each.
local WINDOW_MAX_ENTRIES = 56
local WINDOW_MAX_LEN = 536870912
local WINDOW_TOO_LONG = 'ERR the sliding window log would exceed 512 MB: use a shorter period or fewer, larger calls'
local WINDOW_INTERNAL = 'ERR internal error in redis-cell; nothing was changed'

local function window_block_start(offset)
  if offset < WINDOW_HEADER then return nil end
  local within = (offset - WINDOW_HEADER) % WINDOW_BLOCK
  if within < WINDOW_BLOCK_HEADER then return nil end
  return offset - within
end

local function window_block_index(offset)
  if offset < WINDOW_HEADER then return 0 end
  return math.floor((offset - WINDOW_HEADER) / WINDOW_BLOCK)
end

local function window_block_offset(index)
  return WINDOW_HEADER + index * WINDOW_BLOCK
end

-- Where a read within the block ending at block_end stops: the block's end or the value's.
local function window_limit(log, block_end)
  local len = #log.v
  if block_end < len then return block_end end
  return len
end

-- An entry's units: a varint that is never 0.
local function window_units(v, at, limit)
  local hi, lo, after = bytes_varint(v, at, limit)
  if hi == nil or (hi == 0 and lo == 0) then state_corrupt() end
  return hi, lo, after
end

-- A delta in ms: a varint the module takes as an i64, which here must also be below 2^53.
local function window_delta(v, at, limit)
  local hi, lo, after = bytes_varint(v, at, limit)
  if hi == nil or hi >= 2097152 then state_corrupt() end
  return bytes_number(hi, lo), after
end

-- The entry at offset: its ms since the previous (0 for a block's first), units, and end.
local function window_entry(log, offset)
  local start = window_block_start(offset)
  if start == nil then state_corrupt() end
  local limit = window_limit(log, start + WINDOW_BLOCK)
  local delta, units_at = 0, offset
  if offset ~= start + WINDOW_BLOCK_HEADER then
    delta, units_at = window_delta(log.v, offset, limit)
  end
  local hi, lo, after = window_units(log.v, units_at, limit)
  return delta, hi, lo, after
end

-- A cursor: an entry's offset, when its units were admitted, and the units count before it.
local function window_cursor(offset, at_ms, before_hi, before_lo)
  return { offset = offset, at_ms = at_ms, hi = before_hi, lo = before_lo }
end

local function window_first_of_block(log, index)
  local offset = window_block_offset(index)
  if offset + WINDOW_BLOCK_HEADER > #log.v then state_corrupt() end
  local base_ms = bytes_i64(log.v, offset)
  if base_ms == nil then state_corrupt() end
  local hi, lo = bytes_u64(log.v, offset + 8)
  return window_cursor(offset + WINDOW_BLOCK_HEADER, base_ms, hi, lo)
end

-- The units from a count `before` to the log's end, as a pair, if a possible number of live
-- units (1 to i64::MAX).
local function window_units_between(log, hi, lo)
  local h, l = bytes_sub(log.logged_hi, log.logged_lo, hi, lo)
  if h >= BYTES_2_31 or (h == 0 and l == 0) then return nil end
  return h, l
end

-- The log in value v, its header checked as the module checks it; nil when it is not one.
local function window_decode(v)
  if #v < WINDOW_HEADER then return nil end
  local b = { string.byte(v, 1, WINDOW_HEADER) }
  -- 'CLW' and the format's version, 2.
  if b[1] ~= 67 or b[2] ~= 76 or b[3] ~= 87 or b[4] ~= 2 then return nil end
  if bytes_checksum(b, WINDOW_CHECKSUMMED) ~= bytes_array_u32(b, WINDOW_CHECKSUMMED) then return nil end
  local head_hi, head_lo = bytes_array_u64(b, 28)
  local logged_hi, logged_lo = bytes_array_u64(b, 36)
  local log = { v = v, head = bytes_array_u32(b, 4), tail = bytes_array_u32(b, 8),
    head_ms = bytes_signed(bytes_array_u64(b, 12)), tail_ms = bytes_signed(bytes_array_u64(b, 20)),
    head_hi = head_hi, head_lo = head_lo, logged_hi = logged_hi, logged_lo = logged_lo }
  if log.head_ms == nil or log.tail_ms == nil then return nil end
  if window_block_start(log.head) == nil or log.head > log.tail or log.head_ms > log.tail_ms
    or window_units_between(log, log.head_hi, log.head_lo) == nil then
    return nil
  end
  local ok, _, _, _, after = pcall(window_entry, log, log.tail)
  if not ok or after ~= #v then return nil end
  return log
end

-- The first of the blocks from..to-1 (by index) that is not `before`, given that those that
-- are come first.
local function window_first_block(log, from, to, before)
  while from < to do
    local middle = from + math.floor((to - from) / 2)
    local offset = window_block_offset(middle)
    if offset + WINDOW_BLOCK_HEADER > #log.v then state_corrupt() end
    local base_ms = bytes_i64(log.v, offset)
    if base_ms == nil then state_corrupt() end
    local hi, lo = bytes_u64(log.v, offset + 8)
    if before(base_ms, hi, lo) then
      from = middle + 1
    else
      to = middle
    end
  end
  return from
end

-- The first entry from cursor `from` on that is `found`, given when its units were admitted
-- and the units count after them; more than one block's entries and the next's first
-- means damage.
local function window_walk(log, from, found)
  local v = log.v
  local offset, at_ms, hi, lo = from.offset, from.at_ms, from.hi, from.lo
  local _, units_hi, units_lo, ends = window_entry(log, offset)
  local block_end = window_block_start(offset) + WINDOW_BLOCK
  local limit = window_limit(log, block_end)
  for _ = 0, WINDOW_MAX_ENTRIES do
    local after_hi, after_lo = bytes_add(hi, lo, units_hi, units_lo)
    if found(at_ms, after_hi, after_lo) then return window_cursor(offset, at_ms, hi, lo) end
    if offset >= log.tail then break end
    local low = ends < limit and string.byte(v, ends + 1) or 0
    if low ~= 0 then
      local delta, units_at = window_delta(v, ends, limit)
      local next_hi, next_lo, next_end = window_units(v, units_at, limit)
      at_ms = at_ms + delta
      if at_ms >= BYTES_EXACT then state_corrupt() end
      offset, hi, lo, units_hi, units_lo, ends = ends, after_hi, after_lo, next_hi, next_lo, next_end
    else
      local next = window_first_of_block(log, window_block_index(block_end))
      if next.hi ~= after_hi or next.lo ~= after_lo then state_corrupt() end
      _, units_hi, units_lo, ends = window_entry(log, next.offset)
      offset, at_ms, hi, lo = next.offset, next.at_ms, next.hi, next.lo
      block_end = block_end + WINDOW_BLOCK
      limit = window_limit(log, block_end)
    end
  end
  state_corrupt()
end

-- Whether units admitted at at_ms have left p's window by now_ms.
local function window_expired(p, now_ms, at_ms)
  return now_ms - at_ms >= p.period_ms
end

-- How long until units admitted at at_ms leave p's window.
local function window_gone_in(p, now_ms, at_ms)
  return at_ms + p.period_ms - now_ms
end

-- The oldest entry not expired by now_ms and the live units from it on, as a pair; nil when
-- every entry has expired. Entries before the head count as expired whatever their time.
local function window_live(log, p, now_ms)
  if window_expired(p, now_ms, log.tail_ms) then return nil end
  local head = window_cursor(log.head, log.head_ms, log.head_hi, log.head_lo)
  local oldest = head
  if window_expired(p, now_ms, head.at_ms) then
    local function expired(at_ms) return window_expired(p, now_ms, at_ms) end
    local after_head = window_block_index(log.head) + 1
    local live_block = window_first_block(log, after_head, window_block_index(log.tail) + 1, expired)
    local from = head
    if live_block > after_head then from = window_first_of_block(log, live_block - 1) end
    oldest = window_walk(log, from, function(at_ms) return not expired(at_ms) end)
  end
  local hi, lo = window_units_between(log, oldest.hi, oldest.lo)
  if hi == nil then state_corrupt() end
  return { oldest = oldest, hi = hi, lo = lo, total = bytes_number(hi, lo) }
end

-- When the entry was admitted by which `must_leave` units (a pair, ≥ 1, at most the live
-- units) from the oldest live one have left.
local function window_when_units_left(log, oldest, must_hi, must_lo)
  local function enough(hi, lo)
    local gone_hi, gone_lo = bytes_sub(hi, lo, oldest.hi, oldest.lo)
    return bytes_cmp(gone_hi, gone_lo, must_hi, must_lo) >= 0
  end
  local after_oldest = window_block_index(oldest.offset) + 1
  local enough_block = window_first_block(log, after_oldest, window_block_index(log.tail) + 1,
    function(_, hi, lo) return not enough(hi, lo) end)
  local from = oldest
  if enough_block > after_oldest then from = window_first_of_block(log, enough_block - 1) end
  return window_walk(log, from, function(_, hi, lo) return enough(hi, lo) end).at_ms
end

-- A header's 48 bytes: head and tail cursors, and the units count after the tail.
local function window_header(head, tail, logged_hi, logged_lo)
  local fields = 'CLW\2' .. bytes_of_u32(head.offset) .. bytes_of_u32(tail.offset)
    .. bytes_of_i64(head.at_ms) .. bytes_of_i64(tail.at_ms)
    .. bytes_of_u64(head.hi, head.lo) .. bytes_of_u64(logged_hi, logged_lo)
  return fields .. bytes_of_u32(bytes_checksum({ string.byte(fields, 1, WINDOW_CHECKSUMMED) }, WINDOW_CHECKSUMMED))
end

-- How an admission logs `units` (≥ 1, below 2^53) at at_ms in the log (nil: a fresh one):
-- the value's new bytes from `from` on, with the new header, or the whole value (`whole`).
-- Everything that can fail on what the key holds fails here, before any write.
local function window_plan_append(log, live, at_ms, units)
  local units_hi, units_lo = bytes_pair(units)
  if log == nil then
    local entry = window_cursor(WINDOW_HEADER + WINDOW_BLOCK_HEADER, at_ms, 0, 0)
    return { whole = window_header(entry, entry, units_hi, units_lo) .. bytes_of_i64(at_ms)
      .. bytes_of_u64(0, 0) .. bytes_of_varint(units_hi, units_lo) }
  end
  local v = log.v
  local stored_len = #v
  local oldest = live.oldest
  if not (oldest.offset <= log.tail and log.tail < stored_len) then state_corrupt() end
  local oldest_start = window_block_start(oldest.offset)
  if oldest_start == nil then state_corrupt() end
  local dead = oldest_start - WINDOW_HEADER
  -- Whole dead blocks are reclaimed once they are more than half the value: the rest moves
  -- down, every block staying on its grid.
  local reclaimed = 0
  if dead >= WINDOW_BLOCK and dead > math.floor((stored_len - WINDOW_HEADER) / 2) then
    reclaimed = dead
  end
  local merging = at_ms == log.tail_ms
  local delta, entry_hi, entry_lo, before_hi, before_lo
  if merging then
    -- The same millisecond as the newest entry: add to its units.
    local tail_delta, tail_hi, tail_lo = window_entry(log, log.tail)
    local first_in_block = log.tail >= WINDOW_BLOCK_HEADER
      and window_block_start(log.tail) == log.tail - WINDOW_BLOCK_HEADER
    if not first_in_block then delta = tail_delta end
    entry_hi, entry_lo = bytes_add(tail_hi, tail_lo, units_hi, units_lo)
    if bytes_cmp(entry_hi, entry_lo, tail_hi, tail_lo) < 0 then state_corrupt() end
    before_hi, before_lo = bytes_sub(log.logged_hi, log.logged_lo, tail_hi, tail_lo)
  else
    delta = at_ms - log.tail_ms
    if delta < 1 then state_fail(WINDOW_INTERNAL) end
    entry_hi, entry_lo = units_hi, units_lo
    before_hi, before_lo = log.logged_hi, log.logged_lo
  end
  local tail, len = log.tail - reclaimed, stored_len - reclaimed
  local head = window_cursor(oldest.offset - reclaimed, oldest.at_ms, oldest.hi, oldest.lo)
  local from = merging and tail or len
  local block_end = window_block_start(tail) + WINDOW_BLOCK
  local entry = bytes_of_varint(entry_hi, entry_lo)
  local delta_bytes = delta and bytes_of_varint(bytes_pair(delta)) or ''
  local new_block = from + #delta_bytes + #entry > block_end
  local offset = from
  if new_block then
    offset = block_end + WINDOW_BLOCK_HEADER
    delta_bytes = ''
  end
  local new_len = offset + #delta_bytes + #entry
  if new_len > WINDOW_MAX_LEN then state_fail(WINDOW_TOO_LONG) end
  if merging and head.offset == tail then head.offset = offset end
  local newest = window_cursor(offset, at_ms, before_hi, before_lo)
  local logged_hi, logged_lo = bytes_add(log.logged_hi, log.logged_lo, units_hi, units_lo)
  local bytes = delta_bytes .. entry
  if new_block then
    -- What the newest entry leaves of its block, its own old bytes when it moves out, is
    -- padding.
    bytes = string.rep('\0', block_end - from) .. bytes_of_i64(at_ms)
      .. bytes_of_u64(before_hi, before_lo) .. bytes
  end
  local header = window_header(head, newest, logged_hi, logged_lo)
  -- A merge that re-encodes a padded entry shorter leaves the value shorter: written whole.
  if reclaimed > 0 or new_len < len then
    return { whole = header .. string.sub(v, WINDOW_HEADER + reclaimed + 1, reclaimed + from)
      .. bytes }
  end
  return { header = header, from = from, bytes = bytes }
end

-- The entries of block `index` up to the newest, each with its cursor, units and where its
-- units field starts.
local function window_block_entries(log, index)
  local v = log.v
  local cursor = window_first_of_block(log, index)
  local limit = window_limit(log, window_block_offset(index) + WINDOW_BLOCK)
  local entries = {}
  local units_at = cursor.offset
  for _ = 1, WINDOW_MAX_ENTRIES do
    local hi, lo, ends = window_units(v, units_at, limit)
    entries[#entries + 1] = { cursor = cursor, hi = hi, lo = lo, units_at = units_at }
    if cursor.offset >= log.tail then break end
    local low = ends < limit and string.byte(v, ends + 1) or 0
    if low == 0 then break end
    local delta, after = window_delta(v, ends, limit)
    local at_ms = cursor.at_ms + delta
    if at_ms >= BYTES_EXACT then state_corrupt() end
    local after_hi, after_lo = bytes_add(cursor.hi, cursor.lo, hi, lo)
    cursor = window_cursor(ends, at_ms, after_hi, after_lo)
    units_at = after
  end
  return entries
end

-- The value left when `entry`, keeping `units` (a number) of its own, becomes the newest.
local function window_trim_to(log, entry, units)
  local logged_hi, logged_lo = bytes_add(entry.cursor.hi, entry.cursor.lo, bytes_pair(units))
  if entry.cursor.offset < log.head or entry.cursor.at_ms < log.head_ms then state_corrupt() end
  local head = window_cursor(log.head, log.head_ms, log.head_hi, log.head_lo)
  local value = window_header(head, entry.cursor, logged_hi, logged_lo)
    .. string.sub(log.v, WINDOW_HEADER + 1, entry.units_at) .. bytes_of_varint(bytes_pair(units))
  return { whole = value, tail_ms = entry.cursor.at_ms }
end

-- How a refund takes the newest `units` (≥ 1, fewer than the live units) out of the log: a
-- walk back over the blocks they are in, from the newest.
local function window_plan_trim(log, live, units)
  local left = units
  local oldest_block = window_block_index(live.oldest.offset)
  local index = window_block_index(log.tail)
  local entries = window_block_entries(log, index)
  -- The walk must find the newest entry where the header says, ending the units count.
  local last = entries[#entries]
  local end_hi, end_lo = bytes_add(last.cursor.hi, last.cursor.lo, last.hi, last.lo)
  if last.cursor.offset ~= log.tail or end_hi ~= log.logged_hi or end_lo ~= log.logged_lo then
    state_corrupt()
  end
  while true do
    while #entries > 0 do
      local entry = table.remove(entries)
      local entry_units = bytes_number(entry.hi, entry.lo)
      if entry_units > left then return window_trim_to(log, entry, entry_units - left) end
      left = left - entry_units
      if left == 0 then
        local kept = entries[#entries]
        if kept == nil then
          if index <= oldest_block then state_corrupt() end
          local before = window_block_entries(log, index - 1)
          kept = before[#before]
        end
        return window_trim_to(log, kept, bytes_number(kept.hi, kept.lo))
      end
    end
    if index <= oldest_block then state_corrupt() end
    index = index - 1
    entries = window_block_entries(log, index)
  end
end

-- When a key whose newest units came at at_ms expires; one past 2^53 ms, which only a
-- crafted value reaches, could not be written exactly, and the value is refused.
local function window_expiry(at_ms, p)
  local expiry = at_ms + p.period_ms
  if expiry >= BYTES_EXACT then state_corrupt() end
  return expiry
end

-- Decides a call at now_ms: the reply, and the plan to write when it logs units.
local function window_decide(p, log, now_ms)
  local live = log and window_live(log, p, now_ms)
  if live == nil then log = nil end
  local total = live and live.total or 0
  local newest_ms = log and log.tail_ms
  if total + p.quantity <= p.limit then
    local wanted = total + p.quantity
    local plan, newest_after = nil, newest_ms
    if p.quantity > 0 then
      -- A clock that stepped back must not put units before those already logged.
      local at_ms = newest_ms and math.max(newest_ms, now_ms) or now_ms
      plan = window_plan_append(log, live, at_ms, p.quantity)
      plan.expire_at_ms = window_expiry(at_ms, p)
      newest_after = at_ms
    end
    local reset = newest_after and window_gone_in(p, now_ms, newest_after) or 0
    return reply_ms(false, p.limit, p.limit - wanted, nil, reset, p.unit), plan
  end
  local retry = nil
  if live and p.quantity <= p.limit then
    local must_hi, must_lo = bytes_sub(live.hi, live.lo, bytes_pair(p.limit - p.quantity))
    retry = window_gone_in(p, now_ms, window_when_units_left(log, live.oldest, must_hi, must_lo))
  end
  return reply_ms(true, p.limit, p.limit - total, retry, newest_ms and window_gone_in(p, now_ms, newest_ms) or 0, p.unit)
end

-- REFUND: up to the quantity of the newest live units leave the log (src/window.rs says
-- why the newest). The reply, and the plan: a value to write, or `clear`.
local function window_refund(p, log, now_ms)
  local live = log and window_live(log, p, now_ms)
  if live == nil then return reply_ms(false, p.limit, p.limit, nil, 0, p.unit) end
  if p.quantity == 0 then
    return reply_ms(false, p.limit, p.limit - live.total, nil, window_gone_in(p, now_ms, log.tail_ms), p.unit)
  end
  if p.quantity >= live.total then
    return reply_ms(false, p.limit, p.limit, nil, 0, p.unit), { clear = true }
  end
  local plan = window_plan_trim(log, live, p.quantity)
  plan.expire_at_ms = window_expiry(plan.tail_ms, p)
  return reply_ms(false, p.limit, p.limit - (live.total - p.quantity), nil, window_gone_in(p, now_ms, plan.tail_ms), p.unit), plan
end

-- The form a call reads cannot read the value: named when the value holds the other form.
local function window_form_error(p, v)
  if p.buckets then
    if window_decode(v) then return 'ERR the key holds an exact sliding window, not one of BUCKETS' end
  else
    local n = buckets_cells_in(v)
    if n then return 'ERR the key holds a sliding window of BUCKETS ' .. n .. ', not an exact one' end
  end
  return STATE_CORRUPT
end

-- Decides a call of either form on the stored value (nil for none): the reply and the plan.
local function window_run(p, v, now_ms)
  if p.buckets then
    return (p.refund and buckets_refund or buckets_decide)(p, v, now_ms)
  end
  local log = nil
  if v then
    log = window_decode(v)
    if log == nil then state_corrupt() end
  end
  return (p.refund and window_refund or window_decide)(p, log, now_ms)
end

-- Decides p at now_ms: either form, its errors naming the other.
local function window_call(p, v, now_ms)
  local ok, reply, plan = pcall(window_run, p, v, now_ms)
  if not ok then
    local text = state_caught(reply)
    if text == STATE_CORRUPT and v then text = window_form_error(p, v) end
    state_fail(text)
  end
  return reply, plan
end

-- The kind (single.lua).
WINDOW = {
  read = function(key) return state_bytes(key) end,
  decide = function(p, v, _, now_ms) return window_call(p, v, now_ms) end,
  peek = function(p, v, _, now_ms)
    local peek = {}
    for name, value in pairs(p) do peek[name] = value end
    peek.quantity, peek.refund = 0, false
    return (window_call(peek, v, now_ms))
  end,
  write = function(key, _, plan)
    if plan.clear then
      redis.call('DEL', key)
    elseif plan.whole and plan.moves == false then
      redis.call('SET', key, plan.whole, 'KEEPTTL')
    elseif plan.whole then
      redis.call('SET', key, plan.whole, 'PXAT', plan.expire_at_ms)
    else
      redis.call('SETRANGE', key, plan.from, plan.bytes)
      redis.call('SETRANGE', key, 0, plan.header)
      redis.call('PEXPIREAT', key, plan.expire_at_ms)
    end
  end,
}

-- FCALL cl_window 1 key limit period [quantity] [BUCKETS n] [MS] [REFUND] [DRYRUN]
function cl_window(keys, args)
  if #keys ~= 1 then return redis.error_reply(args_wrong_arity('cl.window')) end
  local p, err = args_window(args, 'cl.window', true)
  if p == nil then return redis.error_reply(err) end
  return single_run(keys[1], WINDOW, p)
end
end

do
-- CL.LEASE, CL.RELEASE and CL.HOLDERS in the library: the module's set of leases
-- (src/lease.rs, src/lease/set.rs, src/lease/edit.rs) on the same key. The module edits the
-- set in place; here each edit makes the value again from the one before, moving the same
-- bytes the same way (bytes it leaves behind included), and the call writes the result
-- once, whole. Offsets are 0-based, as the module's.

local LEASE_HEADER = 20
local LEASE_SLOT = 3
local LEASE_END_LEN = 6
local LEASE_OVERHEAD = 7
local LEASE_MAX_HEAP = 16777216
local LEASE_MAX_END_MS = 281474976710655
local LEASE_MAX_VALUE = 536870912
local LEASE_TOO_LONG = 'ERR the set of leases would exceed 512 MB: use a smaller limit or shorter holder names'
local LEASE_INTERNAL = 'ERR internal error in redis-cell; nothing was changed'

local function lease_internal()
  state_fail(LEASE_INTERNAL)
end

local function lease_u24(v, at)
  local a, b, c = string.byte(v, at + 1, at + 3)
  return a + b * 256 + c * 65536
end

local function lease_of_u24(x)
  if x >= LEASE_MAX_HEAP then state_fail(LEASE_TOO_LONG) end
  return string.char(x % 256, math.floor(x / 256) % 256, math.floor(x / 65536))
end

local function lease_of_end(ms)
  return string.sub(bytes_of_i64(ms), 1, LEASE_END_LEN)
end

-- v with `bytes` written at `at`.
local function lease_put(v, at, bytes)
  return string.sub(v, 1, at) .. bytes .. string.sub(v, at + #bytes + 1)
end

-- v with its bytes from..to-1 copied to dst, as memmove copies them.
local function lease_copy(v, from, to, dst)
  if to <= from then return v end
  return lease_put(v, dst, string.sub(v, from + 1, to))
end

-- v cut to len bytes, or grown to it with zero bytes, as the server truncates a string.
local function lease_resize(v, len)
  if len <= #v then return string.sub(v, 1, len) end
  return v .. string.rep('\0', len - #v)
end

-- -1, 0 or 1 as byte string a sorts before, with or after b (Lua's `<` would use the
-- server's locale).
local function lease_cmp(a, b)
  if a == b then return 0 end
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y and -1 or 1 end
  end
  return #a < #b and -1 or 1
end

-- (end, holder) pairs in the order of `by_end`.
local function lease_cmp_end(end_a, holder_a, end_b, holder_b)
  if end_a ~= end_b then return end_a < end_b and -1 or 1 end
  return lease_cmp(holder_a, holder_b)
end

local function lease_sizes_len(s)
  return LEASE_HEADER + s.heap_len + 2 * LEASE_SLOT * s.count
end

local function lease_by_holder_at(s)
  return LEASE_HEADER + s.heap_len
end

local function lease_by_end_at(s)
  return lease_by_holder_at(s) + LEASE_SLOT * s.count
end

-- Value v read as a set (LeaseSet::parse): its sizes and v, or the error.
local function lease_parse(v)
  if #v < LEASE_HEADER or string.sub(v, 1, 4) ~= 'CLL\1' then state_corrupt() end
  local s = { v = v, count = bytes_u32(v, 4), heap_len = bytes_u32(v, 8), holes = bytes_u32(v, 12),
    tail = bytes_u32(v, 16) }
  s.gaps = s.holes - s.tail
  s.in_use = s.heap_len - s.holes
  if s.count * 2 * LEASE_SLOT + s.heap_len + LEASE_HEADER ~= #v or s.tail > s.holes
    or s.holes > s.heap_len or s.count * (LEASE_OVERHEAD + 1) > s.in_use then
    state_corrupt()
  end
  return s
end

local function lease_slot(s, index_at, i)
  if i >= s.count then lease_internal() end
  local at = index_at + i * LEASE_SLOT
  if at + LEASE_SLOT > #s.v then state_corrupt() end
  return lease_u24(s.v, at)
end

-- The entry at heap offset `offset`: its holder and its end.
local function lease_entry(s, offset)
  if offset >= s.heap_len then state_corrupt() end
  local at = LEASE_HEADER + offset
  local len = string.byte(s.v, at + 1)
  if len == 0 or offset + LEASE_OVERHEAD + len > s.heap_len then state_corrupt() end
  local holder = string.sub(s.v, at + 2, at + 1 + len)
  local a, b, c, d, e, f = string.byte(s.v, at + 2 + len, at + 7 + len)
  return holder, a + b * 256 + c * 65536 + d * 16777216 + (e + f * 256) * BYTES_2_32
end

local function lease_by_end(s, i)
  return lease_entry(s, lease_slot(s, lease_by_end_at(s), i))
end

local function lease_by_holder(s, i)
  return lease_entry(s, lease_slot(s, lease_by_holder_at(s), i))
end

-- How many leases end at or before now_ms: the first of `by_end`.
local function lease_ended_by(s, now_ms)
  if s.count == 0 then return 0 end
  local _, first_end = lease_by_end(s, 0)
  if first_end > now_ms then return 0 end
  local low, high = 1, s.count
  while low < high do
    local mid = low + math.floor((high - low) / 2)
    local _, end_ms = lease_by_end(s, mid)
    if end_ms <= now_ms then low = mid + 1 else high = mid end
  end
  return low
end

-- Where holder is in `by_holder` (true) or would go (false).
local function lease_search_holder(s, holder)
  local low, high = 0, s.count
  while low < high do
    local mid = low + math.floor((high - low) / 2)
    local c = lease_cmp(lease_by_holder(s, mid), holder)
    if c < 0 then low = mid + 1 elseif c > 0 then high = mid else return mid, true end
  end
  return low, false
end

-- Where a lease ending at end_ms held by holder is in `by_end` (true) or would go (false).
local function lease_search_end(s, end_ms, holder)
  if s.count > 0 then
    local other, other_end = lease_by_end(s, s.count - 1)
    if lease_cmp_end(other_end, other, end_ms, holder) < 0 then return s.count, false end
  end
  local low, high = 0, s.count
  while low < high do
    local mid = low + math.floor((high - low) / 2)
    local other, other_end = lease_by_end(s, mid)
    local c = lease_cmp_end(other_end, other, end_ms, holder)
    if c < 0 then low = mid + 1 elseif c > 0 then high = mid else return mid, true end
  end
  return low, false
end

-- The holder's lease, live or not: { by_holder, by_end, end_ms }, or nil.
local function lease_find(s, holder)
  local by_holder, found = lease_search_holder(s, holder)
  if not found then return nil end
  local _, end_ms = lease_by_holder(s, by_holder)
  local by_end, in_end = lease_search_end(s, end_ms, holder)
  if not in_end then state_corrupt() end
  return { by_holder = by_holder, by_end = by_end, end_ms = end_ms }
end

-- The length to make a value of `used` bytes: a tail of a thirty-second more, at least 64
-- bytes, and at most `longest`.
local function lease_with_tail(used, longest)
  if used > longest then state_fail(LEASE_TOO_LONG) end
  return math.min(used + math.max(math.floor(used / 32), 64), longest)
end

local function lease_write_sizes(v, count, heap_len, holes, tail)
  if count >= BYTES_2_32 or heap_len >= BYTES_2_32 or holes >= BYTES_2_32 or tail >= BYTES_2_32 then
    state_fail(LEASE_TOO_LONG)
  end
  return lease_put(v, 4, bytes_of_u32(count) .. bytes_of_u32(heap_len) .. bytes_of_u32(holes)
    .. bytes_of_u32(tail))
end

-- The entries at `offsets`, in heap order with their lengths ({ offset, len }), once checked
-- to be packable: none overlaps another, and together they are `in_use` bytes.
local function lease_entries_in_use(s, offsets, in_use)
  table.sort(offsets)
  local entries, total, free_from = {}, 0, 0
  for _, offset in ipairs(offsets) do
    if offset < free_from then state_corrupt() end
    local holder = lease_entry(s, offset)
    local len = LEASE_OVERHEAD + #holder
    free_from = offset + len
    total = total + len
    entries[#entries + 1] = { offset, len }
  end
  if total ~= in_use then state_corrupt() end
  return entries
end

-- Moves the entries in use to the start of the heap, in heap order. Each lands at or
-- before itself and no move overwrites one still to come, so the heap becomes the entries
-- one after another, then what the heap held past them; both indexes are written anew.
local function lease_pack(v)
  local s = lease_parse(v)
  local offsets = {}
  for i = 0, s.count - 1 do offsets[#offsets + 1] = lease_slot(s, lease_by_holder_at(s), i) end
  local entries = lease_entries_in_use(s, offsets, s.in_use)
  local new_of, packed, heap = {}, 0, {}
  for _, e in ipairs(entries) do
    new_of[e[1]] = packed
    packed = packed + e[2]
    heap[#heap + 1] = string.sub(v, LEASE_HEADER + e[1] + 1, LEASE_HEADER + e[1] + e[2])
  end
  local slots = {}
  for _, index_at in ipairs({ lease_by_holder_at(s), lease_by_end_at(s) }) do
    for i = 0, s.count - 1 do
      local new = new_of[lease_slot(s, index_at, i)]
      if new == nil then state_corrupt() end
      slots[#slots + 1] = lease_of_u24(new)
    end
  end
  v = string.sub(v, 1, LEASE_HEADER) .. table.concat(heap)
    .. string.sub(v, LEASE_HEADER + packed + 1, LEASE_HEADER + s.heap_len) .. table.concat(slots)
  local free = s.heap_len - packed
  return lease_write_sizes(v, s.count, s.heap_len, free, free)
end

-- Packs the entries once the holes between them outweigh those in use, and makes the value
-- shorter once its tail is more than twice a new one and an eighth of the entries.
local function lease_tidy(v)
  local s = lease_parse(v)
  if s.gaps > s.in_use then
    v = lease_pack(v)
    s = lease_parse(v)
  end
  local len = lease_sizes_len(s)
  local used = len - s.tail
  local shorter = lease_with_tail(used, len)
  if s.tail > 2 * (shorter - used) + math.floor(s.in_use / 8) then
    local heap_len = shorter - LEASE_HEADER - 2 * LEASE_SLOT * s.count
    v = lease_copy(v, lease_by_holder_at(s), len, LEASE_HEADER + heap_len)
    v = lease_resize(v, shorter)
    local tail = s.tail - (s.heap_len - heap_len)
    v = lease_write_sizes(v, s.count, heap_len, s.gaps + tail, tail)
  end
  return v
end

-- Takes the slots at the given indexes (ascending, as many in each) out of both indexes,
-- whose entries, at `freed` ({ offset, len }, ascending), become holes (Editor::cut).
local function lease_cut(v, freed, by_holder, by_end)
  local old = lease_parse(v)
  local cut = #by_holder
  local function ascending(indexes)
    for i = 2, #indexes do
      if indexes[i - 1] >= indexes[i] then return false end
    end
    return #indexes == 0 or indexes[#indexes] < old.count
  end
  if #by_end ~= cut or #freed ~= cut or not ascending(by_holder) or not ascending(by_end) or cut == 0 then
    lease_internal()
  end
  local tail_from = old.heap_len - old.tail
  for i = #freed, 1, -1 do
    if freed[i][1] + freed[i][2] == tail_from then tail_from = freed[i][1] end
  end
  local freed_len = 0
  for _, f in ipairs(freed) do freed_len = freed_len + f[2] end
  local count = old.count - cut
  local heap_len = old.heap_len + 2 * LEASE_SLOT * cut
  local holes = old.holes + freed_len + 2 * LEASE_SLOT * cut
  if holes > heap_len then state_corrupt() end
  local tail = heap_len - tail_from
  local in_use = heap_len - holes
  if tail > holes or count * (LEASE_OVERHEAD + 1) > in_use then state_corrupt() end
  if holes - tail > in_use then
    -- Packing comes next: both indexes must name the same entries, and those must pack.
    local kept = {}
    for k, spec in ipairs({ { lease_by_holder_at(old), by_holder }, { lease_by_end_at(old), by_end } }) do
      local skip, list, j = spec[2], {}, 1
      for i = 0, old.count - 1 do
        if skip[j] == i then j = j + 1 else list[#list + 1] = lease_slot(old, spec[1], i) end
      end
      table.sort(list)
      kept[k] = list
    end
    if #kept[1] ~= #kept[2] then state_corrupt() end
    for i = 1, #kept[1] do
      if kept[1][i] ~= kept[2][i] then state_corrupt() end
    end
    lease_entries_in_use(old, kept[1], in_use)
  end
  if #v ~= lease_sizes_len(old) then lease_internal() end
  -- Each index's kept slots move, in order, to end the value (by_holder's just before
  -- by_end's); what they leave before them stays as it was.
  local kept = {}
  for _, spec in ipairs({ { lease_by_holder_at(old), by_holder }, { lease_by_end_at(old), by_end } }) do
    local at, skip, j = spec[1], spec[2], 1
    for i = 0, old.count - 1 do
      if skip[j] == i then
        j = j + 1
      else
        kept[#kept + 1] = string.sub(v, at + LEASE_SLOT * i + 1, at + LEASE_SLOT * (i + 1))
      end
    end
  end
  v = string.sub(v, 1, LEASE_HEADER + heap_len) .. table.concat(kept)
  return lease_write_sizes(v, count, heap_len, holes, tail)
end

-- Adds holder's lease ending at end_ms to the set in v ('' for a new key's).
local function lease_insert(v, holder, end_ms)
  local new_key = #v == 0
  local at_holder, at_end = 0, 0
  local old = { count = 0, heap_len = 0, holes = 0, tail = 0, gaps = 0, in_use = 0 }
  if not new_key then
    old = lease_parse(v)
    local found
    at_holder, found = lease_search_holder(old, holder)
    if found then lease_internal() end
    at_end = lease_search_end(old, end_ms, holder)
  end
  local entry_len = LEASE_OVERHEAD + #holder
  local needs = entry_len + 2 * LEASE_SLOT
  -- Short of tail, holes worth an eighth of the entries are packed into it.
  if old.tail < needs and old.gaps >= needs and old.gaps * 8 >= old.in_use then
    v = lease_pack(v)
    old = lease_parse(v)
  end
  local offset = old.heap_len - old.tail
  if offset + entry_len > LEASE_MAX_HEAP then state_fail(LEASE_TOO_LONG) end
  local old_len = lease_sizes_len(old)
  local grows = old.tail < needs
  local new_len = old_len
  if grows then
    local longest = math.min(LEASE_MAX_VALUE, LEASE_HEADER + LEASE_MAX_HEAP + 2 * LEASE_SLOT * (old.count + 1))
    new_len = lease_with_tail(old_len - old.tail + needs, longest)
  end
  local count = old.count + 1
  local heap_len = new_len - LEASE_HEADER - 2 * LEASE_SLOT * count
  local tail = heap_len - offset - entry_len
  local holes = old.gaps + tail
  local holder_at, end_at = lease_by_holder_at(old), lease_by_end_at(old)
  local new_holder_at = LEASE_HEADER + heap_len
  local new_end_at = new_holder_at + LEASE_SLOT * count
  local runs = {
    { holder_at, holder_at + LEASE_SLOT * at_holder, new_holder_at },
    { holder_at + LEASE_SLOT * at_holder, end_at, new_holder_at + LEASE_SLOT * (at_holder + 1) },
    { end_at, end_at + LEASE_SLOT * at_end, new_end_at },
    { end_at + LEASE_SLOT * at_end, old_len, new_end_at + LEASE_SLOT * (at_end + 1) },
  }
  if grows then
    local indexes = new_key and '' or string.sub(v, holder_at + 1, old_len)
    v = lease_resize(v, new_len)
    if new_key then v = lease_put(v, 0, 'CLL\1' .. string.rep('\0', LEASE_HEADER - 4)) end
    for _, run in ipairs(runs) do
      v = lease_put(v, run[3], string.sub(indexes, run[1] - holder_at + 1, run[2] - holder_at))
    end
  else
    for _, run in ipairs(runs) do v = lease_copy(v, run[1], run[2], run[3]) end
  end
  v = lease_put(v, LEASE_HEADER + offset, string.char(#holder) .. holder .. lease_of_end(end_ms))
  local slot = lease_of_u24(offset)
  v = lease_put(v, new_holder_at + LEASE_SLOT * at_holder, slot)
  v = lease_put(v, new_end_at + LEASE_SLOT * at_end, slot)
  return lease_write_sizes(v, count, heap_len, holes, tail)
end

-- Moves the end of the lease `found` names to end_ms.
local function lease_renew(v, holder, found, end_ms)
  local s = lease_parse(v)
  local offset = lease_slot(s, lease_by_end_at(s), found.by_end)
  if lease_entry(s, offset) ~= holder then lease_internal() end
  local at = lease_search_end(s, end_ms, holder)
  if at > found.by_end then at = at - 1 end
  v = lease_put(v, LEASE_HEADER + offset + 1 + #holder, lease_of_end(end_ms))
  local from = lease_by_end_at(s) + LEASE_SLOT * found.by_end
  local to = lease_by_end_at(s) + LEASE_SLOT * at
  if to > from then
    v = lease_copy(v, from + LEASE_SLOT, to + LEASE_SLOT, from)
  else
    v = lease_copy(v, to, from, to + LEASE_SLOT)
  end
  return lease_put(v, to, lease_of_u24(offset))
end

-- Takes the lease `found` names out of the set.
local function lease_remove(v, holder, found)
  local s = lease_parse(v)
  local offset = lease_slot(s, lease_by_holder_at(s), found.by_holder)
  if lease_slot(s, lease_by_end_at(s), found.by_end) ~= offset or lease_entry(s, offset) ~= holder then
    lease_internal()
  end
  v = lease_cut(v, { { offset, LEASE_OVERHEAD + #holder } }, { found.by_holder }, { found.by_end })
  return lease_tidy(v)
end

-- Drops the leases that ended by now_ms (Editor::drop_ended).
local function lease_drop_ended(v, now_ms)
  local s = lease_parse(v)
  local ended = lease_ended_by(s, now_ms)
  if ended == 0 then return v end
  local freed = {}
  for i = 0, ended - 1 do
    local offset = lease_slot(s, lease_by_end_at(s), i)
    freed[#freed + 1] = { offset, LEASE_OVERHEAD + #lease_entry(s, offset) }
  end
  table.sort(freed, function(a, b) return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2]) end)
  local is_freed = {}
  for i = 1, #freed do
    if i > 1 and freed[i - 1][1] == freed[i][1] then state_corrupt() end
    is_freed[freed[i][1]] = true
  end
  local by_holder = {}
  for i = 0, s.count - 1 do
    if is_freed[lease_slot(s, lease_by_holder_at(s), i)] then by_holder[#by_holder + 1] = i end
  end
  if #by_holder ~= ended then state_corrupt() end
  local by_end = {}
  for i = 0, ended - 1 do by_end[#by_end + 1] = i end
  return lease_tidy(lease_cut(v, freed, by_holder, by_end))
end

-- Drops the ended leases after a call's own edit, if the set lets them go cleanly; a set
-- damaged where the call's edit did not look keeps them (they take no slot).
local function lease_drop_ended_if_sound(v, now_ms)
  local ok, dropped = pcall(lease_drop_ended, v, now_ms)
  if ok then return dropped end
  if state_caught(dropped) == STATE_CORRUPT then return v end
  state_fail(state_caught(dropped))
end

-- The live leases of value v (nil: no key) at now_ms.
local function lease_live(v, now_ms)
  if v == nil then return { ended = 0, live = 0 } end
  local s = lease_parse(v)
  local ended = lease_ended_by(s, now_ms)
  return { set = s, ended = ended, live = s.count - ended }
end

local function lease_latest_end(view)
  if view.set == nil or view.live == 0 then return nil end
  local _, end_ms = lease_by_end(view.set, view.set.count - 1)
  return end_ms
end

local function lease_latest_end_but(view, holder)
  if view.set == nil then return nil end
  local s = view.set
  for i = s.count - 1, math.max(view.ended, s.count - 2), -1 do
    local other, end_ms = lease_by_end(s, i)
    if other ~= holder then return end_ms end
  end
  return nil
end

local function lease_max(a, b)
  if a == nil then return b end
  return math.max(a, b)
end

-- Decides holder's call at now_ms against the stored set: the reply, and the new value and
-- its expiry when admitted (Lease::decide, then lease::apply).
local function lease_decide(p, v, now_ms)
  local end_ms = now_ms + p.lease_ms
  if end_ms > LEASE_MAX_END_MS then state_fail(args_too_large('lease_time')) end
  local view = lease_live(v, now_ms)
  local function reset_after(latest) return latest and latest - now_ms or 0 end
  local own = view.set and lease_find(view.set, p.holder)
  local change, latest, reply
  if own and own.end_ms > now_ms then
    latest = lease_max(lease_latest_end_but(view, p.holder), end_ms)
    reply = reply_ms(false, p.limit, p.limit - view.live, nil, reset_after(latest), p.unit)
    change = 'renew'
  elseif view.live < p.limit then
    if own == nil and view.set then
      local s = view.set
      local entry_len = LEASE_OVERHEAD + #p.holder
      if lease_sizes_len(s) - s.tail + entry_len + 2 * LEASE_SLOT > LEASE_MAX_VALUE
        or s.heap_len - s.tail + entry_len > LEASE_MAX_HEAP then
        state_fail(LEASE_TOO_LONG)
      end
    end
    latest = lease_max(lease_latest_end(view), end_ms)
    reply = reply_ms(false, p.limit, p.limit - view.live - 1, nil, reset_after(latest), p.unit)
    change = own and 'renew' or 'insert'
  else
    local retry = nil
    if view.live > 0 then
      local _, earliest = lease_by_end(view.set, view.ended)
      retry = earliest - now_ms
    end
    return reply_ms(true, p.limit, 0, retry, reset_after(lease_latest_end(view)), p.unit)
  end
  if p.dry_run then return reply end
  local new
  if v == nil then
    new = lease_insert('', p.holder, end_ms)
  else
    if change == 'renew' then
      new = lease_renew(v, p.holder, own, end_ms)
    else
      new = lease_insert(v, p.holder, end_ms)
    end
    new = lease_drop_ended_if_sound(new, now_ms)
  end
  return reply, { whole = new, expire_at_ms = latest }
end

-- What a call that takes no lease learns of the set (Lease::look): the free slots, and
-- when the last lease ends.
local function lease_look(p, v, now_ms)
  local view = lease_live(v, now_ms)
  local latest = lease_latest_end(view)
  return reply_ms(false, p.limit, p.limit - view.live, nil, latest and latest - now_ms or 0, p.unit)
end

-- The kind (single.lua). Without a holder (CL.ALL asking for nothing, or refunding:
-- CL.RELEASE gives a lease back) it only looks.
LEASE = {
  read = function(key) return state_bytes(key) end,
  decide = function(p, v, _, now_ms)
    if p.holder == nil or p.refund then return lease_look(p, v, now_ms) end
    return lease_decide(p, v, now_ms)
  end,
  peek = function(p, v, _, now_ms) return lease_look(p, v, now_ms) end,
  write = function(key, _, plan) redis.call('SET', key, plan.whole, 'PXAT', plan.expire_at_ms) end,
}

-- FCALL cl_lease 1 key limit lease_time holder [MS] [DRYRUN]
function cl_lease(keys, args)
  if #keys ~= 1 then return redis.error_reply(args_wrong_arity('cl.lease')) end
  local p, err = args_lease(args)
  if p == nil then return redis.error_reply(err) end
  return single_run(keys[1], LEASE, p)
end

-- Frees holder's live lease: 1, and the value left (nil: the key goes) and its expiry; or 0.
local function lease_release(holder, v, now_ms)
  local view = lease_live(v, now_ms)
  local found = lease_find(view.set, holder)
  if found == nil or found.end_ms <= now_ms then return 0 end
  if view.live <= 1 then return 1 end
  local last_end = lease_latest_end_but(view, holder)
  if last_end == nil then return 1 end
  local new = lease_drop_ended_if_sound(lease_remove(v, holder, found), now_ms)
  return 1, { whole = new, expire_at_ms = last_end }
end

-- FCALL cl_release 1 key holder
function cl_release(keys, args)
  if #keys ~= 1 then return redis.error_reply(args_wrong_arity('cl.release')) end
  local holder, err = args_release(args)
  if holder == nil then return redis.error_reply(err) end
  local key = keys[1]
  local v, read_err = state_bytes(key)
  if read_err then return redis.error_reply(read_err) end
  if v == nil then return 0 end
  local _, now_ms = clock_now()
  local ok, freed, plan = pcall(lease_release, holder, v, now_ms)
  if not ok then return redis.error_reply(state_caught(freed)) end
  if freed == 1 then
    if plan then
      redis.call('SET', key, plan.whole, 'PXAT', plan.expire_at_ms)
    else
      redis.call('DEL', key)
    end
  end
  return freed
end

-- FCALL_RO cl_holders 1 key [MS]: each live lease's holder and the time it has left, the
-- soonest to end first.
function cl_holders(keys, args)
  if #keys ~= 1 then return redis.error_reply(args_wrong_arity('cl.holders')) end
  local unit, err = args_holders(args)
  if unit == nil then return redis.error_reply(err) end
  local v, read_err = state_bytes(keys[1])
  if read_err then return redis.error_reply(read_err) end
  local _, now_ms = clock_now()
  local ok, pairs_or_err = pcall(function()
    local view = lease_live(v, now_ms)
    local out = {}
    if view.set == nil then return out end
    for i = view.ended, view.set.count - 1 do
      local holder, end_ms = lease_by_end(view.set, i)
      out[#out + 1] = holder
      out[#out + 1] = reply_rounded(end_ms - now_ms, unit)
    end
    return out
  end)
  if not ok then return redis.error_reply(state_caught(pairs_or_err)) end
  return pairs_or_err
end
end

do
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
local SMOOTH_TOO_FAR = 'ERR quantity is too large for the library'

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
  if limit >= BYTES_EXACT then state_fail('ERR permits is too large for the library') end
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
    if warming then state_fail('ERR the key holds a smooth limiter with WARMUP, not a bursty one') end
    state_fail('ERR the key holds a bursty smooth limiter, not one with WARMUP')
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
SMOOTH = {
  read = function(key) return state_bytes(key) end,
  decide = function(p, v, now_us) return smooth_decide(p, smooth_rate(p), v, now_us) end,
  peek = function(p, v, now_us)
    return (smooth_decide({ quantity = 0, unit = p.unit }, smooth_rate(p), v, now_us))
  end,
  write = function(key, _, change) redis.call('SET', key, change.value, 'PXAT', change.expire_at_ms) end,
}

-- FCALL cl_smooth 1 key permits period [quantity] [MS] [BURST span] [WARMUP span [COLD factor]]
-- [DRYRUN]
function cl_smooth(keys, args)
  if #keys ~= 1 then return redis.error_reply(args_wrong_arity('cl.smooth')) end
  local p, err = args_smooth(args)
  if p == nil then return redis.error_reply(err) end
  return single_run(keys[1], SMOOTH, p)
end
end

do
-- CL.ALL's grammar (src/all_args.rs), with FCALL's keys for the module's `numkeys key …`:
-- `FCALL cl_all numkeys key [key …] limiter [limiter …] [QUANTITY quantity] [MS] [REFUND]
-- [DRYRUN] [DETAIL] [HOLDER holder] [BLOCK timeout]`. Each limiter's numbers are read by the
-- parsers its own command uses, with the shared quantity and unit.

local ALL_MAX_KEYS = 16
-- The most arguments the module reads, its name included: numkeys, 16 keys, 16 limiters of
-- up to five words and the options (src/commands/all.rs's MAX_ALL_ARGS).
local ALL_MAX_ARGS = 2 + 16 * 6 + 10
local ALL_KINDS = { THROTTLE = 'throttle', FIXED = 'fixed', WINDOW = 'window', LEASE = 'lease' }
local ALL_OPTIONS = { QUANTITY = true, MS = true, REFUND = true, DRYRUN = true, DETAIL = true,
  HOLDER = true, BLOCK = true }
local ALL_LIMITERS = 'give one THROTTLE, FIXED, WINDOW or LEASE limiter per key, in key order'

-- The call's limiters ({ kind, p }, in key order) and its options, or nil and the error. The
-- library's own refusals (BLOCK, numbers past 2^53 − 1) are the caller's, once the module's
-- checks, Gcra::new's among them, have passed.
function args_all(keys, args)
  local command = 'cl.all'
  local argc = 2 + #keys + #args
  if argc < 6 or argc > ALL_MAX_ARGS then return nil, args_wrong_arity(command) end
  if #keys < 1 then return nil, 'ERR numkeys must be >= 1' end
  if #keys > ALL_MAX_KEYS then return nil, 'ERR numkeys must be <= ' .. ALL_MAX_KEYS end
  for again = 2, #keys do
    for first = 1, again - 1 do
      if keys[first] == keys[again] then
        return nil, 'ERR key ' .. again .. ' is the same as key ' .. first .. ': each key takes one limiter'
      end
    end
  end
  -- The shape first: where each limiter is, then the options.
  local shapes = {}
  local at = 1
  for key = 1, #keys do
    local keyword = args[at]
    if keyword == nil then return nil, 'ERR no limiter for key ' .. key .. ': ' .. ALL_LIMITERS end
    local word = string.upper(keyword)
    local kind = ALL_KINDS[word]
    if kind == nil then
      if ALL_OPTIONS[word] then return nil, 'ERR no limiter for key ' .. key .. ': ' .. ALL_LIMITERS end
      if word == 'SMOOTH' then
        return nil, 'ERR limiter ' .. key .. ' is SMOOTH, which CL.ALL does not take: call CL.SMOOTH on its key alone'
      end
      return nil, 'ERR limiter ' .. key .. ' is not THROTTLE, FIXED, WINDOW or LEASE'
    end
    local params = 2
    if kind == 'throttle' then
      params = 3
    elseif kind == 'window' and args[at + 3] and args_is_buckets(args[at + 3]) then
      params = 4
    end
    shapes[key] = { kind = kind, at = at + 1, params = params }
    at = at + 1 + params
  end
  if at > #args + 1 then return nil, args_wrong_arity(command) end
  local seen = {}
  while args[at] do
    local word = string.upper(args[at])
    local takes_value = word == 'QUANTITY' or word == 'BLOCK' or word == 'HOLDER'
    if ALL_OPTIONS[word] and not seen[word] then
      seen[word] = at + (takes_value and 1 or 0)
      at = at + (takes_value and 2 or 1)
    elseif ALL_KINDS[word] then
      return nil, 'ERR more limiters than numkeys: give one limiter per key, in key order'
    else
      return nil, 'ERR syntax error'
    end
  end
  local function value(option) return args[seen[option]] end
  local quantity, quantity_exact = 1, false
  if seen.QUANTITY then
    if value('QUANTITY') == nil then return nil, 'ERR syntax error' end
    local q, exact = args_integer(value('QUANTITY'), 'quantity', 0)
    if q == nil then return nil, exact end
    quantity, quantity_exact = q, exact
  end
  if seen.BLOCK then
    if value('BLOCK') == nil then return nil, 'ERR syntax error' end
    local err = args_block_timeout(value('BLOCK'))
    if err then return nil, err end
  end
  local holder = nil
  if seen.HOLDER then
    if value('HOLDER') == nil then return nil, 'ERR syntax error' end
    local err
    holder, err = args_holder(value('HOLDER'))
    if holder == nil then return nil, err end
  end
  local all = { unit = seen.MS and 'ms' or 's', refund = seen.REFUND ~= nil, dry_run = seen.DRYRUN ~= nil,
    detail = seen.DETAIL ~= nil, block = seen.BLOCK ~= nil, limiters = {} }
  local leases = false
  for _, shape in ipairs(shapes) do leases = leases or shape.kind == 'lease' end
  -- A look takes no lease, nor does a refund: neither needs anyone to hold it.
  if leases and holder == nil and quantity > 0 and not all.refund then
    return nil, 'ERR a LEASE limiter needs HOLDER holder: the name the lease is held under'
  end
  if not leases and holder ~= nil then return nil, 'ERR HOLDER is given, but no limiter is a LEASE' end
  -- Then each limiter's numbers, as its own command reads them.
  for key, shape in ipairs(shapes) do
    local p = { quantity = quantity, quantity_exact = quantity_exact, unit = all.unit,
      refund = all.refund, dry_run = all.dry_run, count_denied = false }
    local function param(offset) return args[shape.at + offset] or '' end
    local err
    if shape.kind == 'throttle' then
      err = args_throttle_params(p, param(0), param(1), param(2))
    elseif shape.kind == 'lease' then
      err = args_lease_params(p, param(0), param(1))
      -- Asked for nothing, a lease limiter only looks.
      if quantity > 0 then p.holder = holder end
    else
      err = args_limit_and_period(p, param(0), param(1))
      if err == nil and shape.params == 4 then p.buckets, err = args_bucket_count(param(3), p.period_ms) end
    end
    if err then return nil, err end
    all.limiters[key] = { kind = shape.kind, p = p }
  end
  -- After the limiters' own numbers, as the single commands check it.
  local never = args_never_waits({ block = all.block, refund = all.refund, dry_run = all.dry_run })
  if never then return nil, never end
  return all
end
end

do
-- CL.ALL in the library (src/all.rs, src/commands/all.rs): several limiters decide one
-- request at one instant, all or nothing, each key read and decided before any is written,
-- each written as its own command writes it.

-- Each kind (single.lua), and the numbers the library refuses past 2^53 − 1.
local ALL_KIND = {
  throttle = { kind = THROTTLE, exact = THROTTLE_EXACT },
  fixed = { kind = FIXED, exact = ARGS_WINDOW_EXACT },
  window = { kind = WINDOW, exact = ARGS_WINDOW_EXACT },
  lease = { kind = LEASE, exact = ARGS_LEASE_EXACT },
}

-- Whether every limiter admitted, and the one whose reply stands for all (all::combine):
-- when denied, the first of the longest denials (one that never fits longest of all); when
-- admitted, the first of those with the fewest units left. Replies are in the call's unit.
local function all_combine(replies)
  local fewest, longest
  for i, reply in ipairs(replies) do
    if reply[1] == 0 then
      if fewest == nil or reply[3] < replies[fewest][3] then fewest = i end
    else
      local wait = reply[4] == -1 and math.huge or reply[4]
      local best = longest and (replies[longest][4] == -1 and math.huge or replies[longest][4])
      if longest == nil or wait > best then longest = i end
    end
  end
  if longest then return false, longest end
  return true, fewest or 1
end

-- FCALL cl_all numkeys key [key …] limiter [limiter …] [QUANTITY quantity] [MS] [REFUND]
-- [DRYRUN] [DETAIL] [HOLDER holder]
function cl_all(keys, args)
  local all, err = args_all(keys, args)
  if all == nil then return redis.error_reply(err) end
  -- The module builds every limiter before it reads a key: a GCRA's numbers can fail.
  for _, spec in ipairs(all.limiters) do
    if spec.kind == 'throttle' then
      local gcra_err = throttle_limiter(spec.p)
      if gcra_err then return redis.error_reply(gcra_err) end
    end
  end
  if all.block then return redis.error_reply(args_cannot_wait('cl.all')) end
  local kinds, ps = {}, {}
  for i, spec in ipairs(all.limiters) do
    local made = ALL_KIND[spec.kind]
    local inexact = args_exact_enough(spec.p, made.exact)
    if inexact then return redis.error_reply(inexact) end
    kinds[i], ps[i] = made.kind, spec.p
  end
  local now_us, now_ms = clock_now()
  local stored, replies, changes = {}, {}, {}
  for i, key in ipairs(keys) do
    local value, read_err = kinds[i].read(key, ps[i], now_us, now_ms)
    if read_err then return redis.error_reply(read_err) end
    local ok, reply, change = pcall(kinds[i].decide, ps[i], value, now_us, now_ms)
    if not ok then return redis.error_reply(state_caught(reply)) end
    stored[i], replies[i], changes[i] = value, reply, change
  end
  local admitted, binding = all_combine(replies)
  local reply = replies[binding]
  if all.detail then
    -- A limiter that would have admitted took nothing when another denied: it answers as a
    -- look at its key.
    reply = {}
    for i = 1, #keys do
      reply[i] = replies[i]
      if not admitted and replies[i][1] == 0 then
        local ok, peeked = pcall(kinds[i].peek, ps[i], stored[i], now_us, now_ms)
        if not ok then return redis.error_reply(state_caught(peeked)) end
        reply[i] = peeked
      end
    end
  end
  if admitted and not all.dry_run then
    for i, key in ipairs(keys) do
      if changes[i] then kinds[i].write(key, ps[i], changes[i], stored[i], now_us, now_ms) end
    end
  end
  return reply
end
end

do
-- The library's functions, as the generated forms register them (scripts/lua_forms.py): by
-- name, with the flags the module's commands have. Each entry's callback takes the keys and
-- the arguments, as FCALL hands them.

local CELL_VERSION = '0.1.0'

-- The library's version, which a client compares with its own before it calls (FCALL_RO).
local function cl_version(keys, args)
  return CELL_VERSION
end

-- The script form's answer to a name it has no function for.
function cell_unknown(name)
  return redis.error_reply('ERR the library has no function ' .. tostring(name))
end

CELL_FUNCTIONS = {
  { name = 'cl_version', callback = cl_version, flags = { 'no-writes' } },
  { name = 'cl_throttle', callback = cl_throttle, flags = {} },
  { name = 'cl_fixed', callback = cl_fixed, flags = {} },
  { name = 'cl_window', callback = cl_window, flags = {} },
  { name = 'cl_lease', callback = cl_lease, flags = {} },
  -- CL.RELEASE is not deny-oom: freeing a lease must work when memory is full.
  { name = 'cl_release', callback = cl_release, flags = { 'allow-oom' } },
  { name = 'cl_holders', callback = cl_holders, flags = { 'no-writes' } },
  { name = 'cl_all', callback = cl_all, flags = {} },
  { name = 'cl_smooth', callback = cl_smooth, flags = {} },
}
end
local wanted = ARGV[1]
for _, f in ipairs(CELL_FUNCTIONS) do
  if f.name == wanted then return f.callback(KEYS, { unpack(ARGV, 2) }) end
end
return cell_unknown(wanted)

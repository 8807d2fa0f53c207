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
local function exact_small(text)
  local x = tonumber(text)
  if x and x < 1e14 and x > -1e14 and x % 1 == 0 and (x ~= 0 or text == '0') and tostring(x) == text then
    return x
  end
  return nil
end

-- Reads an integer as Redis's string2ll does, where Lua's tonumber would also take "0x10",
-- "1e3" and " 5": an optional '-', digits with no leading zero, no sign on zero, and a value
-- that fits in 64 bits. nil for anything else.
local function exact_parse(text)
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
local function exact_of_number(x)
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

local function exact_max(a, b)
  if exact_cmp(a, b) >= 0 then return a end
  return b
end

local function exact_min(a, b)
  if exact_cmp(a, b) <= 0 then return a end
  return b
end

-- a / b rounded up, for a >= 0 and b > 0.
local function exact_ceil_div(a, b)
  local q, r = exact_divmod(a, b)
  if #r > 0 then q = exact_add(q, { neg = false, 1 }) end
  return q
end

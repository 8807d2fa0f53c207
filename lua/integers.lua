-- The integers a decision computes with, in either of two forms behind the same operations,
-- so that a limiter decides in one piece of code whichever it is given: Lua numbers, which
-- make no table, where every value the decision can reach stays below 2^53; exact integers
-- (exact.lua) where one may not. `of` takes a number below 2^53 into the form.

local INTEGERS_NUMBERS = {
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

local INTEGERS_EXACT = {
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

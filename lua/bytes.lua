-- The module's binary values read and written in Lua (src/bytes.rs): little-endian fields,
-- LEB128 varints, and the 64-bit counters they hold. Offsets are 0-based, as the module's
-- formats give them. A u64 is a pair of 32-bit halves (hi, lo), exact where one double
-- would not be; an i64 is a number, and one past 2^53 is refused by its reader (nil), since
-- it could not be computed with.

local BYTES_2_32 = 4294967296
local BYTES_2_31 = 2147483648
-- The largest magnitude a double holds exactly with everything beside it: 2^53.
local BYTES_EXACT = 9007199254740992

local function bytes_u32(v, at)
  local a, b, c, d = string.byte(v, at + 1, at + 4)
  return a + b * 256 + c * 65536 + d * 16777216
end

-- A u64 as (hi, lo).
local function bytes_u64(v, at)
  return bytes_u32(v, at + 4), bytes_u32(v, at)
end

-- The i64 of a u64's halves as a number, or nil past ±2^53.
local function bytes_signed(hi, lo)
  if hi >= BYTES_2_31 then hi = hi - BYTES_2_32 end
  if hi >= 2097152 or hi < -2097152 then return nil end
  return hi * BYTES_2_32 + lo
end

-- An i64 as a number, or nil past ±2^53.
local function bytes_i64(v, at)
  return bytes_signed(bytes_u64(v, at))
end

-- x's low 32 bits. (Integer division as (x - x % d) / d: exact, and no call to math.floor.)
local function bytes_of_u32(x)
  local a = x % 256
  x = (x - a) / 256
  local b = x % 256
  x = (x - b) / 256
  local c = x % 256
  return string.char(a, b, c, (x - c) / 256 % 256)
end

local function bytes_of_u64(hi, lo)
  return bytes_of_u32(lo) .. bytes_of_u32(hi)
end

-- An i64 given as a number within ±2^53.
local function bytes_of_i64(x)
  local lo = x % BYTES_2_32
  return bytes_of_u64(((x - lo) / BYTES_2_32) % BYTES_2_32, lo)
end

-- u64 arithmetic, wrapping at 2^64 as the module's wrapping_add and wrapping_sub do.
local function bytes_add(ah, al, bh, bl)
  local lo = al + bl
  local carry = 0
  if lo >= BYTES_2_32 then
    lo = lo - BYTES_2_32
    carry = 1
  end
  return (ah + bh + carry) % BYTES_2_32, lo
end

local function bytes_sub(ah, al, bh, bl)
  local lo = al - bl
  local borrow = 0
  if lo < 0 then
    lo = lo + BYTES_2_32
    borrow = 1
  end
  return (ah - bh - borrow) % BYTES_2_32, lo
end

-- -1, 0 or 1 as a < b, a == b, a > b.
local function bytes_cmp(ah, al, bh, bl)
  if ah ~= bh then return ah < bh and -1 or 1 end
  if al ~= bl then return al < bl and -1 or 1 end
  return 0
end

-- A u64 pair of a non-negative number below 2^53.
local function bytes_pair(x)
  local lo = x % BYTES_2_32
  return (x - lo) / BYTES_2_32, lo
end

-- The number a pair stands for; past 2^53 the nearest double, which callers only compare
-- with numbers below 2^53.
local function bytes_number(hi, lo)
  return hi * BYTES_2_32 + lo
end

-- A varint at `at` read no further than `limit` (exclusive): (hi, lo, the offset after it), or
-- nil where it runs past limit or past 64 bits.
local function bytes_varint(v, at, limit)
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

local function bytes_of_varint(hi, lo)
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

-- The multiplicative hash the module seals a header with (a checksum of its first words):
-- each 32-bit word xored in, multiplied by 0x9e3779b1 and rotated left by 13. The product and
-- the rotation are arithmetic on parts a double holds exactly: a C call costs far more. The
-- first `count` words of the array `words`, each step written out in the loop rather than
-- called.
local function bytes_checksum(words, count)
  -- Read once: in the loop, `bit.bxor` would be two table reads a word.
  local bxor, two_32 = bit.bxor, BYTES_2_32
  local hash = 2166136261
  for i = 1, count do
    -- The bit library answers a signed 32-bit word, congruent to the module's u32 modulo
    -- 2^32, which is all the product below needs: its `% two_32` makes it the u32.
    local mixed = bxor(hash, words[i])
    -- mixed · 0x9e3779b1 mod 2^32, by the multiplier's halves: 0x79b1 whole, and 0x9e37
    -- for the low 16 bits of its product, shifted up (each product below 2^48, exact; `%`
    -- floors, so a negative word's terms come out the same modulo 2^32).
    local product = (mixed * 31153 + mixed * 40503 % 65536 * 65536) % two_32
    -- Left by 13: the low 19 bits go up, the high 13 come round.
    local kept = product % 524288
    hash = kept * 8192 + (product - kept) / 524288
  end
  return hash
end

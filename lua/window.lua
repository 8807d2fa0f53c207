-- CL.WINDOW in the library: the module's exact sliding window (src/window.rs) on the same
-- key, its compact log read and written byte for byte as src/window/log.rs and trim.rs do,
-- so that a key carries over either way. The log is read whole (GET) and searched as the
-- module searches it; an admission writes only the bytes it changes (SETRANGE), and a
-- refund, which shortens the value, writes it whole. Instants are numbers, refused past
-- 2^53 ms; the units counts are u64 pairs (bytes.lua).

local WINDOW_HEADER = 48
local WINDOW_BLOCK = 128
local WINDOW_BLOCK_HEADER = 16
-- Most entries one block holds: a first entry of 1 byte, then 2 bytes or more each.
local WINDOW_MAX_ENTRIES = 56
local WINDOW_MAX_LEN = 536870912
local WINDOW_TOO_LONG = ERRORS.log_too_long
-- 'CLW' and the format's version, 2, as the header's first little-endian u32.
local WINDOW_MAGIC = 67 + 76 * 256 + 87 * 65536 + 2 * 16777216
-- The header as twelve little-endian u32s: the magic, the head and tail offsets, the head's
-- and tail's instants (i64s, low word first), the units count before the head and after the
-- tail (u64s, low word first), and the checksum of the eleven before it.
local WINDOW_HEADER_WORDS = '<I4I4I4I4I4I4I4I4I4I4I4I4'
local WINDOW_INTERNAL = ERRORS.internal
-- A log of at most this length is written whole by one SET; a longer one by the bytes that
-- change (two SETRANGEs and a PEXPIREAT), which copy less of it but cost three commands.
local WINDOW_WRITTEN_WHOLE = 1024

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

-- The header's checksum, of its first eleven words, gathered in one table kept between calls
-- (a function runs alone): a table made for each checksum, two a call, cost its allocation
-- and the collector's sweep of it.
local WINDOW_WORDS = {}
local function window_checksum(magic, head, tail, head_ms_lo, head_ms_hi, tail_ms_lo, tail_ms_hi,
    head_lo, head_hi, logged_lo, logged_hi)
  local w = WINDOW_WORDS
  w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9], w[10], w[11] = magic, head, tail,
    head_ms_lo, head_ms_hi, tail_ms_lo, tail_ms_hi, head_lo, head_hi, logged_lo, logged_hi
  return bytes_checksum(w, 11)
end

-- The log in value v, its header checked as the module checks it; nil when it is not one.
local function window_decode(v)
  if #v < WINDOW_HEADER then return nil end
  local magic, head, tail, head_ms_lo, head_ms_hi, tail_ms_lo, tail_ms_hi, head_lo, head_hi,
    logged_lo, logged_hi, sum = struct.unpack(WINDOW_HEADER_WORDS, v)
  if magic ~= WINDOW_MAGIC or sum ~= window_checksum(magic, head, tail, head_ms_lo, head_ms_hi,
      tail_ms_lo, tail_ms_hi, head_lo, head_hi, logged_lo, logged_hi) then
    return nil
  end
  local log = { v = v, head = head, tail = tail,
    head_ms = bytes_signed(head_ms_hi, head_ms_lo), tail_ms = bytes_signed(tail_ms_hi, tail_ms_lo),
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

-- A block's 16 bytes: its first entry's instant, and the units count before it; one call.
local function window_block_header(at_ms, before_hi, before_lo)
  return struct.pack('<i8I4I4', at_ms, before_lo, before_hi)
end

-- A header's 48 bytes: head and tail cursors, and the units count after the tail.
local function window_header(head, tail, logged_hi, logged_lo)
  -- An i64's words, as bytes_of_i64 makes them.
  local head_ms_lo, tail_ms_lo = head.at_ms % BYTES_2_32, tail.at_ms % BYTES_2_32
  local head_ms_hi = (head.at_ms - head_ms_lo) / BYTES_2_32 % BYTES_2_32
  local tail_ms_hi = (tail.at_ms - tail_ms_lo) / BYTES_2_32 % BYTES_2_32
  return struct.pack(WINDOW_HEADER_WORDS, WINDOW_MAGIC, head.offset, tail.offset, head_ms_lo,
    head_ms_hi, tail_ms_lo, tail_ms_hi, head.lo, head.hi, logged_lo, logged_hi,
    window_checksum(WINDOW_MAGIC, head.offset, tail.offset, head_ms_lo, head_ms_hi, tail_ms_lo,
      tail_ms_hi, head.lo, head.hi, logged_lo, logged_hi))
end

-- How an admission logs `units` (≥ 1, below 2^53) at at_ms in the log (nil: a fresh one):
-- the value's new bytes from `from` on, with the new header, or the whole value (`whole`).
-- Everything that can fail on what the key holds fails here, before any write.
local function window_plan_append(log, live, at_ms, units)
  local units_hi, units_lo = bytes_pair(units)
  if log == nil then
    local entry = window_cursor(WINDOW_HEADER + WINDOW_BLOCK_HEADER, at_ms, 0, 0)
    return { whole = window_header(entry, entry, units_hi, units_lo) .. window_block_header(at_ms, 0, 0)
      .. bytes_of_varint(units_hi, units_lo) }
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
    bytes = string.rep('\0', block_end - from) .. window_block_header(at_ms, before_hi, before_lo) .. bytes
  end
  local header = window_header(head, newest, logged_hi, logged_lo)
  -- A merge that re-encodes a padded entry shorter leaves the value shorter: written whole;
  -- so is a short log.
  if reclaimed > 0 or new_len < len or new_len <= WINDOW_WRITTEN_WHOLE then
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
    if window_decode(v) then return ERRORS.window_exact end
  else
    local n = buckets_cells_in(v)
    if n then return ERRORS.window_cells(n) end
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
local WINDOW = {
  read = function(key, _, _, now_ms) return state_bytes(key, now_ms) end,
  decide = function(p, v, _, now_ms) return window_call(p, v, now_ms) end,
  peek = function(p, v, _, now_ms)
    local peek = {}
    for name, value in pairs(p) do peek[name] = value end
    peek.quantity, peek.refund = 0, false
    return (window_call(peek, v, now_ms))
  end,
  -- Expiries go as text made here: the server would print a number with "%.17g", which
  -- costs more than the C call.
  write = function(key, _, plan)
    if plan.clear then
      redis.call('DEL', key)
    elseif plan.whole and plan.moves == false then
      redis.call('SET', key, plan.whole, 'KEEPTTL')
    elseif plan.whole then
      redis.call('SET', key, plan.whole, 'PXAT', string.format('%d', plan.expire_at_ms))
    else
      redis.call('SETRANGE', key, plan.from, plan.bytes)
      redis.call('SETRANGE', key, 0, plan.header)
      redis.call('PEXPIREAT', key, string.format('%d', plan.expire_at_ms))
    end
  end,
}

WINDOW.take = function(p, quantity) p.quantity = quantity end

-- The plain call's arguments, kept between calls by the function form (a function runs
-- alone): every field window_run reads is set on each call.
local WINDOW_PLAIN = { unit = 's', refund = false, buckets = false }

-- The plain call, `limit period [quantity] [BUCKETS n] [MS]` with each number a canonical
-- integer below 10^14, on a key absent or holding the form the call reads: decided by
-- window_run itself, with the arguments in one table kept between calls. nil for any other call, or one that fails, before anything
-- is written: cl_window then reads and decides it in full, and answers its errors (as
-- throttle_plain).
local function window_plain(key, args)
  local n = #args
  local unit = 's'
  if n >= 3 and args[n] == 'MS' then
    unit = 'ms'
    n = n - 1
  end
  local buckets = false
  if n >= 4 and args[n - 1] == 'BUCKETS' then
    buckets = args_plain(args[n])
    -- Cells of whole milliseconds, 2 to 1024 of them: args_bucket_count's rules.
    if not buckets or buckets < 2 or buckets > 1024 then return nil end
    n = n - 2
  end
  local quantity, limit, period = args_plain_call(args, n, 2)
  if not quantity or limit == 0 or period == 0 or period > ARGS_MAX_SPAN[unit] then return nil end
  local period_ms = unit == 'ms' and period or period * 1000
  if buckets and period_ms % buckets ~= 0 then return nil end
  local p = WINDOW_PLAIN
  p.limit, p.quantity, p.period_ms, p.buckets, p.unit = limit, quantity, period_ms, buckets, unit
  local _, now_ms = clock_now()
  local v = redis.pcall('GET', key)
  if v and type(v) ~= 'string' then return nil end
  local ok, reply, plan = pcall(window_run, p, v or nil, now_ms)
  if not ok then return nil end
  if plan then WINDOW.write(key, p, plan) end
  return reply
end

-- FCALL cl_window 1 key limit period [quantity] [BUCKETS n] [MS] [REFUND] [DRYRUN]
local function cl_window(keys, args)
  if #keys ~= 1 then return redis.error_reply(ERRORS.wrong_arity('cl.window')) end
  local plain = window_plain(keys[1], args)
  if plain then return plain end
  local p, err = args_window(args, 'cl.window')
  if p == nil then return redis.error_reply(err) end
  return single_run(keys[1], WINDOW, p)
end

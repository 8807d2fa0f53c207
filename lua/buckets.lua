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
  -- The instant the newest cell leaves, (newest + n) * width, must be an i64. Below 2^53 a
  -- double computes it exactly (a product past it rounds to 2^53 or more); past, the exact
  -- form does.
  local leaves_below = false
  if newest_hi < 2097152 then
    leaves_below = (newest_hi * BYTES_2_32 + newest_lo + h.n) * h.width_ms <= ARGS_LIBRARY_MAX
  end
  if not leaves_below then
    local newest = exact_add(exact_mul(exact_of_number(newest_hi), exact_of_number(BYTES_2_32)),
      exact_of_number(newest_lo))
    local leaves = exact_mul(exact_add(newest, exact_of_number(h.n)), exact_of_number(h.width_ms))
    if exact_cmp(leaves, ARGS_I64_MAX) > 0 then return nil end
  end
  h.slots = cells_len / cb
  h.newest = bytes_number(newest_hi, newest_lo)
  h.sum = bytes_number(sum_hi, sum_lo)
  h.exact = leaves_below and sum_hi < 2097152
  return h
end

-- The number of cells a value holds, if it is a bucketed window: for the error that names
-- the form a key holds.
local function buckets_cells_in(v)
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

-- The header's 32 bytes: 'CLB', version 1, the cells' width in bytes, n and the origin
-- (u16s), the cell's width in ms (a 48-bit integer: its low u32, then its high u16), the
-- newest cell and the sum (i64s), and a zero; one struct call.
local function buckets_header(grid, cell_bytes, origin, newest, sum)
  local width_lo = grid.width_ms % BYTES_2_32
  return 'CLB\1' .. struct.pack('<BHHI4Hi8i8B', cell_bytes, grid.n, origin, width_lo,
    (grid.width_ms - width_lo) / BYTES_2_32 % 65536, newest, sum, 0)
end

-- A cell of each width, as struct packs it.
local BUCKETS_CELL_FORMAT = { '<B', '<H', nil, '<I4', nil, nil, nil, '<i8' }

local function buckets_cell(cell_bytes, units)
  return struct.pack(BUCKETS_CELL_FORMAT[cell_bytes], units)
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
local function buckets_decide(p, v, now_ms)
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
local function buckets_refund(p, v, now_ms)
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

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
local LEASE_MARK = 'CLL\1'
local LEASE_TOO_LONG = ERRORS.lease_set_too_long
local LEASE_INTERNAL = ERRORS.internal

local function lease_internal()
  state_fail(LEASE_INTERNAL)
end

local function lease_of_u24(x)
  if x >= LEASE_MAX_HEAP then state_fail(LEASE_TOO_LONG) end
  return struct.pack('<I3', x)
end

-- An end, below 2^48 ms (lease_decide refuses later ones).
local function lease_of_end(ms)
  return struct.pack('<I6', ms)
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

-- v's bytes from..to-1, with zero bytes past its end (as lease_resize grows a value).
local function lease_bytes(v, from, to)
  if to <= #v then return string.sub(v, from + 1, to) end
  if from >= #v then return string.rep('\0', to - from) end
  return string.sub(v, from + 1) .. string.rep('\0', to - #v)
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

local function lease_sizes_len(s)
  return LEASE_HEADER + s.heap_len + 2 * LEASE_SLOT * s.count
end

-- The four sizes as the header stores them, each a u32.
local function lease_sizes(count, heap_len, holes, tail)
  if count >= BYTES_2_32 or heap_len >= BYTES_2_32 or holes >= BYTES_2_32 or tail >= BYTES_2_32 then
    state_fail(LEASE_TOO_LONG)
  end
  return struct.pack('<I4I4I4I4', count, heap_len, holes, tail)
end

-- Value v read as a set (LeaseSet::parse): its sizes, where each index starts, and v; or the
-- error. A set read here is as long as its header says, so every slot of both indexes is
-- within it.
local function lease_parse(v)
  if #v < LEASE_HEADER then state_corrupt() end
  local mark, count, heap_len, holes, tail = struct.unpack('<c4I4I4I4I4', v)
  local in_use = heap_len - holes
  local holder_at = LEASE_HEADER + heap_len
  if mark ~= LEASE_MARK or holder_at + 2 * LEASE_SLOT * count ~= #v or tail > holes
    or holes > heap_len or count * (LEASE_OVERHEAD + 1) > in_use then
    state_corrupt()
  end
  return { v = v, count = count, heap_len = heap_len, holes = holes, tail = tail, gaps = holes - tail,
    in_use = in_use, holder_at = holder_at, end_at = holder_at + LEASE_SLOT * count }
end

-- The heap offset in slot i of the index at index_at (s.holder_at or s.end_at).
local function lease_slot(s, index_at, i)
  if i >= s.count then lease_internal() end
  local at = index_at + LEASE_SLOT * i
  local a, b, c = string.byte(s.v, at + 1, at + 3)
  return a + b * 256 + c * 65536
end

-- The entry in slot i of the index at index_at: where it keeps its holder (1-based), the
-- holder's length, and the entry's heap offset. (lease_slot's read, made here again: the
-- searches make many, and a call more each would cost a tenth of the command.)
local function lease_at(s, index_at, i)
  local v, heap_len = s.v, s.heap_len
  if i >= s.count then lease_internal() end
  local at = index_at + LEASE_SLOT * i
  local a, b, c = string.byte(v, at + 1, at + 3)
  local offset = a + b * 256 + c * 65536
  if offset >= heap_len then state_corrupt() end
  local len = string.byte(v, LEASE_HEADER + offset + 1)
  if len == 0 or offset + LEASE_OVERHEAD + len > heap_len then state_corrupt() end
  return LEASE_HEADER + offset + 2, len, offset
end

local function lease_holder(s, index_at, i)
  local at, len = lease_at(s, index_at, i)
  return string.sub(s.v, at, at + len - 1)
end

local function lease_end(s, index_at, i)
  local at, len = lease_at(s, index_at, i)
  return (struct.unpack('<I6', s.v, at + len))
end

-- The entry in slot i of the index at index_at: its holder and its end.
local function lease_entry(s, index_at, i)
  local at, len = lease_at(s, index_at, i)
  local end_ms = struct.unpack('<I6', s.v, at + len)
  return string.sub(s.v, at, at + len - 1), end_ms
end

local function lease_by_end(s, i)
  return lease_entry(s, s.end_at, i)
end

-- -1, 0 or 1 as the lease in slot i of `by_end` sorts before, with or after (end_ms, holder);
-- its holder is read only when the ends tie.
local function lease_cmp_end(s, i, end_ms, holder)
  local at, len = lease_at(s, s.end_at, i)
  local other_end = struct.unpack('<I6', s.v, at + len)
  if other_end ~= end_ms then return other_end < end_ms and -1 or 1 end
  return lease_cmp(string.sub(s.v, at, at + len - 1), holder)
end

-- How many leases end at or before now_ms: the first of `by_end`.
local function lease_ended_by(s, now_ms)
  if s.count == 0 or lease_end(s, s.end_at, 0) > now_ms then return 0 end
  local low, high = 1, s.count
  while low < high do
    local mid = (low + high - (low + high) % 2) / 2
    if lease_end(s, s.end_at, mid) <= now_ms then low = mid + 1 else high = mid end
  end
  return low
end

-- Where holder is in `by_holder` (true) or would go (false).
local function lease_search_holder(s, holder)
  local low, high = 0, s.count
  while low < high do
    local mid = (low + high - (low + high) % 2) / 2
    local c = lease_cmp(lease_holder(s, s.holder_at, mid), holder)
    if c < 0 then low = mid + 1 elseif c > 0 then high = mid else return mid, true end
  end
  return low, false
end

-- Where a lease ending at end_ms held by holder is in `by_end` (true) or would go (false).
-- Most new ends are the latest, so the last slot is asked first.
local function lease_search_end(s, end_ms, holder)
  local count = s.count
  if count > 0 and lease_cmp_end(s, count - 1, end_ms, holder) < 0 then return count, false end
  local low, high = 0, count
  while low < high do
    local mid = (low + high - (low + high) % 2) / 2
    local c = lease_cmp_end(s, mid, end_ms, holder)
    if c < 0 then low = mid + 1 elseif c > 0 then high = mid else return mid, true end
  end
  return low, false
end

-- The holder's lease, live or not: { by_holder, by_end, end_ms }; or nil and where in
-- `by_holder` it would go.
local function lease_find(s, holder)
  local by_holder, found = lease_search_holder(s, holder)
  if not found then return nil, by_holder end
  local end_ms = lease_end(s, s.holder_at, by_holder)
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
  return lease_put(v, 4, lease_sizes(count, heap_len, holes, tail))
end

-- The entries in the given slots of `by_holder`, in heap order with their lengths
-- ({ offset, len }), once checked to be packable: none overlaps another, and together they
-- are `in_use` bytes.
local function lease_entries_in_use(s, slots, in_use)
  local entries = {}
  for k = 1, #slots do
    local _, len, offset = lease_at(s, s.holder_at, slots[k])
    entries[k] = { offset, LEASE_OVERHEAD + len }
  end
  table.sort(entries, function(a, b) return a[1] < b[1] end)
  local total, free_from = 0, 0
  for _, e in ipairs(entries) do
    if e[1] < free_from then state_corrupt() end
    free_from = e[1] + e[2]
    total = total + e[2]
  end
  if total ~= in_use then state_corrupt() end
  return entries
end

-- Moves the entries in use to the start of the heap, in heap order. Each lands at or
-- before itself and no move overwrites one still to come, so the heap becomes the entries
-- one after another, then what the heap held past them; both indexes are written anew.
local function lease_pack(v)
  local s = lease_parse(v)
  local all = {}
  for i = 0, s.count - 1 do all[#all + 1] = i end
  local entries = lease_entries_in_use(s, all, s.in_use)
  local new_of, packed, heap = {}, 0, {}
  for _, e in ipairs(entries) do
    new_of[e[1]] = packed
    packed = packed + e[2]
    heap[#heap + 1] = string.sub(v, LEASE_HEADER + e[1] + 1, LEASE_HEADER + e[1] + e[2])
  end
  local slots = {}
  for _, index_at in ipairs({ s.holder_at, s.end_at }) do
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
    v = lease_copy(v, s.holder_at, len, LEASE_HEADER + heap_len)
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
    local kept, slots = {}, {}
    for k, spec in ipairs({ { old.holder_at, by_holder }, { old.end_at, by_end } }) do
      local skip, list, j = spec[2], {}, 1
      for i = 0, old.count - 1 do
        if skip[j] == i then
          j = j + 1
        else
          list[#list + 1] = lease_slot(old, spec[1], i)
          if k == 1 then slots[#slots + 1] = i end
        end
      end
      table.sort(list)
      kept[k] = list
    end
    if #kept[1] ~= #kept[2] then state_corrupt() end
    for i = 1, #kept[1] do
      if kept[1][i] ~= kept[2][i] then state_corrupt() end
    end
    lease_entries_in_use(old, slots, in_use)
  end
  if #v ~= lease_sizes_len(old) then lease_internal() end
  -- Each index's kept slots move, in order, to end the value (by_holder's just before
  -- by_end's); what they leave before them stays as it was.
  local kept = {}
  for _, spec in ipairs({ { old.holder_at, by_holder }, { old.end_at, by_end } }) do
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

-- The set s (nil: a new key's) with holder's lease ending at end_ms added, its slot going to
-- at_holder in `by_holder`: holder holds none in s, and at_holder is where
-- lease_search_holder on s found it would go. Where the module moves the indexes within the
-- value (or grows it with zero bytes first), the new value is made at once from the same
-- pieces: the heap's bytes before the new entry, the entry, what the heap held after it, and
-- the two indexes with a slot let in each.
local function lease_insert(s, holder, end_ms, at_holder)
  local old = s or { v = '', count = 0, heap_len = 0, holes = 0, tail = 0, gaps = 0, in_use = 0,
    holder_at = LEASE_HEADER, end_at = LEASE_HEADER }
  local at_end = s and lease_search_end(s, end_ms, holder) or 0
  local entry_len = LEASE_OVERHEAD + #holder
  local needs = entry_len + 2 * LEASE_SLOT
  -- Short of tail, holes worth an eighth of the entries are packed into it.
  if old.tail < needs and old.gaps >= needs and old.gaps * 8 >= old.in_use then
    old = lease_parse(lease_pack(old.v))
  end
  local offset = old.heap_len - old.tail
  if offset + entry_len > LEASE_MAX_HEAP then state_fail(LEASE_TOO_LONG) end
  local old_len = lease_sizes_len(old)
  local new_len = old_len
  if old.tail < needs then
    local longest = math.min(LEASE_MAX_VALUE, LEASE_HEADER + LEASE_MAX_HEAP + 2 * LEASE_SLOT * (old.count + 1))
    new_len = lease_with_tail(old_len - old.tail + needs, longest)
  end
  local count = old.count + 1
  local heap_len = new_len - LEASE_HEADER - 2 * LEASE_SLOT * count
  local tail = heap_len - offset - entry_len
  local slot = lease_of_u24(offset)
  local v, holder_at, end_at = old.v, old.holder_at, old.end_at
  local holder_to, end_to = holder_at + LEASE_SLOT * at_holder, end_at + LEASE_SLOT * at_end
  return LEASE_MARK .. lease_sizes(count, heap_len, old.gaps + tail, tail)
    .. string.sub(v, LEASE_HEADER + 1, LEASE_HEADER + offset)
    .. string.char(#holder) .. holder .. lease_of_end(end_ms)
    .. lease_bytes(v, LEASE_HEADER + offset + entry_len, LEASE_HEADER + heap_len)
    .. string.sub(v, holder_at + 1, holder_to) .. slot .. string.sub(v, holder_to + 1, end_at)
    .. string.sub(v, end_at + 1, end_to) .. slot .. string.sub(v, end_to + 1, old_len)
end

-- The set s with the end of the lease `found` names moved to end_ms, and its slot in
-- `by_end` to where that end goes: one new value. (`found` came from lease_search_end on s,
-- which matched the holder at that slot.)
local function lease_renew(s, holder, found, end_ms)
  local v = s.v
  local offset = lease_slot(s, s.end_at, found.by_end)
  local at = lease_search_end(s, end_ms, holder)
  if at > found.by_end then at = at - 1 end
  -- 0-based, the old end's first byte; the entry ends LEASE_END_LEN bytes on.
  local end_from = LEASE_HEADER + offset + 1 + #holder
  local from = s.end_at + LEASE_SLOT * found.by_end
  local to = s.end_at + LEASE_SLOT * at
  local slot = lease_of_u24(offset)
  local after_end = end_from + LEASE_END_LEN + 1
  if to > from then
    return string.sub(v, 1, end_from) .. lease_of_end(end_ms) .. string.sub(v, after_end, from)
      .. string.sub(v, from + LEASE_SLOT + 1, to + LEASE_SLOT) .. slot .. string.sub(v, to + LEASE_SLOT + 1)
  end
  return string.sub(v, 1, end_from) .. lease_of_end(end_ms) .. string.sub(v, after_end, to)
    .. slot .. string.sub(v, to + 1, from) .. string.sub(v, from + LEASE_SLOT + 1)
end

-- Takes the lease `found` names out of the set.
local function lease_remove(v, holder, found)
  local s = lease_parse(v)
  local offset = lease_slot(s, s.holder_at, found.by_holder)
  if lease_slot(s, s.end_at, found.by_end) ~= offset or lease_holder(s, s.holder_at, found.by_holder) ~= holder then
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
    local _, len, offset = lease_at(s, s.end_at, i)
    freed[#freed + 1] = { offset, LEASE_OVERHEAD + len }
  end
  table.sort(freed, function(a, b) return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2]) end)
  local is_freed = {}
  for i = 1, #freed do
    if i > 1 and freed[i - 1][1] == freed[i][1] then state_corrupt() end
    is_freed[freed[i][1]] = true
  end
  local by_holder = {}
  for i = 0, s.count - 1 do
    if is_freed[lease_slot(s, s.holder_at, i)] then by_holder[#by_holder + 1] = i end
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
  if end_ms > LEASE_MAX_END_MS then state_fail(ERRORS.too_large('lease_time')) end
  local view = lease_live(v, now_ms)
  local s = view.set
  local own, at_holder = nil, 0
  if s then own, at_holder = lease_find(s, p.holder) end
  local change, latest, remaining
  if own and own.end_ms > now_ms then
    latest = lease_max(lease_latest_end_but(view, p.holder), end_ms)
    remaining = p.limit - view.live
    change = 'renew'
  elseif view.live < p.limit then
    if own == nil and s then
      local entry_len = LEASE_OVERHEAD + #p.holder
      if lease_sizes_len(s) - s.tail + entry_len + 2 * LEASE_SLOT > LEASE_MAX_VALUE
        or s.heap_len - s.tail + entry_len > LEASE_MAX_HEAP then
        state_fail(LEASE_TOO_LONG)
      end
    end
    latest = lease_max(lease_latest_end(view), end_ms)
    remaining = p.limit - view.live - 1
    change = own and 'renew' or 'insert'
  else
    local retry = nil
    if view.live > 0 then
      local _, earliest = lease_by_end(s, view.ended)
      retry = earliest - now_ms
    end
    latest = lease_latest_end(view)
    return reply_ms(true, p.limit, 0, retry, latest and latest - now_ms or 0, p.unit)
  end
  local reply = reply_ms(false, p.limit, remaining, nil, latest - now_ms, p.unit)
  if p.dry_run then return reply end
  local new
  if s == nil then
    new = lease_insert(nil, p.holder, end_ms, 0)
  else
    local ok, ended = false, 0
    if change == 'renew' then
      new = lease_renew(s, p.holder, own, end_ms)
      -- A renewal keeps the sizes: s reads the new value as lease_parse would, and most
      -- calls learn from it that nothing ended. (view's counts stay the old value's; nothing
      -- reads them past here.)
      s.v = new
      ok, ended = pcall(lease_ended_by, s, now_ms)
    else
      new = lease_insert(s, p.holder, end_ms, at_holder)
    end
    if not ok or ended > 0 then new = lease_drop_ended_if_sound(new, now_ms) end
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
local LEASE = {
  read = function(key) return state_bytes(key) end,
  decide = function(p, v, _, now_ms)
    if p.holder == nil or p.refund then return lease_look(p, v, now_ms) end
    return lease_decide(p, v, now_ms)
  end,
  peek = function(p, v, _, now_ms) return lease_look(p, v, now_ms) end,
  write = function(key, _, plan)
    redis.call('SET', key, plan.whole, 'PXAT', string.format('%d', plan.expire_at_ms))
  end,
}

-- FCALL cl_lease 1 key limit lease_time holder [MS] [DRYRUN]
local function cl_lease(keys, args)
  if #keys ~= 1 then return redis.error_reply(ERRORS.wrong_arity('cl.lease')) end
  local p = args_lease_plain(args)
  if p == nil then
    local err
    p, err = args_lease(args)
    if p == nil then return redis.error_reply(err) end
  end
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
local function cl_release(keys, args)
  if #keys ~= 1 then return redis.error_reply(ERRORS.wrong_arity('cl.release')) end
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
      redis.call('SET', key, plan.whole, 'PXAT', string.format('%d', plan.expire_at_ms))
    else
      redis.call('DEL', key)
    end
  end
  return freed
end

-- FCALL_RO cl_holders 1 key [MS]: each live lease's holder and the time it has left, the
-- soonest to end first.
local function cl_holders(keys, args)
  if #keys ~= 1 then return redis.error_reply(ERRORS.wrong_arity('cl.holders')) end
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

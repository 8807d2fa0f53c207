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
local LEASE_TOO_LONG = ERRORS.lease_set_too_long
local LEASE_INTERNAL = ERRORS.internal

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
  if end_ms > LEASE_MAX_END_MS then state_fail(ERRORS.too_large('lease_time')) end
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
local LEASE = {
  read = function(key) return state_bytes(key) end,
  decide = function(p, v, _, now_ms)
    if p.holder == nil or p.refund then return lease_look(p, v, now_ms) end
    return lease_decide(p, v, now_ms)
  end,
  peek = function(p, v, _, now_ms) return lease_look(p, v, now_ms) end,
  write = function(key, _, plan) redis.call('SET', key, plan.whole, 'PXAT', plan.expire_at_ms) end,
}

-- FCALL cl_lease 1 key limit lease_time holder [MS] [DRYRUN]
local function cl_lease(keys, args)
  if #keys ~= 1 then return redis.error_reply(ERRORS.wrong_arity('cl.lease')) end
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
      redis.call('SET', key, plan.whole, 'PXAT', plan.expire_at_ms)
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

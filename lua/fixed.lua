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
  local text, err = state_bytes(key, now_ms)
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

-- Where a window opened at now_ms ends: a period on, or where its grid says (ALIGN, or a
-- calendar's unit).
local function fixed_end(p, now_ms)
  if not (p.align or p.calendar) then return now_ms + p.period_ms end
  return calendar_end_after(p, now_ms)
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
  local end_ms = open and open.end_ms or fixed_end(p, now_ms)
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
local FIXED = {
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

FIXED.take = function(p, quantity) p.quantity = quantity end

-- A plain limiter (`limit period` as args_plain_rate takes them) and quantity, a canonical integer below 10^14,
-- decided at now_ms on a key absent or holding a canonical count with an expiry:
-- fixed_decide_quantity in numbers, with no table but the reply. The reply, and the count to
-- write (nil: none) with the window's end when the call opens one (nil: the key keeps its
-- own); nil for any other key, having written nothing. fixed_plain's, and CL.ALL's
-- (all_plain).
local function fixed_plain_decide(key, quantity, limit, period, now_ms)
  -- The open window's count and end; none (end_ms nil) when the key is absent or its
  -- window has ended.
  local count, end_ms = 0, nil
  local value = redis.pcall('GET', key)
  if value then
    -- Anything but a count (another type, the banned form, damage) is the full reading's.
    if type(value) ~= 'string' then return nil end
    count = args_canonical(value)
    if count == nil then return nil end
    end_ms = state_expiry(key, now_ms)
    if end_ms < 0 then return nil end
    if now_ms >= end_ms then count, end_ms = 0, nil end
  end
  local wanted = count + quantity
  if wanted > limit then
    local retry = nil
    if end_ms and quantity <= limit then retry = end_ms - now_ms end
    return reply_ms(true, limit, limit - count, retry, end_ms and end_ms - now_ms or 0, 's')
  end
  local opens = nil
  if quantity > 0 and not end_ms then
    end_ms = now_ms + period * 1000
    opens = end_ms
  end
  return reply_ms(false, limit, limit - wanted, nil, end_ms and end_ms - now_ms or 0, 's'),
    quantity > 0 and wanted or nil, opens
end

-- A plain limiter's count written: with the end of the window it opens, or keeping the key's.
local function fixed_plain_write(key, count, opens)
  if opens then
    redis.call('SET', key, string.format('%d', count), 'PXAT', string.format('%d', opens))
  else
    redis.call('SET', key, string.format('%d', count), 'KEEPTTL')
  end
end

-- The plain call, `limit period [quantity]`, decided by fixed_plain_decide and written; nil
-- for any other call, before anything is written: cl_fixed then reads and decides it in full
-- (as throttle_plain).
local function fixed_plain(key, args)
  local quantity, limit, period = args_plain_call(args, #args, 2)
  if not quantity or not args_plain_rate(limit, period) then return nil end
  local _, now_ms = clock_now()
  local reply, count, opens = fixed_plain_decide(key, quantity, limit, period, now_ms)
  if count then fixed_plain_write(key, count, opens) end
  return reply
end

-- FCALL cl_fixed 1 key limit period|DAY|WEEK|MONTH|YEAR [quantity] [MS] [REFUND] [DRYRUN]
-- [COUNTDENIED] [ALIGN] [OFFSET minutes]
local function cl_fixed(keys, args)
  if #keys ~= 1 then return redis.error_reply(ERRORS.wrong_arity('cl.fixed')) end
  local plain = fixed_plain(keys[1], args)
  if plain then return plain end
  local p, err = args_window(args, 'cl.fixed')
  if p == nil then return redis.error_reply(err) end
  return single_run(keys[1], FIXED, p)
end

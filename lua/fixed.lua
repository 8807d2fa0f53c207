-- CL.FIXED in the library: the module's fixed window (src/fixed.rs) on the same key, a
-- decimal count whose expiry is the window's end, read, decided and written as the module
-- does, so that a key carries over either way. Counts are exact (a key may hold any 64-bit
-- count); the limit, the quantity and the instants are doubles, exact below 2^53.

local FIXED_ZERO = { neg = false }
-- Where the module's count saturates.
local FIXED_COUNT_MAX = ARGS_I64_MAX

-- The key's window: nil when there is none, or the error the module answers: a count is
-- never negative, and a window always ends.
local function fixed_read(key, now_ms)
  local count, err = state_integer(key)
  if count == nil then return nil, err end
  local end_ms = state_expire_at_ms(key, now_ms)
  if count.neg or end_ms < 0 then return nil, STATE_CORRUPT end
  return { count = count, end_ms = end_ms }
end

-- The limit left over a count (0 past the limit), as a number.
local function fixed_left(p, count)
  if exact_cmp(count, p.limit_exact) >= 0 then return 0 end
  return p.limit - exact_tonumber(count)
end

-- Decides a call at now_ms against the stored window: the reply, and the window to write
-- (with `opens` when its end is new), if any.
local function fixed_decide(p, stored, now_ms)
  local open = nil
  if stored and now_ms < stored.end_ms then open = stored end
  local count = open and open.count or FIXED_ZERO
  local function wait(window) return window and window.end_ms - now_ms or 0 end
  local end_ms = open and open.end_ms or now_ms + p.period_ms
  local wanted = exact_add(count, p.quantity_exact)
  if exact_cmp(wanted, p.limit_exact) <= 0 then
    local new
    if p.quantity > 0 then new = { count = wanted, end_ms = end_ms } end
    local after = new or open
    return reply_ms(false, p.limit, p.limit - exact_tonumber(wanted), nil, wait(after), p.unit), new
  end
  local new
  if p.count_denied and p.quantity > 0 then
    if exact_cmp(wanted, FIXED_COUNT_MAX) > 0 then wanted = FIXED_COUNT_MAX end
    new = { count = wanted, end_ms = end_ms }
  end
  local after = new or open
  local retry = nil
  if open and p.quantity <= p.limit then retry = wait(open) end
  local reply = reply_ms(true, p.limit, fixed_left(p, after and after.count or FIXED_ZERO),
    retry, wait(after), p.unit)
  if new and open and exact_cmp(new.count, open.count) == 0 and new.end_ms == open.end_ms then
    new = nil
  end
  return reply, new
end

-- The same limiter asked for nothing.
local function fixed_peek(p)
  return { limit = p.limit, limit_exact = p.limit_exact, period_ms = p.period_ms,
    quantity_exact = FIXED_ZERO, quantity = 0, count_denied = p.count_denied, unit = p.unit }
end

-- REFUND: the open window's count drops by the quantity, never below 0; 0 clears the key.
local function fixed_refund(p, stored, now_ms)
  local new
  if stored and now_ms < stored.end_ms and #stored.count > 0 and p.quantity > 0 then
    local count = exact_sub(stored.count, p.quantity_exact)
    if count.neg then count = FIXED_ZERO end
    new = { count = count, end_ms = stored.end_ms }
  end
  local left = stored
  if new then left = #new.count > 0 and new or nil end
  local reply = fixed_decide(fixed_peek(p), left, now_ms)
  reply[1] = 0
  reply[4] = -1
  return reply, new
end

-- The limiter of a parsed call (single.lua).
local function fixed_limiter(p)
  local peek = fixed_peek(p)
  return {
    read = function(key, now) return fixed_read(key, now.ms) end,
    decide = function(stored, now)
      if p.refund then return fixed_refund(p, stored, now.ms) end
      return fixed_decide(p, stored, now.ms)
    end,
    peek = function(stored, now) return (fixed_decide(peek, stored, now.ms)) end,
    write = function(key, new, stored, now)
      if #new.count == 0 then
        redis.call('DEL', key)
      elseif stored == nil or stored.end_ms ~= new.end_ms or now.ms >= stored.end_ms then
        redis.call('SET', key, exact_tostring(new.count), 'PXAT', new.end_ms)
      else
        redis.call('SET', key, exact_tostring(new.count), 'KEEPTTL')
      end
    end,
  }
end

-- FCALL cl_fixed 1 key limit period [quantity] [MS] [REFUND] [DRYRUN] [COUNTDENIED]
local function cl_fixed(keys, args)
  if #keys ~= 1 then return redis.error_reply(args_wrong_arity('cl.fixed')) end
  local p, err = args_window(args, 'cl.fixed', false)
  if p == nil then return redis.error_reply(err) end
  return single_run(keys[1], fixed_limiter(p), p.dry_run)
end

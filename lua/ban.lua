-- Lockouts in the library (src/ban.rs, src/commands/state.rs): a banned key denies every call
-- until its ban ends, then its limiter decides on its own state as it was, which a change
-- unwraps first; a denial with BAN bans. The form is state.lua's; its keys, as they are read,
-- are noted in STATE_BANNED.

-- The banned form of a ban until until_ms beside own (the limiter's bytes, or nil) and its
-- expiry (ban::encode).
local function ban_encode(until_ms, own, own_expire_at_ms)
  if own == nil then return STATE_BAN_MARK .. bytes_of_i64(until_ms) .. bytes_of_i64(0) end
  return STATE_BAN_MARK .. bytes_of_i64(until_ms) .. bytes_of_i64(own_expire_at_ms) .. own
end

-- What a call on a key banned until until_ms answers at now_ms, given what its limiter
-- answers a look at its own state (`look`, in the call's unit): denied, none remaining, to
-- retry when the ban ends, whole at the later of that and the limiter's own reset.
local function ban_denial(look, until_ms, now_ms, unit)
  local reply = reply_ms(true, look[2], 0, until_ms - now_ms, until_ms - now_ms, unit)
  if look[5] > reply[5] then reply[5] = look[5] end
  return reply
end

-- The reply of the call that bans until until_ms (ban::banning): to retry no sooner than the
-- ban's end, and whole no sooner either.
local function ban_banning(reply, until_ms, now_ms, unit)
  local wait = reply_rounded(until_ms - now_ms, unit)
  if reply[4] >= 0 and reply[4] < wait then reply[4] = wait end
  if reply[5] < wait then reply[5] = wait end
end

-- Whether a call's reply bans with BAN: a real call that its limiter denied, with units
-- that could fit later.
local function ban_bans(p, reply)
  return p.ban and p.quantity > 0 and not p.dry_run and reply[1] == 1 and reply[4] >= 0
end

-- A banned key whose ban is over, rewritten as its limiter's own state (or deleted, when
-- that is gone) before a change is written on it (state::unwrap).
local function ban_unwrap(key, banned, now_ms)
  STATE_BANNED[key] = nil
  if banned.own and now_ms < banned.own_expire_at_ms then
    redis.call('SET', key, banned.own, 'PXAT', banned.own_expire_at_ms)
  else
    redis.call('DEL', key)
  end
end

-- Bans key until until_ms, its limiter's state (as the key holds it now, or beside an ended
-- ban) kept beside the ban (state::ban). A state that never expires is kept until the ban
-- ends.
local function ban_write(key, until_ms, now_ms)
  local raw = redis.call('GET', key)
  local own, own_expire = nil, 0
  if raw then
    local banned = state_banned(raw)
    if banned then
      if banned.own and now_ms < banned.own_expire_at_ms then
        own, own_expire = banned.own, banned.own_expire_at_ms
      end
    else
      STATE_BANNED[key] = nil
      own = raw
      own_expire = state_expire_at_ms(key, now_ms)
      if own_expire < 0 then own_expire = until_ms end
    end
  end
  local expire_at = until_ms
  if own and own_expire > expire_at then expire_at = own_expire end
  redis.call('SET', key, ban_encode(until_ms, own, own_expire), 'PXAT', expire_at)
end

-- The span BAN gives, in ms.
local function ban_ms(p)
  return p.ban * ARGS_MS_PER[p.unit]
end

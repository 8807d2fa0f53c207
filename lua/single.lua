-- A single-key command's body, as src/commands/single.rs runs it: read the key, decide at
-- one instant, write what changed unless the call is a dry run. A kind of limiter is a
-- table of four steps (THROTTLE, FIXED, WINDOW, LEASE, SMOOTH), each given the call's
-- parsed arguments p and now, in µs and in ms:
--   read(key, p, now_us, now_ms)                    the stored state, or nil and the error
--   decide(p, stored, now_us, now_ms)               the reply and the change; errors thrown
--                                                   (state_fail)
--   peek(p, stored, now_us, now_ms)                 the reply to asking for nothing
--   write(key, p, change, stored, now_us, now_ms)
--   take(p, quantity)                               p asks for quantity units from now on
--                                                   (the rate limiters alone: ATMOST)

-- ATMOST's grant (Reading::grant): the most units, up to p's quantity, that the limiter
-- admits now, which is what a look leaves; or nil and the error.
local function single_grant(kind, p, stored, now_us, now_ms)
  local ok, peeked = pcall(kind.peek, p, stored, now_us, now_ms)
  if not ok then return nil, state_caught(peeked) end
  local granted = peeked[3]
  if granted > p.quantity then granted = p.quantity end
  return granted
end

local function single_run(key, kind, p)
  local now_us, now_ms = clock_now()
  state_begin()
  local stored, err = kind.read(key, p, now_us, now_ms)
  if err then return redis.error_reply(err) end
  -- A banned key denies every call while the ban holds (ban.lua).
  local banned = STATE_BANNED[key]
  if banned and now_ms < banned.until_ms then
    local ok, look = pcall(kind.peek, p, stored, now_us, now_ms)
    if not ok then return redis.error_reply(state_caught(look)) end
    local reply = ban_denial(look, banned.until_ms, now_ms, p.unit)
    if p.at_most then reply[6] = 0 end
    return reply
  end
  -- With ATMOST the limiter is asked for its grant, or for one unit when none fits, so that
  -- its denial says when one will. A look is granted nothing.
  local granted = 0
  if p.at_most and p.quantity > 0 then
    granted, err = single_grant(kind, p, stored, now_us, now_ms)
    if err then return redis.error_reply(err) end
    kind.take(p, granted > 0 and granted or 1)
  end
  local ok, reply, change = pcall(kind.decide, p, stored, now_us, now_ms)
  if not ok then return redis.error_reply(state_caught(reply)) end
  if change and not p.dry_run then
    if banned then ban_unwrap(key, banned, now_ms) end
    kind.write(key, p, change, stored, now_us, now_ms)
  end
  if ban_bans(p, reply) then
    local until_ms = now_ms + ban_ms(p)
    ban_write(key, until_ms, now_ms)
    ban_banning(reply, until_ms, now_ms, p.unit)
  end
  if p.at_most then reply[6] = reply[1] == 0 and granted or 0 end
  return reply
end

-- CL.ALL in the library (src/all.rs, src/commands/all.rs): several limiters decide one
-- request at one instant, all or nothing, each key read and decided before any is written,
-- each written as its own command writes it.

-- Each kind (single.lua), and the numbers the library refuses past 2^53 − 1.
local ALL_KIND = {
  throttle = { kind = THROTTLE, exact = THROTTLE_EXACT },
  fixed = { kind = FIXED, exact = ARGS_WINDOW_EXACT },
  window = { kind = WINDOW, exact = ARGS_WINDOW_EXACT },
  lease = { kind = LEASE, exact = ARGS_LEASE_EXACT },
}

-- Whether every limiter admitted, and the one whose reply stands for all (all::combine):
-- when denied, the first of the longest denials (one that never fits longest of all); when
-- admitted, the first of those with the fewest units left. Replies are in the call's unit.
local function all_combine(replies)
  local fewest, longest
  for i, reply in ipairs(replies) do
    if reply[1] == 0 then
      if fewest == nil or reply[3] < replies[fewest][3] then fewest = i end
    else
      local wait = reply[4] == -1 and math.huge or reply[4]
      local best = longest and (replies[longest][4] == -1 and math.huge or replies[longest][4])
      if longest == nil or wait > best then longest = i end
    end
  end
  if longest then return false, longest end
  return true, fewest or 1
end

-- How many words a plain limiter's keyword at args[at] starts (THROTTLE or FIXED, in upper or
-- lower case), or nil.
local function all_plain_words(args, at)
  local word = args[at]
  if word == 'THROTTLE' or word == 'throttle' then return 4 end
  if word == 'FIXED' or word == 'fixed' then return 3 end
  return nil
end

-- The plain CL.ALL: only THROTTLE and FIXED limiters, each `THROTTLE max_burst count period`
-- or `FIXED limit period` with canonical numbers in seconds, and no option, on keys absent or
-- plain. The words' shape is checked before any key is read, so that a call with an option
-- costs no reads here; each limiter's numbers are read as it is decided, by its command's
-- plain path, at one instant; then all are written or none. nil for any other call, having
-- written nothing: cl_all then reads and decides it in full, and answers its errors (a
-- repeated key among them).
local function all_plain(keys, args)
  local n = #keys
  if n == 0 or n > ALL_MAX_KEYS or all_repeated_key(keys) then return nil end
  local at = 1
  for _ = 1, n do
    local words = all_plain_words(args, at)
    if words == nil then return nil end
    at = at + words
  end
  if at ~= #args + 1 then return nil end
  local now_us, now_ms = clock_now()
  -- Each limiter's reply and what it writes: a TAT (gcra[i]) or a count, and the end of the
  -- window the count opens.
  local replies, writes, opens, gcra = {}, {}, {}, {}
  at = 1
  for i = 1, n do
    local words = all_plain_words(args, at)
    local reply
    if words == 4 then
      local max_burst, count, period = args_plain(args[at + 1]), args_plain(args[at + 2]), args_plain(args[at + 3])
      if not (max_burst and count and period) then return nil end
      local interval, limit, tolerance, increment = throttle_plain_numbers(1, max_burst, count, period, 1000000000)
      if interval == nil then return nil end
      reply, writes[i] = throttle_plain_decide(keys[i], interval, limit, tolerance, increment, now_us, 1000000000)
      gcra[i] = true
    else
      local limit, period = args_plain(args[at + 1]), args_plain(args[at + 2])
      if not (limit and period and args_plain_rate(limit, period)) then return nil end
      reply, writes[i], opens[i] = fixed_plain_decide(keys[i], 1, limit, period, now_ms)
    end
    if reply == nil then return nil end
    replies[i] = reply
    at = at + words
  end
  local admitted, binding = all_combine(replies)
  if admitted then
    for i = 1, n do
      if writes[i] then
        if gcra[i] then
          throttle_write_after(keys[i], writes[i], now_us)
        else
          fixed_plain_write(keys[i], writes[i], opens[i])
        end
      end
    end
  end
  return replies[binding]
end

-- FCALL cl_all numkeys key [key …] limiter [limiter …] [QUANTITY quantity] [MS] [REFUND]
-- [DRYRUN] [DETAIL] [HOLDER holder] [ATMOST]
local function cl_all(keys, args)
  local plain = all_plain(keys, args)
  if plain then return plain end
  local all, err = args_all(keys, args)
  if all == nil then return redis.error_reply(err) end
  -- The module builds every limiter before it reads a key: a GCRA's numbers can fail.
  for _, spec in ipairs(all.limiters) do
    if spec.kind == 'throttle' then
      local gcra_err = throttle_made(spec.p, all.at_most)
      if gcra_err then return redis.error_reply(gcra_err) end
    end
  end
  if all.block then return redis.error_reply(ERRORS.cannot_wait('cl.all')) end
  local kinds, ps = {}, {}
  for i, spec in ipairs(all.limiters) do
    local made = ALL_KIND[spec.kind]
    local inexact = args_exact_enough(spec.p, made.exact)
    if inexact then return redis.error_reply(inexact) end
    kinds[i], ps[i] = made.kind, spec.p
  end
  local now_us, now_ms = clock_now()
  state_begin()
  local stored, replies, changes = {}, {}, {}
  -- The keys banned now (ban.lua), which deny whatever is asked.
  local held = {}
  local function ban_held(i, key)
    local banned = STATE_BANNED[key]
    if banned == nil or now_ms >= banned.until_ms then return false end
    local ok, look = pcall(kinds[i].peek, ps[i], stored[i], now_us, now_ms)
    if not ok then return nil, state_caught(look) end
    held[i] = ban_denial(look, banned.until_ms, now_ms, all.unit)
    return true
  end
  -- Each key read in key order, its first error answered (src/commands/all.rs). With ATMOST
  -- each is asked its grant as it is read, and decides once the least of them is known. A
  -- look is granted nothing.
  local at_most = all.at_most and all.quantity > 0
  local granted = all.quantity
  for i, key in ipairs(keys) do
    local value, read_err = kinds[i].read(key, ps[i], now_us, now_ms)
    if read_err then return redis.error_reply(read_err) end
    stored[i] = value
    local banned, ban_err = ban_held(i, key)
    if ban_err then return redis.error_reply(ban_err) end
    if banned then
      -- Nothing fits while the ban holds.
      if at_most then granted = 0 else replies[i] = held[i] end
    elseif at_most then
      local most, grant_err = single_grant(kinds[i], ps[i], value, now_us, now_ms)
      if most == nil then return redis.error_reply(grant_err) end
      if most < granted then granted = most end
    else
      local ok, reply, change = pcall(kinds[i].decide, ps[i], value, now_us, now_ms)
      if not ok then return redis.error_reply(state_caught(reply)) end
      replies[i], changes[i] = reply, change
    end
  end
  if at_most then
    for i = 1, #keys do
      -- None fits: asked for one unit, the denial says when one will.
      kinds[i].take(ps[i], granted > 0 and granted or 1)
      if held[i] then
        replies[i] = held[i]
      else
        local ok, reply, change = pcall(kinds[i].decide, ps[i], stored[i], now_us, now_ms)
        if not ok then return redis.error_reply(state_caught(reply)) end
        replies[i], changes[i] = reply, change
      end
    end
  end
  -- Each key whose own limiter denied is locked out, with BAN: never a lease, nor a key
  -- banned now. Any such denial denies the call.
  local bans = {}
  if all.ban then
    for i = 1, #keys do
      local p = ps[i]
      if not held[i] and all.limiters[i].kind ~= 'lease' then
        p.ban = all.ban
        if ban_bans(p, replies[i]) then
          bans[i] = now_ms + ban_ms(p)
          ban_banning(replies[i], bans[i], now_ms, all.unit)
        end
      end
    end
  end
  local admitted, binding = all_combine(replies)
  local reply = replies[binding]
  if all.detail then
    -- A limiter that would have admitted took nothing when another denied: it answers as a
    -- look at its key.
    reply = {}
    for i = 1, #keys do
      reply[i] = replies[i]
      if not admitted and replies[i][1] == 0 then
        local ok, peeked = pcall(kinds[i].peek, ps[i], stored[i], now_us, now_ms)
        if not ok then return redis.error_reply(state_caught(peeked)) end
        reply[i] = peeked
      end
    end
  end
  if admitted and not all.dry_run then
    for i, key in ipairs(keys) do
      if changes[i] then
        local banned = STATE_BANNED[key]
        if banned then ban_unwrap(key, banned, now_ms) end
        kinds[i].write(key, ps[i], changes[i], stored[i], now_us, now_ms)
      end
    end
  elseif not admitted then
    for i, key in ipairs(keys) do
      if bans[i] then ban_write(key, bans[i], now_ms) end
    end
  end
  if all.at_most then
    if not admitted or not at_most then granted = 0 end
    if all.detail then
      for i = 1, #reply do reply[i][6] = granted end
    else
      reply[6] = granted
    end
  end
  return reply
end

-- A limiter's key read as the module reads it (src/store.rs): absent, an integer, or the
-- error the module answers for another type or a string that is not one.

local STATE_WRONGTYPE = ERRORS.wrong_type
local STATE_CORRUPT = ERRORS.corrupt_state

-- The banned form (src/ban.rs): "CLX", version 1, four zeros and eight 0xff (a NaN where a
-- smooth limiter keeps its stored permits), the ban's end and the limiter's own expiry (0: no
-- state) as i64s, then the limiter's own bytes.
local STATE_BAN_HEADER = 32
local STATE_BAN_MARK = 'CLX\1\0\0\0\0\255\255\255\255\255\255\255\255'

-- The keys of the running call that hold the banned form, each as { until_ms, own,
-- own_expire_at_ms } (own nil: no state): filled as they are read (state_bytes), emptied as
-- each call begins (state_begin).
local STATE_BANNED = {}

local function state_begin()
  STATE_BANNED = {}
end

-- The banned form in value, or nil (Banned::parse).
local function state_banned(value)
  if #value < STATE_BAN_HEADER or string.sub(value, 1, 16) ~= STATE_BAN_MARK then return nil end
  local until_ms, own_expire = bytes_i64(value, 16), bytes_i64(value, 24)
  if until_ms == nil or own_expire == nil or until_ms <= 0 then return nil end
  if #value == STATE_BAN_HEADER then
    if own_expire ~= 0 then return nil end
    return { until_ms = until_ms }
  end
  if own_expire <= 0 then return nil end
  return { until_ms = until_ms, own = string.sub(value, STATE_BAN_HEADER + 1), own_expire_at_ms = own_expire }
end

-- The key's string, nil for no key, or nil and WRONGTYPE: one GET, whose refusal of another
-- type is the module's error too. (GET copies the value: for a window's log, as a search
-- over it reads it; a state that is a number is at most 20 bytes, and a longer one is damage.)
-- A rate limiter reads at now_ms: a banned key reads as the limiter's own state beside the
-- ban, gone once its own expiry has come, and is noted in STATE_BANNED.
local function state_bytes(key, now_ms)
  local value = redis.pcall('GET', key)
  if type(value) == 'table' and value.err then
    if string.find(value.err, '^WRONGTYPE') then return nil, STATE_WRONGTYPE end
    error(value)
  end
  if not value then return nil end
  -- Most states start otherwise: a digit, or a sliding window's "CLW" or "CLB".
  if now_ms and string.byte(value, 3) == 88 then
    local banned = state_banned(value)
    if banned then
      STATE_BANNED[key] = banned
      if banned.own and now_ms < banned.own_expire_at_ms then return banned.own end
      return nil
    end
  end
  return value
end

-- A key's text read as an integer, exact, or nil and the error.
local function state_exact(text)
  -- No 64-bit integer takes more than 20 bytes.
  if #text > 20 then return nil, STATE_CORRUPT end
  local value = exact_parse(text)
  if value == nil then return nil, STATE_CORRUPT end
  return value
end

-- The key's absolute expiry in ms, or -1 for none. Redis 6.2 has no PEXPIRETIME: there it is
-- now plus PTTL, which can read a millisecond off where the two straddle one.
local function state_expiry(key, now_ms)
  if redis.REDIS_VERSION_NUM then return redis.call('PEXPIRETIME', key) end
  local ttl = redis.call('PTTL', key)
  if ttl < 0 then return ttl end
  return now_ms + ttl
end

-- The same of a key read by state_bytes in this call: a banned key's is its limiter's own.
local function state_expire_at_ms(key, now_ms)
  local banned = STATE_BANNED[key]
  if banned then return banned.own_expire_at_ms or -2 end
  return state_expiry(key, now_ms)
end

-- An error reply's text thrown from deep in a decision with error(), which the command's
-- pcall turns back into its reply (state_caught).
local function state_fail(text)
  error({ err = text }, 0)
end

local function state_corrupt()
  state_fail(STATE_CORRUPT)
end

-- The reply text of what a pcall caught: Valkey's pcall hands back a thrown table's text,
-- Redis's the table. Anything else is a defect, raised on as the server's script error.
local function state_caught(thrown)
  local text = type(thrown) == 'table' and thrown.err or thrown
  if type(text) == 'string' and string.find(text, '^ERR ') then return text end
  error(thrown, 0)
end

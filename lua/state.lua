-- A limiter's key read as the module reads it (src/store.rs): absent, an integer, or the
-- error the module answers for another type or a string that is not one.

local STATE_WRONGTYPE = ERRORS.wrong_type
local STATE_CORRUPT = ERRORS.corrupt_state

-- The key's string, nil for no key, or nil and WRONGTYPE: one GET, whose refusal of another
-- type is the module's error too. (GET copies the value: for a window's log, as a search
-- over it reads it; a state that is a number is at most 20 bytes, and a longer one is damage.)
local function state_bytes(key)
  local value = redis.pcall('GET', key)
  if type(value) == 'table' and value.err then
    if string.find(value.err, '^WRONGTYPE') then return nil, STATE_WRONGTYPE end
    error(value)
  end
  if not value then return nil end
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
local function state_expire_at_ms(key, now_ms)
  if redis.REDIS_VERSION_NUM then return redis.call('PEXPIRETIME', key) end
  local ttl = redis.call('PTTL', key)
  if ttl < 0 then return ttl end
  return now_ms + ttl
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

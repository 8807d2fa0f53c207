-- A limiter's key read as the module reads it (src/store.rs): absent, an integer, or the
-- error the module answers for another type or a string that is not one.

local STATE_WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
local STATE_CORRUPT = 'ERR the value at this key is not a valid state for this command'

-- The key's integer (exact), nil for no key, or nil and the error.
local function state_integer(key)
  local kind = redis.call('TYPE', key)['ok']
  if kind == 'none' then return nil end
  if kind ~= 'string' then return nil, STATE_WRONGTYPE end
  -- No 64-bit integer takes more than 20 bytes: a longer value is not read whole.
  if redis.call('STRLEN', key) > 20 then return nil, STATE_CORRUPT end
  local value = exact_parse(redis.call('GET', key))
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

-- The key's string, nil for no key, or nil and WRONGTYPE.
local function state_bytes(key)
  local kind = redis.call('TYPE', key)['ok']
  if kind == 'none' then return nil end
  if kind ~= 'string' then return nil, STATE_WRONGTYPE end
  return redis.call('GET', key)
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

-- A single-key command's body, as src/commands/single.rs runs it: read the key, decide at
-- one instant, write what changed unless the call is a dry run. A kind of limiter is a
-- table of four steps (THROTTLE, FIXED, WINDOW, LEASE, SMOOTH), each given the call's
-- parsed arguments p and now, in µs and in ms:
--   read(key, p, now_us, now_ms)                    the stored state, or nil and the error
--   decide(p, stored, now_us, now_ms)               the reply and the change; errors thrown
--                                                   (state_fail)
--   peek(p, stored, now_us, now_ms)                 the reply to asking for nothing
--   write(key, p, change, stored, now_us, now_ms)

local function single_run(key, kind, p)
  local now_us, now_ms = clock_now()
  local stored, err = kind.read(key, p, now_us, now_ms)
  if err then return redis.error_reply(err) end
  local ok, reply, change = pcall(kind.decide, p, stored, now_us, now_ms)
  if not ok then return redis.error_reply(state_caught(reply)) end
  if change and not p.dry_run then kind.write(key, p, change, stored, now_us, now_ms) end
  return reply
end

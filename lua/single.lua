-- A single-key command's body, as src/commands/single.rs runs it: read the key, decide at
-- one instant, write what changed unless the call is a dry run. A limiter is a table of
-- its kind's four steps, made from the call's parsed arguments (throttle_limiter,
-- fixed_limiter, window_limiter, lease_limiter):
--   read(key, now)              the stored state, or nil and the error
--   decide(stored, now)         the reply and the change; errors thrown (state_fail)
--   peek(stored, now)           the reply to asking for nothing
--   write(key, change, stored, now)

local function single_run(key, limiter, dry_run)
  local now = clock_now()
  local stored, err = limiter.read(key, now)
  if err then return redis.error_reply(err) end
  local ok, reply, change = pcall(limiter.decide, stored, now)
  if not ok then return redis.error_reply(state_caught(reply)) end
  if change and not dry_run then limiter.write(key, change, stored, now) end
  return reply
end

-- CL.THROTTLE as the Lua script people paste into their services: GCRA with the TAT in a
-- string key, microsecond clock from TIME. KEYS[1]; ARGV: max_burst, count, period (s),
-- quantity. Same five-integer reply.
local burst, count, period, quantity =
  tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local interval = period * 1000000 / count
local tolerance = interval * (burst + 1)
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local new_tat = tat + interval * quantity
local allow_at = new_tat - tolerance
if allow_at > now then
  local retry = -1
  if interval * quantity <= tolerance then retry = math.ceil((allow_at - now) / 1000000) end
  return {1, burst + 1, math.max(0, math.floor((tolerance - (tat - now)) / interval)),
          retry, math.ceil((tat - now) / 1000000)}
end
if quantity > 0 then
  redis.call('SET', KEYS[1], string.format('%d', new_tat), 'PX', math.ceil((new_tat - now) / 1000))
end
return {0, burst + 1, math.floor((tolerance - (new_tat - now)) / interval), -1,
        math.ceil((new_tat - now) / 1000000)}

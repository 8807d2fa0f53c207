-- CL.ALL as a Lua script would do it, written for the benchmark: GCRA limiters (the TAT in a
-- string key) and sliding-window logs (a sorted set), all decided before any is written, and
-- written only when all admit. KEYS: the limiters' keys; ARGV: quantity, then for each key
-- 'throttle' max_burst count period (s), or 'window' limit period (s). Replies the binding
-- limiter's five integers: the longest denial, or the admission with the fewest left.
local quantity = tonumber(ARGV[1])
local time = redis.call('TIME')
local now_us = tonumber(time[1]) * 1000000 + tonumber(time[2])
local now_ms = math.floor(now_us / 1000)
local replies, writes, admitted, at = {}, {}, true, 2
for i, key in ipairs(KEYS) do
  local kind = ARGV[at]
  if kind == 'throttle' then
    local burst, count, period = tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3])
    at = at + 4
    local interval = period * 1000000 / count
    local tolerance = interval * (burst + 1)
    local tat = tonumber(redis.call('GET', key)) or now_us
    if tat < now_us then tat = now_us end
    local new_tat = tat + interval * quantity
    if new_tat - tolerance > now_us then
      admitted = false
      local retry = -1
      if interval * quantity <= tolerance then retry = math.ceil((new_tat - tolerance - now_us) / 1000000) end
      replies[i] = {1, burst + 1, math.max(0, math.floor((tolerance - (tat - now_us)) / interval)),
                    retry, math.ceil((tat - now_us) / 1000000)}
    else
      replies[i] = {0, burst + 1, math.floor((tolerance - (new_tat - now_us)) / interval), -1,
                    math.ceil((new_tat - now_us) / 1000000)}
      writes[i] = function()
        redis.call('SET', key, string.format('%d', new_tat), 'PX', math.ceil((new_tat - now_us) / 1000))
      end
    end
  else
    local limit, period = tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2]) * 1000
    at = at + 3
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now_ms - period)
    local used = redis.call('ZCARD', key)
    if used + quantity > limit then
      admitted = false
      local retry = -1
      if quantity <= limit then
        local leaving = redis.call('ZRANGE', key, used + quantity - limit - 1, used + quantity - limit - 1, 'WITHSCORES')
        retry = math.ceil((tonumber(leaving[2]) + period - now_ms) / 1000)
      end
      local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
      replies[i] = {1, limit, limit - used, retry, math.ceil((tonumber(newest[2]) + period - now_ms) / 1000)}
    else
      replies[i] = {0, limit, limit - used - quantity, -1, math.ceil(period / 1000)}
      writes[i] = function()
        for _ = 1, quantity do
          redis.call('ZADD', key, now_ms, now_ms .. ':' .. math.random(1, 1000000000))
        end
        if quantity > 0 then redis.call('PEXPIRE', key, period) end
      end
    end
  end
end
local binding = 1
for i, reply in ipairs(replies) do
  local best = replies[binding]
  if admitted then
    if reply[3] < best[3] then binding = i end
  elseif reply[1] == 1 then
    local wait = reply[4] == -1 and math.huge or reply[4]
    local best_wait = best[1] == 0 and -1 or (best[4] == -1 and math.huge or best[4])
    if wait > best_wait then binding = i end
  end
end
if admitted then
  for i = 1, #KEYS do writes[i]() end
end
return replies[binding]

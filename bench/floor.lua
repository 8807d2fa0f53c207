#!lua name=cell_floor
-- The least a function can do and still decide as the module does (bench/functions.py
-- loads it beside the library): read the server's clock, read the key, write it with an
-- absolute expiry, and answer five integers. What the library costs past this is its Lua.

local function floor_fixed(keys, args)
  local time = redis.call('TIME')
  redis.call('GET', keys[1])
  redis.call('SET', keys[1], '1', 'PXAT', time[1] * 1000 + 60000)
  return { 0, 1000, 999, -1, 60 }
end

redis.register_function{ function_name = 'floor_fixed', callback = floor_fixed }

-- redis-cell's figures for Prometheus, through the redis_exporter's -script option
-- (oliver006/redis_exporter; Debian's prometheus-redis-exporter):
--
--   redis_exporter -redis.addr redis://host:6379 -script redis-cell.lua
--
-- The exporter runs it with EVAL at each scrape and exports every name and value it returns
-- as redis_script_values{key="<name>"} <value>:
--   cl_<command>_<counter>  each line of INFO redis-cell (cl_throttle_denied, cl_waiting_now,
--                           cl_atmost_units, ...): the counters, since start or RESETSTAT;
--   denied:<key>            the calls CL.TOP lists as denied for <key> over this minute and
--                           the one before;
--   denied_error:<key>      the most that figure may exceed the truth.
-- In <key>, a byte that is not printable ASCII, and the backslash, are written \xNN: a label
-- must be UTF-8, and the exporter drops a metric whose label is not.
-- CL.TOP lists at most COUNT keys, so the script yields at most 2 * COUNT labels of keys at
-- each scrape. Where CL.TOP is refused (a server without the module, a user not granted it),
-- the counters are still returned. docs/operations.md, "Who is being limited".
local COUNT = 10

local values = {}
local function add(name, value)
  values[#values + 1] = name
  values[#values + 1] = tostring(value)
end

local info = redis.pcall('INFO', 'redis-cell')
if type(info) == 'string' then
  for line, fields in string.gmatch(info, 'redis%-cell_([%w_]+):([^\r\n]*)') do
    for field, value in string.gmatch(fields, '([%w_]+)=(%-?%d+)') do
      add(line .. '_' .. field, value)
    end
  end
end

local function printable(key)
  return (string.gsub(key, '.', function(char)
    local byte = string.byte(char)
    if byte < 32 or byte > 126 or char == '\\' then
      return string.format('\\x%02X', byte)
    end
  end))
end

local top = redis.pcall('CL.TOP', 'COUNT', COUNT)
if type(top) == 'table' and top.err == nil then
  for at = 1, #top - 2, 3 do
    local key = printable(top[at])
    add('denied:' .. key, top[at + 1])
    add('denied_error:' .. key, top[at + 2])
  end
end

return values

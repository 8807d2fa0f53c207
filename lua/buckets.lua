-- CL.WINDOW's bucketed form (`BUCKETS n`) in the library: the module's cells
-- (src/buckets/cells.rs) on the same key.

local BUCKETS_HEADER = 32

-- The number of cells a value holds, if it is a bucketed window whose header the module
-- would take (Cells::decode): for the error that names the form a key holds.
local function buckets_cells_in(v)
  if #v < BUCKETS_HEADER or string.sub(v, 1, 4) ~= 'CLB\1' then return nil end
  local cell_bytes = string.byte(v, 5)
  local n = string.byte(v, 6) + string.byte(v, 7) * 256
  local origin = string.byte(v, 8) + string.byte(v, 9) * 256
  local width_ms = bytes_u32(v, 9) + (string.byte(v, 14) + string.byte(v, 15) * 256) * BYTES_2_32
  local newest_hi, newest_lo = bytes_u64(v, 15)
  local sum_hi = bytes_u64(v, 23)
  local cells_len = #v - BUCKETS_HEADER
  if not (cell_bytes == 1 or cell_bytes == 2 or cell_bytes == 4 or cell_bytes == 8) then return nil end
  if n < 2 or n > 1024 or origin >= n or width_ms < 1 then return nil end
  if newest_hi >= BYTES_2_31 or sum_hi >= BYTES_2_31 or string.byte(v, 32) ~= 0 then return nil end
  if cells_len % cell_bytes ~= 0 or cells_len / cell_bytes < 1 or cells_len / cell_bytes > n then return nil end
  -- The instant the newest cell leaves, (newest + n) * width, must be an i64.
  local newest = exact_add(exact_mul(exact_of_number(newest_hi), exact_of_number(BYTES_2_32)),
    exact_of_number(newest_lo))
  local leaves = exact_mul(exact_add(newest, exact_of_number(n)), exact_of_number(width_ms))
  if exact_cmp(leaves, ARGS_I64_MAX) > 0 then return nil end
  return n
end

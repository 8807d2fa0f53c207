-- The library's functions, as the generated forms register them (scripts/lua_forms.py): by
-- name, with the flags the module's commands have. Each entry's callback takes the keys and
-- the arguments, as FCALL hands them.

local CELL_VERSION = '0.1.0'

-- The library's version, which a client compares with its own before it calls (FCALL_RO).
local function cl_version(keys, args)
  return CELL_VERSION
end

-- The script form's answer to a name it has no function for.
local function cell_unknown(name)
  return redis.error_reply(ERRORS.no_function(tostring(name)))
end

local CELL_FUNCTIONS = {
  { name = 'cl_version', callback = cl_version, flags = { 'no-writes' } },
  { name = 'cl_throttle', callback = cl_throttle, flags = {} },
  { name = 'cl_fixed', callback = cl_fixed, flags = {} },
  { name = 'cl_window', callback = cl_window, flags = {} },
  { name = 'cl_lease', callback = cl_lease, flags = {} },
  -- CL.RELEASE is not deny-oom: freeing a lease must work when memory is full.
  { name = 'cl_release', callback = cl_release, flags = { 'allow-oom' } },
  { name = 'cl_holders', callback = cl_holders, flags = { 'no-writes' } },
  { name = 'cl_all', callback = cl_all, flags = {} },
  { name = 'cl_smooth', callback = cl_smooth, flags = {} },
}

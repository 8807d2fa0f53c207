-- CL.ALL's grammar (src/all_args.rs), with FCALL's keys for the module's `numkeys key …`:
-- `FCALL cl_all numkeys key [key …] limiter [limiter …] [QUANTITY quantity] [MS] [REFUND]
-- [DRYRUN] [DETAIL] [HOLDER holder] [BLOCK timeout]`. Each limiter's numbers are read by the
-- parsers its own command uses, with the shared quantity and unit.

local ALL_MAX_KEYS = 16
-- The most arguments the module reads, its name included: numkeys, 16 keys, 16 limiters of
-- up to five words and the options (src/commands/all.rs's MAX_ALL_ARGS).
local ALL_MAX_ARGS = 2 + 16 * 6 + 10
local ALL_KINDS = { THROTTLE = 'throttle', FIXED = 'fixed', WINDOW = 'window', LEASE = 'lease' }
local ALL_OPTIONS = { QUANTITY = true, MS = true, REFUND = true, DRYRUN = true, DETAIL = true,
  HOLDER = true, BLOCK = true }
local ALL_LIMITERS = 'give one THROTTLE, FIXED, WINDOW or LEASE limiter per key, in key order'

-- The call's limiters ({ kind, p }, in key order) and its options, or nil and the error. The
-- library's own refusals (BLOCK, numbers past 2^53 − 1) are the caller's, once the module's
-- checks, Gcra::new's among them, have passed.
local function args_all(keys, args)
  local command = 'cl.all'
  local argc = 2 + #keys + #args
  if argc < 6 or argc > ALL_MAX_ARGS then return nil, args_wrong_arity(command) end
  if #keys < 1 then return nil, 'ERR numkeys must be >= 1' end
  if #keys > ALL_MAX_KEYS then return nil, 'ERR numkeys must be <= ' .. ALL_MAX_KEYS end
  for again = 2, #keys do
    for first = 1, again - 1 do
      if keys[first] == keys[again] then
        return nil, 'ERR key ' .. again .. ' is the same as key ' .. first .. ': each key takes one limiter'
      end
    end
  end
  -- The shape first: where each limiter is, then the options.
  local shapes = {}
  local at = 1
  for key = 1, #keys do
    local keyword = args[at]
    if keyword == nil then return nil, 'ERR no limiter for key ' .. key .. ': ' .. ALL_LIMITERS end
    local word = string.upper(keyword)
    local kind = ALL_KINDS[word]
    if kind == nil then
      if ALL_OPTIONS[word] then return nil, 'ERR no limiter for key ' .. key .. ': ' .. ALL_LIMITERS end
      if word == 'SMOOTH' then
        return nil, 'ERR limiter ' .. key .. ' is SMOOTH, which CL.ALL does not take: call CL.SMOOTH on its key alone'
      end
      return nil, 'ERR limiter ' .. key .. ' is not THROTTLE, FIXED, WINDOW or LEASE'
    end
    local params = 2
    if kind == 'throttle' then
      params = 3
    elseif kind == 'window' and args[at + 3] and args_is_buckets(args[at + 3]) then
      params = 4
    end
    shapes[key] = { kind = kind, at = at + 1, params = params }
    at = at + 1 + params
  end
  if at > #args + 1 then return nil, args_wrong_arity(command) end
  local seen = {}
  while args[at] do
    local word = string.upper(args[at])
    local takes_value = word == 'QUANTITY' or word == 'BLOCK' or word == 'HOLDER'
    if ALL_OPTIONS[word] and not seen[word] then
      seen[word] = at + (takes_value and 1 or 0)
      at = at + (takes_value and 2 or 1)
    elseif ALL_KINDS[word] then
      return nil, 'ERR more limiters than numkeys: give one limiter per key, in key order'
    else
      return nil, 'ERR syntax error'
    end
  end
  local function value(option) return args[seen[option]] end
  local quantity, quantity_exact = 1, false
  if seen.QUANTITY then
    if value('QUANTITY') == nil then return nil, 'ERR syntax error' end
    local q, exact = args_integer(value('QUANTITY'), 'quantity', 0)
    if q == nil then return nil, exact end
    quantity, quantity_exact = q, exact
  end
  if seen.BLOCK then
    if value('BLOCK') == nil then return nil, 'ERR syntax error' end
    local err = args_block_timeout(value('BLOCK'))
    if err then return nil, err end
  end
  local holder = nil
  if seen.HOLDER then
    if value('HOLDER') == nil then return nil, 'ERR syntax error' end
    local err
    holder, err = args_holder(value('HOLDER'))
    if holder == nil then return nil, err end
  end
  local all = { unit = seen.MS and 'ms' or 's', refund = seen.REFUND ~= nil, dry_run = seen.DRYRUN ~= nil,
    detail = seen.DETAIL ~= nil, block = seen.BLOCK ~= nil, limiters = {} }
  local leases = false
  for _, shape in ipairs(shapes) do leases = leases or shape.kind == 'lease' end
  -- A look takes no lease, nor does a refund: neither needs anyone to hold it.
  if leases and holder == nil and quantity > 0 and not all.refund then
    return nil, 'ERR a LEASE limiter needs HOLDER holder: the name the lease is held under'
  end
  if not leases and holder ~= nil then return nil, 'ERR HOLDER is given, but no limiter is a LEASE' end
  -- Then each limiter's numbers, as its own command reads them.
  for key, shape in ipairs(shapes) do
    local p = { quantity = quantity, quantity_exact = quantity_exact, unit = all.unit,
      refund = all.refund, dry_run = all.dry_run, count_denied = false }
    local function param(offset) return args[shape.at + offset] or '' end
    local err
    if shape.kind == 'throttle' then
      err = args_throttle_params(p, param(0), param(1), param(2))
    elseif shape.kind == 'lease' then
      err = args_lease_params(p, param(0), param(1))
      -- Asked for nothing, a lease limiter only looks.
      if quantity > 0 then p.holder = holder end
    else
      err = args_limit_and_period(p, param(0), param(1))
      if err == nil and shape.params == 4 then p.buckets, err = args_bucket_count(param(3), p.period_ms) end
    end
    if err then return nil, err end
    all.limiters[key] = { kind = shape.kind, p = p }
  end
  -- After the limiters' own numbers, as the single commands check it.
  local never = args_never_waits({ block = all.block, refund = all.refund, dry_run = all.dry_run })
  if never then return nil, never end
  return all
end

-- CL.ALL's grammar (src/all_args.rs), with FCALL's keys for the module's `numkeys key …`:
-- `FCALL cl_all numkeys key [key …] limiter [limiter …] [QUANTITY quantity] [MS] [REFUND]
-- [DRYRUN] [DETAIL] [HOLDER holder] [BLOCK timeout]`. Each limiter's numbers are read by the
-- parsers its own command uses; the options by the grammar's table, as every command's.

local ALL_MAX_KEYS = GRAMMAR_NUMKEYS.max
-- The most arguments the module reads, its name included: numkeys, 16 keys, 16 limiters of
-- up to six words and the options (src/commands/all.rs's MAX_ALL_ARGS).
local ALL_MAX_ARGS = 2 + 16 * 7 + 11

-- How many words follow a limiter's numbers, from args[at] on: a WINDOW's `BUCKETS n`, a
-- FIXED's `ALIGN` and `OFFSET minutes` in either order, each once (all_args::params_of).
local function all_grid_words(kind, args, at)
  local function is(i, word) return args[i] and string.upper(args[i]) == word end
  if kind == 'window' then return is(at, 'BUCKETS') and 2 or 0 end
  if kind ~= 'fixed' then return 0 end
  local n, align, offset = 0, false, false
  while true do
    if not align and is(at + n, 'ALIGN') then
      align, n = true, n + 1
    elseif not offset and is(at + n, 'OFFSET') and args[at + n + 1] then
      offset, n = true, n + 2
    else
      return n
    end
  end
end

-- A FIXED limiter's `ALIGN` and `OFFSET minutes` (from args[from] to args[to]) into p, with
-- CL.FIXED's rules between them and the period; or the error.
local function all_fixed_grid(p, args, from, to)
  local i, offset = from, false
  while i <= to do
    if string.upper(args[i]) == 'ALIGN' then
      p.align = true
      i = i + 1
    else
      local err = ARGS_VALUES.offset(p, args[i + 1] or '')
      if err then return err end
      offset, i = true, i + 2
    end
  end
  if p.align and p.calendar then return ERRORS.align_on_calendar end
  if offset and not (p.align or p.calendar) then return ERRORS.offset_without_grid end
  return nil
end

-- The first key given again, as the two positions (first, again); nil when none is.
local function all_repeated_key(keys)
  for again = 2, #keys do
    for first = 1, again - 1 do
      if keys[first] == keys[again] then return first, again end
    end
  end
  return nil
end

-- The call's limiters ({ kind, p }, in key order) and its options, or nil and the error. The
-- library's own refusals (BLOCK, numbers past 2^53 − 1) are the caller's, once the module's
-- checks, Gcra::new's among them, have passed.
local function args_all(keys, args)
  local command = 'cl.all'
  local argc = 2 + #keys + #args
  if argc < 6 or argc > ALL_MAX_ARGS then return nil, ERRORS.wrong_arity(command) end
  if #keys < GRAMMAR_NUMKEYS.min then return nil, ERRORS.below_minimum('numkeys', GRAMMAR_NUMKEYS.min) end
  if #keys > ALL_MAX_KEYS then return nil, ERRORS.above_maximum('numkeys', ALL_MAX_KEYS) end
  local first, again = all_repeated_key(keys)
  if first then return nil, ERRORS.duplicate_key(first, again) end
  -- The shape first: where each limiter is, then the options.
  local shapes = {}
  local at = 1
  for key = 1, #keys do
    local keyword = args[at]
    if keyword == nil then return nil, ERRORS.missing_limiter(key) end
    local word = string.upper(keyword)
    local limiter = GRAMMAR_LIMITERS[word]
    if limiter == nil then
      local row = GRAMMAR_ROWS[word]
      if row and row.takers[command] then return nil, ERRORS.missing_limiter(key) end
      if word == 'SMOOTH' then return nil, ERRORS.smooth_in_all(key) end
      return nil, ERRORS.unknown_limiter(key)
    end
    local params = limiter.numbers + all_grid_words(limiter.kind, args, at + limiter.numbers + 1)
    shapes[key] = { kind = limiter.kind, numbers = limiter.numbers, read = ARGS_READ[word], at = at + 1,
      params = params }
    at = at + 1 + params
  end
  if at > #args + 1 then return nil, ERRORS.wrong_arity(command) end
  -- The server counts numkeys as argument 1, then the keys.
  local _, given, err, out_of_place = args_given(command, args, at, 1 + #keys + at)
  if err then
    -- A limiter past the last key is one too many.
    if out_of_place and GRAMMAR_LIMITERS[string.upper(args[out_of_place])] then return nil, ERRORS.extra_limiter end
    return nil, err
  end
  local unit = (given and given.MS) and 'ms' or 's'
  local all = { unit = unit, refund = given ~= nil and given.REFUND ~= nil,
    dry_run = given ~= nil and given.DRYRUN ~= nil, detail = given ~= nil and given.DETAIL ~= nil,
    at_most = given ~= nil and given.ATMOST ~= nil, block = false, quantity = 1, quantity_exact = false, limiters = {} }
  -- Then the values: each limiter's numbers, as its own command reads them, then the
  -- options', which every limiter then takes.
  for key, shape in ipairs(shapes) do
    local p = { quantity = 1, quantity_exact = false, unit = unit, refund = all.refund,
      dry_run = all.dry_run, count_denied = false, align = false, offset = 0, calendar = false }
    err = shape.read(p, args, shape.at)
    if err then return nil, err end
    if shape.kind == 'lease' then
      p.lease_ms = p.lease_time * ARGS_MS_PER[unit]
    elseif shape.kind ~= 'throttle' then
      p.period_ms = p.calendar and p.calendar.longest_ms or p.period * ARGS_MS_PER[unit]
      local first, last = shape.at + shape.numbers, shape.at + shape.params - 1
      if shape.kind == 'fixed' then
        err = all_fixed_grid(p, args, first, last)
      elseif last >= first then
        p.buckets, err = args_bucket_count(args[first + 1] or '', p.period_ms)
      end
      if err then return nil, err end
    end
    all.limiters[key] = { kind = shape.kind, p = p }
  end
  err = args_values(all, args, nil, given, ARGS_ANY_QUANTITY)
  if err then return nil, err end
  local quantity, holder = all.quantity, all.holder
  local leases = false
  for _, shape in ipairs(shapes) do leases = leases or shape.kind == 'lease' end
  -- A lease is one slot: no part of it can be granted.
  if leases and all.at_most then return nil, ERRORS.at_most_lease end
  -- A look takes no lease, nor does a refund: neither needs anyone to hold it.
  if leases and holder == nil and quantity > 0 and not all.refund then return nil, ERRORS.no_holder end
  if not leases and holder ~= nil then return nil, ERRORS.holder_without_lease end
  for _, limiter in ipairs(all.limiters) do
    local p = limiter.p
    p.quantity, p.quantity_exact = quantity, all.quantity_exact
    -- Asked for nothing, a lease limiter only looks.
    if limiter.kind == 'lease' and quantity > 0 then p.holder = holder end
  end
  return all
end

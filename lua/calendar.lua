-- Where a fixed window that keeps to a clock ends (src/calendar.rs): the multiples of a
-- period since the Unix epoch (ALIGN), or the calendar's days, ISO weeks, months and years,
-- each in the local time OFFSET minutes ahead of UTC. Instants are numbers of ms, exact
-- below 2^53; every division here is floored as the module's div_euclid floors it, and made
-- exact by taking the remainder first (math.fmod is exact on integers below 2^53).

local CALENDAR_DAY_MS = 86400000
-- Days in a 400-year Gregorian era, and from 0000-03-01 (era 0's first day, counting years
-- from March) to 1970-01-01.
local CALENDAR_ERA_DAYS = 146097
local CALENDAR_EPOCH_FROM_ERA_START = 719468

-- a divided by b (b > 0), floored, and the remainder, from 0 to b - 1.
local function calendar_div(a, b)
  local r = math.fmod(a, b)
  if r < 0 then r = r + b end
  return (a - r) / b, r
end

-- The date (year, month 1 to 12) of a day since the epoch: the Gregorian rule, by counting
-- years that start on the 1st of March, which puts the leap day last.
local function calendar_date_of(day)
  local era, day_of_era = calendar_div(day + CALENDAR_EPOCH_FROM_ERA_START, CALENDAR_ERA_DAYS)
  local floor = math.floor
  local year_of_era = floor((day_of_era - floor(day_of_era / 1460) + floor(day_of_era / 36524)
    - floor(day_of_era / 146096)) / 365)
  local day_of_year = day_of_era - (365 * year_of_era + floor(year_of_era / 4) - floor(year_of_era / 100))
  local month_from_march = floor((5 * day_of_year + 2) / 153)
  local month = month_from_march < 10 and month_from_march + 3 or month_from_march - 9
  local year = era * 400 + year_of_era
  if month <= 2 then year = year + 1 end
  return year, month
end

-- The day since the epoch of the 1st of a month.
local function calendar_first_of(year, month)
  if month <= 2 then year = year - 1 end
  local era, year_of_era = calendar_div(year, 400)
  local day_of_year = math.floor((153 * ((month + 9) % 12) + 2) / 5)
  local day_of_era = 365 * year_of_era + math.floor(year_of_era / 4) - math.floor(year_of_era / 100)
    + day_of_year
  return era * CALENDAR_ERA_DAYS + day_of_era - CALENDAR_EPOCH_FROM_ERA_START
end

-- The first day of the unit after the one that holds `day`.
local CALENDAR_END_DAY = {
  day = function(day) return day + 1 end,
  -- 1970-01-01 was a Thursday: Mondays are the days 4 past a multiple of 7.
  week = function(day) return calendar_div(day - 4, 7) * 7 + 4 + 7 end,
  month = function(day)
    local year, month = calendar_date_of(day)
    if month == 12 then return calendar_first_of(year + 1, 1) end
    return calendar_first_of(year, month + 1)
  end,
  year = function(day) return calendar_first_of(calendar_date_of(day) + 1, 1) end,
}

-- The end of the window that holds now_ms: p.calendar's unit, or with p.align the next
-- multiple of p.period_ms, in the local time p.offset minutes ahead of UTC.
local function calendar_end_after(p, now_ms)
  local offset_ms = p.offset * 60000
  local local_ms = now_ms + offset_ms
  if p.calendar then
    local day = calendar_div(local_ms, CALENDAR_DAY_MS)
    return CALENDAR_END_DAY[p.calendar.unit](day) * CALENDAR_DAY_MS - offset_ms
  end
  local _, into = calendar_div(local_ms, p.period_ms)
  return local_ms - into + p.period_ms - offset_ms
end

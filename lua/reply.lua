-- The five integers every command answers, from waits in whole milliseconds: rounded up to
-- the call's unit as the module's Outcome::to_reply rounds its nanoseconds, so that a
-- client that waits the time answered is never early.

-- A wait in whole ms, in the call's unit, rounded up.
local function reply_rounded(ms, unit)
  if ms < 0 then return 0 end
  -- The module counts the wait in 64-bit nanoseconds, saturating: an expiry someone set
  -- centuries away answers i64::MAX ns.
  if ms > 9223372036854 then return unit == 'ms' and 9223372036855 or 9223372037 end
  if unit == 'ms' then return ms end
  return math.floor((ms + 999) / 1000)
end

local function reply_ms(limited, limit, remaining, retry_ms, reset_ms, unit)
  if remaining < 0 then remaining = 0 end
  if remaining > limit then remaining = limit end
  return { limited and 1 or 0, limit, remaining, retry_ms and reply_rounded(retry_ms, unit) or -1,
    reply_rounded(reset_ms, unit) }
end

//! The values a command's words carry, each read and bounded as the grammar's table says
//! (grammar.rs): quantities, spans, instants, holders, timeouts, cells and offsets, each
//! refused with the error that names it.

use crate::decimal::parse_i64;
use crate::error::Error;
use crate::time::{TimeUnit, MAX_SPAN_NS, NANOS_PER_MILLI};

/// The fewest and the most cells `BUCKETS n` cuts a window into.
pub const MIN_CELLS: i64 = 2;
pub const MAX_CELLS: i64 = 1024;

/// The longest holder name.
pub const MAX_HOLDER: usize = 255;

/// The longest BLOCK timeout, in milliseconds: the span a limiter may look ahead.
pub const MAX_BLOCK_MS: i64 = MAX_SPAN_NS / NANOS_PER_MILLI;

/// No most quantity: every limiter but CL.SMOOTH takes any.
pub const ANY_QUANTITY: i64 = i64::MAX;

/// The quantity a call gives first, of at most `max`; 1 when it gives none.
#[inline(always)]
pub(crate) fn quantity_or_one(text: Option<&[u8]>, max: i64) -> Result<i64, Error> {
    match text {
        Some(text) => quantity(text, max),
        None => Ok(1),
    }
}

pub(crate) fn quantity(text: &[u8], max: i64) -> Result<i64, Error> {
    let quantity = integer(text, "quantity", 0)?;
    if quantity > max {
        return Err(Error::AboveMaximum {
            arg: "quantity",
            max,
        });
    }
    Ok(quantity)
}

/// `BUCKETS n`'s count of cells, which must cut the period into whole milliseconds.
pub fn bucket_count(text: &[u8], period_ms: i64) -> Result<i64, Error> {
    let n = integer(text, "BUCKETS", MIN_CELLS)?;
    if n > MAX_CELLS {
        return Err(Error::AboveMaximum {
            arg: "BUCKETS",
            max: MAX_CELLS,
        });
    }
    if period_ms % n != 0 {
        return Err(Error::PeriodNotCut);
    }
    Ok(n)
}

/// A span of at least one `unit`, kept in that unit, within what the limiters can look ahead.
pub fn span(text: &[u8], arg: &'static str, unit: TimeUnit) -> Result<i64, Error> {
    let span = integer(text, arg, 1)?;
    span.checked_mul(unit.nanos())
        .filter(|&ns| ns <= MAX_SPAN_NS)
        .map(|_| span)
        .ok_or(Error::TooLarge(arg))
}

/// The instant a replayed command carries (`AT unix-ms`): its nanoseconds within the span
/// every other time is held to, so that no instant plus a period can overflow.
pub fn instant_ms(text: &[u8]) -> Result<i64, Error> {
    let ms = integer(text, "AT", 0)?;
    ms.checked_mul(NANOS_PER_MILLI)
        .filter(|&ns| ns <= MAX_SPAN_NS)
        .map(|_| ms)
        .ok_or(Error::TooLarge("AT"))
}

/// A holder's name: 1 to 255 bytes, any bytes.
pub fn holder_name(holder: &[u8]) -> Result<&[u8], Error> {
    if (1..=MAX_HOLDER).contains(&holder.len()) {
        Ok(holder)
    } else {
        Err(Error::HolderLength)
    }
}

pub fn block_timeout(text: &[u8]) -> Result<i64, Error> {
    let timeout = integer(text, "timeout", 0)?;
    if timeout > MAX_BLOCK_MS {
        return Err(Error::AboveMaximum {
            arg: "timeout",
            max: MAX_BLOCK_MS,
        });
    }
    Ok(timeout)
}

/// Seconds, or milliseconds with `MS`.
pub fn unit_of(ms: bool) -> TimeUnit {
    if ms {
        TimeUnit::Milliseconds
    } else {
        TimeUnit::Seconds
    }
}

/// The most a local time's offset from UTC may be, in minutes either way (ISO 8601's
/// `±23:59`).
pub const MAX_OFFSET_MINUTES: i16 = 1_439;

/// `OFFSET minutes`: -1439 to 1439.
pub fn offset_minutes(text: &[u8]) -> Result<i16, Error> {
    let min = -i64::from(MAX_OFFSET_MINUTES);
    let minutes = integer(text, "OFFSET", min)?;
    i16::try_from(minutes)
        .ok()
        .filter(|minutes| *minutes <= MAX_OFFSET_MINUTES)
        .ok_or(Error::AboveMaximum {
            arg: "OFFSET",
            max: i64::from(MAX_OFFSET_MINUTES),
        })
}

/// An integer argument no smaller than `min`.
#[inline(always)]
pub fn integer(text: &[u8], arg: &'static str, min: i64) -> Result<i64, Error> {
    let value = parse_i64(text).ok_or(Error::NotAnInteger(arg))?;
    if value < min {
        return Err(Error::BelowMinimum { arg, min });
    }
    Ok(value)
}

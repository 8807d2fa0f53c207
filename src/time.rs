//! Units of time, each constant defined once: every layer keeps time in integer nanoseconds
//! or milliseconds since the Unix epoch, and names the unit.

pub const NANOS_PER_MILLI: i64 = 1_000_000;
pub const NANOS_PER_MICRO: i64 = 1_000;
pub const NANOS_PER_SECOND: i64 = 1_000_000_000;
pub const MILLIS_PER_SECOND: i64 = 1_000;
pub const MICROS_PER_MILLI: i64 = 1_000;
/// A day, in milliseconds.
pub const DAY_MS: i64 = 86_400 * MILLIS_PER_SECOND;

/// The longest span, in nanoseconds, that a limiter may look ahead: 2^62 ns, about 146 years.
/// With the clock below 2^62 ns too (until 2116), every instant a limiter computes fits in an
/// `i64`.
pub const MAX_SPAN_NS: i64 = 1 << 62;

/// The unit of a command's `period` argument and of the waits in its reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Seconds,
    Milliseconds,
}

impl TimeUnit {
    /// Nanoseconds in one of this unit.
    pub const fn nanos(self) -> i64 {
        match self {
            TimeUnit::Seconds => NANOS_PER_SECOND,
            TimeUnit::Milliseconds => NANOS_PER_MILLI,
        }
    }

    /// Milliseconds in one of this unit.
    pub const fn millis(self) -> i64 {
        match self {
            TimeUnit::Seconds => MILLIS_PER_SECOND,
            TimeUnit::Milliseconds => 1,
        }
    }

    /// A wait as a client reads it: whole units, rounded up, so that waiting that long is
    /// always enough; a negative wait is none.
    pub fn rounded_up(self, wait_ns: i64) -> i64 {
        let wait_ns = wait_ns.max(0);
        let per_unit = self.nanos();
        wait_ns / per_unit + i64::from(wait_ns % per_unit != 0)
    }
}

/// One instant in both units the limiters keep time in: GCRA's nanoseconds and the windows'
/// milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instant {
    pub ns: i64,
    pub ms: i64,
}

impl Instant {
    /// A reading of the clock (`ns` ≥ 0).
    pub fn from_ns(ns: i64) -> Instant {
        Instant {
            ns,
            ms: ns.div_euclid(NANOS_PER_MILLI),
        }
    }

    /// The instant a replayed window command carries, at the start of its millisecond.
    pub fn from_ms(ms: i64) -> Instant {
        Instant {
            ns: ms.saturating_mul(NANOS_PER_MILLI),
            ms,
        }
    }
}

/// The first whole millisecond at or after `ns`.
pub fn ceil_ms(ns: i64) -> i64 {
    ns.div_euclid(NANOS_PER_MILLI) + i64::from(ns.rem_euclid(NANOS_PER_MILLI) > 0)
}

/// Whole milliseconds in `ns` (≥ 0), rounded up.
pub fn ms_rounded_up(ns: i64) -> i64 {
    ns / NANOS_PER_MILLI + i64::from(ns % NANOS_PER_MILLI > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_rounds_up_to_the_next_whole_millisecond() {
        assert_eq!(ceil_ms(5_000_000), 5);
        assert_eq!(ceil_ms(5_000_001), 6);
        assert_eq!(ceil_ms(5_999_999), 6);
    }

    #[test]
    fn an_instant_is_the_same_moment_in_both_units() {
        assert_eq!(
            Instant::from_ns(1_999_999),
            Instant {
                ns: 1_999_999,
                ms: 1
            }
        );
        assert_eq!(Instant::from_ms(7).ns, 7_000_000);
    }
}

//! What a limiter decided, as the five integers every command answers with, and the rounding
//! of waits to the client's unit. A value: sending it is reply.rs's.

use crate::time::TimeUnit;

/// What a limiter decided, with waits still in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    pub limited: bool,
    pub limit: i64,
    /// How many more units would be admitted right now.
    pub remaining: i64,
    /// How long until this request would be admitted; `None` when it was admitted or can
    /// never be (its quantity exceeds the limit).
    pub retry_after_ns: Option<i64>,
    /// How long until the limiter is back to its full limit.
    pub reset_after_ns: i64,
}

impl Outcome {
    /// An admitted request (or a peek).
    pub fn allowed(limit: i64, remaining: i64, reset_after_ns: i64) -> Outcome {
        Outcome {
            limited: false,
            limit,
            remaining,
            retry_after_ns: None,
            reset_after_ns,
        }
    }

    /// A denied request; `retry_after_ns` is `None` when it can never fit.
    pub fn denied(
        limit: i64,
        remaining: i64,
        retry_after_ns: Option<i64>,
        reset_after_ns: i64,
    ) -> Outcome {
        Outcome {
            limited: true,
            limit,
            remaining,
            retry_after_ns,
            reset_after_ns,
        }
    }

    /// The same state, answered as admitted: a refund asks for nothing it could be denied, so
    /// a key fuller than the call's own limit (lowered live, or left by the INCR recipe) is
    /// reported with none remaining, not as a denial.
    pub fn admitted(self) -> Outcome {
        Outcome::allowed(self.limit, self.remaining, self.reset_after_ns)
    }

    /// `[limited, limit, remaining, retry_after, reset_after]`, waits rounded up to whole units:
    /// a client that waits the reported time is never early.
    pub fn to_reply(self, unit: TimeUnit) -> [i64; 5] {
        [
            i64::from(self.limited),
            self.limit,
            self.remaining.clamp(0, self.limit),
            self.retry_after_ns.map_or(-1, |wait| unit.rounded_up(wait)),
            unit.rounded_up(self.reset_after_ns),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(retry_after_ns: Option<i64>, reset_after_ns: i64) -> Outcome {
        Outcome {
            limited: retry_after_ns.is_some(),
            limit: 5,
            remaining: 2,
            retry_after_ns,
            reset_after_ns,
        }
    }

    #[test]
    fn any_fraction_of_a_unit_counts_as_a_whole_one() {
        let reply = outcome(Some(1), 1_000_000_001).to_reply(TimeUnit::Seconds);
        assert_eq!(reply, [1, 5, 2, 1, 2]);
        let reply = outcome(Some(1_000_000), 1_000_001).to_reply(TimeUnit::Milliseconds);
        assert_eq!(reply, [1, 5, 2, 1, 2]);
    }

    #[test]
    fn exact_units_are_not_rounded() {
        let reply = outcome(Some(2_000_000_000), 0).to_reply(TimeUnit::Seconds);
        assert_eq!(reply, [1, 5, 2, 2, 0]);
    }

    #[test]
    fn no_retry_is_minus_one_and_no_wait_is_ever_negative() {
        let reply = outcome(None, -5).to_reply(TimeUnit::Seconds);
        assert_eq!(reply, [0, 5, 2, -1, 0]);
    }

    #[test]
    fn remaining_stays_within_zero_and_the_limit() {
        let mut over = outcome(None, 0);
        over.remaining = 9;
        assert_eq!(over.to_reply(TimeUnit::Seconds)[2], 5);
        over.remaining = -3;
        assert_eq!(over.to_reply(TimeUnit::Seconds)[2], 0);
    }
}

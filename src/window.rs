//! CL.WINDOW's pure core: an exact sliding window over a compact log of admitted units.
//!
//! A unit admitted at `t` counts against the limit while `now - t < period`. The log keeps one
//! entry per millisecond in which units were admitted, oldest first; calls in the same
//! millisecond merge into one entry. Time is in integer milliseconds since the Unix epoch.
//! The log's bytes, and how a call finds its way in them at a cost of O(log n) for n entries,
//! are in `window/log.rs`; how a refund shortens it, in `window/trim.rs`.

mod log;
mod trim;

use crate::args::WindowParams;
use crate::bytes::ByteBuffer;
use crate::error::Error;
use crate::outcome::Outcome;
pub use log::{reseal, HEADER_LEN};
use log::{AppendPlan, Log};
pub use trim::TrimPlan;

use crate::time::NANOS_PER_MILLI;

/// Whether `value` is an exact window's log, with a sound header: for the error that names
/// the form a key holds.
pub fn holds_log(value: &[u8]) -> bool {
    Log::decode(value).is_ok()
}

/// One request against a sliding window limiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlidingWindow {
    limit: i64,
    period_ms: i64,
    quantity: i64,
}

/// The reply, and the change to make to the log if the request was admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub outcome: Outcome,
    pub append: Option<Append>,
}

/// Log `units` at `at_ms`, dropping the entries that had expired when it was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Append {
    pub at_ms: i64,
    pub units: i64,
    /// The change to the bytes, checked against the log decided on.
    plan: AppendPlan,
    /// When the key should expire: the instant the newest unit leaves the window.
    pub expire_at_ms: i64,
}

impl SlidingWindow {
    /// From validated arguments (`limit ≥ 1`, `period_ms` within the span limit,
    /// `quantity ≥ 0`).
    pub fn new(params: &WindowParams, quantity: i64) -> SlidingWindow {
        SlidingWindow {
            limit: params.limit,
            period_ms: params.period_ms,
            quantity,
        }
    }

    /// The same limiter asked for nothing: a peek.
    pub fn peek(&self) -> SlidingWindow {
        SlidingWindow {
            quantity: 0,
            ..*self
        }
    }

    /// The same limiter asked for `quantity` units (ATMOST's grant, at most what it was asked).
    pub fn taking(&self, quantity: i64) -> SlidingWindow {
        SlidingWindow { quantity, ..*self }
    }

    /// Decides a request at `now_ms` against the stored log, if any, without changing it. An
    /// admitted request's change is planned in full: a log its append would damage or
    /// overgrow is refused here, not halfway through the write.
    pub fn decide(&self, stored: Option<&[u8]>, now_ms: i64) -> Result<Decision, Error> {
        let log = stored.map(Log::decode).transpose()?;
        // Stored instants are trusted only as far as the checksum goes: saturate, never wrap.
        let expired = |at_ms: i64| now_ms.saturating_sub(at_ms) >= self.period_ms;
        let (log, live) = match log {
            Some(log) => match log.live(expired)? {
                Some(live) => (Some(log), Some(live)),
                None => (None, None),
            },
            None => (None, None),
        };
        let live_total = live.map_or(0, |live| live.total);
        let newest_ms = log.as_ref().map(Log::newest_ms);
        let wait_until_gone = |at_ms: i64| {
            at_ms
                .saturating_add(self.period_ms)
                .saturating_sub(now_ms)
                .saturating_mul(NANOS_PER_MILLI)
        };
        let fits = live_total
            .checked_add(self.quantity)
            .filter(|&wanted| wanted <= self.limit);

        let decision = match fits {
            Some(wanted) => {
                // A clock that stepped back must not put units before those already logged.
                let at_ms = newest_ms.map_or(now_ms, |newest| newest.max(now_ms));
                let kept = log.as_ref().zip(live).map(|(log, live)| log.kept(&live));
                let append = if self.quantity > 0 {
                    let bytes = stored.unwrap_or_default();
                    Some(Append {
                        at_ms,
                        units: self.quantity,
                        plan: log::plan_append(bytes, kept.as_ref(), at_ms, self.quantity)?,
                        expire_at_ms: at_ms.saturating_add(self.period_ms),
                    })
                } else {
                    None
                };
                let newest_after = if append.is_some() {
                    Some(at_ms)
                } else {
                    newest_ms
                };
                Decision {
                    outcome: Outcome::allowed(
                        self.limit,
                        self.limit - wanted,
                        newest_after.map_or(0, wait_until_gone),
                    ),
                    append,
                }
            }
            None => {
                let retry_after_ns = match (&log, live) {
                    (Some(log), Some(live)) if self.quantity <= self.limit => {
                        // live_total + quantity > limit ≥ quantity: this is ≥ 1 and cannot
                        // overflow, unlike the sum.
                        let must_leave = live_total - (self.limit - self.quantity);
                        let leaves_at = log.when_units_left(live.oldest, must_leave)?;
                        Some(wait_until_gone(leaves_at))
                    }
                    _ => None,
                };
                Decision {
                    outcome: Outcome::denied(
                        self.limit,
                        self.limit.saturating_sub(live_total),
                        retry_after_ns,
                        newest_ms.map_or(0, wait_until_gone),
                    ),
                    append: None,
                }
            }
        };
        Ok(decision)
    }

    /// Gives the request's units back at `now_ms` (REFUND): up to `quantity` of the newest
    /// units still in the window leave the log, as if the newest admissions had taken fewer.
    /// The newest, because they are the ones the refunded request took when it refunds right
    /// after its admission, and because taking them back leaves every older unit to leave
    /// when it would have: capacity comes back now, and no later than it would have. Answers
    /// the state it leaves (admitted), and names a change only when units left.
    pub fn refund(&self, stored: Option<&[u8]>, now_ms: i64) -> Result<Refund, Error> {
        let log = stored.map(Log::decode).transpose()?;
        let expired = |at_ms: i64| now_ms.saturating_sub(at_ms) >= self.period_ms;
        let live = match &log {
            Some(log) => log.live(expired)?,
            None => None,
        };
        let gone_at = |at_ms: i64| {
            at_ms
                .saturating_add(self.period_ms)
                .saturating_sub(now_ms)
                .saturating_mul(NANOS_PER_MILLI)
        };
        let (Some(log), Some(live)) = (log, live) else {
            return Ok(Refund {
                outcome: Outcome::allowed(self.limit, self.limit, 0),
                change: None,
            });
        };
        if self.quantity == 0 {
            return Ok(Refund {
                outcome: Outcome::allowed(
                    self.limit,
                    self.limit.saturating_sub(live.total),
                    gone_at(log.newest_ms()),
                ),
                change: None,
            });
        }
        if self.quantity >= live.total {
            // Every unit in the window goes: the key holds nothing worth keeping.
            return Ok(Refund {
                outcome: Outcome::allowed(self.limit, self.limit, 0),
                change: Some(Trim::Clear),
            });
        }
        let plan = trim::plan_trim(&log, &live, self.quantity)?;
        Ok(Refund {
            outcome: Outcome::allowed(
                self.limit,
                self.limit.saturating_sub(live.total - self.quantity),
                gone_at(plan.tail_ms),
            ),
            change: Some(Trim::Keep {
                expire_at_ms: plan.tail_ms.saturating_add(self.period_ms),
                plan,
            }),
        })
    }
}

/// A refund's answer, and its change when units left the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refund {
    pub outcome: Outcome,
    pub change: Option<Trim>,
}

/// How a refund changes the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trim {
    /// The newest units leave; the key expires when the newest left leaves the window.
    Keep {
        plan: trim::TrimPlan,
        expire_at_ms: i64,
    },
    /// Every unit in the window leaves: the key is deleted.
    Clear,
}

impl Append {
    /// Writes the change into `buffer`, which holds the log the decision was made on (empty
    /// when there was none). Only a defect can make it fail.
    pub fn apply(&self, buffer: &mut impl ByteBuffer) -> Result<(), Error> {
        self.plan.write(buffer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::TimeUnit;
    use proptest::prelude::*;

    pub(super) const NOW: i64 = 1_795_910_400_000;

    pub(super) fn window(limit: i64, period_ms: i64, quantity: i64) -> SlidingWindow {
        SlidingWindow::new(&WindowParams { limit, period_ms }, quantity)
    }

    /// A limiter key: the log and the replies, as the command layer runs them.
    #[derive(Default)]
    pub(super) struct Key {
        pub(super) log: Option<Vec<u8>>,
        pub(super) expire_at_ms: Option<i64>,
    }

    impl Key {
        pub(super) fn call(&mut self, w: SlidingWindow, now_ms: i64) -> [i64; 5] {
            let decision = w.decide(self.log.as_deref(), now_ms).unwrap();
            if let Some(append) = decision.append {
                let mut buffer = self.log.take().unwrap_or_default();
                append.apply(&mut buffer).unwrap();
                self.log = Some(buffer);
                self.expire_at_ms = Some(append.expire_at_ms);
            }
            decision.outcome.to_reply(TimeUnit::Milliseconds)
        }
    }

    #[test]
    fn units_leave_exactly_one_period_after_their_admission() {
        let mut key = Key::default();
        let w = window(2, 1_000, 1);
        assert_eq!(key.call(w, NOW), [0, 2, 1, -1, 1000]);
        assert_eq!(key.call(w, NOW + 300), [0, 2, 0, -1, 1000]);
        assert_eq!(key.call(w, NOW + 999), [1, 2, 0, 1, 301]);
        // At NOW + 1000 the first unit has left: one fits again.
        assert_eq!(key.call(w, NOW + 1_000), [0, 2, 0, -1, 1000]);
        assert_eq!(key.expire_at_ms, Some(NOW + 2_000));
    }

    #[test]
    fn retry_waits_for_enough_of_the_oldest_units() {
        let mut key = Key::default();
        key.call(window(5, 1_000, 2), NOW);
        key.call(window(5, 1_000, 2), NOW + 100);
        key.call(window(5, 1_000, 1), NOW + 200);
        // Full (5). Three more need the first two entries (4 units) gone: at NOW + 1100.
        assert_eq!(
            key.call(window(5, 1_000, 3), NOW + 500),
            [1, 5, 0, 600, 700]
        );
        assert_eq!(key.call(window(5, 1_000, 6), NOW + 500), [1, 5, 0, -1, 700]);
    }

    #[test]
    fn a_stepped_back_clock_logs_at_the_newest_entry() {
        let mut key = Key::default();
        let w = window(10, 1_000, 1);
        key.call(w, NOW + 500);
        assert_eq!(key.call(w, NOW), [0, 10, 8, -1, 1500]);
        assert_eq!(key.expire_at_ms, Some(NOW + 1_500));
    }

    /// A peek and a denial find the oldest live unit and the retry time by searching, not by
    /// walking from the oldest entry logged: their answers must not change for it.
    #[test]
    fn a_long_log_with_many_expired_entries_answers_as_the_plain_event_list() {
        let mut key = Key::default();
        let mut events = Vec::new();
        // 100,000 entries a second apart, logged under a period that keeps them all.
        for i in 0..100_000 {
            let at = NOW + i * 1_000;
            assert_eq!(key.call(window(1 << 40, 1 << 40, 1), at)[0], 0);
            events.push((at, 1));
        }
        let now = NOW + 100_000 * 1_000;
        // Under a period of 50,000 s the older half has expired since the last write.
        for (limit, quantity) in [(1_000_000, 0), (1_000_000, 1_000_000), (60_000, 20_000)] {
            let expected = model_call(&mut events.clone(), limit, 50_000_000, quantity, now);
            let mut read_only = Key {
                log: key.log.clone(),
                expire_at_ms: None,
            };
            assert_eq!(
                read_only.call(window(limit, 50_000_000, quantity), now),
                expected,
                "limit {limit}, quantity {quantity}"
            );
            assert_eq!(read_only.log, key.log, "peeks and denials write nothing");
        }
        assert_eq!(
            key.call(window(1_000_000, 50_000_000, 1), now),
            model_call(&mut events, 1_000_000, 50_000_000, 1, now)
        );
    }

    /// The plain model: every admitted call as (time, units).
    pub(super) fn model_call(
        events: &mut Vec<(i64, i64)>,
        limit: i64,
        period: i64,
        quantity: i64,
        now: i64,
    ) -> [i64; 5] {
        let live: Vec<(i64, i64)> = events
            .iter()
            .copied()
            .filter(|&(t, _)| now - t < period)
            .collect();
        let used: i64 = live.iter().map(|&(_, q)| q).sum();
        let newest = events.last().map(|&(t, _)| t);
        if used + quantity <= limit {
            let at = newest.map_or(now, |n| n.max(now));
            if quantity > 0 {
                events.push((at, quantity));
            }
            let newest_live = if quantity > 0 {
                Some(at)
            } else {
                live.last().map(|&(t, _)| t)
            };
            let reset = newest_live.map_or(0, |t| t + period - now);
            [0, limit, limit - used - quantity, -1, reset]
        } else {
            let retry = if quantity > limit {
                -1
            } else {
                let mut gone = 0;
                let mut at = 0;
                for &(t, q) in &live {
                    gone += q;
                    at = t;
                    if used - gone + quantity <= limit {
                        break;
                    }
                }
                at + period - now
            };
            let reset = live.last().map_or(0, |&(t, _)| t + period - now);
            [1, limit, (limit - used).max(0), retry, reset]
        }
    }

    fn calls() -> impl Strategy<Value = Vec<(i64, i64)>> {
        // (ms since the previous call, quantity); many calls share a millisecond.
        prop::collection::vec((prop_oneof![Just(0i64), 0i64..300], 0i64..5), 1..150)
    }

    /// Calls that fill many blocks: small and huge gaps (1- to 6-byte varints), quantities
    /// whose merges lengthen the newest entry past its block's end.
    fn long_calls() -> impl Strategy<Value = Vec<(i64, i64)>> {
        let gap = prop_oneof![
            30 => Just(0i64),
            60 => 1i64..130,
            8 => 130i64..1 << 21,
            1 => 1i64 << 35..1 << 40,
        ];
        let quantity = prop_oneof![
            60 => 0i64..4,
            30 => 100i64..1 << 15,
            10 => 1i64 << 20..1 << 34,
        ];
        prop::collection::vec((gap, quantity), 1_000..3_000)
    }

    /// Runs `calls` (gap since the previous call, quantity) on a key and on the plain model,
    /// which must answer alike.
    fn answers_as_the_model(
        limit: i64,
        period: i64,
        calls: Vec<(i64, i64)>,
    ) -> Result<(), TestCaseError> {
        let mut key = Key::default();
        let mut events = Vec::new();
        let mut now = NOW;
        for (gap, quantity) in calls {
            now += gap;
            let expected = model_call(&mut events, limit, period, quantity, now);
            prop_assert_eq!(key.call(window(limit, period, quantity), now), expected);
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn the_log_answers_exactly_as_a_plain_event_list(
            limit in 1i64..20,
            period in 1i64..2_000,
            calls in calls(),
        ) {
            answers_as_the_model(limit, period, calls)?;
        }

        #[test]
        fn no_period_long_interval_admits_more_than_the_limit(
            limit in 1i64..20,
            period in 1i64..2_000,
            calls in calls(),
        ) {
            let mut key = Key::default();
            let mut admitted: Vec<(i64, i64)> = Vec::new();
            let mut now = NOW;
            for (gap, quantity) in calls {
                now += gap;
                if key.call(window(limit, period, quantity), now)[0] == 0 && quantity > 0 {
                    admitted.push((now, quantity));
                }
            }
            for &(start, _) in &admitted {
                let in_interval: i64 = admitted
                    .iter()
                    .filter(|&&(t, _)| t >= start && t - start < period)
                    .map(|&(_, q)| q)
                    .sum();
                prop_assert!(in_interval <= limit);
            }
        }
    }

    impl Key {
        /// A refund, as the command layer would make it: the log trimmed, or the key gone.
        fn refund(&mut self, w: SlidingWindow, now_ms: i64) -> [i64; 5] {
            let refund = w.refund(self.log.as_deref(), now_ms).unwrap();
            match refund.change {
                Some(Trim::Clear) => {
                    self.log = None;
                    self.expire_at_ms = None;
                }
                Some(Trim::Keep { plan, expire_at_ms }) => {
                    let buffer = self.log.as_mut().expect("a log to trim");
                    plan.write(buffer).unwrap();
                    self.expire_at_ms = Some(expire_at_ms);
                }
                None => {}
            }
            refund.outcome.to_reply(TimeUnit::Milliseconds)
        }
    }

    /// The model's refund: the newest live units leave, newest first.
    fn model_refund(
        events: &mut Vec<(i64, i64)>,
        limit: i64,
        period: i64,
        mut quantity: i64,
        now: i64,
    ) -> [i64; 5] {
        events.retain(|&(t, _)| now - t < period);
        while quantity > 0 {
            let Some(last) = events.last_mut() else { break };
            let taken = last.1.min(quantity);
            last.1 -= taken;
            quantity -= taken;
            if last.1 == 0 {
                events.pop();
            }
        }
        let used: i64 = events.iter().map(|&(_, q)| q).sum();
        let reset = events.last().map_or(0, |&(t, _)| t + period - now);
        [0, limit, (limit - used).max(0), -1, reset]
    }

    #[test]
    fn a_refund_takes_back_the_newest_units_first() {
        let mut key = Key::default();
        let w = |q| window(5, 1_000, q);
        key.call(w(2), NOW);
        key.call(w(2), NOW + 100);
        // Three back: the newest two, and one of the first call's.
        assert_eq!(key.refund(w(3), NOW + 200), [0, 5, 4, -1, 800]);
        assert_eq!(key.expire_at_ms, Some(NOW + 1_000));
        // The one left leaves when it would have: at NOW + 1,000.
        assert_eq!(key.call(w(4), NOW + 999), [0, 5, 0, -1, 1_000]);
        assert_eq!(key.call(w(1), NOW + 999), [1, 5, 0, 1, 1_000]);
        // Everything back: the key goes.
        assert_eq!(key.refund(w(9), NOW + 999), [0, 5, 5, -1, 0]);
        assert_eq!(key.log, None);
        // Nothing to give back: no key, a quantity of 0.
        assert_eq!(key.refund(w(2), NOW + 999), [0, 5, 5, -1, 0]);
        key.call(w(1), NOW + 2_000);
        let before = key.log.clone();
        assert_eq!(key.refund(w(0), NOW + 2_000), [0, 5, 4, -1, 1_000]);
        assert_eq!(key.log, before);
    }

    /// Calls and refunds on a key and on the plain model, which must answer alike; after
    /// each refund a peek checks the log it left.
    fn refunds_answer_as_the_model(
        limit: i64,
        period: i64,
        calls: Vec<(i64, i64, bool)>,
    ) -> Result<(), TestCaseError> {
        let mut key = Key::default();
        let mut events = Vec::new();
        let mut now = NOW;
        for (gap, quantity, refund) in calls {
            now += gap;
            let w = window(limit, period, quantity);
            if refund {
                let expected = model_refund(&mut events, limit, period, quantity, now);
                prop_assert_eq!(key.refund(w, now), expected);
                let peek = model_call(&mut events.clone(), limit, period, 0, now);
                prop_assert_eq!(key.call(window(limit, period, 0), now), peek);
            } else {
                let before = key.call(window(limit, period, 0), now);
                let logged = key.log.clone();
                let expected = model_call(&mut events, limit, period, quantity, now);
                prop_assert_eq!(key.call(w, now), expected);
                if expected[0] == 0 && quantity > 0 {
                    // Given back at once, the units leave as if never taken.
                    let mut undone = Key {
                        log: key.log.clone(),
                        expire_at_ms: key.expire_at_ms,
                    };
                    undone.refund(w, now);
                    prop_assert_eq!(undone.call(window(limit, period, 0), now), before);
                    if logged.is_none() {
                        prop_assert_eq!(undone.log, None);
                    }
                }
            }
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn refunds_give_back_the_newest_units_as_the_model_does(
            limit in 1i64..40,
            period in 1i64..2_000,
            calls in prop::collection::vec(
                (prop_oneof![Just(0i64), 0i64..300], 0i64..8, prop::bool::weighted(0.3)),
                1..150,
            ),
        ) {
            refunds_answer_as_the_model(limit, period, calls)?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        #[test]
        fn refunds_across_many_blocks_answer_as_the_model(
            calls in prop::collection::vec(
                (
                    prop_oneof![30 => Just(0i64), 60 => 1i64..130, 10 => 130i64..1 << 21],
                    prop_oneof![70 => 0i64..4, 20 => 4i64..200, 10 => 100i64..1 << 15],
                    prop::bool::weighted(0.15),
                ),
                500..2_000,
            ),
        ) {
            refunds_answer_as_the_model(1 << 40, 1 << 40, calls)?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        #[test]
        fn logs_of_many_blocks_answer_exactly_as_a_plain_event_list(
            limit in prop_oneof![1 => 1i64..50, 1 => 1i64 << 30..1 << 40, 3 => 1i64 << 45..1 << 50],
            period in prop_oneof![1 => 1i64..3_000, 3 => 1i64 << 20..1 << 42],
            calls in long_calls(),
        ) {
            answers_as_the_model(limit, period, calls)?;
        }
    }
}

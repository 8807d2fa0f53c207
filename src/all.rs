//! CL.ALL's pure core: several limiters decide one request at one instant, all or nothing.
//!
//! Each limiter decides as its own command would. The request is admitted when every one
//! admits, and then every one takes its units; when any denies, none does. One limiter's
//! answer stands for all, the *binding* one: when denied, the denial that lasts longest
//! (one that can never be admitted, `retry_after` −1, longest of all), so that a client
//! waiting that long finds every limiter ready; when admitted, the one with the fewest units
//! left, the first to run out. Ties go to the first in key order. Answers are compared as the
//! client sees them, rounded to its unit, so that the choice can be checked from the DETAIL
//! form.

use crate::error::Error;
use crate::limiter::{Change, Verdict};
use crate::outcome::Outcome;
use crate::time::TimeUnit;

/// What the limiters' verdicts on one request add up to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Combined {
    pub admitted: bool,
    /// The index, in key order, of the limiter whose answer stands for all.
    pub binding: usize,
}

/// Adds up the verdicts of every limiter on one request, in key order, comparing answers in
/// `unit`.
pub fn combine<'a>(verdicts: impl Iterator<Item = &'a Verdict<'a>>, unit: TimeUnit) -> Combined {
    // The first of the fewest remaining, and the first of the longest denials.
    let mut fewest: Option<(usize, i64)> = None;
    let mut longest: Option<(usize, i64)> = None;
    for (index, verdict) in verdicts.enumerate() {
        let [limited, _, remaining, retry_after, _] = verdict.outcome.to_reply(unit);
        if limited == 0 {
            if fewest.is_none_or(|(_, best)| remaining < best) {
                fewest = Some((index, remaining));
            }
        } else {
            let wait = if retry_after == -1 {
                i64::MAX
            } else {
                retry_after
            };
            if longest.is_none_or(|(_, best)| wait > best) {
                longest = Some((index, wait));
            }
        }
    }
    match longest {
        Some((binding, _)) => Combined {
            admitted: false,
            binding,
        },
        None => Combined {
            admitted: true,
            binding: fewest.map_or(0, |(index, _)| index),
        },
    }
}

/// How long until every limiter that denied a request would admit it: the longest of their
/// waits, `None` when one never will, 0 when none denied.
pub fn fits_in_ns<'a>(verdicts: impl Iterator<Item = &'a Verdict<'a>>) -> Option<i64> {
    verdicts
        .filter(|verdict| !verdict.admitted())
        .try_fold(0, |longest: i64, verdict| {
            verdict.outcome.retry_after_ns.map(|wait| longest.max(wait))
        })
}

impl Combined {
    /// One limiter's answer in the detailed reply, with its state as the key stands after
    /// the call: its verdict when the request was admitted or when it denied; when another
    /// denied, it took nothing, and answers as a peek at its key would.
    pub fn detail(
        &self,
        verdict: &Verdict,
        peek: impl FnOnce() -> Result<Outcome, Error>,
    ) -> Result<Outcome, Error> {
        if self.admitted || !verdict.admitted() {
            Ok(verdict.outcome)
        } else {
            peek()
        }
    }

    /// What to write for one limiter: its change when every limiter admitted, nothing when
    /// any denied.
    pub fn change<'a>(&self, verdict: &Verdict<'a>) -> Option<Change<'a>> {
        verdict.change.filter(|_| self.admitted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{ThrottleParams, WindowParams};
    use crate::fixed::{FixedWindow, OpenWindow};
    use crate::gcra::Gcra;
    use crate::limiter::{Limiter, Source};
    use crate::time::Instant;
    use crate::window::SlidingWindow;
    use proptest::prelude::*;

    /// One request over several keys, as the command layer makes it: every limiter decides,
    /// the verdicts are combined, and the detail is filled in with peeks.
    struct Call {
        verdicts: Vec<Verdict<'static>>,
        combined: Combined,
        detail: Vec<Outcome>,
    }

    impl Call {
        fn new(limiters: &[Limiter<'static>], keys: &[Key], now: Instant, unit: TimeUnit) -> Call {
            let verdicts: Vec<Verdict> = limiters
                .iter()
                .zip(keys)
                .map(|(limiter, key)| limiter.read(key).unwrap().decide(now).unwrap())
                .collect();
            let combined = combine(verdicts.iter(), unit);
            let detail = verdicts
                .iter()
                .zip(limiters.iter().zip(keys))
                .map(|(verdict, (limiter, key))| {
                    combined
                        .detail(verdict, || {
                            limiter
                                .read(key)?
                                .peek()
                                .decide(now)
                                .map(|peek| peek.outcome)
                        })
                        .unwrap()
                })
                .collect();
            Call {
                verdicts,
                combined,
                detail,
            }
        }

        fn binding_reply(&self, unit: TimeUnit) -> [i64; 5] {
            self.verdicts[self.combined.binding].outcome.to_reply(unit)
        }

        fn changes(&self) -> Vec<(usize, Change<'static>)> {
            self.verdicts
                .iter()
                .enumerate()
                .filter_map(|(i, verdict)| self.combined.change(verdict).map(|change| (i, change)))
                .collect()
        }
    }

    const MILLI: i64 = crate::time::NANOS_PER_MILLI;
    /// 2026-11-29T00:00:00Z.
    const START_MS: i64 = 1_795_910_400_000;

    /// A limiter's key as the command layer keeps it, in memory.
    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Key {
        Tat(Option<i64>),
        Window(Option<OpenWindow>),
        Log(Option<Vec<u8>>),
        Leases(Option<Vec<u8>>),
    }

    impl Key {
        fn empty(limiter: &Limiter) -> Key {
            match limiter {
                Limiter::Throttle(_) => Key::Tat(None),
                Limiter::Fixed(_) => Key::Window(None),
                Limiter::Sliding(_) | Limiter::Bucketed(_) => Key::Log(None),
                Limiter::Lease(..) => Key::Leases(None),
                Limiter::Smooth(_) => unreachable!("CL.ALL takes no SMOOTH limiter"),
            }
        }

        fn write(&mut self, change: Change, now: Instant) {
            match (self, change) {
                (Key::Tat(tat), Change::Tat { tat: new, .. }) => *tat = Some(new),
                (Key::Window(window), Change::Count { count, end_ms, .. }) => {
                    *window = Some(OpenWindow { count, end_ms })
                }
                (Key::Log(log), Change::Log(append)) => {
                    let mut buffer = log.take().unwrap_or_default();
                    append.apply(&mut buffer).unwrap();
                    *log = Some(buffer);
                }
                (Key::Log(cells), Change::Cells(plan)) => {
                    let mut buffer = cells.take().unwrap_or_default();
                    plan.apply(&mut buffer).unwrap();
                    *cells = Some(buffer);
                }
                (Key::Leases(set), Change::Lease { holder, change, .. }) => {
                    let mut buffer = set.take().unwrap_or_default();
                    crate::lease::apply(&mut buffer, holder, change, now.ms).unwrap();
                    *set = Some(buffer);
                }
                (key, change) => panic!("{change:?} written to {key:?}"),
            }
        }

        /// The limiter's own command: decide, and write what an admission changes.
        fn single(&mut self, limiter: &Limiter<'static>, now: Instant) -> Verdict<'static> {
            let verdict = limiter.read(self).unwrap().decide(now).unwrap();
            if let Some(change) = verdict.change {
                self.write(change, now);
            }
            verdict
        }
    }

    /// The model key holds what each limiter reads.
    impl Source for Key {
        fn integer(&self) -> Result<Option<i64>, Error> {
            match self {
                Key::Tat(tat) => Ok(*tat),
                Key::Window(window) => Ok(window.map(|window| window.count)),
                _ => Err(Error::CorruptState),
            }
        }

        fn bytes(&self) -> Result<Option<&[u8]>, Error> {
            match self {
                Key::Log(bytes) | Key::Leases(bytes) => Ok(bytes.as_deref()),
                _ => Err(Error::CorruptState),
            }
        }

        fn expire_at_ms(&self) -> Result<Option<i64>, Error> {
            match self {
                Key::Window(window) => Ok(window.map(|window| window.end_ms)),
                _ => Ok(None),
            }
        }
    }

    /// Small limits, so that a few calls fill them, with periods of up to a few seconds.
    /// Kind 3 is a lease, held by one holder (its renewals always admitted), lasting the
    /// period; kind 4 a bucketed window.
    fn limiter(kind: u8, limit: i64, period_ms: i64, quantity: i64) -> Limiter<'static> {
        let window = WindowParams { limit, period_ms };
        match kind {
            0 => Limiter::Throttle(
                Gcra::new(
                    &ThrottleParams {
                        max_burst: limit - 1,
                        count: limit,
                        period_ns: period_ms * MILLI,
                    },
                    quantity,
                )
                .unwrap(),
            ),
            1 => Limiter::Fixed(FixedWindow::new(&window, quantity, false)),
            2 => Limiter::Sliding(SlidingWindow::new(&window, quantity)),
            // Four cells of the period, made a multiple of four.
            4 => Limiter::Bucketed(crate::buckets::BucketedWindow::new(
                &WindowParams {
                    limit,
                    period_ms: period_ms * 4,
                },
                4,
                quantity,
            )),
            _ => Limiter::Lease(
                crate::lease::Lease {
                    limit,
                    lease_ms: period_ms,
                },
                (quantity != 0).then_some(b"job".as_slice()),
            ),
        }
    }

    fn limiters(shape: &[(u8, i64, i64)], quantity: i64) -> Vec<Limiter<'static>> {
        shape
            .iter()
            .map(|&(kind, limit, period_ms)| limiter(kind, limit, period_ms, quantity))
            .collect()
    }

    fn shape() -> impl Strategy<Value = Vec<(u8, i64, i64)>> {
        prop::collection::vec((0u8..5, 1i64..5, 1i64..4_000), 1..5)
    }

    /// Calls as (milliseconds since the previous one, quantity, which limiters it goes to).
    fn calls() -> impl Strategy<Value = Vec<(i64, i64, u8)>> {
        prop::collection::vec((0i64..1_500, 0i64..6, any::<u8>()), 1..60)
    }

    /// What a client sees of the binding rule: the first denial with the longest wait (−1
    /// longest), or the first of the fewest remaining.
    fn expected_binding(replies: &[[i64; 5]]) -> usize {
        let denials: Vec<usize> = (0..replies.len()).filter(|&i| replies[i][0] == 1).collect();
        if denials.is_empty() {
            let fewest = replies.iter().map(|r| r[2]).min().unwrap();
            return replies.iter().position(|r| r[2] == fewest).unwrap();
        }
        let wait = |i: usize| match replies[i][3] {
            -1 => i64::MAX,
            wait => wait,
        };
        let longest = denials.iter().map(|&i| wait(i)).max().unwrap();
        denials.into_iter().find(|&i| wait(i) == longest).unwrap()
    }

    /// Keys shaped by a history of single calls, each going to the limiters its mask picks;
    /// and the instant of the last.
    fn shaped_by(shape: &[(u8, i64, i64)], history: Vec<(i64, i64, u8)>) -> (Vec<Key>, i64) {
        let mut keys: Vec<Key> = limiters(shape, 1).iter().map(Key::empty).collect();
        let mut now_ms = START_MS;
        for (gap, quantity, mask) in history {
            now_ms += gap;
            let now = Instant::from_ms(now_ms);
            for (i, key) in keys.iter_mut().enumerate() {
                if mask & (1 << i) != 0 {
                    key.single(&limiters(shape, quantity)[i], now);
                }
            }
        }
        (keys, now_ms)
    }

    proptest! {
        /// Keys shaped by a history of single calls, then one combined call: admitted exactly
        /// when every limiter alone would admit, each answer the limiter's own, changes only
        /// when all admit.
        #[test]
        fn admitted_iff_every_limiter_admits_and_each_answer_is_its_own(
            shape in shape(),
            history in calls(),
            quantity in 0i64..6,
            gap_ms in 0i64..2_000,
        ) {
            let (keys, now_ms) = shaped_by(&shape, history);
            let now = Instant::from_ns((now_ms + gap_ms) * MILLI + 123_456);
            let combined = limiters(&shape, quantity);
            let call = Call::new(&combined, &keys, now, TimeUnit::Milliseconds);
            let decision = call.combined;

            let alone: Vec<Verdict> = combined
                .iter()
                .zip(&keys)
                .map(|(limiter, key)| limiter.read(key).unwrap().decide(now).unwrap())
                .collect();
            prop_assert_eq!(decision.admitted, alone.iter().all(Verdict::admitted));

            for ((verdict, shown), (limiter, key)) in
                alone.iter().zip(&call.detail).zip(combined.iter().zip(&keys))
            {
                let expected = if decision.admitted || !verdict.admitted() {
                    verdict.outcome
                } else {
                    limiter.read(key).unwrap().peek().decide(now).unwrap().outcome
                };
                prop_assert_eq!(*shown, expected);
                prop_assert_eq!(shown.limited, !verdict.admitted());
            }

            let replies: Vec<[i64; 5]> = alone
                .iter()
                .map(|verdict| verdict.outcome.to_reply(TimeUnit::Milliseconds))
                .collect();
            prop_assert_eq!(decision.binding, expected_binding(&replies));
            prop_assert_eq!(
                call.binding_reply(TimeUnit::Milliseconds),
                replies[decision.binding]
            );

            let changes = call.changes();
            let expected: Vec<(usize, Change)> = if decision.admitted {
                alone
                    .iter()
                    .enumerate()
                    .filter_map(|(i, verdict)| verdict.change.map(|change| (i, change)))
                    .collect()
            } else {
                Vec::new()
            };
            prop_assert_eq!(changes, expected);
        }

        /// Twin keys: every combined call is mirrored by each limiter's own call on a twin
        /// when it was admitted, and by nothing when denied; the twins never drift apart.
        #[test]
        fn combined_calls_leave_keys_as_single_calls_on_admission_would(
            shape in shape(),
            calls in calls(),
        ) {
            let mut keys: Vec<Key> = limiters(&shape, 1).iter().map(Key::empty).collect();
            let mut twins = keys.clone();
            let mut now_ms = START_MS;
            for (gap, quantity, _) in calls {
                now_ms += gap;
                let now = Instant::from_ns(now_ms * MILLI + 1);
                let combined = limiters(&shape, quantity);
                let (admitted, changes) = {
                    let call = Call::new(&combined, &keys, now, TimeUnit::Milliseconds);
                    (call.combined.admitted, call.changes())
                };
                for (i, change) in changes {
                    keys[i].write(change, now);
                }
                if admitted {
                    for (twin, limiter) in twins.iter_mut().zip(&combined) {
                        prop_assert!(twin.single(limiter, now).admitted());
                    }
                }
                prop_assert_eq!(&keys, &twins);
            }
        }
    }

    proptest! {
        /// BLOCK's promise: a request denied by any limiters, asked again after `fits_in_ns`
        /// with nothing taken meanwhile, is admitted by all, and not sooner: GCRA to the
        /// nanosecond, the windows, which count whole milliseconds, to the millisecond (their
        /// wait runs from the start of the millisecond asked in). `None` only when one limiter
        /// can never admit it.
        #[test]
        fn a_denied_request_fits_exactly_after_its_wait(
            shape in shape(),
            history in calls(),
            quantity in 1i64..6,
            offset_ns in 0i64..2 * MILLI,
        ) {
            let (keys, now_ms) = shaped_by(&shape, history);
            let combined = limiters(&shape, quantity);
            let decide_at = |ns: i64| {
                let now = Instant::from_ns(ns);
                combined
                    .iter()
                    .zip(&keys)
                    .map(|(limiter, key)| limiter.read(key).unwrap().decide(now).unwrap())
                    .collect::<Vec<Verdict>>()
            };
            let asked_ns = now_ms * MILLI + offset_ns;
            let verdicts = decide_at(asked_ns);
            match fits_in_ns(verdicts.iter()) {
                Some(0) => prop_assert!(verdicts.iter().all(Verdict::admitted)),
                Some(wait) => {
                    prop_assert!(verdicts.iter().any(|v| !v.admitted()));
                    prop_assert!(decide_at(asked_ns + wait).iter().all(Verdict::admitted));
                    let sooner = (asked_ns + wait - MILLI).max(asked_ns);
                    prop_assert!(!decide_at(sooner).iter().all(Verdict::admitted));
                    if shape.iter().all(|&(kind, _, _)| kind == 0) {
                        prop_assert!(!decide_at(asked_ns + wait - 1).iter().all(Verdict::admitted));
                    }
                }
                None => prop_assert!(verdicts
                    .iter()
                    .any(|v| !v.admitted() && v.outcome.retry_after_ns.is_none())),
            }
        }
    }

    #[test]
    fn a_denial_answers_with_the_longest_wait_and_a_never_outlasts_every_wait() {
        let now = Instant::from_ms(START_MS);
        let full_until = |end_ms| {
            Key::Window(Some(OpenWindow {
                count: 4,
                end_ms: START_MS + end_ms,
            }))
        };
        // Two units: the fixed windows have 1 left until they end; 2 never fit a limit of 1.
        let fixed = limiter(1, 5, 10_000, 2);
        let stored = [full_until(300), full_until(700), full_until(700)];
        let call = Call::new(&[fixed; 3], &stored, now, TimeUnit::Milliseconds);
        assert_eq!(call.combined.binding, 1);
        let never = limiter(2, 1, 10_000, 2);
        let stored = [full_until(300), Key::Log(None)];
        let call = Call::new(&[fixed, never], &stored, now, TimeUnit::Milliseconds);
        assert_eq!(call.combined.binding, 1);
        assert_eq!(call.binding_reply(TimeUnit::Milliseconds)[3], -1);
    }

    #[test]
    fn the_binding_answer_of_an_admission_is_the_first_with_the_fewest_left() {
        let throttle = limiter(0, 3, 1_000, 1);
        let fixed = limiter(1, 2, 1_000, 1);
        let window = limiter(2, 2, 1_000, 1);
        let now = Instant::from_ms(START_MS);
        let empty = [Key::Tat(None), Key::Window(None), Key::Log(None)];
        let call = Call::new(&[throttle, fixed, window], &empty, now, TimeUnit::Seconds);
        assert!(call.combined.admitted);
        // Fixed and window both have 1 left; fixed comes first.
        assert_eq!(call.combined.binding, 1);
        assert_eq!(call.changes().len(), 3);
    }

    #[test]
    fn one_denial_changes_nothing_and_the_others_answer_as_peeks() {
        let fixed = limiter(1, 2, 1_000, 1);
        let throttle = limiter(0, 3, 1_000, 1);
        let now = Instant::from_ms(START_MS);
        let full = Key::Window(Some(OpenWindow {
            count: 2,
            end_ms: START_MS + 400,
        }));
        let stored = [Key::Tat(None), full];
        let call = Call::new(&[throttle, fixed], &stored, now, TimeUnit::Milliseconds);
        assert!(!call.combined.admitted);
        assert_eq!(call.combined.binding, 1);
        assert!(call.changes().is_empty());
        let detail = call.detail;
        assert_eq!(detail[0].to_reply(TimeUnit::Milliseconds), [0, 3, 3, -1, 0]);
        assert_eq!(
            detail[1].to_reply(TimeUnit::Milliseconds),
            [1, 2, 0, 400, 400]
        );
    }
}

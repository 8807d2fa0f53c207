//! CL.FIXED's pure core: a fixed window counter, the INCR + EXPIRE recipe decided atomically.
//!
//! A window opens at the first admitted call on an empty limiter and covers
//! `[start, start + period)`, or, laid on the clock (`Grid`: aligned, or a calendar's unit),
//! the grid's window that holds that call; it holds a count of admitted units. A window
//! stored already keeps its end whatever form the call has, so a key opened under another
//! period or grid counts on until that window ends. With `COUNTDENIED` a denied
//! call's units count too, and open the window, as INCR-then-compare counts them (the
//! fixed windows of `limits` and rate-limiter-flexible): the count may then pass the limit.
//! Time is in integer milliseconds since the Unix epoch.

use crate::args::{Laid, WindowParams};
use crate::calendar::Grid;
use crate::outcome::Outcome;

use crate::time::NANOS_PER_MILLI;

/// One request against a fixed window limiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedWindow {
    limit: i64,
    period_ms: i64,
    quantity: i64,
    count_denied: bool,
    /// Where windows lie on the clock, and in what local time (see calendar.rs): kept to a
    /// few bytes, as every call moves its limiter by value.
    laid: Laid,
    offset_minutes: i16,
}

/// The window open now: the units it admitted, and the instant it closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenWindow {
    pub count: i64,
    pub end_ms: i64,
}

/// The reply, and the window to store if it changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub outcome: Outcome,
    pub new_window: Option<OpenWindow>,
}

impl FixedWindow {
    /// From validated arguments (`limit ≥ 1`, `period_ms` within the span limit,
    /// `quantity ≥ 0`).
    pub fn new(params: &WindowParams, quantity: i64, count_denied: bool) -> FixedWindow {
        FixedWindow {
            limit: params.limit,
            period_ms: params.period_ms,
            quantity,
            count_denied,
            laid: Laid::FromFirstCall,
            offset_minutes: 0,
        }
    }

    /// The same limiter, its windows laid so on the clock (`Laid::Aligned`: the multiples of
    /// its period), in the local time `offset_minutes` ahead of UTC (held to
    /// `calendar::MAX_OFFSET_MINUTES` by its caller).
    #[inline(always)]
    pub fn laid(self, laid: Laid, offset_minutes: i16) -> FixedWindow {
        FixedWindow {
            laid,
            offset_minutes,
            ..self
        }
    }

    /// Where a window opened at `now_ms` ends. A grid has an end for every instant a call
    /// can come at; past that (an instant near the end of an `i64`), the period's.
    #[inline(always)]
    fn end_of_new(&self, now_ms: i64) -> i64 {
        let on_grid = match self.laid {
            Laid::FromFirstCall => None,
            // Out of line: most windows open at their first call.
            laid => self.end_on_grid(laid, now_ms),
        };
        on_grid.unwrap_or_else(|| now_ms.saturating_add(self.period_ms))
    }

    /// The end of the grid's window that holds `now_ms`, on ALIGN's grid or a calendar's.
    #[inline(never)]
    fn end_on_grid(&self, laid: Laid, now_ms: i64) -> Option<i64> {
        let offset = i64::from(self.offset_minutes);
        match laid {
            Laid::FromFirstCall => None,
            Laid::Aligned => Grid::aligned(self.period_ms, offset).end_after(now_ms),
            Laid::Calendar(unit) => Grid::calendar(unit, offset).end_after(now_ms),
        }
    }

    /// Whether a denied call's units count too.
    pub fn counts_denied(&self) -> bool {
        self.count_denied
    }

    /// The same limiter asked for nothing: a peek.
    pub fn peek(&self) -> FixedWindow {
        FixedWindow {
            quantity: 0,
            ..*self
        }
    }

    /// The same limiter asked for `quantity` units (ATMOST's grant, at most what it was asked).
    pub fn taking(&self, quantity: i64) -> FixedWindow {
        FixedWindow { quantity, ..*self }
    }

    /// Decides a request at `now_ms` against the stored window, if any. A stored window whose
    /// end has come is over, even though the server keeps its key through that millisecond.
    #[inline(always)]
    pub fn decide(&self, stored: Option<OpenWindow>, now_ms: i64) -> Decision {
        let open = stored.filter(|window| now_ms < window.end_ms);
        let count = open.map_or(0, |window| window.count);
        // The end comes from the key's expiry, which anyone may have set: saturate.
        let wait_for_end = |window: OpenWindow| {
            window
                .end_ms
                .saturating_sub(now_ms)
                .saturating_mul(NANOS_PER_MILLI)
        };
        let fits = count
            .checked_add(self.quantity)
            .filter(|&wanted| wanted <= self.limit);

        match fits {
            Some(wanted) => {
                let new_window = (self.quantity > 0).then(|| OpenWindow {
                    count: wanted,
                    end_ms: open.map_or_else(|| self.end_of_new(now_ms), |window| window.end_ms),
                });
                let after = new_window.or(open);
                Decision {
                    outcome: Outcome::allowed(
                        self.limit,
                        self.limit - wanted,
                        after.map_or(0, wait_for_end),
                    ),
                    new_window,
                }
            }
            None => {
                // Saturating: a count past 2^63 - 1 denies as surely as one at it.
                let new_window = (self.count_denied && self.quantity > 0).then(|| OpenWindow {
                    count: count.saturating_add(self.quantity),
                    end_ms: open.map_or_else(|| self.end_of_new(now_ms), |window| window.end_ms),
                });
                let after = new_window.or(open);
                Decision {
                    outcome: Outcome::denied(
                        self.limit,
                        self.limit
                            .saturating_sub(after.map_or(0, |window| window.count)),
                        // A quantity over the limit never fits; any other waits for the
                        // window to close (a denied request that fits the limit implies an
                        // open window).
                        open.filter(|_| self.quantity <= self.limit)
                            .map(wait_for_end),
                        after.map_or(0, wait_for_end),
                    ),
                    new_window: new_window.filter(|&window| Some(window) != open),
                }
            }
        }
    }

    /// Gives the request's units back at `now_ms` (REFUND): the open window's count drops by
    /// them, never below 0; a window that has ended has nothing to give back. Names a new
    /// window only when the count changed. A count of 0 is an untouched limiter's: the key
    /// goes, so that the next call opens a window of its own, as it would have had nothing
    /// been taken; the answer is a peek at what is left.
    pub fn refund(&self, stored: Option<OpenWindow>, now_ms: i64) -> Decision {
        let new_window = stored
            .filter(|window| now_ms < window.end_ms && window.count > 0 && self.quantity > 0)
            .map(|window| OpenWindow {
                count: window.count.saturating_sub(self.quantity).max(0),
                ..window
            });
        let left = match new_window {
            Some(window) if window.count == 0 => None,
            Some(window) => Some(window),
            None => stored,
        };
        Decision {
            outcome: self.peek().decide(left, now_ms).outcome.admitted(),
            new_window,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::TimeUnit;
    use proptest::prelude::*;

    const NOW: i64 = 1_795_910_400_000;
    const MILLI: i64 = NANOS_PER_MILLI;

    fn fixed(limit: i64, period_ms: i64, quantity: i64) -> FixedWindow {
        FixedWindow::new(&WindowParams { limit, period_ms }, quantity, false)
    }

    #[test]
    fn a_window_opens_at_the_first_admitted_call_and_counts_up() {
        let f = fixed(3, 1_000, 1);
        let first = f.decide(None, NOW);
        assert_eq!(
            first.new_window,
            Some(OpenWindow {
                count: 1,
                end_ms: NOW + 1_000
            })
        );
        assert_eq!(
            first.outcome.to_reply(TimeUnit::Milliseconds),
            [0, 3, 2, -1, 1000]
        );
        let second = f.decide(first.new_window, NOW + 400);
        assert_eq!(
            second.new_window,
            Some(OpenWindow {
                count: 2,
                end_ms: NOW + 1_000
            })
        );
        assert_eq!(
            second.outcome.to_reply(TimeUnit::Milliseconds),
            [0, 3, 1, -1, 600]
        );
    }

    #[test]
    fn a_full_window_denies_until_it_ends() {
        let f = fixed(2, 1_000, 1);
        let full = Some(OpenWindow {
            count: 2,
            end_ms: NOW + 1_000,
        });
        let denied = f.decide(full, NOW + 999);
        assert_eq!(denied.new_window, None);
        assert_eq!(
            denied.outcome.to_reply(TimeUnit::Milliseconds),
            [1, 2, 0, 1, 1]
        );
        // Exactly at the end the window is over, though the key still exists.
        let next = f.decide(full, NOW + 1_000);
        assert_eq!(
            next.new_window,
            Some(OpenWindow {
                count: 1,
                end_ms: NOW + 2_000
            })
        );
    }

    #[test]
    fn a_quantity_over_the_limit_never_fits_and_opens_nothing() {
        let decision = fixed(2, 1_000, 3).decide(None, NOW);
        assert_eq!(decision.new_window, None);
        assert_eq!(
            decision.outcome.to_reply(TimeUnit::Seconds),
            [1, 2, 2, -1, 0]
        );
    }

    #[test]
    fn a_peek_never_opens_or_changes_a_window() {
        let peek = fixed(5, 1_000, 0);
        assert_eq!(peek.decide(None, NOW).new_window, None);
        assert_eq!(
            peek.decide(None, NOW).outcome.to_reply(TimeUnit::Seconds),
            [0, 5, 5, -1, 0]
        );
        let open = Some(OpenWindow {
            count: 5,
            end_ms: NOW + 10,
        });
        let decision = peek.decide(open, NOW);
        assert_eq!(decision.new_window, None);
        assert_eq!(
            decision.outcome.to_reply(TimeUnit::Milliseconds),
            [0, 5, 0, -1, 10]
        );
    }

    #[test]
    fn an_overflowing_count_is_denied_not_wrapped() {
        let f = fixed(i64::MAX, 1_000, 2);
        let full = Some(OpenWindow {
            count: i64::MAX - 1,
            end_ms: NOW + 1,
        });
        let decision = f.decide(full, NOW);
        assert!(decision.outcome.limited);
        assert_eq!(decision.outcome.remaining, 1);
    }

    /// The plain model: admitted events with their times; a window is the first admitted
    /// event with no window open and the period after it.
    fn model_run(limit: i64, period: i64, calls: &[(i64, i64)]) -> Vec<[i64; 5]> {
        let mut start: Option<i64> = None;
        let mut admitted: Vec<(i64, i64)> = Vec::new();
        let mut now = NOW;
        let mut replies = Vec::new();
        for &(gap, quantity) in calls {
            now += gap;
            if start.is_some_and(|s| now >= s + period) {
                start = None;
            }
            let used: i64 = start.map_or(0, |s| {
                admitted
                    .iter()
                    .filter(|&&(t, _)| t >= s)
                    .map(|&(_, q)| q)
                    .sum()
            });
            let admit = used + quantity <= limit;
            if admit && quantity > 0 {
                start.get_or_insert(now);
                admitted.push((now, quantity));
            }
            let end = start.map(|s| s + period);
            let left = end.map_or(0, |e| e - now);
            let used_after = if admit { used + quantity } else { used };
            replies.push([
                i64::from(!admit),
                limit,
                limit - used_after,
                if admit || quantity > limit { -1 } else { left },
                left,
            ]);
        }
        replies
    }

    proptest! {
        #[test]
        fn fixed_windows_answer_exactly_as_the_model(
            limit in 1i64..12,
            period in 1i64..3_000,
            calls in prop::collection::vec((0i64..1_500, 0i64..6), 1..80),
        ) {
            let mut stored = None;
            let mut now = NOW;
            let expected = model_run(limit, period, &calls);
            for (&(gap, quantity), expected) in calls.iter().zip(expected) {
                now += gap;
                let decision = fixed(limit, period, quantity).decide(stored, now);
                if let Some(window) = decision.new_window {
                    prop_assert!(window.end_ms > now && window.count <= limit);
                    stored = Some(window);
                }
                prop_assert_eq!(decision.outcome.to_reply(TimeUnit::Milliseconds), expected);
            }
        }
    }

    fn counting_denied(limit: i64, period_ms: i64, quantity: i64) -> FixedWindow {
        FixedWindow {
            count_denied: true,
            ..fixed(limit, period_ms, quantity)
        }
    }

    #[test]
    fn counting_denied_counts_a_denial_and_opens_its_window() {
        let full = Some(OpenWindow {
            count: 2,
            end_ms: NOW + 1_000,
        });
        let denied = counting_denied(2, 1_000, 1).decide(full, NOW + 400);
        assert_eq!(
            denied.new_window,
            Some(OpenWindow {
                count: 3,
                end_ms: NOW + 1_000
            })
        );
        assert_eq!(
            denied.outcome.to_reply(TimeUnit::Milliseconds),
            [1, 2, 0, 600, 600]
        );
        // Over the limit on an empty limiter: counted, in a window of its own, never fits.
        let over = counting_denied(2, 1_000, 3).decide(None, NOW);
        assert_eq!(
            over.new_window,
            Some(OpenWindow {
                count: 3,
                end_ms: NOW + 1_000
            })
        );
        assert_eq!(
            over.outcome.to_reply(TimeUnit::Milliseconds),
            [1, 2, 0, -1, 1000]
        );
        // A peek counts nothing, and a count at the top stays there.
        assert_eq!(
            counting_denied(2, 1_000, 0).decide(full, NOW).new_window,
            None
        );
        let top = Some(OpenWindow {
            count: i64::MAX,
            end_ms: NOW + 1_000,
        });
        assert_eq!(
            counting_denied(2, 1_000, 5).decide(top, NOW).new_window,
            None
        );
    }

    /// The INCR recipe as `limits` and rate-limiter-flexible run it: INCRBY, EXPIRE when the
    /// key is new, then compare with the limit; a key that expired is gone.
    fn incr_model_run(limit: i64, period: i64, calls: &[(i64, i64)]) -> Vec<[i64; 5]> {
        let mut key: Option<(i64, i64)> = None;
        let mut now = NOW;
        let mut replies = Vec::new();
        for &(gap, quantity) in calls {
            now += gap;
            key = key.filter(|&(_, end)| now < end);
            if quantity > 0 {
                let (count, end) = key.unwrap_or((0, now + period));
                key = Some((count + quantity, end));
            }
            let (count, end) = key.unwrap_or((0, now));
            let admitted = count <= limit;
            replies.push([
                i64::from(!admitted),
                limit,
                (limit - count).max(0),
                if admitted || quantity > limit {
                    -1
                } else {
                    end - now
                },
                end - now,
            ]);
        }
        replies
    }

    proptest! {
        #[test]
        fn counting_denied_answers_as_incr_then_compare(
            limit in 1i64..12,
            period in 1i64..3_000,
            calls in prop::collection::vec((0i64..1_500, 0i64..6), 1..80),
        ) {
            let mut stored = None;
            let mut now = NOW;
            let expected = incr_model_run(limit, period, &calls);
            for (&(gap, quantity), expected) in calls.iter().zip(expected) {
                now += gap;
                let decision = counting_denied(limit, period, quantity).decide(stored, now);
                if let Some(window) = decision.new_window {
                    prop_assert!(window.end_ms > now);
                    stored = Some(window);
                }
                prop_assert_eq!(decision.outcome.to_reply(TimeUnit::Milliseconds), expected);
            }
        }
    }

    #[test]
    fn a_refund_lowers_the_open_window_and_never_below_zero() {
        let open = Some(OpenWindow {
            count: 3,
            end_ms: NOW + 1_000,
        });
        let refund = fixed(5, 1_000, 2).refund(open, NOW + 400);
        assert_eq!(
            refund.new_window,
            Some(OpenWindow {
                count: 1,
                end_ms: NOW + 1_000
            })
        );
        assert_eq!(
            refund.outcome.to_reply(TimeUnit::Milliseconds),
            [0, 5, 4, -1, 600]
        );
        // Everything given back: an untouched key's answer, the window's end forgotten.
        let refund = fixed(5, 1_000, 9).refund(open, NOW + 400);
        assert_eq!(refund.new_window.map(|w| w.count), Some(0));
        assert_eq!(
            refund.outcome.to_reply(TimeUnit::Milliseconds),
            [0, 5, 5, -1, 0]
        );
        // An ended window, no window, a quantity of 0: nothing to give back, and a peek's
        // answer.
        for (stored, now, quantity) in [(open, NOW + 1_000, 2), (None, NOW, 2), (open, NOW, 0)] {
            let refund = fixed(5, 1_000, quantity).refund(stored, now);
            assert_eq!(refund.new_window, None);
            assert_eq!(
                refund.outcome,
                fixed(5, 1_000, 0).decide(stored, now).outcome
            );
        }
    }

    #[test]
    fn a_refund_is_admitted_on_a_window_fuller_than_its_own_limit() {
        // 10 counted, by the INCR recipe or under a limit since lowered to 5.
        let over = Some(OpenWindow {
            count: 10,
            end_ms: NOW + 60_000,
        });
        let refund = fixed(5, 60_000, 2).refund(over, NOW);
        assert_eq!(refund.new_window.map(|w| w.count), Some(8));
        assert_eq!(
            refund.outcome.to_reply(TimeUnit::Milliseconds),
            [0, 5, 0, -1, 60_000]
        );
    }

    proptest! {
        /// A refund never raises what remains above the limit, and one of what was just
        /// admitted, at that instant, leaves the limiter as it was. A count of 0 goes, as the
        /// command layer deletes its key.
        #[test]
        fn refunds_undo_admissions_and_give_no_credit(
            calls in prop::collection::vec((0i64..700, 0i64..4, any::<bool>()), 1..80),
        ) {
            let (limit, period) = (5, 1_000);
            let mut stored: Option<OpenWindow> = None;
            let mut now = NOW;
            for (gap, quantity, refund) in calls {
                now += gap;
                let f = fixed(limit, period, quantity);
                if refund {
                    let decision = f.refund(stored, now);
                    if let Some(window) = decision.new_window {
                        prop_assert!(window.count >= 0);
                        prop_assert!(stored.is_some_and(|old| window.count < old.count && window.end_ms == old.end_ms));
                        stored = Some(window).filter(|window| window.count > 0);
                    }
                    prop_assert!(!decision.outcome.limited && decision.outcome.remaining <= limit);
                } else {
                    let before = f.peek().decide(stored, now).outcome;
                    let decision = f.decide(stored, now);
                    if let Some(admitted) = decision.new_window {
                        let undone = f.refund(Some(admitted), now);
                        prop_assert_eq!(undone.outcome, before);
                        prop_assert_eq!(undone.new_window.map(|w| w.count), Some(admitted.count - quantity));
                        stored = Some(admitted);
                    }
                }
            }
        }
    }

    proptest! {
        #[test]
        fn any_stored_window_is_decided_without_panicking(
            count in any::<i64>(),
            end_ms in any::<i64>(),
            limit in 1i64..=i64::MAX,
            quantity in 0i64..=i64::MAX,
            now in 0i64..1 << 42,
        ) {
            let stored = Some(OpenWindow { count: count.max(0), end_ms });
            let reply = fixed(limit, 60_000, quantity).decide(stored, now).outcome.to_reply(TimeUnit::Milliseconds);
            prop_assert!(reply[2] >= 0 && reply[2] <= limit);
            prop_assert!(reply[4] >= 0);
        }
    }

    #[test]
    fn waits_are_whole_milliseconds_in_nanoseconds() {
        let open = Some(OpenWindow {
            count: 1,
            end_ms: NOW + 1_500,
        });
        let decision = fixed(1, 2_000, 1).decide(open, NOW);
        assert_eq!(decision.outcome.retry_after_ns, Some(1_500 * MILLI));
        assert_eq!(
            decision.outcome.to_reply(TimeUnit::Seconds),
            [1, 1, 0, 2, 2]
        );
    }

    #[test]
    fn a_window_on_a_grid_ends_where_the_grid_says_and_a_stored_one_keeps_its_end() {
        use crate::args::Laid;
        use crate::calendar::{day_of, Unit, DAY_MS};
        // 2024-02-29 12:00:30 UTC, a minute and a month laid on the clock.
        let now = day_of(2024, 2, 29).unwrap() * DAY_MS + DAY_MS / 2 + 30_000;
        let minute = fixed(3, 60_000, 1).laid(Laid::Aligned, 0);
        let opened = minute.decide(None, now);
        assert_eq!(opened.new_window.map(|w| w.end_ms), Some(now + 30_000));
        assert_eq!(
            opened.outcome.to_reply(TimeUnit::Seconds),
            [0, 3, 2, -1, 30]
        );
        let month = fixed(10_000, DAY_MS, 1).laid(Laid::Calendar(Unit::Month), 0);
        let quota = month.decide(None, now).new_window;
        assert_eq!(
            quota.map(|w| w.end_ms),
            Some(day_of(2024, 3, 1).unwrap() * DAY_MS)
        );
        // A key opened by the month keeps its count, and its end, under the minute's form.
        let on = minute.decide(quota, now + 1_000).new_window;
        assert_eq!(
            on,
            Some(OpenWindow {
                count: 2,
                end_ms: quota.unwrap().end_ms
            })
        );
        // Its window over, the next call opens the grid's.
        let end = quota.unwrap().end_ms;
        let next = minute.decide(quota, end + 5_000).new_window;
        assert_eq!(
            next,
            Some(OpenWindow {
                count: 1,
                end_ms: end + 60_000
            })
        );
    }
}

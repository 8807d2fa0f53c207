//! CL.SMOOTH's pure core: Guava's `SmoothRateLimiter` (version 31), with time passed in.
//!
//! Guava keeps two numbers: `nextFreeTicketMicros`, the instant the next request may go, and
//! `storedPermits`, unused time saved up as permits. A request that finds the limiter free
//! goes at once and *pays later*: it takes stored permits, and pushes the next request's
//! instant back by what it took beyond them. Idle time refills the stored permits at the
//! *cool-down* interval, up to `maxPermits`. The bursty shape's stored permits are free; the
//! warm-up shape's cost more the more there are (a trapezoid between the stable and the cold
//! interval), so a limiter that has been idle starts slow and warms up.
//!
//! The arithmetic is Guava's, operation for operation, in `f64` and integer microseconds:
//! the `(long)` casts that truncate waits (Rust's `as i64` saturates as Java's does),
//! `LongMath.saturatedAdd`, and the resync before every reservation. One departure: where
//! Guava adds two waits as plain `long`s, which wraps to a negative wait past 2^63 µs (a
//! warm-up with a huge cold factor and quantity), the sum saturates, as its saturatedAdd
//! does, so that no state goes back before the epoch.
//! The rate is always derived the same way: `permitsPerSecond = permits / period_in_seconds`,
//! then `stableIntervalMicros = 1e6 / permitsPerSecond`.

pub mod state;

use crate::args::{SmoothParams, SmoothShape};
use crate::error::Error;
use crate::outcome::Outcome;
use crate::time::{TimeUnit, MICROS_PER_MILLI, NANOS_PER_MICRO};
use state::KeyState;

/// A rate as Guava derives it from `setRate`: the intervals, and the most permits it stores.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Microseconds per permit at the stable rate.
    stable_interval: f64,
    max_permits: f64,
    /// Microseconds of idleness that store one permit.
    cool_down: f64,
    shape: Shape,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Shape {
    Bursty,
    /// Stored permits above `threshold` cost more, up to the cold interval at `max_permits`.
    WarmingUp {
        threshold: f64,
        slope: f64,
    },
}

/// How long a call may be held for its reservation (`BLOCK`): Guava's `tryAcquire` timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timeout {
    Micros(i64),
    /// `acquire()`: as long as it takes.
    Forever,
}

/// One request against one smooth limiter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Smooth {
    rate: Rate,
    /// Permits asked for; 0 only looks.
    quantity: i64,
    timeout: Timeout,
}

/// Guava's state: `nextFreeTicketMicros` and `storedPermits`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Schedule {
    pub next_free: i64,
    pub stored: f64,
}

/// What an admission writes: the key's new value, the instant it expires (when the limiter
/// is a new one's again), and, for a call that reserved a later instant, that instant: its
/// reply is held until then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmoothWrite {
    pub value: [u8; state::LEN],
    pub expire_at_ms: i64,
    pub reply_at_ns: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decision {
    pub outcome: Outcome,
    pub write: Option<SmoothWrite>,
}

impl Rate {
    /// Guava's `setRate` for this shape: `SmoothBursty.doSetRate` or
    /// `SmoothWarmingUp.doSetRate`, with the rate as CL.SMOOTH defines it.
    pub fn new(params: &SmoothParams) -> Rate {
        let seconds = |span: i64| match params.unit {
            TimeUnit::Seconds => span as f64,
            TimeUnit::Milliseconds => span as f64 / 1000.0,
        };
        let permits_per_second = params.permits as f64 / seconds(params.period);
        let stable_interval = 1e6 / permits_per_second;
        match params.shape {
            SmoothShape::Bursty { burst } => Rate {
                stable_interval,
                max_permits: seconds(burst) * permits_per_second,
                cool_down: stable_interval,
                shape: Shape::Bursty,
            },
            SmoothShape::WarmingUp { warmup, cold } => {
                // The span is whole units, so whole microseconds, and far below 2^63.
                let warmup_micros = warmup.saturating_mul(params.unit.nanos() / NANOS_PER_MICRO);
                let cold_interval = stable_interval * cold as f64;
                let threshold = 0.5 * warmup_micros as f64 / stable_interval;
                let max_permits =
                    threshold + 2.0 * warmup_micros as f64 / (stable_interval + cold_interval);
                let slope = (cold_interval - stable_interval) / (max_permits - threshold);
                Rate {
                    stable_interval,
                    max_permits,
                    cool_down: warmup_micros as f64 / max_permits,
                    shape: Shape::WarmingUp { threshold, slope },
                }
            }
        }
    }

    fn warming_up(&self) -> bool {
        matches!(self.shape, Shape::WarmingUp { .. })
    }

    /// How many calls of one permit a new key admits at one instant: the whole stored
    /// permits and one more that pays later, or for a warm-up, whose first permit is dear,
    /// one.
    pub fn limit(&self) -> i64 {
        match self.shape {
            // The cast is the floor of a non-negative value.
            Shape::Bursty => (self.max_permits as i64).saturating_add(1),
            Shape::WarmingUp { .. } => 1,
        }
    }

    /// `storedPermitsToWaitTime`: what taking `take` of `stored` permits costs, in µs.
    fn stored_wait(&self, stored: f64, take: f64) -> i64 {
        match self.shape {
            Shape::Bursty => 0,
            Shape::WarmingUp { threshold, slope } => {
                let to_time = |permits: f64| self.stable_interval + permits * slope;
                let above = stored - threshold;
                let mut take = take;
                let mut micros: i64 = 0;
                if above > 0.0 {
                    let take_above = java_min(above, take);
                    let length = to_time(above) + to_time(above - take_above);
                    micros = (take_above * length / 2.0) as i64;
                    take -= take_above;
                }
                micros.saturating_add((self.stable_interval * take) as i64)
            }
        }
    }
}

impl Schedule {
    /// A new key: a limiter idle long enough to be full (bursty) or cold (warm-up).
    pub fn new(now: i64, rate: &Rate) -> Schedule {
        Schedule {
            next_free: now,
            stored: rate.max_permits,
        }
    }

    /// `resync`: time past the next free instant stores permits, at the cool-down interval.
    fn resync(&mut self, now: i64, max_permits: f64, cool_down: f64) {
        if now > self.next_free {
            let new_permits = now.saturating_sub(self.next_free) as f64 / cool_down;
            self.stored = java_min(max_permits, self.stored + new_permits);
            self.next_free = now;
        }
    }

    /// `setRate` from the rate the key was kept at: resync at the old cool-down, then scale
    /// the stored permits to the new maximum. (Capped at what a state may hold, which only a
    /// crafted state's rescale could pass: what is written is always read again.)
    fn rescale(&mut self, now: i64, from: &KeyState, to: &Rate) {
        self.resync(now, from.max_permits, from.cool_down);
        let scaled = self.stored * to.max_permits / from.max_permits;
        self.stored = java_min(scaled, state::most_stored(to.max_permits));
    }

    /// `reserveEarliestAvailable`: takes `quantity` permits at `now`, and returns the instant
    /// the caller may go, which the next caller's wait starts from.
    fn reserve(&mut self, quantity: i64, now: i64, rate: &Rate) -> i64 {
        self.resync(now, rate.max_permits, rate.cool_down);
        let moment = self.next_free;
        let spend = java_min(quantity as f64, self.stored);
        let fresh = quantity as f64 - spend;
        let wait = rate
            .stored_wait(self.stored, spend)
            .saturating_add((fresh * rate.stable_interval) as i64);
        self.next_free = self.next_free.saturating_add(wait);
        self.stored -= spend;
        moment
    }

    /// The first instant at which the limiter equals a new key's: free, with all its permits
    /// stored.
    fn full_at(&self, rate: &Rate) -> i64 {
        if self.stored == rate.max_permits {
            return self.next_free;
        }
        // Past the next free instant, resync stores `d / cool_down` permits in d µs; the first
        // d that fills it, in f64 as resync computes it. The estimate is within a step or two
        // (max_permits · cool_down, the span to fill from empty, is below 2^53 µs).
        let fills = |d: i64| self.stored + d as f64 / rate.cool_down >= rate.max_permits;
        // Truncated, then one more: the cast takes no call to ceil.
        let estimate = (rate.max_permits - self.stored) * rate.cool_down;
        let mut d = (estimate.clamp(0.0, FILL_SPAN_BOUND as f64) as i64).saturating_add(1);
        if fills(d) {
            for _ in 0..ADJUSTMENTS {
                if d == 1 || !fills(d - 1) {
                    break;
                }
                d -= 1;
            }
        } else {
            let mut steps = 0;
            while !fills(d) {
                steps += 1;
                if steps > ADJUSTMENTS {
                    // Never report it full too early: a key that outlives its state costs
                    // memory only.
                    d = FILL_SPAN_BOUND;
                    break;
                }
                d += 1;
            }
        }
        self.next_free.saturating_add(d)
    }

    /// How many calls of one permit would be admitted one after another at `now`, at most
    /// `rate.limit()`.
    fn at_once(&self, now: i64, rate: &Rate) -> i64 {
        if self.next_free > now {
            return 0;
        }
        let Shape::Bursty = rate.shape else {
            // At least one goes, and a warm-up's limit is one.
            return 1;
        };
        let mut free = *self;
        free.resync(now, rate.max_permits, rate.cool_down);
        // Whole stored permits cost nothing; subtracting them one at a time is exact. (The
        // cast is the floor of a non-negative value, and exact below 2^53.)
        let whole = free.stored as i64;
        let fraction = free.stored - whole as f64;
        let stable = rate.stable_interval as i64;
        // The call that spends the fraction (or, with none, a whole fresh permit) waits this;
        // while waits truncate to 0 µs, the next free instant stays now.
        let first_paid = if fraction > 0.0 {
            ((1.0 - fraction) * rate.stable_interval) as i64
        } else {
            stable
        };
        let paid = match (first_paid, fraction > 0.0, stable) {
            (1.., _, _) => 1,
            (_, true, 1..) => 2,
            _ => i64::MAX,
        };
        whole.saturating_add(paid).min(rate.limit())
    }
}

/// The largest span the limiter fills in, in µs: far beyond any rate's (which stay below 2^53),
/// and small enough that no instant plus it overflows for millennia.
const FILL_SPAN_BOUND: i64 = 1 << 60;

/// How many one-µs steps correct the estimate of when a limiter is full.
const ADJUSTMENTS: usize = 4;

/// `Math.min` for the values Guava compares, none of them NaN.
fn java_min(a: f64, b: f64) -> f64 {
    if a <= b {
        a
    } else {
        b
    }
}

impl Smooth {
    pub fn new(params: &SmoothParams, quantity: i64, timeout: Timeout) -> Smooth {
        Smooth {
            rate: Rate::new(params),
            quantity,
            timeout,
        }
    }

    /// The same limiter asked for nothing: a peek.
    pub fn peek(&self) -> Smooth {
        Smooth {
            quantity: 0,
            ..*self
        }
    }

    /// The key's state under this call's rate: a new key's, the stored one, or, when the key
    /// was kept at another rate, the stored one rescaled as `setRate` does.
    pub fn state(&self, value: Option<&[u8]>, now: i64) -> Result<Schedule, Error> {
        let Some(value) = value else {
            return Ok(Schedule::new(now, &self.rate));
        };
        let state = KeyState::decode(value)?;
        if state.warming_up != self.rate.warming_up() {
            return Err(Error::SmoothShape(state.warming_up));
        }
        let mut schedule = Schedule {
            next_free: state.next_free,
            stored: state.stored,
        };
        let same = state.max_permits.to_bits() == self.rate.max_permits.to_bits()
            && state.cool_down.to_bits() == self.rate.cool_down.to_bits();
        if !same {
            schedule.rescale(now, &state, &self.rate);
        }
        Ok(schedule)
    }

    /// Decides the request at `now_ns` against the key's value (`None`: no key). Admitted as
    /// Guava's `tryAcquire(quantity, timeout)` is: when the next free instant, less the
    /// timeout, is not after now. An admission reserves at once; a denial and a peek change
    /// nothing.
    pub fn decide(&self, value: Option<&[u8]>, now_ns: i64) -> Result<Decision, Error> {
        let now = now_ns.div_euclid(NANOS_PER_MICRO);
        let mut schedule = self.state(value, now)?;
        let rate = &self.rate;
        let limit = rate.limit();
        let reset = |schedule: &Schedule| micros_to_ns(schedule.full_at(rate).saturating_sub(now));
        let admitted = match self.timeout {
            Timeout::Forever => true,
            Timeout::Micros(timeout) => schedule.next_free.saturating_sub(timeout) <= now,
        };
        if self.quantity == 0 || !admitted {
            let outcome = match self.timeout {
                Timeout::Micros(timeout) if !admitted && self.quantity > 0 => {
                    let retry = schedule
                        .next_free
                        .saturating_sub(timeout)
                        .saturating_sub(now);
                    Outcome::denied(limit, 0, Some(micros_to_ns(retry)), reset(&schedule))
                }
                _ => Outcome::allowed(limit, schedule.at_once(now, rate), reset(&schedule)),
            };
            return Ok(Decision {
                outcome,
                write: None,
            });
        }
        let moment = schedule.reserve(self.quantity, now, rate);
        let full_at = schedule.full_at(rate);
        let state = KeyState {
            next_free: schedule.next_free,
            stored: schedule.stored,
            max_permits: rate.max_permits,
            cool_down: rate.cool_down,
            warming_up: rate.warming_up(),
        };
        Ok(Decision {
            outcome: Outcome::allowed(limit, schedule.at_once(now, rate), reset(&schedule)),
            write: Some(SmoothWrite {
                value: state.encode(),
                expire_at_ms: full_at.div_euclid(MICROS_PER_MILLI)
                    + i64::from(full_at.rem_euclid(MICROS_PER_MILLI) > 0),
                reply_at_ns: (moment > now).then(|| micros_to_ns(moment)),
            }),
        })
    }
}

/// Microseconds as the nanoseconds the layers above keep time in, saturating.
fn micros_to_ns(micros: i64) -> i64 {
    micros.saturating_mul(NANOS_PER_MICRO)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SECOND: i64 = 1_000_000;
    /// 2026-11-29T00:00:00Z, in µs.
    const NOW: i64 = 1_795_910_400 * SECOND;

    fn bursty(permits: i64, period: i64, unit: TimeUnit, burst: i64) -> SmoothParams {
        SmoothParams {
            permits,
            period,
            unit,
            shape: SmoothShape::Bursty { burst },
        }
    }

    fn warming(permits: i64, period: i64, unit: TimeUnit, warmup: i64, cold: i64) -> SmoothParams {
        SmoothParams {
            permits,
            period,
            unit,
            shape: SmoothShape::WarmingUp { warmup, cold },
        }
    }

    /// One key, as the command layer keeps it: the value and when it expires.
    #[derive(Default)]
    struct Key {
        value: Option<([u8; state::LEN], i64)>,
    }

    impl Key {
        fn call(
            &mut self,
            params: &SmoothParams,
            quantity: i64,
            timeout: Timeout,
            now: i64,
        ) -> Decision {
            if self
                .value
                .is_some_and(|(_, expire_at_ms)| now.div_euclid(1000) > expire_at_ms)
            {
                self.value = None;
            }
            let smooth = Smooth::new(params, quantity, timeout);
            let value = self.value.as_ref().map(|(value, _)| &value[..]);
            let decision = smooth.decide(value, now * 1000).expect("decides");
            if let Some(write) = decision.write {
                self.value = Some((write.value, write.expire_at_ms));
            }
            decision
        }

        fn state(&self) -> Option<KeyState> {
            self.value
                .map(|(value, _)| KeyState::decode(&value).expect("a state"))
        }
    }

    const NOW_ONLY: Timeout = Timeout::Micros(0);

    #[test]
    fn a_new_bursty_key_is_full_and_pays_later() {
        // Guava's create(2), idle: two stored permits go at once, the third goes too and pushes
        // the next back by its 500 ms.
        let params = bursty(2, 1, TimeUnit::Seconds, 1);
        let mut key = Key::default();
        let replies: Vec<_> = (0..4)
            .map(|_| {
                key.call(&params, 1, NOW_ONLY, NOW)
                    .outcome
                    .to_reply(TimeUnit::Milliseconds)
            })
            .collect();
        assert_eq!(replies[0], [0, 3, 2, -1, 500]);
        assert_eq!(replies[1], [0, 3, 1, -1, 1000]);
        assert_eq!(replies[2], [0, 3, 0, -1, 1500]);
        assert_eq!(replies[3], [1, 3, 0, 500, 1500]);
        let state = key.state().expect("written");
        assert_eq!(state.next_free, NOW + SECOND / 2);
        assert_eq!(state.stored, 0.0);
        // 400 ms later it waits 100 ms more; with BLOCK 100 it goes, and the reply is held until
        // the instant it reserved.
        let later = NOW + 400_000;
        assert_eq!(
            key.call(&params, 1, NOW_ONLY, later)
                .outcome
                .to_reply(TimeUnit::Milliseconds),
            [1, 3, 0, 100, 1100]
        );
        let held_reply = key.call(&params, 1, Timeout::Micros(100_000), later);
        assert!(!held_reply.outcome.limited);
        assert_eq!(
            held_reply.write.and_then(|write| write.reply_at_ns),
            Some((NOW + SECOND / 2) * 1000)
        );
    }

    #[test]
    fn a_cold_limiter_starts_at_a_third_of_the_rate() {
        // 2 per second, warming up over 4 s, cold factor 3: from cold, the stored permits above
        // the threshold cost 1.375, 1.125, 0.875 and 0.625 s, the warm-up's 4 s, then 0.5 s each.
        let params = warming(2, 1, TimeUnit::Seconds, 4, 3);
        let mut key = Key::default();
        let mut releases = Vec::new();
        for _ in 0..6 {
            let decision = key.call(&params, 1, Timeout::Forever, NOW);
            assert_eq!(decision.outcome.limit, 1);
            releases.push(
                decision
                    .write
                    .and_then(|w| w.reply_at_ns)
                    .map_or(NOW, |ns| ns / 1000),
            );
        }
        let gaps: Vec<_> = releases.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(gaps, [1_375_000, 1_125_000, 875_000, 625_000, 500_000]);
    }

    #[test]
    fn a_peek_and_a_denial_change_nothing() {
        let params = bursty(1, 1, TimeUnit::Seconds, 1);
        let mut key = Key::default();
        let peek = key.call(&params, 0, NOW_ONLY, NOW);
        assert_eq!(peek.write, None);
        assert_eq!(peek.outcome.to_reply(TimeUnit::Seconds), [0, 2, 2, -1, 0]);
        key.call(&params, 1, NOW_ONLY, NOW);
        key.call(&params, 1, NOW_ONLY, NOW);
        let before = key.state();
        let denied = key.call(&params, 1, NOW_ONLY, NOW);
        assert!(denied.outcome.limited);
        assert_eq!(denied.write, None);
        assert_eq!(key.state(), before);
        // A peek while BLOCK would be denied is still a peek.
        let peek = key.call(&params, 0, NOW_ONLY, NOW);
        assert_eq!(peek.outcome.to_reply(TimeUnit::Seconds), [0, 2, 0, -1, 2]);
    }

    #[test]
    fn a_key_expires_when_it_is_a_new_ones_again() {
        let params = bursty(10, 1, TimeUnit::Seconds, 1);
        let mut key = Key::default();
        let decision = key.call(&params, 3, NOW_ONLY, NOW + 250);
        // Three permits come back in 300 ms.
        assert_eq!(decision.outcome.reset_after_ns, 300_000_000);
        assert_eq!(
            decision.write.map(|w| w.expire_at_ms),
            Some((NOW + 250 + 300_000 + 999) / 1000)
        );
    }

    #[test]
    fn another_shape_is_refused_by_name() {
        let mut key = Key::default();
        key.call(&bursty(1, 1, TimeUnit::Seconds, 1), 1, NOW_ONLY, NOW);
        let value = key.value.map(|(value, _)| value).expect("written");
        let warm = Smooth::new(&warming(1, 1, TimeUnit::Seconds, 1, 3), 1, NOW_ONLY);
        assert_eq!(
            warm.decide(Some(&value), NOW * 1000),
            Err(Error::SmoothShape(false))
        );
    }

    #[test]
    fn saturated_waits_never_overflow() {
        // One permit per 2^62 ns: a whole int of permits takes longer than a long can say.
        let params = bursty(1, (1 << 62) / 1_000_000_000, TimeUnit::Seconds, 1);
        let mut key = Key::default();
        key.call(&params, i64::from(i32::MAX), Timeout::Forever, NOW);
        let state = key.state().expect("written");
        assert_eq!(state.next_free, i64::MAX);
        let denied = key.call(&params, 1, NOW_ONLY, NOW);
        assert!(denied.outcome.limited);
        assert_eq!(denied.outcome.retry_after_ns, Some(i64::MAX));
        let forever = key.call(&params, 1, Timeout::Forever, NOW);
        assert!(!forever.outcome.limited);
    }

    /// Guava's `SmoothRateLimiter`, transcribed from its source in the shape it has there: an
    /// object whose rate is set after it is made, and whose clock is read at each call.
    #[derive(Debug, Clone)]
    struct Model {
        stored_permits: f64,
        max_permits: f64,
        stable_interval_micros: f64,
        next_free_ticket_micros: i64,
        /// `None`: SmoothBursty's maxBurstSeconds; `Some`: SmoothWarmingUp's fields.
        max_burst_seconds: f64,
        warm: Option<Warm>,
    }

    #[derive(Debug, Clone, Copy)]
    struct Warm {
        warmup_period_micros: i64,
        cold_factor: f64,
        slope: f64,
        threshold_permits: f64,
    }

    impl Model {
        fn create(params: &SmoothParams, now: i64) -> Model {
            let unit_seconds = |span: i64| match params.unit {
                TimeUnit::Seconds => span as f64,
                TimeUnit::Milliseconds => span as f64 / 1000.0,
            };
            let mut model = Model {
                stored_permits: 0.0,
                max_permits: 0.0,
                stable_interval_micros: 0.0,
                next_free_ticket_micros: 0,
                max_burst_seconds: 0.0,
                warm: None,
            };
            match params.shape {
                SmoothShape::Bursty { burst } => model.max_burst_seconds = unit_seconds(burst),
                SmoothShape::WarmingUp { warmup, cold } => {
                    model.warm = Some(Warm {
                        warmup_period_micros: warmup * (params.unit.nanos() / 1000),
                        cold_factor: cold as f64,
                        slope: 0.0,
                        threshold_permits: 0.0,
                    })
                }
            }
            model.set_rate(Model::permits_per_second(params), now);
            model
        }

        fn permits_per_second(params: &SmoothParams) -> f64 {
            let period = match params.unit {
                TimeUnit::Seconds => params.period as f64,
                TimeUnit::Milliseconds => params.period as f64 / 1000.0,
            };
            params.permits as f64 / period
        }

        fn set_rate(&mut self, permits_per_second: f64, now: i64) {
            self.resync(now);
            let stable_interval_micros = 1_000_000.0 / permits_per_second;
            self.stable_interval_micros = stable_interval_micros;
            let old_max_permits = self.max_permits;
            match self.warm.as_mut() {
                None => {
                    self.max_permits = self.max_burst_seconds * permits_per_second;
                    self.stored_permits = if old_max_permits == 0.0 {
                        0.0
                    } else {
                        self.stored_permits * self.max_permits / old_max_permits
                    };
                }
                Some(warm) => {
                    let cold_interval_micros = stable_interval_micros * warm.cold_factor;
                    warm.threshold_permits =
                        0.5 * warm.warmup_period_micros as f64 / stable_interval_micros;
                    self.max_permits = warm.threshold_permits
                        + 2.0 * warm.warmup_period_micros as f64
                            / (stable_interval_micros + cold_interval_micros);
                    warm.slope = (cold_interval_micros - stable_interval_micros)
                        / (self.max_permits - warm.threshold_permits);
                    self.stored_permits = if old_max_permits == 0.0 {
                        self.max_permits
                    } else {
                        self.stored_permits * self.max_permits / old_max_permits
                    };
                }
            }
        }

        fn cool_down_interval_micros(&self) -> f64 {
            match self.warm {
                None => self.stable_interval_micros,
                Some(warm) => warm.warmup_period_micros as f64 / self.max_permits,
            }
        }

        fn resync(&mut self, now: i64) {
            if now > self.next_free_ticket_micros {
                let new_permits =
                    (now - self.next_free_ticket_micros) as f64 / self.cool_down_interval_micros();
                self.stored_permits = self.max_permits.min(self.stored_permits + new_permits);
                self.next_free_ticket_micros = now;
            }
        }

        fn stored_permits_to_wait_time(
            &self,
            stored_permits: f64,
            mut permits_to_take: f64,
        ) -> i64 {
            let Some(warm) = self.warm else {
                return 0;
            };
            let permits_to_time = |permits: f64| self.stable_interval_micros + permits * warm.slope;
            let available_above_threshold = stored_permits - warm.threshold_permits;
            let mut micros = 0i64;
            if available_above_threshold > 0.0 {
                let above_to_take = available_above_threshold.min(permits_to_take);
                let length = permits_to_time(available_above_threshold)
                    + permits_to_time(available_above_threshold - above_to_take);
                micros = (above_to_take * length / 2.0) as i64;
                permits_to_take -= above_to_take;
            }
            micros + (self.stable_interval_micros * permits_to_take) as i64
        }

        fn reserve_earliest_available(&mut self, required_permits: i64, now: i64) -> i64 {
            self.resync(now);
            let return_value = self.next_free_ticket_micros;
            let stored_permits_to_spend = (required_permits as f64).min(self.stored_permits);
            let fresh_permits = required_permits as f64 - stored_permits_to_spend;
            let wait_micros = self
                .stored_permits_to_wait_time(self.stored_permits, stored_permits_to_spend)
                + (fresh_permits * self.stable_interval_micros) as i64;
            self.next_free_ticket_micros = self.next_free_ticket_micros.saturating_add(wait_micros);
            self.stored_permits -= stored_permits_to_spend;
            return_value
        }

        /// `tryAcquire(permits, timeout)`, or `acquire(permits)` with no timeout: the wait when
        /// admitted.
        fn try_acquire(&mut self, permits: i64, timeout: Option<i64>, now: i64) -> Option<i64> {
            if timeout.is_some_and(|timeout| self.next_free_ticket_micros - timeout > now) {
                return None;
            }
            let moment_available = self.reserve_earliest_available(permits, now);
            Some((moment_available - now).max(0))
        }

        /// Whether the limiter at `now` is a new one: free, and full.
        fn is_idle(&self, now: i64) -> bool {
            let mut resynced = self.clone();
            resynced.resync(now);
            self.next_free_ticket_micros <= now && resynced.stored_permits == self.max_permits
        }
    }

    /// Guava 31 itself: tests/oracle/guava.rs, which runs tests/oracle/SmoothOracle.java.
    mod oracle {
        include!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/oracle/guava.rs"
        ));
    }

    /// The model is Guava: the same random calls on four limiters (bursty and warm-up, seconds
    /// and milliseconds, rates that change, timeouts) through the model and through Guava 31
    /// itself give the same decisions, waits and state, bit for bit.
    #[test]
    fn the_model_is_guavas_own_limiter() {
        let mut seed = 0x2029_u64;
        let mut below = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let shapes = [
            ("bursty", TimeUnit::Seconds, 1, 2, 0),
            ("bursty", TimeUnit::Milliseconds, 1500, 700, 0),
            ("warmup", TimeUnit::Seconds, 2, 3, 3),
            ("warmup", TimeUnit::Milliseconds, 800, 2500, 5),
        ];
        let mut models: Vec<Option<(Model, f64)>> = vec![None; shapes.len()];
        let (mut trace, mut expected) = (String::new(), Vec::new());
        let mut now = NOW;
        for _ in 0..3000 {
            let index = below(4) as usize;
            let (form, unit, period, span, cold) = shapes[index];
            now += [0, 1_000, 300_000, 3_000_000][below(4) as usize] * below(1000) as i64 / 1000;
            let permits = 1 + below(12) as i64;
            let quantity = 1 + below(4) as i64 * below(3) as i64;
            let timeout = match below(8) {
                0 => None,
                1 | 2 => Some(below(2_000_000) as i64),
                _ => Some(0),
            };
            let shape = match form {
                "bursty" => SmoothShape::Bursty { burst: span },
                _ => SmoothShape::WarmingUp { warmup: span, cold },
            };
            let params = SmoothParams {
                permits,
                period,
                unit,
                shape,
            };
            let fresh = models[index].is_none();
            let pps = Model::permits_per_second(&params);
            let (model, rate) = models[index]
                .get_or_insert_with(|| (Model::create(&params, now - 10_000 * SECOND), pps));
            if pps != *rate && timeout.is_none_or(|t| model.next_free_ticket_micros - t <= now) {
                model.set_rate(pps, now);
                *rate = pps;
            }
            let wait = model.try_acquire(quantity, timeout, now);
            let denied_wait = model.next_free_ticket_micros - timeout.unwrap_or(0) - now;
            expected.push(oracle::Decided {
                admitted: wait.is_some(),
                wait_us: wait.unwrap_or(denied_wait),
                next_free_us: model.next_free_ticket_micros,
                stored_bits: model.stored_permits.to_bits(),
                max_bits: model.max_permits.to_bits(),
                // Each limiter is made once, with its first call: never a key gone early.
                early: false,
            });
            let unit_word = if unit == TimeUnit::Seconds { "s" } else { "ms" };
            trace.push_str(&format!(
                "call k{index} {now} {form} {permits} {period} {unit_word} {span} {} {quantity} {} {}\n",
                cold.max(1),
                timeout.unwrap_or(-1),
                u8::from(fresh)
            ));
        }
        let decided = oracle::decide(&trace);
        assert_eq!(decided.len(), expected.len());
        for (i, (guava, model)) in decided.iter().zip(&expected).enumerate() {
            assert_eq!(
                guava,
                model,
                "call {i}: {}",
                trace.lines().nth(i).unwrap_or("")
            );
        }
    }

    /// One call of a trace: when, at which rate, how many, how long it may be held.
    #[derive(Debug, Clone)]
    struct Step {
        after_us: i64,
        permits: i64,
        quantity: i64,
        timeout: Option<i64>,
    }

    fn shapes() -> impl Strategy<Value = (SmoothShape, TimeUnit, i64)> {
        (
            prop_oneof![Just(TimeUnit::Seconds), Just(TimeUnit::Milliseconds)],
            1i64..=3,
            1i64..=4000,
            1i64..=5,
            any::<bool>(),
        )
            .prop_map(|(unit, period, span, cold, warm)| {
                let (period, span) = match unit {
                    TimeUnit::Seconds => (period, (span + 999) / 1000),
                    TimeUnit::Milliseconds => (period * 1000, span),
                };
                let shape = if warm {
                    SmoothShape::WarmingUp { warmup: span, cold }
                } else {
                    SmoothShape::Bursty { burst: span }
                };
                (shape, unit, period)
            })
    }

    fn steps() -> impl Strategy<Value = Vec<Step>> {
        proptest::collection::vec(
            (
                prop_oneof![Just(0i64), 0i64..2_000, 0i64..2_000_000, 0i64..20_000_000],
                prop_oneof![4 => Just(0i64), 1 => 1i64..40],
                prop_oneof![6 => 1i64..=3, 1 => 1i64..=50],
                prop_oneof![4 => Just(Some(0i64)), 2 => (0i64..3_000_000).prop_map(Some), 1 => Just(None)],
            )
                .prop_map(|(after_us, permits, quantity, timeout)| Step {
                    after_us,
                    permits,
                    quantity,
                    timeout,
                }),
            1..60,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// Decision for decision, and bit for bit in its state, the core is Guava's limiter: a
        /// model idled long enough before the first call, set to a new rate by the calls it
        /// admits, and replaced by a new one whenever the key has expired, which it must only
        /// do once the model is idle again.
        #[test]
        fn the_core_is_guavas_smooth_rate_limiter(
            (shape, unit, period) in shapes(),
            base_permits in 1i64..=20,
            trace in steps(),
        ) {
            let mut key = Key::default();
            let mut model: Option<(Model, f64)> = None;
            let mut now = NOW;
            for step in trace {
                now += step.after_us;
                let permits = if step.permits == 0 { base_permits } else { step.permits };
                let params = SmoothParams { permits, period, unit, shape };
                let expired = key
                    .value
                    .is_some_and(|(_, expire_at_ms)| now.div_euclid(1000) > expire_at_ms);
                if key.value.is_none() || expired {
                    if let Some((old, _)) = &model {
                        prop_assert!(old.is_idle(now), "the key expired before its limiter was idle");
                    }
                    let born = now - 10_000 * SECOND;
                    model = Some((Model::create(&params, born), Model::permits_per_second(&params)));
                }
                let (guava, rate) = model.as_mut().expect("made");
                let pps = Model::permits_per_second(&params);
                let admits = step.timeout.is_none_or(|t| guava.next_free_ticket_micros - t <= now);
                if pps != *rate && admits {
                    guava.set_rate(pps, now);
                    *rate = pps;
                }
                let timeout = step.timeout.map_or(Timeout::Forever, Timeout::Micros);
                let decision = key.call(&params, step.quantity, timeout, now);
                let expected = guava.try_acquire(step.quantity, step.timeout, now);
                prop_assert_eq!(!decision.outcome.limited, expected.is_some());
                match expected {
                    Some(wait) => {
                        let held = decision.write.and_then(|w| w.reply_at_ns).map_or(0, |ns| ns / 1000 - now);
                        prop_assert_eq!(held, wait);
                        let state = key.state().expect("written");
                        prop_assert_eq!(state.next_free, guava.next_free_ticket_micros);
                        prop_assert_eq!(state.stored.to_bits(), guava.stored_permits.to_bits());
                    }
                    None => {
                        let timeout = step.timeout.unwrap_or(0);
                        let retry = guava.next_free_ticket_micros - timeout - now;
                        prop_assert_eq!(decision.outcome.retry_after_ns, Some(retry * 1000));
                    }
                }
            }
        }

        /// `remaining` is what it says: that many calls of one permit, one after another at this
        /// instant, are admitted, and (below the limit) the next one is not.
        #[test]
        fn remaining_counts_the_calls_admitted_at_once(
            (shape, unit, period) in shapes(),
            permits in 1i64..=50,
            trace in steps(),
        ) {
            let params = SmoothParams { permits, period, unit, shape };
            let mut key = Key::default();
            let mut now = NOW;
            for step in trace {
                now += step.after_us;
                key.call(&params, step.quantity, NOW_ONLY, now);
            }
            let limit = Rate::new(&params).limit();
            let remaining = key.call(&params, 0, NOW_ONLY, now).outcome.remaining;
            for _ in 0..remaining {
                prop_assert!(!key.call(&params, 1, NOW_ONLY, now).outcome.limited);
            }
            if remaining < limit {
                prop_assert!(key.call(&params, 1, NOW_ONLY, now).outcome.limited);
            }
        }
    }
}

//! The limiters behind one face (GCRA, the fixed, sliding and bucketed windows, Guava's smooth
//! limiter, and the concurrency limit): each reads a state from its key, decides a request at
//! an instant, or takes a refund, and names the change it makes. Pure, like the cores it
//! wraps: the command layer reads and writes the keys.

use crate::args::WindowArgs;
use crate::buckets::{self, BucketedWindow, CellsChange, CellsPlan};
use crate::error::Error;
use crate::fixed::{FixedWindow, OpenWindow};
use crate::gcra::{self, Gcra};
use crate::lease::{Lease, LeaseChange};
use crate::outcome::Outcome;
use crate::smooth::{Smooth, SmoothWrite};
use crate::time::{ceil_ms, Instant};
use crate::window::{self, Append, SlidingWindow, Trim, TrimPlan};

/// What a call asks of its limiters: `quantity` units, taken or given back (`REFUND`), or
/// only what that would answer (`DRYRUN`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub quantity: i64,
    pub refund: bool,
    pub dry_run: bool,
}

impl Request {
    /// A quantity of zero only looks, taken or given back.
    pub fn peeks(self) -> bool {
        self.quantity == 0
    }

    /// Whether the call may change its keys: a look and a dry run never do.
    pub fn writes(self) -> bool {
        !self.peeks() && !self.dry_run
    }

    /// Whether waiters who came first may hold the call back: a refund takes nothing of
    /// theirs.
    pub fn yields_to_waiters(self) -> bool {
        !self.peeks() && !self.refund
    }
}

/// One request against one limiter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limiter<'a> {
    Throttle(Gcra),
    Fixed(FixedWindow),
    Sliding(SlidingWindow),
    /// The sliding window of sub-windows (CL.WINDOW's `BUCKETS n`).
    Bucketed(BucketedWindow),
    /// A concurrency limit, for this holder; with none, a look that takes no slot.
    Lease(Lease, Option<&'a [u8]>),
    /// Guava's smooth rate limiter (CL.SMOOTH).
    Smooth(Smooth),
}

/// Where a limiter reads its state: a key as the command layer opens it, or a test's model of
/// one. Each limiter asks it for its own kind of value (`Limiter::read`).
pub trait Source {
    /// The value as a decimal integer; `None` when there is no key.
    fn integer(&self) -> Result<Option<i64>, Error>;
    /// The value's bytes; `None` when there is no key.
    fn bytes(&self) -> Result<Option<&[u8]>, Error>;
    /// The instant the key expires, in unix ms; `None` when it never does.
    fn expire_at_ms(&self) -> Result<Option<i64>, Error>;
}

/// A limiter and what its key holds, read as that limiter's state (`None` when there is no
/// key). Every decision takes the two together, and `Limiter::read` is the one way to pair
/// them: no limiter meets another's state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reading<'a, 'k> {
    /// GCRA, and the theoretical arrival time, in ns.
    Throttle(Gcra, Option<i64>),
    /// The fixed window, and its count with the window's end from the key's expiry.
    Fixed(FixedWindow, Option<OpenWindow>),
    /// The exact sliding window, and its log's bytes.
    Sliding(SlidingWindow, Option<&'k [u8]>),
    /// The window of sub-windows, and its cells' bytes.
    Bucketed(BucketedWindow, Option<&'k [u8]>),
    /// A concurrency limit for this holder (none: a look), and its set of leases' bytes.
    Lease(Lease, Option<&'a [u8]>, Option<&'k [u8]>),
    /// Guava's smooth limiter, and its state's bytes.
    Smooth(Smooth, Option<&'k [u8]>),
}

/// What an admission or a refund changes in its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change<'a> {
    /// Store the TAT; the key expires at the first whole millisecond at or after it, when
    /// the limiter is empty again.
    Tat { tat: i64, expire_at_ms: i64 },
    /// Store the count. A window that `opens` sets the key's expiry to its end; counting into
    /// an open one leaves the expiry as it is, as INCR after EXPIRE does.
    Count {
        count: i64,
        end_ms: i64,
        opens: bool,
    },
    /// A refund's lower count, in the window that is open: its expiry stays, as DECRBY leaves
    /// it.
    CountDown { count: i64 },
    /// Append to the log.
    Log(Append),
    /// A refund's units leave the log; the key expires when the newest unit left leaves the
    /// window.
    Trim { plan: TrimPlan, expire_at_ms: i64 },
    /// Write a bucketed window's cells; the key expires when its newest cell leaves.
    Cells(CellsPlan),
    /// A refund left the limiter as an untouched one: the key is deleted.
    Clear(Cleared),
    /// Store a smooth limiter's state, as `SET … PXAT` would; the key expires when the
    /// limiter is a new one's again.
    Smooth(SmoothWrite),
    /// Renew or add `holder`'s lease; the key expires when the set's last lease ends.
    Lease {
        holder: &'a [u8],
        change: LeaseChange,
        expire_at_ms: i64,
    },
}

/// The window a refund cleared, whose command the deletion propagates as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cleared {
    Count,
    Log,
}

/// A limiter's answer to one request, and its change when admitted (none for a peek).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict<'a> {
    pub outcome: Outcome,
    pub change: Option<Change<'a>>,
}

impl<'a> Verdict<'a> {
    pub fn admitted(&self) -> bool {
        !self.outcome.limited
    }

    /// The verdict on a call that waiters who came before it hold back (BLOCK): it takes
    /// nothing. A denial stands, waiting at least until the first waiter is due; units that
    /// are free now are the waiters', so an admission becomes a denial with none remaining,
    /// due then too, and the limiter's reset as it stands (`peek`). A holder renewing its
    /// lease takes no slot of theirs, and is never held back. A limiter that `counts_denied`
    /// keeps the change of a call it denied itself; a call that would have fitted takes
    /// nothing, so that the waiters' units stay theirs.
    pub fn held_back(
        self,
        first_due_in_ns: i64,
        counts_denied: bool,
        peek: impl FnOnce() -> Result<Outcome, Error>,
    ) -> Result<Verdict<'a>, Error> {
        if let Some(Change::Lease {
            change: LeaseChange::Renew { .. },
            ..
        }) = self.change
        {
            return Ok(self);
        }
        let outcome = self.outcome;
        let outcome = if outcome.limited {
            Outcome {
                retry_after_ns: outcome.retry_after_ns.map(|wait| wait.max(first_due_in_ns)),
                ..outcome
            }
        } else {
            Outcome::denied(
                outcome.limit,
                0,
                Some(first_due_in_ns.max(1)),
                peek()?.reset_after_ns,
            )
        };
        Ok(Verdict {
            outcome,
            change: self
                .change
                .filter(|_| counts_denied && self.outcome.limited),
        })
    }
}

impl Limiter<'static> {
    /// CL.WINDOW's limiter, and CL.ALL's WINDOW: exact, or with `BUCKETS n` in cells.
    pub fn sliding(args: &WindowArgs) -> Limiter<'static> {
        match args.buckets {
            Some(n) => Limiter::Bucketed(BucketedWindow::new(&args.params, n, args.quantity)),
            None => Limiter::Sliding(SlidingWindow::new(&args.params, args.quantity)),
        }
    }
}

impl<'a> Limiter<'a> {
    /// Reads this limiter's state from `source`, paired with it.
    // Inlined where the limiter is known, a single command's, the match folds away.
    #[inline(always)]
    pub fn read<'k, S: Source>(&self, source: &'k S) -> Result<Reading<'a, 'k>, Error> {
        Ok(match *self {
            Limiter::Throttle(gcra) => Reading::Throttle(gcra, source.integer()?),
            Limiter::Fixed(fixed) => Reading::Fixed(
                fixed,
                match source.integer()? {
                    // A count is never negative, and a window always ends.
                    Some(count) if count >= 0 => Some(OpenWindow {
                        count,
                        end_ms: source.expire_at_ms()?.ok_or(Error::CorruptState)?,
                    }),
                    Some(_) => return Err(Error::CorruptState),
                    None => None,
                },
            ),
            Limiter::Sliding(sliding) => Reading::Sliding(sliding, source.bytes()?),
            Limiter::Bucketed(bucketed) => Reading::Bucketed(bucketed, source.bytes()?),
            Limiter::Lease(lease, holder) => Reading::Lease(lease, holder, source.bytes()?),
            Limiter::Smooth(smooth) => Reading::Smooth(smooth, source.bytes()?),
        })
    }

    /// The same limiter asked for `quantity` units: what ATMOST decides with once it knows
    /// its grant. A lease and a smooth limiter grant no part of a request, and their commands
    /// refuse ATMOST before this is asked.
    pub fn taking(&self, quantity: i64) -> Result<Limiter<'a>, Error> {
        Ok(match *self {
            Limiter::Throttle(gcra) => Limiter::Throttle(gcra.taking(quantity)?),
            Limiter::Fixed(fixed) => Limiter::Fixed(fixed.taking(quantity)),
            Limiter::Sliding(sliding) => Limiter::Sliding(sliding.taking(quantity)),
            Limiter::Bucketed(bucketed) => Limiter::Bucketed(bucketed.taking(quantity)),
            Limiter::Lease(..) | Limiter::Smooth(_) => return Err(Error::Internal),
        })
    }

    /// Whether calls wait their turn in the key's line: CL.SMOOTH's reservations are their own
    /// order, made as its calls come.
    pub fn stands_in_line(&self) -> bool {
        !matches!(self, Limiter::Smooth(_))
    }

    /// Whether its key may hold the banned form (`BAN`): every rate limiter's may, a lease
    /// set's never.
    pub fn may_be_banned(&self) -> bool {
        !matches!(self, Limiter::Lease(..))
    }

    /// Whether a denied call's units count too (CL.FIXED's `COUNTDENIED`).
    pub fn counts_denied(&self) -> bool {
        matches!(self, Limiter::Fixed(fixed) if fixed.counts_denied())
    }
}

impl<'a> Reading<'a, '_> {
    /// Decides the request at `now` against what the key holds.
    #[inline(always)]
    pub fn decide(&self, now: Instant) -> Result<Verdict<'a>, Error> {
        match *self {
            Reading::Throttle(gcra, tat) => Ok(tat_verdict(gcra.decide(tat, now.ns))),
            Reading::Fixed(fixed, stored) => {
                let decision = fixed.decide(stored, now.ms);
                Ok(Verdict {
                    outcome: decision.outcome,
                    change: decision.new_window.map(|window| Change::Count {
                        count: window.count,
                        end_ms: window.end_ms,
                        opens: stored.is_none_or(|open| open.end_ms != window.end_ms),
                    }),
                })
            }
            Reading::Sliding(sliding, log) => {
                let decision = sliding
                    .decide(log, now.ms)
                    .map_err(|e| form_error(e, log, false))?;
                Ok(Verdict {
                    outcome: decision.outcome,
                    change: decision.append.map(Change::Log),
                })
            }
            Reading::Bucketed(bucketed, cells) => Ok(cells_verdict(
                bucketed
                    .decide(cells, now.ms)
                    .map_err(|e| form_error(e, cells, true))?,
            )),
            Reading::Lease(lease, Some(holder), set) => {
                let decision = lease.decide(set, holder, now.ms)?;
                let change = match (decision.change, decision.last_end_ms) {
                    (Some(change), Some(expire_at_ms)) => Some(Change::Lease {
                        holder,
                        change,
                        expire_at_ms,
                    }),
                    (None, _) => None,
                    (Some(_), None) => return Err(Error::Internal),
                };
                Ok(Verdict {
                    outcome: decision.outcome,
                    change,
                })
            }
            Reading::Lease(lease, None, set) => Ok(Verdict {
                outcome: lease.look(set, now.ms)?,
                change: None,
            }),
            Reading::Smooth(smooth, value) => {
                let decision = smooth.decide(value, now.ns)?;
                Ok(Verdict {
                    outcome: decision.outcome,
                    change: decision.write.map(Change::Smooth),
                })
            }
        }
    }

    /// Gives the request's units back at `now` (REFUND): what the limiter answers about its
    /// key after the refund, admitted, and the change, when anything moved. A refund that
    /// leaves a window as an untouched one clears the key. A lease is not a rate's units:
    /// CL.RELEASE gives it back, and a refund only looks at it; nor is a smooth limiter's
    /// reservation (CL.SMOOTH refuses REFUND by name), which a refund would only look at too.
    pub fn refund(&self, now: Instant) -> Result<Verdict<'a>, Error> {
        match *self {
            // A TAT moved back to now is an untouched limiter's, and its key expires at once;
            // it is written as every TAT is.
            Reading::Throttle(gcra, tat) => Ok(tat_verdict(gcra.refund(tat, now.ns))),
            Reading::Fixed(fixed, stored) => {
                let decision = fixed.refund(stored, now.ms);
                Ok(Verdict {
                    outcome: decision.outcome,
                    change: decision.new_window.map(|window| match window.count {
                        0 => Change::Clear(Cleared::Count),
                        count => Change::CountDown { count },
                    }),
                })
            }
            Reading::Bucketed(bucketed, cells) => Ok(cells_verdict(
                bucketed
                    .refund(cells, now.ms)
                    .map_err(|e| form_error(e, cells, true))?,
            )),
            Reading::Sliding(sliding, log) => {
                let refund = sliding
                    .refund(log, now.ms)
                    .map_err(|e| form_error(e, log, false))?;
                Ok(Verdict {
                    outcome: refund.outcome,
                    change: refund.change.map(|trim| match trim {
                        Trim::Keep { plan, expire_at_ms } => Change::Trim { plan, expire_at_ms },
                        Trim::Clear => Change::Clear(Cleared::Log),
                    }),
                })
            }
            Reading::Lease(..) | Reading::Smooth(..) => {
                let look = self.peek().decide(now)?;
                Ok(Verdict {
                    outcome: look.outcome.admitted(),
                    change: None,
                })
            }
        }
    }

    /// Answers `request` at `now`: decides it, or takes its refund.
    #[inline(always)]
    pub fn answer(&self, request: Request, now: Instant) -> Result<Verdict<'a>, Error> {
        if request.refund {
            self.refund(now)
        } else {
            self.decide(now)
        }
    }

    /// The most units, up to `most`, a call would be admitted with at `now` (ATMOST's grant):
    /// what a peek leaves, since each rate limiter's `remaining` is the largest quantity it
    /// admits at that instant. None for the limiters that grant no part of a request: a
    /// lease is one slot, and a smooth limiter admits any quantity when it is free.
    pub fn grant(&self, most: i64, now: Instant) -> Result<Option<i64>, Error> {
        match self {
            Reading::Lease(..) | Reading::Smooth(..) => Ok(None),
            _ => Ok(Some(
                self.peek()
                    .decide(now)?
                    .outcome
                    .remaining
                    .clamp(0, most.max(0)),
            )),
        }
    }

    /// The same limiter asked for `quantity` units on the same state (a test's shortcut for
    /// `Limiter::taking`); None for the limiters that grant no part of a request.
    #[cfg(test)]
    pub fn taking(&self, quantity: i64) -> Result<Option<Self>, Error> {
        Ok(Some(match *self {
            Reading::Throttle(gcra, tat) => Reading::Throttle(gcra.taking(quantity)?, tat),
            Reading::Fixed(fixed, stored) => Reading::Fixed(fixed.taking(quantity), stored),
            Reading::Sliding(sliding, log) => Reading::Sliding(sliding.taking(quantity), log),
            Reading::Bucketed(bucketed, cells) => {
                Reading::Bucketed(bucketed.taking(quantity), cells)
            }
            Reading::Lease(..) | Reading::Smooth(..) => return Ok(None),
        }))
    }

    /// The same limiter asked for nothing, on the same state: what it would answer about its
    /// key as it stands.
    pub fn peek(&self) -> Self {
        match *self {
            Reading::Throttle(gcra, tat) => Reading::Throttle(gcra.peek(), tat),
            Reading::Fixed(fixed, stored) => Reading::Fixed(fixed.peek(), stored),
            Reading::Sliding(sliding, log) => Reading::Sliding(sliding.peek(), log),
            Reading::Bucketed(bucketed, cells) => Reading::Bucketed(bucketed.peek(), cells),
            Reading::Lease(lease, _, set) => Reading::Lease(lease, None, set),
            Reading::Smooth(smooth, value) => Reading::Smooth(smooth.peek(), value),
        }
    }
}

/// A bucketed window's decision as a verdict: its cells written, or for a refund that gave
/// every unit back, the key cleared as the exact window's is.
fn cells_verdict<'a>(decision: buckets::Decision) -> Verdict<'a> {
    Verdict {
        outcome: decision.outcome,
        change: decision.change.map(|change| match change {
            CellsChange::Write(plan) => Change::Cells(plan),
            CellsChange::Clear => Change::Clear(Cleared::Log),
        }),
    }
}

/// A sliding window's key that its form cannot read is named for what it holds when it holds
/// the other form: the exact log or the cells. Looked at only once the value was refused.
fn form_error(error: Error, value: Option<&[u8]>, reads_cells: bool) -> Error {
    match (error, value) {
        (Error::CorruptState, Some(value)) if reads_cells => {
            if window::holds_log(value) {
                Error::WindowForm(None)
            } else {
                error
            }
        }
        (Error::CorruptState, Some(value)) => match buckets::cells_in(value) {
            Some(n) => Error::WindowForm(Some(n)),
            None => error,
        },
        _ => error,
    }
}

/// GCRA's decision as a verdict: a new TAT is stored, and the key expires at the first whole
/// millisecond at or after it.
fn tat_verdict<'a>(decision: gcra::Decision) -> Verdict<'a> {
    Verdict {
        outcome: decision.outcome,
        change: decision.new_tat.map(|tat| Change::Tat {
            tat,
            expire_at_ms: ceil_ms(tat),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{ThrottleParams, WindowParams};
    use proptest::prelude::*;

    /// Whether ATMOST's grant is the largest quantity the limiter admits at `now`: a call of
    /// `granted` units is admitted (when there are any) and one of `granted + 1` is not (when
    /// the call asked for more), as DRYRUNs of `n` and `n + 1` would answer.
    fn grant_is_the_largest_admitted(reading: &Reading, most: i64, now: Instant) {
        let granted = reading
            .grant(most, now)
            .expect("grants")
            .expect("a rate limiter");
        assert!((0..=most).contains(&granted), "{granted} of {most}");
        let admits = |n: i64| {
            let verdict = reading
                .taking(n)
                .expect("takes")
                .expect("a rate limiter")
                .decide(now)
                .expect("decides");
            verdict.admitted()
        };
        if granted > 0 {
            assert!(admits(granted), "{granted} of {most} is not admitted");
        }
        if granted < most {
            assert!(
                !admits(granted + 1),
                "{} of {most} is admitted too",
                granted + 1
            );
        }
    }

    /// A log or cells after admitted calls of these sizes at these instants, as the limiter
    /// writes them.
    fn history(
        reading: impl Fn(Option<&[u8]>) -> Reading<'static, '_>,
        calls: &[(i64, i64)],
    ) -> Vec<u8> {
        let mut bytes: Vec<u8> = Vec::new();
        for &(at_ms, quantity) in calls {
            let stored = (!bytes.is_empty()).then(|| bytes.clone());
            let read = reading(stored.as_deref());
            let verdict = read
                .taking(quantity)
                .expect("takes")
                .expect("a rate limiter")
                .decide(Instant::from_ms(at_ms))
                .expect("decides");
            match verdict.change {
                Some(Change::Log(append)) => append.apply(&mut bytes).expect("appends"),
                Some(Change::Cells(plan)) => plan.apply(&mut bytes).expect("writes cells"),
                _ => {}
            }
        }
        bytes
    }

    proptest! {
        #[test]
        fn gcra_grants_the_largest_quantity_it_admits(
            max_burst in 0i64..20, count in 1i64..20, period_s in 1i64..100,
            ahead in -50_000_000_000i64..200_000_000_000, most in 0i64..40,
        ) {
            let params = ThrottleParams { max_burst, count, period_ns: period_s * 1_000_000_000 };
            let gcra = Gcra::new(&params, most).expect("valid parameters");
            let now = Instant::from_ns(1_000_000_000_000);
            grant_is_the_largest_admitted(&Reading::Throttle(gcra, None), most, now);
            grant_is_the_largest_admitted(&Reading::Throttle(gcra, Some(now.ns + ahead)), most, now);
        }

        #[test]
        fn a_fixed_window_grants_the_largest_quantity_it_admits(
            limit in 1i64..20, period_ms in 1i64..10_000, count in 0i64..25,
            ends_in in -5_000i64..10_000, most in 0i64..40,
        ) {
            let params = WindowParams { limit, period_ms };
            let fixed = FixedWindow::new(&params, most, false);
            let now = Instant::from_ms(1_000_000);
            let open = OpenWindow { count, end_ms: now.ms + ends_in };
            grant_is_the_largest_admitted(&Reading::Fixed(fixed, None), most, now);
            grant_is_the_largest_admitted(&Reading::Fixed(fixed, Some(open)), most, now);
        }

        #[test]
        fn the_sliding_windows_grant_the_largest_quantity_they_admit(
            limit in 1i64..20, cells in prop::sample::select(vec![2i64, 4, 5, 10]),
            calls in prop::collection::vec((0i64..3_000, 1i64..6), 0..12),
            later in 0i64..3_000, most in 0i64..40,
        ) {
            let params = WindowParams { limit, period_ms: 1_000 };
            let mut at = 1_000_000;
            let timed: Vec<(i64, i64)> = calls.iter().map(|&(gap, quantity)| {
                at += gap;
                (at, quantity)
            }).collect();
            let now = Instant::from_ms(at + later);
            let exact = SlidingWindow::new(&params, most);
            let log = history(|stored| Reading::Sliding(exact, stored), &timed);
            let stored = (!log.is_empty()).then_some(&log[..]);
            grant_is_the_largest_admitted(&Reading::Sliding(exact, stored), most, now);
            let bucketed = BucketedWindow::new(&params, cells, most);
            let cells = history(|stored| Reading::Bucketed(bucketed, stored), &timed);
            let stored = (!cells.is_empty()).then_some(&cells[..]);
            grant_is_the_largest_admitted(&Reading::Bucketed(bucketed, stored), most, now);
        }
    }

    #[test]
    fn a_call_held_back_by_waiters_takes_nothing() {
        let params = crate::args::ThrottleParams {
            max_burst: 4,
            count: 1,
            period_ns: 1_000_000_000,
        };
        let gcra = Gcra::new(&params, 1).expect("valid parameters");
        let now = Instant::from_ns(10_000_000_000);
        let empty = Reading::Throttle(gcra, None);
        let admitted = empty.decide(now).expect("decides");
        assert!(admitted.admitted());
        let peek = || Ok(empty.peek().decide(now)?.outcome);
        let held = admitted.held_back(3_000, false, peek).expect("holds");
        assert_eq!(held.change, None);
        assert!(held.outcome.limited);
        assert_eq!(held.outcome.remaining, 0);
        assert_eq!(held.outcome.retry_after_ns, Some(3_000));
        assert_eq!(held.outcome.reset_after_ns, 0);

        let full = Reading::Throttle(gcra, Some(now.ns + 5_000_000_000));
        let denied = full.decide(now).expect("decides");
        let wait = denied.outcome.retry_after_ns.expect("fits later");
        let held = denied.held_back(wait + 7, false, peek).expect("holds");
        assert_eq!(held.outcome.retry_after_ns, Some(wait + 7));
        let held = denied.held_back(0, false, peek).expect("holds");
        assert_eq!(held.outcome, denied.outcome);
    }
}

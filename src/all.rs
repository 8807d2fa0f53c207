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

use crate::args::TimeUnit;
use crate::error::Error;
use crate::limiter::{Change, Instant, Limiter, Stored, Verdict};
use crate::reply::Outcome;

/// The verdicts of every limiter, in key order, and what they add up to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    verdicts: Vec<Verdict>,
    pub admitted: bool,
    /// The index of the limiter whose answer stands for all.
    pub binding: usize,
}

/// Decides the request at `now` over `limiters`, the i-th against `stored[i]`, and picks the
/// binding answer in `unit`.
pub fn decide(
    limiters: &[Limiter],
    stored: &[Stored],
    now: Instant,
    unit: TimeUnit,
) -> Result<Decision, Error> {
    if limiters.len() != stored.len() || limiters.is_empty() {
        return Err(Error::Internal);
    }
    let verdicts = limiters
        .iter()
        .zip(stored)
        .map(|(limiter, stored)| limiter.decide(stored, now))
        .collect::<Result<Vec<Verdict>, Error>>()?;
    let admitted = verdicts.iter().all(Verdict::admitted);
    let replies = verdicts
        .iter()
        .map(|verdict| verdict.outcome.to_reply(unit));
    let binding = if admitted {
        first_min_by_key(replies, |reply| reply[2])
    } else {
        // Denials only; −1 waits longest. Admitting limiters rank below every denial.
        first_min_by_key(replies, |reply| match (reply[0], reply[3]) {
            (0, _) => 1,
            (_, -1) => i64::MIN,
            (_, wait) => -wait,
        })
    };
    Ok(Decision {
        verdicts,
        admitted,
        binding,
    })
}

impl Decision {
    /// The answer that stands for all.
    pub fn binding_outcome(&self) -> Outcome {
        self.verdicts
            .get(self.binding)
            .map_or_else(|| Outcome::denied(0, 0, None, 0), |verdict| verdict.outcome)
    }

    /// What to write, by key index: every limiter's change when the request was admitted,
    /// nothing otherwise (nor for a peek).
    pub fn changes(&self) -> impl Iterator<Item = (usize, Change)> + '_ {
        self.verdicts
            .iter()
            .enumerate()
            .filter(|_| self.admitted)
            .filter_map(|(index, verdict)| verdict.change.map(|change| (index, change)))
    }

    /// Every limiter's answer, in key order, with its state as the key stands after the call:
    /// its own verdict when the request was admitted or when it denied; when another denied,
    /// it took nothing, and answers as a peek would.
    pub fn detail(
        &self,
        limiters: &[Limiter],
        stored: &[Stored],
        now: Instant,
    ) -> Result<Vec<Outcome>, Error> {
        self.verdicts
            .iter()
            .zip(limiters.iter().zip(stored))
            .map(|(verdict, (limiter, stored))| {
                if self.admitted || !verdict.admitted() {
                    Ok(verdict.outcome)
                } else {
                    limiter.peek().decide(stored, now).map(|peek| peek.outcome)
                }
            })
            .collect()
    }
}

/// The index of the first item with the smallest key.
fn first_min_by_key(
    items: impl Iterator<Item = [i64; 5]>,
    key: impl Fn(&[i64; 5]) -> i64,
) -> usize {
    let mut best: Option<(usize, i64)> = None;
    for (index, item) in items.enumerate() {
        let rank = key(&item);
        if best.is_none_or(|(_, best_rank)| rank < best_rank) {
            best = Some((index, rank));
        }
    }
    best.map_or(0, |(index, _)| index)
}

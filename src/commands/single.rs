//! The single-key limiters' bodies: `CL.THROTTLE`, `CL.FIXED`, `CL.WINDOW` and `CL.LEASE`,
//! each parse → read → decide → write → propagate → notify on its one key.

use crate::args::{self, WindowArgs};
use crate::commands::answer::Answer;
use crate::commands::call::Call;
use crate::commands::state::{decide_in_line, notify, write};
use crate::error::Error;
use crate::gcra::Gcra;
use crate::lease::Lease;
use crate::limiter::Limiter;
use crate::lines::Turn;
use crate::outcome::Outcome;
use crate::propagate::Propagate;
use crate::time::Instant;

/// The most arguments a single-key command takes, its name included
/// (`CL.THROTTLE key max_burst count period quantity MS BLOCK milliseconds`; the replication
/// form of the windows, with `AT unix-ms`, never has `BLOCK`).
pub const MAX_ARGS: usize = 9;

/// A single-key command's call: its key, and the arguments after it.
pub type SingleCall<'a> = Call<'a, MAX_ARGS>;

impl SingleCall<'_> {
    pub fn params(&self) -> &[&[u8]] {
        self.args().get(1..).unwrap_or(&[])
    }
}

/// `CL.THROTTLE key max_burst count period [quantity] [MS] [BLOCK milliseconds]`
pub fn run_throttle(call: &SingleCall, turn: Turn) -> Result<Answer, Error> {
    let (params, block_ms) = args::block(call.params())?;
    let args = args::throttle(params)?;
    let limiter = Limiter::Throttle(Gcra::new(&args)?);
    let now = call.instant(None)?;
    // Propagated as the SET it amounts to, not as itself.
    let outcome = single(call, limiter, args.quantity, now, Propagate::Verbatim, turn)?;
    Ok(Answer::single(outcome, args.quantity, args.unit, block_ms))
}

/// A window command: `key limit period [quantity] [MS] [AT unix-ms] [BLOCK milliseconds]`,
/// on one limiter. It propagates as itself with its instant, without BLOCK, or, replayed with
/// an instant already, as it came.
#[inline(always)]
pub fn run_window(
    call: &SingleCall,
    turn: Turn,
    parse: fn(&[&[u8]]) -> Result<WindowArgs, Error>,
    limiter: fn(&WindowArgs) -> Limiter,
) -> Result<Answer, Error> {
    let (params, block_ms) = args::block(call.params())?;
    let args = parse(params)?;
    let now = call.instant(args.at_ms)?;
    let propagate = if args.at_ms.is_some() {
        Propagate::Verbatim
    } else {
        // The key and its parameters.
        Propagate::WithInstant(call.argv.get(1..2 + params.len()).ok_or(Error::Internal)?)
    };
    let outcome = single(call, limiter(&args), args.quantity, now, propagate, turn)?;
    Ok(Answer::single(outcome, args.quantity, args.unit, block_ms))
}

/// `CL.LEASE key limit lease_time holder [MS] [BLOCK milliseconds]`, and its replication form
/// with `AT unix-ms`. It propagates as the window commands do: as itself, without BLOCK, with
/// its instant.
pub fn run_lease(call: &SingleCall, turn: Turn) -> Result<Answer, Error> {
    let args = args::lease(call.params())?;
    let now = call.instant(args.at_ms)?;
    // The key, the parameters and the holder, then MS wherever the client put it.
    let (own, own_len) = call.args_at::<5>((0..4).chain(args.ms_at.map(|at| at + 1)))?;
    let propagate = if args.at_ms.is_some() {
        Propagate::Verbatim
    } else {
        Propagate::WithInstant(own.get(..own_len).ok_or(Error::Internal)?)
    };
    let limiter = Limiter::Lease(Lease::new(&args.params), Some(args.holder));
    let outcome = single(call, limiter, 1, now, propagate, turn)?;
    Ok(Answer::single(outcome, 1, args.unit, args.block_ms))
}

/// One limiter on the call's key: read, decide, and write what an admission changes, unless
/// waiters who came first hold the call back.
#[inline(always)]
fn single(
    call: &SingleCall,
    limiter: Limiter,
    quantity: i64,
    now: Instant,
    propagate: Propagate,
    turn: Turn,
) -> Result<Outcome, Error> {
    let (mut key, verdict) = decide_in_line(call.ctx, call.arg(0)?, &limiter, quantity, now, turn)?;
    if let Some(change) = verdict.change.filter(|_| turn.writes()) {
        write(call.ctx, &mut key, change, propagate, now)?;
        notify(&key, change);
    }
    Ok(verdict.outcome)
}

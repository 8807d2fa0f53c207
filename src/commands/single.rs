//! The single-key limiters' bodies: `CL.THROTTLE`, `CL.FIXED`, `CL.WINDOW`, `CL.LEASE` and
//! `CL.SMOOTH`, each parse → read → decide → write → propagate → notify on its one key.

use crate::args::{self, WindowArgs};
use crate::commands::answer::Answer;
use crate::commands::call::Call;
use crate::commands::state::{decide_in_line, notify, write};
use crate::error::Error;
use crate::gcra::Gcra;
use crate::lease::Lease;
use crate::limiter::{Change, Limiter, Request};
use crate::lines::Turn;
use crate::outcome::Outcome;
use crate::propagate::Propagate;
use crate::smooth::{Smooth, Timeout};
use crate::time::{Instant, MICROS_PER_MILLI};

/// The most arguments a single-key command takes, its name included
/// (`CL.WINDOW key limit period quantity BUCKETS n MS REFUND DRYRUN BLOCK timeout`,
/// which is refused for what it says, not for its length; the replication form of the
/// windows, with `AT unix-ms`, never has `BLOCK`).
pub const MAX_ARGS: usize = 12;

/// A single-key command's call: its key, and the arguments after it.
pub type SingleCall<'a> = Call<'a>;

impl SingleCall<'_> {
    pub fn params(&self) -> &[&[u8]] {
        self.args().get(1..).unwrap_or(&[])
    }
}

/// `CL.THROTTLE key max_burst count period [quantity] [MS] [REFUND] [DRYRUN]
/// [BLOCK timeout]`
pub fn run_throttle(call: &SingleCall, turn: Turn) -> Result<Answer, Error> {
    let args = args::throttle(call.params())?;
    let limiter = Limiter::Throttle(Gcra::new(&args.params, args.quantity)?);
    let now = call.instant(None)?;
    let request = Request {
        quantity: args.quantity,
        refund: args.refund,
        dry_run: args.dry_run,
    };
    // Its changes go as the SET they amount to: it has no own form to pass.
    let (outcome, change) = single(call, limiter, request, now, None, turn)?;
    Ok(Answer::single(
        outcome,
        request,
        change.is_some(),
        args.unit,
        args.block_ms,
    ))
}

/// `CL.SMOOTH key permits period [quantity] [MS] [BURST span] [WARMUP span [COLD factor]]
/// [DRYRUN] [BLOCK timeout]`: Guava's `tryAcquire(quantity, timeout)`. An admission reserves
/// at once, and is propagated as the SET it amounts to; with BLOCK, one that reserved a later
/// instant has its reply held until then. Where a call may not wait (a transaction, a script,
/// a replica), BLOCK is ignored: the call is `tryAcquire(quantity, 0)`. It stands in no line.
pub fn run_smooth(call: &SingleCall, turn: Turn) -> Result<Answer, Error> {
    let args = args::smooth(call.params())?;
    let timeout = match args.block_ms.filter(|_| call.caller.may_wait) {
        None => Timeout::Micros(0),
        Some(0) => Timeout::Forever,
        Some(ms) => Timeout::Micros(ms.saturating_mul(MICROS_PER_MILLI)),
    };
    let limiter = Limiter::Smooth(Smooth::new(&args.params, args.quantity, timeout));
    let now = call.instant(None)?;
    let request = Request {
        quantity: args.quantity,
        refund: false,
        dry_run: args.dry_run,
    };
    let (outcome, change) = single(call, limiter, request, now, None, turn)?;
    let reply_at_ns = match change {
        Some(Change::Smooth(write)) => write.reply_at_ns,
        _ => None,
    };
    Ok(Answer {
        reply_at_ns,
        ..Answer::single(outcome, request, change.is_some(), args.params.unit, None)
    })
}

/// A window command: `key limit period [quantity] [BUCKETS n] [MS] [REFUND] [DRYRUN]
/// [COUNTDENIED] [BLOCK timeout]` (BUCKETS CL.WINDOW's alone, COUNTDENIED CL.FIXED's), on
/// one limiter. It propagates as itself with its instant, without BLOCK, or, replayed with
/// an instant already (`AT unix-ms`), as it came.
#[inline(always)]
pub fn run_window(
    call: &SingleCall,
    turn: Turn,
    parse: fn(&[&[u8]]) -> Result<WindowArgs, Error>,
    limiter: fn(&WindowArgs) -> Limiter,
) -> Result<Answer, Error> {
    let args = parse(call.params())?;
    let now = call.instant(args.at_ms)?;
    // The key and every argument but `BLOCK timeout`, REFUND among them.
    let without_block;
    let propagate = match args.block_at {
        _ if args.at_ms.is_some() => Propagate::Verbatim,
        None => Propagate::WithInstant(call.argv.get(1..).ok_or(Error::Internal)?),
        Some(block) => {
            // Counted after the command's name: the key first.
            let block = block + 1;
            let (own, own_len) = call.args_at::<MAX_ARGS>(
                (0..call.args().len()).filter(|&at| at != block && at != block + 1),
            )?;
            without_block = own;
            Propagate::WithInstant(without_block.get(..own_len).ok_or(Error::Internal)?)
        }
    };
    let request = Request {
        quantity: args.quantity,
        refund: args.refund,
        dry_run: args.dry_run,
    };
    let (outcome, change) = single(call, limiter(&args), request, now, Some(propagate), turn)?;
    Ok(Answer::single(
        outcome,
        request,
        change.is_some(),
        args.unit,
        args.block_ms,
    ))
}

/// `CL.LEASE key limit lease_time holder [MS] [DRYRUN] [BLOCK timeout]`, and its
/// replication form with `AT unix-ms`. It propagates as the window commands do: as itself,
/// without BLOCK, with its instant.
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
    let request = Request {
        quantity: 1,
        refund: false,
        dry_run: args.dry_run,
    };
    let (outcome, change) = single(call, limiter, request, now, Some(propagate), turn)?;
    Ok(Answer::single(
        outcome,
        request,
        change.is_some(),
        args.unit,
        args.block_ms,
    ))
}

/// One limiter on the call's key: read, answer the request, and write what it changes, unless
/// waiters who came first hold the call back; `own` is the call's own form, for changes that
/// propagate as their command. Returns the change it wrote, if any.
#[inline(always)]
fn single<'a>(
    call: &SingleCall,
    limiter: Limiter<'a>,
    request: Request,
    now: Instant,
    own: Option<Propagate>,
    turn: Turn,
) -> Result<(Outcome, Option<Change<'a>>), Error> {
    let (mut key, verdict) = decide_in_line(call.ctx, call.arg(0)?, &limiter, request, now, turn)?;
    let writes = turn.writes() && request.writes();
    let change = verdict.change.as_ref().filter(|_| writes);
    if let Some(change) = change {
        write(call.ctx, &mut key, change, own, now)?;
        notify(&key, change);
    }
    Ok((verdict.outcome, change.copied()))
}

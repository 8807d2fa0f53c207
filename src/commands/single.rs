//! The single-key limiters' bodies: `CL.THROTTLE`, `CL.FIXED`, `CL.WINDOW`, `CL.LEASE` and
//! `CL.SMOOTH`, each parse → read → decide → write → propagate → notify on its one key.

use crate::args::{self, ThrottleArgs, WindowArgs};
use crate::commands::answer::Answer;
use crate::commands::call::Call;
use crate::commands::state::{
    ban, decide_in_line, grant, hand_over_looks, notify, open, unwrap, write, written, BanStep,
};
use crate::counters::{Banning, BANS};
use crate::error::Error;
use crate::gcra::Gcra;
use crate::lease::Lease;
use crate::limiter::{Change, Limiter, Request, Verdict};
use crate::lines::Turn;
use crate::propagate::Propagate;
use crate::smooth::{Smooth, Timeout};
use crate::store::{Event, Key};
use crate::strings::OwnedString;
use crate::time::{Instant, TimeUnit, MICROS_PER_MILLI};

/// The most arguments a single-key command takes, its name included: the replication form
/// `CL.FIXED key limit period quantity MS COUNTDENIED ALIGN OFFSET minutes BAN lockout AT <unix-ms>`
/// (a client's call has no AT, and any longer one is refused for what it says, not for its
/// length).
pub const MAX_ARGS: usize = 14;

/// A single-key command's call: its key, and the arguments after it.
pub type SingleCall<'a> = Call<'a>;

impl SingleCall<'_> {
    pub fn params(&self) -> &[&[u8]] {
        self.args().get(1..).unwrap_or(&[])
    }
}

/// `CL.THROTTLE key max_burst count period [quantity] [MS] [REFUND] [DRYRUN]
/// [BLOCK timeout]`
pub fn run_throttle<const THOROUGH: bool>(call: &SingleCall, turn: Turn) -> Result<Answer, Error> {
    let args = args::throttle(call.params())?;
    let limiter = Limiter::Throttle(Gcra::new(&args.params, gcra_quantity(&args))?);
    let now = call.instant(None)?;
    let request = Request {
        quantity: args.quantity,
        refund: args.refund,
        dry_run: args.dry_run,
    };
    let mut decided = decide::<THOROUGH>(
        call,
        limiter,
        (request, args.ban_ms),
        args.at_most,
        now,
        turn,
    )?;
    // Its changes go as the SET they amount to: it has no own form to pass.
    let change = commit(call, &mut decided, request, None, now, turn)?;
    Ok(answered(
        &decided,
        request,
        change.is_some(),
        args.unit,
        args.block_ms,
    ))
}

/// The quantity a GCRA is built for: with ATMOST, the quantity is a cap, and no call is ever
/// granted more than the limit, so a cap past it is no error.
pub fn gcra_quantity(args: &ThrottleArgs) -> i64 {
    if args.at_most {
        args.quantity.min(args.params.max_burst.saturating_add(1))
    } else {
        args.quantity
    }
}

/// `CL.SMOOTH key permits period [quantity] [MS] [BURST span] [WARMUP span [COLD factor]]
/// [DRYRUN] [BLOCK timeout]`: Guava's `tryAcquire(quantity, timeout)`. An admission reserves
/// at once, and is propagated as the SET it amounts to; with BLOCK, one that reserved a later
/// instant has its reply held until then. Where a call may not wait (a transaction, a script,
/// a replica), BLOCK is ignored: the call is `tryAcquire(quantity, 0)`. It stands in no line.
pub fn run_smooth<const THOROUGH: bool>(call: &SingleCall, turn: Turn) -> Result<Answer, Error> {
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
    let mut decided = decide::<THOROUGH>(call, limiter, (request, args.ban_ms), false, now, turn)?;
    let change = commit(call, &mut decided, request, None, now, turn)?;
    let reply_at_ns = match change {
        Some(Change::Smooth(write)) => write.reply_at_ns,
        _ => None,
    };
    Ok(Answer {
        reply_at_ns,
        ..answered(&decided, request, change.is_some(), args.params.unit, None)
    })
}

/// A window command: `key limit period [quantity] [BUCKETS n] [MS] [REFUND] [DRYRUN]
/// [COUNTDENIED] [ATMOST] [BLOCK timeout]` (BUCKETS CL.WINDOW's alone, COUNTDENIED
/// CL.FIXED's), on one limiter. It propagates as itself with its instant, without BLOCK, and
/// with ATMOST as the plain admission of what it was granted; or, replayed with an instant
/// already (`AT unix-ms`), as it came.
#[inline(always)]
pub fn run_window<const THOROUGH: bool>(
    call: &SingleCall,
    turn: Turn,
    parse: fn(&[&[u8]]) -> Result<WindowArgs, Error>,
    limiter: fn(&WindowArgs) -> Limiter,
) -> Result<Answer, Error> {
    let args = parse(call.params())?;
    let now = call.instant(args.at_ms)?;
    let request = Request {
        quantity: args.quantity,
        refund: args.refund,
        dry_run: args.dry_run,
    };
    let at_most = args.at_most_at.is_some();
    let mut decided = decide::<THOROUGH>(
        call,
        limiter(&args),
        (request, args.ban_ms),
        at_most,
        now,
        turn,
    )?;
    // The made quantity of a grant, and the call's own arguments, live until the write.
    let granted_text;
    let own_args;
    let propagate = match (args.block_at, args.at_most_at) {
        _ if args.at_ms.is_some() => Propagate::Verbatim,
        (None, None) => Propagate::WithInstant(call.argv.get(1..).ok_or(Error::Internal)?),
        (block, at_most) => {
            // Counted after the command's name, the key first: the key and the two
            // parameters, the grant in place of the quantity, then every option but BLOCK
            // and ATMOST.
            let (block, at_most) = (block.map(|at| at + 1), at_most.map(|at| at + 1));
            let quantity = (at_most.is_some() && args.quantity_given).then_some(3);
            let dropped = |at| {
                Some(at) == quantity
                    || Some(at) == at_most
                    || block.is_some_and(|block| at == block || at == block + 1)
            };
            let mut own = [std::ptr::null_mut(); MAX_ARGS];
            let mut len = 0;
            let mut push = |string| -> Result<(), Error> {
                *own.get_mut(len).ok_or(Error::Internal)? = string;
                len += 1;
                Ok(())
            };
            for at in 0..3 {
                push(call.arg(at)?)?;
            }
            if let Some(granted) = decided.granted.filter(|_| at_most.is_some()) {
                granted_text = OwnedString::integer(granted)?;
                push(granted_text.as_ptr())?;
            }
            for at in (3..call.args().len()).filter(|&at| !dropped(at)) {
                push(call.arg(at)?)?;
            }
            own_args = own;
            Propagate::WithInstant(own_args.get(..len).ok_or(Error::Internal)?)
        }
    };
    let change = commit(call, &mut decided, request, Some(propagate), now, turn)?;
    Ok(answered(
        &decided,
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
    // Plain, and never handed over (state::looks_further leaves CL.LEASE out): its request
    // takes one slot, never a look, and a lease set is never banned.
    let mut decided = decide::<false>(call, limiter, (request, None), false, now, turn)?;
    let change = commit(call, &mut decided, request, Some(propagate), now, turn)?;
    Ok(answered(
        &decided,
        request,
        change.is_some(),
        args.unit,
        args.block_ms,
    ))
}

/// A call's decision on its one key, before anything is written.
struct Decided<'a> {
    key: Key,
    verdict: Verdict<'a>,
    /// With ATMOST, the units the verdict takes: 0 when it takes none.
    granted: Option<i64>,
    /// The key holds a ban that is over, and the ban this call makes.
    ban: BanStep,
}

/// One limiter on the call's key: read, and answer the request, unless waiters who came
/// first hold the call back. With ATMOST (`at_most`) the limiter is asked for its grant, the
/// most it admits now up to the call's quantity, or for one unit when none fits, so that its
/// denial says when one will.
#[inline(always)]
fn decide<'a, const THOROUGH: bool>(
    call: &SingleCall,
    limiter: Limiter<'a>,
    (request, ban_ms): (Request, Option<i64>),
    at_most: bool,
    now: Instant,
    turn: Turn,
) -> Result<Decided<'a>, Error> {
    let name = call.arg(0)?;
    hand_over_looks::<THOROUGH>(request)?;
    let key = open(call.ctx, name, request)?;
    // A look with ATMOST is a look, granted nothing.
    let (limiter, most) = if at_most && !request.peeks() {
        let granted = grant(limiter, &key, request.quantity, now)?;
        (limiter.taking(granted.max(1))?, Some(granted))
    } else {
        (limiter, None)
    };
    let mut ban = BanStep::default();
    let verdict = decide_in_line::<THOROUGH>(
        call.ctx, name, &key, &limiter, request, now, turn, ban_ms, &mut ban,
    )?;
    let granted = match most {
        Some(granted) if verdict.admitted() => Some(granted),
        _ if at_most => Some(0),
        _ => None,
    };
    Ok(Decided {
        key,
        verdict,
        granted,
        ban,
    })
}

/// A single-key call's answer, with its grant when it asked ATMOST. `changed` says whether
/// the call wrote its key.
#[inline(always)]
fn answered(
    decided: &Decided,
    request: Request,
    changed: bool,
    unit: TimeUnit,
    block_ms: Option<i64>,
) -> Answer {
    Answer {
        granted: decided.granted,
        ..Answer::single(decided.verdict.outcome, request, changed, unit, block_ms)
    }
}

/// Writes what a decision changes, if the call may write; `own` is the call's own form, for
/// changes that propagate as their command. Returns the change it wrote, if any.
#[inline(always)]
fn commit<'a>(
    call: &SingleCall,
    decided: &mut Decided<'a>,
    request: Request,
    own: Option<Propagate>,
    now: Instant,
    turn: Turn,
) -> Result<Option<Change<'a>>, Error> {
    let writes = turn.writes() && request.writes();
    let change = decided.verdict.change.filter(|_| writes);
    if let Some(change) = change.as_ref() {
        if decided.ban.wrapped {
            unwrap(call.ctx, &mut decided.key, now).map_err(written)?;
        }
        write(call.ctx, &mut decided.key, change, own, now).map_err(written)?;
        notify(&decided.key, change);
    }
    if let Some(until_ms) = decided.ban.bans_until_ms {
        ban(call.ctx, &mut decided.key, until_ms, now).map_err(written)?;
        decided.key.notify(Event::Ban);
        BANS.record(Banning::Banned);
    }
    Ok(change)
}

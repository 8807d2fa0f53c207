//! `CL.ALL`'s body: several limiters decided at one instant, all or nothing (the rule is
//! all.rs's), each key written as its own command would write it.

use redis_module::raw;

use crate::all::{self, Combined};
use crate::all_args::{self, LimiterArgs};
use crate::args::WindowArgs;
use crate::commands::answer::{Answer, Reply, Wait};
use crate::commands::call::Call;
use crate::commands::state::{decide_in_line, notify, peek, write};
use crate::counters::Counted;
use crate::error::Error;
use crate::ffi::log_warning;
use crate::fixed::FixedWindow;
use crate::gcra::Gcra;
use crate::lease::Lease;
use crate::limiter::{Limiter, Request, Verdict};
use crate::lines::Turn;
use crate::outcome::Outcome;
use crate::propagate::Propagate;
use crate::store::Key;
use crate::time::Instant;

/// The most arguments CL.ALL takes: its name, numkeys, 16 keys, 16 limiters of up to five
/// words (`WINDOW limit period BUCKETS n`), `QUANTITY quantity`, `MS`, `REFUND`, `DRYRUN`,
/// `DETAIL`, `HOLDER holder` and `BLOCK timeout`.
pub const MAX_ALL_ARGS: usize = 2 + all_args::MAX_KEYS * 6 + 10;

/// CL.ALL's body. Every limiter is built, then every key read and decided, and what each
/// write will propagate gathered, before any key is written: an error on any argument or
/// key stops the call with nothing changed, and nothing after the first write can.
pub fn run_all(call: &Call, turn: Turn) -> Result<Answer, Error> {
    let args = all_args::all(call.args())?;
    // A lease is held by the call's holder; asked for nothing, it only looks.
    let holder = args
        .holder
        .map(|(holder, _)| holder)
        .filter(|_| args.quantity != 0);
    let mut limiters = [None; all_args::MAX_KEYS];
    for (limiter, spec) in limiters.iter_mut().zip(&args.limiters) {
        *limiter = Some(limiter_of(&spec.args, holder)?);
    }
    let now = call.instant(None)?;
    let request = request_of(&args);
    let mut entries = Vec::with_capacity(args.limiters.len());
    for (index, (spec, limiter)) in args.limiters.iter().zip(&limiters).enumerate() {
        let limiter = limiter.ok_or(Error::Internal)?;
        entries.push(Entry::decide(call, &args, index, spec, limiter, now, turn)?);
    }
    let combined = all::combine(entries.iter().map(|entry| &entry.verdict), args.unit);
    let reply = if args.detail {
        let mut replies = Vec::with_capacity(entries.len());
        for entry in &entries {
            let outcome = combined.detail(&entry.verdict, || entry.peek(now))?;
            replies.push(outcome.to_reply(args.unit));
        }
        Reply::Detail(replies)
    } else {
        let binding = entries.get(combined.binding).ok_or(Error::Internal)?;
        Reply::One(binding.verdict.outcome.to_reply(args.unit))
    };
    let changed = turn.writes()
        && request.writes()
        && entries
            .iter()
            .any(|entry| combined.change(&entry.verdict).is_some());
    if changed {
        write_all(call.ctx, &combined, &mut entries, now);
    }
    let fits_in_ns = all::fits_in_ns(entries.iter().map(|entry| &entry.verdict));
    // The keys follow numkeys.
    let keys = 2..2 + args.limiters.len();
    Ok(Answer {
        reply,
        counted: Counted::of(request, combined.admitted),
        wait: Wait::of(args.block_ms, !combined.admitted, fits_in_ns, keys.clone()),
        frees: (request.refund && changed).then_some(keys),
        reply_at_ns: None,
    })
}

/// Writes every key of a CL.ALL call that all its limiters admitted (nothing otherwise), then
/// fires their events. Once the first key is written the call has taken effect: a write that
/// fails after it (a defect: every failure on what the keys hold was decided before) does not
/// stop the others, is logged, and the client gets the decided reply. The events come after
/// every write, so that no listener runs while keys of the call are still to be written.
fn write_all(
    ctx: *mut raw::RedisModuleCtx,
    combined: &Combined,
    entries: &mut [Entry],
    now: Instant,
) {
    let mut written = [false; all_args::MAX_KEYS];
    for (entry, written) in entries.iter_mut().zip(written.iter_mut()) {
        if let Some(change) = combined.change(&entry.verdict) {
            let own = entry
                .own
                .as_ref()
                .and_then(|(args, len)| args.get(..*len))
                .map(Propagate::WithInstant);
            match write(ctx, &mut entry.key, &change, own, now) {
                Ok(()) => *written = true,
                Err(error) => log_warning(
                    ctx,
                    &format!(
                        "redis-cell: CL.ALL wrote some keys but not all: {}",
                        error.message()
                    ),
                ),
            }
        }
    }
    for (entry, &written) in entries.iter().zip(written.iter()) {
        if let Some(change) = entry.verdict.change.as_ref().filter(|_| written) {
            notify(&entry.key, change);
        }
    }
}

/// The most arguments a limiter's own command is propagated with: a WINDOW's key, two
/// parameters, the quantity, `BUCKETS n`, MS and REFUND.
const MAX_OWN_ARGS: usize = 8;

/// A limiter's own command, as it propagates: its arguments and how many there are.
type OwnArgs = ([*mut raw::RedisModuleString; MAX_OWN_ARGS], usize);

/// One key of a CL.ALL call: its limiter, the open key, the limiter's verdict, and the
/// arguments its own command would propagate with, for a limiter whose changes go as its
/// command (a THROTTLE limiter's go as the SET they amount to).
struct Entry<'a> {
    limiter: Limiter<'a>,
    key: Key,
    verdict: Verdict<'a>,
    own: Option<OwnArgs>,
}

impl<'a> Entry<'a> {
    /// Opens the call's `index`-th key and answers `request` with `limiter`, built from
    /// `spec`, on it.
    fn decide(
        call: &Call,
        args: &all_args::AllArgs,
        index: usize,
        spec: &all_args::LimiterSpec,
        limiter: Limiter<'a>,
        now: Instant,
        turn: Turn,
    ) -> Result<Entry<'a>, Error> {
        let name = call.arg(index + 1)?;
        let request = request_of(args);
        let (key, verdict) = decide_in_line(call.ctx, name, &limiter, request, now, turn)?;
        // The key and the limiter's parameters as the client gave them, then the shared
        // quantity (a lease: the holder), a WINDOW's `BUCKETS n`, MS and REFUND: the
        // arguments of the limiter's own command. A refund changes no lease, so a LEASE
        // limiter never propagates one.
        let quantity_or_holder = match spec.args {
            LimiterArgs::Lease(_) => args.holder.map(|(_, at)| at),
            _ => args.quantity_at,
        };
        let numbers = match spec.args {
            LimiterArgs::Window(WindowArgs {
                buckets: Some(_), ..
            }) => 2,
            _ => spec.params_len,
        };
        let own = match spec.args {
            LimiterArgs::Throttle(_) => None,
            _ => Some(
                call.args_at::<MAX_OWN_ARGS>(
                    std::iter::once(index + 1)
                        .chain(spec.params_at..spec.params_at + numbers)
                        .chain(quantity_or_holder)
                        .chain(spec.params_at + numbers..spec.params_at + spec.params_len)
                        .chain(args.ms_at)
                        .chain(args.refund_at),
                )?,
            ),
        };
        Ok(Entry {
            limiter,
            key,
            verdict,
            own,
        })
    }

    /// What the limiter answers about its key as it stands.
    fn peek(&self, now: Instant) -> Result<Outcome, Error> {
        peek(&self.limiter, &self.key, now)
    }
}

/// What a CL.ALL call asks of every limiter.
fn request_of(args: &all_args::AllArgs) -> Request {
    Request {
        quantity: args.quantity,
        refund: args.refund_at.is_some(),
        dry_run: args.dry_run,
    }
}

fn limiter_of<'a>(args: &LimiterArgs, holder: Option<&'a [u8]>) -> Result<Limiter<'a>, Error> {
    Ok(match args {
        LimiterArgs::Throttle(args) => Limiter::Throttle(Gcra::new(&args.params, args.quantity)?),
        LimiterArgs::Fixed(args) => Limiter::Fixed(FixedWindow::new(
            &args.params,
            args.quantity,
            args.count_denied,
        )),
        LimiterArgs::Window(args) => Limiter::sliding(args),
        LimiterArgs::Lease(params) => Limiter::Lease(Lease::new(params), holder),
    })
}

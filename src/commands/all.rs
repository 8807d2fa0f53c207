//! `CL.ALL`'s body: several limiters decided at one instant, all or nothing (the rule is
//! all.rs's), each key written as its own command would write it.

use redis_module::raw;

use crate::all::{self, Combined};
use crate::all_args::{self, LimiterArgs};
use crate::args::ThrottleArgs;
use crate::commands::answer::{Answer, Reply, Wait};
use crate::commands::call::Call;
use crate::commands::single::gcra_quantity;
use crate::commands::state::{
    ban, decide_in_line, grant, hand_over_looks, notify, open, peek, unwrap, write, BanStep,
};
use crate::counters::{Banning, Counted, BANS};
use crate::error::Error;
use crate::ffi::log_warning;
use crate::fixed::FixedWindow;
use crate::gcra::Gcra;
use crate::lease::Lease;
use crate::limiter::{Limiter, Request, Verdict};
use crate::lines::Turn;
use crate::outcome::Outcome;
use crate::propagate::Propagate;
use crate::store::{Event, Key};
use crate::strings::OwnedString;
use crate::time::Instant;

/// The most arguments CL.ALL takes: its name, numkeys, 16 keys, 16 limiters of up to six
/// words (`FIXED limit period ALIGN OFFSET minutes`), `QUANTITY quantity`, `MS`, `REFUND`,
/// `DRYRUN`, `DETAIL`, `HOLDER holder`, `ATMOST` and `BLOCK timeout`.
pub const MAX_ALL_ARGS: usize = 2 + all_args::MAX_KEYS * 7 + 11;

/// CL.ALL's body. Every limiter is built, then every key read and decided, before any key is
/// written: an error on any argument or key stops the call with nothing changed. What each
/// write propagates is made at the write, from positions the parse has checked: it can only
/// fail as a defect (`Error::Internal`), logged with the key left unwritten.
pub fn run_all<const THOROUGH: bool>(call: &Call, turn: Turn) -> Result<Answer, Error> {
    let args = all_args::all(call.args())?;
    // A lease is held by the call's holder; asked for nothing, it only looks.
    let holder = args
        .holder
        .map(|(holder, _)| holder)
        .filter(|_| args.quantity != 0);
    let mut limiters = [None; all_args::MAX_KEYS];
    for (limiter, spec) in limiters.iter_mut().zip(&args.limiters) {
        *limiter = Some(limiter_of(&spec.args, holder, args.at_most)?);
    }
    let now = call.instant(None)?;
    let request = request_of(&args);
    hand_over_looks::<THOROUGH>(request)?;
    // Each key is opened and read in key order, so that the first key's error is the one
    // answered. With ATMOST each is asked its grant as it is read, and decides once the least
    // of them is known: the most units every limiter admits now. A look is granted nothing.
    let at_most = args.at_most && !request.peeks();
    let mut entries = Vec::with_capacity(args.limiters.len());
    // ATMOST's grant as text, alive until the writes have propagated it.
    let mut granted_text = None;
    let granted = if at_most {
        let at = (now, turn);
        let most = decide_granted::<THOROUGH>(
            call,
            &args,
            &limiters,
            at,
            &mut entries,
            &mut granted_text,
        )?;
        Some(most)
    } else {
        for (index, limiter) in limiters.iter().take(args.limiters.len()).enumerate() {
            let limiter = limiter.ok_or(Error::Internal)?;
            let key = open(call.ctx, call.arg(index + 1)?, request)?;
            let at = Decide::plain(index, key, now, turn);
            Entry::decide::<THOROUGH>(call, &args, limiter, at, &mut entries)?;
        }
        None
    };
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
        write_all(call, &args, &combined, &mut entries, now);
    } else if !combined.admitted {
        ban_denying(call.ctx, &mut entries, now);
    }
    let fits_in_ns = all::fits_in_ns(entries.iter().map(|entry| &entry.verdict));
    // The keys follow numkeys.
    let keys = 2..2 + args.limiters.len();
    let counted = Counted::of(request, combined.admitted);
    // The keys whose limiters denied, for CL.TOP: a bit each, in key order.
    let denied_keys = if counted == Counted::Denied {
        denying(&entries)
    } else {
        0
    };
    Ok(Answer {
        reply,
        counted,
        wait: Wait::of(args.block_ms, !combined.admitted, fits_in_ns, keys.clone()),
        frees: (request.refund && changed).then_some(keys),
        reply_at_ns: None,
        granted: args
            .at_most
            .then(|| granted.filter(|_| combined.admitted).unwrap_or(0)),
        denied_keys,
    })
}

/// ATMOST's decisions: each key opened and asked its grant in key order, then every limiter
/// decides the least of them, the most units every limiter admits now; returns it. Out of
/// line: a call that names no ATMOST never comes here.
#[cold]
#[inline(never)]
fn decide_granted<'a, const THOROUGH: bool>(
    call: &Call,
    args: &all_args::AllArgs<'a>,
    limiters: &[Option<Limiter<'a>>],
    (now, turn): (Instant, Turn),
    entries: &mut Vec<Entry<'a>>,
    granted_text: &mut Option<OwnedString>,
) -> Result<i64, Error> {
    let request = request_of(args);
    let mut opened = Vec::with_capacity(args.limiters.len());
    let mut most = args.quantity;
    for (index, limiter) in limiters.iter().take(args.limiters.len()).enumerate() {
        let limiter = limiter.ok_or(Error::Internal)?;
        let key = open(call.ctx, call.arg(index + 1)?, request)?;
        most = most.min(grant(limiter, &key, most, now)?);
        opened.push(key);
    }
    // A grant propagates as each limiter's plain admission of it, in place of the quantity.
    if args.quantity_at.is_some() {
        *granted_text = Some(OwnedString::integer(most)?);
    }
    for (index, (key, limiter)) in opened.into_iter().zip(limiters).enumerate() {
        // None fits: asked for one unit, the denial says when one will.
        let limiter = limiter.ok_or(Error::Internal)?.taking(most.max(1))?;
        let at = Decide {
            quantity: granted_text.as_ref().map(OwnedString::as_ptr),
            ..Decide::plain(index, key, now, turn)
        };
        Entry::decide::<THOROUGH>(call, args, limiter, at, entries)?;
    }
    Ok(most)
}

/// With BAN, locks out each key whose limiter denied a call that could fit later (nothing is
/// written on the others). As write_all's, a write that fails is a defect: logged, and the
/// other keys banned still.
#[cold]
#[inline(never)]
fn ban_denying(ctx: *mut raw::RedisModuleCtx, entries: &mut [Entry], now: Instant) {
    for entry in entries.iter_mut() {
        let Some(until_ms) = entry.ban.bans_until_ms else {
            continue;
        };
        match ban(ctx, &mut entry.key, until_ms, now) {
            Ok(()) => {
                entry.key.notify(Event::Ban);
                BANS.record(Banning::Banned);
            }
            Err(error) => log_warning(
                ctx,
                &format!(
                    "redis-cell: CL.ALL could not ban a key: {}",
                    error.message()
                ),
            ),
        }
    }
}

/// A bit for each limiter that denied, in key order. Out of line: admissions never ask.
#[cold]
#[inline(never)]
fn denying(entries: &[Entry]) -> u16 {
    let mut mask = 0u16;
    for (index, entry) in entries.iter().enumerate() {
        if !entry.verdict.admitted() {
            mask |= 1u16.checked_shl(index as u32).unwrap_or(0);
        }
    }
    mask
}

/// Writes every key of a CL.ALL call that all its limiters admitted (nothing otherwise), then
/// fires their events. Once the first key is written the call has taken effect: a write that
/// fails after it (a defect: every failure on what the keys hold was decided before) does not
/// stop the others, is logged, and the client gets the decided reply. The events come after
/// every write, so that no listener runs while keys of the call are still to be written.
#[inline(always)]
fn write_all(
    call: &Call,
    args: &all_args::AllArgs,
    combined: &Combined,
    entries: &mut [Entry],
    now: Instant,
) {
    let ctx = call.ctx;
    let mut written = [false; all_args::MAX_KEYS];
    // One array for every key's own arguments, made again for each.
    let mut own_words = OwnArgs::new();
    let keys = entries.iter_mut().zip(&args.limiters).enumerate();
    for ((index, (entry, spec)), written) in keys.zip(written.iter_mut()) {
        if let Some(change) = combined.change(&entry.verdict) {
            let own = match spec.args {
                LimiterArgs::Throttle(_) => None,
                _ => match own_args(&mut own_words, call, args, (index, spec), entry.quantity) {
                    Ok(()) => Some(Propagate::WithInstant(own_words.made())),
                    Err(error) => {
                        log_unwritten(ctx, error);
                        continue;
                    }
                },
            };
            if entry.ban.wrapped {
                if let Err(error) = unwrap(ctx, &mut entry.key, now) {
                    log_unwritten(ctx, error);
                    continue;
                }
            }
            match write(ctx, &mut entry.key, &change, own, now) {
                Ok(()) => *written = true,
                Err(error) => log_unwritten(ctx, error),
            }
        }
    }
    for (entry, &written) in entries.iter().zip(written.iter()) {
        if let Some(change) = entry.verdict.change.as_ref().filter(|_| written) {
            notify(&entry.key, change);
        }
    }
}

#[cold]
#[inline(never)]
fn log_unwritten(ctx: *mut raw::RedisModuleCtx, error: Error) {
    log_warning(
        ctx,
        &format!(
            "redis-cell: CL.ALL wrote some keys but not all: {}",
            error.message()
        ),
    );
}

/// Makes in `own` the arguments the `index`-th limiter's own command propagates its change
/// with, for a limiter whose changes go as its command (a THROTTLE limiter's go as the SET
/// they amount to, and have none): the key and the parameters as the client gave them, then
/// the shared quantity (a lease: the holder; ATMOST: the grant's `quantity`), a WINDOW's
/// `BUCKETS n` or a FIXED's `ALIGN` and `OFFSET minutes`, MS and REFUND. A refund changes no
/// lease, so a LEASE limiter never propagates one. Made only for a key that is written.
fn own_args(
    own: &mut OwnArgs,
    call: &Call,
    args: &all_args::AllArgs,
    (index, spec): (usize, &all_args::LimiterSpec),
    quantity: Option<*mut raw::RedisModuleString>,
) -> Result<(), Error> {
    let quantity_or_holder = match spec.args {
        LimiterArgs::Lease(_) => args.holder.map(|(_, at)| at),
        _ => args.quantity_at,
    };
    let numbers = match spec.args {
        LimiterArgs::Fixed(_) | LimiterArgs::Window(_) => all_args::WINDOW_NUMBERS,
        _ => spec.params_len,
    };
    // Positions count after the command's name.
    let argv = call.argv.get(1..).unwrap_or_default();
    let at = |position: usize| argv.get(position).copied().ok_or(Error::Internal);
    let (numbers_end, params_end) = (spec.params_at + numbers, spec.params_at + spec.params_len);
    own.len = 0;
    own.gather(&[at(index + 1)?])?;
    own.gather(
        argv.get(spec.params_at..numbers_end)
            .ok_or(Error::Internal)?,
    )?;
    if let Some(position) = quantity_or_holder {
        own.gather(&[quantity.map_or_else(|| at(position), Ok)?])?;
    }
    own.gather(argv.get(numbers_end..params_end).ok_or(Error::Internal)?)?;
    for position in [args.ms_at, args.refund_at].into_iter().flatten() {
        own.gather(&[at(position)?])?;
    }
    Ok(())
}

/// The most arguments a limiter's own command is propagated with: a FIXED's key, two
/// parameters, the quantity, `ALIGN`, `OFFSET minutes`, MS and REFUND.
const MAX_OWN_ARGS: usize = 9;

/// A limiter's own command, as it propagates: its arguments, the first `len` of them made.
struct OwnArgs {
    args: [*mut raw::RedisModuleString; MAX_OWN_ARGS],
    len: usize,
}

impl OwnArgs {
    fn new() -> OwnArgs {
        OwnArgs {
            args: [std::ptr::null_mut(); MAX_OWN_ARGS],
            len: 0,
        }
    }

    /// Appends `more`: a word or two at a time, which a loop copies for less than a call.
    fn gather(&mut self, more: &[*mut raw::RedisModuleString]) -> Result<(), Error> {
        for &arg in more {
            *self.args.get_mut(self.len).ok_or(Error::Internal)? = arg;
            self.len += 1;
        }
        Ok(())
    }

    fn made(&self) -> &[*mut raw::RedisModuleString] {
        self.args.get(..self.len).unwrap_or_default()
    }
}

/// One key of a CL.ALL call: its limiter, the open key and the limiter's verdict.
struct Entry<'a> {
    limiter: Limiter<'a>,
    key: Key,
    verdict: Verdict<'a>,
    /// The key holds a ban that is over, unwrapped before a change is written; with BAN, the
    /// lockout this key's limiter's denial makes, if the call is denied.
    ban: BanStep,
    /// An ATMOST grant's made text, which the limiter's own command propagates with in place
    /// of the call's quantity.
    quantity: Option<*mut raw::RedisModuleString>,
}

/// Where one of a CL.ALL call's limiters decides: the call's `index`-th key, opened, at this
/// instant and turn; `quantity` is a grant's made text, which its own command propagates
/// with in place of the call's quantity.
struct Decide {
    index: usize,
    key: Key,
    quantity: Option<*mut raw::RedisModuleString>,
    now: Instant,
    turn: Turn,
}

impl Decide {
    /// A key's decision, with no grant to propagate.
    fn plain(index: usize, key: Key, now: Instant, turn: Turn) -> Decide {
        Decide {
            index,
            key,
            quantity: None,
            now,
            turn,
        }
    }
}

impl<'a> Entry<'a> {
    /// Answers the call's request with `limiter` on its open key, into `entries`: made in
    /// place, where a returned entry (352 bytes) was moved twice.
    fn decide<const THOROUGH: bool>(
        call: &Call,
        args: &all_args::AllArgs,
        limiter: Limiter<'a>,
        at: Decide,
        entries: &mut Vec<Entry<'a>>,
    ) -> Result<(), Error> {
        let Decide {
            index,
            key,
            quantity,
            now,
            turn,
        } = at;
        let name = call.arg(index + 1)?;
        let request = request_of(args);
        let mut ban = BanStep::default();
        let verdict = decide_in_line::<THOROUGH>(
            call.ctx,
            name,
            &key,
            &limiter,
            request,
            now,
            turn,
            args.ban_ms,
            &mut ban,
        )?;
        entries.push(Entry {
            limiter,
            key,
            verdict,
            ban,
            quantity,
        });
        Ok(())
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

#[inline(always)]
fn limiter_of<'a>(
    args: &LimiterArgs,
    holder: Option<&'a [u8]>,
    at_most: bool,
) -> Result<Limiter<'a>, Error> {
    Ok(match *args {
        LimiterArgs::Throttle(args) => Limiter::Throttle(Gcra::new(
            &args.params,
            gcra_quantity(&ThrottleArgs { at_most, ..args }),
        )?),
        LimiterArgs::Fixed(args) => Limiter::Fixed(
            FixedWindow::new(&args.params, args.quantity, args.count_denied)
                .laid(args.laid, args.offset_minutes),
        ),
        LimiterArgs::Window(ref args) => Limiter::sliding(args),
        LimiterArgs::Lease(ref params) => Limiter::Lease(Lease::new(params), holder),
    })
}

//! A limiter's state in its key: opened, read, decided in the key's line, written and
//! propagated as the limiter's own command does, and announced. The steps every command body
//! takes for each of its keys.

use std::ffi::CStr;

use redis_module::raw;

use crate::ban::{self, Banned};
use crate::command::Command;
use crate::counters::{Banning, BANS};
use crate::error::Error;
use crate::fault::{self, Fault};
use crate::ffi::string_bytes;
use crate::lease;
use crate::limiter::{Change, Cleared, Limiter, Request, Source, Verdict};
use crate::lines::{self, Turn};
use crate::outcome::Outcome;
use crate::propagate::{replicate_del, replicate_set_pxat, replicate_window, Propagate};
use crate::store::{Access, Event, Expiry, Key, Written};
use crate::time::Instant;

/// Opens the key a call with `request` decides on: a look read-only, as a read would (a
/// keyspace hit or miss counted, `keymiss` fired on a missing key); a dry run for writing,
/// as its call would, which counts neither.
#[inline(always)]
pub fn open(
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    request: Request,
) -> Result<Key, Error> {
    if cfg!(debug_assertions) {
        // SAFETY: name is a live argument string.
        fault::inject(
            Fault::Body,
            unsafe { string_bytes(name) }.unwrap_or_default(),
        );
    }
    let access = if request.peeks() {
        Access::Read
    } else {
        Access::Write
    };
    Key::open(ctx, name, access)
}

/// ATMOST's grant on an open key: the most units, up to `most`, that `limiter` admits now;
/// none while the key is banned.
pub fn grant(limiter: Limiter, key: &Key, most: i64, now: Instant) -> Result<i64, Error> {
    let granted = match limiter
        .read(key)
        .and_then(|reading| reading.grant(most, now))
    {
        Err(Error::CorruptState) if limiter.may_be_banned() => {
            let banned = banned(key)?;
            // The own state is read either way, so that its error comes where it would.
            let own = limiter.read(&banned.own_at(now.ms))?.grant(most, now)?;
            if banned.holds(now.ms) {
                Some(0)
            } else {
                own
            }
        }
        granted => granted?,
    };
    granted.ok_or(Error::Internal)
}

/// What a key's decision does to its ban, beside its verdict.
#[derive(Debug, Clone, Copy, Default)]
pub struct BanStep {
    /// The key holds the banned form, its ban over: a change is written on the limiter's own
    /// state, unwrapped first.
    pub wrapped: bool,
    /// The limiter denied the call, which asked to `BAN`: the key is banned until then (unix
    /// ms), its state (with the call's change, if any) kept beside the ban.
    pub bans_until_ms: Option<i64>,
}

/// Answers `request` with `limiter` on its open key, for a call at `turn` in the key's line:
/// a call that waiters who came first hold back takes nothing, and a refund, which takes
/// nothing of theirs, is never held back; a dry run is held back as its call would be. The
/// one place both single-key calls and each key of CL.ALL decide. A banned key denies every
/// call until its ban ends; a denial by the limiter itself bans, with `ban_ms`. What it does
/// to the ban goes into `step`, apart from the verdict, which the hot path returns as it is.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn decide_in_line<'a, const THOROUGH: bool>(
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    key: &Key,
    limiter: &Limiter<'a>,
    request: Request,
    now: Instant,
    turn: Turn,
    ban_ms: Option<i64>,
    step: &mut BanStep,
) -> Result<Verdict<'a>, Error> {
    // A lease set is never banned.
    let ban_ms = ban_ms.filter(|_| limiter.may_be_banned());
    let decided = decide_read(ctx, name, key, limiter, (request, ban_ms), now, turn, step);
    if !THOROUGH {
        return decided;
    }
    match decided {
        Err(Error::CorruptState) if limiter.may_be_banned() => {
            let at = Place {
                ctx,
                name,
                request,
                now,
                turn,
            };
            decide_banned(&at, key, *limiter, ban_ms, step)
        }
        decided => decided,
    }
}

/// `decide_in_line` on what reads as its limiter's state: the key, or the state beside an
/// ended ban.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn decide_read<'a, S: Source>(
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    key: &S,
    limiter: &Limiter<'a>,
    (request, ban_ms): (Request, Option<i64>),
    now: Instant,
    turn: Turn,
    step: &mut BanStep,
) -> Result<Verdict<'a>, Error> {
    let reading = limiter.read(key)?;
    let mut verdict = reading.answer(request, now)?;
    // The limiter's own denial bans, whoever waits before the call.
    let bans_until_ms = match ban_ms {
        None => None,
        ban_ms => ban_after(&verdict.outcome, request, turn, ban_ms, now),
    };
    if request.yields_to_waiters() && limiter.stands_in_line() {
        if let Some(first_due_in) = lines::held_back(ctx, name, turn)? {
            verdict = verdict.held_back(first_due_in, limiter.counts_denied(), || {
                Ok(reading.peek().decide(now)?.outcome)
            })?;
        }
    }
    if let Some(until_ms) = bans_until_ms {
        verdict.outcome = ban::banning(verdict.outcome, until_ms, now.ms);
        step.bans_until_ms = Some(until_ms);
    }
    Ok(verdict)
}

/// Whether a plain body's error has `command`'s call run again by a thorough body
/// (commands::Run): a key that reads as no limiter's state (it may be banned), a word where a
/// number goes (a calendar unit), or a call handed over (`Error::Thorough`: a look, a
/// calendar word). Only the commands with thorough bodies run again, and their plain bodies
/// open keys only to write, before these errors: a plain run has only parsed and read keys
/// opened for writing, which counts no keyspace hit or miss (the server's LRU or LFU clock of
/// such a key is touched again, as by any access). A write's own failure is never one of
/// them (`written`).
#[inline(always)]
pub fn looks_further(command: Command, error: &Error) -> bool {
    matches!(
        command,
        Command::Throttle | Command::Fixed | Command::Window | Command::Smooth | Command::All
    ) && matches!(
        error,
        Error::CorruptState | Error::NotAnInteger(_) | Error::Thorough
    )
}

/// A look opens its key read-only, which counts a keyspace hit or miss (and fires `keymiss`)
/// as it opens: a plain body hands it to a thorough one before it opens anything, so that no
/// key is looked at twice.
#[inline(always)]
pub fn hand_over_looks<const THOROUGH: bool>(request: Request) -> Result<(), Error> {
    if !THOROUGH && request.peeks() {
        return Err(Error::Thorough);
    }
    Ok(())
}

/// A write's error: everything that can fail on what the key held was decided before, so a
/// damaged state found now is told apart from one found as the key was read, which would run
/// the call again and write twice.
#[cold]
pub fn written(error: Error) -> Error {
    match error {
        Error::CorruptState => Error::CorruptOnWrite,
        Error::NotAnInteger(_) | Error::Thorough => Error::Internal,
        error => error,
    }
}

/// Where and when a key is decided, for the steps that decide it.
struct Place {
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    request: Request,
    now: Instant,
    turn: Turn,
}

/// Until when a call that asked to `BAN` for `ban_ms` bans its key: when its limiter itself
/// denied it, a real call (not a look or a dry run, in a turn that writes), with units that
/// could fit later. Out of line: most calls ask for no ban.
#[inline(never)]
fn ban_after(
    own: &Outcome,
    request: Request,
    turn: Turn,
    ban_ms: Option<i64>,
    now: Instant,
) -> Option<i64> {
    let span = ban_ms?;
    ban::bans(own, request.writes() && turn.writes()).then(|| ban::end(now.ms, span))
}

/// A key that holds no limiter's state as it reads it: the banned form, or an error. While
/// the ban holds, every call is denied and nothing changes; once it is over, the limiter
/// decides on its own state as it was, which a change unwraps.
#[cold]
#[inline(never)]
fn decide_banned<'a>(
    at: &Place,
    key: &Key,
    limiter: Limiter<'a>,
    ban_ms: Option<i64>,
    step: &mut BanStep,
) -> Result<Verdict<'a>, Error> {
    let banned = banned(key)?;
    let own = banned.own_at(at.now.ms);
    if banned.holds(at.now.ms) {
        let look = limiter.read(&own)?.peek().decide(at.now)?.outcome;
        if at.request.writes() {
            BANS.record(Banning::Denied);
        }
        step.wrapped = true;
        return Ok(Verdict {
            outcome: ban::denial(look, banned.until_ms, at.now.ms),
            change: None,
        });
    }
    step.wrapped = true;
    decide_read(
        at.ctx,
        at.name,
        &own,
        &limiter,
        (at.request, ban_ms),
        at.now,
        at.turn,
        step,
    )
}

/// The banned form the key holds, or the error of a key that holds no limiter's state.
fn banned(key: &Key) -> Result<Banned<'_>, Error> {
    key.read_bytes()?
        .and_then(Banned::parse)
        .ok_or(Error::CorruptState)
}

/// Rewrites a banned key whose ban is over as its limiter's own state, as `SET … PXAT` would
/// (or `DEL`, when that state is gone), before a change is written on it.
#[cold]
#[inline(never)]
pub fn unwrap(ctx: *mut raw::RedisModuleCtx, key: &mut Key, now: Instant) -> Result<(), Error> {
    let own = banned(key)?
        .own_at(now.ms)
        .state()
        .map(|(bytes, expire_at_ms)| (bytes.to_vec(), expire_at_ms));
    match own {
        Some((bytes, expire_at_ms)) => {
            let written = key.set(&bytes, expire_at_ms)?;
            replicate_set_pxat(ctx, key.name(), &written, expire_at_ms)
        }
        None => {
            key.delete()?;
            replicate_del(ctx, key.name())
        }
    }
}

/// Bans a key until `until_ms`, its limiter's state (as the key holds it now, or beside an
/// ended ban) kept beside the ban, written and propagated as the `SET … PXAT` it amounts to:
/// replicas and the AOF hold the same bytes whatever their clocks say. A state that never
/// expires (set by hand) is kept until the ban ends.
pub fn ban(
    ctx: *mut raw::RedisModuleCtx,
    key: &mut Key,
    until_ms: i64,
    now: Instant,
) -> Result<(), Error> {
    let mut value = Vec::new();
    {
        let expire_at_ms = key.expire_at_ms()?;
        let own = match key.read_bytes()? {
            None => None,
            Some(raw) => match Banned::parse(raw) {
                Some(banned) => banned.own_at(now.ms).state(),
                None => Some((raw, expire_at_ms.unwrap_or(until_ms))),
            },
        };
        ban::encode(until_ms, own, &mut value);
    }
    let expire_at_ms = Banned::parse(&value).ok_or(Error::Internal)?.expire_at_ms();
    let written = key.set(&value, expire_at_ms)?;
    replicate_set_pxat(ctx, key.name(), &written, expire_at_ms)
}

/// What `limiter` answers about its key as it stands: a banned key, its ban.
pub fn peek(limiter: &Limiter, key: &Key, now: Instant) -> Result<Outcome, Error> {
    match limiter
        .read(key)
        .and_then(|reading| reading.peek().decide(now))
    {
        Err(Error::CorruptState) if limiter.may_be_banned() => {
            let banned = banned(key)?;
            let look = limiter
                .read(&banned.own_at(now.ms))?
                .peek()
                .decide(now)?
                .outcome;
            Ok(if banned.holds(now.ms) {
                ban::denial(look, banned.until_ms, now.ms)
            } else {
                look
            })
        }
        verdict => Ok(verdict?.outcome),
    }
}

/// A key is where the limiters read their state.
impl Source for Key {
    #[inline(always)]
    fn integer(&self) -> Result<Option<i64>, Error> {
        self.read_integer()
    }

    #[inline(always)]
    fn bytes(&self) -> Result<Option<&[u8]>, Error> {
        self.read_bytes()
    }

    #[inline(always)]
    fn expire_at_ms(&self) -> Result<Option<i64>, Error> {
        Key::expire_at_ms(self)
    }
}

/// How a change reaches replicas and the AOF, so that they hold the same bytes and expiry and
/// fire the same events whatever their clocks say.
enum Replicate<'v> {
    /// As the `SET key value PXAT expire_at_ms` it amounts to: a limiter whose state is one
    /// value (CL.THROTTLE's, CL.SMOOTH's).
    Set(Written<'v>, i64),
    /// As its limiter's own command with the primary's instant, from the call's own
    /// arguments: replicas that hold the same state decide as the primary did, which is far
    /// cheaper than sending a window's log or a lease set.
    As(&'static CStr),
}

/// Writes an admission's or a refund's change into its key as the limiter's own command does,
/// and propagates it as the change says. `own` is the call's own form, for the changes that
/// go as their command, or none for the call as it came: a body whose changes all go as a SET
/// has nothing to pass. Everything that can fail on what the key held was decided before:
/// what fails here is a defect.
pub fn write(
    ctx: *mut raw::RedisModuleCtx,
    key: &mut Key,
    change: &Change,
    own: Option<Propagate>,
    now: Instant,
) -> Result<(), Error> {
    let mut digits = [0u8; 20];
    let replicate = match *change {
        // Written as `SET key tat PXAT expiry` would write it.
        Change::Tat { tat, expire_at_ms } => Replicate::Set(
            key.set_integer(tat, expire_at_ms, &mut digits)?,
            expire_at_ms,
        ),
        // The same, with the limiter's bytes.
        Change::Smooth(ref smooth) => Replicate::Set(
            key.set(&smooth.value, smooth.expire_at_ms)?,
            smooth.expire_at_ms,
        ),
        Change::Count {
            count,
            end_ms,
            opens,
        } => {
            let expiry = if opens {
                Expiry::At(end_ms)
            } else {
                Expiry::Unchanged
            };
            key.write_integer(count, expiry)?;
            Replicate::As(c"CL.FIXED")
        }
        Change::CountDown { count } => {
            key.write_integer(count, Expiry::Unchanged)?;
            Replicate::As(c"CL.FIXED")
        }
        Change::Log(ref append) => {
            append.apply(key)?;
            key.expire_at(append.expire_at_ms)?;
            Replicate::As(c"CL.WINDOW")
        }
        Change::Trim {
            ref plan,
            expire_at_ms,
        } => {
            plan.write(key)?;
            key.expire_at(expire_at_ms)?;
            Replicate::As(c"CL.WINDOW")
        }
        Change::Cells(ref plan) => {
            plan.apply(key)?;
            key.set_expiry(if plan.expiry_moves() {
                Expiry::At(plan.expire_at_ms)
            } else {
                Expiry::Unchanged
            })?;
            Replicate::As(c"CL.WINDOW")
        }
        Change::Clear(cleared) => {
            key.delete()?;
            Replicate::As(match cleared {
                Cleared::Count => c"CL.FIXED",
                Cleared::Log => c"CL.WINDOW",
            })
        }
        Change::Lease {
            holder,
            change,
            expire_at_ms,
        } => {
            lease::apply(key, holder, change, now.ms)?;
            key.expire_at(expire_at_ms)?;
            Replicate::As(c"CL.LEASE")
        }
    };
    match replicate {
        Replicate::Set(written, expire_at_ms) => {
            replicate_set_pxat(ctx, key.name(), &written, expire_at_ms)
        }
        Replicate::As(command) => {
            replicate_window(ctx, command, own.unwrap_or(Propagate::Verbatim), now)
        }
    }
}

/// Fires the keyspace events of the commands a change stands in for, after its write and
/// propagation: `SET … PXAT` for a TAT and a smooth limiter's state, INCRBY (and EXPIRE when a window opens) for a count
/// and DECRBY for a lower one, for a log `cl.window` and EXPIRE, for cells `cl.window` (and
/// EXPIRE when the newest cell moves), for a lease `cl.lease` and EXPIRE, and DEL for a
/// window a refund cleared.
pub fn notify(key: &Key, change: &Change) {
    match *change {
        Change::Tat { .. } | Change::Smooth(_) => {
            key.notify(Event::Set);
            key.notify(Event::Expire);
        }
        Change::Count { opens, .. } => {
            key.notify(Event::IncrBy);
            if opens {
                key.notify(Event::Expire);
            }
        }
        Change::CountDown { .. } => key.notify(Event::DecrBy),
        Change::Log(_) | Change::Trim { .. } => {
            key.notify(Event::WindowLog);
            key.notify(Event::Expire);
        }
        Change::Cells(ref plan) => {
            key.notify(Event::WindowLog);
            if plan.expiry_moves() {
                key.notify(Event::Expire);
            }
        }
        Change::Clear(_) => key.notify(Event::Del),
        Change::Lease { .. } => {
            key.notify(Event::Lease);
            key.notify(Event::Expire);
        }
    }
}

//! A limiter's state in its key: opened, read, decided in the key's line, written and
//! propagated as the limiter's own command does, and announced. The steps every command body
//! takes for each of its keys.

use std::ffi::CStr;

use redis_module::raw;

use crate::error::Error;
use crate::fault::{self, Fault};
use crate::ffi::string_bytes;
use crate::lease;
use crate::limiter::{Change, Cleared, Limiter, Request, Source, Verdict};
use crate::lines::{self, Turn};
use crate::outcome::Outcome;
use crate::propagate::{replicate_set_pxat, replicate_window, Propagate};
use crate::store::{Access, Event, Expiry, Key, Written};
use crate::time::Instant;

/// Opens the key a call with `request` decides on. A look and a dry run open it as their
/// call would: a read-only open of a missing key fires `keymiss` and counts a keyspace miss,
/// which the call never does.
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

/// ATMOST's grant on an open key: the most units, up to `most`, that `limiter` admits now.
pub fn grant(limiter: &Limiter, key: &Key, most: i64, now: Instant) -> Result<i64, Error> {
    limiter.read(key)?.grant(most, now)?.ok_or(Error::Internal)
}

/// Answers `request` with `limiter` on its open key, for a call at `turn` in the key's line:
/// a call that waiters who came first hold back takes nothing, and a refund, which takes
/// nothing of theirs, is never held back; a dry run is held back as its call would be. The
/// one place both single-key calls and each key of CL.ALL decide.
#[inline(always)]
pub fn decide_in_line<'a>(
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    key: &Key,
    limiter: &Limiter<'a>,
    request: Request,
    now: Instant,
    turn: Turn,
) -> Result<Verdict<'a>, Error> {
    let reading = limiter.read(key)?;
    let mut verdict = reading.answer(request, now)?;
    if request.yields_to_waiters() && limiter.stands_in_line() {
        if let Some(first_due_in) = lines::held_back(ctx, name, turn)? {
            verdict = verdict.held_back(first_due_in, limiter.counts_denied(), || {
                Ok(reading.peek().decide(now)?.outcome)
            })?;
        }
    }
    Ok(verdict)
}

/// What `limiter` answers about its key as it stands.
pub fn peek(limiter: &Limiter, key: &Key, now: Instant) -> Result<Outcome, Error> {
    Ok(limiter.read(key)?.peek().decide(now)?.outcome)
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

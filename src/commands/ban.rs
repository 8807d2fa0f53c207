//! `CL.BAN`'s and `CL.UNBAN`'s bodies: an operator locks a rate limiter's key out by hand,
//! or lets it in again, its limiter's state kept either way (ban.rs holds the form).

use crate::args;
use crate::ban::{self, Banned};
use crate::commands::answer::{Answer, Reply};
use crate::commands::single::SingleCall;
use crate::commands::state;
use crate::counters::{Banning, Counted, BANS};
use crate::error::Error;
use crate::store::{Access, Event, Key};

/// `CL.BAN key span [MS]`: bans the key from now for `span` (seconds, or ms with MS), an
/// earlier ban's end replaced, its limiter's state kept beside the ban; a missing key is
/// banned with no state. A key that holds no rate limiter's state (a lease set, any other
/// string) is refused, and changes nothing. Replies the ban's end as EXPIRETIME does (unix
/// seconds, rounded up; ms with MS, as PEXPIRETIME).
pub fn run_ban(call: &SingleCall) -> Result<Answer, Error> {
    let (span_ms, unit) = args::ban(call.params())?;
    let now = call.instant(None)?;
    let mut key = Key::open(call.ctx, call.arg(0)?, Access::Write)?;
    if key.read_bytes()?.is_some_and(|raw| !ban::guards(raw)) {
        return Err(Error::NotALimiter);
    }
    let until_ms = ban::end(now.ms, span_ms);
    state::ban(call.ctx, &mut key, until_ms, now)?;
    key.notify(Event::Ban);
    BANS.record(Banning::ByHand);
    let end = until_ms.saturating_mul(1_000_000);
    Ok(Answer::of(
        Reply::Integer(unit.rounded_up(end)),
        Counted::Allowed,
    ))
}

/// `CL.UNBAN key`: lifts the key's ban, its limiter's state as it was (gone, if it ended
/// while banned), and wakes the first call waiting on it. Replies 1 when it lifted a ban
/// that held, 0 when the key held none, as PERSIST answers for an expiry; a ban that has
/// ended is taken off all the same.
pub fn run_unban(call: &SingleCall) -> Result<Answer, Error> {
    args::unban(call.params())?;
    let now = call.instant(None)?;
    let mut key = Key::open(call.ctx, call.arg(0)?, Access::Write)?;
    let Some(holds) = key
        .read_bytes()?
        .and_then(Banned::parse)
        .map(|banned| banned.holds(now.ms))
    else {
        return Ok(Answer::of(Reply::Integer(0), Counted::Allowed));
    };
    state::unwrap(call.ctx, &mut key, now)?;
    key.notify(Event::Unban);
    if holds {
        BANS.record(Banning::Lifted);
    }
    Ok(Answer {
        // The key, after the command's name: its first waiter may go now.
        frees: holds.then_some(1..2),
        ..Answer::of(Reply::Integer(i64::from(holds)), Counted::Allowed)
    })
}

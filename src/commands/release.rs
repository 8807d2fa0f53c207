//! `CL.RELEASE`'s body: frees a holder's lease, parse → read → write → propagate → notify.

use crate::args;
use crate::commands::answer::Answer;
use crate::commands::single::SingleCall;
use crate::error::Error;
use crate::lease::{self, Released};
use crate::propagate::{replicate_window, Propagate};
use crate::store::{Access, Event, Key};

/// `CL.RELEASE key holder`, and its replication form with `AT unix-ms`. Only a release that
/// frees a live lease writes: the leases that ended go with it, and the key takes the end of
/// its last lease as its expiry, or is deleted with the last one, as the server deletes an
/// emptied set. It propagates as itself with its instant, as CL.LEASE does.
pub fn run_release(call: &SingleCall) -> Result<Answer, Error> {
    let (holder, at_ms) = args::release(call.params())?;
    let now = call.instant(at_ms)?;
    let mut key = Key::open(call.ctx, call.arg(0)?, Access::Write)?;
    if key.read_bytes()?.is_none() {
        return Ok(Answer::released(false));
    }
    let Released::Freed { last_end_ms } = lease::release(&mut key, holder, now.ms)? else {
        return Ok(Answer::released(false));
    };
    match last_end_ms {
        Some(end_ms) => key.expire_at(end_ms)?,
        None => key.delete()?,
    }
    let propagate = if at_ms.is_some() {
        Propagate::Verbatim
    } else {
        // The key and the holder.
        Propagate::WithInstant(call.argv.get(1..3).ok_or(Error::Internal)?)
    };
    replicate_window(call.ctx, c"CL.RELEASE", propagate, now)?;
    key.notify(Event::Release);
    key.notify(match last_end_ms {
        Some(_) => Event::Expire,
        None => Event::Del,
    });
    Ok(Answer::released(true))
}

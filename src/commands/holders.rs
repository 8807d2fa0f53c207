//! `CL.HOLDERS`'s body: who holds a lease on a key, and for how long yet. It only looks.

use crate::args;
use crate::commands::answer::{Answer, Reply};
use crate::commands::single::SingleCall;
use crate::counters::Counted;
use crate::error::Error;
use crate::lease;
use crate::store::{Access, Key};

/// `CL.HOLDERS key [MS]`: each live lease's holder and its time left, in seconds rounded up
/// (milliseconds with MS), the soonest to end first. A key with no live lease, or none at
/// all, answers an empty array.
pub fn run_holders(call: &SingleCall) -> Result<Answer, Error> {
    let unit = args::holders(call.params())?;
    let now = call.instant(None)?;
    let key = Key::open(call.ctx, call.arg(0)?, Access::Read)?;
    let holders = lease::holders(key.read_bytes()?, now.ms)?;
    let pairs = holders
        .into_iter()
        .map(|(holder, end_ms)| {
            let left_ns = end_ms.saturating_sub(now.ms).saturating_mul(1_000_000);
            (holder.to_vec(), unit.rounded_up(left_ns))
        })
        .collect();
    Ok(Answer::of(Reply::Pairs(pairs), Counted::Peek))
}

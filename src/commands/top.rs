//! `CL.TOP [COUNT n]`: the keys this node denied most over this minute and the one before,
//! from the list denied.rs keeps.

use crate::command::Command;
use crate::commands::answer::{Answer, Reply};
use crate::commands::call::Call;
use crate::counters::Counted;
use crate::denied;
use crate::error::Error;
use crate::grammar::{Given, ANY_QUANTITY};
use crate::time::NANOS_PER_MILLI;

/// How many keys CL.TOP lists without COUNT.
const DEFAULT_COUNT: i64 = 10;

/// `CL.TOP [COUNT n]`: `key, denied, error` triples, the most denied first; a COUNT past the
/// list's size lists all it holds, as SLOWLOG GET lists all it has.
pub fn run_top(call: &Call) -> Result<Answer, Error> {
    let given = Given::read(Command::Top, call.args(), 1)?;
    let count = given.read_values(ANY_QUANTITY, 0)?.count;
    let n = usize::try_from(count.unwrap_or(DEFAULT_COUNT)).unwrap_or(usize::MAX);
    let now_ms = call.instant(None)?.ns / NANOS_PER_MILLI;
    let listed = denied::list(n, now_ms)
        .into_iter()
        .map(|listed| {
            let number = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
            (listed.key, number(listed.denied), number(listed.error))
        })
        .collect();
    Ok(Answer::of(Reply::Triples(listed), Counted::Peek))
}

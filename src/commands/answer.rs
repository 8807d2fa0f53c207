//! A call's answer: its reply, what it counts as, and whether it may wait for a better one.

use std::ffi::CString;
use std::ops::Range;

use redis_module::raw;

use crate::command::Command;
use crate::counters::{self, Counted};
use crate::denied;
use crate::error::Error;
use crate::limiter::Request;
use crate::outcome::Outcome;
use crate::reply;
use crate::time::TimeUnit;

pub struct Answer {
    pub reply: Reply,
    pub counted: Counted,
    /// Set when the call asked to wait (BLOCK), was denied, and can be admitted some day.
    /// Boxed: only such calls pay for it, and every answer stays small to move.
    pub wait: Option<Box<Wait>>,
    /// Where the keys the call freed room on are among its arguments, the command's name
    /// first (a release, a refund): the first waiter on each may take it now.
    pub frees: Option<Range<usize>>,
    /// The instant an admitted call's reply goes out, when later than now: CL.SMOOTH with
    /// BLOCK reserves a later instant, and its reply is delayed until then (delayed.rs), as
    /// Guava's caller sleeps.
    pub reply_at_ns: Option<i64>,
    /// With ATMOST, the units the call was granted: the reply's sixth integer (each array's,
    /// in CL.ALL's DETAIL form).
    pub granted: Option<i64>,
    /// The keys a denial counts against in CL.TOP: a bit for each key whose limiter denied,
    /// in key order (the keys start after the command's name, or after CL.ALL's numkeys).
    pub denied_keys: u16,
}

/// How a denied call that asked to wait would wait.
pub struct Wait {
    /// BLOCK's timeout: 0 waits as long as it takes.
    pub timeout_ms: i64,
    /// How long until its units fit, with nothing else taken meanwhile.
    pub fits_in_ns: i64,
    /// Where its keys are among its arguments, the command's name first.
    pub keys: Range<usize>,
}

impl Wait {
    pub fn of(
        block_ms: Option<i64>,
        denied: bool,
        fits_in_ns: Option<i64>,
        keys: Range<usize>,
    ) -> Option<Box<Wait>> {
        match (block_ms, fits_in_ns) {
            (Some(timeout_ms), Some(fits_in_ns)) if denied => Some(Box::new(Wait {
                timeout_ms,
                fits_in_ns,
                keys,
            })),
            _ => None,
        }
    }
}

pub enum Reply {
    /// `[limited, limit, remaining, retry_after, reset_after]`.
    One([i64; 5]),
    /// One such array per limiter.
    Detail(Vec<[i64; 5]>),
    /// A waiter's slot moved away: the cluster's redirect, as the server words it.
    Redirect(CString),
    /// One integer (CL.RELEASE's 1 or 0).
    Integer(i64),
    /// Names and numbers, in pairs (CL.HOLDERS's holders and times left).
    Pairs(Vec<(Vec<u8>, i64)>),
    /// Names and two numbers each (CL.TOP's keys, denials and errors).
    Triples(Vec<(Vec<u8>, i64, i64)>),
}

impl Answer {
    /// An answer that counts as `counted`, may not wait, frees nothing and grants nothing:
    /// what every answer but a limiter's is, and what a limiter's starts from.
    pub fn of(reply: Reply, counted: Counted) -> Answer {
        Answer {
            reply,
            counted,
            wait: None,
            frees: None,
            reply_at_ns: None,
            granted: None,
            denied_keys: 0,
        }
    }

    /// A single-key command's answer; its key follows the command's name. `changed` says
    /// whether the call wrote its key, which for a refund frees room there.
    #[inline(always)]
    pub fn single(
        outcome: Outcome,
        request: Request,
        changed: bool,
        unit: TimeUnit,
        block_ms: Option<i64>,
    ) -> Answer {
        let counted = Counted::of(request, !outcome.limited);
        Answer {
            wait: Wait::of(block_ms, outcome.limited, outcome.retry_after_ns, 1..2),
            frees: (request.refund && changed).then_some(1..2),
            denied_keys: u16::from(counted == Counted::Denied),
            ..Answer::of(Reply::One(outcome.to_reply(unit)), counted)
        }
    }

    /// CL.RELEASE's answer: 1 when it freed a lease, counted as allowed; 0 when there was
    /// none to free, counted as denied.
    pub fn released(freed: bool) -> Answer {
        let counted = if freed {
            Counted::Allowed
        } else {
            Counted::Denied
        };
        Answer {
            frees: freed.then_some(1..2),
            ..Answer::of(Reply::Integer(i64::from(freed)), counted)
        }
    }

    /// A waiter's answer when its slot has moved away.
    pub fn redirect(error: CString) -> Answer {
        Answer::of(Reply::Redirect(error), Counted::Error)
    }

    pub fn admitted(&self) -> bool {
        self.counted == Counted::Allowed
    }
}

/// Counts a call's answer in its command's counters, and its denials against their keys
/// (CL.TOP); `args` are the call's arguments, its name first.
///
/// # Safety
/// `args` must be live argument strings.
#[inline(always)]
pub unsafe fn record(
    command: Command,
    result: &Result<Answer, Error>,
    args: &[*mut raw::RedisModuleString],
) {
    if let Some((first, mask)) = count(command, result) {
        // SAFETY: as this function's.
        unsafe { denied::record(args, first, mask) };
    }
}

/// Counts a call's answer in its command's counters. Returns, for a denial that counts
/// against keys, where they start among its arguments and a bit for each key whose limiter
/// denied.
#[inline(always)]
pub fn count(command: Command, result: &Result<Answer, Error>) -> Option<(usize, u16)> {
    let Ok(answer) = result else {
        counters::of(command).record(Counted::Error);
        return None;
    };
    counters::of(command).record(answer.counted);
    if !matches!(answer.counted, Counted::Allowed | Counted::Denied) {
        return None;
    }
    if let Some(granted) = answer.granted {
        counters::GRANTS.record(granted);
    }
    if answer.counted != Counted::Denied || answer.denied_keys == 0 {
        return None;
    }
    let first = if command == Command::All { 2 } else { 1 };
    Some((first, answer.denied_keys))
}

/// Sends a call's answer.
#[inline(always)]
pub fn send(ctx: *mut raw::RedisModuleCtx, result: Result<Answer, Error>) {
    match result {
        Ok(answer) => match answer.reply {
            Reply::One(values) => reply::send(ctx, values, answer.granted),
            Reply::Detail(replies) => reply::send_all(ctx, &replies, answer.granted),
            Reply::Redirect(error) => reply::send_error_text(ctx, &error),
            Reply::Integer(value) => reply::send_integer(ctx, value),
            Reply::Pairs(pairs) => reply::send_pairs(ctx, &pairs),
            Reply::Triples(triples) => reply::send_triples(ctx, &triples),
        },
        Err(error) => reply::send_error(ctx, error),
    }
}

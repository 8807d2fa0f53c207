//! One short function per command: parse → read → decide → write → reply. The only layer
//! that knows both the algorithms and Redis.

use std::ffi::CStr;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use crate::args;
use crate::clock;
use crate::error::Error;
use crate::fixed::{FixedWindow, Window};
use crate::gcra::Gcra;
use crate::reply;
use crate::stats::{self, Counted, Counters};
use crate::store::{api, decimal, succeeded, Access, Event, Expiry, Key};
use crate::window::SlidingWindow;

/// The most arguments any command takes, its name included
/// (`CL.WINDOW key limit period quantity MS AT unix-ms`).
const MAX_ARGS: usize = 8;

/// The arguments of a running command.
struct Call<'a> {
    ctx: *mut raw::RedisModuleCtx,
    /// The command's arguments as the server holds them, its name first.
    argv: &'a [*mut raw::RedisModuleString],
    key: *mut raw::RedisModuleString,
    /// The arguments after the key, as bytes.
    rest: [&'a [u8]; MAX_ARGS],
    rest_len: usize,
    /// Whether the call comes from the primary over the replication link, or from the AOF.
    replayed: bool,
}

impl<'a> Call<'a> {
    /// # Safety
    /// `argv` must point to `argc` live strings that outlive `'a`, as Redis guarantees for the
    /// duration of a command.
    unsafe fn new(
        ctx: *mut raw::RedisModuleCtx,
        argv: *mut *mut raw::RedisModuleString,
        argc: c_int,
        command: &'static str,
        replayed: bool,
    ) -> Result<Call<'a>, Error> {
        let argc = usize::try_from(argc).map_err(|_| Error::WrongArity(command))?;
        if !(2..=MAX_ARGS).contains(&argc) || argv.is_null() {
            return Err(Error::WrongArity(command));
        }
        let argv = std::slice::from_raw_parts(argv, argc);
        let ptr_len = raw::RedisModule_StringPtrLen.ok_or(Error::Internal)?;
        let mut rest: [&[u8]; MAX_ARGS] = [&[]; MAX_ARGS];
        for (slot, &arg) in rest.iter_mut().zip(argv.iter().skip(2)) {
            let mut len = 0usize;
            let ptr = ptr_len(arg, &mut len);
            if !ptr.is_null() {
                *slot = std::slice::from_raw_parts(ptr.cast::<u8>(), len);
            }
        }
        Ok(Call {
            ctx,
            argv,
            key: argv.get(1).copied().ok_or(Error::WrongArity(command))?,
            rest,
            rest_len: argc - 2,
            replayed,
        })
    }

    fn args(&self) -> &[&'a [u8]] {
        self.rest.get(..self.rest_len).unwrap_or(&[])
    }

    /// The instant to decide at: the server's clock, or the primary's instant carried by a
    /// replayed call.
    fn instant(&self, at_ms: Option<i64>) -> Result<i64, Error> {
        match at_ms {
            Some(at) if self.replayed => Ok(at),
            Some(_) => Err(Error::AtFromClient),
            None => clock::now_ms(),
        }
    }
}

/// `CL.THROTTLE key max_burst count period [quantity] [MS]`
pub extern "C" fn throttle(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    dispatch(ctx, argv, argc, "cl.throttle", &stats::THROTTLE, |call| {
        let args = args::throttle(call.args())?;
        let gcra = Gcra::new(&args)?;
        let mut key = Key::open(call.ctx, call.key, access_for(args.quantity))?;
        let decision = gcra.decide(key.read_integer()?, clock::now_ns()?);
        if let Some(tat) = decision.new_tat {
            key.set_integer(tat, ceil_ms(tat))?;
        }
        Ok(Answer::new(
            decision.outcome.to_reply(args.unit),
            args.quantity,
        ))
    })
}

/// `CL.FIXED key limit period [quantity] [MS]`, and its replication form with `AT unix-ms`.
pub extern "C" fn fixed(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    dispatch(ctx, argv, argc, "cl.fixed", &stats::FIXED, |call| {
        let args = args::fixed(call.args())?;
        let now_ms = call.instant(args.at_ms)?;
        let mut key = Key::open(call.ctx, call.key, access_for(args.quantity))?;
        let stored = match key.read_integer()? {
            // A count is never negative, and a window always ends.
            Some(count) if count >= 0 => Some(Window {
                count,
                end_ms: key.expire_at_ms()?.ok_or(Error::CorruptState)?,
            }),
            Some(_) => return Err(Error::CorruptState),
            None => None,
        };
        let decision = FixedWindow::new(&args).decide(stored, now_ms);
        if let Some(window) = decision.new_window {
            // Counting into an open window leaves its end where it was; as with INCR and
            // EXPIRE, only opening one sets an expiry.
            let opens = stored.is_none_or(|open| open.end_ms != window.end_ms);
            let expiry = if opens {
                Expiry::At(window.end_ms)
            } else {
                Expiry::Unchanged
            };
            key.write_integer(window.count, expiry)?;
            replicate_call(call, c"CL.FIXED", args.at_ms.is_some(), now_ms)?;
            key.notify(Event::IncrBy);
            if opens {
                key.notify(Event::Expire);
            }
        }
        Ok(Answer::new(
            decision.outcome.to_reply(args.unit),
            args.quantity,
        ))
    })
}

/// `CL.WINDOW key limit period [quantity] [MS]`, and its replication form with `AT unix-ms`.
pub extern "C" fn window(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    dispatch(ctx, argv, argc, "cl.window", &stats::WINDOW, |call| {
        let args = args::window(call.args())?;
        let now_ms = call.instant(args.at_ms)?;
        let mut key = Key::open(call.ctx, call.key, access_for(args.quantity))?;
        let decision = SlidingWindow::new(&args).decide(key.read_bytes()?, now_ms)?;
        if let Some(append) = decision.append {
            append.apply(&mut key)?;
            key.expire_at(append.expire_at_ms)?;
            replicate_call(call, c"CL.WINDOW", args.at_ms.is_some(), now_ms)?;
            key.notify(Event::WindowLog);
            key.notify(Event::Expire);
        }
        Ok(Answer::new(
            decision.outcome.to_reply(args.unit),
            args.quantity,
        ))
    })
}

/// Propagates the call with the instant it was decided at: the client's own arguments
/// (shared, not copied) followed by `AT <unix-ms>`. Replicas hold the same state, so they make
/// the same decision, write the same bytes and fire the same events; for CL.WINDOW that is
/// also far cheaper than sending a long log. A call that already carries its instant (on a
/// replica, or replayed from the AOF) goes on as it came.
fn replicate_call(
    call: &Call,
    command: &CStr,
    has_instant: bool,
    now_ms: i64,
) -> Result<(), Error> {
    let status = if has_instant {
        let verbatim = api(unsafe { raw::RedisModule_ReplicateVerbatim })?;
        // SAFETY: ctx is the running command's context.
        unsafe { verbatim(call.ctx) }
    } else {
        let replicate = api(unsafe { raw::RedisModule_Replicate })?;
        let args = call.argv.get(1..).ok_or(Error::Internal)?;
        let mut digits = [0u8; 20];
        let at = decimal(now_ms, &mut digits);
        // SAFETY: the format "vcb" takes an array of RedisModuleStrings and its length, a C
        // string, and a buffer and its length, which is exactly what follows it; the array is
        // the command's live argv.
        unsafe {
            replicate(
                call.ctx,
                command.as_ptr(),
                c"vcb".as_ptr(),
                args.as_ptr(),
                args.len(),
                c"AT".as_ptr(),
                at.as_ptr(),
                at.len(),
            )
        }
    };
    succeeded(status)
}

/// A quantity of zero only looks.
fn access_for(quantity: i64) -> Access {
    if quantity == 0 {
        Access::Read
    } else {
        Access::Write
    }
}

/// The first whole millisecond at or after `ns`: a key expiring then outlives its state.
fn ceil_ms(ns: i64) -> i64 {
    ns / 1_000_000 + i64::from(ns % 1_000_000 > 0)
}

/// Runs a command body and sends its reply. A panic, which would otherwise take the whole
/// server down, becomes an error reply; bodies write only as their last step, so an error
/// or a panic leaves the key as it was.
fn dispatch(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    command: &'static str,
    counters: &Counters,
    body: impl FnOnce(&Call) -> Result<Answer, Error>,
) -> c_int {
    let flags = context_flags(ctx);
    stats::before_command(flags & raw::REDISMODULE_CTX_FLAGS_MULTI != 0);
    // A replica or a restart replaying a call may carry the primary's instant, and does not
    // count it in the counters, which are the clients'.
    let replayed = flags & REPLAYED != 0;
    let result = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: Redis passes argc live argument strings for the duration of the command.
        let call = unsafe { Call::new(ctx, argv, argc, command, replayed) }?;
        body(&call)
    }))
    .unwrap_or(Err(Error::Internal));
    match result {
        Ok(answer) => {
            if !replayed {
                counters.record(answer.counted());
            }
            reply::send(ctx, answer.values);
        }
        Err(error) => {
            if !replayed {
                counters.record(Counted::Error);
            }
            reply::send_error(ctx, error);
        }
    }
    raw::REDISMODULE_OK as c_int
}

/// A call from the primary over the replication link, or from the AOF.
const REPLAYED: u32 = raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING;

fn context_flags(ctx: *mut raw::RedisModuleCtx) -> u32 {
    // SAFETY: ctx is the running command's context.
    unsafe { raw::RedisModule_GetContextFlags.map_or(0, |flags| flags(ctx) as u32) }
}

/// A command's reply, and whether the call only looked.
struct Answer {
    values: [i64; 5],
    peek: bool,
}

impl Answer {
    fn new(values: [i64; 5], quantity: i64) -> Answer {
        Answer {
            values,
            peek: quantity == 0,
        }
    }

    fn counted(&self) -> Counted {
        match (self.peek, self.values[0]) {
            (true, _) => Counted::Peek,
            (false, 0) => Counted::Allowed,
            (false, _) => Counted::Denied,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_rounds_up_to_the_next_whole_millisecond() {
        assert_eq!(ceil_ms(5_000_000), 5);
        assert_eq!(ceil_ms(5_000_001), 6);
        assert_eq!(ceil_ms(5_999_999), 6);
    }
}

//! One short function per command: parse → read → decide → write → reply. The only layer
//! that knows both the algorithms and Redis.

use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use crate::args;
use crate::clock;
use crate::error::Error;
use crate::gcra::Gcra;
use crate::reply;
use crate::store::{Access, Key};

/// The most arguments any command takes, its name included.
const MAX_ARGS: usize = 7;

/// The arguments of a running command.
struct Call<'a> {
    ctx: *mut raw::RedisModuleCtx,
    key: *mut raw::RedisModuleString,
    /// The arguments after the key, as bytes.
    rest: [&'a [u8]; MAX_ARGS],
    rest_len: usize,
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
            key: argv[1],
            rest,
            rest_len: argc - 2,
        })
    }

    fn args(&self) -> &[&'a [u8]] {
        self.rest.get(..self.rest_len).unwrap_or(&[])
    }
}

/// `CL.THROTTLE key max_burst count period [quantity] [MS]`
pub extern "C" fn throttle(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    dispatch(ctx, argv, argc, "cl.throttle", |call| {
        let args = args::throttle(call.args())?;
        let gcra = Gcra::new(&args)?;
        let mut key = Key::open(call.ctx, call.key, access_for(args.quantity))?;
        let decision = gcra.decide(key.read_integer()?, clock::now_ns()?);
        if let Some(tat) = decision.new_tat {
            key.write_integer(tat, ceil_ms(tat))?;
        }
        Ok(decision.outcome.to_reply(args.unit))
    })
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
    body: impl FnOnce(&Call) -> Result<[i64; 5], Error>,
) -> c_int {
    let result = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: Redis passes argc live argument strings for the duration of the command.
        let call = unsafe { Call::new(ctx, argv, argc, command) }?;
        body(&call)
    }))
    .unwrap_or(Err(Error::Internal));
    match result {
        Ok(values) => reply::send(ctx, values),
        Err(error) => reply::send_error(ctx, error),
    }
    raw::REDISMODULE_OK as c_int
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

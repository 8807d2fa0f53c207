//! A running command's arguments: as the server holds them, and as bytes.

use std::mem::MaybeUninit;
use std::os::raw::c_int;

use redis_module::raw;

use crate::clock;
use crate::command::Command;
use crate::error::Error;
use crate::ffi::StringReader;
use crate::time::Instant;

/// Who makes a call, as the entry layer finds it once from the context's flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller {
    /// The call comes from the primary over the replication link, or from the AOF.
    pub replayed: bool,
    /// Its client may be blocked: not in a transaction, a script or a replica's stream.
    pub may_wait: bool,
}

impl Caller {
    /// A waiter's call, re-run when its wait ends: it waits no more.
    pub const RERUN: Caller = Caller {
        replayed: false,
        may_wait: false,
    };
}

/// The arguments of a running command, read into storage its caller lends.
pub struct Call<'a> {
    pub ctx: *mut raw::RedisModuleCtx,
    /// The command's arguments as the server holds them, its name first.
    pub argv: &'a [*mut raw::RedisModuleString],
    /// The arguments after the name, as bytes.
    rest: &'a [&'a [u8]],
    /// Who makes it.
    pub caller: Caller,
}

impl<'a> Call<'a> {
    /// Reads the arguments into `storage`, which bounds how many the command takes (its name
    /// included). The storage is the caller's, on its stack: a call that owned an array of
    /// them would be copied as it is returned, 2 KB for CL.ALL on every call. It is left
    /// uninitialised: only the slots of the call's arguments are written, and read.
    ///
    /// # Safety
    /// `argv` must point to `argc` live strings that outlive `'a`, as Redis guarantees for the
    /// duration of a command.
    #[inline(always)]
    pub unsafe fn new(
        ctx: *mut raw::RedisModuleCtx,
        argv: *mut *mut raw::RedisModuleString,
        argc: c_int,
        command: Command,
        caller: Caller,
        storage: &'a mut [MaybeUninit<&'a [u8]>],
    ) -> Result<Call<'a>, Error> {
        let wrong_arity = || Error::WrongArity(command.name());
        let argc = usize::try_from(argc).map_err(|_| wrong_arity())?;
        // Every command takes a key but CL.TOP, which may take nothing at all (asked only of
        // a call outside the range, so that the others pay nothing for it).
        let in_range =
            (2..=storage.len()).contains(&argc) || (argc == 1 && command == Command::Top);
        if !in_range || argv.is_null() {
            return Err(wrong_arity());
        }
        let argv = std::slice::from_raw_parts(argv, argc);
        let reader = StringReader::get().ok_or(Error::Internal)?;
        let rest = storage.get_mut(..argc - 1).ok_or(Error::Internal)?;
        for (slot, &arg) in rest.iter_mut().zip(argv.iter().skip(1)) {
            slot.write(reader.bytes(arg).unwrap_or_default());
        }
        // SAFETY: argv holds argc strings, so the loop wrote every one of rest's argc - 1
        // slots.
        let rest = unsafe { &*(rest as *const [MaybeUninit<&'a [u8]>] as *const [&'a [u8]]) };
        Ok(Call {
            ctx,
            argv,
            rest,
            caller,
        })
    }

    /// The arguments after the command's name.
    pub fn args(&self) -> &[&'a [u8]] {
        self.rest
    }

    /// The argument at `index` after the command's name, as the server holds it.
    pub fn arg(&self, index: usize) -> Result<*mut raw::RedisModuleString, Error> {
        self.argv.get(index + 1).copied().ok_or(Error::Internal)
    }

    /// The arguments at these positions (after the command's name), as the server holds
    /// them, gathered for a propagation: at most `M` of them, and how many there are.
    #[inline(always)]
    pub fn args_at<const M: usize>(
        &self,
        positions: impl Iterator<Item = usize>,
    ) -> Result<([*mut raw::RedisModuleString; M], usize), Error> {
        let mut args = [std::ptr::null_mut(); M];
        let mut len = 0;
        for position in positions {
            *args.get_mut(len).ok_or(Error::Internal)? = self.arg(position)?;
            len += 1;
        }
        Ok((args, len))
    }

    /// The instant to decide at: the server's clock, or the primary's instant carried by a
    /// replayed call.
    pub fn instant(&self, at_ms: Option<i64>) -> Result<Instant, Error> {
        match at_ms {
            Some(at) if self.caller.replayed => Ok(Instant::from_ms(at)),
            Some(_) => Err(Error::AtFromClient),
            None => clock::now_ns().map(Instant::from_ns),
        }
    }
}

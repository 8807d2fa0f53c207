//! The command bodies: parse → read → decide → write → propagate → notify. A body only
//! queries the waiting lines; whether a denied call waits is the entry layer's decision, and
//! waiting itself is blocking.rs's.

pub mod all;
pub mod answer;
pub mod ban;
pub mod call;
pub mod holders;
pub mod release;
pub mod single;
pub mod state;
pub mod top;

use std::os::raw::c_int;

use redis_module::raw;

use crate::args;
use crate::command::Command;
use crate::commands::all::{run_all, MAX_ALL_ARGS};
use crate::commands::answer::Answer;
use crate::commands::ban::{run_ban, run_unban};
use crate::commands::call::{Call, Caller};
use crate::commands::holders::run_holders;
use crate::commands::release::run_release;
use crate::commands::single::{run_lease, run_smooth, run_throttle, run_window, MAX_ARGS};
use crate::commands::top::run_top;
use crate::error::Error;
use crate::fixed::FixedWindow;
use crate::limiter::Limiter;
use crate::lines::Turn;

/// Runs a call of `command` at `turn` in its keys' lines: parse, read, decide, and write when
/// admitted. Bodies write only as their last step, so an error leaves the keys as they were.
#[inline(always)]
pub fn run(
    command: Command,
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    caller: Caller,
    turn: Turn,
) -> Result<Answer, Error> {
    // CL.ALL reads up to MAX_ALL_ARGS arguments, the others MAX_ARGS: each into storage of
    // its own size, here.
    if command == Command::All {
        let mut storage = [&[][..]; MAX_ALL_ARGS];
        // SAFETY: the server passes argc live argument strings, alive for the command (or,
        // for a waiter, held by it).
        let call = unsafe { Call::new(ctx, argv, argc, command, caller, &mut storage) }?;
        return run_all(&call, turn);
    }
    let mut storage = [&[][..]; MAX_ARGS];
    // SAFETY: as above.
    let call = unsafe { Call::new(ctx, argv, argc, command, caller, &mut storage) }?;
    match command {
        Command::Throttle => run_throttle(&call, turn),
        Command::Fixed => run_window(&call, turn, args::fixed, |args| {
            Limiter::Fixed(
                FixedWindow::new(&args.params, args.quantity, args.count_denied)
                    .laid(args.laid, args.offset_minutes),
            )
        }),
        Command::Window => run_window(&call, turn, args::window, Limiter::sliding),
        Command::Lease => run_lease(&call, turn),
        Command::Release => run_release(&call),
        Command::Holders => run_holders(&call),
        Command::Smooth => run_smooth(&call, turn),
        Command::Top => run_top(&call),
        Command::Ban => run_ban(&call),
        Command::Unban => run_unban(&call),
        // Read above, with its own storage.
        Command::All => Err(Error::Internal),
    }
}

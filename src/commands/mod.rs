//! The command bodies: parse → read → decide → write → propagate → notify. A body only
//! queries the waiting lines; whether a denied call waits is the entry layer's decision, and
//! waiting itself is blocking.rs's.

pub mod all;
pub mod answer;
pub mod call;
pub mod holders;
pub mod release;
pub mod single;
pub mod state;

use std::os::raw::c_int;

use redis_module::raw;

use crate::args;
use crate::command::Command;
use crate::commands::all::run_all;
use crate::commands::answer::Answer;
use crate::commands::call::Call;
use crate::commands::holders::run_holders;
use crate::commands::release::run_release;
use crate::commands::single::{run_lease, run_throttle, run_window};
use crate::error::Error;
use crate::fixed::FixedWindow;
use crate::limiter::Limiter;
use crate::lines::Turn;
use crate::window::SlidingWindow;

/// Runs a call of `command` at `turn` in its keys' lines: parse, read, decide, and write when
/// admitted. Bodies write only as their last step, so an error leaves the keys as they were.
#[inline(always)]
pub fn run(
    command: Command,
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    replayed: bool,
    turn: Turn,
) -> Result<Answer, Error> {
    // SAFETY: the server passes argc live argument strings, alive for the command (or, for a
    // waiter, held by it).
    match command {
        Command::Throttle => run_throttle(
            &unsafe { Call::new(ctx, argv, argc, command, replayed) }?,
            turn,
        ),
        Command::Fixed => run_window(
            &unsafe { Call::new(ctx, argv, argc, command, replayed) }?,
            turn,
            args::fixed,
            |args| {
                Limiter::Fixed(FixedWindow::new(
                    &args.params,
                    args.quantity,
                    args.count_denied,
                ))
            },
        ),
        Command::Window => run_window(
            &unsafe { Call::new(ctx, argv, argc, command, replayed) }?,
            turn,
            args::window,
            |args| Limiter::Sliding(SlidingWindow::new(&args.params, args.quantity)),
        ),
        Command::All => run_all(
            &unsafe { Call::new(ctx, argv, argc, command, replayed) }?,
            turn,
        ),
        Command::Lease => run_lease(
            &unsafe { Call::new(ctx, argv, argc, command, replayed) }?,
            turn,
        ),
        Command::Release => run_release(&unsafe { Call::new(ctx, argv, argc, command, replayed) }?),
        Command::Holders => run_holders(&unsafe { Call::new(ctx, argv, argc, command, replayed) }?),
    }
}

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

use std::mem::MaybeUninit;
use std::os::raw::c_int;

use redis_module::raw;

use crate::args::{self, WindowArgs};
use crate::command::Command;
use crate::commands::all::{run_all, MAX_ALL_ARGS};
use crate::commands::answer::Answer;
use crate::commands::ban::{run_ban, run_unban};
use crate::commands::call::{Call, Caller};
use crate::commands::holders::run_holders;
use crate::commands::release::run_release;
use crate::commands::single::{run_lease, run_smooth, run_throttle, run_window, MAX_ARGS};
use crate::commands::state::looks_further;
use crate::commands::top::run_top;
use crate::error::Error;
use crate::fixed::FixedWindow;
use crate::limiter::Limiter;
use crate::lines::Turn;

/// A call of `command` at `turn` in its keys' lines, as the entry layer (or a waiter's
/// re-run) hands it to the bodies.
#[derive(Clone, Copy)]
pub struct Run {
    pub command: Command,
    pub ctx: *mut raw::RedisModuleCtx,
    pub argv: *mut *mut raw::RedisModuleString,
    pub argc: c_int,
    pub caller: Caller,
    pub turn: Turn,
}

impl Run {
    /// Runs the call: parse, read, decide, and write when admitted. Bodies write only as
    /// their last step, so an error leaves the keys as they were.
    ///
    /// A call runs first by plain bodies, which take every key to hold its limiter's state
    /// and every period to be a number, and hand looks over. One they refuse for what a
    /// thorough body looks further at (state::looks_further: a banned key, a calendar unit,
    /// a look) is run again by that body, whose answer is the call's. Plain calls pay
    /// nothing for what they do not use. The entry layer takes the two steps itself, so that
    /// the answer is not moved between them.
    pub fn answer(self) -> Result<Answer, Error> {
        match self.plain() {
            Err(error) if looks_further(self.command, &error) => self.thorough(),
            answered => answered,
        }
    }

    /// The first step, by plain bodies.
    #[inline(always)]
    pub fn plain(self) -> Result<Answer, Error> {
        self.by::<false>()
    }

    /// The second step, by thorough bodies, for a call plain bodies refused.
    #[cold]
    #[inline(never)]
    pub fn thorough(self) -> Result<Answer, Error> {
        self.by::<true>()
    }

    /// The call, by thorough bodies (`THOROUGH`) or plain ones.
    #[inline(always)]
    fn by<const THOROUGH: bool>(self) -> Result<Answer, Error> {
        let (command, ctx, caller, turn) = (self.command, self.ctx, self.caller, self.turn);
        let (argv, argc) = (self.argv, self.argc);
        // CL.ALL reads up to MAX_ALL_ARGS arguments, the others MAX_ARGS: each into storage of
        // its own size, here.
        if command == Command::All {
            let mut storage = [const { MaybeUninit::uninit() }; MAX_ALL_ARGS];
            // SAFETY: the server passes argc live argument strings, alive for the command (or,
            // for a waiter, held by it).
            let call = unsafe { Call::new(ctx, argv, argc, command, caller, &mut storage) }?;
            return run_all::<THOROUGH>(&call, turn);
        }
        let mut storage = [const { MaybeUninit::uninit() }; MAX_ARGS];
        // SAFETY: as above.
        let call = unsafe { Call::new(ctx, argv, argc, command, caller, &mut storage) }?;
        match command {
            Command::Throttle => run_throttle::<THOROUGH>(&call, turn),
            Command::Fixed => run_window::<THOROUGH>(&call, turn, fixed_args::<THOROUGH>, |args| {
                Limiter::Fixed(
                    FixedWindow::new(&args.params, args.quantity, args.count_denied)
                        .laid(args.laid, args.offset_minutes),
                )
            }),
            Command::Window => {
                run_window::<THOROUGH>(&call, turn, window_args::<THOROUGH>, Limiter::sliding)
            }
            Command::Lease => run_lease(&call, turn),
            Command::Release => run_release(&call),
            Command::Holders => run_holders(&call),
            Command::Smooth => run_smooth::<THOROUGH>(&call, turn),
            Command::Top => run_top(&call),
            Command::Ban => run_ban(&call),
            Command::Unban => run_unban(&call),
            // Read above, with its own storage.
            Command::All => Err(Error::Internal),
        }
    }
}

#[inline(always)]
fn fixed_args<const THOROUGH: bool>(args: &[&[u8]]) -> Result<WindowArgs, Error> {
    args::window_args::<THOROUGH>(args, Command::Fixed)
}

#[inline(always)]
fn window_args<const THOROUGH: bool>(args: &[&[u8]]) -> Result<WindowArgs, Error> {
    args::window_args::<THOROUGH>(args, Command::Window)
}

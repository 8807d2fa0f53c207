//! Every way the server calls into this module, each behind one guard: the commands, the
//! waiters' timer and blocked-client callbacks, the command filter, the INFO section and the
//! module's configuration.
//!
//! The guard settles a pending CONFIG RESETSTAT first, so that nothing is counted or shown
//! against counters the server has already reset; then it runs the body under
//! `catch_unwind`, because a panic unwinding into the server would take every client's data
//! down with it. A command's panic becomes an error reply; a callback's, a line in the log
//! and nothing else. Here too the command's answer is sent, or its call parked: the one
//! decision between a command body and blocking.

use std::os::raw::{c_char, c_int, c_longlong, c_void};
use std::ptr;

use redis_module::raw;

use crate::all_args::MAX_KEYS;
use crate::blocking::{self, Callbacks, Pending};
use crate::command::Command;
use crate::commands::answer::{self, Answer};
use crate::commands::call::Caller;
use crate::commands::{self, Run};
use crate::decimal::parse_i64;
use crate::delayed;
use crate::denied;
use crate::error::Error;
use crate::ffi::{catch_defect, context_flags, may_wait, string_bytes, REPLAYED};
use crate::info;
use crate::lines::{self, Turn};
use crate::register;
use crate::resetstat::{self, Point};

/// Runs `body` for the server: settles a pending RESETSTAT at `point` (none for INFO's crash
/// report), then the body; a panic is logged and becomes `on_panic`'s value.
#[inline(always)]
fn guard<T>(
    ctx: *mut raw::RedisModuleCtx,
    point: Option<Point>,
    body: impl FnOnce() -> T,
    on_panic: impl FnOnce() -> T,
) -> T {
    catch_defect(ctx, || {
        if let Some(point) = point {
            resetstat::settle(point);
        }
        body()
    })
    .unwrap_or_else(on_panic)
}

/// Load and unload, guarded: the module API macro's `RedisModule_OnLoad` and `OnUnload` call
/// these bodies; a panic in one refuses the load (or the unload), logged.
pub fn guard_load(ctx: *mut raw::RedisModuleCtx, body: impl FnOnce() -> bool) -> bool {
    guard(ctx, None, body, || false)
}

/// A callback's guard: settles what a RESETSTAT already did (`Point::Callback`), and turns a
/// panic into `on_panic`'s clean-up.
fn guard_callback(ctx: *mut raw::RedisModuleCtx, body: impl FnOnce(), on_panic: impl FnOnce()) {
    guard(ctx, Some(Point::Callback), body, on_panic);
}

/// `redis-cell.top-keys`, read: CL.TOP's entries a minute.
pub unsafe extern "C" fn get_top_keys(_name: *const c_char, _data: *mut c_void) -> c_longlong {
    let size = guard(ptr::null_mut(), None, denied::size, || denied::DEFAULT_SIZE);
    c_longlong::try_from(size).unwrap_or(c_longlong::MAX)
}

/// `redis-cell.top-keys`, set (within the bounds the server checks first): the list as it
/// stood is forgotten.
pub unsafe extern "C" fn set_top_keys(
    _name: *const c_char,
    value: c_longlong,
    _data: *mut c_void,
    _error: *mut *mut raw::RedisModuleString,
) -> c_int {
    guard(
        ptr::null_mut(),
        None,
        || denied::resize(usize::try_from(value).unwrap_or(1)),
        || {},
    );
    raw::REDISMODULE_OK as c_int
}

/// A command call, guarded: its answer sent, or the call parked; then a denial counted against
/// its keys (CL.TOP), under a guard of its own.
#[inline(always)]
fn command(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    command: Command,
) -> c_int {
    let flags = context_flags(ctx);
    let point = Point::Command {
        in_transaction: flags & raw::REDISMODULE_CTX_FLAGS_MULTI != 0,
    };
    let denied = guard(
        ctx,
        Some(point),
        || dispatch(ctx, argv, argc, command, flags),
        || answer_now(ctx, command, flags, Err(Error::Internal)),
    );
    if denied != 0 {
        record_denied(ctx, argv, argc, denied);
    }
    raw::REDISMODULE_OK as c_int
}

/// Counts a denial against its keys: `denied` is where they start among the arguments, shifted
/// up 16 bits, and a bit for each key whose limiter denied. Out of line and after the answer,
/// so that the path admissions take holds nothing more across the call than before CL.TOP.
#[cold]
#[inline(never)]
fn record_denied(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    denied: usize,
) {
    // SAFETY: the server's arguments, live for the whole call.
    let record = || unsafe { denied::record(arguments(argv, argc), denied >> 16, denied as u16) };
    guard(ctx, None, record, || {});
}

/// A call's arguments as the server passes them, its name first: `argc` live strings, or none
/// where the array is null.
///
/// # Safety
/// `argv` must hold `argc` live argument strings for as long as the slice is used.
unsafe fn arguments<'a>(
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> &'a [*mut raw::RedisModuleString] {
    if argv.is_null() {
        return &[];
    }
    // SAFETY: as this function's.
    unsafe { std::slice::from_raw_parts(argv, usize::try_from(argc).unwrap_or(0)) }
}

/// Runs a client's call (or a replayed one) and answers it, or parks it when it asked to
/// wait, was denied, and may wait here. Returns a denial answered now, packed as
/// `record_denied` reads it, or 0.
#[inline(always)]
fn dispatch(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    command: Command,
    flags: u32,
) -> usize {
    // A replica or a restart replaying a call may carry the primary's instant, and does not
    // count it in the counters, which are the clients'.
    let replayed = flags & REPLAYED != 0;
    let turn = if replayed {
        Turn::Replayed
    } else {
        Turn::Arriving
    };
    // Whether the call may wait is decided here, once, and carried on the call.
    let caller = Caller {
        replayed,
        may_wait: may_wait(flags),
    };
    let run = Run {
        command,
        ctx,
        argv,
        argc,
        caller,
        turn,
    };
    settle::<true>(run, flags, run.plain())
}

/// A call plain bodies refused for what a thorough body looks further at runs again by that
/// body (commands::Run::answer), and is settled as the first run would have been.
#[cold]
#[inline(never)]
fn settle_thorough(run: Run, flags: u32) -> usize {
    settle::<false>(run, flags, run.thorough())
}

/// Answers a call's result, or parks it when it asked to wait, was denied, and may wait here;
/// `FIRST` when it comes from plain bodies.
#[inline(always)]
fn settle<const FIRST: bool>(run: Run, flags: u32, result: Result<Answer, Error>) -> usize {
    let (command, ctx, caller) = (run.command, run.ctx, run.caller);
    // SAFETY: the server passes argc live argument strings, live for the whole call.
    let args = move || unsafe { arguments(run.argv, run.argc) };
    match &result {
        Err(error) if FIRST && commands::state::looks_further(command, error) => {
            return settle_thorough(run, flags);
        }
        Ok(Answer {
            wait: Some(wait), ..
        }) if caller.may_wait && blocking::park(ctx, command, args(), wait, &CALLBACKS).is_ok() => {
            return 0;
        }
        // Counted as it is decided; the reply goes out at its instant, or at once when the
        // client cannot be blocked.
        Ok(Answer {
            reply_at_ns: Some(at_ns),
            ..
        }) if caller.may_wait => {
            let at_ns = *at_ns;
            // SAFETY: the call's live arguments.
            unsafe { answer::record(command, &result, args()) };
            if let Err(result) = delayed::delay(ctx, result, at_ns, &CALLBACKS) {
                answer::send(ctx, result);
            }
            return 0;
        }
        Ok(Answer {
            frees: Some(keys), ..
        }) => {
            for &key in args().get(keys.clone()).unwrap_or_default() {
                blocking::freed(ctx, key, &CALLBACKS);
            }
        }
        _ => {}
    }
    answer_now(ctx, command, flags, result)
}

/// Counts a call's answer (unless replayed: the counters are the clients') and sends it.
/// Returns a denial to count against its keys once out of the call's guard, packed as
/// `record_denied` reads it (the first key's place above a bit for each denying key), or 0.
#[inline(always)]
fn answer_now(
    ctx: *mut raw::RedisModuleCtx,
    command: Command,
    flags: u32,
    result: Result<Answer, Error>,
) -> usize {
    let denied = if flags & REPLAYED == 0 {
        answer::count(command, &result)
    } else {
        None
    };
    answer::send(ctx, result);
    denied.map_or(0, |(first, mask)| first << 16 | usize::from(mask))
}

/// `CL.THROTTLE key max_burst count period [quantity] [MS] [REFUND] [DRYRUN] [BLOCK timeout]`
pub extern "C" fn throttle(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    command(ctx, argv, argc, Command::Throttle)
}

/// `CL.FIXED key limit period [quantity] [MS] [REFUND] [DRYRUN] [COUNTDENIED] [BLOCK timeout]`,
/// and its replication form with `AT unix-ms`.
pub extern "C" fn fixed(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    command(ctx, argv, argc, Command::Fixed)
}

/// `CL.WINDOW key limit period [quantity] [MS] [REFUND] [DRYRUN] [BLOCK timeout]`, and its
/// replication form with `AT unix-ms`.
pub extern "C" fn window(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    command(ctx, argv, argc, Command::Window)
}

/// `CL.LEASE key limit lease_time holder [MS] [DRYRUN] [BLOCK timeout]`, and its replication
/// form with `AT unix-ms`.
pub extern "C" fn lease(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    command(ctx, argv, argc, Command::Lease)
}

/// `CL.RELEASE key holder`, and its replication form with `AT unix-ms`.
pub extern "C" fn release(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    command(ctx, argv, argc, Command::Release)
}

/// `CL.SMOOTH key permits period [quantity] [MS] [BURST span] [WARMUP span [COLD factor]]
/// [DRYRUN] [BLOCK timeout]`
pub extern "C" fn smooth(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    command(ctx, argv, argc, Command::Smooth)
}

/// `CL.HOLDERS key [MS]`
pub extern "C" fn holders(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    command(ctx, argv, argc, Command::Holders)
}

/// `CL.BAN key span [MS]`
pub extern "C" fn ban(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    command(ctx, argv, argc, Command::Ban)
}

/// `CL.UNBAN key`
pub extern "C" fn unban(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    command(ctx, argv, argc, Command::Unban)
}

/// `CL.TOP [COUNT n]`
pub extern "C" fn top(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    command(ctx, argv, argc, Command::Top)
}

/// `CL.ALL numkeys key [key ...] limiter [limiter ...] [QUANTITY quantity] [MS] [REFUND]
/// [DRYRUN] [DETAIL] [HOLDER holder] [ATMOST] [BLOCK timeout]`, and the server's question of where its keys are.
pub extern "C" fn all(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    if register::asks_for_keys(ctx) {
        // The server asks where the keys are (cluster routing), without running the call.
        guard(ctx, None, || report_key_positions(ctx, argv, argc), || {});
        return raw::REDISMODULE_OK as c_int;
    }
    command(ctx, argv, argc, Command::All)
}

/// Tells the server where CL.ALL's keys are: the `numkeys` arguments after `numkeys`. Cluster
/// routing (and `CROSSSLOT`) asks the command itself, not its key spec, for these. A call
/// whose `numkeys` is not a count of keys it has reports none, and is then refused when run.
fn report_key_positions(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) {
    if argv.is_null() || argc < 2 {
        return;
    }
    // SAFETY: the server passes argc live argument strings.
    unsafe {
        let Some(text) = string_bytes(*argv.add(1)) else {
            return;
        };
        let numkeys = parse_i64(text);
        let Some(numkeys) = numkeys
            .and_then(|n| c_int::try_from(n).ok())
            .filter(|&n| (1..=MAX_KEYS as c_int).contains(&n) && n <= argc - 2)
        else {
            return;
        };
        let flags = raw::REDISMODULE_CMD_KEY_RW
            | raw::REDISMODULE_CMD_KEY_ACCESS
            | raw::REDISMODULE_CMD_KEY_UPDATE;
        for position in 2..2 + numkeys {
            register::report_key(ctx, position, flags as c_int);
        }
    }
}

/// The server's ways back in for a waiter.
static CALLBACKS: Callbacks = Callbacks {
    reply: Some(on_reply),
    timeout: Some(on_unblock),
    free: Some(free_reply),
    disconnect: Some(on_disconnect),
    timer: Some(on_timer),
    release: Some(on_release),
};

/// The timer of a reply delayed until its instant.
extern "C" fn on_release(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    guard_callback(ctx, || delayed::due(ctx, data, &CALLBACKS), || {});
}

/// A waiter's timer.
extern "C" fn on_timer(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    guard_callback(ctx, || blocking::timer_fired(ctx, data, &CALLBACKS), || {});
}

/// The reply callback of a waiter whose wait ended.
unsafe extern "C" fn on_reply(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    guard_callback(ctx, || blocking::reply(ctx, &CALLBACKS), || {});
    raw::REDISMODULE_OK as c_int
}

/// The server is done with a finished wait and hands back its data.
unsafe extern "C" fn free_reply(ctx: *mut raw::RedisModuleCtx, pending: *mut c_void) {
    if pending.is_null() {
        return;
    }
    // SAFETY: made by Box::into_raw when the client was unblocked, freed once, here.
    let pending = *unsafe { Box::from_raw(pending.cast::<Pending>()) };
    let admitting = pending.admitting();
    // A waiter whose clean-up failed still leaves its lines: it would hold them for good.
    let forget = move || {
        admitting
            .into_iter()
            .for_each(|place| blocking::forget(ctx, place))
    };
    guard_callback(ctx, || blocking::free(ctx, pending, &CALLBACKS), forget);
}

/// The timeout callback, which only `CLIENT UNBLOCK` reaches (the server's timeout is off).
unsafe extern "C" fn on_unblock(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    guard_callback(
        ctx,
        || blocking::unblocked_by_client(ctx, &CALLBACKS),
        || {},
    );
    raw::REDISMODULE_OK as c_int
}

/// A blocked client went away: one whose reply was delayed, or a waiter.
unsafe extern "C" fn on_disconnect(
    ctx: *mut raw::RedisModuleCtx,
    client: *mut raw::RedisModuleBlockedClient,
) {
    guard_callback(
        ctx,
        || {
            if !delayed::left(ctx, client) {
                blocking::disconnected(ctx, client, &CALLBACKS);
            }
        },
        || {},
    );
}

/// The command filter, which sees every command go by (CONFIG RESETSTAT among them).
pub extern "C" fn filter(filter: *mut raw::RedisModuleCommandFilterCtx) {
    guard(
        std::ptr::null_mut(),
        Some(Point::Filter),
        || resetstat::observe(filter),
        || {},
    );
}

/// The INFO section; a crash report shows the counters as they are, settling nothing.
pub extern "C" fn info(ctx: *mut raw::RedisModuleInfoCtx, for_crash_report: c_int) {
    let point = (for_crash_report == 0).then_some(Point::Info);
    guard(
        std::ptr::null_mut(),
        point,
        || info::add_section(ctx, lines::waiting()),
        || {},
    );
}

//! Waiting inside the server for capacity (`BLOCK`). A call that asked to wait and was denied
//! is parked as a blocked client and stands in the line of each of its keys (queue.rs). A
//! module timer tries it again at the instant its units fit, when it is first in all its
//! lines, and at its deadline. An admission runs the command exactly as an immediate call
//! does (commands.rs decides, writes and propagates); waiting itself writes and propagates
//! nothing.
//!
//! Everything here runs on the server's main thread: commands, timers, and the blocked
//! clients' callbacks. The lock only makes the shared state sound, and is never held while
//! the server runs other code.

use std::collections::{HashMap, VecDeque};
use std::os::raw::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::{Mutex, MutexGuard};
use redis_module::raw;

use crate::clock;
use crate::commands::{self, Answer, Command, Wait};
use crate::error::Error;
use crate::queue::{Place, Queues};
use crate::redirect::{self, Serving};
use crate::stats::{self, Waited};
use crate::store::{api, succeeded};

const NANOS_PER_MILLI: i64 = 1_000_000;

/// Where a call stands in the lines of its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// Replayed from the primary or the AOF: it did there what it does here, and no line holds
    /// it back.
    Replayed,
    /// A client's call as it arrives: behind everyone waiting.
    Arriving,
    /// A waiter, at its place.
    Waiting(Place),
    /// A waiter that leaves the line (CLIENT UNBLOCK … TIMEOUT): it takes nothing.
    Leaving,
}

/// The line of one key: its database and its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct LineKey {
    db: c_int,
    name: Vec<u8>,
}

/// A parked call.
struct Waiter {
    client: *mut raw::RedisModuleBlockedClient,
    command: Command,
    /// The call's arguments, its name first, held until it leaves.
    argv: Vec<*mut raw::RedisModuleString>,
    /// Where its first key is among them (all its keys share a slot).
    key_at: usize,
    db: c_int,
    deadline_ms: Option<i64>,
    timer: Option<raw::RedisModuleTimerID>,
    /// When its timer tries it, while it is first in all its lines.
    due_ns: Option<i64>,
}

#[derive(Default)]
struct Lines {
    queues: Queues<LineKey>,
    waiters: HashMap<Place, Waiter>,
    by_client: HashMap<usize, Place>,
}

/// The waiters, when there are or were any.
struct Shared(Option<Lines>);

// SAFETY: the pointers in a waiter are server objects, used only on the server's main thread,
// where every command, timer and callback of this module runs.
unsafe impl Send for Shared {}

static LINES: Mutex<Shared> = Mutex::new(Shared(None));
/// How many wait: a call on a key reads only this while no one does.
static WAITERS: AtomicUsize = AtomicUsize::new(0);

/// How many calls wait now.
pub fn waiting() -> usize {
    WAITERS.load(Ordering::Relaxed)
}

/// The lines. Only a call made from inside this module's own work (a keyspace event that
/// runs one of its commands) could find them taken: that call gets an error, not a deadlock.
fn lines() -> Result<MutexGuard<'static, Shared>, Error> {
    LINES.try_lock().ok_or(Error::Internal)
}

impl Shared {
    fn get(&mut self) -> &mut Lines {
        self.0.get_or_insert_with(Lines::default)
    }
}

/// Whether waiters who came before the call hold it back on `key`, and if so, how long until
/// the first of them is due to be tried (0 when that is not known yet).
#[inline(always)]
pub fn held_back(
    ctx: *mut raw::RedisModuleCtx,
    key: *mut raw::RedisModuleString,
    turn: Turn,
) -> Result<Option<i64>, Error> {
    if waiting() == 0 || turn == Turn::Replayed {
        return Ok(None);
    }
    held_back_in_line(ctx, key, turn)
}

#[cold]
fn held_back_in_line(
    ctx: *mut raw::RedisModuleCtx,
    key: *mut raw::RedisModuleString,
    turn: Turn,
) -> Result<Option<i64>, Error> {
    let line = line_key(ctx, key)?;
    let now_ns = clock::now_ns()?;
    let mut shared = lines()?;
    let lines = shared.get();
    let Some(first) = lines.queues.first(&line) else {
        return Ok(None);
    };
    let held = match turn {
        Turn::Replayed => false,
        Turn::Arriving | Turn::Leaving => true,
        Turn::Waiting(place) => first < place,
    };
    Ok(held.then(|| {
        lines
            .waiters
            .get(&first)
            .and_then(|waiter| waiter.due_ns)
            .map_or(0, |due| due.saturating_sub(now_ns).max(0))
    }))
}

/// Parks a call that asked to wait: blocks its client, puts it at the end of its keys' lines,
/// and sets its timer. An error leaves the client unblocked, to be answered at once.
pub fn park(
    ctx: *mut raw::RedisModuleCtx,
    command: Command,
    argv: &[*mut raw::RedisModuleString],
    wait: &Wait,
) -> Result<(), Error> {
    let now_ns = clock::now_ns()?;
    let mut keys = Vec::with_capacity(wait.keys.len());
    for position in wait.keys.clone() {
        keys.push(line_key(ctx, *argv.get(position).ok_or(Error::Internal)?)?);
    }
    let deadline_ms = (wait.timeout_ms > 0)
        .then(|| (now_ns / NANOS_PER_MILLI).checked_add(wait.timeout_ms))
        .map(|deadline| deadline.ok_or(Error::TooLarge("timeout")))
        .transpose()?;
    let (block, disconnect, retain, selected) = (
        api(unsafe { raw::RedisModule_BlockClient })?,
        api(unsafe { raw::RedisModule_SetDisconnectCallback })?,
        api(unsafe { raw::RedisModule_RetainString })?,
        api(unsafe { raw::RedisModule_GetSelectedDb })?,
    );
    let mut shared = lines()?;
    // SAFETY: ctx is the running command's context, which may block (the caller checked the
    // context's flags); the callbacks are this module's and live as long as it is loaded, which
    // the server ensures while it has blocked clients. The server's own timeout is off (0):
    // the module's timers keep the deadline, to the millisecond.
    let (client, db) = unsafe {
        let client = block(ctx, Some(on_reply), Some(on_unblock), Some(free_reply), 0);
        if client.is_null() {
            return Err(Error::Internal);
        }
        disconnect(client, Some(on_disconnect));
        for &arg in argv {
            retain(std::ptr::null_mut(), arg);
        }
        (client, selected(ctx))
    };
    let lines = shared.get();
    let place = lines.queues.join(keys);
    let first = lines.queues.is_first(place);
    lines.waiters.insert(
        place,
        Waiter {
            client,
            command,
            argv: argv.to_vec(),
            key_at: wait.keys.start,
            db,
            deadline_ms,
            timer: None,
            due_ns: None,
        },
    );
    lines.by_client.insert(client as usize, place);
    WAITERS.fetch_add(1, Ordering::Relaxed);
    drop(shared);
    stats::WAITS.record(Waited::Parked);
    let try_at = first.then(|| now_ns.saturating_add(wait.fits_in_ns));
    arm(ctx, place, try_at, now_ns)
}

/// Sets the waiter's one timer for the earlier of `try_at_ns` and its deadline (none when it
/// has neither), replacing the one it had.
fn arm(
    ctx: *mut raw::RedisModuleCtx,
    place: Place,
    try_at_ns: Option<i64>,
    now_ns: i64,
) -> Result<(), Error> {
    let (old, at_ns) = {
        let mut shared = lines()?;
        let Some(waiter) = shared.get().waiters.get_mut(&place) else {
            return Ok(());
        };
        let deadline_ns = waiter
            .deadline_ms
            .map(|ms| ms.saturating_mul(NANOS_PER_MILLI));
        waiter.due_ns = try_at_ns;
        let at_ns = match (try_at_ns, deadline_ns) {
            (Some(try_at), Some(deadline)) => Some(try_at.min(deadline)),
            (try_at, deadline) => try_at.or(deadline),
        };
        (waiter.timer.take(), at_ns)
    };
    stop_timer(ctx, old);
    let Some(at_ns) = at_ns else {
        return Ok(());
    };
    let period_ms = period_until(at_ns, now_ns);
    let create = api(unsafe { raw::RedisModule_CreateTimer })?;
    // SAFETY: ctx is a live module context; the data is the waiter's place, not a pointer.
    let timer = unsafe {
        create(
            ctx,
            period_ms,
            Some(on_timer),
            place as usize as *mut c_void,
        )
    };
    if let Some(waiter) = lines()?.get().waiters.get_mut(&place) {
        waiter.timer = Some(timer);
    }
    Ok(())
}

/// A timer's period, in whole milliseconds, to fire at the first reading of the server's clock
/// at or after `at_ns`, never before. The clock reads in steps (on Redis 7.0, whole
/// milliseconds), so that reading comes at the step at or after `at_ns`; the timer counts from
/// the precise time now, not from the last step.
fn period_until(at_ns: i64, now_ns: i64) -> i64 {
    let step = clock::resolution_ns();
    let at_ns = at_ns.saturating_add(step - 1) / step * step;
    let now_ns = clock::precise_now_ns().unwrap_or(now_ns).max(now_ns);
    let wait_ns = at_ns.saturating_sub(now_ns).max(0);
    // Whole milliseconds, rounded up: a module timer never fires early.
    wait_ns / NANOS_PER_MILLI + i64::from(wait_ns % NANOS_PER_MILLI > 0)
}

fn stop_timer(ctx: *mut raw::RedisModuleCtx, timer: Option<raw::RedisModuleTimerID>) {
    if let (Some(timer), Some(stop)) = (timer, unsafe { raw::RedisModule_StopTimer }) {
        let mut data = std::ptr::null_mut();
        // SAFETY: ctx is a live module context; the timer is this module's.
        unsafe { stop(ctx, timer, &mut data) };
    }
}

/// A waiter's timer: its units should fit now, or its deadline has come.
extern "C" fn on_timer(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    let place = data as usize as Place;
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if let Ok(mut shared) = lines() {
            if let Some(waiter) = shared.get().waiters.get_mut(&place) {
                waiter.timer = None;
            }
        }
        serve(ctx, place);
    }));
}

/// Tries the waiter at `place`, then every waiter its leaving makes first in all its lines,
/// in this one timer's context: a run of waiters whose units are all free goes through at
/// once, and its writes reach replicas in one transaction.
fn serve(ctx: *mut raw::RedisModuleCtx, place: Place) {
    let mut work = VecDeque::from([place]);
    while let Some(place) = work.pop_front() {
        work.extend(attempt(ctx, place));
    }
}

/// One try of a waiter: admitted, timed out, or set to try again. Returns the waiters its
/// leaving made first.
fn attempt(ctx: *mut raw::RedisModuleCtx, place: Place) -> Vec<Place> {
    let Ok(mut shared) = lines() else {
        return Vec::new();
    };
    let lines = shared.get();
    let Some(waiter) = lines.waiters.get(&place) else {
        return Vec::new();
    };
    let (command, mut argv, key_at, db, deadline_ms) = (
        waiter.command,
        waiter.argv.clone(),
        waiter.key_at,
        waiter.db,
        waiter.deadline_ms,
    );
    let first = lines.queues.is_first(place);
    drop(shared);

    let now_ns = match clock::now_ns() {
        Ok(now) => now,
        Err(error) => return finish(ctx, place, Err(error), Waited::TimedOut),
    };
    let expired = deadline_ms.is_some_and(|ms| now_ns >= ms.saturating_mul(NANOS_PER_MILLI));
    let retry_soon = |ctx| {
        let _ = arm(ctx, place, Some(now_ns + RETRY_NS), now_ns);
        Vec::new()
    };
    if !first && !expired {
        let _ = arm(ctx, place, None, now_ns);
        return Vec::new();
    }
    // Whether it may take its units now, if they fit; else it can only time out.
    let mut may_take = first;
    if first {
        match writable(ctx) {
            Writable::Yes => {}
            Writable::Replica => return finish(ctx, place, Err(Error::Readonly), Waited::Left),
            Writable::Paused if expired => may_take = false,
            Writable::Paused => return retry_soon(ctx),
        }
    }
    if let Some(select) = unsafe { raw::RedisModule_SelectDb } {
        // SAFETY: ctx is the timer's context; db is the one the call was made in.
        unsafe { select(ctx, db) };
    }
    if may_take && commands::context_flags(ctx) & raw::REDISMODULE_CTX_FLAGS_CLUSTER != 0 {
        let key = argv.get(key_at).copied().unwrap_or(std::ptr::null_mut());
        match redirect::serving(ctx, key) {
            Serving::Here => {}
            Serving::Migrating if expired => may_take = false,
            Serving::Migrating => return retry_soon(ctx),
            Serving::Elsewhere(error) => {
                return finish(ctx, place, Ok(Answer::redirect(error)), Waited::Left);
            }
        }
    }
    let turn = if may_take {
        Turn::Waiting(place)
    } else {
        Turn::Leaving
    };
    let argc = c_int::try_from(argv.len()).unwrap_or(0);
    let result = command.run(ctx, argv.as_mut_ptr(), argc, false, turn);
    match &result {
        Ok(Answer {
            wait: Some(wait), ..
        }) if !expired => {
            let _ = arm(
                ctx,
                place,
                Some(now_ns.saturating_add(wait.fits_in_ns)),
                now_ns,
            );
            Vec::new()
        }
        Ok(answer) if answer.admitted() => finish(ctx, place, result, Waited::Admitted),
        _ => finish(ctx, place, result, Waited::TimedOut),
    }
}

/// How soon a waiter held up by a failover's pause or a slot's migration looks again.
const RETRY_NS: i64 = 10 * NANOS_PER_MILLI;

enum Writable {
    Yes,
    /// This node is a replica now: the server answers its own blocked clients so on a role
    /// change; a waiter found here gets READONLY and writes nothing.
    Replica,
    /// A failover is pausing writes: try again shortly.
    Paused,
}

fn writable(ctx: *mut raw::RedisModuleCtx) -> Writable {
    let flags = commands::context_flags(ctx);
    if flags & raw::REDISMODULE_CTX_FLAGS_MASTER == 0 {
        return Writable::Replica;
    }
    // SAFETY: a plain query of the server's state.
    let paused = unsafe { raw::RedisModule_AvoidReplicaTraffic.is_some_and(|avoid| avoid() != 0) };
    if paused {
        Writable::Paused
    } else {
        Writable::Yes
    }
}

/// Takes a waiter out of its lines and forgets it. Returns it, and the waiters this made first.
fn remove(ctx: *mut raw::RedisModuleCtx, place: Place) -> Option<(Waiter, Vec<Place>)> {
    let (waiter, promoted) = {
        let mut shared = lines().ok()?;
        let lines = shared.get();
        let waiter = lines.waiters.remove(&place)?;
        lines.by_client.remove(&(waiter.client as usize));
        let promoted = lines.queues.leave(place);
        WAITERS.fetch_sub(1, Ordering::Relaxed);
        (waiter, promoted)
    };
    stop_timer(ctx, waiter.timer);
    if let Some(free) = unsafe { raw::RedisModule_FreeString } {
        for &arg in &waiter.argv {
            // SAFETY: each argument was retained once when the call was parked.
            unsafe { free(std::ptr::null_mut(), arg) };
        }
    }
    Some((waiter, promoted))
}

/// Ends a wait with this answer: the client is unblocked, and its reply sent, by the server
/// when it next can (`on_reply`). Returns the waiters this made first.
fn finish(
    ctx: *mut raw::RedisModuleCtx,
    place: Place,
    result: Result<Answer, Error>,
    how: Waited,
) -> Vec<Place> {
    let Some((waiter, promoted)) = remove(ctx, place) else {
        return Vec::new();
    };
    commands::record(waiter.command, &result);
    stats::WAITS.record(how);
    let reply = Box::into_raw(Box::new(result));
    let unblocked = unsafe { raw::RedisModule_UnblockClient }
        // SAFETY: the client is blocked by this module and unblocked once, here; the server
        // hands the reply back to on_reply and then to free_reply.
        .map(|unblock| unsafe { unblock(waiter.client, reply.cast()) });
    if unblocked.is_none_or(|status| succeeded(status).is_err()) {
        // SAFETY: the server did not take the reply.
        drop(unsafe { Box::from_raw(reply) });
    }
    promoted
}

/// Ends a wait whose client the server is unblocking itself, and lets the waiters this made
/// first try at once.
fn leave(ctx: *mut raw::RedisModuleCtx, place: Place, how: Waited) -> Option<Waiter> {
    let (waiter, promoted) = remove(ctx, place)?;
    stats::WAITS.record(how);
    if let Some(unblock) = unsafe { raw::RedisModule_UnblockClient } {
        // SAFETY: the server is done with the client; this frees the module's handle on it.
        unsafe { unblock(waiter.client, std::ptr::null_mut()) };
    }
    if let Ok(now_ns) = clock::now_ns() {
        for next in promoted {
            let _ = arm(ctx, next, Some(now_ns), now_ns);
        }
    }
    Some(waiter)
}

/// Sends a finished wait's reply to its client.
extern "C" fn on_reply(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    let _ = catch_unwind(AssertUnwindSafe(|| send_finished(ctx)));
    raw::REDISMODULE_OK as c_int
}

/// Sends the reply a finished wait left for its client; false when there is none.
fn send_finished(ctx: *mut raw::RedisModuleCtx) -> bool {
    let reply = unsafe { raw::RedisModule_GetBlockedClientPrivateData }
        // SAFETY: ctx is a blocked client's reply or timeout context.
        .map_or(std::ptr::null_mut(), |get| unsafe { get(ctx) })
        .cast::<Result<Answer, Error>>();
    // SAFETY: the only private data this module gives the server is a boxed result, alive
    // until free_reply.
    match unsafe { reply.as_ref() } {
        Some(result) => {
            commands::send(ctx, result);
            true
        }
        None => false,
    }
}

extern "C" fn free_reply(_ctx: *mut raw::RedisModuleCtx, reply: *mut c_void) {
    if !reply.is_null() {
        // SAFETY: made by Box::into_raw in finish, freed once, here.
        drop(unsafe { Box::from_raw(reply.cast::<Result<Answer, Error>>()) });
    }
}

/// `CLIENT UNBLOCK id TIMEOUT` (the server's own timeout is off): the denial of this instant,
/// and nothing taken.
extern "C" fn on_unblock(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // Admitted already, the reply on its way: that answer stands.
        if send_finished(ctx) {
            return;
        }
        let place = unsafe { raw::RedisModule_GetBlockedClientHandle }
            // SAFETY: ctx is the blocked client's timeout context.
            .map(|handle| unsafe { handle(ctx) } as usize)
            .and_then(|client| lines().ok()?.get().by_client.get(&client).copied());
        let Some(place) = place else {
            commands::send(ctx, &Err(Error::Internal));
            return;
        };
        let held = lines().ok().and_then(|mut shared| {
            let waiter = shared.get().waiters.get(&place)?;
            Some((waiter.command, waiter.argv.clone()))
        });
        let Some((command, mut argv)) = held else {
            return;
        };
        let argc = c_int::try_from(argv.len()).unwrap_or(0);
        let result = command.run(ctx, argv.as_mut_ptr(), argc, false, Turn::Leaving);
        commands::send(ctx, &result);
        commands::record(command, &result);
        leave(ctx, place, Waited::TimedOut);
    }));
    raw::REDISMODULE_OK as c_int
}

/// The client went away while waiting (disconnected, `CLIENT UNBLOCK id ERROR`, a role
/// change): it takes nothing.
extern "C" fn on_disconnect(
    ctx: *mut raw::RedisModuleCtx,
    client: *mut raw::RedisModuleBlockedClient,
) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let place = lines()
            .ok()
            .and_then(|mut shared| shared.get().by_client.get(&(client as usize)).copied());
        // None: its wait had ended, the reply not yet sent; the server frees it.
        if let Some(place) = place {
            if let Some(waiter) = leave(ctx, place, Waited::Left) {
                waiter.command.counters().record(stats::Counted::Denied);
            }
        }
    }));
}

fn line_key(
    ctx: *mut raw::RedisModuleCtx,
    key: *mut raw::RedisModuleString,
) -> Result<LineKey, Error> {
    let (ptr_len, selected) = (
        api(unsafe { raw::RedisModule_StringPtrLen })?,
        api(unsafe { raw::RedisModule_GetSelectedDb })?,
    );
    let mut len = 0usize;
    // SAFETY: key is a live argument string; ctx a live context.
    unsafe {
        let ptr = ptr_len(key, &mut len);
        if ptr.is_null() {
            return Err(Error::Internal);
        }
        Ok(LineKey {
            db: selected(ctx),
            name: std::slice::from_raw_parts(ptr.cast::<u8>(), len).to_vec(),
        })
    }
}

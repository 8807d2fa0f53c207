//! Waiting inside the server for capacity (`BLOCK`). A call that asked to wait and was denied
//! is parked as a blocked client and stands in the line of each of its keys (queue.rs). A
//! module timer looks again at the instant its units fit, when it is first in all its lines,
//! and at its deadline. When they fit, the client is unblocked, and the call takes its units
//! in the reply callback, as the reply goes out: it runs exactly as an immediate call does
//! (commands.rs decides, writes and propagates), and only for a client still there to be
//! answered. Waiting itself writes and propagates nothing.
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
    /// A waiter's look at whether its units fit: decided as `Waiting`, written nowhere.
    Checking(Place),
    /// A waiter that leaves the line (CLIENT UNBLOCK … TIMEOUT): it takes nothing.
    Leaving,
}

impl Turn {
    /// Whether a call at this turn writes what it is admitted to take.
    pub fn writes(self) -> bool {
        !matches!(self, Turn::Checking(_) | Turn::Leaving)
    }
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
    argv: Held,
    /// Where its keys are among them.
    keys: std::ops::Range<usize>,
    db: c_int,
    deadline_ms: Option<i64>,
    timer: Option<raw::RedisModuleTimerID>,
    /// When its timer tries it, while it is first in all its lines.
    due_ns: Option<i64>,
    /// Its units fit and its client is being unblocked: it takes them in `on_reply`, and
    /// stays first in its lines until then.
    admitting: bool,
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

impl Lines {
    /// The place of the waiter this blocked client is, unless it is being admitted (its reply
    /// on the way, which `on_reply` or `free_reply` ends).
    fn waiting_client(&self, client: usize) -> Option<Place> {
        let place = *self.by_client.get(&client)?;
        self.waiters
            .get(&place)
            .filter(|waiter| !waiter.admitting)
            .map(|_| place)
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
    let due_ns = {
        let mut shared = lines()?;
        let lines = shared.get();
        let Some(first) = lines.queues.first(&line) else {
            return Ok(None);
        };
        let held = match turn {
            Turn::Replayed => false,
            Turn::Arriving | Turn::Leaving => true,
            Turn::Waiting(place) | Turn::Checking(place) => first < place,
        };
        if !held {
            return Ok(None);
        }
        lines.waiters.get(&first).and_then(|waiter| waiter.due_ns)
    };
    let now_ns = clock::now_ns()?;
    Ok(Some(
        due_ns.map_or(0, |due| due.saturating_sub(now_ns).max(0)),
    ))
}

/// Parks a call that asked to wait: blocks its client, puts it at the end of its keys' lines,
/// and sets its timer. An error comes before the client is blocked, which is then answered at
/// once; after that, nothing fails.
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
    let (block, disconnect, selected) = (
        api(unsafe { raw::RedisModule_BlockClient })?,
        api(unsafe { raw::RedisModule_SetDisconnectCallback })?,
        api(unsafe { raw::RedisModule_GetSelectedDb })?,
    );
    api(unsafe { raw::RedisModule_CreateTimer })?;
    api(unsafe { raw::RedisModule_UnblockClient })?;
    let mut shared = lines()?;
    // SAFETY: ctx is the running command's context, which may block (the caller checked the
    // context's flags); the callbacks are this module's and live as long as it is loaded, which
    // the server ensures while it has blocked clients. The server's own timeout is off (0):
    // the module's timers keep the deadline, to the millisecond.
    let (client, db) = unsafe {
        let client = block(ctx, Some(on_reply), unblock_callback(), Some(free_reply), 0);
        if client.is_null() {
            return Err(Error::Internal);
        }
        disconnect(client, Some(on_disconnect));
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
            argv: Held::new(argv),
            keys: wait.keys.clone(),
            db,
            deadline_ms,
            timer: None,
            due_ns: None,
            admitting: false,
        },
    );
    lines.by_client.insert(client as usize, place);
    WAITERS.fetch_add(1, Ordering::Relaxed);
    drop(shared);
    stats::WAITS.record(Waited::Parked);
    let try_at = first.then(|| now_ns.saturating_add(wait.fits_in_ns));
    if let Err(error) = arm(ctx, place, try_at, now_ns) {
        finish(ctx, place, Err(error), Waited::TimedOut);
    }
    Ok(())
}

/// CLIENT UNBLOCK reaches a module's blocked client only through its timeout callback. Redis
/// before 7.4 (and Valkey before 8) runs that callback even for a client the module has just
/// unblocked, and then sends no reply (7.0) or stops on an assertion (7.2); those servers get
/// none, and CLIENT UNBLOCK leaves their waiters alone. Redis 7.4 and Valkey 8 are told apart
/// by an API they added, RedisModule_AddACLCategory.
fn unblock_callback() -> raw::RedisModuleCmdFunc {
    // SAFETY: reads an API pointer, filled in once at load.
    unsafe { raw::RedisModule_AddACLCategory }.map(|_| on_unblock as _)
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
        stats::before_command(false);
        serve(ctx, place);
    }));
}

/// Tries the waiter at `place`, then every waiter its leaving makes first in all its lines,
/// in this one timer's context.
fn serve(ctx: *mut raw::RedisModuleCtx, place: Place) {
    let mut work = VecDeque::from([place]);
    while let Some(place) = work.pop_front() {
        work.extend(attempt(ctx, place));
    }
}

/// One look at a waiter, from its timer: its units fit (it is unblocked, to take them in
/// `on_reply`), its time is up (it gets the denial), or it waits on. Returns the waiters its
/// leaving made first.
fn attempt(ctx: *mut raw::RedisModuleCtx, place: Place) -> Vec<Place> {
    let Ok(mut shared) = lines() else {
        return Vec::new();
    };
    let lines = shared.get();
    let Some(waiter) = lines.waiters.get(&place).filter(|waiter| !waiter.admitting) else {
        return Vec::new();
    };
    let (command, argv, keys, db, deadline_ms) = (
        waiter.command,
        waiter.argv.again(),
        waiter.keys.clone(),
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
    if !first && !expired {
        let _ = arm(ctx, place, None, now_ns);
        return Vec::new();
    }
    let retry_soon = |ctx| {
        let _ = arm(ctx, place, Some(now_ns + RETRY_NS), now_ns);
        Vec::new()
    };
    if let Some(select) = unsafe { raw::RedisModule_SelectDb } {
        // SAFETY: ctx is the timer's context; db is the one the call was made in.
        unsafe { select(ctx, db) };
    }
    // Whether it may take its units now, if they fit; else it can only time out.
    let mut may_take = first;
    if first {
        match writable(ctx, &argv, keys) {
            Writable::Yes => {}
            Writable::Never(error) => return finish(ctx, place, error, Waited::Left),
            Writable::NotNow if expired => may_take = false,
            Writable::NotNow => return retry_soon(ctx),
        }
    }
    let turn = if may_take {
        Turn::Checking(place)
    } else {
        Turn::Leaving
    };
    let result = command.run(ctx, argv.as_ptr(), argv.argc(), false, turn);
    match &result {
        Ok(answer) if may_take && answer.admitted() => {
            if admit(place) {
                Vec::new()
            } else {
                retry_soon(ctx)
            }
        }
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
        _ => finish(ctx, place, result, Waited::TimedOut),
    }
}

/// The waiter's units fit: its client is unblocked, and `on_reply` takes them as the reply
/// goes out. It stays first in its lines meanwhile, so that nothing else takes them.
/// False if it could not be unblocked: it then waits on.
fn admit(place: Place) -> bool {
    let client = {
        let Ok(mut shared) = lines() else {
            return false;
        };
        let Some(waiter) = shared.get().waiters.get_mut(&place) else {
            return false;
        };
        waiter.admitting = true;
        waiter.client
    };
    if unblock(client, Pending::Admit(place)) {
        return true;
    }
    if let Ok(mut shared) = lines() {
        if let Some(waiter) = shared.get().waiters.get_mut(&place) {
            waiter.admitting = false;
        }
    }
    false
}

/// How soon a waiter held up by a failover's pause or a slot's migration looks again.
const RETRY_NS: i64 = 10 * NANOS_PER_MILLI;

enum Writable {
    Yes,
    /// Not here, ever: the answer the waiter gets instead (a replica's READONLY, a moved
    /// slot's redirect).
    Never(Result<Answer, Error>),
    /// A failover's pause of writes, a slot being migrated, or memory over `maxmemory`: look
    /// again shortly.
    NotNow,
}

/// Whether an admission may write here now, as the server checks a client's write command
/// before running it: the role, a failover's pause, memory, and in a cluster whether the
/// slot of the waiter's keys is served here.
fn writable(ctx: *mut raw::RedisModuleCtx, argv: &Held, keys: std::ops::Range<usize>) -> Writable {
    let flags = commands::context_flags(ctx);
    if flags & raw::REDISMODULE_CTX_FLAGS_MASTER == 0 {
        return Writable::Never(Err(Error::Readonly));
    }
    // SAFETY: a plain query of the server's state.
    let paused = unsafe { raw::RedisModule_AvoidReplicaTraffic.is_some_and(|avoid| avoid() != 0) };
    if paused || flags & raw::REDISMODULE_CTX_FLAGS_OOM != 0 {
        return Writable::NotNow;
    }
    if flags & raw::REDISMODULE_CTX_FLAGS_CLUSTER != 0 {
        match redirect::serving(ctx, argv.get(keys).unwrap_or_default()) {
            Serving::Here => {}
            Serving::NotNow => return Writable::NotNow,
            Serving::Elsewhere(error) => return Writable::Never(Ok(Answer::redirect(error))),
        }
    }
    Writable::Yes
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
    Some((waiter, promoted))
}

/// What a waiter's client gets when the server next runs its reply callback.
enum Pending {
    /// Its units fit: take them, and answer.
    Admit(Place),
    /// Its answer, final: a denial, an error, a redirect.
    Answer(Result<Answer, Error>),
    /// Answered.
    Done,
}

/// Unblocks a waiter's client; the server runs `on_reply` with `pending` when it next can,
/// unless the client has gone, and then `free_reply`. False if the server refused.
fn unblock(client: *mut raw::RedisModuleBlockedClient, pending: Pending) -> bool {
    let pending = Box::into_raw(Box::new(pending));
    let unblocked = unsafe { raw::RedisModule_UnblockClient }
        // SAFETY: the client is blocked by this module and unblocked once, here; the server
        // hands `pending` back to on_reply and then to free_reply.
        .map(|unblock| unsafe { unblock(client, pending.cast()) });
    if unblocked.is_none_or(|status| succeeded(status).is_err()) {
        // SAFETY: the server did not take it.
        drop(unsafe { Box::from_raw(pending) });
        return false;
    }
    true
}

/// Ends a wait with this answer and unblocks the client. Returns the waiters this made first.
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
    unblock(waiter.client, Pending::Answer(result));
    promoted
}

/// Lets waiters made first by another's leaving look at once, from a timer of their own.
fn promote(ctx: *mut raw::RedisModuleCtx, promoted: Vec<Place>) {
    if let Ok(now_ns) = clock::now_ns() {
        for next in promoted {
            let _ = arm(ctx, next, Some(now_ns), now_ns);
        }
    }
}

/// Takes a waiter whose client is answered, or gone, out of its lines, counts how its wait
/// ended, and lets the next waiters look.
fn depart(ctx: *mut raw::RedisModuleCtx, place: Place, how: Waited) -> Option<Waiter> {
    let (waiter, promoted) = remove(ctx, place)?;
    stats::WAITS.record(how);
    promote(ctx, promoted);
    Some(waiter)
}

/// Ends a wait whose client the server is unblocking itself (disconnected, CLIENT UNBLOCK, a
/// role change): frees the module's handle on it, and lets the next waiters look.
fn leave(ctx: *mut raw::RedisModuleCtx, place: Place, how: Waited) -> Option<Waiter> {
    let waiter = depart(ctx, place, how)?;
    if let Some(unblock) = unsafe { raw::RedisModule_UnblockClient } {
        // SAFETY: the server is done with the client; this frees the module's handle on it.
        unsafe { unblock(waiter.client, std::ptr::null_mut()) };
    }
    Some(waiter)
}

/// The reply callback: the server is about to answer a waiter whose wait ended. An admission
/// takes its units here, with the client's own context, as an immediate call would.
extern "C" fn on_reply(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let pending = unsafe { raw::RedisModule_GetBlockedClientPrivateData }
            // SAFETY: ctx is a blocked client's reply context.
            .map_or(std::ptr::null_mut(), |get| unsafe { get(ctx) })
            .cast::<Pending>();
        // SAFETY: the only private data this module gives the server is a boxed Pending,
        // alive until free_reply; the server runs these callbacks one at a time.
        let Some(pending) = (unsafe { pending.as_mut() }) else {
            return;
        };
        stats::before_command(false);
        match std::mem::replace(pending, Pending::Done) {
            Pending::Admit(place) => {
                // Kept until it has taken its units: should it fail halfway, free_reply
                // still takes the waiter out of its lines.
                *pending = Pending::Admit(place);
                take(ctx, place);
                *pending = Pending::Done;
            }
            Pending::Answer(result) => commands::send(ctx, result),
            Pending::Done => {}
        }
    }));
    raw::REDISMODULE_OK as c_int
}

/// An admitted waiter takes its units and gets its reply, then leaves its lines.
fn take(ctx: *mut raw::RedisModuleCtx, place: Place) {
    let held = lines().ok().and_then(|mut shared| {
        let waiter = shared.get().waiters.get(&place)?;
        Some((waiter.command, waiter.argv.again(), waiter.keys.clone()))
    });
    let Some((command, argv, keys)) = held else {
        commands::send(ctx, Err(Error::Internal));
        return;
    };
    // The server may have run commands since the timer looked (threaded reads, TLS): a pause
    // of writes, a moved slot, memory over the limit. The client cannot wait again from here:
    // it gets the denial of this instant, or the error, and takes nothing.
    let result = match writable(ctx, &argv, keys) {
        Writable::Yes => command.run(ctx, argv.as_ptr(), argv.argc(), false, Turn::Waiting(place)),
        Writable::NotNow => command.run(ctx, argv.as_ptr(), argv.argc(), false, Turn::Leaving),
        Writable::Never(answer) => answer,
    };
    commands::record(command, &result);
    let admitted = matches!(&result, Ok(answer) if answer.admitted());
    commands::send(ctx, result);
    // Denied only if the key was changed under it (a DEL, a SET) since its units fit.
    let how = if admitted {
        Waited::Admitted
    } else {
        Waited::TimedOut
    };
    depart(ctx, place, how);
}

/// The server is done with a finished wait. An admission whose client went away before its
/// reply took nothing: the waiter leaves, and the next ones look.
extern "C" fn free_reply(ctx: *mut raw::RedisModuleCtx, pending: *mut c_void) {
    if pending.is_null() {
        return;
    }
    // SAFETY: made by Box::into_raw in `unblock`, freed once, here.
    let pending = unsafe { Box::from_raw(pending.cast::<Pending>()) };
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if let Pending::Admit(place) = *pending {
            stats::before_command(false);
            if let Some(waiter) = depart(ctx, place, Waited::Left) {
                waiter.command.counters().record(stats::Counted::Error);
            }
        }
    }));
}

/// `CLIENT UNBLOCK id [TIMEOUT]` (the server's own timeout is off): the denial of this instant,
/// and nothing taken. Only on servers where it never comes for a waiter already unblocked.
extern "C" fn on_unblock(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let client = unsafe { raw::RedisModule_GetBlockedClientHandle }
            // SAFETY: ctx is the blocked client's timeout context.
            .map_or(0, |handle| unsafe { handle(ctx) } as usize);
        let held = lines().ok().and_then(|mut shared| {
            let lines = shared.get();
            let place = lines.waiting_client(client)?;
            let waiter = lines.waiters.get(&place)?;
            Some((place, waiter.command, waiter.argv.again()))
        });
        let Some((place, command, argv)) = held else {
            commands::send(ctx, Err(Error::Internal));
            return;
        };
        let result = command.run(ctx, argv.as_ptr(), argv.argc(), false, Turn::Leaving);
        stats::before_command(false);
        commands::record(command, &result);
        commands::send(ctx, result);
        leave(ctx, place, Waited::TimedOut);
    }));
    raw::REDISMODULE_OK as c_int
}

/// The client went away while waiting (disconnected, `CLIENT UNBLOCK id ERROR`, a role
/// change): it takes nothing. One being admitted is left to `free_reply`.
extern "C" fn on_disconnect(
    ctx: *mut raw::RedisModuleCtx,
    client: *mut raw::RedisModuleBlockedClient,
) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let place = lines()
            .ok()
            .and_then(|mut shared| shared.get().waiting_client(client as usize));
        if let Some(place) = place {
            stats::before_command(false);
            if let Some(waiter) = leave(ctx, place, Waited::Left) {
                waiter.command.counters().record(stats::Counted::Error);
            }
        }
    }));
}

/// A call's arguments, retained for as long as this lives: by a waiter until it leaves, and
/// once more (`again`) for as long as a try uses them, so that a client killed meanwhile (by a
/// keyspace event's listener, say) cannot free them under it.
struct Held(Vec<*mut raw::RedisModuleString>);

impl Held {
    fn again(&self) -> Held {
        Held::new(&self.0)
    }

    fn new(argv: &[*mut raw::RedisModuleString]) -> Held {
        if let Some(retain) = unsafe { raw::RedisModule_RetainString } {
            for &arg in argv {
                // SAFETY: each is a live string the waiter holds.
                unsafe { retain(std::ptr::null_mut(), arg) };
            }
        }
        Held(argv.to_vec())
    }

    fn as_ptr(&self) -> *mut *mut raw::RedisModuleString {
        self.0.as_ptr().cast_mut()
    }

    fn argc(&self) -> c_int {
        c_int::try_from(self.0.len()).unwrap_or(0)
    }

    fn get(&self, range: std::ops::Range<usize>) -> Option<&[*mut raw::RedisModuleString]> {
        self.0.get(range)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(free) = unsafe { raw::RedisModule_FreeString } {
            for &arg in &self.0 {
                // SAFETY: each was retained once, by `new`.
                unsafe { free(std::ptr::null_mut(), arg) };
            }
        }
    }
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

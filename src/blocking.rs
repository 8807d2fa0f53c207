//! Waiting inside the server for capacity (`BLOCK`). A call that asked to wait and was denied
//! is parked as a blocked client and stands in the line of each of its keys (lines.rs). A
//! module timer looks again at the instant its units fit, when it is first in all its lines,
//! and at its deadline. When they fit, the client is unblocked, and the call takes its units
//! in the reply callback, as the reply goes out: it runs exactly as an immediate call does
//! (the command body decides, writes and propagates), and only for a client still there to be
//! answered, as blocked.c hands a client back to the command it was running. Waiting itself
//! writes and propagates nothing. The server reaches this file only through the entry layer,
//! which guards every callback.

use std::collections::VecDeque;
use std::ops::Range;
use std::os::raw::c_void;

use redis_module::raw;

use crate::blocked::{self, ClientCallbacks};
use crate::clock;
use crate::command::Command;
use crate::commands::answer::{self, Answer, Wait};
use crate::commands::call::Caller;
use crate::commands::Run;
use crate::counters::{self, Counted, Waited, WAITS};
use crate::error::Error;
use crate::fault::{self, Fault};
use crate::ffi::{catch_defect, context_flags, string_bytes};
use crate::line_order::Place;
use crate::lines::{self, line_key, Turn, Waiter};
use crate::redirect::{self, Serving};
use crate::strings::Held;
use crate::time::{ms_rounded_up, NANOS_PER_MILLI};

/// The server's ways back into this module for a waiter, which the entry layer guards: the
/// blocked client's callbacks and the waiters' timer.
pub struct Callbacks {
    pub reply: raw::RedisModuleCmdFunc,
    /// `None` where CLIENT UNBLOCK must not reach a waiter (see `unblock_callback`).
    pub timeout: raw::RedisModuleCmdFunc,
    pub free: Option<unsafe extern "C" fn(*mut raw::RedisModuleCtx, *mut c_void)>,
    pub disconnect: raw::RedisModuleDisconnectFunc,
    pub timer: raw::RedisModuleTimerProc,
    /// The timer of a delayed reply (delayed.rs).
    pub release: raw::RedisModuleTimerProc,
}

/// Parks a call that asked to wait: blocks its client, puts it at the end of its keys' lines,
/// and sets its timer. An error comes before the client is blocked, which is then answered at
/// once; after that, nothing fails.
pub fn park(
    ctx: *mut raw::RedisModuleCtx,
    command: Command,
    argv: &[*mut raw::RedisModuleString],
    wait: &Wait,
    callbacks: &Callbacks,
) -> Result<(), Error> {
    let now_ns = clock::now_ns()?;
    let mut keys = Vec::with_capacity(wait.keys.len());
    for position in wait.keys.clone() {
        let key = *argv.get(position).ok_or(Error::Internal)?;
        if cfg!(debug_assertions) {
            // SAFETY: key is a live argument string.
            fault::inject(
                Fault::Park,
                unsafe { string_bytes(key) }.unwrap_or_default(),
            );
        }
        keys.push(line_key(ctx, key)?);
    }
    let deadline_ms = (wait.timeout_ms > 0)
        .then(|| (now_ns / NANOS_PER_MILLI).checked_add(wait.timeout_ms))
        .map(|deadline| deadline.ok_or(Error::TooLarge("timeout")))
        .transpose()?;
    blocked::can_block()?;
    let argv = Held::new(argv);
    let mut shared = lines::lock()?;
    let client_callbacks = ClientCallbacks {
        reply: callbacks.reply,
        timeout: unblock_callback(callbacks),
        free: callbacks.free,
        disconnect: callbacks.disconnect,
    };
    // SAFETY: ctx is the running command's context, which may block (the caller checked the
    // context's flags); the callbacks are this module's and live as long as it is loaded, which
    // the server ensures while it has blocked clients.
    let (client, db) = unsafe { blocked::block(ctx, &client_callbacks) }?;
    // The client is blocked: from here on it gets its one answer through the reply callback,
    // even should this module fail (the command's own guard must not answer it as well).
    let mut place = None;
    let parked = catch_defect(ctx, || {
        let waiter = Waiter {
            client,
            command,
            argv,
            keys: wait.keys.clone(),
            db,
            deadline_ms,
            timer: None,
            due_ns: None,
            admitting: false,
        };
        inject(Fault::Parked, &waiter.argv, &waiter.keys);
        let (joined, first) = shared.get().join(keys, waiter);
        place = Some(joined);
        drop(shared);
        WAITS.record(Waited::Parked);
        let try_at = first.then(|| now_ns.saturating_add(wait.fits_in_ns));
        if let Err(error) = arm(ctx, joined, try_at, now_ns, callbacks) {
            finish(ctx, joined, Err(error), Waited::TimedOut);
        }
    });
    if parked.is_none() {
        match place {
            Some(place) => drop(finish(ctx, place, Err(Error::Internal), Waited::TimedOut)),
            None => {
                let result = Err(Error::Internal);
                // SAFETY: no arguments to read.
                unsafe { answer::record(command, &result, &[]) };
                unblock(client, Pending::Answer(result));
            }
        }
    }
    Ok(())
}

/// The timeout callback, where CLIENT UNBLOCK may reach the module through it; elsewhere
/// none, and CLIENT UNBLOCK leaves the waiters alone.
fn unblock_callback(callbacks: &Callbacks) -> raw::RedisModuleCmdFunc {
    if blocked::client_unblock_reaches_modules() {
        callbacks.timeout
    } else {
        None
    }
}

/// Sets the waiter's one timer for the earlier of `try_at_ns` and its deadline (none when it
/// has neither), replacing the one it had.
fn arm(
    ctx: *mut raw::RedisModuleCtx,
    place: Place,
    try_at_ns: Option<i64>,
    now_ns: i64,
    callbacks: &Callbacks,
) -> Result<(), Error> {
    let (old, at_ns) = {
        let mut shared = lines::lock()?;
        let Some(waiter) = shared.get().waiter(place) else {
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
    // The data is the waiter's place, a number.
    let timer = blocked::start_timer(ctx, period_ms, callbacks.timer, place as usize)?;
    if let Some(waiter) = lines::lock()?.get().waiter(place) {
        waiter.timer = Some(timer);
    }
    Ok(())
}

/// A timer's period, in whole milliseconds, to fire at the first reading of the server's clock
/// at or after `at_ns`, never before. The clock reads in steps (on Redis 7.0, whole
/// milliseconds), so that reading comes at the step at or after `at_ns`; the timer counts from
/// the precise time now, not from the last step.
pub(crate) fn period_until(at_ns: i64, now_ns: i64) -> i64 {
    let step = clock::resolution_ns();
    let at_ns = at_ns.saturating_add(step - 1) / step * step;
    let now_ns = clock::precise_now_ns().unwrap_or(now_ns).max(now_ns);
    // Rounded up: a module timer never fires early. Capped: the server keeps a timer's next
    // period in an `int` of milliseconds (in microseconds on Redis 7.0 and 7.2.0–7.2.1), and
    // one further off wraps, and then fires at once, again and again: a timer for a farther
    // instant fires at the cap, and is set again.
    ms_rounded_up(at_ns.saturating_sub(now_ns).max(0)).min(MAX_TIMER_MS)
}

/// The longest period a module timer is set for: 30 minutes.
const MAX_TIMER_MS: i64 = 30 * 60 * 1000;

pub(crate) fn stop_timer(ctx: *mut raw::RedisModuleCtx, timer: Option<raw::RedisModuleTimerID>) {
    if let Some(timer) = timer {
        blocked::stop_timer(ctx, timer);
    }
}

/// A waiter's timer fired (its data is the waiter's place): its units should fit now, or its
/// deadline has come. Tries it, then every waiter its leaving makes first in all its lines,
/// in this one timer's context.
pub fn timer_fired(ctx: *mut raw::RedisModuleCtx, data: *mut c_void, callbacks: &Callbacks) {
    let place = data as usize as Place;
    if let Ok(mut shared) = lines::lock() {
        if let Some(waiter) = shared.get().waiter(place) {
            waiter.timer = None;
        }
    }
    let mut work = VecDeque::from([place]);
    while let Some(place) = work.pop_front() {
        // Each look on its own: one that fails still answers its waiter (which no timer would
        // try again), and the others get their look.
        match catch_defect(ctx, || attempt(ctx, place, callbacks)) {
            Some(next) => work.extend(next),
            None => work.extend(finish(ctx, place, Err(Error::Internal), Waited::TimedOut)),
        }
    }
}

/// Runs a waiter's command body again, at `turn`. A panic in it becomes the error it would
/// have been at once: the waiter is then answered and leaves its lines, where the callback's
/// own guard could only log it.
fn rerun(
    ctx: *mut raw::RedisModuleCtx,
    command: Command,
    argv: &Held,
    keys: &Range<usize>,
    turn: Turn,
) -> Result<Answer, Error> {
    catch_defect(ctx, || {
        match turn {
            Turn::Checking(_) => inject(Fault::Timer, argv, keys),
            Turn::Waiting(_) => inject(Fault::Reply, argv, keys),
            _ => {}
        }
        Run {
            command,
            ctx,
            argv: argv.as_ptr(),
            argc: argv.argc(),
            caller: Caller::RERUN,
            turn,
        }
        .answer()
    })
    .unwrap_or(Err(Error::Internal))
}

/// In a debug build, strikes `fault` when the waiter's first key is the fault's key.
fn inject(fault: Fault, argv: &Held, keys: &Range<usize>) {
    if cfg!(debug_assertions) {
        if let Some(key) = argv
            .get(keys.clone())
            .and_then(|keys| keys.first().copied())
        {
            // SAFETY: the key is one of the waiter's held arguments.
            fault::inject(fault, unsafe { string_bytes(key) }.unwrap_or_default());
        }
    }
}

/// One look at a waiter, from its timer: its units fit (it is unblocked, to take them in
/// the reply callback), its time is up (it gets the denial), or it waits on. Returns the
/// waiters its leaving made first.
fn attempt(ctx: *mut raw::RedisModuleCtx, place: Place, callbacks: &Callbacks) -> Vec<Place> {
    let Ok(mut shared) = lines::lock() else {
        return Vec::new();
    };
    let lines = shared.get();
    let first = lines.is_first(place);
    let Some(waiter) = lines.waiter(place).filter(|waiter| !waiter.admitting) else {
        return Vec::new();
    };
    let (command, argv, keys, db, deadline_ms) = (
        waiter.command,
        waiter.argv.again(),
        waiter.keys.clone(),
        waiter.db,
        waiter.deadline_ms,
    );
    drop(shared);

    let now_ns = match clock::now_ns() {
        Ok(now) => now,
        Err(error) => return finish(ctx, place, Err(error), Waited::TimedOut),
    };
    let expired = deadline_ms.is_some_and(|ms| now_ns >= ms.saturating_mul(NANOS_PER_MILLI));
    if !first && !expired {
        let _ = arm(ctx, place, None, now_ns, callbacks);
        return Vec::new();
    }
    let retry_in = |ctx, retry_ns: i64| {
        let _ = arm(ctx, place, Some(now_ns + retry_ns), now_ns, callbacks);
        Vec::new()
    };
    // The timer's context, in the database the call was made in.
    blocked::select_db(ctx, db);
    // Whether it may take its units now, if they fit; else it can only time out.
    let mut may_take = first;
    if first {
        match writable(ctx, &argv, keys.clone()) {
            Writable::Yes => {}
            Writable::Never(error) => return finish(ctx, place, error, Waited::Left),
            Writable::NotNow(_) if expired => may_take = false,
            Writable::NotNow(retry_ns) => return retry_in(ctx, retry_ns),
        }
    }
    let turn = if may_take {
        Turn::Checking(place)
    } else {
        Turn::Leaving
    };
    let result = rerun(ctx, command, &argv, &keys, turn);
    match &result {
        Ok(answer) if may_take && answer.admitted() => {
            if admit(place) {
                Vec::new()
            } else {
                retry_in(ctx, RETRY_NS)
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
                callbacks,
            );
            Vec::new()
        }
        _ => finish(ctx, place, result, Waited::TimedOut),
    }
}

/// The waiter's units fit: its client is unblocked, and the reply callback takes them as the
/// reply goes out. It stays first in its lines meanwhile, so that nothing else takes them.
/// False if it could not be unblocked: it then waits on.
fn admit(place: Place) -> bool {
    let client = {
        let Ok(mut shared) = lines::lock() else {
            return false;
        };
        let Some(waiter) = shared.get().waiter(place) else {
            return false;
        };
        waiter.admitting = true;
        waiter.client
    };
    if unblock(client, Pending::Admit(place)) {
        return true;
    }
    if let Ok(mut shared) = lines::lock() {
        if let Some(waiter) = shared.get().waiter(place) {
            waiter.admitting = false;
        }
    }
    false
}

/// How soon a waiter held up by a failover's pause, or by memory over the limit, looks again.
const RETRY_NS: i64 = 10 * NANOS_PER_MILLI;

/// How soon a waiter held up by its slot's migration looks again: each look asks the server
/// for its table of slots (CLUSTER NODES), and a migration lasts as long as its keys take to
/// move.
const MIGRATION_RETRY_NS: i64 = 100 * NANOS_PER_MILLI;

enum Writable {
    Yes,
    /// Not here, ever: the answer the waiter gets instead (a replica's READONLY, a moved
    /// slot's redirect).
    Never(Result<Answer, Error>),
    /// A failover's pause of writes, a slot being migrated, or memory over `maxmemory`: look
    /// again in this many nanoseconds.
    NotNow(i64),
}

/// Whether an admission may write here now, as the server checks a client's write command
/// before running it: the role, a failover's pause, memory, and in a cluster whether the
/// slot of the waiter's keys is served here.
fn writable(ctx: *mut raw::RedisModuleCtx, argv: &Held, keys: Range<usize>) -> Writable {
    let flags = context_flags(ctx);
    if flags & raw::REDISMODULE_CTX_FLAGS_MASTER == 0 {
        return Writable::Never(Err(Error::Readonly));
    }
    if blocked::writes_paused() || flags & raw::REDISMODULE_CTX_FLAGS_OOM != 0 {
        return Writable::NotNow(RETRY_NS);
    }
    if flags & raw::REDISMODULE_CTX_FLAGS_CLUSTER != 0 {
        match redirect::serving(ctx, argv.get(keys).unwrap_or_default()) {
            Serving::Here => {}
            Serving::NotNow => return Writable::NotNow(MIGRATION_RETRY_NS),
            Serving::Elsewhere(error) => return Writable::Never(Ok(Answer::redirect(error))),
        }
    }
    Writable::Yes
}

/// Takes a waiter out of its lines and forgets it, stopping its timer. Returns it, and the
/// waiters this made first.
fn remove(ctx: *mut raw::RedisModuleCtx, place: Place) -> Option<(Waiter, Vec<Place>)> {
    let (waiter, promoted) = lines::lock().ok()?.get().remove(place)?;
    stop_timer(ctx, waiter.timer);
    Some((waiter, promoted))
}

/// What a waiter's client gets when the server next runs its reply callback.
pub enum Pending {
    /// Its units fit: take them, and answer.
    Admit(Place),
    /// Its answer, final: a denial, an error, a redirect.
    Answer(Result<Answer, Error>),
    /// Answered.
    Done,
}

impl Pending {
    /// The place of the waiter being admitted, if this is its admission.
    pub fn admitting(&self) -> Option<Place> {
        match self {
            Pending::Admit(place) => Some(*place),
            _ => None,
        }
    }
}

/// Takes a waiter out of its lines, and nothing else: the last resort when its clean-up
/// failed, so that it does not hold its keys' lines for good.
pub fn forget(ctx: *mut raw::RedisModuleCtx, place: Place) {
    remove(ctx, place);
}

/// Unblocks a waiter's client; the server runs the reply callback with `pending` when it next
/// can, unless the client has gone, and then the free callback. False if the server refused.
pub(crate) fn unblock(client: *mut raw::RedisModuleBlockedClient, pending: Pending) -> bool {
    let pending = Box::into_raw(Box::new(pending));
    // SAFETY: the client is blocked by this module and unblocked once, here; the server hands
    // `pending` back to the reply callback and then to the free callback.
    if !unsafe { blocked::unblock(client, pending.cast()) } {
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
    // SAFETY: the waiter holds its arguments.
    unsafe { answer::record(waiter.command, &result, waiter.argv.all()) };
    WAITS.record(how);
    unblock(waiter.client, Pending::Answer(result));
    promoted
}

/// Lets waiters made first by another's leaving look at once, from a timer of their own.
fn promote(ctx: *mut raw::RedisModuleCtx, promoted: Vec<Place>, callbacks: &Callbacks) {
    if let Ok(now_ns) = clock::now_ns() {
        for next in promoted {
            let _ = arm(ctx, next, Some(now_ns), now_ns, callbacks);
        }
    }
}

/// A slot on `key` was freed (CL.RELEASE): the first waiter in its line, when first in all
/// its lines, looks at once. Its timer, due now, fires in this same turn of the event loop,
/// after the clients' commands, and its reply goes out before the server next sleeps.
pub fn freed(
    ctx: *mut raw::RedisModuleCtx,
    key: *mut raw::RedisModuleString,
    callbacks: &Callbacks,
) {
    if lines::waiting() == 0 {
        return;
    }
    let Ok(line) = line_key(ctx, key) else {
        return;
    };
    let first = lines::lock().ok().and_then(|mut shared| {
        let lines = shared.get();
        lines.first_on(&line).filter(|&first| lines.is_first(first))
    });
    if let Some(first) = first {
        promote(ctx, vec![first], callbacks);
    }
}

/// Takes a waiter whose client is answered, or gone, out of its lines, counts how its wait
/// ended, and lets the next waiters look.
fn depart(
    ctx: *mut raw::RedisModuleCtx,
    place: Place,
    how: Waited,
    callbacks: &Callbacks,
) -> Option<Waiter> {
    let (waiter, promoted) = remove(ctx, place)?;
    WAITS.record(how);
    promote(ctx, promoted, callbacks);
    Some(waiter)
}

/// Ends a wait whose client the server is unblocking itself (disconnected, CLIENT UNBLOCK, a
/// role change): frees the module's handle on it, and lets the next waiters look.
fn leave(
    ctx: *mut raw::RedisModuleCtx,
    place: Place,
    how: Waited,
    callbacks: &Callbacks,
) -> Option<Waiter> {
    let waiter = depart(ctx, place, how, callbacks)?;
    // SAFETY: the server is done with the client; this frees the module's handle on it.
    unsafe { blocked::unblock(waiter.client, std::ptr::null_mut()) };
    Some(waiter)
}

/// The reply callback: the server is about to answer a waiter whose wait ended. An admission
/// takes its units here, with the client's own context, as an immediate call would.
pub fn reply(ctx: *mut raw::RedisModuleCtx, callbacks: &Callbacks) {
    // SAFETY: ctx is a blocked client's reply context.
    let pending = unsafe { blocked::unblocked_with(ctx) }.cast::<Pending>();
    // SAFETY: the only private data this module gives the server is a boxed Pending, alive
    // until the free callback; the server runs these callbacks one at a time.
    let Some(pending) = (unsafe { pending.as_mut() }) else {
        return;
    };
    match std::mem::replace(pending, Pending::Done) {
        Pending::Admit(place) => {
            // Kept until it has taken its units: should it fail halfway, the free callback
            // still takes the waiter out of its lines.
            *pending = Pending::Admit(place);
            take(ctx, place, callbacks);
            *pending = Pending::Done;
        }
        Pending::Answer(result) => answer::send(ctx, result),
        Pending::Done => {}
    }
}

/// An admitted waiter takes its units and gets its reply, then leaves its lines.
fn take(ctx: *mut raw::RedisModuleCtx, place: Place, callbacks: &Callbacks) {
    let held = lines::lock().ok().and_then(|mut shared| {
        let waiter = shared.get().waiter(place)?;
        Some((waiter.command, waiter.argv.again(), waiter.keys.clone()))
    });
    let Some((command, argv, keys)) = held else {
        answer::send(ctx, Err(Error::Internal));
        return;
    };
    // The server may have run commands since the timer looked (threaded reads, TLS): a pause
    // of writes, a moved slot, memory over the limit. The client cannot wait again from here:
    // it gets the denial of this instant, or the error, and takes nothing.
    let run = |turn| rerun(ctx, command, &argv, &keys, turn);
    let result = match writable(ctx, &argv, keys.clone()) {
        Writable::Yes => run(Turn::Waiting(place)),
        Writable::NotNow(_) => run(Turn::Leaving),
        Writable::Never(answer) => answer,
    };
    // SAFETY: held for this try.
    unsafe { answer::record(command, &result, argv.all()) };
    let admitted = matches!(&result, Ok(answer) if answer.admitted());
    answer::send(ctx, result);
    // Denied only if the key was changed under it (a DEL, a SET) since its units fit.
    let how = if admitted {
        Waited::Admitted
    } else {
        Waited::TimedOut
    };
    depart(ctx, place, how, callbacks);
}

/// The server is done with a finished wait (`pending` is the reply callback's data). An
/// admission whose client went away before its reply took nothing: the waiter leaves, and the
/// next ones look.
pub fn free(ctx: *mut raw::RedisModuleCtx, pending: Pending, callbacks: &Callbacks) {
    if let Pending::Admit(place) = pending {
        if let Some(waiter) = depart(ctx, place, Waited::Left, callbacks) {
            counters::of(waiter.command).record(Counted::Error);
        }
    }
}

/// `CLIENT UNBLOCK id [TIMEOUT]` (the server's own timeout is off): the denial of this instant,
/// and nothing taken. Only on servers where it never comes for a waiter already unblocked.
pub fn unblocked_by_client(ctx: *mut raw::RedisModuleCtx, callbacks: &Callbacks) {
    // SAFETY: ctx is the blocked client's timeout context.
    let client = unsafe { blocked::client_of(ctx) };
    let held = lines::lock().ok().and_then(|mut shared| {
        let lines = shared.get();
        let place = lines.waiting_client(client)?;
        let waiter = lines.waiter(place)?;
        Some((
            place,
            waiter.command,
            waiter.argv.again(),
            waiter.keys.clone(),
        ))
    });
    let Some((place, command, argv, keys)) = held else {
        answer::send(ctx, Err(Error::Internal));
        return;
    };
    let result = rerun(ctx, command, &argv, &keys, Turn::Leaving);
    // SAFETY: held for this try.
    unsafe { answer::record(command, &result, argv.all()) };
    answer::send(ctx, result);
    leave(ctx, place, Waited::TimedOut, callbacks);
}

/// The client went away while waiting (disconnected, `CLIENT UNBLOCK id ERROR`, a role
/// change): it takes nothing. One being admitted is left to the free callback.
pub fn disconnected(
    ctx: *mut raw::RedisModuleCtx,
    client: *mut raw::RedisModuleBlockedClient,
    callbacks: &Callbacks,
) {
    let place = lines::lock()
        .ok()
        .and_then(|mut shared| shared.get().waiting_client(client as usize));
    if let Some(place) = place {
        if let Some(waiter) = leave(ctx, place, Waited::Left, callbacks) {
            counters::of(waiter.command).record(Counted::Error);
        }
    }
}

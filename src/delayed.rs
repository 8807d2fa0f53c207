//! Replies delayed until their instant (CL.SMOOTH's `BLOCK`): the call has decided, written
//! and propagated its reservation already; its client is blocked in no line, and a timer
//! unblocks it with the reply it was given, as Guava's caller sleeps until its permits are
//! due. The waiting lines, where a denied call waits for its units, are blocking.rs's.

use std::collections::HashMap;
use std::os::raw::c_void;

use parking_lot::Mutex;
use redis_module::raw;

use crate::blocked::{self, ClientCallbacks};
use crate::blocking::{period_until, stop_timer, unblock, Callbacks, Pending};
use crate::clock;
use crate::commands::answer::Answer;
use crate::error::Error;

/// A reply delayed until its instant: its client, its answer, the instant, and the timer
/// that sends it.
struct Delayed {
    client: *mut raw::RedisModuleBlockedClient,
    result: Result<Answer, Error>,
    at_ns: i64,
    timer: Option<raw::RedisModuleTimerID>,
}

/// The delayed replies, by client (a delay's timer's data is its client, as a number).
struct Replies(Option<HashMap<usize, Delayed>>);

// SAFETY: the pointers in a delayed reply are server objects, used only on the server's main
// thread, where every command, timer and callback of this module runs.
unsafe impl Send for Replies {}

static REPLIES: Mutex<Replies> = Mutex::new(Replies(None));

/// Runs `change` on the delayed replies; `None` only for a call made from inside this
/// module's own work, which finds them taken.
fn with_replies<T>(change: impl FnOnce(&mut HashMap<usize, Delayed>) -> T) -> Option<T> {
    let mut replies = REPLIES.try_lock()?;
    Some(change(replies.0.get_or_insert_with(HashMap::new)))
}

/// Delays an admitted call's reply until `at_ns` (CL.SMOOTH's BLOCK, where Guava's caller
/// sleeps). The call has made its reservation, written and propagated it: the delay stands
/// in no line and its end changes nothing; a timer unblocks the client with the reply it was
/// given. A client that goes away meanwhile keeps its reservation, as a Guava caller that is
/// interrupted does, and its delay ends then (`left`); CLIENT UNBLOCK cannot end a delay (the
/// client has no timeout callback, so the server answers it 0). Gives the reply back when
/// the client cannot be blocked, to be sent at once.
pub fn delay(
    ctx: *mut raw::RedisModuleCtx,
    result: Result<Answer, Error>,
    at_ns: i64,
    callbacks: &Callbacks,
) -> Result<(), Result<Answer, Error>> {
    let Ok(now_ns) = blocked::can_block().and_then(|()| clock::now_ns()) else {
        return Err(result);
    };
    let client_callbacks = ClientCallbacks {
        reply: callbacks.reply,
        timeout: None,
        free: callbacks.free,
        disconnect: callbacks.disconnect,
    };
    // SAFETY: ctx is the running command's context, which may block (the caller checked its
    // flags); the callbacks are this module's, alive while it is loaded.
    let Ok((client, _)) = (unsafe { blocked::block(ctx, &client_callbacks) }) else {
        return Err(result);
    };
    let delayed = Delayed {
        client,
        result,
        at_ns,
        timer: None,
    };
    match with_replies(|replies| replies.insert(client as usize, delayed)) {
        Some(_) => arm(ctx, client as usize, now_ns, callbacks),
        // Never in practice (see with_replies); the reply goes at once rather than never.
        None => drop(unblock(client, Pending::Answer(Err(Error::Internal)))),
    }
    Ok(())
}

/// Sets a delayed reply's timer for its instant, or at most the longest a timer is set for
/// ahead; with no timer to be had, the reply goes now.
fn arm(ctx: *mut raw::RedisModuleCtx, client: usize, now_ns: i64, callbacks: &Callbacks) {
    let Some(at_ns) =
        with_replies(|replies| replies.get(&client).map(|delayed| delayed.at_ns)).flatten()
    else {
        return;
    };
    let period_ms = period_until(at_ns, now_ns);
    match blocked::start_timer(ctx, period_ms, callbacks.release, client) {
        Ok(timer) => {
            with_replies(|replies| {
                replies
                    .get_mut(&client)
                    .map(|delayed| delayed.timer = Some(timer))
            });
        }
        Err(_) => send(client),
    }
}

/// A delayed reply's timer fired (its data is the client): the reply goes, or, for a timer
/// cut short of a far instant, the delay goes on.
pub fn due(ctx: *mut raw::RedisModuleCtx, data: *mut c_void, callbacks: &Callbacks) {
    let client = data as usize;
    let at_ns = with_replies(|replies| {
        let delayed = replies.get_mut(&client)?;
        delayed.timer = None;
        Some(delayed.at_ns)
    })
    .flatten();
    let Some(at_ns) = at_ns else {
        return;
    };
    match clock::now_ns() {
        Ok(now_ns) if now_ns < at_ns => arm(ctx, client, now_ns, callbacks),
        _ => send(client),
    }
}

/// Ends a delay with its reply: its client is unblocked, and gets it. Should the server
/// refuse, the client stays blocked, which nothing here can mend, until it goes away.
fn send(client: usize) {
    if let Some(Some(delayed)) = with_replies(|replies| replies.remove(&client)) {
        unblock(delayed.client, Pending::Answer(delayed.result));
    }
}

/// A client whose reply was delayed went away (disconnected, killed, a role change): its
/// delay ends, its timer stopped, and the server frees its handle now rather than at the
/// instant. Its reservation stays. Returns whether its reply was delayed.
pub fn left(ctx: *mut raw::RedisModuleCtx, client: *mut raw::RedisModuleBlockedClient) -> bool {
    let Some(Some(delayed)) = with_replies(|replies| replies.remove(&(client as usize))) else {
        return false;
    };
    stop_timer(ctx, delayed.timer);
    // SAFETY: the server is done with the client; this frees the module's handle on it.
    unsafe { blocked::unblock(delayed.client, std::ptr::null_mut()) };
    true
}

//! The waiting lines (BLOCK): who waits, on which keys, in what order. The command bodies only
//! query them (`held_back`), as a server command queries the keyspace; blocking.rs parks and
//! serves the waiters. The order itself is line_order.rs's.
//!
//! Everything here runs on the server's main thread: commands, timers, and the blocked
//! clients' callbacks. The lock only makes the shared state sound, and is never held while
//! the server runs other code.

use std::collections::HashMap;
use std::ops::Range;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::{Mutex, MutexGuard};
use redis_module::raw;

use crate::clock;
use crate::command::Command;
use crate::error::Error;
use crate::ffi::{api, string_bytes};
use crate::line_order::{LineOrder, Place};
use crate::strings::Held;

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
pub struct LineKey {
    db: c_int,
    name: Vec<u8>,
}

/// A parked call.
pub struct Waiter {
    pub client: *mut raw::RedisModuleBlockedClient,
    pub command: Command,
    /// The call's arguments, its name first, held until it leaves.
    pub argv: Held,
    /// Where its keys are among them.
    pub keys: Range<usize>,
    pub db: c_int,
    pub deadline_ms: Option<i64>,
    pub timer: Option<raw::RedisModuleTimerID>,
    /// When its timer tries it, while it is first in all its lines.
    pub due_ns: Option<i64>,
    /// Its units fit and its client is being unblocked: it takes them in the reply callback,
    /// and stays first in its lines until then.
    pub admitting: bool,
}

#[derive(Default)]
pub struct Lines {
    order: LineOrder<LineKey>,
    waiters: HashMap<Place, Waiter>,
    by_client: HashMap<usize, Place>,
}

/// The waiters, when there are or were any.
pub struct Shared(Option<Lines>);

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
pub fn lock() -> Result<MutexGuard<'static, Shared>, Error> {
    LINES.try_lock().ok_or(Error::Internal)
}

impl Shared {
    pub fn get(&mut self) -> &mut Lines {
        self.0.get_or_insert_with(Lines::default)
    }
}

impl Lines {
    /// Puts a waiter at the end of its keys' lines. Returns its place, and whether it is first
    /// in all of them.
    pub fn join(&mut self, keys: Vec<LineKey>, waiter: Waiter) -> (Place, bool) {
        let place = self.order.join(keys);
        let first = self.order.is_first(place);
        self.by_client.insert(waiter.client as usize, place);
        self.waiters.insert(place, waiter);
        WAITERS.fetch_add(1, Ordering::Relaxed);
        (place, first)
    }

    /// Takes a waiter out of its lines and forgets it. Returns it, and the waiters this made
    /// first in all their lines.
    pub fn remove(&mut self, place: Place) -> Option<(Waiter, Vec<Place>)> {
        let waiter = self.waiters.remove(&place)?;
        self.by_client.remove(&(waiter.client as usize));
        let promoted = self.order.leave(place);
        WAITERS.fetch_sub(1, Ordering::Relaxed);
        Some((waiter, promoted))
    }

    /// The first waiter in `line`, if any.
    pub fn first_on(&self, line: &LineKey) -> Option<Place> {
        self.order.first(line)
    }

    pub fn waiter(&mut self, place: Place) -> Option<&mut Waiter> {
        self.waiters.get_mut(&place)
    }

    /// Whether the waiter at `place` is first in all its lines.
    pub fn is_first(&self, place: Place) -> bool {
        self.order.is_first(place)
    }

    /// The place of the waiter this blocked client is, unless it is being admitted (its reply
    /// on the way, which the reply or free callback ends).
    pub fn waiting_client(&self, client: usize) -> Option<Place> {
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
        let mut shared = lock()?;
        let lines = shared.get();
        let Some(first) = lines.order.first(&line) else {
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

/// The line of `key` in the context's selected database.
pub fn line_key(
    ctx: *mut raw::RedisModuleCtx,
    key: *mut raw::RedisModuleString,
) -> Result<LineKey, Error> {
    let selected = api(unsafe { raw::RedisModule_GetSelectedDb })?;
    // SAFETY: key is a live argument string; ctx a live context.
    unsafe {
        let name = string_bytes(key).ok_or(Error::Internal)?;
        Ok(LineKey {
            db: selected(ctx),
            name: name.to_vec(),
        })
    }
}

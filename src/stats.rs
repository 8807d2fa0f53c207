//! Per-command counters since load, shown by INFO (`INFO redis-cell`, `INFO modules`,
//! `INFO everything`) and reset by CONFIG RESETSTAT like the server's own statistics.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicU64, Ordering};

use redis_module::raw;

/// What became of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    Allowed,
    Denied,
    /// A quantity of zero: neither allowed nor denied.
    Peek,
    /// An error reply.
    Error,
}

/// One command's counters. Commands run on the server's main thread; relaxed atomics make
/// the statics sound without costing more than a plain increment.
pub struct Counters {
    name: &'static str,
    calls: AtomicU64,
    allowed: AtomicU64,
    denied: AtomicU64,
    peeks: AtomicU64,
    errors: AtomicU64,
}

impl Counted {
    /// A call's count: a peek when it asked for nothing, else whether it was admitted.
    pub fn of(quantity: i64, admitted: bool) -> Counted {
        match (quantity, admitted) {
            (0, _) => Counted::Peek,
            (_, true) => Counted::Allowed,
            (_, false) => Counted::Denied,
        }
    }
}

impl Counters {
    const fn new(name: &'static str) -> Counters {
        Counters {
            name,
            calls: AtomicU64::new(0),
            allowed: AtomicU64::new(0),
            denied: AtomicU64::new(0),
            peeks: AtomicU64::new(0),
            errors: AtomicU64::new(0),
        }
    }

    pub fn record(&self, counted: Counted) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let counter = match counted {
            Counted::Allowed => &self.allowed,
            Counted::Denied => &self.denied,
            Counted::Peek => &self.peeks,
            Counted::Error => &self.errors,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    fn fields(&self) -> [(&'static str, &AtomicU64); 5] {
        [
            ("calls", &self.calls),
            ("allowed", &self.allowed),
            ("denied", &self.denied),
            ("peeks", &self.peeks),
            ("errors", &self.errors),
        ]
    }
}

pub static THROTTLE: Counters = Counters::new("cl_throttle");
pub static FIXED: Counters = Counters::new("cl_fixed");
pub static WINDOW: Counters = Counters::new("cl_window");
pub static ALL: Counters = Counters::new("cl_all");
const COMMANDS: [&Counters; 4] = [&THROTTLE, &FIXED, &WINDOW, &ALL];

/// A step in a call's wait (BLOCK).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// It began to wait.
    Parked,
    /// Its units fitted, and it took them.
    Admitted,
    /// Its deadline came first, or `CLIENT UNBLOCK … TIMEOUT` ended it: the denial, nothing
    /// taken.
    TimedOut,
    /// Its client went away (disconnected, `CLIENT UNBLOCK … ERROR`, a role change).
    Left,
}

/// The waits, over all commands.
pub struct Waits {
    waited: AtomicU64,
    admitted: AtomicU64,
    timed_out: AtomicU64,
    left: AtomicU64,
}

impl Waits {
    pub fn record(&self, step: Waited) {
        let counter = match step {
            Waited::Parked => &self.waited,
            Waited::Admitted => &self.admitted,
            Waited::TimedOut => &self.timed_out,
            Waited::Left => &self.left,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    fn fields(&self) -> [(&'static str, &AtomicU64); 4] {
        [
            ("waited", &self.waited),
            ("admitted", &self.admitted),
            ("timed_out", &self.timed_out),
            ("left", &self.left),
        ]
    }
}

pub static WAITS: Waits = Waits {
    waited: AtomicU64::new(0),
    admitted: AtomicU64::new(0),
    timed_out: AtomicU64::new(0),
    left: AtomicU64::new(0),
};

pub(crate) fn reset() {
    let waits = WAITS.fields();
    let counters = COMMANDS.iter().flat_map(|counters| counters.fields());
    for (_, counter) in counters.chain(waits) {
        counter.store(0, Ordering::Relaxed);
    }
}

/// Adds the INFO section, one line per command,
/// `cl_throttle:calls=5,allowed=3,denied=1,peeks=1,errors=0`, and one for the waits,
/// `cl_waiting:now=2,waited=9,admitted=6,timed_out=1,left=0` (`now` is not reset).
pub extern "C" fn info(ctx: *mut raw::RedisModuleInfoCtx, for_crash_report: c_int) {
    if for_crash_report == 0 {
        crate::resetstat::settle(crate::resetstat::Point::Info);
    }
    // SAFETY: ctx is the live INFO context the server passes; names are static C strings
    // or built NUL-terminated below.
    unsafe {
        let (Some(section), Some(begin), Some(field), Some(end)) = (
            raw::RedisModule_InfoAddSection,
            raw::RedisModule_InfoBeginDictField,
            raw::RedisModule_InfoAddFieldULongLong,
            raw::RedisModule_InfoEndDictField,
        ) else {
            return;
        };
        section(ctx, c"stats".as_ptr());
        for counters in COMMANDS {
            let mut name = counters.name.as_bytes().to_vec();
            name.push(0);
            begin(ctx, name.as_ptr().cast());
            for (label, counter) in counters.fields() {
                let mut label = label.as_bytes().to_vec();
                label.push(0);
                field(ctx, label.as_ptr().cast(), counter.load(Ordering::Relaxed));
            }
            end(ctx);
        }
        begin(ctx, c"cl_waiting".as_ptr());
        field(ctx, c"now".as_ptr(), crate::waiting::waiting() as u64);
        for (label, counter) in WAITS.fields() {
            let mut label = label.as_bytes().to_vec();
            label.push(0);
            field(ctx, label.as_ptr().cast(), counter.load(Ordering::Relaxed));
        }
        end(ctx);
    }
}

/// Registers the INFO section and the command filter that sees CONFIG RESETSTAT go by. Called
/// once from OnLoad.
pub fn register(ctx: *mut raw::RedisModuleCtx) {
    // SAFETY: called from OnLoad with the module's context and static callbacks.
    unsafe {
        if let Some(register_info) = raw::RedisModule_RegisterInfoFunc {
            register_info(ctx, Some(info));
        }
        if let Some(register_filter) = raw::RedisModule_RegisterCommandFilter {
            register_filter(
                ctx,
                Some(crate::resetstat::filter),
                raw::REDISMODULE_CMDFILTER_NOSELF as c_int,
            );
        }
    }
}

/// Called as each of the module's commands starts, before it counts anything: a RESETSTAT
/// that ran since the last look zeroes the counters first.
pub fn before_command(in_transaction: bool) {
    crate::resetstat::settle(crate::resetstat::Point::Command { in_transaction });
}

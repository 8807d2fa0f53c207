//! The server's wall clock, read through the module API: the clock that also expires keys,
//! and the one libfaketime steers in tests.

use std::sync::atomic::{AtomicI64, Ordering};

use crate::error::Error;
use crate::time::{MAX_SPAN_NS, NANOS_PER_MICRO, NANOS_PER_MILLI};
use redis_module::raw;

/// The last reading of `now_ns`, 0 before the first: what a call that has decided already read,
/// kept so that it can be had again without asking the server (CL.TOP's minute of a denial).
static LAST_NS: AtomicI64 = AtomicI64::new(0);

/// Now, in nanoseconds since the Unix epoch, at the finest precision the server offers:
/// microseconds where `RedisModule_Microseconds` exists (Redis 7.2+, Valkey), milliseconds on
/// Redis 7.0.
pub fn now_ns() -> Result<i64, Error> {
    // SAFETY: the API pointers are filled in once by RedisModule_Init, before any command
    // runs, and never change afterwards; both functions take no arguments.
    let now = unsafe {
        match (raw::RedisModule_Microseconds, raw::RedisModule_Milliseconds) {
            (Some(micros), _) => micros().checked_mul(NANOS_PER_MICRO),
            (None, Some(millis)) => millis().checked_mul(NANOS_PER_MILLI),
            (None, None) => None,
        }
    };
    let now = now
        .filter(|ns| (0..MAX_SPAN_NS).contains(ns))
        .ok_or(Error::ClockOutOfRange)?;
    LAST_NS.store(now, Ordering::Relaxed);
    Ok(now)
}

/// The last reading of `now_ns`, or a new one when there is none yet. Every call that
/// decides reads the clock first, so what follows its decision in the same call finds that
/// reading here.
pub fn last_ns() -> Result<i64, Error> {
    match LAST_NS.load(Ordering::Relaxed) {
        0 => now_ns(),
        ns => Ok(ns),
    }
}

/// The step of `now_ns`: a microsecond, or a millisecond on Redis 7.0.
pub fn resolution_ns() -> i64 {
    // SAFETY: reads an API pointer, filled in once at load.
    if unsafe { raw::RedisModule_Microseconds }.is_some() {
        NANOS_PER_MICRO
    } else {
        NANOS_PER_MILLI
    }
}

/// Now, to the nanosecond, from the clock `now_ns` reads in steps (the system's real-time
/// clock, which the server's own timers run on too): for setting a timer to an instant
/// between two of those steps.
pub fn precise_now_ns() -> Option<i64> {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    i64::try_from(since_epoch.as_nanos()).ok()
}

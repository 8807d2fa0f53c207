//! CONFIG RESETSTAT for the module's counters, zeroed exactly when the server runs it.
//!
//! The server offers modules no hook for RESETSTAT. A command filter sees the command go by,
//! but before the server decides its fate: it may run it, refuse it (no authentication, ACL,
//! a script), or queue it in a transaction that is then executed or discarded. So the filter
//! only takes a reading of the server's own statistics, and the counters are settled at the
//! next point where they could change or be read (the next command, one of ours, INFO) by
//! comparing a new reading with it: RESETSTAT zeroes the server's statistics too, and nothing
//! else ever makes them go down.

use std::ffi::{CStr, CString};
use std::os::raw::c_int;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use parking_lot::Mutex;
use redis_module::raw;

use crate::command::Command;
use crate::counters;
use crate::denied;
use crate::ffi::{string_bytes, with_info_section, InfoSection};

/// Where the counters are settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// The filter, as any command arrives.
    Filter,
    /// One of the module's commands, before it counts itself.
    Command { in_transaction: bool },
    /// The INFO section, before it shows the counters.
    Info,
    /// A waiter's callback or timer, before it counts. The server may run one between the
    /// filter seeing a RESETSTAT and running it (a client evicted, a pause): a reset already
    /// made is settled, but nothing else is concluded here.
    Callback,
}

/// Nothing to settle.
const IDLE: u8 = 0;
/// A RESETSTAT was seen; the next point tells what became of it.
const SEEN: u8 = 1;
/// A RESETSTAT was queued in a transaction: only an EXEC can run it, so only the points that
/// may follow one look.
const QUEUED: u8 = 2;

static STATE: AtomicU8 = AtomicU8::new(IDLE);
/// Whether an EXEC or DISCARD went by since the last look while a RESETSTAT is queued.
static EXEC_SEEN: AtomicU8 = AtomicU8::new(0);
/// The client that sent the RESETSTAT being settled, where the server tells filters (Redis
/// 7.2+, Valkey); 0 where it does not.
static SENDER: AtomicU64 = AtomicU64::new(0);
/// Whether a RESETSTAT waits in a transaction, and the client whose transaction it is (0 if
/// unknown). Once that transaction is over the RESETSTAT has run or never will, and watching
/// stops; where the client is unknown, watching stops at the first reset seen.
static WAITING: AtomicU8 = AtomicU8::new(0);
static WAITING_IN: AtomicU64 = AtomicU64::new(0);
/// The reading taken when the RESETSTAT went by (or, once queued, at the last look).
static BEFORE: Mutex<Option<Reading>> = Mutex::new(None);

/// The server statistics that tell whether a RESETSTAT ran, was refused or is still waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Reading {
    /// `total_commands_processed`.
    commands: u64,
    /// `cmdstat_config|resetstat`: runs zero it and then count one call; refusals count.
    resetstat: CommandStat,
    /// `cmdstat_multi` calls: a transaction's own MULTI counts here before its RESETSTAT.
    multi_calls: u64,
    /// The calls of the module's own commands, as the server counts them.
    own_calls: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct CommandStat {
    calls: u64,
    rejected_calls: u64,
    failed_calls: u64,
}

impl Reading {
    /// Whether the server's statistics were reset between `before` and this reading. A run
    /// sets `resetstat` calls to exactly 1; anything else it does shows as a count going down.
    /// The one reading it leaves unchanged, a RESETSTAT that ran right after another that
    /// was the only command since, leaves nothing to zero either.
    fn shows_reset_since(&self, before: &Reading) -> bool {
        self.resetstat.calls != before.resetstat.calls
            || self.commands < before.commands
            || self.resetstat.rejected_calls < before.resetstat.rejected_calls
            || self.resetstat.failed_calls < before.resetstat.failed_calls
            || self.multi_calls < before.multi_calls
            || self.own_calls < before.own_calls
    }

    /// Whether a RESETSTAT was refused (or failed) since `before`, the server counting it.
    fn shows_refusal_since(&self, before: &Reading) -> bool {
        self.resetstat.rejected_calls > before.resetstat.rejected_calls
            || self.resetstat.failed_calls > before.resetstat.failed_calls
    }
}

/// Settles a RESETSTAT seen earlier, if any. Costs one atomic load when there is none, where
/// it is called: the filter and every call of the module's commands pass by here.
#[inline(always)]
pub fn settle(point: Point) {
    let state = STATE.load(Ordering::Relaxed);
    if state != IDLE {
        settle_seen(state, point);
    }
}

#[cold]
#[inline(never)]
fn settle_seen(state: u8, point: Point) {
    if state == QUEUED {
        let may_follow_exec = match point {
            Point::Filter => EXEC_SEEN.swap(0, Ordering::Relaxed) == 1,
            Point::Command { in_transaction } => in_transaction,
            Point::Info => true,
            Point::Callback => false,
        };
        if !may_follow_exec {
            return;
        }
    }
    // Taken only here and in the filter's notes, never across a call back into the module.
    let Some(mut before) = BEFORE.try_lock() else {
        return;
    };
    let (Some(then), Some(now)) = (*before, read()) else {
        return;
    };
    let reset = now.shows_reset_since(&then);
    if reset {
        counters::reset();
        denied::reset();
    }
    if state == SEEN && point == Point::Callback && !reset && !now.shows_refusal_since(&then) {
        return;
    }
    if state == SEEN && !reset && !now.shows_refusal_since(&then) {
        // Neither ran nor refused: queued in a transaction, which may be executed, discarded
        // or abandoned (or postponed by CLIENT PAUSE). A sender known not to be in one ran it
        // where it left no trace, with nothing to zero.
        let sender = SENDER.load(Ordering::Relaxed);
        let waiting_in = WAITING_IN.load(Ordering::Relaxed);
        let already = WAITING.load(Ordering::Relaxed) == 1 && !transaction_over(waiting_in);
        if !already && !transaction_over(sender) {
            WAITING.store(1, Ordering::Relaxed);
            WAITING_IN.store(sender, Ordering::Relaxed);
        }
    } else if state == QUEUED {
        let client = WAITING_IN.load(Ordering::Relaxed);
        if transaction_over(client) || (reset && client == 0) {
            WAITING.store(0, Ordering::Relaxed);
        }
    }
    if WAITING.load(Ordering::Relaxed) == 1 {
        // Only an EXEC can run it: watch the points that may follow one.
        *before = Some(now);
        EXEC_SEEN.store(0, Ordering::Relaxed);
        STATE.store(QUEUED, Ordering::Relaxed);
    } else {
        *before = None;
        STATE.store(IDLE, Ordering::Relaxed);
    }
}

/// What the command filter does once what went before is settled (the entry layer settles
/// first): notes a RESETSTAT, or an EXEC or DISCARD that may run one queued earlier.
pub fn observe(filter: *mut raw::RedisModuleCommandFilterCtx) {
    // SAFETY: filter is the live filter context; ArgGet returns strings valid during the
    // callback.
    unsafe {
        let (Some(count), Some(get)) = (
            raw::RedisModule_CommandFilterArgsCount,
            raw::RedisModule_CommandFilterArgGet,
        ) else {
            return;
        };
        let word = |position: c_int| string_bytes(get(filter, position)).unwrap_or_default();
        match count(filter) {
            2 if word(0).eq_ignore_ascii_case(b"config")
                && word(1).eq_ignore_ascii_case(b"resetstat") =>
            {
                seen_resetstat(sender(filter))
            }
            1 if STATE.load(Ordering::Relaxed) == QUEUED
                && (word(0).eq_ignore_ascii_case(b"exec")
                    || word(0).eq_ignore_ascii_case(b"discard")) =>
            {
                exec_coming()
            }
            _ => {}
        }
    }
}

fn seen_resetstat(sender: u64) {
    // One queued in a transaction earlier may have run since the last look: settle it first,
    // so that this reading comes after any reset already made.
    if STATE.load(Ordering::Relaxed) == QUEUED {
        settle(Point::Info);
    }
    let Some(now) = read() else {
        return;
    };
    let Some(mut before) = BEFORE.try_lock() else {
        return;
    };
    *before = Some(now);
    SENDER.store(sender, Ordering::Relaxed);
    STATE.store(SEEN, Ordering::Relaxed);
}

/// An EXEC or DISCARD is about to run while a RESETSTAT waits in a transaction: the reading to
/// compare with is taken now, with all that the server counted up to it.
fn exec_coming() {
    EXEC_SEEN.store(1, Ordering::Relaxed);
    if let (Some(mut before), Some(now)) = (BEFORE.try_lock(), read()) {
        *before = Some(now);
    }
}

/// The id of the client whose command the filter sees, or 0 where the server does not say.
fn sender(filter: *mut raw::RedisModuleCommandFilterCtx) -> u64 {
    // SAFETY: filter is the live filter context.
    unsafe { raw::RedisModule_CommandFilterGetClientId.map_or(0, |id| id(filter)) }
}

/// Whether the transaction of client `id` is over: the client left, or is no longer in MULTI.
/// False when that cannot be known (id 0).
fn transaction_over(id: u64) -> bool {
    if id == 0 {
        return false;
    }
    let Some(get_info) = (unsafe { raw::RedisModule_GetClientInfoById }) else {
        return false;
    };
    // SAFETY: the structure holds only integers, for which all zeros is a value; marked
    // version 1, it is the one the call fills in.
    let found = unsafe {
        let mut info: raw::RedisModuleClientInfo = std::mem::zeroed();
        info.version = 1;
        let found = get_info((&mut info as *mut raw::RedisModuleClientInfo).cast(), id);
        (found == raw::REDISMODULE_OK as c_int).then_some(info.flags)
    };
    let Some(flags) = found else {
        return true;
    };
    flags & u64::from(raw::REDISMODULE_CLIENTINFO_FLAG_MULTI) == 0
}

/// Reads the statistics through the module API: a few microseconds, paid only around a
/// RESETSTAT and, while one waits in a transaction, around each EXEC and DISCARD.
fn read() -> Option<Reading> {
    let commands = with_info_section(c"stats", |stats| {
        stats.unsigned(c"total_commands_processed")
    })??;
    with_info_section(c"commandstats", |data| {
        Some(Reading {
            commands,
            resetstat: command_stat(data, c"cmdstat_config|resetstat"),
            multi_calls: command_stat(data, c"cmdstat_multi").calls,
            own_calls: Command::ALL
                .iter()
                .filter_map(|command| CString::new(format!("cmdstat_{}", command.name())).ok())
                .map(|field| command_stat(data, &field).calls)
                .fold(0, u64::saturating_add),
        })
    })?
}

/// A `cmdstat_…` line's counts; a command the server has not counted since the last reset has
/// no line, and counts zero.
fn command_stat(section: &InfoSection, field: &CStr) -> CommandStat {
    section
        .text(field)
        .map_or_else(CommandStat::default, parse_command_stat)
}

/// `calls=3,usec=10,usec_per_call=3.33,rejected_calls=1,failed_calls=0`.
fn parse_command_stat(line: &[u8]) -> CommandStat {
    let mut stat = CommandStat::default();
    for pair in line.split(|&b| b == b',') {
        let mut parts = pair.splitn(2, |&b| b == b'=');
        let (Some(name), Some(value)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Some(value) = std::str::from_utf8(value)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        else {
            continue;
        };
        match name {
            b"calls" => stat.calls = value,
            b"rejected_calls" => stat.rejected_calls = value,
            b"failed_calls" => stat.failed_calls = value,
            _ => {}
        }
    }
    stat
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(commands: u64, calls: u64, rejected: u64, multi: u64) -> Reading {
        Reading {
            own_calls: 0,
            commands,
            resetstat: CommandStat {
                calls,
                rejected_calls: rejected,
                failed_calls: 0,
            },
            multi_calls: multi,
        }
    }

    #[test]
    fn command_stat_lines_are_parsed_by_name() {
        let stat = parse_command_stat(
            b"calls=3,usec=10,usec_per_call=3.33,rejected_calls=1,failed_calls=2",
        );
        assert_eq!(
            stat,
            CommandStat {
                calls: 3,
                rejected_calls: 1,
                failed_calls: 2
            }
        );
        assert_eq!(parse_command_stat(b"garbage"), CommandStat::default());
    }

    #[test]
    fn a_run_is_told_from_a_refusal_and_from_a_queued_command() {
        let before = reading(500, 0, 0, 0);
        // Ran: the server's count restarts, and RESETSTAT counts itself once.
        assert!(reading(1, 1, 0, 0).shows_reset_since(&before));
        // Refused (no auth, ACL, script): counted as rejected, nothing goes down.
        let refused = reading(500, 0, 1, 0);
        assert!(!refused.shows_reset_since(&before));
        assert!(refused.shows_refusal_since(&before));
        // Queued: nothing changes but the count of commands.
        let queued = reading(502, 0, 0, 0);
        assert!(!queued.shows_reset_since(&before) && !queued.shows_refusal_since(&before));
    }

    #[test]
    fn a_run_inside_a_long_transaction_shows_in_its_multi_count() {
        // The previous reset was the last command counted, and the transaction holds more
        // commands after the RESETSTAT than the server had counted before it: the MULTI that
        // opened the transaction, counted before, is gone after.
        let before = reading(3, 1, 0, 1);
        assert!(reading(40, 1, 0, 0).shows_reset_since(&before));
    }
}

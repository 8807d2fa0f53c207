//! The module's INFO section (`INFO redis-cell`, `INFO modules`, `INFO everything`): one line
//! per command, `cl_throttle:calls=5,allowed=3,denied=1,peeks=1,errors=0`, and one for the
//! waits, `cl_waiting:now=2,waited=9,admitted=6,timed_out=1,left=0` (`now` is not reset),
//! and one for ATMOST's grants, `cl_atmost:calls=4,grants=3,units=120`, and one for the
//! lockouts, `cl_bans:banned=2,by_hand=1,lifted=1,denied=40`.

use std::ffi::CString;
use std::sync::atomic::Ordering;

use redis_module::raw;

use crate::command::Command;
use crate::counters::{self, BANS, GRANTS, WAITS};

/// Adds the section to the INFO being built; `waiting_now` is how many calls wait now.
pub fn add_section(ctx: *mut raw::RedisModuleInfoCtx, waiting_now: usize) {
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
        let label = |text: &str| CString::new(text).unwrap_or_default();
        section(ctx, c"stats".as_ptr());
        for command in Command::ALL {
            // `cl.throttle`'s line is `cl_throttle`.
            begin(ctx, label(&command.name().replace('.', "_")).as_ptr());
            for (name, counter) in counters::of(command).fields() {
                field(ctx, label(name).as_ptr(), counter.load(Ordering::Relaxed));
            }
            end(ctx);
        }
        begin(ctx, c"cl_waiting".as_ptr());
        field(ctx, c"now".as_ptr(), waiting_now as u64);
        for (name, counter) in WAITS.fields() {
            field(ctx, label(name).as_ptr(), counter.load(Ordering::Relaxed));
        }
        end(ctx);
        begin(ctx, c"cl_atmost".as_ptr());
        for (name, counter) in GRANTS.fields() {
            field(ctx, label(name).as_ptr(), counter.load(Ordering::Relaxed));
        }
        end(ctx);
        begin(ctx, c"cl_bans".as_ptr());
        for (name, counter) in BANS.fields() {
            field(ctx, label(name).as_ptr(), counter.load(Ordering::Relaxed));
        }
        end(ctx);
    }
}

//! The module API's floor, for the benchmark only (not shipped): one command doing exactly
//! what every limiter write must, and nothing else. `FLOOR.WRITE key` opens the key, stores a
//! 19-digit integer, sets an absolute expiry, propagates the effect as `SET key value PXAT ms`
//! with `RedisModule_Replicate`, and replies five integers. `make bench` loads it beside the
//! module and reports each command's cost as a ratio to it. Any further arguments are read by
//! the server and ignored here, so that the floor can be given the arguments of the command it
//! is set against: the server's reading of them is then on both sides.

use std::os::raw::c_int;

use redis_module::{raw, redis_module, Context, RedisString, Status};

/// One hour ahead, as a limiter's key expires some time after its write.
const EXPIRE_IN_MS: i64 = 3_600_000;

extern "C" fn write(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: the server passes argc live argument strings and the running command's context;
    // every function used here exists on every server the benchmark runs.
    unsafe {
        if argc < 2 {
            return raw::RedisModule_WrongArity.map_or(0, |wrong| wrong(ctx));
        }
        let (
            Some(open),
            Some(close),
            Some(millis),
            Some(from_integer),
            Some(set),
            Some(expire),
            Some(replicate),
            Some(array),
            Some(integer),
            Some(free),
        ) = (
            raw::RedisModule_OpenKey,
            raw::RedisModule_CloseKey,
            raw::RedisModule_Milliseconds,
            raw::RedisModule_CreateStringFromLongLong,
            raw::RedisModule_StringSet,
            raw::RedisModule_SetAbsExpire,
            raw::RedisModule_Replicate,
            raw::RedisModule_ReplyWithArray,
            raw::RedisModule_ReplyWithLongLong,
            raw::RedisModule_FreeString,
        )
        else {
            return raw::REDISMODULE_ERR as c_int;
        };
        let name = *argv.add(1);
        let key = open(
            ctx,
            name,
            (raw::REDISMODULE_READ | raw::REDISMODULE_WRITE) as c_int,
        );
        let now_ms = millis();
        // A nanosecond timestamp: 19 digits, as a GCRA TAT.
        let value = from_integer(ctx, now_ms * 1_000_000 + 123_456);
        let expire_at = now_ms + EXPIRE_IN_MS;
        set(key.cast(), value);
        expire(key.cast(), expire_at);
        close(key.cast());
        replicate(
            ctx,
            c"SET".as_ptr(),
            c"sscl".as_ptr(),
            name,
            value,
            c"PXAT".as_ptr(),
            expire_at,
        );
        free(ctx, value);
        array(ctx, 5);
        for reply in [0, 1, 0, -1, 1] {
            integer(ctx, reply);
        }
    }
    raw::REDISMODULE_OK as c_int
}

fn init(ctx: &Context, _args: &[RedisString]) -> Status {
    // SAFETY: called from OnLoad with the module's context and static strings.
    let created = unsafe {
        raw::RedisModule_CreateCommand.map(|create| {
            create(
                ctx.ctx,
                c"floor.write".as_ptr(),
                Some(write),
                c"write deny-oom fast".as_ptr(),
                1,
                1,
                1,
            )
        })
    };
    if created == Some(raw::REDISMODULE_OK as c_int) {
        Status::Ok
    } else {
        Status::Err
    }
}

redis_module! {
    name: "floor",
    version: 1,
    allocator: (std::alloc::System, std::alloc::System),
    data_types: [],
    init: init,
}

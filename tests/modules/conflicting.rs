//! A test-only module, not shipped: another module that owns `cl.throttle`, for the tests of
//! loading redis-cell beside it (tests/lifecycle.rs). Built as an example cdylib.

use std::os::raw::c_int;

use redis_module::{raw, redis_module, Context, RedisString, Status};

extern "C" fn owned(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    // SAFETY: ctx is the running command's context.
    unsafe {
        if let Some(reply) = raw::RedisModule_ReplyWithSimpleString {
            reply(ctx, c"owned by cl-conflict".as_ptr());
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
                c"cl.throttle".as_ptr(),
                Some(owned),
                c"readonly".as_ptr(),
                0,
                0,
                0,
            )
        })
    };
    if created == Some(raw::REDISMODULE_OK as c_int) {
        Status::Ok
    } else {
        ctx.log_warning("cl-conflict: cannot register cl.throttle: not loading");
        Status::Err
    }
}

redis_module! {
    name: "cl-conflict",
    version: 1,
    // The system's heap: this module shares no memory with the server, and `cargo test` also
    // runs it as an ordinary test binary, where the server's allocator does not exist.
    allocator: (std::alloc::System, std::alloc::System),
    data_types: [],
    init: init,
}

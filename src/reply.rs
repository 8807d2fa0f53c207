//! Sending replies to the calling client: the five integers, one array of them per limiter,
//! one integer, pairs of names and numbers, and error replies.

use std::ffi::CStr;
use std::os::raw::{c_long, c_longlong};

use redis_module::raw;

use crate::error::Error;

/// Sends `[limited, limit, remaining, retry_after, reset_after]` to the calling client, and
/// ATMOST's `granted` sixth.
pub(crate) fn send(ctx: *mut raw::RedisModuleCtx, values: [i64; 5], granted: Option<i64>) {
    // SAFETY: ctx is the running command's context; these functions exist on every server
    // since modules did.
    unsafe {
        if let (Some(array), Some(integer)) = (
            raw::RedisModule_ReplyWithArray,
            raw::RedisModule_ReplyWithLongLong,
        ) {
            array(
                ctx,
                (values.len() + usize::from(granted.is_some())) as c_long,
            );
            for value in values.into_iter().chain(granted) {
                integer(ctx, value as c_longlong);
            }
        }
    }
}

/// Sends one `[limited, limit, remaining, retry_after, reset_after]` array per limiter, in
/// an array, each with ATMOST's `granted` sixth.
pub(crate) fn send_all(ctx: *mut raw::RedisModuleCtx, replies: &[[i64; 5]], granted: Option<i64>) {
    // SAFETY: as in `send`.
    unsafe {
        if let Some(array) = raw::RedisModule_ReplyWithArray {
            array(ctx, replies.len() as c_long);
            for &values in replies {
                send(ctx, values, granted);
            }
        }
    }
}

/// Sends one integer to the calling client.
pub(crate) fn send_integer(ctx: *mut raw::RedisModuleCtx, value: i64) {
    // SAFETY: as in `send`.
    unsafe {
        if let Some(integer) = raw::RedisModule_ReplyWithLongLong {
            integer(ctx, value as c_longlong);
        }
    }
}

/// Sends names and numbers in pairs, as one flat array `name, number, name, number, …`, as
/// ZRANGE … WITHSCORES does.
pub(crate) fn send_pairs(ctx: *mut raw::RedisModuleCtx, pairs: &[(Vec<u8>, i64)]) {
    // SAFETY: as in `send`; each buffer outlives the call that copies it.
    unsafe {
        if let (Some(array), Some(buffer), Some(integer)) = (
            raw::RedisModule_ReplyWithArray,
            raw::RedisModule_ReplyWithStringBuffer,
            raw::RedisModule_ReplyWithLongLong,
        ) {
            array(ctx, (pairs.len() * 2) as c_long);
            for (name, number) in pairs {
                buffer(ctx, name.as_ptr().cast(), name.len());
                integer(ctx, *number as c_longlong);
            }
        }
    }
}

/// Sends names with two numbers each, as one flat array `name, number, number, …`.
pub(crate) fn send_triples(ctx: *mut raw::RedisModuleCtx, triples: &[(Vec<u8>, i64, i64)]) {
    // SAFETY: as in `send_pairs`.
    unsafe {
        if let (Some(array), Some(buffer), Some(integer)) = (
            raw::RedisModule_ReplyWithArray,
            raw::RedisModule_ReplyWithStringBuffer,
            raw::RedisModule_ReplyWithLongLong,
        ) {
            array(ctx, (triples.len() * 3) as c_long);
            for (name, first, second) in triples {
                buffer(ctx, name.as_ptr().cast(), name.len());
                integer(ctx, *first as c_longlong);
                integer(ctx, *second as c_longlong);
            }
        }
    }
}

/// Sends `error` as an error reply to the calling client.
pub(crate) fn send_error(ctx: *mut raw::RedisModuleCtx, error: Error) {
    send_error_text(ctx, &error.to_c_string());
}

/// Sends an error reply made elsewhere (a cluster redirect), its code first.
pub(crate) fn send_error_text(ctx: *mut raw::RedisModuleCtx, message: &CStr) {
    // SAFETY: ctx is the running command's context; the message outlives the call, which
    // copies it.
    unsafe {
        if let Some(reply_error) = raw::RedisModule_ReplyWithError {
            reply_error(ctx, message.as_ptr());
        }
    }
}

//! The server's API for blocked clients and module timers, as blocking.rs uses it: each call
//! made safe to make, or an error where the server lacks it. Blocking decides who waits and
//! when; this file only asks the server.

use std::os::raw::{c_int, c_void};

use redis_module::raw;

use crate::error::Error;
use crate::ffi::{api, succeeded};
use crate::register;

/// The callbacks a blocked client is given.
pub struct ClientCallbacks {
    pub reply: raw::RedisModuleCmdFunc,
    /// `None` where the server's CLIENT UNBLOCK must not reach the module (see
    /// `client_unblock_reaches_modules`).
    pub timeout: raw::RedisModuleCmdFunc,
    pub free: Option<unsafe extern "C" fn(*mut raw::RedisModuleCtx, *mut c_void)>,
    pub disconnect: raw::RedisModuleDisconnectFunc,
}

/// Whether the server has every call a wait needs, from blocking the client to unblocking it:
/// asked before a client is blocked, so that nothing it needs later can be missing.
pub fn can_block() -> Result<(), Error> {
    // SAFETY: reads of API pointers, filled in once at load.
    unsafe {
        api(raw::RedisModule_BlockClient)?;
        api(raw::RedisModule_SetDisconnectCallback)?;
        api(raw::RedisModule_GetSelectedDb)?;
        api(raw::RedisModule_CreateTimer)?;
        api(raw::RedisModule_UnblockClient)?;
    }
    Ok(())
}

/// Blocks the running command's client, with the server's own timeout off (the module's
/// timers keep the deadline): the client, and the database it has selected.
///
/// # Safety
/// `ctx` is the running command's context, and it may block; the callbacks live as long as
/// the module is loaded, which the server ensures while it has blocked clients.
pub unsafe fn block(
    ctx: *mut raw::RedisModuleCtx,
    callbacks: &ClientCallbacks,
) -> Result<(*mut raw::RedisModuleBlockedClient, c_int), Error> {
    let block = api(raw::RedisModule_BlockClient)?;
    let disconnect = api(raw::RedisModule_SetDisconnectCallback)?;
    let selected = api(raw::RedisModule_GetSelectedDb)?;
    let client = block(ctx, callbacks.reply, callbacks.timeout, callbacks.free, 0);
    if client.is_null() {
        return Err(Error::Internal);
    }
    disconnect(client, callbacks.disconnect);
    Ok((client, selected(ctx)))
}

/// CLIENT UNBLOCK reaches a module's blocked client only through its timeout callback. Redis
/// before 7.4 (and Valkey before 8) runs that callback even for a client the module has just
/// unblocked, and then sends no reply (7.0) or stops on an assertion (7.2). Redis 7.4 and
/// Valkey 8 are told apart by an API they added, RedisModule_AddACLCategory.
pub fn client_unblock_reaches_modules() -> bool {
    register::adds_acl_categories()
}

/// Unblocks a client; the server runs its reply callback with `data` when it next can, unless
/// the client has gone, and then its free callback. False if the server refused, and then
/// `data` is still the caller's.
///
/// # Safety
/// `client` is blocked by this module and is unblocked once; `data` is what the reply and
/// free callbacks expect (or null, for a client the server is done with).
pub unsafe fn unblock(client: *mut raw::RedisModuleBlockedClient, data: *mut c_void) -> bool {
    raw::RedisModule_UnblockClient.is_some_and(|unblock| succeeded(unblock(client, data)).is_ok())
}

/// The data a blocked client was unblocked with, in its reply or free callback's context.
///
/// # Safety
/// `ctx` is a blocked client's reply context.
pub unsafe fn unblocked_with(ctx: *mut raw::RedisModuleCtx) -> *mut c_void {
    raw::RedisModule_GetBlockedClientPrivateData.map_or(std::ptr::null_mut(), |get| get(ctx))
}

/// The blocked client a timeout callback is for, as a number to look it up by.
///
/// # Safety
/// `ctx` is a blocked client's timeout context.
pub unsafe fn client_of(ctx: *mut raw::RedisModuleCtx) -> usize {
    raw::RedisModule_GetBlockedClientHandle.map_or(0, |handle| handle(ctx) as usize)
}

/// Starts a timer that calls `callback` with `data` after `period_ms`.
pub fn start_timer(
    ctx: *mut raw::RedisModuleCtx,
    period_ms: i64,
    callback: raw::RedisModuleTimerProc,
    data: usize,
) -> Result<raw::RedisModuleTimerID, Error> {
    // SAFETY: reads an API pointer; ctx is a live module context, and the data is a number,
    // not a pointer.
    let create = api(unsafe { raw::RedisModule_CreateTimer })?;
    Ok(unsafe { create(ctx, period_ms, callback, data as *mut c_void) })
}

/// Stops one of this module's timers, if it has not fired.
pub fn stop_timer(ctx: *mut raw::RedisModuleCtx, timer: raw::RedisModuleTimerID) {
    // SAFETY: reads an API pointer; ctx is a live module context and the timer is this
    // module's (its data is a number, nothing to free).
    if let Some(stop) = unsafe { raw::RedisModule_StopTimer } {
        let mut data = std::ptr::null_mut();
        unsafe { stop(ctx, timer, &mut data) };
    }
}

/// Selects the database `db` in `ctx`: a timer's context starts in database 0.
pub fn select_db(ctx: *mut raw::RedisModuleCtx, db: c_int) {
    // SAFETY: reads an API pointer; ctx is a live module context.
    if let Some(select) = unsafe { raw::RedisModule_SelectDb } {
        unsafe { select(ctx, db) };
    }
}

/// Whether a failover has paused writes (the server asks modules to hold theirs).
pub fn writes_paused() -> bool {
    // SAFETY: a plain query of the server's state.
    unsafe { raw::RedisModule_AvoidReplicaTraffic.is_some_and(|avoid| avoid() != 0) }
}

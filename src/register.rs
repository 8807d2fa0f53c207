//! The server's API for what a module registers at load, and for the server's questions about
//! a command's keys: each call made safe to make, or a plain answer where the server lacks it.
//! What to register (the command table, the load checks) is decided above; this file only
//! asks the server.

use std::ffi::CStr;
use std::os::raw::c_int;

use redis_module::raw;

use crate::error::Error;
use crate::ffi::{api, succeeded};

/// The server's version, as `RedisModule_GetServerVersion` encodes it (0x00MMmmpp), where it
/// says.
pub fn server_version() -> Option<c_int> {
    // SAFETY: a plain getter, filled in by RedisModule_Init.
    unsafe { raw::RedisModule_GetServerVersion.map(|get| get()) }
}

/// Sets the module's options, where the server has them.
pub fn set_module_options(ctx: *mut raw::RedisModuleCtx, options: c_int) {
    // SAFETY: called from OnLoad with the module's own context.
    if let Some(set_options) = unsafe { raw::RedisModule_SetModuleOptions } {
        unsafe { set_options(ctx, options) };
    }
}

/// Registers the module's INFO section callback, where the server has them.
pub fn info_callback(ctx: *mut raw::RedisModuleCtx, callback: raw::RedisModuleInfoFunc) {
    // SAFETY: called from OnLoad with the module's context and a static callback.
    if let Some(register_info) = unsafe { raw::RedisModule_RegisterInfoFunc } {
        unsafe { register_info(ctx, callback) };
    }
}

/// Registers a command filter, where the server has them.
pub fn command_filter(
    ctx: *mut raw::RedisModuleCtx,
    filter: raw::RedisModuleCommandFilterFunc,
    flags: c_int,
) {
    // SAFETY: called from OnLoad with the module's context and a static callback.
    if let Some(register_filter) = unsafe { raw::RedisModule_RegisterCommandFilter } {
        unsafe { register_filter(ctx, filter, flags) };
    }
}

/// Adds an ACL category, where the server lets modules add one: whether it did.
pub fn add_acl_category(ctx: *mut raw::RedisModuleCtx, name: &CStr) -> bool {
    // SAFETY: called from OnLoad, the only time AddACLCategory may be called.
    unsafe { raw::RedisModule_AddACLCategory }
        .is_some_and(|add| succeeded(unsafe { add(ctx, name.as_ptr()) }).is_ok())
}

/// Whether the server lets modules add ACL categories (Redis 7.4+, Valkey).
pub fn adds_acl_categories() -> bool {
    // SAFETY: reads an API pointer, filled in once at load.
    unsafe { raw::RedisModule_AddACLCategory }.is_some()
}

/// Creates a command; its keys, where fixed, at `first_key` (0: none). The error says why
/// not: the server lacks the call, or refused the name.
pub fn create_command(
    ctx: *mut raw::RedisModuleCtx,
    name: &CStr,
    handler: raw::RedisModuleCmdFunc,
    flags: &CStr,
    first_key: c_int,
) -> Result<(), &'static str> {
    // SAFETY: called from OnLoad with the module's context; the strings are C strings the
    // server copies.
    let create = unsafe { raw::RedisModule_CreateCommand }.ok_or("no CreateCommand")?;
    // The name, flags and key positions are fixed and valid: what can fail is the name.
    succeeded(unsafe {
        create(
            ctx,
            name.as_ptr(),
            handler,
            flags.as_ptr(),
            first_key,
            first_key,
            first_key,
        )
    })
    .map_err(|_| {
        "the server already has a command of that name (is another module providing it loaded?)"
    })
}

/// Whether the server gives a command's handle (Redis 7.0+), which what follows needs.
pub fn gets_commands() -> bool {
    // SAFETY: reads an API pointer, filled in once at load.
    unsafe { raw::RedisModule_GetCommand }.is_some()
}

/// The handle of a command this module created, where the server gives one.
pub fn command(ctx: *mut raw::RedisModuleCtx, name: &CStr) -> Option<*mut raw::RedisModuleCommand> {
    // SAFETY: called from OnLoad with the module's context.
    let get = unsafe { raw::RedisModule_GetCommand }?;
    let handle = unsafe { get(ctx, name.as_ptr()) };
    (!handle.is_null()).then_some(handle)
}

/// Whether the server sets ACL categories on module commands (Redis 7.2+, Valkey).
pub fn sets_acl_categories() -> bool {
    // SAFETY: reads an API pointer, filled in once at load.
    unsafe { raw::RedisModule_SetCommandACLCategories }.is_some()
}

/// Puts a command in these ACL categories: whether the server took them.
pub fn set_acl_categories(command: *mut raw::RedisModuleCommand, categories: &CStr) -> bool {
    // SAFETY: the handle is one GetCommand gave for this module's command.
    unsafe { raw::RedisModule_SetCommandACLCategories }
        .is_some_and(|set| succeeded(unsafe { set(command, categories.as_ptr()) }).is_ok())
}

/// Whether the server takes a command's documentation and key specs (Redis 7.0+).
pub fn sets_command_info() -> bool {
    // SAFETY: reads an API pointer, filled in once at load.
    unsafe { raw::RedisModule_SetCommandInfo }.is_some()
}

/// Gives a command its documentation, arity and key specs.
///
/// # Safety
/// Every pointer in `info` is valid until this returns (the server copies them).
pub unsafe fn set_command_info(
    command: *mut raw::RedisModuleCommand,
    info: &raw::RedisModuleCommandInfo,
) -> Result<(), Error> {
    let set_info = api(raw::RedisModule_SetCommandInfo)?;
    succeeded(set_info(command, info))
}

/// Whether the running call is the server asking where its keys are (cluster routing),
/// rather than a call to run.
pub fn asks_for_keys(ctx: *mut raw::RedisModuleCtx) -> bool {
    // SAFETY: ctx is the running command's context.
    unsafe { raw::RedisModule_IsKeysPositionRequest.is_some_and(|asks| asks(ctx) != 0) }
}

/// Answers the server's question: the argument at `position` is a key, used so.
pub fn report_key(ctx: *mut raw::RedisModuleCtx, position: c_int, flags: c_int) {
    // SAFETY: ctx is the running command's context, which asked for the keys' positions.
    if let Some(key_at) = unsafe { raw::RedisModule_KeyAtPosWithFlags } {
        unsafe { key_at(ctx, position, flags) };
    }
}

/// Registers a numeric module configuration (`<module>.<name>`, settable in redis.conf, with
/// `MODULE LOADEX … CONFIG` and `CONFIG SET`), then loads the values the server was given,
/// where the server has module configurations. False when it refuses them (a value out of
/// range in redis.conf): the load must fail.
pub fn numeric_config(
    ctx: *mut raw::RedisModuleCtx,
    name: &CStr,
    (default, min, max): (i64, i64, i64),
    get: raw::RedisModuleConfigGetNumericFunc,
    set: raw::RedisModuleConfigSetNumericFunc,
) -> bool {
    // SAFETY: API pointers, filled in at load; called from OnLoad with the module's context,
    // the name a static C string.
    let (Some(register), Some(load)) =
        (unsafe { raw::RedisModule_RegisterNumericConfig }, unsafe {
            raw::RedisModule_LoadConfigs
        })
    else {
        return true;
    };
    let flags = raw::REDISMODULE_CONFIG_DEFAULT;
    let registered = unsafe {
        register(
            ctx,
            name.as_ptr(),
            default,
            flags,
            min,
            max,
            get,
            set,
            None,
            std::ptr::null_mut(),
        )
    };
    registered == raw::REDISMODULE_OK as c_int
        && unsafe { load(ctx) } == raw::REDISMODULE_OK as c_int
}

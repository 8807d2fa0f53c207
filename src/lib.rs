//! redis-cell: rate limiting inside Redis and Valkey. The crate's layers, bottom to top, as
//! docs/design.md draws them; no module imports one above its own. This file is the top:
//! registration, the checks made at load time and the options.

// Values.
pub mod all_args;
pub mod args;
pub mod bytes;
pub mod command;
pub mod decimal;
pub mod error;
mod fault;
pub mod grammar;
pub mod outcome;
pub mod time;

// Pure cores.
pub mod all;
pub mod ban;
pub mod buckets;
pub mod calendar;
pub mod fixed;
pub mod gcra;
pub mod lease;
pub mod limiter;
pub mod line_order;
pub mod smooth;
pub mod top;
pub mod window;

// The FFI.
mod alloc;
mod ffi;
mod register;
mod strings;

// Storage, propagation, the clock, replies, counters and the waiting lines.
mod blocked;
mod clock;
mod counters;
mod denied;
mod info;
mod lines;
mod propagate;
mod redirect;
mod reply;
mod resetstat;
mod store;

// The command bodies.
mod commands;

// Blocking.
mod blocking;
mod delayed;

// Every way in.
mod entry;

// Registration.
mod command_table;

use std::os::raw::c_int;

use redis_module::{raw, redis_module, Context, RedisString, Status};

use crate::alloc::ModuleAlloc;
use crate::propagate::{check_propagation, free_words, make_words};

/// The oldest server this module runs on, as `RedisModule_GetServerVersion` encodes it.
const MIN_SERVER_VERSION: c_int = 0x00_07_00_00;

/// `REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED`: a call that opens its key for writing
/// but ends up denied must not count as a change (no WATCH invalidation, no client-side
/// cache invalidation); writes signal explicitly instead.
const NO_IMPLICIT_SIGNAL_MODIFIED: c_int = 1 << 1;

/// The module version MODULE LIST shows, from Cargo.toml: major·10000 + minor·100 + patch.
const MODULE_VERSION: i32 = version_number(env!("CARGO_PKG_VERSION"));

const fn version_number(version: &str) -> i32 {
    let bytes = version.as_bytes();
    let (mut number, mut part, mut i) = (0, 0, 0);
    while i < bytes.len() && bytes[i] != b'-' && bytes[i] != b'+' {
        if bytes[i] == b'.' {
            number = number * 100 + part;
            part = 0;
        } else {
            part = part * 10 + (bytes[i] - b'0') as i32;
        }
        i += 1;
    }
    number * 100 + part
}

fn on_load(ctx: &Context, _args: &[RedisString]) -> Status {
    status(entry::guard_load(ctx.ctx, || load(ctx) == Status::Ok))
}

fn on_unload(ctx: &Context) -> Status {
    status(entry::guard_load(ctx.ctx, || {
        free_words();
        denied::free();
        true
    }))
}

fn status(ok: bool) -> Status {
    if ok {
        Status::Ok
    } else {
        Status::Err
    }
}

fn load(ctx: &Context) -> Status {
    ffi::report_panics_in_the_log();
    if let Err(refusal) = check_server_version().and_then(|()| check_cluster_calls(ctx.ctx)) {
        ffi::log_warning(ctx.ctx, &refusal);
        return Status::Err;
    }
    if let Err(reason) = check_propagation(ctx.ctx).and_then(|()| make_words()) {
        free_words();
        ffi::log_warning(ctx.ctx, &format!("redis-cell: {reason}: not loading"));
        return Status::Err;
    }
    register::set_module_options(ctx.ctx, NO_IMPLICIT_SIGNAL_MODIFIED);
    if let Err(reason) = command_table::register_all(ctx.ctx) {
        free_words();
        ffi::log_warning(ctx.ctx, &format!("redis-cell: {reason}: not loading"));
        return Status::Err;
    }
    // CL.TOP's entries a minute: `redis-cell.top-keys`.
    let bounds = (denied::DEFAULT_SIZE as i64, 1, denied::MAX_SIZE as i64);
    let get = Some(entry::get_top_keys as _);
    let set = Some(entry::set_top_keys as _);
    if !register::numeric_config(ctx.ctx, c"top-keys", bounds, get, set) {
        free_words();
        ffi::log_warning(
            ctx.ctx,
            "redis-cell: the server refused redis-cell.top-keys (1 to 65536): not loading",
        );
        return Status::Err;
    }
    // Last, after every step that can fail: Redis 7.0 does not remove the command filters of
    // a module whose load fails, and a filter left pointing into the unloaded library would
    // crash the server on the next command.
    register_info_and_filter(ctx.ctx);
    Status::Ok
}

fn check_server_version() -> Result<(), String> {
    let version = register::server_version();
    match version {
        Some(v) if v >= MIN_SERVER_VERSION => Ok(()),
        Some(v) => Err(format!(
            "redis-cell needs Redis 7.0 or later (or Valkey 7.2 or later); this server is {}.{}.{}: not loading",
            v >> 16,
            (v >> 8) & 0xff,
            v & 0xff
        )),
        None => Err(
            "redis-cell needs Redis 7.0 or later (or Valkey 7.2 or later); this server is older: not loading"
                .to_owned(),
        ),
    }
}

/// In a cluster, a waiter whose slot moves away asks the server who serves it now (CLUSTER
/// NODES and SHARDS, from a timer: src/redirect.rs). Valkey 8.0.0 and its release candidates
/// crash on any module's call for the topology, whatever the context: they read the calling
/// client's connection, which a module's call has none of (fixed in 8.0.1). There, in a
/// cluster, the module does not load.
fn check_cluster_calls(ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
    if crate::ffi::context_flags(ctx) & raw::REDISMODULE_CTX_FLAGS_CLUSTER == 0 {
        return Ok(());
    }
    let valkey = ffi::with_info_section(c"server", |server| {
        server.text(c"valkey_version").map(<[u8]>::to_vec)
    })
    .flatten();
    if faults_on_topology_calls(valkey.as_deref()) {
        return Err(
            "redis-cell: Valkey 8.0.0 crashes when a module asks a cluster who serves a slot, as a waiter whose slot moves must (fixed in Valkey 8.0.1): not loading in a cluster"
                .to_owned(),
        );
    }
    Ok(())
}

/// Whether a server with this `valkey_version` (none for Redis) crashes on a module's call
/// for the cluster's topology: 8.0.0, and its release candidates, which call themselves
/// 7.9.240.
fn faults_on_topology_calls(valkey_version: Option<&[u8]>) -> bool {
    matches!(valkey_version, Some(b"8.0.0" | b"7.9.240"))
}

redis_module! {
    name: "redis-cell",
    version: MODULE_VERSION,
    allocator: (ModuleAlloc, ModuleAlloc),
    data_types: [],
    init: on_load,
    deinit: on_unload,
}

/// Registers the INFO section and the command filter that sees CONFIG RESETSTAT go by.
fn register_info_and_filter(ctx: *mut raw::RedisModuleCtx) {
    register::info_callback(ctx, Some(entry::info));
    register::command_filter(
        ctx,
        Some(entry::filter),
        raw::REDISMODULE_CMDFILTER_NOSELF as c_int,
    );
}

#[cfg(test)]
mod quotes;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_valkey_8_0_0_faults_on_a_module_s_topology_calls() {
        assert!(faults_on_topology_calls(Some(b"8.0.0")));
        assert!(faults_on_topology_calls(Some(b"7.9.240")));
        for safe in [&b"7.2.7"[..], b"8.0.1", b"8.1.1", b"9.0.0", b"9.1.2"] {
            assert!(!faults_on_topology_calls(Some(safe)));
        }
        assert!(!faults_on_topology_calls(None));
    }

    #[test]
    fn the_module_version_comes_from_cargo_toml() {
        assert_eq!(version_number("0.1.0"), 100);
        assert_eq!(version_number("1.2.3"), 10203);
        assert_eq!(version_number("2.10.0-rc.1"), 21000);
    }
}

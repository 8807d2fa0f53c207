//! The command table: each command's handler, flags, key spec, arity and documentation
//! (COMMAND INFO, COMMAND DOCS, ACL categories), registered with whatever the server offers.

use std::ffi::CStr;
use std::os::raw::c_int;
use std::ptr;

use redis_module::commands::{get_redis_key_spec, BeginSearch, FindKeys, KeySpec, KeySpecFlags};
use redis_module::raw;

use crate::commands;

type Handler =
    extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// Every command writes only its first argument, is O(1) and must not run out of memory.
const FLAGS: &CStr = c"write deny-oom fast";
/// The ACL category the commands join, on servers that let modules add one (Redis 7.4+,
/// Valkey).
const ACL_CATEGORY: &CStr = c"ratelimit";
/// The commands' ACL categories where modules can set them (Redis 7.2+, Valkey); Redis 7.0
/// puts module commands in @all only.
const CATEGORIES: &CStr = c"write fast";
const CATEGORIES_WITH_OWN: &CStr = c"write fast ratelimit";
const SINCE: &CStr = c"0.1.0";

struct Command {
    name: &'static CStr,
    handler: Handler,
    /// Redis's convention: negative means "at least".
    arity: c_int,
    summary: &'static CStr,
    complexity: &'static CStr,
    args: &'static [Arg],
}

enum ArgType {
    Key,
    Integer,
    Token(&'static CStr),
}

struct Arg {
    name: &'static CStr,
    kind: ArgType,
    summary: &'static CStr,
    optional: bool,
}

const fn required(name: &'static CStr, kind: ArgType, summary: &'static CStr) -> Arg {
    Arg {
        name,
        kind,
        summary,
        optional: false,
    }
}

const KEY: Arg = required(c"key", ArgType::Key, c"The limiter's key.");
const PERIOD: Arg = required(
    c"period",
    ArgType::Integer,
    c"The period, in seconds (milliseconds with MS).",
);
const QUANTITY: Arg = Arg {
    name: c"quantity",
    kind: ArgType::Integer,
    summary: c"Units this call takes (default 1); 0 only looks.",
    optional: true,
};
const MS: Arg = Arg {
    name: c"ms",
    kind: ArgType::Token(c"MS"),
    summary: c"The period and the waits in the reply are in milliseconds.",
    optional: true,
};
const LIMIT: Arg = required(c"limit", ArgType::Integer, c"Units allowed per period.");

const COMMANDS: [Command; 3] = [
    Command {
        name: c"cl.throttle",
        handler: commands::throttle,
        arity: -5,
        summary: c"Rate limits a key with GCRA: count per period with bursts of max_burst + 1. Replies [limited, limit, remaining, retry_after, reset_after].",
        complexity: c"O(1)",
        args: &[
            KEY,
            required(c"max_burst", ArgType::Integer, c"Units beyond the first that may arrive at once."),
            required(c"count", ArgType::Integer, c"Units per period, sustained."),
            PERIOD,
            QUANTITY,
            MS,
        ],
    },
    Command {
        name: c"cl.fixed",
        handler: commands::fixed,
        arity: -4,
        summary: c"Rate limits a key with a fixed window: at most limit units per window of period. Replies [limited, limit, remaining, retry_after, reset_after].",
        complexity: c"O(1)",
        args: &[KEY, LIMIT, PERIOD, QUANTITY, MS],
    },
    Command {
        name: c"cl.window",
        handler: commands::window,
        arity: -4,
        summary: c"Rate limits a key with an exact sliding window: at most limit units in any period. Replies [limited, limit, remaining, retry_after, reset_after].",
        complexity: c"O(1) amortized, plus O(N) for the N oldest log entries a call expires or, when denied, waits for.",
        args: &[KEY, LIMIT, PERIOD, QUANTITY, MS],
    },
];

/// Registers every command. Called once from OnLoad.
pub fn register_all(ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
    add_acl_category(ctx);
    for command in &COMMANDS {
        register(ctx, command).map_err(|reason| {
            format!(
                "cannot register {}: {reason}",
                command.name.to_string_lossy()
            )
        })?;
    }
    Ok(())
}

/// Adds the module's ACL category, if the server lets modules add one and does not have it
/// yet.
fn add_acl_category(ctx: *mut raw::RedisModuleCtx) {
    // SAFETY: called from OnLoad, the only time AddACLCategory may be called.
    unsafe {
        if let Some(add) = raw::RedisModule_AddACLCategory {
            add(ctx, ACL_CATEGORY.as_ptr());
        }
    }
}

/// Creates the command with its legacy key positions (the first argument, all that Redis
/// 7.0's cluster routing needs), then adds what the server supports: key spec, arity and
/// documentation (SetCommandInfo, 7.0+), ACL categories (7.2+).
fn register(ctx: *mut raw::RedisModuleCtx, command: &Command) -> Result<(), &'static str> {
    // SAFETY: called from OnLoad with the module's context. Every string is a static C
    // string, and the key-spec and argument arrays live until SetCommandInfo, which copies
    // them, returns.
    unsafe {
        let create = raw::RedisModule_CreateCommand.ok_or("no CreateCommand")?;
        let status = create(
            ctx,
            command.name.as_ptr(),
            Some(command.handler),
            FLAGS.as_ptr(),
            1,
            1,
            1,
        );
        if status != raw::REDISMODULE_OK as c_int {
            // The name, flags and key positions are fixed and valid: what can fail is the name.
            return Err("the server already has a command of that name (is another module providing it loaded?)");
        }
        let Some(get_command) = raw::RedisModule_GetCommand else {
            return Ok(());
        };
        let handle = get_command(ctx, command.name.as_ptr());
        if handle.is_null() {
            return Err("GetCommand found nothing");
        }
        if let Some(set_categories) = raw::RedisModule_SetCommandACLCategories {
            // The module's own category exists when this load added it, and also when an
            // earlier load did: servers keep module categories through MODULE UNLOAD, and
            // AddACLCategory then refuses to add it again. Where it exists, join it.
            // Servers without AddACLCategory log a warning for an unknown category: don't ask.
            let add_category = raw::RedisModule_AddACLCategory;
            let may_have_own = add_category.is_some();
            let joined = (may_have_own
                && set_categories(handle, CATEGORIES_WITH_OWN.as_ptr())
                    == raw::REDISMODULE_OK as c_int)
                || set_categories(handle, CATEGORIES.as_ptr()) == raw::REDISMODULE_OK as c_int;
            if !joined {
                return Err("SetCommandACLCategories failed");
            }
        }
        let Some(set_info) = raw::RedisModule_SetCommandInfo else {
            return Ok(());
        };
        let key_specs = get_redis_key_spec(vec![KeySpec::new(
            None,
            KeySpecFlags::READ_WRITE | KeySpecFlags::ACCESS | KeySpecFlags::UPDATE,
            BeginSearch::new_index(1),
            FindKeys::new_range(0, 1, 0),
        )]);
        let mut args: Vec<raw::RedisModuleCommandArg> = command.args.iter().map(raw_arg).collect();
        args.push(std::mem::zeroed());
        let version = raw::RedisModuleCommandInfoVersion {
            version: 1,
            sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
            sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
            sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
        };
        let info = raw::RedisModuleCommandInfo {
            version: &version,
            summary: command.summary.as_ptr(),
            complexity: command.complexity.as_ptr(),
            since: SINCE.as_ptr(),
            history: ptr::null_mut(),
            tips: ptr::null(),
            arity: command.arity,
            key_specs: key_specs.as_ptr().cast_mut(),
            args: args.as_mut_ptr(),
        };
        if set_info(handle, &info) != raw::REDISMODULE_OK as c_int {
            return Err("SetCommandInfo failed");
        }
    }
    Ok(())
}

fn raw_arg(arg: &Arg) -> raw::RedisModuleCommandArg {
    let (type_, token, key_spec_index) = match arg.kind {
        ArgType::Key => (
            raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY,
            ptr::null(),
            0,
        ),
        ArgType::Integer => (
            raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
            ptr::null(),
            -1,
        ),
        ArgType::Token(token) => (
            raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN,
            token.as_ptr(),
            -1,
        ),
    };
    raw::RedisModuleCommandArg {
        name: arg.name.as_ptr(),
        type_,
        key_spec_index,
        token,
        summary: arg.summary.as_ptr(),
        since: ptr::null(),
        flags: if arg.optional {
            raw::REDISMODULE_CMD_ARG_OPTIONAL as c_int
        } else {
            0
        },
        deprecated_since: ptr::null(),
        subargs: ptr::null_mut(),
        display_text: ptr::null(),
    }
}

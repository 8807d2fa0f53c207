//! The command table: each command's handler, flags, key spec, arity and documentation
//! (COMMAND INFO, COMMAND DOCS, ACL categories), registered with whatever the server offers.

use std::ffi::CStr;
use std::os::raw::c_int;
use std::ptr;

use redis_module::commands::{get_redis_key_spec, BeginSearch, FindKeys, KeySpec, KeySpecFlags};
use redis_module::raw;

use crate::command::Command as Name;
use crate::entry;
use crate::grammar::params::{self, Kind, Param};
use crate::grammar::{Opt, Value, OPTIONS};
use crate::register;

type Handler =
    extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// What a command does with its key, which sets its flags, its ACL categories and its key
/// spec's flags.
#[derive(Clone, Copy)]
enum Access {
    /// The limiters: they write, must not run out of memory, and are fast (O(1), CL.ALL too,
    /// bounded at 16 keys, and CL.LEASE O(log N)). With BLOCK, a call may wait (as XREAD's
    /// BLOCK, which also leaves it fast to run).
    Decides,
    /// CL.RELEASE only frees, and never waits: as SREM, it may run when memory is full.
    Frees,
    /// CL.HOLDERS only reads, O(N) in the leases it lists, as SMEMBERS.
    Reads,
    /// CL.TOP lists keys, which can be personal data, across the node: an operator's
    /// command, as SLOWLOG is, outside the category apps are granted.
    Admin,
    /// CL.BAN and CL.UNBAN lock a key out and let it in again: writes, outside the category
    /// apps are granted to limit themselves, so that `+@ratelimit` bans no one.
    Bans,
}

impl Access {
    fn flags(self, keys: &Keys) -> &'static CStr {
        // CL.ALL also answers where its keys are, which cluster routing asks the command
        // itself (a key spec alone is not consulted there).
        match (self, keys) {
            (Access::Decides, Keys::Counted) => c"write deny-oom fast blocking getkeys-api",
            (Access::Decides, _) => c"write deny-oom fast blocking",
            (Access::Frees, _) => c"write fast",
            (Access::Bans, _) => c"write deny-oom fast",
            (Access::Reads, _) => c"readonly",
            // As SLOWLOG's; not readonly, which would put it in @read.
            (Access::Admin, _) => c"admin allow-loading allow-stale",
        }
    }

    /// The ACL categories where modules can set them (Redis 7.2+, Valkey), without and with
    /// the module's own; Redis 7.0 puts module commands in @all only.
    fn categories(self) -> (&'static CStr, &'static CStr) {
        match self {
            Access::Decides => (c"write fast blocking", c"write fast blocking ratelimit"),
            Access::Frees => (c"write fast", c"write fast ratelimit"),
            Access::Reads => (c"read", c"read ratelimit"),
            Access::Admin => (c"admin dangerous", c"admin dangerous"),
            Access::Bans => (c"write fast", c"write fast"),
        }
    }

    fn key_flags(self) -> KeySpecFlags {
        match self {
            Access::Decides | Access::Bans => {
                KeySpecFlags::READ_WRITE | KeySpecFlags::ACCESS | KeySpecFlags::UPDATE
            }
            // As SREM's: it removes from what the key holds.
            Access::Frees => KeySpecFlags::READ_WRITE | KeySpecFlags::DELETE,
            Access::Reads | Access::Admin => KeySpecFlags::READ_ONLY | KeySpecFlags::ACCESS,
        }
    }
}

/// The ACL category the commands join, on servers that let modules add one (Redis 7.4+,
/// Valkey).
const ACL_CATEGORY: &CStr = c"ratelimit";
const SINCE: &CStr = c"0.1.0";

struct Command {
    command: Name,
    name: &'static CStr,
    handler: Handler,
    access: Access,
    keys: Keys,
    /// Redis's convention: negative means "at least".
    arity: c_int,
    summary: &'static CStr,
    complexity: &'static CStr,
}

/// Where a command's keys are.
enum Keys {
    /// The first argument.
    First,
    /// `numkeys key [key ...]` from the first argument, as EVAL and ZUNION have them.
    Counted,
    /// None: the command speaks of the node (CL.TOP).
    None,
}

#[derive(Clone, Copy)]
enum ArgType {
    Key,
    Integer,
    String,
    /// A keyword alone.
    PureToken,
    /// One of the subarguments.
    OneOf(&'static [Arg]),
    /// The subarguments in order.
    Block(&'static [Arg]),
}

#[derive(Clone, Copy)]
struct Arg {
    name: &'static CStr,
    kind: ArgType,
    /// The keyword before the argument's value, or the keyword itself.
    token: Option<&'static CStr>,
    summary: &'static CStr,
    optional: bool,
    multiple: bool,
}

const fn required(name: &'static CStr, kind: ArgType, summary: &'static CStr) -> Arg {
    Arg {
        name,
        kind,
        token: None,
        summary,
        optional: false,
        multiple: false,
    }
}

const fn block(name: &'static CStr, token: &'static CStr, params: &'static [Arg]) -> Arg {
    Arg {
        token: Some(token),
        ..required(name, ArgType::Block(params), c"")
    }
}

/// A positional parameter as COMMAND DOCS gives it to this command: CL.ALL's keys and
/// limiters are one or more each.
fn param(param: Param, command: Name) -> Arg {
    // The limiters are their numbers' blocks, which are made of parameters.
    scalar(param, command, ArgType::OneOf(&LIMITERS))
}

/// A parameter, `limiter` as `limiters`.
const fn scalar(param: Param, command: Name, limiters: ArgType) -> Arg {
    let row = param.row();
    let kind = match row.kind {
        Kind::Key => ArgType::Key,
        Kind::Number(_) if row.or_calendar => ArgType::OneOf(&CALENDAR_PERIOD),
        Kind::Number(_) => ArgType::Integer,
        Kind::Holder => ArgType::String,
        Kind::Limiter => limiters,
    };
    Arg {
        multiple: matches!(command, Name::All) && !matches!(param, Param::Numkeys),
        ..required(row.name, kind, param_summary(param, command))
    }
}

/// The numbers among a command's parameters: what follows its keyword as a limiter of
/// CL.ALL.
const fn numbers<const N: usize>(command: Name) -> [Arg; N] {
    let params = params::number_params::<N>(command);
    let mut out = [required(c"", ArgType::Integer, c""); N];
    let mut i = 0;
    while i < N {
        out[i] = scalar(params[i], command, ArgType::Integer);
        i += 1;
    }
    out
}

/// A period that a calendar's unit may stand in for: a span, or the unit's word.
const CALENDAR_PERIOD: [Arg; 5] = [
    required(
        c"span",
        ArgType::Integer,
        c"The period, in seconds (milliseconds with MS).",
    ),
    calendar_unit(
        params::CalendarUnit::Day,
        c"day",
        c"The calendar's days, from midnight.",
    ),
    calendar_unit(
        params::CalendarUnit::Week,
        c"week",
        c"ISO weeks, from Monday 00:00.",
    ),
    calendar_unit(
        params::CalendarUnit::Month,
        c"month",
        c"The calendar's months, from the 1st at 00:00.",
    ),
    calendar_unit(
        params::CalendarUnit::Year,
        c"year",
        c"The calendar's years, from 1 January at 00:00.",
    ),
];

const fn calendar_unit(
    unit: params::CalendarUnit,
    name: &'static CStr,
    summary: &'static CStr,
) -> Arg {
    Arg {
        token: Some(unit.keyword()),
        ..required(name, ArgType::PureToken, summary)
    }
}

const THROTTLE_NUMBERS: [Arg; 3] = numbers(Name::Throttle);
const FIXED_NUMBERS: [Arg; 4] = {
    let [limit, period] = numbers(Name::Fixed);
    [
        limit,
        period,
        option(Opt::Align, Name::All),
        option(Opt::Offset, Name::All),
    ]
};
const WINDOW_NUMBERS: [Arg; 3] = {
    let [limit, period] = numbers(Name::Window);
    [limit, period, option(Opt::Buckets, Name::All)]
};
const LEASE_NUMBERS: [Arg; 2] = numbers(Name::Lease);

/// CL.ALL's limiters, in the order of `LimiterKind::ALL`: each its keyword, then its
/// command's numbers.
const LIMITERS: [Arg; 4] = [
    block(c"throttle", c"THROTTLE", &THROTTLE_NUMBERS),
    block(c"fixed", c"FIXED", &FIXED_NUMBERS),
    block(c"window", c"WINDOW", &WINDOW_NUMBERS),
    block(c"lease", c"LEASE", &LEASE_NUMBERS),
];

/// What a parameter is, for this command.
const fn param_summary(param: Param, command: Name) -> &'static CStr {
    match (param, command) {
        (Param::Key, _) => c"The limiter's key.",
        (Param::Numkeys, _) => c"How many keys follow (1 to 16).",
        (Param::Limiter, _) => c"One per key, in key order: GCRA, fixed window, sliding window or concurrency limit.",
        (Param::MaxBurst, _) => c"Units beyond the first that may arrive at once.",
        (Param::Count, _) => c"Units per period, sustained.",
        (Param::GcraPeriod | Param::Period, _) => c"The period, in seconds (milliseconds with MS).",
        (Param::FixedPeriod, _) => c"The period, in seconds (milliseconds with MS), or a calendar's unit: DAY, WEEK, MONTH or YEAR, in UTC or the local time of OFFSET.",
        (Param::Limit, Name::Lease) => c"How many holders may hold a lease at once.",
        (Param::Limit, _) => c"Units allowed per period.",
        (Param::Permits, _) => c"Permits per period, at the stable rate.",
        (Param::LeaseTime, _) => c"How long a lease lasts, in seconds (milliseconds with MS), renewed by each call of its holder.",
        (Param::Holder, _) => c"Who holds the lease: 1 to 255 bytes, chosen by the client.",
        (Param::BanSpan, _) => c"How long the ban lasts from now, in seconds (milliseconds with MS).",
    }
}

const COMMANDS: [Command; 11] = [
    Command {
        command: Name::Throttle,
        name: c"cl.throttle",
        handler: entry::throttle,
        access: Access::Decides,
        keys: Keys::First,
        arity: -5,
        summary: c"Rate limits a key with GCRA: count per period with bursts of max_burst + 1. Replies [limited, limit, remaining, retry_after, reset_after].",
        complexity: c"O(1)",
    },
    Command {
        command: Name::Fixed,
        name: c"cl.fixed",
        handler: entry::fixed,
        access: Access::Decides,
        keys: Keys::First,
        arity: -4,
        summary: c"Rate limits a key with a fixed window: at most limit units per window of period. Replies [limited, limit, remaining, retry_after, reset_after].",
        complexity: c"O(1)",
    },
    Command {
        command: Name::Window,
        name: c"cl.window",
        handler: entry::window,
        access: Access::Decides,
        keys: Keys::First,
        arity: -4,
        summary: c"Rate limits a key with an exact sliding window: at most limit units in any period. Replies [limited, limit, remaining, retry_after, reset_after].",
        complexity: c"O(1) amortized, plus O(N) for the N oldest log entries a call expires or, when denied, waits for; with BUCKETS n, O(1) plus the cells that left since the key's last write, and O(n) at most.",
    },
    Command {
        command: Name::All,
        name: c"cl.all",
        handler: entry::all,
        access: Access::Decides,
        keys: Keys::Counted,
        arity: -6,
        summary: c"Rate limits several keys at once, all or nothing: admitted when every key's limiter admits, and then each takes its units. Replies the binding limiter's [limited, limit, remaining, retry_after, reset_after], or every limiter's with DETAIL.",
        complexity: c"O(N) for N keys (at most 16), each as its limiter's own command.",
    },
    Command {
        command: Name::Lease,
        name: c"cl.lease",
        handler: entry::lease,
        access: Access::Decides,
        keys: Keys::First,
        arity: -5,
        summary: c"Limits how many holders hold a lease on a key at once; a holder's call renews its own. Replies [limited, limit, remaining, retry_after, reset_after].",
        complexity: c"O(log N) for N leases on the key, plus O(M) for the M leases that ended and are dropped.",
    },
    Command {
        command: Name::Release,
        name: c"cl.release",
        handler: entry::release,
        access: Access::Frees,
        keys: Keys::First,
        arity: -3,
        summary: c"Frees a holder's lease on a key. Replies 1 when it held a live lease, 0 otherwise.",
        complexity: c"O(log N) for N leases on the key, plus O(M) for the M leases that ended and are dropped.",
    },
    Command {
        command: Name::Holders,
        name: c"cl.holders",
        handler: entry::holders,
        access: Access::Reads,
        keys: Keys::First,
        arity: -2,
        summary: c"Lists who holds a live lease on a key and for how long yet, the soonest to end first: holder, time left, holder, time left, ...",
        complexity: c"O(N) for the N leases on the key.",
    },
    Command {
        command: Name::Smooth,
        name: c"cl.smooth",
        handler: entry::smooth,
        access: Access::Decides,
        keys: Keys::First,
        arity: -4,
        summary: c"Rate limits a key as Guava's RateLimiter does: permits per period, a free call goes at once and the next pays for it, bursty or warming up. Replies [limited, limit, remaining, retry_after, reset_after].",
        complexity: c"O(1)",
    },
    Command {
        command: Name::Top,
        name: c"cl.top",
        handler: entry::top,
        access: Access::Admin,
        keys: Keys::None,
        arity: -1,
        summary: c"Lists the keys this node denied most over this minute and the one before: key, denied calls, the most that count may exceed the truth, key, ... the most denied first.",
        complexity: c"O(k log k) for the k entries of each minute's list (redis-cell.top-keys).",
    },
    Command {
        command: Name::Ban,
        name: c"cl.ban",
        handler: entry::ban,
        access: Access::Bans,
        keys: Keys::First,
        arity: -3,
        summary: c"Bans a rate limiter's key by hand from now for span: every call on it is denied until then, its limiter's state kept. Replies the ban's end, as EXPIRETIME (PEXPIRETIME with MS).",
        complexity: c"O(N) in the bytes of the state it keeps beside the ban.",
    },
    Command {
        command: Name::Unban,
        name: c"cl.unban",
        handler: entry::unban,
        access: Access::Bans,
        keys: Keys::First,
        arity: -2,
        summary: c"Lifts a key's ban, its limiter's state kept as it was, and wakes the first call waiting on it. Replies 1 when a ban held, else 0.",
        complexity: c"O(N) in the bytes of the state it keeps.",
    },
];

impl Command {
    /// Every argument, as COMMAND DOCS gives them: the parameters, then each option of the
    /// grammar the command takes, in the grammar's order. `AT`, which only the replication
    /// stream sends, and options documented inside another (COLD in WARMUP) are left out.
    fn args(&self) -> Vec<Arg> {
        let options = OPTIONS.iter().filter(|row| {
            (row.takers.has(self.command) || row.positional.has(self.command))
                && row.opt != Opt::At
                && row.opt != Opt::Cold
        });
        params::params(self.command)
            .iter()
            .map(|&each| param(each, self.command))
            .chain(options.map(|row| option(row.opt, self.command)))
            .collect()
    }
}

/// An option as COMMAND DOCS gives it to this command: WARMUP with the value it nests.
const fn option(opt: Opt, command: Name) -> Arg {
    match opt {
        Opt::Warmup => Arg {
            name: c"warmup",
            kind: ArgType::Block(&WARMUP),
            ..value_option(opt, command)
        },
        _ => value_option(opt, command),
    }
}

/// An option and its value.
const fn value_option(opt: Opt, command: Name) -> Arg {
    let row = opt.row();
    let kind = match row.value {
        Value::Flag => ArgType::PureToken,
        Value::Holder => ArgType::String,
        _ => ArgType::Integer,
    };
    // The quantity a limiter takes first has no keyword.
    let token = if row.positional.has(command) {
        None
    } else {
        Some(row.keyword)
    };
    Arg {
        name: row.name,
        kind,
        token,
        summary: summary(opt, command),
        optional: true,
        multiple: false,
    }
}

/// WARMUP's value: its span, and the COLD factor that shapes it.
const WARMUP: [Arg; 2] = [
    required(
        c"span",
        ArgType::Integer,
        c"How long a cold limiter takes to reach the stable rate.",
    ),
    value_option(Opt::Cold, Name::Smooth),
];

/// What an option does, for this command.
const fn summary(opt: Opt, command: Name) -> &'static CStr {
    match (opt, command) {
        (Opt::Quantity, Name::Smooth) => c"Permits this call takes (default 1, at most 2147483647); 0 only looks.",
        (Opt::Quantity, _) => c"Units this call takes (default 1); 0 only looks.",
        (Opt::Buckets, _) => c"Count in n cells of period / n (2 to 1024, cutting the period into whole milliseconds) instead of exactly: n counters per key whatever the traffic.",
        (Opt::Ms, Name::Lease) => c"The lease time and the waits in the reply are in milliseconds.",
        (Opt::Ms, Name::Holders) => c"The times left are in milliseconds.",
        (Opt::Ms, Name::Smooth) => c"The period, the spans and the waits in the reply are in milliseconds.",
        (Opt::Ms, _) => c"The period and the waits in the reply are in milliseconds.",
        (Opt::Burst, _) => c"Idle time stored as permits that cost nothing, Guava's maxBurstSeconds (default 1 second); not with WARMUP.",
        (Opt::Warmup, _) => c"Warm up as Guava's SmoothWarmingUp: idleness makes the first permits dearer.",
        (Opt::Cold, _) => c"How many times slower than the stable rate a cold limiter starts (default 3).",
        (Opt::Refund, Name::All) => c"Give quantity units back on every limiter instead of taking them, undoing an admitted call (LEASE limiters only look: CL.RELEASE gives a lease back); never with BLOCK.",
        (Opt::Refund, _) => c"Give quantity units back instead of taking them, for a request admitted that did not run; never with BLOCK.",
        (Opt::DryRun, Name::Smooth) => c"Answer what the call would, and reserve nothing; never with BLOCK.",
        (Opt::DryRun, _) => c"Answer what the call would, behind the same waiters, and change nothing; never with BLOCK.",
        (Opt::CountDenied, _) => c"Count a denied call's units too, as INCR then compare does; never with BLOCK.",
        (Opt::Offset, _) => c"With ALIGN or a calendar period, lay the windows in the local time this many minutes ahead of UTC (-1439 to 1439; 120 is UTC+02:00).",
        (Opt::Align, _) => c"Lay the windows on the clock: the multiples of period since the Unix epoch, in UTC, so that every key's minute starts on the minute; not with a calendar period, which keeps to the calendar already.",
        (Opt::Ban, _) => c"When the limiter itself denies this call, with units that could fit later, lock the key out for span (seconds, or ms with MS): every call on it is then denied until the ban ends, and the limiter's state is kept; not with REFUND or BLOCK.",
        (Opt::Detail, _) => c"Reply with every limiter's answer, in key order.",
        (Opt::AtMost, Name::All) => c"Take the most units, up to quantity, that every limiter admits now, and reply with that count sixth (granted); not with REFUND.",
        (Opt::AtMost, _) => c"Take the most units, up to quantity, that fit now, and reply with that count sixth (granted); not with REFUND or COUNTDENIED.",
        (Opt::Count, _) => c"How many keys to list (default 10; past the list's size, redis-cell.top-keys, all it holds).",
        (Opt::Holder, _) => c"Who holds the LEASE limiters' leases (required with one): 1 to 255 bytes.",
        (Opt::At, _) => c"The primary's instant, from the replication stream or the AOF only.",
        (Opt::Block, Name::Lease) => c"When denied, wait up to this many milliseconds (0: as long as it takes) for a free slot, behind the calls that waited first.",
        (Opt::Block, Name::Smooth) => c"When admitted to wait up to this many milliseconds (0: as long as it takes), reserve the permits now and hold the reply until their instant; denied at once if that is later.",
        (Opt::Block, _) => c"When denied, wait up to this many milliseconds (0: as long as it takes) for the units to fit, behind the calls that waited first.",
    }
}

/// Registers every command. Called once from OnLoad.
pub fn register_all(ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
    add_acl_category(ctx);
    for command in &COMMANDS {
        register_command(ctx, command).map_err(|reason| {
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
    // Refused when an earlier load added it: the server keeps it (see register_command).
    register::add_acl_category(ctx, ACL_CATEGORY);
}

/// Creates the command with its legacy key positions (the first argument, all that Redis
/// 7.0's cluster routing needs), then adds what the server supports: key spec, arity and
/// documentation (SetCommandInfo, 7.0+), ACL categories (7.2+).
fn register_command(ctx: *mut raw::RedisModuleCtx, command: &Command) -> Result<(), &'static str> {
    // Counted keys have no fixed positions: the command reports them, and the key spec below
    // describes them.
    let first_key = match command.keys {
        Keys::First => 1,
        Keys::Counted | Keys::None => 0,
    };
    let flags = command.access.flags(&command.keys);
    register::create_command(ctx, command.name, Some(command.handler), flags, first_key)?;
    if !register::gets_commands() {
        return Ok(());
    }
    let handle = register::command(ctx, command.name).ok_or("GetCommand found nothing")?;
    if register::sets_acl_categories() {
        // The module's own category exists when this load added it, and also when an earlier
        // load did: servers keep module categories through MODULE UNLOAD, and AddACLCategory
        // then refuses to add it again. Where it exists, join it. Servers without
        // AddACLCategory log a warning for an unknown category: don't ask.
        let (without, with_own) = command.access.categories();
        let joined = (register::adds_acl_categories()
            && register::set_acl_categories(handle, with_own))
            || register::set_acl_categories(handle, without);
        if !joined {
            return Err("SetCommandACLCategories failed");
        }
    }
    if !register::sets_command_info() {
        return Ok(());
    }
    let find_keys = match command.keys {
        Keys::First => Some(FindKeys::new_range(0, 1, 0)),
        Keys::Counted => Some(FindKeys::new_keys_num(0, 1, 1)),
        Keys::None => None,
    };
    let key_specs = get_redis_key_spec(
        find_keys
            .map(|find_keys| {
                KeySpec::new(
                    None,
                    command.access.key_flags(),
                    BeginSearch::new_index(1),
                    find_keys,
                )
            })
            .into_iter()
            .collect(),
    );
    // Subarguments first: the arrays of each level must outlive SetCommandInfo.
    let mut arrays = Vec::new();
    let command_args = command.args();
    let mut args = raw_args(&command_args, &mut arrays);
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
    // SAFETY: every string is a static C string, and the key-spec and argument arrays live
    // until SetCommandInfo, which copies them, returns.
    unsafe { register::set_command_info(handle, &info) }.map_err(|_| "SetCommandInfo failed")
}

/// The arguments as the module API takes them, ending with a zeroed one; the arrays of
/// their subarguments are kept in `arrays`, which must outlive the result's use.
fn raw_args(
    args: &[Arg],
    arrays: &mut Vec<Vec<raw::RedisModuleCommandArg>>,
) -> Vec<raw::RedisModuleCommandArg> {
    let mut raw_args: Vec<raw::RedisModuleCommandArg> = args
        .iter()
        .map(|arg| {
            let subargs = match arg.kind {
                ArgType::OneOf(subargs) | ArgType::Block(subargs) => {
                    let mut array = raw_args(subargs, arrays);
                    let pointer = array.as_mut_ptr();
                    // Moving the Vec into `arrays` leaves its heap buffer, and so `pointer`, in
                    // place.
                    arrays.push(array);
                    pointer
                }
                _ => ptr::null_mut(),
            };
            raw_arg(arg, subargs)
        })
        .collect();
    // SAFETY: an all-zero RedisModuleCommandArg (null pointers, zero numbers) is the
    // terminator the API expects.
    raw_args.push(unsafe { std::mem::zeroed() });
    raw_args
}

fn raw_arg(arg: &Arg, subargs: *mut raw::RedisModuleCommandArg) -> raw::RedisModuleCommandArg {
    let (type_, key_spec_index) = match arg.kind {
        ArgType::Key => (raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY, 0),
        ArgType::Integer => (
            raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
            -1,
        ),
        ArgType::String => (
            raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
            -1,
        ),
        ArgType::PureToken => (
            raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN,
            -1,
        ),
        ArgType::OneOf(_) => (
            raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF,
            -1,
        ),
        ArgType::Block(_) => (
            raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK,
            -1,
        ),
    };
    let mut flags = 0;
    if arg.optional {
        flags |= raw::REDISMODULE_CMD_ARG_OPTIONAL;
    }
    if arg.multiple {
        flags |= raw::REDISMODULE_CMD_ARG_MULTIPLE;
    }
    raw::RedisModuleCommandArg {
        name: arg.name.as_ptr(),
        type_,
        key_spec_index,
        token: arg.token.map_or(ptr::null(), CStr::as_ptr),
        summary: if arg.summary.is_empty() {
            ptr::null()
        } else {
            arg.summary.as_ptr()
        },
        since: ptr::null(),
        flags: flags as c_int,
        deprecated_since: ptr::null(),
        subargs,
        display_text: ptr::null(),
    }
}

#[cfg(test)]
mod tests {
    //! The command table is the one home of every command's grammar: each grammar the docs,
    //! the README and the doc comments quote is the table's, or a part of it.

    use super::*;
    use crate::quotes::{self, Quote};

    fn text(name: &CStr) -> String {
        name.to_string_lossy().into_owned()
    }

    /// An argument as the docs write it, Redis's way: `[optional]`, `many [many ...]`,
    /// `TOKEN value`; a choice or a block by its name (`limiter`), spelled out by
    /// `choices`.
    fn argument(arg: &Arg) -> String {
        let value = match (&arg.kind, arg.token) {
            (ArgType::PureToken, Some(token)) => text(token),
            // A keyword and what follows it, as ZRANGE's `LIMIT offset count`.
            (ArgType::Block(params), Some(token)) => std::iter::once(text(token))
                .chain(params.iter().map(argument))
                .collect::<Vec<_>>()
                .join(" "),
            (ArgType::OneOf(_) | ArgType::Block(_), _) | (_, None) => text(arg.name),
            (_, Some(token)) => format!("{} {}", text(token), text(arg.name)),
        };
        let value = if arg.multiple {
            format!("{value} [{value} ...]")
        } else {
            value
        };
        if arg.optional {
            format!("[{value}]")
        } else {
            value
        }
    }

    /// A command's whole grammar, its name in capitals.
    fn grammar(command: &Command) -> String {
        std::iter::once(text(command.name).to_uppercase())
            .chain(command.args().iter().map(argument))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// A choice's alternatives, each a block in full: CL.ALL's `limiter`.
    fn choices(arg: &Arg) -> Option<String> {
        let ArgType::OneOf(alternatives) = arg.kind else {
            return None;
        };
        let each = alternatives
            .iter()
            .map(|alternative| match alternative.kind {
                ArgType::Block(params) => {
                    std::iter::once(alternative.token.map_or(String::new(), text))
                        .chain(params.iter().map(argument))
                        .collect::<Vec<_>>()
                        .join(" ")
                }
                _ => argument(alternative),
            });
        Some(each.collect::<Vec<_>>().join(" | "))
    }

    /// A grammar cut into its elements: a word, or a bracketed group (optional).
    fn elements(grammar: &str) -> Vec<(String, bool)> {
        let mut elements = Vec::new();
        let mut depth = 0;
        let mut current = String::new();
        for word in grammar.split_whitespace() {
            if depth == 0 && !word.starts_with('[') {
                elements.push((word.to_owned(), false));
                continue;
            }
            depth += word.matches('[').count();
            depth -= word.matches(']').count();
            if !current.is_empty() {
                current.push(' ');
            }
            current.push_str(word);
            if depth == 0 {
                let inner = current.get(1..current.len() - 1).unwrap_or_default();
                elements.push((inner.to_owned(), true));
                current.clear();
            }
        }
        elements
    }

    /// The commands with a replication form, which ends in `AT <unix-ms>` (not in the table:
    /// only the replication stream and the AOF may send it).
    const REPLICATED_WITH_AT: [&str; 4] = ["CL.FIXED", "CL.WINDOW", "CL.LEASE", "CL.RELEASE"];

    /// Whether `excerpt` is a part of `full`: its elements in the table's order, each
    /// optional one left out, kept, or made required, and nothing the table lacks but, for a
    /// command with one, the replication form's final `AT <unix-ms>`.
    fn is_part_of(excerpt: &str, full: &str) -> bool {
        let shown = elements(excerpt);
        let mut at = 0;
        for (element, optional) in elements(full) {
            // Made required, an optional group is its words: `BLOCK timeout`.
            let words = element.split(' ').count();
            let required = shown.get(at..at + words).filter(|run| {
                run.iter().all(|(_, bracketed)| !bracketed)
                    && run
                        .iter()
                        .map(|(word, _)| word.as_str())
                        .collect::<Vec<_>>()
                        .join(" ")
                        == element
            });
            match shown.get(at) {
                Some((word, true)) if *word == element && optional => at += 1,
                Some((word, false)) if *word == element => at += 1,
                _ if required.is_some() => at += words,
                _ if optional => {}
                _ => return false,
            }
        }
        let rest: Vec<_> = shown
            .iter()
            .skip(at)
            .map(|(word, _)| word.as_str())
            .collect();
        let replicated = full
            .split(' ')
            .next()
            .is_some_and(|name| REPLICATED_WITH_AT.contains(&name));
        rest.is_empty() || (replicated && rest == ["AT", "<unix-ms>"])
    }

    /// A quote that reads as a grammar: a command's name, its first argument's name, and
    /// then only argument names, keywords, brackets and placeholders.
    fn command_quoted<'a>(quote: &Quote) -> Option<&'a Command> {
        let mut words = quote.text.split_whitespace();
        let name = words.next()?;
        let command = COMMANDS.iter().find(|command| {
            text(command.name).eq_ignore_ascii_case(name) && name.starts_with("CL.")
        })?;
        let first = command.args().first().map(|arg| text(arg.name));
        let grammatical = |word: &str| {
            let word = word.trim_matches(|c| c == '[' || c == ']');
            word == "..."
                || word.starts_with('<')
                || (!word.is_empty()
                    && word
                        .chars()
                        .all(|c| c.is_ascii_alphabetic() || c == '_' || c == '-'))
        };
        let second = words.clone().next();
        (second.map(str::to_owned) == first && words.all(grammatical) && !quote.text.contains('…'))
            .then_some(command)
    }

    #[test]
    fn every_grammar_quoted_is_the_table_s_or_a_part_of_it() {
        let mut checked = 0;
        let mut wrong = Vec::new();
        for quote in quotes::all() {
            let Some(command) = command_quoted(&quote) else {
                continue;
            };
            checked += 1;
            let full = grammar(command);
            if !is_part_of(&quote.text, &full) {
                wrong.push(format!(
                    "{}: `{}`\n  the table: `{full}`",
                    quote.place, quote.text
                ));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        assert!(checked >= COMMANDS.len(), "only {checked} grammars found");
    }

    #[test]
    fn every_command_has_its_whole_grammar_in_the_docs_and_a_row_in_the_readme() {
        let quotes = quotes::all();
        let readme =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
        for command in &COMMANDS {
            let full = grammar(command);
            assert!(
                quotes
                    .iter()
                    .any(|quote| quote.place.starts_with("docs/") && quote.text == full),
                "no page of docs/ gives the whole grammar `{full}`"
            );
            let row = format!("| `{full}` |");
            assert!(
                readme.contains(&row),
                "README.md's table lacks the row {row}"
            );
        }
        // Each choice a command's grammar names: CL.FIXED's period, CL.ALL's limiter.
        let mut spelled = 0;
        for arg in COMMANDS.iter().flat_map(|command| command.args()) {
            let Some(choice) = choices(&arg) else {
                continue;
            };
            let line = format!("{} := {choice}", text(arg.name));
            assert!(
                quotes.iter().any(|quote| quote.text == line),
                "no page spells out `{line}`"
            );
            spelled += 1;
        }
        assert_eq!(spelled, 2);
    }

    #[test]
    fn each_arity_is_its_parameters_and_name() {
        for command in &COMMANDS {
            let params = params::params(command.command).len();
            // CL.ALL's one key and one limiter: a keyword and its numbers, two at least.
            let least = match command.command {
                Name::All => params + 2,
                _ => params,
            };
            assert_eq!(command.arity, -(1 + least as c_int), "{:?}", command.name);
        }
    }

    #[test]
    fn a_part_keeps_the_table_s_order_and_its_required_arguments() {
        let full = "CL.FIXED key limit period [quantity] [MS] [REFUND] [BLOCK timeout]";
        assert!(is_part_of(full, full));
        assert!(is_part_of("CL.FIXED key limit period [MS] REFUND", full));
        assert!(is_part_of(
            "CL.FIXED key limit period [quantity] [MS] AT <unix-ms>",
            full
        ));
        assert!(!is_part_of(
            "CL.FIXED key limit period 5 BLOCK timeout",
            full
        ));
        assert!(is_part_of(
            "CL.FIXED key limit period quantity BLOCK timeout",
            full
        ));
        assert!(!is_part_of("CL.FIXED key limit period [REFUND] [MS]", full));
        assert!(!is_part_of("CL.FIXED key period", full));
        assert!(!is_part_of("CL.FIXED key [limit] period", full));
        assert!(!is_part_of(
            "CL.FIXED key limit period [BLOCK milliseconds]",
            full
        ));
        let throttle = "CL.THROTTLE key max_burst count period [quantity] [MS]";
        assert!(!is_part_of(
            "CL.THROTTLE key max_burst count period AT <unix-ms>",
            throttle
        ));
    }
}

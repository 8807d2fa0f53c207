//! One short function per command: parse → read → decide → write → reply. The only layer
//! that knows both the algorithms and Redis.

use std::ffi::CStr;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use crate::all::{self, Combined};
use crate::args::{self, LimiterArgs, WindowArgs};
use crate::clock;
use crate::error::Error;
use crate::fixed::{FixedWindow, Window};
use crate::gcra::Gcra;
use crate::limiter::{Change, Instant, Limiter, Stored, Verdict};
use crate::reply::{self, Outcome};
use crate::stats::{self, Counted, Counters};
use crate::store::{self, api, decimal, succeeded, Access, Event, Expiry, Key};
use crate::window::SlidingWindow;

/// The most arguments a single-key command takes, its name included
/// (`CL.WINDOW key limit period quantity MS AT unix-ms`).
const MAX_ARGS: usize = 8;
/// The most arguments CL.ALL takes: its name, numkeys, 16 keys, 16 limiters of up to four
/// words, `QUANTITY quantity`, `MS` and `DETAIL`.
const MAX_ALL_ARGS: usize = 2 + args::MAX_KEYS * 5 + 4;

/// The arguments of a running command.
struct Call<'a, const N: usize> {
    ctx: *mut raw::RedisModuleCtx,
    /// The command's arguments as the server holds them, its name first.
    argv: &'a [*mut raw::RedisModuleString],
    /// The arguments after the name, as bytes.
    rest: [&'a [u8]; N],
    rest_len: usize,
    /// Whether the call comes from the primary over the replication link, or from the AOF.
    replayed: bool,
}

impl<'a, const N: usize> Call<'a, N> {
    /// # Safety
    /// `argv` must point to `argc` live strings that outlive `'a`, as Redis guarantees for the
    /// duration of a command.
    unsafe fn new(
        ctx: *mut raw::RedisModuleCtx,
        argv: *mut *mut raw::RedisModuleString,
        argc: c_int,
        command: &'static str,
        replayed: bool,
    ) -> Result<Call<'a, N>, Error> {
        let argc = usize::try_from(argc).map_err(|_| Error::WrongArity(command))?;
        if !(2..=N).contains(&argc) || argv.is_null() {
            return Err(Error::WrongArity(command));
        }
        let argv = std::slice::from_raw_parts(argv, argc);
        let ptr_len = raw::RedisModule_StringPtrLen.ok_or(Error::Internal)?;
        let mut rest: [&[u8]; N] = [&[]; N];
        for (slot, &arg) in rest.iter_mut().zip(argv.iter().skip(1)) {
            let mut len = 0usize;
            let ptr = ptr_len(arg, &mut len);
            if !ptr.is_null() {
                *slot = std::slice::from_raw_parts(ptr.cast::<u8>(), len);
            }
        }
        Ok(Call {
            ctx,
            argv,
            rest,
            rest_len: argc - 1,
            replayed,
        })
    }

    /// The arguments after the command's name.
    fn args(&self) -> &[&'a [u8]] {
        self.rest.get(..self.rest_len).unwrap_or(&[])
    }

    /// The argument at `index` after the command's name, as the server holds it.
    fn arg(&self, index: usize) -> Result<*mut raw::RedisModuleString, Error> {
        self.argv.get(index + 1).copied().ok_or(Error::Internal)
    }

    /// The instant to decide at: the server's clock, or the primary's instant carried by a
    /// replayed call.
    fn instant(&self, at_ms: Option<i64>) -> Result<Instant, Error> {
        match at_ms {
            Some(at) if self.replayed => Ok(Instant::from_ms(at)),
            Some(_) => Err(Error::AtFromClient),
            None => clock::now_ns().map(Instant::from_ns),
        }
    }
}

/// A single-key command's call: its key, and the arguments after it.
type SingleCall<'a> = Call<'a, MAX_ARGS>;

impl SingleCall<'_> {
    fn params(&self) -> &[&[u8]] {
        self.args().get(1..).unwrap_or(&[])
    }
}

/// `CL.THROTTLE key max_burst count period [quantity] [MS]`
pub extern "C" fn throttle(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    dispatch(
        ctx,
        argv,
        argc,
        "cl.throttle",
        &stats::THROTTLE,
        |call: &SingleCall| {
            let args = args::throttle(call.params())?;
            let limiter = Limiter::Throttle(Gcra::new(&args)?);
            let now = call.instant(None)?;
            single(call, limiter, args.quantity, now, false)
                .map(|outcome| Answer::one(outcome.to_reply(args.unit), args.quantity))
        },
    )
}

/// `CL.FIXED key limit period [quantity] [MS]`, and its replication form with `AT unix-ms`.
pub extern "C" fn fixed(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    window_command(
        ctx,
        argv,
        argc,
        "cl.fixed",
        &stats::FIXED,
        args::fixed,
        |args| Limiter::Fixed(FixedWindow::new(args)),
    )
}

/// `CL.WINDOW key limit period [quantity] [MS]`, and its replication form with `AT unix-ms`.
pub extern "C" fn window(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    window_command(
        ctx,
        argv,
        argc,
        "cl.window",
        &stats::WINDOW,
        args::window,
        |args| Limiter::Window(SlidingWindow::new(args)),
    )
}

/// A window command: `key limit period [quantity] [MS] [AT unix-ms]`, on one limiter.
#[inline(always)]
fn window_command(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    command: &'static str,
    counters: &Counters,
    parse: fn(&[&[u8]]) -> Result<WindowArgs, Error>,
    limiter: fn(&WindowArgs) -> Limiter,
) -> c_int {
    dispatch(ctx, argv, argc, command, counters, |call: &SingleCall| {
        let args = parse(call.params())?;
        let now = call.instant(args.at_ms)?;
        single(
            call,
            limiter(&args),
            args.quantity,
            now,
            args.at_ms.is_some(),
        )
        .map(|outcome| Answer::one(outcome.to_reply(args.unit), args.quantity))
    })
}

/// One limiter on the call's key: read, decide, and write what an admission changes. A
/// window command propagates as itself with its instant, or, replayed with one already, as
/// it came.
#[inline(always)]
fn single(
    call: &SingleCall,
    limiter: Limiter,
    quantity: i64,
    now: Instant,
    carries_instant: bool,
) -> Result<Outcome, Error> {
    let mut key = Key::open(call.ctx, call.arg(0)?, access_for(quantity))?;
    let verdict = limiter.decide(&read(&limiter, &key)?, now)?;
    if let Some(change) = verdict.change {
        let propagate = if carries_instant {
            Propagate::Verbatim
        } else {
            Propagate::WithInstant(call.argv.get(1..).ok_or(Error::Internal)?)
        };
        write(call.ctx, &mut key, change, propagate, now)?;
        notify(&key, change);
    }
    Ok(verdict.outcome)
}

/// `CL.ALL numkeys key [key ...] limiter [limiter ...] [QUANTITY quantity] [MS] [DETAIL]`:
/// every limiter decides at one instant; every key is written, as its own command would
/// write it, when all admit, and none otherwise.
pub extern "C" fn all(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: ctx is the running command's context.
    if unsafe { raw::RedisModule_IsKeysPositionRequest.is_some_and(|asks| asks(ctx) != 0) } {
        // The server asks where the keys are (cluster routing), without running the call.
        report_key_positions(ctx, argv, argc);
        return raw::REDISMODULE_OK as c_int;
    }
    dispatch(ctx, argv, argc, "cl.all", &stats::ALL, run_all)
}

/// CL.ALL's body. Every limiter is built, then every key read and decided, and what each
/// write will propagate gathered, before any key is written: an error on any argument or
/// key stops the call with nothing changed, and nothing after the first write can.
fn run_all(call: &Call<MAX_ALL_ARGS>) -> Result<Answer, Error> {
    let args = args::all(call.args())?;
    let mut limiters = [None; args::MAX_KEYS];
    for (limiter, spec) in limiters.iter_mut().zip(&args.limiters) {
        *limiter = Some(limiter_of(&spec.args)?);
    }
    let now = call.instant(None)?;
    let mut entries = Vec::with_capacity(args.limiters.len());
    for (index, (spec, limiter)) in args.limiters.iter().zip(&limiters).enumerate() {
        let limiter = limiter.ok_or(Error::Internal)?;
        entries.push(Entry::decide(call, &args, index, spec, limiter, now)?);
    }
    let combined = all::combine(entries.iter().map(|entry| &entry.verdict), args.unit);
    let reply = if args.detail {
        let mut replies = Vec::with_capacity(entries.len());
        for entry in &entries {
            let outcome = combined.detail(&entry.verdict, || entry.peek(now))?;
            replies.push(outcome.to_reply(args.unit));
        }
        Reply::Detail(replies)
    } else {
        let binding = entries.get(combined.binding).ok_or(Error::Internal)?;
        Reply::One(binding.verdict.outcome.to_reply(args.unit))
    };
    write_all(call.ctx, &combined, &mut entries, now);
    Ok(Answer {
        reply,
        counted: Counted::of(args.quantity, combined.admitted),
    })
}

/// Writes every key of a CL.ALL call that all its limiters admitted (nothing otherwise), then
/// fires their events. Once the first key is written the call has taken effect: a write that
/// fails after it (a defect: every failure on what the keys hold was decided before) does not
/// stop the others, is logged, and the client gets the decided reply. The events come after
/// every write, so that no listener runs while keys of the call are still to be written.
fn write_all(
    ctx: *mut raw::RedisModuleCtx,
    combined: &Combined,
    entries: &mut [Entry],
    now: Instant,
) {
    let mut written = [false; args::MAX_KEYS];
    for (entry, written) in entries.iter_mut().zip(written.iter_mut()) {
        if let Some(change) = combined.change(&entry.verdict) {
            let own_args = entry.own_args.get(..entry.own_len).unwrap_or_default();
            match write(
                ctx,
                &mut entry.key,
                change,
                Propagate::WithInstant(own_args),
                now,
            ) {
                Ok(()) => *written = true,
                Err(error) => log_warning(
                    ctx,
                    &format!(
                        "redis-cell: CL.ALL wrote some keys but not all: {}",
                        error.message()
                    ),
                ),
            }
        }
    }
    for (entry, &written) in entries.iter().zip(written.iter()) {
        if let Some(change) = entry.verdict.change.filter(|_| written) {
            notify(&entry.key, change);
        }
    }
}

fn log_warning(ctx: *mut raw::RedisModuleCtx, message: &str) {
    let Ok(message) = std::ffi::CString::new(message) else {
        return;
    };
    // SAFETY: ctx is the running command's context; "%s" takes the one C string given.
    unsafe {
        if let Some(log) = raw::RedisModule_Log {
            log(ctx, c"warning".as_ptr(), c"%s".as_ptr(), message.as_ptr());
        }
    }
}

/// Tells the server where CL.ALL's keys are: the `numkeys` arguments after `numkeys`. Cluster
/// routing (and `CROSSSLOT`) asks the command itself, not its key spec, for these. A call
/// whose `numkeys` is not a count of keys it has reports none, and is then refused when run.
fn report_key_positions(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) {
    if argv.is_null() || argc < 2 {
        return;
    }
    // SAFETY: the server passes argc live argument strings; the functions exist on every
    // server this module loads on (checked before use).
    unsafe {
        let (Some(ptr_len), Some(key_at)) = (
            raw::RedisModule_StringPtrLen,
            raw::RedisModule_KeyAtPosWithFlags,
        ) else {
            return;
        };
        let mut len = 0usize;
        let text = ptr_len(*argv.add(1), &mut len);
        if text.is_null() {
            return;
        }
        let numkeys = args::parse_i64(std::slice::from_raw_parts(text.cast::<u8>(), len));
        let Some(numkeys) = numkeys
            .and_then(|n| c_int::try_from(n).ok())
            .filter(|&n| (1..=args::MAX_KEYS as c_int).contains(&n) && n <= argc - 2)
        else {
            return;
        };
        let flags = raw::REDISMODULE_CMD_KEY_RW
            | raw::REDISMODULE_CMD_KEY_ACCESS
            | raw::REDISMODULE_CMD_KEY_UPDATE;
        for position in 2..2 + numkeys {
            key_at(ctx, position, flags as c_int);
        }
    }
}

/// The most arguments a limiter's own command is propagated with: the key, two parameters,
/// the quantity and MS (a THROTTLE limiter gathers six, unused: it propagates a SET).
const MAX_OWN_ARGS: usize = 6;

/// One key of a CL.ALL call: its limiter, the open key, the limiter's verdict, and the
/// arguments its own command would propagate with.
struct Entry {
    limiter: Limiter,
    key: Key,
    verdict: Verdict,
    own_args: [*mut raw::RedisModuleString; MAX_OWN_ARGS],
    own_len: usize,
}

impl Entry {
    /// Opens the call's `index`-th key and decides `limiter`, built from `spec`, on it.
    fn decide(
        call: &Call<MAX_ALL_ARGS>,
        args: &args::AllArgs,
        index: usize,
        spec: &args::LimiterSpec,
        limiter: Limiter,
        now: Instant,
    ) -> Result<Entry, Error> {
        let key = Key::open(call.ctx, call.arg(index + 1)?, access_for(args.quantity))?;
        let verdict = limiter.decide(&read(&limiter, &key)?, now)?;
        // The key and the limiter's parameters as the client gave them, then the shared
        // quantity and MS: the arguments of the limiter's own command.
        let positions = std::iter::once(index + 1)
            .chain(spec.params_at..spec.params_at + spec.params_len)
            .chain(args.quantity_at)
            .chain(args.ms_at);
        let mut own_args = [std::ptr::null_mut(); MAX_OWN_ARGS];
        let mut own_len = 0;
        for position in positions {
            *own_args.get_mut(own_len).ok_or(Error::Internal)? = call.arg(position)?;
            own_len += 1;
        }
        Ok(Entry {
            limiter,
            key,
            verdict,
            own_args,
            own_len,
        })
    }

    /// What the limiter answers about its key as it stands.
    fn peek(&self, now: Instant) -> Result<Outcome, Error> {
        let peek = self.limiter.peek();
        Ok(peek.decide(&read(&peek, &self.key)?, now)?.outcome)
    }
}

fn limiter_of(args: &LimiterArgs) -> Result<Limiter, Error> {
    Ok(match args {
        LimiterArgs::Throttle(args) => Limiter::Throttle(Gcra::new(args)?),
        LimiterArgs::Fixed(args) => Limiter::Fixed(FixedWindow::new(args)),
        LimiterArgs::Window(args) => Limiter::Window(SlidingWindow::new(args)),
    })
}

/// The key's value read as `limiter`'s state.
#[inline(always)]
fn read<'k>(limiter: &Limiter, key: &'k Key) -> Result<Stored<'k>, Error> {
    Ok(match limiter {
        Limiter::Throttle(_) => Stored::Tat(key.read_integer()?),
        Limiter::Fixed(_) => Stored::Window(match key.read_integer()? {
            // A count is never negative, and a window always ends.
            Some(count) if count >= 0 => Some(Window {
                count,
                end_ms: key.expire_at_ms()?.ok_or(Error::CorruptState)?,
            }),
            Some(_) => return Err(Error::CorruptState),
            None => None,
        }),
        Limiter::Window(_) => Stored::Log(key.read_bytes()?),
    })
}

/// How a window command's write reaches replicas and the AOF.
enum Propagate<'a> {
    /// As the call came: it carries its instant already.
    Verbatim,
    /// As the command with these arguments after its name, and the instant: `AT <unix-ms>`.
    WithInstant(&'a [*mut raw::RedisModuleString]),
}

/// Writes an admission's change into its key as the limiter's own command does, and
/// propagates it. Everything that can fail on what the key held was decided before: what
/// fails here is a defect.
fn write(
    ctx: *mut raw::RedisModuleCtx,
    key: &mut Key,
    change: Change,
    propagate: Propagate,
    now: Instant,
) -> Result<(), Error> {
    match change {
        // Written as `SET key tat PXAT expiry` would write it, and propagated as that.
        Change::Tat { tat, expire_at_ms } => key.set_integer(tat, expire_at_ms),
        Change::Count {
            count,
            end_ms,
            opens,
        } => {
            let expiry = if opens {
                Expiry::At(end_ms)
            } else {
                Expiry::Unchanged
            };
            key.write_integer(count, expiry)?;
            replicate(ctx, c"CL.FIXED", propagate, now)
        }
        Change::Log(append) => {
            append.apply(key)?;
            key.expire_at(append.expire_at_ms)?;
            replicate(ctx, c"CL.WINDOW", propagate, now)
        }
    }
}

/// Fires the keyspace events of the commands a change stands in for, after its write and
/// propagation: `SET … PXAT` for a TAT, INCRBY (and EXPIRE when a window opens) for a count,
/// and for a log `cl.window` and EXPIRE.
fn notify(key: &Key, change: Change) {
    match change {
        Change::Tat { .. } => {
            key.notify(Event::Set);
            key.notify(Event::Expire);
        }
        Change::Count { opens, .. } => {
            key.notify(Event::IncrBy);
            if opens {
                key.notify(Event::Expire);
            }
        }
        Change::Log(_) => {
            key.notify(Event::WindowLog);
            key.notify(Event::Expire);
        }
    }
}

/// Propagates a window command with the instant it was decided at. Replicas hold the same
/// state, so they make the same decision, write the same bytes and fire the same events; for
/// CL.WINDOW that is also far cheaper than sending a long log. The arguments are the
/// client's own strings, shared, not copied.
fn replicate(
    ctx: *mut raw::RedisModuleCtx,
    command: &CStr,
    propagate: Propagate,
    now: Instant,
) -> Result<(), Error> {
    let status = match propagate {
        Propagate::Verbatim => {
            let verbatim = api(unsafe { raw::RedisModule_ReplicateVerbatim })?;
            // SAFETY: ctx is the running command's context.
            unsafe { verbatim(ctx) }
        }
        Propagate::WithInstant(args) => {
            let replicate = api(unsafe { raw::RedisModule_Replicate })?;
            let at_word = store::AT.get()?;
            let mut digits = [0u8; 20];
            let at = decimal(now.ms, &mut digits);
            // SAFETY: the format "vsb" takes an array of RedisModuleStrings and its length, a
            // RedisModuleString, and a buffer and its length, which is exactly what follows
            // it; the array holds the command's live arguments.
            unsafe {
                replicate(
                    ctx,
                    command.as_ptr(),
                    c"vsb".as_ptr(),
                    args.as_ptr(),
                    args.len(),
                    at_word,
                    at.as_ptr(),
                    at.len(),
                )
            }
        }
    };
    succeeded(status)
}

/// A quantity of zero only looks.
fn access_for(quantity: i64) -> Access {
    if quantity == 0 {
        Access::Read
    } else {
        Access::Write
    }
}

/// Runs a command body and sends its reply. A panic, which would otherwise take the whole
/// server down, becomes an error reply; bodies write only as their last step, so an error
/// or a panic leaves the key as it was.
fn dispatch<const N: usize>(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    command: &'static str,
    counters: &Counters,
    body: impl FnOnce(&Call<N>) -> Result<Answer, Error>,
) -> c_int {
    let flags = context_flags(ctx);
    stats::before_command(flags & raw::REDISMODULE_CTX_FLAGS_MULTI != 0);
    // A replica or a restart replaying a call may carry the primary's instant, and does not
    // count it in the counters, which are the clients'.
    let replayed = flags & REPLAYED != 0;
    let result = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: Redis passes argc live argument strings for the duration of the command.
        let call = unsafe { Call::new(ctx, argv, argc, command, replayed) }?;
        body(&call)
    }))
    .unwrap_or(Err(Error::Internal));
    match result {
        Ok(answer) => {
            if !replayed {
                counters.record(answer.counted);
            }
            match answer.reply {
                Reply::One(values) => reply::send(ctx, values),
                Reply::Detail(replies) => reply::send_all(ctx, &replies),
            }
        }
        Err(error) => {
            if !replayed {
                counters.record(Counted::Error);
            }
            reply::send_error(ctx, error);
        }
    }
    raw::REDISMODULE_OK as c_int
}

/// A call from the primary over the replication link, or from the AOF.
const REPLAYED: u32 = raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING;

fn context_flags(ctx: *mut raw::RedisModuleCtx) -> u32 {
    // SAFETY: ctx is the running command's context.
    unsafe { raw::RedisModule_GetContextFlags.map_or(0, |flags| flags(ctx) as u32) }
}

/// A command's reply, and what it counts as.
struct Answer {
    reply: Reply,
    counted: Counted,
}

enum Reply {
    /// `[limited, limit, remaining, retry_after, reset_after]`.
    One([i64; 5]),
    /// One such array per limiter.
    Detail(Vec<[i64; 5]>),
}

impl Answer {
    fn one(values: [i64; 5], quantity: i64) -> Answer {
        Answer {
            reply: Reply::One(values),
            counted: Counted::of(quantity, values[0] == 0),
        }
    }
}

//! One short function per command: parse → read → decide → write → reply. The only layer
//! that knows both the algorithms and Redis.

use std::ffi::{CStr, CString};
use std::ops::Range;
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
use crate::waiting::{self, Turn};
use crate::window::SlidingWindow;

/// The most arguments a single-key command takes, its name included
/// (`CL.THROTTLE key max_burst count period quantity MS BLOCK milliseconds`; the replication
/// form of the windows, with `AT unix-ms`, never has `BLOCK`).
const MAX_ARGS: usize = 9;
/// The most arguments CL.ALL takes: its name, numkeys, 16 keys, 16 limiters of up to four
/// words, `QUANTITY quantity`, `MS`, `DETAIL` and `BLOCK milliseconds`.
const MAX_ALL_ARGS: usize = 2 + args::MAX_KEYS * 5 + 6;

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

/// This module's commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Command {
    Throttle,
    Fixed,
    Window,
    All,
}

impl Command {
    fn name(self) -> &'static str {
        match self {
            Command::Throttle => "cl.throttle",
            Command::Fixed => "cl.fixed",
            Command::Window => "cl.window",
            Command::All => "cl.all",
        }
    }

    pub(crate) fn counters(self) -> &'static Counters {
        match self {
            Command::Throttle => &stats::THROTTLE,
            Command::Fixed => &stats::FIXED,
            Command::Window => &stats::WINDOW,
            Command::All => &stats::ALL,
        }
    }

    /// Runs a call of this command at `turn` in its keys' lines: parse, read, decide, and
    /// write when admitted. A panic, which would otherwise take the whole server down, becomes
    /// an error; bodies write only as their last step, so an error or a panic leaves the keys
    /// as they were.
    pub(crate) fn run(
        self,
        ctx: *mut raw::RedisModuleCtx,
        argv: *mut *mut raw::RedisModuleString,
        argc: c_int,
        replayed: bool,
        turn: Turn,
    ) -> Result<Answer, Error> {
        catch_unwind(AssertUnwindSafe(|| {
            let name = self.name();
            // SAFETY: the server passes argc live argument strings, alive for the command (or,
            // for a waiter, held by it).
            match self {
                Command::Throttle => run_throttle(
                    &unsafe { Call::new(ctx, argv, argc, name, replayed) }?,
                    turn,
                ),
                Command::Fixed => run_window(
                    &unsafe { Call::new(ctx, argv, argc, name, replayed) }?,
                    turn,
                    args::fixed,
                    |args| Limiter::Fixed(FixedWindow::new(args)),
                ),
                Command::Window => run_window(
                    &unsafe { Call::new(ctx, argv, argc, name, replayed) }?,
                    turn,
                    args::window,
                    |args| Limiter::Window(SlidingWindow::new(args)),
                ),
                Command::All => run_all(
                    &unsafe { Call::new(ctx, argv, argc, name, replayed) }?,
                    turn,
                ),
            }
        }))
        .unwrap_or(Err(Error::Internal))
    }
}

/// `CL.THROTTLE key max_burst count period [quantity] [MS] [BLOCK milliseconds]`
pub extern "C" fn throttle(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    dispatch(ctx, argv, argc, Command::Throttle)
}

/// `CL.FIXED key limit period [quantity] [MS] [BLOCK milliseconds]`, and its replication form
/// with `AT unix-ms`.
pub extern "C" fn fixed(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    dispatch(ctx, argv, argc, Command::Fixed)
}

/// `CL.WINDOW key limit period [quantity] [MS] [BLOCK milliseconds]`, and its replication form
/// with `AT unix-ms`.
pub extern "C" fn window(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    dispatch(ctx, argv, argc, Command::Window)
}

fn run_throttle(call: &SingleCall, turn: Turn) -> Result<Answer, Error> {
    let (params, block_ms) = args::block(call.params())?;
    let args = args::throttle(params)?;
    let limiter = Limiter::Throttle(Gcra::new(&args)?);
    let now = call.instant(None)?;
    // Propagated as the SET it amounts to, not as itself.
    let outcome = single(call, limiter, args.quantity, now, Propagate::Verbatim, turn)?;
    Ok(Answer::single(outcome, args.quantity, args.unit, block_ms))
}

/// A window command: `key limit period [quantity] [MS] [AT unix-ms] [BLOCK milliseconds]`,
/// on one limiter. It propagates as itself with its instant, without BLOCK, or, replayed with
/// an instant already, as it came.
#[inline(always)]
fn run_window(
    call: &SingleCall,
    turn: Turn,
    parse: fn(&[&[u8]]) -> Result<WindowArgs, Error>,
    limiter: fn(&WindowArgs) -> Limiter,
) -> Result<Answer, Error> {
    let (params, block_ms) = args::block(call.params())?;
    let args = parse(params)?;
    let now = call.instant(args.at_ms)?;
    let propagate = if args.at_ms.is_some() {
        Propagate::Verbatim
    } else {
        // The key and its parameters.
        Propagate::WithInstant(call.argv.get(1..2 + params.len()).ok_or(Error::Internal)?)
    };
    let outcome = single(call, limiter(&args), args.quantity, now, propagate, turn)?;
    Ok(Answer::single(outcome, args.quantity, args.unit, block_ms))
}

/// One limiter on the call's key: read, decide, and write what an admission changes, unless
/// waiters who came first hold the call back.
#[inline(always)]
fn single(
    call: &SingleCall,
    limiter: Limiter,
    quantity: i64,
    now: Instant,
    propagate: Propagate,
    turn: Turn,
) -> Result<Outcome, Error> {
    let (mut key, verdict) = decide_in_line(call.ctx, call.arg(0)?, &limiter, quantity, now, turn)?;
    if let Some(change) = verdict.change.filter(|_| turn.writes()) {
        write(call.ctx, &mut key, change, propagate, now)?;
        notify(&key, change);
    }
    Ok(verdict.outcome)
}

/// Opens a key and decides `limiter` on it, for a call at `turn` in the key's line: a call
/// that waiters who came first hold back takes nothing. The one place both single-key calls
/// and each key of CL.ALL decide.
#[inline(always)]
fn decide_in_line(
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    limiter: &Limiter,
    quantity: i64,
    now: Instant,
    turn: Turn,
) -> Result<(Key, Verdict), Error> {
    let key = Key::open(ctx, name, access_for(quantity))?;
    let mut verdict = limiter.decide(&read(limiter, &key)?, now)?;
    if quantity != 0 {
        if let Some(first_due_in) = waiting::held_back(ctx, name, turn)? {
            verdict = verdict.held_back(first_due_in, || peek(limiter, &key, now))?;
        }
    }
    Ok((key, verdict))
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
    dispatch(ctx, argv, argc, Command::All)
}

/// CL.ALL's body. Every limiter is built, then every key read and decided, and what each
/// write will propagate gathered, before any key is written: an error on any argument or
/// key stops the call with nothing changed, and nothing after the first write can.
fn run_all(call: &Call<MAX_ALL_ARGS>, turn: Turn) -> Result<Answer, Error> {
    let args = args::all(call.args())?;
    let mut limiters = [None; args::MAX_KEYS];
    for (limiter, spec) in limiters.iter_mut().zip(&args.limiters) {
        *limiter = Some(limiter_of(&spec.args)?);
    }
    let now = call.instant(None)?;
    let mut entries = Vec::with_capacity(args.limiters.len());
    for (index, (spec, limiter)) in args.limiters.iter().zip(&limiters).enumerate() {
        let limiter = limiter.ok_or(Error::Internal)?;
        entries.push(Entry::decide(call, &args, index, spec, limiter, now, turn)?);
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
    if turn.writes() {
        write_all(call.ctx, &combined, &mut entries, now);
    }
    let fits_in_ns = all::fits_in_ns(entries.iter().map(|entry| &entry.verdict));
    Ok(Answer {
        reply,
        counted: Counted::of(args.quantity, combined.admitted),
        // The keys follow numkeys.
        wait: Wait::of(
            args.block_ms,
            !combined.admitted,
            fits_in_ns,
            2..2 + args.limiters.len(),
        ),
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
        turn: Turn,
    ) -> Result<Entry, Error> {
        let name = call.arg(index + 1)?;
        let (key, verdict) = decide_in_line(call.ctx, name, &limiter, args.quantity, now, turn)?;
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
        peek(&self.limiter, &self.key, now)
    }
}

/// What `limiter` answers about its key as it stands.
fn peek(limiter: &Limiter, key: &Key, now: Instant) -> Result<Outcome, Error> {
    let peek = limiter.peek();
    Ok(peek.decide(&read(&peek, key)?, now)?.outcome)
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
/// client's own strings, shared, not copied, each named by its own `s` in the format: the
/// server sizes its argument array by the format, and a vector (`v`) makes it grow that array
/// again, about 450 instructions a call.
fn replicate(
    ctx: *mut raw::RedisModuleCtx,
    command: &CStr,
    propagate: Propagate,
    now: Instant,
) -> Result<(), Error> {
    let args = match propagate {
        Propagate::Verbatim => {
            let verbatim = api(unsafe { raw::RedisModule_ReplicateVerbatim })?;
            // SAFETY: ctx is the running command's context.
            return succeeded(unsafe { verbatim(ctx) });
        }
        Propagate::WithInstant(args) => args,
    };
    let replicate = api(unsafe { raw::RedisModule_Replicate })?;
    let at_word = store::AT.get()?;
    let mut digits = [0u8; 20];
    let at = decimal(now.ms, &mut digits);
    // The format's letters take, in order: one RedisModuleString per `s`, an array of them
    // and its length for `v`, the word AT (`s`), and a buffer and its length (`b`).
    macro_rules! replicate_with {
        ($format:literal $(, $arg:expr)*) => {
            replicate(ctx, command.as_ptr(), $format.as_ptr(), $($arg,)* at_word, at.as_ptr(), at.len())
        };
    }
    // SAFETY: each format names exactly the arguments that follow it (see above); the
    // strings are the command's live arguments.
    let status = unsafe {
        match *args {
            [key, first, second] => replicate_with!(c"ssssb", key, first, second),
            [key, first, second, third] => replicate_with!(c"sssssb", key, first, second, third),
            [key, first, second, third, fourth] => {
                replicate_with!(c"ssssssb", key, first, second, third, fourth)
            }
            _ => replicate_with!(c"vsb", args.as_ptr(), args.len()),
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

/// Runs a client's call (or a replayed one) and answers it, or parks it when it asked to
/// wait, was denied, and may wait here.
fn dispatch(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    command: Command,
) -> c_int {
    let flags = context_flags(ctx);
    stats::before_command(flags & raw::REDISMODULE_CTX_FLAGS_MULTI != 0);
    // A replica or a restart replaying a call may carry the primary's instant, and does not
    // count it in the counters, which are the clients'.
    let replayed = flags & REPLAYED != 0;
    let turn = if replayed {
        Turn::Replayed
    } else {
        Turn::Arriving
    };
    let result = command.run(ctx, argv, argc, replayed, turn);
    if let Ok(Answer {
        wait: Some(wait), ..
    }) = &result
    {
        // A writable replica answers at once: its waiters could never write.
        if flags & NO_WAITING == 0 && flags & raw::REDISMODULE_CTX_FLAGS_MASTER != 0 {
            // SAFETY: the server passes argc live argument strings.
            let args =
                unsafe { std::slice::from_raw_parts(argv, usize::try_from(argc).unwrap_or(0)) };
            if waiting::park(ctx, command, args, wait).is_ok() {
                return raw::REDISMODULE_OK as c_int;
            }
        }
    }
    if !replayed {
        record(command, &result);
    }
    send(ctx, result);
    raw::REDISMODULE_OK as c_int
}

/// Where a call may not wait, and answers at once as BLPOP does: in a transaction, a script or
/// a function, where the server denies blocking (a call from a module), and when replayed.
const NO_WAITING: u32 = raw::REDISMODULE_CTX_FLAGS_MULTI
    | raw::REDISMODULE_CTX_FLAGS_LUA
    | raw::REDISMODULE_CTX_FLAGS_DENY_BLOCKING
    | REPLAYED;

/// Counts a call's answer in its command's counters.
#[inline(always)]
pub(crate) fn record(command: Command, result: &Result<Answer, Error>) {
    command.counters().record(match result {
        Ok(answer) => answer.counted,
        Err(_) => Counted::Error,
    });
}

/// Sends a call's answer.
#[inline(always)]
pub(crate) fn send(ctx: *mut raw::RedisModuleCtx, result: Result<Answer, Error>) {
    match result {
        Ok(answer) => match answer.reply {
            Reply::One(values) => reply::send(ctx, values),
            Reply::Detail(replies) => reply::send_all(ctx, &replies),
            Reply::Redirect(error) => reply::send_error_text(ctx, &error),
        },
        Err(error) => reply::send_error(ctx, error),
    }
}

/// A call from the primary over the replication link, or from the AOF.
const REPLAYED: u32 = raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING;

pub(crate) fn context_flags(ctx: *mut raw::RedisModuleCtx) -> u32 {
    // SAFETY: ctx is the running command's context.
    unsafe { raw::RedisModule_GetContextFlags.map_or(0, |flags| flags(ctx) as u32) }
}

/// A call's answer, what it counts as, and whether it may wait for a better one.
pub(crate) struct Answer {
    reply: Reply,
    counted: Counted,
    /// Set when the call asked to wait (BLOCK), was denied, and can be admitted some day.
    /// Boxed: only such calls pay for it, and every answer stays small to move.
    pub wait: Option<Box<Wait>>,
}

/// How a denied call that asked to wait would wait.
pub(crate) struct Wait {
    /// BLOCK's timeout: 0 waits as long as it takes.
    pub timeout_ms: i64,
    /// How long until its units fit, with nothing else taken meanwhile.
    pub fits_in_ns: i64,
    /// Where its keys are among its arguments, the command's name first.
    pub keys: Range<usize>,
}

impl Wait {
    fn of(
        block_ms: Option<i64>,
        denied: bool,
        fits_in_ns: Option<i64>,
        keys: Range<usize>,
    ) -> Option<Box<Wait>> {
        match (block_ms, fits_in_ns) {
            (Some(timeout_ms), Some(fits_in_ns)) if denied => Some(Box::new(Wait {
                timeout_ms,
                fits_in_ns,
                keys,
            })),
            _ => None,
        }
    }
}

enum Reply {
    /// `[limited, limit, remaining, retry_after, reset_after]`.
    One([i64; 5]),
    /// One such array per limiter.
    Detail(Vec<[i64; 5]>),
    /// A waiter's slot moved away: the cluster's redirect, as the server words it.
    Redirect(CString),
}

impl Answer {
    /// A single-key command's answer; its key follows the command's name.
    #[inline(always)]
    fn single(
        outcome: Outcome,
        quantity: i64,
        unit: args::TimeUnit,
        block_ms: Option<i64>,
    ) -> Answer {
        Answer {
            reply: Reply::One(outcome.to_reply(unit)),
            counted: Counted::of(quantity, !outcome.limited),
            wait: Wait::of(block_ms, outcome.limited, outcome.retry_after_ns, 1..2),
        }
    }

    /// A waiter's answer when its slot has moved away.
    pub fn redirect(error: CString) -> Answer {
        Answer {
            reply: Reply::Redirect(error),
            counted: Counted::Error,
            wait: None,
        }
    }

    pub fn admitted(&self) -> bool {
        self.counted == Counted::Allowed
    }
}

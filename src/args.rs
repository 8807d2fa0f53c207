//! Strict argument parsing shared by every command: integers the way Redis reads them, the
//! optional `[quantity] [MS] [REFUND] [DRYRUN]` tail, and errors that name the offending
//! argument. CL.ALL's own grammar, built on these, is in `all_args.rs`.

use crate::decimal::parse_i64;
use crate::error::Error;
use crate::time::{TimeUnit, MAX_SPAN_NS, MILLIS_PER_SECOND, NANOS_PER_MILLI};

/// A GCRA's parameters: `count` units per `period_ns`, in bursts of up to `max_burst + 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottleParams {
    pub max_burst: i64,
    pub count: i64,
    /// The period converted to nanoseconds.
    pub period_ns: i64,
}

/// A window's parameters, fixed or sliding: `limit` units per `period_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowParams {
    pub limit: i64,
    /// The period converted to milliseconds.
    pub period_ms: i64,
}

/// `CL.THROTTLE key max_burst count period [quantity] [MS] [REFUND] [DRYRUN]`, after the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottleArgs {
    pub params: ThrottleParams,
    pub quantity: i64,
    pub unit: TimeUnit,
    /// The call gives `quantity` back instead of taking it (`REFUND`).
    pub refund: bool,
    /// The call only answers what it would, and changes nothing (`DRYRUN`).
    pub dry_run: bool,
}

/// `CL.FIXED` and `CL.WINDOW`: `key limit period [quantity] [MS] [REFUND] [DRYRUN]
/// [COUNTDENIED]` (COUNTDENIED CL.FIXED's alone), after the key, and in their replication
/// form a final `AT unix-ms`, the instant their replicas decide at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowArgs {
    pub params: WindowParams,
    pub quantity: i64,
    pub unit: TimeUnit,
    /// The call gives `quantity` back instead of taking it (`REFUND`).
    pub refund: bool,
    /// The call only answers what it would, and changes nothing (`DRYRUN`).
    pub dry_run: bool,
    /// A denied call's units count too, as the INCR recipe counts them (`COUNTDENIED`,
    /// CL.FIXED's alone).
    pub count_denied: bool,
    /// The instant to decide at instead of the server's clock (`AT`).
    pub at_ms: Option<i64>,
    /// CL.WINDOW's cells (`BUCKETS n`): the window of sub-windows instead of the exact one.
    pub buckets: Option<i64>,
}

/// Parses the arguments of `CL.THROTTLE` that follow the key.
#[inline(always)]
pub fn throttle(args: &[&[u8]]) -> Result<ThrottleArgs, Error> {
    let [max_burst, count, period, tail @ ..] = args else {
        return Err(Error::WrongArity("cl.throttle"));
    };
    let tail = tail_of(tail, "cl.throttle", false)?;
    throttle_params(max_burst, count, period, tail)
}

/// `max_burst count period`, with this tail.
#[inline(always)]
pub(crate) fn throttle_params(
    max_burst: &[u8],
    count: &[u8],
    period: &[u8],
    tail: Tail,
) -> Result<ThrottleArgs, Error> {
    let max_burst = integer(max_burst, "max_burst", 0)?;
    let count = integer(count, "count", 1)?;
    let period = integer(period, "period", 1)?;
    let period_ns = period
        .checked_mul(tail.unit.nanos())
        .ok_or(Error::TooLarge("period"))?;
    Ok(ThrottleArgs {
        params: ThrottleParams {
            max_burst,
            count,
            period_ns,
        },
        quantity: tail.quantity,
        unit: tail.unit,
        refund: tail.refund,
        dry_run: tail.dry_run,
    })
}

/// Parses the arguments of `CL.FIXED` that follow the key, including the `AT unix-ms` its
/// replication form carries.
#[inline(always)]
pub fn fixed(args: &[&[u8]]) -> Result<WindowArgs, Error> {
    window_args(args, "cl.fixed", WindowKind::Fixed)
}

/// Parses the arguments of `CL.WINDOW` that follow the key, including the `AT unix-ms` its
/// replication form carries.
#[inline(always)]
pub fn window(args: &[&[u8]]) -> Result<WindowArgs, Error> {
    window_args(args, "cl.window", WindowKind::Sliding)
}

/// Which window command's arguments are read: CL.FIXED's take `COUNTDENIED`, CL.WINDOW's
/// `BUCKETS n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WindowKind {
    Fixed,
    Sliding,
}

/// A window command's arguments.
#[inline(always)]
fn window_args(
    args: &[&[u8]],
    command: &'static str,
    kind: WindowKind,
) -> Result<WindowArgs, Error> {
    match args {
        [rest @ .., keyword, at] if keyword.eq_ignore_ascii_case(b"AT") => {
            window_params(rest, Some(instant_ms(at)?), command, kind)
        }
        _ => window_params(args, None, command, kind),
    }
}

/// `limit period [quantity] [MS] [REFUND] [DRYRUN] [COUNTDENIED]`, or for CL.WINDOW
/// `limit period [quantity] [BUCKETS n] [MS] [REFUND] [DRYRUN]`.
#[inline(always)]
fn window_params(
    args: &[&[u8]],
    at_ms: Option<i64>,
    command: &'static str,
    kind: WindowKind,
) -> Result<WindowArgs, Error> {
    let [limit, period, tail @ ..] = args else {
        return Err(Error::WrongArity(command));
    };
    let (tail, buckets) = match kind {
        WindowKind::Fixed => (tail_of(tail, command, true)?, None),
        WindowKind::Sliding => sliding_tail(tail, command)?,
    };
    let mut args = limit_and_period(limit, period, tail)?;
    args.at_ms = at_ms;
    args.buckets = buckets
        .map(|n| bucket_count(n, args.params.period_ms))
        .transpose()?;
    Ok(args)
}

/// CL.WINDOW's tail: the single-key commands' tail, with `BUCKETS n` among its flags. Returns
/// n's text, read once the period is known.
#[inline(always)]
fn sliding_tail<'a>(
    tail: &[&'a [u8]],
    command: &'static str,
) -> Result<(Tail, Option<&'a [u8]>), Error> {
    // A plain call names no flag, and pays nothing for looking for this one. Most calls that
    // name the cells name them last, once: what comes before is an ordinary tail.
    let at = match tail {
        [] => None,
        [quantity] if quantity.first().is_some_and(u8::is_ascii_digit) => None,
        [rest @ .., keyword, n]
            if is_buckets(keyword) && rest.len() <= 4 && !rest.iter().any(|w| is_buckets(w)) =>
        {
            return Ok((tail_of(rest, command, false)?, Some(n)));
        }
        _ => tail.iter().position(|word| is_buckets(word)),
    };
    let Some(at) = at else {
        return Ok((tail_of(tail, command, false)?, None));
    };
    // A quantity, the three flags, and BUCKETS with its value.
    if tail.len() > 1 + FLAGS.len() - 1 + 2 {
        return Err(Error::WrongArity(command));
    }
    let n = *tail.get(at + 1).ok_or(Error::Syntax)?;
    let mut rest = [&[][..]; 6];
    let mut len = 0;
    for (slot, word) in rest
        .iter_mut()
        .zip(tail.iter().take(at).chain(tail.iter().skip(at + 2)))
    {
        *slot = word;
        len += 1;
    }
    let rest = rest.get(..len).unwrap_or_default();
    // The quantity comes first: BUCKETS n before it is out of place.
    if at == 0 && rest.first().is_some_and(|word| Flag::of(word).is_none()) {
        return Err(Error::Syntax);
    }
    Ok((flagged_tail(rest, command, false)?, Some(n)))
}

fn is_buckets(word: &[u8]) -> bool {
    word.eq_ignore_ascii_case(b"BUCKETS")
}

/// The fewest and the most cells `BUCKETS n` cuts a window into.
pub const MIN_CELLS: i64 = 2;
pub const MAX_CELLS: i64 = 1024;

/// `BUCKETS n`'s count of cells, which must cut the period into whole milliseconds.
pub(crate) fn bucket_count(text: &[u8], period_ms: i64) -> Result<i64, Error> {
    let n = integer(text, "BUCKETS", MIN_CELLS)?;
    if n > MAX_CELLS {
        return Err(Error::AboveMaximum {
            arg: "BUCKETS",
            max: MAX_CELLS,
        });
    }
    if period_ms % n != 0 {
        return Err(Error::PeriodNotCut);
    }
    Ok(n)
}

/// Whether a CL.ALL WINDOW limiter's parameters go on with `BUCKETS n`, at this word.
pub(crate) fn names_buckets(word: Option<&&[u8]>) -> bool {
    word.is_some_and(|word| is_buckets(word))
}

/// `limit period`, with this tail.
#[inline(always)]
pub(crate) fn limit_and_period(
    limit: &[u8],
    period: &[u8],
    tail: Tail,
) -> Result<WindowArgs, Error> {
    Ok(WindowArgs {
        params: WindowParams {
            limit: integer(limit, "limit", 1)?,
            period_ms: span_ms(period, "period", tail.unit)?,
        },
        quantity: tail.quantity,
        unit: tail.unit,
        refund: tail.refund,
        dry_run: tail.dry_run,
        count_denied: tail.count_denied,
        at_ms: None,
        buckets: None,
    })
}

/// A concurrency limit's parameters: `limit lease_time`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseParams {
    pub limit: i64,
    /// The lease time converted to milliseconds.
    pub lease_ms: i64,
}

/// `CL.LEASE key limit lease_time holder [MS] [DRYRUN] [BLOCK timeout]`, after the key,
/// and in its replication form `AT unix-ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseArgs<'a> {
    pub params: LeaseParams,
    pub holder: &'a [u8],
    pub unit: TimeUnit,
    /// Where `MS` is among the arguments after the key, if given.
    pub ms_at: Option<usize>,
    pub at_ms: Option<i64>,
    pub block_ms: Option<i64>,
    /// The call only answers what it would, and changes nothing (`DRYRUN`).
    pub dry_run: bool,
}

/// Parses the arguments of `CL.LEASE` that follow the key. The holder is always the third,
/// so a holder named like a keyword (`MS`, `BLOCK`) is still the holder; the options after it
/// come in any order, each once.
pub fn lease<'a>(args: &[&'a [u8]]) -> Result<LeaseArgs<'a>, Error> {
    const COMMAND: &str = "cl.lease";
    let [limit, lease_time, holder, options @ ..] = args else {
        return Err(Error::WrongArity(COMMAND));
    };
    let (mut ms_at, mut at_at, mut block_at, mut dry_run_at) = (None, None, None, None);
    let mut at = 0;
    while let Some(option) = options.get(at) {
        let (seen, takes_value) = if is_ms(option) {
            Some((&mut ms_at, false))
        } else if is_dry_run(option) {
            Some((&mut dry_run_at, false))
        } else if option.eq_ignore_ascii_case(b"AT") {
            Some((&mut at_at, true))
        } else if option.eq_ignore_ascii_case(b"BLOCK") {
            Some((&mut block_at, true))
        } else {
            None
        }
        .filter(|(seen, takes_value)| seen.is_none() && (!takes_value || at + 1 < options.len()))
        .ok_or(Error::BadOption {
            command: COMMAND,
            // Counted as the server counts arguments: the key is the first.
            position: 5 + at,
        })?;
        *seen = Some(at);
        at += 1 + usize::from(takes_value);
    }
    let unit = unit_of(ms_at.is_some());
    let params = lease_params(limit, lease_time, unit)?;
    // An option's value follows its keyword.
    let value = |at: Option<usize>| at.and_then(|at| options.get(at + 1).copied());
    let holder = holder_name(holder)?;
    let at_ms = value(at_at).map(instant_ms).transpose()?;
    let block_ms = value(block_at).map(block_timeout).transpose()?;
    // After every value, as the other commands check it.
    never_waits(block_ms, false, dry_run_at.is_some(), false)?;
    Ok(LeaseArgs {
        params,
        holder,
        unit,
        // The options follow the three parameters.
        ms_at: ms_at.map(|at| at + 3),
        at_ms,
        block_ms,
        dry_run: dry_run_at.is_some(),
    })
}

/// The shape of CL.SMOOTH's limiter: Guava's `SmoothBursty`, which stores up to `burst` of
/// unused time as permits that cost nothing, or `SmoothWarmingUp`, whose stored permits cost
/// more the colder it is. Spans are in the call's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmoothShape {
    Bursty { burst: i64 },
    WarmingUp { warmup: i64, cold: i64 },
}

/// A smooth limiter's parameters: `permits` per `period`, in `unit`, of this shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmoothParams {
    pub permits: i64,
    pub period: i64,
    pub unit: TimeUnit,
    pub shape: SmoothShape,
}

/// `CL.SMOOTH key permits period [quantity] [MS] [BURST span] [WARMUP span [COLD factor]]
/// [DRYRUN] [BLOCK timeout]`, after the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmoothArgs {
    pub params: SmoothParams,
    /// Guava's `int` permits: at most `MAX_SMOOTH_QUANTITY`.
    pub quantity: i64,
    pub dry_run: bool,
    pub block_ms: Option<i64>,
}

/// The most permits one CL.SMOOTH call asks for: Guava's `int`.
pub const MAX_SMOOTH_QUANTITY: i64 = i32::MAX as i64;

/// The default `BURST`, Guava's `maxBurstSeconds` of `RateLimiter.create`: one second.
const DEFAULT_BURST_SECONDS: i64 = 1;

/// The default `COLD` factor, Guava's.
const DEFAULT_COLD: i64 = 3;

/// The options a CL.SMOOTH call names, as their texts (a flag's is its keyword).
#[derive(Default)]
struct SmoothOptions<'a> {
    ms: Option<&'a [u8]>,
    dry_run: Option<&'a [u8]>,
    burst: Option<&'a [u8]>,
    warmup: Option<&'a [u8]>,
    cold: Option<&'a [u8]>,
    block: Option<&'a [u8]>,
}

/// Parses the arguments of `CL.SMOOTH` that follow the key: an optional quantity, then the
/// options in any order, each once. REFUND is refused by name: a smooth limiter reserves
/// instants, and has no units to give back.
pub fn smooth(args: &[&[u8]]) -> Result<SmoothArgs, Error> {
    const COMMAND: &str = "cl.smooth";
    let [permits, period, rest @ ..] = args else {
        return Err(Error::WrongArity(COMMAND));
    };
    let (quantity, words) = match rest {
        [quantity, words @ ..] if quantity.first().is_some_and(u8::is_ascii_digit) => {
            (Some(*quantity), words)
        }
        _ => (None, rest),
    };
    // Counted as the server counts arguments: the key is the first.
    let first_option = 4 + usize::from(quantity.is_some());
    let mut options = SmoothOptions::default();
    let mut at = 0;
    while let Some(option) = words.get(at) {
        if is_refund(option) {
            return Err(Error::NoRefund(COMMAND));
        }
        let (seen, takes_value) = if is_ms(option) {
            Some((&mut options.ms, false))
        } else if is_dry_run(option) {
            Some((&mut options.dry_run, false))
        } else if option.eq_ignore_ascii_case(b"BURST") {
            Some((&mut options.burst, true))
        } else if option.eq_ignore_ascii_case(b"WARMUP") {
            Some((&mut options.warmup, true))
        } else if option.eq_ignore_ascii_case(b"COLD") {
            Some((&mut options.cold, true))
        } else if option.eq_ignore_ascii_case(b"BLOCK") {
            Some((&mut options.block, true))
        } else {
            None
        }
        .filter(|(seen, takes_value)| seen.is_none() && (!takes_value || at + 1 < words.len()))
        .ok_or(Error::BadOption {
            command: COMMAND,
            position: first_option + at,
        })?;
        *seen = words.get(at + usize::from(takes_value)).copied();
        at += 1 + usize::from(takes_value);
    }
    smooth_args(permits, period, quantity, &options)
}

/// CL.SMOOTH's values, once the shape of the call is known to be right.
#[inline(always)]
fn smooth_args(
    permits: &[u8],
    period: &[u8],
    quantity: Option<&[u8]>,
    options: &SmoothOptions,
) -> Result<SmoothArgs, Error> {
    let unit = unit_of(options.ms.is_some());
    let permits = integer(permits, "permits", 1)?;
    let period = span(period, "period", unit)?;
    let quantity = match quantity {
        Some(text) => integer(text, "quantity", 0)?,
        None => 1,
    };
    if quantity > MAX_SMOOTH_QUANTITY {
        return Err(Error::AboveMaximum {
            arg: "quantity",
            max: MAX_SMOOTH_QUANTITY,
        });
    }
    let shape = match (options.burst, options.warmup, options.cold) {
        (Some(_), Some(_), _) => return Err(Error::BurstAndWarmup),
        (_, None, Some(_)) => return Err(Error::ColdWithoutWarmup),
        (burst, None, None) => SmoothShape::Bursty {
            burst: match burst {
                Some(text) => span(text, "BURST", unit)?,
                None => DEFAULT_BURST_SECONDS * unit_per_second(unit),
            },
        },
        (None, Some(warmup), cold) => SmoothShape::WarmingUp {
            warmup: span(warmup, "WARMUP", unit)?,
            cold: cold.map_or(Ok(DEFAULT_COLD), |cold| integer(cold, "COLD", 1))?,
        },
    };
    let block_ms = options.block.map(block_timeout).transpose()?;
    let dry_run = options.dry_run.is_some();
    never_waits(block_ms, false, dry_run, false)?;
    Ok(SmoothArgs {
        params: SmoothParams {
            permits,
            period,
            unit,
            shape,
        },
        quantity,
        dry_run,
        block_ms,
    })
}

/// A span of at least one `unit`, kept in that unit, within what the limiters can look ahead.
fn span(text: &[u8], arg: &'static str, unit: TimeUnit) -> Result<i64, Error> {
    let span = integer(text, arg, 1)?;
    span.checked_mul(unit.nanos())
        .filter(|&ns| ns <= MAX_SPAN_NS)
        .map(|_| span)
        .ok_or(Error::TooLarge(arg))
}

/// How many of `unit` make a second.
fn unit_per_second(unit: TimeUnit) -> i64 {
    MILLIS_PER_SECOND / unit.millis()
}

/// `CL.RELEASE key holder`, after the key: the holder, and in the replication form the
/// instant (`AT unix-ms`). It never waits: BLOCK is refused by name.
pub fn release<'a>(args: &[&'a [u8]]) -> Result<(&'a [u8], Option<i64>), Error> {
    const COMMAND: &str = "cl.release";
    let [holder, options @ ..] = args else {
        return Err(Error::WrongArity(COMMAND));
    };
    let holder = holder_name(holder)?;
    match options {
        [] => Ok((holder, None)),
        [keyword, at] if keyword.eq_ignore_ascii_case(b"AT") => Ok((holder, Some(instant_ms(at)?))),
        _ if options
            .iter()
            .step_by(2)
            .any(|word| word.eq_ignore_ascii_case(b"BLOCK")) =>
        {
            Err(Error::NoBlock(COMMAND))
        }
        // After the key and the holder: past `AT unix-ms`, if that is how it starts.
        [keyword, _, ..] if keyword.eq_ignore_ascii_case(b"AT") => Err(Error::BadOption {
            command: COMMAND,
            position: 5,
        }),
        _ => Err(Error::BadOption {
            command: COMMAND,
            position: 3,
        }),
    }
}

/// `CL.HOLDERS key [MS]`, after the key: the unit of the times left.
pub fn holders(args: &[&[u8]]) -> Result<TimeUnit, Error> {
    match args {
        [] => Ok(TimeUnit::Seconds),
        [unit] if is_ms(unit) => Ok(TimeUnit::Milliseconds),
        [_] => Err(Error::BadOption {
            command: "cl.holders",
            position: 2,
        }),
        _ => Err(Error::WrongArity("cl.holders")),
    }
}

/// `limit lease_time`, in this unit.
pub(crate) fn lease_params(
    limit: &[u8],
    lease_time: &[u8],
    unit: TimeUnit,
) -> Result<LeaseParams, Error> {
    Ok(LeaseParams {
        limit: integer(limit, "limit", 1)?,
        lease_ms: span_ms(lease_time, "lease_time", unit)?,
    })
}

/// A span of time of at least one `unit`, in milliseconds, within what the limiters can look
/// ahead.
fn span_ms(text: &[u8], arg: &'static str, unit: TimeUnit) -> Result<i64, Error> {
    // Within 2^62 ns, so in milliseconds too.
    Ok(span(text, arg, unit)? * unit.millis())
}

/// The instant a replayed command carries (`AT unix-ms`): its nanoseconds within the span
/// every other time is held to, so that no instant plus a period can overflow.
fn instant_ms(text: &[u8]) -> Result<i64, Error> {
    let ms = integer(text, "AT", 0)?;
    ms.checked_mul(NANOS_PER_MILLI)
        .filter(|&ns| ns <= MAX_SPAN_NS)
        .map(|_| ms)
        .ok_or(Error::TooLarge("AT"))
}

/// A holder's name: 1 to 255 bytes, any bytes.
pub(crate) fn holder_name(holder: &[u8]) -> Result<&[u8], Error> {
    if (1..=MAX_HOLDER).contains(&holder.len()) {
        Ok(holder)
    } else {
        Err(Error::HolderLength)
    }
}

/// The longest holder name.
pub const MAX_HOLDER: usize = 255;

/// The longest BLOCK timeout, in milliseconds: the span a limiter may look ahead.
pub const MAX_BLOCK_MS: i64 = MAX_SPAN_NS / NANOS_PER_MILLI;

/// Splits a trailing `BLOCK timeout` off a single-key command's arguments: the
/// arguments before it, and the timeout (0 waits as long as it takes).
#[inline(always)]
pub fn block<'a, 'b>(args: &'a [&'b [u8]]) -> Result<(&'a [&'b [u8]], Option<i64>), Error> {
    match args {
        [rest @ .., keyword, timeout] if keyword.eq_ignore_ascii_case(b"BLOCK") => {
            Ok((rest, Some(block_timeout(timeout)?)))
        }
        _ => Ok((args, None)),
    }
}

pub(crate) fn block_timeout(text: &[u8]) -> Result<i64, Error> {
    let timeout = integer(text, "timeout", 0)?;
    if timeout > MAX_BLOCK_MS {
        return Err(Error::AboveMaximum {
            arg: "timeout",
            max: MAX_BLOCK_MS,
        });
    }
    Ok(timeout)
}

/// What the optional tail of a limiter's parameters says, or CL.ALL's options for every
/// limiter: how much, in which unit, taken or given back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tail {
    pub(crate) quantity: i64,
    pub(crate) unit: TimeUnit,
    pub(crate) refund: bool,
    pub(crate) dry_run: bool,
    pub(crate) count_denied: bool,
}

impl Tail {
    /// A call's tail that names nothing: one unit, taken, in seconds.
    const PLAIN: Tail = Tail {
        quantity: 1,
        unit: TimeUnit::Seconds,
        refund: false,
        dry_run: false,
        count_denied: false,
    };
}

/// Seconds, or milliseconds with `MS`.
pub(crate) fn unit_of(ms: bool) -> TimeUnit {
    if ms {
        TimeUnit::Milliseconds
    } else {
        TimeUnit::Seconds
    }
}

/// The single-key commands' tail, `[quantity] [MS] [REFUND] [DRYRUN]`, and `[COUNTDENIED]`
/// where the command `counts_denied`: a quantity first if any, then the flags in any order,
/// each once.
#[inline(always)]
fn tail_of(tail: &[&[u8]], command: &'static str, counts_denied: bool) -> Result<Tail, Error> {
    // Most calls name no flag: nothing, or a quantity alone (no flag starts with a digit).
    match tail {
        [] => Ok(Tail::PLAIN),
        [quantity] if quantity.first().is_some_and(u8::is_ascii_digit) => Ok(Tail {
            quantity: integer(quantity, "quantity", 0)?,
            ..Tail::PLAIN
        }),
        _ => flagged_tail(tail, command, counts_denied),
    }
}

/// A tail that may name flags.
fn flagged_tail(tail: &[&[u8]], command: &'static str, counts_denied: bool) -> Result<Tail, Error> {
    // COUNTDENIED is the last flag, and only CL.FIXED takes it.
    let flags_taken = FLAGS.len() - usize::from(!counts_denied);
    if tail.len() > 1 + flags_taken {
        return Err(Error::WrongArity(command));
    }
    let (quantity, flags) = match tail {
        [first, flags @ ..] if Flag::of(first).is_none() => (Some(first), flags),
        _ => (None, tail),
    };
    // The shape first, then the quantity's value.
    let mut seen = [false; FLAGS.len()];
    for flag in flags {
        let slot = Flag::of(flag)
            .and_then(|flag| seen.get_mut(flag as usize))
            .filter(|seen| !**seen)
            .ok_or(Error::Syntax)?;
        *slot = true;
    }
    let quantity = quantity.map_or(Ok(1), |quantity| integer(quantity, "quantity", 0))?;
    let [ms, refund, dry_run, count_denied] = seen;
    if count_denied && !counts_denied {
        return Err(Error::Syntax);
    }
    Ok(Tail {
        quantity,
        unit: unit_of(ms),
        refund,
        dry_run,
        count_denied,
    })
}

/// The flags a limiter's parameters may be followed by, in any order, each once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flag {
    Ms,
    Refund,
    DryRun,
    CountDenied,
}

/// In the order of `Flag`'s variants, which index what a tail has seen.
const FLAGS: [(&[u8], Flag); 4] = [
    (b"MS", Flag::Ms),
    (b"REFUND", Flag::Refund),
    (b"DRYRUN", Flag::DryRun),
    (b"COUNTDENIED", Flag::CountDenied),
];

impl Flag {
    fn of(arg: &[u8]) -> Option<Flag> {
        FLAGS
            .iter()
            .find_map(|&(name, flag)| arg.eq_ignore_ascii_case(name).then_some(flag))
    }
}

/// A refund, a dry run and a call that counts its denial never wait: BLOCK with any of them
/// is refused, as the server refuses options that contradict each other, naming the first
/// the call gave. A call without BLOCK looks at nothing else.
#[inline(always)]
pub fn never_waits(
    block_ms: Option<i64>,
    refund: bool,
    dry_run: bool,
    count_denied: bool,
) -> Result<(), Error> {
    if block_ms.is_none() {
        return Ok(());
    }
    match (refund, dry_run, count_denied) {
        (true, _, _) => Err(Error::NeverWaits("REFUND")),
        (_, true, _) => Err(Error::NeverWaits("DRYRUN")),
        (_, _, true) => Err(Error::NeverWaits("COUNTDENIED")),
        _ => Ok(()),
    }
}

impl ThrottleArgs {
    /// Refuses BLOCK beside a flag that never waits.
    #[inline(always)]
    pub fn never_waits(&self, block_ms: Option<i64>) -> Result<(), Error> {
        never_waits(block_ms, self.refund, self.dry_run, false)
    }
}

impl WindowArgs {
    /// Refuses BLOCK beside a flag that never waits.
    #[inline(always)]
    pub fn never_waits(&self, block_ms: Option<i64>) -> Result<(), Error> {
        never_waits(block_ms, self.refund, self.dry_run, self.count_denied)
    }
}

pub(crate) fn is_refund(arg: &[u8]) -> bool {
    Flag::of(arg) == Some(Flag::Refund)
}

pub(crate) fn is_dry_run(arg: &[u8]) -> bool {
    Flag::of(arg) == Some(Flag::DryRun)
}

pub(crate) fn is_ms(arg: &[u8]) -> bool {
    Flag::of(arg) == Some(Flag::Ms)
}

/// An integer argument no smaller than `min`.
pub(crate) fn integer(text: &[u8], arg: &'static str, min: i64) -> Result<i64, Error> {
    let value = parse_i64(text).ok_or(Error::NotAnInteger(arg))?;
    if value < min {
        return Err(Error::BelowMinimum { arg, min });
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NANOS_PER_SECOND;

    fn throttle_of(args: &[&str]) -> Result<ThrottleArgs, Error> {
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        throttle(&bytes)
    }

    #[test]
    fn non_utf8_arguments_are_rejected_not_misread() {
        assert_eq!(
            throttle(&[b"1", &[0xc3, 0x28], b"60"]),
            Err(Error::NotAnInteger("count"))
        );
    }

    #[test]
    fn the_tail_is_quantity_then_an_optional_ms() {
        let plain = throttle_of(&["15", "30", "60"]).unwrap();
        assert_eq!((plain.quantity, plain.unit), (1, TimeUnit::Seconds));
        assert_eq!(plain.params.period_ns, 60 * NANOS_PER_SECOND);

        let ms = throttle_of(&["15", "30", "60", "ms"]).unwrap();
        assert_eq!((ms.quantity, ms.unit), (1, TimeUnit::Milliseconds));
        assert_eq!(ms.params.period_ns, 60 * NANOS_PER_MILLI);

        let both = throttle_of(&["15", "30", "60", "0", "MS"]).unwrap();
        assert_eq!((both.quantity, both.unit), (0, TimeUnit::Milliseconds));

        assert_eq!(
            throttle_of(&["15", "30", "60", "2", "SECONDS"]),
            Err(Error::Syntax)
        );
        assert_eq!(
            throttle_of(&["15", "30", "60", "MS", "2"]),
            Err(Error::Syntax)
        );
        assert_eq!(
            throttle_of(&["15", "30", "60", "soon"]),
            Err(Error::NotAnInteger("quantity"))
        );
    }

    #[test]
    fn arity_is_checked_before_values() {
        assert_eq!(
            throttle_of(&["15", "30"]),
            Err(Error::WrongArity("cl.throttle"))
        );
        assert_eq!(
            throttle_of(&["x", "30", "60", "1", "MS", "REFUND", "DRYRUN", "extra"]),
            Err(Error::WrongArity("cl.throttle"))
        );
        assert_eq!(fixed(&[b"1"]), Err(Error::WrongArity("cl.fixed")));
        assert_eq!(
            window(&[b"1", b"1", b"1", b"MS", b"AT", b"5", b"x"]),
            Err(Error::WrongArity("cl.window"))
        );
    }

    #[test]
    fn each_bad_value_names_its_argument() {
        assert_eq!(
            throttle_of(&["-1", "30", "60"]),
            Err(Error::BelowMinimum {
                arg: "max_burst",
                min: 0
            })
        );
        assert_eq!(
            throttle_of(&["1", "0", "60"]),
            Err(Error::BelowMinimum {
                arg: "count",
                min: 1
            })
        );
        assert_eq!(
            throttle_of(&["1", "1", "0"]),
            Err(Error::BelowMinimum {
                arg: "period",
                min: 1
            })
        );
        assert_eq!(
            throttle_of(&["1", "1", "1", "-1"]),
            Err(Error::BelowMinimum {
                arg: "quantity",
                min: 0
            })
        );
        assert_eq!(
            throttle_of(&["1", "1", "9223372036854775807"]),
            Err(Error::TooLarge("period"))
        );
        assert_eq!(
            window(&[b"0", b"10"]),
            Err(Error::BelowMinimum {
                arg: "limit",
                min: 1
            })
        );
        assert_eq!(
            window(&[b"5", b"9223372036854775807"]),
            Err(Error::TooLarge("period"))
        );
    }

    #[test]
    fn window_periods_are_in_milliseconds() {
        let seconds = fixed(&[b"5", b"60"]).unwrap();
        assert_eq!(seconds.params.period_ms, 60_000);
        let millis = fixed(&[b"5", b"60", b"MS"]).unwrap();
        assert_eq!(millis.params.period_ms, 60);
    }

    #[test]
    fn the_window_commands_take_an_instant() {
        let replicated = window(&[b"5", b"60", b"2", b"MS", b"AT", b"1700000000000"]).unwrap();
        assert_eq!(replicated.at_ms, Some(1_700_000_000_000));
        assert_eq!(
            (replicated.quantity, replicated.unit),
            (2, TimeUnit::Milliseconds)
        );
        let short = window(&[b"5", b"60", b"at", b"17"]).unwrap();
        assert_eq!((short.quantity, short.at_ms), (1, Some(17)));
        assert_eq!(window(&[b"5", b"60"]).unwrap().at_ms, None);
        assert_eq!(
            window(&[b"5", b"60", b"AT", b"-1"]),
            Err(Error::BelowMinimum { arg: "AT", min: 0 })
        );
        assert_eq!(fixed(&[b"5", b"60", b"AT", b"17"]).unwrap().at_ms, Some(17));
        // Past the span every time is held to: an instant plus a period could overflow.
        assert_eq!(
            fixed(&[b"5", b"60", b"AT", b"9223372036854775807"]),
            Err(Error::TooLarge("AT"))
        );
        assert_eq!(
            throttle(&[b"0", b"5", b"60", b"AT", b"17"]),
            Err(Error::Syntax)
        );
    }

    #[test]
    fn refund_is_a_flag_in_the_tail_in_any_order_once() {
        let refund = throttle_of(&["15", "30", "60", "2", "REFUND"]).unwrap();
        assert_eq!((refund.quantity, refund.refund), (2, true));
        let both = throttle_of(&["15", "30", "60", "refund", "ms"]).unwrap();
        assert_eq!(
            (both.quantity, both.unit, both.refund),
            (1, TimeUnit::Milliseconds, true)
        );
        let all_three = throttle_of(&["15", "30", "60", "3", "MS", "REFUND"]).unwrap();
        assert_eq!((all_three.quantity, all_three.refund), (3, true));
        assert!(!throttle_of(&["15", "30", "60", "3"]).unwrap().refund);
        let replicated = fixed(&words("5 60 2 REFUND AT 17")).unwrap();
        assert_eq!(
            (replicated.quantity, replicated.refund, replicated.at_ms),
            (2, true, Some(17))
        );
        for (tail, error) in [
            ("REFUND REFUND", Error::Syntax),
            ("1 REFUND REFUND", Error::Syntax),
            ("REFUND 2", Error::Syntax),
            ("x REFUND", Error::NotAnInteger("quantity")),
            ("1 MS REFUND x", Error::Syntax),
            ("1 MS REFUND DRYRUN x", Error::WrongArity("cl.window")),
            ("DRYRUN DRYRUN", Error::Syntax),
        ] {
            let args: Vec<&[u8]> = words("5 60").into_iter().chain(words(tail)).collect();
            assert_eq!(window(&args), Err(error), "{tail}");
        }
        assert_eq!(
            never_waits(Some(0), true, false, false),
            Err(Error::NeverWaits("REFUND"))
        );
        assert_eq!(never_waits(None, true, true, false), Ok(()));
        assert_eq!(never_waits(Some(0), false, false, false), Ok(()));
        assert_eq!(
            never_waits(Some(5), false, true, false),
            Err(Error::NeverWaits("DRYRUN"))
        );
    }

    #[test]
    fn the_plain_tail_reads_as_the_flagged_one() {
        for word in [
            &b"0"[..],
            b"1",
            b"07",
            b"5x",
            b"9223372036854775807",
            b"9223372036854775808",
            b"1.5",
            b"",
            b"-1",
            b"+1",
            b"MS",
            b"REFUND",
            b"DRYRUN",
            b"COUNTDENIED",
            b"x",
        ] {
            for counts_denied in [false, true] {
                assert_eq!(
                    tail_of(&[word], "cl.fixed", counts_denied),
                    flagged_tail(&[word], "cl.fixed", counts_denied),
                    "{word:?}"
                );
            }
        }
        assert_eq!(
            tail_of(&[], "cl.fixed", true),
            flagged_tail(&[], "cl.fixed", true)
        );
    }

    #[test]
    fn countdenied_is_cl_fixed_s_alone_and_never_waits() {
        let fixed_of = |text| fixed(&words(text));
        let parsed = fixed_of("5 60 2 COUNTDENIED MS").unwrap();
        assert!(parsed.count_denied && parsed.quantity == 2 && parsed.params.period_ms == 60);
        assert!(!fixed_of("5 60 2").unwrap().count_denied);
        assert_eq!(fixed_of("5 60 COUNTDENIED countdenied"), Err(Error::Syntax));
        assert_eq!(window(&words("5 60 COUNTDENIED")), Err(Error::Syntax));
        assert_eq!(throttle(&words("1 5 60 COUNTDENIED")), Err(Error::Syntax));
        let all_flags = fixed_of("5 60 1 MS REFUND DRYRUN COUNTDENIED").unwrap();
        assert_eq!(
            all_flags.never_waits(Some(10)),
            Err(Error::NeverWaits("REFUND"))
        );
        let counting = fixed_of("5 60 COUNTDENIED").unwrap();
        assert_eq!(
            counting.never_waits(Some(0)),
            Err(Error::NeverWaits("COUNTDENIED"))
        );
        assert_eq!(counting.never_waits(None), Ok(()));
        assert_eq!(
            fixed_of("5 60 1 MS REFUND DRYRUN COUNTDENIED x"),
            Err(Error::WrongArity("cl.fixed"))
        );
    }

    #[test]
    fn buckets_is_a_window_option_in_any_order_once() {
        let parsed = window(&words("5 60 2 BUCKETS 30 MS")).unwrap();
        assert_eq!(
            (parsed.buckets, parsed.quantity, parsed.unit),
            (Some(30), 2, TimeUnit::Milliseconds)
        );
        let parsed = window(&words("5 60 refund buckets 4 AT 17")).unwrap();
        assert_eq!(
            (parsed.buckets, parsed.refund, parsed.at_ms),
            (Some(4), true, Some(17))
        );
        assert_eq!(window(&words("5 60 BUCKETS 60")).unwrap().buckets, Some(60));
        assert_eq!(window(&words("5 60 3")).unwrap().buckets, None);
        let all = window(&words("5 60 1 BUCKETS 2 MS REFUND DRYRUN")).unwrap();
        assert_eq!(all.buckets, Some(2));
        for (args, error) in [
            ("5 60 BUCKETS", Error::Syntax),
            ("5 60 BUCKETS 4 BUCKETS 4", Error::Syntax),
            ("5 60 BUCKETS 4 3", Error::Syntax),
            ("5 60 MS BUCKETS", Error::Syntax),
            (
                "5 60 1 BUCKETS 2 MS REFUND DRYRUN x",
                Error::WrongArity("cl.window"),
            ),
            ("5 60 BUCKETS x", Error::NotAnInteger("BUCKETS")),
            (
                "5 60 BUCKETS 1",
                Error::BelowMinimum {
                    arg: "BUCKETS",
                    min: 2,
                },
            ),
            (
                "5 60 BUCKETS 1025",
                Error::AboveMaximum {
                    arg: "BUCKETS",
                    max: 1024,
                },
            ),
            ("5 60 BUCKETS 7", Error::PeriodNotCut),
            ("5 10 MS BUCKETS 3", Error::PeriodNotCut),
            ("5 10 x BUCKETS 2", Error::NotAnInteger("quantity")),
        ] {
            assert_eq!(window(&words(args)), Err(error), "{args}");
        }
        // CL.FIXED has no cells.
        assert_eq!(fixed(&words("5 60 BUCKETS 4")), Err(Error::Syntax));
        // The plain forms read as the same words among flags do.
        for tail in [
            "BUCKETS 4",
            "3 BUCKETS 4",
            "0 BUCKETS 4",
            "x BUCKETS 4",
            "-1 BUCKETS 4",
        ] {
            let plain = window(&words(&format!("5 60 {tail}")));
            let flagged = window(&words(&format!("5 60 {tail} DRYRUN"))).map(|args| WindowArgs {
                dry_run: false,
                ..args
            });
            assert_eq!(plain, flagged, "{tail}");
        }
    }

    #[test]
    fn the_flags_table_follows_the_flags_order() {
        for (index, (name, flag)) in FLAGS.iter().enumerate() {
            assert_eq!(*flag as usize, index);
            assert_eq!(Flag::of(name), Some(*flag));
        }
    }

    fn words(args: &str) -> Vec<&[u8]> {
        args.split(' ').map(str::as_bytes).collect()
    }

    #[test]
    fn the_holder_is_the_third_argument_whatever_it_is_called() {
        let parsed = lease(&words("3 30 MS")).unwrap();
        assert_eq!(parsed.holder, b"MS");
        assert_eq!((parsed.unit, parsed.ms_at), (TimeUnit::Seconds, None));
        assert_eq!(parsed.params.lease_ms, 30_000);
        let parsed = lease(&words("3 30 BLOCK BLOCK 100 ms")).unwrap();
        assert_eq!(parsed.holder, b"BLOCK");
        assert_eq!((parsed.block_ms, parsed.ms_at), (Some(100), Some(5)));
        assert_eq!(parsed.params.lease_ms, 30);
        let parsed = lease(&words("3 30 AT MS AT 17")).unwrap();
        assert_eq!((parsed.holder, parsed.at_ms), (&b"AT"[..], Some(17)));
        assert_eq!(parsed.ms_at, Some(3));
    }

    #[test]
    fn lease_and_release_name_what_is_wrong() {
        for (args, error) in [
            ("3 30", Error::WrongArity("cl.lease")),
            (
                "0 30 h",
                Error::BelowMinimum {
                    arg: "limit",
                    min: 1,
                },
            ),
            (
                "3 0 h",
                Error::BelowMinimum {
                    arg: "lease_time",
                    min: 1,
                },
            ),
            ("3 x h", Error::NotAnInteger("lease_time")),
            ("3 9223372036854775807 h", Error::TooLarge("lease_time")),
            ("3 30 ", Error::HolderLength),
            (
                "3 30 h MS MS",
                Error::BadOption {
                    command: "cl.lease",
                    position: 6,
                },
            ),
            (
                "3 30 h BLOCK",
                Error::BadOption {
                    command: "cl.lease",
                    position: 5,
                },
            ),
            (
                "3 30 h 5",
                Error::BadOption {
                    command: "cl.lease",
                    position: 5,
                },
            ),
            (
                "3 30 h BLOCK -1",
                Error::BelowMinimum {
                    arg: "timeout",
                    min: 0,
                },
            ),
        ] {
            assert_eq!(lease(&words(args)).map(|_| ()), Err(error), "{args}");
        }
        let long = vec![b'x'; 256];
        assert_eq!(
            lease(&[b"3", b"30", &long]).map(|_| ()),
            Err(Error::HolderLength)
        );
        assert!(lease(&[b"3", b"30", &long[..255]]).is_ok());

        assert_eq!(release(&words("h")), Ok((&b"h"[..], None)));
        assert_eq!(release(&words("BLOCK")), Ok((&b"BLOCK"[..], None)));
        assert_eq!(release(&words("h at 9")), Ok((&b"h"[..], Some(9))));
        assert_eq!(
            release(&words("h BLOCK 100")),
            Err(Error::NoBlock("cl.release"))
        );
        assert_eq!(
            release(&words("h AT 1 BLOCK 5")),
            Err(Error::NoBlock("cl.release"))
        );
        assert_eq!(
            release(&words("h AT 1 AT 2")),
            Err(Error::BadOption {
                command: "cl.release",
                position: 5
            })
        );
        assert_eq!(
            release(&words("h x")),
            Err(Error::BadOption {
                command: "cl.release",
                position: 3
            })
        );
        assert_eq!(release(&[b""]), Err(Error::HolderLength));
        assert_eq!(release(&[]), Err(Error::WrongArity("cl.release")));
    }
}

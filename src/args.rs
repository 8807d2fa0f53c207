//! Each command's arguments, read by the one grammar (grammar.rs): its positional parameters
//! here, in its own types, then its quantity and options by the table. CL.ALL's own grammar,
//! built on these, is in `all_args.rs`.

use crate::command::Command;
use crate::error::Error;
use crate::grammar::params::{self, CalendarUnit, Number};
use crate::grammar::{Given, Opt, Plain, ANY_QUANTITY};
use crate::time::{TimeUnit, MILLIS_PER_SECOND};

pub use crate::grammar::{MAX_BLOCK_MS, MAX_CELLS, MAX_HOLDER, MIN_CELLS};

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

/// `CL.THROTTLE key max_burst count period [quantity] [MS] [REFUND] [DRYRUN]
/// [BLOCK timeout]`, after the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottleArgs {
    pub params: ThrottleParams,
    pub quantity: i64,
    pub unit: TimeUnit,
    /// The call gives `quantity` back instead of taking it (`REFUND`).
    pub refund: bool,
    /// The call only answers what it would, and changes nothing (`DRYRUN`).
    pub dry_run: bool,
    /// `quantity` is the most the call takes: it takes what fits (`ATMOST`).
    pub at_most: bool,
    /// BLOCK's timeout in milliseconds, when the call asked to wait.
    pub block_ms: Option<i64>,
    /// `BAN lockout`, in milliseconds: the key is locked out that long when its limiter denies
    /// the call.
    pub ban_ms: Option<i64>,
}

/// `CL.FIXED` and `CL.WINDOW`: `key limit period [quantity] [BUCKETS n] [MS] [REFUND]
/// [DRYRUN] [COUNTDENIED] [BLOCK timeout]` (BUCKETS CL.WINDOW's alone, COUNTDENIED
/// CL.FIXED's), after the key, and in their replication form `AT unix-ms`, the instant
/// their replicas decide at.
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
    /// How CL.FIXED's windows lie on the clock, in the local time this many minutes ahead
    /// of UTC (`OFFSET`).
    pub laid: Laid,
    pub offset_minutes: i16,
    /// The instant to decide at instead of the server's clock (`AT`).
    pub at_ms: Option<i64>,
    /// CL.WINDOW's cells (`BUCKETS n`): the window of sub-windows instead of the exact one.
    pub buckets: Option<i64>,
    /// BLOCK's timeout in milliseconds, when the call asked to wait.
    pub block_ms: Option<i64>,
    /// Where `BLOCK` is among the arguments after the key, if given.
    pub block_at: Option<usize>,
    /// Where `ATMOST` is among the arguments after the key, if given: `quantity` is the most
    /// the call takes.
    pub at_most_at: Option<usize>,
    /// Whether the call gave its quantity (after the two parameters), or took the default 1.
    pub quantity_given: bool,
    /// `BAN lockout`, in milliseconds.
    pub ban_ms: Option<i64>,
}

/// How a fixed window's windows lie on the clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Laid {
    /// Each opens at its first call.
    FromFirstCall,
    /// On the multiples of the period since the epoch (`ALIGN`).
    Aligned,
    /// On a calendar's units, named in the period's place.
    Calendar(CalendarUnit),
}

/// Positions are counted as the server counts arguments: the command's name is 0, the key 1.
const AFTER_KEY: usize = 2;

/// Parses the arguments of `CL.THROTTLE` that follow the key.
#[inline(always)]
pub fn throttle(args: &[&[u8]]) -> Result<ThrottleArgs, Error> {
    let [max_burst, count, period, words @ ..] = args else {
        return Err(Error::WrongArity("cl.throttle"));
    };
    if let Some(plain) = Plain::of(Command::Throttle, words) {
        let unit = TimeUnit::Seconds;
        let params = throttle_params(max_burst, count, period, unit)?;
        return Ok(ThrottleArgs::plain(
            params,
            plain.quantity(ANY_QUANTITY)?,
            unit,
        ));
    }
    let given = Given::read(Command::Throttle, words, AFTER_KEY + 3)?;
    let unit = given.unit();
    let params = throttle_params(max_burst, count, period, unit)?;
    let values = given.read_values(ANY_QUANTITY, 0)?;
    Ok(ThrottleArgs {
        refund: given.has(Opt::Refund),
        dry_run: given.has(Opt::DryRun),
        at_most: given.has(Opt::AtMost),
        block_ms: values.block_ms,
        ban_ms: values.ban_ms,
        ..ThrottleArgs::plain(params, values.quantity, unit)
    })
}

impl ThrottleArgs {
    /// A call that names no option.
    #[inline(always)]
    pub fn plain(params: ThrottleParams, quantity: i64, unit: TimeUnit) -> ThrottleArgs {
        ThrottleArgs {
            params,
            quantity,
            unit,
            refund: false,
            dry_run: false,
            at_most: false,
            block_ms: None,
            ban_ms: None,
        }
    }
}

impl WindowArgs {
    /// A call that names no option.
    #[inline(always)]
    pub fn plain(params: WindowParams, quantity: i64, unit: TimeUnit) -> WindowArgs {
        WindowArgs {
            params,
            quantity,
            unit,
            refund: false,
            dry_run: false,
            count_denied: false,
            laid: Laid::FromFirstCall,
            offset_minutes: 0,
            at_ms: None,
            buckets: None,
            block_ms: None,
            block_at: None,
            at_most_at: None,
            quantity_given: false,
            ban_ms: None,
        }
    }
}

/// The numbers each command reads, in order, as the grammar's table has them.
const THROTTLE: [Number; 3] = params::numbers(Command::Throttle);
const WINDOW: [Number; 2] = params::numbers(Command::Window);
const LEASE: [Number; 2] = params::numbers(Command::Lease);
const SMOOTH: [Number; 2] = params::numbers(Command::Smooth);
const BAN: [Number; 1] = params::numbers(Command::Ban);

/// `max_burst count period`, in this unit.
#[inline(always)]
pub(crate) fn throttle_params(
    max_burst: &[u8],
    count: &[u8],
    period: &[u8],
    unit: TimeUnit,
) -> Result<ThrottleParams, Error> {
    let [max_burst, count, period] = params::read(&THROTTLE, [max_burst, count, period], unit)?;
    Ok(ThrottleParams {
        max_burst,
        count,
        period_ns: period
            .checked_mul(unit.nanos())
            .ok_or(Error::TooLarge("period"))?,
    })
}

/// Parses the arguments of `CL.FIXED` that follow the key.
pub fn fixed(args: &[&[u8]]) -> Result<WindowArgs, Error> {
    window_args::<true>(args, Command::Fixed)
}

/// Parses the arguments of `CL.WINDOW` that follow the key.
pub fn window(args: &[&[u8]]) -> Result<WindowArgs, Error> {
    window_args::<true>(args, Command::Window)
}

/// A window command's arguments, by a parser that looks for a calendar unit in the period's
/// place (`THOROUGH`), or one that takes every period to be a number: a plain call's body
/// (commands::Run), whose error on a word there has the call run again by a thorough one.
#[inline(always)]
pub fn window_args<const THOROUGH: bool>(
    args: &[&[u8]],
    command: Command,
) -> Result<WindowArgs, Error> {
    let [limit, period, words @ ..] = args else {
        return Err(Error::WrongArity(command.name()));
    };
    // A calendar unit is a word: the plain parser hands it over before reading options that
    // the thorough one would read again.
    if !THOROUGH && command == Command::Fixed && period.first().is_some_and(u8::is_ascii_alphabetic)
    {
        return Err(Error::Thorough);
    }
    // Most calls name no option: they are answered before the option loop.
    if let Some(plain) = Plain::of(command, words) {
        let unit = TimeUnit::Seconds;
        let (params, calendar) = periods::<THOROUGH>(command, limit, period, unit)?;
        return Ok(WindowArgs {
            quantity_given: !words.is_empty(),
            laid: calendar.map_or(Laid::FromFirstCall, Laid::Calendar),
            ..WindowArgs::plain(params, plain.quantity(ANY_QUANTITY)?, unit)
        });
    }
    let given = Given::read(command, words, AFTER_KEY + 2)?;
    let unit = given.unit();
    let (params, calendar) = periods::<THOROUGH>(command, limit, period, unit)?;
    let given = given.on_calendar(calendar.is_some());
    let values = given.read_values(ANY_QUANTITY, params.period_ms)?;
    Ok(WindowArgs {
        refund: given.has(Opt::Refund),
        dry_run: given.has(Opt::DryRun),
        count_denied: given.has(Opt::CountDenied),
        laid: laid(calendar, given.has(Opt::Align)),
        offset_minutes: values.offset_minutes.unwrap_or(0),
        at_ms: values.at_ms,
        buckets: values.cells,
        block_ms: values.block_ms,
        // After the two parameters.
        block_at: given.position(Opt::Block).map(|at| at + 2),
        at_most_at: given.position(Opt::AtMost).map(|at| at + 2),
        quantity_given: given.gives_quantity(),
        ban_ms: values.ban_ms,
        ..WindowArgs::plain(params, values.quantity, unit)
    })
}

/// `limit period` and the calendar unit the period names, if it names one and the parser
/// looks for one (`THOROUGH`).
#[inline(always)]
fn periods<const THOROUGH: bool>(
    command: Command,
    limit: &[u8],
    period: &[u8],
    unit: TimeUnit,
) -> Result<(WindowParams, Option<CalendarUnit>), Error> {
    if THOROUGH {
        window_params(command, limit, period, unit)
    } else {
        Ok((limit_and_period(limit, period, unit)?, None))
    }
}

/// How a fixed window's windows lie, given its period's calendar unit, if it named one, and
/// whether it names `ALIGN` (which the grammar refuses beside a calendar unit).
pub(crate) fn laid(calendar: Option<CalendarUnit>, align: bool) -> Laid {
    match (calendar, align) {
        (Some(unit), _) => Laid::Calendar(unit),
        (None, true) => Laid::Aligned,
        (None, false) => Laid::FromFirstCall,
    }
}

/// A window command's `limit period`, in this unit, and the calendar unit CL.FIXED's period
/// names, if it is one: its window then stands for the unit's longest length.
#[inline(always)]
pub(crate) fn window_params(
    command: Command,
    limit: &[u8],
    period: &[u8],
    unit: TimeUnit,
) -> Result<(WindowParams, Option<CalendarUnit>), Error> {
    match limit_and_period(limit, period, unit) {
        Ok(params) => Ok((params, None)),
        // Most periods are numbers: a word is looked at only once one fails to read.
        Err(error) => calendar_params(command, limit, period, error),
    }
}

/// `limit` and the calendar unit `period` names, for CL.FIXED; else `error`, the number's.
#[cold]
#[inline(never)]
fn calendar_params(
    command: Command,
    limit: &[u8],
    period: &[u8],
    error: Error,
) -> Result<(WindowParams, Option<CalendarUnit>), Error> {
    let calendar = params::takes_calendar(command)
        .then(|| CalendarUnit::of(period))
        .flatten()
        .ok_or(error)?;
    // The limit's own error, if it was the one that failed.
    let [limit_number, _] = WINDOW;
    let limit = limit_number.read(limit, TimeUnit::Seconds)?;
    Ok((
        WindowParams {
            limit,
            period_ms: calendar.longest_ms(),
        },
        Some(calendar),
    ))
}

/// `limit period`, in this unit.
#[inline(always)]
pub(crate) fn limit_and_period(
    limit: &[u8],
    period: &[u8],
    unit: TimeUnit,
) -> Result<WindowParams, Error> {
    let [limit, period] = params::read(&WINDOW, [limit, period], unit)?;
    Ok(WindowParams {
        limit,
        period_ms: period
            .checked_mul(unit.millis())
            .ok_or(Error::TooLarge("period"))?,
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
/// so a holder named like a keyword (`MS`, `BLOCK`) is still the holder.
pub fn lease<'a>(args: &[&'a [u8]]) -> Result<LeaseArgs<'a>, Error> {
    let [limit, lease_time, holder, words @ ..] = args else {
        return Err(Error::WrongArity("cl.lease"));
    };
    let given = Given::read(Command::Lease, words, AFTER_KEY + 3)?;
    let unit = given.unit();
    let params = lease_params(limit, lease_time, unit)?;
    let holder = holder_name(holder)?;
    let values = given.read_values(ANY_QUANTITY, 0)?;
    Ok(LeaseArgs {
        params,
        holder,
        unit,
        // The options follow the three parameters.
        ms_at: given.position(Opt::Ms).map(|at| at + 3),
        at_ms: values.at_ms,
        block_ms: values.block_ms,
        dry_run: given.has(Opt::DryRun),
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
    /// `BAN lockout`, in milliseconds.
    pub ban_ms: Option<i64>,
}

/// The most permits one CL.SMOOTH call asks for: Guava's `int`.
pub const MAX_SMOOTH_QUANTITY: i64 = i32::MAX as i64;

/// The default `BURST`, Guava's `maxBurstSeconds` of `RateLimiter.create`: one second.
const DEFAULT_BURST_SECONDS: i64 = 1;

/// The default `COLD` factor, Guava's.
const DEFAULT_COLD: i64 = 3;

/// Parses the arguments of `CL.SMOOTH` that follow the key. REFUND is refused by name: a
/// smooth limiter reserves instants, and has no units to give back.
pub fn smooth(args: &[&[u8]]) -> Result<SmoothArgs, Error> {
    let [permits, period, words @ ..] = args else {
        return Err(Error::WrongArity("cl.smooth"));
    };
    let given = Given::read(Command::Smooth, words, AFTER_KEY + 2)?;
    let unit = given.unit();
    let [permits, period] = params::read(&SMOOTH, [permits, period], unit)?;
    let values = given.read_values(MAX_SMOOTH_QUANTITY, 0)?;
    let shape = match values.warmup {
        None => SmoothShape::Bursty {
            burst: values
                .burst
                .unwrap_or(DEFAULT_BURST_SECONDS * unit_per_second(unit)),
        },
        Some(warmup) => SmoothShape::WarmingUp {
            warmup,
            cold: values.cold.unwrap_or(DEFAULT_COLD),
        },
    };
    Ok(SmoothArgs {
        params: SmoothParams {
            permits,
            period,
            unit,
            shape,
        },
        quantity: values.quantity,
        dry_run: given.has(Opt::DryRun),
        block_ms: values.block_ms,
        ban_ms: values.ban_ms,
    })
}

/// How many of `unit` make a second.
fn unit_per_second(unit: TimeUnit) -> i64 {
    MILLIS_PER_SECOND / unit.millis()
}

/// `CL.RELEASE key holder`, after the key: the holder, and in the replication form the
/// instant (`AT unix-ms`). It never waits: BLOCK is refused by name.
pub fn release<'a>(args: &[&'a [u8]]) -> Result<(&'a [u8], Option<i64>), Error> {
    let [holder, words @ ..] = args else {
        return Err(Error::WrongArity("cl.release"));
    };
    let given = Given::read(Command::Release, words, AFTER_KEY + 1)?;
    let holder = holder_name(holder)?;
    let values = given.read_values(ANY_QUANTITY, 0)?;
    Ok((holder, values.at_ms))
}

/// `CL.BAN key span [MS]`, after the key: the ban's span, in milliseconds, and the unit the
/// call speaks in.
pub fn ban(args: &[&[u8]]) -> Result<(i64, TimeUnit), Error> {
    let [span, words @ ..] = args else {
        return Err(Error::WrongArity("cl.ban"));
    };
    let given = Given::read(Command::Ban, words, AFTER_KEY + 1)?;
    let unit = given.unit();
    let [span] = params::read(&BAN, [span], unit)?;
    given.read_values(ANY_QUANTITY, 0)?;
    Ok((span.saturating_mul(unit.millis()), unit))
}

/// `CL.UNBAN key`, after the key: nothing.
pub fn unban(args: &[&[u8]]) -> Result<(), Error> {
    Given::read(Command::Unban, args, AFTER_KEY).map(|_| ())
}

/// `CL.HOLDERS key [MS]`, after the key: the unit of the times left.
pub fn holders(args: &[&[u8]]) -> Result<TimeUnit, Error> {
    Ok(Given::read(Command::Holders, args, AFTER_KEY)?.unit())
}

/// `limit lease_time`, in this unit.
pub(crate) fn lease_params(
    limit: &[u8],
    lease_time: &[u8],
    unit: TimeUnit,
) -> Result<LeaseParams, Error> {
    let [limit, lease_time] = params::read(&LEASE, [limit, lease_time], unit)?;
    Ok(LeaseParams {
        limit,
        lease_ms: lease_time
            .checked_mul(unit.millis())
            .ok_or(Error::TooLarge("lease_time"))?,
    })
}

pub(crate) use crate::grammar::holder_name;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{NANOS_PER_MILLI, NANOS_PER_SECOND};

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
            Err(Error::BadOption {
                command: "cl.throttle",
                position: 6
            })
        );
        assert_eq!(
            throttle_of(&["15", "30", "60", "MS", "2"]),
            Err(Error::BadOption {
                command: "cl.throttle",
                position: 6
            })
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
        assert_eq!(fixed(&[b"1"]), Err(Error::WrongArity("cl.fixed")));
        // Past its last option, a word is out of place, not one too many.
        assert_eq!(
            throttle_of(&["x", "30", "60", "1", "MS", "REFUND", "DRYRUN", "extra"]),
            Err(Error::BadOption {
                command: "cl.throttle",
                position: 9
            })
        );
        assert_eq!(
            window(&[b"1", b"1", b"1", b"MS", b"AT", b"5", b"x"]),
            Err(Error::BadOption {
                command: "cl.window",
                position: 8
            })
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
            Err(Error::BadOption {
                command: "cl.throttle",
                position: 5
            })
        );
        // Among the options, anywhere.
        assert_eq!(window(&words("5 60 AT 17 MS")).unwrap().at_ms, Some(17));
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
            (
                "REFUND REFUND",
                Error::BadOption {
                    command: "cl.window",
                    position: 5,
                },
            ),
            (
                "1 REFUND REFUND",
                Error::BadOption {
                    command: "cl.window",
                    position: 6,
                },
            ),
            (
                "REFUND 2",
                Error::BadOption {
                    command: "cl.window",
                    position: 5,
                },
            ),
            ("x REFUND", Error::NotAnInteger("quantity")),
            (
                "1 MS REFUND x",
                Error::BadOption {
                    command: "cl.window",
                    position: 7,
                },
            ),
            (
                "1 MS REFUND DRYRUN x",
                Error::BadOption {
                    command: "cl.window",
                    position: 8,
                },
            ),
            (
                "DRYRUN DRYRUN",
                Error::BadOption {
                    command: "cl.window",
                    position: 5,
                },
            ),
            ("REFUND BLOCK 0", Error::NeverWaits("REFUND")),
            ("BLOCK 5 DRYRUN REFUND", Error::NeverWaits("REFUND")),
            ("DRYRUN BLOCK 5", Error::NeverWaits("DRYRUN")),
        ] {
            let args: Vec<&[u8]> = words("5 60").into_iter().chain(words(tail)).collect();
            assert_eq!(window(&args), Err(error), "{tail}");
        }
    }

    #[test]
    fn a_quantity_alone_reads_as_it_does_among_options() {
        for word in [
            "0",
            "1",
            "07",
            "5x",
            "9223372036854775807",
            "9223372036854775808",
            "1.5",
            "-1",
            "+1",
            "MS",
            "REFUND",
            "COUNTDENIED",
            "x",
        ] {
            let plain = fixed(&words(&format!("5 60 {word}")));
            let flagged = fixed(&words(&format!("5 60 {word} DRYRUN"))).map(|args| WindowArgs {
                dry_run: false,
                ..args
            });
            assert_eq!(plain, flagged, "{word}");
        }
    }

    #[test]
    fn countdenied_is_cl_fixed_s_alone_and_never_waits() {
        let fixed_of = |text| fixed(&words(text));
        let parsed = fixed_of("5 60 2 COUNTDENIED MS").unwrap();
        assert!(parsed.count_denied && parsed.quantity == 2 && parsed.params.period_ms == 60);
        assert!(!fixed_of("5 60 2").unwrap().count_denied);
        assert_eq!(
            fixed_of("5 60 COUNTDENIED countdenied"),
            Err(Error::BadOption {
                command: "cl.fixed",
                position: 5
            })
        );
        assert_eq!(
            window(&words("5 60 COUNTDENIED")),
            Err(Error::BadOption {
                command: "cl.window",
                position: 4
            })
        );
        assert_eq!(
            throttle(&words("1 5 60 COUNTDENIED")),
            Err(Error::BadOption {
                command: "cl.throttle",
                position: 5
            })
        );
        assert_eq!(
            fixed_of("5 60 1 MS REFUND DRYRUN COUNTDENIED BLOCK 10"),
            Err(Error::NeverWaits("REFUND"))
        );
        assert_eq!(
            fixed_of("5 60 COUNTDENIED BLOCK 0"),
            Err(Error::NeverWaits("COUNTDENIED"))
        );
        assert_eq!(
            fixed_of("5 60 1 MS REFUND DRYRUN COUNTDENIED x"),
            Err(Error::BadOption {
                command: "cl.fixed",
                position: 9
            })
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
            (
                "5 60 BUCKETS",
                Error::BadOption {
                    command: "cl.window",
                    position: 4,
                },
            ),
            (
                "5 60 BUCKETS 4 BUCKETS 4",
                Error::BadOption {
                    command: "cl.window",
                    position: 6,
                },
            ),
            (
                "5 60 BUCKETS 4 3",
                Error::BadOption {
                    command: "cl.window",
                    position: 6,
                },
            ),
            (
                "5 60 MS BUCKETS",
                Error::BadOption {
                    command: "cl.window",
                    position: 5,
                },
            ),
            (
                "5 60 1 BUCKETS 2 MS REFUND DRYRUN x",
                Error::BadOption {
                    command: "cl.window",
                    position: 10,
                },
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
        assert_eq!(
            fixed(&words("5 60 BUCKETS 4")),
            Err(Error::BadOption {
                command: "cl.fixed",
                position: 4
            })
        );
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
        assert_eq!(
            release(&words("h x BLOCK 5")),
            Err(Error::BadOption {
                command: "cl.release",
                position: 3
            })
        );
        assert_eq!(release(&[b""]), Err(Error::HolderLength));
        assert_eq!(release(&[]), Err(Error::WrongArity("cl.release")));
    }

    mod plain_and_thorough {
        use super::*;
        use proptest::prelude::*;

        const WORDS: [&str; 24] = [
            "0",
            "1",
            "5",
            "60",
            "-1",
            "x",
            "99999999999999999999",
            "120",
            "-300",
            "1440",
            "DAY",
            "week",
            "MONTH",
            "YEAR",
            "ALIGN",
            "OFFSET",
            "MS",
            "REFUND",
            "DRYRUN",
            "COUNTDENIED",
            "BLOCK",
            "BAN",
            "BUCKETS",
            "ATMOST",
        ];

        proptest! {
            /// The plain parser, which answers almost every call, answers as the thorough one
            /// does, unless it hands the call over (a word where a number goes), which the
            /// thorough one then answers.
            #[test]
            fn the_plain_parser_answers_as_the_thorough_one(
                picks in proptest::collection::vec(0..WORDS.len(), 2..9),
                fixed in any::<bool>(),
            ) {
                let words: Vec<&[u8]> = picks
                    .iter()
                    .filter_map(|&pick| WORDS.get(pick))
                    .map(|word| word.as_bytes())
                    .collect();
                let command = if fixed { Command::Fixed } else { Command::Window };
                let plain = window_args::<false>(&words, command);
                if !matches!(plain, Err(Error::NotAnInteger(_) | Error::Thorough)) {
                    prop_assert_eq!(plain, window_args::<true>(&words, command));
                }
            }
        }
    }
}

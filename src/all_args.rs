//! CL.ALL's grammar: the keys, one limiter per key, and the options that apply to them all.
//! Each limiter's numbers are read by the same parsers as its own command's, in `args.rs`.

use crate::args::{
    laid, lease_params, limit_and_period, throttle_params, window_params, LeaseParams,
    ThrottleArgs, WindowArgs,
};
use crate::command::Command;
use crate::error::Error;
use crate::grammar::params::{self, LimiterKind};
use crate::grammar::{bucket_count, names, Given, Opt, ANY_QUANTITY};
use crate::time::TimeUnit;

/// The most keys, and so limiters, one CL.ALL call decides over.
pub const MAX_KEYS: usize = params::MAX_KEYS as usize;

/// A CL.ALL limiter's arguments, read as its own command reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimiterArgs {
    Throttle(ThrottleArgs),
    Fixed(WindowArgs),
    Window(WindowArgs),
    Lease(LeaseParams),
}

/// One limiter of a CL.ALL call, and where its parameters are among the call's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimiterSpec {
    pub args: LimiterArgs,
    pub params_at: usize,
    pub params_len: usize,
}

/// `CL.ALL numkeys key [key ...] limiter [limiter ...] [QUANTITY quantity] [MS] [REFUND]
/// [DRYRUN] [DETAIL] [HOLDER holder] [BLOCK timeout]`, after the command's name: the
/// keys are at positions `1..=limiters.len()`, and every position indexes that same list of
/// arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllArgs<'a> {
    pub limiters: Vec<LimiterSpec>,
    /// The holder every LEASE limiter's lease is held under, and where it was given.
    pub holder: Option<(&'a [u8], usize)>,
    pub quantity: i64,
    pub unit: TimeUnit,
    pub detail: bool,
    /// Where the quantity's value, `MS` and `REFUND` were given, if they were.
    pub quantity_at: Option<usize>,
    pub ms_at: Option<usize>,
    pub refund_at: Option<usize>,
    /// The call only answers what it would, and changes nothing (`DRYRUN`).
    pub dry_run: bool,
    /// `quantity` is the most the call takes from every limiter (`ATMOST`).
    pub at_most: bool,
    /// BLOCK's timeout in milliseconds, when the call asked to wait.
    pub block_ms: Option<i64>,
    /// `BAN lockout`, in milliseconds: each key whose limiter denies the call is locked out.
    pub ban_ms: Option<i64>,
}

/// How many parameters follow a limiter's keyword at `at`: its command's numbers; a
/// WINDOW's go on with `BUCKETS n` when they name it, a FIXED's with `ALIGN` and
/// `OFFSET minutes`, in either order, each once.
fn params_of(kind: LimiterKind, args: &[&[u8]], at: usize) -> usize {
    let is = |offset: usize, opt: Opt| {
        args.get(at + 1 + offset)
            .is_some_and(|word| names(word, opt.row().keyword))
    };
    match kind {
        LimiterKind::Throttle => THROTTLE_NUMBERS,
        LimiterKind::Window if is(WINDOW_NUMBERS, Opt::Buckets) => WINDOW_NUMBERS + 2,
        LimiterKind::Window => WINDOW_NUMBERS,
        LimiterKind::Fixed => {
            let (mut params, mut align, mut offset) = (WINDOW_NUMBERS, false, false);
            loop {
                if !align && is(params, Opt::Align) {
                    (align, params) = (true, params + 1);
                } else if !offset && is(params, Opt::Offset) && args.len() > at + params + 2 {
                    (offset, params) = (true, params + 2);
                } else {
                    return params;
                }
            }
        }
        LimiterKind::Lease => LEASE_NUMBERS,
    }
}

/// A FIXED limiter's arguments: its numbers, as CL.FIXED reads them, and the `ALIGN` and
/// `OFFSET minutes` among `grid` (what follows them), with CL.FIXED's rules between them.
fn fixed_limiter(numbers: [&[u8]; 2], grid: &[&[u8]], unit: TimeUnit) -> Result<WindowArgs, Error> {
    let [limit, period] = numbers;
    let (params, calendar) = window_params(Command::Fixed, limit, period, unit)?;
    // Read as CL.FIXED reads its options, with its rules between them (params_of took only
    // ALIGN and OFFSET's words, so no other option nor a quantity is among them).
    let given = Given::read(Command::Fixed, grid, 0)?.on_calendar(calendar.is_some());
    let values = given.read_values(ANY_QUANTITY, params.period_ms)?;
    Ok(WindowArgs {
        laid: laid(calendar, given.has(Opt::Align)),
        offset_minutes: values.offset_minutes.unwrap_or(0),
        ..WindowArgs::plain(params, 1, unit)
    })
}

/// How many numbers each limiter takes: its command's.
const THROTTLE_NUMBERS: usize = params::number_count(Command::Throttle);
pub(crate) const WINDOW_NUMBERS: usize = params::number_count(Command::Window);
const LEASE_NUMBERS: usize = params::number_count(Command::Lease);

/// Parses CL.ALL's arguments: first their shape (keys, one limiter per key, options), then
/// each limiter's numbers with the shared quantity and unit, exactly as its own command
/// parses them, so that the errors are the same.
pub fn all<'a>(args: &[&'a [u8]]) -> Result<AllArgs<'a>, Error> {
    const COMMAND: &str = "cl.all";
    let [numkeys, ..] = args else {
        return Err(Error::WrongArity(COMMAND));
    };
    // 1 to 16.
    let numkeys = params::NUMKEYS.read(numkeys, TimeUnit::Seconds)? as usize;
    let keys = args.get(1..=numkeys).ok_or(Error::WrongArity(COMMAND))?;
    for (again, key) in keys.iter().enumerate() {
        if let Some(first) = keys.iter().take(again).position(|earlier| earlier == key) {
            return Err(Error::DuplicateKey {
                first: first + 1,
                again: again + 1,
            });
        }
    }

    // The shape first: where each limiter is, then the options.
    // In bytes, as the array is made on every call: a limiter's place is at most numkeys, the
    // keys and the limiters before it, each its keyword and at most five numbers and words.
    const _: () = assert!(1 + MAX_KEYS + MAX_KEYS * (1 + WINDOW_NUMBERS + 3) <= u8::MAX as usize);
    let mut shapes = [(LimiterKind::Throttle, 0u8, 0u8); MAX_KEYS];
    let mut at = numkeys + 1;
    for (index, shape) in shapes.iter_mut().take(numkeys).enumerate() {
        let key = index + 1;
        let keyword = args.get(at).ok_or(Error::MissingLimiter(key))?;
        let kind = match LimiterKind::of(keyword) {
            Some(kind) => kind,
            None if is_option(keyword) => return Err(Error::MissingLimiter(key)),
            None if keyword.eq_ignore_ascii_case(b"SMOOTH") => return Err(Error::SmoothInAll(key)),
            None => return Err(Error::UnknownLimiter(key)),
        };
        let params = params_of(kind, args, at);
        let byte = |value: usize| u8::try_from(value).map_err(|_| Error::Internal);
        *shape = (kind, byte(at + 1)?, byte(params)?);
        at += 1 + params;
    }
    if at > args.len() {
        return Err(Error::WrongArity(COMMAND));
    }

    // The options, read by the grammar; a limiter past the last key is one too many.
    let words = args.get(at..).unwrap_or_default();
    let given = Given::read(Command::All, words, at + 1).map_err(|error| match error {
        Error::BadOption { position, .. }
            if position
                .checked_sub(1)
                .and_then(|index| args.get(index))
                .is_some_and(|word| LimiterKind::of(word).is_some()) =>
        {
            Error::ExtraLimiter
        }
        error => error,
    })?;
    let unit = given.unit();

    // Then the values: each limiter's numbers, as its own command reads them, then the
    // options', which every limiter then takes.
    let mut limiters = Vec::with_capacity(numkeys);
    for &(kind, params_at, params_len) in shapes.iter().take(numkeys) {
        let (params_at, params_len) = (usize::from(params_at), usize::from(params_len));
        let param = |offset: usize| args.get(params_at + offset).copied().unwrap_or_default();
        let window = |params, buckets| WindowArgs {
            buckets,
            ..WindowArgs::plain(params, 1, unit)
        };
        let args = match kind {
            LimiterKind::Throttle => LimiterArgs::Throttle(ThrottleArgs::plain(
                throttle_params(param(0), param(1), param(2), unit)?,
                1,
                unit,
            )),
            LimiterKind::Fixed => LimiterArgs::Fixed(fixed_limiter(
                [param(0), param(1)],
                args.get(params_at + WINDOW_NUMBERS..params_at + params_len)
                    .unwrap_or_default(),
                unit,
            )?),
            LimiterKind::Window => {
                let params = limit_and_period(param(0), param(1), unit)?;
                let cells = (params_len == 4)
                    .then(|| bucket_count(param(3), params.period_ms))
                    .transpose()?;
                LimiterArgs::Window(window(params, cells))
            }
            LimiterKind::Lease => LimiterArgs::Lease(lease_params(param(0), param(1), unit)?),
        };
        limiters.push(LimiterSpec {
            args,
            params_at,
            params_len,
        });
    }
    let values = given.read_values(ANY_QUANTITY, 0)?;
    let (quantity, refund, dry_run) = (
        values.quantity,
        given.has(Opt::Refund),
        given.has(Opt::DryRun),
    );
    let leases = shapes
        .iter()
        .take(numkeys)
        .any(|&(kind, _, _)| kind == LimiterKind::Lease);
    // A lease is one slot: no part of it can be granted.
    if leases && given.has(Opt::AtMost) {
        return Err(Error::AtMostLease);
    }
    match (leases, values.holder) {
        // A look takes no lease, nor does a refund (CL.RELEASE gives a lease back): neither
        // needs anyone to hold it.
        (true, None) if quantity != 0 && !refund => return Err(Error::NoHolder),
        (false, Some(_)) => return Err(Error::HolderWithoutLease),
        _ => {}
    }
    // Each limiter was read taking one unit, as a call that names no option does.
    let taken = (quantity, refund, dry_run) != (1, false, false);
    for spec in limiters.iter_mut().filter(|_| taken) {
        match &mut spec.args {
            LimiterArgs::Throttle(throttle) => {
                (throttle.quantity, throttle.refund, throttle.dry_run) =
                    (quantity, refund, dry_run);
            }
            LimiterArgs::Fixed(window) | LimiterArgs::Window(window) => {
                (window.quantity, window.refund, window.dry_run) = (quantity, refund, dry_run);
            }
            LimiterArgs::Lease(_) => {}
        }
    }
    // Where the options were, after CL.ALL's name.
    let after = |opt| given.position(opt).map(|index| at + index);
    Ok(AllArgs {
        limiters,
        holder: values.holder.zip(after(Opt::Holder).map(|at| at + 1)),
        quantity,
        unit,
        detail: given.has(Opt::Detail),
        quantity_at: after(Opt::Quantity).map(|at| at + 1),
        ms_at: after(Opt::Ms),
        refund_at: after(Opt::Refund),
        dry_run,
        at_most: given.has(Opt::AtMost),
        block_ms: values.block_ms,
        ban_ms: values.ban_ms,
    })
}

/// An option that may follow CL.ALL's limiters.
fn is_option(word: &[u8]) -> bool {
    Opt::of(word).is_some_and(|opt| opt.row().takers.has(Command::All))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{fixed, ThrottleParams, WindowParams};
    use crate::time::NANOS_PER_MILLI;

    #[test]
    fn cl_all_takes_refund_among_its_options() {
        let parsed = all_of("2 a b FIXED 5 60 THROTTLE 1 2 60 REFUND QUANTITY 2").unwrap();
        assert_eq!((parsed.refund_at, parsed.quantity_at), (Some(10), Some(12)));
        assert!(parsed.limiters.iter().all(|spec| match spec.args {
            LimiterArgs::Fixed(args) => args.refund,
            LimiterArgs::Throttle(args) => args.refund,
            _ => false,
        }));
        // A refund takes no lease, so it needs no holder.
        assert!(all_of("1 a LEASE 3 30 REFUND").is_ok());
        assert_eq!(
            all_of("1 a FIXED 5 60 REFUND BLOCK 10").map(|_| ()),
            Err(Error::NeverWaits("REFUND"))
        );
        assert_eq!(
            all_of("1 a FIXED 5 60 REFUND REFUND").map(|_| ()),
            Err(bad(7))
        );
        assert_eq!(
            all_of("2 a b FIXED 5 60 REFUND").map(|_| ()),
            Err(Error::MissingLimiter(2))
        );
    }

    #[test]
    fn cl_all_holds_its_leases_under_one_holder() {
        let parsed = all_of("2 a b LEASE 3 30 FIXED 5 60 HOLDER MS MS").unwrap();
        assert_eq!(
            parsed.limiters[0].args,
            LimiterArgs::Lease(LeaseParams {
                limit: 3,
                lease_ms: 30
            })
        );
        assert_eq!(parsed.holder, Some((&b"MS"[..], 10)));
        assert_eq!(parsed.unit, TimeUnit::Milliseconds);
        assert_eq!(all_of("1 a LEASE 3 30").map(|_| ()), Err(Error::NoHolder));
        assert!(
            all_of("1 a LEASE 3 30 QUANTITY 0").is_ok(),
            "a look needs no holder"
        );
        assert_eq!(
            all_of("1 a FIXED 3 30 HOLDER h").map(|_| ()),
            Err(Error::HolderWithoutLease)
        );
        assert_eq!(
            all_of("1 a LEASE 3 30 HOLDER h HOLDER g").map(|_| ()),
            Err(bad(8))
        );
        assert_eq!(
            all_of("1 a LEASE 0 30 HOLDER h").map(|_| ()),
            Err(Error::BelowMinimum {
                arg: "limit",
                min: 1
            })
        );
        assert_eq!(all_of("1 a LEASE 3 30 HOLDER").map(|_| ()), Err(bad(6)));
    }

    fn bad(position: usize) -> Error {
        Error::BadOption {
            command: "cl.all",
            position,
        }
    }

    fn all_of(args: &str) -> Result<AllArgs<'_>, Error> {
        let words: Vec<&[u8]> = args.split(' ').map(str::as_bytes).collect();
        all(&words)
    }

    #[test]
    fn cl_all_reads_one_limiter_per_key_and_the_options_in_any_order() {
        let parsed = all_of("2 a b throttle 1 2 60 Window 5 10 detail QUANTITY 3 ms").unwrap();
        let limiters = &parsed.limiters;
        assert_eq!(limiters.len(), 2);
        assert_eq!(
            limiters[0],
            LimiterSpec {
                args: LimiterArgs::Throttle(ThrottleArgs {
                    params: ThrottleParams {
                        max_burst: 1,
                        count: 2,
                        period_ns: 60 * NANOS_PER_MILLI,
                    },
                    quantity: 3,
                    unit: TimeUnit::Milliseconds,
                    refund: false,
                    dry_run: false,
                    at_most: false,
                    block_ms: None,
                    ban_ms: None,
                }),
                params_at: 4,
                params_len: 3,
            }
        );
        assert_eq!(
            limiters[1].args,
            LimiterArgs::Window(WindowArgs {
                params: WindowParams {
                    limit: 5,
                    period_ms: 10,
                },
                quantity: 3,
                unit: TimeUnit::Milliseconds,
                refund: false,
                dry_run: false,
                count_denied: false,
                laid: crate::args::Laid::FromFirstCall,
                offset_minutes: 0,
                at_ms: None,
                buckets: None,
                block_ms: None,
                block_at: None,
                at_most_at: None,
                quantity_given: false,
                ban_ms: None,
            })
        );
        assert_eq!(limiters[1].params_at, 8);
        assert_eq!((parsed.quantity, parsed.unit), (3, TimeUnit::Milliseconds));
        assert_eq!((parsed.quantity_at, parsed.ms_at), (Some(12), Some(13)));
        assert!(parsed.detail);

        let plain = all_of("1 k FIXED 5 60").unwrap();
        assert_eq!(
            (plain.quantity, plain.unit, plain.detail),
            (1, TimeUnit::Seconds, false)
        );
        assert_eq!((plain.quantity_at, plain.ms_at), (None, None));
        assert_eq!(
            plain.limiters[0].args,
            LimiterArgs::Fixed(fixed(&[b"5", b"60"]).unwrap())
        );
    }

    #[test]
    fn cl_all_names_what_is_wrong_with_its_shape() {
        for (args, error) in [
            (
                "0 a FIXED 1 1",
                Error::BelowMinimum {
                    arg: "numkeys",
                    min: 1,
                },
            ),
            (
                "17 a FIXED 1 1",
                Error::AboveMaximum {
                    arg: "numkeys",
                    max: 16,
                },
            ),
            ("x a FIXED 1 1", Error::NotAnInteger("numkeys")),
            ("3 a b", Error::WrongArity("cl.all")),
            (
                "2 a a FIXED 1 1 FIXED 1 1",
                Error::DuplicateKey { first: 1, again: 2 },
            ),
            (
                "3 a b a FIXED 1 1 FIXED 1 1 FIXED 1 1",
                Error::DuplicateKey { first: 1, again: 3 },
            ),
            ("2 a b FIXED 1 1", Error::MissingLimiter(2)),
            ("2 a b FIXED 1 1 QUANTITY 2", Error::MissingLimiter(2)),
            ("1 a FIXED 1 1 WINDOW 1 1", Error::ExtraLimiter),
            ("1 a LEAKY 1 1", Error::UnknownLimiter(1)),
            ("1 a smooth 1 1", Error::SmoothInAll(1)),
            ("1 a THROTTLE 1 1", Error::WrongArity("cl.all")),
            ("1 a FIXED 1 1 QUANTITY", bad(6)),
            ("1 a FIXED 1 1 MS MS", bad(7)),
            ("1 a FIXED 1 1 QUANTITY 1 QUANTITY 2", bad(8)),
            ("1 a FIXED 1 1 SOON", bad(6)),
            ("1 a FIXED 1 1 AT 5", bad(6)),
        ] {
            assert_eq!(all_of(args).map(|_| ()), Err(error), "{args}");
        }
    }

    #[test]
    fn cl_all_checks_each_number_as_the_limiters_own_command_does() {
        for (args, error) in [
            (
                "1 a THROTTLE -1 1 1",
                Error::BelowMinimum {
                    arg: "max_burst",
                    min: 0,
                },
            ),
            ("1 a THROTTLE 1 x 1", Error::NotAnInteger("count")),
            (
                "1 a FIXED 0 1",
                Error::BelowMinimum {
                    arg: "limit",
                    min: 1,
                },
            ),
            (
                "1 a WINDOW 1 9223372036854775807",
                Error::TooLarge("period"),
            ),
            (
                "2 a b FIXED 1 1 WINDOW 1 -5",
                Error::BelowMinimum {
                    arg: "period",
                    min: 1,
                },
            ),
            (
                "1 a FIXED 1 1 QUANTITY -1",
                Error::BelowMinimum {
                    arg: "quantity",
                    min: 0,
                },
            ),
            // A quantity that reads like a keyword is still the quantity.
            (
                "1 a FIXED 1 1 QUANTITY AT MS",
                Error::NotAnInteger("quantity"),
            ),
        ] {
            assert_eq!(all_of(args).map(|_| ()), Err(error), "{args}");
        }
    }
}

//! Every command's positional parameters: the words before its quantity and options, in the
//! order they are read, each with its kind and bounds. The parsers read a command's numbers
//! by `numbers`, COMMAND DOCS lists them (command_table.rs), and the Functions library reads
//! a Lua form of them (lua/grammar.lua). CL.ALL's limiters take their commands' own numbers.

use std::ffi::CStr;

use crate::command::Command;
use crate::error::Error;
use crate::grammar::integer;
use crate::time::{TimeUnit, DAY_MS, MAX_SPAN_NS};

/// Every positional parameter of every command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    Key,
    Numkeys,
    Limiter,
    MaxBurst,
    Count,
    /// GCRA's period: any whose nanoseconds fit in 64 bits, as redis-cell took.
    GcraPeriod,
    Limit,
    /// The other limiters' period: within the span they look ahead.
    Period,
    /// CL.FIXED's period: as `Period`, or a calendar's unit by its word.
    FixedPeriod,
    Permits,
    LeaseTime,
    Holder,
    /// How long CL.BAN locks a key out.
    BanSpan,
}

/// What a parameter is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A key the command reads and writes.
    Key,
    /// A number the call reads as `Number` bounds it.
    Number(Number),
    /// 1 to 255 bytes, any bytes: a lease's holder.
    Holder,
    /// One of CL.ALL's limiters: its keyword, then its command's numbers (`LimiterKind`).
    Limiter,
}

/// A number's bounds: an integer of at least `min`, then at most `max`, or, for a span, at
/// most `max_ns` once in nanoseconds (`TooLarge` past it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Number {
    /// The name the errors quote.
    pub name: &'static str,
    pub min: i64,
    pub max: Max,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Max {
    /// At most this many.
    Count(i64),
    /// A span in the call's unit, of at most this many nanoseconds.
    SpanNs(i64),
}

/// One parameter: the name the docs and the errors give it, and its kind.
#[derive(Debug, Clone, Copy)]
pub struct ParamRow {
    pub name: &'static CStr,
    pub kind: Kind,
    /// A number that a calendar's unit may stand in for, by its word (`CalendarUnit`).
    pub or_calendar: bool,
}

/// A calendar's unit, which CL.FIXED takes by its word in its period's place: its windows
/// are then the calendar's days, ISO weeks, months or years (calendar.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CalendarUnit {
    Day,
    /// An ISO week: Monday 00:00 to the next Monday.
    Week,
    Month,
    Year,
}

impl CalendarUnit {
    pub const ALL: [CalendarUnit; 4] = [
        CalendarUnit::Day,
        CalendarUnit::Week,
        CalendarUnit::Month,
        CalendarUnit::Year,
    ];

    pub const fn keyword(self) -> &'static CStr {
        match self {
            CalendarUnit::Day => c"DAY",
            CalendarUnit::Week => c"WEEK",
            CalendarUnit::Month => c"MONTH",
            CalendarUnit::Year => c"YEAR",
        }
    }

    /// The unit's longest length, in milliseconds: the period its window stands for where a
    /// length is asked of it.
    pub const fn longest_ms(self) -> i64 {
        match self {
            CalendarUnit::Day => DAY_MS,
            CalendarUnit::Week => 7 * DAY_MS,
            CalendarUnit::Month => 31 * DAY_MS,
            CalendarUnit::Year => 366 * DAY_MS,
        }
    }

    /// The unit this word names, whatever its case.
    pub fn of(word: &[u8]) -> Option<CalendarUnit> {
        CalendarUnit::ALL
            .into_iter()
            .find(|&unit| super::names(word, unit.keyword()))
    }
}

const fn number(name: &'static CStr, min: i64, max: Max) -> ParamRow {
    let Ok(text) = std::str::from_utf8(name.to_bytes()) else {
        panic!("a parameter's name is ASCII");
    };
    ParamRow {
        name,
        kind: Kind::Number(Number {
            name: text,
            min,
            max,
        }),
        or_calendar: false,
    }
}

/// A row that is no number.
const fn other(name: &'static CStr, kind: Kind) -> ParamRow {
    ParamRow {
        name,
        kind,
        or_calendar: false,
    }
}

/// The most keys, and so limiters, one CL.ALL call decides over.
pub const MAX_KEYS: i64 = 16;

impl Param {
    /// The parameter's row: a match, so that a new parameter asks for its row.
    pub const fn row(self) -> ParamRow {
        match self {
            Param::Key => other(c"key", Kind::Key),
            Param::Numkeys => number(c"numkeys", 1, Max::Count(MAX_KEYS)),
            Param::Limiter => other(c"limiter", Kind::Limiter),
            Param::MaxBurst => number(c"max_burst", 0, Max::Count(i64::MAX)),
            Param::Count => number(c"count", 1, Max::Count(i64::MAX)),
            Param::GcraPeriod => number(c"period", 1, Max::SpanNs(i64::MAX)),
            Param::Limit => number(c"limit", 1, Max::Count(i64::MAX)),
            Param::Period => number(c"period", 1, Max::SpanNs(MAX_SPAN_NS)),
            Param::FixedPeriod => ParamRow {
                or_calendar: true,
                ..number(c"period", 1, Max::SpanNs(MAX_SPAN_NS))
            },
            Param::Permits => number(c"permits", 1, Max::Count(i64::MAX)),
            Param::LeaseTime => number(c"lease_time", 1, Max::SpanNs(MAX_SPAN_NS)),
            Param::Holder => other(c"holder", Kind::Holder),
            Param::BanSpan => number(c"span", 1, Max::SpanNs(MAX_SPAN_NS)),
        }
    }
}

/// CL.ALL's count of keys.
pub const NUMKEYS: Number = match Param::Numkeys.row().kind {
    Kind::Number(number) => number,
    _ => panic!("numkeys is a number"),
};

use Param::{
    BanSpan, Count, FixedPeriod, GcraPeriod, Holder, Key, LeaseTime, Limit, Limiter, MaxBurst,
    Numkeys, Period, Permits,
};

/// A command's positional parameters, in order. CL.ALL's keys and limiters are one or more
/// each, as many as `numkeys`.
pub const fn params(command: Command) -> &'static [Param] {
    match command {
        Command::Throttle => &[Key, MaxBurst, Count, GcraPeriod],
        Command::Fixed => &[Key, Limit, FixedPeriod],
        Command::Window => &[Key, Limit, Period],
        Command::All => &[Numkeys, Key, Limiter],
        Command::Lease => &[Key, Limit, LeaseTime, Holder],
        Command::Release => &[Key, Holder],
        Command::Holders => &[Key],
        Command::Smooth => &[Key, Permits, Period],
        Command::Top => &[],
        Command::Ban => &[Key, BanSpan],
        Command::Unban => &[Key],
    }
}

/// A limiter of CL.ALL: the keyword that names it, and the command whose numbers follow it.
/// A WINDOW's may go on with `BUCKETS n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimiterKind {
    Throttle,
    Fixed,
    Window,
    Lease,
}

impl LimiterKind {
    pub const ALL: [LimiterKind; 4] = [
        LimiterKind::Throttle,
        LimiterKind::Fixed,
        LimiterKind::Window,
        LimiterKind::Lease,
    ];

    pub const fn keyword(self) -> &'static CStr {
        match self {
            LimiterKind::Throttle => c"THROTTLE",
            LimiterKind::Fixed => c"FIXED",
            LimiterKind::Window => c"WINDOW",
            LimiterKind::Lease => c"LEASE",
        }
    }

    /// The command whose numbers the limiter takes.
    pub const fn command(self) -> Command {
        match self {
            LimiterKind::Throttle => Command::Throttle,
            LimiterKind::Fixed => Command::Fixed,
            LimiterKind::Window => Command::Window,
            LimiterKind::Lease => Command::Lease,
        }
    }

    /// The keyword's limiter, whatever its case.
    pub fn of(word: &[u8]) -> Option<LimiterKind> {
        LimiterKind::ALL
            .into_iter()
            .find(|&kind| super::names(word, kind.keyword()))
    }
}

/// Whether a command's period may be a calendar's unit (its row is `or_calendar`), read off
/// the table at compile time rather than each time a word is met.
pub fn takes_calendar(command: Command) -> bool {
    const TAKERS: [bool; Command::ALL.len()] = {
        let mut takers = [false; Command::ALL.len()];
        let mut c = 0;
        while c < Command::ALL.len() {
            let params = params(Command::ALL[c]);
            let mut i = 0;
            while i < params.len() {
                if params[i].row().or_calendar {
                    takers[Command::ALL[c] as usize] = true;
                }
                i += 1;
            }
            c += 1;
        }
        takers
    };
    TAKERS.get(command as usize).copied().unwrap_or(false)
}

/// How many of a command's parameters are numbers: what follows its keyword as a limiter of
/// CL.ALL.
pub const fn number_count(command: Command) -> usize {
    let params = params(command);
    let (mut i, mut n) = (0, 0);
    while i < params.len() {
        if let Kind::Number(_) = params[i].row().kind {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The parameters among a command's that are numbers, in order, as one array. For const
/// items, where a count other than `N` is a compile-time error.
pub const fn number_params<const N: usize>(command: Command) -> [Param; N] {
    assert!(N == number_count(command), "a command's count of numbers");
    let params = params(command);
    let mut out = [Param::Key; N];
    let (mut i, mut n) = (0, 0);
    while i < params.len() {
        if let Kind::Number(_) = params[i].row().kind {
            out[n] = params[i];
            n += 1;
        }
        i += 1;
    }
    out
}

/// The numbers among a command's parameters, in order, as one array: what its parser reads.
/// For const items, as `number_params`.
pub const fn numbers<const N: usize>(command: Command) -> [Number; N] {
    let params = number_params::<N>(command);
    let mut out = [NUMKEYS; N];
    let mut i = 0;
    while i < N {
        if let Kind::Number(number) = params[i].row().kind {
            out[i] = number;
        }
        i += 1;
    }
    out
}

impl Number {
    /// The number `text` gives, in the call's `unit` for a span; or the error that names it.
    #[inline(always)]
    pub fn read(&self, text: &[u8], unit: TimeUnit) -> Result<i64, Error> {
        let value = integer(text, self.name, self.min)?;
        match self.max {
            Max::Count(max) if value > max => Err(Error::AboveMaximum {
                arg: self.name,
                max,
            }),
            Max::Count(_) => Ok(value),
            Max::SpanNs(max_ns) => value
                .checked_mul(unit.nanos())
                .filter(|&ns| ns <= max_ns)
                .map(|_| value)
                .ok_or(Error::TooLarge(self.name)),
        }
    }
}

/// Reads `texts` as `numbers`, in order: the first error stops the reading.
#[inline(always)]
pub fn read<const N: usize>(
    numbers: &[Number; N],
    texts: [&[u8]; N],
    unit: TimeUnit,
) -> Result<[i64; N], Error> {
    let mut values = [0; N];
    for ((value, number), text) in values.iter_mut().zip(numbers).zip(texts) {
        *value = number.read(text, unit)?;
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_is_quoted_by_its_name() {
        for command in Command::ALL {
            for param in params(command) {
                let row = param.row();
                if let Kind::Number(number) = row.kind {
                    assert_eq!(number.name.as_bytes(), row.name.to_bytes());
                }
            }
        }
    }

    #[test]
    fn every_command_starts_with_its_keys() {
        for command in Command::ALL {
            let first = params(command).first().copied();
            let expected = match command {
                Command::All => Some(Numkeys),
                // It speaks of the node.
                Command::Top => None,
                _ => Some(Key),
            };
            assert_eq!(first, expected, "{command:?}");
        }
    }

    #[test]
    fn numbers_are_bounded_as_their_rows_say() {
        let [max_burst, count, period] = numbers::<3>(Command::Throttle);
        let seconds = TimeUnit::Seconds;
        assert_eq!(max_burst.read(b"0", seconds), Ok(0));
        assert_eq!(
            count.read(b"0", seconds),
            Err(Error::BelowMinimum {
                arg: "count",
                min: 1
            })
        );
        assert_eq!(period.read(b"9223372036", seconds), Ok(9_223_372_036));
        assert_eq!(
            period.read(b"9223372037", seconds),
            Err(Error::TooLarge("period"))
        );
        let [_, window_period] = numbers::<2>(Command::Window);
        assert_eq!(
            window_period.read(b"4611686019", seconds),
            Err(Error::TooLarge("period"))
        );
        assert_eq!(
            NUMKEYS.read(b"17", seconds),
            Err(Error::AboveMaximum {
                arg: "numkeys",
                max: 16
            })
        );
    }
}

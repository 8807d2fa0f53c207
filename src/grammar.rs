//! Every command's options, one row each, and the one loop that reads them. A command's
//! arguments are its positional parameters, then, for the limiters that take one, a
//! quantity, then its options in any order, each once:
//!
//! 1. the shape: a word that is not one of the command's options, repeats one or lacks its
//!    value is a syntax error naming its position; an option the command refuses by name
//!    (REFUND in CL.SMOOTH, BLOCK in CL.RELEASE) is refused as it is met;
//! 2. the values, in the grammar's order: the positional parameters (read as `params` lists
//!    and bounds them), the quantity, then each option's value in the order of `OPTIONS`;
//! 3. the rules between options, in the order of `OPTIONS` (BURST with WARMUP, COLD without
//!    WARMUP, BLOCK beside an option that never waits: REFUND, DRYRUN, COUNTDENIED).
//!
//! The module parses by this table, COMMAND DOCS is rendered from it (command_table.rs),
//! and the Functions library's parser reads a Lua form of it and of `params`
//! (lua/grammar.lua, generated from both). A new option is a row here, a field of `Values` if it has a value, and its
//! rule in the limiter that reads it.

pub mod params;
mod values;

use std::ffi::CStr;

use crate::command::Command;
use crate::error::Error;
use crate::time::TimeUnit;

pub use values::{
    block_timeout, bucket_count, holder_name, instant_ms, integer, offset_minutes, span, unit_of,
    ANY_QUANTITY, MAX_BLOCK_MS, MAX_CELLS, MAX_HOLDER, MAX_OFFSET_MINUTES, MIN_CELLS,
};
use values::{quantity, quantity_or_one};

/// Every option of every command, in the order of `OPTIONS`: the order their values are read
/// and their rules checked in, and the order the docs list them in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opt {
    Quantity,
    Buckets,
    Ms,
    Burst,
    Warmup,
    Cold,
    Refund,
    DryRun,
    CountDenied,
    Align,
    Offset,
    Ban,
    Detail,
    Holder,
    AtMost,
    Count,
    At,
    Block,
}

/// What follows an option's keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// Nothing: the keyword alone.
    Flag,
    /// Units a call takes: an integer of at least 0.
    Quantity,
    /// `BUCKETS n`: 2 to 1024 cells that cut the period into whole milliseconds.
    Cells,
    /// A span of at least 1 in the call's unit, within what the limiters look ahead.
    Span,
    /// An integer of at least 1.
    Factor,
    /// 1 to 255 bytes.
    Holder,
    /// A unix-ms instant, only from the replication stream or the AOF.
    Instant,
    /// A wait in milliseconds, 0 meaning as long as it takes.
    Timeout,
    /// How many to list: an integer of at least 1.
    Listed,
    /// A local time's offset from UTC in minutes, as ISO 8601 writes it: -1439 to 1439.
    Offset,
}

/// How an option constrains the others, checked once every value is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Not with that option.
    Excludes(Opt, Error),
    /// Only with that option.
    Needs(Opt, Error),
    /// Only where windows keep to a grid: with ALIGN, or a calendar period.
    NeedsGrid(Error),
    /// Not with a calendar period.
    OffCalendar(Error),
}

/// Never with BLOCK: a call with this option never waits.
const fn never_waits(keyword: &'static str) -> Rule {
    Rule::Excludes(Opt::Block, Error::NeverWaits(keyword))
}

/// Not with ATMOST, which takes what fits: the option would give units back or count a
/// denial's.
const fn not_at_most(other: Opt, keyword: &'static str) -> Rule {
    Rule::Excludes(other, Error::AtMostWith(keyword))
}

/// One option: its keyword, its value, the commands that take it and those that refuse it by
/// name.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    pub opt: Opt,
    pub keyword: &'static CStr,
    /// What the docs call its value, or the flag itself.
    pub name: &'static CStr,
    pub value: Value,
    pub takers: Commands,
    /// Commands that take it with no keyword, as the first word after their parameters:
    /// the limiters' quantity.
    pub positional: Commands,
    /// The commands that answer the keyword with an error of their own, not a syntax error,
    /// made from the command's name.
    pub refusal: Option<(Commands, Refusal)>,
    /// Its rules, checked in order.
    pub rules: &'static [Rule],
}

/// A refusal's error, made from the refusing command's name.
pub type Refusal = fn(&'static str) -> Error;

/// A set of commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Commands(u16);

impl Commands {
    pub const fn of(commands: &[Command]) -> Commands {
        let mut bits = 0;
        let mut i = 0;
        while i < commands.len() {
            bits |= 1 << commands[i] as u16;
            i += 1;
        }
        Commands(bits)
    }

    #[inline(always)]
    pub const fn has(self, command: Command) -> bool {
        self.0 & (1 << command as u16) != 0
    }
}

use Command::{All, Ban, Fixed, Holders, Lease, Release, Smooth, Throttle, Top, Window};

/// The limiters that take `MS`, `DRYRUN` and `BLOCK`.
const WAITERS: Commands = Commands::of(&[Throttle, Fixed, Window, All, Lease, Smooth]);
/// The limiters that give units back.
const REFUNDERS: Commands = Commands::of(&[Throttle, Fixed, Window, All]);
/// The commands with a replication form, which carries the primary's instant.
const REPLICATED: Commands = Commands::of(&[Fixed, Window, Lease, Release]);
const NONE: Commands = Commands::of(&[]);

const fn row(
    opt: Opt,
    (keyword, name): (&'static CStr, &'static CStr),
    value: Value,
    takers: Commands,
) -> Row {
    Row {
        opt,
        keyword,
        name,
        value,
        takers,
        positional: NONE,
        refusal: None,
        rules: &[],
    }
}

/// The table, indexed by `Opt`.
pub const OPTIONS: [Row; 18] = [
    Row {
        positional: Commands::of(&[Throttle, Fixed, Window, Smooth]),
        ..row(
            Opt::Quantity,
            (c"QUANTITY", c"quantity"),
            Value::Quantity,
            Commands::of(&[All]),
        )
    },
    row(
        Opt::Buckets,
        (c"BUCKETS", c"n"),
        Value::Cells,
        Commands::of(&[Window]),
    ),
    row(
        Opt::Ms,
        (c"MS", c"ms"),
        Value::Flag,
        Commands::of(&[Throttle, Fixed, Window, All, Lease, Holders, Smooth, Ban]),
    ),
    Row {
        rules: &[Rule::Excludes(Opt::Warmup, Error::BurstAndWarmup)],
        ..row(
            Opt::Burst,
            (c"BURST", c"span"),
            Value::Span,
            Commands::of(&[Smooth]),
        )
    },
    row(
        Opt::Warmup,
        (c"WARMUP", c"span"),
        Value::Span,
        Commands::of(&[Smooth]),
    ),
    Row {
        rules: &[Rule::Needs(Opt::Warmup, Error::ColdWithoutWarmup)],
        ..row(
            Opt::Cold,
            (c"COLD", c"factor"),
            Value::Factor,
            Commands::of(&[Smooth]),
        )
    },
    Row {
        refusal: Some((Commands::of(&[Smooth]), Error::NoRefund)),
        rules: &[never_waits("REFUND")],
        ..row(Opt::Refund, (c"REFUND", c"refund"), Value::Flag, REFUNDERS)
    },
    Row {
        rules: &[never_waits("DRYRUN")],
        ..row(Opt::DryRun, (c"DRYRUN", c"dryrun"), Value::Flag, WAITERS)
    },
    Row {
        rules: &[never_waits("COUNTDENIED")],
        ..row(
            Opt::CountDenied,
            (c"COUNTDENIED", c"countdenied"),
            Value::Flag,
            Commands::of(&[Fixed]),
        )
    },
    Row {
        rules: &[Rule::OffCalendar(Error::AlignOnCalendar)],
        ..row(
            Opt::Align,
            (c"ALIGN", c"align"),
            Value::Flag,
            Commands::of(&[Fixed]),
        )
    },
    Row {
        rules: &[Rule::NeedsGrid(Error::OffsetWithoutGrid)],
        ..row(
            Opt::Offset,
            (c"OFFSET", c"minutes"),
            Value::Offset,
            Commands::of(&[Fixed]),
        )
    },
    Row {
        refusal: Some((Commands::of(&[Lease]), Error::NoBan)),
        rules: &[
            never_waits("BAN"),
            Rule::Excludes(Opt::Refund, Error::BanWithRefund),
        ],
        ..row(
            Opt::Ban,
            (c"BAN", c"lockout"),
            Value::Span,
            Commands::of(&[Throttle, Fixed, Window, Smooth, All]),
        )
    },
    row(
        Opt::Detail,
        (c"DETAIL", c"detail"),
        Value::Flag,
        Commands::of(&[All]),
    ),
    row(
        Opt::Holder,
        (c"HOLDER", c"holder"),
        Value::Holder,
        Commands::of(&[All]),
    ),
    Row {
        refusal: Some((Commands::of(&[Lease, Smooth]), Error::NoAtMost)),
        rules: &[
            not_at_most(Opt::Refund, "REFUND"),
            not_at_most(Opt::CountDenied, "COUNTDENIED"),
        ],
        ..row(Opt::AtMost, (c"ATMOST", c"atmost"), Value::Flag, REFUNDERS)
    },
    row(
        Opt::Count,
        (c"COUNT", c"n"),
        Value::Listed,
        Commands::of(&[Top]),
    ),
    row(Opt::At, (c"AT", c"unix-ms"), Value::Instant, REPLICATED),
    Row {
        refusal: Some((Commands::of(&[Release]), Error::NoBlock)),
        ..row(Opt::Block, (c"BLOCK", c"timeout"), Value::Timeout, WAITERS)
    },
];

/// A bit for each option that takes a value, at its place in the table.
const VALUED: u32 = {
    let mut bits = 0;
    let mut place = 0;
    while place < OPTIONS.len() {
        if !matches!(OPTIONS[place].value, Value::Flag) {
            bits |= 1 << place;
        }
        place += 1;
    }
    bits
};

// Every option has a bit of its own in a u32.
const _: () = assert!(OPTIONS.len() <= 32);

impl Opt {
    #[inline(always)]
    pub const fn row(self) -> &'static Row {
        &OPTIONS[self as usize]
    }

    /// The option this word names, whatever its case, for any command.
    #[inline(always)]
    pub fn of(word: &[u8]) -> Option<Opt> {
        // Every keyword is 2 to 11 letters: most words that are not one cost a length test.
        if !(2..=11).contains(&word.len()) {
            return None;
        }
        OPTIONS
            .iter()
            .find(|row| names(word, row.keyword))
            .map(|row| row.opt)
    }
}

/// Whether `word` is `keyword`, whatever its case. Every keyword is ASCII letters (a test
/// holds the tables to it), and a byte is a letter in either case exactly when it differs
/// from it at most in the case bit: one test a byte, with no branch, where
/// `eq_ignore_ascii_case` folds both sides.
#[inline(always)]
pub fn names(word: &[u8], keyword: &CStr) -> bool {
    let keyword = keyword.to_bytes();
    word.len() == keyword.len()
        && word
            .iter()
            .zip(keyword)
            .fold(0, |differ, (&w, &k)| differ | ((w ^ k) & !CASE_BIT))
            == 0
}

/// The bit an ASCII letter's two cases differ in.
const CASE_BIT: u8 = 0x20;

impl Row {
    /// The keyword as the errors quote it.
    pub fn word(&self) -> &'static str {
        self.keyword.to_str().unwrap_or_default()
    }
}

/// The words after a command's positional parameters, read for their shape: the quantity's
/// text, and where each option's keyword is.
#[derive(Debug, Clone, Copy)]
pub struct Given<'w, 'a> {
    words: &'w [&'a [u8]],
    quantity: Option<&'a [u8]>,
    /// Each option's keyword's index in `words`, plus one; 0 when the call does not name it.
    at: [u8; OPTIONS.len()],
    /// A bit for each option the call names, at its place in the table: the values and the
    /// rules visit only those, in the table's order. Most calls name none, and pay nothing
    /// more; one that names flags alone reads no values.
    named_bits: u32,
    /// Whether the period is a calendar's unit, for the rules of the options that lay windows
    /// on a grid (`on_calendar`).
    calendar: bool,
}

/// Whether `command` reads `first`, the first word after its parameters, as its quantity: a
/// limiter that takes one first does, unless the word names an option (its own or another
/// command's; no keyword starts with a digit).
#[inline(always)]
fn takes_quantity_first(command: Command, first: &[u8]) -> bool {
    Opt::Quantity.row().positional.has(command)
        && (first.first().is_some_and(u8::is_ascii_digit) || Opt::of(first).is_none())
}

/// A call that names no option: nothing after its parameters, or a quantity alone. Most calls
/// are; their parsers answer them in front of the option loop, which they never reach.
#[derive(Debug, Clone, Copy)]
pub struct Plain<'a>(Option<&'a [u8]>);

impl Plain<'_> {
    /// The words after `command`'s parameters, when they name no option.
    #[inline(always)]
    pub fn of<'a>(command: Command, words: &[&'a [u8]]) -> Option<Plain<'a>> {
        match words {
            [] => Some(Plain(None)),
            [quantity] if takes_quantity_first(command, quantity) => Some(Plain(Some(quantity))),
            _ => None,
        }
    }

    /// The quantity, of at most `max`; 1 when the call gives none.
    #[inline(always)]
    pub fn quantity(&self, max: i64) -> Result<i64, Error> {
        quantity_or_one(self.0, max)
    }
}

impl<'w, 'a> Given<'w, 'a> {
    /// Reads `words`, which follow `command`'s positional parameters; the first of them is
    /// the server's argument `first_position` (the command's name is 0).
    #[inline(always)]
    pub fn read(
        command: Command,
        words: &'w [&'a [u8]],
        first_position: usize,
    ) -> Result<Given<'w, 'a>, Error> {
        let mut given = Given {
            words,
            quantity: None,
            at: [0; OPTIONS.len()],
            named_bits: 0,
            calendar: false,
        };
        let start = match words {
            [] => return Ok(given),
            [first, ..] if takes_quantity_first(command, first) => {
                given.quantity = Some(first);
                1
            }
            _ => 0,
        };
        given.read_options(command, start, first_position)?;
        Ok(given)
    }

    /// The options, from the word at `start` on: the loop every command's options are read
    /// by.
    fn read_options(
        &mut self,
        command: Command,
        start: usize,
        first_position: usize,
    ) -> Result<(), Error> {
        let given = self;
        let words = given.words;
        let mut index = start;
        while let Some(word) = words.get(index) {
            let bad = Error::BadOption {
                command: command.name(),
                position: first_position + index,
            };
            let row = Opt::of(word).map(Opt::row).ok_or(bad)?;
            if let Some((_, refusal)) = row.refusal.filter(|&(by, _)| by.has(command)) {
                return Err(refusal(command.name()));
            }
            let takes_value = row.value != Value::Flag;
            let seen = given.at.get_mut(row.opt as usize).ok_or(Error::Internal)?;
            if !row.takers.has(command) || *seen != 0 || (takes_value && index + 1 >= words.len()) {
                return Err(bad);
            }
            *seen = u8::try_from(index + 1).map_err(|_| Error::WrongArity(command.name()))?;
            given.named_bits |= 1 << (row.opt as u32);
            index += 1 + usize::from(takes_value);
        }
        Ok(())
    }

    /// The same words, after a period that is a calendar's unit when `calendar` says so.
    #[inline(always)]
    pub fn on_calendar(self, calendar: bool) -> Given<'w, 'a> {
        Given { calendar, ..self }
    }

    /// Whether the call gives its quantity first, with no keyword.
    #[inline(always)]
    pub fn gives_quantity(&self) -> bool {
        self.quantity.is_some()
    }

    /// Whether the call names the option.
    #[inline(always)]
    pub fn has(&self, opt: Opt) -> bool {
        self.at.get(opt as usize).is_some_and(|&at| at != 0)
    }

    /// The index in the words of the option's keyword.
    #[inline(always)]
    pub fn position(&self, opt: Opt) -> Option<usize> {
        match self.at.get(opt as usize) {
            Some(&at) if at != 0 => Some(usize::from(at) - 1),
            _ => None,
        }
    }

    /// The text of the option's value.
    fn text(&self, opt: Opt) -> Option<&'a [u8]> {
        self.position(opt)
            .and_then(|at| self.words.get(at + 1).copied())
    }

    /// Seconds, or milliseconds with `MS`.
    #[inline(always)]
    pub fn unit(&self) -> TimeUnit {
        unit_of(self.has(Opt::Ms))
    }

    /// The quantity given first, of at most `max`, read once the positional parameters are
    /// (the grammar's order); 1 when the call gives none.
    #[inline(always)]
    pub fn quantity(&self, max: i64) -> Result<i64, Error> {
        quantity_or_one(self.quantity, max)
    }

    /// The options' values, after the quantity (`quantity_first`, which `QUANTITY` may
    /// set), in the table's order. BUCKETS must cut `period_ms`.
    #[inline(never)]
    pub fn values(
        &self,
        quantity_first: i64,
        max_quantity: i64,
        period_ms: i64,
    ) -> Result<Values<'a>, Error> {
        let mut values = Values {
            quantity: quantity_first,
            ..Values::PLAIN
        };
        if self.named_bits & VALUED == 0 {
            return Ok(values);
        }
        let unit = self.unit();
        for row in self.named_rows(VALUED) {
            let Some(text) = self.text(row.opt) else {
                continue;
            };
            match row.opt {
                Opt::Quantity => values.quantity = quantity(text, max_quantity)?,
                Opt::Buckets => values.cells = Some(bucket_count(text, period_ms)?),
                Opt::Burst => values.burst = Some(span(text, "BURST", unit)?),
                Opt::Warmup => values.warmup = Some(span(text, "WARMUP", unit)?),
                Opt::Cold => values.cold = Some(integer(text, "COLD", 1)?),
                Opt::Holder => values.holder = Some(holder_name(text)?),
                Opt::At => values.at_ms = Some(instant_ms(text)?),
                Opt::Block => values.block_ms = Some(block_timeout(text)?),
                Opt::Count => values.count = Some(integer(text, "COUNT", 1)?),
                Opt::Ban => {
                    values.ban_ms = Some(span(text, "BAN", unit)?.saturating_mul(unit.millis()))
                }
                Opt::Offset => values.offset_minutes = Some(offset_minutes(text)?),
                _ => return Err(Error::Internal),
            }
        }
        Ok(values)
    }

    /// The quantity, then the options' values and the rules between them (the grammar's order,
    /// once the positional parameters are read).
    #[inline(always)]
    pub fn read_values(&self, max_quantity: i64, period_ms: i64) -> Result<Values<'a>, Error> {
        let quantity = self.quantity(max_quantity)?;
        if self.named_bits == 0 {
            return Ok(Values::plain(quantity));
        }
        let values = self.values(quantity, max_quantity, period_ms)?;
        self.rules()?;
        Ok(values)
    }

    /// The rows of the options the call names among `among` (a bit for each, at its place in
    /// the table), in the table's order.
    #[inline(always)]
    fn named_rows(&self, among: u32) -> impl Iterator<Item = &'static Row> {
        let mut left = self.named_bits & among;
        std::iter::from_fn(move || {
            let place = left.trailing_zeros();
            left &= left.checked_sub(1)?;
            OPTIONS.get(place as usize)
        })
    }

    /// The rules between the options the call names, in the table's order.
    #[inline(always)]
    pub fn rules(&self) -> Result<(), Error> {
        if self.named_bits == 0 {
            return Ok(());
        }
        for row in self.named_rows(u32::MAX) {
            for &rule in row.rules {
                match rule {
                    Rule::Excludes(other, error) if self.has(other) => return Err(error),
                    Rule::Needs(other, error) if !self.has(other) => return Err(error),
                    Rule::NeedsGrid(error) if !self.calendar && !self.has(Opt::Align) => {
                        return Err(error)
                    }
                    Rule::OffCalendar(error) if self.calendar => return Err(error),
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

/// The values of a call's quantity and options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Values<'a> {
    pub quantity: i64,
    pub cells: Option<i64>,
    pub burst: Option<i64>,
    pub warmup: Option<i64>,
    pub cold: Option<i64>,
    pub holder: Option<&'a [u8]>,
    pub at_ms: Option<i64>,
    pub block_ms: Option<i64>,
    /// CL.TOP's `COUNT n`.
    pub count: Option<i64>,
    /// CL.FIXED's `OFFSET minutes`.
    pub offset_minutes: Option<i16>,
    /// `BAN lockout`, in milliseconds.
    pub ban_ms: Option<i64>,
}

impl Values<'_> {
    /// A call that names no option.
    #[inline(always)]
    pub fn plain(quantity: i64) -> Values<'static> {
        Values {
            quantity,
            ..Values::PLAIN
        }
    }

    const PLAIN: Values<'static> = Values {
        quantity: 1,
        cells: None,
        burst: None,
        warmup: None,
        cold: None,
        holder: None,
        at_ms: None,
        block_ms: None,
        count: None,
        offset_minutes: None,
        ban_ms: None,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<&[u8]> {
        text.split_whitespace().map(str::as_bytes).collect()
    }

    #[test]
    fn keywords_are_named_as_eq_ignore_ascii_case_names_them() {
        let keywords = OPTIONS
            .iter()
            .map(|row| row.keyword)
            .chain(params::LimiterKind::ALL.map(|kind| kind.keyword()))
            .chain(params::CalendarUnit::ALL.map(|unit| unit.keyword()));
        for keyword in keywords {
            let bytes = keyword.to_bytes();
            // What `names` rests on.
            assert!(bytes.iter().all(u8::is_ascii_alphabetic), "{keyword:?}");
            // Every byte in every place, and every length around the keyword's.
            for at in 0..bytes.len() {
                for byte in 0..=u8::MAX {
                    let mut word = bytes.to_vec();
                    word[at] = byte;
                    assert_eq!(names(&word, keyword), word.eq_ignore_ascii_case(bytes));
                }
            }
            for len in 0..bytes.len() + 2 {
                let word: Vec<u8> = bytes.iter().copied().cycle().take(len).collect();
                assert_eq!(names(&word, keyword), len == bytes.len());
            }
        }
    }

    #[test]
    fn the_table_is_indexed_by_its_options() {
        for (index, row) in OPTIONS.iter().enumerate() {
            assert_eq!(row.opt as usize, index);
            assert_eq!(Opt::of(row.keyword.to_bytes()), Some(row.opt));
            assert_eq!(Opt::of(row.word().to_lowercase().as_bytes()), Some(row.opt));
            if let Some((by, _)) = row.refusal {
                assert!(Command::ALL
                    .iter()
                    .all(|&c| !(by.has(c) && row.takers.has(c))));
            }
            // The errors quote the keywords as the table spells them.
            for rule in row.rules {
                match *rule {
                    Rule::Excludes(Opt::Block, Error::NeverWaits(word)) => {
                        assert_eq!(word, row.word())
                    }
                    Rule::Excludes(other, Error::AtMostWith(word)) => {
                        assert_eq!((row.opt, word), (Opt::AtMost, other.row().word()))
                    }
                    _ => {}
                }
            }
        }
    }

    #[test]
    fn options_come_in_any_order_each_once() {
        let read = |text| Given::read(Command::Throttle, &words(text), 5).map(|_| ());
        assert_eq!(read("2 BLOCK 10 MS"), Ok(()));
        assert_eq!(read("DRYRUN MS"), Ok(()));
        for (text, position) in [
            ("2 MS MS", 7),
            ("2 BLOCK", 6),
            ("MS COUNTDENIED", 6),
            ("MS 2", 6),
            ("2 BUCKETS 4", 6),
        ] {
            assert_eq!(
                read(text),
                Err(Error::BadOption {
                    command: "cl.throttle",
                    position
                }),
                "{text}"
            );
        }
    }

    #[test]
    fn a_first_word_that_is_no_keyword_is_the_quantity() {
        let text = words("x REFUND");
        let given = Given::read(Command::Fixed, &text, 4).unwrap();
        assert_eq!(given.quantity, Some(&b"x"[..]));
        assert_eq!(
            given.read_values(ANY_QUANTITY, 1000),
            Err(Error::NotAnInteger("quantity"))
        );
        let text = words("REFUND");
        let given = Given::read(Command::Fixed, &text, 4).unwrap();
        assert_eq!(given.quantity, None);
    }

    #[test]
    fn refused_keywords_are_refused_by_name() {
        assert_eq!(
            Given::read(Command::Smooth, &words("1 REFUND"), 4).map(|_| ()),
            Err(Error::NoRefund("cl.smooth"))
        );
        assert_eq!(
            Given::read(Command::Release, &words("BLOCK 1"), 3).map(|_| ()),
            Err(Error::NoBlock("cl.release"))
        );
    }

    #[test]
    fn values_then_rules_in_the_table_s_order() {
        let text = words("BLOCK x WARMUP 0 BURST 1");
        let given = Given::read(Command::Smooth, &text, 4).unwrap();
        assert_eq!(
            given.read_values(ANY_QUANTITY, 1),
            Err(Error::BelowMinimum {
                arg: "WARMUP",
                min: 1
            })
        );
        let text = words("DRYRUN BLOCK 5 WARMUP 2 BURST 1");
        let given = Given::read(Command::Smooth, &text, 4).unwrap();
        assert_eq!(
            given.read_values(ANY_QUANTITY, 1),
            Err(Error::BurstAndWarmup)
        );
        let text = words("COUNTDENIED DRYRUN BLOCK 5");
        let given = Given::read(Command::Fixed, &text, 4).unwrap();
        assert_eq!(given.rules(), Err(Error::NeverWaits("DRYRUN")));
    }
}

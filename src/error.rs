//! Every way a command can fail, and the one place where the reply text is made.

use std::ffi::CString;

/// Why a command was refused. Each variant becomes one Redis error reply; the command layer
/// guarantees that nothing was written when one is returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The command was called with too few or too many arguments.
    WrongArity(&'static str),
    /// A trailing argument that is neither a quantity nor `MS`.
    Syntax,
    /// The named argument is not a decimal integer that fits in 64 bits.
    NotAnInteger(&'static str),
    /// The named argument is below the smallest value it may take.
    BelowMinimum { arg: &'static str, min: i64 },
    /// The named argument is above the largest value it may take.
    AboveMaximum { arg: &'static str, max: i64 },
    /// CL.ALL: a key given twice (positions from 1).
    DuplicateKey { first: usize, again: usize },
    /// CL.ALL: the key at this position (from 1) has no limiter.
    MissingLimiter(usize),
    /// CL.ALL: more limiters than `numkeys`.
    ExtraLimiter,
    /// CL.ALL: the limiter at this position (from 1) is not THROTTLE, FIXED, WINDOW or LEASE.
    UnknownLimiter(usize),
    /// CL.ALL: a LEASE limiter, and no `HOLDER holder` to hold it.
    NoHolder,
    /// CL.ALL: `HOLDER holder`, and no LEASE limiter for it to hold.
    HolderWithoutLease,
    /// A holder name that is empty or longer than 255 bytes.
    HolderLength,
    /// The argument at this position (the key first) is not one of the command's options,
    /// repeats one, or lacks its value.
    BadOption {
        command: &'static str,
        position: usize,
    },
    /// The command takes no `BLOCK` (CL.RELEASE never waits).
    NoBlock(&'static str),
    /// `REFUND` or `DRYRUN` with `BLOCK`: neither ever waits.
    NeverWaits(&'static str),
    /// CL.WINDOW's `BUCKETS n` does not cut the period into cells of whole milliseconds.
    PeriodNotCut,
    /// The key holds a sliding window of the other form: `Some(n)` cells, or `None`, the
    /// exact log.
    WindowForm(Option<i64>),
    /// The command takes no `REFUND` (CL.SMOOTH reserves instants, not units).
    NoRefund(&'static str),
    /// The command, or a CL.ALL limiter, takes no `ATMOST`: it grants no part of a call (a
    /// lease is one slot; a smooth limiter admits any quantity when it is free).
    NoAtMost(&'static str),
    /// CL.ALL: `ATMOST` with a LEASE limiter, which grants no part of a call.
    AtMostLease,
    /// `ATMOST` with an option that gives units back or counts a denial's.
    AtMostWith(&'static str),
    /// CL.SMOOTH: `BURST` and `WARMUP` together; a limiter has one shape.
    BurstAndWarmup,
    /// CL.SMOOTH: `COLD`, and no `WARMUP` for it to shape.
    ColdWithoutWarmup,
    /// OFFSET with neither ALIGN nor a calendar period: there is no grid for it to move.
    OffsetWithoutGrid,
    /// ALIGN with a calendar period, which keeps to the calendar already.
    AlignOnCalendar,
    /// BAN with REFUND: a refund is never denied, so it never bans.
    BanWithRefund,
    /// The command takes no BAN: a lease set is never banned.
    NoBan(&'static str),
    /// CL.BAN on a key that holds no rate limiter's state.
    NotALimiter,
    /// CL.SMOOTH: the key holds a limiter of the other shape: warming up when `true`.
    SmoothShape(bool),
    /// CL.ALL: the limiter at this position (from 1) is SMOOTH, which it does not take.
    SmoothInAll(usize),
    /// The named argument makes the limiter's time arithmetic overflow.
    TooLarge(&'static str),
    /// `count` exceeds the period in nanoseconds: GCRA would need to admit more than one unit
    /// per nanosecond.
    SubNanosecondInterval,
    /// `AT` came from a client: only the replication stream and the AOF may set the instant.
    AtFromClient,
    /// The key holds a value of another type.
    WrongType,
    /// The key holds a string this command cannot read as its state.
    CorruptState,
    /// The key's state, found damaged only as the call's change was written: the same reply
    /// as `CorruptState`, from a step that must not have the call run again.
    CorruptOnWrite,
    /// A plain body hands the call to a thorough one (commands::Run): a look, which opens its
    /// key read-only, or a word in CL.FIXED's period. Never a reply, as the call runs again by
    /// a thorough body, which never returns it.
    Thorough,
    /// An admitted call would grow a sliding window log past the longest string the server
    /// stores (512 MB): a period far longer than the traffic it logs.
    LogTooLong,
    /// An admitted call would grow a set of leases past the longest string the server stores.
    LeaseSetTooLong,
    /// The server's clock reads outside the range this module can represent (before 1970 or
    /// after 2116).
    ClockOutOfRange,
    /// A waiter's node became a replica before its units fit.
    Readonly,
    /// A defect in this module was caught before it could take the server down.
    Internal,
}

impl Error {
    /// The error reply exactly as the client sees it, error code first, as Redis does.
    pub fn message(&self) -> String {
        match self {
            Error::WrongArity(command) => {
                format!("ERR wrong number of arguments for '{command}' command")
            }
            Error::Syntax => "ERR syntax error".to_owned(),
            Error::NotAnInteger(arg) => format!("ERR {arg} is not an integer or out of range"),
            Error::BelowMinimum { arg, min } => format!("ERR {arg} must be >= {min}"),
            Error::AboveMaximum { arg, max } => format!("ERR {arg} must be <= {max}"),
            Error::DuplicateKey { first, again } => format!(
                "ERR key {again} is the same as key {first}: each key takes one limiter"
            ),
            Error::MissingLimiter(key) => format!(
                "ERR no limiter for key {key}: give one THROTTLE, FIXED, WINDOW or LEASE limiter per key, in key order"
            ),
            Error::ExtraLimiter => {
                "ERR more limiters than numkeys: give one limiter per key, in key order".to_owned()
            }
            Error::UnknownLimiter(position) => {
                format!("ERR limiter {position} is not THROTTLE, FIXED, WINDOW or LEASE")
            }
            Error::NoHolder => {
                "ERR a LEASE limiter needs HOLDER holder: the name the lease is held under".to_owned()
            }
            Error::HolderWithoutLease => {
                "ERR HOLDER is given, but no limiter is a LEASE".to_owned()
            }
            Error::HolderLength => "ERR holder must be 1 to 255 bytes".to_owned(),
            Error::BadOption { command, position } => format!(
                "ERR syntax error: argument {position} of '{command}' is not one of its options, repeats one, or lacks its value"
            ),
            Error::NoBlock(command) => format!("ERR {command} does not wait: BLOCK is not one of its arguments"),
            Error::NeverWaits(option) => format!(
                "ERR {option} and BLOCK options at the same time are not compatible: a call with {option} never waits"
            ),
            Error::PeriodNotCut => {
                "ERR period must be a multiple of BUCKETS, in milliseconds".to_owned()
            }
            Error::WindowForm(Some(n)) => {
                format!("ERR the key holds a sliding window of BUCKETS {n}, not an exact one")
            }
            Error::WindowForm(None) => {
                "ERR the key holds an exact sliding window, not one of BUCKETS".to_owned()
            }
            Error::NoRefund(command) => format!(
                "ERR {command} does not refund: its reservations are instants, not units; REFUND is not one of its arguments"
            ),
            Error::NoAtMost(command) => format!(
                "ERR {command} grants no part of a call: ATMOST is not one of its arguments"
            ),
            Error::AtMostLease => {
                "ERR a LEASE limiter grants no part of a call: CL.ALL takes ATMOST only without one".to_owned()
            }
            Error::AtMostWith(option) => format!(
                "ERR ATMOST and {option} options at the same time are not compatible"
            ),
            Error::BurstAndWarmup => {
                "ERR BURST and WARMUP options at the same time are not compatible".to_owned()
            }
            Error::ColdWithoutWarmup => {
                "ERR COLD is given, but no WARMUP for it to shape".to_owned()
            }
            Error::OffsetWithoutGrid => {
                "ERR OFFSET is given, but no ALIGN or calendar period for it to shift".to_owned()
            }
            Error::BanWithRefund => {
                "ERR BAN and REFUND options at the same time are not compatible: a refund is never denied".to_owned()
            }
            Error::NoBan(command) => {
                format!("ERR {command} takes no BAN: a lease set is never banned")
            }
            Error::NotALimiter => {
                "ERR the key holds no rate limiter's state: only those are banned".to_owned()
            }
            Error::AlignOnCalendar => {
                "ERR ALIGN is for a period in seconds or ms: a calendar period keeps to the calendar already".to_owned()
            }
            Error::SmoothShape(true) => {
                "ERR the key holds a smooth limiter with WARMUP, not a bursty one".to_owned()
            }
            Error::SmoothShape(false) => {
                "ERR the key holds a bursty smooth limiter, not one with WARMUP".to_owned()
            }
            Error::SmoothInAll(position) => format!(
                "ERR limiter {position} is SMOOTH, which CL.ALL does not take: call CL.SMOOTH on its key alone"
            ),
            Error::TooLarge(arg) => {
                format!("ERR {arg} is too large: the limiter's time span would overflow")
            }
            Error::SubNanosecondInterval => {
                "ERR count is too large for period: the emission interval would be under 1 ns"
                    .to_owned()
            }
            Error::AtFromClient => {
                "ERR AT is accepted only from the replication stream or the AOF".to_owned()
            }
            Error::WrongType => {
                "WRONGTYPE Operation against a key holding the wrong kind of value".to_owned()
            }
            Error::CorruptState | Error::CorruptOnWrite => {
                "ERR the value at this key is not a valid state for this command".to_owned()
            }
            Error::LogTooLong => {
                "ERR the sliding window log would exceed 512 MB: use a shorter period or fewer, larger calls".to_owned()
            }
            Error::LeaseSetTooLong => {
                "ERR the set of leases would exceed 512 MB: use a smaller limit or shorter holder names".to_owned()
            }
            Error::ClockOutOfRange => "ERR the server clock is out of range".to_owned(),
            Error::Readonly => "READONLY You can't write against a read only replica.".to_owned(),
            Error::Internal | Error::Thorough => {
                "ERR internal error in redis-cell; nothing was changed".to_owned()
            }
        }
    }

    /// The message as the NUL-terminated string the module API wants. Messages never contain
    /// NUL bytes (argument names are static identifiers), so the fallback is unreachable in
    /// practice but keeps this total.
    pub fn to_c_string(&self) -> CString {
        CString::new(self.message()).unwrap_or_else(|_| c"ERR".to_owned())
    }
}

/// The Functions library's own refusals (lua/), where it cannot do what the module does.
/// The module never sends them: they are here so that every reply text has one home, from
/// which lua/errors.lua is generated (scripts/lua_forms.py).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LibraryError {
    /// A BLOCK the module would take: a library call cannot wait.
    CannotWait(&'static str),
    /// A number past 2^53 - 1, which the library's doubles cannot keep exact.
    Inexact(&'static str),
    /// The script form was called with a name it has no function for.
    NoFunction(&'static str),
}

impl LibraryError {
    pub fn message(&self) -> String {
        match self {
            LibraryError::CannotWait(command) => format!(
                "ERR {command} cannot wait in the library: BLOCK needs the redis-cell module"
            ),
            LibraryError::Inexact(arg) => format!("ERR {arg} is too large for the library"),
            LibraryError::NoFunction(name) => format!("ERR the library has no function {name}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One error of each variant, made with this name and this number wherever it takes one.
    fn every_variant(word: &'static str, number: usize) -> Vec<Error> {
        vec![
            Error::WrongArity(word),
            Error::Syntax,
            Error::NotAnInteger(word),
            Error::BelowMinimum {
                arg: word,
                min: number as i64,
            },
            Error::AboveMaximum {
                arg: word,
                max: number as i64,
            },
            Error::DuplicateKey {
                first: number,
                again: number,
            },
            Error::MissingLimiter(number),
            Error::ExtraLimiter,
            Error::UnknownLimiter(number),
            Error::NoHolder,
            Error::HolderWithoutLease,
            Error::HolderLength,
            Error::BadOption {
                command: word,
                position: number,
            },
            Error::NoBlock(word),
            Error::NeverWaits(word),
            Error::PeriodNotCut,
            Error::WindowForm(Some(number as i64)),
            Error::WindowForm(None),
            Error::NoRefund(word),
            Error::NoAtMost(word),
            Error::AtMostLease,
            Error::AtMostWith(word),
            Error::BurstAndWarmup,
            Error::ColdWithoutWarmup,
            Error::OffsetWithoutGrid,
            Error::AlignOnCalendar,
            Error::BanWithRefund,
            Error::NoBan(word),
            Error::NotALimiter,
            Error::SmoothShape(true),
            Error::SmoothShape(false),
            Error::SmoothInAll(number),
            Error::TooLarge(word),
            Error::SubNanosecondInterval,
            Error::AtFromClient,
            Error::WrongType,
            Error::CorruptState,
            Error::CorruptOnWrite,
            Error::Thorough,
            Error::LogTooLong,
            Error::LeaseSetTooLong,
            Error::ClockOutOfRange,
            Error::Readonly,
            Error::Internal,
        ]
    }

    #[test]
    fn every_message_starts_with_a_redis_error_code() {
        let all = every_variant("count", 5);
        for error in all {
            let message = error.message();
            assert!(
                ["ERR ", "WRONGTYPE ", "READONLY "]
                    .iter()
                    .any(|code| message.starts_with(code)),
                "{message}"
            );
            assert_eq!(error.to_c_string().to_bytes(), message.as_bytes());
        }
    }

    #[test]
    fn messages_name_the_offending_argument() {
        assert_eq!(
            Error::NotAnInteger("max_burst").message(),
            "ERR max_burst is not an integer or out of range"
        );
        assert_eq!(
            Error::BelowMinimum {
                arg: "period",
                min: 1
            }
            .message(),
            "ERR period must be >= 1"
        );
    }

    /// One piece of an error text's pattern.
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Piece {
        Char(char),
        /// A template's name (an argument's, a command's): one word or more.
        Word,
        /// A template's number (a position, a bound).
        Digits,
        /// A quote's placeholder (`<argument>`, `…`): any text.
        Any,
    }

    impl Piece {
        fn takes(self, c: char) -> bool {
            match self {
                Piece::Word => !c.is_whitespace(),
                Piece::Digits => c.is_ascii_digit() || c == '-',
                Piece::Char(own) => own == c,
                Piece::Any => true,
            }
        }
    }

    /// Every reply text the module can send, as a pattern: each name and number the
    /// message is made with, a placeholder.
    fn templates() -> Vec<Vec<Piece>> {
        const WORD: &str = "\u{1}";
        const NUMBER: usize = 987_654_321;
        let all = every_variant(WORD, NUMBER);
        all.iter()
            .map(|error| {
                let message = error.message().replace(&NUMBER.to_string(), "\u{2}");
                message
                    .chars()
                    .map(|c| match c {
                        '\u{1}' => Piece::Word,
                        '\u{2}' => Piece::Digits,
                        c => Piece::Char(c),
                    })
                    .collect()
            })
            .collect()
    }

    /// An error text as a quote gives it: `<placeholder>` and `…` stand for any text.
    fn quoted(quote: &str) -> Vec<Piece> {
        let mut pieces = Vec::new();
        let mut rest = quote;
        while let Some(c) = rest.chars().next() {
            let placeholder = rest
                .strip_prefix('<')
                .and_then(|after| after.split_once('>'))
                .filter(|(name, _)| {
                    name.starts_with(|c: char| c.is_ascii_alphabetic())
                        && name
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || "_-".contains(c))
                });
            if let Some((_, after)) = placeholder {
                pieces.push(Piece::Any);
                rest = after;
            } else {
                pieces.push(if c == '…' {
                    Piece::Any
                } else {
                    Piece::Char(c)
                });
                rest = &rest[c.len_utf8()..];
            }
        }
        pieces
    }

    /// Whether some text fits both the quote's pattern and the template's.
    fn overlap(quote: &[Piece], template: &[Piece]) -> bool {
        let mut seen = std::collections::HashSet::new();
        let mut todo = vec![(0, 0)];
        while let Some((i, j)) = todo.pop() {
            if !seen.insert((i, j)) {
                continue;
            }
            match (quote.get(i), template.get(j)) {
                (None, None) => return true,
                // Any text: none more, or the template's next piece, whatever it is.
                (Some(Piece::Any), _) => {
                    todo.push((i + 1, j));
                    if j < template.len() {
                        todo.push((i, j + 1));
                    }
                }
                // A name or number: this character, and then more of it or the end of it.
                (Some(&Piece::Char(c)), Some(&wild @ (Piece::Word | Piece::Digits)))
                    if wild.takes(c) =>
                {
                    todo.push((i + 1, j));
                    todo.push((i + 1, j + 1));
                }
                (Some(&Piece::Char(c)), Some(&Piece::Char(own))) if c == own => {
                    todo.push((i + 1, j + 1))
                }
                _ => {}
            }
        }
        false
    }

    #[test]
    fn every_error_text_quoted_is_one_the_module_sends() {
        // And the texts only the Redis Functions library (lua/) sends, where it cannot do
        // what the module does; a word of the template stands for any word.
        let mut templates = templates();
        templates.extend(
            [
                LibraryError::CannotWait("\u{1}"),
                LibraryError::Inexact("\u{1}"),
                LibraryError::NoFunction("\u{1}"),
            ]
            .iter()
            .map(|error| {
                error
                    .message()
                    .chars()
                    .map(|c| match c {
                        '\u{1}' => Piece::Word,
                        c => Piece::Char(c),
                    })
                    .collect::<Vec<_>>()
            }),
        );
        let mut checked = 0;
        let mut wrong = Vec::new();
        for quote in crate::quotes::all() {
            let text = quote.text.strip_prefix("(error) ").unwrap_or(&quote.text);
            // A code alone (`ERR`, `WRONGTYPE`) names the kind of reply, not a text; the
            // server's own errors (OOM, MOVED, CROSSSLOT, …) are its to word.
            if !["ERR ", "WRONGTYPE ", "READONLY "]
                .iter()
                .any(|code| text.starts_with(code))
            {
                continue;
            }
            checked += 1;
            let pattern = quoted(text);
            if !templates.iter().any(|template| overlap(&pattern, template)) {
                wrong.push(format!("{}: `{text}`", quote.place));
            }
        }
        assert!(
            wrong.is_empty(),
            "not texts of error.rs:\n{}",
            wrong.join("\n")
        );
        assert!(checked >= 20, "only {checked} error texts found");
    }

    #[test]
    fn a_quoted_text_fits_a_template_with_or_without_placeholders() {
        let templates = templates();
        let fits = |quote: &str| templates.iter().any(|t| overlap(&quoted(quote), t));
        for quote in [
            "ERR limit must be >= 1",
            "ERR numkeys must be <= 16",
            "ERR <argument> must be >= <minimum>",
            "ERR … must be >= 1",
            "ERR the sliding window log would exceed 512 MB: …",
        ] {
            assert!(fits(quote), "{quote}");
        }
        for quote in [
            "ERR limit must be > 1",
            "ERR limit must be >= 1 or so",
            "ERR limit must be >= one",
            "ERR the sliding window log would exceed 512 MB",
        ] {
            assert!(!fits(quote), "{quote}");
        }
    }
}

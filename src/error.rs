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
            Error::CorruptState => {
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
            Error::Internal => "ERR internal error in redis-cell; nothing was changed".to_owned(),
        }
    }

    /// The message as the NUL-terminated string the module API wants. Messages never contain
    /// NUL bytes (argument names are static identifiers), so the fallback is unreachable in
    /// practice but keeps this total.
    pub fn to_c_string(&self) -> CString {
        CString::new(self.message()).unwrap_or_else(|_| c"ERR".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_starts_with_a_redis_error_code() {
        let all = [
            Error::WrongArity("cl.throttle"),
            Error::Syntax,
            Error::NotAnInteger("count"),
            Error::BelowMinimum {
                arg: "count",
                min: 1,
            },
            Error::AboveMaximum {
                arg: "numkeys",
                max: 16,
            },
            Error::DuplicateKey { first: 1, again: 2 },
            Error::MissingLimiter(2),
            Error::ExtraLimiter,
            Error::UnknownLimiter(1),
            Error::NoHolder,
            Error::HolderWithoutLease,
            Error::HolderLength,
            Error::NoBlock("cl.release"),
            Error::NeverWaits("REFUND"),
            Error::BadOption {
                command: "cl.lease",
                position: 5,
            },
            Error::LeaseSetTooLong,
            Error::TooLarge("period"),
            Error::SubNanosecondInterval,
            Error::AtFromClient,
            Error::WrongType,
            Error::CorruptState,
            Error::LogTooLong,
            Error::ClockOutOfRange,
            Error::Readonly,
            Error::Internal,
        ];
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
}

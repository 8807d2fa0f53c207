//! A lockout (`BAN lockout`, `CL.BAN`): the banned form of a rate limiter's key, and what a
//! call on a banned key answers. Pure: bytes and instants in, bytes and answers out.
//!
//! One form for every rate limiter, so that a ban never needs to know which limiter it
//! guards: the ban's end and the limiter's own expiry, then the limiter's own bytes as they
//! were, untouched. A ban never weakens the limit it guards: when it ends, the limiter reads
//! its own bytes again and answers as it would have without the ban.
//!
//! ```text
//! 0..3    "CLX"
//! 3       version, 1
//! 4..8    0
//! 8..16   0xff each: a NaN
//! 16..24  the ban's end, unix ms                      i64
//! 24..32  the limiter's own expiry, unix ms; 0: none  i64
//! 32..    the limiter's own bytes (none: no state)
//! ```
//!
//! No limiter's state reads as it, nor it as one: GCRA's and the fixed window's are decimal
//! integers, the sliding windows' and the leases' start with their own magic, and a smooth
//! limiter's 32 bytes keep their stored permits where this form has its NaN, which no smooth
//! state holds (smooth/state.rs refuses it). Its key expires at the later of the two ends.

use crate::bytes::le_i64;
use crate::error::Error;
use crate::limiter::Source;
use crate::outcome::Outcome;
use crate::time::NANOS_PER_MILLI;

/// The form's first 16 bytes: its magic, its version, and a NaN where a smooth limiter keeps
/// its stored permits.
const MARK: [u8; 16] = [
    b'C', b'L', b'X', 1, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
];
/// The bytes before the limiter's own.
pub const HEADER_LEN: usize = 32;
/// The own expiry of a key banned while it held no state.
const NO_STATE: i64 = 0;

/// A banned key, read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Banned<'k> {
    /// The instant the ban ends, in unix ms: banned over `[start, until_ms)`.
    pub until_ms: i64,
    /// The limiter's own state and the instant its key would have expired, if it had one.
    pub own: Option<(&'k [u8], i64)>,
}

impl<'k> Banned<'k> {
    /// The banned form in `raw`, if that is what it holds.
    pub fn parse(raw: &'k [u8]) -> Option<Banned<'k>> {
        let (header, own) = raw.split_at_checked(HEADER_LEN)?;
        if header.get(..MARK.len())? != MARK {
            return None;
        }
        let until_ms = le_i64(header, 16);
        let own_expire_at_ms = le_i64(header, 24);
        let own = match (own.is_empty(), own_expire_at_ms) {
            (true, NO_STATE) => None,
            // A state always expires, and an expiry is a state's.
            (false, at) if at > 0 => Some((own, at)),
            _ => return None,
        };
        (until_ms > 0).then_some(Banned { until_ms, own })
    }

    /// Whether the ban holds at `now_ms`.
    pub fn holds(&self, now_ms: i64) -> bool {
        now_ms < self.until_ms
    }

    /// The limiter's own state as a source to read, as its key would hold it at `now_ms`:
    /// gone once its own expiry has come.
    pub fn own_at(&self, now_ms: i64) -> Own<'k> {
        Own(self.own.filter(|&(_, expire_at_ms)| now_ms < expire_at_ms))
    }

    /// When the banned key expires: at the later of the two ends.
    pub fn expire_at_ms(&self) -> i64 {
        self.own
            .map_or(self.until_ms, |(_, own)| own.max(self.until_ms))
    }
}

/// The banned form of a key banned until `until_ms`, which held `own` (the limiter's bytes
/// and its key's expiry), into `out`.
pub fn encode(until_ms: i64, own: Option<(&[u8], i64)>, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&MARK);
    out.extend_from_slice(&until_ms.to_le_bytes());
    let (bytes, expire_at_ms) = own.unwrap_or((&[], NO_STATE));
    out.extend_from_slice(&expire_at_ms.to_le_bytes());
    out.extend_from_slice(bytes);
}

/// Whether `raw` is a rate limiter's state, which a ban may guard: a decimal integer (GCRA's
/// and the fixed window's), a sound log or cells (the sliding windows'), a smooth limiter's
/// 32 bytes, or the banned form itself. A lease set is not: it is never banned.
pub fn guards(raw: &[u8]) -> bool {
    crate::decimal::parse_i64(raw).is_some()
        || crate::window::holds_log(raw)
        || crate::buckets::cells_in(raw).is_some()
        || crate::smooth::state::KeyState::decode(raw).is_ok()
        || Banned::parse(raw).is_some()
}

/// A banned key's own state, as a limiter reads its key (`Limiter::read`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Own<'k>(Option<(&'k [u8], i64)>);

impl<'k> Own<'k> {
    /// The limiter's bytes and its key's expiry, if it has a state.
    pub fn state(&self) -> Option<(&'k [u8], i64)> {
        self.0
    }
}

impl Source for Own<'_> {
    fn integer(&self) -> Result<Option<i64>, Error> {
        self.0
            .map(|(bytes, _)| crate::decimal::parse_i64(bytes).ok_or(Error::CorruptState))
            .transpose()
    }

    fn bytes(&self) -> Result<Option<&[u8]>, Error> {
        Ok(self.0.map(|(bytes, _)| bytes))
    }

    fn expire_at_ms(&self) -> Result<Option<i64>, Error> {
        Ok(self.0.map(|(_, expire_at_ms)| expire_at_ms))
    }
}

/// What a call on a key banned until `until_ms` answers at `now_ms`: denied, none remaining,
/// to retry when the ban ends; whole again at the later of that end and the limiter's own
/// reset (`own`, what the limiter answers a look at its own state).
pub fn denial(own: Outcome, until_ms: i64, now_ms: i64) -> Outcome {
    let wait_ns = until_ms
        .saturating_sub(now_ms)
        .saturating_mul(NANOS_PER_MILLI);
    Outcome::denied(own.limit, 0, Some(wait_ns), wait_ns.max(own.reset_after_ns))
}

/// The denial of the call that bans until `until_ms`: to retry no sooner than the ban's end,
/// as every call until then will be told, and whole no sooner either.
pub fn banning(denial: Outcome, until_ms: i64, now_ms: i64) -> Outcome {
    let wait_ns = until_ms
        .saturating_sub(now_ms)
        .saturating_mul(NANOS_PER_MILLI);
    Outcome {
        retry_after_ns: denial.retry_after_ns.map(|retry| retry.max(wait_ns)),
        reset_after_ns: denial.reset_after_ns.max(wait_ns),
        ..denial
    }
}

/// Whether a denial bans, with `BAN`: a real call (not a look, not a dry run) that its own
/// limiter denied, not waiters who came first, with units that could fit later.
pub fn bans(own_denial: &Outcome, writes: bool) -> bool {
    writes && own_denial.limited && own_denial.retry_after_ns.is_some()
}

/// The end of a ban of `span_ms` from `now_ms` (both far within an `i64`: an instant of the
/// clock, and a span of at most 2^62 ns).
pub fn end(now_ms: i64, span_ms: i64) -> i64 {
    now_ms.saturating_add(span_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_ban_round_trips_with_and_without_state() {
        let mut out = Vec::new();
        encode(5_000, Some((b"42", 9_000)), &mut out);
        assert_eq!(out.len(), HEADER_LEN + 2);
        let banned = Banned::parse(&out).unwrap();
        assert_eq!(banned.until_ms, 5_000);
        assert_eq!(banned.own, Some((&b"42"[..], 9_000)));
        assert_eq!(banned.expire_at_ms(), 9_000);
        assert!(banned.holds(4_999) && !banned.holds(5_000));
        assert_eq!(banned.own_at(8_999).integer(), Ok(Some(42)));
        assert_eq!(banned.own_at(9_000).integer(), Ok(None));
        encode(5_000, None, &mut out);
        let empty = Banned::parse(&out).unwrap();
        assert_eq!((empty.own, empty.expire_at_ms()), (None, 5_000));
    }

    #[test]
    fn no_limiter_s_state_reads_as_banned() {
        for raw in [
            &b"1700000000000000000"[..],
            b"-5",
            b"CLW\x01",
            b"CLB\x01",
            b"CLL\x01",
            &[0u8; 32],
            b"",
        ] {
            assert_eq!(Banned::parse(raw), None);
        }
        // A smooth limiter's state whose first bytes happen to be the mark's is no ban, and
        // no ban is a smooth state.
        let mut smooth = crate::smooth::state::KeyState {
            next_free: i64::from_le_bytes(*b"CLX\x01\0\0\0\0"),
            stored: 0.5,
            max_permits: 1.0,
            cool_down: 1_000.0,
            warming_up: false,
        }
        .encode();
        assert!(crate::smooth::state::KeyState::decode(&smooth).is_ok());
        assert_eq!(Banned::parse(&smooth), None);
        smooth[8..16].fill(0xff);
        assert!(crate::smooth::state::KeyState::decode(&smooth).is_err());
        let mut banned = Vec::new();
        encode(5_000, None, &mut banned);
        assert_eq!(banned.len(), 32);
        assert!(crate::smooth::state::KeyState::decode(&banned).is_err());
        let mut out = Vec::new();
        encode(5_000, Some((b"", 9_000)), &mut out);
        // An expiry without a state, or a state without one, is no ban's.
        assert_eq!(Banned::parse(&out), None);
        encode(5_000, None, &mut out);
        out.push(b'1');
        assert_eq!(Banned::parse(&out), None);
    }

    #[test]
    fn a_banned_call_waits_for_the_ban_and_the_limiter_s_own_reset() {
        let own = Outcome::allowed(10, 3, 7_000 * NANOS_PER_MILLI);
        let denied = denial(own, 5_000, 1_000);
        assert_eq!(
            denied.to_reply(crate::time::TimeUnit::Milliseconds),
            [1, 10, 0, 4_000, 7_000]
        );
        assert!(bans(&Outcome::denied(1, 0, Some(1), 1), true));
        assert!(!bans(&Outcome::denied(1, 0, None, 1), true));
        assert!(!bans(&Outcome::denied(1, 0, Some(1), 1), false));
        assert!(!bans(&own, true));
    }

    proptest! {
        #[test]
        fn any_bytes_parse_or_not_without_panicking(raw in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Some(banned) = Banned::parse(&raw) {
                let mut again = Vec::new();
                encode(banned.until_ms, banned.own, &mut again);
                prop_assert_eq!(again, raw);
            }
        }

        #[test]
        fn what_is_encoded_parses_back(
            until in 1i64..i64::MAX,
            own in proptest::option::of((proptest::collection::vec(any::<u8>(), 1..40), 1i64..i64::MAX)),
        ) {
            let mut out = Vec::new();
            encode(until, own.as_ref().map(|(b, e)| (b.as_slice(), *e)), &mut out);
            let banned = Banned::parse(&out).unwrap();
            prop_assert_eq!(banned.until_ms, until);
            prop_assert_eq!(banned.own, own.as_ref().map(|(b, e)| (b.as_slice(), *e)));
        }
    }
}

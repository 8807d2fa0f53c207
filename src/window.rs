//! CL.WINDOW's pure core: an exact sliding window over a compact log of admitted units.
//!
//! A unit admitted at `t` counts against the limit while `now - t < period`. The log keeps one
//! entry per millisecond in which units were admitted, oldest first; calls in the same
//! millisecond merge into one entry. Time is in integer milliseconds since the Unix epoch.
//!
//! # Encoding
//!
//! One string value: a 40-byte header, then entries. All header integers are little-endian.
//!
//! | bytes  | field                                                          |
//! |--------|----------------------------------------------------------------|
//! | 0..3   | magic `CLW`                                                    |
//! | 3      | format version, 1                                              |
//! | 4..8   | `head`: byte offset of the oldest entry still logged (u32)     |
//! | 8..12  | `tail`: byte offset of the newest entry (u32)                  |
//! | 12..20 | `head_ms`: when the head entry's units were admitted (i64)     |
//! | 20..28 | `tail_ms`: when the tail entry's units were admitted (i64)     |
//! | 28..36 | `total`: units in the entries from `head` to the end (i64)     |
//! | 36..40 | checksum of bytes 0..36 (u32)                                  |
//!
//! An entry is two LEB128 varints: milliseconds since the previous entry, then its units
//! (≥ 1). Calls at distinct milliseconds less than 128 ms apart cost 2 bytes each.
//!
//! Expired entries are not cut out one by one: `head` moves past them, and the bytes before it
//! are reclaimed by moving the live entries down only once they are more than half the value.
//! So a call costs the entries it expires plus a constant, however long the log.

use crate::args::WindowArgs;
use crate::error::Error;
use crate::reply::Outcome;

pub const HEADER_LEN: usize = 40;
const MAGIC: &[u8; 3] = b"CLW";
const VERSION: u8 = 1;
/// Dead bytes before `head` are reclaimed once there are at least this many and they are
/// more than half the entries' bytes.
const COMPACT_MIN: usize = 64;
const NANOS_PER_MILLI: i64 = 1_000_000;

/// A growable byte buffer holding a log: a `Vec<u8>` in tests, the key's string in Redis.
pub trait LogBuffer {
    fn bytes_mut(&mut self) -> Result<&mut [u8], Error>;
    /// Grows (with zero bytes) or shrinks the buffer to exactly `len` bytes.
    fn resize(&mut self, len: usize) -> Result<(), Error>;
}

impl LogBuffer for Vec<u8> {
    fn bytes_mut(&mut self) -> Result<&mut [u8], Error> {
        Ok(self.as_mut_slice())
    }

    fn resize(&mut self, len: usize) -> Result<(), Error> {
        Vec::resize(self, len, 0);
        Ok(())
    }
}

/// One request against a sliding window limiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlidingWindow {
    limit: i64,
    period_ms: i64,
    quantity: i64,
}

/// The reply, and the change to make to the log if the request was admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub outcome: Outcome,
    pub append: Option<Append>,
}

/// Log `units` at `at_ms`, dropping the entries before `head` (already expired).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Append {
    pub at_ms: i64,
    pub units: i64,
    /// What stays of the log decided on; `None` when nothing does.
    kept: Option<Kept>,
    /// When the key should expire: the instant the newest unit leaves the window.
    pub expire_at_ms: i64,
}

/// The live part of a log: its oldest entry after pruning, its newest, and their units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Kept {
    oldest: Cursor,
    newest: Cursor,
    total: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Header {
    head: usize,
    tail: usize,
    head_ms: i64,
    tail_ms: i64,
    total: i64,
}

/// A position in the log: an entry's offset and the time of its units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cursor {
    offset: usize,
    at_ms: i64,
}

struct Entry {
    delta_ms: i64,
    units: i64,
    next: usize,
}

impl Cursor {
    /// The position of the entry after `entry`, the one at this position.
    fn next(self, bytes: &[u8], entry: &Entry) -> Result<Cursor, Error> {
        let next = read_entry(bytes, entry.next)?;
        Ok(Cursor {
            offset: entry.next,
            at_ms: self
                .at_ms
                .checked_add(next.delta_ms)
                .ok_or(Error::CorruptState)?,
        })
    }
}

impl SlidingWindow {
    /// From validated arguments (`limit ≥ 1`, `period_ms` within the span limit,
    /// `quantity ≥ 0`).
    pub fn new(args: &WindowArgs) -> SlidingWindow {
        SlidingWindow {
            limit: args.limit,
            period_ms: args.period_ms,
            quantity: args.quantity,
        }
    }

    /// Decides a request at `now_ms` against the stored log, if any, without changing it.
    pub fn decide(&self, log: Option<&[u8]>, now_ms: i64) -> Result<Decision, Error> {
        let header = log.map(decode_header).transpose()?;
        let (live, live_total) = match (log, header) {
            (Some(bytes), Some(header)) => self.prune(bytes, &header, now_ms)?,
            _ => (None, 0),
        };
        let newest_ms = header.filter(|_| live.is_some()).map(|h| h.tail_ms);
        // Stored instants are trusted only as far as the checksum goes: saturate, never wrap.
        let wait_until_gone = |at_ms: i64| {
            at_ms
                .saturating_add(self.period_ms)
                .saturating_sub(now_ms)
                .saturating_mul(NANOS_PER_MILLI)
        };
        let fits = live_total
            .checked_add(self.quantity)
            .filter(|&wanted| wanted <= self.limit);

        let decision = match fits {
            Some(wanted) => {
                // A clock that stepped back must not put units before those already logged.
                let at_ms = newest_ms.map_or(now_ms, |newest| newest.max(now_ms));
                let kept = match (live, header) {
                    (Some(oldest), Some(header)) => Some(Kept {
                        oldest,
                        newest: Cursor {
                            offset: header.tail,
                            at_ms: header.tail_ms,
                        },
                        total: live_total,
                    }),
                    _ => None,
                };
                let append = (self.quantity > 0).then_some(Append {
                    at_ms,
                    units: self.quantity,
                    kept,
                    expire_at_ms: at_ms.saturating_add(self.period_ms),
                });
                let newest_after = if append.is_some() {
                    Some(at_ms)
                } else {
                    newest_ms
                };
                Decision {
                    outcome: Outcome::allowed(
                        self.limit,
                        self.limit - wanted,
                        newest_after.map_or(0, wait_until_gone),
                    ),
                    append,
                }
            }
            None => {
                let retry_after_ns = match (log, live) {
                    (Some(bytes), Some(oldest)) if self.quantity <= self.limit => {
                        // live_total + quantity > limit ≥ quantity: this is ≥ 1 and cannot
                        // overflow, unlike the sum.
                        let must_leave = live_total - (self.limit - self.quantity);
                        let leaves_at = self.when_units_left(bytes, oldest, must_leave)?;
                        Some(wait_until_gone(leaves_at))
                    }
                    _ => None,
                };
                Decision {
                    outcome: Outcome::denied(
                        self.limit,
                        self.limit.saturating_sub(live_total),
                        retry_after_ns,
                        newest_ms.map_or(0, wait_until_gone),
                    ),
                    append: None,
                }
            }
        };
        Ok(decision)
    }

    /// The oldest entry still in the window at `now_ms` and the units from it on; walks only
    /// the entries that have expired.
    fn prune(
        &self,
        bytes: &[u8],
        header: &Header,
        now_ms: i64,
    ) -> Result<(Option<Cursor>, i64), Error> {
        let mut cursor = Cursor {
            offset: header.head,
            at_ms: header.head_ms,
        };
        let mut total = header.total;
        while now_ms.saturating_sub(cursor.at_ms) >= self.period_ms {
            let entry = read_entry(bytes, cursor.offset)?;
            total = total
                .checked_sub(entry.units)
                .filter(|&t| t >= 0)
                .ok_or(Error::CorruptState)?;
            if cursor.offset == header.tail {
                return if total == 0 {
                    Ok((None, 0))
                } else {
                    Err(Error::CorruptState)
                };
            }
            cursor = cursor.next(bytes, &entry)?;
        }
        if total < 1 {
            return Err(Error::CorruptState);
        }
        Ok((Some(cursor), total))
    }

    /// When enough of the oldest live units will have left for `must_leave` of them to be
    /// gone: the time of the entry whose units complete that number.
    fn when_units_left(&self, bytes: &[u8], oldest: Cursor, must_leave: i64) -> Result<i64, Error> {
        let mut cursor = oldest;
        let mut left = 0i64;
        loop {
            let entry = read_entry(bytes, cursor.offset)?;
            left = left.checked_add(entry.units).ok_or(Error::CorruptState)?;
            if left >= must_leave {
                return Ok(cursor.at_ms);
            }
            cursor = cursor.next(bytes, &entry)?;
        }
    }
}

impl Append {
    /// Writes the change into `buffer`, which holds the log the decision was made on (empty
    /// when there was none).
    pub fn apply(&self, buffer: &mut impl LogBuffer) -> Result<(), Error> {
        let mut entry = [0u8; 20];
        let Some(kept) = self.kept else {
            // Nothing live: start a fresh log with this one entry.
            let len = encode_entry(0, self.units, &mut entry);
            buffer.resize(HEADER_LEN + len)?;
            let bytes = buffer.bytes_mut()?;
            bytes
                .get_mut(HEADER_LEN..HEADER_LEN + len)
                .ok_or(Error::Internal)?
                .copy_from_slice(&entry[..len]);
            let header = Header {
                head: HEADER_LEN,
                tail: HEADER_LEN,
                head_ms: self.at_ms,
                tail_ms: self.at_ms,
                total: self.units,
            };
            return write_header(bytes, &header);
        };

        let bytes = buffer.bytes_mut()?;
        let mut len = bytes.len();
        let (mut head, mut tail) = (kept.oldest.offset, kept.newest.offset);
        if tail >= len {
            return Err(Error::Internal);
        }
        let dead = head - HEADER_LEN;
        if dead >= COMPACT_MIN && dead > (len - HEADER_LEN) / 2 {
            bytes.copy_within(head..len, HEADER_LEN);
            (head, tail, len) = (HEADER_LEN, tail - dead, len - dead);
        }

        let total = kept.total.checked_add(self.units).ok_or(Error::Internal)?;
        let (entry_at, entry_len) = if self.at_ms == kept.newest.at_ms {
            // Same millisecond as the newest entry: add to its units.
            let newest = read_entry(bytes, tail)?;
            let units = newest
                .units
                .checked_add(self.units)
                .ok_or(Error::Internal)?;
            (tail, encode_entry(newest.delta_ms, units, &mut entry))
        } else {
            let delta = self.at_ms - kept.newest.at_ms;
            tail = len;
            (len, encode_entry(delta, self.units, &mut entry))
        };
        let new_len = entry_at + entry_len;
        buffer.resize(new_len)?;
        let bytes = buffer.bytes_mut()?;
        bytes
            .get_mut(entry_at..new_len)
            .ok_or(Error::Internal)?
            .copy_from_slice(&entry[..entry_len]);
        let header = Header {
            head,
            tail,
            head_ms: kept.oldest.at_ms,
            tail_ms: self.at_ms,
            total,
        };
        write_header(bytes, &header)
    }
}

/// Recomputes the header checksum of a log edited by hand, so that tools that craft damaged
/// logs (the fuzzer, tests) reach the checks behind the checksum. False if `log` is too short
/// to hold a header.
pub fn reseal(log: &mut [u8]) -> bool {
    let Some(header) = log
        .get_mut(..HEADER_LEN)
        .and_then(|h| <&mut [u8; HEADER_LEN]>::try_from(h).ok())
    else {
        return false;
    };
    let sum = checksum(header);
    header[36..40].copy_from_slice(&sum.to_le_bytes());
    true
}

fn decode_header(bytes: &[u8]) -> Result<Header, Error> {
    let header: &[u8; HEADER_LEN] = bytes
        .get(..HEADER_LEN)
        .and_then(|h| h.try_into().ok())
        .ok_or(Error::CorruptState)?;
    if &header[0..3] != MAGIC || header[3] != VERSION || checksum(header) != le_u32(header, 36) {
        return Err(Error::CorruptState);
    }
    let decoded = Header {
        head: le_u32(header, 4) as usize,
        tail: le_u32(header, 8) as usize,
        head_ms: le_i64(header, 12),
        tail_ms: le_i64(header, 20),
        total: le_i64(header, 28),
    };
    // The newest entry must end the value: a cheap check that catches most damage to the
    // entries' framing without walking them.
    let consistent = HEADER_LEN <= decoded.head
        && decoded.head <= decoded.tail
        && decoded.head_ms <= decoded.tail_ms
        && decoded.total >= 1
        && read_entry(bytes, decoded.tail).is_ok_and(|newest| newest.next == bytes.len());
    if consistent {
        Ok(decoded)
    } else {
        Err(Error::CorruptState)
    }
}

fn write_header(bytes: &mut [u8], header: &Header) -> Result<(), Error> {
    let out: &mut [u8; HEADER_LEN] = bytes
        .get_mut(..HEADER_LEN)
        .and_then(|h| h.try_into().ok())
        .ok_or(Error::Internal)?;
    let head = u32::try_from(header.head).map_err(|_| Error::Internal)?;
    let tail = u32::try_from(header.tail).map_err(|_| Error::Internal)?;
    out[0..3].copy_from_slice(MAGIC);
    out[3] = VERSION;
    out[4..8].copy_from_slice(&head.to_le_bytes());
    out[8..12].copy_from_slice(&tail.to_le_bytes());
    out[12..20].copy_from_slice(&header.head_ms.to_le_bytes());
    out[20..28].copy_from_slice(&header.tail_ms.to_le_bytes());
    out[28..36].copy_from_slice(&header.total.to_le_bytes());
    let sum = checksum(out);
    out[36..40].copy_from_slice(&sum.to_le_bytes());
    Ok(())
}

/// A multiplicative hash of the header's fields, a 32-bit word at a time, so that a damaged
/// header is refused, not misread: each step is a bijection of the word, so any one changed
/// word changes the result.
fn checksum(header: &[u8; HEADER_LEN]) -> u32 {
    (0..36).step_by(4).fold(0x811c_9dc5u32, |hash, at| {
        (hash ^ le_u32(header, at))
            .wrapping_mul(0x9e37_79b1)
            .rotate_left(13)
    })
}

fn le_u32(header: &[u8; HEADER_LEN], at: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&header[at..at + 4]);
    u32::from_le_bytes(word)
}

fn le_i64(header: &[u8; HEADER_LEN], at: usize) -> i64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&header[at..at + 8]);
    i64::from_le_bytes(word)
}

fn read_entry(bytes: &[u8], offset: usize) -> Result<Entry, Error> {
    let (delta, after_delta) = read_varint(bytes, offset)?;
    let (units, next) = read_varint(bytes, after_delta)?;
    let delta_ms = i64::try_from(delta).map_err(|_| Error::CorruptState)?;
    let units = i64::try_from(units)
        .ok()
        .filter(|&u| u >= 1)
        .ok_or(Error::CorruptState)?;
    Ok(Entry {
        delta_ms,
        units,
        next,
    })
}

/// A LEB128 varint at `offset`, and the offset after it.
fn read_varint(bytes: &[u8], offset: usize) -> Result<(u64, usize), Error> {
    let mut value = 0u64;
    for (i, &byte) in bytes
        .get(offset..)
        .unwrap_or(&[])
        .iter()
        .take(10)
        .enumerate()
    {
        let bits = u64::from(byte & 0x7f);
        let shifted = bits
            .checked_shl(7 * i as u32)
            .filter(|s| s >> (7 * i) == bits);
        value |= shifted.ok_or(Error::CorruptState)?;
        if byte & 0x80 == 0 {
            return Ok((value, offset + i + 1));
        }
    }
    Err(Error::CorruptState)
}

fn encode_entry(delta_ms: i64, units: i64, out: &mut [u8; 20]) -> usize {
    let len = encode_varint(delta_ms as u64, out, 0);
    encode_varint(units as u64, out, len)
}

fn encode_varint(mut value: u64, out: &mut [u8; 20], mut at: usize) -> usize {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out[at] = byte;
            return at + 1;
        }
        out[at] = byte | 0x80;
        at += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::TimeUnit;
    use proptest::prelude::*;

    const NOW: i64 = 1_795_910_400_000;

    fn window(limit: i64, period_ms: i64, quantity: i64) -> SlidingWindow {
        SlidingWindow::new(&WindowArgs {
            limit,
            period_ms,
            quantity,
            unit: TimeUnit::Milliseconds,
            at_ms: None,
        })
    }

    /// A limiter key: the log and the replies, as the command layer runs them.
    #[derive(Default)]
    struct Key {
        log: Option<Vec<u8>>,
        expire_at_ms: Option<i64>,
    }

    impl Key {
        fn call(&mut self, w: SlidingWindow, now_ms: i64) -> [i64; 5] {
            let decision = w.decide(self.log.as_deref(), now_ms).unwrap();
            if let Some(append) = decision.append {
                let mut buffer = self.log.take().unwrap_or_default();
                append.apply(&mut buffer).unwrap();
                self.log = Some(buffer);
                self.expire_at_ms = Some(append.expire_at_ms);
            }
            decision.outcome.to_reply(TimeUnit::Milliseconds)
        }
    }

    #[test]
    fn units_leave_exactly_one_period_after_their_admission() {
        let mut key = Key::default();
        let w = window(2, 1_000, 1);
        assert_eq!(key.call(w, NOW), [0, 2, 1, -1, 1000]);
        assert_eq!(key.call(w, NOW + 300), [0, 2, 0, -1, 1000]);
        assert_eq!(key.call(w, NOW + 999), [1, 2, 0, 1, 301]);
        // At NOW + 1000 the first unit has left: one fits again.
        assert_eq!(key.call(w, NOW + 1_000), [0, 2, 0, -1, 1000]);
        assert_eq!(key.expire_at_ms, Some(NOW + 2_000));
    }

    #[test]
    fn retry_waits_for_enough_of_the_oldest_units() {
        let mut key = Key::default();
        key.call(window(5, 1_000, 2), NOW);
        key.call(window(5, 1_000, 2), NOW + 100);
        key.call(window(5, 1_000, 1), NOW + 200);
        // Full (5). Three more need the first two entries (4 units) gone: at NOW + 1100.
        assert_eq!(
            key.call(window(5, 1_000, 3), NOW + 500),
            [1, 5, 0, 600, 700]
        );
        assert_eq!(key.call(window(5, 1_000, 6), NOW + 500), [1, 5, 0, -1, 700]);
    }

    #[test]
    fn calls_in_one_millisecond_share_an_entry() {
        let mut key = Key::default();
        for _ in 0..200 {
            key.call(window(1_000, 60_000, 1), NOW);
        }
        let log = key.log.unwrap();
        // The header and one entry: delta 0, 200 units (two varint bytes).
        assert_eq!(log.len(), HEADER_LEN + 3);
    }

    #[test]
    fn ten_thousand_entries_take_two_bytes_each() {
        let mut key = Key::default();
        for i in 0..10_000 {
            assert_eq!(key.call(window(10_000, 3_600_000, 1), NOW + i)[0], 0);
        }
        let log = key.log.unwrap();
        assert_eq!(log.len(), HEADER_LEN + 2 * 10_000);
    }

    #[test]
    fn expired_entries_are_reclaimed() {
        let mut key = Key::default();
        let w = window(100, 100, 1);
        for i in 0..100_000 {
            key.call(w, NOW + i);
        }
        // At one call a millisecond with a 100 ms period, about 100 entries stay live.
        let log = key.log.unwrap();
        assert!(
            log.len() < HEADER_LEN + 2 * 2 * 100 + COMPACT_MIN,
            "{}",
            log.len()
        );
    }

    #[test]
    fn a_stepped_back_clock_logs_after_the_newest_entry() {
        let mut key = Key::default();
        let w = window(10, 1_000, 1);
        key.call(w, NOW + 500);
        assert_eq!(key.call(w, NOW), [0, 10, 8, -1, 1500]);
        let log = key.log.unwrap();
        assert_eq!(log.len(), HEADER_LEN + 2);
    }

    #[test]
    fn foreign_and_damaged_values_are_refused() {
        let w = window(10, 1_000, 1);
        for foreign in [&b""[..], b"12", b"CLW", &[0u8; HEADER_LEN + 2]] {
            assert_eq!(w.decide(Some(foreign), NOW), Err(Error::CorruptState));
        }
        let mut key = Key::default();
        key.call(w, NOW);
        key.call(w, NOW + 1);
        let good = key.log.clone().unwrap();
        for i in 0..HEADER_LEN {
            let mut damaged = good.clone();
            damaged[i] ^= 0x10;
            assert_eq!(
                w.decide(Some(&damaged), NOW + 5_000),
                Err(Error::CorruptState),
                "byte {i}"
            );
        }
        let truncated = &good[..good.len() - 1];
        assert_eq!(
            w.decide(Some(truncated), NOW + 5_000),
            Err(Error::CorruptState)
        );
    }

    /// The plain model: every admitted call as (time, units).
    fn model_call(
        events: &mut Vec<(i64, i64)>,
        limit: i64,
        period: i64,
        quantity: i64,
        now: i64,
    ) -> [i64; 5] {
        let live: Vec<(i64, i64)> = events
            .iter()
            .copied()
            .filter(|&(t, _)| now - t < period)
            .collect();
        let used: i64 = live.iter().map(|&(_, q)| q).sum();
        let newest = events.last().map(|&(t, _)| t);
        if used + quantity <= limit {
            let at = newest.map_or(now, |n| n.max(now));
            if quantity > 0 {
                events.push((at, quantity));
            }
            let newest_live = if quantity > 0 {
                Some(at)
            } else {
                live.last().map(|&(t, _)| t)
            };
            let reset = newest_live.map_or(0, |t| t + period - now);
            [0, limit, limit - used - quantity, -1, reset]
        } else {
            let retry = if quantity > limit {
                -1
            } else {
                let mut gone = 0;
                let mut at = 0;
                for &(t, q) in &live {
                    gone += q;
                    at = t;
                    if used - gone + quantity <= limit {
                        break;
                    }
                }
                at + period - now
            };
            let reset = live.last().map_or(0, |&(t, _)| t + period - now);
            [1, limit, (limit - used).max(0), retry, reset]
        }
    }

    fn calls() -> impl Strategy<Value = Vec<(i64, i64)>> {
        // (ms since the previous call, quantity); many calls share a millisecond.
        prop::collection::vec((prop_oneof![Just(0i64), 0i64..300], 0i64..5), 1..150)
    }

    proptest! {
        #[test]
        fn the_log_answers_exactly_as_a_plain_event_list(
            limit in 1i64..20,
            period in 1i64..2_000,
            calls in calls(),
        ) {
            let mut key = Key::default();
            let mut events = Vec::new();
            let mut now = NOW;
            for (gap, quantity) in calls {
                now += gap;
                let expected = model_call(&mut events, limit, period, quantity, now);
                prop_assert_eq!(key.call(window(limit, period, quantity), now), expected);
            }
        }

        #[test]
        fn no_period_long_interval_admits_more_than_the_limit(
            limit in 1i64..20,
            period in 1i64..2_000,
            calls in calls(),
        ) {
            let mut key = Key::default();
            let mut admitted: Vec<(i64, i64)> = Vec::new();
            let mut now = NOW;
            for (gap, quantity) in calls {
                now += gap;
                if key.call(window(limit, period, quantity), now)[0] == 0 && quantity > 0 {
                    admitted.push((now, quantity));
                }
            }
            for &(start, _) in &admitted {
                let in_interval: i64 = admitted
                    .iter()
                    .filter(|&&(t, _)| t >= start && t - start < period)
                    .map(|&(_, q)| q)
                    .sum();
                prop_assert!(in_interval <= limit);
            }
        }

        #[test]
        fn decoding_any_bytes_never_panics(bytes: Vec<u8>, now in 0i64..1 << 42) {
            let _ = window(5, 1_000, 1).decide(Some(&bytes), now);
        }

        /// Headers that pass the checksum but hold any values at all, with any entries.
        #[test]
        fn crafted_logs_are_decided_or_refused_without_panicking(
            head in 0usize..80,
            tail in 0usize..80,
            head_ms in any::<i64>(),
            tail_ms in any::<i64>(),
            total in any::<i64>(),
            entries in prop::collection::vec(any::<u8>(), 0..40),
            limit in 1i64..=i64::MAX,
            quantity in 0i64..=i64::MAX,
            now in 0i64..1 << 42,
        ) {
            let mut log = vec![0u8; HEADER_LEN];
            log.extend_from_slice(&entries);
            let header = Header { head, tail, head_ms, tail_ms, total };
            write_header(&mut log, &header).unwrap();
            let w = window(limit, 3_600_000, quantity);
            if let Ok(decision) = w.decide(Some(&log), now) {
                let reply = decision.outcome.to_reply(TimeUnit::Milliseconds);
                prop_assert!(reply[2] >= 0 && reply[2] <= limit && reply[4] >= 0);
                if let Some(append) = decision.append {
                    let _ = append.apply(&mut log);
                }
            }
        }
    }
}

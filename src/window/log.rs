//! The bytes of CL.WINDOW's log, and the searches a call makes in them.
//!
//! # Encoding
//!
//! One string value: a 48-byte header, then blocks of 128 bytes from byte 48, the last one
//! ending right after the newest entry. Fixed-size integers are little-endian.
//!
//! | bytes  | header field                                                       |
//! |--------|--------------------------------------------------------------------|
//! | 0..3   | magic `CLW`                                                        |
//! | 3      | format version, 2                                                  |
//! | 4..8   | `head`: byte offset of the oldest entry still logged (u32)         |
//! | 8..12  | `tail`: byte offset of the newest entry (u32)                      |
//! | 12..20 | `head_ms`: when the head entry's units were admitted (i64)         |
//! | 20..28 | `tail_ms`: when the tail entry's units were admitted (i64)         |
//! | 28..36 | `head_units_before`: the units count before the head entry (u64)   |
//! | 36..44 | `units_logged`: the units count after the tail entry (u64)         |
//! | 44..48 | checksum of bytes 0..44 (u32)                                      |
//!
//! | bytes  | block                                                              |
//! |--------|--------------------------------------------------------------------|
//! | 0..8   | `base_ms`: when the block's first entry's units were admitted (i64)|
//! | 8..16  | `units_before`: the units count before its first entry (u64)       |
//! | 16..   | the first entry's units; then each entry as the milliseconds since |
//! |        | the previous one and its units; then zero bytes to the block's end |
//!
//! Entry fields are LEB128 varints, all ≥ 1 (one millisecond holds one entry), so a zero
//! byte where an entry would start ends the block. An entry that does not fit in the tail's
//! block starts a new one, as does the newest entry when merging units makes it outgrow
//! its block. Entries at distinct milliseconds less than 128 ms apart take 2 bytes each: a
//! block holds 56 of them, 2.29 bytes an entry with its share of the block header.
//!
//! The units count is a running total of every unit logged in the key, wrapping at 2⁶⁴.
//! Only differences between two counts are used (the units from one entry to another), and
//! none exceeds the units still logged, which fit in an i64: wrapping changes nothing.
//!
//! # Cost
//!
//! A block header says when its first entry was admitted and how many units came before
//! it, so the oldest live entry and the entry by which enough units have left are each
//! found by a binary search over blocks and a walk within one: a call reads O(log n) of a
//! log of n entries, and an admitted one appends at its end. Expired entries are not cut
//! out: `head` moves past them on an admitted call, and the whole blocks before the head's
//! are reclaimed by moving the others down once they are more than half the value, which
//! costs each appended byte O(1) over time.

use crate::bytes::{
    le_i64, le_u32, put_varint, read_varint, varint_len, ByteBuffer, MAX_VALUE_LEN,
};
use crate::error::Error;

pub const HEADER_LEN: usize = 48;
const CHECKSUMMED: usize = 44;
const MAGIC: &[u8; 3] = b"CLW";
const VERSION: u8 = 2;
/// Small enough that walking a block's entries, which a call may do twice, costs a call on a
/// long log less than the rest of the call; large enough that block headers take only an
/// eighth of the log.
pub(super) const BLOCK: usize = 128;
const BLOCK_HEADER: usize = 16;
/// Most entries one block holds: a first entry of 1 byte, then 2 bytes or more each.
pub(super) const MAX_ENTRIES_IN_BLOCK: usize = (BLOCK - BLOCK_HEADER - 1) / 2 + 1;
/// Whole blocks before the head's are reclaimed once there are at least this many bytes of
/// them and they are more than half of all blocks' bytes.
const COMPACT_MIN: usize = BLOCK;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Header {
    pub(super) head: usize,
    pub(super) tail: usize,
    pub(super) head_ms: i64,
    pub(super) tail_ms: i64,
    pub(super) head_units_before: u64,
    pub(super) units_logged: u64,
}

/// A block's header.
struct Block {
    base_ms: i64,
    units_before: u64,
}

/// Where an entry is: its offset, when its units were admitted, and the units count before
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub(super) offset: usize,
    pub(super) at_ms: i64,
    pub(super) units_before: u64,
}

/// The live part of a log: its oldest entry and the units from it to the newest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Live {
    pub oldest: Cursor,
    pub total: i64,
}

/// What an admitted call keeps of the log it was decided on: everything from `oldest` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kept {
    oldest: Cursor,
    tail: usize,
    tail_ms: i64,
    units_logged: u64,
}

/// A log whose header has been checked; nothing past the header is trusted yet.
pub struct Log<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) header: Header,
}

impl<'a> Log<'a> {
    /// Refuses a value that is not a log of this format, or whose header is damaged.
    #[inline(always)]
    pub fn decode(bytes: &'a [u8]) -> Result<Log<'a>, Error> {
        let raw: &[u8; HEADER_LEN] = bytes
            .get(..HEADER_LEN)
            .and_then(|h| h.try_into().ok())
            .ok_or(Error::CorruptState)?;
        if &raw[0..3] != MAGIC || raw[3] != VERSION || checksum(raw) != le_u32(raw, CHECKSUMMED) {
            return Err(Error::CorruptState);
        }
        let header = Header {
            head: le_u32(raw, 4) as usize,
            tail: le_u32(raw, 8) as usize,
            head_ms: le_i64(raw, 12),
            tail_ms: le_i64(raw, 20),
            head_units_before: le_i64(raw, 28) as u64,
            units_logged: le_i64(raw, 36) as u64,
        };
        let log = Log { bytes, header };
        // The newest entry must end the value: a cheap check that catches most damage to the
        // entries' framing without walking them.
        let consistent = block_start(header.head).is_some()
            && header.head <= header.tail
            && header.head_ms <= header.tail_ms
            && units_between(header.head_units_before, header.units_logged).is_some()
            && read_entry(bytes, header.tail).is_ok_and(|(_, _, end)| end == bytes.len());
        if consistent {
            Ok(log)
        } else {
            Err(Error::CorruptState)
        }
    }

    pub fn newest_ms(&self) -> i64 {
        self.header.tail_ms
    }

    /// The oldest entry not `expired` and the units from it on; `None` when every entry
    /// has expired. Entries before `head` count as expired whatever their time.
    pub fn live(&self, expired: impl Fn(i64) -> bool) -> Result<Option<Live>, Error> {
        let header = &self.header;
        if expired(header.tail_ms) {
            return Ok(None);
        }
        let head = Cursor {
            offset: header.head,
            at_ms: header.head_ms,
            units_before: header.head_units_before,
        };
        let oldest = if expired(head.at_ms) {
            // The oldest live entry is in the last block whose first entry has expired, or
            // it is the first entry of the block after.
            let after_head = block_index(header.head) + 1;
            let live_block =
                self.first_block(after_head, block_index(header.tail) + 1, |block| {
                    expired(block.base_ms)
                })?;
            let from = if live_block > after_head {
                self.first_of_block(live_block - 1)?
            } else {
                head
            };
            self.walk(from, |at_ms, _| !expired(at_ms))?
        } else {
            head
        };
        let total =
            units_between(oldest.units_before, header.units_logged).ok_or(Error::CorruptState)?;
        Ok(Some(Live { oldest, total }))
    }

    /// When the entry was admitted whose units, with those from `oldest` up to it, make
    /// `must_leave` (≥ 1, at most the live units).
    pub fn when_units_left(&self, oldest: Cursor, must_leave: i64) -> Result<i64, Error> {
        let must_leave = u64::try_from(must_leave).map_err(|_| Error::Internal)?;
        let gone = |units_before: u64| units_before.wrapping_sub(oldest.units_before);
        let after_oldest = block_index(oldest.offset) + 1;
        let enough_block =
            self.first_block(after_oldest, block_index(self.header.tail) + 1, |block| {
                gone(block.units_before) < must_leave
            })?;
        let from = if enough_block > after_oldest {
            self.first_of_block(enough_block - 1)?
        } else {
            oldest
        };
        let entry = self.walk(from, |_, units_after| gone(units_after) >= must_leave)?;
        Ok(entry.at_ms)
    }

    /// What an admitted call keeps: the log from `live`'s oldest entry on.
    pub fn kept(&self, live: &Live) -> Kept {
        Kept {
            oldest: live.oldest,
            tail: self.header.tail,
            tail_ms: self.header.tail_ms,
            units_logged: self.header.units_logged,
        }
    }

    /// The first of the blocks `from..to` (by index) that is not `before`, given that those
    /// that are come first: a binary search.
    fn first_block(
        &self,
        mut from: usize,
        mut to: usize,
        before: impl Fn(&Block) -> bool,
    ) -> Result<usize, Error> {
        while from < to {
            let middle = from + (to - from) / 2;
            if before(&self.block(block_offset(middle))?) {
                from = middle + 1;
            } else {
                to = middle;
            }
        }
        Ok(from)
    }

    /// The first entry from `from` on that is `found`, given when its units were admitted and
    /// the units count after them. A search over blocks leaves at most one block's entries and
    /// the next block's first to walk: more means damage.
    fn walk(&self, from: Cursor, found: impl Fn(i64, u64) -> bool) -> Result<Cursor, Error> {
        let Cursor {
            mut offset,
            mut at_ms,
            mut units_before,
        } = from;
        let (_, mut units, mut end) = read_entry(self.bytes, offset)?;
        let mut block_end = block_start(offset).ok_or(Error::CorruptState)? + BLOCK;
        let mut block = self.bytes.get(..block_end).unwrap_or(self.bytes);
        // Plain locals and one-byte fast paths: this loop is most of a long log's cost.
        for _ in 0..=MAX_ENTRIES_IN_BLOCK {
            let units_after = units_before.wrapping_add(units);
            if found(at_ms, units_after) {
                return Ok(Cursor {
                    offset,
                    at_ms,
                    units_before,
                });
            }
            if offset >= self.header.tail {
                break;
            }
            match block.get(end) {
                Some(&low) if low != 0 => {
                    visit();
                    let (delta_ms, units_at) = match low {
                        0..0x80 => (u64::from(low), end + 1),
                        _ => read_varint(block, end).ok_or(Error::CorruptState)?,
                    };
                    let (next_units, next_end) = match block.get(units_at) {
                        Some(&low @ 1..0x80) => (u64::from(low), units_at + 1),
                        _ => read_units(block, units_at).ok_or(Error::CorruptState)?,
                    };
                    at_ms = at_ms
                        .checked_add_unsigned(delta_ms)
                        .ok_or(Error::CorruptState)?;
                    (offset, units_before, units, end) = (end, units_after, next_units, next_end);
                }
                _ => {
                    let next = self.first_of_block(block_index(block_end))?;
                    if next.units_before != units_after {
                        return Err(Error::CorruptState);
                    }
                    (_, units, end) = read_entry(self.bytes, next.offset)?;
                    (offset, at_ms, units_before) = (next.offset, next.at_ms, next.units_before);
                    block_end += BLOCK;
                    block = self.bytes.get(..block_end).unwrap_or(self.bytes);
                }
            }
        }
        Err(Error::CorruptState)
    }

    fn block(&self, offset: usize) -> Result<Block, Error> {
        visit();
        let raw: &[u8; BLOCK_HEADER] = self
            .bytes
            .get(offset..offset + BLOCK_HEADER)
            .and_then(|b| b.try_into().ok())
            .ok_or(Error::CorruptState)?;
        Ok(Block {
            base_ms: le_i64(raw, 0),
            units_before: le_i64(raw, 8) as u64,
        })
    }

    pub(super) fn first_of_block(&self, index: usize) -> Result<Cursor, Error> {
        let offset = block_offset(index);
        let block = self.block(offset)?;
        Ok(Cursor {
            offset: offset + BLOCK_HEADER,
            at_ms: block.base_ms,
            units_before: block.units_before,
        })
    }
}

/// How an admitted call changes the log it was decided on, worked out before the first byte
/// changes: everything that can fail on what the key holds fails here, so that a call writing
/// several keys can decide all of them before it writes any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendPlan {
    /// Nothing is kept: whatever the value holds is replaced by a log of one entry.
    Fresh { at_ms: i64, units: u64 },
    /// The entry goes at the end of the log kept.
    Extend(Extension),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extension {
    /// The length of the value planned on.
    stored_len: usize,
    /// The bytes of whole dead blocks to reclaim by moving the rest down (0: none).
    reclaimed: usize,
    /// Where the newest entry ended before this one, after reclaiming.
    from: usize,
    /// The end of the block the newest entry was in, after reclaiming.
    block_end: usize,
    /// The entry starts a new block, at `block_end`.
    new_block: bool,
    at_ms: i64,
    units_before: u64,
    /// Where the entry goes, its milliseconds since the previous one (none for a block's
    /// first), and its units.
    offset: usize,
    delta_ms: Option<u64>,
    units: u64,
    len: usize,
    header: Header,
}

/// Plans logging `units` (≥ 1) at `at_ms` in `bytes`, the log `kept` comes from (when
/// nothing is kept, whatever `bytes` holds is replaced by a fresh log). `at_ms` is no
/// earlier than the newest entry kept.
pub fn plan_append(
    bytes: &[u8],
    kept: Option<&Kept>,
    at_ms: i64,
    units: i64,
) -> Result<AppendPlan, Error> {
    let units = u64::try_from(units)
        .ok()
        .filter(|&u| u >= 1)
        .ok_or(Error::Internal)?;
    let Some(kept) = kept else {
        return Ok(AppendPlan::Fresh { at_ms, units });
    };
    let stored_len = bytes.len();
    let (mut oldest, stored_tail) = (kept.oldest, kept.tail);
    if !(oldest.offset <= stored_tail && stored_tail < stored_len) {
        return Err(Error::CorruptState);
    }
    let dead = block_start(oldest.offset).ok_or(Error::CorruptState)? - HEADER_LEN;
    let compact = dead >= COMPACT_MIN && dead > (stored_len - HEADER_LEN) / 2;
    // Whole blocks move, so every block stays at its place in the grid.
    let reclaimed = if compact { dead } else { 0 };

    let merging = at_ms == kept.tail_ms;
    let (delta_ms, entry_units, units_before) = if merging {
        // The same millisecond as the newest entry: add to its units.
        let (delta_ms, tail_units, _) = read_entry(bytes, stored_tail)?;
        let first_in_block = stored_tail
            .checked_sub(BLOCK_HEADER)
            .is_some_and(|start| block_start(stored_tail) == Some(start));
        (
            (!first_in_block).then_some(delta_ms as u64),
            tail_units.checked_add(units).ok_or(Error::CorruptState)?,
            kept.units_logged.wrapping_sub(tail_units),
        )
    } else {
        let delta_ms = at_ms
            .checked_sub(kept.tail_ms)
            .filter(|&d| d >= 1)
            .ok_or(Error::Internal)?;
        (Some(delta_ms as u64), units, kept.units_logged)
    };
    let (tail, len) = (stored_tail - reclaimed, stored_len - reclaimed);
    oldest.offset -= reclaimed;
    let from = if merging { tail } else { len };
    let block_end = block_start(tail).ok_or(Error::CorruptState)? + BLOCK;
    let units_len = varint_len(entry_units);
    let fits = from + delta_ms.map_or(0, varint_len) + units_len <= block_end;
    let (offset, delta_ms) = if fits {
        (from, delta_ms)
    } else {
        (block_end + BLOCK_HEADER, None)
    };
    let new_len = offset + delta_ms.map_or(0, varint_len) + units_len;
    if new_len > MAX_VALUE_LEN {
        return Err(Error::LogTooLong);
    }
    if merging && oldest.offset == tail {
        oldest.offset = offset;
    }
    let newest = Cursor {
        offset,
        at_ms,
        units_before,
    };
    Ok(AppendPlan::Extend(Extension {
        stored_len,
        reclaimed,
        from,
        block_end,
        new_block: !fits,
        at_ms,
        units_before,
        offset,
        delta_ms,
        units: entry_units,
        len: new_len,
        header: Header::spanning(oldest, newest, kept.units_logged.wrapping_add(units)),
    }))
}

impl AppendPlan {
    /// Writes the planned change into `buffer`, which must hold the bytes it was planned on.
    /// What can fail here is only a defect, caught before the first write where it can be.
    pub fn write(&self, buffer: &mut impl ByteBuffer) -> Result<(), Error> {
        let plan = match *self {
            AppendPlan::Fresh { at_ms, units } => {
                let entry = Cursor {
                    offset: HEADER_LEN + BLOCK_HEADER,
                    at_ms,
                    units_before: 0,
                };
                let units_len = varint_len(units);
                buffer.resize(entry.offset + units_len)?;
                let bytes = buffer.bytes_mut()?;
                write_block(bytes, HEADER_LEN, at_ms, 0)?;
                put_varint(bytes, entry.offset, units, units_len)?;
                return write_header(bytes, &Header::spanning(entry, entry, units));
            }
            AppendPlan::Extend(plan) => plan,
        };
        let bytes = buffer.bytes_mut()?;
        if bytes.len() != plan.stored_len {
            return Err(Error::Internal);
        }
        if plan.reclaimed > 0 {
            bytes.copy_within(HEADER_LEN + plan.reclaimed.., HEADER_LEN);
        }
        buffer.resize(plan.len)?;
        let bytes = buffer.bytes_mut()?;
        if plan.new_block {
            // What the newest entry leaves of its block, its own old bytes when it moves
            // out, is padding.
            bytes
                .get_mut(plan.from..plan.block_end)
                .ok_or(Error::Internal)?
                .fill(0);
            write_block(bytes, plan.block_end, plan.at_ms, plan.units_before)?;
        }
        let mut at = plan.offset;
        if let Some(delta_ms) = plan.delta_ms {
            let delta_len = varint_len(delta_ms);
            put_varint(bytes, at, delta_ms, delta_len)?;
            at += delta_len;
        }
        put_varint(bytes, at, plan.units, varint_len(plan.units))?;
        write_header(bytes, &plan.header)
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
    header[CHECKSUMMED..].copy_from_slice(&sum.to_le_bytes());
    true
}

impl Header {
    fn spanning(head: Cursor, tail: Cursor, units_logged: u64) -> Header {
        Header {
            head: head.offset,
            tail: tail.offset,
            head_ms: head.at_ms,
            tail_ms: tail.at_ms,
            head_units_before: head.units_before,
            units_logged,
        }
    }
}

pub(super) fn write_header(bytes: &mut [u8], header: &Header) -> Result<(), Error> {
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
    out[28..36].copy_from_slice(&header.head_units_before.to_le_bytes());
    out[36..44].copy_from_slice(&header.units_logged.to_le_bytes());
    let sum = checksum(out);
    out[CHECKSUMMED..].copy_from_slice(&sum.to_le_bytes());
    Ok(())
}

fn write_block(
    bytes: &mut [u8],
    offset: usize,
    base_ms: i64,
    units_before: u64,
) -> Result<(), Error> {
    let out = bytes
        .get_mut(offset..offset + BLOCK_HEADER)
        .ok_or(Error::Internal)?;
    out[0..8].copy_from_slice(&base_ms.to_le_bytes());
    out[8..16].copy_from_slice(&units_before.to_le_bytes());
    Ok(())
}

/// A multiplicative hash of the header's fields, a 32-bit word at a time, so that a damaged
/// header is refused, not misread: each step is a bijection of the word, so any one changed
/// word changes the result.
fn checksum(header: &[u8; HEADER_LEN]) -> u32 {
    (0..CHECKSUMMED)
        .step_by(4)
        .fold(0x811c_9dc5u32, |hash, at| {
            (hash ^ le_u32(header, at))
                .wrapping_mul(0x9e37_79b1)
                .rotate_left(13)
        })
}

/// The units from an entry whose units count before it is `before` to the end of the log,
/// if that is a possible number of live units (1 to i64::MAX).
fn units_between(before: u64, units_logged: u64) -> Option<i64> {
    i64::try_from(units_logged.wrapping_sub(before))
        .ok()
        .filter(|&units| units >= 1)
}

/// The start of the block holding `offset`, if an entry can start there.
fn block_start(offset: usize) -> Option<usize> {
    let within = offset.checked_sub(HEADER_LEN)? % BLOCK;
    (within >= BLOCK_HEADER).then_some(offset - within)
}

pub(super) fn block_index(offset: usize) -> usize {
    offset.saturating_sub(HEADER_LEN) / BLOCK
}

pub(super) fn block_offset(index: usize) -> usize {
    HEADER_LEN + index * BLOCK
}

/// The entry at `offset`: the milliseconds since the previous entry (0 for a block's first,
/// which has none), its units, and the offset after it. An entry never crosses its block's
/// end.
fn read_entry(bytes: &[u8], offset: usize) -> Result<(i64, u64, usize), Error> {
    visit();
    let start = block_start(offset).ok_or(Error::CorruptState)?;
    let block = bytes.get(..start + BLOCK).unwrap_or(bytes);
    let (delta_ms, units_at) = if offset == start + BLOCK_HEADER {
        (0, offset)
    } else {
        let (delta, after) = read_varint(block, offset).ok_or(Error::CorruptState)?;
        let delta = i64::try_from(delta).map_err(|_| Error::CorruptState)?;
        (delta, after)
    };
    let (units, end) = read_units(block, units_at).ok_or(Error::CorruptState)?;
    Ok((delta_ms, units, end))
}

/// An entry's units, which are never 0, and the offset after them.
#[inline]
pub(super) fn read_units(bytes: &[u8], offset: usize) -> Option<(u64, usize)> {
    read_varint(bytes, offset).filter(|&(units, _)| units != 0)
}

#[cfg(test)]
thread_local! {
    /// Entries and block headers read, so that tests can bound a call's work.
    static VISITS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn visit() {
    #[cfg(test)]
    VISITS.with(|visits| visits.set(visits.get() + 1));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::TimeUnit;
    use crate::window::tests::{model_call, window, Key, NOW};
    use proptest::prelude::*;

    fn header_of(log: &[u8]) -> Header {
        Log::decode(log).unwrap().header
    }

    fn visits() -> usize {
        VISITS.with(|visits| visits.replace(0))
    }

    #[test]
    fn calls_in_one_millisecond_share_an_entry() {
        let mut key = Key::default();
        for _ in 0..200 {
            key.call(window(1_000, 60_000, 1), NOW);
        }
        // The header, one block header and one entry: 200 units, a two-byte varint (a
        // block's first entry has no time of its own beside the block's).
        assert_eq!(key.log.unwrap().len(), HEADER_LEN + BLOCK_HEADER + 2);
    }

    #[test]
    fn ten_thousand_entries_take_a_little_over_two_bytes_each() {
        let mut key = Key::default();
        for i in 0..10_000 {
            assert_eq!(key.call(window(10_000, 3_600_000, 1), NOW + i)[0], 0);
        }
        // A block holds a 1-byte first entry and 55 of 2 bytes, and a byte of padding.
        let (full_blocks, in_last) = (10_000 / 56, 10_000 % 56);
        let len = key.log.unwrap().len();
        assert_eq!(
            len,
            HEADER_LEN + full_blocks * BLOCK + BLOCK_HEADER + 1 + 2 * (in_last - 1)
        );
        assert_eq!(len, 22_911);
    }

    #[test]
    fn a_write_that_cannot_be_made_is_refused_before_any_byte_changes() {
        // Behind a valid checksum, a dead block before the head's (due for reclaiming) and a
        // newest entry of u64::MAX units, which a merge cannot add to.
        let at = NOW + 10_000;
        let tail = HEADER_LEN + BLOCK + BLOCK_HEADER;
        let mut log = vec![0u8; tail];
        write_block(&mut log, HEADER_LEN + BLOCK, at, 0).unwrap();
        log.extend_from_slice(&[0xff; 9]);
        log.push(0x01);
        let newest = Cursor {
            offset: tail,
            at_ms: at,
            units_before: 0,
        };
        write_header(&mut log, &Header::spanning(newest, newest, 1)).unwrap();
        // The decision, which writes nothing, is where it fails: a call over several keys
        // decides all of them before it writes any.
        assert_eq!(
            window(10, 60_000, 1).decide(Some(&log), at),
            Err(Error::CorruptState)
        );
    }

    #[test]
    fn expired_entries_are_reclaimed() {
        let mut key = Key::default();
        let w = window(100, 100, 1);
        for i in 0..100_000 {
            key.call(w, NOW + i);
        }
        // At one call a millisecond with a 100 ms period, about 100 entries (200 bytes) stay
        // live, over at most three blocks, with as many dead blocks before them at most.
        let len = key.log.unwrap().len();
        assert!(len <= HEADER_LEN + 6 * BLOCK, "{len}");
    }

    #[test]
    fn a_merge_that_outgrows_its_block_moves_the_newest_entry_to_a_new_one() {
        let mut key = Key::default();
        let keep_all = |quantity| window(i64::MAX, 1 << 40, quantity);
        let mut now = NOW;
        key.call(keep_all(1), now);
        // 1-ms entries (2 bytes) until 5 bytes of the first block are left.
        while HEADER_LEN + BLOCK - key.log.as_ref().unwrap().len() > 5 {
            now += 1;
            key.call(keep_all(1), now);
        }
        // A 3-byte entry (200 ms, 1 unit) leaves 2 bytes; under a 150 ms period it is the only
        // live one, so the merges below also move the head.
        now += 200;
        key.call(keep_all(1), now);
        let merge = |quantity| window(i64::MAX, 150, quantity);
        // 128 units (4 bytes), then 16,384 (5 bytes) fit in the block, to its last byte.
        key.call(merge(127), now);
        key.call(merge(16_384 - 128), now);
        let log = key.log.clone().unwrap();
        assert_eq!(log.len(), HEADER_LEN + BLOCK);
        let tail = header_of(&log).tail;
        // 2,097,152 units (4 bytes alone) need a new block, which the entry starts.
        key.call(merge(2_097_152 - 16_384), now);
        let log = key.log.clone().unwrap();
        assert_eq!(log.len(), HEADER_LEN + BLOCK + BLOCK_HEADER + 4);
        assert!(log[tail..HEADER_LEN + BLOCK].iter().all(|&b| b == 0));
        let header = header_of(&log);
        assert_eq!(header.tail, HEADER_LEN + BLOCK + BLOCK_HEADER);
        assert_eq!(header.head, header.tail);
        assert_eq!(
            key.call(merge(0), now + 149),
            [0, i64::MAX, i64::MAX - 2_097_152, -1, 1]
        );
        // The older entries were dropped with the head's move, even for a longer period;
        // the next write reclaims the block that held them.
        assert_eq!(key.call(keep_all(0), now)[2], i64::MAX - 2_097_152);
        key.call(keep_all(1), now + 1);
        assert_eq!(key.log.unwrap().len(), HEADER_LEN + BLOCK_HEADER + 4 + 2);
    }

    /// The point of the blocks: a call reads a binary search's worth of block headers and at
    /// most one block's entries, however many entries expired since the last write.
    #[test]
    fn a_call_on_a_long_log_reads_a_bounded_part_of_it() {
        let mut key = Key::default();
        for i in 0..100_000 {
            key.call(window(1 << 40, 1 << 40, 1), NOW + i * 1_000);
        }
        let log = key.log.clone().unwrap();
        let blocks = (log.len() - HEADER_LEN).div_ceil(BLOCK);
        let search = (usize::BITS - blocks.leading_zeros()) as usize + 1;
        // The newest entry read to check the value, then for each of the two searches: the
        // block headers of a binary search, the block walked from (and the next one), its
        // entries and the next block's first.
        let bound = 1 + 2 * (search + 2 + MAX_ENTRIES_IN_BLOCK + 1);
        let now = NOW + 100_000 * 1_000;
        // Under a period of 50,000 s the older half has expired since the last write.
        for (limit, quantity) in [(1_000_000, 0), (1_000_000, 1_000_000), (60_000, 20_000)] {
            visits();
            let decision = window(limit, 50_000_000, quantity)
                .decide(Some(&log), now)
                .unwrap();
            let read = visits();
            assert!(read <= bound, "{read} reads for quantity {quantity}");
            assert_eq!(decision.outcome.limited, quantity > 0);
        }
        visits();
        key.call(window(1_000_000, 50_000_000, 1), now);
        let read = visits();
        assert!(read <= bound, "{read} reads to admit");
        // Walking from the head, as format 1 did, would read 50,000 entries or more.
        assert!(bound < 300, "{bound}");
    }

    #[test]
    fn foreign_and_damaged_values_are_refused() {
        let w = window(10, 1_000, 1);
        for foreign in [&b""[..], b"12", b"CLW", &[0u8; HEADER_LEN + 20]] {
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
        // Format 1 is refused like any foreign value.
        let mut version_1 = good.clone();
        version_1[3] = 1;
        reseal(&mut version_1);
        assert_eq!(w.decide(Some(&version_1), NOW), Err(Error::CorruptState));
    }

    /// Decides on a log that may be damaged: refused, or decided with an in-range reply, and
    /// a write into it fails or leaves a value that is again refused or decided.
    fn decide_anything(
        log: &[u8],
        limit: i64,
        quantity: i64,
        now: i64,
    ) -> Result<(), TestCaseError> {
        let w = window(limit, 3_600_000, quantity);
        if let Ok(decision) = w.decide(Some(log), now) {
            let reply = decision.outcome.to_reply(TimeUnit::Milliseconds);
            prop_assert!(reply[2] >= 0 && reply[2] <= limit && reply[4] >= 0);
            prop_assert!(reply[3] == -1 || reply[3] >= 0);
            if let Some(append) = decision.append {
                let mut written = log.to_vec();
                match append.apply(&mut written) {
                    Ok(()) => {
                        let _ = w.decide(Some(&written), now);
                    }
                    Err(_) => prop_assert!(written == log, "a failed write changed the log"),
                }
            }
        }
        // A refund of the same on the same bytes: refused, or trimmed to a log that decodes.
        if let Ok(refund) = w.refund(Some(log), now) {
            let reply = refund.outcome.to_reply(TimeUnit::Milliseconds);
            prop_assert!(reply[0] == 0 && reply[2] >= 0 && reply[2] <= limit && reply[4] >= 0);
            if let Some(crate::window::Trim::Keep { plan, .. }) = refund.change {
                let mut written = log.to_vec();
                match plan.write(&mut written) {
                    Ok(()) => {
                        prop_assert!(Log::decode(&written).is_ok(), "a trim left no log");
                        let _ = w.decide(Some(&written), now);
                    }
                    Err(_) => prop_assert!(written == log, "a failed trim changed the log"),
                }
            }
        }
        Ok(())
    }

    /// A log of many blocks, built by real calls.
    fn built(calls: &[(i64, i64)]) -> (Vec<u8>, i64) {
        let mut key = Key::default();
        let mut now = NOW;
        for &(gap, quantity) in calls {
            now += gap;
            key.call(window(1 << 40, 3_600_000, quantity), now);
        }
        (key.log.unwrap_or_default(), now)
    }

    fn build_calls() -> impl Strategy<Value = Vec<(i64, i64)>> {
        prop::collection::vec(
            (
                prop_oneof![Just(0i64), 1i64..200, 1i64 << 14..1 << 20],
                prop_oneof![1i64..3, 1i64 << 7..1 << 30],
            ),
            1..400,
        )
    }

    proptest! {
        #[test]
        fn decoding_any_bytes_never_panics(bytes: Vec<u8>, now in 0i64..1 << 42) {
            let _ = window(5, 1_000, 1).decide(Some(&bytes), now);
            let _ = window(5, 1_000, 1).refund(Some(&bytes), now);
        }

        /// Headers that pass the checksum but hold any values at all, over real entries.
        #[test]
        fn crafted_headers_are_decided_or_refused_without_panicking(
            calls in build_calls(),
            head in prop::option::of(0usize..2_000),
            tail in prop::option::of(0usize..2_000),
            head_ms in prop::option::of(any::<i64>()),
            tail_ms in prop::option::of(any::<i64>()),
            head_units_before in prop::option::of(any::<u64>()),
            units_logged in prop::option::of(any::<u64>()),
            limit in 1i64..=i64::MAX,
            quantity in 0i64..=i64::MAX,
            later in 0i64..1 << 32,
        ) {
            let (mut log, now) = built(&calls);
            let real = header_of(&log);
            let header = Header {
                head: head.unwrap_or(real.head),
                tail: tail.unwrap_or(real.tail),
                head_ms: head_ms.unwrap_or(real.head_ms),
                tail_ms: tail_ms.unwrap_or(real.tail_ms),
                head_units_before: head_units_before.unwrap_or(real.head_units_before),
                units_logged: units_logged.unwrap_or(real.units_logged),
            };
            write_header(&mut log, &header).unwrap();
            decide_anything(&log, limit, quantity, now + later)?;
        }

        /// Real logs damaged anywhere behind a valid checksum.
        #[test]
        fn damaged_logs_are_decided_or_refused_without_panicking(
            calls in build_calls(),
            damage in prop::collection::vec((any::<prop::sample::Index>(), 1u8..), 1..8),
            limit in 1i64..=i64::MAX,
            quantity in 0i64..1 << 40,
            later in 0i64..1 << 32,
        ) {
            let (mut log, now) = built(&calls);
            for (at, mask) in damage {
                let at = at.index(log.len());
                log[at] ^= mask;
            }
            reseal(&mut log);
            decide_anything(&log, limit, quantity, now + later)?;
        }

        /// The counts are differences of wrapping counters: a log whose counters start
        /// anywhere, past 2⁶⁴ included, answers the same.
        #[test]
        fn the_units_count_may_wrap(
            start in any::<u64>(),
            calls in prop::collection::vec((0i64..300, 0i64..5), 1..300),
            period in 1i64..2_000,
        ) {
            let mut key = Key::default();
            let mut events = Vec::new();
            let mut now = NOW;
            let mut shifted = false;
            for (gap, quantity) in calls {
                now += gap;
                let expected = model_call(&mut events, 20, period, quantity, now);
                prop_assert_eq!(key.call(window(20, period, quantity), now), expected);
                if let (false, Some(log)) = (shifted, key.log.as_mut()) {
                    // The first log has one block.
                    shift_units_count(log, start);
                    shifted = true;
                }
            }
        }
    }

    /// Adds `by` to every units count of a one-block log.
    fn shift_units_count(log: &mut [u8], by: u64) {
        let mut header = header_of(log);
        header.head_units_before = header.head_units_before.wrapping_add(by);
        header.units_logged = header.units_logged.wrapping_add(by);
        let block = HEADER_LEN + 8..HEADER_LEN + 16;
        let units_before = le_i64(log, block.start) as u64;
        log[block].copy_from_slice(&units_before.wrapping_add(by).to_le_bytes());
        write_header(log, &header).unwrap();
    }
}

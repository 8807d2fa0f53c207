//! How a refund shortens CL.WINDOW's log, whose bytes `log.rs` describes: its newest units
//! leave it, found by a walk back over the blocks they are in.

use super::log::{
    block_index, block_offset, read_units, write_header, Cursor, Header, Live, Log, BLOCK,
    MAX_ENTRIES_IN_BLOCK,
};
use crate::bytes::{put_varint, read_varint, varint_len, ByteBuffer};
use crate::error::Error;

/// One entry of a block, as a refund walks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    cursor: Cursor,
    units: u64,
    /// Where its units field starts.
    units_at: usize,
}

impl Log<'_> {
    /// The entries of block `index`, in order, up to the newest entry.
    fn block_entries(&self, index: usize) -> Result<Vec<Entry>, Error> {
        let mut cursor = self.first_of_block(index)?;
        let block_end = block_offset(index) + BLOCK;
        let block = self.bytes.get(..block_end).unwrap_or(self.bytes);
        let mut entries = Vec::new();
        let mut units_at = cursor.offset;
        for _ in 0..MAX_ENTRIES_IN_BLOCK {
            let (units, end) = read_units(block, units_at).ok_or(Error::CorruptState)?;
            entries.push(Entry {
                cursor,
                units,
                units_at,
            });
            if cursor.offset >= self.header.tail {
                break;
            }
            match block.get(end) {
                Some(&low) if low != 0 => {
                    let (delta_ms, after) = read_varint(block, end).ok_or(Error::CorruptState)?;
                    cursor = Cursor {
                        offset: end,
                        at_ms: cursor
                            .at_ms
                            .checked_add_unsigned(delta_ms)
                            .ok_or(Error::CorruptState)?,
                        units_before: cursor.units_before.wrapping_add(units),
                    };
                    units_at = after;
                }
                _ => break,
            }
        }
        Ok(entries)
    }
}

/// How a refund shortens the log it was decided on: its newest units leave it, the newest
/// entry kept losing some of its own or keeping them all. Worked out before any byte changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrimPlan {
    stored_len: usize,
    /// Where the newest entry kept has its units field, and the units it keeps.
    units_at: usize,
    units: u64,
    len: usize,
    header: Header,
    /// When the newest entry kept was admitted.
    pub tail_ms: i64,
}

/// Plans taking the newest `units` (at least 1, fewer than the live units) out of the log
/// `live` was found in: a walk back over the blocks they are in, from the newest.
pub fn plan_trim(log: &Log, live: &Live, units: i64) -> Result<TrimPlan, Error> {
    let mut left = u64::try_from(units)
        .ok()
        .filter(|&units| units >= 1 && units < live.total as u64)
        .ok_or(Error::Internal)?;
    let header = log.header;
    let oldest_block = block_index(live.oldest.offset);
    let mut index = block_index(header.tail);
    let mut entries = log.block_entries(index)?;
    // The walk must find the newest entry where the header says, ending the units count.
    match entries.last() {
        Some(last)
            if last.cursor.offset == header.tail
                && last.cursor.units_before.wrapping_add(last.units) == header.units_logged => {}
        _ => return Err(Error::CorruptState),
    }
    loop {
        while let Some(entry) = entries.pop() {
            if entry.units > left {
                return trim_to(log, entry, entry.units - left);
            }
            left -= entry.units;
            if left == 0 {
                let kept = match entries.last() {
                    Some(&kept) => kept,
                    None if index > oldest_block => *log
                        .block_entries(index - 1)?
                        .last()
                        .ok_or(Error::CorruptState)?,
                    None => return Err(Error::CorruptState),
                };
                return trim_to(log, kept, kept.units);
            }
        }
        if index <= oldest_block {
            return Err(Error::CorruptState);
        }
        index -= 1;
        entries = log.block_entries(index)?;
    }
}

/// The plan that makes `entry`, keeping `units` of its own, the newest.
fn trim_to(log: &Log, entry: Entry, units: u64) -> Result<TrimPlan, Error> {
    let header = Header {
        tail: entry.cursor.offset,
        tail_ms: entry.cursor.at_ms,
        units_logged: entry.cursor.units_before.wrapping_add(units),
        ..log.header
    };
    if header.tail < header.head || header.tail_ms < header.head_ms {
        return Err(Error::CorruptState);
    }
    Ok(TrimPlan {
        stored_len: log.bytes.len(),
        units_at: entry.units_at,
        units,
        len: entry.units_at + varint_len(units),
        header,
        tail_ms: entry.cursor.at_ms,
    })
}

impl TrimPlan {
    /// Writes the planned change into `buffer`, which must hold the bytes it was planned on.
    pub fn write(&self, buffer: &mut impl ByteBuffer) -> Result<(), Error> {
        let bytes = buffer.bytes_mut()?;
        if bytes.len() != self.stored_len || self.len > self.stored_len {
            return Err(Error::Internal);
        }
        put_varint(bytes, self.units_at, self.units, varint_len(self.units))?;
        write_header(bytes, &self.header)?;
        buffer.resize(self.len)
    }
}

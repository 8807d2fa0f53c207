//! The bytes of a bucketed window (`CL.WINDOW … BUCKETS n`): a header and a ring of up to n
//! cells.
//!
//! # Encoding
//!
//! One string value: a 32-byte header, then `k` cells (1 ≤ k ≤ n) of 1, 2, 4 or 8 bytes each,
//! the fewest that hold the limit and every cell's count. Integers are little-endian.
//!
//! | bytes  | header field                                                        |
//! |--------|---------------------------------------------------------------------|
//! | 0..3   | magic `CLB`                                                         |
//! | 3      | format version, 1                                                   |
//! | 4      | bytes per cell: 1, 2, 4 or 8                                        |
//! | 5..7   | `n`, the number of cells (u16, 2 to 1024)                           |
//! | 7..9   | `origin` (u16, below n): cell j is kept at slot `(j − origin) mod n` |
//! | 9..15  | `width_ms`, the cells' width in milliseconds (48 bits)              |
//! | 15..23 | `newest`: the newest cell holding units, as its index on the grid   |
//! | 23..31 | `sum`: the units in cells `newest − n + 1 … newest` (u64)           |
//! | 31     | zero                                                                |
//!
//! Cell `j` covers the milliseconds `j·width_ms … (j+1)·width_ms − 1` since the Unix epoch.
//! The slots of the n cells up to `newest` are the ring. A new key's first cell is its slot 0,
//! and the value holds only the slots written so far: the slots past its end are empty, so a
//! new key is 33 to 40 bytes, and the value grows a cell at a time until it holds n. A cell
//! that has left the window keeps its units until a write empties its slot, so readers
//! subtract those from `sum` themselves.
//!
//! The header is checked whole and the length against it, so no read can run off the value;
//! what the cells hold is only ever added or subtracted with checks.

use crate::args::{MAX_CELLS, MIN_CELLS};
use crate::bytes::le_i64;
use crate::error::Error;

pub const HEADER_LEN: usize = 32;
const MAGIC: &[u8; 3] = b"CLB";
const VERSION: u8 = 1;
/// The widest a cell may be, in milliseconds: every span is held to 2^62 ns, under 2^43 ms.
const MAX_WIDTH_MS: i64 = (1 << 48) - 1;

/// The grid a window's cells are drawn on: `n` cells of `width_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    pub n: i64,
    pub width_ms: i64,
}

impl Grid {
    /// The cell that holds instant `ms`.
    pub fn cell_of(&self, ms: i64) -> i64 {
        ms.div_euclid(self.width_ms)
    }

    /// The instant cell `j` leaves a window of this grid: when cell `j + n` begins.
    pub fn leaves_at_ms(&self, cell: i64) -> Option<i64> {
        cell.checked_add(self.n)?.checked_mul(self.width_ms)
    }
}

/// What a value's header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub grid: Grid,
    pub cell_bytes: usize,
    /// The cell index, mod n, kept at slot 0.
    pub origin: i64,
    pub newest: i64,
    pub sum: u64,
}

impl Header {
    /// The slot cell `j` is kept at.
    #[inline]
    pub fn slot(&self, cell: i64) -> usize {
        // n ≥ 2 and origin < n: the remainder is in 0..n.
        (cell - self.origin).rem_euclid(self.grid.n) as usize
    }
}

/// A value whose header has been checked, and its length against it.
#[derive(Debug, Clone, Copy)]
pub struct Cells<'a> {
    bytes: &'a [u8],
    pub header: Header,
    /// How many slots the value holds, from slot 0.
    pub slots: usize,
}

impl<'a> Cells<'a> {
    /// Refuses a value that is not a bucketed window of this format, or whose header does not
    /// fit its length.
    pub fn decode(bytes: &'a [u8]) -> Result<Cells<'a>, Error> {
        let raw: &[u8; HEADER_LEN] = bytes
            .get(..HEADER_LEN)
            .and_then(|h| h.try_into().ok())
            .ok_or(Error::CorruptState)?;
        let mut width = [0u8; 8];
        width[..6].copy_from_slice(&raw[9..15]);
        let header = Header {
            grid: Grid {
                n: i64::from(u16::from_le_bytes([raw[5], raw[6]])),
                width_ms: i64::from_le_bytes(width),
            },
            cell_bytes: usize::from(raw[4]),
            origin: i64::from(u16::from_le_bytes([raw[7], raw[8]])),
            newest: le_i64(raw, 15),
            sum: le_i64(raw, 23) as u64,
        };
        let grid = header.grid;
        let cells_len = bytes.len() - HEADER_LEN;
        let valid = &raw[..3] == MAGIC
            && raw[3] == VERSION
            && matches!(header.cell_bytes, 1 | 2 | 4 | 8)
            && (MIN_CELLS..=MAX_CELLS).contains(&grid.n)
            && header.origin < grid.n
            && grid.width_ms >= 1
            && header.newest >= 0
            && grid.leaves_at_ms(header.newest).is_some()
            && i64::try_from(header.sum).is_ok()
            && raw[31] == 0
            && cells_len % header.cell_bytes.max(1) == 0
            && (1..=grid.n as usize).contains(&(cells_len / header.cell_bytes.max(1)));
        if !valid {
            return Err(Error::CorruptState);
        }
        Ok(Cells {
            bytes,
            header,
            slots: cells_len / header.cell_bytes,
        })
    }

    /// The units at `slot`; a slot past the value's end is empty.
    #[inline]
    pub fn at_slot(&self, slot: usize) -> u64 {
        if slot >= self.slots {
            return 0;
        }
        read_cell(self.bytes, self.header.cell_bytes, slot)
    }

    /// The units in cell `j`: callers ask only for cells within the ring.
    #[inline]
    pub fn get(&self, cell: i64) -> u64 {
        self.at_slot(self.header.slot(cell))
    }
}

/// The number of cells a value holds, if it is a bucketed window: for the error that names
/// the form a key holds.
pub fn cells_in(bytes: &[u8]) -> Option<i64> {
    Cells::decode(bytes).ok().map(|cells| cells.header.grid.n)
}

/// The length of a value of `slots` cells of `cell_bytes`.
pub fn value_len(slots: usize, cell_bytes: usize) -> usize {
    HEADER_LEN + slots * cell_bytes
}

/// The fewest bytes per cell that hold `most`.
pub fn cell_bytes_for(most: u64) -> usize {
    match most {
        0..=0xff => 1,
        0x100..=0xffff => 2,
        0x1_0000..=0xffff_ffff => 4,
        _ => 8,
    }
}

/// The most one cell of `cell_bytes` holds.
pub fn cell_max(cell_bytes: usize) -> u64 {
    match cell_bytes {
        1 => 0xff,
        2 => 0xffff,
        4 => 0xffff_ffff,
        _ => u64::MAX,
    }
}

/// One cell's units, read at its fixed width: a call may read every cell, so no copy loop.
#[inline]
fn read_cell(bytes: &[u8], cell_bytes: usize, slot: usize) -> u64 {
    let at = HEADER_LEN + slot * cell_bytes;
    let field = |len: usize| bytes.get(at..at + len);
    match cell_bytes {
        1 => field(1).map_or(0, |b| u64::from(b[0])),
        2 => field(2)
            .and_then(|b| b.try_into().ok())
            .map_or(0, |b| u64::from(u16::from_le_bytes(b))),
        4 => field(4)
            .and_then(|b| b.try_into().ok())
            .map_or(0, |b| u64::from(u32::from_le_bytes(b))),
        _ => field(8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes),
    }
}

/// Writes the header into the first `HEADER_LEN` bytes.
pub fn write_header(bytes: &mut [u8], header: &Header) -> Result<(), Error> {
    let out = bytes.get_mut(..HEADER_LEN).ok_or(Error::Internal)?;
    let n = u16::try_from(header.grid.n).map_err(|_| Error::Internal)?;
    let origin = u16::try_from(header.origin).map_err(|_| Error::Internal)?;
    let cell_bytes = u8::try_from(header.cell_bytes).map_err(|_| Error::Internal)?;
    if !(1..=MAX_WIDTH_MS).contains(&header.grid.width_ms) {
        return Err(Error::Internal);
    }
    out[..3].copy_from_slice(MAGIC);
    out[3] = VERSION;
    out[4] = cell_bytes;
    out[5..7].copy_from_slice(&n.to_le_bytes());
    out[7..9].copy_from_slice(&origin.to_le_bytes());
    out[9..15].copy_from_slice(&header.grid.width_ms.to_le_bytes()[..6]);
    out[15..23].copy_from_slice(&header.newest.to_le_bytes());
    out[23..31].copy_from_slice(&header.sum.to_le_bytes());
    out[31] = 0;
    Ok(())
}

/// Writes `units` at `slot` of a value laid out by `header`.
pub fn put_slot(bytes: &mut [u8], header: &Header, slot: usize, units: u64) -> Result<(), Error> {
    let width = header.cell_bytes;
    if units > cell_max(width) {
        return Err(Error::Internal);
    }
    let at = HEADER_LEN + slot * width;
    let out = bytes.get_mut(at..at + width).ok_or(Error::Internal)?;
    match width {
        1 => out.copy_from_slice(&[units as u8]),
        2 => out.copy_from_slice(&(units as u16).to_le_bytes()),
        4 => out.copy_from_slice(&(units as u32).to_le_bytes()),
        8 => out.copy_from_slice(&units.to_le_bytes()),
        _ => return Err(Error::Internal),
    }
    Ok(())
}

/// Empties the slots of `count` cells from `cell` on (at most n: every slot once), where the
/// value holds them: at most two runs of bytes, the ring wrapping once.
pub fn empty_cells(
    bytes: &mut [u8],
    header: &Header,
    cell: i64,
    count: usize,
) -> Result<(), Error> {
    let n = header.grid.n as usize;
    let slots = (bytes.len().saturating_sub(HEADER_LEN)) / header.cell_bytes;
    let count = count.min(n);
    let from = header.slot(cell);
    let runs = [
        (from, (from + count).min(n)),
        (0, (from + count).saturating_sub(n)),
    ];
    for (start, end) in runs {
        let end = end.min(slots);
        if start < end {
            bytes
                .get_mut(
                    HEADER_LEN + start * header.cell_bytes..HEADER_LEN + end * header.cell_bytes,
                )
                .ok_or(Error::Internal)?
                .fill(0);
        }
    }
    Ok(())
}

/// A whole value: the header, and the units of each of its slots.
pub fn encode(header: &Header, slots: &[u64]) -> Result<Vec<u8>, Error> {
    if slots.is_empty() || slots.len() > header.grid.n as usize {
        return Err(Error::Internal);
    }
    let mut bytes = vec![0u8; value_len(slots.len(), header.cell_bytes)];
    write_header(&mut bytes, header)?;
    for (slot, &units) in slots.iter().enumerate() {
        put_slot(&mut bytes, header, slot, units)?;
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            grid: Grid {
                n: 4,
                width_ms: 250,
            },
            cell_bytes: 2,
            origin: 1,
            newest: 7,
            sum: 600,
        }
    }

    #[test]
    fn a_value_decodes_as_it_was_encoded() {
        let bytes = encode(&header(), &[100, 200, 0, 300]).unwrap();
        assert_eq!(bytes.len(), 32 + 4 * 2);
        let cells = Cells::decode(&bytes).unwrap();
        assert_eq!(cells.header, header());
        // Cell j is at slot (j − 1) mod 4: cell 7 at slot 2, cell 5 at slot 0.
        assert_eq!((cells.get(5), cells.get(6), cells.get(8)), (100, 200, 300));
        assert_eq!(cells_in(&bytes), Some(4));
    }

    #[test]
    fn slots_past_the_value_s_end_are_empty() {
        let bytes = encode(&header(), &[100]).unwrap();
        assert_eq!(bytes.len(), 32 + 2);
        let cells = Cells::decode(&bytes).unwrap();
        assert_eq!((cells.get(5), cells.get(6), cells.get(7)), (100, 0, 0));
    }

    #[test]
    fn emptying_runs_wrap_once_and_stop_at_the_value_s_end() {
        let h = header();
        let mut bytes = encode(&h, &[1, 2, 3, 4]).unwrap();
        // Cells 7, 8 and 9 are slots 2, 3 and 0.
        empty_cells(&mut bytes, &h, 7, 3).unwrap();
        let cells = Cells::decode(&bytes).unwrap();
        assert_eq!(
            (0..4).map(|s| cells.at_slot(s)).collect::<Vec<_>>(),
            [0, 2, 0, 0]
        );
        let mut short = encode(&h, &[1, 2]).unwrap();
        empty_cells(&mut short, &h, 5, 9).unwrap();
        assert_eq!(short.len(), 32 + 4);
        assert!(short[32..].iter().all(|&b| b == 0));
    }

    #[test]
    fn a_damaged_header_or_length_is_refused() {
        let good = encode(&header(), &[0; 4]).unwrap();
        for (at, byte) in [
            (0, b'X'),
            (3, 2),
            (4, 3),
            (5, 1),
            (5, 3),
            (6, 4),
            (7, 4),
            (31, 1),
        ] {
            let mut bad = good.clone();
            bad[at] = byte;
            assert_eq!(
                Cells::decode(&bad).map(|_| ()),
                Err(Error::CorruptState),
                "{at}"
            );
        }
        let mut zero_width = good.clone();
        zero_width[9..15].fill(0);
        assert!(Cells::decode(&zero_width).is_err());
        let mut negative = good.clone();
        negative[15..23].copy_from_slice(&(-1i64).to_le_bytes());
        assert!(Cells::decode(&negative).is_err());
        let mut huge = good.clone();
        huge[15..23].copy_from_slice(&i64::MAX.to_le_bytes());
        assert!(Cells::decode(&huge).is_err());
        assert!(Cells::decode(&good[..good.len() - 1]).is_err());
        assert!(Cells::decode(&good[..32]).is_err());
        assert!(Cells::decode(&[good.clone(), vec![0, 0]].concat()).is_err());
        assert_eq!(cells_in(b"CLW"), None);
    }

    #[test]
    fn cells_take_the_fewest_bytes_that_hold_their_counts() {
        assert_eq!(cell_bytes_for(255), 1);
        assert_eq!(cell_bytes_for(256), 2);
        assert_eq!(cell_bytes_for(10_000), 2);
        assert_eq!(cell_bytes_for(1 << 32), 8);
        for bytes in [1, 2, 4, 8] {
            assert_eq!(cell_bytes_for(cell_max(bytes)), bytes);
        }
    }
}

//! The bytes of a bucketed window (`CL.WINDOW … BUCKETS n`): a header and a ring of n cells.
//!
//! # Encoding
//!
//! One string value: a 32-byte header, then `n` cells of 1, 2, 4 or 8 bytes each, the fewest
//! that hold the limit and every cell's count. Fixed-size integers are little-endian.
//!
//! | bytes  | header field                                                        |
//! |--------|---------------------------------------------------------------------|
//! | 0..3   | magic `CLB`                                                         |
//! | 3      | format version, 1                                                   |
//! | 4      | bytes per cell: 1, 2, 4 or 8                                        |
//! | 5..7   | `n`, the number of cells (u16, 2 to 1024)                           |
//! | 7..15  | `width_ms`, the cells' width in milliseconds (i64)                  |
//! | 15..23 | `newest`: the newest cell holding units, as its index on the grid   |
//! | 23..31 | `sum`: the units in cells `newest − n + 1 … newest` (u64)           |
//! | 31     | zero                                                                |
//!
//! Cell `j` covers the milliseconds `j·width_ms … (j+1)·width_ms − 1` since the Unix epoch,
//! and is kept at slot `j mod n`. The slots of the n cells up to `newest` are the ring; a
//! cell that has left the window keeps its units until a write empties its slot, so readers
//! subtract those from `sum` themselves.
//!
//! The header is checked whole and the length against it, so no read can run off the value;
//! what the cells hold is only ever added or subtracted with checks.

use crate::args::{MAX_CELLS, MIN_CELLS};
use crate::error::Error;

pub const HEADER_LEN: usize = 32;
const MAGIC: &[u8; 3] = b"CLB";
const VERSION: u8 = 1;

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

    fn slot(&self, cell: i64) -> usize {
        // n ≥ 2: the remainder is in 0..n.
        cell.rem_euclid(self.n) as usize
    }
}

/// A value whose header has been checked, and its length against it.
#[derive(Debug, Clone, Copy)]
pub struct Cells<'a> {
    bytes: &'a [u8],
    pub grid: Grid,
    pub cell_bytes: usize,
    pub newest: i64,
    pub sum: u64,
}

impl<'a> Cells<'a> {
    /// Refuses a value that is not a bucketed window of this format, or whose header does not
    /// fit its length.
    pub fn decode(bytes: &'a [u8]) -> Result<Cells<'a>, Error> {
        let header: &[u8; HEADER_LEN] = bytes
            .get(..HEADER_LEN)
            .and_then(|h| h.try_into().ok())
            .ok_or(Error::CorruptState)?;
        let [m0, m1, m2, version, cell_bytes, n0, n1, ..] = *header;
        let n = i64::from(u16::from_le_bytes([n0, n1]));
        let grid = Grid {
            n,
            width_ms: i64_at(header, 7),
        };
        let cells = Cells {
            bytes,
            grid,
            cell_bytes: usize::from(cell_bytes),
            newest: i64_at(header, 15),
            sum: i64_at(header, 23) as u64,
        };
        let valid = [m0, m1, m2] == *MAGIC
            && version == VERSION
            && matches!(cell_bytes, 1 | 2 | 4 | 8)
            && (MIN_CELLS..=MAX_CELLS).contains(&n)
            && grid.width_ms >= 1
            && cells.newest >= 0
            && grid.leaves_at_ms(cells.newest).is_some()
            && i64::try_from(cells.sum).is_ok()
            && header[31] == 0
            && bytes.len() == value_len(n as usize, cells.cell_bytes);
        if valid {
            Ok(cells)
        } else {
            Err(Error::CorruptState)
        }
    }

    /// The units in cell `j`, read from its slot: cells outside the ring read as what their
    /// slot holds, so callers ask only for cells within it.
    #[inline]
    pub fn get(&self, cell: i64) -> u64 {
        read_cell(self.bytes, self.cell_bytes, self.grid.slot(cell))
    }
}

/// The number of cells a value holds, if it is a bucketed window: for the error that names
/// the form a key holds.
pub fn cells_in(bytes: &[u8]) -> Option<i64> {
    Cells::decode(bytes).ok().map(|cells| cells.grid.n)
}

/// The length of a value of `n` cells of `cell_bytes`.
pub fn value_len(n: usize, cell_bytes: usize) -> usize {
    HEADER_LEN + n * cell_bytes
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

fn i64_at(bytes: &[u8], at: usize) -> i64 {
    let mut word = [0u8; 8];
    if let Some(field) = bytes.get(at..at + 8) {
        word.copy_from_slice(field);
    }
    i64::from_le_bytes(word)
}

fn read_cell(bytes: &[u8], cell_bytes: usize, slot: usize) -> u64 {
    let at = HEADER_LEN + slot * cell_bytes;
    let mut word = [0u8; 8];
    if let (Some(field), Some(to)) = (bytes.get(at..at + cell_bytes), word.get_mut(..cell_bytes)) {
        to.copy_from_slice(field);
    }
    u64::from_le_bytes(word)
}

/// What a write leaves in the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub grid: Grid,
    pub cell_bytes: usize,
    pub newest: i64,
    pub sum: u64,
}

/// Writes the header into the first `HEADER_LEN` bytes.
pub fn write_header(bytes: &mut [u8], header: &Header) -> Result<(), Error> {
    let out = bytes.get_mut(..HEADER_LEN).ok_or(Error::Internal)?;
    let n = u16::try_from(header.grid.n).map_err(|_| Error::Internal)?;
    let cell_bytes = u8::try_from(header.cell_bytes).map_err(|_| Error::Internal)?;
    out[..3].copy_from_slice(MAGIC);
    out[3] = VERSION;
    out[4] = cell_bytes;
    out[5..7].copy_from_slice(&n.to_le_bytes());
    out[7..15].copy_from_slice(&header.grid.width_ms.to_le_bytes());
    out[15..23].copy_from_slice(&header.newest.to_le_bytes());
    out[23..31].copy_from_slice(&header.sum.to_le_bytes());
    out[31] = 0;
    Ok(())
}

/// Writes `units` into cell `j`'s slot of a value laid out by `header`.
pub fn put_cell(bytes: &mut [u8], header: &Header, cell: i64, units: u64) -> Result<(), Error> {
    if units > cell_max(header.cell_bytes) {
        return Err(Error::Internal);
    }
    let at = HEADER_LEN + header.grid.slot(cell) * header.cell_bytes;
    let out = bytes
        .get_mut(at..at + header.cell_bytes)
        .ok_or(Error::Internal)?;
    out.copy_from_slice(&units.to_le_bytes()[..header.cell_bytes]);
    Ok(())
}

/// A whole value: the header, and each slot's units (`slots[j mod n]` for cell j).
pub fn encode(header: &Header, slots: &[u64]) -> Result<Vec<u8>, Error> {
    let n = usize::try_from(header.grid.n).map_err(|_| Error::Internal)?;
    if slots.len() != n {
        return Err(Error::Internal);
    }
    let mut bytes = vec![0u8; value_len(n, header.cell_bytes)];
    write_header(&mut bytes, header)?;
    for (slot, &units) in slots.iter().enumerate() {
        if units > cell_max(header.cell_bytes) {
            return Err(Error::Internal);
        }
        let at = HEADER_LEN + slot * header.cell_bytes;
        bytes
            .get_mut(at..at + header.cell_bytes)
            .ok_or(Error::Internal)?
            .copy_from_slice(&units.to_le_bytes()[..header.cell_bytes]);
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
            newest: 7,
            sum: 600,
        }
    }

    #[test]
    fn a_value_decodes_as_it_was_encoded() {
        let bytes = encode(&header(), &[100, 200, 0, 300]).unwrap();
        assert_eq!(bytes.len(), 32 + 4 * 2);
        let cells = Cells::decode(&bytes).unwrap();
        assert_eq!(
            (cells.grid, cells.newest, cells.sum),
            (header().grid, 7, 600)
        );
        // Cell 7 is at slot 3, cell 4 at slot 0.
        assert_eq!((cells.get(7), cells.get(4), cells.get(5)), (300, 100, 200));
        assert_eq!(cells_in(&bytes), Some(4));
    }

    #[test]
    fn a_damaged_header_or_length_is_refused() {
        let good = encode(&header(), &[0; 4]).unwrap();
        for (at, byte) in [
            (0, b'X'),
            (3, 2),
            (4, 3),
            (5, 1),
            (5, 0xff),
            (6, 4),
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
        let mut negative = good.clone();
        negative[15..23].copy_from_slice(&(-1i64).to_le_bytes());
        assert!(Cells::decode(&negative).is_err());
        let mut huge = good.clone();
        huge[15..23].copy_from_slice(&i64::MAX.to_le_bytes());
        assert!(Cells::decode(&huge).is_err());
        assert!(Cells::decode(&good[..good.len() - 1]).is_err());
        assert!(Cells::decode(&[good.clone(), vec![0]].concat()).is_err());
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

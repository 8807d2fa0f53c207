//! CL.WINDOW's bucketed form (`BUCKETS n`): the sliding window of sub-windows.
//!
//! The period is cut into `n` cells of `w = period / n` milliseconds, drawn on one grid from
//! the Unix epoch, so that every client, replica and AOF replay sees the same cells. At
//! instant `t` the current cell is `c = ⌊t / w⌋`, and the window counts cells `c − n + 1 … c`:
//! a unit admitted in cell `j` counts until `(j + n)·w`. Its memory is n counters whatever
//! the traffic; its price is precision: in any span of `(n − 1)·w` at most `limit` units are
//! admitted, where the exact window holds that for any span of a whole period.
//!
//! A key keeps a running sum of its cells, and the newest cell holding units. A call
//! subtracts the cells that left since the last write, and an admission empties their slots
//! and adds to one cell: O(1), plus the cells that left since the last write (at most n). A
//! clock that stepped back counts into the newest cell the key holds, as the exact log counts
//! into its newest entry. The bytes are in `buckets/cells.rs`.

mod cells;

use crate::args::WindowParams;
use crate::bytes::ByteBuffer;
use crate::error::Error;
use crate::outcome::Outcome;
use crate::time::NANOS_PER_MILLI;
use cells::{
    cell_bytes_for, cell_max, empty_cells, encode, put_slot, value_len, write_header, Cells,
    Header, HEADER_LEN,
};
pub use cells::{cells_in, Grid};

/// One request against a bucketed window limiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BucketedWindow {
    limit: i64,
    grid: Grid,
    quantity: i64,
}

/// The reply, and the change to the key when the request changed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub outcome: Outcome,
    pub change: Option<CellsChange>,
}

/// What a write does to a key's cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellsChange {
    /// Write the cells; the key expires when the newest cell holding units leaves.
    Write(CellsPlan),
    /// A refund gave every unit back: the key is deleted.
    Clear,
}

impl BucketedWindow {
    /// From validated arguments: `limit ≥ 1`, `n` within `MIN_CELLS..=MAX_CELLS` and dividing
    /// `period_ms`, `quantity ≥ 0`.
    pub fn new(params: &WindowParams, n: i64, quantity: i64) -> BucketedWindow {
        BucketedWindow {
            limit: params.limit,
            grid: Grid {
                n,
                width_ms: params.period_ms / n.max(1),
            },
            quantity,
        }
    }

    /// The same limiter asked for nothing: a peek.
    pub fn peek(&self) -> BucketedWindow {
        BucketedWindow {
            quantity: 0,
            ..*self
        }
    }

    /// The same limiter asked for `quantity` units (ATMOST's grant, at most what it was asked).
    pub fn taking(&self, quantity: i64) -> BucketedWindow {
        BucketedWindow { quantity, ..*self }
    }

    /// Decides a request at `now_ms` against the stored cells, if any, without changing
    /// them; an admission's change is planned whole.
    #[inline]
    pub fn decide(&self, stored: Option<&[u8]>, now_ms: i64) -> Result<Decision, Error> {
        let now_cell = self.grid.cell_of(now_ms);
        let ring = stored.map(|bytes| Ring::on(bytes, self.grid)).transpose()?;
        let live = ring.as_ref().map(|ring| ring.live(now_cell)).transpose()?;
        let (ring, count) = match (ring, live.flatten()) {
            (Some(ring), Some(count)) => (Some(ring), count),
            // Every unit has left: the key is as good as gone.
            _ => (None, 0),
        };
        let leaves_in = |cell: i64| -> Result<i64, Error> {
            let at_ms = self.grid.leaves_at_ms(cell).ok_or(Error::CorruptState)?;
            Ok(at_ms
                .saturating_sub(now_ms)
                .saturating_mul(NANOS_PER_MILLI)
                .max(0))
        };
        let newest = ring.as_ref().map(|ring| ring.newest);
        let reset_now = newest.map(leaves_in).transpose()?.unwrap_or(0);
        let fits = count
            .checked_add(self.quantity)
            .filter(|&wanted| wanted <= self.limit);
        let Some(wanted) = fits else {
            let retry_after_ns = match &ring {
                Some(ring) if self.quantity <= self.limit => {
                    // count + quantity > limit ≥ quantity: at least one unit must leave.
                    let must_leave = count - (self.limit - self.quantity);
                    Some(leaves_in(ring.leaving_by(now_cell, must_leave)?)?)
                }
                _ => None,
            };
            return Ok(Decision {
                outcome: Outcome::denied(
                    self.limit,
                    self.limit.saturating_sub(count),
                    retry_after_ns,
                    reset_now,
                ),
                change: None,
            });
        };
        if self.quantity == 0 {
            return Ok(Decision {
                outcome: Outcome::allowed(self.limit, self.limit - wanted, reset_now),
                change: None,
            });
        }
        // A clock that stepped back counts into the newest cell the key holds.
        let at = newest.map_or(now_cell, |newest| newest.max(now_cell));
        let before = match (&ring, newest) {
            (Some(ring), Some(newest)) if at == newest => ring.get(at),
            _ => 0,
        };
        let units = before
            .checked_add(self.quantity as u64)
            .ok_or(Error::CorruptState)?;
        let plan = self.plan(
            stored,
            ring.as_ref(),
            Edit {
                // The slots the ring moves onto held the cells that left.
                emptied: [newest.map_or((1, 0), |newest| (newest + 1, at)), (1, 0)],
                cell: at,
                units,
                newest: at,
                sum: wanted,
            },
        )?;
        Ok(Decision {
            outcome: Outcome::allowed(self.limit, self.limit - wanted, leaves_in(at)?),
            change: Some(CellsChange::Write(plan)),
        })
    }

    /// Gives the request's units back at `now_ms` (REFUND): the newest units in the window
    /// leave, newest cell first, as the exact window gives back its newest entries. Answers
    /// the state it leaves, admitted.
    pub fn refund(&self, stored: Option<&[u8]>, now_ms: i64) -> Result<Decision, Error> {
        // Only a refund that gives nothing back answers with a peek: read it then alone.
        let peek = || Ok(self.peek().decide(stored, now_ms)?.admitted());
        let now_cell = self.grid.cell_of(now_ms);
        let ring = stored.map(|bytes| Ring::on(bytes, self.grid)).transpose()?;
        let Some(ring) = ring else {
            return peek();
        };
        let Some(count) = ring.live(now_cell)? else {
            return peek();
        };
        if self.quantity == 0 {
            return peek();
        }
        if self.quantity >= count {
            return Ok(Decision {
                outcome: Outcome::allowed(self.limit, self.limit, 0),
                change: Some(CellsChange::Clear),
            });
        }
        // Fewer units than the window holds: some cell keeps units, the walk ends in it.
        let oldest_live = ring.oldest_live(now_cell);
        let mut left = self.quantity as u64;
        let mut cell = ring.newest;
        let kept = loop {
            if cell < oldest_live {
                return Err(Error::CorruptState);
            }
            let units = ring.get(cell);
            if units > left {
                break units - left;
            }
            left -= units;
            cell -= 1;
        };
        let sum = count - self.quantity;
        let plan = self.plan(
            stored,
            Some(&ring),
            Edit {
                // The cells that left, and those the refund emptied.
                emptied: [
                    (ring.newest - self.grid.n + 1, oldest_live - 1),
                    (cell + 1, ring.newest),
                ],
                cell,
                units: kept,
                newest: cell,
                sum,
            },
        )?;
        let leaves_at = self.grid.leaves_at_ms(cell).ok_or(Error::CorruptState)?;
        Ok(Decision {
            outcome: Outcome::allowed(
                self.limit,
                self.limit - sum,
                leaves_at
                    .saturating_sub(now_ms)
                    .saturating_mul(NANOS_PER_MILLI),
            ),
            change: Some(CellsChange::Write(plan)),
        })
    }

    /// Plans `edit` on the value `ring` was read from: a new value of one cell when the ring
    /// is empty, in place when the value is on this grid and its cells hold the new count,
    /// whole otherwise.
    fn plan(
        &self,
        stored: Option<&[u8]>,
        ring: Option<&Ring>,
        edit: Edit,
    ) -> Result<CellsPlan, Error> {
        let expire_at_ms = self
            .grid
            .leaves_at_ms(edit.newest)
            .ok_or(Error::CorruptState)?;
        let stored_len = stored.map_or(0, <[u8]>::len);
        let header = |cell_bytes: usize, origin: i64| Header {
            grid: self.grid,
            cell_bytes,
            origin,
            newest: edit.newest,
            sum: edit.sum as u64,
        };
        let (form, header) = match ring {
            None => (
                Form::Fresh,
                // The new value's first cell is its slot 0.
                header(
                    cell_bytes_for(edit.units.max(self.limit as u64)),
                    edit.cell.rem_euclid(self.grid.n),
                ),
            ),
            Some(Ring {
                slots: Slots::Stored(cells),
                ..
            }) if edit.units <= cell_max(cells.header.cell_bytes) => (
                Form::InPlace {
                    // The expiry moves with the newest cell: an admission into the newest
                    // leaves it as it is, as INCR leaves an EXPIRE.
                    expiry_moves: cells.header.newest != edit.newest,
                },
                header(cells.header.cell_bytes, cells.header.origin),
            ),
            Some(ring) => {
                let most = ring.most().max(edit.units);
                (
                    Form::Whole,
                    header(cell_bytes_for(most.max(self.limit as u64)), 0),
                )
            }
        };
        Ok(CellsPlan {
            stored_len,
            form,
            header,
            emptied: edit.emptied,
            cell: edit.cell,
            units: edit.units,
            expire_at_ms,
        })
    }
}

impl Decision {
    /// The same answer as admitted, with no change: a refund that gives nothing back.
    fn admitted(self) -> Decision {
        Decision {
            outcome: self.outcome.admitted(),
            change: None,
        }
    }
}

/// A write's edit of the cells, on the call's grid: the slots of the cells in `emptied`
/// (inclusive ranges, empty when the first exceeds the second) are emptied, then `cell`
/// holds `units`.
struct Edit {
    emptied: [(i64, i64); 2],
    cell: i64,
    units: u64,
    newest: i64,
    sum: i64,
}

/// How a write changes a key's cells, worked out before any byte changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CellsPlan {
    /// The length of the value planned on; 0 for no key.
    stored_len: usize,
    form: Form,
    header: Header,
    emptied: [(i64, i64); 2],
    cell: i64,
    units: u64,
    /// When the key expires: when the newest cell holding units leaves.
    pub expire_at_ms: i64,
}

/// How a plan writes its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// A value of one cell replaces whatever the key held: no key, or every unit gone.
    Fresh,
    /// The stored value is edited where it is, growing to the slot written when it is past
    /// the value's end.
    InPlace { expiry_moves: bool },
    /// The value is written whole: cells moved onto another grid, or made wider.
    Whole,
}

impl CellsPlan {
    /// Whether the write moves the key's expiry; an admission into the newest cell leaves it.
    pub fn expiry_moves(&self) -> bool {
        !matches!(
            self.form,
            Form::InPlace {
                expiry_moves: false
            }
        )
    }

    /// Writes the change into `buffer`, which holds the value it was planned on (empty when
    /// there was none). Only a defect can make it fail.
    pub fn apply(&self, buffer: &mut impl ByteBuffer) -> Result<(), Error> {
        let header = &self.header;
        match self.form {
            Form::Fresh => {
                let mut value = [0u8; HEADER_LEN + 8];
                let len = value_len(1, header.cell_bytes);
                let value = value.get_mut(..len).ok_or(Error::Internal)?;
                write_header(value, header)?;
                put_slot(value, header, header.slot(self.cell), self.units)?;
                if self.stored_len == 0 {
                    return buffer.fill_empty(value);
                }
                buffer.reallocate(len)?;
                buffer
                    .bytes_mut()?
                    .get_mut(..len)
                    .ok_or(Error::Internal)?
                    .copy_from_slice(value);
                Ok(())
            }
            Form::InPlace { .. } => {
                let bytes = buffer.bytes_mut()?;
                if bytes.len() != self.stored_len {
                    return Err(Error::Internal);
                }
                for (from, to) in self.emptied {
                    if from <= to {
                        let count = usize::try_from(to - from + 1).unwrap_or(usize::MAX);
                        empty_cells(bytes, header, from, count)?;
                    }
                }
                let slot = header.slot(self.cell);
                let len = value_len(slot + 1, header.cell_bytes);
                if len > self.stored_len {
                    // Time reached a slot the value does not hold yet: it grows to it, at its
                    // exact size, at most n times from the write that made it.
                    buffer.reallocate(len)?;
                }
                let bytes = buffer.bytes_mut()?;
                put_slot(bytes, header, slot, self.units)?;
                write_header(bytes, header)
            }
            Form::Whole => {
                let bytes = buffer.bytes_mut()?;
                if bytes.len() != self.stored_len {
                    return Err(Error::Internal);
                }
                let ring = Ring::on(bytes, header.grid).map_err(|_| Error::Internal)?;
                // Every slot, from origin 0: the ring's cells by cell mod n.
                let n = header.grid.n;
                let mut slots = vec![0u64; n as usize];
                for (cell, units) in ring.walk(ring.newest - n + 1, ring.newest) {
                    *slots.get_mut(header.slot(cell)).ok_or(Error::Internal)? = units;
                }
                for (from, to) in self.emptied {
                    for cell in from..=to.min(from.saturating_add(n - 1)) {
                        *slots.get_mut(header.slot(cell)).ok_or(Error::Internal)? = 0;
                    }
                }
                *slots
                    .get_mut(header.slot(self.cell))
                    .ok_or(Error::Internal)? = self.units;
                let value = encode(header, &slots)?;
                buffer.reallocate(value.len())?;
                buffer
                    .bytes_mut()?
                    .get_mut(..value.len())
                    .ok_or(Error::Internal)?
                    .copy_from_slice(&value);
                Ok(())
            }
        }
    }
}

/// A key's cells as a call sees them on its own grid.
struct Ring<'a> {
    grid: Grid,
    /// The cell index, mod n, at slot 0.
    origin: i64,
    /// The newest cell holding units.
    newest: i64,
    /// The units in cells `newest − n + 1 … newest`.
    sum: i64,
    slots: Slots<'a>,
}

enum Slots<'a> {
    /// The value is on the call's grid: its cells are read where they are.
    Stored(Cells<'a>),
    /// The value was on another grid: its cells moved onto the call's, slot `cell mod n`.
    Moved(Vec<u64>),
}

impl<'a> Ring<'a> {
    /// The value's cells on `grid`. Cells stored on another grid move, each whole, to the
    /// cell of `grid` that holds its last millisecond: units only ever move later, so a new
    /// limit counts them no earlier than the old one did. Those that land before the ring
    /// ending at the newest are dropped, as they have left it.
    #[inline]
    fn on(bytes: &'a [u8], grid: Grid) -> Result<Ring<'a>, Error> {
        let cells = Cells::decode(bytes)?;
        let stored = cells.header;
        let sum = i64::try_from(stored.sum).map_err(|_| Error::CorruptState)?;
        if stored.grid == grid {
            return Ok(Ring {
                grid,
                origin: stored.origin,
                newest: stored.newest,
                sum,
                slots: Slots::Stored(cells),
            });
        }
        let old = stored.grid;
        let moved = |cell: i64| -> Result<i64, Error> {
            let last_ms = cell
                .checked_add(1)
                .and_then(|next| next.checked_mul(old.width_ms))
                .and_then(|end| end.checked_sub(1))
                .ok_or(Error::CorruptState)?;
            Ok(grid.cell_of(last_ms))
        };
        let newest = moved(stored.newest)?;
        let mut slots = vec![0u64; grid.n as usize];
        let mut sum = 0i64;
        for cell in stored.newest - old.n + 1..=stored.newest {
            let units = cells.get(cell);
            let to = moved(cell)?;
            if units == 0 || to <= newest - grid.n {
                continue;
            }
            let slot = slots
                .get_mut(to.rem_euclid(grid.n) as usize)
                .ok_or(Error::Internal)?;
            *slot = slot.checked_add(units).ok_or(Error::CorruptState)?;
            sum = i64::try_from(units)
                .ok()
                .and_then(|units| sum.checked_add(units))
                .ok_or(Error::CorruptState)?;
        }
        Ok(Ring {
            grid,
            origin: 0,
            newest,
            sum,
            slots: Slots::Moved(slots),
        })
    }

    #[inline]
    fn at_slot(&self, slot: usize) -> u64 {
        match &self.slots {
            Slots::Stored(cells) => cells.at_slot(slot),
            Slots::Moved(slots) => slots.get(slot).copied().unwrap_or(0),
        }
    }

    fn get(&self, cell: i64) -> u64 {
        self.at_slot((cell - self.origin).rem_euclid(self.grid.n) as usize)
    }

    /// The cells `from..=to`, oldest first, with their units: at most n, one slot after
    /// another, without a division for each.
    #[inline]
    fn walk(&self, from: i64, to: i64) -> impl Iterator<Item = (i64, u64)> + '_ {
        let n = self.grid.n as usize;
        let count = to
            .checked_sub(from)
            .and_then(|span| usize::try_from(span).ok())
            .map_or(0, |span| (span + 1).min(n));
        let first = (from - self.origin).rem_euclid(self.grid.n) as usize;
        (0..count).map(move |step| {
            let slot = first + step;
            let slot = if slot >= n { slot - n } else { slot };
            (from + step as i64, self.at_slot(slot))
        })
    }

    /// The oldest cell still in the window at `now_cell`.
    fn oldest_live(&self, now_cell: i64) -> i64 {
        (self.newest - self.grid.n + 1).max(now_cell - self.grid.n + 1)
    }

    /// The units in the window at `now_cell`, or `None` when every cell has left: the sum, less
    /// the cells that left since it was written (at most n − 1 of them).
    #[inline]
    fn live(&self, now_cell: i64) -> Result<Option<i64>, Error> {
        if self.newest <= now_cell - self.grid.n {
            return Ok(None);
        }
        let mut count = self.sum;
        let left = self.oldest_live(now_cell) - 1;
        for (_, units) in self.walk(self.newest - self.grid.n + 1, left) {
            count = i64::try_from(units)
                .ok()
                .and_then(|units| count.checked_sub(units))
                .ok_or(Error::CorruptState)?;
        }
        if count < 0 {
            return Err(Error::CorruptState);
        }
        Ok(Some(count))
    }

    /// The cell by whose leaving `must_leave` units (≥ 1) have left, oldest first.
    fn leaving_by(&self, now_cell: i64, must_leave: i64) -> Result<i64, Error> {
        let must_leave = u64::try_from(must_leave).map_err(|_| Error::Internal)?;
        let mut gone = 0u64;
        for (cell, units) in self.walk(self.oldest_live(now_cell), self.newest) {
            gone = gone.saturating_add(units);
            if gone >= must_leave {
                return Ok(cell);
            }
        }
        Err(Error::CorruptState)
    }

    /// The most units any cell of the ring holds.
    fn most(&self) -> u64 {
        self.walk(self.newest - self.grid.n + 1, self.newest)
            .map(|(_, units)| units)
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::TimeUnit;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    const NOW: i64 = 1_795_910_400_000;

    fn buckets(limit: i64, period_ms: i64, n: i64, quantity: i64) -> BucketedWindow {
        BucketedWindow::new(&WindowParams { limit, period_ms }, n, quantity)
    }

    /// A limiter key as the command layer keeps it: the value and its expiry.
    #[derive(Default, Clone)]
    struct Key {
        value: Option<Vec<u8>>,
        expire_at_ms: Option<i64>,
    }

    impl Key {
        fn write(&mut self, change: Option<CellsChange>) {
            match change {
                Some(CellsChange::Write(plan)) => {
                    let mut buffer = self.value.take().unwrap_or_default();
                    plan.apply(&mut buffer).unwrap();
                    self.value = Some(buffer);
                    // A write that leaves the expiry must find it where the plan would set it.
                    if plan.expiry_moves() {
                        self.expire_at_ms = Some(plan.expire_at_ms);
                    } else {
                        assert_eq!(self.expire_at_ms, Some(plan.expire_at_ms));
                    }
                }
                Some(CellsChange::Clear) => *self = Key::default(),
                None => {}
            }
        }

        /// The server drops a key once its expiry has passed: `now > when`.
        fn expire(&mut self, now_ms: i64) {
            if self.expire_at_ms.is_some_and(|at| at < now_ms) {
                *self = Key::default();
            }
        }

        fn call(&mut self, limiter: BucketedWindow, now_ms: i64) -> [i64; 5] {
            self.expire(now_ms);
            let decision = limiter.decide(self.value.as_deref(), now_ms).unwrap();
            self.write(decision.change);
            decision.outcome.to_reply(TimeUnit::Milliseconds)
        }

        fn refund(&mut self, limiter: BucketedWindow, now_ms: i64) -> [i64; 5] {
            self.expire(now_ms);
            let decision = limiter.refund(self.value.as_deref(), now_ms).unwrap();
            self.write(decision.change);
            decision.outcome.to_reply(TimeUnit::Milliseconds)
        }
    }

    #[test]
    fn units_count_until_their_cell_leaves() {
        // 4 cells of 250 ms; NOW is on the grid.
        let mut key = Key::default();
        let w = |q| buckets(3, 1_000, 4, q);
        assert_eq!(key.call(w(1), NOW + 100), [0, 3, 2, -1, 900]);
        assert_eq!(key.call(w(2), NOW + 600), [0, 3, 0, -1, 900]);
        // The first cell leaves at NOW + 1,000: one more fits then, the rest at NOW + 1,500.
        assert_eq!(key.call(w(1), NOW + 999), [1, 3, 0, 1, 501]);
        assert_eq!(key.call(w(3), NOW + 999), [1, 3, 0, 501, 501]);
        assert_eq!(key.call(w(4), NOW + 999), [1, 3, 0, -1, 501]);
        assert_eq!(key.call(w(1), NOW + 1_000), [0, 3, 0, -1, 1_000]);
        assert_eq!(key.expire_at_ms, Some(NOW + 2_000));
        // Cells 0, 2 and 4 are slots 0, 2 and 0: the value holds three slots.
        assert_eq!(key.value.as_ref().map(Vec::len), Some(32 + 3));
    }

    #[test]
    fn twice_the_limit_fits_in_one_period_across_a_cell_edge() {
        let mut key = Key::default();
        let w = |q| buckets(10, 1_000, 4, q);
        assert_eq!(key.call(w(10), NOW + 249)[0], 0);
        assert_eq!(key.call(w(1), NOW + 999)[0], 1);
        // Cell 0 leaves at NOW + 1,000, 751 ms after its units came.
        assert_eq!(key.call(w(10), NOW + 1_000)[0], 0);
    }

    #[test]
    fn a_stepped_back_clock_counts_into_the_newest_cell() {
        let mut key = Key::default();
        let w = |q| buckets(10, 1_000, 4, q);
        key.call(w(1), NOW + 800);
        assert_eq!(key.call(w(1), NOW + 100), [0, 10, 8, -1, 1_650]);
        assert_eq!(key.expire_at_ms, Some(NOW + 1_750));
    }

    #[test]
    fn a_refund_gives_back_the_newest_units() {
        let mut key = Key::default();
        let w = |q| buckets(5, 1_000, 4, q);
        key.call(w(2), NOW);
        key.call(w(2), NOW + 300);
        assert_eq!(key.refund(w(3), NOW + 400), [0, 5, 4, -1, 600]);
        assert_eq!(key.expire_at_ms, Some(NOW + 1_000));
        assert_eq!(key.refund(w(9), NOW + 400), [0, 5, 5, -1, 0]);
        assert_eq!(key.value, None);
        assert_eq!(key.refund(w(1), NOW + 400), [0, 5, 5, -1, 0]);
    }

    #[test]
    fn another_grid_moves_units_to_the_cell_of_their_last_millisecond() {
        let mut key = Key::default();
        // 4 cells of 250 ms: 1 unit in cell NOW/250, 2 in the next.
        key.call(buckets(10, 1_000, 4, 1), NOW + 10);
        key.call(buckets(10, 1_000, 4, 2), NOW + 260);
        // 2 cells of 500 ms: both land in the cell of NOW + 499.
        let two = |q| buckets(10, 1_000, 2, q);
        assert_eq!(key.call(two(0), NOW + 300), [0, 10, 7, -1, 700]);
        assert_eq!(key.call(two(1), NOW + 300), [0, 10, 6, -1, 700]);
        assert_eq!(key.value.as_ref().map(Vec::len), Some(32 + 2));
        // Same width, fewer cells: the last n′ cells count.
        let mut key = Key::default();
        let four = |q| buckets(10, 1_000, 4, q);
        key.call(four(1), NOW + 10);
        key.call(four(2), NOW + 510);
        assert_eq!(
            key.call(buckets(10, 500, 2, 0), NOW + 510),
            [0, 10, 8, -1, 490]
        );
    }

    #[test]
    fn cells_widen_when_the_limit_grows() {
        let mut key = Key::default();
        key.call(buckets(200, 1_000, 4, 200), NOW);
        assert_eq!(key.value.as_ref().map(Vec::len), Some(32 + 1));
        key.call(buckets(100_000, 1_000, 4, 70_000), NOW);
        assert_eq!(key.value.as_ref().map(Vec::len), Some(32 + 4 * 4));
        assert_eq!(
            key.call(buckets(100_000, 1_000, 4, 0), NOW)[2],
            100_000 - 70_200
        );
    }

    /// The plain model: the units of every cell of the grid, in a map. Reads forget nothing:
    /// a clock that steps back finds what a later reading left. Writes drop the cells that
    /// have left, and the key goes when its newest cell leaves.
    #[derive(Default, Clone)]
    struct Model {
        cells: BTreeMap<i64, i64>,
    }

    impl Model {
        fn live(&self, grid: Grid, now_ms: i64) -> Vec<(i64, i64)> {
            let c = now_ms.div_euclid(grid.width_ms);
            self.cells
                .iter()
                .filter(|&(&j, &units)| j > c - grid.n && units > 0)
                .map(|(&j, &units)| (j, units))
                .collect()
        }

        fn expire(&mut self, grid: Grid, now_ms: i64) {
            let newest = self.cells.last_key_value().map(|(&j, _)| j);
            if newest.is_some_and(|j| (j + grid.n) * grid.width_ms < now_ms) {
                self.cells.clear();
            }
        }

        /// The cells, kept on `old`, seen on `grid`: each cell's units go to the cell of
        /// `grid` holding its last millisecond, and those before the ring ending at the
        /// newest are dropped.
        fn on(&self, old: Grid, grid: Grid) -> Model {
            let moved = |j: i64| ((j + 1) * old.width_ms - 1).div_euclid(grid.width_ms);
            let Some(newest) = self.cells.last_key_value().map(|(&j, _)| moved(j)) else {
                return Model::default();
            };
            let mut cells = BTreeMap::new();
            for (&j, &units) in &self.cells {
                let to = moved(j);
                if to > newest - grid.n {
                    *cells.entry(to).or_default() += units;
                }
            }
            Model { cells }
        }

        fn call(&mut self, limit: i64, grid: Grid, q: i64, now_ms: i64) -> [i64; 5] {
            self.expire(grid, now_ms);
            let live = self.live(grid, now_ms);
            let count: i64 = live.iter().map(|&(_, u)| u).sum();
            let leaves = |j: i64| (j + grid.n) * grid.width_ms - now_ms;
            let c = now_ms.div_euclid(grid.width_ms);
            if count + q <= limit {
                let newest = live.last().map(|&(j, _)| j);
                let newest = if q > 0 {
                    self.cells = live.iter().copied().collect();
                    let at = newest.map_or(c, |j| j.max(c));
                    *self.cells.entry(at).or_default() += q;
                    Some(at)
                } else {
                    newest
                };
                [0, limit, limit - count - q, -1, newest.map_or(0, leaves)]
            } else {
                let retry = if q > limit {
                    -1
                } else {
                    let mut gone = 0;
                    let mut at = 0;
                    for &(j, u) in &live {
                        gone += u;
                        at = j;
                        if count - gone + q <= limit {
                            break;
                        }
                    }
                    leaves(at)
                };
                let reset = live.last().map_or(0, |&(j, _)| leaves(j));
                [1, limit, (limit - count).max(0), retry, reset]
            }
        }

        fn refund(&mut self, limit: i64, grid: Grid, mut q: i64, now_ms: i64) -> [i64; 5] {
            self.expire(grid, now_ms);
            let live = self.live(grid, now_ms);
            if q > 0 && !live.is_empty() {
                self.cells = live.iter().copied().collect();
            }
            while q > 0 && !live.is_empty() {
                let Some(mut last) = self.cells.last_entry() else {
                    break;
                };
                let taken = (*last.get()).min(q);
                *last.get_mut() -= taken;
                q -= taken;
                if *last.get() == 0 {
                    last.remove();
                }
            }
            let live = self.live(grid, now_ms);
            let count: i64 = live.iter().map(|&(_, u)| u).sum();
            let reset = live
                .last()
                .map_or(0, |&(j, _)| (j + grid.n) * grid.width_ms - now_ms);
            [0, limit, (limit - count).max(0), -1, reset]
        }
    }

    fn grids() -> impl Strategy<Value = (i64, i64)> {
        // (n, width_ms)
        (2i64..12, 1i64..200)
    }

    proptest! {
        #[test]
        fn the_cells_answer_exactly_as_the_model(
            limit in 1i64..30,
            (n, width) in grids(),
            start in 0i64..1_000,
            calls in prop::collection::vec(
                (
                    prop_oneof![Just(0i64), 0i64..400, 400i64..5_000],
                    prop_oneof![8 => 0i64..8, 1 => 250i64..300, 1 => 60_000i64..70_000],
                    prop::bool::weighted(0.2),
                ),
                1..150,
            ),
        ) {
            let grid = Grid { n, width_ms: width };
            // Limits past a byte's and two bytes' counts make the cells wider as they come.
            let limit_for = |q: i64| if q < 8 { limit } else { q + limit };
            let limiter = |q| buckets(limit_for(q), n * width, n, q);
            let (mut key, mut model) = (Key::default(), Model::default());
            let mut now = NOW + start;
            for (gap, q, refund) in calls {
                now += gap;
                let limit = limit_for(q);
                if refund {
                    prop_assert_eq!(key.refund(limiter(q), now), model.refund(limit, grid, q, now));
                } else {
                    prop_assert_eq!(key.call(limiter(q), now), model.call(limit, grid, q, now));
                }
                // The key expires exactly when the window is empty.
                model.expire(grid, now);
                key.expire(now);
                prop_assert_eq!(key.value.is_some(), !model.cells.is_empty());
            }
        }

        #[test]
        fn grids_that_change_from_call_to_call_answer_as_the_model(
            limit in 1i64..30,
            grids in prop::collection::vec((2i64..9, 1i64..120), 3),
            calls in prop::collection::vec(
                (-100i64..600, 0usize..3, 0i64..8, prop::bool::weighted(0.2)),
                1..120,
            ),
        ) {
            let grids: Vec<Grid> = grids
                .into_iter()
                .map(|(n, width_ms)| Grid { n, width_ms })
                .collect();
            let (mut key, mut model) = (Key::default(), Model::default());
            // The grid the key's value is on: its last write's.
            let mut stored = grids[0];
            let mut now = NOW;
            for (step, which, q, refund) in calls {
                now += step;
                let grid = grids[which];
                let limiter = buckets(limit, grid.n * grid.width_ms, grid.n, q);
                model.expire(stored, now);
                key.expire(now);
                // A call reads the cells on its grid, and writes them there if it writes.
                let mut seen = model.on(stored, grid);
                let had_units = !seen.live(grid, now).is_empty();
                let (reply, expected) = if refund {
                    (key.refund(limiter, now), seen.refund(limit, grid, q, now))
                } else {
                    (key.call(limiter, now), seen.call(limit, grid, q, now))
                };
                prop_assert_eq!(reply, expected);
                let wrote = q > 0 && if refund { had_units } else { reply[0] == 0 };
                if wrote {
                    (model, stored) = (seen, grid);
                }
                prop_assert_eq!(key.value.is_some(), !model.cells.is_empty());
            }
        }

        #[test]
        fn a_clock_that_steps_back_answers_as_the_model(
            limit in 1i64..30,
            (n, width) in grids(),
            calls in prop::collection::vec((-600i64..600, 0i64..8), 1..100),
        ) {
            let grid = Grid { n, width_ms: width };
            let limiter = |q| buckets(limit, n * width, n, q);
            let (mut key, mut model) = (Key::default(), Model::default());
            let mut now = NOW;
            for (step, q) in calls {
                now += step;
                // The server's expiry goes by its own clock: a key is gone once its expiry
                // has passed at any reading, as the model's cells are.
                let expected = model.call(limit, grid, q, now);
                key.expire(now);
                let decision = limiter(q).decide(key.value.as_deref(), now).unwrap();
                key.write(decision.change);
                prop_assert_eq!(decision.outcome.to_reply(TimeUnit::Milliseconds), expected);
            }
        }

        #[test]
        fn no_span_of_n_minus_one_cells_admits_more_than_the_limit(
            limit in 1i64..20,
            (n, width) in grids(),
            calls in prop::collection::vec((0i64..300, 0i64..6), 1..200),
        ) {
            let mut key = Key::default();
            let mut admitted = Vec::new();
            let mut now = NOW;
            for (gap, q) in calls {
                now += gap;
                if key.call(buckets(limit, n * width, n, q), now)[0] == 0 && q > 0 {
                    admitted.push((now, q));
                }
            }
            let span = (n - 1) * width;
            for &(start, _) in &admitted {
                let within: i64 = admitted
                    .iter()
                    .filter(|&&(t, _)| t >= start && t - start < span)
                    .map(|&(_, q)| q)
                    .sum();
                prop_assert!(within <= limit, "{within} in {span} ms from {start}");
            }
        }

        #[test]
        fn any_bytes_are_decided_or_refused_without_panicking(
            bytes in prop::collection::vec(any::<u8>(), 0..120),
            now in 0i64..1 << 42,
            q in 0i64..1_000,
        ) {
            decide_and_write(&bytes, now, q)?;
        }

        /// A sound header on the call's grid or near it, any cells and any sum: past the
        /// decoding, into the decisions and the writes.
        #[test]
        fn crafted_cells_are_decided_or_refused_without_panicking(
            cells in prop::collection::vec(any::<u8>(), 1..40),
            cell_bytes in prop::sample::select(vec![1usize, 2, 4, 8]),
            (n, width_ms) in prop_oneof![Just((4i64, 250i64)), (2i64..6, 1i64..600)],
            newest_offset in -12i64..12,
            sum in prop_oneof![0u64..2_000, any::<u64>()],
            (origin, slots) in (0i64..6, 1usize..7),
            now in NOW..NOW + 10_000,
            q in 0i64..200,
        ) {
            let slots = slots.min(n as usize);
            let mut bytes = vec![0u8; 32 + slots * cell_bytes];
            let header = Header {
                grid: Grid { n, width_ms },
                cell_bytes,
                origin: origin % n,
                newest: now / width_ms + newest_offset,
                sum,
            };
            write_header(&mut bytes, &header).unwrap();
            for (byte, value) in bytes[32..].iter_mut().zip(cells.iter().cycle()) {
                *byte = *value;
            }
            decide_and_write(&bytes, now, q)?;
        }
    }

    /// Decides and refunds on `bytes` with four cells of 250 ms: refused or decided, and
    /// whatever is decided writes, and reads again.
    fn decide_and_write(bytes: &[u8], now: i64, q: i64) -> Result<(), TestCaseError> {
        let limiter = buckets(100, 1_000, 4, q);
        for decision in [
            limiter.decide(Some(bytes), now),
            limiter.refund(Some(bytes), now),
        ] {
            let Ok(decision) = decision else { continue };
            let reply = decision.outcome.to_reply(TimeUnit::Milliseconds);
            prop_assert!(reply[3] >= -1 && reply[4] >= 0);
            if let Some(CellsChange::Write(plan)) = decision.change {
                let mut written = bytes.to_vec();
                prop_assert!(plan.apply(&mut written).is_ok());
                prop_assert!(Cells::decode(&written).is_ok());
            }
        }
        Ok(())
    }
}

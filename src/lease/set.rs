//! The bytes of CL.LEASE's set of leases, the searches a call makes in them, and the edits a
//! write makes in place.
//!
//! # Encoding
//!
//! One string value: a 16-byte header, the entries, then two indexes of the entries. Integers
//! are little-endian.
//!
//! | bytes  | header field                                                      |
//! |--------|-------------------------------------------------------------------|
//! | 0..3   | magic `CLL`                                                       |
//! | 3      | format version, 1                                                 |
//! | 4..8   | `count`: how many leases the set holds, live or not yet dropped   |
//! | 8..12  | `heap_len`: the bytes of the entries, holes included              |
//! | 12..16 | `holes`: the bytes of the entries no lease uses any more          |
//!
//! Then `heap_len` bytes of entries, each `[len: u8][holder: len bytes][end_ms: u48]`, at the
//! byte offsets the indexes give (from the start of the entries); then `by_holder`, `count`
//! offsets (u32) in the order of the holders' bytes; then `by_end`, `count` offsets in the
//! order of the leases' ends (ties by holder). The value is exactly
//! `16 + heap_len + 8 × count` bytes long.
//!
//! A lease costs its holder's length plus 15 bytes. Finding a holder, and finding the leases
//! that end after an instant, are binary searches; an edit moves at most the two indexes
//! (8 bytes a lease). A released or expired lease leaves a hole among the entries; once the
//! holes outweigh the entries in use, the entries are packed again, which costs each byte
//! written O(1) over time.
//!
//! A value that is not a set of leases (another magic, version or length) is refused. Within a
//! set whose header is sound, every read is bounds-checked: damaged bytes can give a wrong
//! answer or an error, never a panic.

use std::cmp::Ordering;

use crate::error::Error;
use crate::window::{LogBuffer, MAX_VALUE_LEN};

pub const HEADER_LEN: usize = 16;
const MAGIC: &[u8; 3] = b"CLL";
const VERSION: u8 = 1;
/// The bytes of an entry besides its holder: its length, and its end.
const ENTRY_OVERHEAD: usize = 1 + END_LEN;
const END_LEN: usize = 6;
const SLOT: usize = 4;
/// The longest holder name, as the commands take it: its length fits the entry's one byte.
pub use crate::args::MAX_HOLDER;
const _: () = assert!(MAX_HOLDER <= u8::MAX as usize);
/// The latest end an entry can hold: 2^48 ms, in the year 10889.
pub const MAX_END_MS: i64 = (1 << 48) - 1;

/// A set of leases as stored, read in place.
#[derive(Debug, Clone, Copy)]
pub struct LeaseSet<'a> {
    raw: &'a [u8],
    count: usize,
    heap_len: usize,
    holes: usize,
}

/// Where a holder's lease stands in both indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    pub by_holder: usize,
    pub by_end: usize,
    pub end_ms: i64,
}

impl<'a> LeaseSet<'a> {
    /// Reads a stored value as a set of leases.
    pub fn parse(raw: &'a [u8]) -> Result<LeaseSet<'a>, Error> {
        if raw.len() < HEADER_LEN || &raw[0..3] != MAGIC || raw[3] != VERSION {
            return Err(Error::CorruptState);
        }
        let count = le_u32(raw, 4) as usize;
        let heap_len = le_u32(raw, 8) as usize;
        let holes = le_u32(raw, 12) as usize;
        let expected = count
            .checked_mul(2 * SLOT)
            .and_then(|indexes| indexes.checked_add(heap_len))
            .and_then(|body| body.checked_add(HEADER_LEN));
        if expected != Some(raw.len()) || holes > heap_len {
            return Err(Error::CorruptState);
        }
        Ok(LeaseSet {
            raw,
            count,
            heap_len,
            holes,
        })
    }

    /// How many leases the set holds, live or not yet dropped.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Whether a lease for `holder` can be added without the value growing past the longest
    /// string the server holds (leases that ended are not counted off: a set that large is
    /// refused a little early, never written past the limit).
    pub fn has_room_for(&self, holder: &[u8]) -> bool {
        fits(
            self.count + 1,
            self.heap_len + ENTRY_OVERHEAD + holder.len(),
            self.holes,
        )
        .is_ok()
    }

    fn by_holder_at(&self) -> usize {
        HEADER_LEN + self.heap_len
    }

    fn by_end_at(&self) -> usize {
        self.by_holder_at() + self.count * SLOT
    }

    fn slot(&self, index_at: usize, i: usize) -> Result<usize, Error> {
        if i >= self.count {
            return Err(Error::Internal);
        }
        let at = index_at + i * SLOT;
        let bytes = self.raw.get(at..at + SLOT).ok_or(Error::CorruptState)?;
        Ok(le_u32(bytes, 0) as usize)
    }

    /// The entry at heap offset `offset`: its holder and its end.
    fn entry(&self, offset: usize) -> Result<(&'a [u8], i64), Error> {
        let heap = self
            .raw
            .get(HEADER_LEN..HEADER_LEN + self.heap_len)
            .ok_or(Error::CorruptState)?;
        let len = *heap.get(offset).ok_or(Error::CorruptState)? as usize;
        let holder = heap
            .get(offset + 1..offset + 1 + len)
            .filter(|holder| !holder.is_empty())
            .ok_or(Error::CorruptState)?;
        let end = heap
            .get(offset + 1 + len..offset + ENTRY_OVERHEAD + len)
            .ok_or(Error::CorruptState)?;
        let mut word = [0u8; 8];
        word[..END_LEN].copy_from_slice(end);
        Ok((holder, i64::from_le_bytes(word)))
    }

    /// The holder and end of the `i`-th lease in the order of their ends.
    pub fn by_end(&self, i: usize) -> Result<(&'a [u8], i64), Error> {
        self.entry(self.slot(self.by_end_at(), i)?)
    }

    pub(super) fn by_holder(&self, i: usize) -> Result<(&'a [u8], i64), Error> {
        self.entry(self.slot(self.by_holder_at(), i)?)
    }

    /// How many leases end at or before `now_ms`: those are over, and the first of `by_end`.
    pub fn ended_by(&self, now_ms: i64) -> Result<usize, Error> {
        let (mut low, mut high) = (0, self.count);
        while low < high {
            let mid = low + (high - low) / 2;
            if self.by_end(mid)?.1 <= now_ms {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        Ok(low)
    }

    /// The index in `by_holder` where `holder` is or would go, and whether it is there.
    fn search_holder(&self, holder: &[u8]) -> Result<Result<usize, usize>, Error> {
        let (mut low, mut high) = (0, self.count);
        while low < high {
            let mid = low + (high - low) / 2;
            match self.by_holder(mid)?.0.cmp(holder) {
                Ordering::Less => low = mid + 1,
                Ordering::Greater => high = mid,
                Ordering::Equal => return Ok(Ok(mid)),
            }
        }
        Ok(Err(low))
    }

    /// The index in `by_end` where a lease ending at `end_ms` held by `holder` is or would go.
    fn search_end(&self, end_ms: i64, holder: &[u8]) -> Result<Result<usize, usize>, Error> {
        let (mut low, mut high) = (0, self.count);
        while low < high {
            let mid = low + (high - low) / 2;
            let (other, other_end) = self.by_end(mid)?;
            match (other_end, other).cmp(&(end_ms, holder)) {
                Ordering::Less => low = mid + 1,
                Ordering::Greater => high = mid,
                Ordering::Equal => return Ok(Ok(mid)),
            }
        }
        Ok(Err(low))
    }

    /// The holder's lease, live or not, if the set holds one.
    pub fn find(&self, holder: &[u8]) -> Result<Option<Found>, Error> {
        let Ok(by_holder) = self.search_holder(holder)? else {
            return Ok(None);
        };
        let end_ms = self.by_holder(by_holder)?.1;
        // Both indexes name the same entries: a holder found in one is in the other.
        let by_end = self
            .search_end(end_ms, holder)?
            .map_err(|_| Error::CorruptState)?;
        Ok(Some(Found {
            by_holder,
            by_end,
            end_ms,
        }))
    }
}

/// An empty set of leases, as a new key holds before its first lease is added.
pub fn empty() -> [u8; HEADER_LEN] {
    let mut header = [0u8; HEADER_LEN];
    header[0..3].copy_from_slice(MAGIC);
    header[3] = VERSION;
    header
}

/// The edits of a set of leases, made in place in its buffer. Each first reads the set as
/// it stands, so a buffer that does not hold one is refused before any byte changes.
pub struct Editor<'b, B: LogBuffer> {
    buffer: &'b mut B,
}

impl<'b, B: LogBuffer> Editor<'b, B> {
    /// Edits the set in `buffer`, which must hold one (an empty key's buffer is first given
    /// `empty()`).
    pub fn new(buffer: &'b mut B) -> Editor<'b, B> {
        Editor { buffer }
    }

    fn header(&mut self) -> Result<(usize, usize, usize), Error> {
        let raw = self.buffer.bytes_mut()?;
        let set = LeaseSet::parse(raw)?;
        Ok((set.count, set.heap_len, set.holes))
    }

    fn write_header(&mut self, count: usize, heap_len: usize, holes: usize) -> Result<(), Error> {
        let fields = [count, heap_len, holes].map(|field| u32::try_from(field).ok());
        let [Some(count), Some(heap_len), Some(holes)] = fields else {
            return Err(Error::LeaseSetTooLong);
        };
        let raw = self.buffer.bytes_mut()?;
        let header = raw.get_mut(..HEADER_LEN).ok_or(Error::Internal)?;
        header[4..8].copy_from_slice(&count.to_le_bytes());
        header[8..12].copy_from_slice(&heap_len.to_le_bytes());
        header[12..16].copy_from_slice(&holes.to_le_bytes());
        Ok(())
    }

    /// Adds `holder`'s lease, ending at `end_ms`; the set must not hold one for it.
    pub fn insert(&mut self, holder: &[u8], end_ms: i64) -> Result<(), Error> {
        if holder.is_empty() || holder.len() > MAX_HOLDER || !(0..=MAX_END_MS).contains(&end_ms) {
            return Err(Error::Internal);
        }
        let (count, heap_len, holes) = self.header()?;
        let (at_holder, at_end) = {
            let set = LeaseSet::parse(self.buffer.bytes_mut()?)?;
            let Err(at_holder) = set.search_holder(holder)? else {
                return Err(Error::Internal);
            };
            let at_end = set.search_end(end_ms, holder)?.unwrap_or_else(|at| at);
            (at_holder, at_end)
        };
        let entry_len = ENTRY_OVERHEAD + holder.len();
        fits(count + 1, heap_len + entry_len, holes)?;
        let offset = u32::try_from(heap_len).map_err(|_| Error::LeaseSetTooLong)?;
        let old_len = HEADER_LEN + heap_len + 2 * SLOT * count;
        let new_len = old_len + entry_len + 2 * SLOT;
        self.buffer.resize(new_len)?;
        let raw = self.buffer.bytes_mut()?;
        let by_holder = HEADER_LEN + heap_len;
        let by_end = by_holder + SLOT * count;
        let new_by_holder = by_holder + entry_len;
        let new_by_end = new_by_holder + SLOT * (count + 1);
        // From the end backwards, so that nothing is overwritten before it has moved.
        let end_split = by_end + SLOT * at_end;
        raw.copy_within(end_split..old_len, new_by_end + SLOT * (at_end + 1));
        raw.copy_within(by_end..end_split, new_by_end);
        let holder_split = by_holder + SLOT * at_holder;
        raw.copy_within(holder_split..by_end, new_by_holder + SLOT * (at_holder + 1));
        raw.copy_within(by_holder..holder_split, new_by_holder);
        let entry = raw
            .get_mut(by_holder..new_by_holder)
            .ok_or(Error::Internal)?;
        entry[0] = holder.len() as u8;
        entry[1..1 + holder.len()].copy_from_slice(holder);
        entry[1 + holder.len()..].copy_from_slice(&end_ms.to_le_bytes()[..END_LEN]);
        let slot = offset.to_le_bytes();
        let at = new_by_holder + SLOT * at_holder;
        raw.get_mut(at..at + SLOT)
            .ok_or(Error::Internal)?
            .copy_from_slice(&slot);
        let at = new_by_end + SLOT * at_end;
        raw.get_mut(at..at + SLOT)
            .ok_or(Error::Internal)?
            .copy_from_slice(&slot);
        self.write_header(count + 1, heap_len + entry_len, holes)
    }

    /// Moves the end of the lease `found` names to `end_ms`.
    pub fn renew(&mut self, holder: &[u8], found: Found, end_ms: i64) -> Result<(), Error> {
        if !(0..=MAX_END_MS).contains(&end_ms) {
            return Err(Error::Internal);
        }
        let (count, heap_len, _) = self.header()?;
        let (offset, at_end) = {
            let set = LeaseSet::parse(self.buffer.bytes_mut()?)?;
            let offset = set.slot(set.by_end_at(), found.by_end)?;
            if set.entry(offset)?.0 != holder {
                return Err(Error::Internal);
            }
            // Where it goes among the others, counted as if it had left its place.
            let at = set.search_end(end_ms, holder)?.unwrap_or_else(|at| at);
            (offset, if at > found.by_end { at - 1 } else { at })
        };
        let raw = self.buffer.bytes_mut()?;
        let end_at = HEADER_LEN + offset + 1 + holder.len();
        raw.get_mut(end_at..end_at + END_LEN)
            .ok_or(Error::Internal)?
            .copy_from_slice(&end_ms.to_le_bytes()[..END_LEN]);
        let by_end = HEADER_LEN + heap_len + SLOT * count;
        let from = by_end + SLOT * found.by_end;
        let to = by_end + SLOT * at_end;
        let slot = (offset as u32).to_le_bytes();
        if to > from {
            raw.copy_within(from + SLOT..to + SLOT, from);
        } else {
            raw.copy_within(to..from, to + SLOT);
        }
        raw.get_mut(to..to + SLOT)
            .ok_or(Error::Internal)?
            .copy_from_slice(&slot);
        Ok(())
    }

    /// Takes the lease `found` names out of the set.
    pub fn remove(&mut self, holder: &[u8], found: Found) -> Result<(), Error> {
        let (count, heap_len, holes) = self.header()?;
        {
            let set = LeaseSet::parse(self.buffer.bytes_mut()?)?;
            let offset = set.slot(set.by_holder_at(), found.by_holder)?;
            let same = set.slot(set.by_end_at(), found.by_end)? == offset
                && set.entry(offset)?.0 == holder;
            if !same {
                return Err(Error::Internal);
            }
        }
        let freed = ENTRY_OVERHEAD + holder.len();
        self.cut(
            count,
            heap_len,
            holes,
            freed,
            &[found.by_holder],
            &[found.by_end],
        )?;
        self.pack_if_sparse()
    }

    /// Drops every lease that ended at or before `now_ms`. Returns how many it dropped.
    pub fn drop_ended(&mut self, now_ms: i64) -> Result<usize, Error> {
        let (count, heap_len, holes) = self.header()?;
        let (by_holder, freed) = {
            let set = LeaseSet::parse(self.buffer.bytes_mut()?)?;
            let ended = set.ended_by(now_ms)?;
            if ended == 0 {
                return Ok(0);
            }
            let mut offsets = Vec::with_capacity(ended);
            let mut freed = 0usize;
            for i in 0..ended {
                let offset = set.slot(set.by_end_at(), i)?;
                freed += ENTRY_OVERHEAD + set.entry(offset)?.0.len();
                offsets.push(offset);
            }
            offsets.sort_unstable();
            if offsets.windows(2).any(|pair| pair[0] == pair[1]) {
                return Err(Error::CorruptState);
            }
            // One pass over the holder index, reading offsets only.
            let mut by_holder = Vec::with_capacity(ended);
            for i in 0..count {
                if offsets
                    .binary_search(&set.slot(set.by_holder_at(), i)?)
                    .is_ok()
                {
                    by_holder.push(i);
                }
            }
            if by_holder.len() != ended {
                return Err(Error::CorruptState);
            }
            (by_holder, freed)
        };
        let ended = by_holder.len();
        let by_end: Vec<usize> = (0..ended).collect();
        self.cut(count, heap_len, holes, freed, &by_holder, &by_end)?;
        self.pack_if_sparse()?;
        Ok(ended)
    }

    /// Takes the slots at the given indexes (strictly ascending, as many in each) out of both
    /// indexes, whose entries free `freed` bytes. The value keeps its length: the indexes move
    /// to its end, and the bytes they free join the entries as holes, so that a write that
    /// removes and one that adds do not shrink and grow the string in turn (the server would
    /// reallocate it each time).
    fn cut(
        &mut self,
        count: usize,
        heap_len: usize,
        holes: usize,
        freed: usize,
        by_holder: &[usize],
        by_end: &[usize],
    ) -> Result<(), Error> {
        let cut = by_holder.len();
        let ascending = |indexes: &[usize]| {
            indexes.windows(2).all(|pair| pair[0] < pair[1])
                && indexes.last().is_none_or(|&last| last < count)
        };
        if by_end.len() != cut || !ascending(by_holder) || !ascending(by_end) || cut == 0 {
            return Err(Error::Internal);
        }
        let new_heap_len = heap_len + 2 * SLOT * cut;
        let new_holes = holes
            .checked_add(freed)
            .map(|holes| holes + 2 * SLOT * cut)
            .filter(|&holes| holes <= new_heap_len)
            .ok_or(Error::CorruptState)?;
        fits(count, new_heap_len, new_holes)?;
        if new_holes * 2 > new_heap_len {
            // The entries will be packed next: what could refuse that is checked now, before
            // the first byte moves.
            let set = LeaseSet::parse(self.buffer.bytes_mut()?)?;
            let mut kept = Vec::with_capacity(count - cut);
            let mut skip = by_holder.iter().peekable();
            for i in 0..count {
                if skip.next_if(|&&index| index == i).is_none() {
                    kept.push(set.slot(set.by_holder_at(), i)?);
                }
            }
            entries_in_use(&set, kept, new_heap_len - new_holes)?;
        }
        let raw = self.buffer.bytes_mut()?;
        let holder_at = HEADER_LEN + heap_len;
        let end_at = holder_at + SLOT * count;
        let total = end_at + SLOT * count;
        if raw.len() != total {
            return Err(Error::Internal);
        }
        // Each index's kept runs, moved right from the last one back: by_end to end at the
        // value's end, then by_holder to end where by_end now starts.
        let mut to = total;
        for (at, skip) in [(end_at, by_end), (holder_at, by_holder)] {
            let mut run_end = at + SLOT * count;
            for &index in skip.iter().rev() {
                let run_start = at + SLOT * (index + 1);
                let len = run_end - run_start;
                raw.copy_within(run_start..run_end, to - len);
                to -= len;
                run_end = at + SLOT * index;
            }
            raw.copy_within(at..run_end, to - (run_end - at));
            to -= run_end - at;
        }
        if to != HEADER_LEN + new_heap_len {
            return Err(Error::Internal);
        }
        self.write_header(count - cut, new_heap_len, new_holes)
    }

    /// Packs the entries again once holes outweigh the bytes in use.
    fn pack_if_sparse(&mut self) -> Result<(), Error> {
        let (count, heap_len, holes) = self.header()?;
        if holes * 2 <= heap_len {
            return Ok(());
        }
        // The entries in use, in heap order, where each moves, and every slot's new offset.
        let (moved, slots, packed) = {
            let set = LeaseSet::parse(self.buffer.bytes_mut()?)?;
            let offsets: Vec<usize> = (0..count)
                .map(|i| set.slot(set.by_holder_at(), i))
                .collect::<Result<_, _>>()?;
            let mut moved = Vec::with_capacity(count);
            let mut packed = 0;
            for (offset, len) in entries_in_use(&set, offsets, heap_len - holes)? {
                moved.push((offset, packed, len));
                packed += len;
            }
            let new_of = |offset: usize| -> Result<usize, Error> {
                let i = moved
                    .binary_search_by_key(&offset, |&(old, _, _)| old)
                    .map_err(|_| Error::CorruptState)?;
                Ok(moved.get(i).map_or(0, |&(_, new, _)| new))
            };
            let mut slots = Vec::with_capacity(2 * count);
            for index_at in [set.by_holder_at(), set.by_end_at()] {
                for i in 0..count {
                    slots.push(new_of(set.slot(index_at, i)?)?);
                }
            }
            (moved, slots, packed)
        };
        let raw = self.buffer.bytes_mut()?;
        // Entries move only towards the start, in heap order: each lands at or before itself.
        for &(old, new, len) in &moved {
            raw.copy_within(HEADER_LEN + old..HEADER_LEN + old + len, HEADER_LEN + new);
        }
        let index_at = HEADER_LEN + packed;
        for (i, slot) in slots.iter().enumerate() {
            let at = index_at + SLOT * i;
            let slot = u32::try_from(*slot).map_err(|_| Error::Internal)?;
            raw.get_mut(at..at + SLOT)
                .ok_or(Error::Internal)?
                .copy_from_slice(&slot.to_le_bytes());
        }
        self.buffer.resize(index_at + SLOT * 2 * count)?;
        self.write_header(count, packed, 0)
    }
}

/// The entries at `offsets`, in heap order with their lengths, once checked to be packable:
/// none overlaps another, and together they are the `in_use` bytes the header counts.
fn entries_in_use(
    set: &LeaseSet,
    mut offsets: Vec<usize>,
    in_use: usize,
) -> Result<Vec<(usize, usize)>, Error> {
    offsets.sort_unstable();
    let mut entries = Vec::with_capacity(offsets.len());
    let (mut total, mut free_from) = (0, 0);
    for offset in offsets {
        if offset < free_from {
            return Err(Error::CorruptState);
        }
        let len = ENTRY_OVERHEAD + set.entry(offset)?.0.len();
        free_from = offset + len;
        total += len;
        entries.push((offset, len));
    }
    if total == in_use {
        Ok(entries)
    } else {
        Err(Error::CorruptState)
    }
}

/// Whether a header can hold these fields.
/// Whether a set of these sizes is a string the server can hold.
fn fits(count: usize, heap_len: usize, holes: usize) -> Result<(), Error> {
    let total = HEADER_LEN
        .checked_add(heap_len)
        .and_then(|len| len.checked_add(count.checked_mul(2 * SLOT)?));
    if total.is_some_and(|total| total <= MAX_VALUE_LEN) && holes <= heap_len {
        Ok(())
    } else {
        Err(Error::LeaseSetTooLong)
    }
}

fn le_u32(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    if let Some(field) = bytes.get(at..at + 4) {
        word.copy_from_slice(field);
    }
    u32::from_le_bytes(word)
}

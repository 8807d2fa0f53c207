//! The edits a write makes in place in a set of leases (its bytes are described in `set.rs`).
//!
//! The value's length changes seldom, and then to exactly what it must hold plus a small
//! tail: a new lease takes its bytes from the tail, and only when the tail is short is the
//! value made again, with a tail of a thirty-second of it. The server would grow a string by
//! doubling it, a set's memory up to twice its bytes; made again, it costs its bytes and the
//! allocator's rounding, and the copies cost each byte written O(1) over time.

use super::set::{
    empty, Found, LeaseSet, Sizes, END_LEN, ENTRY_OVERHEAD, HEADER_LEN, MAX_END_MS, MAX_HEAP,
    MAX_HOLDER, SLOT,
};
use crate::bytes::{ByteBuffer, MAX_VALUE_LEN};
use crate::error::Error;

/// The edits of a set of leases, made in place in its buffer. Each first reads the set as
/// it stands, so a buffer that does not hold one is refused before any byte changes.
pub struct Editor<'b, B: ByteBuffer> {
    buffer: &'b mut B,
}

impl<'b, B: ByteBuffer> Editor<'b, B> {
    /// Edits the set in `buffer`, which must hold one, or be empty (a new key's: `insert`
    /// makes its set).
    pub fn new(buffer: &'b mut B) -> Editor<'b, B> {
        Editor { buffer }
    }

    fn sizes(&mut self) -> Result<Sizes, Error> {
        Ok(LeaseSet::parse(self.buffer.bytes_mut()?)?.sizes)
    }

    fn write_sizes(&mut self, sizes: Sizes) -> Result<(), Error> {
        let fields = [sizes.count, sizes.heap_len, sizes.holes, sizes.tail]
            .map(|field| u32::try_from(field).ok());
        let [Some(count), Some(heap_len), Some(holes), Some(tail)] = fields else {
            return Err(Error::LeaseSetTooLong);
        };
        let raw = self.buffer.bytes_mut()?;
        let header = raw.get_mut(..HEADER_LEN).ok_or(Error::Internal)?;
        header[4..8].copy_from_slice(&count.to_le_bytes());
        header[8..12].copy_from_slice(&heap_len.to_le_bytes());
        header[12..16].copy_from_slice(&holes.to_le_bytes());
        header[16..20].copy_from_slice(&tail.to_le_bytes());
        Ok(())
    }

    /// Adds `holder`'s lease, ending at `end_ms`; the set must not hold one for it. The entry
    /// and its two slots take their bytes from the tail; when it is too short, the value is
    /// made again with a new tail.
    pub fn insert(&mut self, holder: &[u8], end_ms: i64) -> Result<(), Error> {
        if holder.is_empty() || holder.len() > MAX_HOLDER || !(0..=MAX_END_MS).contains(&end_ms) {
            return Err(Error::Internal);
        }
        // An empty buffer is a new key's: an empty set, made at the size of its first lease.
        let new_key = self.buffer.bytes_mut()?.is_empty();
        let (at_holder, at_end) = if new_key {
            (0, 0)
        } else {
            let set = LeaseSet::parse(self.buffer.bytes_mut()?)?;
            let Err(at_holder) = set.search_holder(holder)? else {
                return Err(Error::Internal);
            };
            let at_end = set.search_end(end_ms, holder)?.unwrap_or_else(|at| at);
            (at_holder, at_end)
        };
        let entry_len = ENTRY_OVERHEAD + holder.len();
        let needs = entry_len + 2 * SLOT;
        let mut old = if new_key {
            Sizes {
                count: 0,
                heap_len: 0,
                holes: 0,
                tail: 0,
            }
        } else {
            self.sizes()?
        };
        // Short of tail, holes worth an eighth of the entries are packed into it rather than
        // the value grown: so a set under churn stays within about that of its bytes. The
        // indexes keep their order, and the places found above.
        if old.tail < needs && old.gaps() >= needs && old.gaps() * 8 >= old.in_use() {
            self.pack(old)?;
            old = self.sizes()?;
        }
        // The entry goes where the tail starts.
        let offset = old.heap_len - old.tail;
        if offset + entry_len > MAX_HEAP {
            return Err(Error::LeaseSetTooLong);
        }
        let grows = old.tail < needs;
        let new_len = if grows {
            // Within what the value, and its entries, may hold.
            let longest = MAX_VALUE_LEN.min(HEADER_LEN + MAX_HEAP + 2 * SLOT * (old.count + 1));
            with_tail(old.len() - old.tail + needs, longest)?
        } else {
            old.len()
        };
        let heap_len = new_len - HEADER_LEN - 2 * SLOT * (old.count + 1);
        let new = Sizes {
            count: old.count + 1,
            heap_len,
            holes: old.gaps() + (heap_len - offset - entry_len),
            tail: heap_len - offset - entry_len,
        };
        let (holder_at, end_at) = (old.by_holder_at(), old.by_end_at());
        // Each index in two runs, around its new slot, each run to its new place.
        let runs = [
            (holder_at, holder_at + SLOT * at_holder, new.by_holder_at()),
            (
                holder_at + SLOT * at_holder,
                end_at,
                new.by_holder_at() + SLOT * (at_holder + 1),
            ),
            (end_at, end_at + SLOT * at_end, new.by_end_at()),
            (
                end_at + SLOT * at_end,
                old.len(),
                new.by_end_at() + SLOT * (at_end + 1),
            ),
        ];
        if grows {
            // Made again: the indexes are copied out first, as they may land where they were.
            let indexes = match new_key {
                true => Vec::new(),
                false => self
                    .buffer
                    .bytes_mut()?
                    .get(holder_at..old.len())
                    .ok_or(Error::Internal)?
                    .to_vec(),
            };
            self.buffer.reallocate(new_len)?;
            let raw = self.buffer.bytes_mut()?;
            if new_key {
                raw.get_mut(..HEADER_LEN)
                    .ok_or(Error::Internal)?
                    .copy_from_slice(&empty());
            }
            for (from, to, at) in runs {
                raw.get_mut(at..at + (to - from))
                    .ok_or(Error::Internal)?
                    .copy_from_slice(
                        indexes
                            .get(from - holder_at..to - holder_at)
                            .ok_or(Error::Internal)?,
                    );
            }
        } else {
            // The indexes move towards the start (the first run by two slots, the middle ones
            // by one), taken in order, so that none lands on bytes not yet moved.
            let raw = self.buffer.bytes_mut()?;
            for (from, to, at) in runs {
                move_down(raw, from..to, at);
            }
        }
        let raw = self.buffer.bytes_mut()?;
        let entry = raw
            .get_mut(HEADER_LEN + offset..HEADER_LEN + offset + entry_len)
            .ok_or(Error::Internal)?;
        entry[0] = holder.len() as u8;
        entry[1..1 + holder.len()].copy_from_slice(holder);
        entry[1 + holder.len()..].copy_from_slice(&end_ms.to_le_bytes()[..END_LEN]);
        let slot = slot_bytes(offset)?;
        for at in [
            new.by_holder_at() + SLOT * at_holder,
            new.by_end_at() + SLOT * at_end,
        ] {
            raw.get_mut(at..at + SLOT)
                .ok_or(Error::Internal)?
                .copy_from_slice(&slot);
        }
        self.write_sizes(new)
    }

    /// Moves the end of the lease `found` names to `end_ms`.
    pub fn renew(&mut self, holder: &[u8], found: Found, end_ms: i64) -> Result<(), Error> {
        if !(0..=MAX_END_MS).contains(&end_ms) {
            return Err(Error::Internal);
        }
        let sizes = self.sizes()?;
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
        let from = sizes.by_end_at() + SLOT * found.by_end;
        let to = sizes.by_end_at() + SLOT * at_end;
        let slot = slot_bytes(offset)?;
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
        let offset = {
            let set = LeaseSet::parse(self.buffer.bytes_mut()?)?;
            let offset = set.slot(set.by_holder_at(), found.by_holder)?;
            let same = set.slot(set.by_end_at(), found.by_end)? == offset
                && set.entry(offset)?.0 == holder;
            if !same {
                return Err(Error::Internal);
            }
            offset
        };
        let freed = [(offset, ENTRY_OVERHEAD + holder.len())];
        self.cut(&freed, &[found.by_holder], &[found.by_end])?;
        self.tidy()
    }

    /// Drops every lease that ended at or before `now_ms`. Returns how many it dropped.
    pub fn drop_ended(&mut self, now_ms: i64) -> Result<usize, Error> {
        let (freed, by_holder) = {
            let set = LeaseSet::parse(self.buffer.bytes_mut()?)?;
            let ended = set.ended_by(now_ms)?;
            if ended == 0 {
                return Ok(0);
            }
            let mut freed = Vec::with_capacity(ended);
            for i in 0..ended {
                let offset = set.slot(set.by_end_at(), i)?;
                freed.push((offset, ENTRY_OVERHEAD + set.entry(offset)?.0.len()));
            }
            freed.sort_unstable();
            if freed.windows(2).any(|pair| pair[0].0 == pair[1].0) {
                return Err(Error::CorruptState);
            }
            // One pass over the holder index, reading offsets only.
            let mut by_holder = Vec::with_capacity(ended);
            for i in 0..set.count() {
                let offset = set.slot(set.by_holder_at(), i)?;
                if freed.binary_search_by_key(&offset, |&(at, _)| at).is_ok() {
                    by_holder.push(i);
                }
            }
            if by_holder.len() != ended {
                return Err(Error::CorruptState);
            }
            (freed, by_holder)
        };
        let ended = by_holder.len();
        let by_end: Vec<usize> = (0..ended).collect();
        self.cut(&freed, &by_holder, &by_end)?;
        self.tidy()?;
        Ok(ended)
    }

    /// Takes the slots at the given indexes (strictly ascending, as many in each) out of both
    /// indexes, whose entries, at the `freed` offsets and lengths (ascending), become holes.
    /// The value keeps its length: the indexes move to its end, and the bytes they free join
    /// the tail, as do freed entries that end where it starts, so that a write that removes
    /// and one that adds do not shrink and grow the string in turn.
    fn cut(
        &mut self,
        freed: &[(usize, usize)],
        by_holder: &[usize],
        by_end: &[usize],
    ) -> Result<(), Error> {
        let old = self.sizes()?;
        let cut = by_holder.len();
        let ascending = |indexes: &[usize]| {
            indexes.windows(2).all(|pair| pair[0] < pair[1])
                && indexes.last().is_none_or(|&last| last < old.count)
        };
        if by_end.len() != cut
            || freed.len() != cut
            || !ascending(by_holder)
            || !ascending(by_end)
            || cut == 0
        {
            return Err(Error::Internal);
        }
        // The tail takes in the freed entries that end where it starts, the last first.
        let mut tail_from = old.heap_len - old.tail;
        for &(offset, len) in freed.iter().rev() {
            if offset.checked_add(len) == Some(tail_from) {
                tail_from = offset;
            }
        }
        let freed_len: usize = freed.iter().map(|&(_, len)| len).sum();
        let heap_len = old.heap_len + 2 * SLOT * cut;
        let new = Sizes {
            count: old.count - cut,
            heap_len,
            holes: old
                .holes
                .checked_add(freed_len)
                .map(|holes| holes + 2 * SLOT * cut)
                .filter(|&holes| holes <= heap_len)
                .ok_or(Error::CorruptState)?,
            tail: heap_len - tail_from,
        };
        if new.tail > new.holes || new.count * (ENTRY_OVERHEAD + 1) > new.in_use() {
            return Err(Error::CorruptState);
        }
        if new.gaps() > new.in_use() {
            // The entries will be packed next: what could refuse that is checked now, before
            // the first byte moves.
            // Both indexes must name the same entries, as packing maps every slot of each.
            let set = LeaseSet::parse(self.buffer.bytes_mut()?)?;
            let mut kept = [Vec::with_capacity(new.count), Vec::with_capacity(new.count)];
            for ((index_at, cut_out), kept) in
                [(set.by_holder_at(), by_holder), (set.by_end_at(), by_end)]
                    .into_iter()
                    .zip(kept.iter_mut())
            {
                let mut skip = cut_out.iter().peekable();
                for i in 0..old.count {
                    if skip.next_if(|&&index| index == i).is_none() {
                        kept.push(set.slot(index_at, i)?);
                    }
                }
                kept.sort_unstable();
            }
            let [by_holder_kept, by_end_kept] = kept;
            if by_holder_kept != by_end_kept {
                return Err(Error::CorruptState);
            }
            entries_in_use(&set, by_holder_kept, new.in_use())?;
        }
        let raw = self.buffer.bytes_mut()?;
        let total = old.len();
        if raw.len() != total {
            return Err(Error::Internal);
        }
        // Each index's kept runs, moved right from the last one back: by_end to end at the
        // value's end, then by_holder to end where by_end now starts.
        let mut to = total;
        for (at, skip) in [(old.by_end_at(), by_end), (old.by_holder_at(), by_holder)] {
            let mut run_end = at + SLOT * old.count;
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
        if to != new.by_holder_at() {
            return Err(Error::Internal);
        }
        self.write_sizes(new)
    }

    /// Packs the entries again once the holes between them outweigh the bytes in use, and
    /// makes the value again, shorter, once its tail is more than twice what a new one would
    /// be and what an insert packs into it (an eighth of the entries), so that a tail just
    /// packed is not cut off by the next release.
    fn tidy(&mut self) -> Result<(), Error> {
        let sizes = self.sizes()?;
        if sizes.gaps() > sizes.in_use() {
            self.pack(sizes)?;
        }
        let sizes = self.sizes()?;
        let used = sizes.len() - sizes.tail;
        let shorter = with_tail(used, sizes.len())?;
        if sizes.tail > 2 * (shorter - used) + sizes.in_use() / 8 {
            // The indexes move down to end the shorter value, and the rest is cut off.
            let heap_len = shorter - HEADER_LEN - 2 * SLOT * sizes.count;
            let raw = self.buffer.bytes_mut()?;
            raw.copy_within(sizes.by_holder_at()..sizes.len(), HEADER_LEN + heap_len);
            self.buffer.reallocate(shorter)?;
            let tail = sizes.tail - (sizes.heap_len - heap_len);
            self.write_sizes(Sizes {
                heap_len,
                holes: sizes.gaps() + tail,
                tail,
                ..sizes
            })?;
        }
        Ok(())
    }

    /// Moves the entries in use to the start of the heap, in heap order: every free byte
    /// joins the tail.
    fn pack(&mut self, sizes: Sizes) -> Result<(), Error> {
        let count = sizes.count;
        // The entries in use, in heap order, where each moves, and every slot's new offset.
        let (moved, slots, packed) = {
            let set = LeaseSet::parse(self.buffer.bytes_mut()?)?;
            let offsets: Vec<usize> = (0..count)
                .map(|i| set.slot(set.by_holder_at(), i))
                .collect::<Result<_, _>>()?;
            let mut moved = Vec::with_capacity(count);
            let mut packed = 0;
            for (offset, len) in entries_in_use(&set, offsets, sizes.in_use())? {
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
        for (i, slot) in slots.iter().enumerate() {
            let at = sizes.by_holder_at() + SLOT * i;
            raw.get_mut(at..at + SLOT)
                .ok_or(Error::Internal)?
                .copy_from_slice(&slot_bytes(*slot)?);
        }
        let free = sizes.heap_len - packed;
        self.write_sizes(Sizes {
            holes: free,
            tail: free,
            ..sizes
        })
    }
}

/// Moves `range` of `raw` down to start at `at` (at or before its start), in blocks of 2 KB
/// from the first: the C library moves a block that size with vector loads and stores,
/// where a longer move that overlaps its destination by a few bytes gets a string
/// instruction, which then goes a byte at a time.
fn move_down(raw: &mut [u8], range: std::ops::Range<usize>, at: usize) {
    const BLOCK: usize = 2048;
    let mut from = range.start;
    let mut to = at;
    while from < range.end {
        let len = BLOCK.min(range.end - from);
        raw.copy_within(from..from + len, to);
        from += len;
        to += len;
    }
}

/// The length to make a value of `used` bytes: a tail of a thirty-second more, at least
/// 64 bytes, and at most `longest`.
fn with_tail(used: usize, longest: usize) -> Result<usize, Error> {
    if used > longest {
        return Err(Error::LeaseSetTooLong);
    }
    Ok(used.saturating_add((used / 32).max(64)).min(longest))
}

/// An offset as an index stores it.
fn slot_bytes(offset: usize) -> Result<[u8; SLOT], Error> {
    if offset >= MAX_HEAP {
        return Err(Error::LeaseSetTooLong);
    }
    let mut slot = [0u8; SLOT];
    slot.copy_from_slice(&(offset as u32).to_le_bytes()[..SLOT]);
    Ok(slot)
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

//! The bytes of CL.LEASE's set of leases, and the searches a call makes in them; the edits a
//! write makes in place are in `edit.rs`.
//!
//! # Encoding
//!
//! One string value: a 20-byte header, the entries, then two indexes of the entries. Integers
//! are little-endian.
//!
//! | bytes  | header field                                                      |
//! |--------|-------------------------------------------------------------------|
//! | 0..3   | magic `CLL`                                                       |
//! | 3      | format version, 1                                                 |
//! | 4..8   | `count`: how many leases the set holds, live or not yet dropped   |
//! | 8..12  | `heap_len`: the bytes of the entries, holes and tail included     |
//! | 12..16 | `holes`: the bytes of the entries no lease uses, the tail's too   |
//! | 16..20 | `tail`: the unused bytes that end the entries, where new ones go  |
//!
//! Then `heap_len` bytes of entries, each `[len: u8][holder: len bytes][end_ms: u48]`, at the
//! byte offsets the indexes give (from the start of the entries); then `by_holder`, `count`
//! offsets (u24) in the order of the holders' bytes; then `by_end`, `count` offsets in the
//! order of the leases' ends (ties by holder). The value is exactly
//! `20 + heap_len + 6 × count` bytes long. The offsets reach 16 MB of entries: some 600,000
//! leases of 20-byte holders on one key.
//!
//! A lease costs its holder's length plus 13 bytes. Finding a holder, and finding the leases
//! that end after an instant, are binary searches; an edit moves at most the two indexes
//! (6 bytes a lease). A released or expired lease leaves a hole among the entries (or joins the
//! tail, when it was the last); once the holes outweigh the entries in use, the entries are
//! packed again, which costs each byte written O(1) over time.
//!
//! A value that is not a set of leases (another magic, version or length) is refused. Within a
//! set whose header is sound, every read is bounds-checked: damaged bytes can give a wrong
//! answer or an error, never a panic.

use std::cmp::Ordering;

use crate::bytes::{le_u32, MAX_VALUE_LEN};
use crate::error::Error;

pub const HEADER_LEN: usize = 20;
const MAGIC: &[u8; 3] = b"CLL";
const VERSION: u8 = 1;
/// The bytes of an entry besides its holder: its length, and its end.
pub(super) const ENTRY_OVERHEAD: usize = 1 + END_LEN;
pub(super) const END_LEN: usize = 6;
pub(super) const SLOT: usize = 3;
/// The entries an offset can reach.
pub(super) const MAX_HEAP: usize = 1 << (8 * SLOT);
/// The longest holder name, as the commands take it: its length fits the entry's one byte.
pub use crate::args::MAX_HOLDER;
const _: () = assert!(MAX_HOLDER <= u8::MAX as usize);
/// The latest end an entry can hold: 2^48 ms, in the year 10889.
pub const MAX_END_MS: i64 = (1 << 48) - 1;

/// A set of leases as stored, read in place.
#[derive(Debug, Clone, Copy)]
pub struct LeaseSet<'a> {
    raw: &'a [u8],
    pub(super) sizes: Sizes,
}

/// The header's sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sizes {
    pub(super) count: usize,
    pub(super) heap_len: usize,
    pub(super) holes: usize,
    pub(super) tail: usize,
}

impl Sizes {
    /// The value's length.
    pub(super) fn len(&self) -> usize {
        HEADER_LEN + self.heap_len + 2 * SLOT * self.count
    }

    /// Where each index starts.
    pub(super) fn by_holder_at(&self) -> usize {
        HEADER_LEN + self.heap_len
    }

    pub(super) fn by_end_at(&self) -> usize {
        self.by_holder_at() + SLOT * self.count
    }

    /// The holes between entries, the tail left out.
    pub(super) fn gaps(&self) -> usize {
        self.holes - self.tail
    }

    /// The bytes the entries in use take.
    pub(super) fn in_use(&self) -> usize {
        self.heap_len - self.holes
    }
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
        let sizes = Sizes {
            count: le_u32(raw, 4) as usize,
            heap_len: le_u32(raw, 8) as usize,
            holes: le_u32(raw, 12) as usize,
            tail: le_u32(raw, 16) as usize,
        };
        let expected = sizes
            .count
            .checked_mul(2 * SLOT)
            .and_then(|indexes| indexes.checked_add(sizes.heap_len))
            .and_then(|body| body.checked_add(HEADER_LEN));
        // Every entry takes at least its overhead and one byte of holder.
        let sound = expected == Some(raw.len())
            && sizes.tail <= sizes.holes
            && sizes.holes <= sizes.heap_len
            && sizes.count.checked_mul(ENTRY_OVERHEAD + 1) <= Some(sizes.in_use());
        if !sound {
            return Err(Error::CorruptState);
        }
        Ok(LeaseSet { raw, sizes })
    }

    /// How many leases the set holds, live or not yet dropped.
    pub fn count(&self) -> usize {
        self.sizes.count
    }

    /// Whether a lease for `holder` can be added without the value growing past the longest
    /// string the server holds (leases that ended are not counted off: a set that large is
    /// refused a little early, never written past the limit).
    pub fn has_room_for(&self, holder: &[u8]) -> bool {
        let entry_len = ENTRY_OVERHEAD + holder.len();
        self.sizes.len() - self.sizes.tail + entry_len + 2 * SLOT <= MAX_VALUE_LEN
            && self.sizes.heap_len - self.sizes.tail + entry_len <= MAX_HEAP
    }

    pub(super) fn by_holder_at(&self) -> usize {
        self.sizes.by_holder_at()
    }

    pub(super) fn by_end_at(&self) -> usize {
        self.sizes.by_end_at()
    }

    pub(super) fn slot(&self, index_at: usize, i: usize) -> Result<usize, Error> {
        if i >= self.sizes.count {
            return Err(Error::Internal);
        }
        let at = index_at + i * SLOT;
        let bytes = self.raw.get(at..at + SLOT).ok_or(Error::CorruptState)?;
        let mut word = [0u8; 4];
        word[..SLOT].copy_from_slice(bytes);
        Ok(u32::from_le_bytes(word) as usize)
    }

    /// The entry at heap offset `offset`: its holder and its end.
    pub(super) fn entry(&self, offset: usize) -> Result<(&'a [u8], i64), Error> {
        let heap = self
            .raw
            .get(HEADER_LEN..HEADER_LEN + self.sizes.heap_len)
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
        // Mostly none has: one look at the first.
        if self.sizes.count == 0 || self.by_end(0)?.1 > now_ms {
            return Ok(0);
        }
        let (mut low, mut high) = (1, self.sizes.count);
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
    pub(super) fn search_holder(&self, holder: &[u8]) -> Result<Result<usize, usize>, Error> {
        let (mut low, mut high) = (0, self.sizes.count);
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
    pub(super) fn search_end(
        &self,
        end_ms: i64,
        holder: &[u8],
    ) -> Result<Result<usize, usize>, Error> {
        // A new or renewed lease mostly ends last: one look at the last.
        if let Some(last) = self.sizes.count.checked_sub(1) {
            let (other, other_end) = self.by_end(last)?;
            if (other_end, other) < (end_ms, holder) {
                return Ok(Err(self.sizes.count));
            }
        }
        let (mut low, mut high) = (0, self.sizes.count);
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

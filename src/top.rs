//! Who is being limited: the keys denied most over the current minute and the one before it,
//! in memory bounded whatever the traffic. Pure: the time comes in, and no server type goes
//! in or out.
//!
//! Each minute keeps a space-saving summary (Metwally, Agrawal and El Abbadi, 2005) of at most
//! `k` entries. A key the summary holds counts its denials; a key it does not hold takes, once
//! the summary is full, the place of the entry counted least, and starts from that count,
//! which it keeps as its error: the most its count can exceed the truth. Every count is at
//! least the truth, and a key the summary does not hold was denied no more than its least
//! count, which is at most the minute's denials over `k`.
//!
//! A key's figures over both minutes add each minute's: its entry's count and error, or where
//! a minute does not hold it, that minute's least count to both, since it may have been
//! denied that often there unseen. So every figure is at least the truth and at most `total /
//! k` over it, and no `k` keys can each have more than `total / k`: a key denied more than
//! that is always among the `k` listed first (docs/operations.md, "Who is being limited").

use std::hash::{BuildHasher, RandomState};

use hashbrown::HashTable;

/// The bytes of a key a summary keeps: longer keys that share them share an entry.
pub const KEY_BYTES: usize = 128;

/// The span of one summary.
pub const MINUTE_MS: i64 = 60_000;

/// The most entries a minute keeps: their places fit 16 bits.
pub const MAX_ENTRIES: usize = 1 << 16;

/// One key's figures in a summary, beside its bytes (kept apart, so that each array is a
/// size the allocator serves without rounding up: 128 bytes a key, 12 an entry). A minute's
/// count of one key's denials fits 32 bits (4 billion calls a minute on one node is far past
/// what a server answers), and saturates there.
#[derive(Debug, Clone, Copy)]
struct Entry {
    count: u32,
    /// The count it started from, inherited from the entry it replaced.
    error: u32,
    /// Where it is in the heap.
    place: u16,
    /// How many of its key's bytes are the key.
    len: u8,
}

/// One minute's space-saving summary: the keys and their entries, a min-heap of them by
/// count, and an index by key.
#[derive(Debug, Default)]
struct Summary {
    keys: Vec<[u8; KEY_BYTES]>,
    entries: Vec<Entry>,
    /// Indices into `entries`, the least counted first.
    heap: Vec<u16>,
    index: HashTable<u16>,
}

/// A key as a summary keeps it: its first `KEY_BYTES` bytes.
fn kept(key: &[u8]) -> &[u8] {
    key.get(..KEY_BYTES).unwrap_or(key)
}

/// The key of entry `at`.
fn key_at<'a>(keys: &'a [[u8; KEY_BYTES]], entries: &[Entry], at: usize) -> &'a [u8] {
    match (keys.get(at), entries.get(at)) {
        (Some(key), Some(entry)) => key.get(..usize::from(entry.len)).unwrap_or_default(),
        _ => &[],
    }
}

impl Summary {
    fn with_capacity(k: usize) -> Summary {
        Summary {
            keys: Vec::with_capacity(k),
            entries: Vec::with_capacity(k),
            heap: Vec::with_capacity(k),
            index: HashTable::with_capacity(k),
        }
    }

    fn clear(&mut self) {
        self.keys.clear();
        self.entries.clear();
        self.heap.clear();
        self.index.clear();
    }

    fn find(&self, key: &[u8], hasher: &RandomState) -> Option<Entry> {
        let (keys, entries) = (&self.keys, &self.entries);
        let at = self.index.find(hasher.hash_one(key), |&at| {
            key_at(keys, entries, usize::from(at)) == key
        })?;
        entries.get(usize::from(*at)).copied()
    }

    /// Every key the summary holds.
    fn held(&self) -> impl Iterator<Item = &[u8]> {
        (0..self.entries.len()).map(|at| key_at(&self.keys, &self.entries, at))
    }

    /// The least count, when the summary is full: what a key it does not hold may have had.
    fn least(&self, k: usize) -> u32 {
        if self.entries.len() < k {
            return 0;
        }
        self.heap
            .first()
            .and_then(|&at| self.entries.get(usize::from(at)))
            .map_or(0, |entry| entry.count)
    }

    /// Counts one denial of `key` (already cut to `KEY_BYTES`), in a summary of `k` entries
    /// at most.
    fn record(&mut self, key: &[u8], hasher: &RandomState, k: usize) {
        let hash = hasher.hash_one(key);
        let Summary {
            keys,
            entries,
            heap,
            index,
        } = self;
        let same = |at: &u16| key_at(keys, entries, usize::from(*at)) == key;
        if let Some(&at) = index.find(hash, same) {
            if let Some(entry) = entries.get_mut(usize::from(at)) {
                entry.count = entry.count.saturating_add(1);
                let place = usize::from(entry.place);
                sift_down(heap, entries, place);
            }
            return;
        }
        let mut bytes = [0; KEY_BYTES];
        if let Some(slot) = bytes.get_mut(..key.len()) {
            slot.copy_from_slice(key);
        }
        let len = key.len().min(KEY_BYTES) as u8;
        let rehash = |keys: &Vec<[u8; KEY_BYTES]>, entries: &Vec<Entry>, at: &u16| {
            hasher.hash_one(key_at(keys, entries, usize::from(*at)))
        };
        if entries.len() < k.min(MAX_ENTRIES) {
            let Ok(at) = u16::try_from(entries.len()) else {
                return;
            };
            let Ok(place) = u16::try_from(heap.len()) else {
                return;
            };
            keys.push(bytes);
            entries.push(Entry {
                count: 1,
                error: 0,
                place,
                len,
            });
            heap.push(at);
            let last = heap.len() - 1;
            sift_up(heap, entries, last);
            index.insert_unique(hash, at, |at| rehash(keys, entries, at));
            return;
        }
        // Full: the least counted entry gives its place up.
        let Some(&at) = heap.first() else { return };
        let slot = usize::from(at);
        let Some(least) = entries.get(slot).map(|entry| entry.count) else {
            return;
        };
        let old = hasher.hash_one(key_at(keys, entries, slot));
        if let Ok(found) = index.find_entry(old, |&i| i == at) {
            found.remove();
        }
        if let (Some(stored), Some(entry)) = (keys.get_mut(slot), entries.get_mut(slot)) {
            *stored = bytes;
            *entry = Entry {
                count: least.saturating_add(1),
                error: least,
                place: 0,
                len,
            };
        }
        sift_down(heap, entries, 0);
        index.insert_unique(hash, at, |at| rehash(keys, entries, at));
    }
}

fn count_at(heap: &[u16], entries: &[Entry], place: usize) -> Option<u32> {
    let at = *heap.get(place)?;
    entries.get(usize::from(at)).map(|entry| entry.count)
}

fn swap(heap: &mut [u16], entries: &mut [Entry], a: usize, b: usize) {
    heap.swap(a, b);
    for place in [a, b] {
        let at = heap.get(place).map(|&at| usize::from(at));
        if let (Some(entry), Ok(place)) =
            (at.and_then(|at| entries.get_mut(at)), u16::try_from(place))
        {
            entry.place = place;
        }
    }
}

fn sift_up(heap: &mut [u16], entries: &mut [Entry], mut place: usize) {
    while place > 0 {
        let parent = (place - 1) / 2;
        match (
            count_at(heap, entries, place),
            count_at(heap, entries, parent),
        ) {
            (Some(child), Some(up)) if child < up => {
                swap(heap, entries, place, parent);
                place = parent;
            }
            _ => return,
        }
    }
}

fn sift_down(heap: &mut [u16], entries: &mut [Entry], mut place: usize) {
    loop {
        let mut least = place;
        for child in [2 * place + 1, 2 * place + 2] {
            if let (Some(down), Some(best)) = (
                count_at(heap, entries, child),
                count_at(heap, entries, least),
            ) {
                if down < best {
                    least = child;
                }
            }
        }
        if least == place {
            return;
        }
        swap(heap, entries, place, least);
        place = least;
    }
}

/// One key of the list: its first `KEY_BYTES` bytes, its denied calls over both minutes (at
/// least the truth), and the most that exceeds the truth.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub key: Vec<u8>,
    pub denied: u64,
    pub error: u64,
}

/// The keys denied most this minute and the one before, `k` entries a minute.
#[derive(Debug)]
pub struct Top {
    k: usize,
    /// The current minute, as minutes since the epoch.
    minute: i64,
    current: Summary,
    previous: Summary,
    hasher: RandomState,
}

impl Top {
    /// An empty list of `k` entries a minute (at least one); it allocates them at its first
    /// denial.
    pub fn new(k: usize) -> Top {
        Top {
            k: k.clamp(1, MAX_ENTRIES),
            minute: i64::MIN,
            current: Summary::default(),
            previous: Summary::default(),
            hasher: RandomState::new(),
        }
    }

    pub fn k(&self) -> usize {
        self.k
    }

    /// Moves on to the minute of `now_ms`: the current summary becomes the previous one a
    /// minute on, and both are emptied two or more on. A clock that steps back within a minute
    /// changes nothing (its denials count in the minute that stands); one that steps back
    /// further, as after a jump forward is corrected, starts over at its minute, so that the
    /// list goes on meaning this minute and the last.
    fn roll(&mut self, now_ms: i64) {
        let minute = now_ms.div_euclid(MINUTE_MS);
        if minute <= self.minute && minute >= self.minute.saturating_sub(1) {
            return;
        }
        if minute == self.minute.saturating_add(1) && minute > self.minute {
            std::mem::swap(&mut self.current, &mut self.previous);
        } else {
            self.previous.clear();
        }
        self.current.clear();
        self.minute = minute;
    }

    /// Counts one denied call of `key` at `now_ms`.
    pub fn record(&mut self, key: &[u8], now_ms: i64) {
        self.roll(now_ms);
        if self.current.keys.capacity() == 0 {
            self.current = Summary::with_capacity(self.k);
        }
        self.current.record(kept(key), &self.hasher, self.k);
    }

    /// The `n` keys denied most over this minute and the one before, the most first (ties by
    /// key).
    pub fn top(&mut self, n: usize, now_ms: i64) -> Vec<Listed> {
        self.roll(now_ms);
        let (current, previous) = (&self.current, &self.previous);
        let least = [current.least(self.k), previous.least(self.k)];
        let figures = |key: &[u8]| {
            let mut listed = Listed {
                key: key.to_vec(),
                denied: 0,
                error: 0,
            };
            for (summary, least) in [current, previous].into_iter().zip(least) {
                let (count, error) = summary
                    .find(key, &self.hasher)
                    .map_or((least, least), |entry| (entry.count, entry.error));
                listed.denied = listed.denied.saturating_add(u64::from(count));
                listed.error = listed.error.saturating_add(u64::from(error));
            }
            listed
        };
        let mut listed: Vec<Listed> = current.held().map(figures).collect();
        listed.extend(
            previous
                .held()
                .filter(|key| current.find(key, &self.hasher).is_none())
                .map(figures),
        );
        listed.sort_unstable_by(|a, b| b.denied.cmp(&a.denied).then_with(|| a.key.cmp(&b.key)));
        listed.truncate(n);
        listed
    }

    /// Forgets every denial (CONFIG RESETSTAT), and frees the summaries.
    pub fn clear(&mut self) {
        self.current = Summary::default();
        self.previous = Summary::default();
    }

    /// A new size: the summaries are kept only at the size they were made for, so a change
    /// forgets them.
    pub fn resize(&mut self, k: usize) {
        let k = k.clamp(1, MAX_ENTRIES);
        if k != self.k {
            self.k = k;
            self.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// What the list promises against an exact count of the same denials.
    fn holds_the_guarantee(top: &mut Top, exact: &HashMap<Vec<u8>, u64>, now_ms: i64) {
        let k = top.k();
        let total: u64 = exact.values().sum();
        let listed = top.top(k, now_ms);
        for pair in listed.windows(2) {
            assert!(pair[0].denied >= pair[1].denied, "{listed:?}");
        }
        for item in &listed {
            let truth = exact.get(&item.key).copied().unwrap_or(0);
            assert!(item.denied >= truth, "{item:?} over {truth}");
            assert!(item.denied - item.error <= truth, "{item:?} under {truth}");
            assert!(
                item.error * k as u64 <= total,
                "{item:?}: error over {total}/{k}"
            );
        }
        for (key, &truth) in exact {
            if truth * k as u64 > total {
                assert!(
                    listed.iter().any(|item| &item.key == key),
                    "{key:?} denied {truth} of {total} is not listed: {listed:?}"
                );
            }
        }
    }

    proptest! {
        #[test]
        fn the_list_keeps_its_guarantee_over_two_minutes(
            k in 1usize..8,
            calls in prop::collection::vec((0u8..24, 0i64..1_500), 0..400),
        ) {
            let mut top = Top::new(k);
            // Each call: a key, and how far on (ms) it comes; the exact counts of the
            // current minute and the one before.
            let mut now = 10 * MINUTE_MS;
            let mut minutes: HashMap<i64, HashMap<Vec<u8>, u64>> = HashMap::new();
            for (key, step) in calls {
                now += step * 97;
                // Skewed: low keys come far more often.
                let key = vec![b'k', (u16::from(key) * u16::from(key) / 24) as u8];
                top.record(&key, now);
                *minutes.entry(now / MINUTE_MS).or_default().entry(key).or_default() += 1;
                let minute = now / MINUTE_MS;
                let mut exact: HashMap<Vec<u8>, u64> = HashMap::new();
                for m in [minute - 1, minute] {
                    for (key, count) in minutes.get(&m).into_iter().flatten() {
                        *exact.entry(key.clone()).or_default() += count;
                    }
                }
                holds_the_guarantee(&mut top, &exact, now);
            }
        }
    }

    #[test]
    fn a_key_denied_only_two_minutes_ago_drops_out() {
        let mut top = Top::new(4);
        top.record(b"old", 0);
        assert_eq!(top.top(10, MINUTE_MS - 1).len(), 1);
        assert_eq!(top.top(10, MINUTE_MS)[0].key, b"old");
        assert!(top.top(10, 2 * MINUTE_MS).is_empty());
    }

    #[test]
    fn long_keys_that_share_their_first_bytes_share_an_entry() {
        let mut top = Top::new(4);
        let long = |tail: u8| {
            let mut key = vec![b'x'; KEY_BYTES];
            key.push(tail);
            key
        };
        top.record(&long(1), 5);
        top.record(&long(2), 5);
        let listed = top.top(10, 5);
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].key.len(), KEY_BYTES);
        assert_eq!(listed[0].denied, 2);
    }

    #[test]
    fn a_clock_stepping_back_counts_in_the_minute_that_stands() {
        let mut top = Top::new(2);
        top.record(b"a", 5 * MINUTE_MS);
        top.record(b"a", 4 * MINUTE_MS);
        assert_eq!(top.top(1, 5 * MINUTE_MS)[0].denied, 2);
        // A jump forward corrected: the list starts over at the minute the clock is back at.
        top.record(b"b", 65 * MINUTE_MS);
        top.record(b"c", 6 * MINUTE_MS);
        let listed = top.top(5, 6 * MINUTE_MS);
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].key, b"c");
    }
}

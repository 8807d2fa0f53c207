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

use std::hash::{BuildHasher, Hasher as _};
use std::ops::Range;

use hashbrown::{hash_table, HashTable};

/// Keys are the clients' to choose, so the hash is seeded at random. foldhash, not std's
/// SipHash: a denial hashes its key, and SipHash made that
/// most of what counting a denial cost (docs/benchmark.md, "CL.TOP").
type Hasher = foldhash::fast::RandomState;

/// The bytes of a key a summary keeps: longer keys that share them share an entry.
pub const KEY_BYTES: usize = 128;

/// The span of one summary.
pub const MINUTE_MS: i64 = 60_000;

/// The most entries a minute keeps: their places fit 16 bits.
pub const MAX_ENTRIES: usize = 1 << 16;

/// One key's figures in a summary, beside its bytes (kept apart, so that each array is a
/// size the allocator serves without rounding up: 128 bytes a key, 20 an entry). A minute's
/// count of one key's denials fits 32 bits (4 billion calls a minute on one node is far past
/// what a server answers), and saturates there.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Its key's hash (see `hash_of`), kept so that the entry that gives its place to another
    /// key leaves the index without hashing its key again.
    hash: u32,
    count: u32,
    /// The count it started from, inherited from the entry it replaced.
    error: u32,
    /// Where it stands in the summary's order.
    place: u16,
    /// The run of equal counts it stands in.
    run: u16,
    /// How many of its key's bytes are the key.
    len: u8,
}

/// One minute's space-saving summary, kept as the paper's "stream summary": the entries in
/// order of count, the most counted first, those of one count standing together (a run),
/// and each run knowing where it starts. A denial moves its entry to the start of its run
/// and counts it once more, which leaves the order sorted: one step whatever `k`. (A heap
/// would sift a new key down its whole depth, past the many entries of a full summary that
/// share the least count.)
#[derive(Debug, Default)]
struct Summary {
    keys: Vec<[u8; KEY_BYTES]>,
    entries: Vec<Entry>,
    /// Indices into `entries`, the most counted first.
    order: Vec<u16>,
    /// Where each run starts in `order`, by the runs' numbers.
    runs: Vec<u16>,
    /// The numbers of runs no entry stands in any more, for reuse.
    spare: Vec<u16>,
    index: HashTable<u16>,
}

/// A key as a summary keeps it: its first `KEY_BYTES` bytes.
fn kept(key: &[u8]) -> &[u8] {
    key.get(..KEY_BYTES).unwrap_or(key)
}

/// A key's hash: of its bytes alone, without the length `Hash` would write first (keys are
/// compared whole, so no two need telling apart by it), in 32 bits, which an entry keeps.
fn hash_of(hasher: &Hasher, key: &[u8]) -> u32 {
    let mut state = hasher.build_hasher();
    state.write(key);
    (state.finish() >> 32) as u32
}

/// The index's hash of a key hashed `hash`: the 32 bits twice, since the table places a key
/// by the low bits and tells keys apart within a group by the top seven.
fn spread(hash: u32) -> u64 {
    u64::from(hash) << 32 | u64::from(hash)
}

/// The key of entry `at`.
fn key_at<'a>(keys: &'a [[u8; KEY_BYTES]], entries: &[Entry], at: usize) -> &'a [u8] {
    match (keys.get(at), entries.get(at)) {
        (Some(key), Some(entry)) => key.get(..usize::from(entry.len)).unwrap_or_default(),
        _ => &[],
    }
}

/// The entry standing at `place` in `order`.
fn entry_at<'a>(order: &[u16], entries: &'a [Entry], place: usize) -> Option<&'a Entry> {
    order
        .get(place)
        .and_then(|&at| entries.get(usize::from(at)))
}

impl Summary {
    fn with_capacity(k: usize) -> Summary {
        Summary {
            keys: Vec::with_capacity(k),
            entries: Vec::with_capacity(k),
            order: Vec::with_capacity(k),
            runs: Vec::with_capacity(k),
            spare: Vec::with_capacity(k),
            // Replacing keys leaves tombstones; when they use up the table's room, it clears
            // them in place if its entries and one more fill at most half its capacity, and
            // grows otherwise. Twice the entries and one more keeps it from ever growing.
            index: HashTable::with_capacity(k.saturating_mul(2).saturating_add(2)),
        }
    }

    fn clear(&mut self) {
        self.keys.clear();
        self.entries.clear();
        self.order.clear();
        self.runs.clear();
        self.spare.clear();
        self.index.clear();
    }

    fn find(&self, key: &[u8], hasher: &Hasher) -> Option<Entry> {
        let (keys, entries) = (&self.keys, &self.entries);
        let at = self.index.find(spread(hash_of(hasher, key)), |&at| {
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
        self.order
            .last()
            .and_then(|&at| self.entries.get(usize::from(at)))
            .map_or(0, |entry| entry.count)
    }

    /// Counts one denial of `key` (already cut to `KEY_BYTES`), in a summary of `k` entries
    /// at most.
    #[inline(always)]
    fn record(&mut self, key: &[u8], hasher: &Hasher, k: usize) {
        let hash = hash_of(hasher, key);
        let Summary {
            keys,
            entries,
            order,
            runs,
            spare,
            index,
        } = self;
        let found = {
            let (keys, entries) = (&*keys, &*entries);
            index.entry(
                spread(hash),
                |&at| key_at(keys, entries, usize::from(at)) == key,
                |&at| {
                    entries
                        .get(usize::from(at))
                        .map_or(0, |entry| spread(entry.hash))
                },
            )
        };
        let vacant = match found {
            hash_table::Entry::Occupied(found) => {
                count_once_more(entries, order, runs, spare, *found.get());
                return;
            }
            hash_table::Entry::Vacant(vacant) => vacant,
        };
        let len = key.len().min(KEY_BYTES) as u8;
        let at = if entries.len() < k.min(MAX_ENTRIES) {
            // A new entry, counted nothing yet: it stands last, in a run of its own.
            let (Ok(at), Ok(place)) = (u16::try_from(entries.len()), u16::try_from(order.len()))
            else {
                return;
            };
            let Some(run) = start_run(runs, spare, place) else {
                return;
            };
            keys.push([0; KEY_BYTES]);
            entries.push(Entry {
                hash,
                count: 0,
                error: 0,
                place,
                run,
                len,
            });
            order.push(at);
            vacant.insert(at);
            at
        } else {
            // The entry counted least (the last) takes the key, and keeps its count as the
            // key's error. The key goes into the index where the lookup found room, before
            // the old key leaves it, naming for that moment another entry (any other), so
            // that the old key's place is the only one that names this one.
            let Some(&at) = order.last() else { return };
            let Some(entry) = entries.get_mut(usize::from(at)) else {
                return;
            };
            let old = entry.hash;
            *entry = Entry {
                hash,
                error: entry.count,
                len,
                ..*entry
            };
            let new = vacant.insert(at ^ 1).bucket_index();
            if let Ok(found) = index.find_entry(spread(old), |&held| held == at) {
                found.remove();
            }
            if let Some(named) = index.get_bucket_mut(new) {
                *named = at;
            }
            at
        };
        if let Some(stored) = keys
            .get_mut(usize::from(at))
            .and_then(|stored| stored.get_mut(..key.len()))
        {
            stored.copy_from_slice(key);
        }
        count_once_more(entries, order, runs, spare, at);
    }
}

/// Counts entry `at` once more: it trades places with the first of its run, which then starts
/// one later, and joins the run before it if that has its new count.
#[inline(always)]
fn count_once_more(
    entries: &mut [Entry],
    order: &mut [u16],
    runs: &mut Vec<u16>,
    spare: &mut Vec<u16>,
    at: u16,
) {
    let Some(&entry) = entries.get(usize::from(at)) else {
        return;
    };
    let (Some(count), Some(&first)) =
        (entry.count.checked_add(1), runs.get(usize::from(entry.run)))
    else {
        return;
    };
    let (first_place, place) = (usize::from(first), usize::from(entry.place));
    if first_place.max(place) >= order.len() {
        return;
    }
    order.swap(first_place, place);
    if let Some(other) = order
        .get(place)
        .and_then(|&other| entries.get_mut(usize::from(other)))
    {
        other.place = entry.place;
    }
    let next = first_place + 1;
    let run_goes_on = entry_at(order, entries, next).is_some_and(|e| e.run == entry.run);
    match (
        run_goes_on,
        u16::try_from(next),
        runs.get_mut(usize::from(entry.run)),
    ) {
        (true, Ok(next), Some(start)) => *start = next,
        _ => spare.push(entry.run),
    }
    let before = first_place
        .checked_sub(1)
        .and_then(|place| entry_at(order, entries, place))
        .filter(|before| before.count == count)
        .map(|before| before.run);
    let Some(run) = before.or_else(|| start_run(runs, spare, first)) else {
        return;
    };
    if let Some(entry) = entries.get_mut(usize::from(at)) {
        *entry = Entry {
            count,
            place: first,
            run,
            ..*entry
        };
    }
}

/// A run that starts at `place`: a spare one's number, else a new one's.
fn start_run(runs: &mut Vec<u16>, spare: &mut Vec<u16>, place: u16) -> Option<u16> {
    if let Some(run) = spare.pop() {
        if let Some(start) = runs.get_mut(usize::from(run)) {
            *start = place;
            return Some(run);
        }
    }
    let run = u16::try_from(runs.len()).ok()?;
    runs.push(place);
    Some(run)
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
    /// The instants that leave both minutes as they are: the previous minute and this one,
    /// kept so that most calls know it without a division.
    standing: Range<i64>,
    current: Summary,
    previous: Summary,
    hasher: Hasher,
}

impl Top {
    /// An empty list of `k` entries a minute (at least one); it allocates them at its first
    /// denial.
    pub fn new(k: usize) -> Top {
        Top {
            k: k.clamp(1, MAX_ENTRIES),
            minute: i64::MIN,
            standing: 0..0,
            current: Summary::default(),
            previous: Summary::default(),
            hasher: Hasher::default(),
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
        if self.standing.contains(&now_ms) {
            return;
        }
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
        self.standing = minute.saturating_sub(1).saturating_mul(MINUTE_MS)
            ..minute.saturating_add(1).saturating_mul(MINUTE_MS);
    }

    /// Counts one denied call of `key` at `now_ms`.
    #[inline(always)]
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

    /// The summary's order as it must stand: sorted by count, the most first, each entry
    /// where its place says, each run of equal counts one run that starts where it says, and
    /// every key found by its index.
    fn holds_its_order(summary: &Summary, hasher: &Hasher) {
        let Summary {
            entries,
            order,
            runs,
            spare,
            ..
        } = summary;
        assert_eq!(order.len(), entries.len());
        assert_eq!(summary.index.len(), entries.len());
        for (place, &at) in order.iter().enumerate() {
            let entry = entries[usize::from(at)];
            assert_eq!(usize::from(entry.place), place);
            assert!(!spare.contains(&entry.run));
            let starts = place == 0 || entries[usize::from(order[place - 1])].count != entry.count;
            if starts {
                assert_eq!(usize::from(runs[usize::from(entry.run)]), place);
            } else {
                let before = entries[usize::from(order[place - 1])];
                assert!(before.count == entry.count && before.run == entry.run);
            }
            if place > 0 {
                assert!(entries[usize::from(order[place - 1])].count >= entry.count);
            }
            let key = key_at(&summary.keys, entries, usize::from(at));
            assert_eq!(
                summary.find(key, hasher).map(|e| e.place),
                Some(entry.place)
            );
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
                holds_its_order(&top.current, &top.hasher);
                holds_its_order(&top.previous, &top.hasher);
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
    fn the_largest_size_tells_every_entry_apart() {
        let mut top = Top::new(MAX_ENTRIES);
        let extra = 5_000u32;
        for i in 0..MAX_ENTRIES as u32 + extra {
            top.record(&i.to_be_bytes(), 0);
        }
        top.record(&7u32.to_be_bytes(), 0);
        holds_its_order(&top.current, &top.hasher);
        assert_eq!(top.current.entries.len(), MAX_ENTRIES);
        // The first `extra` keys gave their places to the last; the list's head is a key
        // counted twice, or one that took a place counted once.
        let listed = top.top(1, 0);
        assert_eq!((listed[0].denied, listed[0].error), (2, 1));
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

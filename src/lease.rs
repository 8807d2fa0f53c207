//! CL.LEASE's pure core: a concurrency limit. At most `limit` holders hold a lease on a key at
//! once, each until its own end; a holder that calls again while its lease is live renews it.
//! Time is in integer milliseconds since the Unix epoch. The set's bytes, and how a call
//! finds its way in them, are in `lease/set.rs`; how a write edits them, in `lease/edit.rs`.

mod edit;
mod set;

pub use edit::Editor;
pub use set::{empty, Found, LeaseSet, HEADER_LEN, MAX_END_MS, MAX_HOLDER};

use crate::args::LeaseParams;
use crate::bytes::ByteBuffer;
use crate::error::Error;
use crate::outcome::Outcome;
use crate::time::NANOS_PER_MILLI;

/// One holder's call against a concurrency limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    pub limit: i64,
    pub lease_ms: i64,
}

/// What an admitted call changes in the set (the leases that ended are dropped after it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseChange {
    /// The holder's live lease, `found` where the call read it, now ends at `end_ms`.
    Renew { end_ms: i64, found: Found },
    /// The holder takes a free slot until `end_ms`.
    Acquire { end_ms: i64 },
    /// The holder takes a free slot until `end_ms` again: its ended lease, `found`, not
    /// dropped yet, takes the new end.
    Retake { end_ms: i64, found: Found },
}

/// A call's answer, and its change when admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub outcome: Outcome,
    pub change: Option<LeaseChange>,
    /// When admitted, the end of the last lease the set then holds: the key's expiry.
    pub last_end_ms: Option<i64>,
}

/// What a release did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Released {
    /// The holder held no live lease: nothing changed.
    Nothing,
    /// Its lease was freed; the set's last lease now ends at this instant, or, `None`, the
    /// set holds none.
    Freed { last_end_ms: Option<i64> },
}

impl Lease {
    pub fn new(params: &LeaseParams) -> Lease {
        Lease {
            limit: params.limit,
            lease_ms: params.lease_ms,
        }
    }

    /// Decides `holder`'s call at `now_ms` against the stored set (`None`: no key).
    pub fn decide(
        &self,
        stored: Option<&[u8]>,
        holder: &[u8],
        now_ms: i64,
    ) -> Result<Decision, Error> {
        // The parser's checks, again: a limit below 1 or an empty holder is a defect here.
        if self.limit < 1 || self.lease_ms < 1 || !(1..=MAX_HOLDER).contains(&holder.len()) {
            return Err(Error::Internal);
        }
        let end_ms = now_ms
            .checked_add(self.lease_ms)
            .filter(|&end| end <= MAX_END_MS)
            .ok_or(Error::TooLarge("lease_time"))?;
        let view = Live::of(stored, now_ms)?;
        let live = i64::try_from(view.live).map_err(|_| Error::CorruptState)?;
        let reset_after = |latest: Option<i64>| ms_to_ns(latest.map_or(0, |end| end - now_ms));
        let own = view.holder(holder)?;
        if let Some(found) = own.filter(|found| found.end_ms > now_ms) {
            // The holder's own lease ends at `end_ms` now, whatever it was.
            let latest = view.latest_end_but(holder)?.max(Some(end_ms));
            let outcome = Outcome::allowed(
                self.limit,
                self.limit.saturating_sub(live),
                reset_after(latest),
            );
            return Ok(Decision {
                outcome,
                change: Some(LeaseChange::Renew { end_ms, found }),
                last_end_ms: latest,
            });
        }
        if live < self.limit {
            // A holder retaking its slot reuses its entry: only a new one needs room.
            if own.is_none() && view.set.is_some_and(|set| !set.has_room_for(holder)) {
                return Err(Error::LeaseSetTooLong);
            }
            let latest = view.latest_end()?.max(Some(end_ms));
            let outcome = Outcome::allowed(self.limit, self.limit - live - 1, reset_after(latest));
            let change = match own {
                Some(found) => LeaseChange::Retake { end_ms, found },
                None => LeaseChange::Acquire { end_ms },
            };
            return Ok(Decision {
                outcome,
                change: Some(change),
                last_end_ms: latest,
            });
        }
        let retry = view.earliest_end()?.map(|end| ms_to_ns(end - now_ms));
        Ok(Decision {
            outcome: Outcome::denied(self.limit, 0, retry, reset_after(view.latest_end()?)),
            change: None,
            last_end_ms: None,
        })
    }

    /// What a call would learn of the set without taking a slot (a look, as a quantity of 0
    /// is for the rate limiters): admitted, the free slots, and when the last lease ends.
    pub fn look(&self, stored: Option<&[u8]>, now_ms: i64) -> Result<Outcome, Error> {
        if self.limit < 1 {
            return Err(Error::Internal);
        }
        let view = Live::of(stored, now_ms)?;
        let live = i64::try_from(view.live).map_err(|_| Error::CorruptState)?;
        let reset_after = ms_to_ns(view.latest_end()?.map_or(0, |end| end - now_ms));
        Ok(Outcome::allowed(
            self.limit,
            self.limit.saturating_sub(live).max(0),
            reset_after,
        ))
    }
}

/// Makes an admitted call's change in the set `buffer` holds (an empty buffer is an empty
/// set: a new key's): renews or adds the holder's lease, then drops the leases that ended by
/// `now_ms`. Each edit checks what it relies on before it moves a byte, so a set damaged
/// where the call's own edit does not look is refused before anything changes; the ended
/// leases go only if the set lets them go cleanly (they take no slot either way).
pub fn apply(
    buffer: &mut impl ByteBuffer,
    holder: &[u8],
    change: LeaseChange,
    now_ms: i64,
) -> Result<(), Error> {
    if buffer.bytes_mut()?.is_empty() {
        // A new key's set is made whole first, and then given to the key.
        let LeaseChange::Acquire { end_ms } = change else {
            return Err(Error::Internal);
        };
        let mut set = Vec::new();
        Editor::new(&mut set).insert(holder, end_ms)?;
        return buffer.fill_empty(&set);
    }
    match change {
        LeaseChange::Acquire { end_ms } => Editor::new(buffer).insert(holder, end_ms)?,
        LeaseChange::Renew { end_ms, found } | LeaseChange::Retake { end_ms, found } => {
            Editor::new(buffer).renew(holder, found, end_ms)?
        }
    }
    drop_ended(buffer, now_ms)
}

/// Drops the leases that ended by `now_ms`, after a call's own edit, if the set lets them go
/// cleanly: a set damaged where the call's edit did not look is refused before a byte moves
/// (and keeps them: they take no slot). Any other failure is the server's, and an error.
fn drop_ended(buffer: &mut impl ByteBuffer, now_ms: i64) -> Result<(), Error> {
    match Editor::new(buffer).drop_ended(now_ms) {
        Ok(_) | Err(Error::CorruptState) => Ok(()),
        Err(error) => Err(error),
    }
}

/// Frees `holder`'s live lease, if it holds one, dropping the leases that ended by `now_ms`
/// with it, as `apply` does. A release of nothing writes nothing.
pub fn release(
    buffer: &mut impl ByteBuffer,
    holder: &[u8],
    now_ms: i64,
) -> Result<Released, Error> {
    let (found, last_end_ms) = {
        let view = Live::of(Some(buffer.bytes_mut()?), now_ms)?;
        let Some(found) = view.holder(holder)?.filter(|found| found.end_ms > now_ms) else {
            return Ok(Released::Nothing);
        };
        let last_end_ms = match view.live {
            0 | 1 => None,
            _ => view.latest_end_but(holder)?,
        };
        (found, last_end_ms)
    };
    // The last live lease goes with the key: the set need not be edited.
    if last_end_ms.is_some() {
        Editor::new(buffer).remove(holder, found)?;
        drop_ended(buffer, now_ms)?;
    }
    Ok(Released::Freed { last_end_ms })
}

/// The live leases of a stored set at `now_ms`, the soonest to end first: each holder, and
/// its lease's end.
pub fn holders(stored: Option<&[u8]>, now_ms: i64) -> Result<Vec<(&[u8], i64)>, Error> {
    let view = Live::of(stored, now_ms)?;
    let Some(set) = view.set else {
        return Ok(Vec::new());
    };
    (view.ended..set.count()).map(|i| set.by_end(i)).collect()
}

/// The live leases of a stored set at an instant.
struct Live<'a> {
    set: Option<LeaseSet<'a>>,
    /// How many leases end at or before the instant (the first of `by_end`).
    ended: usize,
    live: usize,
}

impl<'a> Live<'a> {
    fn of(stored: Option<&'a [u8]>, now_ms: i64) -> Result<Live<'a>, Error> {
        let Some(raw) = stored else {
            return Ok(Live {
                set: None,
                ended: 0,
                live: 0,
            });
        };
        let set = LeaseSet::parse(raw)?;
        let ended = set.ended_by(now_ms)?;
        Ok(Live {
            set: Some(set),
            ended,
            live: set.count() - ended,
        })
    }

    fn holder(&self, holder: &[u8]) -> Result<Option<Found>, Error> {
        match &self.set {
            Some(set) => set.find(holder),
            None => Ok(None),
        }
    }

    /// The end of the live lease that ends first.
    fn earliest_end(&self) -> Result<Option<i64>, Error> {
        match &self.set {
            Some(set) if self.live > 0 => Ok(Some(set.by_end(self.ended)?.1)),
            _ => Ok(None),
        }
    }

    /// The end of the live lease that ends last.
    fn latest_end(&self) -> Result<Option<i64>, Error> {
        match &self.set {
            Some(set) if self.live > 0 => Ok(Some(set.by_end(set.count() - 1)?.1)),
            _ => Ok(None),
        }
    }

    /// The end of the live lease that ends last, leaving out `holder`'s.
    fn latest_end_but(&self, holder: &[u8]) -> Result<Option<i64>, Error> {
        let Some(set) = &self.set else {
            return Ok(None);
        };
        for i in (self.ended..set.count()).rev().take(2) {
            let (other, end) = set.by_end(i)?;
            if other != holder {
                return Ok(Some(end));
            }
        }
        Ok(None)
    }
}

fn ms_to_ns(ms: i64) -> i64 {
    ms.saturating_mul(NANOS_PER_MILLI)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    const NOW: i64 = 1_900_000_000_000;

    /// The model: each holder's end; a lease is live while its end is after now.
    #[derive(Default, Debug)]
    struct Model {
        ends: BTreeMap<Vec<u8>, i64>,
    }

    impl Model {
        fn live(&self, now: i64) -> impl Iterator<Item = (&Vec<u8>, &i64)> {
            self.ends.iter().filter(move |(_, &end)| end > now)
        }

        fn lease(&mut self, lease: Lease, holder: &[u8], now: i64) -> [i64; 5] {
            let end = now + lease.lease_ms;
            let live = self.live(now).count() as i64;
            let own = self.ends.get(holder).is_some_and(|&e| e > now);
            let latest = self.live(now).map(|(_, &e)| e).max();
            if own || live < lease.limit {
                self.ends.retain(|_, e| *e > now);
                self.ends.insert(holder.to_vec(), end);
                let live_after = self.ends.len() as i64;
                let reset = self.ends.values().max().copied().unwrap_or(now) - now;
                [0, lease.limit, (lease.limit - live_after).max(0), -1, reset]
            } else {
                let earliest = self.live(now).map(|(_, &e)| e).min().unwrap_or(now);
                [
                    1,
                    lease.limit,
                    0,
                    earliest - now,
                    latest.unwrap_or(now) - now,
                ]
            }
        }

        fn release(&mut self, holder: &[u8], now: i64) -> bool {
            if self.ends.get(holder).is_none_or(|&e| e <= now) {
                return false;
            }
            self.ends.retain(|_, e| *e > now);
            self.ends.remove(holder);
            true
        }
    }

    fn reply(outcome: Outcome) -> [i64; 5] {
        outcome.to_reply(crate::time::TimeUnit::Milliseconds)
    }

    /// The set's header field at byte `at` (count 4, heap 8, holes 12, tail 16).
    fn header_field(raw: &[u8], at: usize) -> usize {
        u32::from_le_bytes(raw[at..at + 4].try_into().unwrap()) as usize
    }

    /// A key's value, as the module keeps it: nothing until the first lease.
    #[derive(Default)]
    struct Key(Option<Vec<u8>>);

    impl Key {
        fn lease(&mut self, lease: Lease, holder: &[u8], now: i64) -> [i64; 5] {
            let decision = lease.decide(self.0.as_deref(), holder, now).unwrap();
            if let Some(change) = decision.change {
                let buffer = self.0.get_or_insert_with(Vec::new);
                apply(buffer, holder, change, now).unwrap();
                assert_eq!(
                    decision.last_end_ms,
                    self.contents().values().max().copied(),
                    "the key's expiry is its last lease's end"
                );
                let look = lease.look(self.0.as_deref(), now).unwrap();
                assert_eq!(
                    reply(look),
                    reply(decision.outcome),
                    "a look sees what the call left"
                );
            }
            reply(decision.outcome)
        }

        fn release(&mut self, holder: &[u8], now: i64) -> bool {
            let released = match &mut self.0 {
                Some(buffer) => release(buffer, holder, now).unwrap(),
                None => return false,
            };
            match released {
                Released::Nothing => false,
                // The last live lease went: the command deletes the key.
                Released::Freed { last_end_ms: None } => {
                    self.0 = None;
                    true
                }
                Released::Freed { last_end_ms } => {
                    assert_eq!(last_end_ms, self.contents().values().max().copied());
                    true
                }
            }
        }

        /// Every lease the set holds, by holder, and a check of its size.
        fn contents(&self) -> BTreeMap<Vec<u8>, i64> {
            let Some(raw) = &self.0 else {
                return BTreeMap::new();
            };
            let set = LeaseSet::parse(raw).unwrap();
            let mut ends = BTreeMap::new();
            let mut last = (i64::MIN, Vec::new());
            for i in 0..set.count() {
                let (holder, end) = set.by_end(i).unwrap();
                assert!((end, holder.to_vec()) > last, "by_end out of order");
                last = (end, holder.to_vec());
                let found = set.find(holder).unwrap().expect("in by_holder too");
                assert_eq!((found.by_end, found.end_ms), (i, end));
                ends.insert(holder.to_vec(), end);
            }
            // by_holder holds the same leases, in the order of their holders.
            let by_holder: Vec<Vec<u8>> = (0..set.count())
                .map(|i| set.by_holder(i).unwrap().0.to_vec())
                .collect();
            assert!(
                by_holder.windows(2).all(|pair| pair[0] < pair[1]),
                "by_holder out of order"
            );
            assert_eq!(by_holder, ends.keys().cloned().collect::<Vec<_>>());
            // The holes are exactly the entries' bytes no lease uses.
            let field = |at: usize| header_field(raw, at);
            let in_use: usize = ends.keys().map(|holder| holder.len() + 7).sum();
            assert_eq!(field(8) - field(12), in_use, "holes miscounted");
            assert_eq!(raw.len(), HEADER_LEN + field(8) + 6 * set.count());
            ends
        }
    }

    #[test]
    fn holders_up_to_the_limit_are_admitted_and_renew_their_own() {
        let lease = Lease {
            limit: 2,
            lease_ms: 1_000,
        };
        let mut key = Key::default();
        assert_eq!(key.lease(lease, b"a", NOW), [0, 2, 1, -1, 1_000]);
        assert_eq!(key.lease(lease, b"b", NOW + 100), [0, 2, 0, -1, 1_000]);
        assert_eq!(key.lease(lease, b"c", NOW + 200), [1, 2, 0, 800, 900]);
        // A's renewal moves its end, and takes no other slot.
        assert_eq!(key.lease(lease, b"a", NOW + 300), [0, 2, 0, -1, 1_000]);
        assert_eq!(key.lease(lease, b"c", NOW + 400), [1, 2, 0, 700, 900]);
        // B's lease ends: C takes its slot, and B's entry is dropped.
        assert_eq!(key.lease(lease, b"c", NOW + 1_100), [0, 2, 0, -1, 1_000]);
        assert_eq!(
            key.contents(),
            BTreeMap::from([(b"a".to_vec(), NOW + 1_300), (b"c".to_vec(), NOW + 2_100)])
        );
    }

    #[test]
    fn a_release_frees_a_live_lease_and_nothing_else() {
        let lease = Lease {
            limit: 1,
            lease_ms: 1_000,
        };
        let mut key = Key::default();
        assert!(!key.release(b"a", NOW));
        key.lease(lease, b"a", NOW);
        assert!(!key.release(b"b", NOW));
        assert!(key.release(b"a", NOW + 10));
        assert!(!key.release(b"a", NOW + 20));
        assert_eq!(key.lease(lease, b"b", NOW + 30)[0], 0);
        // An ended lease is not released: it was over already.
        assert!(!key.release(b"b", NOW + 1_030));
    }

    #[test]
    fn foreign_values_are_refused() {
        let lease = Lease {
            limit: 1,
            lease_ms: 1,
        };
        for raw in [
            &b""[..],
            b"CLL",
            b"CLW\x01\0\0\0\0\0\0\0\0\0\0\0\0",
            &[0u8; 16],
        ] {
            assert_eq!(lease.decide(Some(raw), b"a", NOW), Err(Error::CorruptState));
        }
        let mut longer = empty().to_vec();
        longer.push(0);
        assert_eq!(
            lease.decide(Some(&longer), b"a", NOW),
            Err(Error::CorruptState)
        );
    }

    /// A sound header over indexes whose slots all name one entry: refused, not packed.
    #[test]
    fn a_set_whose_slots_alias_one_entry_is_refused_before_any_write() {
        let mut raw = empty().to_vec();
        let end = (NOW + 1_000).to_le_bytes();
        let heap: Vec<u8> = [&[2u8][..], b"ab", &end[..6]].concat();
        raw[4..8].copy_from_slice(&11u32.to_le_bytes());
        raw[8..12].copy_from_slice(&(heap.len() as u32).to_le_bytes());
        raw.extend_from_slice(&heap);
        raw.extend(std::iter::repeat_n(0u8, 22 * 3));
        let before = raw.clone();
        assert!(release(&mut raw, b"ab", NOW).is_err());
        assert!(lease_after_drop(&mut raw).is_err());
        assert_eq!(raw, before);
    }

    fn lease_after_drop(raw: &mut Vec<u8>) -> Result<(), Error> {
        apply(
            raw,
            b"zz",
            LeaseChange::Acquire {
                end_ms: NOW + 5_000,
            },
            NOW + 2_000,
        )
    }

    /// A renewal that shortens the holder's own lease: the reset is the longest of the others.
    #[test]
    fn a_shortened_renewal_resets_at_the_last_other_lease() {
        let mut key = Key::default();
        let long = Lease {
            limit: 2,
            lease_ms: 1_000,
        };
        let short = Lease {
            limit: 2,
            lease_ms: 100,
        };
        key.lease(long, b"a", NOW);
        key.lease(short, b"b", NOW);
        let renewal = Lease {
            limit: 2,
            lease_ms: 50,
        };
        assert_eq!(key.lease(renewal, b"a", NOW + 10), [0, 2, 0, -1, 90]);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Lease {
            holder: u8,
            limit: i64,
            lease_ms: i64,
        },
        Release {
            holder: u8,
        },
        Wait {
            ms: i64,
        },
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        let op = prop_oneof![
            6 => (0..120u8, prop_oneof![1..8i64, 1..120i64], prop_oneof![1..500i64, Just(100i64)])
                .prop_map(|(holder, limit, lease_ms)| Op::Lease { holder, limit, lease_ms }),
            1 => (0..120u8).prop_map(|holder| Op::Release { holder }),
            2 => prop_oneof![0..300i64, Just(0i64)].prop_map(|ms| Op::Wait { ms }),
        ];
        prop::collection::vec(op, 1..400)
    }

    /// Holder names of many lengths, so that entries and holes come in many sizes, and names
    /// that share a prefix and differ in their last bytes.
    fn name(holder: u8) -> Vec<u8> {
        if holder % 2 == 0 {
            std::iter::repeat_n(b'a' + holder % 26, 1 + (holder as usize * 37) % 255).collect()
        } else {
            format!("worker:{:03}", holder).into_bytes()
        }
    }

    proptest! {
        #[test]
        fn leases_answer_and_store_exactly_as_the_model(ops in ops()) {
            let (mut key, mut model, mut now) = (Key::default(), Model::default(), NOW);
            for op in ops {
                match op {
                    Op::Lease { holder, limit, lease_ms } => {
                        let lease = Lease { limit, lease_ms };
                        let name = name(holder);
                        prop_assert_eq!(key.lease(lease, &name, now), model.lease(lease, &name, now));
                    }
                    Op::Release { holder } => {
                        let name = name(holder);
                        prop_assert_eq!(key.release(&name, now), model.release(&name, now));
                    }
                    Op::Wait { ms } => now += ms,
                }
                let stored = key.contents();
                let live: BTreeMap<_, _> = stored.iter().filter(|(_, &e)| e > now).collect();
                let expected: BTreeMap<_, _> = model.live(now).collect();
                prop_assert_eq!(live, expected);
                // The holders a look lists: the live ones, the soonest to end first.
                let listed = holders(key.0.as_deref(), now).unwrap();
                let mut by_end: Vec<(&[u8], i64)> =
                    model.live(now).map(|(h, &e)| (h.as_slice(), e)).collect();
                by_end.sort_by_key(|&(h, e)| (e, h));
                prop_assert_eq!(listed, by_end);
                if let Some(raw) = &key.0 {
                    LeaseSet::parse(raw).unwrap();
                    let in_use: usize = stored.keys().map(|h| h.len() + 7).sum();
                    let field = |at: usize| header_field(raw, at);
                    let (heap, tail) = (field(8), field(16));
                    // The holes between entries never outweigh the entries in use, nor the
                    // tail (packed holes and a new value's tail) much more than them.
                    prop_assert!(heap - tail <= 2 * in_use);
                    let used = raw.len() - tail;
                    prop_assert!(
                        tail <= in_use + 2 * (used / 32).max(64) + 8,
                        "tail {} of {}", tail, raw.len()
                    );
                }
            }
        }

        #[test]
        fn damaged_sets_with_a_sound_header_get_an_answer_or_an_error_never_a_panic(
            count in 0..12usize,
            heap in prop::collection::vec(any::<u8>(), 0..120),
            slots in prop::collection::vec(0..130u32, 24),
            holes in any::<u32>(),
            tail in any::<u32>(),
            holder in prop_oneof![Just(b"a".to_vec()), prop::collection::vec(any::<u8>(), 1..4)],
        ) {
            // A sound header leaves each entry at least 8 bytes.
            let count = count.min(heap.len() / 8);
            let mut raw = empty().to_vec();
            raw[4..8].copy_from_slice(&(count as u32).to_le_bytes());
            raw[8..12].copy_from_slice(&(heap.len() as u32).to_le_bytes());
            let holes = holes % ((heap.len() - 8 * count) as u32 + 1);
            raw[12..16].copy_from_slice(&holes.to_le_bytes());
            raw[16..20].copy_from_slice(&(tail % (holes + 1)).to_le_bytes());
            raw.extend_from_slice(&heap);
            for slot in &slots[..2 * count] {
                raw.extend_from_slice(&slot.to_le_bytes()[..3]);
            }
            prop_assert!(LeaseSet::parse(&raw).is_ok());
            for now in [NOW - 1_000_000, NOW, i64::from(u32::MAX)] {
                let lease = Lease { limit: 2, lease_ms: 100 };
                if let Ok(decision) = lease.decide(Some(&raw), &holder, now) {
                    if let Some(change) = decision.change {
                        let _ = apply(&mut raw.clone(), &holder, change, now);
                    }
                }
                let _ = release(&mut raw.clone(), &holder, now);
            }
        }

        #[test]
        fn any_stored_bytes_are_decided_without_panicking(
            raw in prop::collection::vec(any::<u8>(), 0..200),
            holder in prop::collection::vec(any::<u8>(), 1..8),
        ) {
            let mut raw = raw;
            if raw.len() >= 4 && raw[0] % 2 == 0 {
                // Mostly a sound header, so that the entries and indexes get read.
                raw[..4].copy_from_slice(b"CLL\x01");
            }
            let lease = Lease { limit: 3, lease_ms: 100 };
            if let Ok(decision) = lease.decide(Some(&raw), &holder, NOW) {
                if let Some(change) = decision.change {
                    let _ = apply(&mut raw.clone(), &holder, change, NOW);
                }
            }
            let _ = release(&mut raw, &holder, NOW);
        }
    }
}

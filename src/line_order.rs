//! The line of calls waiting on their keys (BLOCK): first come, first served. Pure: the
//! waiting lines (lines.rs) hold the waiters, and blocking.rs their clients and timers.
//!
//! Every waiter has a place, its arrival number, and stands in the line of each of its keys.
//! A waiter may take units only when it is first in every one of its lines, and a call may
//! take units on a key only when no waiter arrived before it there. The oldest waiter is
//! first in all its lines, so crossed waits (one on k1 then k2, another on k2 then k1) never
//! hold each other up.

use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;

/// A waiter's place in the order of arrival: earlier is smaller.
pub type Place = u64;

/// The lines of waiters, one per key.
#[derive(Debug)]
pub struct LineOrder<K> {
    lines: HashMap<K, BTreeSet<Place>>,
    keys_of: HashMap<Place, Vec<K>>,
    next: Place,
}

impl<K: Hash + Eq + Clone> Default for LineOrder<K> {
    fn default() -> Self {
        LineOrder {
            lines: HashMap::new(),
            keys_of: HashMap::new(),
            next: 0,
        }
    }
}

impl<K: Hash + Eq + Clone> LineOrder<K> {
    /// How many are waiting.
    pub fn len(&self) -> usize {
        self.keys_of.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys_of.is_empty()
    }

    /// The first waiter on `key`, if any.
    pub fn first(&self, key: &K) -> Option<Place> {
        self.lines.get(key).and_then(|line| line.first().copied())
    }

    /// Whether a waiter that came before `place` waits on `key`: then a call at `place`
    /// takes nothing from it.
    pub fn held_back(&self, key: &K, place: Place) -> bool {
        self.first(key).is_some_and(|first| first < place)
    }

    /// The place a call arriving now would take.
    pub fn next_place(&self) -> Place {
        self.next
    }

    /// Puts a waiter on `keys` at the end of their lines; returns its place.
    pub fn join(&mut self, keys: Vec<K>) -> Place {
        let place = self.next;
        self.next += 1;
        for key in &keys {
            self.lines.entry(key.clone()).or_default().insert(place);
        }
        self.keys_of.insert(place, keys);
        place
    }

    /// Whether the waiter at `place` is first in every line it stands in: then it may take
    /// its units.
    pub fn is_first(&self, place: Place) -> bool {
        self.keys_of
            .get(&place)
            .is_some_and(|keys| keys.iter().all(|key| self.first(key) == Some(place)))
    }

    /// Takes the waiter at `place` out of its lines. Returns the waiters that this made
    /// first in all their lines, oldest first.
    pub fn leave(&mut self, place: Place) -> Vec<Place> {
        let Some(keys) = self.keys_of.remove(&place) else {
            return Vec::new();
        };
        let mut promoted = Vec::new();
        for key in &keys {
            let Some(line) = self.lines.get_mut(key) else {
                continue;
            };
            let was_first = line.first() == Some(&place);
            line.remove(&place);
            match line.first().copied() {
                None => {
                    self.lines.remove(key);
                }
                Some(next) if was_first && !promoted.contains(&next) => promoted.push(next),
                Some(_) => {}
            }
        }
        promoted.retain(|&next| self.is_first(next));
        promoted.sort_unstable();
        promoted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn waiters_on_one_key_are_first_in_the_order_they_came() {
        let mut order = LineOrder::default();
        let a = order.join(vec!["k"]);
        let b = order.join(vec!["k"]);
        let c = order.join(vec!["k"]);
        assert!(order.is_first(a) && !order.is_first(b));
        assert_eq!(order.leave(a), vec![b]);
        assert_eq!(order.leave(b), vec![c]);
        assert_eq!(order.leave(c), vec![]);
        assert!(order.is_empty());
        assert_eq!(order.first(&"k"), None);
    }

    #[test]
    fn crossed_waits_do_not_hold_each_other_up() {
        let mut order = LineOrder::default();
        let one = order.join(vec!["k1", "k2"]);
        let two = order.join(vec!["k2", "k1"]);
        assert!(order.is_first(one));
        assert!(!order.is_first(two));
        assert_eq!(order.leave(one), vec![two]);
    }

    #[test]
    fn a_waiter_leaving_from_the_middle_promotes_no_one() {
        let mut order = LineOrder::default();
        let _a = order.join(vec!["k"]);
        let b = order.join(vec!["k"]);
        let _c = order.join(vec!["k"]);
        assert_eq!(order.leave(b), vec![]);
        assert_eq!(order.len(), 2);
    }

    #[test]
    fn a_call_is_held_back_only_by_waiters_that_came_before_it() {
        let mut order = LineOrder::default();
        let a = order.join(vec!["k"]);
        assert!(order.held_back(&"k", order.next_place()));
        assert!(!order.held_back(&"k", a));
        assert!(!order.held_back(&"other", order.next_place()));
    }

    /// What a line must be: the waiters on a key, in order of arrival.
    #[derive(Debug, Clone)]
    enum Step {
        Join(Vec<u8>),
        Leave(usize),
    }

    fn steps() -> impl Strategy<Value = Vec<Step>> {
        let join = proptest::collection::btree_set(0u8..5, 1..4)
            .prop_map(|keys| Step::Join(keys.into_iter().collect()));
        let leave = (0usize..64).prop_map(Step::Leave);
        proptest::collection::vec(prop_oneof![join, leave], 0..60)
    }

    proptest! {
        /// Against a model that keeps every waiter in one list in arrival order: a waiter is
        /// first when no earlier waiter shares a key with it; the oldest is always first; and
        /// leaving promotes exactly those that became first.
        #[test]
        fn lines_follow_the_arrival_order(steps in steps()) {
            let mut order = LineOrder::default();
            let mut model: Vec<(Place, Vec<u8>)> = Vec::new();
            let first_in_model = |model: &[(Place, Vec<u8>)], place: Place| {
                let Some(index) = model.iter().position(|(p, _)| *p == place) else {
                    return false;
                };
                let keys = &model[index].1;
                model[..index].iter().all(|(_, earlier)| !earlier.iter().any(|k| keys.contains(k)))
            };
            for step in steps {
                match step {
                    Step::Join(keys) => {
                        let place = order.join(keys.clone());
                        model.push((place, keys));
                    }
                    Step::Leave(pick) if !model.is_empty() => {
                        let (place, _) = model[pick % model.len()].clone();
                        let before: Vec<Place> = model
                            .iter()
                            .map(|(p, _)| *p)
                            .filter(|&p| p != place && first_in_model(&model, p))
                            .collect();
                        let promoted = order.leave(place);
                        model.retain(|(p, _)| *p != place);
                        let mut expected: Vec<Place> = model
                            .iter()
                            .map(|(p, _)| *p)
                            .filter(|&p| first_in_model(&model, p) && !before.contains(&p))
                            .collect();
                        expected.sort_unstable();
                        prop_assert_eq!(promoted, expected);
                    }
                    Step::Leave(_) => {}
                }
                prop_assert_eq!(order.len(), model.len());
                for (place, keys) in &model {
                    prop_assert_eq!(order.is_first(*place), first_in_model(&model, *place));
                    for key in keys {
                        prop_assert!(!order.held_back(key, *place) || !first_in_model(&model, *place));
                    }
                }
                if let Some((oldest, _)) = model.first() {
                    prop_assert!(order.is_first(*oldest));
                }
                for key in 0u8..5 {
                    let expected = model.iter().find(|(_, keys)| keys.contains(&key)).map(|(p, _)| *p);
                    prop_assert_eq!(order.first(&key), expected);
                }
            }
        }
    }
}

//! Deadlines keyed by a small integer, in an indexed tournament tree.
//!
//! Each key has at most one deadline. The keys are the leaves of a complete binary tree whose
//! every inner node holds the earliest (deadline, key) of the two below it, so the root is the
//! earliest deadline of all, read in O(1). Setting, moving or removing a key's deadline rewrites
//! its leaf and the nodes above it, stopping where a node does not change: a deadline that moves
//! leaves no stale entry behind, and no position index has to be kept. Keys are dense small
//! integers (a port number, or a port number offset by a kind); the tree grows to the largest
//! key used. Equal deadlines come out in key order, so the order is fully determined.

use alloc::vec;
use alloc::vec::Vec;

use ethlink_link::Instant;

/// A leaf without a deadline: later than every deadline (no real key is `u32::MAX`).
const EMPTY: (u64, u32) = (u64::MAX, u32::MAX);

/// Deadlines, one per key, earliest first, ties by key.
#[derive(Debug, Clone)]
pub(crate) struct Timers {
    /// Node 1 is the root, node `i` has children `2i` and `2i + 1`; the leaves are nodes
    /// `size..2 * size`, leaf `size + k` holding key `k`'s (deadline in ns, key).
    tree: Vec<(u64, u32)>,
    size: usize,
}

impl Default for Timers {
    fn default() -> Self {
        Timers::with_keys(1)
    }
}

impl Timers {
    /// An empty set of deadlines with room for keys `0..keys` without growing.
    pub(crate) fn with_keys(keys: usize) -> Self {
        let size = keys.max(1).next_power_of_two();
        Timers {
            tree: vec![EMPTY; 2 * size],
            size,
        }
    }

    /// Number of keys with a deadline.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.tree
            .get(self.size..)
            .map_or(0, |l| l.iter().filter(|e| e.1 != EMPTY.1).count())
    }

    /// The deadline of `key`, if it has one.
    pub(crate) fn get(&self, key: usize) -> Option<Instant> {
        let &(t, k) = self.tree.get(self.size.checked_add(key)?)?;
        (k != EMPTY.1).then_some(Instant::from_nanos(t))
    }

    /// The earliest deadline and its key.
    pub(crate) fn peek(&self) -> Option<(Instant, usize)> {
        let &(t, k) = self.tree.get(1)?;
        (k != EMPTY.1).then_some((Instant::from_nanos(t), k as usize))
    }

    /// Writes leaf `key` and the nodes above it that change.
    fn put(&mut self, key: usize, v: (u64, u32)) {
        let mut i = self.size + key;
        match self.tree.get_mut(i) {
            Some(leaf) => *leaf = v,
            None => return,
        }
        while i > 1 {
            let sibling = self.tree.get(i ^ 1).copied().unwrap_or(EMPTY);
            let here = self.tree.get(i).copied().unwrap_or(EMPTY);
            let least = here.min(sibling);
            i /= 2;
            match self.tree.get_mut(i) {
                Some(n) if *n != least => *n = least,
                // Unchanged here, so unchanged above.
                _ => return,
            }
        }
    }

    /// Makes room for keys up to `key`.
    fn grow(&mut self, key: usize) {
        let size = (key + 1).next_power_of_two();
        let mut tree = vec![EMPTY; 2 * size];
        if let (Some(to), Some(from)) = (
            tree.get_mut(size..size + self.size),
            self.tree.get(self.size..),
        ) {
            to.copy_from_slice(from);
        }
        for i in (1..size).rev() {
            let l = tree.get(2 * i).copied().unwrap_or(EMPTY);
            let r = tree.get(2 * i + 1).copied().unwrap_or(EMPTY);
            if let Some(n) = tree.get_mut(i) {
                *n = l.min(r);
            }
        }
        self.tree = tree;
        self.size = size;
    }

    /// Gives `key` the deadline `t`, whether it had one (moved in place) or not. A key beyond
    /// `u32::MAX - 1` is ignored.
    pub(crate) fn set(&mut self, key: usize, t: Instant) {
        let Ok(k) = u32::try_from(key) else { return };
        if k == EMPTY.1 {
            return;
        }
        if key >= self.size {
            self.grow(key);
        }
        self.put(key, (t.as_nanos(), k));
    }

    /// Gives `key` the deadline `t` unless it has one no later: the deadline only moves earlier.
    pub(crate) fn lower(&mut self, key: usize, t: Instant) {
        if self.get(key).is_none_or(|d| t < d) {
            self.set(key, t);
        }
    }

    /// Removes the deadline of `key` and returns it.
    pub(crate) fn remove(&mut self, key: usize) -> Option<Instant> {
        let t = self.get(key)?;
        self.put(key, EMPTY);
        Some(t)
    }

    /// Removes and returns the earliest deadline and its key if it is at or before `now`.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<(Instant, usize)> {
        let (t, k) = self.peek()?;
        if t > now {
            return None;
        }
        self.remove(k);
        Some((t, k))
    }
}

#[cfg(test)]
mod tests {
    use super::Timers;
    use alloc::collections::BTreeMap;
    use alloc::vec::Vec;
    use ethlink_link::Instant;

    fn at(ns: u64) -> Instant {
        Instant::from_nanos(ns)
    }

    #[test]
    fn earliest_first_ties_by_key() {
        let mut t = Timers::with_keys(4);
        t.set(3, at(10));
        t.set(1, at(10));
        t.set(2, at(5));
        assert_eq!(t.peek(), Some((at(5), 2)));
        assert_eq!(t.pop_due(at(4)), None);
        assert_eq!(t.pop_due(at(10)), Some((at(5), 2)));
        assert_eq!(t.pop_due(at(10)), Some((at(10), 1)));
        assert_eq!(t.pop_due(at(10)), Some((at(10), 3)));
        assert_eq!(t.pop_due(at(u64::MAX)), None);
    }

    #[test]
    fn a_moved_deadline_leaves_no_stale_entry() {
        let mut t = Timers::default();
        t.set(7, at(100));
        t.set(7, at(50));
        t.set(7, at(200));
        assert_eq!(t.len(), 1);
        assert_eq!(t.get(7), Some(at(200)));
        assert_eq!(t.pop_due(at(199)), None);
        t.lower(7, at(300));
        assert_eq!(t.get(7), Some(at(200)));
        t.lower(7, at(20));
        assert_eq!(t.get(7), Some(at(20)));
        assert_eq!(t.remove(7), Some(at(20)));
        assert_eq!(t.remove(7), None);
        assert_eq!(t.peek(), None);
        // A key past the tree grows it, keeping what it holds; one that cannot be stored is
        // ignored. The latest instant is a deadline like any other.
        t.set(3, at(9));
        t.set(1000, at(1));
        assert_eq!((t.get(1000), t.get(3)), (Some(at(1)), Some(at(9))));
        assert_eq!(t.peek(), Some((at(1), 1000)));
        t.set(u32::MAX as usize, at(1));
        assert_eq!(t.len(), 2);
        t.set(5, at(u64::MAX));
        assert_eq!(t.get(5), Some(at(u64::MAX)));
        assert_eq!(t.len(), 3);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Set(usize, u16),
        Lower(usize, u16),
        Remove(usize),
        Pop(u16),
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            (0usize..40, any::<u16>()).prop_map(|(k, t)| Op::Set(k, t)),
            (0usize..40, any::<u16>()).prop_map(|(k, t)| Op::Lower(k, t)),
            (0usize..40).prop_map(Op::Remove),
            any::<u16>().prop_map(Op::Pop),
        ]
    }

    proptest::proptest! {
        /// The tree agrees with a plain map of key to deadline after any sequence of operations,
        /// and pops due deadlines in (deadline, key) order.
        #[test]
        fn agrees_with_a_map(ops in proptest::collection::vec(op(), 0..200)) {
            let mut t = Timers::with_keys(8);
            let mut m: BTreeMap<usize, u16> = BTreeMap::new();
            for o in ops {
                match o {
                    Op::Set(k, d) => {
                        t.set(k, at(u64::from(d)));
                        m.insert(k, d);
                    }
                    Op::Lower(k, d) => {
                        t.lower(k, at(u64::from(d)));
                        let e = m.entry(k).or_insert(d);
                        *e = (*e).min(d);
                    }
                    Op::Remove(k) => {
                        proptest::prop_assert_eq!(
                            t.remove(k),
                            m.remove(&k).map(|d| at(u64::from(d)))
                        );
                    }
                    Op::Pop(now) => {
                        let mut want: Vec<(Instant, usize)> = m
                            .iter()
                            .filter(|&(_, &d)| d <= now)
                            .map(|(&k, &d)| (at(u64::from(d)), k))
                            .collect();
                        want.sort_unstable();
                        let mut got = Vec::new();
                        while let Some(x) = t.pop_due(at(u64::from(now))) {
                            got.push(x);
                        }
                        for &(_, k) in &want {
                            m.remove(&k);
                        }
                        proptest::prop_assert_eq!(got, want);
                    }
                }
                proptest::prop_assert_eq!(t.len(), m.len());
                let min = m.iter().map(|(&k, &d)| (at(u64::from(d)), k)).min();
                proptest::prop_assert_eq!(t.peek(), min);
                for k in 0..40 {
                    proptest::prop_assert_eq!(t.get(k), m.get(&k).map(|&d| at(u64::from(d))));
                }
            }
        }
    }
}

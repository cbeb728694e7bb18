//! Deadlines keyed by a small integer, in an indexed binary min-heap.
//!
//! Each key has at most one deadline. Setting a key's deadline again moves its entry in place
//! (up or down the heap), so a deadline that changes leaves no stale entry behind: the earliest
//! deadline is read in O(1), and popping the due ones touches only those. Keys are dense small
//! integers (a port number, or a port number offset by a kind); the index grows to the largest
//! key used. Equal deadlines come out in key order, so the order is fully determined.

use alloc::vec::Vec;

/// Position of a key that has no deadline.
const ABSENT: u32 = u32::MAX;

/// An indexed min-heap of deadlines of type `T`, one per key, earliest first, ties by key.
#[derive(Debug, Clone)]
pub(crate) struct Timers<T> {
    /// The heap: (deadline, key), the earliest at the root.
    heap: Vec<(T, u32)>,
    /// Per key: its index in `heap`, or [`ABSENT`].
    pos: Vec<u32>,
}

impl<T: Ord + Copy> Default for Timers<T> {
    fn default() -> Self {
        Timers {
            heap: Vec::new(),
            pos: Vec::new(),
        }
    }
}

impl<T: Ord + Copy> Timers<T> {
    /// An empty set of deadlines with room for keys `0..keys` without growing.
    pub(crate) fn with_keys(keys: usize) -> Self {
        Timers {
            heap: Vec::new(),
            pos: alloc::vec![ABSENT; keys],
        }
    }

    /// Number of keys with a deadline.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }

    /// The deadline of `key`, if it has one.
    pub(crate) fn get(&self, key: usize) -> Option<T> {
        let i = *self.pos.get(key)?;
        self.heap.get(i as usize).map(|&(t, _)| t)
    }

    /// The earliest deadline and its key.
    pub(crate) fn peek(&self) -> Option<(T, usize)> {
        self.heap.first().map(|&(t, k)| (t, k as usize))
    }

    /// Gives `key` the deadline `t`, whether it had one (moved in place) or not. A key beyond
    /// `u32::MAX - 1` is ignored.
    pub(crate) fn set(&mut self, key: usize, t: T) {
        let Ok(k) = u32::try_from(key) else { return };
        if k == ABSENT {
            return;
        }
        if self.pos.len() <= key {
            self.pos.resize(key + 1, ABSENT);
        }
        let Some(&p) = self.pos.get(key) else { return };
        if p == ABSENT {
            let i = self.heap.len();
            self.heap.push((t, k));
            self.place(i);
            self.up(i);
        } else if let Some(e) = self.heap.get_mut(p as usize) {
            let old = e.0;
            e.0 = t;
            if t < old {
                self.up(p as usize);
            } else {
                self.down(p as usize);
            }
        }
    }

    /// Gives `key` the deadline `t` unless it has one no later: the deadline only moves earlier.
    pub(crate) fn lower(&mut self, key: usize, t: T) {
        if self.get(key).is_none_or(|d| t < d) {
            self.set(key, t);
        }
    }

    /// Removes the deadline of `key` and returns it.
    pub(crate) fn remove(&mut self, key: usize) -> Option<T> {
        let p = *self.pos.get(key)?;
        if p == ABSENT {
            return None;
        }
        let p = p as usize;
        let last = self.heap.len().checked_sub(1)?;
        self.heap.swap(p, last);
        let (t, _) = self.heap.pop()?;
        if let Some(x) = self.pos.get_mut(key) {
            *x = ABSENT;
        }
        if p < self.heap.len() {
            self.place(p);
            // The moved entry may belong above or below its new place.
            self.up(p);
            self.down(p);
        }
        Some(t)
    }

    /// Removes and returns the earliest deadline and its key if it is at or before `now`.
    pub(crate) fn pop_due(&mut self, now: T) -> Option<(T, usize)> {
        let (t, k) = self.peek()?;
        if t > now {
            return None;
        }
        self.remove(k);
        Some((t, k))
    }

    /// Records in `pos` where the entry at heap index `i` is.
    fn place(&mut self, i: usize) {
        if let Some(&(_, k)) = self.heap.get(i)
            && let Some(x) = self.pos.get_mut(k as usize)
        {
            *x = u32::try_from(i).unwrap_or(ABSENT);
        }
    }

    fn less(&self, a: usize, b: usize) -> bool {
        match (self.heap.get(a), self.heap.get(b)) {
            (Some(x), Some(y)) => x < y,
            _ => false,
        }
    }

    fn up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if !self.less(i, parent) {
                break;
            }
            self.heap.swap(i, parent);
            self.place(i);
            self.place(parent);
            i = parent;
        }
    }

    fn down(&mut self, mut i: usize) {
        loop {
            let l = 2 * i + 1;
            let r = l + 1;
            let mut m = i;
            if self.less(l, m) {
                m = l;
            }
            if self.less(r, m) {
                m = r;
            }
            if m == i {
                break;
            }
            self.heap.swap(i, m);
            self.place(i);
            self.place(m);
            i = m;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Timers;
    use alloc::collections::BTreeMap;
    use alloc::vec::Vec;

    #[test]
    fn earliest_first_ties_by_key() {
        let mut t = Timers::with_keys(4);
        t.set(3, 10u64);
        t.set(1, 10);
        t.set(2, 5);
        assert_eq!(t.peek(), Some((5, 2)));
        assert_eq!(t.pop_due(4), None);
        assert_eq!(t.pop_due(10), Some((5, 2)));
        assert_eq!(t.pop_due(10), Some((10, 1)));
        assert_eq!(t.pop_due(10), Some((10, 3)));
        assert_eq!(t.pop_due(u64::MAX), None);
    }

    #[test]
    fn a_moved_deadline_leaves_no_stale_entry() {
        let mut t = Timers::default();
        t.set(7, 100u64);
        t.set(7, 50);
        t.set(7, 200);
        assert_eq!(t.len(), 1);
        assert_eq!(t.get(7), Some(200));
        assert_eq!(t.pop_due(199), None);
        t.lower(7, 300);
        assert_eq!(t.get(7), Some(200));
        t.lower(7, 20);
        assert_eq!(t.get(7), Some(20));
        assert_eq!(t.remove(7), Some(20));
        assert_eq!(t.remove(7), None);
        assert_eq!(t.peek(), None);
        // A key past the index grows it; one that cannot be stored is ignored.
        t.set(1000, 1);
        assert_eq!(t.get(1000), Some(1));
        t.set(u32::MAX as usize, 1);
        assert_eq!(t.len(), 1);
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
        /// The heap agrees with a plain map of key to deadline after any sequence of operations,
        /// and pops due deadlines in (deadline, key) order.
        #[test]
        fn agrees_with_a_map(ops in proptest::collection::vec(op(), 0..200)) {
            let mut t = Timers::with_keys(8);
            let mut m: BTreeMap<usize, u16> = BTreeMap::new();
            for o in ops {
                match o {
                    Op::Set(k, d) => {
                        t.set(k, d);
                        m.insert(k, d);
                    }
                    Op::Lower(k, d) => {
                        t.lower(k, d);
                        let e = m.entry(k).or_insert(d);
                        *e = (*e).min(d);
                    }
                    Op::Remove(k) => {
                        proptest::prop_assert_eq!(t.remove(k), m.remove(&k));
                    }
                    Op::Pop(now) => {
                        let mut want: Vec<(u16, usize)> =
                            m.iter().filter(|&(_, &d)| d <= now).map(|(&k, &d)| (d, k)).collect();
                        want.sort_unstable();
                        let mut got = Vec::new();
                        while let Some(x) = t.pop_due(now) {
                            got.push(x);
                        }
                        for &(_, k) in &want {
                            m.remove(&k);
                        }
                        proptest::prop_assert_eq!(got, want);
                    }
                }
                proptest::prop_assert_eq!(t.len(), m.len());
                let min = m.iter().map(|(&k, &d)| (d, k)).min();
                proptest::prop_assert_eq!(t.peek(), min);
                for k in 0..40 {
                    proptest::prop_assert_eq!(t.get(k), m.get(&k).copied());
                }
            }
        }
    }
}

//! The fabric's event queue: events by time, in insertion order among equal times.
//!
//! A 4-ary min-heap keyed by (time, sequence number): half as deep as a binary heap, with the
//! four children of a node side by side in memory, and sifted with a hole (each entry on the
//! path is moved once, not swapped). Sequence numbers are given by the queue, so two events of
//! the same time come out in the order they were pushed, whatever the heap's shape: the order is
//! fully determined.
//!
//! Beside it, each node's one deadline lives in a small indexed heap of its own
//! ([`EventQueue::arm`]): a deadline that moves is moved in place, where a queue of events
//! would keep the superseded one until its time, most of the heap's entries in a busy fabric.
//! Both heaps draw sequence numbers from one counter, and [`EventQueue::next`] takes the
//! earlier head of the two: events and deadlines come out in one order of (time, push order).

/// One queued event.
#[derive(Debug, Clone, Copy)]
struct Slot<E> {
    /// Time and sequence number as one number: the time in the high 64 bits, so that one
    /// comparison orders by time, then push order.
    key: u128,
    ev: E,
}

impl<E> Slot<E> {
    fn key(&self) -> u128 {
        self.key
    }

    fn t(&self) -> u64 {
        (self.key >> 64) as u64
    }
}

/// Events `E` and node deadlines by time, earliest first, ties in push order.
#[derive(Debug, Clone)]
pub(crate) struct EventQueue<E> {
    heap: Vec<Slot<E>>,
    seq: u64,
    timers: Timers,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: Vec::new(),
            seq: 0,
            timers: Timers::default(),
        }
    }
}

/// What [`EventQueue::next`] took: an event, or the deadline of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next<E> {
    /// An event pushed with [`EventQueue::push`].
    Event(E),
    /// The deadline of the node, armed with [`EventQueue::arm`].
    Deadline(u32),
}

/// At most one deadline per node, in a binary min-heap that knows where each node's entry is,
/// so that a deadline moves in place.
#[derive(Debug, Clone, Default)]
struct Timers {
    /// (key as in [`Slot`], node).
    heap: Vec<(u128, u32)>,
    /// Per node: its entry's index in `heap` plus one; 0 when it has none.
    pos: Vec<u32>,
}

impl Timers {
    fn place(&mut self, i: usize, e: (u128, u32)) {
        if let Some(x) = self.heap.get_mut(i) {
            *x = e;
        }
        if let Some(p) = self.pos.get_mut(e.1 as usize) {
            *p = i as u32 + 1;
        }
    }

    /// Moves the entry at `i` up or down to its place.
    fn sift(&mut self, mut i: usize) {
        let Some(&e) = self.heap.get(i) else {
            return;
        };
        while i > 0 {
            let parent = (i - 1) / 2;
            let Some(&p) = self.heap.get(parent) else {
                break;
            };
            if p.0 <= e.0 {
                break;
            }
            self.place(i, p);
            i = parent;
        }
        loop {
            let l = 2 * i + 1;
            let Some(&a) = self.heap.get(l) else {
                break;
            };
            let (c, ce) = match self.heap.get(l + 1) {
                Some(&b) if b.0 < a.0 => (l + 1, b),
                _ => (l, a),
            };
            if e.0 <= ce.0 {
                break;
            }
            self.place(i, ce);
            i = c;
        }
        self.place(i, e);
    }

    /// Sets `node`'s deadline key, replacing the one it had.
    fn set(&mut self, node: u32, key: u128) {
        let n = node as usize;
        if self.pos.len() <= n {
            self.pos.resize(n + 1, 0);
        }
        let i = match self.pos.get(n).copied().unwrap_or(0) {
            0 => {
                self.heap.push((key, node));
                self.heap.len() - 1
            }
            p => {
                let i = p as usize - 1;
                if let Some(x) = self.heap.get_mut(i) {
                    x.0 = key;
                }
                i
            }
        };
        self.sift(i);
    }

    fn first_key(&self) -> Option<u128> {
        self.heap.first().map(|e| e.0)
    }

    fn pop(&mut self) -> Option<(u128, u32)> {
        let last = self.heap.pop()?;
        if let Some(p) = self.pos.get_mut(last.1 as usize) {
            *p = 0;
        }
        let Some(&root) = self.heap.first() else {
            return Some(last);
        };
        if let Some(p) = self.pos.get_mut(root.1 as usize) {
            *p = 0;
        }
        self.place(0, last);
        self.sift(0);
        Some(root)
    }
}

/// Children per node.
const ARITY: usize = 4;

impl<E: Copy> EventQueue<E> {
    /// Queues `ev` at time `t`, after every event already queued for `t`.
    pub(crate) fn push(&mut self, t: u64, ev: E) {
        self.seq += 1;
        let new = Slot {
            key: u128::from(t) << 64 | u128::from(self.seq),
            ev,
        };
        // Sift up from the end with a hole.
        let mut i = self.heap.len();
        self.heap.push(new);
        while i > 0 {
            let parent = (i - 1) / ARITY;
            let Some(&p) = self.heap.get(parent) else {
                break;
            };
            if p.key() <= new.key() {
                break;
            }
            if let Some(x) = self.heap.get_mut(i) {
                *x = p;
            }
            i = parent;
        }
        if let Some(x) = self.heap.get_mut(i) {
            *x = new;
        }
    }

    /// Takes the earliest event and its time.
    pub(crate) fn pop(&mut self) -> Option<(u64, E)> {
        let last = self.heap.pop()?;
        let Some(&root) = self.heap.first() else {
            return Some((last.t(), last.ev));
        };
        // The last entry goes down from the root's place with a hole.
        let n = self.heap.len();
        let mut i = 0;
        loop {
            let first = ARITY * i + 1;
            if first >= n {
                break;
            }
            let (best, best_key) = match self.heap.get(first..first + ARITY) {
                // Four children: the least of them by a tournament of selects rather than
                // branches, which the ever-changing order of the keys would mispredict.
                Some([a, b, c, d]) => {
                    let (ka, kb, kc, kd) = (a.key(), b.key(), c.key(), d.key());
                    let ab = usize::from(kb < ka);
                    let kab = if kb < ka { kb } else { ka };
                    let cd = 2 + usize::from(kd < kc);
                    let kcd = if kd < kc { kd } else { kc };
                    if kcd < kab {
                        (first + cd, kcd)
                    } else {
                        (first + ab, kab)
                    }
                }
                _ => {
                    let end = (first + ARITY).min(n);
                    let mut best = first;
                    let mut best_key = self.heap.get(first).map_or(u128::MAX, Slot::key);
                    for c in first + 1..end {
                        if let Some(k) = self.heap.get(c).map(Slot::key)
                            && k < best_key
                        {
                            best = c;
                            best_key = k;
                        }
                    }
                    (best, best_key)
                }
            };
            if last.key() <= best_key {
                break;
            }
            if let Some(&b) = self.heap.get(best)
                && let Some(x) = self.heap.get_mut(i)
            {
                *x = b;
            }
            i = best;
        }
        if let Some(x) = self.heap.get_mut(i) {
            *x = last;
        }
        Some((root.t(), root.ev))
    }

    /// Sets node `node`'s deadline to time `t`, replacing the one it had: it comes out of
    /// [`EventQueue::next`] after every event and deadline already queued for `t`.
    pub(crate) fn arm(&mut self, node: u32, t: u64) {
        self.seq += 1;
        self.timers
            .set(node, u128::from(t) << 64 | u128::from(self.seq));
    }

    /// Takes the earliest event or deadline and its time.
    pub(crate) fn next(&mut self) -> Option<(u64, Next<E>)> {
        match (self.heap.first().map(Slot::key), self.timers.first_key()) {
            (Some(e), Some(d)) if d < e => self.next_deadline(),
            (None, Some(_)) => self.next_deadline(),
            _ => self.pop().map(|(t, ev)| (t, Next::Event(ev))),
        }
    }

    /// When the next event or deadline is due, without taking it.
    pub(crate) fn peek_time(&self) -> Option<u64> {
        let e = self.heap.first().map(Slot::key);
        let d = self.timers.first_key();
        match (e, d) {
            (Some(e), Some(d)) => Some((e.min(d) >> 64) as u64),
            (Some(k), None) | (None, Some(k)) => Some((k >> 64) as u64),
            (None, None) => None,
        }
    }

    fn next_deadline(&mut self) -> Option<(u64, Next<E>)> {
        self.timers
            .pop()
            .map(|(key, node)| ((key >> 64) as u64, Next::Deadline(node)))
    }

    /// Events and deadlines queued.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.heap.len() + self.timers.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::{EventQueue, Next};
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    proptest::proptest! {
        /// Events come out as from a binary heap ordered by (time, push order), through any
        /// interleaving of pushes and pops.
        #[test]
        fn agrees_with_a_binary_heap(ops in proptest::collection::vec((0u8..3, 0u64..50), 0..400)) {
            let mut q = EventQueue::default();
            let mut h = BinaryHeap::new();
            let mut seq = 0u64;
            for (op, t) in ops {
                if op < 2 {
                    seq += 1;
                    q.push(t, seq);
                    h.push(Reverse((t, seq)));
                } else {
                    proptest::prop_assert_eq!(q.pop(), h.pop().map(|Reverse(x)| x));
                }
                proptest::prop_assert_eq!(q.len(), h.len());
            }
            while let Some(Reverse(x)) = h.pop() {
                proptest::prop_assert_eq!(q.pop(), Some(x));
            }
            proptest::prop_assert_eq!(q.pop(), None);
        }
    }

    proptest::proptest! {
        /// Events and deadlines come out in (time, push order) as from a list searched for its
        /// least, a node's deadline replaced by each `arm`, through any interleaving.
        #[test]
        fn deadlines_move_in_place(ops in proptest::collection::vec((0u8..4, 0u32..6, 0u64..40), 0..400)) {
            let mut q: EventQueue<u32> = EventQueue::default();
            // The model: (time, push order, what), what = event id or 1000 + node.
            let mut m: Vec<(u64, u64, u32)> = Vec::new();
            let mut seq = 0u64;
            for (op, x, t) in ops {
                match op {
                    0 => {
                        seq += 1;
                        q.push(t, seq as u32);
                        m.push((t, seq, seq as u32));
                    }
                    1 | 2 => {
                        seq += 1;
                        q.arm(x, t);
                        m.retain(|e| e.2 != 1000 + x);
                        m.push((t, seq, 1000 + x));
                    }
                    _ => {
                        let want = m.iter().copied().min();
                        if let Some(w) = want {
                            m.retain(|e| *e != w);
                        }
                        let got = q.next().map(|(t, n)| match n {
                            Next::Event(e) => (t, e),
                            Next::Deadline(node) => (t, 1000 + node),
                        });
                        proptest::prop_assert_eq!(got, want.map(|(t, _, w)| (t, w)));
                    }
                }
                proptest::prop_assert_eq!(q.len(), m.len());
            }
        }
    }

    #[test]
    fn a_moved_deadline_leaves_nothing_behind() {
        let mut q: EventQueue<u32> = EventQueue::default();
        q.arm(3, 50);
        q.arm(3, 20);
        q.push(20, 7);
        q.arm(4, 20);
        q.arm(3, 30);
        assert_eq!(q.next(), Some((20, Next::Event(7))));
        assert_eq!(q.next(), Some((20, Next::Deadline(4))));
        assert_eq!(q.next(), Some((30, Next::Deadline(3))));
        assert_eq!(q.next(), None);
    }

    #[test]
    fn equal_times_keep_push_order() {
        let mut q = EventQueue::default();
        for i in 0..100u32 {
            q.push(5, i);
        }
        q.push(1, 1000);
        assert_eq!(q.pop(), Some((1, 1000)));
        for i in 0..100u32 {
            assert_eq!(q.pop(), Some((5, i)));
        }
    }
}

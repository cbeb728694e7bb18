//! The fabric's event queue: events by time, in insertion order among equal times.
//!
//! A 4-ary min-heap keyed by (time, sequence number): half as deep as a binary heap, with the
//! four children of a node side by side in memory, and sifted with a hole (each entry on the
//! path is moved once, not swapped). Sequence numbers are given by the queue, so two events of
//! the same time come out in the order they were pushed, whatever the heap's shape: the order is
//! fully determined.

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

/// Events `E` by time, earliest first, ties in push order.
#[derive(Debug, Clone)]
pub(crate) struct EventQueue<E> {
    heap: Vec<Slot<E>>,
    seq: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: Vec::new(),
            seq: 0,
        }
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

    /// Events queued.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::EventQueue;
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

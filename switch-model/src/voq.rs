//! The virtual output queues (switch.md SW-4-3): one FIFO per input port, VC and egress port,
//! kept only while it holds a frame.
//!
//! The non-empty queues live in a slab, found by (egress, VC, input) through an index (a table for
//! a switch of up to 2^16 such keys, a hash beyond), and
//! each (egress, VC) keeps a bitmap of the inputs with a frame waiting, which its round-robin
//! (SW-5-1) scans a word at a time. Memory follows the frames held, plus one bit per input for
//! every (egress, VC): 512 KiB for 1024 ports and 4 VCs.

use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;
use core::hash::{BuildHasherDefault, Hasher};

use ethlink_link::{Instant, Layout, Outgoing, Release, SharedFrame};
use hashbrown::HashMap;

/// The payload of a queued frame: network header and transactions.
#[derive(Debug)]
pub(crate) enum Payload {
    /// Laid out for the egress links' frames in a buffer of the switch's own: the one copy from
    /// the input link.
    Laid(Outgoing),
    /// Still in the frame it arrived in, `len` bytes at `at`, shared with whoever else holds
    /// that frame (its sender's replay buffer, until acknowledged): at the egress the switch
    /// takes the buffer over if it is the last holder and the payload sits where the egress
    /// link's frames put theirs, and copies the payload otherwise.
    Held {
        frame: SharedFrame,
        at: usize,
        len: usize,
    },
}

impl Payload {
    /// The payload's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Payload::Laid(o) => o.payload(),
            Payload::Held { frame, at, len } => {
                frame.as_bytes().get(*at..*at + *len).unwrap_or(&[])
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Payload::Laid(o) => o.payload().len(),
            Payload::Held { len, .. } => *len,
        }
    }

    /// The payload laid out for a link of `layout`: in place when it can be, else copied into a
    /// buffer from `pool`.
    pub(crate) fn into_outgoing(self, layout: Layout, pool: &mut Vec<Vec<u8>>) -> Outgoing {
        match self {
            Payload::Laid(o) => o,
            Payload::Held { frame, at, len } => {
                // The same bytes, in the frame's buffer or a copy: what their writer vouched for
                // goes on with them.
                let provenance = frame.provenance();
                let mut o = match frame.into_buffer() {
                    Ok(buf) => match layout.in_place(buf, at, len) {
                        Ok(o) => o,
                        Err(buf) => {
                            let b = pool.pop().unwrap_or_default();
                            let o = layout.outgoing(b, buf.get(at..at + len).unwrap_or(&[]));
                            pool.push(buf);
                            o
                        }
                    },
                    Err(frame) => {
                        let b = pool.pop().unwrap_or_default();
                        layout.outgoing(b, frame.as_bytes().get(at..at + len).unwrap_or(&[]))
                    }
                };
                if let Some(p) = provenance {
                    o.vouch(p);
                }
                o
            }
        }
    }
}

/// A frame waiting in a queue.
#[derive(Debug)]
pub(crate) struct Queued {
    /// The payload.
    pub(crate) payload: Payload,
    /// Its credits in its input link's buffer; `None` while the frame is cut through and its
    /// input link has not accepted it yet (switch.md §6).
    pub(crate) release: Option<Release>,
    /// When it may be handed to its egress link (SW-6-1).
    pub(crate) ready: Instant,
    /// When its input link delivered it (its last byte arrived): the start of its residence
    /// (SW-4-6).
    pub(crate) arrived: Instant,
}

/// Hashes the packed (egress, VC, input) key: a multiply and a fold, so that keys that differ
/// only in their high bits still spread over the table.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        let h = self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^ (h >> 29)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x100_0000_01B3);
        }
    }

    fn write_u32(&mut self, k: u32) {
        self.0 = u64::from(k);
    }
}

/// The queues of one switch, of frames `T`.
#[derive(Debug)]
pub(crate) struct Voqs<T> {
    ports: usize,
    vcs: usize,
    /// 64-bit words per (egress, VC) bitmap.
    words: usize,
    /// Per `egress * vcs + vc`, `words` words: bit `i` is set while input `i` has a frame
    /// waiting for that egress port and VC.
    active: Vec<u64>,
    /// (egress, VC, input) packed by [`Voqs::key`] to the queue's slot in `slab`.
    index: Index,
    /// The queues; a slot whose queue emptied is reused.
    slab: Vec<VecDeque<T>>,
    free: Vec<u32>,
    len: usize,
    /// Per `egress * vcs + vc`: a time before which none of its queue heads is ready, as the
    /// caller last found them ([`Voqs::set_quiet`]); back to `Instant::ZERO`, unknown, whenever
    /// a head of that egress and VC changes.
    quiet: Vec<Instant>,
}

/// Keys (at most [`DENSE_MAX`]) a switch indexes with a plain table instead of a hash: a
/// 64-port switch of 4 VCs takes 64 KiB.
const DENSE_MAX: usize = 1 << 16;

/// No queue at this key, in a dense index.
const NO_SLOT: u32 = u32::MAX;

/// Where the queue of a key is: a table over every key for a switch of few ports, a hash of the
/// keys in use for a large one.
#[derive(Debug)]
enum Index {
    Dense(Vec<u32>),
    Hashed(HashMap<u32, u32, BuildHasherDefault<KeyHasher>>),
}

impl Index {
    fn new(keys: usize) -> Self {
        if keys <= DENSE_MAX {
            Index::Dense(vec![NO_SLOT; keys])
        } else {
            Index::Hashed(HashMap::default())
        }
    }

    fn get(&self, key: u32) -> Option<u32> {
        match self {
            Index::Dense(t) => t.get(key as usize).copied().filter(|&s| s != NO_SLOT),
            Index::Hashed(h) => h.get(&key).copied(),
        }
    }

    fn insert(&mut self, key: u32, slot: u32) {
        match self {
            Index::Dense(t) => {
                if let Some(x) = t.get_mut(key as usize) {
                    *x = slot;
                }
            }
            Index::Hashed(h) => {
                h.insert(key, slot);
            }
        }
    }

    fn remove(&mut self, key: u32) {
        match self {
            Index::Dense(t) => {
                if let Some(x) = t.get_mut(key as usize) {
                    *x = NO_SLOT;
                }
            }
            Index::Hashed(h) => {
                h.remove(&key);
            }
        }
    }
}

impl<T> Voqs<T> {
    pub(crate) fn new(ports: usize, vcs: usize) -> Self {
        let words = ports.div_ceil(64);
        Voqs {
            ports,
            vcs,
            words,
            active: vec![0; ports * vcs * words],
            index: Index::new(ports.saturating_mul(vcs).saturating_mul(ports)),
            slab: Vec::new(),
            free: Vec::new(),
            len: 0,
            quiet: vec![Instant::ZERO; ports * vcs],
        }
    }

    /// The time before which no queue head of egress `e` and VC `v` is ready, as last set by
    /// [`Voqs::set_quiet`] with the heads unchanged since; `Instant::ZERO` when unknown.
    pub(crate) fn quiet_until(&self, e: usize, v: usize) -> Instant {
        self.quiet
            .get(e * self.vcs + v)
            .copied()
            .unwrap_or(Instant::ZERO)
    }

    /// Records that no queue head of egress `e` and VC `v` is ready before `t`: the earliest
    /// time at which one is, found by looking at every head.
    pub(crate) fn set_quiet(&mut self, e: usize, v: usize, t: Instant) {
        if let Some(q) = self.quiet.get_mut(e * self.vcs + v) {
            *q = t;
        }
    }

    /// A queue head of egress `e` and VC `v` changed: what was known of them no longer holds.
    fn head_changed(&mut self, e: usize, v: usize) {
        if let Some(q) = self.quiet.get_mut(e * self.vcs + v) {
            *q = Instant::ZERO;
        }
    }

    /// Frames waiting in every queue.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn key(&self, e: usize, v: usize, i: usize) -> u32 {
        u32::try_from((e * self.vcs + v) * self.ports + i).unwrap_or(u32::MAX)
    }

    fn bitmap(&self, e: usize, v: usize) -> &[u64] {
        let at = (e * self.vcs + v) * self.words;
        self.active.get(at..at + self.words).unwrap_or(&[])
    }

    fn set_bit(&mut self, e: usize, v: usize, i: usize, on: bool) {
        let at = (e * self.vcs + v) * self.words + i / 64;
        if let Some(w) = self.active.get_mut(at) {
            if on {
                *w |= 1 << (i % 64);
            } else {
                *w &= !(1 << (i % 64));
            }
        }
    }

    /// The first input at or after `from` (wrapping past the last port) with a frame waiting
    /// for egress `e` on VC `v`; `None` when there is none.
    pub(crate) fn next_active(&self, e: usize, v: usize, from: usize) -> Option<usize> {
        let map = self.bitmap(e, v);
        let from = if from < self.ports { from } else { 0 };
        let start = from / 64;
        // The word of `from`, masked to its bits at or after `from`, then the words after it,
        // then from the first word round to the word of `from` again (its bits before `from`).
        let first = map.get(start).copied().unwrap_or(0) & (u64::MAX << (from % 64));
        if first != 0 {
            return Some(start * 64 + first.trailing_zeros() as usize);
        }
        for (w, &bits) in map.iter().enumerate().skip(start + 1) {
            if bits != 0 {
                return Some(w * 64 + bits.trailing_zeros() as usize);
            }
        }
        for (w, &bits) in map.iter().enumerate().take(start + 1) {
            if bits != 0 {
                return Some(w * 64 + bits.trailing_zeros() as usize);
            }
        }
        None
    }

    /// The inputs with a frame waiting for egress `e` on VC `v`, lowest first, visited from
    /// `from` round the ports once: `f` is called with each until it returns `false`.
    pub(crate) fn round<F: FnMut(usize) -> bool>(&self, e: usize, v: usize, from: usize, mut f: F) {
        let Some(first) = self.next_active(e, v, from) else {
            return;
        };
        let mut i = first;
        loop {
            if !f(i) {
                return;
            }
            match self.next_active(e, v, i + 1) {
                Some(n) if n != first => i = n,
                _ => return,
            }
        }
    }

    /// The inputs with a frame waiting for egress `e` on VC `v`, lowest first, into `out`.
    pub(crate) fn inputs(&self, e: usize, v: usize, out: &mut Vec<u16>) {
        out.clear();
        for (w, &bits) in self.bitmap(e, v).iter().enumerate() {
            let mut b = bits;
            while b != 0 {
                out.push(u16::try_from(w * 64 + b.trailing_zeros() as usize).unwrap_or(u16::MAX));
                b &= b - 1;
            }
        }
    }

    fn queue(&self, e: usize, v: usize, i: usize) -> Option<&VecDeque<T>> {
        let s = self.index.get(self.key(e, v, i))?;
        self.slab.get(s as usize)
    }

    /// The oldest frame of input `i` waiting for egress `e` on VC `v`.
    pub(crate) fn front(&self, e: usize, v: usize, i: usize) -> Option<&T> {
        self.queue(e, v, i).and_then(VecDeque::front)
    }

    /// Queues a frame behind those of its input, VC and egress; returns whether it is the
    /// queue's head (the queue was empty).
    pub(crate) fn push_back(&mut self, e: usize, v: usize, i: usize, q: T) -> bool {
        self.push(e, v, i, q, false)
    }

    /// Puts a frame back at the head of its queue.
    pub(crate) fn push_front(&mut self, e: usize, v: usize, i: usize, q: T) {
        self.push(e, v, i, q, true);
    }

    fn push(&mut self, e: usize, v: usize, i: usize, q: T, front: bool) -> bool {
        if e >= self.ports || v >= self.vcs || i >= self.ports {
            return false;
        }
        let key = self.key(e, v, i);
        let slot = match self.index.get(key) {
            Some(s) => s,
            None => {
                let s = match self.free.pop() {
                    Some(s) => s,
                    None => {
                        self.slab.push(VecDeque::new());
                        u32::try_from(self.slab.len() - 1).unwrap_or(u32::MAX)
                    }
                };
                self.index.insert(key, s);
                self.set_bit(e, v, i, true);
                s
            }
        };
        let Some(queue) = self.slab.get_mut(slot as usize) else {
            return false;
        };
        let head = queue.is_empty();
        if front {
            queue.push_front(q);
        } else {
            queue.push_back(q);
        }
        self.len += 1;
        if head || front {
            self.head_changed(e, v);
        }
        head
    }

    /// The newest frame of input `i` waiting for egress `e` on VC `v`.
    pub(crate) fn back_mut(&mut self, e: usize, v: usize, i: usize) -> Option<&mut T> {
        let key = self.key(e, v, i);
        let slot = self.index.get(key)?;
        self.slab.get_mut(slot as usize)?.back_mut()
    }

    /// Takes the newest frame of input `i` waiting for egress `e` on VC `v`.
    pub(crate) fn pop_back(&mut self, e: usize, v: usize, i: usize) -> Option<T> {
        let key = self.key(e, v, i);
        let slot = self.index.get(key)?;
        let queue = self.slab.get_mut(slot as usize)?;
        let f = queue.pop_back()?;
        self.len -= 1;
        let emptied = queue.is_empty();
        if emptied {
            self.head_changed(e, v);
            self.index.remove(key);
            self.free.push(slot);
            self.set_bit(e, v, i, false);
        }
        Some(f)
    }

    /// Takes the oldest frame of input `i` waiting for egress `e` on VC `v`.
    pub(crate) fn pop_front(&mut self, e: usize, v: usize, i: usize) -> Option<T> {
        let key = self.key(e, v, i);
        let slot = self.index.get(key)?;
        let queue = self.slab.get_mut(slot as usize)?;
        let f = queue.pop_front()?;
        self.len -= 1;
        let emptied = queue.is_empty();
        self.head_changed(e, v);
        if emptied {
            self.index.remove(key);
            self.free.push(slot);
            self.set_bit(e, v, i, false);
        }
        Some(f)
    }
}

#[cfg(test)]
mod tests {
    use super::Voqs;
    use alloc::vec::Vec;

    /// The same operations give the same queues whichever index holds them.
    #[test]
    fn dense_and_hashed_indexes_agree() {
        let mut dense: Voqs<u32> = Voqs::new(20, 2);
        let mut hashed: Voqs<u32> = Voqs::new(20, 2);
        hashed.index = super::Index::Hashed(Default::default());
        assert!(matches!(dense.index, super::Index::Dense(_)));
        let mut x = 7u32;
        for n in 0..5000u32 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let (e, v, i) = (
                (x >> 8) as usize % 21,
                (x >> 16) as usize % 2,
                (x >> 20) as usize % 21,
            );
            if x.is_multiple_of(3) {
                assert_eq!(dense.pop_front(e, v, i), hashed.pop_front(e, v, i));
            } else {
                assert_eq!(dense.push_back(e, v, i, n), hashed.push_back(e, v, i, n));
            }
            assert_eq!(dense.front(e, v, i), hashed.front(e, v, i));
            assert_eq!(dense.len(), hashed.len());
        }
        assert!(dense.len() > 100);
    }

    /// What is known of an egress and VC's heads is forgotten whenever one of them changes,
    /// and only then.
    #[test]
    fn quiet_time_holds_until_a_head_changes() {
        use ethlink_link::Instant;
        let t = Instant::from_nanos(500);
        let mut q: Voqs<u8> = Voqs::new(4, 2);
        assert_eq!(q.quiet_until(1, 0), Instant::ZERO);
        q.push_back(1, 0, 2, 0);
        q.set_quiet(1, 0, t);
        // Behind a head, another VC, another egress: the heads of (1, 0) are as they were.
        q.push_back(1, 0, 2, 1);
        q.push_back(1, 1, 2, 0);
        q.push_back(3, 0, 2, 0);
        assert_eq!(q.quiet_until(1, 0), t);
        // A new head on another input.
        q.push_back(1, 0, 3, 0);
        assert_eq!(q.quiet_until(1, 0), Instant::ZERO);
        // A head taken, and one put back.
        q.set_quiet(1, 0, t);
        assert_eq!(q.pop_front(1, 0, 2), Some(0));
        assert_eq!(q.quiet_until(1, 0), Instant::ZERO);
        q.set_quiet(1, 0, t);
        q.push_front(1, 0, 2, 9);
        assert_eq!(q.quiet_until(1, 0), Instant::ZERO);
        assert_eq!(q.quiet_until(1, 1), Instant::ZERO);
    }

    fn frame(n: u8) -> u8 {
        n
    }

    #[test]
    fn round_robin_visits_active_inputs_from_rr_wrapping() {
        let mut q: Voqs<u8> = Voqs::new(200, 2);
        for i in [3usize, 64, 130, 199] {
            assert!(q.push_back(5, 1, i, frame(0)));
        }
        assert!(!q.push_back(5, 1, 64, frame(1)));
        assert_eq!(q.len(), 5);
        let mut seen = Vec::new();
        q.round(5, 1, 100, |i| {
            seen.push(i);
            true
        });
        assert_eq!(seen, [130, 199, 3, 64]);
        assert_eq!(q.next_active(5, 1, 200), Some(3));
        assert_eq!(q.next_active(5, 0, 0), None);
        assert_eq!(q.next_active(4, 1, 0), None);
        let mut ins = Vec::new();
        q.inputs(5, 1, &mut ins);
        assert_eq!(ins, [3, 64, 130, 199]);
    }

    #[test]
    fn queues_keep_arrival_order_and_free_their_slot() {
        let mut q: Voqs<u8> = Voqs::new(4, 1);
        for n in 0..3 {
            q.push_back(2, 0, 1, frame(n));
        }
        q.push_front(2, 0, 1, frame(9));
        let got: Vec<u8> = core::iter::from_fn(|| q.pop_front(2, 0, 1)).collect();
        assert_eq!(got, [9, 0, 1, 2]);
        assert_eq!(q.next_active(2, 0, 0), None);
        assert_eq!(q.len(), 0);
        // The emptied queue's slot is reused, not grown.
        q.push_back(3, 0, 0, frame(0));
        assert_eq!(q.slab.len(), 1);
        // Out-of-range ports are refused, not indexed.
        assert!(!q.push_back(4, 0, 0, frame(0)));
        assert_eq!(q.len(), 1);
    }
}

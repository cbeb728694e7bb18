//! A byte ring of variable-length records with fixed capacity.
//!
//! Records are stored contiguously (a record never wraps: when the tail has too little room the
//! record starts again at offset 0), so a record is always one slice. Where a record goes, and
//! whether it fits, is decided against the ring's fixed capacity; the storage behind it is taken
//! as records first reach into it (doubling, never beyond the capacity), so that a ring of a
//! link that carries little holds little, and a busy one ends at its capacity. Nothing is ever
//! freed before the ring is dropped, and nothing grows past the bounds given at construction.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

/// One stored record: where its bytes are and what the owner keeps beside them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rec<M> {
    start: u32,
    len: u32,
    pub(crate) meta: M,
}

/// Fixed-capacity ring of byte records with metadata `M`.
#[derive(Debug)]
pub(crate) struct Ring<M> {
    /// The storage taken so far: the first `buf.len()` bytes of the ring.
    buf: Vec<u8>,
    /// The ring's size in bytes, against which records are placed.
    capacity: usize,
    recs: VecDeque<Rec<M>>,
    max_recs: usize,
    bytes: usize,
}

/// The least storage a ring takes when its first record arrives.
const FIRST_STORAGE: usize = 4096;

impl<M: Copy> Ring<M> {
    /// A ring of `capacity` bytes holding at most `max_recs` records.
    pub(crate) fn new(capacity: usize, max_recs: usize) -> Self {
        Ring {
            buf: Vec::new(),
            capacity,
            recs: VecDeque::new(),
            max_recs,
            bytes: 0,
        }
    }

    /// Number of records.
    pub(crate) fn len(&self) -> usize {
        self.recs.len()
    }

    /// True when no record is stored.
    pub(crate) fn is_empty(&self) -> bool {
        self.recs.is_empty()
    }

    /// Sum of the lengths of the stored records.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Where a record of `len` bytes would start, if it fits.
    fn place(&self, len: usize) -> Option<usize> {
        if self.recs.len() >= self.max_recs || len > self.capacity {
            return None;
        }
        let (Some(front), Some(back)) = (self.recs.front(), self.recs.back()) else {
            return Some(0);
        };
        let head = front.start as usize;
        let tail = back.start as usize + back.len as usize;
        if tail > head {
            // Not wrapped: room after the tail, else from 0 up to the head.
            if self.capacity - tail >= len {
                Some(tail)
            } else if head >= len {
                Some(0)
            } else {
                None
            }
        } else if head - tail >= len {
            Some(tail)
        } else {
            None
        }
    }

    /// True when a record of `len` bytes fits now.
    pub(crate) fn fits(&self, len: usize) -> bool {
        self.place(len).is_some()
    }

    /// Appends a record of `len` bytes and returns its bytes to be filled, or `None` when full.
    pub(crate) fn push(&mut self, len: usize, meta: M) -> Option<&mut [u8]> {
        let start = self.place(len)?;
        let (start32, len32) = (u32::try_from(start).ok()?, u32::try_from(len).ok()?);
        self.recs.push_back(Rec {
            start: start32,
            len: len32,
            meta,
        });
        self.bytes += len;
        let end = start + len;
        if end > self.buf.len() {
            // Take storage up to this record, at least doubling what there is, within the
            // capacity (`place` keeps every record inside it).
            let grown = end
                .max(self.buf.len().saturating_mul(2))
                .max(FIRST_STORAGE)
                .min(self.capacity);
            self.buf.resize(grown, 0);
        }
        self.buf.get_mut(start..end)
    }

    /// Bytes of storage taken so far (at most the capacity).
    #[cfg(test)]
    pub(crate) fn storage(&self) -> usize {
        self.buf.len()
    }

    /// Removes the oldest record.
    pub(crate) fn pop_front(&mut self) -> Option<M> {
        let rec = self.recs.pop_front()?;
        self.bytes -= rec.len as usize;
        Some(rec.meta)
    }

    /// Removes the newest record.
    pub(crate) fn pop_back(&mut self) -> Option<M> {
        let rec = self.recs.pop_back()?;
        self.bytes -= rec.len as usize;
        Some(rec.meta)
    }

    /// The record at `index` from the front: metadata and bytes.
    pub(crate) fn get(&self, index: usize) -> Option<(&M, &[u8])> {
        let rec = self.recs.get(index)?;
        let start = rec.start as usize;
        let bytes = self.buf.get(start..start + rec.len as usize)?;
        Some((&rec.meta, bytes))
    }

    /// The oldest record.
    pub(crate) fn front(&self) -> Option<(&M, &[u8])> {
        self.get(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_wraps_and_refuses_without_growing() {
        let mut r: Ring<u32> = Ring::new(100, 10);
        for i in 0..3 {
            let b = r.push(30, i).unwrap();
            b.fill(i as u8);
        }
        assert!(!r.fits(11), "10 bytes left at the tail, head at 0");
        assert!(r.fits(10));
        assert_eq!(r.pop_front(), Some(0));
        // 10 bytes at the tail are too few for 20, the 30 freed at the front are enough.
        let b = r.push(20, 3).unwrap();
        b.fill(3);
        assert_eq!(r.get(2).unwrap().1, &[3u8; 20][..]);
        assert_eq!(r.get(0).unwrap().1, &[1u8; 30][..]);
        // Wrapped: between tail 20 and head 30 there are 10 bytes.
        assert!(r.fits(10));
        assert!(!r.fits(11));
        assert_eq!(r.bytes(), 80);
        assert_eq!(r.pop_back(), Some(3));
        assert_eq!(r.len(), 2);
    }

    #[test]
    fn storage_is_taken_as_records_reach_it_and_never_past_the_capacity() {
        let mut r: Ring<u32> = Ring::new(100_000, 1000);
        assert_eq!(r.storage(), 0);
        r.push(100, 0).unwrap().fill(1);
        assert_eq!(r.storage(), FIRST_STORAGE);
        // Placement is against the capacity, whatever the storage: records go on past it.
        for i in 1..200u32 {
            let b = r.push(400, i).unwrap();
            b.fill(i as u8);
        }
        assert_eq!(r.storage(), 100_000, "doubled, then held at the capacity");
        assert_eq!(r.get(5).unwrap().1, &[5u8; 400][..]);
        assert!(!r.fits(100_001));
        // Placement is the same as a ring that had all its storage from the start.
        let mut a: Ring<u32> = Ring::new(1000, 100);
        let mut b: Ring<u32> = Ring::new(1000, 100);
        b.buf = alloc::vec![0u8; 1000];
        for i in 0..500u32 {
            let len = (i as usize * 37) % 300 + 1;
            assert_eq!(a.fits(len), b.fits(len), "record {i}");
            if a.fits(len) {
                a.push(len, i).unwrap().fill(i as u8);
                b.push(len, i).unwrap().fill(i as u8);
            }
            if i % 3 == 0 {
                assert_eq!(a.pop_front(), b.pop_front());
            }
            assert_eq!(
                a.recs.back().map(|r| r.start),
                b.recs.back().map(|r| r.start)
            );
        }
    }

    #[test]
    fn record_count_bound_holds() {
        let mut r: Ring<()> = Ring::new(1000, 2);
        assert!(r.push(1, ()).is_some());
        assert!(r.push(1, ()).is_some());
        assert!(r.push(1, ()).is_none());
        assert!(r.push(2000, ()).is_none());
    }
}

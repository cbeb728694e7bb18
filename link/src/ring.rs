//! A byte ring of variable-length records with fixed capacity.
//!
//! Records are stored contiguously (a record never wraps: when the tail has too little room the
//! record starts again at offset 0), so a record is always one slice. Both the byte storage and
//! the record table are allocated once, at construction; nothing grows afterwards.

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::vec;

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
    buf: Box<[u8]>,
    recs: VecDeque<Rec<M>>,
    max_recs: usize,
    bytes: usize,
}

impl<M: Copy> Ring<M> {
    /// A ring of `capacity` bytes holding at most `max_recs` records.
    pub(crate) fn new(capacity: usize, max_recs: usize) -> Self {
        Ring {
            buf: vec![0u8; capacity].into_boxed_slice(),
            recs: VecDeque::with_capacity(max_recs),
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
        if self.recs.len() >= self.max_recs || len > self.buf.len() {
            return None;
        }
        let (Some(front), Some(back)) = (self.recs.front(), self.recs.back()) else {
            return Some(0);
        };
        let head = front.start as usize;
        let tail = back.start as usize + back.len as usize;
        if tail > head {
            // Not wrapped: room after the tail, else from 0 up to the head.
            if self.buf.len() - tail >= len {
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
        self.buf.get_mut(start..start + len)
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
    fn record_count_bound_holds() {
        let mut r: Ring<()> = Ring::new(1000, 2);
        assert!(r.push(1, ()).is_some());
        assert!(r.push(1, ()).is_some());
        assert!(r.push(1, ()).is_none());
        assert!(r.push(2000, ()).is_none());
    }
}

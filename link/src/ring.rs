//! A ring of variable-length records with fixed capacity, each record's bytes in a buffer of its
//! own that can be moved in and out without copying.
//!
//! Where a record goes, and whether it fits, is decided as in a byte ring of the fixed capacity
//! in which a record never wraps (when the tail has too little room the record starts again at
//! offset 0): the ring's admission is that of contiguous storage, whatever holds the bytes. The
//! bytes themselves are in buffers of their own, one per record, taken as records arrive and kept
//! as spares when they leave (within the ring's capacity), so that a busy ring stops allocating.
//! A record can be taken out whole (the replay buffer takes the transmit queue's frame, headers
//! written around its payload in place), and its buffer can be shared with a reader (a simulated
//! wire) by reference count, which it costs only when it is shared. Nothing grows past the
//! bounds given at construction: at most `max_recs` buffers, each of its record's length, and
//! spares only while records and spares together stay within the capacity.

use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::slots::Slots;

/// The bytes of a record shared by reference count: a frame handed to a wire stays readable
/// while the replay buffer keeps it.
pub(crate) type Shared = Arc<Vec<u8>>;

/// A record's start, payload offset and length as stored, or `None` when one does not fit.
#[inline(always)]
fn packed(start: usize, at: usize, len: usize) -> Option<(u32, u32, u32)> {
    Some((
        u32::try_from(start).ok()?,
        u32::try_from(at).ok()?,
        u32::try_from(len).ok()?,
    ))
}

/// A record's buffer: its own until something shares it.
#[derive(Debug, Clone)]
pub(crate) enum Data {
    Own(Vec<u8>),
    Shared(Shared),
}

impl Data {
    pub(crate) fn len(&self) -> usize {
        match self {
            Data::Own(v) => v.len(),
            Data::Shared(a) => a.len(),
        }
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            Data::Own(v) => v,
            Data::Shared(a) => a,
        }
    }

    /// The buffer to change in place (copied first if a reader still shares it).
    pub(crate) fn make_mut(&mut self) -> &mut Vec<u8> {
        match self {
            Data::Own(v) => v,
            Data::Shared(a) => Arc::make_mut(a),
        }
    }

    /// The buffer, if nothing else shares it.
    pub(crate) fn into_vec(self) -> Option<Vec<u8>> {
        match self {
            Data::Own(v) => Some(v),
            Data::Shared(a) => Arc::try_unwrap(a).ok(),
        }
    }

    /// Shares the buffer, turning it into a shared one the first time, in `shell` if one is
    /// given (an emptied shared buffer nobody else holds, reused for its reference count).
    fn share(&mut self, shell: Option<Shared>) -> Shared {
        if let Data::Own(v) = self {
            let v = core::mem::take(v);
            let a = match shell {
                Some(mut a) => match Arc::get_mut(&mut a) {
                    Some(inner) => {
                        *inner = v;
                        a
                    }
                    None => Arc::new(v),
                },
                None => Arc::new(v),
            };
            *self = Data::Shared(a);
        }
        match self {
            Data::Shared(a) => Arc::clone(a),
            Data::Own(_) => Arc::new(Vec::new()),
        }
    }
}

/// One stored record: where it sits in the ring's placement, its bytes and what the owner keeps
/// beside them.
#[derive(Debug, Clone)]
pub(crate) struct Rec<M> {
    start: u32,
    len: u32,
    /// Where the record's bytes begin in `data` (room before them for headers).
    at: u32,
    data: Data,
    pub(crate) meta: M,
}

impl<M> Rec<M> {
    /// Where the record's bytes begin in its buffer.
    pub(crate) fn at(&self) -> usize {
        self.at as usize
    }

    /// The record's length.
    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    /// Its buffer.
    pub(crate) fn data(&self) -> &Data {
        &self.data
    }

    /// Its buffer, to change in place (copied first if a reader still shares it).
    pub(crate) fn data_mut(&mut self) -> &mut Vec<u8> {
        self.data.make_mut()
    }

    /// Gives up the record for its buffer.
    #[cfg(test)]
    pub(crate) fn into_data(self) -> Data {
        self.data
    }
}

/// Fixed-capacity ring of byte records with metadata `M`.
#[derive(Debug)]
pub(crate) struct Ring<M> {
    /// The ring's size in bytes, against which records are placed.
    capacity: usize,
    recs: Slots<Rec<M>>,
    max_recs: usize,
    bytes: usize,
    /// Buffers of records that left, kept for the next ones.
    spare: Vec<Vec<u8>>,
    /// Bytes of storage in `spare`.
    spare_bytes: usize,
    /// Emptied shared buffers nobody else holds, kept for their reference counts (at most
    /// [`SHELLS`]).
    shells: Vec<Shared>,
}

/// Emptied shared buffers a ring keeps.
const SHELLS: usize = 64;

impl<M: Copy> Ring<M> {
    /// A ring of `capacity` bytes holding at most `max_recs` records.
    pub(crate) fn new(capacity: usize, max_recs: usize) -> Self {
        Ring {
            capacity,
            recs: Slots::new(),
            max_recs,
            bytes: 0,
            spare: Vec::new(),
            spare_bytes: 0,
            shells: Vec::new(),
        }
    }

    /// Number of records.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.recs.len()
    }

    /// True when no record is stored.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.recs.is_empty()
    }

    /// Sum of the lengths of the stored records.
    #[inline]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Where a record of `len` bytes would start, if it fits.
    #[inline]
    pub(crate) fn place(&self, len: usize) -> Option<usize> {
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
    #[inline]
    pub(crate) fn fits(&self, len: usize) -> bool {
        self.place(len).is_some()
    }

    /// A spare buffer, if the ring keeps one.
    pub(crate) fn take_spare(&mut self) -> Option<Vec<u8>> {
        let b = self.spare.pop()?;
        self.spare_bytes = self.spare_bytes.saturating_sub(b.capacity());
        Some(b)
    }

    /// A buffer of `len` bytes: a spare one if there is, else a new one.
    pub(crate) fn buffer(&mut self, len: usize) -> Vec<u8> {
        let mut b = self.take_spare().unwrap_or_default();
        b.resize(len, 0);
        b
    }

    /// Appends a record of `len` bytes and returns its bytes to be filled, or `None` when full.
    #[cfg(test)]
    pub(crate) fn push(&mut self, len: usize, meta: M) -> Option<&mut [u8]> {
        let start = self.place(len)?;
        let data = Data::Own(self.buffer(len));
        self.push_at(start, data, 0, len, meta).ok()?;
        let rec = self.recs.back_mut()?;
        rec.data.make_mut().get_mut(..len)
    }

    /// Appends a record holding a copy of `bytes`; false when full.
    #[inline]
    pub(crate) fn push_copy(&mut self, bytes: &[u8], meta: M) -> bool {
        let len = bytes.len();
        let Some(start) = self.place(len) else {
            return false;
        };
        let mut b = self.take_spare().unwrap_or_default();
        b.clear();
        b.extend_from_slice(bytes);
        self.push_at(start, Data::Own(b), 0, len, meta).is_ok()
    }

    /// Appends a record whose bytes are `data[at..at + len]`, moved in, or gives `data` back when
    /// the record does not fit.
    #[cfg(test)]
    pub(crate) fn push_data(
        &mut self,
        data: Data,
        at: usize,
        len: usize,
        meta: M,
    ) -> Result<(), Data> {
        match self.place(len) {
            Some(start) => self.push_data_placed(start, data, at, len, meta),
            None => Err(data),
        }
    }

    /// As [`Ring::push_data`] at `start`, where [`Ring::place`] placed the record since the last
    /// change to the ring.
    #[inline]
    pub(crate) fn push_data_placed(
        &mut self,
        start: usize,
        data: Data,
        at: usize,
        len: usize,
        meta: M,
    ) -> Result<(), Data> {
        if data.len() < at.saturating_add(len) {
            return Err(data);
        }
        self.push_at(start, data, at, len, meta)
    }

    /// Appends, as `data[at..at + len]` with `meta`, the buffer of a record taken whole from
    /// another ring ([`Ring::take_front`]), or gives the record back unchanged when it does not
    /// fit.
    #[inline(always)]
    pub(crate) fn push_from<N>(
        &mut self,
        rec: Rec<N>,
        at: usize,
        len: usize,
        meta: M,
    ) -> Result<(), Rec<N>> {
        if rec.data.len() < at.saturating_add(len) {
            return Err(rec);
        }
        let Some(start) = self.place(len) else {
            return Err(rec);
        };
        let Some((start, at, len32)) = packed(start, at, len) else {
            return Err(rec);
        };
        self.recs.push_back(Rec {
            start,
            len: len32,
            at,
            data: rec.data,
            meta,
        });
        self.bytes += len;
        Ok(())
    }

    fn push_at(
        &mut self,
        start: usize,
        data: Data,
        at: usize,
        len: usize,
        meta: M,
    ) -> Result<(), Data> {
        let Some((start, at, len32)) = packed(start, at, len) else {
            return Err(data);
        };
        self.recs.push_back(Rec {
            start,
            len: len32,
            at,
            data,
            meta,
        });
        self.bytes += len;
        Ok(())
    }

    /// Keeps a buffer for reuse if nothing else shares it and records and spares together stay
    /// within the capacity.
    fn recycle(&mut self, data: Data) {
        let v = match data {
            Data::Own(v) => Some(v),
            Data::Shared(mut a) => match Arc::get_mut(&mut a) {
                // Nobody else holds it: the buffer goes to the spares, its shell is kept.
                Some(inner) => {
                    let v = core::mem::take(inner);
                    if self.shells.len() < SHELLS {
                        self.shells.push(a);
                    }
                    Some(v)
                }
                None => None,
            },
        };
        if let Some(v) = v {
            let cap = v.capacity();
            if self.bytes + self.spare_bytes + cap <= self.capacity {
                self.spare_bytes += cap;
                self.spare.push(v);
            }
        }
    }

    /// Removes the oldest record.
    pub(crate) fn pop_front(&mut self) -> Option<M> {
        let rec = self.recs.pop_front()?;
        self.bytes -= rec.len as usize;
        self.recycle(rec.data);
        Some(rec.meta)
    }

    /// Removes the newest record.
    pub(crate) fn pop_back(&mut self) -> Option<M> {
        let rec = self.recs.pop_back()?;
        self.bytes -= rec.len as usize;
        self.recycle(rec.data);
        Some(rec.meta)
    }

    /// Removes the oldest record whole, to move its buffer elsewhere or put it back with
    /// [`Ring::restore_front`].
    #[inline(always)]
    pub(crate) fn take_front(&mut self) -> Option<Rec<M>> {
        let rec = self.recs.pop_front()?;
        self.bytes -= rec.len as usize;
        Some(rec)
    }

    /// Puts back, unchanged, the record [`Ring::take_front`] took.
    #[inline]
    pub(crate) fn restore_front(&mut self, rec: Rec<M>) {
        self.bytes += rec.len as usize;
        self.recs.push_front(rec);
    }

    /// The record at `index` from the front: metadata and bytes.
    #[inline]
    pub(crate) fn get(&self, index: usize) -> Option<(&M, &[u8])> {
        let rec = self.recs.get(index)?;
        let at = rec.at as usize;
        let bytes = rec.data.as_slice().get(at..at + rec.len as usize)?;
        Some((&rec.meta, bytes))
    }

    /// The bytes of the record at `index`, to change in place (copied first if a reader still
    /// shares them).
    pub(crate) fn get_mut(&mut self, index: usize) -> Option<&mut [u8]> {
        let rec = self.recs.get_mut(index)?;
        let at = rec.at as usize;
        rec.data.make_mut().get_mut(at..at + rec.len as usize)
    }

    /// The buffer of the record at `index`, shared, and where its bytes begin.
    pub(crate) fn shared(&mut self, index: usize) -> Option<(Shared, usize, usize)> {
        let shell = match self.recs.get(index)?.data {
            Data::Own(_) => self.shells.pop(),
            Data::Shared(_) => None,
        };
        let rec = self.recs.get_mut(index)?;
        Some((rec.data.share(shell), rec.at as usize, rec.len as usize))
    }

    /// The length of the oldest record.
    #[inline]
    pub(crate) fn front_len(&self) -> Option<usize> {
        self.recs.front().map(Rec::len)
    }

    /// The oldest record.
    #[inline]
    pub(crate) fn front(&self) -> Option<(&M, &[u8])> {
        self.get(0)
    }

    /// Bytes held in the records' buffers, spares included.
    #[cfg(test)]
    pub(crate) fn storage(&self) -> usize {
        self.recs.iter().map(|r| r.data.len()).sum::<usize>()
            + self.spare.iter().map(Vec::len).sum::<usize>()
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
    fn records_move_between_rings_without_a_copy() {
        let mut q: Ring<u8> = Ring::new(1000, 10);
        let mut replay: Ring<u8> = Ring::new(1000, 10);
        // A record with 4 bytes of room before it, as a queued payload waits for its headers.
        let mut v = q.buffer(10);
        v[4..].fill(7);
        q.push_data(Data::Own(v), 4, 6, 1).unwrap();
        assert_eq!(q.front().unwrap().1, &[7u8; 6][..]);
        let rec = q.take_front().unwrap();
        assert_eq!(
            (rec.meta, rec.at(), rec.len(), q.len(), q.bytes()),
            (1, 4, 6, 0, 0)
        );
        q.restore_front(rec);
        assert_eq!((q.len(), q.bytes()), (1, 6));
        let data = q.take_front().unwrap().into_data();
        let ptr = data.as_slice().as_ptr();
        replay.push_data(data, 0, 10, 2).unwrap();
        assert_eq!(replay.get(0).unwrap().1.as_ptr(), ptr, "the same buffer");
        // A reader shares it; a change then goes to a copy and the reader keeps what it had.
        let (seen, at, len) = replay.shared(0).unwrap();
        replay.get_mut(0).unwrap()[0] = 9;
        assert_eq!((seen[at], len), (0, 10));
        assert_eq!(replay.get(0).unwrap().1[0], 9);
        // A record that does not fit, or claims more bytes than its buffer has, is refused
        // with its buffer given back.
        let big = Data::Own(alloc::vec![0u8; 2000]);
        assert!(replay.push_data(big, 0, 2000, 3).is_err());
        let short = Data::Own(alloc::vec![0u8; 5]);
        assert!(replay.push_data(short, 2, 4, 3).is_err());
        assert_eq!(replay.len(), 1);
    }

    #[test]
    fn a_shared_buffer_left_by_its_readers_is_reused_shell_and_all() {
        let mut r: Ring<u8> = Ring::new(10_000, 10);
        r.push(100, 0).unwrap().fill(1);
        let (seen, _, _) = r.shared(0).unwrap();
        // Still read: popping it keeps nothing.
        r.pop_front();
        assert_eq!((r.shells.len(), r.spare.len()), (0, 0));
        assert_eq!(seen[0], 1);
        drop(seen);
        // Left by its reader: the buffer and its shell are both kept and serve the next one.
        r.push(100, 1).unwrap().fill(2);
        let (seen, _, _) = r.shared(0).unwrap();
        let shell = Arc::as_ptr(&seen);
        drop(seen);
        r.pop_front();
        assert_eq!((r.shells.len(), r.spare.len()), (1, 1));
        r.push(100, 2).unwrap().fill(3);
        assert!(r.spare.is_empty());
        let (again, _, _) = r.shared(0).unwrap();
        assert!(r.shells.is_empty());
        assert_eq!(again[0], 3);
        assert_eq!(
            Arc::as_ptr(&again),
            shell,
            "the same reference count, reused"
        );
    }

    #[test]
    fn storage_follows_the_records_and_spares_are_bounded() {
        let mut r: Ring<u32> = Ring::new(100_000, 1000);
        assert_eq!(r.storage(), 0);
        for i in 0..200u32 {
            r.push(400, i).unwrap().fill(i as u8);
        }
        assert_eq!(r.storage(), 200 * 400);
        assert_eq!(r.get(5).unwrap().1, &[5u8; 400][..]);
        while r.pop_front().is_some() {}
        assert_eq!(r.storage(), 200 * 400, "the spares, within the capacity");
        // A ring near its capacity keeps no spare beyond it.
        let mut small: Ring<u32> = Ring::new(1000, 10);
        for i in 0..2 {
            small.push(400, i).unwrap();
        }
        small.pop_front();
        small.push(400, 2).unwrap();
        small.pop_front();
        assert!(small.storage() <= 1000, "{}", small.storage());
        // Placement is that of contiguous storage: a record never wraps.
        let mut a: Ring<u32> = Ring::new(1000, 100);
        for i in 0..500u32 {
            let len = (i as usize * 37) % 300 + 1;
            if a.fits(len) {
                a.push(len, i).unwrap().fill(i as u8);
                let back = a.recs.back().unwrap();
                assert!(back.start as usize + len <= 1000);
            }
            if i % 3 == 0 {
                a.pop_front();
            }
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

//! A double-ended queue in a growable circular buffer, for the link's per-frame records.
//!
//! It does what `VecDeque` does for the link (push and pop at both ends, index from the front),
//! with one difference that matters per frame: [`Slots::push_back`] is always inlined, so a
//! record is built straight into its slot. Through `VecDeque::push_back` (not inlined) a record
//! was written field by field into a temporary and then read back whole, and that read waited
//! for the writes to drain to the cache. Storage grows by doubling as records arrive, as a
//! `VecDeque`'s does; the owner bounds how many records it holds.

use alloc::vec::Vec;
use core::fmt;

/// A double-ended queue of `T`.
pub(crate) struct Slots<T> {
    /// The circular buffer; `None` outside the `len` slots from `head` (wrapping).
    buf: Vec<Option<T>>,
    head: usize,
    len: usize,
}

impl<T> Slots<T> {
    /// An empty queue, with no storage yet.
    pub(crate) const fn new() -> Self {
        Slots {
            buf: Vec::new(),
            head: 0,
            len: 0,
        }
    }

    /// Number of elements.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The slot of the element at `index` from the front (`index < buf.len()`).
    #[inline]
    fn slot(&self, index: usize) -> usize {
        let i = self.head + index;
        if i >= self.buf.len() {
            i - self.buf.len()
        } else {
            i
        }
    }

    /// Doubles the storage (at least 4 slots), the elements moved to start at slot 0.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        self.buf.rotate_left(self.head);
        self.head = 0;
        let cap = (self.buf.len() * 2).max(4);
        self.buf.resize_with(cap, || None);
    }

    /// Appends `value` at the back.
    #[inline(always)]
    pub(crate) fn push_back(&mut self, value: T) {
        if self.len == self.buf.len() {
            self.grow();
        }
        let i = self.slot(self.len);
        if let Some(s) = self.buf.get_mut(i) {
            *s = Some(value);
            self.len += 1;
        }
    }

    /// Puts `value` at the front.
    #[inline]
    pub(crate) fn push_front(&mut self, value: T) {
        if self.len == self.buf.len() {
            self.grow();
        }
        let i = if self.head == 0 {
            self.buf.len() - 1
        } else {
            self.head - 1
        };
        if let Some(s) = self.buf.get_mut(i) {
            *s = Some(value);
            self.head = i;
            self.len += 1;
        }
    }

    /// Removes the front element.
    #[inline]
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let v = self.buf.get_mut(self.head)?.take();
        self.head = self.slot(1);
        self.len -= 1;
        v
    }

    /// Removes the back element.
    #[inline]
    pub(crate) fn pop_back(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let i = self.slot(self.len - 1);
        let v = self.buf.get_mut(i)?.take();
        self.len -= 1;
        v
    }

    /// The element at `index` from the front.
    #[inline]
    pub(crate) fn get(&self, index: usize) -> Option<&T> {
        if index >= self.len {
            return None;
        }
        self.buf.get(self.slot(index))?.as_ref()
    }

    /// The element at `index` from the front, to change.
    #[inline]
    pub(crate) fn get_mut(&mut self, index: usize) -> Option<&mut T> {
        if index >= self.len {
            return None;
        }
        let i = self.slot(index);
        self.buf.get_mut(i)?.as_mut()
    }

    /// The front element.
    #[inline]
    pub(crate) fn front(&self) -> Option<&T> {
        self.get(0)
    }

    /// The back element.
    #[inline]
    pub(crate) fn back(&self) -> Option<&T> {
        self.get(self.len.checked_sub(1)?)
    }

    /// The back element, to change.
    #[inline]
    pub(crate) fn back_mut(&mut self) -> Option<&mut T> {
        self.get_mut(self.len.checked_sub(1)?)
    }

    /// The elements, front to back.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        (0..self.len).filter_map(move |i| self.get(i))
    }
}

impl<T: fmt::Debug> fmt::Debug for Slots<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::collections::VecDeque;

    /// Every operation agrees with `VecDeque`'s through growth and wrapping.
    #[test]
    fn behaves_as_a_vecdeque() {
        let mut s: Slots<u32> = Slots::new();
        let mut d: VecDeque<u32> = VecDeque::new();
        let mut x = 0x2545_f491_u32;
        for n in 0..20_000u32 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            match x % 7 {
                0 | 1 => {
                    s.push_back(n);
                    d.push_back(n);
                }
                2 => {
                    s.push_front(n);
                    d.push_front(n);
                }
                3 | 4 => assert_eq!(s.pop_front(), d.pop_front()),
                5 => assert_eq!(s.pop_back(), d.pop_back()),
                _ => {
                    if let (Some(a), Some(b)) = (s.back_mut(), d.back_mut()) {
                        *a += 1;
                        *b += 1;
                    }
                }
            }
            assert_eq!(s.len(), d.len());
            assert_eq!(s.is_empty(), d.is_empty());
            assert_eq!(s.front(), d.front());
            assert_eq!(s.back(), d.back());
            let i = (x as usize >> 8) % (d.len() + 2);
            assert_eq!(s.get(i), d.get(i));
        }
        assert!(s.iter().eq(d.iter()));
        assert_eq!(alloc::format!("{s:?}"), alloc::format!("{d:?}"));
    }
}

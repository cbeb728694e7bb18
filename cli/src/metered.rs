//! Reading JSON as it streams, in memory bounded whatever the input holds: a reader that counts
//! the bytes it hands on and refuses to hand on more than a limit, for the whole input and for
//! the part of it being read at the moment (one frame of an array, one section of a report).
//!
//! A JSON parser reading from a [`Metered`] reader keeps only what its caller keeps: the parts
//! read into memory are each under a limit of their own ([`Meter::part`]), and the parts skipped
//! (`serde::de::IgnoredAny`) cost nothing, so a report of gigabytes, or an endless input, is
//! read in a few megabytes or refused with a message naming the limit.

use std::cell::Cell;
use std::fmt;
use std::io::{self, BufRead, BufReader, Read};

/// Counts what a [`Metered`] reader hands on, against the limits.
#[derive(Debug)]
pub struct Meter {
    /// Bytes handed on so far.
    read: Cell<u64>,
    /// The most the whole input may hold.
    limit: u64,
    /// The part being read, when one is: where it must end and its limit.
    part: Cell<Option<(u64, u64)>>,
    /// The limit that was exceeded, once one was.
    exceeded: Cell<Option<Exceeded>>,
}

/// A limit a [`Metered`] reader refused to read beyond.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exceeded {
    /// The whole input is longer than this many bytes.
    Whole(u64),
    /// The part being read is longer than this many bytes.
    Part(u64),
}

impl fmt::Display for Exceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exceeded::Whole(n) => write!(f, "longer than {n} bytes, the most this command reads"),
            Exceeded::Part(n) => write!(f, "longer than {n} bytes"),
        }
    }
}

impl Meter {
    /// A meter for an input of at most `limit` bytes.
    pub fn new(limit: u64) -> Meter {
        Meter {
            read: Cell::new(0),
            limit,
            part: Cell::new(None),
            exceeded: Cell::new(None),
        }
    }

    /// `inner`, buffered and counted by this meter.
    pub fn reader<R: Read>(&self, inner: R) -> Metered<'_, R> {
        Metered {
            inner: BufReader::with_capacity(1 << 16, inner),
            meter: self,
        }
    }

    /// Runs `read`, which reads one part of the input: the reader refuses to hand on more than
    /// `limit` bytes of it (a part inside another ends by the earlier of the two ends).
    pub fn part<T>(&self, limit: u64, read: impl FnOnce() -> T) -> T {
        let outer = self.part.get();
        let end = self.read.get().saturating_add(limit);
        let here = match outer {
            Some((e, _)) if e <= end => outer,
            _ => Some((end, limit)),
        };
        self.part.set(here);
        let result = read();
        self.part.set(outer);
        result
    }

    /// The limit the reader refused to read beyond, if it did.
    pub fn exceeded(&self) -> Option<Exceeded> {
        self.exceeded.get()
    }

    /// Bytes handed on so far.
    pub fn position(&self) -> u64 {
        self.read.get()
    }
}

/// A buffered reader that hands on at most what its [`Meter`] allows.
#[derive(Debug)]
pub struct Metered<'m, R> {
    inner: BufReader<R>,
    meter: &'m Meter,
}

impl<R: Read> Read for Metered<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let at = self.meter.read.get();
        let (end, over) = match self.meter.part.get() {
            Some((end, limit)) if end < self.meter.limit => (end, Exceeded::Part(limit)),
            _ => (self.meter.limit, Exceeded::Whole(self.meter.limit)),
        };
        let room = end.saturating_sub(at);
        if room == 0 {
            // At the limit: the input may end here, but not go on.
            if self.inner.fill_buf()?.is_empty() || buf.is_empty() {
                return Ok(0);
            }
            self.meter.exceeded.set(Some(over));
            return Err(io::Error::other(over.to_string()));
        }
        let take = usize::try_from(room).map_or(buf.len(), |r| r.min(buf.len()));
        let n = match buf.get_mut(..take) {
            Some(b) => self.inner.read(b)?,
            None => 0,
        };
        self.meter.read.set(at.saturating_add(n as u64));
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_whole_input_and_a_part_are_each_bounded() {
        let meter = Meter::new(10);
        let mut r = meter.reader(&b"0123456789"[..]);
        let mut all = Vec::new();
        assert_eq!(r.read_to_end(&mut all).ok(), Some(10), "exactly the limit");
        assert_eq!(meter.exceeded(), None);

        let meter = Meter::new(10);
        let mut r = meter.reader(io::repeat(b'x'));
        let mut all = Vec::new();
        assert!(r.read_to_end(&mut all).is_err(), "an endless input");
        assert_eq!(all.len(), 10);
        assert_eq!(meter.exceeded(), Some(Exceeded::Whole(10)));

        let meter = Meter::new(100);
        let mut r = meter.reader(io::repeat(b'x'));
        let mut four = [0u8; 4];
        assert!(r.read_exact(&mut four).is_ok());
        let mut part = Vec::new();
        let inside = meter.part(3, || (&mut r).take(50).read_to_end(&mut part));
        assert!(inside.is_err());
        assert_eq!((part.len(), meter.exceeded()), (3, Some(Exceeded::Part(3))));
        // Outside the part, the input goes on to the whole limit.
        let mut rest = Vec::new();
        assert!(r.read_to_end(&mut rest).is_err());
        assert_eq!(meter.position(), 100);
    }
}

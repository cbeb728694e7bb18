//! End-to-end data integrity: the reference of what every GPU's memory must hold, and the final
//! check of it.
//!
//! A write's bytes are the data [`Pattern`] named by a 64-bit seed (defined by the endpoint, whose
//! memory keeps such bytes as descriptions). The reference keeps, per GPU, the ranges of global
//! memory written so far as disjoint intervals, each either "pattern `seed` starting at `base`"
//! or "unknown" (an operation that ended with an error may have written some of its bytes).
//! Writes are applied in the order they completed; the workloads never have two writes to
//! overlapping ranges outstanding at once, so that order is the order they were performed in.
//!
//! At the end [`Reference::verify`] walks every GPU's memory as it holds it: a described range
//! whose description is the expected one holds the expected bytes, anything else (literal bytes,
//! zeros, another description) is compared byte by byte with the expected pattern. Outside the
//! written ranges and the GPU's own staging buffers every byte must be zero. The check costs in
//! proportion to what the memories hold, not to the bytes the workloads moved, and a single
//! wrong byte anywhere is found.

use std::collections::BTreeMap;

use ethlink_endpoint::pattern::Pattern;
pub(crate) use ethlink_endpoint::pattern::mix64;
use ethlink_endpoint::{Memory, Piece};
use ethlink_protocol::Space;

/// What a written range holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Content {
    /// Byte at address `a` is byte `a - base` of pattern `seed`.
    Pattern { seed: u64, base: u64 },
    /// Unknown: a write that ended with an error.
    Unknown,
    /// Unknown: a write still outstanding when the run ended.
    InFlight,
}

/// The expected contents of one GPU's global memory.
#[derive(Debug, Default)]
pub(crate) struct GpuRef {
    /// start -> (end, content); disjoint.
    map: BTreeMap<u64, (u64, Content)>,
    /// Ranges the GPU writes locally (RDMA staging), whose bytes are not checked.
    local: Vec<(u64, u64)>,
    scratch: Vec<(u64, u64, Content)>,
}

impl GpuRef {
    fn apply(&mut self, start: u64, end: u64, content: Content) {
        if start >= end {
            return;
        }
        // The common case: the same range written again.
        if let Some(v) = self.map.get_mut(&start)
            && v.0 == end
        {
            v.1 = content;
            return;
        }
        self.scratch.clear();
        if let Some((&s, &(e, c))) = self.map.range(..start).next_back()
            && e > start
        {
            self.scratch.push((s, e, c));
        }
        for (&s, &(e, c)) in self.map.range(start..end) {
            self.scratch.push((s, e, c));
        }
        for &(s, e, c) in &self.scratch {
            self.map.remove(&s);
            if s < start {
                self.map.insert(s, (start, c));
            }
            if e > end {
                self.map.insert(end, (e, c));
            }
        }
        self.map.insert(start, (end, content));
    }

    /// The expected bytes at `addr .. addr + out.len()`; false if any is unknown.
    fn expected(&self, addr: u64, out: &mut [u8]) -> bool {
        out.fill(0);
        let end = addr + out.len() as u64;
        let first = self
            .map
            .range(..=addr)
            .next_back()
            .map_or(addr, |(&s, _)| s);
        for (&s, &(e, c)) in self.map.range(first..end) {
            if e <= addr {
                continue;
            }
            let lo = s.max(addr);
            let hi = e.min(end);
            match c {
                Content::Unknown | Content::InFlight => return false,
                Content::Pattern { seed, base } => {
                    let a = (lo - addr) as usize;
                    let b = (hi - addr) as usize;
                    if let Some(dst) = out.get_mut(a..b) {
                        Pattern::new(seed, lo - base).fill(dst);
                    }
                }
            }
        }
        true
    }
}

/// One wrong byte found by the final memory check (the first of its range).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Mismatch {
    /// The GPU.
    pub gpu: u16,
    /// Address of the first wrong byte.
    pub addr: u64,
    /// The byte expected there.
    pub expected: u8,
    /// The byte found.
    pub found: u8,
    /// Whether the range should hold a pattern (true) or zero (false: a stray write).
    pub written: bool,
}

/// What the end-to-end data integrity check found.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Integrity {
    /// Writes (RDMA writes and stores) that completed OK and were recorded.
    pub writes_ok: u64,
    /// Writes that ended with an error (their ranges are unknown until written again).
    pub writes_failed: u64,
    /// Bytes whose expected value was known and compared.
    pub bytes_checked: u64,
    /// Bytes left unknown by failed writes and not written again.
    pub bytes_unknown: u64,
    /// Bytes of writes still outstanding when the run ended (cut short by the time limit, or
    /// lost): not checked, their fate is unknown.
    pub bytes_in_flight: u64,
    /// Bytes that differ from the reference (must be 0).
    pub bytes_mismatched: u64,
    /// Allocated bytes outside every written range and staging buffer that are not zero (must
    /// be 0).
    pub bytes_stray: u64,
    /// Loads whose data was compared with the reference.
    pub loads_checked: u64,
    /// Loads that returned other data than the reference (must be 0).
    pub loads_mismatched: u64,
    /// Loads of an ordered stream left unjudged: they, or a store issued before them on the
    /// stream, were sent again, and a request sent again may be performed after requests of its
    /// stream issued later (transaction.md TXN-5-6).
    pub loads_unjudged: u64,
    /// The first mismatches found (at most 16).
    pub examples: Vec<Mismatch>,
}

impl Integrity {
    /// True when nothing is wrong.
    pub fn is_clean(&self) -> bool {
        self.bytes_mismatched == 0 && self.bytes_stray == 0 && self.loads_mismatched == 0
    }
}

/// The reference of every GPU's memory.
#[derive(Debug, Default)]
pub(crate) struct Reference {
    gpus: Vec<GpuRef>,
    pub(crate) integrity: Integrity,
    buf: Vec<u8>,
}

impl Reference {
    pub(crate) fn new(gpus: usize) -> Self {
        Reference {
            gpus: (0..gpus).map(|_| GpuRef::default()).collect(),
            integrity: Integrity::default(),
            buf: Vec::new(),
        }
    }

    /// Declares `[start, end)` of `gpu` as a local staging range.
    pub(crate) fn add_local(&mut self, gpu: usize, start: u64, end: u64) {
        if let Some(g) = self.gpus.get_mut(gpu) {
            g.local.push((start, end));
        }
    }

    /// A write of pattern `seed` to `[addr, addr + len)` of `gpu` completed OK (`ok`) or with an
    /// error.
    pub(crate) fn write(&mut self, gpu: usize, addr: u64, len: u64, seed: u64, ok: bool) {
        let content = if ok {
            self.integrity.writes_ok += 1;
            Content::Pattern { seed, base: addr }
        } else {
            self.integrity.writes_failed += 1;
            Content::Unknown
        };
        if let Some(g) = self.gpus.get_mut(gpu) {
            g.apply(addr, addr.saturating_add(len), content);
        }
    }

    /// `[addr, addr + len)` of `gpu` holds one of several writes that completed OK, which one
    /// the protocol does not say (a store sent again may land after a later one, TXN-5-6).
    pub(crate) fn unsure(&mut self, gpu: usize, addr: u64, len: u64) {
        if let Some(g) = self.gpus.get_mut(gpu) {
            g.apply(addr, addr.saturating_add(len), Content::Unknown);
        }
    }

    /// A load of an ordered stream that cannot be judged (TXN-5-6).
    pub(crate) fn load_unjudged(&mut self) {
        self.integrity.loads_unjudged += 1;
    }

    /// A write to `[addr, addr + len)` of `gpu` was still outstanding when the run ended: its
    /// bytes are of unknown fate.
    pub(crate) fn in_flight(&mut self, gpu: usize, addr: u64, len: u64) {
        if let Some(g) = self.gpus.get_mut(gpu) {
            g.apply(addr, addr.saturating_add(len), Content::InFlight);
        }
    }

    /// A load of `gpu`'s `[addr, addr + data.len())` returned `data`: compares it.
    pub(crate) fn check_load(&mut self, gpu: usize, addr: u64, data: &[u8]) {
        let Some(g) = self.gpus.get(gpu) else { return };
        self.buf.resize(data.len(), 0);
        if g.expected(addr, &mut self.buf) {
            self.integrity.loads_checked += 1;
            if self.buf != data {
                self.integrity.loads_mismatched += 1;
                if let Some(i) = self.buf.iter().zip(data).position(|(a, b)| a != b)
                    && self.integrity.examples.len() < 16
                {
                    self.integrity.examples.push(Mismatch {
                        gpu: u16::try_from(gpu).unwrap_or(u16::MAX),
                        addr: addr + i as u64,
                        expected: self.buf.get(i).copied().unwrap_or(0),
                        found: data.get(i).copied().unwrap_or(0),
                        written: true,
                    });
                }
            }
        }
    }

    /// A load of `gpu`'s `addr` that its workload checked: it expected `expected` and returned
    /// `found`.
    pub(crate) fn load_result(&mut self, gpu: u16, addr: u64, expected: &[u8], found: &[u8]) {
        self.integrity.loads_checked += 1;
        if expected != found {
            self.integrity.loads_mismatched += 1;
            let i = expected
                .iter()
                .zip(found)
                .position(|(a, b)| a != b)
                .unwrap_or(expected.len().min(found.len()));
            if self.integrity.examples.len() < 16 {
                self.integrity.examples.push(Mismatch {
                    gpu,
                    addr: addr + i as u64,
                    expected: expected.get(i).copied().unwrap_or(0),
                    found: found.get(i).copied().unwrap_or(0),
                    written: true,
                });
            }
        }
    }

    /// Walks every known range of every GPU and looks for stray bytes.
    ///
    /// The result adds the counts of the writes and loads seen during the run; calling it again
    /// checks the memories afresh.
    pub(crate) fn verify<'a>(&mut self, mems: impl Iterator<Item = &'a Memory>) -> Integrity {
        let mut out = self.integrity.clone();
        let mut buf = vec![0u8; 1 << 17];
        for (gi, mem) in mems.enumerate() {
            let Some(g) = self.gpus.get_mut(gi) else {
                break;
            };
            let gpu = u16::try_from(gi).unwrap_or(u16::MAX);
            // Known ranges.
            for (&s, &(e, c)) in &g.map {
                let (seed, base) = match c {
                    Content::Pattern { seed, base } => (seed, base),
                    Content::Unknown => {
                        out.bytes_unknown += e - s;
                        continue;
                    }
                    Content::InFlight => {
                        out.bytes_in_flight += e - s;
                        continue;
                    }
                };
                out.bytes_checked += e - s;
                let want = Pattern::new(seed, s.wrapping_sub(base));
                let Ok(pieces) = mem.contents(Space::Global, s, e - s) else {
                    // Past the end of the memory: nothing there is what was written.
                    out.bytes_mismatched += e - s;
                    out.example(gpu, s, want.byte(0), 0, true);
                    continue;
                };
                for piece in pieces {
                    let at = want.advance(piece.addr() - s);
                    if let Piece::Pattern { pattern, .. } = piece
                        && pattern == at
                    {
                        // The expected description: the expected bytes.
                        continue;
                    }
                    compare(&mut out, &mut buf, gpu, piece, Some(at));
                }
            }
            // Stray bytes: held, non-zero, outside every written range and staging buffer.
            let mut allowed: Vec<(u64, u64)> = g.map.iter().map(|(&s, &(e, _))| (s, e)).collect();
            allowed.extend(g.local.iter().copied());
            allowed.sort_unstable();
            let size = mem.size(Space::Global);
            let mut gap_start = 0u64;
            let mut gaps = Vec::with_capacity(allowed.len() + 1);
            for (s, e) in allowed {
                if s > gap_start {
                    gaps.push((gap_start, s.min(size)));
                }
                gap_start = gap_start.max(e);
            }
            gaps.push((gap_start, size));
            for (s, e) in gaps {
                if s >= e {
                    continue;
                }
                let Ok(pieces) = mem.contents(Space::Global, s, e - s) else {
                    continue;
                };
                for piece in pieces {
                    if !matches!(piece, Piece::Zero { .. }) {
                        compare(&mut out, &mut buf, gpu, piece, None);
                    }
                }
            }
        }
        out
    }
}

impl Integrity {
    /// Records an example mismatch, up to 16.
    fn example(&mut self, gpu: u16, addr: u64, expected: u8, found: u8, written: bool) {
        if self.examples.len() < 16 {
            self.examples.push(Mismatch {
                gpu,
                addr,
                expected,
                found,
                written,
            });
        }
    }
}

/// Compares the bytes `piece` holds with the bytes of `want` from the piece's first byte on (a
/// written range), or with zeros when `want` is `None` (outside every written range), counting
/// the bytes that differ as mismatched or as stray. `buf` is scratch of at least one byte.
fn compare(out: &mut Integrity, buf: &mut [u8], gpu: u16, piece: Piece<'_>, want: Option<Pattern>) {
    let half = (buf.len() / 2).max(1);
    let (exp, got) = buf.split_at_mut(half.min(buf.len()));
    let len = piece.len();
    let mut off = 0u64;
    while off < len {
        let n = ((len - off) as usize).min(exp.len()).min(got.len());
        let (Some(x), Some(y)) = (exp.get_mut(..n), got.get_mut(..n)) else {
            break;
        };
        if n == 0 {
            break;
        }
        match want {
            Some(p) => p.advance(off).fill(x),
            None => x.fill(0),
        }
        match piece {
            Piece::Zero { .. } => y.fill(0),
            Piece::Pattern { pattern, .. } => pattern.advance(off).fill(y),
            Piece::Bytes { bytes, .. } => {
                let o = off as usize;
                match bytes.get(o..o + n) {
                    Some(src) => y.copy_from_slice(src),
                    None => break,
                }
            }
        }
        if x != y {
            let bad = x.iter().zip(y.iter()).filter(|(p, q)| p != q).count() as u64;
            if let Some(i) = x.iter().zip(y.iter()).position(|(p, q)| p != q) {
                out.example(
                    gpu,
                    piece.addr() + off + i as u64,
                    x.get(i).copied().unwrap_or(0),
                    y.get(i).copied().unwrap_or(0),
                    want.is_some(),
                );
            }
            if want.is_some() {
                out.bytes_mismatched += bad;
            } else {
                out.bytes_stray += bad;
            }
        }
        off += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ethlink_endpoint::MemoryConfig;

    fn bytes(seed: u64, offset: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        Pattern::new(seed, offset).fill(&mut v);
        v
    }

    #[test]
    fn reference_applies_writes_in_order() {
        let mut g = GpuRef::default();
        g.apply(0, 100, Content::Pattern { seed: 1, base: 0 });
        g.apply(50, 150, Content::Pattern { seed: 2, base: 50 });
        g.apply(10, 20, Content::Unknown);
        let mut out = vec![0u8; 10];
        assert!(g.expected(0, &mut out));
        assert_eq!(out, bytes(1, 0, 10));
        assert!(!g.expected(15, &mut out));
        assert!(g.expected(60, &mut out));
        assert_eq!(out, bytes(2, 10, 10));
        assert!(g.expected(200, &mut out));
        assert_eq!(out, vec![0; 10]);
        g.apply(0, 150, Content::Pattern { seed: 3, base: 0 });
        assert_eq!(g.map.len(), 1);
    }

    const LEN: u64 = 3 * 4096 + 100;

    /// One GPU that received pattern 5 at 0x10000 (kept described) and pattern 6 at 0x20000
    /// (received as literal bytes), and staged pattern 7 at 0x40000.
    fn written() -> (Reference, Memory) {
        let mut m = Memory::new(MemoryConfig {
            global_size: 1 << 20,
            ..MemoryConfig::default()
        })
        .unwrap();
        m.write_pattern(Space::Global, 0x10000, LEN, Pattern::new(5, 0))
            .unwrap();
        m.write(Space::Global, 0x20000, &bytes(6, 0, LEN as usize))
            .unwrap();
        m.write_pattern(Space::Global, 0x40000, 500, Pattern::new(7, 0))
            .unwrap();
        let mut r = Reference::new(1);
        r.write(0, 0x10000, LEN, 5, true);
        r.write(0, 0x20000, LEN, 6, true);
        r.add_local(0, 0x40000, 0x40000 + 500);
        (r, m)
    }

    #[test]
    fn described_and_literal_ranges_verify_clean() {
        let (mut r, m) = written();
        assert_eq!(m.described(Space::Global).count(), 2);
        let i = r.verify([&m].into_iter());
        assert!(i.is_clean(), "{i:?}");
        assert_eq!(i.bytes_checked, 2 * LEN);
        assert_eq!(i.writes_ok, 2);
        // The same bytes held another way (literal, or described from another seed's place)
        // are as good.
        let mut m2 = m.clone();
        m2.write(Space::Global, 0x10000, &bytes(5, 0, LEN as usize))
            .unwrap();
        m2.write_pattern(Space::Global, 0x20000, LEN, Pattern::new(6, 0))
            .unwrap();
        assert!(m2.described(Space::Global).all(|(s, _, _)| s != 0x10000));
        assert!(r.verify([&m2].into_iter()).is_clean());
    }

    /// A single wrong byte is caught wherever it is: inside a described range (a literal byte
    /// written over it), in literal bytes, in a staging buffer's neighbour, far from anything.
    #[test]
    fn a_single_wrong_byte_anywhere_is_caught() {
        let (mut r, m) = written();
        for (base, seed) in [(0x10000u64, 5u64), (0x20000, 6)] {
            for off in [0, 1, 7, 8, 4095, 4096, 5000, LEN - 8, LEN - 1] {
                let mut bad = m.clone();
                let a = base + off;
                let good = Pattern::new(seed, off).byte(0);
                bad.write(Space::Global, a, &[good ^ 0x80]).unwrap();
                let i = r.verify([&bad].into_iter());
                assert_eq!(i.bytes_mismatched, 1, "{a:#x}");
                assert_eq!(i.bytes_stray, 0);
                assert_eq!(i.bytes_checked, 2 * LEN);
                assert_eq!(
                    i.examples,
                    [Mismatch {
                        gpu: 0,
                        addr: a,
                        expected: good,
                        found: good ^ 0x80,
                        written: true
                    }]
                );
                assert!(!i.is_clean());
            }
        }
        // A described range whose description is one byte off: every byte compared, all wrong
        // but the few that agree by chance.
        let mut shifted = m.clone();
        shifted
            .write_pattern(Space::Global, 0x10000, LEN, Pattern::new(5, 1))
            .unwrap();
        let i = r.verify([&shifted].into_iter());
        assert!(i.bytes_mismatched > LEN - LEN / 64, "{i:?}");
        // Bytes missing (zero where a pattern was written).
        let mut lost = m.clone();
        lost.fill(Space::Global, 0x10000 + 100, 3, 0).unwrap();
        let zeros = bytes(5, 100, 3).iter().filter(|&&b| b != 0).count() as u64;
        assert_eq!(r.verify([&lost].into_iter()).bytes_mismatched, zeros);
        // Stray bytes: literal or described, next to a written range or far away; the staging
        // buffer is not checked.
        for (a, stray) in [(0x10000 + LEN, 1u64), (0xF_FFFF, 1), (0x40000 + 499, 0)] {
            let mut bad = m.clone();
            bad.write(Space::Global, a, &[9]).unwrap();
            let i = r.verify([&bad].into_iter());
            assert_eq!((i.bytes_stray, i.bytes_mismatched), (stray, 0), "{a:#x}");
        }
        let mut bad = m.clone();
        bad.write_pattern(Space::Global, 0x80000, 64, Pattern::new(1, 0))
            .unwrap();
        let nonzero = bytes(1, 0, 64).iter().filter(|&&b| b != 0).count() as u64;
        let i = r.verify([&bad].into_iter());
        assert_eq!(i.bytes_stray, nonzero);
        assert_eq!(
            i.examples[0].addr,
            0x80000 + bytes(1, 0, 64).iter().position(|&b| b != 0).unwrap() as u64
        );
        assert!(!i.examples[0].written);
    }
}

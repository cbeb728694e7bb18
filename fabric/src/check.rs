//! End-to-end data integrity: the data pattern every write carries, and the reference of what
//! every GPU's memory must hold.
//!
//! A write's bytes are a pattern named by a 64-bit seed: byte `i` is byte `i % 8` (little-endian)
//! of word `i / 8`, and word `j` is a multiplicative hash of `j % 8` and the SplitMix64 mix of the
//! seed and the 64-byte block `j / 8` (any byte can be computed alone, so any range can be
//! checked). The reference keeps, per GPU, the ranges of
//! global memory written so far as disjoint intervals, each either "pattern `seed` starting at
//! `base`" or "unknown" (an operation that ended with an error may have written some of its
//! bytes). Writes are applied in the order they completed; the workloads never have two writes
//! to overlapping ranges outstanding at once, so that order is the order they were performed in.
//! At the end [`Reference::verify`] reads every known byte back from the GPU's memory, and
//! checks that every allocated byte outside the written ranges and the GPU's own staging
//! buffers is still zero.

use std::collections::BTreeMap;

use ethlink_endpoint::Memory;
use ethlink_protocol::Space;

/// SplitMix64 finaliser.
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Word `j` of pattern `seed`: one SplitMix64 mix per 64-byte block, one multiply per word.
fn word(seed: u64, j: u64) -> u64 {
    block_word(block_key(seed, j / 8), j % 8)
}

fn block_key(seed: u64, block: u64) -> u64 {
    mix64(seed ^ block.wrapping_mul(0xD1B5_4A32_D192_ED03))
}

fn block_word(key: u64, k: u64) -> u64 {
    let z = (key ^ (k + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z ^ (z >> 29)
}

/// Writes bytes `offset .. offset + out.len()` of pattern `seed` into `out`.
pub(crate) fn fill_pattern(seed: u64, offset: u64, out: &mut [u8]) {
    let mut pos = offset;
    let mut i = 0;
    // Leading bytes up to a word boundary.
    while i < out.len() && !pos.is_multiple_of(8) {
        let b = word(seed, pos / 8).to_le_bytes();
        if let (Some(o), Some(v)) = (out.get_mut(i), b.get((pos % 8) as usize)) {
            *o = *v;
        }
        i += 1;
        pos += 1;
    }
    let mut chunks = out.get_mut(i..).unwrap_or(&mut []).chunks_exact_mut(8);
    let mut block = u64::MAX;
    let mut key = 0;
    for c in &mut chunks {
        let j = pos / 8;
        if j / 8 != block {
            block = j / 8;
            key = block_key(seed, block);
        }
        c.copy_from_slice(&block_word(key, j % 8).to_le_bytes());
        pos += 8;
    }
    let rest = chunks.into_remainder();
    let b = word(seed, pos / 8).to_le_bytes();
    for (o, v) in rest.iter_mut().zip(b) {
        *o = v;
    }
}

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
                        fill_pattern(seed, lo - base, dst);
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

    /// Reads back every known range of every GPU and looks for stray bytes.
    ///
    /// The result adds the counts of the writes and loads seen during the run; calling it again
    /// checks the memories afresh.
    pub(crate) fn verify<'a>(&mut self, mems: impl Iterator<Item = &'a Memory>) -> Integrity {
        let mut out = self.integrity.clone();
        let mut exp = vec![0u8; 1 << 16];
        let mut got = vec![0u8; 1 << 16];
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
                let mut a = s;
                while a < e {
                    let n = ((e - a) as usize).min(exp.len());
                    let (Some(x), Some(y)) = (exp.get_mut(..n), got.get_mut(..n)) else {
                        break;
                    };
                    fill_pattern(seed, a - base, x);
                    if mem.read(Space::Global, a, y).is_err() {
                        y.fill(!0);
                    }
                    out.bytes_checked += n as u64;
                    if x != y {
                        let bad = x.iter().zip(y.iter()).filter(|(p, q)| p != q).count();
                        out.bytes_mismatched += bad as u64;
                        if let Some(i) = x.iter().zip(y.iter()).position(|(p, q)| p != q)
                            && out.examples.len() < 16
                        {
                            out.examples.push(Mismatch {
                                gpu,
                                addr: a + i as u64,
                                expected: x.get(i).copied().unwrap_or(0),
                                found: y.get(i).copied().unwrap_or(0),
                                written: true,
                            });
                        }
                    }
                    a += n as u64;
                }
            }
            // Stray bytes: allocated, non-zero, outside every written range and staging buffer.
            let mut allowed: Vec<(u64, u64)> = g.map.iter().map(|(&s, &(e, _))| (s, e)).collect();
            allowed.extend(g.local.iter().copied());
            allowed.sort_unstable();
            let mut merged: Vec<(u64, u64)> = Vec::with_capacity(allowed.len());
            for (s, e) in allowed {
                match merged.last_mut() {
                    Some(last) if s <= last.1 => last.1 = last.1.max(e),
                    _ => merged.push((s, e)),
                }
            }
            let mut k = 0;
            for (page, bytes) in mem.pages(Space::Global) {
                let end = page + bytes.len() as u64;
                while merged.get(k).is_some_and(|&(_, e)| e <= page) {
                    k += 1;
                }
                let mut a = page;
                let mut j = k;
                loop {
                    let next = merged.get(j).copied().filter(|&(s, _)| s < end);
                    let gap_end = next.map_or(end, |(s, _)| s.max(a));
                    if gap_end > a {
                        let lo = (a - page) as usize;
                        let hi = (gap_end - page) as usize;
                        if let Some(sl) = bytes.get(lo..hi) {
                            let bad = sl.iter().filter(|&&b| b != 0).count();
                            if bad > 0 {
                                out.bytes_stray += bad as u64;
                                if let Some(i) = sl.iter().position(|&b| b != 0)
                                    && out.examples.len() < 16
                                {
                                    out.examples.push(Mismatch {
                                        gpu,
                                        addr: a + i as u64,
                                        expected: 0,
                                        found: sl.get(i).copied().unwrap_or(0),
                                        written: false,
                                    });
                                }
                            }
                        }
                    }
                    match next {
                        Some((_, e)) => {
                            a = a.max(e);
                            j += 1;
                            if a >= end {
                                break;
                            }
                        }
                        None => break,
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_is_position_addressed() {
        let mut whole = vec![0u8; 100];
        fill_pattern(7, 0, &mut whole);
        for off in 0..20 {
            let mut part = vec![0u8; 50];
            fill_pattern(7, off, &mut part);
            assert_eq!(&part[..], &whole[off as usize..off as usize + 50]);
        }
        let mut other = vec![0u8; 100];
        fill_pattern(8, 0, &mut other);
        assert_ne!(whole, other);
    }

    #[test]
    fn reference_applies_writes_in_order() {
        let mut g = GpuRef::default();
        g.apply(0, 100, Content::Pattern { seed: 1, base: 0 });
        g.apply(50, 150, Content::Pattern { seed: 2, base: 50 });
        g.apply(10, 20, Content::Unknown);
        let mut out = vec![0u8; 10];
        assert!(g.expected(0, &mut out));
        let mut p = vec![0u8; 10];
        fill_pattern(1, 0, &mut p);
        assert_eq!(out, p);
        assert!(!g.expected(15, &mut out));
        assert!(g.expected(60, &mut out));
        fill_pattern(2, 10, &mut p);
        assert_eq!(out, p);
        assert!(g.expected(200, &mut out));
        assert_eq!(out, vec![0; 10]);
        g.apply(0, 150, Content::Pattern { seed: 3, base: 0 });
        assert_eq!(g.map.len(), 1);
    }
}

//! Bookkeeping of every operation the workloads issue: what it was, when, what it wrote, and
//! how it ended. It finds operations that never complete, completions that repeat or match
//! nothing, and feeds the integrity reference with the writes as they complete.

use std::collections::BTreeMap;

use ethlink_endpoint::{Completion, CompletionData, CompletionStatus, OpId, OpKind};

use crate::check::Reference;
use crate::report::{Histogram, Latency, OpKindReport, Operations};

/// What an operation writes or reads, for the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Nothing the reference follows (the workload tells it itself).
    None,
    /// Writes pattern `seed` to `[addr, addr + len)` of `gpu`.
    Write {
        gpu: u16,
        addr: u64,
        len: u64,
        seed: u64,
    },
    /// Reads `[addr, addr + len)` of `gpu`.
    Read { gpu: u16, addr: u64 },
    /// Writes `[addr, addr + len)` of `gpu`, which the workload records itself when it
    /// completes (the tracker needs the range only while the write is outstanding).
    Writes { gpu: u16, addr: u64, len: u64 },
}

/// One operation outstanding.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OpRec {
    /// The workload that issued it.
    pub(crate) workload: u16,
    /// The workload's own token.
    pub(crate) token: u64,
    pub(crate) kind: OpKind,
    pub(crate) issued_ns: u64,
    pub(crate) bytes: u64,
    pub(crate) effect: Effect,
}

#[derive(Debug, Default)]
struct KindAcc {
    issued: u64,
    by_class: [u64; CompletionStatus::CLASSES],
    lat: Vec<u32>,
    lat_ok: Vec<u32>,
    bytes_ok: u64,
}

/// Every operation of the run.
#[derive(Debug)]
pub(crate) struct Tracker {
    ls: Vec<Vec<Option<OpRec>>>,
    other: Vec<BTreeMap<OpId, OpRec>>,
    kinds: Vec<KindAcc>,
    pub(crate) outstanding: u64,
    pub(crate) issued: u64,
    pub(crate) completed: u64,
    pub(crate) completed_ok: u64,
    pub(crate) bytes_ok: u64,
    pub(crate) duplicated: u64,
    pub(crate) unexpected: u64,
    pub(crate) refused_no_tag: u64,
    pub(crate) rdma_queue_waits: u64,
    pub(crate) reference: Reference,
    seed: u64,
    seeds_drawn: u64,
    /// Times (ns) around which an operation may end in error: each outage's start and end,
    /// with the grace time after.
    windows: Vec<(u64, u64)>,
    pub(crate) errors_explained: u64,
    pub(crate) errors_unexplained: u64,
}

impl Tracker {
    pub(crate) fn new(gpus: usize, seed: u64) -> Self {
        Tracker {
            ls: (0..gpus).map(|_| Vec::new()).collect(),
            other: (0..gpus).map(|_| BTreeMap::new()).collect(),
            kinds: (0..OpKind::ALL.len()).map(|_| KindAcc::default()).collect(),
            outstanding: 0,
            issued: 0,
            completed: 0,
            completed_ok: 0,
            bytes_ok: 0,
            duplicated: 0,
            unexpected: 0,
            refused_no_tag: 0,
            rdma_queue_waits: 0,
            reference: Reference::new(gpus),
            seed,
            seeds_drawn: 0,
            windows: Vec::new(),
            errors_explained: 0,
            errors_unexplained: 0,
        }
    }

    /// An operation ending in error explains itself if it was outstanding at some time of
    /// `[from, to]` (ns).
    pub(crate) fn explain_errors(&mut self, from: u64, to: u64) {
        self.windows.push((from, to));
    }

    /// The ranges of every write still outstanding: (GPU, address, length).
    pub(crate) fn writes_outstanding(&self) -> Vec<(u16, u64, u64)> {
        let ls = self.ls.iter().flat_map(|v| v.iter().flatten());
        let other = self.other.iter().flat_map(|m| m.values());
        ls.chain(other)
            .filter_map(|r| match r.effect {
                Effect::Write { gpu, addr, len, .. } | Effect::Writes { gpu, addr, len } => {
                    Some((gpu, addr, len))
                }
                Effect::None | Effect::Read { .. } => None,
            })
            .collect()
    }

    /// A fresh pattern seed, unique in the run.
    pub(crate) fn next_seed(&mut self) -> u64 {
        self.seeds_drawn += 1;
        crate::check::mix64(self.seed ^ self.seeds_drawn.wrapping_mul(0xA24B_AED4_963E_E407))
    }

    /// An operation was accepted by GPU `gpu` with id `id`.
    pub(crate) fn issued(&mut self, gpu: u16, id: OpId, rec: OpRec) {
        let g = usize::from(gpu);
        match id {
            OpId::Ls(tag) => {
                let Some(v) = self.ls.get_mut(g) else { return };
                let t = usize::from(tag);
                if v.len() <= t {
                    v.resize(t + 1, None);
                }
                if let Some(slot) = v.get_mut(t) {
                    if slot.is_some() {
                        // A tag handed out while we still hold an operation on it.
                        self.unexpected += 1;
                    }
                    *slot = Some(rec);
                }
            }
            other => {
                if let Some(m) = self.other.get_mut(g)
                    && m.insert(other, rec).is_some()
                {
                    self.unexpected += 1;
                }
            }
        }
        if let Some(k) = self.kinds.get_mut(rec.kind.index()) {
            k.issued += 1;
        }
        self.issued += 1;
        self.outstanding += 1;
    }

    /// GPU `gpu` reported `c`: the record of its operation, if it was outstanding.
    pub(crate) fn complete(&mut self, gpu: u16, c: &Completion) -> Option<OpRec> {
        let g = usize::from(gpu);
        let rec = match c.id {
            OpId::Ls(tag) => self
                .ls
                .get_mut(g)
                .and_then(|v| v.get_mut(usize::from(tag)))
                .and_then(Option::take),
            other => self.other.get_mut(g).and_then(|m| m.remove(&other)),
        };
        let Some(rec) = rec else {
            self.duplicated += 1;
            return None;
        };
        if rec.kind != c.kind || rec.issued_ns != c.issued.as_nanos() {
            self.unexpected += 1;
        }
        self.outstanding = self.outstanding.saturating_sub(1);
        self.completed += 1;
        let ok = c.status.is_ok();
        let lat = u32::try_from(c.completed.as_nanos().saturating_sub(c.issued.as_nanos()))
            .unwrap_or(u32::MAX);
        if let Some(k) = self.kinds.get_mut(rec.kind.index()) {
            if let Some(n) = k.by_class.get_mut(c.status.class()) {
                *n += 1;
            }
            k.lat.push(lat);
            if ok {
                k.lat_ok.push(lat);
                k.bytes_ok += rec.bytes;
            }
        }
        if ok {
            self.completed_ok += 1;
            self.bytes_ok += rec.bytes;
        } else {
            let (from, to) = (c.issued.as_nanos(), c.completed.as_nanos());
            if self.windows.iter().any(|&(s, e)| from <= e && s <= to) {
                self.errors_explained += 1;
            } else {
                self.errors_unexplained += 1;
            }
        }
        match rec.effect {
            Effect::None | Effect::Writes { .. } => {}
            Effect::Write {
                gpu,
                addr,
                len,
                seed,
            } => self.reference.write(usize::from(gpu), addr, len, seed, ok),
            Effect::Read { gpu, addr } => {
                if ok && let CompletionData::Load(b) = c.data {
                    self.reference
                        .check_load(usize::from(gpu), addr, b.as_slice());
                }
            }
        }
        Some(rec)
    }

    /// The operations report.
    pub(crate) fn report(&mut self) -> Operations {
        let mut kinds = Vec::new();
        let mut completed_error = 0;
        for kind in OpKind::ALL {
            let Some(k) = self.kinds.get_mut(kind.index()) else {
                continue;
            };
            if k.issued == 0 && k.lat.is_empty() {
                continue;
            }
            let by_status = k
                .by_class
                .iter()
                .enumerate()
                .filter(|&(_, &n)| n > 0)
                .map(|(c, &n)| (CompletionStatus::class_name(c).to_owned(), n))
                .collect();
            completed_error += k.by_class.iter().skip(1).sum::<u64>();
            let latency = Latency::of(&mut k.lat);
            let histogram = Histogram::of_sorted(&k.lat);
            kinds.push(OpKindReport {
                kind: kind.name().to_owned(),
                issued: k.issued,
                by_status,
                latency,
                latency_ok: Latency::of(&mut k.lat_ok),
                histogram,
                bytes_ok: k.bytes_ok,
            });
        }
        Operations {
            kinds,
            issued: self.issued,
            completed: self.completed,
            completed_ok: self.completed_ok,
            completed_error,
            errors_explained: self.errors_explained,
            errors_unexplained: self.errors_unexplained,
            lost: self.outstanding,
            cut_off: 0,
            duplicated: self.duplicated,
            unexpected: self.unexpected,
            refused_no_tag: self.refused_no_tag,
            rdma_queue_waits: self.rdma_queue_waits,
        }
    }
}

//! The workloads: load-store traffic, and RDMA collectives run as dependency graphs of writes.
//!
//! Memory layout: every workload has, on every GPU, a receive area (where others write to it)
//! and a staging area (where it writes the source bytes of its own RDMA writes), both inside
//! the GPU's one registered region. Areas of different workloads never overlap, and within a
//! workload every source writes its own part of a receive area, so that no two writes to
//! overlapping bytes are ever outstanding at once: the order in which writes complete is the
//! order in which their bytes land, and the integrity reference can replay it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use ethlink_endpoint::{
    Bytes, Completion, IssueError, LsOp, LsRequest, Ordering, PostError, Remote,
};
use ethlink_protocol::{GpuId, Space};
use rand_core::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::build::key_of;
use crate::check::mix64;
use crate::report::CollectiveRow;
use crate::scenario::{Scenario, ScenarioError, Workload};
use crate::track::Effect;
use ethlink_endpoint::pattern::Pattern;

mod litmus_wl;
pub(crate) use litmus_wl::LitmusState;

/// What a workload may do, and when: the fabric hands every call of a workload one of these.
pub(crate) trait Host {
    /// Now, ps.
    fn now_ps(&self) -> u64;
    /// A fresh pattern seed.
    fn seed(&mut self) -> u64;
    /// Issues a load-store operation on GPU `gpu`, tracked with `token`, `bytes` and `effect`.
    fn issue(
        &mut self,
        gpu: u16,
        req: LsRequest,
        token: u64,
        bytes: u64,
        effect: Effect,
    ) -> Result<u16, IssueError>;
    /// Describes `gpu`'s staging bytes at `stage` as a fresh pattern and posts an RDMA write of
    /// them to `dst` at `addr`.
    fn post_write(
        &mut self,
        gpu: u16,
        stage: u64,
        dst: u16,
        addr: u64,
        len: u64,
        token: u64,
    ) -> Result<u64, PostError>;
    /// Wakes the workload at `at_ps` with `token`.
    fn wake(&mut self, at_ps: u64, token: u64);
    /// Asks to be told when GPU `gpu` completes an operation (it may then have room).
    fn block(&mut self, gpu: u16);
    /// Records in the integrity reference a write of pattern `seed` to `gpu`'s `[addr, addr +
    /// len)` that completed OK (`ok`) or with an error.
    fn reference_write(&mut self, gpu: u16, addr: u64, len: u64, seed: u64, ok: bool);
    /// Records a load of `gpu`'s `addr` that the workload checked itself: it expected
    /// `expected` and the load returned `found`.
    fn load_checked(&mut self, gpu: u16, addr: u64, expected: &[u8], found: &[u8]);
    /// Counts an open-loop arrival that found no tag.
    fn refused_no_tag(&mut self);
    /// Records that `gpu`'s `[addr, addr + len)` holds one of several writes that completed
    /// OK, which one the protocol leaves open (TXN-5-6).
    fn reference_unsure(&mut self, gpu: u16, addr: u64, len: u64);
    /// Counts a load of an ordered stream that cannot be judged (TXN-5-6).
    fn load_unjudged(&mut self);
    /// Posts an RDMA operation of 8 bytes from GPU `gpu`: a write of `value`, put first at
    /// `local` in its memory, to `dst`'s `addr`; or (`value` none) a read of `dst`'s `addr` into
    /// `local`. The reference leaves the bytes it writes unknown.
    fn post_rdma8(
        &mut self,
        gpu: u16,
        local: u64,
        dst: u16,
        addr: u64,
        value: Option<u64>,
        token: u64,
    ) -> Result<u64, PostError>;
    /// The 8 bytes at `addr` of GPU `gpu`'s own memory, little-endian.
    fn read_local8(&mut self, gpu: u16, addr: u64) -> Option<u64>;
    /// The Fence operation (TXN-4-5) on GPU `gpu`, tracked with `token`.
    fn fence(&mut self, gpu: u16, token: u64) -> Result<u64, ethlink_endpoint::FenceError>;
}

const PS_PER_NS: u64 = 1000;
const ALIGN: u64 = 1 << 20;

/// The receive and staging areas of one workload (the same on every GPU).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Area {
    pub(crate) recv_base: u64,
    pub(crate) recv_len: u64,
    pub(crate) stage_base: u64,
    pub(crate) stage_len: u64,
    /// Bytes of one staging slot.
    pub(crate) slot: u64,
}

fn participants(list: &Option<Vec<u16>>, gpus: u16) -> Vec<u16> {
    list.clone().unwrap_or_else(|| (0..gpus).collect())
}

/// Bytes per slot of a load-store workload.
fn ls_slot(l: &crate::scenario::LoadStore) -> u64 {
    l.largest_size().unwrap_or(64).div_ceil(64) * 64
}

/// Slots per (source, target) of a load-store workload: the ordinary ones, then each ordered
/// stream's own. At most 2^20 + (2^32 - 1) * 2^16, below 2^49: a u64 holds it and every
/// address within it.
fn ls_pair_slots(l: &crate::scenario::LoadStore) -> u64 {
    if l.stream_slots > 0 {
        u64::from(l.slots) + u64::from(l.streams.max(1)) * u64::from(l.stream_slots)
    } else {
        u64::from(l.slots)
    }
}

/// (receive bytes, staging slots, bytes per staging slot) of workload `w`. The receive bytes
/// are a u128, which holds every product of the scenario's ranges: [`layout`] refuses what does
/// not fit the GPU's memory, so every address a workload forms fits a u64.
fn needs(s: &Scenario, w: &Workload) -> (u128, u64, u64) {
    let g = u64::from(s.topology.gpus);
    let wide = |a: u64, b: u64| u128::from(a) * u128::from(b);
    match w {
        Workload::LoadStore(l) => (wide(g, ls_pair_slots(l)) * u128::from(ls_slot(l)), 0, 0),
        Workload::AllToAll(a) => {
            let n = participants(&a.gpus, s.topology.gpus).len() as u64;
            let win = u64::from(a.window).min(n.saturating_sub(1)).max(1);
            (wide(g, a.bytes_per_pair), win, a.bytes_per_pair)
        }
        Workload::RingAllreduce(c)
        | Workload::AllGather(c)
        | Workload::ReduceScatter(c)
        | Workload::HalvingDoublingAllreduce(c) => {
            let n = participants(&c.gpus, s.topology.gpus).len() as u64;
            let max = c.sizes.iter().copied().max().unwrap_or(0);
            let (steps, chunk) = match w {
                Workload::RingAllreduce(_) => (2 * (n - 1), max.div_ceil(n)),
                Workload::HalvingDoublingAllreduce(_) => {
                    (2 * u64::from(n.trailing_zeros()), max.div_ceil(2))
                }
                _ => (n - 1, max.div_ceil(n)),
            };
            (wide(steps, chunk), 1, chunk)
        }
        Workload::SendRecv(r) => (wide(u64::from(r.microbatches), r.bytes), 1, r.bytes),
        Workload::Incast(i) => (wide(g, i.bytes), 1, i.bytes),
        Workload::Permutation(p) => (wide(g, p.bytes), 1, p.bytes),
    }
}

/// The areas of every workload of `s`, or an error if they do not fit the GPU's memory.
pub(crate) fn layout(s: &Scenario) -> Result<Vec<Area>, ScenarioError> {
    // In u128, so that no sum or product of the scenario's ranges overflows: what is past
    // global_bytes is refused with the true figure.
    let align = u128::from(ALIGN);
    let mut at = align;
    let mut out = Vec::with_capacity(s.traffic.len());
    for (i, w) in s.traffic.iter().enumerate() {
        let (recv, slots, slot) = needs(s, w);
        let recv_base = at;
        at += recv.div_ceil(align) * align;
        let stage_base = at;
        let stage_len = u128::from(slots) * u128::from(slot);
        at += stage_len.div_ceil(align) * align + align;
        let fits = |v: u128| u64::try_from(v).ok();
        match (
            fits(recv_base),
            fits(recv),
            fits(stage_base),
            fits(stage_len),
        ) {
            (Some(recv_base), Some(recv_len), Some(stage_base), Some(stage_len))
                if at <= u128::from(s.endpoint.global_bytes) =>
            {
                out.push(Area {
                    recv_base,
                    recv_len,
                    stage_base,
                    stage_len,
                    slot,
                });
            }
            _ => {
                let why = match w {
                    Workload::LoadStore(l) => format!(
                        "; this load_store alone needs {recv}: {} GPUs x {} slots per (source, \
                         target) (slots + streams x stream_slots) x {} bytes per slot",
                        s.topology.gpus,
                        ls_pair_slots(l),
                        ls_slot(l)
                    ),
                    _ => String::new(),
                };
                return crate::scenario::err(
                    format!("traffic.{i}"),
                    format!(
                        "the workloads' buffers need {at} bytes of each GPU's memory, more than \
                         endpoint.global_bytes ({}){why}",
                        s.endpoint.global_bytes
                    ),
                );
            }
        }
    }
    Ok(out)
}

/// A workload's state.
#[derive(Debug)]
pub(crate) enum Wl {
    Ls(Box<LsState>),
    Coll(Box<CollState>),
    Litmus(Box<LitmusState>),
}

impl Wl {
    pub(crate) fn new(idx: u16, w: &Workload, s: &Scenario, area: Area) -> Wl {
        let rng =
            Pcg64Mcg::seed_from_u64(mix64(s.seed ^ ((u64::from(idx) + 1) * 0x57A7_E5EE_D000)));
        match w {
            Workload::LoadStore(l) => Wl::Ls(Box::new(LsState::new(l, s, area, rng))),
            other => Wl::Coll(Box::new(CollState::new(idx, other, s, area, rng))),
        }
    }

    pub(crate) fn is_done(&self) -> bool {
        match self {
            Wl::Ls(l) => l.done,
            Wl::Coll(c) => c.done,
            Wl::Litmus(t) => t.done,
        }
    }

    pub(crate) fn is_finite(&self) -> bool {
        match self {
            Wl::Ls(l) => l.limit.is_some(),
            Wl::Coll(c) => c.iterations > 0,
            Wl::Litmus(_) => true,
        }
    }

    pub(crate) fn start(&mut self, cx: &mut dyn Host) {
        match self {
            Wl::Ls(l) => l.start(cx),
            Wl::Coll(c) => c.start(cx),
            Wl::Litmus(t) => t.start(cx),
        }
    }

    pub(crate) fn stop(&mut self, cx: &mut dyn Host) {
        match self {
            Wl::Ls(l) => l.stopping = true,
            Wl::Coll(c) => c.stop(cx),
            Wl::Litmus(_) => {}
        }
    }

    pub(crate) fn on_completion(
        &mut self,
        cx: &mut dyn Host,
        gpu: u16,
        token: u64,
        c: &Completion,
    ) {
        match self {
            Wl::Ls(l) => l.on_completion(cx, gpu, token, c),
            Wl::Coll(k) => k.on_completion(cx, token, c),
            Wl::Litmus(t) => t.on_completion(cx, token, c),
        }
    }

    pub(crate) fn on_room(&mut self, cx: &mut dyn Host, gpu: u16) {
        match self {
            Wl::Ls(l) => l.on_room(cx, gpu),
            Wl::Coll(c) => c.on_room(cx, gpu),
            Wl::Litmus(_) => {}
        }
    }

    pub(crate) fn on_wake(&mut self, cx: &mut dyn Host, token: u64) {
        match self {
            Wl::Ls(l) => l.on_wake(cx, token),
            Wl::Coll(_) => {}
            Wl::Litmus(t) => t.on_wake(cx, token),
        }
    }

    pub(crate) fn rows(&self, gpu_line_gbps: f64) -> Vec<CollectiveRow> {
        match self {
            Wl::Ls(_) | Wl::Litmus(_) => Vec::new(),
            Wl::Coll(c) => c.rows(gpu_line_gbps),
        }
    }
}

fn uniform(rng: &mut Pcg64Mcg) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

fn below(rng: &mut Pcg64Mcg, n: u64) -> u64 {
    if n <= 1 {
        return 0;
    }
    // Lemire's multiply-shift; the tiny bias is irrelevant here and the result is fixed by the
    // seed.
    ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u64
}

// ----- load / store --------------------------------------------------------------------------

/// Most ordinary slots per (source, target) of a load-store workload (`slots`), as the scenario
/// checks it: an ordinary slot's number is below it, and fits the 20 bits of its token.
pub(crate) const MAX_LS_SLOTS: u32 = 1 << 20;

/// What the token of a load-store operation carries, packed into the u64 the fabric keeps with
/// the operation: the source's index (bits 0..20), the target (bits 20..36), an ordinary slot
/// (bits 36..56) or the mark of a stream's own slot (bit 61), and whether it is a store (bit
/// 62). Every field fits its bits by construction: at most [`MAX_GPUS`] sources, GPU ids are
/// u16, and an ordinary slot is below [`MAX_LS_SLOTS`]. A stream's own slot may need 49 bits:
/// its number is kept with the operation in [`LsState::stream_ops`] instead.
///
/// [`MAX_GPUS`]: crate::scenario::MAX_GPUS
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LsToken {
    src: u32,
    dst: u16,
    /// The ordinary slot; `None` for a stream's own slot.
    slot: Option<u32>,
    store: bool,
}

const _: () = assert!(
    MAX_LS_SLOTS <= 1 << 20 && crate::scenario::MAX_GPUS as u32 <= 1 << 20,
    "the token's fields hold every source index and ordinary slot"
);

impl LsToken {
    const FIELD: u64 = 0xF_FFFF;
    const STREAM: u64 = 1 << 61;
    const STORE: u64 = 1 << 62;

    fn encode(self) -> u64 {
        let slot = self
            .slot
            .map_or(Self::STREAM, |s| (u64::from(s) & Self::FIELD) << 36);
        let store = if self.store { Self::STORE } else { 0 };
        (u64::from(self.src) & Self::FIELD) | u64::from(self.dst) << 20 | slot | store
    }

    fn decode(t: u64) -> LsToken {
        LsToken {
            src: (t & Self::FIELD) as u32,
            dst: (t >> 20) as u16,
            slot: (t & Self::STREAM == 0).then_some(((t >> 36) & Self::FIELD) as u32),
            store: t & Self::STORE != 0,
        }
    }
}

#[derive(Debug, Default)]
struct LsSource {
    outstanding: u32,
    issued: u64,
    /// (target, ordinary slot) of the operations outstanding.
    busy: BTreeSet<(u16, u32)>,
    /// Slots, ordinary or of a stream, that a store which ended with an error touched: each of
    /// its bytes was written once or not at all, and a copy may still land up to
    /// `frame_lifetime` later (transaction.md TXN-3-5, TXN-5-7), so loads of the slot are
    /// never judged again. Operations go on using it.
    spoiled: BTreeSet<(u16, u64)>,
    blocked: bool,
}

/// A slot of an ordered stream: what memory holds once every store issued so far is performed
/// (in issue order, TXN-style), and the last store applied to the reference.
#[derive(Debug, Default)]
struct StreamSlot {
    shadow: Vec<u8>,
    applied: u64,
    /// The store last applied to the reference may have been overtaken (see
    /// [`StreamPending::broken`]).
    applied_broken: bool,
    /// The sequence number of the last store issued on the slot.
    last_store: u64,
    /// A store sent again, or overtaken, completed when stores of the slot issued later than it
    /// had been issued, up to this sequence number: the slot holds one of them, and a load issued
    /// before a later store cannot be judged.
    unsure_upto: u64,
}

/// A load of a stream that returned other data than the stores issued before it on the stream
/// wrote, while operations of the stream issued before it were still outstanding. If one of them
/// completes having been sent again, or having been outstanding when an earlier one was sent
/// again, the stream may have been pinned anew between its issue and the load's, and the load
/// may have overtaken a store on the old path (TXN-5-6): it is left unjudged. If they all
/// complete without, it returned wrong data.
#[derive(Debug)]
struct Doubt {
    /// The operations it waits on, by issue order.
    waits: BTreeSet<u64>,
    excused: bool,
    dst: u16,
    addr: u64,
    expected: Vec<u8>,
    found: Vec<u8>,
}

/// An outstanding operation on a stream slot.
#[derive(Debug)]
enum StreamOp {
    Store {
        seq: u64,
        seed: u64,
        addr: u64,
    },
    /// `slot_last`: the sequence number of the last store issued on its slot when it was.
    Load {
        addr: u64,
        expected: Vec<u8>,
        slot_last: u64,
    },
}

/// An outstanding operation on a stream slot, and the slot (numbered after the ordinary ones).
#[derive(Debug)]
struct StreamPending {
    slot: u64,
    /// Its stream, and its place in the issue order of every stream operation.
    stream: u32,
    order: u64,
    /// An operation of its stream issued before it completed, while it was outstanding, having
    /// been sent again: the stream may have been pinned anew between the two issues, and this
    /// one may have overtaken requests on the old path (TXN-5-6).
    broken: bool,
    op: StreamOp,
}

#[derive(Debug)]
pub(crate) struct LsState {
    sources: Vec<u16>,
    /// Per GPU id: index in `sources`.
    src_index: Vec<u32>,
    targets: Vec<u16>,
    cdf: Vec<(f64, u16)>,
    read_share: f64,
    outstanding: Option<u32>,
    mean_gap_ps: f64,
    /// The time limit, ps: an open-loop arrival due later never comes.
    horizon_ps: u64,
    pub(crate) limit: Option<u64>,
    locality: f64,
    hot: u32,
    slots: u32,
    slot: u64,
    ordered_share: f64,
    streams: u32,
    stream_slots: u32,
    pair_slots: u64,
    area: Area,
    src: Vec<LsSource>,
    /// Stream slots by (source index, target, slot).
    stream_state: BTreeMap<(u32, u16, u64), StreamSlot>,
    /// Outstanding operations on stream slots by (GPU, tag).
    stream_ops: BTreeMap<(u16, u16), StreamPending>,
    stream_seq: u64,
    /// Stream operations issued so far.
    stream_order: u64,
    /// Loads waiting to be judged, by (GPU, stream).
    doubts: BTreeMap<(u16, u32), Vec<Doubt>>,
    rng: Pcg64Mcg,
    pub(crate) stopping: bool,
    pub(crate) done: bool,
    data: Vec<u8>,
}

impl LsState {
    fn new(l: &crate::scenario::LoadStore, s: &Scenario, area: Area, rng: Pcg64Mcg) -> Self {
        let sources = participants(&l.gpus, s.topology.gpus);
        let mut src_index = vec![u32::MAX; usize::from(s.topology.gpus)];
        for (i, &g) in sources.iter().enumerate() {
            if let Some(x) = src_index.get_mut(usize::from(g)) {
                *x = i as u32;
            }
        }
        let total: f64 = l.sizes.iter().map(|s| s.weight).sum();
        let mut acc = 0.0;
        let cdf = l
            .sizes
            .iter()
            .map(|s| {
                acc += s.weight / total;
                (acc, s.bytes)
            })
            .collect();
        LsState {
            src: sources.iter().map(|_| LsSource::default()).collect(),
            sources,
            src_index,
            targets: participants(&l.targets, s.topology.gpus),
            cdf,
            read_share: l.read_share,
            outstanding: l.rate_mops.is_none().then_some(l.outstanding),
            mean_gap_ps: l.rate_mops.map_or(0.0, |r| 1e6 / r),
            horizon_ps: s.time_limit_ns.saturating_mul(PS_PER_NS),
            limit: l.ops,
            locality: l.locality,
            hot: l.hot_slots,
            slots: l.slots,
            slot: ls_slot(l),
            ordered_share: l.ordered_share,
            streams: l.streams.max(1),
            stream_slots: l.stream_slots,
            pair_slots: ls_pair_slots(l),
            area,
            stream_state: BTreeMap::new(),
            stream_ops: BTreeMap::new(),
            stream_seq: 0,
            stream_order: 0,
            doubts: BTreeMap::new(),
            rng,
            stopping: false,
            done: false,
            data: vec![0; 256],
        }
    }

    fn start(&mut self, cx: &mut dyn Host) {
        for i in 0..self.sources.len() {
            match self.outstanding {
                Some(_) => self.top_up(cx, i),
                None => self.next_arrival(cx, i as u64),
            }
        }
        self.check_done();
    }

    /// Draws the time to source `token`'s next open-loop arrival and wakes it then, unless
    /// that is after the time limit (at 1e-6 operations per second and less the interval alone
    /// may be past the clock's range): such an arrival never comes.
    fn next_arrival(&mut self, cx: &mut dyn Host, token: u64) {
        // Exponential inter-arrival time, at least 1 ps; 0 x an infinite mean is 0, not NaN.
        let u = uniform(&mut self.rng);
        let x = -(1.0 - u).ln();
        let gap = if x > 0.0 { x * self.mean_gap_ps } else { 0.0 };
        let now = cx.now_ps();
        if gap < self.horizon_ps.saturating_sub(now) as f64 {
            cx.wake(now + (gap.max(1.0) as u64), token);
        }
    }

    fn may_issue(&self, i: usize) -> bool {
        !self.stopping
            && self
                .src
                .get(i)
                .is_some_and(|s| self.limit.is_none_or(|l| s.issued < l))
    }

    fn top_up(&mut self, cx: &mut dyn Host, i: usize) {
        let want = self.outstanding.unwrap_or(0);
        while self.may_issue(i) && self.src.get(i).is_some_and(|s| s.outstanding < want) {
            if !self.issue_one(cx, i) {
                break;
            }
        }
    }

    /// Issues one operation from source `i`; false if it could not.
    fn issue_one(&mut self, cx: &mut dyn Host, i: usize) -> bool {
        let Some(&gpu) = self.sources.get(i) else {
            return false;
        };
        // Target: any of `targets` but the source itself.
        let others = self.targets.len() - usize::from(self.targets.contains(&gpu));
        if others == 0 {
            return false;
        }
        let mut k = below(&mut self.rng, others as u64) as usize;
        let mut dst = 0;
        for &t in &self.targets {
            if t == gpu {
                continue;
            }
            if k == 0 {
                dst = t;
                break;
            }
            k -= 1;
        }
        let u = uniform(&mut self.rng);
        let len = self
            .cdf
            .iter()
            .find(|(c, _)| u < *c)
            .or(self.cdf.last())
            .map_or(64, |&(_, b)| b);
        let load = uniform(&mut self.rng) < self.read_share;
        let stream = (self.ordered_share > 0.0 && uniform(&mut self.rng) < self.ordered_share)
            .then(|| below(&mut self.rng, u64::from(self.streams)) as u32);
        let ordering = stream.map_or(Ordering::Unordered, Ordering::Stream);
        let slot: u64 = match stream {
            Some(k) if self.stream_slots > 0 => {
                // The stream's own slots: shared by its outstanding operations.
                u64::from(self.slots)
                    + u64::from(k) * u64::from(self.stream_slots)
                    + below(&mut self.rng, u64::from(self.stream_slots))
            }
            _ => {
                let hot = uniform(&mut self.rng) < self.locality;
                let range = if hot { self.hot } else { self.slots };
                let first = below(&mut self.rng, u64::from(range)) as u32;
                let Some(src) = self.src.get(i) else {
                    return false;
                };
                let mut slot = None;
                for d in 0..self.slots {
                    let s = (first + d) % self.slots;
                    if !src.busy.contains(&(dst, s)) {
                        slot = Some(s);
                        break;
                    }
                }
                let Some(slot) = slot else { return false };
                u64::from(slot)
            }
        };
        // Within the receive area, which the layout fitted into the GPU's memory.
        let addr = self.area.recv_base + (u64::from(gpu) * self.pair_slots + slot) * self.slot;
        let remote = Remote {
            gpu: GpuId::new(dst).unwrap_or_default(),
            space: Space::Global,
            key: key_of(dst),
            addr,
        };
        let ordinary = u32::try_from(slot).ok().filter(|&s| s < self.slots);
        let token = LsToken {
            src: i as u32,
            dst,
            slot: ordinary,
            store: !load,
        }
        .encode();
        let Some(slot) = ordinary else {
            return self.issue_on_stream(cx, i, gpu, dst, slot, addr, len, load, ordering, token);
        };
        let (op, effect) = if load {
            (LsOp::Load { len }, Effect::Read { gpu: dst, addr })
        } else {
            let seed = cx.seed();
            let buf = self.data.get_mut(..usize::from(len)).unwrap_or(&mut []);
            Pattern::new(seed, 0).fill(buf);
            let Some(data) = Bytes::new(buf) else {
                return false;
            };
            (
                LsOp::Store { data },
                Effect::Write {
                    gpu: dst,
                    addr,
                    len: u64::from(len),
                    seed,
                },
            )
        };
        let req = LsRequest {
            op,
            remote,
            ordering,
        };
        match cx.issue(gpu, req, token, u64::from(len), effect) {
            Ok(_) => {
                if let Some(s) = self.src.get_mut(i) {
                    s.busy.insert((dst, slot));
                    s.outstanding += 1;
                    s.issued += 1;
                }
                true
            }
            Err(IssueError::TagsExhausted { .. }) => {
                if self.outstanding.is_some() {
                    if let Some(s) = self.src.get_mut(i) {
                        s.blocked = true;
                    }
                    cx.block(gpu);
                } else {
                    cx.refused_no_tag();
                }
                false
            }
            Err(IssueError::Invalid { .. }) => false,
        }
    }

    /// Issues an operation on a slot of an ordered stream. Stores write the whole slot, so that
    /// the slot holds the last store performed; loads are checked against the stores issued
    /// before them on the stream (a stream's operations are performed in issue order), whatever
    /// order their completions come back in.
    #[allow(clippy::too_many_arguments)]
    fn issue_on_stream(
        &mut self,
        cx: &mut dyn Host,
        i: usize,
        gpu: u16,
        dst: u16,
        slot: u64,
        addr: u64,
        len: u16,
        load: bool,
        ordering: Ordering,
        token: u64,
    ) -> bool {
        let key = (i as u32, dst, slot);
        let slot_len = self.slot as usize;
        let st = self.stream_state.entry(key).or_insert_with(|| StreamSlot {
            shadow: vec![0; slot_len],
            ..StreamSlot::default()
        });
        let remote = Remote {
            gpu: GpuId::new(dst).unwrap_or_default(),
            space: Space::Global,
            key: key_of(dst),
            addr,
        };
        let (op, pending, bytes) = if load {
            let expected = st.shadow.get(..usize::from(len)).unwrap_or(&[]).to_vec();
            (
                LsOp::Load { len },
                StreamOp::Load {
                    addr,
                    expected,
                    slot_last: st.last_store,
                },
                u64::from(len),
            )
        } else {
            let seed = cx.seed();
            let n = slot_len.min(256);
            let buf = self.data.get_mut(..n).unwrap_or(&mut []);
            Pattern::new(seed, 0).fill(buf);
            let Some(data) = Bytes::new(buf) else {
                return false;
            };
            self.stream_seq += 1;
            (
                LsOp::Store { data },
                StreamOp::Store {
                    seq: self.stream_seq,
                    seed,
                    addr,
                },
                n as u64,
            )
        };
        let req = LsRequest {
            op,
            remote,
            ordering,
        };
        let effect = match pending {
            StreamOp::Store { addr, .. } => Effect::Writes {
                gpu: dst,
                addr,
                len: self.slot,
            },
            StreamOp::Load { .. } => Effect::None,
        };
        match cx.issue(gpu, req, token, bytes, effect) {
            Ok(tag) => {
                if let StreamOp::Store { seq, .. } = pending {
                    st.last_store = seq;
                    if let Some(dst_bytes) = st.shadow.get_mut(..bytes as usize)
                        && let Some(src_bytes) = self.data.get(..bytes as usize)
                    {
                        dst_bytes.copy_from_slice(src_bytes);
                    }
                }
                self.stream_order += 1;
                let stream = match ordering {
                    Ordering::Stream(k) => k,
                    Ordering::Unordered | Ordering::Port(_) => u32::MAX,
                };
                self.stream_ops.insert(
                    (gpu, tag),
                    StreamPending {
                        slot,
                        stream,
                        order: self.stream_order,
                        broken: false,
                        op: pending,
                    },
                );
                if let Some(s) = self.src.get_mut(i) {
                    s.outstanding += 1;
                    s.issued += 1;
                }
                true
            }
            Err(IssueError::TagsExhausted { .. }) => {
                if self.outstanding.is_some() {
                    cx.block(gpu);
                } else {
                    cx.refused_no_tag();
                }
                false
            }
            Err(IssueError::Invalid { .. }) => false,
        }
    }

    fn on_completion(&mut self, cx: &mut dyn Host, gpu: u16, token: u64, c: &Completion) {
        let LsToken {
            src,
            dst,
            slot: ordinary,
            store,
        } = LsToken::decode(token);
        let i = src as usize;
        let pending = match (ordinary, c.id) {
            (None, ethlink_endpoint::OpId::Ls(tag)) => self.stream_ops.remove(&(gpu, tag)),
            _ => None,
        };
        let pending_slot = pending.as_ref().map(|p| p.slot);
        if let Some(p) = pending {
            self.stream_done(cx, gpu, i, dst, p, c);
        }
        if let Some(s) = self.src.get_mut(i) {
            s.outstanding = s.outstanding.saturating_sub(1);
            let slot = match ordinary {
                Some(o) => {
                    s.busy.remove(&(dst, o));
                    Some(u64::from(o))
                }
                None => pending_slot,
            };
            if store
                && !c.status.is_ok()
                && let Some(slot) = slot
            {
                s.spoiled.insert((dst, slot));
            }
        }
        if self.outstanding.is_some() {
            self.top_up(cx, i);
        }
        self.check_done();
    }

    /// An operation on a slot of an ordered stream of GPU `gpu` (source index `i`) to `dst`
    /// completed: applies a store to the reference, judges a load, and judges the loads that
    /// waited on it.
    fn stream_done(
        &mut self,
        cx: &mut dyn Host,
        gpu: u16,
        i: usize,
        dst: u16,
        p: StreamPending,
        c: &Completion,
    ) {
        let spoiled = self
            .src
            .get(i)
            .is_some_and(|s| s.spoiled.contains(&(dst, p.slot)));
        // Sent again, or ended with an error (a store of unknown fate or past its deadline is
        // not sent again, TXN-3-5, and may or may not have been performed).
        let again = c.retries > 0 || !c.status.is_ok();
        let (stream, order, broken) = (p.stream, p.order, p.broken);
        if again {
            // Sent again after its deadline, or lost with its port, it may have had its stream
            // pinned anew: every operation of the stream issued after it may have overtaken
            // requests on the old path (TXN-5-6), and a load issued after a store that ended
            // with an error may not see it.
            for q in self
                .stream_ops
                .range_mut((gpu, 0)..=(gpu, u16::MAX))
                .map(|(_, q)| q)
                .filter(|q| q.stream == p.stream && q.order > p.order)
            {
                q.broken = true;
            }
        }
        let slot_len = self.slot;
        match p.op {
            StreamOp::Store { seq, seed, addr } => {
                if let Some(st) = self.stream_state.get_mut(&(i as u32, dst, p.slot)) {
                    let overtaken = again || p.broken;
                    if !c.status.is_ok() {
                        cx.reference_write(dst, addr, slot_len, seed, false);
                    } else if (overtaken && st.last_store > seq)
                        || (seq < st.applied && st.applied_broken)
                    {
                        // Sent again, or perhaps overtaken, with other stores of the slot
                        // issued: it may have landed before or after them (transaction.md
                        // TXN-5-6), so the slot holds one of them, which is not known until a
                        // store issued after this completion lands.
                        st.applied = st.applied.max(st.last_store);
                        st.applied_broken = false;
                        st.unsure_upto = st.last_store;
                        cx.reference_unsure(dst, addr, slot_len);
                    } else if seq > st.applied {
                        // The latest store issued among those completed is what memory holds
                        // once they are all performed.
                        st.applied = seq;
                        st.applied_broken = overtaken;
                        cx.reference_write(dst, addr, slot_len, seed, true);
                    }
                }
            }
            StreamOp::Load {
                addr,
                expected,
                slot_last,
            } => {
                if c.status.is_ok()
                    && !spoiled
                    && let ethlink_endpoint::CompletionData::Load(b) = c.data
                {
                    let found = b.as_slice();
                    let unsure = self
                        .stream_state
                        .get(&(i as u32, dst, p.slot))
                        .is_some_and(|st| slot_last <= st.unsure_upto);
                    if found == expected.as_slice() {
                        cx.load_checked(dst, addr, &expected, found);
                        return self.settle_doubts(cx, gpu, (stream, order), again || broken);
                    }
                    if again || p.broken || unsure {
                        // Sent again, it may have been performed after stores issued later;
                        // issued after its stream was pinned anew, it may have overtaken a
                        // store on the old path; or its slot holds a store that landed out of
                        // order (TXN-5-6).
                        cx.load_unjudged();
                        return self.settle_doubts(cx, gpu, (stream, order), again || broken);
                    }
                    let waits: BTreeSet<u64> = self
                        .stream_ops
                        .range((gpu, 0)..=(gpu, u16::MAX))
                        .map(|(_, q)| q)
                        .filter(|q| q.stream == p.stream && q.order < p.order)
                        .map(|q| q.order)
                        .collect();
                    if waits.is_empty() {
                        cx.load_checked(dst, addr, &expected, found);
                    } else {
                        self.doubts.entry((gpu, p.stream)).or_default().push(Doubt {
                            waits,
                            excused: false,
                            dst,
                            addr,
                            expected,
                            found: found.to_vec(),
                        });
                    }
                }
            }
        }
        self.settle_doubts(cx, gpu, (stream, order), again || broken);
    }

    /// Judges the loads that waited on the operation `order` of stream `stream` of GPU `gpu`,
    /// which just completed (`again`: having been sent again, or `broken`), once everything they
    /// wait on has completed.
    fn settle_doubts(
        &mut self,
        cx: &mut dyn Host,
        gpu: u16,
        (stream, order): (u32, u64),
        again: bool,
    ) {
        if let Some(list) = self.doubts.get_mut(&(gpu, stream)) {
            let mut k = 0;
            while k < list.len() {
                let d = &mut list[k];
                // An operation it waited on that was sent again, or that was outstanding when
                // one issued before it was (its stream perhaps pinned anew then), may have been
                // overtaken by the load (TXN-5-6).
                if d.waits.remove(&order) && again {
                    d.excused = true;
                }
                if d.waits.is_empty() {
                    let d = list.swap_remove(k);
                    if d.excused {
                        cx.load_unjudged();
                    } else {
                        cx.load_checked(d.dst, d.addr, &d.expected, &d.found);
                    }
                } else {
                    k += 1;
                }
            }
            if list.is_empty() {
                self.doubts.remove(&(gpu, stream));
            }
        }
    }

    fn on_room(&mut self, cx: &mut dyn Host, gpu: u16) {
        let Some(&i) = self.src_index.get(usize::from(gpu)) else {
            return;
        };
        let i = i as usize;
        if let Some(s) = self.src.get_mut(i) {
            s.blocked = false;
        }
        self.top_up(cx, i);
    }

    fn on_wake(&mut self, cx: &mut dyn Host, token: u64) {
        let i = token as usize;
        if !self.may_issue(i) {
            self.check_done();
            return;
        }
        self.issue_one(cx, i);
        if self.may_issue(i) {
            self.next_arrival(cx, token);
        }
        self.check_done();
    }

    fn check_done(&mut self) {
        if let Some(l) = self.limit
            && self.src.iter().all(|s| s.issued >= l && s.outstanding == 0)
        {
            self.done = true;
        }
    }
}

// ----- RDMA collectives ---------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    AllToAll,
    Ring,
    HalvingDoubling,
    AllGather,
    ReduceScatter,
    SendRecv,
    Incast,
    Permutation,
}

#[derive(Debug, Clone, Copy, Default)]
struct Xfer {
    /// Participant index of the writer.
    src: u32,
    dst: u16,
    len: u64,
    addr: u64,
    deps: u32,
    /// Range of `dependents` that wait for this one.
    first: u32,
    last: u32,
    slot: u32,
}

#[derive(Debug, Clone, Default)]
struct RowAcc {
    count: u64,
    sum_ps: u64,
    min_ps: u64,
    max_ps: u64,
    errors: u64,
    bytes_total: u64,
    writers: u64,
}

#[derive(Debug)]
pub(crate) struct CollState {
    idx: u16,
    kind: Kind,
    name: &'static str,
    gpus: Vec<u16>,
    /// Per GPU id: participant index.
    pos: Vec<u32>,
    /// Bytes per instance parameter: collective sizes, or the one transfer size.
    sizes: Vec<u64>,
    pub(crate) iterations: u32,
    microbatches: u32,
    incast_target: u16,
    window: u32,
    area: Area,
    rng: Pcg64Mcg,
    // Current instance.
    instance: u64,
    size_index: usize,
    xfers: Vec<Xfer>,
    dependents: Vec<u32>,
    ready: Vec<VecDeque<u32>>,
    outstanding: Vec<u32>,
    free_slots: Vec<Vec<u32>>,
    remaining: usize,
    inst_start: u64,
    inst_errors: u64,
    running: bool,
    stopping: bool,
    pub(crate) done: bool,
    rows: Vec<RowAcc>,
    edges: Vec<(u32, u32)>,
}

impl CollState {
    fn new(idx: u16, w: &Workload, s: &Scenario, area: Area, rng: Pcg64Mcg) -> Self {
        let g = s.topology.gpus;
        let (kind, name, gpus, sizes, iterations, window, micro, target) = match w {
            Workload::AllToAll(a) => (
                Kind::AllToAll,
                "all_to_all",
                participants(&a.gpus, g),
                vec![a.bytes_per_pair],
                a.iterations,
                a.window,
                1,
                0,
            ),
            Workload::RingAllreduce(c) => (
                Kind::Ring,
                "ring_allreduce",
                participants(&c.gpus, g),
                c.sizes.clone(),
                c.iterations,
                1,
                1,
                0,
            ),
            Workload::HalvingDoublingAllreduce(c) => (
                Kind::HalvingDoubling,
                "halving_doubling_allreduce",
                participants(&c.gpus, g),
                c.sizes.clone(),
                c.iterations,
                1,
                1,
                0,
            ),
            Workload::AllGather(c) => (
                Kind::AllGather,
                "all_gather",
                participants(&c.gpus, g),
                c.sizes.clone(),
                c.iterations,
                1,
                1,
                0,
            ),
            Workload::ReduceScatter(c) => (
                Kind::ReduceScatter,
                "reduce_scatter",
                participants(&c.gpus, g),
                c.sizes.clone(),
                c.iterations,
                1,
                1,
                0,
            ),
            Workload::SendRecv(r) => (
                Kind::SendRecv,
                "send_recv",
                participants(&r.stages, g),
                vec![r.bytes],
                r.iterations,
                1,
                r.microbatches,
                0,
            ),
            Workload::Incast(i) => {
                let mut v = i
                    .senders
                    .clone()
                    .unwrap_or_else(|| (0..g).filter(|&x| x != i.target).collect());
                v.push(i.target);
                (
                    Kind::Incast,
                    "incast",
                    v,
                    vec![i.bytes],
                    i.iterations,
                    1,
                    1,
                    i.target,
                )
            }
            Workload::Permutation(p) => (
                Kind::Permutation,
                "permutation",
                participants(&p.gpus, g),
                vec![p.bytes],
                p.iterations,
                1,
                1,
                0,
            ),
            Workload::LoadStore(_) => (
                Kind::Permutation,
                "load_store",
                Vec::new(),
                vec![1],
                1,
                1,
                1,
                0,
            ),
        };
        let n = gpus.len();
        let mut pos = vec![u32::MAX; usize::from(g)];
        for (i, &x) in gpus.iter().enumerate() {
            if let Some(p) = pos.get_mut(usize::from(x)) {
                *p = i as u32;
            }
        }
        let slots = area.stage_len.checked_div(area.slot).unwrap_or(0).max(1) as u32;
        let window = window.min(slots).max(1);
        CollState {
            idx,
            kind,
            name,
            pos,
            rows: vec![RowAcc::default(); sizes.len()],
            sizes,
            iterations,
            microbatches: micro,
            incast_target: target,
            window,
            area,
            rng,
            instance: 0,
            size_index: 0,
            xfers: Vec::new(),
            dependents: Vec::new(),
            ready: vec![VecDeque::new(); n],
            outstanding: vec![0; n],
            free_slots: (0..n).map(|_| (0..slots).rev().collect()).collect(),
            remaining: 0,
            inst_start: 0,
            inst_errors: 0,
            running: false,
            stopping: false,
            done: false,
            gpus,
            edges: Vec::new(),
        }
    }

    fn start(&mut self, cx: &mut dyn Host) {
        self.begin_instance(cx);
    }

    fn stop(&mut self, cx: &mut dyn Host) {
        self.stopping = true;
        for q in &mut self.ready {
            q.clear();
        }
        let _ = cx;
    }

    /// The size of instance `k` (0-based) and its index in `sizes`, or `None` past the plan.
    fn plan(&self, k: u64) -> Option<usize> {
        let per = u64::from(self.iterations.max(1));
        let total = self.sizes.len() as u64 * per;
        if self.iterations > 0 && k >= total {
            return None;
        }
        Some(((k / per) % self.sizes.len() as u64) as usize)
    }

    fn add(&mut self, src: u32, dst: u16, len: u64, addr: u64) -> u32 {
        let i = self.xfers.len() as u32;
        self.xfers.push(Xfer {
            src,
            dst,
            len,
            addr,
            ..Xfer::default()
        });
        i
    }

    /// `later` waits for `first`.
    fn dep(&mut self, first: u32, later: u32) {
        self.edges.push((first, later));
    }

    fn build(&mut self, size: u64) {
        self.xfers.clear();
        self.edges.clear();
        let n = self.gpus.len();
        let nu = n as u64;
        let gpus = std::mem::take(&mut self.gpus);
        let gid = |i: usize| -> u16 { gpus.get(i % n).copied().unwrap_or(0) };
        let recv = self.area.recv_base;
        match self.kind {
            Kind::AllToAll => {
                for i in 0..n {
                    for k in 1..n {
                        let dst = gid(i + k);
                        let addr = recv + u64::from(gid(i)) * size;
                        self.add(i as u32, dst, size, addr);
                    }
                }
            }
            Kind::Ring | Kind::AllGather | Kind::ReduceScatter => {
                let steps = if self.kind == Kind::Ring {
                    2 * (n - 1)
                } else {
                    n - 1
                };
                let slot = self.area.recv_len / steps as u64;
                let off = |c: u64| c * size / nu;
                for s in 0..steps {
                    for i in 0..n {
                        // Chunk sent: reduce-scatter steps send chunk i - s, all-gather steps
                        // chunk i + 1 - s (mod n); only the length matters to the network.
                        let c = if self.kind == Kind::Ring && s >= n - 1 {
                            (i + 1 + 2 * n - (s - (n - 1))) % n
                        } else {
                            (i + n - s % n) % n
                        } as u64;
                        let len = off(c + 1) - off(c);
                        let x = self.add(i as u32, gid(i + 1), len.max(1), recv + s as u64 * slot);
                        if s > 0 {
                            let own = ((s - 1) * n + i) as u32;
                            let pred = ((s - 1) * n + (i + n - 1) % n) as u32;
                            self.dep(own, x);
                            self.dep(pred, x);
                        }
                    }
                }
            }
            Kind::HalvingDoubling => {
                let l = n.trailing_zeros() as usize;
                let slot = self.area.recv_len / (2 * l as u64).max(1);
                let off = |b: u64| b * size / nu;
                let mut range: Vec<(u64, u64)> = vec![(0, nu); n];
                let mut partner_prev: Vec<usize> = vec![0; n];
                for k in 0..2 * l {
                    let mut next = range.clone();
                    for i in 0..n {
                        let (lo, hi) = range.get(i).copied().unwrap_or((0, 0));
                        let (p, send) = if k < l {
                            let mask = n >> (k + 1);
                            let mid = (lo + hi) / 2;
                            if i & mask == 0 {
                                if let Some(r) = next.get_mut(i) {
                                    *r = (lo, mid);
                                }
                                (i ^ mask, (mid, hi))
                            } else {
                                if let Some(r) = next.get_mut(i) {
                                    *r = (mid, hi);
                                }
                                (i ^ mask, (lo, mid))
                            }
                        } else {
                            let mask = 1 << (k - l);
                            let p = i ^ mask;
                            let (plo, phi) = range.get(p).copied().unwrap_or((0, 0));
                            if let Some(r) = next.get_mut(i) {
                                *r = (lo.min(plo), hi.max(phi));
                            }
                            (p, (lo, hi))
                        };
                        let len = off(send.1) - off(send.0);
                        let x = self.add(i as u32, gid(p), len.max(1), recv + k as u64 * slot);
                        if k > 0 {
                            let own = ((k - 1) * n + i) as u32;
                            let from =
                                ((k - 1) * n + partner_prev.get(i).copied().unwrap_or(0)) as u32;
                            self.dep(own, x);
                            self.dep(from, x);
                        }
                        if let Some(pp) = partner_prev.get_mut(i) {
                            *pp = p;
                        }
                    }
                    range = next;
                }
            }
            Kind::SendRecv => {
                let m = self.microbatches as usize;
                for b in 0..m {
                    for st in 0..n - 1 {
                        let x = self.add(st as u32, gid(st + 1), size, recv + b as u64 * size);
                        if b > 0 {
                            self.dep(((b - 1) * (n - 1) + st) as u32, x);
                        }
                        if st > 0 {
                            self.dep((b * (n - 1) + st - 1) as u32, x);
                        }
                    }
                }
            }
            Kind::Incast => {
                let target = self.incast_target;
                for i in 0..n {
                    if gid(i) != target {
                        let addr = recv + u64::from(gid(i)) * size;
                        self.add(i as u32, target, size, addr);
                    }
                }
            }
            Kind::Permutation => {
                // A random derangement: shuffle until no GPU maps to itself.
                let mut perm: Vec<usize> = (0..n).collect();
                loop {
                    for i in (1..n).rev() {
                        let j = below(&mut self.rng, i as u64 + 1) as usize;
                        perm.swap(i, j);
                    }
                    if perm.iter().enumerate().all(|(i, &p)| i != p) {
                        break;
                    }
                }
                for i in 0..n {
                    let dst = gid(perm.get(i).copied().unwrap_or(0));
                    let addr = recv + u64::from(gid(i)) * size;
                    self.add(i as u32, dst, size, addr);
                }
            }
        }
        self.gpus = gpus;
        // Dependency lists, grouped by the transfer waited for.
        self.edges.sort_unstable();
        self.dependents.clear();
        let mut e = 0;
        for i in 0..self.xfers.len() {
            let first = self.dependents.len() as u32;
            while let Some(&(a, b)) = self.edges.get(e) {
                if a as usize != i {
                    break;
                }
                self.dependents.push(b);
                if let Some(x) = self.xfers.get_mut(b as usize) {
                    x.deps += 1;
                }
                e += 1;
            }
            if let Some(x) = self.xfers.get_mut(i) {
                x.first = first;
                x.last = self.dependents.len() as u32;
            }
        }
    }

    fn begin_instance(&mut self, cx: &mut dyn Host) {
        if self.stopping || self.gpus.len() < 2 {
            self.done = true;
            return;
        }
        let Some(si) = self.plan(self.instance) else {
            self.done = true;
            return;
        };
        self.size_index = si;
        let size = self.sizes.get(si).copied().unwrap_or(1);
        self.build(size);
        self.remaining = self.xfers.len();
        self.inst_start = cx.now_ps();
        self.inst_errors = 0;
        self.running = true;
        for q in &mut self.ready {
            q.clear();
        }
        for (i, x) in self.xfers.iter().enumerate() {
            if x.deps == 0
                && let Some(q) = self.ready.get_mut(x.src as usize)
            {
                q.push_back(i as u32);
            }
        }
        for p in 0..self.gpus.len() {
            self.pump(cx, p);
        }
    }

    /// Posts what participant `p` may post now.
    fn pump(&mut self, cx: &mut dyn Host, p: usize) {
        let Some(&gpu) = self.gpus.get(p) else { return };
        loop {
            if self.outstanding.get(p).copied().unwrap_or(0) >= self.window {
                return;
            }
            let Some(&x) = self.ready.get(p).and_then(VecDeque::front) else {
                return;
            };
            let Some(&slot) = self.free_slots.get(p).and_then(|v| v.last()) else {
                return;
            };
            let Some(xf) = self.xfers.get(x as usize).copied() else {
                return;
            };
            let stage = self.area.stage_base + u64::from(slot) * self.area.slot;
            match cx.post_write(gpu, stage, xf.dst, xf.addr, xf.len, x.into()) {
                Ok(_) => {
                    if let Some(q) = self.ready.get_mut(p) {
                        q.pop_front();
                    }
                    if let Some(v) = self.free_slots.get_mut(p) {
                        v.pop();
                    }
                    if let Some(o) = self.outstanding.get_mut(p) {
                        *o += 1;
                    }
                    if let Some(xm) = self.xfers.get_mut(x as usize) {
                        xm.slot = slot;
                    }
                }
                Err(PostError::QueueFull { .. }) => {
                    cx.block(gpu);
                    return;
                }
                Err(PostError::Invalid { .. }) => {
                    // Cannot happen with the layout's addresses; end the transfer as failed so
                    // that the instance does not hang.
                    if let Some(q) = self.ready.get_mut(p) {
                        q.pop_front();
                    }
                    self.inst_errors += 1;
                    self.finish_xfer(cx, x);
                }
            }
        }
    }

    fn finish_xfer(&mut self, cx: &mut dyn Host, x: u32) {
        let Some(xf) = self.xfers.get(x as usize).copied() else {
            return;
        };
        let mut touched: [usize; 2] = [xf.src as usize, usize::MAX];
        for d in xf.first..xf.last {
            let Some(&y) = self.dependents.get(d as usize) else {
                continue;
            };
            if let Some(yx) = self.xfers.get_mut(y as usize) {
                yx.deps = yx.deps.saturating_sub(1);
                if yx.deps == 0 {
                    let s = yx.src as usize;
                    if !self.stopping
                        && let Some(q) = self.ready.get_mut(s)
                    {
                        q.push_back(y);
                    }
                    if s != touched[0] {
                        touched[1] = s;
                    }
                }
            }
        }
        self.remaining = self.remaining.saturating_sub(1);
        for p in touched {
            if p != usize::MAX {
                self.pump(cx, p);
            }
        }
        if self.remaining == 0 && self.running {
            self.end_instance(cx);
        }
    }

    fn on_completion(&mut self, cx: &mut dyn Host, token: u64, c: &Completion) {
        let x = token as u32;
        let Some(xf) = self.xfers.get(x as usize).copied() else {
            return;
        };
        let p = xf.src as usize;
        if let Some(o) = self.outstanding.get_mut(p) {
            *o = o.saturating_sub(1);
        }
        if let Some(v) = self.free_slots.get_mut(p) {
            v.push(xf.slot);
        }
        if !c.status.is_ok() {
            self.inst_errors += 1;
        }
        self.finish_xfer(cx, x);
    }

    fn on_room(&mut self, cx: &mut dyn Host, gpu: u16) {
        if let Some(&p) = self.pos.get(usize::from(gpu))
            && p != u32::MAX
        {
            self.pump(cx, p as usize);
        }
    }

    fn end_instance(&mut self, cx: &mut dyn Host) {
        self.running = false;
        let t = cx.now_ps() - self.inst_start;
        let bytes: u64 = self.xfers.iter().map(|x| x.len).sum();
        let writers = {
            let mut w: Vec<u32> = self.xfers.iter().map(|x| x.src).collect();
            w.sort_unstable();
            w.dedup();
            w.len() as u64
        };
        if let Some(r) = self.rows.get_mut(self.size_index) {
            if r.count == 0 {
                r.min_ps = t;
            }
            r.count += 1;
            r.sum_ps += t;
            r.min_ps = r.min_ps.min(t);
            r.max_ps = r.max_ps.max(t);
            r.errors += self.inst_errors;
            r.bytes_total += bytes;
            r.writers = writers;
        }
        self.instance += 1;
        self.begin_instance(cx);
    }

    fn rows(&self, gpu_line_gbps: f64) -> Vec<CollectiveRow> {
        let n = self.gpus.len() as f64;
        let mut out = Vec::new();
        for (i, r) in self.rows.iter().enumerate() {
            if r.count == 0 {
                continue;
            }
            let param = self.sizes.get(i).copied().unwrap_or(0);
            // nccl-tests' size and bus-bandwidth factor.
            let (size, factor) = match self.kind {
                Kind::AllToAll => (param * self.gpus.len() as u64, (n - 1.0) / n),
                Kind::Ring | Kind::HalvingDoubling => (param, 2.0 * (n - 1.0) / n),
                Kind::AllGather | Kind::ReduceScatter => (param, (n - 1.0) / n),
                Kind::SendRecv => (param * u64::from(self.microbatches), 1.0),
                Kind::Incast => (param * (self.gpus.len() as u64 - 1), 1.0),
                Kind::Permutation => (param, 1.0),
            };
            let time_ns = r.sum_ps as f64 / r.count as f64 / PS_PER_NS as f64;
            let algbw = if time_ns > 0.0 {
                size as f64 / time_ns
            } else {
                0.0
            };
            // Bytes per writer per instance; for an incast the target's intake.
            let per_instance = r.bytes_total / r.count;
            let bytes_per_gpu = if self.kind == Kind::Incast {
                per_instance
            } else {
                per_instance / r.writers.max(1)
            };
            let gpu_gbps = if time_ns > 0.0 {
                bytes_per_gpu as f64 * 8.0 / time_ns
            } else {
                0.0
            };
            out.push(CollectiveRow {
                workload: usize::from(self.idx),
                name: self.name.to_owned(),
                gpus: self.gpus.len(),
                size_bytes: size,
                count: r.count,
                time_ns,
                min_time_ns: r.min_ps / PS_PER_NS,
                max_time_ns: r.max_ps / PS_PER_NS,
                algbw_gbytes: algbw,
                busbw_gbytes: algbw * factor,
                bytes_per_gpu,
                gpu_payload_gbps: gpu_gbps,
                line_rate_share: if gpu_line_gbps > 0.0 {
                    gpu_gbps / gpu_line_gbps
                } else {
                    0.0
                },
                errors: r.errors,
            });
        }
        out
    }
}

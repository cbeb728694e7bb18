//! The endpoint state machine: requester (load-store unit, RDMA engine), target, ports and paths.

use alloc::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};
use alloc::vec;
use alloc::vec::Vec;
use core::cmp::Reverse;
use core::fmt;
use core::hash::{BuildHasherDefault, Hasher};

use bitvec::vec::BitVec;
use ethlink_link::{
    BufferTooSmall, Duration, Event, Instant, Link, LostReason, Release, SharedFrame, SubmitError,
    Transmit,
};
use ethlink_protocol::fcs::FcsStatus;
use ethlink_protocol::{
    AtomicKind, AtomicOp, Capabilities, DataRepr, ETH_HEADER_LEN, GpuId, MemTarget,
    NETWORK_HEADER_LEN, Opcode, PathId, Space, Status, TxnRepr, VLAN_TAG_LEN, Vc, frame_len,
};
use hashbrown::HashMap;

use crate::config::{BLOCK, Config};
use crate::counters::Counters;
use crate::memory::{Access, Memory};
use crate::ops::{
    Bytes, Completion, CompletionData, CompletionStatus, IssueError, LsOp, LsRequest, OpId, OpKind,
    Ordering, PostError, RdmaDesc, RdmaDir,
};
use ethlink_link::ConfigError;

/// VC of load-store requests (EP-3-1).
const VC_LS: usize = 0;
/// VC of RDMA requests.
const VC_RDMA: usize = 1;
/// VC of load-store responses and RDMA completions.
const VC_RESP: usize = 2;
/// VC of RDMA read data.
const VC_READ: usize = 3;
/// Largest RDMA length (the wire's 32-bit total length).
const MAX_RDMA_LEN: u64 = u32::MAX as u64;

/// A request's identity in the frames the endpoint remembers: its tag and the generation of the
/// tag's holder when it was sent.
type TagEra = (u16, u32);

/// A frame waiting in the endpoint's queue of a port and VC.
#[derive(Debug)]
struct OutFrame {
    payload: Vec<u8>,
    meta: Vec<TagEra>,
    txns: u16,
    /// Bytes of response transactions in it (the target's backlog, EP-8-4).
    resp_bytes: usize,
}

/// A frame being packed (§7).
#[derive(Debug)]
struct Packer {
    buf: Vec<u8>,
    meta: Vec<TagEra>,
    count: u16,
    since: Instant,
    resp_bytes: usize,
}

#[derive(Debug)]
struct Port {
    link: Link,
    path: PathId,
    usable: bool,
    out: [VecDeque<OutFrame>; 4],
    out_bytes: [usize; 4],
    packers: BTreeMap<(u8, u16), Packer>,
    /// Request frames held back by the response backlog (EP-8-4), with their credits.
    inbound: VecDeque<(Vec<u8>, Release)>,
    /// The requests of the frames submitted to the link that it may still report lost,
    /// per VC in submission order (EP-9-1).
    sent_meta: [VecDeque<Vec<TagEra>>; 4],
}

/// Hashes an operation id (ids are numbered from 1 up): a multiply and a fold. The table is only
/// ever looked up by id, never walked, so its order plays no part in what the endpoint does.
#[derive(Debug, Default, Clone, Copy)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        let h = self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^ (h >> 32)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x100_0000_01B3);
        }
    }

    fn write_u64(&mut self, k: u64) {
        self.0 = k;
    }
}

/// A deadline in the timer heap. Entries are hints: the owner's own deadline decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Rdma(u64),
    Pack(u16, u8, u16),
    Reasm(u16, u16),
    ReadJob(u64),
    Held,
    /// A load-store operation answered BUSY is sent again (EP-9-5).
    LsRetry(u16, u32),
    /// An RDMA operation held back (after BUSY or a loss of unknown fate) goes on.
    RdmaResume(u64),
    /// Nothing to do but move work forward (a read chunk's hold ended).
    Wake,
    /// The quiet time after a reset ended: ports asked up are brought up (EP-12-2).
    Quiet,
}

#[derive(Debug)]
struct LsSlot {
    era: u32,
    req: LsRequest,
    kind: OpKind,
    issued: Instant,
    deadline: Instant,
    seq: u64,
    port: Option<usize>,
    waiting: bool,
    sent: bool,
    retries: u8,
    tainted: bool,
    episode: u64,
    /// Held back until then before it is sent again (BUSY back-off, EP-9-5, or a loss of
    /// unknown fate, EP-9-6); its deadline does not run meanwhile.
    retry_at: Option<Instant>,
    /// It waits in the queue of delayed retries (`ls_delayed`).
    delayed: bool,
}

/// A tag space: free tags in order, tags resting after a retried operation (EP-5-8), and the
/// generation of each tag's holder.
#[derive(Debug)]
struct Tags {
    base: u16,
    gens: Vec<u32>,
    free: VecDeque<u16>,
    resting: VecDeque<(Instant, u16)>,
    held: u32,
}

impl Tags {
    fn new(base: u16, n: u16) -> Self {
        Tags {
            base,
            gens: vec![0; usize::from(n)],
            free: (base..base.saturating_add(n)).collect(),
            resting: VecDeque::new(),
            held: 0,
        }
    }

    //= docs/spec/endpoint.md#5-load-store-unit
    //# EP-5-1 Each load-store operation MUST get a tag in `0 .. lsu_tags` that no other
    //# outstanding operation of this GPU holds; the tag travels in every request and response of
    //# the operation.
    fn alloc(&mut self, now: Instant) -> Option<(u16, u32)> {
        while self.resting.front().is_some_and(|(t, _)| *t <= now) {
            if let Some((_, tag)) = self.resting.pop_front() {
                self.free.push_back(tag);
            }
        }
        let tag = self.free.pop_front()?;
        let g = self.gens.get_mut(usize::from(tag - self.base))?;
        *g = g.wrapping_add(1);
        self.held += 1;
        Some((tag, *g))
    }

    //= docs/spec/endpoint.md#5-load-store-unit
    //# EP-5-7 A tag MUST be free for reuse at once when its operation completes with the answer
    //# to its only attempt.
    //= docs/spec/endpoint.md#5-load-store-unit
    //# EP-5-8 A tag MUST rest `tag_quarantine` after its operation completes when any of its
    //# requests was sent more than once or was of unknown fate, or when the operation ended
    //# without its final response (TIMEOUT, FATE_UNKNOWN)
    fn release(&mut self, tag: u16, tainted: bool, now: Instant, quarantine: Duration) {
        if let Some(g) = self.gens.get_mut(usize::from(tag.wrapping_sub(self.base))) {
            // A new generation at once: nothing still in flight matches the freed tag.
            *g = g.wrapping_add(1);
        }
        self.held = self.held.saturating_sub(1);
        if tainted {
            self.resting
                .push_back((now.saturating_add(quarantine), tag));
        } else {
            self.free.push_back(tag);
        }
    }

    fn era(&self, tag: u16) -> Option<u32> {
        self.gens
            .get(usize::from(tag.checked_sub(self.base)?))
            .copied()
    }
}

/// The 256-byte blocks of one RDMA transfer received so far (EP-6-5, EP-6-10), and the
/// in-order point: the blocks before it have all arrived.
#[derive(Debug)]
struct Blocks {
    bits: BitVec,
    received: u32,
    inorder: u32,
}

/// What [`Blocks::mark`] found.
enum Marked {
    /// The segment runs past the transfer.
    Outside,
    /// Every block of it had arrived already.
    Duplicate,
    /// New blocks; the bytes beyond the in-order point changed by this much.
    New(i64),
}

impl Blocks {
    fn new(len: u32) -> Self {
        Blocks {
            bits: BitVec::repeat(false, len.div_ceil(BLOCK) as usize),
            received: 0,
            inorder: 0,
        }
    }

    /// Records the segment at `offset`, `dlen` bytes long.
    fn mark(&mut self, offset: u32, dlen: u32) -> Marked {
        let first = (offset / BLOCK) as usize;
        let n = dlen.div_ceil(BLOCK) as usize;
        let Some(bits) = self.bits.get_mut(first..first + n) else {
            return Marked::Outside;
        };
        if bits.all() {
            return Marked::Duplicate;
        }
        let new = bits.count_zeros() as u32;
        bits.fill(true);
        let before = self.beyond();
        self.received += new;
        while self.bits.get(self.inorder as usize).is_some_and(|b| *b) {
            self.inorder += 1;
        }
        Marked::New(self.beyond() - before)
    }

    /// Bytes received beyond the in-order point (the reorder buffer's share of this transfer).
    fn beyond(&self) -> i64 {
        i64::from(self.received - self.inorder) * i64::from(BLOCK)
    }

    fn complete(&self) -> bool {
        self.received as usize == self.bits.len()
    }
}

#[derive(Debug)]
struct ChunkState {
    tag: u16,
    era: u32,
    /// Its request was sent more than once (its tag rests after it, EP-5-8).
    tainted: bool,
    len: u32,
    blocks: Blocks,
    done: bool,
    /// Not sent again before then (BUSY back-off, EP-9-5, or a loss of unknown fate, EP-9-6).
    not_before: Instant,
}

#[derive(Debug)]
enum RdmaState {
    Write {
        has_tag: bool,
        tag: u16,
        era: u32,
        next: u64,
        resend: VecDeque<u64>,
        port: Option<usize>,
    },
    Read {
        chunks: u64,
        next_chunk: u64,
        active: BTreeMap<u64, ChunkState>,
        done_chunks: u64,
        error: Option<Status>,
        port: Option<usize>,
    },
}

#[derive(Debug)]
struct RdmaOp {
    desc: RdmaDesc,
    issued: Instant,
    deadline: Instant,
    seq: u64,
    retries: u8,
    tainted: bool,
    episode: u64,
    sent: bool,
    /// Held back until then (BUSY back-off of a write, EP-9-5, or a loss of unknown fate,
    /// EP-9-6).
    hold_until: Option<Instant>,
    state: RdmaState,
}

/// A write being reassembled at the target (EP-6-5).
#[derive(Debug)]
struct Reasm {
    /// A write refused at its first segment (EP-6-4): its later segments are dropped unanswered.
    refused: bool,
    total: u32,
    blocks: Blocks,
    last: Instant,
    /// Blocks reserved for it against `max_reassembly_blocks` (EP-6-12).
    reserved: u64,
}

/// A read being served at the target (EP-6-8).
#[derive(Debug)]
struct ReadJob {
    id: u64,
    src: GpuId,
    tag: u16,
    port: usize,
    target: MemTarget,
    total: u32,
    next: u32,
    last: Instant,
}

/// A response waiting for a usable port (EP-8-5).
#[derive(Debug)]
struct Held {
    dst: GpuId,
    vc: usize,
    txn: Vec<u8>,
    since: Instant,
}

/// A lost frame to deal with after the link's events are drained.
#[derive(Debug)]
struct LostFrame {
    vc: usize,
    payload: Vec<u8>,
    unknown_fate: bool,
    meta: Option<Vec<TagEra>>,
}

/// One GPU's endpoint: memory, load-store unit, RDMA engine, target, and one link end per port.
///
/// Inputs are [`Endpoint::handle_frame`] (a frame from a port's wire), [`Endpoint::handle_timeout`]
/// and the commands [`Endpoint::issue`], [`Endpoint::fence`], [`Endpoint::post`],
/// [`Endpoint::port_up`] and [`Endpoint::port_down`]. After any of them the caller drains
/// [`Endpoint::poll_transmit`] for each port whose wire is free and [`Endpoint::poll_completion`],
/// then asks [`Endpoint::poll_timeout`] when to call [`Endpoint::handle_timeout`]. Time passed in
/// must never go backwards. Nothing reads a clock; the same inputs give the same outputs.
pub struct Endpoint {
    cfg: Config,
    now: Instant,
    mem: Memory,
    ports: Vec<Port>,
    usable: Vec<usize>,
    rr_last: Option<usize>,
    episode: u64,
    // Requester.
    lsu_tags: Tags,
    lsu: Vec<Option<LsSlot>>,
    waiting: VecDeque<TagEra>,
    streams: BTreeMap<u32, (Option<usize>, u32)>,
    rdma_tags: Tags,
    rdma_owner: Vec<Option<(u64, u64)>>,
    rdma: HashMap<u64, RdmaOp, BuildHasherDefault<IdHasher>>,
    next_rdma: u64,
    active_writes: VecDeque<u64>,
    reads_waiting: VecDeque<u64>,
    chunks_unsent: VecDeque<(u64, u64)>,
    outstanding: BTreeSet<u64>,
    fences: VecDeque<(u64, u64, Instant)>,
    next_seq: u64,
    completions: VecDeque<Completion>,
    timers: BinaryHeap<Reverse<(Instant, Key)>>,
    /// Load-store deadlines in the order they fall (each is `op_timeout` after its issue or
    /// retry, and time only goes forward); entries of completed operations are trimmed.
    ls_deadlines: VecDeque<(Instant, u16, u32)>,
    /// Load-store requests to send again no earlier than a time, in the order they must go
    /// (EP-9-6): times never decrease along the queue. The port to avoid rides along.
    ls_delayed: VecDeque<(Instant, u16, u32, Option<usize>)>,
    /// Per ordered stream, its requests waiting in `ls_delayed`: later ones queue behind them.
    stream_delayed: BTreeMap<u32, u32>,
    /// Ports asked up during the quiet time after a reset (EP-12-2), and its end.
    quiet_until: Instant,
    /// The ports' links defer the FCS of shared frames ([`Endpoint::defer_fcs`]); kept across
    /// a reset.
    defer_fcs: bool,
    want_up: Vec<bool>,
    // Target.
    reasm: BTreeMap<(u16, u16), Reasm>,
    read_jobs: VecDeque<ReadJob>,
    next_job: u64,
    fence_waits: Vec<(GpuId, usize, u16, u64)>,
    held: VecDeque<Held>,
    backlog: usize,
    /// Blocks reserved by the reassembly records (EP-6-12).
    reasm_blocks: u64,
    counters: Counters,
    // Scratch.
    seg: Vec<u8>,
    pool: Vec<Vec<u8>>,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("gpu", &self.cfg.gpu)
            .field("now", &self.now)
            .field("usable", &self.usable)
            .field("lsu_outstanding", &self.lsu_tags.held)
            .field("rdma_outstanding", &self.rdma.len())
            .finish_non_exhaustive()
    }
}

/// The 64-bit hash of the hash policy (EP-4-5): the splitmix64 finaliser of
/// `(dst << 48) XOR key`, with `key` the stream id of an ordered stream or the tag otherwise.
/// The port is the usable port at index `path_hash(dst, key) mod n`.
pub fn path_hash(dst: GpuId, key: u64) -> u64 {
    mix(dst, key)
}

//= docs/spec/endpoint.md#41-the-hash-function
//# EP-4-5 The hash policy MUST compute h exactly as Figure EP-F3 writes it and choose the usable
//# port at index h mod n.
fn mix(dst: GpuId, key: u64) -> u64 {
    let mut z = (u64::from(dst.value()) << 48 ^ key).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn target_of(req: &LsRequest) -> MemTarget {
    MemTarget {
        space: req.remote.space,
        key: req.remote.key,
        addr: req.remote.addr,
    }
}

fn vc(i: usize) -> Vc {
    Vc::new(u8::try_from(i).unwrap_or(0)).unwrap_or_default()
}

fn invalid(field: &'static str, value: u64, rule: &'static str) -> IssueError {
    IssueError::Invalid { field, value, rule }
}

/// The response to a request that must not be performed, by the request's opcode (WIRE-6.1-5,
/// WIRE-6.1-6).
fn refusal(opcode: u8, tag: u16, status: Status) -> TxnRepr<'static> {
    match Opcode::from_u8(opcode & 0x7F) {
        Opcode::Load => TxnRepr::LoadResp {
            tag,
            status,
            data: &[],
        },
        Opcode::Store => TxnRepr::StoreResp { tag, status },
        Opcode::AtomicFetchAdd => TxnRepr::AtomicResp {
            tag,
            kind: AtomicKind::FetchAdd,
            status,
            old: None,
        },
        Opcode::AtomicSwap => TxnRepr::AtomicResp {
            tag,
            kind: AtomicKind::Swap,
            status,
            old: None,
        },
        Opcode::AtomicCompareSwap => TxnRepr::AtomicResp {
            tag,
            kind: AtomicKind::CompareSwap,
            status,
            old: None,
        },
        Opcode::Fence => TxnRepr::FenceResp { tag, status },
        Opcode::RdmaWrite => TxnRepr::RdmaCompletion {
            tag,
            status,
            total: 0,
        },
        Opcode::RdmaRead => TxnRepr::RdmaReadResp {
            tag,
            status,
            offset: 0,
            total: 0,
            data: &[],
        },
        _ => TxnRepr::Unknown {
            opcode: opcode | 0x80,
            flags_status: status.to_u8(),
            tag,
            header: &[],
            data: &[],
        },
    }
}

impl Endpoint {
    /// Builds an endpoint: validates `cfg`, allocates one link end per port (all physically
    /// down until [`Endpoint::port_up`]) and an empty memory.
    pub fn new(cfg: Config) -> Result<Self, ConfigError> {
        cfg.validate()?;
        let mem = Memory::new(cfg.memory).map_err(|e| ConfigError {
            field: e.field,
            value: e.value,
            rule: "memory space size must be 1..=2^57",
        })?;
        let mut ports = Vec::with_capacity(cfg.port_count());
        for s in 0..cfg.stacks {
            for p in 0..cfg.ports {
                let link = Link::new(cfg.port_link(s, p))?;
                ports.push(Port {
                    link,
                    path: PathId::from_parts(s, p),
                    usable: false,
                    out: Default::default(),
                    out_bytes: [0; 4],
                    packers: BTreeMap::new(),
                    inbound: VecDeque::new(),
                    sent_meta: Default::default(),
                });
            }
        }
        let n = ports.len();
        Ok(Endpoint {
            lsu_tags: Tags::new(0, cfg.lsu_tags),
            lsu: (0..cfg.lsu_tags).map(|_| None).collect(),
            rdma_tags: Tags::new(cfg.lsu_tags, cfg.rdma_tags),
            rdma_owner: vec![None; usize::from(cfg.rdma_tags)],
            now: Instant::ZERO,
            mem,
            ports,
            usable: Vec::new(),
            rr_last: None,
            episode: 0,
            waiting: VecDeque::new(),
            streams: BTreeMap::new(),
            rdma: HashMap::default(),
            next_rdma: 0,
            active_writes: VecDeque::new(),
            reads_waiting: VecDeque::new(),
            chunks_unsent: VecDeque::new(),
            outstanding: BTreeSet::new(),
            fences: VecDeque::new(),
            next_seq: 0,
            completions: VecDeque::new(),
            timers: BinaryHeap::new(),
            ls_deadlines: VecDeque::new(),
            ls_delayed: VecDeque::new(),
            stream_delayed: BTreeMap::new(),
            quiet_until: Instant::ZERO,
            defer_fcs: false,
            want_up: vec![false; n],
            reasm: BTreeMap::new(),
            read_jobs: VecDeque::new(),
            next_job: 0,
            fence_waits: Vec::new(),
            held: VecDeque::new(),
            backlog: 0,
            reasm_blocks: 0,
            counters: Counters::new(n),
            seg: vec![0; cfg.segment as usize],
            pool: Vec::new(),
            cfg,
        })
    }

    // ----- getters ---------------------------------------------------------------------------

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// This GPU's id.
    pub fn gpu(&self) -> GpuId {
        self.cfg.gpu
    }

    /// The memory, to read results and check contents.
    pub fn memory(&self) -> &Memory {
        &self.mem
    }

    /// The memory, to register regions, fill data and poison bytes.
    pub fn memory_mut(&mut self) -> &mut Memory {
        &mut self.mem
    }

    /// The counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Number of ports (`stacks * ports`); port `i` is port `i % ports` of stack `i / ports`.
    pub fn port_count(&self) -> usize {
        self.ports.len()
    }

    /// The link of port `i`, to read its state and counters.
    pub fn link(&self, i: usize) -> Option<&Link> {
        self.ports.get(i).map(|p| &p.link)
    }

    /// Whether port `i` is usable (EP-3-2).
    pub fn is_usable(&self, i: usize) -> bool {
        self.ports.get(i).is_some_and(|p| p.usable)
    }

    /// Load-store operations outstanding.
    pub fn ls_outstanding(&self) -> u32 {
        self.lsu_tags.held
    }

    /// RDMA descriptors outstanding.
    pub fn rdma_outstanding(&self) -> usize {
        self.rdma.len()
    }

    /// Operations (load-store, RDMA, fences) not yet completed.
    pub fn outstanding(&self) -> usize {
        self.outstanding.len() + self.fences.len()
    }

    /// True when no operation is outstanding, no completion waits, the target serves nothing and
    /// every port's queues and link are idle.
    pub fn is_idle(&self) -> bool {
        self.outstanding() == 0
            && self.completions.is_empty()
            && self.read_jobs.is_empty()
            && self.reasm.is_empty()
            && self.held.is_empty()
            && self.ports.iter().all(|p| {
                p.link.is_idle()
                    && p.out.iter().all(VecDeque::is_empty)
                    && p.packers.is_empty()
                    && p.inbound.is_empty()
            })
    }

    // ----- ports -----------------------------------------------------------------------------

    /// The physical link of port `i` came up. During the quiet time after a reset the link is
    /// brought up only when that time ends (EP-12-2).
    pub fn port_up(&mut self, now: Instant, i: usize) {
        self.now = self.now.max(now);
        if self.now < self.quiet_until {
            if let Some(w) = self.want_up.get_mut(i)
                && !core::mem::replace(w, true)
            {
                self.timers.push(Reverse((self.quiet_until, Key::Quiet)));
            }
            return;
        }
        if let Some(p) = self.ports.get_mut(i) {
            p.link.physical_up(self.now);
        }
        self.after(i);
    }

    /// The physical link of port `i` went down.
    pub fn port_down(&mut self, now: Instant, i: usize) {
        self.now = self.now.max(now);
        if let Some(w) = self.want_up.get_mut(i) {
            *w = false;
        }
        if let Some(p) = self.ports.get_mut(i) {
            p.link.physical_down(self.now);
        }
        self.after(i);
    }

    /// Resets the endpoint (EP-12-1): every operation, tag, queue, reassembly, read job, held
    /// response and counter is forgotten, every port's link is OFF, and ports asked up in the
    /// next `tag_quarantine` come up only when it ends (EP-12-2). The memory, its poison and
    /// its region table are kept. Operations outstanding before the reset get no completion.
    pub fn reset(&mut self, now: Instant) -> Result<(), ConfigError> {
        let now = self.now.max(now);
        //= docs/spec/endpoint.md#12-reset-and-identity
        //# EP-12-1 A reset MUST end every operation outstanding, free every tag, empty every
        //# queue of the endpoint and of its ports' links, forget every reassembly, read job,
        //# held response and waiting fence, set every counter to zero and put every port's link
        //# in OFF.
        let mut fresh = Endpoint::new(self.cfg.clone())?;
        core::mem::swap(&mut fresh.mem, &mut self.mem);
        fresh.defer_fcs(self.defer_fcs);
        fresh.now = now;
        // Ports whose physical link is up come up when the quiet time ends.
        for (w, p) in fresh.want_up.iter_mut().zip(&self.ports) {
            *w = p.link.tx_state() != ethlink_link::TxState::Off;
        }
        //= docs/spec/endpoint.md#12-reset-and-identity
        //# EP-12-2 After a reset an endpoint MUST NOT bring a port's link up (send INIT) before
        //# `tag_quarantine` has passed since the reset
        fresh.quiet_until = now.saturating_add(self.cfg.tag_quarantine);
        if fresh.want_up.iter().any(|&w| w) {
            fresh.timers.push(Reverse((fresh.quiet_until, Key::Quiet)));
        }
        *self = fresh;
        Ok(())
    }

    /// A frame arrived on port `i`'s wire.
    pub fn handle_frame(&mut self, now: Instant, i: usize, bytes: &[u8]) {
        self.now = self.now.max(now);
        if let Some(p) = self.ports.get_mut(i) {
            p.link.handle_frame(self.now, bytes);
        }
        self.after(i);
    }

    /// As [`Endpoint::handle_frame`] for a frame whose FCS the port's MAC has already judged
    /// ([`Link::handle_frame_fcs`]).
    pub fn handle_frame_fcs(&mut self, now: Instant, i: usize, bytes: &[u8], fcs: FcsStatus) {
        self.now = self.now.max(now);
        if let Some(p) = self.ports.get_mut(i) {
            p.link.handle_frame_fcs(self.now, bytes, fcs);
        }
        self.after(i);
    }

    /// The next frame for port `i`'s wire, written into `buf`, if there is one.
    pub fn poll_transmit(
        &mut self,
        now: Instant,
        i: usize,
        buf: &mut [u8],
    ) -> Result<Option<Transmit>, BufferTooSmall> {
        self.transmit(now, i, buf, false).map(|t| t.map(|(t, _)| t))
    }

    /// As [`Endpoint::poll_transmit`], with a DATA frame handed out by reference, shared with
    /// the port link's replay buffer, instead of written into `buf`
    /// ([`Link::poll_transmit_shared`]); control frames are written into `buf`.
    pub fn poll_transmit_shared(
        &mut self,
        now: Instant,
        i: usize,
        buf: &mut [u8],
    ) -> Result<Option<(Transmit, Option<SharedFrame>)>, BufferTooSmall> {
        self.transmit(now, i, buf, true)
    }

    /// Has every port's link defer the FCS of the DATA frames it hands out by reference
    /// ([`Link::defer_fcs`]): for an embedder whose wires give receivers the FCS status.
    pub fn defer_fcs(&mut self, on: bool) {
        self.defer_fcs = on;
        for p in &mut self.ports {
            p.link.defer_fcs(on);
        }
    }

    fn transmit(
        &mut self,
        now: Instant,
        i: usize,
        buf: &mut [u8],
        shared: bool,
    ) -> Result<Option<(Transmit, Option<SharedFrame>)>, BufferTooSmall> {
        self.now = self.now.max(now);
        self.pump(i);
        let Some(p) = self.ports.get_mut(i) else {
            return Ok(None);
        };
        let t = if shared {
            p.link.poll_transmit_shared(self.now, buf)
        } else {
            p.link
                .poll_transmit(self.now, buf)
                .map(|t| t.map(|t| (t, None)))
        };
        self.drain_link(i);
        // A frame left: the link may take more, and the RDMA engine may have more to give.
        if matches!(t, Ok(Some(_)))
            && (!self.active_writes.is_empty()
                || !self.read_jobs.is_empty()
                || !self.waiting.is_empty()
                || !self.chunks_unsent.is_empty()
                || !self.held.is_empty())
        {
            self.fill();
        }
        t
    }

    /// When [`Endpoint::handle_timeout`] must be called next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let links = self
            .ports
            .iter()
            .filter_map(|p| p.link.poll_timeout())
            .min();
        let own = [
            self.timers.peek().map(|Reverse((t, _))| *t),
            self.ls_deadlines.front().map(|(t, _, _)| *t),
            self.ls_delayed.front().map(|e| e.0),
        ]
        .into_iter()
        .flatten()
        .min();
        match (links, own) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Time passed: runs the links' timers and the endpoint's deadlines that are due.
    pub fn handle_timeout(&mut self, now: Instant) {
        //= docs/spec/endpoint.md#12-timers-and-their-relations
        //# EP-1-1 Every time of Table EP-T1 is a whole number of nanoseconds; an endpoint MUST NOT
        //# act on a time before it has passed in full.
        // Every deadline below fires only when `t <= now`.
        self.now = self.now.max(now);
        for i in 0..self.ports.len() {
            let due = self
                .ports
                .get(i)
                .and_then(|p| p.link.poll_timeout())
                .is_some_and(|t| t <= self.now);
            if due {
                if let Some(p) = self.ports.get_mut(i) {
                    p.link.handle_timeout(self.now);
                }
                self.drain_link(i);
            }
        }
        while let Some(&(t, tag, era)) = self.ls_deadlines.front() {
            if t > self.now {
                break;
            }
            self.ls_deadlines.pop_front();
            self.ls_deadline(tag, era);
        }
        self.trim_ls_deadlines();
        while let Some(&(t, tag, era, avoid)) = self.ls_delayed.front() {
            if t > self.now {
                break;
            }
            self.ls_delayed.pop_front();
            self.release_delayed(tag, era, avoid);
        }
        while let Some(Reverse((t, key))) = self.timers.peek().copied() {
            if t > self.now {
                break;
            }
            self.timers.pop();
            self.on_timer(key);
        }
        self.fill();
    }

    /// The next completion, if any (TXN-3-1).
    pub fn poll_completion(&mut self) -> Option<Completion> {
        self.completions.pop_front()
    }

    // ----- commands --------------------------------------------------------------------------

    /// Issues a load-store operation and returns its tag.
    pub fn issue(&mut self, now: Instant, req: LsRequest) -> Result<u16, IssueError> {
        self.now = self.now.max(now);
        //= docs/spec/endpoint.md#5-load-store-unit
        //# EP-5-3 An operation's parameters MUST be checked at issue: length 1..256 for loads and
        //# stores, operand size 4 or 8, a destination GPU id other than 0xFFFF, an address range
        //# that does not wrap. A bad operation MUST be refused at issue with an error naming the
        //# parameter.
        let len = match req.op {
            LsOp::Load { len } => {
                if !(1..=256).contains(&len) {
                    return Err(invalid("len", len.into(), "a load reads 1..=256 bytes"));
                }
                u64::from(len)
            }
            LsOp::Store { data } => data.as_slice().len() as u64,
            LsOp::Atomic { width, op } => {
                let max = if width.bytes() == 4 {
                    u64::from(u32::MAX)
                } else {
                    u64::MAX
                };
                let (a, b) = match op {
                    AtomicOp::FetchAdd { addend } => (addend, 0),
                    AtomicOp::Swap { value } => (value, 0),
                    AtomicOp::CompareSwap { compare, value } => (compare, value),
                };
                if a > max || b > max {
                    return Err(invalid(
                        "operand",
                        a.max(b),
                        "an operand does not fit the operand size",
                    ));
                }
                width.bytes() as u64
            }
        };
        if req.remote.gpu.value() == GpuId::RESERVED {
            return Err(invalid(
                "gpu",
                GpuId::RESERVED.into(),
                "GPU id 0xFFFF is reserved",
            ));
        }
        if req.remote.addr.checked_add(len).is_none() {
            return Err(invalid(
                "addr",
                req.remote.addr,
                "the address range wraps past 2^64",
            ));
        }
        //= docs/spec/endpoint.md#5-load-store-unit
        //# EP-5-2 When every tag is held, issue MUST be refused with an error that says so, and
        //# nothing of the operation MUST have been sent or recorded: the issuer waits for
        //# completions and tries again.
        let Some((tag, era)) = self.lsu_tags.alloc(self.now) else {
            return Err(IssueError::TagsExhausted {
                outstanding: self.lsu_tags.held,
            });
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        self.outstanding.insert(seq);
        if let Ordering::Stream(s) = req.ordering {
            self.streams.entry(s).or_insert((None, 0)).1 += 1;
        }
        let deadline = self.now.saturating_add(self.cfg.op_timeout);
        if let Some(slot) = self.lsu.get_mut(usize::from(tag)) {
            *slot = Some(LsSlot {
                era,
                req,
                kind: OpKind::of(&req.op),
                issued: self.now,
                deadline,
                seq,
                port: None,
                waiting: false,
                sent: false,
                retries: 0,
                tainted: false,
                episode: 0,
                retry_at: None,
                delayed: false,
            });
        }
        self.ls_deadlines.push_back((deadline, tag, era));
        self.send_ls(tag, None);
        self.fill();
        Ok(tag)
    }

    /// Issues a fence and returns its id; its completion comes once every operation issued
    /// before it is complete (EP-5-6).
    pub fn fence(&mut self, now: Instant) -> u64 {
        self.now = self.now.max(now);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.fences.push_back((seq, seq, self.now));
        self.check_fences();
        seq
    }

    /// Posts an RDMA descriptor and returns its id.
    pub fn post(&mut self, now: Instant, desc: RdmaDesc) -> Result<u64, PostError> {
        self.now = self.now.max(now);
        let bad = |field, value, rule| Err(PostError::Invalid { field, value, rule });
        //= docs/spec/endpoint.md#6-rdma-engine
        //# EP-6-1 A descriptor MUST be refused at post, with an error naming the field, if its
        //# length is 0 or above 2^32-1, if its local range is not inside the local space, if its
        //# destination GPU id is 0xFFFF, or if `rdma_queue` descriptors are outstanding.
        if desc.len == 0 || desc.len > MAX_RDMA_LEN {
            return bad("len", desc.len, "an RDMA length is 1..=2^32-1 bytes");
        }
        //= docs/spec/transaction.md#2-operations
        //# TXN-2-6 An RDMA operation's local side (where a write's data comes from, where a read's
        //# data goes to) MAY be either local memory space, global or shared; its remote side MAY
        //# be either space of the target (the SHARED flag, wire.md §6.2).
        let size = self.mem.size(desc.local_space);
        if desc
            .local_addr
            .checked_add(desc.len)
            .is_none_or(|end| end > size)
        {
            return bad(
                "local_addr",
                desc.local_addr,
                "the local range runs past the end of the local space",
            );
        }
        if desc.remote.addr.checked_add(desc.len).is_none() {
            return bad(
                "remote.addr",
                desc.remote.addr,
                "the remote range wraps past 2^64",
            );
        }
        if desc.remote.gpu.value() == GpuId::RESERVED {
            return bad("gpu", GpuId::RESERVED.into(), "GPU id 0xFFFF is reserved");
        }
        if self.rdma.len() >= self.cfg.rdma_queue as usize {
            return Err(PostError::QueueFull {
                outstanding: u32::try_from(self.rdma.len()).unwrap_or(u32::MAX),
            });
        }
        let id = self.next_rdma;
        self.next_rdma += 1;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.outstanding.insert(seq);
        let deadline = self.now.saturating_add(self.cfg.op_timeout);
        let state = match desc.dir {
            RdmaDir::Write => {
                // A write needs its one tag before any segment goes (EP-6-2); without one it
                // waits in the queue of reads and writes for tags.
                RdmaState::Write {
                    has_tag: false,
                    tag: 0,
                    era: 0,
                    next: 0,
                    resend: VecDeque::new(),
                    port: None,
                }
            }
            RdmaDir::Read => RdmaState::Read {
                chunks: desc.len.div_ceil(u64::from(self.cfg.read_chunk)),
                next_chunk: 0,
                active: BTreeMap::new(),
                done_chunks: 0,
                error: None,
                port: None,
            },
        };
        self.rdma.insert(
            id,
            RdmaOp {
                desc,
                issued: self.now,
                deadline,
                seq,
                retries: 0,
                tainted: false,
                episode: 0,
                sent: false,
                hold_until: None,
                state,
            },
        );
        self.timers.push(Reverse((deadline, Key::Rdma(id))));
        self.reads_waiting.push_back(id);
        self.fill();
        Ok(id)
    }

    // ----- link events -----------------------------------------------------------------------

    /// After anything happened to port `i`: take its events, then move frames.
    fn after(&mut self, i: usize) {
        self.drain_link(i);
        self.fill();
    }

    fn drain_link(&mut self, i: usize) {
        let mut lost: Vec<LostFrame> = Vec::new();
        let mut went_down = false;
        loop {
            let Some(p) = self.ports.get_mut(i) else {
                return;
            };
            let Some(ev) = p.link.poll_event() else {
                break;
            };
            match ev {
                Event::LinkUp(agreed) => {
                    //= docs/spec/endpoint.md#3-ports-and-virtual-channels
                    //# EP-3-2 A port is **usable** while its link is UP with at least 4 VCs
                    //# agreed and an agreed MFS that holds a tagged frame of one full segment
                    //# (`segment` + 64 bytes).
                    let need = self.cfg.segment as usize + crate::config::SEGMENT_FRAME_OVERHEAD;
                    p.usable =
                        agreed.vcs >= crate::config::VCS_NEEDED && usize::from(agreed.mfs) >= need;
                    if p.usable && !self.usable.contains(&i) {
                        self.usable.push(i);
                        self.usable.sort_unstable();
                    }
                }
                // A refused INIT or a slow initialisation: the link's counters keep it.
                Event::Notice(_) => {}
                Event::LinkDown(_) => {
                    if p.usable {
                        p.usable = false;
                    }
                    self.usable.retain(|&u| u != i);
                    went_down = true;
                    //= docs/spec/endpoint.md#9-ports-going-down-and-deadlines
                    //# EP-9-1 When a port's link goes down, the endpoint MUST take the port out of
                    //# path choice, take back every frame still queued for the port (its own queue
                    //# and the link's, LINK-6-5), and handle every transaction of those frames and
                    //# of the frames the link reports of unknown fate, in their order, by TXN-5-2,
                    //# TXN-5-3, TXN-3-5, TXN-5-5 and TXN-5-8.
                    p.link.withdraw();
                    if let Some(c) = self.counters.ports.get_mut(i) {
                        c.downs = c.downs.wrapping_add(1);
                    }
                }
                Event::Delivered {
                    vc: v,
                    payload,
                    release,
                    ..
                } => {
                    let mut buf = self.pool.pop().unwrap_or_default();
                    buf.clear();
                    buf.extend_from_slice(payload);
                    if let Some(c) = self.counters.ports.get_mut(i) {
                        c.frames_received = c.frames_received.wrapping_add(1);
                        c.bytes_received = c.bytes_received.wrapping_add(buf.len() as u64);
                    }
                    let request_vc = matches!(v.index(), VC_LS | VC_RDMA);
                    let stalled = request_vc
                        && (self.backlog_full()
                            || self.ports.get(i).is_some_and(|p| !p.inbound.is_empty()));
                    let Some(p) = self.ports.get_mut(i) else {
                        return;
                    };
                    if stalled {
                        //= docs/spec/endpoint.md#8-target
                        //# EP-8-4 When its response backlog reaches `response_backlog` bytes a
                        //# target MUST stop taking request frames from its ports, keeping them in
                        //# the link's receive buffer (their credits unreturned), until the backlog
                        //# drains.
                        if p.inbound.is_empty() {
                            self.counters.backlog_stalls =
                                self.counters.backlog_stalls.wrapping_add(1);
                        }
                        p.inbound.push_back((buf, release));
                    } else {
                        let _ = p.link.release(release);
                        self.on_payload(i, &buf);
                        self.pool.push(buf);
                    }
                }
                Event::Lost {
                    vc: v,
                    reason,
                    payload,
                } => {
                    let mut buf = self.pool.pop().unwrap_or_default();
                    buf.clear();
                    buf.extend_from_slice(payload);
                    lost.push(LostFrame {
                        vc: v.index(),
                        payload: buf,
                        unknown_fate: reason == LostReason::UnknownFate,
                        meta: None,
                    });
                }
            }
        }
        if went_down {
            self.episode += 1;
        }
        if !lost.is_empty() || went_down {
            self.on_lost(i, lost, went_down);
        }
        self.drain_inbound();
    }

    /// Handles the frames port `i` lost, and on a down everything it still held (EP-9-1).
    fn on_lost(&mut self, i: usize, mut lost: Vec<LostFrame>, down: bool) {
        let Some(p) = self.ports.get_mut(i) else {
            return;
        };
        // The lost frames of each VC are the last ones submitted on it: match them to what was
        // sent in them.
        for v in 0..4 {
            let k = lost.iter().filter(|l| l.vc == v).count();
            let Some(metas) = p.sent_meta.get_mut(v) else {
                continue;
            };
            let start = metas.len().saturating_sub(k);
            let mut tail: VecDeque<Vec<TagEra>> = metas.drain(start..).collect();
            // Fewer remembered than lost (it cannot happen with the bound kept): the earliest
            // lost frames go without, and their requests are matched by the current holder.
            let missing = k.saturating_sub(tail.len());
            for (n, l) in lost.iter_mut().filter(|l| l.vc == v).enumerate() {
                if n >= missing {
                    l.meta = tail.pop_front();
                }
            }
        }
        if down {
            // Frames the endpoint still holds for the port, then the packers: after the link's.
            for v in 0..4 {
                let Some(q) = p.out.get_mut(v) else { continue };
                while let Some(f) = q.pop_front() {
                    self.backlog = self.backlog.saturating_sub(f.resp_bytes);
                    lost.push(LostFrame {
                        vc: v,
                        payload: f.payload,
                        unknown_fate: false,
                        meta: Some(f.meta),
                    });
                }
                if let Some(b) = p.out_bytes.get_mut(v) {
                    *b = 0;
                }
            }
            for m in &mut p.sent_meta {
                m.clear();
            }
            let packers = core::mem::take(&mut p.packers);
            for ((v, dst), pk) in packers {
                self.backlog = self.backlog.saturating_sub(pk.resp_bytes);
                let mut payload = pk.buf;
                if pk.count > 0 {
                    let dst = GpuId::new(dst).unwrap_or_default();
                    self.finish_header(&mut payload, dst, i, pk.count);
                    lost.push(LostFrame {
                        vc: usize::from(v),
                        payload,
                        unknown_fate: false,
                        meta: Some(pk.meta),
                    });
                }
            }
        }
        for l in lost {
            self.reroute(i, &l);
            self.pool.push(l.payload);
        }
    }

    /// Deals with the transactions of one frame port `from` lost (TXN-5-2, TXN-5-3, TXN-3-5,
    /// TXN-5-5).
    fn reroute(&mut self, from: usize, l: &LostFrame) {
        let Ok(repr) = DataRepr::parse(&l.payload) else {
            return;
        };
        let dst = repr.dst;
        let mut metas = l.meta.as_deref().unwrap_or(&[]).iter();
        for txn in repr.txns.iter().flatten() {
            if txn.is_request() {
                let tag = txn.tag();
                let era = match (l.meta.is_some(), metas.next()) {
                    (true, Some(&(t, g))) if t == tag => Some(g),
                    (true, _) => None,
                    (false, _) => self.lsu_tags.era(tag).or_else(|| self.rdma_tags.era(tag)),
                };
                let Some(era) = era else { continue };
                self.reroute_request(from, &txn, tag, era, l.unknown_fate);
            } else if l.unknown_fate {
                //= docs/spec/transaction.md#5-operations-that-can-no-longer-complete
                //# TXN-5-8 A target MUST NOT send again a response whose frame had unknown fate
                self.counters.responses_lost = self.counters.responses_lost.wrapping_add(1);
            } else {
                //= docs/spec/transaction.md#5-operations-that-can-no-longer-complete
                //# TXN-5-5 A target MUST send again, on another usable port to the requester, a
                //# response that is known not to have been sent (queued at a port that went
                //# down, LINK-6-5).
                self.counters.moved = self.counters.moved.wrapping_add(1);
                let v = if matches!(txn, TxnRepr::RdmaReadResp { .. }) {
                    VC_READ
                } else {
                    VC_RESP
                };
                self.respond(from, dst, v, &txn, true);
            }
        }
    }

    fn reroute_request(&mut self, from: usize, txn: &TxnRepr<'_>, tag: u16, era: u32, fate: bool) {
        let episode = self.episode;
        if tag < self.cfg.lsu_tags {
            let Some(Some(slot)) = self.lsu.get_mut(usize::from(tag)) else {
                return;
            };
            //= docs/spec/endpoint.md#9-ports-going-down-deadlines-and-busy
            //# EP-9-7 A request lost with a port MUST be handled as a request of the operation
            //# that sent it, even when its tag has since passed to another operation: that
            //# operation MUST NOT be retried, moved or completed because of it.
            if slot.era != era || slot.port != Some(from) {
                return;
            }
            if fate {
                slot.tainted = true;
                if !slot.kind.idempotent() {
                    //= docs/spec/transaction.md#3-statuses
                    //# TXN-3-5 A requester MUST complete with FATE_UNKNOWN, and MUST NOT
                    //# retransmit, an atomic whose request was in a frame its link reported of
                    //# unknown fate (LINK-6-1): performing it twice would change the result.
                    self.complete_ls(tag, CompletionStatus::FateUnknown, CompletionData::None);
                    return;
                }
                if slot.episode != episode {
                    slot.episode = episode;
                    if slot.retries >= self.cfg.max_retries {
                        //= docs/spec/transaction.md#5-operations-that-can-no-longer-complete
                        //# TXN-5-3 A request of an idempotent operation whose frame had unknown
                        //# fate MUST be sent again on another usable path, at most `max_retries`
                        //# times for the operation (endpoint.md §1.1), after which the operation
                        //# completes with TIMEOUT
                        self.complete_ls(tag, CompletionStatus::Timeout, CompletionData::None);
                        return;
                    }
                    slot.retries += 1;
                    self.counters.retries = self.counters.retries.wrapping_add(1);
                }
            } else {
                //= docs/spec/transaction.md#5-operations-that-can-no-longer-complete
                //# TXN-5-2 A request that is known not to have been sent (withdrawn from a port
                //# that went down, LINK-6-5, or never submitted) MUST be sent again on another
                //# usable path, whatever its operation.
                self.counters.moved = self.counters.moved.wrapping_add(1);
                self.send_ls(tag, Some(from));
                return;
            }
            //= docs/spec/endpoint.md#9-ports-going-down-deadlines-and-busy
            //# EP-9-6 An endpoint MUST hold a request of unknown fate for `frame_lifetime` from the
            //# moment its link reports the loss before it sends it again (TXN-5-7), and then give its
            //# operation a new deadline `op_timeout` later.
            //= docs/spec/transaction.md#5-operations-that-can-no-longer-complete
            //# TXN-5-7 A request of unknown fate MUST NOT be sent again before frame_lifetime has
            //# passed since its link reported the attempt it replaces of unknown fate (LINK-6-1).
            //# (A retry after a passed deadline keeps this rule by itself, since op_timeout >=
            //# frame_lifetime, endpoint.md EP-1-3.)
            // The attempt went at the latest now: `frame_lifetime` from now is never too early.
            let at = self.now.saturating_add(self.cfg.frame_lifetime);
            self.delay_ls(tag, at, Some(from));
            return;
        }
        let Some(&Some((id, chunk))) = self
            .rdma_owner
            .get(usize::from(tag.wrapping_sub(self.cfg.lsu_tags)))
        else {
            return;
        };
        if self.rdma_tags.era(tag) != Some(era) {
            return;
        }
        let max = self.cfg.max_retries;
        let Some(op) = self.rdma.get_mut(&id) else {
            return;
        };
        if fate {
            op.tainted = true;
            if op.episode != episode {
                op.episode = episode;
                if op.retries >= max {
                    self.complete_rdma(id, CompletionStatus::Timeout);
                    return;
                }
                op.retries += 1;
                self.counters.retries = self.counters.retries.wrapping_add(1);
            }
        } else {
            self.counters.moved = self.counters.moved.wrapping_add(1);
        }
        // EP-9-6: what had unknown fate goes again `frame_lifetime` from now at the earliest.
        let not_before = if fate {
            self.now.saturating_add(self.cfg.frame_lifetime)
        } else {
            Instant::ZERO
        };
        let timeout = self.cfg.op_timeout;
        match (&mut op.state, txn) {
            (RdmaState::Write { resend, port, .. }, TxnRepr::RdmaWrite { offset, .. }) => {
                if *port == Some(from) {
                    *port = None;
                }
                resend.push_back(u64::from(*offset));
                if fate {
                    let until = op.hold_until.map_or(not_before, |h| h.max(not_before));
                    op.hold_until = Some(until);
                    op.deadline = op.deadline.max(until.saturating_add(timeout));
                    self.active_writes.retain(|&w| w != id);
                    self.timers.push(Reverse((until, Key::RdmaResume(id))));
                } else if op.hold_until.is_none() && !self.active_writes.contains(&id) {
                    self.active_writes.push_back(id);
                }
            }
            (RdmaState::Read { port, active, .. }, TxnRepr::RdmaRead { .. }) => {
                if *port == Some(from) {
                    *port = None;
                }
                if let Some(c) = active.get_mut(&chunk) {
                    c.tainted |= fate;
                    c.not_before = c.not_before.max(not_before);
                }
                if fate {
                    op.deadline = op.deadline.max(not_before.saturating_add(timeout));
                }
                self.send_read_chunk(id, chunk, Some(from));
            }
            _ => {}
        }
    }

    // ----- receive ---------------------------------------------------------------------------

    /// Whether the response backlog has reached `response_backlog` bytes (EP-8-4). The backlog
    /// is every response byte the target holds and has not put on a wire: in its own queues,
    /// packers and held responses, and in the transmit queues of its links on VCs 2 and 3, which
    /// carry responses only. A response waiting in a link's queue still delays the requests
    /// behind it, which is what `T_hold` of Figure EP-F1 bounds.
    fn backlog_full(&self) -> bool {
        let queued: usize = self
            .ports
            .iter()
            .map(|p| {
                [VC_RESP, VC_READ]
                    .iter()
                    .map(|&v| p.link.queued(vc(v)).1)
                    .sum::<usize>()
            })
            .sum();
        self.backlog.saturating_add(queued) >= self.cfg.response_backlog as usize
    }

    /// Takes held request frames again while the backlog allows (EP-8-4).
    fn drain_inbound(&mut self) {
        for i in 0..self.ports.len() {
            if self.ports.get(i).is_none_or(|p| p.inbound.is_empty()) {
                // Nothing held on this port: the backlog need not be summed.
                continue;
            }
            while !self.backlog_full() {
                let Some(p) = self.ports.get_mut(i) else {
                    break;
                };
                let Some((buf, release)) = p.inbound.pop_front() else {
                    break;
                };
                let _ = p.link.release(release);
                self.on_payload(i, &buf);
                self.pool.push(buf);
            }
        }
    }

    /// A DATA payload delivered by port `i`'s link.
    fn on_payload(&mut self, i: usize, payload: &[u8]) {
        let repr = match DataRepr::parse(payload) {
            Ok(r) => r,
            Err(_) => {
                self.counters.malformed_frames = self.counters.malformed_frames.wrapping_add(1);
                return;
            }
        };
        //= docs/spec/endpoint.md#8-target
        //# EP-8-1 A target MUST discard, and count, a DATA frame whose destination GPU is not its
        //# own.
        if repr.dst != self.cfg.gpu {
            self.counters.misdelivered = self.counters.misdelivered.wrapping_add(1);
            return;
        }
        let src = repr.src;
        //= docs/spec/endpoint.md#8-target
        //# EP-8-2 A target MUST perform the requests of a frame in the frame's order and the
        //# frames of a port in the order the link delivers them (TXN-4-1).
        //= docs/spec/transaction.md#4-ordering
        //# TXN-4-1 Load, store and atomic requests on one path MUST be performed at the target in
        //# the order they were issued.
        //= docs/spec/transaction.md#4-ordering
        //# TXN-4-2 A Load issued after a Store on the same path to an overlapping address MUST
        //# return the Store's bytes for the overlap (unless another requester wrote them in
        //# between).
        for item in repr.txns.iter() {
            match item {
                Ok(txn) if txn.is_request() => self.serve(i, src, &txn),
                Ok(txn) => self.on_response(&txn),
                Err(e) => match e.action {
                    //= docs/spec/endpoint.md#8-target
                    //# EP-8-3 A target MUST answer an unknown request UNSUPPORTED (WIRE-6.1-5)
                    //# and a request with bad fields MALFORMED (WIRE-6.1-6), and go on with the
                    //# next transaction.
                    ethlink_protocol::Action::Respond {
                        opcode,
                        tag,
                        status,
                    } => {
                        self.counters.requests_refused =
                            self.counters.requests_refused.wrapping_add(1);
                        if status == Status::Misaligned {
                            // A misaligned atomic is a well-formed request (EP-2-5).
                            self.counters.requests_served =
                                self.counters.requests_served.wrapping_add(1);
                        }
                        let status = if status == Status::Misaligned {
                            self.misaligned(payload, e.offset)
                        } else {
                            status
                        };
                        let r = refusal(opcode, tag, status);
                        //= docs/spec/endpoint.md#8-target
                        //# EP-8-6 A target MUST send every response to a request on VC 2, except
                        //# the RDMA_READ_RESP that answers an RDMA_READ, which goes on VC 3,
                        //# whatever VC the request came on and whatever its status.
                        let v = if Opcode::from_u8(opcode) == Opcode::RdmaReadResp {
                            VC_READ
                        } else {
                            VC_RESP
                        };
                        self.respond(i, src, v, &r, true);
                    }
                    ethlink_protocol::Action::DiscardRest => {
                        self.counters.malformed_txns = self.counters.malformed_txns.wrapping_add(1);
                        break;
                    }
                    //= docs/spec/endpoint.md#10-counters
                    //# EP-10-2 [...] a response with a defined opcode that breaks its encoding
                    //# rules MUST be discarded and counted in `bad_responses`.
                    _ => self.counters.bad_responses = self.counters.bad_responses.wrapping_add(1),
                },
            }
        }
    }

    /// The status of an atomic the decoder found misaligned (WIRE-6.5-2): the memory checks that
    /// EP-2-7 orders before alignment come first. `at` is the payload offset of its address.
    fn misaligned(&self, payload: &[u8], at: usize) -> Status {
        //= docs/spec/endpoint.md#2-memory-model
        //# EP-2-7 The checks MUST be made in the order EP-2-3, EP-2-4, EP-2-5, EP-2-6; the first
        //# that fails gives the status.
        let start = at.saturating_sub(12);
        let field = |a: usize, n: usize| payload.get(start + a..start + a + n);
        let (Some(flags), Some(dlen), Some(key), Some(addr)) =
            (field(1, 1), field(6, 2), field(8, 4), field(12, 8))
        else {
            return Status::Misaligned;
        };
        let space = if flags.first().is_some_and(|f| f & 1 != 0) {
            Space::Shared
        } else {
            Space::Global
        };
        if !self.cfg.caps.contains(Capabilities::ATOMICS) || self.no_shared(space) {
            return Status::Unsupported;
        }
        let dlen = u16::from_be_bytes([dlen[0], dlen[1]]);
        let cas = payload.get(start) == Some(&Opcode::AtomicCompareSwap.to_u8());
        let width = if cas { dlen / 2 } else { dlen };
        let key = u32::from_be_bytes([key[0], key[1], key[2], key[3]]);
        let mut a = [0u8; 8];
        a.copy_from_slice(addr);
        let addr = u64::from_be_bytes(a);
        match self
            .mem
            .check(space, key, addr, u64::from(width), Access::Atomic)
        {
            Err(s) => s,
            Ok(()) => Status::Misaligned,
        }
    }

    /// Performs one request as the target and answers it.
    //= docs/spec/transaction.md#2-operations
    //# TXN-2-8 A target MUST answer every request it receives with exactly one response (an RDMA
    //# write: one completion per write; an RDMA read: segments that cover the read, or one error
    //# segment)
    //= docs/spec/wire.md#61-common-prefix
    //# WIRE-6.1-2 The tag is chosen by the requester; a responder MUST copy the tag of a request,
    //# and the request's source GPU into the destination of the response, unchanged.
    fn serve(&mut self, i: usize, src: GpuId, txn: &TxnRepr<'_>) {
        self.counters.requests_served = self.counters.requests_served.wrapping_add(1);
        if let Some(refused) = self.unsupported(txn) {
            let Some(r) = refused else { return };
            self.counters.requests_refused = self.counters.requests_refused.wrapping_add(1);
            let v = if matches!(r, TxnRepr::RdmaReadResp { .. }) {
                VC_READ
            } else {
                VC_RESP
            };
            self.respond(i, src, v, &r, true);
            return;
        }
        let resp = match *txn {
            TxnRepr::Load { tag, target, len } => {
                //= docs/spec/transaction.md#2-operations
                //# TXN-2-1 A Load MUST return exactly the bytes the target's memory held at the
                //# addressed range when the load was performed, in memory order (WIRE-1.1-2), and
                //# MUST NOT change memory.
                let mut data = [0u8; 256];
                let buf = data.get_mut(..usize::from(len)).unwrap_or(&mut []);
                match self.mem.load(target.space, target.key, target.addr, buf) {
                    Ok(()) => {
                        let r = TxnRepr::LoadResp {
                            tag,
                            status: Status::Ok,
                            data: &*buf,
                        };
                        self.respond(i, src, VC_RESP, &r, true);
                        return;
                    }
                    Err(s) => refusal(Opcode::Load.to_u8(), tag, s),
                }
            }
            TxnRepr::Store { tag, target, data } => {
                //= docs/spec/transaction.md#2-operations
                //# TXN-2-2 A Store MUST write exactly its bytes at the addressed range and nothing
                //# else.
                match self.mem.store(target.space, target.key, target.addr, data) {
                    Ok(()) => TxnRepr::StoreResp {
                        tag,
                        status: Status::Ok,
                    },
                    Err(s) => refusal(Opcode::Store.to_u8(), tag, s),
                }
            }
            TxnRepr::Atomic {
                tag,
                target,
                width,
                op,
            } => match self
                //= docs/spec/transaction.md#2-operations
                //# TXN-2-3 An atomic MUST be performed as one indivisible read-modify-write of a 4
                //# or 8 byte little-endian value (endpoint.md EP-2-8) and MUST return the value
                //# held before it.
                .mem
                .atomic(target.space, target.key, target.addr, width, op)
            {
                Ok(old) => TxnRepr::AtomicResp {
                    tag,
                    kind: match op {
                        AtomicOp::FetchAdd { .. } => AtomicKind::FetchAdd,
                        AtomicOp::Swap { .. } => AtomicKind::Swap,
                        AtomicOp::CompareSwap { .. } => AtomicKind::CompareSwap,
                    },
                    status: Status::Ok,
                    old: Some(old),
                },
                Err(s) => refusal(op.opcode().to_u8(), tag, s),
            },
            TxnRepr::Fence { tag } => {
                //= docs/spec/transaction.md#4-ordering
                //# TXN-4-6 A target MUST answer a FENCE request only after every request it
                //# received from the same source GPU before the FENCE has been performed, RDMA
                //# reads included
                //= docs/spec/endpoint.md#8-target
                //# EP-8-7 A target MUST take the DATA frames its ports' links deliver one at a
                //# time, in one order for all its ports; a request is received before a FENCE
                //# when its frame was taken before the FENCE's frame, or comes before the FENCE
                //# in the same frame.
                let bound = self.next_job;
                if self.read_jobs.iter().any(|j| j.src == src) {
                    self.fence_waits.push((src, i, tag, bound));
                    return;
                }
                TxnRepr::FenceResp {
                    tag,
                    status: Status::Ok,
                }
            }
            TxnRepr::RdmaWrite {
                tag,
                target,
                offset,
                total,
                data,
            } => match self.write_segment(src, tag, target, offset, total, data) {
                Some(status) => TxnRepr::RdmaCompletion { tag, status, total },
                None => return,
            },
            TxnRepr::RdmaRead { tag, target, total } => {
                match self.start_read_job(i, src, tag, target, total) {
                    Some(status) => TxnRepr::RdmaReadResp {
                        tag,
                        status,
                        offset: 0,
                        total,
                        data: &[],
                    },
                    None => return,
                }
            }
            TxnRepr::Unknown { opcode, tag, .. } => refusal(opcode, tag, Status::Unsupported),
            _ => return,
        };
        let v = if matches!(resp, TxnRepr::RdmaReadResp { .. }) {
            VC_READ
        } else {
            VC_RESP
        };
        if !matches!(
            resp,
            TxnRepr::StoreResp {
                status: Status::Ok,
                ..
            } | TxnRepr::AtomicResp {
                status: Status::Ok,
                ..
            } | TxnRepr::FenceResp { .. }
                | TxnRepr::RdmaCompletion {
                    status: Status::Ok,
                    ..
                }
        ) {
            self.counters.requests_refused = self.counters.requests_refused.wrapping_add(1);
        }
        self.respond(i, src, v, &resp, true);
    }

    /// The answer to a request this endpoint's capabilities leave out (EP-11-2..EP-11-4):
    /// `None` when it has them, `Some(None)` when the request is discarded unanswered.
    fn unsupported(&self, txn: &TxnRepr<'_>) -> Option<Option<TxnRepr<'static>>> {
        let caps = self.cfg.caps;
        let un = |op: Opcode, tag| Some(Some(refusal(op.to_u8(), tag, Status::Unsupported)));
        match *txn {
            //= docs/spec/endpoint.md#11-capabilities
            //# EP-11-2 An endpoint without RDMA MUST answer the RDMA_WRITE segment at offset 0
            //# with RDMA_COMPLETION UNSUPPORTED, discard its other segments unanswered, and
            //# answer an RDMA_READ with one RDMA_READ_RESP UNSUPPORTED without data.
            TxnRepr::RdmaWrite { tag, offset, .. } if !caps.contains(Capabilities::RDMA) => {
                if offset == 0 {
                    un(Opcode::RdmaWrite, tag)
                } else {
                    Some(None)
                }
            }
            TxnRepr::RdmaRead { tag, total, .. } if !caps.contains(Capabilities::RDMA) => {
                Some(Some(TxnRepr::RdmaReadResp {
                    tag,
                    status: Status::Unsupported,
                    offset: 0,
                    total,
                    data: &[],
                }))
            }
            //= docs/spec/endpoint.md#11-capabilities
            //# EP-11-3 An endpoint without ATOMICS MUST answer every atomic UNSUPPORTED.
            TxnRepr::Atomic { tag, op, .. } if !caps.contains(Capabilities::ATOMICS) => {
                un(op.opcode(), tag)
            }
            //= docs/spec/endpoint.md#11-capabilities
            //# EP-11-4 An endpoint without SHARED MUST answer UNSUPPORTED every request that
            //# carries the SHARED flag
            TxnRepr::Load { tag, target, .. } if self.no_shared(target.space) => {
                un(Opcode::Load, tag)
            }
            TxnRepr::Store { tag, target, .. } if self.no_shared(target.space) => {
                un(Opcode::Store, tag)
            }
            TxnRepr::Atomic {
                tag, target, op, ..
            } if self.no_shared(target.space) => un(op.opcode(), tag),
            TxnRepr::RdmaRead { tag, target, total } if self.no_shared(target.space) => {
                Some(Some(TxnRepr::RdmaReadResp {
                    tag,
                    status: Status::Unsupported,
                    offset: 0,
                    total,
                    data: &[],
                }))
            }
            // An RDMA write to the shared space is refused at its first segment like any other
            // refused write (EP-6-4), so that it is answered once.
            _ => None,
        }
    }

    fn no_shared(&self, space: Space) -> bool {
        space == Space::Shared && !self.cfg.caps.contains(Capabilities::SHARED)
    }

    /// One RDMA_WRITE segment at the target; the completion status when one is due.
    fn write_segment(
        &mut self,
        src: GpuId,
        tag: u16,
        target: MemTarget,
        offset: u32,
        total: u32,
        data: &[u8],
    ) -> Option<Status> {
        let dlen = u32::try_from(data.len()).unwrap_or(u32::MAX);
        let end = offset.saturating_add(dlen);
        //= docs/spec/endpoint.md#6-rdma-engine
        //# EP-6-3 A target MUST reject, with RDMA_COMPLETION MALFORMED, a segment whose offset is
        //# not a multiple of 256, or whose length is not a multiple of 256 and does not end the
        //# write.
        if !offset.is_multiple_of(BLOCK) || (!dlen.is_multiple_of(BLOCK) && end != total) {
            return Some(Status::Malformed);
        }
        let key = (src.value(), tag);
        let now = self.now;
        if !self.reasm.contains_key(&key) {
            //= docs/spec/endpoint.md#6-rdma-engine
            //# EP-6-4 A target MUST check the whole range of a write (EP-2-3, EP-2-4: address,
            //# total length, key, write permission) when it receives the first segment of the write
            //# (whichever arrives first), and on refusal write none of it and answer one
            //# RDMA_COMPLETION with the status.
            //= docs/spec/transaction.md#3-statuses
            //# TXN-3-4 An operation refused by the target (any status but OK and BUSY) MUST NOT
            //# have changed the target's memory (endpoint.md EP-2-13), and an RDMA write refused
            //# MUST NOT have written any of its bytes.
            let blocks = u64::from(total.div_ceil(BLOCK));
            //= docs/spec/endpoint.md#6-rdma-engine
            //# EP-6-13 A target MUST answer RDMA_COMPLETION UNSUPPORTED, at the write's first
            //# segment as EP-6-4 says, a write whose blocks alone exceed
            //# `max_reassembly_blocks`.
            let check = if self.no_shared(target.space)
                || blocks > u64::from(self.cfg.max_reassembly_blocks)
            {
                Err(Status::Unsupported)
            } else {
                self.mem.check(
                    target.space,
                    target.key,
                    target.addr,
                    u64::from(total),
                    Access::Write,
                )
            };
            if let Err(s) = check {
                // Remembered, room permitting, so that the write is answered once.
                if self.reasm.len() < self.cfg.max_reassemblies as usize {
                    self.reasm.insert(
                        key,
                        Reasm {
                            refused: true,
                            total,
                            blocks: Blocks::new(0),
                            last: now,
                            reserved: 0,
                        },
                    );
                    self.timers.push(Reverse((
                        now.saturating_add(self.cfg.op_timeout),
                        Key::Reasm(key.0, key.1),
                    )));
                }
                return Some(s);
            }
            //= docs/spec/endpoint.md#6-rdma-engine
            //# EP-6-14 A target MUST bound the writes it reassembles at once
            //# (`max_reassemblies`) and answer RDMA_COMPLETION BUSY, writing nothing, every
            //# segment of a write it has no record for when starting one would exceed that
            //# bound.
            //= docs/spec/endpoint.md#6-rdma-engine
            //# EP-6-12 A target MUST reserve `ceil(total / 256)` blocks for each write it starts
            //# reassembling, keep the blocks reserved at once within `max_reassembly_blocks`, and
            //# answer RDMA_COMPLETION BUSY, writing nothing, every segment of a write it has no
            //# record for when starting one would exceed that bound.
            if self.reasm.len() >= self.cfg.max_reassemblies as usize
                || self.reasm_blocks.saturating_add(blocks)
                    > u64::from(self.cfg.max_reassembly_blocks)
            {
                self.counters.reassembly_refused = self.counters.reassembly_refused.wrapping_add(1);
                return Some(Status::Busy);
            }
            self.reasm_blocks += blocks;
            self.reasm.insert(
                key,
                Reasm {
                    refused: false,
                    total,
                    blocks: Blocks::new(total),
                    last: now,
                    reserved: blocks,
                },
            );
            self.counters.reassembly(1);
            self.timers.push(Reverse((
                now.saturating_add(self.cfg.op_timeout),
                Key::Reasm(key.0, key.1),
            )));
        }
        let r = self.reasm.get_mut(&key)?;
        if r.refused {
            r.last = now;
            self.counters.duplicate_segments = self.counters.duplicate_segments.wrapping_add(1);
            return None;
        }
        if r.total != total {
            return Some(Status::Malformed);
        }
        r.last = now;
        //= docs/spec/endpoint.md#6-rdma-engine
        //# EP-6-5 A target MUST reassemble a write by (source GPU, tag): it writes each segment's
        //# bytes at `address + offset` when the segment arrives, keeps a record of the 256-byte
        //# blocks received, ignores a segment whose blocks it has all received, and sends
        //# RDMA_COMPLETION OK, on the port the completing segment arrived on, when every block is
        //# received.
        let delta = match r.blocks.mark(offset, dlen) {
            Marked::Outside => return Some(Status::Malformed),
            Marked::Duplicate => {
                self.counters.duplicate_segments = self.counters.duplicate_segments.wrapping_add(1);
                return None;
            }
            Marked::New(delta) => delta,
        };
        // Kept as a description when the bytes are the data pattern at their place in the write.
        let _ = self.mem.write_received(
            target.space,
            target.addr.saturating_add(u64::from(offset)),
            data,
            target.addr,
        );
        //= docs/spec/transaction.md#2-operations
        //# TXN-2-4 An RDMA write MUST write exactly its bytes at `address .. address + length` of
        //# the target space. Its segments MAY arrive in any order and on any path; the target MUST
        //# report it complete (RDMA_COMPLETION) only after every byte of it has been written, and
        //# MUST report it once per write it sees complete.
        let complete = r.blocks.complete();
        let reserved = r.reserved;
        self.counters.reorder(delta);
        if complete {
            self.reasm_blocks = self.reasm_blocks.saturating_sub(reserved);
            self.reasm.remove(&key);
            self.counters.reassembly(-1);
            return Some(Status::Ok);
        }
        None
    }

    fn start_read_job(
        &mut self,
        i: usize,
        src: GpuId,
        tag: u16,
        target: MemTarget,
        total: u32,
    ) -> Option<Status> {
        //= docs/spec/endpoint.md#6-rdma-engine
        //# EP-6-8 A target MUST check the whole range of an RDMA_READ (EP-2-3, EP-2-4) when it
        //# receives it; on refusal it answers one RDMA_READ_RESP with the status and no data.
        if let Err(s) = self.mem.check(
            target.space,
            target.key,
            target.addr,
            u64::from(total),
            Access::Read,
        ) {
            return Some(s);
        }
        //= docs/spec/endpoint.md#6-rdma-engine
        //# EP-6-9 A target MUST bound the reads it serves at once (`max_read_jobs`) and answer an
        //# RDMA_READ beyond the bound with BUSY.
        if self.read_jobs.len() >= self.cfg.max_read_jobs as usize {
            self.counters.read_jobs_refused = self.counters.read_jobs_refused.wrapping_add(1);
            return Some(Status::Busy);
        }
        let id = self.next_job;
        self.next_job += 1;
        self.read_jobs.push_back(ReadJob {
            id,
            src,
            tag,
            port: i,
            target,
            total,
            next: 0,
            last: self.now,
        });
        self.timers.push(Reverse((
            self.now.saturating_add(self.cfg.op_timeout),
            Key::ReadJob(id),
        )));
        None
    }

    /// A response arrived for this GPU as a requester.
    fn on_response(&mut self, txn: &TxnRepr<'_>) {
        //= docs/spec/endpoint.md#10-counters
        //# EP-10-2 A response with an opcode wire.md does not define MUST be discarded and counted
        //# in `unknown_responses`; a response with a defined opcode that breaks its encoding
        //# rules MUST be discarded and counted in `bad_responses`.
        if matches!(txn, TxnRepr::Unknown { .. }) {
            self.counters.unknown_responses = self.counters.unknown_responses.wrapping_add(1);
            return;
        }
        let tag = txn.tag();
        if tag >= self.cfg.lsu_tags {
            self.on_rdma_response(tag, txn);
            return;
        }
        let Some(Some(slot)) = self.lsu.get(usize::from(tag)) else {
            //= docs/spec/endpoint.md#9-ports-going-down-and-deadlines
            //# EP-9-4 A response that arrives for an operation already completed MUST be
            //# discarded and counted, never reported.
            self.counters.responses_discarded = self.counters.responses_discarded.wrapping_add(1);
            return;
        };
        //= docs/spec/endpoint.md#5-load-store-unit
        //# EP-5-4 A response MUST complete the operation holding its tag only if its opcode
        //# answers that operation's request; any other response, and any response whose tag no
        //# operation holds, MUST be discarded and counted.
        let done = match (*txn, slot.req.op) {
            (TxnRepr::LoadResp { status, data, .. }, LsOp::Load { len }) => {
                if status.is_ok() {
                    if data.len() != usize::from(len) {
                        None
                    } else {
                        Bytes::new(data).map(|b| (CompletionStatus::Ok, CompletionData::Load(b)))
                    }
                } else {
                    Some((CompletionStatus::from_wire(status), CompletionData::None))
                }
            }
            (TxnRepr::StoreResp { status, .. }, LsOp::Store { .. }) => {
                Some((CompletionStatus::from_wire(status), CompletionData::None))
            }
            (
                TxnRepr::AtomicResp {
                    kind, status, old, ..
                },
                LsOp::Atomic { width, op },
            ) => {
                let kind_ok = matches!(
                    (kind, op),
                    (AtomicKind::FetchAdd, AtomicOp::FetchAdd { .. })
                        | (AtomicKind::Swap, AtomicOp::Swap { .. })
                        | (AtomicKind::CompareSwap, AtomicOp::CompareSwap { .. })
                );
                match (kind_ok, status.is_ok(), old) {
                    (false, _, _) => None,
                    (true, true, Some(v)) if v.width() == width => {
                        Some((CompletionStatus::Ok, CompletionData::Atomic(v)))
                    }
                    (true, true, _) => None,
                    (true, false, _) => {
                        Some((CompletionStatus::from_wire(status), CompletionData::None))
                    }
                }
            }
            _ => None,
        };
        //= docs/spec/endpoint.md#9-ports-going-down-deadlines-and-busy
        //# EP-9-8 An operation answered BUSY with no retry left MUST complete with BUSY.
        match done {
            Some((CompletionStatus::Remote(Status::Busy), _))
                if slot.retries < self.cfg.max_retries && slot.retry_at.is_none() =>
            {
                self.busy_retry_ls(tag);
            }
            Some((status, data)) => self.complete_ls(tag, status, data),
            None => {
                self.counters.responses_discarded =
                    self.counters.responses_discarded.wrapping_add(1)
            }
        }
    }

    /// Load-store operation `tag` was answered BUSY and has a retry left: it goes again after
    /// the back-off (EP-9-5).
    //= docs/spec/transaction.md#3-statuses
    //# TXN-3-8 An operation answered BUSY was not performed, whatever its kind (atomics
    //# included): its requester MAY send it again
    fn busy_retry_ls(&mut self, tag: u16) {
        let now = self.now;
        let Some(Some(slot)) = self.lsu.get_mut(usize::from(tag)) else {
            return;
        };
        //= docs/spec/endpoint.md#9-ports-going-down-deadlines-and-busy
        //# EP-9-5 An operation answered BUSY that has a retry left MUST be sent again (whole, an
        //# RDMA read chunk by chunk) after `busy_backoff * 2^(n-1)` for its n-th retry, and the
        //# retry counts against `max_retries`.
        slot.retries += 1;
        slot.tainted = true;
        let n = slot.retries;
        let era = slot.era;
        let at = now.saturating_add(self.backoff(n));
        if let Some(Some(slot)) = self.lsu.get_mut(usize::from(tag)) {
            slot.retry_at = Some(at);
        }
        self.counters.retries = self.counters.retries.wrapping_add(1);
        self.counters.busy_retries = self.counters.busy_retries.wrapping_add(1);
        self.timers.push(Reverse((at, Key::LsRetry(tag, era))));
    }

    fn on_rdma_response(&mut self, tag: u16, txn: &TxnRepr<'_>) {
        let owner = self
            .rdma_owner
            .get(usize::from(tag.wrapping_sub(self.cfg.lsu_tags)))
            .copied()
            .flatten();
        let Some((id, chunk)) = owner else {
            self.counters.responses_discarded = self.counters.responses_discarded.wrapping_add(1);
            return;
        };
        let Some(op) = self.rdma.get_mut(&id) else {
            self.counters.responses_discarded = self.counters.responses_discarded.wrapping_add(1);
            return;
        };
        match (&mut op.state, *txn) {
            (RdmaState::Write { .. }, TxnRepr::RdmaCompletion { status, total, .. }) => {
                //= docs/spec/endpoint.md#6-rdma-engine
                //# EP-6-11 The requester MUST complete an RDMA write when its RDMA_COMPLETION
                //# arrives with the status it carries, or as §9 says.
                if status.is_ok() && u64::from(total) != op.desc.len {
                    self.counters.responses_discarded =
                        self.counters.responses_discarded.wrapping_add(1);
                    return;
                }
                if status == Status::Busy && op.retries < self.cfg.max_retries {
                    self.busy_retry_write(id);
                    return;
                }
                self.complete_rdma(id, CompletionStatus::from_wire(status));
            }
            (
                RdmaState::Read {
                    active,
                    done_chunks,
                    error,
                    chunks,
                    ..
                },
                TxnRepr::RdmaReadResp {
                    status,
                    offset,
                    total,
                    data,
                    ..
                },
            ) => {
                let Some(c) = active.get_mut(&chunk) else {
                    self.counters.responses_discarded =
                        self.counters.responses_discarded.wrapping_add(1);
                    return;
                };
                if c.done {
                    self.counters.responses_discarded =
                        self.counters.responses_discarded.wrapping_add(1);
                    return;
                }
                op.deadline = self.now.saturating_add(self.cfg.op_timeout);
                if status == Status::Busy && op.retries < self.cfg.max_retries {
                    //= docs/spec/endpoint.md#9-ports-going-down-deadlines-and-busy
                    //# EP-9-5 An operation answered BUSY that has a retry left MUST be sent again
                    //# (whole, an RDMA read chunk by chunk) after `busy_backoff * 2^(n-1)` for its
                    //# n-th retry
                    op.retries += 1;
                    op.tainted = true;
                    c.tainted = true;
                    let k = u32::from(op.retries.saturating_sub(1)).min(31);
                    let wait = self.cfg.busy_backoff.saturating_mul(1u32 << k);
                    c.not_before = self.now.saturating_add(wait);
                    op.deadline = c.not_before.saturating_add(self.cfg.op_timeout);
                    self.counters.retries = self.counters.retries.wrapping_add(1);
                    self.counters.busy_retries = self.counters.busy_retries.wrapping_add(1);
                    self.send_read_chunk(id, chunk, None);
                    return;
                }
                if !status.is_ok() {
                    c.done = true;
                    *done_chunks += 1;
                    error.get_or_insert(status);
                    self.counters.reorder(-c.blocks.beyond());
                } else {
                    let dlen = u32::try_from(data.len()).unwrap_or(u32::MAX);
                    let end = offset.saturating_add(dlen);
                    //= docs/spec/endpoint.md#6-rdma-engine
                    //# EP-6-10 The requester MUST place each RDMA_READ_RESP segment's bytes in
                    //# local memory at the descriptor's local address plus the chunk's offset
                    //# plus the segment's offset
                    if total != c.len
                        || end > c.len
                        || !offset.is_multiple_of(BLOCK)
                        || (!dlen.is_multiple_of(BLOCK) && end != c.len)
                    {
                        self.counters.bad_responses = self.counters.bad_responses.wrapping_add(1);
                        return;
                    }
                    //= docs/spec/endpoint.md#6-rdma-engine
                    //# EP-6-18 A requester MUST ignore an RDMA_READ_RESP segment whose blocks have
                    //# all been placed already: it changes no byte of local memory.
                    let delta = match c.blocks.mark(offset, dlen) {
                        Marked::Outside => return,
                        Marked::Duplicate => {
                            self.counters.duplicate_segments =
                                self.counters.duplicate_segments.wrapping_add(1);
                            return;
                        }
                        Marked::New(delta) => delta,
                    };
                    let addr = op
                        .desc
                        .local_addr
                        .saturating_add(chunk.saturating_mul(u64::from(self.cfg.read_chunk)))
                        .saturating_add(u64::from(offset));
                    //= docs/spec/transaction.md#2-operations
                    //# TXN-2-5 An RDMA read MUST place at the requester exactly the bytes of the
                    //# target range, each at its offset from the start of the read, whatever order
                    //# the segments arrive in
                    let _ = self.mem.write_received(
                        op.desc.local_space,
                        addr,
                        data,
                        op.desc.local_addr,
                    );
                    self.counters.reorder(delta);
                    if c.blocks.complete() {
                        c.done = true;
                        *done_chunks += 1;
                    } else {
                        return;
                    }
                }
                // A chunk ended: free its tag.
                let (t, tainted) = (c.tag, c.tainted || !status.is_ok());
                self.counters.reassembly(-1);
                let finished = *done_chunks == *chunks
                    || (error.is_some() && { active.values().all(|c| c.done) });
                let status = error.map_or(CompletionStatus::Ok, CompletionStatus::from_wire);
                self.free_rdma_tag(t, tainted);
                if finished {
                    self.complete_rdma(id, status);
                }
            }
            _ => {
                self.counters.responses_discarded =
                    self.counters.responses_discarded.wrapping_add(1)
            }
        }
    }

    // ----- completion ------------------------------------------------------------------------

    //= docs/spec/wire.md#69-responses
    //# WIRE-6.9-2 A requester that receives an unknown status MUST complete the operation with an
    //# error that reports the raw status value.
    //= docs/spec/transaction.md#3-statuses
    //# TXN-3-2 A completion with a target status MUST carry the status the target sent; an
    //# unknown value MUST be reported with its raw value (WIRE-6.9-2).
    fn complete_ls(&mut self, tag: u16, status: CompletionStatus, data: CompletionData) {
        let Some(slot) = self.lsu.get_mut(usize::from(tag)).and_then(Option::take) else {
            return;
        };
        if slot.delayed
            && let Ordering::Stream(s) = slot.req.ordering
        {
            self.stream_undelay(s);
        }
        // A request without its final response may still be answered late: its tag rests.
        let unanswered = matches!(
            status,
            CompletionStatus::Timeout | CompletionStatus::FateUnknown
        );
        self.lsu_tags.release(
            tag,
            slot.tainted || (unanswered && slot.sent),
            self.now,
            self.cfg.tag_quarantine,
        );
        self.trim_ls_deadlines();
        if let Ordering::Stream(s) = slot.req.ordering
            && let Some(e) = self.streams.get_mut(&s)
        {
            e.1 = e.1.saturating_sub(1);
            if e.1 == 0 {
                self.streams.remove(&s);
            }
        }
        if status.is_ok() {
            match slot.req.op {
                LsOp::Load { len } => {
                    self.counters.ls_bytes_read =
                        self.counters.ls_bytes_read.wrapping_add(u64::from(len))
                }
                LsOp::Store { data } => {
                    self.counters.ls_bytes_written = self
                        .counters
                        .ls_bytes_written
                        .wrapping_add(data.as_slice().len() as u64);
                }
                LsOp::Atomic { .. } => {}
            }
        }
        self.finish(
            slot.seq,
            Completion {
                id: OpId::Ls(tag),
                kind: slot.kind,
                status,
                //= docs/spec/transaction.md#3-statuses
                //# TXN-3-3 A completion that is not OK MUST carry no data.
                data: if status.is_ok() {
                    data
                } else {
                    CompletionData::None
                },
                issued: slot.issued,
                completed: self.now,
                retries: slot.retries,
                gpu: slot.req.remote.gpu,
            },
        );
    }

    /// RDMA write `id` was answered BUSY and has a retry left: its tag rests, and after the
    /// back-off it takes a new tag and is sent whole (EP-9-5). A new tag keeps the BUSY answers
    /// to its other segments from being taken for answers to the retry.
    fn busy_retry_write(&mut self, id: u64) {
        let now = self.now;
        let timeout = self.cfg.op_timeout;
        let Some(op) = self.rdma.get_mut(&id) else {
            return;
        };
        op.retries += 1;
        op.tainted = true;
        let n = op.retries;
        let old = match &mut op.state {
            RdmaState::Write {
                has_tag,
                tag,
                next,
                resend,
                port,
                ..
            } => {
                let old = has_tag.then_some(*tag);
                *has_tag = false;
                *next = 0;
                resend.clear();
                *port = None;
                old
            }
            RdmaState::Read { .. } => None,
        };
        let at = now.saturating_add(self.backoff(n));
        if let Some(op) = self.rdma.get_mut(&id) {
            op.hold_until = Some(at);
            op.deadline = at.saturating_add(timeout);
        }
        if let Some(t) = old {
            self.free_rdma_tag(t, true);
        }
        self.active_writes.retain(|&w| w != id);
        self.reads_waiting.retain(|&w| w != id);
        self.counters.retries = self.counters.retries.wrapping_add(1);
        self.counters.busy_retries = self.counters.busy_retries.wrapping_add(1);
        self.timers.push(Reverse((at, Key::RdmaResume(id))));
    }

    fn free_rdma_tag(&mut self, tag: u16, tainted: bool) {
        if let Some(o) = self
            .rdma_owner
            .get_mut(usize::from(tag.wrapping_sub(self.cfg.lsu_tags)))
        {
            *o = None;
        }
        self.rdma_tags
            .release(tag, tainted, self.now, self.cfg.tag_quarantine);
    }

    fn complete_rdma(&mut self, id: u64, status: CompletionStatus) {
        //= docs/spec/endpoint.md#6-rdma-engine
        //# EP-6-16 A posted descriptor MUST end with exactly one completion carrying its id.
        // Removed here, so never completed twice.
        let Some(op) = self.rdma.remove(&id) else {
            return;
        };
        match &op.state {
            RdmaState::Write { tag, has_tag, .. } => {
                // A write that never got its tag holds none.
                if *has_tag {
                    // Segments may still be on their way after an error: the tag rests.
                    self.free_rdma_tag(*tag, op.tainted || !status.is_ok());
                }
                if status.is_ok() {
                    self.counters.rdma_bytes_written =
                        self.counters.rdma_bytes_written.wrapping_add(op.desc.len);
                }
            }
            RdmaState::Read { active, .. } => {
                for c in active.values().filter(|c| !c.done) {
                    self.counters.reassembly(-1);
                    self.counters.reorder(-c.blocks.beyond());
                    let t = c.tag;
                    if let Some(o) = self
                        .rdma_owner
                        .get_mut(usize::from(t.wrapping_sub(self.cfg.lsu_tags)))
                    {
                        *o = None;
                    }
                    self.rdma_tags.release(
                        t,
                        c.tainted || !status.is_ok(),
                        self.now,
                        self.cfg.tag_quarantine,
                    );
                }
                if status.is_ok() {
                    self.counters.rdma_bytes_read =
                        self.counters.rdma_bytes_read.wrapping_add(op.desc.len);
                }
            }
        }
        self.active_writes.retain(|&w| w != id);
        self.reads_waiting.retain(|&w| w != id);
        let kind = match op.desc.dir {
            RdmaDir::Write => OpKind::RdmaWrite,
            RdmaDir::Read => OpKind::RdmaRead,
        };
        self.finish(
            op.seq,
            Completion {
                id: OpId::Rdma(id),
                kind,
                status,
                data: CompletionData::None,
                issued: op.issued,
                completed: self.now,
                retries: op.retries,
                gpu: op.desc.remote.gpu,
            },
        );
    }

    //= docs/spec/transaction.md#3-statuses
    //# TXN-3-1 Every operation a requester accepts MUST end with exactly one completion carrying
    //# one status of the table. An operation MUST NOT end silently, MUST NOT be completed twice,
    //# and MUST NOT be completed OK unless the target answered OK for all of it.
    //= docs/spec/transaction.md#4-ordering
    //# TXN-4-7 Completions MAY be reported in any order; an operation's completion carries its tag
    //# (load-store) or its descriptor id (RDMA) to match it.
    fn finish(&mut self, seq: u64, c: Completion) {
        self.counters.count(c.kind, c.status);
        self.outstanding.remove(&seq);
        self.completions.push_back(c);
        self.check_fences();
    }

    //= docs/spec/transaction.md#4-ordering
    //# TXN-4-3 Nothing is promised between operations on different paths: they MAY be performed
    //# in either order. A requester that needs an order across paths MUST wait for the first
    //# operation's completion, or use a fence.
    //= docs/spec/transaction.md#4-ordering
    //# TXN-4-5 A Fence operation MUST complete only after every operation the requester issued before it,
    //# on every path, is complete.
    fn check_fences(&mut self) {
        while let Some(&(id, seq, issued)) = self.fences.front() {
            //= docs/spec/endpoint.md#5-load-store-unit
            //# EP-5-6 A fence MUST complete once every operation issued before it (load-store and
            //# RDMA) is complete (TXN-4-5). It sends no request and holds no tag.
            if self.outstanding.first().is_some_and(|&o| o < seq) {
                break;
            }
            self.fences.pop_front();
            self.counters.count(OpKind::Fence, CompletionStatus::Ok);
            self.completions.push_back(Completion {
                id: OpId::Fence(id),
                kind: OpKind::Fence,
                status: CompletionStatus::Ok,
                data: CompletionData::None,
                issued,
                completed: self.now,
                retries: 0,
                gpu: self.cfg.gpu,
            });
        }
    }

    // ----- timers ----------------------------------------------------------------------------

    fn on_timer(&mut self, key: Key) {
        let now = self.now;
        match key {
            Key::Rdma(id) => self.rdma_deadline(id),
            Key::Pack(port, v, dst) => {
                let i = usize::from(port);
                let due = self
                    .ports
                    .get(i)
                    .and_then(|p| p.packers.get(&(v, dst)))
                    .map(|pk| pk.since.saturating_add(self.cfg.pack_delay));
                match due {
                    Some(t) if t <= now => {
                        self.flush_packer(i, v, dst);
                        self.pump(i);
                    }
                    Some(t) => self.timers.push(Reverse((t, key))),
                    None => {}
                }
            }
            Key::Reasm(src, tag) => {
                let Some(r) = self.reasm.get(&(src, tag)) else {
                    return;
                };
                let due = r.last.saturating_add(self.cfg.op_timeout);
                if due > now {
                    self.timers.push(Reverse((due, key)));
                    return;
                }
                let beyond = r.blocks.beyond();
                let refused = r.refused;
                self.reasm_blocks = self.reasm_blocks.saturating_sub(r.reserved);
                self.reasm.remove(&(src, tag));
                if refused {
                    return;
                }
                //= docs/spec/endpoint.md#6-rdma-engine
                //# EP-6-15 A target MUST forget a write that made no progress for `op_timeout`.
                self.counters.reassembly_expired = self.counters.reassembly_expired.wrapping_add(1);
                self.counters.reassembly(-1);
                self.counters.reorder(-beyond);
            }
            Key::ReadJob(id) => {
                let Some(pos) = self.read_jobs.iter().position(|j| j.id == id) else {
                    return;
                };
                let last = self.read_jobs.get(pos).map_or(now, |j| j.last);
                let due = last.saturating_add(self.cfg.op_timeout);
                if due > now {
                    self.timers.push(Reverse((due, key)));
                    return;
                }
                self.read_jobs.remove(pos);
                self.counters.responses_expired = self.counters.responses_expired.wrapping_add(1);
                self.release_fences();
            }
            Key::LsRetry(tag, era) => {
                let Some(Some(slot)) = self.lsu.get_mut(usize::from(tag)) else {
                    return;
                };
                if slot.era != era || slot.delayed || slot.retry_at.is_none_or(|t| t > now) {
                    return;
                }
                slot.retry_at = None;
                slot.deadline = now.saturating_add(self.cfg.op_timeout);
                let d = slot.deadline;
                self.ls_deadlines.push_back((d, tag, era));
                self.send_ls(tag, None);
            }
            Key::RdmaResume(id) => {
                let Some(op) = self.rdma.get_mut(&id) else {
                    return;
                };
                if op.hold_until.is_none_or(|t| t > now) {
                    return;
                }
                op.hold_until = None;
                if let RdmaState::Write { has_tag, .. } = op.state {
                    let q = if has_tag {
                        &mut self.active_writes
                    } else {
                        &mut self.reads_waiting
                    };
                    if !q.contains(&id) {
                        q.push_back(id);
                    }
                }
            }
            Key::Wake => {}
            Key::Quiet => {
                if now < self.quiet_until {
                    return;
                }
                for i in 0..self.ports.len() {
                    if self.want_up.get(i).copied().unwrap_or(false) {
                        if let Some(w) = self.want_up.get_mut(i) {
                            *w = false;
                        }
                        if let Some(p) = self.ports.get_mut(i) {
                            p.link.physical_up(now);
                        }
                        self.drain_link(i);
                    }
                }
            }
            Key::Held => {
                //= docs/spec/endpoint.md#8-target
                //# EP-8-5 A response that waits for a usable port to its requester for longer
                //# than `op_timeout` MUST be discarded and counted; the requester's deadline ends
                //# the operation.
                while self
                    .held
                    .front()
                    .is_some_and(|h| h.since.saturating_add(self.cfg.op_timeout) <= now)
                {
                    if let Some(h) = self.held.pop_front() {
                        self.backlog = self.backlog.saturating_sub(h.txn.len());
                        self.counters.responses_expired =
                            self.counters.responses_expired.wrapping_add(1);
                    }
                }
                if let Some(h) = self.held.front() {
                    let t = h.since.saturating_add(self.cfg.op_timeout);
                    self.timers.push(Reverse((t, Key::Held)));
                }
            }
        }
    }

    /// The deadline of load-store operation `tag` (holder `era`) fell.
    fn ls_deadline(&mut self, tag: u16, era: u32) {
        let now = self.now;
        let Some(Some(slot)) = self.lsu.get_mut(usize::from(tag)) else {
            return;
        };
        if slot.era != era {
            return;
        }
        if slot.deadline > now || slot.retry_at.is_some() {
            // A later deadline of this operation is queued, or it is held back and gets a new
            // deadline when it is sent again.
            return;
        }
        //= docs/spec/transaction.md#5-operations-that-can-no-longer-complete
        //# TXN-5-4 When the deadline passes an idempotent operation MUST be retried whole
        //# on a usable path, if it has retries left; otherwise it MUST complete with
        //# TIMEOUT (or NO_PATH, TXN-3-6).
        if !slot.sent {
            //= docs/spec/transaction.md#3-statuses
            //# TXN-3-6 A requester MUST complete with NO_PATH an operation none of whose
            //# requests could be sent before its deadline because no usable path to the
            //# target existed.
            self.complete_ls(tag, CompletionStatus::NoPath, CompletionData::None);
            return;
        }
        if !slot.kind.idempotent() || slot.retries >= self.cfg.max_retries {
            //= docs/spec/transaction.md#3-statuses
            //# TXN-3-7 A requester MUST complete with TIMEOUT an operation that has no
            //# final response when its deadline passes and has no retry left, or that is
            //# not idempotent.
            self.complete_ls(tag, CompletionStatus::Timeout, CompletionData::None);
            return;
        }
        slot.retries += 1;
        slot.tainted = true;
        slot.deadline = now.saturating_add(self.cfg.op_timeout);
        let d = slot.deadline;
        self.counters.retries = self.counters.retries.wrapping_add(1);
        self.ls_deadlines.push_back((d, tag, era));
        // Another port: the path may have lost frames beyond the first hop. An ordered stream
        // is pinned anew with it (TXN-5-6).
        let avoid = slot.port;
        if !slot.waiting {
            self.send_ls(tag, avoid);
        }
    }

    /// Drops the deadlines of completed operations from the front of the queue.
    fn trim_ls_deadlines(&mut self) {
        while let Some(&(_, tag, era)) = self.ls_deadlines.front() {
            let live = self
                .lsu
                .get(usize::from(tag))
                .and_then(Option::as_ref)
                .is_some_and(|s| s.era == era);
            if live {
                break;
            }
            self.ls_deadlines.pop_front();
        }
    }

    fn rdma_deadline(&mut self, id: u64) {
        let now = self.now;
        let max = self.cfg.max_retries;
        let timeout = self.cfg.op_timeout;
        let Some(op) = self.rdma.get_mut(&id) else {
            return;
        };
        let started = match &op.state {
            RdmaState::Write { has_tag, .. } => *has_tag,
            // A read with no chunk in flight is waiting for tags, like a write without its tag.
            RdmaState::Read { active, .. } => active.values().any(|c| !c.done),
        };
        if !started {
            // Still waiting for a tag: the deadline runs from the start (TXN-5-4 counts from
            // issue into the network, and tags are the GPU's own backpressure).
            op.deadline = now.saturating_add(timeout);
            self.timers.push(Reverse((op.deadline, Key::Rdma(id))));
            return;
        }
        if op.deadline > now {
            self.timers.push(Reverse((op.deadline, Key::Rdma(id))));
            return;
        }
        if !op.sent {
            self.complete_rdma(id, CompletionStatus::NoPath);
            return;
        }
        if op.retries >= max {
            self.complete_rdma(id, CompletionStatus::Timeout);
            return;
        }
        //= docs/spec/endpoint.md#9-ports-going-down-and-deadlines
        //# EP-9-3 An operation's deadline MUST be checked by the endpoint's timer; an operation
        //# whose deadline passes MUST be retried or completed as TXN-5-4 says. An RDMA write
        //# retried is sent whole with the same tag; an RDMA read retries its unfinished chunks.
        op.retries += 1;
        op.tainted = true;
        op.deadline = now.saturating_add(timeout);
        self.counters.retries = self.counters.retries.wrapping_add(1);
        self.timers.push(Reverse((op.deadline, Key::Rdma(id))));
        match &mut op.state {
            RdmaState::Write {
                next, resend, port, ..
            } => {
                *next = 0;
                resend.clear();
                *port = None;
                if !self.active_writes.contains(&id) {
                    self.active_writes.push_back(id);
                }
            }
            RdmaState::Read { active, port, .. } => {
                *port = None;
                let chunks: Vec<u64> = active
                    .iter_mut()
                    .filter(|(_, c)| !c.done)
                    .map(|(k, c)| {
                        c.tainted = true;
                        *k
                    })
                    .collect();
                for c in chunks {
                    self.send_read_chunk(id, c, None);
                }
            }
        }
    }

    fn release_fences(&mut self) {
        let mut i = 0;
        while i < self.fence_waits.len() {
            let Some(&(src, port, tag, bound)) = self.fence_waits.get(i) else {
                break;
            };
            let pending = self.read_jobs.iter().any(|j| j.src == src && j.id < bound);
            if pending {
                i += 1;
                continue;
            }
            self.fence_waits.swap_remove(i);
            let r = TxnRepr::FenceResp {
                tag,
                status: Status::Ok,
            };
            self.respond(port, src, VC_RESP, &r, true);
        }
    }

    // ----- sending ---------------------------------------------------------------------------

    fn is_port_usable(&self, i: usize) -> bool {
        self.ports.get(i).is_some_and(|p| p.usable)
    }

    /// Bytes waiting at port `i`: being packed, in the endpoint's queues and in the link's.
    fn load(&self, i: usize) -> usize {
        self.ports.get(i).map_or(usize::MAX, |p| {
            p.packers.values().map(|pk| pk.buf.len()).sum::<usize>()
                + p.out_bytes.iter().sum::<usize>()
                + (0..4).map(|v| p.link.queued(vc(v)).1).sum::<usize>()
        })
    }

    /// Picks a usable port by the policy (EP-4-2), other than `avoid` if another is usable.
    fn choose(&mut self, dst: GpuId, key: u64, avoid: Option<usize>) -> Option<usize> {
        //= docs/spec/endpoint.md#9-ports-going-down-and-deadlines
        //# EP-9-2 A request to be sent again MUST go to a usable port other than the one it was
        //# lost on, chosen by §4, and MUST count a retry when its frame had unknown fate.
        let avoid = avoid.filter(|_| self.usable.len() > 1);
        let n = self.usable.len() - usize::from(avoid.is_some_and(|a| self.usable.contains(&a)));
        if n == 0 {
            return None;
        }
        let nth = |k: usize| {
            self.usable
                .iter()
                .copied()
                .filter(|&u| Some(u) != avoid)
                .nth(k)
        };
        //= docs/spec/endpoint.md#4-paths-and-load-balancing
        //# EP-4-2 The port of a new pin, of an unordered load-store operation, of an RDMA write
        //# (all its segments) or of an RDMA read chunk MUST be chosen among the usable ports, in
        //# (stack, port) order, by the run's policy; the choice shows in the path id of the
        //# request's frames (EP-3-4): - *hash*: the port at index h mod n, n usable ports, h the
        //# 64-bit hash of §4.1 of the destination GPU and the stream id (ordered streams), the tag
        //# (unordered operations); - *round-robin*: the next port after the last one chosen, in a
        //# cycle over the usable ports; - *least-loaded*: the port with the fewest bytes waiting
        //# (the endpoint's queues and the link's transmit queue), the first in order on a tie; -
        //# *spray*: as round-robin for load-store operations and RDMA reads, and for an RDMA write
        //# each segment on the next port in the cycle.
        match self.cfg.policy {
            crate::Policy::Hash => nth((mix(dst, key) % n as u64) as usize),
            crate::Policy::RoundRobin | crate::Policy::Spray => {
                let last = self.rr_last;
                let next = self
                    .usable
                    .iter()
                    .copied()
                    .filter(|&u| Some(u) != avoid)
                    .find(|&u| last.is_none_or(|l| u > l))
                    .or_else(|| nth(0));
                self.rr_last = next;
                next
            }
            crate::Policy::LeastLoaded => self
                .usable
                .iter()
                .copied()
                .filter(|&u| Some(u) != avoid)
                .min_by_key(|&u| (self.load(u), u)),
        }
    }

    /// Sends load-store operation `tag`, unless requests of its ordered stream are held back
    /// for a retry: then it queues behind them (TXN-5-6).
    fn send_ls(&mut self, tag: u16, avoid: Option<usize>) {
        let Some(Some(slot)) = self.lsu.get(usize::from(tag)) else {
            return;
        };
        if let Ordering::Stream(s) = slot.req.ordering
            && self.stream_delayed.get(&s).is_some_and(|&n| n > 0)
        {
            let at = self.ls_delayed.back().map_or(self.now, |e| e.0);
            self.delay_ls(tag, at, avoid);
            return;
        }
        self.send_ls_now(tag, avoid);
    }

    /// Holds load-store operation `tag` back until `at` at least, in the queue of delayed
    /// retries, which keeps the order they must go in.
    fn delay_ls(&mut self, tag: u16, at: Instant, avoid: Option<usize>) {
        let at = at
            .max(self.now)
            .max(self.ls_delayed.back().map_or(at, |e| e.0));
        let Some(Some(slot)) = self.lsu.get_mut(usize::from(tag)) else {
            return;
        };
        if slot.delayed {
            return;
        }
        slot.delayed = true;
        slot.waiting = false;
        slot.retry_at = Some(at);
        let era = slot.era;
        if let Ordering::Stream(s) = slot.req.ordering {
            *self.stream_delayed.entry(s).or_insert(0) += 1;
        }
        self.ls_delayed.push_back((at, tag, era, avoid));
    }

    /// A load-store operation held in the queue of delayed retries is sent now.
    fn release_delayed(&mut self, tag: u16, era: u32, avoid: Option<usize>) {
        let now = self.now;
        let Some(Some(slot)) = self.lsu.get_mut(usize::from(tag)) else {
            return;
        };
        if slot.era != era || !slot.delayed {
            return;
        }
        slot.delayed = false;
        slot.retry_at = None;
        slot.deadline = now.saturating_add(self.cfg.op_timeout);
        let d = slot.deadline;
        let ordering = slot.req.ordering;
        self.ls_deadlines.push_back((d, tag, era));
        if let Ordering::Stream(s) = ordering {
            self.stream_undelay(s);
        }
        self.send_ls_now(tag, avoid);
    }

    fn stream_undelay(&mut self, s: u32) {
        if let Some(n) = self.stream_delayed.get_mut(&s) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.stream_delayed.remove(&s);
            }
        }
    }

    /// The wait before retry number `n` (1 for the first) of an operation answered BUSY:
    /// `busy_backoff * 2^(n-1)` (EP-9-5).
    fn backoff(&self, n: u8) -> Duration {
        let k = u32::from(n.saturating_sub(1)).min(31);
        self.cfg.busy_backoff.saturating_mul(1u32 << k)
    }

    /// Routes and sends (or parks) load-store operation `tag`.
    fn send_ls_now(&mut self, tag: u16, avoid: Option<usize>) {
        let Some(Some(slot)) = self.lsu.get(usize::from(tag)) else {
            return;
        };
        let (req, era, old) = (slot.req, slot.era, slot.port);
        let port = match req.ordering {
            Ordering::Stream(s) => {
                //= docs/spec/transaction.md#5-operations-that-can-no-longer-complete
                //# TXN-5-6 A request of an ordered stream that is sent again (TXN-5-2, TXN-5-3,
                //# TXN-5-4) MUST be sent on the stream's current path before every request of the
                //# stream issued after it is sent again; a stream whose request passed its
                //# deadline is pinned anew to another usable port
                //= docs/spec/endpoint.md#4-paths-and-load-balancing
                //# EP-4-1 All requests of an ordered stream that are outstanding at once MUST use
                //# one path: the stream is pinned to a port when it has no outstanding operation
                //# and a request is issued, and stays pinned until it has none again, its port
                //# stops being usable, or one of its requests passes its deadline (TXN-5-6).
                let pinned = self.streams.get(&s).and_then(|e| e.0);
                match pinned.filter(|&p| self.is_port_usable(p) && Some(p) != avoid) {
                    Some(p) => Some(p),
                    None => {
                        //= docs/spec/endpoint.md#4-paths-and-load-balancing
                        //# EP-4-3 When a port stops being usable, every stream pinned to it MUST
                        //# be pinned anew, and the requests it still holds MUST be moved as §9
                        //# says.
                        let p = self.choose(req.remote.gpu, u64::from(s), avoid.or(old));
                        if let Some(e) = self.streams.get_mut(&s) {
                            e.0 = p;
                        }
                        p
                    }
                }
            }
            Ordering::Unordered => self.choose(req.remote.gpu, u64::from(tag), avoid),
        };
        let Some(slot) = self.lsu.get_mut(usize::from(tag)).and_then(Option::as_mut) else {
            return;
        };
        let Some(port) = port else {
            if !slot.waiting {
                slot.waiting = true;
                self.waiting.push_back((tag, era));
            }
            return;
        };
        slot.waiting = false;
        slot.port = Some(port);
        slot.sent = true;
        let target = target_of(&req);
        let txn = match req.op {
            LsOp::Load { len } => TxnRepr::Load { tag, target, len },
            LsOp::Store { ref data } => TxnRepr::Store {
                tag,
                target,
                data: data.as_slice(),
            },
            LsOp::Atomic { width, op } => TxnRepr::Atomic {
                tag,
                target,
                width,
                op,
            },
        };
        let mut buf = [0u8; 300];
        let n = txn.emit(&mut buf).unwrap_or(0);
        if let Some(bytes) = buf.get(..n) {
            self.enqueue(
                port,
                VC_LS,
                req.remote.gpu,
                bytes,
                Some((tag, era)),
                true,
                0,
            );
        }
    }

    fn send_read_chunk(&mut self, id: u64, chunk: u64, avoid: Option<usize>) {
        let policy_port;
        let (target, len, tag, era, dst) = {
            let Some(op) = self.rdma.get(&id) else { return };
            let RdmaState::Read { active, port, .. } = &op.state else {
                return;
            };
            let Some(c) = active.get(&chunk) else { return };
            if c.not_before > self.now {
                // Held back (EP-9-5, EP-9-6): sent from the queue of unsent chunks when due.
                let t = c.not_before;
                if !self.chunks_unsent.contains(&(id, chunk)) {
                    self.chunks_unsent.push_back((id, chunk));
                    self.timers.push(Reverse((t, Key::Wake)));
                }
                return;
            }
            policy_port = *port;
            let off = chunk.saturating_mul(u64::from(self.cfg.read_chunk));
            (
                MemTarget {
                    space: op.desc.remote.space,
                    key: op.desc.remote.key,
                    addr: op.desc.remote.addr.saturating_add(off),
                },
                c.len,
                c.tag,
                c.era,
                op.desc.remote.gpu,
            )
        };
        let port = match policy_port.filter(|&p| self.is_port_usable(p) && Some(p) != avoid) {
            Some(p) if self.cfg.policy != crate::Policy::Spray => Some(p),
            _ => self.choose(dst, u64::from(tag), avoid),
        };
        let Some(port) = port else {
            // No usable port now: sent when one is.
            if !self.chunks_unsent.contains(&(id, chunk)) {
                self.chunks_unsent.push_back((id, chunk));
            }
            return;
        };
        if let Some(op) = self.rdma.get_mut(&id) {
            op.sent = true;
            if let RdmaState::Read { port: p, .. } = &mut op.state {
                *p = Some(port);
            }
        }
        let txn = TxnRepr::RdmaRead {
            tag,
            target,
            total: len,
        };
        let mut buf = [0u8; 32];
        let n = txn.emit(&mut buf).unwrap_or(0);
        if let Some(bytes) = buf.get(..n) {
            self.enqueue(port, VC_RDMA, dst, bytes, Some((tag, era)), false, 0);
        }
    }

    /// Sends a response to `dst`, on port `i` if usable, else on another (EP-4-4), else holds it.
    //= docs/spec/endpoint.md#8-target
    //# EP-8-8 A target MUST NOT drop a response for want of room.
    // Responses are queued or held without a bound on their number; the backlog stops the
    // intake of requests instead (EP-8-4).
    fn respond(&mut self, i: usize, dst: GpuId, v: usize, txn: &TxnRepr<'_>, pack: bool) {
        let mut buf = self.pool.pop().unwrap_or_default();
        buf.clear();
        buf.resize(txn.buffer_len(), 0);
        let n = txn.emit(&mut buf).unwrap_or(0);
        buf.truncate(n);
        let bytes = &buf[..];
        //= docs/spec/endpoint.md#4-paths-and-load-balancing
        //# EP-4-4 A response MUST be sent on the port its request arrived on, unless that port is
        //# no longer usable (TXN-5-5).
        let port = if self.is_port_usable(i) {
            Some(i)
        } else {
            self.choose(dst, u64::from(txn.tag()), Some(i))
        };
        match port {
            Some(p) => self.enqueue(p, v, dst, bytes, None, pack && v == VC_RESP, n),
            None => {
                let txn = bytes.to_vec();
                if self.held.is_empty() {
                    self.timers.push(Reverse((
                        self.now.saturating_add(self.cfg.op_timeout),
                        Key::Held,
                    )));
                }
                self.backlog += n;
                self.held.push_back(Held {
                    dst,
                    vc: v,
                    txn,
                    since: self.now,
                });
            }
        }
        self.pool.push(buf);
    }

    /// Largest payload (network header and transactions) a frame on port `i` can carry.
    fn max_payload(&self, i: usize) -> usize {
        let Some(p) = self.ports.get(i) else { return 0 };
        let mfs = p.link.agreed().map_or(p.link.config().mfs, |a| a.mfs);
        let eth = ETH_HEADER_LEN
            + if p.link.config().vlan.is_some() {
                VLAN_TAG_LEN
            } else {
                0
            };
        // frame_len(eth, payload) = eth + link header + payload (+ pad) + FCS.
        let overhead = frame_len(eth, 64).saturating_sub(64);
        usize::from(mfs).saturating_sub(overhead)
    }

    /// Puts one transaction on its way to `dst` through port `i` on VC `v`: into a packer when
    /// `pack`, else alone in a frame.
    #[allow(clippy::too_many_arguments)]
    fn enqueue(
        &mut self,
        i: usize,
        v: usize,
        dst: GpuId,
        txn: &[u8],
        meta: Option<TagEra>,
        pack: bool,
        resp: usize,
    ) {
        let cap = self.max_payload(i);
        let now = self.now;
        self.backlog += resp;
        //= docs/spec/endpoint.md#11-capabilities
        //# EP-11-5 An endpoint without PACKING MUST send every DATA frame with one transaction.
        //= docs/spec/classes.md#3-capabilities
        //# CLS-3-1 A device that does not announce `PACKING` MUST NOT send a DATA frame that
        //# carries more than one transaction.
        let pack = pack && self.cfg.caps.contains(Capabilities::PACKING);
        if !pack {
            let mut payload = self.pool.pop().unwrap_or_default();
            payload.clear();
            payload.resize(NETWORK_HEADER_LEN, 0);
            payload.extend_from_slice(txn);
            self.finish_header(&mut payload, dst, i, 1);
            self.push_out(
                i,
                v,
                OutFrame {
                    payload,
                    meta: meta.into_iter().collect(),
                    txns: 1,
                    resp_bytes: resp,
                },
            );
            self.pump(i);
            return;
        }
        let key = (u8::try_from(v).unwrap_or(0), dst.value());
        //= docs/spec/endpoint.md#7-packing
        //# EP-7-1 The endpoint MAY put several transactions with the same destination, path and VC
        //# into one frame (WIRE-5-5), up to the MFS agreed on the port and 255 transactions, if it
        //# has the PACKING capability (§11).
        let full = self
            .ports
            .get(i)
            .and_then(|p| p.packers.get(&key))
            .is_some_and(|pk| {
                pk.buf.len() + txn.len() > cap
                    || usize::from(pk.count) >= ethlink_protocol::MAX_TXNS_PER_FRAME
            });
        if full {
            self.flush_packer(i, key.0, key.1);
        }
        let delay = self.cfg.pack_delay;
        let Some(p) = self.ports.get_mut(i) else {
            return;
        };
        let pool = &mut self.pool;
        let pk = p.packers.entry(key).or_insert_with(|| {
            let mut buf = pool.pop().unwrap_or_default();
            buf.clear();
            buf.resize(NETWORK_HEADER_LEN, 0);
            Packer {
                buf,
                meta: Vec::new(),
                count: 0,
                since: now,
                resp_bytes: 0,
            }
        });
        let first = pk.count == 0;
        pk.buf.extend_from_slice(txn);
        pk.count += 1;
        pk.resp_bytes += resp;
        pk.meta.extend(meta);
        //= docs/spec/endpoint.md#7-packing
        //# EP-7-2 A transaction MUST NOT wait more than `pack_delay` for others to share its
        //# frame: a frame being packed MUST be queued for its port when it is full or when its
        //# first transaction has waited `pack_delay`, whichever comes first.
        let room_left = cap.saturating_sub(pk.buf.len()) >= 24
            && usize::from(pk.count) < ethlink_protocol::MAX_TXNS_PER_FRAME;
        if delay.is_zero() || !room_left {
            self.flush_packer(i, key.0, key.1);
            self.pump(i);
        } else if first {
            let port = u16::try_from(i).unwrap_or(u16::MAX);
            self.timers.push(Reverse((
                now.saturating_add(delay),
                Key::Pack(port, key.0, key.1),
            )));
        }
    }

    fn finish_header(&self, payload: &mut [u8], dst: GpuId, i: usize, count: u16) {
        let path = self.ports.get(i).map_or(PathId(0), |p| p.path);
        let len = u16::try_from(payload.len().saturating_sub(NETWORK_HEADER_LEN)).unwrap_or(0);
        if let Some(h) = payload.get_mut(..NETWORK_HEADER_LEN) {
            h[..2].copy_from_slice(&dst.value().to_be_bytes());
            //= docs/spec/endpoint.md#3-ports-and-virtual-channels
            //# EP-3-4 The stack and port a frame is sent on MUST be the ones its path id names.
            //= docs/spec/endpoint.md#12-reset-and-identity
            //# EP-12-3 An endpoint MUST put its configured GPU id in the source of every DATA
            //# frame it sends.
            h[2..4].copy_from_slice(&self.cfg.gpu.value().to_be_bytes());
            h[4] = path.0;
            h[5] = u8::try_from(count).unwrap_or(0);
            h[6..8].copy_from_slice(&len.to_be_bytes());
        }
    }

    fn flush_packer(&mut self, i: usize, v: u8, dst: u16) {
        let Some(pk) = self
            .ports
            .get_mut(i)
            .and_then(|p| p.packers.remove(&(v, dst)))
        else {
            return;
        };
        if pk.count == 0 {
            self.pool.push(pk.buf);
            return;
        }
        let mut payload = pk.buf;
        self.finish_header(
            &mut payload,
            GpuId::new(dst).unwrap_or_default(),
            i,
            pk.count,
        );
        if pk.count > 1 {
            self.counters.packed_frames = self.counters.packed_frames.wrapping_add(1);
            self.counters.packed_txns = self.counters.packed_txns.wrapping_add(u64::from(pk.count));
        }
        //= docs/spec/endpoint.md#7-packing
        //# EP-7-3 Packing MUST keep the order of the transactions of one path.
        self.push_out(
            i,
            usize::from(v),
            OutFrame {
                payload,
                meta: pk.meta,
                txns: pk.count,
                resp_bytes: pk.resp_bytes,
            },
        );
    }

    fn push_out(&mut self, i: usize, v: usize, f: OutFrame) {
        let Some(p) = self.ports.get_mut(i) else {
            return;
        };
        if let Some(b) = p.out_bytes.get_mut(v) {
            *b += f.payload.len();
        }
        if let Some(q) = p.out.get_mut(v) {
            q.push_back(f);
        }
    }

    /// Moves frames from the endpoint's queues of port `i` into its link while it takes them
    /// (EP-3-3).
    fn pump(&mut self, i: usize) {
        //= docs/spec/endpoint.md#3-ports-and-virtual-channels
        //# EP-3-3 The endpoint MUST keep its own queue of frames per port and VC and submit a
        //# frame to the port's link only when the link accepts it; a frame refused by the link
        //# (queue full) MUST stay first in the endpoint's queue.
        //= docs/spec/endpoint.md#3-ports-and-virtual-channels
        //# EP-3-6 Queues of different VCs MUST NOT block each other: a frame that waits on one VC
        //# MUST NOT hold back the frames of another.
        let keep = {
            let Some(p) = self.ports.get(i) else { return };
            if !p.usable {
                return;
            }
            let c = p.link.config();
            c.replay_max_frames as usize + c.tx_queue_frames as usize + 1
        };
        let mut refused: Vec<(usize, OutFrame)> = Vec::new();
        for v in 0..4 {
            loop {
                let Some(p) = self.ports.get_mut(i) else {
                    return;
                };
                let Some(f) = p.out.get(v).and_then(VecDeque::front) else {
                    break;
                };
                match p.link.submit(vc(v), &f.payload) {
                    Ok(()) => {}
                    Err(SubmitError::QueueFull { .. }) => break,
                    Err(_) => {
                        // Cannot be sent on this link (never the case on a usable port): move it.
                        if let Some(f) = p.out.get_mut(v).and_then(VecDeque::pop_front) {
                            if let Some(b) = p.out_bytes.get_mut(v) {
                                *b = b.saturating_sub(f.payload.len());
                            }
                            refused.push((v, f));
                        }
                        continue;
                    }
                }
                let Some(f) = p.out.get_mut(v).and_then(VecDeque::pop_front) else {
                    break;
                };
                if let Some(b) = p.out_bytes.get_mut(v) {
                    *b = b.saturating_sub(f.payload.len());
                }
                if let Some(m) = p.sent_meta.get_mut(v) {
                    m.push_back(f.meta);
                    while m.len() > keep {
                        m.pop_front();
                    }
                }
                if let Some(c) = self.counters.ports.get_mut(i) {
                    c.frames_sent = c.frames_sent.wrapping_add(1);
                    c.bytes_sent = c.bytes_sent.wrapping_add(f.payload.len() as u64);
                    c.txns_sent = c.txns_sent.wrapping_add(u64::from(f.txns));
                }
                self.backlog = self.backlog.saturating_sub(f.resp_bytes);
                self.pool.push(f.payload);
            }
        }
        for (v, f) in refused {
            self.backlog = self.backlog.saturating_sub(f.resp_bytes);
            let l = LostFrame {
                vc: v,
                payload: f.payload,
                unknown_fate: false,
                meta: Some(f.meta),
            };
            self.reroute(i, &l);
            self.pool.push(l.payload);
        }
    }

    /// Moves work forward: parked operations onto usable ports, RDMA segments and read chunks
    /// while the ports have room, held responses, and the target's reads.
    fn fill(&mut self) {
        if self.usable.is_empty() {
            // Descriptors still take their tags, so that their deadlines run (TXN-5-4).
            self.fill_rdma();
            return;
        }
        // Parked load-store operations, in order.
        let n = self.waiting.len();
        for _ in 0..n {
            let Some((tag, era)) = self.waiting.pop_front() else {
                break;
            };
            let live = self
                .lsu
                .get_mut(usize::from(tag))
                .and_then(Option::as_mut)
                .filter(|s| s.era == era && s.waiting);
            if let Some(s) = live {
                s.waiting = false;
                self.send_ls(tag, None);
            }
        }
        // Held responses.
        let n = self.held.len();
        for _ in 0..n {
            let Some(h) = self.held.pop_front() else {
                break;
            };
            self.backlog = self.backlog.saturating_sub(h.txn.len());
            let port = self.choose(h.dst, 0, None);
            if let Some(p) = port {
                self.enqueue(p, h.vc, h.dst, &h.txn, None, h.vc == VC_RESP, h.txn.len());
            } else {
                self.backlog += h.txn.len();
                self.held.push_back(h);
            }
        }
        let n = self.chunks_unsent.len();
        for _ in 0..n {
            let Some((id, chunk)) = self.chunks_unsent.pop_front() else {
                break;
            };
            let now = self.now;
            let state = self.rdma.get(&id).and_then(|o| match &o.state {
                RdmaState::Read { active, .. } => active
                    .get(&chunk)
                    .filter(|c| !c.done)
                    .map(|c| c.not_before <= now),
                RdmaState::Write { .. } => None,
            });
            match state {
                Some(true) => self.send_read_chunk(id, chunk, None),
                // Still held back: its Wake timer is set.
                Some(false) => self.chunks_unsent.push_back((id, chunk)),
                None => {}
            }
        }
        self.fill_rdma();
        self.fill_reads();
        self.drain_inbound();
    }

    fn room(&self, i: usize, v: usize) -> bool {
        self.ports.get(i).is_some_and(|p| {
            p.usable
                && p.out_bytes
                    .get(v)
                    .is_some_and(|&b| b < self.cfg.port_queue as usize)
        })
    }

    /// Issues RDMA read chunks and write tags while tags last, and write segments while ports
    /// have room.
    fn fill_rdma(&mut self) {
        // Tags for waiting descriptors, in post order.
        let n = self.reads_waiting.len();
        for _ in 0..n {
            let Some(id) = self.reads_waiting.pop_front() else {
                break;
            };
            let mut keep = false;
            let mut window_full = false;
            let chunk_size = u64::from(self.cfg.read_chunk);
            let len = self.rdma.get(&id).map_or(0, |o| o.desc.len);
            let dir = self.rdma.get(&id).map(|o| o.desc.dir);
            match dir {
                Some(RdmaDir::Write) => match self.rdma_tags.alloc(self.now) {
                    Some((tag, era)) => {
                        if let Some(o) = self
                            .rdma_owner
                            .get_mut(usize::from(tag.wrapping_sub(self.cfg.lsu_tags)))
                        {
                            *o = Some((id, u64::MAX));
                        }
                        if let Some(RdmaState::Write {
                            has_tag,
                            tag: t,
                            era: g,
                            ..
                        }) = self.rdma.get_mut(&id).map(|o| &mut o.state)
                        {
                            *has_tag = true;
                            *t = tag;
                            *g = era;
                        }
                        self.active_writes.push_back(id);
                    }
                    None => keep = true,
                },
                Some(RdmaDir::Read) => loop {
                    let window = self.cfg.read_window as usize;
                    let next = match self.rdma.get(&id).map(|o| &o.state) {
                        Some(RdmaState::Read {
                            next_chunk,
                            chunks,
                            error: None,
                            active,
                            ..
                        }) if next_chunk < chunks => {
                            if active.values().filter(|c| !c.done).count() >= window {
                                // The window is full: the read waits for its own chunks.
                                window_full = true;
                                break;
                            }
                            *next_chunk
                        }
                        _ => break,
                    };
                    //= docs/spec/endpoint.md#6-rdma-engine
                    //# EP-6-7 An RDMA read of length L MUST be asked for in chunks of
                    //# `read_chunk` bytes (the last shorter), one RDMA_READ with its own tag per
                    //# chunk; at most `read_window` chunks of one read and `rdma_tags` chunks of
                    //# all reads are outstanding at once, and further chunks wait.
                    let Some((tag, era)) = self.rdma_tags.alloc(self.now) else {
                        keep = true;
                        break;
                    };
                    if let Some(o) = self
                        .rdma_owner
                        .get_mut(usize::from(tag.wrapping_sub(self.cfg.lsu_tags)))
                    {
                        *o = Some((id, next));
                    }
                    let clen = chunk_size.min(len.saturating_sub(next * chunk_size));
                    let clen32 = u32::try_from(clen).unwrap_or(u32::MAX);
                    if let Some(RdmaState::Read {
                        next_chunk, active, ..
                    }) = self.rdma.get_mut(&id).map(|o| &mut o.state)
                    {
                        *next_chunk += 1;
                        active.insert(
                            next,
                            ChunkState {
                                tag,
                                era,
                                tainted: false,
                                len: clen32,
                                blocks: Blocks::new(clen32),
                                done: false,
                                not_before: Instant::ZERO,
                            },
                        );
                    }
                    self.counters.reassembly(1);
                    self.send_read_chunk(id, next, None);
                },
                None => {}
            }
            if keep {
                self.reads_waiting.push_back(id);
                // Tags are gone: later descriptors wait behind this one.
                break;
            }
            if window_full {
                self.reads_waiting.push_back(id);
            }
        }
        // Write segments, one per write in turn, while ports have room.
        if !self.usable.iter().any(|&p| self.room(p, VC_RDMA)) {
            return;
        }
        let mut idle_rounds = 0;
        while idle_rounds < self.active_writes.len() {
            let Some(id) = self.active_writes.pop_front() else {
                break;
            };
            match self.write_one_segment(id) {
                Segment::Sent => {
                    idle_rounds = 0;
                    self.active_writes.push_back(id);
                }
                Segment::Blocked => {
                    idle_rounds += 1;
                    self.active_writes.push_back(id);
                }
                Segment::Done => {}
            }
        }
    }

    //= docs/spec/transaction.md#4-ordering
    //# TXN-4-4 An RDMA operation is performed segment by segment. Its segments MAY be performed in
    //# any order and interleaved with any other operation, on its own path as on others
    fn write_one_segment(&mut self, id: u64) -> Segment {
        let seg = u64::from(self.cfg.segment);
        let spray = self.cfg.policy == crate::Policy::Spray;
        let Some(op) = self.rdma.get_mut(&id) else {
            return Segment::Done;
        };
        if op.hold_until.is_some() {
            // Held back: RdmaResume puts it back in turn.
            return Segment::Done;
        }
        let RdmaState::Write {
            tag,
            era,
            next,
            resend,
            port,
            ..
        } = &mut op.state
        else {
            return Segment::Done;
        };
        let offset = match resend.front() {
            Some(&o) => o,
            None if *next < op.desc.len => *next,
            None => return Segment::Done,
        };
        let (tag, era, desc, pinned) = (*tag, *era, op.desc, *port);
        let chosen = match pinned.filter(|&p| !spray && self.is_port_usable(p)) {
            Some(p) => Some(p),
            None => {
                // Pick only among ports with room, so a full port does not stall the write.
                let p = self.choose(desc.remote.gpu, u64::from(tag), None);
                p.filter(|&p| self.room(p, VC_RDMA))
            }
        };
        let Some(p) = chosen.filter(|&p| self.room(p, VC_RDMA)) else {
            return Segment::Blocked;
        };
        let len = seg.min(desc.len - offset);
        let Some(op) = self.rdma.get_mut(&id) else {
            return Segment::Done;
        };
        op.sent = true;
        op.deadline = self.now.saturating_add(self.cfg.op_timeout);
        if let RdmaState::Write {
            next, resend, port, ..
        } = &mut op.state
        {
            if resend.front() == Some(&offset) {
                resend.pop_front();
            } else {
                *next = offset + len;
            }
            if !spray {
                *port = Some(p);
            }
        }
        //= docs/spec/wire.md#67-rdma_write-0x10-hlen-7-one-segment-of-a-remote-write
        //# WIRE-6.7-2 All segments of one write MUST carry the same tag, key, address, total
        //# length and SHARED flag.
        //= docs/spec/endpoint.md#6-rdma-engine
        //# EP-6-2 An RDMA write of length L MUST be sent as RDMA_WRITE segments with one tag, each
        //# covering `offset .. offset + dlen` of the write with `offset` a multiple of `segment`
        //# and `dlen` = min(`segment`, L - `offset`), together covering the write exactly once per
        //# attempt.
        //# EP-6-19 The data of a segment MUST be read from local memory when the segment is built.
        let mut data = core::mem::take(&mut self.seg);
        let n = usize::try_from(len).unwrap_or(0);
        let Some(chunk) = data.get_mut(..n) else {
            self.seg = data;
            return Segment::Done;
        };
        let _ = self.mem.read(
            desc.local_space,
            desc.local_addr.saturating_add(offset),
            chunk,
        );
        let txn = TxnRepr::RdmaWrite {
            tag,
            target: MemTarget {
                space: desc.remote.space,
                key: desc.remote.key,
                addr: desc.remote.addr,
            },
            offset: u32::try_from(offset).unwrap_or(u32::MAX),
            total: u32::try_from(desc.len).unwrap_or(u32::MAX),
            data: chunk,
        };
        let mut buf = self.pool.pop().unwrap_or_default();
        buf.clear();
        buf.resize(txn.buffer_len(), 0);
        let w = txn.emit(&mut buf).unwrap_or(0);
        buf.truncate(w);
        self.seg = data;
        self.enqueue(
            p,
            VC_RDMA,
            desc.remote.gpu,
            &buf,
            Some((tag, era)),
            false,
            0,
        );
        self.pool.push(buf);
        Segment::Sent
    }

    /// The target's reads: segments while the ports have room.
    fn fill_reads(&mut self) {
        // Nothing can move while no port has room for read data.
        if self.read_jobs.is_empty() || !self.usable.iter().any(|&p| self.room(p, VC_READ)) {
            return;
        }
        let mut idle = 0;
        while idle < self.read_jobs.len() {
            let Some(mut job) = self.read_jobs.pop_front() else {
                break;
            };
            if !self.is_port_usable(job.port) {
                match self.choose(job.src, u64::from(job.tag), Some(job.port)) {
                    Some(p) => job.port = p,
                    None => {
                        idle += 1;
                        self.read_jobs.push_back(job);
                        continue;
                    }
                }
            }
            if !self.room(job.port, VC_READ) {
                idle += 1;
                self.read_jobs.push_back(job);
                continue;
            }
            idle = 0;
            let seg = self.cfg.segment;
            let len = seg.min(job.total - job.next);
            let mut data = core::mem::take(&mut self.seg);
            let Some(buf) = data.get_mut(..len as usize) else {
                self.seg = data;
                continue;
            };
            let addr = job.target.addr.saturating_add(u64::from(job.next));
            //= docs/spec/endpoint.md#6-rdma-engine
            //# EP-6-17 A target MUST answer an RDMA_READ_RESP segment that would read a poisoned
            //# byte with the status POISONED and no data instead, and send no further segment of
            //# that read.
            let status = self.mem.load(job.target.space, job.target.key, addr, buf);
            let txn = match status {
                Ok(()) => TxnRepr::RdmaReadResp {
                    tag: job.tag,
                    status: Status::Ok,
                    offset: job.next,
                    total: job.total,
                    data: buf,
                },
                Err(s) => TxnRepr::RdmaReadResp {
                    tag: job.tag,
                    status: s,
                    offset: job.next,
                    total: job.total,
                    data: &[],
                },
            };
            let mut out = self.pool.pop().unwrap_or_default();
            out.clear();
            out.resize(txn.buffer_len(), 0);
            let w = txn.emit(&mut out).unwrap_or(0);
            out.truncate(w);
            self.seg = data;
            let bytes = out.len();
            self.enqueue(job.port, VC_READ, job.src, &out, None, false, bytes);
            self.pool.push(out);
            job.next += len;
            job.last = self.now;
            if status.is_ok() && job.next < job.total {
                self.read_jobs.push_back(job);
            } else {
                if status.is_err() {
                    self.counters.requests_refused = self.counters.requests_refused.wrapping_add(1);
                }
                self.release_fences();
            }
        }
    }
}

/// What one attempt to send a write segment did.
enum Segment {
    Sent,
    Blocked,
    Done,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_mix_spreads_and_is_fixed() {
        let g = GpuId::new(3).unwrap_or_default();
        let a = mix(g, 1);
        assert_eq!(a, mix(g, 1));
        assert_ne!(a, mix(g, 2));
        let mut hits = [0u32; 8];
        for k in 0..8000u64 {
            hits[(mix(g, k) % 8) as usize] += 1;
        }
        assert!(hits.iter().all(|&h| (800..1200).contains(&h)), "{hits:?}");
    }

    #[test]
    fn hash_policy_picks_fixed_ports() {
        //= docs/spec/endpoint.md#41-the-hash-function
        //= type=test
        //# EP-4-5 The hash policy MUST compute h exactly as Figure EP-F3 writes it and choose the
        //# usable port at index h mod n.
        let vectors: [(u16, u64, u64, usize, usize); 8] = [
            (0, 0, 0xE220_A839_7B1D_CDAF, 8, 7),
            (1, 0, 0xA285_E7B0_DEB6_3750, 8, 0),
            (1, 7, 0xE6B1_4C92_FE0C_DAAE, 8, 6),
            (3, 1, 0xCEE5_A604_D97C_12AD, 8, 5),
            (5, 0x1234, 0x8983_27DD_45BD_63B4, 6, 0),
            (1023, 42, 0x144E_F8B4_DEB1_B9DD, 16, 13),
            (0xFFFE, 0xFFFF_FFFF, 0x184C_A576_612D_7D22, 7, 1),
            (2, 5, 0x7452_AFDB_D0DB_F951, 3, 2),
        ];
        for (dst, key, h, n, index) in vectors {
            let g = GpuId::new(dst).unwrap_or_default();
            assert_eq!(path_hash(g, key), h, "dst {dst} key {key:#x}");
            assert_eq!((h % n as u64) as usize, index);
        }
        // Through the endpoint: 8 usable ports, (2, 4) of them taken out of choice.
        let cfg = Config {
            stacks: 4,
            ports: 2,
            policy: crate::Policy::Hash,
            ..Config::default()
        };
        let Ok(mut e) = Endpoint::new(cfg) else {
            panic!("config");
        };
        for p in &mut e.ports {
            p.usable = true;
        }
        e.usable = (0..8).collect();
        let g = |v| GpuId::new(v).unwrap_or_default();
        assert_eq!(e.choose(g(1), 7, None), Some(6));
        assert_eq!(e.choose(g(3), 1, None), Some(5));
        e.usable = vec![0, 1, 3, 5, 6, 7];
        // n = 6: 0x898327dd45bd63b4 mod 6 = 0, the first usable port.
        assert_eq!(e.choose(g(5), 0x1234, None), Some(0));
        // Avoiding port 0 leaves 5 ports: 0x898327dd45bd63b4 mod 5 = 0, port 1.
        assert_eq!(0x8983_27DD_45BD_63B4u64 % 5, 0);
        assert_eq!(e.choose(g(5), 0x1234, Some(0)), Some(1));
        // 0xe6b14c92fe0cdaae mod 5 = 2: port 5.
        assert_eq!(0xE6B1_4C92_FE0C_DAAEu64 % 5, 2);
        assert_eq!(e.choose(g(1), 7, Some(0)), Some(5));
    }

    #[test]
    fn frames_carry_the_path_id_of_their_port() {
        use crate::ops::{LsOp, LsRequest, Ordering, Remote};
        use ethlink_protocol::{FrameRepr, LinkFrame, Space};
        let cfg = |id| Config {
            gpu: GpuId::new(id).unwrap_or_default(),
            ..Config::default()
        };
        let (Ok(mut a), Ok(mut b)) = (Endpoint::new(cfg(0)), Endpoint::new(cfg(1))) else {
            panic!("config");
        };
        // Only port 5 (stack 2, port 1) is cabled.
        let port = 5;
        a.port_up(Instant::ZERO, port);
        b.port_up(Instant::ZERO, port);
        let mut paths = Vec::new();
        let mut buf = vec![0u8; 9216];
        for ns in 0..20_000u64 {
            let now = Instant::from_nanos(ns);
            if ns == 10_000 {
                let req = LsRequest {
                    op: LsOp::Load { len: 8 },
                    remote: Remote {
                        gpu: GpuId::new(1).unwrap_or_default(),
                        space: Space::Global,
                        key: 0,
                        addr: 0,
                    },
                    ordering: Ordering::Unordered,
                };
                assert!(a.issue(now, req).is_ok());
            }
            let mut eps = [a, b];
            for e in 0..2 {
                eps[e].handle_timeout(now);
                while let Ok(Some(t)) = eps[e].poll_transmit(now, port, &mut buf) {
                    let frame = &buf[..t.len];
                    if let Ok(FrameRepr {
                        link: LinkFrame::Data { payload, .. },
                        ..
                    }) = FrameRepr::parse_bytes(frame, 9216)
                        && let Ok(d) = DataRepr::parse(payload)
                    {
                        paths.push(d.path);
                    }
                    eps[1 - e].handle_frame(now, port, frame);
                }
            }
            [a, b] = eps;
        }
        //= docs/spec/endpoint.md#3-ports-and-virtual-channels
        //= type=test
        //# EP-3-4 The stack and port a frame is sent on MUST be the ones its path id names.
        assert_eq!(paths.len(), 2, "the load and its response");
        assert!(
            paths.iter().all(|p| *p == PathId::from_parts(2, 1)),
            "{paths:?}"
        );
        assert!(a.poll_completion().is_some());
    }

    #[test]
    fn tags_rest_after_a_retry_and_not_otherwise() {
        let mut t = Tags::new(10, 2);
        let q = Duration::from_micros(5);
        let now = Instant::ZERO;
        let (a, _) = t.alloc(now).unwrap_or_default();
        let (b, _) = t.alloc(now).unwrap_or_default();
        assert_eq!((a, b), (10, 11));
        assert!(t.alloc(now).is_none());
        //= docs/spec/endpoint.md#5-load-store-unit
        //= type=test
        //# EP-5-8 A tag MUST rest `tag_quarantine` after its operation completes when any of its
        //# requests was sent more than once or was of unknown fate
        t.release(a, true, now, q);
        assert!(t.alloc(now).is_none(), "a retried tag rests");
        //= docs/spec/endpoint.md#5-load-store-unit
        //= type=test
        //# EP-5-7 A tag MUST be free for reuse at once when its operation completes with the
        //# answer to its only attempt.
        t.release(b, false, now, q);
        assert_eq!(t.alloc(now).map(|x| x.0), Some(11));
        assert_eq!(t.alloc(Instant::from_nanos(5_000)).map(|x| x.0), Some(10));
    }
}

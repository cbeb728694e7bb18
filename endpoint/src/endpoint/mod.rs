//! The endpoint state machine: requester (load-store unit, RDMA engine), target, ports and paths.

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};
use alloc::vec;
use alloc::vec::Vec;
use core::cmp::Reverse;
use core::fmt;
use core::hash::{BuildHasherDefault, Hasher};

use ethlink_link::{
    BufferTooSmall, Duration, Event, Instant, Link, LostReason, Outgoing, Provenance, Release,
    SharedFrame, SubmitError, Transmit,
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
    Bytes, Completion, CompletionData, CompletionStatus, FenceError, IssueError, LsOp, LsRequest,
    OpId, OpKind, Ordering, PostError, RdmaDesc, RdmaDir,
};
use crate::pattern::Pattern;
use ethlink_link::ConfigError;
use port_link::PortLink;

mod lsu;
mod paths;
mod port_link;
mod rdma;
mod target;

/// VC of load-store requests (EP-3-1).
const VC_LS: usize = 0;
/// VC of RDMA requests.
const VC_RDMA: usize = 1;
/// VC of load-store responses and RDMA completions.
const VC_RESP: usize = 2;
/// VC of RDMA read data.
const VC_READ: usize = 3;
/// Frame buffers an endpoint keeps for reuse.
const POOL: usize = 64;
/// Largest RDMA length (the wire's 32-bit total length).
const MAX_RDMA_LEN: u64 = u32::MAX as u64;
/// Bytes of a FENCE_RESP (wire.md §6): what a FENCE waiting for earlier reads adds to the
/// response backlog (EP-8-4).
const FENCE_RESP_LEN: usize = 8;

/// A request's identity in the frames the endpoint remembers: its tag and the generation of the
/// tag's holder when it was sent.
type TagEra = (u16, u32);

/// A frame waiting in the endpoint's queue of a port and VC.
#[derive(Debug)]
struct OutFrame {
    /// The payload, laid out for the port's link: handed to it without a copy.
    payload: Outgoing,
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
    link: PortLink,
    path: PathId,
    usable: bool,
    out: [VecDeque<OutFrame>; 4],
    out_bytes: [usize; 4],
    packers: BTreeMap<(u8, u16), Packer>,
    /// Request frames held back by the response backlog (EP-8-4), with their credits and when
    /// the link delivered them (EP-8-9).
    inbound: VecDeque<(Vec<u8>, Release, Instant, usize)>,
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

/// Where a payload handed over by the link during a call waits for the call to return.
enum Staged {
    /// At this place and length in the frame's bytes.
    In(usize, usize),
    /// Copied (a payload that is not in the frame's bytes).
    Copied(Vec<u8>),
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
    /// One bit per block, 64 to a word, block `k` at bit `k % 64` of word `k / 64`.
    words: Vec<u64>,
    /// Blocks of the transfer.
    len: u32,
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

/// The mask of bits `lo..hi` (0 <= lo < hi <= 64) of a word.
fn bit_span(lo: u32, hi: u32) -> u64 {
    let top = if hi >= 64 { u64::MAX } else { (1u64 << hi) - 1 };
    top & !((1u64 << lo) - 1)
}

impl Blocks {
    fn new(len: u32) -> Self {
        let n = len.div_ceil(BLOCK);
        Blocks {
            words: vec![0; n.div_ceil(64) as usize],
            len: n,
            received: 0,
            inorder: 0,
        }
    }

    /// The words that blocks `first..end` touch, each with the mask of those blocks in it.
    fn spans(first: u32, end: u32) -> impl Iterator<Item = (usize, u64)> {
        (first / 64..end.div_ceil(64)).map(move |w| {
            let lo = first.max(w * 64) - w * 64;
            let hi = end.min(w * 64 + 64) - w * 64;
            (w as usize, bit_span(lo, hi))
        })
    }

    /// Records the segment at `offset`, `dlen` bytes long.
    fn mark(&mut self, offset: u32, dlen: u32) -> Marked {
        let first = offset / BLOCK;
        let Some(end) = first
            .checked_add(dlen.div_ceil(BLOCK))
            .filter(|&e| e <= self.len)
        else {
            return Marked::Outside;
        };
        let mut new = 0u32;
        for (w, mask) in Self::spans(first, end) {
            if let Some(word) = self.words.get_mut(w) {
                new += (mask & !*word).count_ones();
                *word |= mask;
            }
        }
        if new == 0 {
            return Marked::Duplicate;
        }
        let before = self.beyond();
        self.received += new;
        // The in-order point moves to the first block still missing, a word at a time.
        let mut at = self.inorder;
        while at < self.len {
            let w = (at / 64) as usize;
            let free = !self.words.get(w).copied().unwrap_or(u64::MAX) & !((1u64 << (at % 64)) - 1);
            if free != 0 {
                at = (w as u32 * 64 + free.trailing_zeros()).min(self.len);
                break;
            }
            at = (w as u32 + 1) * 64;
        }
        self.inorder = at.min(self.len);
        Marked::New(self.beyond() - before)
    }

    /// Bytes received beyond the in-order point (the reorder buffer's share of this transfer).
    fn beyond(&self) -> i64 {
        i64::from(self.received - self.inorder) * i64::from(BLOCK)
    }

    fn complete(&self) -> bool {
        self.received == self.len
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
    /// The descriptor this write is a chunk of, when it is one (EP-6-2): its completion goes
    /// to the descriptor's, not to the GPU.
    parent: Option<u64>,
}

/// An RDMA write posted longer than `write_chunk`, sent as writes of `write_chunk` bytes
/// (EP-6-2): what its one completion will say.
#[derive(Debug)]
struct WriteParent {
    desc: RdmaDesc,
    issued: Instant,
    seq: u64,
    /// Chunks in all.
    chunks: u64,
    /// Chunks started so far: the next starts when the last started has sent its segments
    /// (EP-6-2), so that a long write holds one or two reassembly records at its target.
    started: u64,
    /// The operation id of the chunk started last.
    last: u64,
    /// Chunks started and not yet complete.
    left: u64,
    /// The first chunk's status that was not OK.
    error: Option<CompletionStatus>,
    /// The most retries any chunk took.
    retries: u8,
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
    lsu: Vec<Option<Box<LsSlot>>>,
    waiting: VecDeque<TagEra>,
    streams: BTreeMap<u32, (Option<usize>, u32)>,
    rdma_tags: Tags,
    rdma_owner: Vec<Option<(u64, u64)>>,
    rdma: HashMap<u64, RdmaOp, BuildHasherDefault<IdHasher>>,
    next_rdma: u64,
    /// Writes posted longer than `write_chunk`, by descriptor id, while their chunks run.
    write_parents: BTreeMap<u64, WriteParent>,
    /// Entries of `rdma` that are chunks of a write in `write_parents`.
    rdma_chunks: usize,
    active_writes: rdma::WriteQueue,
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
    /// The sizes of `timers` and `ls_deadlines` past which [`Endpoint::sweep`] clears them of
    /// entries that can do nothing any more.
    sweep_at: (usize, usize),
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
            rule: e.rule(),
        })?;
        let mut ports = Vec::with_capacity(cfg.port_count());
        //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
        //# EP-13-1 (§3) An endpoint's ports MUST be numbered stack by stack: port index `i` is
        //# port `i mod ports_per_stack` of stack `i / ports_per_stack`, and its frames carry that
        //# stack and
        for s in 0..cfg.stacks {
            for p in 0..cfg.ports {
                let link = Link::new(cfg.port_link(s, p))?;
                ports.push(Port {
                    link: PortLink::new(link),
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
            //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
            //# EP-13-2 (§5, §6) Load-store operations MUST take tags in `0 .. lsu_tags` (EP-5-1)
            //# and RDMA writes and read chunks tags in `lsu_tags .. lsu_tags +
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
            write_parents: BTreeMap::new(),
            rdma_chunks: 0,
            active_writes: rdma::WriteQueue::default(),
            reads_waiting: VecDeque::new(),
            chunks_unsent: VecDeque::new(),
            outstanding: BTreeSet::new(),
            fences: VecDeque::new(),
            next_seq: 0,
            completions: VecDeque::new(),
            timers: BinaryHeap::new(),
            ls_deadlines: VecDeque::new(),
            sweep_at: Self::sweep_bounds(&cfg),
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
        self.ports.get(i).map(|p| p.link.get())
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
        self.rdma.len() - self.rdma_chunks + self.write_parents.len()
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
                p.link.get().is_idle()
                    && p.out.iter().all(VecDeque::is_empty)
                    && p.packers.is_empty()
                    && p.inbound.is_empty()
            })
    }

    /// Completions waiting for [`Endpoint::poll_completion`].
    pub fn completions_waiting(&self) -> usize {
        self.completions.len()
    }

    /// Moves the endpoint's time to `now`: it never goes back, and never past the horizon.
    //= docs/spec/endpoint.md#12-timers-and-their-relations
    //# EP-1-5 An endpoint MUST keep link.md LINK-1-2 and LINK-1-3 for its own timers and
    //# deadlines as well as its ports' links
    fn take_time(&mut self, now: Instant) {
        self.now = self.now.max(now.within_horizon());
    }

    /// Whether the completions not yet taken fill their bound: no new operation is taken
    /// until the GPU takes some (EP-5-10).
    fn completions_full(&self) -> bool {
        self.completions.len() >= self.cfg.max_completions()
    }

    // ----- ports -----------------------------------------------------------------------------

    /// The physical link of port `i` came up. During the quiet time after a reset the link is
    /// brought up only when that time ends (EP-12-2).
    pub fn port_up(&mut self, now: Instant, i: usize) {
        self.take_time(now);
        if self.now < self.quiet_until {
            if let Some(w) = self.want_up.get_mut(i)
                && !core::mem::replace(w, true)
            {
                self.timers.push(Reverse((self.quiet_until, Key::Quiet)));
            }
            return;
        }
        if let Some(p) = self.ports.get_mut(i) {
            p.link.get_mut().physical_up(self.now);
        }
        self.after(i);
    }

    /// The physical link of port `i` went down.
    pub fn port_down(&mut self, now: Instant, i: usize) {
        self.take_time(now);
        if let Some(w) = self.want_up.get_mut(i) {
            *w = false;
        }
        if let Some(p) = self.ports.get_mut(i) {
            p.link.get_mut().physical_down(self.now);
        }
        self.after(i);
    }

    /// Resets the endpoint (EP-12-1): every operation, tag, queue, reassembly, read job, held
    /// response and counter is forgotten, every port's link is OFF, and ports asked up in the
    /// next `tag_quarantine` come up only when it ends (EP-12-2). The memory, its poison and
    /// its region table are kept. Operations outstanding before the reset get no completion.
    pub fn reset(&mut self, now: Instant) -> Result<(), ConfigError> {
        let now = self.now.max(now.within_horizon());
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
            *w = p.link.get().tx_state() != ethlink_link::TxState::Off;
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
        self.input(now, i, bytes, None, None);
    }

    /// As [`Endpoint::handle_frame`] for a frame whose FCS the port's MAC has already judged
    /// ([`Link::handle_frame_fcs`]).
    pub fn handle_frame_fcs(&mut self, now: Instant, i: usize, bytes: &[u8], fcs: FcsStatus) {
        self.input(now, i, bytes, Some(fcs), None);
    }

    /// As [`Endpoint::handle_frame_fcs`] for a frame held by reference (a simulated wire's,
    /// [`SharedFrame`]): data its sender vouched for as a run of the data pattern
    /// ([`SharedFrame::provenance`]) is written to memory as that description, its bytes not
    /// read again. The memory holds the same bytes.
    pub fn handle_frame_by_ref(
        &mut self,
        now: Instant,
        i: usize,
        frame: &SharedFrame,
        fcs: FcsStatus,
    ) {
        self.input(now, i, frame.as_bytes(), Some(fcs), frame.provenance());
    }

    /// A frame on port `i`, its FCS judged by the MAC (`fcs`) or to be checked, and what the
    /// writer of its payload vouched for.
    fn input(
        &mut self,
        now: Instant,
        i: usize,
        bytes: &[u8],
        fcs: Option<FcsStatus>,
        provenance: Option<Provenance>,
    ) {
        self.take_time(now);
        // A payload the link hands over at once ([`Link::handle_frame_deliver`]: no event
        // waits before it) is read where it lies in `bytes`, not copied; it is taken before the
        // events the frame caused after it, as the event would have been.
        let mut staged = None;
        if let Some(p) = self.ports.get_mut(i) {
            let pool = &mut self.pool;
            p.link.get_mut().handle_frame_deliver(
                self.now,
                bytes,
                fcs,
                &mut |vc, _, payload, release| {
                    let place = match ethlink_link::payload_offset(bytes, payload) {
                        Some(at) => Staged::In(at, payload.len()),
                        None => {
                            let mut buf = pool.pop().unwrap_or_default();
                            buf.clear();
                            buf.extend_from_slice(payload);
                            Staged::Copied(buf)
                        }
                    };
                    staged = Some((vc, place, release));
                },
            );
        }
        match staged {
            Some((vc, Staged::In(at, len), release)) => {
                let payload = bytes.get(at..at + len).unwrap_or(&[]);
                self.take_payload(i, vc, payload, release, provenance);
            }
            Some((vc, Staged::Copied(buf), release)) => {
                // Not the frame's payload: nothing vouched for.
                self.take_payload(i, vc, &buf, release, None);
                self.pool.push(buf);
            }
            None => {}
        }
        self.after(i);
    }

    /// A DATA frame's payload accepted on port `i`: counted, then served, or kept with its
    /// credits while the response backlog is full (EP-8-4).
    fn take_payload(
        &mut self,
        i: usize,
        v: Vc,
        payload: &[u8],
        release: Release,
        provenance: Option<Provenance>,
    ) {
        //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
        //# EP-13-12 (§10) `bytes_received` MUST count the payload of every DATA frame the port's
        //# link delivers, whatever then becomes of it (served, held, discarded as malformed or
        //# misdelivered). `requests_served` MUST
        if let Some(c) = self.counters.ports.get_mut(i) {
            c.frames_received = c.frames_received.wrapping_add(1);
            c.bytes_received = c.bytes_received.wrapping_add(payload.len() as u64);
        }
        //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
        //# EP-13-11 (§8) The response backlog of EP-8-4 MUST be counted in bytes of encoded
        //# response transactions (their prefix, header and data) held or owed. A target stops
        //# taking only frames on the request VCs 0 and 1; frames on VCs 2 and 3 hold only
        //# responses (EP-3-7) and MUST still be taken while the backlog is full, so that the
        //# completions that drain the backlog are never held behind it.
        //= docs/spec/endpoint.md#8-target
        //# EP-8-10 A target MUST take the transactions its links deliver at the rate they arrive
        //# or hold their frames in the links' receive buffers (EP-8-4), never drop one for want of
        let request_vc = matches!(v.index(), VC_LS | VC_RDMA);
        let stalled = request_vc
            && (self.backlog_full() || self.ports.get(i).is_some_and(|p| !p.inbound.is_empty()));
        if stalled {
            //= docs/spec/endpoint.md#8-target
            //# EP-8-4 When its response backlog reaches `response_backlog` bytes a
            //# target MUST stop taking request frames from its ports, keeping them in
            //# the link's receive buffer (their credits unreturned), until the backlog
            //# drains.
            let mut buf = self.pool.pop().unwrap_or_default();
            buf.clear();
            buf.extend_from_slice(payload);
            let Some(p) = self.ports.get_mut(i) else {
                return;
            };
            if p.inbound.is_empty() {
                self.counters.backlog_stalls = self.counters.backlog_stalls.wrapping_add(1);
            }
            p.inbound.push_back((buf, release, self.now, v.index()));
        } else {
            let Some(p) = self.ports.get_mut(i) else {
                return;
            };
            let _ = p.link.get_mut().release(release);
            self.on_payload(i, v.index(), payload, provenance);
        }
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
            p.link.get_mut().defer_fcs(on);
        }
    }

    fn transmit(
        &mut self,
        now: Instant,
        i: usize,
        buf: &mut [u8],
        shared: bool,
    ) -> Result<Option<(Transmit, Option<SharedFrame>)>, BufferTooSmall> {
        self.take_time(now);
        self.pump(i);
        let Some(p) = self.ports.get_mut(i) else {
            return Ok(None);
        };
        let t = if shared {
            p.link.get_mut().poll_transmit_shared(self.now, buf)
        } else {
            p.link
                .get_mut()
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
        if matches!(t, Ok(None))
            && let Some(p) = self.ports.get_mut(i)
        {
            // Nothing to send: nor will there be until something happens to the port.
            p.link.settle();
        }
        t
    }

    /// Whether a poll of port `i` ([`Endpoint::poll_transmit`], [`Endpoint::poll_transmit_shared`])
    /// could send a frame: false only when nothing has happened to the port (a frame received
    /// on it, a timer of its link run, a frame queued for it, any other change to its link)
    /// since a poll of it found nothing to send. An embedder with many ports polls only these
    /// when a wire is free, and skipping the others changes nothing: a poll of them would send
    /// nothing and change nothing.
    pub fn may_transmit(&self, i: usize) -> bool {
        self.ports.get(i).is_some_and(|p| p.link.stirred())
    }

    /// When [`Endpoint::handle_timeout`] must be called next. A deadline after
    /// [`Instant::HORIZON`] is never reached (EP-1-5).
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
        self.take_time(now);
        for i in 0..self.ports.len() {
            let due = self
                .ports
                .get(i)
                .and_then(|p| p.link.poll_timeout())
                .is_some_and(|t| t <= self.now);
            if due {
                if let Some(p) = self.ports.get_mut(i) {
                    p.link.get_mut().handle_timeout(self.now);
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
            let Some(ev) = p.link.get_mut().poll_event() else {
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
                    p.link.get_mut().withdraw();
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
                    self.take_payload(i, v, &buf, release, None);
                    self.pool.push(buf);
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
                        payload: f.payload.payload().to_vec(),
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

    // ----- timers ----------------------------------------------------------------------------

    /// The least sizes of the timer heap and of the queue of load-store deadlines at which
    /// [`Endpoint::sweep`] looks at them: four times the most owners they can have at once
    /// (each owner holds one entry, or a few while it is retried), and some.
    fn sweep_bounds(cfg: &Config) -> (usize, usize) {
        let owners = usize::from(cfg.lsu_tags)
            .saturating_add(cfg.rdma_queue as usize)
            .saturating_add(cfg.max_reassemblies as usize)
            .saturating_add(cfg.max_read_jobs as usize);
        (
            owners.saturating_mul(4).saturating_add(1024),
            usize::from(cfg.lsu_tags)
                .saturating_mul(4)
                .saturating_add(64),
        )
    }

    /// Clears the timer heap and the queue of load-store deadlines of the entries that can do
    /// nothing any more, once either has grown past its bound. Entries are hints that stay until
    /// their time passes; while time stands still and operations, reassemblies and read jobs come
    /// and go at one instant (a peer answering at once), those of the gone ones would pile up
    /// without end. An entry is dropped only when [`Endpoint::on_timer`] or
    /// [`Endpoint::ls_deadline`] would do nothing with it (its owner is gone, or it is the copy
    /// of another), so that nothing the endpoint does changes. Each bound doubles with what is
    /// left, so that sweeps cost a constant per entry.
    fn sweep(&mut self) {
        let (at_timers, at_deadlines) = self.sweep_at;
        let (least_timers, least_deadlines) = Self::sweep_bounds(&self.cfg);
        if self.timers.len() > at_timers {
            let jobs: BTreeSet<u64> = self.read_jobs.iter().map(|j| j.id).collect();
            let mut all = core::mem::take(&mut self.timers).into_vec();
            all.sort_unstable();
            all.dedup();
            all.retain(|Reverse((_, key))| self.timer_owner_lives(*key, &jobs));
            self.timers = BinaryHeap::from(all);
            self.sweep_at.0 = least_timers.max(self.timers.len().saturating_mul(2));
        }
        if self.ls_deadlines.len() > at_deadlines {
            let lsu = &self.lsu;
            self.ls_deadlines.retain(|&(_, tag, era)| {
                lsu.get(usize::from(tag))
                    .and_then(Option::as_ref)
                    .is_some_and(|s| s.era == era)
            });
            self.sweep_at.1 = least_deadlines.max(self.ls_deadlines.len().saturating_mul(2));
        }
    }

    /// Whether the timer entry of `key` can still do something: its owner is there (`jobs` are
    /// the ids of the read jobs served). The keys that stand for no single owner always can.
    fn timer_owner_lives(&self, key: Key, jobs: &BTreeSet<u64>) -> bool {
        match key {
            Key::Rdma(id) => self.rdma.contains_key(&id),
            Key::Pack(port, v, dst) => self
                .ports
                .get(usize::from(port))
                .is_some_and(|p| p.packers.contains_key(&(v, dst))),
            Key::Reasm(src, tag) => self.reasm.contains_key(&(src, tag)),
            Key::ReadJob(id) => jobs.contains(&id),
            Key::LsRetry(tag, era) => self
                .lsu
                .get(usize::from(tag))
                .and_then(Option::as_ref)
                .is_some_and(|s| s.era == era && !s.delayed && s.retry_at.is_some()),
            Key::RdmaResume(id) => self.rdma.get(&id).is_some_and(|op| op.hold_until.is_some()),
            Key::Held | Key::Wake | Key::Quiet => true,
        }
    }

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
                //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
                //# EP-13-4 (§9) A request sent again MUST go: after unknown fate (EP-9-2) and after
                //# a passed deadline (TXN-5-4), on a usable port other than the one the attempt
                //# went on, chosen by §4 (an ordered stream is pinned anew there); after BUSY, on
                //# the port §4 chooses as for a new request (an ordered stream's current pin, an
                //# unordered request by its tag), which MAY be the same port; moved because it was
                //# never sent, on a usable port other than the one it was withdrawn from.
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
                    if has_tag {
                        if !self.active_writes.contains(id) {
                            self.active_writes.push_back(id);
                        }
                    } else if !self.reads_waiting.contains(&id) {
                        self.reads_waiting.push_back(id);
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
                            p.link.get_mut().physical_up(now);
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

    /// Moves work forward: parked operations onto usable ports, RDMA segments and read chunks
    /// while the ports have room, held responses, and the target's reads.
    fn fill(&mut self) {
        self.sweep();
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
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The block map agrees with a list of flags, one per block: new blocks, duplicates,
        /// segments past the end, the in-order point and completion.
        #[test]
        fn blocks_agree_with_a_list_of_flags(
            len in 0u32..70_000,
            segs in proptest::collection::vec((0u32..300, 0u32..40), 0..80),
        ) {
            let mut b = Blocks::new(len);
            let n = len.div_ceil(BLOCK) as usize;
            let mut flags = vec![false; n];
            for (first, count) in segs {
                let (offset, dlen) = (first * BLOCK, count * BLOCK);
                let end = (first + count) as usize;
                let got = b.mark(offset, dlen);
                if end > n {
                    proptest::prop_assert!(matches!(got, Marked::Outside));
                    continue;
                }
                let before = flags.iter().filter(|&&f| f).count() as i64
                    - flags.iter().take_while(|&&f| f).count() as i64;
                let new = flags[first as usize..end].iter().filter(|&&f| !f).count();
                flags[first as usize..end].iter_mut().for_each(|f| *f = true);
                let inorder = flags.iter().take_while(|&&f| f).count();
                let after = flags.iter().filter(|&&f| f).count() as i64 - inorder as i64;
                match got {
                    Marked::Duplicate => proptest::prop_assert_eq!(new, 0),
                    Marked::New(d) => {
                        proptest::prop_assert!(new > 0);
                        proptest::prop_assert_eq!(d, (after - before) * i64::from(BLOCK));
                    }
                    Marked::Outside => proptest::prop_assert!(false, "inside, refused"),
                }
                proptest::prop_assert_eq!(b.inorder as usize, inorder);
                proptest::prop_assert_eq!(b.complete(), flags.iter().all(|&f| f));
            }
        }
    }

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

    /// Two endpoints of 2 ports, cabled port to port, exchanging RDMA writes and bursts of
    /// packed stores with a lossy cable on port 1, driven twice: once polling every port whenever it
    /// is driven, once polling only the ports that [`Endpoint::may_transmit`] names. Every frame
    /// sent, in order and byte for byte, and every completion are the same: skipping the ports
    /// it rules out skips nothing that would have been sent, and changes nothing.
    #[test]
    fn polling_only_the_ports_that_may_transmit_changes_nothing() {
        use crate::memory::{Perms, Region};
        use crate::ops::{RdmaDesc, RdmaDir, Remote};
        /// Every frame sent: the sender, its port, the time (ns), the bytes.
        type Sent = Vec<(usize, usize, u64, Vec<u8>)>;
        let run = |skip: bool| -> (Sent, Vec<Completion>, u64) {
            let cfg = |id| Config {
                gpu: GpuId::new(id).unwrap_or_default(),
                stacks: 1,
                ports: 2,
                segment: 512,
                ..Config::default()
            };
            let (Ok(a), Ok(b)) = (Endpoint::new(cfg(0)), Endpoint::new(cfg(1))) else {
                panic!("config");
            };
            let mut eps = [a, b];
            for e in &mut eps {
                let region = Region::new(Space::Global, 0, 1 << 20, 7, Perms::ALL);
                assert!(e.memory_mut().register(region).is_ok());
                for p in 0..2 {
                    e.port_up(Instant::ZERO, p);
                }
            }
            let mut buf = vec![0u8; 9216];
            let (mut log, mut done, mut skipped) = (Vec::new(), Vec::new(), 0u64);
            let mut lost = 0u64;
            for ns in 0..40_000u64 {
                let now = Instant::from_nanos(ns);
                // RDMA writes and stores side by side, then bursts of stores alone, from an
                // endpoint whose ports have fallen quiet in between.
                let burst = ns >= 25_000 && ns % 1_000 == 500;
                if (ns < 20_000 && ns % 200 == 100 || burst) && eps[0].is_usable(0) {
                    let remote = Remote {
                        gpu: GpuId::new(1).unwrap_or_default(),
                        space: Space::Global,
                        key: 7,
                        addr: (ns % 16_000) * 8,
                    };
                    let desc = RdmaDesc {
                        dir: RdmaDir::Write,
                        local_space: Space::Global,
                        local_addr: 0,
                        remote,
                        len: 3000,
                    };
                    if !burst {
                        let _ = eps[0].post(now, desc);
                    }
                    // A burst of 100 stores of 256 B to one GPU, spread over both ports:
                    // packed (EP-7-1), each port's frame queued full as the next store begins
                    // another, with nothing else happening to the port.
                    let back = Remote {
                        gpu: GpuId::new(0).unwrap_or_default(),
                        ..remote
                    };
                    for k in 0..100u64 {
                        let store = LsRequest {
                            op: LsOp::Store {
                                data: Bytes::new(&[ns as u8; 256]).expect("256 bytes"),
                            },
                            remote: Remote {
                                addr: back.addr + 256 * k,
                                ..back
                            },
                            ordering: Ordering::Unordered,
                        };
                        let _ = eps[1].issue(now, store);
                    }
                }
                for e in 0..2 {
                    if eps[e].poll_timeout().is_some_and(|t| t <= now) {
                        eps[e].handle_timeout(now);
                    }
                    for p in 0..2 {
                        if skip && !eps[e].may_transmit(p) {
                            skipped += 1;
                            continue;
                        }
                        while let Ok(Some(t)) = eps[e].poll_transmit(now, p, &mut buf) {
                            let frame = buf[..t.len].to_vec();
                            // Port 1's cable loses every 97th frame.
                            lost += 1;
                            if p == 1 && lost.is_multiple_of(97) {
                                continue;
                            }
                            eps[1 - e].handle_frame(now, p, &frame);
                            log.push((e, p, ns, frame));
                        }
                    }
                    while let Some(c) = eps[e].poll_completion() {
                        done.push(c);
                    }
                }
            }
            (log, done, skipped)
        };
        let (all, all_done, _) = run(false);
        let (some, some_done, skipped) = run(true);
        assert!(all.len() > 1000, "{} frames", all.len());
        assert!(all_done.len() > 20, "{} completions", all_done.len());
        assert!(skipped > 50_000, "only {skipped} polls skipped");
        assert_eq!(all.len(), some.len());
        assert!(all == some, "the frames differ");
        assert_eq!(all_done, some_done);
    }

    /// Four rounds of each endpoint firing its due timers and sending what it has to the other,
    /// at `now`, their port 0 cabled to each other.
    fn exchange(eps: &mut [Endpoint; 2], now: Instant, buf: &mut [u8]) {
        for _ in 0..4 {
            for e in 0..2 {
                if eps[e].poll_timeout().is_some_and(|t| t <= now) {
                    eps[e].handle_timeout(now);
                }
                while let Ok(Some(t)) = eps[e].poll_transmit(now, 0, buf) {
                    let frame = buf[..t.len].to_vec();
                    eps[1 - e].handle_frame(now, 0, &frame);
                }
            }
        }
    }

    /// RDMA writes that come and go while time barely moves (a peer that answers at once) leave
    /// timer hints behind at both ends, one per write, that fall only an `op_timeout` later;
    /// swept once they pile up, the heaps stay within a bound whatever the number of writes, and
    /// every write completes as it would have.
    #[test]
    fn timer_hints_of_gone_operations_do_not_pile_up() {
        use crate::memory::{Perms, Region};
        use crate::ops::{RdmaDesc, RdmaDir, Remote};
        use ethlink_protocol::Space;
        let cfg = |id| Config {
            gpu: GpuId::new(id).unwrap_or_default(),
            stacks: 1,
            ports: 1,
            lsu_tags: 16,
            rdma_queue: 8,
            max_reassemblies: 16,
            max_read_jobs: 4,
            segment: 256,
            op_timeout: Duration::from_millis(1),
            tag_quarantine: Duration::from_millis(2),
            ..Config::default()
        };
        // 4 * (16 + 8 + 16 + 4) + 1024 entries before a sweep, twice that at most after one.
        let bound = 2 * (4 * (16 + 8 + 16 + 4) + 1024);
        let (Ok(mut a), Ok(mut b)) = (Endpoint::new(cfg(0)), Endpoint::new(cfg(1))) else {
            panic!("config");
        };
        let region = Region::new(Space::Global, 0, 1 << 20, 7, Perms::ALL);
        assert!(b.memory_mut().register(region).is_ok());
        a.port_up(Instant::ZERO, 0);
        b.port_up(Instant::ZERO, 0);
        let mut buf = vec![0u8; 9216];
        let (mut posted, mut done, mut most) = (0u64, 0u64, [0usize; 2]);
        for round in 0..10_000u64 {
            let now = Instant::from_nanos(round * 10);
            if a.is_usable(0) {
                let desc = RdmaDesc {
                    dir: RdmaDir::Write,
                    local_space: Space::Global,
                    local_addr: 0,
                    remote: Remote {
                        gpu: GpuId::new(1).unwrap_or_default(),
                        space: Space::Global,
                        key: 7,
                        addr: (posted % 1024) * 512,
                    },
                    len: 512,
                };
                while a.post(now, desc).is_ok() {
                    posted += 1;
                }
            }
            let mut eps = [a, b];
            exchange(&mut eps, now, &mut buf);
            [a, b] = eps;
            while let Some(c) = a.poll_completion() {
                assert_eq!(c.status, CompletionStatus::Ok, "{c:?}");
                done += 1;
            }
            most = [most[0].max(a.timers.len()), most[1].max(b.timers.len())];
        }
        assert!(
            done > 3 * bound as u64,
            "{done} writes completed of {posted}"
        );
        assert!(posted - done <= 8);
        assert!(
            most.iter().all(|&m| m <= bound),
            "{most:?} hints, bound {bound}"
        );
    }

    /// Loads answered at once behind one that is not answered: the deadlines of the answered
    /// ones stay queued behind the other's until it ends; swept once they pile up, the queue
    /// stays within a bound, and the unanswered load still ends at its own deadline.
    #[test]
    fn deadlines_of_answered_loads_do_not_pile_up() {
        use crate::memory::{Perms, Region};
        use crate::ops::{LsOp, LsRequest, Ordering, Remote};
        use ethlink_protocol::Space;
        let cfg = |id| Config {
            gpu: GpuId::new(id).unwrap_or_default(),
            stacks: 1,
            ports: 1,
            lsu_tags: 16,
            pack_delay: Duration::ZERO,
            op_timeout: Duration::from_millis(1),
            tag_quarantine: Duration::from_millis(2),
            ..Config::default()
        };
        // 4 * 16 + 64 entries before a sweep, twice that at most after one.
        let bound = 2 * (4 * 16 + 64);
        let (Ok(mut a), Ok(mut b)) = (Endpoint::new(cfg(0)), Endpoint::new(cfg(1))) else {
            panic!("config");
        };
        let region = Region::new(Space::Global, 0, 1 << 20, 7, Perms::ALL);
        assert!(b.memory_mut().register(region).is_ok());
        a.port_up(Instant::ZERO, 0);
        b.port_up(Instant::ZERO, 0);
        let load = |gpu| LsRequest {
            op: LsOp::Load { len: 8 },
            remote: Remote {
                gpu: GpuId::new(gpu).unwrap_or_default(),
                space: Space::Global,
                key: 7,
                addr: 0,
            },
            ordering: Ordering::Unordered,
        };
        let mut buf = vec![0u8; 9216];
        let (mut lost, mut done, mut most) = (None, 0u64, 0usize);
        for round in 0..4_000u64 {
            let now = Instant::from_nanos(round * 10);
            if a.is_usable(0) {
                // GPU 1 discards a load for GPU 2 (EP-8-1): it is never answered.
                if lost.is_none() {
                    lost = a.issue(now, load(2)).ok();
                }
                while a.issue(now, load(1)).is_ok() {}
            }
            let mut eps = [a, b];
            exchange(&mut eps, now, &mut buf);
            [a, b] = eps;
            while let Some(c) = a.poll_completion() {
                assert_eq!(c.status, CompletionStatus::Ok, "{c:?}");
                done += 1;
            }
            most = most.max(a.ls_deadlines.len());
        }
        assert!(done > 10 * bound as u64, "{done} loads answered");
        assert!(most <= bound, "{most} deadlines queued, bound {bound}");
        // The load nobody answers still ends: retried at each deadline, then TIMEOUT.
        let Some(tag) = lost else {
            panic!("no load for GPU 2");
        };
        let mut ended = None;
        for k in 1..=10u64 {
            // Every millisecond, an op_timeout: what a sends is lost.
            let t = Instant::from_nanos(100_000 + k * 1_000_000);
            a.handle_timeout(t);
            while let Ok(Some(_)) = a.poll_transmit(t, 0, &mut buf) {}
            while let Some(c) = a.poll_completion() {
                if c.id == OpId::Ls(tag) {
                    ended = Some(c.status);
                }
            }
            if ended.is_some() {
                break;
            }
        }
        assert_eq!(ended, Some(CompletionStatus::Timeout));
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

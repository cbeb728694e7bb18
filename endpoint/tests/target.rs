//! The endpoint as a target: protection, malformed and unknown requests, RDMA reassembly and
//! reads, fences, the response backlog, and the responses it takes as a requester.
//!
//! Most tests drive one [`Endpoint`] through a bare [`Link`] end (the "raw peer") on its port 0:
//! the test writes every request byte itself, on any VC, and reads every transaction the
//! endpoint sends back exactly as it is on the wire. The protection cases are also run between
//! two endpoints through [`BackToBack`] with the normal API, to check the completions.

mod common;

use std::collections::BTreeMap;

use common::{config, gpu, pair_with, pattern};
use ethlink_endpoint::harness::BackToBack;
use ethlink_endpoint::{
    Completion, CompletionData, CompletionStatus, Config, Endpoint, LsOp, LsRequest, Memory, OpId,
    OpKind, Ordering, Perms, Policy, RdmaDesc, RdmaDir, Region, Remote,
};
use ethlink_link::harness::Faults;
use ethlink_link::{Duration, Event, Instant, Link, Release};
use ethlink_protocol::{
    AtomicOp, AtomicValue, DataRepr, MemTarget, NETWORK_HEADER_LEN, PathId, Space, Status, TxnRepr,
    Txns, Vc, Width,
};

// ----- the raw peer ------------------------------------------------------------------------------

/// GPU id of the endpoint under test.
const EP: u16 = 0;
/// GPU id of the raw peer.
const PEER: u16 = 1;

/// One transaction as it was on the wire, with the header of the frame that carried it.
#[derive(Debug, Clone)]
struct Txn {
    vc: u8,
    dst: u16,
    src: u16,
    opcode: u8,
    /// Byte 1: flags of a request, status of a response.
    fs: u8,
    tag: u16,
    hlen: u8,
    dlen: u16,
    /// Header bytes after the 8-byte prefix.
    ext: Vec<u8>,
    data: Vec<u8>,
}

impl Txn {
    fn status(&self) -> Status {
        Status::from_u8(self.fs)
    }

    /// The 32-bit header field at `at` bytes after the prefix.
    fn word(&self, at: usize) -> u32 {
        u32::from_be_bytes(self.ext[at..at + 4].try_into().expect("4 bytes"))
    }

    /// The 64-bit header field at `at` bytes after the prefix.
    fn dword(&self, at: usize) -> u64 {
        u64::from_be_bytes(self.ext[at..at + 8].try_into().expect("8 bytes"))
    }
}

/// Splits a DATA payload the endpoint sent into its transactions, checking that it parses.
fn split(vc: u8, payload: &[u8]) -> Vec<Txn> {
    let repr = DataRepr::parse(payload).expect("the endpoint sent a bad network header");
    let parsed: Vec<_> = repr.txns.iter().collect();
    assert!(
        parsed.iter().all(Result::is_ok),
        "the endpoint sent a transaction that does not parse: {parsed:?}"
    );
    let mut out = Vec::with_capacity(parsed.len());
    let mut pos = NETWORK_HEADER_LEN;
    for _ in 0..parsed.len() {
        let p = &payload[pos..];
        let hlen = p[4];
        let dlen = u16::from_be_bytes([p[6], p[7]]);
        let h = usize::from(hlen) * 4;
        let d = usize::from(dlen);
        out.push(Txn {
            vc,
            dst: repr.dst.value(),
            src: repr.src.value(),
            opcode: p[0],
            fs: p[1],
            tag: u16::from_be_bytes([p[2], p[3]]),
            hlen,
            dlen,
            ext: p[8..h].to_vec(),
            data: p[h..h + d].to_vec(),
        });
        pos += h + d.div_ceil(4) * 4;
    }
    assert_eq!(
        pos,
        payload.len(),
        "payload length and transactions disagree"
    );
    out
}

/// One endpoint whose port 0 is joined to a bare link end driven by the test.
struct Peer {
    ep: Endpoint,
    link: Link,
    now: u64,
    /// While set, delivered frames are recorded but their buffers are not given back: the peer
    /// stops taking frames and the endpoint runs out of credits.
    hold: bool,
    /// The longest DATA payload the endpoint has sent the peer.
    largest_payload: usize,
    held: Vec<Release>,
    /// Every transaction the endpoint sent to the peer, in arrival order.
    rx: Vec<Txn>,
    /// Completions the endpoint reported.
    completions: Vec<Completion>,
    /// While set, the endpoint's DATA frames vanish on the wire (its control frames still
    /// arrive).
    drop_data: bool,
    buf: Vec<u8>,
}

/// The endpoint configuration the raw tests start from.
fn ep_config() -> Config {
    let mut c = config(EP, Policy::Spray);
    // 32 KiB per VC: the backlog tests fill the peer's buffer quickly.
    c.link.rx_credits = [512, 512, 512, 512, 0, 0, 0, 0];
    c
}

impl Peer {
    /// The endpoint of `cfg` with the protected regions, its port 0 UP with the peer.
    fn new(cfg: Config) -> Peer {
        let link_cfg = Config {
            gpu: gpu(PEER),
            ..cfg.clone()
        }
        .port_link(0, 0);
        assert_eq!(link_cfg.vcs, 4);
        let mut ep = Endpoint::new(cfg).expect("endpoint config");
        protect(ep.memory_mut());
        let mut p = Peer {
            ep,
            link: Link::new(link_cfg).expect("link config"),
            now: 0,
            hold: false,
            largest_payload: 0,
            held: Vec::new(),
            rx: Vec::new(),
            completions: Vec::new(),
            drop_data: false,
            buf: vec![0; 9216],
        };
        p.ep.port_up(Instant::ZERO, 0);
        p.link.physical_up(Instant::ZERO);
        assert!(
            p.run_until(100_000, |p| p.ep.is_usable(0) && p.link.is_up()),
            "port 0 did not come up"
        );
        p
    }

    fn now(&self) -> Instant {
        Instant::from_nanos(self.now)
    }

    /// Sends one DATA frame of `txns` from the peer to the endpoint on `vc`.
    fn send(&mut self, vc: u8, txns: &[TxnRepr<'_>]) {
        self.send_from(PEER, vc, txns);
    }

    /// As [`Peer::send`] with another source GPU id in the network header.
    fn send_from(&mut self, src: u16, vc: u8, txns: &[TxnRepr<'_>]) {
        let repr = DataRepr {
            dst: gpu(EP),
            src: gpu(src),
            path: PathId(0),
            txns: Txns::Slice(txns),
        };
        let mut payload = vec![0; repr.buffer_len()];
        let n = repr.emit(&mut payload).expect("emit");
        payload.truncate(n);
        self.send_raw(vc, &payload);
    }

    /// Sends a payload (network header and transactions) written by hand.
    fn send_raw(&mut self, vc: u8, payload: &[u8]) {
        self.link
            .submit(Vc::new(vc).expect("vc"), payload)
            .expect("the peer's link takes the frame");
        self.pump();
    }

    /// Takes every transaction received so far.
    fn take(&mut self) -> Vec<Txn> {
        std::mem::take(&mut self.rx)
    }

    /// Gives back every buffer held and takes frames again.
    fn resume(&mut self) {
        self.hold = false;
        for r in std::mem::take(&mut self.held) {
            self.link.release(r).expect("release");
        }
        self.pump();
    }

    fn drain_events(&mut self) {
        loop {
            let (vc, payload, release) = match self.link.poll_event() {
                None => break,
                // The peer's link goes down and up again when the endpoint's link
                // re-initialises (LINK-2-6).
                Some(Event::LinkUp(_) | Event::LinkDown(_) | Event::Notice(_)) => continue,
                Some(Event::Delivered {
                    vc,
                    payload,
                    release,
                    ..
                }) => (vc, payload.to_vec(), release),
                Some(other) => panic!("the peer's link reported {other:?}"),
            };
            self.rx.extend(split(vc.value(), &payload));
            self.largest_payload = self.largest_payload.max(payload.len());
            if self.hold {
                self.held.push(release);
            } else {
                self.link.release(release).expect("release");
            }
        }
    }

    /// Moves frames both ways until neither side has one to send now.
    fn pump(&mut self) {
        let now = self.now();
        let mut buf = std::mem::take(&mut self.buf);
        loop {
            let mut moved = false;
            while let Some(t) = self.ep.poll_transmit(now, 0, &mut buf).expect("buffer") {
                moved = true;
                if self.drop_data && t.data.is_some() {
                    continue;
                }
                self.link.handle_frame(now, &buf[..t.len]);
                self.drain_events();
                moved = true;
            }
            while let Some(t) = self.link.poll_transmit(now, &mut buf).expect("buffer") {
                self.ep.handle_frame(now, 0, &buf[..t.len]);
                moved = true;
            }
            self.drain_events();
            while let Some(c) = self.ep.poll_completion() {
                self.completions.push(c);
            }
            if !moved {
                break;
            }
        }
        self.buf = buf;
    }

    /// Runs every timer that is due.
    fn fire(&mut self) {
        let now = self.now();
        if self.ep.poll_timeout().is_some_and(|t| t <= now) {
            self.ep.handle_timeout(now);
        }
        if self.link.poll_timeout().is_some_and(|t| t <= now) {
            self.link.handle_timeout(now);
            self.drain_events();
        }
    }

    /// Runs until `done` holds (true) or until `limit_ns` of time (false). Time moves by at least
    /// a nanosecond per round, straight to the next deadline when nothing moves.
    fn run_until(&mut self, limit_ns: u64, mut done: impl FnMut(&Peer) -> bool) -> bool {
        loop {
            self.pump();
            self.fire();
            self.pump();
            if done(self) {
                return true;
            }
            let next = [self.ep.poll_timeout(), self.link.poll_timeout()]
                .into_iter()
                .flatten()
                .map(Instant::as_nanos)
                .min()
                .unwrap_or(u64::MAX)
                .max(self.now + 1);
            if next > limit_ns {
                self.now = self.now.max(limit_ns);
                self.pump();
                return done(self);
            }
            self.now = next;
        }
    }

    /// LOADs of `len` bytes on VC 0, tag `t` reading 256 * `t` bytes into the region, sent
    /// `per_frame` to a frame.
    fn send_loads(&mut self, tags: core::ops::Range<u16>, per_frame: usize, len: u16) {
        let tags: Vec<u16> = tags.collect();
        for chunk in tags.chunks(per_frame) {
            let txns: Vec<TxnRepr<'_>> = chunk
                .iter()
                .map(|&tag| TxnRepr::Load {
                    tag,
                    target: target(K1, BIG + u64::from(tag) * 256),
                    len,
                })
                .collect();
            self.send(0, &txns);
        }
    }

    /// Runs for `ns` nanoseconds.
    fn run_for(&mut self, ns: u64) {
        let end = self.now + ns;
        self.run_until(end, |_| false);
    }

    /// Runs until a transaction with `tag` and `opcode` has arrived (within `ns`).
    fn run_until_rx(&mut self, ns: u64, opcode: u8, tag: u16) -> bool {
        let end = self.now + ns;
        self.run_until(end, |p| {
            p.rx.iter().any(|t| t.opcode == opcode && t.tag == tag)
        })
    }

    fn read(&self, addr: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0; len];
        self.ep
            .memory()
            .read(Space::Global, addr, &mut v)
            .expect("inside the space");
        v
    }
}

// ----- transactions by hand ----------------------------------------------------------------------

/// A transaction written byte by byte: prefix with `hlen` as given and `dlen` = `data.len()`, the
/// header bytes after the prefix, the data and its padding.
fn raw(opcode: u8, fs: u8, tag: u16, hlen: u8, ext: &[u8], data: &[u8]) -> Vec<u8> {
    let mut v = vec![opcode, fs];
    v.extend(tag.to_be_bytes());
    v.push(hlen);
    v.push(0);
    v.extend(u16::try_from(data.len()).expect("dlen").to_be_bytes());
    v.extend(ext);
    v.extend(data);
    v.resize(v.len().div_ceil(4) * 4, 0);
    v
}

/// The header bytes after the prefix of a LOAD: key, address, length, reserved.
fn load_ext(key: u32, addr: u64, len: u16) -> Vec<u8> {
    let mut v = key.to_be_bytes().to_vec();
    v.extend(addr.to_be_bytes());
    v.extend(len.to_be_bytes());
    v.extend([0, 0]);
    v
}

/// The header bytes after the prefix of a STORE or an atomic: key, address.
fn mem_ext(key: u32, addr: u64) -> Vec<u8> {
    let mut v = key.to_be_bytes().to_vec();
    v.extend(addr.to_be_bytes());
    v
}

/// The encoding of a transaction.
fn emit(t: &TxnRepr<'_>) -> Vec<u8> {
    let mut b = vec![0; t.buffer_len()];
    let n = t.emit(&mut b).expect("emit");
    b.truncate(n);
    b
}

/// A DATA payload written by hand: network header (path 0, count = `txns.len()`) and the
/// transactions as given.
fn payload(dst: u16, src: u16, txns: &[Vec<u8>]) -> Vec<u8> {
    let body = txns.concat();
    let mut p = dst.to_be_bytes().to_vec();
    p.extend(src.to_be_bytes());
    p.push(0);
    p.push(u8::try_from(txns.len()).expect("count"));
    p.extend(u16::try_from(body.len()).expect("length").to_be_bytes());
    p.extend(body);
    p
}

fn target(key: u32, addr: u64) -> MemTarget {
    MemTarget {
        space: Space::Global,
        key,
        addr,
    }
}

/// The responses among `rx` that carry `tag`.
fn with_tag(rx: &[Txn], tag: u16) -> Vec<&Txn> {
    rx.iter().filter(|t| t.tag == tag).collect()
}

/// The one response carrying `tag`.
fn only(rx: &[Txn], tag: u16) -> &Txn {
    let v = with_tag(rx, tag);
    assert_eq!(v.len(), 1, "tag {tag:#x}: expected one response, got {v:?}");
    v[0]
}

/// Checks the prefix of a response sent by the endpoint to the peer: opcode, status, tag,
/// hlen, dlen.
fn check_prefix(t: &Txn, opcode: u8, status: Status, hlen: u8, dlen: u16) {
    assert_eq!(t.opcode, opcode, "{t:?}");
    assert_eq!(t.status(), status, "{t:?}");
    assert_eq!(t.hlen, hlen, "{t:?}");
    assert_eq!(t.dlen, dlen, "{t:?}");
    assert_eq!(usize::from(t.dlen), t.data.len());
    //= docs/spec/wire.md#61-common-prefix
    //= type=test
    //# WIRE-6.1-2 The tag is chosen by the requester; a responder MUST copy the tag of a request,
    //# and the request's source GPU into the destination of the response, unchanged.
    //= docs/spec/endpoint.md#12-reset-and-identity
    //= type=test
    //# EP-12-3 An endpoint MUST put its configured GPU id in the source of every DATA frame it
    //# sends.
    assert_eq!((t.dst, t.src), (PEER, EP), "{t:?}");
}

// ----- the protected memory ----------------------------------------------------------------------

const BASE: u64 = 1 << 38;
/// Key of A, B, BIG.
const K1: u32 = 0x0101_0101;
/// Key of the read-only region.
const KR: u32 = 0x0202_0202;
/// Key of the write-only region.
const KW: u32 = 0x0303_0303;
/// Key of the atomic-only region.
const KX: u32 = 0x0404_0404;
/// Key of the region with poisoned bytes.
const KP: u32 = 0x0505_0505;
/// Region A: [A, AB), key K1, every permission.
const A: u64 = BASE;
/// End of A and start of B: B is [AB, B_END), same key, every permission.
const AB: u64 = BASE + 0x1004;
/// End of B; nothing follows it.
const B_END: u64 = BASE + 0x2004;
/// An address in no region.
const GAP: u64 = BASE + 0x8000;
/// Read-only region of 4 KiB.
const R: u64 = BASE + 0x1_0000;
/// Write-only region of 4 KiB.
const W: u64 = BASE + 0x2_0000;
/// Atomic-only region of 4 KiB.
const X: u64 = BASE + 0x3_0000;
/// Region of 64 KiB with poisoned bytes, every permission.
const P: u64 = BASE + 0x4_0000;
/// One poisoned byte, in the second 8 KiB segment of a read from P.
const P_BYTE: u64 = P + 0x2710;
/// Eight poisoned bytes, 8-aligned.
const P_WORD: u64 = P + 0xC000;
/// A large region, key K1, every permission.
const BIG: u64 = BASE + 0x100_0000;
const BIG_LEN: u64 = 2 << 20;
/// The bytes [BASE, BASE + SNAP) hold every small region and the gaps between them.
const SNAP: usize = 0x5_0000;

/// Registers the regions above and fills them with a pattern, then poisons P_BYTE and P_WORD.
fn protect(m: &mut Memory) {
    let regions = [
        (A, AB - A, K1, Perms::ALL),
        (AB, B_END - AB, K1, Perms::ALL),
        (R, 0x1000, KR, Perms::READ),
        (W, 0x1000, KW, Perms::WRITE),
        (X, 0x1000, KX, Perms::ATOMIC),
        (P, 0x1_0000, KP, Perms::ALL),
        (BIG, BIG_LEN, K1, Perms::ALL),
    ];
    for (base, len, key, perms) in regions {
        m.register(Region::new(Space::Global, base, len, key, perms))
            .expect("region");
        m.write(Space::Global, base, &pattern(base, len as usize))
            .expect("fill");
    }
    m.poison(Space::Global, P_BYTE, 1).expect("poison");
    m.poison(Space::Global, P_WORD, 8).expect("poison");
}

/// What a refusal case does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Load(u16),
    Store(u16),
    Fadd(Width),
    Swap(Width),
    Cas(Width),
    /// An RDMA write of this total length; the raw peer sends only its first segment.
    Write(u32),
    /// An RDMA read of this length.
    Read(u32),
}

impl Op {
    fn request_opcode(self) -> u8 {
        match self {
            Op::Load(_) => 0x01,
            Op::Store(_) => 0x02,
            Op::Fadd(_) => 0x03,
            Op::Swap(_) => 0x04,
            Op::Cas(_) => 0x05,
            Op::Write(_) => 0x10,
            Op::Read(_) => 0x11,
        }
    }

    fn response_hlen(self) -> u8 {
        match self {
            Op::Write(_) | Op::Read(_) => 4,
            _ => 2,
        }
    }

    fn vc(self) -> u8 {
        match self {
            Op::Write(_) | Op::Read(_) => 1,
            _ => 0,
        }
    }

    /// The operand size of an atomic (W8 for the others, unused).
    fn width(self) -> Width {
        match self {
            Op::Fadd(w) | Op::Swap(w) | Op::Cas(w) => w,
            _ => Width::W8,
        }
    }

    fn atomic(self, current: u64) -> Option<(Width, AtomicOp)> {
        match self {
            Op::Fadd(w) => Some((w, AtomicOp::FetchAdd { addend: 0x0101 })),
            Op::Swap(w) => Some((w, AtomicOp::Swap { value: 0x5A5A_5A5A })),
            // The compare value is what memory holds: performed by mistake, it would change it.
            Op::Cas(w) => Some((
                w,
                AtomicOp::CompareSwap {
                    compare: current,
                    value: !current & 0xFFFF_FFFF,
                },
            )),
            _ => None,
        }
    }
}

/// One access the target must refuse.
#[derive(Debug, Clone, Copy)]
struct Case {
    what: &'static str,
    op: Op,
    addr: u64,
    key: u32,
    expect: Status,
}

/// Every refusal of EP-2-3 .. EP-2-6 for every request that touches memory.
fn cases() -> Vec<Case> {
    use Status::{AccessViolation as Av, Misaligned, OutOfRange as Oor, Poisoned};
    let mut v = Vec::new();
    let mut add = |what, op, addr, key, expect| {
        v.push(Case {
            what,
            op,
            addr,
            key,
            expect,
        })
    };
    for op in [Op::Load(16), Op::Store(16)] {
        add("outside any region", op, GAP, K1, Oor);
        add("past the end of a region", op, B_END - 8, K1, Oor);
        add("across two adjacent regions", op, AB - 8, K1, Oor);
        add("wrong key", op, A + 0x100, K1 ^ 0x10, Av);
        add("atomic-only region", op, X + 0x100, KX, Av);
    }
    add("write-only region", Op::Load(16), W + 0x100, KW, Av);
    add("read-only region", Op::Store(16), R + 0x100, KR, Av);
    add("poisoned", Op::Load(16), P_WORD - 4, KP, Poisoned);
    add("poisoned, wrong key", Op::Load(16), P_WORD - 4, KP ^ 1, Av);
    add(
        "poisoned, past the end",
        Op::Load(16),
        P + 0x1_0000 - 8,
        KP,
        Oor,
    );
    for op in [Op::Fadd(Width::W8), Op::Swap(Width::W8), Op::Cas(Width::W8)] {
        add("outside any region", op, GAP, K1, Oor);
        add("past the end of a region", op, B_END - 4, K1, Oor);
        add("across two adjacent regions", op, AB - 4, K1, Oor);
        add("wrong key", op, A + 0x100, K1 ^ 0x10, Av);
        add("read-only region", op, R + 0x100, KR, Av);
        add("write-only region", op, W + 0x100, KW, Av);
        add("misaligned", op, A + 0x104, K1, Misaligned);
        add("poisoned", op, P_WORD, KP, Poisoned);
        add("misaligned and poisoned", op, P_WORD + 4, KP, Misaligned);
    }
    for op in [Op::Fadd(Width::W4), Op::Swap(Width::W4), Op::Cas(Width::W4)] {
        add("outside any region", op, GAP, K1, Oor);
        add("wrong key", op, A + 0x100, K1 ^ 0x10, Av);
        add("read-only region", op, R + 0x100, KR, Av);
        add("misaligned", op, A + 0x102, K1, Misaligned);
        add("poisoned", op, P_WORD + 4, KP, Poisoned);
    }
    for op in [Op::Write(512), Op::Read(512)] {
        add("outside any region", op, GAP, K1, Oor);
        add("past the end of a region", op, B_END - 256, K1, Oor);
        add("across two adjacent regions", op, AB - 256, K1, Oor);
        add("wrong key", op, A, K1 ^ 0x10, Av);
        add("atomic-only region", op, X, KX, Av);
    }
    add("read-only region", Op::Write(512), R, KR, Av);
    add(
        "first segment inside, total past the end",
        Op::Write(0x4000),
        BIG + BIG_LEN - 0x3000,
        K1,
        Oor,
    );
    add("write-only region", Op::Read(512), W, KW, Av);
    add("poisoned", Op::Read(512), P_WORD - 256, KP, Poisoned);
    add(
        "poisoned, wrong key",
        Op::Read(512),
        P_WORD - 256,
        KP ^ 1,
        Av,
    );
    v
}

/// The value an atomic of `width` finds at `addr` (ignoring regions and poison).
fn current(m: &Memory, addr: u64, width: Width) -> u64 {
    let mut b = [0u8; 8];
    m.read(Space::Global, addr, &mut b[..width.bytes()])
        .expect("inside the space");
    u64::from_le_bytes(b)
}

/// The bytes a refused store or write would have written.
fn garbage() -> Vec<u8> {
    vec![0xEE; 8192]
}

/// The memory checks of TXN-3-4 after refused accesses: the snapshot `before` is unchanged and
/// the poison is still there.
fn assert_untouched(m: &Memory, before: &[u8], big_tail: &[u8]) {
    let mut now = vec![0; SNAP];
    m.read(Space::Global, BASE, &mut now).expect("read");
    let mut tail = vec![0; big_tail.len()];
    m.read(Space::Global, BIG + BIG_LEN - 0x3000, &mut tail)
        .expect("read");
    //= docs/spec/transaction.md#3-statuses
    //= type=test
    //# TXN-3-4 An operation refused by the target (any status but OK and BUSY) MUST NOT have
    //# changed the target's memory (endpoint.md EP-2-13), and an RDMA write refused MUST NOT have
    //# written any of its bytes.
    //= docs/spec/endpoint.md#2-memory-model
    //= type=test
    //# EP-2-7 The checks MUST be made in the order EP-2-3, EP-2-4, EP-2-5, EP-2-6; the first that
    //# fails gives the status. (A request that needs a capability the endpoint lacks is refused
    //# UNSUPPORTED before any of them, §11.)
    if let Some(i) = now.iter().zip(before).position(|(a, b)| a != b) {
        panic!("a refused access wrote {:#x}", BASE + i as u64);
    }
    //= docs/spec/endpoint.md#6-rdma-engine
    //= type=test
    //# EP-6-4 A target MUST check the whole range of a write (EP-2-3, EP-2-4: address, total
    //# length, key, write permission) when it receives the first segment of the write (whichever
    //# arrives first), and on refusal write none of it and answer one RDMA_COMPLETION with the
    //# status.
    assert!(
        tail == big_tail,
        "a write refused for its total length wrote its first segment"
    );
    assert!(m.is_poisoned(Space::Global, P_BYTE, 1));
    assert!(m.is_poisoned(Space::Global, P_WORD, 8));
}

fn snapshot(m: &Memory) -> (Vec<u8>, Vec<u8>) {
    let mut s = vec![0; SNAP];
    m.read(Space::Global, BASE, &mut s).expect("read");
    let mut t = vec![0; 0x3000];
    m.read(Space::Global, BIG + BIG_LEN - 0x3000, &mut t)
        .expect("read");
    (s, t)
}

// ----- 1. protection -----------------------------------------------------------------------------

/// Every refusal case sent by the raw peer: exactly one response per request, with the request's
/// opcode | 0x80, the status of the first failing check, the request's tag, no data, addressed to
/// the requester; memory unchanged.
#[test]
fn refused_accesses_on_the_wire() {
    let mut p = Peer::new(ep_config());
    let (before, tail) = snapshot(p.ep.memory());
    let cases = cases();
    let junk = garbage();
    for (i, c) in cases.iter().enumerate() {
        let tag = 0x200 + i as u16;
        let t = target(c.key, c.addr);
        let txn = match c.op {
            Op::Load(len) => TxnRepr::Load {
                tag,
                target: t,
                len,
            },
            Op::Store(len) => TxnRepr::Store {
                tag,
                target: t,
                data: &junk[..usize::from(len)],
            },
            Op::Write(total) => TxnRepr::RdmaWrite {
                tag,
                target: t,
                offset: 0,
                total,
                data: &junk[..(total as usize).min(256)],
            },
            Op::Read(total) => TxnRepr::RdmaRead {
                tag,
                target: t,
                total,
            },
            atomic => {
                let cur = current(p.ep.memory(), c.addr, atomic.width());
                let (width, op) = atomic.atomic(cur).expect("an atomic");
                TxnRepr::Atomic {
                    tag,
                    target: t,
                    width,
                    op,
                }
            }
        };
        p.send(c.op.vc(), &[txn]);
    }
    p.run_for(50_000);
    let rx = p.take();
    assert_eq!(rx.len(), cases.len(), "one response per request: {rx:?}");
    for (i, c) in cases.iter().enumerate() {
        let tag = 0x200 + i as u16;
        let r = only(&rx, tag);
        //= docs/spec/endpoint.md#2-memory-model
        //= type=test
        //# EP-2-3 A remote access to the bytes [address, address + length) of a space MUST be
        //# refused with OUT_OF_RANGE unless all of them lie inside one registered region of that
        //# space.
        //# EP-2-4 An access inside a region MUST be refused with ACCESS_VIOLATION if its key
        //# differs from the region's key, or if the region does not grant the access: read for
        //# LOAD and RDMA_READ, write for STORE and RDMA_WRITE, atomic for the atomics.
        //# EP-2-5 An atomic that passes EP-2-3 and EP-2-4 but whose address is not a multiple of
        //# its operand size MUST be refused with MISALIGNED (WIRE-6.5-2).
        //# EP-2-6 A byte may be poisoned, which models an uncorrectable memory error. A LOAD,
        //# RDMA_READ or atomic that would read a poisoned byte MUST be refused with POISONED.
        //= docs/spec/wire.md#69-responses
        //= type=test
        //# WIRE-6.9-1 A response whose status is not OK MUST carry no data (`dlen` 0).
        assert_eq!(r.status(), c.expect, "{} {:?}: {r:?}", c.what, c.op);
        check_prefix(
            r,
            c.op.request_opcode() | 0x80,
            c.expect,
            c.op.response_hlen(),
            0,
        );
        if let Op::Write(total) = c.op {
            assert_eq!(r.word(0), total, "RDMA_COMPLETION total: {r:?}");
        }
    }
    assert_untouched(p.ep.memory(), &before, &tail);
    assert_eq!(p.ep.counters().requests_refused, cases.len() as u64);
}

/// An RDMA read whose second segment would read a poisoned byte: the first segment comes with
/// its data, the second is answered POISONED with no data, and nothing follows.
#[test]
fn rdma_read_ends_at_the_poisoned_segment() {
    let mut p = Peer::new(ep_config());
    let seg = p.ep.config().segment;
    assert!(P_BYTE - P >= u64::from(seg) && P_BYTE - P < 2 * u64::from(seg));
    let total = 4 * seg;
    p.send(
        1,
        &[TxnRepr::RdmaRead {
            tag: 0x77,
            target: target(KP, P),
            total,
        }],
    );
    p.run_for(50_000);
    let rx = p.take();
    let segs = with_tag(&rx, 0x77);
    //= docs/spec/endpoint.md#6-rdma-engine
    //= type=test
    //# EP-6-8 A target MUST check the whole range of an RDMA_READ (EP-2-3, EP-2-4) when it
    //# receives it; on refusal it answers one RDMA_READ_RESP with the status and no data.
    //# Otherwise it sends the data in segments of at most `segment` bytes at increasing offsets,
    //# each offset a multiple of 256 and each length a multiple of 256 unless the segment ends
    //# the read.
    //= docs/spec/endpoint.md#6-rdma-engine
    //= type=test
    //# EP-6-17 A target MUST answer an RDMA_READ_RESP segment that would read a poisoned byte
    //# with the status POISONED and no data instead, and send no further segment of that read.
    assert_eq!(segs.len(), 2, "{segs:?}");
    check_prefix(segs[0], 0x91, Status::Ok, 4, seg as u16);
    assert_eq!(segs[0].word(0), 0, "offset");
    assert_eq!(segs[0].word(4), total, "total");
    assert_eq!(segs[0].data, p.read(P, seg as usize));
    //= docs/spec/endpoint.md#2-memory-model
    //= type=test
    //# EP-2-6 [...] A LOAD, RDMA_READ or atomic that would read a poisoned byte MUST be refused
    //# with POISONED.
    check_prefix(segs[1], 0x91, Status::Poisoned, 4, 0);
    assert_eq!(p.ep.counters().requests_refused, 1);
}

/// The same refusals between two endpoints through the normal API: each operation completes with
/// the target's status and no data, and the target's memory is unchanged.
#[test]
fn refused_accesses_complete_with_the_target_status() {
    let mut b = pair_with(
        config(0, Policy::Spray),
        config(1, Policy::Spray),
        Faults::default(),
        11,
    );
    protect(b.gpu_mut(1).memory_mut());
    let src = 0x10_0000;
    b.gpu_mut(0)
        .memory_mut()
        .write(Space::Global, src, &garbage())
        .expect("local data");
    let (before, tail) = snapshot(b.gpu(1).memory());
    let cases = cases();
    let mut ids: BTreeMap<OpId, Case> = BTreeMap::new();
    for c in &cases {
        let id = issue_case(&mut b, c, src);
        assert!(ids.insert(id, *c).is_none());
    }
    assert!(b.run_until_idle(5_000_000), "operations still outstanding");
    let done = b.take_completions(0);
    assert_eq!(done.len(), cases.len(), "{done:?}");
    common::assert_unique(&done);
    for d in &done {
        let c = ids[&d.id];
        //= docs/spec/transaction.md#3-statuses
        //= type=test
        //# TXN-3-2 A completion with a target status MUST carry the status the target sent
        assert_eq!(
            d.status,
            CompletionStatus::Remote(c.expect),
            "{} {:?}",
            c.what,
            c.op
        );
        //= docs/spec/transaction.md#3-statuses
        //= type=test
        //# TXN-3-3 A completion that is not OK MUST carry no data.
        assert_eq!(d.data, CompletionData::None, "{} {:?}", c.what, c.op);
        assert_eq!(d.retries, 0);
    }
    assert_untouched(b.gpu(1).memory(), &before, &tail);
    assert_eq!(b.gpu(1).counters().malformed_txns, 0);
}

/// Issues case `c` from GPU 0 to GPU 1 of `b`; RDMA writes take their bytes from `src`.
fn issue_case(b: &mut BackToBack, c: &Case, src: u64) -> OpId {
    let remote = Remote {
        gpu: gpu(1),
        space: Space::Global,
        key: c.key,
        addr: c.addr,
    };
    let now = b.now();
    let rdma = |dir, len: u32| RdmaDesc {
        dir,
        local_space: Space::Global,
        local_addr: src,
        remote,
        len: u64::from(len),
    };
    let op = match c.op {
        Op::Load(len) => LsOp::Load { len },
        Op::Store(len) => LsOp::Store {
            data: ethlink_endpoint::Bytes::new(&garbage()[..usize::from(len)]).expect("bytes"),
        },
        Op::Write(len) => {
            let id = b.gpu_mut(0).post(now, rdma(RdmaDir::Write, len));
            return OpId::Rdma(id.expect("post"));
        }
        Op::Read(len) => {
            let id = b.gpu_mut(0).post(now, rdma(RdmaDir::Read, len));
            return OpId::Rdma(id.expect("post"));
        }
        atomic => {
            let cur = current(b.gpu(1).memory(), c.addr, atomic.width());
            let (width, op) = atomic.atomic(cur).expect("an atomic");
            LsOp::Atomic { width, op }
        }
    };
    let req = LsRequest {
        op,
        remote,
        ordering: Ordering::Unordered,
    };
    OpId::Ls(b.gpu_mut(0).issue(now, req).expect("issue"))
}

/// EP-2-7 puts the alignment check after the range and key checks: an atomic that is both
/// misaligned and outside any region, or misaligned with a wrong key, or misaligned in a region
/// without the atomic permission, must get OUT_OF_RANGE or ACCESS_VIOLATION, not MISALIGNED.
#[test]
fn misalignment_is_checked_after_range_and_key() {
    let mut p = Peer::new(ep_config());
    let (before, tail) = snapshot(p.ep.memory());
    let cases = [
        (GAP + 4, K1, Status::OutOfRange),
        (A + 0x104, K1 ^ 0x10, Status::AccessViolation),
        (R + 0x104, KR, Status::AccessViolation),
        (A + 0x104, K1, Status::Misaligned),
    ];
    for (i, &(addr, key, _)) in cases.iter().enumerate() {
        p.send(
            0,
            &[TxnRepr::Atomic {
                tag: 0x40 + i as u16,
                target: target(key, addr),
                width: Width::W8,
                op: AtomicOp::FetchAdd { addend: 1 },
            }],
        );
    }
    p.run_for(10_000);
    let rx = p.take();
    for (i, &(_, _, expect)) in cases.iter().enumerate() {
        let r = only(&rx, 0x40 + i as u16);
        //= docs/spec/endpoint.md#2-memory-model
        //= type=test
        //# EP-2-7 The checks MUST be made in the order EP-2-3, EP-2-4, EP-2-5, EP-2-6; the first
        //# that fails gives the status.
        check_prefix(r, 0x83, expect, 2, 0);
        //= docs/spec/endpoint.md#8-target
        //= type=test
        //# EP-8-6 A target MUST send every response to a request on VC 2, except the
        //# RDMA_READ_RESP that answers an RDMA_READ, which goes on VC 3
        assert_eq!(r.vc, 2);
    }
    assert_untouched(p.ep.memory(), &before, &tail);
}

/// A write refused at its first segment is answered with one RDMA_COMPLETION, however many of
/// its segments arrive.
#[test]
fn refused_rdma_write_is_answered_once() {
    let mut p = Peer::new(ep_config());
    let (before, tail) = snapshot(p.ep.memory());
    let junk = garbage();
    p.send(
        1,
        &[
            seg(0x5, GAP, 0, 1024, &junk[..256]),
            seg(0x5, GAP, 256, 1024, &junk[..256]),
        ],
    );
    p.send(1, &[seg(0x5, GAP, 512, 1024, &junk[..512])]);
    p.run_for(10_000);
    let rx = p.take();
    //= docs/spec/endpoint.md#6-rdma-engine
    //= type=test
    //# EP-6-4 A target MUST check the whole range of a write (EP-2-3, EP-2-4: address, total
    //# length, key, write permission) when it receives the first segment of the write (whichever
    //# arrives first), and on refusal write none of it and answer one RDMA_COMPLETION with the
    //# status.
    //= docs/spec/transaction.md#2-operations
    //= type=test
    //# TXN-2-8 A target MUST answer every request it receives with exactly one response (an RDMA
    //# write: one completion per write;
    check_prefix(only(&rx, 0x5), 0x90, Status::OutOfRange, 4, 0);
    assert_untouched(p.ep.memory(), &before, &tail);
}

// ----- 2. unknown, malformed and broken transactions ---------------------------------------------

/// Unknown request opcodes are answered UNSUPPORTED and bad fields MALFORMED, with the matching
/// response opcode, the request's tag and no data; nothing of them is performed and every next
/// transaction of the frame is.
#[test]
fn unknown_and_malformed_requests_are_answered_and_the_frame_goes_on() {
    let mut p = Peer::new(ep_config());
    let (before, tail) = snapshot(p.ep.memory());
    // The good stores go to BIG, outside the bytes compared.
    const OK_AT: u64 = BIG + 0x9_0000;
    let good_store = |tag: u16, addr: u64| {
        emit(&TxnRepr::Store {
            tag,
            target: target(K1, addr),
            data: &[0xAB; 8],
        })
    };
    // (request bytes, tag, expected response opcode, status, hlen)
    let bad: Vec<(Vec<u8>, u16, u8, Status, u8)> = vec![
        // Unknown opcodes, short and long, with data.
        (
            raw(0x20, 0, 0x10, 2, &[], &[]),
            0x10,
            0xA0,
            Status::Unsupported,
            2,
        ),
        (
            raw(0x7F, 1, 0x11, 4, &[1, 2, 3, 4, 5, 6, 7, 8], &[9, 9, 9]),
            0x11,
            0xFF,
            Status::Unsupported,
            2,
        ),
        // LOAD of 0 and of 300 bytes.
        (
            raw(0x01, 0, 0x12, 6, &load_ext(K1, A, 0), &[]),
            0x12,
            0x81,
            Status::Malformed,
            2,
        ),
        (
            raw(0x01, 0, 0x13, 6, &load_ext(K1, A, 300), &[]),
            0x13,
            0x81,
            Status::Malformed,
            2,
        ),
        // LOAD with hlen 7.
        (
            raw(
                0x01,
                0,
                0x14,
                7,
                &[load_ext(K1, A, 4), vec![0; 4]].concat(),
                &[],
            ),
            0x14,
            0x81,
            Status::Malformed,
            2,
        ),
        // STORE with hlen 6: not performed.
        (
            raw(
                0x02,
                0,
                0x15,
                6,
                &[mem_ext(K1, A + 0x40), vec![0; 4]].concat(),
                &[0xCD; 8],
            ),
            0x15,
            0x82,
            Status::Malformed,
            2,
        ),
        // Atomics with dlen 5 and a CAS with dlen 12.
        (
            raw(0x03, 0, 0x16, 5, &mem_ext(K1, A + 0x80), &[1; 5]),
            0x16,
            0x83,
            Status::Malformed,
            2,
        ),
        (
            raw(0x04, 0, 0x17, 5, &mem_ext(K1, A + 0x80), &[1; 5]),
            0x17,
            0x84,
            Status::Malformed,
            2,
        ),
        (
            raw(0x05, 0, 0x18, 5, &mem_ext(K1, A + 0x80), &[1; 12]),
            0x18,
            0x85,
            Status::Malformed,
            2,
        ),
        // FENCE carrying data.
        (
            raw(0x06, 0, 0x19, 2, &[], &[1, 2, 3, 4]),
            0x19,
            0x86,
            Status::Malformed,
            2,
        ),
        // RDMA_WRITE segment past its total length.
        (
            raw(
                0x10,
                0,
                0x1A,
                7,
                &[
                    mem_ext(K1, A),
                    256u32.to_be_bytes().to_vec(),
                    300u32.to_be_bytes().to_vec(),
                ]
                .concat(),
                &[0xCD; 256],
            ),
            0x1A,
            0x90,
            Status::Malformed,
            4,
        ),
        // RDMA_READ of 0 bytes.
        (
            raw(
                0x11,
                0,
                0x1B,
                6,
                &[mem_ext(K1, A), 0u32.to_be_bytes().to_vec()].concat(),
                &[],
            ),
            0x1B,
            0x91,
            Status::Malformed,
            4,
        ),
    ];
    // Each bad request followed by a good store in the same frame.
    for (i, (bytes, ..)) in bad.iter().enumerate() {
        let tag = 0x100 + i as u16;
        let vc = if bytes[0] >= 0x10 { 1 } else { 0 };
        p.send_raw(
            vc,
            &payload(
                EP,
                PEER,
                &[bytes.clone(), good_store(tag, OK_AT + 0x10 * i as u64)],
            ),
        );
    }
    // And all of them in one frame, then a load.
    let mut all: Vec<Vec<u8>> = bad
        .iter()
        .map(|(b, tag, ..)| {
            let mut b = b.clone();
            b[2..4].copy_from_slice(&(tag + 0x1000).to_be_bytes());
            b
        })
        .collect();
    all.push(emit(&TxnRepr::Load {
        tag: 0x300,
        target: target(K1, A),
        len: 32,
    }));
    p.send_raw(0, &payload(EP, PEER, &all));
    p.run_for(20_000);
    let rx = p.take();
    assert_eq!(rx.len(), 3 * bad.len() + 1, "{rx:?}");
    for (i, (_, tag, opcode, status, hlen)) in bad.iter().enumerate() {
        for tag in [*tag, tag + 0x1000] {
            let r = only(&rx, tag);
            //= docs/spec/wire.md#61-common-prefix
            //= type=test
            //# WIRE-6.1-5 (unknown request) A request with an opcode this document does not
            //# define, whose prefix is structurally valid, MUST NOT be executed; the receiver MUST
            //# answer it with a response of opcode `opcode | 0x80`, status UNSUPPORTED, the
            //# request's tag, `hlen` 2 and `dlen` 0, and go on with the next transaction.
            //# WIRE-6.1-6 (malformed request) A request with a defined opcode whose `hlen` differs
            //# from the table, or whose fields violate the ranges of its section, MUST NOT be
            //# executed; the receiver MUST answer it with the matching response opcode, status
            //# MALFORMED, the request's tag, and no data, and go on with the next transaction.
            check_prefix(r, *opcode, *status, *hlen, 0);
            //= docs/spec/endpoint.md#8-target
            //= type=test
            //# EP-8-6 A target MUST send every response to a request on VC 2, except the
            //# RDMA_READ_RESP that answers an RDMA_READ, which goes on VC 3, whatever VC the
            //# request came on and whatever its status.
            assert_eq!(r.vc, if *opcode == 0x91 { 3 } else { 2 }, "{r:?}");
        }
        //= docs/spec/endpoint.md#8-target
        //= type=test
        //# EP-8-3 A target MUST answer an unknown request UNSUPPORTED (WIRE-6.1-5) and a request
        //# with bad fields MALFORMED (WIRE-6.1-6), and go on with the next transaction.
        let after = only(&rx, 0x100 + i as u16);
        check_prefix(after, 0x82, Status::Ok, 2, 0);
        assert_eq!(p.read(OK_AT + 0x10 * i as u64, 8), [0xAB; 8]);
    }
    let load = only(&rx, 0x300);
    check_prefix(load, 0x81, Status::Ok, 2, 32);
    assert_eq!(load.data, p.read(A, 32));
    // Nothing of the bad requests was performed.
    assert_untouched(p.ep.memory(), &before, &tail);
    assert_eq!(p.ep.counters().malformed_txns, 0);
    //= docs/spec/endpoint.md#21-the-region-table
    //= type=test
    //# EP-2-10 The region table MUST be changed only through the local interface, by `register`
    //# and `deregister`; no request received from the network changes it.
    let regions: Vec<Region> = p.ep.memory().regions(Space::Global).copied().collect();
    let mut fresh = Memory::new(ep_config().memory).expect("memory");
    protect(&mut fresh);
    assert_eq!(
        regions,
        fresh.regions(Space::Global).copied().collect::<Vec<_>>()
    );
}

/// A transaction whose structure cannot be read ends the frame: the transactions before it are
/// performed and answered, it and the later ones are not, and it is counted.
#[test]
fn structural_error_discards_the_rest_of_the_frame() {
    let mut p = Peer::new(ep_config());
    let store = |tag: u16, addr: u64, byte: u8| {
        emit(&TxnRepr::Store {
            tag,
            target: target(K1, addr),
            data: &[byte; 16],
        })
    };
    let before = p.read(A, 0x100);
    // hlen 1.
    let mut hlen1 = raw(0x02, 0, 0x3, 5, &mem_ext(K1, A + 0x40), &[7; 4]);
    hlen1[4] = 1;
    // dlen running past the end of the payload.
    let mut long = raw(0x02, 0, 0x13, 5, &mem_ext(K1, A + 0xC0), &[7; 4]);
    long[6..8].copy_from_slice(&200u16.to_be_bytes());
    p.send_raw(
        0,
        &payload(
            EP,
            PEER,
            &[
                store(0x1, A, 1),
                store(0x2, A + 0x20, 2),
                hlen1,
                store(0x4, A + 0x60, 4),
            ],
        ),
    );
    p.send_raw(
        0,
        &payload(
            EP,
            PEER,
            &[store(0x11, A + 0x80, 5), long, store(0x14, A + 0xE0, 6)],
        ),
    );
    p.run_for(20_000);
    let rx = p.take();
    let mut tags: Vec<u16> = rx.iter().map(|t| t.tag).collect();
    tags.sort_unstable();
    //= docs/spec/wire.md#61-common-prefix
    //= type=test
    //# WIRE-6.1-3 (structural error) If fewer than 8 bytes of payload remain where a transaction
    //# should start (none at all included: the count announces more transactions than the payload
    //# holds, even when the payload ends exactly where a transaction ends), if hlen is less than 2,
    //# or if 4*hlen + roundup4(dlen) runs past the end of the payload, the receiver cannot find the
    //# next transaction. It MUST discard this transaction and every later transaction of the frame
    //# and count one malformed transaction (malformed_txns).
    assert_eq!(tags, [0x1, 0x2, 0x11], "{rx:?}");
    for t in &rx {
        check_prefix(t, 0x82, Status::Ok, 2, 0);
    }
    let now = p.read(A, 0x100);
    assert_eq!(now[..0x10], [1; 16]);
    assert_eq!(now[0x20..0x30], [2; 16]);
    assert_eq!(now[0x80..0x90], [5; 16]);
    for range in [0x40..0x80, 0xC0..0x100] {
        assert_eq!(
            now[range.clone()],
            before[range],
            "a discarded transaction wrote"
        );
    }
    assert_eq!(p.ep.counters().malformed_txns, 2);
}

// ----- 3. frames for another GPU and bad network headers -----------------------------------------

/// A DATA frame addressed to another GPU is discarded and counted as misdelivered; one with a
/// bad network header is discarded and counted as malformed; neither is answered or performed.
#[test]
fn misdelivered_and_malformed_frames_are_discarded() {
    let mut p = Peer::new(ep_config());
    let before = p.read(A, 0x100);
    let store = emit(&TxnRepr::Store {
        tag: 9,
        target: target(K1, A),
        data: &[0x99; 16],
    });
    p.send_raw(0, &payload(5, PEER, std::slice::from_ref(&store)));
    p.run_for(5_000);
    //= docs/spec/endpoint.md#8-target
    //= type=test
    //# EP-8-1 A target MUST discard, and count, a DATA frame whose destination GPU is not its
    //# own.
    assert_eq!(p.ep.counters().misdelivered, 1);
    assert!(p.take().is_empty());
    assert_eq!(p.read(A, 0x100), before);

    // Source 0xFFFF, destination 0xFFFF, no transactions.
    p.send_raw(0, &payload(EP, 0xFFFF, std::slice::from_ref(&store)));
    p.send_raw(0, &payload(0xFFFF, PEER, std::slice::from_ref(&store)));
    let mut zero = payload(EP, PEER, std::slice::from_ref(&store));
    zero[5] = 0;
    p.send_raw(0, &zero);
    p.run_for(5_000);
    //= docs/spec/wire.md#5-data-frames-the-network-header
    //= type=test
    //# WIRE-5-3 A receiver MUST discard a DATA frame whose network header is incomplete, whose
    //# payload length runs past the end of the frame (before the FCS), whose destination or source
    //# GPU id is 0xFFFF, or whose transaction count is zero, and count it as a malformed frame (an
    //# endpoint in malformed_frames, a switch in discard_malformed).
    assert_eq!(p.ep.counters().malformed_frames, 3);
    assert_eq!(p.ep.counters().misdelivered, 1);
    assert!(p.take().is_empty());
    assert_eq!(p.read(A, 0x100), before);
    //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
    //= type=test
    //# EP-13-12 (§10) `bytes_received` MUST count the payload of every DATA frame the port's link
    //# delivers, whatever then becomes of it (served, held, discarded as malformed or
    //# misdelivered). `requests_served` MUST count each request the target answers after reading
    //# it whole: performed, or refused by EP-2-7's checks, EP-6-3's alignment, a capability (§11),
    //# room or MISALIGNED; it does not count a request its decoding
    assert_eq!(p.ep.counters().requests_served, 0);

    // The endpoint goes on with the next frame.
    p.send_raw(0, &payload(EP, PEER, &[store]));
    p.run_for(5_000);
    let rx = p.take();
    check_prefix(only(&rx, 9), 0x82, Status::Ok, 2, 0);
    assert_eq!(p.read(A, 16), [0x99; 16]);
}

// ----- 4..6. RDMA at the target ------------------------------------------------------------------

fn seg<'a>(tag: u16, addr: u64, offset: u32, total: u32, data: &'a [u8]) -> TxnRepr<'a> {
    TxnRepr::RdmaWrite {
        tag,
        target: target(K1, addr),
        offset,
        total,
        data,
    }
}

/// RDMA_WRITE segments that break the 256-byte alignment are answered RDMA_COMPLETION MALFORMED
/// and write nothing; a short segment that ends the write is fine.
#[test]
fn misaligned_rdma_segments_are_malformed() {
    let mut p = Peer::new(ep_config());
    let base = BIG + 0x1_0000;
    let before = p.read(base, 0x4000);
    let junk = garbage();
    // Offset not a multiple of 256.
    p.send(1, &[seg(0x1, base, 128, 1024, &junk[..256])]);
    // A segment that does not end the write and whose length is not a multiple of 256.
    p.send(1, &[seg(0x2, base + 0x1000, 0, 1024, &junk[..300])]);
    // Both wrong, later in the write.
    p.send(1, &[seg(0x3, base + 0x2000, 300, 1024, &junk[..100])]);
    p.run_for(10_000);
    let rx = p.take();
    assert_eq!(rx.len(), 3, "{rx:?}");
    for tag in 1..=3 {
        let r = only(&rx, tag);
        //= docs/spec/endpoint.md#6-rdma-engine
        //= type=test
        //# EP-6-3 A target MUST reject, with RDMA_COMPLETION MALFORMED, a segment whose offset is
        //# not a multiple of 256, or whose length is not a multiple of 256 and does not end the
        //# write.
        check_prefix(r, 0x90, Status::Malformed, 4, 0);
    }
    assert_eq!(p.read(base, 0x4000), before, "a rejected segment wrote");

    // A write of 300 bytes in a 256-byte segment and a 44-byte last one is fine.
    let data = pattern(3, 300);
    p.send(1, &[seg(0x4, base + 0x3000, 256, 300, &data[256..])]);
    p.send(1, &[seg(0x4, base + 0x3000, 0, 300, &data[..256])]);
    p.run_for(10_000);
    let rx = p.take();
    let r = only(&rx, 4);
    check_prefix(r, 0x90, Status::Ok, 4, 0);
    assert_eq!(r.word(0), 300);
    assert_eq!(p.read(base + 0x3000, 300), data);
}

/// Segments in scrambled order with a duplicate: exactly one RDMA_COMPLETION OK, sent only after
/// the last missing segment, memory as the write says (the duplicate's different bytes ignored),
/// the duplicate counted.
#[test]
fn rdma_write_reassembles_scrambled_and_duplicate_segments() {
    let mut p = Peer::new(ep_config());
    let addr = BIG + 0x2_0000;
    let total: u32 = 9 * 256 + 100;
    let data = pattern(21, total as usize);
    let junk = garbage();
    let piece = |k: u32| {
        let start = (k * 256) as usize;
        let end = ((k + 1) * 256).min(total) as usize;
        (k * 256, &data[start..end])
    };
    let order = [5, 2, 9, 0, 2, 7, 1, 8, 3, 6, 4];
    for (n, &k) in order.iter().enumerate() {
        let (off, bytes) = piece(k);
        // The second copy of segment 2 carries other bytes: it must be ignored whole.
        let bytes = if n == 4 { &junk[..bytes.len()] } else { bytes };
        p.send(1, &[seg(0x55, addr, off, total, bytes)]);
        p.run_for(2_000);
        let rx = p.take();
        if n + 1 < order.len() {
            //= docs/spec/transaction.md#2-operations
            //= type=test
            //# TXN-2-4 An RDMA write MUST write exactly its bytes at `address .. address + length`
            //# of the target space. Its segments MAY arrive in any order and on any path; the
            //# target MUST report it complete (RDMA_COMPLETION) only after every byte of it has
            //# been written, and MUST report it once per write it sees complete.
            assert!(rx.is_empty(), "answered after {} segments: {rx:?}", n + 1);
        } else {
            let r = only(&rx, 0x55);
            //= docs/spec/endpoint.md#6-rdma-engine
            //= type=test
            //# EP-6-5 A target MUST reassemble a write by (source GPU, tag): it writes each
            //# segment's bytes at `address + offset` when the segment arrives, keeps a record of
            //# the 256-byte blocks received, ignores a segment whose blocks it has all received,
            //# and sends RDMA_COMPLETION OK, on the port the completing segment arrived on, when
            //# every block is received.
            check_prefix(r, 0x90, Status::Ok, 4, 0);
            assert_eq!(r.word(0), total);
            assert_eq!(rx.len(), 1);
        }
    }
    assert_eq!(p.read(addr, total as usize), data);
    assert_eq!(p.ep.counters().duplicate_segments, 1);
    assert_eq!(p.ep.counters().reassembly_now, 0);

    // Two writes with the same tag from two source GPUs, interleaved, are two writes.
    let (a1, a2) = (BIG + 0x3_0000, BIG + 0x4_0000);
    let (d1, d2) = (pattern(31, 1024), pattern(32, 1024));
    for k in 0..4usize {
        let (k1, k2) = (k * 256, (3 - k) * 256);
        let (o1, o2) = (k1 as u32, k2 as u32);
        p.send_from(PEER, 1, &[seg(0x66, a1, o1, 1024, &d1[k1..k1 + 256])]);
        p.send_from(7, 1, &[seg(0x66, a2, o2, 1024, &d2[k2..k2 + 256])]);
    }
    p.run_for(10_000);
    let rx = p.take();
    //= docs/spec/wire.md#67-rdma_write-0x10-hlen-7-one-segment-of-a-remote-write
    //= type=test
    //# WIRE-6.7-2 All segments of one write MUST carry the same tag, key, address, total length
    //# and SHARED flag. The target identifies a write by (source GPU, tag).
    assert_eq!(rx.len(), 2, "{rx:?}");
    let mut dsts: Vec<u16> = rx.iter().map(|t| t.dst).collect();
    dsts.sort_unstable();
    assert_eq!(dsts, [PEER, 7]);
    for t in &rx {
        assert_eq!(
            (t.opcode, t.status(), t.tag, t.word(0)),
            (0x90, Status::Ok, 0x66, 1024)
        );
    }
    assert_eq!(p.read(a1, 1024), d1);
    assert_eq!(p.read(a2, 1024), d2);
}

/// With room for one reassembly, a segment of a second write is answered BUSY, writes nothing
/// and is counted, and a write that makes no progress for `op_timeout` is forgotten.
#[test]
fn reassembly_bound_and_expiry() {
    let cfg = Config {
        max_reassemblies: 1,
        op_timeout: Duration::from_micros(20),
        frame_lifetime: Duration::from_micros(5),
        tag_quarantine: Duration::from_micros(25),
        ..ep_config()
    };
    let mut p = Peer::new(cfg);
    let (a1, a2) = (BIG + 0x5_0000, BIG + 0x6_0000);
    let before2 = p.read(a2, 512);
    let (d1, d2) = (pattern(41, 512), pattern(42, 512));
    p.send(1, &[seg(0x1, a1, 0, 512, &d1[..256])]);
    p.send(1, &[seg(0x2, a2, 0, 512, &d2[..256])]);
    p.run_for(2_000);
    //= docs/spec/endpoint.md#6-rdma-engine
    //= type=test
    //# EP-6-14 A target MUST bound the writes it reassembles at once (`max_reassemblies`) and
    //# answer RDMA_COMPLETION BUSY, writing nothing, every segment of a write it has no record
    //# for when starting one would exceed that bound.
    let rx = p.take();
    let busy = only(&rx, 2);
    check_prefix(busy, 0x90, Status::Busy, 4, 0);
    assert_eq!(busy.vc, 2);
    assert_eq!(rx.len(), 1, "{rx:?}");
    assert_eq!(p.ep.counters().reassembly_refused, 1);
    assert_eq!(
        p.read(a2, 512),
        before2,
        "a refused first segment was written"
    );
    p.send(1, &[seg(0x1, a1, 256, 512, &d1[256..])]);
    p.run_for(2_000);
    let rx = p.take();
    check_prefix(only(&rx, 1), 0x90, Status::Ok, 4, 0);
    assert_eq!(p.read(a1, 512), d1);
    // Room again: the second write goes through.
    p.send(1, &[seg(0x2, a2, 256, 512, &d2[256..])]);
    p.send(1, &[seg(0x2, a2, 0, 512, &d2[..256])]);
    p.run_for(2_000);
    let rx = p.take();
    check_prefix(only(&rx, 2), 0x90, Status::Ok, 4, 0);
    assert_eq!(p.read(a2, 512), d2);

    // A write that stops halfway is forgotten after op_timeout.
    let a3 = BIG + 0x7_0000;
    let d3 = pattern(43, 512);
    p.send(1, &[seg(0x3, a3, 0, 512, &d3[..256])]);
    p.run_for(10_000);
    assert_eq!(p.ep.counters().reassembly_expired, 0);
    assert_eq!(p.ep.counters().reassembly_now, 1);
    p.run_for(15_000);
    //= docs/spec/endpoint.md#6-rdma-engine
    //= type=test
    //# EP-6-15 A target MUST forget a write that made no progress for `op_timeout`.
    assert_eq!(p.ep.counters().reassembly_expired, 1);
    assert_eq!(p.ep.counters().reassembly_now, 0);
    // Its second half now starts a new reassembly, which lacks the first half.
    p.send(1, &[seg(0x3, a3, 256, 512, &d3[256..])]);
    p.run_for(2_000);
    assert!(p.take().is_empty(), "a forgotten write completed");
    p.send(1, &[seg(0x3, a3, 0, 512, &d3[..256])]);
    p.run_for(2_000);
    let rx = p.take();
    check_prefix(only(&rx, 3), 0x90, Status::Ok, 4, 0);
    assert_eq!(p.read(a3, 512), d3);
}

/// Collects the data of the RDMA_READ_RESP segments of `tag` into a buffer of `total` bytes;
/// returns it and the bytes received.
fn reassemble_read(rx: &[Txn], tag: u16, total: u32, seg: u32) -> (Vec<u8>, usize) {
    let mut out = vec![0u8; total as usize];
    let mut got = 0;
    for t in rx.iter().filter(|t| t.opcode == 0x91 && t.tag == tag) {
        assert_eq!(t.status(), Status::Ok, "{t:?}");
        let off = t.word(0);
        assert_eq!(t.word(4), total);
        assert_eq!(off % 256, 0);
        assert!(t.data.len() <= seg as usize);
        out[off as usize..off as usize + t.data.len()].copy_from_slice(&t.data);
        got += t.data.len();
    }
    (out, got)
}

/// With room for one read job, a second RDMA_READ while the first is served is answered BUSY;
/// the first read goes on and completes; later reads are served again.
#[test]
fn second_read_beyond_max_read_jobs_is_busy() {
    let cfg = Config {
        max_read_jobs: 1,
        ..ep_config()
    };
    let mut p = Peer::new(cfg);
    let seg = p.ep.config().segment;
    let total: u32 = 1 << 20;
    // The peer stops taking frames: the first read cannot be served to its end.
    p.hold = true;
    p.send(
        1,
        &[TxnRepr::RdmaRead {
            tag: 0x100,
            target: target(K1, BIG),
            total,
        }],
    );
    p.run_for(5_000);
    p.send(
        1,
        &[TxnRepr::RdmaRead {
            tag: 0x101,
            target: target(K1, BIG + 0x10_0000),
            total: 512,
        }],
    );
    p.run_for(20_000);
    let (_, got) = reassemble_read(&p.rx, 0x100, total, seg);
    assert!(got < total as usize, "the first read was not outstanding");
    // The refusal is counted at once; it travels on the read-data VC (EP-3-1), behind the
    // first read's segments, so the peer sees it once it takes frames again.
    assert_eq!(p.ep.counters().read_jobs_refused, 1);
    p.resume();
    let end = p.now + 2_000_000;
    assert!(
        p.run_until(end, |p| reassemble_read(&p.rx, 0x100, total, seg).1
            == total as usize)
    );
    assert!(
        p.run_until_rx(20_000, 0x91, 0x101),
        "no answer to the second read"
    );
    //= docs/spec/endpoint.md#6-rdma-engine
    //= type=test
    //# EP-6-9 A target MUST bound the reads it serves at once (`max_read_jobs`) and answer an
    //# RDMA_READ beyond the bound with BUSY.
    check_prefix(only(&p.rx, 0x101), 0x91, Status::Busy, 4, 0);
    let (data, _) = reassemble_read(&p.rx, 0x100, total, seg);
    assert!(data == p.read(BIG, total as usize), "the first read's data");
    p.take();
    p.send(
        1,
        &[TxnRepr::RdmaRead {
            tag: 0x102,
            target: target(K1, BIG + 0x10_0000),
            total: 512,
        }],
    );
    p.run_for(10_000);
    let rx = p.take();
    let r = only(&rx, 0x102);
    check_prefix(r, 0x91, Status::Ok, 4, 512);
    assert_eq!(r.data, p.read(BIG + 0x10_0000, 512));
    assert_eq!(p.ep.counters().read_jobs_refused, 1);
}

// ----- 7. responses to the endpoint as a requester -----------------------------------------------

fn ls(op: LsOp, addr: u64) -> LsRequest {
    LsRequest {
        op,
        remote: Remote {
            gpu: gpu(PEER),
            space: Space::Global,
            key: 0x77,
            addr,
        },
        ordering: Ordering::Unordered,
    }
}

/// A response the peer writes by hand: opcode, status, tag, data (hlen 2).
fn resp(opcode: u8, status: u8, tag: u16, data: &[u8]) -> Vec<u8> {
    raw(opcode, status, tag, 2, &[], data)
}

/// The peer answers operations the endpoint issued: a status this version does not define is
/// reported with its raw value; responses whose opcode or data do not fit the operation, for
/// tags no operation holds, or for operations already complete are discarded and counted.
#[test]
fn responses_to_the_requester() {
    let mut p = Peer::new(ep_config());
    let now = p.now();
    let ld =
        p.ep.issue(now, ls(LsOp::Load { len: 16 }, 0x40))
            .expect("issue");
    p.run_for(1_000);
    let rx = p.take();
    let req = only(&rx, ld);
    assert_eq!((req.vc, req.opcode, req.dst, req.src), (0, 0x01, PEER, EP));
    assert_eq!(req.dword(4), 0x40);

    // A STORE_RESP, a short LOAD_RESP, and a full LOAD_RESP from another GPU than the load's
    // target, for the load's tag: none completes it.
    let discarded = |p: &Peer| p.ep.counters().responses_discarded;
    p.send_raw(2, &payload(EP, PEER, &[resp(0x82, 0, ld, &[])]));
    p.run_for(1_000);
    p.send_raw(2, &payload(EP, PEER, &[resp(0x81, 0, ld, &[1; 8])]));
    p.run_for(1_000);
    p.send_raw(2, &payload(EP, PEER + 7, &[resp(0x81, 0, ld, &[1; 16])]));
    p.run_for(1_000);
    //= docs/spec/endpoint.md#5-load-store-unit
    //= type=test
    //# EP-5-4 A response MUST complete the operation holding its tag only if it comes from that
    //# operation's target GPU, its opcode answers the operation's request and its length is the
    //# one the request asks for (a LOAD_RESP of the load's length, an atomic response of the
    //# operand size); any other response, and any response whose tag no operation holds, MUST be
    //# discarded and counted.
    assert!(p.completions.is_empty(), "{:?}", p.completions);
    assert_eq!(discarded(&p), 3);
    assert_eq!(p.ep.ls_outstanding(), 1);

    // Status 0x42.
    p.send_raw(2, &payload(EP, PEER, &[resp(0x81, 0x42, ld, &[])]));
    p.run_for(1_000);
    assert_eq!(p.completions.len(), 1);
    let c = p.completions.remove(0);
    assert_eq!(c.id, OpId::Ls(ld));
    //= docs/spec/wire.md#69-responses
    //= type=test
    //# WIRE-6.9-2 A requester that receives an unknown status MUST complete the operation with an
    //# error that reports the raw status value.
    //= docs/spec/transaction.md#3-statuses
    //= type=test
    //# TXN-3-2 A completion with a target status MUST carry the status the target sent; an
    //# unknown value MUST be reported with its raw value (WIRE-6.9-2).
    assert_eq!(c.status, CompletionStatus::Remote(Status::Unknown(0x42)));
    assert_eq!(c.status.to_string(), "UNKNOWN(0x42)");
    assert_eq!(c.data, CompletionData::None);
    assert_eq!(p.ep.counters().completed_with(OpKind::Load, 8), 1);

    // The real answer, late: the operation is complete, the response is discarded.
    p.send_raw(2, &payload(EP, PEER, &[resp(0x81, 0, ld, &[5; 16])]));
    p.run_for(1_000);
    //= docs/spec/endpoint.md#9-ports-going-down-and-deadlines
    //= type=test
    //# EP-9-4 A response that arrives for an operation already completed MUST be discarded and
    //# counted, never reported.
    assert!(p.completions.is_empty());
    assert_eq!(discarded(&p), 4);
    // Tags no operation holds: load-store and RDMA.
    let rdma_tag = p.ep.config().lsu_tags + 3;
    p.send_raw(
        2,
        &payload(
            EP,
            PEER,
            &[
                resp(0x82, 0, 0x3F0, &[]),
                raw(0x90, 0, rdma_tag, 4, &[0, 0, 1, 0, 0, 0, 0, 0], &[]),
            ],
        ),
    );
    p.run_for(1_000);
    assert!(p.completions.is_empty());
    assert_eq!(discarded(&p), 6);

    // A load completed only by its real response after a wrong one; an atomic after a response
    // of another atomic and one of the wrong width; a store refused.
    let now = p.now();
    let ld =
        p.ep.issue(now, ls(LsOp::Load { len: 16 }, 0x80))
            .expect("issue");
    let fa =
        p.ep.issue(
            now,
            ls(
                LsOp::Atomic {
                    width: Width::W8,
                    op: AtomicOp::FetchAdd { addend: 1 },
                },
                0x100,
            ),
        )
        .expect("issue");
    let st =
        p.ep.issue(
            now,
            ls(
                LsOp::Store {
                    data: ethlink_endpoint::Bytes::new(&[1, 2, 3]).expect("bytes"),
                },
                0x200,
            ),
        )
        .expect("issue");
    p.run_for(1_000);
    let rx = p.take();
    assert_eq!(only(&rx, fa).opcode, 0x03);
    assert_eq!(only(&rx, st).opcode, 0x02);
    let old = 0x1122_3344_5566_7788u64.to_le_bytes();
    p.send_raw(
        2,
        &payload(
            EP,
            PEER,
            &[
                resp(0x86, 0, ld, &[]),
                resp(0x84, 0, fa, &old),
                resp(0x83, 0, fa, &old[..4]),
            ],
        ),
    );
    p.run_for(1_000);
    assert!(p.completions.is_empty(), "{:?}", p.completions);
    assert_eq!(discarded(&p), 9);
    p.send_raw(
        2,
        &payload(
            EP,
            PEER,
            &[
                resp(0x81, 0, ld, &[7; 16]),
                resp(0x83, 0, fa, &old),
                resp(0x82, 1, st, &[]),
            ],
        ),
    );
    p.run_for(1_000);
    let done: BTreeMap<OpId, Completion> = p.completions.drain(..).map(|c| (c.id, c)).collect();
    assert_eq!(done.len(), 3);
    let l = &done[&OpId::Ls(ld)];
    assert_eq!(l.status, CompletionStatus::Ok);
    assert!(matches!(l.data, CompletionData::Load(b) if b.as_slice() == [7; 16]));
    let a = &done[&OpId::Ls(fa)];
    assert_eq!(a.status, CompletionStatus::Ok);
    assert_eq!(
        a.data,
        CompletionData::Atomic(AtomicValue::U64(0x1122_3344_5566_7788))
    );
    //= docs/spec/transaction.md#3-statuses
    //= type=test
    //# TXN-3-2 A completion with a target status MUST carry the status the target sent
    assert_eq!(
        done[&OpId::Ls(st)].status,
        CompletionStatus::Remote(Status::AccessViolation)
    );
    assert_eq!(discarded(&p), 9);
    assert_eq!(p.ep.outstanding(), 0);
}

/// The endpoint's RDMA write as the peer sees it: every segment carries the same tag, key,
/// address, total length and SHARED flag, and together they cover the write; the peer's
/// completion with an unknown status is reported with its raw value.
#[test]
fn rdma_write_segments_and_an_unknown_completion_status() {
    let mut p = Peer::new(ep_config());
    let seg = p.ep.config().segment;
    let len: u32 = 2 * seg + 1000;
    let data = pattern(51, len as usize);
    p.ep.memory_mut()
        .write(Space::Shared, 0x1000, &data)
        .expect("local data");
    let now = p.now();
    let id =
        p.ep.post(
            now,
            RdmaDesc {
                dir: RdmaDir::Write,
                local_space: Space::Shared,
                local_addr: 0x1000,
                remote: Remote {
                    gpu: gpu(PEER),
                    space: Space::Shared,
                    key: 0xCAFE,
                    addr: 0x9_0000,
                },
                len: u64::from(len),
            },
        )
        .expect("post");
    p.run_for(5_000);
    let rx = p.take();
    assert_eq!(rx.len(), 3, "{rx:?}");
    let tag = rx[0].tag;
    let mut got = vec![0u8; len as usize];
    let mut offsets = Vec::new();
    for t in &rx {
        //= docs/spec/wire.md#67-rdma_write-0x10-hlen-7-one-segment-of-a-remote-write
        //= type=test
        //# WIRE-6.7-2 All segments of one write MUST carry the same tag, key, address, total
        //# length and SHARED flag.
        assert_eq!(
            (t.vc, t.opcode, t.hlen, t.dst, t.src),
            (1, 0x10, 7, PEER, EP)
        );
        assert_eq!(t.tag, tag);
        assert_eq!(t.fs, 1, "SHARED flag");
        assert_eq!(t.word(0), 0xCAFE, "key");
        assert_eq!(t.dword(4), 0x9_0000, "address");
        assert_eq!(t.word(16), len, "total");
        let off = t.word(12);
        offsets.push(off);
        got[off as usize..off as usize + t.data.len()].copy_from_slice(&t.data);
    }
    offsets.sort_unstable();
    assert_eq!(offsets, [0, seg, 2 * seg]);
    assert!(got == data, "the segments' bytes");
    assert!(p.completions.is_empty());
    let mut ext = len.to_be_bytes().to_vec();
    ext.extend([0; 4]);
    p.send_raw(2, &payload(EP, PEER, &[raw(0x90, 0x99, tag, 4, &ext, &[])]));
    p.run_for(1_000);
    assert_eq!(p.completions.len(), 1);
    let c = p.completions[0];
    assert_eq!(c.id, OpId::Rdma(id));
    //= docs/spec/wire.md#69-responses
    //= type=test
    //# WIRE-6.9-2 A requester that receives an unknown status MUST complete the operation with an
    //# error that reports the raw status value.
    assert_eq!(c.status, CompletionStatus::Remote(Status::Unknown(0x99)));
    assert_eq!(c.data, CompletionData::None);
}

// ----- 8. FENCE ----------------------------------------------------------------------------------

/// A FENCE is answered FENCE_RESP OK after the responses to the requests before it on its path;
/// one behind an RDMA read still being served waits for the read.
#[test]
fn fence_is_answered_after_the_requests_before_it() {
    let mut p = Peer::new(ep_config());
    let seg = p.ep.config().segment;
    // A fence alone.
    p.send(0, &[TxnRepr::Fence { tag: 0x1 }]);
    p.run_for(2_000);
    let rx = p.take();
    assert_eq!(rx.len(), 1);
    check_prefix(&rx[0], 0x86, Status::Ok, 2, 0);
    assert_eq!(rx[0].tag, 0x1);

    // Requests, then a fence, then a load, in one frame; a read in a frame of its own before it.
    p.send(
        1,
        &[TxnRepr::RdmaRead {
            tag: 0x12,
            target: target(K1, BIG),
            total: 2 * seg,
        }],
    );
    p.send(
        0,
        &[
            TxnRepr::Store {
                tag: 0x11,
                target: target(K1, A),
                data: &[3; 64],
            },
            TxnRepr::Load {
                tag: 0x13,
                target: target(K1, A),
                len: 64,
            },
            TxnRepr::Atomic {
                tag: 0x14,
                target: target(K1, A + 0x100),
                width: Width::W8,
                op: AtomicOp::Swap { value: 9 },
            },
            TxnRepr::Fence { tag: 0x15 },
            TxnRepr::Load {
                tag: 0x16,
                target: target(K1, A + 0x100),
                len: 8,
            },
        ],
    );
    p.run_for(10_000);
    let rx = p.take();
    let pos = |tag: u16| {
        let v: Vec<usize> = rx
            .iter()
            .enumerate()
            .filter(|(_, t)| t.tag == tag)
            .map(|(i, _)| i)
            .collect();
        assert!(!v.is_empty(), "no response for {tag:#x}: {rx:?}");
        v
    };
    let fence = pos(0x15);
    assert_eq!(fence.len(), 1);
    check_prefix(&rx[fence[0]], 0x86, Status::Ok, 2, 0);
    //= docs/spec/transaction.md#4-ordering
    //= type=test
    //# TXN-4-6 A FENCE request is an ordering point at one target for one source and one port of
    //# arrival. Every request of the same source that arrived on the FENCE's port before it, on any
    //# VC, MUST be ordered before every request of that source that arrives on that port after it;
    //# an RDMA read that arrived before the FENCE MUST have been read whole before the FENCE is
    //# answered, but its segments MAY be read after later requests. A target MUST answer a FENCE
    //# only after every request of its source that arrived before it on its port has been
    //# performed.
    for tag in [0x11, 0x13, 0x14] {
        assert!(
            pos(tag).iter().all(|&i| i < fence[0]),
            "the response to {tag:#x} came after the FENCE_RESP: {rx:?}"
        );
    }
    assert_eq!(only(&rx, 0x13).data, [3; 64]);
    // The read (on another VC, so another path) is served whole.
    assert_eq!(pos(0x12).len(), 2);
    assert_eq!(only(&rx, 0x16).data, 9u64.to_le_bytes());

    // A fence behind a read that cannot be served to its end while the peer takes no frames.
    let total: u32 = 1 << 20;
    p.hold = true;
    p.send(
        1,
        &[TxnRepr::RdmaRead {
            tag: 0x21,
            target: target(K1, BIG),
            total,
        }],
    );
    p.send(0, &[TxnRepr::Fence { tag: 0x22 }]);
    p.run_for(50_000);
    let (_, got) = reassemble_read(&p.rx, 0x21, total, seg);
    assert!(got < total as usize);
    assert!(
        with_tag(&p.rx, 0x22).is_empty(),
        "FENCE_RESP before the read was served"
    );
    p.resume();
    assert!(p.run_until_rx(2_000_000, 0x86, 0x22), "no FENCE_RESP");
    let end = p.now + 2_000_000;
    assert!(
        p.run_until(end, |p| reassemble_read(&p.rx, 0x21, total, seg).1
            == total as usize)
    );
    let rx = p.take();
    check_prefix(only(&rx, 0x22), 0x86, Status::Ok, 2, 0);
    let (data, _) = reassemble_read(&rx, 0x21, total, seg);
    assert!(data == p.read(BIG, total as usize));
}

// ----- 9. response backlog -----------------------------------------------------------------------

/// While the peer takes no frames, the endpoint's responses back up until its backlog is full;
/// it then stops taking requests (their credits unreturned) and, once the peer takes frames
/// again, answers every request exactly once.
#[test]
//= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
//= type=test
//# EP-13-11 (§8) The response backlog of EP-8-4 MUST be counted in bytes of encoded response
//# transactions (their prefix, header and data) held or owed. A target stops taking only frames on
//# the request VCs 0 and 1; frames on VCs 2 and 3 hold only responses (EP-3-7) and MUST still be
//# taken while the backlog is full, so that the completions that drain the backlog are never held
//# behind it.
//= docs/spec/endpoint.md#8-target
//= type=test
//# EP-8-10 A target MUST take the transactions its links deliver at the rate they arrive or hold
//# their frames in the links' receive buffers (EP-8-4), never drop one for want of
fn response_backlog_stalls_requests_and_drops_nothing() {
    // The frames wait longer than the default hold_max: this test is about the stall alone.
    let cfg = Config {
        response_backlog: 9216,
        hold_max: Duration::from_millis(10),
        ..ep_config()
    };
    let mut p = Peer::new(cfg);
    let n: u16 = 2400;
    p.hold = true;
    p.send_loads(0..n, 250, 256);
    p.run_for(100_000);
    let answered = p.rx.len();
    //= docs/spec/endpoint.md#8-target
    //= type=test
    //# EP-8-4 When its response backlog reaches `response_backlog` bytes a target MUST stop taking
    //# request frames from its ports, keeping them in the link's receive buffer (their credits
    //# unreturned), until the backlog drains.
    assert!(p.ep.counters().backlog_stalls > 0);
    assert!(answered < usize::from(n), "nothing backed up");
    let vc0 = Vc::new(0).expect("vc");
    assert!(
        p.ep.link(0).expect("port 0").rx_occupied(vc0) > 0,
        "request frames left the link's buffer"
    );
    let served = p.ep.counters().requests_served;
    assert!(served < u64::from(n));
    p.resume();
    let end = p.now + 5_000_000;
    assert!(
        p.run_until(end, |p| p.rx.len() >= usize::from(n)),
        "{} of {n} answered",
        p.rx.len()
    );
    p.run_for(10_000);
    let rx = p.take();
    //= docs/spec/transaction.md#2-operations
    //= type=test
    //# TXN-2-8 A target MUST answer every request it receives with exactly one response
    assert_eq!(rx.len(), usize::from(n));
    let mut seen = vec![false; usize::from(n)];
    for t in &rx {
        assert!(
            !std::mem::replace(&mut seen[usize::from(t.tag)], true),
            "{t:?} twice"
        );
        check_prefix(t, 0x81, Status::Ok, 2, 256);
        assert_eq!(t.data, p.read(BIG + u64::from(t.tag) * 256, 256));
    }
    assert_eq!(p.ep.counters().requests_served, u64::from(n));
    //= docs/spec/endpoint.md#8-target
    //= type=test
    //# EP-8-8 A target MUST NOT drop a response for want of room.
    assert_eq!(p.ep.counters().responses_expired, 0);
    assert_eq!(p.ep.link(0).expect("port 0").rx_occupied(vc0), 0);
}

/// A target whose backlog stays full holds request frames; when it takes them again, those it has
/// held for `hold_max` or longer are discarded unperformed and unanswered (their stores never
/// reach memory), and their credits come back; a frame held for less is served as usual.
//= type=test
//# EP-8-9 A target MUST NOT perform any request of a frame it has held (EP-8-4) for `hold_max` or
//# longer since its link delivered it: it MUST discard such a frame whole, without answering,
//# count it in `held_expired` and return its credits.
#[test]
fn a_request_frame_held_past_hold_max_is_never_performed() {
    let cfg = Config {
        response_backlog: 9216,
        hold_max: Duration::from_micros(25),
        ..ep_config()
    };
    let mut p = Peer::new(cfg);
    p.hold = true;
    // Loads of 256 B fill the backlog while the peer takes nothing.
    p.send_loads(0..200u16, 20, 256);
    p.run_for(5_000);
    assert!(p.ep.counters().backlog_stalls > 0, "the backlog is full");
    // Stores behind them wait in the link's buffer, then the backlog stays full past hold_max.
    let data = [0xA5u8; 64];
    let stores: Vec<TxnRepr<'_>> = (0..8u16)
        .map(|k| TxnRepr::Store {
            tag: 0x4000 + k,
            target: target(K1, BIG + 0x10_0000 + u64::from(k) * 64),
            data: &data,
        })
        .collect();
    p.send(0, &stores);
    let before = p.read(BIG + 0x10_0000, 8 * 64);
    p.run_for(40_000);
    let served = p.ep.counters().requests_served;
    p.resume();
    p.run_for(200_000);
    let rx = p.take();
    let c = p.ep.counters().clone();
    assert!(c.held_expired > 0, "no held frame expired");
    assert_eq!(
        p.read(BIG + 0x10_0000, 8 * 64),
        before,
        "a store held for more than hold_max was performed"
    );
    assert!(
        rx.iter().all(|t| !(0x4000..0x4008).contains(&t.tag)),
        "a store held for more than hold_max was answered"
    );
    assert!(
        c.requests_served >= served,
        "requests taken before the hold are served"
    );
    let vc0 = Vc::new(0).expect("vc");
    assert_eq!(
        p.ep.link(0).expect("port 0").rx_occupied(vc0),
        0,
        "the discarded frames' credits came back"
    );
    // A request that arrives now is served as usual.
    p.send(
        0,
        &[TxnRepr::Store {
            tag: 0x4100,
            target: target(K1, BIG + 0x10_0000),
            data: &data,
        }],
    );
    assert!(p.run_until_rx(100_000, 0x82, 0x4100) || p.rx.iter().any(|t| t.tag == 0x4100));
    assert_eq!(p.read(BIG + 0x10_0000, 64), data.to_vec());
}

/// Responses that wait in the link's transmit queue are part of the backlog: with the peer
/// taking nothing, a few hundred responses, far fewer than the link's queue would hold, stop the
/// intake of requests, and every one is answered once the peer takes frames again.
#[test]
fn response_backlog_counts_the_links_transmit_queue() {
    let cfg = Config {
        response_backlog: 9216,
        hold_max: Duration::from_millis(10),
        ..ep_config()
    };
    let mut p = Peer::new(cfg);
    let n: u16 = 300;
    p.hold = true;
    p.send_loads(0..n, 10, 256);
    p.run_for(100_000);
    let vc2 = Vc::new(2).expect("vc");
    let (frames, bytes) = p.ep.link(0).expect("port 0").queued(vc2);
    assert!(
        frames < 256 && bytes < 256 * 1024,
        "the link's queue is full"
    );
    //= docs/spec/endpoint.md#8-target
    //= type=test
    //# EP-8-4 When its response backlog reaches `response_backlog` bytes a target MUST stop taking
    //# request frames from its ports, keeping them in the link's receive buffer (their credits
    //# unreturned), until the backlog drains.
    assert!(p.ep.counters().backlog_stalls > 0);
    assert!(p.ep.counters().requests_served < u64::from(n));
    assert!(
        p.ep.link(0)
            .expect("port 0")
            .rx_occupied(Vc::new(0).expect("vc"))
            > 0
    );
    p.resume();
    let end = p.now + 5_000_000;
    assert!(
        p.run_until(end, |p| p.rx.len() >= usize::from(n)),
        "{} of {n} answered",
        p.rx.len()
    );
    p.run_for(10_000);
    let rx = p.take();
    assert_eq!(rx.len(), usize::from(n));
    assert_eq!(p.ep.counters().requests_served, u64::from(n));
}

/// FENCE requests behind a read that cannot be served to its end wait for it; the FENCE_RESP
/// each one is owed counts in the backlog, so that a peer cannot pile them up without bound: the
/// target stops taking requests, and answers every FENCE once the read is served.
#[test]
fn fences_waiting_for_a_read_count_in_the_backlog() {
    // The read stays alive without progress for the whole test (its op_timeout, EP-6-15).
    let cfg = Config {
        response_backlog: 512 * 1024,
        hold_max: Duration::from_millis(10),
        op_timeout: Duration::from_millis(5),
        tag_quarantine: Duration::from_millis(6),
        ..ep_config()
    };
    let mut p = Peer::new(cfg);
    p.hold = true;
    p.send(
        1,
        &[TxnRepr::RdmaRead {
            tag: 0x7000,
            target: target(K1, BIG),
            total: 1 << 20,
        }],
    );
    p.run_for(20_000);
    // 160 frames of 250 FENCEs: 320,000 bytes of FENCE_RESP owed.
    let frames: u16 = 160;
    for f in 0..frames {
        let txns: Vec<TxnRepr<'_>> = (0..250)
            .map(|k| TxnRepr::Fence { tag: f * 250 + k })
            .collect();
        p.send(0, &txns);
        p.run_for(2_000);
    }
    p.run_for(100_000);
    //= docs/spec/endpoint.md#8-target
    //= type=test
    //# EP-8-4 [...] The backlog counts every response the target owes and has not put on a wire,
    //# the FENCE_RESP of a FENCE that waits for earlier reads included.
    assert!(
        p.ep.counters().backlog_stalls > 0,
        "the FENCEs filled no backlog"
    );
    assert!(
        p.ep.link(0)
            .expect("port 0")
            .rx_occupied(Vc::new(0).expect("vc"))
            > 0,
        "every FENCE frame was taken"
    );
    assert!(
        p.rx.iter().all(|t| t.opcode != 0x86),
        "a FENCE_RESP before the read"
    );
    p.resume();
    let n = usize::from(frames) * 250;
    let end = p.now + 20_000_000;
    assert!(
        p.run_until(end, |p| p.rx.iter().filter(|t| t.opcode == 0x86).count()
            >= n),
        "{} of {n} FENCEs answered",
        p.rx.iter().filter(|t| t.opcode == 0x86).count()
    );
    p.run_for(10_000);
    let mut seen = vec![false; n];
    for t in p.take().iter().filter(|t| t.opcode == 0x86) {
        check_prefix(t, 0x86, Status::Ok, 2, 0);
        assert!(
            !std::mem::replace(&mut seen[usize::from(t.tag)], true),
            "{t:?} twice"
        );
    }
    assert!(seen.iter().all(|&s| s));
}

// ----- 10. BUSY and retries that wait ------------------------------------------------------------

/// Runs until the peer has received a request with `opcode` (any tag) and returns it.
fn next_request(p: &mut Peer, ns: u64, opcode: u8) -> Option<Txn> {
    let end = p.now + ns;
    p.run_until(end, |p| p.rx.iter().any(|t| t.opcode == opcode));
    let rx = p.take();
    rx.into_iter().find(|t| t.opcode == opcode)
}

/// A load answered BUSY is sent again after `busy_backoff`, then twice as long, and so on; each
/// retry counts against `max_retries`, and a BUSY with no retry left ends the load BUSY.
#[test]
fn busy_load_is_retried_with_back_off_and_ends_busy() {
    let mut p = Peer::new(ep_config());
    //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
    //= type=test
    //# EP-13-5 (§9) The `n` of EP-9-5's back-off `busy_backoff * 2^(n-1)` MUST be the number of
    //# retries of the operation so far, this one included, whatever their causes: retries of every
    //# cause share one budget and one count.
    let backoff = p.ep.config().busy_backoff.as_nanos() as u64;
    assert_eq!(backoff, 1_000);
    let max = p.ep.config().max_retries;
    let now = p.now();
    let ld =
        p.ep.issue(now, ls(LsOp::Load { len: 16 }, 0x40))
            .expect("issue");
    let first = next_request(&mut p, 2_000, 0x01).expect("the load");
    assert_eq!(first.tag, ld);
    for n in 0..=u32::from(max) {
        let sent = p.now;
        p.send_raw(2, &payload(EP, PEER, &[resp(0x81, 0x07, ld, &[])]));
        if n == u32::from(max) {
            break;
        }
        let wait = backoff << n;
        // Not before the back-off...
        //= docs/spec/endpoint.md#12-timers-and-their-relations
        //= type=test
        //# EP-1-1 Every time of Table EP-T1 is a whole number of nanoseconds; an endpoint MUST
        //# NOT act on a time before it has passed in full.
        p.run_for(wait - 100);
        assert!(
            p.take().iter().all(|t| t.opcode != 0x01),
            "retry {} came before its back-off of {wait} ns",
            n + 1
        );
        // ...and soon after it.
        let again = next_request(&mut p, 2_000, 0x01).expect("the retry");
        //= docs/spec/endpoint.md#9-ports-going-down-deadlines-and-busy
        //= type=test
        //# EP-9-5 An operation answered BUSY that has a retry left MUST be sent again (whole, an
        //# RDMA read chunk by chunk) after `busy_backoff * 2^(n-1)` for its n-th retry, and the
        //# retry counts against `max_retries`.
        assert!(p.now >= sent + wait, "{} < {} + {wait}", p.now, sent);
        assert_eq!(again.tag, ld);
        assert!(p.completions.is_empty());
    }
    p.run_for(2_000);
    //= docs/spec/transaction.md#3-statuses
    //= type=test
    //# TXN-3-8 An operation answered BUSY was not performed, whatever its kind (atomics
    //# included): its requester MAY send it again, and an operation completes with BUSY only
    //# when its requester gives up
    assert_eq!(p.completions.len(), 1, "{:?}", p.completions);
    let c = p.completions.remove(0);
    //= docs/spec/endpoint.md#9-ports-going-down-deadlines-and-busy
    //= type=test
    //# EP-9-8 An operation answered BUSY with no retry left MUST complete with BUSY.
    assert_eq!(c.status, CompletionStatus::Remote(Status::Busy));
    assert_eq!(c.retries, max);
    assert_eq!(p.ep.counters().busy_retries, u64::from(max));
    assert_eq!(p.ep.counters().retries, u64::from(max));

    // An atomic answered BUSY was not performed: it is sent again too.
    let now = p.now();
    let fa =
        p.ep.issue(
            now,
            ls(
                LsOp::Atomic {
                    width: Width::W8,
                    op: AtomicOp::FetchAdd { addend: 5 },
                },
                0x100,
            ),
        )
        .expect("issue");
    assert_eq!(next_request(&mut p, 2_000, 0x03).expect("atomic").tag, fa);
    p.send_raw(2, &payload(EP, PEER, &[resp(0x83, 0x07, fa, &[])]));
    assert_eq!(next_request(&mut p, 3_000, 0x03).expect("again").tag, fa);
    p.send_raw(
        2,
        &payload(EP, PEER, &[resp(0x83, 0, fa, &7u64.to_le_bytes())]),
    );
    p.run_for(1_000);
    let c = p.completions.pop().expect("atomic complete");
    assert_eq!((c.status, c.retries), (CompletionStatus::Ok, 1));
    assert_eq!(c.data, CompletionData::Atomic(AtomicValue::U64(7)));
}

/// An RDMA write answered BUSY is sent again whole after the back-off, under a new tag; a late
/// BUSY for the old tag is discarded. An RDMA read chunk answered BUSY is asked for again.
#[test]
fn busy_rdma_is_retried() {
    let mut p = Peer::new(ep_config());
    let data = pattern(61, 600);
    p.ep.memory_mut()
        .write(Space::Global, 0x1000, &data)
        .expect("local data");
    let now = p.now();
    let desc = RdmaDesc {
        dir: RdmaDir::Write,
        local_space: Space::Global,
        local_addr: 0x1000,
        remote: Remote {
            gpu: gpu(PEER),
            space: Space::Global,
            key: 0x77,
            addr: 0x9000,
        },
        len: 600,
    };
    let id = p.ep.post(now, desc).expect("post");
    let first = next_request(&mut p, 2_000, 0x10).expect("the segment");
    let sent = p.now;
    p.send_raw(
        2,
        &payload(
            EP,
            PEER,
            &[raw(
                0x90,
                0x07,
                first.tag,
                4,
                &[0, 0, 2, 0x58, 0, 0, 0, 0],
                &[],
            )],
        ),
    );
    let again = next_request(&mut p, 5_000, 0x10).expect("the retry");
    assert!(p.now >= sent + 1_000);
    assert_ne!(
        again.tag, first.tag,
        "a write retried after BUSY takes a new tag"
    );
    assert_eq!(again.data, data);
    // A late BUSY for the first tag: not taken for the retry's answer.
    let discarded = p.ep.counters().responses_discarded;
    p.send_raw(
        2,
        &payload(
            EP,
            PEER,
            &[raw(
                0x90,
                0x07,
                first.tag,
                4,
                &[0, 0, 2, 0x58, 0, 0, 0, 0],
                &[],
            )],
        ),
    );
    p.run_for(3_000);
    assert_eq!(p.ep.counters().responses_discarded, discarded + 1);
    assert!(p.take().is_empty(), "the late BUSY caused another retry");
    p.send_raw(
        2,
        &payload(
            EP,
            PEER,
            &[raw(
                0x90,
                0,
                again.tag,
                4,
                &[0, 0, 2, 0x58, 0, 0, 0, 0],
                &[],
            )],
        ),
    );
    p.run_for(2_000);
    let c = p.completions.pop().expect("write complete");
    assert_eq!(
        (c.id, c.status, c.retries),
        (OpId::Rdma(id), CompletionStatus::Ok, 1)
    );
    // Writes posted now never get the abandoned tag: it rests `tag_quarantine` (500 us).
    //= docs/spec/endpoint.md#5-load-store-unit
    //= type=test
    //# EP-5-8 [...] A tag an operation abandons before it completes (an RDMA write sent again
    //# after BUSY under a new tag, EP-9-5) MUST rest `tag_quarantine` from the moment it is
    //# abandoned.
    let rdma_tags = p.ep.config().rdma_tags;
    for k in 0..rdma_tags {
        let now = p.now();
        let w = p.ep.post(now, desc).expect("post");
        let s = next_request(&mut p, 2_000, 0x10).expect("its segment");
        assert_ne!(s.tag, first.tag, "write {k} took the abandoned tag");
        let ok = raw(0x90, 0, s.tag, 4, &[0, 0, 2, 0x58, 0, 0, 0, 0], &[]);
        p.send_raw(2, &payload(EP, PEER, &[ok]));
        p.run_for(1_000);
        let c = p.completions.pop().expect("write complete");
        assert_eq!((c.id, c.status), (OpId::Rdma(w), CompletionStatus::Ok));
    }

    // A read of one chunk answered BUSY, then served.
    let now = p.now();
    let rd =
        p.ep.post(
            now,
            RdmaDesc {
                dir: RdmaDir::Read,
                local_addr: 0x8000,
                ..desc
            },
        )
        .expect("post");
    let req = next_request(&mut p, 2_000, 0x11).expect("the read");
    let sent = p.now;
    let busy_resp = |tag: u16| raw(0x91, 0x07, tag, 4, &[0, 0, 0, 0, 0, 0, 2, 0x58], &[]);
    p.send_raw(3, &payload(EP, PEER, &[busy_resp(req.tag)]));
    p.run_for(900);
    assert!(
        p.take().is_empty(),
        "the chunk came again before its back-off"
    );
    let again = next_request(&mut p, 2_000, 0x11).expect("the read again");
    //= docs/spec/endpoint.md#9-ports-going-down-deadlines-and-busy
    //= type=test
    //# EP-9-5 An operation answered BUSY that has a retry left MUST be sent again (whole, an
    //# RDMA read chunk by chunk) after `busy_backoff * 2^(n-1)` for its n-th retry
    assert!(p.now >= sent + 1_000);
    assert_eq!(again.tag, req.tag);
    // The data in two segments, the first one twice (the copy with other bytes).
    let data = pattern(62, 600);
    let part = |off: u32, bytes: &[u8]| {
        let mut ext = off.to_be_bytes().to_vec();
        ext.extend(600u32.to_be_bytes());
        raw(0x91, 0, req.tag, 4, &ext, bytes)
    };
    p.send_raw(3, &payload(EP, PEER, &[part(0, &data[..512])]));
    p.send_raw(3, &payload(EP, PEER, &[part(0, &[0xEE; 512])]));
    p.run_for(1_000);
    //= docs/spec/endpoint.md#6-rdma-engine
    //= type=test
    //# EP-6-18 A requester MUST ignore an RDMA_READ_RESP segment whose blocks have all been
    //# placed already: it changes no byte of local memory.
    assert_eq!(p.ep.counters().duplicate_segments, 1);
    p.send_raw(3, &payload(EP, PEER, &[part(512, &data[512..])]));
    p.run_for(2_000);
    let c = p.completions.pop().expect("read complete");
    assert_eq!(
        (c.id, c.status, c.retries),
        (OpId::Rdma(rd), CompletionStatus::Ok, 1)
    );
    let mut got = vec![0; 600];
    p.ep.memory()
        .read(Space::Global, 0x8000, &mut got)
        .expect("local");
    assert_eq!(got, pattern(62, 600));
}

/// A load whose frame was in the link's replay buffer when the port went down (unknown fate) is
/// sent again no earlier than `frame_lifetime` after it was first sent, and counts a retry.
#[test]
fn a_request_of_unknown_fate_waits_frame_lifetime() {
    let cfg = Config {
        op_timeout: Duration::from_micros(60),
        frame_lifetime: Duration::from_micros(20),
        tag_quarantine: Duration::from_micros(80),
        ..ep_config()
    };
    let mut p = Peer::new(cfg);
    let now = p.now();
    let ld =
        p.ep.issue(now, ls(LsOp::Load { len: 16 }, 0x40))
            .expect("issue");
    // The load's frame leaves the endpoint (after `pack_delay`) and is lost on the wire.
    p.now += 100;
    let now = p.now();
    p.ep.handle_timeout(now);
    let mut buf = vec![0; 9216];
    let mut gone = 0;
    while let Some(t) = p.ep.poll_transmit(now, 0, &mut buf).expect("buffer") {
        gone += t.len;
    }
    assert!(gone > 0);
    let sent = p.now;
    // The cable is cut and mended at once: the link reports the frame of unknown fate.
    p.ep.port_down(now, 0);
    p.link.physical_down(now);
    while p.link.poll_event().is_some() {}
    p.ep.port_up(now, 0);
    p.link.physical_up(now);
    assert!(p.run_until(p.now + 10_000, |p| p.ep.is_usable(0) && p.link.is_up()));
    assert!(
        p.take().is_empty(),
        "sent again as soon as the port was back"
    );
    let again = next_request(&mut p, 30_000, 0x01).expect("the retry");
    //= docs/spec/endpoint.md#9-ports-going-down-deadlines-and-busy
    //= type=test
    //# EP-9-6 An endpoint MUST hold a request of unknown fate for `frame_lifetime` from the
    //# moment its link reports the loss before it sends it again (TXN-5-7), and then give its
    //# operation a new deadline `op_timeout` later.
    //= docs/spec/transaction.md#5-operations-that-can-no-longer-complete
    //= type=test
    //# TXN-5-7 A request of unknown fate MUST NOT be sent again before frame_lifetime has passed
    //# since its link reported the attempt it replaces of unknown fate (LINK-6-1). (A retry after a
    //# passed deadline keeps this rule by itself, since op_timeout >= frame_lifetime, endpoint.md
    //# EP-1-3.)
    assert!(
        p.now >= sent + 20_000,
        "retry at {} ns, sent at {sent} ns",
        p.now
    );
    assert!(p.now < sent + 25_000, "retry late: {} ns", p.now);
    assert_eq!(again.tag, ld);
    p.send_raw(2, &payload(EP, PEER, &[resp(0x81, 0, ld, &[3; 16])]));
    p.run_for(2_000);
    let c = p.completions.pop().expect("complete");
    assert_eq!((c.status, c.retries), (CompletionStatus::Ok, 1));
    assert_eq!(p.ep.counters().retries, 1);
}

// ----- 11. reassembly bounds ---------------------------------------------------------------------

/// The blocks of all reassemblies are bounded: a write that would pass the bound is answered
/// BUSY, one larger than the bound alone is answered UNSUPPORTED once.
#[test]
fn reassembly_blocks_are_bounded() {
    let cfg = Config {
        max_reassembly_blocks: 64,
        ..ep_config()
    };
    let mut p = Peer::new(cfg);
    let junk = garbage();
    // 48 blocks reserved by the first write.
    p.send(1, &[seg(0x1, BIG, 0, 48 * 256, &junk[..256])]);
    // 32 more do not fit.
    p.send(1, &[seg(0x2, BIG + 0x10_0000, 0, 32 * 256, &junk[..256])]);
    p.send(1, &[seg(0x2, BIG + 0x10_0000, 256, 32 * 256, &junk[..256])]);
    // 16 do.
    p.send(1, &[seg(0x3, BIG + 0x18_0000, 0, 16 * 256, &junk[..256])]);
    // 65 blocks never fit: UNSUPPORTED, answered once.
    p.send(1, &[seg(0x4, BIG, 0, 65 * 256, &junk[..256])]);
    p.send(1, &[seg(0x4, BIG, 256, 65 * 256, &junk[..256])]);
    p.run_for(5_000);
    let rx = p.take();
    //= docs/spec/endpoint.md#6-rdma-engine
    //= type=test
    //# EP-6-12 A target MUST reserve `ceil(total / 256)` blocks for each write it starts
    //# reassembling, keep the blocks reserved at once within `max_reassembly_blocks`, and answer
    //# RDMA_COMPLETION BUSY, writing nothing, every segment of a write it has no record for when
    //# starting one would exceed that bound.
    let busy = with_tag(&rx, 2);
    assert_eq!(busy.len(), 2, "{rx:?}");
    for b in busy {
        check_prefix(b, 0x90, Status::Busy, 4, 0);
    }
    assert!(with_tag(&rx, 1).is_empty() && with_tag(&rx, 3).is_empty());
    //= docs/spec/endpoint.md#6-rdma-engine
    //= type=test
    //# EP-6-13 A target MUST answer RDMA_COMPLETION UNSUPPORTED, at the write's first segment as
    //# EP-6-4 A target MUST check the whole range of a write (EP-2-3, EP-2-4: address, total
    //# length, key, write permission) when it receives the first segment of the write (whichever
    //# arrives first), and on refusal write none of it and answer one RDMA_COMPLETION with the
    //# status.
    check_prefix(only(&rx, 4), 0x90, Status::Unsupported, 4, 0);
    assert_eq!(p.ep.counters().reassembly_refused, 2);
}

// ----- 12. capabilities --------------------------------------------------------------------------

/// An endpoint without a capability answers the requests that need it UNSUPPORTED and performs
/// nothing of them; without PACKING it sends one transaction per frame.
#[test]
fn capabilities_switch_features_off() {
    use ethlink_protocol::Capabilities as C;
    let all = ethlink_endpoint::DEFAULT_CAPS;
    assert_eq!(all, C::RDMA | C::ATOMICS | C::SHARED | C::PACKING);
    let shared = |tag, addr| TxnRepr::Load {
        tag,
        target: MemTarget {
            space: Space::Shared,
            key: 0x1,
            addr,
        },
        len: 8,
    };
    let fadd = |tag, addr| TxnRepr::Atomic {
        tag,
        target: target(K1, addr),
        width: Width::W8,
        op: AtomicOp::FetchAdd { addend: 1 },
    };
    let read = |tag| TxnRepr::RdmaRead {
        tag,
        target: target(K1, A),
        total: 512,
    };

    // Without RDMA.
    let mut p = Peer::new(Config {
        caps: all.without(C::RDMA),
        ..ep_config()
    });
    let (before, tail) = snapshot(p.ep.memory());
    let junk = garbage();
    p.send(1, &[seg(0x1, A, 256, 512, &junk[..256])]);
    p.send(1, &[seg(0x1, A, 0, 512, &junk[..256])]);
    p.send(1, &[read(0x2)]);
    p.run_for(5_000);
    let rx = p.take();
    assert_eq!(rx.len(), 2, "{rx:?}");
    //= docs/spec/endpoint.md#11-capabilities
    //= type=test
    //# EP-11-2 An endpoint without RDMA MUST answer the RDMA_WRITE segment at offset 0 with
    //# RDMA_COMPLETION UNSUPPORTED, discard its other segments unanswered, and answer an
    //# RDMA_READ with one RDMA_READ_RESP UNSUPPORTED without data.
    let w = only(&rx, 0x1);
    check_prefix(w, 0x90, Status::Unsupported, 4, 0);
    assert_eq!(w.vc, 2);
    let r = only(&rx, 0x2);
    check_prefix(r, 0x91, Status::Unsupported, 4, 0);
    assert_eq!(r.vc, 3);
    assert_untouched(p.ep.memory(), &before, &tail);

    // Without ATOMICS: aligned and misaligned atomics alike.
    let mut p = Peer::new(Config {
        caps: all.without(C::ATOMICS),
        ..ep_config()
    });
    let (before, tail) = snapshot(p.ep.memory());
    p.send(0, &[fadd(0x3, A + 0x100), fadd(0x4, A + 0x104)]);
    p.run_for(5_000);
    let rx = p.take();
    //= docs/spec/endpoint.md#11-capabilities
    //= type=test
    //# EP-11-3 An endpoint without ATOMICS MUST answer every atomic UNSUPPORTED.
    check_prefix(only(&rx, 0x3), 0x83, Status::Unsupported, 2, 0);
    check_prefix(only(&rx, 0x4), 0x83, Status::Unsupported, 2, 0);
    assert_untouched(p.ep.memory(), &before, &tail);

    // Without SHARED: a load of the shared space, and an RDMA write to it answered once.
    let mut cfg = Config {
        caps: all.without(C::SHARED),
        ..ep_config()
    };
    cfg.memory.shared_size = 1 << 20;
    let mut p = Peer::new(cfg);
    p.ep.memory_mut()
        .register(Region::new(Space::Shared, 0, 1 << 20, 0x1, Perms::ALL))
        .expect("shared region");
    let mut w = seg(0x6, 0, 0, 512, &junk[..256]);
    if let TxnRepr::RdmaWrite { target, .. } = &mut w {
        *target = MemTarget {
            space: Space::Shared,
            key: 0x1,
            addr: 0,
        };
    }
    let mut w2 = w;
    if let TxnRepr::RdmaWrite { offset, .. } = &mut w2 {
        *offset = 256;
    }
    p.send(0, &[shared(0x5, 0x40)]);
    p.send(1, &[w, w2]);
    p.run_for(5_000);
    let rx = p.take();
    //= docs/spec/endpoint.md#11-capabilities
    //= type=test
    //# EP-11-4 An endpoint without SHARED MUST answer UNSUPPORTED every request that carries
    //# the SHARED flag
    check_prefix(only(&rx, 0x5), 0x81, Status::Unsupported, 2, 0);
    check_prefix(only(&rx, 0x6), 0x90, Status::Unsupported, 4, 0);
    let mut z = vec![0; 512];
    p.ep.memory().read(Space::Shared, 0, &mut z).expect("read");
    assert_eq!(z, vec![0; 512], "a refused write wrote");

    // Without PACKING: many loads in one frame, each answer in a frame of its own.
    let mut p = Peer::new(Config {
        caps: all.without(C::PACKING),
        pack_delay: Duration::from_micros(1),
        ..ep_config()
    });
    let loads: Vec<TxnRepr<'_>> = (0..8u16)
        .map(|t| TxnRepr::Load {
            tag: 0x10 + t,
            target: target(K1, A + u64::from(t) * 16),
            len: 16,
        })
        .collect();
    p.send(0, &loads);
    p.run_for(5_000);
    assert_eq!(p.take().len(), 8);
    //= docs/spec/endpoint.md#11-capabilities
    //= type=test
    //# EP-11-5 An endpoint without PACKING MUST send every DATA frame with one transaction.
    //# CLS-3-1 A device that does not announce `PACKING` MUST NOT send a DATA frame that
    let c = p.ep.counters();
    assert_eq!(c.packed_frames, 0);
    assert_eq!(c.ports[0].frames_sent, c.ports[0].txns_sent);
    // With it, the same answers share frames.
    let mut p = Peer::new(Config {
        pack_delay: Duration::from_micros(1),
        ..ep_config()
    });
    p.send(0, &loads);
    p.run_for(5_000);
    assert_eq!(p.take().len(), 8);
    assert!(p.ep.counters().packed_frames >= 1);
}

/// Every port announces the role Endpoint and the endpoint's capabilities in its INIT.
#[test]
fn init_announces_role_and_capabilities() {
    use ethlink_protocol::{Capabilities as C, FrameRepr, LinkFrame, Role};
    for caps in [
        ethlink_endpoint::DEFAULT_CAPS,
        C::ATOMICS,
        C::NONE,
        C::RDMA | C::CUT_THROUGH,
    ] {
        let mut ep = Endpoint::new(Config {
            caps,
            ..ep_config()
        })
        .expect("config");
        ep.port_up(Instant::ZERO, 3);
        let mut buf = vec![0; 9216];
        let t = ep
            .poll_transmit(Instant::ZERO, 3, &mut buf)
            .expect("buffer")
            .expect("an INIT");
        let f = FrameRepr::parse_bytes(&buf[..t.len], 9216).expect("frame");
        let LinkFrame::Init(init) = f.link else {
            panic!("not an INIT: {f:?}");
        };
        //= docs/spec/endpoint.md#11-capabilities
        //= type=test
        //# EP-11-1 Every port of an endpoint MUST announce in its INIT and INIT_ECHO the role
        //# Endpoint and the endpoint's capabilities
        assert_eq!(init.role, Role::Endpoint);
        // Bits an endpoint cannot have are not announced.
        assert_eq!(init.caps, caps.without(C::CUT_THROUGH | C::TAGGED));
        //= docs/spec/endpoint.md#12-reset-and-identity
        //= type=test
        //# EP-12-4 Port `p` of stack `s` of GPU `g` MUST use the MAC address `02:00:gg:gg:ss:pp`
        //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
        //= type=test
        //# EP-13-1 (§3) An endpoint's ports MUST be numbered stack by stack: port index `i` is
        //# port `i mod ports_per_stack` of stack
        assert_eq!(f.eth.src.0, [0x02, 0, 0, 0, 1, 1]);
        assert_eq!(
            ethlink_endpoint::port_mac(gpu(0x0312), 2, 1).0,
            [0x02, 0x00, 0x03, 0x12, 0x02, 0x01]
        );
    }
}

// ----- 13. responses the requester cannot use ----------------------------------------------------

/// An unknown response opcode and a defined response with bad fields are counted apart.
#[test]
fn unknown_and_bad_responses_are_counted_apart() {
    let mut p = Peer::new(ep_config());
    // 0xA0: no such response. A STORE_RESP carrying data: bad.
    p.send_raw(
        2,
        &payload(
            EP,
            PEER,
            &[resp(0xA0, 0, 0x1, &[]), resp(0x82, 0, 0x2, &[1, 2, 3, 4])],
        ),
    );
    p.run_for(2_000);
    //= docs/spec/endpoint.md#10-counters
    //= type=test
    //# EP-10-2 A response with an opcode wire.md does not define MUST be discarded and counted in
    //# `unknown_responses`; a response with a defined opcode that breaks its encoding rules MUST
    //# be discarded and counted in `bad_responses`.
    let c = p.ep.counters();
    assert_eq!((c.unknown_responses, c.bad_responses), (1, 1), "{c:?}");
    assert_eq!((c.malformed_txns, c.responses_discarded), (0, 0));
    assert!(p.take().is_empty());
}

/// A response whose frame the endpoint's link flushed (unknown fate) is counted and never sent
/// again, even after the link is back up; a request on the same port is answered as usual.
//= type=test
//# TXN-5-8 A target MUST NOT send again a response whose frame had unknown fate
#[test]
fn a_response_of_unknown_fate_is_not_sent_again() {
    let mut p = Peer::new(ep_config());
    p.drop_data = true;
    p.send_raw(
        0,
        &payload(
            EP,
            PEER,
            &[emit(&TxnRepr::Load {
                tag: 0x77,
                target: target(K1, A),
                len: 32,
            })],
        ),
    );
    // The response never arrives, the endpoint's link replays it until it flushes, and the
    // frame is reported of unknown fate.
    assert!(p.run_until(1_000_000, |p| p.ep.counters().responses_lost == 1));
    p.drop_data = false;
    let until = p.now + 1_000_000;
    assert!(p.run_until(until, |p| p.ep.is_usable(0) && p.link.is_up()));
    p.run_for(100_000);
    assert!(
        with_tag(&p.take(), 0x77).is_empty(),
        "the lost response was sent again"
    );
    assert_eq!(p.ep.counters().responses_lost, 1);
    // The port works: a new load is answered once.
    p.send_raw(
        0,
        &payload(
            EP,
            PEER,
            &[emit(&TxnRepr::Load {
                tag: 0x78,
                target: target(K1, A),
                len: 32,
            })],
        ),
    );
    assert!(p.run_until_rx(100_000, 0x81, 0x78));
    p.run_for(10_000);
    assert_eq!(with_tag(&p.take(), 0x78).len(), 1);
}

/// Responses packed as full as they go: every frame leaves room for an 802.1Q tag, so a switch
/// whose egress tags carries it on a link of the same MFS.
//= docs/spec/endpoint.md#7-packing
//= type=test
//# EP-7-1 [...] The frame it packs MUST leave room for an 802.1Q tag: it is at most the agreed MFS
//# less 4 bytes when the port does not tag.
#[test]
fn packed_frames_leave_room_for_a_tag() {
    // Loads of 172 B: 51 responses of 180 B make a payload of 9188 B, a frame of exactly the MFS
    // less 4; the packer fills frames to that and no further.
    let largest = |len: u16| {
        let cfg = Config {
            pack_delay: Duration::from_micros(50),
            ..ep_config()
        };
        let mut p = Peer::new(cfg);
        p.send_loads(0..120, 60, len);
        p.run_for(200_000);
        assert_eq!(p.take().len(), 120);
        p.largest_payload + 14 + 6 + 4
    };
    assert_eq!(largest(172), 9216 - 4);
    let cfg = Config {
        pack_delay: Duration::from_micros(50),
        ..ep_config()
    };
    let mut p = Peer::new(cfg);
    // 240 loads of 156 B: 56 of their responses (164 B each) after the 8-byte network header
    // would make a frame of exactly 9216 B; with the room for a tag, 55 go in a frame.
    p.send_loads(0..240u16, 60, 156);
    p.run_for(200_000);
    assert_eq!(p.take().len(), 240);
    let mfs = usize::from(p.ep.link(0).expect("port 0").agreed().expect("UP").mfs);
    // Ethernet header 14, link header 6, FCS 4: the frame of the largest payload.
    let frame = p.largest_payload + 14 + 6 + 4;
    assert!(
        frame <= mfs - 4,
        "a packed frame of {frame} B with an MFS of {mfs}"
    );
    assert!(
        frame > mfs - 4 - 164,
        "frames were not packed full: {frame} B"
    );
}

/// The counters by the names endpoint.md Table EP-T3 gives them.
#[test]
fn counters_name_held_expired() {
    let p = Peer::new(ep_config());
    let mut names = Vec::new();
    p.ep.counters().for_each(|n, _, _, _| names.push(n));
    assert!(
        names.contains(&"held_expired") && names.contains(&"backlog_stalls"),
        "{names:?}"
    );
}

// ----- the memory model's granule ----------------------------------------------------------------

/// Two stores of different lengths and alignments over the same granules, then loads of them:
/// every granule of the load holds the bytes of one write, bytes beside an access are not
/// written, and the last write to each byte is what a later load on the path returns.
#[test]
fn every_granule_holds_the_bytes_of_one_write() {
    let mut p = Peer::new(ep_config());
    p.send(
        0,
        &[TxnRepr::Load {
            tag: 0x30,
            target: target(K1, A),
            len: 32,
        }],
    );
    p.run_for(5_000);
    let before = only(&p.take(), 0x30).data.clone();
    // Granules A .. A + 32: a 24-byte store from A + 4 covers three of them partly, then an
    // 8-byte store overwrites the middle granule whole.
    p.send(
        0,
        &[
            TxnRepr::Store {
                tag: 0x31,
                target: target(K1, A + 4),
                data: &[0xAA; 24],
            },
            TxnRepr::Store {
                tag: 0x32,
                target: target(K1, A + 8),
                data: &[0xBB; 8],
            },
            TxnRepr::Load {
                tag: 0x33,
                target: target(K1, A),
                len: 32,
            },
        ],
    );
    p.run_for(5_000);
    let rx = p.take();
    //= docs/spec/transaction.md#4-ordering
    //= type=test
    //# TXN-4-8 Each granule an access covers MUST be read or written as one indivisible event: a
    //# read returns for each granule the bytes of one write (or the initial zeros). An access that
    //# covers several granules MAY be seen torn at granule boundaries, each granule taking effect as
    //# a separate event in any order. Bytes of one granule that an access does not cover are not
    //# written.
    let got = &only(&rx, 0x33).data;
    let mut want = before.clone();
    want[4..28].fill(0xAA);
    want[8..16].fill(0xBB);
    assert_eq!(got.as_slice(), want.as_slice());
    assert_eq!(got[..4], before[..4], "bytes before the store kept");
    assert_eq!(got[28..], before[28..], "bytes after the store kept");
}

/// A request on a response VC and a response on a request VC are discarded unanswered and
/// counted; the same request on VC 0 is served.
#[test]
fn a_transaction_on_a_vc_of_the_other_class_is_discarded() {
    let mut p = Peer::new(ep_config());
    let now = p.now();
    let ld =
        p.ep.issue(now, ls(LsOp::Load { len: 16 }, 0x40))
            .expect("issue");
    p.run_for(1_000);
    let _ = p.take();
    // A STORE on VC 2 and on VC 3, a STORE to the same bytes on VC 0 after them.
    for v in [2u8, 3] {
        p.send(
            v,
            &[TxnRepr::Store {
                tag: 0x50 + u16::from(v),
                target: target(K1, A),
                data: &[0xEE; 8],
            }],
        );
    }
    // The load's answer on VC 0: not taken.
    p.send_raw(0, &payload(EP, PEER, &[resp(0x81, 0, ld, &[5; 16])]));
    p.run_for(2_000);
    //= docs/spec/endpoint.md#3-ports-and-virtual-channels
    //= type=test
    //# EP-3-7 A receiver MUST take a request only on VC 0 or 1 and a response only on VC 2 or 3: a
    //# transaction of either class on a VC of the other, or on a VC above 3, MUST be discarded
    //# unanswered and counted in `wrong_vc_txns`, and the frame's other transactions taken as
    //# usual.
    assert!(
        p.take().is_empty(),
        "a request on a response VC was answered"
    );
    assert!(
        p.completions.is_empty(),
        "a response on VC 0 completed the load"
    );
    assert_eq!(p.ep.counters().wrong_vc_txns, 3);
    assert_eq!(
        p.ep.counters().requests_served,
        0,
        "nothing read whole and answered"
    );
    let mut b = [0u8; 8];
    p.ep.memory().read(Space::Global, A, &mut b).expect("read");
    assert_ne!(b, [0xEE; 8], "a store on a response VC was performed");
    p.send(
        0,
        &[TxnRepr::Store {
            tag: 0x60,
            target: target(K1, A),
            data: &[0xEE; 8],
        }],
    );
    p.send_raw(2, &payload(EP, PEER, &[resp(0x81, 0, ld, &[5; 16])]));
    p.run_for(2_000);
    assert_eq!(only(&p.take(), 0x60).status(), Status::Ok);
    assert_eq!(p.completions.len(), 1, "the load completes on VC 2");
    p.ep.memory().read(Space::Global, A, &mut b).expect("read");
    assert_eq!(b, [0xEE; 8]);
    assert_eq!(p.ep.counters().wrong_vc_txns, 3);
}

/// A region removed while a write into it is being reassembled, and while a read of it is being
/// served: the later segments are refused as the region table then says, each transfer is
/// answered once, and nothing more is written or read.
#[test]
fn a_region_removed_during_rdma_refuses_the_rest_of_the_transfer() {
    let mut p = Peer::new(ep_config());
    let seg_len = p.ep.config().segment;
    let total = 2 * seg_len;
    let before = p.read(BIG, total as usize);
    let first = vec![0x71u8; seg_len as usize];
    p.send(1, &[seg(0x41, BIG, 0, total, &first)]);
    p.run_for(2_000);
    assert!(p.take().is_empty(), "the write is not complete yet");
    p.ep.memory_mut()
        .deregister(Space::Global, BIG)
        .expect("the region is there");
    let second = vec![0x72u8; seg_len as usize];
    p.send(1, &[seg(0x41, BIG, seg_len, total, &second)]);
    p.run_for(2_000);
    // The second segment once more: the write has been answered.
    p.send(1, &[seg(0x41, BIG, seg_len, total, &second)]);
    p.run_for(2_000);
    let rx = p.take();
    //= docs/spec/endpoint.md#6-rdma-engine
    //= type=test
    //# EP-6-20 A target MUST check each later segment of a write it is reassembling against the
    //# region table as it is then (EP-2-3, EP-2-4, EP-2-12). When the region has been removed or
    //# changed, the target MUST write nothing of that segment, answer the write once with the
    //# status the check gives, and drop its later segments as those of a write refused (EP-6-4).
    assert_eq!(rx.len(), 1, "{rx:?}");
    check_prefix(&rx[0], 0x90, Status::OutOfRange, 4, 0);
    let after = p.read(BIG, total as usize);
    assert_eq!(
        &after[..seg_len as usize],
        &first[..],
        "the first segment stays written"
    );
    assert_eq!(
        &after[seg_len as usize..],
        &before[seg_len as usize..],
        "nothing of the second segment is written"
    );
    assert_eq!(p.ep.counters().reassembly_now, 0);
}

/// A long RDMA write whose first segment is answered BUSY: the attempt stops, no more of its
/// segments go out, and the write is sent again whole under a new tag after the back-off.
#[test]
fn an_rdma_write_attempt_stops_at_its_first_busy() {
    let mut p = Peer::new(ep_config());
    let seg_len = p.ep.config().segment;
    let segments = 64u32;
    let len = segments * seg_len;
    p.ep.memory_mut()
        .write(Space::Global, 0x10_0000, &pattern(71, len as usize))
        .expect("local data");
    let now = p.now();
    let desc = RdmaDesc {
        dir: RdmaDir::Write,
        local_space: Space::Global,
        local_addr: 0x10_0000,
        remote: Remote {
            gpu: gpu(PEER),
            space: Space::Global,
            key: 0x77,
            addr: 0x900_0000,
        },
        len: u64::from(len),
    };
    p.ep.post(now, desc).expect("post");
    let first = next_request(&mut p, 2_000, 0x10).expect("a segment");
    let total = len.to_be_bytes();
    let busy = raw(
        0x90,
        0x07,
        first.tag,
        4,
        &[total[0], total[1], total[2], total[3], 0, 0, 0, 0],
        &[],
    );
    p.send_raw(2, &payload(EP, PEER, &[busy]));
    // Until the retry: every segment of the first attempt that went out.
    let end = p.now + 50_000;
    p.run_until(end, |p| {
        p.rx.iter().any(|t| t.opcode == 0x10 && t.tag != first.tag)
    });
    let rx = p.take();
    let old = 1 + rx
        .iter()
        .filter(|t| t.opcode == 0x10 && t.tag == first.tag)
        .count();
    //= docs/spec/endpoint.md#9-ports-going-down-deadlines-and-busy
    //= type=test
    //# EP-9-9 An endpoint MUST build no further segment of an RDMA write attempt once a segment of
    //# it is answered BUSY: the segments already queued for a link MAY still go out
    // What was queued when the BUSY came: the endpoint's queue of the port and VC and the link's
    // transmit queue, one segment each per `segment` bytes, and the segment on the wire.
    let cfg = p.ep.config();
    let queued = (cfg.port_queue + cfg.link.tx_queue_bytes) / seg_len + 1;
    assert!(
        old as u32 <= queued && old < segments as usize,
        "{old} of {segments} segments of the attempt went out, {queued} could be queued"
    );
    assert!(
        rx.iter().any(|t| t.opcode == 0x10 && t.tag != first.tag),
        "the write is sent again under a new tag"
    );
}

/// An RDMA write longer than `write_chunk` goes as writes of `write_chunk` bytes, each under a
/// tag of its own at its offset of both ranges, and completes once, after all of them, with the
/// first status that was not OK. A write longer than the target's `write_chunk` is refused
/// UNSUPPORTED.
#[test]
fn a_write_longer_than_write_chunk_goes_as_chunks() {
    let mut cfg = ep_config();
    let seg = cfg.segment;
    cfg.write_chunk = 2 * seg;
    let chunk = cfg.write_chunk;
    let mut p = Peer::new(cfg);
    let len: u32 = 2 * chunk + seg / 2;
    let data = pattern(52, len as usize);
    p.ep.memory_mut()
        .write(Space::Global, 0x1000, &data)
        .expect("local data");
    let now = p.now();
    let desc = RdmaDesc {
        dir: RdmaDir::Write,
        local_space: Space::Global,
        local_addr: 0x1000,
        remote: Remote {
            gpu: gpu(PEER),
            space: Space::Global,
            key: 0xCAFE,
            addr: 0x9_0000,
        },
        len: u64::from(len),
    };
    let id = p.ep.post(now, desc).expect("post");
    assert_eq!(
        p.ep.rdma_outstanding(),
        1,
        "one descriptor, whatever its chunks"
    );
    p.run_for(5_000);
    let rx = p.take();
    // By tag: (address, total, bytes placed at their offsets).
    let mut writes: BTreeMap<u16, (u64, u32, Vec<u8>)> = BTreeMap::new();
    for t in rx.iter().filter(|t| t.opcode == 0x10) {
        let (addr, total, off) = (t.dword(4), t.word(16), t.word(12) as usize);
        let w = writes
            .entry(t.tag)
            .or_insert_with(|| (addr, total, vec![0; total as usize]));
        assert_eq!((w.0, w.1), (addr, total), "one write per tag");
        w.2[off..off + t.data.len()].copy_from_slice(&t.data);
    }
    //= docs/spec/endpoint.md#6-rdma-engine
    //= type=test
    //# EP-6-2 An RDMA write of length L MUST be sent as RDMA_WRITE segments with one tag, each
    //# covering offset .. offset + dlen of the write with offset a multiple of segment and dlen =
    //# min(segment, L - offset), together covering the write exactly once per attempt. An RDMA
    //# write longer than write_chunk MUST be sent as writes of write_chunk bytes (the last
    //# shorter), each at its own offset of the local and remote ranges, with a tag and a completion
    //# of its own, one after another (no segment of a chunk before every segment of the chunk
    //# before it has been sent once), and complete once every one of them has: OK when all were,
    //# otherwise with the first status of one that was not (the chunks not yet started are then not
    //# sent). (1.3: 1.2 sent a write of up to 4 GiB under one tag, so a target's reassembly record
    //# needed a block map of up to 2^24 bits, and a variable-size allocator for them.)
    assert_eq!(writes.len(), 3, "{writes:?}");
    // One chunk after another on the wire: the addresses of the segments never go back.
    let addrs: Vec<u64> = rx
        .iter()
        .filter(|t| t.opcode == 0x10)
        .map(|t| t.dword(4))
        .collect();
    assert!(addrs.windows(2).all(|w| w[0] <= w[1]), "{addrs:x?}");
    //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
    //= type=test
    //# EP-13-2 (§5, §6) Load-store operations MUST take tags in `0 .. lsu_tags` (EP-5-1) and RDMA
    //# writes and read chunks tags in `lsu_tags .. lsu_tags + rdma_tags`, in any order of
    //# allocation;
    let lsu = p.ep.config().lsu_tags;
    let rdma = p.ep.config().rdma_tags;
    assert!(writes.keys().all(|&t| (lsu..lsu + rdma).contains(&t)));
    let mut by_addr: Vec<_> = writes.iter().map(|(&t, w)| (w.0, t, w.1)).collect();
    by_addr.sort_unstable();
    for (k, &(addr, _, total)) in by_addr.iter().enumerate() {
        let off = k as u32 * chunk;
        assert_eq!(addr, 0x9_0000 + u64::from(off));
        assert_eq!(total, chunk.min(len - off));
        let w = &writes[&by_addr[k].1];
        assert_eq!(w.2, data[off as usize..(off + total) as usize]);
    }
    // The middle chunk refused, the others OK: one completion, after the last, with its status.
    let answer = |tag: u16, status: u8, total: u32| {
        let t = total.to_be_bytes();
        raw(
            0x90,
            status,
            tag,
            4,
            &[t[0], t[1], t[2], t[3], 0, 0, 0, 0],
            &[],
        )
    };
    for (k, &(_, tag, total)) in by_addr.iter().enumerate() {
        let status = if k == 1 { 0x01 } else { 0x00 };
        p.send_raw(2, &payload(EP, PEER, &[answer(tag, status, total)]));
        p.run_for(1_000);
        if k < 2 {
            assert!(p.completions.is_empty(), "completed before chunk {k} was");
        }
    }
    let c = p.completions.pop().expect("the write's completion");
    assert_eq!(
        (c.id, c.status),
        (
            OpId::Rdma(id),
            CompletionStatus::Remote(Status::AccessViolation)
        )
    );
    assert!(p.completions.is_empty());
    assert_eq!(p.ep.rdma_outstanding(), 0);

    // As a target: a write of more than `write_chunk` bytes is refused at its first segment.
    let big = chunk + seg;
    p.send(1, &[self::seg(0x61, BIG, 0, big, &vec![1; seg as usize])]);
    p.run_for(2_000);
    //= docs/spec/endpoint.md#6-rdma-engine
    //= type=test
    //# EP-6-13 A target MUST answer RDMA_COMPLETION UNSUPPORTED, at the write's first segment as
    //# EP-6-4 A target MUST check the whole range of a write (EP-2-3, EP-2-4: address, total
    //# length, key, write permission) when it receives the first segment of the write (whichever
    //# arrives first), and on refusal write none of it and answer one RDMA_COMPLETION with the
    //# status. The refusal is remembered in a record of the same pool as the writes being
    //# reassembled (max_reassemblies, EP-6-14), for op_timeout after the write's last segment, and
    //# the write's later segments are dropped unanswered while it lasts (duplicate_segments). When
    //# the pool is full, the refusal is not remembered: every segment is checked and answered on
    //# its own, so a refused write MAY draw several completions with one status, and its requester
    //# takes the first (EP-9-4 discards the others). (1.3: 1.2 did not say where refusals were
    //# kept, so a requester could make a target remember refusals without bound.)
    let rx = p.take();
    check_prefix(only(&rx, 0x61), 0x90, Status::Unsupported, 4, 0);
    // A write in segments of 512 bytes, not the target's own `segment`: taken.
    //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
    //= type=test
    //# EP-13-3 (§6) The segment size of an RDMA write is the requester's `segment` (Table EP-T1);
    //# a target MUST accept any segment size that keeps EP-6-3's alignment, and sends the segments
    //# of
    let parts: Vec<Vec<u8>> = (0..4u8).map(|k| vec![0x80 | k; 512]).collect();
    for (k, d) in parts.iter().enumerate().rev() {
        p.send(1, &[self::seg(0x62, BIG, 512 * k as u32, 2048, d)]);
    }
    p.run_for(2_000);
    check_prefix(only(&p.take(), 0x62), 0x90, Status::Ok, 4, 0);
    assert_eq!(p.read(BIG, 2048), parts.concat());
}

/// A FENCE request issued by the requester goes on VC 0 with a load-store tag and completes on
/// its FENCE_RESP; its completions are counted under their own kind.
#[test]
fn a_fence_request_completes_on_its_fence_resp() {
    let mut p = Peer::new(ep_config());
    let now = p.now();
    let tag = p.ep.issue(now, ls(LsOp::Fence, 0)).expect("issue");
    p.run_for(1_000);
    let rx = p.take();
    let req = only(&rx, tag);
    //= docs/spec/transaction.md#2-operations
    //= type=test
    //# TXN-2-8 A target MUST answer every request it receives with exactly one response
    assert_eq!((req.vc, req.opcode, req.dst), (0, 0x06, PEER));
    assert!(p.completions.is_empty());
    p.send_raw(2, &payload(EP, PEER, &[resp(0x86, 0, tag, &[])]));
    p.run_for(1_000);
    let c = p.completions.pop().expect("the FENCE's completion");
    assert_eq!(
        (c.id, c.kind, c.status),
        (OpId::Ls(tag), OpKind::RemoteFence, CompletionStatus::Ok)
    );
    assert_eq!(p.ep.counters().completed_with(OpKind::RemoteFence, 0), 1);
}

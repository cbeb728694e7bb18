//! Scenario tests of one EthLink link: two ends on a simulated wire, driven through scripted
//! faults, each checking requirements of `docs/spec/link.md` (and the receiver actions of
//! `docs/spec/wire.md` §7).
//!
//! The cases follow two families of conformance test:
//!
//! - LLR and CBFC cases in the style of a scale-up switch test standard: a NACK after exactly one
//!   lost frame, FLUSH after the replay limit, the cap on outstanding frames, long cables at line
//!   rate, frame sizes at the bounds, credit leaks, receivers that drain at 0, 50 and 100 % and
//!   per-VC isolation;
//! - data link layer cases in the style of a PCIe compliance suite: retransmission on NACK, the
//!   replay timer, the replay-count rollover, replay order, corrupted control frames, undefined
//!   encodings, an acknowledgement with an impossible sequence number, duplicates and bring-up.
//!
//! Most cases run on [`Bench`], a small discrete-event wire defined here that keeps every event
//! and every frame so that a test can look at both; cases about rates use
//! [`ethlink_link::harness::Pair`]. Every case is deterministic: faults are scripted, never drawn.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use ethlink_link::harness::{FrameInfo, Pair, Scenario, Traffic, Verdict, Wire};
use ethlink_link::{
    Agreed, Config, Counters, DownReason, Event, Instant, Link, LostReason, Notice, Release,
    RxState, Stomped, SubmitError, TxState,
};
use ethlink_protocol::{
    Capabilities, CreditRepr, DataFlags, DataHeader, EthernetRepr, FLAG_REPLAY, FrameKind,
    FrameRepr, InitRepr, LinkFrame, MacAddr, Role, Seq, Vc, VlanTag, fcs,
};

// ----- the bench: two ends, one wire each way ---------------------------------------------------

const MAC_A: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 1]);
const MAC_B: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 2]);
/// Bytes of an untagged DATA frame that are not payload: Ethernet 14, link header 6, FCS 4.
const DATA_OVERHEAD: usize = 24;
/// Steps after which a bench run is considered stuck.
const STEP_LIMIT: u64 = 5_000_000;

/// What the scripted wire does with one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Deliver,
    Drop,
    Corrupt,
    Duplicate,
}

/// One frame put on a wire.
#[derive(Debug, Clone)]
struct Sent {
    /// 0 for A to B, 1 for B to A.
    dir: usize,
    at_ns: u64,
    kind: FrameKind,
    /// For DATA: VC, sequence number and whether it is a retransmission.
    data: Option<(u8, u32, bool)>,
    bytes: Vec<u8>,
    fate: Fate,
    /// Frames in the sender's replay buffer once the frame was written.
    replay_after: usize,
}

/// An event of one end, owned.
#[derive(Debug, Clone, PartialEq)]
enum Ev {
    Up(Agreed),
    Down(DownReason),
    Notice(Notice),
    Delivered {
        vc: u8,
        seq: u32,
        payload: Vec<u8>,
    },
    Lost {
        vc: u8,
        reason: LostReason,
        payload: Vec<u8>,
    },
}

type BenchFilter = Box<dyn FnMut(&Sent) -> Fate>;

/// Two link ends joined by a full-duplex wire with a line rate and a propagation delay. Frames are
/// delivered whole, in order, one propagation delay after their last bit left; a scripted filter
/// decides the fate of each. The upper layer of each end releases every delivered frame at once,
/// except on the VCs it is told to hold.
struct Bench {
    ends: [Link; 2],
    now_ps: u64,
    rate_gbps: f64,
    prop_ps: u64,
    busy: [u64; 2],
    sending: [bool; 2],
    flights: [VecDeque<(u64, Vec<u8>)>; 2],
    filter: Option<BenchFilter>,
    trace: Vec<Sent>,
    events: [Vec<(u64, Ev)>; 2],
    hold: [[bool; 8]; 2],
    held: [Vec<Release>; 2],
    tx_states: [Vec<TxState>; 2],
    rx_states: [Vec<RxState>; 2],
    steps: u64,
}

/// The grant these tests count with: 32 KiB per VC, small enough that the credit tests run
/// into it quickly (the default, Table LINK-T7, is 80 KiB).
const TEST_GRANT: [u32; 8] = [512, 512, 512, 512, 0, 0, 0, 0];

fn config_a() -> Config {
    Config {
        mac: MAC_A,
        nonce_seed: 1,
        rx_credits: TEST_GRANT,
        ..Config::default()
    }
}

fn config_b() -> Config {
    Config {
        mac: MAC_B,
        nonce_seed: 2,
        rx_credits: TEST_GRANT,
        ..Config::default()
    }
}

fn vc(v: u8) -> Vc {
    Vc::new(v).unwrap()
}

impl Bench {
    /// Both ends on a 400 Gb/s wire of 5 m, physical link up at time 0.
    fn new(a: Config, b: Config) -> Bench {
        Bench::with_wire(a, b, 400.0, 25)
    }

    fn with_wire(a: Config, b: Config, rate_gbps: f64, prop_ns: u64) -> Bench {
        let mut bench = Bench {
            ends: [Link::new(a).unwrap(), Link::new(b).unwrap()],
            now_ps: 0,
            rate_gbps,
            prop_ps: prop_ns * 1000,
            busy: [0; 2],
            sending: [false; 2],
            flights: [VecDeque::new(), VecDeque::new()],
            filter: None,
            trace: Vec::new(),
            events: [Vec::new(), Vec::new()],
            hold: [[false; 8]; 2],
            held: [Vec::new(), Vec::new()],
            tx_states: [Vec::new(), Vec::new()],
            rx_states: [Vec::new(), Vec::new()],
            steps: 0,
        };
        for e in 0..2 {
            bench.ends[e].physical_up(Instant::ZERO);
            bench.after(e);
        }
        bench
    }

    /// A bench whose link is UP at both ends.
    fn up(a: Config, b: Config) -> Bench {
        let mut bench = Bench::new(a, b);
        bench.bring_up();
        bench
    }

    fn bring_up(&mut self) {
        let ok = self.run_until(|b| b.ends[0].is_up() && b.ends[1].is_up(), 100_000);
        assert!(ok, "the link did not come up");
    }

    fn set_filter(&mut self, f: impl FnMut(&Sent) -> Fate + 'static) {
        self.filter = Some(Box::new(f));
    }

    fn now(&self) -> Instant {
        Instant::from_nanos(self.now_ps / 1000)
    }

    fn now_ns(&self) -> u64 {
        self.now_ps / 1000
    }

    fn end(&self, e: usize) -> &Link {
        &self.ends[e]
    }

    fn submit(&mut self, e: usize, v: u8, payload: &[u8]) {
        self.ends[e].submit(vc(v), payload).unwrap();
        self.sending[e] = true;
    }

    /// Records the states of end `e`, then takes its events as the upper layer would.
    fn after(&mut self, e: usize) {
        let tx = self.ends[e].tx_state();
        if self.tx_states[e].last() != Some(&tx) {
            self.tx_states[e].push(tx);
        }
        let rx = self.ends[e].rx_state();
        if self.rx_states[e].last() != Some(&rx) {
            self.rx_states[e].push(rx);
        }
        // Whatever the input, the end may have a frame to send at once.
        self.sending[e] = true;
        let now = self.now_ns();
        let mut releases = Vec::new();
        while let Some(ev) = self.ends[e].poll_event() {
            let owned = match ev {
                Event::LinkUp(a) => Ev::Up(a),
                Event::LinkDown(r) => Ev::Down(r),
                Event::Notice(n) => Ev::Notice(n),
                Event::Delivered {
                    vc,
                    seq,
                    payload,
                    release,
                } => {
                    releases.push(release);
                    Ev::Delivered {
                        vc: vc.value(),
                        seq: seq.value(),
                        payload: payload.to_vec(),
                    }
                }
                Event::Lost {
                    vc,
                    reason,
                    payload,
                } => Ev::Lost {
                    vc: vc.value(),
                    reason,
                    payload: payload.to_vec(),
                },
            };
            self.events[e].push((now, owned));
        }
        for r in releases {
            if self.hold[e][r.vc().index()] {
                self.held[e].push(r);
            } else {
                self.ends[e].release(r).unwrap();
            }
        }
    }

    /// The upper layer of end `e` stops draining VC `v` (its frames stay in the buffer).
    fn hold(&mut self, e: usize, v: u8) {
        self.hold[e][usize::from(v)] = true;
    }

    /// The upper layer of end `e` drains VC `v` again, held frames first.
    fn release_held(&mut self, e: usize, v: u8) {
        self.hold[e][usize::from(v)] = false;
        let held = std::mem::take(&mut self.held[e]);
        for r in held {
            if r.vc().value() == v {
                self.ends[e].release(r).unwrap();
            } else {
                self.held[e].push(r);
            }
        }
    }

    fn ser_ps(&self, len: usize) -> u64 {
        (((len + 20) * 8) as f64 * 1000.0 / self.rate_gbps).round() as u64
    }

    fn next_time(&self) -> Option<u64> {
        let mut t = u64::MAX;
        for e in 0..2 {
            if let Some((at, _)) = self.flights[e].front() {
                t = t.min(*at);
            }
            if self.sending[e] {
                t = t.min(self.busy[e].max(self.now_ps + 1));
            }
            if let Some(to) = self.ends[e].poll_timeout() {
                let ps = to.as_nanos() * 1000;
                let ps = if ps <= self.now_ps {
                    self.busy[e].max(self.now_ps + 1)
                } else {
                    ps
                };
                t = t.min(ps);
            }
        }
        (t != u64::MAX).then_some(t)
    }

    /// Advances to the next event (not beyond `limit_ns`) and processes everything due.
    fn step(&mut self, limit_ns: u64) -> bool {
        self.steps += 1;
        assert!(
            self.steps < STEP_LIMIT,
            "bench stuck at {} ns",
            self.now_ns()
        );
        let Some(t) = self.next_time() else {
            return false;
        };
        if t > limit_ns * 1000 {
            return false;
        }
        self.now_ps = self.now_ps.max(t);
        let now = self.now();
        for d in 0..2 {
            while self.flights[d]
                .front()
                .is_some_and(|(at, _)| *at <= self.now_ps)
            {
                let (_, bytes) = self.flights[d].pop_front().unwrap();
                self.ends[1 - d].handle_frame(now, &bytes);
                self.after(1 - d);
            }
        }
        for e in 0..2 {
            if self.ends[e].poll_timeout().is_some_and(|to| to <= now) {
                self.ends[e].handle_timeout(now);
                self.after(e);
            }
        }
        for e in 0..2 {
            if self.busy[e] <= self.now_ps {
                self.transmit(e);
            }
        }
        true
    }

    fn transmit(&mut self, e: usize) {
        let now = self.now();
        let mut buf = vec![0u8; 9216];
        let t = self.ends[e].poll_transmit(now, &mut buf).unwrap();
        self.after(e);
        let Some(t) = t else {
            self.sending[e] = false;
            return;
        };
        buf.truncate(t.len);
        let mut sent = Sent {
            dir: e,
            at_ns: self.now_ns(),
            kind: t.kind,
            data: t.data.map(|(v, s, r)| (v.value(), s.value(), r)),
            bytes: buf,
            fate: Fate::Deliver,
            replay_after: self.ends[e].replay_frames(),
        };
        sent.fate = match self.filter.as_mut() {
            Some(f) => f(&sent),
            None => Fate::Deliver,
        };
        // LINK-5-7: never a CC while the replay buffer holds a frame (checked on every bench).
        assert!(
            sent.kind != FrameKind::CreditResync || sent.replay_after == 0,
            "end {e} sent a CC with {} frames in its replay buffer",
            sent.replay_after
        );
        let end = self.now_ps + self.ser_ps(t.len);
        self.busy[e] = end;
        self.sending[e] = true;
        let arrive = end + self.prop_ps;
        match sent.fate {
            Fate::Deliver => self.flights[e].push_back((arrive, sent.bytes.clone())),
            Fate::Drop => {}
            Fate::Corrupt => {
                let mut bad = sent.bytes.clone();
                let at = bad.len() / 2;
                bad[at] ^= 0x10;
                self.flights[e].push_back((arrive, bad));
            }
            Fate::Duplicate => {
                self.flights[e].push_back((arrive, sent.bytes.clone()));
                self.flights[e].push_back((arrive, sent.bytes.clone()));
            }
        }
        self.trace.push(sent);
    }

    /// Runs until `cond` holds (true) or `limit_ns` passes (false).
    fn run_until(&mut self, mut cond: impl FnMut(&Bench) -> bool, limit_ns: u64) -> bool {
        loop {
            if cond(self) {
                return true;
            }
            if !self.step(limit_ns) {
                return cond(self);
            }
        }
    }

    /// Runs for `ns` of simulated time.
    fn run_for(&mut self, ns: u64) {
        let limit = self.now_ns() + ns;
        while self.step(limit) {}
        self.now_ps = self.now_ps.max(limit * 1000);
    }

    /// Runs until both ends have nothing queued or unacknowledged and the wires are empty.
    fn settle(&mut self, limit_ns: u64) {
        let ok = self.run_until(
            |b| {
                b.ends.iter().all(Link::is_idle)
                    && b.flights.iter().all(VecDeque::is_empty)
                    && b.ends.iter().all(Link::is_up)
            },
            limit_ns,
        );
        assert!(ok, "the link did not settle by {limit_ns} ns");
    }

    /// Payloads end `e` delivered, with VC and sequence number.
    fn delivered(&self, e: usize) -> Vec<(u8, u32, Vec<u8>)> {
        self.events[e]
            .iter()
            .filter_map(|(_, ev)| match ev {
                Ev::Delivered { vc, seq, payload } => Some((*vc, *seq, payload.clone())),
                _ => None,
            })
            .collect()
    }

    /// Tags of the payloads end `e` delivered on VC `v`.
    fn delivered_tags(&self, e: usize, v: u8) -> Vec<u32> {
        self.delivered(e)
            .iter()
            .filter(|(c, _, _)| *c == v)
            .map(|(_, _, p)| tag_of(p))
            .collect()
    }

    /// The DATA frames put on wire `dir`: (VC, sequence number, retransmission, payload tag).
    fn data_sent(&self, dir: usize) -> Vec<(u8, u32, bool, u32)> {
        self.trace
            .iter()
            .filter(|s| s.dir == dir && s.kind == FrameKind::Data)
            .map(|s| {
                let (v, q, r) = s.data.unwrap();
                (v, q, r, tag_of(data_payload(&s.bytes)))
            })
            .collect()
    }

    /// The control frames of one kind put on wire `dir`, parsed.
    fn control_sent(&self, dir: usize, kind: FrameKind) -> Vec<(u64, Fate, LinkFrame<'_>)> {
        self.trace
            .iter()
            .filter(|s| s.dir == dir && s.kind == kind)
            .map(|s| {
                let repr = FrameRepr::parse_bytes(&s.bytes, 9216).unwrap();
                (s.at_ns, s.fate, repr.link)
            })
            .collect()
    }

    /// Hands a hand-crafted frame to end `e` now and takes its events.
    fn inject(&mut self, e: usize, bytes: &[u8]) {
        let now = self.now();
        self.ends[e].handle_frame(now, bytes);
        self.after(e);
    }
}

// ----- frames and payloads -----------------------------------------------------------------------

/// A DATA payload of `len` bytes (network header and opaque transaction bytes) whose bytes 8..12
/// carry `tag`. The link layer treats everything after the network header as opaque.
fn payload_len(len: usize, tag: u32) -> Vec<u8> {
    assert!(len >= 12);
    let mut p = vec![0u8; len];
    p[0..2].copy_from_slice(&1u16.to_be_bytes()); // destination GPU
    p[2..4].copy_from_slice(&0u16.to_be_bytes()); // source GPU
    p[4] = 0; // path
    p[5] = 1; // transaction count
    p[6..8].copy_from_slice(&u16::try_from(len - 8).unwrap().to_be_bytes());
    p[8..12].copy_from_slice(&tag.to_be_bytes());
    let mut x = u64::from(tag).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for b in &mut p[12..] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    p
}

/// The payload that makes an untagged DATA frame of exactly `frame_len` bytes (FCS included).
fn payload_for_frame(frame_len: usize, tag: u32) -> Vec<u8> {
    payload_len(frame_len - DATA_OVERHEAD, tag)
}

fn tag_of(payload: &[u8]) -> u32 {
    u32::from_be_bytes(payload[8..12].try_into().unwrap())
}

/// The payload of a DATA frame as it is on the wire.
fn data_payload(frame: &[u8]) -> &[u8] {
    let body = &frame[14 + 6..];
    let plen = usize::from(u16::from_be_bytes([body[6], body[7]]));
    &body[..8 + plen]
}

fn eth_from(src: MacAddr, dst: MacAddr) -> EthernetRepr {
    EthernetRepr {
        dst,
        src,
        vlan: None,
    }
}

/// Emits a frame from B to A (the MACs do not matter to a receiver, WIRE-2.3-2).
fn emit(link: LinkFrame<'_>) -> Vec<u8> {
    let repr = FrameRepr {
        eth: eth_from(MAC_B, MAC_A),
        link,
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    let n = repr.emit(&mut buf).unwrap();
    buf.truncate(n);
    buf
}

fn data_frame(seq: u32, v: u8, replay: bool, payload: &[u8]) -> Vec<u8> {
    data_frame_flags(seq, v, replay, false, payload)
}

fn data_frame_flags(seq: u32, v: u8, replay: bool, ack_req: bool, payload: &[u8]) -> Vec<u8> {
    emit(LinkFrame::Data {
        header: DataHeader {
            vc: vc(v),
            flags: DataFlags { replay, ack_req },
            seq: Seq::new(seq),
        },
        payload,
    })
}

/// Recomputes the FCS of an edited frame.
fn refcs(frame: &mut [u8]) {
    let n = frame.len() - fcs::FCS_LEN;
    let sum = fcs::fcs_bytes(&frame[..n]);
    frame[n..].copy_from_slice(&sum);
}

fn init_of(cfg: &Config, nonce: u32) -> InitRepr {
    let mut credits = [0u32; 8];
    credits[..usize::from(cfg.vcs)].copy_from_slice(&cfg.rx_credits[..usize::from(cfg.vcs)]);
    InitRepr {
        nonce,
        vcs: cfg.vcs,
        credit_size: cfg.credit_size,
        mfs: cfg.mfs,
        window: cfg.llr_window,
        credits,
        credit_overhead: 0,
        caps: Capabilities::NONE,
        role: Role::LinkEnd,
    }
}

/// Frames a lone end writes at `now`, parsed, until it has nothing more to say.
fn drain_tx(link: &mut Link, now: Instant) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 9216];
    while let Some(t) = link.poll_transmit(now, &mut buf).unwrap() {
        out.push(buf[..t.len].to_vec());
        assert!(out.len() < 1000, "the end does not stop sending");
    }
    out
}

fn kinds(frames: &[Vec<u8>]) -> Vec<FrameKind> {
    frames
        .iter()
        .map(|f| FrameRepr::parse_bytes(f, 9216).unwrap().link.kind())
        .collect()
}

fn events_of(link: &mut Link) -> Vec<Ev> {
    let mut out = Vec::new();
    while let Some(ev) = link.poll_event() {
        out.push(match ev {
            Event::LinkUp(a) => Ev::Up(a),
            Event::LinkDown(r) => Ev::Down(r),
            Event::Notice(n) => Ev::Notice(n),
            Event::Delivered {
                vc, seq, payload, ..
            } => Ev::Delivered {
                vc: vc.value(),
                seq: seq.value(),
                payload: payload.to_vec(),
            },
            Event::Lost {
                vc,
                reason,
                payload,
            } => Ev::Lost {
                vc: vc.value(),
                reason,
                payload: payload.to_vec(),
            },
        });
    }
    out
}

/// A lone end brought UP by hand-crafted INIT and INIT_ECHO frames from a peer whose INIT carries
/// `peer_nonce`. Returns the end, the time, and the frames it wrote on the way.
fn lone_end_up(cfg: Config, peer: &Config, peer_nonce: u32) -> (Link, Instant) {
    let mut link = Link::new(cfg).unwrap();
    let t = Instant::from_nanos(10);
    link.physical_up(t);
    let sent = drain_tx(&mut link, t);
    assert_eq!(kinds(&sent), vec![FrameKind::Init]);
    link.handle_frame(t, &emit(LinkFrame::Init(init_of(peer, peer_nonce))));
    let own = link.nonce();
    link.handle_frame(
        t,
        &emit(LinkFrame::InitEcho {
            echo_nonce: own,
            init: init_of(peer, peer_nonce),
        }),
    );
    assert!(link.is_up());
    drain_tx(&mut link, t);
    events_of(&mut link);
    (link, t)
}

fn assert_in_order(tags: &[u32], expected: impl IntoIterator<Item = u32>) {
    let expected: Vec<u32> = expected.into_iter().collect();
    assert_eq!(
        tags,
        expected.as_slice(),
        "delivered tags differ from submitted"
    );
}

/// Counters that differ from `before` only in the fields `edit` changes.
fn counters_after(before: &Counters, edit: impl FnOnce(&mut Counters)) -> Counters {
    let mut c = before.clone();
    edit(&mut c);
    c
}

// ----- LLR in the style of a switch test standard ------------------------------------------------

/// One DATA frame vanishes: the receiver sees the gap, sends exactly one NACK carrying the last
/// good sequence number, the transmitter replays from the lost frame and everything arrives once,
/// in order; the receiver goes SEND_ACKS -> SEND_NACK -> NACK_SENT -> SEND_ACKS.
//= type=test
//# LINK-4-3 A damaged frame [...] or a DATA frame whose sequence number is ahead of the expected
//# one (a gap) MUST make an RX in SEND_ACKS send one NACK carrying the last good sequence number
//# and enter NACK_SENT. The frame MUST be discarded.
//# LINK-4-7 In NACK_SENT the RX MUST discard every DATA frame but the expected one and MUST NOT
//# send another NACK except as LINK-4-8 says
//# LINK-4-1 A DATA frame whose sequence number is the expected one MUST be accepted: delivered to
//# the upper layer once, the expected number advanced by one [...] In NACK_SENT, accepting it
//# returns the RX to SEND_ACKS.
//# LINK-3-5 On a NACK carrying *S* the TX MUST, after acknowledging up to *S*, retransmit every
//# frame of the replay buffer in sequence order (go-back-N), with the REPLAY flag set, before any
//# new frame.
#[test]
fn llr_nack_after_exactly_one_dropped_frame() {
    let mut bench = Bench::up(config_a(), config_b());
    let dropped = Rc::new(Cell::new(false));
    let d = dropped.clone();
    bench.set_filter(move |s| match s.data {
        Some((_, 5, false)) if s.dir == 0 && !d.get() => {
            d.set(true);
            Fate::Drop
        }
        _ => Fate::Deliver,
    });
    for i in 0..20 {
        bench.submit(0, 0, &payload_for_frame(1024, i));
    }
    bench.settle(200_000);
    assert!(dropped.get());

    let b = bench.end(1).counters();
    let a = bench.end(0).counters();
    assert_eq!(b.nacks_sent, 1, "exactly one NACK");
    assert_eq!(a.nacks_received, 1);
    assert_eq!(a.replays_by_nack, 1);
    assert_eq!(a.replay_timeouts, 0);
    assert_eq!(a.flushes, 0);
    assert!(
        b.discarded_after_nack >= 1,
        "the frame after the gap is discarded"
    );
    let nacks = bench.control_sent(1, FrameKind::Nack);
    assert_eq!(nacks.len(), 1);
    assert_eq!(nacks[0].2, LinkFrame::Nack(Seq::new(4)), "last good is 4");

    // The replay starts at the lost frame and the first replayed frames are in sequence order.
    let sent = bench.data_sent(0);
    let first_replay = sent.iter().position(|s| s.2).unwrap();
    assert_eq!(sent[first_replay].1, 5);
    let replayed: Vec<u32> = sent.iter().filter(|s| s.2).map(|s| s.1).collect();
    assert_eq!(replayed, (5..5 + replayed.len() as u32).collect::<Vec<_>>());
    assert_eq!(a.frames_replayed, replayed.len() as u64);

    assert_in_order(&bench.delivered_tags(1, 0), 0..20);
    let seqs: Vec<u32> = bench.delivered(1).iter().map(|d| d.1).collect();
    assert_eq!(seqs, (0..20).collect::<Vec<_>>());
    assert_eq!(b.rx_frames[0], 20);
    assert_eq!(
        bench.rx_states[1],
        vec![
            RxState::Off,
            RxState::SendAcks,
            RxState::SendNack,
            RxState::NackSent,
            RxState::SendAcks
        ]
    );
    assert_eq!(bench.end(1).rx_state(), RxState::SendAcks);
}

/// Before any DATA frame has been accepted, a NACK carries 0xFFFFF, and the TX accepts it as
/// acknowledging nothing and replays from sequence number 0.
//= type=test
//# WIRE-4.2-1 Before any DATA frame has been received after link initialisation, the "last good"
//# sequence number is the value before the first sequence number, that is `(first - 1) mod 2^20`.
//# ACK and NACK frames sent in that state MUST carry that value.
//# LINK-2-5 On entering UP an end MUST reset its TX sequence number and its RX expected sequence
//# number to 0, its RX last good sequence number to 0xFFFFF (WIRE-4.2-1)
//# LINK-3-1 Every DATA frame MUST carry the next TX sequence number, which advances by one
//# (modulo 2^20) for every new frame
#[test]
fn llr_nack_before_any_data_carries_fffff() {
    let mut bench = Bench::up(config_a(), config_b());
    assert_eq!(bench.end(0).next_seq(), Seq::new(0));
    assert_eq!(bench.end(1).expected_seq(), Seq::new(0));
    let once = Rc::new(Cell::new(false));
    let o = once.clone();
    bench.set_filter(move |s| match s.data {
        Some((_, 0, false)) if s.dir == 0 && !o.get() => {
            o.set(true);
            Fate::Corrupt
        }
        _ => Fate::Deliver,
    });
    for i in 0..4 {
        bench.submit(0, 0, &payload_for_frame(512, i));
    }
    bench.settle(100_000);
    let nacks = bench.control_sent(1, FrameKind::Nack);
    assert_eq!(nacks.len(), 1);
    assert_eq!(nacks[0].2, LinkFrame::Nack(Seq::new(0xFFFFF)));
    assert_eq!(bench.end(0).counters().stale_acks, 0);
    assert_eq!(bench.end(1).counters().rx_fcs_errors, 1);
    let first: Vec<u32> = bench.data_sent(0).iter().take(4).map(|s| s.1).collect();
    assert_eq!(
        first,
        vec![0, 1, 2, 3],
        "new frames carry consecutive sequence numbers"
    );
    assert_in_order(&bench.delivered_tags(1, 0), 0..4);
}

/// Every DATA frame from sequence number 3 on vanishes: the replay timer replays the buffer
/// `replay_count_max` times, then the TX enters FLUSH (observable as `TxState::Flush`), reports a
/// link down for FLUSH and the frames of its replay buffer, in sequence order, as of unknown fate,
/// re-initialises, comes UP again and sends the frames that were still queued, in order. The
/// flushed frames are never sent again.
//= type=test
//# LINK-3-7 The TX MUST count the replays it starts, by a NACK or by the replay timer, since the
//# last acknowledgement progress: the count rises by one when a replay starts and returns to 0 when
//# an ACK or NACK acknowledges at least one frame, and on entering UP.
//# LINK-3-6 The replay timer MUST be started when a frame enters an empty replay buffer, restarted
//# whenever an ACK or NACK acknowledges at least one frame and when a replay starts, and stopped
//# when the buffer empties.
//# LINK-6-1 In FLUSH the TX MUST remove every frame from the replay buffer and report them to the
//# upper layer, in sequence order, as frames of unknown fate [...] It MUST NOT report them as
//# delivered and MUST NOT retransmit them after re-initialisation.
//# LINK-6-2 Frames submitted but not yet sent MUST stay queued across FLUSH and
//# re-initialisation and be sent after the link is UP again, in order.
//# LINK-6-3 After FLUSH, on physical link down, and on LINK-2-6 the end MUST re-initialise: enter
//# INIT (§2) with a new nonce (after physical down: when the physical link comes up again), reset
//# its RX to OFF until UP, and report a link-down event to the upper layer; on UP it MUST report a
//# link-up event.
//# LINK-2-6 An end that is UP and receives an INIT whose nonce differs from the peer's nonce it
//# went UP with MUST re-initialise (§6), unless LINK-2-12 refuses that INIT: the peer has
//# restarted. It then answers that INIT with an INIT_ECHO carrying its own new nonce, and sends its
//# own INIT.
#[test]
fn llr_flush_after_replay_count_max() {
    let a_cfg = Config {
        replay_max_frames: 4,
        ..config_a()
    };
    let max = a_cfg.replay_count_max;
    assert_eq!(max, 3);
    let mut bench = Bench::up(a_cfg, config_b());
    let nonce_before = bench.end(0).nonce();
    // The first initialisation is epoch 1; a new DATA frame with sequence number 0 starts the
    // next one. In epoch 1 every DATA frame from sequence number 3 on vanishes.
    let epoch = Rc::new(Cell::new(0u32));
    let ep = epoch.clone();
    bench.set_filter(move |s| match s.data {
        Some((_, seq, replay)) if s.dir == 0 => {
            if seq == 0 && !replay {
                ep.set(ep.get() + 1);
            }
            if ep.get() == 1 && seq >= 3 {
                Fate::Drop
            } else {
                Fate::Deliver
            }
        }
        _ => Fate::Deliver,
    });
    for i in 0..10 {
        bench.submit(0, 0, &payload_for_frame(1024, i));
    }
    bench.settle(500_000);
    assert_eq!(epoch.get(), 2);

    let a = bench.end(0).counters().clone();
    let b = bench.end(1).counters().clone();
    assert_eq!(a.flushes, 1);
    assert_eq!(
        a.frames_unknown_fate, 4,
        "the replay buffer held frames 3..=6"
    );
    assert_eq!(a.replay_timeouts, u64::from(max) + 1);
    assert_eq!(a.replays_by_nack, 0);
    assert_eq!(b.nacks_sent, 0, "nothing after the gap reached B");
    assert!(bench.tx_states[0].contains(&TxState::Flush));
    let flush_at = bench.tx_states[0]
        .iter()
        .position(|s| *s == TxState::Flush)
        .unwrap();
    assert!(bench.tx_states[0][..flush_at].contains(&TxState::Replay));
    assert!(bench.tx_states[0][flush_at..].contains(&TxState::Init));
    assert_ne!(bench.end(0).nonce(), nonce_before, "a new nonce");

    // Every frame of the buffer was sent once and replayed replay_count_max times.
    let sent = bench.data_sent(0);
    for tag in 3..7 {
        let n = sent.iter().filter(|s| s.3 == tag).count();
        assert_eq!(n, 1 + usize::from(max), "frame {tag}");
    }
    // After the re-initialisation only the queued frames go, from sequence number 0.
    let second: Vec<(u32, bool, u32)> = sent
        .iter()
        .skip_while(|s| !(s.1 == 0 && s.3 == 7))
        .map(|s| (s.1, s.2, s.3))
        .collect();
    assert_eq!(second, vec![(0, false, 7), (1, false, 8), (2, false, 9)]);

    // Events of A: up, down (FLUSH), the four frames lost in order, up again.
    //= docs/spec/link.md#6-flush-and-re-initialisation
    //= type=test
    //# LINK-6-7 An end MUST report the link-down event of an edge out of UP before the frames of
    //# unknown fate that edge reports (LINK-6-1), those in sequence order, and all of them before
    //# the link-up event of the next incarnation.
    let evs: Vec<Ev> = bench.events[0].iter().map(|(_, e)| e.clone()).collect();
    let mut expected = vec![Ev::Down(DownReason::Flush)];
    for tag in 3..7 {
        expected.push(Ev::Lost {
            vc: 0,
            reason: LostReason::UnknownFate,
            payload: payload_for_frame(1024, tag),
        });
    }
    assert!(matches!(evs[0], Ev::Up(_)));
    assert_eq!(&evs[1..6], expected.as_slice());
    assert!(matches!(evs[6], Ev::Up(_)));
    assert_eq!(evs.len(), 7, "{evs:?}");
    // B delivered the frames before the loss and the queued ones, never a flushed one.
    assert_eq!(bench.delivered_tags(1, 0), vec![0, 1, 2, 7, 8, 9]);
    // B saw A's new INIT while UP: a peer restart.
    assert!(
        bench.events[1]
            .iter()
            .any(|(_, e)| *e == Ev::Down(DownReason::PeerRestart))
    );
    // One re-initialisation and one new UP at each end.
    assert_eq!((a.reinits, a.link_ups), (1, 2));
    assert_eq!((b.reinits, b.link_ups), (1, 2));
}

/// `replay_max_frames` small: the replay buffer never holds more, the TX stops at the cap and goes
/// on as ACKs come; the byte cap is kept the same way. Every frame arrives in order.
//= type=test
//# LINK-3-3 The TX MUST NOT send a new DATA frame when the replay buffer already holds
//# `min(llr_window, replay_max_frames)` frames, or when adding the frame would make it hold more
//# than `replay_max_bytes` bytes.
//# LINK-3-2 The TX MUST keep a copy of every DATA frame it sends in a replay buffer until an ACK
//# or NACK acknowledges it.
#[test]
fn llr_outstanding_frames_cap() {
    for (frames_cap, bytes_cap, size) in [(3u32, 58_768u32, 1024usize), (115, 9216, 3000)] {
        let a_cfg = Config {
            replay_max_frames: frames_cap,
            replay_max_bytes: bytes_cap,
            ..config_a()
        };
        // 100 m of cable: ACKs take long enough for the cap to bind.
        let mut bench = Bench::with_wire(a_cfg, config_b(), 400.0, 500);
        bench.bring_up();
        for i in 0..40 {
            bench.submit(0, 0, &payload_for_frame(size, i));
        }
        let mut reached = false;
        let mut stopped_with_queue = false;
        let ok = bench.run_until(
            |b| {
                let l = b.end(0);
                assert!(l.replay_frames() <= frames_cap as usize);
                assert!(l.replay_bytes() <= bytes_cap as usize);
                let full = l.replay_frames() == frames_cap as usize
                    || l.replay_bytes() + size > bytes_cap as usize;
                reached |= full;
                stopped_with_queue |= full && l.queued(vc(0)).0 > 0;
                b.delivered(1).len() == 40 && l.is_idle()
            },
            1_000_000,
        );
        assert!(ok, "the TX did not resume after the cap");
        assert!(reached && stopped_with_queue);
        let c = bench.end(0).counters();
        assert!(c.replay_frames_max <= u64::from(frames_cap));
        assert!(c.replay_bytes_max <= u64::from(bytes_cap));
        assert_eq!(c.frames_replayed, 0);
        assert_in_order(&bench.delivered_tags(1, 0), 0..40);
    }
}

/// The agreed LLR window (the smaller of the two) caps the replay buffer like `replay_max_frames`.
//= type=test
//# LINK-2-4 [...] the LLR window of each direction is the smaller of the two windows
//# LINK-3-3 The TX MUST NOT send a new DATA frame when the replay buffer already holds
//# `min(llr_window, replay_max_frames)` frames
#[test]
fn llr_agreed_window_caps_outstanding_frames() {
    let b_cfg = Config {
        llr_window: 2,
        replay_max_frames: 2,
        ..config_b()
    };
    let mut bench = Bench::with_wire(config_a(), b_cfg, 400.0, 500);
    bench.bring_up();
    assert_eq!(bench.end(0).agreed().unwrap().window, 2);
    for i in 0..12 {
        bench.submit(0, 0, &payload_for_frame(256, i));
    }
    let ok = bench.run_until(
        |b| {
            assert!(b.end(0).replay_frames() <= 2);
            b.delivered(1).len() == 12 && b.end(0).is_idle()
        },
        1_000_000,
    );
    assert!(ok);
    assert_eq!(bench.end(0).counters().replay_frames_max, 2);
    assert_in_order(&bench.delivered_tags(1, 0), 0..12);
}

fn pair_scenario(meters: f64, frames: u64, frame_size: usize) -> Scenario {
    let d = Scenario::default();
    Scenario {
        a: Config {
            rx_credits: TEST_GRANT,
            ..d.a.clone()
        },
        b: Config {
            rx_credits: TEST_GRANT,
            ..d.b.clone()
        },
        wire: Wire {
            propagation_ns: Wire::cable_ns(meters),
            ..Wire::default()
        },
        traffic: Traffic {
            frames,
            frame_size,
            ..Traffic::default()
        },
        time_limit_ns: 50_000_000,
        ..Scenario::default()
    }
}

/// Line-rate goodput of 4096 B frames: payload bits over wire bits.
fn payload_efficiency(frame: usize) -> f64 {
    (frame - DATA_OVERHEAD) as f64 / (frame + 20) as f64
}

fn assert_lossless(r: &ethlink_link::harness::Report) {
    assert!(!r.timed_out, "timed out: {r:?}");
    assert_eq!(r.delivered, r.offered);
    assert_eq!(
        (r.lost, r.duplicates, r.corrupted, r.unknown_fate),
        (0, 0, 0, 0)
    );
    assert!(r.in_order);
    assert_eq!(r.bound_violations, 0);
}

/// 100 m of cable at 400 Gb/s: with a replay buffer and receive buffer sized to the round trip the
/// link runs at line rate; with a replay buffer of a quarter of that, it runs slower but loses
/// nothing.
//= type=test
//# LINK-3-3 The TX MUST NOT send a new DATA frame when the replay buffer already holds
//# `min(llr_window, replay_max_frames)` frames, or when adding the frame would make it hold more
//# than `replay_max_bytes` bytes.
//# LINK-5-2 The TX MUST NOT send a new DATA frame on VC *v* unless its cost is at most
//# `grant[v] - (consumed[v] - freed_seen[v])` (modulo 2^20).
#[test]
fn llr_long_cable_at_line_rate() {
    let frame = 4096;
    let line = 400.0 * payload_efficiency(frame);
    // Round trip: 2 x 500 ns of cable, plus serialisation and the ACK spacing: ~1.2 us, which
    // is ~60 KB at 400 Gb/s. Sized buffers hold twice that.
    let rtt_bytes: u32 = 400 / 8 * 1200;
    let bdp = 2 * rtt_bytes;
    let sized = |replay_bytes: u32| {
        let mut s = pair_scenario(100.0, 600, frame);
        for c in [&mut s.a, &mut s.b] {
            c.replay_max_bytes = replay_bytes;
            c.replay_max_frames = 1024;
            c.rx_credits = [0; 8];
            c.rx_credits[..4].fill(bdp / 64);
        }
        s
    };
    let full = Pair::new(sized(bdp)).unwrap().run();
    assert_lossless(&full);
    assert!(
        full.goodput_gbps > 0.9 * line,
        "sized buffers: {} Gb/s of {line}",
        full.goodput_gbps
    );
    assert_eq!(full.counters[0].frames_replayed, 0);

    // A quarter of the round trip: about a quarter of the line rate.
    let small = Pair::new(sized(rtt_bytes / 4)).unwrap().run();
    assert_lossless(&small);
    assert!(
        small.goodput_gbps < 0.5 * line,
        "a quarter of the round trip in the replay buffer: {} Gb/s",
        small.goodput_gbps
    );
    assert!(small.goodput_gbps > 0.1 * line);
    assert!(small.counters[0].replay_bytes_max <= u64::from(rtt_bytes / 4));
}

/// 1000 m of cable (5 us each way): with buffers sized to the round trip and a replay timer longer
/// than it, the link still runs near line rate.
//= type=test
//# LINK-3-6 The replay timer MUST be started when a frame enters an empty replay buffer, restarted
//# whenever an ACK or NACK acknowledges at least one frame and when a replay starts, and stopped
//# when the buffer empties.
#[test]
fn llr_very_long_cable_at_line_rate() {
    let frame = 9216;
    let line = 400.0 * payload_efficiency(frame);
    let bdp: u32 = 400 / 8 * 10_400 * 5 / 4;
    let mut s = pair_scenario(1000.0, 500, frame);
    for c in [&mut s.a, &mut s.b] {
        c.replay_max_bytes = bdp;
        c.replay_max_frames = 4096;
        c.replay_timer = core::time::Duration::from_micros(25);
        // Control frames less often than the 10 us round trip, so that the wire empties at
        // the end and the run can finish.
        c.cf_max_interval = core::time::Duration::from_micros(30);
        c.cc_interval = core::time::Duration::from_micros(60);
        c.credit_size = 2048;
        c.rx_credits = [0; 8];
        c.rx_credits[..4].fill(bdp / 2048);
    }
    let r = Pair::new(s).unwrap().run();
    assert_lossless(&r);
    assert_eq!(r.counters[0].replay_timeouts, 0);
    // 500 frames of 9216 B take ~93 us at line rate; the first round trip (~10 us) is the ramp.
    assert!(
        r.goodput_gbps > 0.8 * line,
        "{} Gb/s of {line}",
        r.goodput_gbps
    );
}

/// Frames of 64, 65, 1500, 9215 and 9216 B (and a short payload padded to 64 B) are sent and
/// delivered intact, in order, on a link whose MFS is 9216.
//= type=test
//# LINK-1-1 Every byte count of this document (the length of a frame for its credit cost,
//# `ack_spacing`, `replay_max_bytes`, the byte counters) MUST count a frame from the first byte of
//# its destination MAC address to the last byte of its FCS, 802.1Q tag and padding included
//# WIRE-2.4-1 A transmitter MUST pad a frame whose content (destination MAC through the end of
//# the body) is shorter than 60 B with zero bytes so that the frame with its FCS is exactly 64 B.
//# WIRE-2.4-2 A receiver MUST discard as a damaged frame (equivalent to an FCS error, §2.5) any
//# frame shorter than 64 B or longer than the MFS in force (WIRE-2.4-6), and count it in
//# rx_damaged.
//# LINK-4-1 A DATA frame whose sequence number is the expected one MUST be accepted: delivered to
//# the upper layer once
#[test]
fn frame_sizes_at_the_bounds() {
    let mut bench = Bench::up(config_a(), config_b());
    assert_eq!(bench.end(0).agreed().unwrap().mfs, 9216);
    let sizes = [64usize, 65, 1500, 9215, 9216, 66, 9214];
    let mut payloads: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, s)| payload_for_frame(*s, i as u32))
        .collect();
    // 12 payload bytes: 50 B of content, padded to 64.
    payloads.push(payload_len(12, sizes.len() as u32));
    for p in &payloads {
        bench.submit(0, 0, p);
    }
    bench.settle(200_000);
    let got: Vec<Vec<u8>> = bench.delivered(1).into_iter().map(|d| d.2).collect();
    assert_eq!(got, payloads);
    let lens: Vec<usize> = bench
        .trace
        .iter()
        .filter(|s| s.dir == 0 && s.kind == FrameKind::Data)
        .map(|s| s.bytes.len())
        .collect();
    let mut expected: Vec<usize> = sizes.to_vec();
    expected.push(64);
    assert_eq!(lens, expected);
    let padded = &bench
        .trace
        .iter()
        .rfind(|s| s.kind == FrameKind::Data)
        .unwrap()
        .bytes;
    assert!(
        padded[14 + 6 + 12..60].iter().all(|b| *b == 0),
        "zero padding"
    );
    let total: u64 = expected.iter().map(|l| *l as u64).sum();
    assert_eq!(bench.end(0).counters().tx_bytes[0], total);
    assert_eq!(bench.end(1).counters().rx_bytes[0], total);
    let b = bench.end(1).counters();
    assert_eq!(
        (b.rx_damaged, b.rx_malformed_control, b.rx_fcs_errors),
        (0, 0, 0)
    );
}

/// A frame longer than the MFS is refused at submission with `TooLong` and nothing is queued;
/// while UP the MFS is the agreed (smaller) one.
//= type=test
//# LINK-2-4 The parameters in use while UP MUST be agreed as follows: the number of VCs and the MFS
//# are the smaller of the two announced values; the LLR window of each direction is the smaller of
//# the two windows; the TX of each end uses the credits granted, the credit size and the credit
//# overhead announced by the peer (its RX's buffer and pricing), and its RX uses its own.
#[test]
fn oversize_submit_is_refused() {
    let mut link = Link::new(config_a()).unwrap();
    assert_eq!(
        link.submit(vc(0), &payload_for_frame(9217, 0)),
        Err(SubmitError::TooLong {
            len: 9217,
            mfs: 9216
        })
    );
    assert_eq!(link.queued(vc(0)), (0, 0));
    assert_eq!(link.submit(vc(0), &payload_for_frame(9216, 0)), Ok(()));

    let b_cfg = Config {
        mfs: 1500,
        ..config_b()
    };
    let mut bench = Bench::up(config_a(), b_cfg);
    assert_eq!(bench.end(0).agreed().unwrap().mfs, 1500);
    let e = bench.ends[0].submit(vc(0), &payload_for_frame(1501, 1));
    assert_eq!(
        e,
        Err(SubmitError::TooLong {
            len: 1501,
            mfs: 1500
        })
    );
    assert_eq!(bench.end(0).queued(vc(0)), (0, 0));
    bench.submit(0, 0, &payload_for_frame(1500, 2));
    bench.settle(100_000);
    assert_eq!(bench.delivered_tags(1, 0), vec![2]);
}

// ----- CBFC in the style of a switch test standard ------------------------------------------------

/// A credit leak on A (credits counted as consumed, never sent) stalls the VC; the CC that A sends
/// once its replay buffer is empty lets B recover exactly the leaked credits and return them by CF;
/// traffic completes and the counters end where they started.
//= type=test
//# LINK-5-7 The TX MUST send a CC carrying consumed[v] when its replay buffer is empty and at least
//# cc_interval has passed since UP or since its last CC. (A VC that has been without credit for
//# cc_interval therefore gets a CC as soon as the replay buffer is empty.)
//# LINK-5-8 On a CC the RX MUST, for every VC in the mask whose consumed[v] is ahead of received[v]
//# by less than 2^19, add the difference to both received[v] and freed[v]: those credits were paid
//# for frames it will never hold. Because the TX sends CC only when nothing it sent is
//# unacknowledged, the difference is credits leaked by a fault, never frames in flight: a counter
//# corrupted in either end, or credits a faulty implementation lost; the protocol itself leaks
//# none, and a lost CF is repaired by the next one. A CC entry behind received[v], or for a VC not
//# agreed, is ignored and counted.
//# LINK-5-6 On a CF, the TX MUST set freed_seen[v] to the carried value for every VC in the mask
//# when the value is ahead of freed_seen[v] by 1..2^19-1 and not ahead of consumed[v]; otherwise
//# the entry is stale or impossible and MUST be ignored and counted. An entry equal to
//# freed_seen[v] (the periodic CF of LINK-5-10 when nothing changed) is neither taken nor counted;
//# an entry for a VC not agreed is counted. A lost CF is therefore repaired by the next one.
#[test]
fn cbfc_credit_leak_recovered_by_cc() {
    let mut pair = Pair::new(pair_scenario(5.0, 300, 4096)).unwrap();
    pair.run_until(2_000, false);
    assert!(pair.end(0).is_up() && pair.end(1).is_up());
    let grant = pair.end(0).agreed().unwrap().tx_credits[0];
    assert_eq!(grant, 512);
    // A leak of 500 credits leaves at most 12: not enough for one 4096 B frame (64 credits).
    let available = pair.end(0).tx_credits_available(vc(0));
    pair.end_mut(0).inject_credit_leak(vc(0), 500);
    assert_eq!(
        pair.end(0).tx_credits_available(vc(0)),
        available.saturating_sub(500)
    );
    let r = pair.run();
    assert_lossless(&r);
    assert!(r.counters[0].credit_stalls[0] > 0, "the leak stalls the VC");
    assert!(r.counters[0].cc_sent > 0);
    assert_eq!(r.counters[1].credits_recovered[0], 500);
    assert_eq!(r.counters[1].stale_cc_entries, 0);
    assert_eq!(r.counters[1].credit_overruns[0], 0);
    // Let the last frames drain and the CFs come back.
    let t = pair.now_ns() + 20_000;
    pair.run_until(t, false);
    let a = pair.end(0);
    let (consumed, freed_seen) = a.tx_counters(vc(0));
    assert_eq!(consumed, freed_seen);
    assert_eq!(a.tx_credits_available(vc(0)), grant);
    assert_eq!(pair.end(1).rx_occupied(vc(0)), 0);
    assert_eq!(pair.end(1).rx_counters(vc(0)), (consumed, consumed));
}

/// The receiver does not drain at all: A stops when its credits are spent, counts a credit stall,
/// and B's buffer never holds more than its grant; when the receiver drains again every frame
/// arrives.
//= type=test
//# LINK-5-2 The TX MUST NOT send a new DATA frame on VC *v* unless its cost is at most
//# `grant[v] - (consumed[v] - freed_seen[v])` (modulo 2^20). It then adds the cost to
//# `consumed[v]`.
//# LINK-4-6 The RX MUST NOT accept a DATA frame whose cost (§5) exceeds the free buffer of its VC.
//# [...] A conformant TX never causes this.
//# LINK-5-4 On accepting a frame on VC *v* the RX MUST add its cost to `received[v]`; as the upper
//# layer drains it, the RX MUST add its cost to `freed[v]`.
#[test]
fn cbfc_drain_zero_stalls_then_completes() {
    let mut s = pair_scenario(5.0, 100, 1024);
    s.drain = 0.0;
    let mut pair = Pair::new(s).unwrap();
    let grant = 512;
    let mut t = 0;
    while t < 50_000 {
        t += 500;
        pair.run_until(t, false);
        assert!(pair.end(1).rx_occupied(vc(0)) <= grant);
    }
    // 1024 B frames cost 16 credits: exactly 32 fit in the grant.
    assert_eq!(pair.end(1).counters().rx_frames[0], 32);
    assert_eq!(pair.end(1).rx_occupied(vc(0)), grant);
    assert_eq!(pair.end(0).tx_credits_available(vc(0)), 0);
    assert!(pair.end(0).counters().credit_stalls[0] > 0);
    pair.set_drain(1.0);
    pair.restart_drain();
    let r = pair.run();
    assert_lossless(&r);
    assert_eq!(r.counters[1].credit_overruns[0], 0);
    assert!(r.max_rx_buffer_bytes <= 512 * 64);
    assert!(r.counters[0].credit_stall_ns[0] > 40_000, "stalled ~50 us");
}

fn drain_run(drain: f64) -> ethlink_link::harness::Report {
    let mut s = pair_scenario(5.0, 800, 4096);
    s.drain = drain;
    let r = Pair::new(s).unwrap().run();
    assert_lossless(&r);
    assert_eq!(r.counters[1].credit_overruns, [0; 8]);
    r
}

/// A receiver that drains at half the line rate: goodput is about half the line rate, the buffer
/// stays within its grant and nothing is lost.
//= type=test
//# LINK-5-5 The RX MUST send a CF carrying freed[v] when at least cf_min_credits credits, summed
//# over the VCs, have been freed since its last CF (or since UP) and, if it has sent a CF since UP,
//# cf_min_interval has passed since that CF. (1.3: the first CF after UP waits for no interval, as
//# Table LINK-T2 starts cf_min_interval at a CF sent.)
//# LINK-5-2 The TX MUST NOT send a new DATA frame on VC *v* unless its cost is at most
//# `grant[v] - (consumed[v] - freed_seen[v])` (modulo 2^20).
#[test]
fn cbfc_drain_half_line_rate() {
    let line = 400.0 * payload_efficiency(4096);
    let r = drain_run(0.5);
    assert!(
        (0.45 * line..0.55 * line).contains(&r.goodput_gbps),
        "{} Gb/s at half of {line}",
        r.goodput_gbps
    );
    assert!(r.counters[0].credit_stalls[0] > 0);
}

/// A receiver that drains at line rate: goodput near line rate.
//= type=test
//# LINK-5-5 The RX MUST send a CF carrying freed[v] when at least cf_min_credits credits, summed
//# over the VCs, have been freed since its last CF (or since UP) and, if it has sent a CF since UP,
//# cf_min_interval has passed since that CF. (1.3: the first CF after UP waits for no interval, as
//# Table LINK-T2 starts cf_min_interval at a CF sent.)
#[test]
fn cbfc_drain_full_line_rate() {
    let line = 400.0 * payload_efficiency(4096);
    let r = drain_run(1.0);
    assert!(
        r.goodput_gbps > 0.9 * line,
        "{} Gb/s of {line}",
        r.goodput_gbps
    );
}

/// VC 0's receiver never drains while VC 1's does: VC 0 stops at its grant, VC 1 carries all its
/// frames; when VC 0 drains again its frames follow, each VC in order.
//= type=test
//# LINK-5-2 [...] A VC without credit MUST NOT stop the other VCs.
//# LINK-5-4 On accepting a frame on VC *v* the RX MUST add its cost to `received[v]`; as the upper
//# layer drains it, the RX MUST add its cost to `freed[v]`.
#[test]
fn cbfc_per_vc_isolation() {
    let mut bench = Bench::up(config_a(), config_b());
    bench.hold(1, 0);
    for i in 0..60 {
        bench.submit(0, 0, &payload_for_frame(1024, i));
        bench.submit(0, 1, &payload_for_frame(1024, 1000 + i));
    }
    let ok = bench.run_until(|b| b.delivered_tags(1, 1).len() == 60, 200_000);
    assert!(ok, "VC 1 was blocked by VC 0");
    bench.run_for(20_000);
    let grant = bench.end(1).rx_grant(vc(0));
    assert_eq!(bench.end(1).rx_occupied(vc(0)), grant);
    assert_eq!(
        bench.delivered_tags(1, 0).len(),
        32,
        "512 credits / 16 per frame"
    );
    assert_eq!(bench.delivered_tags(1, 1).len(), 60);
    assert!(bench.end(0).counters().credit_stalls[0] > 0);
    assert_eq!(bench.end(0).counters().credit_stalls[1], 0);
    assert_eq!(bench.end(1).counters().credit_overruns, [0; 8]);
    assert!(bench.end(0).queued(vc(0)).0 > 0);

    bench.release_held(1, 0);
    bench.settle(500_000);
    assert_in_order(&bench.delivered_tags(1, 0), 0..60);
    assert_in_order(&bench.delivered_tags(1, 1), 1000..1060);
}

// ----- data link layer in the style of a PCIe compliance suite -----------------------------------

/// A DATA frame arrives with a bad FCS: the receiver counts an FCS error and NACKs; the TX
/// retransmits from it, and each retransmission is the original byte for byte but for the REPLAY
/// flag and the FCS.
//= type=test
//# WIRE-2.5-3 A receiver MUST check the FCS before it interprets any other field.
//# LINK-3-8 A retransmitted frame MUST be byte-for-byte the original but for the REPLAY flag and
//# the FCS.
//# WIRE-3-5 The REPLAY flag MUST be set on a DATA frame that is a retransmission (link.md) and
//# clear on its first transmission.
//# LINK-3-5 On a NACK carrying *S* the TX MUST, after acknowledging up to *S*, retransmit every
//# frame of the replay buffer in sequence order (go-back-N), with the REPLAY flag set
//# LINK-5-3 Retransmissions (LINK-3-5, LINK-3-11) MUST NOT consume credits again: a sequence number
//# is paid for once.
#[test]
fn retransmit_on_nack() {
    let mut bench = Bench::up(config_a(), config_b());
    let once = Rc::new(Cell::new(false));
    let o = once.clone();
    bench.set_filter(move |s| match s.data {
        Some((_, 2, false)) if s.dir == 0 && !o.get() => {
            o.set(true);
            Fate::Corrupt
        }
        _ => Fate::Deliver,
    });
    for i in 0..8 {
        bench.submit(0, 0, &payload_for_frame(700, i));
    }
    bench.settle(100_000);
    let b = bench.end(1).counters();
    assert_eq!(b.rx_fcs_errors, 1);
    assert_eq!(b.nacks_sent, 1);
    assert_eq!(bench.end(0).counters().replays_by_nack, 1);
    let data: Vec<&Sent> = bench
        .trace
        .iter()
        .filter(|s| s.dir == 0 && s.kind == FrameKind::Data)
        .collect();
    let mut replays = 0;
    for r in data.iter().filter(|s| s.data.unwrap().2) {
        replays += 1;
        let seq = r.data.unwrap().1;
        let orig = data
            .iter()
            .find(|s| s.data.unwrap() == (0, seq, false))
            .unwrap();
        assert_eq!(r.bytes.len(), orig.bytes.len());
        let n = r.bytes.len() - 4;
        let flags = 14 + 1;
        for i in (0..n).filter(|i| *i != flags) {
            assert_eq!(r.bytes[i], orig.bytes[i], "byte {i} of replayed seq {seq}");
        }
        assert_eq!(r.bytes[flags], orig.bytes[flags] | FLAG_REPLAY);
        assert_eq!(orig.bytes[flags] & FLAG_REPLAY, 0);
        assert!(fcs::check(&r.bytes));
    }
    assert!(replays >= 1);
    assert_in_order(&bench.delivered_tags(1, 0), 0..8);
    // Paid once per sequence number: 8 frames of 700 B at 11 credits each.
    assert_eq!(bench.end(0).tx_counters(vc(0)).0, 8 * 11);
    assert_eq!(bench.end(1).rx_counters(vc(0)).0, 8 * 11);
}

/// A DATA frame vanishes and so do the NACK and every ACK until the replay has started: only the
/// replay timer can recover, one `replay_timer` after the oldest unacknowledged frame was sent.
//= type=test
//# LINK-3-6 The replay timer MUST be started when a frame enters an empty replay buffer, restarted
//# whenever an ACK or NACK acknowledges at least one frame and when a replay starts, and stopped
//# when the buffer empties.
//# LINK-4-7 In NACK_SENT the RX MUST discard every DATA frame but the expected one and MUST NOT
//# send another NACK except as LINK-4-8 says
#[test]
fn replay_timer_recovers_lost_nack() {
    let mut bench = Bench::up(config_a(), config_b());
    let replaying = Rc::new(Cell::new(false));
    let r = replaying.clone();
    bench.set_filter(move |s| {
        if s.dir == 0 {
            return match s.data {
                Some((_, _, true)) => {
                    r.set(true);
                    Fate::Deliver
                }
                Some((_, 3, false)) => Fate::Drop,
                _ => Fate::Deliver,
            };
        }
        if !r.get() && matches!(s.kind, FrameKind::Ack | FrameKind::Nack) {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    let start = bench.now_ns();
    for i in 0..10 {
        bench.submit(0, 0, &payload_for_frame(1024, i));
    }
    bench.settle(100_000);
    let a = bench.end(0).counters();
    assert_eq!(a.replay_timeouts, 1);
    assert_eq!(a.replays_by_nack, 0);
    assert_eq!(a.nacks_received, 0);
    assert_eq!(bench.end(1).counters().nacks_sent, 1);
    assert_eq!(a.flushes, 0);
    let first = bench.trace.iter().find(|s| s.data.is_some()).unwrap().at_ns;
    let replay = bench
        .trace
        .iter()
        .find(|s| s.data.is_some_and(|d| d.2))
        .unwrap();
    let timer = 5_000;
    assert!(first >= start);
    assert!(
        replay.at_ns >= first + timer && replay.at_ns <= first + timer + 100,
        "replay at {} ns, first frame at {first} ns",
        replay.at_ns
    );
    // The whole buffer is replayed from its oldest frame, 0.
    assert_eq!(replay.data.unwrap().1, 0);
    assert_in_order(&bench.delivered_tags(1, 0), 0..10);
    assert!(bench.end(1).counters().duplicates > 0);
}

/// Every copy of one frame arrives damaged, so each replay ends in a new NACK (the replayed frame
/// after it shows the loss again): `replay_count_max` replays without progress are allowed, the
/// next one enters FLUSH. One failure fewer and the link recovers without FLUSH, its replay count
/// back to 0.
//= type=test
//# LINK-3-7 The TX MUST count the replays it starts, by a NACK or by the replay timer, since the
//# last acknowledgement progress: the count rises by one when a replay starts and returns to 0 when
//# an ACK or NACK acknowledges at least one frame, and on entering UP.
//# LINK-4-8 In NACK_SENT, a DATA frame ahead of the expected one whose sequence number is not
//# beyond that of the previous such frame received since the RX left SEND_ACKS (the gap frame that
//# drew the NACK included) shows that a new replay has begun and has lost the expected frame again:
//# the RX MUST then send one more NACK. The REPLAY flag plays no part in it. (1.3: 1.2 said "since
//# the last NACK", which left out the gap frame that drew it; Table LINK-T5 remembered it.)
#[test]
fn replay_count_rollover_to_flush() {
    for failures in [3u32, 4] {
        let mut bench = Bench::up(config_a(), config_b());
        let max = u32::from(bench.end(0).config().replay_count_max);
        let epoch = Rc::new(Cell::new(0u32));
        let hits = Rc::new(Cell::new(0u32));
        let (ep, h) = (epoch.clone(), hits.clone());
        bench.set_filter(move |s| match s.data {
            Some((_, seq, replay)) if s.dir == 0 => {
                if seq == 0 && !replay {
                    ep.set(ep.get() + 1);
                }
                if ep.get() == 1 && seq == 3 && h.get() < failures {
                    h.set(h.get() + 1);
                    Fate::Corrupt
                } else {
                    Fate::Deliver
                }
            }
            _ => Fate::Deliver,
        });
        for i in 0..8 {
            bench.submit(0, 0, &payload_for_frame(1024, i));
        }
        bench.settle(200_000);
        let a = bench.end(0).counters().clone();
        let b = bench.end(1).counters().clone();
        assert_eq!(hits.get(), failures);
        if failures <= max {
            // failures - 1 replays failed; the last one got through.
            assert_eq!(a.flushes, 0, "{failures} failures");
            assert_eq!(a.replays_by_nack, u64::from(failures));
            assert_eq!(b.nacks_sent, u64::from(failures));
            assert_eq!(bench.end(0).replay_count(), 0);
            assert_in_order(&bench.delivered_tags(1, 0), 0..8);
        } else {
            assert_eq!(a.flushes, 1, "{failures} failures");
            assert_eq!(a.replays_by_nack, u64::from(max) + 1);
            assert_eq!(b.nacks_sent, u64::from(max) + 1);
            assert_eq!(a.replay_timeouts, 0);
            let seq3 = bench
                .data_sent(0)
                .iter()
                .filter(|s| s.3 == 3 && s.1 == 3)
                .count();
            assert_eq!(
                seq3,
                1 + max as usize,
                "one send and replay_count_max replays"
            );
            assert_eq!(a.frames_unknown_fate, 5, "frames 3..=7 were in the buffer");
            assert_eq!(bench.delivered_tags(1, 0), vec![0, 1, 2]);
            assert!(
                bench.events[0]
                    .iter()
                    .any(|(_, e)| *e == Ev::Down(DownReason::Flush))
            );
        }
    }
}

/// Through the harness filter: after a lost frame, the replayed frames carry the REPLAY flag (in
/// the frame's bytes as in the filter's view), go in sequence order from the lost one to the
/// newest, and no new frame goes between them.
//= type=test
//# LINK-3-5 On a NACK carrying *S* the TX MUST, after acknowledging up to *S*, retransmit every
//# frame of the replay buffer in sequence order (go-back-N), with the REPLAY flag set, before any
//# new frame.
//# WIRE-3-5 The REPLAY flag MUST be set on a DATA frame that is a retransmission (link.md) and
//# clear on its first transmission.
#[test]
fn replay_order_through_the_harness_filter() {
    let mut pair = Pair::new(pair_scenario(20.0, 60, 1024)).unwrap();
    let log: Rc<RefCell<Vec<(u32, bool)>>> = Rc::new(RefCell::new(Vec::new()));
    let l = log.clone();
    let dropped = Rc::new(Cell::new(false));
    let d = dropped.clone();
    pair.set_filter(Box::new(move |f: &FrameInfo<'_>| {
        let Some((_, seq, replay)) = f.data else {
            return Verdict::Deliver;
        };
        if f.dir != 0 {
            return Verdict::Deliver;
        }
        let flag = f.bytes[14 + 1] & FLAG_REPLAY != 0;
        assert_eq!(flag, replay, "REPLAY flag of seq {seq}");
        l.borrow_mut().push((seq.value(), replay));
        if seq.value() == 10 && !replay && !d.get() {
            d.set(true);
            Verdict::Drop
        } else {
            Verdict::Deliver
        }
    }));
    let r = pair.run();
    assert_lossless(&r);
    let log = log.borrow();
    let first = log.iter().position(|e| e.1).unwrap();
    let newest = log[..first].iter().map(|e| e.0).max().unwrap();
    let episode: Vec<(u32, bool)> = log[first..].iter().take_while(|e| e.1).copied().collect();
    let expected: Vec<(u32, bool)> = (10..=newest).map(|s| (s, true)).collect();
    assert_eq!(
        episode, expected,
        "one go-back-N replay from 10 to {newest}"
    );
    // After the replay only new frames, continuing the sequence.
    let rest: Vec<(u32, bool)> = log[first + episode.len()..].to_vec();
    let expected_rest: Vec<(u32, bool)> = (newest + 1..60).map(|s| (s, false)).collect();
    assert_eq!(rest, expected_rest);
    assert_eq!(r.counters[0].replays_by_nack, 1);
    assert_eq!(r.counters[0].frames_replayed, episode.len() as u64);
}

/// An ACK and a CF arrive damaged: each is counted as an FCS error at A, A's RX answers with one
/// NACK (it cannot tell what was lost) which B takes as acknowledging nothing new, and the traffic
/// completes with no replay, no stale acknowledgement and no credit lost.
//= type=test
//# WIRE-2.5-3 A receiver MUST check the FCS before it interprets any other field.
//# LINK-4-3 A damaged frame (wire.md §7, the rows with NACK) [...] MUST make an RX in SEND_ACKS
//# send one NACK carrying the last good sequence number and enter NACK_SENT.
#[test]
fn corrupted_control_frames_do_no_harm() {
    let mut pair = Pair::new(pair_scenario(5.0, 200, 1024)).unwrap();
    let hit = Rc::new(Cell::new((false, false)));
    let h = hit.clone();
    let data_seen = Rc::new(Cell::new(0u32));
    let ds = data_seen.clone();
    pair.set_filter(Box::new(move |f: &FrameInfo<'_>| {
        if f.dir == 0 {
            if f.kind == FrameKind::Data {
                ds.set(ds.get() + 1);
            }
            return Verdict::Deliver;
        }
        let (ack, cf) = h.get();
        if ds.get() > 20 && f.kind == FrameKind::Ack && !ack {
            h.set((true, cf));
            return Verdict::Corrupt;
        }
        if ds.get() > 40 && f.kind == FrameKind::CreditUpdate && !cf {
            h.set((ack, true));
            return Verdict::Corrupt;
        }
        Verdict::Deliver
    }));
    let r = pair.run();
    assert_eq!(hit.get(), (true, true));
    assert_lossless(&r);
    let (a, b) = (&r.counters[0], &r.counters[1]);
    assert_eq!(a.rx_fcs_errors, 2);
    assert_eq!(a.nacks_sent, 1, "one NACK, then NACK_SENT discards quietly");
    assert_eq!(b.nacks_received, 1);
    assert_eq!(b.stale_acks, 0);
    assert_eq!(a.frames_replayed, 0);
    assert_eq!(a.replays_by_nack, 0);
    assert_eq!((a.stale_acks, a.stale_cf_entries, a.flushes), (0, 0, 0));
    let t = pair.now_ns() + 10_000;
    pair.run_until(t, false);
    assert_eq!(pair.end(0).tx_credits_available(vc(0)), 512);
}

/// Hand-crafted frames a receiver cannot accept: unknown kinds, version 2, another EtherType, two
/// VLAN tags, a control body too long, bad padding after a DATA body. Each is counted once in the
/// right counter, changes no state, and causes no NACK.
//= type=test
//# WIRE-3-3 A receiver MUST discard a frame whose kind is 0x7..0xF and count it in rx_unknown_kind.
//# WIRE-3-2 A receiver MUST discard a frame whose version is not 1 and count it in rx_bad_version.
//# WIRE-2.1-2 A receiver MUST discard a frame whose EtherType (after at most one 802.1Q tag) is not
//# 0x88B5 and count it in rx_foreign.
//# WIRE-4-1 A control frame's body MUST have exactly the size given for its kind below, followed
//# only by the padding of WIRE-2.4-1.
//# WIRE-2.4-3 A receiver MUST discard as malformed, and count, a frame that carries more bytes
//# between the end of its body and the FCS than the padding WIRE-2.4-1 requires. For a control
//# frame this is a control-body error (WIRE-4-2, counted in rx_malformed_control); for a DATA frame
//# it is found after link-layer acceptance, at the network-header stage (§7, counted as a malformed
//# frame). Such frames have a good FCS: they are evidence of a faulty transmitter, not of a damaged
//# link.
//# LINK-7-1 Every discard this document or wire.md requires to be counted MUST increment exactly
//# one counter.
#[test]
fn undefined_encodings_are_discarded_without_nack() {
    let mut bench = Bench::up(config_a(), config_b());
    for i in 0..4 {
        bench.submit(0, 0, &payload_for_frame(256, i));
    }
    bench.settle(100_000);
    let ack = emit(LinkFrame::Ack(Seq::new(0xFFFFF)));
    let data = data_frame(4, 0, false, &payload_for_frame(256, 99));
    type Case = (&'static str, Vec<u8>, fn(&mut Counters));
    let mut cases: Vec<Case> = Vec::new();
    for kind in 7u8..=0xF {
        let mut f = ack.clone();
        f[14] = 0x10 | kind;
        refcs(&mut f);
        cases.push(("unknown kind", f, |c| c.rx_unknown_kind += 1));
    }
    let mut f = data.clone();
    f[14] = 0x20; // version 2, kind DATA
    refcs(&mut f);
    cases.push(("version 2", f, |c| c.rx_bad_version += 1));
    let mut f = ack.clone();
    f[14] = 0x01; // version 0, kind ACK
    refcs(&mut f);
    cases.push(("version 0", f, |c| c.rx_bad_version += 1));
    let mut f = data.clone();
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    refcs(&mut f);
    cases.push(("EtherType IPv4", f, |c| c.rx_foreign += 1));
    // Two 802.1Q tags: after one tag the EtherType is 0x8100, not 0x88B5.
    let mut f = data[..12].to_vec();
    f.extend_from_slice(&[0x81, 0x00, 0x00, 0x01, 0x81, 0x00, 0x00, 0x01]);
    f.extend_from_slice(&data[12..]);
    refcs(&mut f);
    cases.push(("two VLAN tags", f, |c| c.rx_foreign += 1));
    let mut f = ack.clone();
    f.splice(60..60, [0u8; 4]);
    refcs(&mut f);
    cases.push(("ACK body too long", f, |c| c.rx_malformed_control += 1));
    let mut f = data_frame(0, 0, false, &payload_for_frame(256, 99));
    let end = f.len() - 4;
    f.splice(end..end, [0u8; 4]);
    refcs(&mut f);
    // The LLR judges a DATA frame on its link header alone (LINK-4-12): this one carries a
    // sequence number already accepted, so it is a duplicate, whatever its body.
    cases.push(("bytes after the DATA body", f, |c| c.duplicates += 1));

    for (name, frame, edit) in cases {
        let before = bench.end(1).counters().clone();
        let (rx, tx) = (bench.end(1).rx_state(), bench.end(1).tx_state());
        let expected = bench.end(1).expected_seq();
        bench.inject(1, &frame);
        assert_eq!(
            *bench.end(1).counters(),
            counters_after(&before, edit),
            "{name}"
        );
        assert_eq!(bench.end(1).rx_state(), rx, "{name}");
        assert_eq!(bench.end(1).tx_state(), tx, "{name}");
        assert_eq!(bench.end(1).expected_seq(), expected, "{name}");
        // The same frames at A, whose RX is also in SEND_ACKS.
        bench.inject(0, &frame);
    }
    bench.run_for(20_000);
    assert_eq!(bench.end(1).counters().nacks_sent, 0);
    assert_eq!(bench.end(0).counters().nacks_sent, 0);
    assert!(bench.delivered(1).iter().all(|d| tag_of(&d.2) != 99));
    assert_eq!(bench.end(1).rx_state(), RxState::SendAcks);
}

/// Frames shorter than 64 B or longer than the agreed MFS are damaged: counted, and the RX NACKs.
//= type=test
//# WIRE-2.4-2 A receiver MUST discard as a damaged frame (equivalent to an FCS error, §2.5) any
//# frame shorter than 64 B or longer than the MFS in force (WIRE-2.4-6), and count it in
//# rx_damaged.
//# LINK-4-3 A damaged frame (wire.md §7, the rows with NACK) [...] MUST make an RX in SEND_ACKS
//# send one NACK carrying the last good sequence number and enter NACK_SENT.
#[test]
fn damaged_sizes_cause_a_nack() {
    let b_cfg = Config {
        mfs: 2000,
        ..config_b()
    };
    let mut bench = Bench::up(config_a(), b_cfg);
    let runt = data_frame(0, 0, false, &payload_for_frame(64, 0))[..63].to_vec();
    let mut long = data_frame(0, 0, false, &payload_for_frame(2001, 0));
    refcs(&mut long);
    for (name, frame) in [("runt", runt), ("longer than the MFS", long)] {
        let before = bench.end(1).counters().clone();
        bench.inject(1, &frame);
        assert_eq!(
            *bench.end(1).counters(),
            counters_after(&before, |c| c.rx_damaged += 1),
            "{name}"
        );
        assert_eq!(bench.end(1).rx_state(), RxState::SendNack, "{name}");
        bench.run_for(1_000);
        assert_eq!(bench.end(1).rx_state(), RxState::NackSent, "{name}");
        assert_eq!(bench.end(1).counters().nacks_sent, before.nacks_sent + 1);
        // The expected frame returns the RX to SEND_ACKS.
        bench.submit(0, 0, &payload_for_frame(512, 0));
        bench.settle(100_000);
        assert_eq!(bench.end(1).rx_state(), RxState::SendAcks, "{name}");
    }
    assert_eq!(bench.delivered(1).len(), 2);
}

/// While A's buffer holds frames 0..=9 (B's ACKs are held back), acknowledgements beyond the
/// newest frame sent or before the one before the oldest are stale: counted and ignored, no replay.
/// One exactly before the oldest acknowledges nothing; one for the newest empties the buffer.
//= type=test
//# LINK-3-4 An ACK or NACK carrying *S* acknowledges every frame of the replay buffer up to and
//# including *S*. The TX MUST accept it only if *S* lies between the sequence number before the
//# oldest frame of the buffer and the newest frame sent, inclusive (modulo 2^20); otherwise it is
//# stale or impossible and MUST be ignored and counted.
#[test]
fn ack_with_bad_sequence_number_is_ignored() {
    let a_cfg = Config {
        replay_timer: core::time::Duration::from_millis(1),
        ..config_a()
    };
    let mut bench = Bench::up(a_cfg, config_b());
    bench.set_filter(|s| {
        if s.dir == 1 && matches!(s.kind, FrameKind::Ack | FrameKind::Nack) {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    for i in 0..10 {
        bench.submit(0, 0, &payload_for_frame(512, i));
    }
    bench.run_for(2_000);
    assert_eq!(bench.end(0).replay_frames(), 10);
    assert_eq!(bench.delivered(1).len(), 10);

    let check = |bench: &mut Bench, frame: LinkFrame<'_>, stale: bool, left: usize| {
        let before = bench.end(0).counters().clone();
        bench.inject(0, &emit(frame));
        let c = bench.end(0).counters();
        assert_eq!(
            c.stale_acks,
            before.stale_acks + u64::from(stale),
            "{frame:?}"
        );
        assert_eq!(bench.end(0).replay_frames(), left, "{frame:?}");
        assert_eq!(c.replays_by_nack, before.replays_by_nack, "{frame:?}");
        assert_eq!(bench.end(0).tx_state(), TxState::Advance, "{frame:?}");
    };
    check(&mut bench, LinkFrame::Ack(Seq::new(10)), true, 10);
    check(&mut bench, LinkFrame::Ack(Seq::new(0x7FFFF)), true, 10);
    check(&mut bench, LinkFrame::Ack(Seq::new(0xFFFFE)), true, 10);
    check(&mut bench, LinkFrame::Nack(Seq::new(12)), true, 10);
    check(&mut bench, LinkFrame::Ack(Seq::new(0xFFFFF)), false, 10);
    check(&mut bench, LinkFrame::Ack(Seq::new(4)), false, 5);
    check(&mut bench, LinkFrame::Ack(Seq::new(3)), true, 5);
    check(&mut bench, LinkFrame::Ack(Seq::new(4)), false, 5);
    check(&mut bench, LinkFrame::Ack(Seq::new(9)), false, 0);
    // Empty buffer: only the newest frame sent is acceptable.
    check(&mut bench, LinkFrame::Ack(Seq::new(8)), true, 0);
    check(&mut bench, LinkFrame::Ack(Seq::new(10)), true, 0);
    check(&mut bench, LinkFrame::Ack(Seq::new(9)), false, 0);
    assert_eq!(bench.end(0).counters().frames_replayed, 0);
}

/// Duplicated DATA frames are discarded and counted, delivered once, and answered by an ACK of the
/// last accepted sequence number.
//= type=test
//# LINK-4-5 A DATA frame whose sequence number is within `llr_window` behind the expected one is a
//# duplicate: it MUST be discarded and counted.
//# LINK-4-16 The RX MUST make an ACK due on the first duplicate (LINK-4-5) since it last accepted a
//# frame, sent a NACK or came UP, and again each time the duplicates received after the one that
//# last made an ACK due reach ack_spacing bytes (counted as LINK-1-1 says), in NACK_SENT too, so
//# that a TX whose ACKs were lost learns of them. (1.3: 1.2 asked an ACK for every duplicate, which
//# made a go-back-N replay of *n* frames the RX already had cost *n* ACK frames ahead of DATA; one
//# per ack_spacing is the rate of LINK-4-2.)
#[test]
fn duplicate_data_discarded_counted_and_acked() {
    let mut bench = Bench::up(config_a(), config_b());
    bench.set_filter(|s| match s.data {
        Some((_, 3, false)) if s.dir == 0 => Fate::Duplicate,
        _ => Fate::Deliver,
    });
    for i in 0..6 {
        bench.submit(0, 0, &payload_for_frame(128, i));
    }
    bench.settle(200_000);
    assert_in_order(&bench.delivered_tags(1, 0), 0..6);
    assert_eq!(bench.end(1).counters().duplicates, 1);
    let acks = bench.control_sent(1, FrameKind::Ack);
    assert_eq!(
        acks[0].2,
        LinkFrame::Ack(Seq::new(3)),
        "the duplicate is answered"
    );

    // A stale copy of frame 0 long after: discarded, counted once, answered by an ACK of 5.
    let old = bench
        .trace
        .iter()
        .find(|s| s.data == Some((0, 0, false)))
        .unwrap()
        .bytes
        .clone();
    let before = bench.end(1).counters().clone();
    bench.inject(1, &old);
    assert_eq!(
        *bench.end(1).counters(),
        counters_after(&before, |c| c.duplicates += 1)
    );
    let now = bench.now();
    let sent = drain_tx(&mut bench.ends[1], now);
    let frames: Vec<LinkFrame<'_>> = sent
        .iter()
        .map(|f| FrameRepr::parse_bytes(f, 9216).unwrap().link)
        .collect();
    assert!(frames.contains(&LinkFrame::Ack(Seq::new(5))), "{frames:?}");
    assert_eq!(bench.delivered(1).len(), 6);
}

// ----- bring-up -----------------------------------------------------------------------------------

/// An INIT_ECHO whose echo nonce is not the current nonce is ignored and counted; the peer's INIT
/// alone does not bring the end UP, the right INIT_ECHO does, with the parameters it carries; every
/// INIT is answered with an INIT_ECHO carrying the INIT's nonce.
//= type=test
//# LINK-2-3 An end MUST enter UP only when it receives an INIT_ECHO whose echo nonce is its
//# current nonce, and MUST take the peer's nonce and parameters from that INIT_ECHO
//# LINK-2-17 INIT_ECHO frames with an echo nonce other than the end's current nonce, and every
//# INIT_ECHO received while UP, MUST be ignored and counted.
//# LINK-2-2 An end that receives a valid INIT MUST answer it with an INIT_ECHO carrying the INIT's
//# nonce as echo nonce and its own configured parameters, in any state but OFF, unless LINK-2-12
//# refuses it. When several INITs arrive before the wire can take the INIT_ECHO (or before LINK-2-18
//# lets it go), only the newest is answered.
//# LINK-2-1 On entering INIT an end MUST draw a new nonce (LINK-2-9) and send its first INIT at
//# once, then one every init_interval while it stays in INIT and physically up; each INIT carries
//# the nonce and the end's configured parameters (never the agreed ones).
#[test]
fn bringup_init_echo_with_wrong_nonce_is_ignored() {
    let peer = config_b();
    for echo_first in [true, false] {
        let mut link = Link::new(config_a()).unwrap();
        let t0 = Instant::from_nanos(100);
        link.physical_up(t0);
        let sent = drain_tx(&mut link, t0);
        assert_eq!(sent.len(), 1);
        let own = link.nonce();
        let FrameRepr {
            link: LinkFrame::Init(init),
            ..
        } = FrameRepr::parse_bytes(&sent[0], 9216).unwrap()
        else {
            panic!("not an INIT");
        };
        assert_eq!(init, init_of(&config_a(), own));
        // INIT again after init_interval, not before.
        assert!(drain_tx(&mut link, Instant::from_nanos(1099)).is_empty());
        assert_eq!(
            kinds(&drain_tx(&mut link, Instant::from_nanos(1100))),
            vec![FrameKind::Init]
        );
        let t = Instant::from_nanos(1200);

        let wrong = emit(LinkFrame::InitEcho {
            echo_nonce: own ^ 0x8000_0001,
            init: init_of(&peer, 77),
        });
        let before = link.counters().clone();
        link.handle_frame(t, &wrong);
        assert_eq!(
            *link.counters(),
            counters_after(&before, |c| c.init_echoes_ignored += 1)
        );
        let peer_init = emit(LinkFrame::Init(init_of(&peer, 77)));
        let right = emit(LinkFrame::InitEcho {
            echo_nonce: own,
            init: init_of(&peer, 77),
        });
        if echo_first {
            link.handle_frame(t, &right);
            assert!(
                link.is_up(),
                "the INIT_ECHO of our nonce alone brings the end UP"
            );
            link.handle_frame(t, &wrong);
            link.handle_frame(t, &peer_init);
            assert!(link.is_up(), "the INIT it went UP with changes nothing");
        } else {
            link.handle_frame(t, &peer_init);
            assert!(!link.is_up(), "the peer's INIT alone is not enough");
            link.handle_frame(t, &wrong);
            assert!(!link.is_up());
            link.handle_frame(t, &right);
            assert!(link.is_up());
        }
        assert_eq!(link.counters().init_echoes_ignored, 2);
        assert!(matches!(events_of(&mut link).as_slice(), [Ev::Up(_)]));
        // The peer's INIT is answered by an INIT_ECHO for it.
        let out = drain_tx(&mut link, t);
        let echo = out
            .iter()
            .map(|f| FrameRepr::parse_bytes(f, 9216).unwrap().link)
            .find(|l| l.kind() == FrameKind::InitEcho)
            .unwrap();
        assert_eq!(
            echo,
            LinkFrame::InitEcho {
                echo_nonce: 77,
                init: init_of(&config_a(), own)
            }
        );
        // An echo for a stale nonce while UP changes nothing either.
        link.handle_frame(t, &wrong);
        assert!(link.is_up());
        assert_eq!(link.counters().init_echoes_ignored, 3);
    }
}

/// While UP, the same INIT again is answered and changes nothing; an INIT with a new nonce (the
/// peer restarted) takes the link down, reports the frames of the replay buffer, re-initialises
/// with a new nonce and resets sequence numbers and credit counters; queued frames wait for the
/// next UP; claims from before are accepted and change nothing.
//= type=test
//# LINK-2-6 An end that is UP and receives an INIT whose nonce differs from the peer's nonce it
//# went UP with MUST re-initialise (§6), unless LINK-2-12 refuses that INIT: the peer has
//# restarted. It then answers that INIT with an INIT_ECHO carrying its own new nonce, and sends its
//# own INIT.
//# LINK-6-3 After FLUSH, on physical link down, and on LINK-2-6 the end MUST re-initialise: enter
//# INIT (§2) with a new nonce (after physical down: when the physical link comes up again), reset
//# its RX to OFF until UP, and report a link-down event to the upper layer; on UP it MUST report a
//# link-up event.
//# LINK-2-5 On entering UP an end MUST reset its TX sequence number and its RX expected sequence
//# number to 0, its RX last good sequence number to 0xFFFFF (WIRE-4.2-1), and every credit counter
//# of both sides to 0.
//# LINK-6-4 Frames the RX has already delivered stay delivered, and they stay in its receive
//# buffer, charged to their VC, until the upper layer drains them. Draining them returns no credit:
//# the counters of LINK-5-4 were reset at UP (LINK-2-5); LINK-2-18 keeps the peer from being
//# granted that buffer before it is empty.
//# LINK-2-18 While its receive buffer holds a frame it delivered before it last left UP, an end
//# MUST NOT send an INIT_ECHO and MUST NOT enter UP: an INIT_ECHO it receives then is ignored and
//# counted as LINK-2-17 says. When its upper layer has drained the last of them, an end in INIT
//# MUST draw a new nonce (LINK-2-9), answer the newest INIT it has received, if any, and send its
//# INIT at once. (An end physically down draws its nonce when the physical link comes up,
//# LINK-6-3.)
#[test]
fn bringup_peer_restart_reinitialises() {
    let peer = config_b();
    let (mut link, t) = lone_end_up(config_a(), &peer, 500);
    // One frame accepted and held by the upper layer, two sent and unacknowledged, one queued.
    link.handle_frame(t, &data_frame(0, 0, false, &payload_for_frame(256, 40)));
    let mut claim = None;
    while let Some(ev) = link.poll_event() {
        if let Event::Delivered { release, .. } = ev {
            claim = Some(release);
        }
    }
    assert_eq!(link.rx_occupied(vc(0)), 4);
    for i in 0..2 {
        link.submit(vc(0), &payload_for_frame(256, i)).unwrap();
    }
    let sent = drain_tx(&mut link, t);
    assert_eq!(
        sent.iter()
            .filter(|f| kinds(&[f.to_vec()])[0] == FrameKind::Data)
            .count(),
        2
    );
    assert_eq!(link.replay_frames(), 2);

    // The same INIT: answered, nothing else.
    link.handle_frame(t, &emit(LinkFrame::Init(init_of(&peer, 500))));
    assert!(link.is_up());
    assert!(events_of(&mut link).is_empty());
    assert_eq!(kinds(&drain_tx(&mut link, t))[0], FrameKind::InitEcho);
    // Two frames queued, not sent, when the peer restarts.
    link.submit(vc(0), &payload_for_frame(256, 2)).unwrap();
    link.submit(vc(0), &payload_for_frame(256, 3)).unwrap();
    let queued = link.queued(vc(0)).0;
    assert_eq!(queued, 2);

    let old_nonce = link.nonce();
    let t2 = Instant::from_nanos(t.as_nanos() + 50);
    link.handle_frame(t2, &emit(LinkFrame::Init(init_of(&peer, 501))));
    assert!(!link.is_up());
    assert_eq!(link.tx_state(), TxState::Flush);
    assert_eq!(link.rx_state(), RxState::Off);
    assert_ne!(link.nonce(), old_nonce);
    let evs = events_of(&mut link);
    assert_eq!(evs[0], Ev::Down(DownReason::PeerRestart));
    let lost: Vec<u32> = evs[1..]
        .iter()
        .map(|e| match e {
            Ev::Lost {
                reason: LostReason::UnknownFate,
                payload,
                ..
            } => tag_of(payload),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(lost, vec![0, 1]);
    assert_eq!(link.tx_state(), TxState::Init);
    assert_eq!(link.counters().reinits, 1);
    assert_eq!(link.queued(vc(0)).0, queued);
    // DATA before UP again is discarded and counted.
    link.handle_frame(t2, &data_frame(1, 0, false, &payload_for_frame(256, 41)));
    assert_eq!(link.counters().rx_not_up, 1);
    // The frame delivered before is still in the buffer: INIT frames go out with the new
    // nonce, but no INIT_ECHO, no DATA, and an echo of the new nonce brings nothing UP.
    let out = drain_tx(&mut link, t2);
    assert!(
        kinds(&out)
            .iter()
            .all(|k| *k != FrameKind::Data && *k != FrameKind::InitEcho)
    );
    assert_eq!(link.rx_held(vc(0)), 4);
    link.handle_frame(
        t2,
        &emit(LinkFrame::InitEcho {
            echo_nonce: link.nonce(),
            init: init_of(&peer, 501),
        }),
    );
    assert!(!link.is_up());
    // Drained: no credit comes back, a new nonce is drawn, and the INIT_ECHO and an INIT go.
    let before = link.nonce();
    assert_eq!(link.release(claim.take().unwrap()), Ok(()));
    assert_eq!(link.rx_held(vc(0)), 0);
    let new_nonce = link.nonce();
    assert_ne!(new_nonce, before);
    assert_eq!(
        kinds(&drain_tx(&mut link, t2)),
        vec![FrameKind::InitEcho, FrameKind::Init]
    );
    // The peer's INIT of this attempt is in hand: its echo brings the link UP.
    link.handle_frame(
        t2,
        &emit(LinkFrame::InitEcho {
            echo_nonce: new_nonce,
            init: init_of(&peer, 501),
        }),
    );
    assert!(link.is_up());
    assert!(matches!(events_of(&mut link).as_slice(), [Ev::Up(_)]));
    assert_eq!(link.next_seq(), Seq::new(0));
    assert_eq!(link.expected_seq(), Seq::new(0));
    assert_eq!(link.rx_counters(vc(0)), (0, 0));
    assert_eq!(link.tx_counters(vc(0)), (0, 0));
    assert_eq!(link.rx_occupied(vc(0)), 0);
    assert!(claim.is_none());
    // The queued frames go now, from sequence number 0, and never the flushed ones.
    let out = drain_tx(&mut link, t2);
    let data: Vec<(u32, u32)> = out
        .iter()
        .filter_map(|f| match FrameRepr::parse_bytes(f, 9216).unwrap().link {
            LinkFrame::Data { header, payload } => Some((header.seq.value(), tag_of(payload))),
            _ => None,
        })
        .collect();
    assert_eq!(data, vec![(0, 2), (1, 3)]);
}

/// A peer that restarts for real (a new end in place of B) brings A down for a peer restart and
/// both ends back UP once each; frames queued at A then arrive.
//= type=test
//# LINK-2-6 An end that is UP and receives an INIT whose nonce differs from the peer's nonce it
//# went UP with MUST re-initialise (§6), unless LINK-2-12 refuses that INIT: the peer has
//# restarted. It then answers that INIT with an INIT_ECHO carrying its own new nonce, and sends its
//# own INIT.
//# LINK-2-3 An end MUST enter UP only when it receives an INIT_ECHO whose echo nonce is its
//# current nonce, and MUST take the peer's nonce and parameters from that INIT_ECHO.
#[test]
fn bringup_peer_restart_on_the_wire() {
    let mut bench = Bench::up(config_a(), config_b());
    for i in 0..5 {
        bench.submit(0, 0, &payload_for_frame(512, i));
    }
    bench.settle(100_000);
    let now = bench.now();
    let mut fresh = Link::new(Config {
        nonce_seed: 99,
        ..config_b()
    })
    .unwrap();
    fresh.physical_up(now);
    bench.ends[1] = fresh;
    for i in 5..10 {
        bench.submit(0, 0, &payload_for_frame(512, i));
    }
    bench.run_for(50_000);
    let a = bench.end(0).counters();
    assert_eq!(a.reinits, 1);
    assert_eq!(a.link_ups, 2, "A comes UP once after the restart");
    assert_eq!(bench.end(1).counters().link_ups, 1);
    assert_eq!(bench.end(1).counters().reinits, 0);
    assert!(bench.end(0).is_up() && bench.end(1).is_up());
    let tags: Vec<u32> = bench.delivered(1).iter().map(|d| tag_of(&d.2)).collect();
    // Frames sent to the new B before A learnt of the restart are of unknown fate at A.
    let lost: Vec<u32> = bench.events[0]
        .iter()
        .filter_map(|(_, e)| match e {
            Ev::Lost { payload, .. } => Some(tag_of(payload)),
            _ => None,
        })
        .collect();
    let mut all: Vec<u32> = lost.clone();
    all.extend(&tags);
    all.sort_unstable();
    assert!(tags.windows(2).all(|w| w[0] < w[1]), "{tags:?}");
    assert!(
        (5..10).all(|t| all.contains(&t)),
        "lost {lost:?}, delivered {tags:?}"
    );
}

/// DATA received before the link is UP is discarded and counted; an end that is not UP sends
/// INIT frames but no DATA, even with frames queued.
//= type=test
//# LINK-2-7 An end MUST NOT send DATA frames unless it is UP.
#[test]
fn bringup_data_before_up_is_discarded() {
    let mut link = Link::new(config_a()).unwrap();
    link.submit(vc(0), &payload_for_frame(256, 1)).unwrap();
    let t = Instant::from_nanos(10);
    link.physical_up(t);
    let before = link.counters().clone();
    link.handle_frame(t, &data_frame(0, 0, false, &payload_for_frame(256, 7)));
    assert_eq!(
        *link.counters(),
        counters_after(&before, |c| c.rx_not_up += 1)
    );
    assert!(events_of(&mut link).is_empty());
    for k in 0..5u64 {
        let now = Instant::from_nanos(10 + 1000 * k);
        assert_eq!(kinds(&drain_tx(&mut link, now)), vec![FrameKind::Init]);
    }
    assert_eq!(link.counters().tx_frames_total(), 0);
}

/// An end whose physical link is down (OFF) is not UP either: a DATA frame handed to it is
/// discarded and counted as DATA received while not UP, not as an INIT received while OFF.
//= type=test
//# LINK-2-7 An end MUST NOT send DATA frames unless it is UP.
//# LINK-7-1 Every discard this document or wire.md requires to be counted MUST increment exactly
//# one counter.
#[test]
fn bringup_data_while_physically_down_counts_as_data_not_up() {
    let mut off = Link::new(config_a()).unwrap();
    let t = Instant::from_nanos(10);
    let before = off.counters().clone();
    off.handle_frame(t, &data_frame(0, 0, false, &payload_for_frame(256, 7)));
    assert_eq!(
        *off.counters(),
        counters_after(&before, |c| c.rx_not_up += 1)
    );
    assert!(drain_tx(&mut off, t).is_empty());
    assert!(events_of(&mut off).is_empty());
}

/// The parameters in use are the smaller VC count, MFS and window of the two ends; each TX uses
/// the grants and credit size the peer announced; the LinkUp events carry them.
//= type=test
//# LINK-2-4 The parameters in use while UP MUST be agreed as follows: the number of VCs and the MFS
//# are the smaller of the two announced values; the LLR window of each direction is the smaller of
//# the two windows; the TX of each end uses the credits granted, the credit size and the credit
//# overhead announced by the peer (its RX's buffer and pricing), and its RX uses its own.
//# LINK-5-1 A DATA frame of len bytes (destination MAC through FCS) costs ceil((len +
//# credit_overhead) / credit_size) credits: the TX uses the credit size and the credit overhead the
//# peer announced, the RX its own.
#[test]
fn bringup_agreed_parameters_are_the_minima() {
    let a_cfg = config_a();
    let mut b_cfg = Config {
        mfs: 1500,
        llr_window: 100,
        replay_max_frames: 100,
        credit_size: 128,
        ..config_b()
    }
    .with_uniform_credits(2, 0);
    b_cfg.rx_credits[0] = 300;
    b_cfg.rx_credits[1] = 200;
    let mut bench = Bench::up(a_cfg, b_cfg);
    let at_a = Agreed {
        vcs: 2,
        mfs: 1500,
        window: 100,
        tx_credit_size: 128,
        tx_credits: [300, 200, 0, 0, 0, 0, 0, 0],
        tx_credit_overhead: 0,
    };
    let at_b = Agreed {
        vcs: 2,
        mfs: 1500,
        window: 100,
        tx_credit_size: 64,
        tx_credits: [512, 512, 0, 0, 0, 0, 0, 0],
        tx_credit_overhead: 0,
    };
    assert_eq!(bench.end(0).agreed(), Some(&at_a));
    assert_eq!(bench.end(1).agreed(), Some(&at_b));
    assert_eq!(bench.events[0][0].1, Ev::Up(at_a));
    assert_eq!(bench.events[1][0].1, Ev::Up(at_b));
    // A's TX pays in B's credits of 128 B: a 1000 B frame costs 8.
    bench.submit(0, 1, &payload_for_frame(1000, 1));
    bench.submit(1, 0, &payload_for_frame(1000, 2));
    bench.settle(100_000);
    bench.run_for(5_000);
    assert_eq!(bench.end(0).tx_counters(vc(1)).0, 8);
    assert_eq!(bench.end(1).rx_counters(vc(1)), (8, 8));
    assert_eq!(bench.end(1).tx_counters(vc(0)).0, 16);
    assert_eq!(bench.end(0).rx_counters(vc(0)), (16, 16));
    assert_eq!(bench.end(0).tx_credits_available(vc(0)), 300);
    assert_eq!(bench.delivered_tags(1, 1), vec![1]);
    assert_eq!(bench.delivered_tags(0, 0), vec![2]);
}

/// A physical outage takes both ends down and back UP exactly once each; frames of the replay
/// buffer are reported of unknown fate and queued frames go after the new UP.
//= type=test
//# LINK-6-3 After FLUSH, on physical link down, and on LINK-2-6 the end MUST re-initialise: enter
//# INIT (§2) with a new nonce (after physical down: when the physical link comes up again), reset
//# its RX to OFF until UP, and report a link-down event to the upper layer; on UP it MUST report a
//# link-up event.
//# LINK-2-3 An end MUST enter UP only when it receives an INIT_ECHO whose echo nonce is its
//# current nonce, and MUST take the peer's nonce and parameters from that INIT_ECHO.
//# LINK-6-2 Frames submitted but not yet sent MUST stay queued across FLUSH and re-initialisation
//# and be sent after the link is UP again, in order.
#[test]
fn physical_outage_reinitialises_once() {
    let mut bench = Bench::up(config_a(), config_b());
    for i in 0..6 {
        bench.submit(0, 0, &payload_for_frame(512, i));
    }
    bench.settle(100_000);
    let now = bench.now();
    for e in 0..2 {
        bench.ends[e].physical_down(now);
        bench.after(e);
    }
    bench.flights = [VecDeque::new(), VecDeque::new()];
    assert_eq!(bench.end(0).tx_state(), TxState::Off);
    for i in 6..12 {
        bench.submit(0, 0, &payload_for_frame(512, i));
    }
    bench.run_for(1_000);
    let now = bench.now();
    for e in 0..2 {
        bench.ends[e].physical_up(now);
        bench.after(e);
    }
    bench.settle(100_000);
    bench.run_for(20_000);
    for e in 0..2 {
        let c = bench.end(e).counters();
        assert_eq!(c.link_ups, 2, "end {e}: {:?}", bench.events[e]);
        let downs: Vec<&Ev> = bench.events[e]
            .iter()
            .map(|(_, ev)| ev)
            .filter(|ev| matches!(ev, Ev::Down(_)))
            .collect();
        assert_eq!(downs, vec![&Ev::Down(DownReason::Physical)], "end {e}");
    }
    assert_in_order(&bench.delivered_tags(1, 0), 0..12);
}

/// The upper layer takes the events of a FLUSH late: the link comes UP again and a NACK arrives
/// (for a control frame the peer found damaged) while the flushed frames still wait to be
/// reported. The flushed frames are no longer in the replay buffer: the NACK finds nothing to
/// replay, and once the events are taken the end sends on normally.
//= type=test
//# LINK-6-1 In FLUSH the TX MUST remove every frame from the replay buffer [...] and MUST NOT
//# retransmit them after re-initialisation.
//# LINK-3-5 On a NACK carrying *S* the TX MUST, after acknowledging up to *S*, retransmit every
//# frame of the replay buffer in sequence order
#[test]
fn nack_while_flushed_frames_wait_to_be_reported() {
    let peer = config_b();
    let (mut link, t) = lone_end_up(config_a(), &peer, 500);
    for i in 0..3 {
        link.submit(vc(0), &payload_for_frame(256, i)).unwrap();
    }
    assert_eq!(drain_tx(&mut link, t).len(), 3);
    // NACKs of nothing: three replays, then FLUSH.
    let nack = emit(LinkFrame::Nack(Seq::new(0xFFFFF)));
    for k in 0..4 {
        link.handle_frame(t, &nack);
        if k < 3 {
            assert_eq!(link.tx_state(), TxState::Replay);
            assert_eq!(drain_tx(&mut link, t).len(), 3);
        }
    }
    assert_eq!(link.tx_state(), TxState::Flush);
    assert_eq!(link.counters().flushes, 1);
    // Back UP before the events are taken.
    link.handle_frame(t, &emit(LinkFrame::Init(init_of(&peer, 501))));
    let nonce = link.nonce();
    link.handle_frame(
        t,
        &emit(LinkFrame::InitEcho {
            echo_nonce: nonce,
            init: init_of(&peer, 501),
        }),
    );
    assert!(link.is_up());
    assert_eq!(link.replay_frames(), 0);
    let replays = link.counters().replays_by_nack;
    link.handle_frame(t, &nack);
    assert_eq!(
        link.counters().replays_by_nack,
        replays,
        "a NACK with an empty replay buffer starts no replay"
    );
    let evs = events_of(&mut link);
    assert_eq!(evs.len(), 5, "{evs:?}");
    link.submit(vc(0), &payload_for_frame(256, 9)).unwrap();
    let mut buf = vec![0u8; 9216];
    let mut data = Vec::new();
    loop {
        match link.poll_transmit(t, &mut buf) {
            Ok(Some(tx)) => {
                if let Some((_, seq, replay)) = tx.data {
                    data.push((seq.value(), replay, tag_of(data_payload(&buf[..tx.len]))));
                }
            }
            Ok(None) => break,
            Err(e) => panic!("poll_transmit with a 9216 B buffer: {e:?}"),
        }
    }
    assert_eq!(data, vec![(0, false, 9)]);
}

/// Frames queued on a VC the peer does not have (the agreed number of VCs is smaller) are not
/// stranded: each is either refused at submission or reported lost, and the end becomes idle.
//= type=test
//# LINK-2-4 The parameters in use while UP MUST be agreed as follows: the number of VCs and the MFS
//# are the smaller of the two announced values; the LLR window of each direction is the smaller of
//# the two windows; the TX of each end uses the credits granted, the credit size and the credit
//# overhead announced by the peer (its RX's buffer and pricing), and its RX uses its own.
#[test]
fn frames_on_a_vc_the_peer_lacks_are_not_stranded() {
    let b_cfg = config_b().with_uniform_credits(2, 512);
    let mut bench = Bench::new(config_a(), b_cfg);
    bench.submit(0, 3, &payload_for_frame(256, 1));
    bench.submit(0, 0, &payload_for_frame(256, 2));
    bench.bring_up();
    assert_eq!(bench.end(0).agreed().unwrap().vcs, 2);
    let refused = match bench.ends[0].submit(vc(3), &payload_for_frame(256, 3)) {
        Ok(()) => 0,
        Err(SubmitError::NoSuchVc { vc: 3, vcs: 2 }) => 1,
        Err(e) => panic!("{e:?}"),
    };
    bench.sending[0] = true;
    bench.run_for(50_000);
    let lost: Vec<u32> = bench.events[0]
        .iter()
        .filter_map(|(_, e)| match e {
            Ev::Lost { vc: 3, payload, .. } => Some(tag_of(payload)),
            _ => None,
        })
        .collect();
    assert_eq!(bench.delivered_tags(1, 0), vec![2]);
    assert_eq!(lost.len() + refused, 2, "lost {lost:?}, refused {refused}");
    assert_eq!(bench.end(0).queued(vc(3)), (0, 0));
    assert!(bench.end(0).is_idle());
}

/// Seeded random faults in both directions (damaged, vanished and duplicated DATA frames, lost
/// control frames): every frame is delivered once and in order on its VC, or reported of unknown
/// fate; no buffer exceeds its bound.
//= type=test
//# LINK-4-1 A DATA frame whose sequence number is the expected one MUST be accepted: delivered to
//# the upper layer once
//# LINK-4-5 A DATA frame whose sequence number is within `llr_window` behind the expected one is a
//# duplicate: it MUST be discarded and counted
//# LINK-6-1 In FLUSH the TX MUST remove every frame from the replay buffer and report them to the
//# upper layer, in sequence order, as frames of unknown fate
#[test]
fn mixed_faults_stay_lossless() {
    for seed in 1..=4 {
        let mut s = pair_scenario(10.0, 300, 1024);
        s.seed = seed;
        s.traffic.bidirectional = true;
        s.traffic.vcs = 2;
        s.wire.faults = ethlink_link::harness::Faults {
            loss: 0.02,
            drop: 0.01,
            burst: 1,
            ber: 0.0,
            duplicate: 0.01,
            control_loss: 0.02,
        };
        let r = Pair::new(s).unwrap().run();
        assert!(!r.timed_out, "seed {seed}: {r:?}");
        assert!(r.in_order, "seed {seed}");
        assert_eq!((r.duplicates, r.corrupted), (0, 0), "seed {seed}");
        assert!(r.lost <= r.unknown_fate, "seed {seed}: {r:?}");
        assert_eq!(r.bound_violations, 0, "seed {seed}");
        assert!(
            r.injected[0] + r.injected[1] > 0,
            "seed {seed}: faults were injected"
        );
    }
}

/// The control frames among `frames`, parsed.
fn links(frames: &[Vec<u8>]) -> Vec<LinkFrame<'_>> {
    frames
        .iter()
        .map(|f| FrameRepr::parse_bytes(f, 9216).unwrap().link)
        .collect()
}

fn acks_in(frames: &[Vec<u8>]) -> Vec<u32> {
    links(frames)
        .iter()
        .filter_map(|l| match l {
            LinkFrame::Ack(s) => Some(s.value()),
            _ => None,
        })
        .collect()
}

fn nacks_in(frames: &[Vec<u8>]) -> Vec<u32> {
    links(frames)
        .iter()
        .filter_map(|l| match l {
            LinkFrame::Nack(s) => Some(s.value()),
            _ => None,
        })
        .collect()
}

fn at(ns: u64) -> Instant {
    Instant::from_nanos(ns)
}

/// Takes the events of a lone end and keeps the claims of delivered frames.
fn claims_of(link: &mut Link) -> Vec<Release> {
    let mut out = Vec::new();
    while let Some(ev) = link.poll_event() {
        if let Event::Delivered { release, .. } = ev {
            out.push(release);
        }
    }
    out
}

/// The RX ACKs when the bytes accepted since its last ACK reach `ack_spacing`, when an accepted
/// frame has waited `ack_timer`, and at once for a frame with ACK_REQ; each ACK carries the last
/// accepted sequence number.
//= type=test
//# LINK-4-2 The RX MUST send an ACK carrying the last accepted sequence number when the bytes
//# accepted since its last ACK or NACK reach `ack_spacing`
//# LINK-4-14 The RX MUST send an ACK when an accepted frame has waited `ack_timer` for one.
//# LINK-4-15 The RX MUST send an ACK as soon as it has accepted a DATA frame with the ACK_REQ
//# flag.
//# WIRE-3-6 The ACK_REQ flag asks the receiver to acknowledge without waiting for its ACK spacing
//# or timer. A transmitter MAY set it on any DATA frame; a receiver MUST send an ACK as soon as it
//# has accepted a DATA frame that carries it (link.md LINK-4-15). (1.1: was SHOULD; link.md already
//# required it.)
#[test]
fn ack_after_spacing_timer_and_ack_req() {
    let cfg = Config {
        ack_spacing: 1024,
        ..config_b()
    };
    let (mut b, t) = lone_end_up(cfg, &config_a(), 500);
    let t = t.as_nanos();
    for seq in 0..3 {
        b.handle_frame(
            at(t),
            &data_frame(seq, 0, false, &payload_for_frame(256, seq)),
        );
        assert!(acks_in(&drain_tx(&mut b, at(t))).is_empty(), "seq {seq}");
    }
    b.handle_frame(at(t), &data_frame(3, 0, false, &payload_for_frame(256, 3)));
    assert_eq!(
        acks_in(&drain_tx(&mut b, at(t))),
        vec![3],
        "1024 B accepted"
    );

    let t1 = t + 100;
    b.handle_frame(at(t1), &data_frame(4, 0, false, &payload_for_frame(256, 4)));
    assert!(acks_in(&drain_tx(&mut b, at(t1))).is_empty());
    assert!(b.poll_timeout().unwrap() <= at(t1 + 500));
    b.handle_timeout(at(t1 + 499));
    assert!(acks_in(&drain_tx(&mut b, at(t1 + 499))).is_empty());
    b.handle_timeout(at(t1 + 500));
    assert_eq!(
        acks_in(&drain_tx(&mut b, at(t1 + 500))),
        vec![4],
        "ack_timer"
    );

    let t2 = t1 + 600;
    b.handle_frame(
        at(t2),
        &data_frame_flags(5, 0, false, true, &payload_for_frame(256, 5)),
    );
    assert_eq!(acks_in(&drain_tx(&mut b, at(t2))), vec![5], "ACK_REQ");
    assert_eq!(b.counters().acks_sent, 3);
}

/// A DATA frame whose cost exceeds the free buffer of its VC (a TX that ignores credits) is
/// discarded as if it had not arrived: no ACK, no NACK, the expected number unchanged, one credit
/// overrun counted. Once the buffer is drained the same frame is accepted.
//= type=test
//# LINK-4-6 The RX MUST NOT accept a DATA frame whose cost (§5) exceeds the free buffer of its VC.
//# It MUST discard it as if it had not arrived (no ACK, no NACK) and count a credit overrun
//# LINK-7-1 Every discard this document or wire.md requires to be counted MUST increment exactly
//# one counter.
#[test]
fn credit_overrun_is_discarded_silently() {
    // 8 credits of 64 B hold one frame of the MFS (LINK-2-13) and two of 256 B.
    let cfg = Config {
        mfs: 512,
        ..config_b().with_uniform_credits(1, 8)
    };
    let (mut b, t) = lone_end_up(cfg, &config_a(), 500);
    b.handle_frame(t, &data_frame(0, 0, false, &payload_for_frame(256, 0)));
    b.handle_frame(t, &data_frame(1, 0, false, &payload_for_frame(256, 1)));
    let mut claims = claims_of(&mut b);
    assert_eq!(b.rx_occupied(vc(0)), 8);
    let before = b.counters().clone();
    b.handle_frame(t, &data_frame(2, 0, false, &payload_for_frame(256, 2)));
    let mut after = before.clone();
    after.credit_overruns[0] += 1;
    assert_eq!(*b.counters(), after);
    assert_eq!(b.expected_seq(), Seq::new(2));
    assert_eq!(b.rx_state(), RxState::SendAcks);
    assert!(claims_of(&mut b).is_empty());
    let out = drain_tx(&mut b, t);
    assert!(acks_in(&out).is_empty() && nacks_in(&out).is_empty());
    b.release(claims.remove(0)).unwrap();
    b.handle_frame(t, &data_frame(2, 0, true, &payload_for_frame(256, 2)));
    assert_eq!(claims_of(&mut b).len(), 1);
    assert_eq!(b.expected_seq(), Seq::new(3));
    assert_eq!(b.counters().credit_overruns[0], 1);
}

/// CF entries: one ahead of `freed_seen` and not ahead of `consumed` is taken; one behind, or
/// ahead of what was consumed, is stale or impossible: ignored and counted; an empty mask carries
/// nothing.
//= type=test
//# LINK-5-6 On a CF, the TX MUST set freed_seen[v] to the carried value for every VC in the mask
//# when the value is ahead of freed_seen[v] by 1..2^19-1 and not ahead of consumed[v]; otherwise
//# the entry is stale or impossible and MUST be ignored and counted. An entry equal to
//# freed_seen[v] (the periodic CF of LINK-5-10 when nothing changed) is neither taken nor counted;
//# an entry for a VC not agreed is counted. A lost CF is therefore repaired by the next one.
//# WIRE-4.3-2 A CF or CC frame whose VC mask is zero carries no information; a receiver MUST
//# accept and ignore it.
#[test]
fn cf_entries_stale_or_impossible_are_ignored() {
    let (mut a, t) = lone_end_up(config_a(), &config_b(), 500);
    for i in 0..2 {
        a.submit(vc(0), &payload_for_frame(256, i)).unwrap();
    }
    drain_tx(&mut a, t);
    assert_eq!(a.tx_counters(vc(0)), (8, 0));
    let cf = |v: Option<u32>| {
        let mut counters = [None; 8];
        counters[0] = v;
        emit(LinkFrame::CreditUpdate(CreditRepr { counters }))
    };
    let cases: [(Option<u32>, u32, u64); 7] = [
        (Some(4), 4, 0),
        (Some(4), 4, 0),
        (Some(3), 4, 1),
        (Some(9), 4, 1),
        (Some(4 + 0x80000), 4, 1),
        (None, 4, 0),
        (Some(8), 8, 0),
    ];
    for (value, seen, stale) in cases {
        let before = a.counters().clone();
        a.handle_frame(t, &cf(value));
        let expected = counters_after(&before, |c| {
            c.cf_received += 1;
            c.stale_cf_entries += stale;
        });
        assert_eq!(*a.counters(), expected, "CF {value:?}");
        assert_eq!(a.tx_counters(vc(0)), (8, seen), "CF {value:?}");
    }
    assert_eq!(a.tx_credits_available(vc(0)), 512);
}

/// A CC whose count is ahead of what the RX received recovers the difference as received and
/// freed, and the RX answers with a CF at once; a CC that is not ahead recovers nothing.
//= type=test
//# LINK-5-8 On a CC the RX MUST, for every VC in the mask whose `consumed[v]` is ahead of
//# `received[v]` by less than 2^19, add the difference to both `received[v]` and `freed[v]`
//# LINK-5-13 After a CC that carries at least one entry the RX MUST send a CF at once, without
//# waiting for cf_min_interval. A CC whose VC mask is zero is ignored whole (wire.md WIRE-4.3-2)
//# and draws no CF. (1.3: 1.2 did not say which CC draws the CF.)
#[test]
fn cc_recovers_leaked_credits_and_answers_with_cf() {
    let (mut b, t) = lone_end_up(config_b(), &config_a(), 500);
    b.handle_frame(t, &data_frame(0, 0, false, &payload_for_frame(256, 0)));
    for c in claims_of(&mut b) {
        b.release(c).unwrap();
    }
    drain_tx(&mut b, t);
    assert_eq!(b.rx_counters(vc(0)), (4, 4));
    let cc = |v: u32| {
        let mut counters = [Some(0); 8];
        counters[4..].fill(None);
        counters[0] = Some(v);
        emit(LinkFrame::CreditResync(CreditRepr { counters }))
    };
    let cf_after = |b: &mut Link| -> Vec<Option<u32>> {
        let out = drain_tx(b, t);
        links(&out)
            .iter()
            .filter_map(|l| match l {
                LinkFrame::CreditUpdate(c) => Some(c.counters[0]),
                _ => None,
            })
            .collect()
    };
    b.handle_frame(t, &cc(14));
    assert_eq!(b.rx_counters(vc(0)), (14, 14));
    assert_eq!(b.counters().credits_recovered[0], 10);
    assert_eq!(b.rx_occupied(vc(0)), 0);
    assert_eq!(cf_after(&mut b), vec![Some(14)], "a CF at once");
    // A CC with no entry carries nothing: taken, counted, no CF (WIRE-4.3-2).
    let received = b.counters().cc_received;
    b.handle_frame(
        t,
        &emit(LinkFrame::CreditResync(CreditRepr {
            counters: [None; 8],
        })),
    );
    assert_eq!(b.counters().cc_received, received + 1);
    assert_eq!(cf_after(&mut b), vec![], "no CF for an empty CC");
    b.handle_frame(t, &cc(14));
    assert_eq!(b.rx_counters(vc(0)), (14, 14));
    assert_eq!(cf_after(&mut b), vec![Some(14)]);
    b.handle_frame(t, &cc(5));
    assert_eq!(
        b.rx_counters(vc(0)),
        (14, 14),
        "a CC behind recovers nothing"
    );
    assert_eq!(b.counters().credits_recovered[0], 10);
}

/// INIT and INIT_ECHO frames with parameters out of range are malformed: counted, not answered,
/// and they never bring the link up. Grant entries of VCs at or above the VC count are reserved
/// and not checked.
//= type=test
//# WIRE-4.5-1 The number of VCs MUST be 1..8, the credit size a power of two in 32..2048, the MFS
//# in 320..9216, the LLR window in 1..2^19, and the credit grant of each VC below the number of VCs
//# 1..2^19 - 1. The entries of VCs at or above the number of VCs are reserved (WIRE-1.2-1,
//# WIRE-1.2-2): they are not range-checked. (1.1: a grant of 0 was allowed; a VC with no credit can
//# never carry a frame, so it is now out of range.)
//# WIRE-1.2-2 A receiver MUST ignore the value of every reserved bit and byte
#[test]
fn init_out_of_range_is_malformed() {
    let peer = config_b().with_uniform_credits(2, 512);
    let mut a = Link::new(config_a()).unwrap();
    let t = at(10);
    a.physical_up(t);
    drain_tx(&mut a, t);
    let own = a.nonce();
    // Body at byte 20: vcs at +8, credit size at +10, MFS at +12, window at +16, grants at +20.
    let patch = |frame: &[u8], at: usize, bytes: &[u8]| {
        let mut f = frame.to_vec();
        f[20 + at..20 + at + bytes.len()].copy_from_slice(bytes);
        refcs(&mut f);
        f
    };
    let init = emit(LinkFrame::Init(init_of(&peer, 77)));
    let echo = emit(LinkFrame::InitEcho {
        echo_nonce: own,
        init: init_of(&peer, 77),
    });
    let bad: [(usize, Vec<u8>); 9] = [
        (8, vec![0]),
        (8, vec![9]),
        (10, 48u16.to_be_bytes().to_vec()),
        (10, 4096u16.to_be_bytes().to_vec()),
        (12, 319u16.to_be_bytes().to_vec()),
        (12, 9217u16.to_be_bytes().to_vec()),
        (16, 0u32.to_be_bytes().to_vec()),
        (16, 0x80001u32.to_be_bytes().to_vec()),
        (20 + 4, 0x80000u32.to_be_bytes().to_vec()),
    ];
    for (off, bytes) in &bad {
        for base in [&init, &echo] {
            let f = patch(base, *off, bytes);
            let before = a.counters().clone();
            a.handle_frame(t, &f);
            assert_eq!(
                *a.counters(),
                counters_after(&before, |c| c.rx_malformed_control += 1),
                "field at {off} = {bytes:?}"
            );
            assert!(drain_tx(&mut a, t).is_empty(), "no INIT_ECHO for it");
            assert!(!a.is_up());
        }
    }
    // A bad ECHO then a good INIT: still not UP.
    a.handle_frame(t, &patch(&echo, 8, &[9]));
    a.handle_frame(t, &init);
    assert!(!a.is_up());
    // A grant above the VC count is reserved: anything goes.
    let reserved = patch(&echo, 20 + 4 * 5, &0xFFFF_FFFFu32.to_be_bytes());
    a.handle_frame(t, &reserved);
    assert!(a.is_up());
    assert_eq!(a.agreed().unwrap().tx_credits, [512, 512, 0, 0, 0, 0, 0, 0]);
}

/// In NACK_SENT the RX discards frames quietly until the expected one arrives; only a replayed
/// frame right after the expected one (the replay lost it again) draws one more NACK; duplicates
/// draw an ACK, never a NACK.
//= type=test
//# LINK-4-7 In NACK_SENT the RX MUST discard every DATA frame but the expected one and MUST NOT
//# send another NACK except as LINK-4-8 says; it processes control frames as in every other state.
//# LINK-4-8 In NACK_SENT, a DATA frame ahead of the expected one whose sequence number is not
//# beyond that of the previous such frame received since the RX left SEND_ACKS (the gap frame that
//# drew the NACK included) shows that a new replay has begun and has lost the expected frame again:
//# the RX MUST then send one more NACK. The REPLAY flag plays no part in it. (1.3: 1.2 said "since
//# the last NACK", which left out the gap frame that drew it; Table LINK-T5 remembered it.)
#[test]
fn nack_sent_discards_quietly_and_renacks_a_lost_replay() {
    let (mut b, t) = lone_end_up(config_b(), &config_a(), 500);
    let p = |i: u32| payload_for_frame(256, i);
    for seq in 0..2 {
        b.handle_frame(t, &data_frame(seq, 0, false, &p(seq)));
    }
    b.handle_frame(t, &data_frame(3, 0, false, &p(3)));
    assert_eq!(b.rx_state(), RxState::SendNack);
    assert_eq!(nacks_in(&drain_tx(&mut b, t)), vec![1]);
    assert_eq!(b.rx_state(), RxState::NackSent);
    let mut damaged = data_frame(2, 0, true, &p(2));
    damaged[30] ^= 1;
    // Frames still on their way from before the replay: each further ahead than the last.
    let quiet: Vec<(&str, Vec<u8>)> = vec![
        ("new frame after the gap", data_frame(4, 0, false, &p(4))),
        ("replayed frame further on", data_frame(5, 0, true, &p(5))),
        ("damaged", damaged),
        ("duplicate", data_frame(0, 0, true, &p(0))),
        (
            "an ACK is processed",
            emit(LinkFrame::Ack(Seq::new(0xFFFFF))),
        ),
    ];
    for (name, f) in quiet {
        b.handle_frame(t, &f);
        assert_eq!(b.rx_state(), RxState::NackSent, "{name}");
        assert!(nacks_in(&drain_tx(&mut b, t)).is_empty(), "{name}");
    }
    // The numbers went back: a new replay began and lost 2 again. The flag is not looked at.
    b.handle_frame(t, &data_frame(3, 0, false, &p(3)));
    assert_eq!(
        nacks_in(&drain_tx(&mut b, t)),
        vec![1],
        "the replay lost 2 again"
    );
    assert_eq!(b.rx_state(), RxState::NackSent);
    // The rest of that replay is quiet.
    b.handle_frame(t, &data_frame(4, 0, true, &p(4)));
    assert!(nacks_in(&drain_tx(&mut b, t)).is_empty());
    assert_eq!(b.counters().acks_received, 1);
    b.handle_frame(t, &data_frame(2, 0, true, &p(2)));
    b.handle_frame(t, &data_frame(3, 0, true, &p(3)));
    assert_eq!(b.rx_state(), RxState::SendAcks);
    assert_eq!(b.expected_seq(), Seq::new(4));
    assert_eq!(b.counters().nacks_sent, 2);
    assert_eq!(b.counters().duplicates, 1);
    assert_eq!(b.counters().rx_fcs_errors, 1);
    let seqs: Vec<u32> = events_of(&mut b)
        .iter()
        .filter_map(|e| match e {
            Ev::Delivered { seq, .. } => Some(*seq),
            _ => None,
        })
        .collect();
    assert_eq!(seqs, vec![0, 1, 2, 3]);
}

/// One end tags its frames (with a PCP unrelated to the VC), the other does not: both directions
/// work, the VC comes from the link header, and a receiver takes tagged and untagged frames alike.
//= type=test
//# WIRE-2.2-1 A frame MAY carry one 802.1Q tag (TPID 0x8100). A receiver MUST accept frames with
//# and without the tag on the same link.
//# WIRE-2.2-2 The receiver MUST NOT derive the virtual channel from the PCP; the VC field of the
//# link header (§3) is authoritative.
#[test]
fn tagged_and_untagged_frames_on_one_link() {
    let a_cfg = Config {
        vlan: Some(VlanTag {
            pcp: 7,
            dei: false,
            vid: 100,
        }),
        ..config_a()
    };
    let mut bench = Bench::up(a_cfg, config_b());
    bench.submit(0, 0, &payload_len(200, 0));
    bench.submit(0, 1, &payload_len(200, 1));
    bench.submit(0, 0, &payload_len(200, 2));
    bench.submit(1, 2, &payload_len(200, 10));
    bench.settle(100_000);
    assert_eq!(bench.delivered_tags(1, 0), vec![0, 2]);
    assert_eq!(bench.delivered_tags(1, 1), vec![1]);
    assert_eq!(bench.delivered_tags(0, 2), vec![10]);
    for s in bench.trace.iter().filter(|s| s.kind == FrameKind::Data) {
        if s.dir == 0 {
            assert_eq!(&s.bytes[12..14], &[0x81, 0x00]);
            assert_eq!(s.bytes[14] >> 5, 7, "PCP 7");
        } else {
            assert_eq!(&s.bytes[12..14], &[0x88, 0xB5]);
        }
    }
    // An untagged frame from A's side is as good.
    bench.inject(1, &data_frame(3, 1, false, &payload_len(200, 3)));
    assert_eq!(bench.delivered_tags(1, 1), vec![1, 3]);
}

/// Frames carry the sender's own MAC as source; the destination is the link-local address until
/// the peer's INIT has been seen and the peer's address after; a receiver ignores the destination.
//= type=test
//# WIRE-2.3-1 The source MAC address MUST be the transmitting port's own unicast address.
//# WIRE-2.3-2 An EthLink link is point to point. A receiver MUST accept a frame whatever its
//# destination MAC address [...] A transmitter SHOULD use the peer port's address learned from its
//# INIT frame (§4.5) as the destination, and the address `01:80:C2:00:00:0E` before it has learned
//# it.
#[test]
fn mac_addresses() {
    let mut bench = Bench::up(config_a(), config_b());
    bench.submit(0, 0, &payload_len(100, 0));
    bench.settle(100_000);
    let first = &bench.trace[0];
    assert_eq!(first.kind, FrameKind::Init);
    assert_eq!(&first.bytes[0..6], &MacAddr::LINK_LOCAL.0);
    for s in &bench.trace {
        let src = if s.dir == 0 { MAC_A } else { MAC_B };
        assert_eq!(&s.bytes[6..12], &src.0, "{:?}", s.kind);
        if s.kind != FrameKind::Init {
            let dst = if s.dir == 0 { MAC_B } else { MAC_A };
            assert_eq!(&s.bytes[0..6], &dst.0, "{:?}", s.kind);
        }
    }
    let repr = FrameRepr {
        eth: eth_from(MacAddr([0x0e, 1, 2, 3, 4, 5]), MacAddr([0xFF; 6])),
        link: LinkFrame::Data {
            header: DataHeader {
                vc: vc(0),
                flags: DataFlags::default(),
                seq: Seq::new(1),
            },
            payload: &payload_len(100, 1),
        },
    };
    let mut f = vec![0u8; repr.buffer_len()];
    repr.emit(&mut f).unwrap();
    bench.inject(1, &f);
    assert_eq!(bench.delivered_tags(1, 0), vec![0, 1]);
}

/// A link at rest: each RX sends a CF every `cf_max_interval` (changed or not) and each TX a CC
/// every `cc_interval`; under traffic, CFs follow the freed credits but never closer than
/// `cf_min_interval`.
//= type=test
//# LINK-5-5 The RX MUST send a CF carrying freed[v] when at least cf_min_credits credits, summed
//# over the VCs, have been freed since its last CF (or since UP) and, if it has sent a CF since UP,
//# cf_min_interval has passed since that CF. (1.3: the first CF after UP waits for no interval, as
//# Table LINK-T2 starts cf_min_interval at a CF sent.)
//# LINK-5-7 The TX MUST send a CC carrying consumed[v] when its replay buffer is empty and at least
//# cc_interval has passed since UP or since its last CC. (A VC that has been without credit for
//# cc_interval therefore gets a CC as soon as the replay buffer is empty.)
//# LINK-5-10 The RX MUST send a CF every `cf_max_interval` while UP, whether its entries changed or
//# not.
//# LINK-5-11 A CF and a CC MUST carry an entry for every agreed VC and none for another.
//# LINK-5-9 Control frames MUST NOT consume credits and MUST NOT be refused for want of credit.
#[test]
fn cf_and_cc_timing() {
    let mut bench = Bench::up(config_a(), config_b());
    let t0 = bench.now_ns();
    bench.run_for(40_000);
    let times = |bench: &Bench, dir: usize, kind: FrameKind, from: u64, to: u64| -> Vec<u64> {
        bench
            .trace
            .iter()
            .filter(|s| s.dir == dir && s.kind == kind && s.at_ns >= from && s.at_ns <= to)
            .map(|s| s.at_ns)
            .collect()
    };
    let t1 = bench.now_ns();
    // A CF answers each CC at once (LINK-5-8), whatever the interval; the others are periodic.
    let answers_cc = |bench: &Bench, dir: usize, cf_at: u64| {
        times(bench, 1 - dir, FrameKind::CreditResync, 0, cf_at)
            .last()
            .is_some_and(|cc| cf_at - cc <= 40)
    };
    for dir in 0..2 {
        // Nothing is freed at rest: every CF is either periodic (2 us after the last one) or
        // the answer to a CC.
        let cf = times(&bench, dir, FrameKind::CreditUpdate, t0, t1);
        assert!(cf.len() >= 19, "{cf:?}");
        for w in cf.windows(2) {
            let gap = w[1] - w[0];
            assert!(
                (1_990..=2_010).contains(&gap) || answers_cc(&bench, dir, w[1]),
                "{cf:?}"
            );
        }
        let cc = times(&bench, dir, FrameKind::CreditResync, t0, t1);
        assert!(cc.len() >= 3, "{cc:?}");
        assert!(
            cc.windows(2)
                .all(|w| (9_990..=10_010).contains(&(w[1] - w[0]))),
            "{cc:?}"
        );
    }
    // Traffic: B frees credits as it goes; CFs come often, but not closer than 100 ns.
    let credits = bench.end(0).tx_credits_available(vc(0));
    for i in 0..200 {
        bench.submit(0, 0, &payload_for_frame(1024, i));
    }
    bench.settle(100_000);
    let t2 = bench.now_ns();
    let cf: Vec<u64> = times(&bench, 1, FrameKind::CreditUpdate, t1, t2)
        .into_iter()
        .filter(|t| !answers_cc(&bench, 1, *t))
        .collect();
    assert!(cf.len() >= 20, "{} CFs in {} ns", cf.len(), t2 - t1);
    assert!(cf.windows(2).all(|w| w[1] - w[0] >= 100), "{cf:?}");
    // 200 x 16 credits went through a grant of 512: only CFs can have returned them.
    bench.run_for(3_000);
    assert_eq!(bench.end(0).tx_credits_available(vc(0)), credits);
    assert_eq!(bench.end(0).counters().credit_overruns, [0; 8]);
}

/// A frame queued before UP that is longer than the MFS the peer announced is reported lost as
/// exceeding it, never sent, and the frames behind it on its VC still go.
//= type=test
//# LINK-2-4 The parameters in use while UP MUST be agreed as follows: the number of VCs and the MFS
//# are the smaller of the two announced values; the LLR window of each direction is the smaller of
//# the two windows; the TX of each end uses the credits granted, the credit size and the credit
//# overhead announced by the peer (its RX's buffer and pricing), and its RX uses its own.
//= docs/spec/wire.md#24-frame-size-and-padding
//= type=test
//# WIRE-2.4-8 A transmitter MUST NOT send a frame longer than the MFS in force on its link.
#[test]
//# LINK-2-19 While UP, a frame at the front of its VC's transmit queue whose VC is not agreed, or
//# that is longer than the agreed MFS, MUST NOT be sent: the end MUST report it to the upper layer
//# as lost (reason VC not agreed, or longer than the peer's MFS), count it (`not_agreed_vc`,
//# `oversize_for_peer`) and go on with the frame behind it.
fn queued_frame_beyond_the_peer_mfs_is_reported() {
    let b_cfg = Config {
        mfs: 1500,
        ..config_b()
    };
    let mut bench = Bench::new(config_a(), b_cfg);
    bench.submit(0, 0, &payload_for_frame(1000, 0));
    bench.submit(0, 0, &payload_for_frame(3000, 1));
    bench.submit(0, 0, &payload_for_frame(1000, 2));
    bench.bring_up();
    bench.settle(100_000);
    assert_eq!(bench.delivered_tags(1, 0), vec![0, 2]);
    let lost: Vec<(LostReason, u32)> = bench.events[0]
        .iter()
        .filter_map(|(_, e)| match e {
            Ev::Lost {
                reason, payload, ..
            } => Some((*reason, tag_of(payload))),
            _ => None,
        })
        .collect();
    assert_eq!(lost, vec![(LostReason::ExceedsPeerMfs, 1)]);
    assert_eq!(bench.end(0).counters().oversize_for_peer, 1);
}

/// Stalls and losses together (every tenth new frame vanishes, VC 0's receiver holds its buffer
/// for a while): the TX never sends a CC while its replay buffer holds a frame (the bench checks
/// every CC), yet CCs go whenever it is empty; no credit is recovered because none leaked.
//= type=test
//# LINK-5-12 The TX MUST NOT send a CC while its replay buffer holds a frame.
//# LINK-5-8 [...] Because the TX sends CC only when nothing it sent is unacknowledged, the
//# difference is credits leaked by a fault, never frames in flight.
#[test]
fn cc_never_with_frames_in_the_replay_buffer() {
    let mut bench = Bench::up(config_a(), config_b());
    bench.set_filter(|s| match s.data {
        Some((_, seq, false)) if s.dir == 0 && seq % 10 == 5 => Fate::Drop,
        _ => Fate::Deliver,
    });
    bench.hold(1, 0);
    for i in 0..100 {
        bench.submit(0, 0, &payload_for_frame(1024, i));
    }
    bench.run_for(25_000);
    bench.release_held(1, 0);
    bench.settle(500_000);
    bench.run_for(20_000);
    let cc: Vec<&Sent> = bench
        .trace
        .iter()
        .filter(|s| s.dir == 0 && s.kind == FrameKind::CreditResync)
        .collect();
    assert!(cc.len() >= 4);
    assert!(cc.iter().all(|s| s.replay_after == 0));
    assert_eq!(bench.end(1).counters().credits_recovered, [0; 8]);
    assert!(bench.end(0).counters().credit_stalls[0] > 0);
    assert!(bench.end(0).counters().frames_replayed > 0);
    assert_in_order(&bench.delivered_tags(1, 0), 0..100);
}

/// Two ends joined back to back (no wire delay): moves frames both ways until neither has
/// anything to send, delivering B's events to `on_b`. Returns the frames A sent.
fn pump(a: &mut Link, b: &mut Link, now: Instant, buf: &mut [u8], mut on_b: impl FnMut(&Ev)) {
    loop {
        let mut moved = false;
        while let Some(t) = a.poll_transmit(now, buf).unwrap() {
            b.handle_frame(now, &buf[..t.len]);
            moved = true;
        }
        let mut claims = Vec::new();
        while let Some(ev) = b.poll_event() {
            if let Event::Delivered {
                vc,
                seq,
                payload,
                release,
            } = ev
            {
                on_b(&Ev::Delivered {
                    vc: vc.value(),
                    seq: seq.value(),
                    payload: payload.to_vec(),
                });
                claims.push(release);
            }
        }
        for c in claims {
            b.release(c).unwrap();
        }
        while let Some(t) = b.poll_transmit(now, buf).unwrap() {
            a.handle_frame(now, &buf[..t.len]);
            moved = true;
        }
        while a.poll_event().is_some() {}
        if !moved {
            return;
        }
    }
}

/// More than 2^20 frames: the sequence number wraps from 0xFFFFF to 0. The frame with sequence
/// number 0xFFFFF is lost on its first transmission, so the NACK carries 0xFFFFE and the replay
/// runs across the wrap; every frame still arrives once, in order.
//= type=test
//# WIRE-3-4 Sequence numbers are 20-bit values compared modulo 2^20; the value following 0xFFFFF
//# is 0x00000.
//# LINK-3-1 Every DATA frame MUST carry the next TX sequence number, which advances by one (modulo
//# 2^20) for every new frame
//# LINK-3-4 The TX MUST accept it only if *S* lies between the sequence number before the oldest
//# frame of the buffer and the newest frame sent, inclusive (modulo 2^20)
#[test]
fn sequence_numbers_wrap() {
    let cfg = |c: Config| Config {
        ack_spacing: 64 * 64,
        ..c
    };
    let mut a = Link::new(cfg(config_a())).unwrap();
    let mut b = Link::new(cfg(config_b())).unwrap();
    let mut buf = vec![0u8; 9216];
    let mut now = at(0);
    a.physical_up(now);
    b.physical_up(now);
    pump(&mut a, &mut b, now, &mut buf, |_| {});
    assert!(a.is_up() && b.is_up());
    let total: u32 = (1 << 20) + 64;
    let mut next_seq = 0u32;
    let mut submitted = 0u32;
    let mut bad = 0u32;
    let mut dropped = false;
    while next_seq < total {
        while submitted < total && a.queued(vc(0)).0 < 32 {
            a.submit(vc(0), &payload_len(12, submitted)).unwrap();
            submitted += 1;
        }
        // A's frames go one by one so that the one with sequence number 0xFFFFF can be lost.
        while let Some(t) = a.poll_transmit(now, &mut buf).unwrap() {
            if t.data == Some((vc(0), Seq::new(0xFFFFF), false)) && !dropped {
                dropped = true;
                continue;
            }
            b.handle_frame(now, &buf[..t.len]);
        }
        pump(&mut a, &mut b, now, &mut buf, |ev| {
            if let Ev::Delivered { seq, payload, .. } = ev {
                if tag_of(payload) != next_seq || *seq != next_seq & 0xFFFFF {
                    bad += 1;
                }
                next_seq += 1;
            }
        });
        now = at(now.as_nanos() + 10);
        if a.poll_timeout().is_some_and(|t| t <= now) {
            a.handle_timeout(now);
        }
        if b.poll_timeout().is_some_and(|t| t <= now) {
            b.handle_timeout(now);
        }
    }
    assert!(dropped);
    assert_eq!(bad, 0);
    assert_eq!(a.next_seq(), Seq::new(total & 0xFFFFF));
    assert_eq!(b.expected_seq(), Seq::new(total & 0xFFFFF));
    let (ca, cb) = (a.counters(), b.counters());
    assert_eq!(cb.nacks_sent, 1);
    assert_eq!(ca.replays_by_nack, 1);
    assert_eq!((ca.stale_acks, ca.flushes, cb.duplicates), (0, 0, 0));
    assert_eq!(cb.rx_frames[0], u64::from(total));
}

/// More than 2^20 credits flow through one VC: the cumulative 20-bit credit counters wrap and
/// the comparisons modulo 2^20 keep the link lossless and busy.
//= type=test
//# LINK-5-2 The TX MUST NOT send a new DATA frame on VC *v* unless its cost is at most
//# `grant[v] - (consumed[v] - freed_seen[v])` (modulo 2^20).
//# LINK-5-6 On a CF, the TX MUST set freed_seen[v] to the carried value for every VC in the mask
//# when the value is ahead of freed_seen[v] by 1..2^19-1 and not ahead of consumed[v]; otherwise
//# the entry is stale or impossible and MUST be ignored and counted. An entry equal to
//# freed_seen[v] (the periodic CF of LINK-5-10 when nothing changed) is neither taken nor counted;
//# an entry for a VC not agreed is counted. A lost CF is therefore repaired by the next one.
#[test]
fn credit_counters_wrap() {
    let frames = 3700u64;
    let mut s = pair_scenario(5.0, frames, 9216);
    for c in [&mut s.a, &mut s.b] {
        c.credit_size = 32;
        c.rx_credits = [4096, 0, 0, 0, 0, 0, 0, 0];
        c.vcs = 1;
    }
    let mut pair = Pair::new(s).unwrap();
    let r = pair.run();
    assert_lossless(&r);
    let total = frames * 288;
    assert!(total > 1 << 20);
    let (consumed, _) = pair.end(0).tx_counters(vc(0));
    assert_eq!(u64::from(consumed), total % (1 << 20));
    assert_eq!(r.counters[0].stale_cf_entries, 0);
    assert_eq!(r.counters[1].credit_overruns[0], 0);
    assert!(r.goodput_gbps > 0.9 * 400.0 * payload_efficiency(9216));
}

/// Every frame an end writes, of every kind: version 1; reserved bits zero; control frames carry
/// no sequence number, VC or flags; ACK and NACK are padded with zeros to 64 B.
//= type=test
//# WIRE-3-1 A transmitter MUST set the version to 1.
//# WIRE-3-7 Control frames (every kind other than DATA) carry no sequence number of their own;
//# their VC and flags fields are reserved.
//# WIRE-1.2-1 A transmitter MUST set every reserved bit and byte to zero.
//# LINK-3-1 [...] control frames carry none.
#[test]
fn header_fields_of_every_frame() {
    let mut bench = Bench::up(config_a(), config_b());
    let once = Rc::new(Cell::new(false));
    let o = once.clone();
    bench.set_filter(move |s| match s.data {
        Some((_, 4, false)) if s.dir == 0 && !o.get() => {
            o.set(true);
            Fate::Drop
        }
        _ => Fate::Deliver,
    });
    for i in 0..20 {
        bench.submit(0, (i % 2) as u8, &payload_for_frame(300, i));
        bench.submit(1, 0, &payload_for_frame(100, 100 + i));
    }
    bench.settle(100_000);
    bench.run_for(25_000);
    let mut seen = std::collections::BTreeSet::new();
    for s in &bench.trace {
        let f = &s.bytes;
        assert_eq!(f[14] >> 4, 1, "version of {:?}", s.kind);
        assert_eq!(FrameKind::from_u8(f[14] & 0xF), Some(s.kind));
        assert_eq!(f[16] >> 4, 0, "reserved bits 31..28 of {:?}", s.kind);
        assert_eq!(u32::from_be_bytes([f[16], f[17], f[18], f[19]]) >> 20, 0);
        match s.kind {
            FrameKind::Data => assert_eq!(f[15] & 0x1C, 0, "reserved flags"),
            kind => {
                assert_eq!(f[15], 0, "VC and flags of {kind:?}");
                if !matches!(kind, FrameKind::Ack | FrameKind::Nack) {
                    assert_eq!(&f[16..20], &[0; 4], "sequence field of {kind:?}");
                } else {
                    assert_eq!(f.len(), 64);
                    assert!(f[20..60].iter().all(|b| *b == 0), "padding of {kind:?}");
                }
            }
        }
        seen.insert(s.kind.to_u8());
    }
    assert_eq!(seen.len(), 7, "every kind was checked: {seen:?}");
}

// ----- withdrawal (LINK-6-5) ---------------------------------------------------------------------

/// The `Lost` events of `evs` as (VC, reason, tag).
fn lost_tags(evs: &[Ev]) -> Vec<(u8, LostReason, u32)> {
    evs.iter()
        .filter_map(|e| match e {
            Ev::Lost {
                vc,
                reason,
                payload,
                ..
            } => Some((*vc, *reason, tag_of(payload))),
            _ => None,
        })
        .collect()
}

/// An owned `Lost` event of a withdrawn frame.
fn withdrawn_ev(v: u8, payload: Vec<u8>) -> Ev {
    Ev::Lost {
        vc: v,
        reason: LostReason::Withdrawn,
        payload,
    }
}

/// While UP, with both VCs out of credit and frames in the replay buffer not yet delivered: a
/// withdrawal takes exactly the queued frames, reports them VC by VC in submission order with
/// their payloads, and none of them ever goes on the wire, while the replay buffer's frames are
/// still delivered. Frames submitted afterwards go as usual.
//= docs/spec/link.md#6-flush-and-re-initialisation
//= type=test
//# LINK-6-5 An upper layer MAY withdraw the frames it submitted that have not been sent yet, for
//# instance to send them over another link while this one is down. The end MUST then remove every
//# such frame from its transmit queues, whatever its state, and MUST NOT send any of them
//# afterwards. Frames in the replay buffer have been sent and are not withdrawn
//# LINK-6-6 The end MUST report each frame withdrawn by LINK-6-5 to the upper layer as a frame that
//# was never sent, after the events already pending and, on each VC, in submission order.
#[test]
fn withdraw_while_up_takes_only_the_unsent_frames() {
    // 1024 B frames cost 16 credits: three of them exhaust a grant of 48.
    let mut bench = Bench::up(
        config_a(),
        Config {
            mfs: 3072,
            ..config_b().with_uniform_credits(4, 48)
        },
    );
    // Until the withdrawal nothing comes back from B (no ACK, NACK or CF), and the first
    // transmissions of sequence numbers 1 and 2 vanish: the replay buffer holds frames B lacks.
    let quiet = Rc::new(Cell::new(true));
    let q = quiet.clone();
    bench.set_filter(move |s| match (s.dir, s.data) {
        (1, _) if q.get() => Fate::Drop,
        (0, Some((_, 1 | 2, false))) => Fate::Drop,
        _ => Fate::Deliver,
    });
    for i in 0..6 {
        bench.submit(0, 0, &payload_for_frame(1024, i));
    }
    for i in 100..105 {
        bench.submit(0, 1, &payload_for_frame(1024, i));
    }
    assert!(bench.run_until(|b| b.data_sent(0).len() == 6, 10_000));
    bench.run_for(200);
    assert_eq!(bench.data_sent(0).len(), 6, "both VCs are out of credit");
    let before = bench.end(0).counters().clone();
    assert_eq!(bench.end(0).replay_frames(), 6);
    assert_eq!(bench.end(0).queued(vc(0)).0, 3);
    assert_eq!(bench.end(0).queued(vc(1)).0, 2);
    assert_eq!(bench.end(0).tx_credits_available(vc(0)), 0);
    let seen = bench.events[0].len();

    assert_eq!(bench.ends[0].withdraw(), 5);
    let after = bench.end(0).counters().clone();
    assert_eq!(bench.end(0).queued(vc(0)), (0, 0));
    assert_eq!(bench.end(0).queued(vc(1)), (0, 0));
    assert_eq!(
        bench.end(0).replay_frames(),
        6,
        "the replay buffer is not withdrawn"
    );
    bench.after(0);
    let evs: Vec<Ev> = bench.events[0][seen..]
        .iter()
        .map(|(_, e)| e.clone())
        .collect();
    let expected: Vec<Ev> = (3..6)
        .map(|i| withdrawn_ev(0, payload_for_frame(1024, i)))
        .chain((103..105).map(|i| withdrawn_ev(1, payload_for_frame(1024, i))))
        .collect();
    assert_eq!(evs, expected);
    // The VCs waited without credit until the withdrawal left nothing waiting on them.
    assert!(after.credit_stall_ns[0] > 0 && after.credit_stall_ns[1] > 0);
    assert_eq!(
        after,
        counters_after(&before, |c| {
            c.frames_withdrawn = 5;
            c.credit_stall_ns = after.credit_stall_ns;
        })
    );

    quiet.set(false);
    bench.settle(100_000);
    bench.run_for(20_000);
    assert_eq!(bench.delivered_tags(1, 0), vec![0, 1, 2]);
    assert_eq!(bench.delivered_tags(1, 1), vec![100, 101, 102]);
    let sent: Vec<u32> = bench.data_sent(0).iter().map(|s| s.3).collect();
    for tag in [3, 4, 5, 103, 104] {
        assert!(
            !sent.contains(&tag),
            "withdrawn frame {tag} was sent: {sent:?}"
        );
    }
    assert_eq!(
        bench.events[0].len(),
        seen + 5,
        "{:?}",
        &bench.events[0][seen..]
    );

    // The link goes on: frames submitted after the withdrawal are delivered, in order.
    bench.submit(0, 0, &payload_for_frame(1024, 6));
    bench.submit(0, 1, &payload_for_frame(1024, 105));
    bench.settle(100_000);
    assert_eq!(bench.delivered_tags(1, 0), vec![0, 1, 2, 6]);
    assert_eq!(bench.delivered_tags(1, 1), vec![100, 101, 102, 105]);
    let c = bench.end(0).counters();
    assert_eq!(c.frames_withdrawn, 5);
    assert_eq!(
        c.credit_stall_ns, after.credit_stall_ns,
        "no stall after the withdrawal"
    );
}

/// After a physical link down the upper layer withdraws what the link still held queued: first the
/// link-down, then the replay buffer's frames of unknown fate, then the withdrawn frames, each in
/// order. After the link is UP again none of the withdrawn frames goes, and a frame submitted while
/// down is delivered.
//= docs/spec/link.md#6-flush-and-re-initialisation
//= type=test
//# LINK-6-5 An upper layer MAY withdraw the frames it submitted that have not been sent yet, for
//# instance to send them over another link while this one is down. The end MUST then remove every
//# such frame from its transmit queues, whatever its state, and MUST NOT send any of them
//# afterwards. Frames in the replay buffer have been sent and are not withdrawn: an
//# acknowledgement, a FLUSH or a link down settles them (LINK-6-1). Frames submitted after the
//# withdrawal are sent as usual, after the withdrawn frames have been reported.
//# LINK-6-1 In FLUSH the TX MUST remove every frame from the replay buffer and report them to the
//# upper layer, in sequence order, as frames of unknown fate
#[test]
fn withdraw_after_physical_down_follows_the_unknown_fate_frames() {
    let mut bench = Bench::up(
        config_a(),
        Config {
            mfs: 3072,
            ..config_b().with_uniform_credits(4, 48)
        },
    );
    // Nothing comes back from B: the three frames sent stay in the replay buffer.
    bench.set_filter(|s| {
        if s.dir == 1 {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    for i in 0..7 {
        bench.submit(0, 0, &payload_for_frame(1024, i));
    }
    assert!(bench.run_until(|b| b.data_sent(0).len() == 3, 10_000));
    bench.run_for(200);
    assert_eq!(bench.end(0).replay_frames(), 3);
    assert_eq!(bench.end(0).queued(vc(0)).0, 4);
    let seen = bench.events[0].len();

    let now = bench.now();
    bench.ends[0].physical_down(now);
    assert_eq!(bench.end(0).tx_state(), TxState::Off);
    assert_eq!(bench.ends[0].withdraw(), 4);
    bench.after(0);
    bench.ends[1].physical_down(now);
    bench.after(1);
    bench.flights = [VecDeque::new(), VecDeque::new()];
    let evs: Vec<Ev> = bench.events[0][seen..]
        .iter()
        .map(|(_, e)| e.clone())
        .collect();
    let mut expected = vec![Ev::Down(DownReason::Physical)];
    expected.extend((0..3).map(|i| Ev::Lost {
        vc: 0,
        reason: LostReason::UnknownFate,
        payload: payload_for_frame(1024, i),
    }));
    expected.extend((3..7).map(|i| withdrawn_ev(0, payload_for_frame(1024, i))));
    assert_eq!(evs, expected);
    let c = bench.end(0).counters();
    assert_eq!((c.frames_unknown_fate, c.frames_withdrawn), (3, 4));
    assert!(bench.end(0).is_idle());

    // A frame submitted while down goes after the new UP; the withdrawn ones never do.
    bench.filter = None;
    bench.submit(0, 0, &payload_for_frame(1024, 7));
    bench.run_for(1_000);
    let now = bench.now();
    for e in 0..2 {
        bench.ends[e].physical_up(now);
        bench.after(e);
    }
    bench.settle(100_000);
    bench.run_for(20_000);
    assert_eq!(bench.delivered_tags(1, 0), vec![0, 1, 2, 7]);
    let sent: Vec<u32> = bench.data_sent(0).iter().map(|s| s.3).collect();
    assert!(sent.iter().all(|t| !(3..7).contains(t)), "{sent:?}");
    assert_eq!(
        lost_tags(
            &bench.events[0][seen..]
                .iter()
                .map(|(_, e)| e.clone())
                .collect::<Vec<_>>()
        )
        .len(),
        7,
        "no other frame was reported lost"
    );
}

/// Withdrawing with nothing queued does nothing: no event, no counter, the replay buffer intact.
//= docs/spec/link.md#6-flush-and-re-initialisation
//= type=test
//# LINK-6-5 [...] Frames in the replay buffer have been sent and are not withdrawn
#[test]
fn withdraw_with_nothing_queued_is_a_no_op() {
    let mut fresh = Link::new(config_a()).unwrap();
    assert_eq!(fresh.withdraw(), 0);
    assert_eq!(fresh.poll_event(), None);
    assert_eq!(*fresh.counters(), Counters::default());

    let (mut link, t) = lone_end_up(config_a(), &config_b(), 500);
    for i in 0..2 {
        link.submit(vc(0), &payload_for_frame(256, i)).unwrap();
    }
    assert_eq!(drain_tx(&mut link, t).len(), 2);
    let before = link.counters().clone();
    assert_eq!(link.withdraw(), 0);
    assert_eq!(link.withdraw(), 0);
    assert_eq!(events_of(&mut link), vec![]);
    assert_eq!(*link.counters(), before);
    assert_eq!(link.replay_frames(), 2);
    // The replay buffer is still acknowledged as usual.
    link.handle_frame(t, &emit(LinkFrame::Ack(Seq::new(1))));
    assert_eq!(link.replay_frames(), 0);
    assert!(link.is_idle());
}

/// Frames submitted after a withdrawal, before its events are taken, queue behind the withdrawn
/// ones, are not withdrawn by it, and are delivered once those events have been taken.
//= docs/spec/link.md#6-flush-and-re-initialisation
//= type=test
//# LINK-6-5 [...] Frames submitted after the withdrawal are sent as usual, after the withdrawn
//# frames have been reported.
#[test]
fn submit_after_withdraw_is_delivered() {
    let (mut link, t) = lone_end_up(config_a(), &config_b(), 500);
    for i in 0..3 {
        link.submit(vc(0), &payload_for_frame(256, i)).unwrap();
    }
    assert_eq!(link.withdraw(), 3);
    link.submit(vc(0), &payload_for_frame(256, 10)).unwrap();
    link.submit(vc(0), &payload_for_frame(300, 11)).unwrap();
    assert_eq!(link.queued(vc(0)), (2, 256 - 24 + 300 - 24));
    assert!(!link.is_idle());
    // Not before the withdrawn frames are reported.
    let early: Vec<FrameKind> = kinds(&drain_tx(&mut link, t));
    assert!(!early.contains(&FrameKind::Data), "{early:?}");
    let evs = events_of(&mut link);
    let expected: Vec<Ev> = (0..3)
        .map(|i| withdrawn_ev(0, payload_for_frame(256, i)))
        .collect();
    assert_eq!(evs, expected);
    let sent = drain_tx(&mut link, t);
    let tags: Vec<u32> = sent
        .iter()
        .filter(|f| kinds(std::slice::from_ref(*f)) == vec![FrameKind::Data])
        .map(|f| tag_of(data_payload(f)))
        .collect();
    assert_eq!(tags, vec![10, 11]);

    // And end to end: B delivers exactly the later frames.
    let mut bench = Bench::up(config_a(), config_b());
    for i in 0..3 {
        bench.ends[0]
            .submit(vc(0), &payload_for_frame(512, i))
            .unwrap();
    }
    assert_eq!(bench.ends[0].withdraw(), 3);
    bench.submit(0, 0, &payload_for_frame(512, 10));
    bench.submit(0, 0, &payload_for_frame(512, 11));
    bench.after(0);
    bench.settle(100_000);
    assert_eq!(bench.delivered_tags(1, 0), vec![10, 11]);
    assert_eq!(
        lost_tags(
            &bench.events[0]
                .iter()
                .map(|(_, e)| e.clone())
                .collect::<Vec<_>>()
        ),
        vec![
            (0, LostReason::Withdrawn, 0),
            (0, LostReason::Withdrawn, 1),
            (0, LostReason::Withdrawn, 2)
        ]
    );
}

/// Withdrawals in every state, repeated, with submissions and partly taken events in between:
/// OFF (never UP), INIT, and FLUSH with its frames of unknown fate still to be reported. Each
/// withdrawn frame is reported once, after the events pending at the withdrawal.
//= docs/spec/link.md#6-flush-and-re-initialisation
//= type=test
//# LINK-6-5 An upper layer MAY withdraw the frames it submitted that have not been sent yet, for
//# instance to send them over another link while this one is down. The end MUST then remove every
//# such frame from its transmit queues, whatever its state, and MUST NOT send any of them
//# afterwards. Frames in the replay buffer have been sent and are not withdrawn: an
//# acknowledgement, a FLUSH or a link down settles them (LINK-6-1). Frames submitted after the
//# withdrawal are sent as usual, after the withdrawn frames have been reported.
#[test]
fn withdraw_in_every_state() {
    let p = |i: u32| payload_for_frame(200, i);
    // OFF: two VCs, then a second withdrawal while the first one's events are partly taken.
    let mut link = Link::new(config_a()).unwrap();
    for i in 0..3 {
        link.submit(vc(0), &p(i)).unwrap();
    }
    link.submit(vc(1), &p(10)).unwrap();
    assert_eq!(link.withdraw(), 4);
    let first = match link.poll_event() {
        Some(Event::Lost {
            vc,
            reason,
            payload,
        }) => (vc.value(), reason, tag_of(payload)),
        other => panic!("{other:?}"),
    };
    assert_eq!(first, (0, LostReason::Withdrawn, 0));
    link.submit(vc(0), &p(3)).unwrap();
    link.submit(vc(2), &p(20)).unwrap();
    assert_eq!(link.withdraw(), 2);
    let rest: Vec<(u8, u32)> = lost_tags(&events_of(&mut link))
        .into_iter()
        .map(|(v, r, t)| {
            assert_eq!(r, LostReason::Withdrawn);
            (v, t)
        })
        .collect();
    assert_eq!(rest, vec![(0, 1), (0, 2), (1, 10), (0, 3), (2, 20)]);
    assert_eq!(link.counters().frames_withdrawn, 6);
    assert_eq!(link.queued(vc(0)), (0, 0));
    assert!(link.is_idle());

    // INIT: the frames never go, even once the link is UP.
    let peer = config_b();
    let mut link = Link::new(config_a()).unwrap();
    let t = Instant::from_nanos(10);
    link.physical_up(t);
    link.submit(vc(0), &p(0)).unwrap();
    link.submit(vc(3), &p(30)).unwrap();
    assert_eq!(link.tx_state(), TxState::Init);
    assert_eq!(link.withdraw(), 2);
    link.handle_frame(t, &emit(LinkFrame::Init(init_of(&peer, 7))));
    let nonce = link.nonce();
    link.handle_frame(
        t,
        &emit(LinkFrame::InitEcho {
            echo_nonce: nonce,
            init: init_of(&peer, 7),
        }),
    );
    assert!(link.is_up());
    let evs = events_of(&mut link);
    assert_eq!(
        lost_tags(&evs),
        vec![
            (0, LostReason::Withdrawn, 0),
            (3, LostReason::Withdrawn, 30)
        ]
    );
    assert!(matches!(evs.last(), Some(Ev::Up(_))), "{evs:?}");
    assert!(!kinds(&drain_tx(&mut link, t)).contains(&FrameKind::Data));

    // FLUSH, its events not taken yet: the withdrawn frames follow the frames of unknown fate.
    let (mut link, t) = lone_end_up(config_a(), &peer, 500);
    for i in 0..3 {
        link.submit(vc(0), &p(i)).unwrap();
    }
    assert_eq!(drain_tx(&mut link, t).len(), 3);
    // NACKs of nothing: three replays, then FLUSH; frames queued before the last NACK wait.
    let nack = emit(LinkFrame::Nack(Seq::new(0xFFFFF)));
    for k in 0..4 {
        if k == 3 {
            for i in 3..5 {
                link.submit(vc(0), &p(i)).unwrap();
            }
            link.submit(vc(1), &p(10)).unwrap();
        }
        link.handle_frame(t, &nack);
        if k < 3 {
            assert_eq!(drain_tx(&mut link, t).len(), 3);
        }
    }
    assert_eq!(link.tx_state(), TxState::Flush);
    assert_eq!(link.withdraw(), 3);
    let evs = events_of(&mut link);
    assert_eq!(evs[0], Ev::Down(DownReason::Flush));
    assert_eq!(
        lost_tags(&evs),
        vec![
            (0, LostReason::UnknownFate, 0),
            (0, LostReason::UnknownFate, 1),
            (0, LostReason::UnknownFate, 2),
            (0, LostReason::Withdrawn, 3),
            (0, LostReason::Withdrawn, 4),
            (1, LostReason::Withdrawn, 10),
        ]
    );
    assert_eq!(evs.len(), 7, "{evs:?}");
    assert!(link.is_idle());
}

/// Withdrawals while refusals by the peer wait to be reported: a frame beyond the peer's MFS at the
/// front of VC 0 and frames on VC 3, which the peer lacks. Each frame is reported exactly once,
/// the refused ones as refused, the others as withdrawn; also when the upper layer has taken
/// part of the events before withdrawing.
//= docs/spec/link.md#6-flush-and-re-initialisation
//= type=test
//# LINK-6-5 An upper layer MAY withdraw the frames it submitted that have not been sent yet, for
//# instance to send them over another link while this one is down. The end MUST then remove every
//# such frame from its transmit queues, whatever its state, and MUST NOT send any of them
//# afterwards. Frames in the replay buffer have been sent and are not withdrawn: an
//# acknowledgement, a FLUSH or a link down settles them (LINK-6-1). Frames submitted after the
//# withdrawal are sent as usual, after the withdrawn frames have been reported.
#[test]
fn withdraw_beside_pending_refusals_reports_each_frame_once() {
    let peer = Config {
        mfs: 1500,
        ..config_b().with_uniform_credits(2, 512)
    };
    // An end with frames queued before UP; UP with the peer; its first DATA frame sent and the
    // oversize one found. Events pending: UP, VC 3's front refused, VC 0's front refused.
    let setup = || {
        let mut link = Link::new(config_a()).unwrap();
        let t = Instant::from_nanos(10);
        link.physical_up(t);
        link.submit(vc(0), &payload_for_frame(1000, 0)).unwrap();
        link.submit(vc(0), &payload_for_frame(3000, 1)).unwrap();
        link.submit(vc(0), &payload_for_frame(1000, 2)).unwrap();
        link.submit(vc(0), &payload_for_frame(1000, 3)).unwrap();
        link.submit(vc(3), &payload_for_frame(500, 30)).unwrap();
        link.submit(vc(3), &payload_for_frame(500, 31)).unwrap();
        link.handle_frame(t, &emit(LinkFrame::Init(init_of(&peer, 7))));
        let nonce = link.nonce();
        link.handle_frame(
            t,
            &emit(LinkFrame::InitEcho {
                echo_nonce: nonce,
                init: init_of(&peer, 7),
            }),
        );
        let sent = drain_tx(&mut link, t);
        let data: Vec<u32> = sent
            .iter()
            .filter(|f| kinds(std::slice::from_ref(*f)) == vec![FrameKind::Data])
            .map(|f| tag_of(data_payload(f)))
            .collect();
        assert_eq!(data, vec![0]);
        (link, t)
    };

    // Nothing taken before the withdrawal.
    let (mut link, t) = setup();
    assert_eq!(link.withdraw(), 3);
    let evs = events_of(&mut link);
    assert!(matches!(evs[0], Ev::Up(_)));
    assert_eq!(
        lost_tags(&evs),
        vec![
            (3, LostReason::VcNotAgreed, 30),
            (0, LostReason::ExceedsPeerMfs, 1),
            (0, LostReason::Withdrawn, 2),
            (0, LostReason::Withdrawn, 3),
            (3, LostReason::Withdrawn, 31),
        ]
    );
    assert_eq!(evs.len(), 6, "{evs:?}");
    assert!(!kinds(&drain_tx(&mut link, t)).contains(&FrameKind::Data));
    assert_eq!(link.queued(vc(0)), (0, 0));
    assert_eq!(link.queued(vc(3)), (0, 0));
    let c = link.counters();
    assert_eq!(
        (c.oversize_for_peer, c.not_agreed_vc, c.frames_withdrawn),
        (1, 1, 3)
    );
    events_of(&mut link);
    link.handle_frame(t, &emit(LinkFrame::Ack(Seq::new(0))));
    assert!(link.is_idle());

    // The upper layer took the link-up and VC 3's first refusal (still lent out) first: the
    // frame behind it is refused in turn before the withdrawal looks at VC 3.
    let (mut link, t) = setup();
    assert!(matches!(link.poll_event(), Some(Event::LinkUp(_))));
    match link.poll_event() {
        Some(Event::Lost {
            vc,
            reason,
            payload,
        }) => assert_eq!(
            (vc.value(), reason, tag_of(payload)),
            (3, LostReason::VcNotAgreed, 30)
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(link.withdraw(), 2);
    let evs = events_of(&mut link);
    assert_eq!(
        lost_tags(&evs),
        vec![
            (0, LostReason::ExceedsPeerMfs, 1),
            (3, LostReason::VcNotAgreed, 31),
            (0, LostReason::Withdrawn, 2),
            (0, LostReason::Withdrawn, 3),
        ]
    );
    assert_eq!(evs.len(), 4, "{evs:?}");
    assert!(!kinds(&drain_tx(&mut link, t)).contains(&FrameKind::Data));
    let c = link.counters();
    assert_eq!(
        (c.oversize_for_peer, c.not_agreed_vc, c.frames_withdrawn),
        (1, 2, 2)
    );
    link.handle_frame(t, &emit(LinkFrame::Ack(Seq::new(0))));
    assert!(link.is_idle());
}

// ----- version 1.1 of link.md: bring-up, refusal, pipeline, stomping, replay counting -------------

/// Brings a lone end UP with hand-crafted frames from a peer announcing `peer`.
fn lone_end_up_with(cfg: Config, peer: InitRepr) -> (Link, Instant) {
    let mut link = Link::new(cfg).unwrap();
    let t = Instant::from_nanos(10);
    link.physical_up(t);
    drain_tx(&mut link, t);
    link.handle_frame(t, &emit(LinkFrame::Init(peer)));
    let own = link.nonce();
    link.handle_frame(
        t,
        &emit(LinkFrame::InitEcho {
            echo_nonce: own,
            init: peer,
        }),
    );
    assert!(link.is_up());
    drain_tx(&mut link, t);
    events_of(&mut link);
    (link, t)
}

/// The next DATA frame the end writes at `now` (control frames before it are skipped).
fn next_data(link: &mut Link, now: Instant) -> Option<(Vc, Seq, bool)> {
    let mut buf = vec![0u8; 9216];
    while let Some(t) = link.poll_transmit(now, &mut buf).unwrap() {
        if t.data.is_some() {
            return t.data;
        }
    }
    None
}

fn stomp_fcs(frame: &mut [u8]) {
    let n = frame.len() - fcs::FCS_LEN;
    let sum = fcs::stomped_bytes(&frame[..n]);
    frame[n..].copy_from_slice(&sum);
}

//= type=test
//# LINK-2-9 A nonce MUST NOT be 0 and MUST differ from the end's previous nonce.
//# LINK-2-1 On entering INIT an end MUST draw a new nonce (LINK-2-9) and send its first INIT at
//# once
#[test]
fn nonces_are_never_zero_and_change_at_every_initialisation() {
    for seed in 0..200u64 {
        let mut l = Link::new(Config {
            nonce_seed: seed,
            ..config_a()
        })
        .unwrap();
        l.physical_up(at(0));
        assert_eq!(kinds(&drain_tx(&mut l, at(0))), vec![FrameKind::Init]);
        let mut prev = l.nonce();
        assert_ne!(prev, 0);
        for i in 1..20 {
            l.physical_down(at(i));
            l.physical_up(at(i));
            let n = l.nonce();
            assert_ne!(n, 0, "seed {seed}");
            assert_ne!(n, prev, "seed {seed}");
            prev = n;
        }
    }
}

/// Frames that reach an end that is not UP are counted once, as received while not UP, unless
/// an earlier stage of the pipeline discards them; a damaged one draws no NACK.
//= type=test
//# LINK-2-10 DATA frames received while not UP MUST be discarded and counted.
//# LINK-2-11 An end MUST discard, and count as received while not UP, every frame that passes the
//# checks of wire.md §7 up to the kind while its physical link is down, and every ACK, NACK, CF or
//# CC frame while it is not UP.
//# LINK-4-13 A frame discarded before link-layer acceptance [...] MUST NOT consume a sequence
//# number or a credit. Only a damaged frame (size or FCS) draws a NACK, and only from an RX in
//# SEND_ACKS: an RX that is OFF, in INIT or already in SEND_NACK or NACK_SENT sends none for it.
//# LINK-7-1 Every discard this document or wire.md requires to be counted MUST increment exactly
//# one counter.
#[test]
fn frames_while_not_up_are_counted_as_such() {
    let mut l = Link::new(config_b()).unwrap();
    let t = at(5);
    let p = payload_for_frame(256, 1);
    let credits = CreditRepr {
        counters: [Some(0), None, None, None, None, None, None, None],
    };
    let mut bad = data_frame(0, 0, false, &p);
    bad[30] ^= 1;
    let down: Vec<Vec<u8>> = vec![
        data_frame(0, 0, false, &p),
        emit(LinkFrame::Ack(Seq::new(0))),
        emit(LinkFrame::Init(init_of(&config_a(), 9))),
    ];
    for f in &down {
        let before = l.counters().clone();
        l.handle_frame(t, f);
        assert_eq!(*l.counters(), counters_after(&before, |c| c.rx_not_up += 1));
    }
    let before = l.counters().clone();
    l.handle_frame(t, &bad);
    assert_eq!(
        *l.counters(),
        counters_after(&before, |c| c.rx_fcs_errors += 1)
    );
    l.physical_up(t);
    assert_eq!(kinds(&drain_tx(&mut l, t)), vec![FrameKind::Init]);
    let init: Vec<Vec<u8>> = vec![
        data_frame(0, 0, false, &p),
        emit(LinkFrame::Ack(Seq::new(0))),
        emit(LinkFrame::Nack(Seq::new(0))),
        emit(LinkFrame::CreditUpdate(credits)),
        emit(LinkFrame::CreditResync(credits)),
    ];
    for f in &init {
        let before = l.counters().clone();
        l.handle_frame(t, f);
        assert_eq!(*l.counters(), counters_after(&before, |c| c.rx_not_up += 1));
    }
    let before = l.counters().clone();
    l.handle_frame(t, &bad);
    assert_eq!(
        *l.counters(),
        counters_after(&before, |c| c.rx_fcs_errors += 1)
    );
    assert!(
        drain_tx(&mut l, t).is_empty(),
        "no NACK from an end in INIT"
    );
    assert_eq!(l.counters().frames_arrived(), 10);
}

/// An INIT or INIT_ECHO whose grant cannot carry one frame of the MFS that would be agreed is
/// refused: no echo, not UP, counted each time, its reason reported once.
//= type=test
//# LINK-2-12 An end MUST NOT answer an INIT, nor come UP on an INIT_ECHO, whose grants cannot carry
//# one frame of the MFS that would be agreed on some VC that would be agreed: `grant[v] <
//# ceil((mfs + credit_overhead) / credit_size)` with the sender's credit size and overhead. It
//# MUST count the frame as refused, stay in its state and report the reason (the VC and the
//# numbers) to the upper layer.
#[test]
fn init_whose_grant_cannot_carry_a_frame_is_refused_with_a_reason() {
    let mut l = Link::new(config_b()).unwrap();
    let t = at(10);
    l.physical_up(t);
    drain_tx(&mut l, t);
    let mut peer = init_of(&config_a(), 77);
    peer.credits[2] = 144;
    peer.credit_overhead = 64;
    let before = l.counters().clone();
    l.handle_frame(t, &emit(LinkFrame::Init(peer)));
    l.handle_frame(t, &emit(LinkFrame::Init(peer)));
    assert_eq!(
        *l.counters(),
        counters_after(&before, |c| c.init_refused += 2)
    );
    assert!(drain_tx(&mut l, t).is_empty(), "no INIT_ECHO");
    let refused = |echo| {
        Ev::Notice(Notice::InitRefused {
            echo,
            vc: vc(2),
            grant: 144,
            needed: 145,
            mfs: 9216,
            credit_size: 64,
            credit_overhead: 64,
        })
    };
    assert_eq!(events_of(&mut l), vec![refused(false)]);
    let echo = |init: InitRepr, nonce: u32| {
        emit(LinkFrame::InitEcho {
            echo_nonce: nonce,
            init,
        })
    };
    l.handle_frame(t, &echo(peer, l.nonce()));
    assert!(!l.is_up());
    assert_eq!(l.counters().init_refused, 3);
    assert_eq!(events_of(&mut l), vec![refused(true)]);
    // Without the overhead 144 credits carry a 9216 B frame.
    peer.credit_overhead = 0;
    l.handle_frame(t, &echo(peer, l.nonce()));
    assert!(l.is_up());
    assert_eq!(l.counters().init_refused, 3);
}

//= type=test
//# LINK-2-13 An end MUST NOT be configured with a grant that cannot hold one frame of its own MFS:
//# for every VC *v* below `vcs`, `rx_credits[v] * credit_size >= mfs + credit_overhead`.
#[test]
fn a_grant_smaller_than_one_frame_is_a_configuration_error() {
    let c = Config {
        credit_overhead: 16,
        ..config_a().with_uniform_credits(4, 144)
    };
    assert_eq!(Link::new(c).unwrap_err().field, "rx_credits");
    for c in [
        Config {
            credit_overhead: 16,
            ..config_a().with_uniform_credits(4, 145)
        },
        Config {
            mfs: 1024,
            ..config_a().with_uniform_credits(4, 16)
        },
    ] {
        assert!(Link::new(c).is_ok());
    }
}

/// An initialisation that lasts is reported once, and INIT frames go on.
//= type=test
//# LINK-2-14 An end in INIT whose physical link is up MUST go on sending INIT frames for as long as
//# it stays in INIT; when it has stayed there for `init_timeout` it MUST report it to the upper
//# layer and count it, once per initialisation.
#[test]
fn a_long_initialisation_is_reported_once_and_goes_on() {
    let cfg = Config {
        init_timeout: core::time::Duration::from_micros(5),
        ..config_a()
    };
    let mut l = Link::new(cfg).unwrap();
    l.physical_up(at(0));
    let mut inits = 0;
    let mut notices = Vec::new();
    let run = |l: &mut Link, until: u64, inits: &mut usize, notices: &mut Vec<Ev>| {
        while let Some(to) = l.poll_timeout() {
            if to.as_nanos() > until {
                break;
            }
            l.handle_timeout(to);
            let out = drain_tx(l, to);
            *inits += kinds(&out)
                .iter()
                .filter(|k| **k == FrameKind::Init)
                .count();
            notices.extend(events_of(l));
        }
    };
    run(&mut l, 20_000, &mut inits, &mut notices);
    assert_eq!(l.counters().init_timeouts, 1);
    assert_eq!(
        notices,
        vec![Ev::Notice(Notice::InitTimeout {
            waited: core::time::Duration::from_micros(5)
        })]
    );
    assert!(inits >= 20, "{inits} INIT frames in 20 us");
    l.physical_down(at(20_001));
    l.physical_up(at(20_001));
    run(&mut l, 30_000, &mut inits, &mut notices);
    assert_eq!(l.counters().init_timeouts, 2);
}

//= type=test
//# LINK-2-15 An end MUST take the peer's MAC address from every INIT it answers and from the
//# INIT_ECHO that brings it UP, MUST keep it across re-initialisation, and MUST forget it when the
//# physical link goes down.
#[test]
fn the_peer_mac_is_kept_across_reinit_and_forgotten_on_physical_down() {
    let (mut l, t) = lone_end_up(config_a(), &config_b(), 500);
    let dst = |f: &Vec<u8>| FrameRepr::parse_bytes(f, 9216).unwrap().eth.dst;
    // The peer restarts: re-initialisation, still addressed to it.
    l.handle_frame(t, &emit(LinkFrame::Init(init_of(&config_b(), 501))));
    assert!(!l.is_up());
    let out = drain_tx(&mut l, t);
    assert_eq!(kinds(&out), vec![FrameKind::InitEcho, FrameKind::Init]);
    assert!(out.iter().all(|f| dst(f) == MAC_B));
    l.physical_down(t);
    l.physical_up(t);
    let out = drain_tx(&mut l, t);
    assert_eq!(kinds(&out), vec![FrameKind::Init]);
    assert_eq!(dst(&out[0]), MacAddr::LINK_LOCAL);
}

//= type=test
//# LINK-2-16 Before it is UP an end MUST check a received frame's size against its own configured
//# MFS; while UP, against the agreed MFS.
#[test]
fn sizes_are_checked_against_the_configured_mfs_before_up_and_the_agreed_one_after() {
    let big = data_frame(0, 0, false, &payload_for_frame(4000, 1));
    let mut l = Link::new(config_a()).unwrap();
    l.physical_up(at(1));
    drain_tx(&mut l, at(1));
    let before = l.counters().clone();
    l.handle_frame(at(1), &big);
    assert_eq!(*l.counters(), counters_after(&before, |c| c.rx_not_up += 1));
    let peer = Config {
        mfs: 1500,
        ..config_b()
    };
    let (mut l, t) = lone_end_up(config_a(), &peer, 500);
    let before = l.counters().clone();
    l.handle_frame(t, &big);
    assert_eq!(
        *l.counters(),
        counters_after(&before, |c| c.rx_damaged += 1)
    );
    assert_eq!(nacks_in(&drain_tx(&mut l, t)), vec![0xFFFFF]);
}

/// A NACK that comes before the pending replay has sent anything is not another replay; one that
/// comes after is. An ACK during a replay lets it go on; a NACK that empties the buffer starts
/// nothing.
//= type=test
//# LINK-3-9 A NACK or a replay-timer expiry that comes while a replay is due but has not sent its
//# first frame yet MUST NOT start another replay and MUST NOT count towards `replay_count_max`: the
//# pending replay already begins with the oldest frame. The replay timer is restarted.
//# LINK-3-10 An ACK or NACK that acknowledges frames during a replay MUST remove them from the
//# buffer; the replay then goes on with the first frame it has not re-sent yet, or with the oldest
//# frame left if that is later.
//# LINK-3-14 A NACK that leaves the replay buffer empty MUST NOT start a replay and MUST NOT count
//# towards `replay_count_max`.
//# LINK-3-7 The TX MUST count the replays it starts, by a NACK or by the replay timer, since the
//# last acknowledgement progress: the count rises by one when a replay starts and returns to 0 when
//# an ACK or NACK acknowledges at least one frame
#[test]
fn a_nack_before_the_pending_replay_sent_anything_is_not_another_replay() {
    let (mut l, t) = lone_end_up(config_a(), &config_b(), 500);
    for i in 0..4 {
        l.submit(vc(0), &payload_for_frame(256, i)).unwrap();
    }
    for i in 0..4 {
        assert_eq!(next_data(&mut l, t), Some((vc(0), Seq::new(i), false)));
    }
    let nack = |s: u32| emit(LinkFrame::Nack(Seq::new(s)));
    let count = |l: &Link| (l.replay_count(), l.counters().replays_by_nack);
    l.handle_frame(t, &nack(0xFFFFF));
    assert_eq!(count(&l), (1, 1));
    assert_eq!(l.tx_state(), TxState::Replay);
    l.handle_frame(t, &nack(0xFFFFF));
    assert_eq!(count(&l), (1, 1), "the replay has not sent anything yet");
    assert_eq!(next_data(&mut l, t), Some((vc(0), Seq::new(0), true)));
    l.handle_frame(t, &nack(0xFFFFF));
    assert_eq!(count(&l), (2, 2));
    assert_eq!(next_data(&mut l, t), Some((vc(0), Seq::new(0), true)));
    assert_eq!(next_data(&mut l, t), Some((vc(0), Seq::new(1), true)));
    // 0 acknowledged: the replay goes on with 2, the first it has not re-sent.
    l.handle_frame(t, &emit(LinkFrame::Ack(Seq::new(0))));
    assert_eq!(l.replay_count(), 0);
    assert_eq!(next_data(&mut l, t), Some((vc(0), Seq::new(2), true)));
    // 0..=2 acknowledged while the replay is at 3... and 3 too: nothing left to replay.
    l.handle_frame(t, &emit(LinkFrame::Ack(Seq::new(2))));
    assert_eq!(next_data(&mut l, t), Some((vc(0), Seq::new(3), true)));
    l.handle_frame(t, &nack(3));
    assert_eq!(l.replay_frames(), 0);
    assert_eq!(l.tx_state(), TxState::Advance);
    assert_eq!(count(&l), (0, 2));
    assert_eq!(next_data(&mut l, t), None);
}

/// Each expiry of the replay timer is one replay, and restarts the timer; the expiry that would
/// exceed `replay_count_max` is a FLUSH.
//= type=test
//# LINK-3-11 On the expiry of the replay timer the TX MUST start a replay of the whole replay buffer
//# (LINK-3-5) and restart the timer: each expiry is one replay.
//# LINK-3-6 The replay timer MUST be started when a frame enters an empty replay buffer, restarted
//# whenever an ACK or NACK acknowledges at least one frame and when a replay starts, and stopped
//# when the buffer empties.
//# LINK-3-13 When a replay would make the count exceed `replay_count_max` the TX MUST enter FLUSH
//# (§6) instead of starting it.
#[test]
fn each_replay_timer_expiry_is_one_replay() {
    let (mut l, t) = lone_end_up(config_a(), &config_b(), 500);
    let t0 = t.as_nanos();
    l.submit(vc(0), &payload_for_frame(256, 0)).unwrap();
    assert_eq!(next_data(&mut l, t), Some((vc(0), Seq::new(0), false)));
    for k in 1..=3u8 {
        let due = at(t0 + 5_000 * u64::from(k));
        l.handle_timeout(at(due.as_nanos() - 1));
        assert_eq!(l.replay_count(), k - 1, "not yet");
        l.handle_timeout(due);
        assert_eq!(l.replay_count(), k);
        assert_eq!(l.counters().replay_timeouts, u64::from(k));
        assert_eq!(next_data(&mut l, due), Some((vc(0), Seq::new(0), true)));
    }
    l.handle_timeout(at(t0 + 20_000));
    assert_eq!(l.counters().flushes, 1);
    assert!(!l.is_up());
    // The timer runs only while the buffer holds frames.
    let (mut l, t) = lone_end_up(config_a(), &config_b(), 500);
    l.submit(vc(0), &payload_for_frame(256, 0)).unwrap();
    next_data(&mut l, t);
    l.handle_frame(t, &emit(LinkFrame::Ack(Seq::new(0))));
    l.handle_timeout(at(t.as_nanos() + 6_000));
    assert_eq!(l.counters().replay_timeouts, 0);
}

/// A frame its sender stomps is taken back: its number and credits go to the next frame.
//= type=test
//# LINK-3-12 An end that ends a DATA frame with a stomped FCS (WIRE-2.5-4) MUST take the frame back
//# out of its replay buffer, give its sequence number to the next new DATA frame and return its
//# credits to its VC, so that the link goes on as if the frame had never been sent.
#[test]
fn a_stomped_frame_is_taken_back_and_its_number_reused() {
    let cut_through = Config {
        caps: Capabilities::CUT_THROUGH,
        ..config_a()
    };
    let (mut l, t) = lone_end_up(cut_through, &config_b(), 500);
    let credits = l.tx_credits_available(vc(0));
    l.submit(vc(0), &payload_for_frame(1024, 1)).unwrap();
    l.submit(vc(0), &payload_for_frame(512, 2)).unwrap();
    assert_eq!(next_data(&mut l, t), Some((vc(0), Seq::new(0), false)));
    assert_eq!(l.tx_credits_available(vc(0)), credits - 16);
    let s = l.stomp_last().unwrap();
    assert_eq!(
        s,
        Stomped {
            vc: vc(0),
            seq: Seq::new(0),
            credits: 16,
            len: 1024,
        }
    );
    assert_eq!(l.stomp_last(), None, "once");
    assert_eq!(
        (
            l.replay_frames(),
            l.next_seq(),
            l.tx_credits_available(vc(0))
        ),
        (0, Seq::new(0), credits)
    );
    assert_eq!(l.counters().tx_stomped, 1);
    //= docs/spec/link.md#7-counters
    //= type=test
    //# LINK-7-5 A DATA frame the end takes back by LINK-3-12 MUST be counted in `tx_stomped` and in
    //# neither `tx_frames` nor `tx_bytes`.
    assert_eq!(
        (l.counters().tx_frames[0], l.counters().tx_bytes[0]),
        (0, 0)
    );
    let mut buf = vec![0u8; 9216];
    let tx = l.poll_transmit(t, &mut buf).unwrap().unwrap();
    assert_eq!((tx.data, tx.len), (Some((vc(0), Seq::new(0), false)), 512));
    assert_eq!(
        (l.counters().tx_frames[0], l.counters().tx_bytes[0]),
        (1, 512)
    );
    // After any input nothing can be stomped.
    l.handle_frame(t, &emit(LinkFrame::Ack(Seq::new(0xFFFFF))));
    assert_eq!(l.stomp_last(), None);
    // Nor a retransmission.
    l.handle_frame(t, &emit(LinkFrame::Nack(Seq::new(0xFFFFF))));
    assert_eq!(next_data(&mut l, t), Some((vc(0), Seq::new(0), true)));
    assert_eq!(l.stomp_last(), None);
}

/// When several frames are due they leave in a fixed order.
//= type=test
//# LINK-3-15 When several frames are due, the TX MUST send them in this order: INIT_ECHO, INIT,
//# NACK, ACK, CF, CC, retransmitted DATA, new DATA.
#[test]
fn due_frames_leave_in_the_specified_order() {
    let (mut l, t) = lone_end_up(config_a(), &config_b(), 500);
    let t2 = at(t.as_nanos() + 10_000);
    l.submit(vc(0), &payload_for_frame(256, 1)).unwrap();
    l.handle_frame(
        t2,
        &data_frame_flags(0, 0, false, true, &payload_for_frame(256, 9)),
    );
    l.handle_frame(t2, &emit(LinkFrame::Init(init_of(&config_b(), 500))));
    assert!(l.is_up(), "the peer's current nonce: no restart");
    use FrameKind::*;
    assert_eq!(
        kinds(&drain_tx(&mut l, t2)),
        vec![InitEcho, Ack, CreditUpdate, CreditResync, Data]
    );
    // A retransmission before a new frame, a NACK before both.
    l.submit(vc(0), &payload_for_frame(256, 2)).unwrap();
    l.handle_frame(t2, &emit(LinkFrame::Nack(Seq::new(0xFFFFF))));
    l.handle_frame(t2, &data_frame(2, 0, false, &payload_for_frame(256, 9)));
    let out = drain_tx(&mut l, t2);
    assert_eq!(kinds(&out), vec![Nack, Data, Data]);
    let seqs: Vec<(u32, bool)> = links(&out)
        .iter()
        .filter_map(|f| match f {
            LinkFrame::Data { header, .. } => Some((header.seq.value(), header.flags.replay)),
            _ => None,
        })
        .collect();
    assert_eq!(seqs, vec![(0, true), (1, false)]);
}

/// A NACK not yet sent is cancelled when the expected frame arrives first.
//= type=test
//# LINK-4-9 When the expected frame is accepted while a NACK is due but not yet sent (SEND_NACK),
//# the NACK MUST be cancelled: the RX returns to SEND_ACKS.
#[test]
fn a_due_nack_is_cancelled_by_the_expected_frame() {
    let (mut l, t) = lone_end_up(config_b(), &config_a(), 500);
    let mut bad = emit(LinkFrame::Ack(Seq::new(0xFFFFF)));
    bad[20] ^= 0x40;
    l.handle_frame(t, &bad);
    assert_eq!(l.rx_state(), RxState::SendNack);
    l.handle_frame(t, &data_frame(0, 0, false, &payload_for_frame(256, 0)));
    assert_eq!(l.rx_state(), RxState::SendAcks);
    assert!(nacks_in(&drain_tx(&mut l, t)).is_empty());
    assert_eq!(l.counters().nacks_sent, 0);
    assert_eq!(claims_of(&mut l).len(), 1);
}

/// A stomped frame changes nothing but its counter, in SEND_ACKS and in NACK_SENT, and the frame
/// that carries its number next is accepted.
//= type=test
//# LINK-4-10 A frame with a stomped FCS (WIRE-2.5-5) MUST be discarded and counted as stomped, in
//# every state; it MUST NOT draw a NACK, consume a sequence number or a credit, or change the
//# receive state.
#[test]
fn a_stomped_frame_changes_nothing_but_its_counter() {
    let (mut l, t) = lone_end_up(config_b(), &config_a(), 500);
    let p = |i| payload_for_frame(256, i);
    l.handle_frame(t, &data_frame(0, 0, false, &p(0)));
    for state in [RxState::SendAcks, RxState::NackSent] {
        let mut f = data_frame(1, 0, false, &p(1));
        stomp_fcs(&mut f);
        let before = l.counters().clone();
        let occupied = l.rx_occupied(vc(0));
        assert_eq!(l.rx_state(), state);
        l.handle_frame(t, &f);
        assert_eq!(
            *l.counters(),
            counters_after(&before, |c| c.rx_stomped += 1)
        );
        assert_eq!(l.rx_state(), state);
        assert_eq!(l.expected_seq(), Seq::new(1));
        assert_eq!(l.rx_occupied(vc(0)), occupied);
        assert!(nacks_in(&drain_tx(&mut l, t)).is_empty());
        if state == RxState::SendAcks {
            // Into NACK_SENT for the second round.
            l.handle_frame(t, &data_frame(3, 0, false, &p(3)));
            drain_tx(&mut l, t);
        }
    }
    l.handle_frame(t, &data_frame(1, 0, false, &p(1)));
    assert_eq!(l.expected_seq(), Seq::new(2));
    assert_eq!(l.counters().nacks_sent, 1);
}

/// Through the harness: one new frame stomped on the wire costs that frame and nothing else: no
/// NACK, no replay, every other frame delivered in order.
//= type=test
//# LINK-4-10 A frame with a stomped FCS (WIRE-2.5-5) MUST be discarded and counted as stomped
//# LINK-3-12 An end that ends a DATA frame with a stomped FCS (WIRE-2.5-4) MUST take the frame back
//# out of its replay buffer
#[test]
fn a_stomp_on_the_wire_costs_one_frame_and_nothing_else() {
    let mut scenario = pair_scenario(5.0, 50, 1024);
    scenario.a.caps = Capabilities::CUT_THROUGH;
    let mut pair = Pair::new(scenario).unwrap();
    let mut done = false;
    pair.set_filter(Box::new(move |f: &FrameInfo<'_>| {
        let hit = f.dir == 0
            && f.data
                .is_some_and(|(_, s, replay)| s.value() == 10 && !replay);
        if hit && !done {
            done = true;
            Verdict::Stomp
        } else {
            Verdict::Pass
        }
    }));
    let r = pair.run();
    assert!(!r.timed_out, "{r:?}");
    assert_eq!((r.stomped, r.delivered, r.duplicates), (1, 49, 0));
    assert!(r.in_order);
    let [a, b] = &r.counters;
    assert_eq!((a.tx_stomped, b.rx_stomped), (1, 1));
    assert_eq!((b.nacks_sent, a.frames_replayed), (0, 0));
    assert_eq!(b.discarded(), 1);
    assert_eq!(b.rx_frames_total(), 49);
    // The random stomp of the injector hits DATA frames only.
    let mut inj = ethlink_link::harness::Injector::new(Default::default(), 3).with_stomp(1.0);
    assert!(inj.fate(FrameKind::Data, 100, Verdict::Pass).stomp);
    assert!(!inj.fate(FrameKind::Ack, 64, Verdict::Pass).stomp);
    assert_eq!(inj.injected().stomped, 1);
}

/// DATA on a VC the peer did not agree takes its sequence number and an ACK, but no credit, is
/// not delivered and draws no NACK.
//= type=test
//# LINK-4-11 A DATA frame with the expected sequence number on a VC at or above the agreed number
//# of VCs MUST be accepted by the LLR (its sequence number consumed and acknowledged as in
//# LINK-4-1) but not delivered: it MUST be discarded and counted as on a VC not agreed, charged no
//# credit, and MUST NOT draw a NACK.
#[test]
fn data_on_a_vc_not_agreed_takes_its_number_but_no_credit() {
    let peer = config_b().with_uniform_credits(2, 512);
    let (mut l, t) = lone_end_up(config_a(), &peer, 500);
    let before = l.counters().clone();
    l.handle_frame(
        t,
        &data_frame_flags(0, 5, false, true, &payload_for_frame(256, 0)),
    );
    assert_eq!(
        *l.counters(),
        counters_after(&before, |c| c.rx_vc_not_agreed += 1)
    );
    assert_eq!(l.expected_seq(), Seq::new(1));
    assert!(claims_of(&mut l).is_empty());
    let out = drain_tx(&mut l, t);
    assert_eq!((acks_in(&out), nacks_in(&out)), (vec![0], vec![]));
    l.handle_frame(t, &data_frame(1, 0, false, &payload_for_frame(256, 1)));
    assert_eq!(claims_of(&mut l).len(), 1);
    assert_eq!(l.rx_occupied(vc(0)), 4);
}

/// A DATA frame whose payload length runs past the frame, or that carries bytes beyond its
/// padding, with a good FCS, is accepted on its link header and handed up marked malformed (an
/// empty payload) with its credits; the upper layer releases them.
//= type=test
//# LINK-4-12 The RX MUST judge a DATA frame that passed the checks of wire.md §7 up to the kind on
//# its link header alone: a malformed network header, payload length or padding MUST NOT keep it
//# from being accepted by LINK-4-1.
//# LINK-4-17 A DATA frame accepted by LINK-4-12 whose body the end found malformed MUST be handed
//# to the upper layer marked as malformed, with its credits
#[test]
fn malformed_data_with_a_good_fcs_is_accepted_and_handed_up_marked() {
    let (mut l, t) = lone_end_up(config_b(), &config_a(), 500);
    let mut f = data_frame(0, 0, false, &payload_for_frame(256, 1));
    f[26..28].copy_from_slice(&0x4000u16.to_be_bytes());
    refcs(&mut f);
    assert!(FrameRepr::parse_bytes(&f, 9216).is_err());
    let mut g = data_frame(1, 0, false, &payload_for_frame(128, 2));
    let end = g.len() - 4;
    g.splice(end..end, [0u8; 8]);
    refcs(&mut g);
    assert!(FrameRepr::parse_bytes(&g, 9216).is_err());
    for (i, frame) in [&f, &g].into_iter().enumerate() {
        l.handle_frame(t, frame);
        assert_eq!(l.expected_seq(), Seq::new(i as u32 + 1));
        let mut got = Vec::new();
        while let Some(ev) = l.poll_event() {
            if let Event::Delivered {
                payload, release, ..
            } = ev
            {
                got.push((payload.to_vec(), release));
            }
        }
        assert_eq!(got.len(), 1);
        let (payload, release) = got.pop().unwrap();
        assert!(payload.is_empty(), "marked malformed");
        assert!(ethlink_protocol::DataRepr::parse(&payload).is_err());
        assert_eq!(release.credits(), frame.len().div_ceil(64) as u32);
        l.release(release).unwrap();
        assert_eq!(l.rx_occupied(vc(0)), 0);
    }
    assert_eq!(l.counters().rx_frames[0], 2);
    assert_eq!(l.counters().nacks_sent, 0);
}

/// The TX prices its frames with the credit size and overhead the peer announced.
//= type=test
//# LINK-5-1 A DATA frame of `len` bytes (destination MAC through FCS) costs `ceil((len +
//# credit_overhead) / credit_size)` credits: the TX uses the credit size and the credit overhead
//# the peer announced, the RX its own.
//# LINK-2-4 The parameters in use while UP MUST be agreed as follows: the number of VCs and the MFS
//# are the smaller of the two announced values; the LLR window of each direction is the smaller of
//# the two windows; the TX of each end uses the credits granted, the credit size and the credit
//# overhead announced by the peer (its RX's buffer and pricing), and its RX uses its own.
#[test]
fn the_tx_prices_frames_with_the_peer_overhead() {
    let mut peer = init_of(&config_b(), 500);
    peer.credit_overhead = 40;
    peer.credit_size = 128;
    let (mut l, t) = lone_end_up_with(config_a(), peer);
    assert_eq!(l.agreed().unwrap().tx_credit_overhead, 40);
    l.submit(vc(0), &payload_for_frame(1000, 0)).unwrap();
    next_data(&mut l, t);
    assert_eq!(l.tx_counters(vc(0)).0, 1040u32.div_ceil(128));
    // Its RX charges with its own (0 and 64 B).
    l.handle_frame(t, &data_frame(0, 0, false, &payload_for_frame(1000, 0)));
    assert_eq!(l.rx_occupied(vc(0)), 1000u32.div_ceil(64));
}

/// A credit stall ends, and its time is counted, when the link leaves UP.
//= type=test
//# LINK-7-4 An end MUST count a credit stall of a VC in credit_stalls when it begins, and add its
//# length to credit_stall_ns when it ends. A stall begins when the frame at the head of the VC's
//# queue cannot be sent for want of credit and ends when a frame of the VC is sent, when its queue
//# empties by withdrawal, or when the link leaves UP. (1.3: 1.2 defined the stall without a key
//# word, so the counting it implied bound nobody.)
#[test]
fn a_credit_stall_ends_when_the_link_goes_down() {
    let peer = Config {
        mfs: 1024,
        ..config_b().with_uniform_credits(4, 16)
    };
    let (mut l, t) = lone_end_up(config_a(), &peer, 500);
    for i in 0..2 {
        l.submit(vc(0), &payload_for_frame(1024, i)).unwrap();
    }
    assert!(next_data(&mut l, t).is_some());
    assert!(next_data(&mut l, t).is_none());
    assert_eq!(l.counters().credit_stalls[0], 1);
    l.physical_down(at(t.as_nanos() + 700));
    assert_eq!(l.counters().credit_stall_ns[0], 700);
}

/// Every frame handed to an end is counted once: delivered, taken as control, or discarded.
//= type=test
//# LINK-7-3 Every frame handed to an end MUST increment exactly one of: `rx_frames` (delivered), a
//# received-control counter (`acks_received`, `nacks_received`, `cf_received`, `cc_received`,
//# `inits_received`, `init_echoes_received`), or one discard counter.
#[test]
fn every_frame_handed_to_an_end_is_counted_once() {
    let (mut l, t) = lone_end_up(config_b(), &config_a(), 500);
    let base = l.counters().frames_arrived();
    let p = |i| payload_for_frame(256, i);
    let credits = CreditRepr {
        counters: [Some(0), None, None, None, None, None, None, None],
    };
    let mut bad = data_frame(1, 0, false, &p(1));
    bad[30] ^= 1;
    let mut stomped = data_frame(1, 0, false, &p(1));
    stomp_fcs(&mut stomped);
    let frames = [
        data_frame(0, 0, false, &p(0)),
        data_frame(0, 0, false, &p(0)),
        bad,
        stomped,
        data_frame(2, 0, false, &p(2)),
        data_frame(1, 7, false, &p(1)),
        emit(LinkFrame::Ack(Seq::new(0xFFFFF))),
        emit(LinkFrame::Ack(Seq::new(7))),
        emit(LinkFrame::CreditUpdate(credits)),
        emit(LinkFrame::CreditResync(credits)),
        emit(LinkFrame::InitEcho {
            echo_nonce: 1,
            init: init_of(&config_a(), 500),
        }),
    ];
    for f in &frames {
        l.handle_frame(t, f);
    }
    assert_eq!(l.counters().frames_arrived() - base, frames.len() as u64);
}

/// CF and CC frames carry the agreed VCs only; a CF entry equal to what the TX has already seen
/// (the periodic unchanged CF) is not stale; an entry for a VC not agreed is.
//= type=test
//# LINK-5-11 A CF and a CC MUST carry an entry for every agreed VC and none for another.
//# LINK-5-6 On a CF, the TX MUST set `freed_seen[v]` to the carried value for every VC in the mask
//# when the value is ahead of `freed_seen[v]` by 1..2^19-1 and not ahead of `consumed[v]`
//# LINK-5-10 The RX MUST send a CF every `cf_max_interval` while UP, whether its entries changed or
//# not.
#[test]
fn credit_frames_carry_the_agreed_vcs_and_an_unchanged_entry_is_not_stale() {
    let peer = config_b().with_uniform_credits(2, 512);
    let (mut l, t) = lone_end_up(config_a(), &peer, 500);
    let t2 = at(t.as_nanos() + 10_000);
    l.handle_timeout(t2);
    let out = drain_tx(&mut l, t2);
    let mut seen = 0;
    for f in links(&out) {
        if let LinkFrame::CreditUpdate(c) | LinkFrame::CreditResync(c) = f {
            let mask: Vec<bool> = c.counters.iter().map(Option::is_some).collect();
            assert_eq!(mask, [true, true, false, false, false, false, false, false]);
            seen += 1;
        }
    }
    assert_eq!(seen, 2, "one CF, one CC");
    let cf = |v: usize| {
        let mut counters = [None; 8];
        counters[v] = Some(0);
        counters[0] = Some(0);
        emit(LinkFrame::CreditUpdate(CreditRepr { counters }))
    };
    l.handle_frame(t2, &cf(1));
    assert_eq!(l.counters().stale_cf_entries, 0);
    l.handle_frame(t2, &cf(5));
    assert_eq!(l.counters().stale_cf_entries, 1);
}

/// ACK_REQ rides on the frame that fills half the replay buffer; new frames take turns over the
/// VCs, and one that does not fit in the replay buffer holds back every VC until it fits.
//= type=test
//# LINK-3-16 The TX SHOULD set ACK_REQ on the new DATA frame that brings its replay buffer to half
//# of `min(llr_window, replay_max_frames)` frames or half of `replay_max_bytes` bytes
//# LINK-3-17 The TX SHOULD take new DATA frames from the VCs in round-robin order, skipping a VC
//# without a frame or without credit; when the frame whose turn it is does not fit in the replay
//# buffer, it SHOULD send no new frame on any VC until it fits
#[test]
fn ack_req_at_half_the_replay_buffer_and_round_robin_over_vcs() {
    let cfg = Config {
        replay_max_frames: 8,
        ..config_a()
    };
    let (mut l, t) = lone_end_up(cfg, &config_b(), 500);
    for i in 0..5 {
        l.submit(vc(0), &payload_for_frame(128, i)).unwrap();
        l.submit(vc(1), &payload_for_frame(128, 10 + i)).unwrap();
    }
    let data: Vec<(u8, bool)> = links(&drain_tx(&mut l, t))
        .iter()
        .filter_map(|f| match f {
            LinkFrame::Data { header, .. } => Some((header.vc.value(), header.flags.ack_req)),
            _ => None,
        })
        .collect();
    let vcs: Vec<u8> = data.iter().map(|d| d.0).collect();
    assert_eq!(
        vcs,
        vec![0, 1, 0, 1, 0, 1, 0, 1],
        "round robin, 8 frames fill the buffer"
    );
    let req: Vec<usize> = (0..data.len()).filter(|i| data[*i].1).collect();
    assert_eq!(req, vec![3], "ACK_REQ on the fourth of eight");
    // A long frame whose turn it is and does not fit holds back the short ones of VC 1.
    let cfg = Config {
        mfs: 2048,
        replay_max_bytes: 2048,
        ..config_a()
    };
    let (mut l, t) = lone_end_up(cfg, &config_b(), 500);
    l.submit(vc(0), &payload_for_frame(256, 0)).unwrap();
    l.submit(vc(0), &payload_for_frame(2000, 1)).unwrap();
    for i in 0..3 {
        l.submit(vc(1), &payload_for_frame(256, 10 + i)).unwrap();
    }
    assert_eq!(next_data(&mut l, t), Some((vc(0), Seq::new(0), false)));
    assert_eq!(next_data(&mut l, t), Some((vc(1), Seq::new(1), false)));
    assert_eq!(
        next_data(&mut l, t),
        None,
        "VC 0's 2000 B frame does not fit"
    );
    l.handle_frame(t, &emit(LinkFrame::Ack(Seq::new(1))));
    assert_eq!(next_data(&mut l, t), Some((vc(0), Seq::new(2), false)));
}

/// At 1 % of DATA frames damaged, small replay buffers and the default `replay_count_max` of 3,
/// one damaged frame costs one replay (LINK-4-8, LINK-3-9): no FLUSH, every frame delivered once
/// and in order, and no more replays than damaged DATA frames.
//= type=test
//# LINK-4-8 In NACK_SENT, a DATA frame ahead of the expected one whose sequence number is not
//# beyond that of the previous such frame received since the RX left SEND_ACKS (the gap frame that
//# drew the NACK included) shows that a new replay has begun and has lost the expected frame again:
//# the RX MUST then send one more NACK. The REPLAY flag plays no part in it. (1.3: 1.2 said "since
//# the last NACK", which left out the gap frame that drew it; Table LINK-T5 remembered it.)
//# LINK-3-9 A NACK or a replay-timer expiry that comes while a replay is due but has not sent its
//# first frame yet MUST NOT start another replay and MUST NOT count towards `replay_count_max`
#[test]
fn one_percent_damage_with_small_buffers_never_flushes() {
    for seed in 1..=20u64 {
        let mut s = pair_scenario(5.0, 3000, 512);
        for c in [&mut s.a, &mut s.b] {
            c.replay_max_frames = 8;
            c.replay_max_bytes = 9216;
        }
        s.traffic.bidirectional = true;
        s.traffic.vcs = 2;
        s.wire.faults.loss = 0.01;
        s.seed = seed;
        let r = Pair::new(s).unwrap().run();
        assert!(!r.timed_out, "seed {seed}");
        let replays: u64 = r
            .counters
            .iter()
            .map(|c| c.replays_by_nack + c.replay_timeouts)
            .sum();
        let flushes: u64 = r.counters.iter().map(|c| c.flushes).sum();
        assert_eq!(flushes, 0, "seed {seed}: {r:?}");
        assert_eq!((r.delivered, r.duplicates), (6000, 0), "seed {seed}");
        assert!(r.in_order);
        assert!(
            replays <= r.injected[0],
            "seed {seed}: {replays} replays for {} damaged frames",
            r.injected[0]
        );
    }
}

/// INITs that pile up before the wire is free get one INIT_ECHO, for the newest; a peer restart
/// is answered with an INIT_ECHO that carries the end's new nonce, then its own INIT.
//= type=test
//# LINK-2-2 An end that receives a valid INIT MUST answer it with an INIT_ECHO carrying the INIT's
//# nonce as echo nonce and its own configured parameters, in any state but OFF, unless LINK-2-12
//# refuses it. When several INITs arrive before the wire can take the INIT_ECHO (or before LINK-2-18
//# lets it go), only the newest is answered.
//# LINK-2-6 An end that is UP and receives an INIT whose nonce differs from the peer's nonce it
//# went UP with MUST re-initialise (§6), unless LINK-2-12 refuses that INIT: the peer has
//# restarted. It then answers that INIT with an INIT_ECHO carrying its own new nonce, and sends its
//# own INIT.
#[test]
fn only_the_newest_init_is_answered_and_a_restart_is_echoed_with_the_new_nonce() {
    let mut l = Link::new(config_a()).unwrap();
    let t = at(3);
    l.physical_up(t);
    drain_tx(&mut l, t);
    l.handle_frame(t, &emit(LinkFrame::Init(init_of(&config_b(), 5))));
    l.handle_frame(t, &emit(LinkFrame::Init(init_of(&config_b(), 6))));
    let echoes: Vec<(u32, u32)> = links(&drain_tx(&mut l, t))
        .iter()
        .filter_map(|f| match f {
            LinkFrame::InitEcho { echo_nonce, init } => Some((*echo_nonce, init.nonce)),
            _ => None,
        })
        .collect();
    assert_eq!(echoes, vec![(6, l.nonce())]);
    let (mut l, t) = lone_end_up(config_a(), &config_b(), 500);
    let old = l.nonce();
    l.handle_frame(t, &emit(LinkFrame::Init(init_of(&config_b(), 501))));
    assert_ne!(l.nonce(), old);
    let frames = drain_tx(&mut l, t);
    let out = links(&frames);
    match (&out[0], &out[1]) {
        (LinkFrame::InitEcho { echo_nonce, init }, LinkFrame::Init(own)) => {
            assert_eq!(
                (*echo_nonce, init.nonce, own.nonce),
                (501, l.nonce(), l.nonce())
            );
        }
        other => panic!("{other:?}"),
    }
}

/// A refused INIT changes nothing while UP: no restart, no echo, the reason reported once.
//= type=test
//# LINK-2-12 [...] It MUST count the frame as refused, stay in its state and report the reason (the
//# VC and the numbers) to the upper layer.
#[test]
fn a_refused_init_while_up_leaves_the_link_up() {
    let (mut l, t) = lone_end_up(config_a(), &config_b(), 500);
    let mut peer = init_of(&config_b(), 777);
    peer.credits[0] = 1;
    for _ in 0..3 {
        l.handle_frame(t, &emit(LinkFrame::Init(peer)));
    }
    assert!(l.is_up());
    assert_eq!(l.counters().init_refused, 3);
    assert_eq!(l.counters().reinits, 0);
    assert!(kinds(&drain_tx(&mut l, t)).is_empty());
    let notices: Vec<Ev> = events_of(&mut l)
        .into_iter()
        .filter(|e| matches!(e, Ev::Notice(_)))
        .collect();
    assert_eq!(notices.len(), 1);
}

/// The INIT and INIT_ECHO an end sends carry its role and exactly its capabilities; a tagging end
/// announces TAGGED; the peer's role and capabilities never keep the link down.
//= type=test
//# CLS-2-1 A device MUST announce its role in every INIT and INIT_ECHO it sends.
//# CLS-2-2 A device MUST set, in every INIT and INIT_ECHO it sends, the bit of each capability
//# CLS-3-2 A device that does not announce `TAGGED` MUST NOT send a frame with an 802.1Q tag.
//# CLS-2-3 A link end MUST NOT refuse to bring a link up because of the role or the capability
#[test]
fn init_announces_role_and_capabilities() {
    let announced = |cfg: Config| -> Vec<(FrameKind, Capabilities, Role)> {
        let mut link = Link::new(cfg).unwrap();
        let t = Instant::from_nanos(10);
        link.physical_up(t);
        link.handle_frame(t, &emit(LinkFrame::Init(init_of(&config_b(), 77))));
        drain_tx(&mut link, t)
            .iter()
            .filter_map(|f| match FrameRepr::parse_bytes(f, 9216).unwrap().link {
                LinkFrame::Init(i) => Some((FrameKind::Init, i.caps, i.role)),
                LinkFrame::InitEcho { init, .. } => {
                    Some((FrameKind::InitEcho, init.caps, init.role))
                }
                _ => None,
            })
            .collect()
    };
    let plain = announced(config_a());
    assert_eq!(
        plain,
        // The echo goes first (LINK-3-15).
        vec![
            (FrameKind::InitEcho, Capabilities::NONE, Role::LinkEnd),
            (FrameKind::Init, Capabilities::NONE, Role::LinkEnd),
        ]
    );
    let endpoint = Config {
        caps: Capabilities::RDMA | Capabilities::PACKING,
        role: Role::Endpoint,
        ..config_a()
    };
    for (_, caps, role) in announced(endpoint) {
        assert_eq!(
            (caps, role),
            (Capabilities::RDMA | Capabilities::PACKING, Role::Endpoint)
        );
    }
    // An end that tags its frames announces TAGGED, whatever its configuration lists.
    let tagged = Config {
        vlan: Some(VlanTag {
            pcp: 1,
            dei: false,
            vid: 7,
        }),
        role: Role::Switch,
        ..config_a()
    };
    for (_, caps, role) in announced(tagged) {
        assert_eq!((caps, role), (Capabilities::TAGGED, Role::Switch));
    }
    // A peer announcing every capability and a reserved role still brings the link up.
    let odd_peer = InitRepr {
        caps: Capabilities::DEFINED,
        role: Role::Unknown(3),
        ..init_of(&config_b(), 91)
    };
    let mut link = Link::new(config_a()).unwrap();
    let t = Instant::from_nanos(10);
    link.physical_up(t);
    drain_tx(&mut link, t);
    link.handle_frame(t, &emit(LinkFrame::Init(odd_peer)));
    let own = link.nonce();
    link.handle_frame(
        t,
        &emit(LinkFrame::InitEcho {
            echo_nonce: own,
            init: odd_peer,
        }),
    );
    assert!(link.is_up());
}

/// An end that does not announce CUT_THROUGH cannot have stomped a frame: it has nothing to take
/// back, and its replay buffer and sequence numbers stay as they are.
//= type=test
//# CLS-3-3 A device that does not announce `CUT_THROUGH` MUST NOT send a frame with a stomped
#[test]
fn only_a_cut_through_end_takes_a_frame_back() {
    let (mut l, t) = lone_end_up(config_a(), &config_b(), 500);
    l.submit(vc(0), &payload_for_frame(512, 1)).unwrap();
    assert_eq!(next_data(&mut l, t), Some((vc(0), Seq::new(0), false)));
    assert_eq!(l.stomp_last(), None);
    assert_eq!((l.replay_frames(), l.next_seq()), (1, Seq::new(1)));
    assert_eq!(l.counters().tx_stomped, 0);
}

// ----- How long a link keeps a frame (§3.1) ------------------------------------------------------

/// A degraded link that delivers the oldest frame of every pass and loses the rest: each replay
/// makes progress, so the replay count never reaches `replay_count_max` (LINK-3-7), yet the frames
/// deep in the buffer wait one replay timer per frame ahead of them. `llr_max_age` ends it: no
/// copy of a frame leaves after its age limit, the TX FLUSHes and reports the rest of unknown
/// fate, and after the re-initialisation the queued frames go.
//= type=test
//# LINK-3-18 When the oldest frame of its replay buffer was first sent `llr_max_age` ago, the
//# TX MUST enter FLUSH (§6), whatever its replay count, and MUST NOT begin to send any copy of that
//# frame or of a frame behind it afterwards.
#[test]
fn a_link_that_delivers_one_frame_per_replay_gives_up_at_llr_max_age() {
    let a_cfg = config_a();
    let age_ns = a_cfg.llr_max_age.as_nanos() as u64;
    let replay_ns = a_cfg.replay_timer.as_nanos() as u64;
    let mut bench = Bench::up(a_cfg, config_b());
    // Epoch 1 is the first initialisation. In it, each pass over the replay buffer (a pass starts
    // whenever a sequence number is not beyond the previous one) delivers its first frame and
    // loses the rest; later epochs lose nothing.
    let epoch = Rc::new(Cell::new(0u32));
    let last = Rc::new(Cell::new(None::<u32>));
    let delivered_in_pass = Rc::new(Cell::new(false));
    let (ep, la, dp) = (epoch.clone(), last.clone(), delivered_in_pass.clone());
    bench.set_filter(move |s| match s.data {
        Some((_, seq, replay)) if s.dir == 0 => {
            if seq == 0 && !replay {
                ep.set(ep.get() + 1);
                la.set(None);
            }
            if la.get().is_none_or(|l| seq <= l) {
                dp.set(false);
            }
            la.set(Some(seq));
            if ep.get() != 1 || !dp.get() {
                dp.set(true);
                Fate::Deliver
            } else {
                Fate::Drop
            }
        }
        _ => Fate::Deliver,
    });
    let frames = 40u32;
    for i in 0..frames {
        bench.submit(0, 0, &payload_for_frame(1024, i));
    }
    bench.settle(2_000_000);

    // Every copy of every frame left the TX before the frame's age limit.
    let mut first = std::collections::HashMap::new();
    let mut latest_copy = 0u64;
    for s in bench
        .trace
        .iter()
        .filter(|s| s.dir == 0 && s.kind == FrameKind::Data)
    {
        let tag = tag_of(data_payload(&s.bytes));
        let t0 = *first.entry(tag).or_insert(s.at_ns);
        let age = s.at_ns - t0;
        assert!(
            age < age_ns,
            "frame {tag} was sent again {age} ns after its first transmission (llr_max_age {age_ns} ns)"
        );
        latest_copy = latest_copy.max(age);
    }
    assert!(
        latest_copy > age_ns - 2 * replay_ns,
        "the replays ran up to the limit"
    );
    let a = bench.end(0).counters().clone();
    assert_eq!((a.flushes, a.flushes_aged), (1, 1), "one FLUSH, for age");
    // The frames acknowledged one per replay waited long for their ACK, never past the limit
    // (Table LINK-T3 replay_age_max_ns).
    assert!(
        a.replay_age_max_ns > replay_ns && a.replay_age_max_ns <= age_ns,
        "replay_age_max_ns {} (replay timer {replay_ns} ns, llr_max_age {age_ns} ns)",
        a.replay_age_max_ns
    );
    // What was not delivered in time was reported of unknown fate, and every frame reached B
    // once or was reported: none twice, none silently.
    let delivered = bench.delivered_tags(1, 0);
    let lost: Vec<u32> = bench.events[0]
        .iter()
        .filter_map(|(_, e)| match e {
            Ev::Lost { payload, .. } => Some(tag_of(payload)),
            _ => None,
        })
        .collect();
    assert_eq!(lost.len() as u64, a.frames_unknown_fate);
    assert!(!lost.is_empty());
    let mut all: Vec<u32> = delivered
        .iter()
        .copied()
        .filter(|t| !lost.contains(t))
        .collect();
    all.extend(&lost);
    all.sort_unstable();
    all.dedup();
    assert_eq!(all, (0..frames).collect::<Vec<_>>());
    assert!(
        delivered.windows(2).all(|w| w[0] < w[1]),
        "B delivered in order, each once: {delivered:?}"
    );
}

/// `cf_min_interval` runs from a CF sent: the first CF after UP goes as soon as `cf_min_credits`
/// are freed, the next one `cf_min_interval` after it.
//= type=test
//# LINK-5-5 The RX MUST send a CF carrying `freed[v]` when at least `cf_min_credits` credits,
//# summed over the VCs, have been freed since its last CF (or since UP) and, if it has sent a CF
//# since UP, `cf_min_interval` has passed since that CF.
#[test]
fn the_first_cf_after_up_waits_for_no_interval() {
    let cfg = Config {
        cf_min_credits: 2,
        cf_min_interval: ethlink_link::Duration::from_micros(5),
        cf_max_interval: ethlink_link::Duration::from_millis(1),
        ..config_b()
    };
    let (mut b, t) = lone_end_up(cfg, &config_a(), 500);
    let cfs = |out: &[Vec<u8>]| {
        links(out)
            .iter()
            .filter(|l| matches!(l, LinkFrame::CreditUpdate(_)))
            .count()
    };
    b.handle_frame(t, &data_frame(0, 0, false, &payload_for_frame(128, 0)));
    for c in claims_of(&mut b) {
        b.release(c).unwrap();
    }
    assert_eq!(b.poll_timeout(), Some(t), "the CF is due at once");
    assert_eq!(cfs(&drain_tx(&mut b, t)), 1, "the first CF goes at once");
    b.handle_frame(t, &data_frame(1, 0, false, &payload_for_frame(128, 1)));
    for c in claims_of(&mut b) {
        b.release(c).unwrap();
    }
    assert_eq!(
        cfs(&drain_tx(&mut b, t)),
        0,
        "the second waits cf_min_interval"
    );
    let due = Instant::from_nanos(t.as_nanos() + 5_000);
    // The ACK timer comes first; its ACK is no CF.
    let ack_at = b.poll_timeout().unwrap();
    assert!(ack_at < due);
    b.handle_timeout(ack_at);
    assert_eq!(cfs(&drain_tx(&mut b, ack_at)), 0);
    assert_eq!(b.poll_timeout(), Some(due));
    b.handle_timeout(due);
    assert_eq!(cfs(&drain_tx(&mut b, due)), 1);
}

/// Triggers that come before the wire takes the frame make one frame: ACK_REQ and a duplicate
/// together draw one ACK; a NACK due beside an ACK goes alone and settles it; several duplicates in
/// a row draw one ACK, not one each, until they reach `ack_spacing`.
//= type=test
//# LINK-4-18 An ACK, a CF and a CC are each either due or not: the triggers that come before the
//# wire takes it (`ack_spacing`, `ack_timer`, ACK_REQ, a duplicate; freed credits, the two CF
//# intervals, a CC received; `cc_interval`) MUST make one frame, not one per trigger. A NACK
//# carries the last good sequence number too, so sending it MUST settle an ACK that was due (the
//# bytes and the timer of LINK-4-2 and LINK-4-14 start again from it).
//# LINK-4-16 The RX MUST make an ACK due on the first duplicate (LINK-4-5) since it last accepted a
//# frame, sent a NACK or came UP, and again each time the duplicates received after the one that
//# last made an ACK due reach ack_spacing bytes (counted as LINK-1-1 says), in NACK_SENT too, so
//# that a TX whose ACKs were lost learns of them. (1.3: 1.2 asked an ACK for every duplicate, which
//# made a go-back-N replay of *n* frames the RX already had cost *n* ACK frames ahead of DATA; one
//# per ack_spacing is the rate of LINK-4-2.)
#[test]
fn due_frames_are_flags_and_duplicates_are_acked_at_the_ack_rate() {
    let (mut b, t) = lone_end_up(config_b(), &config_a(), 500);
    let acks_nacks = |out: &[Vec<u8>]| -> (Vec<u32>, Vec<u32>) {
        let mut a = Vec::new();
        let mut n = Vec::new();
        for l in links(out) {
            match l {
                LinkFrame::Ack(s) => a.push(s.value()),
                LinkFrame::Nack(s) => n.push(s.value()),
                _ => {}
            }
        }
        (a, n)
    };
    b.handle_frame(t, &data_frame(0, 0, false, &payload_for_frame(128, 0)));
    b.handle_frame(
        t,
        &data_frame_flags(1, 0, false, true, &payload_for_frame(128, 1)),
    );
    b.handle_frame(t, &data_frame(0, 0, false, &payload_for_frame(128, 0)));
    assert_eq!(
        acks_nacks(&drain_tx(&mut b, t)),
        (vec![1], vec![]),
        "one ACK"
    );
    // ACK_REQ and a gap together: the NACK goes, the ACK it settles does not.
    b.handle_frame(
        t,
        &data_frame_flags(2, 0, false, true, &payload_for_frame(128, 2)),
    );
    b.handle_frame(t, &data_frame(4, 0, false, &payload_for_frame(128, 4)));
    assert_eq!(
        acks_nacks(&drain_tx(&mut b, t)),
        (vec![], vec![2]),
        "the NACK alone"
    );
    // A replay of frames the RX has: the first duplicate draws an ACK, the next ones none until
    // they reach ack_spacing (2048 B: 16 frames of 128 B).
    let mut acks = Vec::new();
    for round in 0..40u32 {
        let seq = round % 3;
        b.handle_frame(t, &data_frame(seq, 0, true, &payload_for_frame(128, seq)));
        acks.extend(acks_nacks(&drain_tx(&mut b, t)).0);
    }
    assert_eq!(
        acks,
        vec![2, 2, 2],
        "40 duplicates of 128 B: the first, then one per 2048 B"
    );
    assert_eq!(b.counters().duplicates, 41);
}

/// A FLUSH for age whose frames the upper layer has not taken yet when the link comes UP again:
/// those frames are of the last incarnation, and their age ends nothing in the new one; the
/// counters name the FLUSH for age, and only once.
#[test]
fn frames_flushed_for_age_and_not_yet_reported_do_not_age_the_next_incarnation() {
    let (mut a, t) = lone_end_up(config_a(), &config_b(), 500);
    a.submit(vc(0), &payload_for_frame(256, 7)).unwrap();
    drain_tx(&mut a, t);
    let age = Instant::from_nanos(t.as_nanos() + config_a().llr_max_age.as_nanos() as u64);
    // Handled first at the age limit, past the replay timer's deadline too: the age is looked at
    // first.
    a.handle_timeout(age);
    let c = a.counters().clone();
    assert_eq!((c.flushes, c.flushes_aged), (1, 1));
    let named: Vec<(&str, u64)> = {
        let mut v = Vec::new();
        c.for_each(|n, _, x| {
            if n.starts_with("flushes") {
                v.push((n, x));
            }
        });
        v
    };
    assert_eq!(named, vec![("flushes", 1), ("flushes_aged", 1)]);
    // UP again before the upper layer has taken the flushed frame's report.
    let nonce = a.nonce();
    a.handle_frame(age, &emit(LinkFrame::Init(init_of(&config_b(), 501))));
    a.handle_frame(
        age,
        &emit(LinkFrame::InitEcho {
            echo_nonce: nonce,
            init: init_of(&config_b(), 501),
        }),
    );
    assert!(a.is_up());
    let later = Instant::from_nanos(age.as_nanos() + 1_000);
    a.handle_timeout(later);
    assert!(
        a.is_up(),
        "the flushed frame's age ended the new incarnation"
    );
    assert_eq!(a.counters().flushes, 1);
}

/// `replay_age_max_ns` counts frames an ACK or NACK acknowledged, and only those: a NACK that
/// acknowledges nothing, long after the frame it asks for was sent, leaves it unchanged, and a
/// frame then lost with the link was never acknowledged. The ACK that acknowledges a frame sets
/// it to that frame's wait.
#[test]
fn replay_age_max_counts_only_frames_acknowledged() {
    let peer = config_b();
    let (mut link, t) = lone_end_up(config_a(), &peer, 500);
    link.submit(vc(0), &payload_for_frame(256, 0)).unwrap();
    link.submit(vc(0), &payload_for_frame(256, 1)).unwrap();
    let sent = drain_tx(&mut link, t);
    assert_eq!(link.replay_frames(), 2, "{:?}", kinds(&sent));
    // A NACK for the frame before the first, 10 us later: it acknowledges nothing.
    let late = Instant::from_nanos(t.as_nanos() + 10_000);
    link.handle_frame(late, &emit(LinkFrame::Nack(Seq::new(0xFFFFF))));
    assert_eq!(link.counters().replay_age_max_ns, 0);
    // An ACK of frame 0 2 us later: it waited 12 us.
    let acked = Instant::from_nanos(t.as_nanos() + 12_000);
    drain_tx(&mut link, acked);
    link.handle_frame(acked, &emit(LinkFrame::Ack(Seq::new(0))));
    assert_eq!(link.counters().replay_age_max_ns, 12_000);
    // Frame 1, never acknowledged, goes with the link: the mark stays.
    link.physical_down(Instant::from_nanos(t.as_nanos() + 20_000));
    assert_eq!(link.counters().replay_age_max_ns, 12_000);
}

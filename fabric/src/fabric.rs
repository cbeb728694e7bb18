//! The simulation: nodes (GPU endpoints and switches), cables, the event loop, and the report.
//!
//! Time is kept in picoseconds so that serialisation at hundreds of Gb/s does not round; the
//! nodes see whole nanoseconds (the current picosecond rounded down). Events are ordered by time
//! and then by a sequence number given when they are scheduled, so that one scenario always
//! gives one order. Kinds of event: a frame arriving at the end of a channel, a channel's wire
//! becoming free, a node's deadline, an outage starting or ending, a workload waking up, bring-up
//! checks, samples and the stop.
//!
//! After any event the nodes it touched are *serviced*: a node whose deadline has come runs its
//! timers; every port that may have something to send and whose wire is free is polled for one
//! frame (a GPU: all its ports; a switch: the ports it reports ready); completions go to the
//! workloads, which may issue more; and the node's next deadline is armed. A node has at most
//! one armed deadline: arming an earlier one moves it in the queue (`EventQueue::arm`), and it
//! comes out after every event already queued for its new time. A deadline already due when
//! the node is serviced is one the node meets by sending (an ACK, a credit update) once a wire
//! is free: the wire-free event services it then.

use std::collections::VecDeque;
use std::time::Instant as WallInstant;

use ethlink_endpoint::{
    Completion, Endpoint, IssueError, LsRequest, OpId, OpKind, Perms, PostError, RdmaDesc, RdmaDir,
    Region, Remote,
};
use ethlink_link::harness::{Channel, Faults, InFlight, Verdict, Wire, WireBytes};
use ethlink_link::{Instant, SharedFrame};
use ethlink_protocol::fcs::FcsStatus;
use ethlink_protocol::{FrameKind, GpuId, Space};
use ethlink_switch::{FrameEnd, Mode, Routes, Switch};

use crate::build::{endpoint_config, key_of, switch_config};
use crate::check::mix64;
use crate::queue::{EventQueue, Next};
use crate::report::{
    CollectiveRow, EndpointTotals, LinkTotals, Load, Operations, Overhead, PartitionWall,
    PortStall, Report, Series, SimTotals, SwitchReport, SwitchTotals, Throughput, Wall,
    peak_rss_bytes,
};
use crate::scenario::{
    ErrorsExpected, LeafUplinks, OutageTarget, Scenario, ScenarioError, TopologyKind, Workload,
};
use crate::track::{Effect, OpRec, Tracker};
use crate::workload::{self, Wl};

mod partition;

const PS_PER_NS: u64 = 1000;
const NONE: u64 = u64::MAX;
/// Longest bring-up before the traffic starts anyway, ns.
const BRING_UP_LIMIT_NS: u64 = 100_000;
/// Interval of the bring-up checks, ns.
const BRING_UP_CHECK_NS: u64 = 500;
/// Bytes of a DATA frame around a full RDMA segment, preamble and gap included.
const SEGMENT_OVERHEAD: u64 = 60 + 20;
/// Bytes of a DATA frame around its payload (network header and transactions): Ethernet 14,
/// link header 6, FCS 4.
const DATA_FRAMING: usize = 24;

/// One end of a cable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum End {
    /// A GPU's port (`stack * ports_per_stack + port`).
    Gpu {
        /// The GPU.
        gpu: u16,
        /// Its port.
        port: u16,
    },
    /// A switch's port.
    Switch {
        /// The switch.
        switch: u32,
        /// Its port.
        port: u16,
    },
}

/// A cable of the fabric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct CableInfo {
    /// Its number.
    pub index: usize,
    /// One end.
    pub a: End,
    /// The other end.
    pub b: End,
}

/// A frame crossing the captured cable.
#[derive(Debug, Clone, Copy)]
pub struct CapturedFrame<'a> {
    /// The cable.
    pub cable: usize,
    /// The end that sent it.
    pub from: End,
    /// The end it goes to.
    pub to: End,
    /// Its first bit went on the wire, ps of simulated time.
    pub start_ps: u64,
    /// It arrives (unless it vanished), ps.
    pub arrive_ps: u64,
    /// The frame as sent, destination MAC through FCS.
    pub bytes: &'a [u8],
    /// Its link frame kind.
    pub kind: FrameKind,
    /// It arrives damaged (one bit flipped).
    pub damaged: bool,
    /// It never arrives.
    pub vanished: bool,
    /// It arrives twice.
    pub duplicated: bool,
}

/// Where the frames of the captured cable go.
pub type CaptureSink = Box<dyn FnMut(&CapturedFrame<'_>)>;

/// The captured cable and where its frames go, if any.
pub(crate) type Capture = Option<(u32, CaptureSink)>;

/// What a [`Core`] shows the frames of a captured cable to: a [`Capture`], or nothing (`()`, the
/// switches' partition of a fabric run on two threads, which captures nothing and so may move
/// to a thread of its own).
pub(crate) trait Tap {
    /// Where the frames of cable `cable` go, if it is the captured one.
    fn sink(&mut self, cable: u32) -> Option<&mut CaptureSink>;
}

impl Tap for Capture {
    fn sink(&mut self, cable: u32) -> Option<&mut CaptureSink> {
        self.as_mut().filter(|(c, _)| *c == cable).map(|(_, s)| s)
    }
}

impl Tap for () {
    fn sink(&mut self, _: u32) -> Option<&mut CaptureSink> {
        None
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ev {
    Arrive(u32),
    /// The header of the next frame on a channel toward a cut-through switch has arrived.
    Header(u32),
    WireFree(u32),
    Timer(u32),
    OutageOn(u32),
    OutageOff(u32),
    Wake(u16, u64),
    WlStart(u16),
    BringUp,
    Sample,
    Stop,
}

#[derive(Debug)]
struct Chan {
    ch: Channel,
    to_node: u32,
    to_port: u16,
    cable: u32,
    /// Time of the pending arrival event, or NONE.
    armed: u64,
    /// Toward a cut-through switch: its latency, ps, below which a frame's serialisation after
    /// its header leaves nothing to cut through; NONE otherwise.
    cut_ps: u64,
    /// Toward a cut-through switch: the frames whose header has yet to arrive, in order.
    headers: VecDeque<Header>,
    /// Time of the pending header event, or NONE.
    hdr_armed: u64,
    /// While its cable trickles: DATA frames sent since the last pause, and when the last one
    /// began (ps).
    run: u32,
    last_data_ps: u64,
    /// Its receiver is simulated by the other partition of a fabric run on two threads: the
    /// frames sent are handed over ([`Handoff`]) instead of arriving here.
    remote: bool,
}

/// A pause of the DATA frames in one direction of a trickling cable after which it carries
/// frames again, ps.
const TRICKLE_PAUSE_PS: u64 = 1_000_000;

/// A frame on its way to a cut-through switch, to be shown to it when its header has arrived.
#[derive(Debug)]
struct Header {
    at_ps: u64,
    frame: HeaderBytes,
    end: FrameEnd,
}

#[derive(Debug)]
enum HeaderBytes {
    Shared(SharedFrame),
    Owned(Vec<u8>),
}

/// Bytes of a frame's header (Ethernet, link and network headers, untagged) and its preamble
/// and gap: what has crossed the wire when a switch may read the header.
const HEADER_BYTES: usize = 14 + 6 + 8;

#[derive(Debug, Clone)]
struct Cable {
    ends: [(u32, u16); 2],
    chans: [u32; 2],
    down: u32,
    blackout: u32,
    /// While a trickle outage runs: the DATA frames that arrive after each pause (0: off).
    trickle: u32,
}

/// Nodes, cables and the event queue; `T`, what the frames of a captured cable are shown to.
pub(crate) struct Core<T = Capture> {
    now: u64,
    /// Events by time (ps), ties in the order they were queued.
    heap: EventQueue<Ev>,
    gpus: Vec<Endpoint>,
    /// The switches this core simulates: all of them, or in a partitioned run its partition's,
    /// nodes `sw_lo..sw_lo + sws.len()`.
    sws: Vec<Switch>,
    /// The node of `sws[0]`.
    sw_lo: u32,
    n_gpus: u32,
    node_base: Vec<u32>,
    /// Per global port: its outgoing channel.
    out_chan: Vec<u32>,
    /// Per global port: when its outgoing wire is free, ps (its channel's
    /// [`Channel::free_at`], `u64::MAX` for a port without one). A copy kept where a node's
    /// ports lie side by side: whether a wire is free is asked for every port a node may send
    /// on after each of its events, and the channels themselves are cold in a large fabric.
    free_at: Vec<u64>,
    /// Per global port: its node.
    port_node: Vec<u32>,
    chans: Vec<Chan>,
    cables: Vec<Cable>,
    /// Per cable: when its outages begin (ps, once traffic has begun), to tell a frame whose
    /// end the wire will not deliver.
    cuts: Vec<Vec<u64>>,
    armed: Vec<u64>,
    /// Per node: its timers are due (a deadline event fired, or it was found due).
    due: Vec<bool>,
    dirty: Vec<bool>,
    dirty_list: Vec<u32>,
    txbuf: Vec<u8>,
    /// The exact bytes of a captured frame whose FCS its sender deferred.
    capbuf: Vec<u8>,
    ready: Vec<u16>,
    completions: VecDeque<(u16, Completion)>,
    /// Per GPU: workloads waiting for room (tags or RDMA queue).
    blocked: Vec<Vec<u16>>,
    /// What the core has counted.
    tally: Tally,
    capture: T,
    /// Frames (and cut-through headers) sent on channels whose receiver another partition
    /// simulates ([`Chan::remote`]), for it to take at the end of the window.
    outbox: Vec<Handoff>,
    /// In a partitioned run, the least time from sending to receiving across partitions, ps.
    lookahead: u64,
}

/// What a core counts as it runs (the report's simulation totals); partitions add theirs.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    frame_hops: u64,
    data_hops: u64,
    wire_data: u64,
    wire_ctl: u64,
    data_payload: u64,
    events: u64,
    idle_wakeups: u64,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.frame_hops += o.frame_hops;
        self.data_hops += o.data_hops;
        self.wire_data += o.wire_data;
        self.wire_ctl += o.wire_ctl;
        self.data_payload += o.data_payload;
        self.events += o.events;
        self.idle_wakeups += o.idle_wakeups;
    }
}

/// Collects the frames a channel hands over ([`Channel::hand_over`]) into an outbox.
struct HandOff<'a>(u32, &'a mut Vec<Handoff>);

impl Extend<InFlight> for HandOff<'_> {
    fn extend<I: IntoIterator<Item = InFlight>>(&mut self, iter: I) {
        let ci = self.0;
        self.1
            .extend(iter.into_iter().map(|f| Handoff::Flight(ci, f)));
    }
}

/// A frame, or the header of one, crossing from one partition of the fabric to the other.
#[derive(Debug)]
enum Handoff {
    Flight(u32, InFlight),
    Header(u32, Header),
}

impl<T: Tap> Core<T> {
    fn push(&mut self, t: u64, ev: Ev) {
        self.heap.push(t, ev);
    }

    fn inst(&self) -> Instant {
        Instant::from_nanos(self.now / PS_PER_NS)
    }

    fn mark(&mut self, n: u32) {
        if let Some(d) = self.dirty.get_mut(n as usize)
            && !*d
        {
            *d = true;
            self.dirty_list.push(n);
        }
    }

    fn ports_of(&self, n: u32) -> std::ops::Range<u32> {
        let a = self.node_base.get(n as usize).copied().unwrap_or(0);
        let b = self.node_base.get(n as usize + 1).copied().unwrap_or(a);
        a..b
    }

    fn wire_free(&self, gp: u32) -> bool {
        let free = self
            .free_at
            .get(gp as usize)
            .is_some_and(|&f| f <= self.now);
        debug_assert_eq!(
            free,
            self.out_chan
                .get(gp as usize)
                .and_then(|&c| self.chans.get(c as usize))
                .is_some_and(|c| c.ch.free_at() <= self.now),
            "free_at of port {gp} differs from its channel's"
        );
        free
    }

    /// Switch node `n`, if this core simulates it.
    fn sw(&self, n: u32) -> Option<&Switch> {
        self.sws.get(slot(n, self.sw_lo))
    }

    /// Switch node `n`, mutably, if this core simulates it.
    fn sw_mut(&mut self, n: u32) -> Option<&mut Switch> {
        self.sws.get_mut(slot(n, self.sw_lo))
    }

    fn poll_timeout(&self, n: u32) -> Option<Instant> {
        if n < self.n_gpus {
            self.gpus.get(n as usize).and_then(Endpoint::poll_timeout)
        } else {
            self.sw(n).and_then(Switch::poll_timeout)
        }
    }

    /// Polls port `p` of node `n` for one frame and puts it on the wire.
    fn transmit(&mut self, n: u32, p: u16) -> bool {
        let inst = self.inst();
        let gp = self.ports_of(n).start + u32::from(p);
        // Nodes hand their DATA frames out by reference, shared with the port's replay buffer:
        // the wire carries the reference, not a copy.
        let mut stomped = false;
        let res = if n < self.n_gpus {
            match self.gpus.get_mut(n as usize) {
                Some(ep) => ep.poll_transmit_shared(inst, usize::from(p), &mut self.txbuf),
                None => return false,
            }
        } else {
            match self.sws.get_mut(slot(n, self.sw_lo)) {
                Some(sw) => {
                    let r = sw.poll_transmit_shared(inst, usize::from(p), &mut self.txbuf);
                    // A cut-through switch ends this frame with a stomped FCS (switch.md §6):
                    // the wire writes its complement.
                    stomped = sw.stomped(usize::from(p));
                    r
                }
                None => return false,
            }
        };
        let Ok(Some((t, shared))) = res else {
            return false;
        };
        let Some(&ci) = self.out_chan.get(gp as usize) else {
            return false;
        };
        let Some(chan) = self.chans.get_mut(ci as usize) else {
            return false;
        };
        let (blackout, trickle) = self
            .cables
            .get(chan.cable as usize)
            .map_or((false, 0), |c| (c.blackout > 0, c.trickle));
        // A trickling cable carries the first `trickle` DATA frames after each pause in their
        // direction, and loses the rest of the run.
        let trickle = trickle > 0 && t.kind == FrameKind::Data && {
            if self.now.saturating_sub(chan.last_data_ps) >= TRICKLE_PAUSE_PS {
                chan.run = 0;
            }
            chan.last_data_ps = self.now;
            chan.run = chan.run.saturating_add(1);
            chan.run > trickle
        };
        let verdict = if blackout || trickle {
            Verdict::Drop
        } else if stomped {
            Verdict::Stomp
        } else {
            Verdict::Pass
        };
        let captured = self.capture.sink(chan.cable).is_some();
        // Toward a cut-through switch, a DATA frame long enough to be cut through is shown to
        // the switch when its header arrives, besides arriving whole at its end.
        let cut_ps = chan.cut_ps;
        let head = if cut_ps != NONE && t.kind == FrameKind::Data {
            let ser = chan.ch.serialisation_ps(t.len);
            let hdr = chan.ch.serialisation_ps(HEADER_BYTES);
            (ser > hdr.saturating_add(cut_ps)).then(|| match &shared {
                Some(f) => HeaderBytes::Shared(f.clone()),
                None => HeaderBytes::Owned(self.txbuf.get(..t.len).unwrap_or(&[]).to_vec()),
            })
        } else {
            None
        };
        // The wire takes the reference over; a copy of it stays here only for a capture.
        let (out, shared) = match shared {
            Some(f) if captured => {
                let out = chan
                    .ch
                    .transmit_shared(self.now, f.clone(), t.kind, verdict);
                (out, Some(f))
            }
            Some(f) => (chan.ch.transmit_shared(self.now, f, t.kind, verdict), None),
            None => {
                let frame = self.txbuf.get(..t.len).unwrap_or(&[]);
                (chan.ch.transmit(self.now, frame, t.kind, verdict), None)
            }
        };
        if let Some(f) = self.free_at.get_mut(gp as usize) {
            *f = chan.ch.free_at();
        }
        self.tally.frame_hops += 1;
        let on_wire = (t.len + ethlink_protocol::WIRE_OVERHEAD) as u64;
        if t.kind == FrameKind::Data {
            self.tally.data_hops += 1;
            self.tally.wire_data += on_wire;
            self.tally.data_payload += t.len.saturating_sub(DATA_FRAMING) as u64;
        } else {
            self.tally.wire_ctl += on_wire;
        }
        if chan.remote {
            debug_assert!(
                out.fate.vanish || out.arrive_ps >= self.now.saturating_add(self.lookahead),
                "a frame reaches the other partition within the lookahead"
            );
            chan.ch.hand_over(&mut HandOff(ci, &mut self.outbox));
        }
        let arm = !chan.remote && !out.fate.vanish && chan.armed == NONE;
        if arm {
            chan.armed = out.arrive_ps;
        }
        let to = (chan.to_node, chan.to_port);
        let cable = chan.cable;
        if let Some(frame) = head
            && !out.fate.vanish
        {
            let first = out
                .arrive_ps
                .saturating_sub(chan.ch.serialisation_ps(t.len));
            let at_ps = first.saturating_add(chan.ch.serialisation_ps(HEADER_BYTES));
            let fcs = if out.fate.stomp {
                FcsStatus::Stomped
            } else if out.fate.corrupt {
                FcsStatus::Bad
            } else {
                FcsStatus::Good
            };
            // The end never arrives when an outage cuts the cable first.
            let cut = self
                .cuts
                .get(cable as usize)
                .is_some_and(|c| c.iter().any(|&t| t > at_ps && t <= out.arrive_ps));
            let end = FrameEnd {
                fcs,
                at: (!cut).then(|| Instant::from_nanos(out.arrive_ps / PS_PER_NS)),
            };
            let h = Header { at_ps, frame, end };
            if chan.remote {
                debug_assert!(
                    at_ps >= self.now.saturating_add(self.lookahead),
                    "a header reaches the other partition within the lookahead"
                );
                self.outbox.push(Handoff::Header(ci, h));
            } else {
                if chan.hdr_armed == NONE {
                    chan.hdr_armed = at_ps;
                    self.heap.push(at_ps, Ev::Header(ci));
                }
                chan.headers.push_back(h);
            }
        }
        if let Some(sink) = self.capture.sink(cable) {
            let frame = match &shared {
                Some(f) if !f.has_fcs() || stomped => {
                    f.write_exact(&mut self.capbuf);
                    if stomped {
                        // As the wire sends it: the complement of its FCS (WIRE-2.5-4).
                        let body = self.capbuf.len().saturating_sub(4);
                        let fcs = ethlink_protocol::fcs::stomped_bytes(
                            self.capbuf.get(..body).unwrap_or(&[]),
                        );
                        if let Some(tail) = self.capbuf.get_mut(body..) {
                            tail.copy_from_slice(&fcs);
                        }
                    }
                    &self.capbuf[..]
                }
                Some(f) => f.as_bytes(),
                None => self.txbuf.get(..t.len).unwrap_or(&[]),
            };
            let from = end_of(self.n_gpus, n, p);
            let to = end_of(self.n_gpus, to.0, to.1);
            sink(&CapturedFrame {
                cable: cable as usize,
                from,
                to,
                start_ps: out.start_ps,
                arrive_ps: out.arrive_ps,
                bytes: frame,
                kind: t.kind,
                damaged: out.fate.corrupt,
                vanished: out.fate.vanish,
                duplicated: out.fate.duplicate,
            });
        }
        drop(shared);
        self.push(out.end_ps, Ev::WireFree(gp));
        if arm {
            self.push(out.arrive_ps, Ev::Arrive(ci));
        }
        true
    }

    /// The header of the next frame on channel `ci`, toward a cut-through switch, has arrived.
    fn header(&mut self, ci: u32, t: u64) {
        let now = self.now;
        let Some(chan) = self.chans.get_mut(ci as usize) else {
            return;
        };
        if chan.hdr_armed != t {
            // Superseded: the wire was cut since.
            return;
        }
        chan.hdr_armed = NONE;
        let (n, p) = (chan.to_node, usize::from(chan.to_port));
        while chan.headers.front().is_some_and(|h| h.at_ps <= now) {
            let Some(h) = chan.headers.pop_front() else {
                break;
            };
            let at = Instant::from_nanos(h.at_ps / PS_PER_NS);
            if let Some(sw) = self
                .sws
                .get_mut(slot(n, self.sw_lo))
                .filter(|_| n >= self.n_gpus)
            {
                match &h.frame {
                    HeaderBytes::Shared(f) => sw.handle_header_by_ref(at, p, f, h.end),
                    HeaderBytes::Owned(b) => sw.handle_header(at, p, b, h.end),
                }
            }
        }
        if let Some(next) = chan.headers.front() {
            chan.hdr_armed = next.at_ps;
            self.heap.push(next.at_ps, Ev::Header(ci));
        }
        self.mark(n);
    }

    /// The arrival event of channel `ci` for time `t` fired.
    fn arrive(&mut self, ci: u32, t: u64) {
        let now = self.now;
        let inst = self.inst();
        let Some(chan) = self.chans.get_mut(ci as usize) else {
            return;
        };
        if chan.armed != t {
            // Superseded: the wire was cut since.
            return;
        }
        chan.armed = NONE;
        let (n, p) = (chan.to_node, usize::from(chan.to_port));
        // The wire knows what it did to each frame's FCS, as a receiving MAC that checked it
        // would: the link ends take that status instead of computing the CRC a second time on
        // the hop. A frame a cut-through switch stomps crosses its wire stomped (the wire wrote
        // the complement); any other undamaged frame's FCS is the one its sender computed.
        while let Some((bytes, fcs)) = chan.ch.pop_arrival_wire(now) {
            if n < self.n_gpus {
                if let Some(ep) = self.gpus.get_mut(n as usize) {
                    // A frame carried by reference brings what its sender vouched for of its
                    // data: the endpoint keeps that description instead of reading the bytes.
                    match &bytes {
                        WireBytes::Shared(f) => ep.handle_frame_by_ref(inst, p, f, fcs),
                        WireBytes::Owned(b) => ep.handle_frame_fcs(inst, p, b, fcs),
                    }
                }
                chan.ch.recycle(bytes);
            } else if let Some(sw) = self.sws.get_mut(slot(n, self.sw_lo)) {
                // A frame carried by reference stays one, moved into the switch: it takes the
                // buffer over at the egress once the sender has let it go, instead of copying
                // the payload.
                match bytes {
                    WireBytes::Shared(f) => sw.handle_frame_by_ref(inst, p, f, fcs),
                    owned => {
                        sw.handle_frame_fcs(inst, p, owned.as_bytes(), fcs);
                        chan.ch.recycle(owned);
                    }
                }
            }
        }
        if let Some(t) = chan.ch.next_arrival() {
            chan.armed = t;
            self.push(t, Ev::Arrive(ci));
        }
        self.mark(n);
    }

    /// Runs node `n`'s due timers, sends what it can, collects completions, re-arms its timer.
    fn service(&mut self, n: u32) {
        let inst = self.inst();
        let timed = self.due.get(n as usize).copied().unwrap_or(false);
        if let Some(d) = self.due.get_mut(n as usize) {
            *d = false;
        }
        if n < self.n_gpus {
            let g = n as usize;
            if timed && let Some(ep) = self.gpus.get_mut(g) {
                ep.handle_timeout(inst);
            }
            // Sending on one port may queue work for others (the RDMA engine fills every port
            // with room): poll again until a pass sends nothing.
            // Only the ports something happened to since they last had nothing to send: the
            // others' links and wires, cold in a large fabric, are not read.
            let base = self.ports_of(n).start;
            loop {
                let mut sent = false;
                for gp in self.ports_of(n) {
                    let p = (gp - base) as u16;
                    let stirred = self
                        .gpus
                        .get(g)
                        .is_some_and(|ep| ep.may_transmit(usize::from(p)));
                    if stirred && self.wire_free(gp) {
                        sent |= self.transmit(n, p);
                    }
                }
                if !sent {
                    break;
                }
            }
            if let Some(ep) = self.gpus.get_mut(g) {
                while let Some(c) = ep.poll_completion() {
                    self.completions.push_back((n as u16, c));
                }
            }
        } else {
            let s = slot(n, self.sw_lo);
            if timed && let Some(sw) = self.sws.get_mut(s) {
                sw.handle_timeout(inst);
            }
            let base = self.ports_of(n).start;
            let mut ready = std::mem::take(&mut self.ready);
            loop {
                ready.clear();
                if let Some(sw) = self.sws.get_mut(s) {
                    sw.take_ready_ports(&mut ready);
                }
                if ready.is_empty() {
                    break;
                }
                for &p in &ready {
                    if self.wire_free(base + u32::from(p)) {
                        self.transmit(n, p);
                    }
                }
            }
            self.ready = ready;
        }
        self.rearm(n, timed);
    }

    /// Arms node `n`'s next deadline. `timed`: its timers have just run.
    fn rearm(&mut self, n: u32, timed: bool) {
        let Some(t) = self.poll_timeout(n) else {
            return;
        };
        let mut ps = t.as_nanos().saturating_mul(PS_PER_NS);
        if ps <= self.now {
            if !timed {
                // Due now: run the timers at once.
                if let Some(d) = self.due.get_mut(n as usize) {
                    *d = true;
                }
                self.mark(n);
                return;
            }
            // Still due after the timers ran: it waits for a wire. A busy wire's free event
            // services the node; with every wire free, look again at the next nanosecond.
            if self.ports_of(n).any(|gp| !self.wire_free(gp)) {
                return;
            }
            self.tally.idle_wakeups += 1;
            ps = (self.now / PS_PER_NS + 1) * PS_PER_NS;
        }
        let Some(a) = self.armed.get_mut(n as usize) else {
            return;
        };
        if ps < *a {
            *a = ps;
            self.heap.arm(n, ps);
        }
    }

    fn set_cable(&mut self, c: u32, up: bool) {
        let inst = self.inst();
        let now = self.now;
        let Some(cable) = self.cables.get(c as usize) else {
            return;
        };
        let ends = cable.ends;
        if !up {
            for (ch, (node, port)) in cable.chans.into_iter().zip(ends) {
                let gp = self.ports_of(node).start + u32::from(port);
                if let Some(x) = self.chans.get_mut(ch as usize) {
                    x.ch.clear(now);
                    x.armed = NONE;
                    x.headers.clear();
                    x.hdr_armed = NONE;
                    if let Some(f) = self.free_at.get_mut(gp as usize) {
                        *f = x.ch.free_at();
                    }
                }
            }
        }
        for (n, p) in ends {
            let p = usize::from(p);
            if n < self.n_gpus {
                if let Some(ep) = self.gpus.get_mut(n as usize) {
                    if up {
                        ep.port_up(inst, p);
                    } else {
                        ep.port_down(inst, p);
                    }
                }
            } else if let Some(sw) = self.sw_mut(n) {
                if up {
                    sw.port_up(inst, p);
                } else {
                    sw.port_down(inst, p);
                }
            }
            self.mark(n);
        }
    }

    /// The next event or deadline due before `end`, taken from the queue.
    fn take_before(&mut self, end: u64) -> Option<(u64, Ev)> {
        if self.heap.peek_time().is_none_or(|t| t >= end) {
            return None;
        }
        let (t, next) = self.heap.next()?;
        let ev = match next {
            Next::Event(ev) => ev,
            Next::Deadline(n) => Ev::Timer(n),
        };
        Some((t, ev))
    }

    /// Services every node marked since the last time.
    fn service_marked(&mut self) {
        while let Some(n) = self.dirty_list.pop() {
            if let Some(d) = self.dirty.get_mut(n as usize) {
                *d = false;
            }
            self.service(n);
        }
    }

    /// Runs `ev`, fired at `t`, if it is one of a node's or a wire's (a frame or a header
    /// arriving, a wire free, a node's deadline), and says whether it was.
    fn node_event(&mut self, t: u64, ev: Ev) -> bool {
        match ev {
            Ev::Arrive(c) => self.arrive(c, t),
            Ev::Header(c) => self.header(c, t),
            Ev::WireFree(gp) => {
                let n = self.port_node.get(gp as usize).copied().unwrap_or(0);
                if n >= self.n_gpus {
                    let p = (gp - self.ports_of(n).start) as u16;
                    if self.wire_free(gp) {
                        self.transmit(n, p);
                    }
                }
                self.mark(n);
            }
            // A node's one deadline, moved in place whenever it was armed again: always
            // the current one.
            Ev::Timer(n) => {
                if let Some(a) = self.armed.get_mut(n as usize) {
                    *a = NONE;
                }
                if let Some(d) = self.due.get_mut(n as usize) {
                    *d = true;
                }
                self.mark(n);
            }
            _ => return false,
        }
        true
    }

    /// Outage `k` of `scen` begins (`on`) or ends on its cables, `outages[k]`: a cable's cut
    /// (or blackout) count moves, and its links go down or up when the first cut begins or the
    /// last one ends; a trickle outage sets how many frames pass.
    fn outage(&mut self, scen: &Scenario, outages: &[Vec<u32>], k: usize, on: bool) {
        let blackout = scen.outages.get(k).is_some_and(|o| o.blackout);
        let trickle = scen.outages.get(k).map_or(0, |o| o.trickle);
        let Some(cables) = outages.get(k) else {
            return;
        };
        for &c in cables {
            let Some(cb) = self.cables.get_mut(c as usize) else {
                continue;
            };
            if trickle > 0 {
                // The links stay up; the last trickle outage to begin sets how many frames pass,
                // and the cable carries every frame again once one ends.
                cb.trickle = if on { trickle } else { 0 };
                continue;
            }
            let count = if blackout {
                &mut cb.blackout
            } else {
                &mut cb.down
            };
            *count = if on {
                *count + 1
            } else {
                count.saturating_sub(1)
            };
            // The physical links change only when the first cut begins or the last one ends.
            let edge = if on { *count == 1 } else { *count == 0 };
            if !blackout && edge {
                self.set_cable(c, !on);
            }
        }
    }

    /// Queues the begin and end of every outage of `scen` (on `outages`, its cables) for traffic
    /// begun at `now` (ps), and notes when each cut begins; returns when each begins and ends,
    /// ns (the same time for an outage that never ends).
    fn schedule_outages(
        &mut self,
        scen: &Scenario,
        outages: &[Vec<u32>],
        now: u64,
    ) -> Vec<(u64, u64)> {
        let after = |ns: u64| now.saturating_add(ns.saturating_mul(PS_PER_NS));
        let now_ns = now / PS_PER_NS;
        let mut spans = Vec::with_capacity(scen.outages.len());
        for (i, o) in scen.outages.iter().enumerate() {
            let at = after(o.start_ns);
            self.push(at, Ev::OutageOn(i as u32));
            if !o.blackout && o.trickle == 0 {
                for &c in outages.get(i).map_or(&[][..], |v| &v[..]) {
                    if let Some(cuts) = self.cuts.get_mut(c as usize) {
                        cuts.push(at);
                    }
                }
            }
            let on = now_ns.saturating_add(o.start_ns);
            let off = match o.duration_ns {
                Some(d) => {
                    self.push(
                        at.saturating_add(d.saturating_mul(PS_PER_NS)),
                        Ev::OutageOff(i as u32),
                    );
                    on.saturating_add(d)
                }
                None => on,
            };
            spans.push((on, off));
        }
        spans
    }

    /// Takes what the other partition handed over in its last window: each frame joins its
    /// channel's frames in flight, each header its channel's headers.
    fn take_handoffs(&mut self, mail: &mut Vec<Handoff>) {
        for h in mail.drain(..) {
            match h {
                Handoff::Flight(ci, f) => {
                    let Some(chan) = self.chans.get_mut(ci as usize) else {
                        continue;
                    };
                    chan.ch.take_over(f);
                    if chan.armed == NONE
                        && let Some(t) = chan.ch.next_arrival()
                    {
                        chan.armed = t;
                        self.heap.push(t, Ev::Arrive(ci));
                    }
                }
                Handoff::Header(ci, h) => {
                    let Some(chan) = self.chans.get_mut(ci as usize) else {
                        continue;
                    };
                    if chan.hdr_armed == NONE {
                        chan.hdr_armed = h.at_ps;
                        self.heap.push(h.at_ps, Ev::Header(ci));
                    }
                    chan.headers.push_back(h);
                }
            }
        }
    }

    fn all_up(&self) -> bool {
        self.gpus
            .iter()
            .all(|ep| (0..ep.port_count()).all(|p| ep.is_usable(p)))
            && self.sws.iter().all(|sw| {
                (0..usize::from(sw.config().ports)).all(|p| sw.link(p).is_some_and(|l| l.is_up()))
            })
    }
}

/// Where switch node `n` lies in a core's `sws` whose first is node `lo`: out of bounds
/// (`usize::MAX`) for a node before it.
fn slot(n: u32, lo: u32) -> usize {
    n.checked_sub(lo).map_or(usize::MAX, |i| i as usize)
}

fn end_of(n_gpus: u32, n: u32, p: u16) -> End {
    if n < n_gpus {
        End::Gpu {
            gpu: n as u16,
            port: p,
        }
    } else {
        End::Switch {
            switch: n - n_gpus,
            port: p,
        }
    }
}

/// What a workload may do, and when.
pub(crate) struct Cx<'a> {
    core: &'a mut Core,
    ops: &'a mut Tracker,
    w: u16,
}

impl workload::Host for Cx<'_> {
    /// Now, ps.
    fn now_ps(&self) -> u64 {
        self.core.now
    }

    /// A fresh pattern seed.
    fn seed(&mut self) -> u64 {
        self.ops.next_seed()
    }

    /// Issues a load-store operation on GPU `gpu`.
    fn issue(
        &mut self,
        gpu: u16,
        req: LsRequest,
        token: u64,
        bytes: u64,
        effect: Effect,
    ) -> Result<u16, IssueError> {
        let inst = self.core.inst();
        let ep = self
            .core
            .gpus
            .get_mut(usize::from(gpu))
            .ok_or(IssueError::Invalid {
                field: "gpu",
                value: u64::from(gpu),
                rule: "no such GPU",
            })?;
        let kind = match req.op {
            ethlink_endpoint::LsOp::Load { .. } => OpKind::Load,
            ethlink_endpoint::LsOp::Store { .. } => OpKind::Store,
            ethlink_endpoint::LsOp::Atomic { op, .. } => match op {
                ethlink_protocol::AtomicOp::FetchAdd { .. } => OpKind::FetchAdd,
                ethlink_protocol::AtomicOp::Swap { .. } => OpKind::Swap,
                ethlink_protocol::AtomicOp::CompareSwap { .. } => OpKind::CompareSwap,
            },
            ethlink_endpoint::LsOp::Fence => OpKind::RemoteFence,
        };
        let tag = ep.issue(inst, req)?;
        self.ops.issued(
            gpu,
            OpId::Ls(tag),
            OpRec {
                workload: self.w,
                token,
                kind,
                issued_ns: inst.as_nanos(),
                bytes,
                effect,
            },
        );
        self.core.mark(u32::from(gpu));
        Ok(tag)
    }

    /// Describes `gpu`'s staging bytes at `stage` as a fresh pattern and posts an RDMA write of them
    /// to `dst` at `addr`.
    fn post_write(
        &mut self,
        gpu: u16,
        stage: u64,
        dst: u16,
        addr: u64,
        len: u64,
        token: u64,
    ) -> Result<u64, PostError> {
        let inst = self.core.inst();
        let Some(ep) = self.core.gpus.get_mut(usize::from(gpu)) else {
            return Err(PostError::Invalid {
                field: "gpu",
                value: u64::from(gpu),
                rule: "no such GPU",
            });
        };
        if ep.rdma_outstanding() >= ep.config().rdma_queue as usize {
            self.ops.rdma_queue_waits += 1;
            return Err(PostError::QueueFull {
                outstanding: u32::try_from(ep.rdma_outstanding()).unwrap_or(u32::MAX),
            });
        }
        let seed = self.ops.next_seed();
        // The source bytes: the pattern, described in the staging buffer before the post (the
        // RDMA engine makes its bytes as it builds each segment).
        let _ = ep.memory_mut().write_pattern(
            Space::Global,
            stage,
            len,
            ethlink_endpoint::pattern::Pattern::new(seed, 0),
        );
        let desc = RdmaDesc {
            dir: RdmaDir::Write,
            local_space: Space::Global,
            local_addr: stage,
            remote: Remote {
                gpu: GpuId::new(dst).unwrap_or_default(),
                space: Space::Global,
                key: key_of(dst),
                addr,
            },
            len,
        };
        let id = ep.post(inst, desc)?;
        self.ops.issued(
            gpu,
            OpId::Rdma(id),
            OpRec {
                workload: self.w,
                token,
                kind: OpKind::RdmaWrite,
                issued_ns: inst.as_nanos(),
                bytes: len,
                effect: Effect::Write {
                    gpu: dst,
                    addr,
                    len,
                    seed,
                },
            },
        );
        self.core.mark(u32::from(gpu));
        Ok(id)
    }

    fn post_rdma8(
        &mut self,
        gpu: u16,
        local: u64,
        dst: u16,
        addr: u64,
        value: Option<u64>,
        token: u64,
    ) -> Result<u64, PostError> {
        let inst = self.core.inst();
        let Some(ep) = self.core.gpus.get_mut(usize::from(gpu)) else {
            return Err(PostError::Invalid {
                field: "gpu",
                value: u64::from(gpu),
                rule: "no such GPU",
            });
        };
        if let Some(v) = value {
            let _ = ep
                .memory_mut()
                .write(Space::Global, local, &v.to_le_bytes());
        }
        let (dir, kind, effect) = match value {
            Some(_) => (
                RdmaDir::Write,
                OpKind::RdmaWrite,
                Effect::Writes {
                    gpu: dst,
                    addr,
                    len: 8,
                },
            ),
            None => (RdmaDir::Read, OpKind::RdmaRead, Effect::None),
        };
        let desc = RdmaDesc {
            dir,
            local_space: Space::Global,
            local_addr: local,
            remote: Remote {
                gpu: GpuId::new(dst).unwrap_or_default(),
                space: Space::Global,
                key: key_of(dst),
                addr,
            },
            len: 8,
        };
        let id = ep.post(inst, desc)?;
        self.ops.issued(
            gpu,
            OpId::Rdma(id),
            OpRec {
                workload: self.w,
                token,
                kind,
                issued_ns: inst.as_nanos(),
                bytes: 8,
                effect,
            },
        );
        self.core.mark(u32::from(gpu));
        Ok(id)
    }

    fn fence(&mut self, gpu: u16, token: u64) -> Result<u64, ethlink_endpoint::FenceError> {
        let inst = self.core.inst();
        let Some(ep) = self.core.gpus.get_mut(usize::from(gpu)) else {
            return Err(ethlink_endpoint::FenceError::TooMany { outstanding: 0 });
        };
        let id = ep.fence(inst)?;
        self.ops.issued(
            gpu,
            OpId::Fence(id),
            OpRec {
                workload: self.w,
                token,
                kind: OpKind::Fence,
                issued_ns: inst.as_nanos(),
                bytes: 0,
                effect: Effect::None,
            },
        );
        self.core.mark(u32::from(gpu));
        Ok(id)
    }

    fn read_local8(&mut self, gpu: u16, addr: u64) -> Option<u64> {
        let ep = self.core.gpus.get(usize::from(gpu))?;
        let mut b = [0u8; 8];
        ep.memory().read(Space::Global, addr, &mut b).ok()?;
        Some(u64::from_le_bytes(b))
    }

    /// Wakes the workload at `at_ps` with `token`.
    fn wake(&mut self, at_ps: u64, token: u64) {
        let w = self.w;
        self.core.push(at_ps.max(self.core.now), Ev::Wake(w, token));
    }

    /// Asks to be told when GPU `gpu` completes an operation (it may then have room).
    fn block(&mut self, gpu: u16) {
        let w = self.w;
        if let Some(b) = self.core.blocked.get_mut(usize::from(gpu))
            && !b.contains(&w)
        {
            b.push(w);
        }
    }

    /// Records in the integrity reference a write of pattern `seed` to `gpu`'s `[addr, addr +
    /// len)` that completed OK (`ok`) or with an error.
    fn reference_write(&mut self, gpu: u16, addr: u64, len: u64, seed: u64, ok: bool) {
        self.ops
            .reference
            .write(usize::from(gpu), addr, len, seed, ok);
    }

    /// Records a load of `gpu`'s `addr` that the workload checked itself: it expected
    /// `expected` and the load returned `found`.
    fn load_checked(&mut self, gpu: u16, addr: u64, expected: &[u8], found: &[u8]) {
        self.ops.reference.load_result(gpu, addr, expected, found);
    }

    fn reference_unsure(&mut self, gpu: u16, addr: u64, len: u64) {
        self.ops.reference.unsure(usize::from(gpu), addr, len);
    }

    fn load_unjudged(&mut self) {
        self.ops.reference.load_unjudged();
    }

    /// Counts an open-loop arrival that found no tag.
    fn refused_no_tag(&mut self) {
        self.ops.refused_no_tag += 1;
    }
}

/// A fabric ready to run one scenario.
pub struct Fabric {
    scen: Scenario,
    core: Core,
    ops: Tracker,
    wls: Vec<Wl>,
    outages: Vec<Vec<u32>>,
    cable_info: Vec<CableInfo>,
    start: u64,
    stop: u64,
    stopping: bool,
    started: bool,
    all_up: bool,
    finite_left: usize,
    ended: bool,
    time_limit_hit: bool,
    integrity: crate::check::Integrity,
    series: Series,
    last_sample: SampleState,
    ran: bool,
    /// Run as two partitions ([`Fabric::set_partitioned`]): the lookahead (ps), and whether
    /// the switches' partition has a thread of its own.
    partitioned: Option<(u64, bool, u32)>,
    /// How the last partitioned run spent its wall time.
    part_wall: Option<PartitionWall>,
}

impl std::fmt::Debug for Fabric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fabric")
            .field("gpus", &self.core.gpus.len())
            .field("switches", &self.core.sws.len())
            .field("cables", &self.core.cables.len())
            .field("now_ps", &self.core.now)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default, Clone)]
struct SampleState {
    t: u64,
    ops: u64,
    bytes: u64,
    /// Per GPU port: picoseconds its transmit wire has been busy up to `t`.
    wire: Vec<u64>,
}

impl Fabric {
    /// Builds the GPUs, switches, cables and routes of `scen`, registers every GPU's memory and
    /// brings every link up (the run starts the traffic once they are UP).
    pub fn new(scen: &Scenario) -> Result<Fabric, ScenarioError> {
        scen.validate()?;
        let t = &scen.topology;
        let g_n = usize::from(t.gpus);
        let ports = t.ports();
        let mut gpus = Vec::with_capacity(g_n);
        for g in 0..t.gpus {
            let mut ep = Endpoint::new(endpoint_config(scen, g)).map_err(|e| ScenarioError {
                key: format!("endpoint.{}", e.field),
                reason: e.to_string(),
            })?;
            ep.memory_mut()
                .register(Region::new(
                    Space::Global,
                    0,
                    scen.endpoint.global_bytes,
                    key_of(g),
                    Perms::ALL,
                ))
                .map_err(|e| ScenarioError {
                    key: "endpoint.global_bytes".into(),
                    reason: e.to_string(),
                })?;
            gpus.push(ep);
        }
        // Switches and their routes; cables as (node, port) pairs.
        let mut sws = Vec::new();
        let mut links: Vec<[(u32, u16); 2]> = Vec::new();
        let gn = t.gpus as u32;
        let gpu_node = |g: usize| g as u32;
        let sw_err = |e: ethlink_switch::ConfigError| ScenarioError {
            key: format!("switch.{}", e.field),
            reason: e.to_string(),
        };
        match t.kind {
            TopologyKind::BackToBack => {
                for p in 0..ports {
                    links.push([(0, p as u16), (1, p as u16)]);
                }
            }
            TopologyKind::SingleTier => {
                for p in 0..ports {
                    let mut routes = Routes::new();
                    for g in 0..g_n {
                        routes.add(GpuId::new(g as u16).unwrap_or_default(), g as u16);
                        links.push([(gpu_node(g), p as u16), (gn + p as u32, g as u16)]);
                    }
                    let cfg = switch_config(scen, p as u16, t.gpus);
                    sws.push(Switch::new(cfg, routes).map_err(sw_err)?);
                }
            }
            TopologyKind::TwoTier => {
                let leaves = usize::from(t.leaves);
                let spines = usize::from(t.spines);
                let gpl = t.gpus_per_leaf();
                let per_plane = leaves + spines;
                for p in 0..ports {
                    let base = p * per_plane;
                    for l in 0..leaves {
                        //= docs/spec/switch.md#25-routing-free-of-deadlock
                        //# SW-2-15 The forwarding tables of the switches of a fabric MUST NOT let
                        //# a frame follow a cycle of switches toward any destination, through any
                        //# port any entry lists, whatever group of preference (§2.3) is in use.
                        // Up*/down*: a leaf sends its own GPUs' frames down and every other up,
                        // and a spine sends every frame down to its GPU's leaf.
                        let mut routes = Routes::new();
                        for g in 0..g_n {
                            let id = GpuId::new(g as u16).unwrap_or_default();
                            if g / gpl == l {
                                routes.add(id, (g % gpl) as u16);
                            } else {
                                let (list, sizes) = leaf_entry(t.leaf_uplinks, g, gpl, spines);
                                routes.set_groups(id, &list, &sizes).map_err(|e| {
                                    ScenarioError {
                                        key: "topology.spines".into(),
                                        reason: e.to_string(),
                                    }
                                })?;
                            }
                        }
                        let id = (base + l) as u16;
                        let cfg = switch_config(scen, id, (gpl + spines) as u16);
                        sws.push(Switch::new(cfg, routes).map_err(sw_err)?);
                        for i in 0..gpl {
                            let g = l * gpl + i;
                            if g < g_n {
                                links.push([(gpu_node(g), p as u16), (gn + id as u32, i as u16)]);
                            }
                        }
                        for s in 0..spines {
                            let spine = (base + leaves + s) as u32;
                            links
                                .push([(gn + id as u32, (gpl + s) as u16), (gn + spine, l as u16)]);
                        }
                    }
                    for s in 0..spines {
                        let mut routes = Routes::new();
                        for g in 0..g_n {
                            routes.add(GpuId::new(g as u16).unwrap_or_default(), (g / gpl) as u16);
                        }
                        let id = (base + leaves + s) as u16;
                        let cfg = switch_config(scen, id, leaves as u16);
                        sws.push(Switch::new(cfg, routes).map_err(sw_err)?);
                    }
                }
            }
        }
        let n_nodes = g_n + sws.len();
        let mut node_base = Vec::with_capacity(n_nodes + 1);
        let mut acc = 0u32;
        // Every wire here tells the receiver what it did to a frame's FCS: the nodes leave the
        // FCS of the frames they share with it unwritten, and a capture or a damaged copy
        // computes it.
        for ep in &mut gpus {
            node_base.push(acc);
            acc += ep.port_count() as u32;
            ep.defer_fcs(true);
        }
        for sw in &mut sws {
            node_base.push(acc);
            acc += u32::from(sw.config().ports);
            sw.defer_fcs(true);
        }
        node_base.push(acc);
        let wire = Wire {
            rate_gbps: scen.link.rate_gbps,
            propagation_ns: scen
                .link
                .propagation_ns
                .unwrap_or_else(|| Wire::cable_ns(scen.link.cable_m)),
            faults: Faults {
                loss: scen.link.loss,
                drop: scen.link.drop,
                burst: scen.link.burst,
                ber: scen.link.ber,
                duplicate: scen.link.duplicate,
                control_loss: scen.link.control_loss,
            },
        };
        let mut out_chan = vec![u32::MAX; acc as usize];
        let mut free_at = vec![u64::MAX; acc as usize];
        let mut port_node = vec![0u32; acc as usize];
        for n in 0..n_nodes {
            for gp in node_base[n]..node_base[n + 1] {
                port_node[gp as usize] = n as u32;
            }
        }
        let mut chans = Vec::with_capacity(links.len() * 2);
        let mut cables = Vec::with_capacity(links.len());
        let mut cable_info = Vec::with_capacity(links.len());
        for (ci, ends) in links.iter().enumerate() {
            let mut ids = [0u32; 2];
            for d in 0..2 {
                let (from, to) = (ends[d], ends[1 - d]);
                let seed = mix64(scen.seed ^ mix64(((ci as u64) << 1 | d as u64) ^ 0xC4A7_7E15));
                let id = chans.len() as u32;
                chans.push(Chan {
                    ch: wire.channel(seed),
                    to_node: to.0,
                    to_port: to.1,
                    cable: ci as u32,
                    armed: NONE,
                    cut_ps: to
                        .0
                        .checked_sub(gn)
                        .and_then(|s| sws.get(s as usize))
                        .filter(|sw| sw.config().mode == Mode::CutThrough)
                        .map_or(NONE, |sw| {
                            u64::try_from(sw.config().latency.as_nanos())
                                .unwrap_or(u64::MAX)
                                .saturating_mul(PS_PER_NS)
                        }),
                    headers: VecDeque::new(),
                    hdr_armed: NONE,
                    run: 0,
                    last_data_ps: 0,
                    remote: false,
                });
                let gp = node_base[from.0 as usize] + u32::from(from.1);
                out_chan[gp as usize] = id;
                free_at[gp as usize] = 0;
                ids[d] = id;
            }
            cables.push(Cable {
                ends: *ends,
                chans: ids,
                down: 0,
                blackout: 0,
                trickle: 0,
            });
            cable_info.push(CableInfo {
                index: ci,
                a: end_of(gn, ends[0].0, ends[0].1),
                b: end_of(gn, ends[1].0, ends[1].1),
            });
        }
        let mut core = Core {
            now: 0,
            heap: EventQueue::default(),
            gpus,
            sws,
            sw_lo: gn,
            n_gpus: gn,
            node_base,
            out_chan,
            free_at,
            port_node,
            chans,
            cuts: vec![Vec::new(); cables.len()],
            cables,
            armed: vec![NONE; n_nodes],
            due: vec![false; n_nodes],
            dirty: vec![false; n_nodes],
            dirty_list: Vec::new(),
            txbuf: vec![0; 9216 + 64],
            capbuf: Vec::new(),
            ready: Vec::new(),
            completions: VecDeque::new(),
            blocked: vec![Vec::new(); g_n],
            tally: Tally::default(),
            capture: None,
            outbox: Vec::new(),
            lookahead: 0,
        };
        // Every port comes up at time 0.
        for c in 0..core.cables.len() as u32 {
            core.set_cable(c, true);
        }
        let outages = scen
            .outages
            .iter()
            .map(|o| outage_cables(scen, &core, &links, o.what))
            .collect();
        let areas = workload::layout(scen)?;
        let mut ops = Tracker::new(g_n, scen.seed);
        let mut wls = Vec::with_capacity(scen.traffic.len());
        for (i, w) in scen.traffic.iter().enumerate() {
            let area = areas.get(i).copied().unwrap_or_default();
            for g in 0..g_n {
                if area.stage_len > 0 {
                    ops.reference
                        .add_local(g, area.stage_base, area.stage_base + area.stage_len);
                }
            }
            wls.push(Wl::new(i as u16, w, scen, area));
        }
        let finite_left = scen.traffic.iter().filter(|w| w.is_finite()).count();
        Ok(Fabric {
            scen: scen.clone(),
            core,
            ops,
            wls,
            outages,
            cable_info,
            start: 0,
            stop: 0,
            stopping: false,
            started: false,
            all_up: false,
            finite_left,
            ended: false,
            time_limit_hit: false,
            integrity: crate::check::Integrity::default(),
            series: Series::default(),
            last_sample: SampleState::default(),
            ran: false,
            partitioned: None,
            part_wall: None,
        })
    }

    /// Runs the fabric as two partitions, its GPUs (with the workloads) and the first
    /// [`Fabric::default_split`] switches, and the other switches, those on a thread of their
    /// own when `threaded` (partition.rs). Results then depend on the scenario alone, not on
    /// `threaded`, and differ from those of the single event queue in the order of events of
    /// the same picosecond. Refused, with the reason, for a fabric with a captured cable or
    /// without a cable between the partitions. Call before [`Fabric::run`].
    /// Returns the lookahead the partitions synchronise on, ps: the least time between a node
    /// of one partition sending anything and a node of the other receiving it.
    pub fn set_partitioned(&mut self, threaded: bool) -> Result<u64, ScenarioError> {
        self.set_partitioned_split(threaded, None)
    }

    /// [`Fabric::set_partitioned`], with the first `switches_with_gpus` switches (in the order
    /// of [`Fabric::switch`]) simulated in the GPUs' partition and the others in their own;
    /// `None` for the split [`Fabric::default_split`] chooses. Results depend on the split as
    /// they do on the scenario: on nothing else. Refused, with the reason, when no switch would
    /// be left to the other partition, or no cable would join the two.
    pub fn set_partitioned_split(
        &mut self,
        threaded: bool,
        switches_with_gpus: Option<u32>,
    ) -> Result<u64, ScenarioError> {
        if self.core.capture.is_some() {
            return Err(ScenarioError {
                key: "capture".into(),
                reason: "a fabric run as partitions captures no cable".into(),
            });
        }
        let kept = switches_with_gpus.unwrap_or_else(|| self.default_split());
        let switches = self.core.sws.len();
        if kept as usize >= switches.max(1) {
            return Err(ScenarioError {
                key: "switches_with_gpus".into(),
                reason: format!(
                    "{kept} switches beside the GPUs leave none of the fabric's {switches} to a \
                     partition of their own"
                ),
            });
        }
        let lo = self.core.n_gpus + kept;
        match partition::lookahead(&self.core, lo) {
            Some(l) if l > 0 => {
                self.partitioned = Some((l, threaded, lo));
                Ok(l)
            }
            _ => Err(ScenarioError {
                key: "topology".into(),
                reason: "a fabric run as partitions needs cables between GPUs and switches".into(),
            }),
        }
    }

    /// How many switches a partitioned run simulates beside the GPUs by default
    /// ([`Fabric::set_partitioned`]), so that neither partition waits long for the other.
    ///
    /// In a fabric of one tier, each frame crosses one switch between two GPUs, and traffic
    /// that starts on every GPU at once moves in waves: the GPUs send, the switches forward,
    /// the GPUs receive, so that the switches' work comes in windows of its own. A quarter of
    /// the switches (to the nearest) go with the GPUs: the waves of switch work are then
    /// shared by both partitions, and the GPUs' partition, which also has the endpoints'
    /// work, is not made the busier by much. In a fabric of two tiers, each frame crosses
    /// three switches, work overlaps, and the partitions are balanced by ports: leaves go
    /// with the GPUs for as long as that brings the two partitions' ports closer, a GPU's port
    /// counting as two of a switch's (an endpoint's work beside its link's). Measured in
    /// docs/performance.md, "Which switches run beside the GPUs".
    pub fn default_split(&self) -> u32 {
        partition::default_split(&self.core)
    }

    /// The scenario.
    pub fn scenario(&self) -> &Scenario {
        &self.scen
    }

    /// Every cable and its two ends.
    pub fn cables(&self) -> &[CableInfo] {
        &self.cable_info
    }

    /// The cable with `end` at one of its ends.
    pub fn cable_of(&self, end: End) -> Option<usize> {
        self.cable_info
            .iter()
            .find(|c| c.a == end || c.b == end)
            .map(|c| c.index)
    }

    /// GPU `g`'s endpoint.
    pub fn gpu(&self, g: usize) -> Option<&Endpoint> {
        self.core.gpus.get(g)
    }

    /// GPU `g`'s endpoint, mutably: for tests and tools that change a GPU outside the
    /// workloads (write or poison its memory, issue operations of their own). Whatever is
    /// changed this way is not in the integrity reference: the next [`Fabric::run`] reports it.
    pub fn gpu_mut(&mut self, g: usize) -> Option<&mut Endpoint> {
        self.core.gpus.get_mut(g)
    }

    /// Switch `s`.
    pub fn switch(&self, s: usize) -> Option<&Switch> {
        self.core.sws.get(s)
    }

    /// Simulated time, ns.
    pub fn now_ns(&self) -> u64 {
        self.core.now / PS_PER_NS
    }

    /// Hands every frame put on cable `cable` (either direction) to `sink`, with its time and
    /// fate: for a packet capture. One cable at a time; call before [`Fabric::run`].
    pub fn capture(&mut self, cable: usize, sink: CaptureSink) -> Result<(), ScenarioError> {
        if self.partitioned.is_some() {
            return Err(ScenarioError {
                key: "capture".into(),
                reason: "a fabric run as partitions captures no cable".into(),
            });
        }
        if cable >= self.core.cables.len() {
            return Err(ScenarioError {
                key: "capture".into(),
                reason: format!(
                    "no cable {cable} (the fabric has {})",
                    self.core.cables.len()
                ),
            });
        }
        self.core.capture = Some((cable as u32, sink));
        Ok(())
    }

    fn settle(&mut self) {
        loop {
            self.core.service_marked();
            if self.core.completions.is_empty() {
                break;
            }
            while let Some((g, c)) = self.core.completions.pop_front() {
                let rec = self.ops.complete(g, &c);
                if let Some(rec) = rec {
                    self.with_wl(rec.workload, |wl, cx| {
                        wl.on_completion(cx, g, rec.token, &c);
                    });
                }
                let mut waiting = self
                    .core
                    .blocked
                    .get_mut(usize::from(g))
                    .map(std::mem::take)
                    .unwrap_or_default();
                for &w in &waiting {
                    self.with_wl(w, |wl, cx| wl.on_room(cx, g));
                }
                // Keep the list's buffer; workloads still waiting have blocked again.
                if let Some(b) = self.core.blocked.get_mut(usize::from(g)) {
                    waiting.clear();
                    waiting.append(b);
                    *b = waiting;
                }
            }
        }
    }

    fn with_wl(&mut self, w: u16, f: impl FnOnce(&mut Wl, &mut dyn workload::Host)) {
        let Some(wl) = self.wls.get_mut(usize::from(w)) else {
            return;
        };
        let was_done = wl.is_done();
        let mut cx = Cx {
            core: &mut self.core,
            ops: &mut self.ops,
            w,
        };
        f(wl, &mut cx);
        if !was_done && wl.is_done() && wl.is_finite() {
            self.finite_left = self.finite_left.saturating_sub(1);
        }
    }

    fn begin_traffic(&mut self) {
        self.started = true;
        self.all_up = self.core.all_up();
        let now = self.core.now;
        self.start = now;
        let after = |ns: u64| now.saturating_add(ns.saturating_mul(PS_PER_NS));
        for i in 0..self.wls.len() {
            // A workload the scenario does not list (a litmus test) starts at once.
            let start = self.scen.traffic.get(i).map_or(0, Workload::start_ns);
            self.core.push(after(start), Ev::WlStart(i as u16));
        }
        // An operation outstanding while an outage lasts, or up to the longest an operation
        // may take after it ends, may end in error because of it; for an outage that never
        // ends, only up to that long after it begins (then the fabric must route around it).
        let grace = self.grace_ns();
        for (on, off) in self.core.schedule_outages(&self.scen, &self.outages, now) {
            self.ops.explain_errors(on, off.saturating_add(grace));
        }
        if let Some(d) = self.scen.duration_ns {
            self.core.push(after(d), Ev::Stop);
        }
        if self.scen.metrics.sample_ns > 0 {
            self.take_sample(false);
            self.core
                .push(after(self.scen.metrics.sample_ns), Ev::Sample);
        }
        if self.finite_left == 0 && self.scen.duration_ns.is_none() {
            self.begin_stop();
        }
    }

    fn begin_stop(&mut self) {
        if self.stopping {
            return;
        }
        self.stopping = true;
        self.stop = self.core.now;
        for w in 0..self.wls.len() {
            self.with_wl(w as u16, |wl, cx| wl.stop(cx));
        }
    }

    /// The longest an operation may legitimately take, ns: `(max_retries + 2) * op_timeout +
    /// tag_quarantine`.
    fn grace_ns(&self) -> u64 {
        let e = &self.scen.endpoint;
        (u64::from(e.max_retries) + 2)
            .saturating_mul(e.op_timeout_ns)
            .saturating_add(e.tag_quarantine_ns)
    }

    fn drain_limit_ps(&self) -> u64 {
        let ns = self.scen.drain_ns.unwrap_or_else(|| self.grace_ns());
        ns.saturating_mul(PS_PER_NS)
    }

    /// Outage `k` begins (`on`) or ends on its cables. Outages nest: a cable is cut (or dark)
    /// while at least one of its outages runs.
    fn outage(&mut self, k: usize, on: bool) {
        self.core.outage(&self.scen, &self.outages, k, on);
    }

    fn take_sample(&mut self, record: bool) {
        let core = &self.core;
        let ports = self.scen.topology.ports();
        let gpu_ports = core.gpus.len() * ports;
        let now = core.now;
        // Busy time up to now: every frame's serialisation, less what the frame on the wire
        // still has to go, so that a frame counts in the intervals it actually occupies.
        let mut wire: Vec<u64> = Vec::with_capacity(gpu_ports);
        for gp in 0..gpu_ports {
            let c = core
                .out_chan
                .get(gp)
                .and_then(|&c| core.chans.get(c as usize));
            wire.push(c.map_or(0, |c| {
                let bytes =
                    c.ch.bytes_sent() + c.ch.frames_sent() * ethlink_protocol::WIRE_OVERHEAD as u64;
                let total = (bytes as f64 * 8000.0 / c.ch.rate_gbps()).round() as u64;
                total.saturating_sub(c.ch.free_at().saturating_sub(now))
            }));
        }
        if record {
            let max = self.scen.metrics.max_samples as usize;
            if self.series.t_ns.len() >= max {
                self.series.dropped += 1;
            } else {
                let dt = now.saturating_sub(self.last_sample.t) as f64;
                let util: Vec<f32> = wire
                    .iter()
                    .zip(self.last_sample.wire.iter())
                    .map(|(&b, &b0)| {
                        if dt > 0.0 {
                            (b.saturating_sub(b0) as f64 / dt) as f32
                        } else {
                            0.0
                        }
                    })
                    .collect();
                let per_gpu = util
                    .chunks(ports.max(1))
                    .map(|c| c.iter().sum::<f32>() / c.len().max(1) as f32)
                    .collect();
                self.series.interval_ns = self.scen.metrics.sample_ns;
                self.series.t_ns.push(self.last_sample.t / PS_PER_NS);
                self.series
                    .ops_completed
                    .push(self.ops.completed - self.last_sample.ops);
                self.series
                    .bytes_completed
                    .push(self.ops.bytes_ok - self.last_sample.bytes);
                self.series.gpu_utilisation.push(per_gpu);
                if self.scen.metrics.series_per_port {
                    self.series.port_utilisation.push(util);
                }
            }
        }
        self.last_sample = SampleState {
            t: now,
            ops: self.ops.completed,
            bytes: self.ops.bytes_ok,
            wire,
        };
    }

    /// A fabric of `scen` (its traffic left out) that runs litmus test `test` `iterations` times,
    /// each agent starting each iteration at a time drawn within `jitter_ns`
    /// ([`crate::run_litmus`]).
    pub(crate) fn with_litmus(
        scen: &Scenario,
        test: crate::litmus::Litmus,
        iterations: u32,
        jitter_ns: u64,
        weaken: Option<crate::litmus::Weakening>,
    ) -> Result<Fabric, ScenarioError> {
        let mut s = scen.clone();
        s.traffic.clear();
        // A scenario without traffic needs a duration to be valid; the litmus workload, finite,
        // ends the run instead.
        let duration = s.duration_ns;
        s.duration_ns = Some(duration.unwrap_or(s.time_limit_ns));
        let mut f = Fabric::new(&s)?;
        f.scen.duration_ns = duration;
        let rng = rand_pcg::Pcg64Mcg::new(u128::from(crate::check::mix64(s.seed ^ 0x11_7E57)) | 1);
        // The locations of iteration i lie from 0 up, 64 bytes each, in their GPUs' memory; the
        // agents' staging bytes from the middle of theirs up, declared local so that the data
        // check takes them as staging, not stray bytes.
        let locations = u64::from(iterations) * test.locations.len() as u64 * 64;
        let staging = u64::from(iterations)
            * (crate::litmus::MAX_AGENTS * crate::litmus::MAX_OPS) as u64
            * 64;
        let half = s.endpoint.global_bytes / 2;
        if locations > half || staging > half {
            return Err(ScenarioError {
                key: "endpoint.global_bytes".into(),
                reason: format!(
                    "{iterations} iterations need {} bytes of each GPU's memory, more than it has",
                    2 * locations.max(staging)
                ),
            });
        }
        for g in 0..usize::from(s.topology.gpus) {
            f.ops.reference.add_local(g, half, half + staging);
        }
        f.wls.push(Wl::Litmus(Box::new(workload::LitmusState::new(
            test, iterations, jitter_ns, rng, weaken, half,
        ))));
        f.finite_left = 1;
        Ok(f)
    }

    /// The histogram of the litmus test this fabric ran, and the iterations in which an
    /// operation ended with an error status (not counted in it).
    pub(crate) fn litmus_histogram(&self) -> Option<(crate::litmus::Histogram, u64)> {
        self.wls.iter().find_map(|w| match w {
            Wl::Litmus(t) => Some((t.histogram.clone(), t.failed_runs)),
            _ => None,
        })
    }

    /// Runs the scenario to its end and reports. `progress`, if given, is called now and then
    /// with the simulated time and the planned end (0 when the end is not known in advance),
    /// both ns. A fabric runs once: a second call simulates nothing more, checks every GPU's
    /// memory against the reference again and reports.
    pub fn run(&mut self, mut progress: Option<&mut dyn FnMut(u64, u64)>) -> Report {
        let wall = WallInstant::now();
        if !self.ran {
            self.ran = true;
            self.run_events(&mut progress);
        }
        // Writes still outstanding (the time limit cut them off, or they are lost): their
        // bytes are of unknown fate, neither checked nor stray.
        for (gpu, addr, len) in self.ops.writes_outstanding() {
            self.ops.reference.in_flight(usize::from(gpu), addr, len);
        }
        let check = WallInstant::now();
        let mems: Vec<&ethlink_endpoint::Memory> =
            self.core.gpus.iter().map(Endpoint::memory).collect();
        self.integrity = self.ops.reference.verify(mems.into_iter());
        let check_seconds = check.elapsed().as_secs_f64();
        let mut report = self.report();
        let seconds = wall.elapsed().as_secs_f64();
        let per_s = |x: u64| {
            if seconds > 0.0 {
                x as f64 / seconds
            } else {
                0.0
            }
        };
        report.wall = Wall {
            seconds,
            check_seconds,
            frame_hops_per_s: per_s(report.sim.frame_hops),
            data_frames_per_s: per_s(report.sim.data_frames_delivered),
            events_per_s: per_s(report.sim.events),
            sim_over_wall: if seconds > 0.0 {
                report.end_ns as f64 * 1e-9 / seconds
            } else {
                0.0
            },
            peak_rss_bytes: peak_rss_bytes(),
            memory_estimate_bytes: if self.partitioned.is_some() {
                self.scen.memory_estimate().partitioned().bytes
            } else {
                self.scen.memory_estimate().bytes
            },
            partitions: self.part_wall.take(),
        };
        if let Some(p) = progress.as_mut() {
            p(report.end_ns, report.end_ns);
        }
        report
    }

    fn planned_end_ns(&self) -> u64 {
        match self.scen.duration_ns {
            Some(d) if self.started => self.start / PS_PER_NS + d,
            _ => 0,
        }
    }

    fn run_events(&mut self, progress: &mut Option<&mut dyn FnMut(u64, u64)>) {
        if let Some((lookahead, threaded, lo)) = self.partitioned {
            self.run_partitioned(progress, lookahead, threaded, lo);
        } else {
            self.run_queue(progress);
        }
        self.ended = true;
        if self.scen.metrics.sample_ns > 0 && self.core.now > self.last_sample.t {
            self.take_sample(true);
        }
    }

    /// Runs every event from one queue, in order of time, then of queueing.
    fn run_queue(&mut self, progress: &mut Option<&mut dyn FnMut(u64, u64)>) {
        // Bring-up: every node polled at time 0, then checks until every link is UP.
        for n in 0..self.core.armed.len() as u32 {
            self.core.mark(n);
        }
        self.core.push(BRING_UP_CHECK_NS * PS_PER_NS, Ev::BringUp);
        self.settle();
        while let Some((t, next)) = self.core.heap.next() {
            let ev = match next {
                Next::Event(ev) => ev,
                Next::Deadline(n) => Ev::Timer(n),
            };
            if self.step(t, ev) {
                break;
            }
            if self.core.tally.events & 0xFFFF == 0
                && let Some(p) = progress.as_mut()
            {
                p(self.core.now / PS_PER_NS, self.planned_end_ns());
            }
        }
    }

    /// Runs event `ev`, fired at `t`, and what follows from it; true when the run ends here.
    fn step(&mut self, t: u64, ev: Ev) -> bool {
        self.core.now = t;
        self.core.tally.events += 1;
        if !self.core.node_event(t, ev) {
            match ev {
                Ev::OutageOn(k) => self.outage(k as usize, true),
                Ev::OutageOff(k) => self.outage(k as usize, false),
                Ev::Wake(w, token) => {
                    self.with_wl(w, |wl, cx| wl.on_wake(cx, token));
                }
                Ev::WlStart(w) => {
                    if !self.stopping {
                        self.with_wl(w, |wl, cx| wl.start(cx));
                    }
                }
                Ev::BringUp => {
                    if !self.started {
                        if self.core.all_up() || self.core.now >= BRING_UP_LIMIT_NS * PS_PER_NS {
                            self.begin_traffic();
                        } else {
                            let t = self.core.now + BRING_UP_CHECK_NS * PS_PER_NS;
                            self.core.push(t, Ev::BringUp);
                        }
                    }
                }
                Ev::Sample => {
                    if !self.ended {
                        self.take_sample(true);
                        let t = self
                            .core
                            .now
                            .saturating_add(self.scen.metrics.sample_ns.saturating_mul(PS_PER_NS));
                        self.core.push(t, Ev::Sample);
                    }
                }
                Ev::Stop => self.begin_stop(),
                Ev::Arrive(_) | Ev::Header(_) | Ev::WireFree(_) | Ev::Timer(_) => {}
            }
        }
        self.settle();
        if self.started && !self.stopping && self.finite_left == 0 && self.scen.stop_when_done {
            let any_finite = self.wls.iter().any(Wl::is_finite);
            if any_finite {
                self.begin_stop();
                self.settle();
            }
        }
        if self.stopping
            && (self.ops.outstanding == 0
                || self.core.now >= self.stop.saturating_add(self.drain_limit_ps()))
        {
            return true;
        }
        if self.core.now >= self.scen.time_limit_ns.saturating_mul(PS_PER_NS) {
            self.time_limit_hit = true;
            return true;
        }
        false
    }

    fn report(&mut self) -> Report {
        let scen = &self.scen;
        let t = &scen.topology;
        let core = &self.core;
        let ports = t.ports();
        let stop = if self.stopping { self.stop } else { core.now };
        let window_ps = stop.saturating_sub(self.start).max(1);
        let window_ns = window_ps / PS_PER_NS;
        let gbps = |bytes: u64| bytes as f64 * 8.0 * PS_PER_NS as f64 / window_ps as f64;
        let rate = scen.link.rate_gbps;
        let util = |frames: u64, bytes: u64| {
            let b = bytes + frames * ethlink_protocol::WIRE_OVERHEAD as u64;
            b as f64 * 8.0 * PS_PER_NS as f64 / (window_ps as f64 * rate)
        };
        // Per port loads (counters over the whole run; the window is the traffic time).
        let mut port_loads = Vec::new();
        let mut stack_loads = Vec::new();
        let mut gpu_loads = Vec::new();
        for (g, ep) in core.gpus.iter().enumerate() {
            let c = ep.counters();
            let mut gsum = Load {
                gpu: g as u16,
                ..Load::default()
            };
            for s in 0..usize::from(t.stacks) {
                let mut ssum = Load {
                    gpu: g as u16,
                    stack: Some(s as u8),
                    ..Load::default()
                };
                for q in 0..usize::from(t.ports_per_stack) {
                    let i = s * usize::from(t.ports_per_stack) + q;
                    let pc = c.ports.get(i).copied().unwrap_or_default();
                    let gp = core.node_base.get(g).copied().unwrap_or(0) as usize + i;
                    let ch = core
                        .out_chan
                        .get(gp)
                        .and_then(|&x| core.chans.get(x as usize));
                    let (wf, wb) = ch.map_or((0, 0), |c| (c.ch.frames_sent(), c.ch.bytes_sent()));
                    let u = util(wf, wb);
                    let l = Load {
                        gpu: g as u16,
                        stack: Some(s as u8),
                        port: Some(i as u16),
                        tx_bytes: pc.bytes_sent,
                        rx_bytes: pc.bytes_received,
                        tx_frames: pc.frames_sent,
                        tx_gbps: gbps(pc.bytes_sent),
                        rx_gbps: gbps(pc.bytes_received),
                        wire_utilisation: u,
                    };
                    for sum in [&mut ssum, &mut gsum] {
                        sum.tx_bytes += l.tx_bytes;
                        sum.rx_bytes += l.rx_bytes;
                        sum.tx_frames += l.tx_frames;
                        sum.wire_utilisation += u;
                    }
                    port_loads.push(l);
                }
                ssum.tx_gbps = gbps(ssum.tx_bytes);
                ssum.rx_gbps = gbps(ssum.rx_bytes);
                ssum.wire_utilisation /= f64::from(t.ports_per_stack);
                stack_loads.push(ssum);
            }
            gsum.tx_gbps = gbps(gsum.tx_bytes);
            gsum.rx_gbps = gbps(gsum.rx_bytes);
            gsum.wire_utilisation /= ports as f64;
            gpu_loads.push(gsum);
        }
        let imbalance = |v: &[u64]| {
            let sum: u64 = v.iter().sum();
            if sum == 0 || v.is_empty() {
                return 0.0;
            }
            let mean = sum as f64 / v.len() as f64;
            *v.iter().max().unwrap_or(&0) as f64 / mean
        };
        let port_bytes: Vec<u64> = port_loads.iter().map(|l| l.tx_bytes).collect();
        let mut sw_port_bytes = Vec::new();
        let mut st = SwitchTotals {
            input_buffer_bytes: u64::from(scen.rx_credits()) * u64::from(scen.link.credit_size),
            ..SwitchTotals::default()
        };
        let mut links = LinkTotals::default();
        let mut add_link = |lc: &ethlink_link::Counters| {
            links.ends += 1;
            links.data_frames += lc.tx_frames_total();
            links.frames_replayed += lc.frames_replayed;
            links.replays_by_nack += lc.replays_by_nack;
            links.replay_timeouts += lc.replay_timeouts;
            links.nacks += lc.nacks_sent;
            links.acks += lc.acks_sent;
            links.cf += lc.cf_sent;
            links.cc += lc.cc_sent;
            links.flushes += lc.flushes;
            links.flushes_aged += lc.flushes_aged;
            links.frames_unknown_fate += lc.frames_unknown_fate;
            links.fcs_errors += lc.rx_fcs_errors;
            links.tx_stomped += lc.tx_stomped;
            links.rx_stomped += lc.rx_stomped;
            links.duplicates += lc.duplicates;
            links.credit_stalls += lc.credit_stalls_total();
            links.credit_stall_ns += lc.credit_stall_ns.iter().sum::<u64>();
            links.credit_overruns += lc.credit_overruns.iter().sum::<u64>();
            links.link_ups += lc.link_ups;
            links.reinits += lc.reinits;
            links.replay_bytes_max = links.replay_bytes_max.max(lc.replay_bytes_max);
            links.replay_age_max_ns = links.replay_age_max_ns.max(lc.replay_age_max_ns);
        };
        let mut port_stalls = Vec::new();
        let mut stalls_of = |end: String, lc: &ethlink_link::Counters| {
            let stall_ns = lc.credit_stall_ns.iter().sum::<u64>();
            if stall_ns > 0 {
                port_stalls.push(PortStall {
                    end,
                    stalls: lc.credit_stalls_total(),
                    stall_ns,
                });
            }
        };
        // A receive buffer is a fixed memory: every link checks, at every frame it accepts, that
        // what its buffer holds stays within its grant (LINK-5-2, LINK-2-18).
        // And a frame lives in a replay buffer at most `llr_max_age` from its first
        // transmission (LINK-3-18).
        let max_age = scen.link.llr_max_age_ns;
        let mut overruns: Vec<String> = Vec::new();
        let mut overrun_of = |name: &dyn Fn() -> String, l: &ethlink_link::Link| {
            let age = l.counters().replay_age_max_ns;
            if age > max_age {
                overruns.push(format!(
                    "{}: a frame waited {age} ns in the replay buffer for its ACK, beyond \
                     llr_max_age ({max_age} ns, LINK-3-18)",
                    name()
                ));
            }
            if let Some(o) = l.buffer_overrun() {
                overruns.push(format!(
                    "{}: the receive buffer of VC {} held {} credits of a {}-credit grant at {} ns",
                    name(),
                    o.vc.index(),
                    o.held,
                    o.granted,
                    o.at.as_nanos()
                ));
            }
        };
        for (g, ep) in core.gpus.iter().enumerate() {
            for i in 0..ep.port_count() {
                if let Some(l) = ep.link(i) {
                    add_link(l.counters());
                    stalls_of(format!("gpu{g}.port{i}"), l.counters());
                    overrun_of(&|| format!("gpu{g}.port{i}"), l);
                }
            }
        }
        for (k, sw) in core.sws.iter().enumerate() {
            let c = sw.counters();
            let mut r = SwitchReport {
                switch: k as u32,
                forwarded: c.forwarded(),
                held_max_bytes: c.held_max_bytes(),
                ..SwitchReport::default()
            };
            for pc in &c.ports {
                r.malformed += pc.discard_malformed.iter().sum::<u64>();
                r.unroutable += pc.discard_unroutable.iter().sum::<u64>();
                r.lost_port_down += pc.discard_port_down.iter().sum::<u64>()
                    + pc.discard_egress_refused.iter().sum::<u64>();
                r.discard_aged += pc.discard_aged.iter().sum::<u64>();
                r.cut_through += pc.tx_cut.iter().sum::<u64>();
                r.stomped += pc.tx_stomped.iter().sum::<u64>();
                let b: u64 = pc.tx_bytes.iter().sum();
                if b > 0 {
                    sw_port_bytes.push(b);
                }
            }
            for p in 0..usize::from(sw.config().ports) {
                if let Some(l) = sw.link(p) {
                    add_link(l.counters());
                    stalls_of(format!("switch{k}.port{p}"), l.counters());
                    overrun_of(&|| format!("switch{k}.port{p}"), l);
                }
            }
            st.forwarded += r.forwarded;
            st.held_max_bytes = st.held_max_bytes.max(r.held_max_bytes);
            st.malformed += r.malformed;
            st.unroutable += r.unroutable;
            st.lost_port_down += r.lost_port_down;
            st.buffer_drops += r.buffer_drops;
            st.discard_aged += r.discard_aged;
            st.cut_through += r.cut_through;
            st.stomped += r.stomped;
            st.switches.push(r);
        }
        links.port_stalls = port_stalls;
        let mut et = EndpointTotals::default();
        let mut delivered = 0u64;
        for ep in &core.gpus {
            let c = ep.counters();
            et.retries += c.retries;
            et.moved += c.moved;
            et.responses_discarded += c.responses_discarded;
            et.misdelivered += c.misdelivered;
            et.malformed +=
                c.malformed_frames + c.malformed_txns + c.unknown_responses + c.bad_responses;
            et.requests_served += c.requests_served;
            et.packed_frames += c.packed_frames;
            et.packed_txns += c.packed_txns;
            et.reassembly_refused += c.reassembly_refused;
            et.reassembly_expired += c.reassembly_expired;
            et.duplicate_segments += c.duplicate_segments;
            et.responses_expired += c.responses_expired;
            et.responses_lost += c.responses_lost;
            et.backlog_stalls += c.backlog_stalls;
            et.reorder_bytes_max = et.reorder_bytes_max.max(c.reorder_bytes_max);
            et.reassembly_max = et.reassembly_max.max(c.reassembly_max);
            delivered += c.ports.iter().map(|p| p.frames_received).sum::<u64>();
        }
        let mut sim = SimTotals {
            events: core.tally.events,
            frame_hops: core.tally.frame_hops,
            data_frame_hops: core.tally.data_hops,
            data_frames_delivered: delivered,
            idle_wakeups: core.tally.idle_wakeups,
            ..SimTotals::default()
        };
        for c in &core.chans {
            sim.wire_bytes += c.ch.bytes_sent();
            let inj = c.ch.injected();
            sim.frames_damaged += inj.damaged;
            sim.frames_dropped += inj.dropped;
            sim.frames_duplicated += inj.duplicated;
            sim.frames_cut += inj.outage;
        }
        let gpu_line = rate * ports as f64;
        let mut collectives: Vec<CollectiveRow> = Vec::new();
        for wl in &self.wls {
            collectives.extend(wl.rows(gpu_line));
        }
        let segment = u64::from(scen.endpoint.segment);
        let overhead = Overhead {
            segment_bytes: segment,
            segment_overhead_bytes: SEGMENT_OVERHEAD,
            rdma_payload_bound: segment as f64 / (segment + SEGMENT_OVERHEAD) as f64,
            control_share: share(
                core.tally.wire_ctl,
                core.tally.wire_ctl + core.tally.wire_data,
            ),
            data_payload_share: share(
                core.tally.data_payload,
                core.tally.wire_ctl + core.tally.wire_data,
            ),
        };
        let mut ops = self.ops.report();
        if self.time_limit_hit {
            // Cut off, not lost: the run stopped before they could complete.
            ops.cut_off = ops.lost;
            ops.lost = 0;
        }
        let integrity = self.integrity.clone();
        let (data_intact, failures) = verdict(
            scen,
            self.all_up,
            self.time_limit_hit,
            &ops,
            &integrity,
            &st,
            overruns,
        );
        let pass = failures.is_empty();
        Report {
            seed: scen.seed,
            gpus: core.gpus.len(),
            switches: core.sws.len(),
            cables: core.cables.len(),
            start_ns: self.start / PS_PER_NS,
            stop_ns: stop / PS_PER_NS,
            end_ns: core.now / PS_PER_NS,
            all_links_up: self.all_up,
            time_limit_hit: self.time_limit_hit,
            pass,
            data_intact,
            failures,
            ops,
            integrity,
            throughput: Throughput {
                window_ns,
                gpu_line_rate_gbps: gpu_line,
                gpus: gpu_loads,
                stacks: stack_loads,
                ports: port_loads,
                port_imbalance: imbalance(&port_bytes),
                switch_port_imbalance: imbalance(&sw_port_bytes),
            },
            collectives,
            overhead,
            links,
            endpoints: et,
            switch: st,
            sim,
            series: self.series.clone(),
            wall: Wall::default(),
        }
    }
}

/// Whether the data is intact, and every reason the run fails (none: it passes).
fn verdict(
    scen: &Scenario,
    all_up: bool,
    time_limit_hit: bool,
    ops: &Operations,
    integrity: &crate::check::Integrity,
    st: &SwitchTotals,
    overruns: Vec<String>,
) -> (bool, Vec<String>) {
    let mut v = Vec::new();
    for (n, what) in [
        (ops.lost, "operations lost"),
        (ops.duplicated, "operations duplicated"),
        (ops.unexpected, "unexpected completions"),
        (integrity.bytes_mismatched, "bytes corrupted"),
        (integrity.bytes_stray, "stray bytes"),
        (integrity.loads_mismatched, "loads returned wrong data"),
        (st.buffer_drops, "switch buffer drops"),
    ] {
        if n > 0 {
            v.push(format!("{n} {what}"));
        }
    }
    let data_intact = v.is_empty();
    v.extend(overruns);
    if !all_up {
        v.push("some links never came up".to_owned());
    }
    if time_limit_hit {
        v.push(format!(
            "the time limit ({} ns) cut the run short with {} operations outstanding",
            scen.time_limit_ns, ops.cut_off
        ));
    }
    match scen.expect.errors {
        ErrorsExpected::Allowed => {}
        ErrorsExpected::None if ops.completed_error > 0 => v.push(format!(
            "{} operations ended with an error status (expect.errors = \"none\")",
            ops.completed_error
        )),
        ErrorsExpected::None => {}
        ErrorsExpected::Explained if ops.errors_unexplained > 0 => v.push(format!(
            "{} operations ended with an error status that no outage explains",
            ops.errors_unexplained
        )),
        ErrorsExpected::Explained => {}
    }
    (data_intact, v)
}

fn share(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// A leaf's forwarding entry for remote GPU `g`: its up-ports (`gpl + s` for spine `s`) and
/// their group sizes (switch.md §2.3). By destination: spine `g mod spines` alone, then the
/// others in order; by path: every up-port in one group.
fn leaf_entry(how: LeafUplinks, g: usize, gpl: usize, spines: usize) -> (Vec<u16>, Vec<u16>) {
    let up = |s: usize| (gpl + s) as u16;
    match how {
        LeafUplinks::ByPath => ((0..spines).map(up).collect(), Vec::new()),
        LeafUplinks::ByDestination => {
            let first = g % spines.max(1);
            let list = std::iter::once(first)
                .chain((0..spines).filter(|&s| s != first))
                .map(up)
                .collect();
            let sizes = [1, spines.saturating_sub(1) as u16]
                .into_iter()
                .filter(|&n| n > 0)
                .collect();
            (list, sizes)
        }
    }
}

/// The cables an outage of `target` takes out.
fn outage_cables(
    scen: &Scenario,
    core: &Core,
    links: &[[(u32, u16); 2]],
    target: OutageTarget,
) -> Vec<u32> {
    let gn = core.n_gpus;
    let t = &scen.topology;
    let hit = |f: &dyn Fn((u32, u16)) -> bool| -> Vec<u32> {
        links
            .iter()
            .enumerate()
            .filter(|(_, e)| f(e[0]) || f(e[1]))
            .map(|(i, _)| i as u32)
            .collect()
    };
    match target {
        OutageTarget::Link { gpu, port } => hit(&|(n, p)| n == u32::from(gpu) && p == port),
        OutageTarget::SwitchPort { switch, port } => hit(&|(n, p)| n == gn + switch && p == port),
        OutageTarget::Switch { switch } => hit(&|(n, _)| n == gn + switch),
        OutageTarget::Plane { plane } => {
            let per_plane = match t.kind {
                TopologyKind::TwoTier => u32::from(t.leaves) + u32::from(t.spines),
                _ => 1,
            };
            let lo = gn + u32::from(plane) * per_plane;
            let hi = lo + per_plane;
            hit(&|(n, _)| (lo..hi).contains(&n))
        }
    }
}

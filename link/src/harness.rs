//! Two link ends joined by a simulated wire, with a seeded fault injector.
//!
//! [`Pair`] is a small discrete-event simulation of one full-duplex link: each direction has a
//! line rate, a propagation delay and the per-frame wire overhead (preamble, SFD, inter-frame
//! gap); a frame occupies its wire for its serialisation time and arrives, whole, one
//! propagation delay after its last bit left. End A offers a stream of DATA frames (and end B
//! too when [`Traffic::bidirectional`] is set); the receiving upper layer drains its buffer at a
//! chosen fraction of the line rate. Faults, drawn from a seeded PCG per direction so that one
//! seed always gives one run:
//!
//! - `loss`: a DATA frame is damaged in transit and fails its FCS at the receiver (the way a
//!   point-to-point Ethernet link loses a frame), optionally in bursts of `burst` frames;
//! - `drop`: a DATA frame vanishes without trace: the receiver learns of it only from the gap
//!   in sequence numbers;
//! - `ber`: independent bit errors on every frame of both directions;
//! - `duplicate`: a frame arrives twice;
//! - `control_loss`: an ACK, NACK, CF, CC, INIT or INIT_ECHO vanishes;
//! - stomp ([`Injector::with_stomp`], [`Verdict::Stomp`]): a new DATA frame is ended with a
//!   stomped FCS (WIRE-2.5-4), as a cut-through sender ends a frame it found bad; the sending end
//!   takes it back with [`Link::stomp_last`] (LINK-3-12) and the payload is dropped;
//! - outages: the physical link goes down for a time, frames in flight are lost;
//! - a [`Filter`] for scripted faults on chosen frames.
//!
//! Time inside the harness is kept in picoseconds so that 400 Gb/s serialisation does not
//! round; the link ends see whole nanoseconds.
//!
//! The wire is built from two parts that other harnesses reuse (several independent wires, each
//! with its own seed): an [`Injector`] makes the seeded fault decisions of one direction, and a
//! [`Channel`] is one direction of a wire (serialisation, propagation, the frames in flight)
//! whose frames go through its injector. A [`Pair`] has one channel per direction.

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use ethlink_protocol::fcs::FcsStatus;
use ethlink_protocol::{
    DataRepr, FrameKind, GpuId, MemTarget, PathId, Space, TxnRepr, Txns, Vc, WIRE_OVERHEAD,
};
use rand_core::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::{Config, Event, Instant, Link, LostReason, Release, SharedFrame, SubmitError};

/// Buffers a [`Channel`] keeps for reuse through [`Channel::recycle`].
const POOL_MAX: usize = 256;

/// Picoseconds per nanosecond.
const PS_PER_NS: u64 = 1000;
/// Bytes of a harness DATA frame other than the RDMA data: Ethernet 14, link 6, network 8,
/// RDMA_WRITE header 28, FCS 4.
pub const FRAME_OVERHEAD: usize = 60;
/// Smallest harness DATA frame (one byte of data, padded to 64).
pub const MIN_FRAME: usize = 64;

/// Faults injected on the wire. Probabilities are per frame except `ber`, per bit.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Faults {
    /// Probability that a DATA frame arrives damaged (bad FCS).
    pub loss: f64,
    /// Probability that a DATA frame vanishes.
    pub drop: f64,
    /// A `loss` or `drop` event takes this many consecutive DATA frames (0 and 1 mean one).
    pub burst: u32,
    /// Bit error rate on every frame, both directions.
    pub ber: f64,
    /// Probability that a frame is delivered twice.
    pub duplicate: f64,
    /// Probability that a control frame vanishes.
    pub control_loss: f64,
}

/// The wire of both directions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Wire {
    /// Line rate, Gb/s.
    pub rate_gbps: f64,
    /// One-way propagation delay, ns.
    pub propagation_ns: f64,
    /// Faults.
    pub faults: Faults,
}

impl Wire {
    /// Propagation delay of `meters` of cable at 5 ns/m.
    pub fn cable_ns(meters: f64) -> f64 {
        meters * 5.0
    }

    /// One direction of this wire: its rate and propagation delay, and an [`Injector`] of its
    /// faults seeded with `seed`.
    pub fn channel(&self, seed: u64) -> Channel {
        Channel::new(
            self.rate_gbps,
            self.propagation_ns,
            Injector::new(self.faults, seed),
        )
    }
}

impl Default for Wire {
    fn default() -> Self {
        Wire {
            rate_gbps: 400.0,
            propagation_ns: Wire::cable_ns(5.0),
            faults: Faults::default(),
        }
    }
}

/// The offered traffic.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Traffic {
    /// DATA frames end A offers (and B, when bidirectional).
    pub frames: u64,
    /// Length of each DATA frame on the wire, destination MAC through FCS, 64..=9216.
    pub frame_size: usize,
    /// Frames go round-robin over VCs `0..vcs`.
    pub vcs: u8,
    /// End B offers the same stream to A.
    pub bidirectional: bool,
    /// Most frames the source keeps queued in the link per VC (at least 1): a source that
    /// keeps the link busy without queueing far ahead, so that latency is the link's own.
    pub window: u32,
}

impl Default for Traffic {
    fn default() -> Self {
        Traffic {
            frames: 10_000,
            frame_size: 4096,
            vcs: 1,
            bidirectional: false,
            window: 4,
        }
    }
}

/// What a [`Filter`] does with one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Leave it to the random faults.
    Pass,
    /// Deliver it untouched, whatever the random faults say.
    Deliver,
    /// It vanishes.
    Drop,
    /// It arrives with a bad FCS.
    Corrupt,
    /// It arrives twice.
    Duplicate,
    /// A new DATA frame is stomped: it arrives with the stomped FCS and its sender takes it back
    /// (LINK-3-12). For any other frame this is [`Verdict::Pass`].
    Stomp,
}

/// A frame about to go on the wire, as a [`Filter`] sees it.
#[derive(Debug, Clone, Copy)]
pub struct FrameInfo<'a> {
    /// 0 for A to B, 1 for B to A.
    pub dir: usize,
    /// Time it starts, ns.
    pub at_ns: u64,
    /// The frame, FCS included.
    pub bytes: &'a [u8],
    /// Its kind.
    pub kind: FrameKind,
    /// For DATA: VC, sequence number, retransmission.
    pub data: Option<(Vc, ethlink_protocol::Seq, bool)>,
}

/// Scripted faults: called for every frame before the random faults.
pub type Filter = Box<dyn FnMut(&FrameInfo<'_>) -> Verdict>;

/// A whole experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// End A.
    pub a: Config,
    /// End B.
    pub b: Config,
    /// The wire.
    pub wire: Wire,
    /// The traffic.
    pub traffic: Traffic,
    /// Rate at which each receiver drains its buffer, as a fraction of the line rate (0..=1; 0
    /// never drains).
    pub drain: f64,
    /// Physical outages: (start, duration) in ns.
    pub outages: Vec<(u64, u64)>,
    /// Seed of the fault injector.
    pub seed: u64,
    /// Simulated time after which the run stops, ns.
    pub time_limit_ns: u64,
}

impl Default for Scenario {
    fn default() -> Self {
        let a = Config::default();
        let b = Config {
            mac: ethlink_protocol::MacAddr([0x02, 0, 0, 0, 0, 2]),
            nonce_seed: 2,
            ..Config::default()
        };
        Scenario {
            a,
            b,
            wire: Wire::default(),
            traffic: Traffic::default(),
            drain: 1.0,
            outages: Vec::new(),
            seed: 1,
            time_limit_ns: 1_000_000_000,
        }
    }
}

/// A scenario that cannot run.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioError {
    /// The parameter.
    pub field: &'static str,
    /// Why.
    pub reason: alloc::string::String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

impl core::error::Error for ScenarioError {}

fn bad(field: &'static str, reason: impl Into<alloc::string::String>) -> ScenarioError {
    ScenarioError {
        field,
        reason: reason.into(),
    }
}

fn probability(field: &'static str, p: f64) -> Result<(), ScenarioError> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(bad(
            field,
            alloc::format!("{p} is not a probability in 0..=1"),
        ))
    }
}

impl Scenario {
    /// Checks every parameter; the error names the first one wrong.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        self.a
            .validate()
            .map_err(|e| bad("a", alloc::format!("{e}")))?;
        self.b
            .validate()
            .map_err(|e| bad("b", alloc::format!("{e}")))?;
        let w = &self.wire;
        if !(w.rate_gbps.is_finite() && w.rate_gbps >= 0.001 && w.rate_gbps <= 100_000.0) {
            return Err(bad("rate_gbps", "must be 0.001..=100000 Gb/s"));
        }
        if !(w.propagation_ns.is_finite() && (0.0..=1e9).contains(&w.propagation_ns)) {
            return Err(bad("propagation_ns", "must be 0..=1e9 ns"));
        }
        let f = &w.faults;
        probability("loss", f.loss)?;
        probability("drop", f.drop)?;
        probability("ber", f.ber)?;
        probability("duplicate", f.duplicate)?;
        probability("control_loss", f.control_loss)?;
        if f.loss + f.drop > 1.0 {
            return Err(bad("loss", "loss + drop must not exceed 1"));
        }
        if f.burst > 1_000_000 {
            return Err(bad("burst", "must be at most 1000000 frames"));
        }
        let t = &self.traffic;
        let mfs = usize::from(self.a.mfs.min(self.b.mfs));
        if !(MIN_FRAME..=mfs).contains(&t.frame_size) {
            return Err(bad(
                "frame_size",
                alloc::format!("{} is outside 64..={mfs} (the smaller MFS)", t.frame_size),
            ));
        }
        if t.window == 0 {
            return Err(bad("window", "must be at least 1 frame"));
        }
        if t.frames > 100_000_000 {
            return Err(bad("frames", "must be at most 100000000"));
        }
        let vcs = self.a.vcs.min(self.b.vcs);
        if t.vcs == 0 || t.vcs > vcs {
            return Err(bad(
                "vcs",
                alloc::format!("traffic VCs must be 1..={vcs} (VCs configured)"),
            ));
        }
        if !(self.drain.is_finite() && (0.0..=1.0).contains(&self.drain)) {
            return Err(bad("drain", "must be a fraction of the line rate in 0..=1"));
        }
        let mut end_of_last = 0u64;
        for (i, (start, dur)) in self.outages.iter().enumerate() {
            let Some(end) = start.checked_add(*dur) else {
                return Err(bad("outage", "start + duration overflows"));
            };
            if *dur == 0 {
                return Err(bad("outage", "a duration must be greater than 0"));
            }
            if i > 0 && *start < end_of_last {
                return Err(bad(
                    "outage",
                    "outages must be in time order and must not overlap",
                ));
            }
            end_of_last = end;
        }
        Ok(())
    }
}

/// What a run measured.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Report {
    /// DATA frames offered (both directions).
    pub offered: u64,
    /// Distinct frames delivered.
    pub delivered: u64,
    /// Every VC delivered its frames in submission order.
    pub in_order: bool,
    /// Frames delivered more than once (extra copies).
    pub duplicates: u64,
    /// Offered frames never delivered.
    pub lost: u64,
    /// Frames the link reported of unknown fate (FLUSH or link down).
    pub unknown_fate: u64,
    /// Frames stomped on the wire and taken back by their sender (LINK-3-12): never delivered.
    pub stomped: u64,
    /// Delivered frames whose bytes differ from what was sent.
    pub corrupted: u64,
    /// Payload bytes delivered (network header and transactions).
    pub delivered_payload_bytes: u64,
    /// Time from the first DATA frame sent to the last delivered, ns.
    pub data_time_ns: u64,
    /// Simulated time at the end of the run, ns.
    pub end_ns: u64,
    /// True when the time limit stopped the run before traffic completed.
    pub timed_out: bool,
    /// Latencies from submission to delivery, ns: mean, p50, p99, max.
    pub latency_ns: [f64; 4],
    /// Goodput, Gb/s: delivered payload bits over `data_time_ns`.
    pub goodput_gbps: f64,
    /// Counters of end A and end B.
    pub counters: [crate::Counters; 2],
    /// Times a bound was broken: a replay buffer beyond its frames or bytes, a receiver buffer
    /// beyond its grant. Must be 0.
    pub bound_violations: u64,
    /// Frames put on each wire (A to B, B to A).
    pub wire_frames: [u64; 2],
    /// Bytes put on each wire, wire overhead excluded.
    pub wire_bytes: [u64; 2],
    /// Frames the injector damaged, dropped, duplicated, lost in an outage (both wires).
    pub injected: [u64; 4],
    /// Largest receive-buffer occupancy seen at either end, bytes (credits x credit size).
    pub max_rx_buffer_bytes: u64,
    /// Receive buffer that end advertises, bytes.
    pub rx_buffer_capacity_bytes: u64,
    /// Largest replay buffer seen at either end, bytes.
    pub max_replay_bytes: u64,
}

// ----- one direction of a wire ------------------------------------------------------------------

/// What happens to one frame on its way: the outcome of [`Injector::fate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Fate {
    /// It arrives with one bit flipped ([`Injector::flip_bit`]), so its FCS fails.
    pub corrupt: bool,
    /// It never arrives. A vanishing frame is neither corrupt nor duplicated.
    pub vanish: bool,
    /// It arrives twice, both copies alike (both damaged when `corrupt`).
    pub duplicate: bool,
    /// It arrives once, with the stomped FCS (WIRE-2.5-4); never with another fault.
    pub stomp: bool,
}

/// Counts of the faults an [`Injector`] or a [`Channel`] applied, in frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Injected {
    /// Frames that arrived damaged (bad FCS).
    pub damaged: u64,
    /// Frames that vanished.
    pub dropped: u64,
    /// Frames that arrived twice (counted once each).
    pub duplicated: u64,
    /// Frames stomped (not part of [`Injected::to_array`]).
    pub stomped: u64,
    /// Frames lost in flight when the wire was cut ([`Channel::clear`]); always 0 for an
    /// [`Injector`].
    pub outage: u64,
}

impl Injected {
    /// The four counts in the order of [`Report::injected`]: damaged, dropped, duplicated,
    /// outage.
    pub fn to_array(self) -> [u64; 4] {
        [self.damaged, self.dropped, self.duplicated, self.outage]
    }
}

/// The seeded fault decisions of one direction of a wire: the [`Faults`], a PCG generator
/// (`Pcg64Mcg`) and the state of a running burst. One seed and one sequence of calls always give
/// the same decisions, on every platform.
#[derive(Debug, Clone)]
pub struct Injector {
    faults: Faults,
    stomp: f64,
    rng: Pcg64Mcg,
    burst_left: u32,
    injected: Injected,
}

impl Injector {
    /// An injector of `faults` whose generator is seeded with `seed` (`Pcg64Mcg::seed_from_u64`).
    pub fn new(faults: Faults, seed: u64) -> Self {
        Injector {
            faults,
            stomp: 0.0,
            rng: Pcg64Mcg::seed_from_u64(seed),
            burst_left: 0,
            injected: Injected::default(),
        }
    }

    /// The faults it injects.
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    /// The same injector that also stomps each new DATA frame with probability `p` (clamped to
    /// 0..=1). With `p` above 0, [`Injector::fate`] makes one more draw for every DATA frame
    /// given [`Verdict::Pass`], before every other draw; a stomped frame gets no other fault.
    pub fn with_stomp(mut self, p: f64) -> Self {
        self.stomp = if p.is_finite() {
            p.clamp(0.0, 1.0)
        } else {
            0.0
        };
        self
    }

    /// Decides the fate of one frame of `kind`, `len` bytes long (FCS included), and counts the
    /// faults it applies.
    ///
    /// A `verdict` other than [`Verdict::Pass`] decides alone and draws nothing. With
    /// [`Verdict::Pass`] the generator is drawn, in this order, each draw a uniform number in
    /// [0, 1): for a DATA frame, unless a burst is running, one draw against `loss`, then
    /// `loss + drop` (a hit starts a burst of `burst` frames; while a burst runs, each following
    /// DATA frame arrives damaged without a draw); for any other frame one draw against
    /// `control_loss` if it is not 0; then, if `ber` is not 0, one draw against the chance
    /// that at least one of the frame's bits flips; then, if `duplicate` is not 0, one draw
    /// against it. Every draw is made even when an earlier one made the frame vanish.
    pub fn fate(&mut self, kind: FrameKind, len: usize, verdict: Verdict) -> Fate {
        let faults = self.faults;
        let mut fate = Fate::default();
        match verdict {
            Verdict::Deliver => {}
            Verdict::Drop => fate.vanish = true,
            Verdict::Corrupt => fate.corrupt = true,
            Verdict::Duplicate => fate.duplicate = true,
            Verdict::Stomp if kind == FrameKind::Data => fate.stomp = true,
            Verdict::Pass | Verdict::Stomp => {
                if kind == FrameKind::Data
                    && self.stomp > 0.0
                    && uniform(&mut self.rng) < self.stomp
                {
                    fate.stomp = true;
                }
                if kind == FrameKind::Data {
                    if self.burst_left > 0 {
                        self.burst_left -= 1;
                        fate.corrupt = true;
                    } else {
                        let u = uniform(&mut self.rng);
                        if u < faults.loss {
                            fate.corrupt = true;
                            self.burst_left = faults.burst.saturating_sub(1);
                        } else if u < faults.loss + faults.drop {
                            fate.vanish = true;
                            self.burst_left = faults.burst.saturating_sub(1);
                        }
                    }
                } else if faults.control_loss > 0.0 && uniform(&mut self.rng) < faults.control_loss
                {
                    fate.vanish = true;
                }
                if faults.ber > 0.0 {
                    let bits = (len as u64).saturating_mul(8);
                    let p = 1.0 - pow_int(1.0 - faults.ber, bits);
                    if uniform(&mut self.rng) < p {
                        fate.corrupt = true;
                    }
                }
                if faults.duplicate > 0.0 && uniform(&mut self.rng) < faults.duplicate {
                    fate.duplicate = true;
                }
            }
        }
        if fate.stomp {
            fate = Fate {
                stomp: true,
                ..Fate::default()
            };
            self.injected.stomped += 1;
        } else if fate.vanish {
            fate.corrupt = false;
            fate.duplicate = false;
            self.injected.dropped += 1;
        } else {
            if fate.corrupt {
                self.injected.damaged += 1;
            }
            if fate.duplicate {
                self.injected.duplicated += 1;
            }
        }
        fate
    }

    /// Flips one bit of `frame`, chosen with one draw of the generator (uniform over its bits);
    /// an empty frame is left alone and draws nothing.
    pub fn flip_bit(&mut self, frame: &mut [u8]) {
        let bits = (frame.len() as u64).saturating_mul(8);
        if bits == 0 {
            return;
        }
        let bit = (self.rng.next_u64() % bits) as usize;
        if let Some(b) = frame.get_mut(bit / 8) {
            *b ^= 1 << (bit % 8);
        }
    }

    /// The faults applied so far by [`Injector::fate`] (`outage` is 0).
    pub fn injected(&self) -> Injected {
        self.injected
    }
}

/// The bytes of a frame on a wire: a copy of its own, or the sender's frame shared by reference
/// ([`Channel::transmit_shared`]) as long as the wire leaves it intact.
#[derive(Debug)]
pub enum WireBytes {
    /// The wire's own copy (a damaged or stomped frame is always one).
    Owned(Vec<u8>),
    /// The frame the sender keeps in its replay buffer, shared.
    Shared(SharedFrame),
}

impl WireBytes {
    /// The frame, FCS included (not yet written in a shared frame whose sender defers it,
    /// [`crate::Link::defer_fcs`]: such a frame's receiver takes the wire's FCS status).
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            WireBytes::Owned(v) => v,
            WireBytes::Shared(f) => f.as_bytes(),
        }
    }
}

/// A frame handed to [`Channel::put`]: borrowed (copied onto the wire) or shared.
enum Offered<'a> {
    Borrowed(&'a [u8]),
    Shared(SharedFrame),
}

impl Offered<'_> {
    fn as_bytes(&self) -> &[u8] {
        match self {
            Offered::Borrowed(b) => b,
            Offered::Shared(f) => f.as_bytes(),
        }
    }
}

/// A frame on its way.
#[derive(Debug)]
struct Flight {
    arrive: u64,
    bytes: WireBytes,
    /// What the wire did to the FCS: kept as sent, damaged, or stomped.
    fcs: FcsStatus,
}

/// A frame in flight between two copies of one [`Channel`] ([`Channel::hand_over`]).
#[derive(Debug)]
pub struct InFlight(Flight);

impl InFlight {
    /// When it arrives, ps.
    pub fn arrive_ps(&self) -> u64 {
        self.0.arrive
    }
}

/// What [`Channel::transmit`] did with a frame. Times in picoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TxOutcome {
    /// Its first bit went on the wire: the later of the time asked and [`Channel::free_at`].
    pub start_ps: u64,
    /// Its last bit left; the wire is free again from then on.
    pub end_ps: u64,
    /// It arrives, whole (unless it vanished): `end_ps` plus the propagation delay.
    pub arrive_ps: u64,
    /// What the injector (or the verdict) decided.
    pub fate: Fate,
}

/// One direction of a wire: a line rate, a propagation delay, the per-frame wire overhead
/// ([`WIRE_OVERHEAD`]: preamble, SFD, inter-frame gap), an [`Injector`], and the frames in flight.
///
/// A frame occupies the wire for its serialisation time, starting when both it is offered and the
/// wire is free, and arrives whole one propagation delay after its last bit left. Frames arrive in
/// the order they were sent. Times are picoseconds on the caller's clock, which must not go
/// backwards. The buffers of frames taken out with [`Channel::pop_arrival`] are reused, so that
/// a running channel does not allocate.
#[derive(Debug)]
pub struct Channel {
    rate_gbps: f64,
    propagation_ps: u64,
    injector: Injector,
    busy_until: u64,
    flights: VecDeque<Flight>,
    pool: Vec<Vec<u8>>,
    frames_sent: u64,
    bytes_sent: u64,
    outage_lost: u64,
}

impl Channel {
    /// A free, empty channel of `rate_gbps` Gb/s whose frames take `propagation_ns` ns (rounded
    /// to the picosecond) to arrive, through `injector`.
    pub fn new(rate_gbps: f64, propagation_ns: f64, injector: Injector) -> Self {
        Self::with_ps(
            rate_gbps,
            (propagation_ns * 1000.0).round() as u64,
            injector,
        )
    }

    fn with_ps(rate_gbps: f64, propagation_ps: u64, injector: Injector) -> Self {
        Channel {
            rate_gbps,
            propagation_ps,
            injector,
            busy_until: 0,
            flights: VecDeque::new(),
            pool: Vec::new(),
            frames_sent: 0,
            bytes_sent: 0,
            outage_lost: 0,
        }
    }

    /// Line rate, Gb/s.
    pub fn rate_gbps(&self) -> f64 {
        self.rate_gbps
    }

    /// Propagation delay, ps.
    pub fn propagation_ps(&self) -> u64 {
        self.propagation_ps
    }

    /// Time, ps, a frame of `len` bytes (destination MAC through FCS) occupies the wire: its
    /// bytes and [`WIRE_OVERHEAD`] at the line rate, rounded to the picosecond.
    pub fn serialisation_ps(&self, len: usize) -> u64 {
        let bits = (len.saturating_add(WIRE_OVERHEAD).saturating_mul(8)) as f64;
        // rate Gb/s = bits per ns; ps = bits / rate * 1000.
        (bits * 1000.0 / self.rate_gbps).round() as u64
    }

    /// When the wire is free: the end of the last frame's serialisation, ps.
    pub fn free_at(&self) -> u64 {
        self.busy_until
    }

    /// Puts `frame` (FCS included) of `kind` on the wire at `now_ps`, or when the wire is free if
    /// later. In order: the serialisation is scheduled and the frame counted as sent, then
    /// [`Injector::fate`] decides what becomes of it (`verdict` from a scripted filter, or
    /// [`Verdict::Pass`] for the random faults), a damaged copy gets one bit flipped by
    /// [`Injector::flip_bit`], and the copy (twice for a duplicate; none if it vanishes) is queued
    /// to arrive at [`TxOutcome::arrive_ps`].
    pub fn transmit(
        &mut self,
        now_ps: u64,
        frame: &[u8],
        kind: FrameKind,
        verdict: Verdict,
    ) -> TxOutcome {
        self.put(now_ps, Offered::Borrowed(frame), kind, verdict)
    }

    /// As [`Channel::transmit`] for a frame the sender shares by reference
    /// ([`crate::Link::poll_transmit_shared`]): the wire carries the reference, and copies the
    /// bytes only to damage or stomp them. Same schedule, same faults, same bytes at arrival.
    pub fn transmit_shared(
        &mut self,
        now_ps: u64,
        frame: SharedFrame,
        kind: FrameKind,
        verdict: Verdict,
    ) -> TxOutcome {
        self.put(now_ps, Offered::Shared(frame), kind, verdict)
    }

    /// A buffer of the wire's own holding `bytes`.
    fn copy_of(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut copy = self.pool.pop().unwrap_or_default();
        copy.clear();
        copy.extend_from_slice(bytes);
        copy
    }

    /// A buffer of the wire's own holding the exact bytes of `frame` (its FCS computed if the
    /// sender deferred it).
    fn exact_copy_of(&mut self, frame: &Offered<'_>) -> Vec<u8> {
        match frame {
            Offered::Borrowed(b) => self.copy_of(b),
            Offered::Shared(f) => {
                let mut copy = self.pool.pop().unwrap_or_default();
                f.write_exact(&mut copy);
                copy
            }
        }
    }

    fn put(
        &mut self,
        now_ps: u64,
        frame: Offered<'_>,
        kind: FrameKind,
        verdict: Verdict,
    ) -> TxOutcome {
        let len = frame.as_bytes().len();
        let ser = self.serialisation_ps(len);
        let start = now_ps.max(self.busy_until);
        let end = start.saturating_add(ser);
        self.busy_until = end;
        self.frames_sent += 1;
        self.bytes_sent += len as u64;
        let arrive = end.saturating_add(self.propagation_ps);
        let fate = self.injector.fate(kind, len, verdict);
        if !fate.vanish {
            let mut bytes = match frame {
                Offered::Shared(f) if !fate.corrupt && !fate.stomp => WireBytes::Shared(f),
                // Damaged or stomped: the wire's own copy of the exact bytes, changed.
                other => WireBytes::Owned(self.exact_copy_of(&other)),
            };
            if let WireBytes::Owned(copy) = &mut bytes {
                if fate.corrupt {
                    self.injector.flip_bit(copy);
                }
                if fate.stomp {
                    let body = copy.len().saturating_sub(ethlink_protocol::fcs::FCS_LEN);
                    let stomped =
                        ethlink_protocol::fcs::stomped_bytes(copy.get(..body).unwrap_or(&[]));
                    if let Some(f) = copy.get_mut(body..) {
                        f.copy_from_slice(&stomped);
                    }
                }
            }
            let fcs = if fate.stomp {
                FcsStatus::Stomped
            } else if fate.corrupt {
                FcsStatus::Bad
            } else {
                FcsStatus::Good
            };
            if fate.duplicate {
                let second = match &bytes {
                    WireBytes::Shared(f) => WireBytes::Shared(f.clone()),
                    WireBytes::Owned(c) => WireBytes::Owned(self.copy_of(c)),
                };
                self.flights.push_back(Flight { arrive, bytes, fcs });
                self.flights.push_back(Flight {
                    arrive,
                    bytes: second,
                    fcs,
                });
            } else {
                self.flights.push_back(Flight { arrive, bytes, fcs });
            }
        }
        TxOutcome {
            start_ps: start,
            end_ps: end,
            arrive_ps: arrive,
            fate,
        }
    }

    /// When the next frame in flight arrives, ps; `None` when none is in flight.
    pub fn next_arrival(&self) -> Option<u64> {
        self.flights.front().map(|f| f.arrive)
    }

    /// Takes the next frame in flight if it has arrived by `now_ps`: swaps its bytes into `into`
    /// and returns true (the channel keeps `into`'s old buffer for a later frame). False, with
    /// `into` untouched, when no frame has arrived.
    pub fn pop_arrival(&mut self, now_ps: u64, into: &mut Vec<u8>) -> bool {
        self.pop_arrival_fcs(now_ps, into).is_some()
    }

    /// As [`Channel::pop_arrival`], and says what the wire did to the frame's FCS, as a MAC
    /// that checked it would: [`FcsStatus::Good`] when the frame crossed undamaged (its FCS is
    /// then the one its sender wrote: correct, unless the sender itself stomped the frame, which
    /// only [`Channel::pop_arrival`] and a computed check can tell), [`FcsStatus::Bad`] when the
    /// injector flipped a bit, [`FcsStatus::Stomped`] when it stomped the FCS. Receivers pass
    /// it to [`crate::Link::handle_frame_fcs`], which then need not compute the CRC again.
    pub fn pop_arrival_fcs(&mut self, now_ps: u64, into: &mut Vec<u8>) -> Option<FcsStatus> {
        if self.next_arrival().is_none_or(|at| at > now_ps) {
            return None;
        }
        let f = self.flights.pop_front()?;
        match f.bytes {
            WireBytes::Owned(mut b) => {
                core::mem::swap(into, &mut b);
                self.pool.push(b);
            }
            WireBytes::Shared(s) => s.write_exact(into),
        }
        Some(f.fcs)
    }

    /// As [`Channel::pop_arrival_fcs`], handing over the frame as the wire holds it (shared
    /// frames stay shared); give it back with [`Channel::recycle`] once read.
    pub fn pop_arrival_wire(&mut self, now_ps: u64) -> Option<(WireBytes, FcsStatus)> {
        if self.next_arrival().is_none_or(|at| at > now_ps) {
            return None;
        }
        let f = self.flights.pop_front()?;
        Some((f.bytes, f.fcs))
    }

    /// Takes back a frame from [`Channel::pop_arrival_wire`] once read: the wire's own buffers
    /// are reused, a shared frame is let go.
    pub fn recycle(&mut self, bytes: WireBytes) {
        if let WireBytes::Owned(b) = bytes
            && self.pool.len() < POOL_MAX
        {
            self.pool.push(b);
        }
    }

    /// Moves every frame in flight on this channel to `out`, in the order they arrive: for a
    /// wire whose two ends are simulated apart (a fabric run as partitions on threads of their
    /// own), the sender's copy of the channel schedules and damages each frame, and hands it
    /// to the receiver's copy with [`Channel::take_over`]. The frames are not counted as lost.
    pub fn hand_over(&mut self, out: &mut impl Extend<InFlight>) {
        out.extend(self.flights.drain(..).map(InFlight));
    }

    /// Puts a frame taken with [`Channel::hand_over`] from the sender's copy of this channel
    /// after the frames in flight here. Frames must be handed over in the order they were sent.
    pub fn take_over(&mut self, f: InFlight) {
        debug_assert!(
            self.flights.back().is_none_or(|b| b.arrive <= f.0.arrive),
            "frames handed over out of order"
        );
        self.flights.push_back(f.0);
    }

    /// An idle copy of this channel for its receiving end ([`Channel::hand_over`]): the same
    /// rate and propagation delay, nothing in flight, no faults of its own (the sender's copy
    /// decides every frame's fate).
    pub fn receiving_copy(&self) -> Channel {
        Self::with_ps(
            self.rate_gbps,
            self.propagation_ps,
            Injector::new(Faults::default(), 0),
        )
    }

    /// Joins `receiver`, the receiver's copy of this channel ([`Channel::hand_over`]), back
    /// into this, the sender's copy: its frames still in flight follow, and the frames it lost
    /// to [`Channel::clear`] count as this channel's.
    pub fn join(&mut self, mut receiver: Channel) {
        self.outage_lost += receiver.outage_lost;
        self.flights.append(&mut receiver.flights);
    }

    /// Frames in flight.
    pub fn in_flight(&self) -> usize {
        self.flights.len()
    }

    /// The wire is cut (an outage): every frame in flight is lost, counted in
    /// [`Injected::outage`], and returned as a count. The wire is not busy after: the frame being
    /// serialised, if any, was cut too.
    pub fn clear(&mut self, now_ps: u64) -> usize {
        let lost = self.flights.len();
        self.outage_lost += lost as u64;
        while let Some(f) = self.flights.pop_front() {
            self.recycle(f.bytes);
        }
        self.busy_until = self.busy_until.min(now_ps);
        lost
    }

    /// Frames put on the wire (whatever became of them).
    pub fn frames_sent(&self) -> u64 {
        self.frames_sent
    }

    /// Bytes of the frames put on the wire, wire overhead excluded.
    pub fn bytes_sent(&self) -> u64 {
        self.bytes_sent
    }

    /// Its injector.
    pub fn injector(&self) -> &Injector {
        &self.injector
    }

    /// The faults applied so far: the injector's and the frames lost to [`Channel::clear`].
    pub fn injected(&self) -> Injected {
        Injected {
            outage: self.outage_lost,
            ..self.injector.injected()
        }
    }
}

// ----- the pair ----------------------------------------------------------------------------------

/// One direction of the pair: the channel from an end, and that end's receiving upper layer.
struct Dir {
    /// The channel this end sends on.
    wire: Channel,
    /// Poll the end for a frame when the wire is free.
    poll_at_free: bool,
    /// Frames this end has delivered, with when its upper layer has drained each, ps.
    drain: VecDeque<(u64, Release)>,
    drain_free_at: u64,
}

/// Per-stream receive bookkeeping.
struct Stream {
    /// Submission time of each frame, ps.
    submitted: Vec<u64>,
    /// Next frame index to offer.
    next_offer: u64,
    /// Deliveries of each frame.
    seen: Vec<u8>,
    /// Last index delivered on each VC.
    last_on_vc: [Option<u64>; 8],
    out_of_order: u64,
}

/// Two link ends, a wire and the traffic between them. Each direction of the wire is a
/// [`Channel`]; the injector of direction `i` (0: A to B, 1: B to A) is seeded with
/// `seed * 2 + i` (wrapping), so the two directions draw independent faults.
pub struct Pair {
    ends: [Link; 2],
    dirs: [Dir; 2],
    scenario: Scenario,
    filter: Option<Filter>,
    now: u64,
    up: bool,
    outage_idx: usize,
    outage_end: Option<u64>,
    streams: [Stream; 2],
    latencies: Vec<u64>,
    report: Report,
    scratch: Vec<u8>,
    txbuf: Vec<u8>,
    rxbuf: Vec<u8>,
    first_data_ps: Option<u64>,
    last_delivery_ps: u64,
    steps: u64,
}

impl fmt::Debug for Pair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pair")
            .field("now_ps", &self.now)
            .field("a", &self.ends[0])
            .field("b", &self.ends[1])
            .finish_non_exhaustive()
    }
}

fn uniform(rng: &mut Pcg64Mcg) -> f64 {
    // 53 random bits into [0, 1).
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

fn ps_of_ns(ns: u64) -> u64 {
    ns.saturating_mul(PS_PER_NS)
}

impl Pair {
    /// Builds the pair and brings both physical links up at time 0.
    pub fn new(scenario: Scenario) -> Result<Self, ScenarioError> {
        scenario.validate()?;
        let a = Link::new(scenario.a.clone()).map_err(|e| bad("a", alloc::format!("{e}")))?;
        let b = Link::new(scenario.b.clone()).map_err(|e| bad("b", alloc::format!("{e}")))?;
        let frames = usize::try_from(scenario.traffic.frames).unwrap_or(usize::MAX);
        // Direction i (0: A to B, 1: B to A) draws its faults from seed * 2 + i.
        let dir = |i: u64| Dir {
            wire: scenario
                .wire
                .channel(scenario.seed.wrapping_mul(2).wrapping_add(i)),
            poll_at_free: false,
            drain: VecDeque::new(),
            drain_free_at: 0,
        };
        let stream = |n: usize| Stream {
            submitted: vec![0; n],
            next_offer: 0,
            seen: vec![0; n],
            last_on_vc: [None; 8],
            out_of_order: 0,
        };
        let back = if scenario.traffic.bidirectional {
            frames
        } else {
            0
        };
        let mut pair = Pair {
            ends: [a, b],
            dirs: [dir(0), dir(1)],
            filter: None,
            now: 0,
            up: true,
            outage_idx: 0,
            outage_end: None,
            streams: [stream(frames), stream(back)],
            latencies: Vec::with_capacity(frames + back),
            report: Report::default(),
            scratch: vec![0; 9216],
            txbuf: vec![0; 9216],
            rxbuf: Vec::new(),
            first_data_ps: None,
            last_delivery_ps: 0,
            steps: 0,
            scenario,
        };
        pair.ends[0].physical_up(Instant::ZERO);
        pair.ends[1].physical_up(Instant::ZERO);
        Ok(pair)
    }

    /// Installs a scripted-fault filter.
    pub fn set_filter(&mut self, filter: Filter) {
        self.filter = Some(filter);
    }

    /// Changes the drain rate of both receivers from now on.
    pub fn set_drain(&mut self, drain: f64) {
        self.scenario.drain = drain.clamp(0.0, 1.0);
    }

    /// End A (0) or B (1).
    pub fn end(&self, i: usize) -> &Link {
        &self.ends[i & 1]
    }

    /// End A (0) or B (1), mutably, for commands and fault injection.
    pub fn end_mut(&mut self, i: usize) -> &mut Link {
        &mut self.ends[i & 1]
    }

    /// Simulated time, ns.
    pub fn now_ns(&self) -> u64 {
        self.now / PS_PER_NS
    }

    /// True when all offered traffic is accounted for and both ends are idle.
    pub fn done(&self) -> bool {
        let offered_all =
            (0..2).all(|s| self.streams[s].next_offer == self.streams[s].seen.len() as u64);
        let accounted = self.report.delivered + self.report.unknown_fate + self.report.stomped
            >= self.total_offered();
        offered_all
            && accounted
            && self.ends.iter().all(Link::is_idle)
            && self.dirs.iter().all(|d| d.wire.in_flight() == 0)
    }

    fn total_offered(&self) -> u64 {
        (self.streams[0].seen.len() + self.streams[1].seen.len()) as u64
    }

    /// Runs until traffic completes (and the link is idle) or the time limit passes.
    pub fn run(&mut self) -> Report {
        let limit = ps_of_ns(self.scenario.time_limit_ns);
        while !self.done() {
            if !self.step(limit) {
                self.report.timed_out = true;
                break;
            }
        }
        self.finish()
    }

    /// Runs until `t_ns` of simulated time (or the traffic completes, if `stop_when_done`).
    pub fn run_until(&mut self, t_ns: u64, stop_when_done: bool) {
        let limit = ps_of_ns(t_ns);
        while !(stop_when_done && self.done()) {
            if !self.step(limit) {
                break;
            }
        }
    }

    /// The next instant anything happens, if before `limit`.
    fn next_time(&self) -> Option<u64> {
        let mut t = u64::MAX;
        for (i, d) in self.dirs.iter().enumerate() {
            if let Some(arrive) = d.wire.next_arrival() {
                t = t.min(arrive);
            }
            if d.poll_at_free {
                t = t.min(d.wire.free_at());
            }
            if let Some((at, _)) = d.drain.front() {
                t = t.min(*at);
            }
            if let Some(to) = self.ends[i].poll_timeout() {
                let ps = ps_of_ns(to.as_nanos());
                // A deadline already due waits for the wire.
                let ps = if ps <= self.now {
                    d.wire.free_at().max(self.now + 1)
                } else {
                    ps
                };
                t = t.min(ps);
            }
        }
        if let Some(end) = self.outage_end {
            t = t.min(end);
        } else if let Some((start, _)) = self.scenario.outages.get(self.outage_idx) {
            t = t.min(ps_of_ns(*start));
        }
        (t != u64::MAX).then_some(t)
    }

    /// One step: advance to the next event and process everything due. False when nothing is
    /// left to do before `limit`.
    pub fn step(&mut self, limit: u64) -> bool {
        self.steps += 1;
        let Some(t) = self.next_time() else {
            return false;
        };
        if t > limit {
            return false;
        }
        self.now = self.now.max(t);
        let now_i = Instant::from_nanos(self.now / PS_PER_NS);
        self.outages(now_i);
        // Arrivals.
        let mut rxbuf = core::mem::take(&mut self.rxbuf);
        for d in 0..2 {
            // The wire knows what it did to the FCS (it stomps for the sender too): the
            // receiving end takes that status as a MAC's, without computing the CRC again.
            while let Some(fcs) = self.dirs[d].wire.pop_arrival_fcs(self.now, &mut rxbuf) {
                let rx = 1 - d;
                self.ends[rx].handle_frame_fcs(now_i, &rxbuf, fcs);
                self.drain_events(rx);
            }
        }
        self.rxbuf = rxbuf;
        // Timers.
        for e in 0..2 {
            if self.ends[e].poll_timeout().is_some_and(|to| to <= now_i) {
                self.ends[e].handle_timeout(now_i);
                self.drain_events(e);
            }
        }
        // Receivers draining their buffers.
        for e in 0..2 {
            while self.dirs[e]
                .drain
                .front()
                .is_some_and(|(at, _)| *at <= self.now)
            {
                if let Some((_, r)) = self.dirs[e].drain.pop_front() {
                    let _ = self.ends[e].release(r);
                }
            }
        }
        // Traffic and transmission.
        for e in 0..2 {
            self.offer(e);
            if self.up && self.dirs[e].wire.free_at() <= self.now {
                self.transmit(e, now_i);
            }
            self.drain_events(e);
        }
        self.check_bounds();
        true
    }

    fn outages(&mut self, now_i: Instant) {
        if let Some(end) = self.outage_end {
            if self.now >= end {
                self.outage_end = None;
                self.up = true;
                // The wires were cleared at the start of the outage: free since then.
                for e in 0..2 {
                    self.ends[e].physical_up(now_i);
                }
            }
            return;
        }
        let Some(&(start, dur)) = self.scenario.outages.get(self.outage_idx) else {
            return;
        };
        if self.now >= ps_of_ns(start) {
            self.outage_idx += 1;
            self.up = false;
            self.outage_end = Some(ps_of_ns(start.saturating_add(dur)));
            for e in 0..2 {
                self.dirs[e].wire.clear(self.now);
                self.dirs[e].poll_at_free = false;
                self.ends[e].physical_down(now_i);
                self.drain_events(e);
            }
        }
    }

    fn offer(&mut self, e: usize) {
        let traffic = self.scenario.traffic;
        let total = self.streams[e].seen.len() as u64;
        while self.streams[e].next_offer < total {
            let index = self.streams[e].next_offer;
            let vc = Vc::new((index % u64::from(traffic.vcs)) as u8).unwrap_or_default();
            if self.ends[e].queued(vc).0 >= traffic.window.max(1) as usize {
                return;
            }
            let len = build_payload(&mut self.scratch, e, index, traffic.frame_size);
            let Some(payload) = self.scratch.get(..len) else {
                return;
            };
            match self.ends[e].submit(vc, payload) {
                Ok(()) => {
                    if let Some(s) = self.streams[e].submitted.get_mut(index as usize) {
                        *s = self.now;
                    }
                    self.streams[e].next_offer += 1;
                }
                Err(SubmitError::QueueFull { .. }) => return,
                Err(_) => {
                    // Cannot happen with a validated scenario; count the frame lost.
                    self.streams[e].next_offer += 1;
                }
            }
        }
    }

    fn transmit(&mut self, e: usize, now_i: Instant) {
        let mut buf = core::mem::take(&mut self.txbuf);
        let sent = self.ends[e].poll_transmit(now_i, &mut buf);
        let Ok(Some(t)) = sent else {
            self.dirs[e].poll_at_free = false;
            self.txbuf = buf;
            return;
        };
        let frame = buf.get(..t.len).unwrap_or(&[]);
        if t.kind == FrameKind::Data && self.first_data_ps.is_none() {
            self.first_data_ps = Some(self.now);
        }
        let verdict = match self.filter.as_mut() {
            Some(f) => f(&FrameInfo {
                dir: e,
                at_ns: self.now / PS_PER_NS,
                bytes: frame,
                kind: t.kind,
                data: t.data,
            }),
            None => Verdict::Pass,
        };
        let out = self.dirs[e].wire.transmit(self.now, frame, t.kind, verdict);
        if out.fate.stomp {
            // The sender ends the frame with the stomped FCS and takes it back (LINK-3-12).
            if self.ends[e].stomp_last().is_some() {
                self.report.stomped += 1;
            }
        }
        self.dirs[e].poll_at_free = true;
        self.txbuf = buf;
    }

    fn drain_events(&mut self, e: usize) {
        let rate = self.scenario.wire.rate_gbps * self.scenario.drain;
        loop {
            let now = self.now;
            let Some(ev) = self.ends[e].poll_event() else {
                return;
            };
            match ev {
                Event::Delivered {
                    payload, release, ..
                } => {
                    let plen = payload.len();
                    let frame_len =
                        ethlink_protocol::frame_len(ethlink_protocol::ETH_HEADER_LEN, plen);
                    let (index, ok) = check_payload(payload, 1 - e);
                    let stream = &mut self.streams[1 - e];
                    let report = &mut self.report;
                    match index.and_then(|i| usize::try_from(i).ok()) {
                        Some(i) if i < stream.seen.len() => {
                            if stream.seen[i] > 0 {
                                report.duplicates += 1;
                            } else {
                                report.delivered += 1;
                                report.delivered_payload_bytes += plen as u64;
                                self.latencies.push(now.saturating_sub(stream.submitted[i]));
                            }
                            stream.seen[i] = stream.seen[i].saturating_add(1);
                            let vc = i % usize::from(self.scenario.traffic.vcs.max(1));
                            if stream.last_on_vc[vc].is_some_and(|last| i as u64 <= last) {
                                stream.out_of_order += 1;
                            }
                            stream.last_on_vc[vc] = Some(i as u64);
                            if !ok {
                                report.corrupted += 1;
                            }
                        }
                        _ => report.corrupted += 1,
                    }
                    self.last_delivery_ps = now;
                    // The upper layer drains the frame at the drain rate.
                    let d = &mut self.dirs[e];
                    if rate > 0.0 {
                        let ps = ((frame_len + WIRE_OVERHEAD) as f64 * 8.0 * 1000.0 / rate).round()
                            as u64;
                        let done = d.drain_free_at.max(now) + ps;
                        d.drain_free_at = done;
                        d.drain.push_back((done, release));
                    } else {
                        d.drain.push_back((u64::MAX, release));
                    }
                }
                Event::Lost { reason, .. } => {
                    if reason == LostReason::UnknownFate {
                        self.report.unknown_fate += 1;
                    }
                }
                // The frames delivered before stay in the buffer and drain as before (LINK-6-4);
                // the link comes UP again once they have (LINK-2-18).
                Event::LinkDown(_) => {}
                Event::LinkUp(_) | Event::Notice(_) => {}
            }
        }
    }

    fn check_bounds(&mut self) {
        for e in 0..2 {
            let l = &self.ends[e];
            let c = l.config();
            if l.replay_frames() > c.replay_max_frames as usize
                || l.replay_bytes() > c.replay_max_bytes as usize
            {
                self.report.bound_violations += 1;
            }
            for v in 0..c.vcs {
                let vc = Vc::new(v).unwrap_or_default();
                if l.rx_held(vc) > l.rx_grant(vc) {
                    self.report.bound_violations += 1;
                }
            }
        }
    }

    /// Re-enables the rate-based drain of receivers whose frames waited at drain 0.
    pub fn restart_drain(&mut self) {
        let rate = self.scenario.wire.rate_gbps * self.scenario.drain;
        if rate <= 0.0 {
            return;
        }
        for d in &mut self.dirs {
            let mut t = self.now;
            for (at, _) in d.drain.iter_mut() {
                if *at == u64::MAX {
                    t += 1000;
                    *at = t;
                }
            }
            d.drain_free_at = t;
        }
    }

    fn finish(&mut self) -> Report {
        let mut r = self.report.clone();
        r.offered = self.total_offered();
        r.lost = r.offered.saturating_sub(r.delivered);
        r.in_order = self.streams.iter().all(|s| s.out_of_order == 0);
        r.end_ns = self.now / PS_PER_NS;
        r.data_time_ns = self
            .first_data_ps
            .map_or(0, |f| self.last_delivery_ps.saturating_sub(f) / PS_PER_NS);
        if r.data_time_ns > 0 {
            r.goodput_gbps = (r.delivered_payload_bytes * 8) as f64 / r.data_time_ns as f64;
        }
        let mut lat = core::mem::take(&mut self.latencies);
        lat.sort_unstable();
        if let Some(max) = lat.last() {
            let n = lat.len();
            let ns = |ps: u64| ps as f64 / PS_PER_NS as f64;
            let sum: f64 = lat.iter().map(|p| ns(*p)).sum();
            let pct = |q: f64| {
                let i = ((n as f64 * q).ceil() as usize).clamp(1, n) - 1;
                ns(lat[i])
            };
            r.latency_ns = [sum / n as f64, pct(0.50), pct(0.99), ns(*max)];
        }
        self.latencies = lat;
        r.counters = [
            self.ends[0].counters().clone(),
            self.ends[1].counters().clone(),
        ];
        r.max_replay_bytes = r
            .counters
            .iter()
            .map(|c| c.replay_bytes_max)
            .max()
            .unwrap_or(0);
        r.max_rx_buffer_bytes = r
            .counters
            .iter()
            .zip([self.scenario.a.credit_size, self.scenario.b.credit_size])
            .map(|(c, cs)| c.rx_occupied_max_credits * u64::from(cs))
            .max()
            .unwrap_or(0);
        r.rx_buffer_capacity_bytes = self.scenario.b.rx_buffer_bytes();
        for (d, dir) in self.dirs.iter().enumerate() {
            r.wire_frames[d] = dir.wire.frames_sent();
            r.wire_bytes[d] = dir.wire.bytes_sent();
            for (sum, n) in r.injected.iter_mut().zip(dir.wire.injected().to_array()) {
                *sum += n;
            }
        }
        r
    }

    /// Steps taken so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }
}

/// `base^n` by repeated squaring (no `powf` without std): the chance that none of `n` bits
/// flips.
fn pow_int(base: f64, n: u64) -> f64 {
    let mut n = n;
    let mut b = base;
    let mut acc = 1.0;
    while n > 0 {
        if n & 1 == 1 {
            acc *= b;
        }
        b *= b;
        n >>= 1;
    }
    acc
}

/// Writes the payload of harness frame `index` from `end` (network header and one RDMA_WRITE
/// whose target address is the index and whose data is a pattern of it) so that the whole DATA
/// frame is `frame_size` bytes; returns its length.
pub fn build_payload(buf: &mut [u8], end: usize, index: u64, frame_size: usize) -> usize {
    let data_len = frame_size.saturating_sub(FRAME_OVERHEAD).max(1);
    let mut data = [0u8; 9216];
    let data = data.get_mut(..data_len).unwrap_or(&mut []);
    fill_pattern(data, index);
    let txn = [TxnRepr::RdmaWrite {
        tag: (index & 0xFFFF) as u16,
        target: MemTarget {
            space: Space::Global,
            key: 0,
            addr: index,
        },
        offset: 0,
        total: data_len as u32,
        data,
    }];
    let repr = DataRepr {
        dst: GpuId::new(1 - end as u16).unwrap_or_default(),
        src: GpuId::new(end as u16).unwrap_or_default(),
        path: PathId(0),
        txns: Txns::Slice(&txn),
    };
    repr.emit(buf).unwrap_or(0)
}

fn fill_pattern(data: &mut [u8], index: u64) {
    let mut x = index.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for chunk in data.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let bytes = x.to_le_bytes();
        chunk.copy_from_slice(bytes.get(..chunk.len()).unwrap_or(&[]));
    }
}

/// Reads back a harness payload: the frame index and whether its bytes are intact.
fn check_payload(payload: &[u8], from_end: usize) -> (Option<u64>, bool) {
    let Ok(repr) = DataRepr::parse(payload) else {
        return (None, false);
    };
    if usize::from(repr.src.value()) != from_end {
        return (None, false);
    }
    let Some(Ok(TxnRepr::RdmaWrite { target, data, .. })) = repr.txns.iter().next() else {
        return (None, false);
    };
    let mut expect = [0u8; 9216];
    let Some(expect) = expect.get_mut(..data.len()) else {
        return (Some(target.addr), false);
    };
    fill_pattern(expect, target.addr);
    (Some(target.addr), expect == data)
}

#[cfg(test)]
mod tests {
    use alloc::vec;
    use alloc::vec::Vec;

    use super::*;

    #[test]
    fn channel_serialises_propagates_and_keeps_order() {
        // 8 Gb/s: one byte per ns; 64 B + 20 B of wire overhead take 84 ns.
        let mut ch = Channel::new(8.0, 10.0, Injector::new(Faults::default(), 1));
        assert_eq!(ch.serialisation_ps(64), 84_000);
        assert_eq!(ch.propagation_ps(), 10_000);
        let a = ch.transmit(5_000, &[1; 64], FrameKind::Data, Verdict::Pass);
        assert_eq!((a.start_ps, a.end_ps, a.arrive_ps), (5_000, 89_000, 99_000));
        // Offered while the wire is busy: it starts when the first frame's last bit has left.
        let b = ch.transmit(6_000, &[2; 64], FrameKind::Data, Verdict::Pass);
        assert_eq!((b.start_ps, b.end_ps), (89_000, 173_000));
        assert_eq!(ch.free_at(), 173_000);
        assert_eq!((ch.frames_sent(), ch.bytes_sent()), (2, 128));
        assert_eq!(ch.next_arrival(), Some(99_000));
        let mut buf = Vec::new();
        assert!(!ch.pop_arrival(98_999, &mut buf));
        assert!(buf.is_empty());
        assert!(ch.pop_arrival(99_000, &mut buf));
        assert_eq!(buf, vec![1; 64]);
        assert!(ch.pop_arrival(u64::MAX, &mut buf));
        assert_eq!(buf, vec![2; 64]);
        assert_eq!((ch.next_arrival(), ch.in_flight()), (None, 0));
        assert_eq!(ch.injected(), Injected::default());
    }

    #[test]
    fn the_fcs_status_a_channel_reports_is_the_one_a_crc_computes() {
        // Frames with a correct FCS, through damage, stomps, duplicates and losses: the status
        // the wire reports must be what checking the arrived bytes finds, frame by frame.
        let faults = Faults {
            loss: 0.2,
            drop: 0.05,
            duplicate: 0.05,
            ber: 1e-4,
            control_loss: 0.1,
            ..Faults::default()
        };
        let mut ch = Channel::new(400.0, 25.0, Injector::new(faults, 11).with_stomp(0.1));
        let mut seen = [0u32; 3];
        let mut buf = Vec::new();
        for n in 0..2000usize {
            let len = 64 + (n * 37) % 1400;
            let mut frame: Vec<u8> = (0..len).map(|i| (i * 7 + n) as u8).collect();
            let fcs = ethlink_protocol::fcs::fcs_bytes(&frame[..len - 4]);
            frame[len - 4..].copy_from_slice(&fcs);
            let kind = if n % 3 == 0 {
                FrameKind::Ack
            } else {
                FrameKind::Data
            };
            ch.transmit(0, &frame, kind, Verdict::Pass);
            while let Some(status) = ch.pop_arrival_fcs(u64::MAX, &mut buf) {
                assert_eq!(status, FcsStatus::of(&buf), "frame {n}");
                seen[status as usize] += 1;
            }
        }
        assert!(seen.iter().all(|&c| c > 0), "good, bad, stomped: {seen:?}");
    }

    #[test]
    fn verdicts_are_applied_and_counted() {
        let mut ch = Channel::new(400.0, 25.0, Injector::new(Faults::default(), 3));
        let frame: Vec<u8> = (0..100u8).collect();
        let f = ch.transmit(0, &frame, FrameKind::Data, Verdict::Drop).fate;
        assert!(f.vanish && !f.corrupt && !f.duplicate);
        assert_eq!(ch.in_flight(), 0);
        ch.transmit(0, &frame, FrameKind::Ack, Verdict::Corrupt);
        ch.transmit(0, &frame, FrameKind::Data, Verdict::Duplicate);
        ch.transmit(0, &frame, FrameKind::Data, Verdict::Deliver);
        assert_eq!(ch.in_flight(), 4);
        let mut buf = Vec::new();
        assert!(ch.pop_arrival(u64::MAX, &mut buf));
        let flipped: u32 = buf
            .iter()
            .zip(&frame)
            .map(|(a, b)| (a ^ b).count_ones())
            .sum();
        assert_eq!(flipped, 1, "one bit flipped");
        for _ in 0..3 {
            assert!(ch.pop_arrival(u64::MAX, &mut buf));
            assert_eq!(buf, frame);
        }
        ch.transmit(0, &frame, FrameKind::Data, Verdict::Deliver);
        assert_eq!(ch.clear(1), 1);
        assert!(ch.free_at() <= 1);
        assert_eq!(
            ch.injected().to_array(),
            [1, 1, 1, 1],
            "damaged, dropped, duplicated, outage"
        );
        assert_eq!(ch.frames_sent(), 5);
    }

    #[test]
    fn one_seed_gives_one_sequence_of_fates() {
        let faults = Faults {
            loss: 0.1,
            drop: 0.1,
            burst: 3,
            ber: 1e-4,
            duplicate: 0.1,
            control_loss: 0.2,
        };
        let run = |seed: u64| {
            let mut inj = Injector::new(faults, seed);
            let mut frame = [0u8; 300];
            let fates: Vec<(Fate, [u8; 300])> = (0..2000)
                .map(|i| {
                    let kind = if i % 3 == 0 {
                        FrameKind::Ack
                    } else {
                        FrameKind::Data
                    };
                    let fate = inj.fate(kind, frame.len(), Verdict::Pass);
                    if fate.corrupt {
                        inj.flip_bit(&mut frame);
                    }
                    (fate, frame)
                })
                .collect();
            (fates, inj.injected())
        };
        let (a, ia) = run(5);
        assert_eq!(a, run(5).0);
        assert_ne!(a, run(6).0);
        let count = |f: fn(&Fate) -> bool| a.iter().filter(|(x, _)| f(x)).count() as u64;
        assert_eq!(ia.damaged, count(|f| f.corrupt));
        assert_eq!(ia.dropped, count(|f| f.vanish));
        assert_eq!(ia.duplicated, count(|f| f.duplicate));
        assert!(ia.damaged > 0 && ia.dropped > 0 && ia.duplicated > 0);
        assert!(
            a.iter()
                .all(|(f, _)| !(f.vanish && (f.corrupt || f.duplicate)))
        );
    }
}

//! The harness a case drives: the device, simulated time, the wires of its ports and the peers
//! at their far ends (docs/conformance.md §4).
//!
//! A port of the device is either *attached* to a peer, a reference link end of the
//! `ethlink-link` crate that the harness runs, through a wire with a delay and a rate and an
//! exerciser hook that can drop, damage, duplicate or hold back frames in either direction; or
//! *raw*, in which case the case itself writes the frames the device receives and reads the ones
//! it sends. Every frame that crosses a port, either way, is logged with its time, so that a
//! failure can show the exchange around it and a capture can be written.

use std::collections::VecDeque;

use ethlink_link::{Config as LinkConfig, Event, Instant, Link};

use crate::boundary::{self, MAX_ADVANCE_BYTES, MAX_CASE_BYTES, MAX_OUTPUTS};
use crate::case::Stop;
use crate::device::{
    Advanced, Counters, Description, Device, DeviceError, LinkParams, Output, Reply, Request,
    Setup, from_hex,
};

/// One frame that crossed a port of the device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    /// When it began (sent by the device) or arrived (sent to it).
    pub time_ns: u64,
    /// The device's port.
    pub port: u16,
    /// True when the device sent it.
    pub from_dut: bool,
    /// The frame, FCS included.
    pub bytes: Vec<u8>,
    /// For a frame sent to the device whose header the harness gave it ahead
    /// (docs/conformance.md \u{a7}3.3 `header`): when its first bit arrived; `time_ns` is when
    /// its last did.
    pub first_ns: Option<u64>,
}

/// The direction of a frame on an attached port's wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dir {
    /// From the device to the peer.
    FromDut,
    /// From the peer to the device.
    ToDut,
}

/// What the exerciser does with one frame on an attached wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Carry it as it is (the hook may still have changed its bytes).
    Pass,
    /// Lose it.
    Drop,
    /// Carry it twice.
    Duplicate,
    /// Carry it `ns` later than it would have arrived (frames behind it are not held back: this
    /// reorders).
    Delay(u64),
    /// Its first bit arrives on time and its last `ns` later than it would have: a sender that
    /// stalls inside the frame. Only a device given headers ahead ([`Ctx::cut_headers`]) can
    /// tell it from [`Fault::Delay`].
    Stall(u64),
}

/// The exerciser hook of an attached port: sees every frame, may edit its bytes, decides its
/// fate.
pub type Hook = Box<dyn FnMut(Dir, u64, &mut Vec<u8>) -> Fault + Send>;

/// Something a peer's link reported to the harness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerEvent {
    /// The peer's link came up.
    Up,
    /// The peer's link went down.
    Down,
    /// A payload the peer received from the device, in order.
    Delivered {
        /// Its VC.
        vc: u8,
        /// Network header and transactions.
        payload: Vec<u8>,
    },
    /// A payload the peer had submitted and could not deliver.
    Lost {
        /// Its VC.
        vc: u8,
        /// Its payload.
        payload: Vec<u8>,
    },
}

struct InFlight {
    at_ns: u64,
    /// When its first bit arrives, for a frame to the device whose header is given ahead; taken
    /// once the header has been.
    first_ns: Option<u64>,
    /// When its header was given to the device.
    began_ns: Option<u64>,
    seq: u64,
    dir: Dir,
    bytes: Vec<u8>,
}

/// The far end of one attached port.
pub struct PeerEnd {
    /// The reference link end playing the peer.
    pub link: Link,
    /// What the peer's link reported, oldest first.
    pub events: Vec<PeerEvent>,
    /// While true the peer keeps the payloads it receives without draining them, so that its
    /// receive buffer fills and it stops returning credits.
    pub hold: bool,
    /// The VCs (bit `v` for VC `v`) whose payloads the peer keeps even while `hold` is false.
    hold_vcs: u8,
    held: Vec<(u8, ethlink_link::Release)>,
    hook: Option<Hook>,
    wire: Vec<InFlight>,
    free_to_dut_ns: u64,
}

/// Settings of the wires of attached ports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WireSpec {
    /// Line rate in Gb/s.
    pub rate_gbps: f64,
    /// Propagation delay in ns.
    pub delay_ns: u64,
}

impl Default for WireSpec {
    fn default() -> Self {
        WireSpec {
            rate_gbps: 400.0,
            delay_ns: 50,
        }
    }
}

impl WireSpec {
    /// Nanoseconds a frame of `len` bytes occupies the wire (preamble, SFD and gap included).
    pub fn serialise_ns(&self, len: usize) -> u64 {
        let bits = (len as f64 + 20.0) * 8.0;
        (bits / self.rate_gbps).ceil() as u64
    }
}

/// The harness of one case.
pub struct Ctx<'d> {
    dut: &'d mut dyn Device,
    /// What the device said of itself.
    pub desc: Description,
    /// The link parameters in force after the last reset.
    pub params: LinkParams,
    /// The wires of attached ports.
    pub wire: WireSpec,
    /// The simulated time the case may use; a case that needs more is a harness error.
    pub limit_ns: u64,
    /// Give the device each frame a peer sends it ahead, when its first bit arrives (the
    /// `header` request of docs/conformance.md \u{a7}3.3), as well as whole at its end: for the
    /// cut-through cases of a switch that declares `cut_through`.
    pub cut_headers: bool,
    now: u64,
    /// The time of the last `advance`: frames the device sends come after it.
    advanced: u64,
    next_dut: Option<u64>,
    log: Vec<Logged>,
    /// Bytes of the frames in `log` ([`MAX_CASE_BYTES`] at most).
    logged: usize,
    pending: VecDeque<Output>,
    raw: Vec<VecDeque<(u64, Vec<u8>)>>,
    peers: Vec<Option<PeerEnd>>,
    seq: u64,
    buf: Vec<u8>,
    notes: Vec<String>,
    /// Per port: when the last frame the device sent there ends on the wire at its line rate.
    busy_until: Vec<u64>,
    /// Steps of the simulation so far (each advances the device once), against
    /// [`Ctx::event_budget`].
    steps: u64,
    /// Most steps the case may take: a case that needs more is a livelock.
    pub event_budget: u64,
}

/// Step by which a device that does not report its deadline is advanced.
const BLIND_STEP_NS: u64 = 100;

/// Most steps of the simulation a case may take ([`Ctx::event_budget`]), each an advance of the
/// device: far above what any case takes against a conforming device (the most against the
/// references is given in docs/conformance.md §3.5), far below what a wall-time limit allows a
/// device that livelocks.
pub const EVENT_BUDGET: u64 = 200_000;

/// How long [`Ctx::settle`] waits at most for a device to finish sending: 64 frames of 9216
/// bytes at 25 Gb/s.
pub const SETTLE_LIMIT_NS: u64 = 64 * (9236 * 8 / 25 + 1);

impl<'d> Ctx<'d> {
    /// A harness over `dut`, which said `desc` in answer to `hello`.
    pub fn new(dut: &'d mut dyn Device, desc: Description) -> Self {
        let ports = usize::from(desc.ports.max(1));
        Ctx {
            dut,
            desc,
            params: LinkParams::default(),
            wire: WireSpec::default(),
            limit_ns: 1_000_000_000,
            cut_headers: false,
            now: 0,
            advanced: 0,
            next_dut: None,
            log: Vec::new(),
            logged: 0,
            pending: VecDeque::new(),
            raw: vec![VecDeque::new(); ports],
            peers: (0..ports).map(|_| None).collect(),
            seq: 0,
            buf: vec![0; 9216],
            notes: Vec::new(),
            busy_until: vec![0; ports],
            steps: 0,
            event_budget: EVENT_BUDGET,
        }
    }

    /// Adds a note to the case's result, whatever its verdict: a table the reports show with the
    /// case (the litmus cases give each test's histogram this way).
    pub fn note(&mut self, text: impl Into<String>) {
        self.notes.push(text.into());
    }

    /// The notes added so far, oldest first.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Resets the device with `setup`, which the case needs, and forgets every peer, frame and
    /// output.
    ///
    /// A refusal ends the case: Unsupported when the setup asks for a setting a device may be
    /// unable to use (a link parameter, an endpoint setting, a switch's latency or residence),
    /// a harness error when it asks for nothing of the kind (docs/conformance.md \u{a7}3.3). The
    /// parameters the device answers with are checked ([`boundary::check_params`]) before any
    /// case reads them. A case that judges whether the device refuses a setup uses
    /// [`Ctx::try_reset`].
    pub fn reset(&mut self, setup: &Setup) -> Result<LinkParams, Stop> {
        match self.try_reset(setup)? {
            Ok(params) => Ok(params),
            Err(why) if boundary::only_defaults(setup) => Err(Stop::Harness(format!(
                "the device refused a reset that asks for no setting a device may refuse: {why} \
                 (docs/conformance.md \u{a7}3.3)"
            ))),
            Err(why) => Err(Stop::Unsupported(why)),
        }
    }

    /// Resets the device with `setup`, whose refusal is the device's answer for the case to
    /// judge: `Ok(Err(why))` when the device refused it.
    pub fn try_reset(&mut self, setup: &Setup) -> Result<Result<LinkParams, String>, Stop> {
        let params = match self.dut.reset(setup) {
            Ok(p) => p,
            Err(DeviceError::Refused(why)) => return Ok(Err(why)),
            Err(e) => return Err(e.into()),
        };
        boundary::check_params(&setup.link, &params).map_err(Stop::Harness)?;
        self.params = params.clone();
        self.now = 0;
        self.advanced = 0;
        self.next_dut = None;
        self.pending.clear();
        self.raw.iter_mut().for_each(VecDeque::clear);
        self.peers.iter_mut().for_each(|p| *p = None);
        self.busy_until.iter_mut().for_each(|b| *b = 0);
        Ok(Ok(params))
    }

    /// The current time.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// The steps of the simulation the case has taken so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// How late the device may act on a timer: its clock acts at the first tick at or after an
    /// expiry (link.md LINK-1-5), so at most one tick less one nanosecond after it.
    pub fn late_ns(&self) -> u64 {
        self.desc.tick() - 1
    }

    /// The time `bytes` bytes of a frame occupy the device's wire, with preamble, SFD and gap
    /// (link.md §1.2, `ser(n)`), at the line rate its `hello` gives, rounded up.
    pub fn ser_ns(&self, bytes: usize) -> u64 {
        let bits = (bytes as u64 + 20) * 8;
        bits.div_ceil(self.desc.rate())
    }

    /// Runs on while the device may still be sending what it had to send: as long as a frame it
    /// sent has not ended on the wire (at its line rate) at least one tick before now. A
    /// transmitter that serialises a backlog at its line rate so gets to put the whole backlog
    /// on the wire before a case judges what it sent; a device that sends nothing more costs
    /// nothing. A device still sending [`SETTLE_LIMIT_NS`] after the call makes the case
    /// Inconclusive: the frames it expects may not have left yet.
    pub fn settle(&mut self) -> Result<(), Stop> {
        let start = self.now;
        loop {
            let busy = self.busy_until.iter().copied().max().unwrap_or(0);
            let quiet = busy.saturating_add(self.desc.tick());
            if quiet <= self.now {
                return Ok(());
            }
            if quiet > start.saturating_add(SETTLE_LIMIT_NS) {
                return Err(Stop::Inconclusive(format!(
                    "the device was still sending {SETTLE_LIMIT_NS} ns after the case's window \
                     closed (at {start} ns, at {} Gb/s): the frames it expects may not have \
                     left yet",
                    self.desc.rate()
                )));
            }
            self.run_until_time(quiet)?;
        }
    }

    /// Whether the device declared the capability `name`.
    pub fn has_cap(&self, name: &str) -> bool {
        self.desc.caps.iter().any(|c| c == name)
    }

    /// Every frame that crossed a port so far.
    pub fn log(&self) -> &[Logged] {
        &self.log
    }

    /// Attaches a reference link end with `cfg` to `port` and brings both physical links up now.
    pub fn attach(&mut self, port: u16, cfg: LinkConfig) -> Result<(), Stop> {
        let link = Link::new(cfg).map_err(|e| Stop::Harness(format!("peer config: {e}")))?;
        let slot = self
            .peers
            .get_mut(usize::from(port))
            .ok_or_else(|| Stop::Harness(format!("the device has no port {port}")))?;
        *slot = Some(PeerEnd {
            link,
            events: Vec::new(),
            hold: false,
            hold_vcs: 0,
            held: Vec::new(),
            hook: None,
            wire: Vec::new(),
            free_to_dut_ns: 0,
        });
        let now = self.now;
        if let Some(p) = self.peers[usize::from(port)].as_mut() {
            p.link.physical_up(Instant::from_nanos(now));
        }
        self.request(&Request::PhysicalUp { port })?;
        Ok(())
    }

    /// The peer of an attached port.
    pub fn peer(&mut self, port: u16) -> Result<&mut PeerEnd, Stop> {
        self.peers
            .get_mut(usize::from(port))
            .and_then(Option::as_mut)
            .ok_or_else(|| Stop::Harness(format!("port {port} has no peer attached")))
    }

    /// Sets the exerciser hook of an attached port.
    pub fn set_hook(&mut self, port: u16, hook: Hook) -> Result<(), Stop> {
        self.peer(port)?.hook = Some(hook);
        Ok(())
    }

    /// Removes the exerciser hook of an attached port.
    pub fn clear_hook(&mut self, port: u16) -> Result<(), Stop> {
        self.peer(port)?.hook = None;
        Ok(())
    }

    /// A frame arrives at the device on a raw port now.
    pub fn inject(&mut self, port: u16, bytes: &[u8]) -> Result<(), Stop> {
        self.record(port, false, self.now, bytes.to_vec())?;
        self.dut.frame(port, self.now, bytes)?;
        self.next_dut = None;
        Ok(())
    }

    /// Logs a frame that crossed a port, within [`MAX_CASE_BYTES`] per case.
    fn record(
        &mut self,
        port: u16,
        from_dut: bool,
        time_ns: u64,
        bytes: Vec<u8>,
    ) -> Result<(), Stop> {
        self.logged = self.logged.saturating_add(bytes.len());
        if self.logged > MAX_CASE_BYTES {
            return Err(Stop::Harness(format!(
                "more than {MAX_CASE_BYTES} bytes of frames crossed the device's ports in one \
                 case, far beyond what any case exchanges: the harness stops it"
            )));
        }
        self.log.push(Logged {
            time_ns,
            port,
            from_dut,
            bytes,
            first_ns: None,
        });
        Ok(())
    }

    /// An upper-layer request now, which the case needs done. A refusal ends the case:
    /// Unsupported for a request the boundary lets a device refuse (`withdraw`, which link.md
    /// LINK-6-5 makes optional, and `poison`, a test hook a design may lack), a harness error for
    /// any other (docs/conformance.md \u{a7}3.3). A case that judges whether the device refuses
    /// uses [`Ctx::try_request`].
    pub fn request(&mut self, req: &Request) -> Result<Reply, Stop> {
        match self.try_request(req)? {
            Ok(reply) => Ok(reply),
            Err(why) if req.optional() => Err(Stop::Unsupported(format!(
                "the device refused {}: {why}",
                req.name()
            ))),
            Err(why) => Err(Stop::Harness(format!(
                "the device refused {}, which this case needs and every {} takes \
                 (docs/conformance.md \u{a7}3.3): {why}",
                req.name(),
                self.desc.role
            ))),
        }
    }

    /// An upper-layer request now whose refusal is the device's answer for the case to judge:
    /// `Ok(Err(why))` when the device refused it.
    pub fn try_request(&mut self, req: &Request) -> Result<Result<Reply, String>, Stop> {
        let reply = match self.dut.request(self.now, req) {
            Ok(r) => r,
            Err(DeviceError::Refused(why)) => return Ok(Err(why)),
            Err(e) => return Err(e.into()),
        };
        self.next_dut = None;
        if let Some(d) = &reply.data {
            from_hex("the reply's data", d)?;
        }
        Ok(Ok(reply))
    }

    /// The counters of the device.
    pub fn counters(&mut self) -> Result<Counters, Stop> {
        let c = self.dut.counters()?;
        boundary::check_counters(&c).map_err(Stop::Harness)?;
        Ok(c)
    }

    /// A counter of the device, 0 when it does not report it.
    pub fn counter(&mut self, name: &str) -> Result<u64, Stop> {
        Ok(self.counters()?.get(name).copied().unwrap_or(0))
    }

    /// Takes the frames the device sent on raw port `port`, with their times.
    pub fn take_frames(&mut self, port: u16) -> Vec<(u64, Vec<u8>)> {
        self.raw
            .get_mut(usize::from(port))
            .map(|q| q.drain(..).collect())
            .unwrap_or_default()
    }

    /// Takes every output of the device but frames (deliveries, losses, link events,
    /// completions), oldest first.
    pub fn take_outputs(&mut self) -> Vec<Output> {
        self.pending.drain(..).collect()
    }

    /// Runs `ns` nanoseconds: the device, the wires and the peers.
    pub fn run_for(&mut self, ns: u64) -> Result<(), Stop> {
        let end = self.now.saturating_add(ns);
        self.run_until_time(end)
    }

    /// Runs until `done` holds or `ns` nanoseconds have passed; returns whether it held.
    pub fn run_until(
        &mut self,
        ns: u64,
        mut done: impl FnMut(&mut Ctx<'d>) -> bool,
    ) -> Result<bool, Stop> {
        let end = self.now.saturating_add(ns);
        loop {
            if done(self) {
                return Ok(true);
            }
            if self.now >= end {
                return Ok(false);
            }
            let next = self.next_time(end);
            self.step_to(next)?;
        }
    }

    fn run_until_time(&mut self, end: u64) -> Result<(), Stop> {
        while self.now < end {
            let next = self.next_time(end);
            self.step_to(next)?;
        }
        // Whatever is due at `end` itself.
        self.step_to(end)
    }

    /// The next time anything can happen, at most `end`.
    fn next_time(&self, end: u64) -> u64 {
        let mut next = end;
        let blind = self.now.saturating_add(BLIND_STEP_NS);
        next = next.min(self.next_dut.unwrap_or(blind).max(self.now + 1));
        for p in self.peers.iter().flatten() {
            if let Some(t) = p.link.poll_timeout() {
                next = next.min(t.as_nanos().max(self.now + 1));
            }
            for f in &p.wire {
                next = next.min(f.at_ns.max(self.now + 1));
                if let Some(first) = f.first_ns {
                    next = next.min(first.max(self.now + 1));
                }
            }
        }
        next
    }

    /// Moves everything to time `t`.
    fn step_to(&mut self, t: u64) -> Result<(), Stop> {
        self.steps += 1;
        if self.steps > self.event_budget {
            return Err(Stop::Budget(format!(
                "the case took more than {} steps of its simulation (each an advance of the \
                 device) and had reached {} ns of simulated time: the device, or the exchange it \
                 drives with the harness's peers, does not settle",
                self.event_budget, self.now
            )));
        }
        if t > self.limit_ns {
            return Err(Stop::Harness(format!(
                "the case ran past its simulated time limit of {} ns",
                self.limit_ns
            )));
        }
        self.now = self.now.max(t);
        let now = self.now;
        // The wires deliver what is due, in order of arrival.
        for port in 0..self.peers.len() {
            while let Some(p) = self.peers[port].as_mut() {
                let Some(i) = p
                    .wire
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| f.at_ns <= now)
                    .min_by_key(|(_, f)| (f.at_ns, f.seq))
                    .map(|(i, _)| i)
                else {
                    break;
                };
                let f = p.wire.remove(i);
                match f.dir {
                    Dir::FromDut => {
                        p.link.handle_frame(Instant::from_nanos(now), &f.bytes);
                    }
                    Dir::ToDut => {
                        let port = port as u16;
                        self.record(port, false, now, f.bytes.clone())?;
                        if let Some(l) = self.log.last_mut() {
                            l.first_ns = f.began_ns;
                        }
                        self.dut.frame(port, now, &f.bytes)?;
                    }
                }
            }
        }
        // Then the headers whose first bit has arrived: a frame ending now comes before the
        // header of the frame behind it on its wire.
        for port in 0..self.peers.len() {
            let Some(p) = self.peers[port].as_mut() else {
                continue;
            };
            let mut due: Vec<(u64, u64, u64, Vec<u8>)> = Vec::new();
            for f in p.wire.iter_mut() {
                if let Some(first) = f.first_ns
                    && first <= now
                {
                    f.first_ns = None;
                    f.began_ns = Some(now);
                    due.push((now, f.seq, f.at_ns, f.bytes.clone()));
                }
            }
            due.sort_by_key(|d| (d.0, d.1));
            for (t, _, end, bytes) in due {
                self.dut.header(port as u16, t, end, &bytes)?;
            }
        }
        // The peers act.
        for port in 0..self.peers.len() {
            self.pump_peer(port)?;
        }
        // The device acts.
        let Advanced { out, next_ns } = self.dut.advance(now)?;
        self.check_outputs(now, &out)?;
        // Frames come after the previous advance, in time order.
        let mut last = std::mem::replace(&mut self.advanced, now);
        self.next_dut = next_ns;
        let mfs = self.params.mfs.map_or(usize::MAX, usize::from);
        for o in out {
            match o {
                Output::Frame { port, time_ns, hex } => {
                    if time_ns < last || time_ns > now {
                        return Err(Stop::Harness(format!(
                            "advance to {now} ns returned a frame sent at {time_ns} ns, outside \
                             {last}..={now} ns (frames come in time order, after the previous \
                             advance and not after this one)"
                        )));
                    }
                    last = time_ns;
                    let bytes = from_hex("frame", &hex)?;
                    let wire = self.ser_ns(bytes.len());
                    if let Some(b) = self.busy_until.get_mut(usize::from(port)) {
                        *b = (*b).max(time_ns).saturating_add(wire);
                    }
                    self.record(port, true, time_ns, bytes.clone())?;
                    boundary::check_sent(&bytes, mfs, &self.desc.caps)?;
                    self.carry_from_dut(port, time_ns, bytes)?;
                }
                other => self.pending.push_back(normalised(other)?),
            }
        }
        Ok(())
    }

    /// Checks the outputs of one `advance` against the bounds of the boundary: at most
    /// [`MAX_OUTPUTS`] of them and [`MAX_ADVANCE_BYTES`] of frames and payloads, on ports the
    /// device has, with VCs and reasons the boundary defines.
    fn check_outputs(&self, now: u64, out: &[Output]) -> Result<(), Stop> {
        if out.len() > MAX_OUTPUTS {
            return Err(Stop::Harness(format!(
                "advance to {now} ns returned {} outputs, more than the {MAX_OUTPUTS} one advance \
                 may return",
                out.len()
            )));
        }
        let mut bytes = 0usize;
        for o in out {
            let (port, hex) = match o {
                Output::Frame { port, hex, .. } => (Some(*port), hex.len()),
                Output::Delivered { port, payload, .. } => (Some(*port), payload.len()),
                Output::Lost { port, payload, .. } => (Some(*port), payload.len()),
                Output::LinkUp { port } | Output::LinkDown { port, .. } => (Some(*port), 0),
                Output::Completion { data, .. } => (None, data.as_ref().map_or(0, String::len)),
            };
            bytes = bytes.saturating_add(hex / 2);
            if let Some(p) = port
                && p >= self.desc.ports
            {
                return Err(Stop::Harness(format!(
                    "advance to {now} ns returned an output on port {p}; the device has {} \
                     port{}",
                    self.desc.ports,
                    if self.desc.ports == 1 { "" } else { "s" }
                )));
            }
            boundary::check_output(o)
                .map_err(|why| Stop::Harness(format!("advance to {now} ns returned {why}")))?;
        }
        if bytes > MAX_ADVANCE_BYTES {
            return Err(Stop::Harness(format!(
                "advance to {now} ns returned {bytes} bytes of frames and payloads, more than the \
                 {MAX_ADVANCE_BYTES} one advance may return"
            )));
        }
        Ok(())
    }

    fn carry_from_dut(&mut self, port: u16, time_ns: u64, mut bytes: Vec<u8>) -> Result<(), Stop> {
        let wire = self.wire;
        let seq = self.next_seq();
        let Some(p) = self.peers.get_mut(usize::from(port)) else {
            return Err(Stop::Harness(format!(
                "the device sent a frame on port {port}, which it does not have"
            )));
        };
        let Some(p) = p.as_mut() else {
            self.raw[usize::from(port)].push_back((time_ns, bytes));
            return Ok(());
        };
        let at = time_ns + wire.serialise_ns(bytes.len()) + wire.delay_ns;
        let fault = match p.hook.as_mut() {
            Some(h) => h(Dir::FromDut, time_ns, &mut bytes),
            None => Fault::Pass,
        };
        push_with_fault(&mut p.wire, fault, (at, None), seq, Dir::FromDut, bytes);
        Ok(())
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn pump_peer(&mut self, port: usize) -> Result<(), Stop> {
        let now = self.now;
        let wire = self.wire;
        let cut_headers = self.cut_headers;
        let mut buf = std::mem::take(&mut self.buf);
        let mut seq = self.seq;
        let Some(p) = self.peers[port].as_mut() else {
            self.buf = buf;
            return Ok(());
        };
        let t = Instant::from_nanos(now);
        if p.link.poll_timeout().is_some_and(|d| d <= t) {
            p.link.handle_timeout(t);
        }
        drain_peer_events(p);
        // The peer sends while its wire is free.
        while p.free_to_dut_ns <= now {
            let Some(tx) = p
                .link
                .poll_transmit(t, &mut buf)
                .map_err(|e| Stop::Harness(format!("peer transmit: {e:?}")))?
            else {
                break;
            };
            let mut bytes = buf[..tx.len].to_vec();
            let start = p.free_to_dut_ns.max(now);
            let ser = wire.serialise_ns(bytes.len());
            p.free_to_dut_ns = start + ser;
            let fault = match p.hook.as_mut() {
                Some(h) => h(Dir::ToDut, start, &mut bytes),
                None => Fault::Pass,
            };
            seq += 1;
            let first = cut_headers.then_some(start + wire.delay_ns);
            push_with_fault(
                &mut p.wire,
                fault,
                (start + ser + wire.delay_ns, first),
                seq,
                Dir::ToDut,
                bytes,
            );
            drain_peer_events(p);
        }
        self.seq = seq;
        self.buf = buf;
        Ok(())
    }

    /// Submits `payload` on `vc` at the peer of `port`.
    pub fn peer_submit(&mut self, port: u16, vc: u8, payload: &[u8]) -> Result<(), Stop> {
        let vc = ethlink_protocol::Vc::new(vc).ok_or_else(|| Stop::Harness("bad vc".into()))?;
        self.peer(port)?
            .link
            .submit(vc, payload)
            .map_err(|e| Stop::Harness(format!("peer submit: {e:?}")))
    }

    /// Makes the peer of `port` stop draining (true) or drain everything it holds (false).
    /// A peer that stops holding every VC also stops holding the VCs of [`Ctx::peer_hold_vc`].
    pub fn peer_hold(&mut self, port: u16, hold: bool) -> Result<(), Stop> {
        let p = self.peer(port)?;
        p.hold = hold;
        if !hold {
            p.hold_vcs = 0;
            for (_, r) in std::mem::take(&mut p.held) {
                p.link
                    .release(r)
                    .map_err(|e| Stop::Harness(format!("peer release: {e:?}")))?;
            }
        }
        Ok(())
    }

    /// Makes the peer of `port` keep the payloads it receives on `vc` only (true), so that this
    /// VC's credits stop returning while the others flow, or drain what it keeps of `vc` (false).
    pub fn peer_hold_vc(&mut self, port: u16, vc: u8, hold: bool) -> Result<(), Stop> {
        let bit = 1u8
            .checked_shl(u32::from(vc))
            .ok_or_else(|| Stop::Harness(format!("no VC {vc}")))?;
        let p = self.peer(port)?;
        if hold {
            p.hold_vcs |= bit;
            return Ok(());
        }
        p.hold_vcs &= !bit;
        if p.hold {
            return Ok(());
        }
        let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut p.held)
            .into_iter()
            .partition(|(v, _)| *v == vc);
        p.held = rest;
        for (_, r) in mine {
            p.link
                .release(r)
                .map_err(|e| Stop::Harness(format!("peer release: {e:?}")))?;
        }
        Ok(())
    }

    /// Takes what the peer of `port` reported so far.
    pub fn peer_events(&mut self, port: u16) -> Result<Vec<PeerEvent>, Stop> {
        Ok(std::mem::take(&mut self.peer(port)?.events))
    }

    /// The payloads the peer of `port` received, in order, taken.
    pub fn peer_delivered(&mut self, port: u16) -> Result<Vec<(u8, Vec<u8>)>, Stop> {
        let mut out = Vec::new();
        let p = self.peer(port)?;
        p.events.retain(|e| match e {
            PeerEvent::Delivered { vc, payload } => {
                out.push((*vc, payload.clone()));
                false
            }
            _ => true,
        });
        Ok(out)
    }
}

/// Puts a frame on a wire as `fault` says: `at` is when its last bit would arrive, `first` when
/// its first would, for a frame whose header is given ahead.
fn push_with_fault(
    wire: &mut Vec<InFlight>,
    fault: Fault,
    (at, first): (u64, Option<u64>),
    seq: u64,
    dir: Dir,
    bytes: Vec<u8>,
) {
    let mut push = |at_ns, first_ns, bytes| {
        wire.push(InFlight {
            at_ns,
            first_ns,
            began_ns: None,
            seq,
            dir,
            bytes,
        });
    };
    match fault {
        Fault::Pass => push(at, first, bytes),
        Fault::Drop => {}
        Fault::Duplicate => {
            push(at, first, bytes.clone());
            // The second copy comes whole, right behind the first.
            push(at + 1, None, bytes);
        }
        Fault::Delay(ns) => push(at + ns, first.map(|f| f + ns), bytes),
        Fault::Stall(ns) => push(at + ns, first, bytes),
    }
}

fn drain_peer_events(p: &mut PeerEnd) {
    loop {
        let (event, release) = match p.link.poll_event() {
            None => return,
            Some(Event::LinkUp(_)) => (Some(PeerEvent::Up), None),
            Some(Event::LinkDown(_)) => (Some(PeerEvent::Down), None),
            Some(Event::Notice(_)) => (None, None),
            Some(Event::Delivered {
                vc,
                payload,
                release,
                ..
            }) => (
                Some(PeerEvent::Delivered {
                    vc: vc.value(),
                    payload: payload.to_vec(),
                }),
                Some((vc.value(), release)),
            ),
            Some(Event::Lost { vc, payload, .. }) => (
                Some(PeerEvent::Lost {
                    vc: vc.value(),
                    payload: payload.to_vec(),
                }),
                None,
            ),
        };
        p.events.extend(event);
        if let Some((vc, r)) = release {
            let by_vc = 1u8.checked_shl(u32::from(vc)).unwrap_or(0);
            if p.hold || p.hold_vcs & by_vc != 0 {
                p.held.push((vc, r));
            } else {
                // A release fails only for a token of an earlier incarnation: nothing to give.
                let _ = p.link.release(r);
            }
        }
    }
}

/// `o` with its hex in lower case, the form the cases compare, once checked to be hex.
fn normalised(mut o: Output) -> Result<Output, Stop> {
    let hex = match &mut o {
        Output::Delivered { payload, .. } | Output::Lost { payload, .. } => Some(payload),
        Output::Completion { data, .. } => data.as_mut(),
        Output::Frame { hex, .. } => Some(hex),
        Output::LinkUp { .. } | Output::LinkDown { .. } => None,
    };
    if let Some(h) = hex {
        // Decoded to check it, and written again (lower case) by the vectorised encoder: a loop
        // over the characters costs more in a test build than both.
        *h = crate::device::to_hex(&from_hex("an output's bytes", h)?);
    }
    Ok(o)
}

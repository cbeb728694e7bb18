//! The switch state machine (switch.md).

use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;
use core::convert::Infallible;
use core::fmt;

use ethlink_link::{
    BufferTooSmall, ConfigError, Event, Instant, Layout, Link, LostReason, Outgoing, Release,
    SharedFrame, SubmitError, Transmit,
};
use ethlink_protocol::fcs::FcsStatus;
use ethlink_protocol::{DataRepr, GpuId, PathId, Vc, WIRE_OVERHEAD, frame_len};

use crate::config::{Config, Mode};
use crate::counters::{Counters, PortCounters, bump};
use crate::routes::{RouteError, Routes, check_entry, path_hash};
use crate::timers::Timers;
use crate::voq::{Payload, Queued, Voqs};

mod aging;
mod cut;
mod pins;

pub use cut::FrameEnd;
use cut::Pending;
use pins::Pin;

//= docs/spec/switch.md#5-arbitration
//# SW-5-2 An egress port MUST offer ready frames of the response VCs (2 and 3, endpoint.md
//# EP-3-1) to its link before those of the request VCs (0 and 1).
/// VCs served first by an egress port (SW-5-2): the response VCs, then the request VCs, then any
/// further VCs.
const SERVICE_ORDER: [usize; 8] = [2, 3, 0, 1, 4, 5, 6, 7];

/// Frame buffers a switch keeps for reuse.
const POOL: usize = 64;

/// Keeps the buffer of a payload that left for reuse, within [`POOL`].
fn recycle(pool: &mut Vec<Vec<u8>>, payload: Outgoing) {
    if pool.len() < POOL {
        pool.push(payload.into_buffer());
    }
}

/// As [`recycle`] for a queued payload: only a buffer of the switch's own is kept; a frame still
/// held by reference is let go.
fn recycle_queued(pool: &mut Vec<Vec<u8>>, payload: Payload) {
    if let Payload::Laid(o) = payload {
        recycle(pool, o);
    }
}

/// A payload a port's link accepted: laid out in a buffer of the switch's own, or kept where
/// it lies in the frame's bytes (what the caller of `Switch::deliver` keeps of it).
#[derive(Debug)]
enum Accepted<K> {
    Laid(Outgoing),
    Kept(K),
}

/// A frame handed to an egress link and not yet sent: when it arrived and on which input.
#[derive(Debug, Clone, Copy)]
struct InLink {
    arrived: Instant,
    input: u16,
    /// A frame forwarded on its header (§6): its serial (0 for a frame that arrived whole before
    /// it was handed on), and whether its copy is to end with a stomped FCS.
    serial: u32,
    stomp: bool,
}

#[derive(Debug)]
struct Port {
    link: Link,
    up: bool,
    /// Per VC: the input to consider first for this egress (SW-5-1).
    rr: [u16; 8],
    /// Per VC: frames waiting in the VOQs toward this egress.
    waiting: [u32; 8],
    /// Per VC: the frames handed to this port's link and not sent yet, oldest first.
    in_link: [VecDeque<InLink>; 8],
    /// Set while the switch takes aged frames back from this port's link.
    aging: bool,
    /// When the link's timers last ran: a deadline at or before it that the link still
    /// reports is work for its wire, which the next poll of the port does.
    served: Option<Instant>,
    /// The frame the last poll of the port wrote ends with a stomped FCS (§6).
    stomped: bool,
    /// When its link last came UP (the path pins, §2.4).
    up_since: Instant,
}

/// An N-port EthLink switch.
///
/// Inputs are [`Switch::handle_frame`], [`Switch::handle_timeout`], [`Switch::port_up`] and
/// [`Switch::port_down`]; after any of them the caller takes the ports that may have something to
/// send with [`Switch::take_ready_ports`] and drains [`Switch::poll_transmit`] for those whose
/// wire is free, then asks [`Switch::poll_timeout`] when to call [`Switch::handle_timeout`].
pub struct Switch {
    cfg: Config,
    routes: Routes,
    ports: Vec<Port>,
    vcs: usize,
    /// Virtual output queues (SW-4-3).
    voq: Voqs<Queued>,
    /// Every deadline of the switch, one per key (see [`Timer`]): each port link's, each egress
    /// port's wake for a queue head that becomes ready, and each egress port's aging. A deadline
    /// that moves moves its entry, so no call scans every port and none meets a stale entry.
    timers: Timers,
    /// The keys of the deadlines due in [`Switch::handle_timeout`], reused.
    due: Vec<usize>,
    /// Inputs of one (egress, VC), reused by the scans over them.
    inputs: Vec<u16>,
    /// Ports whose link was called since their deadline was last read.
    touched: Vec<bool>,
    touched_list: Vec<u16>,
    ready: Vec<bool>,
    ready_list: Vec<u16>,
    counters: Counters,
    /// Buffers for the payloads received, reused (at most [`POOL`]).
    pool: Vec<Vec<u8>>,
    /// Where the ports' frames put their payload: every port's link has the same.
    layout: Layout,
    now: Instant,
    ser_ps_per_byte: f64,
    /// `max_residence` in nanoseconds.
    max_res_ns: u64,
    /// Frames taken back from a link for aging that are still young, to submit again.
    resubmit: Vec<(Vc, Outgoing, InLink)>,
    /// Per input port: the frame forwarded on its header whose end its link has not judged yet
    /// (cut-through, §6).
    pending: Vec<Option<Pending>>,
    /// The serial of the last frame forwarded on its header.
    serial: u32,
    /// The path pins (§2.4), `pin_buckets` of them.
    pins: Vec<Pin>,
    /// Their guard, nanoseconds.
    pin_guard_ns: u64,
}

impl fmt::Debug for Switch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Switch")
            .field("id", &self.cfg.id)
            .field("ports", &self.ports.len())
            .field("now", &self.now)
            .finish_non_exhaustive()
    }
}

impl Switch {
    /// Builds a switch as a reset leaves it (switch.md §9), its forwarding table written: no
    /// frame held, every counter zero, every port physically down until [`Switch::port_up`].
    //= docs/spec/switch.md#9-reset-and-identity
    //# SW-9-1 After a reset a switch MUST hold no frame.
    //= docs/spec/switch.md#9-reset-and-identity
    //# SW-9-2 After a reset every counter of Table SW-T3 and every value of Table SW-T4 MUST read
    //# zero.
    //= docs/spec/switch.md#9-reset-and-identity
    //# SW-9-3 After a reset a switch MUST keep every port's link end OFF until that port's
    //# physical link is up.
    pub fn new(cfg: Config, routes: Routes) -> Result<Self, ConfigError> {
        cfg.validate()?;
        //= docs/spec/switch.md#22-the-forwarding-table
        //# SW-2-5 A switch MUST accept, for every destination GPU id 0..=0xFFFE, an entry of 0 to
        //# 64 distinct egress ports.
        routes.check(cfg.ports).map_err(|e| ConfigError {
            field: "routes",
            value: match e {
                RouteError::TooManyPorts { ports } => ports as u64,
                RouteError::BadGroups { sum, .. } => sum as u64,
                RouteError::Duplicate { port } | RouteError::NoSuchPort { port, .. } => {
                    u64::from(port)
                }
            },
            rule: match e {
                RouteError::TooManyPorts { .. } => "an entry lists at most 64 ports",
                RouteError::Duplicate { .. } => "an entry lists a port once",
                RouteError::NoSuchPort { .. } => "a port of the switch",
                RouteError::BadGroups { .. } => "group sizes of at least 1 adding up to the ports",
            },
        })?;
        let n = usize::from(cfg.ports);
        let vcs = usize::from(cfg.link.vcs);
        let mut ports = Vec::with_capacity(n);
        for p in 0..cfg.ports {
            let link = Link::new(cfg.port_link(p))?;
            ports.push(Port {
                link,
                up: false,
                rr: [0; 8],
                waiting: [0; 8],
                in_link: Default::default(),
                aging: false,
                served: None,
                stomped: false,
                up_since: Instant::ZERO,
            });
        }
        let voq = Voqs::new(n, vcs);
        let layout = Layout::of(&cfg.port_link(0));
        Ok(Switch {
            routes,
            ports,
            vcs,
            voq,
            timers: Timers::with_keys(3 * n),
            due: Vec::new(),
            inputs: Vec::new(),
            touched: vec![false; n],
            touched_list: Vec::new(),
            ready: vec![false; n],
            ready_list: Vec::new(),
            counters: Counters {
                ports: vec![PortCounters::default(); n],
            },
            pool: Vec::new(),
            layout,
            now: Instant::ZERO,
            ser_ps_per_byte: 8000.0 / cfg.rate_gbps,
            max_res_ns: u64::try_from(cfg.max_residence.as_nanos()).unwrap_or(u64::MAX),
            resubmit: Vec::new(),
            pending: vec![None; n],
            serial: 0,
            pins: vec![Pin::default(); cfg.pin_buckets as usize],
            pin_guard_ns: cfg.pin_guard_ns(),
            cfg,
        })
    }

    /// Moves the switch's time to `now`: it never goes back, and never past the horizon.
    //= docs/spec/switch.md#1-model
    //# SW-1-1 A switch MUST keep link.md LINK-1-2 and LINK-1-3 for its own timers and deadlines
    //# (latency, residence, aging) as well as its ports' links
    fn take_time(&mut self, now: Instant) {
        self.now = self.now.max(now.within_horizon());
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The forwarding table.
    pub fn routes(&self) -> &Routes {
        &self.routes
    }

    /// Writes the entry of `dst` while the switch runs (SW-2-7, SW-2-8): frames received from
    /// now on are forwarded by the new entry; frames already received keep the egress port
    /// they were given. A refused entry leaves the table unchanged.
    pub fn set_route(&mut self, dst: GpuId, ports: &[u16]) -> Result<(), RouteError> {
        self.set_route_groups(dst, ports, &[])
    }

    /// Writes the entry of `dst` while the switch runs, as [`Switch::set_route`] does, with
    /// its ports divided into groups of preference of the sizes `groups` gives, most preferred
    /// first (switch.md §2.3); no sizes make one group.
    pub fn set_route_groups(
        &mut self,
        dst: GpuId,
        ports: &[u16],
        groups: &[u16],
    ) -> Result<(), RouteError> {
        check_entry(ports, Some(self.cfg.ports))?;
        //= docs/spec/switch.md#22-the-forwarding-table
        //# SW-2-7 A switch MUST let its forwarding table be written while it runs, one entry at
        //# a time, each write replacing the whole entry at once.
        self.routes.set_groups(dst, ports, groups)
    }

    /// The egress port the function of switch.md §2.1 gives now for a frame of this path, if
    /// any, before the path pins of §2.4.
    pub fn route(&self, src: GpuId, dst: GpuId, path: PathId, vc: Vc) -> Option<u16> {
        let h = path_hash(src, dst, path, vc);
        self.routes.choose(dst, h, |e| {
            self.ports.get(usize::from(e)).is_some_and(|x| x.up)
        })
    }

    /// Has every port's link defer the FCS of the DATA frames it hands out by reference
    /// ([`Link::defer_fcs`]): for an embedder whose wires give receivers the FCS status.
    pub fn defer_fcs(&mut self, on: bool) {
        for x in &mut self.ports {
            x.link.defer_fcs(on);
        }
    }

    /// The counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The link of port `p`.
    pub fn link(&self, p: usize) -> Option<&Link> {
        self.ports.get(p).map(|x| &x.link)
    }

    /// Frames waiting in the switch.
    pub fn queued(&self) -> usize {
        self.voq.len()
    }

    /// The key of port `p`'s deadline of kind `kind` in `timers`.
    fn key(&self, kind: Timer, p: usize) -> usize {
        kind as usize * self.ports.len() + p
    }

    /// Port `p`'s link was called: read its deadline before returning to the caller.
    fn touch(&mut self, p: usize) {
        if let Some(t) = self.touched.get_mut(p)
            && !*t
        {
            *t = true;
            self.touched_list.push(u16::try_from(p).unwrap_or(u16::MAX));
        }
    }

    /// Reads the deadlines of the links called since the last time.
    fn refresh(&mut self) {
        while let Some(p) = self.touched_list.pop() {
            let p = usize::from(p);
            if let Some(t) = self.touched.get_mut(p) {
                *t = false;
            }
            let Some(x) = self.ports.get(p) else { continue };
            let t = match (x.link.earliest_deadline(), x.served) {
                // Already served: it waits for the wire, not for a timer. The port was marked
                // when its timers ran, and is polled as soon as its wire is free.
                (Some(d), Some(s)) if d <= s => None,
                _ => x.link.poll_timeout(),
            };
            let k = self.key(Timer::Link, p);
            if self.timers.get(k) == t {
                // Unchanged: the heap stays as it is.
                continue;
            }
            match t {
                Some(t) => self.timers.set(k, t),
                None => {
                    self.timers.remove(k);
                }
            }
        }
    }

    fn mark(&mut self, p: usize) {
        self.touch(p);
        if let Some(r) = self.ready.get_mut(p)
            && !*r
        {
            *r = true;
            self.ready_list.push(u16::try_from(p).unwrap_or(u16::MAX));
        }
    }

    /// Moves the ports that may have something to send since the last call into `out`.
    pub fn take_ready_ports(&mut self, out: &mut Vec<u16>) {
        for &p in &self.ready_list {
            if let Some(r) = self.ready.get_mut(usize::from(p)) {
                *r = false;
            }
        }
        out.append(&mut self.ready_list);
    }

    /// The physical link of port `p` came up.
    pub fn port_up(&mut self, now: Instant, p: usize) {
        self.take_time(now);
        if let Some(x) = self.ports.get_mut(p) {
            x.link.physical_up(self.now);
            x.served = None;
        }
        self.drain(p);
        self.mark(p);
        self.refresh();
    }

    /// The physical link of port `p` went down.
    pub fn port_down(&mut self, now: Instant, p: usize) {
        self.take_time(now);
        if let Some(x) = self.ports.get_mut(p) {
            x.link.physical_down(self.now);
            x.served = None;
        }
        // A frame forwarded on its header loses its end with the wire.
        self.settle_stale(p);
        self.drain(p);
        self.mark(p);
        self.refresh();
    }

    /// A frame arrived on port `p`'s wire.
    pub fn handle_frame(&mut self, now: Instant, p: usize, bytes: &[u8]) {
        self.handle_frame_copied(now, p, bytes, None);
    }

    /// As [`Switch::handle_frame_fcs`] with the FCS judged (`Some`) or to be checked.
    fn handle_frame_copied(
        &mut self,
        now: Instant,
        p: usize,
        bytes: &[u8],
        fcs: Option<FcsStatus>,
    ) {
        let got = self.deliver(now, p, bytes, fcs, |_, _| None::<Infallible>);
        self.input(p, got, |never| match never {});
    }

    /// A frame from port `p`'s wire into its link. A DATA frame the link accepts straight from
    /// `bytes` is kept where it lies if `keep` (given its offset and length there) takes it;
    /// otherwise its payload is laid out for the egress links, the one copy of it in this
    /// switch.
    fn deliver<K>(
        &mut self,
        now: Instant,
        p: usize,
        bytes: &[u8],
        fcs: Option<FcsStatus>,
        keep: impl Fn(usize, usize) -> Option<K>,
    ) -> Option<(Vc, Accepted<K>, Release)> {
        self.take_time(now);
        let layout = self.layout;
        let mut got = None;
        let x = self.ports.get_mut(p)?;
        let pool = &mut self.pool;
        x.link
            .handle_frame_deliver(self.now, bytes, fcs, &mut |vc, _, payload, release| {
                let kept = ethlink_link::payload_offset(bytes, payload)
                    .and_then(|at| keep(at, payload.len()));
                let payload = match kept {
                    Some(k) => Accepted::Kept(k),
                    None => {
                        let buf = pool.pop().unwrap_or_default();
                        Accepted::Laid(layout.outgoing(buf, payload))
                    }
                };
                got = Some((vc, payload, release));
            });
        got
    }

    /// The rest of a frame's arrival on port `p`, after its link: the payload it delivered, if
    /// any, goes to its queue, a kept one as `held` makes it.
    fn input<K>(
        &mut self,
        p: usize,
        got: Option<(Vc, Accepted<K>, Release)>,
        held: impl FnOnce(K) -> Payload,
    ) {
        let got = got.map(|(vc, payload, release)| {
            let payload = match payload {
                Accepted::Laid(laid) => Payload::Laid(laid),
                Accepted::Kept(k) => held(k),
            };
            (vc, payload, release)
        });
        // The end of a frame forwarded on its header: settled with what the link made of it.
        let got = if self.pending.get(p).is_some_and(Option::is_some) {
            self.settle_cut(p, got)
        } else {
            got
        };
        if let Some((vc, payload, release)) = got {
            self.receive(p, vc, payload, release);
        }
        self.drain(p);
        self.mark(p);
        self.refresh();
    }

    /// As [`Switch::handle_frame`] for a frame whose FCS the port's MAC has already judged
    /// ([`Link::handle_frame_fcs`]).
    pub fn handle_frame_fcs(&mut self, now: Instant, p: usize, bytes: &[u8], fcs: FcsStatus) {
        self.handle_frame_copied(now, p, bytes, Some(fcs));
    }

    /// As [`Switch::handle_frame_fcs`] for a frame held by reference (a simulated wire's,
    /// [`SharedFrame`]): the switch keeps the reference, moved in, instead of copying the
    /// payload, and at the egress takes the buffer over once nobody else holds it (its sender
    /// lets it go when the frame is acknowledged), copying the payload only if someone still
    /// does. The bytes sent are the same.
    pub fn handle_frame_by_ref(
        &mut self,
        now: Instant,
        p: usize,
        frame: SharedFrame,
        fcs: FcsStatus,
    ) {
        let got = self.deliver(now, p, frame.as_bytes(), Some(fcs), |at, len| {
            Some((at, len))
        });
        // The frame, moved into its queue entry.
        self.input(p, got, |(at, len)| Payload::Held { frame, at, len });
    }

    /// When [`Switch::handle_timeout`] must be called next. A deadline after
    /// [`Instant::HORIZON`] is never reached (SW-1-1).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.peek().map(|(t, _)| t)
    }

    /// Time passed: runs the links' timers and wakes egress ports whose frames became ready.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.take_time(now);
        let n = self.ports.len();
        let mut due = core::mem::take(&mut self.due);
        due.clear();
        // Every deadline due, earliest first (ties by port); each kind is then served in that
        // order: the links' timers, then the wakes, then the aging.
        while let Some((_, k)) = self.timers.pop_due(self.now) {
            due.push(k);
        }
        for &p in due.iter().filter(|&&k| k < n) {
            if let Some(x) = self.ports.get_mut(p) {
                x.link.handle_timeout(self.now);
                x.served = Some(self.now);
            }
            self.drain(p);
            self.mark(p);
        }
        for &k in due.iter().filter(|&&k| (n..2 * n).contains(&k)) {
            self.mark(k - n);
        }
        for &k in due.iter().filter(|&&k| k >= 2 * n) {
            self.expire(k - 2 * n);
        }
        self.due = due;
        self.refresh();
    }

    /// The next frame for port `p`'s wire, written into `buf`. Call it only when the port's
    /// wire is free: the frame it writes goes out at once, and a frame ended with a stomped FCS
    /// ([`Switch::stomped`]) is taken back from the port's link as it is written (switch.md
    /// §6).
    pub fn poll_transmit(
        &mut self,
        now: Instant,
        p: usize,
        buf: &mut [u8],
    ) -> Result<Option<Transmit>, BufferTooSmall> {
        self.transmit(now, p, buf, false).map(|t| t.map(|(t, _)| t))
    }

    /// As [`Switch::poll_transmit`], with a DATA frame handed out by reference, shared with the
    /// port link's replay buffer, instead of written into `buf`
    /// ([`Link::poll_transmit_shared`]); control frames are written into `buf`.
    pub fn poll_transmit_shared(
        &mut self,
        now: Instant,
        p: usize,
        buf: &mut [u8],
    ) -> Result<Option<(Transmit, Option<SharedFrame>)>, BufferTooSmall> {
        self.transmit(now, p, buf, true)
    }

    /// Whether the DATA frame the last poll of port `p` wrote is one the switch ends with a
    /// stomped FCS (§6): it began to send it before the frame's end, which turned out bad, and
    /// its link has taken it back (LINK-3-12). [`Switch::poll_transmit`] has written the
    /// stomped FCS into the frame already; a frame handed out by reference
    /// ([`Switch::poll_transmit_shared`]) carries its correct FCS, which the wire replaces by
    /// its complement.
    pub fn stomped(&self, p: usize) -> bool {
        self.ports.get(p).is_some_and(|x| x.stomped)
    }

    fn transmit(
        &mut self,
        now: Instant,
        p: usize,
        buf: &mut [u8],
        shared: bool,
    ) -> Result<Option<(Transmit, Option<SharedFrame>)>, BufferTooSmall> {
        self.take_time(now);
        self.pump(p);
        let Some(x) = self.ports.get_mut(p) else {
            return Ok(None);
        };
        x.stomped = false;
        let t = if shared {
            x.link.poll_transmit_shared(self.now, buf)
        } else {
            x.link
                .poll_transmit(self.now, buf)
                .map(|t| t.map(|t| (t, None)))
        };
        // Buffers of frames the link is done with serve the next payloads received.
        if self.pool.len() < POOL
            && let Some(b) = x.link.spare_buffer()
        {
            self.pool.push(b);
        }
        if let Ok(Some((
            Transmit {
                data: Some((vc, _, false)),
                ..
            },
            _,
        ))) = t
        {
            // The first transmission of the oldest frame of this VC in the link: its residence
            // ends (SW-4-6).
            let v = vc.index();
            if let Some(f) = x.in_link.get_mut(v).and_then(VecDeque::pop_front) {
                let cut = f.serial != 0
                    && self
                        .pending
                        .get(usize::from(f.input))
                        .and_then(Option::as_ref)
                        .is_some_and(|pd| pd.serial == f.serial);
                let c = self.counters.ports.get_mut(p);
                if cut {
                    if let Some(c) = c {
                        bump(&mut c.tx_cut, v, 1);
                    }
                } else if let Some(m) = c.and_then(|c| c.residence_max_ns.get_mut(v)) {
                    // A frame begun before its last byte arrived has no residence (§1).
                    let res = self.now.as_nanos().saturating_sub(f.arrived.as_nanos());
                    *m = (*m).max(res);
                }
                if f.stomp {
                    //= docs/spec/switch.md#6-latency-and-cut-through
                    //# SW-6-2 A switch that has begun to send a frame whose FCS then turns out bad
                    //# (damaged, or stomped by the hop before) MUST end it with a stomped FCS
                    //# (WIRE-2.5-4).
                    //= docs/spec/switch.md#6-latency-and-cut-through
                    //# SW-6-12 A cut-through switch MUST NOT let its egress link begin a replay
                    //# while that link is sending a frame: a replay waits for the end of the
                    //# frame in flight, and a stomped frame is out of the replay buffer before it
                    //# starts.
                    // The copy is taken back as it is written, before any input could start a
                    // replay; and a port is polled only when its wire is free (the caller's
                    // part, `poll_transmit`), so nothing starts inside the frame.
                    if x.link.stomp_last().is_some() {
                        x.stomped = true;
                        if let Some(c) = self.counters.ports.get_mut(p) {
                            bump(&mut c.tx_stomped, v, 1);
                        }
                        if let Ok(Some((tx, None))) = &t
                            && let Some(frame) = buf.get_mut(..tx.len)
                        {
                            let body = frame.len().saturating_sub(ethlink_protocol::fcs::FCS_LEN);
                            let stomped = ethlink_protocol::fcs::stomped_bytes(
                                frame.get(..body).unwrap_or(&[]),
                            );
                            if let Some(fcs) = frame.get_mut(body..) {
                                fcs.copy_from_slice(&stomped);
                            }
                        }
                    }
                }
            }
        }
        self.drain(p);
        self.touch(p);
        self.refresh();
        t
    }

    /// Takes port `p`'s link events.
    fn drain(&mut self, p: usize) {
        loop {
            let Some(x) = self.ports.get_mut(p) else {
                return;
            };
            let Some(ev) = x.link.poll_event() else {
                return;
            };
            match ev {
                Event::LinkUp(_) => {
                    x.up = true;
                    x.up_since = self.now;
                    self.mark(p);
                }
                // A refused INIT or a slow initialisation: the link's counters keep it.
                Event::Notice(_) => {}
                Event::LinkDown(_) => {
                    //= docs/spec/switch.md#8-counters
                    //# SW-8-4 A switch MUST keep its counters and the values of Table SW-T4 when a
                    //# port's link goes down or re-initialises
                    x.up = false;
                    x.link.withdraw();
                    self.flush_egress(p);
                    //= docs/spec/switch.md#7-frames-a-switch-cannot-forward
                    //# SW-7-7 Frames already received on a port whose link goes down or
                    //# re-initialises MUST be forwarded as any other frame: their input link
                    //# accepted them (LINK-6-4).
                    // They stay in the VOQs with their claims; the link holds its INIT_ECHO
                    // until the last claim is given back (LINK-2-18).
                }
                Event::Lost {
                    vc,
                    reason,
                    payload,
                } => {
                    let v = vc.index();
                    // Every reason but unknown fate is a frame the link never sent: the oldest
                    // of its VC in the link.
                    let meta = if reason == LostReason::UnknownFate {
                        None
                    } else {
                        x.in_link.get_mut(v).and_then(VecDeque::pop_front)
                    };
                    let Some(c) = self.counters.ports.get_mut(p) else {
                        continue;
                    };
                    match reason {
                        LostReason::Withdrawn if x.aging => {
                            let Some(m) = meta else { continue };
                            if self.now.as_nanos().saturating_sub(m.arrived.as_nanos())
                                > self.max_res_ns
                            {
                                //= docs/spec/switch.md#4-buffers-losslessness-and-lifetime
                                //# SW-4-7 A frame whose residence exceeds `max_residence` MUST
                                //# be discarded and counted in `discard_aged` of the port and VC
                                //# it was received on
                                if let Some(ci) = self.counters.ports.get_mut(usize::from(m.input))
                                {
                                    bump(&mut ci.discard_aged, v, 1);
                                }
                            } else {
                                let b = self.pool.pop().unwrap_or_default();
                                self.resubmit
                                    .push((vc, self.layout.outgoing(b, payload), m));
                            }
                        }
                        LostReason::ExceedsPeerMfs | LostReason::VcNotAgreed => {
                            //= docs/spec/switch.md#7-frames-a-switch-cannot-forward
                            //# SW-7-5 A frame whose egress port's link cannot carry it (longer
                            //# than the MFS agreed on that link, or on a VC that link did not
                            //# agree) MUST be discarded and counted in `discard_egress_refused`
                            //# of the egress port and VC.
                            bump(&mut c.discard_egress_refused, v, 1);
                        }
                        _ => {
                            //= docs/spec/switch.md#7-frames-a-switch-cannot-forward
                            //# SW-7-3 Frames waiting for an egress port whose link goes down, and
                            //# frames its link reports of unknown fate or withdrawn because the
                            //# port went down, MUST be discarded and counted as lost to the port
                            //# (discard_port_down); the endpoints' deadlines end or retry their
                            //# operations (TXN-5-4).
                            bump(&mut c.discard_port_down, v, 1);
                        }
                    }
                }
                Event::Delivered {
                    vc,
                    payload,
                    release,
                    ..
                } => {
                    let buf = self.pool.pop().unwrap_or_default();
                    let payload = Payload::Laid(self.layout.outgoing(buf, payload));
                    self.receive(p, vc, payload, release);
                }
            }
        }
    }

    /// Discards every frame waiting for egress port `e` (SW-7-3).
    fn flush_egress(&mut self, e: usize) {
        let mut inputs = core::mem::take(&mut self.inputs);
        for v in 0..self.vcs {
            self.voq.inputs(e, v, &mut inputs);
            for i in inputs.iter().copied().map(usize::from) {
                while let Some(f) = self.voq.pop_front(e, v, i) {
                    if f.release.is_none() {
                        // Forwarded on its header, not accepted yet: received as any frame if
                        // its input link accepts it.
                        self.cut_left(i, false);
                        recycle_queued(&mut self.pool, f.payload);
                        continue;
                    }
                    self.leave(i, v, f.payload.len());
                    //= docs/spec/switch.md#7-frames-a-switch-cannot-forward
                    //# SW-7-4 Every discarded frame's credits MUST be returned at once.
                    if let Some(x) = self.ports.get_mut(i)
                        && let Some(release) = f.release
                    {
                        let _ = x.link.release(release);
                    }
                    self.mark(i);
                    if let Some(c) = self.counters.ports.get_mut(e) {
                        bump(&mut c.discard_port_down, v, 1);
                    }
                    recycle_queued(&mut self.pool, f.payload);
                }
            }
            if let Some(x) = self.ports.get_mut(e)
                && let Some(w) = x.waiting.get_mut(v)
            {
                *w = 0;
            }
        }
        self.inputs = inputs;
    }

    /// A frame left the buffer of input `i`, VC `v`.
    fn leave(&mut self, i: usize, v: usize, len: usize) {
        if let Some(h) = self
            .counters
            .ports
            .get_mut(i)
            .and_then(|c| c.held_bytes.get_mut(v))
        {
            *h = h.saturating_sub(len as u64);
        }
    }

    /// A DATA frame received on input `i`: its link delivered it whole, with a good FCS.
    //= docs/spec/switch.md#6-latency-and-cut-through
    //# SW-6-6 A switch that does not announce CUT_THROUGH MUST check a frame's FCS before it
    //# begins to send it.
    //= docs/spec/switch.md#6-latency-and-cut-through
    //# SW-6-3 A switch MUST NOT send a frame received with a bad FCS other than ended by a
    //# stomped FCS.
    //= docs/spec/switch.md#6-latency-and-cut-through
    //# SW-6-4 A switch MUST NOT keep a frame received with a bad FCS to send it again
    // The input link hands over only frames whose FCS it has checked (it discards and NACKs a
    // damaged one, and discards a stomped one, WIRE-2.5-3, WIRE-2.5-5): a frame received here
    // is whole and good. The only frames sent before their FCS is known are those forwarded on
    // their header in cut-through mode (`cut.rs`), whose copy ends stomped unless their input
    // link accepts them; the copy of a bad frame is never kept, and its replay, accepted later,
    // arrives here as any frame.
    fn receive(&mut self, i: usize, vc: Vc, payload: Payload, release: Release) {
        let v = vc.index();
        let len = payload.len();
        self.count_rx(i, v, len);
        let repr = match DataRepr::parse(payload.bytes()) {
            Ok(r) => r,
            Err(_) => {
                //= docs/spec/switch.md#7-frames-a-switch-cannot-forward
                //# SW-7-1 A DATA frame whose network header is malformed (WIRE-5-3) MUST be
                //# discarded and counted.
                if let Some(c) = self.counters.ports.get_mut(i) {
                    bump(&mut c.discard_malformed, v, 1);
                }
                self.discard(i, payload, Some(release));
                return;
            }
        };
        //= docs/spec/switch.md#2-forwarding
        //# SW-2-1 A switch MUST forward a DATA frame to an egress port that its forwarding table
        //# lists for the frame's destination GPU.
        //= docs/spec/switch.md#2-forwarding
        //# SW-2-3 An egress port whose link is not UP MUST NOT be chosen while the table lists
        //# another port for the destination whose link is UP.
        //= docs/spec/switch.md#21-the-choice-among-equal-ports
        //# SW-2-4 When an entry of one group lists more than one port, the egress port MUST be the
        //# one the function of this section gives for the frame's source GPU, destination GPU, path
        //# id and VC and the link states of the listed ports. (1.2: "of one group"; an entry of
        //# several groups is SW-2-9. 1.3: a path whose bucket is busy keeps its port, §2.4, SW-2-11
        //# and SW-2-12.)
        //= docs/spec/wire.md#5-data-frames-the-network-header
        //# WIRE-5-4 A switch MUST forward a DATA frame on its destination GPU id: to one of the
        //# egress ports its forwarding table lists for that destination, and when it lists several,
        //# to the one chosen by a fixed function of the source GPU id, the destination GPU id, the
        //# path id and the VC, so that every frame of one path and VC takes the same egress port
        //# (switch.md SW-2-4, whose §2.1 writes the function out). (1.1: the source GPU id was
        //# missing from the inputs.)
        let h = path_hash(repr.src, repr.dst, repr.path, vc);
        let egress = self.pinned(h, repr.dst);
        let Some(e) = egress.map(usize::from) else {
            //= docs/spec/switch.md#7-frames-a-switch-cannot-forward
            //# SW-7-2 A DATA frame for a GPU the table does not list, or all of whose listed
            //# egress ports are down, MUST be discarded and counted as unroutable.
            if let Some(c) = self.counters.ports.get_mut(i) {
                bump(&mut c.discard_unroutable, v, 1);
            }
            self.discard(i, payload, Some(release));
            return;
        };
        //= docs/spec/switch.md#6-latency-and-cut-through
        //# SW-6-1 A frame MUST NOT begin to leave its egress port before latency has passed since
        //# it began to arrive (cut-through: since its first bit, which is its last bit's arrival
        //# less its serialisation time at rate) or since it arrived whole (store-and-forward).
        //# (1.3: 1.2 said "handed to its egress port's link", an instant inside the switch; the
        //# first bit on the egress wire is what a port observes, and never comes earlier.)
        let lat = u64::try_from(self.cfg.latency.as_nanos()).unwrap_or(u64::MAX);
        let start = match self.cfg.mode {
            Mode::StoreAndForward => self.now.as_nanos(),
            Mode::CutThrough => {
                let wire = frame_len(ethlink_protocol::ETH_HEADER_LEN, len) + WIRE_OVERHEAD;
                let ser = (wire as f64 * self.ser_ps_per_byte / 1000.0) as u64;
                self.now.as_nanos().saturating_sub(ser)
            }
        };
        let ready = Instant::from_nanos(start.saturating_add(lat)).max(self.now);
        self.hold(i, v, len);
        //= docs/spec/switch.md#4-buffers-losslessness-and-lifetime
        //# SW-4-3 A frame waiting for an egress port that cannot take it MUST NOT hold back a
        //# frame received after it on the same input port and VC for another egress port that
        //# can take it.
        //= docs/spec/switch.md#3-order
        //# SW-3-1 Frames received on one input port and VC and forwarded to one egress port MUST
        //# be handed to the egress port's link in the order they were received.
        //= docs/spec/switch.md#22-the-forwarding-table
        //# SW-2-8 A frame MUST leave by the egress port chosen when it was received, even if the
        //# table changes before it leaves.
        //= docs/spec/switch.md#4-buffers-losslessness-and-lifetime
        //# SW-4-4 A switch MUST NOT discard a frame its input link accepted for want of buffer
        // The frame is queued whatever the queues hold: its input link's credits bound them.
        let head = self.voq.push_back(
            e,
            v,
            i,
            Queued {
                payload,
                release: Some(release),
                ready,
                arrived: self.now,
            },
        );
        self.arm(e, self.now);
        if let Some(w) = self.ports.get_mut(e).and_then(|x| x.waiting.get_mut(v)) {
            *w += 1;
        }
        if ready > self.now {
            // A queue hands over its head only: a new head needs a wake; a frame behind it is
            // looked at when it becomes the head (`pump`, `expire`), which wakes the port then
            // if the frame is not ready yet.
            if head {
                self.wake(e, ready);
            }
        } else {
            self.mark(e);
        }
    }

    /// Makes sure egress port `e` is woken no later than `t`.
    fn wake(&mut self, e: usize, t: Instant) {
        let k = self.key(Timer::Wake, e);
        self.timers.lower(k, t);
    }

    /// Drops a frame received on input `i` and returns its credits; the caller has counted it
    /// in one discard counter.
    //= docs/spec/switch.md#7-frames-a-switch-cannot-forward
    //# SW-7-6 A switch MUST count every frame it discards in exactly one of the discard counters
    //# of Table SW-T3.
    fn discard(&mut self, i: usize, payload: Payload, release: Option<Release>) {
        //= docs/spec/switch.md#7-frames-a-switch-cannot-forward
        //# SW-7-4 Every discarded frame's credits MUST be returned at once.
        if let Some(x) = self.ports.get_mut(i)
            && let Some(release) = release
        {
            let _ = x.link.release(release);
        }
        recycle_queued(&mut self.pool, payload);
        self.mark(i);
    }

    /// Whether a frame toward egress `e` on VC `v` is ready to go.
    fn has_ready(&self, e: usize, v: usize) -> bool {
        let mut found = false;
        self.voq.round(e, v, 0, |i| {
            found = self.voq.front(e, v, i).is_some_and(|f| f.ready <= self.now);
            !found
        });
        found
    }

    /// Hands ready frames to egress port `e`'s link: response VCs first, inputs round-robin,
    /// at most `egress_depth` queued per VC.
    fn pump(&mut self, e: usize) {
        if self
            .timers
            .get(self.key(Timer::Age, e))
            .is_some_and(|t| t <= self.now)
        {
            self.expire(e);
        }
        let n = self.ports.len();
        let depth = self.cfg.egress_depth as usize;
        let now = self.now;
        let vcs = self.vcs;
        // Set when a response VC still has ready frames its link cannot take yet: the request
        // VCs then wait, so that the link's own round-robin cannot put them first (SW-5-2).
        let mut responses_blocked = false;
        for &v in SERVICE_ORDER.iter().filter(|&&v| v < vcs) {
            if responses_blocked && v < 2 {
                continue;
            }
            loop {
                let Some(x) = self.ports.get(e) else { return };
                if !x.up || x.waiting.get(v).copied().unwrap_or(0) == 0 {
                    break;
                }
                //= docs/spec/switch.md#5-arbitration
                //# SW-5-3 A switch MUST hand an egress link no more than `egress_depth` frames
                //# of one VC beyond those it is sending
                let vcx = Vc::new(u8::try_from(v).unwrap_or(0)).unwrap_or_default();
                if x.link.queued(vcx).0 >= depth {
                    if (2..4).contains(&v) && self.has_ready(e, v) {
                        responses_blocked = true;
                    }
                    break;
                }
                //= docs/spec/switch.md#5-arbitration
                //# SW-5-1 For each egress port and VC, a switch MUST take ready frames from the
                //# input ports round-robin: after taking from input *i* it next considers input
                //# *i*+1.
                // Heads unchanged since a look found none ready before a time still to come:
                // the same look would find the same, and ask for the same wake.
                let quiet = self.voq.quiet_until(e, v);
                if now < quiet {
                    self.wake(e, quiet);
                    break;
                }
                let first = usize::from(x.rr.get(v).copied().unwrap_or(0));
                let mut pick = None;
                let mut later: Option<Instant> = None;
                let voq = &self.voq;
                voq.round(e, v, first, |i| {
                    let Some(head) = voq.front(e, v, i) else {
                        return true;
                    };
                    if head.ready <= now {
                        pick = Some(i);
                        return false;
                    }
                    later = Some(later.map_or(head.ready, |l| l.min(head.ready)));
                    true
                });
                let Some(i) = pick else {
                    if let Some(t) = later {
                        self.voq.set_quiet(e, v, t);
                        self.wake(e, t);
                    }
                    break;
                };
                let Some(f) = self.voq.pop_front(e, v, i) else {
                    break;
                };
                let Queued {
                    payload,
                    release,
                    ready,
                    arrived,
                } = f;
                let len = payload.len();
                let payload = payload.into_outgoing(self.layout, &mut self.pool);
                let Some(x) = self.ports.get_mut(e) else {
                    return;
                };
                //= docs/spec/switch.md#2-forwarding
                //# SW-2-2 A switch MUST NOT change the network header or the transactions of a
                //# frame it forwards; it sends them behind its own Ethernet and link headers.
                match x.link.submit_outgoing(vcx, payload) {
                    Ok(()) => {}
                    Err((SubmitError::QueueFull { .. }, payload)) => {
                        self.voq.push_front(
                            e,
                            v,
                            i,
                            Queued {
                                payload: Payload::Laid(payload),
                                release,
                                ready,
                                arrived,
                            },
                        );
                        break;
                    }
                    Err((_, payload)) => {
                        //= docs/spec/switch.md#7-frames-a-switch-cannot-forward
                        //# SW-7-5 A frame whose egress port's link cannot carry it (longer than
                        //# the MFS agreed on that link, or on a VC that link did not agree) MUST
                        //# be discarded and counted in `discard_egress_refused` of the egress
                        //# port and VC.
                        if let Some(w) = x.waiting.get_mut(v) {
                            *w = w.saturating_sub(1);
                        }
                        if release.is_none() {
                            // Not accepted yet: counted, if it is, when received again.
                            self.cut_left(i, false);
                            recycle(&mut self.pool, payload);
                            continue;
                        }
                        if let Some(c) = self.counters.ports.get_mut(e) {
                            bump(&mut c.discard_egress_refused, v, 1);
                        }
                        self.leave(i, v, len);
                        self.discard(i, Payload::Laid(payload), release);
                        continue;
                    }
                }
                if let Some(w) = x.waiting.get_mut(v) {
                    *w = w.saturating_sub(1);
                }
                if let Some(r) = x.rr.get_mut(v) {
                    *r = u16::try_from((i + 1) % n).unwrap_or(0);
                }
                let Some(release) = release else {
                    // Forwarded on its header, not accepted yet: counted and its credits
                    // returned when its input link accepts it; its copy ends stomped if it
                    // does not (§6).
                    let pd = self.cut_left(i, true);
                    if let Some(q) = self.ports.get_mut(e).and_then(|x| x.in_link.get_mut(v)) {
                        q.push_back(InLink {
                            arrived,
                            input: u16::try_from(i).unwrap_or(u16::MAX),
                            serial: pd.map_or(0, |p| p.serial),
                            stomp: pd.is_some_and(|p| !p.good),
                        });
                    }
                    continue;
                };
                if let Some(q) = x.in_link.get_mut(v) {
                    q.push_back(InLink {
                        arrived,
                        input: u16::try_from(i).unwrap_or(u16::MAX),
                        serial: 0,
                        stomp: false,
                    });
                }
                //= docs/spec/switch.md#8-counters
                //# SW-8-5 A switch MUST count a frame in `tx_frames` of its egress port once the
                //# frame has been handed to that port's link and accepted by its input link, and
                //# MUST NOT count in `tx_frames` a frame whose copy it ends with a stomped FCS.
                if let Some(c) = self.counters.ports.get_mut(e) {
                    bump(&mut c.tx_frames, v, 1);
                    bump(&mut c.tx_bytes, v, len as u64);
                }
                //= docs/spec/switch.md#4-buffers-and-losslessness
                //# SW-4-1 A switch MUST keep a received frame's credits until the frame has been
                //# handed to its egress port's link, and only then return them (LINK-5-4).
                self.leave(i, v, len);
                if let Some(xi) = self.ports.get_mut(i) {
                    let _ = xi.link.release(release);
                }
                self.mark(i);
            }
        }
    }
}

/// The kinds of deadline a switch keeps per port, in the order [`Switch::handle_timeout`]
/// serves them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timer {
    /// The port's link's own deadline.
    Link = 0,
    /// The egress port has a queue head that becomes ready (SW-6-1).
    Wake = 1,
    /// The egress port's oldest frame ages (SW-4-7).
    Age = 2,
}

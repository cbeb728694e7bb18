//! The switch state machine (switch.md).

use alloc::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};
use alloc::vec;
use alloc::vec::Vec;
use core::cmp::Reverse;
use core::fmt;

use ethlink_link::{
    BufferTooSmall, Config as LinkConfig, ConfigError, Duration, Event, Instant, Link, Release,
    SubmitError, Transmit,
};
use ethlink_protocol::{DataRepr, GpuId, MacAddr, Vc, WIRE_OVERHEAD, frame_len};

//= docs/spec/switch.md#5-arbitration
//# SW-5-2 An egress port MUST offer ready frames of the response VCs (2 and 3, endpoint.md
//# EP-3-1) to its link before those of the request VCs (0 and 1).
/// VCs served first by an egress port (SW-5-2): the response VCs, then the request VCs, then any
/// further VCs.
const SERVICE_ORDER: [usize; 8] = [2, 3, 0, 1, 4, 5, 6, 7];

/// When a frame may leave (SW-6-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// `latency` after its first bit arrived.
    #[default]
    CutThrough,
    /// `latency` after its last bit arrived.
    StoreAndForward,
}

/// Configuration of a switch. [`Config::default`] gives the defaults of switch.md §1.1.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// An id that makes the ports' MAC addresses and nonces unique in a fabric.
    pub id: u16,
    /// Ports, 1..=1024.
    pub ports: u16,
    /// Port-to-port latency, at most 10 us.
    pub latency: Duration,
    /// Cut-through or store-and-forward.
    pub mode: Mode,
    /// Line rate of every port, Gb/s, for the cut-through timing.
    pub rate_gbps: f64,
    /// Frames of one VC an egress link may hold queued, 1..=64.
    pub egress_depth: u32,
    /// Every port's link; `rx_credits` is the input buffer of each VC.
    pub link: LinkConfig,
}

impl Default for Config {
    fn default() -> Self {
        let link = LinkConfig {
            // Frames wait in the switch's own queues, not the link's (SW-5-3).
            tx_queue_frames: 64,
            tx_queue_bytes: 64 * 9216,
            ..LinkConfig::default()
        };
        Config {
            id: 0,
            ports: 64,
            latency: Duration::from_nanos(250),
            mode: Mode::CutThrough,
            rate_gbps: 400.0,
            egress_depth: 2,
            link,
        }
    }
}

impl Config {
    /// Checks the parameters against switch.md §1.1 and the link's against link.md §1.1.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field, value, rule| Err(ConfigError { field, value, rule });
        if !(1..=1024).contains(&self.ports) {
            return err("ports", self.ports.into(), "must be 1..=1024");
        }
        let lat = u64::try_from(self.latency.as_nanos()).unwrap_or(u64::MAX);
        if lat > 10_000 {
            return err("latency", lat, "must be at most 10 us");
        }
        if !(self.rate_gbps.is_finite() && self.rate_gbps > 0.0) {
            return err("rate_gbps", 0, "must be a positive number");
        }
        if !(1..=64).contains(&self.egress_depth) {
            return err("egress_depth", self.egress_depth.into(), "must be 1..=64");
        }
        self.link.validate()
    }

    /// The link configuration of port `p`: a locally administered MAC 02:01:id:id:p:p and its
    /// own nonce seed.
    pub fn port_link(&self, p: u16) -> LinkConfig {
        let mut l = self.link.clone();
        let [a, b] = self.id.to_be_bytes();
        let [c, d] = p.to_be_bytes();
        l.mac = MacAddr([0x02, 0x01, a, b, c, d]);
        l.nonce_seed = self
            .link
            .nonce_seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(0x5157_0000_0000 | u64::from(self.id) << 16 | u64::from(p));
        l
    }
}

/// The forwarding table: for each destination GPU, the egress ports that lead to it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Routes {
    by_dst: Vec<Vec<u16>>,
}

impl Routes {
    /// An empty table.
    pub fn new() -> Self {
        Routes::default()
    }

    /// Adds `port` as an egress port toward `dst` (once; order kept).
    pub fn add(&mut self, dst: GpuId, port: u16) {
        let i = usize::from(dst.value());
        if self.by_dst.len() <= i {
            self.by_dst.resize(i + 1, Vec::new());
        }
        if let Some(v) = self.by_dst.get_mut(i)
            && !v.contains(&port)
        {
            v.push(port);
        }
    }

    /// The egress ports toward `dst`.
    pub fn ports(&self, dst: GpuId) -> &[u16] {
        self.by_dst
            .get(usize::from(dst.value()))
            .map_or(&[], Vec::as_slice)
    }

    /// Destinations with at least one port.
    pub fn destinations(&self) -> usize {
        self.by_dst.iter().filter(|v| !v.is_empty()).count()
    }
}

//= docs/spec/switch.md#8-counters
//# SW-8-1 A switch MUST count, per port: DATA frames and bytes received and sent per VC; frames
//# discarded by reason (malformed, unroutable, port down, want of buffer); and the highest bytes
//# held for each input port and VC.
/// Counters of one port (SW-8-1). Arrays are per VC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PortCounters {
    /// DATA frames received on this port.
    pub rx_frames: [u64; 8],
    /// Their payload bytes (network header and transactions).
    pub rx_bytes: [u64; 8],
    /// DATA frames handed to this port's link to send.
    pub tx_frames: [u64; 8],
    /// Their payload bytes.
    pub tx_bytes: [u64; 8],
    /// Received frames with a malformed network header (SW-7-1).
    pub malformed: u64,
    /// Received frames for a destination without an UP egress port (SW-7-2).
    pub unroutable: u64,
    /// Frames lost to this port going down, queued for it or of unknown fate on it (SW-7-3).
    pub lost_port_down: u64,
    /// Frames dropped for want of buffer (SW-4-1: always 0).
    pub buffer_drops: u64,
    /// Bytes received on this port and VC waiting in the switch now.
    pub held_bytes: [u64; 8],
    /// Highest `held_bytes` (SW-4-2).
    pub held_max_bytes: [u64; 8],
}

/// Counters of a switch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Counters {
    /// Per port.
    pub ports: Vec<PortCounters>,
}

impl Counters {
    /// Frames forwarded (handed to an egress link) over all ports and VCs.
    pub fn forwarded(&self) -> u64 {
        self.ports.iter().flat_map(|p| p.tx_frames).sum()
    }

    /// Frames dropped for want of buffer over all ports (SW-4-2).
    pub fn buffer_drops(&self) -> u64 {
        self.ports.iter().map(|p| p.buffer_drops).sum()
    }

    /// Frames discarded for any reason over all ports.
    pub fn discarded(&self) -> u64 {
        self.ports
            .iter()
            .map(|p| p.malformed + p.unroutable + p.lost_port_down + p.buffer_drops)
            .sum()
    }

    /// Highest bytes held for any input port and VC.
    pub fn held_max_bytes(&self) -> u64 {
        self.ports
            .iter()
            .flat_map(|p| p.held_max_bytes)
            .max()
            .unwrap_or(0)
    }
}

#[derive(Debug)]
struct Queued {
    payload: Vec<u8>,
    release: Release,
    ready: Instant,
}

/// The virtual output queues (SW-4-3), kept sparse: a queue exists once an input has sent a frame
/// toward an egress port on a VC, and each (egress, VC) knows which inputs have frames waiting.
#[derive(Debug, Default)]
struct Voqs {
    queues: BTreeMap<(u16, u8, u16), VecDeque<Queued>>,
    /// Per `egress * vcs + vc`: the inputs with a frame waiting.
    active: Vec<BTreeSet<u16>>,
    vcs: usize,
    len: usize,
}

impl Voqs {
    fn new(ports: usize, vcs: usize) -> Self {
        Voqs {
            queues: BTreeMap::new(),
            active: vec![BTreeSet::new(); ports * vcs],
            vcs,
            len: 0,
        }
    }

    fn key(e: usize, v: usize, i: usize) -> (u16, u8, u16) {
        (
            u16::try_from(e).unwrap_or(u16::MAX),
            u8::try_from(v).unwrap_or(u8::MAX),
            u16::try_from(i).unwrap_or(u16::MAX),
        )
    }

    fn active(&self, e: usize, v: usize) -> Option<&BTreeSet<u16>> {
        self.active.get(e * self.vcs + v)
    }

    fn front(&self, e: usize, v: usize, i: usize) -> Option<&Queued> {
        self.queues
            .get(&Self::key(e, v, i))
            .and_then(VecDeque::front)
    }

    fn push_back(&mut self, e: usize, v: usize, i: usize, q: Queued) {
        self.queues
            .entry(Self::key(e, v, i))
            .or_default()
            .push_back(q);
        self.mark(e, v, i);
    }

    fn push_front(&mut self, e: usize, v: usize, i: usize, q: Queued) {
        self.queues
            .entry(Self::key(e, v, i))
            .or_default()
            .push_front(q);
        self.mark(e, v, i);
    }

    fn mark(&mut self, e: usize, v: usize, i: usize) {
        self.len += 1;
        if let Some(a) = self.active.get_mut(e * self.vcs + v) {
            a.insert(u16::try_from(i).unwrap_or(u16::MAX));
        }
    }

    fn pop_front(&mut self, e: usize, v: usize, i: usize) -> Option<Queued> {
        let q = self.queues.get_mut(&Self::key(e, v, i))?;
        let f = q.pop_front()?;
        self.len -= 1;
        if q.is_empty()
            && let Some(a) = self.active.get_mut(e * self.vcs + v)
        {
            a.remove(&u16::try_from(i).unwrap_or(u16::MAX));
        }
        Some(f)
    }
}

#[derive(Debug)]
struct Port {
    link: Link,
    up: bool,
    /// Per VC: the input to consider first for this egress (SW-5-1).
    rr: [u16; 8],
    /// Per VC: frames waiting in the VOQs toward this egress.
    waiting: [u32; 8],
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
    voq: Voqs,
    wake: BinaryHeap<Reverse<(Instant, u16)>>,
    /// Each port link's deadline as last seen, and a heap of them (entries whose time no longer
    /// matches are stale and skipped), so that no call scans every port.
    link_deadline: Vec<Option<Instant>>,
    link_timers: BinaryHeap<Reverse<(Instant, u16)>>,
    /// Ports whose link was called since their deadline was last read.
    touched: Vec<bool>,
    touched_list: Vec<u16>,
    ready: Vec<bool>,
    ready_list: Vec<u16>,
    counters: Counters,
    pool: Vec<Vec<u8>>,
    now: Instant,
    ser_ps_per_byte: f64,
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

/// The fixed per-path mix of SW-2-1.
fn path_hash(src: u16, dst: u16, path: u8, vc: u8) -> u64 {
    let mut z =
        (u64::from(src) << 32 | u64::from(dst) << 16 | u64::from(path) << 8 | u64::from(vc))
            .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Switch {
    /// Builds a switch with its forwarding table; every port is physically down until
    /// [`Switch::port_up`].
    pub fn new(cfg: Config, routes: Routes) -> Result<Self, ConfigError> {
        cfg.validate()?;
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
            });
        }
        let voq = Voqs::new(n, vcs);
        Ok(Switch {
            routes,
            ports,
            vcs,
            voq,
            wake: BinaryHeap::new(),
            link_deadline: vec![None; n],
            link_timers: BinaryHeap::new(),
            touched: vec![false; n],
            touched_list: Vec::new(),
            ready: vec![false; n],
            ready_list: Vec::new(),
            counters: Counters {
                ports: vec![PortCounters::default(); n],
            },
            pool: Vec::new(),
            now: Instant::ZERO,
            ser_ps_per_byte: 8000.0 / cfg.rate_gbps,
            cfg,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The forwarding table.
    pub fn routes(&self) -> &Routes {
        &self.routes
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
        self.voq.len
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
            let t = x.link.poll_timeout();
            if let Some(d) = self.link_deadline.get_mut(p)
                && *d != t
            {
                *d = t;
                if let Some(t) = t {
                    self.link_timers
                        .push(Reverse((t, u16::try_from(p).unwrap_or(u16::MAX))));
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
        self.now = self.now.max(now);
        if let Some(x) = self.ports.get_mut(p) {
            x.link.physical_up(self.now);
        }
        self.drain(p);
        self.mark(p);
        self.refresh();
    }

    /// The physical link of port `p` went down.
    pub fn port_down(&mut self, now: Instant, p: usize) {
        self.now = self.now.max(now);
        if let Some(x) = self.ports.get_mut(p) {
            x.link.physical_down(self.now);
        }
        self.drain(p);
        self.mark(p);
        self.refresh();
    }

    /// A frame arrived on port `p`'s wire.
    pub fn handle_frame(&mut self, now: Instant, p: usize, bytes: &[u8]) {
        self.now = self.now.max(now);
        if let Some(x) = self.ports.get_mut(p) {
            x.link.handle_frame(self.now, bytes);
        }
        self.drain(p);
        self.mark(p);
        self.refresh();
    }

    /// When [`Switch::handle_timeout`] must be called next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let links = self.link_timers.peek().map(|Reverse((t, _))| *t);
        let wake = self.wake.peek().map(|Reverse((t, _))| *t);
        match (links, wake) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Time passed: runs the links' timers and wakes egress ports whose frames became ready.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.now = self.now.max(now);
        let mut due = Vec::new();
        while let Some(&Reverse((t, p))) = self.link_timers.peek() {
            if t > self.now {
                break;
            }
            self.link_timers.pop();
            if self.link_deadline.get(usize::from(p)).copied().flatten() == Some(t) {
                // Read again below, whatever happens.
                if let Some(d) = self.link_deadline.get_mut(usize::from(p)) {
                    *d = None;
                }
                due.push(usize::from(p));
            }
        }
        for p in due {
            if let Some(x) = self.ports.get_mut(p) {
                x.link.handle_timeout(self.now);
            }
            self.drain(p);
            self.mark(p);
        }
        while let Some(&Reverse((t, e))) = self.wake.peek() {
            if t > self.now {
                break;
            }
            self.wake.pop();
            self.mark(usize::from(e));
        }
        self.refresh();
    }

    /// The next frame for port `p`'s wire, written into `buf`.
    pub fn poll_transmit(
        &mut self,
        now: Instant,
        p: usize,
        buf: &mut [u8],
    ) -> Result<Option<Transmit>, BufferTooSmall> {
        self.now = self.now.max(now);
        self.pump(p);
        let Some(x) = self.ports.get_mut(p) else {
            return Ok(None);
        };
        let t = x.link.poll_transmit(self.now, buf);
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
                    self.mark(p);
                }
                // A refused INIT or a slow initialisation: the link's counters keep it.
                Event::Notice(_) => {}
                Event::LinkDown(_) => {
                    x.up = false;
                    x.link.withdraw();
                    self.flush_egress(p);
                }
                Event::Lost { .. } => {
                    //= docs/spec/switch.md#7-frames-a-switch-cannot-forward
                    //# SW-7-3 Frames waiting for an egress port whose link goes down, and frames
                    //# its link reports of unknown fate or withdrawn, MUST be discarded and
                    //# counted as lost to the port
                    if let Some(c) = self.counters.ports.get_mut(p) {
                        c.lost_port_down += 1;
                    }
                }
                Event::Delivered {
                    vc,
                    payload,
                    release,
                    ..
                } => {
                    let mut buf = self.pool.pop().unwrap_or_default();
                    buf.clear();
                    buf.extend_from_slice(payload);
                    self.receive(p, vc, buf, release);
                }
            }
        }
    }

    /// Discards every frame waiting for egress port `e` (SW-7-3).
    fn flush_egress(&mut self, e: usize) {
        for v in 0..self.vcs {
            let inputs: Vec<u16> = self
                .voq
                .active(e, v)
                .map(|a| a.iter().copied().collect())
                .unwrap_or_default();
            for i in inputs.into_iter().map(usize::from) {
                while let Some(f) = self.voq.pop_front(e, v, i) {
                    self.leave(i, v, &f.payload);
                    //= docs/spec/switch.md#7-frames-a-switch-cannot-forward
                    //# SW-7-4 Every discarded frame's credits MUST be returned at once.
                    if let Some(x) = self.ports.get_mut(i) {
                        let _ = x.link.release(f.release);
                    }
                    self.mark(i);
                    if let Some(c) = self.counters.ports.get_mut(e) {
                        c.lost_port_down += 1;
                    }
                    self.pool.push(f.payload);
                }
            }
            if let Some(x) = self.ports.get_mut(e)
                && let Some(w) = x.waiting.get_mut(v)
            {
                *w = 0;
            }
        }
    }

    /// A frame left the buffer of input `i`, VC `v`.
    fn leave(&mut self, i: usize, v: usize, payload: &[u8]) {
        if let Some(h) = self
            .counters
            .ports
            .get_mut(i)
            .and_then(|c| c.held_bytes.get_mut(v))
        {
            *h = h.saturating_sub(payload.len() as u64);
        }
    }

    /// A DATA frame received on input `i`.
    fn receive(&mut self, i: usize, vc: Vc, payload: Vec<u8>, release: Release) {
        let v = vc.index();
        if let Some(c) = self.counters.ports.get_mut(i) {
            if let Some(x) = c.rx_frames.get_mut(v) {
                *x += 1;
            }
            if let Some(x) = c.rx_bytes.get_mut(v) {
                *x += payload.len() as u64;
            }
        }
        let repr = match DataRepr::parse(&payload) {
            Ok(r) => r,
            Err(_) => {
                //= docs/spec/switch.md#7-frames-a-switch-cannot-forward
                //# SW-7-1 A DATA frame whose network header is malformed (WIRE-5-3) MUST be
                //# discarded and counted.
                if let Some(c) = self.counters.ports.get_mut(i) {
                    c.malformed += 1;
                }
                self.discard(i, payload, release);
                return;
            }
        };
        let (src, dst, path) = (repr.src.value(), repr.dst, repr.path.0);
        //= docs/spec/switch.md#2-forwarding
        //# SW-2-3 An egress port whose link is not UP MUST NOT be chosen while the table lists
        //# another port for the destination whose link is UP.
        let candidates = self.routes.ports(dst);
        let up: usize = candidates
            .iter()
            .filter(|&&e| self.ports.get(usize::from(e)).is_some_and(|x| x.up))
            .count();
        //= docs/spec/switch.md#2-forwarding
        //# SW-2-1 A switch MUST forward a DATA frame to an egress port that its forwarding table
        //# lists for the frame's destination GPU. When the table lists several, the choice MUST
        //# be a fixed function of the source GPU, the destination GPU, the path id and the VC, so
        //# that every frame of one path takes the same egress port (WIRE-5-4).
        //= docs/spec/wire.md#5-data-frames-the-network-header
        //# WIRE-5-4 A switch MUST forward a DATA frame on its destination GPU id, path id and VC
        //# only, and MUST NOT change the network header or the transactions.
        let egress = if up == 0 {
            None
        } else {
            let k = (path_hash(src, dst.value(), path, vc.value()) % up as u64) as usize;
            candidates
                .iter()
                .copied()
                .filter(|&e| self.ports.get(usize::from(e)).is_some_and(|x| x.up))
                .nth(k)
        };
        let Some(e) = egress.map(usize::from) else {
            //= docs/spec/switch.md#7-frames-a-switch-cannot-forward
            //# SW-7-2 A DATA frame for a GPU the table does not list, or all of whose listed
            //# egress ports are down, MUST be discarded and counted as unroutable.
            if let Some(c) = self.counters.ports.get_mut(i) {
                c.unroutable += 1;
            }
            self.discard(i, payload, release);
            return;
        };
        //= docs/spec/switch.md#6-latency
        //# SW-6-1 A frame MUST NOT be handed to its egress port's link before `latency` has passed
        //# since it began to arrive (cut-through: since its first bit, which is its last bit's
        //# arrival less its serialisation time at `rate`) or since it arrived whole
        //# (store-and-forward).
        let lat = u64::try_from(self.cfg.latency.as_nanos()).unwrap_or(u64::MAX);
        let start = match self.cfg.mode {
            Mode::StoreAndForward => self.now.as_nanos(),
            Mode::CutThrough => {
                let wire =
                    frame_len(ethlink_protocol::ETH_HEADER_LEN, payload.len()) + WIRE_OVERHEAD;
                let ser = (wire as f64 * self.ser_ps_per_byte / 1000.0) as u64;
                self.now.as_nanos().saturating_sub(ser)
            }
        };
        let ready = Instant::from_nanos(start.saturating_add(lat)).max(self.now);
        //= docs/spec/switch.md#4-buffers-and-losslessness
        //# SW-4-2 A switch MUST count the frames it drops for want of buffer (by SW-4-1, none) so
        //# that a run can show it, and the highest occupancy of every input buffer.
        if let Some(c) = self.counters.ports.get_mut(i)
            && let Some(h) = c.held_bytes.get_mut(v)
        {
            *h += payload.len() as u64;
            if let Some(m) = c.held_max_bytes.get_mut(v) {
                *m = (*m).max(*h);
            }
        }
        //= docs/spec/switch.md#4-buffers-and-losslessness
        //# SW-4-3 A switch MUST keep frames waiting for different egress ports in separate queues
        //# (one per input port, VC and egress port), so that a frame waiting for a busy egress
        //# port never holds back one for another port.
        //= docs/spec/switch.md#3-order
        //# SW-3-1 Frames received on one input port and VC and forwarded to one egress port MUST
        //# be handed to the egress port's link in the order they were received.
        self.voq.push_back(
            e,
            v,
            i,
            Queued {
                payload,
                release,
                ready,
            },
        );
        if let Some(w) = self.ports.get_mut(e).and_then(|x| x.waiting.get_mut(v)) {
            *w += 1;
        }
        if ready > self.now {
            self.wake
                .push(Reverse((ready, u16::try_from(e).unwrap_or(u16::MAX))));
        } else {
            self.mark(e);
        }
    }

    fn discard(&mut self, i: usize, payload: Vec<u8>, release: Release) {
        //= docs/spec/switch.md#7-frames-a-switch-cannot-forward
        //# SW-7-4 Every discarded frame's credits MUST be returned at once.
        if let Some(x) = self.ports.get_mut(i) {
            let _ = x.link.release(release);
        }
        self.pool.push(payload);
        self.mark(i);
    }

    /// Whether a frame toward egress `e` on VC `v` is ready to go.
    fn has_ready(&self, e: usize, v: usize) -> bool {
        self.voq.active(e, v).is_some_and(|a| {
            a.iter().any(|&i| {
                self.voq
                    .front(e, v, usize::from(i))
                    .is_some_and(|f| f.ready <= self.now)
            })
        })
    }

    /// Hands ready frames to egress port `e`'s link: response VCs first, inputs round-robin,
    /// at most `egress_depth` queued per VC.
    fn pump(&mut self, e: usize) {
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
                let first = x.rr.get(v).copied().unwrap_or(0);
                let mut pick = None;
                let mut later: Option<Instant> = None;
                if let Some(active) = self.voq.active(e, v) {
                    for &i in active.range(first..).chain(active.range(..first)) {
                        let i = usize::from(i);
                        if let Some(head) = self.voq.front(e, v, i) {
                            if head.ready <= now {
                                pick = Some(i);
                                break;
                            }
                            later = Some(later.map_or(head.ready, |l| l.min(head.ready)));
                        }
                    }
                }
                let Some(i) = pick else {
                    if let Some(t) = later {
                        self.wake
                            .push(Reverse((t, u16::try_from(e).unwrap_or(u16::MAX))));
                    }
                    break;
                };
                let Some(f) = self.voq.pop_front(e, v, i) else {
                    break;
                };
                let Some(x) = self.ports.get_mut(e) else {
                    return;
                };
                //= docs/spec/switch.md#2-forwarding
                //# SW-2-2 A switch MUST NOT change the network header or the transactions of a
                //# frame it forwards; it sends them behind its own Ethernet and link headers.
                match x.link.submit(vcx, &f.payload) {
                    Ok(()) => {}
                    Err(SubmitError::QueueFull { .. }) => {
                        self.voq.push_front(e, v, i, f);
                        break;
                    }
                    Err(_) => {
                        // The egress link cannot carry it (its peer agreed fewer VCs or a smaller
                        // MFS): lost to the port.
                        if let Some(w) = x.waiting.get_mut(v) {
                            *w = w.saturating_sub(1);
                        }
                        if let Some(c) = self.counters.ports.get_mut(e) {
                            c.lost_port_down += 1;
                        }
                        self.leave(i, v, &f.payload);
                        self.discard(i, f.payload, f.release);
                        continue;
                    }
                }
                if let Some(w) = x.waiting.get_mut(v) {
                    *w = w.saturating_sub(1);
                }
                if let Some(r) = x.rr.get_mut(v) {
                    *r = u16::try_from((i + 1) % n).unwrap_or(0);
                }
                if let Some(c) = self.counters.ports.get_mut(e) {
                    if let Some(t) = c.tx_frames.get_mut(v) {
                        *t += 1;
                    }
                    if let Some(t) = c.tx_bytes.get_mut(v) {
                        *t += f.payload.len() as u64;
                    }
                }
                //= docs/spec/switch.md#4-buffers-and-losslessness
                //# SW-4-1 A switch MUST keep a received frame's credits until the frame has been
                //# handed to its egress port's link, and only then return them (LINK-5-4).
                self.leave(i, v, &f.payload);
                if let Some(xi) = self.ports.get_mut(i) {
                    let _ = xi.link.release(f.release);
                }
                self.mark(i);
                self.pool.push(f.payload);
            }
        }
    }
}

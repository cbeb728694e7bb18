//! A fabric run as two partitions, each on a thread of its own: the GPUs with the first few
//! switches ([`Fabric::default_split`], or as many as asked), and the other switches.
//!
//! The simulation is conservative and synchronous. Both partitions run the events of one window
//! of simulated time side by side: from the first event due in either, for as long as the
//! lookahead. A frame (or, toward a cut-through switch, its header) that one partition sends to
//! the other arrives no sooner than a cable's propagation delay and the serialisation of the
//! shortest frame (or header) after it left, the lookahead, so none sent within a window arrives
//! within it: each partition hands the other what it sent when the window ends. Windows end
//! early at each bring-up check and at the beginning and end of each outage, and time in which
//! neither partition has anything to do is skipped. The GPUs' partition, which
//! also runs the workloads and the operations' tracker, decides each window and when the run
//! ends; the other answers with what it sent, when its next event is due and whether its
//! links are up.
//!
//! Which switches go with the GPUs balances the two: the busier partition sets each window's
//! wall time. Traffic that starts on every GPU at once moves in waves (the GPUs send, the
//! switches forward a cable's delay later, the GPUs receive), and a partition of switches
//! alone would work only while the GPUs wait; with some switches beside the GPUs, both
//! partitions have a share of each wave of switch work.
//!
//! Results depend on the scenario and the split alone: they are the same whether the second
//! partition runs on a thread of its own or on the caller's, window by window. They are not
//! those of the single event queue ([`Fabric::run`] without [`Fabric::set_partitioned`]):
//! there, events of the same picosecond run in the order they were queued, across the whole
//! fabric; here a frame from the other partition is queued when the window ends, after the
//! events its receiver queued during the window, and a bring-up check runs before the events
//! of its picosecond.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use super::*;

/// What the GPUs' partition sends the switches' before a window.
struct Order {
    /// What the GPUs sent toward switches in the window before.
    mail: Vec<Handoff>,
    /// Run the events due before this time, ps.
    end: u64,
    /// Traffic has begun, at this time (ps): the outages' events are queued from it.
    begun: Option<u64>,
}

/// What the switches' partition answers after a window.
struct Answer {
    /// What the switches sent toward GPUs in the window.
    mail: Vec<Handoff>,
    /// When its next event is due, ps (`NONE`: none is queued).
    next: u64,
    /// Every link of each of its switches is up.
    all_up: bool,
    /// Wall time it worked on the window, ns.
    busy_ns: u64,
}

/// The partition of the switches that do not run beside the GPUs.
struct Switches {
    core: Core<()>,
    scen: Scenario,
    /// Per outage: its cables.
    outages: Vec<Vec<u32>>,
}

impl Switches {
    /// Takes the GPUs' mail, runs the window and answers.
    fn window(&mut self, order: Order) -> Answer {
        let Order {
            mut mail,
            end,
            begun,
        } = order;
        let started = std::time::Instant::now();
        self.core.take_handoffs(&mut mail);
        if let Some(t) = begun {
            self.core.now = t;
            self.core.schedule_outages(&self.scen, &self.outages, t);
        }
        // What bring-up (time 0) marked.
        self.core.service_marked();
        while let Some((t, ev)) = self.core.take_before(end) {
            self.core.now = t;
            self.core.tally.events += 1;
            if !self.core.node_event(t, ev) {
                match ev {
                    Ev::OutageOn(k) => {
                        self.core
                            .outage(&self.scen, &self.outages, k as usize, true)
                    }
                    Ev::OutageOff(k) => {
                        self.core
                            .outage(&self.scen, &self.outages, k as usize, false);
                    }
                    _ => {}
                }
            }
            self.core.service_marked();
        }
        std::mem::swap(&mut mail, &mut self.core.outbox);
        Answer {
            mail,
            next: self.core.heap.peek_time().unwrap_or(NONE),
            all_up: self.core.all_up(),
            busy_ns: ns_since(started),
        }
    }
}

/// A mailbox of one letter between the two partitions' threads. A window lasts microseconds,
/// less than a sleeping thread takes to wake: the reader spins a while, then yields its core.
struct Mailbox<T> {
    full: AtomicBool,
    /// No more letters will come.
    closed: AtomicBool,
    letter: Mutex<Option<T>>,
}

impl<T> Mailbox<T> {
    fn new() -> Self {
        Mailbox {
            full: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            letter: Mutex::new(None),
        }
    }

    fn put(&self, t: T) {
        *self.letter.lock().unwrap_or_else(PoisonError::into_inner) = Some(t);
        self.full.store(true, Ordering::Release);
    }

    /// The next letter; `None` once the mailbox is closed and empty.
    fn take(&self) -> Option<T> {
        let mut spins = 0u32;
        loop {
            if self.full.swap(false, Ordering::Acquire) {
                return self
                    .letter
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
            }
            if self.closed.load(Ordering::Acquire) {
                return None;
            }
            if spins < 1 << 16 {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }
}

/// Closes a mailbox when dropped: when its writer's thread ends, however it ends.
struct Closing<'a, T>(&'a Mailbox<T>);

impl<T> Drop for Closing<'_, T> {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// The switches' partition as the GPUs' sees it: on this thread, or on another one.
enum Peer<'a> {
    Here(&'a mut Switches, Option<Answer>),
    Thread(&'a Mailbox<Order>, &'a Mailbox<Answer>),
}

impl Peer<'_> {
    fn send(&mut self, order: Order) {
        match self {
            Peer::Here(sw, answer) => *answer = Some(sw.window(order)),
            Peer::Thread(orders, _) => orders.put(order),
        }
    }

    /// The answer to the last order; `None` when the switches' thread has ended.
    fn recv(&mut self) -> Option<Answer> {
        match self {
            Peer::Here(_, answer) => answer.take(),
            Peer::Thread(_, answers) => answers.take(),
        }
    }
}

/// Wall time since `t`, ns.
fn ns_since(t: std::time::Instant) -> u64 {
    u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// The earliest time something in `mail` arrives, ps (`NONE` for none).
fn earliest(mail: &[Handoff]) -> u64 {
    mail.iter()
        .map(|h| match h {
            Handoff::Flight(_, f) => f.arrive_ps(),
            Handoff::Header(_, h) => h.at_ps,
        })
        .min()
        .unwrap_or(NONE)
}

impl<T: Tap> Core<T> {
    /// Per channel, the node that sends on it (`u32::MAX` for none).
    fn senders(&self) -> Vec<u32> {
        let mut from = vec![u32::MAX; self.chans.len()];
        for (gp, &ci) in self.out_chan.iter().enumerate() {
            if let (Some(x), Some(&n)) = (from.get_mut(ci as usize), self.port_node.get(gp)) {
                *x = n;
            }
        }
        from
    }
}

impl Chan {
    /// An idle copy of this channel's receiving end: the same wire, nothing in flight, no
    /// faults of its own (the sender's copy decides every frame's fate).
    fn receiving_copy(&self) -> Chan {
        Chan {
            ch: self.ch.receiving_copy(),
            to_node: self.to_node,
            to_port: self.to_port,
            cable: self.cable,
            armed: NONE,
            cut_ps: self.cut_ps,
            headers: VecDeque::new(),
            hdr_armed: NONE,
            run: 0,
            last_data_ps: 0,
            remote: false,
        }
    }
}

/// The least time between a node of one partition sending anything and a node of the other
/// receiving it, ps, when the switches' partition holds the switch nodes from `lo` on: a cable's
/// propagation delay, plus the serialisation of the shortest frame (or, toward a cut-through
/// switch, of the header it reads). The lookahead of a partitioned run; `None` when no cable
/// joins the two partitions.
pub(super) fn lookahead<T: Tap>(core: &Core<T>, lo: u32) -> Option<u64> {
    let from = core.senders();
    core.chans
        .iter()
        .zip(&from)
        .filter(|&(c, &f)| f != u32::MAX && (f >= lo) != (c.to_node >= lo))
        .map(|(c, _)| {
            let shortest = if c.cut_ps == NONE {
                ethlink_protocol::MIN_FRAME_LEN
            } else {
                HEADER_BYTES.min(ethlink_protocol::MIN_FRAME_LEN)
            };
            c.ch.propagation_ps()
                .saturating_add(c.ch.serialisation_ps(shortest))
        })
        .min()
}

/// What [`Fabric::default_split`] says: how many of `core`'s first switches to simulate
/// beside the GPUs.
pub(super) fn default_split<T: Tap>(core: &Core<T>) -> u32 {
    let switches = core.sws.len() as u32;
    let from = core.senders();
    let two_tiers = core
        .chans
        .iter()
        .zip(&from)
        .any(|(c, &f)| f != u32::MAX && f >= core.n_gpus && c.to_node >= core.n_gpus);
    if !two_tiers {
        return (switches + 2) / 4;
    }
    let gpu_ports: u64 = core.gpus.iter().map(|ep| ep.port_count() as u64).sum();
    let mut with_gpus = 2 * gpu_ports;
    let mut others: u64 = core.sws.iter().map(|sw| u64::from(sw.config().ports)).sum();
    // The first split at which moving one more switch would not bring the two closer.
    let mut kept = 0;
    for sw in core.sws.iter().take(switches.saturating_sub(1) as usize) {
        let p = u64::from(sw.config().ports);
        if (with_gpus + p).abs_diff(others - p) >= with_gpus.abs_diff(others) {
            break;
        }
        with_gpus += p;
        others -= p;
        kept += 1;
    }
    kept
}

/// When the outages of `scen` begin and end for traffic begun at `start`, ps, in order.
fn outage_edges(scen: &Scenario, start: u64) -> Vec<u64> {
    let mut edges: Vec<u64> = scen
        .outages
        .iter()
        .flat_map(|o| {
            let on = start.saturating_add(o.start_ns.saturating_mul(PS_PER_NS));
            let off = o
                .duration_ns
                .map(|d| on.saturating_add(d.saturating_mul(PS_PER_NS)));
            std::iter::once(on).chain(off)
        })
        .collect();
    edges.sort_unstable();
    edges
}

impl Fabric {
    /// Moves the switch nodes from `lo` on, and the sending end of each channel they send on,
    /// to a partition of their own. Returns it and, per channel, whether that partition sends
    /// on it.
    fn split(&mut self, lookahead: u64, lo: u32) -> (Switches, Vec<bool>) {
        let c = &mut self.core;
        c.lookahead = lookahead;
        let from = c.senders();
        let n_gpus = c.n_gpus;
        let mut chans = Vec::with_capacity(c.chans.len());
        let mut by_switches = Vec::with_capacity(c.chans.len());
        for (chan, &f) in c.chans.iter_mut().zip(&from) {
            let from_switches = f != u32::MAX && f >= lo;
            let to_switches = chan.to_node >= lo;
            let mut other = chan.receiving_copy();
            if from_switches {
                std::mem::swap(&mut chan.ch, &mut other.ch);
                other.remote = !to_switches;
            } else {
                chan.remote = to_switches;
            }
            chans.push(other);
            by_switches.push(from_switches);
        }
        let kept = (lo.saturating_sub(n_gpus) as usize).min(c.sws.len());
        let nodes = c.armed.len();
        let mut core = Core {
            now: c.now,
            heap: EventQueue::default(),
            gpus: Vec::new(),
            sws: c.sws.split_off(kept),
            sw_lo: lo,
            n_gpus,
            node_base: c.node_base.clone(),
            out_chan: c.out_chan.clone(),
            free_at: c.free_at.clone(),
            port_node: c.port_node.clone(),
            chans,
            cables: c.cables.clone(),
            cuts: c.cuts.clone(),
            armed: vec![NONE; nodes],
            due: vec![false; nodes],
            dirty: vec![false; nodes],
            dirty_list: Vec::new(),
            txbuf: vec![0; c.txbuf.len()],
            capbuf: Vec::new(),
            ready: Vec::new(),
            completions: VecDeque::new(),
            blocked: Vec::new(),
            tally: Tally::default(),
            capture: (),
            outbox: Vec::new(),
            lookahead,
        };
        // Each partition services its own nodes first.
        for n in std::mem::take(&mut c.dirty_list) {
            if let Some(d) = c.dirty.get_mut(n as usize) {
                *d = false;
            }
        }
        for n in 0..lo {
            c.mark(n);
        }
        for n in lo..nodes as u32 {
            core.mark(n);
        }
        let sw = Switches {
            core,
            scen: self.scen.clone(),
            outages: self.outages.clone(),
        };
        (sw, by_switches)
    }

    /// Takes the switches and their channels back from their partition once the run is over;
    /// `stopped`: the GPUs' partition ended it, at its own time (else the run ended when
    /// neither had anything left to do, at the later of their last events).
    fn join(&mut self, sw: Switches, by_switch: &[bool], stopped: bool) {
        let mut s = sw.core;
        let c = &mut self.core;
        c.lookahead = 0;
        if !stopped {
            c.now = c.now.max(s.now);
        }
        c.sws.append(&mut s.sws);
        c.tally.add(&s.tally);
        for ((chan, other), &from_switch) in c.chans.iter_mut().zip(s.chans).zip(by_switch) {
            chan.remote = false;
            if from_switch {
                let receiving = std::mem::replace(&mut chan.ch, other.ch);
                chan.ch.join(receiving);
            } else {
                chan.ch.join(other.ch);
            }
        }
    }

    /// Runs the scenario as two partitions ([`self`](self)); with `threaded`, the switches' on a
    /// thread of its own.
    pub(super) fn run_partitioned(
        &mut self,
        progress: &mut Option<&mut dyn FnMut(u64, u64)>,
        lookahead: u64,
        threaded: bool,
        lo: u32,
    ) {
        self.part_wall = Some(PartitionWall {
            switches_with_gpus: lo.saturating_sub(self.core.n_gpus),
            ..PartitionWall::default()
        });
        let (mut sw, by_switch) = self.split(lookahead, lo);
        let stopped = if threaded {
            let orders = Mailbox::new();
            let answers = Mailbox::new();
            let mut sw_part = sw;
            let (part, stopped) = std::thread::scope(|s| {
                let h = s.spawn(|| {
                    let _closing = Closing(&answers);
                    while let Some(order) = orders.take() {
                        answers.put(sw_part.window(order));
                    }
                    sw_part
                });
                let stopped = {
                    let _closing = Closing(&orders);
                    self.windows(progress, lookahead, &mut Peer::Thread(&orders, &answers))
                };
                match h.join() {
                    Ok(sw) => (sw, stopped),
                    Err(e) => std::panic::resume_unwind(e),
                }
            });
            sw = part;
            stopped
        } else {
            self.windows(progress, lookahead, &mut Peer::Here(&mut sw, None))
        };
        self.join(sw, &by_switch, stopped);
    }

    /// The GPUs' side of a partitioned run: decides each round's windows, runs its own, trades
    /// mail. Ends when the run ends (true), or when neither partition has anything left to do
    /// (false).
    ///
    /// Both partitions run every event due before the first event of either plus the lookahead:
    /// nothing one sends in that window reaches the other within it. Both stop at each bring-up
    /// check and at each outage's beginning and end (barriers), where the check runs and the
    /// outage's cut finds every frame sent before it on its wire.
    fn windows(
        &mut self,
        progress: &mut Option<&mut dyn FnMut(u64, u64)>,
        lookahead: u64,
        peer: &mut Peer<'_>,
    ) -> bool {
        let check = BRING_UP_CHECK_NS * PS_PER_NS;
        let limit = self.scen.time_limit_ns.saturating_mul(PS_PER_NS);
        // Bring-up: every GPU serviced at time 0 (the switches, in their first window).
        self.settle();
        // Next events: the switches' is unknown until they answer, so 0.
        let mut sw_next = 0;
        let mut sw_up = false;
        // Every event before these has run, on each side.
        let mut done = 0u64;
        let mut barrier = check;
        let mut edges: Vec<u64> = Vec::new();
        loop {
            let mut begun = None;
            if done == barrier {
                if self.started {
                    barrier = edges.iter().copied().find(|&x| x > barrier).unwrap_or(NONE);
                } else {
                    self.core.now = barrier;
                    if (self.core.all_up() && sw_up) || barrier >= BRING_UP_LIMIT_NS * PS_PER_NS {
                        self.begin_traffic();
                        self.all_up = self.all_up && sw_up;
                        begun = Some(barrier);
                        edges = outage_edges(&self.scen, barrier);
                        barrier = edges.iter().copied().find(|&x| x > barrier).unwrap_or(NONE);
                    } else {
                        barrier += check;
                    }
                    self.settle();
                }
            }
            let g_next = self.core.heap.peek_time().unwrap_or(NONE);
            // The switches' next event once they have taken the GPUs' mail.
            let s_next = sw_next.min(earliest(&self.core.outbox));
            let first = g_next.min(s_next);
            if first >= limit && first != NONE {
                self.time_limit_hit = true;
                return true;
            }
            // Draining, and past the longest the drain may take.
            if self.stopping
                && first != NONE
                && first >= self.stop.saturating_add(self.drain_limit_ps())
            {
                return true;
            }
            if first == NONE && (self.started || barrier == NONE) {
                return false;
            }
            // Nothing from the other partition can arrive before the first event of either,
            // plus the lookahead.
            let end = first.saturating_add(lookahead).min(barrier).max(done);
            let mail = std::mem::take(&mut self.core.outbox);
            peer.send(Order { mail, end, begun });
            let started = std::time::Instant::now();
            let ended = self.run_window(end, progress);
            let busy = ns_since(started);
            let Some(answer) = peer.recv() else {
                return true;
            };
            if let Some(w) = self.part_wall.as_mut() {
                w.windows += 1;
                w.gpus_busy_seconds += busy as f64 * 1e-9;
                w.switches_busy_seconds += answer.busy_ns as f64 * 1e-9;
            }
            sw_next = answer.next;
            sw_up = answer.all_up;
            let mut mail = answer.mail;
            self.core.take_handoffs(&mut mail);
            done = end;
            if ended {
                return true;
            }
        }
    }

    /// Runs the GPUs' events due before `end`; true when the run ends.
    fn run_window(&mut self, end: u64, progress: &mut Option<&mut dyn FnMut(u64, u64)>) -> bool {
        while let Some((t, ev)) = self.core.take_before(end) {
            if self.step(t, ev) {
                return true;
            }
            if self.core.tally.events & 0xFFFF == 0
                && let Some(p) = progress.as_mut()
            {
                p(self.core.now / PS_PER_NS, self.planned_end_ns());
            }
        }
        false
    }
}

//! Two endpoints joined back to back, port by port, through the link crate's wire and fault
//! injector.
//!
//! [`BackToBack`] is a small discrete-event simulation: port *i* of GPU A and port *i* of GPU B
//! share one full-duplex wire, each direction an [`ethlink_link::harness::Channel`] with its own
//! seeded [`ethlink_link::harness::Injector`]. Time is kept in picoseconds; the endpoints see
//! whole nanoseconds. Besides the injector's random faults a port can be cut (both ends see the
//! physical link go down, frames in flight are lost) or blacked out (every frame vanishes while
//! the physical link stays up, so the links replay until they FLUSH).
//!
//! Tests, benches and the examples drive it: issue operations on [`BackToBack::gpu_mut`], then
//! [`BackToBack::run_until`] or [`BackToBack::run_until_idle`], then read
//! [`BackToBack::take_completions`].

use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use ethlink_link::harness::{Channel, Verdict, Wire, WireBytes};
use ethlink_link::{Instant, Transmit};

use crate::{Completion, Config, ConfigError, Endpoint};

const PS_PER_NS: u64 = 1000;

/// A port of both GPUs whose wire is cut or blacked out for a while.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortFault {
    /// The port, `0..stacks*ports`.
    pub port: usize,
    /// Start, ns of simulated time.
    pub start_ns: u64,
    /// Length, ns.
    pub duration_ns: u64,
    /// True: frames vanish but the physical link stays up (the links FLUSH); false: the
    /// physical link goes down at both ends.
    pub blackout: bool,
}

/// Two endpoints and the wires between them.
pub struct BackToBack {
    gpus: [Endpoint; 2],
    /// Per port: the channel from A to B and the one from B to A.
    chans: Vec<[Channel; 2]>,
    faults: Vec<PortFault>,
    /// Per fault: 0 not started, 1 running, 2 over.
    fault_state: Vec<u8>,
    now: u64,
    poll: Vec<[bool; 2]>,
    completions: [Vec<Completion>; 2],
    txbuf: Vec<u8>,
    rxbuf: Vec<u8>,
    steps: u64,
    /// DATA frames carried by reference ([`BackToBack::set_by_reference`]).
    by_ref: bool,
}

impl fmt::Debug for BackToBack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BackToBack")
            .field("now_ps", &self.now)
            .field("a", &self.gpus[0])
            .field("b", &self.gpus[1])
            .finish_non_exhaustive()
    }
}

impl BackToBack {
    /// Builds GPUs `a` and `b` (which must have the same number of ports), a wire per port with
    /// `wire`'s rate, propagation and faults (each direction seeded from `seed`), and brings
    /// every port up at time 0.
    pub fn new(a: Config, b: Config, wire: Wire, seed: u64) -> Result<Self, ConfigError> {
        if a.port_count() != b.port_count() {
            return Err(ConfigError {
                field: "ports",
                value: b.port_count() as u64,
                rule: "both GPUs need the same number of stacks x ports",
            });
        }
        let n = a.port_count();
        let mut gpus = [Endpoint::new(a)?, Endpoint::new(b)?];
        let chans = (0..n as u64)
            .map(|i| {
                [
                    wire.channel(seed.wrapping_mul(0x100).wrapping_add(2 * i)),
                    wire.channel(seed.wrapping_mul(0x100).wrapping_add(2 * i + 1)),
                ]
            })
            .collect();
        for g in &mut gpus {
            for i in 0..n {
                g.port_up(Instant::ZERO, i);
            }
        }
        Ok(BackToBack {
            gpus,
            chans,
            faults: Vec::new(),
            fault_state: Vec::new(),
            now: 0,
            poll: vec![[true; 2]; n],
            completions: [Vec::new(), Vec::new()],
            txbuf: vec![0; 9216],
            rxbuf: Vec::with_capacity(9216),
            steps: 0,
            by_ref: false,
        })
    }

    /// With `on`, the wires carry DATA frames as a fabric's do: by reference, shared with the
    /// sender's replay buffer, their FCS deferred and its status told to the receiver
    /// ([`Endpoint::poll_transmit_shared`], [`Endpoint::handle_frame_by_ref`]); a damaged frame
    /// is a copy of its own. Off by default: every frame is copied as bytes.
    pub fn set_by_reference(&mut self, on: bool) {
        self.by_ref = on;
        for g in &mut self.gpus {
            g.defer_fcs(on);
        }
    }

    /// Schedules port faults (any order).
    pub fn set_faults(&mut self, mut faults: Vec<PortFault>) {
        faults.sort_by_key(|f| (f.start_ns, f.port));
        self.fault_state = vec![0; faults.len()];
        self.faults = faults;
    }

    /// GPU A (0) or B (1).
    pub fn gpu(&self, e: usize) -> &Endpoint {
        &self.gpus[e & 1]
    }

    /// GPU A (0) or B (1), mutably: issue operations, post descriptors, register memory.
    /// Every port of that GPU is then polled at the current instant by the next
    /// [`BackToBack::step`], so a loop that calls this before each step does not advance time
    /// while the GPU has nothing to send: wait with steps alone (or [`BackToBack::run_until`]).
    pub fn gpu_mut(&mut self, e: usize) -> &mut Endpoint {
        let n = self.poll.len();
        for p in self.poll.iter_mut().take(n) {
            p[e & 1] = true;
        }
        &mut self.gpus[e & 1]
    }

    /// The channel of port `port` from GPU `from` to the other.
    pub fn channel(&self, port: usize, from: usize) -> Option<&Channel> {
        self.chans.get(port).map(|c| &c[from & 1])
    }

    /// Simulated time, ns.
    pub fn now_ns(&self) -> u64 {
        self.now / PS_PER_NS
    }

    /// The current instant as the endpoints see it.
    pub fn now(&self) -> Instant {
        Instant::from_nanos(self.now_ns())
    }

    /// Steps taken.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Takes the completions GPU `e` reported so far.
    pub fn take_completions(&mut self, e: usize) -> Vec<Completion> {
        core::mem::take(&mut self.completions[e & 1])
    }

    /// Completions GPU `e` reported and not yet taken.
    pub fn completions(&self, e: usize) -> &[Completion] {
        &self.completions[e & 1]
    }

    fn blacked_out(&self, port: usize) -> bool {
        self.faults
            .iter()
            .zip(&self.fault_state)
            .any(|(f, s)| *s == 1 && f.port == port && f.blackout)
    }

    fn next_time(&self) -> Option<u64> {
        let mut t = u64::MAX;
        for (c, poll) in self.chans.iter().zip(&self.poll) {
            for (ch, want) in c.iter().zip(poll) {
                if let Some(a) = ch.next_arrival() {
                    t = t.min(a);
                }
                if *want {
                    t = t.min(ch.free_at().max(self.now));
                }
            }
        }
        for (e, g) in self.gpus.iter().enumerate() {
            if let Some(to) = g.poll_timeout() {
                let ps = to.as_nanos().saturating_mul(PS_PER_NS);
                // A deadline already due is one the link meets by sending (an ACK, a replay):
                // it waits for the next of its wires to be free, or the next nanosecond.
                let ps = if ps <= self.now {
                    self.chans
                        .iter()
                        .map(|c| c[e].free_at())
                        .filter(|&f| f > self.now)
                        .min()
                        .unwrap_or(self.now + PS_PER_NS)
                        .min(self.now + PS_PER_NS)
                } else {
                    ps
                };
                t = t.min(ps);
            }
        }
        for (f, s) in self.faults.iter().zip(&self.fault_state) {
            match s {
                0 => t = t.min(f.start_ns.saturating_mul(PS_PER_NS)),
                1 => t = t.min(f.start_ns.saturating_add(f.duration_ns) * PS_PER_NS),
                _ => {}
            }
        }
        (t != u64::MAX).then_some(t)
    }

    /// One step: advance to the next event (if before `limit_ps`) and process everything due.
    /// False when nothing is left to do before the limit.
    pub fn step(&mut self, limit_ps: u64) -> bool {
        let Some(t) = self.next_time() else {
            return false;
        };
        if t > limit_ps {
            return false;
        }
        self.steps += 1;
        // A timer already due fires at the next nanosecond: time moves on.
        self.now = self.now.max(t);
        let now = Instant::from_nanos(self.now / PS_PER_NS);
        self.faults_due(now);
        for i in 0..self.chans.len() {
            for d in 0..2 {
                let rx = 1 - d;
                if self.by_ref {
                    while let Some((bytes, fcs)) = self.chans[i][d].pop_arrival_wire(self.now) {
                        match &bytes {
                            WireBytes::Shared(f) => {
                                self.gpus[rx].handle_frame_by_ref(now, i, f, fcs)
                            }
                            WireBytes::Owned(b) => self.gpus[rx].handle_frame_fcs(now, i, b, fcs),
                        }
                        self.chans[i][d].recycle(bytes);
                        self.mark(rx);
                    }
                    continue;
                }
                let mut buf = core::mem::take(&mut self.rxbuf);
                while self.chans[i][d].pop_arrival(self.now, &mut buf) {
                    self.gpus[rx].handle_frame(now, i, &buf);
                    self.mark(rx);
                }
                self.rxbuf = buf;
            }
        }
        for e in 0..2 {
            if self.gpus[e].poll_timeout().is_some_and(|to| to <= now) {
                self.gpus[e].handle_timeout(now);
                self.mark(e);
            }
        }
        for i in 0..self.chans.len() {
            for e in 0..2 {
                if !self.poll[i][e] || self.chans[i][e].free_at() > self.now {
                    continue;
                }
                let mut buf = core::mem::take(&mut self.txbuf);
                let sent = if self.by_ref {
                    self.gpus[e].poll_transmit_shared(now, i, &mut buf)
                } else {
                    self.gpus[e]
                        .poll_transmit(now, i, &mut buf)
                        .map(|t| t.map(|t| (t, None)))
                };
                match sent {
                    Ok(Some((Transmit { len, kind, .. }, shared))) => {
                        let verdict = if self.blacked_out(i) {
                            Verdict::Drop
                        } else {
                            Verdict::Pass
                        };
                        match shared {
                            Some(f) => self.chans[i][e].transmit_shared(self.now, f, kind, verdict),
                            None => {
                                let frame = buf.get(..len).unwrap_or(&[]);
                                self.chans[i][e].transmit(self.now, frame, kind, verdict)
                            }
                        };
                        self.mark(e);
                    }
                    _ => self.poll[i][e] = false,
                }
                self.txbuf = buf;
            }
        }
        for e in 0..2 {
            while let Some(c) = self.gpus[e].poll_completion() {
                self.completions[e].push(c);
            }
        }
        true
    }

    fn mark(&mut self, e: usize) {
        for p in &mut self.poll {
            p[e] = true;
        }
    }

    fn faults_due(&mut self, now: Instant) {
        for k in 0..self.faults.len() {
            let f = self.faults[k];
            let start = f.start_ns.saturating_mul(PS_PER_NS);
            let end = f.start_ns.saturating_add(f.duration_ns) * PS_PER_NS;
            if self.fault_state[k] == 0 && self.now >= start {
                self.fault_state[k] = 1;
                if !f.blackout
                    && let Some(c) = self.chans.get_mut(f.port)
                {
                    c[0].clear(self.now);
                    c[1].clear(self.now);
                    for e in 0..2 {
                        self.gpus[e].port_down(now, f.port);
                        self.mark(e);
                    }
                }
            }
            if self.fault_state[k] == 1 && self.now >= end {
                self.fault_state[k] = 2;
                if !f.blackout {
                    for e in 0..2 {
                        self.gpus[e].port_up(now, f.port);
                        self.mark(e);
                    }
                }
            }
        }
    }

    /// Runs until `t_ns` of simulated time.
    pub fn run_until(&mut self, t_ns: u64) {
        self.mark(0);
        self.mark(1);
        let limit = t_ns.saturating_mul(PS_PER_NS);
        while self.step(limit) {}
        self.now = self.now.max(limit);
    }

    /// Runs until neither GPU has an operation outstanding, or until `limit_ns`; true when
    /// everything completed.
    pub fn run_until_idle(&mut self, limit_ns: u64) -> bool {
        self.mark(0);
        self.mark(1);
        let limit = limit_ns.saturating_mul(PS_PER_NS);
        loop {
            if self.gpus.iter().all(|g| g.outstanding() == 0) {
                return true;
            }
            if !self.step(limit) {
                return self.gpus.iter().all(|g| g.outstanding() == 0);
            }
        }
    }
}

//! A switch (`ethlink-switch`) behind a handle.
//!
//! Every port sends at the switch's line rate: once a port has handed out a frame, its wire is
//! busy for the frame's time on the wire (preamble, SFD and inter-frame gap included) and it
//! hands out its next frame only when the wire is free again; `ethlink_poll_timeout` includes
//! those times. `ethlink_poll_transmit` visits the ports that may have something to send in
//! rounds, in port order, each port whose wire is free once per round, until a round sends
//! nothing. Link changes are found, when events are polled, by comparing each port's link with
//! what was last reported.

use std::collections::{BTreeSet, VecDeque};
use std::time::Duration;

use ethlink_link::Instant;
use ethlink_switch::{Config, Mode, Routes, Switch};

use crate::conv::{apply_params, config_error, gpu, params_of};
use crate::ctx::{Polled, Transmit, describe, link_counters, tick};
use crate::error::{Error, Result};
use crate::types::{
    Description, ETHLINK_DOWN_FLUSH, ETHLINK_DOWN_PEER_RESTART, ETHLINK_DOWN_PHYSICAL,
    ETHLINK_EVENT_LINK_DOWN, ETHLINK_EVENT_LINK_UP, ETHLINK_MODE_CUT_THROUGH,
    ETHLINK_MODE_STORE_AND_FORWARD, ETHLINK_ROLE_SWITCH, Event, SwitchConfig,
};

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The default configuration (switch.md Table SW-T1).
pub(crate) fn default_config() -> SwitchConfig {
    let c = Config::default();
    SwitchConfig {
        link: params_of(&c.link),
        id: c.id,
        ports: c.ports,
        mode: match c.mode {
            Mode::CutThrough => ETHLINK_MODE_CUT_THROUGH,
            Mode::StoreAndForward => ETHLINK_MODE_STORE_AND_FORWARD,
        },
        egress_depth: c.egress_depth,
        latency_ns: ns(c.latency),
        max_residence_ns: ns(c.max_residence),
        rate_gbps: c.rate_gbps,
        seed: c.link.nonce_seed,
    }
}

/// A switch and what the ABI keeps beside it.
pub(crate) struct SwitchDev {
    sw: Switch,
    now: u64,
    /// Per port: when its wire is free again.
    free: Vec<u64>,
    /// Ports that may have something to send.
    pending: BTreeSet<u16>,
    ready: Vec<u16>,
    /// The ports the current transmit round still offers a chance, whether it has sent, and
    /// whether a round is under way.
    round: VecDeque<u16>,
    round_sent: bool,
    in_pass: bool,
    /// Per port: the link state last reported.
    up: Vec<bool>,
    /// Per port: its physical link was taken down by the caller.
    phys_down: Vec<bool>,
    /// Per port: the link's flush count last seen, to say why a link went down.
    flushes: Vec<u64>,
    changes: VecDeque<Event>,
    pub(crate) snapshot: Vec<(String, u64)>,
}

impl SwitchDev {
    pub(crate) fn new(cfg: &SwitchConfig) -> Result<Self> {
        let mut c = Config::default();
        c.link = apply_params(&c.link, &cfg.link);
        c.link.nonce_seed = cfg.seed;
        c.id = cfg.id;
        c.ports = cfg.ports;
        c.mode = match cfg.mode {
            ETHLINK_MODE_CUT_THROUGH => Mode::CutThrough,
            ETHLINK_MODE_STORE_AND_FORWARD => Mode::StoreAndForward,
            v => {
                return Err(Error::argument(format!(
                    "cfg->mode = {v}: not an ETHLINK_MODE_* value (0 cut-through, 1 store-and-forward)"
                )));
            }
        };
        c.egress_depth = cfg.egress_depth;
        c.latency = Duration::from_nanos(cfg.latency_ns);
        c.max_residence = Duration::from_nanos(cfg.max_residence_ns);
        if !(cfg.rate_gbps.is_finite() && cfg.rate_gbps > 0.0) {
            // The model's error carries no fraction: say what was given here.
            return Err(Error::argument(format!(
                "configuration: cfg->rate_gbps = {}: must be a positive finite number",
                cfg.rate_gbps
            )));
        }
        c.rate_gbps = cfg.rate_gbps;
        let sw = Switch::new(c, Routes::new()).map_err(|e| config_error(&e, &[]))?;
        let n = usize::from(cfg.ports);
        Ok(SwitchDev {
            sw,
            now: 0,
            free: vec![0; n],
            pending: BTreeSet::new(),
            ready: Vec::new(),
            round: VecDeque::new(),
            round_sent: false,
            in_pass: false,
            up: vec![false; n],
            phys_down: vec![true; n],
            flushes: vec![0; n],
            changes: VecDeque::new(),
            snapshot: Vec::new(),
        })
    }

    fn port(&self, port: u16) -> Result<usize> {
        if port < self.sw.config().ports {
            Ok(usize::from(port))
        } else {
            Err(Error::argument(format!(
                "port = {port}: the switch has ports 0..={}",
                self.sw.config().ports - 1
            )))
        }
    }

    /// Moves the caller's time to `now`; any call but a transmit poll at the same time ends the
    /// transmit pass under way.
    fn at(&mut self, now: u64) -> Result<Instant> {
        tick(&mut self.now, now)?;
        self.in_pass = false;
        Ok(Instant::from_nanos(now))
    }

    /// Nanoseconds a port's wire is busy with a frame of `len` bytes (preamble, SFD and gap
    /// included).
    fn ser_ns(&self, len: usize) -> u64 {
        ((len as f64 + 20.0) * 8.0 / self.sw.config().rate_gbps).ceil() as u64
    }

    fn start_round(&mut self, now: u64) {
        self.sw.take_ready_ports(&mut self.ready);
        self.pending.extend(self.ready.drain(..));
        self.round.clear();
        let free = &self.free;
        self.round.extend(
            self.pending
                .iter()
                .copied()
                .filter(|&p| free.get(usize::from(p)).is_some_and(|&f| f <= now)),
        );
        self.round_sent = false;
    }

    pub(crate) fn describe(&self) -> Description {
        describe(
            ETHLINK_ROLE_SWITCH,
            self.sw.config().ports,
            u32::from(self.sw.config().port_link(0).caps.bits()),
            "ethlink reference switch",
        )
    }

    pub(crate) fn physical(&mut self, port: u16, up: bool, now: u64) -> Result<()> {
        let p = self.port(port)?;
        let at = self.at(now)?;
        self.phys_down[p] = !up;
        if up {
            self.sw.port_up(at, p);
        } else {
            self.sw.port_down(at, p);
        }
        Ok(())
    }

    pub(crate) fn handle_frame(&mut self, port: u16, now: u64, frame: &[u8]) -> Result<()> {
        let p = self.port(port)?;
        let at = self.at(now)?;
        self.sw.handle_frame(at, p, frame);
        Ok(())
    }

    pub(crate) fn poll_transmit(&mut self, now: u64, buf: &mut [u8]) -> Result<Transmit> {
        if now != self.now {
            self.in_pass = false;
        }
        tick(&mut self.now, now)?;
        let at = Instant::from_nanos(now);
        if !self.in_pass {
            self.in_pass = true;
            self.start_round(now);
        }
        loop {
            while let Some(&p) = self.round.front() {
                match self.sw.poll_transmit(at, usize::from(p), buf) {
                    Ok(Some(t)) => {
                        self.round.pop_front();
                        let busy = self.ser_ns(t.len);
                        if let Some(f) = self.free.get_mut(usize::from(p)) {
                            *f = now.saturating_add(busy);
                        }
                        self.round_sent = true;
                        return Ok(Transmit::Frame {
                            port: p,
                            len: t.len,
                        });
                    }
                    Ok(None) => {
                        self.round.pop_front();
                        self.pending.remove(&p);
                    }
                    Err(e) => {
                        return Ok(Transmit::TooSmall {
                            port: p,
                            needed: e.needed,
                        });
                    }
                }
            }
            self.sw.take_ready_ports(&mut self.ready);
            if !self.round_sent && self.ready.is_empty() {
                self.in_pass = false;
                return Ok(Transmit::Nothing);
            }
            self.start_round(now);
        }
    }

    /// The switch's next timer, or the earliest time a busy wire with a frame behind it is
    /// free.
    pub(crate) fn poll_timeout(&self) -> Option<u64> {
        let timer = self.sw.poll_timeout().map(Instant::as_nanos);
        let wire = self
            .pending
            .iter()
            .filter_map(|&p| self.free.get(usize::from(p)).copied())
            .filter(|&f| f > self.now)
            .min();
        [timer, wire].into_iter().flatten().min()
    }

    pub(crate) fn handle_timeout(&mut self, now: u64) -> Result<()> {
        let at = self.at(now)?;
        if self.sw.poll_timeout().is_some_and(|d| d <= at) {
            self.sw.handle_timeout(at);
        }
        Ok(())
    }

    pub(crate) fn poll_event(&mut self, _data: &mut [u8]) -> Result<Polled> {
        if self.changes.is_empty() {
            for p in 0..usize::from(self.sw.config().ports) {
                let Some(l) = self.sw.link(p) else { continue };
                let (up, flushes) = (l.is_up(), l.counters().flushes);
                let port = u16::try_from(p).unwrap_or(u16::MAX);
                let blank = Event {
                    kind: 0,
                    port,
                    vc: 0,
                    reason: 0,
                    op: 0,
                    status: 0,
                    status_raw: 0,
                    id: 0,
                    len: 0,
                };
                if up && !self.up[p] {
                    self.changes.push_back(Event {
                        kind: ETHLINK_EVENT_LINK_UP,
                        ..blank
                    });
                } else if !up && self.up[p] {
                    let reason = if self.phys_down[p] {
                        ETHLINK_DOWN_PHYSICAL
                    } else if flushes != self.flushes[p] {
                        ETHLINK_DOWN_FLUSH
                    } else {
                        ETHLINK_DOWN_PEER_RESTART
                    };
                    self.changes.push_back(Event {
                        kind: ETHLINK_EVENT_LINK_DOWN,
                        reason,
                        ..blank
                    });
                }
                self.up[p] = up;
                self.flushes[p] = flushes;
            }
        }
        Ok(match self.changes.pop_front() {
            Some(e) => Polled::Event(e),
            None => Polled::Nothing,
        })
    }

    pub(crate) fn counters(&self, into: &mut Vec<(String, u64)>) {
        let vcs = self.sw.config().link.vcs;
        for (p, pc) in self.sw.counters().ports.iter().enumerate() {
            pc.for_each(|name, v, x| {
                if v < vcs {
                    into.push((format!("port{p}.{name}.vc{v}"), x));
                }
            });
            if let Some(l) = self.sw.link(p) {
                link_counters(l.counters(), &format!("port{p}.link."), into);
            }
        }
    }

    pub(crate) fn set_route(&mut self, dst: u16, ports: &[u16], groups: &[u16]) -> Result<()> {
        let g = gpu(dst, "dst")?;
        self.in_pass = false;
        self.sw
            .set_route_groups(g, ports, groups)
            .map_err(|e| Error::argument(format!("the entry of dst = {dst}: {e}")))
    }
}

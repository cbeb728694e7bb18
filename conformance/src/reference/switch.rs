//! The reference switch (`ethlink-switch`) behind the device boundary.
//!
//! Counters: those of Tables SW-T3 and SW-T4 as `port<p>.<name>.vc<v>` for every VC in use, and
//! each port link's counters (link.md Table LINK-T3) as `port<p>.link.<name>` or
//! `port<p>.link.<name>.vc<v>`: the link's `tx_frames`, `rx_frames`, `tx_bytes` and `rx_bytes`
//! share their names with the switch's, and count other things (a link's bytes are whole frames).
//!
//! Every port sends at the switch's line rate: a port whose wire is busy with a frame sends its
//! next one when the wire is free, so that egress contention is real and visible at the ports.

use std::collections::BTreeSet;
use std::time::Duration;

use ethlink_link::Instant;
use ethlink_protocol::fcs::FcsStatus;
use ethlink_protocol::{
    ETH_HEADER_LEN, GpuId, LINK_HEADER_LEN, NETWORK_HEADER_LEN, TPID_8021Q, VLAN_TAG_LEN, frame_len,
};
use ethlink_switch::{Config, FrameEnd, Routes, Switch};

use crate::device::{
    Advanced, Counters, Description, Device, DeviceError, LinkParams, Output, PROTOCOL_VERSION,
    Reply, Request, Role, Setup, to_hex,
};
use crate::reference::link_end::{apply, cap_names, link_counters, params_of};
use crate::reference::{Outputs, reportable, within_horizon};

/// Ports of the reference switch as the suite runs it.
pub const PORTS: u16 = 8;

/// A deliberate flaw of the cut-through decisions, for the suite's mutants: the switch reads a
/// frame's end wrongly when it begins to forward the frame on its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CutFlaw {
    /// Every end is taken as good: a damaged frame's copy ends with a good FCS (SW-6-2).
    NeverStomps,
    /// An end arriving late is taken as on time (SW-6-10).
    IgnoresStall,
    /// A frame is taken to be as long as its header says (SW-6-9).
    IgnoresLength,
    /// A port begins a frame while its wire is still busy with the one before (SW-6-12).
    OverlapsFrames,
}

/// A header given ahead (the `header` request), due to the switch once its bytes have arrived.
struct Ahead {
    /// When the header's last byte arrives.
    due: u64,
    end: FrameEnd,
    bytes: Vec<u8>,
}

/// The reference switch as a device under test.
pub struct RefSwitch {
    sw: Option<Switch>,
    base: Config,
    buf: Vec<u8>,
    now: u64,
    /// Per port: when its wire is free again.
    free: Vec<u64>,
    /// Ports that may have something to send.
    pending: BTreeSet<u16>,
    ready: Vec<u16>,
    /// Per port: the link state last reported.
    up: Vec<bool>,
    /// Per port: its physical link was taken down by a request.
    phys_down: Vec<bool>,
    /// Per port: the link's flush count last seen, to name why a link went down.
    flushes: Vec<u64>,
    /// Per port: the header of the frame arriving, given ahead and not yet due.
    ahead: Vec<Option<Ahead>>,
    /// A flaw the suite's mutants build in.
    pub(crate) flaw: Option<CutFlaw>,
}

impl Default for RefSwitch {
    fn default() -> Self {
        RefSwitch::with_config(Config {
            ports: PORTS,
            ..Config::default()
        })
    }
}

impl RefSwitch {
    /// A reference switch whose parameters start from `base` (the setup of each case overrides
    /// the link parameters, the table and `max_residence`).
    pub fn with_config(base: Config) -> Self {
        let n = usize::from(base.ports);
        RefSwitch {
            sw: None,
            base,
            buf: vec![0; 9216],
            now: 0,
            free: vec![0; n],
            pending: BTreeSet::new(),
            ready: Vec::new(),
            up: vec![false; n],
            phys_down: vec![true; n],
            flushes: vec![0; n],
            ahead: (0..n).map(|_| None).collect(),
            flaw: None,
        }
    }

    fn sw(&mut self) -> Result<&mut Switch, DeviceError> {
        self.sw
            .as_mut()
            .ok_or_else(|| DeviceError::Broken("used before reset".into()))
    }

    fn port(&self, port: u16) -> Result<usize, DeviceError> {
        if port < self.base.ports {
            Ok(usize::from(port))
        } else {
            Err(DeviceError::Broken(format!(
                "the switch has {} ports, not port {port}",
                self.base.ports
            )))
        }
    }

    /// Nanoseconds port wires are busy with a frame of `len` bytes (preamble, SFD and gap
    /// included).
    fn ser_ns(&self, len: usize) -> u64 {
        ((len as f64 + 20.0) * 8.0 / self.base.rate_gbps).ceil() as u64
    }

    /// Everything due at `t`: headers that have arrived, timers, then every port whose wire is
    /// free sends its next frame.
    fn step(&mut self, t: u64, out: &mut Outputs) -> Result<(), DeviceError> {
        let at = Instant::from_nanos(t);
        for p in 0..self.ahead.len() {
            if self.ahead[p].as_ref().is_some_and(|a| a.due <= t)
                && let Some(a) = self.ahead[p].take()
            {
                self.sw()?.handle_header(at, p, &a.bytes, a.end);
            }
        }
        let mut buf = std::mem::take(&mut self.buf);
        let result = (|| {
            let sw = self
                .sw
                .as_mut()
                .ok_or_else(|| DeviceError::Broken("no reset".into()))?;
            if sw.poll_timeout().is_some_and(|d| d <= at) {
                sw.handle_timeout(at);
            }
            loop {
                let sw = self
                    .sw
                    .as_mut()
                    .ok_or_else(|| DeviceError::Broken("no reset".into()))?;
                sw.take_ready_ports(&mut self.ready);
                self.pending.extend(self.ready.drain(..));
                let mut sent = false;
                let candidates: Vec<u16> = self
                    .pending
                    .iter()
                    .copied()
                    .filter(|&p| self.free[usize::from(p)] <= t)
                    .collect();
                for p in candidates {
                    let sw = self
                        .sw
                        .as_mut()
                        .ok_or_else(|| DeviceError::Broken("no reset".into()))?;
                    match sw.poll_transmit(at, usize::from(p), &mut buf) {
                        Ok(Some(tx)) => {
                            out.push(
                                t,
                                Output::Frame {
                                    port: p,
                                    time_ns: t,
                                    hex: to_hex(buf.get(..tx.len).unwrap_or_default()),
                                },
                            )?;
                            let busy = if self.flaw == Some(CutFlaw::OverlapsFrames) {
                                0
                            } else {
                                self.ser_ns(tx.len)
                            };
                            if let Some(f) = self.free.get_mut(usize::from(p)) {
                                *f = t.saturating_add(busy);
                            }
                            sent = true;
                        }
                        Ok(None) => {
                            self.pending.remove(&p);
                        }
                        Err(e) => return Err(DeviceError::Broken(format!("transmit: {e:?}"))),
                    }
                }
                let sw = self
                    .sw
                    .as_mut()
                    .ok_or_else(|| DeviceError::Broken("no reset".into()))?;
                sw.take_ready_ports(&mut self.ready);
                if !sent && self.ready.is_empty() {
                    break;
                }
            }
            Ok(())
        })();
        self.buf = buf;
        result?;
        self.link_events(out)
    }

    /// Reports the ports whose links came up or went down.
    fn link_events(&mut self, out: &mut Outputs) -> Result<(), DeviceError> {
        let at = self.now;
        let n = usize::from(self.base.ports);
        for p in 0..n {
            let (up, flushes) = {
                let sw = self.sw()?;
                let l = sw
                    .link(p)
                    .ok_or_else(|| DeviceError::Broken(format!("no link {p}")))?;
                (l.is_up(), l.counters().flushes)
            };
            let port = p as u16;
            if up && !self.up[p] {
                out.push(at, Output::LinkUp { port })?;
            } else if !up && self.up[p] {
                let reason = if self.phys_down[p] {
                    "physical"
                } else if flushes != self.flushes[p] {
                    "flush"
                } else {
                    "peer_restart"
                };
                out.push(
                    at,
                    Output::LinkDown {
                        port,
                        reason: reason.into(),
                    },
                )?;
            }
            self.up[p] = up;
            self.flushes[p] = flushes;
        }
        Ok(())
    }

    /// The next time the switch acts on its own: a timer, or a busy wire with a frame behind it.
    fn next_event(&self) -> Option<u64> {
        let sw = self.sw.as_ref()?;
        let timer = sw.poll_timeout().map(Instant::as_nanos);
        let wire = self
            .pending
            .iter()
            .map(|&p| self.free[usize::from(p)])
            .filter(|&f| f > self.now)
            .min();
        let ahead = self.ahead.iter().flatten().map(|a| a.due).min();
        [timer, wire, ahead]
            .into_iter()
            .flatten()
            .min()
            .map(|t| t.max(self.now.saturating_add(1)))
    }
}

impl Device for RefSwitch {
    fn hello(&mut self) -> Result<Description, DeviceError> {
        Ok(Description {
            version: PROTOCOL_VERSION,
            name: "ethlink reference switch".into(),
            role: Role::Switch,
            caps: cap_names(self.base.port_link(0).caps),
            ports: self.base.ports,
            tick_ns: None,
            rate_gbps: None,
        })
    }

    fn reset(&mut self, setup: &Setup) -> Result<LinkParams, DeviceError> {
        let mut cfg = self.base.clone();
        cfg.link = apply(&self.base.link, &setup.link);
        cfg.link.nonce_seed = setup.seed.wrapping_mul(2).wrapping_add(1);
        if let Some(ns) = setup.max_residence_ns {
            cfg.max_residence = Duration::from_nanos(ns);
        }
        if let Some(ns) = setup.latency_ns {
            cfg.latency = Duration::from_nanos(ns);
        }
        let mut routes = Routes::new();
        for r in &setup.routes {
            let dst = GpuId::new(r.dst)
                .ok_or_else(|| DeviceError::Refused(format!("GPU id {:#x}", r.dst)))?;
            routes
                .set_groups(dst, &r.ports, &r.groups)
                .map_err(|e| DeviceError::Refused(format!("route to {}: {e}", r.dst)))?;
        }
        let sw =
            Switch::new(cfg.clone(), routes).map_err(|e| DeviceError::Refused(e.to_string()))?;
        let n = usize::from(cfg.ports);
        self.sw = Some(sw);
        self.now = 0;
        self.free = vec![0; n];
        self.pending.clear();
        self.ready.clear();
        self.up = vec![false; n];
        self.phys_down = vec![true; n];
        self.flushes = vec![0; n];
        self.ahead = (0..n).map(|_| None).collect();
        Ok(params_of(&cfg.link))
    }

    fn frame(&mut self, port: u16, time_ns: u64, frame: &[u8]) -> Result<(), DeviceError> {
        let p = self.port(port)?;
        self.now = self.now.max(within_horizon("frame:", time_ns)?);
        let now = Instant::from_nanos(self.now);
        // A header given ahead and not due yet: the frame ended first, and is received whole.
        if let Some(a) = self.ahead.get_mut(p) {
            *a = None;
        }
        self.sw()?.handle_frame(now, p, frame);
        Ok(())
    }

    fn header(
        &mut self,
        port: u16,
        time_ns: u64,
        end_ns: u64,
        frame: &[u8],
    ) -> Result<(), DeviceError> {
        let p = self.port(port)?;
        let first = within_horizon("header:", time_ns)?;
        let end_ns = within_horizon("header:", end_ns)?;
        if end_ns < first {
            return Err(DeviceError::Broken(format!(
                "header: the frame ends at {end_ns} ns, before its first bit at {first} ns"
            )));
        }
        // The switch reads the header once its bytes (Ethernet, link and network headers) have
        // arrived at the line rate, preamble included.
        let tagged = frame.get(12..14) == Some(&TPID_8021Q.to_be_bytes()[..]);
        let eth = ETH_HEADER_LEN + if tagged { VLAN_TAG_LEN } else { 0 };
        let hdr = eth + LINK_HEADER_LEN + NETWORK_HEADER_LEN;
        let due = first.saturating_add(self.ser_ns(hdr));
        if due >= end_ns {
            return Ok(());
        }
        let mut end = FrameEnd {
            fcs: FcsStatus::of(frame),
            at: Some(Instant::from_nanos(end_ns)),
        };
        let mut bytes = frame.to_vec();
        match self.flaw {
            Some(CutFlaw::NeverStomps) => end.fcs = FcsStatus::Good,
            Some(CutFlaw::IgnoresStall) => end.at = Some(Instant::from_nanos(due)),
            Some(CutFlaw::IgnoresLength) => {
                let nh = eth + LINK_HEADER_LEN;
                if let Some(l) = frame.get(nh + 6..nh + 8) {
                    let plen = usize::from(u16::from_be_bytes([l[0], l[1]]));
                    bytes.resize(frame_len(eth, NETWORK_HEADER_LEN + plen), 0);
                }
            }
            _ => {}
        }
        if let Some(a) = self.ahead.get_mut(p) {
            *a = Some(Ahead { due, end, bytes });
        }
        Ok(())
    }

    fn request(&mut self, time_ns: u64, request: &Request) -> Result<Reply, DeviceError> {
        self.now = self.now.max(within_horizon("request:", time_ns)?);
        let now = Instant::from_nanos(self.now);
        match request {
            Request::PhysicalUp { port } => {
                let p = self.port(*port)?;
                self.phys_down[p] = false;
                self.sw()?.port_up(now, p);
            }
            Request::PhysicalDown { port } => {
                let p = self.port(*port)?;
                self.phys_down[p] = true;
                self.sw()?.port_down(now, p);
            }
            Request::SetRoute { dst, ports, groups } => {
                let gpu = GpuId::new(*dst)
                    .ok_or_else(|| DeviceError::Refused(format!("GPU id {dst:#x}")))?;
                self.sw()?
                    .set_route_groups(gpu, ports, groups)
                    .map_err(|e| DeviceError::Refused(format!("route to {dst}: {e}")))?;
            }
            other => {
                return Err(DeviceError::Refused(format!(
                    "a switch does not take {other:?}"
                )));
            }
        }
        Ok(Reply::default())
    }

    fn advance(&mut self, time_ns: u64) -> Result<Advanced, DeviceError> {
        let time_ns = within_horizon("advance:", time_ns)?;
        let mut out = Outputs::new(time_ns);
        loop {
            self.step(self.now, &mut out)?;
            match self.next_event() {
                Some(t) if t <= time_ns => {
                    out.step(t)?;
                    self.now = t;
                }
                _ => break,
            }
        }
        if time_ns > self.now {
            self.now = time_ns;
            self.step(self.now, &mut out)?;
        }
        Ok(Advanced {
            out: out.into_list(),
            next_ns: reportable(self.next_event()),
        })
    }

    fn counters(&mut self) -> Result<Counters, DeviceError> {
        let sw = self.sw()?;
        let vcs = sw.config().link.vcs;
        let mut c = Counters::new();
        for (p, pc) in sw.counters().ports.iter().enumerate() {
            pc.for_each(|name, v, x| {
                if v < vcs {
                    c.insert(format!("port{p}.{name}.vc{v}"), x);
                }
            });
            if let Some(l) = sw.link(p) {
                link_counters(l.counters(), &format!("port{p}.link."), &mut c);
            }
        }
        Ok(c)
    }
}

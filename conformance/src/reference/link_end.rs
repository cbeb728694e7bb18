//! The reference link end (`ethlink-link`) behind the device boundary.

use std::collections::VecDeque;

use ethlink_link::{Config, DownReason, Event, Instant, Link, LostReason, Release};
use ethlink_protocol::{Capabilities, MacAddr, Vc};

use crate::device::{
    Advanced, Counters, Description, Device, DeviceError, LinkParams, Output, PROTOCOL_VERSION,
    Reply, Request, Setup, from_hex, to_hex,
};
use crate::reference::{Outputs, reportable, within_horizon};

/// The port MAC address of the reference link end.
pub const MAC: MacAddr = MacAddr([0x02, 0x00, 0x00, 0x00, 0x0E, 0x01]);

/// The reference link end as a device under test, optionally changed by `tweak` before every
/// reset (how the deliberately broken variants are made).
pub struct RefLinkEnd {
    link: Option<Link>,
    base: Config,
    hold: [bool; 8],
    held: [VecDeque<Release>; 8],
    buf: Vec<u8>,
    now: u64,
}

impl Default for RefLinkEnd {
    fn default() -> Self {
        RefLinkEnd::with_config(Config::default())
    }
}

impl RefLinkEnd {
    /// A reference link end whose parameters start from `base` (the setup of each case
    /// overrides them).
    pub fn with_config(base: Config) -> Self {
        RefLinkEnd {
            link: None,
            base,
            hold: [false; 8],
            held: Default::default(),
            buf: vec![0; 9216],
            now: 0,
        }
    }

    fn link(&mut self) -> Result<&mut Link, DeviceError> {
        self.link
            .as_mut()
            .ok_or_else(|| DeviceError::Broken("used before reset".into()))
    }

    /// Drains the link's events into `out`.
    fn events(&mut self, out: &mut Outputs) -> Result<(), DeviceError> {
        let at = self.now;
        loop {
            let link = self.link()?;
            let (o, release) = match link.poll_event() {
                None => return Ok(()),
                Some(Event::LinkUp(_)) => (Some(Output::LinkUp { port: 0 }), None),
                Some(Event::LinkDown(r)) => (
                    Some(Output::LinkDown {
                        port: 0,
                        reason: match r {
                            DownReason::Flush => "flush",
                            DownReason::Physical => "physical",
                            DownReason::PeerRestart => "peer_restart",
                        }
                        .into(),
                    }),
                    None,
                ),
                Some(Event::Notice(_)) => (None, None),
                Some(Event::Delivered {
                    vc,
                    payload,
                    release,
                    ..
                }) => (
                    Some(Output::Delivered {
                        port: 0,
                        vc: vc.value(),
                        payload: to_hex(payload),
                    }),
                    Some((vc.value(), release)),
                ),
                Some(Event::Lost {
                    vc,
                    reason,
                    payload,
                }) => (
                    Some(Output::Lost {
                        port: 0,
                        vc: vc.value(),
                        reason: lost_name(reason).into(),
                        payload: to_hex(payload),
                    }),
                    None,
                ),
            };
            if let Some(o) = o {
                out.push(at, o)?;
            }
            if let Some((vc, r)) = release {
                let v = usize::from(vc);
                if self.hold[v] {
                    self.held[v].push_back(r);
                } else {
                    self.link()?
                        .release(r)
                        .map_err(|e| DeviceError::Broken(format!("release: {e:?}")))?;
                }
            }
        }
    }

    /// Sends every frame the link has at `time`.
    fn transmit(&mut self, time: u64, out: &mut Outputs) -> Result<(), DeviceError> {
        let mut buf = std::mem::take(&mut self.buf);
        let result = loop {
            let link = match self.link() {
                Ok(l) => l,
                Err(e) => break Err(e),
            };
            let frame = match link.poll_transmit(Instant::from_nanos(time), &mut buf) {
                Ok(Some(t)) => Output::Frame {
                    port: 0,
                    time_ns: time,
                    hex: to_hex(buf.get(..t.len).unwrap_or_default()),
                },
                Ok(None) => break Ok(()),
                Err(e) => break Err(DeviceError::Broken(format!("transmit: {e:?}"))),
            };
            if let Err(e) = out.push(time, frame) {
                break Err(e);
            }
            if let Err(e) = self.events(out) {
                break Err(e);
            }
        };
        self.buf = buf;
        result
    }
}

/// The boundary's word for a loss reason.
pub fn lost_name(r: LostReason) -> &'static str {
    match r {
        LostReason::UnknownFate => "unknown_fate",
        LostReason::ExceedsPeerMfs => "exceeds_peer_mfs",
        LostReason::VcNotAgreed => "vc_not_agreed",
        LostReason::Withdrawn => "withdrawn",
    }
}

/// `base` with the parameters of `p` that are given.
pub fn apply(base: &Config, p: &LinkParams) -> Config {
    let mut c = base.clone();
    let ns = ethlink_link::Duration::from_nanos;
    if let Some(v) = p.vcs {
        c.vcs = v;
    }
    let credits = p.rx_credits.unwrap_or(c.rx_credits[0]);
    let vcs = c.vcs;
    c = c.with_uniform_credits(vcs, credits);
    if let Some(v) = p.credit_size {
        c.credit_size = v;
    }
    if let Some(v) = p.credit_overhead {
        c.credit_overhead = v;
    }
    if let Some(v) = p.mfs {
        c.mfs = v;
    }
    if let Some(v) = p.llr_window {
        c.llr_window = v;
    }
    if let Some(v) = p.replay_max_frames {
        c.replay_max_frames = v;
    }
    if let Some(v) = p.replay_max_bytes {
        c.replay_max_bytes = v;
    }
    if let Some(v) = p.ack_spacing {
        c.ack_spacing = v;
    }
    if let Some(v) = p.ack_timer_ns {
        c.ack_timer = ns(v);
    }
    if let Some(v) = p.replay_timer_ns {
        c.replay_timer = ns(v);
    }
    if let Some(v) = p.replay_count_max {
        c.replay_count_max = v;
    }
    if let Some(v) = p.cf_min_credits {
        c.cf_min_credits = v;
    }
    if let Some(v) = p.cf_min_interval_ns {
        c.cf_min_interval = ns(v);
    }
    if let Some(v) = p.cf_max_interval_ns {
        c.cf_max_interval = ns(v);
    }
    if let Some(v) = p.cc_interval_ns {
        c.cc_interval = ns(v);
    }
    if let Some(v) = p.init_interval_ns {
        c.init_interval = ns(v);
    }
    if let Some(v) = p.init_timeout_ns {
        c.init_timeout = ns(v);
    }
    if let Some(v) = p.llr_max_age_ns {
        c.llr_max_age = ns(v);
    }
    c
}

/// The parameters of `c`, every field given.
pub fn params_of(c: &Config) -> LinkParams {
    let ns = |d: ethlink_link::Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    LinkParams {
        vcs: Some(c.vcs),
        credit_size: Some(c.credit_size),
        rx_credits: Some(c.rx_credits[0]),
        credit_overhead: Some(c.credit_overhead),
        mfs: Some(c.mfs),
        llr_window: Some(c.llr_window),
        replay_max_frames: Some(c.replay_max_frames),
        replay_max_bytes: Some(c.replay_max_bytes),
        ack_spacing: Some(c.ack_spacing),
        ack_timer_ns: Some(ns(c.ack_timer)),
        replay_timer_ns: Some(ns(c.replay_timer)),
        replay_count_max: Some(c.replay_count_max),
        cf_min_credits: Some(c.cf_min_credits),
        cf_min_interval_ns: Some(ns(c.cf_min_interval)),
        cf_max_interval_ns: Some(ns(c.cf_max_interval)),
        cc_interval_ns: Some(ns(c.cc_interval)),
        init_interval_ns: Some(ns(c.init_interval)),
        init_timeout_ns: Some(ns(c.init_timeout)),
        llr_max_age_ns: Some(ns(c.llr_max_age)),
    }
}

/// The counters of a link end as the boundary names them (`<name>` or `<name>.vc<v>`).
pub fn link_counters(c: &ethlink_link::Counters, prefix: &str, into: &mut Counters) {
    c.for_each(|name, vc, value| {
        let key = match vc {
            Some(v) => format!("{prefix}{name}.vc{v}"),
            None => format!("{prefix}{name}"),
        };
        into.insert(key, value);
    });
}

/// Capability names of `caps`.
pub fn cap_names(caps: Capabilities) -> Vec<String> {
    caps.names().map(str::to_owned).collect()
}

impl super::Timed for RefLinkEnd {
    fn now(&mut self) -> &mut u64 {
        &mut self.now
    }

    fn deadline(&mut self) -> Result<Option<u64>, DeviceError> {
        Ok(reportable(
            self.link()?.poll_timeout().map(Instant::as_nanos),
        ))
    }

    fn fire(&mut self, at: u64) -> Result<(), DeviceError> {
        self.link()?.handle_timeout(Instant::from_nanos(at));
        Ok(())
    }

    fn events(&mut self, out: &mut Outputs) -> Result<(), DeviceError> {
        RefLinkEnd::events(self, out)
    }

    fn transmit(&mut self, at: u64, out: &mut Outputs) -> Result<(), DeviceError> {
        RefLinkEnd::transmit(self, at, out)
    }
}

impl Device for RefLinkEnd {
    fn hello(&mut self) -> Result<Description, DeviceError> {
        Ok(Description {
            version: PROTOCOL_VERSION,
            name: "ethlink reference link end".into(),
            role: crate::device::Role::LinkEnd,
            caps: cap_names(self.base.caps),
            ports: 1,
            tick_ns: None,
            rate_gbps: None,
        })
    }

    fn reset(&mut self, setup: &Setup) -> Result<LinkParams, DeviceError> {
        let mut cfg = apply(&self.base, &setup.link);
        cfg.mac = MAC;
        cfg.nonce_seed = setup.seed.wrapping_mul(2).wrapping_add(1);
        let link = Link::new(cfg.clone()).map_err(|e| DeviceError::Refused(e.to_string()))?;
        self.link = Some(link);
        self.hold = [false; 8];
        self.held = Default::default();
        self.now = 0;
        Ok(params_of(&cfg))
    }

    fn frame(&mut self, port: u16, time_ns: u64, frame: &[u8]) -> Result<(), DeviceError> {
        if port != 0 {
            return Err(DeviceError::Broken(format!(
                "a link end has no port {port}"
            )));
        }
        self.now = self.now.max(within_horizon("frame:", time_ns)?);
        let now = Instant::from_nanos(self.now);
        self.link()?.handle_frame(now, frame);
        Ok(())
    }

    fn request(&mut self, time_ns: u64, request: &Request) -> Result<Reply, DeviceError> {
        self.now = self.now.max(within_horizon("request:", time_ns)?);
        let now = Instant::from_nanos(self.now);
        match request {
            Request::PhysicalUp { port: 0 } => self.link()?.physical_up(now),
            Request::PhysicalDown { port: 0 } => self.link()?.physical_down(now),
            Request::Submit {
                port: 0,
                vc,
                payload,
            } => {
                let payload = from_hex("payload", payload)?;
                let vc = Vc::new(*vc).ok_or_else(|| DeviceError::Refused(format!("VC {vc}")))?;
                self.link()?
                    .submit(vc, &payload)
                    .map_err(|e| DeviceError::Refused(format!("submit: {e:?}")))?;
            }
            Request::Hold { port: 0, vc, hold } => {
                let v = usize::from(*vc);
                if v >= 8 {
                    return Err(DeviceError::Refused(format!("VC {vc}")));
                }
                self.hold[v] = *hold;
                if !hold {
                    while let Some(r) = self.held[v].pop_front() {
                        self.link()?
                            .release(r)
                            .map_err(|e| DeviceError::Broken(format!("release: {e:?}")))?;
                    }
                }
            }
            Request::Withdraw { port: 0 } => {
                self.link()?.withdraw();
            }
            other => {
                return Err(DeviceError::Refused(format!(
                    "a link end does not take {other:?}"
                )));
            }
        }
        Ok(Reply::default())
    }

    fn advance(&mut self, time_ns: u64) -> Result<Advanced, DeviceError> {
        super::advance(self, time_ns)
    }

    fn counters(&mut self) -> Result<Counters, DeviceError> {
        let mut c = Counters::new();
        link_counters(self.link()?.counters(), "", &mut c);
        Ok(c)
    }
}

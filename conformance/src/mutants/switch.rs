//! Deliberately broken switches: the reference switch with a broken forwarding table, or wrapped
//! so that what crosses its ports breaks one requirement while its links stay consistent (frames
//! changed on the wire get a good FCS again, and keep their length, so that link-level retry and
//! credits see nothing wrong). The switch cases must catch each of them.

use std::collections::BTreeMap;

use ethlink_protocol::{FrameRepr, LinkFrame, fcs};

use crate::device::{
    Advanced, Counters, Description, Device, DeviceError, LinkParams, Output, Reply, Request,
    Setup, from_hex, to_hex,
};
use crate::reference::RefSwitch;
use crate::reference::switch::CutFlaw;

/// Builds a fresh mutant.
pub type Make = fn() -> Box<dyn Device>;

/// Every switch mutant, by name.
pub fn mutants() -> Vec<(&'static str, Make)> {
    vec![
        ("switch_rewrites_path_id", || {
            Box::new(Wrapped::new(Break::RewriteHeader))
        }),
        ("switch_forwards_to_the_next_port", || {
            Box::new(Wrapped::new(Break::NextPort))
        }),
        ("switch_reverses_equal_port_lists", || {
            Box::new(Wrapped::new(Break::ReversedLists))
        }),
        ("switch_ignores_groups_of_preference", || {
            Box::new(Wrapped::new(Break::IgnoresGroups))
        }),
        ("switch_swaps_pairs_of_frames", || {
            Box::new(Wrapped::new(Break::Reorder))
        }),
        ("switch_drops_a_frame_under_incast", || {
            Box::new(Wrapped::new(Break::DropUnderIncast))
        }),
        ("switch_without_latency", || {
            Box::new(Wrapped::new(Break::NoLatency))
        }),
        ("switch_ignores_max_residence", || {
            Box::new(Wrapped::new(Break::IgnoresMaxResidence))
        }),
        ("switch_counts_malformed_as_unroutable", || {
            Box::new(Wrapped::new(Break::MalformedAsUnroutable))
        }),
        ("switch_grants_four_times_its_buffer", || {
            Box::new(Wrapped::new(Break::OverGrants))
        }),
        ("switch_announces_role_endpoint", || {
            Box::new(Wrapped::new(Break::RoleEndpoint))
        }),
        ("switch_keeps_counters_across_reset", || {
            Box::new(Wrapped::new(Break::CountersSurviveReset))
        }),
        ("switch_cuts_through_without_stomping", || {
            Box::new(Wrapped::new(Break::Cut(CutFlaw::NeverStomps)))
        }),
        ("switch_cuts_through_a_stalled_frame", || {
            Box::new(Wrapped::new(Break::Cut(CutFlaw::IgnoresStall)))
        }),
        ("switch_cuts_through_trusting_the_declared_length", || {
            Box::new(Wrapped::new(Break::Cut(CutFlaw::IgnoresLength)))
        }),
        ("switch_sends_over_its_own_frames", || {
            Box::new(Wrapped::new(Break::Cut(CutFlaw::OverlapsFrames)))
        }),
    ]
}

/// What a mutant breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Break {
    /// The reference switch with a flaw of its cut-through decisions (switch.md \u{a7}6).
    Cut(CutFlaw),
    /// Every DATA frame it sends carries the path id XOR 0x80 (SW-2-2).
    RewriteHeader,
    /// Every port its table lists is taken as the next port (SW-2-1).
    NextPort,
    /// Every entry's list is reversed, so that the choice among equal ports indexes it from the
    /// wrong end (SW-2-4).
    ReversedLists,
    /// An entry's groups of preference are ignored: its ports are one group (SW-2-9).
    IgnoresGroups,
    /// Of two DATA frames of one VC and one length sent one after the other on a port, the
    /// payloads are swapped (SW-3-1).
    Reorder,
    /// The 50th DATA frame received while three or more ports receive DATA (within 2 us of each
    /// other) is sent to an unlisted GPU, so the switch discards it, and the discard is hidden
    /// from the counters (SW-4-4).
    DropUnderIncast,
    /// Frames leave as soon as they arrive: the reference built with a latency of 0 while it
    /// claims the default (SW-6-1).
    NoLatency,
    /// The `max_residence` of the setup is ignored: frames age after the default 40 us
    /// (SW-4-7).
    IgnoresMaxResidence,
    /// Malformed frames are counted in `discard_unroutable` instead of `discard_malformed`
    /// (SW-7-1).
    MalformedAsUnroutable,
    /// Each input grants four times the credits the switch reports in force, so that it holds
    /// more frames than its buffer (SW-4-1).
    OverGrants,
    /// INIT and INIT_ECHO announce role Endpoint (CLS-2-1, SW-9-5).
    RoleEndpoint,
    /// A reset leaves the counters as they were (SW-9-2).
    CountersSurviveReset,
}

/// How long the reordering mutant keeps a frame waiting for a partner.
const HOLD_NS: u64 = 2_000;

struct Wrapped {
    inner: RefSwitch,
    what: Break,
    ports: u16,
    /// Per port: a DATA frame held back for a swap, with its time.
    held: Vec<Option<(u64, Vec<u8>)>>,
    /// Per port: when it last received a DATA frame.
    last_data: Vec<Option<u64>>,
    incast_frames: u64,
    /// Discards hidden from the counters, by counter name.
    hidden: BTreeMap<String, u64>,
    /// Counters kept from before the last reset.
    carry: Counters,
}

impl Wrapped {
    fn new(what: Break) -> Self {
        let inner = if what == Break::NoLatency {
            RefSwitch::with_config(ethlink_switch::Config {
                ports: crate::reference::switch::PORTS,
                latency: std::time::Duration::ZERO,
                ..ethlink_switch::Config::default()
            })
        } else {
            RefSwitch::default()
        };
        let mut inner = inner;
        if let Break::Cut(flaw) = what {
            inner.flaw = Some(flaw);
        }
        let ports = crate::reference::switch::PORTS;
        Wrapped {
            inner,
            what,
            ports,
            held: vec![None; usize::from(ports)],
            last_data: vec![None; usize::from(ports)],
            incast_frames: 0,
            hidden: BTreeMap::new(),
            carry: Counters::new(),
        }
    }
}

/// The VC of a DATA frame, or `None` when `bytes` is not one.
fn data_vc(bytes: &[u8]) -> Option<u8> {
    match FrameRepr::parse_bytes(bytes, 9216).ok()?.link {
        LinkFrame::Data { header, .. } => Some(header.vc.value()),
        _ => None,
    }
}

/// Writes a good FCS over the last four bytes of `f`.
fn mend(f: &mut [u8]) {
    let n = f.len();
    let c = fcs::fcs_bytes(&f[..n - 4]);
    f[n - 4..].copy_from_slice(&c);
}

/// Offset of the network header in an untagged frame.
const NET: usize = 20;

impl Wrapped {
    fn rework(&mut self, out: Vec<Output>, now: u64) -> Result<Vec<Output>, DeviceError> {
        let mut v = Vec::with_capacity(out.len());
        for o in out {
            let Output::Frame { port, time_ns, hex } = o else {
                v.push(o);
                continue;
            };
            let mut bytes = from_hex("frame", &hex)?;
            let vc = data_vc(&bytes);
            match (self.what, vc) {
                (Break::RewriteHeader, Some(_)) => {
                    bytes[NET + 4] ^= 0x80;
                    mend(&mut bytes);
                    v.push(Output::Frame {
                        port,
                        time_ns,
                        hex: to_hex(&bytes),
                    });
                }
                (Break::RoleEndpoint, None)
                    if bytes.len() > 35 && matches!(bytes[14] & 0x0F, 5 | 6) =>
                {
                    bytes[34] = (bytes[34] & 0x3F) | 0x40;
                    mend(&mut bytes);
                    v.push(Output::Frame {
                        port,
                        time_ns,
                        hex: to_hex(&bytes),
                    });
                }
                (Break::Reorder, Some(vc)) => {
                    let slot = &mut self.held[usize::from(port)];
                    match slot.take() {
                        None => *slot = Some((time_ns, bytes)),
                        Some((_, mut first))
                            if first.len() == bytes.len() && data_vc(&first) == Some(vc) =>
                        {
                            let n = bytes.len();
                            let a = first[NET..n - 4].to_vec();
                            first[NET..n - 4].copy_from_slice(&bytes[NET..n - 4]);
                            bytes[NET..n - 4].copy_from_slice(&a);
                            mend(&mut first);
                            mend(&mut bytes);
                            for f in [first, bytes] {
                                v.push(Output::Frame {
                                    port,
                                    time_ns,
                                    hex: to_hex(&f),
                                });
                            }
                        }
                        Some((_, first)) => {
                            v.push(Output::Frame {
                                port,
                                time_ns,
                                hex: to_hex(&first),
                            });
                            *slot = Some((time_ns, bytes));
                        }
                    }
                }
                _ => v.push(Output::Frame {
                    port,
                    time_ns,
                    hex: to_hex(&bytes),
                }),
            }
        }
        // A frame held too long goes as it is.
        for (p, slot) in self.held.iter_mut().enumerate() {
            if slot.as_ref().is_some_and(|(t, _)| now >= t + HOLD_NS)
                && let Some((_, f)) = slot.take()
            {
                v.push(Output::Frame {
                    port: p as u16,
                    time_ns: now,
                    hex: to_hex(&f),
                });
            }
        }
        Ok(v)
    }
}

impl Device for Wrapped {
    fn hello(&mut self) -> Result<Description, DeviceError> {
        self.inner.hello()
    }

    fn reset(&mut self, setup: &Setup) -> Result<LinkParams, DeviceError> {
        let mut s = setup.clone();
        match self.what {
            Break::NextPort => {
                for r in &mut s.routes {
                    for p in &mut r.ports {
                        *p = (*p + 1) % self.ports;
                    }
                }
            }
            Break::ReversedLists => {
                for r in &mut s.routes {
                    r.ports.reverse();
                }
            }
            Break::IgnoresGroups => {
                for r in &mut s.routes {
                    r.groups.clear();
                }
            }
            Break::IgnoresMaxResidence => s.max_residence_ns = None,
            _ => {}
        }
        self.held = vec![None; usize::from(self.ports)];
        self.last_data = vec![None; usize::from(self.ports)];
        self.incast_frames = 0;
        self.hidden.clear();
        if self.what == Break::CountersSurviveReset
            && let Ok(c) = self.inner.counters()
        {
            for (k, v) in c {
                *self.carry.entry(k).or_default() += v;
            }
        }
        if self.what == Break::OverGrants {
            let asked = s.link.rx_credits.unwrap_or(512);
            s.link.rx_credits = Some(asked * 4);
            let mut p = self.inner.reset(&s)?;
            p.rx_credits = Some(asked);
            return Ok(p);
        }
        self.inner.reset(&s)
    }

    fn frame(&mut self, port: u16, time_ns: u64, frame: &[u8]) -> Result<(), DeviceError> {
        if self.what == Break::DropUnderIncast
            && let Some(vc) = data_vc(frame)
        {
            self.last_data[usize::from(port)] = Some(time_ns);
            let busy = self
                .last_data
                .iter()
                .flatten()
                .filter(|&&t| time_ns.saturating_sub(t) <= 2_000)
                .count();
            if busy >= 3 {
                self.incast_frames += 1;
                if self.incast_frames == 50 {
                    let mut f = frame.to_vec();
                    f[NET..NET + 2].copy_from_slice(&0xFFFEu16.to_be_bytes());
                    mend(&mut f);
                    *self
                        .hidden
                        .entry(format!("port{port}.discard_unroutable.vc{vc}"))
                        .or_default() += 1;
                    return self.inner.frame(port, time_ns, &f);
                }
            }
        }
        self.inner.frame(port, time_ns, frame)
    }

    fn header(
        &mut self,
        port: u16,
        time_ns: u64,
        end_ns: u64,
        frame: &[u8],
    ) -> Result<(), DeviceError> {
        self.inner.header(port, time_ns, end_ns, frame)
    }

    fn request(&mut self, time_ns: u64, request: &Request) -> Result<Reply, DeviceError> {
        self.inner.request(time_ns, request)
    }

    fn advance(&mut self, time_ns: u64) -> Result<Advanced, DeviceError> {
        let a = self.inner.advance(time_ns)?;
        let out = self.rework(a.out, time_ns)?;
        let release = self.held.iter().flatten().map(|(t, _)| t + HOLD_NS).min();
        let next_ns = [a.next_ns, release].into_iter().flatten().min();
        Ok(Advanced { out, next_ns })
    }

    fn counters(&mut self) -> Result<Counters, DeviceError> {
        let mut c = self.inner.counters()?;
        for (k, v) in &self.carry {
            if let Some(x) = c.get_mut(k) {
                *x += v;
            }
        }
        if self.what == Break::MalformedAsUnroutable {
            let moved: Vec<(String, u64)> = c
                .iter()
                .filter(|(k, _)| k.contains(".discard_malformed."))
                .map(|(k, v)| (k.clone(), *v))
                .collect();
            for (k, v) in moved {
                c.insert(k.clone(), 0);
                let to = k.replace(".discard_malformed.", ".discard_unroutable.");
                *c.entry(to).or_default() += v;
            }
        }
        for (k, n) in &self.hidden {
            if let Some(x) = c.get_mut(k) {
                *x = x.saturating_sub(*n);
            }
        }
        Ok(c)
    }
}

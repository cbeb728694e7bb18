//! Link-end mutants: the reference link end behind a wrapper that changes what crosses the
//! boundary, each one breaking one requirement of link.md or wire.md. The link-end cases must
//! catch every one (conformance/tests/mutants_link.rs).

use std::collections::BTreeMap;

use ethlink_conformance::cases::common::{Frm, cc, data, decode, nack, refcs};
use ethlink_conformance::device::{
    Advanced, Counters, Description, Device, DeviceError, LinkParams, Output, Reply, Request,
    Setup, from_hex, to_hex,
};
use ethlink_conformance::reference::RefLinkEnd;

/// The nonce the fixed-nonce mutant shows on the wire, whatever it draws.
const FIXED_NONCE: u32 = 0x1234_5678;

/// What a mutant breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Break {
    /// Sends no NACK (LINK-4-3): its NACKs are dropped.
    NoNack,
    /// Skips the first frame of every replay (LINK-3-5): an off-by-one in go-back-N.
    ReplaySkipsFirst,
    /// Retransmits without the REPLAY flag (WIRE-3-5): the bit cleared, the FCS recomputed.
    NoReplayFlag,
    /// Under-reports the freed credits of its CFs by one (LINK-5-5): a credit leak.
    CreditLeak,
    /// Reports twice the credits it freed (LINK-5-5): credits returned twice.
    CreditsTwice,
    /// Carries 0 instead of 0xFFFFF as the last good number before the first frame
    /// (WIRE-4.2-1): a subtraction that does not wrap at the end of the sequence space.
    NoWrap,
    /// Shows the same nonce in every INIT and INIT_ECHO (LINK-2-9).
    FixedNonce,
    /// Puts a submitted frame on the wire at once, even before UP (LINK-2-7).
    DataBeforeUp,
    /// Sends no ACK (LINK-4-2, LINK-4-14, LINK-4-15, LINK-4-16): its ACKs are dropped.
    NoAcks,
    /// Delivers a duplicate a second time (LINK-4-5).
    DuplicateDelivered,
    /// Takes every peer grant as the largest possible (LINK-5-2).
    IgnoresGrant,
    /// Comes UP on an INIT_ECHO whatever nonce it echoes (LINK-2-3, LINK-2-17).
    AcceptsForeignEcho,
    /// Takes an INIT with a new nonce while UP for one of the peer it knows (LINK-2-6).
    MissesPeerRestart,
    /// Runs its ACK timer four times longer than the `ack_timer_ns` it reports (LINK-4-14): a
    /// broken setting.
    SlowAckTimer,
    /// Runs with a `cf_max_interval` of 1 s whatever it reports (LINK-5-10): a broken setting.
    NoPeriodicCf,
    /// Sends a CC behind every new DATA frame, while the replay buffer holds it (LINK-5-12).
    CcWhileBusy,
    /// Answers a stomped frame with a NACK (LINK-4-10).
    NacksStomped,
    /// Counts a frame discarded for its size in `rx_fcs_errors` too (LINK-7-1).
    CountsRuntTwice,
    /// Frees the frames its upper layer holds when the link leaves UP, as 1.2's LINK-6-4 read,
    /// so that it answers a restarted peer at once (LINK-2-18).
    FreesBufferAtReinit,
    /// Runs with an `llr_max_age` of 1 s whatever it reports (LINK-3-18): a link that keeps
    /// delivering a few frames per replay holds a frame for ever, as 1.2 allowed.
    NoAgeLimit,
}

/// The reference link end with one [`Break`].
pub struct Mutant {
    inner: RefLinkEnd,
    brk: Break,
    up: bool,
    replaying: bool,
    real_nonce: u32,
    extra: Vec<Output>,
    accepted: BTreeMap<u32, (u8, Vec<u8>)>,
    peer_nonce: Option<u32>,
    vcs: u8,
    /// VCs whose delivered payloads the harness asked to hold, one bit each.
    holding: u8,
}

impl Mutant {
    /// The reference broken by `brk`.
    pub fn new(brk: Break) -> Self {
        Mutant {
            inner: RefLinkEnd::default(),
            brk,
            up: false,
            replaying: false,
            real_nonce: 0,
            extra: Vec::new(),
            accepted: BTreeMap::new(),
            peer_nonce: None,
            vcs: 4,
            holding: 0,
        }
    }

    /// The frame as it leaves the mutant, or `None` when it does not.
    fn outgoing(&mut self, mut b: Vec<u8>) -> Option<Vec<u8>> {
        let f = decode(&b);
        match (self.brk, &f) {
            (Break::NoNack, Frm::Nack(_)) | (Break::NoAcks, Frm::Ack(_)) => return None,
            (Break::ReplaySkipsFirst, Frm::Data { flags, .. }) => {
                let replay = flags & 1 == 1;
                let first = replay && !self.replaying;
                self.replaying = replay;
                if first {
                    return None;
                }
            }
            (Break::NoReplayFlag, Frm::Data { flags, .. }) if flags & 1 == 1 => {
                b[15] &= !1;
                refcs(&mut b);
            }
            (Break::CreditLeak | Break::CreditsTwice, Frm::Cf(entries)) => {
                for (v, e) in entries.iter().enumerate() {
                    let Some(e) = e else { continue };
                    let new = if self.brk == Break::CreditLeak {
                        e.saturating_sub(1)
                    } else {
                        (e * 2) & 0xF_FFFF
                    };
                    let at = 24 + 4 * v;
                    b[at..at + 4].copy_from_slice(&new.to_be_bytes());
                }
                refcs(&mut b);
            }
            (Break::NoWrap, Frm::Ack(0xF_FFFF) | Frm::Nack(0xF_FFFF)) => {
                b[16..20].fill(0);
                refcs(&mut b);
            }
            (Break::FixedNonce, Frm::Init(i)) => {
                self.real_nonce = i.nonce;
                b[20..24].copy_from_slice(&FIXED_NONCE.to_be_bytes());
                refcs(&mut b);
            }
            (_, Frm::Init(i)) => self.real_nonce = i.nonce,
            (Break::FixedNonce, Frm::InitEcho(..)) => {
                b[20..24].copy_from_slice(&FIXED_NONCE.to_be_bytes());
                refcs(&mut b);
            }
            _ => {}
        }
        Some(b)
    }

    /// The frame as it reaches the reference.
    fn incoming(&mut self, b: &[u8]) -> Vec<u8> {
        let mut b = b.to_vec();
        match (self.brk, decode(&b)) {
            (Break::AcceptsForeignEcho, Frm::InitEcho(echo, _))
                if !self.up && echo != self.real_nonce =>
            {
                b[24..28].copy_from_slice(&self.real_nonce.to_be_bytes());
                refcs(&mut b);
            }
            (Break::MissesPeerRestart, Frm::Init(i) | Frm::InitEcho(_, i)) => match self.peer_nonce
            {
                Some(p) if self.up && p != i.nonce => {
                    b[20..24].copy_from_slice(&p.to_be_bytes());
                    refcs(&mut b);
                }
                _ if !self.up => self.peer_nonce = Some(i.nonce),
                _ => {}
            },
            (Break::FixedNonce, Frm::InitEcho(echo, _)) if echo == FIXED_NONCE => {
                b[24..28].copy_from_slice(&self.real_nonce.to_be_bytes());
                refcs(&mut b);
            }
            (Break::IgnoresGrant, Frm::Init(i) | Frm::InitEcho(_, i)) => {
                for v in 0..usize::from(i.vcs) {
                    let at = 40 + 4 * v;
                    b[at..at + 4].copy_from_slice(&0x7_FFFFu32.to_be_bytes());
                }
                refcs(&mut b);
            }
            _ => {}
        }
        b
    }
}

fn rx_frames(c: &Counters) -> u64 {
    (0..8)
        .map(|v| c.get(&format!("rx_frames.vc{v}")).copied().unwrap_or(0))
        .sum()
}

impl Device for Mutant {
    fn hello(&mut self) -> Result<Description, DeviceError> {
        let mut d = self.inner.hello()?;
        d.name = format!("reference link end, broken: {:?}", self.brk);
        Ok(d)
    }

    fn reset(&mut self, setup: &Setup) -> Result<LinkParams, DeviceError> {
        self.up = false;
        self.replaying = false;
        self.real_nonce = 0;
        self.extra.clear();
        self.accepted.clear();
        self.peer_nonce = None;
        self.holding = 0;
        self.vcs = setup.link.vcs.unwrap_or(4);
        let mut inner = setup.clone();
        let asked = setup.link.clone();
        match self.brk {
            Break::SlowAckTimer => {
                inner.link.ack_timer_ns = Some(asked.ack_timer_ns.unwrap_or(500) * 4);
            }
            Break::NoPeriodicCf => inner.link.cf_max_interval_ns = Some(1_000_000_000),
            Break::NoAgeLimit => inner.link.llr_max_age_ns = Some(1_000_000_000),
            _ => return self.inner.reset(setup),
        }
        let mut p = self.inner.reset(&inner)?;
        // The parameters it reports are the ones asked for.
        p.ack_timer_ns = Some(asked.ack_timer_ns.unwrap_or(500));
        p.cf_max_interval_ns = Some(asked.cf_max_interval_ns.unwrap_or(2_000));
        p.llr_max_age_ns = Some(asked.llr_max_age_ns.unwrap_or(25_000));
        Ok(p)
    }

    fn frame(&mut self, port: u16, time_ns: u64, frame: &[u8]) -> Result<(), DeviceError> {
        if self.brk == Break::NacksStomped && ethlink_protocol::fcs::is_stomped(frame) {
            self.extra.push(Output::Frame {
                port: 0,
                time_ns,
                hex: to_hex(&nack(0xF_FFFF)),
            });
        }
        let b = self.incoming(frame);
        if self.brk != Break::DuplicateDelivered {
            return self.inner.frame(port, time_ns, &b);
        }
        let before = self.inner.counters()?;
        self.inner.frame(port, time_ns, &b)?;
        let after = self.inner.counters()?;
        if let Frm::Data {
            vc, seq, payload, ..
        } = decode(&b)
        {
            let dups = |c: &Counters| c.get("duplicates").copied().unwrap_or(0);
            if rx_frames(&after) > rx_frames(&before) {
                self.accepted.insert(seq, (vc, payload));
            } else if dups(&after) > dups(&before)
                && let Some((vc, p)) = self.accepted.get(&seq)
            {
                self.extra.push(Output::Delivered {
                    port: 0,
                    vc: *vc,
                    payload: to_hex(p),
                });
            }
        }
        Ok(())
    }

    fn request(&mut self, time_ns: u64, request: &Request) -> Result<Reply, DeviceError> {
        if let (Break::DataBeforeUp, Request::Submit { vc, payload, .. }) = (self.brk, request)
            && !self.up
        {
            let p = from_hex("payload", payload)?;
            self.extra.push(Output::Frame {
                port: 0,
                time_ns,
                hex: to_hex(&data(*vc, 0, false, &p)),
            });
        }
        if let Request::Hold { vc, hold, .. } = request
            && *vc < 8
        {
            self.holding = if *hold {
                self.holding | 1 << vc
            } else {
                self.holding & !(1 << vc)
            };
        }
        self.inner.request(time_ns, request)
    }

    fn advance(&mut self, time_ns: u64) -> Result<Advanced, DeviceError> {
        let a = self.inner.advance(time_ns)?;
        let mut out = std::mem::take(&mut self.extra);
        for o in a.out {
            match o {
                Output::Frame { port, time_ns, hex } => {
                    let b = from_hex("frame", &hex)?;
                    let first_data =
                        matches!(decode(&b), Frm::Data { flags, .. } if flags & 1 == 0);
                    if let Some(b) = self.outgoing(b) {
                        out.push(Output::Frame {
                            port,
                            time_ns,
                            hex: to_hex(&b),
                        });
                    }
                    if self.brk == Break::CcWhileBusy && first_data {
                        let entries: Vec<(u8, u32)> = (0..self.vcs).map(|v| (v, 0)).collect();
                        out.push(Output::Frame {
                            port,
                            time_ns,
                            hex: to_hex(&cc(&entries)),
                        });
                    }
                }
                Output::LinkUp { port } => {
                    self.up = true;
                    out.push(Output::LinkUp { port });
                }
                Output::LinkDown { port, reason } => {
                    self.up = false;
                    out.push(Output::LinkDown { port, reason });
                    if self.brk == Break::FreesBufferAtReinit {
                        for vc in (0..8u8).filter(|v| self.holding >> v & 1 == 1) {
                            for hold in [false, true] {
                                self.inner
                                    .request(time_ns, &Request::Hold { port, vc, hold })?;
                            }
                        }
                    }
                }
                other => out.push(other),
            }
        }
        Ok(Advanced {
            out,
            next_ns: a.next_ns,
        })
    }

    fn counters(&mut self) -> Result<Counters, DeviceError> {
        let mut c = self.inner.counters()?;
        if self.brk == Break::CountsRuntTwice {
            let damaged = c.get("rx_damaged").copied().unwrap_or(0);
            *c.entry("rx_fcs_errors".to_owned()).or_default() += damaged;
        }
        Ok(c)
    }
}

macro_rules! mutant_fns {
    ($($name:ident => $brk:ident),* $(,)?) => {
        $(
            fn $name() -> Box<dyn Device> {
                Box::new(Mutant::new(Break::$brk))
            }
        )*
        /// Every link-end mutant, by name.
        pub fn mutants() -> Vec<(&'static str, fn() -> Box<dyn Device>)> {
            vec![$((stringify!($name), $name as fn() -> Box<dyn Device>)),*]
        }
    };
}

mutant_fns! {
    no_nack => NoNack,
    replay_skips_first => ReplaySkipsFirst,
    no_replay_flag => NoReplayFlag,
    credit_leak => CreditLeak,
    credits_twice => CreditsTwice,
    no_wrap_before_first => NoWrap,
    fixed_nonce => FixedNonce,
    data_before_up => DataBeforeUp,
    no_acks => NoAcks,
    duplicate_delivered => DuplicateDelivered,
    ignores_grant => IgnoresGrant,
    accepts_foreign_echo => AcceptsForeignEcho,
    misses_peer_restart => MissesPeerRestart,
    slow_ack_timer => SlowAckTimer,
    no_periodic_cf => NoPeriodicCf,
    cc_while_busy => CcWhileBusy,
    nacks_stomped => NacksStomped,
    counts_runt_twice => CountsRuntTwice,
    frees_buffer_at_reinit => FreesBufferAtReinit,
    no_age_limit => NoAgeLimit,
}

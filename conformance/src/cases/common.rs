//! What the cases of every role share: set-ups, peers, frame builders and readers.

use ethlink_link::Config as LinkConfig;
use ethlink_protocol::{FrameRepr, LinkFrame, MacAddr, Seq};

use crate::case::Stop;
use crate::ctx::Ctx;
use crate::device::{LinkParams, Setup};

/// The MAC address of the harness's peers; port `p` gets `02:00:00:00:0f:p`.
pub fn peer_mac(port: u16) -> MacAddr {
    MacAddr([0x02, 0x00, 0x00, 0x00, 0x0F, port as u8])
}

/// A setup with `link` and the seed every case uses.
pub fn setup(link: LinkParams) -> Setup {
    Setup {
        link,
        seed: 7,
        ..Setup::default()
    }
}

/// The configuration of a reference peer for port `port` that matches the parameters the device
/// reported in force (the harness's peer announces the same VCs, MFS, credits and timers).
pub fn peer_config(ctx: &Ctx<'_>, port: u16) -> LinkConfig {
    let base = LinkConfig {
        mac: peer_mac(port),
        nonce_seed: 0x5EED_0000 + u64::from(port),
        ..LinkConfig::default()
    };
    crate::reference::link_end::apply(&base, &ctx.params)
}

/// Resets the device with `link`, attaches a matching reference peer to port 0 and runs until
/// both ends are UP (within 200 us). Fails with LINK-2-3 when the device never comes up.
pub fn up_with_peer(ctx: &mut Ctx<'_>, link: LinkParams) -> Result<(), Stop> {
    ctx.reset(&setup(link))?;
    let cfg = peer_config(ctx, 0);
    ctx.attach(0, cfg)?;
    let up = ctx.run_until(200_000, |c| {
        c.peer(0).map(|p| p.link.is_up()).unwrap_or(false)
            && c.log()
                .iter()
                .any(|l| l.from_dut && kind_of(&l.bytes) == Some(Kind::InitEcho))
    })?;
    if !up {
        return Err(Stop::fail(
            "LINK-2-3",
            "the link comes UP with a conforming peer within 200 us",
            "it did not",
        ));
    }
    // Let the device's own UP settle (it comes UP on the peer's INIT_ECHO).
    ctx.run_for(2_000)?;
    Ok(())
}

/// The kind of a frame, as far as a receiver can tell (no MFS check).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// DATA with its sequence number.
    Data(u32),
    /// ACK with its sequence number.
    Ack(u32),
    /// NACK with its sequence number.
    Nack(u32),
    /// CF.
    Cf,
    /// CC.
    Cc,
    /// INIT.
    Init,
    /// INIT_ECHO.
    InitEcho,
}

/// The kind of `bytes`, or `None` when it does not parse.
pub fn kind_of(bytes: &[u8]) -> Option<Kind> {
    let r = FrameRepr::parse_bytes(bytes, 9216).ok()?;
    Some(match r.link {
        LinkFrame::Data { header, .. } => Kind::Data(header.seq.value()),
        LinkFrame::Ack(s) => Kind::Ack(s.value()),
        LinkFrame::Nack(s) => Kind::Nack(s.value()),
        LinkFrame::CreditUpdate(_) => Kind::Cf,
        LinkFrame::CreditResync(_) => Kind::Cc,
        LinkFrame::Init(_) => Kind::Init,
        LinkFrame::InitEcho { .. } => Kind::InitEcho,
    })
}

/// The kinds of the frames the device sent since `from` in the log.
pub fn sent_since(ctx: &Ctx<'_>, from: usize) -> Vec<Kind> {
    ctx.log()[from.min(ctx.log().len())..]
        .iter()
        .filter(|l| l.from_dut)
        .filter_map(|l| kind_of(&l.bytes))
        .collect()
}

/// The frames the device sent on port 0 since `from` in the log, decoded: what [`take_sent`] gives
/// for a raw port, for a port with a reference peer attached.
pub fn logged_since(ctx: &Ctx<'_>, from: usize) -> Vec<Sent> {
    ctx.log()[from.min(ctx.log().len())..]
        .iter()
        .filter(|l| l.from_dut && l.port == 0)
        .map(|l| Sent {
            time: l.time_ns,
            frame: decode(&l.bytes),
            bytes: l.bytes.clone(),
        })
        .collect()
}

/// A payload of `len` bytes (network header and one STORE-shaped filler) whose bytes after the
/// header carry `tag`, for link-level cases that only check order and integrity.
pub fn payload(len: usize, tag: u32) -> Vec<u8> {
    let len = len.max(16).next_multiple_of(4);
    let mut p = vec![0u8; len];
    // Network header: dst 1, src 2, path 0, count 1, payload length.
    p[0..2].copy_from_slice(&1u16.to_be_bytes());
    p[2..4].copy_from_slice(&2u16.to_be_bytes());
    p[5] = 1;
    let body = (len - 8) as u16;
    p[6..8].copy_from_slice(&body.to_be_bytes());
    // One FENCE-shaped transaction header whose data length covers the rest: opcode 0x06 is
    // never executed by a link end, which does not read transactions.
    p[8] = 0x06;
    p[12] = 2;
    let dlen = (len - 16) as u16;
    p[14..16].copy_from_slice(&dlen.to_be_bytes());
    for (i, b) in p[16..].iter_mut().enumerate() {
        *b = (tag as u8).wrapping_add(i as u8);
    }
    if len >= 20 {
        p[16..20].copy_from_slice(&tag.to_be_bytes());
    }
    p
}

/// The tag `payload` put in a payload, if it has one.
pub fn tag_of(p: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(p.get(16..20)?.try_into().ok()?))
}

/// The sequence number before `s`.
pub fn before(s: u32) -> u32 {
    Seq::new(s).value().wrapping_sub(1) & Seq::MASK
}

// ----- raw peers: the case writes every frame the device receives -------------------------------

use ethlink_protocol::{
    Capabilities, CreditRepr, DataFlags, DataHeader, EthernetRepr, InitRepr, Role as WireRole, Vc,
    VlanTag, fcs,
};

use crate::device::{Output, Request};

/// The nonce a raw peer announces unless a case says otherwise.
pub const RAW_NONCE: u32 = 0xC0DE_0001;

/// A frame the device sent, decoded, with the bytes it had on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// When it began.
    pub time: u64,
    /// What it is.
    pub frame: Frm,
    /// Its bytes, FCS included.
    pub bytes: Vec<u8>,
}

/// An owned, decoded frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frm {
    /// DATA: VC, flag bits (REPLAY 0x01, ACK_REQ 0x02), sequence number, payload.
    Data {
        /// The VC.
        vc: u8,
        /// The five flag bits.
        flags: u8,
        /// The sequence number.
        seq: u32,
        /// Network header and transactions.
        payload: Vec<u8>,
    },
    /// ACK carrying a sequence number.
    Ack(u32),
    /// NACK carrying a sequence number.
    Nack(u32),
    /// CF with its entries (None: not in the mask).
    Cf([Option<u32>; 8]),
    /// CC with its entries.
    Cc([Option<u32>; 8]),
    /// INIT.
    Init(InitRepr),
    /// INIT_ECHO: echo nonce and parameters.
    InitEcho(u32, InitRepr),
    /// Anything that does not decode.
    Bad,
}

impl Frm {
    /// Whether it is a DATA frame.
    pub fn is_data(&self) -> bool {
        matches!(self, Frm::Data { .. })
    }
}

/// Decodes `bytes` as the device's peer would (no MFS limit below 9216).
pub fn decode(bytes: &[u8]) -> Frm {
    let Ok(r) = FrameRepr::parse_bytes(bytes, 9216) else {
        return Frm::Bad;
    };
    match r.link {
        LinkFrame::Data { header, payload } => {
            let eth = r.eth.header_len();
            Frm::Data {
                vc: header.vc.value(),
                flags: bytes.get(eth + 1).copied().unwrap_or(0) & 0x1F,
                seq: header.seq.value(),
                payload: payload.to_vec(),
            }
        }
        LinkFrame::Ack(s) => Frm::Ack(s.value()),
        LinkFrame::Nack(s) => Frm::Nack(s.value()),
        LinkFrame::CreditUpdate(c) => Frm::Cf(c.counters),
        LinkFrame::CreditResync(c) => Frm::Cc(c.counters),
        LinkFrame::Init(i) => Frm::Init(i),
        LinkFrame::InitEcho { echo_nonce, init } => Frm::InitEcho(echo_nonce, init),
    }
}

/// Takes and decodes the frames the device sent on raw port 0.
pub fn take_sent(ctx: &mut Ctx<'_>) -> Vec<Sent> {
    ctx.take_frames(0)
        .into_iter()
        .map(|(time, bytes)| Sent {
            time,
            frame: decode(&bytes),
            bytes,
        })
        .collect()
}

/// The DATA, ACK and NACK frames of `sent` (CF, CC and bring-up frames left out).
pub fn llr(sent: &[Sent]) -> Vec<Frm> {
    sent.iter()
        .filter(|s| matches!(s.frame, Frm::Data { .. } | Frm::Ack(_) | Frm::Nack(_)))
        .map(|s| s.frame.clone())
        .collect()
}

/// The sequence numbers of the NACKs in `sent`.
pub fn nacks(sent: &[Sent]) -> Vec<u32> {
    sent.iter()
        .filter_map(|s| match s.frame {
            Frm::Nack(n) => Some(n),
            _ => None,
        })
        .collect()
}

/// The sequence numbers of the ACKs in `sent`.
pub fn acks(sent: &[Sent]) -> Vec<u32> {
    sent.iter()
        .filter_map(|s| match s.frame {
            Frm::Ack(n) => Some(n),
            _ => None,
        })
        .collect()
}

/// The DATA frames of `sent` as (sequence number, REPLAY flag, tag of the payload). ACK_REQ is
/// left out: a transmitter may set it on any frame (WIRE-3-6).
pub fn data_of(sent: &[Sent]) -> Vec<(u32, u8, u32)> {
    sent.iter()
        .filter_map(|s| match &s.frame {
            Frm::Data {
                seq,
                flags,
                payload,
                ..
            } => Some((*seq, *flags & 0x01, tag_of(payload).unwrap_or(u32::MAX))),
            _ => None,
        })
        .collect()
}

/// The CF frames of `sent`.
pub fn cfs(sent: &[Sent]) -> Vec<(u64, [Option<u32>; 8])> {
    sent.iter()
        .filter_map(|s| match s.frame {
            Frm::Cf(c) => Some((s.time, c)),
            _ => None,
        })
        .collect()
}

/// The CC frames of `sent`.
pub fn ccs(sent: &[Sent]) -> Vec<(u64, [Option<u32>; 8])> {
    sent.iter()
        .filter_map(|s| match s.frame {
            Frm::Cc(c) => Some((s.time, c)),
            _ => None,
        })
        .collect()
}

/// The tags of the payloads delivered in `outs`, with their VCs.
pub fn delivered(outs: &[Output]) -> Vec<(u8, u32)> {
    outs.iter()
        .filter_map(|o| match o {
            Output::Delivered { vc, payload, .. } => {
                let p = hex::decode(payload).ok()?;
                Some((*vc, tag_of(&p).unwrap_or(u32::MAX)))
            }
            _ => None,
        })
        .collect()
}

/// The payloads reported lost in `outs`: (reason, tag).
pub fn lost(outs: &[Output]) -> Vec<(String, u32)> {
    outs.iter()
        .filter_map(|o| match o {
            Output::Lost {
                reason, payload, ..
            } => {
                let p = hex::decode(payload).ok()?;
                Some((reason.clone(), tag_of(&p).unwrap_or(u32::MAX)))
            }
            _ => None,
        })
        .collect()
}

/// The link events in `outs`: "up" or "down:" followed by the reason.
pub fn link_events(outs: &[Output]) -> Vec<String> {
    outs.iter()
        .filter_map(|o| match o {
            Output::LinkUp { .. } => Some("up".to_owned()),
            Output::LinkDown { reason, .. } => Some(format!("down:{reason}")),
            _ => None,
        })
        .collect()
}

/// The parameters a raw peer announces: the same as the device's in force, with `nonce`.
pub fn raw_init(ctx: &Ctx<'_>, nonce: u32) -> InitRepr {
    let p = &ctx.params;
    let vcs = p.vcs.unwrap_or(4).clamp(1, 8);
    let mut credits = [0u32; 8];
    for c in credits.iter_mut().take(usize::from(vcs)) {
        *c = p.rx_credits.unwrap_or(512);
    }
    InitRepr {
        nonce,
        vcs,
        credit_size: p.credit_size.unwrap_or(64),
        mfs: p.mfs.unwrap_or(9216),
        window: p.llr_window.unwrap_or(Seq::MAX_WINDOW),
        credits,
        credit_overhead: 0,
        caps: Capabilities::NONE,
        role: WireRole::LinkEnd,
    }
}

/// The Ethernet header of the raw peer's frames.
pub fn raw_eth() -> EthernetRepr {
    EthernetRepr {
        dst: MacAddr::LINK_LOCAL,
        src: peer_mac(0),
        vlan: None,
    }
}

/// The bytes of `link` as the raw peer sends it.
pub fn emit(link: LinkFrame<'_>) -> Vec<u8> {
    emit_with(raw_eth(), link)
}

/// The bytes of `link` behind `eth`.
pub fn emit_with(eth: EthernetRepr, link: LinkFrame<'_>) -> Vec<u8> {
    let r = FrameRepr { eth, link };
    let mut buf = vec![0u8; r.buffer_len()];
    let n = r.emit(&mut buf).unwrap_or(0);
    buf.truncate(n);
    buf
}

/// A DATA frame of the raw peer.
pub fn data(vc: u8, seq: u32, ack_req: bool, payload: &[u8]) -> Vec<u8> {
    emit(LinkFrame::Data {
        header: DataHeader {
            vc: Vc::new(vc & 7).unwrap_or_default(),
            flags: DataFlags {
                replay: false,
                ack_req,
            },
            seq: Seq::new(seq),
        },
        payload,
    })
}

/// A DATA frame of `len` bytes (destination MAC through FCS, untagged, `len` >= 40 and a
/// multiple of 4) whose payload carries `tag`.
pub fn data_len(vc: u8, seq: u32, len: usize, tag: u32) -> Vec<u8> {
    data(vc, seq, false, &payload(len - 24, tag))
}

/// An 802.1Q tag with priority `pcp`.
pub fn tag(pcp: u8) -> VlanTag {
    VlanTag {
        pcp,
        dei: false,
        vid: 7,
    }
}

/// An ACK of the raw peer.
pub fn ack(seq: u32) -> Vec<u8> {
    emit(LinkFrame::Ack(Seq::new(seq)))
}

/// A NACK of the raw peer.
pub fn nack(seq: u32) -> Vec<u8> {
    emit(LinkFrame::Nack(Seq::new(seq)))
}

/// A CF of the raw peer with `entries` (VC, counter).
pub fn cf(entries: &[(u8, u32)]) -> Vec<u8> {
    emit(LinkFrame::CreditUpdate(credit(entries)))
}

/// A CC of the raw peer with `entries` (VC, counter).
pub fn cc(entries: &[(u8, u32)]) -> Vec<u8> {
    emit(LinkFrame::CreditResync(credit(entries)))
}

fn credit(entries: &[(u8, u32)]) -> CreditRepr {
    let mut counters = [None; 8];
    for (v, c) in entries {
        if let Some(slot) = counters.get_mut(usize::from(*v)) {
            *slot = Some(*c & Seq::MASK);
        }
    }
    CreditRepr { counters }
}

/// An INIT of the raw peer.
pub fn init(repr: InitRepr) -> Vec<u8> {
    emit(LinkFrame::Init(repr))
}

/// An INIT_ECHO of the raw peer answering `echo`.
pub fn init_echo(echo: u32, repr: InitRepr) -> Vec<u8> {
    emit(LinkFrame::InitEcho {
        echo_nonce: echo,
        init: repr,
    })
}

/// Writes a good FCS over the last four bytes of `frame`.
pub fn refcs(frame: &mut [u8]) {
    let n = frame.len();
    if n >= 4 {
        let sum = fcs::fcs_bytes(&frame[..n - 4]);
        frame[n - 4..].copy_from_slice(&sum);
    }
}

/// Writes a stomped FCS over the last four bytes of `frame`.
pub fn stomp(frame: &mut [u8]) {
    let n = frame.len();
    if n >= 4 {
        let sum = fcs::stomped_bytes(&frame[..n - 4]);
        frame[n - 4..].copy_from_slice(&sum);
    }
}

/// What a raw bring-up learned of the device.
#[derive(Debug, Clone)]
pub struct Raw {
    /// The nonce of the device's INIT.
    pub dut_nonce: u32,
    /// The parameters the device announced.
    pub dut_init: InitRepr,
    /// The parameters the raw peer announced.
    pub peer: InitRepr,
    /// What the device sent from the INIT_ECHO that brought it UP until the bring-up returned.
    pub after_up: Vec<Sent>,
    /// The outputs of the device from the INIT_ECHO until the bring-up returned (link-up
    /// included).
    pub outs: Vec<Output>,
}

/// Resets the device with `link`, brings its physical link up on a raw port and reads its first
/// INIT. Fails with LINK-2-1 when no INIT comes within 100 ns.
pub fn raw_start(ctx: &mut Ctx<'_>, link: LinkParams) -> Result<InitRepr, Stop> {
    ctx.reset(&setup(link))?;
    ctx.request(&Request::PhysicalUp { port: 0 })?;
    ctx.run_for(100)?;
    let sent = take_sent(ctx);
    sent.iter()
        .find_map(|s| match s.frame {
            Frm::Init(i) => Some(i),
            _ => None,
        })
        .ok_or_else(|| {
            Stop::fail(
                "LINK-2-1",
                "an INIT at once on physical up",
                format!(
                    "frames: {:?}",
                    sent.iter().map(|s| &s.frame).collect::<Vec<_>>()
                ),
            )
        })
}

/// Completes a raw bring-up: the raw peer sends INIT with `peer`, expects the INIT_ECHO, then
/// answers the device's INIT (`dut`) with an INIT_ECHO; the device must report UP.
pub fn raw_finish(ctx: &mut Ctx<'_>, dut: InitRepr, peer: InitRepr) -> Result<Raw, Stop> {
    ctx.inject(0, &init(peer))?;
    ctx.run_for(50)?;
    let sent = take_sent(ctx);
    let echo = sent.iter().find_map(|s| match s.frame {
        Frm::InitEcho(e, i) => Some((e, i)),
        _ => None,
    });
    let Some((e, i)) = echo else {
        return Err(Stop::fail(
            "LINK-2-2",
            "an INIT_ECHO answering the INIT",
            "none".to_string(),
        ));
    };
    check_eq_u32("LINK-2-2", "echo nonce", e, peer.nonce)?;
    let dut_nonce = latest_nonce(&sent).unwrap_or(dut.nonce);
    check_eq_u32(
        "LINK-2-2",
        "INIT_ECHO nonce (the device's own)",
        i.nonce,
        dut_nonce,
    )?;
    ctx.inject(0, &init_echo(dut_nonce, peer))?;
    ctx.run_for(50)?;
    let outs = ctx.take_outputs();
    if !link_events(&outs).contains(&"up".to_owned()) {
        return Err(Stop::fail(
            "LINK-2-3",
            "a link-up event on the INIT_ECHO of the device's nonce",
            format!("outputs: {outs:?}"),
        ));
    }
    let after_up = take_sent(ctx);
    Ok(Raw {
        dut_nonce,
        dut_init: i,
        peer,
        after_up,
        outs,
    })
}

fn latest_nonce(sent: &[Sent]) -> Option<u32> {
    sent.iter().rev().find_map(|s| match s.frame {
        Frm::Init(i) => Some(i.nonce),
        _ => None,
    })
}

fn check_eq_u32(req: &'static str, what: &str, seen: u32, expected: u32) -> Result<(), Stop> {
    crate::case::check_eq(req, what, format!("{seen:#x}"), format!("{expected:#x}"))
}

/// Brings the device up with `link` against a raw peer announcing the device's own parameters.
pub fn raw_up(ctx: &mut Ctx<'_>, link: LinkParams) -> Result<Raw, Stop> {
    let dut = raw_start(ctx, link)?;
    let peer = raw_init(ctx, RAW_NONCE);
    raw_finish(ctx, dut, peer)
}

/// The counters every frame handed to a link end increments exactly one of (LINK-7-3).
pub fn rx_counter_names() -> Vec<String> {
    let mut v: Vec<String> = [
        "acks_received",
        "nacks_received",
        "cf_received",
        "cc_received",
        "inits_received",
        "init_echoes_received",
        "rx_fcs_errors",
        "rx_damaged",
        "rx_stomped",
        "rx_foreign",
        "rx_bad_version",
        "rx_unknown_kind",
        "rx_malformed_control",
        "rx_vc_not_agreed",
        "rx_not_up",
        "duplicates",
        "discarded_after_nack",
        "init_echoes_ignored",
        "init_refused",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    for vc in 0..8 {
        v.push(format!("rx_frames.vc{vc}"));
        v.push(format!("credit_overruns.vc{vc}"));
    }
    v
}

/// Hands `frame` to the device, runs `settle` ns and checks that exactly one of the receive
/// counters (LINK-7-3) rose, by one, and that it is `name`. Returns the frames the device sent
/// meanwhile.
pub fn counted_as(
    ctx: &mut Ctx<'_>,
    frame: &[u8],
    name: &str,
    req: &'static str,
) -> Result<Vec<Sent>, Stop> {
    let before = ctx.counters()?;
    ctx.inject(0, frame)?;
    ctx.run_for(50)?;
    let after = ctx.counters()?;
    let mut moved = Vec::new();
    for n in rx_counter_names() {
        let d = after
            .get(&n)
            .copied()
            .unwrap_or(0)
            .wrapping_sub(before.get(&n).copied().unwrap_or(0));
        if d != 0 {
            moved.push((n, d));
        }
    }
    if moved != vec![(name.to_owned(), 1)] {
        return Err(Stop::fail(
            req,
            format!("exactly one receive counter rises, {name} by 1"),
            format!("counters that moved: {moved:?}"),
        ));
    }
    Ok(take_sent(ctx))
}

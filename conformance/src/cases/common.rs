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

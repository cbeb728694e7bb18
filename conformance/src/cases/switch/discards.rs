//! Frames a switch cannot forward (switch.md §7) and the counters of them (§8): malformed,
//! unroutable, for a port that is down, refused by the egress, of unknown fate, and held frames
//! of an input that restarts. The `SWT-DISC-*` cases.

use ethlink_link::Config as LinkConfig;
use ethlink_protocol::fcs;

use super::{
    DISCARDS, credits_back, ctr, data, delivered, gpu_of, need_ports, nonzero, one_per_port,
    peer_credits, small_peer, sw_setup, tag, up_ports,
};
use crate::case::{Stop, check, check_eq};
use crate::cases::common::{Kind, kind_of, peer_config};
use crate::ctx::{Ctx, Dir, Fault};
use crate::device::{LinkParams, Request};

/// The malformed network headers of WIRE-5-3 and WIRE-5-7 a case makes on the wire, by the
/// variant number a tag carries: each changes the network header of a well-formed payload.
const MALFORMED: [&str; 5] = [
    "destination 0xFFFF",
    "source 0xFFFF",
    "transaction count 0",
    "payload length past the frame",
    "payload length 4, below 8",
];

/// Tags of frames the hook of [`malformed_discarded`] damages: `0xBAD0_0000 | variant << 8 | k`.
const BAD_TAG: u32 = 0xBAD0_0000;

/// Changes the network header of `payload` as variant `v` of [`MALFORMED`] says.
fn make_malformed(v: u32, payload: &mut [u8]) {
    let len = payload.len() as u16 - 8;
    match v {
        0 => payload[0..2].copy_from_slice(&0xFFFFu16.to_be_bytes()),
        1 => payload[2..4].copy_from_slice(&0xFFFFu16.to_be_bytes()),
        2 => payload[5] = 0,
        3 => payload[6..8].copy_from_slice(&(len + 100).to_be_bytes()),
        _ => payload[6..8].copy_from_slice(&4u16.to_be_bytes()),
    }
}

/// Port 0's peer and the device agree small buffers (64 credits of 64 B, MFS 4 KiB), so that a
/// few discarded frames whose credits were kept would stop the peer.
fn small_buffers() -> LinkParams {
    LinkParams {
        rx_credits: Some(64),
        mfs: Some(4096),
        ..LinkParams::default()
    }
}

pub(super) fn malformed_discarded(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    malformed_discarded_with(ctx, false)
}

/// As [`malformed_discarded`], the switch given every frame's header as its first bit arrives:
/// a switch that decides on the header must still find the network header malformed.
pub(super) fn malformed_discarded_headers_ahead(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    malformed_discarded_with(ctx, true)
}

fn malformed_discarded_with(ctx: &mut Ctx<'_>, headers_ahead: bool) -> Result<(), Stop> {
    need_ports(ctx, 2)?;
    let n = ctx.desc.ports;
    up_ports(
        ctx,
        &sw_setup(one_per_port(n), small_buffers(), None),
        &[0, 1],
        |_, c| c,
    )?;
    let granted = peer_credits(ctx, 0, 0)?;
    ctx.cut_headers = headers_ahead;
    // The peer sends well-formed payloads; the wire damages the network header of those whose
    // tag says so and mends the FCS, so that the link accepts them.
    ctx.set_hook(
        0,
        Box::new(|dir, _, bytes| {
            let n = bytes.len();
            if dir == Dir::ToDut && n > 64 && bytes[14] & 0x0F == 0 {
                let t = tag(&bytes[20..]).unwrap_or(0);
                if t & 0xFFFF_0000 == BAD_TAG {
                    make_malformed((t >> 8) & 0xFF, &mut bytes[20..n - 4]);
                    let f = fcs::fcs_bytes(&bytes[..n - 4]);
                    bytes[n - 4..].copy_from_slice(&f);
                }
            }
            Fault::Pass
        }),
    )?;
    let rounds = 8u32;
    let from = ctx.log().len();
    for k in 0..rounds {
        for v in 0..MALFORMED.len() as u32 {
            let t = BAD_TAG | v << 8 | k;
            ctx.peer_submit(0, 0, &data(gpu_of(1), gpu_of(0), 0, t, 900))?;
        }
    }
    // Then a good frame: it gets through only if the discarded frames' credits came back.
    ctx.peer_submit(0, 0, &data(gpu_of(1), gpu_of(0), 0, 0x77, 100))?;
    ctx.run_for(30_000)?;
    let nacks: Vec<Kind> = ctx.log()[from..]
        .iter()
        .filter(|l| l.from_dut && l.port == 0)
        .filter_map(|l| kind_of(&l.bytes))
        .filter(|k| matches!(k, Kind::Nack(_)))
        .collect();
    check(
        nacks.is_empty(),
        "WIRE-5-6",
        "no NACK for a malformed network header",
        || format!("{nacks:?}"),
    )?;
    let want = u64::from(rounds) * MALFORMED.len() as u64;
    check_eq(
        "SW-7-1",
        "port0.discard_malformed.vc0",
        ctr(ctx, 0, "discard_malformed", 0)?,
        want,
    )?;
    check_eq(
        "SW-8-2",
        "port0.rx_frames.vc0",
        ctr(ctx, 0, "rx_frames", 0)?,
        want + 1,
    )?;
    let got = delivered(ctx, 1)?;
    check(
        got == vec![(0, 0x77)],
        "SW-7-4",
        format!(
            "the good frame sent after {want} malformed ones ({} KiB, more than the 4 KiB input \
             buffer) is forwarded, alone",
            want * 900 / 1024
        ),
        || format!("port 1 received {got:x?}"),
    )?;
    credits_back(ctx, 0, 0, granted, "the malformed frames'")?;
    let d = nonzero(ctx, &DISCARDS)?;
    check_eq(
        "SW-7-6",
        "discard counters other than zero",
        d,
        vec![format!("port0.discard_malformed.vc0={want}")],
    )
}

pub(super) fn unroutable_discarded(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 3)?;
    let n = ctx.desc.ports;
    up_ports(
        ctx,
        &sw_setup(one_per_port(n), small_buffers(), None),
        &[0, 1, 2],
        |_, c| c,
    )?;
    let granted = peer_credits(ctx, 0, 0)?;
    // GPU 7 is in no entry: 40 frames of 1000 B, ten times the input buffer.
    for k in 0..40 {
        ctx.peer_submit(0, 0, &data(7, gpu_of(0), 0, k, 1000))?;
    }
    ctx.peer_submit(0, 0, &data(gpu_of(1), gpu_of(0), 0, 0x100, 100))?;
    ctx.run_for(30_000)?;
    check_eq(
        "SW-7-2",
        "port0.discard_unroutable.vc0 (GPU 7 unlisted)",
        ctr(ctx, 0, "discard_unroutable", 0)?,
        40,
    )?;
    let got = delivered(ctx, 1)?;
    check(
        got == vec![(0, 0x100)],
        "SW-7-4",
        "the frame after the 40 unroutable ones forwarded",
        || format!("port 1 received {got:x?}"),
    )?;
    // Port 2 goes down: its GPU has no UP port left.
    ctx.request(&Request::PhysicalDown { port: 2 })?;
    ctx.run_for(2_000)?;
    for k in 0..40 {
        ctx.peer_submit(0, 0, &data(gpu_of(2), gpu_of(0), 0, 0x200 | k, 1000))?;
    }
    ctx.peer_submit(0, 0, &data(gpu_of(1), gpu_of(0), 0, 0x101, 100))?;
    ctx.run_for(30_000)?;
    check_eq(
        "SW-7-2",
        "port0.discard_unroutable.vc0 (40 more, for GPU 102 whose only port is down)",
        ctr(ctx, 0, "discard_unroutable", 0)?,
        80,
    )?;
    let got = delivered(ctx, 1)?;
    check(
        got == vec![(0, 0x101)],
        "SW-7-4",
        "the frame after the 40 more forwarded",
        || format!("port 1 received {got:x?}"),
    )?;
    credits_back(ctx, 0, 0, granted, "the unroutable frames'")?;
    let d = nonzero(ctx, &DISCARDS)?;
    check_eq(
        "SW-7-6",
        "discard counters other than zero",
        d,
        vec!["port0.discard_unroutable.vc0=80".to_string()],
    )
}

/// Ports 0, 1 and 2 UP, port 2's peer small and holding what it gets, and `frames` frames of
/// 1000 B (tags 0 up) submitted by port 0's peer for port 2, run for 10 us: the switch's input
/// buffer of port 0 fills and port 0's peer waits for credits with the rest. Returns the credits
/// of VC 0 port 0's peer held before it sent.
fn fill_input_0_for_held_port_2(ctx: &mut Ctx<'_>, frames: u32) -> Result<u32, Stop> {
    need_ports(ctx, 3)?;
    let n = ctx.desc.ports;
    let s = sw_setup(one_per_port(n), LinkParams::default(), None);
    up_ports(
        ctx,
        &s,
        &[0, 1, 2],
        |p, c| if p == 2 { small_peer(c) } else { c },
    )?;
    ctx.peer_hold(2, true)?;
    let granted = peer_credits(ctx, 0, 0)?;
    for k in 0..frames {
        ctx.peer_submit(0, 0, &data(gpu_of(2), gpu_of(0), 0, k, 1000))?;
    }
    ctx.run_for(10_000)?;
    Ok(granted)
}

pub(super) fn input_restart_forwards_held_frames(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    fill_input_0_for_held_port_2(ctx, 60)?;
    let taken = ctr(ctx, 0, "rx_frames", 0)?;
    let mut got: Vec<u32> = delivered(ctx, 2)?.iter().map(|d| d.1).collect();
    let through = got.len() as u64;
    if taken <= through + 4 {
        return Err(Stop::Inconclusive(
            "port 0's input buffer held too few frames for the egress".into(),
        ));
    }
    // Port 0's peer restarts: a new incarnation (another nonce) with nothing queued.
    let mut cfg = peer_config(ctx, 0);
    cfg.nonce_seed ^= 0x5EED_0002;
    let from = ctx.log().len();
    ctx.attach(0, cfg)?;
    ctx.run_for(20_000)?;
    let echoes = |ctx: &Ctx<'_>, from: usize| {
        ctx.log()[from..]
            .iter()
            .filter(|l| l.from_dut && l.port == 0 && kind_of(&l.bytes) == Some(Kind::InitEcho))
            .count()
    };
    check_eq(
        "LINK-2-18",
        "INIT_ECHOs on port 0 while its input buffer holds the last incarnation's frames",
        echoes(ctx, from),
        0,
    )?;
    check(
        !ctx.peer(0)?.link.is_up(),
        "LINK-2-18",
        "port 0's new peer is not UP while the switch holds the old frames",
        || "it is UP".to_owned(),
    )?;
    // The egress frees: every frame port 0 took leaves by port 2, then port 0 comes UP.
    ctx.peer_hold(2, false)?;
    let up = ctx.run_until(100_000, |c| {
        c.peer(0).map(|x| x.link.is_up()).unwrap_or(false)
    })?;
    check(
        up && echoes(ctx, from) > 0,
        "LINK-2-18",
        "port 0's link comes UP once the frames held for port 2 have left",
        || format!("UP: {up}, INIT_ECHOs: {}", echoes(ctx, from)),
    )?;
    ctx.run_for(20_000)?;
    got.extend(delivered(ctx, 2)?.iter().map(|d| d.1));
    got.sort_unstable();
    let want: Vec<u32> = (0..u32::try_from(taken).unwrap_or(u32::MAX)).collect();
    check(
        got == want,
        "SW-7-7",
        format!(
            "the {taken} frames port 0 took before its peer restarted ({through} through before \
             it) leave by port 2, each once"
        ),
        || format!("tags {got:?}"),
    )?;
    let d = nonzero(ctx, &DISCARDS)?;
    check_eq(
        "SW-4-4",
        "discard counters other than zero",
        d,
        Vec::<String>::new(),
    )
}

pub(super) fn port_down_discarded(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    // 100 frames of 1000 B for port 2, whose peer holds 2.5 KiB: the switch's input buffer
    // (32 KiB) fills and port 0's peer waits for credits with the rest.
    let total = 100u64;
    let granted = fill_input_0_for_held_port_2(ctx, total as u32)?;
    let tx_before = ctr(ctx, 2, "tx_frames", 0)?;
    let delivered_before = delivered(ctx, 2)?.len() as u64;
    if delivered_before >= 20 {
        return Err(Stop::Inconclusive("port 2 never stalled".into()));
    }
    ctx.request(&Request::PhysicalDown { port: 2 })?;
    ctx.run_for(30_000)?;
    let down = ctr(ctx, 2, "discard_port_down", 0)?;
    let unroutable = ctr(ctx, 0, "discard_unroutable", 0)?;
    let after = delivered(ctx, 2)?.len() as u64;
    let delivered_all = delivered_before + after;
    check(
        down > 0 && delivered_all + down + unroutable == total,
        "SW-7-3",
        format!(
            "the {total} frames for port 2: delivered to its peer, counted in \
             port2.discard_port_down.vc0 (those waiting when it went down) or, sent after, in \
             port0.discard_unroutable.vc0; each once, some lost to the port"
        ),
        || format!("{delivered_all} delivered, {down} port_down, {unroutable} unroutable"),
    )?;
    check(
        unroutable > 0,
        "SW-7-4",
        "port 0's peer sends its remaining frames once the discarded frames' credits return \
         (they are then unroutable)",
        || "it sent none: the credits did not come back".into(),
    )?;
    check_eq(
        "SW-7-4",
        "port0.held_bytes.vc0",
        ctr(ctx, 0, "held_bytes", 0)?,
        0,
    )?;
    let tx_after = ctr(ctx, 2, "tx_frames", 0)?;
    check(
        tx_after >= tx_before && tx_before > 0,
        "SW-8-4",
        "port2.tx_frames.vc0 kept when its link went down",
        || format!("{tx_before} before, {tx_after} after"),
    )?;
    let rx = ctr(ctx, 0, "rx_frames", 0)?;
    check_eq("SW-8-4", "port0.rx_frames.vc0", rx, total)?;
    credits_back(ctx, 0, 0, granted, "the frames discarded for port 2's")
}

pub(super) fn egress_refused(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 3)?;
    let n = ctx.desc.ports;
    let s = sw_setup(one_per_port(n), LinkParams::default(), None);
    // Port 2's peer agrees 2 VCs and an MFS of 1024 B.
    up_ports(ctx, &s, &[0, 2], |p, c| {
        if p == 2 {
            LinkConfig {
                mfs: 1024,
                ..c.with_uniform_credits(2, 512)
            }
        } else {
            c
        }
    })?;
    if ctx.params.vcs.unwrap_or(1) < 4 {
        return Err(Stop::Unsupported("the case needs VC 3".into()));
    }
    let granted = [peer_credits(ctx, 0, 0)?, peer_credits(ctx, 0, 3)?];
    ctx.peer_submit(0, 0, &data(gpu_of(2), gpu_of(0), 0, 1, 2000))?;
    ctx.peer_submit(0, 3, &data(gpu_of(2), gpu_of(0), 0, 2, 64))?;
    ctx.peer_submit(0, 1, &data(gpu_of(2), gpu_of(0), 0, 3, 64))?;
    ctx.run_for(10_000)?;
    check_eq(
        "SW-7-5",
        "port2.discard_egress_refused.vc0 (a 2060 B frame, MFS 1024)",
        ctr(ctx, 2, "discard_egress_refused", 0)?,
        1,
    )?;
    check_eq(
        "SW-7-5",
        "port2.discard_egress_refused.vc3 (VC 3, not agreed)",
        ctr(ctx, 2, "discard_egress_refused", 3)?,
        1,
    )?;
    let got = delivered(ctx, 2)?;
    check_eq("SW-7-5", "(vc, tag) received on port 2", got, vec![(1, 3)])?;
    let d = nonzero(ctx, &DISCARDS)?;
    check_eq(
        "SW-7-6",
        "discard counters other than zero",
        d,
        vec![
            "port2.discard_egress_refused.vc0=1".to_string(),
            "port2.discard_egress_refused.vc3=1".to_string(),
        ],
    )?;
    check_eq(
        "SW-7-4",
        "port0.held_bytes.vc0",
        ctr(ctx, 0, "held_bytes", 0)?,
        0,
    )?;
    credits_back(ctx, 0, 0, granted[0], "the refused frame's")?;
    credits_back(ctx, 0, 3, granted[1], "the refused frame's")
}

pub(super) fn unknown_fate_counted(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 3)?;
    let n = ctx.desc.ports;
    let link = LinkParams {
        replay_timer_ns: Some(50_000),
        ..LinkParams::default()
    };
    let s = sw_setup(one_per_port(n), link, None);
    up_ports(ctx, &s, &[0, 2], |_, c| c)?;
    // Port 2's peer receives every frame, but its ACKs are lost: the frames stay in the
    // switch's replay buffer, of unknown fate.
    ctx.set_hook(
        2,
        Box::new(|dir, _, bytes| {
            if dir == Dir::ToDut && kind_of(bytes).is_some_and(|k| matches!(k, Kind::Ack(_))) {
                Fault::Drop
            } else {
                Fault::Pass
            }
        }),
    )?;
    for k in 0..10u32 {
        ctx.peer_submit(0, 0, &data(gpu_of(2), gpu_of(0), 0, k, 500))?;
    }
    ctx.run_for(5_000)?;
    let got = delivered(ctx, 2)?;
    if got.len() != 10 {
        return Err(Stop::Inconclusive(format!(
            "port 2's peer received {} of the 10 frames before the port went down",
            got.len()
        )));
    }
    ctx.request(&Request::PhysicalDown { port: 2 })?;
    ctx.run_for(5_000)?;
    check_eq(
        "SW-7-3",
        "port2.discard_port_down.vc0 (10 frames sent, none acknowledged)",
        ctr(ctx, 2, "discard_port_down", 0)?,
        10,
    )?;
    check_eq(
        "SW-8-2",
        "port2.tx_frames.vc0",
        ctr(ctx, 2, "tx_frames", 0)?,
        10,
    )?;
    let d = nonzero(ctx, &DISCARDS)?;
    check_eq(
        "SW-7-6",
        "discard counters other than zero",
        d,
        vec!["port2.discard_port_down.vc0=10".to_string()],
    )
}

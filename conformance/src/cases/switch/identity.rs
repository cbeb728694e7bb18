//! Reset and identity (switch.md §9; classes.md §2-§3): what every port announces, the state after
//! a reset, the frames a reset drops, and tagging. The `SWT-INIT-*`, `SWT-RST-*` and `SWT-TAG-*`
//! cases.

use std::collections::BTreeMap;

use ethlink_protocol::{FrameRepr, LinkFrame};

use super::{
    data, delivered, gpu_of, need_ports, nonzero, one_per_port, sw_setup, up_all, up_ports,
};
use crate::case::{Stop, check, check_eq};
use crate::cases::common::{Kind, kind_of};
use crate::ctx::Ctx;
use crate::device::{LinkParams, Request};

pub(super) fn init_announces_switch(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let n = ctx.desc.ports;
    up_all(ctx, &sw_setup(one_per_port(n), LinkParams::default(), None))?;
    let mut declared: Vec<String> = ctx.desc.caps.clone();
    declared.sort();
    let mut switch_no: Option<[u8; 2]> = None;
    for p in 0..n {
        let mut inits = 0;
        let mut echoes = 0;
        for l in ctx.log().iter().filter(|l| l.from_dut && l.port == p) {
            let Ok(r) = FrameRepr::parse_bytes(&l.bytes, 9216) else {
                continue;
            };
            let init = match r.link {
                LinkFrame::Init(i) => {
                    inits += 1;
                    i
                }
                LinkFrame::InitEcho { init, .. } => {
                    echoes += 1;
                    init
                }
                _ => continue,
            };
            check_eq(
                "CLS-2-1",
                &format!("role announced on port {p}"),
                init.role,
                ethlink_protocol::Role::Switch,
            )?;
            check_eq(
                "SW-9-5",
                &format!("role announced on port {p}"),
                init.role,
                ethlink_protocol::Role::Switch,
            )?;
            check(
                init.vcs >= 4,
                "SW-5-4",
                format!("port {p} announces at least 4 VCs"),
                || format!("it announces {}", init.vcs),
            )?;
            let mut caps: Vec<String> = init.caps.names().map(str::to_owned).collect();
            caps.sort();
            let cuts = caps.iter().any(|c| c == "cut_through");
            if ctx.has_cap("cut_through") {
                check(
                    cuts,
                    "SW-6-7",
                    format!(
                        "port {p}, of a switch that declares cut_through, announces CUT_THROUGH"
                    ),
                    || format!("it announces {caps:?}"),
                )?;
            } else {
                check(
                    !cuts,
                    "SW-6-5",
                    format!(
                        "port {p}, of a switch that does not declare cut_through, does not \
                         announce CUT_THROUGH"
                    ),
                    || format!("it announces {caps:?}"),
                )?;
            }
            check_eq(
                "CLS-2-2",
                &format!("capabilities announced on port {p}"),
                caps,
                declared.clone(),
            )?;
        }
        check(
            inits > 0 && echoes > 0,
            "CLS-2-1",
            format!("port {p} sends INIT and INIT_ECHO while it comes up"),
            || format!("{inits} INIT, {echoes} INIT_ECHO"),
        )?;
        for l in ctx.log().iter().filter(|l| l.from_dut && l.port == p) {
            let src: [u8; 6] = l
                .bytes
                .get(6..12)
                .and_then(|s| s.try_into().ok())
                .unwrap_or_default();
            let s = [src[2], src[3]];
            let want_s = *switch_no.get_or_insert(s);
            let [p1, p0] = p.to_be_bytes();
            let want = [0x02, 0x01, want_s[0], want_s[1], p1, p0];
            check(
                src == want,
                "SW-9-4",
                format!("source MAC of every frame on port {p}: {want:02x?}"),
                || format!("{src:02x?}"),
            )?;
        }
    }
    Ok(())
}

pub(super) fn reset_state(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let n = ctx.desc.ports;
    ctx.reset(&sw_setup(one_per_port(n), LinkParams::default(), None))?;
    ctx.run_for(20_000)?;
    let sent: Vec<(u16, u64)> = ctx
        .log()
        .iter()
        .filter(|l| l.from_dut)
        .map(|l| (l.port, l.time_ns))
        .collect();
    check(
        sent.is_empty(),
        "SW-9-3",
        "no frame on any port during 20 us after a reset, every physical link down",
        || format!("frames sent (port, time): {sent:?}"),
    )?;
    let vcs = ctx.params.vcs.unwrap_or(4);
    let c = ctx.counters()?;
    const ALL: [&str; 12] = [
        "rx_frames",
        "rx_bytes",
        "tx_frames",
        "tx_bytes",
        "discard_malformed",
        "discard_unroutable",
        "discard_aged",
        "discard_port_down",
        "discard_egress_refused",
        "held_bytes",
        "held_max_bytes",
        "residence_max_ns",
    ];
    for p in 0..n {
        for v in 0..vcs {
            for name in ALL {
                let key = format!("port{p}.{name}.vc{v}");
                match c.get(&key) {
                    None => {
                        return Err(Stop::fail(
                            "SW-8-1",
                            format!("a counter named {key}"),
                            "none",
                        ));
                    }
                    Some(&x) => check_eq("SW-9-2", &key, x, 0)?,
                }
            }
        }
    }
    // One port up: it alone initialises.
    ctx.request(&Request::PhysicalUp { port: 0 })?;
    ctx.run_for(5_000)?;
    let sent: Vec<(u16, Option<Kind>)> = ctx
        .log()
        .iter()
        .filter(|l| l.from_dut)
        .map(|l| (l.port, kind_of(&l.bytes)))
        .collect();
    check(
        !sent.is_empty() && sent.iter().all(|s| *s == (0, Some(Kind::Init))),
        "SW-9-3",
        "INIT frames on port 0 only, once its physical link is up",
        || format!("frames sent (port, kind): {sent:?}"),
    )
}

pub(super) fn reset_drops_held_frames(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 3)?;
    let n = ctx.desc.ports;
    // Grants of 32 KiB: 60 frames of 1 KB fill port 1's peer and leave the rest in the switch.
    let link = LinkParams {
        rx_credits: Some(512),
        ..LinkParams::default()
    };
    let s = sw_setup(one_per_port(n), link, None);
    up_ports(ctx, &s, &[0, 1], |_, c| c)?;
    // Port 1's peer keeps everything: the switch holds frames for it.
    ctx.peer_hold(1, true)?;
    for k in 0..60 {
        ctx.peer_submit(0, 0, &data(gpu_of(1), gpu_of(0), 0, k, 1000))?;
    }
    ctx.run_for(10_000)?;
    let before = delivered(ctx, 1)?.len();
    if before >= 60 {
        return Err(Stop::Inconclusive(
            "the peer's buffer held every frame: none was left in the switch".into(),
        ));
    }
    // Reset and bring port 1 up with a fresh peer: nothing of before may leave.
    up_ports(ctx, &s, &[1], |_, c| c)?;
    let c = nonzero(
        ctx,
        &[
            "rx_frames",
            "tx_frames",
            "held_bytes",
            "held_max_bytes",
            "residence_max_ns",
            "discard_port_down",
        ],
    )?;
    check(
        c.is_empty(),
        "SW-9-2",
        "every counter zero after the reset",
        || format!("{c:?}"),
    )?;
    ctx.run_for(20_000)?;
    let after = delivered(ctx, 1)?;
    check(
        after.is_empty(),
        "SW-9-1",
        "no frame held before the reset leaves after it",
        || format!("port 1 delivered tags {after:?}"),
    )
}

pub(super) fn tagged_ports_announce(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 2)?;
    let n = ctx.desc.ports;
    up_ports(
        ctx,
        &sw_setup(one_per_port(n), LinkParams::default(), None),
        &[0, 1],
        |_, c| c,
    )?;
    for k in 0..4u32 {
        let (from, to) = if k % 2 == 0 { (0, 1) } else { (1, 0) };
        ctx.peer_submit(
            from,
            (k % 2) as u8,
            &data(gpu_of(to), gpu_of(from), 0, k, 64),
        )?;
    }
    ctx.run_for(10_000)?;
    // Per port: whether every INIT and INIT_ECHO it sent announced TAGGED, and its first tagged
    // frame.
    let mut announced: BTreeMap<u16, bool> = BTreeMap::new();
    let mut tagged: BTreeMap<u16, Vec<u8>> = BTreeMap::new();
    for l in ctx.log().iter().filter(|l| l.from_dut) {
        if l.bytes.get(12..14) == Some(&[0x81, 0x00][..]) {
            tagged.entry(l.port).or_insert_with(|| l.bytes.clone());
        }
        if let Ok(r) = FrameRepr::parse_bytes(&l.bytes, 9216) {
            let caps = match r.link {
                LinkFrame::Init(i) => Some(i.caps),
                LinkFrame::InitEcho { init, .. } => Some(init.caps),
                _ => None,
            };
            if let Some(c) = caps {
                let has = c.bits() & ethlink_protocol::Capabilities::TAGGED.bits() != 0;
                let e = announced.entry(l.port).or_insert(true);
                *e = *e && has;
            }
        }
    }
    for (port, frame) in tagged {
        check(
            announced.get(&port).copied().unwrap_or(false),
            "SW-9-6",
            format!("port {port}, which sends 802.1Q-tagged frames, announces TAGGED"),
            || {
                format!(
                    "its INIT or INIT_ECHO did not; a tagged frame: {}",
                    hex::encode(&frame)
                )
            },
        )?;
    }
    Ok(())
}

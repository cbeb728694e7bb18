//! Bring-up (link.md §2, §2.1 nonces and restarts) and re-initialisation (link.md §6): INIT and
//! INIT_ECHO, the parameters an end announces and the ones the two ends agree, refused INITs,
//! the INIT timeout, restarts of the peer, physical down, and the peer's address. The
//! `LE-INIT-*` cases.

use ethlink_protocol::Capabilities;

use super::{
    accepted, counter_delta, delivered_tags, hold, no_data, no_nack, one_nack, quiet, send, submit,
    wait,
};
use crate::case::{Stop, check, check_eq};
use crate::cases::common::*;
use crate::ctx::Ctx;
use crate::device::{LinkParams, Output, Request};

pub(super) fn init_comes_up(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    up_with_peer(ctx, LinkParams::default())?;
    let sent = sent_since(ctx, 0);
    check(
        sent.first() == Some(&Kind::Init) || sent.contains(&Kind::Init),
        "LINK-2-1",
        "INIT frames after the physical link came up",
        || format!("frames sent: {sent:?}"),
    )?;
    let up = ctx
        .take_outputs()
        .iter()
        .any(|o| matches!(o, Output::LinkUp { port: 0 }));
    check(up, "LINK-2-3", "a link-up event", || "none".into())
}

fn caps_of(ctx: &Ctx<'_>) -> Capabilities {
    ctx.desc
        .caps
        .iter()
        .filter_map(|n| Capabilities::from_name(n))
        .fold(Capabilities::NONE, Capabilities::union)
}

pub(super) fn init_periodic(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let link = LinkParams {
        vcs: Some(2),
        credit_size: Some(128),
        rx_credits: Some(100),
        credit_overhead: Some(8),
        mfs: Some(4096),
        llr_window: Some(1000),
        init_interval_ns: Some(1000),
        ..LinkParams::default()
    };
    ctx.reset(&setup(link))?;
    ctx.request(&Request::PhysicalUp { port: 0 })?;
    let t0 = ctx.now();
    let sent = wait(ctx, 5_500)?;
    let others: Vec<&Frm> = sent
        .iter()
        .map(|s| &s.frame)
        .filter(|f| !matches!(f, Frm::Init(_)))
        .collect();
    check(
        others.is_empty(),
        "LINK-2-7",
        "only INIT frames before UP",
        || format!("also {others:?}"),
    )?;
    let inits: Vec<(u64, &Sent)> = sent.iter().map(|s| (s.time, s)).collect();
    check(
        inits.first().is_some_and(|(t, _)| *t <= t0 + 100),
        "LINK-2-1",
        "the first INIT at once on physical up",
        || {
            format!(
                "INIT times {:?}",
                inits.iter().map(|i| i.0).collect::<Vec<_>>()
            )
        },
    )?;
    let times: Vec<u64> = inits.iter().map(|i| i.0).collect();
    check(
        times.len() >= 5
            && times
                .windows(2)
                .all(|w| (1000..=1100).contains(&(w[1] - w[0]))),
        "LINK-2-1",
        "an INIT every init_interval (1000 ns) for 5.5 us",
        || format!("INIT times {times:?}"),
    )?;
    let caps = caps_of(ctx);
    let mut nonce = None;
    for (_, s) in &inits {
        let Frm::Init(i) = s.frame else { continue };
        check(i.nonce != 0, "LINK-2-9", "a non-zero nonce", || {
            "nonce 0".into()
        })?;
        check(
            nonce.is_none_or(|n| n == i.nonce),
            "LINK-2-1",
            "one nonce for the whole initialisation",
            || format!("nonces {nonce:x?} and {:#x}", i.nonce),
        )?;
        nonce = Some(i.nonce);
        let seen = (
            i.vcs,
            i.credit_size,
            i.credit_overhead,
            i.mfs,
            i.window,
            i.credits,
        );
        let want = (
            2u8,
            128u16,
            8u8,
            4096u16,
            1000u32,
            [100, 100, 0, 0, 0, 0, 0, 0],
        );
        check_eq(
            "LINK-2-1",
            "INIT (vcs, credit size, overhead, mfs, window, grants)",
            seen,
            want,
        )?;
        check_eq("CLS-2-1", "role", i.role, ethlink_protocol::Role::LinkEnd)?;
        check_eq("CLS-2-2", "capability bits", i.caps, caps)?;
        let b = &s.bytes;
        check_eq(
            "WIRE-4.5-2",
            "echo nonce of an INIT",
            &b[24..28],
            &[0u8; 4][..],
        )?;
        let field = u16::from_be_bytes([b[34], b[35]]);
        check_eq(
            "WIRE-4.5-6",
            "reserved capability bits 13..6",
            field & 0x3FC0,
            0,
        )?;
    }
    let n = ctx.counter("inits_sent")?;
    check_eq("LINK-2-1", "inits_sent", n, times.len() as u64)
}

pub(super) fn init_echo_answers(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, LinkParams::default())?;
    for nonce in [0x1111_0001u32, 0x2222_0002] {
        let peer = raw_init(ctx, nonce);
        let sent = counted_as(ctx, &init(peer), "inits_received", "LINK-2-2")?;
        let echoes: Vec<(u32, ethlink_protocol::InitRepr)> = sent
            .iter()
            .filter_map(|s| match s.frame {
                Frm::InitEcho(e, i) => Some((e, i)),
                _ => None,
            })
            .collect();
        check_eq("LINK-2-2", "INIT_ECHO frames", echoes.len(), 1)?;
        let (e, i) = echoes[0];
        check_eq("LINK-2-2", "echo nonce", e, nonce)?;
        check_eq("LINK-2-2", "nonce of the INIT_ECHO", i.nonce, dut.nonce)?;
        check_eq(
            "LINK-2-2",
            "parameters of the INIT_ECHO (as the INIT)",
            (
                i.vcs,
                i.credit_size,
                i.credit_overhead,
                i.mfs,
                i.window,
                i.credits,
                i.caps,
            ),
            (
                dut.vcs,
                dut.credit_size,
                dut.credit_overhead,
                dut.mfs,
                dut.window,
                dut.credits,
                dut.caps,
            ),
        )?;
        check_eq("CLS-2-1", "role in INIT_ECHO", i.role, dut.role)?;
    }
    // Two INITs at the same instant: only the newer is answered.
    ctx.inject(0, &init(raw_init(ctx, 0x3333_0003)))?;
    ctx.inject(0, &init(raw_init(ctx, 0x4444_0004)))?;
    let sent = wait(ctx, 50)?;
    let echoes: Vec<u32> = sent
        .iter()
        .filter_map(|s| match s.frame {
            Frm::InitEcho(e, _) => Some(e),
            _ => None,
        })
        .collect();
    check_eq(
        "LINK-2-2",
        "echo nonces after two INITs at once",
        echoes,
        vec![0x4444_0004],
    )?;
    let ev = link_events(&ctx.take_outputs());
    check(
        ev.is_empty(),
        "LINK-2-3",
        "no link event: no INIT_ECHO of the device's nonce yet",
        || format!("{ev:?}"),
    )
}

pub(super) fn foreign_echo_ignored(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, LinkParams::default())?;
    let peer = raw_init(ctx, RAW_NONCE);
    send(ctx, &init(peer))?;
    let wrong = dut.nonce ^ 0x0101_0101;
    counted_as(
        ctx,
        &init_echo(wrong, peer),
        "init_echoes_ignored",
        "LINK-2-17",
    )?;
    let sent = wait(ctx, 1_100)?;
    let ev = link_events(&ctx.take_outputs());
    check(
        ev.is_empty(),
        "LINK-2-3",
        "not UP on an echo of another nonce",
        || format!("{ev:?}"),
    )?;
    let nonce = sent
        .iter()
        .rev()
        .find_map(|s| match s.frame {
            Frm::Init(i) => Some(i.nonce),
            _ => None,
        })
        .ok_or_else(|| Stop::fail("LINK-2-1", "INIT goes on while in INIT", "no INIT"))?;
    counted_as(
        ctx,
        &init_echo(nonce, peer),
        "init_echoes_received",
        "LINK-2-3",
    )?;
    let ev = link_events(&ctx.take_outputs());
    check_eq("LINK-2-3", "link events", ev, vec!["up".to_owned()])?;
    counted_as(
        ctx,
        &init_echo(nonce, peer),
        "init_echoes_ignored",
        "LINK-2-17",
    )?;
    let ev = link_events(&ctx.take_outputs());
    check(
        ev.is_empty(),
        "LINK-2-17",
        "an INIT_ECHO while UP changes nothing",
        || format!("{ev:?}"),
    )?;
    // While UP, an INIT of the peer's current nonce is answered and restarts nothing.
    let sent = counted_as(ctx, &init(peer), "inits_received", "LINK-2-2")?;
    let echoes: Vec<u32> = sent
        .iter()
        .filter_map(|s| match s.frame {
            Frm::InitEcho(e, i) if i.nonce == nonce => Some(e),
            _ => None,
        })
        .collect();
    check_eq(
        "LINK-2-2",
        "INIT_ECHOes while UP (echo nonces)",
        echoes,
        vec![peer.nonce],
    )?;
    let ev = link_events(&ctx.take_outputs());
    check(
        ev.is_empty(),
        "LINK-2-6",
        "no re-initialisation for the same nonce",
        || format!("{ev:?}"),
    )
}

pub(super) fn no_data_before_up(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let p = payload(100, 0xA0);
    submit(ctx, 0, &p)?;
    let sent = wait(ctx, 3_000)?;
    no_data(&sent, "LINK-2-7", "the device is not UP")?;
    let peer = raw_init(ctx, RAW_NONCE);
    // UP on the echo, but the device has echoed no INIT of the peer: the gate stays closed.
    let nonce = sent
        .iter()
        .rev()
        .find_map(|s| match s.frame {
            Frm::Init(i) => Some(i.nonce),
            _ => None,
        })
        .unwrap_or(dut.nonce);
    ctx.inject(0, &init_echo(nonce, peer))?;
    let sent = wait(ctx, 1_000)?;
    let ev = link_events(&ctx.take_outputs());
    check_eq("LINK-2-3", "link events", ev, vec!["up".to_owned()])?;
    no_data(
        &sent,
        "LINK-2-8",
        "UP, but no INIT_ECHO sent and nothing received since UP",
    )?;
    let entries: Vec<(u8, u32)> = (0..ctx.params.vcs.unwrap_or(4)).map(|v| (v, 0)).collect();
    let sent = send(ctx, &cf(&entries))?;
    let d: Vec<&Sent> = sent.iter().filter(|s| s.frame.is_data()).collect();
    check_eq("LINK-2-8", "DATA frames once a CF arrived", d.len(), 1)?;
    match &d[0].frame {
        Frm::Data {
            vc,
            flags,
            seq,
            payload,
        } => {
            check_eq("LINK-2-5", "sequence number of the first DATA", *seq, 0)?;
            check_eq("WIRE-3-5", "flags of a first transmission", *flags & 1, 0)?;
            check_eq("LINK-3-1", "VC", *vc, 0)?;
            check_eq("LINK-3-1", "payload", payload, &p)
        }
        _ => Ok(()),
    }
}

pub(super) fn peer_restart(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let mut peer = raw_init(ctx, RAW_NONCE);
    peer.vcs = 1;
    peer.mfs = 1024;
    peer.credits = [512, 0, 0, 0, 0, 0, 0, 0];
    let raw = raw_finish(ctx, dut, peer)?;
    submit(ctx, 0, &payload(100, 1))?;
    let sent = wait(ctx, 100)?;
    check_eq("LINK-3-1", "DATA sent", data_of(&sent), vec![(0, 0, 1)])?;
    let mut peer2 = peer;
    peer2.nonce = 0xBEEF_0002;
    let sent = send(ctx, &init(peer2))?;
    submit(ctx, 0, &payload(100, 2))?;
    let sent2 = wait(ctx, 100)?;
    let outs = ctx.take_outputs();
    check_eq(
        "LINK-2-6",
        "link events",
        link_events(&outs),
        vec!["down:peer_restart".to_owned()],
    )?;
    check_eq(
        "LINK-6-1",
        "frames reported lost",
        lost(&outs),
        vec![("unknown_fate".to_owned(), 1)],
    )?;
    no_data(&sent2, "LINK-2-7", "the device is in INIT again")?;
    let kinds: Vec<&Frm> = sent.iter().map(|s| &s.frame).collect();
    let (echo, own) = match (kinds.first(), kinds.get(1)) {
        (Some(Frm::InitEcho(e, i)), Some(Frm::Init(o))) => ((*e, i.nonce), *o),
        _ => {
            return Err(Stop::fail(
                "LINK-2-6",
                "an INIT_ECHO then an INIT",
                format!("{kinds:?}"),
            ));
        }
    };
    check_eq("LINK-2-6", "echo nonce", echo.0, peer2.nonce)?;
    check(
        echo.1 != raw.dut_nonce && echo.1 != 0 && own.nonce == echo.1,
        "LINK-2-9",
        "a new non-zero nonce, in the INIT_ECHO and the INIT",
        || {
            format!(
                "old {:#x}, echo carries {:#x}, INIT {:#x}",
                raw.dut_nonce, echo.1, own.nonce
            )
        },
    )?;
    check_eq(
        "LINK-2-1",
        "INIT after re-initialisation carries the configured vcs and mfs",
        (own.vcs, own.mfs),
        (dut.vcs, dut.mfs),
    )?;
    ctx.inject(0, &init_echo(own.nonce, peer2))?;
    let sent = wait(ctx, 200)?;
    let ev = link_events(&ctx.take_outputs());
    check_eq("LINK-6-3", "link events", ev, vec!["up".to_owned()])?;
    check_eq(
        "LINK-6-1",
        "DATA after UP again (seq, flags, tag): the queued frame only, from 0",
        data_of(&sent),
        vec![(0, 0, 2)],
    )?;
    let c = ctx.counters()?;
    let get = |n: &str| c.get(n).copied().unwrap_or(0);
    check_eq(
        "LINK-6-3",
        "(reinits, link_ups, frames_unknown_fate)",
        (get("reinits"), get("link_ups"), get("frames_unknown_fate")),
        (1, 2, 1),
    )?;
    // Counters and sequence numbers start again from 0: the RX expects 0, and the first CC
    // carries the 2 credits of the one frame sent since (not 4).
    accepted(ctx, &data_len(0, 0, 128, 7), 0, "LINK-2-5")?;
    send(ctx, &ack(0))?;
    let sent = wait(ctx, 1_100_000)?;
    let c: Vec<Option<u32>> = ccs(&sent).iter().take(1).map(|c| c.1[0]).collect();
    check_eq(
        "LINK-2-5",
        "VC 0 entry of the first CC after UP",
        c,
        vec![Some(2)],
    )
}

pub(super) fn init_refused(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, LinkParams::default())?;
    let mut peer = raw_init(ctx, RAW_NONCE);
    peer.vcs = 4;
    peer.credit_size = 64;
    peer.credit_overhead = 32;
    peer.mfs = 1024;
    // One frame of the agreed MFS costs ceil((1024 + 32) / 64) = 17 credits.
    peer.credits = [17, 17, 17, 16, 0, 0, 0, 0];
    let sent = counted_as(ctx, &init(peer), "init_refused", "LINK-2-12")?;
    check(
        !sent.iter().any(|s| matches!(s.frame, Frm::InitEcho(..))),
        "LINK-2-12",
        "no INIT_ECHO for an INIT whose VC 3 grants 16 of the 17 credits a frame needs",
        || "an INIT_ECHO".into(),
    )?;
    counted_as(
        ctx,
        &init_echo(dut.nonce, peer),
        "init_refused",
        "LINK-2-12",
    )?;
    let sent = wait(ctx, 1_100)?;
    let ev = link_events(&ctx.take_outputs());
    check(
        ev.is_empty(),
        "LINK-2-12",
        "not UP on a refused INIT_ECHO",
        || format!("{ev:?}"),
    )?;
    let nonce = sent
        .iter()
        .rev()
        .find_map(|s| match s.frame {
            Frm::Init(i) => Some(i.nonce),
            _ => None,
        })
        .ok_or_else(|| Stop::fail("LINK-2-14", "INIT goes on after a refusal", "no INIT"))?;
    peer.credits = [17, 17, 17, 17, 0, 0, 0, 0];
    let sent = counted_as(ctx, &init(peer), "inits_received", "LINK-2-12")?;
    check(
        sent.iter()
            .any(|s| matches!(s.frame, Frm::InitEcho(e, _) if e == peer.nonce)),
        "LINK-2-2",
        "an INIT_ECHO for grants of exactly one frame",
        || "none".into(),
    )?;
    counted_as(
        ctx,
        &init_echo(nonce, peer),
        "init_echoes_received",
        "LINK-2-12",
    )?;
    let ev = link_events(&ctx.take_outputs());
    check_eq("LINK-2-3", "link events", ev, vec!["up".to_owned()])?;
    // UP: an INIT with a new nonce and a short grant is refused, and restarts nothing.
    let mut restart = peer;
    restart.nonce ^= 0x00F0_0000;
    restart.credits = [16, 17, 17, 17, 0, 0, 0, 0];
    let sent = counted_as(ctx, &init(restart), "init_refused", "LINK-2-12")?;
    check(
        !sent
            .iter()
            .any(|s| matches!(s.frame, Frm::InitEcho(..) | Frm::Init(_))),
        "LINK-2-12",
        "no INIT_ECHO and no INIT: the refused INIT leaves the device UP",
        || format!("{:?}", sent.iter().map(|s| &s.frame).collect::<Vec<_>>()),
    )?;
    let ev = link_events(&ctx.take_outputs());
    check(ev.is_empty(), "LINK-2-12", "the device stays UP", || {
        format!("{ev:?}")
    })
}

pub(super) fn mfs_before_up(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let link = LinkParams {
        mfs: Some(1024),
        ..quiet()
    };
    let dut = raw_start(ctx, link)?;
    let sent = counted_as(ctx, &data_len(0, 0, 1028, 1), "rx_damaged", "LINK-2-16")?;
    no_nack(&sent, "LINK-4-13", "the device is not UP")?;
    counted_as(ctx, &data_len(0, 0, 1024, 1), "rx_not_up", "LINK-2-16")?;
    let mut peer = raw_init(ctx, RAW_NONCE);
    peer.mfs = 512;
    raw_finish(ctx, dut, peer)?;
    let sent = counted_as(ctx, &data_len(0, 0, 516, 2), "rx_damaged", "LINK-2-16")?;
    one_nack(&sent, 0xFFFFF, "WIRE-4.2-1")?;
    accepted(ctx, &data_len(0, 0, 512, 3), 0, "LINK-2-16")?;
    check_eq("LINK-4-1", "delivered", delivered_tags(ctx), vec![3])
}

pub(super) fn init_forever(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    // init_timeout at the least Table LINK-T2 allows: equal to init_interval.
    let link = LinkParams {
        init_interval_ns: Some(100_000),
        init_timeout_ns: Some(100_000),
        ..LinkParams::default()
    };
    ctx.reset(&setup(link))?;
    ctx.request(&Request::PhysicalUp { port: 0 })?;
    let sent = wait(ctx, 1_550_000)?;
    let times: Vec<u64> = sent
        .iter()
        .filter(|s| matches!(s.frame, Frm::Init(_)))
        .map(|s| s.time)
        .collect();
    check(
        times.len() >= 15
            && times
                .windows(2)
                .all(|w| (100_000..=100_100).contains(&(w[1] - w[0]))),
        "LINK-2-14",
        "an INIT every 100 us for 1.55 ms",
        || format!("INIT times {times:?}"),
    )?;
    // 1.55 ms in INIT with an init_timeout of 100 us: reported and counted, once.
    let n = ctx.counter("init_timeouts")?;
    check(
        n == 1,
        "LINK-2-14",
        "init_timeouts exactly 1: the initialisation passed init_timeout (100 us) once",
        || format!("init_timeouts {n}"),
    )
}

pub(super) fn agreement(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let mut peer = raw_init(ctx, RAW_NONCE);
    peer.vcs = 2;
    peer.window = 16;
    peer.mfs = 512;
    peer.credits = [512, 512, 0, 0, 0, 0, 0, 0];
    // Queued before UP: one frame on VC 3, which the peer lacks, one too long for its MFS, and
    // one of exactly the agreed MFS (488 B of payload make a frame of 512 B).
    submit(ctx, 3, &payload(100, 30))?;
    submit(ctx, 0, &payload(600, 31))?;
    submit(ctx, 0, &payload(488, 32))?;
    let up = raw_finish(ctx, dut, peer)?;
    let sent = [up.after_up, wait(ctx, 100)?].concat();
    // Only the last goes out: not the one not agreed (LINK-2-4), nor the one longer than the
    // agreed MFS of 512 B (WIRE-2.4-8, which every frame the device sends is checked against).
    check_eq(
        "LINK-2-4",
        "DATA (seq, VC, tag) after UP: the frame of exactly the agreed 512 B, not the one on \
         VC 3 nor the one of 624 B",
        data_of(&sent),
        vec![(0, 0, 32)],
    )?;
    let mut l = lost(&up.outs);
    l.extend(lost(&ctx.take_outputs()));
    l.sort();
    check_eq(
        "LINK-2-4",
        "frames reported lost",
        l,
        vec![
            ("exceeds_peer_mfs".to_owned(), 31),
            ("vc_not_agreed".to_owned(), 30),
        ],
    )?;
    let c = ctx.counters()?;
    let get = |n: &str| c.get(n).copied().unwrap_or(0);
    check_eq(
        "LINK-2-19",
        "(not_agreed_vc, oversize_for_peer)",
        (get("not_agreed_vc"), get("oversize_for_peer")),
        (1, 1),
    )?;
    for t in 0..20 {
        submit(ctx, 0, &payload(100, t))?;
    }
    let sent = wait(ctx, 100)?;
    check_eq(
        "LINK-3-3",
        "DATA sent with an agreed window of 16, frame 0 still unacknowledged",
        data_of(&sent),
        (1..16).map(|s| (s, 0, s - 1)).collect(),
    )?;
    for s in 0..3 {
        accepted(ctx, &data_len(0, s, 128, s), 0, "LINK-4-1")?;
    }
    let sent = counted_as(ctx, &data_len(2, 3, 128, 3), "rx_vc_not_agreed", "LINK-2-4")?;
    no_nack(&sent, "LINK-4-11", "VC 2 is not agreed")?;
    // Expected 4: 16 behind is 0xFFFF4, a duplicate; 0xFFFF3 is a gap.
    let sent = counted_as(ctx, &data_len(0, 0xFFFF4, 128, 9), "duplicates", "LINK-2-4")?;
    check_eq("LINK-4-16", "ACKs after a duplicate", acks(&sent), vec![3])?;
    let sent = counted_as(
        ctx,
        &data_len(0, 0xFFFF3, 128, 9),
        "discarded_after_nack",
        "LINK-2-4",
    )?;
    one_nack(&sent, 3, "LINK-4-3")
}

pub(super) fn own_grant_checked(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let link = LinkParams {
        credit_size: Some(64),
        rx_credits: Some(4),
        mfs: Some(9216),
        ..LinkParams::default()
    };
    if ctx.try_reset(&setup(link))?.is_err() {
        // Refused: what LINK-2-13 asks.
        return Ok(());
    }
    ctx.request(&Request::PhysicalUp { port: 0 })?;
    let sent = wait(ctx, 100)?;
    for s in &sent {
        if let Frm::Init(i) = s.frame {
            let need = (u32::from(i.mfs) + u32::from(i.credit_overhead))
                .div_ceil(u32::from(i.credit_size));
            let short: Vec<u32> = i.credits[..usize::from(i.vcs)]
                .iter()
                .copied()
                .filter(|g| *g < need)
                .collect();
            check(
                short.is_empty(),
                "LINK-2-13",
                format!("grants of at least {need} credits"),
                || {
                    format!(
                        "the device took 4 credits of 64 B with an MFS of 9216 and announces {short:?}"
                    )
                },
            )?;
        }
    }
    Ok(())
}

pub(super) fn restart_with_a_held_buffer(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let mut peer = raw_init(ctx, RAW_NONCE);
    peer.vcs = 1;
    peer.mfs = 1024;
    peer.credits = [512, 0, 0, 0, 0, 0, 0, 0];
    raw_finish(ctx, dut, peer)?;
    hold(ctx, 0, true)?;
    for i in 0..3 {
        accepted(ctx, &data_len(0, i, 128, i), 0, "LINK-4-1")?;
    }
    let _ = ctx.take_outputs();
    // The peer restarts: twice, so that the echo due is for the newer nonce.
    let mut peer2 = peer;
    peer2.nonce = 0xBEEF_0002;
    let mut sent = send(ctx, &init(peer2))?;
    peer2.nonce = 0xBEEF_0003;
    sent.extend(send(ctx, &init(peer2))?);
    sent.extend(wait(ctx, 5_000)?);
    let echoes = |sent: &[Sent]| -> Vec<u32> {
        sent.iter()
            .filter_map(|s| match s.frame {
                Frm::InitEcho(e, _) => Some(e),
                _ => None,
            })
            .collect()
    };
    let own = sent.iter().find_map(|s| match s.frame {
        Frm::Init(i) => Some(i),
        _ => None,
    });
    let Some(own) = own else {
        return Err(Stop::fail(
            "LINK-2-6",
            "an INIT with a new nonce after the peer's restart",
            format!("{:?}", sent.iter().map(|s| &s.frame).collect::<Vec<_>>()),
        ));
    };
    check_eq(
        "LINK-2-18",
        "INIT_ECHOs sent while the buffer holds the last incarnation's frames",
        echoes(&sent),
        vec![],
    )?;
    // An echo of the device's own INIT does not bring it UP either: it is ignored and counted.
    let before = ctx.counters()?;
    ctx.inject(0, &init_echo(own.nonce, peer2))?;
    let sent = wait(ctx, 200)?;
    check_eq(
        "LINK-2-18",
        "link events on an INIT_ECHO while the buffer holds the last incarnation's frames",
        link_events(&ctx.take_outputs()),
        vec!["down:peer_restart".to_owned()],
    )?;
    check_eq(
        "LINK-2-18",
        "INIT_ECHOs ignored (init_echoes_ignored)",
        counter_delta(ctx, &before, "init_echoes_ignored")?,
        1,
    )?;
    check_eq("LINK-2-18", "INIT_ECHOs sent then", echoes(&sent), vec![])?;
    // The peer, not UP without an echo, sends nothing but INIT; the device's upper layer drains.
    hold(ctx, 0, false)?;
    let sent = wait(ctx, 100)?;
    check_eq(
        "LINK-2-18",
        "INIT_ECHOs once drained (echo nonce): one, for the newest INIT",
        echoes(&sent),
        vec![peer2.nonce],
    )?;
    // Drained, it draws a new nonce: the echo carries it and an INIT with it follows at once.
    let renewed = sent.iter().find_map(|s| match s.frame {
        Frm::Init(i) => Some(i.nonce),
        _ => None,
    });
    let echoed_own = sent.iter().find_map(|s| match s.frame {
        Frm::InitEcho(_, i) => Some(i.nonce),
        _ => None,
    });
    check(
        renewed.is_some_and(|n| n != own.nonce && n != 0) && echoed_own == renewed,
        "LINK-2-18",
        "once drained, a new nonce in the INIT_ECHO and in an INIT sent at once",
        || {
            format!(
                "old nonce {:#x}, INIT_ECHO carries {echoed_own:x?}, INIT {renewed:x?}",
                own.nonce
            )
        },
    )?;
    ctx.inject(0, &init_echo(renewed.unwrap_or_default(), peer2))?;
    wait(ctx, 200)?;
    let ev = link_events(&ctx.take_outputs());
    check_eq("LINK-2-5", "link events", ev, vec!["up".to_owned()])?;
    // The new incarnation's grant is whole, and no more: with the device holding every frame,
    // frames of 1,000 B fill it to the last whole frame and the next one overruns it.
    hold(ctx, 0, true)?;
    let cost = (1000 + u32::from(dut.credit_overhead)).div_ceil(u32::from(dut.credit_size).max(1));
    let fit = dut.credits[0] / cost.max(1);
    for i in 0..fit {
        accepted(ctx, &data_len(0, i, 1000, 10 + i), 0, "LINK-6-4")?;
    }
    counted_as(
        ctx,
        &data_len(0, fit, 1000, 10 + fit),
        "credit_overruns.vc0",
        "LINK-6-4",
    )?;
    Ok(())
}

pub(super) fn physical_down(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let raw = raw_up(ctx, quiet())?;
    submit(ctx, 0, &payload(100, 1))?;
    wait(ctx, 100)?;
    ctx.request(&Request::PhysicalDown { port: 0 })?;
    let sent = wait(ctx, 3_000)?;
    let outs = ctx.take_outputs();
    check_eq(
        "LINK-6-3",
        "link events",
        link_events(&outs),
        vec!["down:physical".to_owned()],
    )?;
    check_eq(
        "LINK-6-1",
        "frames reported lost",
        lost(&outs),
        vec![("unknown_fate".to_owned(), 1)],
    )?;
    check(
        sent.is_empty(),
        "LINK-2-1",
        "nothing sent while physically down",
        || format!("{:?}", sent.iter().map(|s| &s.frame).collect::<Vec<_>>()),
    )?;
    let sent = counted_as(ctx, &init(raw.peer), "rx_not_up", "LINK-2-11")?;
    check(
        sent.is_empty(),
        "LINK-2-11",
        "no answer while physically down",
        || format!("{:?}", sent.iter().map(|s| &s.frame).collect::<Vec<_>>()),
    )?;
    counted_as(ctx, &data_len(0, 0, 128, 0), "rx_not_up", "LINK-2-11")?;
    submit(ctx, 0, &payload(100, 2))?;
    ctx.request(&Request::PhysicalUp { port: 0 })?;
    let sent = wait(ctx, 100)?;
    let new = sent
        .iter()
        .find_map(|s| match s.frame {
            Frm::Init(i) => Some(i),
            _ => None,
        })
        .ok_or_else(|| Stop::fail("LINK-2-1", "INIT at once on physical up", "none"))?;
    check(
        new.nonce != raw.dut_nonce && new.nonce != 0,
        "LINK-2-9",
        "a new non-zero nonce",
        || format!("{:#x}, as before", new.nonce),
    )?;
    let up = raw_finish(ctx, new, raw.peer)?;
    let sent = [up.after_up, wait(ctx, 100)?].concat();
    check_eq(
        "LINK-6-2",
        "DATA after UP again",
        data_of(&sent),
        vec![(0, 0, 2)],
    )
}

pub(super) fn any_role_accepted(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let mut peer = raw_init(ctx, RAW_NONCE);
    peer.vcs = 2;
    peer.credits = [512, 512, 0, 0, 0, 0, 0, 0];
    let mut i = init(peer);
    i[34..36].copy_from_slice(&0xFFFFu16.to_be_bytes());
    // Grants of VCs 6 and 7, above the 2 announced, are reserved: not range-checked.
    i[64..72].fill(0xFF);
    refcs(&mut i);
    let sent = counted_as(ctx, &i, "inits_received", "CLS-2-3")?;
    check(
        sent.iter()
            .any(|s| matches!(s.frame, Frm::InitEcho(e, _) if e == peer.nonce)),
        "CLS-2-3",
        "an INIT_ECHO for an INIT of role 3 with every capability bit",
        || "none".into(),
    )?;
    let mut e = init_echo(dut.nonce, peer);
    e[34..36].copy_from_slice(&0xFFFFu16.to_be_bytes());
    e[64..72].fill(0xFF);
    refcs(&mut e);
    counted_as(ctx, &e, "init_echoes_received", "CLS-2-3")?;
    let ev = link_events(&ctx.take_outputs());
    check_eq("CLS-2-3", "link events", ev, vec!["up".to_owned()])
}

fn dst_of(sent: &[Sent]) -> Vec<[u8; 6]> {
    sent.iter()
        .map(|s| {
            let mut d = [0u8; 6];
            d.copy_from_slice(&s.bytes[..6]);
            d
        })
        .collect()
}

pub(super) fn peer_address(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    const LOCAL: [u8; 6] = [0x01, 0x80, 0xC2, 0x00, 0x00, 0x0E];
    let peer_addr = peer_mac(0).0;
    let dut = raw_start(ctx, quiet())?;
    let d = dst_of(
        &ctx.log()
            .iter()
            .filter(|l| l.from_dut)
            .map(|l| Sent {
                time: l.time_ns,
                frame: Frm::Bad,
                bytes: l.bytes.clone(),
            })
            .collect::<Vec<_>>(),
    );
    check(
        d.iter().all(|a| *a == LOCAL),
        "WIRE-2.3-2",
        "INIT to 01:80:C2:00:00:0E",
        || format!("{d:x?}"),
    )?;
    let peer = raw_init(ctx, RAW_NONCE);
    let up = raw_finish(ctx, dut, peer)?;
    submit(ctx, 0, &payload(100, 0))?;
    let sent = [up.after_up, wait(ctx, 100)?].concat();
    let d = dst_of(&sent);
    check(
        !d.is_empty() && d.iter().all(|a| *a == peer_addr),
        "LINK-2-15",
        "frames to the address of the peer's INIT",
        || format!("{d:x?}"),
    )?;
    ctx.request(&Request::PhysicalDown { port: 0 })?;
    wait(ctx, 100)?;
    ctx.request(&Request::PhysicalUp { port: 0 })?;
    let sent = wait(ctx, 100)?;
    let d = dst_of(&sent);
    check(
        !d.is_empty() && d.iter().all(|a| *a == LOCAL),
        "LINK-2-15",
        "after physical down the address is forgotten: INIT to 01:80:C2:00:00:0E",
        || format!("{d:x?}"),
    )
}

pub(super) fn echo_ignored_before_refused(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let mut bad = raw_init(ctx, RAW_NONCE);
    // Grants of 1 credit cannot carry a frame of the MFS (LINK-2-12).
    bad.credits = [1, 1, 1, 1, 0, 0, 0, 0];
    let sent = counted_as(
        ctx,
        &init_echo(dut.nonce ^ 0x5A5A_5A5A, bad),
        "init_echoes_ignored",
        "LINK-2-17",
    )?;
    no_data(&sent, "LINK-2-17", "still in INIT")?;
    counted_as(ctx, &init_echo(dut.nonce, bad), "init_refused", "LINK-2-12").map(|_| ())
}

/// LINK-2-19 while UP, at its boundaries: with 2 VCs and an MFS of 512 B agreed, a frame queued
/// on VC 2 (the first VC not agreed) is reported lost at once, a frame of exactly 512 B goes, one
/// of 516 B on VC 0 and one on VC 1 are reported lost when their turn comes, and the frames
/// behind them go.
pub(super) fn lost_while_up(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let mut peer = raw_init(ctx, RAW_NONCE);
    peer.vcs = 2;
    peer.mfs = 512;
    peer.credits = [512, 512, 0, 0, 0, 0, 0, 0];
    let up = raw_finish(ctx, dut, peer)?;
    let mut outs = up.outs;
    let before = ctx.counters()?;
    // Untagged frames are 24 B longer than their payload (Ethernet 14, link header 6, FCS 4).
    // The frames the end cannot send may be refused at submission instead (LINK-2-19): a
    // refused one is left out of what is expected lost and counted.
    let mut refused = Vec::new();
    for (vc, len, tag) in [
        (2u8, 100usize, 40u32),
        (0, 488, 41),
        (0, 492, 42),
        (0, 100, 43),
        (1, 492, 44),
        (1, 100, 45),
    ] {
        let r = ctx.try_request(&Request::Submit {
            port: 0,
            vc,
            payload: hex::encode(payload(len, tag)),
        })?;
        if r.is_err() {
            refused.push(tag);
        }
    }
    check(
        refused.iter().all(|t| [40, 42, 44].contains(t)),
        "LINK-2-19",
        "only the frames the end cannot send refused at submission: none of 41, 43, 45",
        || format!("refused {refused:?}"),
    )?;
    let sent = wait(ctx, 200)?;
    outs.extend(ctx.take_outputs());
    // Order across VCs is free: (VC, tag, bytes) sorted by VC, in sending order within one.
    let mut data: Vec<(u8, u32, usize)> = sent
        .iter()
        .filter_map(|s| match &s.frame {
            Frm::Data { vc, payload, .. } => {
                Some((*vc, tag_of(payload).unwrap_or(u32::MAX), s.bytes.len()))
            }
            _ => None,
        })
        .collect();
    data.sort_by_key(|d| d.0);
    //= docs/spec/link.md#2-initialisation
    //= type=test
    //# LINK-2-19 While UP, a frame at the front of its VC's transmit queue whose VC is not agreed, or
    //# that is longer than the agreed MFS, MUST NOT be sent: the end MUST report it to the upper layer as
    //# lost (reason VC not agreed, or longer than the peer's MFS), count it (`not_agreed_vc`,
    //# `oversize_for_peer`) and go on with the frame behind it.
    check_eq(
        "LINK-2-19",
        "DATA sent (VC, tag, bytes): the frame of exactly the agreed 512 B and the frames behind \
         the lost ones",
        data,
        vec![(0, 41, 512), (0, 43, 124), (1, 45, 124)],
    )?;
    let mut l = lost(&outs);
    l.sort();
    let want: Vec<(String, u32)> = [
        ("exceeds_peer_mfs", 42),
        ("exceeds_peer_mfs", 44),
        ("vc_not_agreed", 40),
    ]
    .into_iter()
    .filter(|(_, t)| !refused.contains(t))
    .map(|(r, t)| (r.to_owned(), t))
    .collect();
    check_eq("LINK-2-19", "frames reported lost while UP", l, want)?;
    let queued = |t: u32| u64::from(!refused.contains(&t));
    check_eq(
        "LINK-2-19",
        "(not_agreed_vc, oversize_for_peer) counted while UP, for the frames queued",
        (
            counter_delta(ctx, &before, "not_agreed_vc")?,
            counter_delta(ctx, &before, "oversize_for_peer")?,
        ),
        (queued(40), queued(42) + queued(44)),
    )
}

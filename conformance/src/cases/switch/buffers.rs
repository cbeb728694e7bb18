//! Buffers, losslessness and lifetime (switch.md §4, §4.1): no loss under incast, no
//! head-of-line blocking, per-VC isolation, credits kept until a frame is handed on, and frames
//! aged out. The `SWT-BUF-*`, `SWT-VC-*` and `SWT-AGE-*` cases.

use std::collections::BTreeMap;

use ethlink_protocol::{FrameRepr, LinkFrame};

use super::{
    DISCARDS, credits_back, ctr, data, data_log, delivered, gpu_of, incast, need_ports, nonzero,
    one_per_port, peer_credits, run_until_delivered, small_peer, sw_setup, tag, up_ports,
};
use crate::case::{Stop, check, check_eq};
use crate::cases::common::{Kind, kind_of};
use crate::ctx::{Ctx, Dir, Fault};
use crate::device::LinkParams;

/// The DATA frames of two ports, first copy of each tag, read from the log as it grows.
struct Seen {
    pos: usize,
    into: u16,
    out: u16,
    /// Tag -> arrival time on port `into`.
    ins: BTreeMap<u32, u64>,
    /// Tag -> first transmission on port `out`.
    outs: BTreeMap<u32, u64>,
}

impl Seen {
    fn new(into: u16, out: u16) -> Self {
        Seen {
            pos: 0,
            into,
            out,
            ins: BTreeMap::new(),
            outs: BTreeMap::new(),
        }
    }

    fn update(&mut self, ctx: &Ctx<'_>) {
        for l in &ctx.log()[self.pos..] {
            let m = if l.from_dut && l.port == self.out {
                &mut self.outs
            } else if !l.from_dut && l.port == self.into {
                &mut self.ins
            } else {
                continue;
            };
            if let Ok(r) = FrameRepr::parse_bytes(&l.bytes, 9216)
                && let LinkFrame::Data { payload, .. } = r.link
                && let Some(t) = tag(payload)
            {
                m.entry(t).or_insert(l.time_ns);
            }
        }
        self.pos = ctx.log().len();
    }
}

pub(super) fn incast_lossless(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let per = 100u32;
    let len = 1000;
    let (inputs, e) = incast(ctx, per, len)?;
    let got = delivered(ctx, e)?;
    let total = inputs.len() as u64 * u64::from(per);
    let mut tags: Vec<u32> = got.iter().map(|x| x.1).collect();
    tags.sort_unstable();
    let mut want: Vec<u32> = inputs
        .iter()
        .flat_map(|&i| (0..per).map(move |k| u32::from(i) << 16 | k))
        .collect();
    want.sort_unstable();
    if tags != want {
        let missing: Vec<u32> = want.iter().copied().filter(|t| !tags.contains(t)).collect();
        return Err(Stop::fail(
            "SW-4-4",
            format!("each of the {total} frames delivered once on port {e}"),
            format!(
                "{} delivered; missing tags {:x?}",
                tags.len(),
                &missing[..missing.len().min(20)]
            ),
        ));
    }
    let plen = data(0, 0, 0, 0, len).len() as u64;
    let buffer = u64::from(ctx.params.rx_credits.unwrap_or(512))
        * u64::from(ctx.params.credit_size.unwrap_or(64));
    for &i in &inputs {
        check_eq(
            "SW-8-2",
            &format!("port{i}.rx_frames.vc0"),
            ctr(ctx, i, "rx_frames", 0)?,
            u64::from(per),
        )?;
        check_eq(
            "SW-8-2",
            &format!("port{i}.rx_bytes.vc0"),
            ctr(ctx, i, "rx_bytes", 0)?,
            u64::from(per) * plen,
        )?;
        check_eq(
            "SW-4-5",
            &format!("port{i}.held_bytes.vc0"),
            ctr(ctx, i, "held_bytes", 0)?,
            0,
        )?;
        let max = ctr(ctx, i, "held_max_bytes", 0)?;
        check(
            max <= buffer && max >= 2 * plen,
            "SW-4-5",
            format!(
                "port{i}.held_max_bytes.vc0 between two frames ({}) and the input buffer \
                 ({buffer}): the input waited for the egress",
                2 * plen
            ),
            || format!("{max}"),
        )?;
    }
    check_eq(
        "SW-8-2",
        &format!("port{e}.tx_frames.vc0"),
        ctr(ctx, e, "tx_frames", 0)?,
        total,
    )?;
    check_eq(
        "SW-8-2",
        &format!("port{e}.tx_bytes.vc0"),
        ctr(ctx, e, "tx_bytes", 0)?,
        total * plen,
    )?;
    let d = nonzero(ctx, &DISCARDS)?;
    check(d.is_empty(), "SW-4-4", "no frame discarded", || {
        format!("{d:?}")
    })
}

pub(super) fn no_head_of_line_blocking(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 3)?;
    let n = ctx.desc.ports;
    let s = sw_setup(one_per_port(n), LinkParams::default(), None);
    up_ports(
        ctx,
        &s,
        &[0, 1, 2],
        |p, c| if p == 1 { small_peer(c) } else { c },
    )?;
    ctx.peer_hold(1, true)?;
    // Interleaved on one input and VC: 40 frames for the stalled port 1, 40 for port 2.
    for k in 0..40u32 {
        ctx.peer_submit(0, 0, &data(gpu_of(1), gpu_of(0), 0, 0x100 | k, 256))?;
        ctx.peer_submit(0, 0, &data(gpu_of(2), gpu_of(0), 0, 0x200 | k, 256))?;
    }
    ctx.run_for(20_000)?;
    let to1 = delivered(ctx, 1)?;
    let to2 = delivered(ctx, 2)?;
    if to1.len() >= 40 {
        return Err(Stop::Inconclusive(
            "port 1 never stalled: its peer took every frame".into(),
        ));
    }
    let tags2: Vec<u32> = to2.iter().map(|x| x.1).collect();
    let mut sorted2 = tags2.clone();
    sorted2.sort_unstable();
    check(
        sorted2 == (0..40).map(|k| 0x200 | k).collect::<Vec<_>>(),
        "SW-4-3",
        format!(
            "all 40 frames for port 2 leave while port 1 is stalled ({} of its 40 frames out)",
            to1.len()
        ),
        || format!("port 2 received {tags2:x?}"),
    )?;
    check(
        tags2 == (0..40).map(|k| 0x200 | k).collect::<Vec<_>>(),
        "SW-3-1",
        "the frames for port 2 leave in the order they were received",
        || format!("port 2 received {tags2:x?}"),
    )?;
    ctx.peer_hold(1, false)?;
    ctx.run_for(20_000)?;
    let mut tags1: Vec<u32> = to1.iter().map(|x| x.1).collect();
    tags1.extend(delivered(ctx, 1)?.iter().map(|x| x.1));
    check(
        tags1 == (0..40).map(|k| 0x100 | k).collect::<Vec<_>>(),
        "SW-3-1",
        "once port 1 drains, its 40 frames leave once each, in order",
        || format!("port 1 received {tags1:x?}"),
    )?;
    let d = nonzero(ctx, &DISCARDS)?;
    check(d.is_empty(), "SW-4-4", "no frame discarded", || {
        format!("{d:?}")
    })
}

pub(super) fn vc_isolation(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 2)?;
    let n = ctx.desc.ports;
    let s = sw_setup(one_per_port(n), LinkParams::default(), None);
    up_ports(
        ctx,
        &s,
        &[0, 1],
        |p, c| if p == 1 { small_peer(c) } else { c },
    )?;
    if ctx.params.vcs.unwrap_or(1) < 2 {
        return Err(Stop::Unsupported("the case needs two VCs".into()));
    }
    ctx.peer_hold(1, true)?;
    // VC 0 toward port 1 stalls: 40 frames of 256 B, far more than the peer's 2.5 KiB.
    for k in 0..40u32 {
        ctx.peer_submit(0, 0, &data(gpu_of(1), gpu_of(0), 0, k, 256))?;
    }
    ctx.run_for(10_000)?;
    let vc0 = delivered(ctx, 1)?;
    if vc0.len() >= 40 {
        return Err(Stop::Inconclusive("VC 0 never stalled".into()));
    }
    // VC 1 on the same input and egress: 4 frames fit the peer's VC 1 buffer.
    for k in 0..4u32 {
        ctx.peer_submit(0, 1, &data(gpu_of(1), gpu_of(0), 0, 0x100 | k, 256))?;
    }
    ctx.run_for(10_000)?;
    let got = delivered(ctx, 1)?;
    let mut sorted = got.clone();
    sorted.sort_unstable();
    check(
        sorted == (0..4).map(|k| (1, 0x100 | k)).collect::<Vec<_>>(),
        "SW-4-3",
        format!(
            "the 4 frames of VC 1 leave while VC 0 is stalled ({} of its 40 out)",
            vc0.len()
        ),
        || format!("port 1 received (vc, tag) {got:x?}"),
    )?;
    ctx.peer_hold(1, false)?;
    ctx.run_for(20_000)?;
    check(
        got == (0..4).map(|k| (1, 0x100 | k)).collect::<Vec<_>>(),
        "SW-3-1",
        "the frames of VC 1 leave in the order they were received",
        || format!("port 1 received (vc, tag) {got:x?}"),
    )?;
    let mut all: Vec<u32> = vc0.iter().map(|x| x.1).collect();
    all.extend(delivered(ctx, 1)?.iter().map(|x| x.1));
    let mut sorted: Vec<u32> = all.clone();
    sorted.sort_unstable();
    check(
        sorted == (0..40).collect::<Vec<_>>(),
        "SW-4-4",
        "VC 0's 40 frames leave once each once port 1 drains",
        || format!("{all:?}"),
    )?;
    check(
        all == (0..40).collect::<Vec<_>>(),
        "SW-3-1",
        "VC 0's 40 frames leave once each, in order, once port 1 drains",
        || format!("{all:?}"),
    )
}

pub(super) fn aging(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    aging_with_arrivals(ctx, 0)
}

/// As [`aging`], the frames arriving one every 500 ns over 30 us: each frame behind the head of
/// its queue ages on its own time, however many arrive after it (SW-4-7 inside a queue).
pub(super) fn aging_in_queue(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    aging_with_arrivals(ctx, 500)
}

/// Port 0's peer sends 60 frames of 1000 B for port 2, whose peer holds its buffers, one every
/// `gap_ns` (all at once when 0), with `max_residence` 5 us; every 100 ns the aged count must lie
/// between the frames whose residence exceeds `max_residence` and those past twice it.
fn aging_with_arrivals(ctx: &mut Ctx<'_>, gap_ns: u64) -> Result<(), Stop> {
    need_ports(ctx, 4)?;
    let n = ctx.desc.ports;
    const MAX_RES: u64 = 5_000;
    let s = sw_setup(one_per_port(n), LinkParams::default(), Some(MAX_RES));
    up_ports(
        ctx,
        &s,
        &[0, 2, 3],
        |p, c| if p == 2 { small_peer(c) } else { c },
    )?;
    ctx.peer_hold(2, true)?;
    let total = 60u32;
    let granted = peer_credits(ctx, 0, 0)?;
    // Watch in steps of 100 ns: a frame may be counted aged only once its residence exceeds
    // max_residence, and must be by twice max_residence.
    let start = ctx.now();
    let mut sent_in = 0u32;
    let mut seen = Seen::new(0, 2);
    while ctx.now() < start + 40_000 + u64::from(total) * gap_ns {
        while sent_in < total && start + u64::from(sent_in) * gap_ns <= ctx.now() {
            ctx.peer_submit(0, 0, &data(gpu_of(2), gpu_of(0), 0, sent_in, 1000))?;
            sent_in += 1;
        }
        ctx.run_for(100)?;
        let now = ctx.now();
        let aged = ctr(ctx, 0, "discard_aged", 0)?;
        seen.update(ctx);
        let unsent: Vec<u64> = seen
            .ins
            .iter()
            .filter(|(t, _)| !seen.outs.contains_key(t))
            .map(|(_, v)| *v)
            .collect();
        let may = unsent.iter().filter(|&&a| now - a > MAX_RES).count() as u64;
        let must = unsent.iter().filter(|&&a| now - a >= 2 * MAX_RES).count() as u64;
        check(
            aged <= may,
            "SW-4-8",
            format!(
                "at {now} ns port0.discard_aged.vc0 at most {may}, the unsent frames whose \
                 residence exceeds {MAX_RES} ns"
            ),
            || format!("{aged}"),
        )?;
        check(
            aged >= must,
            "SW-4-7",
            format!(
                "at {now} ns port0.discard_aged.vc0 at least {must}, the unsent frames whose \
                 residence reached {} ns",
                2 * MAX_RES
            ),
            || format!("{aged}"),
        )?;
    }
    // Nothing ever left late, and residence_max_ns is the longest residence seen.
    let ins = data_log(ctx, 0, false);
    let outs = data_log(ctx, 2, true);
    let mut longest = 0;
    for (t, o) in &outs {
        let Some(i) = ins.get(t) else { continue };
        let res = o.0.saturating_sub(i.0);
        longest = longest.max(res);
        check(
            res <= MAX_RES,
            "SW-4-6",
            format!("frame {t} begins to leave within {MAX_RES} ns of its arrival"),
            || format!("it arrived at {} ns and began to leave at {} ns", i.0, o.0),
        )?;
    }
    let sent = outs.len() as u64;
    let aged = ctr(ctx, 0, "discard_aged", 0)?;
    check(
        ins.len() as u64 == u64::from(total) && sent + aged == u64::from(total),
        "SW-4-7",
        format!("each of the {total} frames either sent or counted aged, once"),
        || format!("{} received, {sent} sent, {aged} aged", ins.len()),
    )?;
    check(
        aged > 0,
        "SW-4-7",
        "some frames aged (port 2 held its buffers 40 us)",
        || "none".into(),
    )?;
    let rmax = ctr(ctx, 2, "residence_max_ns", 0)?;
    check_eq(
        "SW-8-2",
        "port2.residence_max_ns.vc0 (the longest residence seen)",
        rmax,
        longest,
    )?;
    check_eq(
        "SW-7-4",
        "port0.held_bytes.vc0",
        ctr(ctx, 0, "held_bytes", 0)?,
        0,
    )?;
    credits_back(ctx, 0, 0, granted, "the aged frames'")?;
    // The aged frames' credits are back: port 0's peer sends again, and it gets through.
    ctx.peer_submit(0, 0, &data(gpu_of(3), gpu_of(0), 0, 0x999, 1000))?;
    ctx.run_for(5_000)?;
    let got = delivered(ctx, 3)?;
    check(
        got == vec![(0, 0x999)],
        "SW-7-4",
        "a new frame from port 0 is forwarded once the aged frames' credits are returned",
        || format!("port 3 received {got:x?}"),
    )?;
    // Aged frames never leave later.
    ctx.peer_hold(2, false)?;
    ctx.run_for(10_000)?;
    let outs = data_log(ctx, 2, true);
    check_eq(
        "SW-4-6",
        "frames sent on port 2 after the release",
        outs.len() as u64,
        sent,
    )
}

pub(super) fn credits_kept_until_handed_on(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 3)?;
    let n = ctx.desc.ports;
    let s = sw_setup(one_per_port(n), LinkParams::default(), Some(1_000_000));
    up_ports(
        ctx,
        &s,
        &[0, 2],
        |p, c| if p == 2 { small_peer(c) } else { c },
    )?;
    ctx.peer_hold(2, true)?;
    let total = 200u32;
    for k in 0..total {
        ctx.peer_submit(0, 0, &data(gpu_of(2), gpu_of(0), 0, k, 1000))?;
    }
    ctx.run_for(20_000)?;
    let mut seen = Seen::new(0, 2);
    seen.update(ctx);
    let inside = seen.ins.len() - seen.outs.len();
    let plen = data(0, 0, 0, 0, 1000).len();
    let cost = (ethlink_protocol::frame_len(14, plen)
        + usize::from(ctx.params.credit_overhead.unwrap_or(0)))
    .div_ceil(usize::from(ctx.params.credit_size.unwrap_or(64)));
    let credits = ctx.params.rx_credits.unwrap_or(512) as usize;
    let bound = credits / cost + 64;
    if seen.ins.len() == total as usize {
        return Err(Stop::Inconclusive(
            "the switch took every frame: the case cannot tell".into(),
        ));
    }
    check(
        inside <= bound,
        "SW-4-1",
        format!(
            "at most {bound} frames received on port 0 and not sent on port 2: the {} its \
             {credits} credits cover at {cost} credits a frame, and at most 64 handed to the \
             egress link (Table SW-T1, egress_depth)",
            credits / cost
        ),
        || {
            format!(
                "{inside} ({} received, {} sent)",
                seen.ins.len(),
                seen.outs.len()
            )
        },
    )?;
    // The frames it holds are those not yet handed to the egress link: all inside but the
    // 0 to 64 in that link.
    let held = ctr(ctx, 0, "held_bytes", 0)?;
    let plen64 = plen as u64;
    let inside64 = inside as u64;
    check(
        held % plen64 == 0 && held <= inside64 * plen64 && held + 64 * plen64 >= inside64 * plen64,
        "SW-4-5",
        format!(
            "port0.held_bytes.vc0 the payload bytes of the frames inside but those in the egress \
             link: a multiple of {plen} between {} and {}",
            inside64.saturating_sub(64) * plen64,
            inside64 * plen64
        ),
        || format!("{held}"),
    )?;
    let max = ctr(ctx, 0, "held_max_bytes", 0)?;
    let buffer = credits as u64 * u64::from(ctx.params.credit_size.unwrap_or(64));
    check(
        max >= held && max <= buffer,
        "SW-4-5",
        format!("port0.held_max_bytes.vc0 between held_bytes ({held}) and the buffer ({buffer})"),
        || format!("{max}"),
    )?;
    ctx.peer_hold(2, false)?;
    run_until_delivered(ctx, 2, total as usize, 200_000)?;
    let got: Vec<u32> = delivered(ctx, 2)?.iter().map(|x| x.1).collect();
    let mut sorted = got.clone();
    sorted.sort_unstable();
    check(
        sorted == (0..total).collect::<Vec<_>>(),
        "SW-4-4",
        format!("the {total} frames delivered once each once port 2 drains"),
        || format!("{} delivered", got.len()),
    )?;
    check(
        got == (0..total).collect::<Vec<_>>(),
        "SW-3-1",
        "in the order they were received",
        || format!("{got:?}"),
    )
}

/// Each port of a switch is a link end (link.md): a frame its egress link sends that is lost on
/// the wire with nothing behind it (so no gap, no NACK) is replayed when that link's replay
/// timer expires, and the peer gets every frame once, in order. The switch's link timers must
/// keep running on their own, with no frame arriving to wake them.
pub(super) fn lost_tail_replayed(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 2)?;
    let n = ctx.desc.ports;
    let s = sw_setup(one_per_port(n), LinkParams::default(), None);
    up_ports(ctx, &s, &[0, 1], |_, c| c)?;
    ctx.run_for(5_000)?;
    // The switch's first copy of the last frame, 9, vanishes on port 1's wire.
    let mut dropped = false;
    ctx.set_hook(
        1,
        Box::new(move |dir, _, bytes| {
            if dir == Dir::FromDut
                && !dropped
                && matches!(kind_of(bytes), Some(Kind::Data(_)))
                && tag(&bytes[20..]) == Some(9)
            {
                dropped = true;
                return Fault::Drop;
            }
            Fault::Pass
        }),
    )?;
    for k in 0..10u32 {
        ctx.peer_submit(0, 0, &data(gpu_of(1), gpu_of(0), 0, k, 1000))?;
    }
    // Its replay timer (5 us by default, Table LINK-T2) and the round trip, with room to spare.
    let timer = ctx.params.replay_timer_ns.unwrap_or(5_000);
    ctx.run_for(4 * timer + 20_000)?;
    let got: Vec<u32> = delivered(ctx, 1)?.iter().map(|x| x.1).collect();
    check_eq(
        "LINK-3-11",
        "tags the peer of port 1 received, the last one lost once on the wire: each once, in \
         order",
        got,
        (0..10).collect::<Vec<u32>>(),
    )
}

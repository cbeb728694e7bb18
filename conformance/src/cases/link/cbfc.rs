//! Credit-based flow control (link.md §5): the grant and the cost of a frame, CF and CC, their
//! timing, lost and stale credit updates, overrun. The `LE-CBFC-*` cases.

use super::{
    accepted, counter_delta, delivered_tags, hold, is_kind, no_data, no_nack, quiet, send,
    small_peer, submit, wait,
};
use crate::case::{Stop, check, check_eq};
use crate::cases::common::*;
use crate::ctx::{Ctx, Dir, Fault};
use crate::device::LinkParams;

pub(super) fn grant_and_cost(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    // Frames of 252 B cost ceil((252 + 36) / 64) = 5 credits; 20 credits carry 4 of them.
    let peer = small_peer(ctx, [20, 512, 512, 512, 512, 512, 512, 512], 36);
    raw_finish(ctx, dut, peer)?;
    for t in 0..6 {
        submit(ctx, 0, &payload(228, t))?;
    }
    let sent = wait(ctx, 200)?;
    check_eq(
        "LINK-5-2",
        "DATA within a grant of 20 credits at 5 credits a frame",
        data_of(&sent),
        (0..4).map(|s| (s, 0, s)).collect(),
    )?;
    send(ctx, &ack(3))?;
    let sent = send(ctx, &cf(&[(0, 5)]))?;
    check_eq(
        "LINK-5-6",
        "DATA after CF 5",
        data_of(&sent),
        vec![(4, 0, 4)],
    )?;
    let sent = send(ctx, &cf(&[(0, 9)]))?;
    no_data(&sent, "LINK-5-2", "CF 9 leaves 4 credits, a frame costs 5")?;
    let sent = send(ctx, &cf(&[(0, 10)]))?;
    check_eq(
        "LINK-5-6",
        "DATA after CF 10",
        data_of(&sent),
        vec![(5, 0, 5)],
    )
}

pub(super) fn per_vc(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    // Frames of 252 B cost 4 credits; VC 0 grants 5 (one frame of 320 B), VC 1 512.
    let peer = small_peer(ctx, [5, 512, 512, 512, 0, 0, 0, 0], 0);
    raw_finish(ctx, dut, peer)?;
    for t in 0..3 {
        submit(ctx, 0, &payload(228, t))?;
        submit(ctx, 1, &payload(228, 10 + t))?;
    }
    let sent = wait(ctx, 200)?;
    let by_vc: Vec<(u8, u32)> = sent
        .iter()
        .filter_map(|s| match &s.frame {
            Frm::Data { vc, payload, .. } => Some((*vc, tag_of(payload).unwrap_or(u32::MAX))),
            _ => None,
        })
        .collect();
    let vc0: Vec<u32> = by_vc.iter().filter(|f| f.0 == 0).map(|f| f.1).collect();
    let vc1: Vec<u32> = by_vc.iter().filter(|f| f.0 == 1).map(|f| f.1).collect();
    check_eq("LINK-5-2", "tags sent on VC 0 (5 credits)", vc0, vec![0])?;
    check_eq("LINK-5-2", "tags sent on VC 1", vc1, vec![10, 11, 12])
}

pub(super) fn cf_on_drain(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let link = LinkParams {
        vcs: Some(2),
        credit_overhead: Some(20),
        cf_min_credits: Some(8),
        cf_min_interval_ns: Some(100),
        ..quiet()
    };
    raw_up(ctx, link)?;
    hold(ctx, 0, true)?;
    // 256 B + 20 B of overhead: 5 credits of 64 B.
    let mut sent = Vec::new();
    for s in 0..2 {
        sent.extend(accepted(ctx, &data_len(0, s, 256, s), 0, "LINK-5-4")?);
    }
    sent.extend(wait(ctx, 500)?);
    check(
        cfs(&sent).is_empty(),
        "LINK-5-5",
        "no CF while the frames are held",
        || format!("CFs {:?}", cfs(&sent)),
    )?;
    hold(ctx, 0, false)?;
    let sent = wait(ctx, 200)?;
    let c: Vec<[Option<u32>; 8]> = cfs(&sent).into_iter().map(|c| c.1).collect();
    let want = [Some(10), Some(0), None, None, None, None, None, None];
    check_eq("LINK-5-5", "CFs once 10 credits are freed", c, vec![want])?;
    let sent = accepted(ctx, &data_len(1, 2, 256, 2), 1, "LINK-5-4")?;
    check(
        cfs(&sent).is_empty(),
        "LINK-5-5",
        "no CF for 5 freed credits (< 8)",
        || format!("CFs {:?}", cfs(&sent)),
    )?;
    let sent = accepted(ctx, &data_len(1, 3, 256, 3), 1, "LINK-5-4")?;
    let sent = [sent, wait(ctx, 200)?].concat();
    let c: Vec<[Option<u32>; 8]> = cfs(&sent).into_iter().map(|c| c.1).collect();
    let want = [Some(10), Some(10), None, None, None, None, None, None];
    check_eq(
        "LINK-5-5",
        "CFs once 10 more credits are freed",
        c,
        vec![want],
    )
}

pub(super) fn cf_periodic(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            cf_max_interval_ns: Some(3_000),
            cf_min_interval_ns: Some(100),
            ..quiet()
        },
    )?;
    let t_up = ctx.now() - 50;
    // Each CF restarts the interval, so the i-th may be i ticks of the device's clock late.
    let late = ctx.late_ns();
    let sent = wait(ctx, 10_000)?;
    let c = cfs(&sent);
    let times: Vec<u64> = c.iter().map(|c| c.0 - t_up).collect();
    check(
        times.len() == 3
            && times.iter().enumerate().all(|(i, t)| {
                let i = i as u64 + 1;
                (3_000 * i..=3_000 * i + 100 + i * late).contains(t)
            }),
        "LINK-5-10",
        "a CF 3, 6 and 9 us after UP",
        || format!("CFs at (ns after UP) {times:?}"),
    )?;
    let vcs = usize::from(ctx.params.vcs.unwrap_or(4));
    let want: [Option<u32>; 8] = std::array::from_fn(|v| (v < vcs).then_some(0));
    for (_, e) in c {
        check_eq("LINK-5-11", "CF entries", e, want)?;
    }
    Ok(())
}

pub(super) fn cc_when_empty(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            cc_interval_ns: Some(4_000),
            ..quiet()
        },
    )?;
    submit(ctx, 0, &payload(228, 0))?;
    let sent = wait(ctx, 8_000)?;
    check_eq("LINK-3-1", "DATA", data_of(&sent), vec![(0, 0, 0)])?;
    let c = ccs(&sent);
    check(
        c.is_empty(),
        "LINK-5-12",
        "no CC while the replay buffer holds a frame",
        || format!("CCs {c:?}"),
    )?;
    let t = ctx.now();
    let sent = [send(ctx, &ack(0))?, wait(ctx, 4_100)?].concat();
    let c: Vec<(u64, [Option<u32>; 8])> = ccs(&sent).into_iter().map(|(x, e)| (x - t, e)).collect();
    let vcs = usize::from(ctx.params.vcs.unwrap_or(4));
    // 252 B at 64 B a credit: 4 credits.
    let want: [Option<u32>; 8] =
        std::array::from_fn(|v| (v < vcs).then_some(if v == 0 { 4 } else { 0 }));
    check(
        c.len() == 2
            && c[0].0 <= 50
            && (4_000..=4_100).contains(&(c[1].0 - c[0].0))
            && c.iter().all(|x| x.1 == want),
        "LINK-5-7",
        format!("a CC {want:?} at once when the buffer empties, another cc_interval later"),
        || format!("CCs (ns after the ACK, entries) {c:?}"),
    )
}

pub(super) fn cc_recovers(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            vcs: Some(2),
            ..quiet()
        },
    )?;
    let before = ctx.counters()?;
    let sent = counted_as(
        ctx,
        &cc(&[(0, 7), (1, 0), (5, 3)]),
        "cc_received",
        "LINK-5-8",
    )?;
    check_eq(
        "LINK-5-8",
        "credits_recovered.vc0",
        counter_delta(ctx, &before, "credits_recovered.vc0")?,
        7,
    )?;
    check_eq(
        "LINK-5-8",
        "stale_cc_entries (the entry of VC 5)",
        counter_delta(ctx, &before, "stale_cc_entries")?,
        1,
    )?;
    let c: Vec<[Option<u32>; 8]> = cfs(&sent).into_iter().map(|c| c.1).collect();
    let want = [Some(7), Some(0), None, None, None, None, None, None];
    check_eq("LINK-5-13", "CFs at once after the CC", c, vec![want])?;
    // received[1] is 2 after a frame of 128 B; a CC carrying 1 is behind it.
    accepted(ctx, &data_len(1, 0, 128, 0), 1, "LINK-5-4")?;
    let before = ctx.counters()?;
    counted_as(ctx, &cc(&[(1, 1)]), "cc_received", "LINK-5-8")?;
    check_eq(
        "LINK-5-8",
        "(stale_cc_entries, credits_recovered.vc1) after a CC entry behind received",
        (
            counter_delta(ctx, &before, "stale_cc_entries")?,
            counter_delta(ctx, &before, "credits_recovered.vc1")?,
        ),
        (1, 0),
    )
}

pub(super) fn cf_stale_and_repair(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let peer = small_peer(ctx, [10, 512, 512, 512, 512, 512, 512, 512], 0);
    // The peer announces the device's own VCs: the first one not agreed.
    let first_not_agreed = peer.vcs;
    raw_finish(ctx, dut, peer)?;
    for t in 0..6 {
        submit(ctx, 0, &payload(228, t))?;
    }
    let sent = wait(ctx, 100)?;
    check_eq(
        "LINK-5-2",
        "DATA within 10 credits",
        data_of(&sent),
        vec![(0, 0, 0), (1, 0, 1)],
    )?;
    // No credit left for a frame: ACKs still go (a duplicate draws one).
    accepted(ctx, &data_len(0, 0, 128, 0), 0, "LINK-4-1")?;
    let sent = counted_as(ctx, &data_len(0, 0, 128, 0), "duplicates", "LINK-4-5")?;
    check_eq(
        "LINK-5-9",
        "ACKs while the VC has no credit",
        acks(&sent),
        vec![0],
    )?;
    send(ctx, &ack(1))?;
    // The CF carrying 4 was lost; the next carries 8.
    let sent = send(ctx, &cf(&[(0, 8)]))?;
    check_eq(
        "LINK-5-6",
        "DATA after CF 8",
        data_of(&sent),
        vec![(2, 0, 2), (3, 0, 3)],
    )?;
    let before = ctx.counters()?;
    let sent = send(ctx, &cf(&[(0, 20)]))?;
    no_data(
        &sent,
        "LINK-5-6",
        "CF 20 is ahead of the 16 credits consumed",
    )?;
    let sent = send(ctx, &cf(&[(0, 3)]))?;
    no_data(&sent, "LINK-5-6", "CF 3 is behind the 8 already seen")?;
    check_eq(
        "LINK-5-6",
        "stale_cf_entries",
        counter_delta(ctx, &before, "stale_cf_entries")?,
        2,
    )?;
    // An entry equal to the one seen is neither taken nor counted; one for VC 5 (not agreed)
    // is counted, and so is an entry of 0 for the first VC not agreed, though 0 is what an
    // agreed VC's unchanged entry would carry.
    send(ctx, &cf(&[(0, 8)]))?;
    send(ctx, &cf(&[(5, 1)]))?;
    send(ctx, &cf(&[(first_not_agreed, 0)]))?;
    check_eq(
        "LINK-5-6",
        "stale_cf_entries after an unchanged entry, one for VC 5 and 0 for the first VC not agreed",
        counter_delta(ctx, &before, "stale_cf_entries")?,
        4,
    )?;
    let sent = send(ctx, &cf(&[(0, 16)]))?;
    check_eq(
        "LINK-5-6",
        "DATA after CF 16",
        data_of(&sent),
        vec![(4, 0, 4), (5, 0, 5)],
    )?;
    // Every credit back (CF 24, as many as consumed), then an entry exactly 2^19 ahead: not
    // 1..2^19-1 ahead, so stale; the VC keeps its credit and the next frame goes.
    send(ctx, &cf(&[(0, 24)]))?;
    let before = ctx.counters()?;
    send(ctx, &cf(&[(0, 24 + (1 << 19))]))?;
    check_eq(
        "LINK-5-6",
        "stale_cf_entries after an entry 2^19 ahead of the one seen",
        counter_delta(ctx, &before, "stale_cf_entries")?,
        1,
    )?;
    submit(ctx, 0, &payload(228, 6))?;
    let sent = wait(ctx, 200)?;
    check_eq(
        "LINK-5-6",
        "DATA after the stale entry: the VC's credit unchanged",
        data_of(&sent),
        vec![(6, 0, 6)],
    )
}

pub(super) fn overrun(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            mfs: Some(320),
            rx_credits: Some(10),
            ..quiet()
        },
    )?;
    hold(ctx, 0, true)?;
    for s in 0..2 {
        accepted(ctx, &data_len(0, s, 256, s), 0, "LINK-5-4")?;
    }
    let sent = counted_as(
        ctx,
        &data_len(0, 2, 256, 2),
        "credit_overruns.vc0",
        "LINK-4-6",
    )?;
    let l = llr(&sent);
    check(
        l.is_empty(),
        "LINK-4-6",
        "no ACK, no NACK for an overrun",
        || format!("{l:?}"),
    )?;
    // The buffer of VC 0 is full: control frames are still taken.
    let vcs: Vec<(u8, u32)> = (0..ctx.params.vcs.unwrap_or(4)).map(|v| (v, 0)).collect();
    counted_as(ctx, &cf(&vcs), "cf_received", "LINK-5-9")?;
    counted_as(ctx, &ack(0xFFFFF), "acks_received", "LINK-5-9")?;
    hold(ctx, 0, false)?;
    wait(ctx, 100)?;
    let sent = accepted(ctx, &data_len(0, 2, 256, 2), 0, "LINK-4-6")?;
    no_nack(
        &sent,
        "LINK-4-6",
        "the overrun frame took no sequence number",
    )?;
    check_eq(
        "LINK-4-6",
        "delivered tags",
        delivered_tags(ctx),
        vec![0, 1, 2],
    )
}

pub(super) fn replay_no_recharge(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            cc_interval_ns: Some(4_000),
            ..quiet()
        },
    )?;
    let t_up = ctx.now();
    for t in 0..2 {
        submit(ctx, 0, &payload(228, t))?;
    }
    wait(ctx, 100)?;
    let sent = send(ctx, &nack(0xFFFFF))?;
    check_eq(
        "LINK-3-5",
        "replay",
        data_of(&sent),
        vec![(0, 1, 0), (1, 1, 1)],
    )?;
    send(ctx, &ack(1))?;
    let sent = wait(ctx, (t_up + 4_200).saturating_sub(ctx.now()))?;
    let c: Vec<Option<u32>> = ccs(&sent).iter().map(|c| c.1[0]).collect();
    check_eq(
        "LINK-5-3",
        "VC 0 entry of the CC (2 frames of 4 credits)",
        c,
        vec![Some(8)],
    )
}

pub(super) fn cf_min_interval(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            cf_min_credits: Some(4),
            cf_min_interval_ns: Some(1_000),
            ..quiet()
        },
    )?;
    wait(ctx, 2_000)?;
    let sent = accepted(ctx, &data_len(0, 0, 256, 0), 0, "LINK-5-4")?;
    let c = cfs(&sent);
    check(
        c.len() == 1 && c[0].1[0] == Some(4),
        "LINK-5-5",
        "a CF carrying 4 once 4 credits are freed",
        || format!("CFs {c:?}"),
    )?;
    let t1 = c[0].0;
    accepted(ctx, &data_len(0, 1, 256, 1), 0, "LINK-5-4")?;
    let late = ctx.late_ns();
    let sent = wait(ctx, 1_200 + late)?;
    let c: Vec<(u64, Option<u32>)> = cfs(&sent).iter().map(|c| (c.0 - t1, c.1[0])).collect();
    check(
        c.len() == 1 && c[0].1 == Some(8) && (1_000..=1_100 + late).contains(&c[0].0),
        "LINK-5-5",
        "the next CF, carrying 8, cf_min_interval (1000 ns) after the first",
        || format!("CFs (ns after the first, VC 0) {c:?}"),
    )
}

pub(super) fn lost_cfs_repaired(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    up_with_peer(
        ctx,
        LinkParams {
            mfs: Some(320),
            rx_credits: Some(10),
            ..LinkParams::default()
        },
    )?;
    let mut cf_seen = 0u32;
    ctx.set_hook(
        0,
        Box::new(move |dir, _, bytes| {
            if dir == Dir::ToDut && is_kind(bytes, 3) {
                cf_seen += 1;
                if cf_seen <= 2 {
                    return Fault::Drop;
                }
            }
            Fault::Pass
        }),
    )?;
    let before = ctx.counters()?;
    for t in 0..10 {
        submit(ctx, 0, &payload(228, t))?;
    }
    ctx.run_for(60_000)?;
    let got: Vec<u32> = ctx
        .peer_delivered(0)?
        .iter()
        .filter_map(|(_, p)| tag_of(p))
        .collect();
    check_eq(
        "LINK-5-6",
        "payloads the peer received",
        got,
        (0..10).collect(),
    )?;
    let stalls = counter_delta(ctx, &before, "credit_stalls.vc0")?;
    check(
        stalls >= 1,
        "LINK-5-2",
        "the VC stalled for want of credit",
        || format!("credit_stalls.vc0 {stalls}"),
    )
}

pub(super) fn first_cf_after_up(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            cf_min_credits: Some(2),
            cf_min_interval_ns: Some(5_000),
            ..quiet()
        },
    )?;
    // 128 B: 2 credits of 64 B, drained by the upper layer at once.
    ctx.inject(0, &data_len(0, 0, 128, 0))?;
    let sent = wait(ctx, 200)?;
    let first = cfs(&sent);
    check(
        first.len() == 1,
        "LINK-5-5",
        "one CF at once: no CF had been sent since UP, so no cf_min_interval holds it",
        || format!("CFs (time, entries) {first:?}"),
    )?;
    let at = first.first().map_or(0, |c| c.0);
    ctx.inject(0, &data_len(0, 1, 128, 1))?;
    let sent = wait(ctx, 200)?;
    check(
        cfs(&sent).is_empty(),
        "LINK-5-5",
        "no second CF within cf_min_interval (5000 ns) of the first",
        || format!("CFs (time, entries) {:?}", cfs(&sent)),
    )?;
    let sent = wait(ctx, 5_000)?;
    let second = cfs(&sent);
    check(
        second.len() == 1 && second[0].0 >= at + 5_000,
        "LINK-5-5",
        format!(
            "one CF at or after {} (the first CF + cf_min_interval)",
            at + 5_000
        ),
        || format!("CFs (time, entries) {second:?}"),
    )
}

pub(super) fn empty_cc_draws_no_cf(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    let sent = counted_as(ctx, &cc(&[]), "cc_received", "WIRE-4.3-2")?;
    check(
        cfs(&sent).is_empty(),
        "WIRE-4.3-2",
        "no CF for a CC that carries no entry",
        || format!("CFs (time, entries) {:?}", cfs(&sent)),
    )?;
    let sent = counted_as(ctx, &cc(&[(0, 0)]), "cc_received", "LINK-5-13")?;
    check(
        cfs(&sent).len() == 1,
        "LINK-5-13",
        "one CF at once after a CC with an entry",
        || format!("CFs (time, entries) {:?}", cfs(&sent)),
    )
}

/// The (VC, tag) of every new DATA frame in `sent`, sorted.
fn data_by_vc(sent: &[Sent]) -> Vec<(u8, u32)> {
    let mut v: Vec<(u8, u32)> = sent
        .iter()
        .filter_map(|s| match &s.frame {
            Frm::Data {
                vc, flags, payload, ..
            } if flags & 0x01 == 0 => Some((*vc, tag_of(payload).unwrap_or(u32::MAX))),
            _ => None,
        })
        .collect();
    v.sort_unstable();
    v
}

/// Credits returned on every agreed VC at once: a peer that grants 5 credits on each VC stalls
/// the second frame of each (4 credits a frame), and one CF carrying an entry for every VC,
/// VC 0 unchanged and the others advancing, releases the second frame of each VC it returns
/// credits to, and of no other.
pub(super) fn cf_every_vc(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let peer = small_peer(ctx, [5; 8], 0);
    let n = dut.vcs.min(peer.vcs);
    if n < 2 {
        return Err(Stop::Unsupported("the case needs two VCs".into()));
    }
    raw_finish(ctx, dut, peer)?;
    for v in 0..n {
        let t = 10 * u32::from(v);
        submit(ctx, v, &payload(228, t))?;
        submit(ctx, v, &payload(228, t + 1))?;
    }
    let sent = wait(ctx, 200)?;
    check_eq(
        "LINK-5-2",
        "(VC, tag) of the DATA sent within 5 credits a VC: the first frame of each",
        data_by_vc(&sent),
        (0..n).map(|v| (v, 10 * u32::from(v))).collect::<Vec<_>>(),
    )?;
    // VC 0's entry stays at 0 (nothing freed), every other VC's returns the 4 credits.
    let entries: Vec<(u8, u32)> = (0..n).map(|v| (v, if v == 0 { 0 } else { 4 })).collect();
    let sent = send(ctx, &cf(&entries))?;
    let sent = [sent, wait(ctx, 200)?].concat();
    check_eq(
        "LINK-5-6",
        "(VC, tag) of the DATA the CF released: the second frame of every VC but VC 0",
        data_by_vc(&sent),
        (1..n)
            .map(|v| (v, 10 * u32::from(v) + 1))
            .collect::<Vec<_>>(),
    )
}

/// Frames of 9,000 B at a credit size of 32 B and an overhead of 255 B: 290 credits each, so
/// that 300 of them (87,000 credits, 2.7 MB) take one VC's counters past 2^16, where a counter
/// kept in 16 bits fails. Through the 2^20 wrap would take 3,616 of them: 33 MB through the line
/// protocol in each direction, about 20 s against the Python example device; the reference's own
/// test `credit_counters_wrap` (link/tests/scenarios.rs) takes its counters through it.
const WIDE_FRAMES: u32 = 300;
/// The payload of one of those frames.
const WIDE_PAYLOAD: usize = 9_000;
/// Credits of one of those frames (LINK-5-1): ceil((14 + 6 + 9000 + 4 + 255) / 32).
const WIDE_COST: u32 = 290;

/// The link parameters of the cases past 2^16: the smallest credit and the largest overhead, and a CC
/// every 5 us.
fn wide_params() -> LinkParams {
    LinkParams {
        credit_size: Some(32),
        credit_overhead: Some(255),
        cc_interval_ns: Some(5_000),
        ..LinkParams::default()
    }
}

/// Sends [`WIDE_FRAMES`] frames by `send` (tag `k` for the k-th), at most 16 ahead of those
/// `take` reports received, and returns the tags received in order; stops when nothing more
/// arrives for 100 us.
fn stream_wide(
    ctx: &mut Ctx<'_>,
    mut send: impl FnMut(&mut Ctx<'_>, u32) -> Result<(), Stop>,
    mut take: impl FnMut(&mut Ctx<'_>) -> Result<Vec<u32>, Stop>,
) -> Result<Vec<u32>, Stop> {
    let mut sent = 0u32;
    let mut tags: Vec<u32> = Vec::new();
    let mut stuck = 0;
    while tags.len() < WIDE_FRAMES as usize && stuck <= 50 {
        // At most 16 frames (144 KiB) queued at once.
        while sent < WIDE_FRAMES && sent as usize - tags.len() < 16 {
            send(ctx, sent)?;
            sent += 1;
        }
        ctx.run_for(2_000)?;
        let before = tags.len();
        tags.extend(take(ctx)?);
        stuck = if tags.len() == before { stuck + 1 } else { 0 };
    }
    Ok(tags)
}

/// How `tags` differs from `want`: its length, the first tag out of place and the credits the
/// frames before it took.
fn out_of_place(tags: &[u32], want: &[u32]) -> String {
    let first = tags
        .iter()
        .zip(want)
        .position(|(a, b)| a != b)
        .unwrap_or(tags.len());
    format!(
        "{} frames; the first out of place at index {first} ({:?}), {} credits in",
        tags.len(),
        tags.get(first),
        u64::from(WIDE_COST) * first as u64
    )
}

/// The device sends [`WIDE_FRAMES`] frames on VC 1: its consumed credits pass 2^16, every frame
/// reaches the peer once and in order, none beyond the grant, and its CC carries consumed whole.
pub(super) fn credits_past_2_16_tx(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    up_with_peer(ctx, wide_params())?;
    let tags = stream_wide(
        ctx,
        |ctx, k| submit(ctx, 1, &payload(WIDE_PAYLOAD, k)),
        |ctx| {
            Ok(ctx
                .peer_delivered(0)?
                .iter()
                .filter_map(|(_, p)| tag_of(p))
                .collect())
        },
    )?;
    let want: Vec<u32> = (0..WIDE_FRAMES).collect();
    let credits = u64::from(WIDE_FRAMES) * u64::from(WIDE_COST);
    //= docs/spec/link.md#5-credit-based-flow-control
    //= type=test
    //# LINK-5-2 The TX MUST NOT send a new DATA frame on VC *v* unless its cost is at most
    //# `grant[v] - (consumed[v] - freed_seen[v])` (modulo 2^20). It then adds the cost to
    //# `consumed[v]`.
    //= docs/spec/link.md#5-credit-based-flow-control
    //= type=test
    //# LINK-5-6 On a CF, the TX MUST set `freed_seen[v]` to the carried value for every VC in the
    //# mask when the value is ahead of `freed_seen[v]` by 1..2^19-1 and not ahead of `consumed[v]`
    check(
        tags == want,
        "LINK-5-2",
        format!(
            "the {WIDE_FRAMES} frames of VC 1 at the peer, once each and in order: {credits} \
             credits, past 2^16"
        ),
        || out_of_place(&tags, &want),
    )?;
    let overruns = ctx.peer(0)?.link.counters().credit_overruns[1];
    check_eq(
        "LINK-5-2",
        "frames beyond the grant at the peer (its credit_overruns.vc1)",
        overruns,
        0,
    )?;
    // With the replay buffer empty, a CC within cc_interval carries consumed (modulo 2^20).
    let from = ctx.log().len();
    ctx.run_for(12_000)?;
    let sent = logged_since(ctx, from);
    let last = ccs(&sent).last().and_then(|c| c.1[1]);
    let want_cc = (credits % (1 << 20)) as u32;
    //= docs/spec/link.md#5-credit-based-flow-control
    //= type=test
    //# LINK-5-7 The TX MUST send a CC carrying `consumed[v]` when its replay buffer is empty and at
    //# least `cc_interval` has passed since UP or since its last CC.
    check(
        last == Some(want_cc),
        "LINK-5-7",
        format!("a CC carrying consumed[1] = {want_cc}, past 2^16"),
        || format!("CCs within 12 us (time, entries): {:?}", ccs(&sent)),
    )
}

/// The peer sends [`WIDE_FRAMES`] frames on VC 1: the device's freed credits pass 2^16, it
/// delivers every frame once and in order, counts no overrun, and its CF carries freed whole.
pub(super) fn credits_past_2_16_rx(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    up_with_peer(ctx, wide_params())?;
    let from = ctx.log().len();
    let tags = stream_wide(
        ctx,
        |ctx, k| ctx.peer_submit(0, 1, &payload(WIDE_PAYLOAD, k)),
        |ctx| {
            Ok(delivered(&ctx.take_outputs())
                .into_iter()
                .filter(|(vc, _)| *vc == 1)
                .map(|(_, t)| t)
                .collect())
        },
    )?;
    let want: Vec<u32> = (0..WIDE_FRAMES).collect();
    let credits = u64::from(WIDE_FRAMES) * u64::from(WIDE_COST);
    //= docs/spec/link.md#5-credit-based-flow-control
    //= type=test
    //# LINK-5-4 On accepting a frame on VC *v* the RX MUST add its cost to `received[v]`; as the upper
    //# layer drains it, the RX MUST add its cost to `freed[v]`.
    check(
        tags == want,
        "LINK-5-4",
        format!(
            "the {WIDE_FRAMES} frames the peer sent on VC 1 delivered once each and in order: \
             {credits} credits freed, past 2^16"
        ),
        || out_of_place(&tags, &want),
    )?;
    check_eq(
        "LINK-5-4",
        "credit_overruns.vc1 at the device",
        ctx.counter("credit_overruns.vc1")?,
        0,
    )?;
    // The last CF once every frame is drained: at the latest cf_max_interval after the one
    // before (LINK-5-10).
    ctx.run_for(12_000)?;
    let all = cfs(&logged_since(ctx, from));
    let last = all.last().and_then(|c| c.1[1]);
    let want_cf = (credits % (1 << 20)) as u32;
    //= docs/spec/link.md#5-credit-based-flow-control
    //= type=test
    //# LINK-5-5 The RX MUST send a CF carrying `freed[v]` when at least `cf_min_credits` credits,
    //# summed over the VCs, have been freed since its last CF (or since UP)
    check(
        last == Some(want_cf),
        "LINK-5-5",
        format!("the device's last CF carries freed[1] = {want_cf}, past 2^16"),
        || {
            format!(
                "its last CFs (time, entries): {:?}",
                &all[all.len().saturating_sub(3)..]
            )
        },
    )
}

/// A CC recovers leaked credits on every agreed VC, at the boundaries of LINK-5-8: one credit,
/// more than 2^16, 2^19 - 1 (recovered) and 2^19 (behind, counted stale), and an entry for the
/// first VC not agreed (counted stale); each CC with an entry draws a CF at once.
pub(super) fn cc_recovers_every_vc(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            vcs: Some(4),
            ..quiet()
        },
    )?;
    let before = ctx.counters()?;
    let sent = counted_as(
        ctx,
        &cc(&[(1, 5), (2, 65_539), (3, 1), (4, 9)]),
        "cc_received",
        "LINK-5-8",
    )?;
    //= docs/spec/link.md#5-credit-based-flow-control
    //= type=test
    //# LINK-5-8 On a CC the RX MUST, for every VC in the mask whose `consumed[v]` is ahead of
    //# `received[v]` by less than 2^19, add the difference to both `received[v]` and `freed[v]`
    let got: Vec<u64> = (1..4)
        .map(|v| counter_delta(ctx, &before, &format!("credits_recovered.vc{v}")))
        .collect::<Result<_, _>>()?;
    check_eq(
        "LINK-5-8",
        "credits_recovered of VC 1, 2 and 3 (5, past 2^16, exactly one)",
        got,
        vec![5, 65_539, 1],
    )?;
    check_eq(
        "LINK-5-8",
        "stale_cc_entries (the entry of VC 4, the first not agreed)",
        counter_delta(ctx, &before, "stale_cc_entries")?,
        1,
    )?;
    let c: Vec<[Option<u32>; 8]> = cfs(&sent).into_iter().map(|c| c.1).collect();
    let want = [
        Some(0),
        Some(5),
        Some(65_539),
        Some(1),
        None,
        None,
        None,
        None,
    ];
    check_eq("LINK-5-13", "CFs at once after the CC", c, vec![want])?;
    // received[0] is 0: 2^19 ahead is behind; received[1] is 5: 2^19 - 1 more is ahead.
    let before = ctx.counters()?;
    let sent = counted_as(
        ctx,
        &cc(&[(0, 1 << 19), (1, 5 + (1 << 19) - 1)]),
        "cc_received",
        "LINK-5-8",
    )?;
    check_eq(
        "LINK-5-8",
        "(credits_recovered.vc0, credits_recovered.vc1, stale_cc_entries) after a CC 2^19 \
         ahead on VC 0 and 2^19 - 1 ahead on VC 1",
        (
            counter_delta(ctx, &before, "credits_recovered.vc0")?,
            counter_delta(ctx, &before, "credits_recovered.vc1")?,
            counter_delta(ctx, &before, "stale_cc_entries")?,
        ),
        (0, (1 << 19) - 1, 1),
    )?;
    let c: Vec<Option<u32>> = cfs(&sent).into_iter().map(|c| c.1[1]).collect();
    check_eq(
        "LINK-5-13",
        "the CF at once, carrying freed[1]",
        c,
        vec![Some(5 + (1 << 19) - 1)],
    )
}

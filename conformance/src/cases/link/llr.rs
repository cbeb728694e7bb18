//! Link-level retry (link.md §3 the transmit side, §3.1 how long a link keeps a frame, §4 the
//! receive side): ACK and NACK, the replay buffer, the replay timer and count, FLUSH (§6), frame
//! age, and frames that arrive together. The `LE-LLR-*` cases.

use super::{
    accepted, bad_fcs, counter_delta, delivered_tags, flagged, is_kind, lost_at, no_data, no_nack,
    one_nack, quiet, send, stomped_frame, submit, wait,
};
use crate::case::{Stop, check, check_eq};
use crate::cases::common::*;
use crate::ctx::{Ctx, Dir, Fault};
use crate::device::{LinkParams, Output};

pub(super) fn bad_fcs_draws_nack(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    up_with_peer(ctx, LinkParams::default())?;
    ctx.take_outputs();
    // Damage the third DATA frame the peer sends, once.
    let mut data_seen = 0u32;
    ctx.set_hook(
        0,
        Box::new(move |dir, _, bytes| {
            if dir == Dir::ToDut && bytes.len() > 20 && bytes[14] & 0x0F == 0 {
                data_seen += 1;
                if data_seen == 3 {
                    let n = bytes.len();
                    bytes[n - 1] ^= 0xFF;
                }
            }
            Fault::Pass
        }),
    )?;
    let from = ctx.log().len();
    for i in 0..6 {
        ctx.peer_submit(0, 0, &payload(256, i))?;
    }
    ctx.run_for(20_000)?;
    let nacks: Vec<u32> = sent_since(ctx, from)
        .into_iter()
        .filter_map(|k| match k {
            Kind::Nack(s) => Some(s),
            _ => None,
        })
        .collect();
    check(
        nacks == vec![before(2)],
        "LINK-4-3",
        "exactly one NACK carrying 1, the last sequence number received in order",
        || format!("NACKs carrying {nacks:?}"),
    )?;
    let tags: Vec<u32> = ctx
        .take_outputs()
        .iter()
        .filter_map(|o| match o {
            Output::Delivered { payload, .. } => hex::decode(payload).ok().and_then(|p| tag_of(&p)),
            _ => None,
        })
        .collect();
    check(
        tags == (0..6).collect::<Vec<_>>(),
        "LINK-4-1",
        "payloads 0..5 delivered once each, in order",
        || format!("delivered {tags:?}"),
    )
}

pub(super) fn gap_nack_once(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    for s in 0..2 {
        accepted(ctx, &data_len(0, s, 128, s), 0, "LINK-4-1")?;
    }
    let sent = counted_as(
        ctx,
        &data_len(0, 3, 128, 3),
        "discarded_after_nack",
        "LINK-4-3",
    )?;
    one_nack(&sent, 1, "LINK-4-3")?;
    for s in [4, 5] {
        let sent = counted_as(
            ctx,
            &data_len(0, s, 128, s),
            "discarded_after_nack",
            "LINK-4-7",
        )?;
        no_nack(&sent, "LINK-4-7", "NACK_SENT, frames ahead of the last one")?;
    }
    for s in 2..6 {
        let sent = accepted(ctx, &data_len(0, s, 128, s), 0, "LINK-4-1")?;
        no_nack(&sent, "LINK-4-7", "the expected frame")?;
    }
    check_eq(
        "LINK-4-1",
        "delivered tags",
        delivered_tags(ctx),
        (0..6).collect(),
    )?;
    check_eq("LINK-4-3", "nacks_sent", ctx.counter("nacks_sent")?, 1)
}

pub(super) fn second_nack(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    for s in 0..2 {
        accepted(ctx, &data_len(0, s, 128, s), 0, "LINK-4-1")?;
    }
    let sent = send(ctx, &data_len(0, 3, 128, 3))?;
    one_nack(&sent, 1, "LINK-4-3")?;
    let sent = send(ctx, &flagged(data_len(0, 4, 128, 4), 0x01))?;
    no_nack(&sent, "LINK-4-7", "4 is beyond 3")?;
    // A new replay lost 2 again: 3 is not beyond 4. Sent without the REPLAY flag on purpose.
    let sent = send(ctx, &data_len(0, 3, 128, 3))?;
    one_nack(&sent, 1, "LINK-4-8")?;
    let sent = send(ctx, &flagged(data_len(0, 4, 128, 4), 0x01))?;
    no_nack(&sent, "LINK-4-8", "4 is beyond 3")?;
    accepted(ctx, &flagged(data_len(0, 2, 128, 2), 0x01), 0, "WIRE-3-10")?;
    check_eq(
        "LINK-4-1",
        "delivered tags",
        delivered_tags(ctx),
        vec![0, 1, 2],
    )
}

pub(super) fn damaged_nack(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    let sent = counted_as(
        ctx,
        &bad_fcs(data_len(0, 0, 128, 0)),
        "rx_fcs_errors",
        "WIRE-2.5-6",
    )?;
    one_nack(&sent, 0xFFFFF, "WIRE-4.2-1")?;
    let mut runt = data_len(0, 0, 128, 0);
    runt.truncate(60);
    refcs(&mut runt);
    let sent = counted_as(ctx, &runt, "rx_damaged", "WIRE-2.4-2")?;
    no_nack(&sent, "LINK-4-13", "NACK_SENT")?;
    accepted(ctx, &data_len(0, 0, 128, 0), 0, "WIRE-7-2")?;
    let sent = counted_as(ctx, &runt, "rx_damaged", "WIRE-2.4-2")?;
    one_nack(&sent, 0, "LINK-4-3")?;
    let sent = counted_as(
        ctx,
        &bad_fcs(data_len(0, 1, 128, 1)),
        "rx_fcs_errors",
        "WIRE-2.5-6",
    )?;
    no_nack(&sent, "LINK-4-13", "NACK_SENT")?;
    accepted(ctx, &data_len(0, 1, 128, 1), 0, "WIRE-7-2")?;
    check_eq(
        "LINK-4-1",
        "delivered tags",
        delivered_tags(ctx),
        vec![0, 1],
    )
}

pub(super) fn duplicate_acked(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    for s in 0..3 {
        let sent = accepted(ctx, &data_len(0, s, 128, s), 0, "LINK-4-1")?;
        check(
            acks(&sent).is_empty(),
            "LINK-4-2",
            "no ACK before spacing or timer",
            || format!("ACKs {:?}", acks(&sent)),
        )?;
    }
    let sent = counted_as(ctx, &data_len(0, 1, 128, 1), "duplicates", "LINK-4-5")?;
    check_eq("LINK-4-16", "ACKs after a duplicate", acks(&sent), vec![2])?;
    no_nack(&sent, "LINK-4-5", "a duplicate")?;
    let sent = send(ctx, &data_len(0, 4, 128, 4))?;
    one_nack(&sent, 2, "LINK-4-3")?;
    let sent = counted_as(ctx, &data_len(0, 0, 128, 0), "duplicates", "LINK-4-5")?;
    check_eq(
        "LINK-4-16",
        "ACKs after a duplicate in NACK_SENT",
        acks(&sent),
        vec![2],
    )?;
    no_nack(&sent, "LINK-4-7", "a duplicate in NACK_SENT")?;
    check_eq(
        "LINK-4-1",
        "delivered tags",
        delivered_tags(ctx),
        vec![0, 1, 2],
    )
}

/// LINK-4-16's rate: after the first duplicate, one ACK each time the duplicates that follow
/// reach `ack_spacing` bytes. With 1024 bytes of spacing and duplicates of 256 bytes, twelve
/// duplicates draw ACKs at the 1st, the 5th and the 9th, exactly.
pub(super) fn duplicates_acked_by_spacing(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            ack_spacing: Some(1_024),
            ..quiet()
        },
    )?;
    for s in 0..4 {
        accepted(ctx, &data_len(0, s, 256, s), 0, "LINK-4-1")?;
    }
    wait(ctx, 1_000)?;
    let mut acked = Vec::new();
    for i in 0..12u32 {
        let sent = counted_as(
            ctx,
            &data_len(0, i % 4, 256, i % 4),
            "duplicates",
            "LINK-4-5",
        )?;
        let a = acks(&sent);
        check(
            a.iter().all(|&x| x == 3),
            "LINK-4-16",
            "every ACK carries 3, the last frame accepted",
            || format!("ACKs {a:?}"),
        )?;
        if !a.is_empty() {
            acked.push(i + 1);
        }
    }
    check_eq(
        "LINK-4-16",
        "the duplicates (1st to 12th, 256 B each) after which an ACK went, with ack_spacing 1024",
        acked,
        vec![1, 5, 9],
    )
}

pub(super) fn wrap_boundaries(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    // The first duplicate since UP draws an ACK of 0xFFFFF; the second, 128 B later, none
    // (LINK-4-16: one per ack_spacing of duplicates).
    for (s, want) in [(0xFFFFF, vec![0xFFFFF]), (0x80000, vec![])] {
        let sent = counted_as(ctx, &data_len(0, s, 128, 9), "duplicates", "WIRE-3-4")?;
        check_eq("LINK-4-16", "ACKs after a duplicate", acks(&sent), want)?;
        no_nack(&sent, "WIRE-3-4", "a duplicate behind 0 across the wrap")?;
    }
    let sent = counted_as(
        ctx,
        &data_len(0, 0x7FFFF, 128, 9),
        "discarded_after_nack",
        "WIRE-3-4",
    )?;
    one_nack(&sent, 0xFFFFF, "WIRE-3-4")?;
    accepted(ctx, &data_len(0, 0, 128, 0), 0, "LINK-4-1")?;
    check_eq("LINK-4-1", "delivered tags", delivered_tags(ctx), vec![0])
}

pub(super) fn ack_spacing(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            ack_spacing: Some(1024),
            ..quiet()
        },
    )?;
    let mut all = Vec::new();
    for s in 0..8 {
        // 256 bytes with the FCS: four of them make exactly 1024.
        all.extend(accepted(ctx, &data_len(0, s, 256, s), 0, "LINK-4-1")?);
    }
    check_eq(
        "LINK-4-2",
        "ACKs (every 1024 bytes)",
        acks(&all),
        vec![3, 7],
    )?;
    // 768 bytes, then a gap: the NACK restarts the count, so the next ACK waits for 1024
    // bytes after it (frame 14), not for 256 more (frame 11).
    let mut all = Vec::new();
    for s in 8..11 {
        all.extend(accepted(ctx, &data_len(0, s, 256, s), 0, "LINK-4-1")?);
    }
    let sent = send(ctx, &data_len(0, 12, 256, 12))?;
    one_nack(&sent, 10, "LINK-4-3")?;
    for s in 11..16 {
        all.extend(accepted(ctx, &data_len(0, s, 256, s), 0, "LINK-4-1")?);
    }
    check_eq(
        "LINK-4-2",
        "ACKs after 768 bytes, a NACK and 1280 bytes",
        acks(&all),
        vec![14],
    )?;
    // One byte short: with ack_spacing 1025, four frames of 256 bytes (1024) draw no ACK, the
    // fifth does (frame lengths are multiples of 4, so only a spacing of 4k + 1 shows it).
    raw_up(
        ctx,
        LinkParams {
            ack_spacing: Some(1025),
            ..quiet()
        },
    )?;
    let mut all = Vec::new();
    for s in 0..5 {
        all.extend(accepted(ctx, &data_len(0, s, 256, s), 0, "LINK-4-1")?);
    }
    check_eq(
        "LINK-4-2",
        "ACKs with ack_spacing 1025: none at 1024 bytes, one at 1280",
        acks(&all),
        vec![4],
    )
}

pub(super) fn ack_timer(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            ack_timer_ns: Some(2_000),
            ..quiet()
        },
    )?;
    // The timer acts at the first tick of the device's clock at or after its expiry.
    //= docs/spec/link.md#12-timers
    //= type=test
    //# LINK-1-5 An end whose timers run on a clock coarser than 1 ns MUST act on each expiry at
    //# the first tick of that clock at or after it, never before it, and that clock's tick MUST
    //# NOT exceed 256 ns.
    let late = ctx.late_ns();
    let t0 = ctx.now();
    ctx.inject(0, &data_len(0, 0, 128, 0))?;
    let sent = wait(ctx, 3_000)?;
    let a: Vec<(u64, Frm)> = sent
        .iter()
        .filter(|s| matches!(s.frame, Frm::Ack(_)))
        .map(|s| (s.time - t0, s.frame.clone()))
        .collect();
    check(
        a.len() == 1 && a[0].1 == Frm::Ack(0) && (2_000..=2_100 + late).contains(&a[0].0),
        "LINK-4-14",
        "one ACK 0, 2000 ns after the frame",
        || format!("ACKs (ns after the frame, frame) {a:?}"),
    )?;
    let t1 = ctx.now();
    ctx.inject(0, &data_len(0, 1, 128, 1))?;
    ctx.run_for(500)?;
    ctx.inject(0, &data_len(0, 2, 128, 2))?;
    let sent = wait(ctx, 3_000)?;
    let a: Vec<(u64, Frm)> = sent
        .iter()
        .filter(|s| matches!(s.frame, Frm::Ack(_)))
        .map(|s| (s.time - t1, s.frame.clone()))
        .collect();
    check(
        a.len() == 1 && a[0].1 == Frm::Ack(2) && (2_000..=2_100 + late).contains(&a[0].0),
        "LINK-4-14",
        "one ACK 2, 2000 ns after the first of the two frames",
        || format!("ACKs (ns after the first frame, frame) {a:?}"),
    )
}

pub(super) fn ack_req(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    accepted(ctx, &data_len(0, 0, 128, 0), 0, "LINK-4-1")?;
    let t0 = ctx.now();
    ctx.inject(0, &flagged(data_len(0, 1, 128, 1), 0x02))?;
    let sent = wait(ctx, 100)?;
    let a: Vec<(u64, Frm)> = sent
        .iter()
        .filter(|s| matches!(s.frame, Frm::Ack(_)))
        .map(|s| (s.time - t0, s.frame.clone()))
        .collect();
    check(
        a.len() == 1 && a[0].1 == Frm::Ack(1),
        "LINK-4-15",
        "an ACK 1 at once after the frame with ACK_REQ",
        || format!("ACKs (ns after, frame) {a:?}"),
    )
}

pub(super) fn nack_replay(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    for t in 10..15 {
        submit(ctx, 0, &payload(200, t))?;
    }
    let first = wait(ctx, 100)?;
    check_eq(
        "LINK-3-1",
        "DATA (seq, flags, tag)",
        data_of(&first),
        (0..5).map(|s| (s, 0, 10 + s)).collect(),
    )?;
    for s in &first {
        check_eq("WIRE-3-1", "version", s.bytes[14] >> 4, 1)?;
    }
    ctx.inject(0, &nack(1))?;
    submit(ctx, 0, &payload(200, 15))?;
    let sent = wait(ctx, 100)?;
    check_eq(
        "LINK-3-5",
        "DATA after NACK 1 (seq, flags, tag)",
        data_of(&sent),
        vec![(2, 1, 12), (3, 1, 13), (4, 1, 14), (5, 0, 15)],
    )?;
    let originals: Vec<&Sent> = first.iter().filter(|s| s.frame.is_data()).collect();
    for (i, r) in sent
        .iter()
        .filter(|s| s.frame.is_data())
        .take(3)
        .enumerate()
    {
        let o = &originals[i + 2].bytes;
        let mut a = r.bytes.clone();
        let n = a.len();
        check(
            ethlink_protocol::fcs::check(&a),
            "LINK-3-8",
            "a good FCS on the retransmission",
            || "a bad one".into(),
        )?;
        a[15] &= !0x01;
        check(
            n == o.len() && a[..n - 4] == o[..n - 4],
            "LINK-3-8",
            "the retransmission byte for byte the original but the REPLAY flag and the FCS",
            || {
                format!(
                    "original {}\nreplay   {}",
                    hex::encode(o),
                    hex::encode(&r.bytes)
                )
            },
        )?;
    }
    let c = ctx.counters()?;
    let get = |n: &str| c.get(n).copied().unwrap_or(0);
    check_eq(
        "LINK-3-5",
        "(frames_replayed, replays_by_nack)",
        (get("frames_replayed"), get("replays_by_nack")),
        (3, 1),
    )
}

pub(super) fn replay_timer(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            replay_timer_ns: Some(3_000),
            ..quiet()
        },
    )?;
    for t in 0..3 {
        submit(ctx, 0, &payload(200, t))?;
    }
    let t0 = ctx.now();
    let sent = wait(ctx, 2_000)?;
    check_eq(
        "LINK-3-1",
        "DATA",
        data_of(&sent),
        vec![(0, 0, 0), (1, 0, 1), (2, 0, 2)],
    )?;
    let t_ack = ctx.now();
    let sent = send(ctx, &ack(0))?;
    no_data(&sent, "LINK-3-4", "ACK 0 starts no replay")?;
    let sent = wait(ctx, 2_900u64.saturating_sub(ctx.now() - t_ack))?;
    no_data(
        &sent,
        "LINK-3-6",
        "the timer restarted by the ACK of frame 0 has not expired",
    )?;
    // The timer acts up to a tick late, and the second copy leaves once the first has.
    let late = ctx.late_ns();
    let sent = wait(ctx, 300 + late)?;
    let copy = data_len(0, 0, 200, 0).len();
    let slack = late + ctx.ser_ns(copy);
    let replays: Vec<(u64, u32, u8)> = sent
        .iter()
        .filter_map(|s| match s.frame {
            Frm::Data { seq, flags, .. } => Some((s.time - t_ack, seq, flags)),
            _ => None,
        })
        .collect();
    check(
        replays.len() == 2
            && replays
                .iter()
                .zip([1u32, 2])
                .all(|(r, s)| r.1 == s && r.2 & 1 == 1)
            && replays
                .iter()
                .all(|r| (3_000..=3_100 + slack).contains(&r.0)),
        "LINK-3-11",
        "frames 1 and 2 replayed, REPLAY set, 3000 ns after the ACK of frame 0",
        || format!("(ns after the ACK, seq, flags) {replays:?} (sent {t0} + ...)"),
    )?;
    check_eq(
        "LINK-3-11",
        "replay_timeouts",
        ctx.counter("replay_timeouts")?,
        1,
    )?;
    send(ctx, &ack(2))?;
    let sent = wait(ctx, 10_000)?;
    no_data(
        &sent,
        "LINK-3-6",
        "the buffer is empty: the timer is stopped",
    )?;
    // A replay started by a NACK restarts the timer: the next expiry is 3000 ns after it.
    submit(ctx, 0, &payload(200, 3))?;
    let sent = wait(ctx, 2_000)?;
    check_eq("LINK-3-1", "DATA", data_of(&sent), vec![(3, 0, 3)])?;
    let t_nack = ctx.now();
    let sent = send(ctx, &nack(2))?;
    check_eq(
        "LINK-3-5",
        "replay after NACK 2",
        data_of(&sent),
        vec![(3, 1, 3)],
    )?;
    let sent = wait(ctx, 2_800u64.saturating_sub(ctx.now() - t_nack))?;
    no_data(
        &sent,
        "LINK-3-6",
        "the timer restarted by the replay has not expired",
    )?;
    let sent = wait(ctx, 300 + late)?;
    let r: Vec<(u64, u32)> = sent
        .iter()
        .filter_map(|s| match s.frame {
            Frm::Data { seq, .. } => Some((s.time - t_nack, seq)),
            _ => None,
        })
        .collect();
    check(
        r.len() == 1 && r[0].1 == 3 && (3_000..=3_100 + late).contains(&r[0].0),
        "LINK-3-6",
        "frame 3 replayed 3000 ns after the NACK that started the last replay",
        || format!("(ns after the NACK, seq) {r:?}"),
    )
}

pub(super) fn flush(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let raw = raw_up(
        ctx,
        LinkParams {
            replay_timer_ns: Some(2_000),
            replay_count_max: Some(2),
            replay_max_frames: Some(2),
            ..quiet()
        },
    )?;
    for t in 1..4 {
        submit(ctx, 0, &payload(200, t))?;
    }
    let sent = wait(ctx, 100)?;
    check_eq(
        "LINK-3-3",
        "DATA with a replay buffer of 2 frames",
        data_of(&sent),
        vec![(0, 0, 1), (1, 0, 2)],
    )?;
    let sent = wait(ctx, 4_050)?;
    check_eq(
        "LINK-3-11",
        "two replays of frames 0 and 1",
        data_of(&sent),
        vec![(0, 1, 1), (1, 1, 2), (0, 1, 1), (1, 1, 2)],
    )?;
    let sent = wait(ctx, 2_000)?;
    no_data(
        &sent,
        "LINK-3-13",
        "a third replay would exceed replay_count_max 2",
    )?;
    let outs = ctx.take_outputs();
    check_eq(
        "LINK-6-3",
        "link events",
        link_events(&outs),
        vec!["down:flush".to_owned()],
    )?;
    check_eq(
        "LINK-6-1",
        "frames reported lost, in order",
        lost(&outs),
        vec![
            ("unknown_fate".to_owned(), 1),
            ("unknown_fate".to_owned(), 2),
        ],
    )?;
    let new = sent
        .iter()
        .find_map(|s| match s.frame {
            Frm::Init(i) => Some(i),
            _ => None,
        })
        .ok_or_else(|| Stop::fail("LINK-6-3", "INIT at once after FLUSH", "none"))?;
    check(
        new.nonce != raw.dut_nonce && new.nonce != 0,
        "LINK-2-9",
        "a new non-zero nonce after FLUSH",
        || format!("{:#x} again", new.nonce),
    )?;
    let c = ctx.counters()?;
    let get = |n: &str| c.get(n).copied().unwrap_or(0);
    check_eq(
        "LINK-3-13",
        "(flushes, frames_unknown_fate, replay_timeouts)",
        (
            get("flushes"),
            get("frames_unknown_fate"),
            get("replay_timeouts"),
        ),
        (1, 2, 3),
    )?;
    // Out of UP the RX is OFF: DATA and ACK are not taken.
    counted_as(ctx, &data_len(0, 0, 128, 9), "rx_not_up", "LINK-6-3")?;
    counted_as(ctx, &ack(1), "rx_not_up", "LINK-6-3")?;
    let mut peer = raw_init(ctx, 0xC0DE_0002);
    peer.nonce = 0xC0DE_0002;
    let up = raw_finish(ctx, new, peer)?;
    let sent = [up.after_up, wait(ctx, 100)?].concat();
    check_eq(
        "LINK-6-2",
        "DATA after UP again: the queued frame, from 0, never the flushed ones",
        data_of(&sent),
        vec![(0, 0, 3)],
    )
}

pub(super) fn replay_bounds(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            replay_max_frames: Some(3),
            ..quiet()
        },
    )?;
    for t in 0..5 {
        submit(ctx, 0, &payload(200, t))?;
    }
    let sent = wait(ctx, 100)?;
    check_eq(
        "LINK-3-3",
        "DATA with replay_max_frames 3",
        data_of(&sent),
        vec![(0, 0, 0), (1, 0, 1), (2, 0, 2)],
    )?;
    let sent = send(ctx, &ack(0))?;
    check_eq(
        "LINK-3-3",
        "DATA after ACK 0",
        data_of(&sent),
        vec![(3, 0, 3)],
    )?;
    let sent = send(ctx, &ack(3))?;
    check_eq(
        "LINK-3-3",
        "DATA after ACK 3",
        data_of(&sent),
        vec![(4, 0, 4)],
    )?;
    // Bytes: frames of 300 B in a buffer of 1024 B.
    raw_up(
        ctx,
        LinkParams {
            mfs: Some(1024),
            replay_max_bytes: Some(1024),
            ..quiet()
        },
    )?;
    for t in 0..4 {
        submit(ctx, 0, &payload(276, t))?;
    }
    let sent = wait(ctx, 100)?;
    check_eq(
        "LINK-3-3",
        "DATA of 300 B with replay_max_bytes 1024",
        data_of(&sent),
        vec![(0, 0, 0), (1, 0, 1), (2, 0, 2)],
    )?;
    let sent = send(ctx, &ack(0))?;
    check_eq(
        "LINK-3-3",
        "DATA after ACK 0",
        data_of(&sent),
        vec![(3, 0, 3)],
    )
}

pub(super) fn stale_ack(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    for t in 0..3 {
        submit(ctx, 0, &payload(200, t))?;
    }
    wait(ctx, 100)?;
    let before = ctx.counters()?;
    let sent = counted_as(ctx, &ack(5), "acks_received", "LINK-3-4")?;
    no_data(&sent, "LINK-3-4", "a stale ACK changes nothing")?;
    check_eq(
        "LINK-3-4",
        "stale_acks",
        counter_delta(ctx, &before, "stale_acks")?,
        1,
    )?;
    let sent = send(ctx, &nack(0xFFFFF))?;
    check_eq(
        "LINK-3-5",
        "replay after NACK 0xFFFFF: all three frames (the stale ACK removed none)",
        data_of(&sent),
        vec![(0, 1, 0), (1, 1, 1), (2, 1, 2)],
    )
}

pub(super) fn nack_empties(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    for t in 0..3 {
        submit(ctx, 0, &payload(200, t))?;
    }
    wait(ctx, 100)?;
    let sent = send(ctx, &nack(2))?;
    no_data(&sent, "LINK-3-14", "a NACK that acknowledges every frame")?;
    // With the buffer empty only 2, the number before the next one to send, is acceptable.
    let before = ctx.counters()?;
    send(ctx, &ack(1))?;
    send(ctx, &ack(2))?;
    check_eq(
        "LINK-3-4",
        "stale_acks after ACK 1 and ACK 2 with an empty buffer",
        counter_delta(ctx, &before, "stale_acks")?,
        1,
    )?;
    check_eq(
        "LINK-3-14",
        "replays_by_nack",
        ctx.counter("replays_by_nack")?,
        0,
    )?;
    submit(ctx, 0, &payload(200, 3))?;
    let sent = wait(ctx, 100)?;
    check_eq("LINK-3-1", "next DATA", data_of(&sent), vec![(3, 0, 3)])
}

pub(super) fn stomped(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let sent = counted_as(
        ctx,
        &stomped_frame(data_len(0, 0, 128, 0)),
        "rx_stomped",
        "LINK-4-10",
    )?;
    no_nack(&sent, "LINK-4-10", "a stomped frame before UP")?;
    let peer = raw_init(ctx, RAW_NONCE);
    raw_finish(ctx, dut, peer)?;
    accepted(ctx, &data_len(0, 0, 128, 0), 0, "LINK-4-1")?;
    let sent = counted_as(
        ctx,
        &stomped_frame(data_len(0, 1, 128, 1)),
        "rx_stomped",
        "LINK-4-10",
    )?;
    no_nack(&sent, "LINK-4-10", "a stomped frame in SEND_ACKS")?;
    let sent = accepted(ctx, &data_len(0, 1, 128, 1), 0, "LINK-4-10")?;
    no_nack(&sent, "LINK-4-10", "the frame after a stomped one")?;
    check_eq(
        "LINK-4-1",
        "delivered tags",
        delivered_tags(ctx),
        vec![0, 1],
    )
}

pub(super) fn lost_frame_replayed(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    up_with_peer(ctx, LinkParams::default())?;
    let mut data_seen = 0u32;
    ctx.set_hook(
        0,
        Box::new(move |dir, _, bytes| {
            if dir == Dir::FromDut && bytes.len() > 20 && bytes[14] & 0x0F == 0 {
                data_seen += 1;
                if data_seen == 2 {
                    return Fault::Drop;
                }
            }
            Fault::Pass
        }),
    )?;
    for t in 0..6 {
        submit(ctx, 0, &payload(256, t))?;
    }
    ctx.run_for(20_000)?;
    let got: Vec<u32> = ctx
        .peer_delivered(0)?
        .iter()
        .filter_map(|(_, p)| tag_of(p))
        .collect();
    check_eq(
        "LINK-3-5",
        "payloads the peer received",
        got,
        (0..6).collect(),
    )
}

pub(super) fn count_resets(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            replay_timer_ns: Some(2_000),
            replay_count_max: Some(2),
            ..quiet()
        },
    )?;
    for t in 0..3 {
        submit(ctx, 0, &payload(200, t))?;
    }
    let t0 = ctx.now();
    let sent = wait(ctx, 4_500)?;
    check_eq(
        "LINK-3-11",
        "frames and two replays",
        data_of(&sent).len(),
        9,
    )?;
    send(ctx, &ack(0))?;
    let sent = wait(ctx, (t0 + 9_000).saturating_sub(ctx.now()))?;
    check_eq(
        "LINK-3-7",
        "two more replays of frames 1 and 2 after the ACK of frame 0",
        data_of(&sent),
        vec![(1, 1, 1), (2, 1, 2), (1, 1, 1), (2, 1, 2)],
    )?;
    let ev = link_events(&ctx.take_outputs());
    check(
        ev.is_empty(),
        "LINK-3-7",
        "no FLUSH: the count restarted at the ACK",
        || format!("{ev:?}"),
    )?;
    wait(ctx, 2_000)?;
    let outs = ctx.take_outputs();
    check_eq(
        "LINK-3-13",
        "link events after a third replay without progress",
        link_events(&outs),
        vec!["down:flush".to_owned()],
    )?;
    check_eq(
        "LINK-6-1",
        "frames reported lost",
        lost(&outs),
        vec![
            ("unknown_fate".to_owned(), 1),
            ("unknown_fate".to_owned(), 2),
        ],
    )
}

pub(super) fn transmit_order(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    accepted(ctx, &data_len(0, 0, 128, 0), 0, "LINK-4-1")?;
    for t in 0..2 {
        submit(ctx, 0, &payload(200, t))?;
    }
    wait(ctx, 100)?;
    ctx.inject(0, &data_len(0, 0, 128, 0))?;
    ctx.inject(0, &cc(&[(0, 2)]))?;
    ctx.inject(0, &nack(0xFFFFF))?;
    submit(ctx, 0, &payload(200, 2))?;
    let sent = wait(ctx, 50)?;
    let kinds: Vec<String> = sent
        .iter()
        .map(|s| match &s.frame {
            Frm::Data { seq, flags, .. } if flags & 1 == 1 => format!("DATA {seq} R"),
            Frm::Data { seq, .. } => format!("DATA {seq}"),
            Frm::Ack(n) => format!("ACK {n}"),
            Frm::Nack(n) => format!("NACK {n}"),
            Frm::Cf(_) => "CF".into(),
            Frm::Cc(_) => "CC".into(),
            other => format!("{other:?}"),
        })
        .collect();
    check_eq(
        "LINK-3-15",
        "frames due together",
        kinds,
        ["ACK 0", "CF", "DATA 0 R", "DATA 1 R", "DATA 2"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect(),
    )
}

pub(super) fn ack_req_at_half(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    // An even limit and an odd one: the half is ceil(frames / 2), so 2 of 4 and 3 of 5, and
    // only the frame that reaches it carries the flag (the byte half, 29,384 B by default, is
    // far off).
    for (limit, at) in [(4u32, 1u32), (5, 2)] {
        raw_up(
            ctx,
            LinkParams {
                replay_max_frames: Some(limit),
                ..quiet()
            },
        )?;
        for t in 0..limit {
            submit(ctx, 0, &payload(100, t))?;
        }
        let sent = wait(ctx, 100)?;
        let flagged: Vec<u32> = sent
            .iter()
            .filter_map(|s| match s.frame {
                Frm::Data { seq, flags, .. } if flags & 0x02 != 0 => Some(seq),
                _ => None,
            })
            .collect();
        check(
            flagged == [at],
            "LINK-3-16",
            format!(
                "ACK_REQ on frame {at} alone, which brings the buffer to {} of {limit} \
                 (ceil({limit} / 2))",
                at + 1
            ),
            || format!("ACK_REQ on frames {flagged:?}"),
        )?;
    }
    Ok(())
}

pub(super) fn round_robin(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    for t in 0..3 {
        submit(ctx, 0, &payload(100, t))?;
    }
    for t in 0..3 {
        submit(ctx, 1, &payload(100, 10 + t))?;
    }
    let sent = wait(ctx, 100)?;
    let vcs: Vec<u8> = sent
        .iter()
        .filter_map(|s| match s.frame {
            Frm::Data { vc, .. } => Some(vc),
            _ => None,
        })
        .collect();
    check(
        vcs.len() == 6 && vcs.windows(2).all(|w| w[0] != w[1]),
        "LINK-3-17",
        "VCs 0 and 1 alternating",
        || format!("VCs {vcs:?}"),
    )
}

pub(super) fn peer_dup_and_reorder(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    up_with_peer(ctx, LinkParams::default())?;
    ctx.take_outputs();
    let mut n = 0u32;
    ctx.set_hook(
        0,
        Box::new(move |dir, _, bytes| {
            if dir == Dir::ToDut && is_kind(bytes, 0) && bytes[15] & 1 == 0 {
                n += 1;
                match n {
                    3 => return Fault::Duplicate,
                    5 => return Fault::Delay(300),
                    _ => {}
                }
            }
            Fault::Pass
        }),
    )?;
    let before = ctx.counters()?;
    for t in 0..8 {
        ctx.peer_submit(0, 0, &payload(256, t))?;
    }
    ctx.run_for(30_000)?;
    check_eq(
        "LINK-4-1",
        "tags delivered",
        delivered_tags(ctx),
        (0..8).collect(),
    )?;
    let dups = counter_delta(ctx, &before, "duplicates")?;
    let nacks = counter_delta(ctx, &before, "nacks_sent")?;
    check(
        dups >= 1 && nacks >= 1,
        "LINK-4-5",
        "at least one duplicate counted and one NACK for the reordered frame",
        || format!("duplicates {dups}, nacks_sent {nacks}"),
    )
}

pub(super) fn acks_withheld(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    up_with_peer(
        ctx,
        LinkParams {
            replay_timer_ns: Some(3_000),
            ..LinkParams::default()
        },
    )?;
    let until = ctx.now() + 5_000;
    ctx.set_hook(
        0,
        Box::new(move |dir, t, bytes| {
            if dir == Dir::ToDut && t < until && (is_kind(bytes, 1) || is_kind(bytes, 2)) {
                Fault::Drop
            } else {
                Fault::Pass
            }
        }),
    )?;
    let before = ctx.counters()?;
    for t in 0..4 {
        submit(ctx, 0, &payload(256, t))?;
    }
    ctx.run_for(30_000)?;
    let got: Vec<u32> = ctx
        .peer_delivered(0)?
        .iter()
        .filter_map(|(_, p)| tag_of(p))
        .collect();
    check_eq(
        "LINK-3-2",
        "payloads the peer received",
        got,
        (0..4).collect(),
    )?;
    let replayed = counter_delta(ctx, &before, "frames_replayed")?;
    let timeouts = counter_delta(ctx, &before, "replay_timeouts")?;
    let flushes = counter_delta(ctx, &before, "flushes")?;
    check(
        replayed >= 4 && timeouts >= 1 && flushes == 0,
        "LINK-3-11",
        "the whole buffer replayed by the timer at least once, no FLUSH",
        || format!("frames_replayed {replayed}, replay_timeouts {timeouts}, flushes {flushes}"),
    )
}

// Frames handed to the device at one instant, before time advances, arrive before the device's
// wire can take anything it decides: they model arrivals while a replay or a NACK waits for the
// wire.

pub(super) fn nack_while_replay_due(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            replay_count_max: Some(1),
            ..quiet()
        },
    )?;
    for t in 0..3 {
        submit(ctx, 0, &payload(200, t))?;
    }
    wait(ctx, 100)?;
    ctx.inject(0, &nack(0xFFFFF))?;
    ctx.inject(0, &nack(0xFFFFF))?;
    let sent = wait(ctx, 100)?;
    check_eq(
        "LINK-3-9",
        "DATA after two NACKs at once: one replay",
        data_of(&sent),
        vec![(0, 1, 0), (1, 1, 1), (2, 1, 2)],
    )?;
    let ev = link_events(&ctx.take_outputs());
    check(
        ev.is_empty(),
        "LINK-3-9",
        "no FLUSH: the second NACK did not count",
        || format!("{ev:?}"),
    )?;
    check_eq(
        "LINK-3-9",
        "replays_by_nack",
        ctx.counter("replays_by_nack")?,
        1,
    )
}

pub(super) fn ack_while_replay_due(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    for t in 0..4 {
        submit(ctx, 0, &payload(200, t))?;
    }
    wait(ctx, 100)?;
    ctx.inject(0, &nack(0xFFFFF))?;
    ctx.inject(0, &ack(1))?;
    let sent = wait(ctx, 100)?;
    check_eq(
        "LINK-3-10",
        "DATA after NACK 0xFFFFF then ACK 1 at once",
        data_of(&sent),
        vec![(2, 1, 2), (3, 1, 3)],
    )
}

pub(super) fn nack_cancelled(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    ctx.inject(0, &data_len(0, 1, 128, 1))?;
    ctx.inject(0, &data_len(0, 0, 128, 0))?;
    let sent = wait(ctx, 100)?;
    no_nack(
        &sent,
        "LINK-4-9",
        "the expected frame came before the NACK could go",
    )?;
    let sent = accepted(ctx, &data_len(0, 1, 128, 1), 0, "LINK-4-1")?;
    no_nack(&sent, "LINK-4-9", "SEND_ACKS again")?;
    check_eq(
        "LINK-4-1",
        "delivered tags",
        delivered_tags(ctx),
        vec![0, 1],
    )
}

pub(super) fn aged_out(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    // Three rounds of ACK and replay come before the frames age out, the fourth replay after it,
    // whatever the line rate and clock tick: a round is the 2.1 us the peer waits, a tick late
    // and a burst of eight frames on the wire, and the age ends 1 us into the fourth round.
    let late = ctx.late_ns();
    let burst = 8 * ctx.ser_ns(data_len(0, 0, 200, 0).len());
    let round = 2_100 + 2 * (late + 1) + burst;
    let max_age = burst + 3 * round + 1_000;
    raw_up(
        ctx,
        LinkParams {
            replay_timer_ns: Some(2_000),
            replay_count_max: Some(2),
            llr_max_age_ns: Some(max_age),
            ..quiet()
        },
    )?;
    let start = ctx.now();
    for t in 0..8 {
        submit(ctx, 0, &payload(200, t))?;
    }
    let sent = wait(ctx, 100)?;
    check_eq("LINK-3-2", "eight new DATA frames", data_of(&sent).len(), 8)?;
    // Each replay the peer acknowledges the oldest frame: progress, so the count stays at 0
    // (LINK-3-7) and replay_count_max 2 never ends the link.
    for k in 0..3u32 {
        ctx.inject(0, &ack(k))?;
        let sent = wait(ctx, 2_100 + late)?;
        let d = data_of(&sent);
        check(
            d.first().map(|x| x.0) == Some(k + 1) && d.iter().all(|x| x.1 != 0),
            "LINK-3-7",
            format!("a replay from frame {} after the ACK of frame {k}", k + 1),
            || format!("DATA (seq, flags, tag) {d:?}"),
        )?;
    }
    ctx.inject(0, &ack(3))?;
    let sent = wait(ctx, 2_100 + late)?;
    let late: Vec<(u64, u32)> = sent
        .iter()
        .filter_map(|s| match s.frame {
            Frm::Data { seq, .. } => Some((s.time.saturating_sub(start), seq)),
            _ => None,
        })
        .collect();
    check(
        late.is_empty(),
        "LINK-3-18",
        format!(
            "no copy of frames 4..7 after llr_max_age ({max_age} ns) from their first \
             transmission"
        ),
        || format!("(ns after the first transmission, seq) {late:?}"),
    )?;
    let outs = ctx.take_outputs();
    check_eq(
        "LINK-3-18",
        "link events",
        link_events(&outs),
        vec!["down:flush".to_owned()],
    )?;
    let down_at = outs
        .iter()
        .position(|o| matches!(o, Output::LinkDown { .. }))
        .unwrap_or(usize::MAX);
    let lost_at: Vec<usize> = lost_at(&outs).iter().map(|l| l.0).collect();
    check(
        lost_at.iter().all(|&i| i > down_at),
        "LINK-6-7",
        "the link-down event before the frames of unknown fate",
        || format!("link-down at output {down_at}, lost frames at {lost_at:?}"),
    )?;
    check_eq(
        "LINK-6-1",
        "frames reported lost, in order",
        lost(&outs),
        (4..8).map(|t| ("unknown_fate".to_owned(), t)).collect(),
    )?;
    let c = ctx.counters()?;
    let get = |n: &str| c.get(n).copied().unwrap_or(0);
    check_eq(
        "LINK-3-18",
        "(flushes, flushes_aged, frames_unknown_fate)",
        (
            get("flushes"),
            get("flushes_aged"),
            get("frames_unknown_fate"),
        ),
        (1, 1, 4),
    )?;
    // The frames acknowledged waited in the replay buffer, never longer than llr_max_age.
    let max_age = ctx.params.llr_max_age_ns.unwrap_or(25_000);
    let age = get("replay_age_max_ns");
    check(
        (1..=max_age).contains(&age),
        "LINK-3-18",
        format!(
            "replay_age_max_ns (Table LINK-T3) between 1 and llr_max_age ({max_age} ns): frames \
             0 to 3 waited for their ACK"
        ),
        || format!("it reads {age}"),
    )
}

pub(super) fn nack_again_for_the_same_gap(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    // Frame 1 with 0 missing: the gap draws the NACK.
    let sent = send(ctx, &data_len(0, 1, 128, 1))?;
    one_nack(&sent, before(0), "LINK-4-3")?;
    // A new replay that lost frame 0 again brings frame 1 first: not beyond the frame that drew
    // the NACK, so one more NACK.
    let sent = send(ctx, &data_len(0, 1, 128, 1))?;
    one_nack(&sent, before(0), "LINK-4-8")?;
    // Frame 2 of the same replay is beyond it: nothing.
    let sent = send(ctx, &data_len(0, 2, 128, 2))?;
    no_nack(&sent, "LINK-4-7", "frame 2 is beyond frame 1")?;
    let sent = accepted(ctx, &data_len(0, 0, 128, 0), 0, "LINK-4-1")?;
    no_nack(&sent, "LINK-4-7", "the expected frame")
}

pub(super) fn one_frame_per_due(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    accepted(ctx, &data_len(0, 0, 128, 0), 0, "LINK-4-1")?;
    // ACK_REQ on frame 1 and a duplicate of frame 0, handed over together: one ACK of 1.
    ctx.inject(0, &flagged(data_len(0, 1, 128, 1), 0x02))?;
    ctx.inject(0, &data_len(0, 0, 128, 0))?;
    let sent = wait(ctx, 100)?;
    check_eq(
        "LINK-4-18",
        "ACKs for ACK_REQ and a duplicate",
        acks(&sent),
        vec![1],
    )?;
    // ACK_REQ on frame 2 and a gap (frame 4) together: the NACK carries 2 and settles the ACK.
    ctx.inject(0, &flagged(data_len(0, 2, 128, 2), 0x02))?;
    ctx.inject(0, &data_len(0, 4, 128, 4))?;
    let sent = wait(ctx, 100)?;
    check_eq("LINK-4-18", "NACKs", nacks(&sent), vec![2])?;
    check_eq(
        "LINK-4-18",
        "ACKs beside the NACK",
        acks(&sent),
        Vec::<u32>::new(),
    )
}

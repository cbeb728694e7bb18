//! Frames the upper layer withdraws before they are sent (link.md §6). The `LE-WD-*` cases.

use super::{lost_at, no_data, quiet, submit, wait};
use crate::case::{Stop, check, check_eq};
use crate::cases::common::*;
use crate::ctx::Ctx;
use crate::device::{LinkParams, Output, Request};

pub(super) fn withdraw_unsent(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            replay_max_frames: Some(2),
            ..quiet()
        },
    )?;
    // A second VC when the device has one.
    let vc1 = if ctx.params.vcs.unwrap_or(1) >= 2 {
        1
    } else {
        0
    };
    for t in 1..4 {
        submit(ctx, 0, &payload(100, t))?;
    }
    let sent = wait(ctx, 200)?;
    check_eq(
        "LINK-3-3",
        "DATA with a replay buffer of 2 frames",
        data_of(&sent),
        vec![(0, 0, 1), (1, 0, 2)],
    )?;
    submit(ctx, vc1, &payload(100, 11))?;
    submit(ctx, vc1, &payload(100, 12))?;
    let sent = wait(ctx, 200)?;
    no_data(&sent, "LINK-3-3", "the replay buffer is full")?;
    ctx.take_outputs();
    // A DATA frame of the peer makes a delivery pending inside the device; the withdrawal comes
    // at the same instant, before any time passes.
    ctx.inject(0, &data_len(0, 0, 128, 99))?;
    ctx.request(&Request::Withdraw { port: 0 })?;
    ctx.run_for(500)?;
    let outs = ctx.take_outputs();
    let got = lost_at(&outs);
    let mut want: Vec<(u8, u32)> = vec![(0, 3), (vc1, 11), (vc1, 12)];
    let mut seen: Vec<(u8, u32)> = got.iter().map(|(_, v, _, t)| (*v, *t)).collect();
    // Only the order within a VC is specified.
    let per_vc = |l: &[(u8, u32)], v: u8| -> Vec<u32> {
        l.iter().filter(|(x, _)| *x == v).map(|(_, t)| *t).collect()
    };
    for v in [0, vc1] {
        check_eq(
            "LINK-6-6",
            &format!("tags reported withdrawn on VC {v}, in order"),
            per_vc(&seen, v),
            per_vc(&want, v),
        )?;
    }
    want.sort_unstable();
    seen.sort_unstable();
    check_eq(
        "LINK-6-5",
        "(VC, tag) of the frames withdrawn: those not sent, not the two in the replay buffer",
        seen,
        want,
    )?;
    if let Some((_, _, r, t)) = got.iter().find(|(_, _, r, _)| r != "withdrawn") {
        return Err(Stop::fail(
            "LINK-6-6",
            "reason withdrawn for every frame taken back",
            format!("frame {t} reported {r}"),
        ));
    }
    let first_lost = got.first().map_or(usize::MAX, |g| g.0);
    let delivered_at = outs
        .iter()
        .position(|o| matches!(o, Output::Delivered { .. }));
    check(
        delivered_at.is_some_and(|d| d < first_lost),
        "LINK-6-6",
        "the delivery of the peer's frame 99, pending when the withdrawal came, reported before \
         the first withdrawn frame",
        || format!("outputs: {outs:?}"),
    )?;
    // The peer acknowledges the two frames sent; the device sends a new frame, and never one
    // withdrawn.
    submit(ctx, 0, &payload(100, 4))?;
    ctx.inject(0, &ack(1))?;
    let sent = wait(ctx, 5_000)?;
    check_eq(
        "LINK-6-5",
        "DATA after the withdrawal and the ACK of 1: only the new frame 4, with sequence number 2",
        data_of(&sent),
        vec![(2, 0, 4)],
    )?;
    let outs = ctx.take_outputs();
    check_eq(
        "LINK-6-5",
        "payloads reported lost after the ACK",
        lost(&outs),
        Vec::new(),
    )
}

/// Two withdrawals with no time between them, before the link is up: each takes back only the
/// frames queued since the one before, both are reported once, in order, and neither is sent
/// once the link comes up.
pub(super) fn withdraw_twice(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let before = ctx.counters()?;
    submit(ctx, 0, &payload(100, 1))?;
    ctx.request(&Request::Withdraw { port: 0 })?;
    submit(ctx, 0, &payload(100, 2))?;
    ctx.request(&Request::Withdraw { port: 0 })?;
    ctx.run_for(50)?;
    let outs = ctx.take_outputs();
    check_eq(
        "LINK-6-6",
        "frames reported lost: each withdrawn frame once, in submission order",
        lost(&outs),
        vec![("withdrawn".to_owned(), 1), ("withdrawn".to_owned(), 2)],
    )?;
    let peer = raw_init(ctx, RAW_NONCE);
    let up = raw_finish(ctx, dut, peer)?;
    let sent = [up.after_up, wait(ctx, 1_000)?].concat();
    no_data(
        &sent,
        "LINK-6-5",
        "both frames were withdrawn before the link came up",
    )?;
    // A frame submitted afterwards is sent as usual, and the two withdrawn are counted once.
    submit(ctx, 0, &payload(100, 3))?;
    let sent = wait(ctx, 1_000)?;
    //= docs/spec/link.md#6-re-initialisation-and-flush
    //= type=test
    //# LINK-6-5 [...] Frames submitted after the
    //# withdrawal are sent as usual, after the withdrawn frames have been reported.
    check_eq(
        "LINK-6-5",
        "DATA (seq, VC, tag) after the withdrawals: the frame submitted since, as usual",
        data_of(&sent),
        vec![(0, 0, 3)],
    )?;
    let n = ctx
        .counter("frames_withdrawn")?
        .wrapping_sub(before.get("frames_withdrawn").copied().unwrap_or(0));
    check_eq(
        "LINK-7-6",
        "frames_withdrawn (two withdrawn, once each)",
        n,
        2,
    )
}

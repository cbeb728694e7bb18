//! Counters (link.md §7): each received frame counted once, the transmit counters, and credit
//! stalls. The `LE-CNT-*` cases.

use super::{bad_fcs, quiet, send, small_peer, stomped_frame, submit, wait};
use crate::case::{Stop, check, check_eq};
use crate::cases::common::*;
use crate::ctx::Ctx;

pub(super) fn one_counter_each(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let raw = raw_up(ctx, quiet())?;
    let mut runt = data_len(0, 0, 128, 0);
    runt.truncate(60);
    refcs(&mut runt);
    let mut foreign = data_len(0, 0, 128, 0);
    foreign[12] = 0x08;
    refcs(&mut foreign);
    let mut version = ack(0xFFFFF);
    version[14] = 0x21;
    refcs(&mut version);
    let mut kind = ack(0xFFFFF);
    kind[14] = 0x18;
    refcs(&mut kind);
    let mut long_cf = cf(&[(0, 0)])[..60].to_vec();
    long_cf.extend_from_slice(&[1; 8]);
    refcs(&mut long_cf);
    let mut other = raw.peer;
    other.nonce ^= 0x10;
    let vcs: Vec<(u8, u32)> = (0..raw.dut_init.vcs).map(|v| (v, 0)).collect();
    let steps: Vec<(Vec<u8>, &str)> = vec![
        (ack(0xFFFFF), "acks_received"),
        (nack(0xFFFFF), "nacks_received"),
        (cf(&vcs), "cf_received"),
        (cc(&vcs), "cc_received"),
        (init(raw.peer), "inits_received"),
        (
            init_echo(raw.dut_nonce ^ 0x10, other),
            "init_echoes_ignored",
        ),
        (data_len(0, 0, 128, 0), "rx_frames.vc0"),
        (data_len(0, 0, 128, 0), "duplicates"),
        (runt.clone(), "rx_damaged"),
        (data_len(0, 1, 128, 1), "rx_frames.vc0"),
        (bad_fcs(data_len(0, 2, 128, 2)), "rx_fcs_errors"),
        (data_len(0, 3, 128, 3), "discarded_after_nack"),
        (stomped_frame(data_len(0, 2, 128, 2)), "rx_stomped"),
        (foreign, "rx_foreign"),
        (version, "rx_bad_version"),
        (kind, "rx_unknown_kind"),
        (long_cf, "rx_malformed_control"),
        (data_len(0, 2, 128, 2), "rx_frames.vc0"),
    ];
    for (f, name) in steps {
        counted_as(ctx, &f, name, "LINK-7-3")?;
    }
    Ok(())
}

pub(super) fn tx_counters(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    for t in 0..3 {
        submit(ctx, 1, &payload(228, t))?;
    }
    wait(ctx, 100)?;
    send(ctx, &nack(0))?;
    let c = ctx.counters()?;
    let get = |n: &str| c.get(n).copied().unwrap_or(0);
    check_eq(
        "LINK-1-1",
        "(tx_frames.vc1, tx_bytes.vc1, frames_replayed)",
        (
            get("tx_frames.vc1"),
            get("tx_bytes.vc1"),
            get("frames_replayed"),
        ),
        (3, 3 * 252, 2),
    )
}

pub(super) fn credit_stall(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let peer = small_peer(ctx, [5, 512, 512, 512, 0, 0, 0, 0], 0);
    raw_finish(ctx, dut, peer)?;
    submit(ctx, 0, &payload(228, 0))?;
    submit(ctx, 0, &payload(228, 1))?;
    let sent = wait(ctx, 100)?;
    check_eq(
        "LINK-5-2",
        "DATA within 5 credits",
        data_of(&sent),
        vec![(0, 0, 0)],
    )?;
    check_eq(
        "LINK-7-4",
        "credit_stalls.vc0",
        ctx.counter("credit_stalls.vc0")?,
        1,
    )?;
    let t_first = sent.first().map_or(0, |s| s.time);
    send(ctx, &ack(0))?;
    wait(ctx, 900)?;
    let sent = send(ctx, &cf(&[(0, 4)]))?;
    check_eq(
        "LINK-5-6",
        "DATA after CF 4",
        data_of(&sent),
        vec![(1, 0, 1)],
    )?;
    let t_second = sent
        .iter()
        .find(|s| s.frame.is_data())
        .map_or(0, |s| s.time);
    let ns = ctx.counter("credit_stall_ns.vc0")?;
    let want = t_second - t_first;
    check(
        ns + 100 >= want && ns <= want + 100,
        "LINK-7-4",
        format!("credit_stall_ns.vc0 of {want} ns (from the first frame to the stalled one)"),
        || format!("{ns}"),
    )?;
    check_eq(
        "LINK-7-4",
        "credit_stalls.vc0",
        ctx.counter("credit_stalls.vc0")?,
        1,
    )
}

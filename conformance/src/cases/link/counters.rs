//! Counters (link.md §7): each received frame counted once, the transmit counters, and credit
//! stalls. The `LE-CNT-*` cases.

use super::{bad_fcs, quiet, send, small_peer, stomped_frame, submit, wait};
use crate::case::{Stop, check, check_eq};
use crate::cases::common::*;
use crate::ctx::Ctx;
use crate::device::LinkParams;

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

/// Every frame the device sent, counted by kind from the wire, against the counters it reports
/// for them: a bring-up, periodic CF and CC, DATA with a replay, ACKs and a NACK of its own.
pub(super) fn sent_counters(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            cf_max_interval_ns: Some(1_500),
            cc_interval_ns: Some(2_000),
            ack_timer_ns: Some(300),
            ..quiet()
        },
    )?;
    for t in 0..3 {
        submit(ctx, 0, &payload(200, t))?;
    }
    wait(ctx, 500)?;
    // A NACK of frame 0: frames 1 and 2 again.
    send(ctx, &nack(0))?;
    wait(ctx, 500)?;
    send(ctx, &ack(2))?;
    // The peer's DATA: two accepted (an ACK by the timer), a damaged one (a NACK), then the
    // frame again.
    send(ctx, &data_len(0, 0, 128, 10))?;
    send(ctx, &data_len(0, 1, 128, 11))?;
    wait(ctx, 1_000)?;
    send(ctx, &bad_fcs(data_len(0, 2, 128, 12)))?;
    send(ctx, &data_len(0, 2, 128, 12))?;
    wait(ctx, 6_000)?;
    let mut seen = std::collections::BTreeMap::<&str, u64>::new();
    for l in ctx.log().iter().filter(|l| l.from_dut) {
        let name = match decode(&l.bytes) {
            Frm::Data { flags, .. } if flags & 0x01 != 0 => "frames_replayed",
            Frm::Data { .. } => "tx_frames.vc0",
            Frm::Ack(_) => "acks_sent",
            Frm::Nack(_) => "nacks_sent",
            Frm::Cf(_) => "cf_sent",
            Frm::Cc(_) => "cc_sent",
            Frm::Init(_) => "inits_sent",
            Frm::InitEcho(..) => "init_echoes_sent",
            Frm::Bad => continue,
        };
        *seen.entry(name).or_default() += 1;
    }
    let c = ctx.counters()?;
    //= docs/spec/link.md#7-counters
    //= type=test
    //# LINK-7-6 An end MUST expose the counters of Table LINK-T3 under these names (they are the
    //# field names of the reference implementation's `Counters`), each counting what its row
    //# says.
    for name in [
        "inits_sent",
        "init_echoes_sent",
        "tx_frames.vc0",
        "frames_replayed",
        "acks_sent",
        "nacks_sent",
        "cf_sent",
        "cc_sent",
    ] {
        let on_wire = seen.get(name).copied().unwrap_or(0);
        check(
            on_wire > 0,
            "LINK-7-6",
            format!("at least one frame counted in {name} on the wire"),
            || format!("frames seen by kind: {seen:?}"),
        )?;
        check_eq(
            "LINK-7-6",
            &format!("{name}: the frames of its kind on the wire"),
            c.get(name).copied().unwrap_or(0),
            on_wire,
        )?;
    }
    check_eq(
        "LINK-7-6",
        "link_ups: the link came up once",
        c.get("link_ups").copied().unwrap_or(0),
        1,
    )
}

/// The high-water marks of Table LINK-T3: three frames of 256 B held by the upper layer take the
/// receive buffer to 12 credits of 64 B, five frames of 252 B sent and not acknowledged take the
/// replay buffer to 5 frames and 1,260 bytes; each mark stays at its highest once the buffers
/// empty.
pub(super) fn high_water_marks(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    super::hold(ctx, 0, true)?;
    for s in 0..3 {
        super::accepted(ctx, &data_len(0, s, 256, s), 0, "LINK-4-1")?;
    }
    for t in 0..5 {
        submit(ctx, 1, &payload(228, 10 + t))?;
    }
    let sent = wait(ctx, 200)?;
    check_eq(
        "LINK-3-2",
        "DATA frames sent and kept for replay",
        data_of(&sent).len(),
        5,
    )?;
    super::hold(ctx, 0, false)?;
    send(ctx, &ack(4))?;
    wait(ctx, 200)?;
    //= docs/spec/link.md#7-counters
    //= type=test
    //# LINK-7-6 An end MUST expose the counters of Table LINK-T3 under these names (they are the
    //# field names of the reference implementation's `Counters`), each counting what its row says.
    for (name, want) in [
        ("rx_occupied_max_credits", 12u64),
        ("replay_frames_max", 5),
        ("replay_bytes_max", 5 * 252),
    ] {
        check_eq(
            "LINK-7-6",
            &format!("{name} (the highest the case made, kept once the buffer emptied)"),
            ctx.counter(name)?,
            want,
        )?;
    }
    Ok(())
}

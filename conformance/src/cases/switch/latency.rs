//! Latency and store-and-forward (switch.md §6): the configured port-to-port latency, and a frame
//! with a bad FCS not forwarded. The `SWT-LAT-*` and `SWT-FCS-*` cases; the cut-through profile
//! of §6 is in `cut.rs`.

use ethlink_protocol::fcs;

use super::{
    ctr, data, data_log, delivered, gpu_of, need_ports, one_per_port, sw_setup, tag, up_ports,
    with_latency,
};
use crate::case::{Stop, check, check_eq};
use crate::ctx::{Ctx, Dir, Fault};
use crate::device::LinkParams;

pub(super) fn latency_respected(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 2)?;
    let n = ctx.desc.ports;
    up_ports(
        ctx,
        &sw_setup(one_per_port(n), LinkParams::default(), None),
        &[0, 1],
        |_, c| c,
    )?;
    const LATENCY: u64 = 250;
    for (k, len) in [(0u32, 64usize), (1, 4000), (2, 8000)] {
        ctx.peer_submit(0, 0, &data(gpu_of(1), gpu_of(0), 0, k, len))?;
        ctx.run_for(5_000)?;
    }
    let ins = data_log(ctx, 0, false);
    let outs = data_log(ctx, 1, true);
    for k in 0..3u32 {
        let (Some(i), Some(o)) = (ins.get(&k), outs.get(&k)) else {
            return Err(Stop::fail(
                "SW-2-1",
                format!("frame {k} forwarded to port 1"),
                "it was not",
            ));
        };
        // Its first bit arrived one serialisation time before its last.
        let frame_len = ethlink_protocol::frame_len(14, i.2.len());
        let first_bit = i.0.saturating_sub(ctx.wire.serialise_ns(frame_len));
        check(
            o.0 >= first_bit + LATENCY,
            "SW-6-1",
            format!(
                "frame {k} ({frame_len} B, first bit in at {first_bit} ns, last at {} ns) \
                 begins to leave at {} ns or later",
                i.0,
                first_bit + LATENCY
            ),
            || format!("it began at {} ns", o.0),
        )?;
    }
    Ok(())
}

pub(super) fn bad_fcs_not_forwarded(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 2)?;
    let n = ctx.desc.ports;
    let s = sw_setup(one_per_port(n), LinkParams::default(), None);
    up_ports(ctx, &s, &[0, 1], |_, c| c)?;
    // The first copy of every fourth frame reaches the switch with a bad FCS.
    let mut damaged = std::collections::BTreeSet::new();
    ctx.set_hook(
        0,
        Box::new(move |dir, _, bytes| {
            let n = bytes.len();
            if dir == Dir::ToDut && n > 64 && bytes[14] & 0x0F == 0 {
                let t = tag(&bytes[20..]).unwrap_or(0);
                if t % 4 == 1 && damaged.insert(t) {
                    bytes[n - 1] ^= 0x5A;
                }
            }
            Fault::Pass
        }),
    )?;
    let from = ctx.log().len();
    for k in 0..40u32 {
        ctx.peer_submit(0, 0, &data(gpu_of(1), gpu_of(0), 0, k, 2000))?;
    }
    ctx.run_for(60_000)?;
    let bad_in = ctx.log()[from..]
        .iter()
        .filter(|l| !l.from_dut && l.port == 0 && !fcs::check(&l.bytes))
        .count();
    if bad_in != 10 {
        return Err(Stop::Harness(format!(
            "the hook damaged {bad_in} frames, not 10"
        )));
    }
    let cut_through = ctx.has_cap("cut_through");
    for l in ctx.log()[from..].iter().filter(|l| l.from_dut) {
        if fcs::check(&l.bytes) {
            continue;
        }
        let stomped = fcs::is_stomped(&l.bytes);
        check(
            stomped,
            "SW-6-3",
            "every frame the switch sends has a good FCS, or a stomped one",
            || {
                format!(
                    "a frame with a bad FCS on port {} at {} ns",
                    l.port, l.time_ns
                )
            },
        )?;
        check(
            cut_through,
            "CLS-3-3",
            "no stomped frame from a switch that does not announce CUT_THROUGH",
            || format!("a stomped frame on port {} at {} ns", l.port, l.time_ns),
        )?;
    }
    let got: Vec<u32> = delivered(ctx, 1)?.iter().map(|x| x.1).collect();
    check(
        got == (0..40).collect::<Vec<_>>(),
        "SW-6-4",
        "the 40 frames, 10 of them replayed after a bad FCS, delivered once each, in order",
        || format!("port 1 received {got:?}"),
    )?;
    check_eq(
        "SW-6-4",
        "port1.tx_frames.vc0",
        ctr(ctx, 1, "tx_frames", 0)?,
        40,
    )?;
    // A copy the switch stomped is not a frame forwarded: tx_frames counts each frame once,
    // whatever copies of it were given up.
    check_eq(
        "SW-8-5",
        "port1.tx_frames.vc0 (each of the 40 frames once, no stomped copy)",
        ctr(ctx, 1, "tx_frames", 0)?,
        40,
    )
}

pub(super) fn configured_latency_respected(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 2)?;
    let n = ctx.desc.ports;
    const LATENCY: u64 = 3_000;
    with_latency(ctx, one_per_port(n), LATENCY, &[0, 1])?;
    for (k, len) in [(0u32, 64usize), (1, 4000)] {
        ctx.peer_submit(0, 0, &data(gpu_of(1), gpu_of(0), 0, k, len))?;
        ctx.run_for(10_000)?;
    }
    let ins = data_log(ctx, 0, false);
    let outs = data_log(ctx, 1, true);
    for k in 0..2u32 {
        let (Some(i), Some(o)) = (ins.get(&k), outs.get(&k)) else {
            return Err(Stop::fail(
                "SW-2-1",
                format!("frame {k} forwarded to port 1"),
                "it was not",
            ));
        };
        let frame_len = ethlink_protocol::frame_len(14, i.2.len());
        let first_bit = i.0.saturating_sub(ctx.wire.serialise_ns(frame_len));
        check(
            o.0 >= first_bit + LATENCY,
            "SW-6-1",
            format!(
                "frame {k} ({frame_len} B, first bit in at {first_bit} ns) begins to leave at \
                 {} ns or later (latency {LATENCY} ns)",
                first_bit + LATENCY
            ),
            || format!("it began at {} ns", o.0),
        )?;
    }
    Ok(())
}

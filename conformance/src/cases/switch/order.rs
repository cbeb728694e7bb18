//! Order (switch.md §3) and arbitration (switch.md §5): per-path order under incast, and
//! responses before requests. The `SWT-ORD-*` and `SWT-ARB-*` cases.

use super::{
    data, delivered, gpu_of, incast, need_ports, one_per_port, small_peer, sw_setup, up_ports,
};
use crate::case::{Stop, check, check_eq};
use crate::ctx::Ctx;
use crate::device::LinkParams;

pub(super) fn incast_order(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let per = 80u32;
    let (inputs, e) = incast(ctx, per, 1000)?;
    let got = delivered(ctx, e)?;
    for &i in &inputs {
        let mine: Vec<u32> = got
            .iter()
            .map(|x| x.1)
            .filter(|t| t >> 16 == u32::from(i))
            .map(|t| t & 0xFFFF)
            .collect();
        check(
            mine == (0..per).collect::<Vec<_>>(),
            "SW-3-1",
            format!("the {per} frames of input {i} leave port {e} once each, in order"),
            || {
                format!(
                    "{} frames, tags {:?}",
                    mine.len(),
                    &mine[..mine.len().min(40)]
                )
            },
        )?;
    }
    // In the middle of the burst every input is backlogged: the egress cycles through them.
    let srcs: Vec<u16> = got.iter().map(|x| (x.1 >> 16) as u16).collect();
    let m = inputs.len();
    let (lo, hi) = (srcs.len() / 3, 2 * srcs.len() / 3);
    for k in lo..hi {
        let want = inputs[(inputs.iter().position(|&x| x == srcs[k]).unwrap_or(0) + 1) % m];
        check(
            srcs[k + 1] == want,
            "SW-5-1",
            format!(
                "with every input backlogged, frame {} on port {e} comes from input {want}, the \
                 one after input {}",
                k + 1,
                srcs[k]
            ),
            || {
                format!(
                    "it came from input {}; inputs of frames {lo}..{hi}: {:?}",
                    srcs[k + 1],
                    &srcs[lo..hi]
                )
            },
        )?;
    }
    Ok(())
}

pub(super) fn responses_first(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 3)?;
    let n = ctx.desc.ports;
    let s = sw_setup(one_per_port(n), LinkParams::default(), None);
    up_ports(
        ctx,
        &s,
        &[0, 1, 2],
        |p, c| if p == 2 { small_peer(c) } else { c },
    )?;
    if ctx.params.vcs.unwrap_or(1) < 3 {
        return Err(Stop::Unsupported("the case needs VC 2".into()));
    }
    ctx.peer_hold(2, true)?;
    // Requests on VC 0 from input 0, then responses on VC 2 from input 1, all for port 2,
    // whose peer holds its buffers: both queue in the switch.
    for k in 0..60u32 {
        ctx.peer_submit(0, 0, &data(gpu_of(2), gpu_of(0), 0, k, 256))?;
    }
    ctx.run_for(5_000)?;
    for k in 0..60u32 {
        ctx.peer_submit(1, 2, &data(gpu_of(2), gpu_of(1), 0, 0x100 | k, 256))?;
    }
    ctx.run_for(5_000)?;
    let early = delivered(ctx, 2)?;
    let req0 = early.iter().filter(|x| x.0 == 0).count();
    let resp0 = early.iter().filter(|x| x.0 == 2).count();
    if req0 >= 20 || resp0 >= 20 {
        return Err(Stop::Inconclusive(format!(
            "too few frames queued in the switch ({req0} requests, {resp0} responses out)"
        )));
    }
    ctx.peer_hold(2, false)?;
    ctx.run_for(30_000)?;
    let after = delivered(ctx, 2)?;
    let last_resp = after.iter().rposition(|x| x.0 == 2);
    let Some(last_resp) = last_resp else {
        return Err(Stop::fail(
            "SW-5-2",
            "the queued responses leave",
            format!("after the release port 2 received {after:x?}"),
        ));
    };
    // Requests already handed to the egress link before the responses arrived may go first,
    // and so may requests handed to it once no response waits in the switch (the last
    // responses in the link): at most twice `egress_depth`, which the device does not declare.
    // Serving the VCs alike would put about half the queued requests first; the bound is a
    // quarter of them.
    let queued = 60 - req0;
    let reqs_before = after[..last_resp].iter().filter(|x| x.0 == 0).count();
    check(
        reqs_before <= queued / 4,
        "SW-5-2",
        format!(
            "once both are queued, the responses (VC 2) leave before the {queued} queued \
             requests (VC 0): at most {} requests (those its link already held) go before the \
             last response",
            queued / 4
        ),
        || format!("{reqs_before} requests before the last response; order (vc, tag): {after:x?}"),
    )?;
    let total = early.len() + after.len();
    check_eq("SW-4-4", "frames delivered to port 2", total, 120)
}

/// Responses first on egress 0 with both response VCs (2 and 3) queued, while responses on
/// those VCs keep flowing to another egress whose queues empty and fill again: the state an
/// egress keeps per VC is its own (SW-5-2 on every egress and every response VC).
pub(super) fn responses_first_beside_traffic(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 4)?;
    let n = ctx.desc.ports;
    let s = sw_setup(one_per_port(n), LinkParams::default(), None);
    up_ports(ctx, &s, &[0, 1, 2, 3], |p, c| {
        if p == 0 { small_peer(c) } else { c }
    })?;
    if ctx.params.vcs.unwrap_or(1) < 4 {
        return Err(Stop::Unsupported("the case needs VC 3".into()));
    }
    ctx.peer_hold(0, true)?;
    // Requests on VC 0 and VC 1 for port 0, then responses on VC 2 and VC 3: all queue there.
    for k in 0..30u32 {
        ctx.peer_submit(1, 0, &data(gpu_of(0), gpu_of(1), 0, k, 256))?;
        ctx.peer_submit(2, 1, &data(gpu_of(0), gpu_of(2), 1, 0x100 | k, 256))?;
    }
    ctx.run_for(5_000)?;
    for k in 0..30u32 {
        ctx.peer_submit(2, 2, &data(gpu_of(0), gpu_of(2), 2, 0x200 | k, 256))?;
        ctx.peer_submit(1, 3, &data(gpu_of(0), gpu_of(1), 3, 0x300 | k, 256))?;
    }
    ctx.run_for(5_000)?;
    let early = delivered(ctx, 0)?;
    let reqs_early = early.iter().filter(|x| x.0 < 2).count();
    let resps_early = early.len() - reqs_early;
    if reqs_early >= 30 || resps_early >= 30 {
        return Err(Stop::Inconclusive(format!(
            "too few frames queued in the switch ({reqs_early} requests, {resps_early} \
             responses out)"
        )));
    }
    // Port 0 drains while responses on VC 2 and VC 3 pass to port 3 one at a time, so that its
    // queues of those VCs empty again and again.
    ctx.peer_hold(0, false)?;
    for k in 0..60u32 {
        let (input, vc) = if k % 2 == 0 { (2, 2) } else { (1, 3) };
        ctx.peer_submit(
            input,
            vc,
            &data(gpu_of(3), gpu_of(input), vc, 0x400 | k, 128),
        )?;
        ctx.run_for(150)?;
    }
    ctx.run_for(20_000)?;
    let after = delivered(ctx, 0)?;
    let Some(last_resp) = after.iter().rposition(|x| x.0 >= 2) else {
        return Err(Stop::fail(
            "SW-5-2",
            "the queued responses leave port 0",
            format!("after the release port 0 received {after:x?}"),
        ));
    };
    // As in SWT-ARB-1: requests the egress link held before the responses arrived may go first;
    // serving the VCs alike would put about half the queued requests first.
    let queued = 60 - reqs_early;
    let reqs_before = after[..last_resp].iter().filter(|x| x.0 < 2).count();
    ctx.note(format!(
        "{reqs_before} of {queued} queued requests left port 0 before its last response"
    ));
    //= docs/spec/switch.md#5-arbitration
    //= type=test
    //# SW-5-2 An egress port MUST offer ready frames of the response VCs (2 and 3, endpoint.md
    //# EP-3-1) to its link before those of the request VCs (0 and 1).
    check(
        reqs_before <= queued / 4,
        "SW-5-2",
        format!(
            "the responses queued for port 0 (VC 2 and VC 3) leave before its {queued} queued \
             requests (VC 0 and VC 1), though responses to port 3 come and go meanwhile: at \
             most {} requests before the last response",
            queued / 4
        ),
        || format!("{reqs_before} requests before the last response; order (vc, tag): {after:x?}"),
    )?;
    let to_3 = delivered(ctx, 3)?;
    check_eq(
        "SW-4-4",
        "frames delivered to ports 0 and 3",
        (early.len() + after.len(), to_3.len()),
        (120, 60),
    )
}

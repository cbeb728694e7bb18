//! Packing (endpoint.md §7): the bounds of a packed frame and the room it leaves for an 802.1Q
//! tag. The `EPT-PACK-*` cases.

use super::setup_ep;
use crate::case::{Stop, check, check_eq};
use crate::cases::endpoint::common::{
    G, Seen, ep_up, ep_up_with, issue, load, logged_txns, op, send,
};
use crate::ctx::Ctx;
use crate::device::{LinkParams, LsOp, Space};

pub(super) fn packing_bounds(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let t0 = ctx.now();
    let tag = issue(
        ctx,
        Space::Global,
        0x77,
        0x1300,
        LsOp::Load { len: 4 },
        None,
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 150_000, |s| !s.txns.is_empty())?;
    let first = logged_txns(ctx, true)
        .into_iter()
        .find(|(_, _, t)| t.opcode == op::LOAD && t.tag == tag)
        .map(|(at, _, _)| at);
    check(
        first.is_some_and(|at| at <= t0 + 100_000),
        "EP-7-2",
        "a lone LOAD leaves within 100 us, the longest pack_delay",
        || format!("issued at {t0} ns, sent at {first:?}"),
    )?;
    let mut tags = Vec::new();
    for i in 0..24u64 {
        tags.push(issue(
            ctx,
            Space::Global,
            0x77,
            0x1400 + 8 * i,
            LsOp::Store {
                data: "0102030405060708".into(),
            },
            Some(9),
        )?);
    }
    seen.run(ctx, 1, 200_000, |s| s.requests(op::STORE).len() >= 24)?;
    let order: Vec<u16> = seen.requests(op::STORE).iter().map(|t| t.tag).collect();
    check_eq("EP-7-3", "the stream's STOREs in issue order", order, tags)?;
    Ok(())
}

pub(super) fn packed_frames_leave_tag_room(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up_with(ctx, 1, setup_ep(LinkParams::default(), None))?;
    let mfs = usize::from(
        ctx.params
            .mfs
            .ok_or_else(|| Stop::Harness("the reset answer gives no mfs".into()))?,
    );
    // LOAD_RESP of 156 B are 164-byte transactions: 56 of them behind the 8-byte network header
    // make a frame of exactly 9216 B untagged, one more than EP-7-1 allows.
    let (tag0, n) = (0x2400u16, 240u16);
    let mut k = 0u16;
    while k < n {
        let txns: Vec<Vec<u8>> = (k..n.min(k + 60))
            .map(|j| load(tag0 + j, 0, G.2, G.0 + 0x8000 + 256 * u64::from(j), 156))
            .collect();
        send(ctx, 0, 0, &txns)?;
        k += 60;
    }
    let mut seen = Seen::default();
    seen.run(ctx, 1, 300_000, |s| {
        s.txns.iter().filter(|t| t.opcode >= 0x80).count() >= usize::from(n)
    })?;
    // Ethernet header 14, link header 6, FCS 4 around the payload, untagged; a tagged frame is
    // 4 bytes longer and may be: the bound on the payload is the same.
    let frame = seen.largest_packed + 24;
    check(
        seen.largest_packed == 0 || frame + 4 <= mfs,
        "EP-7-1",
        format!(
            "every packed frame at most {} B untagged (the MFS {mfs} less 4)",
            mfs - 4
        ),
        || format!("a packed frame of {frame} B untagged"),
    )
}

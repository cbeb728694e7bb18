//! Endpoint cases about the queues of each port and VC and the paths requests and responses take:
//! VCs that do not block each other (EP-3-6), the response backlog (EP-8-4, EP-3-3, EP-8-8), the
//! MFS a segment needs (EP-3-5), the hash policy (EP-4-5), a stream re-pinned when its port goes
//! down (EP-4-3, TXN-5-2, TXN-5-6), a response discarded when no port takes it for `op_timeout`
//! (EP-8-5), one order of intake for all ports (EP-8-7), and a request lost with a port after its
//! tag passed to another operation (EP-9-7), and a deadline set by the setup acted on only once
//! it has passed in full (EP-1-1).
//!
//! The harness holds back a VC, or every VC, of a port by keeping the payloads its peer receives
//! (their credits unreturned); the cases that need a setting of endpoint.md Table EP-T1 are
//! Unsupported on a device that refuses it.

use crate::case::{Case, Stop, check, check_eq};
use crate::cases::common::{peer_config, setup};
use crate::cases::endpoint::case;
use crate::cases::endpoint_common::{
    DUT, G, REM, Seen, Txn, check_resp, ep_up, ep_up_with, expect_mem, fence, issue, load,
    logged_txns, mem_write, one_response, op, pattern, resp, send, st, store,
};
use crate::ctx::{Ctx, Dir, Fault};
use crate::device::{EndpointParams, LinkParams, LsOp, Output, Request, Setup, Space, to_hex};

/// The cases of this module.
pub fn cases() -> Vec<Case> {
    vec![
        case(
            "EPT-VC-1",
            "as a target whose responses wait for credits on VC 2, the device's own requests on \
             VC 0 and the responses it receives still pass, and every waiting response is sent \
             once when credits return",
            &["EP-3-6", "EP-8-8", "EP-3-1", "TXN-2-8", "TXN-2-1"],
            &[],
            vcs_do_not_block,
        ),
        case(
            "EPT-BACK-1",
            "a target whose response backlog is full stops taking request frames (a later STORE \
             is not performed, its credits stay with the device) until the backlog drains; then \
             every request is answered once and in order",
            &[
                "EP-8-4", "EP-8-8", "EP-3-3", "EP-10-1", "TXN-2-8", "TXN-2-1", "TXN-2-2",
            ],
            &[],
            response_backlog,
        ),
        case(
            "EPT-PACK-2",
            "as a target with PACKING, responses packed as full as they go leave room for an \
             802.1Q tag: no frame is longer than the agreed MFS less 4 bytes when untagged",
            &["EP-7-1"],
            &["packing"],
            packed_frames_leave_tag_room,
        ),
        case(
            "EPT-BACK-2",
            "a target whose backlog stays full past hold_max performs no request of a frame it \
             held that long: a STORE behind the backlog is neither performed nor answered, it \
             is counted in held_expired and its credits come back; a STORE sent afterwards is \
             served",
            &["EP-8-9", "EP-8-4", "TXN-5-7"],
            &[],
            held_past_hold_max,
        ),
        case(
            "EPT-MFS-1",
            "the MFS a device announces holds its largest RDMA_WRITE segment with a tag (segment + \
             64 bytes); with an MFS too small for its segment it refuses the setting or cuts \
             smaller segments",
            &["EP-3-5", "EP-6-2"],
            &["rdma"],
            mfs_holds_a_segment,
        ),
        case(
            "EPT-PATH-4",
            "as a requester with the hash policy, each request leaves by the usable port \
             h mod n of Figure EP-F3 (key: the stream id of an ordered stream, else the tag)",
            &["EP-4-5", "EP-4-2", "EP-3-4"],
            &[],
            hash_policy,
        ),
        case(
            "EPT-PATH-5",
            "the requests of an ordered stream still queued at a port that goes down are sent on \
             the other port, once, in issue order and before the stream's later requests; moving \
             them is no retry",
            &[
                "EP-4-3", "TXN-5-2", "TXN-5-6", "EP-9-1", "EP-4-1", "EP-10-1", "TXN-3-1",
            ],
            &[],
            stream_moved_on_down,
        ),
        case(
            "EPT-HELD-1",
            "as a target, responses that find no usable port for longer than op_timeout are \
             discarded and counted in responses_expired, never sent when a port comes up later",
            &["EP-8-5", "EP-10-1"],
            &[],
            held_response_expires,
        ),
        case(
            "EPT-ORD-4",
            "as a target, an operation is performed when it is answered OK: a LOAD sent on one \
             port after the STORE_RESP of a STORE sent on the other came back sees the stored \
             bytes, and a FENCE with it is answered",
            &["TXN-4-11", "TXN-4-6", "TXN-2-1", "TXN-2-2", "TXN-2-8"],
            &[],
            one_intake_order,
        ),
        case(
            "EPT-TAG-1",
            "a request lost with a port after its operation completed and its tag passed to a \
             new operation on another port neither completes, retries nor moves the new operation",
            &["EP-9-7", "EP-5-7", "EP-4-5", "TXN-3-1"],
            &[],
            lost_request_of_a_reused_tag,
        ),
        case(
            "EPT-DL-8",
            "with op_timeout set to an odd number of nanoseconds, an atomic never answered \
             completes TIMEOUT, and a load never answered is sent again, no earlier than \
             op_timeout after issue",
            &["EP-1-1", "EP-9-3", "TXN-5-4"],
            &[],
            deadline_in_full,
        ),
    ]
}

/// Setup of the endpoint as GPU [`DUT`] with `link` and the endpoint settings `e`.
fn setup_ep(link: LinkParams, e: Option<EndpointParams>) -> Setup {
    Setup {
        gpu: Some(DUT),
        endpoint: e.map(Box::new),
        ..setup(link)
    }
}

/// Link parameters with 160 credits of 64 bytes per VC (10 KiB): a few frames of responses
/// exhaust them.
fn few_credits() -> LinkParams {
    LinkParams {
        rx_credits: Some(160),
        ..LinkParams::default()
    }
}

/// The harness, as the remote GPU, sends `n` LOADs of 256 bytes of `base + 256 * k` with tags
/// `tag0 + k`, ten in a frame, on `port`.
fn send_loads(ctx: &mut Ctx<'_>, port: u16, tag0: u16, base: u64, n: u16) -> Result<(), Stop> {
    let mut k = 0u16;
    while k < n {
        let txns: Vec<Vec<u8>> = (k..n.min(k + 10))
            .map(|j| load(tag0 + j, 0, G.2, base + 256 * u64::from(j), 256))
            .collect();
        send(ctx, port, 0, &txns)?;
        k += 10;
    }
    Ok(())
}

/// Checks the one response to each of the LOADs of [`send_loads`]: OK, the bytes of `data`.
fn check_loads(seen: &Seen, tag0: u16, n: u16, data: &[u8], what: &str) -> Result<(), Stop> {
    for k in 0..n {
        let t = one_response(seen, tag0 + k, what)?;
        let at = 256 * usize::from(k);
        check_resp(t, 0x81, st::OK, &data[at..at + 256], "TXN-2-1")?;
    }
    Ok(())
}

/// Takes the port down at the device and at its peer now.
fn port_down(ctx: &mut Ctx<'_>, port: u16) -> Result<(), Stop> {
    ctx.request(&Request::PhysicalDown { port })?;
    let now = ctx.now();
    ctx.peer(port)?
        .link
        .physical_down(ethlink_link::Instant::from_nanos(now));
    Ok(())
}

fn vcs_do_not_block(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up_with(ctx, 1, setup_ep(few_credits(), None))?;
    let base = G.0 + 0x8000;
    let data = pattern(0x4000, 0x17);
    mem_write(ctx, Space::Global, base, &data)?;
    // The peer keeps what arrives on VC 2: the device's responses run out of credits there.
    ctx.peer_hold_vc(0, 2, true)?;
    let (tag0, n) = (0x2100u16, 60u16);
    send_loads(ctx, 0, tag0, base, n)?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 30_000, |_| false)?;
    let early = seen.txns.iter().filter(|t| t.opcode >= 0x80).count();
    if early >= usize::from(n) {
        return Err(Stop::Inconclusive(
            "every response left before the credits of VC 2 ran out".into(),
        ));
    }
    //= docs/spec/endpoint.md#3-ports-and-virtual-channels
    //= type=test
    //# EP-3-6 Queues of different VCs MUST NOT block each other: a frame that waits on one VC MUST
    //# NOT hold back the frames of another.
    let tag = issue(
        ctx,
        Space::Global,
        0x77,
        0x2000,
        LsOp::Load { len: 4 },
        None,
    )?;
    let got = seen.run(ctx, 1, 50_000, |s| !s.requests(op::LOAD).is_empty())?;
    check(
        got,
        "EP-3-6",
        "the device's LOAD request leaves on VC 0 while its responses wait on VC 2",
        || format!("no LOAD within 50 us; {early} of {n} responses sent, the rest waiting on VC 2"),
    )?;
    let req = seen.requests(op::LOAD)[0].clone();
    check_eq("EP-3-1", "VC of the LOAD request", req.vc, 0)?;
    send(ctx, 0, 2, &[resp(0x81, st::OK, req.tag, &[1, 2, 3, 4])])?;
    seen.run(ctx, 1, 20_000, |s| !s.done.is_empty())?;
    let d = seen.done_tag(tag);
    check(
        d.len() == 1 && d[0].status == "OK" && d[0].data == Some(vec![1, 2, 3, 4]),
        "EP-3-6",
        "the load completes, its response taken while the device's own responses wait",
        || format!("{:?}", seen.done),
    )?;
    let still = seen.txns.iter().filter(|t| t.opcode >= 0x80).count();
    if still >= usize::from(n) {
        return Err(Stop::Inconclusive(
            "the responses on VC 2 stopped waiting before the load was checked".into(),
        ));
    }
    ctx.peer_hold_vc(0, 2, false)?;
    seen.run(ctx, 1, 200_000, |s| {
        s.txns.iter().filter(|t| t.opcode >= 0x80).count() >= usize::from(n)
    })?;
    seen.run(ctx, 1, 5_000, |_| false)?;
    //= docs/spec/endpoint.md#8-target
    //= type=test
    //# EP-8-8 A target MUST NOT drop a response for want of room.
    check_loads(
        &seen,
        tag0,
        n,
        &data,
        "a LOAD whose response waited for credits",
    )
}

fn response_backlog(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    // The frames wait 50 us: a hold_max above that keeps EP-8-9 out of this case.
    let e = EndpointParams {
        response_backlog: Some(9216),
        hold_max_ns: Some(10_000_000),
        ..EndpointParams::default()
    };
    ep_up_with(ctx, 1, setup_ep(few_credits(), Some(e)))?;
    let base = G.0 + 0x8000;
    let data = pattern(0x8000, 0x29);
    mem_write(ctx, Space::Global, base, &data)?;
    let marker_at = G.0 + 0x100;
    mem_write(ctx, Space::Global, marker_at, &[0; 8])?;
    let stalls0 = ctx.counter("backlog_stalls")?;
    // The peer takes nothing: 10 KiB of responses leave on its credits, 9 KiB fill the backlog,
    // and the target must stop taking the frames after them.
    ctx.peer_hold(0, true)?;
    let (tag0, n) = (0x2200u16, 120u16);
    send_loads(ctx, 0, tag0, base, n)?;
    let marker = [0xC3u8, 0x3C, 0x5A, 0xA5, 1, 2, 3, 4];
    let store_tag = 0x22FF;
    send(ctx, 0, 0, &[store(store_tag, 0, G.2, marker_at, &marker)])?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |_| false)?;
    let answered = seen.txns.iter().filter(|t| t.opcode >= 0x80).count();
    //= docs/spec/endpoint.md#8-target
    //= type=test
    //# EP-8-4 When its response backlog reaches `response_backlog` bytes a target MUST stop taking
    //# request frames from its ports, keeping them in the link's receive buffer (their credits
    //# unreturned), until the backlog drains.
    expect_mem(
        ctx,
        "EP-8-4",
        Space::Global,
        marker_at,
        &[0; 8],
        "the STORE's frame came after 30 KiB of responses, beyond a 9216-byte backlog: not taken",
    )?;
    let vc0 = ethlink_protocol::Vc::new(0).ok_or_else(|| Stop::Harness("vc 0".into()))?;
    let credits_stalled = ctx.peer(0)?.link.tx_credits_available(vc0);
    check(
        ctx.counter("backlog_stalls")? > stalls0,
        "EP-10-1",
        "backlog_stalls counts the stop",
        || format!("backlog_stalls {stalls0}, {answered} of {n} responses sent"),
    )?;
    ctx.peer_hold(0, false)?;
    let total = usize::from(n) + 1;
    seen.run(ctx, 1, 500_000, |s| {
        s.txns.iter().filter(|t| t.opcode >= 0x80).count() >= total
    })?;
    seen.run(ctx, 1, 10_000, |_| false)?;
    let credits_after = ctx.peer(0)?.link.tx_credits_available(vc0);
    check(
        credits_stalled < credits_after,
        "EP-8-4",
        "the credits of the frames kept in the receive buffer unreturned while the backlog is full",
        || {
            format!(
                "credits of VC 0 at the peer: {credits_stalled} while stalled, {credits_after} after"
            )
        },
    )?;
    check_loads(&seen, tag0, n, &data, "a LOAD held back by the backlog")?;
    let t = one_response(&seen, store_tag, "the STORE held back by the backlog")?;
    check_resp(t, 0x82, st::OK, &[], "TXN-2-2")?;
    expect_mem(
        ctx,
        "EP-8-4",
        Space::Global,
        marker_at,
        &marker,
        "the STORE taken once the backlog drained",
    )?;
    //= docs/spec/endpoint.md#3-ports-and-virtual-channels
    //= type=test
    //# EP-3-3 The endpoint MUST keep its own queue of frames per port and VC and submit a frame to
    //# the port's link only when the link accepts it; a frame refused by the link (queue full) MUST stay
    //# first in the endpoint's queue.
    let order: Vec<u16> = seen
        .txns
        .iter()
        .filter(|t| t.opcode >= 0x80)
        .map(|t| t.tag)
        .collect();
    let mut want: Vec<u16> = (0..n).map(|k| tag0 + k).collect();
    want.push(store_tag);
    check_eq(
        "EP-3-3",
        "the responses on VC 2, in the order of their requests",
        order,
        want,
    )
}

fn packed_frames_leave_tag_room(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

fn held_past_hold_max(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let e = EndpointParams {
        response_backlog: Some(9216),
        hold_max_ns: Some(20_000),
        ..EndpointParams::default()
    };
    ep_up_with(ctx, 1, setup_ep(few_credits(), Some(e)))?;
    let base = G.0 + 0x8000;
    mem_write(ctx, Space::Global, base, &pattern(0x8000, 0x2B))?;
    let marker_at = G.0 + 0x100;
    mem_write(ctx, Space::Global, marker_at, &[0; 8])?;
    let expired0 = ctx.counter("held_expired")?;
    // The peer takes nothing: the loads' responses fill the backlog, and the STORE's frame,
    // behind them, is held.
    ctx.peer_hold(0, true)?;
    let (tag0, n) = (0x2300u16, 120u16);
    send_loads(ctx, 0, tag0, base, n)?;
    let marker = [0x5Au8, 0xA5, 0xC3, 0x3C, 9, 8, 7, 6];
    let store_tag = 0x23FF;
    send(ctx, 0, 0, &[store(store_tag, 0, G.2, marker_at, &marker)])?;
    let mut seen = Seen::default();
    // Held for 50 us, past hold_max (20 us); then the backlog drains.
    seen.run(ctx, 1, 50_000, |_| false)?;
    let vc0 = ethlink_protocol::Vc::new(0).ok_or_else(|| Stop::Harness("vc 0".into()))?;
    let credits_held = ctx.peer(0)?.link.tx_credits_available(vc0);
    ctx.peer_hold(0, false)?;
    seen.run(ctx, 1, 300_000, |_| false)?;
    //= docs/spec/endpoint.md#8-target
    //= type=test
    //# EP-8-9 A target MUST NOT perform any request of a frame it has held (EP-8-4) for `hold_max`
    //# or longer since its link delivered it: it MUST discard such a frame whole, without
    //# answering, count it in `held_expired` and return its credits.
    expect_mem(
        ctx,
        "EP-8-9",
        Space::Global,
        marker_at,
        &[0; 8],
        "the STORE's frame was held 50 us, past hold_max (20 us): never performed",
    )?;
    let answered: Vec<u16> = seen
        .txns
        .iter()
        .filter(|t| t.tag == store_tag)
        .map(|t| t.tag)
        .collect();
    check(
        answered.is_empty(),
        "EP-8-9",
        "no response to the STORE held past hold_max",
        || format!("{} responses with its tag", answered.len()),
    )?;
    check(
        ctx.counter("held_expired")? > expired0,
        "EP-8-9",
        "held_expired counts the discarded frame",
        || format!("held_expired {expired0} before, unchanged after"),
    )?;
    let credits_after = ctx.peer(0)?.link.tx_credits_available(vc0);
    check(
        credits_held < credits_after,
        "EP-8-9",
        "the credits of the discarded frame come back",
        || format!("credits of VC 0 at the peer: {credits_held} while held, {credits_after} after"),
    )?;
    // A STORE sent now is served as usual.
    let again = 0x23FE;
    send(ctx, 0, 0, &[store(again, 0, G.2, marker_at, &marker)])?;
    seen.run(ctx, 1, 100_000, |s| s.txns.iter().any(|t| t.tag == again))?;
    let t = one_response(&seen, again, "a STORE sent after the hold")?;
    check_resp(t, 0x82, st::OK, &[], "TXN-2-2")?;
    expect_mem(
        ctx,
        "EP-8-9",
        Space::Global,
        marker_at,
        &marker,
        "a STORE taken at once is performed",
    )
}

/// The largest RDMA_WRITE segment of a write of `len` bytes the device posts, and the MFS in force.
fn largest_segment(ctx: &mut Ctx<'_>, len: usize) -> Result<(u32, u16), Stop> {
    let mfs = ctx
        .params
        .mfs
        .ok_or_else(|| Stop::Harness("the reset answer gives no mfs".into()))?;
    let local = 0x10_0000u64;
    mem_write(ctx, Space::Global, local, &pattern(len, 0x3D))?;
    ctx.request(&Request::Post {
        write: true,
        local_space: Space::Global,
        local_addr: local,
        dst: REM,
        space: Space::Global,
        key: 0x0D0D_0002,
        addr: 0x90_0000,
        len: len as u64,
    })?;
    let mut seen = Seen::default();
    let all = seen.run(ctx, 1, 300_000, |s| {
        s.requests(op::RDMA_WRITE)
            .iter()
            .map(|t| usize::from(t.dlen))
            .sum::<usize>()
            >= len
    })?;
    check(
        all,
        "EP-6-2",
        "RDMA_WRITE segments covering the write",
        || {
            format!(
                "{} bytes in segments within 300 us",
                seen.requests(op::RDMA_WRITE)
                    .iter()
                    .map(|t| usize::from(t.dlen))
                    .sum::<usize>()
            )
        },
    )?;
    let seg = seen
        .requests(op::RDMA_WRITE)
        .iter()
        .map(|t| u32::from(t.dlen))
        .max()
        .unwrap_or(0);
    Ok((seg, mfs))
}

fn mfs_holds_a_segment(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    //= docs/spec/endpoint.md#3-ports-and-virtual-channels
    //= type=test
    //# EP-3-5 An endpoint's configured MFS MUST hold a frame of one full segment with an 802.1Q
    //# tag (`segment` + 64 bytes).
    ep_up(ctx, 1)?;
    let (seg, mfs) = largest_segment(ctx, 20_000)?;
    check(
        seg + 64 <= u32::from(mfs),
        "EP-3-5",
        "MFS at least the largest segment + 64 bytes",
        || format!("MFS {mfs}, segment {seg}"),
    )?;
    // An MFS below the default segment's frame: refused, or smaller segments.
    let small = 4096u16;
    let link = LinkParams {
        mfs: Some(small),
        ..LinkParams::default()
    };
    match ep_up_with(ctx, 1, setup_ep(link, None)) {
        Err(Stop::Unsupported(_)) => return Ok(()),
        Err(e) => return Err(e),
        Ok(()) => {}
    }
    let (seg, mfs) = largest_segment(ctx, 20_000)?;
    check(
        seg + 64 <= u32::from(mfs),
        "EP-3-5",
        format!("with MFS {small} asked for: segments of at most the MFS in force - 64 bytes"),
        || format!("MFS {mfs} in force, segment {seg}"),
    )
}

/// The hash of endpoint.md Figure EP-F3.
pub fn hash(dst: u16, key: u64) -> u64 {
    let x = (u64::from(dst) << 48) ^ key;
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The endpoint settings that choose the hash policy.
fn hash_params() -> EndpointParams {
    EndpointParams {
        policy: Some("hash".into()),
        ..EndpointParams::default()
    }
}

fn hash_policy(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    if ctx.desc.ports < 2 {
        return Err(Stop::Unsupported("the case needs two ports".into()));
    }
    let k = ctx.desc.ports.min(3);
    ep_up_with(ctx, k, setup_ep(LinkParams::default(), Some(hash_params())))?;
    // (tag, key) of every operation: unordered ones by their tag, one per stream by its id.
    let mut ops: Vec<(u16, u64)> = Vec::new();
    for i in 0..16u64 {
        let tag = issue(
            ctx,
            Space::Global,
            0x77,
            0x40 * i,
            LsOp::Load { len: 4 },
            None,
        )?;
        ops.push((tag, u64::from(tag)));
    }
    for s in [1u32, 2, 3, 5, 8, 13, 21, 0xFFFF_FFFF] {
        let tag = issue(
            ctx,
            Space::Global,
            0x77,
            0x800 + u64::from(s & 0xFF),
            LsOp::Load { len: 4 },
            Some(s),
        )?;
        ops.push((tag, u64::from(s)));
    }
    let mut seen = Seen::default();
    seen.run(ctx, k, 100_000, |s| s.requests(op::LOAD).len() >= ops.len())?;
    //= docs/spec/endpoint.md#41-the-hash-function
    //= type=test
    //# EP-4-5 The hash policy MUST compute `h` exactly as Figure EP-F3 writes it and choose the
    //# usable port at index `h mod n`.
    for (tag, key) in &ops {
        let want = hash(REM, *key) % u64::from(k);
        let v = seen.with_tag(*tag, false);
        check(
            v.len() == 1 && u64::from(v[0].port) == want,
            "EP-4-5",
            format!(
                "the LOAD with tag {tag:#06x} (key {key:#x}) on port {want} of {k}: h = {:#018x}",
                hash(REM, *key)
            ),
            || {
                if v.is_empty() {
                    "not sent".into()
                } else {
                    v.iter().map(|t| t.show()).collect::<Vec<_>>().join("; ")
                }
            },
        )?;
    }
    Ok(())
}

fn stream_moved_on_down(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    if ctx.desc.ports < 2 {
        return Err(Stop::Unsupported("the case needs two ports".into()));
    }
    ep_up_with(ctx, 2, setup_ep(few_credits(), None))?;
    // Neither peer returns credits: the stream's STOREs fill its port's credits, the rest wait.
    ctx.peer_hold(0, true)?;
    ctx.peer_hold(1, true)?;
    let data = to_hex(&pattern(256, 0x33));
    let stream = 7;
    let mut tags = Vec::new();
    for i in 0..80u64 {
        tags.push(issue(
            ctx,
            Space::Global,
            0x77,
            0x3000 + 256 * i,
            LsOp::Store { data: data.clone() },
            Some(stream),
        )?);
    }
    let mut seen = Seen::default();
    seen.run(ctx, 2, 20_000, |_| false)?;
    let first: Vec<Txn> = seen.requests(op::STORE).into_iter().cloned().collect();
    let Some(p) = first.first().map(|t| t.port) else {
        return Err(Stop::Inconclusive("no STORE left within 20 us".into()));
    };
    let q = 1 - p;
    check(
        first.iter().all(|t| t.port == p),
        "EP-4-1",
        format!("every STORE of the stream on port {p}, the stream's pin"),
        || {
            first
                .iter()
                .map(|t| t.show())
                .collect::<Vec<_>>()
                .join("; ")
        },
    )?;
    if first.len() >= tags.len() {
        return Err(Stop::Inconclusive(
            "every STORE left before the credits ran out".into(),
        ));
    }
    // The STOREs that arrived are answered: only those never sent stay outstanding.
    for t in &first {
        send(ctx, p, 2, &[resp(0x82, st::OK, t.tag, &[])])?;
    }
    seen.run(ctx, 2, 5_000, |_| false)?;
    ctx.peer_hold(q, false)?;
    let retries0 = ctx.counter("retries")?;
    let moved0 = ctx.counter("moved")?;
    let from = seen.txns.len();
    port_down(ctx, p)?;
    issue(
        ctx,
        Space::Global,
        0x77,
        0x3000 + 256 * 80,
        LsOp::Store { data: data.clone() },
        Some(stream),
    )?;
    // The STOREs are told apart by their addresses: a tag freed by an answer may be given to the
    // later STORE at once (EP-5-7).
    let addr_of = |i: u64| 0x3000 + 256 * i;
    let sent: Vec<u64> = first.iter().map(|t| t.dword(4)).collect();
    let mut want: Vec<u64> = (0..tags.len() as u64)
        .map(addr_of)
        .filter(|a| !sent.contains(a))
        .collect();
    want.push(addr_of(80));
    let need = want.len();
    seen.run(ctx, 2, 100_000, |s| {
        s.txns[from.min(s.txns.len())..]
            .iter()
            .filter(|t| t.opcode == op::STORE)
            .count()
            >= need
    })?;
    seen.run(ctx, 2, 5_000, |_| false)?;
    let after: Vec<&Txn> = seen.txns[from..]
        .iter()
        .filter(|t| t.opcode == op::STORE)
        .collect();
    let show = || {
        after
            .iter()
            .map(|t| t.show())
            .collect::<Vec<_>>()
            .join("; ")
    };
    //= docs/spec/endpoint.md#4-paths-and-load-balancing
    //= type=test
    //# EP-4-3 When a port stops being usable, every stream pinned to it MUST be pinned anew, and the
    //# requests it still holds MUST be moved as §9 says.
    check(
        after.iter().all(|t| t.port == q),
        "EP-4-3",
        format!("the stream pinned anew to port {q}: its STOREs leave there"),
        show,
    )?;
    let mut got: Vec<u64> = after.iter().map(|t| t.dword(4)).collect();
    let mut a = got.clone();
    a.sort_unstable();
    let mut b = want.clone();
    b.sort_unstable();
    //= docs/spec/transaction.md#5-operations-that-can-no-longer-complete
    //= type=test
    //# TXN-5-2 A request that is known not to have been sent (withdrawn from a port that went down,
    //# LINK-6-5, or never submitted) MUST be sent again on another usable path, whatever its operation.
    check(
        a == b,
        "TXN-5-2",
        format!(
            "each STORE never sent on port {p} sent once on port {q}, and the later one: \
             addresses {b:x?}"
        ),
        || format!("addresses {a:x?}: {}", show()),
    )?;
    //= docs/spec/transaction.md#5-operations-that-can-no-longer-complete
    //= type=test
    //# TXN-5-6 A request of an ordered stream that is sent again (TXN-5-2, TXN-5-3, TXN-5-4) MUST be
    //# sent on the stream's current path before every request of the stream issued after it is sent
    //# again
    check_eq(
        "TXN-5-6",
        "the stream's STOREs on the new path, in issue order",
        std::mem::take(&mut got),
        want.clone(),
    )?;
    check_eq(
        "EP-10-1",
        "retries (moving a request never sent is no retry)",
        ctx.counter("retries")? - retries0,
        0,
    )?;
    check_eq(
        "EP-10-1",
        "moved",
        ctx.counter("moved")? - moved0,
        (need - 1) as u64,
    )?;
    for t in &after {
        send(ctx, q, 2, &[resp(0x82, st::OK, t.tag, &[])])?;
    }
    let total = tags.len() + 1;
    seen.run(ctx, 2, 50_000, |s| s.done.len() >= total)?;
    seen.run(ctx, 2, 5_000, |_| false)?;
    // One completion OK per STORE; counted, not matched by tag, since tags may be reused.
    check(
        seen.done.len() == total && seen.done.iter().all(|d| d.status == "OK"),
        "TXN-3-1",
        format!("{total} completions, every one OK"),
        || format!("{:?}", seen.done),
    )
}

/// Settings with `op_timeout` as given, and `frame_lifetime` and `tag_quarantine` stated with it
/// so that the relations of EP-1-3 hold: frame_lifetime 20 us (at most `op_timeout`),
/// tag_quarantine frame_lifetime + op_timeout.
fn short_deadline(op_timeout: u64) -> EndpointParams {
    let frame_lifetime = op_timeout.min(20_000);
    EndpointParams {
        op_timeout_ns: Some(op_timeout),
        frame_lifetime_ns: Some(frame_lifetime),
        tag_quarantine_ns: Some((frame_lifetime * 2).max(frame_lifetime + op_timeout)),
        ..EndpointParams::default()
    }
}

fn held_response_expires(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    if ctx.desc.ports < 2 {
        return Err(Stop::Unsupported("the case needs two ports".into()));
    }
    let op_timeout = 20_000u64;
    let e = short_deadline(op_timeout);
    // Only port 0 comes up; port 1 stays down until the held responses have expired.
    ep_up_with(ctx, 1, setup_ep(few_credits(), Some(e)))?;
    let base = G.0 + 0x8000;
    mem_write(ctx, Space::Global, base, &pattern(0x4000, 0x4B))?;
    ctx.peer_hold(0, true)?;
    let (tag0, n) = (0x2500u16, 60u16);
    send_loads(ctx, 0, tag0, base, n)?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 10_000, |_| false)?;
    let early = seen.txns.iter().filter(|t| t.opcode >= 0x80).count();
    if early >= usize::from(n) {
        return Err(Stop::Inconclusive(
            "every response left before the credits ran out".into(),
        ));
    }
    let expired0 = ctx.counter("responses_expired")?;
    let lost0 = ctx.counter("responses_lost")?;
    port_down(ctx, 0)?;
    // No port is usable for three times op_timeout.
    ctx.run_for(3 * op_timeout)?;
    let cfg = peer_config(ctx, 1);
    ctx.attach(1, cfg)?;
    let up = ctx.run_until(300_000, |c| c.peer(1).is_ok_and(|p| p.link.is_up()))?;
    if !up {
        return Err(Stop::Inconclusive("port 1 did not come up".into()));
    }
    seen.run(ctx, 2, 50_000, |_| false)?;
    let on1: Vec<&Txn> = seen.txns.iter().filter(|t| t.port == 1).collect();
    //= docs/spec/endpoint.md#8-target
    //= type=test
    //# EP-8-5 A response that waits for a usable port to its requester for longer than `op_timeout`
    //# MUST be discarded and counted; the requester's deadline ends the operation.
    check(
        on1.is_empty(),
        "EP-8-5",
        format!(
            "no response on port 1, which came up {} ns after the responses began to wait",
            3 * op_timeout
        ),
        || on1.iter().map(|t| t.show()).collect::<Vec<_>>().join("; "),
    )?;
    let expired = ctx.counter("responses_expired")? - expired0;
    let lost = ctx.counter("responses_lost")? - lost0;
    check(
        expired > 0 && expired + lost == u64::from(n) - early as u64,
        "EP-8-5",
        format!(
            "responses_expired counts the {} responses not sent (with responses_lost those of unknown fate)",
            usize::from(n) - early
        ),
        || format!("responses_expired +{expired}, responses_lost +{lost}"),
    )
}

fn one_intake_order(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    if ctx.desc.ports < 2 {
        return Err(Stop::Unsupported("the case needs two ports".into()));
    }
    ep_up(ctx, 2)?;
    let mut seen = Seen::default();
    //= docs/spec/transaction.md#4-ordering
    //= type=test
    //# TXN-4-11 (completion order) An operation that completed with OK MUST have been performed
    //# whole: every request an agent issues after it has seen that completion (its own operation
    //# completing, or a value another agent wrote after seeing it) is ordered after it.
    for (round, (sp, lp)) in [(0u16, 1u16), (1, 0)].into_iter().enumerate() {
        let r = round as u16;
        let at = G.0 + 0x600 + 0x40 * u64::from(r);
        mem_write(ctx, Space::Global, at, &[0; 8])?;
        let d: Vec<u8> = (0..8).map(|i| 0x70 + i + 8 * r as u8).collect();
        let (st_tag, f_tag, l_tag) = (0x2601 + 4 * r, 0x2602 + 4 * r, 0x2603 + 4 * r);
        send(ctx, sp, 0, &[store(st_tag, 0, G.2, at, &d)])?;
        // The STORE's answer first: then the LOAD goes on the other port.
        seen.run(ctx, 2, 50_000, |s| !s.with_tag(st_tag, true).is_empty())?;
        send(ctx, lp, 0, &[fence(f_tag), load(l_tag, 0, G.2, at, 8)])?;
        seen.run(ctx, 2, 50_000, |s| {
            [st_tag, f_tag, l_tag]
                .iter()
                .all(|t| !s.with_tag(*t, true).is_empty())
        })?;
        seen.run(ctx, 2, 2_000, |_| false)?;
        check_resp(
            one_response(&seen, st_tag, "a STORE")?,
            0x82,
            st::OK,
            &[],
            "TXN-2-2",
        )?;
        check_resp(
            one_response(&seen, f_tag, "a FENCE")?,
            0x86,
            st::OK,
            &[],
            "TXN-4-6",
        )?;
        let l = one_response(&seen, l_tag, "a LOAD after the FENCE")?;
        check(
            l.fs == st::OK && l.data == d,
            "TXN-4-11",
            format!(
                "the LOAD on port {lp}, sent after the STORE on port {sp} was answered OK, reads {}",
                to_hex(&d)
            ),
            || l.show(),
        )?;
    }
    Ok(())
}

/// Whether `b` is a link frame of kind ACK.
fn is_ack(b: &[u8]) -> bool {
    let at = if b.get(12..14) == Some(&[0x81, 0x00]) {
        18
    } else {
        14
    };
    b.get(at).is_some_and(|k| k & 0x0F == 1)
}

fn lost_request_of_a_reused_tag(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    if ctx.desc.ports < 2 {
        return Err(Stop::Unsupported("the case needs two ports".into()));
    }
    // The hash policy places each stream by its id: one stream on each port.
    ep_up_with(ctx, 2, setup_ep(LinkParams::default(), Some(hash_params())))?;
    let pick = |port: u64| (1u32..).find(|s| hash(REM, u64::from(*s)) % 2 == port);
    let (Some(sp), Some(sq)) = (pick(0), pick(1)) else {
        return Err(Stop::Harness("no stream id for a port".into()));
    };
    // Every tag but one is held by loads of the stream of port 1, never answered.
    let mut fillers = Vec::new();
    for i in 0..40_000u64 {
        let r = ctx.try_request(&Request::Issue {
            dst: REM,
            space: Space::Global,
            key: 0x77,
            addr: 0x20_0000 + 8 * (i % 4096),
            op: LsOp::Load { len: 4 },
            stream: Some(sq),
        })?;
        match r {
            Ok(r) => fillers.push(
                r.tag
                    .ok_or_else(|| Stop::Harness("issue without a tag".into()))?,
            ),
            Err(_) => break,
        }
    }
    if fillers.len() >= 40_000 {
        return Err(Stop::Inconclusive("40000 operations accepted".into()));
    }
    let mut seen = Seen::default();
    let n = fillers.len();
    seen.run(ctx, 2, 150_000, |s| s.requests(op::LOAD).len() >= n)?;
    let f = seen.requests(op::LOAD)[0].clone();
    send(ctx, f.port, 2, &[resp(0x81, st::OK, f.tag, &[0; 4])])?;
    seen.run(ctx, 2, 20_000, |s| !s.done.is_empty())?;
    // From now on port 0's link never hears an ACK: the frame of the next request there stays
    // unacknowledged until the link gives up on it and reports it of unknown fate.
    ctx.set_hook(
        0,
        Box::new(|dir, _, b| {
            if dir == Dir::ToDut && is_ack(b) {
                Fault::Drop
            } else {
                Fault::Pass
            }
        }),
    )?;
    let from = seen.txns.len();
    let a = issue(
        ctx,
        Space::Global,
        0x77,
        0x2700,
        LsOp::Load { len: 4 },
        Some(sp),
    )?;
    seen.run(ctx, 2, 20_000, |s| {
        s.txns[from..].iter().any(|t| t.opcode == op::LOAD)
    })?;
    let Some(ta) = seen.txns[from..]
        .iter()
        .find(|t| t.opcode == op::LOAD && t.tag == a)
        .cloned()
    else {
        return Err(Stop::Inconclusive(format!(
            "the load with tag {a:#06x} was not sent within 20 us"
        )));
    };
    if ta.port != 0 {
        return Err(Stop::fail(
            "EP-4-5",
            format!("the load of stream {sp} on port 0 (hash policy)"),
            ta.show(),
        ));
    }
    send(ctx, 0, 2, &[resp(0x81, st::OK, a, &[0xA, 0xA, 0xA, 0xA])])?;
    // The filler answered first may have had the same tag: count the completions of the tag.
    let done_a = seen.done_tag(a).len();
    seen.run(ctx, 2, 20_000, |s| s.done_tag(a).len() > done_a)?;
    let done_b = seen.done_tag(a).len();
    check(
        done_b == done_a + 1 && seen.done_tag(a)[done_a].data == Some(vec![0xA; 4]),
        "TXN-3-1",
        format!("the load with tag {a:#06x} on port 0 completes OK with its response"),
        || format!("{:?}", seen.done_tag(a)),
    )?;
    // The only free tag is the one the load of port 0 just gave back.
    let from_b = seen.txns.len();
    let b = issue(
        ctx,
        Space::Global,
        0x77,
        0x2800,
        LsOp::Load { len: 4 },
        Some(sq),
    )?;
    //= docs/spec/endpoint.md#5-load-store-unit
    //= type=test
    //# EP-5-7 A tag MUST be free for reuse at once when its operation completes with the answer
    //# to its only attempt.
    check_eq(
        "EP-5-7",
        "the tag of the new operation (the only one free)",
        b,
        a,
    )?;
    let retries0 = ctx.counter("retries")?;
    let moved0 = ctx.counter("moved")?;
    let down = seen.run(ctx, 2, 150_000, |s| {
        s.other
            .iter()
            .any(|o| matches!(o, Output::LinkDown { port: 0, .. }))
    })?;
    if !down {
        return Err(Stop::Inconclusive(
            "port 0's link did not give up its unacknowledged frame within 150 us".into(),
        ));
    }
    seen.run(ctx, 2, 10_000, |_| false)?;
    let sends: Vec<&Txn> = seen.txns[from_b..]
        .iter()
        .filter(|t| t.opcode == op::LOAD && t.tag == b)
        .collect();
    let show = || {
        sends
            .iter()
            .map(|t| t.show())
            .collect::<Vec<_>>()
            .join("; ")
    };
    //= docs/spec/endpoint.md#9-ports-going-down-deadlines-and-busy
    //= type=test
    //# EP-9-7 A request lost with a port MUST be handled as a request of the operation that sent
    //# it, even when its tag has since passed to another operation: that operation MUST NOT be
    //# retried, moved or completed because of it.
    check(
        seen.done_tag(b).len() == done_b,
        "EP-9-7",
        format!(
            "the new operation with tag {b:#06x} not completed by the loss of the old one's frame"
        ),
        || format!("completions of the tag: {:?}", seen.done_tag(b)),
    )?;
    check(
        sends.len() == 1 && sends[0].port == 1,
        "EP-9-7",
        format!("the new operation's load sent once, on port 1 (stream {sq})"),
        show,
    )?;
    check_eq(
        "EP-9-7",
        "retries and moves after the loss",
        (ctx.counter("retries")? - retries0) + (ctx.counter("moved")? - moved0),
        0,
    )?;
    send(ctx, 1, 2, &[resp(0x81, st::OK, b, &[0xB, 0xB, 0xB, 0xB])])?;
    seen.run(ctx, 2, 20_000, |s| s.done_tag(b).len() > done_b)?;
    seen.run(ctx, 2, 2_000, |_| false)?;
    let d = seen.done_tag(b);
    check(
        d.len() == done_b + 1 && d[done_b].status == "OK" && d[done_b].data == Some(vec![0xB; 4]),
        "TXN-3-1",
        "the new operation completes OK with its own response",
        || format!("{d:?}"),
    )
}

fn deadline_in_full(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    // An odd number of nanoseconds: a device that rounds its timers down acts early.
    let op_timeout = 20_001u64;
    let e = short_deadline(op_timeout);
    ep_up_with(ctx, 2, setup_ep(LinkParams::default(), Some(e)))?;
    let ports = ctx.desc.ports.min(2);
    let t0 = ctx.now();
    let a = issue(
        ctx,
        Space::Global,
        0x77,
        0x980,
        LsOp::FetchAdd { width: 8, value: 1 },
        None,
    )?;
    issue(ctx, Space::Global, 0x77, 0xA80, LsOp::Load { len: 4 }, None)?;
    let mut seen = Seen::default();
    let got = seen.run(ctx, ports, 10 * op_timeout, |s| {
        !s.done_tag(a).is_empty() && s.requests(op::LOAD).len() >= 2
    })?;
    if !got {
        return Err(Stop::Inconclusive(format!(
            "within {} ns no TIMEOUT of the atomic or no retry of the load: {:?}",
            10 * op_timeout,
            seen.done
        )));
    }
    let due = t0 + op_timeout;
    //= docs/spec/endpoint.md#12-timers-and-their-relations
    //= type=test
    //# EP-1-1 Every time of Table EP-T1 is a whole number of nanoseconds; an endpoint MUST NOT
    //# act on a time before it has passed in full.
    let d = seen.done_tag(a);
    check(
        d[0].status == "TIMEOUT" && d[0].at_ns >= due,
        "EP-1-1",
        format!(
            "the atomic issued at {t0} ns completes TIMEOUT no earlier than {due} ns (op_timeout {op_timeout} ns)"
        ),
        || format!("{} at {} ns", d[0].status, d[0].at_ns),
    )?;
    let retry = logged_txns(ctx, true)
        .into_iter()
        .filter(|(_, replay, t)| !replay && t.opcode == op::LOAD && t.dword(4) == 0xA80)
        .map(|(at, _, _)| at)
        .nth(1);
    check(
        retry.is_some_and(|at| at >= due),
        "EP-1-1",
        format!("the load issued at {t0} ns sent again no earlier than {due} ns, its deadline"),
        || format!("sent again at {retry:?} ns"),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::hash;

    /// The hash against the vectors of endpoint.md Table EP-T4, read from the spec itself.
    #[test]
    fn hash_vectors_of_the_spec() {
        let spec = include_str!("../../../docs/spec/endpoint.md");
        let table = spec
            .split("Table EP-T4")
            .nth(1)
            .expect("Table EP-T4 in endpoint.md");
        let num = |s: &str| {
            let s = s.trim();
            match s.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16).expect("hex"),
                None => s.parse::<u64>().expect("number"),
            }
        };
        let mut rows = 0;
        for line in table.lines().skip_while(|l| !l.starts_with('|')) {
            if !line.starts_with('|') {
                break;
            }
            let cells: Vec<&str> = line.trim_matches('|').split('|').collect();
            if cells.len() != 5 || cells[0].contains("dst") || cells[0].contains("---") {
                continue;
            }
            let (dst, key, h, n, index) = (
                num(cells[0]),
                num(cells[1]),
                num(cells[2]),
                num(cells[3]),
                num(cells[4]),
            );
            let got = hash(u16::try_from(dst).expect("dst"), key);
            assert_eq!(got, h, "dst {dst} key {key:#x}");
            assert_eq!(got % n, index);
            rows += 1;
        }
        assert!(rows >= 5, "{rows} vectors");
    }
}

//! Ports and virtual channels (endpoint.md §3) and paths and load balancing (endpoint.md §4):
//! VCs that do not block each other (EP-3-6; `EPT-VC-*`), the MFS a segment needs (EP-3-5;
//! `EPT-MFS-*`), and the port a request or response takes, the hash policy (EP-4-5) and a stream
//! re-pinned when its port goes down (EP-4-3, TXN-5-2, TXN-5-6; `EPT-PATH-*`).

use super::{answer, check_loads, few_credits, hash, hash_params, port_down, send_loads, setup_ep};
use crate::case::{Stop, check, check_eq};
use crate::cases::endpoint::common::{
    DUT, G, REM, Seen, Txn, check_resp, ep_up, ep_up_peers, ep_up_with, issue, issue_loads, load,
    mem_write, one_response, op, pattern, post, resp, send, st,
};
use crate::ctx::Ctx;
use crate::device::{LinkParams, LsOp, Request, Space, to_hex};

pub(super) fn response_on_request_port(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    if ctx.desc.ports < 2 {
        return Err(Stop::Unsupported("the case needs two ports".into()));
    }
    ep_up(ctx, 2)?;
    let d = pattern(4, 0x81);
    mem_write(ctx, Space::Global, G.0 + 0x40, &d)?;
    for (port, tag) in [(0u16, 0x1201u16), (1, 0x1202), (1, 0x1203), (0, 0x1204)] {
        send(ctx, port, 0, &[load(tag, 0, G.2, G.0 + 0x40, 4)])?;
    }
    let mut seen = Seen::default();
    seen.run(ctx, 2, 30_000, |s| s.txns.len() >= 4)?;
    let mut paths = [None, None];
    for (port, tag) in [(0u16, 0x1201u16), (1, 0x1202), (1, 0x1203), (0, 0x1204)] {
        let t = one_response(&seen, tag, "a LOAD")?;
        check_resp(t, 0x81, st::OK, &d, "TXN-2-1")?;
        check(
            t.port == port,
            "EP-4-4",
            format!("the response to tag {tag:#06x} on port {port}"),
            || t.show(),
        )?;
        let p = &mut paths[usize::from(port)];
        check(
            p.is_none_or(|x| x == t.path),
            "EP-3-4",
            "one path id per port",
            || t.show(),
        )?;
        *p = Some(t.path);
    }
    check(
        paths[0] != paths[1],
        "EP-3-4",
        "ports 0 and 1 with different path ids",
        || format!("{paths:?}"),
    )
}

pub(super) fn requester_usable_ports_only(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    if ctx.desc.ports < 2 {
        return Err(Stop::Unsupported("the case needs two ports".into()));
    }
    ep_up(ctx, 2)?;
    ctx.request(&Request::PhysicalDown { port: 0 })?;
    ctx.run_for(2_000)?;
    let from = ctx.log().len();
    let tags = issue_loads(ctx, 6)?;
    let mut seen = Seen::default();
    seen.run(ctx, 2, 50_000, |s| s.txns.len() >= 6)?;
    let data_on_0 = ctx.log()[from..]
        .iter()
        .filter(|l| l.from_dut && l.port == 0)
        .filter(|l| {
            matches!(
                crate::cases::common::kind_of(&l.bytes),
                Some(crate::cases::common::Kind::Data(_))
            )
        })
        .count();
    check_eq(
        "EP-3-2",
        "DATA frames on the port whose link is down",
        data_on_0,
        0,
    )?;
    for tag in &tags {
        let v = seen.with_tag(*tag, false);
        check(
            v.len() == 1 && v[0].port == 1,
            "EP-3-2",
            format!("the LOAD with tag {tag:#06x} on port 1"),
            || v.iter().map(|t| t.show()).collect::<Vec<_>>().join("; "),
        )?;
        answer(ctx, 1, 2, &[resp(0x81, st::OK, *tag, &[1, 1, 1, 1])])?;
    }
    seen.run(ctx, 2, 20_000, |s| s.done.len() >= 6)?;
    check(
        seen.done.iter().all(|d| d.status == "OK") && seen.done.len() == 6,
        "TXN-3-1",
        "six completions, OK",
        || format!("{:?}", seen.done),
    )
}

/// EP-4-6 lets a GPU name the port of a load-store operation (a MAY): a device that takes the
/// request must send the operation there. Eight loads named to ports 1, 1, 0, 1, 0, 0, 1, 0,
/// all outstanding at once (so each tag names one operation), are told apart by address.
pub(super) fn requester_pinned_port(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    if ctx.desc.ports < 2 {
        return Err(Stop::Unsupported("the case needs two ports".into()));
    }
    ep_up(ctx, 2)?;
    let pins = [1u16, 1, 0, 1, 0, 0, 1, 0];
    for (i, port) in pins.iter().enumerate() {
        let r = ctx.try_request(&Request::Issue {
            dst: REM,
            space: Space::Global,
            key: 0x77,
            addr: 0x40 * i as u64,
            op: LsOp::Load { len: 4 },
            stream: None,
            port: Some(*port),
        })?;
        if let Err(why) = r {
            return Err(Stop::Unsupported(format!(
                "the device does not let its GPU name a port (EP-4-6 makes it optional): {why}"
            )));
        }
    }
    let mut seen = Seen::default();
    seen.run(ctx, 2, 50_000, |s| s.txns.len() >= pins.len())?;
    //= docs/spec/endpoint.md#4-paths-and-load-balancing
    //= type=test
    //# EP-4-6 An endpoint MAY let its GPU name the port of a load-store operation (a test or a
    //# program that places its own paths); such an operation MUST go on that port while it is
    //# usable and is not the port a retry must avoid (EP-9-2), and otherwise on a port chosen
    //# as for an unordered operation.
    for (i, port) in pins.iter().enumerate() {
        let addr = 0x40 * i as u64;
        let v: Vec<&Txn> = seen
            .txns
            .iter()
            .filter(|t| t.opcode == op::LOAD && t.dword(4) == addr)
            .collect();
        check(
            v.len() == 1 && v[0].port == *port,
            "EP-4-6",
            format!("the LOAD of address {addr:#x} once, on port {port}, the port it names"),
            || v.iter().map(|t| t.show()).collect::<Vec<_>>().join("; "),
        )?;
        let tag = v[0].tag;
        answer(ctx, *port, 2, &[resp(0x81, st::OK, tag, &[1, 1, 1, 1])])?;
    }
    seen.run(ctx, 2, 20_000, |s| s.done.len() >= pins.len())?;
    check(
        seen.done.len() == pins.len() && seen.done.iter().all(|d| d.status == "OK"),
        "TXN-3-1",
        "eight completions, OK",
        || format!("{:?}", seen.done),
    )
}

pub(super) fn target_response_moved(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    if ctx.desc.ports < 2 {
        return Err(Stop::Unsupported("the case needs two ports".into()));
    }
    let setup = crate::device::Setup {
        gpu: Some(DUT),
        ..crate::cases::common::setup(crate::device::LinkParams {
            rx_credits: Some(160),
            ..Default::default()
        })
    };
    crate::cases::endpoint::common::ep_up_with(ctx, 2, setup)?;
    let data = pattern(0x4000, 0x61);
    mem_write(ctx, Space::Global, G.0 + 0x8000, &data)?;
    // The peer of port 0 keeps what it receives and returns no credit: the device's responses
    // queue at port 0.
    ctx.peer_hold(0, true)?;
    let n = 40u16;
    for f in 0..4u16 {
        let txns: Vec<Vec<u8>> = (0..10u16)
            .map(|i| {
                let k = f * 10 + i;
                load(0x1800 + k, 0, G.2, G.0 + 0x8000 + 256 * u64::from(k), 256)
            })
            .collect();
        send(ctx, 0, 0, &txns)?;
    }
    let mut seen = Seen::default();
    seen.run(ctx, 2, 30_000, |_| false)?;
    let early = seen.txns.len();
    if early >= usize::from(n) {
        return Err(Stop::Inconclusive(
            "every response left before the credits ran out".into(),
        ));
    }
    let moved0 = ctx.counter("moved")?;
    ctx.request(&Request::PhysicalDown { port: 0 })?;
    let now = ctx.now();
    ctx.peer(0)?
        .link
        .physical_down(ethlink_link::Instant::from_nanos(now));
    seen.run(ctx, 2, 100_000, |s| s.txns.len() >= usize::from(n))?;
    seen.run(ctx, 2, 10_000, |_| false)?;
    for k in 0..n {
        let t = one_response(
            &seen,
            0x1800 + k,
            "a LOAD whose response waited at a port that went down",
        )?;
        let at = 256 * usize::from(k);
        check_resp(t, 0x81, st::OK, &data[at..at + 256], "TXN-5-5")?;
    }
    let on1 = seen.txns.iter().filter(|t| t.port == 1).count();
    check_eq(
        "TXN-5-5",
        "responses moved to port 1",
        on1,
        usize::from(n) - early,
    )?;
    check_eq(
        "EP-10-1",
        "moved",
        ctx.counter("moved")? - moved0,
        on1 as u64,
    )
}

pub(super) fn vcs_do_not_block(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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
    let all = seen.run(ctx, 1, 300_000, |s| s.write_bytes() >= len)?;
    check(
        all,
        "EP-6-2",
        "RDMA_WRITE segments covering the write",
        || format!("{} bytes in segments within 300 us", seen.write_bytes()),
    )?;
    let seg = seen
        .requests(op::RDMA_WRITE)
        .iter()
        .map(|t| u32::from(t.dlen))
        .max()
        .unwrap_or(0);
    Ok((seg, mfs))
}

pub(super) fn mfs_holds_a_segment(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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
    // One byte short of the segment's tagged frame: refused, or smaller segments.
    let first_seg = seg;
    if let Ok(short) = u16::try_from(first_seg + 63)
        && short >= 320
    {
        let link = LinkParams {
            mfs: Some(short),
            ..LinkParams::default()
        };
        match ep_up_with(ctx, 1, setup_ep(link, None)) {
            Err(Stop::Unsupported(_)) => {}
            Err(e) => return Err(e),
            Ok(()) => {
                let (seg, mfs) = largest_segment(ctx, 20_000)?;
                check(
                    seg + 64 <= u32::from(mfs),
                    "EP-3-5",
                    format!(
                        "with MFS {short} asked for (segment {first_seg} + 63, one byte short): \
                         segments of at most the MFS in force - 64 bytes"
                    ),
                    || format!("MFS {mfs} in force, segment {seg}"),
                )?;
            }
        }
    }
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

pub(super) fn hash_policy(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    if ctx.desc.ports < 2 {
        return Err(Stop::Unsupported("the case needs two ports".into()));
    }
    let k = ctx.desc.ports.min(3);
    ep_up_with(ctx, k, setup_ep(LinkParams::default(), Some(hash_params())))?;
    // (tag, key) of every operation: unordered ones by their tag, one per stream by its id.
    let mut ops: Vec<(u16, u64)> = Vec::new();
    for tag in issue_loads(ctx, 16)? {
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

pub(super) fn stream_moved_on_down(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

pub(super) fn small_mfs_port_unused(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    if ctx.desc.ports < 2 {
        return Err(Stop::Unsupported("the case needs two ports".into()));
    }
    ep_up(ctx, 1)?;
    let (seg, _) = largest_segment(ctx, 20_000)?;
    let Some(short) = u16::try_from(seg + 63).ok().filter(|m| *m >= 320) else {
        return Err(Stop::Unsupported(format!(
            "segment {seg}: no MFS a link may announce (320..9216) is one byte short of it"
        )));
    };
    // Port 1's peer announces one byte less than a tagged frame of one segment: the link comes
    // UP, but the port is not usable.
    ep_up_peers(ctx, 2, setup_ep(LinkParams::default(), None), |p, cfg| {
        if p == 1 {
            cfg.mfs = short;
        }
    })?;
    let local = 0x10_0000u64;
    let len = 3 * seg as usize + 100;
    mem_write(ctx, Space::Global, local, &pattern(len, 0x5C))?;
    post(ctx, true, local, 0x0D0D_0002, 0x90_0000, len as u64)?;
    let n = 16usize;
    issue_loads(ctx, n as u64)?;
    let mut seen = Seen::default();
    seen.run(ctx, 2, 300_000, |s| {
        s.requests(op::LOAD).len() >= n && s.write_bytes() >= len
    })?;
    //= docs/spec/endpoint.md#3-ports-and-virtual-channels
    //= type=test
    //# EP-3-2 A port is **usable** while its link is UP with at least 4 VCs agreed and an agreed
    //# MFS that holds a tagged frame of one full segment (`segment` + 64 bytes). Only usable ports
    //# MUST take part in path choice (§4), and frames MUST be submitted only to the links of usable
    //# ports.
    let on_1: Vec<&Txn> = seen.txns.iter().filter(|t| t.port == 1).collect();
    check(
        on_1.is_empty(),
        "EP-3-2",
        format!(
            "no request on port 1, whose peer announces MFS {short} (segment {seg} + 63): the port \
             is UP but not usable"
        ),
        || {
            format!(
                "{} transactions on port 1, the first {}",
                on_1.len(),
                on_1[0].show()
            )
        },
    )?;
    check(
        seen.requests(op::LOAD).len() >= n,
        "EP-3-2",
        format!("the {n} LOADs sent on port 0, the one usable port"),
        || format!("{} LOADs seen", seen.requests(op::LOAD).len()),
    )?;
    // Exactly a tagged frame of one segment: port 1 is usable, and under the hash policy each
    // LOAD leaves by the port h mod 2 of Figure EP-F3 picks.
    let exact = short + 1;
    ep_up_peers(
        ctx,
        2,
        setup_ep(LinkParams::default(), Some(hash_params())),
        |p, cfg| {
            if p == 1 {
                cfg.mfs = exact;
            }
        },
    )?;
    let tags = issue_loads(ctx, n as u64)?;
    let mut seen = Seen::default();
    seen.run(ctx, 2, 100_000, |s| s.requests(op::LOAD).len() >= n)?;
    for tag in tags {
        let want = hash(REM, u64::from(tag)) % 2;
        let v = seen.with_tag(tag, false);
        check(
            v.len() == 1 && u64::from(v[0].port) == want,
            "EP-3-2",
            format!(
                "the LOAD with tag {tag:#06x} on port {want} of 2 (hash policy): port 1, whose \
                 peer announces MFS {exact} (segment {seg} + 64), is usable"
            ),
            || v.iter().map(|t| t.show()).collect::<Vec<_>>().join("; "),
        )?;
    }
    Ok(())
}

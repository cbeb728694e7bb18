//! Ordering (transaction.md §4): a FENCE as target and requester, ordered streams, and an
//! operation performed once it is answered OK, one order of intake for all ports (EP-8-7). The
//! `EPT-ORD-*` cases; the litmus cases of the memory model are in `litmus.rs`.

use super::answer;
use crate::case::{Stop, check, check_eq};
use crate::cases::endpoint::common::{
    G, Seen, Txn, check_resp, completion, ep_up, fence, issue, load, mem_read, mem_write,
    one_response, op, pattern, post, rdma_read, rdma_write, read_resp, resp, send, st, store,
};
use crate::ctx::Ctx;
use crate::device::{LsOp, Request, Space, to_hex};

pub(super) fn target_fence(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let a = G.0 + 0x300;
    let d1 = pattern(200, 1);
    let d2 = pattern(100, 2);
    let seg = pattern(512, 3);
    let rdma = ctx.has_cap("rdma");
    if rdma {
        // An RDMA write's two segments first, on VC 1.
        send(
            ctx,
            0,
            1,
            &[rdma_write(0x0310, 0, G.2, G.0 + 0x800, 0, 512, &seg[..256])],
        )?;
        send(
            ctx,
            0,
            1,
            &[rdma_write(
                0x0310,
                0,
                G.2,
                G.0 + 0x800,
                256,
                512,
                &seg[256..],
            )],
        )?;
        // Let both reach the device before the FENCE is sent: the peer's link may send frames of
        // different VCs in any order, and only requests received before the FENCE are ordered.
        ctx.run_for(3_000)?;
    }
    send(
        ctx,
        0,
        0,
        &[
            store(0x0301, 0, G.2, a, &d1),
            store(0x0302, 0, G.2, a + 200, &d2),
            fence(0x0303),
        ],
    )?;
    let mut seen = Seen::default();
    let mut at_fence = None;
    let ok = ctx.run_until(50_000, |c| {
        seen.poll(c, 1);
        if at_fence.is_none() && seen.txns.iter().any(|t| t.tag == 0x0303) {
            at_fence = Some((
                mem_read(c, Space::Global, a, 300).unwrap_or_default(),
                mem_read(c, Space::Global, G.0 + 0x800, 512).unwrap_or_default(),
            ));
        }
        at_fence.is_some() && seen.txns.len() >= 3 + usize::from(rdma)
    })?;
    seen.check_parse()?;
    check(
        ok,
        "TXN-2-8",
        "the two STORE_RESPs and the FENCE_RESP within 50 us",
        || {
            format!(
                "{:?}",
                seen.txns.iter().map(|t| t.show()).collect::<Vec<_>>()
            )
        },
    )?;
    let t = one_response(&seen, 0x0303, "the FENCE")?;
    check_resp(t, 0x86, st::OK, &[], "TXN-4-6")?;
    let (ls, wr) = at_fence.unwrap_or_default();
    let want = [d1.clone(), d2.clone()].concat();
    check(
        ls == want,
        "TXN-4-6",
        "when the FENCE_RESP arrives, both stores before it are performed",
        || format!("memory then: {}", hex::encode(&ls)),
    )?;
    if rdma {
        check(
            wr == seg,
            "TXN-4-6",
            "when the FENCE_RESP arrives, the RDMA write received before it is performed",
            || format!("memory then: {}", hex::encode(&wr)),
        )?;
    }
    Ok(())
}

pub(super) fn requester_fence(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 2)?;
    let ports = ctx.desc.ports.min(2);
    let s = issue(
        ctx,
        Space::Global,
        0x77,
        0x600,
        LsOp::Store {
            data: "0102".into(),
        },
        None,
    )?;
    let l = issue(ctx, Space::Global, 0x77, 0x700, LsOp::Load { len: 2 }, None)?;
    let f = ctx
        .request(&Request::Fence)?
        .id
        .ok_or_else(|| Stop::Harness("fence answered without an id".into()))?;
    let mut seen = Seen::default();
    seen.run(ctx, ports, 20_000, |s| s.txns.len() >= 2)?;
    seen.run(ctx, ports, 10_000, |_| false)?;
    check(
        seen.done.is_empty(),
        "TXN-4-5",
        "no completion while the store and the load are unanswered",
        || format!("{:?}", seen.done),
    )?;
    let port_of = |seen: &Seen, tag: u16| seen.with_tag(tag, false).first().map(|t| t.port);
    let (Some(ps), Some(pl)) = (port_of(&seen, s), port_of(&seen, l)) else {
        return Err(Stop::fail(
            "TXN-3-1",
            "the STORE and the LOAD on the wire",
            format!("{:?}", seen.txns),
        ));
    };
    answer(ctx, ps, 2, &[resp(0x82, st::OK, s, &[])])?;
    seen.run(ctx, ports, 10_000, |_| false)?;
    check(
        seen.done_id(f).is_empty(),
        "TXN-4-5",
        "the fence not complete while the load is outstanding",
        || format!("{:?}", seen.done),
    )?;
    answer(ctx, pl, 2, &[resp(0x81, st::OK, l, &[7, 7])])?;
    seen.run(ctx, ports, 10_000, |_| false)?;
    let order: Vec<String> = seen
        .done
        .iter()
        .map(|d| match (d.tag, d.id) {
            (Some(t), _) if t == s => "store".to_string(),
            (Some(t), _) if t == l => "load".to_string(),
            (_, Some(i)) if i == f => "fence".to_string(),
            _ => format!("{d:?}"),
        })
        .collect();
    check_eq(
        "TXN-4-5",
        "completions in order",
        order,
        vec!["store".into(), "load".into(), "fence".into()],
    )?;
    let d = seen.done_id(f);
    check(
        d[0].status == "OK" && d[0].data.is_none(),
        "EP-5-6",
        "the fence completes OK without data",
        || format!("{:?}", d[0]),
    )
}

pub(super) fn requester_stream(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 2)?;
    let ports = ctx.desc.ports.min(2);
    let mut tags = Vec::new();
    for i in 0..8u64 {
        tags.push(issue(
            ctx,
            Space::Global,
            0x77,
            0x800 + 0x10 * i,
            LsOp::Store {
                data: format!("{i:02x}"),
            },
            Some(7),
        )?);
    }
    let mut seen = Seen::default();
    seen.run(ctx, ports, 50_000, |s| s.txns.len() >= 8)?;
    let got: Vec<_> = seen.txns.iter().filter(|t| t.opcode == op::STORE).collect();
    check_eq("TXN-4-1", "STOREs seen", got.len(), 8)?;
    let port = got[0].port;
    let path = got[0].path;
    for t in &got {
        check(
            t.port == port && t.path == path && t.vc == 0,
            "EP-4-1",
            format!("every request of the stream on port {port}, path id {path:#04x}, VC 0"),
            || t.show(),
        )?;
    }
    if ctx.desc.ports <= 16 && port == 0 {
        check_eq("EP-3-4", "path id of port 0 (stack 0, port 0)", path, 0)?;
    }
    let order: Vec<u16> = got.iter().map(|t| t.tag).collect();
    check_eq("TXN-4-1", "tags in issue order", order, tags.clone())?;
    for (t, tag) in got.iter().zip(&tags) {
        answer(ctx, t.port, 2, &[resp(0x82, st::OK, *tag, &[])])?;
    }
    seen.run(ctx, ports, 20_000, |s| s.done.len() >= 8)?;
    check_eq("TXN-3-1", "completions", seen.done.len(), 8)
}

pub(super) fn one_intake_order(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

/// As a requester, a Fence issued while an RDMA write and an RDMA read are outstanding completes
/// only after both: not when the write's completion arrives, only once the read's last segment
/// has been placed.
pub(super) fn requester_fence_after_rdma(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let (key, raddr) = (0x0E0E_0004u32, 0xD0_0000u64);
    let local = 0x20_0000u64;
    let len = 4096usize;
    mem_write(ctx, Space::Global, local, &pattern(len, 0xC1))?;
    let write = post(ctx, true, local, key, raddr, len as u64)?;
    let read = post(
        ctx,
        false,
        local + 0x1_0000,
        key,
        raddr + 0x1_0000,
        len as u64,
    )?;
    let f = ctx
        .request(&Request::Fence)?
        .id
        .ok_or_else(|| Stop::Harness("fence answered without an id".into()))?;
    let mut seen = Seen::default();
    let wire = |s: &Seen| s.write_bytes() >= len && !s.requests(op::RDMA_READ).is_empty();
    let ok = seen.run(ctx, 1, 50_000, wire)?;
    check(
        ok,
        "EP-6-7",
        "the write's segments and the read's first chunk on the wire",
        || format!("{} transactions", seen.txns.len()),
    )?;
    let wtag = seen.requests(op::RDMA_WRITE)[0].tag;
    answer(ctx, 0, 2, &[completion(st::OK, wtag, len as u32)])?;
    seen.run(ctx, 1, 10_000, |_| false)?;
    //= docs/spec/transaction.md#4-ordering
    //= type=test
    //# TXN-4-5 A Fence operation MUST complete only after every operation the requester issued
    //# before it, on every path, is complete.
    check(
        seen.done_id(f).is_empty(),
        "TXN-4-5",
        "the Fence not complete while the RDMA read before it is outstanding",
        || format!("{:?}", seen.done),
    )?;
    // The read's chunks, answered whole but for the last 256 bytes of the last chunk; then those.
    let remote = pattern(len, 0xC2);
    let mut asked = 0usize;
    let mut held: Option<Vec<u8>> = None;
    let mut answered = 0usize;
    for _ in 0..64 {
        let reads: Vec<Txn> = seen.requests(op::RDMA_READ).into_iter().cloned().collect();
        for t in &reads[answered..] {
            let off = t.dword(4).wrapping_sub(raddr + 0x1_0000) as usize;
            let total = t.word(12) as usize;
            if off + total > len {
                return Err(Stop::fail("EP-6-7", "a chunk inside the read", t.show()));
            }
            asked += total;
            let mut segs = Vec::new();
            let mut o = 0;
            while o < total {
                let n = 256.min(total - o);
                segs.push(read_resp(
                    st::OK,
                    t.tag,
                    o as u32,
                    total as u32,
                    &remote[off + o..off + o + n],
                ));
                o += n;
            }
            if asked >= len {
                held = segs.pop();
            }
            answer(ctx, t.port, 3, &segs)?;
        }
        answered = reads.len();
        if asked >= len {
            break;
        }
        seen.run(ctx, 1, 5_000, |_| false)?;
    }
    seen.run(ctx, 1, 10_000, |_| false)?;
    check(
        seen.done_id(f).is_empty() && seen.done_id(read).is_empty(),
        "TXN-4-5",
        "neither the read nor the Fence complete while the read's last segment is unanswered",
        || format!("{:?}", seen.done),
    )?;
    let last = held.ok_or_else(|| {
        Stop::fail(
            "EP-6-7",
            format!("chunks covering the read's {len} bytes"),
            format!("{asked} bytes asked for"),
        )
    })?;
    answer(ctx, 0, 3, &[last])?;
    seen.run(ctx, 1, 10_000, |s| !s.done_id(f).is_empty())?;
    let order: Vec<String> = seen
        .done
        .iter()
        .map(|d| match d.id {
            Some(i) if i == write => "write".to_string(),
            Some(i) if i == read => "read".to_string(),
            Some(i) if i == f => "fence".to_string(),
            _ => format!("{d:?}"),
        })
        .collect();
    check_eq(
        "TXN-4-5",
        "completions in order",
        order,
        vec!["write".into(), "read".into(), "fence".into()],
    )
}

/// As a target, an RDMA read that arrived before a FENCE is read whole before the FENCE is
/// answered: a STORE the requester sends once it has the FENCE_RESP is never seen by the read,
/// even while the read's segments wait for credits on VC 3.
pub(super) fn target_fence_after_rdma_read(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let a = G.0 + 0x4000;
    let total = 16_384u32;
    let old = pattern(total as usize, 0xC3);
    mem_write(ctx, Space::Global, a, &old)?;
    // The harness keeps the device's VC 3 credits: its read segments cannot all leave.
    ctx.peer_hold_vc(0, 3, true)?;
    send(ctx, 0, 1, &[rdma_read(0x3601, 0, G.2, a, total)])?;
    send(ctx, 0, 0, &[fence(0x3602)])?;
    let mut seen = Seen::default();
    let answered = seen.run(ctx, 1, 50_000, |s| !s.with_tag(0x3602, true).is_empty())?;
    if !answered {
        // A device may hold the FENCE_RESP until the read's segments have left.
        ctx.peer_hold_vc(0, 3, false)?;
        seen.run(ctx, 1, 50_000, |s| !s.with_tag(0x3602, true).is_empty())?;
    }
    let t = one_response(&seen, 0x3602, "the FENCE after the RDMA read")?;
    check_resp(t, 0x86, st::OK, &[], "TXN-4-6")?;
    // Once the FENCE is answered, STOREs over the first and the last bytes of the read's range.
    let new = vec![0xEE; 64];
    send(
        ctx,
        0,
        0,
        &[
            store(0x3603, 0, G.2, a, &new),
            store(0x3604, 0, G.2, a + u64::from(total) - 64, &new),
        ],
    )?;
    seen.run(ctx, 1, 20_000, |s| {
        !s.with_tag(0x3603, true).is_empty() && !s.with_tag(0x3604, true).is_empty()
    })?;
    ctx.peer_hold_vc(0, 3, false)?;
    seen.run(ctx, 1, 50_000, |s| {
        s.with_tag(0x3601, true)
            .iter()
            .map(|t| t.data.len())
            .sum::<usize>()
            >= total as usize
    })?;
    let mut got = vec![None; total as usize];
    for t in seen.with_tag(0x3601, true) {
        let off = t.word(0) as usize;
        for (i, b) in t.data.iter().enumerate() {
            if let Some(x) = got.get_mut(off + i) {
                *x = Some(*b);
            }
        }
    }
    let want: Vec<Option<u8>> = old.iter().map(|b| Some(*b)).collect();
    let first_diff = got.iter().zip(&want).position(|(g, w)| g != w);
    //= docs/spec/transaction.md#4-ordering
    //= type=test
    //# TXN-4-6 [...] an RDMA read that arrived before the FENCE MUST have been read whole before
    //# the FENCE is answered, but its segments MAY be read after later requests.
    check(
        first_diff.is_none(),
        "TXN-4-6",
        format!(
            "the read's {total} bytes as they were before the FENCE: STOREs sent after its \
             FENCE_RESP are not in them"
        ),
        || {
            let i = first_diff.unwrap_or(0);
            format!(
                "byte {i} of the read is {:02x?}, was {:#04x} before the FENCE",
                got[i], old[i]
            )
        },
    )
}

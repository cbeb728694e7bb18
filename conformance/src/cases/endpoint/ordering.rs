//! Ordering (transaction.md §4): a FENCE as target and requester, ordered streams, and an
//! operation performed once it is answered OK, one order of intake for all ports (EP-8-7). The
//! `EPT-ORD-*` cases; the litmus cases of the memory model are in `litmus.rs`.

use super::answer;
use crate::case::{Stop, check, check_eq};
use crate::cases::endpoint::common::{
    G, Seen, check_resp, ep_up, fence, issue, load, mem_read, mem_write, one_response, op, pattern,
    rdma_write, resp, send, st, store,
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

//! The device as a requester (endpoint.md §5, the load-store unit; transaction.md §3, statuses):
//! completions, statuses, responses it discards, requests refused at issue, tags and fences in
//! flight. The `EPT-REQ-*` cases.

use super::{answer, check_request, refused};
use crate::case::{Stop, check, check_eq};
use crate::cases::endpoint::common::{
    DUT, Done, REM, Seen, ep_up, issue, le, op, pattern, resp, st,
};
use crate::ctx::Ctx;
use crate::device::{LsOp, Request, Space};

pub(super) fn requester_completions(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 2)?;
    let ports = ctx.desc.ports.min(2);
    let key = 0x0C0C_0001;
    let sd = pattern(5, 0x31);
    let ops = [
        (LsOp::Load { len: 8 }, 0x2000u64, op::LOAD),
        (
            LsOp::Store {
                data: hex::encode(&sd),
            },
            0x3001,
            op::STORE,
        ),
        (LsOp::FetchAdd { width: 8, value: 5 }, 0x4000, op::FADD),
        (
            LsOp::Swap {
                width: 4,
                value: 0xCAFE_BABE,
            },
            0x4008,
            op::SWAP,
        ),
        (
            LsOp::CompareSwap {
                width: 8,
                compare: 1,
                value: 2,
            },
            0x4010,
            op::CAS,
        ),
    ];
    let mut tags = Vec::new();
    for (o, addr, _) in &ops {
        tags.push(issue(ctx, Space::Global, key, *addr, o.clone(), None)?);
    }
    let mut uniq = tags.clone();
    uniq.sort_unstable();
    uniq.dedup();
    check(
        uniq.len() == tags.len(),
        "EP-5-1",
        "a distinct tag for each outstanding operation",
        || format!("tags {tags:?}"),
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, ports, 50_000, |s| s.txns.len() >= ops.len())?;
    let load_data = pattern(8, 0x90);
    let answers: [Vec<u8>; 5] = [
        load_data.clone(),
        vec![],
        le(0x1234, 8),
        le(0x0BAD_F00D, 4),
        le(1, 8),
    ];
    for (i, (o, addr, opcode)) in ops.iter().enumerate() {
        let tag = tags[i];
        let v = seen.with_tag(tag, false);
        check(
            v.len() == 1,
            "EP-5-1",
            format!("one request carrying tag {tag:#06x}"),
            || {
                seen.txns
                    .iter()
                    .map(|t| t.show())
                    .collect::<Vec<_>>()
                    .join("; ")
            },
        )?;
        let t = v[0];
        check_request(t, *opcode, 0)?;
        check(
            t.word(0) == key && t.dword(4) == *addr,
            "WIRE-6.1-1",
            format!("key {key:#x}, address {addr:#x}"),
            || t.show(),
        )?;
        let (hlen, data) = match o {
            LsOp::Load { .. } => (6, vec![]),
            LsOp::Store { .. } => (5, sd.clone()),
            LsOp::FetchAdd { value, .. } => (5, le(*value, 8)),
            LsOp::Swap { value, .. } => (5, le(*value, 4)),
            LsOp::CompareSwap { compare, value, .. } => {
                (5, [le(*compare, 8), le(*value, 8)].concat())
            }
            // WIRE §6.6: a FENCE is its prefix alone.
            LsOp::Fence => (2, vec![]),
        };
        check(
            t.hlen == hlen && t.data == data,
            "WIRE-6.1-1",
            format!("hlen {hlen}, data {}", hex::encode(&data)),
            || t.show(),
        )?;
        if matches!(o, LsOp::Load { .. }) {
            check_eq("WIRE-6.1-1", "LOAD length", t.half(12), 8)?;
        }
        answer(
            ctx,
            t.port,
            2,
            &[resp(*opcode | 0x80, st::OK, tag, &answers[i])],
        )?;
    }
    seen.run(ctx, ports, 50_000, |s| s.done.len() >= ops.len())?;
    seen.run(ctx, ports, 5_000, |_| false)?;
    for (i, tag) in tags.iter().enumerate() {
        let d = seen.done_tag(*tag);
        check(
            d.len() == 1,
            "TXN-3-1",
            format!("one completion for tag {tag:#06x}"),
            || format!("{d:?}"),
        )?;
        let want = if answers[i].is_empty() {
            None
        } else {
            Some(answers[i].clone())
        };
        check(
            d[0].status == "OK" && d[0].data == want,
            "TXN-3-3",
            format!("OK with data {:?}", want.as_ref().map(hex::encode)),
            || format!("{:?}", d[0]),
        )?;
    }
    Ok(())
}

pub(super) fn requester_statuses(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 2)?;
    let ports = ctx.desc.ports.min(2);
    let statuses: [(u8, &str); 7] = [
        (1, "ACCESS_VIOLATION"),
        (2, "OUT_OF_RANGE"),
        (3, "UNSUPPORTED"),
        (4, "POISONED"),
        (5, "MALFORMED"),
        (6, "MISALIGNED"),
        (0x42, "UNKNOWN(0x42)"),
    ];
    let mut tags = Vec::new();
    for i in 0..statuses.len() {
        tags.push(issue(
            ctx,
            Space::Global,
            0x77,
            0x100 * i as u64,
            LsOp::Load { len: 4 },
            None,
        )?);
    }
    let mut seen = Seen::default();
    seen.run(ctx, ports, 50_000, |s| s.txns.len() >= statuses.len())?;
    for (i, (s, _)) in statuses.iter().enumerate() {
        let v = seen.with_tag(tags[i], false);
        let t = v.first().ok_or_else(|| {
            Stop::fail(
                "TXN-3-1",
                format!("a LOAD with tag {:#06x}", tags[i]),
                "none",
            )
        })?;
        answer(ctx, t.port, 2, &[resp(0x81, *s, tags[i], &[])])?;
    }
    seen.run(ctx, ports, 50_000, |s| s.done.len() >= statuses.len())?;
    for (i, (s, name)) in statuses.iter().enumerate() {
        let d = seen.done_tag(tags[i]);
        check(
            d.len() == 1,
            "TXN-3-1",
            format!("one completion for tag {:#06x}", tags[i]),
            || format!("{d:?}"),
        )?;
        let req = if *s == 0x42 { "WIRE-6.9-2" } else { "TXN-3-2" };
        check(d[0].status == *name, req, format!("status {name}"), || {
            format!("status {}", d[0].status)
        })?;
        check(
            d[0].data.is_none(),
            "TXN-3-3",
            "no data with a refusal",
            || format!("{:?}", d[0]),
        )?;
    }
    Ok(())
}

pub(super) fn requester_discards(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 2)?;
    let ports = ctx.desc.ports.min(2);
    let tag = issue(ctx, Space::Global, 0x77, 0x500, LsOp::Load { len: 4 }, None)?;
    let mut seen = Seen::default();
    seen.run(ctx, ports, 50_000, |s| !s.txns.is_empty())?;
    let port = seen
        .with_tag(tag, false)
        .first()
        .map(|t| t.port)
        .ok_or_else(|| Stop::fail("TXN-3-1", "the LOAD on the wire", "none"))?;
    let base = ctx.counter("responses_discarded")?;
    // A STORE_RESP with the load's tag: the wrong opcode.
    answer(ctx, port, 2, &[resp(0x82, st::OK, tag, &[])])?;
    seen.run(ctx, ports, 10_000, |_| false)?;
    check(
        seen.done.is_empty(),
        "EP-5-4",
        "no completion from a response of the wrong opcode",
        || format!("{:?}", seen.done),
    )?;
    check_eq(
        "EP-5-4",
        "responses_discarded",
        ctx.counter("responses_discarded")? - base,
        1,
    )?;
    // A LOAD_RESP for a tag no operation holds.
    let other = tag ^ 0x4000;
    answer(ctx, port, 2, &[resp(0x81, st::OK, other, &[1, 2, 3, 4])])?;
    seen.run(ctx, ports, 10_000, |_| false)?;
    check(
        seen.done.is_empty(),
        "EP-5-4",
        "no completion from a response whose tag no operation holds",
        || format!("{:?}", seen.done),
    )?;
    check_eq(
        "EP-5-4",
        "responses_discarded",
        ctx.counter("responses_discarded")? - base,
        2,
    )?;
    // A LOAD_RESP for the load's tag from another GPU than its target, then one of another
    // length than the load asked for.
    //= docs/spec/endpoint.md#5-load-store-unit
    //= type=test
    //# EP-5-4 A response MUST complete the operation holding its tag only if it comes from that
    //# operation's target GPU, its opcode answers the operation's request and its length is the
    //# one the request asks for
    let stranger = crate::cases::endpoint::common::data_payload(
        DUT,
        REM + 1,
        &[resp(0x81, st::OK, tag, &[1, 2, 3, 4])],
    );
    ctx.peer_submit(port, 2, &stranger)?;
    seen.run(ctx, ports, 10_000, |_| false)?;
    answer(
        ctx,
        port,
        2,
        &[resp(0x81, st::OK, tag, &[1, 2, 3, 4, 5, 6, 7, 8])],
    )?;
    seen.run(ctx, ports, 10_000, |_| false)?;
    check(
        seen.done.is_empty(),
        "EP-5-4",
        "no completion from a response of another GPU or of another length",
        || format!("{:?}", seen.done),
    )?;
    check_eq(
        "EP-5-4",
        "responses_discarded",
        ctx.counter("responses_discarded")? - base,
        4,
    )?;
    // The right answer, then the same again.
    answer(ctx, port, 2, &[resp(0x81, st::OK, tag, &[9, 8, 7, 6])])?;
    seen.run(ctx, ports, 10_000, |_| false)?;
    answer(ctx, port, 2, &[resp(0x81, st::OK, tag, &[5, 5, 5, 5])])?;
    seen.run(ctx, ports, 10_000, |_| false)?;
    let d: Vec<&Done> = seen.done.iter().collect();
    check(
        d.len() == 1
            && d[0].tag == Some(tag)
            && d[0].status == "OK"
            && d[0].data == Some(vec![9, 8, 7, 6]),
        "TXN-3-1",
        "one completion, OK with 09080706",
        || format!("{d:?}"),
    )?;
    check_eq(
        "EP-9-4",
        "responses_discarded",
        ctx.counter("responses_discarded")? - base,
        5,
    )
}

pub(super) fn requester_refused_at_issue(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let from = ctx.log().len();
    let bad_issues: [(&str, u16, u64, LsOp); 4] = [
        ("a load of length 0", REM, 0, LsOp::Load { len: 0 }),
        ("a load of 257 bytes", REM, 0, LsOp::Load { len: 257 }),
        (
            "an atomic of width 2",
            REM,
            0,
            LsOp::FetchAdd { width: 2, value: 1 },
        ),
        (
            "a load whose range wraps",
            REM,
            u64::MAX - 1,
            LsOp::Load { len: 8 },
        ),
    ];
    for (what, dst, addr, o) in bad_issues {
        let r = ctx.try_request(&Request::Issue {
            dst,
            space: Space::Global,
            key: 1,
            addr,
            op: o,
            stream: None,
            port: None,
        });
        check(
            refused(r)?,
            "EP-5-3",
            format!("{what} refused at issue"),
            || "accepted".into(),
        )?;
    }
    let r = ctx.try_request(&Request::Issue {
        dst: 0xFFFF,
        space: Space::Global,
        key: 1,
        addr: 0,
        op: LsOp::Load { len: 4 },
        stream: None,
        port: None,
    });
    check(
        refused(r)?,
        "EP-5-3",
        "a load to GPU 0xFFFF refused at issue",
        || "accepted".into(),
    )?;
    let post = |len: u64, dst: u16| Request::Post {
        write: true,
        local_space: Space::Global,
        local_addr: 0,
        dst,
        space: Space::Global,
        key: 1,
        addr: 0,
        len,
    };
    for (what, req) in [
        ("a descriptor of length 0", post(0, REM)),
        ("a descriptor of 2^32 bytes", post(1 << 32, REM)),
        ("a descriptor to GPU 0xFFFF", post(16, 0xFFFF)),
    ] {
        let r = ctx.try_request(&req);
        check(
            refused(r)?,
            "EP-6-1",
            format!("{what} refused at post"),
            || "accepted".into(),
        )?;
    }
    ctx.run_for(10_000)?;
    let data: Vec<_> = crate::cases::common::sent_since(ctx, from)
        .into_iter()
        .filter(|k| matches!(k, crate::cases::common::Kind::Data(_)))
        .collect();
    check(
        data.is_empty(),
        "EP-5-3",
        "nothing sent for refused operations",
        || format!("{data:?}"),
    )?;
    let done = ctx
        .take_outputs()
        .into_iter()
        .filter(|o| matches!(o, crate::device::Output::Completion { .. }))
        .count();
    check_eq("EP-5-3", "completions of refused operations", done, 0)
}

pub(super) fn requester_fences_bounded(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    issue(ctx, Space::Global, 0x77, 0x700, LsOp::Load { len: 4 }, None)?;
    // Endpoint.md Table EP-T1: max_fences is at most 65536.
    let mut ids = Vec::new();
    let mut refused = false;
    for _ in 0..=65_536u32 {
        match ctx.try_request(&Request::Fence)? {
            Ok(r) => {
                ids.push(r.id.ok_or_else(|| Stop::Harness("fence answered without an id".into()))?)
            }
            Err(_) => {
                refused = true;
                break;
            }
        }
    }
    check(
        refused,
        "EP-5-9",
        "a fence refused once max_fences (at most 65536) fences are outstanding",
        || format!("{} fences taken behind one unanswered load", ids.len()),
    )?;
    let mut uniq = ids.clone();
    uniq.sort_unstable();
    uniq.dedup();
    check_eq(
        "EP-5-9",
        "distinct ids among the fences taken",
        uniq.len(),
        ids.len(),
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 20_000, |s| !s.requests(op::LOAD).is_empty())?;
    seen.run(ctx, 1, 5_000, |_| false)?;
    check(
        seen.done.is_empty(),
        "TXN-4-5",
        "no fence complete while the load is unanswered",
        || format!("{} completions", seen.done.len()),
    )?;
    let Some(t) = seen.requests(op::LOAD).first().cloned() else {
        return Err(Stop::fail("TXN-3-1", "the LOAD on the wire", "none"));
    };
    answer(ctx, t.port, 2, &[resp(0x81, st::OK, t.tag, &[0; 4])])?;
    let n = ids.len();
    seen.run(ctx, 1, 50_000, |s| s.done.len() > n)?;
    seen.run(ctx, 1, 5_000, |_| false)?;
    let fences: Vec<u64> = seen.done.iter().filter_map(|d| d.id).collect();
    let mut done = fences.clone();
    done.sort_unstable();
    check(
        done == uniq && seen.done.iter().all(|d| d.id.is_none() || d.status == "OK"),
        "EP-5-9",
        "each fence taken completes once, OK, and no refused one",
        || format!("{} fence completions for {n} fences taken", fences.len()),
    )?;
    let again = ctx.try_request(&Request::Fence)?;
    check(
        again.is_ok(),
        "EP-5-9",
        "a fence taken once none is outstanding",
        || format!("{again:?}"),
    )
}

pub(super) fn requester_tags_exhausted(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let mut tags = Vec::new();
    let mut refused_at = None;
    for i in 0..40_000u64 {
        let r = ctx.try_request(&Request::Issue {
            dst: REM,
            space: Space::Global,
            key: 0x77,
            addr: 0x10_0000 + 8 * i,
            op: LsOp::Load { len: 4 },
            stream: None,
            port: None,
        })?;
        match r {
            Ok(r) => tags.push(
                r.tag
                    .ok_or_else(|| Stop::Harness("issue without a tag".into()))?,
            ),
            Err(_) => {
                refused_at = Some(i);
                break;
            }
        }
    }
    let Some(refused_at) = refused_at else {
        return Err(Stop::fail(
            "EP-5-2",
            "issue refused once every tag (at most 32768) is held",
            "40000 operations accepted",
        ));
    };
    let mut uniq = tags.clone();
    uniq.sort_unstable();
    uniq.dedup();
    check_eq(
        "EP-5-1",
        "distinct tags among the outstanding operations",
        uniq.len(),
        tags.len(),
    )?;
    let mut seen = Seen::default();
    let n = tags.len();
    seen.run(ctx, 1, 150_000, |s| s.requests(op::LOAD).len() >= n)?;
    seen.run(ctx, 1, 5_000, |_| false)?;
    let refused_addr = 0x10_0000 + 8 * refused_at;
    let loads = seen.requests(op::LOAD);
    check(
        loads.iter().all(|t| t.dword(4) != refused_addr),
        "EP-5-2",
        "nothing sent for the refused operation",
        || format!("a LOAD of {refused_addr:#x} went out"),
    )?;
    check_eq(
        "EP-5-2",
        "LOADs sent (one per accepted operation)",
        loads.len(),
        n,
    )?;
    // Answer one; its tag is free at once, and the only free one.
    let t = loads[0].clone();
    answer(ctx, t.port, 2, &[resp(0x81, st::OK, t.tag, &[0; 4])])?;
    seen.run(ctx, 1, 20_000, |s| !s.done.is_empty())?;
    check(
        seen.done.len() == 1 && seen.done[0].tag == Some(t.tag),
        "TXN-3-1",
        "the answered load completes",
        || format!("{:?}", seen.done),
    )?;
    let r = ctx.try_request(&Request::Issue {
        dst: REM,
        space: Space::Global,
        key: 0x77,
        addr: 0x8,
        op: LsOp::Load { len: 4 },
        stream: None,
        port: None,
    })?;
    match r {
        Ok(r) => check_eq(
            "EP-5-7",
            "the tag of the next operation (the only one free)",
            r.tag,
            Some(t.tag),
        ),
        Err(why) => Err(Stop::fail(
            "EP-5-7",
            "the tag of an operation answered at its only attempt free at once",
            format!("issue refused: {why}"),
        )),
    }
}

//! Ports going down, deadlines and BUSY (endpoint.md §9) and operations that can no longer
//! complete (transaction.md §5): timeouts, BUSY, no path, an unknown fate and its retry, a request
//! lost with a port after its tag passed to another operation (EP-9-7), and a deadline set by the
//! setup acted on only once it has passed in full (EP-1-1). The `EPT-DL-*` and `EPT-TAG-*` cases.

use super::{answer, hash, hash_params, setup_ep, short_deadline};
use crate::case::{Stop, check, check_eq};
use crate::cases::endpoint::common::{
    DUT, G, REM, Seen, Txn, ep_up, ep_up_with, issue, load, logged_txns, mem_read, op,
    parse_payload, pattern, post, read_resp, resp, send, st,
};
use crate::ctx::{Ctx, Dir, Fault};
use crate::device::{LinkParams, LsOp, Output, Request, Space};

/// `tag_quarantine` stated by EPT-DL-1: long enough that every tag resting after its TIMEOUTs
/// still rests when the case looks (the case lasts a few milliseconds at most).
const DL1_QUARANTINE_NS: u64 = 10_000_000;

pub(super) fn requester_timeout(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up_with(
        ctx,
        2,
        crate::device::Setup {
            gpu: Some(DUT),
            endpoint: Some(Box::new(crate::device::EndpointParams {
                tag_quarantine_ns: Some(DL1_QUARANTINE_NS),
                ..Default::default()
            })),
            ..crate::cases::common::setup(crate::device::LinkParams::default())
        },
    )?;
    let ports = ctx.desc.ports.min(2);
    let a = issue(
        ctx,
        Space::Global,
        0x77,
        0x900,
        LsOp::FetchAdd { width: 8, value: 1 },
        None,
    )?;
    let l = issue(ctx, Space::Global, 0x77, 0xA00, LsOp::Load { len: 4 }, None)?;
    let mut seen = Seen::default();
    let done = seen.run(ctx, ports, 990_000_000, |s| s.done.len() >= 2)?;
    if !done {
        return Err(Stop::Inconclusive(format!(
            "no completion within 990 ms of simulated time (the device's op_timeout may be longer): {:?}",
            seen.done
        )));
    }
    seen.run(ctx, ports, 5_000, |_| false)?;
    let fadds = seen.requests(op::FADD);
    check(
        fadds.len() == 1,
        "TXN-5-4",
        "the atomic sent once: an atomic is not retried",
        || {
            fadds
                .iter()
                .map(|t| t.show())
                .collect::<Vec<_>>()
                .join("; ")
        },
    )?;
    let da = seen.done_tag(a);
    check(
        da.len() == 1 && da[0].status == "TIMEOUT" && da[0].data.is_none(),
        "TXN-3-7",
        "the atomic completes once, TIMEOUT, without data",
        || format!("{:?}", seen.done),
    )?;
    let loads = seen.requests(op::LOAD).len() as u64;
    let dl = seen.done_tag(l);
    check(
        dl.len() == 1 && dl[0].status == "TIMEOUT" && dl[0].data.is_none(),
        "TXN-3-7",
        "the load completes once, TIMEOUT, without data",
        || format!("{:?}", seen.done),
    )?;
    check_eq(
        "EP-10-1",
        "retries (the load's extra attempts)",
        ctx.counter("retries")?,
        loads - 1,
    )?;
    check(
        da[0].at_ns < dl[0].at_ns || loads == 1,
        "TXN-5-4",
        "the load, retried, ends after the atomic",
        || format!("{:?}", seen.done),
    )?;
    // Each attempt after a passed deadline leaves by another port than the one before it.
    if ports >= 2 {
        let by_port: Vec<u16> = seen.requests(op::LOAD).iter().map(|t| t.port).collect();
        check(
            by_port.windows(2).all(|w| w[0] != w[1]),
            "EP-9-2",
            "each retry on a usable port other than the one the attempt before it used",
            || format!("ports of the attempts: {by_port:?}"),
        )?;
    }
    // The tags of operations that ended without their answer rest `tag_quarantine`, stated in
    // the setup: a new operation issued within it gets another tag (or is refused while every
    // tag rests).
    let ended = dl.last().map_or(0, |d| d.at_ns).max(da[0].at_ns);
    if ctx.now().saturating_sub(ended) >= DL1_QUARANTINE_NS {
        return Err(Stop::Harness(format!(
            "the case ran {} ns past the TIMEOUTs, beyond the tag_quarantine it set",
            ctx.now().saturating_sub(ended)
        )));
    }
    match ctx.try_request(&Request::Issue {
        dst: REM,
        space: Space::Global,
        key: 0x77,
        addr: 0xF00,
        op: LsOp::Load { len: 4 },
        stream: None,
        port: None,
    })? {
        Ok(r) => check(
            r.tag.is_some_and(|t| t != a && t != l),
            "EP-5-8",
            format!("a tag other than {a:#06x} and {l:#06x}, which rest after TIMEOUT"),
            || format!("{:?}", r.tag),
        ),
        Err(_) => Ok(()),
    }
}

pub(super) fn requester_busy(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 2)?;
    let ports = ctx.desc.ports.min(2);
    let tag = issue(ctx, Space::Global, 0x77, 0xB00, LsOp::Load { len: 4 }, None)?;
    let mut seen = Seen::default();
    let mut waits: Vec<(u64, u64)> = Vec::new();
    for attempt in 0..3 {
        let want = attempt + 1;
        let ok = seen.run(ctx, ports, 200_000, |s| {
            s.requests(op::LOAD).len() >= want || !s.done.is_empty()
        })?;
        if !seen.done.is_empty() {
            let d = &seen.done[0];
            if d.status == "BUSY" {
                return Err(Stop::Inconclusive(format!(
                    "the device gave up after {attempt} BUSY answers: its max_retries is below 2"
                )));
            }
            return Err(Stop::fail(
                "EP-9-5",
                "an operation answered BUSY with a retry left is sent again",
                format!("completed {d:?}"),
            ));
        }
        check(ok, "EP-9-5", "the load sent again after BUSY", || {
            format!("{} LOADs", seen.requests(op::LOAD).len())
        })?;
        let t = seen.requests(op::LOAD)[attempt].clone();
        check(
            t.word(0) == 0x77 && t.dword(4) == 0xB00 && t.half(12) == 4,
            "EP-9-5",
            "the same load sent again, whole",
            || t.show(),
        )?;
        let now = ctx.now();
        if let Some(w) = waits.last_mut() {
            w.1 = now - w.0;
        }
        if attempt < 2 {
            answer(ctx, t.port, 2, &[resp(0x81, st::BUSY, t.tag, &[])])?;
            waits.push((ctx.now(), 0));
        } else {
            answer(ctx, t.port, 2, &[resp(0x81, st::OK, t.tag, &[4, 3, 2, 1])])?;
        }
    }
    seen.run(ctx, ports, 20_000, |s| !s.done.is_empty())?;
    let d = seen.done.first().cloned();
    check(
        seen.done.len() == 1
            && d.as_ref()
                .is_some_and(|d| d.status == "OK" && d.data == Some(vec![4, 3, 2, 1])),
        "TXN-3-8",
        "one completion, OK with 04030201",
        || format!("{:?}", seen.done),
    )?;
    let _ = (tag, waits);
    // The waits at the device: from the arrival of each BUSY to the first transmission of the
    // retry it caused.
    let busy: Vec<u64> = logged_txns(ctx, false)
        .into_iter()
        .filter(|(_, _, t)| t.opcode == 0x81 && t.fs == st::BUSY)
        .map(|(at, _, _)| at)
        .collect();
    let sends: Vec<u64> = logged_txns(ctx, true)
        .into_iter()
        .filter(|(_, replay, t)| !replay && t.opcode == op::LOAD && t.dword(4) == 0xB00)
        .map(|(at, _, _)| at)
        .collect();
    if busy.len() != 2 || sends.len() != 3 {
        return Err(Stop::Harness(format!(
            "the log shows BUSY arrivals {busy:?} and LOAD transmissions {sends:?}"
        )));
    }
    let (d1, d2) = (sends[1] - busy[0], sends[2] - busy[1]);
    check(
        d2 >= d1 + 100,
        "EP-9-5",
        "the second wait longer than the first by busy_backoff (at least 100 ns)",
        || format!("waits {d1} ns and {d2} ns"),
    )?;
    check(
        d1 >= d2 - d1,
        "EP-9-5",
        "the first wait at least busy_backoff (the difference of the two waits)",
        || format!("waits {d1} ns and {d2} ns"),
    )?;
    check(
        d2 >= 2 * (d2 - d1),
        "EP-9-5",
        "a back-off that doubles: the second wait at least twice busy_backoff",
        || format!("waits {d1} ns and {d2} ns"),
    )?;
    check_eq("EP-10-1", "retries", ctx.counter("retries")?, 2)?;
    check_eq("EP-10-1", "busy_retries", ctx.counter("busy_retries")?, 2)?;
    check_eq(
        "EP-10-1",
        "completed.load.OK",
        ctx.counter("completed.load.OK")?,
        1,
    )
}

pub(super) fn requester_busy_to_the_end(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 2)?;
    let ports = ctx.desc.ports.min(2);
    issue(
        ctx,
        Space::Global,
        0x77,
        0xC00,
        LsOp::Store {
            data: "abcd".into(),
        },
        None,
    )?;
    let mut seen = Seen::default();
    let mut answered = 0;
    while seen.done.is_empty() {
        let want = answered + 1;
        let ok = seen.run(ctx, ports, 5_000_000, |s| {
            s.requests(op::STORE).len() >= want || !s.done.is_empty()
        })?;
        if !seen.done.is_empty() {
            break;
        }
        check(
            ok && answered < 17,
            "EP-9-8",
            "a BUSY completion once max_retries (at most 16) are spent",
            || format!("{answered} BUSY answers, no completion"),
        )?;
        let t = seen.requests(op::STORE)[answered].clone();
        answer(ctx, t.port, 2, &[resp(0x82, st::BUSY, t.tag, &[])])?;
        answered += 1;
    }
    seen.run(ctx, ports, 10_000, |_| false)?;
    check(
        seen.done.len() == 1 && seen.done[0].status == "BUSY" && seen.done[0].data.is_none(),
        "EP-9-8",
        "one completion, BUSY",
        || format!("{:?}", seen.done),
    )?;
    check_eq(
        "EP-9-5",
        "requests sent (each answered BUSY)",
        seen.requests(op::STORE).len(),
        answered,
    )?;
    check_eq(
        "EP-10-1",
        "busy_retries",
        ctx.counter("busy_retries")?,
        answered as u64 - 1,
    )?;
    check_eq(
        "EP-10-1",
        "completed.store.BUSY",
        ctx.counter("completed.store.BUSY")?,
        1,
    )
}

pub(super) fn requester_no_path(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ctx.reset(&crate::device::Setup {
        gpu: Some(DUT),
        ..crate::cases::common::setup(Default::default())
    })?;
    // No port comes up.
    let tag = issue(ctx, Space::Global, 0x77, 0xD00, LsOp::Load { len: 4 }, None)?;
    let mut seen = Seen::default();
    let done = seen.run(ctx, 0, 990_000_000, |s| !s.done.is_empty())?;
    if !done {
        return Err(Stop::Inconclusive(
            "no completion within 990 ms (the device's op_timeout may be longer)".into(),
        ));
    }
    let d = seen.done_tag(tag);
    check(
        d.len() == 1 && d[0].status == "NO_PATH" && d[0].data.is_none(),
        "TXN-3-6",
        "one completion, NO_PATH, without data",
        || format!("{:?}", seen.done),
    )
}

pub(super) fn requester_fate_unknown(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 2)?;
    let ports = ctx.desc.ports.min(2);
    // Every DATA frame of the device vanishes: its links replay until they FLUSH.
    for p in 0..ports {
        ctx.set_hook(
            p,
            Box::new(|dir, _, b| {
                let l = if b.get(12..14) == Some(&[0x81, 0x00]) {
                    18
                } else {
                    14
                };
                if dir == crate::ctx::Dir::FromDut && b.get(l).is_some_and(|k| k & 0x0F == 0) {
                    crate::ctx::Fault::Drop
                } else {
                    crate::ctx::Fault::Pass
                }
            }),
        )?;
    }
    let from = ctx.log().len();
    let tag = issue(
        ctx,
        Space::Global,
        0x77,
        0xE00,
        LsOp::Swap { width: 8, value: 3 },
        None,
    )?;
    let mut seen = Seen::default();
    let done = seen.run(ctx, ports, 500_000_000, |s| !s.done.is_empty())?;
    if !done {
        return Err(Stop::Inconclusive("no completion within 500 ms".into()));
    }
    // The SWAP frames the device sent, first transmissions and replays alike.
    let mut firsts = 0;
    for l in ctx.log()[from..].iter().filter(|l| l.from_dut) {
        let b = &l.bytes;
        let at = if b.get(12..14) == Some(&[0x81, 0x00]) {
            18
        } else {
            14
        };
        if b.get(at).is_some_and(|k| k & 0x0F == 0)
            && b.get(at + 1).is_some_and(|f| f & 0x01 == 0)
            && let Ok(t) = parse_payload(l.port, 0, &b[at + 6..b.len() - 4])
        {
            firsts += t.iter().filter(|t| t.opcode == op::SWAP).count();
        }
    }
    check_eq(
        "TXN-3-5",
        "first transmissions of the SWAP (never sent again after unknown fate)",
        firsts,
        1,
    )?;
    let d = seen.done_tag(tag);
    check(
        d.len() == 1 && d[0].status == "FATE_UNKNOWN" && d[0].data.is_none(),
        "TXN-3-5",
        "one completion, FATE_UNKNOWN",
        || format!("{:?}", seen.done),
    )
}

pub(super) fn requester_unknown_fate_retry(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    // The device's DATA frames vanish for the first 60 us: its link replays until it FLUSHes and
    // reports the load's frame of unknown fate.
    let until = ctx.now() + 60_000;
    ctx.set_hook(
        0,
        Box::new(move |dir, at, b| {
            let l = if b.get(12..14) == Some(&[0x81, 0x00]) {
                18
            } else {
                14
            };
            if dir == crate::ctx::Dir::FromDut
                && at < until
                && b.get(l).is_some_and(|k| k & 0x0F == 0)
            {
                crate::ctx::Fault::Drop
            } else {
                crate::ctx::Fault::Pass
            }
        }),
    )?;
    let tag = issue(
        ctx,
        Space::Global,
        0x77,
        0x1200,
        LsOp::Load { len: 4 },
        None,
    )?;
    let mut seen = Seen::default();
    let got = seen.run(ctx, 1, 5_000_000, |s| {
        !s.requests(op::LOAD).is_empty() || !s.done.is_empty()
    })?;
    if !seen.done.is_empty() {
        return Err(Stop::fail(
            "TXN-5-3",
            "the load sent again after its frame had unknown fate",
            format!("completed {:?}", seen.done),
        ));
    }
    check(
        got,
        "TXN-5-3",
        "the load sent again after its frame had unknown fate",
        || "not within 5 ms".into(),
    )?;
    let sends: Vec<u64> = logged_txns(ctx, true)
        .into_iter()
        .filter(|(_, replay, t)| !replay && t.opcode == op::LOAD && t.dword(4) == 0x1200)
        .map(|(at, _, _)| at)
        .collect();
    check_eq("TXN-5-3", "first transmissions of the load", sends.len(), 2)?;
    let t = seen.requests(op::LOAD)[0].clone();
    check(
        sends[1] >= until,
        "TXN-5-7",
        "the load not sent again while its first copy could still arrive",
        || format!("sent at {} ns and {} ns", sends[0], sends[1]),
    )?;
    answer(ctx, t.port, 2, &[resp(0x81, st::OK, t.tag, &[6, 6, 6, 6])])?;
    seen.run(ctx, 1, 50_000, |s| !s.done.is_empty())?;
    let d = seen.done_tag(tag);
    check(
        d.len() == 1 && d[0].status == "OK" && d[0].data == Some(vec![6, 6, 6, 6]),
        "TXN-3-1",
        "one completion, OK with 06060606",
        || format!("{:?}", seen.done),
    )?;
    check_eq("EP-10-1", "retries", ctx.counter("retries")?, 1)
}

pub(super) fn target_unknown_fate_response(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let until = ctx.now() + 60_000;
    ctx.set_hook(
        0,
        Box::new(move |dir, at, b| {
            let l = if b.get(12..14) == Some(&[0x81, 0x00]) {
                18
            } else {
                14
            };
            if dir == crate::ctx::Dir::FromDut
                && at < until
                && b.get(l).is_some_and(|k| k & 0x0F == 0)
            {
                crate::ctx::Fault::Drop
            } else {
                crate::ctx::Fault::Pass
            }
        }),
    )?;
    let before = ctx.counter("responses_lost")?;
    send(ctx, 0, 0, &[load(0x1701, 0, G.2, G.0, 4)])?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 1_000_000, |_| false)?;
    let firsts = logged_txns(ctx, true)
        .into_iter()
        .filter(|(_, replay, t)| !replay && t.tag == 0x1701 && t.opcode >= 0x80)
        .count();
    check_eq("TXN-5-8", "first transmissions of the LOAD_RESP", firsts, 1)?;
    check(
        seen.with_tag(0x1701, true).is_empty(),
        "TXN-5-8",
        "the response of unknown fate never sent again",
        || {
            seen.txns
                .iter()
                .map(|t| t.show())
                .collect::<Vec<_>>()
                .join("; ")
        },
    )?;
    check_eq(
        "EP-10-1",
        "responses_lost",
        ctx.counter("responses_lost")? - before,
        1,
    )
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

pub(super) fn lost_request_of_a_reused_tag(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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
            port: None,
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

pub(super) fn deadline_in_full(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

/// As a requester with op_timeout 20 us, an RDMA read never answered is asked again (EP-9-3) a
/// bounded number of times and then ends TIMEOUT, once (TXN-3-7, TXN-5-4).
pub(super) fn unanswered_read_times_out(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up_with(
        ctx,
        1,
        setup_ep(LinkParams::default(), Some(short_deadline(20_000))),
    )?;
    // The device's retry budget, which the setup cannot state: the attempts of a LOAD never
    // answered (retries of every cause share one budget, endpoint.md §9).
    issue(ctx, Space::Global, 0x77, 0x40, LsOp::Load { len: 4 }, None)?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 400_000, |s| !s.done.is_empty())?;
    let budget = seen.requests(op::LOAD).len();
    let id = post(ctx, false, 0x20_0000, 0x0E0E_0001, 0xA0_0000, 256)?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 400_000, |s| !s.done.is_empty())?;
    let done = seen.done_id(id);
    let asked = seen.requests(op::RDMA_READ).len();
    check(
        done.len() == 1 && done[0].status == "TIMEOUT",
        "TXN-3-7",
        "the read ends once, TIMEOUT, within 400 us",
        || format!("completions {:?} after {asked} RDMA_READs", seen.done),
    )?;
    check(
        (1..=17).contains(&asked),
        "TXN-5-4",
        "at most 1 + max_retries (16 at most, Table EP-T1) RDMA_READs",
        || format!("{asked}"),
    )?;
    //= docs/spec/endpoint.md#9-ports-going-down-deadlines-and-busy
    //= type=test
    //# EP-9-3 An operation's deadline MUST be checked by the endpoint's timer; an operation whose
    //# deadline passes MUST be retried or completed as TXN-5-4 says: an RDMA read retries its
    //# unfinished chunks; an RDMA write is not retried (TXN-5-1).
    check(
        asked == budget,
        "EP-9-3",
        format!(
            "the unanswered chunk asked as many times as a LOAD never answered was sent \
             ({budget}): the same retry budget"
        ),
        || format!("{asked} RDMA_READs"),
    )
}

/// As a requester with two ports and op_timeout 20 us, a load of an ordered stream never
/// answered is sent again after its deadline on the other port: a retry avoids the port the
/// attempt it replaces took (EP-9-2), stream or not (TXN-5-6).
pub(super) fn stream_retry_avoids_its_port(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    if ctx.desc.ports < 2 {
        return Err(Stop::Unsupported("the case needs two ports".into()));
    }
    ep_up_with(
        ctx,
        2,
        setup_ep(LinkParams::default(), Some(short_deadline(20_000))),
    )?;
    issue(
        ctx,
        Space::Global,
        0x77,
        0x800,
        LsOp::Load { len: 4 },
        Some(7),
    )?;
    let mut seen = Seen::default();
    let twice = seen.run(ctx, 2, 100_000, |s| s.requests(op::LOAD).len() >= 2)?;
    let l = seen.requests(op::LOAD);
    check(
        twice,
        "EP-9-3",
        "the load sent again after its deadline",
        || format!("{} LOADs", l.len()),
    )?;
    check(
        l[0].port != l[1].port,
        "EP-9-2",
        "the retry on the other port",
        || format!("{} then {}", l[0].show(), l[1].show()),
    )
}

/// As a requester, an RDMA read whose response says BUSY is asked again (EP-9-5), not completed,
/// and completes OK with the bytes of the answer that follows.
pub(super) fn busy_read_asked_again(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let local = 0x20_0000u64;
    let id = post(ctx, false, local, 0x0E0E_0001, 0xA0_0000, 4096)?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 20_000, |s| !s.requests(op::RDMA_READ).is_empty())?;
    let first = seen.requests(op::RDMA_READ)[0].tag;
    send(ctx, 0, 3, &[read_resp(st::BUSY, first, 0, 4096, &[])])?;
    seen.run(ctx, 1, 20_000, |s| {
        s.requests(op::RDMA_READ).len() >= 2 || !s.done.is_empty()
    })?;
    let reads = seen.requests(op::RDMA_READ);
    check(
        reads.len() >= 2 && seen.done_id(id).is_empty(),
        "EP-9-5",
        "the read asked again after BUSY, and not completed",
        || format!("{} RDMA_READs, completions {:?}", reads.len(), seen.done),
    )?;
    let again = reads[1].tag;
    let data = pattern(4096, 0x42);
    send(ctx, 0, 3, &[read_resp(st::OK, again, 0, 4096, &data)])?;
    seen.run(ctx, 1, 20_000, |s| !s.done.is_empty())?;
    let done = seen.done_id(id);
    check(
        done.len() == 1 && done[0].status == "OK",
        "TXN-3-1",
        "the read completes once, OK",
        || format!("{:?}", seen.done),
    )?;
    let m = mem_read(ctx, Space::Global, local, 4096)?;
    check(
        m == data,
        "TXN-2-5",
        "the local memory holds the bytes of the answer",
        || {
            format!(
                "{} bytes differ",
                m.iter().zip(&data).filter(|(a, b)| a != b).count()
            )
        },
    )
}

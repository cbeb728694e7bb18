//! Traffic an endpoint refuses or discards (endpoint.md §8 and §10; wire.md §5-§7): unknown and
//! malformed requests, frames for another GPU or on the wrong VC, and bad responses. The
//! `EPT-RX-*` cases.

use super::answer;
use crate::case::{Stop, check, check_eq};
use crate::cases::endpoint::common::{
    DUT, G, REM, Seen, atomic, check_resp, ep_up, issue, load, one_response, op, pattern, raw,
    raw_dlen, resp, send, st, store,
};
use crate::ctx::Ctx;
use crate::device::{LsOp, Space};

pub(super) fn target_unknown_malformed(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let a = G.0 + 0x900;
    let d = pattern(8, 0x21);
    let mut load_hlen5 = load(0x0A02, 0, G.2, a, 8);
    load_hlen5.truncate(20);
    load_hlen5[4] = 5;
    send(
        ctx,
        0,
        0,
        &[
            raw(0x3F, 0, 0x0A01, 2, &[], &[]),
            load_hlen5,
            load(0x0A03, 0, G.2, a, 0),
            raw_dlen(op::FENCE, 0, 0x0A04, 2, 4, &[], &[0; 4]),
            atomic(op::FADD, 0x0A05, G.2, a, &[0; 6]),
            store(0x0A06, 0, G.2, a, &d),
            load(0x0A07, 0, G.2, a, 8),
            load(0x0A08, 0, G.2, a, 257),
        ],
    )?;
    // Requests on the RDMA VC: an unknown one and a LOAD; both answered on VC 2.
    send(
        ctx,
        0,
        1,
        &[
            raw(0x7E, 0, 0x0A09, 3, &[0; 4], &[]),
            load(0x0A0A, 0, G.2, a, 4),
        ],
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| s.txns.len() >= 10)?;
    let expect: [(u16, u8, u8, &'static str, Vec<u8>); 10] = [
        (0x0A01, 0xBF, st::UNSUPPORTED, "WIRE-6.1-5", vec![]),
        (0x0A02, 0x81, st::MALFORMED, "WIRE-6.1-6", vec![]),
        (0x0A03, 0x81, st::MALFORMED, "WIRE-6.1-6", vec![]),
        (0x0A04, 0x86, st::MALFORMED, "WIRE-6.1-10", vec![]),
        (0x0A05, 0x83, st::MALFORMED, "WIRE-6.1-6", vec![]),
        (0x0A06, 0x82, st::OK, "EP-8-3", vec![]),
        (0x0A07, 0x81, st::OK, "EP-8-3", d.clone()),
        (0x0A08, 0x81, st::MALFORMED, "WIRE-6.1-6", vec![]),
        (0x0A09, 0xFE, st::UNSUPPORTED, "WIRE-6.1-5", vec![]),
        (0x0A0A, 0x81, st::OK, "EP-8-3", d[..4].to_vec()),
    ];
    for (tag, opcode, status, req, data) in &expect {
        let t = one_response(&seen, *tag, "an unknown or malformed request")?;
        check_resp(t, *opcode, *status, data, req)?;
    }
    Ok(())
}

/// Checks that nothing answered `tag` (`why` says why nothing should have).
fn no_answer(seen: &Seen, tag: u16, req: &'static str, why: &str) -> Result<(), Stop> {
    check(
        seen.with_tag(tag, true).is_empty(),
        req,
        format!("no answer to tag {tag:#06x}, {why}"),
        || {
            seen.with_tag(tag, true)
                .iter()
                .map(|t| t.show())
                .collect::<Vec<_>>()
                .join("; ")
        },
    )
}

pub(super) fn target_wrong_vc(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let a = G.0 + 0xB80;
    let before = ctx.counter("wrong_vc_txns")?;
    let served = ctx.counter("requests_served")?;
    //= docs/spec/endpoint.md#3-ports-and-virtual-channels
    //= type=test
    //# EP-3-7 A receiver MUST take a request only on VC 0 or 1 and a response only on VC 2 or 3: a
    //# transaction of either class on a VC of the other, or on a VC above 3, MUST be discarded
    //# unanswered and counted in `wrong_vc_txns`, and the frame's other transactions taken as
    //# usual.
    // A STORE on VC 2, a STORE and a LOAD on VC 3, then a stray response on VC 0.
    send(ctx, 0, 2, &[store(0x0C01, 0, G.2, a, &[0xC1; 8])])?;
    send(
        ctx,
        0,
        3,
        &[
            store(0x0C02, 0, G.2, a, &[0xC2; 8]),
            load(0x0C03, 0, G.2, a, 8),
        ],
    )?;
    send(ctx, 0, 0, &[resp(0x82, st::OK, 0x0C04, &[])])?;
    // Then a LOAD on VC 0: the stores above changed nothing.
    send(ctx, 0, 0, &[load(0x0C05, 0, G.2, a, 8)])?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| s.txns.iter().any(|t| t.tag == 0x0C05))?;
    seen.run(ctx, 1, 5_000, |_| false)?;
    for tag in [0x0C01, 0x0C02, 0x0C03] {
        no_answer(&seen, tag, "EP-3-7", "a request on a response VC")?;
    }
    let t = one_response(&seen, 0x0C05, "the LOAD on VC 0 after them")?;
    check_resp(t, 0x81, st::OK, &[0; 8], "EP-3-7")?;
    let after = ctx.counter("wrong_vc_txns")?;
    check_eq(
        "EP-3-7",
        "wrong_vc_txns up by 4 (three requests on response VCs, one response on VC 0)",
        after.wrapping_sub(before),
        4,
    )?;
    //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
    //= type=test
    //# EP-13-12 [...] `requests_served` MUST count each request the target answers after reading it
    //# whole
    check_eq(
        "EP-13-12",
        "requests_served up by 1 (the LOAD on VC 0; the requests discarded unanswered not)",
        ctx.counter("requests_served")?.wrapping_sub(served),
        1,
    )
}

pub(super) fn target_discards(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let a = G.0 + 0xA00;
    let before_m = ctx.counter("misdelivered")?;
    let before_f = ctx.counter("malformed_frames")?;
    let before_t = ctx.counter("malformed_txns")?;
    // For GPU 77: not ours.
    let mut p = crate::cases::endpoint::common::data_payload(
        77,
        REM,
        &[store(0x0B01, 0, G.2, a, &[0xFF; 8])],
    );
    ctx.peer_submit(0, 0, &p)?;
    // Transaction count 0.
    p = crate::cases::endpoint::common::data_payload(DUT, REM, &[load(0x0B02, 0, G.2, a, 8)]);
    p[5] = 0;
    ctx.peer_submit(0, 0, &p)?;
    // Source 0xFFFF.
    p = crate::cases::endpoint::common::data_payload(DUT, REM, &[load(0x0B03, 0, G.2, a, 8)]);
    p[2] = 0xFF;
    p[3] = 0xFF;
    ctx.peer_submit(0, 0, &p)?;
    // Payload length 4, below the smallest transaction.
    let mut short = DUT.to_be_bytes().to_vec();
    short.extend(REM.to_be_bytes());
    short.extend([0, 1, 0, 4, 0, 0, 0, 0]);
    ctx.peer_submit(0, 0, &short)?;
    // Count 2, one transaction: the STORE is served, then the structural error ends the frame.
    p = crate::cases::endpoint::common::data_payload(
        DUT,
        REM,
        &[store(0x0B04, 0, G.2, a + 8, &[0x5A; 4])],
    );
    p[5] = 2;
    ctx.peer_submit(0, 0, &p)?;
    // Count 1 and 8 bytes after the transaction inside the payload length: the STORE is served,
    // the rest discarded.
    p = crate::cases::endpoint::common::data_payload(
        DUT,
        REM,
        &[store(0x0B06, 0, G.2, a + 12, &[0x6B; 4]), vec![0; 8]],
    );
    p[5] = 1;
    ctx.peer_submit(0, 0, &p)?;
    // Then a good LOAD.
    send(ctx, 0, 0, &[load(0x0B05, 0, G.2, a, 16)])?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| s.txns.iter().any(|t| t.tag == 0x0B05))?;
    seen.run(ctx, 1, 5_000, |_| false)?;
    for tag in [0x0B01, 0x0B02, 0x0B03] {
        let req = if tag == 0x0B01 { "EP-8-1" } else { "WIRE-5-3" };
        no_answer(&seen, tag, req, "whose frame is discarded")?;
    }
    let t = one_response(&seen, 0x0B04, "the STORE before the structural error")?;
    check_resp(t, 0x82, st::OK, &[], "WIRE-6.1-11")?;
    let t = one_response(&seen, 0x0B06, "the STORE before the bytes left over")?;
    check_resp(t, 0x82, st::OK, &[], "WIRE-6.1-4")?;
    let t = one_response(&seen, 0x0B05, "the LOAD after the discarded frames")?;
    let mut want = vec![0u8; 8];
    want.extend([0x5A; 4]);
    want.extend([0x6B; 4]);
    check_resp(t, 0x81, st::OK, &want, "EP-8-1")?;
    check_eq(
        "EP-8-1",
        "misdelivered",
        ctx.counter("misdelivered")? - before_m,
        1,
    )?;
    check_eq(
        "WIRE-5-3",
        "malformed_frames",
        ctx.counter("malformed_frames")? - before_f,
        3,
    )?;
    check_eq(
        "WIRE-6.1-3",
        "malformed_txns",
        ctx.counter("malformed_txns")? - before_t,
        2,
    )
}

pub(super) fn requester_bad_responses(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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
    let (u0, b0) = (
        ctx.counter("unknown_responses")?,
        ctx.counter("bad_responses")?,
    );
    // An undefined response opcode with the load's tag; a LOAD_RESP with hlen 3; a LOAD_RESP
    // OK without data; a LOAD_RESP refused with data.
    answer(
        ctx,
        port,
        2,
        &[
            resp(0xA0, st::OK, tag, &[]),
            raw(0x81, st::OK, tag, 3, &[0; 4], &[1, 2, 3, 4]),
            resp(0x81, st::OK, tag, &[]),
            resp(0x81, st::OUT_OF_RANGE, tag, &[1, 2, 3, 4]),
        ],
    )?;
    seen.run(ctx, ports, 10_000, |_| false)?;
    check(
        seen.done.is_empty(),
        "EP-10-2",
        "no completion from unknown or bad responses",
        || format!("{:?}", seen.done),
    )?;
    check_eq(
        "WIRE-6.1-7",
        "unknown_responses",
        ctx.counter("unknown_responses")? - u0,
        1,
    )?;
    check_eq(
        "WIRE-6.1-9",
        "bad_responses",
        ctx.counter("bad_responses")? - b0,
        3,
    )?;
    answer(ctx, port, 2, &[resp(0x81, st::OK, tag, &[1, 2, 3, 4])])?;
    seen.run(ctx, ports, 10_000, |s| !s.done.is_empty())?;
    check(
        seen.done.len() == 1
            && seen.done[0].status == "OK"
            && seen.done[0].data == Some(vec![1, 2, 3, 4]),
        "TXN-3-1",
        "the load completes OK on its good response",
        || format!("{:?}", seen.done),
    )
}

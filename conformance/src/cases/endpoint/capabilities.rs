//! Capabilities (endpoint.md §11; classes.md §2-§3): what an endpoint without RDMA, atomics,
//! shared memory or packing does, and what it announces; reset and identity (endpoint.md §12).
//! The `EPT-CAP-*` and `EPT-ID-*` cases.

use crate::case::{Stop, check, check_eq};
use crate::cases::common::{Frm, RAW_NONCE, init, raw_init, take_sent};
use crate::cases::endpoint::common::{
    DUT, G, SH, Seen, atomic, check_resp, ep_up, expect_mem, issue, le, load, mem_write,
    one_response, op, parse_payload, pattern, raw, rdma_read, rdma_write, send, st, store,
};
use crate::ctx::Ctx;
use crate::device::{LsOp, Space};
use ethlink_protocol::{InitRepr, Role as WireRole};

pub(super) fn identity_and_reset(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    send(ctx, 0, 0, &[load(0x1301, 0, G.2, G.0, 4)])?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 30_000, |s| !s.txns.is_empty())?;
    let want = [0x02, 0x00, (DUT >> 8) as u8, DUT as u8, 0, 0];
    for l in ctx.log().iter().filter(|l| l.from_dut && l.port == 0) {
        check(
            l.bytes.get(6..12) == Some(&want[..]),
            "EP-12-4",
            "source MAC 02:00:00:05:00:00 on port 0",
            || format!("frame at {} ns from {:02x?}", l.time_ns, l.bytes.get(6..12)),
        )?;
    }
    check(
        ctx.counter("requests_served")? == 1,
        "EP-10-1",
        "requests_served 1",
        || "other".into(),
    )?;
    ctx.reset(&crate::device::Setup {
        gpu: Some(DUT),
        ..crate::cases::common::setup(Default::default())
    })?;
    let nonzero: Vec<(String, u64)> = ctx
        .counters()?
        .into_iter()
        .filter(|(_, v)| *v != 0)
        .collect();
    check(
        nonzero.is_empty(),
        "EP-12-1",
        "every counter zero after a reset",
        || format!("{nonzero:?}"),
    )
}

pub(super) fn init_at_physical_up(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ctx.reset(&crate::device::Setup {
        gpu: Some(DUT),
        ..crate::cases::common::setup(Default::default())
    })?;
    // The harness's reset has no quiet time (EP-13-14): the port is in INIT from the instant its
    // physical link is up, and an INIT arriving at that same nanosecond is answered.
    let at = ctx.now();
    ctx.request(&crate::device::Request::PhysicalUp { port: 0 })?;
    let peer = InitRepr {
        role: WireRole::Switch,
        ..raw_init(ctx, RAW_NONCE)
    };
    ctx.inject(0, &init(peer))?;
    ctx.run_for(2_000)?;
    let echoes: Vec<(u64, u32)> = take_sent(ctx)
        .iter()
        .filter_map(|s| match s.frame {
            Frm::InitEcho(e, _) => Some((s.time, e)),
            _ => None,
        })
        .collect();
    //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
    //= type=test
    //# EP-13-14 (§12) The reset of §12 is the endpoint's own. A conformance harness's `reset`
    //# (docs/conformance.md §3.3) is not this reset: it builds a fresh device, with every port
    //# physically down and no quiet time, and nothing of one case reaches the next.
    check(
        echoes.iter().any(|(_, e)| *e == RAW_NONCE),
        "LINK-2-2",
        format!(
            "an INIT_ECHO with echo nonce {RAW_NONCE:#x} for the INIT that arrived at {at} ns, \
             the instant port 0's physical link came up after the harness's reset (no quiet \
             time, EP-13-14): the port is in INIT, not OFF"
        ),
        || format!("INIT_ECHOes within 2 us (time, echo nonce): {echoes:x?}"),
    )
}

fn lacking(ctx: &Ctx<'_>, cap: &str) -> Result<(), Stop> {
    if ctx.has_cap(cap) {
        Err(Stop::Unsupported(format!(
            "the device declares {cap}: the case is for an endpoint without it"
        )))
    } else {
        Ok(())
    }
}

pub(super) fn cap_no_rdma(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    lacking(ctx, "rdma")?;
    ep_up(ctx, 1)?;
    let a = G.0 + 0xC00;
    let guard = pattern(512, 0x12);
    mem_write(ctx, Space::Global, a, &guard)?;
    let d = pattern(512, 0x13);
    send(
        ctx,
        0,
        1,
        &[rdma_write(0x0C01, 0, G.2, a, 256, 512, &d[256..])],
    )?;
    send(
        ctx,
        0,
        1,
        &[rdma_write(0x0C01, 0, G.2, a, 0, 512, &d[..256])],
    )?;
    send(ctx, 0, 1, &[rdma_read(0x0C02, 0, G.2, a, 512)])?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 30_000, |s| s.txns.len() >= 2)?;
    seen.run(ctx, 1, 10_000, |_| false)?;
    let t = one_response(&seen, 0x0C01, "an RDMA write at an endpoint without RDMA")?;
    check_resp(t, op::RDMA_COMPLETION, st::UNSUPPORTED, &[], "EP-11-2")?;
    let t = one_response(&seen, 0x0C02, "an RDMA_READ at an endpoint without RDMA")?;
    check_resp(t, op::RDMA_READ_RESP, st::UNSUPPORTED, &[], "EP-11-2")?;
    expect_mem(
        ctx,
        "EP-11-2",
        Space::Global,
        a,
        &guard,
        "an endpoint without RDMA writes nothing",
    )
}

pub(super) fn cap_no_atomics(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    lacking(ctx, "atomics")?;
    ep_up(ctx, 1)?;
    let a = G.0 + 0xD00;
    let guard = pattern(16, 0x14);
    mem_write(ctx, Space::Global, a, &guard)?;
    let reqs = [
        (0x0D01, atomic(op::FADD, 0x0D01, G.2, a, &le(1, 8)), 0x83),
        (
            0x0D02,
            atomic(op::SWAP, 0x0D02, G.2, a + 8, &le(1, 4)),
            0x84,
        ),
        (
            0x0D03,
            atomic(
                op::CAS,
                0x0D03,
                G.2,
                a,
                &[guard[..8].to_vec(), le(1, 8)].concat(),
            ),
            0x85,
        ),
        (
            0x0D04,
            atomic(op::FADD, 0x0D04, G.2, a + 1, &le(1, 4)),
            0x83,
        ),
    ];
    send(
        ctx,
        0,
        0,
        &reqs.iter().map(|r| r.1.clone()).collect::<Vec<_>>(),
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 30_000, |s| s.txns.len() >= reqs.len())?;
    for (tag, _, opcode) in &reqs {
        let t = one_response(&seen, *tag, "an atomic at an endpoint without ATOMICS")?;
        check_resp(t, *opcode, st::UNSUPPORTED, &[], "EP-11-3")?;
    }
    expect_mem(
        ctx,
        "EP-11-3",
        Space::Global,
        a,
        &guard,
        "an endpoint without ATOMICS changes nothing",
    )
}

pub(super) fn cap_no_shared(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    lacking(ctx, "shared")?;
    ep_up(ctx, 1)?;
    send(
        ctx,
        0,
        0,
        &[
            load(0x0E01, 1, SH.2, SH.0, 4),
            store(0x0E02, 1, SH.2, SH.0, &[1, 2, 3, 4]),
        ],
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 30_000, |s| s.txns.len() >= 2)?;
    let t = one_response(&seen, 0x0E01, "a LOAD of shared memory")?;
    check_resp(t, 0x81, st::UNSUPPORTED, &[], "EP-11-4")?;
    let t = one_response(&seen, 0x0E02, "a STORE to shared memory")?;
    check_resp(t, 0x82, st::UNSUPPORTED, &[], "EP-11-4")?;
    // An atomic, an RDMA write of two segments and an RDMA_READ of shared memory: each
    // answered once, UNSUPPORTED (an endpoint without ATOMICS or RDMA answers the same).
    let ext = crate::cases::endpoint::common::mem_ext(SH.2, SH.0);
    send(ctx, 0, 0, &[raw(op::FADD, 1, 0x0E03, 5, &ext, &le(1, 8))])?;
    let d = pattern(512, 0x0E);
    send(
        ctx,
        0,
        1,
        &[rdma_write(0x0E04, 1, SH.2, SH.0, 0, 512, &d[..256])],
    )?;
    send(
        ctx,
        0,
        1,
        &[rdma_write(0x0E04, 1, SH.2, SH.0, 256, 512, &d[256..])],
    )?;
    send(ctx, 0, 1, &[rdma_read(0x0E05, 1, SH.2, SH.0, 512)])?;
    seen.run(ctx, 1, 30_000, |s| s.txns.len() >= 5)?;
    seen.run(ctx, 1, 10_000, |_| false)?;
    let t = one_response(&seen, 0x0E03, "an atomic on shared memory")?;
    check_resp(t, 0x83, st::UNSUPPORTED, &[], "EP-11-4")?;
    let t = one_response(&seen, 0x0E04, "an RDMA write to shared memory")?;
    check_resp(t, op::RDMA_COMPLETION, st::UNSUPPORTED, &[], "EP-11-4")?;
    let t = one_response(&seen, 0x0E05, "an RDMA_READ of shared memory")?;
    check_resp(t, op::RDMA_READ_RESP, st::UNSUPPORTED, &[], "EP-11-4")
}

pub(super) fn cap_no_packing(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    lacking(ctx, "packing")?;
    ep_up(ctx, 1)?;
    let from = ctx.log().len();
    for i in 0..16u64 {
        issue(
            ctx,
            Space::Global,
            0x77,
            0x100 * i,
            LsOp::Load { len: 4 },
            Some(3),
        )?;
    }
    // And answers to requests of the harness, many in one frame.
    send(
        ctx,
        0,
        0,
        &(0..16u16)
            .map(|i| load(0x0F00 + i, 0, G.2, G.0 + 4 * u64::from(i), 4))
            .collect::<Vec<_>>(),
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| s.txns.len() >= 32)?;
    check_eq("EP-11-5", "transactions seen", seen.txns.len(), 32)?;
    let counts: Vec<u8> = ctx.log()[from..]
        .iter()
        .filter(|l| l.from_dut)
        .filter_map(|l| match crate::cases::common::kind_of(&l.bytes) {
            Some(crate::cases::common::Kind::Data(_)) => {
                let b = &l.bytes;
                let at = if b.get(12..14) == Some(&[0x81, 0x00]) {
                    18
                } else {
                    14
                } + 6;
                b.get(at + 5).copied()
            }
            _ => None,
        })
        .collect();
    check(
        counts.iter().all(|c| *c == 1),
        "CLS-3-1",
        "one transaction in every DATA frame",
        || format!("transaction counts {counts:?}"),
    )?;
    let _ = parse_payload;
    Ok(())
}

pub(super) fn cap_announced(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 2)?;
    let bits = ctx
        .desc
        .caps
        .iter()
        .filter_map(|n| ethlink_protocol::Capabilities::from_name(n))
        .fold(0u16, |b, c| b | c.bits());
    let mut seen_any = false;
    for l in ctx.log().iter().filter(|l| l.from_dut) {
        let b = &l.bytes;
        let eth = if b.get(12..14) == Some(&[0x81, 0x00]) {
            18
        } else {
            14
        };
        let Some(kind) = b.get(eth).map(|k| k & 0x0F) else {
            continue;
        };
        if kind != 5 && kind != 6 {
            continue;
        }
        seen_any = true;
        let body = eth + 6;
        let field = b
            .get(body + 14..body + 16)
            .map(|f| u16::from_be_bytes([f[0], f[1]]))
            .unwrap_or(0);
        check(
            field >> 14 == 1,
            "CLS-2-1",
            "role 1 (endpoint) in every INIT and INIT_ECHO",
            || format!("port {} capability field {field:#06x}", l.port),
        )?;
        check(
            field & 0x3F == bits,
            "CLS-2-2",
            format!("capability bits {bits:#04x}, those declared"),
            || format!("port {} capability field {field:#06x}", l.port),
        )?;
    }
    check(seen_any, "EP-11-1", "INIT frames from the device", || {
        "none".into()
    })?;
    for l in ctx.log().iter().filter(|l| l.from_dut) {
        let b = &l.bytes;
        if !ctx.has_cap("tagged") {
            check(
                b.get(12..14) != Some(&[0x81, 0x00]),
                "CLS-3-2",
                "no 802.1Q tag without TAGGED",
                || format!("port {} frame at {} ns", l.port, l.time_ns),
            )?;
        }
        if !ctx.has_cap("cut_through") && b.len() > 4 {
            let fcs = ethlink_protocol::fcs::fcs_bytes(&b[..b.len() - 4]);
            check(
                b[b.len() - 4..] == fcs,
                "CLS-3-3",
                "a good FCS on every frame without CUT_THROUGH",
                || format!("port {} frame at {} ns", l.port, l.time_ns),
            )?;
        }
    }
    Ok(())
}

//! The target's responses held back (endpoint.md §8): the response backlog (EP-8-4, EP-3-3,
//! EP-8-8) and a response no port takes for `op_timeout` (EP-8-5). The `EPT-BACK-*` and
//! `EPT-HELD-*` cases.

use super::{check_loads, few_credits, port_down, send_loads, setup_ep, short_deadline};
use crate::case::{Stop, check, check_eq};
use crate::cases::common::peer_config;
use crate::cases::endpoint::common::{
    G, Seen, Txn, check_resp, ep_up_with, expect_mem, mem_write, one_response, pattern, send, st,
    store,
};
use crate::ctx::Ctx;
use crate::device::{EndpointParams, Space};

pub(super) fn response_backlog(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

pub(super) fn held_past_hold_max(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

pub(super) fn held_response_expires(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

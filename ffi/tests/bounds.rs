//! The bounds of the ABI a hostile caller meets: time after the horizon (link.md LINK-1-3) and
//! polls at it (LINK-1-2), fences and completions an endpoint holds (endpoint.md EP-5-9,
//! EP-5-10), and a group address as a link end's own (wire.md WIRE-2.3-1). Every poll loop has a
//! cap: a poll that never ran dry fails the test instead of hanging it.
#![allow(unsafe_code)]

use ethlink_ffi::*;

mod common;

use common::{blank_event, ep_cfg, last_error, link_cfg, ls_load, new_ctx, sw_cfg};

/// 2^63 - 1, `ETHLINK_TIME_MAX_NS`.
const TIME_MAX: u64 = 9_223_372_036_854_775_807;
/// Polls a loop makes at most before it counts as one that never runs dry.
const CAP: usize = 1_000;

/// Asserts that `code` is `want` and that the last error contains every word of `words`.
#[track_caller]
fn expect(ctx: *mut Ctx, code: i32, want: i32, words: &[&str]) {
    let text = last_error(ctx);
    assert_eq!(code, want, "{text}");
    for w in words {
        assert!(text.contains(w), "{text:?} does not contain {w:?}");
    }
}

/// A link end, an endpoint and a switch of `ctx`, with their names.
fn devices(ctx: *mut Ctx) -> [(&'static str, u32); 3] {
    let (mut le, mut ep, mut sw) = (0, 0, 0);
    assert_eq!(ethlink_link_end_new(ctx, &link_cfg(), &mut le), ETHLINK_OK);
    assert_eq!(ethlink_endpoint_new(ctx, &ep_cfg(1), &mut ep), ETHLINK_OK);
    assert_eq!(ethlink_switch_new(ctx, &sw_cfg(2), &mut sw), ETHLINK_OK);
    [("link end", le), ("endpoint", ep), ("switch", sw)]
}

fn rdma_write() -> RdmaDesc {
    RdmaDesc {
        write: 1,
        local_space: ETHLINK_SPACE_GLOBAL,
        space: ETHLINK_SPACE_GLOBAL,
        dst: 1,
        key: 7,
        local_addr: 0,
        addr: 0x1000,
        len: 256,
    }
}

/// Polls `h` for frames at `now` until NONE; returns how many came, or panics after [`CAP`].
fn drain(ctx: *mut Ctx, h: u32, now: u64, what: &str) -> usize {
    let mut buf = vec![0u8; 9216];
    let (mut port, mut len) = (0u16, 0usize);
    for n in 0..CAP {
        match ethlink_poll_transmit(
            ctx,
            h,
            now,
            &mut port,
            buf.as_mut_ptr(),
            buf.len(),
            &mut len,
        ) {
            ETHLINK_NONE => return n,
            ETHLINK_OK => {}
            code => panic!(
                "{what}: poll_transmit at {now} returned {code}: {}",
                last_error(ctx)
            ),
        }
    }
    panic!("{what}: poll_transmit at {now} gave {CAP} frames and never ETHLINK_NONE");
}

/// Every call that takes a time refuses one after the horizon, names it and the horizon, and
/// changes nothing: the device's time stays where it was.
//= type=test
//# LINK-1-3 An end MUST NOT take a time later than the horizon as its current time. An
//# interface that can refuse an input refuses such a time, naming it and the horizon
#[test]
fn every_call_that_takes_a_time_refuses_one_after_the_horizon() {
    let ctx = new_ctx();
    let frame = [0u8; 64];
    let mut buf = vec![0u8; 9216];
    for (what, h) in devices(ctx) {
        for t in [TIME_MAX + 1, u64::MAX] {
            let words = [
                t.to_string(),
                TIME_MAX.to_string(),
                "ETHLINK_TIME_MAX_NS".into(),
            ];
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            let (mut port, mut len) = (0u16, 0usize);
            let code = ethlink_physical(ctx, h, 0, 1, t);
            expect(ctx, code, ETHLINK_ERR_ARGUMENT, &words);
            expect(
                ctx,
                code,
                ETHLINK_ERR_ARGUMENT,
                &["ethlink_physical: now_ns"],
            );
            let code = ethlink_handle_frame(ctx, h, 0, t, frame.as_ptr(), frame.len());
            expect(ctx, code, ETHLINK_ERR_ARGUMENT, &words);
            expect(
                ctx,
                code,
                ETHLINK_ERR_ARGUMENT,
                &["ethlink_handle_frame: now_ns"],
            );
            let code =
                ethlink_poll_transmit(ctx, h, t, &mut port, buf.as_mut_ptr(), buf.len(), &mut len);
            expect(ctx, code, ETHLINK_ERR_ARGUMENT, &words);
            expect(
                ctx,
                code,
                ETHLINK_ERR_ARGUMENT,
                &["ethlink_poll_transmit: now_ns"],
            );
            let code = ethlink_handle_timeout(ctx, h, t);
            expect(ctx, code, ETHLINK_ERR_ARGUMENT, &words);
            expect(
                ctx,
                code,
                ETHLINK_ERR_ARGUMENT,
                &["ethlink_handle_timeout: now_ns"],
            );
        }
        // Time 0 is still the present: nothing moved it.
        assert_eq!(ethlink_handle_timeout(ctx, h, 0), ETHLINK_OK, "{what}");
        assert_eq!(ethlink_physical(ctx, h, 0, 1, 0), ETHLINK_OK, "{what}");
    }
    let [_, (_, ep), _] = devices(ctx);
    let (mut tag, mut id) = (0u16, 0u64);
    expect(
        ctx,
        ethlink_endpoint_issue(ctx, ep, u64::MAX, &ls_load(), &mut tag),
        ETHLINK_ERR_ARGUMENT,
        &["ethlink_endpoint_issue", "now_ns = 18446744073709551615"],
    );
    expect(
        ctx,
        ethlink_endpoint_post(ctx, ep, u64::MAX, &rdma_write(), &mut id),
        ETHLINK_ERR_ARGUMENT,
        &["ethlink_endpoint_post", "now_ns = 18446744073709551615"],
    );
    expect(
        ctx,
        ethlink_endpoint_fence(ctx, ep, u64::MAX, &mut id),
        ETHLINK_ERR_ARGUMENT,
        &["ethlink_endpoint_fence", "now_ns = 18446744073709551615"],
    );
    assert_eq!(ethlink_endpoint_fence(ctx, ep, 0, &mut id), ETHLINK_OK);
    ethlink_ctx_free(ctx);
}

/// At the horizon every role sends what is due once, then ETHLINK_NONE, and reports no
/// deadline: the next one lies after the horizon.
//= type=test
//# LINK-1-2 An end MUST run every timer of Table LINK-T2 at every time up to and including the
//# horizon as it does near the origin: an expiry is acted on once, and a timer restarted is
//# restarted for its whole period, even when that period ends beyond the horizon (such a
//# deadline is never reached).
#[test]
fn at_the_horizon_every_role_runs_dry_and_reports_no_deadline() {
    let ctx = new_ctx();
    for (what, h) in devices(ctx) {
        for p in 0..2u16 {
            let code = ethlink_physical(ctx, h, p, 1, TIME_MAX);
            // The link end has one port, the endpoint of this test one.
            assert!(
                code == ETHLINK_OK || (p == 1 && what != "switch"),
                "{what} {p}"
            );
        }
        let first = drain(ctx, h, TIME_MAX, what);
        let ports = if what == "switch" { 2 } else { 1 };
        assert_eq!(first, ports, "{what}: one INIT per port");
        for _ in 0..3 {
            assert_eq!(ethlink_handle_timeout(ctx, h, TIME_MAX), ETHLINK_OK);
            assert_eq!(drain(ctx, h, TIME_MAX, what), 0, "{what}");
        }
        let mut d = 0u64;
        assert_eq!(
            ethlink_poll_timeout(ctx, h, &mut d),
            ETHLINK_NONE,
            "{what}: {d}"
        );
    }
    ethlink_ctx_free(ctx);
}

/// Fences beyond the bound are refused; so is every new operation while the completions not
/// taken fill theirs. What was accepted still completes.
//= type=test
//# EP-5-9 While `max_fences` fences are outstanding, a fence MUST be refused with an error that
//# says so, and nothing of it recorded: the GPU takes completions and tries again.
//= type=test
//# EP-5-10 While `lsu_tags + rdma_queue + max_fences` completions wait to be taken by the GPU,
//# an endpoint MUST refuse every new operation (issue, post, fence) with an error that says so,
//# and record nothing of it.
#[test]
fn an_endpoint_refuses_fences_and_operations_beyond_its_bounds() {
    let ctx = new_ctx();
    let mut h = 0;
    assert_eq!(ethlink_endpoint_new(ctx, &ep_cfg(1), &mut h), ETHLINK_OK);
    // No port is up: the load waits for a path, and every fence behind it.
    let (mut tag, mut id) = (0u16, 0u64);
    assert_eq!(
        ethlink_endpoint_issue(ctx, h, 0, &ls_load(), &mut tag),
        ETHLINK_OK
    );
    let mut accepted = 0usize;
    for _ in 0..100_000 {
        match ethlink_endpoint_fence(ctx, h, 0, &mut id) {
            ETHLINK_OK => accepted += 1,
            code => {
                expect(
                    ctx,
                    code,
                    ETHLINK_ERR_REFUSED,
                    &["ethlink_endpoint_fence", "1024 fences are outstanding"],
                );
                break;
            }
        }
    }
    assert_eq!(accepted, 1024, "max_fences of the default configuration");
    // The load ends without a path at its deadline, and the fences with it.
    let mut now = 0;
    let mut d = 0u64;
    while ethlink_poll_timeout(ctx, h, &mut d) == ETHLINK_OK && d <= 10_000_000 {
        now = d.max(now);
        assert_eq!(ethlink_handle_timeout(ctx, h, now), ETHLINK_OK);
    }
    // 1025 completions wait; the bound is lsu_tags + rdma_queue + max_fences = 2112.
    let mut more = 0;
    while ethlink_endpoint_fence(ctx, h, now, &mut id) == ETHLINK_OK {
        more += 1;
        assert!(more <= 2112, "fences beyond the bound of completions");
    }
    assert_eq!(1025 + more, 2112);
    expect(
        ctx,
        ethlink_endpoint_fence(ctx, h, now, &mut id),
        ETHLINK_ERR_REFUSED,
        &["2112 completions wait to be taken"],
    );
    expect(
        ctx,
        ethlink_endpoint_issue(ctx, h, now, &ls_load(), &mut tag),
        ETHLINK_ERR_REFUSED,
        &["ethlink_endpoint_issue: issue: 2112 completions wait to be taken"],
    );
    expect(
        ctx,
        ethlink_endpoint_post(ctx, h, now, &rdma_write(), &mut id),
        ETHLINK_ERR_REFUSED,
        &["ethlink_endpoint_post: post: 2112 completions wait to be taken"],
    );
    // Every completion comes out, the load's first; then there is room again.
    let mut e = blank_event();
    let mut data = vec![0u8; 9216];
    let mut ops = Vec::new();
    while ethlink_poll_event(ctx, h, &mut e, data.as_mut_ptr(), data.len()) == ETHLINK_OK {
        if e.kind == ETHLINK_EVENT_COMPLETION {
            ops.push((e.op, e.status));
        }
        assert!(ops.len() <= 2112);
    }
    assert_eq!(ops.len(), 2112);
    assert_eq!(ops[0], (ETHLINK_OP_LS, ETHLINK_STATUS_NO_PATH));
    assert!(
        ops[1..]
            .iter()
            .all(|&o| o == (ETHLINK_OP_FENCE, ETHLINK_STATUS_OK))
    );
    assert_eq!(ethlink_endpoint_fence(ctx, h, now, &mut id), ETHLINK_OK);
    ethlink_ctx_free(ctx);
}

/// A group address is refused as a link end's own, with the field and the address named.
//= type=test
//# WIRE-2.3-1 The source MAC address MUST be the transmitting port's own unicast address.
#[test]
fn a_group_address_is_refused_as_a_link_ends_own() {
    let ctx = new_ctx();
    let mut h = 0u32;
    for mac in [
        [0x01, 0x00, 0x5e, 0, 0, 1],
        [0x03, 0, 0, 0, 0, 1],
        [0xff; 6],
    ] {
        let cfg = LinkEndConfig { mac, ..link_cfg() };
        let shown = format!(
            "cfg->mac = {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]
        );
        expect(
            ctx,
            ethlink_link_end_new(ctx, &cfg, &mut h),
            ETHLINK_ERR_ARGUMENT,
            &["ethlink_link_end_new", &shown, "unicast"],
        );
    }
    let cfg = LinkEndConfig {
        mac: [0x02, 0, 0, 0, 0, 1],
        ..link_cfg()
    };
    assert_eq!(ethlink_link_end_new(ctx, &cfg, &mut h), ETHLINK_OK);
    ethlink_ctx_free(ctx);
}

#[test]
fn an_endpoint_refuses_poison_beyond_its_ranges_kept_apart() {
    let ctx = new_ctx();
    let mut h = 0;
    assert_eq!(ethlink_endpoint_new(ctx, &ep_cfg(1), &mut h), ETHLINK_OK);
    let g = ETHLINK_SPACE_GLOBAL;
    for i in 0..65_536u64 {
        assert_eq!(ethlink_endpoint_poison(ctx, h, g, 128 * i, 1), ETHLINK_OK);
    }
    expect(
        ctx,
        ethlink_endpoint_poison(ctx, h, g, 1 << 30, 1),
        ETHLINK_ERR_REFUSED,
        &[
            "ethlink_endpoint_poison",
            "65536 poisoned ranges apart already",
        ],
    );
    // Poison that touches a range merges with it, and is taken.
    assert_eq!(ethlink_endpoint_poison(ctx, h, g, 1, 1), ETHLINK_OK);
    ethlink_ctx_free(ctx);
}

//! Every error code of the ABI, provoked through the exported functions: NULL for every pointer
//! parameter of every function, destroyed and foreign handles, short buffers followed by a retry
//! that succeeds, bad enumeration values, time going backwards, calls for another role, and
//! refusals. Each check also reads `ethlink_last_error` and looks for the words that name the
//! problem. (ETHLINK_ERR_PANIC cannot be provoked from outside: the unit test in src/api.rs
//! checks it.)
#![allow(unsafe_code)]

use core::ffi::{CStr, c_char};
use core::ptr::{null, null_mut};

use ethlink_ffi::*;

mod common;

use common::{blank_event, ep_cfg, last_error, link_cfg, ls_load, new_ctx, sw_cfg};

/// The string `ethlink_code_name` returned.
fn code_name(code: i32) -> String {
    let p = ethlink_code_name(code);
    assert!(!p.is_null());
    // SAFETY: the library returns a pointer to one of its static NUL-terminated strings.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .expect("ASCII")
        .to_owned()
}

/// Asserts that `code` is `want` and that the last error of `ctx` contains every word of
/// `words`.
#[track_caller]
fn expect(ctx: *mut Ctx, code: i32, want: i32, words: &[&str]) {
    assert_eq!(
        code,
        want,
        "got {}, want {}",
        code_name(code),
        code_name(want)
    );
    let text = last_error(ctx);
    for w in words {
        assert!(text.contains(w), "{text:?} does not contain {w:?}");
    }
}

fn code_name_str(code: i32) -> &'static str {
    match code {
        ETHLINK_OK => "ETHLINK_OK",
        ETHLINK_NONE => "ETHLINK_NONE",
        ETHLINK_ERR_NULL_POINTER => "ETHLINK_ERR_NULL_POINTER",
        ETHLINK_ERR_HANDLE => "ETHLINK_ERR_HANDLE",
        ETHLINK_ERR_ARGUMENT => "ETHLINK_ERR_ARGUMENT",
        ETHLINK_ERR_BUFFER_TOO_SMALL => "ETHLINK_ERR_BUFFER_TOO_SMALL",
        ETHLINK_ERR_TIME_BACKWARDS => "ETHLINK_ERR_TIME_BACKWARDS",
        ETHLINK_ERR_REFUSED => "ETHLINK_ERR_REFUSED",
        ETHLINK_ERR_WRONG_ROLE => "ETHLINK_ERR_WRONG_ROLE",
        ETHLINK_ERR_PANIC => "ETHLINK_ERR_PANIC",
        _ => "ETHLINK_UNKNOWN_CODE",
    }
}

fn link_end(ctx: *mut Ctx, cfg: &LinkEndConfig) -> u32 {
    let mut h = 0;
    assert_eq!(ethlink_link_end_new(ctx, cfg, &mut h), ETHLINK_OK);
    h
}

fn endpoint(ctx: *mut Ctx, cfg: &EndpointConfig) -> u32 {
    let mut h = 0;
    assert_eq!(ethlink_endpoint_new(ctx, cfg, &mut h), ETHLINK_OK);
    h
}

fn switch(ctx: *mut Ctx) -> u32 {
    let mut h = 0;
    assert_eq!(ethlink_switch_new(ctx, &sw_cfg(4), &mut h), ETHLINK_OK);
    h
}

/// A valid link payload: the 8-byte network header, then `body` bytes.
fn payload(body: usize, fill: u8) -> Vec<u8> {
    let mut p = vec![fill; 8 + body];
    p[0..2].copy_from_slice(&1u16.to_be_bytes());
    p[2..4].copy_from_slice(&0u16.to_be_bytes());
    p[4] = 0;
    p[5] = 1;
    p[6..8].copy_from_slice(&(body as u16).to_be_bytes());
    p
}

fn rdma_read() -> RdmaDesc {
    RdmaDesc {
        write: 0,
        local_space: ETHLINK_SPACE_GLOBAL,
        space: ETHLINK_SPACE_GLOBAL,
        dst: 1,
        key: 7,
        local_addr: 0,
        addr: 0x1000,
        len: 256,
    }
}

#[test]
fn the_version_and_the_code_names() {
    assert_eq!(ethlink_abi_version(), ETHLINK_ABI_VERSION);
    for code in [
        ETHLINK_OK,
        ETHLINK_NONE,
        ETHLINK_ERR_NULL_POINTER,
        ETHLINK_ERR_HANDLE,
        ETHLINK_ERR_ARGUMENT,
        ETHLINK_ERR_BUFFER_TOO_SMALL,
        ETHLINK_ERR_TIME_BACKWARDS,
        ETHLINK_ERR_REFUSED,
        ETHLINK_ERR_WRONG_ROLE,
        ETHLINK_ERR_PANIC,
        42,
    ] {
        assert_eq!(code_name(code), code_name_str(code));
    }
}

#[test]
fn null_contexts_and_null_out_pointers_of_the_context_calls() {
    assert_eq!(ethlink_ctx_new(null_mut()), ETHLINK_ERR_NULL_POINTER);
    ethlink_ctx_free(null_mut());
    let mut len = 0usize;
    let mut buf = [0 as c_char; 8];
    assert_eq!(
        ethlink_last_error(null_mut(), buf.as_mut_ptr(), 8, &mut len),
        ETHLINK_ERR_NULL_POINTER
    );
    let ctx = new_ctx();
    assert_eq!(
        ethlink_last_error(ctx, buf.as_mut_ptr(), 8, null_mut()),
        ETHLINK_ERR_NULL_POINTER
    );
    assert_eq!(
        ethlink_last_error(ctx, null_mut(), 8, &mut len),
        ETHLINK_ERR_NULL_POINTER
    );
    // No error yet: the text is empty.
    assert_eq!(
        ethlink_last_error(ctx, null_mut(), 0, &mut len),
        ETHLINK_ERR_BUFFER_TOO_SMALL
    );
    assert_eq!(len, 0);
    assert_eq!(
        ethlink_last_error(ctx, buf.as_mut_ptr(), 1, &mut len),
        ETHLINK_OK
    );
    assert_eq!(buf[0], 0);
    assert_eq!(
        ethlink_link_end_config_default(null_mut()),
        ETHLINK_ERR_NULL_POINTER
    );
    assert_eq!(
        ethlink_endpoint_config_default(null_mut()),
        ETHLINK_ERR_NULL_POINTER
    );
    assert_eq!(
        ethlink_switch_config_default(null_mut()),
        ETHLINK_ERR_NULL_POINTER
    );
    ethlink_ctx_free(ctx);
}

#[test]
fn the_last_error_is_truncated_into_a_short_buffer_and_read_whole_on_retry() {
    let ctx = new_ctx();
    let h = link_end(ctx, &link_cfg());
    assert_eq!(ethlink_physical(ctx, h, 0, 7, 0), ETHLINK_ERR_ARGUMENT);
    let whole = last_error(ctx);
    let mut len = 0usize;
    let mut small = [0x55 as c_char; 10];
    assert_eq!(
        ethlink_last_error(ctx, small.as_mut_ptr(), small.len(), &mut len),
        ETHLINK_ERR_BUFFER_TOO_SMALL
    );
    assert_eq!(len, whole.len());
    let got: Vec<u8> = small[..9].iter().map(|&b| b as u8).collect();
    assert_eq!(got, whole.as_bytes()[..9]);
    assert_eq!(small[9], 0, "NUL-terminated");
    let mut big = vec![0 as c_char; len + 1];
    assert_eq!(
        ethlink_last_error(ctx, big.as_mut_ptr(), big.len(), &mut len),
        ETHLINK_OK
    );
    assert_eq!(big[len], 0);
    // Reading the text does not change it.
    assert_eq!(last_error(ctx), whole);
    assert!(
        whole.contains("ethlink_physical") && whole.contains("up = 7"),
        "{whole}"
    );
    ethlink_ctx_free(ctx);
}

#[test]
fn device_creation_checks_its_pointers_and_its_configuration() {
    let ctx = new_ctx();
    let mut h = 0u32;
    let le = link_cfg();
    let ep = ep_cfg(2);
    let sw = sw_cfg(4);
    assert_eq!(
        ethlink_link_end_new(null_mut(), &le, &mut h),
        ETHLINK_ERR_NULL_POINTER
    );
    expect(
        ctx,
        ethlink_link_end_new(ctx, null(), &mut h),
        ETHLINK_ERR_NULL_POINTER,
        &["cfg"],
    );
    expect(
        ctx,
        ethlink_link_end_new(ctx, &le, null_mut()),
        ETHLINK_ERR_NULL_POINTER,
        &["out"],
    );
    assert_eq!(
        ethlink_endpoint_new(null_mut(), &ep, &mut h),
        ETHLINK_ERR_NULL_POINTER
    );
    expect(
        ctx,
        ethlink_endpoint_new(ctx, null(), &mut h),
        ETHLINK_ERR_NULL_POINTER,
        &["cfg"],
    );
    expect(
        ctx,
        ethlink_endpoint_new(ctx, &ep, null_mut()),
        ETHLINK_ERR_NULL_POINTER,
        &["out"],
    );
    assert_eq!(
        ethlink_switch_new(null_mut(), &sw, &mut h),
        ETHLINK_ERR_NULL_POINTER
    );
    expect(
        ctx,
        ethlink_switch_new(ctx, null(), &mut h),
        ETHLINK_ERR_NULL_POINTER,
        &["cfg"],
    );
    expect(
        ctx,
        ethlink_switch_new(ctx, &sw, null_mut()),
        ETHLINK_ERR_NULL_POINTER,
        &["out"],
    );

    let bad_vcs = LinkEndConfig {
        link: LinkParams { vcs: 9, ..le.link },
        ..le
    };
    expect(
        ctx,
        ethlink_link_end_new(ctx, &bad_vcs, &mut h),
        ETHLINK_ERR_ARGUMENT,
        &["vcs"],
    );
    let bad_caps = LinkEndConfig {
        caps: 1 << 10,
        ..le
    };
    expect(
        ctx,
        ethlink_link_end_new(ctx, &bad_caps, &mut h),
        ETHLINK_ERR_ARGUMENT,
        &["caps"],
    );
    let bad_policy = EndpointConfig { policy: 4, ..ep };
    expect(
        ctx,
        ethlink_endpoint_new(ctx, &bad_policy, &mut h),
        ETHLINK_ERR_ARGUMENT,
        &["policy"],
    );
    let bad_gpu = EndpointConfig { gpu: 0xFFFF, ..ep };
    expect(
        ctx,
        ethlink_endpoint_new(ctx, &bad_gpu, &mut h),
        ETHLINK_ERR_ARGUMENT,
        &["gpu"],
    );
    let bad_stacks = EndpointConfig { stacks: 0, ..ep };
    expect(
        ctx,
        ethlink_endpoint_new(ctx, &bad_stacks, &mut h),
        ETHLINK_ERR_ARGUMENT,
        &["stacks"],
    );
    let bad_mode = SwitchConfig { mode: 2, ..sw };
    expect(
        ctx,
        ethlink_switch_new(ctx, &bad_mode, &mut h),
        ETHLINK_ERR_ARGUMENT,
        &["mode"],
    );
    let bad_ports = SwitchConfig { ports: 0, ..sw };
    expect(
        ctx,
        ethlink_switch_new(ctx, &bad_ports, &mut h),
        ETHLINK_ERR_ARGUMENT,
        &["ports"],
    );
    let bad_rate = SwitchConfig {
        rate_gbps: f64::NAN,
        ..sw
    };
    expect(
        ctx,
        ethlink_switch_new(ctx, &bad_rate, &mut h),
        ETHLINK_ERR_ARGUMENT,
        &["rate_gbps"],
    );
    ethlink_ctx_free(ctx);
}

#[test]
fn destroyed_never_made_and_foreign_handles_are_refused() {
    let ctx = new_ctx();
    let other = new_ctx();
    let h = link_end(ctx, &link_cfg());
    let foreign = link_end(other, &link_cfg());
    let mut d = 0u64;
    assert_eq!(ethlink_poll_timeout(ctx, h, &mut d), ETHLINK_NONE);
    expect(
        ctx,
        ethlink_poll_timeout(ctx, 0, &mut d),
        ETHLINK_ERR_HANDLE,
        &["no live device"],
    );
    expect(
        ctx,
        ethlink_poll_timeout(ctx, 12345, &mut d),
        ETHLINK_ERR_HANDLE,
        &["no live device"],
    );
    expect(
        ctx,
        ethlink_poll_timeout(ctx, foreign, &mut d),
        ETHLINK_ERR_HANDLE,
        &["another context"],
    );
    assert_eq!(ethlink_destroy(null_mut(), h), ETHLINK_ERR_NULL_POINTER);
    assert_eq!(ethlink_destroy(ctx, h), ETHLINK_OK);
    expect(
        ctx,
        ethlink_destroy(ctx, h),
        ETHLINK_ERR_HANDLE,
        &["destroyed"],
    );
    expect(
        ctx,
        ethlink_poll_timeout(ctx, h, &mut d),
        ETHLINK_ERR_HANDLE,
        &["destroyed"],
    );
    let p = payload(16, 1);
    expect(
        ctx,
        ethlink_link_submit(ctx, h, 0, p.as_ptr(), p.len()),
        ETHLINK_ERR_HANDLE,
        &[],
    );
    // The slot is used again under another generation: the old handle stays dead.
    let h2 = link_end(ctx, &link_cfg());
    assert_ne!(h2, h);
    expect(
        ctx,
        ethlink_handle_timeout(ctx, h, 0),
        ETHLINK_ERR_HANDLE,
        &[],
    );
    assert_eq!(ethlink_handle_timeout(ctx, h2, 0), ETHLINK_OK);
    // The other context's device is untouched.
    assert_eq!(ethlink_poll_timeout(other, foreign, &mut d), ETHLINK_NONE);
    ethlink_ctx_free(ctx);
    ethlink_ctx_free(other);
}

#[test]
fn the_common_calls_check_every_pointer() {
    let ctx = new_ctx();
    let h = link_end(ctx, &link_cfg());
    let mut desc = Description {
        abi_version: 0,
        role: 0,
        ports: 0,
        caps: 0,
        name: [0; ETHLINK_NAME_LEN],
        tick_ns: 0,
        rate_gbps: 0,
    };
    assert_eq!(
        ethlink_describe(null_mut(), h, &mut desc),
        ETHLINK_ERR_NULL_POINTER
    );
    expect(
        ctx,
        ethlink_describe(ctx, h, null_mut()),
        ETHLINK_ERR_NULL_POINTER,
        &["out"],
    );
    assert_eq!(
        ethlink_physical(null_mut(), h, 0, 1, 0),
        ETHLINK_ERR_NULL_POINTER
    );
    let f = [0u8; 64];
    assert_eq!(
        ethlink_handle_frame(null_mut(), h, 0, 0, f.as_ptr(), f.len()),
        ETHLINK_ERR_NULL_POINTER
    );
    expect(
        ctx,
        ethlink_handle_frame(ctx, h, 0, 0, null(), 64),
        ETHLINK_ERR_NULL_POINTER,
        &["bytes"],
    );
    // An empty frame may come with NULL: the link counts and drops it.
    assert_eq!(ethlink_handle_frame(ctx, h, 0, 0, null(), 0), ETHLINK_OK);
    let (mut port, mut len) = (0u16, 0usize);
    let mut buf = [0u8; 64];
    assert_eq!(
        ethlink_poll_transmit(null_mut(), h, 0, &mut port, buf.as_mut_ptr(), 64, &mut len),
        ETHLINK_ERR_NULL_POINTER
    );
    expect(
        ctx,
        ethlink_poll_transmit(ctx, h, 0, null_mut(), buf.as_mut_ptr(), 64, &mut len),
        ETHLINK_ERR_NULL_POINTER,
        &["port"],
    );
    expect(
        ctx,
        ethlink_poll_transmit(ctx, h, 0, &mut port, null_mut(), 64, &mut len),
        ETHLINK_ERR_NULL_POINTER,
        &["buf"],
    );
    expect(
        ctx,
        ethlink_poll_transmit(ctx, h, 0, &mut port, buf.as_mut_ptr(), 64, null_mut()),
        ETHLINK_ERR_NULL_POINTER,
        &["len"],
    );
    let mut d = 0u64;
    assert_eq!(
        ethlink_poll_timeout(null_mut(), h, &mut d),
        ETHLINK_ERR_NULL_POINTER
    );
    expect(
        ctx,
        ethlink_poll_timeout(ctx, h, null_mut()),
        ETHLINK_ERR_NULL_POINTER,
        &["deadline_ns"],
    );
    assert_eq!(
        ethlink_handle_timeout(null_mut(), h, 0),
        ETHLINK_ERR_NULL_POINTER
    );
    let mut e = blank_event();
    let mut data = [0u8; 16];
    assert_eq!(
        ethlink_poll_event(null_mut(), h, &mut e, data.as_mut_ptr(), 16),
        ETHLINK_ERR_NULL_POINTER
    );
    expect(
        ctx,
        ethlink_poll_event(ctx, h, null_mut(), data.as_mut_ptr(), 16),
        ETHLINK_ERR_NULL_POINTER,
        &["event"],
    );
    expect(
        ctx,
        ethlink_poll_event(ctx, h, &mut e, null_mut(), 16),
        ETHLINK_ERR_NULL_POINTER,
        &["data"],
    );
    let mut n = 0usize;
    assert_eq!(
        ethlink_counter_count(null_mut(), h, &mut n),
        ETHLINK_ERR_NULL_POINTER
    );
    expect(
        ctx,
        ethlink_counter_count(ctx, h, null_mut()),
        ETHLINK_ERR_NULL_POINTER,
        &["count"],
    );
    assert_eq!(ethlink_counter_count(ctx, h, &mut n), ETHLINK_OK);
    let mut name = [0 as c_char; 64];
    let (mut nl, mut v) = (0usize, 0u64);
    assert_eq!(
        ethlink_counter_at(null_mut(), h, 0, name.as_mut_ptr(), 64, &mut nl, &mut v),
        ETHLINK_ERR_NULL_POINTER
    );
    expect(
        ctx,
        ethlink_counter_at(ctx, h, 0, null_mut(), 64, &mut nl, &mut v),
        ETHLINK_ERR_NULL_POINTER,
        &["name"],
    );
    expect(
        ctx,
        ethlink_counter_at(ctx, h, 0, name.as_mut_ptr(), 64, null_mut(), &mut v),
        ETHLINK_ERR_NULL_POINTER,
        &["name_len"],
    );
    expect(
        ctx,
        ethlink_counter_at(ctx, h, 0, name.as_mut_ptr(), 64, &mut nl, null_mut()),
        ETHLINK_ERR_NULL_POINTER,
        &["value"],
    );
    assert_eq!(
        ethlink_counter_get(null_mut(), h, c"rx_frames".as_ptr(), &mut v),
        ETHLINK_ERR_NULL_POINTER
    );
    expect(
        ctx,
        ethlink_counter_get(ctx, h, null(), &mut v),
        ETHLINK_ERR_NULL_POINTER,
        &["name"],
    );
    expect(
        ctx,
        ethlink_counter_get(ctx, h, c"rx_frames".as_ptr(), null_mut()),
        ETHLINK_ERR_NULL_POINTER,
        &["value"],
    );
    ethlink_ctx_free(ctx);
}

#[test]
fn bad_values_ports_and_backward_time_of_the_common_calls() {
    let ctx = new_ctx();
    let h = link_end(ctx, &link_cfg());
    expect(
        ctx,
        ethlink_physical(ctx, h, 0, 2, 0),
        ETHLINK_ERR_ARGUMENT,
        &["up = 2"],
    );
    expect(
        ctx,
        ethlink_physical(ctx, h, 1, 1, 0),
        ETHLINK_ERR_ARGUMENT,
        &["port = 1"],
    );
    let f = [0u8; 64];
    expect(
        ctx,
        ethlink_handle_frame(ctx, h, 3, 0, f.as_ptr(), f.len()),
        ETHLINK_ERR_ARGUMENT,
        &["port = 3"],
    );
    assert_eq!(ethlink_physical(ctx, h, 0, 1, 1000), ETHLINK_OK);
    expect(
        ctx,
        ethlink_physical(ctx, h, 0, 0, 999),
        ETHLINK_ERR_TIME_BACKWARDS,
        &["999", "1000"],
    );
    expect(
        ctx,
        ethlink_handle_frame(ctx, h, 0, 10, f.as_ptr(), f.len()),
        ETHLINK_ERR_TIME_BACKWARDS,
        &["backwards"],
    );
    expect(
        ctx,
        ethlink_handle_timeout(ctx, h, 5),
        ETHLINK_ERR_TIME_BACKWARDS,
        &["backwards"],
    );
    let (mut port, mut len) = (0u16, 0usize);
    let mut buf = [0u8; 64];
    expect(
        ctx,
        ethlink_poll_transmit(ctx, h, 0, &mut port, buf.as_mut_ptr(), 64, &mut len),
        ETHLINK_ERR_TIME_BACKWARDS,
        &["backwards"],
    );
    // Equal times are fine.
    assert_eq!(ethlink_handle_timeout(ctx, h, 1000), ETHLINK_OK);
    let mut v = 0u64;
    expect(
        ctx,
        ethlink_counter_get(ctx, h, c"no_such_counter".as_ptr(), &mut v),
        ETHLINK_ERR_ARGUMENT,
        &["no_such_counter"],
    );
    let mut name = [0 as c_char; 64];
    let mut nl = 0usize;
    let mut n = 0usize;
    assert_eq!(ethlink_counter_count(ctx, h, &mut n), ETHLINK_OK);
    expect(
        ctx,
        ethlink_counter_at(ctx, h, n, name.as_mut_ptr(), 64, &mut nl, &mut v),
        ETHLINK_ERR_ARGUMENT,
        &["index"],
    );
    let sw = switch(ctx);
    expect(
        ctx,
        ethlink_physical(ctx, sw, 4, 1, 0),
        ETHLINK_ERR_ARGUMENT,
        &["port = 4"],
    );
    let ep = endpoint(ctx, &ep_cfg(2));
    expect(
        ctx,
        ethlink_physical(ctx, ep, 2, 1, 0),
        ETHLINK_ERR_ARGUMENT,
        &["port = 2"],
    );
    ethlink_ctx_free(ctx);
}

#[test]
fn a_short_frame_buffer_consumes_nothing_and_the_retry_succeeds() {
    let ctx = new_ctx();
    let h = link_end(ctx, &link_cfg());
    assert_eq!(ethlink_physical(ctx, h, 0, 1, 0), ETHLINK_OK);
    let (mut port, mut len) = (9u16, 0usize);
    let mut small = [0u8; 10];
    expect(
        ctx,
        ethlink_poll_transmit(
            ctx,
            h,
            0,
            &mut port,
            small.as_mut_ptr(),
            small.len(),
            &mut len,
        ),
        ETHLINK_ERR_BUFFER_TOO_SMALL,
        &["buf", "10 bytes"],
    );
    let needed = len;
    assert!(needed > 10);
    assert_eq!(port, 0);
    // With no buffer at all, the same answer.
    assert_eq!(
        ethlink_poll_transmit(ctx, h, 0, &mut port, null_mut(), 0, &mut len),
        ETHLINK_ERR_BUFFER_TOO_SMALL
    );
    assert_eq!(len, needed);
    let mut buf = vec![0u8; needed];
    assert_eq!(
        ethlink_poll_transmit(ctx, h, 0, &mut port, buf.as_mut_ptr(), buf.len(), &mut len),
        ETHLINK_OK
    );
    assert_eq!(len, needed);
    assert_eq!(
        ethlink_poll_transmit(ctx, h, 0, &mut port, buf.as_mut_ptr(), buf.len(), &mut len),
        ETHLINK_NONE
    );
    ethlink_ctx_free(ctx);
}

#[test]
fn a_short_event_buffer_consumes_nothing_and_the_retry_succeeds() {
    let ctx = new_ctx();
    let h = link_end(ctx, &link_cfg());
    let p = payload(40, 0xAB);
    assert_eq!(
        ethlink_link_submit(ctx, h, 1, p.as_ptr(), p.len()),
        ETHLINK_OK
    );
    let mut n = 0usize;
    assert_eq!(ethlink_link_withdraw(ctx, h, &mut n), ETHLINK_OK);
    assert_eq!(n, 1);
    let mut e = blank_event();
    let mut small = [0u8; 4];
    expect(
        ctx,
        ethlink_poll_event(ctx, h, &mut e, small.as_mut_ptr(), small.len()),
        ETHLINK_ERR_BUFFER_TOO_SMALL,
        &["data", "4 bytes", "48"],
    );
    assert_eq!((e.kind, e.len), (ETHLINK_EVENT_LOST, p.len()));
    let mut data = vec![0u8; e.len];
    assert_eq!(
        ethlink_poll_event(ctx, h, &mut e, data.as_mut_ptr(), data.len()),
        ETHLINK_OK
    );
    assert_eq!(
        (e.kind, e.vc, e.reason),
        (ETHLINK_EVENT_LOST, 1, ETHLINK_LOST_WITHDRAWN)
    );
    assert_eq!(data, p);
    assert_eq!(
        ethlink_poll_event(ctx, h, &mut e, data.as_mut_ptr(), data.len()),
        ETHLINK_NONE
    );
    ethlink_ctx_free(ctx);
}

#[test]
fn a_short_counter_name_buffer_then_the_retry() {
    let ctx = new_ctx();
    let h = link_end(ctx, &link_cfg());
    let mut n = 0usize;
    assert_eq!(ethlink_counter_count(ctx, h, &mut n), ETHLINK_OK);
    assert!(n > 10);
    let mut name = [0 as c_char; 2];
    let (mut nl, mut v) = (0usize, 7u64);
    expect(
        ctx,
        ethlink_counter_at(ctx, h, 0, name.as_mut_ptr(), name.len(), &mut nl, &mut v),
        ETHLINK_ERR_BUFFER_TOO_SMALL,
        &["name"],
    );
    let mut big = vec![0 as c_char; nl + 1];
    assert_eq!(
        ethlink_counter_at(ctx, h, 0, big.as_mut_ptr(), big.len(), &mut nl, &mut v),
        ETHLINK_OK
    );
    assert_eq!(big[nl], 0);
    let text: Vec<u8> = big[..nl].iter().map(|&b| b as u8).collect();
    let text = String::from_utf8(text).unwrap();
    let mut again = 1u64;
    let cname = std::ffi::CString::new(text.clone()).unwrap();
    assert_eq!(
        ethlink_counter_get(ctx, h, cname.as_ptr(), &mut again),
        ETHLINK_OK
    );
    assert_eq!(again, v);
    ethlink_ctx_free(ctx);
}

#[test]
fn the_link_end_calls_check_pointers_values_role_and_queue() {
    let ctx = new_ctx();
    let mut cfg = link_cfg();
    cfg.link.tx_queue_frames = 1;
    let h = link_end(ctx, &cfg);
    let sw = switch(ctx);
    let p = payload(16, 3);
    assert_eq!(
        ethlink_link_submit(null_mut(), h, 0, p.as_ptr(), p.len()),
        ETHLINK_ERR_NULL_POINTER
    );
    expect(
        ctx,
        ethlink_link_submit(ctx, h, 0, null(), 24),
        ETHLINK_ERR_NULL_POINTER,
        &["payload"],
    );
    expect(
        ctx,
        ethlink_link_submit(ctx, h, 8, p.as_ptr(), p.len()),
        ETHLINK_ERR_ARGUMENT,
        &["vc = 8"],
    );
    expect(
        ctx,
        ethlink_link_submit(ctx, h, 3, p.as_ptr(), 5),
        ETHLINK_ERR_ARGUMENT,
        &["payload"],
    );
    expect(
        ctx,
        ethlink_link_submit(ctx, sw, 0, p.as_ptr(), p.len()),
        ETHLINK_ERR_WRONG_ROLE,
        &["link end", "a switch"],
    );
    assert_eq!(
        ethlink_link_submit(ctx, h, 0, p.as_ptr(), p.len()),
        ETHLINK_OK
    );
    expect(
        ctx,
        ethlink_link_submit(ctx, h, 0, p.as_ptr(), p.len()),
        ETHLINK_ERR_REFUSED,
        &["full"],
    );
    assert_eq!(
        ethlink_link_hold(null_mut(), h, 0, 1),
        ETHLINK_ERR_NULL_POINTER
    );
    expect(
        ctx,
        ethlink_link_hold(ctx, h, 0, 3),
        ETHLINK_ERR_ARGUMENT,
        &["hold = 3"],
    );
    expect(
        ctx,
        ethlink_link_hold(ctx, h, 8, 1),
        ETHLINK_ERR_ARGUMENT,
        &["vc = 8"],
    );
    expect(
        ctx,
        ethlink_link_hold(ctx, sw, 0, 1),
        ETHLINK_ERR_WRONG_ROLE,
        &["link end"],
    );
    assert_eq!(ethlink_link_hold(ctx, h, 0, 1), ETHLINK_OK);
    let mut n = 0usize;
    assert_eq!(
        ethlink_link_withdraw(null_mut(), h, &mut n),
        ETHLINK_ERR_NULL_POINTER
    );
    expect(
        ctx,
        ethlink_link_withdraw(ctx, h, null_mut()),
        ETHLINK_ERR_NULL_POINTER,
        &["count"],
    );
    expect(
        ctx,
        ethlink_link_withdraw(ctx, sw, &mut n),
        ETHLINK_ERR_WRONG_ROLE,
        &["link end"],
    );
    ethlink_ctx_free(ctx);
}

#[test]
fn the_endpoint_calls_check_pointers_values_role_and_limits() {
    let ctx = new_ctx();
    let mut cfg = ep_cfg(2);
    cfg.lsu_tags = 1;
    cfg.rdma_queue = 1;
    let h = endpoint(ctx, &cfg);
    let le = link_end(ctx, &link_cfg());
    let g = ETHLINK_SPACE_GLOBAL;
    let rw = ETHLINK_PERM_READ | ETHLINK_PERM_WRITE;
    // register
    assert_eq!(
        ethlink_endpoint_register(null_mut(), h, g, 0, 4096, 7, rw),
        ETHLINK_ERR_NULL_POINTER
    );
    expect(
        ctx,
        ethlink_endpoint_register(ctx, h, 2, 0, 4096, 7, rw),
        ETHLINK_ERR_ARGUMENT,
        &["space = 2"],
    );
    expect(
        ctx,
        ethlink_endpoint_register(ctx, h, g, 0, 4096, 7, 8),
        ETHLINK_ERR_ARGUMENT,
        &["perms"],
    );
    expect(
        ctx,
        ethlink_endpoint_register(ctx, le, g, 0, 4096, 7, rw),
        ETHLINK_ERR_WRONG_ROLE,
        &["endpoint", "a link end"],
    );
    assert_eq!(
        ethlink_endpoint_register(ctx, h, g, 0, 4096, 7, rw),
        ETHLINK_OK
    );
    expect(
        ctx,
        ethlink_endpoint_register(ctx, h, g, 0, 4096, 8, rw),
        ETHLINK_ERR_REFUSED,
        &["register"],
    );
    // deregister
    assert_eq!(
        ethlink_endpoint_deregister(null_mut(), h, g, 0),
        ETHLINK_ERR_NULL_POINTER
    );
    expect(
        ctx,
        ethlink_endpoint_deregister(ctx, h, 5, 0),
        ETHLINK_ERR_ARGUMENT,
        &["space = 5"],
    );
    expect(
        ctx,
        ethlink_endpoint_deregister(ctx, h, g, 64),
        ETHLINK_ERR_REFUSED,
        &["deregister"],
    );
    expect(
        ctx,
        ethlink_endpoint_deregister(ctx, le, g, 0),
        ETHLINK_ERR_WRONG_ROLE,
        &[],
    );
    // poison
    assert_eq!(
        ethlink_endpoint_poison(null_mut(), h, g, 0, 8),
        ETHLINK_ERR_NULL_POINTER
    );
    expect(
        ctx,
        ethlink_endpoint_poison(ctx, h, 3, 0, 8),
        ETHLINK_ERR_ARGUMENT,
        &["space = 3"],
    );
    expect(
        ctx,
        ethlink_endpoint_poison(ctx, h, g, u64::MAX - 2, 8),
        ETHLINK_ERR_ARGUMENT,
        &["poison"],
    );
    expect(
        ctx,
        ethlink_endpoint_poison(ctx, le, g, 0, 8),
        ETHLINK_ERR_WRONG_ROLE,
        &[],
    );
    // mem_write / mem_read
    let bytes = [1u8, 2, 3, 4];
    assert_eq!(
        ethlink_endpoint_mem_write(null_mut(), h, g, 0, bytes.as_ptr(), 4),
        ETHLINK_ERR_NULL_POINTER
    );
    expect(
        ctx,
        ethlink_endpoint_mem_write(ctx, h, g, 0, null(), 4),
        ETHLINK_ERR_NULL_POINTER,
        &["data"],
    );
    expect(
        ctx,
        ethlink_endpoint_mem_write(ctx, h, 9, 0, bytes.as_ptr(), 4),
        ETHLINK_ERR_ARGUMENT,
        &["space = 9"],
    );
    expect(
        ctx,
        ethlink_endpoint_mem_write(ctx, h, g, u64::MAX - 1, bytes.as_ptr(), 4),
        ETHLINK_ERR_ARGUMENT,
        &["mem_write"],
    );
    assert_eq!(
        ethlink_endpoint_mem_write(ctx, h, g, 16, bytes.as_ptr(), 4),
        ETHLINK_OK
    );
    let mut back = [0u8; 4];
    assert_eq!(
        ethlink_endpoint_mem_read(null_mut(), h, g, 16, back.as_mut_ptr(), 4),
        ETHLINK_ERR_NULL_POINTER
    );
    expect(
        ctx,
        ethlink_endpoint_mem_read(ctx, h, g, 16, null_mut(), 4),
        ETHLINK_ERR_NULL_POINTER,
        &["buf"],
    );
    expect(
        ctx,
        ethlink_endpoint_mem_read(ctx, le, g, 16, back.as_mut_ptr(), 4),
        ETHLINK_ERR_WRONG_ROLE,
        &[],
    );
    assert_eq!(
        ethlink_endpoint_mem_read(ctx, h, g, 16, back.as_mut_ptr(), 4),
        ETHLINK_OK
    );
    assert_eq!(back, bytes);
    // issue
    let mut tag = 0u16;
    let load = ls_load();
    assert_eq!(
        ethlink_endpoint_issue(null_mut(), h, 0, &load, &mut tag),
        ETHLINK_ERR_NULL_POINTER
    );
    expect(
        ctx,
        ethlink_endpoint_issue(ctx, h, 0, null(), &mut tag),
        ETHLINK_ERR_NULL_POINTER,
        &["req"],
    );
    expect(
        ctx,
        ethlink_endpoint_issue(ctx, h, 0, &load, null_mut()),
        ETHLINK_ERR_NULL_POINTER,
        &["tag"],
    );
    let store = LsRequest {
        kind: ETHLINK_LS_STORE,
        data_len: 8,
        ..load
    };
    expect(
        ctx,
        ethlink_endpoint_issue(ctx, h, 0, &store, &mut tag),
        ETHLINK_ERR_NULL_POINTER,
        &["req->data"],
    );
    let bad_kind = LsRequest { kind: 9, ..load };
    expect(
        ctx,
        ethlink_endpoint_issue(ctx, h, 0, &bad_kind, &mut tag),
        ETHLINK_ERR_ARGUMENT,
        &["kind = 9"],
    );
    let bad_width = LsRequest {
        kind: ETHLINK_LS_FETCH_ADD,
        width: 3,
        ..load
    };
    expect(
        ctx,
        ethlink_endpoint_issue(ctx, h, 0, &bad_width, &mut tag),
        ETHLINK_ERR_ARGUMENT,
        &["width = 3"],
    );
    let bad_order = LsRequest { ordered: 2, ..load };
    expect(
        ctx,
        ethlink_endpoint_issue(ctx, h, 0, &bad_order, &mut tag),
        ETHLINK_ERR_ARGUMENT,
        &["ordered = 2"],
    );
    let bad_space = LsRequest { space: 4, ..load };
    expect(
        ctx,
        ethlink_endpoint_issue(ctx, h, 0, &bad_space, &mut tag),
        ETHLINK_ERR_ARGUMENT,
        &["space = 4"],
    );
    let bad_dst = LsRequest {
        dst: 0xFFFF,
        ..load
    };
    expect(
        ctx,
        ethlink_endpoint_issue(ctx, h, 0, &bad_dst, &mut tag),
        ETHLINK_ERR_ARGUMENT,
        &["dst"],
    );
    let bad_len = LsRequest { len: 0, ..load };
    expect(
        ctx,
        ethlink_endpoint_issue(ctx, h, 0, &bad_len, &mut tag),
        ETHLINK_ERR_ARGUMENT,
        &["issue"],
    );
    expect(
        ctx,
        ethlink_endpoint_issue(ctx, le, 0, &load, &mut tag),
        ETHLINK_ERR_WRONG_ROLE,
        &[],
    );
    assert_eq!(
        ethlink_endpoint_issue(ctx, h, 100, &load, &mut tag),
        ETHLINK_OK
    );
    expect(
        ctx,
        ethlink_endpoint_issue(ctx, h, 50, &load, &mut tag),
        ETHLINK_ERR_TIME_BACKWARDS,
        &["backwards"],
    );
    // One tag only, held by the load above.
    expect(
        ctx,
        ethlink_endpoint_issue(ctx, h, 100, &load, &mut tag),
        ETHLINK_ERR_REFUSED,
        &["tag"],
    );
    // post
    let mut id = 0u64;
    let read = rdma_read();
    assert_eq!(
        ethlink_endpoint_post(null_mut(), h, 100, &read, &mut id),
        ETHLINK_ERR_NULL_POINTER
    );
    expect(
        ctx,
        ethlink_endpoint_post(ctx, h, 100, null(), &mut id),
        ETHLINK_ERR_NULL_POINTER,
        &["desc"],
    );
    expect(
        ctx,
        ethlink_endpoint_post(ctx, h, 100, &read, null_mut()),
        ETHLINK_ERR_NULL_POINTER,
        &["id"],
    );
    let bad_dir = RdmaDesc { write: 2, ..read };
    expect(
        ctx,
        ethlink_endpoint_post(ctx, h, 100, &bad_dir, &mut id),
        ETHLINK_ERR_ARGUMENT,
        &["write = 2"],
    );
    let bad_local = RdmaDesc {
        local_space: 7,
        ..read
    };
    expect(
        ctx,
        ethlink_endpoint_post(ctx, h, 100, &bad_local, &mut id),
        ETHLINK_ERR_ARGUMENT,
        &["local_space = 7"],
    );
    expect(
        ctx,
        ethlink_endpoint_post(ctx, le, 100, &read, &mut id),
        ETHLINK_ERR_WRONG_ROLE,
        &[],
    );
    expect(
        ctx,
        ethlink_endpoint_post(ctx, h, 99, &read, &mut id),
        ETHLINK_ERR_TIME_BACKWARDS,
        &[],
    );
    assert_eq!(
        ethlink_endpoint_post(ctx, h, 100, &read, &mut id),
        ETHLINK_OK
    );
    expect(
        ctx,
        ethlink_endpoint_post(ctx, h, 100, &read, &mut id),
        ETHLINK_ERR_REFUSED,
        &["queue"],
    );
    // fence
    assert_eq!(
        ethlink_endpoint_fence(null_mut(), h, 100, &mut id),
        ETHLINK_ERR_NULL_POINTER
    );
    expect(
        ctx,
        ethlink_endpoint_fence(ctx, h, 100, null_mut()),
        ETHLINK_ERR_NULL_POINTER,
        &["id"],
    );
    expect(
        ctx,
        ethlink_endpoint_fence(ctx, h, 1, &mut id),
        ETHLINK_ERR_TIME_BACKWARDS,
        &[],
    );
    expect(
        ctx,
        ethlink_endpoint_fence(ctx, le, 100, &mut id),
        ETHLINK_ERR_WRONG_ROLE,
        &[],
    );
    assert_eq!(ethlink_endpoint_fence(ctx, h, 100, &mut id), ETHLINK_OK);
    ethlink_ctx_free(ctx);
}

#[test]
fn the_switch_call_checks_pointers_values_and_role() {
    let ctx = new_ctx();
    let sw = switch(ctx);
    let le = link_end(ctx, &link_cfg());
    let ports = [0u16, 1];
    assert_eq!(
        ethlink_switch_set_route(null_mut(), sw, 1, ports.as_ptr(), 2),
        ETHLINK_ERR_NULL_POINTER
    );
    expect(
        ctx,
        ethlink_switch_set_route(ctx, sw, 1, null(), 2),
        ETHLINK_ERR_NULL_POINTER,
        &["ports"],
    );
    expect(
        ctx,
        ethlink_switch_set_route(ctx, sw, 0xFFFF, ports.as_ptr(), 2),
        ETHLINK_ERR_ARGUMENT,
        &["dst"],
    );
    let beyond = [0u16, 9];
    expect(
        ctx,
        ethlink_switch_set_route(ctx, sw, 1, beyond.as_ptr(), 2),
        ETHLINK_ERR_ARGUMENT,
        &["dst = 1"],
    );
    let twice = [1u16, 1];
    expect(
        ctx,
        ethlink_switch_set_route(ctx, sw, 1, twice.as_ptr(), 2),
        ETHLINK_ERR_ARGUMENT,
        &["dst = 1"],
    );
    expect(
        ctx,
        ethlink_switch_set_route(ctx, le, 1, ports.as_ptr(), 2),
        ETHLINK_ERR_WRONG_ROLE,
        &["switch", "a link end"],
    );
    assert_eq!(
        ethlink_switch_set_route(ctx, sw, 1, ports.as_ptr(), 2),
        ETHLINK_OK
    );
    assert_eq!(ethlink_switch_set_route(ctx, sw, 1, null(), 0), ETHLINK_OK);
    // In groups of preference (switch.md §2.3).
    let three = [0u16, 1, 2];
    let sizes = [1u16, 2];
    expect(
        ctx,
        ethlink_switch_set_route_groups(ctx, sw, 1, three.as_ptr(), 3, null(), 2),
        ETHLINK_ERR_NULL_POINTER,
        &["groups"],
    );
    for bad in [[1u16, 1], [0, 3], [2, 2]] {
        expect(
            ctx,
            ethlink_switch_set_route_groups(ctx, sw, 1, three.as_ptr(), 3, bad.as_ptr(), 2),
            ETHLINK_ERR_ARGUMENT,
            &["dst = 1", "group sizes"],
        );
    }
    expect(
        ctx,
        ethlink_switch_set_route_groups(ctx, le, 1, three.as_ptr(), 3, sizes.as_ptr(), 2),
        ETHLINK_ERR_WRONG_ROLE,
        &["switch"],
    );
    assert_eq!(
        ethlink_switch_set_route_groups(ctx, sw, 1, three.as_ptr(), 3, sizes.as_ptr(), 2),
        ETHLINK_OK
    );
    assert_eq!(
        ethlink_switch_set_route_groups(ctx, sw, 1, three.as_ptr(), 3, null(), 0),
        ETHLINK_OK
    );
    ethlink_ctx_free(ctx);
}

#[test]
fn describe_says_role_ports_caps_and_name() {
    let ctx = new_ctx();
    let ep = endpoint(ctx, &ep_cfg(2));
    let sw = switch(ctx);
    let le = link_end(ctx, &link_cfg());
    for (h, role, ports) in [
        (le, ETHLINK_ROLE_LINK_END, 1),
        (ep, ETHLINK_ROLE_ENDPOINT, 2),
        (sw, ETHLINK_ROLE_SWITCH, 4),
    ] {
        let mut out = Description {
            abi_version: 0,
            role: 9,
            ports: 0,
            caps: 0,
            name: [0; ETHLINK_NAME_LEN],
            tick_ns: 7,
            rate_gbps: 7,
        };
        assert_eq!(ethlink_describe(ctx, h, &mut out), ETHLINK_OK);
        assert_eq!(
            (out.role, out.ports, out.abi_version),
            (role, ports, ETHLINK_ABI_VERSION)
        );
        // The reference's timers run on nanoseconds and it hands frames out as it makes them.
        assert_eq!((out.tick_ns, out.rate_gbps), (1, 0));
        let name: Vec<u8> = out
            .name
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        assert!(
            String::from_utf8(name)
                .unwrap()
                .starts_with("ethlink reference")
        );
        if role == ETHLINK_ROLE_ENDPOINT {
            assert_ne!(out.caps & ETHLINK_CAP_RDMA, 0);
        }
    }
    ethlink_ctx_free(ctx);
}

/// Every error text names the function, the argument (a field of a structure as `cfg->field`
/// or `req->field`) and the value, and says what is wrong with it.
#[test]
fn error_texts_name_the_function_the_argument_and_the_value() {
    let ctx = new_ctx();
    let le = link_end(ctx, &link_cfg());
    let ep = endpoint(ctx, &ep_cfg(2));
    let sw = switch(ctx);
    let mut h = 0u32;
    // A handle of another role: the handle, the role it names and the role the call is for.
    let mut id = 0u64;
    expect(
        ctx,
        ethlink_endpoint_fence(ctx, le, 0, &mut id),
        ETHLINK_ERR_WRONG_ROLE,
        &[
            "ethlink_endpoint_fence: ",
            &format!("h = {le:#010x}"),
            "names a link end",
            "for an endpoint",
        ],
    );
    let mut n = 0usize;
    expect(
        ctx,
        ethlink_link_withdraw(ctx, sw, &mut n),
        ETHLINK_ERR_WRONG_ROLE,
        &["names a switch", "for a link end"],
    );
    expect(
        ctx,
        ethlink_switch_set_route(ctx, ep, 1, null(), 0),
        ETHLINK_ERR_WRONG_ROLE,
        &["names an endpoint", "for a switch"],
    );
    let mut d = 0u64;
    expect(
        ctx,
        ethlink_poll_timeout(ctx, 0x1234_5000, &mut d),
        ETHLINK_ERR_HANDLE,
        &["ethlink_poll_timeout: h = 0x12345000"],
    );
    // Configuration fields by the names of the C structures.
    let mut c = link_cfg();
    c.link.vcs = 9;
    expect(
        ctx,
        ethlink_link_end_new(ctx, &c, &mut h),
        ETHLINK_ERR_ARGUMENT,
        &["ethlink_link_end_new: configuration: cfg->link.vcs = 9: must be 1..=8"],
    );
    let mut c = link_cfg();
    c.link.ack_timer_ns = 0;
    expect(
        ctx,
        ethlink_link_end_new(ctx, &c, &mut h),
        ETHLINK_ERR_ARGUMENT,
        &["cfg->link.ack_timer_ns = 0"],
    );
    let c = EndpointConfig {
        ports_per_stack: 0,
        ..ep_cfg(2)
    };
    expect(
        ctx,
        ethlink_endpoint_new(ctx, &c, &mut h),
        ETHLINK_ERR_ARGUMENT,
        &["cfg->ports_per_stack = 0: must be 1..=16"],
    );
    let c = EndpointConfig {
        op_timeout_ns: 10,
        ..ep_cfg(2)
    };
    expect(
        ctx,
        ethlink_endpoint_new(ctx, &c, &mut h),
        ETHLINK_ERR_ARGUMENT,
        &["ethlink_endpoint_new: configuration: cfg->op_timeout_ns = 10: must be 1 us..=1 s"],
    );
    let c = EndpointConfig {
        max_regions: 0,
        ..ep_cfg(2)
    };
    expect(
        ctx,
        ethlink_endpoint_new(ctx, &c, &mut h),
        ETHLINK_ERR_ARGUMENT,
        &["cfg->max_regions = 0: region table entries must be 1..=65536"],
    );
    let mut c = ep_cfg(2);
    c.link.vcs = 2;
    expect(
        ctx,
        ethlink_endpoint_new(ctx, &c, &mut h),
        ETHLINK_ERR_ARGUMENT,
        &["cfg->link.vcs = 2"],
    );
    let mut c = sw_cfg(4);
    c.link.mfs = 100;
    expect(
        ctx,
        ethlink_switch_new(ctx, &c, &mut h),
        ETHLINK_ERR_ARGUMENT,
        &["cfg->link.mfs = 100"],
    );
    let c = SwitchConfig {
        latency_ns: 20_000,
        ..sw_cfg(4)
    };
    expect(
        ctx,
        ethlink_switch_new(ctx, &c, &mut h),
        ETHLINK_ERR_ARGUMENT,
        &["cfg->latency_ns = 20000"],
    );
    let c = SwitchConfig {
        rate_gbps: f64::NAN,
        ..sw_cfg(4)
    };
    expect(
        ctx,
        ethlink_switch_new(ctx, &c, &mut h),
        ETHLINK_ERR_ARGUMENT,
        &["cfg->rate_gbps = NaN"],
    );
    // A counter name that is not text is said to be so, not taken for the empty name.
    let bad = [0xFFu8, 0xFE, 0];
    let mut v = 0u64;
    expect(
        ctx,
        ethlink_counter_get(ctx, le, bad.as_ptr().cast::<c_char>(), &mut v),
        ETHLINK_ERR_ARGUMENT,
        &["ethlink_counter_get: name = ", "not UTF-8"],
    );
    expect(
        ctx,
        ethlink_counter_get(ctx, le, c"nacks".as_ptr(), &mut v),
        ETHLINK_ERR_ARGUMENT,
        &["name = \"nacks\": no counter has this name"],
    );
    // A length no buffer can have: the length argument by its name.
    let f = [0u8; 1];
    expect(
        ctx,
        ethlink_handle_frame(ctx, le, 0, 0, f.as_ptr(), usize::MAX),
        ETHLINK_ERR_ARGUMENT,
        &[
            "ethlink_handle_frame: len = 18446744073709551615",
            "`bytes`",
        ],
    );
    // More ports than an entry holds: refused before anything is read.
    let ports = [0u16; 65];
    expect(
        ctx,
        ethlink_switch_set_route(ctx, sw, 1, ports.as_ptr(), 65),
        ETHLINK_ERR_ARGUMENT,
        &["ethlink_switch_set_route: count = 65", "at most 64"],
    );
    // A short buffer: its capacity by name and value, and what needs more.
    assert_eq!(ethlink_physical(ctx, le, 0, 1, 0), ETHLINK_OK);
    let (mut port, mut len) = (0u16, 0usize);
    let mut small = [0u8; 10];
    expect(
        ctx,
        ethlink_poll_transmit(ctx, le, 0, &mut port, small.as_mut_ptr(), 10, &mut len),
        ETHLINK_ERR_BUFFER_TOO_SMALL,
        &[
            "ethlink_poll_transmit: cap = 10: `buf` holds 10 bytes, the next frame, for port 0, needs 76",
        ],
    );
    // The fields of a request by their names.
    let mut tag = 0u16;
    let r = LsRequest {
        kind: ETHLINK_LS_FETCH_ADD,
        width: 3,
        ..ls_load()
    };
    expect(
        ctx,
        ethlink_endpoint_issue(ctx, ep, 0, &r, &mut tag),
        ETHLINK_ERR_ARGUMENT,
        &["ethlink_endpoint_issue: req->width = 3: an atomic's operand is 4 or 8 bytes"],
    );
    let r = LsRequest {
        len: 0,
        ..ls_load()
    };
    expect(
        ctx,
        ethlink_endpoint_issue(ctx, ep, 0, &r, &mut tag),
        ETHLINK_ERR_ARGUMENT,
        &["req->len = 0"],
    );
    let r = LsRequest {
        addr: u64::MAX,
        ..ls_load()
    };
    expect(
        ctx,
        ethlink_endpoint_issue(ctx, ep, 0, &r, &mut tag),
        ETHLINK_ERR_ARGUMENT,
        &["req->addr = 18446744073709551615"],
    );
    let dsc = RdmaDesc {
        len: 0,
        ..rdma_read()
    };
    expect(
        ctx,
        ethlink_endpoint_post(ctx, ep, 0, &dsc, &mut id),
        ETHLINK_ERR_ARGUMENT,
        &["ethlink_endpoint_post: desc->len = 0"],
    );
    let dsc = RdmaDesc {
        space: 5,
        ..rdma_read()
    };
    expect(
        ctx,
        ethlink_endpoint_post(ctx, ep, 0, &dsc, &mut id),
        ETHLINK_ERR_ARGUMENT,
        &["desc->space = 5"],
    );
    ethlink_ctx_free(ctx);
}

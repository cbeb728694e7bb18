//! What the tests of the C ABI share: a context, its last error, and configurations of each
//! role made from the defaults.

#![allow(dead_code, unreachable_pub)]

use core::ffi::c_char;
use core::ptr::{null, null_mut};

use ethlink_ffi::*;

pub fn new_ctx() -> *mut Ctx {
    let mut ctx = null_mut();
    assert_eq!(ethlink_ctx_new(&mut ctx), ETHLINK_OK);
    assert!(!ctx.is_null());
    ctx
}

pub fn last_error(ctx: *mut Ctx) -> String {
    let mut buf = [0 as c_char; 1024];
    let mut len = 0usize;
    assert_eq!(
        ethlink_last_error(ctx, buf.as_mut_ptr(), buf.len(), &mut len),
        ETHLINK_OK
    );
    let bytes: Vec<u8> = buf[..len].iter().map(|&b| b as u8).collect();
    String::from_utf8(bytes).expect("UTF-8 text")
}

pub fn link_cfg() -> LinkEndConfig {
    let mut out = link_cfg_zero();
    assert_eq!(ethlink_link_end_config_default(&mut out), ETHLINK_OK);
    out
}

pub fn link_cfg_zero() -> LinkEndConfig {
    LinkEndConfig {
        link: params_zero(),
        mac: [0; 6],
        caps: 0,
        seed: 0,
    }
}

pub fn params_zero() -> LinkParams {
    LinkParams {
        vcs: 0,
        replay_count_max: 0,
        credit_size: 0,
        credit_overhead: 0,
        mfs: 0,
        rx_credits: [0; 8],
        llr_window: 0,
        replay_max_frames: 0,
        replay_max_bytes: 0,
        ack_spacing: 0,
        cf_min_credits: 0,
        tx_queue_frames: 0,
        tx_queue_bytes: 0,
        ack_timer_ns: 0,
        replay_timer_ns: 0,
        cf_min_interval_ns: 0,
        cf_max_interval_ns: 0,
        cc_interval_ns: 0,
        init_interval_ns: 0,
        init_timeout_ns: 0,
        llr_max_age_ns: 0,
    }
}

/// The default endpoint configuration with one stack of `ports` ports.
pub fn ep_cfg(ports: u8) -> EndpointConfig {
    let mut c = EndpointConfig {
        link: params_zero(),
        gpu: 0,
        stacks: 0,
        ports_per_stack: 0,
        policy: 0,
        max_retries: 0,
        lsu_tags: 0,
        rdma_tags: 0,
        caps: 0,
        rdma_queue: 0,
        segment: 0,
        read_chunk: 0,
        write_chunk: 0,
        read_window: 0,
        max_reassemblies: 0,
        max_reassembly_blocks: 0,
        max_read_jobs: 0,
        response_backlog: 0,
        port_queue: 0,
        max_regions: 0,
        pack_delay_ns: 0,
        op_timeout_ns: 0,
        tag_quarantine_ns: 0,
        frame_lifetime_ns: 0,
        busy_backoff_ns: 0,
        hold_max_ns: 0,
        global_size: 0,
        shared_size: 0,
        seed: 0,
    };
    assert_eq!(ethlink_endpoint_config_default(&mut c), ETHLINK_OK);
    c.stacks = 1;
    c.ports_per_stack = ports;
    c
}

/// The default switch configuration with `ports` ports.
pub fn sw_cfg(ports: u16) -> SwitchConfig {
    let mut c = SwitchConfig {
        link: params_zero(),
        id: 0,
        ports: 0,
        mode: 0,
        egress_depth: 0,
        latency_ns: 0,
        max_residence_ns: 0,
        rate_gbps: 0.0,
        seed: 0,
    };
    assert_eq!(ethlink_switch_config_default(&mut c), ETHLINK_OK);
    c.ports = ports;
    c
}

/// An event record for `ethlink_poll_event` to fill.
pub fn blank_event() -> Event {
    Event {
        kind: 0,
        port: 0,
        vc: 0,
        reason: 0,
        op: 0,
        status: 0,
        status_raw: 0,
        id: 0,
        len: 0,
    }
}

/// An 8-byte LOAD of GPU 1's global address 0x1000 with key 7.
pub fn ls_load() -> LsRequest {
    LsRequest {
        kind: ETHLINK_LS_LOAD,
        space: ETHLINK_SPACE_GLOBAL,
        width: 0,
        ordered: 0,
        dst: 1,
        len: 8,
        key: 7,
        stream: 0,
        addr: 0x1000,
        value: 0,
        compare: 0,
        data: null(),
        data_len: 0,
    }
}

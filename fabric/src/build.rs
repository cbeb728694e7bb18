//! The configurations a scenario gives the parts of the fabric: every port's link, every GPU's
//! endpoint, every switch, and the shape of the switches of a topology.

use ethlink_endpoint::{Config as EpConfig, MemoryConfig};
use ethlink_link::{Config as LinkConfig, Duration};
use ethlink_protocol::GpuId;
use ethlink_switch::{Config as SwConfig, Mode};

use crate::check::mix64;
use crate::scenario::{Scenario, SwitchMode, Topology, TopologyKind};

/// The key of GPU `g`'s region (all of its global memory, every permission).
pub(crate) fn key_of(g: u16) -> u32 {
    0x5EED_0000 | u32::from(g)
}

fn dur(ns: u64) -> Duration {
    Duration::from_nanos(ns)
}

/// The link configuration every port starts from.
pub(crate) fn link_config(s: &Scenario) -> LinkConfig {
    let l = &s.link;
    let base = LinkConfig::default();
    let rx_credits = s.rx_credits();
    LinkConfig {
        credit_size: l.credit_size,
        rx_credits: [rx_credits, rx_credits, rx_credits, rx_credits, 0, 0, 0, 0],
        mfs: l.mfs,
        replay_max_frames: l.replay_max_frames,
        replay_max_bytes: l.replay_max_bytes,
        ack_spacing: l.ack_spacing,
        ack_timer: dur(l.ack_timer_ns),
        replay_timer: dur(l.replay_timer_ns),
        replay_count_max: l.replay_count_max,
        llr_max_age: dur(l.llr_max_age_ns),
        cf_min_credits: l.cf_min_credits,
        cf_min_interval: dur(l.cf_min_interval_ns),
        cf_max_interval: dur(l.cf_max_interval_ns),
        cc_interval: dur(l.cc_interval_ns),
        init_interval: dur(l.init_interval_ns),
        tx_queue_frames: l.tx_queue_frames,
        tx_queue_bytes: l.tx_queue_bytes,
        nonce_seed: mix64(s.seed ^ 0x4E4F_4E43_4553_4545),
        ..base
    }
}

/// The endpoint configuration of GPU `g`.
pub(crate) fn endpoint_config(s: &Scenario, g: u16) -> EpConfig {
    let e = &s.endpoint;
    EpConfig {
        gpu: GpuId::new(g).unwrap_or_default(),
        stacks: s.topology.stacks,
        ports: s.topology.ports_per_stack,
        policy: e.policy.policy(),
        lsu_tags: e.lsu_tags,
        rdma_tags: e.rdma_tags,
        rdma_queue: e.rdma_queue,
        segment: e.segment,
        read_chunk: e.read_chunk,
        write_chunk: e.write_chunk,
        read_window: e.read_window,
        pack_delay: dur(e.pack_delay_ns),
        op_timeout: dur(e.op_timeout_ns),
        // endpoint.md EP-1-3: frame_lifetime <= op_timeout.
        frame_lifetime: dur(e.op_timeout_ns.min(200_000)),
        max_retries: e.max_retries,
        tag_quarantine: dur(e.tag_quarantine_ns),
        max_reassemblies: e.max_reassemblies,
        max_read_jobs: e.max_read_jobs,
        response_backlog: e.response_backlog,
        hold_max: dur(e.hold_max_ns),
        port_queue: e.port_queue,
        memory: MemoryConfig {
            global_size: e.global_bytes,
            shared_size: 1 << 20,
            ..MemoryConfig::default()
        },
        link: link_config(s),
        ..EpConfig::default()
    }
}

/// The guard of the path pins (switch.md §2.4): the rest of a frame's lifetime after a switch.
/// In two tiers a leaf's frames may cross a spine and a leaf after it (`k = 2`); the default
/// (`k = 0`, this switch and the link after it) serves a single tier.
fn pin_guard(s: &Scenario, link: &ethlink_link::Config) -> Option<std::time::Duration> {
    if s.topology.kind != crate::scenario::TopologyKind::TwoTier {
        return None;
    }
    let res = SwConfig::default().max_residence;
    // A link gives a frame up by llr_max_age after its first transmission (LINK-3-18); 1 us
    // for the wire.
    let hop = link.llr_max_age + std::time::Duration::from_micros(1);
    Some(res * 3 + hop * 3)
}

/// The configuration of switch `id` with `ports` ports.
pub(crate) fn switch_config(s: &Scenario, id: u16, ports: u16) -> SwConfig {
    let w = &s.switch;
    let mut link = link_config(s);
    link.tx_queue_frames = w.tx_queue_frames;
    link.tx_queue_bytes = w.tx_queue_bytes;
    SwConfig {
        id,
        ports,
        latency: dur(w.latency_ns),
        mode: match w.mode {
            SwitchMode::CutThrough => Mode::CutThrough,
            SwitchMode::StoreAndForward => Mode::StoreAndForward,
        },
        rate_gbps: s.link.rate_gbps,
        egress_depth: w.egress_depth,
        max_residence: SwConfig::default().max_residence,
        pin_guard: pin_guard(s, &link),
        link,
        ..SwConfig::default()
    }
}

/// Ports of switch `sw` in topology `t`, if it exists.
pub(crate) fn switch_ports(t: &Topology, sw: usize) -> Option<usize> {
    if sw >= t.switches() {
        return None;
    }
    match t.kind {
        TopologyKind::BackToBack => None,
        TopologyKind::SingleTier => Some(usize::from(t.gpus)),
        TopologyKind::TwoTier => {
            let per_plane = usize::from(t.leaves) + usize::from(t.spines);
            if sw % per_plane < usize::from(t.leaves) {
                Some(t.gpus_per_leaf() + usize::from(t.spines))
            } else {
                Some(usize::from(t.leaves))
            }
        }
    }
}

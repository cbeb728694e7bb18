//! Conversions between the ABI's plain structures and integers and the models' types. Every
//! integer that stands for an enumeration is checked here.

use ethlink_link::{Config as LinkConfig, ConfigError, Duration};
use ethlink_protocol::{Capabilities, GpuId, Space, Vc};

use crate::error::{Error, Result};
use crate::types::{ETHLINK_SPACE_GLOBAL, ETHLINK_SPACE_SHARED, LinkParams};

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The ABI form of a link configuration's parameters.
pub(crate) fn params_of(c: &LinkConfig) -> LinkParams {
    LinkParams {
        vcs: c.vcs,
        replay_count_max: c.replay_count_max,
        credit_size: c.credit_size,
        credit_overhead: c.credit_overhead,
        mfs: c.mfs,
        rx_credits: c.rx_credits,
        llr_window: c.llr_window,
        replay_max_frames: c.replay_max_frames,
        replay_max_bytes: c.replay_max_bytes,
        ack_spacing: c.ack_spacing,
        cf_min_credits: c.cf_min_credits,
        tx_queue_frames: c.tx_queue_frames,
        tx_queue_bytes: c.tx_queue_bytes,
        ack_timer_ns: ns(c.ack_timer),
        replay_timer_ns: ns(c.replay_timer),
        cf_min_interval_ns: ns(c.cf_min_interval),
        cf_max_interval_ns: ns(c.cf_max_interval),
        cc_interval_ns: ns(c.cc_interval),
        init_interval_ns: ns(c.init_interval),
        init_timeout_ns: ns(c.init_timeout),
        llr_max_age_ns: ns(c.llr_max_age),
    }
}

/// `base` with the parameters of `p` (ranges are checked by the model's own validation).
pub(crate) fn apply_params(base: &LinkConfig, p: &LinkParams) -> LinkConfig {
    let d = Duration::from_nanos;
    LinkConfig {
        vcs: p.vcs,
        replay_count_max: p.replay_count_max,
        credit_size: p.credit_size,
        credit_overhead: p.credit_overhead,
        mfs: p.mfs,
        rx_credits: p.rx_credits,
        llr_window: p.llr_window,
        replay_max_frames: p.replay_max_frames,
        replay_max_bytes: p.replay_max_bytes,
        ack_spacing: p.ack_spacing,
        cf_min_credits: p.cf_min_credits,
        tx_queue_frames: p.tx_queue_frames,
        tx_queue_bytes: p.tx_queue_bytes,
        ack_timer: d(p.ack_timer_ns),
        replay_timer: d(p.replay_timer_ns),
        cf_min_interval: d(p.cf_min_interval_ns),
        cf_max_interval: d(p.cf_max_interval_ns),
        cc_interval: d(p.cc_interval_ns),
        init_interval: d(p.init_interval_ns),
        init_timeout: d(p.init_timeout_ns),
        llr_max_age: d(p.llr_max_age_ns),
        ..base.clone()
    }
}

/// The link parameters of [`LinkParams`], by the names a model's [`ConfigError`] gives them.
const LINK_FIELDS: [&str; 21] = [
    "vcs",
    "credit_size",
    "rx_credits",
    "credit_overhead",
    "mfs",
    "llr_window",
    "replay_max_frames",
    "replay_max_bytes",
    "ack_spacing",
    "ack_timer",
    "replay_timer",
    "replay_count_max",
    "cf_min_credits",
    "cf_min_interval",
    "cf_max_interval",
    "cc_interval",
    "init_interval",
    "init_timeout",
    "llr_max_age",
    "tx_queue_frames",
    "tx_queue_bytes",
];

/// The durations among the fields a model's [`ConfigError`] names: the configuration structures
/// give them in nanoseconds, with `_ns` after their name.
const DURATIONS: [&str; 16] = [
    "ack_timer",
    "replay_timer",
    "llr_max_age",
    "cf_min_interval",
    "cf_max_interval",
    "cc_interval",
    "init_interval",
    "init_timeout",
    "pack_delay",
    "op_timeout",
    "tag_quarantine",
    "frame_lifetime",
    "busy_backoff",
    "hold_max",
    "latency",
    "max_residence",
];

/// A configuration the model refused, as an error that names the field of the C structure
/// `cfg` points to (`cfg->link.mfs`, `cfg->op_timeout_ns`, ...). `renamed` maps the model's
/// name of a field to the structure's where they differ.
pub(crate) fn config_error(e: &ConfigError, renamed: &[(&str, &str)]) -> Error {
    let model = e.field.strip_prefix("link.").unwrap_or(e.field);
    let mut field = renamed
        .iter()
        .find(|(m, _)| *m == model)
        .map_or(model, |(_, c)| *c)
        .to_owned();
    if DURATIONS.contains(&model) {
        field.push_str("_ns");
    }
    if LINK_FIELDS.contains(&model) {
        field.insert_str(0, "link.");
    }
    if e.field == "mac" {
        // The model writes the address as one.
        return Error::argument(format!("configuration: cfg->{e}"));
    }
    Error::argument(format!(
        "configuration: cfg->{field} = {}: {}",
        e.value, e.rule
    ))
}

/// Capabilities from `ETHLINK_CAP_*` bits; a bit this version does not define is an error.
pub(crate) fn caps(bits: u32, field: &str) -> Result<Capabilities> {
    let defined = u32::from(Capabilities::DEFINED.bits());
    if bits & !defined != 0 {
        return Err(Error::argument(format!(
            "{field} = {bits:#x}: only the ETHLINK_CAP_* bits {defined:#x} are defined"
        )));
    }
    Ok(Capabilities::from_bits_truncate(bits as u16))
}

/// The memory space named by an `ETHLINK_SPACE_*` value.
pub(crate) fn space(v: u8, field: &str) -> Result<Space> {
    match v {
        ETHLINK_SPACE_GLOBAL => Ok(Space::Global),
        ETHLINK_SPACE_SHARED => Ok(Space::Shared),
        _ => Err(Error::argument(format!(
            "{field} = {v}: not an ETHLINK_SPACE_* value (0 global, 1 shared)"
        ))),
    }
}

/// A GPU id.
pub(crate) fn gpu(v: u16, field: &str) -> Result<GpuId> {
    GpuId::new(v)
        .ok_or_else(|| Error::argument(format!("{field} = {v:#x}: the GPU id 0xffff is reserved")))
}

/// A VC, 0..=7.
pub(crate) fn vc(v: u8) -> Result<Vc> {
    Vc::new(v).ok_or_else(|| Error::argument(format!("vc = {v}: a VC is 0..=7")))
}

/// A C boolean passed as `uint8_t`: 0 or 1.
pub(crate) fn flag(v: u8, field: &str) -> Result<bool> {
    match v {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(Error::argument(format!("{field} = {v}: must be 0 or 1"))),
    }
}

//! The checks of a scenario: every value in its range, every combination that can work, and the
//! key of the first one that does not ([`Scenario::validate`]). They build the configurations of
//! the GPUs and switches to let their own crates judge them, and lay out the workloads' memory.

use ethlink_switch::ROUTE_PORTS_MAX;

use crate::build;
use crate::scenario::{
    MAX_GPUS, MAX_TIME_NS, Outage, OutageTarget, Scenario, ScenarioError, TopologyKind, Workload,
    err,
};
use crate::workload::{self, MAX_LS_SLOTS};

/// A float as a message gives it: as the scenario would write it, `-400`, `0.5`, `1e-15` or
/// `1e300` (not 300 digits), and `NaN`, `inf` or `-inf` for what is not a number.
fn shown(v: f64) -> String {
    let a = v.abs();
    if v.is_finite() && a != 0.0 && !(1e-5..1e16).contains(&a) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

fn check_prob(key: &str, v: f64) -> Result<(), ScenarioError> {
    if !(0.0..=1.0).contains(&v) || v.is_nan() {
        return err(key, format!("{} is not a probability in 0..=1", shown(v)));
    }
    Ok(())
}

fn check_time(key: &str, v: u64) -> Result<(), ScenarioError> {
    if v > MAX_TIME_NS {
        return err(
            key,
            format!("{v} ns is more than the largest time a scenario may give, {MAX_TIME_NS} ns"),
        );
    }
    Ok(())
}

impl Scenario {
    /// Every time key of the scenario (ns) with its dotted name.
    fn times(&self) -> Vec<(String, u64)> {
        let l = &self.link;
        let e = &self.endpoint;
        let mut v: Vec<(String, u64)> = vec![
            ("duration_ns".into(), self.duration_ns.unwrap_or(0)),
            ("drain_ns".into(), self.drain_ns.unwrap_or(0)),
            ("time_limit_ns".into(), self.time_limit_ns),
            ("link.ack_timer_ns".into(), l.ack_timer_ns),
            ("link.replay_timer_ns".into(), l.replay_timer_ns),
            ("link.llr_max_age_ns".into(), l.llr_max_age_ns),
            ("link.cf_min_interval_ns".into(), l.cf_min_interval_ns),
            ("link.cf_max_interval_ns".into(), l.cf_max_interval_ns),
            ("link.cc_interval_ns".into(), l.cc_interval_ns),
            ("link.init_interval_ns".into(), l.init_interval_ns),
            ("endpoint.pack_delay_ns".into(), e.pack_delay_ns),
            ("endpoint.op_timeout_ns".into(), e.op_timeout_ns),
            ("endpoint.tag_quarantine_ns".into(), e.tag_quarantine_ns),
            ("endpoint.hold_max_ns".into(), e.hold_max_ns),
            ("switch.latency_ns".into(), self.switch.latency_ns),
            ("metrics.sample_ns".into(), self.metrics.sample_ns),
        ];
        for (i, o) in self.outages.iter().enumerate() {
            v.push((format!("outages.{i}.start_ns"), o.start_ns));
            v.push((
                format!("outages.{i}.duration_ns"),
                o.duration_ns.unwrap_or(0),
            ));
        }
        for (i, w) in self.traffic.iter().enumerate() {
            v.push((format!("traffic.{i}.start_ns"), w.start_ns()));
        }
        v
    }

    /// Checks every value; the first one out of range is named by its dotted key.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        for (key, v) in self.times() {
            check_time(&key, v)?;
        }
        let t = &self.topology;
        if !(2..=MAX_GPUS).contains(&t.gpus) {
            return err(
                "topology.gpus",
                format!("{} is not in 2..={MAX_GPUS}", t.gpus),
            );
        }
        if !(1..=16).contains(&t.stacks) {
            return err("topology.stacks", format!("{} is not in 1..=16", t.stacks));
        }
        if !(1..=16).contains(&t.ports_per_stack) {
            return err(
                "topology.ports_per_stack",
                format!("{} is not in 1..=16", t.ports_per_stack),
            );
        }
        match t.kind {
            TopologyKind::BackToBack if t.gpus != 2 => {
                return err(
                    "topology.gpus",
                    format!("{} GPUs, but back_to_back joins exactly 2", t.gpus),
                );
            }
            // A switch has at most 1024 ports (switch.md §1.1).
            TopologyKind::SingleTier if t.gpus > 1024 => {
                return err(
                    "topology.gpus",
                    format!(
                        "{} GPUs on a single tier would need switches of {} ports, and a switch \
                         has at most 1024: use kind = \"two_tier\"",
                        t.gpus, t.gpus
                    ),
                );
            }
            TopologyKind::TwoTier => {
                if t.leaves > 1024 {
                    return err(
                        "topology.leaves",
                        format!(
                            "{} leaves would give a spine {} ports, and a switch has at most 1024",
                            t.leaves, t.leaves
                        ),
                    );
                }
                if t.leaves == 0 || t.leaves > t.gpus {
                    return err(
                        "topology.leaves",
                        format!("{} is not in 1..=gpus (1..={})", t.leaves, t.gpus),
                    );
                }
                if t.spines == 0 {
                    return err(
                        "topology.spines",
                        "0 spines: a two_tier plane needs at least 1",
                    );
                }
                if t.gpus_per_leaf() + usize::from(t.spines) > 1024 {
                    return err(
                        "topology.spines",
                        format!(
                            "{} spines give a leaf {} ports (ceil(gpus / leaves) = {} down and \
                             one up per spine), and a switch has at most 1024",
                            t.spines,
                            t.gpus_per_leaf() + usize::from(t.spines),
                            t.gpus_per_leaf()
                        ),
                    );
                }
                // A leaf's entry for a GPU under another leaf lists every up-port, one per
                // spine, and a switch takes entries of at most 64 ports (switch.md SW-2-5).
                if t.leaves > 1 && usize::from(t.spines) > ROUTE_PORTS_MAX {
                    return err(
                        "topology.spines",
                        format!(
                            "{} spines would give a leaf's forwarding entry for a GPU under \
                             another leaf {} up-ports, and an entry lists at most \
                             {ROUTE_PORTS_MAX} (switch.md SW-2-5): with more than one leaf, at \
                             most {ROUTE_PORTS_MAX} spines",
                            t.spines, t.spines
                        ),
                    );
                }
                if t.switches() > usize::from(u16::MAX) {
                    return err(
                        "topology.leaves",
                        format!(
                            "{} planes of {} leaves and {} spines make {} switches, and switch \
                             ids stop at {}",
                            t.ports(),
                            t.leaves,
                            t.spines,
                            t.switches(),
                            u16::MAX
                        ),
                    );
                }
            }
            _ => {}
        }
        if self.stop_when_done
            && self.duration_ns.is_none()
            && !self.traffic.iter().any(Workload::is_finite)
        {
            return err(
                "duration_ns",
                "without a duration the run needs at least one finite workload to stop",
            );
        }
        if !self.stop_when_done && self.duration_ns.is_none() {
            return err("duration_ns", "needed when stop_when_done is false");
        }
        if self.time_limit_ns == 0 {
            return err("time_limit_ns", "must be at least 1 ns");
        }
        let l = &self.link;
        if !(l.rate_gbps.is_finite() && l.rate_gbps > 0.0 && l.rate_gbps <= 100_000.0) {
            return err(
                "link.rate_gbps",
                format!(
                    "{} is not a positive number of Gb/s up to 100000",
                    shown(l.rate_gbps)
                ),
            );
        }
        if !(l.cable_m.is_finite() && l.cable_m >= 0.0 && l.cable_m <= 100_000.0) {
            return err(
                "link.cable_m",
                format!("{} is not a length in 0..=100000 m", shown(l.cable_m)),
            );
        }
        if let Some(p) = l.propagation_ns
            && !(p.is_finite() && (0.0..=1e9).contains(&p))
        {
            return err(
                "link.propagation_ns",
                format!("{} is not a delay in 0..=1e9 ns", shown(p)),
            );
        }
        for (k, v) in [
            ("link.ber", l.ber),
            ("link.loss", l.loss),
            ("link.drop", l.drop),
            ("link.control_loss", l.control_loss),
            ("link.duplicate", l.duplicate),
        ] {
            check_prob(k, v)?;
        }
        if l.loss + l.drop > 1.0 {
            return err(
                "link.drop",
                format!(
                    "loss + drop must be at most 1: link.loss = {} and link.drop = {} add up to {}",
                    shown(l.loss),
                    shown(l.drop),
                    shown(l.loss + l.drop)
                ),
            );
        }
        // A receiver must be able to hold one frame of the largest size on each VC, or a sender
        // waits for credit for ever.
        let rx_credits = self.rx_credits();
        let buffer = u64::from(rx_credits).saturating_mul(u64::from(l.credit_size));
        if rx_credits > 0
            && l.credit_size.is_power_of_two()
            && (32..=2048).contains(&l.credit_size)
            && buffer < u64::from(l.mfs)
        {
            let need = u64::from(l.mfs).div_ceil(u64::from(l.credit_size));
            return err(
                "link.rx_credits",
                format!(
                    "{} credits of {} bytes ({buffer} bytes per VC) cannot hold one frame of \
                     link.mfs = {} bytes: grant at least {need}",
                    rx_credits, l.credit_size, l.mfs
                ),
            );
        }
        let ep = build::endpoint_config(self, 0);
        ep.validate().map_err(|e| ScenarioError {
            key: map_field("endpoint", e.field),
            reason: format!("{} = {}: {}", e.field, e.value, e.rule),
        })?;
        if self.endpoint.global_bytes < 1 << 30 {
            return err("endpoint.global_bytes", "must be at least 1 GiB");
        }
        let sw = build::switch_config(self, 0, 2);
        sw.validate().map_err(|e| ScenarioError {
            key: map_field("switch", e.field),
            reason: format!("{} = {}: {}", e.field, e.value, e.rule),
        })?;
        for (i, o) in self.outages.iter().enumerate() {
            self.check_outage(i, o)?;
        }
        for (i, w) in self.traffic.iter().enumerate() {
            self.check_workload(i, w)?;
        }
        if self.metrics.sample_ns != 0 && self.metrics.sample_ns < 10 {
            return err("metrics.sample_ns", "must be 0 (off) or at least 10 ns");
        }
        workload::layout(self).map(|_| ())
    }

    fn check_outage(&self, i: usize, o: &Outage) -> Result<(), ScenarioError> {
        let t = &self.topology;
        let key = |f: &str| format!("outages.{i}.what.{f}");
        match o.what {
            OutageTarget::Link { gpu, port } => {
                if gpu >= t.gpus {
                    return err(key("gpu"), "no such GPU");
                }
                if usize::from(port) >= t.ports() {
                    return err(key("port"), "no such port");
                }
            }
            OutageTarget::SwitchPort { switch, port } => {
                let Some(n) = build::switch_ports(t, switch as usize) else {
                    return err(key("switch"), "no such switch");
                };
                if usize::from(port) >= n {
                    return err(key("port"), "no such port");
                }
            }
            OutageTarget::Switch { switch } => {
                if switch as usize >= t.switches() {
                    return err(key("switch"), "no such switch");
                }
            }
            OutageTarget::Plane { plane } => {
                if t.kind == TopologyKind::BackToBack {
                    return err(key("plane"), "back_to_back has no switch plane");
                }
                if usize::from(plane) >= t.ports() {
                    return err(key("plane"), "no such plane");
                }
            }
        }
        if o.duration_ns == Some(0) {
            return err(format!("outages.{i}.duration_ns"), "must be at least 1 ns");
        }
        if o.trickle > 0 && o.blackout {
            return err(
                format!("outages.{i}.trickle"),
                "a blackout lets no frame through: give trickle or blackout, not both",
            );
        }
        Ok(())
    }

    fn check_gpus(
        &self,
        key: String,
        list: &Option<Vec<u16>>,
        min: usize,
    ) -> Result<(), ScenarioError> {
        if let Some(v) = list {
            let mut seen = vec![false; usize::from(self.topology.gpus)];
            for &g in v {
                match seen.get_mut(usize::from(g)) {
                    None => return err(key, format!("GPU {g} does not exist")),
                    Some(s) if *s => return err(key, format!("GPU {g} appears twice")),
                    Some(s) => *s = true,
                }
            }
            if v.len() < min {
                return err(key, format!("needs at least {min} GPUs"));
            }
        }
        Ok(())
    }

    fn check_workload(&self, i: usize, w: &Workload) -> Result<(), ScenarioError> {
        let key = |f: &str| format!("traffic.{i}.{f}");
        let max_len = u64::from(u32::MAX);
        match w {
            Workload::LoadStore(l) => {
                self.check_gpus(key("gpus"), &l.gpus, 1)?;
                self.check_gpus(key("targets"), &l.targets, 1)?;
                if let Some(t) = &l.targets
                    && t.len() == 1
                    && l.gpus.as_ref().is_none_or(|g| g.contains(&t[0]))
                {
                    return err(
                        key("targets"),
                        format!("GPU {} would have no target but itself", t[0]),
                    );
                }
                if l.sizes.is_empty() {
                    return err(key("sizes"), "needs at least one size");
                }
                for (k, s) in l.sizes.iter().enumerate() {
                    if !(1..=256).contains(&s.bytes) {
                        return err(
                            key(&format!("sizes.{k}.bytes")),
                            format!("{} is not a size in 1..=256 bytes", s.bytes),
                        );
                    }
                    if !(s.weight.is_finite() && s.weight > 0.0) {
                        return err(
                            key(&format!("sizes.{k}.weight")),
                            format!("{} is not a positive number", shown(s.weight)),
                        );
                    }
                }
                // The weights are shares of their sum, which must be a number too.
                let total: f64 = l.sizes.iter().map(|s| s.weight).sum();
                if !total.is_finite() {
                    return err(
                        key("sizes"),
                        format!(
                            "the weights add up to {}, more than the largest number ({:e}): \
                             scale them down",
                            shown(total),
                            f64::MAX
                        ),
                    );
                }
                check_prob(&key("read_share"), l.read_share)?;
                check_prob(&key("locality"), l.locality)?;
                check_prob(&key("ordered_share"), l.ordered_share)?;
                match l.rate_mops {
                    None if l.outstanding == 0 || l.outstanding > 32768 => {
                        return err(key("outstanding"), "must be 1..=32768");
                    }
                    Some(r) if !(r.is_finite() && r > 0.0 && r <= 1e6) => {
                        return err(
                            key("rate_mops"),
                            format!(
                                "{} is not a rate above 0 and at most 1e6 million operations \
                                 per second",
                                shown(r)
                            ),
                        );
                    }
                    _ => {}
                }
                if l.slots == 0 || l.slots > MAX_LS_SLOTS {
                    return err(
                        key("slots"),
                        format!("{} is not in 1..=2^20 ({MAX_LS_SLOTS})", l.slots),
                    );
                }
                if l.hot_slots == 0 || l.hot_slots > l.slots {
                    return err(key("hot_slots"), "must be 1..=slots");
                }
                if l.stream_slots > 1 << 16 {
                    return err(key("stream_slots"), "must be at most 65536");
                }
                if l.ordered_share > 0.0 && l.streams == 0 {
                    return err(key("streams"), "must be at least 1 with ordered_share > 0");
                }
                if l.rate_mops.is_none() && u64::from(l.outstanding) >= u64::from(l.slots) * 4 {
                    // Plenty of free slots for every outstanding operation.
                    return err(key("slots"), "must be more than outstanding / 4");
                }
            }
            Workload::AllToAll(a) => {
                self.check_gpus(key("gpus"), &a.gpus, 2)?;
                if a.bytes_per_pair == 0 || a.bytes_per_pair > max_len {
                    return err(key("bytes_per_pair"), "must be 1..=2^32-1");
                }
                if a.window == 0 {
                    return err(key("window"), "must be at least 1");
                }
            }
            Workload::RingAllreduce(c)
            | Workload::HalvingDoublingAllreduce(c)
            | Workload::AllGather(c)
            | Workload::ReduceScatter(c) => {
                self.check_gpus(key("gpus"), &c.gpus, 2)?;
                let n = c
                    .gpus
                    .as_ref()
                    .map_or(usize::from(self.topology.gpus), Vec::len)
                    as u64;
                if c.sizes.is_empty() {
                    return err(key("sizes"), "needs at least one size");
                }
                for (k, &s) in c.sizes.iter().enumerate() {
                    if s < n {
                        return err(
                            key(&format!("sizes.{k}")),
                            format!("must be at least {n} (one byte per GPU)"),
                        );
                    }
                    // Every step of the collective is one RDMA write of size / N bytes (of
                    // size / 2 for halving-doubling's first), at most 2^32-1 bytes each.
                    let per = if matches!(w, Workload::HalvingDoublingAllreduce(_)) {
                        s.div_ceil(2)
                    } else {
                        s.div_ceil(n)
                    };
                    if per > max_len {
                        let most = if matches!(w, Workload::HalvingDoublingAllreduce(_)) {
                            2 * max_len
                        } else {
                            n * max_len
                        };
                        return err(
                            key(&format!("sizes.{k}")),
                            format!(
                                "{s} bytes make RDMA writes of {per} bytes, more than the 2^32-1 \
                                 one write carries: at most {most} bytes with {n} GPUs"
                            ),
                        );
                    }
                }
                if matches!(w, Workload::HalvingDoublingAllreduce(_)) && !n.is_power_of_two() {
                    return err(
                        key("gpus"),
                        "halving-doubling needs a power-of-two number of GPUs",
                    );
                }
            }
            Workload::SendRecv(s) => {
                self.check_gpus(key("stages"), &s.stages, 2)?;
                if s.bytes == 0 || s.bytes > max_len {
                    return err(key("bytes"), "must be 1..=2^32-1");
                }
                if s.microbatches == 0 {
                    return err(key("microbatches"), "must be at least 1");
                }
            }
            Workload::Incast(n) => {
                if n.target >= self.topology.gpus {
                    return err(key("target"), "no such GPU");
                }
                self.check_gpus(key("senders"), &n.senders, 1)?;
                if n.senders.as_ref().is_some_and(|s| s.contains(&n.target)) {
                    return err(key("senders"), "the target cannot send to itself");
                }
                if n.bytes == 0 || n.bytes > max_len {
                    return err(key("bytes"), "must be 1..=2^32-1");
                }
            }
            Workload::Permutation(p) => {
                self.check_gpus(key("gpus"), &p.gpus, 2)?;
                if p.bytes == 0 || p.bytes > max_len {
                    return err(key("bytes"), "must be 1..=2^32-1");
                }
            }
        }
        Ok(())
    }
}

/// The scenario key of an endpoint or switch configuration field.
fn map_field(section: &str, field: &str) -> String {
    let field = field.strip_prefix("link.").unwrap_or(field);
    const LINK: [&str; 17] = [
        "ack_timer",
        "cc_interval",
        "cf_max_interval",
        "cf_min_interval",
        "init_interval",
        "replay_timer",
        "credit_size",
        "rx_credits",
        "replay_max_bytes",
        "replay_max_frames",
        "tx_queue_bytes",
        "tx_queue_frames",
        "ack_spacing",
        "cf_min_credits",
        "mfs",
        "replay_count_max",
        "vcs",
    ];
    if LINK.contains(&field) {
        let timed = field.ends_with("_timer") || field.ends_with("_interval");
        let suffix = if timed { "_ns" } else { "" };
        let sec = if field.starts_with("tx_queue") && section == "switch" {
            "switch"
        } else {
            "link"
        };
        return format!("{sec}.{field}{suffix}");
    }
    let f = match field {
        "pack_delay" | "op_timeout" | "tag_quarantine" => format!("{field}_ns"),
        "latency" => "latency_ns".to_owned(),
        "stacks" => return "topology.stacks".to_owned(),
        "ports" if section == "endpoint" => return "topology.ports_per_stack".to_owned(),
        "rate_gbps" => return "link.rate_gbps".to_owned(),
        other => other.to_owned(),
    };
    format!("{section}.{f}")
}

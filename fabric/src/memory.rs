//! How much memory a scenario needs, estimated before anything is built, so that a run that
//! cannot fit is refused at once (with the key to change) instead of failing to allocate hours
//! into building it.
//!
//! The estimate adds up what the simulation allocates:
//!
//! - every link end (two per cable): its replay ring, a transmit queue per VC and the part of its
//!   receive ring the credits cover, as the link crate sizes them, with their records;
//! - every GPU's endpoint outside its links (tags, reassembly, reorder buffers) and every
//!   switch port's queues, at a fixed allowance each;
//! - what the workloads leave in GPU memory: an RDMA workload's data is the data pattern, which
//!   the memory keeps as one record per range written or staged (and the integrity reference
//!   as one entry), whatever the transfer's size, so it counts [`RANGE_RECORD`] bytes per range
//!   on every participating GPU, never its bytes; the slots a `load_store` workload's stores
//!   touch are literal bytes, a 4 KiB page each (for a workload without `ops`, one store per
//!   outstanding operation and microsecond for as long as the traffic is expected to last:
//!   `duration_ns`, or twice what the longest finite workload needs at line rate);
//! - the time series: one row per sample, up to `metrics.max_samples` and no more samples than
//!   the time limit allows.
//!
//! It is meant to be above the process's peak resident memory (the report's
//! `wall.peak_rss_bytes`), not a measurement of it.

use crate::scenario::{Scenario, Workload};

/// Bytes of one page of GPU memory (the endpoint's sparse memory allocates whole pages of
/// literal bytes).
const PAGE: u64 = 4096;
/// Bytes held per range an RDMA workload writes or stages on a GPU: the memory's record of the
/// described range and of the pieces of it still arriving, and the integrity reference's entry.
pub const RANGE_RECORD: u64 = 512;
/// Allowance for one GPU's endpoint outside its link ends.
const PER_GPU: u64 = 1 << 20;
/// Allowance for one switch port outside its link end (queues, counters, arbitration).
const PER_SWITCH_PORT: u64 = 4 << 10;
/// Allowance for the process itself, the report and the final check's buffers.
const BASE: u64 = 64 << 20;
/// Bytes of one queued record of a link end's rings and event queue.
const RECORD: u64 = 16;
/// VCs every port of the fabric uses.
const VCS: u64 = 4;
/// Time allowed per instance of a workload on top of its bytes at line rate (latency, waiting
/// for the slowest GPU), when estimating how long the traffic lasts.
const INSTANCE_SLACK_NS: u64 = 20_000;

/// One part of the estimate.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MemoryPart {
    /// What it is.
    pub what: String,
    /// The scenario key that sizes it, to change to make it smaller.
    pub key: String,
    /// Bytes.
    pub bytes: u64,
}

/// The memory a scenario needs, by part; the total adds an eighth for the allocator's rounding
/// and an allowance for the process.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct MemoryEstimate {
    /// Every part, largest first.
    pub parts: Vec<MemoryPart>,
    /// Their sum, plus an allowance for the process.
    pub bytes: u64,
}

impl MemoryEstimate {
    /// The largest part, if any.
    pub fn largest(&self) -> Option<&MemoryPart> {
        self.parts.first()
    }
}

/// Bytes one link end may take at most, as the link crate bounds it (`Link::new`; its rings take
/// their storage as traffic reaches into it), with `tx_queue_bytes` and `tx_queue_frames` of its
/// side.
fn link_end(s: &Scenario, tx_queue_bytes: u32, tx_queue_frames: u32) -> u64 {
    let l = &s.link;
    let mfs = u64::from(l.mfs);
    let replay = u64::from(l.replay_max_bytes) + mfs;
    let queues = VCS * (u64::from(tx_queue_bytes) + mfs);
    // The receive ring is twice the credit buffer, but only what the credits cover is used
    // unless a re-initialisation finds frames not yet taken.
    let rx_bytes = VCS * u64::from(s.rx_credits()) * u64::from(l.credit_size);
    let rx = rx_bytes + mfs;
    let records = rx_bytes / 64
        + 1
        + u64::from(l.replay_max_frames)
        + VCS * u64::from(tx_queue_frames)
        + VCS
        + 16;
    // The rings' records and the event queue hold about as many records again.
    replay + queues + rx + 2 * records * RECORD
}

/// The key that sizes workload `w`'s share of memory.
fn size_key(w: &Workload) -> &'static str {
    match w {
        // The slots of the ordered streams, when they outnumber the ordinary ones.
        Workload::LoadStore(l)
            if u64::from(l.streams).saturating_mul(u64::from(l.stream_slots))
                > u64::from(l.slots) =>
        {
            "stream_slots"
        }
        Workload::LoadStore(_) => "slots",
        Workload::AllToAll(_) | Workload::Permutation(_) => "gpus",
        Workload::RingAllreduce(_)
        | Workload::HalvingDoublingAllreduce(_)
        | Workload::AllGather(_)
        | Workload::ReduceScatter(_) => "gpus",
        Workload::SendRecv(_) => "microbatches",
        Workload::Incast(_) => "senders",
    }
}

impl Scenario {
    /// How long the traffic lasts, ns, roughly: `duration_ns` when given, else twice what the
    /// longest finite workload needs (its bytes at a GPU's line rate, and
    /// [`INSTANCE_SLACK_NS`] per instance), never more than the time limit.
    fn traffic_ns_estimate(&self) -> u64 {
        if let Some(d) = self.duration_ns {
            return d.min(self.time_limit_ns);
        }
        let gpus = u64::from(self.topology.gpus);
        // Bytes a GPU sends per ns at its line rate, every port.
        let rate = (self.link.rate_gbps / 8.0 * self.topology.ports() as f64).max(1e-9);
        let time = |bytes: f64, instances: u64| -> u64 {
            let ns = bytes / rate + (instances as f64) * INSTANCE_SLACK_NS as f64;
            if ns.is_finite() && ns < 1e18 {
                ns as u64
            } else {
                u64::MAX
            }
        };
        let longest = self
            .traffic
            .iter()
            .filter(|w| w.is_finite())
            .map(|w| {
                let t = match w {
                    Workload::LoadStore(l) => {
                        let ops = l.ops.unwrap_or(0);
                        (ops / u64::from(l.outstanding.max(1)))
                            .saturating_add(1)
                            .saturating_mul(1000)
                    }
                    Workload::AllToAll(a) => {
                        let n = a.gpus.as_ref().map_or(gpus, |v| v.len() as u64);
                        let k = u64::from(a.iterations);
                        time(
                            (n.saturating_sub(1) * a.bytes_per_pair) as f64 * k as f64,
                            k,
                        )
                    }
                    Workload::RingAllreduce(c)
                    | Workload::HalvingDoublingAllreduce(c)
                    | Workload::AllGather(c)
                    | Workload::ReduceScatter(c) => {
                        let k = u64::from(c.iterations);
                        let bytes: f64 = c.sizes.iter().map(|&b| 2.0 * b as f64).sum();
                        time(bytes * k as f64, k.saturating_mul(c.sizes.len() as u64))
                    }
                    Workload::SendRecv(r) => {
                        let n = r.stages.as_ref().map_or(gpus, |v| v.len() as u64);
                        let k = u64::from(r.iterations);
                        let per = (u64::from(r.microbatches) + n) as f64 * r.bytes as f64;
                        time(per * k as f64, k.saturating_mul(n))
                    }
                    Workload::Incast(c) => {
                        let n = c
                            .senders
                            .as_ref()
                            .map_or(gpus.saturating_sub(1), |v| v.len() as u64);
                        let k = u64::from(c.iterations);
                        time((n * c.bytes) as f64 * k as f64, k)
                    }
                    Workload::Permutation(p) => {
                        let k = u64::from(p.iterations);
                        time(p.bytes as f64 * k as f64, k)
                    }
                };
                t.saturating_add(w.start_ns())
            })
            .max()
            .unwrap_or(0);
        longest.saturating_mul(2).min(self.time_limit_ns)
    }

    /// The memory this scenario needs, by part (see the [module](crate::memory)). Call it on a
    /// valid scenario; on another one its figures mean little.
    pub fn memory_estimate(&self) -> MemoryEstimate {
        let t = &self.topology;
        let gpus = u64::from(t.gpus);
        let ports = t.ports() as u64;
        let gpu_cables = gpus.saturating_mul(ports);
        let switch_ports: u64 = (0..t.switches())
            .filter_map(|k| crate::build::switch_ports(t, k))
            .map(|n| n as u64)
            .sum();
        // Every GPU port and every switch port is one link end; a cable joins two of them.
        let cables = gpu_cables.saturating_add(switch_ports) / 2;
        let gpu_end = link_end(self, self.link.tx_queue_bytes, self.link.tx_queue_frames);
        let sw_end = link_end(
            self,
            self.switch.tx_queue_bytes,
            self.switch.tx_queue_frames,
        );
        let mut parts = vec![
            MemoryPart {
                what: format!("{cables} cables, a link end at each side"),
                key: "topology.gpus".into(),
                bytes: gpu_cables
                    .saturating_mul(gpu_end)
                    .saturating_add(switch_ports.saturating_mul(sw_end)),
            },
            MemoryPart {
                what: format!("{gpus} GPU endpoints and {switch_ports} switch ports"),
                key: "topology.gpus".into(),
                bytes: gpus
                    .saturating_mul(PER_GPU)
                    .saturating_add(switch_ports.saturating_mul(PER_SWITCH_PORT)),
            },
        ];
        let areas = crate::workload::layout(self).unwrap_or_default();
        for (i, w) in self.traffic.iter().enumerate() {
            let area = areas.get(i).copied().unwrap_or_default();
            let bytes = match w {
                Workload::LoadStore(l) => {
                    let senders = l.gpus.as_ref().map_or(gpus, |v| v.len() as u64);
                    let stores = match l.ops {
                        Some(n) => n,
                        None => {
                            // One store per outstanding slot every microsecond, about the
                            // round trip of one switch hop, for as long as the traffic lasts.
                            let ns = self.traffic_ns_estimate();
                            u64::from(l.outstanding).saturating_mul(ns / 1000 + 1)
                        }
                    };
                    let stores = (stores as f64 * (1.0 - l.read_share)).ceil() as u64;
                    let pages = area.recv_len.div_ceil(PAGE).saturating_mul(gpus);
                    senders
                        .saturating_mul(stores)
                        .min(pages)
                        .saturating_mul(PAGE)
                }
                Workload::AllToAll(a) => {
                    let n = a.gpus.as_ref().map_or(gpus, |v| v.len() as u64);
                    let window = u64::from(a.window).min(n.saturating_sub(1)).max(1);
                    // Each member receives a range from every other and stages a window.
                    n.saturating_mul(n.saturating_sub(1).saturating_add(window))
                        .saturating_mul(RANGE_RECORD)
                }
                Workload::RingAllreduce(c)
                | Workload::HalvingDoublingAllreduce(c)
                | Workload::AllGather(c)
                | Workload::ReduceScatter(c) => {
                    let n = c.gpus.as_ref().map_or(gpus, |v| v.len() as u64);
                    // A range per step and its staging; a smaller size written over a larger
                    // one leaves the larger one's tail as a range of its own.
                    let steps = match w {
                        Workload::RingAllreduce(_) => 2 * n.saturating_sub(1),
                        Workload::HalvingDoublingAllreduce(_) => 2 * u64::from(n.trailing_zeros()),
                        _ => n.saturating_sub(1),
                    };
                    n.saturating_mul(2 * (steps + 1))
                        .saturating_mul(RANGE_RECORD)
                }
                Workload::SendRecv(r) => {
                    let n = r.stages.as_ref().map_or(gpus, |v| v.len() as u64);
                    let ranges = 2 * (u64::from(r.microbatches) + 1);
                    n.saturating_mul(ranges).saturating_mul(RANGE_RECORD)
                }
                Workload::Incast(c) => {
                    let n = c
                        .senders
                        .as_ref()
                        .map_or(gpus.saturating_sub(1), |v| v.len() as u64);
                    // The target receives from every sender; each sender stages its write.
                    n.saturating_mul(2).saturating_mul(RANGE_RECORD)
                }
                Workload::Permutation(p) => {
                    let n = p.gpus.as_ref().map_or(gpus, |v| v.len() as u64);
                    // Each instance brings every member one write, from a source drawn afresh.
                    let sources = match p.iterations {
                        0 => n.saturating_sub(1),
                        k => u64::from(k).min(n.saturating_sub(1)),
                    };
                    n.saturating_mul(sources.saturating_add(1))
                        .saturating_mul(RANGE_RECORD)
                }
            };
            parts.push(MemoryPart {
                what: format!("the data of traffic.{i} ({})", w.kind()),
                key: format!("traffic.{i}.{}", size_key(w)),
                bytes,
            });
        }
        let m = &self.metrics;
        if let Some(limit) = self.time_limit_ns.checked_div(m.sample_ns) {
            let samples = u64::from(m.max_samples).min(limit).saturating_add(2);
            let row = 32 + 4 * gpus + if m.series_per_port { 4 * gpu_cables } else { 0 };
            parts.push(MemoryPart {
                what: format!("the time series ({samples} samples at most)"),
                key: "metrics.sample_ns".into(),
                bytes: samples.saturating_mul(row),
            });
        }
        parts.sort_by_key(|p| std::cmp::Reverse(p.bytes));
        let sum = parts
            .iter()
            .fold(0u64, |acc, p| acc.saturating_add(p.bytes));
        // The allocator rounds and fragments: an eighth more.
        let bytes = sum.saturating_add(sum / 8).saturating_add(BASE);
        MemoryEstimate { parts, bytes }
    }
}

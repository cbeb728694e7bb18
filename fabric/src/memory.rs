//! How much memory a scenario needs, estimated before anything is built, so that a run that
//! cannot fit is refused at once (with the key to change) instead of failing to allocate hours
//! into building it.
//!
//! The estimate adds up what the simulation holds at its busiest:
//!
//! - what is built before any traffic: every link end (two per cable; its rings take storage
//!   only as traffic reaches into them), every GPU's endpoint outside its links, every switch
//!   port's queues and arbitration state, at figures measured on the release build;
//! - the frames in flight, which traffic bounds, not the size of the rings: a GPU holds, at
//!   most, the RDMA data its workloads have posted and not yet seen complete, and never more
//!   than its queues and replay buffers take (per port: `endpoint.port_queue`, the link's
//!   `tx_queue_bytes` and `replay_max_bytes`), each frame's buffer counted half as large again
//!   (a buffer from a pool may be larger than its frame); the switches hold at most the receive
//!   buffers of the VC that carries RDMA data, and never more than all GPUs have posted (their
//!   own copies, or their senders' buffers taken over); loads, stores and their responses take
//!   at most their outstanding operations' bytes;
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
//! `wall.peak_rss_bytes`) and within twice it: `fabric/tests/memory_estimate.rs` runs scenarios
//! of several sizes and checks the ratio; docs/performance.md gives it for every example.

use crate::scenario::{Scenario, Workload};

/// Bytes of one page of GPU memory (the endpoint's sparse memory allocates whole pages of
/// literal bytes).
const PAGE: u64 = 4096;
/// Bytes held per range an RDMA workload writes or stages on a GPU: the memory's record of the
/// described range and of the pieces of it still arriving, and the integrity reference's entry.
pub const RANGE_RECORD: u64 = 512;
/// One link end as built, its rings still empty (measured: 5.3 KiB, release build, 2026-11-29).
const LINK_END_BUILT: u64 = 5632;
/// One GPU's endpoint as built, outside its link ends, with the fabric's and the workloads'
/// state for it (measured: 54 KiB).
const GPU_BUILT: u64 = 56 << 10;
/// One switch port outside its link end: queue index, bitmaps, arbitration.
const PER_SWITCH_PORT: u64 = 1 << 10;
/// The process itself: code, the C library, the allocator's own state and the pages it keeps
/// for reuse, the report and the final check's buffers (measured with the `ethlink` binary,
/// which allocates with jemalloc: 7 MiB more than the parts below for the two-GPU `lossy_link`,
/// 10 to 14 MiB more in the examples of a few tens of MiB; a debug build's code and its larger
/// frames add about 11 MiB).
const BASE: u64 = if cfg!(debug_assertions) {
    28 << 20
} else {
    16 << 20
};
/// A partitioned run's second thread: its allocator caches and its stack.
const PARTITION_BASE: u64 = 6 << 20;
/// Bytes a queued frame takes beyond its payload: its buffer's headers and the records that
/// point at it.
const FRAME_OVERHEAD: u64 = 128;
/// Time allowed per instance of a workload on top of its bytes at line rate (latency, waiting
/// for the slowest GPU), when estimating how long the traffic lasts.
const INSTANCE_SLACK_NS: u64 = 2_000;

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

/// The memory a scenario needs, by part; the total adds an allowance for the process.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct MemoryEstimate {
    /// Every part, largest first.
    pub parts: Vec<MemoryPart>,
    /// Their sum, plus an allowance for the process.
    pub bytes: u64,
}

impl MemoryEstimate {
    /// The estimate for the same scenario run as two partitions
    /// ([`crate::Fabric::set_partitioned`]): the allowance for the process grows by the second
    /// partition's thread and what both partitions hold (each partition's per-port tables, the
    /// frames handed over at a window's end): a tenth of the parts more (measured: 6 to 7 %
    /// more at peak in the large examples).
    #[must_use]
    pub fn partitioned(mut self) -> MemoryEstimate {
        let sum = self
            .parts
            .iter()
            .fold(0u64, |acc, p| acc.saturating_add(p.bytes));
        self.bytes = self
            .bytes
            .saturating_add(PARTITION_BASE)
            .saturating_add(sum / 10);
        self
    }

    /// The largest part, if any.
    pub fn largest(&self) -> Option<&MemoryPart> {
        self.parts.first()
    }
}

/// RDMA bytes one GPU may have posted and not yet seen complete at once, for workload `w`: a
/// second instance may begin before the first has completed everywhere.
fn rdma_posted(w: &Workload, gpus: u64) -> u64 {
    match w {
        Workload::LoadStore(_) => 0,
        Workload::AllToAll(a) => {
            let n = a.gpus.as_ref().map_or(gpus, |v| v.len() as u64);
            let window = u64::from(a.window).min(n.saturating_sub(1)).max(1);
            window.saturating_mul(a.bytes_per_pair).saturating_mul(2)
        }
        Workload::RingAllreduce(c)
        | Workload::HalvingDoublingAllreduce(c)
        | Workload::AllGather(c)
        | Workload::ReduceScatter(c) => c.sizes.iter().copied().max().unwrap_or(0),
        Workload::SendRecv(r) => r.bytes.saturating_mul(2),
        Workload::Incast(c) => c.bytes.saturating_mul(2),
        Workload::Permutation(p) => p.bytes.saturating_mul(2),
    }
}

/// Load and store bytes one GPU may have outstanding for workload `w`, requests and responses.
fn ls_outstanding(w: &Workload) -> u64 {
    match w {
        Workload::LoadStore(l) => {
            let largest = l.largest_size().unwrap_or(0);
            u64::from(l.outstanding)
                .saturating_mul(largest.saturating_add(FRAME_OVERHEAD))
                .saturating_mul(2)
        }
        _ => 0,
    }
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
        let ends = gpu_cables.saturating_add(switch_ports);
        let cables = ends / 2;
        let mfs = u64::from(self.link.mfs);
        // What one GPU's queues and replay buffers take at most, every port: frames of RDMA
        // data, each with its overhead.
        let per_port = u64::from(self.endpoint.port_queue)
            .saturating_add(u64::from(self.link.tx_queue_bytes))
            .saturating_add(u64::from(self.link.replay_max_bytes))
            .saturating_add(mfs);
        let frames = |bytes: u64| -> u64 {
            let seg = u64::from(self.endpoint.segment).clamp(1, mfs.max(1));
            bytes.saturating_add(bytes.div_ceil(seg).saturating_mul(FRAME_OVERHEAD))
        };
        let posted: u64 = self
            .traffic
            .iter()
            .map(|w| rdma_posted(w, gpus))
            .fold(0u64, u64::saturating_add);
        // A buffer is taken from a pool of the endpoint's and may be larger than its frame:
        // half as much again.
        let per_gpu = frames(posted.min(ports.saturating_mul(per_port))).saturating_mul(3) / 2;
        // Named by the first load-store workload's `outstanding`, the key that sizes it.
        let ls_key = self
            .traffic
            .iter()
            .position(|w| matches!(w, Workload::LoadStore(_)))
            .map_or_else(
                || "traffic".to_owned(),
                |i| format!("traffic.{i}.outstanding"),
            );
        let ls: u64 = self
            .traffic
            .iter()
            .map(ls_outstanding)
            .fold(0u64, u64::saturating_add);
        // The switches: the receive buffer of the RDMA VC of every port, and never more than
        // the GPUs have posted in all.
        let rx_vc = u64::from(self.rx_credits()).saturating_mul(u64::from(self.link.credit_size));
        let held = frames(
            switch_ports
                .saturating_mul(rx_vc)
                .min(gpus.saturating_mul(posted)),
        );
        let mut parts = vec![
            MemoryPart {
                what: format!(
                    "{cables} cables with a link end at each side, {gpus} GPU endpoints and \
                     {switch_ports} switch ports, as built"
                ),
                key: "topology.gpus".into(),
                bytes: ends
                    .saturating_mul(LINK_END_BUILT)
                    .saturating_add(gpus.saturating_mul(GPU_BUILT))
                    .saturating_add(switch_ports.saturating_mul(PER_SWITCH_PORT)),
            },
            MemoryPart {
                what: format!("RDMA frames queued and awaiting acknowledgement at {gpus} GPUs"),
                key: "endpoint.port_queue".into(),
                bytes: gpus.saturating_mul(per_gpu),
            },
            MemoryPart {
                what: format!("frames held by {switch_ports} switch ports"),
                key: "link.rx_credits".into(),
                bytes: held,
            },
            MemoryPart {
                what: "loads, stores and their responses in flight".into(),
                key: ls_key,
                bytes: gpus.saturating_mul(ls),
            },
        ];
        parts.retain(|p| p.bytes > 0);
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
                    // Only the targets' memory is written.
                    let targets = l.targets.as_ref().map_or(gpus, |v| v.len() as u64);
                    let pages = area.recv_len.div_ceil(PAGE).saturating_mul(targets);
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
        // Samples while the traffic is expected to last, and as many again for the drain.
        if let Some(limit) = self.traffic_ns_estimate().checked_div(m.sample_ns) {
            let samples = u64::from(m.max_samples)
                .min(limit.saturating_mul(2))
                .saturating_add(2);
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
        // The allocator's rounding is in the figures above (measured as resident memory, and
        // frame buffers counted half as large again).
        let bytes = sum.saturating_add(BASE);
        MemoryEstimate { parts, bytes }
    }
}

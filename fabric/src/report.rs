//! What a run measured: the [`Report`].
//!
//! Everything but [`Report::wall`] is a function of the scenario alone: two runs of one scenario
//! serialise to the same bytes once `wall` is removed.

use serde::Serialize;

pub use crate::check::{Integrity, Mismatch};

/// Latency statistics of one kind of operation, ns (completion time less issue time).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Latency {
    /// Operations measured.
    pub count: u64,
    /// Smallest.
    pub min: u64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest.
    pub max: u64,
}

impl Latency {
    /// Statistics of `samples` (sorted in place).
    pub(crate) fn of(samples: &mut [u32]) -> Latency {
        if samples.is_empty() {
            return Latency::default();
        }
        samples.sort_unstable();
        let n = samples.len();
        // Nearest rank: the smallest sample with at least q of all samples at or below it.
        let q = |p: f64| -> u64 {
            let rank = ((p * n as f64).ceil() as usize).clamp(1, n);
            u64::from(samples.get(rank - 1).copied().unwrap_or(0))
        };
        let sum: u64 = samples.iter().map(|&v| u64::from(v)).sum();
        Latency {
            count: n as u64,
            min: u64::from(samples.first().copied().unwrap_or(0)),
            mean: sum as f64 / n as f64,
            p50: q(0.5),
            p99: q(0.99),
            p999: q(0.999),
            max: u64::from(samples.last().copied().unwrap_or(0)),
        }
    }
}

/// A latency histogram for CDF plots: bucket `i` counts the latencies in
/// `(bounds[i-1], bounds[i]]` ns (the first from 0). Buckets are log-spaced, 16 per power of
/// two, so a bucket's width is at most 1/16 of its bound; empty buckets are left out.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Histogram {
    /// Upper bounds of the buckets, ns.
    pub bounds: Vec<u64>,
    /// Operations in each bucket.
    pub counts: Vec<u64>,
}

impl Histogram {
    /// The histogram of sorted `samples`.
    pub(crate) fn of_sorted(samples: &[u32]) -> Histogram {
        let mut h = Histogram::default();
        for &s in samples {
            let b = bucket_bound(u64::from(s));
            if h.bounds.last() == Some(&b) {
                if let Some(c) = h.counts.last_mut() {
                    *c += 1;
                }
            } else {
                h.bounds.push(b);
                h.counts.push(1);
            }
        }
        h
    }
}

/// The upper bound of the bucket of `v`: `v` itself below 16, else `v` rounded up to 16
/// steps per power of two.
fn bucket_bound(v: u64) -> u64 {
    if v < 16 {
        return v;
    }
    let shift = 63 - v.leading_zeros() - 4;
    let step = 1u64 << shift;
    v.div_ceil(step) * step
}

/// Operations of one kind.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OpKindReport {
    /// The kind (`load`, `store`, `rdma_write`, ...).
    pub kind: String,
    /// Operations issued.
    pub issued: u64,
    /// Operations completed, by status name (`OK`, `TIMEOUT`, ...), statuses with a count only.
    pub by_status: Vec<(String, u64)>,
    /// Latency of every completion, whatever its status.
    pub latency: Latency,
    /// Latency of the completions with status OK.
    pub latency_ok: Latency,
    /// Histogram of every completion's latency.
    pub histogram: Histogram,
    /// Bytes moved by the operations that completed OK.
    pub bytes_ok: u64,
}

/// Operations over the whole run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Operations {
    /// Per kind that occurred.
    pub kinds: Vec<OpKindReport>,
    /// Operations issued or posted (accepted by an endpoint).
    pub issued: u64,
    /// Completions received for them.
    pub completed: u64,
    /// Of which OK.
    pub completed_ok: u64,
    /// Of which with an error status.
    pub completed_error: u64,
    /// Of those with an error status, the ones an outage of the scenario explains (outstanding
    /// when it began or ended, or within the grace time after; see
    /// [`ErrorsExpected::Explained`](crate::scenario::ErrorsExpected::Explained)).
    pub errors_explained: u64,
    /// Of those with an error status, the ones no outage explains.
    pub errors_unexplained: u64,
    /// Operations issued and never completed, after the drain (must be 0).
    pub lost: u64,
    /// Operations still outstanding when the time limit cut the run short: neither lost nor
    /// completed, their fate is unknown.
    pub cut_off: u64,
    /// Completions for an operation already completed (must be 0).
    pub duplicated: u64,
    /// Completions that matched no operation, or the wrong one (must be 0).
    pub unexpected: u64,
    /// Open-loop load-store arrivals that found every tag held (skipped).
    pub refused_no_tag: u64,
    /// Times a workload waited for the RDMA queue of a GPU to have room.
    pub rdma_queue_waits: u64,
}

/// Load of one GPU, stack or port over the traffic time.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Load {
    /// The GPU.
    pub gpu: u16,
    /// The stack (`None` for a GPU's total).
    pub stack: Option<u8>,
    /// The port index on the GPU, `stack * ports_per_stack + port` (`None` for GPU and stack
    /// totals).
    pub port: Option<u16>,
    /// DATA frame payload bytes sent (network header and transactions).
    pub tx_bytes: u64,
    /// DATA frame payload bytes received.
    pub rx_bytes: u64,
    /// DATA frames sent.
    pub tx_frames: u64,
    /// `tx_bytes` over the traffic time, Gb/s.
    pub tx_gbps: f64,
    /// `rx_bytes` over the traffic time, Gb/s.
    pub rx_gbps: f64,
    /// Share of the line rate the port's transmitter spent on the wire (every frame, with
    /// preamble and gap); for a GPU or stack, the mean over its ports.
    pub wire_utilisation: f64,
}

/// Throughput and balance.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Throughput {
    /// The traffic time the rates are computed over, ns (start to stop).
    pub window_ns: u64,
    /// Line rate of one GPU (every port), Gb/s.
    pub gpu_line_rate_gbps: f64,
    /// Per GPU.
    pub gpus: Vec<Load>,
    /// Per GPU and stack.
    pub stacks: Vec<Load>,
    /// Per GPU port.
    pub ports: Vec<Load>,
    /// Max over mean of the bytes sent by the GPU ports (1 is perfect balance; 0 when nothing
    /// was sent).
    pub port_imbalance: f64,
    /// Max over mean of the bytes sent by the switch ports that sent any.
    pub switch_port_imbalance: f64,
}

/// Link-layer counters summed over every link end (GPU and switch ports).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LinkTotals {
    /// Link ends.
    pub ends: u64,
    /// DATA frames taken back after a stomped FCS (link `tx_stomped`).
    pub tx_stomped: u64,
    /// Frames discarded on arrival for a stomped FCS (link `rx_stomped`).
    pub rx_stomped: u64,
    /// DATA frames sent for the first time.
    pub data_frames: u64,
    /// DATA frames retransmitted (LLR replays).
    pub frames_replayed: u64,
    /// Replays started by a NACK.
    pub replays_by_nack: u64,
    /// Replays started by the replay timer.
    pub replay_timeouts: u64,
    /// NACKs sent.
    pub nacks: u64,
    /// ACKs sent.
    pub acks: u64,
    /// CF (credit update) frames sent.
    pub cf: u64,
    /// CC (credit resync) frames sent.
    pub cc: u64,
    /// FLUSH entries.
    pub flushes: u64,
    /// FLUSH entries because a frame reached `llr_max_age` (LINK-3-18); counted in `flushes`
    /// too.
    pub flushes_aged: u64,
    /// Frames reported of unknown fate (FLUSH or link down).
    pub frames_unknown_fate: u64,
    /// Frames received with a bad FCS.
    pub fcs_errors: u64,
    /// DATA duplicates discarded.
    pub duplicates: u64,
    /// Times a VC with frames waiting ran out of credit.
    pub credit_stalls: u64,
    /// Nanoseconds VCs with frames waiting spent without credit.
    pub credit_stall_ns: u64,
    /// DATA frames refused for want of receive buffer (link.md §4; must be 0).
    pub credit_overruns: u64,
    /// Transitions to UP.
    pub link_ups: u64,
    /// Re-initialisations.
    pub reinits: u64,
    /// Highest replay buffer occupancy of any end, bytes.
    pub replay_bytes_max: u64,
    /// Longest any frame waited in a replay buffer from its first transmission to its ACK, ns
    /// (at most `llr_max_age`, LINK-3-18).
    pub replay_age_max_ns: u64,
    /// Every link end that waited for credit, in the order of the GPUs and their ports, then the
    /// switches and theirs.
    pub port_stalls: Vec<PortStall>,
}

/// The credit stalls of one link end (link.md §5; the buffer it waits on is its peer's).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PortStall {
    /// The end: `gpu<g>.port<p>` or `switch<s>.port<p>`.
    pub end: String,
    /// Times a VC with frames waiting ran out of credit.
    pub stalls: u64,
    /// Nanoseconds its VCs with frames waiting spent without credit, summed over the VCs.
    pub stall_ns: u64,
}

/// Endpoint counters summed over the GPUs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EndpointTotals {
    /// Requests sent again.
    pub retries: u64,
    /// Requests or responses moved to another port.
    pub moved: u64,
    /// Responses discarded (late, unmatched).
    pub responses_discarded: u64,
    /// Frames for another GPU.
    pub misdelivered: u64,
    /// Frames or transactions malformed.
    pub malformed: u64,
    /// Requests performed as a target.
    pub requests_served: u64,
    /// Frames that carried more than one transaction.
    pub packed_frames: u64,
    /// Transactions that shared a frame.
    pub packed_txns: u64,
    /// RDMA writes refused a reassembly slot.
    pub reassembly_refused: u64,
    /// Reassemblies forgotten for want of progress.
    pub reassembly_expired: u64,
    /// Duplicate RDMA segments ignored.
    pub duplicate_segments: u64,
    /// Responses dropped after waiting for a usable port.
    pub responses_expired: u64,
    /// Responses lost with their link.
    pub responses_lost: u64,
    /// Times a target stopped taking requests for its response backlog.
    pub backlog_stalls: u64,
    /// Highest reorder buffer of any GPU, bytes.
    pub reorder_bytes_max: u64,
    /// Highest number of reassemblies of any GPU.
    pub reassembly_max: u64,
}

/// Counters of one switch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SwitchReport {
    /// Switch number.
    pub switch: u32,
    /// DATA frames forwarded.
    pub forwarded: u64,
    /// Highest bytes held for one input port and VC.
    pub held_max_bytes: u64,
    /// Frames discarded by reason.
    pub malformed: u64,
    /// Frames for an unreachable GPU.
    pub unroutable: u64,
    /// Frames lost to a port going down.
    pub lost_port_down: u64,
    /// Frames dropped for want of buffer (switch.md §4: must be 0).
    pub buffer_drops: u64,
    /// Frames discarded for staying longer than `max_residence` (switch.md §4).
    pub discard_aged: u64,
    /// Frames whose copy began before their last byte had arrived (cut-through, switch.md §6).
    pub cut_through: u64,
    /// Of those, copies ended with a stomped FCS (switch.md §6).
    pub stomped: u64,
}

/// Switch counters summed, and per switch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SwitchTotals {
    /// DATA frames forwarded.
    pub forwarded: u64,
    /// Highest bytes held for any input port and VC of any switch (the buffer high-water mark).
    pub held_max_bytes: u64,
    /// Input buffer of one port and VC, bytes (`rx_credits * credit_size`).
    pub input_buffer_bytes: u64,
    /// Malformed frames.
    pub malformed: u64,
    /// Unroutable frames.
    pub unroutable: u64,
    /// Frames lost to ports going down.
    pub lost_port_down: u64,
    /// Frames dropped for want of buffer (must be 0).
    pub buffer_drops: u64,
    /// Frames discarded for staying longer than `max_residence`.
    pub discard_aged: u64,
    /// Frames whose copy began before their last byte had arrived (cut-through).
    pub cut_through: u64,
    /// Of those, copies ended with a stomped FCS.
    pub stomped: u64,
    /// Per switch.
    pub switches: Vec<SwitchReport>,
}

/// One row of the collectives table, as nccl-tests prints one: one workload and size.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CollectiveRow {
    /// Index of the workload in the scenario's `traffic`.
    pub workload: usize,
    /// Its kind (`all_to_all`, `ring_allreduce`, ...).
    pub name: String,
    /// Participating GPUs.
    pub gpus: usize,
    /// nccl-tests' size, bytes.
    pub size_bytes: u64,
    /// Instances completed.
    pub count: u64,
    /// Mean time of an instance, ns (its first post to its last completion).
    pub time_ns: f64,
    /// Shortest instance, ns.
    pub min_time_ns: u64,
    /// Longest instance, ns.
    pub max_time_ns: u64,
    /// Algorithm bandwidth `size / time`, GB/s.
    pub algbw_gbytes: f64,
    /// Bus bandwidth, GB/s (nccl-tests' factor for the collective).
    pub busbw_gbytes: f64,
    /// RDMA payload bytes each writing GPU wrote per instance, on average (for an incast: the
    /// bytes the target received per instance).
    pub bytes_per_gpu: u64,
    /// `bytes_per_gpu / time`: the mean payload rate of a participating GPU, Gb/s.
    pub gpu_payload_gbps: f64,
    /// `gpu_payload_gbps` over the GPU's line rate (every port): the share of the line rate
    /// the collective achieved, protocol overhead included.
    pub line_rate_share: f64,
    /// Writes that completed with an error status.
    pub errors: u64,
}

/// Per-frame protocol overhead, to read the line-rate shares against.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Overhead {
    /// RDMA segment payload, bytes.
    pub segment_bytes: u64,
    /// Bytes a full RDMA_WRITE segment adds on the wire: Ethernet 14, link header 6, network
    /// header 8, RDMA_WRITE header 28, FCS 4, preamble and gap 20.
    pub segment_overhead_bytes: u64,
    /// `segment / (segment + overhead)`: the best share of the line rate RDMA payload can have.
    pub rdma_payload_bound: f64,
    /// Bytes on every cable (both directions, preamble and gap included) that were control
    /// frames (ACK, NACK, CF, CC, INIT), as a share of all bytes on the cables.
    pub control_share: f64,
    /// DATA frame payload bytes (network header and transactions) over all bytes on the cables.
    pub data_payload_share: f64,
}

/// Totals of the simulation itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SimTotals {
    /// Events processed.
    pub events: u64,
    /// Frame-hops: frames put on any cable (control frames and frames that were lost included).
    pub frame_hops: u64,
    /// Of which DATA frames.
    pub data_frame_hops: u64,
    /// DATA frames delivered to GPUs.
    pub data_frames_delivered: u64,
    /// Bytes put on cables (frames only).
    pub wire_bytes: u64,
    /// Frames damaged by the injected faults (bad FCS at the receiver).
    pub frames_damaged: u64,
    /// Frames that vanished (injected drops and blackouts).
    pub frames_dropped: u64,
    /// Frames delivered twice.
    pub frames_duplicated: u64,
    /// Frames lost in flight on a cable that was cut.
    pub frames_cut: u64,
    /// Times a node had a deadline due and nothing could move: it was woken again 1 ns later.
    pub idle_wakeups: u64,
}

/// A time series of the run, one entry per interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Series {
    /// Interval, ns.
    pub interval_ns: u64,
    /// Start of each interval, ns of simulated time.
    pub t_ns: Vec<u64>,
    /// Operations completed in each interval.
    pub ops_completed: Vec<u64>,
    /// Bytes moved by the operations completed OK in each interval.
    pub bytes_completed: Vec<u64>,
    /// Mean transmit utilisation of every GPU's ports in each interval: `[interval][gpu]`.
    pub gpu_utilisation: Vec<Vec<f32>>,
    /// Transmit utilisation of every GPU port in each interval: `[interval][gpu * ports +
    /// port]` (empty unless `metrics.series_per_port`).
    pub port_utilisation: Vec<Vec<f32>>,
    /// Samples dropped beyond `metrics.max_samples`.
    pub dropped: u64,
}

/// The wall-clock side of the run: the only part of a report that differs between two runs of
/// one scenario.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Wall {
    /// Seconds of wall-clock time `Fabric::run` took (the final check included).
    pub seconds: f64,
    /// Of which the final memory check.
    pub check_seconds: f64,
    /// Frame-hops per wall second.
    pub frame_hops_per_s: f64,
    /// DATA frames delivered to GPUs per wall second.
    pub data_frames_per_s: f64,
    /// Events per wall second.
    pub events_per_s: f64,
    /// Simulated time over wall time.
    pub sim_over_wall: f64,
    /// Peak resident memory of the process, bytes (`VmHWM`), if known.
    pub peak_rss_bytes: Option<u64>,
    /// The memory the scenario was estimated to need before it was built
    /// ([`crate::Scenario::memory_estimate`]), bytes: meant to be above `peak_rss_bytes` and
    /// within twice it.
    pub memory_estimate_bytes: u64,
    /// A partitioned run's windows and how long each partition worked in them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partitions: Option<PartitionWall>,
}

/// How a partitioned run ([`crate::Fabric::set_partitioned`]) spent its wall time: each window
/// lasts as long as the busier partition works in it, so the closer the two busy times, the
/// more the second core gives.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PartitionWall {
    /// Switches simulated beside the GPUs, in their partition.
    pub switches_with_gpus: u32,
    /// Windows of simulated time run.
    pub windows: u64,
    /// Seconds the partition of the GPUs (and of the switches kept with them) worked.
    pub gpus_busy_seconds: f64,
    /// Seconds the other switches' partition worked.
    pub switches_busy_seconds: f64,
}

/// Everything a run measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    /// The scenario's seed.
    pub seed: u64,
    /// GPUs.
    pub gpus: usize,
    /// Switches.
    pub switches: usize,
    /// Cables.
    pub cables: usize,
    /// End of bring-up: every link UP and the traffic started, ns.
    pub start_ns: u64,
    /// The workloads stopped issuing, ns.
    pub stop_ns: u64,
    /// The run ended (every operation completed, or the drain limit), ns.
    pub end_ns: u64,
    /// Whether every link was UP at `start_ns` (bring-up gives up after 100 us).
    pub all_links_up: bool,
    /// The run reached the scenario's `time_limit_ns` and was cut short.
    pub time_limit_hit: bool,
    /// The verdict: true when the data is intact (`data_intact`), every link came up, the run
    /// was not cut short by the time limit, and every operation that ended with an error
    /// status is one the scenario's `[expect]` accepts.
    pub pass: bool,
    /// True when nothing was lost, duplicated, unexpected or corrupted and no switch dropped a
    /// frame for want of buffer: the data check alone, whatever the verdict.
    pub data_intact: bool,
    /// Why the run fails, one short phrase each (empty when it passes).
    pub failures: Vec<String>,
    /// Operations.
    pub ops: Operations,
    /// Data integrity.
    pub integrity: Integrity,
    /// Throughput and balance.
    pub throughput: Throughput,
    /// The collectives table.
    pub collectives: Vec<CollectiveRow>,
    /// Protocol overhead.
    pub overhead: Overhead,
    /// Link counters.
    pub links: LinkTotals,
    /// Endpoint counters.
    pub endpoints: EndpointTotals,
    /// Switch counters.
    pub switch: SwitchTotals,
    /// Simulation totals.
    pub sim: SimTotals,
    /// Time series.
    pub series: Series,
    /// Wall-clock figures.
    pub wall: Wall,
}

impl Report {
    /// The report without its wall-clock section, for comparing runs.
    pub fn without_wall(&self) -> Report {
        Report {
            wall: Wall::default(),
            ..self.clone()
        }
    }

    /// The operation kind `kind` (`"load"`, `"rdma_write"`, ...), if any occurred.
    pub fn kind(&self, kind: &str) -> Option<&OpKindReport> {
        self.ops.kinds.iter().find(|k| k.kind == kind)
    }
}

/// Most bytes of `/proc/self/status` read: a few kilobytes on any kernel.
const STATUS_LIMIT: u64 = 64 << 10;

/// Peak resident memory of this process, from `/proc/self/status` (`VmHWM`).
pub fn peak_rss_bytes() -> Option<u64> {
    use std::io::Read;
    let mut s = String::new();
    std::fs::File::open("/proc/self/status")
        .ok()?
        .take(STATUS_LIMIT)
        .read_to_string(&mut s)
        .ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let mut v: Vec<u32> = (1..=1000).rev().collect();
        let l = Latency::of(&mut v);
        assert_eq!(
            (l.min, l.p50, l.p99, l.p999, l.max),
            (1, 500, 990, 999, 1000)
        );
        assert_eq!(l.count, 1000);
        assert!((l.mean - 500.5).abs() < 1e-9);
    }

    #[test]
    fn histogram_buckets_are_tight() {
        for v in [0u64, 1, 15, 16, 17, 100, 1000, 123_456] {
            let b = bucket_bound(v);
            assert!(b >= v && b - v <= v / 16 + 1, "{v} -> {b}");
        }
        let h = Histogram::of_sorted(&[1, 1, 2, 700, 701]);
        assert_eq!(h.counts.iter().sum::<u64>(), 5);
        assert_eq!(h.bounds.first(), Some(&1));
    }
}

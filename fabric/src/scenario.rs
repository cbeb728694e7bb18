//! What a run simulates: the [`Scenario`], plain data read from JSON or TOML.
//!
//! Every struct here takes `#[serde(default)]` (a field left out keeps its default) and
//! `#[serde(deny_unknown_fields)]` (a misspelt field is an error, not a silent default).
//! [`Scenario::default`] is the default scenario: 8 GPUs of 4 stacks x 2 ports at 400 Gb/s, a
//! single tier of 8 switch planes, 64 B loads and stores beside an RDMA all-to-all and a ring
//! all-reduce, at a bit error rate of 1e-10 (a residual error rate after a low-latency FEC, which
//! link-level retry is there to absorb).
//!
//! # Shape
//!
//! In JSON (TOML has the same keys; `[topology]`, `[[traffic]]` and so on):
//!
//! ```json
//! {
//!   "seed": 1,
//!   "duration_ns": null,          // traffic time after bring-up; null: until the work is done
//!   "stop_when_done": true,       // stop once every finite workload is done
//!   "drain_ns": null,             // longest wait for outstanding operations after the stop
//!   "time_limit_ns": 100000000,   // safety net: the run ends here whatever its state
//!   "topology": { "kind": "single_tier", "gpus": 8, "stacks": 4, "ports_per_stack": 2,
//!                 "leaves": 2, "spines": 2 },
//!   "link": { "rate_gbps": 400.0, "cable_m": 5.0, "propagation_ns": null, "ber": 1e-10,
//!             "loss": 0.0, "drop": 0.0, "burst": 1, "control_loss": 0.0, "duplicate": 0.0,
//!             "credit_size": 64, "rx_credits": 512, "tx_queue_frames": 4, ... },
//!   "endpoint": { "policy": "spray", "op_timeout_ns": 200000, ... },
//!   "switch": { "latency_ns": 250, "mode": "cut_through", "egress_depth": 2, ... },
//!   "outages": [ { "what": { "kind": "switch", "switch": 0 }, "start_ns": 20000,
//!                  "duration_ns": null, "blackout": false, "trickle": 0 } ],
//!   "traffic": [
//!     { "kind": "load_store", "sizes": [ { "bytes": 64, "weight": 1.0 } ], "read_share": 0.5,
//!       "outstanding": 8 },
//!     { "kind": "all_to_all", "bytes_per_pair": 262144, "iterations": 2 },
//!     { "kind": "ring_allreduce", "sizes": [1048576, 4194304] }
//!   ],
//!   "metrics": { "sample_ns": 1000, "series_per_port": true }
//! }
//! ```
//!
//! Times are nanoseconds of simulated time. Outage and workload start times count from the end
//! of bring-up (the instant every link is UP), which the report gives as `start_ns`.
//!
//! # Topologies ([`Topology`])
//!
//! GPU `g` has `stacks x ports_per_stack` ports; port `i` is port `i % ports_per_stack` of stack
//! `i / ports_per_stack`. Nodes are numbered GPUs first (GPU `g` is node `g`), then switches.
//!
//! - `back_to_back`: two GPUs; port `i` of GPU 0 is cabled to port `i` of GPU 1. No switch.
//! - `single_tier`: one switch per GPU port index (a *plane*, rail-style): switch `p` has `gpus`
//!   ports and port `g` of switch `p` is cabled to port `p` of GPU `g`.
//! - `two_tier`: per plane `p`, `leaves` leaf switches and `spines` spine switches. GPU `g`
//!   hangs on leaf `g / ceil(gpus / leaves)` of its plane, at down-port `g % ceil(gpus /
//!   leaves)`; leaf port `ceil(gpus / leaves) + s` goes to spine `s`, whose port `l` goes back to
//!   leaf `l`. Leaves reach remote GPUs over every up-port. With `leaf_uplinks =
//!   "by_destination"` (the default) a leaf's entry for remote GPU `g` has up-port `g mod spines`
//!   as its first group and the other up-ports as its second (switch.md §2.3), so each spine
//!   carries its own destinations; with `"by_path"` all up-ports form one group and the switch
//!   picks one per path by its fixed hash (switch.md §2.1). Switch numbers: plane `p`'s leaves are `p * (leaves +
//!   spines) + l`, its spines `p * (leaves + spines) + leaves + s`.
//!
//! # Workloads ([`Workload`], the `traffic` list)
//!
//! Each entry has a `kind`. Workloads run side by side; `start_ns` delays one. RDMA workloads run
//! *instances* one after the other (each a collective of one size; `iterations` of each size):
//! an instance starts when the previous one has completed on every GPU. `iterations: 0` repeats
//! until the run stops (a *background* workload, as is a `load_store` without `ops`). With
//! `stop_when_done` the run stops when every finite workload is done; background ones stop then
//! too. Every RDMA write and every store carries a pattern derived from the seed and the
//! operation, and every GPU's memory is checked against a reference at the end.
//!
//! - `load_store`: each GPU of `gpus` (default all) issues loads (share `read_share`) and stores
//!   to GPUs of `targets` (default all others), sizes drawn from `sizes`, either closed-loop
//!   (`outstanding` operations at all times, 8 by default) or, when `rate_mops` is given,
//!   open-loop (`rate_mops` million operations per second per GPU, Poisson). Addresses: `slots` slots per (source, target), a share `locality`
//!   of accesses going to the first `hot_slots`. A share `ordered_share` of operations go on
//!   ordered streams (`streams` per GPU); with `stream_slots` > 0 each stream has that many
//!   slots of its own per target, which its operations share while outstanding (stores there
//!   write the whole slot, and loads are checked against the stores issued before them on the
//!   stream). `ops` bounds the operations per GPU.
//! - `all_to_all`: every GPU writes `bytes_per_pair` to every other (MoE expert parallelism), at
//!   most `window` writes outstanding per GPU, destinations staggered (g+1, g+2, ...).
//! - `ring_allreduce`, `all_gather`, `reduce_scatter`: ring algorithms over `gpus` in order, one
//!   size of `sizes` per instance, built on RDMA writes of size/N to the next GPU of the ring:
//!   2(N-1) steps for all-reduce, N-1 for the others; a GPU takes its next step when its own
//!   write and the one it waits for from its predecessor have completed.
//! - `halving_doubling_allreduce`: log2 N steps of reduce-scatter with halving sizes, then log2 N
//!   steps of all-gather with doubling sizes, exchanging with the partner `g xor 2^k`; N a power
//!   of two.
//! - `send_recv`: a pipeline over `stages` (default all GPUs in order): each of `microbatches`
//!   transfers of `bytes` goes stage to stage, a stage forwarding a microbatch once it has
//!   received it.
//! - `incast`: every GPU of `senders` (default all but `target`) writes `bytes` to `target`.
//! - `permutation`: every GPU writes `bytes` to another, by a random derangement drawn afresh for
//!   each instance.
//!
//! Collectives are reported as nccl-tests reports them: size, time, algorithm bandwidth
//! `size / time` and bus bandwidth (all-reduce `algbw * 2(N-1)/N`, all-gather and
//! reduce-scatter `algbw * (N-1)/N`, all-to-all `algbw * (N-1)/N` with size the bytes each GPU
//! sends and receives including its own share, the others `algbw`).
//!
//! # Outages ([`Outage`])
//!
//! `what` is `{ "kind": "link", "gpu": g, "port": p }` (the cable of GPU `g`'s port `p`),
//! `{ "kind": "switch_port", "switch": s, "port": p }`, `{ "kind": "switch", "switch": s }`
//! (every cable of the switch) or `{ "kind": "plane", "plane": p }` (every switch of plane `p`).
//! From `start_ns` for `duration_ns` (null: to the end) the cables are cut: both ends see the
//! physical link go down and the frames in flight are lost. With `blackout` the physical links
//! stay up and every frame vanishes instead (the links replay until they FLUSH). With
//! `trickle = n` the physical links stay up and only the first n DATA frames after each pause of
//! 1 us arrive: a degraded link whose replays each make some progress, which only `llr_max_age`
//! ends (link.md LINK-3-18).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Largest number of GPUs a scenario may have: a multi-rack domain of the design brief (GPU ids
/// are 16 bits on the wire, WIRE-5-3; the brief asks for at least 10).
pub const MAX_GPUS: u16 = 4096;

/// A scenario that cannot run: the dotted path of the offending key and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// The key, as a dotted path (`traffic.1.bytes_per_pair`, `link.rate_gbps`).
    pub key: String,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.reason)
    }
}

impl std::error::Error for ScenarioError {}

pub(crate) fn err<T>(
    key: impl Into<String>,
    reason: impl Into<String>,
) -> Result<T, ScenarioError> {
    Err(ScenarioError {
        key: key.into(),
        reason: reason.into(),
    })
}

/// A whole experiment. See the [module documentation](self) for its shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Scenario {
    /// Seed of every random choice: link faults, workload choices, data patterns.
    pub seed: u64,
    /// Traffic time, ns after bring-up; workloads stop issuing then. `None`: until the work is
    /// done (needs `stop_when_done` and at least one finite workload).
    pub duration_ns: Option<u64>,
    /// Stop once every finite workload is done.
    pub stop_when_done: bool,
    /// Longest time, ns, to wait after the stop for outstanding operations to complete; those
    /// still outstanding then are reported lost. `None`: `(max_retries + 2) * op_timeout +
    /// tag_quarantine`, the longest an operation may legitimately take.
    pub drain_ns: Option<u64>,
    /// Simulated time, ns, after which the run ends whatever its state (a safety net: a run
    /// that reaches it reports `time_limit_hit` and does not pass).
    pub time_limit_ns: u64,
    /// The GPUs, switches and cables.
    pub topology: Topology,
    /// Every cable, and the link layer of every port.
    pub link: LinkParams,
    /// Every GPU's endpoint.
    pub endpoint: EndpointParams,
    /// Every switch.
    pub switch: SwitchParams,
    /// Cables, switch ports or switches out of service for a while.
    pub outages: Vec<Outage>,
    /// The workloads.
    pub traffic: Vec<Workload>,
    /// What to sample besides the totals.
    pub metrics: MetricsParams,
    /// What the scenario expects of the run, which decides its verdict.
    pub expect: Expect,
}

/// Largest time, ns, any time key of a scenario may take: 10^15 ns, about 11.6 days of
/// simulated time. Every sum of times the simulation forms (bring-up, a start, a duration, a
/// drain) then stays far below the range of its picosecond clock.
pub const MAX_TIME_NS: u64 = 1_000_000_000_000_000;

/// Which operations ending with an error status the verdict accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ErrorsExpected {
    /// None: any operation ending with an error status fails the run.
    None,
    /// Those the scenario's outages explain: an operation outstanding at some time while an
    /// outage lasts or within the grace time after it ends (`(endpoint.max_retries + 2) *
    /// endpoint.op_timeout_ns + endpoint.tag_quarantine_ns`, the longest an operation may
    /// legitimately take); for an outage that never ends, within the grace time after it
    /// begins, after which the fabric must have routed around it. Any other operation ending in error fails the run: link-level faults
    /// (`ber`, `loss`, `drop`, `duplicate`, `control_loss`) are for link-level retry to absorb.
    #[default]
    Explained,
    /// Any number: a study of what fails (a plane lost for good, a hopeless link). The run
    /// still fails when data is lost, duplicated or corrupted, when links never come up, or
    /// at the time limit.
    Allowed,
}

/// What the scenario expects of the run (the `[expect]` table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Expect {
    /// Which operations ending with an error status are accepted: `"none"`, `"explained"` (the
    /// default) or `"allowed"`.
    pub errors: ErrorsExpected,
}

/// The kind of topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TopologyKind {
    /// Two GPUs cabled port to port.
    BackToBack,
    /// One switch plane per GPU port index.
    #[default]
    SingleTier,
    /// Leaf and spine switches per plane.
    TwoTier,
}

/// How a leaf of a `two_tier` topology spreads the traffic for remote GPUs over its up-ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum LeafUplinks {
    /// Remote GPU `g` has up-port `g mod spines` as the first group of its entry and every
    /// other up-port as the second (switch.md §2.3): each spine carries the traffic of its own
    /// destinations, and a path falls back to the other spines, by its hash, while that port is
    /// not UP. Destination-mod-k routing.
    #[default]
    ByDestination,
    /// Every up-port in one group: each path takes the one its hash gives (switch.md §2.1).
    ByPath,
}

/// GPUs, switches and how they are cabled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Topology {
    /// The kind.
    pub kind: TopologyKind,
    /// GPUs, 2..=4096 (exactly 2 for `back_to_back`).
    pub gpus: u16,
    /// Protocol stacks per GPU, 1..=16.
    pub stacks: u8,
    /// Ports per stack, 1..=16.
    pub ports_per_stack: u8,
    /// `two_tier`: leaf switches per plane.
    pub leaves: u16,
    /// `two_tier`: spine switches per plane.
    pub spines: u16,
    /// `two_tier`: how a leaf spreads traffic for remote GPUs over its up-ports.
    pub leaf_uplinks: LeafUplinks,
}

impl Default for Topology {
    fn default() -> Self {
        Topology {
            kind: TopologyKind::SingleTier,
            gpus: 8,
            stacks: 4,
            ports_per_stack: 2,
            leaves: 2,
            spines: 2,
            leaf_uplinks: LeafUplinks::ByDestination,
        }
    }
}

impl Topology {
    /// Ports per GPU: `stacks * ports_per_stack`, also the number of planes.
    pub fn ports(&self) -> usize {
        usize::from(self.stacks) * usize::from(self.ports_per_stack)
    }

    /// GPUs per leaf switch (`two_tier`).
    pub fn gpus_per_leaf(&self) -> usize {
        usize::from(self.gpus).div_ceil(usize::from(self.leaves.max(1)))
    }

    /// Switches in the fabric.
    pub fn switches(&self) -> usize {
        match self.kind {
            TopologyKind::BackToBack => 0,
            TopologyKind::SingleTier => self.ports(),
            TopologyKind::TwoTier => {
                self.ports() * (usize::from(self.leaves) + usize::from(self.spines))
            }
        }
    }
}

/// Cables and the link layer of every port (link.md §1.1 for the link parameters).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinkParams {
    /// Line rate, Gb/s, of every cable.
    pub rate_gbps: f64,
    /// Cable length, m (5 ns/m), unless `propagation_ns` is given.
    pub cable_m: f64,
    /// One-way propagation delay, ns; overrides `cable_m`.
    pub propagation_ns: Option<f64>,
    /// Bit error rate, every frame, both directions.
    pub ber: f64,
    /// Probability that a DATA frame arrives with a bad FCS.
    pub loss: f64,
    /// Probability that a DATA frame vanishes.
    pub drop: f64,
    /// Consecutive DATA frames one `loss` or `drop` event takes.
    pub burst: u32,
    /// Probability that a control frame vanishes.
    pub control_loss: f64,
    /// Probability that a frame arrives twice.
    pub duplicate: f64,
    /// Bytes per credit, a power of two 32..=2048.
    pub credit_size: u16,
    /// Credits each receiver grants per VC: its buffer per VC is `rx_credits * credit_size`.
    /// Left out, the fabric grants twice what the credit loop needs (link.md §1.2, see
    /// [`crate::CreditLoop`]); [`Scenario::rx_credits`] gives the value in force.
    pub rx_credits: Option<u32>,
    /// Maximum frame size, 320..=9216.
    pub mfs: u16,
    /// Most frames in a replay buffer.
    pub replay_max_frames: u32,
    /// Most bytes in a replay buffer.
    pub replay_max_bytes: u32,
    /// Bytes accepted between cumulative ACKs.
    pub ack_spacing: u32,
    /// Longest an accepted frame waits for its ACK, ns.
    pub ack_timer_ns: u64,
    /// Replay timer, ns.
    pub replay_timer_ns: u64,
    /// Replays without progress before FLUSH.
    pub replay_count_max: u8,
    /// Longest a frame stays in a replay buffer after its first transmission, ns (link.md
    /// LINK-3-18).
    pub llr_max_age_ns: u64,
    /// Freed credits that trigger a CF.
    pub cf_min_credits: u32,
    /// Least time between CFs, ns.
    pub cf_min_interval_ns: u64,
    /// Most time between CFs, ns.
    pub cf_max_interval_ns: u64,
    /// CC period, ns.
    pub cc_interval_ns: u64,
    /// INIT period, ns.
    pub init_interval_ns: u64,
    /// Frames a GPU port's link queues per VC (the endpoint keeps its own queue besides).
    pub tx_queue_frames: u32,
    /// Bytes a GPU port's link queues per VC.
    pub tx_queue_bytes: u32,
}

impl Default for LinkParams {
    fn default() -> Self {
        let l = ethlink_link::Config::default();
        LinkParams {
            rate_gbps: 400.0,
            cable_m: 5.0,
            propagation_ns: None,
            ber: 1e-10,
            loss: 0.0,
            drop: 0.0,
            burst: 1,
            control_loss: 0.0,
            duplicate: 0.0,
            credit_size: l.credit_size,
            rx_credits: None,
            mfs: l.mfs,
            replay_max_frames: l.replay_max_frames,
            replay_max_bytes: l.replay_max_bytes,
            ack_spacing: l.ack_spacing,
            ack_timer_ns: ns(l.ack_timer),
            replay_timer_ns: ns(l.replay_timer),
            replay_count_max: l.replay_count_max,
            llr_max_age_ns: ns(l.llr_max_age),
            cf_min_credits: l.cf_min_credits,
            cf_min_interval_ns: ns(l.cf_min_interval),
            cf_max_interval_ns: ns(l.cf_max_interval),
            cc_interval_ns: ns(l.cc_interval),
            init_interval_ns: ns(l.init_interval),
            tx_queue_frames: 4,
            tx_queue_bytes: 4 * 9216,
        }
    }
}

fn ns(d: core::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A load-balancing policy (endpoint.md §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PolicyName {
    /// Fixed hash of destination and stream or tag.
    Hash,
    /// Round-robin over usable ports.
    RoundRobin,
    /// Fewest bytes waiting.
    LeastLoaded,
    /// Round-robin, RDMA write segments sprayed.
    #[default]
    Spray,
}

impl PolicyName {
    pub(crate) fn policy(self) -> ethlink_endpoint::Policy {
        match self {
            PolicyName::Hash => ethlink_endpoint::Policy::Hash,
            PolicyName::RoundRobin => ethlink_endpoint::Policy::RoundRobin,
            PolicyName::LeastLoaded => ethlink_endpoint::Policy::LeastLoaded,
            PolicyName::Spray => ethlink_endpoint::Policy::Spray,
        }
    }
}

/// Parameters of every GPU's endpoint (endpoint.md §1.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EndpointParams {
    /// Load-balancing policy.
    pub policy: PolicyName,
    /// Load-store tags.
    pub lsu_tags: u16,
    /// RDMA tags.
    pub rdma_tags: u16,
    /// RDMA descriptors outstanding at most.
    pub rdma_queue: u32,
    /// Bytes per RDMA segment.
    pub segment: u32,
    /// Bytes per RDMA_READ.
    pub read_chunk: u32,
    /// Bytes of one RDMA write on the wire, and the longest write a target reassembles.
    pub write_chunk: u32,
    /// Chunks of one read outstanding.
    pub read_window: u32,
    /// Longest packing delay, ns.
    pub pack_delay_ns: u64,
    /// Operation deadline, ns.
    pub op_timeout_ns: u64,
    /// Retries per operation.
    pub max_retries: u8,
    /// Rest of a retried tag, ns.
    pub tag_quarantine_ns: u64,
    /// RDMA writes a target reassembles at once.
    pub max_reassemblies: u32,
    /// RDMA reads a target serves at once.
    pub max_read_jobs: u32,
    /// Bytes of responses held before the target stops taking requests.
    pub response_backlog: u32,
    /// Longest a target keeps a request frame it stopped taking, ns (endpoint.md EP-8-9).
    pub hold_max_ns: u64,
    /// Bytes queued per port and VC before the RDMA engine waits.
    pub port_queue: u32,
    /// Size of each GPU's global memory space, bytes.
    pub global_bytes: u64,
}

impl Default for EndpointParams {
    fn default() -> Self {
        let c = ethlink_endpoint::Config::default();
        EndpointParams {
            policy: PolicyName::Spray,
            lsu_tags: c.lsu_tags,
            rdma_tags: c.rdma_tags,
            rdma_queue: c.rdma_queue,
            segment: c.segment,
            read_chunk: c.read_chunk,
            write_chunk: c.write_chunk,
            read_window: c.read_window,
            pack_delay_ns: ns(c.pack_delay),
            op_timeout_ns: ns(c.op_timeout),
            max_retries: c.max_retries,
            tag_quarantine_ns: ns(c.tag_quarantine),
            max_reassemblies: c.max_reassemblies,
            max_read_jobs: c.max_read_jobs,
            response_backlog: c.response_backlog,
            hold_max_ns: ns(c.hold_max),
            port_queue: c.port_queue,
            global_bytes: c.memory.global_size,
        }
    }
}

/// When a switch forwards a frame (switch.md §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SwitchMode {
    /// `latency` after the first bit.
    #[default]
    CutThrough,
    /// `latency` after the last bit.
    StoreAndForward,
}

/// Parameters of every switch (switch.md §1.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SwitchParams {
    /// Port-to-port latency, ns.
    pub latency_ns: u64,
    /// Cut-through or store-and-forward.
    pub mode: SwitchMode,
    /// Frames of one VC an egress link may hold queued.
    pub egress_depth: u32,
    /// Frames a switch port's link queues per VC.
    pub tx_queue_frames: u32,
    /// Bytes a switch port's link queues per VC.
    pub tx_queue_bytes: u32,
}

impl Default for SwitchParams {
    fn default() -> Self {
        SwitchParams {
            latency_ns: 250,
            mode: SwitchMode::CutThrough,
            egress_depth: 2,
            tx_queue_frames: 4,
            tx_queue_bytes: 4 * 9216,
        }
    }
}

/// What an outage takes out of service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum OutageTarget {
    /// The cable of one GPU port.
    Link {
        /// The GPU.
        gpu: u16,
        /// Its port, `0..stacks*ports_per_stack`.
        port: u16,
    },
    /// The cable of one switch port.
    SwitchPort {
        /// The switch.
        switch: u32,
        /// Its port.
        port: u16,
    },
    /// Every cable of one switch.
    Switch {
        /// The switch.
        switch: u32,
    },
    /// Every cable of every switch of one plane.
    Plane {
        /// The plane, `0..stacks*ports_per_stack`.
        plane: u16,
    },
}

/// Cables out of service for a while.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outage {
    /// What.
    pub what: OutageTarget,
    /// From, ns after bring-up.
    #[serde(default)]
    pub start_ns: u64,
    /// For how long, ns; `None`: to the end of the run.
    #[serde(default)]
    pub duration_ns: Option<u64>,
    /// The physical links stay up and frames vanish, instead of the links going down.
    #[serde(default)]
    pub blackout: bool,
    /// The physical links stay up and of the DATA frames each direction of the cables carries
    /// only the first `trickle` after a pause of 1 us arrive, the rest of each run vanishing
    /// (control frames pass): a degraded link whose every replay brings a few frames through.
    /// 0: off; never with `blackout`.
    #[serde(default)]
    pub trickle: u32,
}

/// One entry of a size distribution.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeWeight {
    /// Bytes, 1..=256.
    pub bytes: u16,
    /// Relative weight, > 0.
    pub weight: f64,
}

/// Loads and stores (`kind: "load_store"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LoadStore {
    /// Issuing GPUs; `None`: all.
    pub gpus: Option<Vec<u16>>,
    /// Target GPUs (a GPU never targets itself); `None`: all.
    pub targets: Option<Vec<u16>>,
    /// Size distribution.
    pub sizes: Vec<SizeWeight>,
    /// Share of loads, 0..=1; the rest are stores.
    pub read_share: f64,
    /// Closed loop (unless `rate_mops` is given): operations outstanding per GPU at all times.
    pub outstanding: u32,
    /// Open loop: million operations per second per GPU (Poisson arrivals), instead of the
    /// closed loop; an arrival that finds no tag is counted and skipped.
    pub rate_mops: Option<f64>,
    /// Operations per GPU; `None`: until the run stops.
    pub ops: Option<u64>,
    /// Share of accesses that go to the first `hot_slots` slots, 0..=1.
    pub locality: f64,
    /// Hot slots per (source, target).
    pub hot_slots: u32,
    /// Slots per (source, target); a slot is as large as the largest size (rounded up to 64).
    pub slots: u32,
    /// Share of operations issued on ordered streams, 0..=1.
    pub ordered_share: f64,
    /// Ordered streams per GPU.
    pub streams: u32,
    /// 0: operations of ordered streams use the ordinary slots. Otherwise each ordered stream
    /// of a source has this many slots of its own per target, where its operations overlap
    /// while outstanding, and its stores write the whole slot. A stream's operations are
    /// performed in issue order (its path keeps their order), so memory ends with the store
    /// issued last, and every load must return exactly what the stores issued before it on the
    /// stream wrote: the integrity check then checks per-path order end to end, whatever order
    /// the completions come back in. Retries can break that order when links fail (a request
    /// retried at its deadline, or after its frame's fate became unknown, is performed after
    /// later requests of its stream), and the check reports it.
    pub stream_slots: u32,
    /// Start, ns after bring-up.
    pub start_ns: u64,
}

impl LoadStore {
    /// The largest access size of the mix, bytes (`None` for an empty mix).
    pub fn largest_size(&self) -> Option<u64> {
        self.sizes.iter().map(|s| u64::from(s.bytes)).max()
    }
}

impl Default for LoadStore {
    fn default() -> Self {
        LoadStore {
            gpus: None,
            targets: None,
            sizes: vec![SizeWeight {
                bytes: 64,
                weight: 1.0,
            }],
            read_share: 0.5,
            outstanding: 8,
            rate_mops: None,
            ops: None,
            locality: 0.0,
            hot_slots: 16,
            slots: 1024,
            ordered_share: 0.0,
            streams: 4,
            stream_slots: 0,
            start_ns: 0,
        }
    }
}

/// RDMA all-to-all (`kind: "all_to_all"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AllToAll {
    /// Participating GPUs; `None`: all.
    pub gpus: Option<Vec<u16>>,
    /// Bytes each GPU writes to each other.
    pub bytes_per_pair: u64,
    /// Instances; 0: until the run stops.
    pub iterations: u32,
    /// Writes outstanding per GPU at most.
    pub window: u32,
    /// Start, ns after bring-up.
    pub start_ns: u64,
}

impl Default for AllToAll {
    fn default() -> Self {
        AllToAll {
            gpus: None,
            bytes_per_pair: 1 << 20,
            iterations: 1,
            window: 64,
            start_ns: 0,
        }
    }
}

/// A ring or halving-doubling collective (`ring_allreduce`, `halving_doubling_allreduce`,
/// `all_gather`, `reduce_scatter`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Collective {
    /// Participating GPUs in ring order; `None`: all, in id order.
    pub gpus: Option<Vec<u16>>,
    /// Sizes, bytes (nccl-tests' size: the buffer of each GPU).
    pub sizes: Vec<u64>,
    /// Instances of each size; 0: the sizes round and round until the run stops.
    pub iterations: u32,
    /// Start, ns after bring-up.
    pub start_ns: u64,
}

impl Default for Collective {
    fn default() -> Self {
        Collective {
            gpus: None,
            sizes: vec![1 << 20],
            iterations: 1,
            start_ns: 0,
        }
    }
}

/// Pipeline-parallel point-to-point transfers (`kind: "send_recv"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SendRecv {
    /// Pipeline stages in order; `None`: all GPUs in id order.
    pub stages: Option<Vec<u16>>,
    /// Bytes per microbatch transfer.
    pub bytes: u64,
    /// Microbatches per instance.
    pub microbatches: u32,
    /// Instances; 0: until the run stops.
    pub iterations: u32,
    /// Start, ns after bring-up.
    pub start_ns: u64,
}

impl Default for SendRecv {
    fn default() -> Self {
        SendRecv {
            stages: None,
            bytes: 1 << 20,
            microbatches: 4,
            iterations: 1,
            start_ns: 0,
        }
    }
}

/// N-to-1 incast (`kind: "incast"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Incast {
    /// The GPU written to.
    pub target: u16,
    /// Writers; `None`: every other GPU.
    pub senders: Option<Vec<u16>>,
    /// Bytes each sender writes.
    pub bytes: u64,
    /// Instances; 0: until the run stops.
    pub iterations: u32,
    /// Start, ns after bring-up.
    pub start_ns: u64,
}

impl Default for Incast {
    fn default() -> Self {
        Incast {
            target: 0,
            senders: None,
            bytes: 1 << 20,
            iterations: 1,
            start_ns: 0,
        }
    }
}

/// Random permutation traffic (`kind: "permutation"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Permutation {
    /// Participating GPUs; `None`: all.
    pub gpus: Option<Vec<u16>>,
    /// Bytes each GPU writes.
    pub bytes: u64,
    /// Instances (a new derangement each); 0: until the run stops.
    pub iterations: u32,
    /// Start, ns after bring-up.
    pub start_ns: u64,
}

impl Default for Permutation {
    fn default() -> Self {
        Permutation {
            gpus: None,
            bytes: 1 << 20,
            iterations: 1,
            start_ns: 0,
        }
    }
}

/// One workload of the `traffic` list, tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Workload {
    /// Loads and stores.
    LoadStore(LoadStore),
    /// RDMA all-to-all.
    AllToAll(AllToAll),
    /// Ring all-reduce.
    RingAllreduce(Collective),
    /// Halving-doubling (Rabenseifner) all-reduce.
    HalvingDoublingAllreduce(Collective),
    /// Ring all-gather.
    AllGather(Collective),
    /// Ring reduce-scatter.
    ReduceScatter(Collective),
    /// Pipeline send/recv.
    SendRecv(SendRecv),
    /// N-to-1 incast.
    Incast(Incast),
    /// Random permutation.
    Permutation(Permutation),
}

impl Workload {
    /// The `kind` name.
    pub fn kind(&self) -> &'static str {
        match self {
            Workload::LoadStore(_) => "load_store",
            Workload::AllToAll(_) => "all_to_all",
            Workload::RingAllreduce(_) => "ring_allreduce",
            Workload::HalvingDoublingAllreduce(_) => "halving_doubling_allreduce",
            Workload::AllGather(_) => "all_gather",
            Workload::ReduceScatter(_) => "reduce_scatter",
            Workload::SendRecv(_) => "send_recv",
            Workload::Incast(_) => "incast",
            Workload::Permutation(_) => "permutation",
        }
    }

    /// Whether it ends by itself (else it runs until the run stops).
    pub fn is_finite(&self) -> bool {
        match self {
            Workload::LoadStore(l) => l.ops.is_some(),
            Workload::AllToAll(a) => a.iterations > 0,
            Workload::RingAllreduce(c)
            | Workload::HalvingDoublingAllreduce(c)
            | Workload::AllGather(c)
            | Workload::ReduceScatter(c) => c.iterations > 0,
            Workload::SendRecv(s) => s.iterations > 0,
            Workload::Incast(i) => i.iterations > 0,
            Workload::Permutation(p) => p.iterations > 0,
        }
    }

    /// Start, ns after bring-up.
    pub fn start_ns(&self) -> u64 {
        match self {
            Workload::LoadStore(l) => l.start_ns,
            Workload::AllToAll(a) => a.start_ns,
            Workload::RingAllreduce(c)
            | Workload::HalvingDoublingAllreduce(c)
            | Workload::AllGather(c)
            | Workload::ReduceScatter(c) => c.start_ns,
            Workload::SendRecv(s) => s.start_ns,
            Workload::Incast(i) => i.start_ns,
            Workload::Permutation(p) => p.start_ns,
        }
    }
}

/// What is sampled besides the totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsParams {
    /// Interval of the time series, ns; 0: no time series.
    pub sample_ns: u64,
    /// Record every GPU port's utilisation in each sample (else only per-GPU sums).
    pub series_per_port: bool,
    /// Most samples kept; later ones are dropped (and counted).
    pub max_samples: u32,
}

impl Default for MetricsParams {
    fn default() -> Self {
        MetricsParams {
            sample_ns: 1000,
            series_per_port: true,
            max_samples: 100_000,
        }
    }
}

impl Default for Scenario {
    /// The default scenario: 8 GPUs, 4 stacks x 2 ports at 400 Gb/s, 8 single-tier switch
    /// planes, BER 1e-10; 64 B loads and stores (closed loop, 8 per GPU) beside an RDMA
    /// all-to-all (1 MiB per pair, 16 instances) and a ring all-reduce (1, 4, 16 and 32 MiB);
    /// the run stops when the all-to-all and the all-reduce are done (about 0.7 ms of
    /// simulated time).
    fn default() -> Self {
        Scenario {
            seed: 1,
            duration_ns: None,
            stop_when_done: true,
            drain_ns: None,
            time_limit_ns: 100_000_000,
            topology: Topology::default(),
            link: LinkParams::default(),
            endpoint: EndpointParams::default(),
            switch: SwitchParams::default(),
            outages: Vec::new(),
            traffic: vec![
                Workload::LoadStore(LoadStore::default()),
                Workload::AllToAll(AllToAll {
                    bytes_per_pair: 1 << 20,
                    iterations: 16,
                    ..AllToAll::default()
                }),
                Workload::RingAllreduce(Collective {
                    sizes: vec![1 << 20, 4 << 20, 16 << 20, 32 << 20],
                    ..Collective::default()
                }),
            ],
            metrics: MetricsParams::default(),
            expect: Expect::default(),
        }
    }
}

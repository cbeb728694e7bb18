//! The device-under-test boundary (docs/conformance.md §2).
//!
//! The harness plays every peer and every wire; the device sees only frames on its ports, time,
//! and (for a link end or an endpoint) the requests of its upper layer. Everything that crosses
//! the boundary is one of the types of this module, and the line protocol of an external device
//! is these same types as JSON, one object per line ([`crate::external`]). A backend implements
//! [`Device`].
//!
//! Time is in nanoseconds from the reset and never goes backwards. Frames are whole, from the
//! destination MAC address through the FCS.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// The version of the boundary: the `hello` exchange checks that both sides speak it. Version 2
/// added the sequence number every request carries and every answer echoes, and made the link
/// parameters of `reset`'s answer and the `out` of `advance`'s required (docs/conformance.md §3).
pub const PROTOCOL_VERSION: u32 = 2;

/// The role of a device (classes.md §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// One end of one link (classes.md, class Link End).
    LinkEnd,
    /// A GPU endpoint (class Endpoint).
    Endpoint,
    /// A switch (class Switch).
    Switch,
}

impl Role {
    /// Every role, in catalogue order.
    pub const ALL: [Role; 3] = [Role::LinkEnd, Role::Endpoint, Role::Switch];

    /// The snake_case name, as the line protocol and reports spell it.
    pub const fn name(self) -> &'static str {
        match self {
            Role::LinkEnd => "link_end",
            Role::Endpoint => "endpoint",
            Role::Switch => "switch",
        }
    }

    /// The role named `name`.
    pub fn from_name(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.name() == name)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a device says of itself in answer to `hello` (docs/conformance.md §3.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Description {
    /// The boundary version the device speaks.
    pub version: u32,
    /// A name for reports, such as the model and its revision.
    pub name: String,
    /// Its role.
    pub role: Role,
    /// The capabilities it implements (classes.md Table CLS-T2), by name: rdma, atomics, shared,
    /// packing, tagged, cut_through.
    #[serde(default)]
    pub caps: Vec<String>,
    /// Its number of ports (1 for a link end).
    pub ports: u16,
    /// The tick of the clock its timers run on, in ns (docs/spec/link.md LINK-1-5): each timer
    /// is acted on at the first tick at or after its expiry. Left out: 1 ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick_ns: Option<u32>,
    /// The line rate its transmitter serialises frames at, in Gb/s: back-to-back frames leave
    /// `ser(n)` apart (link.md §1.2). Left out: 400 Gb/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_gbps: Option<u32>,
}

impl Description {
    /// The tick of the device's timer clock in ns (1 when it gives none).
    pub fn tick(&self) -> u64 {
        u64::from(self.tick_ns.unwrap_or(1).max(1))
    }

    /// The device's line rate in Gb/s (400 when it gives none).
    pub fn rate(&self) -> u64 {
        u64::from(self.rate_gbps.unwrap_or(DEFAULT_RATE_GBPS).max(1))
    }
}

/// The line rate the harness assumes of a device whose `hello` gives none, in Gb/s.
pub const DEFAULT_RATE_GBPS: u32 = 400;
/// The coarsest timer clock a device may have (docs/spec/link.md LINK-1-5), in ns.
pub const MAX_TICK_NS: u32 = 256;
/// The slowest and fastest line rates the cases are designed for, in Gb/s.
pub const RATE_RANGE_GBPS: core::ops::RangeInclusive<u32> = 25..=1600;

/// The link parameters a case asks the device to use (link.md Table LINK-T1). A field left out
/// keeps the device's default; the device reports the values in force in `reset`'s answer.
/// Durations are in nanoseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinkParams {
    /// Virtual channels, 1..=8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vcs: Option<u8>,
    /// Bytes per credit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credit_size: Option<u16>,
    /// Credits granted on each VC in use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rx_credits: Option<u32>,
    /// Bytes added to a frame's length when its cost is computed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credit_overhead: Option<u16>,
    /// Maximum frame size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mfs: Option<u16>,
    /// LLR window in frames.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llr_window: Option<u32>,
    /// Most frames in the replay buffer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_max_frames: Option<u32>,
    /// Most bytes in the replay buffer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_max_bytes: Option<u32>,
    /// Bytes accepted between cumulative ACKs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack_spacing: Option<u32>,
    /// Longest an accepted frame waits for its ACK.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack_timer_ns: Option<u64>,
    /// Time without ACK progress before the replay buffer is replayed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_timer_ns: Option<u64>,
    /// Replays without progress before FLUSH.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_count_max: Option<u8>,
    /// Freed credits that trigger a CF.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cf_min_credits: Option<u32>,
    /// Least time between two CF frames.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cf_min_interval_ns: Option<u64>,
    /// Most time between two CF frames while UP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cf_max_interval_ns: Option<u64>,
    /// Period of CC frames.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cc_interval_ns: Option<u64>,
    /// Period of INIT frames while initialising.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub init_interval_ns: Option<u64>,
    /// How long an end stays in INIT before it reports and counts the timeout (LINK-2-14).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub init_timeout_ns: Option<u64>,
    /// Longest a frame stays in the replay buffer after its first transmission (LINK-3-18).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llr_max_age_ns: Option<u64>,
}

/// A forwarding-table entry for a switch: frames for `dst` leave by one of `ports`
/// (switch.md §2.2), chosen within the first of its `groups` that has a port UP (§2.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// The destination GPU id.
    pub dst: u16,
    /// The egress ports listed for it, in table order.
    pub ports: Vec<u16>,
    /// The sizes of its groups of preference, most preferred first (switch.md §2.3); none: the
    /// whole list is one group.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<u16>,
}

impl Route {
    /// An entry of one group.
    pub fn new(dst: u16, ports: Vec<u16>) -> Self {
        Route {
            dst,
            ports,
            groups: Vec::new(),
        }
    }
}

/// What `reset` asks of the device: a fresh start with these settings (docs/conformance.md §3.2).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Setup {
    /// Link parameters of every port.
    pub link: LinkParams,
    /// Endpoint: its GPU id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<u16>,
    /// Endpoint: settings of endpoint.md Table EP-T1 other than its defaults.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<Box<EndpointParams>>,
    /// Switch: its forwarding table.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<Route>,
    /// Switch: its `max_residence` in nanoseconds (switch.md Table SW-T1), or its default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_residence_ns: Option<u64>,
    /// Switch: its port-to-port `latency` in nanoseconds (switch.md Table SW-T1), or its default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<u64>,
    /// A seed for whatever the device draws at random (its nonces): a device with an entropy
    /// source may ignore it, the reference uses it so that runs repeat.
    pub seed: u64,
}

/// The endpoint settings a case may ask for (endpoint.md Table EP-T1). A field left out keeps the
/// device's own value; a device that cannot use a value asked for refuses the reset. Durations
/// are in nanoseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EndpointParams {
    /// `op_timeout`: deadline of an operation, and how long a target keeps a reassembly, a read
    /// job or a held response without progress.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op_timeout_ns: Option<u64>,
    /// `frame_lifetime`: the longest a frame lives in the fabric (endpoint.md EP-1-2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame_lifetime_ns: Option<u64>,
    /// `tag_quarantine`: how long a tag rests (EP-5-8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tag_quarantine_ns: Option<u64>,
    /// `rdma_tags`: tags of the RDMA engine (1..=32768).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rdma_tags: Option<u16>,
    /// `max_read_jobs`: RDMA reads the target serves at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_read_jobs: Option<u32>,
    /// `max_reassemblies`: RDMA writes the target reassembles at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_reassemblies: Option<u32>,
    /// `max_reassembly_blocks`: 256-byte blocks the reassembly records cover in all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_reassembly_blocks: Option<u32>,
    /// `response_backlog`: bytes of responses held before the target stops taking requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_backlog: Option<u32>,
    /// `hold_max`: longest the target keeps a request frame it stopped taking (EP-8-9).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hold_max_ns: Option<u64>,
    /// `write_chunk`: the longest RDMA write sent as one (endpoint.md EP-6-2), in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_chunk: Option<u32>,
    /// `max_regions`: entries of the region table of each space.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_regions: Option<u32>,
    /// `policy`: the load-balancing policy of endpoint.md §4, by its name there (`hash`,
    /// `round-robin`, `least-loaded`, `spray`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
}

/// A memory space of an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Space {
    /// Global memory.
    #[default]
    Global,
    /// Shared memory.
    Shared,
}

/// An operation of the load-store unit (transaction.md §2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LsOp {
    /// Read `len` bytes.
    Load {
        /// Bytes to read, 1..=256.
        len: u16,
    },
    /// Write `data` (hex).
    Store {
        /// The bytes, as hex.
        data: String,
    },
    /// Fetch-add of a `width`-byte value.
    FetchAdd {
        /// 4 or 8.
        width: u8,
        /// The addend.
        value: u64,
    },
    /// Swap a `width`-byte value.
    Swap {
        /// 4 or 8.
        width: u8,
        /// The new value.
        value: u64,
    },
    /// Compare-swap of a `width`-byte value.
    CompareSwap {
        /// 4 or 8.
        width: u8,
        /// The value compared.
        compare: u64,
        /// The value stored when equal.
        value: u64,
    },
    /// A FENCE request to the target (transaction.md TXN-4-6): its answer comes once the target
    /// has performed every request that arrived before it from this source on that port.
    Fence,
}

/// A request from the device's upper layer: the program, or for a link end the layer above it
/// (docs/conformance.md §3.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "req", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// The physical link of `port` comes up (signal detected, the MAC ready).
    PhysicalUp {
        /// The port.
        port: u16,
    },
    /// The physical link of `port` goes down.
    PhysicalDown {
        /// The port.
        port: u16,
    },
    /// Link end: send `payload` (hex: network header and transactions) on `vc`.
    Submit {
        /// The port (0 for a link end).
        port: u16,
        /// The VC.
        vc: u8,
        /// The payload, as hex.
        payload: String,
    },
    /// Link end: keep the payloads delivered on `vc` from now on instead of draining them at
    /// once, so that the receive buffer fills (`hold: false` drains every payload kept).
    Hold {
        /// The port.
        port: u16,
        /// The VC.
        vc: u8,
        /// Keep (true) or drain (false).
        hold: bool,
    },
    /// Link end: take back every payload submitted on any VC of `port` and not sent yet
    /// (link.md LINK-6-5). Each comes back as [`Output::Lost`] with reason `withdrawn`, after the
    /// outputs already pending and, on each VC, in submission order; the frames in the replay
    /// buffer have been sent and stay there.
    Withdraw {
        /// The port (0 for a link end).
        port: u16,
    },
    /// Switch: write the forwarding-table entry of `dst` while the switch runs (switch.md
    /// SW-2-7), replacing the whole entry; an empty `ports` leaves `dst` unroutable.
    SetRoute {
        /// The destination GPU id.
        dst: u16,
        /// The egress ports listed for it, in table order.
        ports: Vec<u16>,
        /// The sizes of its groups of preference (switch.md §2.3); none: one group.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        groups: Vec<u16>,
    },
    /// Endpoint: register a region of one of its memory spaces (endpoint.md §2).
    Register {
        /// The space.
        space: Space,
        /// First byte.
        base: u64,
        /// Bytes.
        len: u64,
        /// Its key.
        key: u32,
        /// Permissions: any of the letters r (read), w (write), a (atomic).
        perms: String,
    },
    /// Endpoint: remove the region of `space` that starts at `base` from its region table
    /// (endpoint.md §2.1). Refused when no region starts there.
    Deregister {
        /// The space.
        space: Space,
        /// First byte of the region.
        base: u64,
    },
    /// Endpoint: poison `len` bytes of its own memory from `addr`, as an uncorrectable memory
    /// error would (endpoint.md EP-2-6; writing a byte clears its poison).
    Poison {
        /// The space.
        space: Space,
        /// First byte.
        addr: u64,
        /// Bytes.
        len: u64,
    },
    /// Endpoint: write its own memory directly (set-up; no network traffic).
    MemWrite {
        /// The space.
        space: Space,
        /// First byte.
        addr: u64,
        /// The bytes, as hex.
        data: String,
    },
    /// Endpoint: read its own memory directly (check; no network traffic). Answered with
    /// `data`.
    MemRead {
        /// The space.
        space: Space,
        /// First byte.
        addr: u64,
        /// Bytes to read.
        len: u64,
    },
    /// Endpoint: issue a load-store operation. Answered with its `tag`.
    Issue {
        /// The target GPU.
        dst: u16,
        /// The target space.
        space: Space,
        /// The region key.
        key: u32,
        /// The target address.
        addr: u64,
        /// The operation.
        op: LsOp,
        /// An ordered stream (endpoint.md §4), or none for an unordered operation.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stream: Option<u32>,
        /// The port the operation must leave by (endpoint.md EP-4-6), or none to let the
        /// load-balancing policy choose. Exclusive with `stream`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        port: Option<u16>,
    },
    /// Endpoint: post an RDMA descriptor. Answered with its `id`.
    Post {
        /// True for a write (local to remote), false for a read (remote to local).
        write: bool,
        /// The local space.
        local_space: Space,
        /// The local address.
        local_addr: u64,
        /// The remote GPU.
        dst: u16,
        /// The remote space.
        space: Space,
        /// The remote region key.
        key: u32,
        /// The remote address.
        addr: u64,
        /// Bytes.
        len: u64,
    },
    /// Endpoint: a fence (transaction.md §4). Answered with its `id`.
    Fence,
}

impl Request {
    /// Its name as the line protocol writes it (`req`).
    pub const fn name(&self) -> &'static str {
        match self {
            Request::PhysicalUp { .. } => "physical_up",
            Request::PhysicalDown { .. } => "physical_down",
            Request::Submit { .. } => "submit",
            Request::Hold { .. } => "hold",
            Request::Withdraw { .. } => "withdraw",
            Request::SetRoute { .. } => "set_route",
            Request::Register { .. } => "register",
            Request::Deregister { .. } => "deregister",
            Request::Poison { .. } => "poison",
            Request::MemWrite { .. } => "mem_write",
            Request::MemRead { .. } => "mem_read",
            Request::Issue { .. } => "issue",
            Request::Post { .. } => "post",
            Request::Fence => "fence",
        }
    }

    /// Whether a device may lack it (docs/conformance.md \u{a7}3.3): `withdraw`, which link.md
    /// LINK-6-5 makes optional, and `poison`, a test hook a design may not have. Every device of
    /// a role takes the other requests of its role.
    pub const fn optional(&self) -> bool {
        matches!(self, Request::Withdraw { .. } | Request::Poison { .. })
    }
}

/// What a request returns at once.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Reply {
    /// The tag of an issued operation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tag: Option<u16>,
    /// The id of a posted descriptor or a fence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// Bytes read by `mem_read`, as hex.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
}

/// Something the device produced while time advanced (docs/conformance.md §3.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "out", rename_all = "snake_case", deny_unknown_fields)]
pub enum Output {
    /// A frame the device put on the wire of `port`, beginning at `time_ns`.
    Frame {
        /// The port.
        port: u16,
        /// When its first bit left.
        time_ns: u64,
        /// The frame, FCS included, as hex.
        hex: String,
    },
    /// Link end: a payload the link delivered to its upper layer, in order.
    Delivered {
        /// The port.
        port: u16,
        /// The VC.
        vc: u8,
        /// The payload, as hex.
        payload: String,
    },
    /// Link end: a payload submitted earlier that the link reports it could not deliver: of
    /// unknown fate after a FLUSH or a link down, or refused by the peer's parameters.
    Lost {
        /// The port.
        port: u16,
        /// The VC.
        vc: u8,
        /// Why, in a word: unknown_fate, exceeds_peer_mfs, vc_not_agreed, withdrawn.
        reason: String,
        /// The payload, as hex.
        payload: String,
    },
    /// A port's link came up.
    LinkUp {
        /// The port.
        port: u16,
    },
    /// A port's link went down.
    LinkDown {
        /// The port.
        port: u16,
        /// Why, in a word: flush, physical, peer_restart.
        reason: String,
    },
    /// Endpoint: an operation ended (transaction.md §3).
    Completion {
        /// The tag of a load-store operation.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tag: Option<u16>,
        /// The id of an RDMA descriptor or a fence.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u64>,
        /// The status, as transaction.md §3 names it (OK, ACCESS_VIOLATION, ..., UNKNOWN(0x42)).
        status: String,
        /// Data of a load or the old value of an atomic, as hex.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<String>,
    },
}

/// The answer to `advance`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Advanced {
    /// What the device produced, in time order.
    pub out: Vec<Output>,
    /// The earliest time after `time_ns` at which the device will act without input (its next
    /// timer), if it can say; the harness then need not advance it before that time. A device
    /// that cannot say leaves it out and is advanced in small steps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_ns: Option<u64>,
}

/// The counters a device exposes, by the names of the spec's tables (link.md Table LINK-T3,
/// endpoint.md Table EP-T2, switch.md Tables SW-T3/T4). A per-VC counter is named
/// `<name>.vc<v>`, a per-port one `port<p>.<name>`; the link counters of a port of an endpoint or
/// a switch are `port<p>.link.<name>` (a link end's own are plain `<name>`).
pub type Counters = BTreeMap<String, u64>;

/// Why a device could not do what the harness asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceError {
    /// The device refused the request or the setting: not supported, or out of its range. The
    /// case that asked is not applicable to the device.
    Refused(String),
    /// The device broke the boundary: it crashed, hung, answered out of protocol or with
    /// garbage. The case cannot be judged.
    Broken(String),
}

impl fmt::Display for DeviceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceError::Refused(why) => write!(f, "the device refused: {why}"),
            DeviceError::Broken(why) => write!(f, "the device broke the boundary: {why}"),
        }
    }
}

impl std::error::Error for DeviceError {}

/// A device under test. The harness calls `hello` once, then `reset` before every case, then any
/// sequence of the other calls with times that never go backwards.
pub trait Device: Send {
    /// Says what the device is.
    fn hello(&mut self) -> Result<Description, DeviceError>;
    /// Starts afresh with `setup`: every port physically down, nothing held, counters zero. Returns
    /// the link parameters in force.
    fn reset(&mut self, setup: &Setup) -> Result<LinkParams, DeviceError>;
    /// A frame arrives whole on `port` at `time_ns`.
    fn frame(&mut self, port: u16, time_ns: u64, frame: &[u8]) -> Result<(), DeviceError>;
    /// The first bit of a frame arrives on `port` at `time_ns`; its last will at `end_ns`, when
    /// [`Device::frame`] gives the frame whole. `frame` is the whole frame, as it will end: a
    /// cut-through switch may begin to forward it on its header (switch.md \u{a7}6), and must
    /// make its copy end as `frame` and `end_ns` decide. A device that never forwards before a
    /// frame's end ignores it, as this default does. Given only to a device that declares
    /// `cut_through`, in the cases that need it (docs/conformance.md \u{a7}3.3 `header`).
    fn header(
        &mut self,
        port: u16,
        time_ns: u64,
        end_ns: u64,
        frame: &[u8],
    ) -> Result<(), DeviceError> {
        let _ = (port, time_ns, end_ns, frame);
        Ok(())
    }
    /// An upper-layer request at `time_ns`.
    fn request(&mut self, time_ns: u64, request: &Request) -> Result<Reply, DeviceError>;
    /// Lets time run to `time_ns` and returns everything produced up to then, in time order, with
    /// the device's next deadline if it knows it.
    fn advance(&mut self, time_ns: u64) -> Result<Advanced, DeviceError>;
    /// Reads the counters.
    fn counters(&mut self) -> Result<Counters, DeviceError>;
}

/// Hex of `bytes`, lower case.
pub fn to_hex(bytes: &[u8]) -> String {
    hex::encode(bytes)
}

/// Bytes of the hex string `s`, or a [`DeviceError::Broken`] naming `what`.
pub fn from_hex(what: &str, s: &str) -> Result<Vec<u8>, DeviceError> {
    hex::decode(s).map_err(|e| DeviceError::Broken(format!("{what}: not hex: {e}")))
}

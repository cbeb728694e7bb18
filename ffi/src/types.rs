//! Everything that crosses the C ABI besides the functions: return codes, the named values of
//! every enumeration (which cross as plain integers, never as Rust enums), and the `#[repr(C)]`
//! structures. include/ethlink.h is generated from this file and the function declarations.

use core::ffi::c_char;

/// Version of the ABI this library exports: [`crate::ethlink_abi_version`] returns it. It changes
/// whenever a function, structure or constant changes meaning or layout. Version 2 refuses times
/// after `ETHLINK_TIME_MAX_NS`, a group MAC address as a link end's own, and fences and new
/// operations beyond the endpoint's bounds. Version 3 adds `llr_max_age_ns` at the end of
/// `ethlink_link_params` (link.md LINK-3-18) and `hold_max_ns` after `busy_backoff_ns` in
/// `ethlink_endpoint_config` (endpoint.md EP-8-9). Version 4 adds `write_chunk` after
/// `read_chunk` in `ethlink_endpoint_config` (endpoint.md EP-6-2, EP-6-13). Version 5 adds
/// `tick_ns` and `rate_gbps` at the end of `ethlink_description`: the clock and line rate a
/// conformance harness judges timing by (docs/conformance.md §4.2).
pub const ETHLINK_ABI_VERSION: u32 = 5;

/// The latest time a model takes, in nanoseconds: 2^63 - 1 (about 292 years; the largest
/// `int64_t`, and the largest SystemVerilog `longint`), the horizon of link.md LINK-1-2. A call
/// given a later `now_ns` returns `ETHLINK_ERR_ARGUMENT` and changes nothing; a deadline later
/// than it is never reached, and `ethlink_poll_timeout` reports none.
pub const ETHLINK_TIME_MAX_NS: u64 = 9_223_372_036_854_775_807;

/// Success.
pub const ETHLINK_OK: i32 = 0;
/// Success, but the poll found nothing (no frame to send, no deadline, no event).
pub const ETHLINK_NONE: i32 = 1;
/// A pointer parameter that must not be NULL was NULL.
pub const ETHLINK_ERR_NULL_POINTER: i32 = -1;
/// The handle names no live device of this context: never made, destroyed, or made by another
/// context.
pub const ETHLINK_ERR_HANDLE: i32 = -2;
/// A parameter is out of its range: an unknown enumeration value, a field of a configuration
/// or a request out of range, a port the device does not have.
pub const ETHLINK_ERR_ARGUMENT: i32 = -3;
/// The output buffer is too short. Nothing was consumed; the length needed was written where
/// the call returns lengths, so the call can be repeated with a larger buffer.
pub const ETHLINK_ERR_BUFFER_TOO_SMALL: i32 = -4;
/// The time given is earlier than a time given before on this handle.
pub const ETHLINK_ERR_TIME_BACKWARDS: i32 = -5;
/// The device refused a valid request: a queue full, every tag in use, a region that does not
/// exist, the context's device table full.
pub const ETHLINK_ERR_REFUSED: i32 = -6;
/// The call is for another role (a link-end call on a switch handle, for instance).
pub const ETHLINK_ERR_WRONG_ROLE: i32 = -7;
/// An internal error was caught at the boundary. The device it happened in is unusable from
/// then on: every call on its handle but [`crate::ethlink_destroy`] returns this code.
pub const ETHLINK_ERR_PANIC: i32 = -8;

/// Role of a device: one end of one link (link.md).
pub const ETHLINK_ROLE_LINK_END: u8 = 0;
/// Role of a device: a GPU endpoint with its ports (endpoint.md).
pub const ETHLINK_ROLE_ENDPOINT: u8 = 1;
/// Role of a device: a switch (switch.md).
pub const ETHLINK_ROLE_SWITCH: u8 = 2;

/// Capability bit (classes.md Table CLS-T2): RDMA as a target.
pub const ETHLINK_CAP_RDMA: u32 = 1 << 0;
/// Capability bit: atomics as a target.
pub const ETHLINK_CAP_ATOMICS: u32 = 1 << 1;
/// Capability bit: a shared memory space.
pub const ETHLINK_CAP_SHARED: u32 = 1 << 2;
/// Capability bit: several transactions per DATA frame.
pub const ETHLINK_CAP_PACKING: u32 = 1 << 3;
/// Capability bit: 802.1Q-tagged frames.
pub const ETHLINK_CAP_TAGGED: u32 = 1 << 4;
/// Capability bit: cut-through forwarding with stomped FCS.
pub const ETHLINK_CAP_CUT_THROUGH: u32 = 1 << 5;

/// Event kind: a link delivered a payload to its upper layer (link end only); the payload is in
/// the data buffer.
pub const ETHLINK_EVENT_DELIVERED: u32 = 1;
/// Event kind: a submitted payload will not be delivered (link end only); `reason` is an
/// `ETHLINK_LOST_*` value and the payload is in the data buffer.
pub const ETHLINK_EVENT_LOST: u32 = 2;
/// Event kind: the link of `port` came up.
pub const ETHLINK_EVENT_LINK_UP: u32 = 3;
/// Event kind: the link of `port` went down; `reason` is an `ETHLINK_DOWN_*` value.
pub const ETHLINK_EVENT_LINK_DOWN: u32 = 4;
/// Event kind: an operation of an endpoint ended; `op`, `id`, `status` and `status_raw` say
/// which and how, and the data of a load or the old value of an atomic is in the data buffer.
pub const ETHLINK_EVENT_COMPLETION: u32 = 5;

/// Loss reason: the frame was in the replay buffer at a FLUSH or a link down; it may have been
/// delivered once or not at all.
pub const ETHLINK_LOST_UNKNOWN_FATE: u8 = 0;
/// Loss reason: longer than the MFS agreed with the peer; never sent.
pub const ETHLINK_LOST_EXCEEDS_PEER_MFS: u8 = 1;
/// Loss reason: on a VC beyond those agreed with the peer; never sent.
pub const ETHLINK_LOST_VC_NOT_AGREED: u8 = 2;
/// Loss reason: taken back by `ethlink_link_withdraw`; never sent.
pub const ETHLINK_LOST_WITHDRAWN: u8 = 3;

/// Down reason: the replay count exceeded its maximum (FLUSH).
pub const ETHLINK_DOWN_FLUSH: u8 = 0;
/// Down reason: the physical link went down.
pub const ETHLINK_DOWN_PHYSICAL: u8 = 1;
/// Down reason: the peer initialised again.
pub const ETHLINK_DOWN_PEER_RESTART: u8 = 2;

/// Operation kind of a completion: a load-store operation, `id` is its tag.
pub const ETHLINK_OP_LS: u8 = 0;
/// Operation kind of a completion: an RDMA descriptor, `id` is what `ethlink_endpoint_post`
/// returned.
pub const ETHLINK_OP_RDMA: u8 = 1;
/// Operation kind of a completion: a fence, `id` is what `ethlink_endpoint_fence` returned.
pub const ETHLINK_OP_FENCE: u8 = 2;

/// Completion status (transaction.md §3): performed.
pub const ETHLINK_STATUS_OK: u8 = 0;
/// Completion status: the target refused the access (key, permissions).
pub const ETHLINK_STATUS_ACCESS_VIOLATION: u8 = 1;
/// Completion status: the address is outside the region.
pub const ETHLINK_STATUS_OUT_OF_RANGE: u8 = 2;
/// Completion status: the target does not support the operation.
pub const ETHLINK_STATUS_UNSUPPORTED: u8 = 3;
/// Completion status: the data is poisoned.
pub const ETHLINK_STATUS_POISONED: u8 = 4;
/// Completion status: the request was malformed.
pub const ETHLINK_STATUS_MALFORMED: u8 = 5;
/// Completion status: the address is not aligned for the operation.
pub const ETHLINK_STATUS_MISALIGNED: u8 = 6;
/// Completion status: the target was busy after every retry.
pub const ETHLINK_STATUS_BUSY: u8 = 7;
/// Completion status: the target answered a status this version does not know; its value is
/// in `status_raw`.
pub const ETHLINK_STATUS_UNKNOWN: u8 = 8;
/// Completion status: no usable path until the deadline; never sent.
pub const ETHLINK_STATUS_NO_PATH: u8 = 9;
/// Completion status: an atomic lost with its link: performed once or not at all.
pub const ETHLINK_STATUS_FATE_UNKNOWN: u8 = 10;
/// Completion status: no final response before the deadline after every retry.
pub const ETHLINK_STATUS_TIMEOUT: u8 = 11;

/// Memory space: global memory.
pub const ETHLINK_SPACE_GLOBAL: u8 = 0;
/// Memory space: shared memory.
pub const ETHLINK_SPACE_SHARED: u8 = 1;

/// Region permission bit: remote reads.
pub const ETHLINK_PERM_READ: u32 = 1 << 0;
/// Region permission bit: remote writes.
pub const ETHLINK_PERM_WRITE: u32 = 1 << 1;
/// Region permission bit: remote atomics.
pub const ETHLINK_PERM_ATOMIC: u32 = 1 << 2;

/// Load-store operation: read `len` bytes.
pub const ETHLINK_LS_LOAD: u8 = 0;
/// Load-store operation: write the `data_len` bytes at `data`.
pub const ETHLINK_LS_STORE: u8 = 1;
/// Load-store operation: add `value` to the `width`-byte value and return the old one.
pub const ETHLINK_LS_FETCH_ADD: u8 = 2;
/// Load-store operation: store `value` and return the old one.
pub const ETHLINK_LS_SWAP: u8 = 3;
/// Load-store operation: store `value` if the old value equals `compare`; return the old one.
pub const ETHLINK_LS_COMPARE_SWAP: u8 = 4;

/// Load-balancing policy of an endpoint (endpoint.md EP-4-2): a hash of the destination and
/// the stream or tag picks the port.
pub const ETHLINK_POLICY_HASH: u8 = 0;
/// Load-balancing policy: the next port in a cycle.
pub const ETHLINK_POLICY_ROUND_ROBIN: u8 = 1;
/// Load-balancing policy: the port with the fewest bytes waiting.
pub const ETHLINK_POLICY_LEAST_LOADED: u8 = 2;
/// Load-balancing policy: round-robin, and every RDMA write segment on the next port.
pub const ETHLINK_POLICY_SPRAY: u8 = 3;

/// Forwarding mode of a switch: a frame may leave `latency` after its first bit arrived.
pub const ETHLINK_MODE_CUT_THROUGH: u8 = 0;
/// Forwarding mode of a switch: a frame may leave `latency` after its last bit arrived.
pub const ETHLINK_MODE_STORE_AND_FORWARD: u8 = 1;

/// Bytes of the name in [`Description`], its terminating NUL included.
pub const ETHLINK_NAME_LEN: usize = 64;

/// The link parameters of one link end, or of every port of an endpoint or a switch (link.md
/// Table LINK-T1). Durations are in nanoseconds.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkParams {
    /// Virtual channels, 1..=8.
    pub vcs: u8,
    /// Replays without progress before FLUSH, 1..=255.
    pub replay_count_max: u8,
    /// Bytes per credit: a power of two, 32..=2048.
    pub credit_size: u16,
    /// Bytes added to a frame's length when its credit cost is computed, 0..=255.
    pub credit_overhead: u16,
    /// Maximum frame size, 320..=9216.
    pub mfs: u16,
    /// Credits granted on each VC; 0 on the VCs beyond `vcs`.
    pub rx_credits: [u32; 8],
    /// Most unacknowledged sequenced frames.
    pub llr_window: u32,
    /// Most frames in the replay buffer.
    pub replay_max_frames: u32,
    /// Most bytes in the replay buffer.
    pub replay_max_bytes: u32,
    /// Bytes accepted between cumulative ACKs.
    pub ack_spacing: u32,
    /// Freed credits that trigger a CF.
    pub cf_min_credits: u32,
    /// Frames the transmit queue of each VC holds before a submit is refused.
    pub tx_queue_frames: u32,
    /// Bytes the transmit queue of each VC holds before a submit is refused.
    pub tx_queue_bytes: u32,
    /// Longest an accepted frame waits for its ACK.
    pub ack_timer_ns: u64,
    /// Time without ACK progress before the replay buffer is replayed.
    pub replay_timer_ns: u64,
    /// Least time between two CF frames.
    pub cf_min_interval_ns: u64,
    /// Most time between two CF frames while UP.
    pub cf_max_interval_ns: u64,
    /// Period of CC frames.
    pub cc_interval_ns: u64,
    /// Period of INIT frames while initialising.
    pub init_interval_ns: u64,
    /// Time in INIT after which an initialisation timeout is counted.
    pub init_timeout_ns: u64,
    /// Longest a frame stays in the replay buffer after its first transmission; FLUSH then.
    pub llr_max_age_ns: u64,
}

/// Configuration of a link end. Fill it with `ethlink_link_end_config_default` and change what
/// differs.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkEndConfig {
    /// The link parameters.
    pub link: LinkParams,
    /// The port's own unicast MAC address, the source of every frame it sends: bit 0 of
    /// `mac[0]` (the group bit) must be 0 (wire.md WIRE-2.3-1).
    pub mac: [u8; 6],
    /// Capabilities announced in INIT and INIT_ECHO: `ETHLINK_CAP_*` bits.
    pub caps: u32,
    /// Seed of the nonces the end draws: give every incarnation of a device its own.
    pub seed: u64,
}

/// Configuration of a GPU endpoint (endpoint.md Table EP-T1). Fill it with
/// `ethlink_endpoint_config_default` and change what differs. Durations are in nanoseconds.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndpointConfig {
    /// Parameters of every port's link (each port derives its MAC address and nonce seed).
    pub link: LinkParams,
    /// The GPU id, 0..=0xFFFE.
    pub gpu: u16,
    /// Protocol stacks, 1..=16.
    pub stacks: u8,
    /// Ports per stack, 1..=16; the endpoint has `stacks * ports_per_stack` ports.
    pub ports_per_stack: u8,
    /// Load-balancing policy: an `ETHLINK_POLICY_*` value.
    pub policy: u8,
    /// Retries of one operation, 0..=16.
    pub max_retries: u8,
    /// Tags of the load-store unit.
    pub lsu_tags: u16,
    /// Tags of the RDMA engine.
    pub rdma_tags: u16,
    /// Capabilities: `ETHLINK_CAP_*` bits (RDMA, ATOMICS, SHARED as a target; PACKING).
    pub caps: u32,
    /// RDMA descriptors outstanding at most.
    pub rdma_queue: u32,
    /// Bytes per RDMA segment.
    pub segment: u32,
    /// Bytes per RDMA_READ.
    pub read_chunk: u32,
    /// Bytes of one RDMA write on the wire, and the longest write a target reassembles.
    pub write_chunk: u32,
    /// Chunks of one RDMA read outstanding at most.
    pub read_window: u32,
    /// RDMA writes a target reassembles at once.
    pub max_reassemblies: u32,
    /// 256-byte blocks the reassembly records cover in all.
    pub max_reassembly_blocks: u32,
    /// RDMA reads a target serves at once.
    pub max_read_jobs: u32,
    /// Bytes of responses held before the target stops taking requests.
    pub response_backlog: u32,
    /// Bytes queued per port and VC before the RDMA engine waits.
    pub port_queue: u32,
    /// Entries of the region table of each memory space.
    pub max_regions: u32,
    /// Longest a transaction waits for others to share its frame.
    pub pack_delay_ns: u64,
    /// Deadline of an operation after issue, retry or progress.
    pub op_timeout_ns: u64,
    /// Rest of a tag whose operation was retried or ended without its final response.
    pub tag_quarantine_ns: u64,
    /// Longest a request or response can live in the fabric.
    pub frame_lifetime_ns: u64,
    /// Wait before the first retry of an operation answered BUSY.
    pub busy_backoff_ns: u64,
    /// Longest a target keeps a request frame it stopped taking; discarded unperformed then.
    pub hold_max_ns: u64,
    /// Bytes of global memory.
    pub global_size: u64,
    /// Bytes of shared memory.
    pub shared_size: u64,
    /// Seed of the ports' nonces.
    pub seed: u64,
}

/// Configuration of a switch (switch.md Table SW-T1). Fill it with
/// `ethlink_switch_config_default` and change what differs. Durations are in nanoseconds.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SwitchConfig {
    /// Parameters of every port's link.
    pub link: LinkParams,
    /// The switch's number (part of every port's MAC address).
    pub id: u16,
    /// Ports, 1..=1024.
    pub ports: u16,
    /// Forwarding mode: an `ETHLINK_MODE_*` value.
    pub mode: u8,
    /// Frames of one VC an egress link may hold queued, 1..=64.
    pub egress_depth: u32,
    /// Port-to-port latency, at most 10 us.
    pub latency_ns: u64,
    /// Longest a frame may stay in the switch before it starts to leave.
    pub max_residence_ns: u64,
    /// Line rate of every port in Gb/s: the cut-through timing, and the pace at which each port
    /// hands out frames (a port sends its next frame once the previous one, with preamble and
    /// inter-frame gap, has left).
    pub rate_gbps: f64,
    /// Seed of the ports' nonces.
    pub seed: u64,
}

/// What a device says of itself.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Description {
    /// `ETHLINK_ABI_VERSION` of the library.
    pub abi_version: u32,
    /// Its role: an `ETHLINK_ROLE_*` value.
    pub role: u8,
    /// Its number of ports (1 for a link end).
    pub ports: u16,
    /// Capabilities it implements: `ETHLINK_CAP_*` bits.
    pub caps: u32,
    /// A name for reports, NUL-terminated.
    pub name: [c_char; ETHLINK_NAME_LEN],
    /// The tick of the clock its timers run on, in ns (link.md LINK-1-5): 1..=256; 0 is taken
    /// as 1. A model wrapping an RTL simulation gives its clock period, rounded up.
    pub tick_ns: u32,
    /// The line rate its ports serialise frames at, in Gb/s (25..=1600); 0 when frames leave
    /// as soon as they are made.
    pub rate_gbps: u32,
}

/// Something a device reports to its upper layer; the bytes that go with it (a payload, the
/// data of a completion) are written to the data buffer given with it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// An `ETHLINK_EVENT_*` value.
    pub kind: u32,
    /// The port it concerns (0 for a link end and for completions).
    pub port: u16,
    /// The VC of a delivered or lost payload.
    pub vc: u8,
    /// `ETHLINK_LOST_*` for a lost payload, `ETHLINK_DOWN_*` for a link down, else 0.
    pub reason: u8,
    /// Completion: an `ETHLINK_OP_*` value.
    pub op: u8,
    /// Completion: an `ETHLINK_STATUS_*` value.
    pub status: u8,
    /// Completion with `ETHLINK_STATUS_UNKNOWN`: the status byte the target sent; otherwise the
    /// wire value of the status (0 for the statuses that never cross the wire).
    pub status_raw: u8,
    /// Completion: the tag of a load-store operation or the id of a descriptor or fence.
    pub id: u64,
    /// Bytes of data that go with the event: written to the data buffer, or needed in it when
    /// the call returns `ETHLINK_ERR_BUFFER_TOO_SMALL`.
    pub len: usize,
}

/// A load-store operation for `ethlink_endpoint_issue` (transaction.md §2).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LsRequest {
    /// An `ETHLINK_LS_*` value.
    pub kind: u8,
    /// The target memory space: an `ETHLINK_SPACE_*` value.
    pub space: u8,
    /// Atomics: operand width, 4 or 8.
    pub width: u8,
    /// 1: the operation belongs to the ordered stream `stream` (endpoint.md §4); 0: unordered.
    pub ordered: u8,
    /// The target GPU id.
    pub dst: u16,
    /// Load: bytes to read, 1..=256.
    pub len: u16,
    /// The target region's key.
    pub key: u32,
    /// The stream, when `ordered` is 1.
    pub stream: u32,
    /// The target address.
    pub addr: u64,
    /// Atomics: the addend, the new value, or the value stored when equal.
    pub value: u64,
    /// Compare-swap: the value compared.
    pub compare: u64,
    /// Store: the bytes to write (1..=256 of them).
    pub data: *const u8,
    /// Store: how many.
    pub data_len: usize,
}

/// An RDMA descriptor for `ethlink_endpoint_post` (transaction.md §2).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RdmaDesc {
    /// 1: write (local to remote); 0: read (remote to local).
    pub write: u8,
    /// The local memory space: an `ETHLINK_SPACE_*` value.
    pub local_space: u8,
    /// The remote memory space: an `ETHLINK_SPACE_*` value.
    pub space: u8,
    /// The remote GPU id.
    pub dst: u16,
    /// The remote region's key.
    pub key: u32,
    /// The local address.
    pub local_addr: u64,
    /// The remote address.
    pub addr: u64,
    /// Bytes.
    pub len: u64,
}

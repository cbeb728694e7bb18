//! # ethlink-endpoint: the network side of a GPU
//!
//! This crate is the endpoint layer of ethlink, as `docs/spec/endpoint.md` and
//! `docs/spec/transaction.md` specify it. An [`Endpoint`] is one GPU as the scale-up network
//! sees it:
//!
//! - a [`Memory`] with a global and a shared space, sparse, with registered regions that carry a
//!   key and read / write / atomic permissions (§2); ranges holding the data
//!   [`pattern`](pattern::Pattern) are kept as descriptions, not bytes;
//! - a load-store unit: [`Endpoint::issue`] a load, store or atomic to (GPU, space, address) and
//!   get a tag; outstanding operations are bounded by the tag space, [`Endpoint::fence`]s by
//!   `max_fences`, and completions not yet taken by the sum of the bounds (§5);
//! - an RDMA engine: [`Endpoint::post`] a write or read descriptor of up to 4 GiB - 1; it is
//!   segmented, sprayed and reassembled by offset and tag (§6);
//! - `stacks x ports` ports, each one [`ethlink_link::Link`] end, with a load-balancing
//!   [`Policy`] and per-stream path pinning so that ordered operations stay in order (§4);
//! - transaction packing within a bound on added delay (§7);
//! - the target side that performs other GPUs' requests and answers them (§8);
//! - retries and error completions when a port goes down, a deadline passes or a target answers
//!   BUSY, so that no operation ever ends silently (§9, transaction.md §5); a request of unknown
//!   fate goes again only `frame_lifetime` after it was lost;
//! - [`Counters`] (§10);
//! - capabilities (RDMA, ATOMICS, SHARED, PACKING) announced in every port's INIT and enforced
//!   as a target (§11);
//! - [`Endpoint::reset`] and the port MAC addresses derived from GPU id, stack and port (§12).
//!
//! Like the link, the endpoint is sans-IO: frames, commands and time in; frames, completions
//! and a deadline out. It reads no clock and draws no random numbers; the same inputs give the
//! same outputs. [`harness`] joins two endpoints port by port through the link crate's wire and
//! fault injector.
//!
//! It sits on `ethlink-link` (one end per port) and `ethlink-protocol` (every byte); the fabric
//! and the C ABI sit on it.

#![no_std]

extern crate alloc;
#[cfg(any(feature = "std", test))]
extern crate std;

mod config;
mod counters;
mod endpoint;
pub mod harness;
mod memory;
mod ops;
pub mod pattern;

pub use config::{
    BLOCK, Config, DEFAULT_CAPS, Policy, SEGMENT_FRAME_OVERHEAD, VCS_NEEDED, port_mac,
};
pub use counters::{Counters, PortCounters};
pub use endpoint::{Endpoint, path_hash};
pub use ethlink_link::ConfigError;
pub use memory::{
    Access, MAX_POISON_RANGES, MAX_SPACE_SIZE, Memory, MemoryConfig, MemoryConfigError, OutOfSpace,
    PAGE_SIZE, POISON_GRANULE, Perms, Piece, PoisonError, Region, RegionError,
};
pub use ops::{
    Bytes, Completion, CompletionData, CompletionStatus, FenceError, IssueError, LsOp, LsRequest,
    OpId, OpKind, Ordering, PostError, RdmaDesc, RdmaDir, Remote,
};

//! What the GPU asks of its endpoint and what it gets back (transaction.md §2, §3).

use core::fmt;

use ethlink_link::Instant;
use ethlink_protocol::{AtomicOp, AtomicValue, GpuId, MAX_LOAD_STORE_LEN, Space, Status, Width};

/// Where a remote access points: the target GPU, its memory space, the region key and the
/// address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Remote {
    /// The target GPU.
    pub gpu: GpuId,
    /// Global or shared memory of the target.
    pub space: Space,
    /// The key of the target region.
    pub key: u32,
    /// The first byte addressed.
    pub addr: u64,
}

/// Bytes of a store, 1..=256 of them, held inline.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Bytes {
    len: u16,
    buf: [u8; MAX_LOAD_STORE_LEN],
}

impl Bytes {
    /// The bytes of `data`, if it is 1..=256 bytes long.
    pub fn new(data: &[u8]) -> Option<Self> {
        if data.is_empty() || data.len() > MAX_LOAD_STORE_LEN {
            return None;
        }
        let mut buf = [0; MAX_LOAD_STORE_LEN];
        buf.get_mut(..data.len())?.copy_from_slice(data);
        Some(Bytes {
            len: u16::try_from(data.len()).ok()?,
            buf,
        })
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        self.buf.get(..usize::from(self.len)).unwrap_or(&[])
    }
}

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bytes({} B)", self.len)
    }
}

/// A load-store operation (transaction.md §2).
// The store data is held inline so that issuing an operation never allocates.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LsOp {
    /// Read `len` bytes, 1..=256.
    Load {
        /// Bytes to read.
        len: u16,
    },
    /// Write the bytes.
    Store {
        /// The bytes, 1..=256.
        data: Bytes,
    },
    /// An atomic of 4 or 8 bytes.
    Atomic {
        /// The operand size.
        width: Width,
        /// The operation and its operands (at most the width's maximum).
        op: AtomicOp,
    },
    /// A FENCE request (transaction.md TXN-4-6): an ordering point at the target for the
    /// requests this GPU sent before it on the same port. Only the target GPU of its
    /// [`Remote`] counts; its space, key and address are not sent.
    Fence,
}

/// Whether an operation belongs to an ordered stream (EP-4-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Ordering {
    /// Any path will do.
    #[default]
    Unordered,
    /// Every outstanding operation of the stream shares one path, so they are performed in issue
    /// order (TXN-4-1).
    Stream(u32),
    /// On this port (numbered stack by stack, endpoint.md §3) while it is usable, whatever the
    /// policy; when it is not, as an unordered operation (EP-4-6). Operations on one port to one
    /// target share a path.
    Port(u16),
}

/// A load-store request: the operation, its target and its ordering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LsRequest {
    /// The operation.
    pub op: LsOp,
    /// Where.
    pub remote: Remote,
    /// Ordered stream or not.
    pub ordering: Ordering,
}

/// Which way an RDMA descriptor moves bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RdmaDir {
    /// Local memory to the remote GPU.
    Write,
    /// The remote GPU to local memory.
    Read,
}

/// An RDMA descriptor (EP-6-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RdmaDesc {
    /// Write or read.
    pub dir: RdmaDir,
    /// The local space: the source of a write, the destination of a read.
    pub local_space: Space,
    /// The local address.
    pub local_addr: u64,
    /// The remote side.
    pub remote: Remote,
    /// Bytes to move, 1..=2^32-1.
    pub len: u64,
}

/// The kind of an operation, as counters and completions name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    /// Load.
    Load,
    /// Store.
    Store,
    /// Fetch-add.
    FetchAdd,
    /// Swap.
    Swap,
    /// Compare-swap.
    CompareSwap,
    /// Fence.
    Fence,
    /// RDMA write.
    RdmaWrite,
    /// RDMA read.
    RdmaRead,
    /// A FENCE request sent to a target ([`LsOp::Fence`]).
    RemoteFence,
}

impl OpKind {
    /// Every kind, in counter order.
    pub const ALL: [OpKind; 9] = [
        OpKind::Load,
        OpKind::Store,
        OpKind::FetchAdd,
        OpKind::Swap,
        OpKind::CompareSwap,
        OpKind::Fence,
        OpKind::RdmaWrite,
        OpKind::RdmaRead,
        OpKind::RemoteFence,
    ];

    /// Position in [`OpKind::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            OpKind::Load => "load",
            OpKind::Store => "store",
            OpKind::FetchAdd => "fetch_add",
            OpKind::Swap => "swap",
            OpKind::CompareSwap => "compare_swap",
            OpKind::Fence => "fence",
            OpKind::RdmaWrite => "rdma_write",
            OpKind::RdmaRead => "rdma_read",
            OpKind::RemoteFence => "remote_fence",
        }
    }

    /// Whether performing it again cannot change memory, so that it may be sent again after an
    /// attempt that may have been performed (TXN-5-1): loads, RDMA reads and fences. Stores,
    /// RDMA writes and atomics are not.
    pub const fn repeatable(self) -> bool {
        matches!(
            self,
            OpKind::Load | OpKind::RdmaRead | OpKind::Fence | OpKind::RemoteFence
        )
    }

    pub(crate) const fn of(op: &LsOp) -> Self {
        match op {
            LsOp::Load { .. } => OpKind::Load,
            LsOp::Store { .. } => OpKind::Store,
            LsOp::Atomic { op, .. } => match op {
                AtomicOp::FetchAdd { .. } => OpKind::FetchAdd,
                AtomicOp::Swap { .. } => OpKind::Swap,
                AtomicOp::CompareSwap { .. } => OpKind::CompareSwap,
            },
            LsOp::Fence => OpKind::RemoteFence,
        }
    }
}

/// The final status of an operation (transaction.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompletionStatus {
    /// Performed.
    Ok,
    /// The target answered with this status (never [`Status::Ok`]); unknown values keep their
    /// raw value (TXN-3-2).
    Remote(Status),
    /// No usable path existed until the deadline; never sent (TXN-3-6).
    NoPath,
    /// A store, RDMA write or atomic lost with its link: each of its bytes written once or not
    /// at all (TXN-3-5).
    FateUnknown,
    /// No final response before the deadline after every retry (TXN-3-7).
    Timeout,
}

impl CompletionStatus {
    /// Number of status classes counters keep.
    pub const CLASSES: usize = 12;

    /// Whether this is [`CompletionStatus::Ok`].
    pub const fn is_ok(self) -> bool {
        matches!(self, CompletionStatus::Ok)
    }

    /// The counter class: 0 OK, 1..=7 the wire statuses 1..=7, 8 unknown wire statuses, 9
    /// NO_PATH, 10 FATE_UNKNOWN, 11 TIMEOUT.
    pub const fn class(self) -> usize {
        match self {
            CompletionStatus::Ok => 0,
            CompletionStatus::Remote(s) => match s {
                Status::Ok => 0,
                Status::Unknown(_) => 8,
                other => other.to_u8() as usize,
            },
            CompletionStatus::NoPath => 9,
            CompletionStatus::FateUnknown => 10,
            CompletionStatus::Timeout => 11,
        }
    }

    /// The name of counter class `class`.
    pub const fn class_name(class: usize) -> &'static str {
        match class {
            0 => "OK",
            1 => "ACCESS_VIOLATION",
            2 => "OUT_OF_RANGE",
            3 => "UNSUPPORTED",
            4 => "POISONED",
            5 => "MALFORMED",
            6 => "MISALIGNED",
            7 => "BUSY",
            8 => "UNKNOWN",
            9 => "NO_PATH",
            10 => "FATE_UNKNOWN",
            _ => "TIMEOUT",
        }
    }

    pub(crate) const fn from_wire(s: Status) -> Self {
        match s {
            Status::Ok => CompletionStatus::Ok,
            other => CompletionStatus::Remote(other),
        }
    }
}

impl fmt::Display for CompletionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompletionStatus::Remote(Status::Unknown(v)) => write!(f, "UNKNOWN({v:#04x})"),
            other => f.write_str(Self::class_name(other.class())),
        }
    }
}

/// Identifies the operation a completion ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpId {
    /// A load-store operation, by the tag [`crate::Endpoint::issue`] returned.
    Ls(u16),
    /// An RDMA descriptor, by the id [`crate::Endpoint::post`] returned.
    Rdma(u64),
    /// A fence, by the id [`crate::Endpoint::fence`] returned.
    Fence(u64),
}

/// Data a completion carries (TXN-3-3).
// Load data is held inline so that completing an operation never allocates.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompletionData {
    /// None: a store, fence, RDMA operation or any failure.
    None,
    /// The bytes a load read.
    Load(Bytes),
    /// The value an atomic found.
    Atomic(AtomicValue),
}

/// The end of one operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Completion {
    /// Which operation.
    pub id: OpId,
    /// Its kind.
    pub kind: OpKind,
    /// How it ended.
    pub status: CompletionStatus,
    /// Its data.
    pub data: CompletionData,
    /// When it was issued or posted.
    pub issued: Instant,
    /// When it completed.
    pub completed: Instant,
    /// Times it was retried (TXN-5-3, TXN-5-4).
    pub retries: u8,
    /// The target GPU (this GPU's own id for a fence).
    pub gpu: GpuId,
}

/// Why [`crate::Endpoint::issue`] refused an operation. Nothing was sent or recorded (EP-5-2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IssueError {
    /// Every tag is held by an outstanding operation (EP-5-2), or the completions not yet taken
    /// fill the endpoint's bound (EP-5-10): take completions and try again.
    TagsExhausted {
        /// Load-store operations outstanding (every tag held when it equals `lsu_tags`;
        /// otherwise the completions waiting refused the operation).
        outstanding: u32,
    },
    /// A parameter is out of range (EP-5-3).
    Invalid {
        /// The parameter.
        field: &'static str,
        /// Its value.
        value: u64,
        /// The rule.
        rule: &'static str,
    },
}

impl fmt::Display for IssueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IssueError::TagsExhausted { outstanding } => write!(
                f,
                "every load-store tag is held ({outstanding} operations outstanding), or the \
                 completions not yet taken fill the endpoint's bound: take completions and try \
                 again"
            ),
            IssueError::Invalid { field, value, rule } => write!(f, "{field} = {value}: {rule}"),
        }
    }
}

impl core::error::Error for IssueError {}

/// Why [`crate::Endpoint::post`] refused a descriptor. Nothing was sent or recorded (EP-6-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PostError {
    /// `rdma_queue` descriptors are outstanding (EP-6-1), or the completions not yet taken fill
    /// the endpoint's bound (EP-5-10): take completions and try again.
    QueueFull {
        /// Descriptors outstanding (the queue is full when it equals `rdma_queue`; otherwise the
        /// completions waiting refused the descriptor).
        outstanding: u32,
    },
    /// A field is out of range.
    Invalid {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u64,
        /// The rule.
        rule: &'static str,
    },
}

impl fmt::Display for PostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PostError::QueueFull { outstanding } => write!(
                f,
                "the RDMA queue is full ({outstanding} descriptors outstanding), or the \
                 completions not yet taken fill the endpoint's bound: take completions and try \
                 again"
            ),
            PostError::Invalid { field, value, rule } => write!(f, "{field} = {value}: {rule}"),
        }
    }
}

impl core::error::Error for PostError {}

/// Why [`crate::Endpoint::fence`] refused a fence. Nothing was recorded (EP-5-9, EP-5-10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FenceError {
    /// `max_fences` fences are outstanding (EP-5-9): take completions and try again.
    TooMany {
        /// Fences outstanding.
        outstanding: u32,
    },
    /// The completions not yet taken fill the endpoint's bound (EP-5-10): take them and try
    /// again.
    CompletionsWaiting {
        /// Completions waiting to be taken.
        waiting: u32,
    },
}

impl fmt::Display for FenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FenceError::TooMany { outstanding } => write!(
                f,
                "{outstanding} fences are outstanding, the most the endpoint holds (max_fences): \
                 take completions and try again"
            ),
            FenceError::CompletionsWaiting { waiting } => write!(
                f,
                "{waiting} completions wait to be taken, the most the endpoint holds: take them \
                 and try again"
            ),
        }
    }
}

impl core::error::Error for FenceError {}

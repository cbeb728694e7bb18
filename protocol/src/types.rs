//! Small value types shared by every wire format: sequence numbers, virtual channels, GPU and path
//! ids, memory spaces, opcodes and statuses.

use core::fmt;

/// A 20-bit LLR sequence number, compared modulo 2^20 (WIRE-3-4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Seq(u32);

impl Seq {
    /// Number of distinct sequence numbers, 2^20.
    pub const MODULUS: u32 = 1 << 20;
    /// Mask of the 20 significant bits.
    pub const MASK: u32 = Self::MODULUS - 1;
    /// Largest window two ends may use so that old and new frames cannot be confused, 2^19.
    pub const MAX_WINDOW: u32 = 1 << 19;

    /// The sequence number `v mod 2^20`.
    pub const fn new(v: u32) -> Self {
        Seq(v & Self::MASK)
    }

    /// The raw 20-bit value.
    pub const fn value(self) -> u32 {
        self.0
    }

    /// The sequence number `n` after this one, wrapping at 2^20.
    pub const fn add(self, n: u32) -> Self {
        Seq(self.0.wrapping_add(n) & Self::MASK)
    }

    /// The sequence number `n` before this one, wrapping at 2^20.
    pub const fn sub(self, n: u32) -> Self {
        Seq(self.0.wrapping_sub(n) & Self::MASK)
    }

    /// The next sequence number.
    pub const fn next(self) -> Self {
        self.add(1)
    }

    /// Forward distance from `earlier` to `self`, in 0..2^20.
    pub const fn distance_from(self, earlier: Seq) -> u32 {
        self.0.wrapping_sub(earlier.0) & Self::MASK
    }

    /// Whether `self` lies in the half-open window `[start, start + len)` modulo 2^20.
    pub const fn in_window(self, start: Seq, len: u32) -> bool {
        self.distance_from(start) < len
    }
}

impl fmt::Display for Seq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A virtual channel, 0..=7.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Vc(u8);

impl Vc {
    /// Number of virtual channels the wire format can name.
    pub const COUNT: usize = 8;

    /// The VC `v`, or `None` when `v > 7`.
    pub const fn new(v: u8) -> Option<Self> {
        if v < 8 { Some(Vc(v)) } else { None }
    }

    /// The VC number.
    pub const fn value(self) -> u8 {
        self.0
    }

    /// The VC number as an index.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for Vc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A GPU id, 0..=0xFFFE (0xFFFF is reserved, WIRE-5-3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct GpuId(u16);

impl GpuId {
    /// The reserved value.
    pub const RESERVED: u16 = 0xFFFF;

    /// The id `v`, or `None` for the reserved value.
    pub const fn new(v: u16) -> Option<Self> {
        if v == Self::RESERVED {
            None
        } else {
            Some(GpuId(v))
        }
    }

    /// The raw id.
    pub const fn value(self) -> u16 {
        self.0
    }
}

impl fmt::Display for GpuId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A path id: the stack (bits 7..4) and port within the stack (bits 3..0) at the source GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct PathId(pub u8);

impl PathId {
    /// The path id of `port` of `stack` (each 0..=15; higher bits are dropped).
    pub const fn from_parts(stack: u8, port: u8) -> Self {
        PathId(((stack & 0xF) << 4) | (port & 0xF))
    }

    /// The source stack.
    pub const fn stack(self) -> u8 {
        self.0 >> 4
    }

    /// The port within the stack.
    pub const fn port(self) -> u8 {
        self.0 & 0xF
    }
}

/// The optional features a device announces in its INIT and INIT_ECHO frames (wire.md §4.5,
/// classes.md §3). Bits 13..0 of the capability field; bits this version does not define are
/// reserved (zero on transmit, ignored on receipt).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Capabilities(u16);

impl Capabilities {
    /// Bit 0: the device performs RDMA_WRITE and RDMA_READ as a target (CAP-RDMA).
    pub const RDMA: Capabilities = Capabilities(1 << 0);
    /// Bit 1: the device performs the atomics as a target (CAP-ATOMICS).
    pub const ATOMICS: Capabilities = Capabilities(1 << 1);
    /// Bit 2: the device has a shared memory space that requests with the SHARED flag reach
    /// (CAP-SHARED).
    pub const SHARED: Capabilities = Capabilities(1 << 2);
    /// Bit 3: the device may send DATA frames that carry more than one transaction (CAP-PACKING).
    pub const PACKING: Capabilities = Capabilities(1 << 3);
    /// Bit 4: the device may send frames with an 802.1Q tag (CAP-TAGGED).
    pub const TAGGED: Capabilities = Capabilities(1 << 4);
    /// Bit 5: the device may begin to send a frame before its FCS has been checked, and ends a
    /// frame found damaged with a stomped FCS (CAP-CUT-THROUGH).
    pub const CUT_THROUGH: Capabilities = Capabilities(1 << 5);
    /// The bits this version defines.
    pub const DEFINED: Capabilities = Capabilities(0x003F);
    /// No optional feature.
    pub const NONE: Capabilities = Capabilities(0);

    /// The capabilities whose bits are set in `bits`; bits this version does not define are
    /// dropped (they are reserved).
    pub const fn from_bits_truncate(bits: u16) -> Self {
        Capabilities(bits & Self::DEFINED.0)
    }

    /// The raw bits.
    pub const fn bits(self) -> u16 {
        self.0
    }

    /// Whether every capability of `other` is in `self`.
    pub const fn contains(self, other: Capabilities) -> bool {
        self.0 & other.0 == other.0
    }

    /// The capabilities of both.
    pub const fn union(self, other: Capabilities) -> Self {
        Capabilities(self.0 | other.0)
    }

    /// `self` without the capabilities of `other`.
    pub const fn without(self, other: Capabilities) -> Self {
        Capabilities(self.0 & !other.0)
    }

    /// The names of the capabilities set, in bit order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        const NAMES: [&str; 6] = [
            "rdma",
            "atomics",
            "shared",
            "packing",
            "tagged",
            "cut_through",
        ];
        NAMES
            .iter()
            .enumerate()
            .filter(move |(bit, _)| self.0 & (1 << bit) != 0)
            .map(|(_, name)| *name)
    }

    /// The capability named `name` (as [`Capabilities::names`] spells it).
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "rdma" => Self::RDMA,
            "atomics" => Self::ATOMICS,
            "shared" => Self::SHARED,
            "packing" => Self::PACKING,
            "tagged" => Self::TAGGED,
            "cut_through" => Self::CUT_THROUGH,
            _ => return None,
        })
    }
}

impl core::ops::BitOr for Capabilities {
    type Output = Capabilities;
    fn bitor(self, rhs: Capabilities) -> Capabilities {
        self.union(rhs)
    }
}

/// The role a device announces in its INIT and INIT_ECHO frames (bits 15..14 of the capability
/// field, wire.md §4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub enum Role {
    /// 0: a link end that does not say what is behind it (a link tester, a bridge).
    #[default]
    LinkEnd,
    /// 1: a GPU endpoint.
    Endpoint,
    /// 2: a switch.
    Switch,
    /// 3: reserved; kept so that the value round-trips.
    Unknown(u8),
}

impl Role {
    /// The role of the two-bit code `code` (only its low two bits are read).
    pub const fn from_code(code: u8) -> Self {
        match code & 0x3 {
            0 => Role::LinkEnd,
            1 => Role::Endpoint,
            2 => Role::Switch,
            other => Role::Unknown(other),
        }
    }

    /// The two-bit code.
    pub const fn code(self) -> u8 {
        match self {
            Role::LinkEnd => 0,
            Role::Endpoint => 1,
            Role::Switch => 2,
            Role::Unknown(v) => v & 0x3,
        }
    }

    /// The role's name: `link_end`, `endpoint`, `switch` or `reserved`.
    pub const fn name(self) -> &'static str {
        match self {
            Role::LinkEnd => "link_end",
            Role::Endpoint => "endpoint",
            Role::Switch => "switch",
            Role::Unknown(_) => "reserved",
        }
    }
}

/// A six-byte MAC address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// The destination a port uses before it has learned its peer's address (WIRE-2.3-2).
    pub const LINK_LOCAL: MacAddr = MacAddr([0x01, 0x80, 0xC2, 0x00, 0x00, 0x0E]);
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

/// The memory space a request addresses (request flag SHARED, wire.md §6.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Space {
    /// The target GPU's global memory.
    #[default]
    Global,
    /// The target GPU's shared memory.
    Shared,
}

impl Space {
    pub(crate) const fn from_flags(flags: u8) -> Self {
        if flags & 1 != 0 {
            Space::Shared
        } else {
            Space::Global
        }
    }

    pub(crate) const fn flags(self) -> u8 {
        match self {
            Space::Global => 0,
            Space::Shared => 1,
        }
    }

    /// Lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            Space::Global => "global",
            Space::Shared => "shared",
        }
    }
}

/// Status of a response (wire.md §6.9). Unknown values are kept (WIRE-1.2-4, WIRE-6.9-2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// Performed.
    Ok,
    /// Wrong key or missing permission.
    AccessViolation,
    /// Not inside one registered region.
    OutOfRange,
    /// Opcode, size or space not supported by the target.
    Unsupported,
    /// The data read is poisoned.
    Poisoned,
    /// The request violated the wire format.
    Malformed,
    /// An atomic's address is not aligned to its operand size.
    Misaligned,
    /// The target could not accept the request now.
    Busy,
    /// A value this version does not define.
    Unknown(u8),
}

impl Status {
    /// The status encoded as `v`.
    pub const fn from_u8(v: u8) -> Self {
        match v {
            0 => Status::Ok,
            1 => Status::AccessViolation,
            2 => Status::OutOfRange,
            3 => Status::Unsupported,
            4 => Status::Poisoned,
            5 => Status::Malformed,
            6 => Status::Misaligned,
            7 => Status::Busy,
            other => Status::Unknown(other),
        }
    }

    /// The encoding.
    pub const fn to_u8(self) -> u8 {
        match self {
            Status::Ok => 0,
            Status::AccessViolation => 1,
            Status::OutOfRange => 2,
            Status::Unsupported => 3,
            Status::Poisoned => 4,
            Status::Malformed => 5,
            Status::Misaligned => 6,
            Status::Busy => 7,
            Status::Unknown(v) => v,
        }
    }

    /// Whether this is [`Status::Ok`].
    pub const fn is_ok(self) -> bool {
        matches!(self, Status::Ok)
    }

    /// Upper-case name as the spec writes it (`UNKNOWN` for unknown values).
    pub const fn name(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::AccessViolation => "ACCESS_VIOLATION",
            Status::OutOfRange => "OUT_OF_RANGE",
            Status::Unsupported => "UNSUPPORTED",
            Status::Poisoned => "POISONED",
            Status::Malformed => "MALFORMED",
            Status::Misaligned => "MISALIGNED",
            Status::Busy => "BUSY",
            Status::Unknown(_) => "UNKNOWN",
        }
    }
}

/// Transaction opcodes (wire.md §6.1). Unknown values are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Opcode {
    /// LOAD request.
    Load,
    /// STORE request.
    Store,
    /// Atomic fetch-add request.
    AtomicFetchAdd,
    /// Atomic swap request.
    AtomicSwap,
    /// Atomic compare-and-swap request.
    AtomicCompareSwap,
    /// FENCE request.
    Fence,
    /// RDMA write segment.
    RdmaWrite,
    /// RDMA read request.
    RdmaRead,
    /// Response to LOAD.
    LoadResp,
    /// Response to STORE.
    StoreResp,
    /// Response to fetch-add.
    AtomicFetchAddResp,
    /// Response to swap.
    AtomicSwapResp,
    /// Response to compare-and-swap.
    AtomicCompareSwapResp,
    /// Response to FENCE.
    FenceResp,
    /// Completion of an RDMA write.
    RdmaCompletion,
    /// RDMA read response segment.
    RdmaReadResp,
    /// A value this version does not define.
    Unknown(u8),
}

impl Opcode {
    /// The opcode encoded as `v`.
    pub const fn from_u8(v: u8) -> Self {
        match v {
            0x01 => Opcode::Load,
            0x02 => Opcode::Store,
            0x03 => Opcode::AtomicFetchAdd,
            0x04 => Opcode::AtomicSwap,
            0x05 => Opcode::AtomicCompareSwap,
            0x06 => Opcode::Fence,
            0x10 => Opcode::RdmaWrite,
            0x11 => Opcode::RdmaRead,
            0x81 => Opcode::LoadResp,
            0x82 => Opcode::StoreResp,
            0x83 => Opcode::AtomicFetchAddResp,
            0x84 => Opcode::AtomicSwapResp,
            0x85 => Opcode::AtomicCompareSwapResp,
            0x86 => Opcode::FenceResp,
            0x90 => Opcode::RdmaCompletion,
            0x91 => Opcode::RdmaReadResp,
            other => Opcode::Unknown(other),
        }
    }

    /// The encoding.
    pub const fn to_u8(self) -> u8 {
        match self {
            Opcode::Load => 0x01,
            Opcode::Store => 0x02,
            Opcode::AtomicFetchAdd => 0x03,
            Opcode::AtomicSwap => 0x04,
            Opcode::AtomicCompareSwap => 0x05,
            Opcode::Fence => 0x06,
            Opcode::RdmaWrite => 0x10,
            Opcode::RdmaRead => 0x11,
            Opcode::LoadResp => 0x81,
            Opcode::StoreResp => 0x82,
            Opcode::AtomicFetchAddResp => 0x83,
            Opcode::AtomicSwapResp => 0x84,
            Opcode::AtomicCompareSwapResp => 0x85,
            Opcode::FenceResp => 0x86,
            Opcode::RdmaCompletion => 0x90,
            Opcode::RdmaReadResp => 0x91,
            Opcode::Unknown(v) => v,
        }
    }

    /// Whether the opcode is a request (0x00..=0x7F).
    pub const fn is_request(self) -> bool {
        self.to_u8() & 0x80 == 0
    }

    /// Whether the opcode table of wire.md §6.1 fixes `dlen` at 0 for this opcode (WIRE-6.1-10).
    pub const fn dlen_fixed_zero(self) -> bool {
        matches!(
            self,
            Opcode::Load
                | Opcode::Fence
                | Opcode::RdmaRead
                | Opcode::StoreResp
                | Opcode::FenceResp
                | Opcode::RdmaCompletion
        )
    }

    /// The header length in 32-bit words the spec defines, `None` for unknown opcodes.
    pub const fn hlen(self) -> Option<u8> {
        match self {
            Opcode::Load | Opcode::RdmaRead => Some(6),
            Opcode::Store
            | Opcode::AtomicFetchAdd
            | Opcode::AtomicSwap
            | Opcode::AtomicCompareSwap => Some(5),
            Opcode::RdmaWrite => Some(7),
            Opcode::RdmaCompletion | Opcode::RdmaReadResp => Some(4),
            Opcode::Fence
            | Opcode::LoadResp
            | Opcode::StoreResp
            | Opcode::AtomicFetchAddResp
            | Opcode::AtomicSwapResp
            | Opcode::AtomicCompareSwapResp
            | Opcode::FenceResp => Some(2),
            Opcode::Unknown(_) => None,
        }
    }

    /// Upper-case name as the spec writes it (`UNKNOWN` for unknown values).
    pub const fn name(self) -> &'static str {
        match self {
            Opcode::Load => "LOAD",
            Opcode::Store => "STORE",
            Opcode::AtomicFetchAdd => "ATOMIC_FADD",
            Opcode::AtomicSwap => "ATOMIC_SWAP",
            Opcode::AtomicCompareSwap => "ATOMIC_CAS",
            Opcode::Fence => "FENCE",
            Opcode::RdmaWrite => "RDMA_WRITE",
            Opcode::RdmaRead => "RDMA_READ",
            Opcode::LoadResp => "LOAD_RESP",
            Opcode::StoreResp => "STORE_RESP",
            Opcode::AtomicFetchAddResp => "ATOMIC_FADD_RESP",
            Opcode::AtomicSwapResp => "ATOMIC_SWAP_RESP",
            Opcode::AtomicCompareSwapResp => "ATOMIC_CAS_RESP",
            Opcode::FenceResp => "FENCE_RESP",
            Opcode::RdmaCompletion => "RDMA_COMPLETION",
            Opcode::RdmaReadResp => "RDMA_READ_RESP",
            Opcode::Unknown(_) => "UNKNOWN",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // WIRE-3-4
    //= type=test
    #[test]
    fn seq_wraps_modulo_2_pow_20() {
        let last = Seq::new(Seq::MASK);
        assert_eq!(last.next(), Seq::new(0));
        assert_eq!(Seq::new(0).sub(1), last);
        assert_eq!(Seq::new(3).distance_from(last), 4);
        assert!(Seq::new(2).in_window(last, 4));
        assert!(!Seq::new(3).in_window(last, 4));
        assert_eq!(Seq::new(Seq::MODULUS + 5).value(), 5);
    }

    #[test]
    fn codes_round_trip_including_unknown() {
        for v in 0..=u8::MAX {
            assert_eq!(Status::from_u8(v).to_u8(), v);
            assert_eq!(Opcode::from_u8(v).to_u8(), v);
        }
        assert_eq!(Opcode::Load.to_u8() | 0x80, Opcode::LoadResp.to_u8());
        assert!(Opcode::Unknown(0x7F).is_request());
        assert!(!Opcode::Unknown(0xFF).is_request());
    }

    #[test]
    fn ids() {
        assert_eq!(GpuId::new(0xFFFF), None);
        assert_eq!(GpuId::new(1023).map(GpuId::value), Some(1023));
        assert_eq!(Vc::new(8), None);
        let p = PathId::from_parts(3, 1);
        assert_eq!((p.stack(), p.port(), p.0), (3, 1, 0x31));
    }
}

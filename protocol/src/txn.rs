//! Transactions (wire.md §6): the common prefix, every request and response, and their
//! validation.

use zerocopy::byteorder::network_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::{Action, Discard, EmitError, Error, ErrorKind, Field};
use crate::types::{Opcode, Space, Status};

/// Length of the common prefix.
pub const PREFIX_LEN: usize = 8;
/// Largest LOAD or STORE in bytes.
pub const MAX_LOAD_STORE_LEN: usize = 256;

/// Zero-copy view of the 8-byte common prefix.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct TxnPrefix {
    opcode: u8,
    flags_status: u8,
    tag: U16,
    hlen: u8,
    reserved: u8,
    dlen: U16,
}

impl TxnPrefix {
    /// The opcode.
    pub fn opcode(&self) -> Opcode {
        Opcode::from_u8(self.opcode)
    }
    /// Byte 1: flags of a request, status of a response.
    pub fn flags_status(&self) -> u8 {
        self.flags_status
    }
    /// The tag.
    pub fn tag(&self) -> u16 {
        self.tag.get()
    }
    /// Header length in 32-bit words.
    pub fn hlen(&self) -> u8 {
        self.hlen
    }
    /// Data length in bytes.
    pub fn dlen(&self) -> u16 {
        self.dlen.get()
    }
}

#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct MemExt {
    key: U32,
    addr: U64,
}

#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct LoadExt {
    key: U32,
    addr: U64,
    len: U16,
    reserved: [u8; 2],
}

#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct RdmaWriteExt {
    key: U32,
    addr: U64,
    offset: U32,
    total: U32,
}

#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct RdmaReadExt {
    key: U32,
    addr: U64,
    total: U32,
}

#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct CompletionExt {
    total: U32,
    reserved: [u8; 4],
}

#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct ReadRespExt {
    offset: U32,
    total: U32,
}

/// Where a memory request points: the target's memory space, the region key and the address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MemTarget {
    /// Global or shared memory of the target GPU.
    pub space: Space,
    /// The memory key of the target region.
    pub key: u32,
    /// The address, 64 bits (the memory model decides what is in range).
    pub addr: u64,
}

/// Operand width of an atomic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Width {
    /// 4 bytes.
    W4,
    /// 8 bytes.
    W8,
}

impl Width {
    /// Bytes.
    pub const fn bytes(self) -> usize {
        match self {
            Width::W4 => 4,
            Width::W8 => 8,
        }
    }
    const fn from_bytes(n: usize) -> Option<Self> {
        match n {
            4 => Some(Width::W4),
            8 => Some(Width::W8),
            _ => None,
        }
    }
    const fn fits(self, v: u64) -> bool {
        match self {
            Width::W4 => v <= u32::MAX as u64,
            Width::W8 => true,
        }
    }
}

/// The operation of an atomic request, with its operands (at most the width's maximum).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    /// Add `addend` (wrapping at the width) and return the old value.
    FetchAdd {
        /// The addend.
        addend: u64,
    },
    /// Store `value` and return the old value.
    Swap {
        /// The new value.
        value: u64,
    },
    /// Store `value` if the old value equals `compare`; return the old value.
    CompareSwap {
        /// The value expected.
        compare: u64,
        /// The new value.
        value: u64,
    },
}

impl AtomicOp {
    /// The request opcode.
    pub const fn opcode(self) -> Opcode {
        match self {
            AtomicOp::FetchAdd { .. } => Opcode::AtomicFetchAdd,
            AtomicOp::Swap { .. } => Opcode::AtomicSwap,
            AtomicOp::CompareSwap { .. } => Opcode::AtomicCompareSwap,
        }
    }
}

/// Which atomic a response answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AtomicKind {
    /// Fetch-add.
    FetchAdd,
    /// Swap.
    Swap,
    /// Compare-and-swap.
    CompareSwap,
}

impl AtomicKind {
    /// The response opcode.
    pub const fn response_opcode(self) -> Opcode {
        match self {
            AtomicKind::FetchAdd => Opcode::AtomicFetchAddResp,
            AtomicKind::Swap => Opcode::AtomicSwapResp,
            AtomicKind::CompareSwap => Opcode::AtomicCompareSwapResp,
        }
    }
}

/// An atomic result value with its width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AtomicValue {
    /// A 4-byte value.
    U32(u32),
    /// An 8-byte value.
    U64(u64),
}

impl AtomicValue {
    /// The width.
    pub const fn width(self) -> Width {
        match self {
            AtomicValue::U32(_) => Width::W4,
            AtomicValue::U64(_) => Width::W8,
        }
    }
    /// The value, widened.
    pub const fn get(self) -> u64 {
        match self {
            AtomicValue::U32(v) => v as u64,
            AtomicValue::U64(v) => v,
        }
    }
}

/// One transaction, validated. Data is borrowed from the frame or from the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TxnRepr<'a> {
    /// LOAD request (§6.3).
    Load {
        /// Tag.
        tag: u16,
        /// Target.
        target: MemTarget,
        /// Bytes to read, 1..=256.
        len: u16,
    },
    /// STORE request (§6.4).
    Store {
        /// Tag.
        tag: u16,
        /// Target.
        target: MemTarget,
        /// Bytes to write, 1..=256 of them.
        data: &'a [u8],
    },
    /// Atomic request (§6.5).
    Atomic {
        /// Tag.
        tag: u16,
        /// Target.
        target: MemTarget,
        /// Operand width.
        width: Width,
        /// Operation and operands.
        op: AtomicOp,
    },
    /// FENCE request (§6.6).
    Fence {
        /// Tag.
        tag: u16,
    },
    /// One segment of an RDMA write (§6.7).
    RdmaWrite {
        /// Tag naming the whole write.
        tag: u16,
        /// Target base of the whole write.
        target: MemTarget,
        /// Offset of this segment from the base.
        offset: u32,
        /// Length of the whole write, >= 1.
        total: u32,
        /// The segment's bytes, >= 1.
        data: &'a [u8],
    },
    /// RDMA read request (§6.8).
    RdmaRead {
        /// Tag.
        tag: u16,
        /// Where to read at the target.
        target: MemTarget,
        /// Bytes to read, >= 1.
        total: u32,
    },
    /// LOAD response.
    LoadResp {
        /// Tag of the request.
        tag: u16,
        /// Status.
        status: Status,
        /// Bytes read (empty unless OK).
        data: &'a [u8],
    },
    /// STORE response.
    StoreResp {
        /// Tag of the request.
        tag: u16,
        /// Status.
        status: Status,
    },
    /// Atomic response.
    AtomicResp {
        /// Tag of the request.
        tag: u16,
        /// Which atomic.
        kind: AtomicKind,
        /// Status.
        status: Status,
        /// The value before the operation (`None` unless OK).
        old: Option<AtomicValue>,
    },
    /// FENCE response.
    FenceResp {
        /// Tag of the request.
        tag: u16,
        /// Status.
        status: Status,
    },
    /// Completion of an RDMA write.
    RdmaCompletion {
        /// Tag of the write.
        tag: u16,
        /// Status.
        status: Status,
        /// Length of the write.
        total: u32,
    },
    /// One segment of an RDMA read's data.
    RdmaReadResp {
        /// Tag of the read.
        tag: u16,
        /// Status.
        status: Status,
        /// Offset of the segment from the start of the read.
        offset: u32,
        /// Length of the whole read.
        total: u32,
        /// The segment's bytes (empty unless OK).
        data: &'a [u8],
    },
    /// A structurally valid transaction with an opcode this version does not define
    /// (WIRE-6.1-5, WIRE-6.1-7). Kept whole so it can be reported and re-encoded (WIRE-1.2-4).
    Unknown {
        /// The raw opcode.
        opcode: u8,
        /// Byte 1 (flags or status).
        flags_status: u8,
        /// Tag.
        tag: u16,
        /// Header bytes after the prefix (`4*hlen - 8` bytes).
        header: &'a [u8],
        /// Data bytes.
        data: &'a [u8],
    },
}

const fn round4(n: usize) -> usize {
    (n + 3) & !3
}

impl<'a> TxnRepr<'a> {
    /// The opcode.
    pub const fn opcode(&self) -> Opcode {
        match self {
            TxnRepr::Load { .. } => Opcode::Load,
            TxnRepr::Store { .. } => Opcode::Store,
            TxnRepr::Atomic { op, .. } => op.opcode(),
            TxnRepr::Fence { .. } => Opcode::Fence,
            TxnRepr::RdmaWrite { .. } => Opcode::RdmaWrite,
            TxnRepr::RdmaRead { .. } => Opcode::RdmaRead,
            TxnRepr::LoadResp { .. } => Opcode::LoadResp,
            TxnRepr::StoreResp { .. } => Opcode::StoreResp,
            TxnRepr::AtomicResp { kind, .. } => kind.response_opcode(),
            TxnRepr::FenceResp { .. } => Opcode::FenceResp,
            TxnRepr::RdmaCompletion { .. } => Opcode::RdmaCompletion,
            TxnRepr::RdmaReadResp { .. } => Opcode::RdmaReadResp,
            TxnRepr::Unknown { opcode, .. } => Opcode::from_u8(*opcode),
        }
    }

    /// The tag.
    pub const fn tag(&self) -> u16 {
        match self {
            TxnRepr::Load { tag, .. }
            | TxnRepr::Store { tag, .. }
            | TxnRepr::Atomic { tag, .. }
            | TxnRepr::Fence { tag }
            | TxnRepr::RdmaWrite { tag, .. }
            | TxnRepr::RdmaRead { tag, .. }
            | TxnRepr::LoadResp { tag, .. }
            | TxnRepr::StoreResp { tag, .. }
            | TxnRepr::AtomicResp { tag, .. }
            | TxnRepr::FenceResp { tag, .. }
            | TxnRepr::RdmaCompletion { tag, .. }
            | TxnRepr::RdmaReadResp { tag, .. }
            | TxnRepr::Unknown { tag, .. } => *tag,
        }
    }

    /// Whether this is a request (opcode 0x00..=0x7F).
    pub const fn is_request(&self) -> bool {
        self.opcode().is_request()
    }

    fn header_len(&self) -> usize {
        match self {
            TxnRepr::Unknown { header, .. } => PREFIX_LEN.saturating_add(header.len()),
            other => usize::from(other.opcode().hlen().unwrap_or(2)) * 4,
        }
    }

    fn data_len(&self) -> usize {
        match self {
            TxnRepr::Store { data, .. }
            | TxnRepr::RdmaWrite { data, .. }
            | TxnRepr::LoadResp { data, .. }
            | TxnRepr::RdmaReadResp { data, .. }
            | TxnRepr::Unknown { data, .. } => data.len(),
            TxnRepr::Atomic { width, op, .. } => match op {
                AtomicOp::CompareSwap { .. } => 2 * width.bytes(),
                _ => width.bytes(),
            },
            TxnRepr::AtomicResp { old, .. } => old.map_or(0, |v| v.width().bytes()),
            _ => 0,
        }
    }

    /// Bytes this transaction occupies in a payload: `4*hlen + roundup4(dlen)`.
    pub fn buffer_len(&self) -> usize {
        self.header_len().saturating_add(round4(self.data_len()))
    }

    /// Checks that the representation can be encoded (ranges of wire.md §6).
    fn validate(&self) -> Result<(), EmitError> {
        let bad = |f| Err(EmitError::Invalid(f));
        let dlen = self.data_len();
        if dlen > usize::from(u16::MAX) {
            return bad(Field::Dlen);
        }
        match self {
            TxnRepr::Load { len, .. } if !(1..=256).contains(len) => bad(Field::LoadLength),
            TxnRepr::Store { data, .. } if !(1..=MAX_LOAD_STORE_LEN).contains(&data.len()) => {
                bad(Field::Dlen)
            }
            TxnRepr::Atomic { width, op, .. } => {
                let ok = match op {
                    AtomicOp::FetchAdd { addend: v } | AtomicOp::Swap { value: v } => {
                        width.fits(*v)
                    }
                    AtomicOp::CompareSwap { compare, value } => {
                        width.fits(*compare) && width.fits(*value)
                    }
                };
                if ok { Ok(()) } else { bad(Field::Dlen) }
            }
            TxnRepr::RdmaWrite {
                offset,
                total,
                data,
                ..
            } => {
                if data.is_empty() || *total == 0 {
                    return bad(Field::RdmaTotal);
                }
                if u64::from(*offset) + data.len() as u64 > u64::from(*total) {
                    return bad(Field::RdmaOffset);
                }
                Ok(())
            }
            TxnRepr::RdmaRead { total: 0, .. } => bad(Field::RdmaTotal),
            TxnRepr::LoadResp { status, data, .. } => {
                let ok = if status.is_ok() {
                    (1..=MAX_LOAD_STORE_LEN).contains(&data.len())
                } else {
                    data.is_empty()
                };
                if ok { Ok(()) } else { bad(Field::Dlen) }
            }
            TxnRepr::AtomicResp { status, old, .. } if status.is_ok() != old.is_some() => {
                bad(Field::Dlen)
            }
            TxnRepr::RdmaReadResp {
                status,
                offset,
                total,
                data,
                ..
            } => {
                if status.is_ok() {
                    if *total == 0 {
                        return bad(Field::RdmaTotal);
                    }
                    if data.is_empty() || u64::from(*offset) + data.len() as u64 > u64::from(*total)
                    {
                        return bad(Field::RdmaOffset);
                    }
                } else if !data.is_empty() {
                    return bad(Field::Dlen);
                }
                Ok(())
            }
            TxnRepr::Unknown { opcode, header, .. } => {
                if Opcode::from_u8(*opcode).hlen().is_some() {
                    return bad(Field::Opcode);
                }
                if header.len() % 4 != 0 || PREFIX_LEN + header.len() > 255 * 4 {
                    return bad(Field::Hlen);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Writes the transaction into the start of `buf` and returns its length,
    /// [`TxnRepr::buffer_len`].
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        self.emit_with(buf, true)
    }

    /// As [`TxnRepr::emit`], except the data bytes a transaction carries as given (STORE,
    /// RDMA_WRITE, LOAD_RESP, RDMA_READ_RESP): those bytes, at [`TxnRepr::data_range`], are left
    /// as they are, for a caller that writes them there itself (an RDMA segment read from memory
    /// straight into its frame), and the data of `self` gives only their length. Everything
    /// else, atomic operands and the padding included, is written as `emit` writes it.
    pub fn emit_data_in_place(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        self.emit_with(buf, false)
    }

    /// The place in a buffer, from the transaction's first byte, of its data bytes.
    pub fn data_range(&self) -> core::ops::Range<usize> {
        let h = self.header_len();
        h..h + self.data_len()
    }

    fn emit_with(&self, buf: &mut [u8], copy_data: bool) -> Result<usize, EmitError> {
        self.validate()?;
        let len = self.buffer_len();
        let available = buf.len();
        let out = buf.get_mut(..len).ok_or(EmitError::BufferTooSmall {
            needed: len,
            available,
        })?;
        let hdr_len = self.header_len();
        let (header, data_out) = out.split_at_mut(hdr_len);
        let (prefix, ext) =
            TxnPrefix::mut_from_prefix(header).map_err(|_| EmitError::Invalid(Field::TxnPrefix))?;
        let dlen = self.data_len();
        let flags_status = match self {
            TxnRepr::Load { target, .. }
            | TxnRepr::Store { target, .. }
            | TxnRepr::Atomic { target, .. }
            | TxnRepr::RdmaWrite { target, .. }
            | TxnRepr::RdmaRead { target, .. } => target.space.flags(),
            TxnRepr::Fence { .. } => 0,
            TxnRepr::LoadResp { status, .. }
            | TxnRepr::StoreResp { status, .. }
            | TxnRepr::AtomicResp { status, .. }
            | TxnRepr::FenceResp { status, .. }
            | TxnRepr::RdmaCompletion { status, .. }
            | TxnRepr::RdmaReadResp { status, .. } => status.to_u8(),
            TxnRepr::Unknown { flags_status, .. } => *flags_status,
        };
        *prefix = TxnPrefix {
            opcode: self.opcode().to_u8(),
            flags_status,
            tag: U16::new(self.tag()),
            // validate() bounds the header to 255 words and the data to u16.
            hlen: u8::try_from(hdr_len / 4).map_err(|_| EmitError::Invalid(Field::Hlen))?,
            reserved: 0,
            dlen: U16::new(u16::try_from(dlen).map_err(|_| EmitError::Invalid(Field::Dlen))?),
        };
        let (data, pad) = data_out.split_at_mut(dlen);
        //= docs/spec/wire.md#61-common-prefix
        //# WIRE-6.1-1 A transmitter MUST set `hlen` to the value in the table for the opcode and
        //# `dlen` to the number of data bytes, and MUST pad the data with zero bytes to a multiple
        //# of 4.
        pad.fill(0);
        let ext_err = EmitError::Invalid(Field::TxnPrefix);
        match self {
            TxnRepr::Load { target, len, .. } => {
                let (e, _) = LoadExt::mut_from_prefix(ext).map_err(|_| ext_err)?;
                *e = LoadExt {
                    key: U32::new(target.key),
                    addr: U64::new(target.addr),
                    len: U16::new(*len),
                    reserved: [0; 2],
                };
            }
            TxnRepr::Store {
                target, data: src, ..
            } => {
                write_mem_ext(ext, target)?;
                if copy_data {
                    data.copy_from_slice(src);
                }
            }
            TxnRepr::Atomic {
                target, width, op, ..
            } => {
                write_mem_ext(ext, target)?;
                //= docs/spec/wire.md#11-byte-and-bit-order
                //# WIRE-1.1-3 Atomic operands and atomic results MUST be encoded as little-endian
                //# unsigned integers of the operand size
                let w = width.bytes();
                match op {
                    AtomicOp::FetchAdd { addend: v } | AtomicOp::Swap { value: v } => {
                        put_le(data, *v, w);
                    }
                    AtomicOp::CompareSwap { compare, value } => {
                        let (a, b) = data.split_at_mut(w);
                        put_le(a, *compare, w);
                        put_le(b, *value, w);
                    }
                }
            }
            TxnRepr::Fence { .. } | TxnRepr::StoreResp { .. } | TxnRepr::FenceResp { .. } => {}
            TxnRepr::RdmaWrite {
                target,
                offset,
                total,
                data: src,
                ..
            } => {
                let (e, _) = RdmaWriteExt::mut_from_prefix(ext).map_err(|_| ext_err)?;
                *e = RdmaWriteExt {
                    key: U32::new(target.key),
                    addr: U64::new(target.addr),
                    offset: U32::new(*offset),
                    total: U32::new(*total),
                };
                if copy_data {
                    data.copy_from_slice(src);
                }
            }
            TxnRepr::RdmaRead { target, total, .. } => {
                let (e, _) = RdmaReadExt::mut_from_prefix(ext).map_err(|_| ext_err)?;
                *e = RdmaReadExt {
                    key: U32::new(target.key),
                    addr: U64::new(target.addr),
                    total: U32::new(*total),
                };
            }
            TxnRepr::LoadResp { data: src, .. } => {
                if copy_data {
                    data.copy_from_slice(src);
                }
            }
            TxnRepr::AtomicResp { old, .. } => {
                if let Some(v) = old {
                    put_le(data, v.get(), v.width().bytes());
                }
            }
            TxnRepr::RdmaCompletion { total, .. } => {
                let (e, _) = CompletionExt::mut_from_prefix(ext).map_err(|_| ext_err)?;
                *e = CompletionExt {
                    total: U32::new(*total),
                    reserved: [0; 4],
                };
            }
            TxnRepr::RdmaReadResp {
                offset,
                total,
                data: src,
                ..
            } => {
                let (e, _) = ReadRespExt::mut_from_prefix(ext).map_err(|_| ext_err)?;
                *e = ReadRespExt {
                    offset: U32::new(*offset),
                    total: U32::new(*total),
                };
                if copy_data {
                    data.copy_from_slice(src);
                }
            }
            TxnRepr::Unknown {
                header: h,
                data: src,
                ..
            } => {
                ext.copy_from_slice(h);
                if copy_data {
                    data.copy_from_slice(src);
                }
            }
        }
        Ok(len)
    }

    /// Parses one transaction whose structure has been walked: `hdr` is its `4*hlen` header bytes
    /// (prefix included) and `data` its `dlen` data bytes. `offset` is where it starts, for errors.
    pub(crate) fn parse(hdr: &'a [u8], data: &'a [u8], offset: usize) -> Result<Self, Error> {
        let (prefix, ext) = TxnPrefix::ref_from_prefix(hdr).map_err(|_| {
            Error::new(
                ErrorKind::Truncated,
                Field::TxnPrefix,
                offset,
                "WIRE-6.1-3",
                Action::DiscardRest,
            )
        })?;
        let opcode = prefix.opcode();
        let tag = prefix.tag();
        let fs = prefix.flags_status();
        let is_request = opcode.is_request();
        // The action for a defined transaction whose fields are wrong.
        let reject = |field: Field, at: usize, spec: &'static str, status: Status| {
            let action = if is_request {
                Action::Respond {
                    opcode: opcode.to_u8() | 0x80,
                    tag,
                    status,
                }
            } else {
                Action::DiscardTxn
            };
            Error::new(
                ErrorKind::OutOfRange,
                field,
                offset.saturating_add(at),
                spec,
                action,
            )
        };
        //= docs/spec/wire.md#61-common-prefix
        //# WIRE-6.1-9 (bad response) A response with a defined opcode whose `hlen` differs from
        //# the table, or whose fields violate the rules of its section, MUST be discarded and
        //# counted in `bad_responses`; the receiver goes on with the next transaction.
        let (malformed_spec, malformed) = if is_request {
            ("WIRE-6.1-6", Status::Malformed)
        } else {
            ("WIRE-6.1-9", Status::Malformed)
        };
        let Some(expected_hlen) = opcode.hlen() else {
            //= docs/spec/wire.md#61-common-prefix
            //# WIRE-6.1-5 (unknown request) A request with an opcode this document does not define,
            //# whose prefix is structurally valid, MUST NOT be executed
            return Ok(TxnRepr::Unknown {
                opcode: opcode.to_u8(),
                flags_status: fs,
                tag,
                header: ext,
                data,
            });
        };
        if prefix.hlen() != expected_hlen {
            return Err(reject(Field::Hlen, 4, malformed_spec, malformed));
        }
        let dlen = data.len();
        let space = Space::from_flags(fs);
        let status = Status::from_u8(fs);
        let mem = |ext: &[u8]| {
            MemExt::ref_from_prefix(ext)
                .map(|(e, _)| MemTarget {
                    space,
                    key: e.key.get(),
                    addr: e.addr.get(),
                })
                .map_err(|_| reject(Field::TxnPrefix, 8, malformed_spec, malformed))
        };
        let ext_err = reject(Field::TxnPrefix, 8, malformed_spec, malformed);
        //= docs/spec/wire.md#12-reserved-fields-unknown-codes-and-precedence
        //# WIRE-1.2-5 When one defect of a frame or transaction breaks both a rule of the section
        //# that defines the field and a general rule, a receiver that reports requirement ids MUST
        //# report the id of the specific rule; when several fields are wrong it MUST report the
        //# first in the order of checks of §5 (network header) and §6.1 (transactions). The action
        //# is the same whichever id is reported. For example an ATOMIC_FADD with dlen 5 is reported
        //# as WIRE-6.5-1, not WIRE-6.1-6; a FENCE with data as WIRE-6.1-10; a STORE_RESP with
        //# status MALFORMED and data as WIRE-6.1-10, not WIRE-6.9-1.
        // Order: structure (the walk), opcode, hlen, dlen (the opcode's fixed 0 first, then the
        // status rule, then the section's ranges), then the other fields in offset order.
        //= docs/spec/wire.md#61-common-prefix
        //# WIRE-6.1-10 A request or response whose opcode fixes `dlen` at 0 (LOAD, FENCE,
        //# RDMA_READ, STORE_RESP, FENCE_RESP, RDMA_COMPLETION) and whose `dlen` is not 0 is
        //# malformed: a request MUST be answered MALFORMED (WIRE-6.1-6), a response MUST be
        //# discarded as a bad response (WIRE-6.1-9).
        if opcode.dlen_fixed_zero() && dlen != 0 {
            return Err(reject(Field::Dlen, 6, "WIRE-6.1-10", malformed));
        }
        //= docs/spec/wire.md#69-responses
        //# WIRE-6.9-1 A response whose status is not OK MUST carry no data (`dlen` 0).
        if !is_request && !status.is_ok() && dlen != 0 {
            return Err(reject(Field::Dlen, 6, "WIRE-6.9-1", malformed));
        }
        let need_dlen = |ok: bool| {
            if ok {
                Ok(())
            } else {
                Err(reject(Field::Dlen, 6, malformed_spec, malformed))
            }
        };
        Ok(match opcode {
            Opcode::Load => {
                need_dlen(dlen == 0)?;
                let (e, _) = LoadExt::ref_from_prefix(ext).map_err(|_| ext_err)?;
                let len = e.len.get();
                if !(1..=256).contains(&len) {
                    return Err(reject(Field::LoadLength, 20, malformed_spec, malformed));
                }
                TxnRepr::Load {
                    tag,
                    target: MemTarget {
                        space,
                        key: e.key.get(),
                        addr: e.addr.get(),
                    },
                    len,
                }
            }
            Opcode::Store => {
                need_dlen((1..=MAX_LOAD_STORE_LEN).contains(&dlen))?;
                TxnRepr::Store {
                    tag,
                    target: mem(ext)?,
                    data,
                }
            }
            Opcode::AtomicFetchAdd | Opcode::AtomicSwap | Opcode::AtomicCompareSwap => {
                let cas = opcode == Opcode::AtomicCompareSwap;
                let operand = if cas { dlen / 2 } else { dlen };
                //= docs/spec/wire.md#65-atomics-atomic_fadd-0x03-atomic_swap-0x04-atomic_cas-0x05-hlen-5
                //# WIRE-6.5-1 An atomic with any other `dlen` is malformed (WIRE-6.1-6).
                let width = match Width::from_bytes(operand) {
                    Some(w) if !cas || dlen.is_multiple_of(2) => w,
                    _ => return Err(reject(Field::Dlen, 6, "WIRE-6.5-1", malformed)),
                };
                //= docs/spec/wire.md#65-atomics-atomic_fadd-0x03-atomic_swap-0x04-atomic_cas-0x05-hlen-5
                //# WIRE-6.5-3 An atomic whose address is not a multiple of its operand size is well
                //# formed on the wire: a receiver MUST NOT discard it or answer it MALFORMED for its
                //# alignment; only the target decides its status (WIRE-6.5-2).
                let target = mem(ext)?;
                let w = width.bytes();
                let first = get_le(data, 0, w);
                let op = match opcode {
                    Opcode::AtomicFetchAdd => AtomicOp::FetchAdd { addend: first },
                    Opcode::AtomicSwap => AtomicOp::Swap { value: first },
                    _ => AtomicOp::CompareSwap {
                        compare: first,
                        value: get_le(data, w, w),
                    },
                };
                TxnRepr::Atomic {
                    tag,
                    target,
                    width,
                    op,
                }
            }
            Opcode::Fence => {
                need_dlen(dlen == 0)?;
                TxnRepr::Fence { tag }
            }
            Opcode::RdmaWrite => {
                need_dlen(dlen >= 1)?;
                let (e, _) = RdmaWriteExt::ref_from_prefix(ext).map_err(|_| ext_err)?;
                let (offset, total) = (e.offset.get(), e.total.get());
                if total == 0 {
                    return Err(reject(Field::RdmaTotal, 24, malformed_spec, malformed));
                }
                //= docs/spec/wire.md#67-rdma_write-0x10-hlen-7-one-segment-of-a-remote-write
                //# WIRE-6.7-1 A segment MUST satisfy `offset + dlen <= total length`; one that does
                //# not is malformed (WIRE-6.1-6).
                if u64::from(offset) + dlen as u64 > u64::from(total) {
                    return Err(reject(Field::RdmaOffset, 20, "WIRE-6.7-1", malformed));
                }
                TxnRepr::RdmaWrite {
                    tag,
                    target: MemTarget {
                        space,
                        key: e.key.get(),
                        addr: e.addr.get(),
                    },
                    offset,
                    total,
                    data,
                }
            }
            Opcode::RdmaRead => {
                need_dlen(dlen == 0)?;
                let (e, _) = RdmaReadExt::ref_from_prefix(ext).map_err(|_| ext_err)?;
                let total = e.total.get();
                if total == 0 {
                    return Err(reject(Field::RdmaTotal, 20, malformed_spec, malformed));
                }
                TxnRepr::RdmaRead {
                    tag,
                    target: MemTarget {
                        space,
                        key: e.key.get(),
                        addr: e.addr.get(),
                    },
                    total,
                }
            }
            Opcode::LoadResp => {
                //= docs/spec/wire.md#69-responses
                //# WIRE-6.9-4 A LOAD_RESP with status OK MUST carry 1..256 data bytes; an atomic
                //# response with status OK MUST carry 4 or 8.
                if status.is_ok() && !(1..=MAX_LOAD_STORE_LEN).contains(&dlen) {
                    return Err(reject(Field::Dlen, 6, "WIRE-6.9-4", malformed));
                }
                TxnRepr::LoadResp { tag, status, data }
            }
            Opcode::StoreResp | Opcode::FenceResp => {
                need_dlen(dlen == 0)?;
                if opcode == Opcode::StoreResp {
                    TxnRepr::StoreResp { tag, status }
                } else {
                    TxnRepr::FenceResp { tag, status }
                }
            }
            Opcode::AtomicFetchAddResp | Opcode::AtomicSwapResp | Opcode::AtomicCompareSwapResp => {
                let kind = match opcode {
                    Opcode::AtomicFetchAddResp => AtomicKind::FetchAdd,
                    Opcode::AtomicSwapResp => AtomicKind::Swap,
                    _ => AtomicKind::CompareSwap,
                };
                let old = if status.is_ok() {
                    match dlen {
                        4 => Some(AtomicValue::U32(get_le(data, 0, 4) as u32)),
                        8 => Some(AtomicValue::U64(get_le(data, 0, 8))),
                        _ => return Err(reject(Field::Dlen, 6, "WIRE-6.9-4", malformed)),
                    }
                } else {
                    None
                };
                TxnRepr::AtomicResp {
                    tag,
                    kind,
                    status,
                    old,
                }
            }
            Opcode::RdmaCompletion => {
                need_dlen(dlen == 0)?;
                let (e, _) = CompletionExt::ref_from_prefix(ext).map_err(|_| ext_err)?;
                TxnRepr::RdmaCompletion {
                    tag,
                    status,
                    total: e.total.get(),
                }
            }
            Opcode::RdmaReadResp => {
                let (e, _) = ReadRespExt::ref_from_prefix(ext).map_err(|_| ext_err)?;
                let (offset, total) = (e.offset.get(), e.total.get());
                //= docs/spec/wire.md#69-responses
                //# WIRE-6.9-3 An RDMA_READ_RESP with status OK MUST satisfy `1 <= total length`,
                //# `1 <= dlen` and `offset + dlen <= total length`. One with another status MUST
                //# have `dlen` 0 and ends the read; its offset and total length are informative
                //# and not checked.
                // dlen first, then the total alone, then the relation (WIRE-1.2-5).
                if status.is_ok() && dlen == 0 {
                    return Err(reject(Field::Dlen, 6, "WIRE-6.9-3", malformed));
                }
                if status.is_ok() && total == 0 {
                    return Err(reject(Field::RdmaTotal, 12, "WIRE-6.9-3", malformed));
                }
                if status.is_ok() && u64::from(offset) + dlen as u64 > u64::from(total) {
                    return Err(reject(Field::RdmaOffset, 8, "WIRE-6.9-3", malformed));
                }
                TxnRepr::RdmaReadResp {
                    tag,
                    status,
                    offset,
                    total,
                    data,
                }
            }
            Opcode::Unknown(_) => TxnRepr::Unknown {
                opcode: opcode.to_u8(),
                flags_status: fs,
                tag,
                header: ext,
                data,
            },
        })
    }

    /// Whether this is a response with an opcode wire.md does not define (WIRE-6.1-7).
    pub const fn is_unknown_response(&self) -> bool {
        matches!(self, TxnRepr::Unknown { opcode, .. } if *opcode >= 0x80)
    }

    //= docs/spec/wire.md#61-common-prefix
    //# WIRE-6.1-7 (unknown response) A response with an opcode this document does not define
    //# MUST be discarded and counted in `unknown_responses`, apart from bad responses
    //# (WIRE-6.1-9); the receiver goes on with the next transaction.
    /// The counter a receiver increments for a transaction that parsed but must be discarded: an
    /// unknown response opcode ([`Discard::UnknownResponse`]). `None` for every other
    /// transaction (an unknown *request* is answered UNSUPPORTED, WIRE-6.1-5).
    pub const fn discard(&self) -> Option<Discard> {
        if self.is_unknown_response() {
            Some(Discard::UnknownResponse)
        } else {
            None
        }
    }
}

fn write_mem_ext(ext: &mut [u8], target: &MemTarget) -> Result<(), EmitError> {
    let (e, _) = MemExt::mut_from_prefix(ext).map_err(|_| EmitError::Invalid(Field::TxnPrefix))?;
    *e = MemExt {
        key: U32::new(target.key),
        addr: U64::new(target.addr),
    };
    Ok(())
}

/// Writes the low `width` bytes of `v` little-endian into the start of `out`.
fn put_le(out: &mut [u8], v: u64, width: usize) {
    for (dst, src) in out.iter_mut().zip(v.to_le_bytes().iter().take(width)) {
        *dst = *src;
    }
}

/// Reads `width` bytes little-endian starting at `at`; missing bytes read as zero.
fn get_le(data: &[u8], at: usize, width: usize) -> u64 {
    let mut b = [0u8; 8];
    for (dst, src) in b.iter_mut().zip(data.iter().skip(at).take(width.min(8))) {
        *dst = *src;
    }
    u64::from_le_bytes(b)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    // Transactions written out byte by byte from the diagrams of wire.md §6. Every request
    // addresses key 0x11223344, address 0x0000_0001_0000_1000.

    #[rustfmt::skip]
    const LOAD: [u8; 24] = [
        0x01, 0x01, 0x00, 0x2a, // LOAD, SHARED, tag 42
        0x06, 0x00, 0x00, 0x00, // hlen 6, reserved, dlen 0
        0x11, 0x22, 0x33, 0x44, // key
        0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10, 0x00, // address
        0x00, 0x40, 0x00, 0x00, // length 64, reserved
    ];
    #[rustfmt::skip]
    const STORE: [u8; 28] = [
        0x02, 0x00, 0x12, 0x34, // STORE, global, tag 0x1234
        0x05, 0x00, 0x00, 0x05, // hlen 5, dlen 5
        0x11, 0x22, 0x33, 0x44,
        0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10, 0x00,
        0xde, 0xad, 0xbe, 0xef, 0x01, 0x00, 0x00, 0x00, // data in memory order, zero padding
    ];
    #[rustfmt::skip]
    const FADD4: [u8; 24] = [
        0x03, 0x00, 0x00, 0x01, 0x05, 0x00, 0x00, 0x04,
        0x11, 0x22, 0x33, 0x44, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10, 0x00,
        0x04, 0x03, 0x02, 0x01, // addend 0x01020304, little-endian
    ];
    #[rustfmt::skip]
    const FADD8: [u8; 28] = [
        0x03, 0x01, 0x00, 0x02, 0x05, 0x00, 0x00, 0x08,
        0x11, 0x22, 0x33, 0x44, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10, 0x00,
        0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, // addend 0x0102030405060708
    ];
    #[rustfmt::skip]
    const SWAP4: [u8; 24] = [
        0x04, 0x00, 0x00, 0x03, 0x05, 0x00, 0x00, 0x04,
        0x11, 0x22, 0x33, 0x44, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10, 0x00,
        0xdd, 0xcc, 0xbb, 0xaa, // value 0xAABBCCDD
    ];
    #[rustfmt::skip]
    const SWAP8: [u8; 28] = [
        0x04, 0x00, 0x00, 0x04, 0x05, 0x00, 0x00, 0x08,
        0x11, 0x22, 0x33, 0x44, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10, 0x00,
        0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, // value 0x1122334455667788
    ];
    #[rustfmt::skip]
    const CAS4: [u8; 28] = [
        0x05, 0x00, 0x00, 0x05, 0x05, 0x00, 0x00, 0x08, // dlen 8: two 4-byte operands
        0x11, 0x22, 0x33, 0x44, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10, 0x00,
        0x01, 0x00, 0x00, 0x00, // compare 1
        0x02, 0x00, 0x00, 0x00, // new value 2
    ];
    #[rustfmt::skip]
    const CAS8: [u8; 36] = [
        0x05, 0x01, 0x00, 0x06, 0x05, 0x00, 0x00, 0x10, // dlen 16: two 8-byte operands
        0x11, 0x22, 0x33, 0x44, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10, 0x00,
        0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01, // compare 0x0123456789ABCDEF
        0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe, // new value 0xFEDCBA9876543210
    ];
    #[rustfmt::skip]
    const FENCE: [u8; 8] = [0x06, 0x00, 0x00, 0x07, 0x02, 0x00, 0x00, 0x00];
    #[rustfmt::skip]
    const RDMA_WRITE: [u8; 32] = [
        0x10, 0x01, 0x00, 0x08, 0x07, 0x00, 0x00, 0x03, // RDMA_WRITE, SHARED, tag 8, hlen 7, dlen 3
        0x11, 0x22, 0x33, 0x44, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10, 0x00,
        0x00, 0x00, 0x01, 0x00, // offset 256
        0x00, 0x00, 0x10, 0x00, // total length 4096
        0xaa, 0xbb, 0xcc, 0x00, // segment, padding
    ];
    #[rustfmt::skip]
    const RDMA_READ: [u8; 24] = [
        0x11, 0x00, 0x00, 0x09, 0x06, 0x00, 0x00, 0x00,
        0x11, 0x22, 0x33, 0x44, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10, 0x00,
        0x00, 0x01, 0x00, 0x00, // total length 65536
    ];
    #[rustfmt::skip]
    const LOAD_RESP: [u8; 12] = [
        0x81, 0x00, 0x00, 0x2a, 0x02, 0x00, 0x00, 0x03, // OK, tag 42, hlen 2, dlen 3
        0x01, 0x02, 0x03, 0x00,
    ];
    #[rustfmt::skip]
    const LOAD_RESP_ERR: [u8; 8] = [0x81, 0x02, 0x00, 0x2a, 0x02, 0x00, 0x00, 0x00];
    #[rustfmt::skip]
    const STORE_RESP: [u8; 8] = [0x82, 0x00, 0x12, 0x34, 0x02, 0x00, 0x00, 0x00];
    #[rustfmt::skip]
    const STORE_RESP_UNKNOWN_STATUS: [u8; 8] = [0x82, 0x42, 0x12, 0x34, 0x02, 0x00, 0x00, 0x00];
    #[rustfmt::skip]
    const FADD_RESP: [u8; 12] = [
        0x83, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x04,
        0x04, 0x03, 0x02, 0x01, // old value 0x01020304
    ];
    #[rustfmt::skip]
    const SWAP_RESP: [u8; 16] = [
        0x84, 0x00, 0x00, 0x04, 0x02, 0x00, 0x00, 0x08,
        0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
    ];
    #[rustfmt::skip]
    const CAS_RESP_MISALIGNED: [u8; 8] = [0x85, 0x06, 0x00, 0x05, 0x02, 0x00, 0x00, 0x00];
    #[rustfmt::skip]
    const FENCE_RESP: [u8; 8] = [0x86, 0x00, 0x00, 0x07, 0x02, 0x00, 0x00, 0x00];
    #[rustfmt::skip]
    const RDMA_COMPLETION: [u8; 16] = [
        0x90, 0x00, 0x00, 0x08, 0x04, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x10, 0x00, // total length 4096
        0x00, 0x00, 0x00, 0x00, // reserved
    ];
    #[rustfmt::skip]
    const RDMA_READ_RESP: [u8; 24] = [
        0x91, 0x00, 0x00, 0x09, 0x04, 0x00, 0x00, 0x05, // OK, tag 9, hlen 4, dlen 5
        0x00, 0x00, 0x00, 0x10, // offset 16
        0x00, 0x00, 0x00, 0x40, // total 64
        0x01, 0x02, 0x03, 0x04, 0x05, 0x00, 0x00, 0x00,
    ];
    #[rustfmt::skip]
    const RDMA_READ_RESP_ERR: [u8; 16] = [
        0x91, 0x01, 0x00, 0x09, 0x04, 0x00, 0x00, 0x00, // ACCESS_VIOLATION, dlen 0
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40,
    ];
    #[rustfmt::skip]
    const UNKNOWN_REQUEST: [u8; 16] = [
        0x20, 0x05, 0x00, 0x0b, 0x03, 0x00, 0x00, 0x02, // opcode 0x20, flags 5, hlen 3, dlen 2
        0xde, 0xad, 0xbe, 0xef, // header word after the prefix
        0x11, 0x22, 0x00, 0x00,
    ];
    #[rustfmt::skip]
    const UNKNOWN_RESPONSE: [u8; 8] = [0xa0, 0x03, 0x00, 0x0c, 0x02, 0x00, 0x00, 0x00];

    pub(crate) const TARGET: MemTarget = MemTarget {
        space: Space::Global,
        key: 0x1122_3344,
        addr: 0x0000_0001_0000_1000,
    };
    pub(crate) const SHARED: MemTarget = MemTarget {
        space: Space::Shared,
        ..TARGET
    };

    /// Every static transaction with its representation.
    pub(crate) fn vectors() -> Vec<(&'static str, &'static [u8], TxnRepr<'static>)> {
        vec![
            (
                "LOAD",
                &LOAD,
                TxnRepr::Load {
                    tag: 42,
                    target: SHARED,
                    len: 64,
                },
            ),
            (
                "STORE",
                &STORE,
                TxnRepr::Store {
                    tag: 0x1234,
                    target: TARGET,
                    data: &STORE[20..25],
                },
            ),
            (
                "ATOMIC_FADD 4",
                &FADD4,
                TxnRepr::Atomic {
                    tag: 1,
                    target: TARGET,
                    width: Width::W4,
                    op: AtomicOp::FetchAdd {
                        addend: 0x0102_0304,
                    },
                },
            ),
            (
                "ATOMIC_FADD 8",
                &FADD8,
                TxnRepr::Atomic {
                    tag: 2,
                    target: SHARED,
                    width: Width::W8,
                    op: AtomicOp::FetchAdd {
                        addend: 0x0102_0304_0506_0708,
                    },
                },
            ),
            (
                "ATOMIC_SWAP 4",
                &SWAP4,
                TxnRepr::Atomic {
                    tag: 3,
                    target: TARGET,
                    width: Width::W4,
                    op: AtomicOp::Swap { value: 0xAABB_CCDD },
                },
            ),
            (
                "ATOMIC_SWAP 8",
                &SWAP8,
                TxnRepr::Atomic {
                    tag: 4,
                    target: TARGET,
                    width: Width::W8,
                    op: AtomicOp::Swap {
                        value: 0x1122_3344_5566_7788,
                    },
                },
            ),
            (
                "ATOMIC_CAS 4",
                &CAS4,
                TxnRepr::Atomic {
                    tag: 5,
                    target: TARGET,
                    width: Width::W4,
                    op: AtomicOp::CompareSwap {
                        compare: 1,
                        value: 2,
                    },
                },
            ),
            (
                "ATOMIC_CAS 8",
                &CAS8,
                TxnRepr::Atomic {
                    tag: 6,
                    target: SHARED,
                    width: Width::W8,
                    op: AtomicOp::CompareSwap {
                        compare: 0x0123_4567_89AB_CDEF,
                        value: 0xFEDC_BA98_7654_3210,
                    },
                },
            ),
            ("FENCE", &FENCE, TxnRepr::Fence { tag: 7 }),
            (
                "RDMA_WRITE",
                &RDMA_WRITE,
                TxnRepr::RdmaWrite {
                    tag: 8,
                    target: SHARED,
                    offset: 256,
                    total: 4096,
                    data: &RDMA_WRITE[28..31],
                },
            ),
            (
                "RDMA_READ",
                &RDMA_READ,
                TxnRepr::RdmaRead {
                    tag: 9,
                    target: TARGET,
                    total: 65536,
                },
            ),
            (
                "LOAD_RESP",
                &LOAD_RESP,
                TxnRepr::LoadResp {
                    tag: 42,
                    status: Status::Ok,
                    data: &LOAD_RESP[8..11],
                },
            ),
            (
                "LOAD_RESP error",
                &LOAD_RESP_ERR,
                TxnRepr::LoadResp {
                    tag: 42,
                    status: Status::OutOfRange,
                    data: &[],
                },
            ),
            (
                "STORE_RESP",
                &STORE_RESP,
                TxnRepr::StoreResp {
                    tag: 0x1234,
                    status: Status::Ok,
                },
            ),
            (
                "STORE_RESP unknown status",
                &STORE_RESP_UNKNOWN_STATUS,
                TxnRepr::StoreResp {
                    tag: 0x1234,
                    status: Status::Unknown(0x42),
                },
            ),
            (
                "ATOMIC_FADD_RESP",
                &FADD_RESP,
                TxnRepr::AtomicResp {
                    tag: 1,
                    kind: AtomicKind::FetchAdd,
                    status: Status::Ok,
                    old: Some(AtomicValue::U32(0x0102_0304)),
                },
            ),
            (
                "ATOMIC_SWAP_RESP",
                &SWAP_RESP,
                TxnRepr::AtomicResp {
                    tag: 4,
                    kind: AtomicKind::Swap,
                    status: Status::Ok,
                    old: Some(AtomicValue::U64(0x1122_3344_5566_7788)),
                },
            ),
            (
                "ATOMIC_CAS_RESP",
                &CAS_RESP_MISALIGNED,
                TxnRepr::AtomicResp {
                    tag: 5,
                    kind: AtomicKind::CompareSwap,
                    status: Status::Misaligned,
                    old: None,
                },
            ),
            (
                "FENCE_RESP",
                &FENCE_RESP,
                TxnRepr::FenceResp {
                    tag: 7,
                    status: Status::Ok,
                },
            ),
            (
                "RDMA_COMPLETION",
                &RDMA_COMPLETION,
                TxnRepr::RdmaCompletion {
                    tag: 8,
                    status: Status::Ok,
                    total: 4096,
                },
            ),
            (
                "RDMA_READ_RESP",
                &RDMA_READ_RESP,
                TxnRepr::RdmaReadResp {
                    tag: 9,
                    status: Status::Ok,
                    offset: 16,
                    total: 64,
                    data: &RDMA_READ_RESP[16..21],
                },
            ),
            (
                "RDMA_READ_RESP error",
                &RDMA_READ_RESP_ERR,
                TxnRepr::RdmaReadResp {
                    tag: 9,
                    status: Status::AccessViolation,
                    offset: 0,
                    total: 64,
                    data: &[],
                },
            ),
            (
                "unknown request",
                &UNKNOWN_REQUEST,
                TxnRepr::Unknown {
                    opcode: 0x20,
                    flags_status: 5,
                    tag: 11,
                    header: &UNKNOWN_REQUEST[8..12],
                    data: &UNKNOWN_REQUEST[12..14],
                },
            ),
            (
                "unknown response",
                &UNKNOWN_RESPONSE,
                TxnRepr::Unknown {
                    opcode: 0xa0,
                    flags_status: 3,
                    tag: 12,
                    header: &[],
                    data: &[],
                },
            ),
        ]
    }

    /// Parses one whole transaction the way the payload walk hands it over.
    fn parse_one(bytes: &[u8], offset: usize) -> Result<TxnRepr<'_>, Error> {
        let hlen = usize::from(bytes[4]) * 4;
        let dlen = usize::from(u16::from_be_bytes([bytes[6], bytes[7]]));
        TxnRepr::parse(&bytes[..hlen], &bytes[hlen..hlen + dlen], offset)
    }

    fn edited(bytes: &[u8], edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut v = bytes.to_vec();
        edit(&mut v);
        v
    }

    /// Sets dlen and resizes the data to it (zero-filled, padded to a multiple of 4).
    fn with_dlen(bytes: &[u8], dlen: u16) -> Vec<u8> {
        let hlen = usize::from(bytes[4]) * 4;
        let mut v = bytes[..hlen].to_vec();
        v[6..8].copy_from_slice(&dlen.to_be_bytes());
        v.resize(hlen + round4(usize::from(dlen)), 0);
        v
    }

    fn check(
        r: Result<TxnRepr<'_>, Error>,
        field: Field,
        offset: usize,
        spec: &str,
        action: Action,
    ) {
        let e = r.unwrap_err();
        assert_eq!(
            (e.field, e.offset, e.spec, e.action),
            (field, offset, spec, action),
            "{e:?}"
        );
        assert!(e.action.continues());
        assert!(!e.action.nacks());
    }

    fn respond(opcode: u8, tag: u16, status: Status) -> Action {
        Action::Respond {
            opcode,
            tag,
            status,
        }
    }

    //= type=test
    //# WIRE-1.1-1 All multi-byte header fields MUST be transmitted in network byte order.
    //# WIRE-1.1-2 Data carried by transactions [...] MUST be transmitted in memory order.
    //# WIRE-1.1-3 Atomic operands and atomic results MUST be encoded as little-endian unsigned
    //# integers of the operand size.
    //# WIRE-1.2-1 A transmitter MUST set every reserved bit and byte to zero.
    //# WIRE-6.1-1 A transmitter MUST set `hlen` to the value in the table for the opcode and
    //# `dlen` to the number of data bytes, and MUST pad the data with zero bytes to a multiple of 4.
    #[test]
    fn construct_every_transaction() {
        for (name, bytes, repr) in vectors() {
            assert_eq!(repr.buffer_len(), bytes.len(), "{name}");
            let mut buf = vec![0xa5; bytes.len() + 4];
            assert_eq!(repr.emit(&mut buf), Ok(bytes.len()), "{name}");
            assert_eq!(&buf[..bytes.len()], bytes, "{name}");
            assert!(buf[bytes.len()..].iter().all(|&b| b == 0xa5), "{name}");
            // The header length is the table's value for every defined opcode.
            if let Some(hlen) = repr.opcode().hlen() {
                assert_eq!(bytes[4], hlen, "{name}");
            }
        }
    }

    //= type=test
    //# WIRE-1.2-3 A value of a defined field that this document does not assign a meaning to (an
    //# unknown code) MUST be handled exactly as the section defining that field says.
    //# WIRE-1.2-4 Implementations MUST preserve the raw value of unknown codes when they report or
    //# re-encode them.
    //# WIRE-6.9-2 A requester that receives an unknown status MUST complete the operation with an
    //# error that reports the raw status value.
    #[test]
    fn parse_every_transaction() {
        for (name, bytes, repr) in vectors() {
            assert_eq!(parse_one(bytes, 0), Ok(repr), "{name}");
            assert_eq!(
                repr.tag(),
                u16::from_be_bytes([bytes[2], bytes[3]]),
                "{name}"
            );
            assert_eq!(repr.opcode().to_u8(), bytes[0], "{name}");
            assert_eq!(repr.is_request(), bytes[0] < 0x80, "{name}");
        }
        let TxnRepr::StoreResp { status, .. } = parse_one(&STORE_RESP_UNKNOWN_STATUS, 0).unwrap()
        else {
            panic!("not a STORE_RESP")
        };
        assert_eq!((status.to_u8(), status.name()), (0x42, "UNKNOWN"));
    }

    #[test]
    fn emit_into_short_buffer() {
        for (name, bytes, repr) in vectors() {
            let mut buf = vec![0u8; bytes.len() - 1];
            assert_eq!(
                repr.emit(&mut buf),
                Err(EmitError::BufferTooSmall {
                    needed: bytes.len(),
                    available: bytes.len() - 1
                }),
                "{name}"
            );
        }
    }

    //= type=test
    //# WIRE-1.2-2 A receiver MUST ignore the value of every reserved bit and byte.
    //# WIRE-6.1-8 Data padding bytes are reserved (WIRE-1.2-1, WIRE-1.2-2).
    #[test]
    fn reserved_fields_are_ignored() {
        let reprs = vectors();
        for (name, bytes, repr) in &reprs {
            let mut v = bytes.to_vec();
            // The prefix's reserved byte.
            v[5] = 0xFF;
            // Reserved request flag bits 7..1 (the whole flags byte of FENCE).
            if repr.is_request() && !matches!(repr, TxnRepr::Unknown { .. }) {
                v[1] |= 0xFE;
                if matches!(repr, TxnRepr::Fence { .. }) {
                    v[1] = 0xFF;
                }
            }
            // Data padding.
            let hlen = usize::from(v[4]) * 4;
            let dlen = usize::from(u16::from_be_bytes([v[6], v[7]]));
            for b in &mut v[hlen + dlen..] {
                *b = 0x5A;
            }
            assert_eq!(parse_one(&v, 0), Ok(*repr), "{name}");
        }
        // LOAD bytes 22..23 and RDMA_COMPLETION bytes 12..15.
        let v = edited(&LOAD, |v| v[22..24].copy_from_slice(&[0xFF, 0xFF]));
        assert_eq!(parse_one(&v, 0), Ok(reprs[0].2));
        let v = edited(&RDMA_COMPLETION, |v| {
            v[12..16].copy_from_slice(&[1, 2, 3, 4])
        });
        assert_eq!(
            parse_one(&v, 0),
            Ok(TxnRepr::RdmaCompletion {
                tag: 8,
                status: Status::Ok,
                total: 4096
            })
        );
    }

    //= type=test
    //# WIRE-6.1-5 (unknown request) A request with an opcode this document does not define, whose
    //# prefix is structurally valid, MUST NOT be executed; the receiver MUST answer it with a
    //# response of opcode `opcode | 0x80`, status UNSUPPORTED, the request's tag, `hlen` 2 and
    //# `dlen` 0.
    //# WIRE-6.1-2 [...] a responder MUST copy the tag of a request [...] unchanged.
    #[test]
    fn unknown_request_is_answered_unsupported() {
        let t = parse_one(&UNKNOWN_REQUEST, 0).unwrap();
        assert!(t.is_request());
        assert_eq!(t.opcode(), Opcode::Unknown(0x20));
        // The answer a receiver builds from it.
        let answer = TxnRepr::Unknown {
            opcode: t.opcode().to_u8() | 0x80,
            flags_status: Status::Unsupported.to_u8(),
            tag: t.tag(),
            header: &[],
            data: &[],
        };
        let mut buf = [0xa5u8; 8];
        assert_eq!(answer.emit(&mut buf), Ok(8));
        assert_eq!(buf, [0xa0, 0x03, 0x00, 0x0b, 0x02, 0x00, 0x00, 0x00]);
        // Every undefined opcode parses as Unknown, with its raw value.
        for op in 0..=u8::MAX {
            if Opcode::from_u8(op).hlen().is_some() {
                continue;
            }
            let v = edited(&UNKNOWN_REQUEST, |v| v[0] = op);
            let t = parse_one(&v, 0).unwrap();
            assert_eq!(t.opcode().to_u8(), op);
            let mut out = [0u8; 16];
            assert_eq!(t.emit(&mut out), Ok(16));
            assert_eq!(out[..], v[..]);
        }
    }

    //= type=test
    //# WIRE-6.1-6 (malformed request) A request with a defined opcode whose `hlen` differs from
    //# the table, or whose fields violate the ranges of its section, MUST NOT be executed; the
    //# receiver MUST answer it with the matching response opcode, status MALFORMED, the request's
    //# tag, and no data.
    //# WIRE-6.1-10 A request or response whose opcode fixes `dlen` at 0 (LOAD, FENCE, RDMA_READ,
    //# STORE_RESP, FENCE_RESP, RDMA_COMPLETION) and whose `dlen` is not 0 is malformed.
    //# WIRE-1.2-5 When one defect of a frame or transaction breaks both a rule of the section that
    //# defines the field and a general rule, a receiver that reports requirement ids MUST report
    //# the id of the specific rule; when several fields are wrong it MUST report the first in the
    //# order of checks of §5 (network header) and §6.1 (transactions). The action is the same
    //# whichever id is reported. For example an ATOMIC_FADD with dlen 5 is reported as WIRE-6.5-1,
    //# not WIRE-6.1-6; a FENCE with data as WIRE-6.1-10; a STORE_RESP with status MALFORMED and
    //# data as WIRE-6.1-10, not WIRE-6.9-1.
    #[test]
    fn malformed_requests() {
        let m = Status::Malformed;
        let at = 100;
        // hlen differs from the table.
        for (bytes, hlen) in [
            (&LOAD[..], 5u8),
            (&LOAD[..], 7),
            (&STORE[..], 4),
            (&STORE[..], 6),
            (&FADD4[..], 4),
            (&FENCE[..], 3),
            (&RDMA_WRITE[..], 6),
            (&RDMA_READ[..], 5),
        ] {
            let mut v = bytes.to_vec();
            v[4] = hlen;
            v.resize(v.len() + 8, 0);
            let tag = u16::from_be_bytes([v[2], v[3]]);
            check(
                parse_one(&v, at),
                Field::Hlen,
                at + 4,
                "WIRE-6.1-6",
                respond(v[0] | 0x80, tag, m),
            );
        }
        // dlen outside the opcode's range.
        let cases: [(&[u8], u16, &str); 8] = [
            (&LOAD, 4, "WIRE-6.1-10"),
            (&STORE, 0, "WIRE-6.1-6"),
            (&STORE, 257, "WIRE-6.1-6"),
            (&FENCE, 1, "WIRE-6.1-10"),
            (&RDMA_WRITE, 0, "WIRE-6.1-6"),
            (&RDMA_READ, 8, "WIRE-6.1-10"),
            (&LOAD, 1, "WIRE-6.1-10"),
            (&FENCE, 4, "WIRE-6.1-10"),
        ];
        for (bytes, dlen, spec) in cases {
            let v = with_dlen(bytes, dlen);
            let tag = u16::from_be_bytes([v[2], v[3]]);
            check(
                parse_one(&v, at),
                Field::Dlen,
                at + 6,
                spec,
                respond(v[0] | 0x80, tag, m),
            );
            assert_eq!(parse_one(&v, at).unwrap_err().discard(), None);
        }
        // STORE at the edges of 1..=256.
        for dlen in [1, 256] {
            assert!(parse_one(&with_dlen(&STORE, dlen), 0).is_ok());
        }
        // LOAD length outside 1..=256.
        for len in [0u16, 257, 0xFFFF] {
            let v = edited(&LOAD, |v| v[20..22].copy_from_slice(&len.to_be_bytes()));
            check(
                parse_one(&v, at),
                Field::LoadLength,
                at + 20,
                "WIRE-6.1-6",
                respond(0x81, 42, m),
            );
        }
        for len in [1u16, 256] {
            let v = edited(&LOAD, |v| v[20..22].copy_from_slice(&len.to_be_bytes()));
            assert!(parse_one(&v, 0).is_ok());
        }
        // RDMA totals of zero.
        let v = edited(&RDMA_WRITE, |v| v[24..28].fill(0));
        check(
            parse_one(&v, at),
            Field::RdmaTotal,
            at + 24,
            "WIRE-6.1-6",
            respond(0x90, 8, m),
        );
        let v = edited(&RDMA_READ, |v| v[20..24].fill(0));
        check(
            parse_one(&v, at),
            Field::RdmaTotal,
            at + 20,
            "WIRE-6.1-6",
            respond(0x91, 9, m),
        );
    }

    //= type=test
    //# WIRE-6.5-1 An atomic with any other `dlen` is malformed (WIRE-6.1-6).
    #[test]
    fn atomic_operand_sizes() {
        for (bytes, good) in [
            (&FADD4[..], [4u16, 8]),
            (&SWAP8[..], [4, 8]),
            (&CAS4[..], [8, 16]),
        ] {
            for dlen in 0..=20u16 {
                let v = with_dlen(bytes, dlen);
                let r = parse_one(&v, 8);
                if good.contains(&dlen) {
                    assert!(r.is_ok(), "{:#x} dlen {dlen}", v[0]);
                } else {
                    let tag = u16::from_be_bytes([v[2], v[3]]);
                    check(
                        r,
                        Field::Dlen,
                        8 + 6,
                        "WIRE-6.5-1",
                        respond(v[0] | 0x80, tag, Status::Malformed),
                    );
                }
            }
        }
    }

    //= type=test
    //# WIRE-6.5-3 An atomic whose address is not a multiple of its operand size is well formed on
    //# the wire: a receiver MUST NOT discard it or answer it MALFORMED for its alignment; only
    //# the target decides its status (WIRE-6.5-2).
    #[test]
    fn atomic_alignment() {
        // (request, address low byte, aligned?)
        let cases: [(&[u8], u8, bool); 8] = [
            (&FADD4, 0x04, true),
            (&FADD4, 0x02, false),
            (&FADD8, 0x04, false),
            (&FADD8, 0x08, true),
            (&SWAP4, 0x01, false),
            (&CAS4, 0x04, true),
            (&CAS8, 0x04, false),
            (&CAS8, 0x18, true),
        ];
        for (bytes, low, aligned) in cases {
            let v = edited(bytes, |v| v[19] = low);
            let t = parse_one(&v, 40).unwrap();
            let TxnRepr::Atomic { target, width, .. } = t else {
                panic!("not an atomic")
            };
            assert_eq!(target.addr & 0xFF, u64::from(low));
            assert_eq!(target.addr % width.bytes() as u64 == 0, aligned);
            // It re-encodes to the same bytes, misaligned or not.
            let mut out = vec![0u8; v.len()];
            assert_eq!(t.emit(&mut out), Ok(v.len()));
            assert_eq!(out, v);
        }
    }

    //= type=test
    //# WIRE-6.7-1 A segment MUST satisfy `offset + dlen <= total length`; one that does not is
    //# malformed (WIRE-6.1-6).
    #[test]
    fn rdma_write_segment_bounds() {
        // offset 4093 + 3 = 4096: the last segment fits exactly.
        let v = edited(&RDMA_WRITE, |v| {
            v[20..24].copy_from_slice(&4093u32.to_be_bytes())
        });
        assert!(parse_one(&v, 0).is_ok());
        for offset in [4094u32, 0xFFFF_FFFF] {
            let v = edited(&RDMA_WRITE, |v| {
                v[20..24].copy_from_slice(&offset.to_be_bytes())
            });
            check(
                parse_one(&v, 0),
                Field::RdmaOffset,
                20,
                "WIRE-6.7-1",
                respond(0x90, 8, Status::Malformed),
            );
        }
        let seg = |offset| TxnRepr::RdmaWrite {
            tag: 8,
            target: SHARED,
            offset,
            total: 4096,
            data: &[1, 2, 3],
        };
        let mut buf = [0u8; 32];
        assert_eq!(
            seg(4094).emit(&mut buf),
            Err(EmitError::Invalid(Field::RdmaOffset))
        );
        assert_eq!(
            seg(u32::MAX).emit(&mut buf),
            Err(EmitError::Invalid(Field::RdmaOffset))
        );
    }

    //= type=test
    //# WIRE-6.7-2 All segments of one write MUST carry the same tag, key, address, total length
    //# and SHARED flag.
    #[test]
    fn rdma_write_segments_share_their_header() {
        let data = [7u8; 10];
        let mut emitted = Vec::new();
        for (i, chunk) in data.chunks(4).enumerate() {
            let seg = TxnRepr::RdmaWrite {
                tag: 0x0808,
                target: SHARED,
                offset: u32::try_from(i * 4).unwrap(),
                total: 10,
                data: chunk,
            };
            let mut buf = vec![0u8; seg.buffer_len()];
            seg.emit(&mut buf).unwrap();
            emitted.push(buf);
        }
        for seg in &emitted {
            // Opcode, flags and tag; key and address; total length.
            assert_eq!(seg[..4], emitted[0][..4]);
            assert_eq!(seg[8..20], emitted[0][8..20]);
            assert_eq!(seg[24..28], emitted[0][24..28]);
            assert!(parse_one(seg, 0).is_ok());
        }
        assert_eq!(emitted[2][20..24], [0, 0, 0, 8]);
        assert_eq!(emitted[2][6..8], [0, 2]);
    }

    //= type=test
    //# WIRE-6.1-7 (unknown response) A response with an opcode this document does not define MUST
    //# be discarded and counted in unknown_responses, apart from bad responses (WIRE-6.1-9); the
    //# receiver goes on with the next transaction. (1.1: bad responses, which this requirement also
    //# covered, are now WIRE-6.1-9.)
    //# WIRE-6.9-1 A response whose status is not OK MUST carry no data (`dlen` 0).
    //# WIRE-6.9-3 An RDMA_READ_RESP with status OK MUST satisfy 1 <= total length, 1 <= dlen and
    //# offset + dlen <= total length. One with another status MUST have dlen 0 and ends the read;
    //# its offset and total length are informative and not checked. A response violating this is a
    //# bad response (WIRE-6.1-9).
    //# WIRE-6.9-4 A LOAD_RESP with status OK MUST carry 1..256 data bytes; an atomic response
    //# with status OK MUST carry 4 or 8.
    #[test]
    fn bad_responses() {
        let d = Action::DiscardTxn;
        let at = 16;
        // hlen differs from the table.
        for (bytes, hlen) in [
            (&LOAD_RESP[..], 3u8),
            (&STORE_RESP[..], 3),
            (&FADD_RESP[..], 4),
            (&FENCE_RESP[..], 4),
            (&RDMA_COMPLETION[..], 2),
            (&RDMA_READ_RESP[..], 2),
        ] {
            let mut v = bytes.to_vec();
            v[4] = hlen;
            v.resize(v.len() + 16, 0);
            check(parse_one(&v, at), Field::Hlen, at + 4, "WIRE-6.1-9", d);
        }
        // Data where the opcode fixes dlen at 0, whatever the status (WIRE-6.1-10 is reported
        // before WIRE-6.9-1, WIRE-1.2-5).
        for bytes in [
            &STORE_RESP[..],
            &FENCE_RESP[..],
            &RDMA_COMPLETION[..],
            &STORE_RESP_UNKNOWN_STATUS[..],
        ] {
            let v = with_dlen(bytes, 4);
            check(parse_one(&v, at), Field::Dlen, at + 6, "WIRE-6.1-10", d);
            let e = parse_one(&v, at).unwrap_err();
            assert_eq!(e.discard(), Some(Discard::BadResponse));
        }
        // A status other than OK with data.
        for bytes in [
            &LOAD_RESP_ERR[..],
            &CAS_RESP_MISALIGNED[..],
            &RDMA_READ_RESP_ERR[..],
        ] {
            let v = with_dlen(bytes, 4);
            check(parse_one(&v, at), Field::Dlen, at + 6, "WIRE-6.9-1", d);
        }
        // LOAD_RESP OK: 1..=256 bytes.
        for dlen in [0u16, 257] {
            let v = with_dlen(&LOAD_RESP, dlen);
            check(parse_one(&v, at), Field::Dlen, at + 6, "WIRE-6.9-4", d);
        }
        for dlen in [1u16, 256] {
            assert!(parse_one(&with_dlen(&LOAD_RESP, dlen), 0).is_ok());
        }
        // Atomic responses OK: 4 or 8 bytes.
        for op in [0x83u8, 0x84, 0x85] {
            for dlen in 0..=12u16 {
                let v = edited(&with_dlen(&FADD_RESP, dlen), |v| v[0] = op);
                let r = parse_one(&v, at);
                if dlen == 4 || dlen == 8 {
                    assert!(r.is_ok());
                } else {
                    check(r, Field::Dlen, at + 6, "WIRE-6.9-4", d);
                }
            }
        }
        // RDMA_READ_RESP OK: 1 <= dlen and offset + dlen <= total; total never 0.
        let v = with_dlen(&RDMA_READ_RESP, 0);
        check(parse_one(&v, at), Field::Dlen, at + 6, "WIRE-6.9-3", d);
        let v = edited(&RDMA_READ_RESP, |v| {
            v[8..12].copy_from_slice(&60u32.to_be_bytes())
        });
        check(
            parse_one(&v, at),
            Field::RdmaOffset,
            at + 8,
            "WIRE-6.9-3",
            d,
        );
        let v = edited(&RDMA_READ_RESP, |v| {
            v[8..12].copy_from_slice(&59u32.to_be_bytes())
        });
        assert!(parse_one(&v, at).is_ok());
        let v = edited(&RDMA_READ_RESP, |v| v[8..12].fill(0xFF));
        check(
            parse_one(&v, at),
            Field::RdmaOffset,
            at + 8,
            "WIRE-6.9-3",
            d,
        );
        let v = edited(&RDMA_READ_RESP, |v| v[12..16].fill(0));
        check(
            parse_one(&v, at),
            Field::RdmaTotal,
            at + 12,
            "WIRE-6.9-3",
            d,
        );
        // An unknown response is kept whole; the receiver discards it (WIRE-6.1-7).
        let t = parse_one(&UNKNOWN_RESPONSE, 0).unwrap();
        assert!(!t.is_request());
        assert_eq!(t.opcode(), Opcode::Unknown(0xa0));
    }

    //= type=test
    //# WIRE-6.1-7 (unknown response) A response with an opcode this document does not define
    //# MUST be discarded and counted in `unknown_responses`, apart from bad responses
    //# (WIRE-6.1-9).
    //# WIRE-6.1-9 (bad response) A response with a defined opcode whose `hlen` differs from the
    //# table, or whose fields violate the rules of its section, MUST be discarded and counted in
    //# `bad_responses`.
    #[test]
    fn unknown_and_bad_responses_are_counted_apart() {
        // Every undefined response opcode parses, and is classified as unknown.
        for op in 0x80..=u8::MAX {
            if Opcode::from_u8(op).hlen().is_some() {
                continue;
            }
            let v = edited(&UNKNOWN_RESPONSE, |v| v[0] = op);
            let t = parse_one(&v, 0).unwrap();
            assert!(t.is_unknown_response(), "{op:#x}");
            assert_eq!(t.discard(), Some(Discard::UnknownResponse));
            assert_eq!(t.discard().map(Discard::counter), Some("unknown_responses"));
        }
        // An unknown request is answered, not discarded; defined transactions are neither.
        let t = parse_one(&UNKNOWN_REQUEST, 0).unwrap();
        assert!(!t.is_unknown_response());
        assert_eq!(t.discard(), None);
        for (name, bytes, repr) in vectors() {
            if !matches!(repr, TxnRepr::Unknown { .. }) {
                assert_eq!(parse_one(bytes, 0).unwrap().discard(), None, "{name}");
            }
        }
        // A defined response with a bad field is an error counted as a bad response.
        let e = parse_one(&with_dlen(&STORE_RESP, 4), 0).unwrap_err();
        assert_eq!(e.discard(), Some(Discard::BadResponse));
        assert_eq!(e.discard().map(Discard::counter), Some("bad_responses"));
        assert_ne!(Discard::BadResponse.spec(), Discard::UnknownResponse.spec());
    }

    //= type=test
    //# WIRE-6.9-3 [...] One with another status MUST have `dlen` 0 and ends the read; its offset
    //# and total length are informative and not checked.
    #[test]
    fn failed_rdma_read_resp_offset_and_total_are_not_checked() {
        for (offset, total) in [
            (0u32, 0u32),
            (0xFFFF_FFFF, 1),
            (100, 0),
            (0xFFFF_FFFF, 0xFFFF_FFFF),
        ] {
            let v = edited(&RDMA_READ_RESP_ERR, |v| {
                v[8..12].copy_from_slice(&offset.to_be_bytes());
                v[12..16].copy_from_slice(&total.to_be_bytes());
            });
            let want = TxnRepr::RdmaReadResp {
                tag: 9,
                status: Status::AccessViolation,
                offset,
                total,
                data: &[],
            };
            assert_eq!(parse_one(&v, 0), Ok(want));
            let mut out = [0xa5u8; 16];
            assert_eq!(want.emit(&mut out), Ok(16));
            assert_eq!(out[..], v[..]);
        }
        // With status OK the total length must be at least 1.
        let ok = TxnRepr::RdmaReadResp {
            tag: 9,
            status: Status::Ok,
            offset: 0,
            total: 0,
            data: &[1],
        };
        assert_eq!(
            ok.emit(&mut [0u8; 24]),
            Err(EmitError::Invalid(Field::RdmaTotal))
        );
    }

    #[test]
    fn data_in_place_gives_the_bytes_of_emit() {
        // Every vector with data: the data written into its range first, then the rest in
        // place, gives emit's bytes; the data range is where emit puts the data.
        let mut with_data = 0;
        for (name, bytes, repr) in vectors() {
            let n = repr.buffer_len();
            let range = repr.data_range();
            if range.is_empty() {
                continue;
            }
            with_data += 1;
            let mut expect = vec![0xEEu8; n + 3];
            assert_eq!(repr.emit(&mut expect), Ok(n), "{name}");
            assert_eq!(&expect[..n], bytes, "{name}");
            // Stale bytes everywhere, the data itself in its place.
            let mut got = vec![0x5Au8; n + 3];
            got[range.clone()].copy_from_slice(&expect[range.clone()]);
            assert_eq!(repr.emit_data_in_place(&mut got), Ok(n), "{name}");
            assert_eq!(&got[..n], &expect[..n], "{name}");
            // The data range of a transaction carrying bytes as given is left alone: with other
            // bytes there, only they differ. (An atomic's operands are written from its fields.)
            if matches!(repr, TxnRepr::Atomic { .. } | TxnRepr::AtomicResp { .. }) {
                continue;
            }
            let mut other = vec![0u8; n];
            other[range.clone()].fill(0xC3);
            assert_eq!(repr.emit_data_in_place(&mut other), Ok(n), "{name}");
            for (i, (a, b)) in other.iter().zip(&expect[..n]).enumerate() {
                if range.contains(&i) {
                    assert_eq!(*a, 0xC3, "{name} byte {i}");
                } else {
                    assert_eq!(a, b, "{name} byte {i}");
                }
            }
        }
        assert!(with_data >= 4, "{with_data} vectors with data");
    }

    #[test]
    fn emit_rejects_unencodable_values() {
        let data = [0u8; 300];
        let bad: [(TxnRepr<'_>, Field); 12] = [
            (
                TxnRepr::Load {
                    tag: 0,
                    target: TARGET,
                    len: 0,
                },
                Field::LoadLength,
            ),
            (
                TxnRepr::Load {
                    tag: 0,
                    target: TARGET,
                    len: 257,
                },
                Field::LoadLength,
            ),
            (
                TxnRepr::Store {
                    tag: 0,
                    target: TARGET,
                    data: &[],
                },
                Field::Dlen,
            ),
            (
                TxnRepr::Store {
                    tag: 0,
                    target: TARGET,
                    data: &data[..257],
                },
                Field::Dlen,
            ),
            (
                TxnRepr::Atomic {
                    tag: 0,
                    target: TARGET,
                    width: Width::W4,
                    op: AtomicOp::Swap { value: 1 << 32 },
                },
                Field::Dlen,
            ),
            (
                TxnRepr::RdmaWrite {
                    tag: 0,
                    target: TARGET,
                    offset: 0,
                    total: 1,
                    data: &[],
                },
                Field::RdmaTotal,
            ),
            (
                TxnRepr::RdmaRead {
                    tag: 0,
                    target: TARGET,
                    total: 0,
                },
                Field::RdmaTotal,
            ),
            (
                TxnRepr::LoadResp {
                    tag: 0,
                    status: Status::Busy,
                    data: &data[..1],
                },
                Field::Dlen,
            ),
            (
                TxnRepr::AtomicResp {
                    tag: 0,
                    kind: AtomicKind::Swap,
                    status: Status::Ok,
                    old: None,
                },
                Field::Dlen,
            ),
            (
                TxnRepr::RdmaReadResp {
                    tag: 0,
                    status: Status::Ok,
                    offset: 0,
                    total: 0,
                    data: &[1],
                },
                Field::RdmaTotal,
            ),
            (
                TxnRepr::Unknown {
                    opcode: 0x02,
                    flags_status: 0,
                    tag: 0,
                    header: &[],
                    data: &[],
                },
                Field::Opcode,
            ),
            (
                TxnRepr::Unknown {
                    opcode: 0x30,
                    flags_status: 0,
                    tag: 0,
                    header: &[0; 3],
                    data: &[],
                },
                Field::Hlen,
            ),
        ];
        let mut buf = [0u8; 512];
        for (t, field) in bad {
            assert_eq!(t.emit(&mut buf), Err(EmitError::Invalid(field)), "{t:?}");
        }
    }

    #[test]
    fn names_and_response_opcodes() {
        for (op, name) in [
            (AtomicOp::FetchAdd { addend: 0 }, "ATOMIC_FADD"),
            (AtomicOp::Swap { value: 0 }, "ATOMIC_SWAP"),
            (
                AtomicOp::CompareSwap {
                    compare: 0,
                    value: 0,
                },
                "ATOMIC_CAS",
            ),
        ] {
            assert_eq!(op.opcode().name(), name);
        }
        for (kind, op) in [
            (AtomicKind::FetchAdd, 0x83),
            (AtomicKind::Swap, 0x84),
            (AtomicKind::CompareSwap, 0x85),
        ] {
            assert_eq!(kind.response_opcode().to_u8(), op);
        }
        assert_eq!(AtomicValue::U32(7).get(), 7);
        assert_eq!(AtomicValue::U64(1 << 40).width(), Width::W8);
        assert_eq!(core::mem::size_of::<TxnPrefix>(), PREFIX_LEN);
    }
}

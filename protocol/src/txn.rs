//! Transactions (wire.md §6): the common prefix, every request and response, and their
//! validation.

use zerocopy::byteorder::network_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::{Action, EmitError, Error, ErrorKind, Field};
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
    /// (WIRE-6.1-5, WIRE-6.1-7). Kept whole so it can be reported and re-encoded (WIRE-1.2-3).
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
                if *total == 0 {
                    return bad(Field::RdmaTotal);
                }
                if status.is_ok() {
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
                data.copy_from_slice(src);
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
                data.copy_from_slice(src);
            }
            TxnRepr::RdmaRead { target, total, .. } => {
                let (e, _) = RdmaReadExt::mut_from_prefix(ext).map_err(|_| ext_err)?;
                *e = RdmaReadExt {
                    key: U32::new(target.key),
                    addr: U64::new(target.addr),
                    total: U32::new(*total),
                };
            }
            TxnRepr::LoadResp { data: src, .. } => data.copy_from_slice(src),
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
                data.copy_from_slice(src);
            }
            TxnRepr::Unknown {
                header: h,
                data: src,
                ..
            } => {
                ext.copy_from_slice(h);
                data.copy_from_slice(src);
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
            Error::new(ErrorKind::OutOfRange, field, offset + at, spec, action)
        };
        let (malformed_spec, malformed) = if is_request {
            ("WIRE-6.1-6", Status::Malformed)
        } else {
            ("WIRE-6.1-7", Status::Malformed)
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
                let target = mem(ext)?;
                //= docs/spec/wire.md#65-atomics-atomic_fadd-0x03-atomic_swap-0x04-atomic_cas-0x05-hlen-5
                //# WIRE-6.5-2 An atomic whose address is not a multiple of its operand size MUST NOT
                //# be executed and MUST be answered with status MISALIGNED.
                if target.addr % width.bytes() as u64 != 0 {
                    return Err(reject(
                        Field::TxnPrefix,
                        12,
                        "WIRE-6.5-2",
                        Status::Misaligned,
                    ));
                }
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
                //# WIRE-6.9-3 An RDMA_READ_RESP with status OK MUST satisfy `1 <= dlen` and
                //# `offset + dlen <= total length`.
                if total == 0 {
                    return Err(reject(Field::RdmaTotal, 12, "WIRE-6.9-3", malformed));
                }
                if status.is_ok()
                    && (dlen == 0 || u64::from(offset) + dlen as u64 > u64::from(total))
                {
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

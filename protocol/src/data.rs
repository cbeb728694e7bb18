//! The payload of a DATA frame: the network header (wire.md §5) and the packed transactions (§6).

use zerocopy::byteorder::network_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::{Action, EmitError, Error, ErrorKind, Field};
use crate::frame::{self, DataHeader, EthernetRepr, FrameKind, LINK_HEADER_LEN};
use crate::txn::{PREFIX_LEN, TxnPrefix, TxnRepr};
use crate::types::{GpuId, PathId};

/// Length of the network header.
pub const NETWORK_HEADER_LEN: usize = 8;
/// Most transactions one frame can carry.
pub const MAX_TXNS_PER_FRAME: usize = 255;

/// Zero-copy view of the network header.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct NetworkHeader {
    dst: U16,
    src: U16,
    path: u8,
    count: u8,
    payload_len: U16,
}

impl NetworkHeader {
    /// Raw destination GPU id.
    pub fn dst_raw(&self) -> u16 {
        self.dst.get()
    }
    /// Raw source GPU id.
    pub fn src_raw(&self) -> u16 {
        self.src.get()
    }
    /// Path id.
    pub fn path(&self) -> PathId {
        PathId(self.path)
    }
    /// Transaction count.
    pub fn count(&self) -> u8 {
        self.count
    }
    /// Payload length.
    pub fn payload_len(&self) -> u16 {
        self.payload_len.get()
    }
}

/// The transactions of a DATA payload: either still on the wire (after parsing) or a slice of
/// representations (to emit). Both iterate the same way; equality compares the transactions.
#[derive(Debug, Clone, Copy)]
pub enum Txns<'a> {
    /// Parsed from a frame: `count` transactions in `bytes`; `base` is the offset of `bytes` in
    /// the structure errors are reported against.
    Wire {
        /// The transaction count of the network header.
        count: u8,
        /// The transaction bytes (payload length of them).
        bytes: &'a [u8],
        /// Offset of `bytes` for error reports.
        base: usize,
    },
    /// Transactions to emit, in order.
    Slice(&'a [TxnRepr<'a>]),
}

impl<'a> Txns<'a> {
    /// Iterates over the transactions, each validated, in order (see [`TxnIter`]).
    pub fn iter(&self) -> TxnIter<'a> {
        match *self {
            Txns::Wire { count, bytes, base } => TxnIter {
                inner: IterInner::Wire {
                    bytes,
                    pos: 0,
                    remaining: count,
                    base,
                    done: false,
                },
            },
            Txns::Slice(s) => TxnIter {
                inner: IterInner::Slice(s.iter()),
            },
        }
    }

    /// Number of transactions the header announces (wire) or the slice holds.
    pub fn count(&self) -> usize {
        match self {
            Txns::Wire { count, .. } => usize::from(*count),
            Txns::Slice(s) => s.len(),
        }
    }

    fn byte_len(&self) -> usize {
        match self {
            Txns::Wire { bytes, .. } => bytes.len(),
            Txns::Slice(s) => s.iter().map(TxnRepr::buffer_len).sum(),
        }
    }
}

impl PartialEq for Txns<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Txns<'_> {}

/// Iterator over the transactions of a payload.
///
/// Yields `Ok` for each valid transaction (including structurally valid unknown opcodes, which the
/// receiver answers as WIRE-6.1-5 says), and `Err` for each invalid one; the error's
/// [`Action`] says what to do. After an error whose action is [`Action::DiscardRest`] the iterator
/// ends (WIRE-6.1-3, WIRE-6.1-4); otherwise it goes on with the next transaction.
/// It does at most one step of work per transaction and at most 255 + 1 steps in all.
#[derive(Debug, Clone)]
pub struct TxnIter<'a> {
    inner: IterInner<'a>,
}

#[derive(Debug, Clone)]
enum IterInner<'a> {
    Wire {
        bytes: &'a [u8],
        pos: usize,
        remaining: u8,
        base: usize,
        done: bool,
    },
    Slice(core::slice::Iter<'a, TxnRepr<'a>>),
}

impl<'a> Iterator for TxnIter<'a> {
    type Item = Result<TxnRepr<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        let IterInner::Wire {
            bytes,
            pos,
            remaining,
            base,
            done,
        } = &mut self.inner
        else {
            let IterInner::Slice(it) = &mut self.inner else {
                return None;
            };
            return it.next().map(|t| Ok(*t));
        };
        if *done {
            return None;
        }
        let at = base.saturating_add(*pos);
        let rest_err =
            |kind, field, spec| Some(Err(Error::new(kind, field, at, spec, Action::DiscardRest)));
        let rest = bytes.get(*pos..).unwrap_or(&[]);
        //= docs/spec/wire.md#61-common-prefix
        //# WIRE-6.1-4 If the transactions end before the payload length, or the payload holds more
        //# transactions than the transaction count, the receiver MUST discard the transactions past
        //# the count or the end as in WIRE-6.1-3.
        if *remaining == 0 {
            *done = true;
            return if rest.is_empty() {
                None
            } else {
                rest_err(ErrorKind::Inconsistent, Field::TxnCount, "WIRE-6.1-4")
            };
        }
        if rest.is_empty() {
            *done = true;
            return rest_err(ErrorKind::Truncated, Field::TxnCount, "WIRE-6.1-4");
        }
        //= docs/spec/wire.md#61-common-prefix
        //# WIRE-6.1-3 (structural error) If fewer than 8 bytes of payload remain where a
        //# transaction should start, if `hlen` is less than 2, or if `4*hlen + roundup4(dlen)` runs
        //# past the end of the payload, the receiver cannot find the next transaction.
        let Ok((prefix, _)) = TxnPrefix::ref_from_prefix(rest) else {
            *done = true;
            return rest_err(ErrorKind::Truncated, Field::TxnPrefix, "WIRE-6.1-3");
        };
        let hdr_len = usize::from(prefix.hlen()) * 4;
        if hdr_len < PREFIX_LEN {
            *done = true;
            return Some(Err(Error::new(
                ErrorKind::OutOfRange,
                Field::Hlen,
                at + 4,
                "WIRE-6.1-3",
                Action::DiscardRest,
            )));
        }
        let dlen = usize::from(prefix.dlen());
        let size = hdr_len + ((dlen + 3) & !3);
        let (Some(hdr), Some(data)) = (rest.get(..hdr_len), rest.get(hdr_len..hdr_len + dlen))
        else {
            *done = true;
            return Some(Err(Error::new(
                ErrorKind::Inconsistent,
                Field::Dlen,
                at + 6,
                "WIRE-6.1-3",
                Action::DiscardRest,
            )));
        };
        if size > rest.len() {
            *done = true;
            return Some(Err(Error::new(
                ErrorKind::Inconsistent,
                Field::Dlen,
                at + 6,
                "WIRE-6.1-3",
                Action::DiscardRest,
            )));
        }
        *pos += size;
        *remaining -= 1;
        Some(TxnRepr::parse(hdr, data, at))
    }
}

/// A DATA frame's payload: network header and transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataRepr<'a> {
    /// Destination GPU.
    pub dst: GpuId,
    /// Source GPU.
    pub src: GpuId,
    /// Path id at the source.
    pub path: PathId,
    /// The transactions.
    pub txns: Txns<'a>,
}

impl<'a> DataRepr<'a> {
    /// Parses a DATA payload (network header and transactions, as
    /// [`crate::LinkFrame::Data`] yields it). Error offsets are payload-relative.
    pub fn parse(payload: &'a [u8]) -> Result<Self, Error> {
        Self::parse_at(payload, 0)
    }

    /// As [`DataRepr::parse`], with error offsets relative to `base` bytes before the payload
    /// (for example the offset of the payload in its frame).
    pub fn parse_at(payload: &'a [u8], base: usize) -> Result<Self, Error> {
        let malformed = |kind, field, at: usize| {
            Error::new(kind, field, base + at, "WIRE-5-3", Action::DiscardMalformed)
        };
        //= docs/spec/wire.md#5-data-frames-the-network-header
        //# WIRE-5-3 A receiver MUST discard, and count as malformed, a DATA frame whose network
        //# header is incomplete, whose destination or source GPU id is 0xFFFF, whose transaction
        //# count is zero, or whose payload length runs past the end of the frame (before the FCS).
        let (hdr, bytes) = NetworkHeader::ref_from_prefix(payload)
            .map_err(|_| malformed(ErrorKind::Truncated, Field::NetworkHeader, 0))?;
        let dst =
            GpuId::new(hdr.dst_raw()).ok_or(malformed(ErrorKind::OutOfRange, Field::DstGpu, 0))?;
        let src =
            GpuId::new(hdr.src_raw()).ok_or(malformed(ErrorKind::OutOfRange, Field::SrcGpu, 2))?;
        if hdr.count() == 0 {
            return Err(malformed(ErrorKind::OutOfRange, Field::TxnCount, 5));
        }
        let len = usize::from(hdr.payload_len());
        let bytes =
            bytes
                .get(..len)
                .ok_or(malformed(ErrorKind::Inconsistent, Field::PayloadLength, 6))?;
        Ok(DataRepr {
            dst,
            src,
            path: hdr.path(),
            txns: Txns::Wire {
                count: hdr.count(),
                bytes,
                base: base + NETWORK_HEADER_LEN,
            },
        })
    }

    /// Bytes the payload occupies: the network header and every transaction.
    pub fn buffer_len(&self) -> usize {
        NETWORK_HEADER_LEN.saturating_add(self.txns.byte_len())
    }

    /// Writes the payload into the start of `buf` and returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let len = self.buffer_len();
        let available = buf.len();
        let out = buf.get_mut(..len).ok_or(EmitError::BufferTooSmall {
            needed: len,
            available,
        })?;
        let count = self.txns.count();
        //= docs/spec/wire.md#5-data-frames-the-network-header
        //# WIRE-5-1 A DATA frame MUST carry at least one transaction.
        if count == 0 || count > MAX_TXNS_PER_FRAME {
            return Err(EmitError::Invalid(Field::TxnCount));
        }
        let payload_len = u16::try_from(len - NETWORK_HEADER_LEN)
            .map_err(|_| EmitError::Invalid(Field::PayloadLength))?;
        let (hdr, mut rest) = NetworkHeader::mut_from_prefix(out)
            .map_err(|_| EmitError::Invalid(Field::NetworkHeader))?;
        //= docs/spec/wire.md#5-data-frames-the-network-header
        //# WIRE-5-2 The payload length MUST equal the sum of the sizes of the transactions (§6.1)
        //# and the transaction count MUST equal their number.
        *hdr = NetworkHeader {
            dst: U16::new(self.dst.value()),
            src: U16::new(self.src.value()),
            path: self.path.0,
            count: u8::try_from(count).map_err(|_| EmitError::Invalid(Field::TxnCount))?,
            payload_len: U16::new(payload_len),
        };
        match self.txns {
            Txns::Wire { bytes, .. } => rest.copy_from_slice(bytes),
            Txns::Slice(txns) => {
                for t in txns {
                    let n = t.emit(rest)?;
                    rest = rest.get_mut(n..).unwrap_or(&mut []);
                }
            }
        }
        Ok(len)
    }
}

/// Length of the DATA frame that carries `data` behind `eth`.
pub fn data_frame_len(eth: &EthernetRepr, data: &DataRepr<'_>) -> usize {
    frame::frame_len(eth.header_len(), data.buffer_len())
}

/// Writes a whole DATA frame (Ethernet header, link header, payload, padding, FCS) into the start
/// of `buf` in one pass, without an intermediate payload buffer. Returns the frame length.
pub fn emit_data_frame(
    eth: &EthernetRepr,
    header: DataHeader,
    data: &DataRepr<'_>,
    buf: &mut [u8],
) -> Result<usize, EmitError> {
    let len = data_frame_len(eth, data);
    if len > frame::MAX_FRAME_LEN {
        return Err(EmitError::TooLong {
            len,
            mfs: frame::MAX_FRAME_LEN,
        });
    }
    let available = buf.len();
    let out = buf.get_mut(..len).ok_or(EmitError::BufferTooSmall {
        needed: len,
        available,
    })?;
    let eth_len = eth.header_len();
    let (head, rest) = out.split_at_mut(eth_len + LINK_HEADER_LEN);
    frame::emit_headers(
        eth,
        FrameKind::Data,
        header.vc,
        header.flags.bits(),
        header.seq,
        head,
    )?;
    let n = data.emit(rest)?;
    frame::finish_frame(out, eth_len + LINK_HEADER_LEN + n)?;
    Ok(len)
}

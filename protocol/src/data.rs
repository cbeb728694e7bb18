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
        //# WIRE-6.1-4 If bytes of the payload remain after the last transaction the count
        //# announces, the receiver MUST discard them as in WIRE-6.1-3: the counted transactions
        //# stand, and one malformed transaction is counted.
        if *remaining == 0 {
            *done = true;
            return if rest.is_empty() {
                None
            } else {
                rest_err(ErrorKind::Inconsistent, Field::TxnCount, "WIRE-6.1-4")
            };
        }
        //= docs/spec/wire.md#61-common-prefix
        //# WIRE-6.1-3 (structural error) If fewer than 8 bytes of payload remain where a
        //# transaction should start (none at all included: the count announces more transactions
        //# than the payload holds, even when the payload ends exactly where a transaction ends), if
        //# hlen is less than 2, or if 4*hlen + roundup4(dlen) runs past the end of the payload, the
        //# receiver cannot find the next transaction. It MUST discard this transaction and every
        //# later transaction of the frame and count one malformed transaction (malformed_txns).
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
                at.saturating_add(4),
                "WIRE-6.1-3",
                Action::DiscardRest,
            )));
        }
        let dlen = usize::from(prefix.dlen());
        let size = hdr_len + ((dlen + 3) & !3);
        let (Some(hdr), Some(data)) = (rest.get(..hdr_len), rest.get(hdr_len..hdr_len + dlen))
        else {
            *done = true;
            // Blame the field that runs past the end: the header itself, or the data after it.
            let (field, at_field) = if hdr_len > rest.len() {
                (Field::Hlen, 4)
            } else {
                (Field::Dlen, 6)
            };
            return Some(Err(Error::new(
                ErrorKind::Inconsistent,
                field,
                at.saturating_add(at_field),
                "WIRE-6.1-3",
                Action::DiscardRest,
            )));
        };
        if size > rest.len() {
            *done = true;
            return Some(Err(Error::new(
                ErrorKind::Inconsistent,
                Field::Dlen,
                at.saturating_add(6),
                "WIRE-6.1-3",
                Action::DiscardRest,
            )));
        }
        *pos += size;
        *remaining -= 1;
        //= docs/spec/wire.md#61-common-prefix
        //# WIRE-6.1-11 A receiver MUST process normally every transaction of a frame that comes
        //# before a structural error (WIRE-6.1-3, WIRE-6.1-4).
        // Each transaction is handed over as soon as it is walked; a later error cannot undo it.
        Some(TxnRepr::parse(hdr, data, at))
    }
}

/// A DATA frame's payload: network header and transactions.
//= docs/spec/wire.md#5-data-frames-the-network-header
//# WIRE-5-5 All transactions in one frame share the network header, so a transmitter MUST pack
//# into one frame only transactions with the same source, destination, path and VC.
// One representation holds one source, destination and path for all its transactions.
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
        //= docs/spec/wire.md#5-data-frames-the-network-header
        //# WIRE-5-6 Discarding a DATA frame for its network header MUST NOT cause a NACK: the link
        //# layer has already accepted the frame, consumed its sequence number and acknowledged it
        //# (§7, WIRE-7-3), and the frame's credits are freed at once. (Split from WIRE-5-3 in 1.1.)
        // Every error here is `Action::DiscardMalformed`, which never NACKs.
        let malformed = |kind, field, at: usize| {
            Error::new(
                kind,
                field,
                base.saturating_add(at),
                "WIRE-5-3",
                Action::DiscardMalformed,
            )
        };
        //= docs/spec/wire.md#5-data-frames-the-network-header
        //# WIRE-5-3 A receiver MUST discard a DATA frame whose network header is incomplete, whose
        //# payload length runs past the end of the frame (before the FCS), whose destination or
        //# source GPU id is 0xFFFF, or whose transaction count is zero, and count it as a
        //# malformed frame.
        //= docs/spec/wire.md#5-data-frames-the-network-header
        //# WIRE-5-8 A receiver MUST check the network header in this order and report the first
        //# check that fails: (1) header complete, (2) payload length within the frame, (3) no
        //# bytes beyond the padding (WIRE-2.4-3), (4) destination GPU id, (5) source GPU id,
        //# (6) transaction count, (7) payload length at least 8.
        // (3) needs the frame's length and is checked by `FrameRepr::parse`, which also checks
        // (1) and (2) before it; a payload handed here directly skips (3).
        let (hdr, bytes) = NetworkHeader::ref_from_prefix(payload)
            .map_err(|_| malformed(ErrorKind::Truncated, Field::NetworkHeader, 0))?;
        let len = usize::from(hdr.payload_len());
        let bytes =
            bytes
                .get(..len)
                .ok_or(malformed(ErrorKind::Inconsistent, Field::PayloadLength, 6))?;
        let dst =
            GpuId::new(hdr.dst_raw()).ok_or(malformed(ErrorKind::OutOfRange, Field::DstGpu, 0))?;
        let src =
            GpuId::new(hdr.src_raw()).ok_or(malformed(ErrorKind::OutOfRange, Field::SrcGpu, 2))?;
        if hdr.count() == 0 {
            return Err(malformed(ErrorKind::OutOfRange, Field::TxnCount, 5));
        }
        //= docs/spec/wire.md#5-data-frames-the-network-header
        //# WIRE-5-7 A receiver MUST discard a DATA frame whose payload length is less than 8 (the
        //# size of the smallest transaction) and count it as a malformed frame.
        if len < PREFIX_LEN {
            return Err(Error::new(
                ErrorKind::OutOfRange,
                Field::PayloadLength,
                base.saturating_add(6),
                "WIRE-5-7",
                Action::DiscardMalformed,
            ));
        }
        Ok(DataRepr {
            dst,
            src,
            path: hdr.path(),
            txns: Txns::Wire {
                count: hdr.count(),
                bytes,
                base: base.saturating_add(NETWORK_HEADER_LEN),
            },
        })
    }

    /// Bytes the payload occupies: the network header and every transaction.
    pub fn buffer_len(&self) -> usize {
        NETWORK_HEADER_LEN.saturating_add(self.txns.byte_len())
    }

    /// Writes the 8-byte network header for `payload_len` bytes of transactions into `out`.
    fn emit_header(&self, out: &mut [u8], payload_len: usize) -> Result<(), EmitError> {
        let count = self.txns.count();
        //= docs/spec/wire.md#5-data-frames-the-network-header
        //# WIRE-5-1 A DATA frame MUST carry at least one transaction.
        if count == 0 || count > MAX_TXNS_PER_FRAME {
            return Err(EmitError::Invalid(Field::TxnCount));
        }
        let payload_len =
            u16::try_from(payload_len).map_err(|_| EmitError::Invalid(Field::PayloadLength))?;
        let (hdr, _) = NetworkHeader::mut_from_prefix(out)
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
        Ok(())
    }

    /// Writes the payload into the start of `buf` and returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let len = self.buffer_len();
        let available = buf.len();
        let out = buf.get_mut(..len).ok_or(EmitError::BufferTooSmall {
            needed: len,
            available,
        })?;
        let (hdr, mut rest) = out.split_at_mut(NETWORK_HEADER_LEN);
        self.emit_header(hdr, len - NETWORK_HEADER_LEN)?;
        match self.txns {
            //= docs/spec/wire.md#5-data-frames-the-network-header
            //# WIRE-5-9 A switch MUST NOT change the network header or the transactions of a frame
            //# it forwards.
            // Parsed transactions are copied back byte for byte, reserved bits included.
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

/// Writes only the headers of a DATA frame carrying `data`: the Ethernet header, the link header
/// and the network header (count and payload length computed from `data.txns`), and returns
/// their length. The transactions, any padding and the FCS are the caller's: this is the transmit
/// path of a MAC that gathers the payload from elsewhere and appends padding and FCS itself.
pub fn emit_data_headers(
    eth: &EthernetRepr,
    header: DataHeader,
    data: &DataRepr<'_>,
    buf: &mut [u8],
) -> Result<usize, EmitError> {
    let eth_len = eth.header_len();
    let len = eth_len + LINK_HEADER_LEN + NETWORK_HEADER_LEN;
    let available = buf.len();
    let out = buf.get_mut(..len).ok_or(EmitError::BufferTooSmall {
        needed: len,
        available,
    })?;
    let (head, net) = out.split_at_mut(eth_len + LINK_HEADER_LEN);
    frame::emit_headers(
        eth,
        FrameKind::Data,
        header.vc,
        header.flags.bits(),
        header.seq,
        head,
    )?;
    data.emit_header(net, data.txns.byte_len())?;
    Ok(len)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Discard;
    use crate::frame::{DataFlags, Frame, FrameRepr, LinkFrame, MAX_FRAME_LEN};
    use crate::txn::tests::{SHARED, TARGET, vectors};
    use crate::types::{MacAddr, Opcode, Seq, Status, Vc};
    use std::vec;
    use std::vec::Vec;

    fn eth_for_tests() -> EthernetRepr {
        EthernetRepr {
            dst: MacAddr([0x02, 0, 0, 0, 0, 1]),
            src: MacAddr([0x02, 0, 0, 0, 0, 2]),
            vlan: None,
        }
    }

    const HDR: DataHeader = DataHeader {
        vc: match Vc::new(2) {
            Some(v) => v,
            None => panic!("VC 2 exists"),
        },
        flags: DataFlags {
            replay: true,
            ack_req: false,
        },
        seq: Seq::new(0xABCDE),
    };

    /// A MAC that strips the FCS hands up the same frame minus four bytes: it must parse to the
    /// same representation, and sizes are still judged with the FCS counted (WIRE-2.4-2).
    //= type=test
    //# WIRE-2.4-2 A receiver MUST discard as a damaged frame (equivalent to an FCS error, §2.5) any
    //# frame shorter than 64 B or longer than the MFS in force (WIRE-2.4-6), and count it in
    //# rx_damaged.
    #[test]
    fn frame_without_fcs_parses_like_frame_with_it() {
        let data = DataRepr::parse(&PAYLOAD).unwrap();
        let mut buf = vec![0u8; 256];
        let n = emit_data_frame(&eth_for_tests(), HDR, &data, &mut buf).unwrap();
        let full = &buf[..n];
        let stripped = &buf[..n - 4];
        let with = Frame::new_checked(full, MAX_FRAME_LEN).unwrap();
        let without = Frame::new_checked_without_fcs(stripped, MAX_FRAME_LEN).unwrap();
        assert!(with.has_fcs() && !without.has_fcs());
        assert_eq!((with.len(), without.len()), (n, n));
        assert_eq!(without.fcs(), [0; 4]);
        assert_eq!(without.body(), with.body());
        assert_eq!(FrameRepr::parse(&without), FrameRepr::parse(&with));
        // The stripped frame's size limits count the missing FCS.
        let e = Frame::new_checked_without_fcs(stripped, n - 1).unwrap_err();
        assert_eq!((e.field, e.offset, e.spec), (Field::Frame, n, "WIRE-2.4-2"));
        let runt = [0u8; 59];
        let e = Frame::new_checked_without_fcs(&runt[..], MAX_FRAME_LEN).unwrap_err();
        assert_eq!(
            (e.field, e.offset, e.action),
            (Field::Frame, 63, Action::DiscardDamaged)
        );
        // Without an FCS there is nothing to check: a corrupted byte goes unnoticed here, which
        // is why this entry point is only for frames a MAC has already checked.
        let mut corrupted = stripped.to_vec();
        corrupted[40] ^= 0xFF;
        assert!(Frame::new_checked_without_fcs(&corrupted[..], MAX_FRAME_LEN).is_ok());
    }

    /// `emit_data_headers` writes exactly the first bytes `emit_data_frame` writes, and nothing
    /// after them.
    //= type=test
    //# WIRE-5-2 The payload length MUST equal the sum of the sizes of the transactions (§6.1) and
    //# the transaction count MUST equal their number.
    #[test]
    fn data_headers_are_the_frame_prefix() {
        let data = DataRepr::parse(&PAYLOAD).unwrap();
        let mut frame = vec![0u8; 256];
        let n = emit_data_frame(&eth_for_tests(), HDR, &data, &mut frame).unwrap();
        let mut buf = vec![0xa5u8; 64];
        let h = emit_data_headers(&eth_for_tests(), HDR, &data, &mut buf).unwrap();
        assert_eq!(h, 14 + 6 + 8);
        assert_eq!(&buf[..h], &frame[..h]);
        assert!(buf[h..].iter().all(|&b| b == 0xa5));
        assert!(n > h);
        let small = emit_data_headers(&eth_for_tests(), HDR, &data, &mut buf[..27]);
        assert_eq!(
            small,
            Err(EmitError::BufferTooSmall {
                needed: 28,
                available: 27
            })
        );
    }

    /// A payload written out from wire.md §5 and §6: a LOAD, a 4-byte STORE and a FENCE.
    #[rustfmt::skip]
    const PAYLOAD: [u8; 64] = [
        0x00, 0x05, 0x00, 0x09, // dst GPU 5, src GPU 9
        0x31,                   // path: stack 3, port 1
        0x03,                   // transaction count 3
        0x00, 0x38,             // payload length 56 = 24 + 24 + 8
        // LOAD, global, tag 1, hlen 6, dlen 0, key, address, length 8
        0x01, 0x00, 0x00, 0x01, 0x06, 0x00, 0x00, 0x00,
        0x11, 0x22, 0x33, 0x44, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10, 0x00,
        0x00, 0x08, 0x00, 0x00,
        // STORE, shared, tag 2, hlen 5, dlen 4, key, address, data
        0x02, 0x01, 0x00, 0x02, 0x05, 0x00, 0x00, 0x04,
        0x11, 0x22, 0x33, 0x44, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10, 0x00,
        0x0a, 0x0b, 0x0c, 0x0d,
        // FENCE, tag 3
        0x06, 0x00, 0x00, 0x03, 0x02, 0x00, 0x00, 0x00,
    ];

    fn payload_txns() -> [TxnRepr<'static>; 3] {
        [
            TxnRepr::Load {
                tag: 1,
                target: TARGET,
                len: 8,
            },
            TxnRepr::Store {
                tag: 2,
                target: SHARED,
                data: &PAYLOAD[52..56],
            },
            TxnRepr::Fence { tag: 3 },
        ]
    }

    fn gpu(v: u16) -> GpuId {
        GpuId::new(v).unwrap()
    }

    /// A payload of `txns` behind a network header from GPU 9 to GPU 5, as bytes.
    fn payload_of(txns: &[TxnRepr<'_>]) -> Vec<u8> {
        let repr = DataRepr {
            dst: gpu(5),
            src: gpu(9),
            path: PathId(0x31),
            txns: Txns::Slice(txns),
        };
        let mut buf = vec![0xa5; repr.buffer_len()];
        assert_eq!(repr.emit(&mut buf), Ok(buf.len()));
        buf
    }

    /// The network header for `count` transactions in `len` bytes, followed by `txns`.
    fn raw_payload(count: u8, len: u16, txns: &[u8]) -> Vec<u8> {
        let mut v = vec![0x00, 0x05, 0x00, 0x09, 0x31, count];
        v.extend_from_slice(&len.to_be_bytes());
        v.extend_from_slice(txns);
        v
    }

    fn err_of(r: Option<Result<TxnRepr<'_>, Error>>) -> Error {
        r.expect("an item").expect_err("an error")
    }

    //= type=test
    //# WIRE-5-1 A DATA frame MUST carry at least one transaction. [...]
    //# WIRE-5-5 All transactions in one frame share the network header, so a transmitter MUST pack
    //# into one frame only transactions with the same source, destination, path and VC. (Split from
    //# WIRE-5-1 A DATA frame MUST carry at least one transaction.
    //# WIRE-5-2 The payload length MUST equal the sum of the sizes of the transactions (§6.1) and
    //# the transaction count MUST equal their number.
    #[test]
    fn construct_payload() {
        let txns = payload_txns();
        let repr = DataRepr {
            dst: gpu(5),
            src: gpu(9),
            path: PathId::from_parts(3, 1),
            txns: Txns::Slice(&txns),
        };
        assert_eq!(repr.buffer_len(), PAYLOAD.len());
        let mut buf = [0xa5u8; 68];
        assert_eq!(repr.emit(&mut buf), Ok(64));
        assert_eq!(buf[..64], PAYLOAD);
        assert_eq!(buf[64..], [0xa5; 4]);
        // No transactions, or more than 255: nothing is written.
        let none = DataRepr {
            txns: Txns::Slice(&[]),
            ..repr
        };
        assert_eq!(
            none.emit(&mut buf),
            Err(EmitError::Invalid(Field::TxnCount))
        );
        let many = [TxnRepr::Fence { tag: 0 }; 256];
        let too_many = DataRepr {
            txns: Txns::Slice(&many),
            ..repr
        };
        let mut big = vec![0u8; too_many.buffer_len()];
        assert_eq!(
            too_many.emit(&mut big),
            Err(EmitError::Invalid(Field::TxnCount))
        );
        let most = DataRepr {
            txns: Txns::Slice(&many[..255]),
            ..repr
        };
        assert_eq!(most.emit(&mut big), Ok(8 + 255 * 8));
        assert_eq!(big[5], 255);
        assert_eq!(big[6..8], (255u16 * 8).to_be_bytes());
        let mut short = [0u8; 63];
        assert_eq!(
            repr.emit(&mut short),
            Err(EmitError::BufferTooSmall {
                needed: 64,
                available: 63
            })
        );
    }

    #[test]
    fn parse_payload() {
        let data = DataRepr::parse(&PAYLOAD).unwrap();
        assert_eq!(
            (data.dst, data.src, data.path),
            (gpu(5), gpu(9), PathId(0x31))
        );
        assert_eq!((data.path.stack(), data.path.port()), (3, 1));
        assert_eq!(data.txns.count(), 3);
        let got: Vec<_> = data.txns.iter().collect();
        let want: Vec<_> = payload_txns().into_iter().map(Ok).collect();
        assert_eq!(got, want);
        // Wire and slice forms compare by their transactions.
        let txns = payload_txns();
        assert_eq!(
            data,
            DataRepr {
                txns: Txns::Slice(&txns),
                ..data
            }
        );
        assert_ne!(
            data,
            DataRepr {
                txns: Txns::Slice(&txns[..2]),
                ..data
            }
        );
        // The network header view.
        let (h, _) = NetworkHeader::ref_from_prefix(&PAYLOAD[..]).unwrap();
        assert_eq!(
            (h.dst_raw(), h.src_raw(), h.count(), h.payload_len()),
            (5, 9, 3, 56)
        );
    }

    //= type=test
    //# WIRE-6.1-1 [...] MUST pad the data with zero bytes to a multiple of 4.
    //# WIRE-6.1-3 (structural error) If fewer than 8 bytes of payload remain where a transaction
    //# should start (none at all included: the count announces more transactions than the payload
    //# holds, even when the payload ends exactly where a transaction ends), if hlen is less than 2,
    //# or if 4*hlen + roundup4(dlen) runs past the end of the payload, the receiver cannot find the
    //# next transaction. It MUST discard this transaction and every later transaction of the frame
    //# and count one malformed transaction (malformed_txns).
    #[test]
    fn every_transaction_packed_in_one_payload() {
        let all: Vec<TxnRepr<'static>> = vectors().into_iter().map(|v| v.2).collect();
        let bytes = payload_of(&all);
        let want: usize = vectors().iter().map(|v| v.1.len()).sum();
        assert_eq!(bytes.len(), 8 + want);
        // The static bytes follow each other, each at a multiple of 4.
        let mut at = 8;
        for (name, b, _) in vectors() {
            assert_eq!(at % 4, 0);
            assert_eq!(&bytes[at..at + b.len()], b, "{name}");
            at += b.len();
        }
        let data = DataRepr::parse(&bytes).unwrap();
        let got: Vec<_> = data.txns.iter().map(Result::unwrap).collect();
        assert_eq!(got, all);
    }

    //= type=test
    //# WIRE-5-3 A receiver MUST discard a DATA frame whose network header is incomplete, whose
    //# payload length runs past the end of the frame (before the FCS), whose destination or source
    //# GPU id is 0xFFFF, or whose transaction count is zero, and count it as a malformed frame (an
    //# endpoint in malformed_frames, a switch in discard_malformed).
    #[test]
    fn network_header_errors() {
        let cases: [(Vec<u8>, ErrorKind, Field, usize); 5] = [
            (
                PAYLOAD[..7].to_vec(),
                ErrorKind::Truncated,
                Field::NetworkHeader,
                0,
            ),
            (
                raw_payload(1, 8, &PAYLOAD[56..])
                    .iter()
                    .enumerate()
                    .map(|(i, &b)| if i < 2 { 0xFF } else { b })
                    .collect(),
                ErrorKind::OutOfRange,
                Field::DstGpu,
                0,
            ),
            (
                {
                    let mut v = PAYLOAD.to_vec();
                    v[2] = 0xFF;
                    v[3] = 0xFF;
                    v
                },
                ErrorKind::OutOfRange,
                Field::SrcGpu,
                2,
            ),
            (
                {
                    let mut v = PAYLOAD.to_vec();
                    v[5] = 0;
                    v
                },
                ErrorKind::OutOfRange,
                Field::TxnCount,
                5,
            ),
            (
                {
                    let mut v = PAYLOAD.to_vec();
                    v[7] = 57;
                    v
                },
                ErrorKind::Inconsistent,
                Field::PayloadLength,
                6,
            ),
        ];
        for (bytes, kind, field, offset) in cases {
            for base in [0, 20] {
                let e = DataRepr::parse_at(&bytes, base).unwrap_err();
                assert_eq!(
                    (e.kind, e.field, e.offset, e.spec, e.action),
                    (
                        kind,
                        field,
                        base + offset,
                        "WIRE-5-3",
                        Action::DiscardMalformed
                    )
                );
                assert!(!e.action.nacks());
            }
        }
        // GPU 0xFFFE is a valid id.
        let v = raw_payload(1, 8, &PAYLOAD[56..]);
        let mut edge = v.clone();
        edge[..4].copy_from_slice(&[0xFF, 0xFE, 0xFF, 0xFE]);
        assert!(DataRepr::parse(&edge).is_ok());
        assert!(DataRepr::parse(&v[..8]).is_err());
    }

    //= type=test
    //# WIRE-5-7 A receiver MUST discard a DATA frame whose payload length is less than 8 (the
    //# size of the smallest transaction) and count it as a malformed frame.
    #[test]
    fn payload_length_below_8_is_malformed() {
        for len in 0..8u16 {
            let mut v = raw_payload(1, len, &PAYLOAD[56..64]);
            v.truncate(8 + usize::from(len));
            let e = DataRepr::parse_at(&v, 20).unwrap_err();
            assert_eq!(
                (e.kind, e.field, e.offset, e.spec, e.action),
                (
                    ErrorKind::OutOfRange,
                    Field::PayloadLength,
                    26,
                    "WIRE-5-7",
                    Action::DiscardMalformed
                ),
                "{len}"
            );
            assert_eq!(e.discard(), Some(Discard::MalformedFrame));
            assert!(e.discard().is_some_and(Discard::seq_consumed));
        }
        assert!(DataRepr::parse(&raw_payload(1, 8, &PAYLOAD[56..64])).is_ok());
    }

    //= type=test
    //# WIRE-5-8 A receiver MUST check the network header in this order and report the first
    //# check that fails: (1) header complete, (2) payload length within the frame, (3) no bytes
    //# beyond the padding (WIRE-2.4-3), (4) destination GPU id, (5) source GPU id, (6)
    //# transaction count, (7) payload length at least 8.
    #[test]
    fn network_header_check_order() {
        // Every field wrong at once: each check in turn is the one reported as the ones before
        // it are repaired.
        let mut v = raw_payload(0, 200, &[]);
        v[..4].copy_from_slice(&[0xFF; 4]);
        let field_of = |v: &[u8]| DataRepr::parse(v).unwrap_err().field;
        assert_eq!(field_of(&v[..7]), Field::NetworkHeader);
        assert_eq!(field_of(&v), Field::PayloadLength);
        v[6..8].copy_from_slice(&[0, 0]);
        assert_eq!(field_of(&v), Field::DstGpu);
        v[..2].copy_from_slice(&[0, 1]);
        assert_eq!(field_of(&v), Field::SrcGpu);
        v[2..4].copy_from_slice(&[0, 2]);
        assert_eq!(field_of(&v), Field::TxnCount);
        v[5] = 1;
        let e = DataRepr::parse(&v).unwrap_err();
        assert_eq!((e.field, e.spec), (Field::PayloadLength, "WIRE-5-7"));
        // In a whole frame, bytes beyond the padding come before the header's field values.
        let mut frame = vec![0u8; 68];
        frame[..14].copy_from_slice(&[2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x88, 0xB5]);
        frame[14] = 0x10;
        frame[20..28].copy_from_slice(&[0xFF, 0xFF, 0xFF, 0xFF, 0x31, 0, 0, 8]);
        let n = frame.len() - 4;
        let f = crate::fcs::fcs_bytes(&frame[..n]);
        frame[n..].copy_from_slice(&f);
        let e = FrameRepr::parse_bytes(&frame, MAX_FRAME_LEN).unwrap_err();
        assert_eq!((e.field, e.spec), (Field::Padding, "WIRE-2.4-3"));
        assert_eq!(e.discard(), Some(Discard::MalformedFrame));
    }

    //= type=test
    //# WIRE-6.1-3 (structural error) If fewer than 8 bytes of payload remain where a transaction
    //# should start (none at all included: the count announces more transactions than the payload
    //# holds, even when the payload ends exactly where a transaction ends), if hlen is less than 2,
    //# or if 4*hlen + roundup4(dlen) runs past the end of the payload, the receiver cannot find the
    //# next transaction. It MUST discard this transaction and every later transaction of the frame
    //# and count one malformed transaction (malformed_txns).
    //# WIRE-6.1-11 A receiver MUST process normally every transaction of a frame that comes before
    //# a structural error (WIRE-6.1-3, WIRE-6.1-4). (Split from WIRE-6.1-3 in 1.1.)
    #[test]
    fn structural_errors_end_the_walk() {
        let fence = &PAYLOAD[56..64];
        let rest = |kind, field, offset, spec| (kind, field, offset, spec, Action::DiscardRest);
        let tuple = |e: Error| (e.kind, e.field, e.offset, e.spec, e.action);
        // Each case: the transactions after a good FENCE, and the error expected at offset 16.
        type Want = (ErrorKind, Field, usize, &'static str, Action);
        let cases: [(Vec<u8>, Want); 6] = [
            // Fewer than 8 bytes left.
            (
                fence[..7].to_vec(),
                rest(ErrorKind::Truncated, Field::TxnPrefix, 16, "WIRE-6.1-3"),
            ),
            // hlen 0 and 1.
            (
                vec![0x06, 0, 0, 1, 0, 0, 0, 0],
                rest(ErrorKind::OutOfRange, Field::Hlen, 20, "WIRE-6.1-3"),
            ),
            (
                vec![0x06, 0, 0, 1, 1, 0, 0, 0],
                rest(ErrorKind::OutOfRange, Field::Hlen, 20, "WIRE-6.1-3"),
            ),
            // The header runs past the end: the error names hlen.
            (
                vec![0x06, 0, 0, 1, 3, 0, 0, 0],
                rest(ErrorKind::Inconsistent, Field::Hlen, 20, "WIRE-6.1-3"),
            ),
            // The data runs past the end.
            (
                vec![0x81, 0, 0, 1, 2, 0, 0, 1],
                rest(ErrorKind::Inconsistent, Field::Dlen, 22, "WIRE-6.1-3"),
            ),
            // The data fits but its padding does not.
            (
                vec![0x81, 0, 0, 1, 2, 0, 0, 1, 0xAB],
                rest(ErrorKind::Inconsistent, Field::Dlen, 22, "WIRE-6.1-3"),
            ),
        ];
        for (tail, want) in cases {
            let mut txns = fence.to_vec();
            txns.extend_from_slice(&tail);
            // Count 3: the FENCE, the broken transaction, and one that is never reached.
            let bytes = raw_payload(3, u16::try_from(txns.len()).unwrap(), &txns);
            let data = DataRepr::parse(&bytes).unwrap();
            let mut it = data.txns.iter();
            assert_eq!(it.next(), Some(Ok(TxnRepr::Fence { tag: 3 })));
            let e = err_of(it.next());
            assert_eq!(tuple(e), want);
            assert!(!e.action.continues());
            assert!(!e.action.nacks());
            assert_eq!(it.next(), None);
            assert_eq!(it.next(), None);
        }
    }

    //= type=test
    //# WIRE-6.1-4 If bytes of the payload remain after the last transaction the count
    //# announces, the receiver MUST discard them as in WIRE-6.1-3.
    //# WIRE-6.1-3 (structural error) If fewer than 8 bytes of payload remain where a transaction
    //# should start (none at all included: the count announces more transactions than the payload
    //# holds, even when the payload ends exactly where a transaction ends), if hlen is less than 2,
    //# or if 4*hlen + roundup4(dlen) runs past the end of the payload, the receiver cannot find the
    //# next transaction. It MUST discard this transaction and every later transaction of the frame
    //# and count one malformed transaction (malformed_txns).
    #[test]
    fn count_and_length_disagree() {
        // Count 2, three transactions: the third is discarded.
        let mut v = PAYLOAD.to_vec();
        v[5] = 2;
        let data = DataRepr::parse(&v).unwrap();
        let items: Vec<_> = data.txns.iter().collect();
        assert_eq!(items.len(), 3);
        assert!(items[0].is_ok() && items[1].is_ok());
        let e = items[2].unwrap_err();
        assert_eq!(
            (e.kind, e.field, e.offset, e.spec, e.action),
            (
                ErrorKind::Inconsistent,
                Field::TxnCount,
                56,
                "WIRE-6.1-4",
                Action::DiscardRest
            )
        );
        // Count 4, three transactions ending exactly at the payload's end: no byte remains
        // where the fourth should start, a structural error of WIRE-6.1-3.
        v[5] = 4;
        let data = DataRepr::parse(&v).unwrap();
        let items: Vec<_> = data.txns.iter().collect();
        assert_eq!(items.len(), 4);
        let e = items[3].unwrap_err();
        assert_eq!(
            (e.kind, e.field, e.offset, e.spec, e.action),
            (
                ErrorKind::Truncated,
                Field::TxnPrefix,
                64,
                "WIRE-6.1-3",
                Action::DiscardRest
            )
        );
        assert_eq!(e.discard(), Some(Discard::MalformedTxn));
        // One extra byte after the last transaction, inside the payload length.
        let mut extra = raw_payload(1, 9, &PAYLOAD[56..64]);
        extra.push(0);
        let data = DataRepr::parse(&extra).unwrap();
        let items: Vec<_> = data.txns.iter().collect();
        assert_eq!(items[0], Ok(TxnRepr::Fence { tag: 3 }));
        assert_eq!(items[1].unwrap_err().field, Field::TxnCount);
        assert_eq!(items[1].unwrap_err().offset, 16);
        // Bytes after the payload length belong to no transaction and are not read here.
        let mut after = raw_payload(1, 8, &PAYLOAD[56..64]);
        after.extend_from_slice(&[0xFF; 4]);
        let data = DataRepr::parse(&after).unwrap();
        assert_eq!(
            data.txns.iter().collect::<Vec<_>>(),
            [Ok(TxnRepr::Fence { tag: 3 })]
        );
        assert_eq!(data.buffer_len(), 16);
    }

    //= type=test
    //# WIRE-6.1-3 (structural error) If fewer than 8 bytes of payload remain where a transaction
    //# should start (none at all included: the count announces more transactions than the payload
    //# holds, even when the payload ends exactly where a transaction ends), if hlen is less than 2,
    //# or if 4*hlen + roundup4(dlen) runs past the end of the payload, the receiver cannot find the
    //# next transaction. It MUST discard this transaction and every later transaction of the frame
    //# and count one malformed transaction (malformed_txns).
    #[test]
    fn every_transaction_truncated_or_extended() {
        for (name, b, repr) in vectors() {
            if b.len() - 1 < PREFIX_LEN {
                // A payload shorter than 8 bytes is a malformed network header (WIRE-5-7).
                continue;
            }
            let short = raw_payload(1, u16::try_from(b.len() - 1).unwrap(), &b[..b.len() - 1]);
            let data = DataRepr::parse_at(&short, 20).unwrap();
            let mut it = data.txns.iter();
            let e = err_of(it.next());
            let hdr_len = usize::from(b[4]) * 4;
            let (field, offset) = if b.len() - 1 < PREFIX_LEN {
                (Field::TxnPrefix, 28)
            } else if b.len() - 1 < hdr_len {
                (Field::Hlen, 28 + 4)
            } else {
                (Field::Dlen, 28 + 6)
            };
            assert_eq!(
                (e.field, e.offset, e.spec, e.action),
                (field, offset, "WIRE-6.1-3", Action::DiscardRest),
                "{name}"
            );
            assert_eq!(it.next(), None, "{name}");

            let mut long_bytes = b.to_vec();
            long_bytes.push(0);
            let long = raw_payload(1, u16::try_from(b.len() + 1).unwrap(), &long_bytes);
            let data = DataRepr::parse_at(&long, 20).unwrap();
            let mut it = data.txns.iter();
            assert_eq!(it.next(), Some(Ok(repr)), "{name}");
            let e = err_of(it.next());
            assert_eq!(
                (e.field, e.offset, e.spec, e.action),
                (
                    Field::TxnCount,
                    28 + b.len(),
                    "WIRE-6.1-4",
                    Action::DiscardRest
                ),
                "{name}"
            );
            assert_eq!(it.next(), None, "{name}");
        }
    }

    //= type=test
    //# WIRE-6.1-5 [...] and go on with the next transaction.
    //# WIRE-6.1-6 [...] and go on with the next transaction.
    //# WIRE-6.1-7 [...] the receiver goes on with the next transaction.
    #[test]
    fn bad_transactions_do_not_stop_the_walk() {
        let load_len0: Vec<u8> = {
            let mut v = PAYLOAD[8..32].to_vec();
            v[20..22].fill(0);
            v
        };
        let unknown_req = [0x7F, 0, 0, 0x44, 2, 0, 0, 0];
        let bad_resp = [0x82, 0, 0, 0x45, 2, 0, 0, 4, 1, 2, 3, 4];
        let mut txns = Vec::new();
        for part in [&load_len0[..], &unknown_req, &bad_resp, &PAYLOAD[56..64]] {
            txns.extend_from_slice(part);
        }
        let bytes = raw_payload(4, u16::try_from(txns.len()).unwrap(), &txns);
        let data = DataRepr::parse(&bytes).unwrap();
        let items: Vec<_> = data.txns.iter().collect();
        assert_eq!(items.len(), 4);
        let e = items[0].unwrap_err();
        assert_eq!(
            (e.field, e.offset, e.action),
            (
                Field::LoadLength,
                8 + 20,
                Action::Respond {
                    opcode: 0x81,
                    tag: 1,
                    status: Status::Malformed
                }
            )
        );
        let TxnRepr::Unknown { opcode, tag, .. } = items[1].unwrap() else {
            panic!("not unknown")
        };
        assert_eq!((opcode, tag), (0x7F, 0x44));
        let e = items[2].unwrap_err();
        assert_eq!(
            (e.field, e.offset, e.action),
            (Field::Dlen, 8 + 32 + 6, Action::DiscardTxn)
        );
        assert_eq!(items[3], Ok(TxnRepr::Fence { tag: 3 }));
        assert_eq!(Opcode::from_u8(0x7F).hlen(), None);
    }

    fn eth() -> EthernetRepr {
        EthernetRepr {
            dst: MacAddr::LINK_LOCAL,
            src: MacAddr([2, 0, 0, 0, 0, 1]),
            vlan: None,
        }
    }

    /// A whole DATA frame carrying four 64 B STOREs, written from the spec: 14 + 6 + 8 + 4 * 84
    /// + 4 = 368 B.
    #[test]
    fn four_stores_frame() {
        let data = [0x3Cu8; 64];
        let store = |tag| TxnRepr::Store {
            tag,
            target: TARGET,
            data: &data,
        };
        let txns = [store(1), store(2), store(3), store(4)];
        let repr = DataRepr {
            dst: gpu(1),
            src: gpu(2),
            path: PathId(0),
            txns: Txns::Slice(&txns),
        };
        let header = DataHeader {
            vc: Vc::new(1).unwrap(),
            flags: DataFlags::default(),
            seq: Seq::new(10),
        };
        assert_eq!(data_frame_len(&eth(), &repr), 368);
        let mut buf = vec![0xa5u8; 400];
        assert_eq!(emit_data_frame(&eth(), header, &repr, &mut buf), Ok(368));
        let frame = &buf[..368];
        assert_eq!(frame[12..14], [0x88, 0xB5]);
        assert_eq!(frame[14..20], [0x10, 0x20, 0, 0, 0, 10]);
        assert_eq!(frame[20..28], [0, 1, 0, 2, 0, 4, 0x01, 0x50]);
        for i in 0..4 {
            let t = &frame[28 + 84 * i..28 + 84 * (i + 1)];
            assert_eq!(
                t[..8],
                [0x02, 0x00, 0x00, (i + 1) as u8, 0x05, 0x00, 0x00, 0x40]
            );
            assert_eq!(
                t[8..20],
                [0x11, 0x22, 0x33, 0x44, 0, 0, 0, 1, 0, 0, 0x10, 0]
            );
            assert!(t[20..].iter().all(|&b| b == 0x3C));
        }
        assert!(buf[368..].iter().all(|&b| b == 0xa5));
        // It parses back to the same representations.
        let parsed = FrameRepr::parse_bytes(frame, MAX_FRAME_LEN).unwrap();
        let LinkFrame::Data { header: h, payload } = parsed.link else {
            panic!("not DATA")
        };
        assert_eq!(h, header);
        assert_eq!(DataRepr::parse(payload).unwrap(), repr);
        // The same frame via FrameRepr with the payload bytes.
        let via_repr = FrameRepr {
            eth: eth(),
            link: LinkFrame::Data { header, payload },
        };
        let mut again = vec![0u8; 368];
        assert_eq!(via_repr.emit(&mut again), Ok(368));
        assert_eq!(again, frame);
    }

    //= type=test
    //# WIRE-2.4-1 A transmitter MUST pad a frame whose content [...] is shorter than 60 B with
    //# zero bytes so that the frame with its FCS is exactly 64 B.
    #[test]
    fn small_data_frame_is_padded_with_zeros() {
        let txns = [TxnRepr::Fence { tag: 3 }];
        let repr = DataRepr {
            dst: gpu(5),
            src: gpu(9),
            path: PathId(0x31),
            txns: Txns::Slice(&txns),
        };
        let mut buf = [0xa5u8; 64];
        assert_eq!(
            emit_data_frame(&eth(), DataHeader::default(), &repr, &mut buf),
            Ok(64)
        );
        assert_eq!(buf[36..60], [0u8; 24]);
        assert!(Frame::new_checked(&buf[..], MAX_FRAME_LEN).is_ok());
    }

    //= type=test
    //# WIRE-2.4-2 A receiver MUST discard as a damaged frame (equivalent to an FCS error, §2.5) any
    //# frame shorter than 64 B or longer than the MFS in force (WIRE-2.4-6), and count it in
    //# rx_damaged.
    // The largest frame: 9216 B, one RDMA_WRITE segment of 9156 bytes, untagged; and 9212 tagged.
    #[test]
    fn largest_frame() {
        let data = vec![0x77u8; 9160];
        for (vlan, seg) in [
            (None, 9156usize),
            (Some(crate::frame::VlanTag::default()), 9152),
        ] {
            let eth = EthernetRepr { vlan, ..eth() };
            let write = |n: usize| {
                [TxnRepr::RdmaWrite {
                    tag: 1,
                    target: TARGET,
                    offset: 0,
                    total: 1 << 20,
                    data: &data[..n],
                }]
            };
            let txns = write(seg);
            let repr = DataRepr {
                dst: gpu(1),
                src: gpu(2),
                path: PathId(0),
                txns: Txns::Slice(&txns),
            };
            assert_eq!(data_frame_len(&eth, &repr), MAX_FRAME_LEN);
            let mut buf = vec![0u8; MAX_FRAME_LEN];
            assert_eq!(
                emit_data_frame(&eth, DataHeader::default(), &repr, &mut buf),
                Ok(MAX_FRAME_LEN)
            );
            let parsed = FrameRepr::parse_bytes(&buf, MAX_FRAME_LEN).unwrap();
            let LinkFrame::Data { payload, .. } = parsed.link else {
                panic!("not DATA")
            };
            assert_eq!(DataRepr::parse(payload).unwrap(), repr);
            // On a link with a smaller MFS the same frame is damaged.
            let e = Frame::new_checked(&buf[..], 9000).unwrap_err();
            assert_eq!((e.field, e.action), (Field::Frame, Action::DiscardDamaged));
            // One byte more of data makes a frame of 9220 B that cannot be sent.
            let txns = write(seg + 1);
            let repr = DataRepr {
                txns: Txns::Slice(&txns),
                ..repr
            };
            assert_eq!(
                emit_data_frame(&eth, DataHeader::default(), &repr, &mut buf),
                Err(EmitError::TooLong {
                    len: MAX_FRAME_LEN + 4,
                    mfs: MAX_FRAME_LEN
                })
            );
        }
        // A buffer one byte short.
        let txns = [TxnRepr::Fence { tag: 0 }];
        let repr = DataRepr {
            dst: gpu(1),
            src: gpu(2),
            path: PathId(0),
            txns: Txns::Slice(&txns),
        };
        let mut buf = [0u8; 63];
        assert_eq!(
            emit_data_frame(&eth(), DataHeader::default(), &repr, &mut buf),
            Err(EmitError::BufferTooSmall {
                needed: 64,
                available: 63
            })
        );
    }

    //= type=test
    //# WIRE-5-9 A switch MUST NOT change the network header or the transactions of a frame it
    //# forwards.
    #[test]
    fn forwarding_keeps_the_payload() {
        // A switch parses the frame, rewrites the per-hop link header and re-emits: the payload
        // bytes are carried unchanged, whatever their transactions hold.
        let mut odd = PAYLOAD.to_vec();
        odd[13] = 0xEE; // a reserved prefix byte a switch must not clean
        let wire = DataRepr::parse(&odd).unwrap();
        let hop = DataHeader {
            vc: Vc::new(6).unwrap(),
            flags: DataFlags {
                replay: true,
                ack_req: false,
            },
            seq: Seq::new(77),
        };
        let mut out = vec![0u8; data_frame_len(&eth(), &wire)];
        let n = emit_data_frame(&eth(), hop, &wire, &mut out).unwrap();
        assert_eq!(n, 14 + 6 + 64 + 4);
        assert_eq!(out[20..84], odd[..]);
        let parsed = FrameRepr::parse_bytes(&out, MAX_FRAME_LEN).unwrap();
        assert_eq!(
            parsed.link,
            LinkFrame::Data {
                header: hop,
                payload: &odd
            }
        );
        let fwd = DataRepr::parse(&odd).unwrap();
        assert_eq!((fwd.dst, fwd.path), (gpu(5), PathId(0x31)));
    }

    //= type=test
    //# WIRE-6.1-3 (structural error) If fewer than 8 bytes of payload remain where a transaction
    //# should start (none at all included: the count announces more transactions than the payload
    //# holds, even when the payload ends exactly where a transaction ends), if hlen is less than 2,
    //# or if 4*hlen + roundup4(dlen) runs past the end of the payload, the receiver cannot find the
    //# next transaction. It MUST discard this transaction and every later transaction of the frame
    //# and count one malformed transaction (malformed_txns).
    // The crate contract: no function panics on any input, including an error-offset base near
    // `usize::MAX` (found by the fuzz target: the offset arithmetic overflowed).
    #[test]
    fn parse_at_with_huge_base_does_not_overflow() {
        // Network header (dst 1, src 2, path 0, count 2, payload 16), a FENCE with hlen 9.
        let payload = [
            0x00, 0x01, 0x00, 0x02, 0x00, 0x02, 0x00, 0x10, //
            0x06, 0x00, 0x00, 0x01, 0x09, 0x00, 0x00, 0x00, //
            0x06, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00,
        ];
        for base in [usize::MAX, usize::MAX - 8, usize::MAX - 16] {
            let data = DataRepr::parse_at(&payload, base).unwrap();
            let errs: Vec<_> = data.txns.iter().collect();
            assert_eq!(errs.len(), 1);
            let e = errs[0].unwrap_err();
            assert_eq!(
                (e.field, e.spec, e.action),
                (Field::Hlen, "WIRE-6.1-3", Action::DiscardRest)
            );
            assert_eq!(e.offset, base.saturating_add(8 + 4));
            // A header error of the network header too.
            let mut bad = payload;
            bad[2..4].copy_from_slice(&[0xFF, 0xFF]);
            let e = DataRepr::parse_at(&bad, base).unwrap_err();
            assert_eq!((e.field, e.offset), (Field::SrcGpu, base.saturating_add(2)));
        }
        // A transaction-level error (LOAD with length 0) at a huge base.
        let load = [
            0x00, 0x01, 0x00, 0x02, 0x00, 0x01, 0x00, 0x18, //
            0x01, 0x00, 0x00, 0x07, 0x06, 0x00, 0x00, 0x00, //
            0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x10, 0, 0x00, 0x00, 0, 0,
        ];
        let data = DataRepr::parse_at(&load, usize::MAX - 4).unwrap();
        let e = data.txns.iter().next().unwrap().unwrap_err();
        assert_eq!((e.field, e.offset), (Field::LoadLength, usize::MAX));
    }
}

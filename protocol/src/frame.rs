//! Frames: Ethernet II framing (wire.md §2), the link header (§3) and control frames (§4).
//!
//! Parsing is two-stage, as a link-layer receiver works:
//! 1. [`Frame::new_checked`] checks what every frame must satisfy before any field may be trusted:
//!    its size, its FCS, the EtherType, the version and the kind. After it succeeds the link header
//!    can be read (a link layer takes the sequence number from here) and no accessor panics.
//! 2. [`FrameRepr::parse`] validates the body for the frame's kind and yields an owned
//!    representation. A DATA frame's payload (network header and transactions) stays borrowed and
//!    is parsed by [`crate::DataRepr::parse`].

use zerocopy::byteorder::network_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::{Action, EmitError, Error, ErrorKind, Field};
use crate::fcs::{self, FCS_LEN, FcsStatus};
use crate::types::{Capabilities, MacAddr, Role, Seq, Vc};

/// The EthLink EtherType (WIRE-2.1-1).
pub const ETHERTYPE: u16 = 0x88B5;
/// The 802.1Q tag protocol identifier.
pub const TPID_8021Q: u16 = 0x8100;
/// Smallest frame, destination MAC through FCS.
pub const MIN_FRAME_LEN: usize = 64;
/// Largest frame any EthLink port supports.
pub const MAX_FRAME_LEN: usize = 9216;
/// Smallest configurable maximum frame size.
pub const MIN_MFS: usize = 320;
/// Length of an untagged Ethernet header.
pub const ETH_HEADER_LEN: usize = 14;
/// Length of an 802.1Q tag.
pub const VLAN_TAG_LEN: usize = 4;
/// Length of the link header.
pub const LINK_HEADER_LEN: usize = 6;
/// Length of a CF or CC body.
pub const CREDIT_BODY_LEN: usize = 36;
/// Length of an INIT or INIT_ECHO body.
pub const INIT_BODY_LEN: usize = 52;
/// Bytes on the wire around every frame: preamble and SFD (8) and the inter-frame gap (12).
pub const WIRE_OVERHEAD: usize = 20;

/// Link header flag: the frame is a retransmission (WIRE-3-5).
pub const FLAG_REPLAY: u8 = 0x01;
/// Link header flag: please ACK now (WIRE-3-6).
pub const FLAG_ACK_REQ: u8 = 0x02;

/// The frame kinds of the link header (wire.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameKind {
    /// A sequenced frame carrying transactions.
    Data,
    /// Cumulative acknowledgement.
    Ack,
    /// Negative acknowledgement.
    Nack,
    /// Credit update.
    CreditUpdate,
    /// Credit resync.
    CreditResync,
    /// Link initialisation.
    Init,
    /// Answer to INIT.
    InitEcho,
}

impl FrameKind {
    /// The kind encoded as `v`, `None` for 0x7..=0xF (unknown kinds, WIRE-3-3).
    pub const fn from_u8(v: u8) -> Option<Self> {
        match v {
            0 => Some(FrameKind::Data),
            1 => Some(FrameKind::Ack),
            2 => Some(FrameKind::Nack),
            3 => Some(FrameKind::CreditUpdate),
            4 => Some(FrameKind::CreditResync),
            5 => Some(FrameKind::Init),
            6 => Some(FrameKind::InitEcho),
            _ => None,
        }
    }

    /// The encoding.
    pub const fn to_u8(self) -> u8 {
        match self {
            FrameKind::Data => 0,
            FrameKind::Ack => 1,
            FrameKind::Nack => 2,
            FrameKind::CreditUpdate => 3,
            FrameKind::CreditResync => 4,
            FrameKind::Init => 5,
            FrameKind::InitEcho => 6,
        }
    }

    /// Upper-case name as the spec writes it.
    pub const fn name(self) -> &'static str {
        match self {
            FrameKind::Data => "DATA",
            FrameKind::Ack => "ACK",
            FrameKind::Nack => "NACK",
            FrameKind::CreditUpdate => "CF",
            FrameKind::CreditResync => "CC",
            FrameKind::Init => "INIT",
            FrameKind::InitEcho => "INIT_ECHO",
        }
    }

    /// Size of the body of a control kind, `None` for DATA (variable).
    pub const fn control_body_len(self) -> Option<usize> {
        match self {
            FrameKind::Data => None,
            FrameKind::Ack | FrameKind::Nack => Some(0),
            FrameKind::CreditUpdate | FrameKind::CreditResync => Some(CREDIT_BODY_LEN),
            FrameKind::Init | FrameKind::InitEcho => Some(INIT_BODY_LEN),
        }
    }
}

//= docs/spec/wire.md#11-byte-and-bit-order
//# WIRE-1.1-1 All multi-byte header fields MUST be transmitted in network byte order (most
//# significant byte first).
// Every multi-byte field of every header struct in this crate is a zerocopy `network_endian`
// integer, so both reading and writing are big-endian by construction.

/// Zero-copy view of the 6-byte link header.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct LinkHeader {
    ver_kind: u8,
    vc_flags: u8,
    seq: U32,
}

impl LinkHeader {
    /// The version nibble.
    pub fn version(&self) -> u8 {
        self.ver_kind >> 4
    }
    /// The raw kind nibble.
    pub fn kind_raw(&self) -> u8 {
        self.ver_kind & 0x0F
    }
    /// The kind, `None` for unknown kinds.
    pub fn kind(&self) -> Option<FrameKind> {
        FrameKind::from_u8(self.kind_raw())
    }
    /// The VC field (meaningful for DATA only).
    pub fn vc(&self) -> Vc {
        // Three bits always fit a VC.
        Vc::new(self.vc_flags >> 5).unwrap_or_default()
    }
    /// The five flag bits (meaningful for DATA only).
    pub fn flags(&self) -> u8 {
        self.vc_flags & 0x1F
    }
    /// The 20-bit sequence field; the 12 reserved bits above it are ignored (WIRE-1.2-2).
    pub fn seq(&self) -> Seq {
        Seq::new(self.seq.get())
    }
    fn set(&mut self, kind: FrameKind, vc: Vc, flags: u8, seq: Seq) {
        //= docs/spec/wire.md#3-link-header
        //# WIRE-3-1 A transmitter MUST set the version to 1.
        self.ver_kind = (1 << 4) | kind.to_u8();
        self.vc_flags = (vc.value() << 5) | (flags & 0x1F);
        self.seq = U32::new(seq.value());
    }
}

/// Zero-copy view of a CF or CC body.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct CreditBody {
    mask: u8,
    reserved: [u8; 3],
    counters: [U32; 8],
}

/// Zero-copy view of an INIT or INIT_ECHO body.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct InitBody {
    nonce: U32,
    echo_nonce: U32,
    vcs: u8,
    credit_overhead: u8,
    credit_size: U16,
    mfs: U16,
    caps: U16,
    window: U32,
    credits: [U32; 8],
}

/// An 802.1Q tag's control information.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VlanTag {
    /// Priority code point, 0..=7.
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN id, 0..=4095.
    pub vid: u16,
}

impl VlanTag {
    fn from_tci(tci: u16) -> Self {
        VlanTag {
            pcp: (tci >> 13) as u8,
            dei: tci & 0x1000 != 0,
            vid: tci & 0x0FFF,
        }
    }
    fn tci(self) -> u16 {
        (u16::from(self.pcp & 7) << 13) | (u16::from(self.dei) << 12) | (self.vid & 0x0FFF)
    }
}

/// The Ethernet part of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EthernetRepr {
    /// Destination MAC address.
    pub dst: MacAddr,
    /// Source MAC address.
    pub src: MacAddr,
    /// The optional 802.1Q tag.
    pub vlan: Option<VlanTag>,
}

impl EthernetRepr {
    /// Length of the Ethernet header this representation emits.
    pub const fn header_len(&self) -> usize {
        if self.vlan.is_some() {
            ETH_HEADER_LEN + VLAN_TAG_LEN
        } else {
            ETH_HEADER_LEN
        }
    }

    /// Writes the Ethernet header into the start of `buf`, which must hold `header_len()` bytes.
    fn emit(&self, buf: &mut [u8]) -> Result<(), EmitError> {
        if let Some(tag) = self.vlan
            && (tag.pcp > 7 || tag.vid > 0x0FFF)
        {
            return Err(EmitError::Invalid(Field::Vlan));
        }
        let len = self.header_len();
        let available = buf.len();
        let out = buf.get_mut(..len).ok_or(EmitError::BufferTooSmall {
            needed: len,
            available,
        })?;
        let (macs, rest) = out.split_at_mut(12);
        let (dst, src) = macs.split_at_mut(6);
        dst.copy_from_slice(&self.dst.0);
        src.copy_from_slice(&self.src.0);
        match self.vlan {
            Some(tag) => {
                let [a, b] = TPID_8021Q.to_be_bytes();
                let [c, d] = tag.tci().to_be_bytes();
                let [e, f] = ETHERTYPE.to_be_bytes();
                rest.copy_from_slice(&[a, b, c, d, e, f]);
            }
            None => rest.copy_from_slice(&ETHERTYPE.to_be_bytes()),
        }
        Ok(())
    }
}

fn be16(bytes: &[u8], at: usize) -> Option<u16> {
    let end = at.checked_add(2)?;
    let b: [u8; 2] = bytes.get(at..end)?.try_into().ok()?;
    Some(u16::from_be_bytes(b))
}

/// A checked view of a whole frame, destination MAC through FCS.
///
/// Once [`Frame::new_checked`] has succeeded, the frame has a good FCS, is between 64 B and the
/// link's MFS, is EthLink (EtherType 0x88B5), version 1, and of a known kind; no accessor panics.
#[derive(Debug, Clone, Copy)]
pub struct Frame<B> {
    buf: B,
    eth_len: usize,
    /// 4 when `buf` ends with the FCS, 0 when the MAC has checked and stripped it.
    fcs_len: usize,
}

//= docs/spec/wire.md#7-receive-pipeline
//# WIRE-7-6 A report of a discard that names a requirement (a decoder's verdict, a conformance
//# verdict, a trace) MUST name the first id of the discard's row in Table WIRE-T1: the rule the
//# frame broke; the other ids of the row say what the receiver does with it.
// Every error below carries the first id of its row: WIRE-2.4-2, WIRE-2.5-3, WIRE-2.5-5,
// WIRE-2.1-2, WIRE-3-2, WIRE-3-3, then WIRE-4-1 and WIRE-4.5-1 for control bodies, WIRE-2.4-3
// and WIRE-5-3 for DATA payloads, WIRE-6.1-3 for transactions.
impl<B: AsRef<[u8]>> Frame<B> {
    /// Checks the frame-level requirements of wire.md §2 and §3, in the order of the receive
    /// pipeline (wire.md §7): size (WIRE-2.4-2), FCS (WIRE-2.5-3, stomped WIRE-2.5-5),
    /// EtherType (WIRE-2.1-2), version (WIRE-3-2) and kind (WIRE-3-3). `mfs` is the maximum frame
    /// size in force on the link: the receiver's own configured MFS until the link is UP, the
    /// agreed MFS after (WIRE-2.4-6).
    ///
    /// For a DATA frame this is the whole of what the link layer judges before it accepts the
    /// frame's sequence number (WIRE-7-3): everything [`FrameRepr::parse`] and
    /// [`crate::DataRepr::parse`] find wrong afterwards is found after acceptance.
    //= docs/spec/wire.md#24-frame-size-and-padding
    //# WIRE-2.4-6 Until the link is UP a receiver MUST judge a frame's size against its own
    //# configured MFS; once the link is UP, against the MFS agreed at bring-up.
    pub fn new_checked(buf: B, mfs: usize) -> Result<Self, Error> {
        Self::check(buf, mfs, FCS_LEN, None)
    }

    /// As [`Frame::new_checked`] for a frame, FCS included, whose FCS the receiving MAC has
    /// already judged: `fcs` takes the place of computing the CRC again, and every other check is
    /// the same. A caller that passes [`FcsStatus::Good`] for bytes whose FCS does not match
    /// gets a frame that [`Frame::new_checked`] would have refused.
    pub fn new_checked_fcs(buf: B, mfs: usize, fcs: FcsStatus) -> Result<Self, Error> {
        Self::check(buf, mfs, FCS_LEN, Some(fcs))
    }

    /// As [`Frame::new_checked`] for a frame whose FCS a MAC has already checked and removed
    /// (as NICs and most captures hand frames up): `buf` ends with the last padding byte. Sizes
    /// are checked as if the four FCS bytes were still there; every other check is the same.
    pub fn new_checked_without_fcs(buf: B, mfs: usize) -> Result<Self, Error> {
        Self::check(buf, mfs, 0, None)
    }

    /// The checks; `known` is the FCS status a MAC already judged, `None` to compute it.
    fn check(buf: B, mfs: usize, fcs_len: usize, known: Option<FcsStatus>) -> Result<Self, Error> {
        let bytes = buf.as_ref();
        // The frame's length on the wire, FCS included.
        let len = bytes.len().saturating_add(FCS_LEN - fcs_len);
        //= docs/spec/wire.md#24-frame-size-and-padding
        //# WIRE-2.4-2 A receiver MUST discard as a damaged frame (equivalent to an FCS error, §2.5)
        //# any frame shorter than 64 B or longer than the MFS in force (WIRE-2.4-6), and count it
        //# in rx_damaged.
        if len < MIN_FRAME_LEN {
            return Err(Error::new(
                ErrorKind::Truncated,
                Field::Frame,
                len,
                "WIRE-2.4-2",
                Action::DiscardDamaged,
            ));
        }
        if len > mfs.min(MAX_FRAME_LEN) {
            return Err(Error::new(
                ErrorKind::OutOfRange,
                Field::Frame,
                len,
                "WIRE-2.4-2",
                Action::DiscardDamaged,
            ));
        }
        //= docs/spec/wire.md#7-receive-pipeline
        //# WIRE-7-1 A receiver MUST apply the stages of the receive pipeline in the order of
        //# Figure WIRE-F1 and discard a frame at the first stage it fails.
        //= docs/spec/wire.md#25-frame-check-sequence
        //# WIRE-2.5-3 A receiver MUST check the FCS before it interprets any other field.
        // A MAC that has judged the FCS already says what it found; otherwise compute it.
        let status = match known {
            _ if fcs_len != FCS_LEN => FcsStatus::Good,
            Some(s) => s,
            None if fcs::check(bytes) => FcsStatus::Good,
            None if fcs::is_stomped(bytes) => FcsStatus::Stomped,
            None => FcsStatus::Bad,
        };
        if status != FcsStatus::Good {
            //= docs/spec/wire.md#25-frame-check-sequence
            //# WIRE-2.5-5 A receiver MUST discard a frame that ends with a stomped FCS without
            //# interpreting any of its fields, count it in rx_stomped, and MUST NOT treat it as a
            //# damaged frame: it causes no NACK and takes no sequence number.
            if status == FcsStatus::Stomped {
                return Err(Error::new(
                    ErrorKind::StompedFcs,
                    Field::Fcs,
                    len.saturating_sub(FCS_LEN),
                    "WIRE-2.5-5",
                    Action::DiscardStomped,
                ));
            }
            //= docs/spec/wire.md#25-frame-check-sequence
            //# WIRE-2.5-6 A receiver MUST discard a frame with a bad FCS without interpreting
            //# any of its fields and count it in `rx_fcs_errors`.
            return Err(Error::new(
                ErrorKind::BadFcs,
                Field::Fcs,
                len.saturating_sub(FCS_LEN),
                "WIRE-2.5-3",
                Action::DiscardDamaged,
            ));
        }
        //= docs/spec/wire.md#21-ethertype
        //# WIRE-2.1-2 A receiver MUST discard a frame whose EtherType (after at most one 802.1Q
        //# tag) is not 0x88B5 and count it in `rx_foreign`.
        //= docs/spec/wire.md#21-ethertype
        //# WIRE-2.1-3 A foreign frame is not a link error: it MUST NOT cause a NACK.
        //= docs/spec/wire.md#45-init-kind-0x5-and-init_echo-kind-0x6
        //# WIRE-4.5-8 Every receiver MUST accept tagged frames (WIRE-2.2-1) and frames that
        //# carry more than one transaction, whatever capabilities it or its peer announced.
        let mut eth_len = ETH_HEADER_LEN;
        let mut ethertype = be16(bytes, 12).unwrap_or(0);
        if ethertype == TPID_8021Q {
            eth_len = ETH_HEADER_LEN + VLAN_TAG_LEN;
            ethertype = be16(bytes, 16).unwrap_or(0);
        }
        if ethertype != ETHERTYPE {
            return Err(Error::new(
                ErrorKind::Unknown,
                Field::EtherType,
                eth_len - 2,
                "WIRE-2.1-2",
                Action::DiscardForeign,
            ));
        }
        let (link, _) = bytes
            .get(eth_len..)
            .and_then(|b| LinkHeader::ref_from_prefix(b).ok())
            .ok_or(Error::new(
                ErrorKind::Truncated,
                Field::Frame,
                eth_len,
                "WIRE-2.4-2",
                Action::DiscardDamaged,
            ))?;
        //= docs/spec/wire.md#3-link-header
        //# WIRE-3-2 A receiver MUST discard a frame whose version is not 1 and count it in
        //# `rx_bad_version`.
        //= docs/spec/wire.md#3-link-header
        //# WIRE-3-8 A frame discarded by WIRE-3-2 MUST NOT cause a NACK.
        if link.version() != 1 {
            return Err(Error::new(
                ErrorKind::Unknown,
                Field::Version,
                eth_len,
                "WIRE-3-2",
                Action::DiscardMalformed,
            ));
        }
        //= docs/spec/wire.md#3-link-header
        //# WIRE-3-3 A receiver MUST discard a frame whose kind is 0x7..0xF and count it in
        //# `rx_unknown_kind`.
        //= docs/spec/wire.md#3-link-header
        //# WIRE-3-9 A frame discarded by WIRE-3-3 MUST NOT cause a NACK.
        if link.kind().is_none() {
            return Err(Error::new(
                ErrorKind::Unknown,
                Field::Kind,
                eth_len,
                "WIRE-3-3",
                Action::DiscardMalformed,
            ));
        }
        Ok(Frame {
            buf,
            eth_len,
            fcs_len,
        })
    }

    fn bytes(&self) -> &[u8] {
        self.buf.as_ref()
    }

    /// Length of the whole frame including the FCS (also for a frame received without it).
    pub fn len(&self) -> usize {
        self.bytes().len() + (FCS_LEN - self.fcs_len)
    }

    /// Whether the buffer holds the FCS ([`Frame::new_checked`]) or not
    /// ([`Frame::new_checked_without_fcs`]).
    pub fn has_fcs(&self) -> bool {
        self.fcs_len == FCS_LEN
    }

    /// Always false: a checked frame is at least 64 bytes.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Length of the Ethernet header (14, or 18 with an 802.1Q tag).
    pub fn ethernet_header_len(&self) -> usize {
        self.eth_len
    }

    /// The Ethernet header fields.
    pub fn ethernet(&self) -> EthernetRepr {
        let b = self.bytes();
        let mac = |at: usize| {
            let mut m = [0u8; 6];
            if let Some(src) = b.get(at..at + 6) {
                m.copy_from_slice(src);
            }
            MacAddr(m)
        };
        let vlan = if self.eth_len > ETH_HEADER_LEN {
            be16(b, 14).map(VlanTag::from_tci)
        } else {
            None
        };
        EthernetRepr {
            dst: mac(0),
            src: mac(6),
            vlan,
        }
    }

    /// The link header.
    pub fn link_header(&self) -> &LinkHeader {
        // new_checked has proven the header is present; the fallback is never taken.
        self.bytes()
            .get(self.eth_len..)
            .and_then(|b| LinkHeader::ref_from_prefix(b).ok())
            .map(|(h, _)| h)
            .unwrap_or(&EMPTY_LINK_HEADER)
    }

    /// The kind (known, by construction).
    pub fn kind(&self) -> FrameKind {
        self.link_header().kind().unwrap_or(FrameKind::Data)
    }

    /// Everything between the link header and the FCS, padding included.
    pub fn body(&self) -> &[u8] {
        self.bytes().get(self.body_range()).unwrap_or(&[])
    }

    fn body_range(&self) -> core::ops::Range<usize> {
        let start = self.eth_len + LINK_HEADER_LEN;
        let end = self.bytes().len().saturating_sub(self.fcs_len);
        start..end.max(start)
    }

    /// The FCS bytes as they appear on the wire; zeros for a frame received without its FCS.
    pub fn fcs(&self) -> [u8; FCS_LEN] {
        if !self.has_fcs() {
            return [0; FCS_LEN];
        }
        self.bytes()
            .last_chunk::<FCS_LEN>()
            .copied()
            .unwrap_or([0; FCS_LEN])
    }
}

impl<'a> Frame<&'a [u8]> {
    /// The body, borrowed for as long as the underlying bytes.
    pub fn body_slice(&self) -> &'a [u8] {
        let buf: &'a [u8] = self.buf;
        buf.get(self.body_range()).unwrap_or(&[])
    }
}

static EMPTY_LINK_HEADER: LinkHeader = LinkHeader {
    ver_kind: 0,
    vc_flags: 0,
    seq: U32::ZERO,
};

/// Flags of a DATA frame's link header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DataFlags {
    /// The frame is a retransmission (WIRE-3-5).
    //= docs/spec/wire.md#3-link-header
    //# WIRE-3-10 A receiver MUST treat a replayed frame exactly as the original: the REPLAY flag
    //# is for counting and tracing only.
    // The flag is reported and nothing else in this crate reads it.
    pub replay: bool,
    /// The transmitter asks for an immediate ACK (WIRE-3-6).
    pub ack_req: bool,
}

impl DataFlags {
    fn from_bits(bits: u8) -> Self {
        DataFlags {
            replay: bits & FLAG_REPLAY != 0,
            ack_req: bits & FLAG_ACK_REQ != 0,
        }
    }
    pub(crate) fn bits(self) -> u8 {
        (if self.replay { FLAG_REPLAY } else { 0 }) | (if self.ack_req { FLAG_ACK_REQ } else { 0 })
    }
}

/// The link header of a DATA frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DataHeader {
    /// Virtual channel.
    pub vc: Vc,
    /// Flags.
    pub flags: DataFlags,
    /// LLR sequence number.
    pub seq: Seq,
}

/// The body of a CF or CC frame: per-VC cumulative 20-bit credit counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CreditRepr {
    /// Counter of each VC, `None` when the VC is not in the mask. Values are taken modulo 2^20.
    pub counters: [Option<u32>; 8],
}

impl CreditRepr {
    fn parse(body: &CreditBody) -> Self {
        let mut counters = [None; 8];
        for (v, (out, c)) in counters.iter_mut().zip(body.counters.iter()).enumerate() {
            //= docs/spec/wire.md#43-cf-credit-update-kind-0x3
            //# WIRE-4.3-3 A receiver MUST ignore the entries of VCs not in the mask.
            if body.mask & (1 << v) != 0 {
                *out = Some(c.get() & Seq::MASK);
            }
        }
        CreditRepr { counters }
    }

    //= docs/spec/wire.md#43-cf-credit-update-kind-0x3
    //# WIRE-4.3-1 A transmitter MUST set the entries of VCs not in the mask to zero (they are
    //# reserved).
    fn emit(&self, body: &mut CreditBody) {
        body.mask = 0;
        body.reserved = [0; 3];
        for (v, (c, out)) in self
            .counters
            .iter()
            .zip(body.counters.iter_mut())
            .enumerate()
        {
            match c {
                Some(value) => {
                    body.mask |= 1 << v;
                    *out = U32::new(value & Seq::MASK);
                }
                None => *out = U32::ZERO,
            }
        }
    }
}

/// The parameters an INIT or INIT_ECHO frame announces (wire.md §4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InitRepr {
    /// The sender's nonce for this initialisation attempt.
    pub nonce: u32,
    /// Number of VCs, 1..=8.
    pub vcs: u8,
    /// Credit size in bytes, a power of two in 32..=2048.
    pub credit_size: u16,
    /// Maximum frame size, 320..=9216.
    pub mfs: u16,
    /// LLR window in frames, 1..=2^19.
    pub window: u32,
    /// Credits granted on each VC (entries at or above `vcs` are zero), each 1..2^19-1.
    pub credits: [u32; 8],
    /// Bytes the sender's receiver adds to a frame's length when it computes the frame's cost
    /// in credits (link.md LINK-5-1), 0..=255.
    pub credit_overhead: u8,
    /// The optional features the sender supports (classes.md §3).
    pub caps: Capabilities,
    /// The sender's role.
    pub role: Role,
}

/// A VC whose credit grant cannot carry one frame of the agreed MFS (WIRE-4.5-9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShortGrant {
    /// The VC.
    pub vc: u8,
    /// The credits the peer grants on it.
    pub grant: u32,
    /// The credits one frame of the agreed MFS costs.
    pub needed: u32,
}

impl core::fmt::Display for ShortGrant {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "VC {} grants {} credits, one frame of the agreed MFS needs {}",
            self.vc, self.grant, self.needed
        )
    }
}

impl InitRepr {
    //= docs/spec/wire.md#45-init-kind-0x5-and-init_echo-kind-0x6
    //# WIRE-4.5-5 A transmitter MUST compute the cost in credits of every DATA frame it sends to
    //# the peer from the credit size and the credit overhead the peer announced:
    //# `ceil((len + credit_overhead) / credit_size)`, `len` counted from the destination MAC
    //# through the FCS (link.md LINK-5-1).
    /// The credits a frame of `len` bytes (destination MAC through FCS) costs at the receiver
    /// that announced these parameters.
    pub const fn frame_cost(&self, len: usize) -> u32 {
        let size = if self.credit_size == 0 {
            1
        } else {
            self.credit_size as usize
        };
        let bytes = len.saturating_add(self.credit_overhead as usize);
        let cost = bytes.div_ceil(size);
        if cost > u32::MAX as usize {
            u32::MAX
        } else {
            cost as u32
        }
    }

    //= docs/spec/wire.md#45-init-kind-0x5-and-init_echo-kind-0x6
    //# WIRE-4.5-9 An end MUST NOT come UP on an INIT_ECHO, nor act on an INIT, whose credit grant
    //# on some agreed VC cannot carry one frame of the agreed MFS:
    //# `grant[v] < ceil((agreed MFS + credit overhead) / credit size)`, with the credit size and
    //# credit overhead announced in the same INIT or INIT_ECHO.
    /// Checks that the grant of each of the first `vcs` VCs carries one frame of `mfs` bytes
    /// (the agreed values); names the first VC that does not.
    pub fn check_grants(&self, vcs: u8, mfs: u16) -> Result<(), ShortGrant> {
        let needed = self.frame_cost(usize::from(mfs));
        for (v, grant) in self.credits.iter().enumerate().take(usize::from(vcs)) {
            if *grant < needed {
                return Err(ShortGrant {
                    vc: u8::try_from(v).unwrap_or(u8::MAX),
                    grant: *grant,
                    needed,
                });
            }
        }
        Ok(())
    }

    fn parse(body: &InitBody, offset: usize) -> Result<Self, Error> {
        //= docs/spec/wire.md#45-init-kind-0x5-and-init_echo-kind-0x6
        //# WIRE-4.5-4 A receiver MUST discard an INIT or INIT_ECHO whose fields are out of the
        //# ranges of WIRE-4.5-1, count it in `rx_malformed_control`, and MUST NOT bring the link
        //# up on it.
        let bad = |field, at: usize| {
            Error::new(
                ErrorKind::OutOfRange,
                field,
                offset + at,
                "WIRE-4.5-1",
                Action::DiscardMalformed,
            )
        };
        //= docs/spec/wire.md#45-init-kind-0x5-and-init_echo-kind-0x6
        //# WIRE-4.5-1 The number of VCs MUST be 1..8, the credit size a power of two in 32..2048,
        //# the MFS in 320..9216, the LLR window in 1..2^19, and the credit grant of each VC below the
        //# number of VCs 1..2^19 - 1.
        let vcs = body.vcs;
        if !(1..=8).contains(&vcs) {
            return Err(bad(Field::InitVcs, 8));
        }
        let credit_size = body.credit_size.get();
        if !(32..=2048).contains(&credit_size) || !credit_size.is_power_of_two() {
            return Err(bad(Field::InitCreditSize, 10));
        }
        let mfs = body.mfs.get();
        if !(MIN_MFS..=MAX_FRAME_LEN).contains(&usize::from(mfs)) {
            return Err(bad(Field::InitMfs, 12));
        }
        let window = body.window.get() & Seq::MASK;
        if !(1..=Seq::MAX_WINDOW).contains(&window) {
            return Err(bad(Field::InitWindow, 16));
        }
        let mut credits = [0u32; 8];
        for (v, (out, c)) in credits.iter_mut().zip(body.credits.iter()).enumerate() {
            if v < usize::from(vcs) {
                let value = c.get() & Seq::MASK;
                if value == 0 || value >= Seq::MAX_WINDOW {
                    return Err(bad(Field::InitCredits, 20 + 4 * v));
                }
                *out = value;
            }
        }
        Ok(InitRepr {
            nonce: body.nonce.get(),
            vcs,
            credit_size,
            mfs,
            window,
            credits,
            credit_overhead: body.credit_overhead,
            //= docs/spec/wire.md#45-init-kind-0x5-and-init_echo-kind-0x6
            //# WIRE-4.5-3 A receiver MUST ignore the capability bits this document does not
            //# define.
            caps: Capabilities::from_bits_truncate(body.caps.get()),
            // Role 3 is reserved: accepted and kept raw (WIRE-1.2-4).
            role: Role::from_code((body.caps.get() >> 14) as u8),
        })
    }

    /// Checks the ranges of WIRE-4.5-1 and names the first field out of range.
    //= docs/spec/wire.md#45-init-kind-0x5-and-init_echo-kind-0x6
    //# WIRE-4.5-1 The number of VCs MUST be 1..8, the credit size a power of two in 32..2048, the
    //# MFS in 320..9216, the LLR window in 1..2^19, and the credit grant of each VC below the
    //# number of VCs 1..2^19 - 1.
    pub fn validate(&self) -> Result<(), EmitError> {
        let bad = |f| Err(EmitError::Invalid(f));
        if !(1..=8).contains(&self.vcs) {
            return bad(Field::InitVcs);
        }
        if !(32..=2048).contains(&self.credit_size) || !self.credit_size.is_power_of_two() {
            return bad(Field::InitCreditSize);
        }
        if !(MIN_MFS..=MAX_FRAME_LEN).contains(&usize::from(self.mfs)) {
            return bad(Field::InitMfs);
        }
        if !(1..=Seq::MAX_WINDOW).contains(&self.window) {
            return bad(Field::InitWindow);
        }
        for (v, c) in self.credits.iter().enumerate() {
            // Entries at or above `vcs` are reserved: emitted as given would break the round trip,
            // so they must be zero in a representation.
            if v < usize::from(self.vcs) && (*c == 0 || *c >= Seq::MAX_WINDOW)
                || v >= usize::from(self.vcs) && *c != 0
            {
                return bad(Field::InitCredits);
            }
        }
        // Undefined capability bits are reserved: a representation holds only defined ones.
        if self.caps.bits() & !Capabilities::DEFINED.bits() != 0 {
            return bad(Field::InitCaps);
        }
        Ok(())
    }

    fn emit(&self, echo_nonce: u32, body: &mut InitBody) {
        body.nonce = U32::new(self.nonce);
        body.echo_nonce = U32::new(echo_nonce);
        body.vcs = self.vcs;
        body.credit_overhead = self.credit_overhead;
        body.credit_size = U16::new(self.credit_size);
        body.mfs = U16::new(self.mfs);
        //= docs/spec/wire.md#45-init-kind-0x5-and-init_echo-kind-0x6
        //# WIRE-4.5-6 A transmitter MUST set a capability bit only when it implements the feature
        //# the bit names, as classes.md defines it, and MUST set bits 13..6 to zero.
        //= docs/spec/wire.md#45-init-kind-0x5-and-init_echo-kind-0x6
        //# WIRE-4.5-7 A transmitter MUST set the role field to its own role (0, 1 or 2) and MUST
        //# NOT send the reserved role 3.
        body.caps = U16::new(self.caps.bits() | (u16::from(self.role.code()) << 14));
        body.window = U32::new(self.window);
        for (c, out) in self.credits.iter().zip(body.credits.iter_mut()) {
            *out = U32::new(*c);
        }
    }
}

/// What a frame carries, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkFrame<'a> {
    /// A sequenced DATA frame; `payload` is the network header and the transactions, exactly
    /// (padding removed), to be parsed by [`crate::DataRepr::parse`].
    Data {
        /// The link header fields.
        header: DataHeader,
        /// Network header and transactions.
        payload: &'a [u8],
    },
    /// ACK of every frame up to and including the sequence number (§4.1).
    Ack(Seq),
    /// NACK: last good sequence number (§4.2).
    Nack(Seq),
    /// CF: credits freed (§4.3).
    CreditUpdate(CreditRepr),
    /// CC: credits consumed (§4.4).
    CreditResync(CreditRepr),
    /// INIT (§4.5).
    Init(InitRepr),
    /// INIT_ECHO (§4.5).
    InitEcho {
        /// The nonce of the INIT answered.
        echo_nonce: u32,
        /// The answering end's parameters.
        init: InitRepr,
    },
}

impl LinkFrame<'_> {
    /// The frame kind.
    pub const fn kind(&self) -> FrameKind {
        match self {
            LinkFrame::Data { .. } => FrameKind::Data,
            LinkFrame::Ack(_) => FrameKind::Ack,
            LinkFrame::Nack(_) => FrameKind::Nack,
            LinkFrame::CreditUpdate(_) => FrameKind::CreditUpdate,
            LinkFrame::CreditResync(_) => FrameKind::CreditResync,
            LinkFrame::Init(_) => FrameKind::Init,
            LinkFrame::InitEcho { .. } => FrameKind::InitEcho,
        }
    }

    fn body_len(&self) -> usize {
        match self {
            LinkFrame::Data { payload, .. } => payload.len(),
            other => other.kind().control_body_len().unwrap_or(0),
        }
    }
}

/// A whole frame: Ethernet header, link header and body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FrameRepr<'a> {
    /// The Ethernet part.
    pub eth: EthernetRepr,
    /// The link part.
    pub link: LinkFrame<'a>,
}

/// Frame length (with FCS) for a header of `eth_len` and a body of `body_len`, padded to 64 B.
pub const fn frame_len(eth_len: usize, body_len: usize) -> usize {
    let unpadded = eth_len + LINK_HEADER_LEN + body_len + FCS_LEN;
    if unpadded < MIN_FRAME_LEN {
        MIN_FRAME_LEN
    } else {
        unpadded
    }
}

impl<'a> FrameRepr<'a> {
    /// Validates the body of a checked frame for its kind (WIRE-2.4-3, WIRE-4-1, WIRE-4.5-1,
    /// WIRE-5-3) and returns its representation. Offsets in errors are frame-relative.
    #[inline]
    pub fn parse(frame: &Frame<&'a [u8]>) -> Result<Self, Error> {
        let eth = frame.ethernet();
        let header = frame.link_header();
        let kind = frame.kind();
        let body: &'a [u8] = frame.body_slice();
        let body_offset = frame.ethernet_header_len() + LINK_HEADER_LEN;
        let malformed = |kind, field, at: usize, spec| {
            Error::new(
                kind,
                field,
                body_offset + at,
                spec,
                Action::DiscardMalformed,
            )
        };
        // How much of the body is content; the rest must be padding.
        let used = match kind.control_body_len() {
            Some(size) => {
                //= docs/spec/wire.md#4-control-frames
                //# WIRE-4-2 A receiver MUST discard a control frame whose body is shorter than
                //# its size, or that carries more bytes than that size plus the padding, and
                //# count it in `rx_malformed_control`; it MUST NOT cause a NACK.
                if body.len() < size {
                    return Err(malformed(
                        ErrorKind::Truncated,
                        Field::ControlBody,
                        body.len(),
                        "WIRE-4-1",
                    ));
                }
                size
            }
            None => {
                // The DATA frame has passed link-layer acceptance (WIRE-7-3): what follows is the
                // network-header stage, checked in the order of WIRE-5-8 (lengths first).
                //= docs/spec/wire.md#5-data-frames-the-network-header
                //# WIRE-5-3 A receiver MUST discard a DATA frame whose network header is
                //# incomplete, whose payload length runs past the end of the frame (before the
                //# FCS), whose destination or source GPU id is 0xFFFF, or whose transaction count
                //# is zero, and count it as a malformed frame.
                let payload_len = be16(body, 6).ok_or(malformed(
                    ErrorKind::Truncated,
                    Field::NetworkHeader,
                    0,
                    "WIRE-5-3",
                ))?;
                let used = crate::data::NETWORK_HEADER_LEN + usize::from(payload_len);
                if used > body.len() {
                    return Err(malformed(
                        ErrorKind::Inconsistent,
                        Field::PayloadLength,
                        6,
                        "WIRE-5-3",
                    ));
                }
                used
            }
        };
        //= docs/spec/wire.md#24-frame-size-and-padding
        //# WIRE-2.4-3 A receiver MUST discard as malformed, and count, a frame that carries more
        //# bytes between the end of its body and the FCS than the padding WIRE-2.4-1 requires.
        //= docs/spec/wire.md#24-frame-size-and-padding
        //# WIRE-2.4-5 A frame discarded by WIRE-2.4-3 MUST NOT cause a NACK.
        //= docs/spec/wire.md#24-frame-size-and-padding
        //# WIRE-2.4-7 A receiver MUST ignore the value of padding bytes: padding is reserved
        //# (WIRE-1.2-2), and non-zero padding MUST NOT make a frame malformed.
        // Only the number of bytes after the body is checked here; their values are never read.
        if frame.len() != frame_len(frame.ethernet_header_len(), used) {
            let (kind, field, spec) = if kind == FrameKind::Data {
                (ErrorKind::Inconsistent, Field::Padding, "WIRE-2.4-3")
            } else {
                (ErrorKind::OutOfRange, Field::ControlBody, "WIRE-4-1")
            };
            return Err(malformed(kind, field, used, spec));
        }
        let content = body.get(..used).unwrap_or(&[]);
        let link = match kind {
            FrameKind::Data => LinkFrame::Data {
                header: DataHeader {
                    vc: header.vc(),
                    flags: DataFlags::from_bits(header.flags()),
                    seq: header.seq(),
                },
                payload: content,
            },
            FrameKind::Ack => LinkFrame::Ack(header.seq()),
            FrameKind::Nack => LinkFrame::Nack(header.seq()),
            FrameKind::CreditUpdate | FrameKind::CreditResync => {
                let (credit, _) = CreditBody::ref_from_prefix(content).map_err(|_| {
                    malformed(ErrorKind::Truncated, Field::ControlBody, 0, "WIRE-4-1")
                })?;
                let repr = CreditRepr::parse(credit);
                if kind == FrameKind::CreditUpdate {
                    LinkFrame::CreditUpdate(repr)
                } else {
                    LinkFrame::CreditResync(repr)
                }
            }
            FrameKind::Init | FrameKind::InitEcho => {
                let (init, _) = InitBody::ref_from_prefix(content).map_err(|_| {
                    malformed(ErrorKind::Truncated, Field::ControlBody, 0, "WIRE-4-1")
                })?;
                let repr = InitRepr::parse(init, body_offset)?;
                if kind == FrameKind::Init {
                    LinkFrame::Init(repr)
                } else {
                    LinkFrame::InitEcho {
                        echo_nonce: init.echo_nonce.get(),
                        init: repr,
                    }
                }
            }
        };
        Ok(FrameRepr { eth, link })
    }

    /// Checks and parses `bytes` in one call: [`Frame::new_checked`] then [`FrameRepr::parse`].
    pub fn parse_bytes(bytes: &'a [u8], mfs: usize) -> Result<Self, Error> {
        Self::parse(&Frame::new_checked(bytes, mfs)?)
    }

    /// Length of the frame this representation emits, FCS and padding included.
    pub fn buffer_len(&self) -> usize {
        frame_len(self.eth.header_len(), self.link.body_len())
    }

    /// Writes the frame, padding and FCS into the start of `buf` and returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let len = self.buffer_len();
        if len > MAX_FRAME_LEN {
            return Err(EmitError::TooLong {
                len,
                mfs: MAX_FRAME_LEN,
            });
        }
        let available = buf.len();
        let out = buf.get_mut(..len).ok_or(EmitError::BufferTooSmall {
            needed: len,
            available,
        })?;
        let eth_len = self.eth.header_len();
        let (kind, vc, flags, seq) = match &self.link {
            LinkFrame::Data { header, .. } => {
                (FrameKind::Data, header.vc, header.flags.bits(), header.seq)
            }
            LinkFrame::Ack(s) => (FrameKind::Ack, Vc::default(), 0, *s),
            LinkFrame::Nack(s) => (FrameKind::Nack, Vc::default(), 0, *s),
            other => (other.kind(), Vc::default(), 0, Seq::default()),
        };
        let (head, body) = out.split_at_mut(eth_len + LINK_HEADER_LEN);
        emit_headers(&self.eth, kind, vc, flags, seq, head)?;
        let body_len = self.link.body_len();
        let content = body.get_mut(..body_len).ok_or(EmitError::BufferTooSmall {
            needed: len,
            available,
        })?;
        match &self.link {
            LinkFrame::Data { payload, .. } => content.copy_from_slice(payload),
            LinkFrame::Ack(_) | LinkFrame::Nack(_) => {}
            LinkFrame::CreditUpdate(c) | LinkFrame::CreditResync(c) => {
                let (b, _) = CreditBody::mut_from_prefix(content)
                    .map_err(|_| EmitError::Invalid(Field::ControlBody))?;
                if c.counters.iter().flatten().any(|v| *v > Seq::MASK) {
                    return Err(EmitError::Invalid(Field::ControlBody));
                }
                c.emit(b);
            }
            LinkFrame::Init(init) | LinkFrame::InitEcho { init, .. } => {
                init.validate()?;
                let echo = match &self.link {
                    LinkFrame::InitEcho { echo_nonce, .. } => *echo_nonce,
                    _ => 0,
                };
                let (b, _) = InitBody::mut_from_prefix(content)
                    .map_err(|_| EmitError::Invalid(Field::ControlBody))?;
                init.emit(echo, b);
            }
        }
        finish_frame(out, eth_len + LINK_HEADER_LEN + body_len)?;
        Ok(len)
    }
}

/// Frames a DATA payload already in place: `frame` is exactly the frame's length
/// ([`frame_len`]`(eth.header_len(), payload_len)`) and holds the payload at
/// `eth.header_len() + LINK_HEADER_LEN`; this writes the Ethernet and link headers before it, the
/// padding after it and the FCS, leaving the payload where it is. The bytes written are those of
/// [`FrameRepr::emit`] for the same frame: a transmitter that keeps its queued payloads in
/// buffers with room for the headers frames them without copying the payload.
pub fn emit_data_in_place(
    eth: &EthernetRepr,
    header: DataHeader,
    frame: &mut [u8],
    payload_len: usize,
) -> Result<usize, EmitError> {
    let eth_len = eth.header_len();
    let len = frame_len(eth_len, payload_len);
    if len > MAX_FRAME_LEN {
        return Err(EmitError::TooLong {
            len,
            mfs: MAX_FRAME_LEN,
        });
    }
    if frame.len() != len {
        return Err(EmitError::BufferTooSmall {
            needed: len,
            available: frame.len(),
        });
    }
    let (head, _) = frame.split_at_mut(eth_len + LINK_HEADER_LEN);
    emit_headers(
        eth,
        FrameKind::Data,
        header.vc,
        header.flags.bits(),
        header.seq,
        head,
    )?;
    finish_frame(frame, eth_len + LINK_HEADER_LEN + payload_len)?;
    Ok(len)
}

/// As [`emit_data_in_place`] without the FCS: its four bytes are left as they are, for a
/// transmitter whose MAC appends it (or a simulated wire that judges frames without it) to
/// write with [`write_fcs`] when, and only if, the bytes are looked at.
pub fn emit_data_in_place_without_fcs(
    eth: &EthernetRepr,
    header: DataHeader,
    frame: &mut [u8],
    payload_len: usize,
) -> Result<usize, EmitError> {
    let eth_len = eth.header_len();
    let len = frame_len(eth_len, payload_len);
    if len > MAX_FRAME_LEN {
        return Err(EmitError::TooLong {
            len,
            mfs: MAX_FRAME_LEN,
        });
    }
    if frame.len() != len {
        return Err(EmitError::BufferTooSmall {
            needed: len,
            available: frame.len(),
        });
    }
    let (head, _) = frame.split_at_mut(eth_len + LINK_HEADER_LEN);
    emit_headers(
        eth,
        FrameKind::Data,
        header.vc,
        header.flags.bits(),
        header.seq,
        head,
    )?;
    let content_end = eth_len + LINK_HEADER_LEN + payload_len;
    let body = len - FCS_LEN;
    if let Some(pad) = frame.get_mut(content_end..body) {
        pad.fill(0);
    }
    Ok(len)
}

/// Writes the FCS of `frame` (destination MAC through FCS) over its last four bytes, computed
/// over the bytes before them. A frame shorter than the FCS is left as it is.
pub fn write_fcs(frame: &mut [u8]) {
    let Some(body) = frame.len().checked_sub(FCS_LEN) else {
        return;
    };
    let (content, out) = frame.split_at_mut(body);
    out.copy_from_slice(&fcs::fcs_bytes(content));
}

/// Writes the Ethernet header and the link header into `head`, which is exactly their length.
pub(crate) fn emit_headers(
    eth: &EthernetRepr,
    kind: FrameKind,
    vc: Vc,
    flags: u8,
    seq: Seq,
    head: &mut [u8],
) -> Result<(), EmitError> {
    let eth_len = eth.header_len();
    eth.emit(head)?;
    let available = head.len();
    let link_bytes = head.get_mut(eth_len..).unwrap_or(&mut []);
    let (link, _) =
        LinkHeader::mut_from_prefix(link_bytes).map_err(|_| EmitError::BufferTooSmall {
            needed: eth_len + LINK_HEADER_LEN,
            available,
        })?;
    link.set(kind, vc, flags, seq);
    Ok(())
}

/// Zeroes the padding between `content_end` and the FCS, and writes the FCS over the last four
/// bytes of `frame`.
//= docs/spec/wire.md#24-frame-size-and-padding
//# WIRE-2.4-1 A transmitter MUST pad a frame whose content (destination MAC through the end of
//# the body) is shorter than 60 B with zero bytes so that the frame with its FCS is exactly 64 B.
//= docs/spec/wire.md#24-frame-size-and-padding
//# WIRE-2.4-4 A transmitter MUST NOT add any other bytes after the body.
pub(crate) fn finish_frame(frame: &mut [u8], content_end: usize) -> Result<(), EmitError> {
    let len = frame.len();
    let split = len.checked_sub(FCS_LEN).ok_or(EmitError::BufferTooSmall {
        needed: FCS_LEN,
        available: len,
    })?;
    let (content, fcs_out) = frame.split_at_mut(split);
    if let Some(pad) = content.get_mut(content_end..) {
        pad.fill(0);
    }
    fcs_out.copy_from_slice(&fcs::fcs_bytes(content));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Discard;
    use crate::types::MacAddr;
    use std::string::ToString;
    use std::vec;
    use std::vec::Vec;

    // Frames written out byte by byte from the diagrams of wire.md §2, §3 and §4. The FCS of each
    // was computed with an independent CRC-32 implementation (zlib) over the bytes before it.

    /// DATA, untagged, VC 3, REPLAY and ACK_REQ, seq 0xABCDE, one 5-byte STORE, padded to 64 B.
    #[rustfmt::skip]
    const DATA_STORE: [u8; 64] = [
        0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e,             // destination MAC
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01,             // source MAC
        0x88, 0xb5,                                     // EtherType
        0x10,                                           // version 1, kind 0 (DATA)
        0x63,                                           // VC 3, flags ACK_REQ | REPLAY
        0x00, 0x0a, 0xbc, 0xde,                         // reserved (12 bits), sequence 0xABCDE
        0x01, 0x02, 0x03, 0x04,                         // dst GPU 0x0102, src GPU 0x0304
        0x21, 0x01, 0x00, 0x1c,                         // path 0x21, count 1, payload length 28
        0x02, 0x01, 0x12, 0x34, 0x05, 0x00, 0x00, 0x05, // STORE, SHARED, tag 0x1234, hlen 5, dlen 5
        0x11, 0x22, 0x33, 0x44,                         // key
        0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10, 0x00, // address
        0xde, 0xad, 0xbe, 0xef, 0x01, 0x00, 0x00, 0x00, // data, 3 bytes of data padding
        0x00, 0x00, 0x00, 0x00,                         // frame padding to 60 B
        0xf9, 0xc5, 0x3a, 0xf2,                         // FCS
    ];

    /// DATA with an 802.1Q tag (PCP 5, VID 5), VC 5, no flags, seq 0xFFFFF, one FENCE.
    #[rustfmt::skip]
    const DATA_FENCE_TAGGED: [u8; 64] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02,             // destination MAC
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01,             // source MAC
        0x81, 0x00, 0xa0, 0x05,                         // TPID, TCI: PCP 5, DEI 0, VID 5
        0x88, 0xb5,                                     // EtherType
        0x10, 0xa0, 0x00, 0x0f, 0xff, 0xff,             // DATA, VC 5, seq 0xFFFFF
        0x00, 0x01, 0x00, 0x02, 0x00, 0x01, 0x00, 0x08, // dst 1, src 2, path 0, count 1, length 8
        0x06, 0x00, 0x00, 0x07, 0x02, 0x00, 0x00, 0x00, // FENCE, tag 7, hlen 2, dlen 0
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // padding
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00,
        0x91, 0x1d, 0xc8, 0x10,                         // FCS
    ];

    /// ACK of seq 0xABCDE.
    #[rustfmt::skip]
    const ACK: [u8; 64] = [
        0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x88, 0xb5,
        0x11, 0x00, 0x00, 0x0a, 0xbc, 0xde,             // version 1, kind 1 (ACK), seq 0xABCDE
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // padding: 40 bytes
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x1f, 0x2d, 0xc5, 0x42,                         // FCS
    ];

    /// NACK with last good 0xFFFFF (the value before a first sequence number of 0).
    #[rustfmt::skip]
    const NACK: [u8; 64] = [
        0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x88, 0xb5,
        0x12, 0x00, 0x00, 0x0f, 0xff, 0xff,             // version 1, kind 2 (NACK), seq 0xFFFFF
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0xa6, 0x64, 0xa5, 0x6b,                         // FCS
    ];

    /// ACK of seq 7 with an 802.1Q tag.
    #[rustfmt::skip]
    const ACK_TAGGED: [u8; 64] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01,
        0x81, 0x00, 0xa0, 0x05, 0x88, 0xb5,
        0x11, 0x00, 0x00, 0x00, 0x00, 0x07,             // ACK, seq 7
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // padding: 36 bytes
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00,
        0x9f, 0xeb, 0xee, 0xb9,                         // FCS
    ];

    /// CF: VCs 0, 2 and 7 with counters 16, 0xFFFFF and 0x10000.
    #[rustfmt::skip]
    const CF: [u8; 64] = [
        0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x88, 0xb5,
        0x13, 0x00, 0x00, 0x00, 0x00, 0x00,             // version 1, kind 3 (CF), seq reserved
        0x85, 0x00, 0x00, 0x00,                         // VC mask 0b1000_0101, reserved
        0x00, 0x00, 0x00, 0x10,                         // VC 0: 16
        0x00, 0x00, 0x00, 0x00,                         // VC 1: not in the mask
        0x00, 0x0f, 0xff, 0xff,                         // VC 2: 0xFFFFF
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // VCs 3..6
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x01, 0x00, 0x00,                         // VC 7: 0x10000
        0x00, 0x00, 0x00, 0x00,                         // padding
        0x1f, 0x87, 0x7b, 0xb2,                         // FCS
    ];

    /// CC: VC 1 with counter 1000.
    #[rustfmt::skip]
    const CC: [u8; 64] = [
        0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x88, 0xb5,
        0x14, 0x00, 0x00, 0x00, 0x00, 0x00,             // version 1, kind 4 (CC)
        0x02, 0x00, 0x00, 0x00,                         // VC mask: VC 1
        0x00, 0x00, 0x00, 0x00,                         // VC 0
        0x00, 0x00, 0x03, 0xe8,                         // VC 1: 1000
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // VCs 2..7
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00,                         // padding
        0x16, 0x2f, 0x05, 0xcc,                         // FCS
    ];

    /// INIT: nonce 0xDEADBEEF, 2 VCs, 256 B credits, MFS 9216, window 512, grants 64 and 32.
    #[rustfmt::skip]
    const INIT: [u8; 76] = [
        0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x88, 0xb5,
        0x15, 0x00, 0x00, 0x00, 0x00, 0x00,             // version 1, kind 5 (INIT)
        0xde, 0xad, 0xbe, 0xef,                         // nonce
        0x00, 0x00, 0x00, 0x00,                         // echo nonce (reserved in INIT)
        0x02, 0x00, 0x01, 0x00,                         // 2 VCs, reserved, credit size 256
        0x24, 0x00, 0x00, 0x00,                         // MFS 9216, reserved
        0x00, 0x00, 0x02, 0x00,                         // LLR window 512
        0x00, 0x00, 0x00, 0x40,                         // VC 0: 64 credits
        0x00, 0x00, 0x00, 0x20,                         // VC 1: 32 credits
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // VCs 2..7
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x51, 0x4e, 0x2b, 0x39,                         // FCS
    ];

    /// INIT_ECHO answering INIT: 8 VCs, 32 B credits, MFS 320, window 2^19, grants 2^19 - 1.
    #[rustfmt::skip]
    const INIT_ECHO: [u8; 76] = [
        0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x88, 0xb5,
        0x16, 0x00, 0x00, 0x00, 0x00, 0x00,             // version 1, kind 6 (INIT_ECHO)
        0x01, 0x02, 0x03, 0x04,                         // nonce
        0xde, 0xad, 0xbe, 0xef,                         // echo nonce: the INIT's nonce
        0x08, 0x00, 0x00, 0x20,                         // 8 VCs, reserved, credit size 32
        0x01, 0x40, 0x00, 0x00,                         // MFS 320, reserved
        0x00, 0x08, 0x00, 0x00,                         // LLR window 2^19
        0x00, 0x07, 0xff, 0xff, 0x00, 0x07, 0xff, 0xff, // 8 grants of 2^19 - 1
        0x00, 0x07, 0xff, 0xff, 0x00, 0x07, 0xff, 0xff,
        0x00, 0x07, 0xff, 0xff, 0x00, 0x07, 0xff, 0xff,
        0x00, 0x07, 0xff, 0xff, 0x00, 0x07, 0xff, 0xff,
        0x70, 0x0b, 0x86, 0x37,                         // FCS
    ];

    const SRC: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x01]);

    fn eth_untagged() -> EthernetRepr {
        EthernetRepr {
            dst: MacAddr::LINK_LOCAL,
            src: SRC,
            vlan: None,
        }
    }

    fn eth_tagged() -> EthernetRepr {
        EthernetRepr {
            dst: MacAddr([0x02, 0, 0, 0, 0, 0x02]),
            src: SRC,
            vlan: Some(VlanTag {
                pcp: 5,
                dei: false,
                vid: 5,
            }),
        }
    }

    fn init_repr() -> InitRepr {
        InitRepr {
            nonce: 0xDEAD_BEEF,
            vcs: 2,
            credit_size: 256,
            mfs: 9216,
            window: 512,
            credits: [64, 32, 0, 0, 0, 0, 0, 0],
            credit_overhead: 0,
            caps: Capabilities::NONE,
            role: Role::LinkEnd,
        }
    }

    fn init_echo_init() -> InitRepr {
        InitRepr {
            nonce: 0x0102_0304,
            vcs: 8,
            credit_size: 32,
            mfs: 320,
            window: 1 << 19,
            credits: [(1 << 19) - 1; 8],
            credit_overhead: 0,
            caps: Capabilities::NONE,
            role: Role::LinkEnd,
        }
    }

    /// The representation of every static frame.
    fn vectors() -> Vec<(&'static str, &'static [u8], FrameRepr<'static>)> {
        let vc = |v| Vc::new(v).unwrap();
        vec![
            (
                "DATA",
                &DATA_STORE,
                FrameRepr {
                    eth: eth_untagged(),
                    link: LinkFrame::Data {
                        header: DataHeader {
                            vc: vc(3),
                            flags: DataFlags {
                                replay: true,
                                ack_req: true,
                            },
                            seq: Seq::new(0xABCDE),
                        },
                        payload: &DATA_STORE[20..56],
                    },
                },
            ),
            (
                "DATA tagged",
                &DATA_FENCE_TAGGED,
                FrameRepr {
                    eth: eth_tagged(),
                    link: LinkFrame::Data {
                        header: DataHeader {
                            vc: vc(5),
                            flags: DataFlags::default(),
                            seq: Seq::new(0xFFFFF),
                        },
                        payload: &DATA_FENCE_TAGGED[24..40],
                    },
                },
            ),
            (
                "ACK",
                &ACK,
                FrameRepr {
                    eth: eth_untagged(),
                    link: LinkFrame::Ack(Seq::new(0xABCDE)),
                },
            ),
            (
                "NACK",
                &NACK,
                FrameRepr {
                    eth: eth_untagged(),
                    link: LinkFrame::Nack(Seq::new(0xFFFFF)),
                },
            ),
            (
                "ACK tagged",
                &ACK_TAGGED,
                FrameRepr {
                    eth: eth_tagged(),
                    link: LinkFrame::Ack(Seq::new(7)),
                },
            ),
            (
                "CF",
                &CF,
                FrameRepr {
                    eth: eth_untagged(),
                    link: LinkFrame::CreditUpdate(CreditRepr {
                        counters: [
                            Some(16),
                            None,
                            Some(0xFFFFF),
                            None,
                            None,
                            None,
                            None,
                            Some(0x10000),
                        ],
                    }),
                },
            ),
            (
                "CC",
                &CC,
                FrameRepr {
                    eth: eth_untagged(),
                    link: LinkFrame::CreditResync(CreditRepr {
                        counters: [None, Some(1000), None, None, None, None, None, None],
                    }),
                },
            ),
            (
                "INIT",
                &INIT,
                FrameRepr {
                    eth: eth_untagged(),
                    link: LinkFrame::Init(init_repr()),
                },
            ),
            (
                "INIT_ECHO",
                &INIT_ECHO,
                FrameRepr {
                    eth: eth_untagged(),
                    link: LinkFrame::InitEcho {
                        echo_nonce: 0xDEAD_BEEF,
                        init: init_echo_init(),
                    },
                },
            ),
        ]
    }

    /// Recomputes the FCS of a frame edited by a test.
    fn refcs(frame: &mut [u8]) {
        let n = frame.len() - FCS_LEN;
        let f = fcs::fcs_bytes(&frame[..n]);
        frame[n..].copy_from_slice(&f);
    }

    fn edited(frame: &[u8], edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut v = frame.to_vec();
        edit(&mut v);
        refcs(&mut v);
        v
    }

    fn parse_err(bytes: &[u8]) -> Error {
        FrameRepr::parse_bytes(bytes, MAX_FRAME_LEN).unwrap_err()
    }

    //= type=test
    //# WIRE-1.1-1 All multi-byte header fields MUST be transmitted in network byte order.
    //# WIRE-1.2-1 A transmitter MUST set every reserved bit and byte to zero.
    //# WIRE-2.1-1 An EthLink frame MUST carry the EtherType 0x88B5 [...] directly after the source
    //# MAC address or directly after one 802.1Q tag.
    //# WIRE-2.3-1 The source MAC address MUST be the transmitting port's own unicast address.
    //# WIRE-2.4-1 A transmitter MUST pad a frame [...] so that the frame with its FCS is exactly 64 B.
    //# WIRE-2.5-2 The 32-bit CRC value MUST be appended least significant byte first.
    //# WIRE-3-1 A transmitter MUST set the version to 1.
    //# WIRE-3-7 Control frames [...] their VC and flags fields are reserved.
    //# WIRE-1.1-1 All multi-byte header fields MUST be transmitted in network byte order (most
    //# significant byte first).
    #[test]
    fn construct_every_kind() {
        for (name, bytes, repr) in vectors() {
            assert_eq!(repr.buffer_len(), bytes.len(), "{name}");
            // Pre-filled so that any byte emit forgets to write shows.
            let mut buf = vec![0xa5; bytes.len() + 8];
            assert_eq!(repr.emit(&mut buf), Ok(bytes.len()), "{name}");
            assert_eq!(&buf[..bytes.len()], bytes, "{name}");
            assert!(buf[bytes.len()..].iter().all(|&b| b == 0xa5), "{name}");
        }
    }

    /// Framing a payload in place writes exactly the bytes `FrameRepr::emit` writes, padding
    /// and FCS included, tagged or not, and leaves the payload untouched.
    #[test]
    fn data_framed_in_place_equals_emit() {
        for vlan in [
            None,
            Some(VlanTag {
                pcp: 5,
                dei: false,
                vid: 0x123,
            }),
        ] {
            let eth = EthernetRepr {
                dst: MacAddr([0x02, 0, 0, 0, 0, 9]),
                src: MacAddr([0x02, 0, 0, 0, 0, 1]),
                vlan,
            };
            let hdr = eth.header_len() + LINK_HEADER_LEN;
            for plen in [0usize, 1, 7, 8, 30, 31, 60, 61, 200, 4104] {
                let payload: Vec<u8> = (0..plen).map(|i| (i * 7 + 3) as u8).collect();
                let header = DataHeader {
                    vc: Vc::new(2).unwrap(),
                    flags: DataFlags {
                        replay: false,
                        ack_req: plen % 2 == 1,
                    },
                    seq: Seq::new(0xABCDE),
                };
                let repr = FrameRepr {
                    eth,
                    link: LinkFrame::Data {
                        header,
                        payload: &payload,
                    },
                };
                let mut want = vec![0u8; repr.buffer_len()];
                repr.emit(&mut want).unwrap();
                // Garbage everywhere but the payload.
                let mut got = vec![0xa5u8; frame_len(eth.header_len(), plen)];
                got[hdr..hdr + plen].copy_from_slice(&payload);
                assert_eq!(
                    emit_data_in_place(&eth, header, &mut got, plen),
                    Ok(want.len())
                );
                assert_eq!(got, want, "vlan {vlan:?} payload {plen}");
                // Without the FCS, then the FCS written apart: the same bytes.
                let mut later = vec![0xa5u8; want.len()];
                later[hdr..hdr + plen].copy_from_slice(&payload);
                assert_eq!(
                    emit_data_in_place_without_fcs(&eth, header, &mut later, plen),
                    Ok(want.len())
                );
                assert_eq!(&later[..want.len() - 4], &want[..want.len() - 4]);
                write_fcs(&mut later);
                assert_eq!(later, want);
                // A buffer of another length is refused.
                let mut short = vec![0u8; want.len() - 1];
                assert!(emit_data_in_place(&eth, header, &mut short, plen).is_err());
                assert!(emit_data_in_place_without_fcs(&eth, header, &mut short, plen).is_err());
            }
        }
    }

    /// `InitRepr::validate` names the first field out of range (WIRE-4.5-1).
    #[test]
    fn init_validate_names_the_field() {
        let good = InitRepr {
            nonce: 1,
            vcs: 2,
            credit_size: 64,
            mfs: 9216,
            window: 1 << 19,
            credits: [100, 200, 0, 0, 0, 0, 0, 0],
            credit_overhead: 0,
            caps: Capabilities::NONE,
            role: Role::LinkEnd,
        };
        assert_eq!(good.validate(), Ok(()));
        let cases = [
            (InitRepr { vcs: 9, ..good }, Field::InitVcs),
            (
                InitRepr {
                    credit_size: 96,
                    ..good
                },
                Field::InitCreditSize,
            ),
            (InitRepr { mfs: 319, ..good }, Field::InitMfs),
            (InitRepr { window: 0, ..good }, Field::InitWindow),
            (
                InitRepr {
                    credits: [1 << 19, 0, 0, 0, 0, 0, 0, 0],
                    ..good
                },
                Field::InitCredits,
            ),
            (
                InitRepr {
                    credits: [1, 1, 1, 0, 0, 0, 0, 0],
                    ..good
                },
                Field::InitCredits,
            ),
        ];
        for (r, field) in cases {
            assert_eq!(r.validate(), Err(EmitError::Invalid(field)), "{r:?}");
        }
    }

    /// Values the wire cannot carry are refused, not silently truncated.
    #[test]
    fn emit_refuses_out_of_range_tag_and_credit_values() {
        let mut buf = [0u8; 128];
        for tag in [
            VlanTag {
                pcp: 8,
                dei: false,
                vid: 1,
            },
            VlanTag {
                pcp: 0,
                dei: false,
                vid: 0x1000,
            },
        ] {
            let r = FrameRepr {
                eth: EthernetRepr {
                    vlan: Some(tag),
                    ..EthernetRepr::default()
                },
                link: LinkFrame::Ack(Seq::new(1)),
            };
            assert_eq!(r.emit(&mut buf), Err(EmitError::Invalid(Field::Vlan)));
        }
        let mut counters = [None; 8];
        counters[2] = Some(Seq::MODULUS);
        let r = FrameRepr {
            eth: EthernetRepr::default(),
            link: LinkFrame::CreditUpdate(CreditRepr { counters }),
        };
        assert_eq!(
            r.emit(&mut buf),
            Err(EmitError::Invalid(Field::ControlBody))
        );
    }

    //= type=test
    //# WIRE-2.2-1 A receiver MUST accept frames with and without the tag on the same link.
    //# WIRE-3-5 The REPLAY flag MUST be set on a DATA frame that is a retransmission (link.md) and
    //# clear on its first transmission.
    //# WIRE-3-10 A receiver MUST treat a replayed frame exactly as the original: the REPLAY flag is
    //# for counting and tracing only. (Split from WIRE-3-5 in 1.1. Version 1.0's LINK-4-4 read the
    //# flag to decide whether a receiver in NACK_SENT sends one more NACK; that rule is withdrawn,
    //# and link.md LINK-4-8 now decides it by sequence numbers alone.)
    //# WIRE-4.3-1 A transmitter MUST set the entries of VCs not in the mask to zero (they are
    //# reserved).
    //# WIRE-4.5-2 In an INIT frame the echo nonce is reserved.
    #[test]
    fn parse_every_kind() {
        for (name, bytes, repr) in vectors() {
            let frame = Frame::new_checked(bytes, MAX_FRAME_LEN).unwrap();
            assert_eq!(frame.kind(), repr.link.kind(), "{name}");
            assert_eq!(frame.len(), bytes.len());
            assert_eq!(frame.ethernet(), repr.eth, "{name}");
            assert_eq!(frame.fcs(), bytes[bytes.len() - 4..], "{name}");
            assert_eq!(FrameRepr::parse(&frame), Ok(repr), "{name}");
            // Also at the smallest MFS: every static frame is below 320 B.
            assert_eq!(FrameRepr::parse_bytes(bytes, MIN_MFS), Ok(repr), "{name}");
        }
    }

    //= type=test
    //# WIRE-2.1-1 [...] the EtherType 0x88B5 [...]
    //# WIRE-3-4 Sequence numbers are 20-bit values [...] the value following 0xFFFFF is 0x00000.
    #[test]
    fn deconstruct_link_header() {
        let frame = Frame::new_checked(&DATA_STORE[..], MAX_FRAME_LEN).unwrap();
        assert_eq!(frame.ethernet_header_len(), 14);
        let h = frame.link_header();
        assert_eq!(
            (h.version(), h.kind_raw(), h.vc().value(), h.flags()),
            (1, 0, 3, FLAG_REPLAY | FLAG_ACK_REQ)
        );
        assert_eq!(h.seq(), Seq::new(0xABCDE));
        assert_eq!(frame.body(), &DATA_STORE[20..60]);

        let tagged = Frame::new_checked(&DATA_FENCE_TAGGED[..], MAX_FRAME_LEN).unwrap();
        assert_eq!(tagged.ethernet_header_len(), 18);
        assert_eq!(tagged.link_header().seq().value(), 0xFFFFF);
        assert_eq!(tagged.link_header().seq().next(), Seq::new(0));
        assert_eq!(tagged.body_slice(), &DATA_FENCE_TAGGED[24..60]);
    }

    //= type=test
    //# WIRE-3-4 [...] the value following 0xFFFFF is 0x00000.
    #[test]
    fn sequence_wraps_in_data_and_ack() {
        let payload = &DATA_STORE[20..56];
        let mut seq = Seq::new(0xFFFFE);
        let mut seen = Vec::new();
        for _ in 0..4 {
            let repr = FrameRepr {
                eth: eth_untagged(),
                link: LinkFrame::Data {
                    header: DataHeader {
                        seq,
                        ..DataHeader::default()
                    },
                    payload,
                },
            };
            let mut buf = [0u8; 64];
            repr.emit(&mut buf).unwrap();
            // Reserved upper 12 bits stay zero across the wrap.
            assert_eq!(buf[16], 0);
            assert_eq!(buf[17] & 0xF0, 0);
            let parsed = FrameRepr::parse_bytes(&buf, MAX_FRAME_LEN).unwrap();
            let LinkFrame::Data { header, .. } = parsed.link else {
                panic!("not DATA")
            };
            seen.push(header.seq.value());
            seq = seq.next();
        }
        assert_eq!(seen, [0xFFFFE, 0xFFFFF, 0, 1]);
        // A sequence number given out of range is taken modulo 2^20 on the wire.
        let ack = FrameRepr {
            eth: eth_untagged(),
            link: LinkFrame::Ack(Seq::new(0x1_00005)),
        };
        let mut buf = [0u8; 64];
        ack.emit(&mut buf).unwrap();
        assert_eq!(buf[16..20], [0, 0, 0, 5]);
    }

    //= type=test
    //# WIRE-4.2-1 Before any DATA frame has been received after link initialisation, the "last
    //# good" sequence number is [...] `(first - 1) mod 2^20`.
    #[test]
    fn nack_before_first_frame_carries_first_minus_one() {
        let first = Seq::new(0);
        let repr = FrameRepr {
            eth: eth_untagged(),
            link: LinkFrame::Nack(first.sub(1)),
        };
        let mut buf = [0xa5u8; 64];
        repr.emit(&mut buf).unwrap();
        assert_eq!(buf, NACK);
    }

    //= type=test
    //# WIRE-2.4-1 A transmitter MUST pad a frame whose content (destination MAC through the end of
    //# the body) is shorter than 60 B with zero bytes so that the frame with its FCS is exactly 64
    //# B.
    #[test]
    fn padding_only_below_64_bytes() {
        assert_eq!(frame_len(14, 0), 64);
        assert_eq!(frame_len(14, 40), 64);
        assert_eq!(frame_len(14, 41), 65);
        assert_eq!(frame_len(18, 36), 64);
        assert_eq!(frame_len(18, 37), 65);
        // A DATA payload of 40 bytes needs no padding: the FCS follows the body directly.
        let mut payload = [0u8; 40];
        payload[..16].copy_from_slice(&DATA_FENCE_TAGGED[24..40]);
        payload[7] = 32; // payload length: FENCE + 24 bytes of an unknown request
        payload[5] = 2;
        payload[16..24].copy_from_slice(&[0x20, 0, 0, 1, 6, 0, 0, 0]);
        let repr = FrameRepr {
            eth: eth_untagged(),
            link: LinkFrame::Data {
                header: DataHeader::default(),
                payload: &payload,
            },
        };
        let mut buf = [0xa5u8; 65];
        assert_eq!(repr.emit(&mut buf), Ok(64));
        assert_eq!(buf[20..60], payload);
        assert_eq!(buf[60..64], fcs::fcs_bytes(&buf[..60]));
        assert_eq!(buf[64], 0xa5);
    }

    //= type=test
    //# WIRE-2.4-2 A receiver MUST discard as a damaged frame (equivalent to an FCS error, §2.5) any
    //# frame shorter than 64 B or longer than the MFS in force (WIRE-2.4-6), and count it in
    //# rx_damaged.
    #[test]
    fn runt_and_oversize_are_damaged() {
        let e = Frame::new_checked(&ACK[..63], MAX_FRAME_LEN).unwrap_err();
        assert_eq!(
            (e.kind, e.field, e.offset, e.spec, e.action),
            (
                ErrorKind::Truncated,
                Field::Frame,
                63,
                "WIRE-2.4-2",
                Action::DiscardDamaged
            )
        );
        assert!(e.action.nacks());
        // A CF whose body would be one byte short cannot be a 64 B frame: it is a runt.
        let short_cf = edited(&CF[..59], |_| {});
        assert_eq!(parse_err(&short_cf).spec, "WIRE-2.4-2");
        assert_eq!(Frame::new_checked(&[][..], 9216).unwrap_err().offset, 0);

        // Longer than the link's MFS: a 321 B frame on a 320 B link, a 9217 B frame anywhere.
        let long = edited(&[0u8; 325][..], |v| v[..60].copy_from_slice(&ACK[..60]));
        for (len, mfs) in [(321, 320), (9217, 9216), (9217, 20000)] {
            let mut big = vec![0u8; len];
            big[..60].copy_from_slice(&ACK[..60]);
            refcs(&mut big);
            let e = Frame::new_checked(&big[..], mfs).unwrap_err();
            assert_eq!(
                (e.kind, e.field, e.offset, e.spec, e.action),
                (
                    ErrorKind::OutOfRange,
                    Field::Frame,
                    len,
                    "WIRE-2.4-2",
                    Action::DiscardDamaged
                )
            );
        }
        // At an MFS of 325 the same bytes pass the size check and fail as malformed instead.
        let e = Frame::new_checked(&long[..], 325).map(|_| ());
        assert_eq!(e, Ok(()));
        assert_eq!(
            FrameRepr::parse_bytes(&long, 325).unwrap_err().spec,
            "WIRE-4-1"
        );
    }

    /// Each frame-level discard of Table WIRE-T1 is reported under the first id of its row.
    //= docs/spec/wire.md#7-receive-pipeline
    //= type=test
    //# WIRE-7-6 A report of a discard that names a requirement (a decoder's verdict, a conformance
    //# verdict, a trace) MUST name the first id of the discard's row in Table WIRE-T1
    #[test]
    fn every_frame_level_discard_names_the_first_id_of_its_row() {
        let (_, ack_frame, _) = vectors().into_iter().find(|v| v.0 == "ACK").expect("ACK");
        let ack_frame = ack_frame.to_vec();
        let mut bad_fcs = ack_frame.clone();
        let n = bad_fcs.len();
        bad_fcs[n - 1] ^= 1;
        let stomped = {
            let mut f = ack_frame[..n - 4].to_vec();
            f.extend_from_slice(&crate::fcs::stomped_bytes(&ack_frame[..n - 4]));
            f
        };
        let with = |at: usize, v: u8| {
            let mut f = ack_frame[..n - 4].to_vec();
            f[at] = v;
            f.extend_from_slice(&crate::fcs::fcs_bytes(&f));
            f
        };
        let rows: [(&str, Vec<u8>, &str); 6] = [
            ("runt", ack_frame[..63].to_vec(), "WIRE-2.4-2"),
            ("bad FCS", bad_fcs, "WIRE-2.5-3"),
            ("stomped", stomped, "WIRE-2.5-5"),
            ("EtherType", with(12, 0x08), "WIRE-2.1-2"),
            (
                "version",
                with(14, 0x20 | (ack_frame[14] & 0x0F)),
                "WIRE-3-2",
            ),
            ("kind", with(14, 0x1F), "WIRE-3-3"),
        ];
        for (what, f, id) in rows {
            assert_eq!(parse_err(&f).spec, id, "{what}");
        }
    }

    //= type=test
    //# WIRE-2.5-3 A receiver MUST check the FCS before it interprets any other field.
    #[test]
    fn bad_fcs_is_checked_first() {
        for (name, bytes, _) in vectors() {
            for at in [0, 13, 14, bytes.len() - 5, bytes.len() - 1] {
                let mut bad = bytes.to_vec();
                bad[at] ^= 0x40;
                let e = Frame::new_checked(&bad[..], MAX_FRAME_LEN).unwrap_err();
                assert_eq!(
                    (e.kind, e.field, e.offset, e.spec, e.action),
                    (
                        ErrorKind::BadFcs,
                        Field::Fcs,
                        bytes.len() - 4,
                        "WIRE-2.5-3",
                        Action::DiscardDamaged
                    ),
                    "{name} byte {at}"
                );
                assert!(e.action.nacks());
            }
        }
        // Foreign EtherType, bad version and bad kind all lose to a bad FCS.
        for at in [12, 14] {
            let mut bad = ACK.to_vec();
            bad[at] = 0x08;
            assert_eq!(parse_err(&bad).field, Field::Fcs);
        }
        // The FCS is the CRC-32 of everything before it, least significant byte first.
        let crc = fcs::crc32(&ACK[..60]);
        assert_eq!(ACK[60..], crc.to_le_bytes());
    }

    #[test]
    fn a_status_from_the_mac_stands_for_the_crc() {
        // What the MAC says is what the pipeline acts on, in the FCS stage's place in the order.
        let ok = Frame::new_checked_fcs(&ACK[..], 9216, FcsStatus::Good).map(|_| ());
        assert_eq!(ok, Ok(()));
        let bad = Frame::new_checked_fcs(&ACK[..], 9216, FcsStatus::Bad)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(
            (bad.kind, bad.action),
            (ErrorKind::BadFcs, Action::DiscardDamaged)
        );
        let stomped = Frame::new_checked_fcs(&ACK[..], 9216, FcsStatus::Stomped)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(
            (stomped.kind, stomped.action),
            (ErrorKind::StompedFcs, Action::DiscardStomped)
        );
        // The size stage still comes first.
        let short = Frame::new_checked_fcs(&ACK[..60], 9216, FcsStatus::Good)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(short.field, Field::Frame);
        // And a status computed from the bytes gives what new_checked gives.
        let mut damaged = ACK;
        damaged[20] ^= 1;
        let mut stomp = ACK;
        stomp[60..].copy_from_slice(&fcs::stomped_bytes(&ACK[..60]));
        for f in [ACK, damaged, stomp] {
            assert_eq!(
                Frame::new_checked_fcs(&f[..], 9216, FcsStatus::of(&f)).map(|_| ()),
                Frame::new_checked(&f[..], 9216).map(|_| ())
            );
        }
    }

    //= type=test
    //# WIRE-2.1-2 A receiver MUST discard a frame whose EtherType (after at most one 802.1Q tag) is
    //# not 0x88B5 and count it in rx_foreign.
    #[test]
    fn foreign_ethertypes() {
        let cases: [(&[u8], usize, [u8; 2], usize); 4] = [
            (&ACK, 12, [0x08, 0x00], 12),        // IPv4
            (&ACK_TAGGED, 16, [0x08, 0x00], 16), // IPv4 behind a tag
            (&ACK_TAGGED, 16, [0x81, 0x00], 16), // a second 802.1Q tag
            (&ACK_TAGGED, 12, [0x88, 0xa8], 12), // an 802.1ad tag
        ];
        for (frame, at, value, offset) in cases {
            let bad = edited(frame, |v| v[at..at + 2].copy_from_slice(&value));
            let e = parse_err(&bad);
            assert_eq!(
                (e.kind, e.field, e.offset, e.spec, e.action),
                (
                    ErrorKind::Unknown,
                    Field::EtherType,
                    offset,
                    "WIRE-2.1-2",
                    Action::DiscardForeign
                )
            );
            assert!(!e.action.nacks());
        }
    }

    //= type=test
    //# WIRE-3-2 A receiver MUST discard a frame whose version is not 1 and count it in
    //# rx_bad_version.
    #[test]
    fn wrong_version() {
        for (frame, at) in [(&ACK[..], 14), (&DATA_FENCE_TAGGED[..], 18)] {
            for version in [0u8, 2, 0xF] {
                let bad = edited(frame, |v| v[at] = (version << 4) | (v[at] & 0x0F));
                let e = parse_err(&bad);
                assert_eq!(
                    (e.kind, e.field, e.offset, e.spec, e.action),
                    (
                        ErrorKind::Unknown,
                        Field::Version,
                        at,
                        "WIRE-3-2",
                        Action::DiscardMalformed
                    )
                );
                assert!(!e.action.nacks());
            }
        }
    }

    //= type=test
    //# WIRE-3-3 A receiver MUST discard a frame whose kind is 0x7..0xF and count it in
    //# rx_unknown_kind.
    #[test]
    fn unknown_kinds() {
        for kind in 0x7..=0xF {
            let bad = edited(&ACK, |v| v[14] = 0x10 | kind);
            let e = parse_err(&bad);
            assert_eq!(
                (e.kind, e.field, e.offset, e.spec, e.action),
                (
                    ErrorKind::Unknown,
                    Field::Kind,
                    14,
                    "WIRE-3-3",
                    Action::DiscardMalformed
                )
            );
            assert!(!e.action.nacks());
            assert_eq!(FrameKind::from_u8(kind), None);
        }
        for kind in 0..7 {
            assert_eq!(FrameKind::from_u8(kind).map(FrameKind::to_u8), Some(kind));
        }
    }

    //= type=test
    //# WIRE-4-1 A control frame's body MUST have exactly the size given for its kind below,
    //# followed only by the padding of WIRE-2.4-1.
    //# WIRE-4-2 A receiver MUST discard a control frame whose body is shorter than its size, or
    //# that carries more bytes than that size plus the padding, and count it in
    //# `rx_malformed_control`; it MUST NOT cause a NACK.
    #[test]
    fn control_body_lengths() {
        // INIT and INIT_ECHO (76 B, unpadded): one byte short, one byte long.
        for frame in [&INIT[..], &INIT_ECHO[..]] {
            let short = edited(&frame[..75], |_| {});
            let e = parse_err(&short);
            assert_eq!(
                (e.kind, e.field, e.offset, e.spec, e.action),
                (
                    ErrorKind::Truncated,
                    Field::ControlBody,
                    20 + 51,
                    "WIRE-4-1",
                    Action::DiscardMalformed
                )
            );
            let long = edited(frame, |v| v.insert(72, 0));
            let e = parse_err(&long);
            assert_eq!(
                (e.kind, e.field, e.offset, e.spec, e.action),
                (
                    ErrorKind::OutOfRange,
                    Field::ControlBody,
                    20 + 52,
                    "WIRE-4-1",
                    Action::DiscardMalformed
                )
            );
        }
        // ACK, NACK, CF and CC (64 B, padded): one byte more than the padding.
        for (frame, eth, body) in [
            (&ACK[..], 14, 0),
            (&NACK[..], 14, 0),
            (&ACK_TAGGED[..], 18, 0),
            (&CF[..], 14, 36),
            (&CC[..], 14, 36),
        ] {
            let long = edited(frame, |v| v.insert(60, 0));
            let e = parse_err(&long);
            assert_eq!(
                (e.kind, e.field, e.offset, e.spec, e.action),
                (
                    ErrorKind::OutOfRange,
                    Field::ControlBody,
                    eth + 6 + body,
                    "WIRE-4-1",
                    Action::DiscardMalformed
                )
            );
            assert!(!e.action.nacks());
        }
    }

    //= type=test
    //# WIRE-2.4-3 A receiver MUST discard as malformed, and count, a frame that carries more bytes
    //# between the end of its body and the FCS than the padding WIRE-2.4-1 requires. For a control
    //# frame this is a control-body error (WIRE-4-2, counted in rx_malformed_control); for a DATA
    //# frame it is found after link-layer acceptance, at the network-header stage (§7, counted as a
    //# malformed frame). Such frames have a good FCS: they are evidence of a faulty transmitter,
    //# not of a damaged link.
    //# WIRE-5-3 [...] whose payload length runs past the end of the frame (before the FCS).
    #[test]
    fn data_frame_lengths() {
        // One byte beyond the padding.
        let long = edited(&DATA_STORE, |v| v.insert(60, 0));
        let e = parse_err(&long);
        assert_eq!(
            (e.kind, e.field, e.offset, e.spec, e.action),
            (
                ErrorKind::Inconsistent,
                Field::Padding,
                20 + 36,
                "WIRE-2.4-3",
                Action::DiscardMalformed
            )
        );
        assert!(!e.action.nacks());
        // A payload length one beyond the frame: the 40 B body of a padded 64 B frame holds a
        // payload of at most 32 bytes after the network header.
        let past = edited(&DATA_STORE, |v| v[27] = 33);
        let e = parse_err(&past);
        assert_eq!(
            (e.kind, e.field, e.offset, e.spec, e.action),
            (
                ErrorKind::Inconsistent,
                Field::PayloadLength,
                20 + 6,
                "WIRE-5-3",
                Action::DiscardMalformed
            )
        );
        // A payload length of 32 reaches exactly the end of the body: the frame parses (the
        // transaction walk then reports the extra bytes, DataRepr's business).
        let exact = edited(&DATA_STORE, |v| v[27] = 32);
        let repr = FrameRepr::parse_bytes(&exact, MAX_FRAME_LEN).unwrap();
        let LinkFrame::Data { payload, .. } = repr.link else {
            panic!("not DATA")
        };
        assert_eq!(payload.len(), 40);
        // Truncated by one byte in a frame that needs no padding.
        let mut big = vec![0u8; 100];
        big[..20].copy_from_slice(&DATA_STORE[..20]);
        big[20..28].copy_from_slice(&[0, 1, 0, 2, 0, 1, 0, 68]);
        refcs(&mut big);
        assert!(FrameRepr::parse_bytes(&big, MAX_FRAME_LEN).is_ok());
        let mut short = big[..99].to_vec();
        refcs(&mut short);
        let e = parse_err(&short);
        assert_eq!(
            (e.field, e.offset, e.spec),
            (Field::PayloadLength, 26, "WIRE-5-3")
        );
        let mut long = big.clone();
        long.insert(96, 0);
        refcs(&mut long);
        let e = parse_err(&long);
        assert_eq!(
            (e.field, e.offset, e.spec),
            (Field::Padding, 20 + 8 + 68, "WIRE-2.4-3")
        );
    }

    //= type=test
    //# WIRE-1.2-2 A receiver MUST ignore the value of every reserved bit and byte; it MUST NOT
    //# reject a frame or transaction because a reserved field is non-zero.
    //# WIRE-3-7 Control frames [...] carry no sequence number of their own; their VC and flags
    //# fields are reserved.
    //# WIRE-4.3-1 A transmitter MUST set the entries of VCs not in the mask to zero (they are
    //# reserved).
    //# WIRE-4.3-3 A receiver MUST ignore the entries of VCs not in the mask.
    //# WIRE-4.5-2 In an INIT frame the echo nonce is reserved (zero on transmit, ignored on
    //# receipt).
    #[test]
    fn reserved_bits_are_ignored() {
        let reprs = vectors();
        let repr_of = |name: &str| reprs.iter().find(|v| v.0 == name).unwrap().2;
        let cases: Vec<(&str, Vec<u8>)> = vec![
            // DATA: flag bits 4..2, the upper 12 bits of the sequence field.
            (
                "DATA",
                edited(&DATA_STORE, |v| {
                    v[15] |= 0x1C;
                    v[16] = 0xFF;
                    v[17] |= 0xF0;
                }),
            ),
            // ACK / NACK: VC and flags, upper sequence bits.
            (
                "ACK",
                edited(&ACK, |v| {
                    v[15] = 0xFF;
                    v[16] = 0xAB;
                    v[17] |= 0xC0;
                }),
            ),
            ("ACK tagged", edited(&ACK_TAGGED, |v| v[19] = 0x3F)),
            // CF: VC/flags, the whole sequence field, reserved bytes, entries out of the mask,
            // upper 12 bits of every entry.
            (
                "CF",
                edited(&CF, |v| {
                    v[15] = 0xFF;
                    v[16..20].copy_from_slice(&[0xFF; 4]);
                    v[21..24].copy_from_slice(&[1, 2, 3]);
                    v[28..32].copy_from_slice(&[9, 9, 9, 9]);
                    v[24] = 0xFF;
                    v[25] |= 0xF0;
                }),
            ),
            ("CC", edited(&CC, |v| v[24..28].copy_from_slice(&[0xFF; 4]))),
            // INIT: echo nonce, the undefined capability bits 13..6, upper window and grant bits.
            (
                "INIT",
                edited(&INIT, |v| {
                    v[16..20].copy_from_slice(&[0x12; 4]);
                    v[24..28].copy_from_slice(&[0xFF; 4]);
                    v[34..36].copy_from_slice(&[0x3F, 0xC0]);
                    v[36] = 0xFF;
                    v[37] |= 0xF0;
                    v[40] = 0xFF;
                    v[41] |= 0xF0;
                }),
            ),
            ("INIT_ECHO", edited(&INIT_ECHO, |v| v[34] = 0x17)),
        ];
        for (name, bytes) in cases {
            assert_eq!(
                FrameRepr::parse_bytes(&bytes, MAX_FRAME_LEN),
                Ok(repr_of(name)),
                "{name}"
            );
        }
    }

    //= type=test
    //# WIRE-2.2-1 A frame MAY carry one 802.1Q tag (TPID 0x8100). A receiver MUST accept frames
    //# with and without the tag on the same link.
    //# WIRE-2.2-2 The receiver MUST NOT derive the virtual channel from the PCP; the VC field of
    //# the link header (§3) is authoritative.
    //# WIRE-4.5-8 Every receiver MUST accept tagged frames (WIRE-2.2-1) and frames that carry more
    //# than one transaction, whatever capabilities it or its peer announced.
    #[test]
    fn vlan_tag_and_vc() {
        // PCP 5 in the tag, VC 2 in the link header: the VC is 2.
        let bytes = edited(&DATA_FENCE_TAGGED, |v| v[19] = 2 << 5);
        let repr = FrameRepr::parse_bytes(&bytes, MAX_FRAME_LEN).unwrap();
        assert_eq!(repr.eth.vlan.map(|t| t.pcp), Some(5));
        let LinkFrame::Data { header, .. } = repr.link else {
            panic!("not DATA")
        };
        assert_eq!(header.vc.value(), 2);
        // Every TCI value round-trips: PCP, DEI and VID.
        for tci in [0x0000u16, 0xFFFF, 0x1001, 0xE000, 0x0FFF] {
            let tag = VlanTag::from_tci(tci);
            assert_eq!(tag.tci(), tci);
            let bytes = edited(&ACK_TAGGED, |v| {
                v[14..16].copy_from_slice(&tci.to_be_bytes())
            });
            let repr = FrameRepr::parse_bytes(&bytes, MAX_FRAME_LEN).unwrap();
            assert_eq!(repr.eth.vlan, Some(tag));
            let mut out = [0xa5u8; 64];
            repr.emit(&mut out).unwrap();
            assert_eq!(out[..], bytes[..]);
        }
        assert_eq!(eth_tagged().header_len(), 18);
        assert_eq!(eth_untagged().header_len(), 14);
    }

    //= type=test
    //# WIRE-2.3-2 A receiver MUST accept a frame whatever its destination MAC address.
    #[test]
    fn any_destination_mac() {
        for dst in [
            [0xFF; 6],
            [0; 6],
            [0x33, 0x33, 0, 0, 0, 1],
            [0x02, 9, 8, 7, 6, 5],
        ] {
            let bytes = edited(&ACK, |v| v[..6].copy_from_slice(&dst));
            let repr = FrameRepr::parse_bytes(&bytes, MAX_FRAME_LEN).unwrap();
            assert_eq!(repr.eth.dst, MacAddr(dst));
            assert_eq!(repr.link, LinkFrame::Ack(Seq::new(0xABCDE)));
        }
        assert_eq!(MacAddr::LINK_LOCAL.0, [0x01, 0x80, 0xC2, 0x00, 0x00, 0x0E]);
    }

    //= type=test
    //# WIRE-4.3-2 A CF or CC frame whose VC mask is zero carries no information; a receiver MUST
    //# accept and ignore it.
    #[test]
    fn credit_mask_zero_is_accepted() {
        for kind in [3u8, 4] {
            let bytes = edited(&CF, |v| {
                v[14] = 0x10 | kind;
                v[20] = 0;
            });
            let repr = FrameRepr::parse_bytes(&bytes, MAX_FRAME_LEN).unwrap();
            let empty = CreditRepr::default();
            let want = if kind == 3 {
                LinkFrame::CreditUpdate(empty)
            } else {
                LinkFrame::CreditResync(empty)
            };
            assert_eq!(repr.link, want);
            // Emitted, the unused entries are zero.
            let mut out = [0xa5u8; 64];
            repr.emit(&mut out).unwrap();
            assert!(out[15..60].iter().all(|&b| b == 0));
        }
    }

    //= type=test
    //# WIRE-4.5-1 The number of VCs MUST be 1..8, the credit size a power of two in 32..2048, the
    //# MFS in 320..9216, the LLR window in 1..2^19, and the credit grant of each VC below the
    //# number of VCs 1..2^19 - 1. The entries of VCs at or above the number of VCs are reserved
    //# (WIRE-1.2-1, WIRE-1.2-2): they are not range-checked. (1.1: a grant of 0 was allowed; a VC
    //# with no credit can never carry a frame, so it is now out of range.)
    #[test]
    fn init_ranges() {
        // (body offset, bytes, field): each a value just outside its range.
        let bad: [(usize, &[u8], Field); 12] = [
            (8, &[0], Field::InitVcs),
            (8, &[9], Field::InitVcs),
            (10, &[0x00, 0x10], Field::InitCreditSize),
            (10, &[0x10, 0x00], Field::InitCreditSize),
            (10, &[0x00, 0x30], Field::InitCreditSize),
            (10, &[0x00, 0x00], Field::InitCreditSize),
            (12, &[0x01, 0x3f], Field::InitMfs),
            (12, &[0x24, 0x01], Field::InitMfs),
            (16, &[0, 0, 0, 0], Field::InitWindow),
            (16, &[0, 8, 0, 1], Field::InitWindow),
            (20, &[0, 8, 0, 0], Field::InitCredits),
            (24, &[0, 0x0F, 0xFF, 0xFF], Field::InitCredits),
        ];
        for frame in [&INIT[..], &INIT_ECHO[..]] {
            for (at, value, field) in bad {
                let bytes = edited(frame, |v| {
                    v[20 + at..20 + at + value.len()].copy_from_slice(value)
                });
                let e = parse_err(&bytes);
                assert_eq!(
                    (e.kind, e.field, e.offset, e.spec, e.action),
                    (
                        ErrorKind::OutOfRange,
                        field,
                        20 + at,
                        "WIRE-4.5-1",
                        Action::DiscardMalformed
                    ),
                    "{field:?} {value:?}"
                );
                assert!(!e.action.nacks());
            }
        }
        // The edges of every range are accepted.
        let good: [(usize, &[u8]); 7] = [
            (8, &[1]),
            (8, &[8]),
            (10, &[0x00, 0x20]),
            (10, &[0x08, 0x00]),
            (12, &[0x01, 0x40]),
            (16, &[0, 0, 0, 1]),
            (16, &[0, 8, 0, 0]),
        ];
        for (at, value) in good {
            let bytes = edited(&INIT_ECHO, |v| {
                v[20 + at..20 + at + value.len()].copy_from_slice(value)
            });
            assert!(
                FrameRepr::parse_bytes(&bytes, MAX_FRAME_LEN).is_ok(),
                "{at} {value:?}"
            );
        }
        // Grants of VCs at or above the number of VCs are not read.
        let bytes = edited(&INIT, |v| {
            v[20 + 28..20 + 32].copy_from_slice(&[0, 0x0F, 0xFF, 0xFF])
        });
        assert_eq!(
            FrameRepr::parse_bytes(&bytes, MAX_FRAME_LEN).unwrap().link,
            LinkFrame::Init(init_repr())
        );
    }

    #[test]
    fn init_emit_validates() {
        let ok = init_repr();
        let mut buf = [0u8; 76];
        let emit = |init: InitRepr, buf: &mut [u8]| {
            FrameRepr {
                eth: eth_untagged(),
                link: LinkFrame::Init(init),
            }
            .emit(buf)
        };
        assert_eq!(emit(ok, &mut buf), Ok(76));
        for (bad, field) in [
            (InitRepr { vcs: 0, ..ok }, Field::InitVcs),
            (InitRepr { vcs: 9, ..ok }, Field::InitVcs),
            (
                InitRepr {
                    credit_size: 48,
                    ..ok
                },
                Field::InitCreditSize,
            ),
            (
                InitRepr {
                    credit_size: 4096,
                    ..ok
                },
                Field::InitCreditSize,
            ),
            (InitRepr { mfs: 319, ..ok }, Field::InitMfs),
            (InitRepr { window: 0, ..ok }, Field::InitWindow),
            (
                InitRepr {
                    window: (1 << 19) + 1,
                    ..ok
                },
                Field::InitWindow,
            ),
        ] {
            assert_eq!(
                emit(bad, &mut buf),
                Err(EmitError::Invalid(field)),
                "{bad:?}"
            );
        }
        let mut credits = ok.credits;
        credits[1] = 1 << 19;
        assert_eq!(
            emit(InitRepr { credits, ..ok }, &mut buf),
            Err(EmitError::Invalid(Field::InitCredits))
        );
        let mut credits = ok.credits;
        credits[2] = 1;
        assert_eq!(
            emit(InitRepr { credits, ..ok }, &mut buf),
            Err(EmitError::Invalid(Field::InitCredits))
        );
    }

    #[test]
    fn emit_buffer_too_small_and_too_long() {
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
        let payload = [0u8; MAX_FRAME_LEN];
        let repr = FrameRepr {
            eth: eth_untagged(),
            link: LinkFrame::Data {
                header: DataHeader::default(),
                payload: &payload[..MAX_FRAME_LEN - 23],
            },
        };
        let mut buf = vec![0u8; MAX_FRAME_LEN + 1];
        assert_eq!(
            repr.emit(&mut buf),
            Err(EmitError::TooLong {
                len: MAX_FRAME_LEN + 1,
                mfs: MAX_FRAME_LEN
            })
        );
    }

    //= type=test
    //# WIRE-2.5-5 A receiver MUST discard a frame that ends with a stomped FCS without
    //# interpreting any of its fields, count it in `rx_stomped`, and MUST NOT treat it as a
    //# damaged frame: it causes no NACK and takes no sequence number.
    #[test]
    fn stomped_frames_are_discarded_apart() {
        for (name, bytes, _) in vectors() {
            let mut f = bytes.to_vec();
            let n = f.len() - 4;
            let stomped = fcs::stomped_bytes(&f[..n]);
            f[n..].copy_from_slice(&stomped);
            let e = Frame::new_checked(&f[..], MAX_FRAME_LEN).unwrap_err();
            assert_eq!(
                (e.kind, e.field, e.offset, e.spec, e.action),
                (
                    ErrorKind::StompedFcs,
                    Field::Fcs,
                    n,
                    "WIRE-2.5-5",
                    Action::DiscardStomped
                ),
                "{name}"
            );
            let d = e.discard().unwrap();
            assert_eq!(d, Discard::Stomped);
            assert!(!d.nacks() && !d.seq_consumed() && !e.action.nacks());
            // A stomped frame whose size is wrong is damaged: size comes first.
            let e = Frame::new_checked(&f[..], n).unwrap_err();
            assert_eq!(e.discard(), Some(Discard::Damaged));
        }
    }

    //= type=test
    //# WIRE-7-1 A receiver MUST apply the stages of the receive pipeline in the order of Figure
    //# WIRE-F1 and discard a frame at the first stage it fails.
    //# WIRE-7-2 A frame discarded before link-layer acceptance [...] MUST NOT take a sequence
    //# number.
    //# WIRE-7-3 A DATA frame whose sequence number is the expected one, and whose cost fits the
    //# free buffer of its VC (link.md LINK-4-6), MUST be accepted by the link layer on its link
    //# header alone: its sequence number is consumed and acknowledged even when its network header
    //# or its transactions are later found malformed. Its discard is then counted by the layer that
    //# reads the network header, its credits are freed at once, and it causes no NACK. (Not
    //# consuming the number would turn one bad frame into a gap, a NACK, the same frame replayed
    //# and a FLUSH.)
    //# WIRE-2.1-3 A foreign frame is not a link error: it MUST NOT cause a NACK.
    //# WIRE-2.5-6 A receiver MUST discard a frame with a bad FCS without interpreting any of its
    //# fields and count it in `rx_fcs_errors`.
    //# WIRE-3-8 A frame discarded by WIRE-3-2 MUST NOT cause a NACK.
    //# WIRE-3-9 A frame discarded by WIRE-3-3 MUST NOT cause a NACK.
    //# WIRE-2.4-5 A frame discarded by WIRE-2.4-3 MUST NOT cause a NACK.
    //# WIRE-5-6 Discarding a DATA frame for its network header MUST NOT cause a NACK.
    //# WIRE-7-4 A DATA frame on a VC the link did not agree, whose sequence number is the expected
    //# one, is accepted by the link layer (sequence number consumed, acknowledged), charged no
    //# credit, discarded and counted in rx_vc_not_agreed; it MUST NOT cause a NACK.
    //# WIRE-7-5 A DATA frame received while the link is not UP is discarded and counted in
    //# rx_not_up (link.md LINK-2-10); it takes no sequence number and MUST NOT cause a NACK.
    #[test]
    fn discard_table() {
        // Table WIRE-T1: (discard, counter, sequence number consumed, NACK).
        let table = [
            (Discard::Damaged, "rx_damaged", false, true),
            (Discard::FcsError, "rx_fcs_errors", false, true),
            (Discard::Stomped, "rx_stomped", false, false),
            (Discard::Foreign, "rx_foreign", false, false),
            (Discard::BadVersion, "rx_bad_version", false, false),
            (Discard::UnknownKind, "rx_unknown_kind", false, false),
            (
                Discard::MalformedControl,
                "rx_malformed_control",
                false,
                false,
            ),
            (Discard::NotUp, "rx_not_up", false, false),
            (Discard::VcNotAgreed, "rx_vc_not_agreed", true, false),
            (Discard::MalformedFrame, "malformed_frames", true, false),
            (Discard::MalformedTxn, "malformed_txns", true, false),
            (Discard::UnknownResponse, "unknown_responses", true, false),
            (Discard::BadResponse, "bad_responses", true, false),
        ];
        assert_eq!(Discard::ALL.len(), table.len());
        for ((d, counter, consumed, nack), all) in table.into_iter().zip(Discard::ALL) {
            assert_eq!(d, all);
            assert_eq!(
                (d.counter(), d.seq_consumed(), d.nacks()),
                (counter, consumed, nack),
                "{d:?}"
            );
            assert!(d.spec().starts_with("WIRE-"));
            assert_eq!(d.to_string(), counter);
        }
        // Each stage's error is classified as its row; the checks run in pipeline order, so a
        // frame wrong at several stages is discarded at the first.
        let with = |f: &[u8], at: usize, b: u8| edited(f, |v| v[at] = b);
        let cases: Vec<(Vec<u8>, Discard)> = vec![
            (ACK[..63].to_vec(), Discard::Damaged),
            (
                {
                    let mut v = ACK.to_vec();
                    v[63] ^= 1;
                    v
                },
                Discard::FcsError,
            ),
            (with(&ACK, 12, 0x08), Discard::Foreign),
            (
                edited(&ACK, |v| {
                    v[12] = 0x08;
                    v[14] = 0x2F
                }),
                Discard::Foreign,
            ),
            (with(&ACK, 14, 0x21), Discard::BadVersion),
            (with(&ACK, 14, 0x1F), Discard::UnknownKind),
            (edited(&ACK, |v| v.insert(60, 0)), Discard::MalformedControl),
            (with(&INIT, 28, 0), Discard::MalformedControl),
            (
                edited(&DATA_STORE, |v| v.insert(60, 0)),
                Discard::MalformedFrame,
            ),
            (with(&DATA_STORE, 27, 33), Discard::MalformedFrame),
        ];
        for (bytes, want) in cases {
            let e = parse_err(&bytes);
            assert_eq!(e.discard(), Some(want), "{e}");
            assert_eq!(e.action.nacks(), want.nacks(), "{e}");
        }
        // The link layer judges a DATA frame on what `Frame::new_checked` sees: a frame whose
        // payload is malformed passes it, and its sequence number can be taken.
        let bad_payload = with(&DATA_STORE, 27, 33);
        let frame = Frame::new_checked(&bad_payload[..], MAX_FRAME_LEN).unwrap();
        assert_eq!(frame.link_header().seq(), Seq::new(0xABCDE));
        assert_eq!(frame.kind(), FrameKind::Data);
    }

    //= type=test
    //# WIRE-2.4-7 A receiver MUST ignore the value of padding bytes: padding is reserved
    //# (WIRE-1.2-2), and non-zero padding MUST NOT make a frame malformed.
    //# WIRE-2.4-4 A transmitter MUST NOT add any other bytes after the body.
    #[test]
    fn nonzero_padding_is_ignored() {
        for (name, bytes, repr) in vectors() {
            let Some(used) = (match repr.link {
                LinkFrame::Data { payload, .. } => Some(payload.len()),
                other => other.kind().control_body_len(),
            }) else {
                continue;
            };
            let start = repr.eth.header_len() + LINK_HEADER_LEN + used;
            let end = bytes.len() - FCS_LEN;
            let padded = edited(bytes, |v| v[start..end].fill(0xA5));
            assert_eq!(
                FrameRepr::parse_bytes(&padded, MAX_FRAME_LEN),
                Ok(repr),
                "{name}"
            );
            // Emitted again, the padding is zero and nothing follows the body but padding.
            let mut out = vec![0xa5u8; bytes.len()];
            repr.emit(&mut out).unwrap();
            assert!(out[start..end].iter().all(|&b| b == 0), "{name}");
            assert_eq!(out.len(), frame_len(repr.eth.header_len(), used));
        }
    }

    //= type=test
    //# WIRE-2.4-6 Until the link is UP a receiver MUST judge a frame's size against its own
    //# configured MFS; once the link is UP, against the MFS agreed at bring-up.
    #[test]
    fn size_is_judged_against_the_mfs_in_force() {
        // A 400 B INIT arrives at an end configured for 320 B: damaged. The same end configured
        // for 9216 B and agreed on 512 B accepts it.
        let mut big = vec![0u8; 400];
        big[..76].copy_from_slice(&INIT);
        let big = edited(&big, |_| {});
        for (mfs, ok) in [(320usize, false), (399, false), (400, true), (512, true)] {
            let r = Frame::new_checked(&big[..], mfs);
            assert_eq!(r.is_ok(), ok, "{mfs}");
            if let Err(e) = r {
                assert_eq!(e.discard(), Some(Discard::Damaged));
            }
        }
    }

    //= type=test
    //# WIRE-4.5-4 A receiver MUST discard an INIT or INIT_ECHO whose fields are out of the ranges
    //# of WIRE-4.5-1, count it in `rx_malformed_control`, and MUST NOT bring the link up on it.
    //# WIRE-4.5-3 A receiver MUST ignore the capability bits this document does not define.
    //# WIRE-4.5-6 A transmitter MUST set a capability bit only when it implements the feature
    //# [...] and MUST set bits 13..6 to zero.
    //# WIRE-4.5-7 A transmitter MUST set the role field to its own role (0, 1 or 2).
    #[test]
    fn init_overhead_capabilities_and_role() {
        let init = InitRepr {
            credit_overhead: 24,
            caps: Capabilities::RDMA | Capabilities::ATOMICS | Capabilities::TAGGED,
            role: Role::Switch,
            ..init_repr()
        };
        let repr = FrameRepr {
            eth: eth_untagged(),
            link: LinkFrame::Init(init),
        };
        let mut buf = [0xa5u8; 76];
        assert_eq!(repr.emit(&mut buf), Ok(76));
        assert_eq!(buf[29], 24);
        // Role 2 in bits 15..14, capabilities 0b01_0011 in bits 5..0, bits 13..6 zero.
        assert_eq!(buf[34..36], [0x80, 0x13]);
        assert_eq!(FrameRepr::parse_bytes(&buf, MAX_FRAME_LEN), Ok(repr));
        // Undefined capability bits are ignored on receipt, refused on transmit.
        let odd = edited(&buf, |v| v[34..36].copy_from_slice(&[0xBF, 0xD3]));
        let LinkFrame::Init(got) = FrameRepr::parse_bytes(&odd, MAX_FRAME_LEN).unwrap().link else {
            panic!("not INIT")
        };
        assert_eq!((got.caps, got.role), (init.caps, Role::Switch));
        let bad = InitRepr {
            caps: Capabilities::from_bits_truncate(0x3F),
            ..init
        };
        assert_eq!(bad.validate(), Ok(()));
        // The reserved role 3 is accepted and kept.
        let r3 = edited(&buf, |v| v[34] |= 0xC0);
        let LinkFrame::Init(got) = FrameRepr::parse_bytes(&r3, MAX_FRAME_LEN).unwrap().link else {
            panic!("not INIT")
        };
        assert_eq!(got.role.code(), 3);
        // An out-of-range field: discarded as a malformed control frame.
        let e = parse_err(&edited(&buf, |v| v[28] = 0));
        assert_eq!(e.discard(), Some(Discard::MalformedControl));
        assert!(!e.action.nacks());
    }

    //= type=test
    //# WIRE-4.5-5 A transmitter MUST compute the cost in credits of every DATA frame it sends to
    //# the peer from the credit size and the credit overhead the peer announced.
    //# WIRE-4.5-9 An end MUST NOT come UP on an INIT_ECHO, nor act on an INIT, whose credit grant
    //# on some agreed VC cannot carry one frame of the agreed MFS.
    #[test]
    fn frame_cost_and_grant_check() {
        let peer = InitRepr {
            credit_size: 64,
            credit_overhead: 20,
            credits: [10, 3, 0, 0, 0, 0, 0, 0],
            ..init_repr()
        };
        assert_eq!(peer.frame_cost(64), 2);
        assert_eq!(peer.frame_cost(108), 2);
        assert_eq!(peer.frame_cost(109), 3);
        assert_eq!(peer.frame_cost(0), 1);
        // MFS 320: (320 + 20) / 64 rounds up to 6. VC 0 grants 10, VC 1 only 3.
        assert_eq!(peer.check_grants(1, 320), Ok(()));
        let short = peer.check_grants(2, 320).unwrap_err();
        assert_eq!(
            short,
            ShortGrant {
                vc: 1,
                grant: 3,
                needed: 6
            }
        );
        assert_eq!(
            short.to_string(),
            "VC 1 grants 3 credits, one frame of the agreed MFS needs 6"
        );
        // At an agreed MFS of 172 one frame costs 3: both VCs carry it.
        assert_eq!(peer.check_grants(2, 172), Ok(()));
        assert_eq!(peer.check_grants(2, 173).map_err(|s| s.vc), Err(1));
    }

    #[test]
    fn kind_names_and_body_sizes() {
        let kinds = [
            (FrameKind::Data, "DATA", None),
            (FrameKind::Ack, "ACK", Some(0)),
            (FrameKind::Nack, "NACK", Some(0)),
            (FrameKind::CreditUpdate, "CF", Some(36)),
            (FrameKind::CreditResync, "CC", Some(36)),
            (FrameKind::Init, "INIT", Some(52)),
            (FrameKind::InitEcho, "INIT_ECHO", Some(52)),
        ];
        for (kind, name, len) in kinds {
            assert_eq!((kind.name(), kind.control_body_len()), (name, len));
        }
        assert_eq!(core::mem::size_of::<LinkHeader>(), LINK_HEADER_LEN);
        assert_eq!(core::mem::size_of::<CreditBody>(), CREDIT_BODY_LEN);
        assert_eq!(core::mem::size_of::<InitBody>(), INIT_BODY_LEN);
    }
}

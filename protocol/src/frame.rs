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
use crate::fcs::{self, FCS_LEN};
use crate::types::{MacAddr, Seq, Vc};

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
    reserved0: u8,
    credit_size: U16,
    mfs: U16,
    reserved1: [u8; 2],
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
}

impl<B: AsRef<[u8]>> Frame<B> {
    /// Checks the frame-level requirements of wire.md §2 and §3, in the order a receiver must apply
    /// them: size (WIRE-2.4-2), FCS (WIRE-2.5-3), EtherType (WIRE-2.1-2), version (WIRE-3-2) and
    /// kind (WIRE-3-3). `mfs` is the link's maximum frame size.
    pub fn new_checked(buf: B, mfs: usize) -> Result<Self, Error> {
        let bytes = buf.as_ref();
        let len = bytes.len();
        //= docs/spec/wire.md#24-frame-size-and-padding
        //# WIRE-2.4-2 A receiver MUST discard as a damaged frame (equivalent to an FCS error, §2.5)
        //# any frame shorter than 64 B or longer than the link's MFS.
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
        //= docs/spec/wire.md#25-frame-check-sequence
        //# WIRE-2.5-3 A receiver MUST check the FCS before it interprets any other field.
        if !fcs::check(bytes) {
            return Err(Error::new(
                ErrorKind::BadFcs,
                Field::Fcs,
                len.saturating_sub(FCS_LEN),
                "WIRE-2.5-3",
                Action::DiscardDamaged,
            ));
        }
        //= docs/spec/wire.md#21-ethertype
        //# WIRE-2.1-2 A receiver MUST discard, and count as foreign, a frame whose EtherType
        //# (after at most one 802.1Q tag) is not 0x88B5.
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
        //# WIRE-3-2 A receiver MUST discard, and count, a frame whose version is not 1.
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
        //# WIRE-3-3 A receiver MUST discard, and count as an unknown kind, a frame whose kind is
        //# 0x7..0xF.
        if link.kind().is_none() {
            return Err(Error::new(
                ErrorKind::Unknown,
                Field::Kind,
                eth_len,
                "WIRE-3-3",
                Action::DiscardMalformed,
            ));
        }
        Ok(Frame { buf, eth_len })
    }

    fn bytes(&self) -> &[u8] {
        self.buf.as_ref()
    }

    /// Length of the whole frame including the FCS.
    pub fn len(&self) -> usize {
        self.bytes().len()
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
        let end = self.bytes().len().saturating_sub(FCS_LEN);
        start..end.max(start)
    }

    /// The FCS bytes as they appear on the wire.
    pub fn fcs(&self) -> [u8; FCS_LEN] {
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
            //# WIRE-4.3-1 A transmitter MUST set the entries of VCs not in the mask to zero (they
            //# are reserved); a receiver MUST ignore them.
            if body.mask & (1 << v) != 0 {
                *out = Some(c.get() & Seq::MASK);
            }
        }
        CreditRepr { counters }
    }

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
    /// Credits granted on each VC (entries at or above `vcs` are zero), each below 2^19.
    pub credits: [u32; 8],
}

impl InitRepr {
    fn parse(body: &InitBody, offset: usize) -> Result<Self, Error> {
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
        //# the MFS in 320..9216, the LLR window in 1..2^19, and each credit grant at most 2^19 - 1
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
                if value >= Seq::MAX_WINDOW {
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
        })
    }

    fn validate(&self) -> Result<(), EmitError> {
        let ok = (1..=8).contains(&self.vcs)
            && (32..=2048).contains(&self.credit_size)
            && self.credit_size.is_power_of_two()
            && (MIN_MFS..=MAX_FRAME_LEN).contains(&usize::from(self.mfs))
            && (1..=Seq::MAX_WINDOW).contains(&self.window);
        if !ok {
            return Err(EmitError::Invalid(Field::ControlBody));
        }
        for (v, c) in self.credits.iter().enumerate() {
            if v < usize::from(self.vcs) && *c >= Seq::MAX_WINDOW
                || v >= usize::from(self.vcs) && *c != 0
            {
                return Err(EmitError::Invalid(Field::InitCredits));
            }
        }
        Ok(())
    }

    fn emit(&self, echo_nonce: u32, body: &mut InitBody) {
        body.nonce = U32::new(self.nonce);
        body.echo_nonce = U32::new(echo_nonce);
        body.vcs = self.vcs;
        body.reserved0 = 0;
        body.credit_size = U16::new(self.credit_size);
        body.mfs = U16::new(self.mfs);
        body.reserved1 = [0; 2];
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
                //# WIRE-4-1 A receiver MUST discard, and count as malformed, a control frame
                //# whose body is shorter than its size, or that carries more bytes than that
                //# size plus the padding.
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
                //= docs/spec/wire.md#5-data-frames-the-network-header
                //# WIRE-5-3 A receiver MUST discard, and count as malformed, a DATA frame whose
                //# network header is incomplete, [...] or whose payload length runs past the end
                //# of the frame (before the FCS).
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

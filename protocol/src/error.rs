//! Parse and emit errors.
//!
//! A parse error names the field that was wrong, the byte offset of that field from the start of
//! the structure handed to the parser (the frame for frame-level errors, the DATA payload for
//! network-header and transaction errors), the requirement of `docs/spec/wire.md` it violates, and
//! what the receiver must do about it ([`Action`]). That makes the behaviour on bad input testable:
//! a test asserts the action, not a message.

use core::fmt;

use crate::types::Status;

/// The field of a frame or transaction an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Field {
    /// The frame as a whole (its length).
    Frame,
    /// The Ethernet EtherType (after an optional 802.1Q tag).
    EtherType,
    /// The frame check sequence.
    Fcs,
    /// Bytes between the end of the body and the FCS.
    Padding,
    /// The link header's version nibble.
    Version,
    /// The link header's kind nibble.
    Kind,
    /// A control frame's body.
    ControlBody,
    /// INIT: number of VCs.
    InitVcs,
    /// INIT: credit size.
    InitCreditSize,
    /// INIT: maximum frame size.
    InitMfs,
    /// INIT: LLR window.
    InitWindow,
    /// INIT: credit grant of a VC.
    InitCredits,
    /// INIT: capability bits.
    InitCaps,
    /// The network header as a whole.
    NetworkHeader,
    /// Network header: destination GPU id.
    DstGpu,
    /// Network header: source GPU id.
    SrcGpu,
    /// Network header: transaction count.
    TxnCount,
    /// Network header: payload length.
    PayloadLength,
    /// A transaction's common prefix.
    TxnPrefix,
    /// A transaction's `hlen`.
    Hlen,
    /// A transaction's `dlen`.
    Dlen,
    /// A memory request's address.
    Address,
    /// The 802.1Q tag.
    Vlan,
    /// LOAD: length.
    LoadLength,
    /// RDMA: offset and segment length against the total length.
    RdmaOffset,
    /// RDMA: total length.
    RdmaTotal,
    /// A response's status.
    Status,
    /// A transaction's opcode.
    Opcode,
}

impl Field {
    /// Short dotted name of the field, as the decode tools print it.
    pub const fn name(self) -> &'static str {
        match self {
            Field::Frame => "frame.length",
            Field::EtherType => "eth.ethertype",
            Field::Fcs => "eth.fcs",
            Field::Padding => "eth.padding",
            Field::Version => "link.version",
            Field::Kind => "link.kind",
            Field::ControlBody => "control.body",
            Field::InitVcs => "init.vcs",
            Field::InitCreditSize => "init.credit_size",
            Field::InitMfs => "init.mfs",
            Field::InitWindow => "init.llr_window",
            Field::InitCredits => "init.credits",
            Field::InitCaps => "init.caps",
            Field::NetworkHeader => "net.header",
            Field::DstGpu => "net.dst_gpu",
            Field::SrcGpu => "net.src_gpu",
            Field::TxnCount => "net.txn_count",
            Field::PayloadLength => "net.payload_length",
            Field::TxnPrefix => "txn.prefix",
            Field::Hlen => "txn.hlen",
            Field::Dlen => "txn.dlen",
            Field::Address => "txn.address",
            Field::Vlan => "eth.vlan",
            Field::LoadLength => "txn.length",
            Field::RdmaOffset => "txn.offset",
            Field::RdmaTotal => "txn.total_length",
            Field::Status => "txn.status",
            Field::Opcode => "txn.opcode",
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a receiver must do with input that failed to parse (docs/spec/wire.md §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// The frame was damaged on the link (bad FCS, runt, oversize): discard it without reading any
    /// field, count an FCS error, and let the link layer NACK.
    DiscardDamaged,
    /// The frame ends with a stomped FCS (WIRE-2.5-4): its sender gave it up on purpose. Discard
    /// it without reading any field and count it as stomped; no NACK, and the link layer takes no
    /// sequence number from it.
    DiscardStomped,
    /// The frame is not EthLink (EtherType): discard and count as foreign; no NACK.
    DiscardForeign,
    /// The frame has a good FCS but is not acceptable (version, kind, body): discard and count as
    /// malformed; no NACK.
    DiscardMalformed,
    /// A transaction's structure cannot be walked: discard it and the rest of the frame, count one
    /// malformed frame; the transactions before it stand.
    DiscardRest,
    /// A defined response whose fields violate its section (a bad response, WIRE-6.1-9): discard
    /// this transaction, count it, then go on with the next one.
    DiscardTxn,
    /// A request that must not be executed: answer it with `opcode` (the response opcode), the
    /// request's `tag` and `status`, then go on with the next transaction.
    Respond {
        /// The response opcode, `request opcode | 0x80`.
        opcode: u8,
        /// The request's tag, echoed.
        tag: u16,
        /// The status to answer with.
        status: Status,
    },
}

impl Action {
    /// Whether the link layer must answer this with a NACK.
    pub const fn nacks(self) -> bool {
        matches!(self, Action::DiscardDamaged)
    }

    /// Whether the parser can go on with the next transaction of the same frame.
    pub const fn continues(self) -> bool {
        matches!(self, Action::DiscardTxn | Action::Respond { .. })
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::DiscardDamaged => f.write_str("discard as damaged, count FCS error, NACK"),
            Action::DiscardStomped => f.write_str("discard as stomped, count; no NACK"),
            Action::DiscardForeign => f.write_str("discard as foreign, count"),
            Action::DiscardMalformed => f.write_str("discard as malformed, count"),
            Action::DiscardRest => f.write_str("discard the rest of the frame, count"),
            Action::DiscardTxn => f.write_str("discard the transaction, count"),
            Action::Respond {
                opcode,
                tag,
                status,
            } => write!(
                f,
                "respond with opcode {opcode:#04x} tag {tag} status {}",
                status.name()
            ),
        }
    }
}

/// Which counter a receiver increments for a frame or transaction it discards, and what the
/// discard means for the link layer (wire.md §7, Table WIRE-T1).
///
/// Every discard increments exactly one counter. [`Error::discard`] classifies a parse error;
/// [`crate::TxnRepr::discard`] classifies a transaction that parsed but must still be dropped
/// (an unknown response opcode). The two link-layer rows of the table that no parser can see
/// ([`Discard::VcNotAgreed`], [`Discard::NotUp`]) are here too so that the table is whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Discard {
    /// Shorter than 64 B or longer than the MFS in force (WIRE-2.4-2).
    Damaged,
    /// Bad FCS (WIRE-2.5-6).
    FcsError,
    /// Stomped FCS (WIRE-2.5-5).
    Stomped,
    /// Not EthLink (WIRE-2.1-2).
    Foreign,
    /// Link header version is not 1 (WIRE-3-2).
    BadVersion,
    /// Unknown frame kind (WIRE-3-3).
    UnknownKind,
    /// Malformed control frame body (WIRE-4-2, WIRE-4.5-4).
    MalformedControl,
    /// DATA frame received while the link is not UP (link.md LINK-2-7).
    NotUp,
    /// DATA frame on a VC the link did not agree (WIRE-7-4).
    VcNotAgreed,
    /// DATA frame whose network header is malformed, or with bytes beyond its padding
    /// (WIRE-5-3, WIRE-5-7, WIRE-2.4-3).
    MalformedFrame,
    /// The transaction walk cannot go on (WIRE-6.1-3, WIRE-6.1-4).
    MalformedTxn,
    /// A response with an opcode wire.md does not define (WIRE-6.1-7).
    UnknownResponse,
    /// A defined response whose fields violate its section (WIRE-6.1-9).
    BadResponse,
}

impl Discard {
    /// Every row of the table, in pipeline order.
    pub const ALL: [Discard; 13] = [
        Discard::Damaged,
        Discard::FcsError,
        Discard::Stomped,
        Discard::Foreign,
        Discard::BadVersion,
        Discard::UnknownKind,
        Discard::MalformedControl,
        Discard::NotUp,
        Discard::VcNotAgreed,
        Discard::MalformedFrame,
        Discard::MalformedTxn,
        Discard::UnknownResponse,
        Discard::BadResponse,
    ];

    /// The counter's name as wire.md §7 gives it. A DATA frame with a malformed network header
    /// is counted `malformed_frames` by an endpoint and `discard_malformed` by a switch; this
    /// returns the endpoint's name.
    pub const fn counter(self) -> &'static str {
        match self {
            Discard::Damaged => "rx_damaged",
            Discard::FcsError => "rx_fcs_errors",
            Discard::Stomped => "rx_stomped",
            Discard::Foreign => "rx_foreign",
            Discard::BadVersion => "rx_bad_version",
            Discard::UnknownKind => "rx_unknown_kind",
            Discard::MalformedControl => "rx_malformed_control",
            Discard::NotUp => "rx_not_up",
            Discard::VcNotAgreed => "rx_vc_not_agreed",
            Discard::MalformedFrame => "malformed_frames",
            Discard::MalformedTxn => "malformed_txns",
            Discard::UnknownResponse => "unknown_responses",
            Discard::BadResponse => "bad_responses",
        }
    }

    //= docs/spec/wire.md#7-receive-pipeline
    //# WIRE-7-2 A frame discarded before link-layer acceptance (size, FCS, stomped, EtherType,
    //# version, kind, control body, DATA while not UP) MUST NOT take a sequence number.
    //= docs/spec/wire.md#7-receive-pipeline
    //# WIRE-7-3 A DATA frame whose sequence number is the expected one, and whose cost fits the
    //# free buffer of its VC (link.md LINK-4-6), MUST be accepted by the link layer on its link
    //# header alone: its sequence number is consumed and acknowledged even when its network header
    //# or its transactions are later found malformed. Its discard is then counted by the layer that
    //# reads the network header, its credits are freed at once, and it causes no NACK. (Not
    //# consuming the number would turn one bad frame into a gap, a NACK, the same frame replayed
    //# and a FLUSH.)
    /// Whether the link layer has taken the frame's sequence number when this discard happens.
    pub const fn seq_consumed(self) -> bool {
        matches!(
            self,
            Discard::VcNotAgreed
                | Discard::MalformedFrame
                | Discard::MalformedTxn
                | Discard::UnknownResponse
                | Discard::BadResponse
        )
    }

    /// Whether the discard draws a NACK from the link layer (only a damaged frame does, and
    /// only in the states link.md says).
    pub const fn nacks(self) -> bool {
        matches!(self, Discard::Damaged | Discard::FcsError)
    }

    /// The requirement of wire.md that names the discard.
    pub const fn spec(self) -> &'static str {
        match self {
            Discard::Damaged => "WIRE-2.4-2",
            Discard::FcsError => "WIRE-2.5-6",
            Discard::Stomped => "WIRE-2.5-5",
            Discard::Foreign => "WIRE-2.1-2",
            Discard::BadVersion => "WIRE-3-2",
            Discard::UnknownKind => "WIRE-3-3",
            Discard::MalformedControl => "WIRE-4-2",
            Discard::NotUp => "WIRE-7-5",
            Discard::VcNotAgreed => "WIRE-7-4",
            Discard::MalformedFrame => "WIRE-5-3",
            Discard::MalformedTxn => "WIRE-6.1-3",
            Discard::UnknownResponse => "WIRE-6.1-7",
            Discard::BadResponse => "WIRE-6.1-9",
        }
    }
}

impl fmt::Display for Discard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.counter())
    }
}

/// What was wrong, in a word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input ended before the field.
    Truncated,
    /// The value is outside the field's range.
    OutOfRange,
    /// The value is a code this version does not define.
    Unknown,
    /// The value disagrees with another field or with the frame's length.
    Inconsistent,
    /// The frame check sequence does not match.
    BadFcs,
    /// The frame check sequence is the stomped FCS (WIRE-2.5-4).
    StompedFcs,
}

impl ErrorKind {
    /// Snake-case name, as machine-readable reports give it.
    pub const fn name(self) -> &'static str {
        match self {
            ErrorKind::Truncated => "truncated",
            ErrorKind::OutOfRange => "out_of_range",
            ErrorKind::Unknown => "unknown",
            ErrorKind::Inconsistent => "inconsistent",
            ErrorKind::BadFcs => "bad_fcs",
            ErrorKind::StompedFcs => "stomped_fcs",
        }
    }

    /// A short description, as error messages print it.
    pub const fn describe(self) -> &'static str {
        match self {
            ErrorKind::Truncated => "truncated",
            ErrorKind::OutOfRange => "out of range",
            ErrorKind::Unknown => "unknown value",
            ErrorKind::Inconsistent => "inconsistent",
            ErrorKind::BadFcs => "FCS mismatch",
            ErrorKind::StompedFcs => "stomped FCS",
        }
    }
}

/// A parse error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Error {
    /// What was wrong.
    pub kind: ErrorKind,
    /// The field it was wrong in.
    pub field: Field,
    /// Byte offset of the field (frame-relative or payload-relative, see the module docs).
    pub offset: usize,
    /// The requirement of docs/spec/wire.md violated, for example `"WIRE-2.5-3"`.
    pub spec: &'static str,
    /// What the receiver must do.
    pub action: Action,
}

impl Error {
    pub(crate) const fn new(
        kind: ErrorKind,
        field: Field,
        offset: usize,
        spec: &'static str,
        action: Action,
    ) -> Self {
        Error {
            kind,
            field,
            offset,
            spec,
            action,
        }
    }
}

impl Error {
    /// The counter a receiver increments for this error, or `None` when the receiver answers
    /// the transaction instead of discarding it ([`Action::Respond`]).
    ///
    /// For a DATA frame, errors of `FrameRepr::parse` on the payload length and on bytes beyond
    /// the padding belong to the network-header stage: the link layer has already accepted the
    /// frame ([`Discard::seq_consumed`]).
    pub const fn discard(&self) -> Option<Discard> {
        Some(match self.action {
            Action::DiscardDamaged => match self.kind {
                ErrorKind::BadFcs => Discard::FcsError,
                _ => Discard::Damaged,
            },
            Action::DiscardStomped => Discard::Stomped,
            Action::DiscardForeign => Discard::Foreign,
            Action::DiscardMalformed => match self.field {
                Field::Version => Discard::BadVersion,
                Field::Kind => Discard::UnknownKind,
                Field::Padding
                | Field::NetworkHeader
                | Field::DstGpu
                | Field::SrcGpu
                | Field::TxnCount
                | Field::PayloadLength => Discard::MalformedFrame,
                _ => Discard::MalformedControl,
            },
            Action::DiscardRest => Discard::MalformedTxn,
            Action::DiscardTxn => Discard::BadResponse,
            Action::Respond { .. } => return None,
        })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} at offset {} ({}): {}",
            self.field,
            self.kind.describe(),
            self.offset,
            self.spec,
            self.action
        )
    }
}

impl core::error::Error for Error {}

/// Why a representation could not be emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EmitError {
    /// The output buffer is shorter than `buffer_len()`.
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        available: usize,
    },
    /// The representation holds a value the wire format cannot carry (the field is named).
    Invalid(Field),
    /// The frame would exceed the maximum frame size.
    TooLong {
        /// Frame length the representation needs.
        len: usize,
        /// The maximum frame size.
        mfs: usize,
    },
}

impl fmt::Display for EmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmitError::BufferTooSmall { needed, available } => {
                write!(f, "buffer too small: need {needed} bytes, have {available}")
            }
            EmitError::Invalid(field) => write!(f, "value of {field} cannot be encoded"),
            EmitError::TooLong { len, mfs } => {
                write!(
                    f,
                    "frame of {len} bytes exceeds the maximum frame size {mfs}"
                )
            }
        }
    }
}

impl core::error::Error for EmitError {}

//! Decoding a frame into its JSON form and into readable text.
//!
//! The decoder applies the checks of docs/spec/wire.md in the order a receiver must (§7): the
//! frame checks of `Frame::new_checked` (WIRE-2.4-2, WIRE-2.5-3, WIRE-2.1-2, WIRE-3-2, WIRE-3-3;
//! `Frame::new_checked_without_fcs` for a frame a MAC has already checked and stripped),
//! the body checks of `FrameRepr::parse` (WIRE-2.4-3, WIRE-4-1, WIRE-4.5-1), the network header
//! (WIRE-5-3) and then each transaction in order (§6). A transaction error stops the decode there:
//! the transactions before it stand, as WIRE-6.1-3 requires a receiver to process them.

use ethlink_protocol::{
    Action, AtomicKind, AtomicOp, AtomicValue, DataRepr, Error, Frame, FrameRepr, LINK_HEADER_LEN,
    LinkFrame, NETWORK_HEADER_LEN, PREFIX_LEN, Space, Status, TxnRepr, Width, fcs::FCS_LEN,
};

use crate::vectors::encode;
use crate::vectors::model::{
    Address, CreditsJson, ErrorJson, EthJson, FrameJson, HexBytes, InitJson, KindJson, LinkJson,
    Mac, NetworkJson, PathJson, ReservedJson, SpaceJson, StatusJson, TxnJson, VlanJson,
};

/// Which stage of the receive path rejected a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// The frame checks and the body of its kind (wire.md §2, §3, §4).
    Frame,
    /// The network header of a DATA frame (wire.md §5).
    Payload,
    /// One transaction of a DATA frame (wire.md §6).
    Transaction,
}

impl Level {
    /// Lower-case name, as the JSON `error.level` spells it.
    pub const fn name(self) -> &'static str {
        match self {
            Level::Frame => "frame",
            Level::Payload => "payload",
            Level::Transaction => "transaction",
        }
    }
}

/// A parse error with the stage that raised it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameError {
    /// The stage.
    pub level: Level,
    /// For transaction errors, the position of the transaction in the frame, from 1.
    pub transaction: Option<usize>,
    /// The error the protocol crate reported.
    pub error: Error,
}

impl FrameError {
    /// The JSON form of the error.
    pub fn to_json(&self) -> ErrorJson {
        let e = &self.error;
        ErrorJson {
            level: self.level.name().to_owned(),
            transaction: self.transaction,
            field: e.field.name().to_owned(),
            kind: e.kind.name().to_owned(),
            offset: e.offset,
            spec: e.spec.to_owned(),
            action: e.action.to_string(),
            nack: e.action.nacks(),
            message: e.to_string(),
        }
    }
}

/// The result of decoding one frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// Everything that could be decoded, and the error if there was one.
    pub json: FrameJson,
    /// The error, if the frame, its payload or a transaction was rejected.
    pub error: Option<FrameError>,
}

/// Decodes one whole frame (destination MAC through FCS) received on a link whose maximum frame
/// size is `mfs`. Never panics; a rejected frame yields the fields decoded before the error.
pub fn decode_frame(bytes: &[u8], mfs: usize) -> Decoded {
    decode(bytes, mfs, true)
}

/// Decodes a frame whose FCS a MAC has already checked and removed: `bytes` ends with the last
/// byte before the FCS. Sizes are judged as if the four FCS bytes were there (WIRE-2.4-2), the
/// FCS is not checked, and every other check is the same as for [`decode_frame`]. In the JSON,
/// `length` counts the missing FCS, `fcs` is `null` and `fcs_present` is `false`. Never panics.
pub fn decode_frame_without_fcs(bytes: &[u8], mfs: usize) -> Decoded {
    decode(bytes, mfs, false)
}

fn decode(bytes: &[u8], mfs: usize, has_fcs: bool) -> Decoded {
    let missing = if has_fcs { 0 } else { FCS_LEN };
    let mut json = FrameJson {
        length: Some(bytes.len().saturating_add(missing)),
        ..FrameJson::default()
    };
    let error = decode_into(bytes, mfs, has_fcs, &mut json).err();
    json.error = error.as_ref().map(FrameError::to_json);
    if !has_fcs {
        json.fcs = Some(None);
        json.fcs_present = Some(false);
    }
    if error.is_none() {
        if has_fcs {
            json.fcs = bytes
                .last_chunk::<FCS_LEN>()
                .map(|fcs| Some(HexBytes(fcs.to_vec())));
        }
        let content = if has_fcs {
            bytes.get(..bytes.len().saturating_sub(FCS_LEN))
        } else {
            Some(bytes)
        };
        json.reserved = reserved_runs(content.unwrap_or(&[]), &json);
    }
    Decoded { json, error }
}

fn decode_into(
    bytes: &[u8],
    mfs: usize,
    has_fcs: bool,
    json: &mut FrameJson,
) -> Result<(), FrameError> {
    let frame_err = |error| FrameError {
        level: Level::Frame,
        transaction: None,
        error,
    };
    let frame = if has_fcs {
        Frame::new_checked(bytes, mfs)
    } else {
        Frame::new_checked_without_fcs(bytes, mfs)
    }
    .map_err(frame_err)?;
    let eth = frame.ethernet();
    json.eth = Some(EthJson {
        dst: Mac(eth.dst),
        src: Mac(eth.src),
        vlan: eth.vlan.map(|t| VlanJson {
            pcp: t.pcp,
            dei: t.dei,
            vid: t.vid,
        }),
    });
    let header = frame.link_header();
    let mut link = LinkJson {
        version: Some(header.version()),
        kind: kind_json(frame.kind()),
        vc: None,
        replay: None,
        ack_req: None,
        seq: None,
    };
    if frame.kind() == ethlink_protocol::FrameKind::Data {
        link.vc = Some(header.vc().value());
        link.replay = Some(header.flags() & ethlink_protocol::FLAG_REPLAY != 0);
        link.ack_req = Some(header.flags() & ethlink_protocol::FLAG_ACK_REQ != 0);
    }
    if matches!(
        frame.kind(),
        ethlink_protocol::FrameKind::Data
            | ethlink_protocol::FrameKind::Ack
            | ethlink_protocol::FrameKind::Nack
    ) {
        link.seq = Some(header.seq().value());
    }
    json.link = Some(link);
    let repr = FrameRepr::parse(&frame).map_err(|error| FrameError {
        // The network header's payload length is checked here (WIRE-5-3); report it as the
        // payload's error like the rest of §5.
        level: if error.spec == "WIRE-5-3" {
            Level::Payload
        } else {
            Level::Frame
        },
        transaction: None,
        error,
    })?;
    match repr.link {
        LinkFrame::Data { payload, .. } => {
            let base = frame.ethernet_header_len() + LINK_HEADER_LEN;
            decode_payload(payload, base, json)
        }
        LinkFrame::Ack(_) | LinkFrame::Nack(_) => Ok(()),
        LinkFrame::CreditUpdate(c) | LinkFrame::CreditResync(c) => {
            let mask = c
                .counters
                .iter()
                .enumerate()
                .filter(|(_, c)| c.is_some())
                .fold(0u8, |m, (v, _)| m | (1 << v));
            json.credits = Some(CreditsJson {
                vc_mask: Some(mask),
                counters: c.counters,
            });
            Ok(())
        }
        LinkFrame::Init(init) => {
            json.init = Some(init_json(&init, None));
            Ok(())
        }
        LinkFrame::InitEcho { echo_nonce, init } => {
            json.init = Some(init_json(&init, Some(echo_nonce)));
            Ok(())
        }
    }
}

fn decode_payload(payload: &[u8], base: usize, json: &mut FrameJson) -> Result<(), FrameError> {
    let data = DataRepr::parse_at(payload, base).map_err(|error| FrameError {
        level: Level::Payload,
        transaction: None,
        error,
    })?;
    json.network = Some(NetworkJson {
        dst_gpu: data.dst.value(),
        src_gpu: data.src.value(),
        path: PathJson {
            stack: data.path.stack(),
            port: data.path.port(),
        },
        txn_count: u8::try_from(data.txns.count()).ok(),
        payload_length: u16::try_from(payload.len().saturating_sub(NETWORK_HEADER_LEN)).ok(),
    });
    let mut txns = Vec::new();
    let mut at = base + NETWORK_HEADER_LEN;
    let mut result = Ok(());
    for (index, txn) in data.txns.iter().enumerate() {
        match txn {
            Ok(t) => {
                txns.push(txn_json(&t, at));
                at += t.buffer_len();
            }
            Err(error) => {
                result = Err(FrameError {
                    level: Level::Transaction,
                    transaction: Some(index + 1),
                    error,
                });
                break;
            }
        }
    }
    json.txns = Some(txns);
    result
}

fn kind_json(kind: ethlink_protocol::FrameKind) -> KindJson {
    use ethlink_protocol::FrameKind as K;
    match kind {
        K::Data => KindJson::Data,
        K::Ack => KindJson::Ack,
        K::Nack => KindJson::Nack,
        K::CreditUpdate => KindJson::Cf,
        K::CreditResync => KindJson::Cc,
        K::Init => KindJson::Init,
        K::InitEcho => KindJson::InitEcho,
    }
}

fn init_json(init: &ethlink_protocol::InitRepr, echo_nonce: Option<u32>) -> InitJson {
    InitJson {
        nonce: init.nonce,
        echo_nonce,
        vcs: init.vcs,
        credit_size: init.credit_size,
        mfs: init.mfs,
        llr_window: init.window,
        credits: init.credits,
        credit_overhead: init.credit_overhead,
        caps: init.caps.names().map(str::to_owned).collect(),
        role: init.role.name().to_owned(),
    }
}

fn space_json(space: Space) -> SpaceJson {
    match space {
        Space::Global => SpaceJson::Global,
        Space::Shared => SpaceJson::Shared,
    }
}

fn width_bytes(width: Width) -> u8 {
    match width {
        Width::W4 => 4,
        Width::W8 => 8,
    }
}

fn dlen(data: &[u8]) -> Option<u16> {
    u16::try_from(data.len()).ok()
}

/// The JSON form of one valid transaction that starts at `at` in its frame.
pub fn txn_json(t: &TxnRepr<'_>, at: usize) -> TxnJson {
    let frame_offset = Some(at);
    match *t {
        TxnRepr::Load { tag, target, len } => TxnJson::Load {
            frame_offset,
            tag,
            space: space_json(target.space),
            key: target.key,
            address: Address(target.addr),
            length: len,
        },
        TxnRepr::Store { tag, target, data } => TxnJson::Store {
            frame_offset,
            tag,
            space: space_json(target.space),
            key: target.key,
            address: Address(target.addr),
            dlen: dlen(data),
            data: HexBytes(data.to_vec()),
        },
        TxnRepr::Atomic {
            tag,
            target,
            width,
            op,
        } => {
            let (space, key, address, width) = (
                space_json(target.space),
                target.key,
                Address(target.addr),
                width_bytes(width),
            );
            match op {
                AtomicOp::FetchAdd { addend } => TxnJson::AtomicFadd {
                    frame_offset,
                    tag,
                    space,
                    key,
                    address,
                    width,
                    addend,
                },
                AtomicOp::Swap { value } => TxnJson::AtomicSwap {
                    frame_offset,
                    tag,
                    space,
                    key,
                    address,
                    width,
                    value,
                },
                AtomicOp::CompareSwap { compare, value } => TxnJson::AtomicCas {
                    frame_offset,
                    tag,
                    space,
                    key,
                    address,
                    width,
                    compare,
                    value,
                },
            }
        }
        TxnRepr::Fence { tag } => TxnJson::Fence { frame_offset, tag },
        TxnRepr::RdmaWrite {
            tag,
            target,
            offset,
            total,
            data,
        } => TxnJson::RdmaWrite {
            frame_offset,
            tag,
            space: space_json(target.space),
            key: target.key,
            address: Address(target.addr),
            offset,
            total_length: total,
            dlen: dlen(data),
            data: HexBytes(data.to_vec()),
        },
        TxnRepr::RdmaRead { tag, target, total } => TxnJson::RdmaRead {
            frame_offset,
            tag,
            space: space_json(target.space),
            key: target.key,
            address: Address(target.addr),
            total_length: total,
        },
        TxnRepr::LoadResp { tag, status, data } => TxnJson::LoadResp {
            frame_offset,
            tag,
            status: StatusJson(status),
            dlen: dlen(data),
            data: HexBytes(data.to_vec()),
        },
        TxnRepr::StoreResp { tag, status } => TxnJson::StoreResp {
            frame_offset,
            tag,
            status: StatusJson(status),
        },
        TxnRepr::AtomicResp {
            tag,
            kind,
            status,
            old,
        } => {
            let status = StatusJson(status);
            let width = old.map(|v: AtomicValue| width_bytes(v.width()));
            let old = old.map(AtomicValue::get);
            match kind {
                AtomicKind::FetchAdd => TxnJson::AtomicFaddResp {
                    frame_offset,
                    tag,
                    status,
                    width,
                    old,
                },
                AtomicKind::Swap => TxnJson::AtomicSwapResp {
                    frame_offset,
                    tag,
                    status,
                    width,
                    old,
                },
                AtomicKind::CompareSwap => TxnJson::AtomicCasResp {
                    frame_offset,
                    tag,
                    status,
                    width,
                    old,
                },
            }
        }
        TxnRepr::FenceResp { tag, status } => TxnJson::FenceResp {
            frame_offset,
            tag,
            status: StatusJson(status),
        },
        TxnRepr::RdmaCompletion { tag, status, total } => TxnJson::RdmaCompletion {
            frame_offset,
            tag,
            status: StatusJson(status),
            total_length: total,
        },
        TxnRepr::RdmaReadResp {
            tag,
            status,
            offset,
            total,
            data,
        } => TxnJson::RdmaReadResp {
            frame_offset,
            tag,
            status: StatusJson(status),
            offset,
            total_length: total,
            dlen: dlen(data),
            data: HexBytes(data.to_vec()),
        },
        TxnRepr::Unknown {
            opcode,
            flags_status,
            tag,
            header,
            data,
        } => TxnJson::Unknown {
            frame_offset,
            code: opcode,
            flags_status,
            tag,
            hlen: u8::try_from((PREFIX_LEN + header.len()) / 4).ok(),
            header: HexBytes(header.to_vec()),
            dlen: dlen(data),
            data: HexBytes(data.to_vec()),
            receiver_action: Some(unknown_action(opcode, tag)),
        },
    }
}

/// What a receiver does with a transaction of an undefined opcode.
fn unknown_action(opcode: u8, tag: u16) -> String {
    if opcode & 0x80 == 0 {
        //= docs/spec/wire.md#61-common-prefix
        //# WIRE-6.1-5 (unknown request) [...] the receiver MUST answer it with a response of
        //# opcode `opcode | 0x80`, status UNSUPPORTED, the request's tag, `hlen` 2 and `dlen` 0
        let action = Action::Respond {
            opcode: opcode | 0x80,
            tag,
            status: Status::Unsupported,
        };
        format!("{action} (WIRE-6.1-5)")
    } else {
        //= docs/spec/wire.md#61-common-prefix
        //# WIRE-6.1-7 (unknown response) A response with an opcode this document does not define
        //# MUST be discarded and counted in unknown_responses, apart from bad responses
        //# (WIRE-6.1-9); the receiver goes on with the next transaction. (1.1: bad responses, which
        //# this requirement also covered, are now WIRE-6.1-9.)
        format!("{} (WIRE-6.1-7)", Action::DiscardTxn)
    }
}

/// The runs of bytes where `received` (the frame without its FCS) differs from the canonical
/// encoding of `json`: non-zero reserved bits and padding, which a receiver ignores (WIRE-1.2-2)
/// and `encode` writes back.
fn reserved_runs(received: &[u8], json: &FrameJson) -> Vec<ReservedJson> {
    let Ok(canonical) = encode::emit_canonical(json) else {
        return Vec::new();
    };
    let canonical = canonical.get(..received.len()).unwrap_or(&[]);
    let mut runs: Vec<ReservedJson> = Vec::new();
    let mut open = false;
    for (i, (a, b)) in received.iter().zip(canonical).enumerate() {
        if a == b {
            open = false;
            continue;
        }
        match runs.last_mut() {
            Some(run) if open => run.hex.0.push(*a),
            _ => runs.push(ReservedJson {
                offset: i,
                hex: HexBytes(vec![*a]),
            }),
        }
        open = true;
    }
    runs
}

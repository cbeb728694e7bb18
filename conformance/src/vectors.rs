//! The golden test vectors: `conformance/vectors/vectors.json` and `vectors.pcapng`.
//!
//! Every vector is a whole frame with its FCS. Well-formed vectors are built with the protocol
//! crate's emitters and carry the JSON `decode` prints for them. Malformed vectors are written
//! byte by byte here (so they do not depend on the decoder they test) and carry the error a
//! receiver must report, worked out from docs/spec/wire.md: the field, its offset in the frame,
//! the requirement and the receiver's action. All of them have a correct FCS except the ones
//! built to test the FCS check.
//!
//! Generation is deterministic: no clock, no randomness, no maps with unstable order.
//!
//! The `decoded` object of a well-formed vector is the JSON form of a frame that `ethlink decode
//! --json` prints and `ethlink encode` reads: that form ([`model`]), the decoder that writes it
//! ([`decode`]) and the encoder that reads it ([`encode`]) live here with the vectors, and the
//! command line uses them from here. `ethlink vectors --out DIR` calls [`write()`].

use std::path::Path;

pub mod decode;
pub mod encode;
mod examples;
pub mod hexio;
pub mod model;
pub mod pcapng;

pub use examples::EXAMPLES_FILE;

use ethlink_protocol::{
    Action, AtomicKind, AtomicOp, AtomicValue, Capabilities, CreditRepr, DataFlags, DataHeader,
    DataRepr, EthernetRepr, Field, FrameRepr, GpuId, InitRepr, LinkFrame, MAX_FRAME_LEN, MacAddr,
    MemTarget, PathId, Role, Seq, Space, Status, TxnRepr, Txns, Vc, VlanTag, data_frame_len,
    emit_data_frame,
};
use serde::{Deserialize, Serialize};

use self::decode::Level;
use self::encode::refresh_fcs;
use self::model::FrameJson;
use self::pcapng as capture;

/// Name of the vectors' JSON file.
pub const JSON_FILE: &str = "vectors.json";
/// Name of the vectors' capture file.
pub const PCAPNG_FILE: &str = "vectors.pcapng";
/// Version of the vectors.json format.
pub const FORMAT_VERSION: u32 = 1;

/// The contents of vectors.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VectorFile {
    /// Always `"ethlink-wire-vectors"`.
    pub format: String,
    /// Version of this format.
    pub version: u32,
    /// The document the vectors test.
    pub spec: String,
    /// The maximum frame size every vector is decoded with.
    pub mfs: usize,
    /// Number of well-formed vectors.
    pub well_formed: usize,
    /// Number of malformed vectors.
    pub malformed: usize,
    /// The vectors, in the order of the pcapng file.
    pub vectors: Vec<VectorJson>,
}

/// One vector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VectorJson {
    /// Unique name.
    pub name: String,
    /// What the vector shows.
    pub description: String,
    /// The requirements of wire.md it exercises.
    pub spec: Vec<String>,
    /// The whole frame including its FCS.
    pub hex: String,
    /// Whether a receiver accepts the frame and every transaction in it.
    pub well_formed: bool,
    /// Well-formed vectors: what `ethlink decode --json` prints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decoded: Option<FrameJson>,
    /// Malformed vectors: the first error a receiver must report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_error: Option<ExpectedError>,
}

/// The error a malformed vector must be rejected with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpectedError {
    /// `frame`, `payload` or `transaction`.
    pub level: String,
    /// For transaction errors, the position of the failing transaction, from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transaction: Option<usize>,
    /// The field, as `ethlink_protocol::Field::name` spells it.
    pub field: String,
    /// Offset of the field in the frame.
    pub offset: usize,
    /// The requirement violated.
    pub spec: String,
    /// The receiver's action, as `ethlink_protocol::Action` displays it.
    pub action: String,
    /// The counter the receiver increments (wire.md Table WIRE-T1); absent when the receiver
    /// answers the transaction instead of discarding it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counter: Option<String>,
}

/// The counter of wire.md Table WIRE-T1 for a discard, worked out from the field and the action
/// (independently of `ethlink_protocol::Error::discard`, which the tests compare with it).
fn counter_of(field: Field, action: Action) -> Option<&'static str> {
    Some(match action {
        Action::DiscardDamaged if field == Field::Fcs => "rx_fcs_errors",
        Action::DiscardDamaged => "rx_damaged",
        Action::DiscardStomped => "rx_stomped",
        Action::DiscardForeign => "rx_foreign",
        Action::DiscardMalformed => match field {
            Field::Version => "rx_bad_version",
            Field::Kind => "rx_unknown_kind",
            Field::Padding
            | Field::NetworkHeader
            | Field::DstGpu
            | Field::SrcGpu
            | Field::TxnCount
            | Field::PayloadLength => "malformed_frames",
            _ => "rx_malformed_control",
        },
        Action::DiscardRest => "malformed_txns",
        Action::DiscardTxn => "bad_responses",
        Action::Respond { .. } => return None,
    })
}

/// A vector before serialisation.
struct Vector {
    name: &'static str,
    description: &'static str,
    spec: Vec<&'static str>,
    bytes: Vec<u8>,
    expect: Option<ExpectedError>,
}

// ---------------------------------------------------------------------------------------------
// Frame building blocks.

const MAC_A: MacAddr = MacAddr([0x02, 0x00, 0x00, 0x00, 0x00, 0x01]);
const MAC_B: MacAddr = MacAddr([0x02, 0x00, 0x00, 0x00, 0x00, 0x02]);
const SRC_GPU: u16 = 1;
const DST_GPU: u16 = 2;
const PATH: u8 = 0x01;
const KEY: u32 = 0x0000_1234;
const ADDR: u64 = 0x0000_0001_0000_1000;

/// Offset of the link header, the body and the first transaction in an untagged frame.
const LINK: usize = 14;
const BODY: usize = 20;
const TXN0: usize = 28;
/// The same offsets shift by the tag in a tagged frame.
const TAG: usize = 4;

fn eth() -> EthernetRepr {
    EthernetRepr {
        dst: MAC_B,
        src: MAC_A,
        vlan: None,
    }
}

/// A tagged header; the PCP equals the VC as WIRE-2.2-2 recommends.
fn eth_tagged(vc: u8, vid: u16) -> EthernetRepr {
    EthernetRepr {
        vlan: Some(VlanTag {
            pcp: vc,
            dei: false,
            vid,
        }),
        ..eth()
    }
}

fn vc(v: u8) -> Vc {
    Vc::new(v).unwrap_or_default()
}

fn header(vc_num: u8, seq: u32) -> DataHeader {
    DataHeader {
        vc: vc(vc_num),
        flags: DataFlags::default(),
        seq: Seq::new(seq),
    }
}

fn target(space: Space, addr: u64) -> MemTarget {
    MemTarget {
        space,
        key: KEY,
        addr,
    }
}

fn global(addr: u64) -> MemTarget {
    target(Space::Global, addr)
}

/// `n` bytes counting up from `start`.
fn pattern(n: usize, start: u8) -> Vec<u8> {
    (0..n)
        .map(|i| start.wrapping_add((i % 251) as u8))
        .collect()
}

fn emit_data_with(
    eth: &EthernetRepr,
    header: DataHeader,
    dst: u16,
    src: u16,
    path: u8,
    txns: &[TxnRepr<'_>],
) -> Result<Vec<u8>, String> {
    let data = DataRepr {
        dst: GpuId::new(dst).ok_or("reserved GPU id")?,
        src: GpuId::new(src).ok_or("reserved GPU id")?,
        path: PathId(path),
        txns: Txns::Slice(txns),
    };
    let mut buf = vec![0u8; data_frame_len(eth, &data)];
    emit_data_frame(eth, header, &data, &mut buf).map_err(|e| e.to_string())?;
    Ok(buf)
}

/// A DATA frame from GPU 1 to GPU 2 on VC 0, sequence number 1.
fn data(txns: &[TxnRepr<'_>]) -> Result<Vec<u8>, String> {
    emit_data_with(&eth(), header(0, 1), DST_GPU, SRC_GPU, PATH, txns)
}

fn control(eth: EthernetRepr, link: LinkFrame<'_>) -> Result<Vec<u8>, String> {
    let repr = FrameRepr { eth, link };
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut buf).map_err(|e| e.to_string())?;
    Ok(buf)
}

/// Writes `bytes` at `at` and recomputes the FCS, for frames that must stay undamaged.
fn patch(mut frame: Vec<u8>, at: usize, bytes: &[u8]) -> Vec<u8> {
    if let Some(dst) = frame.get_mut(at..at + bytes.len()) {
        dst.copy_from_slice(bytes);
    }
    refresh_fcs(&mut frame);
    frame
}

// Raw encoders, independent of the protocol crate's emitters, for frames it refuses to build.

fn raw_eth(ethertypes: &[u16]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&MAC_B.0);
    out.extend_from_slice(&MAC_A.0);
    for t in ethertypes {
        out.extend_from_slice(&t.to_be_bytes());
    }
    out
}

fn raw_link(version: u8, kind: u8, vc: u8, flags: u8, seq: u32) -> [u8; 6] {
    let [_, b, c, d] = seq.to_be_bytes();
    [
        (version << 4) | (kind & 0xF),
        (vc << 5) | (flags & 0x1F),
        0,
        b & 0x0F,
        c,
        d,
    ]
}

/// A frame from its Ethernet header, link header and body: padded to 64 B, FCS appended.
fn raw_frame(eth: &[u8], link: [u8; 6], body: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(eth);
    f.extend_from_slice(&link);
    f.extend_from_slice(body);
    if f.len() < 60 {
        f.resize(60, 0);
    }
    f.extend_from_slice(&[0; 4]);
    refresh_fcs(&mut f);
    f
}

fn raw_net(dst: u16, src: u16, count: u8, payload_len: usize) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&dst.to_be_bytes());
    out.extend_from_slice(&src.to_be_bytes());
    out.push(PATH);
    out.push(count);
    out.extend_from_slice(&u16::try_from(payload_len).unwrap_or(u16::MAX).to_be_bytes());
    out
}

/// An untagged DATA frame with `count` in its network header and `payload` as its transactions;
/// the payload length is the payload's size.
fn raw_data(count: u8, payload: &[u8]) -> Vec<u8> {
    let mut body = raw_net(DST_GPU, SRC_GPU, count, payload.len());
    body.extend_from_slice(payload);
    raw_frame(&raw_eth(&[0x88B5]), raw_link(1, 0, 0, 0, 1), &body)
}

/// A transaction with every prefix field given: `ext` is the header after the prefix, `data` is
/// padded to a multiple of four.
fn raw_txn(opcode: u8, fs: u8, tag: u16, hlen: u8, dlen: u16, ext: &[u8], data: &[u8]) -> Vec<u8> {
    let mut out = vec![opcode, fs];
    out.extend_from_slice(&tag.to_be_bytes());
    out.push(hlen);
    out.push(0);
    out.extend_from_slice(&dlen.to_be_bytes());
    out.extend_from_slice(ext);
    out.extend_from_slice(data);
    while out.len() % 4 != 0 {
        out.push(0);
    }
    out
}

fn mem_ext(addr: u64) -> Vec<u8> {
    let mut out = KEY.to_be_bytes().to_vec();
    out.extend_from_slice(&addr.to_be_bytes());
    out
}

fn dlen_of(data: &[u8]) -> u16 {
    u16::try_from(data.len()).unwrap_or(u16::MAX)
}

// ---------------------------------------------------------------------------------------------
// The vectors.

/// A malformed control frame made by patching a good one: name, description, the good frame,
/// the body offset to patch, the bytes written there and the field they break.
type PatchCase<'a> = (&'static str, &'static str, &'a [u8], usize, &'a [u8], Field);

/// A malformed network header: name, description, the offset to patch, the bytes, the field and
/// its offset in the network header.
type HeaderCase<'a> = (&'static str, &'static str, usize, &'a [u8], Field, usize);

struct Builder {
    vectors: Vec<Vector>,
}

impl Builder {
    fn good(
        &mut self,
        name: &'static str,
        description: &'static str,
        spec: &[&'static str],
        bytes: Vec<u8>,
    ) {
        self.vectors.push(Vector {
            name,
            description,
            spec: spec.to_vec(),
            bytes,
            expect: None,
        });
    }

    #[allow(clippy::too_many_arguments)]
    fn bad(
        &mut self,
        name: &'static str,
        description: &'static str,
        bytes: Vec<u8>,
        level: Level,
        transaction: Option<usize>,
        field: Field,
        offset: usize,
        spec: &'static str,
        action: Action,
    ) {
        self.vectors.push(Vector {
            name,
            description,
            spec: vec![spec],
            bytes,
            expect: Some(ExpectedError {
                level: level.name().to_owned(),
                transaction,
                field: field.name().to_owned(),
                offset,
                spec: spec.to_owned(),
                action: action.to_string(),
                counter: counter_of(field, action).map(str::to_owned),
            }),
        });
    }

    /// A frame-level error.
    #[allow(clippy::too_many_arguments)]
    fn bad_frame(
        &mut self,
        name: &'static str,
        description: &'static str,
        bytes: Vec<u8>,
        field: Field,
        offset: usize,
        spec: &'static str,
        action: Action,
    ) {
        self.bad(
            name,
            description,
            bytes,
            Level::Frame,
            None,
            field,
            offset,
            spec,
            action,
        );
    }

    /// An error of transaction `n` (from 1).
    #[allow(clippy::too_many_arguments)]
    fn bad_txn(
        &mut self,
        name: &'static str,
        description: &'static str,
        bytes: Vec<u8>,
        n: usize,
        field: Field,
        offset: usize,
        spec: &'static str,
        action: Action,
    ) {
        self.bad(
            name,
            description,
            bytes,
            Level::Transaction,
            Some(n),
            field,
            offset,
            spec,
            action,
        );
    }
}

fn respond(opcode: u8, tag: u16, status: Status) -> Action {
    Action::Respond {
        opcode,
        tag,
        status,
    }
}

fn store(tag: u16, target: MemTarget, data: &[u8]) -> TxnRepr<'_> {
    TxnRepr::Store { tag, target, data }
}

fn build() -> Result<Vec<Vector>, String> {
    let mut b = Builder {
        vectors: Vec::new(),
    };
    well_formed_requests(&mut b)?;
    well_formed_responses(&mut b)?;
    well_formed_frames(&mut b)?;
    malformed_frames(&mut b)?;
    malformed_payloads(&mut b)?;
    malformed_transactions(&mut b)?;
    Ok(b.vectors)
}

fn well_formed_requests(b: &mut Builder) -> Result<(), String> {
    let d4 = pattern(4, 0xA0);
    b.good(
        "store_4b_global_min_frame",
        "STORE of 4 bytes to global memory; the 56-byte frame is padded to the 64-byte minimum",
        &["WIRE-2.4-1", "WIRE-6.1-1", "WIRE-1.1-2"],
        data(&[store(0x0001, global(ADDR), &d4)])?,
    );
    b.good(
        "store_1b_data_padding",
        "STORE of 1 byte: the data is padded with 3 zero bytes to a multiple of 4",
        &["WIRE-6.1-1", "WIRE-6.1-8"],
        data(&[store(0x0002, global(ADDR + 3), &[0x5A])])?,
    );
    let d256 = pattern(256, 0);
    b.good(
        "store_256b_shared",
        "STORE of the largest size, 256 bytes, to shared memory (SHARED flag set)",
        &["WIRE-6.1-1", "WIRE-1.1-2"],
        data(&[store(0x0003, target(Space::Shared, 0x2000), &d256)])?,
    );
    b.good(
        "load_8b_global",
        "LOAD of 8 bytes from global memory",
        &["WIRE-6.1-1"],
        data(&[TxnRepr::Load {
            tag: 0x0010,
            target: global(ADDR),
            len: 8,
        }])?,
    );
    b.good(
        "load_256b_shared",
        "LOAD of 256 bytes from shared memory",
        &["WIRE-6.1-1"],
        data(&[TxnRepr::Load {
            tag: 0x0011,
            target: target(Space::Shared, 0x40),
            len: 256,
        }])?,
    );
    let atomics: [(
        &'static str,
        &'static str,
        AtomicOp,
        ethlink_protocol::Width,
        u64,
    ); 6] = [
        (
            "atomic_fadd_4b",
            "ATOMIC_FADD with a 4-byte addend, little-endian",
            AtomicOp::FetchAdd {
                addend: 0x0102_0304,
            },
            ethlink_protocol::Width::W4,
            ADDR,
        ),
        (
            "atomic_fadd_8b",
            "ATOMIC_FADD with an 8-byte addend, little-endian",
            AtomicOp::FetchAdd {
                addend: 0x0102_0304_0506_0708,
            },
            ethlink_protocol::Width::W8,
            ADDR + 8,
        ),
        (
            "atomic_swap_4b",
            "ATOMIC_SWAP of a 4-byte value",
            AtomicOp::Swap { value: 0xDEAD_BEEF },
            ethlink_protocol::Width::W4,
            ADDR + 4,
        ),
        (
            "atomic_swap_8b",
            "ATOMIC_SWAP of an 8-byte value",
            AtomicOp::Swap {
                value: 0xFFFF_FFFF_FFFF_FFFF,
            },
            ethlink_protocol::Width::W8,
            ADDR,
        ),
        (
            "atomic_cas_4b",
            "ATOMIC_CAS on 4 bytes: dlen 8, the compare value then the new value",
            AtomicOp::CompareSwap {
                compare: 1,
                value: 2,
            },
            ethlink_protocol::Width::W4,
            ADDR + 12,
        ),
        (
            "atomic_cas_8b",
            "ATOMIC_CAS on 8 bytes: dlen 16, the compare value then the new value",
            AtomicOp::CompareSwap {
                compare: 0x1111_2222_3333_4444,
                value: 0x5555_6666_7777_8888,
            },
            ethlink_protocol::Width::W8,
            ADDR + 16,
        ),
    ];
    for (i, (name, description, op, width, addr)) in atomics.into_iter().enumerate() {
        b.good(
            name,
            description,
            &["WIRE-1.1-3", "WIRE-6.5-1", "WIRE-6.5-2"],
            data(&[TxnRepr::Atomic {
                tag: 0x0020 + u16::try_from(i).unwrap_or(0),
                target: global(addr),
                width,
                op,
            }])?,
        );
    }
    b.good(
        "atomic_fadd_8b_shared",
        "ATOMIC_FADD on shared memory",
        &["WIRE-1.1-3"],
        data(&[TxnRepr::Atomic {
            tag: 0x0027,
            target: target(Space::Shared, 0x80),
            width: ethlink_protocol::Width::W8,
            op: AtomicOp::FetchAdd { addend: 1 },
        }])?,
    );
    b.good(
        "fence",
        "FENCE: the prefix alone",
        &["WIRE-6.1-1"],
        data(&[TxnRepr::Fence { tag: 0x0030 }])?,
    );
    let seg = pattern(1024, 7);
    b.good(
        "rdma_write_segment",
        "RDMA_WRITE segment of 1024 bytes at offset 1024 of a 4096-byte write",
        &["WIRE-6.7-1", "WIRE-6.7-2"],
        data(&[TxnRepr::RdmaWrite {
            tag: 0x0040,
            target: global(0x0000_0002_0000_0000),
            offset: 1024,
            total: 4096,
            data: &seg,
        }])?,
    );
    b.good(
        "rdma_write_last_byte_shared",
        "RDMA_WRITE segment holding the last byte of a write to shared memory: offset + dlen = total",
        &["WIRE-6.7-1"],
        data(&[TxnRepr::RdmaWrite {
            tag: 0x0041,
            target: target(Space::Shared, 0x100),
            offset: 4095,
            total: 4096,
            data: &[0xEE],
        }])?,
    );
    b.good(
        "rdma_read",
        "RDMA_READ of 65536 bytes",
        &["WIRE-6.1-1"],
        data(&[TxnRepr::RdmaRead {
            tag: 0x0050,
            target: global(0x0000_0003_0000_0000),
            total: 65536,
        }])?,
    );
    let unknown_header = [0x01, 0x02, 0x03, 0x04];
    let unknown_data = [0xCA, 0xFE, 0xBA, 0xBE];
    b.good(
        "unknown_request_0x20",
        "Request opcode 0x20 is not defined: it decodes (hlen 3, dlen 4), must not be executed and \
         is answered with opcode 0xA0, status UNSUPPORTED",
        &["WIRE-6.1-5", "WIRE-1.2-3"],
        data(&[TxnRepr::Unknown {
            opcode: 0x20,
            flags_status: 0x01,
            tag: 0x0060,
            header: &unknown_header,
            data: &unknown_data,
        }])?,
    );
    b.good(
        "unknown_request_0x7f_then_store",
        "An undefined request (0x7F, prefix only) followed by a STORE: the receiver answers the \
         first UNSUPPORTED and goes on with the next transaction",
        &["WIRE-6.1-5"],
        data(&[
            TxnRepr::Unknown {
                opcode: 0x7F,
                flags_status: 0,
                tag: 0x0061,
                header: &[],
                data: &[],
            },
            store(0x0062, global(ADDR), &d4),
        ])?,
    );
    b.good(
        "atomic_fadd_8b_misaligned",
        "8-byte ATOMIC_FADD at address 0x1004: well formed on the wire; the target answers \
         MISALIGNED once its range, key and permission checks pass",
        &["WIRE-6.5-3", "WIRE-6.5-2"],
        data(&[TxnRepr::Atomic {
            tag: 0x0019,
            target: global(0x1004),
            width: ethlink_protocol::Width::W8,
            op: AtomicOp::FetchAdd { addend: 1 },
        }])?,
    );
    b.good(
        "atomic_cas_4b_misaligned",
        "4-byte ATOMIC_CAS at address 0x1002: well formed on the wire, answered MISALIGNED by the \
         target",
        &["WIRE-6.5-3", "WIRE-6.5-2"],
        data(&[TxnRepr::Atomic {
            tag: 0x001A,
            target: global(0x1002),
            width: ethlink_protocol::Width::W4,
            op: AtomicOp::CompareSwap {
                compare: 0,
                value: 0,
            },
        }])?,
    );
    Ok(())
}

fn well_formed_responses(b: &mut Builder) -> Result<(), String> {
    let d8 = pattern(8, 0x10);
    b.good(
        "load_resp_ok_8b",
        "LOAD_RESP with status OK and the 8 bytes read",
        &["WIRE-6.9-4", "WIRE-6.1-2"],
        data(&[TxnRepr::LoadResp {
            tag: 0x0010,
            status: Status::Ok,
            data: &d8,
        }])?,
    );
    b.good(
        "store_resp_ok",
        "STORE_RESP with status OK",
        &["WIRE-6.1-2"],
        data(&[TxnRepr::StoreResp {
            tag: 0x0001,
            status: Status::Ok,
        }])?,
    );
    let atomic_resps = [
        (
            "atomic_fadd_resp_ok_4b",
            "ATOMIC_FADD_RESP with the 4-byte old value",
            AtomicKind::FetchAdd,
            AtomicValue::U32(0x0A0B_0C0D),
        ),
        (
            "atomic_swap_resp_ok_8b",
            "ATOMIC_SWAP_RESP with the 8-byte old value",
            AtomicKind::Swap,
            AtomicValue::U64(0x0102_0304_0506_0708),
        ),
        (
            "atomic_cas_resp_ok_4b",
            "ATOMIC_CAS_RESP with the 4-byte old value",
            AtomicKind::CompareSwap,
            AtomicValue::U32(1),
        ),
        (
            "atomic_cas_resp_ok_8b",
            "ATOMIC_CAS_RESP with the 8-byte old value",
            AtomicKind::CompareSwap,
            AtomicValue::U64(0x1111_2222_3333_4444),
        ),
    ];
    for (name, description, kind, old) in atomic_resps {
        b.good(
            name,
            description,
            &["WIRE-1.1-3", "WIRE-6.9-4"],
            data(&[TxnRepr::AtomicResp {
                tag: 0x0020,
                kind,
                status: Status::Ok,
                old: Some(old),
            }])?,
        );
    }
    b.good(
        "fence_resp_ok",
        "FENCE_RESP with status OK",
        &["WIRE-6.1-2"],
        data(&[TxnRepr::FenceResp {
            tag: 0x0030,
            status: Status::Ok,
        }])?,
    );
    b.good(
        "rdma_completion_ok",
        "RDMA_COMPLETION of a 4096-byte write",
        &["WIRE-6.1-2"],
        data(&[TxnRepr::RdmaCompletion {
            tag: 0x0040,
            status: Status::Ok,
            total: 4096,
        }])?,
    );
    let seg = pattern(512, 0x33);
    b.good(
        "rdma_read_resp_ok",
        "RDMA_READ_RESP segment of 512 bytes at offset 512 of a 65536-byte read",
        &["WIRE-6.9-3"],
        data(&[TxnRepr::RdmaReadResp {
            tag: 0x0050,
            status: Status::Ok,
            offset: 512,
            total: 65536,
            data: &seg,
        }])?,
    );
    // Every error status, each on a different response type, carrying no data (WIRE-6.9-1).
    b.good(
        "load_resp_access_violation",
        "LOAD_RESP with status ACCESS_VIOLATION and no data",
        &["WIRE-6.9-1"],
        data(&[TxnRepr::LoadResp {
            tag: 0x0010,
            status: Status::AccessViolation,
            data: &[],
        }])?,
    );
    b.good(
        "store_resp_out_of_range",
        "STORE_RESP with status OUT_OF_RANGE",
        &["WIRE-6.9-1"],
        data(&[TxnRepr::StoreResp {
            tag: 0x0001,
            status: Status::OutOfRange,
        }])?,
    );
    b.good(
        "unsupported_resp_to_unknown_request",
        "The answer to unknown request 0x20: opcode 0xA0, status UNSUPPORTED, hlen 2, dlen 0. \
         0xA0 is not a defined response, so a requester discards and counts it",
        &["WIRE-6.1-5", "WIRE-6.1-7"],
        data(&[TxnRepr::Unknown {
            opcode: 0xA0,
            flags_status: Status::Unsupported.to_u8(),
            tag: 0x0060,
            header: &[],
            data: &[],
        }])?,
    );
    b.good(
        "unknown_response_0xc4",
        "Response opcode 0xC4 is not defined: it decodes (hlen 3, dlen 4) and a requester \
         discards it and counts it in unknown_responses, apart from bad responses",
        &["WIRE-6.1-7", "WIRE-1.2-4"],
        data(&[TxnRepr::Unknown {
            opcode: 0xC4,
            flags_status: 0x00,
            tag: 0x0063,
            header: &[0x0A, 0x0B, 0x0C, 0x0D],
            data: &[0x01, 0x02, 0x03, 0x04],
        }])?,
    );
    b.good(
        "atomic_swap_resp_unsupported",
        "ATOMIC_SWAP_RESP with status UNSUPPORTED and no old value",
        &["WIRE-6.9-1"],
        data(&[TxnRepr::AtomicResp {
            tag: 0x0022,
            kind: AtomicKind::Swap,
            status: Status::Unsupported,
            old: None,
        }])?,
    );
    b.good(
        "load_resp_poisoned",
        "LOAD_RESP with status POISONED: no data is returned",
        &["WIRE-6.9-1"],
        data(&[TxnRepr::LoadResp {
            tag: 0x0011,
            status: Status::Poisoned,
            data: &[],
        }])?,
    );
    b.good(
        "store_resp_malformed",
        "STORE_RESP with status MALFORMED, the answer to a malformed request",
        &["WIRE-6.1-6"],
        data(&[TxnRepr::StoreResp {
            tag: 0x0002,
            status: Status::Malformed,
        }])?,
    );
    b.good(
        "atomic_fadd_resp_misaligned",
        "ATOMIC_FADD_RESP with status MISALIGNED",
        &["WIRE-6.5-2", "WIRE-6.9-1"],
        data(&[TxnRepr::AtomicResp {
            tag: 0x0021,
            kind: AtomicKind::FetchAdd,
            status: Status::Misaligned,
            old: None,
        }])?,
    );
    b.good(
        "fence_resp_busy",
        "FENCE_RESP with status BUSY",
        &["WIRE-6.9-1"],
        data(&[TxnRepr::FenceResp {
            tag: 0x0030,
            status: Status::Busy,
        }])?,
    );
    b.good(
        "rdma_completion_access_violation",
        "RDMA_COMPLETION with status ACCESS_VIOLATION",
        &["WIRE-6.9-1"],
        data(&[TxnRepr::RdmaCompletion {
            tag: 0x0040,
            status: Status::AccessViolation,
            total: 4096,
        }])?,
    );
    b.good(
        "rdma_read_resp_poisoned",
        "RDMA_READ_RESP with status POISONED: dlen 0, ends the read",
        &["WIRE-6.9-1", "WIRE-6.9-3"],
        data(&[TxnRepr::RdmaReadResp {
            tag: 0x0050,
            status: Status::Poisoned,
            offset: 0,
            total: 65536,
            data: &[],
        }])?,
    );
    b.good(
        "store_resp_unknown_status_0x42",
        "STORE_RESP with status 0x42, which wire.md does not define: the raw value is kept and \
         reported",
        &["WIRE-6.9-2", "WIRE-1.2-3"],
        data(&[TxnRepr::StoreResp {
            tag: 0x0003,
            status: Status::Unknown(0x42),
        }])?,
    );
    b.good(
        "load_resp_unknown_status_0xff",
        "LOAD_RESP with the unknown status 0xFF and no data",
        &["WIRE-6.9-2", "WIRE-1.2-3"],
        data(&[TxnRepr::LoadResp {
            tag: 0x0012,
            status: Status::Unknown(0xFF),
            data: &[],
        }])?,
    );
    Ok(())
}

fn init_repr(vcs: u8, credit_size: u16, mfs: u16, window: u32, grant: u32) -> InitRepr {
    let mut credits = [0u32; 8];
    for c in credits.iter_mut().take(usize::from(vcs)) {
        *c = grant;
    }
    InitRepr {
        nonce: 0x1234_5678,
        vcs,
        credit_size,
        mfs,
        window,
        credits,
        credit_overhead: 0,
        caps: Capabilities::NONE,
        role: Role::LinkEnd,
    }
}

fn well_formed_frames(b: &mut Builder) -> Result<(), String> {
    let d64: Vec<Vec<u8>> = (0..4).map(|i| pattern(64, i * 64)).collect();
    let stores: Vec<TxnRepr<'_>> = d64
        .iter()
        .enumerate()
        .map(|(i, d)| store(0x0100 + i as u16, global(ADDR + 64 * i as u64), d))
        .collect();
    b.good(
        "packed_4x64b_stores",
        "Four 64-byte STOREs packed in one frame",
        &["WIRE-5-1", "WIRE-5-2"],
        data(&stores)?,
    );
    let d16 = pattern(16, 0x40);
    let wseg = pattern(100, 0x90);
    b.good(
        "packed_mixed_requests",
        "One of each request in one frame: LOAD, STORE, the three atomics, FENCE, RDMA_WRITE and \
         RDMA_READ",
        &["WIRE-5-1", "WIRE-5-2", "WIRE-6.1-1"],
        data(&[
            TxnRepr::Load {
                tag: 1,
                target: global(ADDR),
                len: 64,
            },
            store(2, target(Space::Shared, 0x10), &d16),
            TxnRepr::Atomic {
                tag: 3,
                target: global(ADDR),
                width: ethlink_protocol::Width::W8,
                op: AtomicOp::FetchAdd { addend: 5 },
            },
            TxnRepr::Atomic {
                tag: 4,
                target: global(ADDR + 4),
                width: ethlink_protocol::Width::W4,
                op: AtomicOp::Swap { value: 6 },
            },
            TxnRepr::Atomic {
                tag: 5,
                target: global(ADDR + 8),
                width: ethlink_protocol::Width::W8,
                op: AtomicOp::CompareSwap {
                    compare: 7,
                    value: 8,
                },
            },
            TxnRepr::Fence { tag: 6 },
            TxnRepr::RdmaWrite {
                tag: 7,
                target: global(0x0000_0002_0000_0000),
                offset: 0,
                total: 100,
                data: &wseg,
            },
            TxnRepr::RdmaRead {
                tag: 8,
                target: global(0x0000_0003_0000_0000),
                total: 8192,
            },
        ])?,
    );
    let rseg = pattern(36, 0x70);
    b.good(
        "packed_mixed_responses",
        "Responses packed in one frame, OK and errors mixed",
        &["WIRE-5-1", "WIRE-6.9-1"],
        data(&[
            TxnRepr::LoadResp {
                tag: 1,
                status: Status::Ok,
                data: &d16,
            },
            TxnRepr::StoreResp {
                tag: 2,
                status: Status::Ok,
            },
            TxnRepr::AtomicResp {
                tag: 3,
                kind: AtomicKind::FetchAdd,
                status: Status::Ok,
                old: Some(AtomicValue::U64(9)),
            },
            TxnRepr::AtomicResp {
                tag: 4,
                kind: AtomicKind::Swap,
                status: Status::Busy,
                old: None,
            },
            TxnRepr::FenceResp {
                tag: 6,
                status: Status::Ok,
            },
            TxnRepr::RdmaCompletion {
                tag: 7,
                status: Status::Ok,
                total: 100,
            },
            TxnRepr::RdmaReadResp {
                tag: 8,
                status: Status::Ok,
                offset: 0,
                total: 36,
                data: &rseg,
            },
        ])?,
    );
    let fences: Vec<TxnRepr<'_>> = (0..255u16).map(|tag| TxnRepr::Fence { tag }).collect();
    b.good(
        "packed_255_fences",
        "The largest transaction count, 255, in one frame",
        &["WIRE-5-2"],
        data(&fences)?,
    );
    // 9216 = 14 + 6 + 8 + 28 + 9156 + 4.
    let big = pattern(9156, 1);
    b.good(
        "max_frame_9216_untagged",
        "The largest frame, 9216 bytes: one RDMA_WRITE segment of 9156 bytes",
        &["WIRE-2.4-2"],
        data(&[TxnRepr::RdmaWrite {
            tag: 0x0042,
            target: global(0x0000_0004_0000_0000),
            offset: 0,
            total: 9156,
            data: &big,
        }])?,
    );
    let big_tagged = pattern(9152, 2);
    b.good(
        "max_frame_9216_tagged",
        "The largest frame with an 802.1Q tag: 9216 bytes, a 9152-byte RDMA_WRITE segment",
        &["WIRE-2.4-2", "WIRE-2.2-1"],
        emit_data_with(
            &eth_tagged(2, 100),
            header(2, 1),
            DST_GPU,
            SRC_GPU,
            PATH,
            &[TxnRepr::RdmaWrite {
                tag: 0x0043,
                target: global(0x0000_0004_0000_0000),
                offset: 0,
                total: 9152,
                data: &big_tagged,
            }],
        )?,
    );
    let d4 = pattern(4, 0xA0);
    b.good(
        "tagged_store_vc3",
        "802.1Q-tagged DATA frame on VC 3 with PCP 3, VID 100",
        &["WIRE-2.2-1", "WIRE-2.2-2"],
        emit_data_with(
            &eth_tagged(3, 100),
            header(3, 7),
            DST_GPU,
            SRC_GPU,
            PATH,
            &[store(0x0200, global(ADDR), &d4)],
        )?,
    );
    b.good(
        "tagged_pcp_differs_from_vc",
        "Tagged DATA frame whose PCP (5) differs from its VC (1): the VC field is authoritative",
        &["WIRE-2.2-2"],
        emit_data_with(
            &eth_tagged(5, 4095),
            header(1, 8),
            DST_GPU,
            SRC_GPU,
            PATH,
            &[TxnRepr::Fence { tag: 0x0201 }],
        )?,
    );
    b.good(
        "tagged_ack_min_frame",
        "802.1Q-tagged ACK padded to 64 bytes",
        &["WIRE-2.2-1", "WIRE-2.4-1"],
        control(eth_tagged(0, 1), LinkFrame::Ack(Seq::new(41)))?,
    );
    b.good(
        "data_seq_0xfffff",
        "DATA frame with the last sequence number before the wrap, 0xFFFFF",
        &["WIRE-3-4"],
        emit_data_with(
            &eth(),
            header(0, 0xF_FFFF),
            DST_GPU,
            SRC_GPU,
            PATH,
            &[store(1, global(ADDR), &d4)],
        )?,
    );
    b.good(
        "data_seq_0_after_wrap",
        "DATA frame with sequence number 0, the one after 0xFFFFF",
        &["WIRE-3-4"],
        emit_data_with(
            &eth(),
            header(0, 0),
            DST_GPU,
            SRC_GPU,
            PATH,
            &[store(2, global(ADDR), &d4)],
        )?,
    );
    b.good(
        "data_replay_ack_req_vc7",
        "DATA frame on VC 7 with the REPLAY and ACK_REQ flags set",
        &["WIRE-3-5", "WIRE-3-6"],
        emit_data_with(
            &eth(),
            DataHeader {
                vc: vc(7),
                flags: DataFlags {
                    replay: true,
                    ack_req: true,
                },
                seq: Seq::new(0x1_2345),
            },
            DST_GPU,
            SRC_GPU,
            PATH,
            &[TxnRepr::Fence { tag: 9 }],
        )?,
    );
    b.good(
        "data_max_gpu_ids_and_path",
        "DATA frame between GPUs 0xFFFE and 0, path stack 15 port 15",
        &["WIRE-5-3"],
        emit_data_with(
            &eth(),
            header(0, 2),
            0xFFFE,
            0,
            0xFF,
            &[TxnRepr::Fence { tag: 10 }],
        )?,
    );
    b.good(
        "ack",
        "ACK of every frame up to sequence number 100",
        &["WIRE-4-1"],
        control(eth(), LinkFrame::Ack(Seq::new(100)))?,
    );
    b.good(
        "ack_seq_0xfffff",
        "ACK carrying 0xFFFFF, the last good value before any DATA frame when the first is 0",
        &["WIRE-3-4", "WIRE-4.2-1"],
        control(eth(), LinkFrame::Ack(Seq::new(0xF_FFFF)))?,
    );
    b.good(
        "nack",
        "NACK with last good sequence number 99",
        &["WIRE-4-1"],
        control(eth(), LinkFrame::Nack(Seq::new(99)))?,
    );
    b.good(
        "nack_seq_0xfffff",
        "NACK with last good sequence number 0xFFFFF",
        &["WIRE-3-4", "WIRE-4.2-1"],
        control(eth(), LinkFrame::Nack(Seq::new(0xF_FFFF)))?,
    );
    let mut counters = [None; 8];
    counters[0] = Some(10);
    counters[2] = Some(0xF_FFFF);
    b.good(
        "cf_vc0_vc2",
        "CF returning credits on VC 0 and VC 2 (counter at its 20-bit maximum)",
        &["WIRE-4-1", "WIRE-4.3-1"],
        control(eth(), LinkFrame::CreditUpdate(CreditRepr { counters }))?,
    );
    b.good(
        "cf_mask_zero",
        "CF whose VC mask is zero: carries no information, accepted and ignored",
        &["WIRE-4.3-2"],
        control(eth(), LinkFrame::CreditUpdate(CreditRepr::default()))?,
    );
    let all: [Option<u32>; 8] = core::array::from_fn(|v| Some(1000 * (v as u32 + 1)));
    b.good(
        "cc_all_vcs",
        "CC with a consumed-credit counter for each of the 8 VCs",
        &["WIRE-4-1"],
        control(eth(), LinkFrame::CreditResync(CreditRepr { counters: all }))?,
    );
    b.good(
        "init_1vc_min",
        "INIT with the smallest parameters: 1 VC, credit size 32, MFS 320, window 1, a grant of \
         10 credits (one 320 B frame)",
        &["WIRE-4.5-1", "WIRE-4.5-2"],
        control(eth(), LinkFrame::Init(init_repr(1, 32, 320, 1, 10)))?,
    );
    b.good(
        "init_8vc_max",
        "INIT with the largest parameters: 8 VCs, credit size 2048, MFS 9216, window 2^19, \
         grants of 2^19 - 1",
        &["WIRE-4.5-1"],
        control(
            eth(),
            LinkFrame::Init(init_repr(8, 2048, 9216, 1 << 19, (1 << 19) - 1)),
        )?,
    );
    b.good(
        "init_echo",
        "INIT_ECHO answering the INIT with nonce 0x12345678",
        &["WIRE-4.5-1"],
        control(
            eth(),
            LinkFrame::InitEcho {
                echo_nonce: 0x1234_5678,
                init: InitRepr {
                    nonce: 0x9ABC_DEF0,
                    ..init_repr(4, 256, 9216, 4096, 128)
                },
            },
        )?,
    );
    b.good(
        "tagged_init",
        "802.1Q-tagged INIT",
        &["WIRE-2.2-1", "WIRE-4.5-1"],
        control(
            eth_tagged(0, 10),
            LinkFrame::Init(init_repr(2, 64, 4096, 512, 64)),
        )?,
    );
    // Reserved bits set: receivers ignore them (WIRE-1.2-2); decode lists them under `reserved`.
    let frame = data(&[store(0x0300, global(ADDR), &d4)])?;
    let frame = patch(frame, LINK + 1, &[0x10]); // flags bit 4
    let frame = patch(frame, LINK + 2, &[0xAB, 0xC0]); // sequence bits 31..20
    let frame = patch(frame, TXN0 + 1, &[0xFE]); // request flags bits 7..1
    let frame = patch(frame, TXN0 + 5, &[0x77]); // prefix reserved byte
    b.good(
        "data_nonzero_reserved_bits",
        "DATA frame with reserved bits set in the link header, the request flags and the prefix: \
         a receiver ignores them",
        &["WIRE-1.2-2"],
        frame,
    );
    let frame = data(&[TxnRepr::Load {
        tag: 0x0301,
        target: global(ADDR),
        len: 4,
    }])?;
    b.good(
        "load_nonzero_reserved",
        "LOAD whose reserved bytes 22..23 are not zero",
        &["WIRE-1.2-2"],
        patch(frame, TXN0 + 22, &[0x12, 0x34]),
    );
    let frame = control(eth(), LinkFrame::Ack(Seq::new(5)))?;
    b.good(
        "ack_nonzero_reserved_vc_flags",
        "ACK whose VC and flags (reserved in control frames) and padding are not zero",
        &["WIRE-3-7", "WIRE-1.2-2"],
        patch(patch(frame, LINK + 1, &[0xFF]), 40, &[0x99]),
    );
    let mut counters = [None; 8];
    counters[1] = Some(77);
    let frame = control(eth(), LinkFrame::CreditUpdate(CreditRepr { counters }))?;
    b.good(
        "cf_entries_outside_mask",
        "CF with VC 1 in the mask; the entries of VCs outside the mask and the counters' reserved \
         bits are not zero and are ignored",
        &["WIRE-4.3-1", "WIRE-1.2-2"],
        patch(patch(frame, BODY + 4, &[0, 0, 0, 5]), BODY + 8, &[0xF0]),
    );
    b.good(
        "init_capabilities_role_overhead",
        "INIT of an endpoint (role 1) announcing the capabilities RDMA, ATOMICS, SHARED and \
         PACKING and a credit overhead of 24 bytes",
        &["WIRE-4.5-5", "WIRE-4.5-6", "WIRE-4.5-7", "WIRE-4.5-1"],
        control(
            eth(),
            LinkFrame::Init(InitRepr {
                credit_overhead: 24,
                caps: Capabilities::RDMA
                    | Capabilities::ATOMICS
                    | Capabilities::SHARED
                    | Capabilities::PACKING,
                role: Role::Endpoint,
                ..init_repr(4, 256, 9216, 4096, 128)
            }),
        )?,
    );
    b.good(
        "init_echo_switch_tagged_cut_through",
        "INIT_ECHO of a switch (role 2) announcing TAGGED and CUT_THROUGH, no credit overhead, \
         tagged, from port 3 of switch 1 (02:01:00:01:00:03, switch.md SW-9-4)",
        &["WIRE-4.5-6", "WIRE-4.5-7", "WIRE-4.5-2"],
        control(
            EthernetRepr {
                dst: MAC_B,
                src: MacAddr([0x02, 0x01, 0x00, 0x01, 0x00, 0x03]),
                vlan: Some(VlanTag {
                    pcp: 0,
                    dei: false,
                    vid: 100,
                }),
            },
            LinkFrame::InitEcho {
                echo_nonce: 0x1234_5678,
                init: InitRepr {
                    nonce: 0x0BAD_CAFE,
                    caps: Capabilities::TAGGED | Capabilities::CUT_THROUGH,
                    role: Role::Switch,
                    ..init_repr(8, 128, 9216, 2048, 512)
                },
            },
        )?,
    );
    let frame = control(eth(), LinkFrame::Init(init_repr(2, 64, 4096, 512, 64)))?;
    b.good(
        "init_reserved_capability_bits",
        "INIT with the undefined capability bits 13..6 set: a receiver ignores them",
        &["WIRE-4.5-3", "WIRE-1.2-2"],
        patch(frame, BODY + 14, &[0x3F, 0xC0]),
    );
    let frame = control(eth(), LinkFrame::Init(init_repr(2, 64, 4096, 512, 64)))?;
    b.good(
        "init_role_3_reserved",
        "INIT with the reserved role 3: accepted, and the raw value is kept when it is reported \
         or encoded again",
        &["WIRE-4.5-7", "WIRE-1.2-4"],
        patch(frame, BODY + 14, &[0xC0, 0x00]),
    );
    let frame = data(&[TxnRepr::Fence { tag: 0x0302 }])?;
    b.good(
        "data_nonzero_padding",
        "DATA frame whose 24 padding bytes are not zero: padding is reserved, the frame is \
         accepted",
        &["WIRE-2.4-7", "WIRE-1.2-2"],
        patch(frame, BODY + 16, &[0xA5; 24]),
    );
    let frame = control(eth(), LinkFrame::Init(init_repr(2, 64, 4096, 512, 64)))?;
    b.good(
        "init_nonzero_echo_nonce",
        "INIT whose echo nonce (reserved in INIT) is not zero, and whose entry for VC 5 (at or \
         above the number of VCs) is not zero",
        &["WIRE-4.5-2", "WIRE-1.2-2"],
        patch(
            patch(frame, BODY + 4, &[0xEE; 4]),
            BODY + 20 + 4 * 5,
            &[0, 0, 0, 9],
        ),
    );
    Ok(())
}

fn malformed_frames(b: &mut Builder) -> Result<(), String> {
    let d4 = pattern(4, 0xA0);
    let good = data(&[store(0x0001, global(ADDR), &d4)])?;
    let damaged = Action::DiscardDamaged;
    let malformed = Action::DiscardMalformed;

    let mut f = good.clone();
    if let Some(last) = f.last_mut() {
        *last ^= 0xFF;
    }
    b.bad_frame(
        "bad_fcs_data",
        "DATA frame whose FCS has its last byte inverted",
        f,
        Field::Fcs,
        60,
        "WIRE-2.5-3",
        damaged,
    );
    let mut f = control(eth(), LinkFrame::Ack(Seq::new(100)))?;
    if let Some(byte) = f.get_mut(LINK + 5) {
        *byte ^= 0x01;
    }
    b.bad_frame(
        "bad_fcs_bit_flip_in_ack",
        "ACK with one bit of its sequence number flipped after the FCS was computed",
        f,
        Field::Fcs,
        60,
        "WIRE-2.5-3",
        damaged,
    );
    let mut f = raw_frame(&raw_eth(&[0x0800]), raw_link(2, 9, 0, 0, 0), &[]);
    if let Some(byte) = f.get_mut(20) {
        *byte = 0x55;
    }
    b.bad_frame(
        "bad_fcs_before_other_checks",
        "Foreign EtherType, version 2, unknown kind and a bad FCS: the FCS is checked first and no \
         other field is read",
        f,
        Field::Fcs,
        60,
        "WIRE-2.5-3",
        damaged,
    );
    let mut f = good.clone();
    let n = f.len() - 4;
    let stomped = ethlink_protocol::fcs::stomped_bytes(&f[..n]);
    f[n..].copy_from_slice(&stomped);
    b.bad_frame(
        "stomped_fcs_data",
        "DATA frame ending with the stomped FCS (the complement of its correct FCS): discarded \
         and counted as stomped, no NACK, no sequence number taken",
        f,
        Field::Fcs,
        60,
        "WIRE-2.5-5",
        Action::DiscardStomped,
    );
    let mut f = raw_eth(&[0x88B5]);
    f.extend_from_slice(&raw_link(1, 1, 0, 0, 3));
    f.resize(59, 0);
    f.extend_from_slice(&[0; 4]);
    refresh_fcs(&mut f);
    b.bad_frame(
        "runt_63b",
        "A 63-byte ACK (one byte short of the minimum) with a correct FCS",
        f,
        Field::Frame,
        63,
        "WIRE-2.4-2",
        damaged,
    );
    let mut f = raw_eth(&[0x88B5]);
    f.extend_from_slice(&raw_link(1, 1, 0, 0, 3));
    f.extend_from_slice(&[0; 4]);
    refresh_fcs(&mut f);
    b.bad_frame(
        "runt_unpadded_ack",
        "A 24-byte ACK that was not padded to 64 bytes",
        f,
        Field::Frame,
        24,
        "WIRE-2.4-2",
        damaged,
    );
    let seg = pattern(9160, 3);
    let txn = raw_txn(
        0x10,
        0,
        0x44,
        7,
        dlen_of(&seg),
        &[
            mem_ext(0),
            0u32.to_be_bytes().to_vec(),
            9160u32.to_be_bytes().to_vec(),
        ]
        .concat(),
        &seg,
    );
    b.bad_frame(
        "oversize_9220b",
        "A 9220-byte DATA frame (4 bytes over the largest MFS) with a correct FCS",
        raw_data(1, &txn),
        Field::Frame,
        9220,
        "WIRE-2.4-2",
        damaged,
    );
    let body = raw_net(DST_GPU, SRC_GPU, 1, 8);
    b.bad_frame(
        "foreign_ethertype_ipv4",
        "EtherType 0x0800: not EthLink, discarded as foreign without a NACK",
        raw_frame(&raw_eth(&[0x0800]), raw_link(1, 0, 0, 0, 1), &body),
        Field::EtherType,
        12,
        "WIRE-2.1-2",
        Action::DiscardForeign,
    );
    b.bad_frame(
        "foreign_qinq_tag",
        "An 802.1ad tag (TPID 0x88A8) is not an 802.1Q tag: the frame is foreign",
        raw_frame(
            &raw_eth(&[0x88A8, 0x0064, 0x88B5]),
            raw_link(1, 1, 0, 0, 1),
            &[],
        ),
        Field::EtherType,
        12,
        "WIRE-2.1-2",
        Action::DiscardForeign,
    );
    b.bad_frame(
        "foreign_double_8021q_tag",
        "Two 802.1Q tags: the EtherType after the first tag is 0x8100, so the frame is foreign",
        raw_frame(
            &raw_eth(&[0x8100, 0x0064, 0x8100, 0x0065, 0x88B5]),
            raw_link(1, 1, 0, 0, 1),
            &[],
        ),
        Field::EtherType,
        16,
        "WIRE-2.1-2",
        Action::DiscardForeign,
    );
    b.bad_frame(
        "foreign_ethertype_after_tag",
        "An 802.1Q tag followed by EtherType 0x0806",
        raw_frame(
            &raw_eth(&[0x8100, 0x0064, 0x0806]),
            raw_link(1, 1, 0, 0, 1),
            &[],
        ),
        Field::EtherType,
        16,
        "WIRE-2.1-2",
        Action::DiscardForeign,
    );
    b.bad_frame(
        "bad_version_2",
        "Link header version 2",
        raw_frame(&raw_eth(&[0x88B5]), raw_link(2, 1, 0, 0, 1), &[]),
        Field::Version,
        LINK,
        "WIRE-3-2",
        malformed,
    );
    b.bad_frame(
        "bad_version_0_tagged",
        "Tagged frame with link header version 0",
        raw_frame(
            &raw_eth(&[0x8100, 0x0001, 0x88B5]),
            raw_link(0, 1, 0, 0, 1),
            &[],
        ),
        Field::Version,
        LINK + TAG,
        "WIRE-3-2",
        malformed,
    );
    b.bad_frame(
        "unknown_kind_7",
        "Frame kind 0x7, the first unknown kind",
        raw_frame(&raw_eth(&[0x88B5]), raw_link(1, 7, 0, 0, 1), &[]),
        Field::Kind,
        LINK,
        "WIRE-3-3",
        malformed,
    );
    b.bad_frame(
        "unknown_kind_f",
        "Frame kind 0xF",
        raw_frame(&raw_eth(&[0x88B5]), raw_link(1, 0xF, 0, 0, 1), &[]),
        Field::Kind,
        LINK,
        "WIRE-3-3",
        malformed,
    );
    // A 64-byte STORE frame is 116 bytes; four more bytes before the FCS are not padding.
    let d64 = pattern(64, 0);
    let mut f = data(&[store(0x0002, global(ADDR), &d64)])?;
    let fcs_at = f.len() - 4;
    f.splice(fcs_at..fcs_at, [0u8; 4]);
    refresh_fcs(&mut f);
    b.bad_frame(
        "data_bytes_beyond_body",
        "DATA frame with 4 zero bytes between the end of its payload and the FCS, in a frame \
         longer than 64 bytes",
        f,
        Field::Padding,
        BODY + 8 + 84,
        "WIRE-2.4-3",
        malformed,
    );
    let mut f = good.clone();
    let fcs_at = f.len() - 4;
    f.splice(fcs_at..fcs_at, [0u8; 4]);
    refresh_fcs(&mut f);
    b.bad_frame(
        "data_padding_too_long",
        "DATA frame padded to 68 bytes instead of 64",
        f,
        Field::Padding,
        BODY + 8 + 24,
        "WIRE-2.4-3",
        malformed,
    );
    b.bad_frame(
        "ack_longer_than_padding",
        "A 68-byte ACK: its body is empty, so only 64 bytes are allowed",
        raw_frame(&raw_eth(&[0x88B5]), raw_link(1, 1, 0, 0, 1), &[0; 44]),
        Field::ControlBody,
        BODY,
        "WIRE-4-1",
        malformed,
    );
    b.bad_frame(
        "cf_body_too_long",
        "A CF with 40 body bytes instead of 36 in a 68-byte frame",
        raw_frame(&raw_eth(&[0x88B5]), raw_link(1, 3, 0, 0, 0), &[0; 44]),
        Field::ControlBody,
        BODY + 36,
        "WIRE-4-1",
        malformed,
    );
    b.bad_frame(
        "init_short_body",
        "A 64-byte INIT: only 40 of the 52 body bytes fit",
        raw_frame(&raw_eth(&[0x88B5]), raw_link(1, 5, 0, 0, 0), &[0; 40]),
        Field::ControlBody,
        BODY + 40,
        "WIRE-4-1",
        malformed,
    );
    b.bad_frame(
        "init_echo_short_body_tagged",
        "A 64-byte tagged INIT_ECHO: only 36 of the 52 body bytes fit",
        raw_frame(
            &raw_eth(&[0x8100, 0x0001, 0x88B5]),
            raw_link(1, 6, 0, 0, 0),
            &[0; 36],
        ),
        Field::ControlBody,
        BODY + TAG + 36,
        "WIRE-4-1",
        malformed,
    );
    let init = control(eth(), LinkFrame::Init(init_repr(2, 64, 4096, 512, 64)))?;
    let echo = control(
        eth(),
        LinkFrame::InitEcho {
            echo_nonce: 1,
            init: init_repr(2, 64, 4096, 512, 64),
        },
    )?;
    let cases: [PatchCase<'_>; 12] = [
        (
            "init_vcs_0",
            "INIT announcing 0 VCs",
            &init,
            8,
            &[0],
            Field::InitVcs,
        ),
        (
            "init_vcs_9",
            "INIT announcing 9 VCs",
            &init,
            8,
            &[9],
            Field::InitVcs,
        ),
        (
            "init_credit_size_48",
            "INIT with credit size 48, not a power of two",
            &init,
            10,
            &[0, 48],
            Field::InitCreditSize,
        ),
        (
            "init_credit_size_4096",
            "INIT with credit size 4096, above 2048",
            &init,
            10,
            &[0x10, 0],
            Field::InitCreditSize,
        ),
        (
            "init_credit_size_16",
            "INIT with credit size 16, below 32",
            &init,
            10,
            &[0, 16],
            Field::InitCreditSize,
        ),
        (
            "init_mfs_319",
            "INIT with MFS 319, below 320",
            &init,
            12,
            &[0x01, 0x3F],
            Field::InitMfs,
        ),
        (
            "init_mfs_9217",
            "INIT with MFS 9217, above 9216",
            &init,
            12,
            &[0x24, 0x01],
            Field::InitMfs,
        ),
        (
            "init_window_0",
            "INIT with an LLR window of 0",
            &init,
            16,
            &[0, 0, 0, 0],
            Field::InitWindow,
        ),
        (
            "init_window_too_large",
            "INIT with an LLR window of 2^19 + 1",
            &init,
            16,
            &[0, 0x08, 0, 1],
            Field::InitWindow,
        ),
        (
            "init_credits_2_pow_19",
            "INIT granting 2^19 credits on VC 1",
            &init,
            24,
            &[0, 0x08, 0, 0],
            Field::InitCredits,
        ),
        (
            "init_credits_0",
            "INIT granting 0 credits on VC 0, a VC below its number of VCs",
            &init,
            20,
            &[0, 0, 0, 0],
            Field::InitCredits,
        ),
        (
            "init_echo_mfs_100",
            "INIT_ECHO with MFS 100",
            &echo,
            12,
            &[0, 100],
            Field::InitMfs,
        ),
    ];
    for (name, description, frame, at, bytes, field) in cases {
        b.bad_frame(
            name,
            description,
            patch(frame.to_vec(), BODY + at, bytes),
            field,
            BODY + at,
            "WIRE-4.5-1",
            malformed,
        );
    }
    Ok(())
}

fn malformed_payloads(b: &mut Builder) -> Result<(), String> {
    let d4 = pattern(4, 0xA0);
    let good = data(&[store(0x0001, global(ADDR), &d4)])?;
    let malformed = Action::DiscardMalformed;
    let cases: [HeaderCase<'_>; 5] = [
        (
            "net_dst_gpu_0xffff",
            "Network header with destination GPU 0xFFFF (reserved)",
            0,
            &[0xFF, 0xFF],
            Field::DstGpu,
            0,
        ),
        (
            "net_src_gpu_0xffff",
            "Network header with source GPU 0xFFFF (reserved)",
            2,
            &[0xFF, 0xFF],
            Field::SrcGpu,
            2,
        ),
        (
            "net_txn_count_0",
            "Network header with transaction count 0",
            5,
            &[0],
            Field::TxnCount,
            5,
        ),
        (
            "net_payload_past_end",
            "Payload length 200 in a 64-byte frame: it runs past the FCS",
            6,
            &[0, 200],
            Field::PayloadLength,
            6,
        ),
        (
            "net_payload_past_end_by_1",
            "Payload length 33 in a 64-byte frame, which holds 32 bytes after the network header: one byte past the end",
            6,
            &[0, 33],
            Field::PayloadLength,
            6,
        ),
    ];
    for (name, description, at, bytes, field, offset) in cases {
        b.bad(
            name,
            description,
            patch(good.clone(), BODY + at, bytes),
            Level::Payload,
            None,
            field,
            BODY + offset,
            "WIRE-5-3",
            malformed,
        );
    }
    let mut body = raw_net(DST_GPU, SRC_GPU, 1, 4);
    body.extend_from_slice(&[0x06, 0, 0, 1]);
    b.bad(
        "net_payload_length_4",
        "Payload length 4, less than the 8 bytes of the smallest transaction: a malformed network \
         header",
        raw_frame(&raw_eth(&[0x88B5]), raw_link(1, 0, 0, 0, 1), &body),
        Level::Payload,
        None,
        Field::PayloadLength,
        BODY + 6,
        "WIRE-5-7",
        malformed,
    );
    let body = raw_net(DST_GPU, SRC_GPU, 1, 0);
    b.bad(
        "net_payload_length_0",
        "Payload length 0 with a transaction count of 1",
        raw_frame(&raw_eth(&[0x88B5]), raw_link(1, 0, 0, 0, 1), &body),
        Level::Payload,
        None,
        Field::PayloadLength,
        BODY + 6,
        "WIRE-5-7",
        malformed,
    );
    let tagged = emit_data_with(
        &eth_tagged(0, 1),
        header(0, 1),
        DST_GPU,
        SRC_GPU,
        PATH,
        &[TxnRepr::Fence { tag: 1 }],
    )?;
    b.bad(
        "net_txn_count_0_tagged",
        "Tagged DATA frame with transaction count 0",
        patch(tagged, BODY + TAG + 5, &[0]),
        Level::Payload,
        None,
        Field::TxnCount,
        BODY + TAG + 5,
        "WIRE-5-3",
        malformed,
    );
    Ok(())
}

fn malformed_transactions(b: &mut Builder) -> Result<(), String> {
    let rest = Action::DiscardRest;
    let store_ok = raw_txn(0x02, 0, 0x0001, 5, 4, &mem_ext(ADDR), &[1, 2, 3, 4]);

    let t = raw_txn(0x02, 0, 0x0002, 1, 4, &mem_ext(ADDR), &[1, 2, 3, 4]);
    b.bad_txn(
        "txn_hlen_1",
        "Transaction with hlen 1, below the 2 words of the prefix",
        raw_data(1, &t),
        1,
        Field::Hlen,
        TXN0 + 4,
        "WIRE-6.1-3",
        rest,
    );
    let t = raw_txn(0x06, 0, 0x0003, 0, 0, &[], &[]);
    b.bad_txn(
        "txn_hlen_0_after_store",
        "A good STORE, then a transaction with hlen 0: the STORE stands, the rest is discarded",
        raw_data(2, &[store_ok.clone(), t].concat()),
        2,
        Field::Hlen,
        TXN0 + 24 + 4,
        "WIRE-6.1-3",
        rest,
    );
    let t = raw_txn(0x02, 0, 0x0004, 5, 64, &mem_ext(ADDR), &[]);
    b.bad_txn(
        "txn_data_past_payload",
        "STORE whose dlen (64) runs past the end of the payload",
        raw_data(1, &t),
        1,
        Field::Dlen,
        TXN0 + 6,
        "WIRE-6.1-3",
        rest,
    );
    let mut t = raw_txn(0x01, 0, 0x0005, 60, 0, &mem_ext(ADDR), &[]);
    t.extend_from_slice(&[0, 4, 0, 0]);
    b.bad_txn(
        "txn_header_past_payload",
        "LOAD whose hlen (60 words) runs past the end of the payload",
        raw_data(1, &t),
        1,
        Field::Hlen,
        TXN0 + 4,
        "WIRE-6.1-3",
        rest,
    );
    b.bad_txn(
        "txn_prefix_truncated",
        "Count 2, but only 4 bytes follow the first transaction: fewer than the 8 of a prefix",
        raw_data(2, &[store_ok.clone(), vec![0x06, 0, 0, 1]].concat()),
        2,
        Field::TxnPrefix,
        TXN0 + 24,
        "WIRE-6.1-3",
        rest,
    );
    b.bad_txn(
        "txn_bytes_beyond_count",
        "Count 1, but the payload holds a second transaction",
        raw_data(1, &[store_ok.clone(), store_ok.clone()].concat()),
        2,
        Field::TxnCount,
        TXN0 + 24,
        "WIRE-6.1-4",
        rest,
    );
    b.bad_txn(
        "txn_count_beyond_payload",
        "Count 3, but the payload ends exactly after two transactions: no byte is left where the \
         third should start, a structural error; the two STOREs stand",
        raw_data(3, &[store_ok.clone(), store_ok.clone()].concat()),
        3,
        Field::TxnPrefix,
        TXN0 + 48,
        "WIRE-6.1-3",
        rest,
    );
    b.bad_txn(
        "txn_count_255_one_fence",
        "Count 255, but the payload holds one FENCE and ends on its boundary",
        raw_data(255, &raw_txn(0x06, 0, 0x0006, 2, 0, &[], &[])),
        2,
        Field::TxnPrefix,
        TXN0 + 8,
        "WIRE-6.1-3",
        rest,
    );

    // Malformed requests: answered with the response opcode, the request's tag and MALFORMED.
    let m = |op: u8, tag: u16| respond(op | 0x80, tag, Status::Malformed);
    let t = raw_txn(0x02, 0, 0x0010, 5, 0, &mem_ext(ADDR), &[]);
    b.bad_txn(
        "store_dlen_0",
        "STORE with dlen 0",
        raw_data(1, &t),
        1,
        Field::Dlen,
        TXN0 + 6,
        "WIRE-6.1-6",
        m(0x02, 0x0010),
    );
    let d300 = pattern(300, 0);
    let t = raw_txn(0x02, 0, 0x0011, 5, 300, &mem_ext(ADDR), &d300);
    b.bad_txn(
        "store_dlen_300",
        "STORE with dlen 300, above 256",
        raw_data(1, &t),
        1,
        Field::Dlen,
        TXN0 + 6,
        "WIRE-6.1-6",
        m(0x02, 0x0011),
    );
    let t = raw_txn(
        0x02,
        0,
        0x0012,
        6,
        4,
        &[mem_ext(ADDR), vec![0; 4]].concat(),
        &[1, 2, 3, 4],
    );
    b.bad_txn(
        "store_hlen_6",
        "STORE with hlen 6 instead of 5",
        raw_data(1, &t),
        1,
        Field::Hlen,
        TXN0 + 4,
        "WIRE-6.1-6",
        m(0x02, 0x0012),
    );
    let load = |len: u16| [mem_ext(ADDR), len.to_be_bytes().to_vec(), vec![0, 0]].concat();
    let t = raw_txn(0x01, 0, 0x0013, 6, 0, &load(0), &[]);
    b.bad_txn(
        "load_length_0",
        "LOAD of length 0",
        raw_data(1, &t),
        1,
        Field::LoadLength,
        TXN0 + 20,
        "WIRE-6.1-6",
        m(0x01, 0x0013),
    );
    let t = raw_txn(0x01, 0, 0x0014, 6, 0, &load(257), &[]);
    b.bad_txn(
        "load_length_257",
        "LOAD of length 257, above 256",
        raw_data(1, &t),
        1,
        Field::LoadLength,
        TXN0 + 20,
        "WIRE-6.1-6",
        m(0x01, 0x0014),
    );
    let t = raw_txn(0x01, 0, 0x0015, 6, 4, &load(8), &[0; 4]);
    b.bad_txn(
        "load_with_data",
        "LOAD carrying 4 data bytes: its dlen is fixed at 0, answered MALFORMED",
        raw_data(1, &t),
        1,
        Field::Dlen,
        TXN0 + 6,
        "WIRE-6.1-10",
        m(0x01, 0x0015),
    );
    let t = raw_txn(0x03, 0, 0x0016, 5, 5, &mem_ext(ADDR), &[1, 0, 0, 0, 0]);
    b.bad_txn(
        "atomic_fadd_dlen_5",
        "ATOMIC_FADD with a 5-byte operand",
        raw_data(1, &t),
        1,
        Field::Dlen,
        TXN0 + 6,
        "WIRE-6.5-1",
        m(0x03, 0x0016),
    );
    let t = raw_txn(0x05, 0, 0x0017, 5, 12, &mem_ext(ADDR), &[0; 12]);
    b.bad_txn(
        "atomic_cas_dlen_12",
        "ATOMIC_CAS with dlen 12 (two 6-byte operands)",
        raw_data(1, &t),
        1,
        Field::Dlen,
        TXN0 + 6,
        "WIRE-6.5-1",
        m(0x05, 0x0017),
    );
    let t = raw_txn(0x04, 0, 0x0018, 5, 16, &mem_ext(ADDR), &[0; 16]);
    b.bad_txn(
        "atomic_swap_dlen_16",
        "ATOMIC_SWAP with a 16-byte operand",
        raw_data(1, &t),
        1,
        Field::Dlen,
        TXN0 + 6,
        "WIRE-6.5-1",
        m(0x04, 0x0018),
    );
    let t = raw_txn(0x06, 0, 0x001B, 2, 4, &[], &[0; 4]);
    b.bad_txn(
        "fence_with_data",
        "FENCE carrying 4 data bytes: its dlen is fixed at 0, answered MALFORMED",
        raw_data(1, &t),
        1,
        Field::Dlen,
        TXN0 + 6,
        "WIRE-6.1-10",
        m(0x06, 0x001B),
    );
    let t = raw_txn(
        0x11,
        0,
        0x0021,
        6,
        8,
        &[mem_ext(ADDR), 64u32.to_be_bytes().to_vec()].concat(),
        &[0; 8],
    );
    b.bad_txn(
        "rdma_read_with_data",
        "RDMA_READ carrying 8 data bytes: its dlen is fixed at 0, answered MALFORMED on the \
         RDMA_READ_RESP opcode",
        raw_data(1, &t),
        1,
        Field::Dlen,
        TXN0 + 6,
        "WIRE-6.1-10",
        m(0x11, 0x0021),
    );
    let wr = |offset: u32, total: u32| {
        [
            mem_ext(ADDR),
            offset.to_be_bytes().to_vec(),
            total.to_be_bytes().to_vec(),
        ]
        .concat()
    };
    let d200 = pattern(200, 9);
    let t = raw_txn(0x10, 0, 0x001C, 7, 200, &wr(4000, 4096), &d200);
    b.bad_txn(
        "rdma_write_past_total",
        "RDMA_WRITE segment at offset 4000 with 200 bytes of a 4096-byte write",
        raw_data(1, &t),
        1,
        Field::RdmaOffset,
        TXN0 + 20,
        "WIRE-6.7-1",
        m(0x10, 0x001C),
    );
    let t = raw_txn(0x10, 0, 0x001D, 7, 4, &wr(0, 0), &[0; 4]);
    b.bad_txn(
        "rdma_write_total_0",
        "RDMA_WRITE with total length 0",
        raw_data(1, &t),
        1,
        Field::RdmaTotal,
        TXN0 + 24,
        "WIRE-6.1-6",
        m(0x10, 0x001D),
    );
    let t = raw_txn(
        0x11,
        0,
        0x001E,
        6,
        0,
        &[mem_ext(ADDR), 0u32.to_be_bytes().to_vec()].concat(),
        &[],
    );
    b.bad_txn(
        "rdma_read_total_0",
        "RDMA_READ of total length 0",
        raw_data(1, &t),
        1,
        Field::RdmaTotal,
        TXN0 + 20,
        "WIRE-6.1-6",
        m(0x11, 0x001E),
    );
    let t = raw_txn(0x03, 0, 0x001F, 5, 5, &mem_ext(ADDR), &[0; 5]);
    let load_ok = raw_txn(0x01, 0, 0x0020, 6, 0, &load(8), &[]);
    b.bad_txn(
        "mixed_error_in_third_txn",
        "STORE and LOAD that decode, then an ATOMIC_FADD with dlen 5: the first two stand",
        raw_data(3, &[store_ok.clone(), load_ok, t].concat()),
        3,
        Field::Dlen,
        TXN0 + 48 + 6,
        "WIRE-6.5-1",
        m(0x03, 0x001F),
    );

    // Bad responses: discarded and counted.
    let drop = Action::DiscardTxn;
    let t = raw_txn(0x81, 0x01, 0x0030, 2, 4, &[], &[1, 2, 3, 4]);
    b.bad_txn(
        "load_resp_error_with_data",
        "LOAD_RESP with status ACCESS_VIOLATION carrying 4 data bytes",
        raw_data(1, &t),
        1,
        Field::Dlen,
        TXN0 + 6,
        "WIRE-6.9-1",
        drop,
    );
    let t = raw_txn(0x81, 0x42, 0x0031, 2, 4, &[], &[1, 2, 3, 4]);
    b.bad_txn(
        "load_resp_unknown_status_with_data",
        "LOAD_RESP with unknown status 0x42 carrying data",
        raw_data(1, &t),
        1,
        Field::Dlen,
        TXN0 + 6,
        "WIRE-6.9-1",
        drop,
    );
    let rr = |offset: u32, total: u32| [offset.to_be_bytes(), total.to_be_bytes()].concat();
    let t = raw_txn(0x91, 0x04, 0x0032, 4, 4, &rr(0, 64), &[0; 4]);
    b.bad_txn(
        "rdma_read_resp_error_with_data",
        "RDMA_READ_RESP with status POISONED carrying data",
        raw_data(1, &t),
        1,
        Field::Dlen,
        TXN0 + 6,
        "WIRE-6.9-1",
        drop,
    );
    let t = raw_txn(0x81, 0x00, 0x0033, 2, 0, &[], &[]);
    b.bad_txn(
        "load_resp_ok_no_data",
        "LOAD_RESP with status OK and no data",
        raw_data(1, &t),
        1,
        Field::Dlen,
        TXN0 + 6,
        "WIRE-6.9-4",
        drop,
    );
    let d260 = pattern(260, 0);
    let t = raw_txn(0x81, 0x00, 0x0034, 2, 260, &[], &d260);
    b.bad_txn(
        "load_resp_ok_260b",
        "LOAD_RESP with status OK and 260 data bytes",
        raw_data(1, &t),
        1,
        Field::Dlen,
        TXN0 + 6,
        "WIRE-6.9-4",
        drop,
    );
    let t = raw_txn(0x83, 0x00, 0x0035, 2, 2, &[], &[1, 0]);
    b.bad_txn(
        "atomic_resp_ok_2b",
        "ATOMIC_FADD_RESP with status OK and a 2-byte value",
        raw_data(1, &t),
        1,
        Field::Dlen,
        TXN0 + 6,
        "WIRE-6.9-4",
        drop,
    );
    let t = raw_txn(0x91, 0x00, 0x0036, 4, 8, &rr(60, 64), &[0; 8]);
    b.bad_txn(
        "rdma_read_resp_past_total",
        "RDMA_READ_RESP segment at offset 60 with 8 bytes of a 64-byte read",
        raw_data(1, &t),
        1,
        Field::RdmaOffset,
        TXN0 + 8,
        "WIRE-6.9-3",
        drop,
    );
    let t = raw_txn(0x91, 0x00, 0x0037, 4, 0, &rr(0, 64), &[]);
    b.bad_txn(
        "rdma_read_resp_ok_no_data",
        "RDMA_READ_RESP with status OK and no data",
        raw_data(1, &t),
        1,
        Field::Dlen,
        TXN0 + 6,
        "WIRE-6.9-3",
        drop,
    );
    let t = raw_txn(0x82, 0x00, 0x0038, 3, 0, &[0; 4], &[]);
    b.bad_txn(
        "store_resp_hlen_3",
        "STORE_RESP with hlen 3 instead of 2: a bad response, discarded and counted in \
         bad_responses",
        raw_data(1, &t),
        1,
        Field::Hlen,
        TXN0 + 4,
        "WIRE-6.1-9",
        drop,
    );
    let t = raw_txn(0x82, 0x00, 0x0039, 2, 4, &[], &[0; 4]);
    b.bad_txn(
        "store_resp_with_data",
        "STORE_RESP with status OK carrying 4 data bytes: its dlen is fixed at 0, a bad response",
        raw_data(1, &t),
        1,
        Field::Dlen,
        TXN0 + 6,
        "WIRE-6.1-10",
        drop,
    );
    let t = raw_txn(0x82, 0x05, 0x003A, 2, 4, &[], &[0; 4]);
    b.bad_txn(
        "store_resp_error_with_data",
        "STORE_RESP with status MALFORMED carrying 4 data bytes: both WIRE-6.1-10 and WIRE-6.9-1 \
         are broken; the opcode's fixed dlen is checked first",
        raw_data(1, &t),
        1,
        Field::Dlen,
        TXN0 + 6,
        "WIRE-6.1-10",
        drop,
    );
    let t = raw_txn(0x86, 0x00, 0x003B, 2, 8, &[], &[0; 8]);
    b.bad_txn(
        "fence_resp_with_data",
        "FENCE_RESP carrying 8 data bytes: a bad response",
        raw_data(1, &t),
        1,
        Field::Dlen,
        TXN0 + 6,
        "WIRE-6.1-10",
        drop,
    );
    let t = raw_txn(
        0x90,
        0x00,
        0x003C,
        4,
        4,
        &[0, 0, 0x10, 0, 0, 0, 0, 0],
        &[0; 4],
    );
    b.bad_txn(
        "rdma_completion_with_data",
        "RDMA_COMPLETION carrying 4 data bytes: a bad response",
        raw_data(1, &t),
        1,
        Field::Dlen,
        TXN0 + 6,
        "WIRE-6.1-10",
        drop,
    );
    let t = raw_txn(0x83, 0x00, 0x003D, 3, 4, &[0; 4], &[1, 2, 3, 4]);
    b.bad_txn(
        "atomic_resp_hlen_3",
        "ATOMIC_FADD_RESP with hlen 3: a defined response with a bad field, counted in \
         bad_responses (compare unknown_response_0xc4, counted in unknown_responses)",
        raw_data(1, &t),
        1,
        Field::Hlen,
        TXN0 + 4,
        "WIRE-6.1-9",
        drop,
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Output.

/// The three files, as bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    /// Contents of vectors.json.
    pub json: Vec<u8>,
    /// Contents of vectors.pcapng.
    pub pcapng: Vec<u8>,
    /// Contents of examples.md, the worked examples of docs/spec/examples.md.
    pub examples: Vec<u8>,
}

/// Builds every vector and renders the three files.
pub fn generate() -> Result<Generated, String> {
    let vectors = build()?;
    let mut names = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for v in &vectors {
        if !names.insert(v.name) {
            return Err(format!("vector name {} is used twice", v.name));
        }
        let decoded = match &v.expect {
            Some(_) => None,
            None => {
                let d = decode::decode_frame(&v.bytes, MAX_FRAME_LEN);
                if let Some(e) = d.error {
                    return Err(format!(
                        "well-formed vector {} does not decode: {}",
                        v.name, e.error
                    ));
                }
                Some(d.json)
            }
        };
        out.push(VectorJson {
            name: v.name.to_owned(),
            description: v.description.to_owned(),
            spec: v.spec.iter().map(|s| (*s).to_owned()).collect(),
            hex: hexio::to_hex(&v.bytes),
            well_formed: v.expect.is_none(),
            decoded,
            expected_error: v.expect.clone(),
        });
    }
    let well_formed = out.iter().filter(|v| v.well_formed).count();
    let file = VectorFile {
        format: "ethlink-wire-vectors".to_owned(),
        version: FORMAT_VERSION,
        spec: "docs/spec/wire.md".to_owned(),
        mfs: MAX_FRAME_LEN,
        well_formed,
        malformed: out.len() - well_formed,
        vectors: out,
    };
    let mut json = serde_json::to_vec_pretty(&file).map_err(|e| e.to_string())?;
    json.push(b'\n');
    let frames: Vec<(&str, &[u8])> = vectors
        .iter()
        .map(|v| (v.name, v.bytes.as_slice()))
        .collect();
    let pcapng = capture::write_pcapng(&frames).map_err(|e| e.to_string())?;
    let shown: Vec<examples::Example<'_>> = vectors
        .iter()
        .map(|v| examples::Example {
            name: v.name,
            description: v.description,
            spec: &v.spec,
            bytes: &v.bytes,
            expect: v
                .expect
                .as_ref()
                .map(|e| (e.action.clone(), e.spec.clone(), e.counter.clone())),
        })
        .collect();
    let examples = examples::render(&shown)?.into_bytes();
    Ok(Generated {
        json,
        pcapng,
        examples,
    })
}

/// Writes vectors.json, vectors.pcapng and examples.md into `dir`, creating it if needed, each
/// whole ([`crate::files::write_whole`]): a write that fails leaves no truncated file.
pub fn write(dir: &Path) -> Result<Generated, String> {
    let generated = generate()?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for (name, bytes) in [
        (JSON_FILE, &generated.json),
        (PCAPNG_FILE, &generated.pcapng),
        (EXAMPLES_FILE, &generated.examples),
    ] {
        crate::files::write_whole(&dir.join(name), bytes)?;
    }
    Ok(generated)
}

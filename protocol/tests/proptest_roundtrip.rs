//! Property tests of every representation of ethlink-protocol.
//!
//! - `parse(emit(r)) == r` for Ethernet headers (with and without 802.1Q), every control frame
//!   kind, every transaction kind and DATA payloads packing 1..=255 transactions within the
//!   maximum frame size; emit into a buffer of exactly `buffer_len()` bytes never fails; and
//!   `emit(parse(bytes)) == bytes` for the frames so built.
//! - Arbitrary bytes never make any parser panic: raw bytes, bytes behind a valid Ethernet and
//!   link header with a correct FCS, and valid frames with random bytes changed (FCS
//!   recomputed) so that the body, payload and transaction parsers are reached. Whatever parses
//!   must re-emit to the same bytes, reserved fields and padding aside (see `support/roundtrip.rs`).
//!
//! 256 cases per property by default; set `PROPTEST_CASES` for more. The seed is fixed so runs
//! are repeatable; set `PROPTEST_RNG_SEED` to explore others. Failing cases are kept in
//! `proptest-regressions/proptest_roundtrip.txt` and replayed first.

#[path = "support/roundtrip.rs"]
mod roundtrip;

use ethlink_protocol::{
    AtomicKind, AtomicOp, AtomicValue, Capabilities, CreditRepr, DataFlags, DataHeader, DataRepr,
    EthernetRepr, Frame, FrameRepr, GpuId, InitRepr, LinkFrame, MAX_FRAME_LEN, MacAddr, MemTarget,
    Opcode, PathId, Role, Seq, Space, Status, TxnRepr, Txns, Vc, VlanTag, Width, data_frame_len,
    emit_data_frame, fcs,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, RngSeed};

// ---------------------------------------------------------------------------------------------
// Strategies

fn mac() -> impl Strategy<Value = MacAddr> {
    any::<[u8; 6]>().prop_map(MacAddr)
}

fn vlan() -> impl Strategy<Value = Option<VlanTag>> {
    proptest::option::of(
        (0u8..8, any::<bool>(), 0u16..4096).prop_map(|(pcp, dei, vid)| VlanTag { pcp, dei, vid }),
    )
}

fn ethernet() -> impl Strategy<Value = EthernetRepr> {
    (mac(), mac(), vlan()).prop_map(|(dst, src, vlan)| EthernetRepr { dst, src, vlan })
}

fn seq() -> impl Strategy<Value = Seq> {
    (0u32..Seq::MODULUS).prop_map(Seq::new)
}

fn data_header() -> impl Strategy<Value = DataHeader> {
    (0u8..8, any::<bool>(), any::<bool>(), seq()).prop_map(|(vc, replay, ack_req, seq)| {
        DataHeader {
            vc: Vc::new(vc).unwrap_or_default(),
            flags: DataFlags { replay, ack_req },
            seq,
        }
    })
}

fn credits() -> impl Strategy<Value = CreditRepr> {
    proptest::array::uniform8(proptest::option::of(0u32..Seq::MODULUS))
        .prop_map(|counters| CreditRepr { counters })
}

fn init() -> impl Strategy<Value = InitRepr> {
    (
        any::<u32>(),
        1u8..=8,
        5u32..=11,
        320u16..=9216,
        1u32..=(1 << 19),
        proptest::array::uniform8(0u32..(1 << 19)),
    )
        .prop_map(|(nonce, vcs, size_log2, mfs, window, mut credits)| {
            for (v, c) in credits.iter_mut().enumerate() {
                if v >= usize::from(vcs) {
                    *c = 0;
                }
            }
            InitRepr {
                nonce,
                vcs,
                credit_size: 1 << size_log2,
                mfs,
                window,
                credits,
                credit_overhead: 0,
                caps: Capabilities::NONE,
                role: Role::LinkEnd,
            }
        })
}

/// Every control frame kind.
fn control() -> impl Strategy<Value = LinkFrame<'static>> {
    prop_oneof![
        seq().prop_map(LinkFrame::Ack),
        seq().prop_map(LinkFrame::Nack),
        credits().prop_map(LinkFrame::CreditUpdate),
        credits().prop_map(LinkFrame::CreditResync),
        init().prop_map(LinkFrame::Init),
        (any::<u32>(), init())
            .prop_map(|(echo_nonce, init)| LinkFrame::InitEcho { echo_nonce, init }),
    ]
}

/// A transaction with its borrowed bytes held beside it.
#[derive(Debug, Clone)]
struct OwnedTxn {
    /// The representation, with empty slices where `header` and `data` go.
    shape: TxnRepr<'static>,
    header: Vec<u8>,
    data: Vec<u8>,
}

impl OwnedTxn {
    fn new(shape: TxnRepr<'static>) -> Self {
        OwnedTxn {
            shape,
            header: Vec::new(),
            data: Vec::new(),
        }
    }

    fn with_data(shape: TxnRepr<'static>, data: Vec<u8>) -> Self {
        OwnedTxn {
            data,
            ..OwnedTxn::new(shape)
        }
    }

    fn repr(&self) -> TxnRepr<'_> {
        let data = &self.data[..];
        match self.shape {
            TxnRepr::Store { tag, target, .. } => TxnRepr::Store { tag, target, data },
            TxnRepr::RdmaWrite {
                tag,
                target,
                offset,
                total,
                ..
            } => TxnRepr::RdmaWrite {
                tag,
                target,
                offset,
                total,
                data,
            },
            TxnRepr::LoadResp { tag, status, .. } => TxnRepr::LoadResp { tag, status, data },
            TxnRepr::RdmaReadResp {
                tag,
                status,
                offset,
                total,
                ..
            } => TxnRepr::RdmaReadResp {
                tag,
                status,
                offset,
                total,
                data,
            },
            TxnRepr::Unknown {
                opcode,
                flags_status,
                tag,
                ..
            } => TxnRepr::Unknown {
                opcode,
                flags_status,
                tag,
                header: &self.header,
                data,
            },
            other => other,
        }
    }
}

fn target() -> impl Strategy<Value = MemTarget> {
    (any::<bool>(), any::<u32>(), any::<u64>()).prop_map(|(shared, key, addr)| MemTarget {
        space: if shared { Space::Shared } else { Space::Global },
        key,
        addr,
    })
}

fn bytes(len: impl Into<proptest::collection::SizeRange>) -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), len)
}

/// A status other than OK, known or not.
fn error_status() -> impl Strategy<Value = Status> {
    (1u8..=255).prop_map(Status::from_u8)
}

/// (offset, total) with `offset + len <= total`, total >= 1.
fn segment_bounds(len: usize) -> impl Strategy<Value = (u32, u32)> {
    let len = u32::try_from(len).unwrap_or(u32::MAX);
    (0..=u32::MAX - len)
        .prop_flat_map(move |offset| (Just(offset), (offset + len).max(1)..=u32::MAX))
}

fn atomic() -> impl Strategy<Value = OwnedTxn> {
    (
        any::<u16>(),
        target(),
        any::<bool>(),
        0u8..3,
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(|(tag, mut target, wide, which, a, b)| {
            let (width, mask) = if wide {
                (Width::W8, u64::MAX)
            } else {
                (Width::W4, u64::from(u32::MAX))
            };
            // Aligned to the operand size (WIRE-6.5-2).
            target.addr &= !(width.bytes() as u64 - 1);
            let op = match which {
                0 => AtomicOp::FetchAdd { addend: a & mask },
                1 => AtomicOp::Swap { value: a & mask },
                _ => AtomicOp::CompareSwap {
                    compare: a & mask,
                    value: b & mask,
                },
            };
            OwnedTxn::new(TxnRepr::Atomic {
                tag,
                target,
                width,
                op,
            })
        })
}

fn atomic_resp() -> impl Strategy<Value = OwnedTxn> {
    (
        any::<u16>(),
        0u8..3,
        prop_oneof![
            any::<u32>().prop_map(|v| (Status::Ok, Some(AtomicValue::U32(v)))),
            any::<u64>().prop_map(|v| (Status::Ok, Some(AtomicValue::U64(v)))),
            error_status().prop_map(|s| (s, None)),
        ],
    )
        .prop_map(|(tag, which, (status, old))| {
            let kind = [
                AtomicKind::FetchAdd,
                AtomicKind::Swap,
                AtomicKind::CompareSwap,
            ][usize::from(which)];
            OwnedTxn::new(TxnRepr::AtomicResp {
                tag,
                kind,
                status,
                old,
            })
        })
}

fn unknown_opcode() -> impl Strategy<Value = u8> {
    any::<u8>().prop_filter("undefined opcode", |op| {
        Opcode::from_u8(*op).hlen().is_none()
    })
}

/// Every transaction kind, each within its ranges. RDMA segments are kept to 600 bytes.
fn txn() -> impl Strategy<Value = OwnedTxn> {
    prop_oneof![
        (any::<u16>(), target(), 1u16..=256)
            .prop_map(|(tag, target, len)| OwnedTxn::new(TxnRepr::Load { tag, target, len })),
        (any::<u16>(), target(), bytes(1..=256)).prop_map(|(tag, target, data)| {
            OwnedTxn::with_data(
                TxnRepr::Store {
                    tag,
                    target,
                    data: &[],
                },
                data,
            )
        }),
        atomic(),
        any::<u16>().prop_map(|tag| OwnedTxn::new(TxnRepr::Fence { tag })),
        (any::<u16>(), target(), bytes(1..=600))
            .prop_flat_map(|(tag, target, data)| {
                (
                    Just(tag),
                    Just(target),
                    segment_bounds(data.len()),
                    Just(data),
                )
            })
            .prop_map(|(tag, target, (offset, total), data)| OwnedTxn::with_data(
                TxnRepr::RdmaWrite {
                    tag,
                    target,
                    offset,
                    total,
                    data: &[]
                },
                data
            )),
        (any::<u16>(), target(), 1u32..=u32::MAX).prop_map(|(tag, target, total)| OwnedTxn::new(
            TxnRepr::RdmaRead { tag, target, total }
        )),
        (any::<u16>(), bytes(1..=256)).prop_map(|(tag, data)| OwnedTxn::with_data(
            TxnRepr::LoadResp {
                tag,
                status: Status::Ok,
                data: &[]
            },
            data
        )),
        (any::<u16>(), error_status()).prop_map(|(tag, status)| OwnedTxn::new(TxnRepr::LoadResp {
            tag,
            status,
            data: &[]
        })),
        (any::<u16>(), any::<u8>()).prop_map(|(tag, s)| OwnedTxn::new(TxnRepr::StoreResp {
            tag,
            status: Status::from_u8(s)
        })),
        atomic_resp(),
        (any::<u16>(), any::<u8>()).prop_map(|(tag, s)| OwnedTxn::new(TxnRepr::FenceResp {
            tag,
            status: Status::from_u8(s)
        })),
        (any::<u16>(), any::<u8>(), any::<u32>()).prop_map(|(tag, s, total)| OwnedTxn::new(
            TxnRepr::RdmaCompletion {
                tag,
                status: Status::from_u8(s),
                total
            }
        )),
        (any::<u16>(), bytes(1..=600))
            .prop_flat_map(|(tag, data)| (Just(tag), segment_bounds(data.len()), Just(data)))
            .prop_map(|(tag, (offset, total), data)| OwnedTxn::with_data(
                TxnRepr::RdmaReadResp {
                    tag,
                    status: Status::Ok,
                    offset,
                    total,
                    data: &[]
                },
                data
            )),
        (any::<u16>(), error_status(), any::<u32>(), any::<u32>()).prop_map(
            |(tag, status, offset, total)| OwnedTxn::new(TxnRepr::RdmaReadResp {
                tag,
                status,
                offset,
                total,
                data: &[]
            })
        ),
        (
            unknown_opcode(),
            any::<u8>(),
            any::<u16>(),
            0usize..=8,
            bytes(0..=64)
        )
            .prop_flat_map(|(opcode, fs, tag, words, data)| {
                (
                    Just(opcode),
                    Just(fs),
                    Just(tag),
                    bytes(words * 4),
                    Just(data),
                )
            })
            .prop_map(|(opcode, flags_status, tag, header, data)| OwnedTxn {
                shape: TxnRepr::Unknown {
                    opcode,
                    flags_status,
                    tag,
                    header: &[],
                    data: &[],
                },
                header,
                data,
            }),
    ]
}

/// Small transactions, for payloads that reach the 255-transaction limit.
fn small_txn() -> impl Strategy<Value = OwnedTxn> {
    prop_oneof![
        any::<u16>().prop_map(|tag| OwnedTxn::new(TxnRepr::Fence { tag })),
        (any::<u16>(), any::<u8>()).prop_map(|(tag, s)| OwnedTxn::new(TxnRepr::StoreResp {
            tag,
            status: Status::from_u8(s)
        })),
        (any::<u16>(), target(), bytes(1..=8)).prop_map(|(tag, target, data)| {
            OwnedTxn::with_data(
                TxnRepr::Store {
                    tag,
                    target,
                    data: &[],
                },
                data,
            )
        }),
    ]
}

/// Largest payload (network header and transactions) of a frame with an 802.1Q tag.
const MAX_PAYLOAD_TAGGED: usize = MAX_FRAME_LEN - 18 - 6 - 4;

/// 1..=255 transactions whose payload fits a tagged frame of 9216 B.
fn txn_list() -> impl Strategy<Value = Vec<OwnedTxn>> {
    prop_oneof![vec(txn(), 1..=32), vec(small_txn(), 1..=255)].prop_map(|mut list| {
        let mut len = 8;
        let keep = list
            .iter()
            .take_while(|t| {
                len += t.repr().buffer_len();
                len <= MAX_PAYLOAD_TAGGED
            })
            .count();
        list.truncate(keep.max(1));
        list
    })
}

#[derive(Debug, Clone)]
struct OwnedData {
    dst: GpuId,
    src: GpuId,
    path: PathId,
    txns: Vec<OwnedTxn>,
}

fn gpu() -> impl Strategy<Value = GpuId> {
    (0u16..=0xFFFE).prop_map(|v| GpuId::new(v).unwrap_or_default())
}

fn data() -> impl Strategy<Value = OwnedData> {
    (gpu(), gpu(), any::<u8>(), txn_list()).prop_map(|(dst, src, path, txns)| OwnedData {
        dst,
        src,
        path: PathId(path),
        txns,
    })
}

// ---------------------------------------------------------------------------------------------
// Helpers

fn emit_frame(repr: &FrameRepr<'_>) -> Vec<u8> {
    let mut buf = vec![0xa5; repr.buffer_len()];
    let n = repr.emit(&mut buf).expect("emit into buffer_len bytes");
    assert_eq!(n, buf.len());
    buf
}

fn refresh_fcs(frame: &mut [u8]) {
    let n = frame.len() - 4;
    let f = fcs::fcs_bytes(&frame[..n]);
    frame[n..].copy_from_slice(&f);
}

/// A valid DATA frame built from `data` behind `eth`.
fn data_frame(eth: &EthernetRepr, header: DataHeader, data: &OwnedData) -> Vec<u8> {
    let txns: Vec<TxnRepr<'_>> = data.txns.iter().map(OwnedTxn::repr).collect();
    let repr = DataRepr {
        dst: data.dst,
        src: data.src,
        path: data.path,
        txns: Txns::Slice(&txns),
    };
    let mut buf = vec![0xa5; data_frame_len(eth, &repr)];
    let n = emit_data_frame(eth, header, &repr, &mut buf).expect("emit into buffer_len bytes");
    assert_eq!(n, buf.len());
    buf
}

// ---------------------------------------------------------------------------------------------
// Properties

fn config() -> ProptestConfig {
    // The defaults honour PROPTEST_CASES (256 when unset) and PROPTEST_RNG_SEED.
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(0x88B5);
    }
    config.failure_persistence = Some(Box::new(FileFailurePersistence::Direct(
        "proptest-regressions/proptest_roundtrip.txt",
    )));
    config
}

proptest! {
    #![proptest_config(config())]

    /// Control frames: parse(emit(r)) == r, and the parsed frame re-emits the same bytes.
    #[test]
    fn control_frames_round_trip(eth in ethernet(), link in control()) {
        let repr = FrameRepr { eth, link };
        let bytes = emit_frame(&repr);
        prop_assert!(bytes.len() >= 64);
        let parsed = FrameRepr::parse_bytes(&bytes, MAX_FRAME_LEN).unwrap();
        prop_assert_eq!(parsed, repr);
        prop_assert_eq!(emit_frame(&parsed), bytes.clone());
        // Every frame so built passes the whole-stack check as well.
        let reached = roundtrip::check_frame(&bytes, MAX_FRAME_LEN);
        prop_assert!(reached.repr);
    }

    /// One transaction of any kind: parse(emit(t)) == t.
    #[test]
    fn transactions_round_trip(t in txn()) {
        let repr = t.repr();
        let len = repr.buffer_len();
        prop_assert_eq!(len % 4, 0);
        let mut buf = vec![0xa5; 8 + len];
        buf[..8].copy_from_slice(&[0, 1, 0, 2, 0, 1, 0, 0]);
        buf[6..8].copy_from_slice(&u16::try_from(len).unwrap().to_be_bytes());
        prop_assert_eq!(repr.emit(&mut buf[8..]), Ok(len));
        let data = DataRepr::parse(&buf).unwrap();
        let items: Vec<_> = data.txns.iter().collect();
        prop_assert_eq!(items, vec![Ok(repr)]);
    }

    /// DATA payloads of 1..=255 transactions: parse(emit(d)) == d, both through
    /// `DataRepr::emit` and through a whole frame from `emit_data_frame`.
    #[test]
    fn data_frames_round_trip(eth in ethernet(), header in data_header(), data in data()) {
        let txns: Vec<TxnRepr<'_>> = data.txns.iter().map(OwnedTxn::repr).collect();
        let repr = DataRepr { dst: data.dst, src: data.src, path: data.path, txns: Txns::Slice(&txns) };
        let mut payload = vec![0xa5; repr.buffer_len()];
        prop_assert_eq!(repr.emit(&mut payload), Ok(payload.len()));
        let parsed = DataRepr::parse(&payload).unwrap();
        prop_assert_eq!(parsed, repr);
        prop_assert_eq!(parsed.txns.count(), txns.len());

        let frame = data_frame(&eth, header, &data);
        prop_assert!(frame.len() <= MAX_FRAME_LEN);
        let f = FrameRepr::parse_bytes(&frame, MAX_FRAME_LEN).unwrap();
        prop_assert_eq!(f.eth, eth);
        let LinkFrame::Data { header: h, payload: p } = f.link else {
            panic!("not a DATA frame");
        };
        prop_assert_eq!(h, header);
        prop_assert_eq!(p, &payload[..]);
        prop_assert_eq!(DataRepr::parse(p).unwrap(), repr);
        // Parsed, re-emitted: the same bytes, through FrameRepr and through the transactions.
        prop_assert_eq!(emit_frame(&f), frame.clone());
        let reached = roundtrip::check_frame(&frame, MAX_FRAME_LEN);
        prop_assert_eq!(reached.txns_ok, txns.len());
        prop_assert_eq!(reached.txns_err, 0);
    }

    /// Arbitrary bytes as a frame, with and without a correct FCS appended: nothing panics, and
    /// anything that parses re-emits to itself.
    #[test]
    fn arbitrary_bytes_never_panic(raw in bytes(0..=400), fix_fcs: bool, small_mfs: bool) {
        let mfs = if small_mfs { 320 } else { MAX_FRAME_LEN };
        roundtrip::check_frame(&raw, mfs);
        let _ = Frame::new_checked(&raw[..], mfs);
        if fix_fcs {
            let mut framed = raw.clone();
            framed.extend_from_slice(&fcs::fcs_bytes(&raw));
            roundtrip::check_frame(&framed, mfs);
        }
        let (_, _) = roundtrip::check_payload(&raw, 0);
    }

    /// Random bodies behind a valid Ethernet header and a link header of version 1 and a known
    /// kind, padded, with a correct FCS: the body parsers are reached.
    #[test]
    fn random_bodies_behind_valid_headers(
        eth in ethernet(),
        kind in 0u8..7,
        link_rest in any::<[u8; 5]>(),
        body in bytes(0..=300),
    ) {
        let mut frame = vec![0u8; eth.header_len()];
        frame[..6].copy_from_slice(&eth.dst.0);
        frame[6..12].copy_from_slice(&eth.src.0);
        if eth.vlan.is_some() {
            frame[12..16].copy_from_slice(&[0x81, 0x00, 0x20, 0x01]);
        }
        let n = frame.len();
        frame[n - 2..].copy_from_slice(&[0x88, 0xB5]);
        frame.push(0x10 | kind);
        frame.extend_from_slice(&link_rest);
        frame.extend_from_slice(&body);
        if frame.len() < 60 {
            frame.resize(60, 0);
        }
        frame.extend_from_slice(&[0; 4]);
        refresh_fcs(&mut frame);
        let reached = roundtrip::check_frame(&frame, MAX_FRAME_LEN);
        prop_assert!(reached.frame);
    }

    /// Valid DATA frames with random bytes overwritten (FCS recomputed): the payload and
    /// transaction parsers see nearly-valid input, and whatever parses re-emits to itself.
    #[test]
    fn mutated_data_frames(
        eth in ethernet(),
        header in data_header(),
        data in data(),
        edits in vec((any::<prop::sample::Index>(), any::<u8>()), 1..=4),
    ) {
        let mut frame = data_frame(&eth, header, &data);
        // After the version and kind byte, so the frame stays a checked DATA frame.
        let start = eth.header_len() + 1;
        let end = frame.len() - 4;
        for (at, value) in edits {
            let i = start + at.index(end - start);
            frame[i] = value;
        }
        refresh_fcs(&mut frame);
        let reached = roundtrip::check_frame(&frame, MAX_FRAME_LEN);
        prop_assert!(reached.frame);
        // The payload on its own, as a switch or endpoint would hand it over.
        let (_, _) = roundtrip::check_payload(&frame[start + 5..end], start + 5);
    }

    /// Valid control frames with random bytes overwritten (FCS recomputed).
    #[test]
    fn mutated_control_frames(
        eth in ethernet(),
        link in control(),
        edits in vec((any::<prop::sample::Index>(), any::<u8>()), 1..=3),
    ) {
        let mut frame = emit_frame(&FrameRepr { eth, link });
        let end = frame.len() - 4;
        for (at, value) in edits {
            let i = 12 + at.index(end - 12);
            frame[i] = value;
        }
        refresh_fcs(&mut frame);
        roundtrip::check_frame(&frame, MAX_FRAME_LEN);
    }
}

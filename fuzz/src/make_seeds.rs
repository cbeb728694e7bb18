//! Writes the seed corpus of the `parse_frame` target: valid frames of every kind and DATA
//! frames carrying every transaction type, in each of the target's input modes.
//!
//! Run from the fuzz directory: `cargo run --bin make_seeds` (writes `seeds/parse_frame/`).

use std::fs;
use std::path::Path;

use ethlink_protocol::{
    AtomicKind, AtomicOp, AtomicValue, Capabilities, CreditRepr, DataFlags, DataHeader, DataRepr,
    EthernetRepr, FrameRepr, GpuId, InitRepr, LinkFrame, MacAddr, MemTarget, PathId, Role, Seq,
    Space, Status, TxnRepr, Txns, Vc, VlanTag, Width, data_frame_len, emit_data_frame,
};

fn main() {
    let dir = Path::new("seeds/parse_frame");
    fs::create_dir_all(dir).expect("create seeds dir");
    let data = [0x5Au8; 256];
    let target = MemTarget {
        space: Space::Shared,
        key: 0x0102_0304,
        addr: 0x1000,
    };
    let txns: Vec<TxnRepr<'_>> = vec![
        TxnRepr::Load {
            tag: 1,
            target,
            len: 64,
        },
        TxnRepr::Store {
            tag: 2,
            target,
            data: &data[..64],
        },
        TxnRepr::Store {
            tag: 3,
            target,
            data: &data[..5],
        },
        TxnRepr::Atomic {
            tag: 4,
            target,
            width: Width::W4,
            op: AtomicOp::FetchAdd { addend: 7 },
        },
        TxnRepr::Atomic {
            tag: 5,
            target,
            width: Width::W8,
            op: AtomicOp::Swap { value: 9 },
        },
        TxnRepr::Atomic {
            tag: 6,
            target,
            width: Width::W8,
            op: AtomicOp::CompareSwap {
                compare: 1,
                value: 2,
            },
        },
        TxnRepr::Fence { tag: 7 },
        TxnRepr::RdmaWrite {
            tag: 8,
            target,
            offset: 4,
            total: 100,
            data: &data[..10],
        },
        TxnRepr::RdmaRead {
            tag: 9,
            target,
            total: 4096,
        },
        TxnRepr::LoadResp {
            tag: 10,
            status: Status::Ok,
            data: &data[..3],
        },
        TxnRepr::StoreResp {
            tag: 11,
            status: Status::Ok,
        },
        TxnRepr::AtomicResp {
            tag: 12,
            kind: AtomicKind::CompareSwap,
            status: Status::Ok,
            old: Some(AtomicValue::U32(5)),
        },
        TxnRepr::AtomicResp {
            tag: 13,
            kind: AtomicKind::Swap,
            status: Status::Busy,
            old: None,
        },
        TxnRepr::FenceResp {
            tag: 14,
            status: Status::Ok,
        },
        TxnRepr::RdmaCompletion {
            tag: 15,
            status: Status::Ok,
            total: 100,
        },
        TxnRepr::RdmaReadResp {
            tag: 16,
            status: Status::Ok,
            offset: 0,
            total: 8,
            data: &data[..8],
        },
        TxnRepr::Unknown {
            opcode: 0x20,
            flags_status: 1,
            tag: 17,
            header: &[0; 4],
            data: &[1, 2],
        },
        // A misaligned atomic is well formed (WIRE-6.5-3).
        TxnRepr::Atomic {
            tag: 18,
            target: MemTarget {
                addr: 0x1004,
                ..target
            },
            width: Width::W8,
            op: AtomicOp::FetchAdd { addend: 1 },
        },
        // An unknown response opcode (WIRE-6.1-7).
        TxnRepr::Unknown {
            opcode: 0xC4,
            flags_status: 0,
            tag: 19,
            header: &[],
            data: &[],
        },
    ];
    let eths = [
        EthernetRepr {
            dst: MacAddr::LINK_LOCAL,
            src: MacAddr([2, 0, 0, 0, 0, 1]),
            vlan: None,
        },
        EthernetRepr {
            dst: MacAddr([2, 0, 0, 0, 0, 2]),
            src: MacAddr([2, 0, 0, 0, 0, 1]),
            vlan: Some(VlanTag {
                pcp: 3,
                dei: false,
                vid: 5,
            }),
        },
    ];
    let header = DataHeader {
        vc: Vc::new(3).expect("vc"),
        flags: DataFlags {
            replay: false,
            ack_req: true,
        },
        seq: Seq::new(0xFFFFF),
    };
    let mut frames: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut push_data = |eth: &EthernetRepr, set: &[TxnRepr<'_>]| {
        let repr = DataRepr {
            dst: GpuId::new(1).expect("gpu"),
            src: GpuId::new(2).expect("gpu"),
            path: PathId::from_parts(1, 2),
            txns: Txns::Slice(set),
        };
        let mut buf = vec![0; data_frame_len(eth, &repr)];
        emit_data_frame(eth, header, &repr, &mut buf).expect("emit data");
        frames.push((eth.header_len(), buf));
    };
    for eth in &eths {
        for t in &txns {
            push_data(eth, std::slice::from_ref(t));
        }
        push_data(eth, &txns);
        push_data(eth, &[txns[1]; 4]);
    }
    let init = InitRepr {
        nonce: 0xDEAD_BEEF,
        vcs: 2,
        credit_size: 256,
        mfs: 9216,
        window: 512,
        credits: [64, 32, 0, 0, 0, 0, 0, 0],
        credit_overhead: 0,
        caps: Capabilities::NONE,
        role: Role::LinkEnd,
    };
    // INIT with a credit overhead, capabilities and a role (wire.md §4.5).
    let init_caps = InitRepr {
        credit_overhead: 24,
        caps: Capabilities::RDMA | Capabilities::ATOMICS | Capabilities::PACKING,
        role: Role::Endpoint,
        ..init
    };
    let credits = CreditRepr {
        counters: [
            Some(5),
            None,
            Some(0xFFFFF),
            None,
            None,
            None,
            None,
            Some(1),
        ],
    };
    let links = [
        LinkFrame::Ack(Seq::new(17)),
        LinkFrame::Nack(Seq::new(0xFFFFF)),
        LinkFrame::CreditUpdate(credits),
        LinkFrame::CreditResync(credits),
        LinkFrame::Init(init),
        LinkFrame::InitEcho {
            echo_nonce: 0x1234_5678,
            init,
        },
        LinkFrame::Init(init_caps),
    ];
    for eth in &eths {
        for link in links {
            let repr = FrameRepr { eth: *eth, link };
            let mut buf = vec![0; repr.buffer_len()];
            repr.emit(&mut buf).expect("emit control");
            frames.push((eth.header_len(), buf));
        }
    }
    let mut n = 0;
    let mut write = |bytes: Vec<u8>| {
        fs::write(dir.join(format!("seed-{n:03}")), bytes).expect("write seed");
        n += 1;
    };
    for (eth_len, f) in &frames {
        let tagged = *eth_len > 14;
        // Mode 0: the whole frame.
        write([&[0u8][..], f].concat());
        // Mode 1: the frame without its FCS.
        write([&[1u8][..], &f[..f.len() - 4]].concat());
        // Mode 3: the link header's kind byte and what follows it, without the FCS.
        let mode = if tagged { 7u8 } else { 3 };
        let link = &f[*eth_len..f.len() - 4];
        write([&[mode, link[0] & 0x0F][..], &link[1..]].concat());
        // Mode 2: the DATA payload alone.
        if link[0] & 0x0F == 0 {
            write([&[2u8][..], &link[6..]].concat());
        }
    }
    // Mode 0: a frame ending with the stomped FCS (WIRE-2.5-5).
    if let Some((_, f)) = frames.first() {
        let mut stomped = f.clone();
        let n = stomped.len() - 4;
        let fcs = ethlink_protocol::fcs::stomped_bytes(&stomped[..n]);
        stomped[n..].copy_from_slice(&fcs);
        write([&[0u8][..], &stomped].concat());
    }
    println!("wrote {n} seeds to {}", dir.display());
}

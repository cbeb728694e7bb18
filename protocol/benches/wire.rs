//! Parse and emit costs of EthLink frames, with smoltcp and etherparse parsing and emitting an
//! Ethernet + IPv4 + UDP packet as a yardstick.
//!
//! Groups:
//! - `ethlink_frame`: whole frames, FCS included. Parse-and-validate is `Frame::new_checked` +
//!   `FrameRepr::parse` + `DataRepr::parse` + a walk of every transaction; emit is
//!   `emit_data_frame`. One 64 B STORE (a 116 B frame) and four 64 B STOREs (368 B).
//! - `ethlink_header`: the Ethernet, link and network headers alone, no FCS (as after a MAC that
//!   checked and stripped it): `Frame::new_checked_without_fcs` + `FrameRepr::parse` +
//!   `DataRepr::parse_at` of the network header, without walking the transactions; emit is
//!   `emit_data_headers`, which writes the same 28 bytes.
//! - `fcs`: CRC-32 over 64 B and 9216 B, in bytes per second.
//! - `smoltcp` / `etherparse`: Ethernet + IPv4 + UDP with an empty payload (header only) and
//!   with a 64 B payload (whose UDP checksum covers it). smoltcp parses with
//!   `new_checked` and verifies both checksums; etherparse slices (`SlicedPacket`, no checksum
//!   verification) and builds with `PacketBuilder` (which computes both).
//!
//! Run: `cargo bench -p ethlink-protocol --bench wire -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ethlink_protocol::{
    DataFlags, DataHeader, DataRepr, EthernetRepr, Frame, FrameRepr, GpuId, LINK_HEADER_LEN,
    LinkFrame, MAX_FRAME_LEN, MacAddr, MemTarget, PathId, Seq, Space, TxnRepr, Txns, Vc,
    data_frame_len, emit_data_frame, emit_data_headers, fcs,
};

const STORE_DATA: [u8; 64] = [0x5A; 64];

fn eth() -> EthernetRepr {
    EthernetRepr {
        dst: MacAddr([0x02, 0, 0, 0, 0, 0x02]),
        src: MacAddr([0x02, 0, 0, 0, 0, 0x01]),
        vlan: None,
    }
}

fn data_header() -> DataHeader {
    DataHeader {
        vc: Vc::new(2).unwrap_or_default(),
        flags: DataFlags::default(),
        seq: Seq::new(1234),
    }
}

fn stores(n: u16) -> Vec<TxnRepr<'static>> {
    (0..n)
        .map(|tag| TxnRepr::Store {
            tag,
            target: MemTarget {
                space: Space::Global,
                key: 0x1122_3344,
                addr: 0x1000 + u64::from(tag) * 64,
            },
            data: &STORE_DATA,
        })
        .collect()
}

fn data_repr<'a>(txns: &'a [TxnRepr<'a>]) -> DataRepr<'a> {
    DataRepr {
        dst: GpuId::new(7).unwrap_or_default(),
        src: GpuId::new(3).unwrap_or_default(),
        path: PathId::from_parts(1, 2),
        txns: Txns::Slice(txns),
    }
}

fn build_frame(txns: &[TxnRepr<'_>]) -> Vec<u8> {
    let repr = data_repr(txns);
    let mut buf = vec![0; data_frame_len(&eth(), &repr)];
    emit_data_frame(&eth(), data_header(), &repr, &mut buf).expect("emit");
    buf
}

/// Parse and validate a whole frame and walk every transaction; returns a value depending on
/// all of them so nothing is optimised away.
fn parse_validate(bytes: &[u8]) -> usize {
    let Ok(frame) = Frame::new_checked(bytes, MAX_FRAME_LEN) else {
        return 0;
    };
    let Ok(repr) = FrameRepr::parse(&frame) else {
        return 0;
    };
    let LinkFrame::Data { payload, .. } = repr.link else {
        return 0;
    };
    let Ok(data) = DataRepr::parse(payload) else {
        return 0;
    };
    let mut acc = 0usize;
    for t in data.txns.iter() {
        match t {
            Ok(TxnRepr::Store { data, tag, .. }) => acc += data.len() + usize::from(tag),
            Ok(_) => acc += 1,
            Err(_) => return 0,
        }
    }
    acc
}

/// The Ethernet, link and network headers of a DATA frame whose FCS a MAC has already checked
/// and stripped: every check of `Frame::new_checked_without_fcs` and `FrameRepr::parse`, then the
/// network header's (`DataRepr::parse_at`); the transactions are not walked.
fn parse_headers(frame: &[u8]) -> Option<(EthernetRepr, DataHeader, DataRepr<'_>)> {
    let frame = Frame::new_checked_without_fcs(frame, MAX_FRAME_LEN).ok()?;
    let repr = FrameRepr::parse(&frame).ok()?;
    let LinkFrame::Data { header, payload } = repr.link else {
        return None;
    };
    let data = DataRepr::parse_at(payload, frame.ethernet_header_len() + LINK_HEADER_LEN).ok()?;
    Some((repr.eth, header, data))
}

fn ethlink(c: &mut Criterion) {
    let one = stores(1);
    let four = stores(4);
    let frames = [
        ("store64", build_frame(&one)),
        ("store64x4", build_frame(&four)),
    ];
    assert_eq!(frames[0].1.len(), 116);
    assert_eq!(frames[1].1.len(), 368);

    let mut g = c.benchmark_group("ethlink_frame");
    for (name, bytes) in &frames {
        assert!(parse_validate(bytes) > 0);
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function(format!("parse_validate/{name}"), |b| {
            b.iter(|| parse_validate(black_box(bytes)))
        });
    }
    for (name, txns) in [("store64", &one), ("store64x4", &four)] {
        let repr = data_repr(txns);
        let mut buf = vec![0u8; data_frame_len(&eth(), &repr)];
        g.throughput(Throughput::Bytes(buf.len() as u64));
        g.bench_function(format!("emit/{name}"), |b| {
            b.iter(|| {
                emit_data_frame(
                    black_box(&eth()),
                    black_box(data_header()),
                    black_box(&repr),
                    black_box(&mut buf[..]),
                )
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("ethlink_header");
    let full = &frames[0].1;
    let bytes = &full[..full.len() - fcs::FCS_LEN];
    let (e, h, d) = parse_headers(bytes).expect("headers parse");
    assert_eq!((e, h), (eth(), data_header()));
    let mut out = [0u8; 28];
    assert_eq!(emit_data_headers(&e, h, &d, &mut out), Ok(28));
    assert_eq!(out, bytes[..28]);
    g.bench_function("parse_validate", |b| {
        b.iter(|| parse_headers(black_box(bytes)).map(|(e, h, d)| (e.dst, h.seq, d.dst)))
    });
    g.bench_function("emit", |b| {
        b.iter(|| {
            emit_data_headers(
                black_box(&e),
                black_box(h),
                black_box(&d),
                black_box(&mut out[..]),
            )
        })
    });
    g.finish();

    let mut g = c.benchmark_group("fcs");
    let big: Vec<u8> = (0..MAX_FRAME_LEN).map(|i| (i * 7) as u8).collect();
    for len in [64usize, MAX_FRAME_LEN] {
        let bytes = &big[..len];
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_function(format!("crc32/{len}"), |b| {
            b.iter(|| fcs::crc32(black_box(bytes)))
        });
    }
    g.finish();
}

mod yardstick {
    use super::*;
    use smoltcp::phy::ChecksumCapabilities;
    use smoltcp::wire::{
        EthernetAddress, EthernetFrame, EthernetProtocol, EthernetRepr as SmolEth, IpAddress,
        IpProtocol, Ipv4Address, Ipv4Packet, Ipv4Repr, UdpPacket, UdpRepr,
    };

    const SRC_IP: Ipv4Address = Ipv4Address::new(10, 0, 0, 1);
    const DST_IP: Ipv4Address = Ipv4Address::new(10, 0, 0, 2);

    fn reprs(payload_len: usize) -> (SmolEth, Ipv4Repr, UdpRepr) {
        (
            SmolEth {
                src_addr: EthernetAddress([0x02, 0, 0, 0, 0, 0x01]),
                dst_addr: EthernetAddress([0x02, 0, 0, 0, 0, 0x02]),
                ethertype: EthernetProtocol::Ipv4,
            },
            Ipv4Repr {
                src_addr: SRC_IP,
                dst_addr: DST_IP,
                next_header: IpProtocol::Udp,
                payload_len: 8 + payload_len,
                hop_limit: 64,
            },
            UdpRepr {
                src_port: 4791,
                dst_port: 4791,
            },
        )
    }

    /// Emits Ethernet + IPv4 + UDP with smoltcp, both checksums computed.
    fn smol_emit(payload: &[u8], buf: &mut [u8]) -> usize {
        let (e, ip, udp) = reprs(payload.len());
        let caps = ChecksumCapabilities::default();
        let len = 14 + 20 + 8 + payload.len();
        let mut frame = EthernetFrame::new_unchecked(&mut buf[..len]);
        e.emit(&mut frame);
        let mut ipp = Ipv4Packet::new_unchecked(frame.payload_mut());
        ip.emit(&mut ipp, &caps);
        let mut udpp = UdpPacket::new_unchecked(ipp.payload_mut());
        udp.emit(
            &mut udpp,
            &IpAddress::Ipv4(SRC_IP),
            &IpAddress::Ipv4(DST_IP),
            payload.len(),
            |p| p.copy_from_slice(payload),
            &caps,
        );
        len
    }

    /// Parses Ethernet + IPv4 + UDP with smoltcp's checked views, verifying both checksums.
    fn smol_parse(bytes: &[u8]) -> Option<(u16, usize)> {
        let caps = ChecksumCapabilities::default();
        let frame = EthernetFrame::new_checked(bytes).ok()?;
        let e = SmolEth::parse(&frame).ok()?;
        if e.ethertype != EthernetProtocol::Ipv4 {
            return None;
        }
        let ipp = Ipv4Packet::new_checked(frame.payload()).ok()?;
        let ip = Ipv4Repr::parse(&ipp, &caps).ok()?;
        let udpp = UdpPacket::new_checked(ipp.payload()).ok()?;
        let udp = UdpRepr::parse(
            &udpp,
            &IpAddress::Ipv4(ip.src_addr),
            &IpAddress::Ipv4(ip.dst_addr),
            &caps,
        )
        .ok()?;
        Some((udp.dst_port, udpp.payload().len()))
    }

    fn ether_emit(payload: &[u8], buf: &mut [u8]) -> Option<usize> {
        let builder = etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .udp(4791, 4791);
        let len = builder.size(payload.len());
        let mut out = buf.get_mut(..len)?;
        builder.write(&mut out, payload).ok()?;
        Some(len)
    }

    fn ether_parse(bytes: &[u8]) -> Option<(u16, usize)> {
        let p = etherparse::SlicedPacket::from_ethernet(bytes).ok()?;
        match p.transport? {
            etherparse::TransportSlice::Udp(u) => Some((u.destination_port(), u.payload().len())),
            _ => None,
        }
    }

    pub(super) fn bench(c: &mut Criterion) {
        for (name, payload) in [("udp0", &[][..]), ("udp64", &STORE_DATA[..])] {
            let mut g = c.benchmark_group(format!("smoltcp_{name}"));
            let mut buf = [0u8; 256];
            let len = smol_emit(payload, &mut buf);
            let bytes = buf[..len].to_vec();
            assert_eq!(smol_parse(&bytes), Some((4791, payload.len())));
            g.bench_function("parse_checked", |b| {
                b.iter(|| smol_parse(black_box(&bytes)))
            });
            g.bench_function("emit", |b| {
                b.iter(|| smol_emit(black_box(payload), black_box(&mut buf)))
            });
            g.finish();

            let mut g = c.benchmark_group(format!("etherparse_{name}"));
            let len = ether_emit(payload, &mut buf).expect("etherparse emit");
            assert_eq!(buf[..len], bytes[..]);
            assert_eq!(ether_parse(&bytes), Some((4791, payload.len())));
            g.bench_function("parse", |b| b.iter(|| ether_parse(black_box(&bytes))));
            g.bench_function("emit", |b| {
                b.iter(|| ether_emit(black_box(payload), black_box(&mut buf)))
            });
            g.finish();
        }
    }
}

criterion_group!(benches, ethlink, yardstick::bench);
criterion_main!(benches);

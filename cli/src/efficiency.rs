//! Wire efficiency of EthLink against RoCEv2.
//!
//! Efficiency is payload bytes divided by wire bytes, where wire bytes count every frame with its
//! headers, padding to 64 B and FCS, plus the preamble, SFD and inter-frame gap around it
//! (`WIRE_OVERHEAD`, wire.md §1.3). EthLink sizes are measured by emitting real frames with the
//! protocol crate; RoCEv2 sizes come from its published header sizes.

use std::fmt::Write as _;

use ethlink_protocol::{
    DataFlags, DataHeader, DataRepr, ETH_HEADER_LEN, EthernetRepr, GpuId, LINK_HEADER_LEN,
    MAX_TXNS_PER_FRAME, MIN_FRAME_LEN, MacAddr, MemTarget, NETWORK_HEADER_LEN, PathId, Seq, Status,
    TxnRepr, Txns, Vc, WIRE_OVERHEAD, data_frame_len, emit_data_frame, fcs::FCS_LEN,
};
use serde::Serialize;

/// Operation sizes the table has a row for.
pub const SIZES: [usize; 6] = [4, 8, 64, 128, 256, 4096];

/// RoCEv2 header sizes (InfiniBand Architecture Specification, Annex A17).
pub mod rocev2 {
    /// Ethernet header, untagged.
    pub const ETH: usize = 14;
    /// IPv4 header without options.
    pub const IPV4: usize = 20;
    /// UDP header.
    pub const UDP: usize = 8;
    /// Base transport header.
    pub const BTH: usize = 12;
    /// RDMA extended transport header (first or only packet of an RDMA WRITE; RDMA READ request).
    pub const RETH: usize = 16;
    /// ACK extended transport header (first, last or only RDMA READ response packet).
    pub const AETH: usize = 4;
    /// Invariant CRC.
    pub const ICRC: usize = 4;
    /// Ethernet FCS.
    pub const FCS: usize = 4;
    /// Largest payload of one packet (path MTU 4096).
    pub const MTU: usize = 4096;
}

/// The sizes of one way of moving an operation's payload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Column {
    /// What is sent, for example `STORE` or `LOAD + LOAD_RESP`.
    pub op: String,
    /// Operations carried.
    pub ops: usize,
    /// Frames on the wire.
    pub frames: usize,
    /// Payload bytes moved (operations times the operation size).
    pub payload_bytes: usize,
    /// Bytes of all frames, destination MAC through FCS.
    pub frame_bytes: usize,
    /// Frame bytes plus preamble, SFD and inter-frame gap per frame.
    pub wire_bytes: usize,
    /// `payload_bytes / wire_bytes`.
    pub efficiency: f64,
}

impl Column {
    fn new(op: impl Into<String>, ops: usize, size: usize, frames: &[usize]) -> Self {
        let frame_bytes: usize = frames.iter().sum();
        let wire_bytes = frame_bytes + WIRE_OVERHEAD * frames.len();
        let payload_bytes = ops * size;
        Column {
            op: op.into(),
            ops,
            frames: frames.len(),
            payload_bytes,
            frame_bytes,
            wire_bytes,
            efficiency: ratio(payload_bytes, wire_bytes),
        }
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    // Sizes here are far below 2^52, so the conversions are exact.
    let (a, b) = (a as f64, b as f64);
    if b == 0.0 { 0.0 } else { a / b }
}

/// One operation size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Operation size in bytes.
    pub size: usize,
    /// EthLink, one operation per frame: a STORE up to 256 B, else an RDMA_WRITE (in as many
    /// segments as the MFS needs).
    pub ethlink_single: Column,
    /// EthLink, as many operations as fit in one frame of the MFS.
    pub ethlink_packed: Column,
    /// RoCEv2 RDMA WRITE, one packet per operation (more if it exceeds the 4096 B MTU).
    pub rocev2_write: Column,
    /// EthLink read: the request frame and the response frame(s).
    pub ethlink_read: Column,
    /// RoCEv2 RDMA READ: the request packet and the response packet(s).
    pub rocev2_read: Column,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Maximum frame size of the EthLink link.
    pub mfs: usize,
    /// Preamble, SFD and inter-frame gap per frame.
    pub wire_overhead: usize,
    /// Smallest frame; shorter ones are padded.
    pub min_frame: usize,
    /// RoCEv2 per-packet header bytes of an RDMA WRITE (Ethernet, IPv4, UDP, BTH, RETH, ICRC, FCS).
    pub rocev2_write_headers: usize,
    /// RoCEv2 path MTU assumed.
    pub rocev2_mtu: usize,
    /// One row per operation size.
    pub rows: Vec<Row>,
}

const KEY: u32 = 0x0000_1234;
const ADDR: u64 = 0x0000_0001_0000_0000;

fn target() -> MemTarget {
    MemTarget {
        key: KEY,
        addr: ADDR,
        ..MemTarget::default()
    }
}

/// Emits a DATA frame carrying `txns` and returns its length.
fn frame_len(txns: &[TxnRepr<'_>]) -> Result<usize, String> {
    let eth = EthernetRepr {
        dst: MacAddr([2, 0, 0, 0, 0, 2]),
        src: MacAddr([2, 0, 0, 0, 0, 1]),
        vlan: None,
    };
    let data = DataRepr {
        dst: GpuId::new(2).unwrap_or_default(),
        src: GpuId::new(1).unwrap_or_default(),
        path: PathId::from_parts(0, 1),
        txns: Txns::Slice(txns),
    };
    let header = DataHeader {
        vc: Vc::new(0).unwrap_or_default(),
        flags: DataFlags::default(),
        seq: Seq::new(0),
    };
    let mut buf = vec![0u8; data_frame_len(&eth, &data)];
    emit_data_frame(&eth, header, &data, &mut buf).map_err(|e| e.to_string())
}

/// Fixed bytes of an untagged DATA frame: Ethernet, link and network headers and the FCS.
const DATA_OVERHEAD: usize = ETH_HEADER_LEN + LINK_HEADER_LEN + NETWORK_HEADER_LEN + FCS_LEN;

/// Largest segment of an RDMA transaction with a header of `header` bytes in one frame.
fn max_segment(mfs: usize, header: usize) -> usize {
    mfs.saturating_sub(DATA_OVERHEAD + header) & !3
}

fn header_len(t: &TxnRepr<'_>) -> usize {
    usize::from(t.opcode().hlen().unwrap_or(2)) * 4
}

/// Frames of `size` bytes of RDMA data cut into segments that fit the MFS; `segment` builds the
/// transaction carrying `data` at `offset` of a transfer of `total` bytes.
fn segmented_frames<'z>(
    mfs: usize,
    size: usize,
    zeros: &'z [u8],
    segment: impl Fn(u32, u32, &'z [u8]) -> TxnRepr<'z>,
) -> Result<Vec<usize>, String> {
    let seg = max_segment(mfs, header_len(&segment(0, 1, &[0]))).max(4);
    let total = u32::try_from(size).map_err(|e| e.to_string())?;
    let mut frames = Vec::new();
    let mut offset = 0;
    while offset < size {
        let n = seg.min(size - offset);
        let at = u32::try_from(offset).map_err(|e| e.to_string())?;
        frames.push(frame_len(&[segment(
            at,
            total,
            zeros.get(..n).unwrap_or_default(),
        )])?);
        offset += n;
    }
    Ok(frames)
}

/// Frames of one RDMA_WRITE of `size` bytes.
fn rdma_write_frames(mfs: usize, size: usize, zeros: &[u8]) -> Result<Vec<usize>, String> {
    segmented_frames(mfs, size, zeros, |offset, total, data| TxnRepr::RdmaWrite {
        tag: 1,
        target: target(),
        offset,
        total,
        data,
    })
}

/// Frames of the response to one RDMA_READ of `size` bytes.
fn rdma_read_resp_frames(mfs: usize, size: usize, zeros: &[u8]) -> Result<Vec<usize>, String> {
    segmented_frames(mfs, size, zeros, |offset, total, data| {
        TxnRepr::RdmaReadResp {
            tag: 1,
            status: Status::Ok,
            offset,
            total,
            data,
        }
    })
}

fn rocev2_frame(headers: usize, payload: usize) -> usize {
    (headers + payload).max(MIN_FRAME_LEN)
}

fn rocev2_write(size: usize) -> Column {
    use rocev2::*;
    let base = ETH + IPV4 + UDP + BTH + ICRC + FCS;
    let mut frames = Vec::new();
    let mut left = size;
    while left > 0 {
        let n = left.min(MTU);
        // Only the first (or only) packet of a write carries the RETH.
        let reth = if frames.is_empty() { RETH } else { 0 };
        frames.push(rocev2_frame(base + reth, n));
        left -= n;
    }
    Column::new("RDMA WRITE", 1, size, &frames)
}

fn rocev2_read(size: usize) -> Column {
    use rocev2::*;
    let base = ETH + IPV4 + UDP + BTH + ICRC + FCS;
    let mut frames = vec![rocev2_frame(base + RETH, 0)];
    let packets = size.div_ceil(MTU);
    let mut left = size;
    for i in 0..packets {
        let n = left.min(MTU);
        // First, last and only response packets carry the AETH; middle ones do not.
        let aeth = if i == 0 || i + 1 == packets { AETH } else { 0 };
        frames.push(rocev2_frame(base + aeth, n));
        left -= n;
    }
    Column::new("READ request + response", 1, size, &frames)
}

fn row(mfs: usize, size: usize, zeros: &[u8]) -> Result<Row, String> {
    let data = zeros.get(..size).unwrap_or_default();
    let small = size <= ethlink_protocol::MAX_LOAD_STORE_LEN;
    let store = TxnRepr::Store {
        tag: 1,
        target: target(),
        data,
    };
    let ethlink_single = if small {
        Column::new("STORE", 1, size, &[frame_len(&[store])?])
    } else {
        let frames = rdma_write_frames(mfs, size, zeros)?;
        let name = if frames.len() == 1 {
            "RDMA_WRITE".to_owned()
        } else {
            format!("RDMA_WRITE in {} segments", frames.len())
        };
        Column::new(name, 1, size, &frames)
    };
    // Pack copies of the one-frame operation while the frame stays within the MFS.
    let unit = if small {
        Some(store)
    } else {
        let txn = TxnRepr::RdmaWrite {
            tag: 1,
            target: target(),
            offset: 0,
            total: u32::try_from(size).map_err(|e| e.to_string())?,
            data,
        };
        (ethlink_single.frames == 1).then_some(txn)
    };
    let ethlink_packed = match unit {
        Some(unit) => {
            let fit = mfs.saturating_sub(DATA_OVERHEAD) / unit.buffer_len().max(1);
            let ops = fit.clamp(1, MAX_TXNS_PER_FRAME);
            let txns = vec![unit; ops];
            Column::new(unit.opcode().name(), ops, size, &[frame_len(&txns)?])
        }
        None => ethlink_single.clone(),
    };
    let ethlink_read = if small {
        let load = TxnRepr::Load {
            tag: 1,
            target: target(),
            len: u16::try_from(size).map_err(|e| e.to_string())?,
        };
        let resp = TxnRepr::LoadResp {
            tag: 1,
            status: Status::Ok,
            data,
        };
        Column::new(
            "LOAD + LOAD_RESP",
            1,
            size,
            &[frame_len(&[load])?, frame_len(&[resp])?],
        )
    } else {
        let read = TxnRepr::RdmaRead {
            tag: 1,
            target: target(),
            total: u32::try_from(size).map_err(|e| e.to_string())?,
        };
        let mut frames = vec![frame_len(&[read])?];
        frames.extend(rdma_read_resp_frames(mfs, size, zeros)?);
        Column::new("RDMA_READ + RDMA_READ_RESP", 1, size, &frames)
    };
    Ok(Row {
        size,
        ethlink_single,
        ethlink_packed,
        rocev2_write: rocev2_write(size),
        ethlink_read,
        rocev2_read: rocev2_read(size),
    })
}

/// Computes the comparison for a link whose maximum frame size is `mfs` (320..=9216).
pub fn compute(mfs: usize) -> Result<Report, String> {
    let zeros = vec![0u8; SIZES.iter().copied().max().unwrap_or(0)];
    let rows = SIZES
        .iter()
        .map(|&size| row(mfs, size, &zeros))
        .collect::<Result<Vec<_>, _>>()?;
    use rocev2::*;
    Ok(Report {
        mfs,
        wire_overhead: WIRE_OVERHEAD,
        min_frame: MIN_FRAME_LEN,
        rocev2_write_headers: ETH + IPV4 + UDP + BTH + RETH + ICRC + FCS,
        rocev2_mtu: MTU,
        rows,
    })
}

fn pct(e: f64) -> String {
    format!("{:.1}%", e * 100.0)
}

/// The comparison as a text table.
pub fn render_text(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Wire efficiency = payload bytes / wire bytes; wire bytes = frames (headers, padding to \
         {} B, FCS) + {} B preamble, SFD and inter-frame gap per frame.",
        r.min_frame, r.wire_overhead
    );
    let _ = writeln!(
        out,
        "EthLink MFS {} B. RoCEv2: {} B of headers per RDMA WRITE packet (Ethernet 14, IPv4 20, \
         UDP 8, BTH 12, RETH 16, ICRC 4, FCS 4), MTU {} B.",
        r.mfs, r.rocev2_write_headers, r.rocev2_mtu
    );
    out.push('\n');
    let line = |cells: [&str; 13]| {
        let [
            size,
            s_op,
            s_wire,
            s_eff,
            p_op,
            p_ops,
            p_wire,
            p_eff,
            w_wire,
            w_eff,
            l_wire,
            l_eff,
            rr,
        ] = cells;
        format!(
            "{size:>5} | {s_op:<10} {s_wire:>6} {s_eff:>6} | {p_op:<10} {p_ops:>4} {p_wire:>6} \
             {p_eff:>6} | {w_wire:>6} {w_eff:>6} | {l_wire:>6} {l_eff:>6} | {rr}\n"
        )
    };
    let groups = [
        "EthLink 1 op/frame",
        "EthLink packed in 1 frame",
        "RoCEv2 WRITE",
        "EthLink read",
    ];
    let [g1, g2, g3, g4] = groups;
    let _ = writeln!(
        out,
        " size | {g1:<24} | {g2:<29} | {g3:<13} | {g4:<13} | RoCEv2 READ"
    );
    out.push_str(&line([
        "B",
        "op",
        "wire B",
        "eff",
        "op",
        "ops",
        "wire B",
        "eff",
        "wire B",
        "eff",
        "wire B",
        "eff",
        "wire B    eff",
    ]));
    let _ = writeln!(out, "{}", "-".repeat(118));
    for row in &r.rows {
        let (s, p, w) = (&row.ethlink_single, &row.ethlink_packed, &row.rocev2_write);
        let (l, rr) = (&row.ethlink_read, &row.rocev2_read);
        let size = row.size.to_string();
        let (s_wire, p_ops, p_wire) = (
            s.wire_bytes.to_string(),
            p.ops.to_string(),
            p.wire_bytes.to_string(),
        );
        let (w_wire, l_wire) = (w.wire_bytes.to_string(), l.wire_bytes.to_string());
        let rr_cell = format!("{:>6} {:>6}", rr.wire_bytes, pct(rr.efficiency));
        out.push_str(&line([
            &size,
            short_op(&s.op),
            &s_wire,
            &pct(s.efficiency),
            short_op(&p.op),
            &p_ops,
            &p_wire,
            &pct(p.efficiency),
            &w_wire,
            &pct(w.efficiency),
            &l_wire,
            &pct(l.efficiency),
            &rr_cell,
        ]));
    }
    let _ = writeln!(
        out,
        "\nEthLink read = request frame + response frame(s): LOAD + LOAD_RESP up to {} B, \
         RDMA_READ + RDMA_READ_RESP above. RoCEv2 READ = READ request + READ response(s).",
        ethlink_protocol::MAX_LOAD_STORE_LEN
    );
    for row in &r.rows {
        if row.ethlink_single.frames > 1 {
            let _ = writeln!(
                out,
                "note: {} B in one operation needs {} frames at MFS {}: {}",
                row.size, row.ethlink_single.frames, r.mfs, row.ethlink_single.op
            );
        }
    }
    out
}

fn short_op(op: &str) -> &str {
    op.split(' ').next().unwrap_or(op)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_sizes_at_default_mfs() {
        let r = compute(9216).unwrap_or_else(|e| panic!("{e}"));
        let row4 = r.rows.first().map(|r| r.ethlink_single.clone());
        // 14 + 6 + 8 + (20 + 4) + 4 = 56, padded to 64; plus 20 on the wire.
        assert_eq!(row4.map(|c| c.wire_bytes), Some(84));
        let last = r
            .rows
            .last()
            .map(|r| (r.ethlink_single.clone(), r.rocev2_write.clone()));
        // 32 + 28 + 4096 = 4156 + 20.
        assert_eq!(last.as_ref().map(|(s, _)| s.wire_bytes), Some(4176));
        // 78 + 4096 + 20.
        assert_eq!(last.map(|(_, w)| w.wire_bytes), Some(4194));
        // 64 B stores: (9216 - 32) / 84 = 109 per frame.
        assert_eq!(r.rows.get(2).map(|r| r.ethlink_packed.ops), Some(109));
    }

    #[test]
    fn small_mfs_segments_large_writes() {
        let r = compute(320).unwrap_or_else(|e| panic!("{e}"));
        let last = r.rows.last().map(|r| r.ethlink_single.frames).unwrap_or(0);
        // Segments of (320 - 32 - 28) = 260 bytes.
        assert_eq!(last, 4096usize.div_ceil(260));
    }
}

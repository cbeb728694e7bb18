//! Readable text of a decoded frame, and the error line of a rejected one.
//!
//! The decoder itself (a frame into its JSON form, with the checks of docs/spec/wire.md in the
//! order a receiver applies them, §7) lives in `ethlink_conformance::vectors::decode`, next to the
//! golden vectors whose `decoded` objects it writes; it is re-exported here.

use std::fmt::Write as _;

pub use ethlink_conformance::vectors::decode::*;

use ethlink_protocol::{PREFIX_LEN, Status, fcs::FCS_LEN};

use crate::model::{Address, FrameJson, HexBytes, SpaceJson, StatusJson, TxnJson};

/// The error line printed on standard error for a rejected frame, without the `error: ` prefix.
pub fn error_line(frame_index: usize, error: &FrameError) -> String {
    match error.transaction {
        Some(t) => format!("frame {frame_index}: transaction {t}: {}", error.error),
        None => format!("frame {frame_index}: {}", error.error),
    }
}

/// Renders a decoded frame as readable multi-line text.
pub fn render_text(json: &FrameJson) -> String {
    let mut out = String::new();
    let index = json.frame.unwrap_or(1);
    let length = json.length.unwrap_or(0);
    let _ = write!(out, "frame {index}: {length} bytes");
    if json.fcs_present == Some(false) {
        let _ = writeln!(
            out,
            ", FCS not present ({} bytes given without it; FCS not checked)",
            length.saturating_sub(FCS_LEN)
        );
    } else {
        match &json.fcs {
            Some(Some(fcs)) => {
                let _ = writeln!(out, ", FCS {} (good)", crate::hexio::to_hex(&fcs.0));
            }
            _ => out.push('\n'),
        }
    }
    if let Some(eth) = &json.eth {
        let _ = write!(out, "  ethernet  dst {} src {}", eth.dst.0, eth.src.0);
        if let Some(v) = &eth.vlan {
            let _ = write!(
                out,
                " 802.1Q pcp {} dei {} vid {}",
                v.pcp,
                u8::from(v.dei),
                v.vid
            );
        }
        out.push_str(" ethertype 0x88b5\n");
    }
    if let Some(link) = &json.link {
        let kind = link.kind.name();
        let _ = write!(
            out,
            "  link      version {} kind {kind}",
            link.version.unwrap_or(1)
        );
        if let Some(vc) = link.vc {
            let _ = write!(out, " vc {vc}");
        }
        if link.replay.is_some() || link.ack_req.is_some() {
            let mut flags = Vec::new();
            if link.replay == Some(true) {
                flags.push("REPLAY");
            }
            if link.ack_req == Some(true) {
                flags.push("ACK_REQ");
            }
            let flags = if flags.is_empty() {
                "-".to_owned()
            } else {
                flags.join("|")
            };
            let _ = write!(out, " flags {flags}");
        }
        if let Some(seq) = link.seq {
            let _ = write!(out, " seq {seq} ({seq:#07x})");
        }
        out.push('\n');
    }
    if let Some(c) = &json.credits {
        let _ = write!(out, "  credits   vc_mask {:#04x}", c.vc_mask.unwrap_or(0));
        for (vc, counter) in c.counters.iter().enumerate() {
            if let Some(counter) = counter {
                let _ = write!(out, " vc{vc}={counter}");
            }
        }
        out.push('\n');
    }
    if let Some(i) = &json.init {
        let _ = write!(out, "  init      nonce {:#010x}", i.nonce);
        if let Some(echo) = i.echo_nonce {
            let _ = write!(out, " echo_nonce {echo:#010x}");
        }
        let _ = writeln!(
            out,
            " vcs {} credit_size {} mfs {} llr_window {}",
            i.vcs, i.credit_size, i.mfs, i.llr_window
        );
        let credits: Vec<String> = i.credits.iter().map(u32::to_string).collect();
        let _ = writeln!(out, "            credits {}", credits.join(" "));
    }
    if let Some(n) = &json.network {
        let _ = writeln!(
            out,
            "  network   dst_gpu {} src_gpu {} path stack {} port {} txn_count {} payload_length {}",
            n.dst_gpu,
            n.src_gpu,
            n.path.stack,
            n.path.port,
            n.txn_count.unwrap_or(0),
            n.payload_length.unwrap_or(0)
        );
    }
    for (i, t) in json.txns.iter().flatten().enumerate() {
        render_txn(&mut out, i + 1, t);
    }
    for r in &json.reserved {
        let _ = writeln!(
            out,
            "  reserved  non-zero at offset {}: {} (ignored, WIRE-1.2-2)",
            r.offset,
            crate::hexio::to_hex(&r.hex.0)
        );
    }
    if let Some(e) = &json.error {
        let _ = writeln!(out, "  ERROR     [{}] {}", e.level, e.message);
    }
    out
}

fn render_txn(out: &mut String, index: usize, t: &TxnJson) {
    let mut fields: Vec<(&str, String)> = Vec::new();
    let mut data: Option<&HexBytes> = None;
    let mut action = None;
    let mem =
        |fields: &mut Vec<(&str, String)>, space: &SpaceJson, key: &u32, address: &Address| {
            let space = match space {
                SpaceJson::Global => "global",
                SpaceJson::Shared => "shared",
            };
            fields.push(("space", space.to_owned()));
            fields.push(("key", format!("{key:#010x}")));
            fields.push(("address", format!("{:#018x}", address.0)));
        };
    let status = |s: &StatusJson| match s.0 {
        Status::Unknown(v) => format!("{v:#04x} (unknown)"),
        known => known.name().to_owned(),
    };
    let (opcode, frame_offset, tag) = match t {
        TxnJson::Load {
            frame_offset,
            tag,
            space,
            key,
            address,
            length,
        } => {
            mem(&mut fields, space, key, address);
            fields.push(("length", length.to_string()));
            ("LOAD".to_owned(), frame_offset, tag)
        }
        TxnJson::Store {
            frame_offset,
            tag,
            space,
            key,
            address,
            data: d,
            ..
        } => {
            mem(&mut fields, space, key, address);
            fields.push(("dlen", d.0.len().to_string()));
            data = Some(d);
            ("STORE".to_owned(), frame_offset, tag)
        }
        TxnJson::AtomicFadd {
            frame_offset,
            tag,
            space,
            key,
            address,
            width,
            addend,
        } => {
            mem(&mut fields, space, key, address);
            fields.push(("width", width.to_string()));
            fields.push(("addend", format!("{addend:#x}")));
            ("ATOMIC_FADD".to_owned(), frame_offset, tag)
        }
        TxnJson::AtomicSwap {
            frame_offset,
            tag,
            space,
            key,
            address,
            width,
            value,
        } => {
            mem(&mut fields, space, key, address);
            fields.push(("width", width.to_string()));
            fields.push(("value", format!("{value:#x}")));
            ("ATOMIC_SWAP".to_owned(), frame_offset, tag)
        }
        TxnJson::AtomicCas {
            frame_offset,
            tag,
            space,
            key,
            address,
            width,
            compare,
            value,
        } => {
            mem(&mut fields, space, key, address);
            fields.push(("width", width.to_string()));
            fields.push(("compare", format!("{compare:#x}")));
            fields.push(("value", format!("{value:#x}")));
            ("ATOMIC_CAS".to_owned(), frame_offset, tag)
        }
        TxnJson::Fence { frame_offset, tag } => ("FENCE".to_owned(), frame_offset, tag),
        TxnJson::RdmaWrite {
            frame_offset,
            tag,
            space,
            key,
            address,
            offset,
            total_length,
            data: d,
            ..
        } => {
            mem(&mut fields, space, key, address);
            fields.push(("offset", offset.to_string()));
            fields.push(("total_length", total_length.to_string()));
            fields.push(("dlen", d.0.len().to_string()));
            data = Some(d);
            ("RDMA_WRITE".to_owned(), frame_offset, tag)
        }
        TxnJson::RdmaRead {
            frame_offset,
            tag,
            space,
            key,
            address,
            total_length,
        } => {
            mem(&mut fields, space, key, address);
            fields.push(("total_length", total_length.to_string()));
            ("RDMA_READ".to_owned(), frame_offset, tag)
        }
        TxnJson::LoadResp {
            frame_offset,
            tag,
            status: s,
            data: d,
            ..
        } => {
            fields.push(("status", status(s)));
            fields.push(("dlen", d.0.len().to_string()));
            data = Some(d);
            ("LOAD_RESP".to_owned(), frame_offset, tag)
        }
        TxnJson::StoreResp {
            frame_offset,
            tag,
            status: s,
        } => {
            fields.push(("status", status(s)));
            ("STORE_RESP".to_owned(), frame_offset, tag)
        }
        TxnJson::FenceResp {
            frame_offset,
            tag,
            status: s,
        } => {
            fields.push(("status", status(s)));
            ("FENCE_RESP".to_owned(), frame_offset, tag)
        }
        TxnJson::AtomicFaddResp {
            frame_offset,
            tag,
            status: s,
            width,
            old,
        }
        | TxnJson::AtomicSwapResp {
            frame_offset,
            tag,
            status: s,
            width,
            old,
        }
        | TxnJson::AtomicCasResp {
            frame_offset,
            tag,
            status: s,
            width,
            old,
        } => {
            fields.push(("status", status(s)));
            if let (Some(w), Some(v)) = (width, old) {
                fields.push(("width", w.to_string()));
                fields.push(("old", format!("{v:#x}")));
            }
            let name = match t {
                TxnJson::AtomicFaddResp { .. } => "ATOMIC_FADD_RESP",
                TxnJson::AtomicSwapResp { .. } => "ATOMIC_SWAP_RESP",
                _ => "ATOMIC_CAS_RESP",
            };
            (name.to_owned(), frame_offset, tag)
        }
        TxnJson::RdmaCompletion {
            frame_offset,
            tag,
            status: s,
            total_length,
        } => {
            fields.push(("status", status(s)));
            fields.push(("total_length", total_length.to_string()));
            ("RDMA_COMPLETION".to_owned(), frame_offset, tag)
        }
        TxnJson::RdmaReadResp {
            frame_offset,
            tag,
            status: s,
            offset,
            total_length,
            data: d,
            ..
        } => {
            fields.push(("status", status(s)));
            fields.push(("offset", offset.to_string()));
            fields.push(("total_length", total_length.to_string()));
            fields.push(("dlen", d.0.len().to_string()));
            data = Some(d);
            ("RDMA_READ_RESP".to_owned(), frame_offset, tag)
        }
        TxnJson::Unknown {
            frame_offset,
            code,
            flags_status,
            tag,
            header,
            data: d,
            receiver_action,
            ..
        } => {
            fields.push(("flags_status", format!("{flags_status:#04x}")));
            fields.push(("hlen", ((PREFIX_LEN + header.0.len()) / 4).to_string()));
            if !header.0.is_empty() {
                fields.push(("header", crate::hexio::to_hex(&header.0)));
            }
            fields.push(("dlen", d.0.len().to_string()));
            data = Some(d);
            action = receiver_action.as_deref();
            (format!("UNKNOWN opcode {code:#04x}"), frame_offset, tag)
        }
    };
    let at = frame_offset.map(|o| format!(" @{o}")).unwrap_or_default();
    let _ = write!(out, "  txn {index}{at}  {opcode} tag {tag}");
    for (key, value) in fields {
        let _ = write!(out, " {key} {value}");
    }
    out.push('\n');
    if let Some(a) = action {
        let _ = writeln!(out, "            receiver: {a}");
    }
    if let Some(d) = data.filter(|d| !d.0.is_empty()) {
        let _ = writeln!(out, "            data {}", crate::hexio::to_hex(&d.0));
    }
}

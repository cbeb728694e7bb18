//! `examples.md`: worked examples of the wire format, generated from the golden vectors.
//!
//! Each example takes one vector's bytes and lays them out field by field: the offsets, the
//! bytes, the field's name, its decoded value and the section of docs/spec/wire.md that defines
//! it. The layout is read from the bytes here, with the offsets of wire.md, and not through the
//! protocol crate's parser, so the examples are a second, independent reading of every vector
//! they show. The file is written by `ethlink vectors --out DIR` next to vectors.json; the copy in
//! docs/spec/ must equal it.

use std::fmt::Write as _;

/// Name of the generated file.
pub const EXAMPLES_FILE: &str = "examples.md";

/// The vectors shown, in order, each with a title. Every frame kind and every transaction type
/// of wire.md appears at least once.
const SHOWN: [(&str, &str); 34] = [
    (
        "store_4b_global_min_frame",
        "DATA frame: one STORE, padded to 64 bytes",
    ),
    ("tagged_store_vc3", "DATA frame with an 802.1Q tag"),
    (
        "data_replay_ack_req_vc7",
        "DATA frame with the REPLAY and ACK_REQ flags",
    ),
    ("ack", "ACK"),
    ("nack", "NACK"),
    ("cf_vc0_vc2", "CF (credit update)"),
    ("cc_all_vcs", "CC (credit resync)"),
    (
        "init_capabilities_role_overhead",
        "INIT with capabilities, role and credit overhead",
    ),
    (
        "init_echo_switch_tagged_cut_through",
        "INIT_ECHO of a switch",
    ),
    ("load_8b_global", "LOAD"),
    ("store_1b_data_padding", "STORE with data padding"),
    ("atomic_fadd_4b", "ATOMIC_FADD, 4-byte operand"),
    ("atomic_swap_8b", "ATOMIC_SWAP, 8-byte operand"),
    ("atomic_cas_8b", "ATOMIC_CAS, 8-byte operands"),
    (
        "atomic_fadd_8b_misaligned",
        "ATOMIC_FADD at a misaligned address (well formed)",
    ),
    ("fence", "FENCE"),
    ("rdma_write_last_byte_shared", "RDMA_WRITE segment"),
    ("rdma_read", "RDMA_READ"),
    ("unknown_request_0x20", "Unknown request opcode"),
    ("load_resp_ok_8b", "LOAD_RESP"),
    ("store_resp_ok", "STORE_RESP"),
    ("atomic_fadd_resp_ok_4b", "ATOMIC_FADD_RESP"),
    ("atomic_swap_resp_ok_8b", "ATOMIC_SWAP_RESP"),
    ("atomic_cas_resp_ok_8b", "ATOMIC_CAS_RESP"),
    ("fence_resp_ok", "FENCE_RESP"),
    ("rdma_completion_ok", "RDMA_COMPLETION"),
    ("rdma_read_resp_ok", "RDMA_READ_RESP"),
    (
        "load_resp_access_violation",
        "A response with an error status",
    ),
    ("unknown_response_0xc4", "Unknown response opcode"),
    (
        "packed_mixed_responses",
        "Several responses packed in one frame",
    ),
    ("stomped_fcs_data", "A stomped frame"),
    (
        "net_payload_length_4",
        "A malformed network header (payload length below 8)",
    ),
    ("store_resp_with_data", "A bad response"),
    (
        "txn_count_beyond_payload",
        "A transaction count beyond the payload",
    ),
];

/// One vector as the generator holds it.
pub(super) struct Example<'a> {
    pub(super) name: &'a str,
    pub(super) description: &'a str,
    pub(super) spec: &'a [&'a str],
    pub(super) bytes: &'a [u8],
    /// For a malformed vector: the receiver's action, the requirement and the counter.
    pub(super) expect: Option<(String, String, Option<String>)>,
}

/// One row of an example's table: bytes `start..=end`.
struct Row {
    start: usize,
    end: usize,
    field: String,
    value: String,
    section: &'static str,
}

/// Reads the frame field by field.
struct Walker<'a> {
    bytes: &'a [u8],
    at: usize,
    rows: Vec<Row>,
}

impl<'a> Walker<'a> {
    fn take(&mut self, n: usize, field: &str, value: String, section: &'static str) -> &'a [u8] {
        let start = self.at;
        let end = start.saturating_add(n).min(self.bytes.len());
        let slice = self.bytes.get(start..end).unwrap_or(&[]);
        if end > start {
            self.rows.push(Row {
                start,
                end: end - 1,
                field: field.to_owned(),
                value,
                section,
            });
        }
        self.at = end;
        slice
    }

    /// A reserved field: zero on transmit, ignored on receipt (WIRE-1.2-1, WIRE-1.2-2).
    fn reserved(&mut self, n: usize, field: &str, section: &'static str) {
        let v = self.be(0, n);
        let shown = if v == 0 {
            "reserved, 0".to_owned()
        } else {
            format!("reserved, 0x{v:X} (ignored)")
        };
        self.take(n, field, shown, section);
    }

    fn peek(&self, n: usize) -> &'a [u8] {
        let end = self.at.saturating_add(n).min(self.bytes.len());
        self.bytes.get(self.at..end).unwrap_or(&[])
    }

    fn u8_at(&self, off: usize) -> u8 {
        self.bytes.get(self.at + off).copied().unwrap_or(0)
    }

    fn be(&self, off: usize, n: usize) -> u64 {
        (0..n).fold(0u64, |v, i| (v << 8) | u64::from(self.u8_at(off + i)))
    }

    /// A big-endian integer field of `n` bytes, shown in decimal and hexadecimal.
    fn int(&mut self, n: usize, field: &str, section: &'static str) -> u64 {
        let v = self.be(0, n);
        let shown = if v < 10 {
            format!("{v}")
        } else {
            format!("{v} (0x{v:0w$X})", w = n * 2)
        };
        self.take(n, field, shown, section);
        v
    }
}

fn mac(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn hex_bytes(b: &[u8]) -> String {
    const SHOW: usize = 16;
    let mut s = b
        .iter()
        .take(SHOW)
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(" ");
    if b.len() > SHOW {
        let _ = write!(s, " … ({} bytes)", b.len());
    }
    s
}

fn le(b: &[u8]) -> u64 {
    b.iter().rev().fold(0u64, |v, x| (v << 8) | u64::from(*x))
}

fn kind_name(k: u8) -> &'static str {
    match k {
        0 => "DATA",
        1 => "ACK",
        2 => "NACK",
        3 => "CF",
        4 => "CC",
        5 => "INIT",
        6 => "INIT_ECHO",
        _ => "unknown",
    }
}

fn status_name(s: u8) -> &'static str {
    match s {
        0 => "OK",
        1 => "ACCESS_VIOLATION",
        2 => "OUT_OF_RANGE",
        3 => "UNSUPPORTED",
        4 => "POISONED",
        5 => "MALFORMED",
        6 => "MISALIGNED",
        7 => "BUSY",
        _ => "unknown status",
    }
}

/// Name, section and expected `hlen` of an opcode.
fn opcode_info(op: u8) -> (&'static str, &'static str, Option<u8>) {
    match op {
        0x01 => ("LOAD", "§6.3", Some(6)),
        0x02 => ("STORE", "§6.4", Some(5)),
        0x03 => ("ATOMIC_FADD", "§6.5", Some(5)),
        0x04 => ("ATOMIC_SWAP", "§6.5", Some(5)),
        0x05 => ("ATOMIC_CAS", "§6.5", Some(5)),
        0x06 => ("FENCE", "§6.6", Some(2)),
        0x10 => ("RDMA_WRITE", "§6.7", Some(7)),
        0x11 => ("RDMA_READ", "§6.8", Some(6)),
        0x81 => ("LOAD_RESP", "§6.9", Some(2)),
        0x82 => ("STORE_RESP", "§6.9", Some(2)),
        0x83 => ("ATOMIC_FADD_RESP", "§6.9", Some(2)),
        0x84 => ("ATOMIC_SWAP_RESP", "§6.9", Some(2)),
        0x85 => ("ATOMIC_CAS_RESP", "§6.9", Some(2)),
        0x86 => ("FENCE_RESP", "§6.9", Some(2)),
        0x90 => ("RDMA_COMPLETION", "§6.9", Some(4)),
        0x91 => ("RDMA_READ_RESP", "§6.9", Some(4)),
        o if o < 0x80 => ("unknown request", "§6.1", None),
        _ => ("unknown response", "§6.1", None),
    }
}

fn caps_names(bits: u16) -> String {
    let names = [
        "RDMA",
        "ATOMICS",
        "SHARED",
        "PACKING",
        "TAGGED",
        "CUT_THROUGH",
    ];
    let set: Vec<&str> = names
        .iter()
        .enumerate()
        .filter(|(i, _)| bits & (1 << i) != 0)
        .map(|(_, n)| *n)
        .collect();
    if set.is_empty() {
        "none".to_owned()
    } else {
        set.join(" | ")
    }
}

fn role_name(code: u16) -> &'static str {
    match code {
        0 => "link end",
        1 => "endpoint",
        2 => "switch",
        _ => "reserved",
    }
}

fn ethernet(w: &mut Walker<'_>) {
    let d = w.peek(6);
    w.take(6, "destination MAC", mac(d), "§2.3");
    let s = w.peek(6);
    w.take(6, "source MAC", mac(s), "§2.3");
    if w.be(0, 2) == 0x8100 {
        w.take(2, "802.1Q TPID", "0x8100".to_owned(), "§2.2");
        let tci = w.be(0, 2);
        w.take(
            2,
            "802.1Q TCI",
            format!(
                "PCP {}, DEI {}, VID {}",
                tci >> 13,
                (tci >> 12) & 1,
                tci & 0x0FFF
            ),
            "§2.2",
        );
    }
    let et = w.be(0, 2);
    let shown = if et == 0x88B5 {
        "0x88B5 (EthLink)".to_owned()
    } else {
        format!("0x{et:04X} (foreign)")
    };
    w.take(2, "EtherType", shown, "§2.1");
}

/// The link header; returns the kind.
fn link_header(w: &mut Walker<'_>) -> u8 {
    let b0 = w.u8_at(0);
    let kind = b0 & 0x0F;
    w.take(
        1,
        "version | kind",
        format!("version {}, kind {} ({})", b0 >> 4, kind, kind_name(kind)),
        "§3",
    );
    let b1 = w.u8_at(0);
    let shown = if kind == 0 {
        let mut flags = Vec::new();
        if b1 & 0x01 != 0 {
            flags.push("REPLAY");
        }
        if b1 & 0x02 != 0 {
            flags.push("ACK_REQ");
        }
        let flags = if flags.is_empty() {
            "none".to_owned()
        } else {
            flags.join(" | ")
        };
        format!("VC {}, flags {flags}", b1 >> 5)
    } else {
        format!("reserved in control frames (0x{b1:02X})")
    };
    w.take(1, "VC | flags", shown, "§3");
    let word = w.be(0, 4);
    let seq = word & 0xF_FFFF;
    let shown = match kind {
        0 => format!("sequence number {seq} (0x{seq:05X})"),
        1 | 2 => format!("last good sequence number {seq} (0x{seq:05X})"),
        _ => "reserved".to_owned(),
    };
    w.take(4, "reserved (12 bits) | sequence (20 bits)", shown, "§3");
    kind
}

fn credit_body(w: &mut Walker<'_>, consumed: bool) {
    let mask = w.u8_at(0);
    w.take(1, "VC mask", format!("0b{mask:08b}"), "§4.3");
    w.reserved(3, "reserved", "§4.3");
    let what = if consumed {
        "credits consumed"
    } else {
        "credits freed"
    };
    for v in 0..8 {
        let c = w.be(0, 4) & 0xF_FFFF;
        let shown = if mask & (1 << v) != 0 {
            format!("{what}: {c}")
        } else {
            "not in the mask (reserved)".to_owned()
        };
        w.take(4, &format!("VC {v} counter"), shown, "§4.3");
    }
}

fn init_body(w: &mut Walker<'_>, echo: bool) {
    w.int(4, "nonce", "§4.5");
    if echo {
        w.int(4, "echo nonce", "§4.5");
    } else {
        w.take(4, "echo nonce", "reserved in INIT".to_owned(), "§4.5");
    }
    let vcs = w.int(1, "number of VCs", "§4.5");
    let oh = w.u8_at(0);
    w.take(1, "credit overhead", format!("{oh} bytes"), "§4.5");
    let cs = w.be(0, 2);
    w.take(2, "credit size", format!("{cs} bytes"), "§4.5");
    let mfs = w.be(0, 2);
    w.take(2, "MFS", format!("{mfs} bytes"), "§4.5");
    let caps = u16::try_from(w.be(0, 2)).unwrap_or(0);
    w.take(
        2,
        "role (15..14) | reserved (13..6) | capabilities (5..0)",
        format!(
            "role {} ({}), capabilities {}",
            caps >> 14,
            role_name(caps >> 14),
            caps_names(caps & 0x3F)
        ),
        "§4.5",
    );
    let win = w.be(0, 4) & 0xF_FFFF;
    w.take(4, "LLR window", format!("{win} frames"), "§4.5");
    for v in 0..8u64 {
        let g = w.be(0, 4) & 0xF_FFFF;
        let shown = if v < vcs {
            format!("{g} credits")
        } else {
            "VC not announced (reserved)".to_owned()
        };
        w.take(4, &format!("VC {v} grant"), shown, "§4.5");
    }
}

fn key_addr(w: &mut Walker<'_>, index: usize, section: &'static str) {
    w.int(4, &format!("txn {index}: key"), section);
    w.int(8, &format!("txn {index}: address"), section);
}

/// One transaction; returns false when its structure cannot be walked.
fn transaction(w: &mut Walker<'_>, index: usize, end: usize) -> bool {
    let start = w.at;
    if end.saturating_sub(start) < 8 {
        return false;
    }
    let op = w.u8_at(0);
    let (name, section, _) = opcode_info(op);
    let request = op < 0x80;
    w.take(
        1,
        &format!("txn {index}: opcode"),
        format!("0x{op:02X} {name}"),
        "§6.1",
    );
    let fs = w.u8_at(0);
    if request {
        let shown = if op == 0x06 {
            "reserved".to_owned()
        } else if fs & 1 != 0 {
            "SHARED".to_owned()
        } else {
            "global memory".to_owned()
        };
        w.take(1, &format!("txn {index}: flags"), shown, "§6.2");
    } else {
        w.take(
            1,
            &format!("txn {index}: status"),
            format!("0x{fs:02X} {}", status_name(fs)),
            "§6.9",
        );
    }
    w.int(2, &format!("txn {index}: tag"), "§6.1");
    let hlen = usize::from(w.u8_at(0));
    w.take(
        1,
        &format!("txn {index}: hlen"),
        format!("{hlen} words ({} bytes)", hlen * 4),
        "§6.1",
    );
    w.reserved(1, &format!("txn {index}: reserved"), "§6.1");
    let dlen = usize::try_from(w.be(0, 2)).unwrap_or(0);
    w.take(
        2,
        &format!("txn {index}: dlen"),
        format!("{dlen} bytes"),
        "§6.1",
    );
    let hdr_end = start.saturating_add(hlen * 4);
    if hlen < 2 || hdr_end > end {
        return false;
    }
    let f = |s: &str| format!("txn {index}: {s}");
    match (op, hlen) {
        (0x01, 6) => {
            key_addr(w, index, section);
            w.int(2, &f("length"), section);
            w.reserved(2, &f("reserved"), section);
        }
        (0x02..=0x05, 5) => key_addr(w, index, section),
        (0x10, 7) => {
            key_addr(w, index, section);
            w.int(4, &f("offset"), section);
            w.int(4, &f("total length"), section);
        }
        (0x11, 6) => {
            key_addr(w, index, section);
            w.int(4, &f("total length"), section);
        }
        (0x90, 4) => {
            w.int(4, &f("total length"), section);
            w.reserved(4, &f("reserved"), section);
        }
        (0x91, 4) => {
            w.int(4, &f("offset"), section);
            w.int(4, &f("total length"), section);
        }
        _ => {
            let n = hdr_end.saturating_sub(w.at);
            let b = w.peek(n);
            w.take(n, &f("header words"), hex_bytes(b), section);
        }
    }
    let data_end = hdr_end.saturating_add(dlen);
    let padded_end = hdr_end.saturating_add(dlen.div_ceil(4) * 4);
    if padded_end > end {
        return false;
    }
    let data = w.peek(dlen);
    let atomic_req = (0x03..=0x05).contains(&op);
    let atomic_resp = (0x83..=0x85).contains(&op);
    if atomic_req && op == 0x05 && dlen >= 8 && dlen % 2 == 0 {
        let half = dlen / 2;
        let (a, b) = data.split_at(half.min(data.len()));
        w.take(
            half,
            &f("compare value"),
            format!("0x{:X} (little-endian)", le(a)),
            "§1.1, §6.5",
        );
        w.take(
            half,
            &f("new value"),
            format!("0x{:X} (little-endian)", le(b)),
            "§1.1, §6.5",
        );
    } else if (atomic_req || atomic_resp) && dlen > 0 && dlen <= 8 {
        let what = match op {
            0x03 => "addend",
            0x04 => "new value",
            _ => "old value",
        };
        let section = if atomic_resp {
            "§1.1, §6.9"
        } else {
            "§1.1, §6.5"
        };
        w.take(
            dlen,
            &f(what),
            format!("0x{:X} (little-endian)", le(data)),
            section,
        );
    } else if dlen > 0 {
        w.take(
            dlen,
            &f("data"),
            format!("{dlen} bytes in memory order"),
            "§1.1",
        );
    }
    let pad = padded_end - data_end;
    if pad > 0 {
        w.take(pad, &f("data padding"), format!("{pad} zero bytes"), "§6.1");
    }
    true
}

fn data_body(w: &mut Walker<'_>, content_end: usize) {
    let body = w.at;
    w.int(2, "destination GPU", "§5");
    w.int(2, "source GPU", "§5");
    let path = w.u8_at(0);
    w.take(
        1,
        "path id",
        format!("stack {}, port {}", path >> 4, path & 0x0F),
        "§5",
    );
    let count = usize::from(w.u8_at(0));
    w.take(1, "transaction count", format!("{count}"), "§5");
    let len = usize::try_from(w.be(0, 2)).unwrap_or(0);
    w.take(2, "payload length", format!("{len} bytes"), "§5");
    if len < 8 {
        return;
    }
    let end = body.saturating_add(8).saturating_add(len).min(content_end);
    let mut index = 1;
    while w.at < end && index <= count {
        if !transaction(w, index, end) {
            break;
        }
        index += 1;
    }
}

/// Lays out `bytes` as rows.
fn dissect(bytes: &[u8]) -> Vec<Row> {
    let mut w = Walker {
        bytes,
        at: 0,
        rows: Vec::new(),
    };
    let content_end = bytes.len().saturating_sub(4);
    ethernet(&mut w);
    let kind = link_header(&mut w);
    match kind {
        0 => data_body(&mut w, content_end),
        3 => credit_body(&mut w, false),
        4 => credit_body(&mut w, true),
        5 => init_body(&mut w, false),
        6 => init_body(&mut w, true),
        _ => {}
    }
    let pad = content_end.saturating_sub(w.at);
    if pad > 0 {
        let b = w.peek(pad);
        let shown = if b.iter().all(|&x| x == 0) {
            format!("{pad} zero bytes")
        } else {
            format!("{pad} bytes, not all zero (ignored)")
        };
        w.take(pad, "padding", shown, "§2.4");
    }
    let fcs = w.peek(4);
    let body = bytes.get(..content_end).unwrap_or(&[]);
    let good = ethlink_protocol::fcs::crc32(body);
    let got = u32::try_from(le(fcs)).unwrap_or(0);
    let shown = if got == good {
        format!("CRC-32 0x{good:08X}, least significant byte first")
    } else if got == !good {
        format!("stomped: the complement of the correct CRC-32 0x{good:08X}")
    } else {
        format!("bad: the correct CRC-32 is 0x{good:08X}")
    };
    w.take(4, "FCS", shown, "§2.5");
    w.rows
}

/// Renders examples.md for the `all` vectors (those not listed in [`SHOWN`] are left out).
pub(super) fn render(all: &[Example<'_>]) -> Result<String, String> {
    let mut out = String::new();
    out.push_str(
        "# EthLink wire format: worked examples\n\n\
         Status: informative. Version 1.1, revised 2026-11-23 (the version of wire.md it \
         illustrates). Generated from the golden vectors of `conformance/vectors/` by \
         `ethlink vectors --out DIR`; do not edit by hand.\n\n\
         Each example is one golden vector, laid out byte by byte: the offsets (from the first \
         byte of the destination MAC address, `a..b` inclusive), the bytes in hexadecimal, the \
         field, its decoded value and the section of [wire.md](wire.md) that defines it. \
         Multi-byte header fields are big-endian (WIRE-1.1-1), atomic operands little-endian \
         (WIRE-1.1-3). Data longer than 16 bytes is shown by its first 16 bytes. The vectors \
         themselves, with every other case, are in `conformance/vectors/vectors.json`.\n\n\
         These are wire vectors: they show the wire format (wire.md) and what a link end and a \
         decoder do with it, not what an endpoint sends. Endpoint rules are not applied: their \
         MAC addresses are not those of endpoint.md EP-12-4, and examples 2, 3 and 30 carry \
         transactions on VCs that endpoint.md EP-3-1 does not give their class (a STORE on VC 3, \
         a FENCE on VC 7, responses on VC 0), which an endpoint receiving them discards and \
         counts (EP-3-7). A testbench that feeds them to an endpoint checks EP-3-7 with them, not \
         the transactions' effect.\n",
    );
    out.push_str("\n## Contents\n\n");
    for (i, (name, title)) in SHOWN.iter().enumerate() {
        let _ = writeln!(out, "{}. {title} (`{name}`)", i + 1);
    }
    for (i, (name, title)) in SHOWN.iter().enumerate() {
        let ex = all
            .iter()
            .find(|e| e.name == *name)
            .ok_or_else(|| format!("examples.md shows vector {name}, which does not exist"))?;
        let _ = write!(
            out,
            "\n## {}. {title}\n\nVector `{name}`, {} bytes. {}.\n\nRequirements: {}.\n",
            i + 1,
            ex.bytes.len(),
            ex.description.trim_end_matches('.'),
            ex.spec.join(", ")
        );
        if let Some((action, spec, counter)) = &ex.expect {
            let _ = write!(out, "\nA receiver must: {action} ({spec})");
            if let Some(c) = counter {
                let _ = write!(out, "; the counter is `{c}` (Table WIRE-T1)");
            }
            out.push_str(".\n");
        }
        out.push_str("\n| offset | bytes | field | value | defined in |\n|---|---|---|---|---|\n");
        for r in dissect(ex.bytes) {
            let b = ex.bytes.get(r.start..=r.end).unwrap_or(&[]);
            let offset = if r.start == r.end {
                format!("{}", r.start)
            } else {
                format!("{}..{}", r.start, r.end)
            };
            let cell = |s: &str| s.replace('|', "\\|");
            let _ = writeln!(
                out,
                "| {offset} | `{}` | {} | {} | {} |",
                hex_bytes(b),
                cell(&r.field),
                cell(&r.value),
                r.section
            );
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ethlink_protocol::{DataRepr, FrameRepr, LinkFrame, MAX_FRAME_LEN};

    /// The dissector covers every byte of every vector exactly once, and finds in every
    /// well-formed DATA vector the transactions the protocol crate's parser finds, at the same
    /// offsets.
    #[test]
    fn dissector_agrees_with_the_parser_on_every_vector() {
        let vectors = super::super::build().unwrap_or_default();
        assert!(vectors.len() > 100);
        for v in &vectors {
            let rows = dissect(&v.bytes);
            let mut next = 0;
            for r in &rows {
                assert_eq!(r.start, next, "{}: gap or overlap at {}", v.name, r.start);
                next = r.end + 1;
            }
            assert_eq!(next, v.bytes.len(), "{}: not every byte shown", v.name);
            if v.expect.is_some() {
                continue;
            }
            let Ok(frame) = FrameRepr::parse_bytes(&v.bytes, MAX_FRAME_LEN) else {
                panic!("{}: well-formed vector does not parse", v.name);
            };
            let LinkFrame::Data { payload, .. } = frame.link else {
                continue;
            };
            // The first transaction follows the Ethernet, link and network headers.
            let base = if v.bytes.get(12..14) == Some(&[0x81, 0x00][..]) {
                18 + 6 + 8
            } else {
                14 + 6 + 8
            };
            let data = DataRepr::parse(payload).unwrap_or_else(|e| panic!("{}: {e}", v.name));
            let mut at = base;
            let mut want = Vec::new();
            for t in data.txns.iter() {
                let t = t.unwrap_or_else(|e| panic!("{}: {e}", v.name));
                want.push(at);
                at += t.buffer_len();
            }
            let got: Vec<usize> = rows
                .iter()
                .filter(|r| r.field.ends_with(": opcode"))
                .map(|r| r.start)
                .collect();
            assert_eq!(got, want, "{}", v.name);
        }
    }
}

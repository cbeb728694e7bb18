//! Whole-stack checks on arbitrary bytes, shared by the property tests and the fuzz target.
//!
//! [`check_frame`] and [`check_payload`] run every parser of the crate on the input, walk every
//! transaction, and for every successful parse assert that re-emitting the representation gives
//! the input back byte for byte, once the input's reserved fields and padding are set to zero
//! (a receiver ignores them, WIRE-1.2-2; a transmitter writes zeros, WIRE-1.2-1). Any assertion
//! failure here is a finding.

#![allow(dead_code, unreachable_pub)]

use ethlink_protocol::{
    Action, DataRepr, Frame, FrameKind, FrameRepr, LINK_HEADER_LEN, LinkFrame, NETWORK_HEADER_LEN,
    Opcode, TxnRepr, Txns, emit_data_frame, fcs,
};

/// What the checks reached, so callers can tell how deep random input got.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Reached {
    /// `Frame::new_checked` accepted the bytes.
    pub frame: bool,
    /// `FrameRepr::parse` accepted the frame.
    pub repr: bool,
    /// `DataRepr::parse_at` accepted the payload.
    pub data: bool,
    /// Transactions that parsed.
    pub txns_ok: usize,
    /// Transactions that failed to parse.
    pub txns_err: usize,
}

/// Runs the frame parsers on `bytes` with a link MFS of `mfs` and checks every successful parse
/// re-emits to the same bytes (reserved fields and padding zeroed).
pub fn check_frame(bytes: &[u8], mfs: usize) -> Reached {
    let mut reached = Reached::default();
    let frame = match Frame::new_checked(bytes, mfs) {
        Ok(f) => f,
        Err(e) => {
            assert!(e.offset <= bytes.len(), "{e:?}");
            assert!(
                matches!(
                    e.action,
                    Action::DiscardDamaged
                        | Action::DiscardStomped
                        | Action::DiscardForeign
                        | Action::DiscardMalformed
                ),
                "{e:?}"
            );
            return reached;
        }
    };
    reached.frame = true;
    // Every accessor of a checked frame is safe to call.
    assert_eq!(frame.len(), bytes.len());
    assert!(!frame.is_empty());
    let _ = (frame.ethernet(), frame.link_header().seq(), frame.kind());
    assert_eq!(frame.fcs(), fcs::fcs_bytes(&bytes[..bytes.len() - 4]));
    let eth_len = frame.ethernet_header_len();
    assert_eq!(
        frame.body(),
        &bytes[eth_len + LINK_HEADER_LEN..bytes.len() - 4]
    );

    let repr = match FrameRepr::parse(&frame) {
        Ok(r) => r,
        Err(e) => {
            assert!(e.offset <= bytes.len(), "{e:?}");
            assert_eq!(e.action, Action::DiscardMalformed, "{e:?}");
            return reached;
        }
    };
    reached.repr = true;
    assert_eq!(FrameRepr::parse_bytes(bytes, mfs), Ok(repr));
    assert_eq!(repr.buffer_len(), bytes.len());

    let canon = canonical_frame(bytes, eth_len, &repr);
    let mut out = vec![0xa5; repr.buffer_len()];
    let n = repr.emit(&mut out).expect("emit of a parsed frame");
    assert_eq!(n, bytes.len());
    assert_eq!(hex(&out), hex(&canon), "frame re-emit differs");
    assert_eq!(FrameRepr::parse_bytes(&out, mfs), Ok(repr));

    if let LinkFrame::Data { header, payload } = repr.link {
        let base = eth_len + LINK_HEADER_LEN;
        let (r, txns) = check_payload(payload, base);
        reached.data = r.data;
        reached.txns_ok = r.txns_ok;
        reached.txns_err = r.txns_err;
        if let Some(txns) = txns {
            // Every transaction parsed: build the frame again from the representations alone.
            let data = DataRepr::parse(payload).expect("payload parsed before");
            let rebuilt = DataRepr {
                txns: Txns::Slice(&txns),
                ..data
            };
            assert_eq!(rebuilt, data);
            let mut out = vec![0xa5; bytes.len()];
            let n = emit_data_frame(&repr.eth, header, &rebuilt, &mut out)
                .expect("emit of a parsed DATA frame");
            assert_eq!(n, bytes.len());
            let mut want = canon.clone();
            canonical_payload(&mut want[base..base + payload.len()]);
            refresh_fcs(&mut want);
            assert_eq!(
                hex(&out),
                hex(&want),
                "DATA frame rebuilt from txns differs"
            );
        }
    }
    reached
}

/// Runs `DataRepr::parse_at` on `payload` and walks every transaction. Checks that each
/// transaction that parses re-emits to its own bytes (reserved fields zeroed), that the payload
/// re-emits to itself, and returns the transactions when every one of them parsed.
pub fn check_payload(payload: &[u8], base: usize) -> (Reached, Option<Vec<TxnRepr<'_>>>) {
    let mut reached = Reached::default();
    let data = match DataRepr::parse_at(payload, base) {
        Ok(d) => d,
        Err(e) => {
            assert_eq!(e.action, Action::DiscardMalformed, "{e:?}");
            // The network header's own rules (WIRE-5-3), a payload length below 8 (WIRE-5-7).
            assert!(matches!(e.spec, "WIRE-5-3" | "WIRE-5-7"), "{e:?}");
            assert!(e.offset >= base, "{e:?}");
            assert!(e.offset - base < NETWORK_HEADER_LEN, "{e:?}");
            return (reached, None);
        }
    };
    reached.data = true;
    let Txns::Wire { count, bytes, .. } = data.txns else {
        panic!("a parsed payload holds wire transactions");
    };
    let used = NETWORK_HEADER_LEN + bytes.len();
    assert_eq!(data.buffer_len(), used);
    assert_eq!(data.txns.count(), usize::from(count));

    // The wire form re-emits exactly.
    let mut out = vec![0xa5; used];
    assert_eq!(data.emit(&mut out), Ok(used));
    assert_eq!(out, payload[..used]);

    let mut pos = 0usize;
    let mut txns = Vec::new();
    let mut all_ok = true;
    let mut iter = data.txns.iter();
    let mut steps = 0usize;
    while let Some(item) = iter.next() {
        steps += 1;
        assert!(steps <= 256, "more items than transactions");
        match item {
            Ok(t) => {
                reached.txns_ok += 1;
                let size = txn_size(bytes, pos).expect("a parsed transaction is whole");
                assert_eq!(t.buffer_len(), size, "{t:?}");
                let mut want = bytes[pos..pos + size].to_vec();
                canonical_txn(&mut want);
                let mut out = vec![0xa5; size];
                assert_eq!(t.emit(&mut out), Ok(size), "{t:?}");
                assert_eq!(hex(&out), hex(&want), "transaction re-emit differs: {t:?}");
                pos += size;
                txns.push(t);
            }
            Err(e) => {
                reached.txns_err += 1;
                all_ok = false;
                let start = base.saturating_add(NETWORK_HEADER_LEN + pos);
                assert!(e.offset >= start, "{e:?}");
                assert!(e.offset <= base.saturating_add(used), "{e:?}");
                if e.action.continues() {
                    pos += txn_size(bytes, pos).expect("a skippable transaction is whole");
                } else {
                    assert_eq!(e.action, Action::DiscardRest, "{e:?}");
                    assert!(iter.next().is_none(), "items after DiscardRest");
                    break;
                }
            }
        }
    }
    if !all_ok {
        return (reached, None);
    }
    assert_eq!(pos, bytes.len());
    assert_eq!(txns.len(), usize::from(count));
    // The same payload emitted from the representations.
    let rebuilt = DataRepr {
        txns: Txns::Slice(&txns),
        ..data
    };
    assert_eq!(rebuilt.buffer_len(), used);
    let mut out = vec![0xa5; used];
    assert_eq!(rebuilt.emit(&mut out), Ok(used));
    let mut want = payload[..used].to_vec();
    canonical_payload(&mut want);
    assert_eq!(hex(&out), hex(&want), "payload rebuilt from txns differs");
    (reached, Some(txns))
}

/// Size of the transaction at `pos` of `bytes`, `4*hlen + roundup4(dlen)`, if it is whole.
fn txn_size(bytes: &[u8], pos: usize) -> Option<usize> {
    let p = bytes.get(pos..pos + 8)?;
    let size = usize::from(p[4]) * 4 + ((usize::from(u16::from_be_bytes([p[6], p[7]])) + 3) & !3);
    (pos + size <= bytes.len()).then_some(size)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn refresh_fcs(frame: &mut [u8]) {
    let n = frame.len() - 4;
    let f = fcs::fcs_bytes(&frame[..n]);
    frame[n..].copy_from_slice(&f);
}

/// The frame a conforming transmitter would send for `bytes`: reserved link-header and
/// control-body fields and the padding zeroed, the FCS recomputed.
fn canonical_frame(bytes: &[u8], eth_len: usize, repr: &FrameRepr<'_>) -> Vec<u8> {
    let mut c = bytes.to_vec();
    let l = eth_len;
    let kind = repr.link.kind();
    // VC and flags bits 4..2 are reserved outside DATA; the upper 12 bits of the sequence field
    // always; the whole sequence field of CF, CC, INIT and INIT_ECHO.
    if kind == FrameKind::Data {
        c[l + 1] &= 0xE3;
    } else {
        c[l + 1] = 0;
    }
    match kind {
        FrameKind::Data | FrameKind::Ack | FrameKind::Nack => c[l + 2] = 0,
        _ => c[l + 2..l + 6].fill(0),
    }
    c[l + 3] &= if matches!(kind, FrameKind::Data | FrameKind::Ack | FrameKind::Nack) {
        0x0F
    } else {
        0
    };
    let body = l + LINK_HEADER_LEN;
    let used = match repr.link {
        LinkFrame::Data { payload, .. } => payload.len(),
        _ => kind.control_body_len().unwrap_or(0),
    };
    let end = c.len() - 4;
    c[body + used..end].fill(0);
    let top12 = |c: &mut Vec<u8>, at: usize| {
        c[at] = 0;
        c[at + 1] &= 0x0F;
    };
    match kind {
        FrameKind::CreditUpdate | FrameKind::CreditResync => {
            c[body + 1..body + 4].fill(0);
            let mask = c[body];
            for v in 0..8 {
                let at = body + 4 + 4 * v;
                if mask & (1 << v) != 0 {
                    top12(&mut c, at);
                } else {
                    c[at..at + 4].fill(0);
                }
            }
        }
        FrameKind::Init | FrameKind::InitEcho => {
            if kind == FrameKind::Init {
                c[body + 4..body + 8].fill(0);
            }
            // Byte 9 is the credit overhead; of the capability field only bits 13..6 are
            // reserved.
            c[body + 14] &= 0xC0;
            c[body + 15] &= 0x3F;
            top12(&mut c, body + 16);
            let vcs = usize::from(c[body + 8]);
            for v in 0..8 {
                let at = body + 20 + 4 * v;
                if v < vcs {
                    top12(&mut c, at);
                } else {
                    c[at..at + 4].fill(0);
                }
            }
        }
        _ => {}
    }
    refresh_fcs(&mut c);
    c
}

/// Zeroes the reserved fields of every transaction of a payload (network header included) whose
/// transactions all parsed.
fn canonical_payload(p: &mut [u8]) {
    let mut pos = NETWORK_HEADER_LEN;
    while let Some(size) = txn_size(&p[NETWORK_HEADER_LEN..], pos - NETWORK_HEADER_LEN) {
        canonical_txn(&mut p[pos..pos + size]);
        pos += size;
    }
}

/// Zeroes the reserved fields of one whole transaction: prefix byte 5, reserved request flags,
/// the reserved words of LOAD and RDMA_COMPLETION, and the data padding.
fn canonical_txn(t: &mut [u8]) {
    t[5] = 0;
    let op = Opcode::from_u8(t[0]);
    match op {
        Opcode::Fence => t[1] = 0,
        Opcode::Unknown(_) => {}
        _ if op.is_request() => t[1] &= 0x01,
        _ => {}
    }
    match op {
        Opcode::Load => t[22..24].fill(0),
        Opcode::RdmaCompletion => t[12..16].fill(0),
        _ => {}
    }
    let hdr = usize::from(t[4]) * 4;
    let dlen = usize::from(u16::from_be_bytes([t[6], t[7]]));
    t[hdr + dlen..].fill(0);
}

//! The format of every frame a link end sends (wire.md §1-§4; classes.md §3 for the tagged and
//! FCS capabilities). The `LE-TX-*` cases.

use super::{flagged, quiet, send, submit, wait};
use crate::case::{Stop, check};
use crate::cases::common::*;
use crate::ctx::Ctx;
use crate::device::LinkParams;

/// Checks the format of one frame the device sent (untagged: the reference declares no TAGGED).
fn tx_frame_ok(b: &[u8], tagged_ok: bool) -> Result<(), Stop> {
    let n = b.len();
    let show = || hex::encode(b);
    check(n >= 64, "WIRE-2.4-1", "at least 64 bytes", show)?;
    check(
        ethlink_protocol::fcs::check(b),
        "WIRE-2.5-1",
        "a good FCS",
        show,
    )?;
    let tagged = b[12..14] == [0x81, 0x00];
    check(
        !tagged || tagged_ok,
        "CLS-3-2",
        "no 802.1Q tag without TAGGED",
        show,
    )?;
    if tagged {
        return Ok(());
    }
    check(
        b[12..14] == [0x88, 0xB5],
        "WIRE-2.1-1",
        "EtherType 0x88B5",
        show,
    )?;
    check(
        b[6] & 1 == 0,
        "WIRE-2.3-1",
        "a unicast source address",
        show,
    )?;
    check(b[14] >> 4 == 1, "WIRE-3-1", "version 1", show)?;
    let f = decode(b);
    check(
        f != Frm::Bad,
        "WIRE-4.5-1",
        "a frame that parses, fields in range",
        show,
    )?;
    let zero = |r: std::ops::Range<usize>| b[r].iter().all(|x| *x == 0);
    match &f {
        Frm::Data { payload, .. } => {
            check(
                b[15] & 0x1C == 0,
                "WIRE-1.2-1",
                "reserved flag bits zero",
                show,
            )?;
            check(
                b[16] == 0 && b[17] & 0xF0 == 0,
                "WIRE-1.2-1",
                "reserved sequence bits zero",
                show,
            )?;
            let end = 20 + payload.len();
            check(
                n == (end + 4).max(64),
                "WIRE-2.4-4",
                "no byte after the body but padding",
                show,
            )?;
            check(zero(end..n - 4), "WIRE-2.4-1", "zero padding", show)?;
        }
        Frm::Ack(_) | Frm::Nack(_) => {
            check(
                b[15] == 0,
                "WIRE-3-7",
                "VC and flags zero in a control frame",
                show,
            )?;
            check(
                b[16] == 0 && b[17] & 0xF0 == 0,
                "WIRE-1.2-1",
                "reserved sequence bits zero",
                show,
            )?;
            check(
                n == 64 && zero(20..60),
                "WIRE-4-1",
                "64 bytes, zero padding",
                show,
            )?;
        }
        Frm::Cf(e) | Frm::Cc(e) => {
            check(
                b[15] == 0 && zero(16..20),
                "WIRE-3-7",
                "no sequence number, VC or flags",
                show,
            )?;
            check(
                n == 64 && zero(56..60) && zero(21..24),
                "WIRE-4-1",
                "64 bytes, zero padding and reserved bytes",
                show,
            )?;
            for (v, entry) in e.iter().enumerate() {
                let at = 24 + 4 * v;
                match entry {
                    None => check(
                        zero(at..at + 4),
                        "WIRE-4.3-1",
                        "entries outside the mask zero",
                        show,
                    )?,
                    Some(_) => check(
                        b[at] == 0 && b[at + 1] & 0xF0 == 0,
                        "WIRE-1.2-1",
                        "reserved entry bits zero",
                        show,
                    )?,
                }
            }
        }
        Frm::Init(i) | Frm::InitEcho(_, i) => {
            check(
                b[15] == 0 && zero(16..20),
                "WIRE-3-7",
                "no sequence number, VC or flags",
                show,
            )?;
            check(n == 76, "WIRE-4-1", "76 bytes", show)?;
            check(
                b[34] >> 6 != 3,
                "WIRE-4.5-7",
                "not the reserved role 3",
                show,
            )?;
            check(
                b[36] == 0 && b[37] & 0xF0 == 0,
                "WIRE-1.2-1",
                "reserved window bits zero",
                show,
            )?;
            for v in 0..8 {
                let at = 40 + 4 * v;
                let ok = if v < usize::from(i.vcs) {
                    b[at] == 0 && b[at + 1] & 0xF0 == 0
                } else {
                    zero(at..at + 4)
                };
                check(
                    ok,
                    "WIRE-1.2-1",
                    "reserved grant bits and entries zero",
                    show,
                )?;
            }
        }
        Frm::Bad => {}
    }
    Ok(())
}

pub(super) fn tx_format(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            vcs: Some(2),
            cc_interval_ns: Some(2_000),
            ..quiet()
        },
    )?;
    send(ctx, &flagged(data_len(0, 0, 128, 0), 0x02))?;
    send(ctx, &data_len(0, 2, 128, 2))?;
    submit(ctx, 1, &payload(17, 1))?;
    submit(ctx, 0, &payload(300, 2))?;
    wait(ctx, 100)?;
    send(ctx, &nack(0xFFFFF))?;
    send(ctx, &cc(&[(0, 2)]))?;
    send(ctx, &ack(1))?;
    wait(ctx, 3_000)?;
    let tagged_ok = ctx.has_cap("tagged");
    let frames: Vec<Vec<u8>> = ctx
        .log()
        .iter()
        .filter(|l| l.from_dut)
        .map(|l| l.bytes.clone())
        .collect();
    let mut kinds = std::collections::BTreeSet::new();
    for b in &frames {
        tx_frame_ok(b, tagged_ok)?;
        kinds.insert(b.get(14).map_or(0xFF, |k| k & 0x0F));
    }
    if kinds.len() != 7 {
        return Err(Stop::Inconclusive(format!(
            "the exchange made the device send the kinds {kinds:?} only"
        )));
    }
    Ok(())
}

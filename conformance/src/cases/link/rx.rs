//! The receive pipeline up to link-layer acceptance (wire.md §7, Table WIRE-T1): foreign, tagged,
//! malformed, unknown and reserved fields (wire.md §1-§5), frames on a VC not agreed or before UP
//! (link.md §2, §4), and the order of the checks. The `LE-RX-*` cases.

use ethlink_protocol::{LinkFrame, Seq};

use super::{
    accepted, bad_fcs, counter_delta, delivered_tags, flagged, no_data, no_nack, quiet,
    stomped_frame, wait,
};
use crate::case::{Stop, check, check_eq};
use crate::cases::common::*;
use crate::ctx::Ctx;
use crate::device::{LinkParams, Output};

pub(super) fn foreign(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    let mut f = data_len(0, 0, 128, 0);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    refcs(&mut f);
    let sent = counted_as(ctx, &f, "rx_foreign", "WIRE-2.1-2")?;
    no_nack(&sent, "WIRE-2.1-3", "a foreign frame")?;
    // An S-tag (0x88A8) in front of the EtherType: foreign too.
    let g = data_len(0, 0, 128, 0);
    let mut q = g[..12].to_vec();
    q.extend_from_slice(&[0x88, 0xA8, 0x00, 0x07]);
    q.extend_from_slice(&g[12..g.len() - 4]);
    q.extend_from_slice(&[0; 4]);
    refcs(&mut q);
    let sent = counted_as(ctx, &q, "rx_foreign", "WIRE-2.1-2")?;
    no_nack(&sent, "WIRE-2.1-3", "a frame behind a 0x88A8 tag")?;
    accepted(ctx, &data_len(0, 0, 128, 0), 0, "WIRE-2.1-3")?;
    Ok(())
}

pub(super) fn bad_version(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    for v in [0u8, 2, 0xF] {
        let mut f = data_len(0, 0, 128, 0);
        f[14] = (v << 4) | (f[14] & 0x0F);
        refcs(&mut f);
        let sent = counted_as(ctx, &f, "rx_bad_version", "WIRE-3-2")?;
        no_nack(&sent, "WIRE-3-8", "a frame of another version")?;
    }
    accepted(ctx, &data_len(0, 0, 128, 0), 0, "WIRE-7-2")?;
    Ok(())
}

pub(super) fn unknown_kind(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    for k in [0x7u8, 0xF] {
        for base in [ack(0xFFFFF), data_len(0, 0, 128, 0)] {
            let mut f = base;
            f[14] = 0x10 | k;
            refcs(&mut f);
            let sent = counted_as(ctx, &f, "rx_unknown_kind", "WIRE-3-3")?;
            no_nack(&sent, "WIRE-3-9", "a frame of an unknown kind")?;
        }
    }
    accepted(ctx, &data_len(0, 0, 128, 0), 0, "WIRE-7-2")?;
    Ok(())
}

pub(super) fn malformed_control(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let peer = raw_init(ctx, RAW_NONCE);
    // An INIT_ECHO of the device's nonce with a credit size of 100 (not a power of two).
    let mut e = init_echo(dut.nonce, peer);
    e[30..32].copy_from_slice(&100u16.to_be_bytes());
    refcs(&mut e);
    let sent = counted_as(ctx, &e, "rx_malformed_control", "WIRE-4.5-4")?;
    no_nack(&sent, "WIRE-4-2", "a malformed control frame")?;
    let ev = link_events(&ctx.take_outputs());
    check(
        ev.is_empty(),
        "WIRE-4.5-4",
        "not UP on a malformed INIT_ECHO",
        || format!("{ev:?}"),
    )?;
    // An INIT with 9 VCs (its eight grants each in range, so that only the count is wrong),
    // and one cut short.
    let all_eight = ethlink_protocol::InitRepr {
        vcs: 8,
        credits: [512; 8],
        ..peer
    };
    let mut i = init(all_eight);
    i[28] = 9;
    refcs(&mut i);
    let sent = counted_as(ctx, &i, "rx_malformed_control", "WIRE-4.5-4")?;
    check(
        !sent.iter().any(|s| matches!(s.frame, Frm::InitEcho(..))),
        "WIRE-4.5-4",
        "no INIT_ECHO for an INIT with 9 VCs",
        || "an INIT_ECHO".into(),
    )?;
    let mut short = init(peer);
    short.truncate(64);
    refcs(&mut short);
    counted_as(ctx, &short, "rx_malformed_control", "WIRE-4-2")?;
    // An untagged INIT of 80 bytes: 4 bytes beyond its body, which needs no padding.
    let mut long = init(peer);
    let n = long.len();
    long.truncate(n - 4);
    long.extend_from_slice(&[0; 8]);
    refcs(&mut long);
    counted_as(ctx, &long, "rx_malformed_control", "WIRE-2.4-3")?;
    raw_finish(ctx, dut, peer)?;
    // An ACK and a CF with more bytes than their padding.
    for base in [ack(0xFFFFF), cf(&[(0, 0)])] {
        let mut f = base[..60].to_vec();
        f.extend_from_slice(&[0xAA; 8]);
        refcs(&mut f);
        let sent = counted_as(ctx, &f, "rx_malformed_control", "WIRE-4-2")?;
        no_nack(&sent, "WIRE-4-2", "a control frame too long")?;
    }
    // Non-zero padding is no error: the ACK is taken.
    let mut f = ack(0xFFFFF);
    f[30..60].fill(0x55);
    refcs(&mut f);
    counted_as(ctx, &f, "acks_received", "WIRE-2.4-7")?;
    Ok(())
}

pub(super) fn tagged(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let raw = raw_up(ctx, quiet())?;
    let tagged_init = emit_with(
        ethlink_protocol::EthernetRepr {
            vlan: Some(tag(0)),
            ..raw_eth()
        },
        LinkFrame::Init(raw.peer),
    );
    let sent = counted_as(ctx, &tagged_init, "inits_received", "WIRE-2.2-1")?;
    check(
        sent.iter()
            .any(|s| matches!(s.frame, Frm::InitEcho(e, _) if e == raw.peer.nonce)),
        "WIRE-2.2-1",
        "an INIT_ECHO for a tagged INIT",
        || "none".into(),
    )?;
    let p = payload(100, 7);
    let f = emit_with(
        ethlink_protocol::EthernetRepr {
            vlan: Some(tag(5)),
            ..raw_eth()
        },
        LinkFrame::Data {
            header: ethlink_protocol::DataHeader {
                vc: ethlink_protocol::Vc::new(1).unwrap_or_default(),
                flags: ethlink_protocol::DataFlags::default(),
                seq: Seq::new(0),
            },
            payload: &p,
        },
    );
    accepted(ctx, &f, 1, "WIRE-2.2-2")?;
    accepted(ctx, &data_len(0, 1, 128, 8), 0, "WIRE-2.2-1")?;
    let d = delivered(&ctx.take_outputs());
    check_eq("WIRE-2.2-2", "delivered (vc, tag)", d, vec![(1, 7), (0, 8)])
}

pub(super) fn vc_not_agreed(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            vcs: Some(2),
            ..quiet()
        },
    )?;
    let sent = counted_as(ctx, &data_len(5, 0, 128, 0), "rx_vc_not_agreed", "WIRE-7-4")?;
    no_nack(&sent, "WIRE-7-4", "DATA on a VC not agreed")?;
    let sent = counted_as(ctx, &data_len(0, 0, 128, 1), "duplicates", "LINK-4-11")?;
    check_eq(
        "LINK-4-11",
        "ACKs (sequence number 0 was consumed)",
        acks(&sent),
        vec![0],
    )?;
    accepted(ctx, &data_len(0, 1, 128, 2), 0, "LINK-4-11")?;
    check_eq("LINK-4-11", "delivered tags", delivered_tags(ctx), vec![2])?;
    // VC 2, the first VC not agreed, counted again: the counter adds each such frame.
    let sent = counted_as(ctx, &data_len(2, 2, 128, 3), "rx_vc_not_agreed", "WIRE-7-4")?;
    no_nack(&sent, "WIRE-7-4", "DATA on VC 2, the first VC not agreed")?;
    check_eq(
        "LINK-4-11",
        "delivered tags",
        delivered_tags(ctx),
        Vec::new(),
    )
}

pub(super) fn not_up(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let frames = [
        data_len(0, 0, 128, 0),
        ack(0xFFFFF),
        nack(0xFFFFF),
        cf(&[(0, 0)]),
        cc(&[(0, 0)]),
    ];
    for f in &frames {
        let sent = counted_as(ctx, f, "rx_not_up", "LINK-2-11")?;
        no_nack(&sent, "WIRE-7-5", "not UP")?;
    }
    let sent = counted_as(
        ctx,
        &bad_fcs(data_len(0, 0, 128, 0)),
        "rx_fcs_errors",
        "WIRE-2.5-6",
    )?;
    no_nack(&sent, "LINK-4-13", "a damaged frame while in INIT")?;
    let peer = raw_init(ctx, RAW_NONCE);
    raw_finish(ctx, dut, peer)?;
    accepted(ctx, &data_len(0, 0, 128, 5), 0, "WIRE-7-5")?;
    check_eq("LINK-2-10", "delivered tags", delivered_tags(ctx), vec![5])
}

pub(super) fn malformed_body(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            cf_min_credits: Some(1),
            cf_min_interval_ns: Some(100),
            ..quiet()
        },
    )?;
    let before = ctx.counters()?;
    ctx.inject(0, &data(0, 0, false, &[1, 2, 3, 4]))?;
    let mut sent = wait(ctx, 50)?;
    // 8 bytes after a well-formed payload: more than the padding.
    let p = payload(40, 1);
    let mut f = data(0, 1, false, &p);
    let n = f.len();
    f.truncate(n - 4);
    f.extend_from_slice(&[0xEE; 8]);
    f.extend_from_slice(&[0; 4]);
    refcs(&mut f);
    ctx.inject(0, &f)?;
    sent.extend(wait(ctx, 50)?);
    no_nack(
        &sent,
        "LINK-4-12",
        "malformed bodies are accepted on the link header",
    )?;
    let dup = counter_delta(ctx, &before, "duplicates")?;
    let ahead = counter_delta(ctx, &before, "discarded_after_nack")?;
    check_eq(
        "LINK-4-12",
        "(duplicates, discarded_after_nack)",
        (dup, ahead),
        (0, 0),
    )?;
    let sent = accepted(ctx, &flagged(data_len(0, 2, 128, 2), 0x02), 0, "WIRE-7-3")?;
    check_eq(
        "WIRE-7-3",
        "ACKs (frames 0 and 1 consumed)",
        acks(&sent),
        vec![2],
    )?;
    no_nack(&sent, "WIRE-7-3", "the frame after two malformed bodies")?;
    // Each frame is handed up and its credits come back: 1 + 2 + 2 credits of 64 B. The one
    // with bytes past its padding, which only the link can tell (its frame's length), is handed
    // up empty, the mark of a frame accepted but malformed; the short network header is for the
    // upper layer to find.
    let lens: Vec<usize> = ctx
        .take_outputs()
        .into_iter()
        .filter_map(|o| match o {
            Output::Delivered { payload, .. } => Some(payload.len() / 2),
            _ => None,
        })
        .collect();
    //= docs/spec/link.md#4-the-receive-side
    //= type=test
    //# LINK-4-17 A DATA frame accepted by LINK-4-12 whose body the end found malformed MUST be
    //# handed to the upper layer marked as malformed, with its credits
    check(
        lens.len() == 3 && lens[1] == 0 && lens[2] > 0,
        "LINK-4-17",
        "three frames handed to the upper layer: the second, with bytes past its padding, empty \
         (marked malformed), the third with its payload",
        || format!("payload lengths handed up: {lens:?}"),
    )?;
    let sent = [sent, wait(ctx, 500)?].concat();
    let last = cfs(&sent).last().map(|c| c.1[0]);
    check_eq(
        "LINK-4-17",
        "VC 0 entry of the last CF (the malformed frames' credits released)",
        last,
        Some(Some(5)),
    )
}

pub(super) fn reserved_ignored(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    let mut f = data_len(0, 0, 128, 3);
    f[15] |= 0x1C;
    f[16] |= 0xA0;
    refcs(&mut f);
    let sent = accepted(ctx, &f, 0, "WIRE-1.2-2")?;
    no_nack(&sent, "WIRE-1.2-2", "reserved bits set")?;
    let mut c = cf(&[(0, 0)]);
    c[21] = 0x77;
    c[20 + 8] = 0xF0;
    c[20 + 4 + 4 * 7] = 0x12;
    refcs(&mut c);
    counted_as(ctx, &c, "cf_received", "WIRE-1.2-2")?;
    // A CF with an empty mask is taken and carries nothing.
    let sent = counted_as(ctx, &cf(&[]), "cf_received", "WIRE-4.3-2")?;
    no_data(&sent, "WIRE-4.3-2", "nothing was submitted")?;
    // Any destination address is accepted.
    let mut f = data_len(0, 1, 128, 4);
    f[0..6].fill(0xFF);
    refcs(&mut f);
    accepted(ctx, &f, 0, "WIRE-2.3-2")?;
    let mut f = data_len(0, 2, 128, 5);
    f[0..6].copy_from_slice(&[0x02, 0x99, 0x99, 0x99, 0x99, 0x99]);
    refcs(&mut f);
    accepted(ctx, &f, 0, "WIRE-2.3-2")?;
    check_eq(
        "WIRE-1.2-2",
        "delivered tags",
        delivered_tags(ctx),
        vec![3, 4, 5],
    )
}

pub(super) fn pipeline_order(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            mfs: Some(1024),
            ..quiet()
        },
    )?;
    let foreign = |mut f: Vec<u8>| {
        f[12] = 0x08;
        f[13] = 0x00;
        refcs(&mut f);
        f
    };
    let version = |mut f: Vec<u8>| {
        f[14] = 0x20 | (f[14] & 0x0F);
        refcs(&mut f);
        f
    };
    let kind9 = |mut f: Vec<u8>| {
        f[14] = (f[14] & 0xF0) | 0x09;
        refcs(&mut f);
        f
    };
    let mut runt = data_len(0, 0, 128, 0);
    runt.truncate(60);
    let runt = bad_fcs(runt);
    let steps: Vec<(Vec<u8>, &str)> = vec![
        (runt, "rx_damaged"),
        (bad_fcs(data_len(0, 0, 1028, 0)), "rx_damaged"),
        (bad_fcs(foreign(data_len(0, 0, 128, 0))), "rx_fcs_errors"),
        (stomped_frame(foreign(data_len(0, 0, 128, 0))), "rx_stomped"),
        (foreign(version(data_len(0, 0, 128, 0))), "rx_foreign"),
        (version(kind9(ack(0xFFFFF))), "rx_bad_version"),
        (kind9(data_len(0, 0, 128, 0)), "rx_unknown_kind"),
    ];
    for (f, name) in steps {
        counted_as(ctx, &f, name, "WIRE-7-1")?;
    }
    Ok(())
}

//! Cases for a link end (classes.md, class Link End): bring-up, link-level retry, credit-based
//! flow control, and the receive pipeline up to link-layer acceptance (link.md, wire.md §1-§4
//! and §7). Every case drives port 0 of the device against a reference peer or raw frames.

use crate::case::{Case, Level, Stop, check};
use crate::cases::common::{Kind, before, payload, sent_since, tag_of, up_with_peer};
use crate::ctx::{Ctx, Dir, Fault};
use crate::device::{LinkParams, Output, Role};

/// The link-end cases.
pub fn cases() -> Vec<Case> {
    vec![
        Case {
            id: "LE-INIT-1",
            title: "comes UP with a conforming peer after sending INIT",
            reqs: &["LINK-2-1", "LINK-2-3"],
            level: Level::Must,
            role: Role::LinkEnd,
            needs: &[],
            run: init_comes_up,
        },
        Case {
            id: "LE-LLR-1",
            title: "a DATA frame with a bad FCS draws one NACK with the last good sequence number, \
                    and the replay is delivered once and in order",
            reqs: &["LINK-4-3", "WIRE-2.5-3", "LINK-4-1"],
            level: Level::Must,
            role: Role::LinkEnd,
            needs: &[],
            run: bad_fcs_draws_nack,
        },
    ]
}

fn init_comes_up(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    up_with_peer(ctx, LinkParams::default())?;
    let sent = sent_since(ctx, 0);
    check(
        sent.first() == Some(&Kind::Init) || sent.contains(&Kind::Init),
        "LINK-2-1",
        "INIT frames after the physical link came up",
        || format!("frames sent: {sent:?}"),
    )?;
    let up = ctx
        .take_outputs()
        .iter()
        .any(|o| matches!(o, Output::LinkUp { port: 0 }));
    check(up, "LINK-2-3", "a link-up event", || "none".into())
}

fn bad_fcs_draws_nack(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    up_with_peer(ctx, LinkParams::default())?;
    ctx.take_outputs();
    // Damage the third DATA frame the peer sends, once.
    let mut data_seen = 0u32;
    ctx.set_hook(
        0,
        Box::new(move |dir, _, bytes| {
            if dir == Dir::ToDut && bytes.len() > 20 && bytes[14] & 0x0F == 0 {
                data_seen += 1;
                if data_seen == 3 {
                    let n = bytes.len();
                    bytes[n - 1] ^= 0xFF;
                }
            }
            Fault::Pass
        }),
    )?;
    let from = ctx.log().len();
    for i in 0..6 {
        ctx.peer_submit(0, 0, &payload(256, i))?;
    }
    ctx.run_for(20_000)?;
    let nacks: Vec<u32> = sent_since(ctx, from)
        .into_iter()
        .filter_map(|k| match k {
            Kind::Nack(s) => Some(s),
            _ => None,
        })
        .collect();
    check(
        nacks == vec![before(2)],
        "LINK-4-3",
        "exactly one NACK carrying 1, the last sequence number received in order",
        || format!("NACKs carrying {nacks:?}"),
    )?;
    let tags: Vec<u32> = ctx
        .take_outputs()
        .iter()
        .filter_map(|o| match o {
            Output::Delivered { payload, .. } => hex::decode(payload).ok().and_then(|p| tag_of(&p)),
            _ => None,
        })
        .collect();
    check(
        tags == (0..6).collect::<Vec<_>>(),
        "LINK-4-1",
        "payloads 0..5 delivered once each, in order",
        || format!("delivered {tags:?}"),
    )
}

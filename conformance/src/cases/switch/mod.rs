//! Cases for a switch (classes.md, class Switch): forwarding and the choice among equal ports,
//! per-path order, losslessness and per-VC isolation, latency, frame lifetime, the frames a
//! switch cannot forward, its counters, its reset and its identity (switch.md, wire.md §5).
//!
//! Every case attaches a reference peer link end to the ports it uses; the peers play the
//! endpoints, so a case writes DATA payloads with the destination, source, path id and VC it
//! chooses and reads what the peers receive. A payload carries one RDMA_WRITE segment whose
//! first four data bytes are a tag unique in the case. GPU `100 + p` sits behind port `p` in
//! the tables the cases write, unless a case says otherwise.
//!
//! This module holds the catalogue's list of switch cases, in catalogue order, and the helpers
//! the files of several areas use; each case's function is in the file of its area:
//!
//! - `SWT-FWD-*`, `SWT-TBL-*`, `SWT-PIN-*` in `forwarding.rs`: switch.md §2 forwarding (§2.1-§2.4)
//! - `SWT-ORD-*`, `SWT-ARB-*` in `order.rs`: switch.md §3 order, §5 arbitration
//! - `SWT-BUF-*`, `SWT-VC-*`, `SWT-AGE-*` in `buffers.rs`: switch.md §4 buffers and losslessness,
//!   §4.1 frame lifetime
//! - `SWT-LAT-*`, `SWT-FCS-*` in `latency.rs`: switch.md §6 latency, store-and-forward
//! - `SWT-CUT-*` in `cut.rs`: switch.md §6 the cut-through profile
//! - `SWT-DISC-*` in `discards.rs`: switch.md §7 frames a switch cannot forward, §8 their counters
//! - `SWT-INIT-*`, `SWT-RST-*`, `SWT-TAG-*` in `identity.rs`: switch.md §9 reset and identity

mod buffers;
mod cut;
mod discards;
mod forwarding;
mod identity;
mod latency;
mod order;

use std::collections::BTreeMap;

use ethlink_link::Config as LinkConfig;
use ethlink_protocol::{
    DataRepr, FrameRepr, GpuId, LinkFrame, MemTarget, PathId, Space, TxnRepr, Txns,
};

use crate::case::{Case, Level, Stop};
use crate::cases::common::{peer_config, setup};
use crate::ctx::{Ctx, PeerEvent};
use crate::device::{LinkParams, Role, Route, Setup};

/// The switch cases.
pub fn cases() -> Vec<Case> {
    let c = |id, title, reqs, run| Case {
        id,
        title,
        reqs,
        level: Level::Must,
        role: Role::Switch,
        needs: &[],
        run,
    };
    // A case of the cut-through profile (switch.md \u{a7}6): for a switch that declares
    // `cut_through`.
    let cut = |id, title, reqs, run| Case {
        needs: &["cut_through"],
        ..c(id, title, reqs, run)
    };
    vec![
        c(
            "SWT-INIT-1",
            "every port comes UP announcing role Switch, exactly the declared capabilities, at \
             least 4 VCs and the MAC address 02:01:s1:s0:p1:p0",
            &[
                "CLS-2-1", "CLS-2-2", "SW-9-5", "SW-9-4", "SW-5-4", "SW-6-7", "SW-6-5",
            ],
            identity::init_announces_switch,
        ),
        c(
            "SWT-RST-1",
            "after a reset no port sends before its physical link is up, and every counter of \
             Tables SW-T3 and SW-T4 is kept per port and VC and reads zero",
            &["SW-9-3", "SW-9-2", "SW-8-1"],
            identity::reset_state,
        ),
        c(
            "SWT-RST-2",
            "a reset drops every frame held: none of them leaves after it",
            &["SW-9-1", "SW-9-2"],
            identity::reset_drops_held_frames,
        ),
        c(
            "SWT-FWD-1",
            "every DATA frame leaves by the port its table lists, with the network header and the \
             transactions unchanged, counted in rx/tx frames and bytes",
            &["SW-2-1", "SW-2-2", "WIRE-5-9", "WIRE-5-4", "SW-8-2"],
            forwarding::forwards_unchanged,
        ),
        c(
            "SWT-FWD-2",
            "among equal ports the egress is the one of Table SW-T2 for each vector, and every \
             frame of one path leaves by that one port",
            &["SW-2-4", "WIRE-5-4", "SW-2-1"],
            forwarding::equal_ports_by_vectors,
        ),
        c(
            "SWT-FWD-3",
            "with the second listed port down, the egress is the one of Table SW-T2's last column \
             and the down port is never chosen",
            &["SW-2-3", "SW-2-4"],
            forwarding::equal_ports_one_down,
        ),
        c(
            "SWT-FWD-4",
            "an entry in groups of preference [8 | 9, 10, 11] sends every path by its first group \
             while that port is UP, and by Table SW-T3 over the second group when it is down, \
             also with a port of the second group down",
            &["SW-2-9", "SW-2-3", "SW-2-4"],
            forwarding::grouped_entry,
        ),
        c(
            "SWT-TBL-4",
            "the table refuses an entry whose group sizes include 0 or do not add up to its \
             ports, and takes one whose sizes do",
            &["SW-2-10", "SW-2-9"],
            forwarding::group_sizes_checked,
        ),
        c(
            "SWT-TBL-1",
            "the table takes entries for GPUs 0 and 0xFFFE, one listing every port and an empty \
             one, and refuses an entry with a port twice, a port the switch lacks or more than \
             64 ports",
            &["SW-2-5", "SW-2-6", "SW-7-2", "SW-2-4"],
            forwarding::table_entries,
        ),
        c(
            "SWT-FCS-1",
            "frames received with a bad FCS are never forwarded as they are; their replays are \
             forwarded once, in order; no stomped frame from a switch without CUT_THROUGH",
            &["SW-6-3", "SW-6-4", "SW-6-6", "SW-6-2", "CLS-3-3", "SW-8-5"],
            latency::bad_fcs_not_forwarded,
        ),
        c(
            "SWT-PIN-1",
            "a table write that moves a busy path to another port keeps the path on its port \
             until it is idle, so that no later frame overtakes an earlier one; once idle, the \
             path takes the new entry",
            &["SW-2-12", "SW-2-7"],
            forwarding::pinned_across_a_table_write,
        ),
        c(
            "SWT-ORD-1",
            "under incast, the frames of each input leave the egress in the order they were \
             received, each once, and the egress takes the inputs round-robin",
            &["SW-3-1", "SW-5-1"],
            order::incast_order,
        ),
        c(
            "SWT-BUF-1",
            "incast of seven inputs onto one egress loses nothing: every frame delivered once, no \
             discard, counters and held bytes exact, the held bytes within the input buffer",
            &["SW-4-4", "SW-4-1", "SW-4-5", "SW-7-6", "SW-8-2"],
            buffers::incast_lossless,
        ),
        c(
            "SWT-BUF-2",
            "frames for a stalled egress do not hold back later frames of the same input and VC \
             for another egress; the stalled ones leave in order once it drains",
            &["SW-4-3", "SW-3-1", "SW-4-4"],
            buffers::no_head_of_line_blocking,
        ),
        c(
            "SWT-BUF-3",
            "while its egress is stalled, a switch holds no more frames of an input than the \
             input's credits cover (plus at most 64 handed to the egress link), and loses none",
            &["SW-4-1", "SW-4-4", "SW-4-5", "SW-3-1"],
            buffers::credits_kept_until_handed_on,
        ),
        c(
            "SWT-BUF-4",
            "a frame the switch sends that is lost on the wire with nothing behind it is \
             replayed by the egress port's link when its replay timer expires: the peer gets \
             every frame once, in order",
            &["LINK-3-11", "LINK-3-6"],
            buffers::lost_tail_replayed,
        ),
        c(
            "SWT-VC-1",
            "a VC whose egress stalls does not block another VC on the same input and egress",
            &["SW-4-3", "SW-4-4"],
            buffers::vc_isolation,
        ),
        c(
            "SWT-ARB-1",
            "an egress offers the queued frames of the response VCs before those of the request \
             VCs",
            &["SW-5-2"],
            order::responses_first,
        ),
        c(
            "SWT-ARB-2",
            "egress port 0 offers its queued responses on VC 2 and VC 3 before its requests on \
             VC 0 and VC 1 while responses pass to another egress on the same VCs",
            &["SW-5-2", "SW-4-4"],
            order::responses_first_beside_traffic,
        ),
        c(
            "SWT-LAT-1",
            "no frame leaves before the default latency of Table SW-T1 (250 ns) has passed since \
             its first bit arrived",
            &["SW-6-1"],
            latency::latency_respected,
        ),
        c(
            "SWT-AGE-1",
            "a frame held longer than max_residence is discarded and counted in discard_aged \
             within twice max_residence, never earlier, never sent late; its credits return",
            &["SW-4-6", "SW-4-7", "SW-4-8", "SW-7-4", "SW-8-2"],
            buffers::aging,
        ),
        c(
            "SWT-AGE-2",
            "frames arriving one every 500 ns for a stalled egress each age on their own time \
             (discarded after max_residence, by twice it), however many arrive behind them; \
             their credits come back on the wire",
            &["SW-4-7", "SW-4-8", "SW-4-6", "SW-7-4"],
            buffers::aging_in_queue,
        ),
        c(
            "SWT-DISC-1",
            "DATA frames with a malformed network header are discarded, counted in \
             discard_malformed, draw no NACK, and their credits return",
            &[
                "SW-7-1", "WIRE-5-3", "WIRE-5-6", "WIRE-5-7", "SW-7-4", "SW-7-6",
            ],
            discards::malformed_discarded,
        ),
        c(
            "SWT-DISC-2",
            "frames for an unlisted GPU or one whose only port is down are discarded and counted \
             in discard_unroutable, and their credits return",
            &["SW-7-2", "SW-7-4", "SW-7-6"],
            discards::unroutable_discarded,
        ),
        c(
            "SWT-DISC-3",
            "frames waiting for a port whose link goes down are discarded and counted in \
             discard_port_down, their credits return, and the counters survive the link going \
             down",
            &["SW-7-3", "SW-7-4", "SW-7-6", "SW-8-4"],
            discards::port_down_discarded,
        ),
        c(
            "SWT-DISC-6",
            "frames held in an input port's buffer when its peer restarts are forwarded once \
             each when their egress frees; the port gives no INIT_ECHO, and its link no UP, \
             until they have left, and nothing is discarded",
            &["SW-7-7", "LINK-2-18", "LINK-6-4", "SW-4-4"],
            discards::input_restart_forwards_held_frames,
        ),
        c(
            "SWT-DISC-5",
            "frames of unknown fate in the replay buffer of an egress link that goes down are \
             counted in discard_port_down, as well as in tx_frames",
            &["SW-7-3", "SW-8-2"],
            discards::unknown_fate_counted,
        ),
        c(
            "SWT-DISC-4",
            "frames the egress link cannot carry (beyond its MFS, or on a VC it did not agree) \
             are discarded and counted in discard_egress_refused of the egress port and VC",
            &["SW-7-5", "SW-7-6"],
            discards::egress_refused,
        ),
        c(
            "SWT-TBL-2",
            "an entry written while the switch runs takes effect for the frames that arrive after \
             it: a new port, then no port (unroutable)",
            &["SW-2-7", "SW-7-2"],
            forwarding::table_written_while_running,
        ),
        c(
            "SWT-TBL-3",
            "a frame keeps the egress port chosen when it arrived although its entry changes \
             while it waits out a configured latency of 5 us",
            &["SW-2-8", "SW-2-7"],
            forwarding::egress_kept_on_arrival,
        ),
        c(
            "SWT-LAT-2",
            "with a configured latency of 3 us, no frame begins to leave before 3 us after its \
             first bit arrived",
            &["SW-6-1"],
            latency::configured_latency_respected,
        ),
        c(
            "SWT-TAG-1",
            "a port that sends an 802.1Q-tagged frame announced TAGGED in its INIT and INIT_ECHO \
             (a switch cannot be asked to tag, so this checks whatever it does by itself)",
            &["SW-9-6", "CLS-3-2"],
            identity::tagged_ports_announce,
        ),
        cut(
            "SWT-CUT-1",
            "cut-through: a frame begun on its header whose FCS turns out bad ends stomped, its \
             sequence number goes to the next frame, a replay on the egress link waits for the \
             frame in flight, and stomped copies are counted apart",
            &[
                "SW-6-1",
                "SW-6-2",
                "SW-6-11",
                "SW-6-12",
                "SW-8-5",
                "LINK-3-12",
                "SW-6-4",
            ],
            cut::stomps_damaged,
        ),
        cut(
            "SWT-CUT-2",
            "cut-through: frames beyond a gap and duplicates are not begun on their headers, and \
             every frame is forwarded once",
            &["SW-6-8", "SW-6-11", "SW-6-1", "SW-6-12"],
            cut::no_cut_unless_accepted,
        ),
        cut(
            "SWT-CUT-5",
            "cut-through: a frame whose sequence number is beyond the expected one in its high \
             bits only (a gap of 2^16) is not begun on its header, and every frame is forwarded \
             once",
            &["SW-6-8", "SW-6-11", "WIRE-3-4"],
            cut::no_cut_on_a_high_bit_gap,
        ),
        cut(
            "SWT-CUT-6",
            "cut-through: frames queued behind a stalled egress are counted in tx_cut only when \
             their copy began before their last byte arrived, and every frame is forwarded once",
            &["SW-8-2", "SW-6-1", "SW-4-4"],
            cut::cut_counted_when_begun_early,
        ),
        cut(
            "SWT-CUT-7",
            "cut-through: a frame with another EtherType, its link header that of the expected \
             DATA frame, is not begun on its header (its link does not accept it), and the \
             replay is forwarded once",
            &["SW-6-8", "SW-6-11"],
            cut::no_cut_of_a_foreign_frame,
        ),
        cut(
            "SWT-CUT-8",
            "cut-through: DATA frames with a malformed network header, given on their headers, \
             are discarded and counted in discard_malformed, never forwarded, and their credits \
             return",
            &["SW-7-1", "SW-7-4", "SW-7-6"],
            discards::malformed_discarded_headers_ahead,
        ),
        cut(
            "SWT-CUT-3",
            "cut-through: a frame whose end is longer or shorter than its network header declares \
             ends stomped and is discarded as malformed",
            &["SW-6-9", "SW-6-11", "SW-7-1", "SW-8-5"],
            cut::stomps_wrong_length,
        ),
        cut(
            "SWT-CUT-4",
            "cut-through: a frame whose last byte arrives more than max_residence after its first \
             ends stomped, and is forwarded whole once it has arrived",
            &["SW-6-10", "SW-6-11", "LINK-3-12", "SW-8-5"],
            cut::stomps_stalled,
        ),
    ]
}

/// The GPU behind port `p` in the tables the cases write.
fn gpu_of(p: u16) -> u16 {
    100 + p
}

/// One entry per port: GPU `100 + p` behind port `p`.
fn one_per_port(ports: u16) -> Vec<Route> {
    (0..ports).map(|p| Route::new(gpu_of(p), vec![p])).collect()
}

/// A DATA payload from `src` to `dst` on path `path`: one RDMA_WRITE segment of `len` bytes
/// (at least 4) whose first four bytes are `tag`.
fn data(dst: u16, src: u16, path: u8, tag: u32, len: usize) -> Vec<u8> {
    let len = len.max(4);
    let mut bytes: Vec<u8> = (0..len).map(|i| (i as u8) ^ (tag as u8)).collect();
    bytes[..4].copy_from_slice(&tag.to_be_bytes());
    let txn = [TxnRepr::RdmaWrite {
        tag: tag as u16,
        target: MemTarget {
            space: Space::Global,
            key: 1,
            addr: 0x1000,
        },
        offset: 0,
        total: len as u32,
        data: &bytes,
    }];
    let repr = DataRepr {
        dst: GpuId::new(dst).unwrap_or(GpuId::new(0).expect("GPU 0")),
        src: GpuId::new(src).unwrap_or(GpuId::new(0).expect("GPU 0")),
        path: PathId(path),
        txns: Txns::Slice(&txn),
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    let n = repr.emit(&mut buf).unwrap_or(0);
    buf.truncate(n);
    buf
}

/// Offset of the tag in a payload [`data`] built: network header 8, RDMA_WRITE header 28.
const TAG_AT: usize = 36;

/// The tag of a payload [`data`] built.
fn tag(p: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(
        p.get(TAG_AT..TAG_AT + 4)?.try_into().ok()?,
    ))
}

/// Tags of the payloads the peer of `port` received so far, in order, with their VCs (taken).
fn delivered(ctx: &mut Ctx<'_>, port: u16) -> Result<Vec<(u8, u32)>, Stop> {
    Ok(ctx
        .peer_delivered(port)?
        .iter()
        .map(|(vc, p)| (*vc, tag(p).unwrap_or(u32::MAX)))
        .collect())
}

/// The DATA frames that crossed `port` in direction `from_dut`, first copy of each tag only:
/// tag -> (time, VC, payload).
fn data_log(ctx: &Ctx<'_>, port: u16, from_dut: bool) -> BTreeMap<u32, (u64, u8, Vec<u8>)> {
    let mut m = BTreeMap::new();
    for l in ctx.log() {
        if l.port != port || l.from_dut != from_dut {
            continue;
        }
        let Ok(r) = FrameRepr::parse_bytes(&l.bytes, 9216) else {
            continue;
        };
        if let LinkFrame::Data { header, payload } = r.link
            && let Some(t) = tag(payload)
        {
            m.entry(t)
                .or_insert((l.time_ns, header.vc.value(), payload.to_vec()));
        }
    }
    m
}

/// Setup with `routes`, `link` and `max_residence_ns`.
fn sw_setup(routes: Vec<Route>, link: LinkParams, max_res: Option<u64>) -> Setup {
    Setup {
        routes,
        max_residence_ns: max_res,
        ..setup(link)
    }
}

/// Fails as unsupported when the device has fewer than `n` ports.
fn need_ports(ctx: &Ctx<'_>, n: u16) -> Result<(), Stop> {
    if ctx.desc.ports < n {
        return Err(Stop::Unsupported(format!(
            "the case needs {n} ports, the device has {}",
            ctx.desc.ports
        )));
    }
    Ok(())
}

/// Resets the device with `s`, attaches a reference peer to each of `ports` (its configuration
/// from [`peer_config`], changed by `tweak`) and runs until every link is UP (200 us).
fn up_ports(
    ctx: &mut Ctx<'_>,
    s: &Setup,
    ports: &[u16],
    tweak: impl Fn(u16, LinkConfig) -> LinkConfig,
) -> Result<(), Stop> {
    ctx.reset(s)?;
    bring_up(ctx, ports, tweak)
}

/// Attaches a reference peer to each of `ports` after a reset (with its configuration changed
/// by `tweak`) and runs until every link is UP; fails with LINK-2-3 when one never comes up.
fn bring_up(
    ctx: &mut Ctx<'_>,
    ports: &[u16],
    tweak: impl Fn(u16, LinkConfig) -> LinkConfig,
) -> Result<(), Stop> {
    for &p in ports {
        let cfg = tweak(p, peer_config(ctx, p));
        ctx.attach(p, cfg)?;
    }
    let all = ports.to_vec();
    let up = ctx.run_until(200_000, |c| {
        all.iter()
            .all(|&p| c.peer(p).map(|x| x.link.is_up()).unwrap_or(false))
    })?;
    if !up {
        let down: Vec<u16> = ports
            .iter()
            .copied()
            .filter(|&p| !ctx.peer(p).map(|x| x.link.is_up()).unwrap_or(false))
            .collect();
        return Err(Stop::fail(
            "LINK-2-3",
            "every port's link comes UP with a conforming peer within 200 us",
            format!("ports {down:?} did not"),
        ));
    }
    ctx.run_for(3_000)?;
    for &p in ports {
        ctx.peer_events(p)?;
    }
    ctx.take_outputs();
    Ok(())
}

/// Every port of the device, UP with default peers, with `s`.
fn up_all(ctx: &mut Ctx<'_>, s: &Setup) -> Result<(), Stop> {
    let ports: Vec<u16> = (0..ctx.desc.ports).collect();
    up_ports(ctx, s, &ports, |_, c| c)
}

/// A counter of port `p` and VC `v` (`port<p>.<name>.vc<v>`).
fn ctr(ctx: &mut Ctx<'_>, p: u16, name: &str, v: u8) -> Result<u64, Stop> {
    ctx.counter(&format!("port{p}.{name}.vc{v}"))
}

/// The discard counters of Table SW-T3.
const DISCARDS: [&str; 5] = [
    "discard_malformed",
    "discard_unroutable",
    "discard_aged",
    "discard_port_down",
    "discard_egress_refused",
];

/// Every counter of Table SW-T3 and SW-T4 with a value other than zero, as `name=value`, over
/// `names`.
fn nonzero(ctx: &mut Ctx<'_>, names: &[&str]) -> Result<Vec<String>, Stop> {
    let c = ctx.counters()?;
    Ok(c.iter()
        .filter(|(k, v)| {
            **v != 0
                && k.starts_with("port")
                && names
                    .iter()
                    .any(|n| k.split('.').nth(1).is_some_and(|x| x == *n))
        })
        .map(|(k, v)| format!("{k}={v}"))
        .collect())
}

/// Runs until the peer of `port` has received `n` payloads in all (kept, not taken), or `ns`;
/// looks every microsecond.
fn run_until_delivered(ctx: &mut Ctx<'_>, port: u16, n: usize, ns: u64) -> Result<bool, Stop> {
    let end = ctx.now() + ns;
    loop {
        let got = ctx
            .peer(port)?
            .events
            .iter()
            .filter(|e| matches!(e, PeerEvent::Delivered { .. }))
            .count();
        if got >= n {
            return Ok(true);
        }
        if ctx.now() >= end {
            return Ok(false);
        }
        ctx.run_for(1_000.min(end - ctx.now()))?;
    }
}

/// Seven inputs (or every port but the last) each send `per` frames of `len` bytes to the last
/// port; returns the inputs and the egress.
fn incast(ctx: &mut Ctx<'_>, per: u32, len: usize) -> Result<(Vec<u16>, u16), Stop> {
    need_ports(ctx, 3)?;
    let n = ctx.desc.ports.min(8);
    let e = n - 1;
    up_all(
        ctx,
        &sw_setup(one_per_port(ctx.desc.ports), LinkParams::default(), None),
    )?;
    let inputs: Vec<u16> = (0..e).collect();
    for k in 0..per {
        for &i in &inputs {
            let t = u32::from(i) << 16 | k;
            ctx.peer_submit(i, 0, &data(gpu_of(e), gpu_of(i), 0x01, t, len))?;
        }
    }
    let total = inputs.len() * per as usize;
    run_until_delivered(ctx, e, total, 400_000)?;
    ctx.run_for(5_000)?;
    Ok((inputs, e))
}

/// A peer configuration with a receive buffer of 40 credits (2560 B at 64 B credits) and an MFS
/// of 2048 B, so that it fills fast when it holds what it receives.
/// The credits port `port`'s peer holds for VC `vc` now: those the switch granted and has not
/// had used, or has returned on the wire.
fn peer_credits(ctx: &mut Ctx<'_>, port: u16, vc: u8) -> Result<u32, Stop> {
    let v = ethlink_protocol::Vc::new(vc).ok_or_else(|| Stop::Harness(format!("no VC {vc}")))?;
    Ok(ctx.peer(port)?.link.tx_credits_available(v))
}

/// Fails SW-7-4 unless port `port`'s peer again holds the `granted` credits of VC `vc` it held
/// before the case sent anything: the credits of `whose` frames came back on the wire, in CF
/// frames, not only in the switch's counters.
fn credits_back(
    ctx: &mut Ctx<'_>,
    port: u16,
    vc: u8,
    granted: u32,
    whose: &str,
) -> Result<(), Stop> {
    ctx.run_for(2_000)?;
    let now = peer_credits(ctx, port, vc)?;
    //= docs/spec/switch.md#7-frames-a-switch-cannot-forward
    //= type=test
    //# SW-7-4 Every discarded frame's credits MUST be returned at once.
    crate::case::check(
        now == granted,
        "SW-7-4",
        format!(
            "port {port}'s peer holds its {granted} credits of VC {vc} again: {whose} credits \
             returned on the wire"
        ),
        || format!("it holds {now}"),
    )
}

fn small_peer(c: LinkConfig) -> LinkConfig {
    let vcs = c.vcs;
    LinkConfig {
        mfs: 2048,
        credit_size: 64,
        ..c.with_uniform_credits(vcs, 40)
    }
}

/// Resets the switch with a configured `latency_ns`, answering unsupported when it refuses.
fn with_latency(ctx: &mut Ctx<'_>, routes: Vec<Route>, ns: u64, ports: &[u16]) -> Result<(), Stop> {
    let s = Setup {
        latency_ns: Some(ns),
        ..sw_setup(routes, LinkParams::default(), None)
    };
    up_ports(ctx, &s, ports, |_, c| c)
}

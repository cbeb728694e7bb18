//! Cases for a switch (classes.md, class Switch): forwarding and the choice among equal ports,
//! per-path order, losslessness and per-VC isolation, latency, frame lifetime, the frames a
//! switch cannot forward, its counters, its reset and its identity (switch.md, wire.md §5).
//!
//! Every case attaches a reference peer link end to the ports it uses; the peers play the
//! endpoints, so a case writes DATA payloads with the destination, source, path id and VC it
//! chooses and reads what the peers receive. A payload carries one RDMA_WRITE segment whose
//! first four data bytes are a tag unique in the case. GPU `100 + p` sits behind port `p` in
//! the tables the cases write, unless a case says otherwise.

use std::collections::BTreeMap;

use ethlink_link::Config as LinkConfig;
use ethlink_protocol::{
    DataRepr, FrameRepr, GpuId, LinkFrame, MemTarget, PathId, Space, TxnRepr, Txns, fcs,
};

use crate::case::{Case, Level, Stop, check, check_eq};
use crate::cases::common::{Kind, kind_of, peer_config, setup};
use crate::ctx::{Ctx, Dir, Fault, PeerEvent};
use crate::device::{LinkParams, Request, Role, Route, Setup};

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
            init_announces_switch,
        ),
        c(
            "SWT-RST-1",
            "after a reset no port sends before its physical link is up, and every counter of \
             Tables SW-T3 and SW-T4 is kept per port and VC and reads zero",
            &["SW-9-3", "SW-9-2", "SW-8-1"],
            reset_state,
        ),
        c(
            "SWT-RST-2",
            "a reset drops every frame held: none of them leaves after it",
            &["SW-9-1", "SW-9-2"],
            reset_drops_held_frames,
        ),
        c(
            "SWT-FWD-1",
            "every DATA frame leaves by the port its table lists, with the network header and the \
             transactions unchanged, counted in rx/tx frames and bytes",
            &["SW-2-1", "SW-2-2", "WIRE-5-9", "WIRE-5-4", "SW-8-2"],
            forwards_unchanged,
        ),
        c(
            "SWT-FWD-2",
            "among equal ports the egress is the one of Table SW-T2 for each vector, and every \
             frame of one path leaves by that one port",
            &["SW-2-4", "WIRE-5-4", "SW-2-1"],
            equal_ports_by_vectors,
        ),
        c(
            "SWT-FWD-3",
            "with the second listed port down, the egress is the one of Table SW-T2's last column \
             and the down port is never chosen",
            &["SW-2-3", "SW-2-4"],
            equal_ports_one_down,
        ),
        c(
            "SWT-FWD-4",
            "an entry in groups of preference [8 | 9, 10, 11] sends every path by its first group \
             while that port is UP, and by Table SW-T3 over the second group when it is down, \
             also with a port of the second group down",
            &["SW-2-9", "SW-2-3", "SW-2-4"],
            grouped_entry,
        ),
        c(
            "SWT-TBL-4",
            "the table refuses an entry whose group sizes include 0 or do not add up to its \
             ports, and takes one whose sizes do",
            &["SW-2-10", "SW-2-9"],
            group_sizes_checked,
        ),
        c(
            "SWT-TBL-1",
            "the table takes entries for GPUs 0 and 0xFFFE, one listing every port and an empty \
             one, and refuses an entry with a port twice, a port the switch lacks or more than \
             64 ports",
            &["SW-2-5", "SW-2-6", "SW-7-2", "SW-2-4"],
            table_entries,
        ),
        c(
            "SWT-FCS-1",
            "frames received with a bad FCS are never forwarded as they are; their replays are \
             forwarded once, in order; no stomped frame from a switch without CUT_THROUGH",
            &["SW-6-3", "SW-6-4", "SW-6-6", "SW-6-2", "CLS-3-3", "SW-8-5"],
            bad_fcs_not_forwarded,
        ),
        c(
            "SWT-PIN-1",
            "a table write that moves a busy path to another port keeps the path on its port \
             until it is idle, so that no later frame overtakes an earlier one; once idle, the \
             path takes the new entry",
            &["SW-2-12", "SW-2-7"],
            pinned_across_a_table_write,
        ),
        c(
            "SWT-ORD-1",
            "under incast, the frames of each input leave the egress in the order they were \
             received, each once, and the egress takes the inputs round-robin",
            &["SW-3-1", "SW-5-1"],
            incast_order,
        ),
        c(
            "SWT-BUF-1",
            "incast of seven inputs onto one egress loses nothing: every frame delivered once, no \
             discard, counters and held bytes exact, the held bytes within the input buffer",
            &["SW-4-4", "SW-4-1", "SW-4-5", "SW-7-6", "SW-8-2"],
            incast_lossless,
        ),
        c(
            "SWT-BUF-2",
            "frames for a stalled egress do not hold back later frames of the same input and VC \
             for another egress; the stalled ones leave in order once it drains",
            &["SW-4-3", "SW-3-1", "SW-4-4"],
            no_head_of_line_blocking,
        ),
        c(
            "SWT-BUF-3",
            "while its egress is stalled, a switch holds no more frames of an input than the \
             input's credits cover (plus at most 64 handed to the egress link), and loses none",
            &["SW-4-1", "SW-4-4", "SW-4-5", "SW-3-1"],
            credits_kept_until_handed_on,
        ),
        c(
            "SWT-VC-1",
            "a VC whose egress stalls does not block another VC on the same input and egress",
            &["SW-4-3", "SW-4-4"],
            vc_isolation,
        ),
        c(
            "SWT-ARB-1",
            "an egress offers the queued frames of the response VCs before those of the request \
             VCs",
            &["SW-5-2"],
            responses_first,
        ),
        c(
            "SWT-LAT-1",
            "no frame leaves before the default latency of Table SW-T1 (250 ns) has passed since \
             its first bit arrived",
            &["SW-6-1"],
            latency_respected,
        ),
        c(
            "SWT-AGE-1",
            "a frame held longer than max_residence is discarded and counted in discard_aged \
             within twice max_residence, never earlier, never sent late; its credits return",
            &["SW-4-6", "SW-4-7", "SW-4-8", "SW-7-4", "SW-8-2"],
            aging,
        ),
        c(
            "SWT-DISC-1",
            "DATA frames with a malformed network header are discarded, counted in \
             discard_malformed, draw no NACK, and their credits return",
            &[
                "SW-7-1", "WIRE-5-3", "WIRE-5-6", "WIRE-5-7", "SW-7-4", "SW-7-6",
            ],
            malformed_discarded,
        ),
        c(
            "SWT-DISC-2",
            "frames for an unlisted GPU or one whose only port is down are discarded and counted \
             in discard_unroutable, and their credits return",
            &["SW-7-2", "SW-7-4", "SW-7-6"],
            unroutable_discarded,
        ),
        c(
            "SWT-DISC-3",
            "frames waiting for a port whose link goes down are discarded and counted in \
             discard_port_down, their credits return, and the counters survive the link going \
             down",
            &["SW-7-3", "SW-7-4", "SW-7-6", "SW-8-4"],
            port_down_discarded,
        ),
        c(
            "SWT-DISC-6",
            "frames held in an input port's buffer when its peer restarts are forwarded once \
             each when their egress frees; the port gives no INIT_ECHO, and its link no UP, \
             until they have left, and nothing is discarded",
            &["SW-7-7", "LINK-2-18", "LINK-6-4", "SW-4-4"],
            input_restart_forwards_held_frames,
        ),
        c(
            "SWT-DISC-5",
            "frames of unknown fate in the replay buffer of an egress link that goes down are \
             counted in discard_port_down, as well as in tx_frames",
            &["SW-7-3", "SW-8-2"],
            unknown_fate_counted,
        ),
        c(
            "SWT-DISC-4",
            "frames the egress link cannot carry (beyond its MFS, or on a VC it did not agree) \
             are discarded and counted in discard_egress_refused of the egress port and VC",
            &["SW-7-5", "SW-7-6"],
            egress_refused,
        ),
        c(
            "SWT-TBL-2",
            "an entry written while the switch runs takes effect for the frames that arrive after \
             it: a new port, then no port (unroutable)",
            &["SW-2-7", "SW-7-2"],
            table_written_while_running,
        ),
        c(
            "SWT-TBL-3",
            "a frame keeps the egress port chosen when it arrived although its entry changes \
             while it waits out a configured latency of 5 us",
            &["SW-2-8", "SW-2-7"],
            egress_kept_on_arrival,
        ),
        c(
            "SWT-LAT-2",
            "with a configured latency of 3 us, no frame begins to leave before 3 us after its \
             first bit arrived",
            &["SW-6-1"],
            configured_latency_respected,
        ),
        c(
            "SWT-TAG-1",
            "a port that sends an 802.1Q-tagged frame announced TAGGED in its INIT and INIT_ECHO \
             (a switch cannot be asked to tag, so this checks whatever it does by itself)",
            &["SW-9-6", "CLS-3-2"],
            tagged_ports_announce,
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

mod cut;

// ---------------------------------------------------------------------------------------------
// Building and reading payloads.

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

/// The DATA frames of two ports, first copy of each tag, read from the log as it grows.
struct Seen {
    pos: usize,
    into: u16,
    out: u16,
    /// Tag -> arrival time on port `into`.
    ins: BTreeMap<u32, u64>,
    /// Tag -> first transmission on port `out`.
    outs: BTreeMap<u32, u64>,
}

impl Seen {
    fn new(into: u16, out: u16) -> Self {
        Seen {
            pos: 0,
            into,
            out,
            ins: BTreeMap::new(),
            outs: BTreeMap::new(),
        }
    }

    fn update(&mut self, ctx: &Ctx<'_>) {
        for l in &ctx.log()[self.pos..] {
            let m = if l.from_dut && l.port == self.out {
                &mut self.outs
            } else if !l.from_dut && l.port == self.into {
                &mut self.ins
            } else {
                continue;
            };
            if let Ok(r) = FrameRepr::parse_bytes(&l.bytes, 9216)
                && let LinkFrame::Data { payload, .. } = r.link
                && let Some(t) = tag(payload)
            {
                m.entry(t).or_insert(l.time_ns);
            }
        }
        self.pos = ctx.log().len();
    }
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

// ---------------------------------------------------------------------------------------------
// The choice among equal ports (switch.md §2.1).

/// `r`, with a device's refusal of the setup (Unsupported) turned into a failure of `req`: for a
/// setup the requirement says a switch MUST take.
fn refused_fails<T>(
    r: Result<Result<T, String>, Stop>,
    req: &'static str,
    expected: &str,
) -> Result<T, Stop> {
    r?.map_err(|why| Stop::fail(req, expected, format!("the device refused: {why}")))
}

/// The mix of switch.md §2.1, written from the spec.
fn mix(src: u16, dst: u16, path: u8, vc: u8) -> u64 {
    let key = u64::from(src) << 32 | u64::from(dst) << 16 | u64::from(path) << 8 | u64::from(vc);
    let mut z = key.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Table SW-T2: src, dst, path, vc, h, egress with all UP, egress with port 9 down (entry
/// `[8, 9, 10, 11]`).
const SW_T2: [(u16, u16, u8, u8, u64, u16, u16); 8] = [
    (0, 1, 0x00, 0, 0x09aa_b36c_fda2_d1b3, 11, 11),
    (1, 0, 0x00, 0, 0xc42c_5a1a_a382_0138, 8, 8),
    (5, 9, 0x23, 2, 0xc925_021a_7797_74d2, 10, 10),
    (1023, 0, 0x10, 0, 0x8d97_b7d4_240f_6431, 9, 11),
    (0, 1023, 0x31, 1, 0x20a7_dafc_1959_fb46, 10, 10),
    (0x1234, 0x0567, 0xff, 7, 0x49a5_f12d_ea14_af6a, 10, 10),
    (12, 34, 0x05, 3, 0xd7ac_3726_3e23_d193, 11, 11),
    (100, 200, 0x12, 0, 0x3417_ebb4_facf_f109, 9, 8),
];

/// The four ports that play the table's `[8, 9, 10, 11]`: those very ports when the device has
/// 12, else its last four (port 0 sends).
fn vector_ports(ports: u16) -> [u16; 4] {
    let base = if ports >= 12 { 8 } else { ports - 4 };
    [base, base + 1, base + 2, base + 3]
}

fn vector_setup(ctx: &Ctx<'_>) -> (Setup, [u16; 4]) {
    let list = vector_ports(ctx.desc.ports);
    let mut routes: Vec<Route> = Vec::new();
    for v in SW_T2 {
        if !routes.iter().any(|r| r.dst == v.1) {
            routes.push(Route::new(v.1, list.to_vec()));
        }
    }
    let link = LinkParams {
        vcs: Some(8),
        ..LinkParams::default()
    };
    (sw_setup(routes, link, None), list)
}

/// Table SW-T3: src, dst, path, vc of Table SW-T2's rows, and the egress from the entry
/// `[8 | 9, 10, 11]` (group sizes 1 and 3) with all UP, port 8 down, ports 8 and 10 down.
const SW_T3: [(u16, u16, u8, u8, u16, u16, u16); 8] = [
    (0, 1, 0x00, 0, 8, 9, 9),
    (1, 0, 0x00, 0, 8, 10, 9),
    (5, 9, 0x23, 2, 8, 10, 9),
    (1023, 0, 0x10, 0, 8, 11, 11),
    (0, 1023, 0x31, 1, 8, 9, 9),
    (0x1234, 0x0567, 0xff, 7, 8, 9, 9),
    (12, 34, 0x05, 3, 8, 9, 9),
    (100, 200, 0x12, 0, 8, 9, 9),
];

/// Sends four frames of every vector the links carry from port 0 and checks the port each left
/// by against column `col` of Table SW-T2 (0: all UP, 1: the second listed port down).
fn run_vectors(ctx: &mut Ctx<'_>, list: [u16; 4], col: usize) -> Result<(), Stop> {
    let want = |k: usize| if col == 0 { SW_T2[k].5 } else { SW_T2[k].6 };
    let what = if col == 0 {
        "Table SW-T2, all UP"
    } else {
        "Table SW-T2, the second listed port down"
    };
    send_vectors(ctx, list, "SW-2-4", what, &want)
}

/// Sends four frames of every vector of Table SW-T2 the links carry from port 0 and checks that
/// each leaves once, by the port of `list` that stands for the table's port `want(k)` (8..=11).
fn send_vectors(
    ctx: &mut Ctx<'_>,
    list: [u16; 4],
    rule: &'static str,
    what: &str,
    want: &dyn Fn(usize) -> u16,
) -> Result<(), Stop> {
    let vcs = ctx.params.vcs.unwrap_or(4);
    for (k, v) in SW_T2.iter().enumerate() {
        let h = mix(v.0, v.1, v.2, v.3);
        if h != v.4 {
            return Err(Stop::Harness(format!(
                "the suite's mix gives {h:#x} for vector {k}, Table SW-T2 {:#x}",
                v.4
            )));
        }
    }
    let used: Vec<usize> = (0..SW_T2.len()).filter(|&k| SW_T2[k].3 < vcs).collect();
    if used.len() < 4 {
        return Err(Stop::Unsupported(format!(
            "only {} vectors fit the {vcs} VCs in force",
            used.len()
        )));
    }
    for round in 0..4u32 {
        for &k in &used {
            let v = SW_T2[k];
            let t = (k as u32) << 8 | round;
            ctx.peer_submit(0, v.3, &data(v.1, v.0, v.2, t, 64))?;
        }
    }
    ctx.run_for(30_000)?;
    let mut seen: BTreeMap<u32, Vec<u16>> = BTreeMap::new();
    for p in 0..ctx.desc.ports {
        if ctx.peer(p).is_err() {
            continue;
        }
        for (_, t) in delivered(ctx, p)? {
            seen.entry(t).or_default().push(p);
        }
    }
    for &k in &used {
        let v = SW_T2[k];
        let want = list[usize::from(want(k) - 8)];
        for round in 0..4u32 {
            let t = (k as u32) << 8 | round;
            let got = seen.get(&t).cloned().unwrap_or_default();
            check(
                got == vec![want],
                rule,
                format!(
                    "vector {k} (src {}, dst {}, path {:#x}, vc {}) by {what}, frame {round}: \
                     leaves once, by port {want}",
                    v.0, v.1, v.2, v.3
                ),
                || format!("received on ports {got:?}"),
            )?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The cases.

fn init_announces_switch(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let n = ctx.desc.ports;
    up_all(ctx, &sw_setup(one_per_port(n), LinkParams::default(), None))?;
    let mut declared: Vec<String> = ctx.desc.caps.clone();
    declared.sort();
    let mut switch_no: Option<[u8; 2]> = None;
    for p in 0..n {
        let mut inits = 0;
        let mut echoes = 0;
        for l in ctx.log().iter().filter(|l| l.from_dut && l.port == p) {
            let Ok(r) = FrameRepr::parse_bytes(&l.bytes, 9216) else {
                continue;
            };
            let init = match r.link {
                LinkFrame::Init(i) => {
                    inits += 1;
                    i
                }
                LinkFrame::InitEcho { init, .. } => {
                    echoes += 1;
                    init
                }
                _ => continue,
            };
            check_eq(
                "CLS-2-1",
                &format!("role announced on port {p}"),
                init.role,
                ethlink_protocol::Role::Switch,
            )?;
            check_eq(
                "SW-9-5",
                &format!("role announced on port {p}"),
                init.role,
                ethlink_protocol::Role::Switch,
            )?;
            check(
                init.vcs >= 4,
                "SW-5-4",
                format!("port {p} announces at least 4 VCs"),
                || format!("it announces {}", init.vcs),
            )?;
            let mut caps: Vec<String> = init.caps.names().map(str::to_owned).collect();
            caps.sort();
            let cuts = caps.iter().any(|c| c == "cut_through");
            if ctx.has_cap("cut_through") {
                check(
                    cuts,
                    "SW-6-7",
                    format!(
                        "port {p}, of a switch that declares cut_through, announces CUT_THROUGH"
                    ),
                    || format!("it announces {caps:?}"),
                )?;
            } else {
                check(
                    !cuts,
                    "SW-6-5",
                    format!(
                        "port {p}, of a switch that does not declare cut_through, does not \
                         announce CUT_THROUGH"
                    ),
                    || format!("it announces {caps:?}"),
                )?;
            }
            check_eq(
                "CLS-2-2",
                &format!("capabilities announced on port {p}"),
                caps,
                declared.clone(),
            )?;
        }
        check(
            inits > 0 && echoes > 0,
            "CLS-2-1",
            format!("port {p} sends INIT and INIT_ECHO while it comes up"),
            || format!("{inits} INIT, {echoes} INIT_ECHO"),
        )?;
        for l in ctx.log().iter().filter(|l| l.from_dut && l.port == p) {
            let src: [u8; 6] = l
                .bytes
                .get(6..12)
                .and_then(|s| s.try_into().ok())
                .unwrap_or_default();
            let s = [src[2], src[3]];
            let want_s = *switch_no.get_or_insert(s);
            let [p1, p0] = p.to_be_bytes();
            let want = [0x02, 0x01, want_s[0], want_s[1], p1, p0];
            check(
                src == want,
                "SW-9-4",
                format!("source MAC of every frame on port {p}: {want:02x?}"),
                || format!("{src:02x?}"),
            )?;
        }
    }
    Ok(())
}

fn reset_state(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let n = ctx.desc.ports;
    ctx.reset(&sw_setup(one_per_port(n), LinkParams::default(), None))?;
    ctx.run_for(20_000)?;
    let sent: Vec<(u16, u64)> = ctx
        .log()
        .iter()
        .filter(|l| l.from_dut)
        .map(|l| (l.port, l.time_ns))
        .collect();
    check(
        sent.is_empty(),
        "SW-9-3",
        "no frame on any port during 20 us after a reset, every physical link down",
        || format!("frames sent (port, time): {sent:?}"),
    )?;
    let vcs = ctx.params.vcs.unwrap_or(4);
    let c = ctx.counters()?;
    const ALL: [&str; 12] = [
        "rx_frames",
        "rx_bytes",
        "tx_frames",
        "tx_bytes",
        "discard_malformed",
        "discard_unroutable",
        "discard_aged",
        "discard_port_down",
        "discard_egress_refused",
        "held_bytes",
        "held_max_bytes",
        "residence_max_ns",
    ];
    for p in 0..n {
        for v in 0..vcs {
            for name in ALL {
                let key = format!("port{p}.{name}.vc{v}");
                match c.get(&key) {
                    None => {
                        return Err(Stop::fail(
                            "SW-8-1",
                            format!("a counter named {key}"),
                            "none",
                        ));
                    }
                    Some(&x) => check_eq("SW-9-2", &key, x, 0)?,
                }
            }
        }
    }
    // One port up: it alone initialises.
    ctx.request(&Request::PhysicalUp { port: 0 })?;
    ctx.run_for(5_000)?;
    let sent: Vec<(u16, Option<Kind>)> = ctx
        .log()
        .iter()
        .filter(|l| l.from_dut)
        .map(|l| (l.port, kind_of(&l.bytes)))
        .collect();
    check(
        !sent.is_empty() && sent.iter().all(|s| *s == (0, Some(Kind::Init))),
        "SW-9-3",
        "INIT frames on port 0 only, once its physical link is up",
        || format!("frames sent (port, kind): {sent:?}"),
    )
}

fn reset_drops_held_frames(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 3)?;
    let n = ctx.desc.ports;
    // Grants of 32 KiB: 60 frames of 1 KB fill port 1's peer and leave the rest in the switch.
    let link = LinkParams {
        rx_credits: Some(512),
        ..LinkParams::default()
    };
    let s = sw_setup(one_per_port(n), link, None);
    up_ports(ctx, &s, &[0, 1], |_, c| c)?;
    // Port 1's peer keeps everything: the switch holds frames for it.
    ctx.peer_hold(1, true)?;
    for k in 0..60 {
        ctx.peer_submit(0, 0, &data(gpu_of(1), gpu_of(0), 0, k, 1000))?;
    }
    ctx.run_for(10_000)?;
    let before = delivered(ctx, 1)?.len();
    if before >= 60 {
        return Err(Stop::Inconclusive(
            "the peer's buffer held every frame: none was left in the switch".into(),
        ));
    }
    // Reset and bring port 1 up with a fresh peer: nothing of before may leave.
    up_ports(ctx, &s, &[1], |_, c| c)?;
    let c = nonzero(
        ctx,
        &[
            "rx_frames",
            "tx_frames",
            "held_bytes",
            "held_max_bytes",
            "residence_max_ns",
            "discard_port_down",
        ],
    )?;
    check(
        c.is_empty(),
        "SW-9-2",
        "every counter zero after the reset",
        || format!("{c:?}"),
    )?;
    ctx.run_for(20_000)?;
    let after = delivered(ctx, 1)?;
    check(
        after.is_empty(),
        "SW-9-1",
        "no frame held before the reset leaves after it",
        || format!("port 1 delivered tags {after:?}"),
    )
}

fn forwards_unchanged(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 3)?;
    let n = ctx.desc.ports;
    up_all(ctx, &sw_setup(one_per_port(n), LinkParams::default(), None))?;
    let vcs = ctx.params.vcs.unwrap_or(1);
    // From every port: 6 frames to each of the next two ports, on VCs 0 and 1 (or 0 alone).
    let mut sent: BTreeMap<u16, Vec<(u8, Vec<u8>)>> = BTreeMap::new();
    let mut rx: BTreeMap<(u16, u8), (u64, u64)> = BTreeMap::new();
    for k in 0..6u32 {
        for p in 0..n {
            for d in 1..=2u16 {
                let e = (p + d) % n;
                let vc = (d as u8 - 1).min(vcs - 1);
                let t = u32::from(p) << 16 | u32::from(d) << 8 | k;
                let len = 40 + 100 * k as usize + 8 * usize::from(p);
                let path = (p as u8) << 4 | d as u8;
                let pl = data(gpu_of(e), gpu_of(p), path, t, len);
                ctx.peer_submit(p, vc, &pl)?;
                let r = rx.entry((p, vc)).or_default();
                r.0 += 1;
                r.1 += pl.len() as u64;
                sent.entry(e).or_default().push((vc, pl));
            }
        }
    }
    ctx.run_for(40_000)?;
    let mut tx: BTreeMap<(u16, u8), (u64, u64)> = BTreeMap::new();
    for e in 0..n {
        let got = ctx.peer_delivered(e)?;
        let want = sent.remove(&e).unwrap_or_default();
        for (vc, pl) in &want {
            let t = tx.entry((e, *vc)).or_default();
            t.0 += 1;
            t.1 += pl.len() as u64;
        }
        // Every payload arrives once, byte for byte, and nowhere else.
        let mut got_sorted = got.clone();
        got_sorted.sort();
        let mut want_sorted = want.clone();
        want_sorted.sort();
        if got_sorted != want_sorted {
            let tags = |v: &[(u8, Vec<u8>)]| -> Vec<u32> {
                v.iter().map(|(_, p)| tag(p).unwrap_or(u32::MAX)).collect()
            };
            let missing: Vec<&(u8, Vec<u8>)> = want_sorted
                .iter()
                .filter(|w| !got_sorted.contains(w))
                .collect();
            // A payload that arrived with its tag but other bytes was changed on the way.
            for m in &missing {
                if let Some(g) = got.iter().find(|g| tag(&g.1) == tag(&m.1)) {
                    let req = if g.1.get(..8) != m.1.get(..8) {
                        "SW-2-2"
                    } else {
                        "WIRE-5-9"
                    };
                    return Err(Stop::fail(
                        req,
                        format!(
                            "payload of tag {:#x} forwarded unchanged: {}",
                            tag(&m.1).unwrap_or(0),
                            hex::encode(&m.1)
                        ),
                        format!("received on port {e}: {}", hex::encode(&g.1)),
                    ));
                }
            }
            return Err(Stop::fail(
                "SW-2-1",
                format!("port {e} receives the tags {:?}", tags(&want_sorted)),
                format!("it received {:?}", tags(&got_sorted)),
            ));
        }
    }
    for ((p, vc), (f, b)) in rx {
        check_eq(
            "SW-8-2",
            &format!("port{p}.rx_frames.vc{vc}"),
            ctr(ctx, p, "rx_frames", vc)?,
            f,
        )?;
        check_eq(
            "SW-8-2",
            &format!("port{p}.rx_bytes.vc{vc}"),
            ctr(ctx, p, "rx_bytes", vc)?,
            b,
        )?;
    }
    for ((e, vc), (f, b)) in tx {
        check_eq(
            "SW-8-2",
            &format!("port{e}.tx_frames.vc{vc}"),
            ctr(ctx, e, "tx_frames", vc)?,
            f,
        )?;
        check_eq(
            "SW-8-2",
            &format!("port{e}.tx_bytes.vc{vc}"),
            ctr(ctx, e, "tx_bytes", vc)?,
            b,
        )?;
    }
    let d = nonzero(ctx, &DISCARDS)?;
    check(d.is_empty(), "SW-8-2", "no discard counted", || {
        format!("{d:?}")
    })?;
    let h = nonzero(ctx, &["held_bytes"])?;
    check(
        h.is_empty(),
        "SW-4-5",
        "held_bytes zero once every frame left",
        || format!("{h:?}"),
    )
}

fn equal_ports_by_vectors(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 5)?;
    let (s, list) = vector_setup(ctx);
    let mut ports = vec![0u16];
    ports.extend(list);
    up_ports(ctx, &s, &ports, |_, c| c)?;
    run_vectors(ctx, list, 0)?;
    // 48 more paths to GPU 1 (sources, path ids and VCs spread), three frames each, by the
    // function of switch.md §2.1.
    let vcs = ctx.params.vcs.unwrap_or(1);
    let paths: Vec<(u16, u8, u8)> = (0..48u16)
        .map(|k| {
            (
                k * 37 % 1000,
                (k * 29 % 256) as u8,
                (k % u16::from(vcs)) as u8,
            )
        })
        .collect();
    for round in 0..3u32 {
        for (k, &(src, path, vc)) in paths.iter().enumerate() {
            let t = 0x10000 | (k as u32) << 8 | round;
            ctx.peer_submit(0, vc, &data(1, src, path, t, 64))?;
        }
    }
    ctx.run_for(30_000)?;
    let mut seen: BTreeMap<u32, Vec<u16>> = BTreeMap::new();
    for &p in &list {
        for (_, t) in delivered(ctx, p)? {
            seen.entry(t).or_default().push(p);
        }
    }
    let mut used = std::collections::BTreeSet::new();
    for (k, &(src, path, vc)) in paths.iter().enumerate() {
        let want = list[(mix(src, 1, path, vc) % 4) as usize];
        used.insert(want);
        for round in 0..3u32 {
            let t = 0x10000 | (k as u32) << 8 | round;
            let got = seen.get(&t).cloned().unwrap_or_default();
            check(
                got == vec![want],
                "SW-2-4",
                format!(
                    "path (src {src}, dst 1, path {path:#x}, vc {vc}), frame {round}: leaves once, \
                     by port {want}"
                ),
                || format!("received on ports {got:?}"),
            )?;
        }
    }
    if used.len() < 4 {
        return Err(Stop::Harness(format!(
            "the 48 paths use only ports {used:?}"
        )));
    }
    Ok(())
}

fn equal_ports_one_down(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 5)?;
    let (s, list) = vector_setup(ctx);
    let mut ports = vec![0u16];
    ports.extend(list);
    up_ports(ctx, &s, &ports, |_, c| c)?;
    ctx.request(&Request::PhysicalDown { port: list[1] })?;
    ctx.run_for(2_000)?;
    ctx.take_outputs();
    run_vectors(ctx, list, 1)?;
    let got = delivered(ctx, list[1])?;
    check(
        got.is_empty(),
        "SW-2-3",
        format!("nothing sent toward port {}, which is down", list[1]),
        || format!("its peer received {got:?}"),
    )
}

/// The setup of Table SW-T3: every destination of the vectors has the entry `[8 | 9, 10, 11]`
/// over the ports of `vector_ports`.
fn grouped_setup(ctx: &Ctx<'_>) -> (Setup, [u16; 4]) {
    let (mut s, list) = vector_setup(ctx);
    for r in &mut s.routes {
        r.groups = vec![1, 3];
    }
    (s, list)
}

fn grouped_entry(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 5)?;
    let (s, list) = grouped_setup(ctx);
    for (k, v) in SW_T3.iter().enumerate() {
        let t2 = SW_T2[k];
        if (v.0, v.1, v.2, v.3) != (t2.0, t2.1, t2.2, t2.3) {
            return Err(Stop::Harness(format!(
                "row {k} of Table SW-T3 is not the path of Table SW-T2's"
            )));
        }
    }
    let mut ports = vec![0u16];
    ports.extend(list);
    refused_fails(
        ctx.try_reset(&s),
        "SW-2-9",
        "the table takes entries of two groups of preference",
    )?;
    bring_up(ctx, &ports, |_, c| c)?;
    send_vectors(ctx, list, "SW-2-9", "Table SW-T3, all UP", &|k| SW_T3[k].4)?;
    for (down, col, what) in [
        (list[0], 5, "Table SW-T3, port 8 down"),
        (list[2], 6, "Table SW-T3, ports 8 and 10 down"),
    ] {
        ctx.request(&Request::PhysicalDown { port: down })?;
        ctx.run_for(2_000)?;
        ctx.take_outputs();
        for p in list {
            ctx.peer_events(p)?;
        }
        send_vectors(ctx, list, "SW-2-9", what, &|k| {
            if col == 5 { SW_T3[k].5 } else { SW_T3[k].6 }
        })?;
    }
    Ok(())
}

fn group_sizes_checked(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 4)?;
    let n = ctx.desc.ports;
    for (what, groups) in [
        ("sizes 1 and 1 for 3 ports", vec![1u16, 1]),
        ("sizes 2 and 2 for 3 ports", vec![2, 2]),
        ("sizes 0 and 3", vec![0, 3]),
        ("sizes 3 and 0", vec![3, 0]),
    ] {
        let mut routes = one_per_port(n);
        routes.push(Route {
            groups,
            ..Route::new(50, vec![1, 2, 3])
        });
        match ctx.try_reset(&sw_setup(routes, LinkParams::default(), None))? {
            Err(_) => {}
            Ok(_) => {
                return Err(Stop::fail(
                    "SW-2-10",
                    format!("the table refused: an entry of 3 ports with group {what}"),
                    "the device took it",
                ));
            }
        }
    }
    // Taken: [1 | 2, 3]; the frame for GPU 50 leaves by port 1, the first group.
    let mut routes = one_per_port(n);
    routes.push(Route {
        groups: vec![1, 2],
        ..Route::new(50, vec![1, 2, 3])
    });
    let s = sw_setup(routes, LinkParams::default(), None);
    refused_fails(
        ctx.try_reset(&s),
        "SW-2-9",
        "the table takes the entry [1 | 2, 3] for GPU 50",
    )?;
    up_all(ctx, &s)?;
    for t in 0..8u32 {
        ctx.peer_submit(0, 0, &data(50, gpu_of(0), t as u8, t, 64))?;
    }
    ctx.run_for(10_000)?;
    let seen = received(ctx, &(1..n).collect::<Vec<_>>())?;
    let want: Vec<(u16, u32)> = (0..8).map(|t| (1, t)).collect();
    check(
        seen == want,
        "SW-2-9",
        "the frames of 8 paths to GPU 50, entry [1 | 2, 3], all leave by port 1",
        || format!("(port, tag) received: {seen:?}"),
    )
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

fn incast_order(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let per = 80u32;
    let (inputs, e) = incast(ctx, per, 1000)?;
    let got = delivered(ctx, e)?;
    for &i in &inputs {
        let mine: Vec<u32> = got
            .iter()
            .map(|x| x.1)
            .filter(|t| t >> 16 == u32::from(i))
            .map(|t| t & 0xFFFF)
            .collect();
        check(
            mine == (0..per).collect::<Vec<_>>(),
            "SW-3-1",
            format!("the {per} frames of input {i} leave port {e} once each, in order"),
            || {
                format!(
                    "{} frames, tags {:?}",
                    mine.len(),
                    &mine[..mine.len().min(40)]
                )
            },
        )?;
    }
    // In the middle of the burst every input is backlogged: the egress cycles through them.
    let srcs: Vec<u16> = got.iter().map(|x| (x.1 >> 16) as u16).collect();
    let m = inputs.len();
    let (lo, hi) = (srcs.len() / 3, 2 * srcs.len() / 3);
    for k in lo..hi {
        let want = inputs[(inputs.iter().position(|&x| x == srcs[k]).unwrap_or(0) + 1) % m];
        check(
            srcs[k + 1] == want,
            "SW-5-1",
            format!(
                "with every input backlogged, frame {} on port {e} comes from input {want}, the \
                 one after input {}",
                k + 1,
                srcs[k]
            ),
            || {
                format!(
                    "it came from input {}; inputs of frames {lo}..{hi}: {:?}",
                    srcs[k + 1],
                    &srcs[lo..hi]
                )
            },
        )?;
    }
    Ok(())
}

fn incast_lossless(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let per = 100u32;
    let len = 1000;
    let (inputs, e) = incast(ctx, per, len)?;
    let got = delivered(ctx, e)?;
    let total = inputs.len() as u64 * u64::from(per);
    let mut tags: Vec<u32> = got.iter().map(|x| x.1).collect();
    tags.sort_unstable();
    let mut want: Vec<u32> = inputs
        .iter()
        .flat_map(|&i| (0..per).map(move |k| u32::from(i) << 16 | k))
        .collect();
    want.sort_unstable();
    if tags != want {
        let missing: Vec<u32> = want.iter().copied().filter(|t| !tags.contains(t)).collect();
        return Err(Stop::fail(
            "SW-4-4",
            format!("each of the {total} frames delivered once on port {e}"),
            format!(
                "{} delivered; missing tags {:x?}",
                tags.len(),
                &missing[..missing.len().min(20)]
            ),
        ));
    }
    let plen = data(0, 0, 0, 0, len).len() as u64;
    let buffer = u64::from(ctx.params.rx_credits.unwrap_or(512))
        * u64::from(ctx.params.credit_size.unwrap_or(64));
    for &i in &inputs {
        check_eq(
            "SW-8-2",
            &format!("port{i}.rx_frames.vc0"),
            ctr(ctx, i, "rx_frames", 0)?,
            u64::from(per),
        )?;
        check_eq(
            "SW-8-2",
            &format!("port{i}.rx_bytes.vc0"),
            ctr(ctx, i, "rx_bytes", 0)?,
            u64::from(per) * plen,
        )?;
        check_eq(
            "SW-4-5",
            &format!("port{i}.held_bytes.vc0"),
            ctr(ctx, i, "held_bytes", 0)?,
            0,
        )?;
        let max = ctr(ctx, i, "held_max_bytes", 0)?;
        check(
            max <= buffer && max >= 2 * plen,
            "SW-4-5",
            format!(
                "port{i}.held_max_bytes.vc0 between two frames ({}) and the input buffer \
                 ({buffer}): the input waited for the egress",
                2 * plen
            ),
            || format!("{max}"),
        )?;
    }
    check_eq(
        "SW-8-2",
        &format!("port{e}.tx_frames.vc0"),
        ctr(ctx, e, "tx_frames", 0)?,
        total,
    )?;
    check_eq(
        "SW-8-2",
        &format!("port{e}.tx_bytes.vc0"),
        ctr(ctx, e, "tx_bytes", 0)?,
        total * plen,
    )?;
    let d = nonzero(ctx, &DISCARDS)?;
    check(d.is_empty(), "SW-4-4", "no frame discarded", || {
        format!("{d:?}")
    })
}

/// A peer configuration with a receive buffer of 40 credits (2560 B at 64 B credits) and an MFS
/// of 2048 B, so that it fills fast when it holds what it receives.
fn small_peer(c: LinkConfig) -> LinkConfig {
    let vcs = c.vcs;
    LinkConfig {
        mfs: 2048,
        credit_size: 64,
        ..c.with_uniform_credits(vcs, 40)
    }
}

fn no_head_of_line_blocking(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 3)?;
    let n = ctx.desc.ports;
    let s = sw_setup(one_per_port(n), LinkParams::default(), None);
    up_ports(
        ctx,
        &s,
        &[0, 1, 2],
        |p, c| if p == 1 { small_peer(c) } else { c },
    )?;
    ctx.peer_hold(1, true)?;
    // Interleaved on one input and VC: 40 frames for the stalled port 1, 40 for port 2.
    for k in 0..40u32 {
        ctx.peer_submit(0, 0, &data(gpu_of(1), gpu_of(0), 0, 0x100 | k, 256))?;
        ctx.peer_submit(0, 0, &data(gpu_of(2), gpu_of(0), 0, 0x200 | k, 256))?;
    }
    ctx.run_for(20_000)?;
    let to1 = delivered(ctx, 1)?;
    let to2 = delivered(ctx, 2)?;
    if to1.len() >= 40 {
        return Err(Stop::Inconclusive(
            "port 1 never stalled: its peer took every frame".into(),
        ));
    }
    let tags2: Vec<u32> = to2.iter().map(|x| x.1).collect();
    let mut sorted2 = tags2.clone();
    sorted2.sort_unstable();
    check(
        sorted2 == (0..40).map(|k| 0x200 | k).collect::<Vec<_>>(),
        "SW-4-3",
        format!(
            "all 40 frames for port 2 leave while port 1 is stalled ({} of its 40 frames out)",
            to1.len()
        ),
        || format!("port 2 received {tags2:x?}"),
    )?;
    check(
        tags2 == (0..40).map(|k| 0x200 | k).collect::<Vec<_>>(),
        "SW-3-1",
        "the frames for port 2 leave in the order they were received",
        || format!("port 2 received {tags2:x?}"),
    )?;
    ctx.peer_hold(1, false)?;
    ctx.run_for(20_000)?;
    let mut tags1: Vec<u32> = to1.iter().map(|x| x.1).collect();
    tags1.extend(delivered(ctx, 1)?.iter().map(|x| x.1));
    check(
        tags1 == (0..40).map(|k| 0x100 | k).collect::<Vec<_>>(),
        "SW-3-1",
        "once port 1 drains, its 40 frames leave once each, in order",
        || format!("port 1 received {tags1:x?}"),
    )?;
    let d = nonzero(ctx, &DISCARDS)?;
    check(d.is_empty(), "SW-4-4", "no frame discarded", || {
        format!("{d:?}")
    })
}

fn vc_isolation(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 2)?;
    let n = ctx.desc.ports;
    let s = sw_setup(one_per_port(n), LinkParams::default(), None);
    up_ports(
        ctx,
        &s,
        &[0, 1],
        |p, c| if p == 1 { small_peer(c) } else { c },
    )?;
    if ctx.params.vcs.unwrap_or(1) < 2 {
        return Err(Stop::Unsupported("the case needs two VCs".into()));
    }
    ctx.peer_hold(1, true)?;
    // VC 0 toward port 1 stalls: 40 frames of 256 B, far more than the peer's 2.5 KiB.
    for k in 0..40u32 {
        ctx.peer_submit(0, 0, &data(gpu_of(1), gpu_of(0), 0, k, 256))?;
    }
    ctx.run_for(10_000)?;
    let vc0 = delivered(ctx, 1)?;
    if vc0.len() >= 40 {
        return Err(Stop::Inconclusive("VC 0 never stalled".into()));
    }
    // VC 1 on the same input and egress: 4 frames fit the peer's VC 1 buffer.
    for k in 0..4u32 {
        ctx.peer_submit(0, 1, &data(gpu_of(1), gpu_of(0), 0, 0x100 | k, 256))?;
    }
    ctx.run_for(10_000)?;
    let got = delivered(ctx, 1)?;
    let mut sorted = got.clone();
    sorted.sort_unstable();
    check(
        sorted == (0..4).map(|k| (1, 0x100 | k)).collect::<Vec<_>>(),
        "SW-4-3",
        format!(
            "the 4 frames of VC 1 leave while VC 0 is stalled ({} of its 40 out)",
            vc0.len()
        ),
        || format!("port 1 received (vc, tag) {got:x?}"),
    )?;
    ctx.peer_hold(1, false)?;
    ctx.run_for(20_000)?;
    check(
        got == (0..4).map(|k| (1, 0x100 | k)).collect::<Vec<_>>(),
        "SW-3-1",
        "the frames of VC 1 leave in the order they were received",
        || format!("port 1 received (vc, tag) {got:x?}"),
    )?;
    let mut all: Vec<u32> = vc0.iter().map(|x| x.1).collect();
    all.extend(delivered(ctx, 1)?.iter().map(|x| x.1));
    let mut sorted: Vec<u32> = all.clone();
    sorted.sort_unstable();
    check(
        sorted == (0..40).collect::<Vec<_>>(),
        "SW-4-4",
        "VC 0's 40 frames leave once each once port 1 drains",
        || format!("{all:?}"),
    )?;
    check(
        all == (0..40).collect::<Vec<_>>(),
        "SW-3-1",
        "VC 0's 40 frames leave once each, in order, once port 1 drains",
        || format!("{all:?}"),
    )
}

fn responses_first(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 3)?;
    let n = ctx.desc.ports;
    let s = sw_setup(one_per_port(n), LinkParams::default(), None);
    up_ports(
        ctx,
        &s,
        &[0, 1, 2],
        |p, c| if p == 2 { small_peer(c) } else { c },
    )?;
    if ctx.params.vcs.unwrap_or(1) < 3 {
        return Err(Stop::Unsupported("the case needs VC 2".into()));
    }
    ctx.peer_hold(2, true)?;
    // Requests on VC 0 from input 0, then responses on VC 2 from input 1, all for port 2,
    // whose peer holds its buffers: both queue in the switch.
    for k in 0..60u32 {
        ctx.peer_submit(0, 0, &data(gpu_of(2), gpu_of(0), 0, k, 256))?;
    }
    ctx.run_for(5_000)?;
    for k in 0..60u32 {
        ctx.peer_submit(1, 2, &data(gpu_of(2), gpu_of(1), 0, 0x100 | k, 256))?;
    }
    ctx.run_for(5_000)?;
    let early = delivered(ctx, 2)?;
    let req0 = early.iter().filter(|x| x.0 == 0).count();
    let resp0 = early.iter().filter(|x| x.0 == 2).count();
    if req0 >= 20 || resp0 >= 20 {
        return Err(Stop::Inconclusive(format!(
            "too few frames queued in the switch ({req0} requests, {resp0} responses out)"
        )));
    }
    ctx.peer_hold(2, false)?;
    ctx.run_for(30_000)?;
    let after = delivered(ctx, 2)?;
    let last_resp = after.iter().rposition(|x| x.0 == 2);
    let Some(last_resp) = last_resp else {
        return Err(Stop::fail(
            "SW-5-2",
            "the queued responses leave",
            format!("after the release port 2 received {after:x?}"),
        ));
    };
    // Requests already handed to the egress link before the responses arrived may go first,
    // and so may requests handed to it once no response waits in the switch (the last
    // responses in the link): at most twice `egress_depth`, which the device does not declare.
    // Serving the VCs alike would put about half the queued requests first; the bound is a
    // quarter of them.
    let queued = 60 - req0;
    let reqs_before = after[..last_resp].iter().filter(|x| x.0 == 0).count();
    check(
        reqs_before <= queued / 4,
        "SW-5-2",
        format!(
            "once both are queued, the responses (VC 2) leave before the {queued} queued \
             requests (VC 0): at most {} requests (those its link already held) go before the \
             last response",
            queued / 4
        ),
        || format!("{reqs_before} requests before the last response; order (vc, tag): {after:x?}"),
    )?;
    let total = early.len() + after.len();
    check_eq("SW-4-4", "frames delivered to port 2", total, 120)
}

fn latency_respected(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 2)?;
    let n = ctx.desc.ports;
    up_ports(
        ctx,
        &sw_setup(one_per_port(n), LinkParams::default(), None),
        &[0, 1],
        |_, c| c,
    )?;
    const LATENCY: u64 = 250;
    for (k, len) in [(0u32, 64usize), (1, 4000), (2, 8000)] {
        ctx.peer_submit(0, 0, &data(gpu_of(1), gpu_of(0), 0, k, len))?;
        ctx.run_for(5_000)?;
    }
    let ins = data_log(ctx, 0, false);
    let outs = data_log(ctx, 1, true);
    for k in 0..3u32 {
        let (Some(i), Some(o)) = (ins.get(&k), outs.get(&k)) else {
            return Err(Stop::fail(
                "SW-2-1",
                format!("frame {k} forwarded to port 1"),
                "it was not",
            ));
        };
        // Its first bit arrived one serialisation time before its last.
        let frame_len = ethlink_protocol::frame_len(14, i.2.len());
        let first_bit = i.0.saturating_sub(ctx.wire.serialise_ns(frame_len));
        check(
            o.0 >= first_bit + LATENCY,
            "SW-6-1",
            format!(
                "frame {k} ({frame_len} B, first bit in at {first_bit} ns, last at {} ns) \
                 begins to leave at {} ns or later",
                i.0,
                first_bit + LATENCY
            ),
            || format!("it began at {} ns", o.0),
        )?;
    }
    Ok(())
}

fn aging(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 4)?;
    let n = ctx.desc.ports;
    const MAX_RES: u64 = 5_000;
    let s = sw_setup(one_per_port(n), LinkParams::default(), Some(MAX_RES));
    up_ports(
        ctx,
        &s,
        &[0, 2, 3],
        |p, c| if p == 2 { small_peer(c) } else { c },
    )?;
    ctx.peer_hold(2, true)?;
    let total = 60u32;
    for k in 0..total {
        ctx.peer_submit(0, 0, &data(gpu_of(2), gpu_of(0), 0, k, 1000))?;
    }
    // Watch in steps of 100 ns: a frame may be counted aged only once its residence exceeds
    // max_residence, and must be by twice max_residence.
    let start = ctx.now();
    let mut seen = Seen::new(0, 2);
    while ctx.now() < start + 40_000 {
        ctx.run_for(100)?;
        let now = ctx.now();
        let aged = ctr(ctx, 0, "discard_aged", 0)?;
        seen.update(ctx);
        let unsent: Vec<u64> = seen
            .ins
            .iter()
            .filter(|(t, _)| !seen.outs.contains_key(t))
            .map(|(_, v)| *v)
            .collect();
        let may = unsent.iter().filter(|&&a| now - a > MAX_RES).count() as u64;
        let must = unsent.iter().filter(|&&a| now - a >= 2 * MAX_RES).count() as u64;
        check(
            aged <= may,
            "SW-4-8",
            format!(
                "at {now} ns port0.discard_aged.vc0 at most {may}, the unsent frames whose \
                 residence exceeds {MAX_RES} ns"
            ),
            || format!("{aged}"),
        )?;
        check(
            aged >= must,
            "SW-4-7",
            format!(
                "at {now} ns port0.discard_aged.vc0 at least {must}, the unsent frames whose \
                 residence reached {} ns",
                2 * MAX_RES
            ),
            || format!("{aged}"),
        )?;
    }
    // Nothing ever left late, and residence_max_ns is the longest residence seen.
    let ins = data_log(ctx, 0, false);
    let outs = data_log(ctx, 2, true);
    let mut longest = 0;
    for (t, o) in &outs {
        let Some(i) = ins.get(t) else { continue };
        let res = o.0.saturating_sub(i.0);
        longest = longest.max(res);
        check(
            res <= MAX_RES,
            "SW-4-6",
            format!("frame {t} begins to leave within {MAX_RES} ns of its arrival"),
            || format!("it arrived at {} ns and began to leave at {} ns", i.0, o.0),
        )?;
    }
    let sent = outs.len() as u64;
    let aged = ctr(ctx, 0, "discard_aged", 0)?;
    check(
        ins.len() as u64 == u64::from(total) && sent + aged == u64::from(total),
        "SW-4-7",
        format!("each of the {total} frames either sent or counted aged, once"),
        || format!("{} received, {sent} sent, {aged} aged", ins.len()),
    )?;
    check(
        aged > 0,
        "SW-4-7",
        "some frames aged (port 2 held its buffers 40 us)",
        || "none".into(),
    )?;
    let rmax = ctr(ctx, 2, "residence_max_ns", 0)?;
    check_eq(
        "SW-8-2",
        "port2.residence_max_ns.vc0 (the longest residence seen)",
        rmax,
        longest,
    )?;
    check_eq(
        "SW-7-4",
        "port0.held_bytes.vc0",
        ctr(ctx, 0, "held_bytes", 0)?,
        0,
    )?;
    // The aged frames' credits are back: port 0's peer sends again, and it gets through.
    ctx.peer_submit(0, 0, &data(gpu_of(3), gpu_of(0), 0, 0x999, 1000))?;
    ctx.run_for(5_000)?;
    let got = delivered(ctx, 3)?;
    check(
        got == vec![(0, 0x999)],
        "SW-7-4",
        "a new frame from port 0 is forwarded once the aged frames' credits are returned",
        || format!("port 3 received {got:x?}"),
    )?;
    // Aged frames never leave later.
    ctx.peer_hold(2, false)?;
    ctx.run_for(10_000)?;
    let outs = data_log(ctx, 2, true);
    check_eq(
        "SW-4-6",
        "frames sent on port 2 after the release",
        outs.len() as u64,
        sent,
    )
}

/// The malformed network headers of WIRE-5-3 and WIRE-5-7 a case makes on the wire, by the
/// variant number a tag carries: each changes the network header of a well-formed payload.
const MALFORMED: [&str; 5] = [
    "destination 0xFFFF",
    "source 0xFFFF",
    "transaction count 0",
    "payload length past the frame",
    "payload length 4, below 8",
];

/// Tags of frames the hook of [`malformed_discarded`] damages: `0xBAD0_0000 | variant << 8 | k`.
const BAD_TAG: u32 = 0xBAD0_0000;

/// Changes the network header of `payload` as variant `v` of [`MALFORMED`] says.
fn make_malformed(v: u32, payload: &mut [u8]) {
    let len = payload.len() as u16 - 8;
    match v {
        0 => payload[0..2].copy_from_slice(&0xFFFFu16.to_be_bytes()),
        1 => payload[2..4].copy_from_slice(&0xFFFFu16.to_be_bytes()),
        2 => payload[5] = 0,
        3 => payload[6..8].copy_from_slice(&(len + 100).to_be_bytes()),
        _ => payload[6..8].copy_from_slice(&4u16.to_be_bytes()),
    }
}

/// Port 0's peer and the device agree small buffers (64 credits of 64 B, MFS 4 KiB), so that a
/// few discarded frames whose credits were kept would stop the peer.
fn small_buffers() -> LinkParams {
    LinkParams {
        rx_credits: Some(64),
        mfs: Some(4096),
        ..LinkParams::default()
    }
}

fn malformed_discarded(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 2)?;
    let n = ctx.desc.ports;
    up_ports(
        ctx,
        &sw_setup(one_per_port(n), small_buffers(), None),
        &[0, 1],
        |_, c| c,
    )?;
    // The peer sends well-formed payloads; the wire damages the network header of those whose
    // tag says so and mends the FCS, so that the link accepts them.
    ctx.set_hook(
        0,
        Box::new(|dir, _, bytes| {
            let n = bytes.len();
            if dir == Dir::ToDut && n > 64 && bytes[14] & 0x0F == 0 {
                let t = tag(&bytes[20..]).unwrap_or(0);
                if t & 0xFFFF_0000 == BAD_TAG {
                    make_malformed((t >> 8) & 0xFF, &mut bytes[20..n - 4]);
                    let f = fcs::fcs_bytes(&bytes[..n - 4]);
                    bytes[n - 4..].copy_from_slice(&f);
                }
            }
            Fault::Pass
        }),
    )?;
    let rounds = 8u32;
    let from = ctx.log().len();
    for k in 0..rounds {
        for v in 0..MALFORMED.len() as u32 {
            let t = BAD_TAG | v << 8 | k;
            ctx.peer_submit(0, 0, &data(gpu_of(1), gpu_of(0), 0, t, 900))?;
        }
    }
    // Then a good frame: it gets through only if the discarded frames' credits came back.
    ctx.peer_submit(0, 0, &data(gpu_of(1), gpu_of(0), 0, 0x77, 100))?;
    ctx.run_for(30_000)?;
    let nacks: Vec<Kind> = ctx.log()[from..]
        .iter()
        .filter(|l| l.from_dut && l.port == 0)
        .filter_map(|l| kind_of(&l.bytes))
        .filter(|k| matches!(k, Kind::Nack(_)))
        .collect();
    check(
        nacks.is_empty(),
        "WIRE-5-6",
        "no NACK for a malformed network header",
        || format!("{nacks:?}"),
    )?;
    let want = u64::from(rounds) * MALFORMED.len() as u64;
    check_eq(
        "SW-7-1",
        "port0.discard_malformed.vc0",
        ctr(ctx, 0, "discard_malformed", 0)?,
        want,
    )?;
    check_eq(
        "SW-8-2",
        "port0.rx_frames.vc0",
        ctr(ctx, 0, "rx_frames", 0)?,
        want + 1,
    )?;
    let got = delivered(ctx, 1)?;
    check(
        got == vec![(0, 0x77)],
        "SW-7-4",
        format!(
            "the good frame sent after {want} malformed ones ({} KiB, more than the 4 KiB input \
             buffer) is forwarded, alone",
            want * 900 / 1024
        ),
        || format!("port 1 received {got:x?}"),
    )?;
    let d = nonzero(ctx, &DISCARDS)?;
    check_eq(
        "SW-7-6",
        "discard counters other than zero",
        d,
        vec![format!("port0.discard_malformed.vc0={want}")],
    )
}

fn unroutable_discarded(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 3)?;
    let n = ctx.desc.ports;
    up_ports(
        ctx,
        &sw_setup(one_per_port(n), small_buffers(), None),
        &[0, 1, 2],
        |_, c| c,
    )?;
    // GPU 7 is in no entry: 40 frames of 1000 B, ten times the input buffer.
    for k in 0..40 {
        ctx.peer_submit(0, 0, &data(7, gpu_of(0), 0, k, 1000))?;
    }
    ctx.peer_submit(0, 0, &data(gpu_of(1), gpu_of(0), 0, 0x100, 100))?;
    ctx.run_for(30_000)?;
    check_eq(
        "SW-7-2",
        "port0.discard_unroutable.vc0 (GPU 7 unlisted)",
        ctr(ctx, 0, "discard_unroutable", 0)?,
        40,
    )?;
    let got = delivered(ctx, 1)?;
    check(
        got == vec![(0, 0x100)],
        "SW-7-4",
        "the frame after the 40 unroutable ones forwarded",
        || format!("port 1 received {got:x?}"),
    )?;
    // Port 2 goes down: its GPU has no UP port left.
    ctx.request(&Request::PhysicalDown { port: 2 })?;
    ctx.run_for(2_000)?;
    for k in 0..40 {
        ctx.peer_submit(0, 0, &data(gpu_of(2), gpu_of(0), 0, 0x200 | k, 1000))?;
    }
    ctx.peer_submit(0, 0, &data(gpu_of(1), gpu_of(0), 0, 0x101, 100))?;
    ctx.run_for(30_000)?;
    check_eq(
        "SW-7-2",
        "port0.discard_unroutable.vc0 (40 more, for GPU 102 whose only port is down)",
        ctr(ctx, 0, "discard_unroutable", 0)?,
        80,
    )?;
    let got = delivered(ctx, 1)?;
    check(
        got == vec![(0, 0x101)],
        "SW-7-4",
        "the frame after the 40 more forwarded",
        || format!("port 1 received {got:x?}"),
    )?;
    let d = nonzero(ctx, &DISCARDS)?;
    check_eq(
        "SW-7-6",
        "discard counters other than zero",
        d,
        vec!["port0.discard_unroutable.vc0=80".to_string()],
    )
}

/// Ports 0, 1 and 2 UP, port 2's peer small and holding what it gets, and `frames` frames of
/// 1000 B (tags 0 up) submitted by port 0's peer for port 2, run for 10 us: the switch's input
/// buffer of port 0 fills and port 0's peer waits for credits with the rest.
fn fill_input_0_for_held_port_2(ctx: &mut Ctx<'_>, frames: u32) -> Result<(), Stop> {
    need_ports(ctx, 3)?;
    let n = ctx.desc.ports;
    let s = sw_setup(one_per_port(n), LinkParams::default(), None);
    up_ports(
        ctx,
        &s,
        &[0, 1, 2],
        |p, c| if p == 2 { small_peer(c) } else { c },
    )?;
    ctx.peer_hold(2, true)?;
    for k in 0..frames {
        ctx.peer_submit(0, 0, &data(gpu_of(2), gpu_of(0), 0, k, 1000))?;
    }
    ctx.run_for(10_000)
}

fn input_restart_forwards_held_frames(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    fill_input_0_for_held_port_2(ctx, 60)?;
    let taken = ctr(ctx, 0, "rx_frames", 0)?;
    let mut got: Vec<u32> = delivered(ctx, 2)?.iter().map(|d| d.1).collect();
    let through = got.len() as u64;
    if taken <= through + 4 {
        return Err(Stop::Inconclusive(
            "port 0's input buffer held too few frames for the egress".into(),
        ));
    }
    // Port 0's peer restarts: a new incarnation (another nonce) with nothing queued.
    let mut cfg = peer_config(ctx, 0);
    cfg.nonce_seed ^= 0x5EED_0002;
    let from = ctx.log().len();
    ctx.attach(0, cfg)?;
    ctx.run_for(20_000)?;
    let echoes = |ctx: &Ctx<'_>, from: usize| {
        ctx.log()[from..]
            .iter()
            .filter(|l| l.from_dut && l.port == 0 && kind_of(&l.bytes) == Some(Kind::InitEcho))
            .count()
    };
    check_eq(
        "LINK-2-18",
        "INIT_ECHOs on port 0 while its input buffer holds the last incarnation's frames",
        echoes(ctx, from),
        0,
    )?;
    check(
        !ctx.peer(0)?.link.is_up(),
        "LINK-2-18",
        "port 0's new peer is not UP while the switch holds the old frames",
        || "it is UP".to_owned(),
    )?;
    // The egress frees: every frame port 0 took leaves by port 2, then port 0 comes UP.
    ctx.peer_hold(2, false)?;
    let up = ctx.run_until(100_000, |c| {
        c.peer(0).map(|x| x.link.is_up()).unwrap_or(false)
    })?;
    check(
        up && echoes(ctx, from) > 0,
        "LINK-2-18",
        "port 0's link comes UP once the frames held for port 2 have left",
        || format!("UP: {up}, INIT_ECHOs: {}", echoes(ctx, from)),
    )?;
    ctx.run_for(20_000)?;
    got.extend(delivered(ctx, 2)?.iter().map(|d| d.1));
    got.sort_unstable();
    let want: Vec<u32> = (0..u32::try_from(taken).unwrap_or(u32::MAX)).collect();
    check(
        got == want,
        "SW-7-7",
        format!(
            "the {taken} frames port 0 took before its peer restarted ({through} through before \
             it) leave by port 2, each once"
        ),
        || format!("tags {got:?}"),
    )?;
    let d = nonzero(ctx, &DISCARDS)?;
    check_eq(
        "SW-4-4",
        "discard counters other than zero",
        d,
        Vec::<String>::new(),
    )
}

fn port_down_discarded(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    // 100 frames of 1000 B for port 2, whose peer holds 2.5 KiB: the switch's input buffer
    // (32 KiB) fills and port 0's peer waits for credits with the rest.
    let total = 100u64;
    fill_input_0_for_held_port_2(ctx, total as u32)?;
    let tx_before = ctr(ctx, 2, "tx_frames", 0)?;
    let delivered_before = delivered(ctx, 2)?.len() as u64;
    if delivered_before >= 20 {
        return Err(Stop::Inconclusive("port 2 never stalled".into()));
    }
    ctx.request(&Request::PhysicalDown { port: 2 })?;
    ctx.run_for(30_000)?;
    let down = ctr(ctx, 2, "discard_port_down", 0)?;
    let unroutable = ctr(ctx, 0, "discard_unroutable", 0)?;
    let after = delivered(ctx, 2)?.len() as u64;
    let delivered_all = delivered_before + after;
    check(
        down > 0 && delivered_all + down + unroutable == total,
        "SW-7-3",
        format!(
            "the {total} frames for port 2: delivered to its peer, counted in \
             port2.discard_port_down.vc0 (those waiting when it went down) or, sent after, in \
             port0.discard_unroutable.vc0; each once, some lost to the port"
        ),
        || format!("{delivered_all} delivered, {down} port_down, {unroutable} unroutable"),
    )?;
    check(
        unroutable > 0,
        "SW-7-4",
        "port 0's peer sends its remaining frames once the discarded frames' credits return \
         (they are then unroutable)",
        || "it sent none: the credits did not come back".into(),
    )?;
    check_eq(
        "SW-7-4",
        "port0.held_bytes.vc0",
        ctr(ctx, 0, "held_bytes", 0)?,
        0,
    )?;
    let tx_after = ctr(ctx, 2, "tx_frames", 0)?;
    check(
        tx_after >= tx_before && tx_before > 0,
        "SW-8-4",
        "port2.tx_frames.vc0 kept when its link went down",
        || format!("{tx_before} before, {tx_after} after"),
    )?;
    let rx = ctr(ctx, 0, "rx_frames", 0)?;
    check_eq("SW-8-4", "port0.rx_frames.vc0", rx, total)
}

fn egress_refused(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 3)?;
    let n = ctx.desc.ports;
    let s = sw_setup(one_per_port(n), LinkParams::default(), None);
    // Port 2's peer agrees 2 VCs and an MFS of 1024 B.
    up_ports(ctx, &s, &[0, 2], |p, c| {
        if p == 2 {
            LinkConfig {
                mfs: 1024,
                ..c.with_uniform_credits(2, 512)
            }
        } else {
            c
        }
    })?;
    if ctx.params.vcs.unwrap_or(1) < 4 {
        return Err(Stop::Unsupported("the case needs VC 3".into()));
    }
    ctx.peer_submit(0, 0, &data(gpu_of(2), gpu_of(0), 0, 1, 2000))?;
    ctx.peer_submit(0, 3, &data(gpu_of(2), gpu_of(0), 0, 2, 64))?;
    ctx.peer_submit(0, 1, &data(gpu_of(2), gpu_of(0), 0, 3, 64))?;
    ctx.run_for(10_000)?;
    check_eq(
        "SW-7-5",
        "port2.discard_egress_refused.vc0 (a 2060 B frame, MFS 1024)",
        ctr(ctx, 2, "discard_egress_refused", 0)?,
        1,
    )?;
    check_eq(
        "SW-7-5",
        "port2.discard_egress_refused.vc3 (VC 3, not agreed)",
        ctr(ctx, 2, "discard_egress_refused", 3)?,
        1,
    )?;
    let got = delivered(ctx, 2)?;
    check_eq("SW-7-5", "(vc, tag) received on port 2", got, vec![(1, 3)])?;
    let d = nonzero(ctx, &DISCARDS)?;
    check_eq(
        "SW-7-6",
        "discard counters other than zero",
        d,
        vec![
            "port2.discard_egress_refused.vc0=1".to_string(),
            "port2.discard_egress_refused.vc3=1".to_string(),
        ],
    )?;
    check_eq(
        "SW-7-4",
        "port0.held_bytes.vc0",
        ctr(ctx, 0, "held_bytes", 0)?,
        0,
    )
}

fn table_entries(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 3)?;
    let n = ctx.desc.ports;
    // Refused: each of these entries, alone beside a good table.
    let mut bad: Vec<(&str, Vec<u16>)> = vec![
        ("port 1 listed twice", vec![1, 2, 1]),
        ("a port the switch does not have", vec![1, n]),
    ];
    bad.push(("65 ports", (0..65).collect()));
    for (what, ports) in bad {
        let mut routes = one_per_port(n);
        routes.push(Route::new(50, ports));
        match ctx.try_reset(&sw_setup(routes, LinkParams::default(), None))? {
            Err(_) => {}
            Ok(_) => {
                return Err(Stop::fail(
                    "SW-2-6",
                    format!("the table refused: an entry with {what}"),
                    "the device took it",
                ));
            }
        }
    }
    // Accepted: GPUs 0 and 0xFFFE, an entry of every port (64 at most), an empty entry.
    let every: Vec<u16> = (0..n.min(64)).collect();
    let mut routes = one_per_port(n);
    routes.push(Route::new(0, vec![1]));
    routes.push(Route::new(0xFFFE, every.clone()));
    routes.push(Route::new(50, Vec::new()));
    let s = sw_setup(routes, LinkParams::default(), None);
    refused_fails(
        ctx.try_reset(&s),
        "SW-2-5",
        "the table takes entries for GPUs 0 and 0xFFFE, of 0 ports and of every port",
    )?;
    up_all(ctx, &s)?;
    ctx.peer_submit(0, 0, &data(0, gpu_of(0), 0, 1, 64))?;
    ctx.peer_submit(0, 0, &data(0xFFFE, gpu_of(0), 0x42, 2, 64))?;
    ctx.peer_submit(0, 0, &data(50, gpu_of(0), 0, 3, 64))?;
    ctx.run_for(10_000)?;
    let h = mix(gpu_of(0), 0xFFFE, 0x42, 0);
    let want2 = every[(h % every.len() as u64) as usize];
    let mut seen: Vec<(u16, u32)> = Vec::new();
    for p in 0..n {
        for (_, t) in delivered(ctx, p)? {
            seen.push((p, t));
        }
    }
    seen.sort_unstable();
    let mut want = vec![(1u16, 1u32), (want2, 2)];
    want.sort_unstable();
    check(
        seen == want,
        "SW-2-5",
        format!(
            "the frame for GPU 0 leaves by port 1, the one for GPU 0xFFFE by port {want2} \
             (Table SW-T2's function over every port), the one for GPU 50 nowhere"
        ),
        || format!("(port, tag) received: {seen:?}"),
    )?;
    check_eq(
        "SW-7-2",
        "port0.discard_unroutable.vc0 (GPU 50, an empty entry)",
        ctr(ctx, 0, "discard_unroutable", 0)?,
        1,
    )
}

fn bad_fcs_not_forwarded(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 2)?;
    let n = ctx.desc.ports;
    let s = sw_setup(one_per_port(n), LinkParams::default(), None);
    up_ports(ctx, &s, &[0, 1], |_, c| c)?;
    // The first copy of every fourth frame reaches the switch with a bad FCS.
    let mut damaged = std::collections::BTreeSet::new();
    ctx.set_hook(
        0,
        Box::new(move |dir, _, bytes| {
            let n = bytes.len();
            if dir == Dir::ToDut && n > 64 && bytes[14] & 0x0F == 0 {
                let t = tag(&bytes[20..]).unwrap_or(0);
                if t % 4 == 1 && damaged.insert(t) {
                    bytes[n - 1] ^= 0x5A;
                }
            }
            Fault::Pass
        }),
    )?;
    let from = ctx.log().len();
    for k in 0..40u32 {
        ctx.peer_submit(0, 0, &data(gpu_of(1), gpu_of(0), 0, k, 2000))?;
    }
    ctx.run_for(60_000)?;
    let bad_in = ctx.log()[from..]
        .iter()
        .filter(|l| !l.from_dut && l.port == 0 && !fcs::check(&l.bytes))
        .count();
    if bad_in != 10 {
        return Err(Stop::Harness(format!(
            "the hook damaged {bad_in} frames, not 10"
        )));
    }
    let cut_through = ctx.has_cap("cut_through");
    for l in ctx.log()[from..].iter().filter(|l| l.from_dut) {
        if fcs::check(&l.bytes) {
            continue;
        }
        let stomped = fcs::is_stomped(&l.bytes);
        check(
            stomped,
            "SW-6-3",
            "every frame the switch sends has a good FCS, or a stomped one",
            || {
                format!(
                    "a frame with a bad FCS on port {} at {} ns",
                    l.port, l.time_ns
                )
            },
        )?;
        check(
            cut_through,
            "CLS-3-3",
            "no stomped frame from a switch that does not announce CUT_THROUGH",
            || format!("a stomped frame on port {} at {} ns", l.port, l.time_ns),
        )?;
    }
    let got: Vec<u32> = delivered(ctx, 1)?.iter().map(|x| x.1).collect();
    check(
        got == (0..40).collect::<Vec<_>>(),
        "SW-6-4",
        "the 40 frames, 10 of them replayed after a bad FCS, delivered once each, in order",
        || format!("port 1 received {got:?}"),
    )?;
    check_eq(
        "SW-6-4",
        "port1.tx_frames.vc0",
        ctr(ctx, 1, "tx_frames", 0)?,
        40,
    )?;
    // A copy the switch stomped is not a frame forwarded: tx_frames counts each frame once,
    // whatever copies of it were given up.
    check_eq(
        "SW-8-5",
        "port1.tx_frames.vc0 (each of the 40 frames once, no stomped copy)",
        ctr(ctx, 1, "tx_frames", 0)?,
        40,
    )
}

fn credits_kept_until_handed_on(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 3)?;
    let n = ctx.desc.ports;
    let s = sw_setup(one_per_port(n), LinkParams::default(), Some(1_000_000));
    up_ports(
        ctx,
        &s,
        &[0, 2],
        |p, c| if p == 2 { small_peer(c) } else { c },
    )?;
    ctx.peer_hold(2, true)?;
    let total = 200u32;
    for k in 0..total {
        ctx.peer_submit(0, 0, &data(gpu_of(2), gpu_of(0), 0, k, 1000))?;
    }
    ctx.run_for(20_000)?;
    let mut seen = Seen::new(0, 2);
    seen.update(ctx);
    let inside = seen.ins.len() - seen.outs.len();
    let plen = data(0, 0, 0, 0, 1000).len();
    let cost = (ethlink_protocol::frame_len(14, plen)
        + usize::from(ctx.params.credit_overhead.unwrap_or(0)))
    .div_ceil(usize::from(ctx.params.credit_size.unwrap_or(64)));
    let credits = ctx.params.rx_credits.unwrap_or(512) as usize;
    let bound = credits / cost + 64;
    if seen.ins.len() == total as usize {
        return Err(Stop::Inconclusive(
            "the switch took every frame: the case cannot tell".into(),
        ));
    }
    check(
        inside <= bound,
        "SW-4-1",
        format!(
            "at most {bound} frames received on port 0 and not sent on port 2: the {} its \
             {credits} credits cover at {cost} credits a frame, and at most 64 handed to the \
             egress link (Table SW-T1, egress_depth)",
            credits / cost
        ),
        || {
            format!(
                "{inside} ({} received, {} sent)",
                seen.ins.len(),
                seen.outs.len()
            )
        },
    )?;
    // The frames it holds are those not yet handed to the egress link: all inside but the
    // 0 to 64 in that link.
    let held = ctr(ctx, 0, "held_bytes", 0)?;
    let plen64 = plen as u64;
    let inside64 = inside as u64;
    check(
        held % plen64 == 0 && held <= inside64 * plen64 && held + 64 * plen64 >= inside64 * plen64,
        "SW-4-5",
        format!(
            "port0.held_bytes.vc0 the payload bytes of the frames inside but those in the egress \
             link: a multiple of {plen} between {} and {}",
            inside64.saturating_sub(64) * plen64,
            inside64 * plen64
        ),
        || format!("{held}"),
    )?;
    let max = ctr(ctx, 0, "held_max_bytes", 0)?;
    let buffer = credits as u64 * u64::from(ctx.params.credit_size.unwrap_or(64));
    check(
        max >= held && max <= buffer,
        "SW-4-5",
        format!("port0.held_max_bytes.vc0 between held_bytes ({held}) and the buffer ({buffer})"),
        || format!("{max}"),
    )?;
    ctx.peer_hold(2, false)?;
    run_until_delivered(ctx, 2, total as usize, 200_000)?;
    let got: Vec<u32> = delivered(ctx, 2)?.iter().map(|x| x.1).collect();
    let mut sorted = got.clone();
    sorted.sort_unstable();
    check(
        sorted == (0..total).collect::<Vec<_>>(),
        "SW-4-4",
        format!("the {total} frames delivered once each once port 2 drains"),
        || format!("{} delivered", got.len()),
    )?;
    check(
        got == (0..total).collect::<Vec<_>>(),
        "SW-3-1",
        "in the order they were received",
        || format!("{got:?}"),
    )
}

fn unknown_fate_counted(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 3)?;
    let n = ctx.desc.ports;
    let link = LinkParams {
        replay_timer_ns: Some(50_000),
        ..LinkParams::default()
    };
    let s = sw_setup(one_per_port(n), link, None);
    up_ports(ctx, &s, &[0, 2], |_, c| c)?;
    // Port 2's peer receives every frame, but its ACKs are lost: the frames stay in the
    // switch's replay buffer, of unknown fate.
    ctx.set_hook(
        2,
        Box::new(|dir, _, bytes| {
            if dir == Dir::ToDut && kind_of(bytes).is_some_and(|k| matches!(k, Kind::Ack(_))) {
                Fault::Drop
            } else {
                Fault::Pass
            }
        }),
    )?;
    for k in 0..10u32 {
        ctx.peer_submit(0, 0, &data(gpu_of(2), gpu_of(0), 0, k, 500))?;
    }
    ctx.run_for(5_000)?;
    let got = delivered(ctx, 2)?;
    if got.len() != 10 {
        return Err(Stop::Inconclusive(format!(
            "port 2's peer received {} of the 10 frames before the port went down",
            got.len()
        )));
    }
    ctx.request(&Request::PhysicalDown { port: 2 })?;
    ctx.run_for(5_000)?;
    check_eq(
        "SW-7-3",
        "port2.discard_port_down.vc0 (10 frames sent, none acknowledged)",
        ctr(ctx, 2, "discard_port_down", 0)?,
        10,
    )?;
    check_eq(
        "SW-8-2",
        "port2.tx_frames.vc0",
        ctr(ctx, 2, "tx_frames", 0)?,
        10,
    )?;
    let d = nonzero(ctx, &DISCARDS)?;
    check_eq(
        "SW-7-6",
        "discard counters other than zero",
        d,
        vec!["port2.discard_port_down.vc0=10".to_string()],
    )
}

// ---------------------------------------------------------------------------------------------
// The table written while running, a configured latency, tagging.

fn set_route(ctx: &mut Ctx<'_>, dst: u16, ports: Vec<u16>) -> Result<(), Stop> {
    ctx.request(&Request::SetRoute {
        dst,
        ports,
        groups: Vec::new(),
    })?;
    Ok(())
}

/// Every (port, tag) the peers of `ports` received since last asked, sorted.
fn received(ctx: &mut Ctx<'_>, ports: &[u16]) -> Result<Vec<(u16, u32)>, Stop> {
    let mut seen = Vec::new();
    for &p in ports {
        for (_, t) in delivered(ctx, p)? {
            seen.push((p, t));
        }
    }
    seen.sort_unstable();
    Ok(seen)
}

fn table_written_while_running(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 3)?;
    let n = ctx.desc.ports;
    let mut routes = one_per_port(n);
    routes.push(Route::new(50, vec![1]));
    up_ports(
        ctx,
        &sw_setup(routes, LinkParams::default(), None),
        &[0, 1, 2],
        |_, c| c,
    )?;
    ctx.peer_submit(0, 0, &data(50, gpu_of(0), 0, 1, 64))?;
    ctx.run_for(10_000)?;
    check_eq(
        "SW-2-1",
        "(port, tag) received with GPU 50 behind port 1",
        received(ctx, &[0, 1, 2])?,
        vec![(1, 1)],
    )?;
    // The path idle for far longer than any guard of the path pins (SW-2-12): the write moves it.
    ctx.run_for(1_000_000)?;
    set_route(ctx, 50, vec![2])?;
    ctx.run_for(100)?;
    ctx.peer_submit(0, 0, &data(50, gpu_of(0), 0, 2, 64))?;
    ctx.run_for(10_000)?;
    check_eq(
        "SW-2-7",
        "(port, tag) received after the entry of GPU 50 was written to port 2",
        received(ctx, &[0, 1, 2])?,
        vec![(2, 2)],
    )?;
    set_route(ctx, 50, Vec::new())?;
    ctx.run_for(100)?;
    ctx.peer_submit(0, 0, &data(50, gpu_of(0), 0, 3, 64))?;
    ctx.run_for(10_000)?;
    check_eq(
        "SW-2-7",
        "(port, tag) received after the entry of GPU 50 was written empty",
        received(ctx, &[0, 1, 2])?,
        Vec::new(),
    )?;
    check_eq(
        "SW-7-2",
        "port0.discard_unroutable.vc0 (GPU 50, its entry written empty)",
        ctr(ctx, 0, "discard_unroutable", 0)?,
        1,
    )
}

/// Resets the switch with a configured `latency_ns`, answering unsupported when it refuses.
fn with_latency(ctx: &mut Ctx<'_>, routes: Vec<Route>, ns: u64, ports: &[u16]) -> Result<(), Stop> {
    let s = Setup {
        latency_ns: Some(ns),
        ..sw_setup(routes, LinkParams::default(), None)
    };
    up_ports(ctx, &s, ports, |_, c| c)
}

fn egress_kept_on_arrival(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 3)?;
    let n = ctx.desc.ports;
    let mut routes = one_per_port(n);
    routes.push(Route::new(50, vec![1]));
    with_latency(ctx, routes, 5_000, &[0, 1, 2])?;
    ctx.peer_submit(0, 0, &data(50, gpu_of(0), 0, 1, 64))?;
    let arrived = ctx.run_until(10_000, |c| data_log(c, 0, false).contains_key(&1))?;
    if !arrived {
        return Err(Stop::Harness(
            "the peer's frame 1 never reached the switch".into(),
        ));
    }
    let at = ctx.now();
    set_route(ctx, 50, vec![2])?;
    // Frame 2 on another path: frame 1's path is busy and keeps its port (SW-2-12).
    ctx.peer_submit(0, 0, &data(50, gpu_of(0), 1, 2, 64))?;
    ctx.run_for(20_000)?;
    let left = data_log(ctx, 1, true).get(&1).map(|x| x.0);
    if left.is_some_and(|t| t < at) {
        return Err(Stop::Inconclusive(format!(
            "frame 1 left at {} ns, before the entry was written at {at} ns",
            left.unwrap_or(0)
        )));
    }
    check_eq(
        "SW-2-8",
        "(port, tag) received: frame 1 by port 1 (its entry when it arrived), frame 2 by port 2 \
         (written before it arrived)",
        received(ctx, &[0, 1, 2])?,
        vec![(1, 1), (2, 2)],
    )
}

fn configured_latency_respected(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 2)?;
    let n = ctx.desc.ports;
    const LATENCY: u64 = 3_000;
    with_latency(ctx, one_per_port(n), LATENCY, &[0, 1])?;
    for (k, len) in [(0u32, 64usize), (1, 4000)] {
        ctx.peer_submit(0, 0, &data(gpu_of(1), gpu_of(0), 0, k, len))?;
        ctx.run_for(10_000)?;
    }
    let ins = data_log(ctx, 0, false);
    let outs = data_log(ctx, 1, true);
    for k in 0..2u32 {
        let (Some(i), Some(o)) = (ins.get(&k), outs.get(&k)) else {
            return Err(Stop::fail(
                "SW-2-1",
                format!("frame {k} forwarded to port 1"),
                "it was not",
            ));
        };
        let frame_len = ethlink_protocol::frame_len(14, i.2.len());
        let first_bit = i.0.saturating_sub(ctx.wire.serialise_ns(frame_len));
        check(
            o.0 >= first_bit + LATENCY,
            "SW-6-1",
            format!(
                "frame {k} ({frame_len} B, first bit in at {first_bit} ns) begins to leave at \
                 {} ns or later (latency {LATENCY} ns)",
                first_bit + LATENCY
            ),
            || format!("it began at {} ns", o.0),
        )?;
    }
    Ok(())
}

fn tagged_ports_announce(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 2)?;
    let n = ctx.desc.ports;
    up_ports(
        ctx,
        &sw_setup(one_per_port(n), LinkParams::default(), None),
        &[0, 1],
        |_, c| c,
    )?;
    for k in 0..4u32 {
        let (from, to) = if k % 2 == 0 { (0, 1) } else { (1, 0) };
        ctx.peer_submit(
            from,
            (k % 2) as u8,
            &data(gpu_of(to), gpu_of(from), 0, k, 64),
        )?;
    }
    ctx.run_for(10_000)?;
    // Per port: whether every INIT and INIT_ECHO it sent announced TAGGED, and its first tagged
    // frame.
    let mut announced: BTreeMap<u16, bool> = BTreeMap::new();
    let mut tagged: BTreeMap<u16, Vec<u8>> = BTreeMap::new();
    for l in ctx.log().iter().filter(|l| l.from_dut) {
        if l.bytes.get(12..14) == Some(&[0x81, 0x00][..]) {
            tagged.entry(l.port).or_insert_with(|| l.bytes.clone());
        }
        if let Ok(r) = FrameRepr::parse_bytes(&l.bytes, 9216) {
            let caps = match r.link {
                LinkFrame::Init(i) => Some(i.caps),
                LinkFrame::InitEcho { init, .. } => Some(init.caps),
                _ => None,
            };
            if let Some(c) = caps {
                let has = c.bits() & ethlink_protocol::Capabilities::TAGGED.bits() != 0;
                let e = announced.entry(l.port).or_insert(true);
                *e = *e && has;
            }
        }
    }
    for (port, frame) in tagged {
        check(
            announced.get(&port).copied().unwrap_or(false),
            "SW-9-6",
            format!("port {port}, which sends 802.1Q-tagged frames, announces TAGGED"),
            || {
                format!(
                    "its INIT or INIT_ECHO did not; a tagged frame: {}",
                    hex::encode(&frame)
                )
            },
        )?;
    }
    Ok(())
}

fn pinned_across_a_table_write(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    need_ports(ctx, 3)?;
    let n = ctx.desc.ports;
    let mut routes = one_per_port(n);
    routes.push(Route::new(50, vec![1]));
    up_ports(
        ctx,
        &sw_setup(routes, LinkParams::default(), None),
        &[0, 1, 2],
        |_, c| c,
    )?;
    // Port 1's peer reads nothing for a while: frames of the path wait for port 1.
    ctx.peer_hold(1, true)?;
    for k in 0..30u32 {
        ctx.peer_submit(0, 0, &data(50, gpu_of(0), 0, k, 2000))?;
    }
    ctx.run_for(3_000)?;
    set_route(ctx, 50, vec![2])?;
    ctx.run_for(100)?;
    for k in 30..40u32 {
        ctx.peer_submit(0, 0, &data(50, gpu_of(0), 0, k, 2000))?;
    }
    ctx.run_for(3_000)?;
    ctx.peer_hold(1, false)?;
    ctx.run_for(100_000)?;
    let got = received(ctx, &[0, 1, 2])?;
    let on1: Vec<u32> = got.iter().filter(|x| x.0 == 1).map(|x| x.1).collect();
    check(
        on1 == (0..40).collect::<Vec<_>>() && got.len() == 40,
        "SW-2-12",
        "the 40 frames of the busy path, 10 of them sent after its entry moved to port 2, all \
         on port 1, once each",
        || format!("(port, tag) received: {got:?}"),
    )?;
    // Idle for far longer than any guard, the path takes the new entry.
    ctx.run_for(1_000_000)?;
    ctx.peer_submit(0, 0, &data(50, gpu_of(0), 0, 40, 2000))?;
    ctx.run_for(10_000)?;
    check_eq(
        "SW-2-7",
        "(port, tag) received once the path was idle",
        received(ctx, &[0, 1, 2])?,
        vec![(2, 40)],
    )
}

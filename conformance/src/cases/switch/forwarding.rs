//! Forwarding (switch.md §2): frames forwarded unchanged, the choice among equal ports by the
//! vectors of Tables SW-T2 and SW-T3 (§2.1), the forwarding table and its writes while running
//! (§2.2), groups of preference (§2.3) and path pins (§2.4). The `SWT-FWD-*`, `SWT-TBL-*` and
//! `SWT-PIN-*` cases.

use std::collections::BTreeMap;

use super::{
    DISCARDS, bring_up, ctr, data, data_log, delivered, gpu_of, need_ports, nonzero, one_per_port,
    sw_setup, tag, up_all, up_ports, with_latency,
};
use crate::case::{Stop, check, check_eq};
use crate::ctx::Ctx;
use crate::device::{LinkParams, Request, Route, Setup};

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

pub(super) fn forwards_unchanged(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

pub(super) fn equal_ports_by_vectors(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

pub(super) fn equal_ports_one_down(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

pub(super) fn grouped_entry(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

pub(super) fn group_sizes_checked(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

pub(super) fn table_entries(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

pub(super) fn table_written_while_running(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

pub(super) fn egress_kept_on_arrival(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

pub(super) fn pinned_across_a_table_write(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

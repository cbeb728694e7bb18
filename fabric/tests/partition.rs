//! A fabric run as two partitions, its GPUs with some of its switches and the other switches
//! (`Fabric::set_partitioned`): the result depends on the scenario and the split alone, not on
//! whether the other switches have a thread of their own nor on how the two threads happen to
//! be scheduled; every operation completes and every byte lands as in the single event queue's
//! run, whichever switches go with the GPUs; a captured cable and partitions exclude each
//! other.

use ethlink_fabric::report::{Report, Wall};
use ethlink_fabric::{End, Fabric, Scenario};

fn scenario(text: &str) -> Scenario {
    let s: Scenario = toml::from_str(text).expect("scenario parses");
    s.validate().expect("scenario is valid");
    s
}

/// Loads and stores beside an all-to-all on `gpus` GPUs of 2 ports, single tier, with bit
/// errors, switches of 60 ns in `mode` (short enough for a cut-through switch to cut 8 KiB
/// frames through), and `extra` (more keys, tables) after the rest.
fn fabric(gpus: u16, mode: &str, extra: &str) -> Scenario {
    scenario(&format!(
        r#"
seed = 7
[topology]
kind = "single_tier"
gpus = {gpus}
stacks = 1
ports_per_stack = 2
[link]
ber = 2e-7
[switch]
mode = "{mode}"
latency_ns = 60
[[traffic]]
kind = "load_store"
ops = 300
outstanding = 4
[[traffic.sizes]]
bytes = 64
weight = 1.0
[[traffic]]
kind = "all_to_all"
bytes_per_pair = 60000
iterations = 2
[metrics]
sample_ns = 500
{extra}
"#
    ))
}

/// An all-to-all across two tiers: frames cross from switch to switch as well.
fn two_tier() -> Scenario {
    scenario(
        r#"
seed = 3
[topology]
kind = "two_tier"
gpus = 8
stacks = 1
ports_per_stack = 1
leaves = 2
[[traffic]]
kind = "all_to_all"
bytes_per_pair = 40000
iterations = 2
[metrics]
sample_ns = 0
"#,
    )
}

/// The scenarios the tests run: store-and-forward and cut-through switches, a plane cut for a
/// while in mid-run, and two tiers.
fn scenarios() -> Vec<(&'static str, Scenario)> {
    vec![
        ("store and forward", fabric(6, "store_and_forward", "")),
        ("cut-through", fabric(6, "cut_through", "")),
        (
            "a plane cut in mid-run",
            fabric(
                6,
                "store_and_forward",
                "[[outages]]\nwhat = { kind = \"plane\", plane = 1 }\nstart_ns = 3000\nduration_ns = 4000\n",
            ),
        ),
        ("two tiers", two_tier()),
    ]
}

/// The run of `s`, as two partitions when `partitioned` is set (`Some(threaded)`), without the
/// wall-clock figures.
fn run(s: &Scenario, partitioned: Option<bool>) -> Report {
    let mut f = Fabric::new(s).expect("valid scenario");
    if let Some(threaded) = partitioned {
        f.set_partitioned(threaded).expect("partitions allowed");
    }
    let mut r = f.run(None);
    r.wall = Wall::default();
    r
}

/// The run of `s` as two partitions, the first `split` switches with the GPUs, and its
/// wall-clock figures.
fn run_split(s: &Scenario, threaded: bool, split: u32) -> (Report, Wall) {
    let mut f = Fabric::new(s).expect("valid scenario");
    f.set_partitioned_split(threaded, Some(split))
        .expect("partitions allowed");
    let mut r = f.run(None);
    let wall = std::mem::take(&mut r.wall);
    (r, wall)
}

fn assert_clean(what: &str, r: &Report) {
    assert!(r.pass, "{what}: the run fails: {:?}", r.failures);
    assert!(r.data_intact, "{what}: data not intact");
    assert_eq!(r.ops.lost, 0, "{what}: operations lost");
    assert_eq!(r.ops.duplicated, 0, "{what}: operations completed twice");
    assert_eq!(
        r.ops.issued, r.ops.completed,
        "{what}: every operation completes"
    );
    assert_eq!(r.integrity.bytes_mismatched, 0, "{what}: bytes mismatched");
    assert!(r.integrity.writes_ok > 0, "{what}: nothing written");
}

#[test]
fn the_switches_own_thread_changes_nothing() {
    for (what, s) in scenarios() {
        let here = run(&s, Some(false));
        assert_clean(what, &here);
        for _ in 0..3 {
            let threaded = run(&s, Some(true));
            assert!(threaded == here, "{what}: the threaded run differs");
        }
    }
}

#[test]
fn partitions_do_the_same_work_as_one_queue() {
    for (what, s) in scenarios() {
        let one = run(&s, None);
        let two = run(&s, Some(true));
        assert_clean(what, &one);
        assert_clean(what, &two);
        // The same operations, to the byte; events and timing differ only by the order of
        // events of one picosecond.
        assert_eq!(two.ops.issued, one.ops.issued, "{what}");
        assert_eq!(two.ops.completed_ok, one.ops.completed_ok, "{what}");
        assert_eq!(two.integrity.writes_ok, one.integrity.writes_ok, "{what}");
        assert_eq!(two.all_links_up, one.all_links_up, "{what}");
        // Both partitions' counts are in the report: frames, DATA frames, and the shares of
        // the wire that control frames and payload take.
        for (name, a, b) in [
            ("events", one.sim.events as f64, two.sim.events as f64),
            (
                "DATA frame-hops",
                one.sim.data_frame_hops as f64,
                two.sim.data_frame_hops as f64,
            ),
            (
                "control share",
                one.overhead.control_share,
                two.overhead.control_share,
            ),
            (
                "payload share",
                one.overhead.data_payload_share,
                two.overhead.data_payload_share,
            ),
        ] {
            assert!((a - b).abs() <= 0.05 * a, "{what}: {name} {a} against {b}");
        }
        let (a, b) = (one.sim.frame_hops as f64, two.sim.frame_hops as f64);
        assert!(
            (a - b).abs() <= 0.05 * a,
            "{what}: frame-hops {a} against {b}"
        );
        let (a, b) = (one.end_ns as f64, two.end_ns as f64);
        assert!(
            (a - b).abs() <= 0.05 * a,
            "{what}: end {a} ns against {b} ns"
        );
        // The switches forward as much, and cut through as much: the headers a cut-through
        // switch reads cross between the partitions too.
        let (a, b) = (one.switch.forwarded as f64, two.switch.forwarded as f64);
        assert!(
            (a - b).abs() <= 0.05 * a,
            "{what}: forwarded {a} against {b}"
        );
        let (a, b) = (one.switch.cut_through as f64, two.switch.cut_through as f64);
        assert!(
            (a - b).abs() <= 0.05 * a,
            "{what}: cut through {a} against {b}"
        );
        assert_eq!(two.switch.cut_through > 0, what == "cut-through", "{what}");
    }
}

#[test]
fn a_plane_cut_loses_the_frames_on_its_wires_alike() {
    let s = fabric(
        6,
        "store_and_forward",
        "[[outages]]\nwhat = { kind = \"plane\", plane = 0 }\nstart_ns = 2000\n",
    );
    let one = run(&s, None);
    let two = run(&s, Some(true));
    // Both ends of each cut cable go down, the GPUs' and the switches', in either partition.
    for (what, a, b) in [
        ("frames cut", one.sim.frames_cut, two.sim.frames_cut),
        (
            "frames a switch lost to a port down",
            one.switch.lost_port_down,
            two.switch.lost_port_down,
        ),
    ] {
        assert!(a > 0, "{what}: none in one queue");
        assert!(
            a.abs_diff(b) * 4 <= a,
            "{what}: {a} in one queue against {b}"
        );
    }
    assert_clean("single queue", &one);
    assert_clean("partitions", &two);
}

#[test]
fn the_lookahead_is_the_cable_and_the_shortest_frame() {
    // 5 m of cable, 25 ns; at 400 Gb/s the 64-byte frame and its 20 bytes of preamble and gap
    // take 1.68 ns, the 28-byte header a cut-through switch reads and its 20, 0.96 ns.
    for (mode, ps) in [("store_and_forward", 26_680), ("cut_through", 25_960)] {
        let mut f = Fabric::new(&fabric(4, mode, "")).expect("valid");
        assert_eq!(f.set_partitioned(true).expect("partitions"), ps, "{mode}");
    }
    let mut s = fabric(4, "store_and_forward", "");
    s.link.propagation_ns = Some(100.0);
    s.link.rate_gbps = 800.0;
    let mut f = Fabric::new(&s).expect("valid");
    assert_eq!(f.set_partitioned(false).expect("partitions"), 100_840);
}

#[test]
fn cables_without_delay_still_leave_the_shortest_frame_as_lookahead() {
    // A frame takes at least its own serialisation to arrive: 64 bytes and the wire overhead.
    let mut s = fabric(4, "cut_through", "");
    s.link.propagation_ns = Some(0.0);
    let here = run(&s, Some(false));
    assert_clean("no delay", &here);
    assert!(run(&s, Some(true)) == here, "the threaded run differs");
}

#[test]
fn a_capture_and_partitions_exclude_each_other() {
    let s = fabric(4, "store_and_forward", "");
    let mut f = Fabric::new(&s).expect("valid");
    let cable = f.cable_of(End::Gpu { gpu: 0, port: 0 }).expect("cabled");
    f.capture(cable, Box::new(|_| {})).expect("capture");
    let e = f.set_partitioned(true).expect_err("a capture");
    assert_eq!(e.key, "capture");

    let mut f = Fabric::new(&s).expect("valid");
    f.set_partitioned(false).expect("partitions");
    let e = f
        .capture(cable, Box::new(|_| {}))
        .expect_err("a capture after");
    assert_eq!(e.key, "capture");
}

#[test]
fn whichever_switches_go_with_the_gpus_the_work_is_the_same() {
    for (what, s) in scenarios() {
        let one = run(&s, None);
        let switches = one.switches as u32;
        assert!(switches >= 2, "{what}: {switches} switches");
        for split in 0..switches {
            let what = format!("{what}, {split} switches with the GPUs");
            let (here, wall) = run_split(&s, false, split);
            assert_clean(&what, &here);
            let p = wall.partitions.expect("a partitioned run's figures");
            assert_eq!(p.switches_with_gpus, split, "{what}");
            assert!(p.windows > 0, "{what}: no window");
            let (threaded, _) = run_split(&s, true, split);
            assert!(threaded == here, "{what}: the threaded run differs");
            assert_eq!(here.ops.issued, one.ops.issued, "{what}");
            assert_eq!(here.ops.completed_ok, one.ops.completed_ok, "{what}");
            assert_eq!(here.integrity.writes_ok, one.integrity.writes_ok, "{what}");
            // Every switch, wherever it ran, is in the report, in its place.
            assert_eq!(here.switches, one.switches, "{what}");
            for (name, a, b) in [
                ("events", one.sim.events, here.sim.events),
                (
                    "DATA frame-hops",
                    one.sim.data_frame_hops,
                    here.sim.data_frame_hops,
                ),
                ("forwarded", one.switch.forwarded, here.switch.forwarded),
                (
                    "cut through",
                    one.switch.cut_through,
                    here.switch.cut_through,
                ),
                ("frames cut", one.sim.frames_cut, here.sim.frames_cut),
            ] {
                assert!(a.abs_diff(b) * 20 <= a, "{what}: {name} {a} against {b}");
            }
            // Each switch's own row, in its place: the two partitions' switches are joined back
            // in order.
            assert_eq!(here.switch.switches.len(), one.switch.switches.len());
            for (k, (a, b)) in one
                .switch
                .switches
                .iter()
                .zip(&here.switch.switches)
                .enumerate()
            {
                assert_eq!(b.switch, k as u32, "{what}");
                assert!(
                    a.forwarded.abs_diff(b.forwarded) * 20 <= a.forwarded,
                    "{what}: switch {k} forwarded {} against {}",
                    a.forwarded,
                    b.forwarded
                );
            }
        }
    }
}

#[test]
fn a_single_queue_run_has_no_partition_figures() {
    let mut f = Fabric::new(&two_tier()).expect("valid");
    assert!(f.run(None).wall.partitions.is_none());
}

#[test]
fn the_default_split_follows_the_topology() {
    // One tier: a quarter of the planes' switches, to the nearest, go with the GPUs.
    for (ports, split) in [(1, 0), (2, 1), (4, 1), (6, 2), (8, 2)] {
        let s = scenario(&format!(
            "[topology]\nkind = \"single_tier\"\ngpus = 4\nstacks = 1\nports_per_stack = {ports}\n"
        ));
        let f = Fabric::new(&s).expect("valid");
        assert_eq!(f.default_split(), split, "{ports} planes");
    }
    // Two tiers: leaves go with the GPUs until the ports balance, a GPU port counting two.
    // 64 GPUs of 1 port (128) against 8 leaves of 16 ports and 8 spines of 8 (192): two
    // leaves make 160 and 160.
    let s = scenario(
        "[topology]\nkind = \"two_tier\"\ngpus = 64\nstacks = 1\nports_per_stack = 1\nleaves = 8\nspines = 8\n",
    );
    assert_eq!(Fabric::new(&s).expect("valid").default_split(), 2);
    // 32 GPUs of 2 ports (128) against 2 planes of 4 leaves of 12 ports and 4 spines of 4
    // (128): balanced already.
    let s = scenario(
        "[topology]\nkind = \"two_tier\"\ngpus = 32\nstacks = 1\nports_per_stack = 2\nleaves = 4\nspines = 4\n",
    );
    assert_eq!(Fabric::new(&s).expect("valid").default_split(), 0);
}

#[test]
fn a_split_that_leaves_no_switch_to_the_other_partition_is_refused() {
    let s = fabric(4, "store_and_forward", "");
    let mut f = Fabric::new(&s).expect("valid");
    for split in [2, 3, u32::MAX] {
        let e = f
            .set_partitioned_split(true, Some(split))
            .expect_err("no switch left");
        assert_eq!(e.key, "switches_with_gpus", "{split}");
        assert!(e.reason.contains("fabric's 2"), "{split}: {}", e.reason);
    }
    assert!(f.set_partitioned_split(true, Some(1)).is_ok());
}

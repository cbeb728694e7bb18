//! Load-store workloads over their whole parameter ranges, and scenario values at the edges of
//! theirs: a fault-free run is intact whatever the workload's shape, open-loop arrivals keep to
//! their rate however slow, and a value the fabric cannot use is refused with its key, its value
//! and the limit.
//!
//! The property runs 256 cases (a second or two in a debug build); `PROPTEST_CASES` sets
//! another number. The seed is fixed so runs are repeatable; set `PROPTEST_RNG_SEED` to explore
//! others. Failing cases are kept in `proptest-regressions/load_store.txt`.

use ethlink_fabric::report::Report;
use ethlink_fabric::scenario::{LoadStore, SizeWeight, Topology, TopologyKind, Workload};
use ethlink_fabric::{Fabric, Scenario};
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, FileFailurePersistence, RngSeed};

/// Two GPUs back to back over `ports` cables, no bit errors, no time series, `w` alone.
fn back_to_back(ports: u8, w: LoadStore) -> Scenario {
    let mut s = Scenario {
        topology: Topology {
            kind: TopologyKind::BackToBack,
            gpus: 2,
            stacks: 1,
            ports_per_stack: ports,
            ..Topology::default()
        },
        traffic: vec![Workload::LoadStore(w)],
        ..Scenario::default()
    };
    s.link.ber = 0.0;
    s.metrics.sample_ns = 0;
    s
}

fn run(s: &Scenario) -> Report {
    Fabric::new(s).expect("valid scenario").run(None)
}

/// A load-store workload drawn over the documented ranges, kept small in operations: every
/// shape of slots and ordered streams, closed or open loop.
fn load_store() -> impl Strategy<Value = LoadStore> {
    let sizes = proptest::collection::vec((1u16..=256, 0.001f64..1000.0), 1..=4).prop_map(|v| {
        v.into_iter()
            .map(|(bytes, weight)| SizeWeight { bytes, weight })
            .collect::<Vec<_>>()
    });
    let share = prop_oneof![Just(0.0), Just(1.0), 0.0f64..=1.0];
    let streams = prop_oneof![1u32..=8, 1u32..=4096];
    let stream_slots = prop_oneof![Just(0u32), 1u32..=16, Just(65536), 0u32..=65536];
    (
        (sizes, share.clone(), share.clone(), share),
        (1u32..=32, prop::option::of(1.0f64..=1000.0), 1u64..=30),
        (1u32..=1 << 20, 1u32..=1 << 20, streams, stream_slots),
        0u64..=2000,
    )
        .prop_map(
            |(
                (sizes, read_share, locality, ordered_share),
                (outstanding, rate_mops, ops),
                (slots, hot, streams, stream_slots),
                start_ns,
            )| {
                // Closed loop: more slots than a quarter of the operations outstanding.
                let slots = slots.max(outstanding / 4 + 1);
                LoadStore {
                    sizes,
                    read_share,
                    outstanding,
                    rate_mops,
                    ops: Some(ops),
                    locality,
                    hot_slots: hot.min(slots),
                    slots,
                    ordered_share,
                    streams,
                    stream_slots,
                    start_ns,
                    ..LoadStore::default()
                }
            },
        )
}

fn config() -> ProptestConfig {
    // The defaults honour PROPTEST_CASES (256 when unset) and PROPTEST_RNG_SEED.
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(0x88B5);
    }
    if std::env::var_os("PROPTEST_MAX_SHRINK_TIME").is_none() {
        // A failing case shrinks for at most 10 s.
        config.max_shrink_time = 10_000;
    }
    config.failure_persistence = Some(Box::new(FileFailurePersistence::Direct(
        "proptest-regressions/load_store.txt",
    )));
    config
}

proptest! {
    #![proptest_config(config())]

    /// Without faults every operation completes OK and memory ends as the reference says:
    /// nothing corrupted, nothing stray, every load (on an ordered stream's own slots, every
    /// load checked against the stores issued before it) returning what it must.
    #[test]
    fn a_fault_free_run_is_intact(w in load_store(), ports in 1u8..=2) {
        let s = back_to_back(ports, w);
        prop_assert_eq!(s.validate(), Ok(()));
        let r = run(&s);
        prop_assert_eq!(r.integrity.bytes_stray, 0, "{:?}", r.integrity.examples);
        prop_assert_eq!(r.integrity.bytes_mismatched, 0, "{:?}", r.integrity.examples);
        prop_assert_eq!(r.integrity.loads_mismatched, 0, "{:?}", r.integrity.examples);
        prop_assert_eq!(r.ops.lost, 0);
        prop_assert_eq!(r.ops.issued, r.ops.completed);
        prop_assert_eq!(r.ops.completed, r.ops.completed_ok);
        prop_assert!(r.data_intact && r.pass, "{:?}", r.failures);
    }
}

/// The case found first: 300 ordered streams of 65536 slots each, every operation on them. A
/// stream slot's number is past 2^20, and must still find its way back to its stream.
#[test]
fn ordered_streams_with_many_slots_are_intact() {
    let s = back_to_back(
        1,
        LoadStore {
            ordered_share: 1.0,
            streams: 300,
            stream_slots: 65536,
            ops: Some(200),
            ..LoadStore::default()
        },
    );
    let r = run(&s);
    assert_eq!(r.integrity.bytes_stray, 0, "{:?}", r.integrity.examples);
    assert!(r.integrity.loads_checked > 0 && r.integrity.writes_ok > 0);
    assert!(r.data_intact && r.pass, "{:?}", r.failures);
}

/// Ordered streams as many as a u32 holds, of 65536 slots each, need more memory than a GPU
/// has: refused, naming the workload and the figures, not overflowing.
#[test]
fn stream_slots_beyond_memory_are_refused() {
    let s = back_to_back(
        1,
        LoadStore {
            ordered_share: 1.0,
            streams: u32::MAX,
            stream_slots: 65536,
            ops: Some(1),
            ..LoadStore::default()
        },
    );
    let e = s.validate().expect_err("refused");
    assert_eq!(e.key, "traffic.0");
    assert!(
        e.reason.contains("endpoint.global_bytes") && e.reason.contains("streams x stream_slots"),
        "{e}"
    );
}

/// An open-loop rate so slow that its first arrival is due long after the run ends (1e-15
/// million operations per second: one per 1e9 s) issues nothing, rather than everything at once.
#[test]
fn an_arrival_due_after_the_run_never_comes() {
    for rate in [1e-15, 1e-300, f64::from_bits(1)] {
        let mut s = back_to_back(
            1,
            LoadStore {
                rate_mops: Some(rate),
                ops: Some(19),
                ..LoadStore::default()
            },
        );
        s.duration_ns = Some(100_000);
        let r = run(&s);
        assert_eq!(r.ops.issued, 0, "rate_mops = {rate:e}");
        assert!(r.pass, "{:?}", r.failures);
    }
    // Slow but within the run: 1 operation per microsecond per GPU for 200 us.
    let mut s = back_to_back(
        1,
        LoadStore {
            rate_mops: Some(1.0),
            ..LoadStore::default()
        },
    );
    s.duration_ns = Some(200_000);
    let r = run(&s);
    assert!((250..=550).contains(&r.ops.issued), "{}", r.ops.issued);
    assert!(r.pass, "{:?}", r.failures);
}

/// What a scenario refuses, and the words it refuses it with: (key, words the reason has).
fn refused(s: &Scenario) -> (String, String) {
    let e = s.validate().expect_err("refused");
    (e.key, e.reason)
}

/// Every float key of the scenario is refused with its value as given, whatever the value.
#[test]
fn float_values_are_named_as_given() {
    let ls = |f: &dyn Fn(&mut LoadStore)| {
        let mut w = LoadStore {
            ops: Some(1),
            ..LoadStore::default()
        };
        f(&mut w);
        back_to_back(1, w)
    };
    let link = |f: &dyn Fn(&mut Scenario)| {
        let mut s = ls(&|_| {});
        f(&mut s);
        s
    };
    for (s, key, value) in [
        (
            link(&|s| s.link.rate_gbps = f64::NAN),
            "link.rate_gbps",
            "NaN",
        ),
        (
            link(&|s| s.link.rate_gbps = f64::INFINITY),
            "link.rate_gbps",
            "inf",
        ),
        (
            link(&|s| s.link.rate_gbps = -400.0),
            "link.rate_gbps",
            "-400",
        ),
        (link(&|s| s.link.cable_m = 1e300), "link.cable_m", "1e300"),
        (
            link(&|s| s.link.propagation_ns = Some(-1e-20)),
            "link.propagation_ns",
            "-1e-20",
        ),
        (link(&|s| s.link.ber = 1e300), "link.ber", "1e300"),
        (link(&|s| s.link.loss = -0.5), "link.loss", "-0.5"),
        (
            link(&|s| s.link.control_loss = f64::NEG_INFINITY),
            "link.control_loss",
            "-inf",
        ),
        (link(&|s| s.link.duplicate = 2.0), "link.duplicate", "2"),
        (
            ls(&|w| w.rate_mops = Some(f64::NAN)),
            "traffic.0.rate_mops",
            "NaN",
        ),
        (
            ls(&|w| w.rate_mops = Some(-400.0)),
            "traffic.0.rate_mops",
            "-400",
        ),
        (
            ls(&|w| w.rate_mops = Some(1e7)),
            "traffic.0.rate_mops",
            "10000000",
        ),
        (ls(&|w| w.read_share = 1.5), "traffic.0.read_share", "1.5"),
        (ls(&|w| w.locality = f64::NAN), "traffic.0.locality", "NaN"),
        (
            ls(&|w| w.ordered_share = -1.0),
            "traffic.0.ordered_share",
            "-1",
        ),
        (
            ls(&|w| w.sizes[0].weight = -400.0),
            "traffic.0.sizes.0.weight",
            "-400",
        ),
        (
            ls(&|w| w.sizes[0].weight = f64::INFINITY),
            "traffic.0.sizes.0.weight",
            "inf",
        ),
    ] {
        let (k, reason) = refused(&s);
        assert_eq!(k, key, "{reason}");
        assert!(
            reason.starts_with(&format!("{value} is not ")),
            "{key}: {reason}"
        );
        assert!(!reason.contains("= 0"), "{key}: {reason}");
    }
    // Two probabilities too many together: both named, and their sum.
    let (k, reason) = refused(&link(&|s| {
        s.link.loss = 0.75;
        s.link.drop = 0.5;
    }));
    assert_eq!(k, "link.drop");
    assert!(
        reason.contains("link.loss = 0.75") && reason.contains("link.drop = 0.5"),
        "{reason}"
    );
}

/// Size weights are shares of their sum: a sum past the largest float would make every share
/// 0 and every operation the last size, so it is refused.
#[test]
fn size_weights_that_add_up_past_every_number_are_refused() {
    let s = back_to_back(
        1,
        LoadStore {
            sizes: vec![
                SizeWeight {
                    bytes: 8,
                    weight: 1e308,
                },
                SizeWeight {
                    bytes: 256,
                    weight: 1e308,
                },
            ],
            ops: Some(1),
            ..LoadStore::default()
        },
    );
    let (k, reason) = refused(&s);
    assert_eq!(k, "traffic.0.sizes");
    assert!(reason.contains("add up to inf"), "{reason}");
}

/// A two-tier topology of more than 64 spines per plane gives a leaf forwarding entries of
/// more than 64 ports, which a switch refuses: the scenario check says so, naming the key.
#[test]
fn more_spines_than_a_forwarding_entry_holds_are_refused() {
    let two_tier = |leaves: u16, spines: u16| {
        let mut s = Scenario {
            topology: Topology {
                kind: TopologyKind::TwoTier,
                gpus: 8,
                stacks: 1,
                ports_per_stack: 1,
                leaves,
                spines,
                ..Topology::default()
            },
            ..Scenario::default()
        };
        s.metrics.sample_ns = 0;
        s
    };
    let (k, reason) = refused(&two_tier(2, 1020));
    assert_eq!(k, "topology.spines");
    assert!(
        reason.starts_with("1020 spines") && reason.contains("at most 64"),
        "{reason}"
    );
    let (k, reason) = refused(&two_tier(2, 65));
    assert_eq!(k, "topology.spines", "{reason}");
    assert_eq!(two_tier(2, 64).validate(), Ok(()));
    // One leaf has no GPU under another leaf, and no entry over its up-ports.
    assert_eq!(two_tier(1, 1000).validate(), Ok(()));
}

/// A background load-store beside one of as many operations as a u64 holds: the memory
/// estimate saturates instead of overflowing.
#[test]
fn the_memory_estimate_takes_every_count_of_operations() {
    let mut s = back_to_back(1, LoadStore::default());
    s.traffic.push(Workload::LoadStore(LoadStore {
        ops: Some(u64::MAX),
        outstanding: 1,
        ..LoadStore::default()
    }));
    assert_eq!(s.validate(), Ok(()));
    assert!(s.memory_estimate().bytes > 0);
}

/// Topology values out of range are refused with their figures, not only the rule.
#[test]
fn topology_values_are_refused_with_their_figures() {
    let topology = |f: &dyn Fn(&mut Topology)| {
        let mut s = Scenario::default();
        s.topology.kind = TopologyKind::TwoTier;
        f(&mut s.topology);
        s
    };
    for (s, key, says) in [
        (
            topology(&|t| t.stacks = 17),
            "topology.stacks",
            "17 is not in 1..=16",
        ),
        (
            topology(&|t| t.ports_per_stack = 0),
            "topology.ports_per_stack",
            "0 is not in 1..=16",
        ),
        (
            topology(&|t| t.leaves = 9),
            "topology.leaves",
            "9 is not in 1..=gpus (1..=8)",
        ),
        (
            topology(&|t| {
                t.gpus = 1024;
                t.leaves = 1000;
                t.spines = 20;
                t.stacks = 16;
                t.ports_per_stack = 16;
            }),
            "topology.leaves",
            "256 planes of 1000 leaves and 20 spines make 261120 switches",
        ),
        (
            topology(&|t| {
                t.leaves = 1;
                t.spines = 1020;
            }),
            "topology.spines",
            "1020 spines give a leaf 1028 ports",
        ),
    ] {
        let (k, reason) = refused(&s);
        assert_eq!(k, key, "{reason}");
        assert!(reason.starts_with(says), "{key}: {reason}");
    }
}

//! The litmus catalogue (fabric/litmus/) on the fabric: every test read, run many times with its
//! agents' starts spread over a jitter window, on a clean fabric and on one with bit errors, and
//! never ending in a state its test forbids. Each test's histogram is printed as litmus7 prints
//! one (`cargo test -p ethlink-fabric --test litmus -- --nocapture`).

use std::path::PathBuf;

use ethlink_fabric::Scenario;
use ethlink_fabric::litmus::Litmus;
use ethlink_fabric::run_litmus as run;
use ethlink_fabric::scenario::{Outage, OutageTarget, Topology, TopologyKind};

fn catalogue() -> Vec<(String, Litmus)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("litmus");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = e.expect("a directory entry").path();
        if path.extension().and_then(|x| x.to_str()) != Some("toml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable");
        let t = Litmus::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        out.push((path.display().to_string(), t));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// 5 GPUs of 2 ports on 2 single-tier planes.
fn fabric(ber: f64) -> Scenario {
    let mut s = Scenario {
        topology: Topology {
            kind: TopologyKind::SingleTier,
            gpus: 5,
            stacks: 1,
            ports_per_stack: 2,
            ..Topology::default()
        },
        traffic: Vec::new(),
        ..Scenario::default()
    };
    s.link.ber = ber;
    s.metrics.sample_ns = 0;
    s
}

#[test]
fn the_catalogue_reads_and_names_each_test_once() {
    let c = catalogue();
    assert!(c.len() >= 39, "{} tests", c.len());
    let mut names: Vec<&str> = c.iter().map(|(_, t)| t.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), c.len(), "a name used twice");
    for (path, t) in &c {
        assert!(
            path.ends_with(&format!("{}.toml", t.name)),
            "{path} names its test {}",
            t.name
        );
        assert!(
            !t.forbidden.is_empty() || !t.allowed.is_empty(),
            "{path} states no outcome"
        );
    }
}

#[test]
fn no_test_of_the_catalogue_ever_ends_in_a_forbidden_state() {
    for (ber, seed) in [(0.0, 1u64), (1e-6, 2)] {
        for (path, t) in catalogue() {
            let mut s = fabric(ber);
            s.seed = seed;
            let r = run(&t, &s, 150, 1_500).unwrap_or_else(|e| panic!("{path}: {e}"));
            println!("{}", r.histogram.render(&t));
            assert_eq!(r.failed, 0, "{path}: iterations with an error status");
            assert_eq!(r.histogram.runs(), 150, "{path}");
            assert_eq!(
                r.histogram.forbidden_seen(&t),
                0,
                "{path} (BER {ber}):\n{}",
                r.histogram.render(&t)
            );
            assert!(r.report.pass, "{path}: {:?}", r.report.failures);
        }
    }
}

/// A requester that issues the operations of its ordered streams as unordered ones (EP-4-1
/// broken) lets them take different ports: the coherence tests of one stream catch it.
#[test]
fn a_requester_that_does_not_pin_its_streams_is_caught() {
    use ethlink_fabric::litmus::Weakening;
    use ethlink_fabric::run_litmus_weakened as run_weakened;
    let mut caught = Vec::new();
    for (path, t) in catalogue()
        .into_iter()
        .filter(|(_, t)| t.name.ends_with("+stream"))
    {
        let r = run_weakened(
            &t,
            &fabric(0.0),
            150,
            1_500,
            Some(Weakening::StreamsUnpinned),
        )
        .unwrap_or_else(|e| panic!("{path}: {e}"));
        let bad = r.histogram.forbidden_seen(&t);
        if bad > 0 {
            println!("{}", r.histogram.render(&t));
            caught.push(t.name.clone());
        }
    }
    for name in ["CoWW+stream", "CoWR+stream", "CoRW+stream"] {
        assert!(
            caught.iter().any(|c| c == name),
            "{name} missed it: {caught:?}"
        );
    }
}

/// Across cable cuts: plane 0 is cut three times while the tests run; operations on it are
/// retried on the other plane (TXN-5-6, EP-9-2), and no test reaches a forbidden state.
#[test]
fn across_cable_cuts_no_test_ends_in_a_forbidden_state() {
    let mut s = fabric(0.0);
    s.seed = 5;
    s.outages = (0..3u64)
        .map(|k| Outage {
            what: OutageTarget::Plane { plane: 0 },
            start_ns: 20_000 + k * 150_000,
            duration_ns: Some(40_000),
            blackout: false,
            trickle: 0,
        })
        .collect();
    let mut retried = 0;
    for (path, t) in catalogue() {
        let r = run(&t, &s, 100, 1_500).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(
            r.histogram.forbidden_seen(&t),
            0,
            "{path}:\n{}",
            r.histogram.render(&t)
        );
        retried += r.report.endpoints.retries + r.report.endpoints.moved;
        println!("{path}: {} runs, {} left out", r.histogram.runs(), r.failed);
    }
    assert!(
        retried > 0,
        "no operation was retried: the cuts missed the tests"
    );
}

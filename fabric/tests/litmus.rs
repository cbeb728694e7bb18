//! The litmus catalogue (fabric/litmus/) against the EthLink 1.3 ordering model and on the
//! fabric: every test read; its `forbidden` states forbidden and its `allowed` states allowed by
//! the model ([`Litmus::model_outcomes`]); run many times with its agents' starts spread over a
//! jitter window, on a clean fabric and on one with bit errors, never ending in a state its test
//! forbids nor in one the model does not allow; across cable cuts and links that come back,
//! never in a forbidden state; and deliberately weakened ordering engines caught. Each test's
//! histogram is printed as litmus7 prints one (`cargo test -p ethlink-fabric --test litmus --
//! --nocapture`).
//!
//! The fabric: 5 GPUs of 2 stacks x 2 ports on 4 single-tier planes. The tests name ports 0, 1
//! and 2 only; port 3 (plane 3) is the one the cuts take down: an operation put on a port leaves
//! it when the port goes down (EP-4-6), and the order a test asks of that port would then no
//! longer be the order the model judges.

use std::collections::BTreeSet;
use std::path::PathBuf;

use ethlink_fabric::Scenario;
use ethlink_fabric::litmus::{Litmus, Op, Outcome, Via, Weakening};
use ethlink_fabric::run_litmus as run;
use ethlink_fabric::run_litmus_weakened as run_weakened;
use ethlink_fabric::scenario::{Outage, OutageTarget, Topology, TopologyKind};

/// Iterations of each test on a clean fabric, with bit errors, across cuts and across links
/// that fail back (the whole catalogue runs in under a minute of a debug build on 2 cores;
/// `ethlink litmus` runs more).
const CLEAN: u32 = 50;
const ERRORS: u32 = 30;
const CUTS: u32 = 30;
const FAILBACK: u32 = 25;
/// Iterations of each `+cut` test across many cuts.
const MANY_CUTS: u32 = 400;
/// The jitter window, ns.
const JITTER: u64 = 1_500;
/// The plane (and GPU port) the cuts take down.
const CUT_PORT: u16 = 3;

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

/// 5 GPUs of 2 stacks x 2 ports on 4 single-tier planes.
fn fabric(ber: f64, seed: u64) -> Scenario {
    let mut s = Scenario {
        topology: Topology {
            kind: TopologyKind::SingleTier,
            gpus: 5,
            stacks: 2,
            ports_per_stack: 2,
            ..Topology::default()
        },
        traffic: Vec::new(),
        ..Scenario::default()
    };
    s.link.ber = ber;
    s.metrics.sample_ns = 0;
    s.seed = seed;
    s
}

/// The ports a test names.
fn ports(t: &Litmus) -> BTreeSet<u16> {
    let mut out = BTreeSet::new();
    for op in t.agents.iter().flat_map(|a| &a.ops) {
        if let Op::Store { via, .. }
        | Op::Load { via, .. }
        | Op::FetchAdd { via, .. }
        | Op::Swap { via, .. }
        | Op::RFence { via, .. } = *op
            && let Via::Port(p) = via
        {
            out.insert(p);
        }
    }
    out
}

/// Each test with the final states the model allows it.
fn judged() -> Vec<(String, Litmus, BTreeSet<Outcome>)> {
    catalogue()
        .into_iter()
        .map(|(path, t)| {
            let m = t
                .model_outcomes()
                .unwrap_or_else(|| panic!("{path}: too many executions to judge"));
            (path, t, m)
        })
        .collect()
}

//= docs/spec/transaction.md#4-ordering
//= type=test
//# TXN-4-13 (order) The union of ob, rf, co and fr MUST be acyclic. Every outcome that satisfies TXN-4-8
//# to TXN-4-13 is allowed; every other is forbidden.
#[test]
fn the_catalogue_reads_and_says_what_the_model_says() {
    let c = judged();
    assert!(c.len() >= 64, "{} tests", c.len());
    let mut names: Vec<&str> = c.iter().map(|(_, t, _)| t.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), c.len(), "a name used twice");
    let mut with_forbidden = 0;
    for (path, t, model) in &c {
        assert!(
            path.ends_with(&format!("{}.toml", t.name)),
            "{path} names its test {}",
            t.name
        );
        assert!(
            !t.forbidden.is_empty() || !t.allowed.is_empty(),
            "{path} states no outcome"
        );
        with_forbidden += usize::from(!t.forbidden.is_empty());
        for f in &t.forbidden {
            let allowed: Vec<String> = model
                .iter()
                .filter(|o| f.holds(o))
                .map(|o| t.show(o))
                .collect();
            assert!(
                allowed.is_empty(),
                "{path}: forbidden ({}) is allowed by the model: {allowed:?}",
                f.text
            );
        }
        for a in &t.allowed {
            assert!(
                model.iter().any(|o| a.holds(o)),
                "{path}: allowed ({}) is forbidden by the model",
                a.text
            );
        }
        assert!(
            !ports(t).contains(&CUT_PORT),
            "{path} names port {CUT_PORT}, the one the cuts take down"
        );
    }
    assert!(
        with_forbidden * 2 > c.len(),
        "{with_forbidden} with a forbidden state"
    );
}

/// Runs the catalogue on `s`, `iterations` times each: no forbidden state, no state outside the
/// model, no iteration left out, and the data check passes.
fn clean_runs(s: &Scenario, iterations: u32) {
    let mut seen_allowed = 0;
    let mut allowed = 0;
    for (path, t, model) in judged() {
        let r = run(&t, s, iterations, JITTER).unwrap_or_else(|e| panic!("{path}: {e}"));
        println!("{}", r.histogram.render(&t));
        assert_eq!(r.failed, 0, "{path}: iterations with an error status");
        assert_eq!(r.histogram.runs(), u64::from(iterations), "{path}");
        assert_eq!(
            r.histogram.forbidden_seen(&t),
            0,
            "{path} (BER {}):\n{}",
            s.link.ber,
            r.histogram.render(&t)
        );
        for o in r.histogram.counts.keys() {
            assert!(
                model.contains(o),
                "{path} ended in a state the model forbids: {}\n{}",
                t.show(o),
                r.histogram.render(&t)
            );
        }
        for a in &t.allowed {
            allowed += 1;
            seen_allowed += usize::from(r.histogram.counts.keys().any(|o| a.holds(o)));
        }
        assert!(r.report.pass, "{path}: {:?}", r.report.failures);
    }
    println!("allowed states seen: {seen_allowed} of {allowed}");
}

#[test]
fn on_a_clean_fabric_no_test_ends_outside_the_model() {
    clean_runs(&fabric(0.0, 1), CLEAN);
}

#[test]
fn with_bit_errors_no_test_ends_outside_the_model() {
    clean_runs(&fabric(1e-6, 2), ERRORS);
}

/// Cuts of plane [`CUT_PORT`]: `n` of `dur_ns` each, one every `every_ns` from 2 us on.
fn plane_cuts(n: u64, every_ns: u64, dur_ns: u64) -> Vec<Outage> {
    (0..n)
        .map(|k| Outage {
            what: OutageTarget::Plane { plane: CUT_PORT },
            start_ns: 2_000 + k * every_ns,
            duration_ns: Some(dur_ns),
            blackout: false,
            trickle: 0,
        })
        .collect()
}

/// Runs the tests `pick` chooses on `s` (with outages), `iterations` times each: no forbidden
/// state. Returns the operations retried or moved to another port and the iterations left out
/// (an operation ended with an error status), in all.
fn runs_across(
    s: &Scenario,
    iterations: u32,
    pick: impl Fn(&Litmus) -> bool,
    show: bool,
) -> (u64, u64) {
    let (mut moved, mut left_out) = (0, 0);
    for (path, t) in catalogue().into_iter().filter(|(_, t)| pick(t)) {
        let r = run(&t, s, iterations, JITTER).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(
            r.histogram.forbidden_seen(&t),
            0,
            "{path}:\n{}",
            r.histogram.render(&t)
        );
        let m = r.report.endpoints.retries + r.report.endpoints.moved;
        moved += m;
        left_out += r.failed;
        if show {
            println!("{}", r.histogram.render(&t));
        }
        println!(
            "{path}: {} runs, {} left out, {m} operations retried or moved",
            r.histogram.runs(),
            r.failed
        );
    }
    (moved, left_out)
}

/// Across cable cuts: plane 3 is cut 20 times while each test runs; the operations it carried
/// are retried or moved to the other planes (TXN-5-2, TXN-5-3, EP-9-2), stores, RDMA writes and
/// atomics of unknown fate are not sent again (TXN-5-1: their iterations are left out), and no
/// test reaches a forbidden state.
#[test]
fn across_cable_cuts_no_test_ends_in_a_forbidden_state() {
    let mut s = fabric(0.0, 5);
    s.outages = plane_cuts(20, 6_000, 1_000);
    let (moved, left_out) = runs_across(&s, CUTS, |_| true, false);
    println!("{moved} operations retried or moved, {left_out} iterations left out");
    assert!(
        moved > 0,
        "no operation was retried: the cuts missed the tests"
    );
}

/// Across links that go down and come back: port 3 of the agents' GPUs 0 and 2 fails and
/// fails back, one after the other, so that streams are pinned anew away from it and back onto
/// it (EP-4-3), and operations the port held are moved (TXN-5-2).
#[test]
fn across_links_that_fail_back_no_test_ends_in_a_forbidden_state() {
    let mut s = fabric(0.0, 6);
    s.outages = (0..8u64)
        .map(|k| Outage {
            what: OutageTarget::Link {
                gpu: if k % 2 == 0 { 0 } else { 2 },
                port: CUT_PORT,
            },
            start_ns: 3_000 + k * 12_000,
            duration_ns: Some(4_000),
            blackout: false,
            trickle: 0,
        })
        .collect();
    let (moved, left_out) = runs_across(&s, FAILBACK, |_| true, false);
    println!("{moved} operations retried or moved, {left_out} iterations left out");
    assert!(
        moved > 0,
        "no operation was retried: the outages missed the tests"
    );
}

/// The `+cut` tests (S+stream+wait+cut, CoRW+rdma+wait+cut, CoRW+atomic+wait+cut) are written
/// to be run across a retry: besides the two runs above, this one runs them 400 times each
/// while plane 3 is cut every 6 us, so that some of their loads are sent again and some of
/// their writes end FATE_UNKNOWN; a write sent again after it may have been performed would
/// reach their forbidden states.
//= docs/spec/transaction.md#5-operations-that-can-no-longer-complete
//= type=test
//# TXN-5-1 An operation is **repeatable** when performing it again cannot change memory: loads,
//# RDMA reads, Fences and FENCE requests. Stores, RDMA writes and atomics are not: only a
//# repeatable operation is ever sent again after an attempt that may have been performed (a frame
//# of unknown fate, a passed deadline). (1.3: 1.2 counted stores and RDMA writes as idempotent and
//# sent them again. A second copy of a store, performed after other agents had seen the first and
//# written the same bytes, would undo their writes: a store x = 1 and a flag are performed, a
//# consumer sees the flag and writes x = 2, and the retry writes x = 1 again, against TXN-4-9.)
#[test]
fn the_cut_tests_across_many_cuts_never_end_in_a_forbidden_state() {
    let mut s = fabric(0.0, 8);
    s.outages = plane_cuts(250, 6_000, 1_000);
    let (moved, left_out) = runs_across(&s, MANY_CUTS, |t| t.name.ends_with("+cut"), true);
    println!("+cut tests: {moved} operations retried or moved, {left_out} iterations left out");
    assert!(moved > 0, "the cuts missed the +cut tests");
    assert!(
        left_out > 0,
        "no write of the +cut tests ended of unknown fate"
    );
}

/// Runs the tests `pick` chooses with `weaken`; returns the names of those that reached a
/// forbidden state, printing their histograms.
fn caught(weaken: Weakening, pick: impl Fn(&Litmus) -> bool) -> Vec<String> {
    let mut caught = Vec::new();
    for (path, t) in catalogue().into_iter().filter(|(_, t)| pick(t)) {
        let r = run_weakened(&t, &fabric(0.0, 7), 60, JITTER, Some(weaken))
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        if r.histogram.forbidden_seen(&t) > 0 {
            println!("{weaken:?}:\n{}", r.histogram.render(&t));
            caught.push(t.name.clone());
        }
    }
    println!("{weaken:?} caught by {} tests: {caught:?}", caught.len());
    caught
}

fn assert_caught(caught: &[String], names: &[&str]) {
    for name in names {
        assert!(
            caught.iter().any(|c| c == name),
            "{name} missed it: {caught:?}"
        );
    }
}

/// A requester that issues the operations of its ordered streams as unordered ones (EP-4-1
/// broken) lets them take different ports: the coherence tests of one stream catch it.
#[test]
fn a_requester_that_does_not_pin_its_streams_is_caught() {
    let c = caught(Weakening::StreamsUnpinned, |t| t.name.contains("+stream"));
    assert_caught(&c, &["CoWW+stream", "CoWR+stream", "CoRW+stream"]);
}

/// A requester that sends a test's `port P` operations, and its FENCE requests, on ports of its
/// own choosing (EP-4-6 broken) splits what a FENCE should order over several ports. The ports
/// of an idle fabric deliver at one pace, so the split rarely shows.
#[test]
fn a_requester_that_ignores_the_port_named_is_caught() {
    let c = caught(Weakening::PortsIgnored, |t| t.name.ends_with("+rfences"));
    assert_caught(&c, &["CoRW+rfences"]);
}

/// A target that performs the later of two requests of one path first where TXN-4-1 orders
/// them, and one that lets a request overtake a FENCE request of its port (TXN-4-6), as the
/// runner imitates them ([`Weakening`]): the stream tests whose forbidden state rests on path
/// order alone catch the first, every `+rfences` test the second.
#[test]
fn a_target_that_breaks_path_or_fence_order_is_caught() {
    let c = caught(Weakening::TargetSwapsPath, |t| t.name.contains("+stream"));
    assert_caught(
        &c,
        &[
            "2+2W+stream",
            "CoRR+stream",
            "CoWW+stream",
            "CoWR+stream",
            "CoRW+stream",
        ],
    );
    let c = caught(Weakening::TargetIgnoresFences, |t| {
        t.name.ends_with("+rfences")
    });
    let all: Vec<String> = catalogue()
        .into_iter()
        .map(|(_, t)| t.name)
        .filter(|n| n.ends_with("+rfences"))
        .collect();
    assert_eq!(c, all, "the +rfences tests that missed it");
}

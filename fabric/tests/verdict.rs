//! The verdict of a run and the limits of a scenario: a run passes only when the fabric did its
//! job (data intact, every link up, no operation ending in error that the scenario does not
//! expect, not cut short), scenarios that cannot work are refused before they run, times are
//! bounded, and a run cut short by its time limit reports the writes still in flight as such.

use ethlink_fabric::report::Report;
use ethlink_fabric::scenario::{
    AllToAll, ErrorsExpected, LoadStore, MAX_TIME_NS, Outage, OutageTarget, Topology, TopologyKind,
    Workload,
};
use ethlink_fabric::{Fabric, Scenario};

/// 4 GPUs of 2 ports on 2 planes, loads and stores beside a small all-to-all.
fn small() -> Scenario {
    let mut s = Scenario {
        topology: Topology {
            kind: TopologyKind::SingleTier,
            gpus: 4,
            stacks: 1,
            ports_per_stack: 2,
            leaves: 2,
            spines: 2,
            ..Topology::default()
        },
        traffic: vec![
            Workload::LoadStore(LoadStore {
                ops: Some(100),
                ..LoadStore::default()
            }),
            Workload::AllToAll(AllToAll {
                bytes_per_pair: 32_768,
                iterations: 1,
                ..AllToAll::default()
            }),
        ],
        ..Scenario::default()
    };
    s.link.ber = 0.0;
    s.metrics.sample_ns = 0;
    s
}

/// Sets one time key of a scenario.
type SetTime = fn(&mut Scenario, u64);

fn run(s: &Scenario) -> Report {
    Fabric::new(s).expect("a valid scenario").run(None)
}

fn refused(s: &Scenario) -> String {
    match s.validate() {
        Ok(()) => panic!("accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_clean_run_passes_with_its_data_intact() {
    let r = run(&small());
    assert!(r.pass, "{:?}", r.failures);
    assert!(r.data_intact);
    assert!(r.failures.is_empty());
    assert_eq!(r.ops.completed_error, 0);
}

#[test]
fn every_operation_failing_on_a_hopeless_link_fails_the_run() {
    for tweak in [
        (|s: &mut Scenario| s.link.loss = 1.0) as fn(&mut Scenario),
        |s| s.link.ber = 1.0,
    ] {
        let mut s = small();
        tweak(&mut s);
        let r = run(&s);
        assert_eq!(r.ops.completed_ok, 0, "nothing gets through");
        assert!(r.ops.completed_error > 0);
        assert_eq!(r.ops.errors_unexplained, r.ops.completed_error);
        assert!(!r.pass, "a run where every operation failed passed");
        assert!(r.data_intact, "nothing was lost or corrupted");
        assert!(
            r.failures.iter().any(|f| f.contains("no outage explains")),
            "{:?}",
            r.failures
        );
    }
}

#[test]
fn links_that_never_come_up_fail_the_run() {
    let mut s = small();
    s.link.control_loss = 1.0;
    let r = run(&s);
    assert!(!r.all_links_up);
    assert!(!r.pass);
    assert!(
        r.failures.iter().any(|f| f.contains("never came up")),
        "{:?}",
        r.failures
    );
}

#[test]
fn a_scenario_may_allow_errors_or_forbid_them() {
    let mut s = small();
    s.link.loss = 1.0;
    s.expect.errors = ErrorsExpected::Allowed;
    let r = run(&s);
    assert!(r.ops.completed_error > 0);
    assert!(r.pass, "{:?}", r.failures);

    // Both planes fail for 200 us: operations then end in error, which the outages explain;
    // `none` refuses even those.
    let mut s = small();
    s.endpoint.op_timeout_ns = 20_000;
    s.endpoint.tag_quarantine_ns = 40_000;
    s.traffic = vec![
        Workload::LoadStore(LoadStore {
            ops: Some(600),
            outstanding: 16,
            ..LoadStore::default()
        }),
        Workload::AllToAll(AllToAll {
            bytes_per_pair: 100_000,
            iterations: 3,
            ..AllToAll::default()
        }),
    ];
    s.outages = (0..2)
        .map(|switch| Outage {
            what: OutageTarget::Switch { switch },
            start_ns: 3_000,
            duration_ns: Some(200_000),
            blackout: false,
            trickle: 0,
        })
        .collect();
    let r = run(&s);
    assert!(
        r.ops.completed_error > 0,
        "the outage hit nothing: {:?}",
        r.ops
    );
    assert_eq!(r.ops.errors_unexplained, 0);
    assert_eq!(r.ops.errors_explained, r.ops.completed_error);
    assert!(r.pass, "{:?}", r.failures);
    s.expect.errors = ErrorsExpected::None;
    let r = run(&s);
    assert!(!r.pass);
    assert!(r.data_intact);
}

#[test]
fn a_credit_buffer_smaller_than_one_frame_is_refused() {
    let mut s = small();
    s.link.rx_credits = Some(1);
    let e = refused(&s);
    assert!(e.starts_with("link.rx_credits: "), "{e}");
    assert!(e.contains("grant at least 144"), "{e}");
    // Enough credits of a small size is fine; too few of them is not.
    s.link.credit_size = 32;
    s.link.rx_credits = Some(288);
    s.validate()
        .expect("288 credits of 32 bytes hold 9216 bytes");
    s.link.rx_credits = Some(287);
    assert!(refused(&s).starts_with("link.rx_credits: "));
}

#[test]
fn a_segment_larger_than_the_frame_size_allows_is_refused() {
    let mut s = small();
    s.link.mfs = 4096;
    s.link.rx_credits = Some(64);
    s.endpoint.segment = 8192;
    s.endpoint.read_chunk = 8192;
    let e = refused(&s);
    assert!(e.starts_with("endpoint.segment: "), "{e}");
}

#[test]
fn times_beyond_the_limit_are_refused_with_the_limit() {
    let big = 1u64 << 62;
    let cases: Vec<(&str, SetTime)> = vec![
        ("duration_ns", |s, v| s.duration_ns = Some(v)),
        ("drain_ns", |s, v| s.drain_ns = Some(v)),
        ("time_limit_ns", |s, v| s.time_limit_ns = v),
        ("metrics.sample_ns", |s, v| s.metrics.sample_ns = v),
        ("link.replay_timer_ns", |s, v| s.link.replay_timer_ns = v),
        ("endpoint.op_timeout_ns", |s, v| {
            s.endpoint.op_timeout_ns = v
        }),
        ("switch.latency_ns", |s, v| s.switch.latency_ns = v),
        ("outages.0.start_ns", |s, v| {
            s.outages = vec![Outage {
                what: OutageTarget::Switch { switch: 0 },
                start_ns: v,
                duration_ns: None,
                blackout: false,
                trickle: 0,
            }];
        }),
        ("traffic.0.start_ns", |s, v| {
            if let Some(Workload::LoadStore(l)) = s.traffic.get_mut(0) {
                l.start_ns = v;
            }
        }),
    ];
    for (key, set) in cases {
        let mut s = small();
        set(&mut s, big);
        let e = refused(&s);
        assert!(e.starts_with(&format!("{key}: ")), "{key}: {e}");
        assert!(e.contains(&MAX_TIME_NS.to_string()), "{key}: {e}");
        let mut s = small();
        set(&mut s, MAX_TIME_NS);
        if let Err(e) = s.validate() {
            assert!(
                !e.reason.contains("largest time"),
                "{key} at the limit: {e}"
            );
        }
    }
}

#[test]
fn times_at_the_limit_keep_the_clock_going_forward() {
    // A sample interval, an outage start and a duration at the limit: the run ends when the
    // work is done, the outage never fires, and the series never runs backwards.
    let mut s = small();
    s.metrics.sample_ns = MAX_TIME_NS;
    s.outages = vec![Outage {
        what: OutageTarget::Switch { switch: 0 },
        start_ns: MAX_TIME_NS,
        duration_ns: Some(MAX_TIME_NS),
        blackout: false,
        trickle: 0,
    }];
    let r = run(&s);
    assert!(r.pass, "{:?}", r.failures);
    assert_eq!(r.sim.frames_cut, 0, "the outage fired");
    assert!(r.series.t_ns.windows(2).all(|w| w[0] <= w[1]));
    assert!(r.stop_ns >= r.start_ns && r.end_ns >= r.stop_ns);

    let mut s = small();
    s.stop_when_done = false;
    s.duration_ns = Some(MAX_TIME_NS);
    s.time_limit_ns = 50_000;
    let r = run(&s);
    assert!(r.time_limit_hit);
    assert!(
        r.stop_ns >= r.start_ns,
        "stop {} < start {}",
        r.stop_ns,
        r.start_ns
    );
}

#[test]
fn writes_cut_off_by_the_time_limit_are_in_flight_not_stray() {
    let mut s = small();
    s.time_limit_ns = 20_000;
    s.traffic = vec![Workload::AllToAll(AllToAll {
        bytes_per_pair: 1 << 20,
        iterations: 1,
        ..AllToAll::default()
    })];
    let r = run(&s);
    assert!(r.time_limit_hit);
    assert_eq!(r.integrity.bytes_stray, 0, "{:?}", r.integrity.examples);
    assert!(r.integrity.bytes_in_flight > 0);
    assert_eq!(r.ops.lost, 0, "cut off, not lost");
    assert_eq!(r.ops.cut_off, r.ops.issued - r.ops.completed);
    assert!(r.data_intact);
    assert!(!r.pass);
    assert!(
        r.failures.iter().any(|f| f.contains("time limit")),
        "{:?}",
        r.failures
    );
}

//! Frame lifetime on a degraded link (link.md LINK-3-18, endpoint.md Figure EP-F1): a cable that
//! lets a few DATA frames through after each pause makes every replay progress a little, so the
//! replay count never reaches `replay_count_max`. Without a bound on a frame's age (spec 1.2) a
//! frame waits in a replay buffer longer than the requester's `op_timeout`: past the
//! `frame_lifetime` that the retry and tag rules rest on. (Under 1.2's retry rules the requester
//! sent the store again and the original landed after its retry, so that a load of an ordered
//! stream read a store older than one issued after it, in 3 of these 4 seeds; since 1.3 a store
//! is never sent again after its deadline, transaction.md TXN-5-1.) With `llr_max_age` the link
//! FLUSHes instead, no frame waits longer than `llr_max_age`, and the run passes.

use ethlink_fabric::report::Report;
use ethlink_fabric::scenario::{
    LoadStore, Outage, OutageTarget, SizeWeight, Topology, TopologyKind, Workload,
};
use ethlink_fabric::{Fabric, Scenario};

/// 4 GPUs of 2 ports on 2 planes; loads and stores on ordered streams with slots of their own
/// (every load checked against the stores issued before it on its stream, 32 outstanding per
/// GPU), while the cable of GPU 0's port 0 lets through only the first 2 DATA frames after each
/// pause of 1 us, from 20 us for 800 us.
fn trickling(llr_max_age_ns: u64, seed: u64) -> Scenario {
    let mut s = Scenario {
        seed,
        topology: Topology {
            kind: TopologyKind::SingleTier,
            gpus: 4,
            stacks: 1,
            ports_per_stack: 2,
            ..Topology::default()
        },
        traffic: vec![Workload::LoadStore(LoadStore {
            ops: Some(12_000),
            outstanding: 32,
            read_share: 0.5,
            ordered_share: 1.0,
            streams: 4,
            stream_slots: 8,
            sizes: vec![SizeWeight {
                bytes: 64,
                weight: 1.0,
            }],
            ..LoadStore::default()
        })],
        outages: vec![Outage {
            what: OutageTarget::Link { gpu: 0, port: 0 },
            start_ns: 20_000,
            duration_ns: Some(800_000),
            blackout: false,
            trickle: 2,
        }],
        ..Scenario::default()
    };
    s.link.ber = 0.0;
    s.link.llr_max_age_ns = llr_max_age_ns;
    s.metrics.sample_ns = 0;
    s
}

const SEEDS: std::ops::RangeInclusive<u64> = 1..=4;

fn run(s: &Scenario) -> Report {
    Fabric::new(s).expect("a valid scenario").run(None)
}

#[test]
fn a_link_that_trickles_flushes_for_age_and_no_late_original_lands() {
    //= docs/spec/link.md#3-link-level-retry-transmit-side
    //= type=test
    //# LINK-3-18 When the oldest frame of its replay buffer was first sent `llr_max_age` ago,
    //# the TX MUST enter FLUSH (§6), whatever its replay count, and MUST NOT begin to send any
    //# copy of that frame or of a frame behind it afterwards.
    for seed in SEEDS {
        let s = trickling(25_000, seed);
        let r = run(&s);
        assert!(r.pass, "seed {seed}: {:?}", r.failures);
        assert!(
            r.links.flushes_aged > 0,
            "seed {seed}: the degraded link never FLUSHed for age: {:?}",
            r.links
        );
        assert!(
            (1..=s.link.llr_max_age_ns).contains(&r.links.replay_age_max_ns),
            "seed {seed}: a frame waited {} ns for its ACK",
            r.links.replay_age_max_ns
        );
        assert_eq!(r.integrity.loads_mismatched, 0, "seed {seed}");
    }
}

#[test]
fn without_a_bound_on_age_a_frame_outlives_the_requesters_deadline() {
    // Spec 1.2 had no `llr_max_age`: an age of 1 s is none within these runs.
    let mut outlived = Vec::new();
    for seed in SEEDS {
        let s = trickling(1_000_000_000, seed);
        let r = run(&s);
        assert_eq!(r.links.flushes_aged, 0, "seed {seed}");
        // A frame outlives the requester's deadline: the operation has ended (a store TIMEOUT,
        // never sent again since 1.3, TXN-3-7) or been sent again (a load) while its original
        // is still being replayed, past the `frame_lifetime` that TXN-5-7 and EP-5-8 rest on.
        if r.links.replay_age_max_ns > s.endpoint.op_timeout_ns {
            outlived.push(seed);
        }
        // Since 1.3 no store is sent again after its deadline (TXN-5-1), so the late originals
        // no longer overwrite a retry: what memory holds stays what the reference allows.
        assert_eq!(
            r.integrity.loads_mismatched, 0,
            "seed {seed}: {:?}",
            r.failures
        );
    }
    assert!(
        outlived.len() >= 3,
        "frames outlived op_timeout only in seeds {outlived:?}"
    );
}

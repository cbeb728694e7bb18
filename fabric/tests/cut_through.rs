//! Cut-through switches in a fabric (switch.md §6): the fabric shows a switch each long frame's
//! header before its end, the switch begins its copy early, and the copies of damaged frames
//! end with a stomped FCS on the next cable; nothing is lost, and the run is the same for the
//! same seed.

use std::cell::RefCell;
use std::rc::Rc;

use ethlink_fabric::report::Report;
use ethlink_fabric::scenario::{
    AllToAll, LoadStore, Outage, OutageTarget, SwitchMode, Topology, TopologyKind, Workload,
};
use ethlink_fabric::{End, Fabric, Scenario};
use ethlink_protocol::{FrameKind, fcs};

/// Four GPUs of two ports on two switch planes, 8 KiB RDMA segments beside loads and stores,
/// bit errors at `ber`, switches of `latency_ns` in `mode`.
fn scenario(mode: SwitchMode, latency_ns: u64, ber: f64) -> Scenario {
    let mut s = Scenario {
        topology: Topology {
            kind: TopologyKind::SingleTier,
            gpus: 4,
            stacks: 1,
            ports_per_stack: 2,
            ..Topology::default()
        },
        traffic: vec![
            Workload::LoadStore(LoadStore {
                ops: Some(400),
                outstanding: 4,
                ..LoadStore::default()
            }),
            Workload::AllToAll(AllToAll {
                bytes_per_pair: 400_000,
                iterations: 2,
                ..AllToAll::default()
            }),
        ],
        ..Scenario::default()
    };
    s.link.ber = ber;
    s.switch.mode = mode;
    s.switch.latency_ns = latency_ns;
    s.metrics.sample_ns = 0;
    s
}

fn assert_clean(r: &Report) {
    assert_eq!(r.ops.lost, 0, "operations lost");
    assert_eq!(r.ops.duplicated, 0, "operations completed twice");
    assert_eq!(r.ops.unexpected, 0);
    assert_eq!(r.ops.issued, r.ops.completed, "every operation completes");
    assert_eq!(r.integrity.bytes_mismatched, 0);
    assert!(r.integrity.writes_ok > 0);
}

#[test]
fn long_frames_leave_before_their_end_and_damaged_ones_are_stomped() {
    let s = scenario(SwitchMode::CutThrough, 60, 3e-7);
    let mut f = Fabric::new(&s).expect("valid");
    // The cable of GPU 1's port 0, to its switch: a capture of both directions.
    let cable = f.cable_of(End::Gpu { gpu: 1, port: 0 }).expect("cabled");
    let seen = Rc::new(RefCell::new((0u64, 0u64)));
    let sink = seen.clone();
    f.capture(
        cable,
        Box::new(move |fr| {
            if fr.kind == FrameKind::Data && matches!(fr.from, End::Switch { .. }) {
                let mut v = sink.borrow_mut();
                v.0 += 1;
                // The captured bytes are those the wire carried: a stomped copy ends with the
                // complement of its FCS.
                if fcs::is_stomped(fr.bytes) {
                    v.1 += 1;
                }
            }
        }),
    )
    .expect("a cable");
    let r = f.run(None);
    assert_clean(&r);
    let sw = &r.switch;
    assert!(sw.cut_through > 100, "{sw:?}");
    //= docs/spec/switch.md#6-latency-and-cut-through
    //= type=test
    //# SW-6-2 A switch that has begun to send a frame whose FCS then turns out bad (damaged, or
    //# stomped by the hop before) MUST end it with a stomped FCS (WIRE-2.5-4).
    assert!(sw.stomped > 0, "{sw:?}");
    assert!(sw.stomped < sw.cut_through);
    // Every stomped copy is taken back by its link and discarded by the next hop, unNACKed.
    assert_eq!(r.links.tx_stomped, sw.stomped);
    assert_eq!(r.links.rx_stomped, sw.stomped);
    let (data, stomped) = *seen.borrow();
    assert!(data > 0);
    let on_cable = f
        .gpu(1)
        .and_then(|g| g.link(0))
        .expect("GPU 1 port 0")
        .counters()
        .rx_stomped;
    assert_eq!(
        stomped, on_cable,
        "the capture shows what GPU 1's port 0 discarded"
    );
}

#[test]
fn the_same_seed_gives_the_same_run() {
    let s = scenario(SwitchMode::CutThrough, 60, 3e-7);
    let a = Fabric::new(&s).expect("valid").run(None);
    let b = Fabric::new(&s).expect("valid").run(None);
    assert!(a.switch.stomped > 0);
    assert!(
        a.without_wall() == b.without_wall(),
        "two runs of one seed differ"
    );
}

#[test]
fn store_and_forward_and_the_default_latency_never_cut_through() {
    for (mode, latency) in [
        (SwitchMode::StoreAndForward, 60),
        (SwitchMode::CutThrough, 250),
    ] {
        let r = Fabric::new(&scenario(mode, latency, 3e-7))
            .expect("valid")
            .run(None);
        assert_clean(&r);
        assert!(r.links.fcs_errors > 0, "the cables damage frames");
        //= docs/spec/switch.md#6-latency-and-cut-through
        //= type=test
        //# SW-6-6 A switch that does not announce CUT_THROUGH MUST check a frame's FCS before it
        //# begins to send it.
        assert_eq!((r.switch.cut_through, r.switch.stomped), (0, 0), "{mode:?}");
        assert_eq!(r.links.rx_stomped, 0);
    }
}

#[test]
fn a_cable_cut_under_cut_through_traffic_loses_no_write() {
    let mut s = scenario(SwitchMode::CutThrough, 60, 1e-7);
    s.outages = vec![Outage {
        what: OutageTarget::Link { gpu: 2, port: 1 },
        start_ns: 3_000,
        duration_ns: Some(4_000),
        blackout: false,
        trickle: 0,
    }];
    let r = Fabric::new(&s).expect("valid").run(None);
    assert_eq!(r.ops.duplicated, 0);
    assert_eq!(r.ops.unexpected, 0);
    assert_eq!(r.integrity.bytes_mismatched, 0);
    assert!(r.switch.cut_through > 0);
}

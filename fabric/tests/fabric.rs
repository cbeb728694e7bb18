//! Fabric runs end to end: small topologies, every workload, faults and outages. Each run checks
//! every GPU's memory against the reference of the writes that completed, and counts the
//! operations lost, duplicated or unexpected.

use ethlink_fabric::report::Report;
use ethlink_fabric::scenario::{
    AllToAll, Collective, EndpointParams, Incast, LeafUplinks, LoadStore, Outage, OutageTarget,
    Permutation, SendRecv, SizeWeight, Topology, TopologyKind, Workload,
};
use ethlink_fabric::{End, Fabric, Scenario};

/// A small scenario: `gpus` GPUs of one stack of `ports` ports, no bit errors, no time series.
fn small(kind: TopologyKind, gpus: u16, ports: u8) -> Scenario {
    let mut s = Scenario {
        topology: Topology {
            kind,
            gpus,
            stacks: 1,
            ports_per_stack: ports,
            leaves: 2,
            spines: 2,
            ..Topology::default()
        },
        traffic: Vec::new(),
        ..Scenario::default()
    };
    s.link.ber = 0.0;
    s.metrics.sample_ns = 0;
    s
}

fn ls(ops: u64, outstanding: u32) -> LoadStore {
    LoadStore {
        ops: Some(ops),
        outstanding,
        ..LoadStore::default()
    }
}

fn coll(sizes: &[u64], iterations: u32) -> Collective {
    Collective {
        sizes: sizes.to_vec(),
        iterations,
        ..Collective::default()
    }
}

fn run(s: &Scenario) -> Report {
    Fabric::new(s).expect("valid scenario").run(None)
}

/// Nothing lost, duplicated, unexpected or corrupted; every issued operation completed.
fn assert_clean(r: &Report) {
    assert_eq!(r.ops.lost, 0, "operations lost");
    assert_eq!(r.ops.duplicated, 0, "operations completed twice");
    assert_eq!(r.ops.unexpected, 0, "completions matching no operation");
    assert_eq!(r.ops.issued, r.ops.completed, "every operation completes");
    assert_eq!(
        r.integrity.bytes_mismatched, 0,
        "{:?}",
        r.integrity.examples
    );
    assert_eq!(r.integrity.bytes_stray, 0, "{:?}", r.integrity.examples);
    assert_eq!(
        r.integrity.loads_mismatched, 0,
        "{:?}",
        r.integrity.examples
    );
    assert!(r.pass);
}

/// As [`assert_clean`], and writes were checked.
fn assert_clean_writes(r: &Report) {
    assert_clean(r);
    assert!(r.integrity.writes_ok > 0, "writes were checked");
    assert!(r.integrity.bytes_checked > 0);
}

fn rows<'a>(r: &'a Report, name: &str) -> Vec<&'a ethlink_fabric::report::CollectiveRow> {
    r.collectives.iter().filter(|c| c.name == name).collect()
}

#[test]
fn back_to_back_runs_every_workload_clean() {
    let mut s = small(TopologyKind::BackToBack, 2, 2);
    s.traffic = vec![
        Workload::LoadStore(ls(300, 8)),
        Workload::AllToAll(AllToAll {
            bytes_per_pair: 40_000,
            iterations: 2,
            ..AllToAll::default()
        }),
        Workload::RingAllreduce(coll(&[100_000], 1)),
        Workload::HalvingDoublingAllreduce(coll(&[65_536], 1)),
        Workload::SendRecv(SendRecv {
            bytes: 30_000,
            microbatches: 3,
            ..SendRecv::default()
        }),
        Workload::Permutation(Permutation {
            bytes: 20_000,
            iterations: 2,
            ..Permutation::default()
        }),
    ];
    let r = run(&s);
    assert_clean_writes(&r);
    assert!(r.all_links_up);
    assert_eq!(r.switches, 0);
    assert_eq!(r.cables, 2);
    let load = r.kind("load").map_or(0, |k| k.issued);
    let store = r.kind("store").map_or(0, |k| k.issued);
    assert_eq!(load + store, 600, "300 operations from each GPU");
    assert!(r.integrity.loads_checked > 0);
    assert_eq!(rows(&r, "all_to_all")[0].count, 2);
    assert_eq!(rows(&r, "ring_allreduce")[0].count, 1);
    assert_eq!(rows(&r, "halving_doubling_allreduce")[0].count, 1);
    assert_eq!(rows(&r, "send_recv")[0].count, 1);
    assert_eq!(rows(&r, "permutation")[0].count, 2);
    // All-to-all: 2 instances x 2 writes; ring all-reduce on 2 GPUs: 2 steps x 2 writes;
    // halving-doubling: 2 steps x 2; send/recv: 3 microbatches x 1 stage; permutation 2 x 2.
    let writes = r.kind("rdma_write").map_or(0, |k| k.issued);
    assert_eq!(writes, 4 + 4 + 4 + 3 + 4);
}

#[test]
fn single_tier_runs_every_workload_clean_through_bit_errors() {
    let mut s = small(TopologyKind::SingleTier, 4, 2);
    // Enough bit errors that some frames fail their FCS and are replayed by the link.
    s.link.ber = 2e-7;
    s.traffic = vec![
        Workload::LoadStore(LoadStore {
            sizes: vec![
                SizeWeight {
                    bytes: 64,
                    weight: 3.0,
                },
                SizeWeight {
                    bytes: 256,
                    weight: 1.0,
                },
            ],
            locality: 0.5,
            ordered_share: 0.3,
            ..ls(200, 8)
        }),
        Workload::AllToAll(AllToAll {
            bytes_per_pair: 50_000,
            iterations: 2,
            ..AllToAll::default()
        }),
        Workload::RingAllreduce(coll(&[120_000], 1)),
        Workload::HalvingDoublingAllreduce(coll(&[100_000], 1)),
        Workload::AllGather(coll(&[80_000], 1)),
        Workload::ReduceScatter(coll(&[80_000], 1)),
        Workload::Incast(Incast {
            target: 2,
            bytes: 30_000,
            ..Incast::default()
        }),
        Workload::Permutation(Permutation {
            bytes: 30_000,
            ..Permutation::default()
        }),
        Workload::SendRecv(SendRecv {
            bytes: 20_000,
            microbatches: 2,
            ..SendRecv::default()
        }),
    ];
    let r = run(&s);
    assert_clean_writes(&r);
    assert!(r.sim.frames_damaged > 0, "the bit errors hit some frames");
    assert!(r.links.frames_replayed > 0, "damaged frames were replayed");
    assert!(r.links.nacks > 0);
    assert_eq!(r.switch.buffer_drops, 0);
    assert_eq!(r.switches, 2);
    for name in [
        "all_to_all",
        "ring_allreduce",
        "halving_doubling_allreduce",
        "all_gather",
        "reduce_scatter",
        "incast",
        "permutation",
        "send_recv",
    ] {
        let v = rows(&r, name);
        assert_eq!(v.len(), 1, "{name}");
        assert!(
            v[0].count >= 1 && v[0].time_ns > 0.0 && v[0].algbw_gbytes > 0.0,
            "{name}"
        );
        assert_eq!(v[0].errors, 0, "{name}");
    }
    // nccl-tests' bus bandwidth factors.
    let ring = rows(&r, "ring_allreduce")[0];
    assert!((ring.busbw_gbytes / ring.algbw_gbytes - 2.0 * 3.0 / 4.0).abs() < 1e-9);
    let ag = rows(&r, "all_gather")[0];
    assert!((ag.busbw_gbytes / ag.algbw_gbytes - 3.0 / 4.0).abs() < 1e-9);
    // Per GPU, stack and port loads add up.
    let t = &r.throughput;
    assert_eq!(t.ports.len(), 8);
    assert_eq!(t.stacks.len(), 4);
    assert_eq!(t.gpus.len(), 4);
    let ports: u64 = t.ports.iter().map(|p| p.tx_bytes).sum();
    let gpus: u64 = t.gpus.iter().map(|g| g.tx_bytes).sum();
    assert_eq!(ports, gpus);
    assert!(t.port_imbalance >= 1.0);
}

#[test]
fn two_tier_keeps_per_path_order_end_to_end() {
    // Two leaves and two spines per plane: frames between leaves take one of two spines, by
    // the switch's fixed per-path hash. Every operation goes on an ordered stream whose
    // operations all share one address per target, several outstanding at once: memory ends
    // with the store issued last, and every load sees exactly the stores issued before it,
    // only if the frames of each path arrive in the order they were sent.
    let mut s = small(TopologyKind::TwoTier, 4, 2);
    s.link.ber = 1e-7;
    s.traffic = vec![
        Workload::LoadStore(LoadStore {
            ordered_share: 1.0,
            streams: 2,
            stream_slots: 1,
            read_share: 0.3,
            ..ls(400, 16)
        }),
        Workload::Permutation(Permutation {
            bytes: 100_000,
            iterations: 2,
            ..Permutation::default()
        }),
    ];
    let r = run(&s);
    //= docs/spec/switch.md#3-order
    //= type=test
    //# SW-3-1 Frames received on one input port and VC and forwarded to one egress port MUST be
    //# handed to the egress port's link in the order they were received. With SW-2-1 and the
    //# links' own order (LINK-3-1), the frames of a path leave every switch in the order they
    //# entered it.
    assert_clean_writes(&r);
    assert!(r.integrity.loads_checked > 100, "loads were compared");
    assert_eq!(r.switches, 2 * (2 + 2));
    // Traffic between leaves crossed the spines.
    let spine_fwd: u64 = r
        .switch
        .switches
        .iter()
        .filter(|w| w.switch % 4 >= 2)
        .map(|w| w.forwarded)
        .sum();
    assert!(spine_fwd > 0, "no frame crossed a spine");
}

/// 16 GPUs of one port under 4 leaves and 4 spines, an all-to-all of 64 KiB per pair.
fn a2a16(uplinks: LeafUplinks) -> Scenario {
    let mut s = small(TopologyKind::TwoTier, 16, 1);
    s.topology.leaves = 4;
    s.topology.spines = 4;
    s.topology.leaf_uplinks = uplinks;
    s.traffic = vec![Workload::AllToAll(AllToAll {
        bytes_per_pair: 65_536,
        ..AllToAll::default()
    })];
    s
}

/// DATA frames each spine forwarded (switches 4..8 of the one plane).
fn spine_frames(r: &Report) -> Vec<u64> {
    let mut v: Vec<(u32, u64)> = r
        .switch
        .switches
        .iter()
        .filter(|w| w.switch >= 4)
        .map(|w| (w.switch, w.forwarded))
        .collect();
    v.sort_unstable();
    v.into_iter().map(|x| x.1).collect()
}

#[test]
fn leaves_route_each_destination_by_its_own_spine() {
    // Destination-mod-k: all traffic for GPU g crosses spine g mod 4, and in an all-to-all
    // every spine carries the same load; the per-path hash spreads it unevenly.
    let r = run(&a2a16(LeafUplinks::ByDestination));
    assert_clean_writes(&r);
    let by_dst = spine_frames(&r);
    assert_eq!(by_dst.len(), 4);
    assert!(by_dst[0] > 0);
    assert!(by_dst.iter().all(|&f| f == by_dst[0]), "{by_dst:?}");
    let r = run(&a2a16(LeafUplinks::ByPath));
    assert_clean_writes(&r);
    let by_path = spine_frames(&r);
    assert_eq!(by_path.iter().sum::<u64>(), by_dst.iter().sum::<u64>());
    assert!(by_path.iter().any(|&f| f != by_path[0]), "{by_path:?}");
}

#[test]
fn a_leaf_up_port_going_down_moves_its_destinations_to_the_other_spines() {
    // Leaf 0's up-port to spine 1 (its port 4 + 1) is down from 1 us to 20 us: the paths to
    // GPUs 1, 5, 9 and 13 leave leaf 0 by the other spines meanwhile (switch.md §2.3), and
    // every byte that arrives is intact. Spine 1 carries less than the others.
    let mut s = a2a16(LeafUplinks::ByDestination);
    s.outages = vec![Outage {
        what: OutageTarget::SwitchPort { switch: 0, port: 5 },
        start_ns: 1_000,
        duration_ns: Some(19_000),
        blackout: false,
        trickle: 0,
    }];
    let r = run(&s);
    assert_clean_writes(&r);
    let f = spine_frames(&r);
    assert!(f[1] < f[0] && f[1] < f[2] && f[1] < f[3], "{f:?}");
    // A frame the port held when it went down is lost (SW-7-3): its write ends TIMEOUT and is
    // not sent again (transaction.md TXN-5-1), so the spines carry no more frames than in a
    // clean run, and every error is explained by the outage.
    let clean: u64 = spine_frames(&run(&a2a16(LeafUplinks::ByDestination)))
        .iter()
        .sum();
    assert!(f.iter().sum::<u64>() <= clean);
    assert_eq!(r.ops.errors_unexplained, 0);
}

/// The report's totals count what the run did, and its loads name what they are the load of.
#[test]
fn the_report_counts_the_simulation_and_names_its_loads() {
    let mut s = small(TopologyKind::SingleTier, 4, 2);
    s.topology.stacks = 2;
    s.traffic = vec![
        Workload::LoadStore(ls(200, 4)),
        Workload::AllToAll(AllToAll {
            bytes_per_pair: 20_000,
            iterations: 1,
            ..AllToAll::default()
        }),
    ];
    let r = run(&s);
    assert_clean(&r);
    let sim = &r.sim;
    // Every frame-hop is an event's doing; DATA frames are some of the hops, and each one
    // delivered to a GPU crossed at least two cables (GPU to switch to GPU).
    assert!(sim.events > sim.frame_hops, "{sim:?}");
    assert!(sim.frame_hops > sim.data_frame_hops, "{sim:?}");
    assert!(sim.data_frames_delivered > 0, "{sim:?}");
    assert!(
        sim.data_frame_hops >= 2 * sim.data_frames_delivered,
        "{sim:?}"
    );
    let t = &r.throughput;
    assert_eq!(t.gpus.len(), 4);
    for (g, l) in t.gpus.iter().enumerate() {
        assert_eq!((usize::from(l.gpu), l.stack, l.port), (g, None, None));
    }
    assert_eq!(t.stacks.len(), 8);
    for (i, l) in t.stacks.iter().enumerate() {
        assert_eq!(
            (usize::from(l.gpu), l.stack, l.port),
            (i / 2, Some((i % 2) as u8), None)
        );
    }
    assert_eq!(t.ports.len(), 16);
    for (i, l) in t.ports.iter().enumerate() {
        assert_eq!(usize::from(l.gpu), i / 4);
        assert_eq!(l.stack, Some((i % 4 / 2) as u8));
        assert_eq!(l.port.map(usize::from), Some(i % 4));
    }
}

#[test]
fn same_seed_gives_the_same_report() {
    let mut s = small(TopologyKind::SingleTier, 4, 2);
    s.link.ber = 1e-7;
    s.metrics.sample_ns = 2_000;
    s.traffic = vec![
        Workload::LoadStore(LoadStore {
            rate_mops: Some(50.0),
            ops: Some(150),
            ..LoadStore::default()
        }),
        Workload::AllToAll(AllToAll {
            bytes_per_pair: 30_000,
            iterations: 1,
            ..AllToAll::default()
        }),
        Workload::Permutation(Permutation {
            bytes: 20_000,
            iterations: 2,
            ..Permutation::default()
        }),
    ];
    let a = run(&s);
    let b = run(&s);
    assert_clean_writes(&a);
    let ja = serde_json::to_string(&a.without_wall()).expect("json");
    let jb = serde_json::to_string(&b.without_wall()).expect("json");
    assert_eq!(ja, jb, "one seed, one report");
    assert!(!a.series.t_ns.is_empty());
    s.seed = 2;
    let c = run(&s);
    assert_clean_writes(&c);
    let jc = serde_json::to_string(&c.without_wall()).expect("json");
    assert_ne!(ja, jc, "another seed, another run");
    // The time series: one row per interval, one column per GPU port.
    let t = &a.series;
    assert_eq!(t.interval_ns, 2_000);
    assert!(t.t_ns.windows(2).all(|w| w[1] > w[0]));
    assert_eq!(t.port_utilisation.len(), t.t_ns.len());
    assert_eq!(t.gpu_utilisation.len(), t.t_ns.len());
    assert!(t.port_utilisation.iter().all(|row| row.len() == 8));
    assert!(
        t.port_utilisation
            .iter()
            .flatten()
            .all(|&u| (0.0..=1.000_001).contains(&u)),
        "a port is busy at most the whole interval"
    );
    assert!(t.port_utilisation.iter().flatten().any(|&u| u > 0.1));
    assert_eq!(t.ops_completed.iter().sum::<u64>(), a.ops.completed);
}

#[test]
fn a_64_byte_load_one_switch_hop_away_takes_under_a_microsecond() {
    let mut s = small(TopologyKind::SingleTier, 2, 2);
    s.traffic = vec![Workload::LoadStore(LoadStore {
        gpus: Some(vec![0]),
        targets: Some(vec![1]),
        read_share: 1.0,
        ..ls(1, 1)
    })];
    let r = run(&s);
    assert_clean(&r);
    let load = r.kind("load").expect("a load");
    assert_eq!(load.issued, 1);
    assert_eq!(load.by_status, vec![("OK".to_owned(), 1)]);
    // The request and the response each crossed one switch.
    assert_eq!(r.switch.forwarded, 2);
    assert!(
        load.latency.max < 1_000,
        "64 B load took {} ns",
        load.latency.max
    );
    // At least the wire and switch times: two switch latencies and four cable delays.
    assert!(
        load.latency.max > 2 * 250 + 4 * 25,
        "{} ns",
        load.latency.max
    );
}

#[test]
fn a_whole_switch_plane_failing_mid_run_loses_no_operation() {
    let mut s = small(TopologyKind::SingleTier, 4, 2);
    s.endpoint = EndpointParams {
        op_timeout_ns: 20_000,
        tag_quarantine_ns: 40_000,
        ..EndpointParams::default()
    };
    // Plane 0 (switch 0) dies 3 us into the traffic, for good.
    s.outages = vec![Outage {
        what: OutageTarget::Switch { switch: 0 },
        start_ns: 3_000,
        duration_ns: None,
        blackout: false,
        trickle: 0,
    }];
    s.traffic = vec![
        Workload::LoadStore(ls(600, 16)),
        Workload::AllToAll(AllToAll {
            bytes_per_pair: 100_000,
            iterations: 3,
            ..AllToAll::default()
        }),
        Workload::RingAllreduce(coll(&[200_000], 2)),
    ];
    let r = run(&s);
    // Every operation ended, OK on the surviving plane or with an error status: none is
    // lost, none completes twice.
    assert_eq!(r.ops.lost, 0);
    assert_eq!(r.ops.duplicated, 0);
    assert_eq!(r.ops.unexpected, 0);
    assert_eq!(r.ops.issued, r.ops.completed);
    assert_eq!(r.ops.completed, r.ops.completed_ok + r.ops.completed_error);
    assert_eq!(
        r.integrity.bytes_mismatched, 0,
        "{:?}",
        r.integrity.examples
    );
    assert_eq!(r.integrity.bytes_stray, 0, "{:?}", r.integrity.examples);
    assert_eq!(r.integrity.loads_mismatched, 0);
    // The failure hit traffic in flight: frames died in the switch or on its cables, and the
    // endpoints retried or moved operations.
    assert!(
        r.switch.lost_port_down + r.links.frames_unknown_fate + r.sim.frames_cut > 0,
        "the failure hit no frame"
    );
    assert!(r.endpoints.retries + r.endpoints.moved > 0);
    // After the failure only plane 1 carries traffic: the dead switch forwarded nothing more.
    assert_eq!(rows(&r, "all_to_all")[0].count, 3);
    assert_eq!(rows(&r, "ring_allreduce")[0].count, 2);
    assert_eq!(r.switch.buffer_drops, 0);
}

#[test]
fn all_to_all_reaches_90_percent_of_line_rate() {
    // 4 GPUs with 2 ports of 400 Gb/s each: each writes 512 KiB to each of the 3 others. The
    // share is the RDMA payload each GPU wrote over the all-to-all's time (first post to last
    // completion), against the GPU's line rate (800 Gb/s): frame headers, preamble and gap,
    // ACKs and credit updates all count against it.
    let mut s = small(TopologyKind::SingleTier, 4, 2);
    s.traffic = vec![Workload::AllToAll(AllToAll {
        bytes_per_pair: 512 * 1024,
        iterations: 1,
        ..AllToAll::default()
    })];
    let r = run(&s);
    assert_clean_writes(&r);
    let a2a = rows(&r, "all_to_all")[0];
    assert_eq!(a2a.bytes_per_gpu, 3 * 512 * 1024);
    assert!(
        a2a.line_rate_share >= 0.90,
        "all-to-all at {:.1} % of line rate (bound after per-frame overhead {:.2} %)",
        a2a.line_rate_share * 100.0,
        r.overhead.rdma_payload_bound * 100.0
    );
    assert!(a2a.line_rate_share <= r.overhead.rdma_payload_bound);
    assert!(r.overhead.rdma_payload_bound > 0.99);
}

#[test]
fn switches_never_drop_a_frame_for_want_of_buffer() {
    // A 3-to-1 incast and all-to-all traffic into small switch input buffers (8 KiB per VC):
    // senders must wait for credits, and the switches hold frames only as far as their buffers
    // go.
    let mut s = small(TopologyKind::SingleTier, 4, 1);
    s.link.rx_credits = Some(160);
    s.traffic = vec![
        Workload::Incast(Incast {
            target: 0,
            bytes: 200_000,
            iterations: 2,
            ..Incast::default()
        }),
        Workload::AllToAll(AllToAll {
            bytes_per_pair: 60_000,
            iterations: 2,
            ..AllToAll::default()
        }),
        Workload::LoadStore(ls(200, 8)),
    ];
    let r = run(&s);
    assert_clean_writes(&r);
    assert!(r.links.credit_stalls > 0, "the buffers never filled");
    //= docs/spec/switch.md#4-buffers-and-losslessness
    //= type=test
    //# SW-4-1 The buffer of an input port for a VC is its link's receive buffer for the VC
    //# (rx_credits x credit_size bytes). A switch MUST keep a received frame's credits until the
    //# frame has been handed to its egress port's link, and only then return them (LINK-5-4). An
    //# upstream sender therefore sends only what the buffer can hold.
    assert_eq!(r.switch.buffer_drops, 0);
    assert_eq!(r.links.credit_overruns, 0);
    //= docs/spec/switch.md#4-buffers-and-losslessness
    //= type=test
    //# SW-4-2 A switch MUST count the frames it drops for want of buffer (by SW-4-1, none) so
    //# that a run can show it, and the highest occupancy of every input buffer.
    assert!(r.switch.held_max_bytes > 0);
    assert!(r.switch.held_max_bytes <= r.switch.input_buffer_bytes);
    assert_eq!(r.switch.input_buffer_bytes, 160 * 64);
}

#[test]
fn requests_and_responses_cannot_deadlock() {
    // Every GPU loads from and stores to every other as fast as its tags allow, beside RDMA
    // writes both ways, through tiny buffers and the smallest response backlog: requests
    // queue up everywhere, and the responses that drain them must still get through.
    let mut s = small(TopologyKind::SingleTier, 4, 1);
    s.link.rx_credits = Some(150);
    s.endpoint.response_backlog = 9216;
    s.traffic = vec![
        Workload::LoadStore(LoadStore {
            read_share: 0.7,
            sizes: vec![SizeWeight {
                bytes: 256,
                weight: 1.0,
            }],
            ..ls(1_500, 256)
        }),
        Workload::AllToAll(AllToAll {
            bytes_per_pair: 100_000,
            iterations: 2,
            ..AllToAll::default()
        }),
    ];
    let r = run(&s);
    //= docs/spec/switch.md#5-arbitration
    //= type=test
    //# SW-5-2 An egress port MUST offer ready frames of the response VCs (2 and 3, endpoint.md
    //# EP-3-1) to its link before those of the request VCs (0 and 1). Each VC has its own
    //# buffers and credits on every hop, so requests that cannot move never hold back the
    //# responses that would let them move: the fabric cannot deadlock on requests.
    assert_clean_writes(&r);
    assert_eq!(r.ops.completed_error, 0, "no operation timed out");
    assert!(r.links.credit_stalls > 0, "the buffers never filled");
    let lat = r.kind("load").expect("loads").latency.max;
    assert!(
        lat < 200_000,
        "a load waited {lat} ns: close to its deadline"
    );
}

#[test]
fn a_cut_cable_comes_back_and_a_capture_sees_its_frames() {
    let mut s = small(TopologyKind::SingleTier, 2, 2);
    s.outages = vec![Outage {
        what: OutageTarget::Link { gpu: 1, port: 0 },
        start_ns: 2_000,
        duration_ns: Some(5_000),
        blackout: false,
        trickle: 0,
    }];
    s.traffic = vec![
        Workload::LoadStore(ls(400, 4)),
        Workload::AllToAll(AllToAll {
            bytes_per_pair: 200_000,
            iterations: 2,
            ..AllToAll::default()
        }),
    ];
    let mut f = Fabric::new(&s).expect("valid");
    let cable = f
        .cable_of(End::Gpu { gpu: 1, port: 0 })
        .expect("GPU 1 port 0 is cabled");
    let seen = std::rc::Rc::new(std::cell::RefCell::new((0u64, 0u64, 0u64, false)));
    let sink = seen.clone();
    f.capture(
        cable,
        Box::new(move |fr| {
            let mut v = sink.borrow_mut();
            v.0 += 1;
            if fr.kind == ethlink_protocol::FrameKind::Data {
                v.1 += 1;
            }
            // Frames come in time order and are whole Ethernet frames.
            assert!(fr.start_ps >= v.2 && fr.bytes.len() >= 64);
            v.2 = fr.start_ps;
            v.3 |= matches!(fr.from, End::Gpu { gpu: 1, port: 0 });
        }),
    )
    .expect("a cable");
    let r = f.run(None);
    assert_clean_writes(&r);
    // The cut came in the middle of the all-to-all: frames were on the wire, and were lost.
    assert!(r.sim.frames_cut > 0, "the cut lost no frame in flight");
    let (frames, data, _, from_gpu) = *seen.borrow();
    assert!(frames > 0 && data > 0 && from_gpu);
    // The port went down and came back up.
    let g1 = f.gpu(1).expect("GPU 1");
    assert!(g1.counters().ports[0].downs >= 1);
    assert!(g1.is_usable(0));
    assert!(r.links.link_ups > r.links.ends, "the link came up again");
}

#[test]
fn the_integrity_check_finds_a_wrong_byte_and_a_stray_one() {
    let mut s = small(TopologyKind::BackToBack, 2, 1);
    s.traffic = vec![Workload::AllToAll(AllToAll {
        bytes_per_pair: 10_000,
        iterations: 1,
        ..AllToAll::default()
    })];
    let mut f = Fabric::new(&s).expect("valid");
    let r = f.run(None);
    assert_clean_writes(&r);
    assert_eq!(r.integrity.bytes_checked, 2 * 10_000);
    // Flip one byte GPU 0 received, and write one far from anything written. The received data
    // is held as a description of the pattern, not as bytes.
    let addr = {
        let m = f.gpu(0).expect("GPU 0").memory();
        assert_eq!(m.pages(ethlink_protocol::Space::Global).count(), 0);
        let (start, end, _) = m
            .described(ethlink_protocol::Space::Global)
            .next()
            .expect("GPU 0 holds data");
        assert!(end - start >= 10_000);
        start + 4321
    };
    let m = f.gpu_mut(0).expect("GPU 0").memory_mut();
    let mut b = [0u8];
    m.read(ethlink_protocol::Space::Global, addr, &mut b)
        .expect("in range");
    m.write(ethlink_protocol::Space::Global, addr, &[!b[0]])
        .expect("in range");
    m.write(ethlink_protocol::Space::Global, 1 << 35, &[7])
        .expect("in range");
    let r = f.run(None);
    assert_eq!(r.integrity.bytes_checked, 2 * 10_000);
    assert_eq!(r.integrity.bytes_stray, 1);
    // The first described range is where GPU 1 wrote (receive areas come before staging).
    assert_eq!(r.integrity.bytes_mismatched, 1);
    assert!(!r.pass);
    assert!(
        r.integrity
            .examples
            .iter()
            .any(|e| !e.written && e.addr == 1 << 35 && e.found == 7)
    );
    assert!(
        r.integrity
            .examples
            .iter()
            .any(|e| e.written && e.addr == addr && e.found == !b[0] && e.expected == b[0])
    );
}

/// RDMA sizes cost nothing up front: 2^28 bytes per pair and the documented maximum on 4 GPUs,
/// cut short by the time limit, leave each GPU's memory holding a few records and no literal
/// page, never a buffer of the transfer's size; the estimate grows with the size only until the
/// GPUs' queues and replay buffers would be full (16 MiB per pair is beyond that here).
#[test]
fn rdma_data_is_described_not_held() {
    for bytes in [1u64 << 28, u64::from(u32::MAX)] {
        let mut s = small(TopologyKind::SingleTier, 4, 1);
        s.time_limit_ns = 20_000;
        let with = |bytes_per_pair| {
            vec![Workload::AllToAll(AllToAll {
                bytes_per_pair,
                iterations: 1,
                ..AllToAll::default()
            })]
        };
        s.traffic = with(1 << 24);
        let small_estimate = s.memory_estimate().bytes;
        s.traffic = with(bytes);
        assert_eq!(s.memory_estimate().bytes, small_estimate, "{bytes}");
        assert!(small_estimate < 1 << 30, "{small_estimate}");
        let mut f = Fabric::new(&s).expect("valid");
        let r = f.run(None);
        assert_eq!(
            r.integrity.bytes_mismatched, 0,
            "{:?}",
            r.integrity.examples
        );
        assert_eq!(r.integrity.bytes_stray, 0, "{:?}", r.integrity.examples);
        assert!(r.integrity.bytes_in_flight > 0, "{bytes}: cut short");
        for g in 0..4 {
            let m = f.gpu(g).expect("GPU").memory();
            let space = ethlink_protocol::Space::Global;
            assert_eq!(m.pages(space).count(), 0, "GPU {g}: no literal page");
            // Three receive ranges and one staged write, a few pieces each while arriving.
            let ranges = m.described(space).count();
            assert!((1..=64).contains(&ranges), "GPU {g}: {ranges} ranges");
            assert!(m.resident_bytes() < 4096, "GPU {g}: {}", m.resident_bytes());
            // The staged source is described whole: `bytes` of it read back as the pattern.
            let longest = m.described(space).map(|(s, e, _)| e - s).max();
            assert_eq!(longest, Some(bytes), "GPU {g}");
        }
    }
}

#[test]
fn a_blacked_out_cable_flushes_its_links_and_loses_no_operation() {
    // For 40 us every frame on one cable vanishes while the physical link stays up: both ends
    // replay until their replay count runs out, FLUSH, report the frames of unknown fate and
    // initialise again.
    let mut s = small(TopologyKind::SingleTier, 2, 2);
    s.endpoint.op_timeout_ns = 30_000;
    s.endpoint.tag_quarantine_ns = 60_000;
    s.outages = vec![Outage {
        what: OutageTarget::Link { gpu: 0, port: 1 },
        start_ns: 2_000,
        duration_ns: Some(40_000),
        blackout: true,
        trickle: 0,
    }];
    s.traffic = vec![
        Workload::LoadStore(ls(2_000, 8)),
        Workload::AllToAll(AllToAll {
            bytes_per_pair: 300_000,
            iterations: 3,
            ..AllToAll::default()
        }),
    ];
    let r = run(&s);
    assert_eq!(r.ops.lost, 0);
    assert_eq!(r.ops.duplicated, 0);
    assert_eq!(r.ops.unexpected, 0);
    assert_eq!(r.ops.issued, r.ops.completed);
    assert!(r.integrity.is_clean(), "{:?}", r.integrity.examples);
    assert!(r.sim.frames_dropped > 0);
    assert!(
        r.links.replay_timeouts > 0,
        "the links replayed on their timer"
    );
    assert!(r.links.flushes > 0, "the links flushed");
    assert!(r.links.frames_unknown_fate > 0);
    assert!(r.links.reinits > 0);
}

#[test]
fn scenarios_are_checked_key_by_key() {
    let mut s = Scenario::default();
    assert_eq!(s.validate(), Ok(()));
    s.topology.gpus = 1;
    assert_eq!(s.validate().unwrap_err().key, "topology.gpus");
    let mut s = Scenario::default();
    s.traffic
        .push(Workload::HalvingDoublingAllreduce(Collective {
            gpus: Some(vec![0, 1, 2]),
            ..Collective::default()
        }));
    assert_eq!(s.validate().unwrap_err().key, "traffic.3.gpus");
    let mut s = Scenario::default();
    s.link.rx_credits = Some(0);
    assert_eq!(s.validate().unwrap_err().key, "link.rx_credits");
    let mut s = Scenario::default();
    s.outages.push(Outage {
        what: OutageTarget::Switch { switch: 8 },
        start_ns: 0,
        duration_ns: None,
        blackout: false,
        trickle: 0,
    });
    assert_eq!(s.validate().unwrap_err().key, "outages.0.what.switch");
    // JSON: defaults fill in, unknown keys are refused.
    let s: Scenario = serde_json::from_str(
        r#"{"seed": 5, "topology": {"gpus": 4}, "traffic": [{"kind": "incast", "target": 1}]}"#,
    )
    .expect("parses");
    assert_eq!(s.seed, 5);
    assert_eq!(s.topology.stacks, 4);
    assert!(matches!(&s.traffic[0], Workload::Incast(i) if i.target == 1 && i.bytes == 1 << 20));
    assert!(serde_json::from_str::<Scenario>(r#"{"sead": 5}"#).is_err());
    assert!(
        serde_json::from_str::<Scenario>(r#"{"traffic": [{"kind": "incast", "targte": 1}]}"#)
            .is_err()
    );
    // The default scenario round-trips.
    let d = Scenario::default();
    let back: Scenario =
        serde_json::from_str(&serde_json::to_string(&d).expect("json")).expect("parses");
    assert_eq!(back, d);
}

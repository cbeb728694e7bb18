//! A rack-scale fabric: 1024 GPUs of 4 stacks x 2 ports, a single tier of 8 switch planes of
//! 1024 ports each (or, with the argument `two_tier`, 8 planes of 32 leaves and 16 spines),
//! random-permutation RDMA writes beside background loads and stores. Prints the headline
//! figures and the peak memory of the process.
//!
//! `cargo run --release -p ethlink-fabric --example scale_1024 [two_tier]`

use ethlink_fabric::scenario::{LoadStore, Permutation, Topology, TopologyKind, Workload};
use ethlink_fabric::{Fabric, Scenario};

fn main() {
    let mut s = Scenario {
        topology: Topology {
            gpus: 1024,
            ..Topology::default()
        },
        traffic: vec![
            Workload::Permutation(Permutation {
                bytes: 256 * 1024,
                iterations: 2,
                ..Permutation::default()
            }),
            Workload::LoadStore(LoadStore {
                outstanding: 4,
                ..LoadStore::default()
            }),
        ],
        ..Scenario::default()
    };
    s.metrics.sample_ns = 0;
    if std::env::args().nth(1).as_deref() == Some("two_tier") {
        s.topology.kind = TopologyKind::TwoTier;
        s.topology.leaves = 32;
        s.topology.spines = 16;
    }
    let built = std::time::Instant::now();
    let mut fabric = Fabric::new(&s).expect("a valid scenario");
    println!(
        "built {} GPUs, {} switches, {} cables in {:.1} s",
        s.topology.gpus,
        s.topology.switches(),
        fabric.cables().len(),
        built.elapsed().as_secs_f64()
    );
    let r = fabric.run(None);
    println!("pass: {}", r.pass);
    println!(
        "simulated {} ns: {} events, {} frame-hops ({} data), {} operations ({} lost, {} duplicated), {} bytes checked, {} mismatched",
        r.end_ns,
        r.sim.events,
        r.sim.frame_hops,
        r.sim.data_frame_hops,
        r.ops.completed,
        r.ops.lost,
        r.ops.duplicated,
        r.integrity.bytes_checked,
        r.integrity.bytes_mismatched
    );
    for c in &r.collectives {
        println!(
            "{} of {} B: {:.2} us, algbw {:.1} GB/s",
            c.name,
            c.size_bytes,
            c.time_ns / 1000.0,
            c.algbw_gbytes
        );
    }
    println!(
        "wall {:.1} s, {:.3} M frame-hops/s, {:.3} M events/s, peak RSS {:.2} GiB",
        r.wall.seconds,
        r.wall.frame_hops_per_s / 1e6,
        r.wall.events_per_s / 1e6,
        r.wall.peak_rss_bytes.unwrap_or(0) as f64 / (1u64 << 30) as f64
    );
}

//! The headline figures of the fabric: the latency of a 64 B load one switch hop away on an idle
//! fabric, the share of line rate an RDMA all-to-all reaches, the default scenario (wall time,
//! simulation speed, peak memory) and the default scenario with a whole switch plane failing
//! mid-run.
//!
//! `cargo run --release -p ethlink-fabric --example figures`

use ethlink_fabric::scenario::{AllToAll, LoadStore, Outage, OutageTarget, Workload};
use ethlink_fabric::{Fabric, Report, Scenario};

fn run(s: &Scenario) -> Report {
    Fabric::new(s).expect("a valid scenario").run(None)
}

fn main() {
    // 1. One 64 B load from GPU 0 to GPU 1 through one switch, nothing else on the fabric.
    let mut s = Scenario {
        traffic: vec![Workload::LoadStore(LoadStore {
            gpus: Some(vec![0]),
            targets: Some(vec![1]),
            read_share: 1.0,
            ops: Some(1),
            outstanding: 1,
            ..LoadStore::default()
        })],
        ..Scenario::default()
    };
    s.metrics.sample_ns = 0;
    let r = run(&s);
    let load = r.kind("load").expect("a load");
    println!(
        "idle 64 B load, one switch hop (switch {} ns, {} m cables, pack delay {} ns): {} ns",
        s.switch.latency_ns, s.link.cable_m, s.endpoint.pack_delay_ns, load.latency.max
    );

    // 2. RDMA all-to-all alone on the default topology.
    s.traffic = vec![Workload::AllToAll(AllToAll {
        bytes_per_pair: 2 << 20,
        iterations: 2,
        ..AllToAll::default()
    })];
    let r = run(&s);
    let a = r
        .collectives
        .iter()
        .find(|c| c.name == "all_to_all")
        .expect("all-to-all");
    println!(
        "all-to-all, {} GPUs, {} B per pair: {:.2} us, {:.1} Gb/s of RDMA payload per GPU = {:.1} % of line rate ({:.0} Gb/s); per-frame overhead {} B on {} B segments bounds it at {:.2} %, so {:.1} % of the bound; control frames {:.2} % of wire bytes",
        a.gpus,
        2 << 20,
        a.time_ns / 1000.0,
        a.gpu_payload_gbps,
        a.line_rate_share * 100.0,
        r.throughput.gpu_line_rate_gbps,
        r.overhead.segment_overhead_bytes,
        r.overhead.segment_bytes,
        r.overhead.rdma_payload_bound * 100.0,
        a.line_rate_share / r.overhead.rdma_payload_bound * 100.0,
        r.overhead.control_share * 100.0
    );

    // 3. The default scenario.
    let d = Scenario::default();
    let r = run(&d);
    print_run("default scenario", &r);

    // 4. The default scenario with plane 0 failing 100 us into the traffic.
    let f = Scenario {
        outages: vec![Outage {
            what: OutageTarget::Plane { plane: 0 },
            start_ns: 100_000,
            duration_ns: None,
            blackout: false,
            trickle: 0,
        }],
        ..Scenario::default()
    };
    let r = run(&f);
    print_run("default scenario, plane 0 fails at 100 us", &r);
}

fn print_run(name: &str, r: &Report) {
    println!(
        "{name}: pass {}; {} ns simulated; {} operations ({} OK, {} with an error status, {} lost, {} duplicated); {} bytes checked, {} mismatched, {} stray; LLR replays {}, NACKs {}, flushes {}, credit stalls {}; switch buffer high-water {} of {} B, buffer drops {}",
        r.pass,
        r.end_ns,
        r.ops.completed,
        r.ops.completed_ok,
        r.ops.completed_error,
        r.ops.lost,
        r.ops.duplicated,
        r.integrity.bytes_checked,
        r.integrity.bytes_mismatched,
        r.integrity.bytes_stray,
        r.links.frames_replayed,
        r.links.nacks,
        r.links.flushes,
        r.links.credit_stalls,
        r.switch.held_max_bytes,
        r.switch.input_buffer_bytes,
        r.switch.buffer_drops
    );
    for k in &r.ops.kinds {
        println!(
            "  {:<10} {:>8} ops {:?}: p50 {} p99 {} p999 {} max {} ns",
            k.kind,
            k.issued,
            k.by_status,
            k.latency.p50,
            k.latency.p99,
            k.latency.p999,
            k.latency.max
        );
    }
    for c in &r.collectives {
        println!(
            "  {:<16} {:>10} B x{:<3} {:>9.2} us  algbw {:>7.2} GB/s  busbw {:>7.2} GB/s  {:>5.1} % of line rate, {} errors",
            c.name,
            c.size_bytes,
            c.count,
            c.time_ns / 1000.0,
            c.algbw_gbytes,
            c.busbw_gbytes,
            c.line_rate_share * 100.0,
            c.errors
        );
    }
    println!(
        "  wall {:.2} s (final check {:.2} s): {:.3} M frame-hops/s ({} frame-hops), {:.3} M data frames delivered/s, {:.3} M events/s ({} events), simulated/wall time {:.2e}, peak RSS {} MiB",
        r.wall.seconds,
        r.wall.check_seconds,
        r.wall.frame_hops_per_s / 1e6,
        r.sim.frame_hops,
        r.wall.data_frames_per_s / 1e6,
        r.wall.events_per_s / 1e6,
        r.sim.events,
        r.wall.sim_over_wall,
        r.wall.peak_rss_bytes.unwrap_or(0) >> 20
    );
}

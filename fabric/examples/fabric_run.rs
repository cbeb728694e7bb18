//! Runs a scenario (the default one, or a JSON file given as the only argument) and prints the
//! headline figures and the report as JSON.
//!
//! `cargo run --release -p ethlink-fabric --example fabric_run [scenario.json]`

use std::io::Write;

use ethlink_fabric::{Fabric, Scenario};

fn main() {
    let scenario: Scenario = match std::env::args().nth(1) {
        Some(path) => {
            let text = std::fs::read_to_string(&path).expect("read the scenario file");
            serde_json::from_str(&text).expect("a scenario in JSON")
        }
        None => Scenario::default(),
    };
    let mut fabric = Fabric::new(&scenario).unwrap_or_else(|e| {
        eprintln!("invalid scenario: {e}");
        std::process::exit(2);
    });
    let mut last = 0;
    let mut progress = |sim: u64, end: u64| {
        if sim >= last + 10_000 {
            last = sim;
            eprint!("\r{sim} ns / {end} ns   ");
            let _ = std::io::stderr().flush();
        }
    };
    let report = fabric.run(Some(&mut progress));
    eprintln!();
    let json = serde_json::to_string_pretty(&report).expect("report to JSON");
    if let Ok(path) = std::env::var("FABRIC_REPORT") {
        std::fs::write(&path, &json).expect("write the report");
    }
    println!("pass: {}", report.pass);
    println!(
        "sim: {} ns (start {} ns, stop {} ns), {} events, {} frame-hops ({} data), {} data frames delivered",
        report.end_ns,
        report.start_ns,
        report.stop_ns,
        report.sim.events,
        report.sim.frame_hops,
        report.sim.data_frame_hops,
        report.sim.data_frames_delivered
    );
    println!(
        "wall: {:.2} s (check {:.2} s), {:.2} M frame-hops/s, {:.2} M data frames/s, {:.2} M events/s, sim/wall {:.2e}, peak RSS {:.0} MiB",
        report.wall.seconds,
        report.wall.check_seconds,
        report.wall.frame_hops_per_s / 1e6,
        report.wall.data_frames_per_s / 1e6,
        report.wall.events_per_s / 1e6,
        report.wall.sim_over_wall,
        report.wall.peak_rss_bytes.unwrap_or(0) as f64 / (1 << 20) as f64
    );
    println!(
        "ops: issued {} completed {} ok {} error {} lost {} duplicated {} unexpected {}",
        report.ops.issued,
        report.ops.completed,
        report.ops.completed_ok,
        report.ops.completed_error,
        report.ops.lost,
        report.ops.duplicated,
        report.ops.unexpected
    );
    for k in &report.ops.kinds {
        println!(
            "  {:<10} issued {:>9} {:?} latency ns p50 {} p99 {} p999 {} max {} mean {:.0}",
            k.kind,
            k.issued,
            k.by_status,
            k.latency.p50,
            k.latency.p99,
            k.latency.p999,
            k.latency.max,
            k.latency.mean
        );
    }
    let i = &report.integrity;
    println!(
        "integrity: {} writes ok, {} failed, {} bytes checked, {} mismatched, {} stray, {} unknown; loads {} checked {} mismatched",
        i.writes_ok,
        i.writes_failed,
        i.bytes_checked,
        i.bytes_mismatched,
        i.bytes_stray,
        i.bytes_unknown,
        i.loads_checked,
        i.loads_mismatched
    );
    println!(
        "{:<28} {:>5} {:>12} {:>6} {:>12} {:>9} {:>9} {:>8} {:>6}",
        "collective", "gpus", "size", "count", "time_us", "algbw", "busbw", "line%", "errors"
    );
    for r in &report.collectives {
        println!(
            "{:<28} {:>5} {:>12} {:>6} {:>12.2} {:>9.2} {:>9.2} {:>7.1}% {:>6}",
            r.name,
            r.gpus,
            r.size_bytes,
            r.count,
            r.time_ns / 1000.0,
            r.algbw_gbytes,
            r.busbw_gbytes,
            r.line_rate_share * 100.0,
            r.errors
        );
    }
    let o = &report.overhead;
    println!(
        "overhead: segment {} B + {} B per frame -> RDMA payload bound {:.2}%; control frames {:.2}% of wire bytes; DATA payload {:.2}% of wire bytes",
        o.segment_bytes,
        o.segment_overhead_bytes,
        o.rdma_payload_bound * 100.0,
        o.control_share * 100.0,
        o.data_payload_share * 100.0
    );
    let l = &report.links;
    println!(
        "links: replayed {} (by NACK {}, by timer {}), NACKs {}, flushes {}, credit stalls {}, FCS errors {}, unknown fate {}",
        l.frames_replayed,
        l.replays_by_nack,
        l.replay_timeouts,
        l.nacks,
        l.flushes,
        l.credit_stalls,
        l.fcs_errors,
        l.frames_unknown_fate
    );
    let s = &report.switch;
    println!(
        "switches: forwarded {}, buffer high-water {} B of {} B, buffer drops {}, unroutable {}, lost to ports down {}",
        s.forwarded,
        s.held_max_bytes,
        s.input_buffer_bytes,
        s.buffer_drops,
        s.unroutable,
        s.lost_port_down
    );
    println!(
        "throughput: port imbalance {:.3}, switch port imbalance {:.3}, idle wakeups {}",
        report.throughput.port_imbalance,
        report.throughput.switch_port_imbalance,
        report.sim.idle_wakeups
    );
}

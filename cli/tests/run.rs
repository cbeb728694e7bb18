//! `ethlink run`: the fabric simulation through the binary, on tiny scenarios (the real default
//! scenario takes seconds in a release build, too long for a debug test); the scenario files of
//! examples/scenarios/ are parsed and validated without being run.

mod common;

use std::path::{Path, PathBuf};

use common::{ethlink, status, stderr, stdout};
use ethlink_cli::run::{Format, parse_scenario};
use ethlink_fabric::Scenario;
use ethlink_fabric::scenario::{OutageTarget, TopologyKind, Workload};
use pcap_file::pcapng::{Block, PcapNgParser};
use serde_json::Value;

/// A scenario that runs in a fraction of a second even in a debug build: 4 GPUs of 2 ports, 2
/// switch planes, a bit error rate high enough for a few replays, every kind of traffic the
/// default has.
const TINY: &str = r#"
seed = 3
[topology]
gpus = 4
stacks = 1
ports_per_stack = 2
[link]
ber = 1e-7
[[traffic]]
kind = "load_store"
ops = 150
[[traffic.sizes]]
bytes = 64
weight = 1.0
[[traffic.sizes]]
bytes = 8
weight = 1.0
[[traffic]]
kind = "all_to_all"
bytes_per_pair = 32768
iterations = 2
[[traffic]]
kind = "ring_allreduce"
sizes = [65536, 131072]
[metrics]
sample_ns = 2000
"#;

/// A fresh directory of its own for one test.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-run-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    path.to_string_lossy().into_owned()
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn text(path: &Path) -> String {
    String::from_utf8(read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn parse_json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

/// The object without its `wall` section.
fn without_wall(mut v: Value) -> Value {
    let removed = v.as_object_mut().and_then(|o| o.remove("wall"));
    assert!(removed.is_some(), "no wall section");
    v
}

/// The text before the `wall` section, which is the last one.
fn before_wall(s: &str) -> &str {
    let at = s
        .find("\n  \"wall\": {")
        .unwrap_or_else(|| panic!("no wall section"));
    s.get(..at).unwrap_or_default()
}

fn run_ok(args: &[&str]) -> String {
    let out = ethlink(args, "");
    assert_eq!(
        status(&out),
        0,
        "{args:?}: {}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(stderr(&out).is_empty(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/scenarios")
}

#[test]
fn a_tiny_run_prints_the_summary_and_passes() {
    let dir = temp_dir("summary");
    let file = write(&dir, "tiny.toml", TINY);
    let out = run_ok(&["run", "--scenario", &file]);
    for needle in [
        "EthLink fabric run, seed 3",
        "4 GPUs x 2 ports (1 stack x 2), a single tier of 2 switch planes",
        "[0] load_store: 64 B/8 B, 50% loads",
        "[1] all_to_all: 32 KiB per pair",
        "[2] ring_allreduce: 64 KiB, 128 KiB",
        "result     PASS",
        "lost 0, duplicated 0, unexpected 0",
        "corrupted 0, stray 0, wrong loads 0",
        "Collectives (nccl-tests style",
        "algbw (GB/s)",
        "busbw (GB/s)",
        "Link layer",
        "Switches (2)",
        "buffer drops 0",
        "frame-hops/s",
        "peak RSS",
    ] {
        assert!(out.contains(needle), "{needle:?} missing from:\n{out}");
    }
    // One row per operation kind, with every percentile; 4 GPUs x 150 operations.
    let row = |kind: &str| -> Vec<String> {
        out.lines()
            .find(|l| l.trim_start().starts_with(&format!("{kind} ")))
            .unwrap_or_else(|| panic!("no {kind} row in:\n{out}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    let loads = row("load");
    let stores = row("store");
    let issued = |r: &[String]| r.get(1).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    assert_eq!(issued(&loads) + issued(&stores), 600, "{out}");
    assert_eq!(
        loads.get(1),
        loads.get(2),
        "every load completed: {loads:?}"
    );
    let p: Vec<u64> = loads
        .get(3..7)
        .unwrap_or_default()
        .iter()
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    assert!(
        p.windows(2).all(|w| w[0] <= w[1]) && p[0] > 0,
        "p50 <= p99 <= p99.9 <= max: {p:?}"
    );
    // 2 all-to-all instances and one ring all-reduce of each size.
    assert_eq!(
        out.lines()
            .filter(|l| l.contains("] ring_allreduce  "))
            .count(),
        2,
        "{out}"
    );
}

#[test]
fn one_seed_gives_one_json_but_for_wall() {
    let dir = temp_dir("seed");
    let file = write(&dir, "tiny.toml", TINY);
    let a = run_ok(&["run", "--scenario", &file, "--json"]);
    let b = run_ok(&["run", "--scenario", &file, "--json"]);
    assert_eq!(
        before_wall(&a),
        before_wall(&b),
        "two runs of seed 3 differ"
    );
    let (ja, jb) = (parse_json(&a), parse_json(&b));
    assert_eq!(without_wall(ja.clone()), without_wall(jb));
    // The report is all there: the scenario that ran, operations, the time series, wall last.
    assert_eq!(ja["scenario"]["seed"], 3);
    assert_eq!(ja["seed"], 3);
    assert_eq!(ja["pass"], true);
    assert_eq!(ja["ops"]["lost"], 0);
    assert!(ja["wall"]["seconds"].as_f64().is_some_and(|s| s > 0.0));
    assert!(ja["wall"]["frame_hops_per_s"].as_f64().is_some());
    let keys: Vec<&String> = ja
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys.last().map(|k| k.as_str()), Some("wall"), "{keys:?}");
    // --seed overrides the file's seed, and another seed gives another run.
    let c = run_ok(&["run", "--scenario", &file, "--json", "--seed", "4"]);
    let jc = parse_json(&c);
    assert_eq!(jc["seed"], 4);
    assert_eq!(jc["scenario"]["seed"], 4);
    assert_ne!(without_wall(jc)["ops"], without_wall(ja)["ops"]);
    // The same seed again through --seed gives the file's run back.
    let d = run_ok(&["run", "--scenario", &file, "--json", "--seed", "3"]);
    assert_eq!(before_wall(&d), before_wall(&a));
}

#[test]
fn partitioned_runs_are_one_run_whatever_the_threads_do() {
    let dir = temp_dir("partitioned");
    let file = write(&dir, "tiny.toml", TINY);
    let a = run_ok(&["run", "--scenario", &file, "--json", "--partitioned"]);
    let b = run_ok(&["run", "--scenario", &file, "--json", "--partitioned"]);
    assert_eq!(
        before_wall(&a),
        before_wall(&b),
        "two partitioned runs differ"
    );
    let ja = parse_json(&a);
    assert_eq!(ja["pass"], true);
    assert_eq!(ja["data_intact"], true);
    assert_eq!(ja["ops"]["lost"], 0);
    // The same operations as the single event queue's run.
    let one = parse_json(&run_ok(&["run", "--scenario", &file, "--json"]));
    assert_eq!(ja["ops"]["issued"], one["ops"]["issued"]);
    // A capture (--out) and partitions exclude each other.
    let out_dir = dir.join("out");
    let out_dir = out_dir.to_string_lossy();
    let o = ethlink(
        &[
            "run",
            "--scenario",
            &file,
            "--partitioned",
            "--out",
            &out_dir,
        ],
        "",
    );
    assert_eq!(status(&o), 2);
    assert!(stderr(&o).contains("--partitioned"), "{}", stderr(&o));
    // The split: the default (one of the 2 planes' switches with the GPUs) or the one asked
    // for, in the JSON and on the summary's "Partitions" line.
    assert_eq!(ja["wall"]["partitions"]["switches_with_gpus"], 1);
    assert!(one["wall"].get("partitions").is_none());
    let z = parse_json(&run_ok(&[
        "run",
        "--scenario",
        &file,
        "--json",
        "--partitioned",
        "--switches-with-gpus",
        "0",
    ]));
    assert_eq!(z["wall"]["partitions"]["switches_with_gpus"], 0);
    assert_eq!(z["ops"]["issued"], one["ops"]["issued"]);
    let text = run_ok(&["run", "--scenario", &file, "--partitioned"]);
    assert!(
        text.contains("Partitions: ") && text.contains("the GPUs and 1 of the 2 switches worked"),
        "{text}"
    );
    // No switch left to the other partition, or no partitions at all: refused, naming the flag.
    for args in [
        &["--partitioned", "--switches-with-gpus", "2"][..],
        &["--switches-with-gpus", "1"][..],
    ] {
        let mut all = vec!["run", "--scenario", &file];
        all.extend_from_slice(args);
        let o = ethlink(&all, "");
        assert_eq!(status(&o), 2, "{args:?}");
        assert!(
            stderr(&o).contains("--switches-with-gpus"),
            "{}",
            stderr(&o)
        );
    }
}

#[test]
fn out_writes_every_file() {
    let dir = temp_dir("out");
    let file = write(&dir, "tiny.toml", TINY);
    let out = dir.join("results");
    let json = run_ok(&[
        "run",
        "--scenario",
        &file,
        "--json",
        "--out",
        &out.to_string_lossy(),
        "--capture-port",
        "1:1",
    ]);
    let report = parse_json(&json);

    // metrics.json is the --json output.
    let metrics = text(&out.join("metrics.json"));
    assert_eq!(before_wall(&metrics), before_wall(&json));
    assert_eq!(
        without_wall(parse_json(&metrics)),
        without_wall(report.clone())
    );

    // The scenario in the JSON is a scenario file of its own: the one that ran, with its derived
    // defaults written in.
    let again = serde_json::to_string(&report["scenario"]).unwrap_or_default();
    assert_eq!(
        parse_scenario(&again, Format::Json).unwrap_or_else(|e| panic!("{e}")),
        parse_scenario(TINY, Format::Toml)
            .unwrap_or_else(|e| panic!("{e}"))
            .resolved()
    );

    // The time series: a header naming every GPU and port, one row per sample.
    let csv = text(&out.join("timeseries.csv"));
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    assert_eq!(
        header.get(..4),
        Some(&["t_ns", "ops_completed", "bytes_completed", "gpu0_util"][..])
    );
    assert_eq!(header.len(), 3 + 4 + 4 * 2, "{header:?}");
    assert_eq!(header.last(), Some(&"gpu3_p1_util"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let samples = report["series"]["t_ns"].as_array().map_or(0, Vec::len);
    assert!(samples >= 3, "{samples} samples");
    assert_eq!(rows.len(), samples);
    assert!(rows.iter().all(|r| r.len() == header.len()));
    let ops: u64 = rows
        .iter()
        .map(|r| r.get(1).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0))
        .sum();
    assert_eq!(ops, report["ops"]["completed"].as_u64().unwrap_or(0));
    let first_t: u64 = rows
        .first()
        .and_then(|r| r.first())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert_eq!(Some(first_t), report["start_ns"].as_u64());

    // The plots: whole SVG documents with their titles and a line per series.
    for (name, needles) in [
        (
            "latency_cdf.svg",
            &["Latency CDF", "load (", "store (", "rdma_write ("][..],
        ),
        (
            "port_utilisation.svg",
            &["Transmit utilisation", "gpu3.p1"][..],
        ),
        (
            "busbw.svg",
            &[
                "bus bandwidth",
                "ring_allreduce (traffic.2)",
                "all_to_all (traffic.1)",
            ][..],
        ),
    ] {
        let svg = text(&out.join(name));
        assert!(svg.trim_start().starts_with("<svg"), "{name}");
        assert!(svg.trim_end().ends_with("</svg>"), "{name}");
        assert_eq!(svg.matches("<svg").count(), 1, "{name}");
        assert!(!svg.contains("no data"), "{name}");
        for n in needles {
            assert!(svg.contains(n), "{name} lacks {n:?}");
        }
    }

    // The capture: the frames of GPU 1 port 1's cable, both ways, with their FCS, each a
    // well-formed EthLink frame.
    let pcap = read(&out.join("capture.pcapng"));
    let frames = ethlink_cli::capture::read_capture(&pcap).unwrap_or_else(|e| panic!("{e}"));
    assert!(frames.len() > 50, "{} frames", frames.len());
    for f in &frames {
        assert!(f.has_fcs, "frame {} has no FCS", f.index);
        let bytes = f.bytes.as_ref().unwrap_or_else(|e| panic!("{e}"));
        //= docs/spec/wire.md#25-frame-check-sequence
        //= type=test
        //# WIRE-2.5-1 The FCS MUST be the CRC-32 of IEEE 802.3 clause 3.2.9 (polynomial 0x04C11DB7,
        let decoded = ethlink_cli::decode::decode_frame(bytes, 9216);
        assert!(
            decoded.error.is_none(),
            "frame {}: {:?}",
            f.index,
            decoded.error
        );
    }
    // Times in nanoseconds, never going back; the first frames are the link's INITs, both ways.
    let (mut rest, mut parser) = PcapNgParser::new(&pcap).unwrap_or_else(|e| panic!("{e}"));
    let mut times = Vec::new();
    let mut comments = Vec::new();
    let mut resol = None;
    while !rest.is_empty() {
        let (next, block) = parser.next_block(rest).unwrap_or_else(|e| panic!("{e}"));
        rest = next;
        match block {
            Block::InterfaceDescription(idb) => {
                resol = idb.options.iter().find_map(|o| match o {
                    pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption::IfTsResol(r) => Some(*r),
                    _ => None,
                });
            }
            Block::EnhancedPacket(p) => {
                times.push(p.timestamp.as_nanos());
                comments.push(
                    p.options
                        .iter()
                        .find_map(|o| match o {
                            pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketOption::Comment(c) => Some(c.to_string()),
                            _ => None,
                        })
                        .unwrap_or_default(),
                );
            }
            _ => {}
        }
    }
    assert_eq!(resol, Some(9));
    assert_eq!(times.len(), frames.len());
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "times go back");
    assert!(
        times.last().copied().unwrap_or(0) > 1000,
        "the capture spans the run"
    );
    assert!(
        comments
            .iter()
            .take(4)
            .any(|c| c.starts_with("INIT gpu1.p1 -> sw1.p1")),
        "{:?}",
        comments.get(..4)
    );
    assert!(
        comments
            .iter()
            .any(|c| c.starts_with("DATA sw1.p1 -> gpu1.p1"))
    );
    assert!(
        comments
            .iter()
            .any(|c| c.starts_with("DATA gpu1.p1 -> sw1.p1"))
    );

    // Wireshark agrees on every FCS (the frames are stored as sent, so every FCS is good).
    if let Some(rows) = tshark_fcs(&out.join("capture.pcapng")) {
        assert_eq!(rows.len(), frames.len());
        //= docs/spec/wire.md#25-frame-check-sequence
        //= type=test
        //# WIRE-2.5-2 The 32-bit CRC value MUST be appended least significant byte first.
        assert!(
            rows.iter().all(|s| s == "1" || s == "Good"),
            "tshark found a bad FCS: {rows:?}"
        );
    }
}

/// `eth.fcs.status` of every frame as tshark reports it, or `None` when tshark is not installed
/// (or ETHLINK_SKIP_TSHARK=1).
fn tshark_fcs(path: &Path) -> Option<Vec<String>> {
    if std::env::var("ETHLINK_SKIP_TSHARK").is_ok_and(|v| v == "1") {
        return None;
    }
    let output = std::process::Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args([
            "-o",
            "eth.check_fcs:TRUE",
            "-T",
            "fields",
            "-e",
            "eth.fcs.status",
        ])
        .output();
    let output = match output {
        Ok(o) => o,
        Err(e) => {
            eprintln!("tshark not available ({e}): skipping its check of the capture");
            return None;
        }
    };
    assert!(
        output.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|l| l.trim().to_owned())
            .collect(),
    )
}

#[test]
fn a_run_cut_short_by_its_time_limit_exits_3() {
    // The time limit cuts the run short long before the all-to-all is done: the data is
    // intact, but the run did not finish its work.
    let dir = temp_dir("fail");
    let file = write(&dir, "short.toml", &format!("time_limit_ns = 3000\n{TINY}"));
    let out = ethlink(&["run", "--scenario", &file], "");
    assert_eq!(status(&out), 3, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("FAIL: ") && stdout(&out).contains("the time limit"),
        "{}",
        stdout(&out)
    );
    let out = ethlink(&["run", "--scenario", &file, "--json"], "");
    assert_eq!(status(&out), 3);
    let j = parse_json(&stdout(&out));
    assert_eq!(j["pass"], false);
    assert_eq!(j["data_intact"], true);
    assert_eq!(j["time_limit_hit"], true);
}

/// Runs `ethlink run --scenario FILE` on `toml` and returns its one line of error.
fn scenario_error(toml: &str) -> String {
    let dir = temp_dir("bad");
    let file = write(&dir, "bad.toml", toml);
    let out = ethlink(&["run", "--scenario", &file], "");
    assert_eq!(status(&out), 2, "{toml}: {}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).is_empty(), "{toml}: {}", stdout(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{toml}: {err}");
    err.trim_end().to_owned()
}

#[test]
fn bad_scenarios_exit_2_naming_the_key() {
    for (toml, start, why) in [
        // Unknown keys, at the top, in a table, in a workload, in an outage.
        ("colour = 1", "error: colour: ", "unknown field"),
        (
            "[topology]\nplanes = 8",
            "error: topology.planes: ",
            "unknown field",
        ),
        (
            "[[traffic]]\nkind = \"all_to_all\"\nbytes_per_paire = 5",
            "error: traffic.0.bytes_per_paire: ",
            "unknown field",
        ),
        (
            "[[outages]]\nwhat = { kind = \"plane\", plan = 1 }",
            "error: outages.0.what.plan: ",
            "unknown field",
        ),
        (
            "[[traffic]]\nkind = \"all_to_al\"",
            "error: traffic.0.kind: ",
            "unknown kind \"all_to_al\"",
        ),
        // Wrong types.
        (
            "[topology]\ngpus = \"eight\"",
            "error: topology.gpus: ",
            "invalid type: string \"eight\", expected u16",
        ),
        (
            "[link]\nrate_gbps = \"fast\"",
            "error: link.rate_gbps: ",
            "invalid type",
        ),
        (
            "[[traffic]]\nkind = \"load_store\"\n[[traffic.sizes]]\nbytes = 64\nweight = \"x\"",
            "error: traffic.0.sizes.0.weight: ",
            "invalid type",
        ),
        (
            "[[traffic]]\nkind = \"incast\"\nbytes = 1.5",
            "error: traffic.0.bytes: ",
            "invalid type: floating point",
        ),
        ("seed = -1", "error: seed: ", "invalid value"),
        // Impossible values.
        (
            "[topology]\ngpus = 0",
            "error: topology.gpus: ",
            "not in 2..=4096",
        ),
        (
            "[topology]\ngpus = 4097",
            "error: topology.gpus: ",
            "not in 2..=4096",
        ),
        (
            "[link]\nrate_gbps = -400.0",
            "error: link.rate_gbps: ",
            "positive",
        ),
        ("[link]\nber = 2.0", "error: link.ber: ", "probability"),
        (
            "[[outages]]\nwhat = { kind = \"plane\", plane = 8 }",
            "error: outages.0.what.plane: ",
            "no such plane",
        ),
        (
            "[[traffic]]\nkind = \"incast\"\ntarget = 8",
            "error: traffic.0.target: ",
            "no such GPU",
        ),
        (
            "[[traffic]]\nkind = \"load_store\"\noutstanding = 8",
            "error: duration_ns: ",
            "finite workload",
        ),
    ] {
        let err = scenario_error(toml);
        assert!(err.starts_with(start), "{toml}: {err}");
        assert!(err.contains(why), "{toml}: {err} lacks {why:?}");
    }
    // Not TOML at all: the file, line and column.
    let err = scenario_error("seed = 1\n[topology\n");
    assert!(
        err.starts_with("error: ") && err.contains("bad.toml: line 2"),
        "{err}"
    );
}

#[test]
fn bad_capture_port_exits_2() {
    let dir = temp_dir("port");
    let file = write(&dir, "tiny.toml", TINY);
    for (port, needle) in [
        ("4:0", "--capture-port: GPU 4 does not exist"),
        ("0:2", "--capture-port: port 2 does not exist"),
        ("0", "GPU:PORT"),
        ("x:1", "--capture-port"),
    ] {
        let out_dir = dir.join("out").to_string_lossy().into_owned();
        let out = ethlink(
            &[
                "run",
                "--scenario",
                &file,
                "--out",
                &out_dir,
                "--capture-port",
                port,
            ],
            "",
        );
        assert_eq!(status(&out), 2, "{port}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{port}: {}", stderr(&out));
        assert!(stdout(&out).is_empty(), "{port}");
    }
}

#[test]
fn print_scenario_round_trips_and_json_files_read() {
    // The default, printed, reads back as the default with its derived values written in;
    // --seed applies.
    let printed = run_ok(&["run", "--print-scenario", "--seed", "9"]);
    let back = parse_scenario(&printed, Format::Toml).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        back,
        Scenario {
            seed: 9,
            ..Scenario::default()
        }
        .resolved()
    );
    assert_eq!(back.resolved(), back);
    // A JSON scenario reads as the same TOML one.
    let dir = temp_dir("json");
    let toml_file = write(&dir, "tiny.toml", TINY);
    let from_toml = parse_scenario(TINY, Format::Toml).unwrap_or_else(|e| panic!("{e}"));
    let json = serde_json::to_string(&from_toml).unwrap_or_default();
    let json_file = write(&dir, "tiny.json", &json);
    assert_eq!(
        run_ok(&["run", "--scenario", &json_file, "--print-scenario"]),
        run_ok(&["run", "--scenario", &toml_file, "--print-scenario"])
    );
    let err = ethlink(
        &[
            "run",
            "--scenario",
            &write(&dir, "bad.json", "{\"topology\": {\"gpus\": true}}"),
        ],
        "",
    );
    assert_eq!(status(&err), 2);
    assert!(
        stderr(&err).starts_with("error: topology.gpus: invalid type: boolean"),
        "{}",
        stderr(&err)
    );
}

#[test]
fn every_example_scenario_parses_and_validates() {
    let dir = examples_dir();
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
        let format = match path.extension().and_then(|e| e.to_str()) {
            Some("toml") => Format::Toml,
            Some("json") => Format::Json,
            _ => continue,
        };
        let text = text(&path);
        if format == Format::Toml {
            assert!(
                text.starts_with('#'),
                "{} should open with a comment saying what it shows",
                path.display()
            );
        }
        let s = parse_scenario(&text, format).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = path
            .file_stem()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        seen.push((name, s));
    }
    let get = |name: &str| -> &Scenario {
        seen.iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| s)
            .unwrap_or_else(|| panic!("examples/scenarios/{name}.toml is missing"))
    };
    assert_eq!(get("default"), &Scenario::default());
    assert_eq!(get("gpus64").topology.gpus, 64);
    let big = get("gpus1024");
    assert_eq!(big.topology.gpus, 1024);
    assert_eq!(big.topology.kind, TopologyKind::SingleTier);
    assert!(
        !big.metrics.series_per_port,
        "8192 per-port columns are too many"
    );
    let failure = get("plane_failure");
    assert!(
        failure
            .outages
            .iter()
            .any(|o| matches!(o.what, OutageTarget::Plane { .. }) && o.duration_ns.is_none()),
        "plane_failure has no lasting plane outage"
    );
    assert!(
        get("incast")
            .traffic
            .iter()
            .any(|w| matches!(w, Workload::Incast(_)))
    );
    assert_eq!(get("two_tier").topology.kind, TopologyKind::TwoTier);
    // The 4096-GPU example is the largest member of the cost curve's family
    // (scripts/cost_curve.py, docs/performance.md): the same scenario, key for key.
    let huge = get("gpus4096");
    assert_eq!(huge.topology.gpus, 4096);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let family = std::process::Command::new("python3")
        .arg(root.join("scripts/cost_curve.py"))
        .args(["--print-scenario", "4096"])
        .output()
        .expect("python3 runs scripts/cost_curve.py");
    assert!(family.status.success(), "{family:?}");
    let member = parse_scenario(&String::from_utf8_lossy(&family.stdout), Format::Toml)
        .unwrap_or_else(|e| panic!("the family's member does not parse: {e}"));
    assert_eq!(huge, &member);
}

#[test]
fn docs_describe_every_key() {
    let doc_path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/scenarios.md");
    let doc = text(&doc_path);
    // Every key of the default scenario, and of a workload of every kind and an outage of
    // every kind, appears in the schema as `key`.
    let mut keys = Vec::new();
    let mut collect = |v: &Value| {
        fn walk(v: &Value, keys: &mut Vec<String>) {
            match v {
                Value::Object(o) => {
                    for (k, x) in o {
                        keys.push(k.clone());
                        walk(x, keys);
                    }
                }
                Value::Array(a) => a.iter().for_each(|x| walk(x, keys)),
                _ => {}
            }
        }
        walk(v, &mut keys);
    };
    let mut s = Scenario::default();
    let all = r#"
[[traffic]]
kind = "load_store"
gpus = [0]
targets = [1]
rate_mops = 1.0
ops = 1
[[traffic]]
kind = "all_gather"
gpus = [0, 1]
[[traffic]]
kind = "reduce_scatter"
[[traffic]]
kind = "halving_doubling_allreduce"
[[traffic]]
kind = "send_recv"
stages = [0, 1]
[[traffic]]
kind = "incast"
senders = [1]
[[traffic]]
kind = "permutation"
[[outages]]
what = { kind = "link", gpu = 0, port = 0 }
duration_ns = 5
[[outages]]
what = { kind = "switch_port", switch = 0, port = 0 }
[[outages]]
what = { kind = "switch", switch = 0 }
[[outages]]
what = { kind = "plane", plane = 0 }
"#;
    let extra = parse_scenario(all, Format::Toml).unwrap_or_else(|e| panic!("{e}"));
    s.traffic.extend(extra.traffic.iter().cloned());
    s.outages = extra.outages.clone();
    s.duration_ns = Some(1);
    s.drain_ns = Some(1);
    s.link.propagation_ns = Some(1.0);
    collect(&serde_json::to_value(&s).unwrap_or_default());
    keys.sort();
    keys.dedup();
    assert!(keys.len() > 80, "{keys:?}");
    let missing: Vec<&String> = keys
        .iter()
        .filter(|k| !doc.contains(&format!("`{k}`")))
        .collect();
    assert!(missing.is_empty(), "docs/scenarios.md lacks {missing:?}");
    for kind in [
        "load_store",
        "all_to_all",
        "ring_allreduce",
        "halving_doubling_allreduce",
        "all_gather",
        "reduce_scatter",
        "send_recv",
        "incast",
        "permutation",
        "single_tier",
        "two_tier",
        "back_to_back",
        "switch_port",
    ] {
        assert!(
            doc.contains(&format!("`{kind}`")) || doc.contains(&format!("\"{kind}\"")),
            "docs lack `{kind}`"
        );
    }
}

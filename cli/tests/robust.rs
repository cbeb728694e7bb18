//! What a script can rely on: the verdict and the exit status of `ethlink run`, scenarios that
//! cannot work refused before they run, bounded times, memory and outputs, and messages that
//! say what is wrong.

mod common;

use std::path::{Path, PathBuf};

use common::{ethlink, status, stderr, stdout};

/// 4 GPUs of 2 ports on 2 planes, a few loads and stores and a small all-to-all: a fraction of
/// a second in a debug build.
const SMALL: &str = r#"
seed = 3
[topology]
gpus = 4
stacks = 1
ports_per_stack = 2
[[traffic]]
kind = "load_store"
ops = 100
[[traffic]]
kind = "all_to_all"
bytes_per_pair = 32768
iterations = 1
[metrics]
sample_ns = 0
"#;

/// A fresh directory of its own for one test.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-robust-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    path.to_string_lossy().into_owned()
}

/// `SMALL` with `top` before it (top-level keys) and `tables` after it.
fn small(top: &str, tables: &str) -> String {
    format!("{top}\n{SMALL}\n{tables}\n")
}

/// Runs `ethlink run` on the scenario `toml` with `extra` arguments: (status, stdout, stderr).
fn run(name: &str, toml: &str, extra: &[&str]) -> (i32, String, String) {
    let dir = temp_dir(name);
    let file = write(&dir, "s.toml", toml);
    let mut args = vec!["run", "--scenario", file.as_str()];
    args.extend_from_slice(extra);
    let out = ethlink(&args, "");
    (status(&out), stdout(&out), stderr(&out))
}

fn line<'a>(out: &'a str, key: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(key))
        .unwrap_or_else(|| panic!("no {key:?} line in:\n{out}"))
}

#[test]
fn every_operation_failing_is_a_failed_run_with_its_own_exit_status() {
    for (name, link) in [
        ("loss", "loss = 1.0"),
        ("ber", "ber = 1.0"),
        ("control", "control_loss = 1.0"),
    ] {
        let (code, out, err) = run(name, &small("", &format!("[link]\n{link}")), &[]);
        assert_eq!(code, 3, "{link}: {out}{err}");
        assert!(
            line(&out, "result").starts_with("result     FAIL: "),
            "{out}"
        );
        assert_eq!(
            line(&out, "data"),
            "data       intact: nothing lost, duplicated or corrupted",
            "{out}"
        );
    }
    let (_, out, _) = run("control2", &small("", "[link]\ncontrol_loss = 1.0"), &[]);
    assert!(
        line(&out, "result").contains("some links never came up"),
        "{out}"
    );
    let (_, out, _) = run("loss2", &small("", "[link]\nloss = 1.0"), &[]);
    assert!(
        line(&out, "result").contains("with an error status that no outage explains"),
        "{out}"
    );
}

#[test]
fn a_scenario_that_expects_errors_passes_with_them() {
    let toml = small("", "[link]\nloss = 1.0\n[expect]\nerrors = \"allowed\"");
    let (code, out, err) = run("allowed", &toml, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(line(&out, "result"), "result     PASS");
    let (code, _, err) = run("badexpect", &small("", "[expect]\nerrors = \"some\""), &[]);
    assert_eq!(code, 2);
    assert!(err.starts_with("error: expect.errors: "), "{err}");
}

#[test]
fn a_clean_run_passes_and_says_so_on_two_lines() {
    let (code, out, err) = run("clean", &small("", ""), &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(line(&out, "result"), "result     PASS");
    assert_eq!(
        line(&out, "data"),
        "data       intact: nothing lost, duplicated or corrupted"
    );
}

#[test]
fn run_help_documents_every_exit_status() {
    let out = ethlink(&["run", "--help"], "");
    let help = stdout(&out);
    assert!(
        help.contains("Exit status: 0 when the run passes; 1 when data was lost"),
        "{help}"
    );
    assert!(
        help.contains("; 3 when the data is intact but the run fails"),
        "{help}"
    );
    assert!(
        help.contains("; 2 when the scenario or an option cannot be used"),
        "{help}"
    );
    assert!(help.contains("[expect]"), "{help}");
}

#[test]
fn a_credit_buffer_smaller_than_one_frame_is_refused() {
    let (code, out, err) = run("credits", &small("", "[link]\nrx_credits = 1"), &[]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.starts_with("error: link.rx_credits: "), "{err}");
    let toml = small(
        "",
        "[link]\nmfs = 4096\nrx_credits = 64\n[endpoint]\nsegment = 8192",
    );
    let (code, _, err) = run("segment", &toml, &[]);
    assert_eq!(code, 2);
    assert!(err.starts_with("error: endpoint.segment: "), "{err}");
}

#[test]
fn times_out_of_range_are_refused_with_the_limit() {
    for (top, tables, key) in [
        ("duration_ns = 4611686018427387904", "", "duration_ns"),
        (
            "",
            "[[outages]]\nwhat = { kind = \"switch\", switch = 0 }\nstart_ns = 100000000000000000",
            "outages.0.start_ns",
        ),
        (
            "",
            "[metrics]\nsample_ns = 9223372036854775807",
            "metrics.sample_ns",
        ),
        (
            "",
            "[metrics]\nsample_ns = 2305843009213693952",
            "metrics.sample_ns",
        ),
    ] {
        // `[metrics]` appears twice when the test adds one: drop SMALL's.
        let toml = small(top, tables);
        let toml = if tables.starts_with("[metrics]") {
            toml.replacen("[metrics]\nsample_ns = 0\n", "", 1)
        } else {
            toml
        };
        let (code, out, err) = run("times", &toml, &[]);
        assert_eq!(code, 2, "{key}: {out}{err}");
        assert!(err.starts_with(&format!("error: {key}: ")), "{err}");
        assert!(err.contains("1000000000000000 ns"), "{err}");
    }
}

#[test]
fn writes_cut_off_by_the_time_limit_are_not_stray() {
    let toml = small("time_limit_ns = 20000", "")
        .replace("bytes_per_pair = 32768", "bytes_per_pair = 16777216");
    let (code, out, err) = run("cut", &toml, &[]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("stray 0"), "{out}");
    assert!(
        out.contains("of writes still in flight at the end, of unknown fate"),
        "{out}"
    );
    assert!(out.contains("cut off by the time limit"), "{out}");
    assert!(!out.contains("stray bytes"), "{out}");
}

#[test]
fn a_topology_that_cannot_fit_is_refused_before_it_is_built() {
    let toml = "[topology]\ngpus = 1024\nstacks = 16\nports_per_stack = 16\n";
    let (code, out, err) = run("huge", toml, &["--max-memory", "64G"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.is_empty());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("the run needs about "), "{err}");
    assert!(err.contains("262144 switch ports"), "{err}");
    assert!(err.contains("make "), "{err}");
    assert!(err.contains("run it anyway with --max-memory "), "{err}");
    // The documented maximum RDMA size on 4 GPUs: its data is described, not held, so the run
    // fits in less than one transfer's bytes; cut short by its time limit, its data is intact.
    let toml = small("time_limit_ns = 20000", "")
        .replace("bytes_per_pair = 32768", "bytes_per_pair = 4294967295");
    let (code, out, err) = run("rdma", &toml, &["--max-memory", "1G"]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("corrupted 0, stray 0, wrong loads 0"), "{out}");
    assert!(out.contains("cut off by the time limit"), "{out}");
    // --max-memory raises (or lowers) the limit.
    let (code, _, err) = run("low", &small("", ""), &["--max-memory", "1M"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("more than the limit of --max-memory (1.0 MiB)"),
        "{err}"
    );
    let (code, _, err) = run("badsize", &small("", ""), &["--max-memory", "lots"]);
    assert_eq!(code, 2);
    assert!(err.contains("--max-memory"), "{err}");
}

#[test]
fn the_summary_gives_the_estimate_and_the_peak_stays_below_it() {
    let (code, out, err) = run("estimate", &small("", ""), &[]);
    assert_eq!(code, 0, "{out}{err}");
    let speed = line(&out, "Speed (wall clock)");
    let mib = |s: &str| -> f64 {
        let (n, unit) = s.split_once(' ').unwrap_or((s, ""));
        let n: f64 = n.parse().unwrap_or_else(|_| panic!("{s:?} in {speed}"));
        match unit.trim_end_matches(')') {
            "MiB" => n,
            "GiB" => n * 1024.0,
            "KiB" => n / 1024.0,
            u => panic!("unit {u:?} in {speed}"),
        }
    };
    let peak = speed
        .split("peak RSS ")
        .nth(1)
        .and_then(|s| s.split(" (").next())
        .unwrap_or_else(|| panic!("{speed}"));
    let estimate = speed
        .split("(estimated at most ")
        .nth(1)
        .unwrap_or_else(|| panic!("{speed}"));
    assert!(mib(peak) <= mib(estimate), "{speed}");
}

fn link_json(args: &[&str]) -> (i32, serde_json::Value, String) {
    let mut all = vec!["link", "--json"];
    all.extend_from_slice(args);
    let out = ethlink(&all, "");
    let v = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {}{}", stdout(&out), stderr(&out)));
    (status(&out), v, stderr(&out))
}

#[test]
fn every_link_run_ends_within_its_event_budget() {
    // A CC frame every nanosecond for a second of simulated time: stopped by the budget.
    let (code, r, _) = link_json(&[
        "--frames",
        "2000",
        "--cc-interval-ns",
        "1",
        "--max-events",
        "20000",
    ]);
    assert_eq!(code, 0);
    assert_eq!(r["event_budget_hit"], true, "{r}");
    assert_eq!(r["timed_out"], false, "{r}");
    assert_eq!(r["parameters"]["max_events"], 20000);
    let t = r["simulated_time_ns"].as_u64().unwrap_or(0);
    assert!(t > 0 && t < 1_000_000_000, "{r}");
    // Hopeless settings with the largest time limit: named at once, and the run still ends.
    for (option, value, says) in [
        ("--control-loss", "1", "the link never comes up"),
        ("--ber", "1", "every frame is damaged"),
        ("--drain", "0", "at most 20 of the 2000 frames fit"),
    ] {
        let (code, r, err) = link_json(&[
            "--frames",
            "2000",
            option,
            value,
            "--time-limit-ns",
            "18446744073709551615",
            "--max-events",
            "20000",
        ]);
        assert_eq!(code, 0, "{option}: {err}");
        assert!(
            err.starts_with(&format!("warning: {option} {value}: ")),
            "{err}"
        );
        assert!(err.contains(says), "{err}");
        assert_eq!(r["event_budget_hit"], true, "{option}: {r}");
    }
    let out = ethlink(&["link", "--max-events", "10"], "");
    assert_eq!(status(&out), 2);
    assert!(stderr(&out).contains("--max-events 10: must be at least 1000"));
}

#[test]
fn a_run_stopped_by_its_time_limit_reports_the_time_it_ran() {
    let (_, r, _) = link_json(&["--frames", "2000", "--link-down-ns", "0:5000000000"]);
    assert_eq!(r["timed_out"], true, "{r}");
    assert_eq!(r["simulated_time_ns"], 1_000_000_000u64, "{r}");
}

/// Runs `sh -c SCRIPT` with the binary as `$0`: for redirections the test harness cannot make.
fn shell(script: &str) -> std::process::Output {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_ethlink"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run sh: {e}"))
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn out_keeps_nothing_of_a_run_that_fails_to_write() {
    // A directory where metrics.json goes: nothing else is left behind, no partial file.
    let dir = temp_dir("outdir");
    let file = write(&dir, "s.toml", &small("", ""));
    let out_dir = dir.join("out");
    std::fs::create_dir_all(out_dir.join("metrics.json")).expect("a directory");
    let out_arg = out_dir.to_string_lossy().into_owned();
    let out = ethlink(&["run", "--scenario", &file, "--out", &out_arg], "");
    assert_eq!(status(&out), 2, "{}", stdout(&out));
    assert!(stderr(&out).contains("metrics.json"), "{}", stderr(&out));
    assert_eq!(listing(&out_dir), vec!["metrics.json".to_owned()]);

    // Standard output on a full device: the error says so, and --out keeps nothing.
    let out_dir = dir.join("full");
    let o = shell(&format!(
        "exec \"$0\" run --scenario {file} --out {} > /dev/full",
        out_dir.display()
    ));
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("No space left on device"), "{err}");
    assert!(listing(&out_dir).is_empty(), "{:?}", listing(&out_dir));

    // And a run that succeeds keeps every file under its own name, and no partial one.
    let out_dir = dir.join("good");
    let out_arg = out_dir.to_string_lossy().into_owned();
    let out = ethlink(&["run", "--scenario", &file, "--out", &out_arg], "");
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    let names = listing(&out_dir);
    assert_eq!(names.len(), 6, "{names:?}");
    assert!(names.iter().all(|n| !n.ends_with(".partial")), "{names:?}");
}

#[test]
fn a_closed_standard_output_is_an_error() {
    for args in ["link --frames 100", "efficiency", "run --print-scenario"] {
        let o = shell(&format!("exec \"$0\" {args} >&-"));
        assert_eq!(o.status.code(), Some(2), "{args}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("standard output is closed"), "{args}: {err}");
    }
}

/// The one line `ethlink run` prints for a scenario it refuses.
fn refusal(name: &str, toml: &str) -> String {
    let (code, out, err) = run(name, toml, &[]);
    assert_eq!(code, 2, "{toml}: {out}{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    err.trim_end().to_owned()
}

#[test]
fn toml_values_are_judged_as_toml_wrote_them() {
    for (toml, says) in [
        (
            "[link]\nber = nan",
            "error: link.ber: NaN is not a probability in 0..=1",
        ),
        (
            "[link]\nrate_gbps = inf",
            "error: link.rate_gbps: inf is not a positive number of Gb/s",
        ),
        (
            "seed = 1979-05-27",
            "error: seed: invalid type: the date-time 1979-05-27, expected u64",
        ),
        (
            "[topology]\ngpus = 18446744073709551616",
            "error: topology.gpus: invalid value: integer `18446744073709551616`, expected u16",
        ),
        (
            "[[traffic]]\nkind = \"all_to_all\"\nbytes_per_pair = nan",
            "error: traffic.0.bytes_per_pair: invalid value: NaN, expected u64",
        ),
    ] {
        let err = refusal("toml", toml);
        assert!(err.starts_with(says), "{toml}: {err}");
        assert!(
            !err.contains("null") && !err.contains("map") && !err.contains("JSON"),
            "{err}"
        );
    }
}

#[test]
fn limits_are_stated_as_they_are() {
    // A negative number in scientific notation is a value, refused for its range.
    let out = ethlink(&["link", "--ber", "-1e-9"], "");
    assert_eq!(status(&out), 2);
    assert!(
        stderr(&out).contains("--ber: -0.000000001 is not a probability"),
        "{}",
        stderr(&out)
    );
    // A collective's real limit: one RDMA write per step, at most 2^32-1 bytes.
    let err = refusal(
        "ring",
        "[[traffic]]\nkind = \"ring_allreduce\"\nsizes = [1099511627776]",
    );
    assert!(
        err.contains("more than the 2^32-1 one write carries"),
        "{err}"
    );
    assert!(
        err.contains("at most 34359738360 bytes with 8 GPUs"),
        "{err}"
    );
    let doc = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/scenarios.md"),
    )
    .unwrap_or_default();
    assert!(
        !doc.contains("<= 2^40"),
        "docs/scenarios.md still allows 2^40"
    );
}

/// The first frame of the vectors as `decode --jsonl` prints it, and one with an `address`.
fn frames_json() -> (String, String) {
    let path = common::vectors_dir().join("vectors.pcapng");
    let out = ethlink(
        &["decode", "--pcap", &path.to_string_lossy(), "--jsonl"],
        "",
    );
    let text = stdout(&out);
    let first = text.lines().next().unwrap_or_default().to_owned();
    let with_address = text
        .lines()
        .find(|l| l.contains("\"address\":\"0x"))
        .unwrap_or_default()
        .to_owned();
    (first, with_address)
}

#[test]
fn encode_takes_only_the_documented_forms() {
    let (first, with_address) = frames_json();
    assert!(!with_address.is_empty());
    for (json, says) in [
        (first.replacen("\"02:", "\"+2:", 1), "is not a MAC address"),
        (
            with_address.replacen("\"address\":\"0x", "\"address\":\"0x+", 1),
            "is not 0x followed by hex digits",
        ),
        ("[[1, 2]]".to_owned(), "[0]: must be a JSON object of keys"),
        (
            first
                .replacen("\"eth\":{", "\"eth\":[1,{", 1)
                .replacen("},\"link\"", "}],\"link\"", 1),
            "eth: must be a JSON object of keys",
        ),
    ] {
        let out = ethlink(&["encode"], &json);
        assert_eq!(status(&out), 2, "{json}: {}", stdout(&out));
        assert!(stderr(&out).contains(says), "{says}: {}", stderr(&out));
    }
    // The well-formed frame still encodes.
    let out = ethlink(&["encode"], &first);
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    // Nine CF counters: said as such.
    let nine = with_counters(9);
    if let Some(json) = nine {
        let out = ethlink(&["encode"], &json);
        assert_eq!(status(&out), 2);
        assert!(
            stderr(&out).contains("holds more than 8 elements"),
            "{}",
            stderr(&out)
        );
    }
}

/// A CF frame of the vectors with `n` credit counters.
fn with_counters(n: usize) -> Option<String> {
    let path = common::vectors_dir().join("vectors.pcapng");
    let out = ethlink(
        &["decode", "--pcap", &path.to_string_lossy(), "--jsonl"],
        "",
    );
    let text = stdout(&out);
    let line = text.lines().find(|l| l.contains("\"counters\":["))?;
    let mut v: serde_json::Value = serde_json::from_str(line).ok()?;
    let counters = v["credits"]["counters"].as_array_mut()?;
    counters.resize(n, serde_json::Value::Null);
    Some(v.to_string())
}

#[test]
fn a_scenario_table_written_as_an_array_is_refused() {
    let err = refusal("positional", "topology = [\"single_tier\", 4, 1, 2]");
    assert!(
        err.starts_with("error: topology: must be a table of keys"),
        "{err}"
    );
    let err = refusal("positional2", "[[outages]]\nwhat = [\"switch\", 0]");
    assert!(
        err.starts_with("error: outages.0.what: must be a table"),
        "{err}"
    );
}

#[test]
fn encode_can_skip_the_frames_it_rejects_and_count_them() {
    let (first, _) = frames_json();
    let bad = first.replacen("\"02:", "\"+2:", 1);
    let array = format!("[{first},{bad},{first}]");
    let out = ethlink(&["encode"], &array);
    assert_eq!(status(&out), 2, "one rejected frame fails the array");
    let out = ethlink(&["encode", "--skip-invalid"], &array);
    assert_eq!(status(&out), 1, "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().count(), 2);
    let err = stderr(&out);
    assert!(err.contains("[1] skipped: "), "{err}");
    assert!(err.contains("1 of 3 frames skipped, 2 encoded"), "{err}");
}

#[test]
fn the_summary_reads_right_in_small_cases() {
    // Incast to one GPU, loads and stores to that GPU: "GPU 0", not "GPUs 0".
    let toml = "[topology]\ngpus = 4\nstacks = 1\nports_per_stack = 2\n\
        [link]\nloss = 0.001\nburst = 3\ncontrol_loss = 0.001\n\
        [[traffic]]\nkind = \"incast\"\nbytes = 65536\n\
        [[traffic]]\nkind = \"load_store\"\nops = 20\ngpus = [1, 2, 3]\ntargets = [0]\n";
    let (code, out, err) = run("quirks", toml, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("-> GPU 0,"), "{out}");
    assert!(!out.contains("GPUs 0"), "{out}");
    let links = line(&out, "links");
    assert!(links.contains("in bursts of 3 frames"), "{links}");
    assert!(links.contains("control loss 0.001"), "{links}");
    assert!(out.contains("responses lost with their link"), "{out}");
    // Back to back: no switch, so no switch-port imbalance.
    let toml = "[topology]\nkind = \"back_to_back\"\ngpus = 2\nstacks = 1\nports_per_stack = 2\n\
        [[traffic]]\nkind = \"load_store\"\nops = 20\n";
    let (code, out, _) = run("b2b", toml, &[]);
    assert_eq!(code, 0);
    assert!(!out.contains("switch ports"), "{out}");
    // --print-scenario writes small floats with an exponent.
    let out = ethlink(&["run", "--print-scenario"], "");
    let text = stdout(&out);
    assert!(text.contains("ber = 1e-10"), "{text}");
    assert!(!text.contains("0.0000000001"), "{text}");
}

/// Ctrl-C during a run with `--out` leaves nothing behind: no file under a final name, no
/// temporary file, and the exit status a shell gives a process ended by SIGINT.
#[test]
fn an_interrupted_run_keeps_nothing() {
    let dir = temp_dir("sigint");
    let out_dir = dir.join("out");
    // Small to build, long to run: a large all-to-all on 4 GPUs.
    let file = write(
        &dir,
        "s.toml",
        "seed = 1\n[topology]\ngpus = 4\nstacks = 1\nports_per_stack = 2\n\
         [[traffic]]\nkind = \"all_to_all\"\nbytes_per_pair = 16777216\niterations = 64\n",
    );
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_ethlink"))
        .args(["run", "--no-progress", "--scenario", &file, "--out"])
        .arg(&out_dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("ethlink runs");
    // The capture is opened under its temporary name before the simulation starts; the default
    // scenario then runs for seconds.
    let partial = out_dir.join(".capture.pcapng.partial");
    let mut waited = 0;
    while !partial.exists() && waited < 600 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        waited += 1;
    }
    assert!(partial.exists(), "the run never opened its capture");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let out = child.wait_with_output().expect("the run ends");
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("interrupted"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(listing(&out_dir).is_empty(), "{:?}", listing(&out_dir));
}

#[test]
fn a_buffer_below_the_credit_loop_is_warned_about_and_the_derived_one_shown() {
    // 512 credits of 64 B at 800 Gb/s through a switch: far below one credit loop.
    let (code, out, err) = run(
        "loop",
        &small("", "[link]\nrate_gbps = 800.0\nrx_credits = 512"),
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.starts_with(
            "warning: link.rx_credits = 512 (32768 bytes per VC) cannot cover the credit loop"
        ),
        "{err}"
    );
    assert!(
        line(&out, "buffers").contains("512 credits of 64 B"),
        "{out}"
    );
    // Left out, the grant is derived, shown, and printed by --print-scenario.
    let (code, out, err) = run("derived", &small("", "[link]\nrate_gbps = 800.0"), &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.is_empty(), "{err}");
    let buffers = line(&out, "buffers");
    assert!(
        buffers.contains("the default grants twice that"),
        "{buffers}"
    );
    let credits: u32 = buffers
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no credit count in {buffers}"));
    let (_, printed, _) = run(
        "printed",
        &small("", "[link]\nrate_gbps = 800.0"),
        &["--print-scenario"],
    );
    assert!(
        printed.contains(&format!("rx_credits = {credits}\n")),
        "{printed}"
    );
}

/// Runs `ethlink run` on the JSON scenario `json`: its one line of error.
fn json_refusal(name: &str, json: &str) -> String {
    let dir = temp_dir(name);
    let file = write(&dir, "s.json", json);
    let out = ethlink(&["run", "--scenario", &file, "--print-scenario"], "");
    assert_eq!(status(&out), 2, "{json}: {}{}", stdout(&out), stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    err.trim_end().to_owned()
}

#[test]
fn a_key_given_twice_is_refused_by_its_path() {
    // JSON: serde_json alone keeps the last of the two.
    for (json, says) in [
        (
            "{\"seed\": 1,\n \"seed\": 2}",
            "error: seed: given twice in one object (again on line 2)",
        ),
        (
            "{\"link\": {\"ber\": 0.5, \"ber\": 0.0}}",
            "error: link.ber: given twice",
        ),
        (
            "{\"traffic\": [{\"kind\": \"load_store\", \"ops\": 3},\n\
             {\"kind\": \"all_to_all\", \"window\": 2, \"window\": 3}]}",
            "error: traffic.1.window: given twice in one object (again on line 2)",
        ),
        (
            "{\"outages\": [{\"what\": {\"kind\": \"link\", \"gpu\": 0, \"port\": 1, \
             \"gpu\": 1}}]}",
            "error: outages.0.what.gpu: given twice",
        ),
        // The same key, written with an escape.
        (
            "{\"topology\": {\"gpus\": 4, \"gp\\u0075s\": 8}}",
            "error: topology.gpus: given twice",
        ),
    ] {
        let err = json_refusal("dup-json", json);
        assert!(err.starts_with(says), "{json}: {err}");
    }
    // A JSON file that is not JSON is still named as such, with its line.
    let err = json_refusal("bad-json", "{\"seed\": 1,");
    assert!(err.contains("s.json: line 1"), "{err}");
    // TOML refuses them too, at the line of the second, naming the key.
    for (toml, at, key) in [
        ("[link]\nber = 0.5\nber = 0.0", "line 3, column 1", "`ber`"),
        ("[link]\nber = 0.5\n[link]\nloss = 0.1", "line 3", "`link`"),
        ("link = { ber = 0.1, ber = 0.2 }", "line 1", "`ber`"),
        (
            "[[traffic]]\nkind = \"load_store\"\nops = 1\nops = 2",
            "line 4",
            "`ops`",
        ),
    ] {
        let err = refusal("dup-toml", toml);
        assert!(
            err.contains(&format!("s.toml: {at}")) && err.contains(&format!("duplicate key {key}")),
            "{toml}: {err}"
        );
    }
}

#[test]
fn a_scenario_file_is_read_up_to_its_limit() {
    let dir = temp_dir("long");
    // 2 MiB of one comment: valid TOML, but longer than any scenario.
    let long = write(&dir, "long.toml", &format!("#{}\n", "x".repeat(2 << 20)));
    let out = ethlink(&["run", "--scenario", &long, "--print-scenario"], "");
    assert_eq!(status(&out), 2, "{}", stderr(&out));
    assert_eq!(
        stderr(&out).trim_end(),
        format!(
            "error: --scenario: {long} is longer than 1048576 bytes, the most this command reads"
        )
    );
    // An endless file: refused at the limit, under a memory limit that reading it all would
    // break at once.
    let o = shell("ulimit -v 500000; exec \"$0\" run --scenario /dev/zero --print-scenario");
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert_eq!(
        String::from_utf8_lossy(&o.stderr).trim_end(),
        "error: --scenario: /dev/zero is longer than 1048576 bytes, the most this command reads"
    );
}

#[test]
fn more_spines_than_a_forwarding_entry_holds_are_refused_before_anything_runs() {
    let err = refusal(
        "spines",
        "[topology]\nkind = \"two_tier\"\ngpus = 8\nleaves = 2\nspines = 1020\nstacks = 1\n\
         ports_per_stack = 1",
    );
    assert!(
        err.starts_with("error: topology.spines: 1020 spines") && err.contains("at most 64"),
        "{err}"
    );
    // --print-scenario checks it too.
    let (code, _, err) = run(
        "spines-print",
        "[topology]\nkind = \"two_tier\"\nleaves = 2\nspines = 65",
        &["--print-scenario"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with("error: topology.spines: 65 spines"),
        "{err}"
    );
}

#[test]
fn ordered_streams_past_2_20_slots_run_intact() {
    let (code, out, err) = run(
        "streams",
        "[topology]\nkind = \"back_to_back\"\ngpus = 2\nstacks = 1\nports_per_stack = 1\n\
         [[traffic]]\nkind = \"load_store\"\nordered_share = 1.0\nstreams = 300\n\
         stream_slots = 65536\nops = 200\n[metrics]\nsample_ns = 0",
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(line(&out, "result").ends_with("PASS"), "{out}");
    assert!(line(&out, "  data check").contains("stray 0"), "{out}");
}

#[test]
fn an_open_loop_rate_too_slow_for_the_run_issues_nothing() {
    let (code, out, err) = run(
        "slow",
        "duration_ns = 100000\n[topology]\nkind = \"back_to_back\"\ngpus = 2\nstacks = 1\n\
         ports_per_stack = 1\n[[traffic]]\nkind = \"load_store\"\nrate_mops = 1e-15\nops = 19\n\
         [metrics]\nsample_ns = 0",
        &["--json"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let j: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"));
    assert_eq!(j["ops"]["issued"], 0, "{}", j["ops"]);
}

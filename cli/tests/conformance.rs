//! `ethlink conformance`: listing, filtering, exit statuses, reports, and a run against the
//! Python example link end through --dut-cmd.

mod common;

use std::path::PathBuf;

use common::{ethlink, status, stderr, stdout};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn python_device() -> String {
    format!(
        "python3 {}",
        root().join("examples/conformance/link_end.py").display()
    )
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-conf-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn list_prints_every_link_end_case() {
    let out = ethlink(&["conformance", "--list", "--role", "link_end"], "");
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("LE-INIT-1"), "{text}");
    assert!(text.contains("LE-LLR-1"), "{text}");
    // The link-end catalogue: its own cases and one per golden vector.
    assert!(
        text.lines()
            .filter(|l| !l.starts_with("    "))
            .all(|l| l.starts_with("LE-") || l.starts_with("VEC-")),
        "{text}"
    );
    // Each requirement of a case quoted from the spec under it.
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("LINK-4-3")
            && l.contains("(link.md MUST)")
            && l.contains("NACK")),
        "{text}"
    );
}

#[test]
fn list_json_quotes_each_requirement() {
    let dir = temp_dir("list-json");
    let json = dir.join("list.json");
    let out = ethlink(
        &[
            "conformance",
            "--list",
            "--role",
            "endpoint",
            "--filter",
            "EPT-BACK-1",
            "--json",
            json.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 1);
    let r = &cases[0]["reqs"][0];
    assert_eq!(r["id"], "EP-8-4");
    assert_eq!(r["doc"], "endpoint.md");
    assert!(
        r["text"]
            .as_str()
            .unwrap()
            .starts_with("When its response backlog reaches"),
        "{r}"
    );
}

#[test]
fn filter_takes_a_substring_or_a_glob() {
    let out = ethlink(&["conformance", "--list", "--filter", "LLR"], "");
    assert!(stdout(&out).contains("LE-LLR-1"));
    assert!(!stdout(&out).contains("LE-INIT-1"));
    let out = ethlink(&["conformance", "--list", "--filter", "LE-*-1"], "");
    assert!(stdout(&out).contains("LE-LLR-1") && stdout(&out).contains("LE-INIT-1"));
    let out = ethlink(&["conformance", "--filter", "NO-SUCH-CASE"], "");
    assert_eq!(status(&out), 2);
    assert!(
        stderr(&out).contains("no link_end case matches"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_reference_passes_and_reports_do_not_depend_on_jobs() {
    let dir = temp_dir("reference");
    let mut texts = Vec::new();
    for jobs in ["1", "2"] {
        let json = dir.join(format!("r{jobs}.json"));
        let junit = dir.join(format!("r{jobs}.xml"));
        let out = ethlink(
            &[
                "conformance",
                "--jobs",
                jobs,
                "--json",
                json.to_str().unwrap(),
                "--junit",
                junit.to_str().unwrap(),
            ],
            "",
        );
        assert_eq!(status(&out), 0, "{}{}", stdout(&out), stderr(&out));
        assert!(stdout(&out).contains("result: PASS"));
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(v["passed"], true);
        for c in v["cases"].as_array_mut().unwrap() {
            assert_eq!(c["verdict"], "Pass");
            c.as_object_mut().unwrap().remove("wall_us");
        }
        let xml = std::fs::read_to_string(&junit).unwrap();
        assert!(xml.starts_with("<?xml"));
        assert!(xml.contains("<testsuite name=\"link_end\""));
        texts.push((stdout(&out), v));
    }
    assert_eq!(texts[0], texts[1]);
}

#[test]
fn the_python_link_end_passes_through_dut_cmd() {
    let dir = temp_dir("python");
    let out = ethlink(
        &[
            "conformance",
            "--dut-cmd",
            &python_device(),
            "--jobs",
            "2",
            "--pcap-dir",
            dir.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(status(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("python example link end"), "{text}");
    assert!(text.contains("0 fail"), "{text}");
    // No failed case: no capture.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
}

#[test]
fn a_device_that_cannot_say_hello_exits_2() {
    let out = ethlink(&["conformance", "--dut-cmd", "echo nonsense"], "");
    assert_eq!(status(&out), 2);
    assert!(stderr(&out).contains("hello"), "{}", stderr(&out));
}

#[test]
fn a_device_that_breaks_mid_run_gets_harness_errors_and_exit_1() {
    // Answers hello and reset, then dies: every case is a harness error, and the run fails.
    let script = "import json,sys\n\
        P = {'vcs': 4, 'credit_size': 64, 'rx_credits': 512, 'credit_overhead': 0, 'mfs': 9216, \
             'llr_window': 524288, 'replay_max_frames': 115, 'replay_max_bytes': 58768, \
             'ack_spacing': 2048, 'ack_timer_ns': 500, 'replay_timer_ns': 5000, \
             'replay_count_max': 3, 'cf_min_credits': 8, 'cf_min_interval_ns': 100, \
             'cf_max_interval_ns': 2000, 'cc_interval_ns': 10000, 'init_interval_ns': 1000, 'llr_max_age_ns': 25000}\n\
        for line in sys.stdin:\n    \
            m = json.loads(line)\n    \
            if m['op'] == 'hello': print(json.dumps({'ok': True, 'version': 2, 'name': 'dies', 'role': 'link_end', 'ports': 1, 'seq': m['seq']}), flush=True)\n    \
            elif m['op'] == 'reset': print(json.dumps({'ok': True, 'params': P, 'seq': m['seq']}), flush=True)\n    \
            else: sys.exit('model crashed')\n";
    let dir = temp_dir("dies");
    let path = dir.join("dies.py");
    std::fs::write(&path, script).unwrap();
    let cmd = format!("python3 {}", path.display());
    let json = dir.join("r.json");
    let out = ethlink(
        &[
            "conformance",
            "--dut-cmd",
            &cmd,
            "--json",
            json.to_str().unwrap(),
        ],
        "",
    );
    let text = stdout(&out);
    assert!(text.contains("HARNESSERROR LE-INIT-1"), "{text}");
    assert!(text.contains("model crashed"), "{text}");
    assert_eq!(status(&out), 1, "{text}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let listed = stdout(&ethlink(
        &["conformance", "--list", "--role", "link_end"],
        "",
    ))
    .lines()
    .filter(|l| !l.starts_with("    "))
    .count();
    assert_eq!(v["totals"]["HarnessError"], listed as u64);
}

#[test]
fn bad_arguments_exit_2() {
    for args in [
        &["conformance", "--jobs", "0"][..],
        &["conformance", "--role", "router"][..],
        &["conformance", "--case-timeout-s", "-1", "--dut-cmd", "true"][..],
    ] {
        let out = ethlink(args, "");
        assert_eq!(status(&out), 2, "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn the_reference_served_over_the_protocol_gives_the_same_report() {
    let dir = temp_dir("serve");
    let exe = env!("CARGO_BIN_EXE_ethlink");
    let served = dir.join("served.json");
    let direct = dir.join("direct.json");
    let cmd = format!("{exe} conformance --serve");
    let out = ethlink(
        &[
            "conformance",
            "--dut-cmd",
            &cmd,
            "--jobs",
            "2",
            "--json",
            served.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(status(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let out = ethlink(&["conformance", "--json", direct.to_str().unwrap()], "");
    assert_eq!(status(&out), 0);
    let read = |p: &PathBuf| {
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        for c in v["cases"].as_array_mut().unwrap() {
            c.as_object_mut().unwrap().remove("wall_us");
        }
        v
    };
    assert_eq!(read(&served), read(&direct));
}

#[test]
fn serve_answers_out_of_protocol_requests_with_an_error() {
    let input = "{\"op\":\"hello\",\"version\":1,\"seq\":1}\n\
                 {\"op\":\"hello\",\"version\":2,\"seq\":2}\n\
                 not json\n\
                 {\"op\":\"reset\",\"setup\":{\"link\":{\"vcs\":9}},\"seq\":4}\n\
                 {\"op\":\"reset\",\"setup\":{\"link\":{\"warp\":1}},\"seq\":5}\n\
                 {\"op\":\"bye\",\"seq\":6}\n\
                 {\"op\":\"counters\",\"seq\":7}\n";
    let out = ethlink(&["conformance", "--serve"], input);
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 6, "{lines:?}");
    assert!(lines[0]["error"].as_str().unwrap().contains("version 2"));
    // Every answer echoes its request's seq; a line that is no request has none to echo.
    assert_eq!(lines[0]["seq"], 1);
    assert_eq!(lines[1]["seq"], 2);
    assert!(lines[2].get("seq").is_none());
    assert_eq!(lines[1]["ok"], true);
    assert_eq!(lines[1]["role"], "link_end");
    assert!(
        lines[2]["error"]
            .as_str()
            .unwrap()
            .contains("not a request")
    );
    assert!(lines[3]["refused"].is_string(), "{:?}", lines[3]);
    assert!(lines[4]["error"].as_str().unwrap().contains("warp"));
    assert_eq!(lines[5], serde_json::json!({"ok": true, "seq": 6}));
}

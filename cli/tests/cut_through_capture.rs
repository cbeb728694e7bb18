//! A run with cut-through switches over lossy cables (switch.md §6): the summary counts the frames
//! cut through and the copies stomped, and in the capture of one cable the Wireshark dissector
//! (tools/wireshark/ethlink.lua) marks each stomped copy as such.
//!
//! The Wireshark part needs `tshark` on the PATH (the project's test script installs it); set
//! ETHLINK_SKIP_TSHARK=1 to skip it on a machine without it.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{ethlink, status, stderr, stdout};

/// Four GPUs of two ports on two planes of 60 ns cut-through switches, cables with a bit error
/// rate of 1e-6, an all-to-all of 8 KiB segments.
const SCENARIO: &str = r#"
seed = 5
stop_when_done = true

[topology]
kind = "single_tier"
gpus = 4
stacks = 1
ports_per_stack = 2

[link]
ber = 1e-7

[switch]
latency_ns = 60
mode = "cut_through"

[metrics]
sample_ns = 0

[[traffic]]
kind = "all_to_all"
bytes_per_pair = 400000
iterations = 2
"#;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-ct-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// The number after `label` in `text` (the first one).
fn number_after(text: &str, label: &str) -> Option<u64> {
    let at = text.find(label)? + label.len();
    text[at..]
        .split(|c: char| !c.is_ascii_digit())
        .find(|s| !s.is_empty())?
        .parse()
        .ok()
}

#[test]
fn the_summary_counts_stomps_and_wireshark_marks_them() {
    let dir = temp_dir("capture");
    let file = dir.join("ct.toml");
    std::fs::write(&file, SCENARIO).unwrap_or_else(|e| panic!("{e}"));
    let out = dir.join("out");
    let o = ethlink(
        &[
            "run",
            "--no-progress",
            "--scenario",
            &file.to_string_lossy(),
            "--out",
            &out.to_string_lossy(),
            "--capture-port",
            "1:0",
        ],
        "",
    );
    assert_eq!(status(&o), 0, "{}", stderr(&o));
    let summary = stdout(&o);
    assert!(summary.contains("result     PASS"), "{summary}");
    let line = summary
        .lines()
        .find(|l| l.contains("cut through:"))
        .unwrap_or_else(|| panic!("no cut-through line:\n{summary}"));
    let cut = number_after(line, "cut through:").expect("frames cut through");
    let stomped = number_after(line, "arrived; ").expect("copies stomped");
    let tx = number_after(line, "tx_stomped").expect("tx_stomped");
    let rx = number_after(line, "rx_stomped").expect("rx_stomped");
    assert!(cut > 0 && tx > 0, "{line}");
    assert_eq!((tx, rx), (stomped, stomped), "{line}");

    if std::env::var("ETHLINK_SKIP_TSHARK").is_ok_and(|v| v == "1") {
        eprintln!("ETHLINK_SKIP_TSHARK=1: skipping the tshark check");
        return;
    }
    let lua = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/wireshark/ethlink.lua");
    let pcap = out.join("capture.pcapng");
    let shark = Command::new("tshark")
        .arg("-X")
        .arg(format!("lua_script:{}", lua.display()))
        .arg("-r")
        .arg(&pcap)
        .args([
            "-T",
            "fields",
            "-e",
            "frame.number",
            "-e",
            "ethlink.fcs.status",
        ])
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run tshark ({e}). Install it (Debian: apt-get install tshark), or set \
                 ETHLINK_SKIP_TSHARK=1 to skip this check"
            )
        });
    assert!(
        shark.status.success(),
        "{}",
        String::from_utf8_lossy(&shark.stderr)
    );
    let text = String::from_utf8_lossy(&shark.stdout);
    let statuses: Vec<&str> = text.lines().filter_map(|l| l.split('\t').nth(1)).collect();
    let marked = statuses.iter().filter(|s| s.trim() == "stomped").count();
    let bad = statuses.iter().filter(|s| s.trim() == "bad").count();
    assert!(!statuses.is_empty(), "tshark read no frame:\n{text}");
    // The capture shows the frames as they left their sender: a stomped copy carries the
    // complement of its FCS, which the dissector names; the wire's damage comes after it.
    assert!(
        marked > 0,
        "no frame marked stomped in the capture:\n{text}"
    );
    assert_eq!(bad, 0, "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

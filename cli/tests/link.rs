//! `ethlink link`: the LLR and CBFC experiment on one simulated link, through the binary.

mod common;

use common::{ethlink, status, stderr, stdout};
use serde_json::Value;

/// Runs `ethlink link ARGS --json`, checks it succeeded and parses its output.
fn link_json(args: &[&str]) -> Value {
    let mut all = vec!["link"];
    all.extend_from_slice(args);
    all.push("--json");
    let out = ethlink(&all, "");
    assert_eq!(status(&out), 0, "{all:?}: {}", stderr(&out));
    // Nothing but warnings of settings under which the traffic cannot complete.
    assert!(
        stderr(&out).lines().all(|l| l.starts_with("warning: ")),
        "{all:?}: {}",
        stderr(&out)
    );
    serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{all:?}: {e}"))
}

fn uint(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is not an unsigned integer in {v}"))
}

fn float(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}

fn flag(v: &Value, key: &str) -> bool {
    v[key]
        .as_bool()
        .unwrap_or_else(|| panic!("{key} is not a boolean in {v}"))
}

/// What holds for every run whatever its faults: each frame delivered at most once, intact, in
/// order, every frame accounted for, and no bound broken.
fn assert_sound(r: &Value) {
    assert!(flag(r, "in_order"), "{r}");
    assert_eq!(uint(r, "duplicates"), 0, "{r}");
    assert_eq!(uint(r, "corrupted"), 0, "{r}");
    assert_eq!(uint(r, "bound_violations"), 0, "{r}");
    assert_eq!(
        uint(r, "delivered") + uint(r, "lost"),
        uint(r, "offered"),
        "{r}"
    );
    let p = &r["parameters"];
    assert!(
        uint(r, "max_replay_bytes") <= uint(p, "replay_max_bytes"),
        "{r}"
    );
    assert!(
        uint(r, "max_rx_buffer_bytes") <= uint(r, "rx_buffer_capacity_bytes"),
        "{r}"
    );
}

//= type=test
//# LINK-4-1 A DATA frame whose sequence number is the expected one MUST be accepted: delivered
//# to the upper layer once, the expected number advanced by one [...]
//# LINK-4-3 A damaged frame [...] MUST make an RX in SEND_ACKS send one NACK carrying the last
//# good sequence number and enter NACK_SENT. The frame MUST be discarded.
//# LINK-3-5 On a NACK carrying *S* the TX MUST, after acknowledging up to *S*, retransmit every
//# frame of the replay buffer in sequence order (go-back-N) [...]
//# LINK-3-3 The TX MUST NOT send a new DATA frame when the replay buffer already holds
//# `min(llr_window, replay_max_frames)` frames, or when adding the frame would make it hold more
//# than `replay_max_bytes` bytes.
#[test]
fn two_percent_loss_at_the_defaults_keeps_95_percent_of_the_goodput() {
    let r = link_json(&["--loss", "0.02"]);
    let p = &r["parameters"];
    // The defaults are the library's.
    assert_eq!(float(p, "rate_gbps"), 400.0);
    assert_eq!(float(p, "propagation_ns"), 25.0);
    assert_eq!(uint(p, "frame_size"), 4096);
    assert_eq!(uint(p, "frames"), 100_000);
    assert_eq!(uint(p, "vcs"), 1);
    assert_eq!(uint(p, "link_vcs"), 4);
    assert_eq!(uint(p, "replay_max_frames"), 115);
    assert_eq!(uint(p, "replay_max_bytes"), 58_768);
    assert_eq!(uint(p, "credits"), 1280);
    assert_eq!(float(p, "loss"), 0.02);
    assert_sound(&r);
    assert_eq!(uint(&r, "offered"), 100_000);
    assert_eq!(uint(&r, "delivered"), uint(&r, "offered"), "{r}");
    assert_eq!(uint(&r, "lost"), 0, "{r}");
    assert_eq!(uint(&r, "unknown_fate"), 0, "{r}");
    assert_eq!(uint(&r, "flushes"), 0, "{r}");
    assert!(!flag(&r, "timed_out"), "{r}");
    let damaged = uint(&r["injected"], "damaged");
    assert!(damaged > 1000, "{r}");
    // Every damaged frame failed its FCS, was discarded, and was replayed.
    assert_eq!(uint(&r, "fcs_errors"), damaged, "{r}");
    assert!(uint(&r, "replays") >= damaged, "{r}");
    // One NACK per damaged frame at most: none while one is outstanding.
    let nacks = uint(&r, "nacks");
    assert!(nacks > 0 && nacks <= damaged, "{r}");
    let ratio = float(&r, "goodput_ratio");
    assert!(ratio >= 0.95, "goodput ratio {ratio}: {r}");
    assert!(ratio < 1.0, "{r}");
    let expected = float(&r, "goodput_gbps") / float(&r, "loss_free_goodput_gbps");
    assert!((ratio - expected).abs() < 0.001, "{r}");
    assert!(float(&r, "loss_free_goodput_gbps") <= float(&r, "ideal_goodput_gbps"));
}

#[test]
fn one_seed_gives_one_output() {
    let args = [
        "link",
        "--frames",
        "1500",
        "--loss",
        "0.02",
        "--drop",
        "0.01",
        "--duplicate",
        "0.01",
        "--control-loss",
        "0.01",
        "--json",
    ];
    let run = |seed: &str| {
        let mut all = args.to_vec();
        all.extend(["--seed", seed]);
        let out = ethlink(&all, "");
        assert_eq!(status(&out), 0, "{}", stderr(&out));
        out.stdout
    };
    let first = run("7");
    assert_eq!(first, run("7"), "same seed, different output");
    let other = run("8");
    let injected = |bytes: &[u8]| {
        let v: Value = serde_json::from_slice(bytes).unwrap_or_default();
        v["injected"].clone()
    };
    assert!(injected(&first).is_object());
    assert_ne!(
        injected(&first),
        injected(&other),
        "seeds 7 and 8 injected the same faults"
    );
    // The table is as stable as the JSON.
    let table = |seed: &str| {
        ethlink(
            &["link", "--frames", "300", "--loss", "0.05", "--seed", seed],
            "",
        )
        .stdout
    };
    assert_eq!(table("3"), table("3"));
}

#[test]
fn bad_arguments_name_the_option() {
    let cases: [(&[&str], &str); 14] = [
        (&["--loss", "-0.1"], "--loss"),
        (&["--loss", "1.5"], "--loss"),
        (&["--loss", "0.6", "--drop", "0.5"], "--drop"),
        (&["--frame-size", "10"], "--frame-size"),
        (&["--frame-size", "10000"], "--frame-size"),
        (&["--vcs", "9"], "--vcs"),
        (&["--vcs", "0"], "--vcs"),
        (&["--link-down-ns", "1000"], "--link-down-ns"),
        (&["--link-down-ns", "1000:x"], "--link-down-ns"),
        (
            &["--link-down-ns", "1000:500", "--link-down-ns", "1200:10"],
            "--link-down-ns",
        ),
        (&["--drain", "101"], "--drain"),
        (&["--credit-size", "100"], "--credit-size"),
        (&["--credits", "10"], "--credits"),
        (
            &["--window", "8", "--replay-max-frames", "9"],
            "--replay-max-frames",
        ),
    ];
    for (args, option) in cases {
        let mut all = vec!["link", "--frames", "10"];
        all.extend_from_slice(args);
        let out = ethlink(&all, "");
        assert_eq!(status(&out), 2, "{all:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.starts_with("error: "), "{all:?}: {err}");
        assert!(
            err.contains(option),
            "{all:?}: {err:?} does not name {option}"
        );
        assert!(!err.contains("panicked"), "{all:?}: {err}");
        assert!(stdout(&out).is_empty(), "{all:?}");
    }
}

//= type=test
//# LINK-5-2 The TX MUST NOT send a new DATA frame on VC *v* unless its cost is at most
//# `grant[v] - (consumed[v] - freed_seen[v])` (modulo 2^20).
#[test]
fn a_receiver_that_never_drains_stops_the_sender_at_its_buffer() {
    let r = link_json(&[
        "--drain",
        "0",
        "--time-limit-ns",
        "200000",
        "--frames",
        "100",
    ]);
    assert_sound(&r);
    assert!(flag(&r, "timed_out"), "{r}");
    assert!(uint(&r, "credit_stalls") > 0, "{r}");
    // 1280 credits of 64 B hold 20 frames of 4096 B: exactly those are delivered, no more.
    let p = &r["parameters"];
    let buffer = uint(p, "credits") * uint(p, "credit_size");
    assert_eq!(buffer / uint(p, "frame_size"), 20);
    assert_eq!(uint(&r, "delivered"), 20, "{r}");
    assert_eq!(uint(&r, "max_rx_buffer_bytes"), buffer, "{r}");
    assert_eq!(uint(&r, "lost"), 80, "{r}");
    assert_eq!(uint(&r, "unknown_fate"), 0, "{r}");
    assert!(uint(&r, "simulated_time_ns") <= 200_000, "{r}");
}

//= type=test
//# LINK-6-1 In FLUSH the TX MUST remove every frame from the replay buffer and report them to the
//# upper layer, in sequence order, as frames of unknown fate [...] It MUST NOT report them as
//# delivered and MUST NOT retransmit them after re-initialisation.
//# LINK-6-2 Frames submitted but not yet sent MUST stay queued across FLUSH and
//# re-initialisation and be sent after the link is UP again, in order.
#[test]
fn an_outage_loses_only_frames_of_unknown_fate() {
    let r = link_json(&[
        "--frames",
        "3000",
        "--link-down-ns",
        "20000:5000",
        "--link-down-ns",
        "100000:2000",
        "--vcs",
        "2",
    ]);
    assert_sound(&r);
    assert!(!flag(&r, "timed_out"), "{r}");
    let unknown = uint(&r, "unknown_fate");
    assert!(unknown > 0, "{r}");
    assert!(uint(&r["injected"], "outage") > 0, "{r}");
    // Only frames reported of unknown fate may be missing; the others went out after the link
    // came back.
    assert!(uint(&r, "lost") <= unknown, "{r}");
    // Both ends came up three times.
    assert_eq!(uint(&r, "link_ups"), 6, "{r}");
    let outages = r["parameters"]["link_down_ns"].clone();
    assert_eq!(outages[1]["start_ns"], 100_000, "{r}");
    assert_eq!(outages[1]["duration_ns"], 2000, "{r}");
}

//= type=test
//# LINK-4-5 A DATA frame whose sequence number is within `llr_window` behind the expected one is a
//# duplicate: it MUST be discarded and counted [...]
#[test]
fn every_kind_of_fault_together_is_recovered() {
    let r = link_json(&[
        "--frames",
        "1500",
        "--frame-size",
        "1024",
        "--vcs",
        "3",
        "--bidirectional",
        "--drop",
        "0.02",
        "--burst",
        "2",
        "--duplicate",
        "0.02",
        "--control-loss",
        "0.02",
        "--ber",
        "1e-7",
        "--seed",
        "5",
    ]);
    assert_sound(&r);
    assert!(!flag(&r, "timed_out"), "{r}");
    assert_eq!(uint(&r, "offered"), 3000);
    assert!(uint(&r, "lost") <= uint(&r, "unknown_fate"), "{r}");
    let injected = &r["injected"];
    assert!(uint(injected, "dropped") > 0, "{r}");
    assert!(uint(injected, "duplicated") > 0, "{r}");
    // Duplicates reached the receivers; none was delivered.
    assert!(uint(&r, "duplicates_discarded") > 0, "{r}");
    assert!(uint(&r, "replay_timeouts") > 0, "{r}");
}

#[test]
fn table_and_help() {
    let out = ethlink(&["link", "--frames", "200", "--loss", "0.05"], "");
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    for needle in [
        "200 frame(s) of 4096 B",
        "frames delivered",
        "goodput ratio",
        "frames replayed",
        "NACKs sent",
        "credit stalls",
        "bound violations",
    ] {
        assert!(text.contains(needle), "{text} lacks {needle:?}");
    }
    let help = ethlink(&["link", "--help"], "");
    assert_eq!(status(&help), 0);
    let text = stdout(&help);
    for option in [
        "--rate-gbps",
        "--cable-m",
        "--propagation-ns",
        "--frame-size",
        "--frames",
        "--vcs",
        "--loss",
        "--drop",
        "--burst",
        "--ber",
        "--duplicate",
        "--control-loss",
        "--link-down-ns <START:DURATION>",
        "--drain",
        "--replay-max-frames",
        "--replay-max-bytes",
        "--ack-spacing",
        "--ack-timer-ns",
        "--replay-timer-ns",
        "--replay-count-max",
        "--window",
        "--credit-size",
        "--credits",
        "--cf-min-credits",
        "--cc-interval-ns",
        "--bidirectional",
        "--seed",
        "--time-limit-ns",
        "--json",
        "docs/cli-json.md",
        "Exit status",
    ] {
        assert!(
            text.contains(option),
            "`ethlink link --help` lacks {option:?}"
        );
    }
    let top = ethlink(&["--help"], "");
    assert!(stdout(&top).contains("link"), "{}", stdout(&top));
}

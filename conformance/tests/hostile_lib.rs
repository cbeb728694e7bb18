//! Libraries under test (`--dut-lib`) that misbehave at the C ABI boundary: each is the
//! reference library with one rule broken (tests/hostile/wrap.c, built here with the C
//! compiler). None makes the harness hang, run out of memory or report something untrue.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ethlink_conformance::device::Device;
use ethlink_conformance::dylib::DylibDevice;
use ethlink_conformance::runner::{self, Bounds, SharedFactory};
use ethlink_conformance::{Case, Role, Verdict, cases};

/// tests/hostile/wrap.c built with `mode` into a library of its own.
fn wrap(mode: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("conformance-wrap");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("wrap_{mode}.so"));
    let real = std::fs::canonicalize(library()).unwrap();
    let status = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-O1"])
        .arg(format!("-DMODE_{mode}"))
        .arg(format!("-DREAL_LIB=\"{}\"", real.display()))
        .arg("-I")
        .arg(root.join("../include"))
        .arg(root.join("tests/hostile/wrap.c"))
        .arg("-o")
        .arg(&out)
        .arg("-ldl")
        .status()
        .expect("a C compiler (cc) builds the libraries of these tests");
    assert!(status.success(), "cc failed for {mode}");
    out
}

fn factory(lib: &Path) -> SharedFactory {
    let lib = lib.to_owned();
    Arc::new(move || {
        DylibDevice::load(&lib, Role::LinkEnd)
            .map(|d| Box::new(d) as Box<dyn Device>)
            .map_err(|e| e.to_string())
    })
}

fn only(ids: &[&str]) -> Vec<Case> {
    cases::all()
        .into_iter()
        .filter(|c| ids.contains(&c.id))
        .collect()
}

const BOUNDS: Bounds = Bounds {
    start: Duration::from_secs(2),
    case: Duration::from_secs(60),
};

use common::library;

#[test]
fn a_library_that_never_says_none_is_stopped_at_the_bound() {
    for mode in ["TX_FOREVER", "EVENT_FOREVER"] {
        let t = Instant::now();
        let (_, results) =
            runner::run_suite_bounded(&only(&["LE-INIT-1"]), &factory(&wrap(mode)), 1, BOUNDS)
                .unwrap();
        let r = &results[0];
        assert_eq!(r.verdict, Verdict::HarnessError, "{mode}: {r:?}");
        let m = r.message.as_deref().unwrap_or("");
        assert!(
            m.contains("in one advance without saying NONE"),
            "{mode}: {m}"
        );
        // Stopped by the bound, not by the case's wall-time limit.
        assert!(t.elapsed() < BOUNDS.case, "{mode}: {:?}", t.elapsed());
    }
}

#[test]
fn a_library_that_hangs_while_starting_is_abandoned_at_the_start_limit() {
    for mode in ["HANG_CTX_NEW", "HANG_DESCRIBE"] {
        let t = Instant::now();
        let err =
            runner::run_suite_bounded(&only(&["LE-INIT-1"]), &factory(&wrap(mode)), 1, BOUNDS)
                .unwrap_err();
        assert!(
            err.contains("making the device and its hello did not return within 2.0 s"),
            "{mode}: {err}"
        );
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "{mode}: {:?}",
            t.elapsed()
        );
    }
    assert!(!runner::settled(Duration::ZERO));
}

#[test]
fn a_library_that_hangs_while_freeing_holds_up_nothing() {
    let t = Instant::now();
    let (_, results) = runner::run_suite_bounded(
        &only(&["LE-INIT-1", "LE-LLR-1"]),
        &factory(&wrap("HANG_FREE")),
        1,
        BOUNDS,
    )
    .unwrap();
    assert!(
        results.iter().all(|r| r.verdict == Verdict::Pass),
        "{results:?}"
    );
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
}

#[test]
fn a_context_that_is_not_there_is_named_so() {
    let err = runner::run_suite_bounded(
        &only(&["LE-INIT-1"]),
        &factory(&wrap("NULL_CTX")),
        1,
        BOUNDS,
    )
    .unwrap_err();
    assert!(
        err.contains("ethlink_ctx_new returned ETHLINK_OK but wrote no context (NULL)"),
        "{err}"
    );
}

#[test]
fn a_library_that_claims_a_billion_counters_is_stopped() {
    let (_, results) =
        runner::run_suite_bounded(&only(&["LE-LLR-4"]), &factory(&wrap("COUNTERS")), 1, BOUNDS)
            .unwrap();
    let m = results[0].message.as_deref().unwrap_or("");
    assert_eq!(results[0].verdict, Verdict::HarnessError, "{m}");
    assert!(
        m.contains("ethlink_counter_count says 1073741824 counters, more than the 65536"),
        "{m}"
    );
}

/// Version 5 of the ABI: the description's `tick_ns` and `rate_gbps` are the hello's, checked as
/// a hello's are (docs/conformance.md §4.2).
#[test]
fn a_library_declares_its_clock_and_line_rate() {
    let mut d = DylibDevice::load(&wrap("COARSE_CLOCK"), Role::LinkEnd).unwrap();
    let desc = d.hello().unwrap();
    assert_eq!((desc.tick_ns, desc.rate_gbps), (Some(256), Some(25)));
    // The reference behind it acts at once, within any coarser clock's tolerance: a timer case
    // judged at a 256 ns tick passes.
    let (_, results) = runner::run_suite_bounded(
        &only(&["LE-LLR-8", "LE-CBFC-4"]),
        &factory(&wrap("COARSE_CLOCK")),
        1,
        BOUNDS,
    )
    .unwrap();
    for r in &results {
        assert_eq!(r.verdict, Verdict::Pass, "{r:?}");
    }
    // A tick coarser than LINK-1-5 allows is refused, named.
    let err = runner::run_suite_bounded(
        &only(&["LE-INIT-1"]),
        &factory(&wrap("TICK_TOO_COARSE")),
        1,
        BOUNDS,
    )
    .map(|_| ())
    .unwrap_err()
    .to_string();
    assert!(err.contains("clock tick of 300 ns"), "{err}");
}

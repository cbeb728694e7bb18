//! The memory estimate made before a run against what the run really allocates, for scenarios of
//! several sizes and shapes.
//!
//! The estimate (`Scenario::memory_estimate`) is meant to be above the process's peak resident
//! memory and within twice it. Resident memory depends on the build and the allocator; what the
//! simulation allocates does not. This test counts every allocation of the process (a counting
//! global allocator, `peak_alloc`: this file is a test binary of its own), takes the peak of live bytes over
//! building and running each scenario, and checks the ratio of the estimate's parts (the
//! estimate without its allowance for the process itself) to that peak: at least 1, at most 2.
//! The counts are exact and the same on every machine, so the test cannot be flaky; the figures
//! against resident memory, release build, are in docs/performance.md.

use std::sync::Mutex;

use ethlink_fabric::Fabric;
use ethlink_fabric::Scenario;
use peak_alloc::PeakAlloc;

/// The system allocator, counting live bytes and their peak.
#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

/// One scenario at a time: the counters are the process's.
static ONE: Mutex<()> = Mutex::new(());

/// Peak live bytes over building and running `s`, above what was live before.
fn peak_of(s: &Scenario) -> usize {
    let before = ALLOCATOR.current_usage();
    ALLOCATOR.reset_peak_usage();
    {
        let mut f = Fabric::new(s).expect("valid scenario");
        let r = f.run(None);
        assert!(r.pass, "the run itself must pass: {:?}", r.failures);
    }
    ALLOCATOR.peak_usage().saturating_sub(before)
}

fn scenario(text: &str) -> Scenario {
    let s: Scenario = toml::from_str(text).expect("scenario parses");
    s.validate().expect("scenario is valid");
    s
}

/// RDMA permutation beside loads and stores on a single tier of `gpus` GPUs of `ports` ports.
fn single_tier(gpus: u16, stacks: u8, bytes: u64) -> Scenario {
    scenario(&format!(
        r#"
seed = 1
[topology]
kind = "single_tier"
gpus = {gpus}
stacks = {stacks}
ports_per_stack = 1
[[traffic]]
kind = "permutation"
bytes = {bytes}
iterations = 2
[[traffic]]
kind = "load_store"
outstanding = 4
[[traffic.sizes]]
bytes = 64
weight = 1.0
[metrics]
sample_ns = 0
"#
    ))
}

/// An RDMA all-to-all on two tiers.
fn two_tier(gpus: u16, leaves: u16, bytes: u64) -> Scenario {
    scenario(&format!(
        r#"
seed = 2
[topology]
kind = "two_tier"
gpus = {gpus}
stacks = 1
ports_per_stack = 1
leaves = {leaves}
spines = 2
[[traffic]]
kind = "all_to_all"
bytes_per_pair = {bytes}
[metrics]
sample_ns = 500
"#
    ))
}

fn check(name: &str, s: &Scenario) -> f64 {
    let est = s.memory_estimate();
    let parts: u64 = est.parts.iter().map(|p| p.bytes).sum();
    let peak = peak_of(s) as u64;
    let ratio = parts as f64 / peak.max(1) as f64;
    println!(
        "{name}: estimate {parts} B (without the process allowance), peak allocated {peak} B, \
         ratio {ratio:.2}"
    );
    assert!(
        (1.0..=2.0).contains(&ratio),
        "{name}: the estimate is {ratio:.2} times the peak ({parts} B against {peak} B): \
         outside 1..2; parts {:?}",
        est.parts
    );
    ratio
}

#[test]
fn the_estimate_is_above_the_peak_and_within_twice_it() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    for (gpus, stacks, bytes) in [(8u16, 2u8, 65_536u64), (32, 2, 65_536), (64, 4, 32_768)] {
        check(
            &format!("single tier, {gpus} GPUs of {stacks} ports, {bytes} B"),
            &single_tier(gpus, stacks, bytes),
        );
    }
    check(
        "two tiers, 16 GPUs, 16 KiB per pair",
        &two_tier(16, 4, 16_384),
    );
}

#[test]
fn a_partitioned_run_is_allowed_its_second_thread_and_a_tenth_more() {
    // Not beside the test above, whose peak of allocations would count this one's.
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let s = single_tier(32, 2, 65_536);
    let one = s.memory_estimate();
    let parts: u64 = one.parts.iter().map(|p| p.bytes).sum();
    let two = one.clone().partitioned();
    // The same parts; the process's allowance grows by 6 MiB and a tenth of them.
    assert_eq!(two.parts, one.parts);
    assert_eq!(two.bytes, one.bytes + (6 << 20) + parts / 10);
    // And a fabric run as partitions reports that estimate.
    let mut f = ethlink_fabric::Fabric::new(&s).expect("valid");
    f.set_partitioned(false).expect("partitions");
    assert_eq!(f.run(None).wall.memory_estimate_bytes, two.bytes);
}

//! Litmus tests on the fabric: [`run_litmus`] runs one many times and gives its histogram
//! (the text form and the histogram are [`crate::litmus`]'s).

use crate::fabric::Fabric;
use crate::litmus::{Histogram, Litmus, LitmusError, Weakening, err};
use crate::report::Report;
use crate::scenario::Scenario;

/// What [`run_litmus`] gives: the histogram of final states, the iterations in which an operation
/// ended with an error status (left out of the histogram), and the fabric's report of the run.
#[derive(Debug, Clone)]
pub struct LitmusRun {
    /// The final states.
    pub histogram: Histogram,
    /// Iterations left out because an operation ended with an error status.
    pub failed: u64,
    /// The run's report (the data check, link and switch counters, ...).
    pub report: Report,
}

/// Runs `test` `iterations` times on the fabric of `scen` (its topology, links, faults and
/// outages; its traffic is left out), each agent starting each iteration at a time drawn within
/// `jitter_ns` from the scenario's seed. The GPUs the test names must exist in the topology,
/// and the ports (`port P`) in its GPUs: a test that names others is refused before anything
/// runs.
pub fn run_litmus(
    test: &Litmus,
    scen: &Scenario,
    iterations: u32,
    jitter_ns: u64,
) -> Result<LitmusRun, LitmusError> {
    run_litmus_weakened(test, scen, iterations, jitter_ns, None)
}

/// As [`run_litmus`], with the ordering engine weakened as `weaken` says (a requester's, or a
/// target's as the runner imitates it: [`Weakening`]).
pub fn run_litmus_weakened(
    test: &Litmus,
    scen: &Scenario,
    iterations: u32,
    jitter_ns: u64,
    weaken: Option<Weakening>,
) -> Result<LitmusRun, LitmusError> {
    test.fits(
        scen.topology.gpus,
        scen.topology.stacks,
        scen.topology.ports_per_stack,
    )?;
    let mut f = Fabric::with_litmus(scen, test.clone(), iterations, jitter_ns, weaken)
        .or_else(|e| err(e.key.clone(), e.reason.clone()))?;
    let report = f.run(None);
    let (histogram, failed) = f.litmus_histogram().unwrap_or_default();
    Ok(LitmusRun {
        histogram,
        failed,
        report,
    })
}

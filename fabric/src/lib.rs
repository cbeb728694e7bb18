//! # ethlink-fabric: a deterministic simulation of a scale-up fabric
//!
//! This crate wires EthLink GPU endpoints ([`ethlink_endpoint::Endpoint`]) and switches
//! ([`ethlink_switch::Switch`]) together with simulated cables (line rate, propagation delay,
//! preamble and inter-frame gap, bit errors, frame loss, outages), drives them with workloads
//! (load/store mixes, RDMA all-to-all, ring and halving-doubling all-reduce, all-gather,
//! reduce-scatter, pipeline send/recv, incast, random permutation), checks the data every GPU
//! ends up with, and reports latency, throughput, balance, link and switch counters, the
//! collectives as nccl-tests reports them, and the speed of the simulation itself.
//!
//! It is a discrete-event simulation: events are ordered by time (picoseconds) and then by the
//! order they were scheduled in; every random choice comes from generators seeded by the
//! scenario's seed; no clock is read except to measure the simulation's own speed (the report's
//! `wall` section). The same [`Scenario`] always gives the same [`Report`], `wall` aside.
//!
//! ```no_run
//! use ethlink_fabric::{Fabric, Scenario};
//!
//! let scenario = Scenario::default();
//! let mut fabric = Fabric::new(&scenario).expect("a valid scenario");
//! let report = fabric.run(None);
//! assert!(report.pass);
//! println!("{} frame-hops in {:.1} s", report.sim.frame_hops, report.wall.seconds);
//! ```
//!
//! [`scenario`] documents the scenario's JSON / TOML shape, [`report`] the report's. The examples
//! `fabric_run` (a scenario from a JSON file, or the default one), `figures` (the headline
//! figures: idle one-hop load latency, all-to-all share of line rate, the default scenario with
//! and without a plane failing) and `scale_1024` (1024 GPUs) show the API in use.

mod build;
mod check;
mod credit;
mod fabric;
pub mod litmus;
mod litmus_fabric;
pub mod memory;
mod queue;
pub mod report;
pub mod scenario;
mod track;
mod validate;
mod workload;

pub use credit::CreditLoop;
pub use ethlink_protocol::FrameKind;
pub use fabric::{CableInfo, CaptureSink, CapturedFrame, End, Fabric};
pub use litmus_fabric::{LitmusRun, run_litmus, run_litmus_weakened};
pub use memory::MemoryEstimate;
pub use report::Report;
pub use scenario::{Scenario, ScenarioError};

/// Builds the fabric of `scenario`, runs it and reports.
pub fn run(scenario: &Scenario) -> Result<Report, ScenarioError> {
    Ok(Fabric::new(scenario)?.run(None))
}

//! Runs cases against a device and records what each concluded (docs/conformance.md §5).

use std::time::Instant as WallClock;

use serde::Serialize;

use crate::case::{Case, Failure, Level, Stop, Verdict};
use crate::ctx::{Ctx, Logged};
use crate::device::{Description, Device};

/// What one case concluded.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    /// The case id.
    pub id: &'static str,
    /// The requirement ids it checks.
    pub reqs: &'static [&'static str],
    /// MUST or SHOULD.
    pub level: Level,
    /// The verdict.
    pub verdict: Verdict,
    /// What a failed requirement expected and saw.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    /// Why it was unsupported, inconclusive or a harness error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Simulated time the case used, in ns.
    pub simulated_ns: u64,
    /// Wall time, in microseconds (the only figure that differs between runs).
    #[serde(skip)]
    pub wall_us: u64,
    /// Every frame that crossed the device's ports (kept for failed cases only).
    #[serde(skip)]
    pub log: Vec<Logged>,
}

/// Runs `case` on `dut`, which described itself as `desc`.
pub fn run_case(dut: &mut dyn Device, desc: &Description, case: &Case) -> CaseResult {
    let started = WallClock::now();
    let mut result = CaseResult {
        id: case.id,
        reqs: case.reqs,
        level: case.level,
        verdict: Verdict::Pass,
        failure: None,
        message: None,
        simulated_ns: 0,
        wall_us: 0,
        log: Vec::new(),
    };
    if desc.role != case.role {
        result.verdict = Verdict::Unsupported;
        result.message = Some(format!(
            "the device is a {}, the case needs a {}",
            desc.role, case.role
        ));
        return result;
    }
    if let Some(missing) = case
        .needs
        .iter()
        .find(|n| !desc.caps.iter().any(|c| c == *n))
    {
        result.verdict = Verdict::Unsupported;
        result.message = Some(format!(
            "the device does not declare the capability {missing}"
        ));
        return result;
    }
    let mut ctx = Ctx::new(dut, desc.clone());
    let outcome = (case.run)(&mut ctx);
    result.simulated_ns = ctx.now();
    match outcome {
        Ok(()) => {}
        Err(Stop::Fail(f)) => {
            result.verdict = match case.level {
                Level::Must => Verdict::Fail,
                Level::Should => Verdict::NonStrict,
            };
            result.failure = Some(f);
            result.log = ctx.log().to_vec();
        }
        Err(Stop::Unsupported(why)) => {
            result.verdict = Verdict::Unsupported;
            result.message = Some(why);
        }
        Err(Stop::Inconclusive(why)) => {
            result.verdict = Verdict::Inconclusive;
            result.message = Some(why);
        }
        Err(Stop::Harness(why)) => {
            result.verdict = Verdict::HarnessError;
            result.message = Some(why);
            result.log = ctx.log().to_vec();
        }
    }
    result.wall_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    result
}

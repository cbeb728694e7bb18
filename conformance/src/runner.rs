//! Runs cases against a device and records what each concluded (docs/conformance.md §5).

use std::time::{Duration, Instant as WallClock};

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

/// Makes a fresh device for a worker: the backend of a run (the reference of a role, or an
/// external process). An error is a sentence saying why the device could not be made.
pub type Factory<'f> = dyn Fn() -> Result<Box<dyn Device>, String> + Sync + 'f;

/// A device made by a factory, with what it said in answer to `hello`.
struct Live {
    dut: Box<dyn Device>,
    desc: Description,
}

fn start(factory: &Factory<'_>) -> Result<Live, String> {
    let mut dut = factory()?;
    let desc = dut
        .hello()
        .map_err(|e| format!("the device did not answer hello: {e}"))?;
    if desc.version != crate::device::PROTOCOL_VERSION {
        return Err(format!(
            "the device speaks version {} of the boundary, the harness version {}",
            desc.version,
            crate::device::PROTOCOL_VERSION
        ));
    }
    Ok(Live { dut, desc })
}

/// Runs `cases` on `jobs` worker threads, each with its own device from `factory`, and returns
/// what the first device said of itself with the results in the order of `cases` (so that a
/// report does not depend on `jobs`). A worker whose device broke the boundary during a case
/// (a `HarnessError`) gets a fresh device from the factory before its next case.
///
/// Fails only when the first device cannot be made or does not answer `hello`.
pub fn run_suite(
    cases: &[Case],
    factory: &Factory<'_>,
    jobs: usize,
) -> Result<(Description, Vec<CaseResult>), String> {
    run_suite_bounded(cases, factory, jobs, None)
}

/// As [`run_suite`], with a wall-time limit on each case for devices that cannot bound
/// themselves (an in-process device, whose calls the harness cannot interrupt). With
/// `case_limit`, each case runs on a thread of its own that holds the device; a case that has not
/// returned when the limit passes is a `HarnessError`, its thread and device are abandoned (the
/// thread runs on until the process ends, touching nothing the run still uses), and the worker
/// takes a fresh device for its next case.
pub fn run_suite_bounded(
    cases: &[Case],
    factory: &Factory<'_>,
    jobs: usize,
    case_limit: Option<Duration>,
) -> Result<(Description, Vec<CaseResult>), String> {
    let first = start(factory)?;
    let desc = first.desc.clone();
    let jobs = jobs.clamp(1, cases.len().max(1));
    let (job_tx, job_rx) = crossbeam_channel::unbounded::<usize>();
    for i in 0..cases.len() {
        // The receiver lives until the end of this function: a send cannot fail.
        let _ = job_tx.send(i);
    }
    drop(job_tx);
    let (res_tx, res_rx) = crossbeam_channel::unbounded::<(usize, CaseResult)>();
    let mut first = Some(first);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            let job_rx = job_rx.clone();
            let res_tx = res_tx.clone();
            let mut live = first.take();
            s.spawn(move || {
                // Why this worker can no longer make a device: its remaining cases get it at
                // once rather than waiting on a device that fails every start.
                let mut dead: Option<String> = None;
                for i in job_rx.iter() {
                    let case = &cases[i];
                    if let Some(why) = &dead {
                        let _ = res_tx.send((i, harness_error(case, why.clone())));
                        continue;
                    }
                    if live.is_none() {
                        live = match start(factory) {
                            Ok(l) => Some(l),
                            Err(why) => {
                                let why = format!("a fresh device for this case: {why}");
                                dead = Some(why.clone());
                                let _ = res_tx.send((i, harness_error(case, why)));
                                continue;
                            }
                        };
                    }
                    let r = match case_limit {
                        None => {
                            let Some(l) = live.as_mut() else { continue };
                            run_guarded(l, case)
                        }
                        Some(limit) => {
                            let Some(l) = live.take() else { continue };
                            let (r, back) = run_on_own_thread(l, case, limit);
                            live = back;
                            r
                        }
                    };
                    if r.verdict == Verdict::HarnessError {
                        // The device may be in any state: the next case gets a fresh one.
                        live = None;
                    }
                    let _ = res_tx.send((i, r));
                }
            });
        }
    });
    drop(res_tx);
    let mut results: Vec<(usize, CaseResult)> = res_rx.iter().collect();
    results.sort_by_key(|(i, _)| *i);
    Ok((desc, results.into_iter().map(|(_, r)| r).collect()))
}

/// Runs `case` on `l`: a panic in the case or in an in-process device ends the case as a
/// `HarnessError`, not the run.
fn run_guarded(l: &mut Live, case: &Case) -> CaseResult {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_case(l.dut.as_mut(), &l.desc, case)
    }));
    match outcome {
        Ok(r) => r,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_owned());
            harness_error(case, format!("the case panicked: {what}"))
        }
    }
}

/// Runs `case` on `l` on a thread of its own and waits for it at most `limit`. Returns the
/// result and, when the case returned in time, the device for the next case.
fn run_on_own_thread(l: Live, case: &Case, limit: Duration) -> (CaseResult, Option<Live>) {
    let (tx, rx) = crossbeam_channel::bounded::<(CaseResult, Live)>(1);
    let own = *case;
    let spawned = std::thread::Builder::new()
        .name(format!("case {}", case.id))
        .spawn(move || {
            let mut l = l;
            let r = run_guarded(&mut l, &own);
            // The receiver is gone only when the case was abandoned: nothing waits for it.
            let _ = tx.send((r, l));
        });
    if let Err(e) = spawned {
        return (
            harness_error(case, format!("cannot start a thread for the case: {e}")),
            None,
        );
    }
    match rx.recv_timeout(limit) {
        Ok((r, l)) => (r, Some(l)),
        Err(_) => (
            harness_error(
                case,
                format!(
                    "the case ran past its wall-time limit of {:.1} s: the in-process device \
                     did not return and was abandoned",
                    limit.as_secs_f64()
                ),
            ),
            None,
        ),
    }
}

/// The result of `case` when no device could be made to run it.
fn harness_error(case: &Case, why: String) -> CaseResult {
    CaseResult {
        id: case.id,
        reqs: case.reqs,
        level: case.level,
        verdict: Verdict::HarnessError,
        failure: None,
        message: Some(why),
        simulated_ns: 0,
        wall_us: 0,
        log: Vec::new(),
    }
}

/// Whether the case id `id` matches `pattern`: a glob when the pattern has `*` or `?`
/// (anchored at both ends, case-sensitive), otherwise a substring.
pub fn matches(pattern: &str, id: &str) -> bool {
    if pattern.contains(['*', '?']) {
        glob(pattern.as_bytes(), id.as_bytes())
    } else {
        id.contains(pattern)
    }
}

fn glob(p: &[u8], s: &[u8]) -> bool {
    // Iterative matcher with one backtrack point for the last `*`.
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, si));
            pi += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == b'*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn filters() {
        assert!(matches("LLR", "LE-LLR-1"));
        assert!(!matches("CBFC", "LE-LLR-1"));
        assert!(matches("LE-*-1", "LE-LLR-1"));
        assert!(matches("LE-???-1", "LE-LLR-1"));
        assert!(!matches("LE-*-2", "LE-LLR-1"));
        assert!(matches("*", "X"));
        assert!(!matches("LE-*", "EPT-OPS-1"));
    }
}

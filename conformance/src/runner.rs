//! Runs cases against a device and records what each concluded (docs/conformance.md §5).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant as WallClock};

use serde::Serialize;

use crate::boundary;
use crate::case::{Case, Failure, Level, Stop, Verdict};
use crate::ctx::{Ctx, Logged};
use crate::device::{Description, Device, DeviceError};

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
    /// Notes the case added, whatever its verdict (a litmus case's histograms).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
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
        notes: Vec::new(),
        simulated_ns: 0,
        wall_us: 0,
        log: Vec::new(),
    };
    if desc.role != case.role {
        // The runner refuses a run that mixes roles; a caller of this function alone gets a
        // case that could not be judged, never a verdict that looks like a pass.
        result.verdict = Verdict::HarnessError;
        result.message = Some(format!(
            "the device is {}, the case is for {}",
            a(desc.role),
            a(case.role)
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
    result.notes = ctx.notes().to_vec();
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
        // A livelock breaks what the case checks: the device never does what the requirement
        // asks within any budget (docs/conformance.md §3.5).
        Err(Stop::Budget(why)) => match case.reqs.first() {
            Some(&req) => {
                result.verdict = match case.level {
                    Level::Must => Verdict::Fail,
                    Level::Should => Verdict::NonStrict,
                };
                result.failure = Some(Failure {
                    req,
                    expected: format!(
                        "the case ends within its budget of {} simulation steps",
                        ctx.event_budget
                    ),
                    seen: why,
                });
                result.log = ctx.log().to_vec();
            }
            None => {
                result.verdict = Verdict::HarnessError;
                result.message = Some(why);
                result.log = ctx.log().to_vec();
            }
        },
    }
    result.wall_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    result
}

/// The role with its article: "a link_end", "an endpoint".
fn a(role: crate::device::Role) -> String {
    match role {
        crate::device::Role::Endpoint => format!("an {role}"),
        _ => format!("a {role}"),
    }
}

/// Makes a fresh device for a worker: the backend of a run (the reference of a role, or an
/// external process). An error is a sentence saying why the device could not be made.
pub type Factory<'f> = dyn Fn() -> Result<Box<dyn Device>, String> + Sync + 'f;

/// A factory of in-process devices, which may be handed to a thread of its own.
pub type SharedFactory = Arc<dyn Fn() -> Result<Box<dyn Device>, String> + Send + Sync>;

/// The wall-time bounds of an in-process device (a library or the reference), whose calls the
/// harness cannot interrupt: each bound call runs on a thread of its own, which is abandoned
/// when the bound passes (it runs on until the process ends, touching nothing the run still
/// uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Making a device and its `hello` (for a library: `ethlink_ctx_new`, making and describing
    /// a device, destroying it).
    pub start: Duration,
    /// One case, from its reset to its verdict.
    pub case: Duration,
}

/// A device made by a factory, with what it said in answer to `hello`.
struct Live {
    dut: Box<dyn Device>,
    desc: Description,
}

/// Makes a device and asks its `hello`: checked ([`boundary::check_description`]) and of the
/// boundary's version.
fn start(factory: &Factory<'_>) -> Result<Live, String> {
    let mut dut = factory()?;
    let mut desc = dut
        .hello()
        .map_err(|e| format!("the device did not answer hello: {e}"))?;
    if desc.version != crate::device::PROTOCOL_VERSION {
        return Err(format!(
            "the device speaks version {} of the boundary, the harness version {}",
            desc.version,
            crate::device::PROTOCOL_VERSION
        ));
    }
    boundary::check_description(&mut desc)?;
    Ok(Live { dut, desc })
}

/// Threads abandoned to a call of an in-process device that did not return in time.
static ABANDONED: AtomicUsize = AtomicUsize::new(0);
/// In-process devices being dropped on threads of their own.
static DROPPING: AtomicUsize = AtomicUsize::new(0);

/// Waits up to `grace` for the in-process devices being dropped; returns whether every call
/// into an in-process device has returned: no thread was abandoned and none is still dropping a
/// device. When it has not, the process should end without running the library's exit handlers
/// (they could wait on the thread that never returns).
pub fn settled(grace: Duration) -> bool {
    let until = WallClock::now() + grace;
    while DROPPING.load(Ordering::SeqCst) > 0 && WallClock::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
    ABANDONED.load(Ordering::SeqCst) == 0 && DROPPING.load(Ordering::SeqCst) == 0
}

/// An in-process device whose drop (for a library, destroying its device and freeing its
/// context) runs on a thread of its own, so that a library that hangs there holds up nothing.
struct DropApart(Option<Box<dyn Device>>);

impl DropApart {
    fn dut(&mut self) -> Result<&mut Box<dyn Device>, DeviceError> {
        self.0
            .as_mut()
            .ok_or_else(|| DeviceError::Broken("the device is gone".into()))
    }
}

impl Drop for DropApart {
    fn drop(&mut self) {
        let Some(dut) = self.0.take() else { return };
        DROPPING.fetch_add(1, Ordering::SeqCst);
        let spawned = std::thread::Builder::new()
            .name("device drop".into())
            .spawn(move || {
                drop(dut);
                DROPPING.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            // The device was dropped with the closure that failed to start.
            DROPPING.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Device for DropApart {
    fn hello(&mut self) -> Result<Description, DeviceError> {
        self.dut()?.hello()
    }
    fn reset(
        &mut self,
        setup: &crate::device::Setup,
    ) -> Result<crate::device::LinkParams, DeviceError> {
        self.dut()?.reset(setup)
    }
    fn frame(&mut self, port: u16, time_ns: u64, frame: &[u8]) -> Result<(), DeviceError> {
        self.dut()?.frame(port, time_ns, frame)
    }
    fn header(
        &mut self,
        port: u16,
        time_ns: u64,
        end_ns: u64,
        frame: &[u8],
    ) -> Result<(), DeviceError> {
        self.dut()?.header(port, time_ns, end_ns, frame)
    }
    fn request(
        &mut self,
        time_ns: u64,
        request: &crate::device::Request,
    ) -> Result<crate::device::Reply, DeviceError> {
        self.dut()?.request(time_ns, request)
    }
    fn advance(&mut self, time_ns: u64) -> Result<crate::device::Advanced, DeviceError> {
        self.dut()?.advance(time_ns)
    }
    fn counters(&mut self) -> Result<crate::device::Counters, DeviceError> {
        self.dut()?.counters()
    }
}

/// [`start`] on a thread of its own, waited for at most `limit`.
fn start_bounded(factory: &SharedFactory, limit: Duration) -> Result<Live, String> {
    let (tx, rx) = crossbeam_channel::bounded::<Result<Live, String>>(1);
    let factory = Arc::clone(factory);
    let spawned = std::thread::Builder::new()
        .name("device start".into())
        .spawn(move || {
            let made =
                start(&|| factory().map(|d| Box::new(DropApart(Some(d))) as Box<dyn Device>));
            // The receiver is gone only when the start was abandoned.
            let _ = tx.send(made);
        });
    if let Err(e) = spawned {
        return Err(format!("cannot start a thread for the device: {e}"));
    }
    match rx.recv_timeout(limit) {
        Ok(made) => made,
        Err(_) => {
            ABANDONED.fetch_add(1, Ordering::SeqCst);
            Err(format!(
                "making the device and its hello did not return within {:.1} s: the call was \
                 abandoned",
                limit.as_secs_f64()
            ))
        }
    }
}

/// Runs `cases` on `jobs` worker threads, each with its own device from `factory`, and returns
/// what the first device said of itself with the results in the order of `cases` (so that a
/// report does not depend on `jobs`). A worker whose device broke the boundary during a case
/// (a `HarnessError`) gets a fresh device from the factory before its next case.
///
/// Fails when the first device cannot be made or does not answer `hello`, and when a case is
/// for another role than the device's.
pub fn run_suite(
    cases: &[Case],
    factory: &Factory<'_>,
    jobs: usize,
) -> Result<(Description, Vec<CaseResult>), String> {
    run(cases, &|| start(factory), jobs, None)
}

/// As [`run_suite`] for an in-process device, which cannot bound itself: making it and its
/// `hello` run on a thread waited for at most `bounds.start`, each case on a thread waited for
/// at most `bounds.case`, and each device is dropped on a thread of its own. A call that does
/// not return in time makes the case (or the start) a `HarnessError`; its thread and device are
/// abandoned, and the worker takes a fresh device for its next case.
pub fn run_suite_bounded(
    cases: &[Case],
    factory: &SharedFactory,
    jobs: usize,
    bounds: Bounds,
) -> Result<(Description, Vec<CaseResult>), String> {
    run(
        cases,
        &|| start_bounded(factory, bounds.start),
        jobs,
        Some(bounds.case),
    )
}

fn run(
    cases: &[Case],
    starter: &(dyn Fn() -> Result<Live, String> + Sync),
    jobs: usize,
    case_limit: Option<Duration>,
) -> Result<(Description, Vec<CaseResult>), String> {
    let first = starter()?;
    let desc = first.desc.clone();
    if let Some(c) = cases.iter().find(|c| c.role != desc.role) {
        return Err(format!(
            "the device says it is {} (its hello), and case {} is for {}: run the cases of \
             its role, or give the device of the role asked for",
            a(desc.role),
            c.id,
            a(c.role)
        ));
    }
    let jobs = jobs.clamp(1, cases.len().max(1));
    let (job_tx, job_rx) = crossbeam_channel::unbounded::<usize>();
    for i in 0..cases.len() {
        // The receiver lives until the end of this function: a send cannot fail.
        let _ = job_tx.send(i);
    }
    drop(job_tx);
    let (res_tx, res_rx) = crossbeam_channel::unbounded::<(usize, CaseResult)>();
    let mut first = Some(first);
    let same = &desc;
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
                        let made = starter().and_then(|l| {
                            if l.desc == *same {
                                Ok(l)
                            } else {
                                Err(format!(
                                    "the fresh device describes itself otherwise than the \
                                     first: {:?}, then {:?}",
                                    same, l.desc
                                ))
                            }
                        });
                        live = match made {
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
        Err(_) => {
            ABANDONED.fetch_add(1, Ordering::SeqCst);
            (
                harness_error(
                    case,
                    format!(
                        "the case ran past its wall-time limit of {:.1} s: the in-process device \
                         did not return and was abandoned",
                        limit.as_secs_f64()
                    ),
                ),
                None,
            )
        }
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
        notes: Vec::new(),
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

//! Cases, their verdicts and what a failure reports (docs/conformance.md §4).

use std::fmt;

use serde::Serialize;

use crate::ctx::Ctx;
use crate::device::Role;

/// The key word of the requirements a case checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// MUST or MUST NOT: a miss is a failure.
    Must,
    /// SHOULD or SHOULD NOT: a miss makes the device not strictly conforming (`NonStrict`), and
    /// fails the run only with `--strict`.
    Should,
}

/// One conformance case.
#[derive(Clone, Copy)]
pub struct Case {
    /// Stable id, `<ROLE>-<AREA>-<n>` (for example `LE-LLR-3`).
    pub id: &'static str,
    /// What it checks, in a line.
    pub title: &'static str,
    /// The requirement ids it checks (docs/spec/).
    pub reqs: &'static [&'static str],
    /// The key word of those requirements.
    pub level: Level,
    /// The role of the device under test.
    pub role: Role,
    /// The capabilities it needs, by name (classes.md Table CLS-T2); a device that does not
    /// declare them gets `Unsupported`.
    pub needs: &'static [&'static str],
    /// The case itself.
    pub run: fn(&mut Ctx<'_>) -> Result<(), Stop>,
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Case")
            .field("id", &self.id)
            .field("reqs", &self.reqs)
            .finish_non_exhaustive()
    }
}

/// What a case concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Verdict {
    /// The device did what the requirements say.
    Pass,
    /// The device broke a MUST.
    Fail,
    /// The device missed a SHOULD.
    NonStrict,
    /// The case needs a capability the device did not declare, or a setting it refused.
    Unsupported,
    /// The case could not conclude (the device never reached the state the case needs).
    Inconclusive,
    /// The device broke the boundary (crashed, hung, answered out of protocol) or the harness
    /// failed.
    HarnessError,
}

impl Verdict {
    /// The name reports use.
    pub const fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "Pass",
            Verdict::Fail => "Fail",
            Verdict::NonStrict => "NonStrict",
            Verdict::Unsupported => "Unsupported",
            Verdict::Inconclusive => "Inconclusive",
            Verdict::HarnessError => "HarnessError",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a failed expectation reports: the requirement, what was expected, what was seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// The requirement id broken.
    pub req: &'static str,
    /// What the requirement asked for here.
    pub expected: String,
    /// What the device did.
    pub seen: String,
}

/// Why a case stopped before its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// A requirement was broken.
    Fail(Failure),
    /// The device refused a setting or request the case needs.
    Unsupported(String),
    /// The case could not conclude.
    Inconclusive(String),
    /// The device broke the boundary, or the harness failed.
    Harness(String),
    /// The case ran out of its budget of simulated events: the device livelocks. The runner
    /// makes it a failure of the case's first requirement.
    Budget(String),
}

impl Stop {
    /// A failure of `req`: `expected` was asked for, `seen` happened.
    pub fn fail(req: &'static str, expected: impl Into<String>, seen: impl Into<String>) -> Stop {
        Stop::Fail(Failure {
            req,
            expected: expected.into(),
            seen: seen.into(),
        })
    }
}

impl From<crate::device::DeviceError> for Stop {
    fn from(e: crate::device::DeviceError) -> Stop {
        match e {
            crate::device::DeviceError::Refused(why) => Stop::Unsupported(why),
            crate::device::DeviceError::Broken(why) => Stop::Harness(why),
        }
    }
}

/// Fails with `req` unless `cond` holds.
pub fn check(
    cond: bool,
    req: &'static str,
    expected: impl Into<String>,
    seen: impl FnOnce() -> String,
) -> Result<(), Stop> {
    if cond {
        Ok(())
    } else {
        Err(Stop::fail(req, expected, seen()))
    }
}

/// Fails with `req` unless `seen == expected`.
pub fn check_eq<T: PartialEq + fmt::Debug>(
    req: &'static str,
    what: &str,
    seen: T,
    expected: T,
) -> Result<(), Stop> {
    if seen == expected {
        Ok(())
    } else {
        Err(Stop::fail(
            req,
            format!("{what}: {expected:?}"),
            format!("{what}: {seen:?}"),
        ))
    }
}

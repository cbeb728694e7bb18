//! The `ethlink conformance` command (docs/conformance.md §5): chooses the device, selects the
//! cases, runs them in parallel and writes the reports. The command line itself is parsed by the
//! `ethlink` binary, which fills [`Options`] and calls [`run`].

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::case::Case;
use crate::cases;
use crate::device::{Device, Role};
use crate::dylib::DylibDevice;
use crate::external::{ExternalDevice, Limits};
use crate::report::{self, Run};
use crate::runner::{self, matches};

/// Exit status: no MUST case failed (and, with `--strict`, no SHOULD case either).
pub const EXIT_PASS: u8 = 0;
/// Exit status: a MUST case failed or could not be judged (HarnessError), or with `--strict` a
/// SHOULD case failed.
pub const EXIT_FAIL: u8 = 1;
/// Exit status: bad arguments, or a device that cannot even answer `hello`.
pub const EXIT_USAGE: u8 = 2;

/// What the command was asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// The role whose cases run; `None`: the role the external device declares, or link end
    /// against the reference or a library.
    pub role: Option<Role>,
    /// The command of an external device (`sh -c`); `None`: the reference of the role.
    pub dut_cmd: Option<String>,
    /// A shared library exporting the C ABI of include/ethlink.h, run in-process as the device
    /// of `role` (link end when `None`); exclusive with `dut_cmd`.
    pub dut_lib: Option<PathBuf>,
    /// Print the selected cases, each with the text of its requirements, and stop (with `json`,
    /// also write them to that file as JSON).
    pub list: bool,
    /// Only cases whose id contains this substring, or matches this glob (`*`, `?`).
    pub filter: Option<String>,
    /// SHOULD cases count for the exit status.
    pub strict: bool,
    /// Worker threads, each with its own device.
    pub jobs: usize,
    /// Write a JUnit XML report here.
    pub junit: Option<PathBuf>,
    /// Write a JSON report here.
    pub json: Option<PathBuf>,
    /// Write a pcapng capture of every failed or harness-error case into this directory.
    pub pcap_dir: Option<PathBuf>,
    /// Wall-time limit of one case, in seconds: against an external device the process is
    /// killed, against the in-process reference the case's thread is abandoned.
    pub case_timeout_s: f64,
    /// Wall-time limit of one request to an external device, in seconds.
    pub request_timeout_s: f64,
    /// Print the wall time of the run on standard error.
    pub timing: bool,
    /// Serve the reference of the role over the line protocol on standard input and output
    /// instead of running the suite.
    pub serve: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            role: None,
            dut_cmd: None,
            dut_lib: None,
            list: false,
            filter: None,
            strict: false,
            jobs: 1,
            junit: None,
            json: None,
            pcap_dir: None,
            case_timeout_s: 60.0,
            request_timeout_s: 10.0,
            timing: false,
            serve: false,
        }
    }
}

/// The reference backend of `role`.
pub fn reference(role: Role) -> Box<dyn Device> {
    match role {
        Role::LinkEnd => Box::new(crate::reference::RefLinkEnd::default()),
        Role::Endpoint => Box::new(crate::reference::RefEndpoint::default()),
        Role::Switch => Box::new(crate::reference::RefSwitch::default()),
    }
}

/// The cases of `role` (every role when `None`) whose id matches `filter`, in catalogue order.
pub fn select(role: Option<Role>, filter: Option<&str>) -> Vec<Case> {
    cases::all()
        .into_iter()
        .filter(|c| role.is_none_or(|r| c.role == r))
        .filter(|c| filter.is_none_or(|f| matches(f, c.id)))
        .collect()
}

fn limits(o: &Options) -> Result<Limits, String> {
    let secs = |what: &str, v: f64| {
        if v.is_finite() && v > 0.0 && v <= 86_400.0 {
            Ok(Duration::from_secs_f64(v))
        } else {
            Err(format!(
                "{what} must be a number of seconds in (0, 86400], not {v}"
            ))
        }
    };
    Ok(Limits {
        request: secs("--request-timeout-s", o.request_timeout_s)?,
        case: secs("--case-timeout-s", o.case_timeout_s)?,
    })
}

/// Serves the reference of `role` over the line protocol on `input` and `out` (`--serve`).
pub fn serve(
    role: Role,
    input: &mut dyn std::io::BufRead,
    out: &mut dyn Write,
) -> Result<(), String> {
    let mut dev = reference(role);
    crate::external::serve(dev.as_mut(), input, out).map_err(|e| format!("--serve: {e}"))
}

/// Runs the command; returns its exit status.
pub fn run(o: &Options, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match execute(o, out, err) {
        Ok(code) => code,
        Err(why) => {
            let _ = writeln!(err, "error: {why}");
            EXIT_USAGE
        }
    }
}

fn execute(o: &Options, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8, String> {
    let io = |e: std::io::Error| format!("cannot write the output: {e}");
    if o.jobs == 0 {
        return Err("--jobs must be at least 1".into());
    }
    let limits = limits(o)?;
    if o.list {
        let listed = select(o.role, o.filter.as_deref());
        for c in &listed {
            writeln!(out, "{}", report::list_entry(c)).map_err(io)?;
        }
        if let Some(p) = &o.json {
            std::fs::write(p, report::list_json(&listed).as_bytes())
                .map_err(|e| format!("cannot write {}: {e}", p.display()))?;
        }
        return Ok(EXIT_PASS);
    }
    let started = Instant::now();
    if o.dut_cmd.is_some() && o.dut_lib.is_some() {
        return Err("--dut-cmd and --dut-lib name two devices: give one of them".into());
    }
    let factory: Box<runner::Factory<'_>> = match (&o.dut_cmd, &o.dut_lib) {
        (None, Some(path)) => {
            let path = path.clone();
            let role = o.role.unwrap_or(Role::LinkEnd);
            Box::new(move || {
                DylibDevice::load(&path, role)
                    .map(|d| Box::new(d) as Box<dyn Device>)
                    .map_err(|e| e.to_string())
            })
        }
        (Some(cmd), _) => {
            let cmd = cmd.clone();
            Box::new(move || {
                ExternalDevice::spawn(&cmd, limits)
                    .map(|d| Box::new(d) as Box<dyn Device>)
                    .map_err(|e| e.to_string())
            })
        }
        (None, None) => {
            let role = o.role.unwrap_or(Role::LinkEnd);
            Box::new(move || Ok(reference(role)))
        }
    };
    let role = match (o.role, &o.dut_cmd) {
        (Some(r), _) => r,
        (None, None) => Role::LinkEnd,
        (None, Some(_)) => {
            // The role the device declares.
            let mut d = factory()?;
            d.hello()
                .map_err(|e| format!("the device did not answer hello: {e}"))?
                .role
        }
    };
    let selected = select(Some(role), o.filter.as_deref());
    if selected.is_empty() {
        return Err(format!(
            "no {role} case matches{}",
            o.filter
                .as_deref()
                .map(|f| format!(" the filter {f:?}"))
                .unwrap_or_default()
        ));
    }
    // An external device is bounded by its own limits (the harness kills the process); an
    // in-process one runs each case on a thread abandoned after --case-timeout-s.
    let case_limit = o.dut_cmd.is_none().then_some(limits.case);
    let (desc, results) =
        runner::run_suite_bounded(&selected, factory.as_ref(), o.jobs, case_limit)?;
    let run = Run {
        desc: &desc,
        cases: &selected,
        results: &results,
        strict: o.strict,
    };
    out.write_all(report::summary(&run).as_bytes())
        .map_err(io)?;
    let write = |path: &PathBuf, bytes: &[u8]| {
        std::fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    if let Some(p) = &o.json {
        write(p, report::json(&run).as_bytes())?;
    }
    if let Some(p) = &o.junit {
        write(p, report::junit(&run).as_bytes())?;
    }
    if let Some(dir) = &o.pcap_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        for r in &results {
            if !r.log.is_empty() {
                let bytes = report::pcapng(r.id, &r.log)?;
                write(&dir.join(format!("{}.pcapng", r.id)), &bytes)?;
            }
        }
    }
    if o.timing {
        let _ = writeln!(
            err,
            "wall time: {:.3} s with {} job{}",
            started.elapsed().as_secs_f64(),
            o.jobs,
            if o.jobs == 1 { "" } else { "s" }
        );
    }
    Ok(if run.failed() { EXIT_FAIL } else { EXIT_PASS })
}

//! The `ethlink conformance` command (docs/conformance.md §5): chooses the device, selects the
//! cases, runs them in parallel and writes the reports. The command line itself is parsed by the
//! `ethlink` binary, which fills [`Options`] and calls [`run`].

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::case::{Case, Verdict};
use crate::cases;
use crate::device::{Device, Role};
use crate::dylib::DylibDevice;
use crate::external::{ExternalDevice, Limits};
use crate::files;
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
    /// Serve the reference of the role (or, with `dut_lib`, the library's device) over the line
    /// protocol on standard input and output instead of running the suite.
    pub serve: bool,
    /// With `dut_lib`: run the library in child processes (this program serving it over the
    /// line protocol, `self_exe`) instead of in this process, so that a library that crashes,
    /// exits or hangs takes only its case with it.
    pub isolate: bool,
    /// This program, for `isolate`: started as `<self_exe> conformance --serve --role ROLE
    /// --dut-lib PATH`.
    pub self_exe: Option<PathBuf>,
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
            isolate: false,
            self_exe: None,
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

/// Serves the reference of `role`, or with `dut_lib` the device of `role` made through that
/// library, over the line protocol on `input` and `out` (`--serve`).
pub fn serve(
    role: Role,
    dut_lib: Option<&Path>,
    input: &mut dyn std::io::BufRead,
    out: &mut dyn Write,
) -> Result<(), String> {
    let mut dev: Box<dyn Device> = match dut_lib {
        None => reference(role),
        Some(path) => Box::new(DylibDevice::load(path, role).map_err(|e| e.to_string())?),
    };
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

/// Writes `text` to standard output. A reader that has gone away (`| head`) is not an error:
/// the reports are written already and the exit status still gives the verdict.
fn say(out: &mut dyn Write, text: &str) -> Result<(), String> {
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(format!("cannot write the output: {e}"))
        }
        _ => Ok(()),
    }
}

/// The device of the run, and how its calls are bounded.
enum Backend {
    /// A device that bounds itself (an external process, killed at its limits).
    External(Box<runner::Factory<'static>>),
    /// An in-process device, bounded by running its calls on threads of their own.
    InProcess(runner::SharedFactory),
}

fn backend(o: &Options, role: Role, limits: Limits) -> Result<Backend, String> {
    Ok(match (&o.dut_cmd, &o.dut_lib) {
        (Some(_), Some(_)) => {
            return Err("--dut-cmd and --dut-lib name two devices: give one of them".into());
        }
        (Some(cmd), None) => {
            if o.isolate {
                return Err("--isolate runs a --dut-lib library in child processes; a \
                            --dut-cmd device runs in one already"
                    .into());
            }
            let cmd = cmd.clone();
            Backend::External(Box::new(move || {
                ExternalDevice::spawn(&cmd, limits)
                    .map(|d| Box::new(d) as Box<dyn Device>)
                    .map_err(|e| e.to_string())
            }))
        }
        (None, Some(path)) => {
            let path = library_path(path)?;
            if o.isolate {
                let exe = o.self_exe.clone().ok_or_else(|| {
                    "--isolate: cannot tell which program to start for the library".to_owned()
                })?;
                let args: Vec<OsString> = vec![
                    "conformance".into(),
                    "--serve".into(),
                    "--role".into(),
                    role.name().into(),
                    "--dut-lib".into(),
                    path.into_os_string(),
                ];
                Backend::External(Box::new(move || {
                    ExternalDevice::spawn_program(&exe, &args, limits)
                        .map(|d| Box::new(d) as Box<dyn Device>)
                        .map_err(|e| e.to_string())
                }))
            } else {
                Backend::InProcess(Arc::new(move || {
                    DylibDevice::load(&path, role)
                        .map(|d| Box::new(d) as Box<dyn Device>)
                        .map_err(|e| e.to_string())
                }))
            }
        }
        (None, None) => {
            if o.isolate {
                return Err("--isolate needs --dut-lib: the reference runs in-process".into());
            }
            Backend::InProcess(Arc::new(move || Ok(reference(role))))
        }
    })
}

/// The library `--dut-lib` names, taken as a path (relative to the current directory when it
/// is relative), never searched for on the loader's path: `wrap.so` is the file `./wrap.so`.
fn library_path(path: &Path) -> Result<PathBuf, String> {
    std::fs::canonicalize(path).map_err(|e| {
        format!(
            "--dut-lib {}: {e} (the library is a path, taken from the current directory \
             when it is relative; it is not searched for on the loader's path)",
            path.display()
        )
    })
}

fn execute(o: &Options, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8, String> {
    if o.jobs == 0 {
        return Err("--jobs must be at least 1".into());
    }
    let limits = limits(o)?;
    if o.list {
        let listed = select(o.role, o.filter.as_deref());
        if let Some(p) = &o.json {
            files::write_whole(p, report::list_json(&listed).as_bytes())?;
        }
        let mut text = String::new();
        for c in &listed {
            text.push_str(&report::list_entry(c));
            text.push('\n');
        }
        say(out, &text)?;
        return Ok(EXIT_PASS);
    }
    let started = Instant::now();
    // The role: the one asked for, or the one an external device declares.
    let role = match (o.role, &o.dut_cmd) {
        (Some(r), _) => r,
        (None, Some(cmd)) => {
            let mut d = ExternalDevice::spawn(cmd, limits).map_err(|e| e.to_string())?;
            d.hello()
                .map_err(|e| format!("the device did not answer hello: {e}"))?
                .role
        }
        (None, None) => Role::LinkEnd,
    };
    let backend = backend(o, role, limits)?;
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
    let (desc, results) = match &backend {
        Backend::External(factory) => runner::run_suite(&selected, factory.as_ref(), o.jobs)?,
        Backend::InProcess(factory) => {
            // A library that ends the process mid-run (exit) must not look like a run that
            // passed.
            let guarded = o.dut_lib.is_some();
            if guarded {
                crate::dylib::guard_exit(true);
            }
            let bounds = runner::Bounds {
                start: limits.request,
                case: limits.case,
            };
            let ran = runner::run_suite_bounded(&selected, factory, o.jobs, bounds);
            if guarded {
                crate::dylib::guard_exit(false);
            }
            ran?
        }
    };
    let run = Run {
        desc: &desc,
        cases: &selected,
        results: &results,
        strict: o.strict,
    };
    // The reports first, each written whole: a reader of the summary that goes away early, or
    // a disk that fills, never leaves a report truncated or missing for a run that finished.
    if let Some(p) = &o.json {
        files::write_whole(p, report::json(&run).as_bytes())?;
    }
    if let Some(p) = &o.junit {
        files::write_whole(p, report::junit(&run).as_bytes())?;
    }
    if let Some(dir) = &o.pcap_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        for r in &results {
            if matches!(
                r.verdict,
                Verdict::Fail | Verdict::NonStrict | Verdict::HarnessError
            ) {
                let bytes = report::pcapng(r.id, desc.ports, &r.log)?;
                files::write_whole(&dir.join(format!("{}.pcapng", r.id)), &bytes)?;
            }
        }
    }
    say(out, &report::summary(&run))?;
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

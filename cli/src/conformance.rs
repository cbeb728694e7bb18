//! `ethlink conformance`: the command line of the conformance suite; the work is done by
//! `ethlink_conformance::app`.

use std::io::Write;
use std::path::PathBuf;

use std::time::Duration;

use clap::Args;
use ethlink_conformance::Role;
use ethlink_conformance::app::{self, Options};
use ethlink_conformance::runner;

use crate::Io;

/// Arguments of `conformance`.
#[derive(Debug, Args)]
pub struct ConformanceArgs {
    /// The role whose cases run: link_end, endpoint or switch. Default: the role an external
    /// device declares in its hello answer, or link_end against the reference or a library.
    #[arg(long, value_name = "ROLE", value_parser = parse_role)]
    pub role: Option<Role>,
    /// Run the suite against an external device: `sh -c COMMAND` speaking the line protocol of
    /// docs/conformance.md on its standard input and output. Default: the reference of the role.
    #[arg(long, value_name = "COMMAND", conflicts_with = "dut_lib")]
    pub dut_cmd: Option<String>,
    /// Run the suite against a shared library that exports the C ABI of include/ethlink.h
    /// (docs/cosim.md), loaded into this process: a C or C++ model, or an RTL simulation wrapped
    /// in one. The device of --role (default link_end) is made through it. PATH is a file path
    /// (relative to the current directory), never searched for on the loader's path.
    #[arg(long, value_name = "PATH")]
    pub dut_lib: Option<PathBuf>,
    /// With --dut-lib: load the library in child processes of this program instead of this
    /// process, one at a time per worker, speaking the line protocol. A library that crashes,
    /// calls exit or hangs then costs the case it was in, not the run and its reports.
    #[arg(long, requires = "dut_lib")]
    pub isolate: bool,
    /// Print the selected cases (id, role, level, requirements, title), each followed by the
    /// text of its requirements as docs/spec/ writes them, and stop. With --json, also write the
    /// catalogue to FILE as JSON.
    #[arg(long)]
    pub list: bool,
    /// Only the cases whose id contains PATTERN, or matches it as a glob when it has * or ?.
    #[arg(long, value_name = "PATTERN")]
    pub filter: Option<String>,
    /// SHOULD cases count: a NonStrict verdict fails the run.
    #[arg(long)]
    pub strict: bool,
    /// Worker threads, each with its own device; reports do not depend on it.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub jobs: usize,
    /// Write a JUnit XML report to FILE.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Write a JSON report to FILE (with --list: the catalogue).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write `DIR/<case id>.pcapng` for every failed or harness-error case.
    #[arg(long, value_name = "DIR")]
    pub pcap_dir: Option<PathBuf>,
    /// Wall-time limit of one case, in seconds (an external device is killed; a case of the
    /// in-process reference runs on a thread that is abandoned).
    #[arg(long, value_name = "S", default_value_t = 60.0)]
    pub case_timeout_s: f64,
    /// Wall-time limit of one request to an external device, in seconds.
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    pub request_timeout_s: f64,
    /// Print the wall time of the run on standard error.
    #[arg(long)]
    pub timing: bool,
    /// Run no case: be the reference of --role (default link_end), or with --dut-lib the device
    /// that library makes, as an external device, speaking the line protocol on standard input
    /// and output, until bye. For comparing an adapter's answers with the reference's, for
    /// `--dut-cmd "ethlink conformance --serve"`, and for --isolate.
    #[arg(long, conflicts_with_all = ["dut_cmd", "list", "junit", "json", "pcap_dir", "isolate"])]
    pub serve: bool,
}

fn parse_role(s: &str) -> Result<Role, String> {
    Role::from_name(s).ok_or_else(|| format!("{s:?} is not a role: link_end, endpoint or switch"))
}

/// Runs the command; returns its exit status.
pub fn execute(a: &ConformanceArgs, io: &mut Io<'_>) -> u8 {
    let o = Options {
        role: a.role,
        dut_cmd: a.dut_cmd.clone(),
        dut_lib: a.dut_lib.clone(),
        list: a.list,
        filter: a.filter.clone(),
        strict: a.strict,
        jobs: a.jobs,
        junit: a.junit.clone(),
        json: a.json.clone(),
        pcap_dir: a.pcap_dir.clone(),
        case_timeout_s: a.case_timeout_s,
        request_timeout_s: a.request_timeout_s,
        timing: a.timing,
        serve: a.serve,
        isolate: a.isolate,
        self_exe: std::env::current_exe().ok(),
    };
    let role = a.role.unwrap_or(Role::LinkEnd);
    if a.serve {
        let mut input = std::io::BufReader::new(&mut *io.stdin);
        return match app::serve(role, a.dut_lib.as_deref(), &mut input, io.stdout) {
            Ok(()) => app::EXIT_PASS,
            Err(why) => {
                let _ = writeln!(io.stderr, "error: {why}");
                app::EXIT_USAGE
            }
        };
    }
    // Devices run in process groups of their own, which an interrupt of this one does not
    // reach: end them with it. Only one handler can be installed per process; a second run in
    // the same process (tests) keeps the first, which does the same.
    let _ = ctrlc::set_handler(|| {
        // Set before the devices are killed: the run, seeing them gone, must not end the process
        // with its own status first.
        INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
        ethlink_conformance::external::kill_all();
        if let Ok(mut err) = std::fs::OpenOptions::new().append(true).open("/dev/stderr") {
            let _ = writeln!(err, "interrupted: the devices under test were stopped");
        }
        ethlink_conformance::dylib::exit_now(130);
    });
    let code = app::run(&o, io.stdout, io.stderr);
    if INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
        // The handler ends the process with 130 once it has stopped the devices.
        let _ = io.stdout.flush();
        let _ = io.stderr.flush();
        ethlink_conformance::dylib::exit_now(130);
    }
    if !runner::settled(Duration::from_secs(1)) {
        // A call into the library never returned: its exit handlers could wait on it forever.
        let _ = io.stdout.flush();
        let _ = io.stderr.flush();
        ethlink_conformance::dylib::exit_now(code);
    }
    code
}

/// An interrupt arrived: the devices under test are being stopped and the process ends with 130.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

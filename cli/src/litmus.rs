//! `ethlink litmus`: runs litmus tests (the text form of `ethlink_fabric::litmus`) on the fabric
//! and prints each one's histogram of final states as litmus7 prints one, with the states the
//! EthLink 1.3 ordering model allows it (`Litmus::model_outcomes`).

use std::path::{Path, PathBuf};

use clap::Args;
use ethlink_fabric::Scenario;
use ethlink_fabric::litmus::Litmus;
use ethlink_fabric::run_litmus as run;

use crate::Io;
use crate::run::scenario_file;

/// Arguments of `litmus`.
#[derive(Debug, Args)]
pub struct LitmusArgs {
    /// Litmus test files (TOML), or directories whose .toml files are tests (fabric/litmus/ holds
    /// the catalogue).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Iterations of each test.
    #[arg(long, value_name = "N", default_value_t = 1000,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub iterations: u32,
    /// The window, ns, within which each agent starts each iteration (drawn from the seed).
    #[arg(long, value_name = "NS", default_value_t = 2000,
          value_parser = clap::value_parser!(u64).range(0..=1_000_000_000))]
    pub jitter_ns: u64,
    /// The fabric the tests run on: a scenario file (docs/scenarios.md) whose topology, links,
    /// faults and outages are used and whose traffic is left out. Default: the built-in default
    /// scenario's fabric (8 GPUs of 4 stacks x 2 ports, 8 switch planes, BER 1e-10).
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// The seed, instead of the scenario's.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

/// Most bytes of one test file.
const TEST_LIMIT: u64 = 64 * 1024;
/// Most tests one command runs.
const MAX_TESTS: usize = 10_000;

/// The test files `args` names, in order: files as given, then each directory's .toml files by
/// name.
fn test_files(args: &LitmusArgs) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for f in &args.files {
        if f.is_dir() {
            let mut inner: Vec<PathBuf> = std::fs::read_dir(f)
                .map_err(|e| format!("{}: {e}", f.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().and_then(|x| x.to_str()) == Some("toml"))
                .collect();
            inner.sort();
            out.extend(inner);
        } else {
            out.push(f.clone());
        }
        if out.len() > MAX_TESTS {
            return Err(format!("more than {MAX_TESTS} tests"));
        }
    }
    Ok(out)
}

fn read_test(path: &Path) -> Result<Litmus, String> {
    let text = crate::input::read_file(path, TEST_LIMIT)?;
    Litmus::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn fabric(args: &LitmusArgs) -> Result<Scenario, String> {
    let mut s = scenario_file(args.scenario.as_deref())?;
    if let Some(seed) = args.seed {
        s.seed = seed;
    }
    s.traffic.clear();
    s.metrics.sample_ns = 0;
    Ok(s)
}

/// Runs every test; exit status 0 when none reached a forbidden state or a state the model does
/// not allow, 1 when one did, 2 when a file or an option cannot be used (every test is read, and
/// checked against the fabric, before any runs).
pub fn execute(args: &LitmusArgs, io: &mut Io<'_>) -> Result<u8, String> {
    let scen = fabric(args)?;
    let files = test_files(args)?;
    let mut tests = Vec::with_capacity(files.len());
    for f in &files {
        let t = read_test(f)?;
        // A test the fabric cannot run (a GPU or a port it does not have) is refused now.
        let topo = &scen.topology;
        t.fits(topo.gpus, topo.stacks, topo.ports_per_stack)
            .map_err(|e| format!("{}: {e}", f.display()))?;
        tests.push(t);
    }
    let mut summary = Vec::new();
    let mut worst = 0u8;
    for t in &tests {
        let r = run(t, &scen, args.iterations, args.jitter_ns)
            .map_err(|e| format!("{}: {e}", t.name))?;
        let bad = r.histogram.forbidden_seen(t);
        let mut text = r.histogram.render(t);
        let outside = match t.model_outcomes() {
            Some(model) => {
                let outside: u64 = r
                    .histogram
                    .counts
                    .iter()
                    .filter(|(o, _)| !model.contains(o))
                    .map(|(_, n)| n)
                    .sum();
                text.push_str(&format!(
                    "Model (transaction.md §4): {} states allowed; {outside} of {} runs outside them\n",
                    model.len(),
                    r.histogram.runs()
                ));
                outside
            }
            None => {
                text.push_str("Model (transaction.md §4): too many executions to enumerate\n");
                0
            }
        };
        if r.failed > 0 {
            text.push_str(&format!(
                "({} iterations left out: an operation ended with an error status)\n",
                r.failed
            ));
        }
        text.push('\n');
        io.stdout
            .write_all(text.as_bytes())
            .map_err(|e| format!("cannot write the output: {e}"))?;
        if bad > 0 || outside > 0 {
            worst = 1;
        }
        let mut line = format!(
            "{:<24} {:>9} {}",
            t.name,
            if bad == 0 { "Never" } else { "Sometimes" },
            if bad == 0 {
                format!("{} runs", r.histogram.runs())
            } else {
                format!(
                    "{bad} of {} runs reached a forbidden state",
                    r.histogram.runs()
                )
            }
        );
        if outside > 0 {
            line.push_str(&format!("; {outside} runs ended outside the model"));
        }
        summary.push(line);
    }
    let mut text = String::from("Summary (forbidden states seen)\n");
    for line in summary {
        text.push_str(&line);
        text.push('\n');
    }
    io.stdout
        .write_all(text.as_bytes())
        .and_then(|()| io.stdout.flush())
        .map_err(|e| format!("cannot write the output: {e}"))?;
    Ok(worst)
}

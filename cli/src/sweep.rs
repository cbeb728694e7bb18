//! `ethlink sweep`: a grid of scenarios (values of keys, and seeds) run on worker threads, one
//! JSON report and one scenario file per run plus a CSV summary; or the grid written out for a
//! batch engine to run elsewhere (`--plan`), and the summary collected afterwards (`--collect`).
//!
//! Every run is a whole `ethlink run` of its own scenario: the JSON a sweep writes for a run is
//! what `ethlink run --scenario DIR/<run>.toml --json` prints, byte for byte, but for the
//! wall-clock section. Runs share nothing, so the worker that runs one and the order they finish
//! in change nothing in any file.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use clap::Args;
use ethlink_fabric::{Fabric, Scenario};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::run::{
    EXIT_DATA, EXIT_FABRIC, EXIT_PASS, Format, RunJson, check_memory, parse_scenario, scenario_toml,
};

/// Arguments of `sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The scenario every run starts from (TOML, or JSON when the name ends in .json); the
    /// built-in default without it.
    #[arg(long, value_name = "FILE", conflicts_with = "collect")]
    pub scenario: Option<PathBuf>,
    /// A key of the scenario and the values it takes, `KEY=V1,V2,...`: a dotted path as
    /// docs/scenarios.md names keys (`link.rx_credits`, `traffic.0.bytes_per_pair`,
    /// `switch.mode`), and TOML values (`1e-9`, `"store_and_forward"`, or a bare word, which is
    /// taken as a string). Repeat it for more keys: the grid is every combination, the first key
    /// varying slowest.
    #[arg(long = "set", value_name = "KEY=V1,V2,...", conflicts_with = "collect")]
    pub set: Vec<String>,
    /// Seeds of every grid point: a list (`1,2,7`) or a range (`1-8`). Without it, the
    /// scenario's own seed.
    #[arg(long, value_name = "LIST", conflicts_with = "collect")]
    pub seeds: Option<String>,
    /// The directory of the runs' files and the summary (created if missing).
    #[arg(long, value_name = "DIR", required_unless_present = "collect")]
    pub out: Option<PathBuf>,
    /// Runs at once, each on a worker thread of its own (default: the machine's cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub jobs: Option<u16>,
    /// Most memory the runs running at once may need together (as `run --max-memory`).
    #[arg(long, value_name = "SIZE", value_parser = crate::run::parse_size)]
    pub max_memory: Option<u64>,
    /// Write the grid (sweep.json and one scenario file per run) without running it, for a batch
    /// engine to run each scenario elsewhere with `ethlink run --scenario FILE --json`.
    #[arg(long, conflicts_with = "collect")]
    pub plan: bool,
    /// Read the JSON reports of the runs of the grid in DIR (as a sweep or a batch engine wrote
    /// them) and write DIR/summary.csv.
    #[arg(long, value_name = "DIR")]
    pub collect: Option<PathBuf>,
}

/// What sweep.json records of a grid: enough to name every run and to summarise it again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// The swept keys, in grid order.
    pub keys: Vec<String>,
    /// Every run: its name and the value of each swept key and its seed.
    pub runs: Vec<PlannedRun>,
}

/// One run of a grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannedRun {
    /// Its name: its files are `<name>.toml` and `<name>.json`.
    pub name: String,
    /// The values of the swept keys, as TOML writes them, in the order of [`Plan::keys`].
    pub values: Vec<String>,
    /// Its seed.
    pub seed: u64,
}

/// The most runs one sweep makes.
const MAX_RUNS: usize = 100_000;

/// One swept key and its values.
struct Axis {
    key: String,
    values: Vec<Value>,
}

/// Runs `ethlink sweep`.
pub fn execute(args: &SweepArgs, io: &mut crate::Io<'_>) -> Result<u8, String> {
    if let Some(dir) = &args.collect {
        let plan = read_plan(dir)?;
        let (csv, status) = summarise(dir, &plan)?;
        write_file(&dir.join(SUMMARY), csv.as_bytes())?;
        print(io, &csv)?;
        return Ok(status);
    }
    let out = args
        .out
        .as_deref()
        .ok_or("--out: the directory of the runs is needed")?;
    let base = base_scenario(args.scenario.as_deref())?;
    let axes = args
        .set
        .iter()
        .map(|s| parse_axis(s))
        .collect::<Result<Vec<_>, _>>()?;
    let seeds = match &args.seeds {
        Some(s) => parse_seeds(s)?,
        None => vec![base.seed],
    };
    let (plan, scenarios) = grid(&base, &axes, &seeds)?;
    let jobs = usize::from(
        args.jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u16)),
    )
    .clamp(1, scenarios.len().max(1));
    // The runs running at once share the memory: each may have its share of the limit.
    let share = args
        .max_memory
        .or_else(crate::run::machine_memory)
        .map(|m| m / jobs as u64);
    for (run, s) in plan.runs.iter().zip(&scenarios) {
        check_memory(s, share).map_err(|e| {
            format!(
                "{}: {e} (with --jobs {jobs} each run may use 1/{jobs} of the limit)",
                run.name
            )
        })?;
    }
    std::fs::create_dir_all(out)
        .map_err(|e| format!("--out: cannot create {}: {e}", out.display()))?;
    write_file(&out.join(PLAN), to_json(&plan)?.as_bytes())?;
    for (run, s) in plan.runs.iter().zip(&scenarios) {
        write_file(
            &out.join(format!("{}.toml", run.name)),
            scenario_toml(s)?.as_bytes(),
        )?;
    }
    if args.plan {
        let mut text = String::new();
        let _ = writeln!(
            text,
            "{} runs planned in {}: run each with `ethlink run --scenario {}/<run>.toml --json > \
             {}/<run>.json`, then `ethlink sweep --collect {}`",
            plan.runs.len(),
            out.display(),
            out.display(),
            out.display(),
            out.display()
        );
        print(io, &text)?;
        return Ok(EXIT_PASS);
    }
    run_all(out, &plan, &scenarios, jobs)?;
    let (csv, status) = summarise(out, &plan)?;
    write_file(&out.join(SUMMARY), csv.as_bytes())?;
    print(io, &csv)?;
    Ok(status)
}

/// The name of the grid's description in the output directory.
const PLAN: &str = "sweep.json";
/// The name of the summary.
const SUMMARY: &str = "summary.csv";

fn base_scenario(path: Option<&Path>) -> Result<Scenario, String> {
    match path {
        None => Ok(Scenario::default()),
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| format!("cannot read {}: {e}", p.display()))?;
            parse_scenario(&text, Format::of(p)).map_err(|e| format!("{}: {e}", p.display()))
        }
    }
}

/// `KEY=V1,V2,...` as an axis of the grid.
fn parse_axis(s: &str) -> Result<Axis, String> {
    let (key, values) = s
        .split_once('=')
        .ok_or_else(|| format!("--set {s:?}: expected KEY=V1,V2,..."))?;
    let key = key.trim();
    if key.is_empty() || key.split('.').any(str::is_empty) {
        return Err(format!("--set {s:?}: {key:?} is not a dotted key"));
    }
    let values = split_top(values)
        .into_iter()
        .map(|v| toml_value(v.trim()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("--set {key}: {e}"))?;
    if values.is_empty() {
        return Err(format!("--set {key}: no value"));
    }
    Ok(Axis {
        key: key.to_owned(),
        values,
    })
}

/// Splits `s` on the commas that are not inside brackets, braces or quotes.
fn split_top(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut quote, mut start) = (0i32, None, 0);
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '{') => depth += 1,
            (None, ']' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts.retain(|p| !p.trim().is_empty());
    parts
}

/// A TOML value (`1e-9`, `true`, `"x"`, `[1, 2]`), or a bare word taken as a string.
fn toml_value(v: &str) -> Result<Value, String> {
    if v.is_empty() {
        return Err("an empty value".to_owned());
    }
    match toml::from_str::<toml::Table>(&format!("v = {v}")) {
        Ok(mut t) => {
            let x = t.remove("v").ok_or("no value")?;
            serde_json::to_value(x).map_err(|e| format!("{v}: {e}"))
        }
        Err(_)
            if v.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') =>
        {
            Ok(Value::String(v.to_owned()))
        }
        Err(e) => Err(format!("{v:?} is not a TOML value: {}", e.message())),
    }
}

/// `1,2,7` or `1-8`.
fn parse_seeds(s: &str) -> Result<Vec<u64>, String> {
    let num = |t: &str| {
        t.trim()
            .parse::<u64>()
            .map_err(|_| format!("--seeds: {t:?} is not a seed (a whole number)"))
    };
    let seeds = if let Some((a, b)) = s.split_once('-') {
        let (a, b) = (num(a)?, num(b)?);
        if a > b {
            return Err(format!("--seeds: the range {a}-{b} is empty"));
        }
        if b - a >= MAX_RUNS as u64 {
            return Err(format!("--seeds: {a}-{b} is more than {MAX_RUNS} seeds"));
        }
        (a..=b).collect()
    } else {
        s.split(',').map(num).collect::<Result<Vec<_>, _>>()?
    };
    if seeds.is_empty() {
        return Err("--seeds: no seed".to_owned());
    }
    Ok(seeds)
}

/// Every combination of the axes' values, with every seed innermost: the plan and each run's
/// scenario, checked as a scenario file would be.
fn grid(base: &Scenario, axes: &[Axis], seeds: &[u64]) -> Result<(Plan, Vec<Scenario>), String> {
    let count = axes
        .iter()
        .try_fold(seeds.len(), |n, a| n.checked_mul(a.values.len()))
        .filter(|&n| n <= MAX_RUNS)
        .ok_or(format!("the grid has more than {MAX_RUNS} runs"))?;
    let width = count.to_string().len().max(4);
    let root = serde_json::to_value(base).map_err(|e| format!("the base scenario: {e}"))?;
    let mut plan = Plan {
        keys: axes.iter().map(|a| a.key.clone()).collect(),
        runs: Vec::with_capacity(count),
    };
    let mut scenarios = Vec::with_capacity(count);
    for index in 0..count {
        // Mixed radix, the last axis and then the seed varying fastest.
        let mut rest = index;
        let seed = seeds[rest % seeds.len()];
        rest /= seeds.len();
        let mut picks = vec![0; axes.len()];
        for (k, a) in axes.iter().enumerate().rev() {
            picks[k] = rest % a.values.len();
            rest /= a.values.len();
        }
        let mut v = root.clone();
        let mut values = Vec::with_capacity(axes.len());
        for (a, &p) in axes.iter().zip(&picks) {
            let x = &a.values[p];
            set(&mut v, &a.key, x.clone())?;
            values.push(toml_text(x));
        }
        set(&mut v, "seed", Value::from(seed))?;
        let name = format!("run-{:0width$}", index + 1);
        let text = serde_json::to_string(&v).map_err(|e| format!("{name}: {e}"))?;
        let s = parse_scenario(&text, Format::Json).map_err(|e| {
            format!(
                "{name} ({}): {e}",
                describe(&plan.keys, &values, seed).trim_end()
            )
        })?;
        scenarios.push(s.resolved());
        plan.runs.push(PlannedRun { name, values, seed });
    }
    Ok((plan, scenarios))
}

/// Sets the dotted `key` of the scenario `v` to `x`: every table on the way must exist (an array
/// element by its index), so that a misspelt key is named rather than ignored.
fn set(v: &mut Value, key: &str, x: Value) -> Result<(), String> {
    let parts: Vec<&str> = key.split('.').collect();
    let (last, path) = parts.split_last().ok_or("an empty key")?;
    let mut at = v;
    for (i, p) in path.iter().enumerate() {
        let here = parts[..=i].join(".");
        at = match at {
            Value::Object(o) => o.get_mut(*p),
            Value::Array(a) => p.parse::<usize>().ok().and_then(|n| a.get_mut(n)),
            _ => None,
        }
        .ok_or_else(|| format!("--set {key}: the scenario has no {here}"))?;
    }
    match at {
        Value::Object(o) => {
            o.insert((*last).to_owned(), x);
            Ok(())
        }
        Value::Array(a) => {
            let slot = last
                .parse::<usize>()
                .ok()
                .and_then(|n| a.get_mut(n))
                .ok_or_else(|| format!("--set {key}: the scenario has no {key}"))?;
            *slot = x;
            Ok(())
        }
        _ => Err(format!("--set {key}: {} is not a table", path.join("."))),
    }
}

/// A value as TOML writes it.
fn toml_text(x: &Value) -> String {
    match x {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

fn describe(keys: &[String], values: &[String], seed: u64) -> String {
    let mut s = String::new();
    for (k, v) in keys.iter().zip(values) {
        let _ = write!(s, "{k} = {v}, ");
    }
    let _ = writeln!(s, "seed = {seed}");
    s
}

/// Runs every scenario on `jobs` worker threads; each writes its run's JSON report.
fn run_all(out: &Path, plan: &Plan, scenarios: &[Scenario], jobs: usize) -> Result<(), String> {
    let next = AtomicUsize::new(0);
    let failure: Mutex<Option<String>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let (Some(run), Some(s)) = (plan.runs.get(i), scenarios.get(i)) else {
                        return;
                    };
                    if failure.lock().map(|f| f.is_some()).unwrap_or(true) {
                        return;
                    }
                    if let Err(e) = run_one(out, &run.name, s)
                        && let Ok(mut f) = failure.lock()
                    {
                        f.get_or_insert(e);
                    }
                }
            });
        }
    });
    match failure.into_inner() {
        Ok(None) => Ok(()),
        Ok(Some(e)) => Err(e),
        Err(_) => Err("a worker thread failed".to_owned()),
    }
}

/// Runs one scenario and writes `<name>.json`, as `ethlink run --json` prints it.
fn run_one(out: &Path, name: &str, s: &Scenario) -> Result<(), String> {
    let mut fabric = Fabric::new(s).map_err(|e| format!("{name}: {e}"))?;
    let report = fabric.run(None);
    drop(fabric);
    let json = to_json(&RunJson {
        scenario: s,
        report: &report,
    })?;
    write_file(&out.join(format!("{name}.json")), json.as_bytes())
}

/// Writes `bytes` to `path` whole: under a temporary name first, then renamed.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.partial"));
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("cannot write {}: {e}", path.display())
        })
}

fn read_plan(dir: &Path) -> Result<Plan, String> {
    let path = dir.join(PLAN);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("--collect: cannot read {}: {e}", path.display()))?;
    let plan: Plan = serde_json::from_str(&text)
        .map_err(|e| format!("--collect: {} is not a sweep plan: {e}", path.display()))?;
    if plan.runs.iter().any(|r| {
        r.values.len() != plan.keys.len()
            || r.name.is_empty()
            || r.name.contains(['/', '\\'])
            || r.name.starts_with('.')
    }) {
        return Err(format!(
            "--collect: {} names a run badly or gives it the wrong number of values",
            path.display()
        ));
    }
    Ok(plan)
}

/// The columns of summary.csv after the run's name, its swept keys and its seed.
const COLUMNS: [&str; 16] = [
    "pass",
    "data_intact",
    "exit_status",
    "traffic_ns",
    "ops_issued",
    "ops_ok",
    "ops_error",
    "ops_lost",
    "mean_tx_gbps_per_gpu",
    "credit_stalls",
    "credit_stall_ns",
    "frames_replayed",
    "frame_hops",
    "data_frames_delivered",
    "wall_seconds",
    "failures",
];

/// summary.csv of the runs of `plan` in `dir`, in grid order, and the sweep's exit status: the
/// worst of its runs' (a lost byte anywhere outranks a failed run).
fn summarise(dir: &Path, plan: &Plan) -> Result<(String, u8), String> {
    let mut csv = String::from("run");
    for k in &plan.keys {
        let _ = write!(csv, ",{}", csv_field(k));
    }
    csv.push_str(",seed");
    for c in COLUMNS {
        let _ = write!(csv, ",{c}");
    }
    csv.push('\n');
    let mut status = EXIT_PASS;
    for run in &plan.runs {
        let path = dir.join(format!("{}.json", run.name));
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read the report {}: {e}", path.display()))?;
        let v: Value = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a run's JSON report: {e}", path.display()))?;
        let (row, s) = row(&v).map_err(|e| format!("{}: {e}", path.display()))?;
        status = worst(status, s);
        let _ = write!(csv, "{}", csv_field(&run.name));
        for x in &run.values {
            let _ = write!(csv, ",{}", csv_field(x));
        }
        let _ = write!(csv, ",{}", run.seed);
        for x in row {
            let _ = write!(csv, ",{}", csv_field(&x));
        }
        csv.push('\n');
    }
    Ok((csv, status))
}

fn worst(a: u8, b: u8) -> u8 {
    let rank = |s: u8| match s {
        EXIT_DATA => 2,
        EXIT_FABRIC => 1,
        _ => 0,
    };
    if rank(b) > rank(a) { b } else { a }
}

/// The figures of one run's report, in the order of [`COLUMNS`], and its exit status.
fn row(v: &Value) -> Result<(Vec<String>, u8), String> {
    let get = |path: &str| -> Result<&Value, String> {
        path.split('.')
            .try_fold(v, |at, p| at.get(p))
            .ok_or_else(|| format!("the report has no {path}"))
    };
    let num = |path: &str| -> Result<String, String> {
        let x = get(path)?;
        if x.is_number() {
            Ok(x.to_string())
        } else {
            Err(format!("{path} is not a number"))
        }
    };
    let flag = |path: &str| -> Result<bool, String> {
        get(path)?
            .as_bool()
            .ok_or_else(|| format!("{path} is not true or false"))
    };
    let pass = flag("pass")?;
    let intact = flag("data_intact")?;
    let status = if pass {
        EXIT_PASS
    } else if !intact {
        EXIT_DATA
    } else {
        EXIT_FABRIC
    };
    let gpus = get("throughput.gpus")?
        .as_array()
        .ok_or("throughput.gpus is not a list")?;
    let mean = if gpus.is_empty() {
        0.0
    } else {
        gpus.iter()
            .filter_map(|g| g.get("tx_gbps").and_then(Value::as_f64))
            .sum::<f64>()
            / gpus.len() as f64
    };
    let start = get("start_ns")?.as_u64().unwrap_or(0);
    let stop = get("end_ns")?.as_u64().unwrap_or(0);
    let failures: Vec<String> = get("failures")?
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let row = vec![
        pass.to_string(),
        intact.to_string(),
        status.to_string(),
        stop.saturating_sub(start).to_string(),
        num("ops.issued")?,
        num("ops.completed_ok")?,
        num("ops.completed_error")?,
        num("ops.lost")?,
        format!("{mean:.3}"),
        num("links.credit_stalls")?,
        num("links.credit_stall_ns")?,
        num("links.frames_replayed")?,
        num("sim.frame_hops")?,
        num("sim.data_frames_delivered")?,
        get("wall.seconds")
            .ok()
            .and_then(Value::as_f64)
            .map_or_else(String::new, |s| format!("{s:.3}")),
        failures.join("; "),
    ];
    Ok((row, status))
}

/// A CSV field, quoted when it has a comma, a quote or a line break (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

fn to_json(v: &impl Serialize) -> Result<String, String> {
    serde_json::to_string_pretty(v)
        .map(|mut s| {
            s.push('\n');
            s
        })
        .map_err(|e| format!("cannot render JSON: {e}"))
}

fn print(io: &mut crate::Io<'_>, text: &str) -> Result<(), String> {
    io.stdout
        .write_all(text.as_bytes())
        .and_then(|()| io.stdout.flush())
        .map_err(|e| format!("cannot write the output: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_split_on_top_level_commas_only() {
        assert_eq!(split_top("1,2, 3"), ["1", "2", " 3"]);
        assert_eq!(split_top("[1,2],[3]"), ["[1,2]", "[3]"]);
        assert_eq!(split_top("\"a,b\",c"), ["\"a,b\"", "c"]);
        assert_eq!(split_top(""), Vec::<&str>::new());
    }

    #[test]
    fn values_are_toml_or_bare_words() {
        assert_eq!(toml_value("1e-9"), Ok(Value::from(1e-9)));
        assert_eq!(toml_value("512"), Ok(Value::from(512)));
        assert_eq!(
            toml_value("store_and_forward"),
            Ok(Value::from("store_and_forward"))
        );
        assert_eq!(toml_value("\"a b\""), Ok(Value::from("a b")));
        assert!(toml_value("a b").is_err());
        assert!(toml_value("").is_err());
    }

    #[test]
    fn seeds_are_lists_or_ranges() {
        assert_eq!(parse_seeds("3"), Ok(vec![3]));
        assert_eq!(parse_seeds("1,5,2"), Ok(vec![1, 5, 2]));
        assert_eq!(parse_seeds("4-6"), Ok(vec![4, 5, 6]));
        assert!(parse_seeds("6-4").is_err());
        assert!(parse_seeds("x").is_err());
        assert!(parse_seeds("0-18446744073709551615").is_err());
    }

    #[test]
    fn the_grid_is_every_combination_seed_innermost() {
        let axes = [
            parse_axis("link.ber=0.0,1e-9").unwrap_or_else(|e| panic!("{e}")),
            parse_axis("switch.mode=cut_through,store_and_forward")
                .unwrap_or_else(|e| panic!("{e}")),
        ];
        let (plan, scenarios) =
            grid(&Scenario::default(), &axes, &[7, 8]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(plan.runs.len(), 8);
        assert_eq!(scenarios.len(), 8);
        assert_eq!(plan.runs[0].name, "run-0001");
        assert_eq!(plan.runs[0].values, ["0.0", "\"cut_through\""]);
        assert_eq!((plan.runs[0].seed, plan.runs[1].seed), (7, 8));
        assert_eq!(plan.runs[2].values, ["0.0", "\"store_and_forward\""]);
        assert_eq!(plan.runs[4].values, ["1e-9", "\"cut_through\""]);
        assert_eq!(scenarios[5].link.ber, 1e-9);
        assert_eq!(scenarios[5].seed, 8);
        // Derived defaults are written in, so that a run's file is the scenario that ran.
        assert!(scenarios.iter().all(|s| s.link.rx_credits.is_some()));
    }

    #[test]
    fn a_key_the_scenario_lacks_or_a_bad_value_is_named() {
        let bad = |set: &str| {
            let a = parse_axis(set).unwrap_or_else(|e| panic!("{e}"));
            match grid(&Scenario::default(), &[a], &[1]) {
                Ok(_) => panic!("{set} accepted"),
                Err(e) => e,
            }
        };
        assert!(
            bad("lnk.ber=0.0").contains("the scenario has no lnk"),
            "bad key"
        );
        assert!(bad("traffic.9.bytes=1").contains("no traffic.9"));
        let e = bad("link.ber=2.0");
        assert!(
            e.starts_with("run-0001 (link.ber = 2.0, seed = 1): link.ber"),
            "{e}"
        );
        let e = bad("link.rx_credit=5");
        assert!(e.contains("rx_credit"), "{e}");
    }
}

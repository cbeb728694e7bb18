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
use ethlink_conformance::files::write_whole;
use ethlink_fabric::{Fabric, Scenario};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

use crate::input;
use crate::metered::{Exceeded, Meter};
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
    /// taken as a string). Repeat it for more keys, each once: the grid is every combination,
    /// the first key varying slowest. `--set seed=1,2,7` gives the seeds, as `--seeds` does.
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
    /// them) and write DIR/summary.csv. A report whose scenario is not its run's (a report of
    /// another run, or of another grid) is refused, naming the file.
    #[arg(long, value_name = "DIR")]
    pub collect: Option<PathBuf>,
}

/// What sweep.json records of a grid: enough to rebuild every run's scenario, to name it, and
/// to tell its report from any other.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// The scenario every run starts from, before its values and its seed are set.
    pub base: Scenario,
    /// The swept keys, in grid order, as `--set` gave them.
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
    /// The values its scenario has at the swept keys, as TOML writes them, in the order of
    /// [`Plan::keys`].
    pub values: Vec<String>,
    /// Its seed.
    pub seed: u64,
}

/// The most runs one sweep makes.
const MAX_RUNS: usize = 100_000;
/// Largest sweep.json, in bytes: a hundred thousand runs of a few keys take a few megabytes. A
/// sweep refuses to write a larger one, which `--collect` would not read.
pub const PLAN_LIMIT: u64 = 64 << 20;
/// Largest run report `--collect` reads, in bytes. A report is read as it streams, keeping only
/// the figures of the summary, so its time series may be of any length up to this.
pub const REPORT_LIMIT: u64 = 1 << 40;
/// Largest section of a report kept while it is read (`ops`, `throughput`, `links`, ...),
/// in bytes; the scenario section may be as long as a scenario file
/// ([`input::SCENARIO_LIMIT`]).
const SECTION_LIMIT: u64 = 64 << 20;
/// The largest seed: a scenario file (TOML) holds integers up to 2^63 - 1.
const MAX_SEED: u64 = i64::MAX as u64;

/// A swept key: as `--set` wrote it, and its dotted path with array indices written plainly
/// (`traffic.00.ops` and `traffic.0.ops` are one key).
#[derive(Debug, Clone)]
struct Key {
    written: String,
    path: Vec<String>,
}

/// A value of a swept key: as `--set` wrote it, and as TOML reads it.
#[derive(Debug, Clone)]
struct Given {
    written: String,
    value: toml::Value,
}

/// One swept key and its values.
#[derive(Debug)]
struct Axis {
    key: Key,
    values: Vec<Given>,
}

/// Runs `ethlink sweep`.
pub fn execute(args: &SweepArgs, io: &mut crate::Io<'_>) -> Result<u8, String> {
    if let Some(dir) = &args.collect {
        let plan = read_plan(dir)?;
        let keys = plan
            .keys
            .iter()
            .map(|k| parse_key(k))
            .collect::<Result<Vec<_>, _>>()
            .and_then(|keys| check_keys(&keys).map(|()| keys))
            .map_err(|e| format!("--collect: {}: {e}", dir.join(PLAN).display()))?;
        let (csv, status) = summarise(dir, &plan, &keys)?;
        write_whole(&dir.join(SUMMARY), csv.as_bytes())?;
        print(io, &csv)?;
        return Ok(status);
    }
    let out = args
        .out
        .as_deref()
        .ok_or("--out: the directory of the runs is needed")?;
    let base = base_scenario(args.scenario.as_deref())?;
    let mut axes = args
        .set
        .iter()
        .map(|s| parse_axis(s))
        .collect::<Result<Vec<_>, _>>()?;
    check_keys(&axes.iter().map(|a| a.key.clone()).collect::<Vec<_>>())?;
    // `--set seed=...` gives the seeds, as `--seeds` does: the seed is the grid's innermost
    // axis, set after every key.
    let seed_axis = axes.iter().position(|a| a.key.path == ["seed"]);
    let seeds = match (seed_axis, &args.seeds) {
        (Some(i), Some(s)) => {
            return Err(format!(
                "--set {} and --seeds {s} both give the seeds: give them once, with --seeds",
                axes[i].key.written
            ));
        }
        (Some(i), None) => seeds_of(&axes.remove(i))?,
        (None, Some(s)) => parse_seeds(s)?,
        (None, None) => vec![base.seed],
    };
    let (plan, scenarios) = grid(&base, &axes, &seeds)?;
    let plan_json = to_json(&plan)?;
    if plan_json.len() as u64 > PLAN_LIMIT {
        return Err(format!(
            "the grid's {PLAN} would be {} bytes, more than {PLAN_LIMIT}, the most --collect \
             reads: make the grid smaller or its values shorter",
            plan_json.len()
        ));
    }
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
        check_memory(s, share, false).map_err(|e| {
            format!(
                "{}: {e} (with --jobs {jobs} each run may use 1/{jobs} of the limit)",
                run.name
            )
        })?;
    }
    std::fs::create_dir_all(out)
        .map_err(|e| format!("--out: cannot create {}: {e}", out.display()))?;
    write_whole(&out.join(PLAN), plan_json.as_bytes())?;
    for (run, s) in plan.runs.iter().zip(&scenarios) {
        write_whole(
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
    let keys: Vec<Key> = axes.into_iter().map(|a| a.key).collect();
    let (csv, status) = summarise(out, &plan, &keys)?;
    write_whole(&out.join(SUMMARY), csv.as_bytes())?;
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
            let text = input::read_file(p, input::SCENARIO_LIMIT)?;
            parse_scenario(&text, Format::of(p)).map_err(|e| format!("{}: {e}", p.display()))
        }
    }
}

/// A dotted key as `--set` writes it (`link.ber`, `traffic.0.bytes_per_pair`).
fn parse_key(written: &str) -> Result<Key, String> {
    let written = written.trim();
    if written.is_empty() || written.split('.').any(str::is_empty) {
        return Err(format!("--set {written:?}: not a dotted key"));
    }
    let path = written
        .split('.')
        .map(|p| {
            // An index written with leading zeros is the same index.
            match p.parse::<usize>() {
                Ok(n) if p.bytes().all(|b| b.is_ascii_digit()) => n.to_string(),
                _ => p.to_owned(),
            }
        })
        .collect();
    Ok(Key {
        written: written.to_owned(),
        path,
    })
}

/// Refuses a key given twice, and two keys one of which holds the other (`link` and
/// `link.ber`): the values of the one would overwrite those of the other, and the summary
/// would show values no run used.
fn check_keys(keys: &[Key]) -> Result<(), String> {
    for (i, a) in keys.iter().enumerate() {
        for b in keys.iter().skip(i + 1) {
            if a.path == b.path {
                return Err(if a.written == b.written {
                    format!(
                        "--set {}: the key is given twice; give all its values at once, \
                         {}=V1,V2,...",
                        b.written, b.written
                    )
                } else {
                    format!(
                        "--set {} and --set {}: the same key given twice; give all its values \
                         at once, {}=V1,V2,...",
                        a.written, b.written, a.written
                    )
                });
            }
            let (outer, inner) = if a.path.len() < b.path.len() {
                (a, b)
            } else {
                (b, a)
            };
            if inner.path.starts_with(&outer.path) {
                return Err(format!(
                    "--set {} and --set {}: {} is part of {}, whose values would overwrite it",
                    a.written, b.written, inner.written, outer.written
                ));
            }
        }
    }
    Ok(())
}

/// `KEY=V1,V2,...` as an axis of the grid.
fn parse_axis(s: &str) -> Result<Axis, String> {
    let (key, values) = s
        .split_once('=')
        .ok_or_else(|| format!("--set {s:?}: expected KEY=V1,V2,..."))?;
    let key = parse_key(key)?;
    let parts = split_top(values);
    if parts.iter().all(|p| p.trim().is_empty()) {
        return Err(format!("--set {}: no value", key.written));
    }
    let values = parts
        .into_iter()
        .map(|v| {
            let v = v.trim();
            if v.is_empty() {
                return Err(format!(
                    "--set {}: an empty value in {values:?}",
                    key.written
                ));
            }
            toml_value(v)
                .map(|value| Given {
                    written: v.to_owned(),
                    value,
                })
                .map_err(|e| format!("--set {}: {e}", key.written))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Axis { key, values })
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
                parts.push(s.get(start..i).unwrap_or_default());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(s.get(start..).unwrap_or_default());
    parts
}

/// A TOML value (`1e-9`, `nan`, `true`, `"x"`, `[1, 2]`), or a bare word taken as a string.
fn toml_value(v: &str) -> Result<toml::Value, String> {
    if v.is_empty() {
        return Err("an empty value".to_owned());
    }
    match toml::from_str::<toml::Table>(&format!("v = {v}")) {
        // Exactly one value: `1\nseed = 5` is not a value but two keys.
        Ok(t) if t.len() == 1 => t
            .into_iter()
            .next()
            .map(|(_, x)| x)
            .ok_or_else(|| format!("{v:?} is not a TOML value")),
        Ok(_) => Err(format!("{v:?} is not one TOML value")),
        Err(_)
            if v.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') =>
        {
            Ok(toml::Value::String(v.to_owned()))
        }
        Err(e) => Err(format!("{v:?} is not a TOML value: {}", e.message().trim())),
    }
}

/// `1,2,7` or `1-8`.
fn parse_seeds(s: &str) -> Result<Vec<u64>, String> {
    let num = |t: &str| {
        t.trim()
            .parse::<u64>()
            .map_err(|_| format!("--seeds: {t:?} is not a seed (a whole number)"))
            .and_then(|n| {
                if n > MAX_SEED {
                    Err(format!(
                        "--seeds: {n} is more than {MAX_SEED}, the largest seed a scenario \
                         file holds"
                    ))
                } else {
                    Ok(n)
                }
            })
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

/// The seeds `--set seed=V1,V2,...` gives.
fn seeds_of(axis: &Axis) -> Result<Vec<u64>, String> {
    axis.values
        .iter()
        .map(|g| match &g.value {
            toml::Value::Integer(n) => u64::try_from(*n).ok(),
            _ => None,
        })
        .zip(&axis.values)
        .map(|(n, g)| {
            n.ok_or_else(|| {
                format!(
                    "--set {}: {} is not a seed (a whole number)",
                    axis.key.written, g.written
                )
            })
        })
        .collect()
}

/// The base scenario as the TOML table every run's scenario is made from. Its seed is the
/// run's, set afterwards.
fn base_table(base: &Scenario) -> Result<toml::Table, String> {
    let mut base = base.clone();
    base.seed = 0;
    toml::Table::try_from(&base)
        .map_err(|e| format!("the base scenario cannot be written as TOML: {e}"))
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
    let root = base_table(base)?;
    let keys: Vec<&Key> = axes.iter().map(|a| &a.key).collect();
    let mut plan = Plan {
        base: base.clone(),
        keys: keys.iter().map(|k| k.written.clone()).collect(),
        runs: Vec::with_capacity(count),
    };
    let mut scenarios = Vec::with_capacity(count);
    for index in 0..count {
        // Mixed radix, the last axis and then the seed varying fastest.
        let mut rest = index;
        let seed = seeds.get(rest % seeds.len()).copied().unwrap_or_default();
        rest /= seeds.len();
        let mut given = vec![None; axes.len()];
        for (k, a) in axes.iter().enumerate().rev() {
            given[k] = a.values.get(rest % a.values.len());
            rest /= a.values.len();
        }
        let given: Vec<&Given> = given.into_iter().flatten().collect();
        let name = format!("run-{:0width$}", index + 1);
        let (s, values) = build(&root, &keys, &given, seed).map_err(|e| {
            let written: Vec<&str> = given.iter().map(|g| g.written.as_str()).collect();
            format!("{name} ({}): {e}", describe(&keys, &written, seed))
        })?;
        scenarios.push(s);
        plan.runs.push(PlannedRun { name, values, seed });
    }
    Ok((plan, scenarios))
}

/// The scenario of one run: the base with each key set to its value and the seed set, checked
/// as a scenario file would be, derived defaults written in; and the values it has at the keys,
/// as TOML writes them. A value that does not end up in the scenario as given is refused, so
/// that the summary never shows a value its run did not use.
fn build(
    root: &toml::Table,
    keys: &[&Key],
    given: &[&Given],
    seed: u64,
) -> Result<(Scenario, Vec<String>), String> {
    let mut t = root.clone();
    let n = i64::try_from(seed).map_err(|_| {
        format!("seed: {seed} is more than {MAX_SEED}, the largest seed a scenario file holds")
    })?;
    t.insert("seed".to_owned(), toml::Value::Integer(n));
    for (k, g) in keys.iter().zip(given) {
        set(&mut t, k, g.value.clone())?;
    }
    let text =
        toml::to_string(&t).map_err(|e| format!("the scenario cannot be written as TOML: {e}"))?;
    let s = parse_scenario(&text, Format::Toml)
        .map_err(|e| e.to_string())?
        .resolved();
    let used = toml::Table::try_from(&s)
        .map_err(|e| format!("the scenario cannot be written as TOML: {e}"))?;
    let mut values = Vec::with_capacity(keys.len());
    for (k, g) in keys.iter().zip(given) {
        let at = lookup(&used, &k.path);
        match at {
            Some(u) if same(&g.value, u) => values.push(match u {
                // A table keeps its defaults beside the keys given: show those given.
                toml::Value::Table(_) => toml_text(&g.value),
                _ => toml_text(u),
            }),
            _ => {
                return Err(format!(
                    "--set {}: the run would have {} = {}, not the {} given",
                    k.written,
                    k.written,
                    at.map_or_else(|| "nothing".to_owned(), toml_text),
                    g.written
                ));
            }
        }
    }
    if s.seed != seed {
        return Err(format!(
            "seed: the run would have seed = {}, not {seed}",
            s.seed
        ));
    }
    Ok((s, values))
}

/// Sets the dotted `key` of the scenario `t` to `x`: every table on the way must exist (an
/// array element by its index), so that a misspelt key is named rather than ignored.
fn set(t: &mut toml::Table, key: &Key, x: toml::Value) -> Result<(), String> {
    let (last, path) = key.path.split_last().ok_or("an empty key")?;
    let mut at: &mut toml::Value = match path.first() {
        None => {
            t.insert(last.clone(), x);
            return Ok(());
        }
        Some(first) => t
            .get_mut(first)
            .ok_or_else(|| format!("--set {}: the scenario has no {first}", key.written))?,
    };
    for (i, p) in path.iter().enumerate().skip(1) {
        let here = key.path.get(..=i).unwrap_or_default().join(".");
        at = match at {
            toml::Value::Table(o) => o.get_mut(p.as_str()),
            toml::Value::Array(a) => index(p).and_then(|n| a.get_mut(n)),
            _ => None,
        }
        .ok_or_else(|| format!("--set {}: the scenario has no {here}", key.written))?;
    }
    match at {
        toml::Value::Table(o) => {
            o.insert(last.clone(), x);
            Ok(())
        }
        toml::Value::Array(a) => {
            let slot = index(last).and_then(|n| a.get_mut(n)).ok_or_else(|| {
                format!("--set {}: the scenario has no {}", key.written, key.written)
            })?;
            *slot = x;
            Ok(())
        }
        _ => Err(format!(
            "--set {}: {} is not a table",
            key.written,
            path.join(".")
        )),
    }
}

/// An array index: digits only (`+1` is not an index).
fn index(p: &str) -> Option<usize> {
    if p.bytes().all(|b| b.is_ascii_digit()) {
        p.parse().ok()
    } else {
        None
    }
}

/// The value at a dotted path of a table.
fn lookup<'a>(t: &'a toml::Table, path: &[String]) -> Option<&'a toml::Value> {
    let (first, rest) = path.split_first()?;
    rest.iter().try_fold(t.get(first)?, |at, p| match at {
        toml::Value::Table(o) => o.get(p.as_str()),
        toml::Value::Array(a) => index(p).and_then(|n| a.get(n)),
        _ => None,
    })
}

/// Whether the scenario holds `given` where it was set: the same value (an integer for a
/// float the same number), a table with the same values at the keys given (the others keep
/// their defaults), a list of the same values.
fn same(given: &toml::Value, used: &toml::Value) -> bool {
    use toml::Value as V;
    match (given, used) {
        (V::Integer(a), V::Float(b)) => (*a as f64) == *b,
        (V::Table(g), V::Table(u)) => g.iter().all(|(k, x)| u.get(k).is_some_and(|y| same(x, y))),
        (V::Array(g), V::Array(u)) => {
            g.len() == u.len() && g.iter().zip(u).all(|(x, y)| same(x, y))
        }
        (a, b) => a == b,
    }
}

/// A value as TOML writes it, on one line: `1e-9`, `512`, `"cut_through"`, `[0, 1]`,
/// `{ kind = "incast" }`.
fn toml_text(x: &toml::Value) -> String {
    use toml::Value as V;
    match x {
        V::String(_) | V::Datetime(_) => x.to_string(),
        V::Integer(n) => n.to_string(),
        V::Boolean(b) => b.to_string(),
        V::Float(f) if f.is_nan() => "nan".to_owned(),
        V::Float(f) if f.is_infinite() => (if *f > 0.0 { "inf" } else { "-inf" }).to_owned(),
        // Rust writes the shortest digits that read back as the same number, with an exponent
        // for the very small and the very large (1e-9, 1e20) and a fraction otherwise (0.0).
        V::Float(f) => format!("{f:?}"),
        V::Array(a) => format!(
            "[{}]",
            a.iter().map(toml_text).collect::<Vec<_>>().join(", ")
        ),
        V::Table(t) if t.is_empty() => "{}".to_owned(),
        V::Table(t) => format!(
            "{{ {} }}",
            t.iter()
                .map(|(k, v)| format!("{} = {}", toml_key(k), toml_text(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A key of a TOML table, quoted unless it is bare.
fn toml_key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_owned()
    } else {
        toml::Value::String(k.to_owned()).to_string()
    }
}

fn describe(keys: &[&Key], values: &[&str], seed: u64) -> String {
    let mut s = String::new();
    for (k, v) in keys.iter().zip(values) {
        let _ = write!(s, "{} = {v}, ", k.written);
    }
    let _ = write!(s, "seed = {seed}");
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
    write_whole(&out.join(format!("{name}.json")), json.as_bytes())
}

fn read_plan(dir: &Path) -> Result<Plan, String> {
    let path = dir.join(PLAN);
    let text = input::read_file(&path, PLAN_LIMIT).map_err(|e| format!("--collect: {e}"))?;
    let plan: Plan = serde_json::from_str(&text)
        .map_err(|e| format!("--collect: {} is not a sweep plan: {e}", path.display()))?;
    let mut names = std::collections::HashSet::new();
    if plan.runs.iter().any(|r| {
        r.values.len() != plan.keys.len()
            || r.name.is_empty()
            || r.name.contains(['/', '\\'])
            || r.name.starts_with('.')
            || !names.insert(r.name.as_str())
    }) {
        return Err(format!(
            "--collect: {} names a run badly or twice, or gives it the wrong number of values",
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
/// worst of its runs' (a lost byte anywhere outranks a failed run). Each report must be the
/// report of its run of this grid: its scenario is the one the plan makes for the run.
fn summarise(dir: &Path, plan: &Plan, keys: &[Key]) -> Result<(String, u8), String> {
    let mut csv = String::from("run");
    for k in &plan.keys {
        let _ = write!(csv, ",{}", csv_field(k));
    }
    csv.push_str(",seed");
    for c in COLUMNS {
        let _ = write!(csv, ",{c}");
    }
    csv.push('\n');
    let root = base_table(&plan.base).map_err(|e| format!("--collect: {e}"))?;
    let keys: Vec<&Key> = keys.iter().collect();
    let mut status = EXIT_PASS;
    for run in &plan.runs {
        let path = dir.join(format!("{}.json", run.name));
        let expected = planned_scenario(&root, &keys, run)?;
        let head = read_report(&path)?;
        check_report(&path, run, &head, &expected)?;
        let (row, s) = row(&head).map_err(|e| format!("{}: {e}", path.display()))?;
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

/// The scenario of `run`, made again from the plan, as its report writes it (JSON read back).
fn planned_scenario(root: &toml::Table, keys: &[&Key], run: &PlannedRun) -> Result<Value, String> {
    let given = run
        .values
        .iter()
        .map(|v| {
            toml_value(v).map(|value| Given {
                written: v.clone(),
                value,
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("--collect: {}: {e}", run.name))?;
    let given: Vec<&Given> = given.iter().collect();
    let (s, values) = build(root, keys, &given, run.seed).map_err(|e| {
        let written: Vec<&str> = run.values.iter().map(String::as_str).collect();
        format!(
            "--collect: {} ({}): {e}",
            run.name,
            describe(keys, &written, run.seed)
        )
    })?;
    if values != run.values {
        return Err(format!(
            "--collect: {} gives {} the values {}, which its scenario writes {}",
            PLAN,
            run.name,
            run.values.join(", "),
            values.join(", ")
        ));
    }
    // The report's numbers went through JSON text: compare with the same text read back.
    let text = serde_json::to_string(&s).map_err(|e| format!("cannot render JSON: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("cannot read JSON back: {e}"))
}

/// Refuses a report whose scenario is not the one `run` of this grid has: a report of another
/// run, or of a run of another grid, named after this one.
fn check_report(
    path: &Path,
    run: &PlannedRun,
    head: &ReportHead,
    expected: &Value,
) -> Result<(), String> {
    let Some(scenario) = &head.scenario else {
        return Err(format!(
            "{} has no scenario section: it is not a run's JSON report",
            path.display()
        ));
    };
    match first_difference(scenario, expected, "") {
        None => Ok(()),
        Some((key, theirs, _)) if key.is_empty() => Err(format!(
            "{}: its scenario section is {theirs}, not a table: it is not a run's JSON report",
            path.display()
        )),
        Some((key, theirs, ours)) => Err(format!(
            "{} is not the report of {} of this grid: its scenario has {key} = {theirs}, where \
             {} has {key} = {ours}",
            path.display(),
            run.name,
            run.name
        )),
    }
}

/// The first key (a dotted path) at which `a` and `b` differ, and its value in each.
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<(String, String, String)> {
    let at = |k: &str| {
        if path.is_empty() {
            k.to_owned()
        } else {
            format!("{path}.{k}")
        }
    };
    let shown = |v: Option<&Value>| match v {
        None => "nothing".to_owned(),
        Some(Value::Object(_)) => "a table".to_owned(),
        Some(Value::Array(a)) => format!("a list of {}", a.len()),
        Some(x) => x.to_string(),
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => x
            .keys()
            .chain(y.keys().filter(|k| !x.contains_key(*k)))
            .find_map(|k| match (x.get(k), y.get(k)) {
                (Some(p), Some(q)) => first_difference(p, q, &at(k)),
                (p, q) => Some((at(k), shown(p), shown(q))),
            }),
        (Value::Array(x), Value::Array(y)) => {
            (0..x.len().max(y.len())).find_map(|i| match (x.get(i), y.get(i)) {
                (Some(p), Some(q)) => first_difference(p, q, &at(&i.to_string())),
                (p, q) => Some((at(&i.to_string()), shown(p), shown(q))),
            })
        }
        _ if a == b => None,
        _ => Some((path.to_owned(), shown(Some(a)), shown(Some(b)))),
    }
}

fn worst(a: u8, b: u8) -> u8 {
    let rank = |s: u8| match s {
        EXIT_DATA => 2,
        EXIT_FABRIC => 1,
        _ => 0,
    };
    if rank(b) > rank(a) { b } else { a }
}

/// What the summary takes of a run's report, read as the report streams: its scenario and its
/// headline figures. Every other section (the time series, the per-port tables) is skipped
/// without being kept, so a report of any length is read in little memory.
#[derive(Debug, Default)]
struct ReportHead {
    scenario: Option<Value>,
    pass: Option<bool>,
    data_intact: Option<bool>,
    start_ns: Option<u64>,
    end_ns: Option<u64>,
    ops: Option<OpsHead>,
    throughput: Option<ThroughputHead>,
    links: Option<LinksHead>,
    sim: Option<SimHead>,
    wall: Option<WallHead>,
    failures: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
struct OpsHead {
    issued: Option<Number>,
    completed_ok: Option<Number>,
    completed_error: Option<Number>,
    lost: Option<Number>,
}

#[derive(Debug, Deserialize)]
struct ThroughputHead {
    gpus: Option<MeanTx>,
}

#[derive(Debug, Deserialize)]
struct LinksHead {
    credit_stalls: Option<Number>,
    credit_stall_ns: Option<Number>,
    frames_replayed: Option<Number>,
}

#[derive(Debug, Deserialize)]
struct SimHead {
    frame_hops: Option<Number>,
    data_frames_delivered: Option<Number>,
}

#[derive(Debug, Deserialize)]
struct WallHead {
    seconds: Option<f64>,
}

/// The mean of the GPUs' `tx_gbps`, summed as the list streams.
#[derive(Debug, Default)]
struct MeanTx {
    sum: f64,
    gpus: u64,
}

#[derive(Deserialize)]
struct GpuTx {
    tx_gbps: Option<f64>,
}

impl<'de> Deserialize<'de> for MeanTx {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Sum;
        impl<'de> Visitor<'de> for Sum {
            type Value = MeanTx;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of GPUs")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MeanTx, A::Error> {
                let mut mean = MeanTx::default();
                while let Some(g) = seq.next_element::<GpuTx>()? {
                    mean.sum += g.tx_gbps.unwrap_or(0.0);
                    mean.gpus += 1;
                }
                Ok(mean)
            }
        }
        d.deserialize_seq(Sum)
    }
}

/// Reads the top level of a report: each section the summary needs under a limit of its own,
/// the others skipped.
struct HeadVisitor<'m> {
    meter: &'m Meter,
    /// The section being read, for a message about it.
    section: &'m std::cell::RefCell<String>,
}

impl<'de> Visitor<'de> for HeadVisitor<'_> {
    type Value = ReportHead;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a run's JSON report (an object of sections)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ReportHead, A::Error> {
        let mut head = ReportHead::default();
        let meter = self.meter;
        loop {
            self.section.replace(String::from("a key of the report"));
            let Some(key) = meter.part(KEY_LIMIT, || map.next_key::<String>())? else {
                break;
            };
            self.section.replace(format!("the report's {key} section"));
            let within = |e: A::Error| {
                serde::de::Error::custom(format!("{key}{}", strip_position(&e.to_string())))
            };
            let mut kept = |map: &mut A| -> Result<(), A::Error> {
                match key.as_str() {
                    "scenario" => {
                        head.scenario =
                            Some(meter.part(input::SCENARIO_LIMIT, || map.next_value())?);
                    }
                    "pass" => head.pass = Some(map.next_value_seed(Tracked::new())?),
                    "data_intact" => head.data_intact = Some(map.next_value_seed(Tracked::new())?),
                    "start_ns" => head.start_ns = Some(map.next_value_seed(Tracked::new())?),
                    "end_ns" => head.end_ns = Some(map.next_value_seed(Tracked::new())?),
                    "ops" => head.ops = Some(map.next_value_seed(Tracked::new())?),
                    "throughput" => head.throughput = Some(map.next_value_seed(Tracked::new())?),
                    "links" => head.links = Some(map.next_value_seed(Tracked::new())?),
                    "sim" => head.sim = Some(map.next_value_seed(Tracked::new())?),
                    "wall" => head.wall = Some(map.next_value_seed(Tracked::new())?),
                    "failures" => head.failures = Some(map.next_value_seed(Tracked::new())?),
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(())
            };
            meter
                .part(SECTION_LIMIT, || kept(&mut map))
                .map_err(within)?;
        }
        Ok(head)
    }
}

/// Longest key of a report's top level, in bytes.
const KEY_LIMIT: u64 = 4096;

/// Deserializes a `T`, its error saying where inside it (`.issued: invalid type: ...`, or
/// `: invalid type: ...` for the value itself), without the position serde_json appends.
struct Tracked<T>(std::marker::PhantomData<T>);

impl<T> Tracked<T> {
    fn new() -> Self {
        Tracked(std::marker::PhantomData)
    }
}

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for Tracked<T> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        let mut track = serde_path_to_error::Track::new();
        T::deserialize(serde_path_to_error::Deserializer::new(d, &mut track)).map_err(|e| {
            let path = track.path().to_string();
            let path = if path == "." {
                String::new()
            } else {
                format!(".{path}")
            };
            serde::de::Error::custom(format!("{path}{}", strip_position(&e.to_string())))
        })
    }
}

/// `message` without the positions serde_json appends (" at line 3 column 7"), and with
/// ": " before it unless it already says where (".issued: ...").
fn strip_position(message: &str) -> String {
    let mut m = message;
    while let Some(i) = m.rfind(" at line ") {
        let tail = m.get(i + 9..).unwrap_or_default();
        let is_position = tail.split_once(" column ").is_some_and(|(l, c)| {
            !l.is_empty()
                && !c.is_empty()
                && l.bytes().all(|b| b.is_ascii_digit())
                && c.bytes().all(|b| b.is_ascii_digit())
        });
        if !is_position {
            break;
        }
        m = m.get(..i).unwrap_or_default();
    }
    if m.starts_with('.') || m.starts_with(": ") {
        m.to_owned()
    } else {
        format!(": {m}")
    }
}

/// Reads what the summary needs of the report at `path`, as it streams.
fn read_report(path: &Path) -> Result<ReportHead, String> {
    let file = std::fs::File::open(path)
        .map_err(|e| format!("cannot read the report {}: {e}", path.display()))?;
    let meter = Meter::new(REPORT_LIMIT);
    let section = std::cell::RefCell::new(String::new());
    let mut de = serde_json::Deserializer::from_reader(meter.reader(file));
    let head = de
        .deserialize_map(HeadVisitor {
            meter: &meter,
            section: &section,
        })
        .and_then(|h| de.end().map(|()| h));
    head.map_err(|e| match meter.exceeded() {
        Some(Exceeded::Whole(n)) => format!(
            "{} is longer than {n} bytes, the most a run's report may be",
            path.display()
        ),
        Some(Exceeded::Part(n)) => format!(
            "{}: {} is longer than {n} bytes, the most the summary reads of it",
            path.display(),
            section.borrow()
        ),
        None => format!("{} is not a run's JSON report: {e}", path.display()),
    })
}

/// The figures of one run's report, in the order of [`COLUMNS`], and its exit status.
fn row(head: &ReportHead) -> Result<(Vec<String>, u8), String> {
    fn need<T>(x: Option<T>, path: &str) -> Result<T, String> {
        x.ok_or_else(|| format!("the report has no {path}"))
    }
    let num = |x: Option<&Number>, path: &str| need(x, path).map(Number::to_string);
    let pass = need(head.pass, "pass")?;
    let intact = need(head.data_intact, "data_intact")?;
    let status = if pass {
        EXIT_PASS
    } else if !intact {
        EXIT_DATA
    } else {
        EXIT_FABRIC
    };
    let ops = need(head.ops.as_ref(), "ops")?;
    let links = need(head.links.as_ref(), "links")?;
    let sim = need(head.sim.as_ref(), "sim")?;
    let gpus = need(
        head.throughput.as_ref().and_then(|t| t.gpus.as_ref()),
        "throughput.gpus",
    )?;
    let mean = if gpus.gpus == 0 {
        0.0
    } else {
        gpus.sum / gpus.gpus as f64
    };
    let start = need(head.start_ns, "start_ns")?;
    let stop = need(head.end_ns, "end_ns")?;
    let failures = need(head.failures.as_ref(), "failures")?;
    let row = vec![
        pass.to_string(),
        intact.to_string(),
        status.to_string(),
        stop.saturating_sub(start).to_string(),
        num(ops.issued.as_ref(), "ops.issued")?,
        num(ops.completed_ok.as_ref(), "ops.completed_ok")?,
        num(ops.completed_error.as_ref(), "ops.completed_error")?,
        num(ops.lost.as_ref(), "ops.lost")?,
        format!("{mean:.3}"),
        num(links.credit_stalls.as_ref(), "links.credit_stalls")?,
        num(links.credit_stall_ns.as_ref(), "links.credit_stall_ns")?,
        num(links.frames_replayed.as_ref(), "links.frames_replayed")?,
        num(sim.frame_hops.as_ref(), "sim.frame_hops")?,
        num(
            sim.data_frames_delivered.as_ref(),
            "sim.data_frames_delivered",
        )?,
        head.wall
            .as_ref()
            .and_then(|w| w.seconds)
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
        // Empty values are kept, for the caller to name.
        assert_eq!(split_top("1,,2"), ["1", "", "2"]);
        assert_eq!(split_top(""), [""]);
    }

    #[test]
    fn values_are_toml_or_bare_words() {
        use toml::Value as V;
        assert_eq!(toml_value("1e-9"), Ok(V::Float(1e-9)));
        assert_eq!(toml_value("512"), Ok(V::Integer(512)));
        assert_eq!(
            toml_value("store_and_forward"),
            Ok(V::String("store_and_forward".into()))
        );
        assert_eq!(toml_value("\"a b\""), Ok(V::String("a b".into())));
        assert!(matches!(toml_value("nan"), Ok(V::Float(f)) if f.is_nan()));
        assert!(toml_value("a b").is_err());
        assert!(toml_value("").is_err());
        assert!(
            toml_value("1\nseed = 5").is_err(),
            "two keys are not a value"
        );
    }

    #[test]
    fn values_are_written_as_toml_reads_them_back() {
        for v in [
            "1e-9",
            "0.0",
            "512",
            "400.0",
            "1e20",
            "\"cut_through\"",
            "[0, 1]",
            "{ bytes = 4096, kind = \"incast\" }",
            "true",
        ] {
            let x = toml_value(v).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(toml_text(&x), v);
        }
    }

    #[test]
    fn seeds_are_lists_or_ranges() {
        assert_eq!(parse_seeds("3"), Ok(vec![3]));
        assert_eq!(parse_seeds("1,5,2"), Ok(vec![1, 5, 2]));
        assert_eq!(parse_seeds("4-6"), Ok(vec![4, 5, 6]));
        assert!(parse_seeds("6-4").is_err());
        assert!(parse_seeds("x").is_err());
        assert!(parse_seeds("0-18446744073709551615").is_err());
        // A scenario file holds seeds up to 2^63 - 1.
        assert_eq!(parse_seeds("9223372036854775807"), Ok(vec![MAX_SEED]));
        assert!(parse_seeds("9223372036854775808").is_err());
    }

    #[test]
    fn the_grid_is_every_combination_seed_innermost() {
        let axes = [
            parse_axis("link.ber=0,1e-9").unwrap_or_else(|e| panic!("{e}")),
            parse_axis("switch.mode=cut_through,store_and_forward")
                .unwrap_or_else(|e| panic!("{e}")),
        ];
        let (plan, scenarios) =
            grid(&Scenario::default(), &axes, &[7, 8]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(plan.runs.len(), 8);
        assert_eq!(scenarios.len(), 8);
        assert_eq!(plan.runs[0].name, "run-0001");
        // The value the run has: the integer 0 given for a float is 0.0.
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
        assert!(bad("traffic.+0.ops=1").contains("no traffic.+0"));
        let e = bad("link.ber=2.0");
        assert!(
            e.starts_with("run-0001 (link.ber = 2.0, seed = 1): link.ber"),
            "{e}"
        );
        let e = bad("link.rx_credit=5");
        assert!(e.contains("rx_credit"), "{e}");
    }

    #[test]
    fn a_key_given_twice_or_inside_another_is_refused() {
        let keys = |ks: &[&str]| -> Vec<Key> {
            ks.iter()
                .map(|k| parse_key(k).unwrap_or_else(|e| panic!("{e}")))
                .collect()
        };
        assert_eq!(
            check_keys(&keys(&["link.ber", "link.loss", "seed"])),
            Ok(())
        );
        let e = check_keys(&keys(&["link.ber", "link.ber"])).unwrap_err();
        assert!(
            e.starts_with("--set link.ber: the key is given twice"),
            "{e}"
        );
        let e = check_keys(&keys(&["traffic.00.ops", "traffic.0.ops"])).unwrap_err();
        assert!(e.contains("traffic.00.ops and --set traffic.0.ops"), "{e}");
        let e = check_keys(&keys(&["link.ber", "link"])).unwrap_err();
        assert!(e.contains("link.ber is part of link"), "{e}");
    }

    #[test]
    fn reports_are_compared_key_by_key() {
        let a: Value = serde_json::json!({"seed": 1, "link": {"ber": 1e-9}, "traffic": [{}]});
        let b: Value = serde_json::json!({"seed": 1, "link": {"ber": 1e-10}, "traffic": [{}]});
        assert_eq!(first_difference(&a, &a, ""), None);
        assert_eq!(
            first_difference(&a, &b, ""),
            Some(("link.ber".into(), "1e-9".into(), "1e-10".into()))
        );
        let c: Value = serde_json::json!({"seed": 1, "link": {"ber": 1e-9}, "traffic": []});
        assert_eq!(
            first_difference(&a, &c, ""),
            Some(("traffic.0".into(), "a table".into(), "nothing".into()))
        );
    }

    #[test]
    fn positions_are_taken_off_messages() {
        assert_eq!(
            strip_position("invalid type: string \"x\", expected f64 at line 1 column 44"),
            ": invalid type: string \"x\", expected f64"
        );
        assert_eq!(
            strip_position(".issued: bad at line 2 column 3"),
            ".issued: bad"
        );
        assert_eq!(strip_position("said at line four"), ": said at line four");
    }
}

//! `ethlink run`: a whole fabric simulation, from a scenario to a report.
//!
//! The simulation is the `ethlink-fabric` crate's ([`ethlink_fabric::Fabric`]): GPU endpoints and
//! switches joined by simulated cables, driven by workloads, with every GPU's memory checked at
//! the end. This module reads the scenario (the built-in default, or a TOML or JSON file whose
//! schema `docs/scenarios.md` describes), runs it, prints a summary table or the report as JSON,
//! and with `--out` writes the report, a time series, a packet capture of one cable and SVG
//! plots into a directory.
//!
//! Everything it prints or writes is a function of the scenario and the seed, except the `wall`
//! section of the JSON (and the lines of the summary and the capture file name that come from
//! it): two runs of one scenario give the same bytes once `wall` is removed.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Instant;

use clap::Args;
use ethlink_fabric::report::Report;
use ethlink_fabric::scenario::{
    AllToAll, Collective, Incast, LoadStore, OutageTarget, Permutation, SendRecv, TopologyKind,
    Workload,
};
use ethlink_fabric::{CaptureSink, CapturedFrame, End, Fabric, Scenario, ScenarioError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::capture::{Direction, PcapngStream};
use crate::plots;

/// Named lines of a plot.
type Lines = Vec<(String, Vec<(f64, f64)>)>;

/// File names `--out` writes.
pub const METRICS_FILE: &str = "metrics.json";
/// The time series.
pub const TIMESERIES_FILE: &str = "timeseries.csv";
/// The capture of one cable.
pub const CAPTURE_FILE: &str = "capture.pcapng";
/// Latency CDF plot.
pub const LATENCY_SVG: &str = "latency_cdf.svg";
/// Utilisation plot.
pub const UTILISATION_SVG: &str = "port_utilisation.svg";
/// Bus bandwidth plot.
pub const BUSBW_SVG: &str = "busbw.svg";

/// Most lines the utilisation plot draws one per port (or per GPU); beyond it, it draws the
/// mean, the lowest and the highest.
pub const MAX_UTILISATION_LINES: usize = 16;
/// Most time bins of the utilisation plot: consecutive samples are averaged into bins.
pub const MAX_UTILISATION_BINS: usize = 200;
/// Exit status of a run that passes.
pub const EXIT_PASS: u8 = 0;
/// Exit status of a run whose data was lost, duplicated or corrupted.
pub const EXIT_DATA: u8 = 1;
/// Exit status of a run whose data is intact but whose fabric failed: links that never came
/// up, operations ending in error that the scenario's faults do not explain, the time limit.
pub const EXIT_FABRIC: u8 = 3;

/// Wall time after which the progress bar appears, so that short runs never show one.
const PROGRESS_AFTER_S: f64 = 1.0;

/// Arguments of `run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// A scenario file: TOML (docs/scenarios.md), or JSON when the name ends in .json, at most
    /// 1 MiB. Keys left out keep their defaults. Without it the built-in default scenario runs
    /// (8 GPUs, 4 stacks x 2 ports at 400 Gb/s, 8 switch planes, loads and stores beside an
    /// all-to-all and a ring all-reduce, BER 1e-10).
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Seed of every random choice, instead of the scenario's.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Print the scenario and the report as one JSON object (docs/scenarios.md) instead of the
    /// summary table.
    #[arg(long)]
    pub json: bool,
    /// Also write metrics.json, timeseries.csv, capture.pcapng, latency_cdf.svg,
    /// port_utilisation.svg and busbw.svg into DIR (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The GPU port whose cable --out captures, both directions.
    #[arg(long, value_name = "GPU:PORT", default_value = "0:0", value_parser = parse_capture_port)]
    pub capture_port: CapturePort,
    /// Most frames the capture keeps (the first ones); the rest are counted only.
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub capture_limit: u64,
    /// Never show the progress bar (it shows only on a terminal, for runs longer than a second).
    #[arg(long)]
    pub no_progress: bool,
    /// Most memory the run may need: a scenario whose estimate is larger is refused before
    /// anything is built, naming the key to change. A size in bytes, or with a unit K, M, G or
    /// T (powers of 1024). Default: the machine's memory (MemTotal of /proc/meminfo).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_memory: Option<u64>,
    /// Run the fabric as two partitions on two threads: the GPUs with some of the switches,
    /// and the other switches (docs/performance.md). Results are deterministic, but differ
    /// from those of the default single event queue in the order of events of the same
    /// picosecond. Not with --out, which captures a cable.
    #[arg(long, conflicts_with = "out")]
    pub partitioned: bool,
    /// With --partitioned: how many switches (the first N, as the report lists them) run in
    /// the GPUs' partition, instead of the number chosen from the topology. The report's
    /// "Partitions" line shows how long each partition worked.
    #[arg(long, value_name = "N", requires = "partitioned")]
    pub switches_with_gpus: Option<u32>,
    /// Print the effective scenario (the file or the default, with --seed applied) as TOML and
    /// exit without running it.
    #[arg(long, conflicts_with_all = ["json", "out"])]
    pub print_scenario: bool,
}

/// A GPU port, `GPU:PORT` on the command line (the port counts `stack * ports_per_stack +
/// port`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapturePort {
    /// The GPU.
    pub gpu: u16,
    /// Its port.
    pub port: u16,
}

fn parse_capture_port(s: &str) -> Result<CapturePort, String> {
    let (g, p) = s
        .split_once(':')
        .ok_or_else(|| format!("{s:?} is not GPU:PORT (for example 0:3)"))?;
    let gpu = g
        .trim()
        .parse()
        .map_err(|_| format!("{g:?} is not a GPU number"))?;
    let port = p
        .trim()
        .parse()
        .map_err(|_| format!("{p:?} is not a port number"))?;
    Ok(CapturePort { gpu, port })
}

/// A size: bytes, or a number with a unit K, M, G or T (powers of 1024; `KiB`, `MB` and the
/// like are read the same), for example `512M` or `1.5G`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(format!("{s:?}: the unit must be K, M, G or T")),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size (for example 512M or 16G)"))?;
    let bytes = n * (1u64 << shift) as f64;
    if !(bytes.is_finite() && bytes >= 1.0 && bytes < 2f64.powi(63)) {
        return Err(format!("{s:?} is not a size between 1 byte and 8 EiB"));
    }
    Ok(bytes as u64)
}

/// Most bytes of `/proc/meminfo` read: a few kilobytes on any machine.
const MEMINFO_LIMIT: u64 = 64 << 10;

/// The machine's memory, from `/proc/meminfo`.
pub(crate) fn machine_memory() -> Option<u64> {
    let s = crate::input::read_file(Path::new("/proc/meminfo"), MEMINFO_LIMIT).ok()?;
    let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// `n` bytes as `1.5 GiB`, `640.0 MiB`, `12.0 KiB` or `100 B`.
pub fn size(n: u64) -> String {
    let x = n as f64;
    for (unit, shift) in [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if n >= 1 << shift {
            return format!("{:.1} {unit}", x / (1u64 << shift) as f64);
        }
    }
    format!("{n} B")
}

/// Refuses a scenario whose memory estimate (run as two partitions when `partitioned`) is above
/// `--max-memory` (or the machine's memory): the message gives the estimate, its largest part
/// and the key that sizes it.
pub fn check_memory(s: &Scenario, max: Option<u64>, partitioned: bool) -> Result<u64, String> {
    let est = if partitioned {
        s.memory_estimate().partitioned()
    } else {
        s.memory_estimate()
    };
    let (limit, what) = match (max, machine_memory()) {
        (Some(m), _) => (m, "the limit of --max-memory".to_owned()),
        (None, Some(m)) => (m, "this machine's memory".to_owned()),
        (None, None) => (16 << 30, "the default limit".to_owned()),
    };
    if est.bytes <= limit {
        return Ok(est.bytes);
    }
    let parts: Vec<String> = est
        .parts
        .iter()
        .take(3)
        .map(|p| format!("{} {}", p.what, size(p.bytes)))
        .collect();
    let part = est
        .largest()
        .map(|p| format!(" ({}): make {} smaller", parts.join(", "), p.key))
        .unwrap_or_default();
    let round_up = est.bytes.div_ceil(1 << 30);
    Err(format!(
        "{}: the run needs about {} of memory, more than {what} ({}){part}, or run it \
         anyway with --max-memory {round_up}G",
        est.largest().map_or("(scenario)", |p| p.key.as_str()),
        size(est.bytes),
        size(limit)
    ))
}

/// How a scenario file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// TOML.
    Toml,
    /// JSON.
    Json,
}

impl Format {
    /// JSON for a name ending in `.json` (any case), TOML otherwise.
    pub fn of(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("json") => Format::Json,
            _ => Format::Toml,
        }
    }
}

/// Why a scenario text cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScenarioTextError {
    /// Not TOML (or JSON) at all: where and why.
    Syntax {
        /// 1-based line, when known.
        line: Option<usize>,
        /// 1-based column, when known.
        column: Option<usize>,
        /// The parser's message.
        message: String,
    },
    /// A key that does not exist, has the wrong type or an impossible value.
    Key(ScenarioError),
}

impl std::fmt::Display for ScenarioTextError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScenarioTextError::Syntax {
                line,
                column,
                message,
            } => {
                match (line, column) {
                    (Some(l), Some(c)) => write!(f, "line {l}, column {c}: ")?,
                    (Some(l), None) => write!(f, "line {l}: ")?,
                    _ => {}
                }
                f.write_str(message)
            }
            ScenarioTextError::Key(e) => write!(f, "{e}"),
        }
    }
}

/// Checks that every table of the scenario is written as a table: serde would read a struct
/// from a positional array too (`topology = ["single_tier", 4, 1, 2]`), which is not a
/// documented form.
fn check_tables(root: &Value) -> Result<(), ScenarioError> {
    let table = |key: String, v: &Value| -> Result<(), ScenarioError> {
        if v.is_object() {
            Ok(())
        } else {
            Err(ScenarioError {
                key,
                reason: format!(
                    "must be a table of keys (`[section]` or `{{ key = value }}`), not {v}"
                ),
            })
        }
    };
    let Some(o) = root.as_object() else {
        return table("(scenario)".to_owned(), root);
    };
    for k in [
        "topology", "link", "endpoint", "switch", "metrics", "expect",
    ] {
        if let Some(v) = o.get(k) {
            table(k.to_owned(), v)?;
        }
    }
    for list in ["traffic", "outages"] {
        for (i, entry) in o
            .get(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            table(format!("{list}.{i}"), entry)?;
            if let Some(what) = entry.get("what") {
                table(format!("{list}.{i}.what"), what)?;
            }
            if entry.get("kind").and_then(Value::as_str) == Some("load_store") {
                for (k, size) in entry
                    .get("sizes")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    table(format!("{list}.{i}.sizes.{k}"), size)?;
                }
            }
        }
    }
    Ok(())
}

/// Reads a scenario from `text`: every key checked (an unknown key or a wrong type is named by
/// its dotted path, `traffic.1.bytes_per_pair`), then every value
/// ([`Scenario::validate`]).
pub fn parse_scenario(text: &str, format: Format) -> Result<Scenario, ScenarioTextError> {
    if format == Format::Toml
        && let Ok(v) = toml::from_str::<Value>(text)
    {
        check_tables(&v).map_err(ScenarioTextError::Key)?;
    }
    if format == Format::Toml {
        // TOML straight into the scenario, so that a value is judged as TOML wrote it (a nan,
        // a date, a number too large), not as JSON would have it.
        let de = toml::Deserializer::parse(text).map_err(|e| toml_syntax(text, &e))?;
        match serde_path_to_error::deserialize::<_, Scenario>(de) {
            Ok(scenario) => {
                scenario.validate().map_err(ScenarioTextError::Key)?;
                return Ok(scenario);
            }
            Err(e) => {
                let path = segments(e.path());
                let inside_tagged = matches!(
                    path.first().map(String::as_str),
                    Some("traffic" | "outages")
                );
                if !inside_tagged {
                    let key = key_of(&path);
                    let reason = toml_reason(text, &key, e.inner().message());
                    return Err(ScenarioTextError::Key(ScenarioError { key, reason }));
                }
                // Internally tagged entries hide the name of the field at fault: look again
                // below, through a generic value.
            }
        }
    }
    let value: Value = match format {
        Format::Toml => toml::from_str(text).map_err(|e| toml_syntax(text, &e))?,
        Format::Json => {
            // serde_json keeps the last of two equal keys of an object without a word.
            if let Some(e) = json_duplicate_key(text) {
                return Err(ScenarioTextError::Key(e));
            }
            serde_json::from_str(text).map_err(|e| ScenarioTextError::Syntax {
                line: Some(e.line()),
                column: Some(e.column()),
                message: one_line(&strip_position(&e.to_string())),
            })?
        }
    };
    check_tables(&value).map_err(ScenarioTextError::Key)?;
    let scenario = scenario_from_value(&value).map_err(|e| {
        ScenarioTextError::Key(match format {
            Format::Toml => ScenarioError {
                reason: toml_reason(text, &e.key, &e.reason),
                key: e.key,
            },
            Format::Json => e,
        })
    })?;
    scenario.validate().map_err(ScenarioTextError::Key)?;
    Ok(scenario)
}

/// A TOML text that does not parse: where and why. A key given twice is named as written there
/// (the parser says only "duplicate key").
fn toml_syntax(text: &str, e: &toml::de::Error) -> ScenarioTextError {
    let span = e.span();
    let (line, column) = span
        .clone()
        .map_or((None, None), |s| line_column(text, s.start));
    let mut message = one_line(e.message());
    if message == "duplicate key"
        && let Some(key) = span.and_then(|s| text.get(s))
        && !key.is_empty()
        && key.len() <= 200
        && !key.contains('\n')
    {
        message = format!("duplicate key `{key}`: a key may appear once in a table");
    }
    ScenarioTextError::Syntax {
        line,
        column,
        message,
    }
}

/// The first key a JSON text gives twice in one object, named by its dotted path, or `None`
/// when there is none (or the text is not JSON, which the caller reports).
fn json_duplicate_key(text: &str) -> Option<ScenarioError> {
    use serde::de::DeserializeSeed;
    let mut de = serde_json::Deserializer::from_str(text);
    let mut walk = KeyWalk::default();
    let e = (&mut walk).deserialize(&mut de).err()?;
    let key = walk.duplicate?;
    Some(ScenarioError {
        key,
        reason: format!(
            "given twice in one object (again on line {}): a key may appear once",
            e.line()
        ),
    })
}

/// A walk through a JSON value that stops at the first key an object gives twice.
#[derive(Debug, Default)]
struct KeyWalk {
    /// The path to the value being read.
    path: Vec<String>,
    /// The dotted path of the key given twice.
    duplicate: Option<String>,
}

impl<'de> serde::de::DeserializeSeed<'de> for &mut KeyWalk {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for &mut KeyWalk {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        loop {
            self.path.push(i.to_string());
            let more = seq.next_element_seed(&mut *self)?;
            self.path.pop();
            if more.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::BTreeSet::new();
        while let Some(k) = map.next_key::<String>()? {
            self.path.push(k.clone());
            if !seen.insert(k) {
                self.duplicate = Some(key_of(&self.path));
                return Err(serde::de::Error::custom("a key given twice"));
            }
            map.next_value_seed(&mut *self)?;
            self.path.pop();
        }
        Ok(())
    }
}

/// The reason a TOML value at `key` (a dotted path) was refused, said of the value as TOML
/// wrote it: a date-time or a float that is not a number is named as such, not as the map or
/// null a conversion makes of it; an integer beyond every integer type is out of range.
fn toml_reason(text: &str, key: &str, reason: &str) -> String {
    let reason = one_line(reason);
    let value = toml::from_str::<toml::Table>(text).ok().and_then(|t| {
        let mut parts = key.split('.');
        let first = parts.next()?;
        parts.try_fold(t.get(first)?.clone(), |v, p| match p.parse::<usize>() {
            Ok(i) => v.get(i).cloned(),
            Err(_) => v.get(p).cloned(),
        })
    });
    let expected = reason
        .rsplit_once(", expected ")
        .map_or("another type", |(_, e)| e);
    match value {
        Some(toml::Value::Datetime(d)) => {
            format!("invalid type: the date-time {d}, expected {expected}")
        }
        Some(toml::Value::Float(f)) if !f.is_finite() => {
            format!("invalid value: {f}, expected {expected}")
        }
        _ if reason.contains(" as i128") => format!(
            "invalid value: {}, expected {expected} (out of range)",
            reason
                .split('`')
                .nth(1)
                .map_or_else(|| "the integer".to_owned(), |n| format!("integer `{n}`"))
        ),
        _ => reason,
    }
}

fn line_column(text: &str, offset: usize) -> (Option<usize>, Option<usize>) {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (Some(line), Some(column))
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// serde_json's messages end with " at line L column C", which the caller gives apart.
fn strip_position(s: &str) -> String {
    match s.rfind(" at line ") {
        Some(i) => s.get(..i).unwrap_or(s).to_owned(),
        None => s.to_owned(),
    }
}

/// The scenario in `value`, or the dotted path of the first key that is unknown, missing or of
/// the wrong type, and why.
fn scenario_from_value(value: &Value) -> Result<Scenario, ScenarioError> {
    match serde_path_to_error::deserialize::<_, Scenario>(value) {
        Ok(s) => Ok(s),
        Err(e) => {
            let path = segments(e.path());
            let reason = clean_reason(&e.inner().to_string());
            // Internally tagged enums (`traffic` entries, `outages.N.what`) are buffered by
            // serde before their fields are read, which hides the field's name: look again.
            if let Some(refined) = refine(value, &path) {
                return Err(refined);
            }
            Err(ScenarioError {
                key: key_of(&path),
                reason,
            })
        }
    }
}

fn segments(path: &serde_path_to_error::Path) -> Vec<String> {
    use serde_path_to_error::Segment;
    path.iter()
        .map(|s| match s {
            Segment::Seq { index } => index.to_string(),
            Segment::Map { key } => key.clone(),
            Segment::Enum { variant } => variant.clone(),
            Segment::Unknown => "?".to_owned(),
        })
        .collect()
}

fn key_of(path: &[String]) -> String {
    if path.is_empty() {
        "(scenario)".to_owned()
    } else {
        path.join(".")
    }
}

/// serde's "unknown field `x`, expected one of ..." keeps its list; every message on one line.
fn clean_reason(s: &str) -> String {
    one_line(s)
}

const WORKLOAD_KINDS: [&str; 9] = [
    "load_store",
    "all_to_all",
    "ring_allreduce",
    "halving_doubling_allreduce",
    "all_gather",
    "reduce_scatter",
    "send_recv",
    "incast",
    "permutation",
];

fn refine(root: &Value, path: &[String]) -> Option<ScenarioError> {
    match path {
        [list, index, ..] if list == "traffic" => {
            let entry = root.get("traffic")?.get(index.parse::<usize>().ok()?)?;
            let (key, reason) = refine_workload(entry)?;
            Some(ScenarioError {
                key: format!("traffic.{index}.{key}"),
                reason,
            })
        }
        [list, index, what, ..] if list == "outages" && what == "what" => {
            let entry = root
                .get("outages")?
                .get(index.parse::<usize>().ok()?)?
                .get("what")?;
            let (key, reason) = refine_target(entry)?;
            Some(ScenarioError {
                key: format!("outages.{index}.what.{key}"),
                reason,
            })
        }
        _ => None,
    }
}

fn kind_of(entry: &Value, kinds: &[&str]) -> Result<String, (String, String)> {
    let list = kinds.join(", ");
    match entry.get("kind") {
        None => Err((
            "kind".to_owned(),
            format!("missing: say which kind, one of {list}"),
        )),
        Some(Value::String(k)) if kinds.contains(&k.as_str()) => Ok(k.clone()),
        Some(Value::String(k)) => Err((
            "kind".to_owned(),
            format!("unknown kind {k:?}, expected one of {list}"),
        )),
        Some(other) => Err((
            "kind".to_owned(),
            format!("must be a string, one of {list}, not {other}"),
        )),
    }
}

fn without_kind(entry: &Value) -> Value {
    let mut v = entry.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("kind");
    }
    v
}

fn first_error<T: DeserializeOwned>(v: &Value) -> Option<(String, String)> {
    serde_path_to_error::deserialize::<_, T>(v).err().map(|e| {
        (
            key_of(&segments(e.path())),
            clean_reason(&e.inner().to_string()),
        )
    })
}

fn refine_workload(entry: &Value) -> Option<(String, String)> {
    entry.as_object()?;
    let kind = match kind_of(entry, &WORKLOAD_KINDS) {
        Ok(k) => k,
        Err(e) => return Some(e),
    };
    let v = without_kind(entry);
    match kind.as_str() {
        "load_store" => first_error::<LoadStore>(&v),
        "all_to_all" => first_error::<AllToAll>(&v),
        "send_recv" => first_error::<SendRecv>(&v),
        "incast" => first_error::<Incast>(&v),
        "permutation" => first_error::<Permutation>(&v),
        _ => first_error::<Collective>(&v),
    }
}

fn refine_target(entry: &Value) -> Option<(String, String)> {
    let object = entry.as_object()?;
    let kind = match kind_of(entry, &["link", "switch_port", "switch", "plane"]) {
        Ok(k) => k,
        Err(e) => return Some(e),
    };
    // (field, whether it is a u32 rather than a u16)
    let fields: &[(&str, bool)] = match kind.as_str() {
        "link" => &[("gpu", false), ("port", false)],
        "switch_port" => &[("switch", true), ("port", false)],
        "switch" => &[("switch", true)],
        _ => &[("plane", false)],
    };
    for (k, v) in object {
        if k == "kind" {
            continue;
        }
        let Some(&(_, wide)) = fields.iter().find(|(f, _)| f == k) else {
            let names: Vec<String> = fields.iter().map(|(f, _)| format!("`{f}`")).collect();
            return Some((
                k.clone(),
                format!(
                    "unknown field `{k}` for a {kind} outage, expected {}",
                    names.join(" or ")
                ),
            ));
        };
        let bad = if wide {
            first_error::<u32>(v)
        } else {
            first_error::<u16>(v)
        };
        if let Some((_, reason)) = bad {
            return Some((k.clone(), reason));
        }
    }
    fields
        .iter()
        .find(|(f, _)| !object.contains_key(*f))
        .map(|(f, _)| ((*f).to_owned(), format!("missing field `{f}`")))
}

/// The scenario `args` describe: the file's or the default, with `--seed` applied, validated.
/// The error is the one line to print after `error: `.
pub fn scenario(args: &RunArgs) -> Result<Scenario, String> {
    let mut s = scenario_file(args.scenario.as_deref())?;
    if let Some(seed) = args.seed {
        s.seed = seed;
    }
    s.validate().map_err(|e| e.to_string())?;
    let ports = s.topology.ports();
    let CapturePort { gpu, port } = args.capture_port;
    if gpu >= s.topology.gpus {
        return Err(format!(
            "--capture-port: GPU {gpu} does not exist (the scenario has GPUs 0..={})",
            s.topology.gpus - 1
        ));
    }
    if usize::from(port) >= ports {
        return Err(format!(
            "--capture-port: port {port} does not exist (GPUs have ports 0..={})",
            ports - 1
        ));
    }
    Ok(s)
}

/// The scenario of `--scenario FILE`, or the built-in default without one.
pub fn scenario_file(path: Option<&Path>) -> Result<Scenario, String> {
    let Some(path) = path else {
        return Ok(Scenario::default());
    };
    // Bounded: `--scenario /dev/zero` is refused at the limit, not read until memory runs out.
    let text = crate::input::read_file(path, crate::input::SCENARIO_LIMIT)
        .map_err(|e| format!("--scenario: {e}"))?;
    match parse_scenario(&text, Format::of(path)) {
        Ok(s) => Ok(s),
        Err(ScenarioTextError::Key(e)) => Err(e.to_string()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// The receive buffer per VC and the credit loop it covers (link.md §1.2).
fn describe_buffers(s: &Scenario) -> String {
    let c = s.credit_loop();
    let credits = s.rx_credits();
    let bytes = u64::from(credits) * u64::from(s.link.credit_size);
    format!(
        "{credits} credits of {} B per input and VC ({}); the credit loop of {:.0} ns needs {} \
         at line rate{}",
        s.link.credit_size,
        kib(bytes),
        c.loop_ns,
        kib(c.need_bytes),
        if credits == c.default_credits {
            ", the default grants twice that"
        } else {
            ""
        }
    )
}

/// `bytes` as KiB with one decimal, or as bytes below 1 KiB.
fn kib(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

/// The effective scenario as TOML, as `--print-scenario` prints it. Floats below 0.001 are
/// written with an exponent (`ber = 1e-10`, not `0.0000000001`).
pub fn scenario_toml(s: &Scenario) -> Result<String, String> {
    let text = toml::to_string_pretty(s)
        .map_err(|e| format!("cannot render the scenario as TOML: {e}"))?;
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let small = line.split_once(" = ").and_then(|(k, v)| {
            let x: f64 = v.parse().ok()?;
            (v.contains('.') && x != 0.0 && x.abs() < 1e-3).then(|| format!("{k} = {x:e}"))
        });
        out.push_str(small.as_deref().unwrap_or(line));
        out.push('\n');
    }
    Ok(out)
}

/// What `--json` prints and metrics.json holds: the scenario that ran, then the report (whose
/// last section, `wall`, is the only one that differs between two runs of one scenario).
#[derive(Debug, Serialize)]
pub struct RunJson<'a> {
    /// The effective scenario.
    pub scenario: &'a Scenario,
    /// The report.
    #[serde(flatten)]
    pub report: &'a Report,
}

/// The capture of one cable, as it went.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CaptureSummary {
    /// The captured cable.
    pub cable: usize,
    /// Its two ends, described.
    pub ends: String,
    /// Frames that crossed it.
    pub seen: u64,
    /// Frames written to the capture (at most `--capture-limit`).
    pub written: u64,
    /// Of the frames seen, those that arrived damaged.
    pub damaged: u64,
    /// Of the frames seen, those that vanished.
    pub vanished: u64,
}

struct CaptureState {
    stream: Option<PcapngStream<BufWriter<Checked<File>>>>,
    error: Option<String>,
    port: End,
    limit: u64,
    summary: CaptureSummary,
}

fn end_name(e: End) -> String {
    match e {
        End::Gpu { gpu, port } => format!("gpu{gpu}.p{port}"),
        End::Switch { switch, port } => format!("sw{switch}.p{port}"),
    }
}

fn capture_frame(st: &mut CaptureState, f: &CapturedFrame<'_>) {
    st.summary.seen += 1;
    st.summary.damaged += u64::from(f.damaged);
    st.summary.vanished += u64::from(f.vanished);
    if st.summary.written >= st.limit || st.error.is_some() {
        return;
    }
    let Some(stream) = st.stream.as_mut() else {
        return;
    };
    let mut comment = format!(
        "{} {} -> {}",
        f.kind.name(),
        end_name(f.from),
        end_name(f.to)
    );
    if f.damaged {
        comment.push_str(
            "; arrives damaged (a bit flipped on the cable, the receiver's FCS check fails)",
        );
    }
    if f.vanished {
        comment.push_str("; vanishes on the cable (never arrives)");
    }
    if f.duplicated {
        comment.push_str("; arrives twice");
    }
    let direction = if f.from == st.port {
        Direction::Outbound
    } else {
        Direction::Inbound
    };
    match stream.write(f.start_ps / 1000, f.bytes, Some(direction), &comment) {
        Ok(()) => st.summary.written += 1,
        Err(e) => {
            // The writer's own error ("No space left on device"), not the pcapng library's.
            let why = stream.io_error().unwrap_or_else(|| e.to_string());
            let message = format!(
                "cannot write {CAPTURE_FILE}: {why} (after {} frames)",
                st.summary.written
            );
            // Said when it happens: the run goes on, and ends with this error.
            eprintln!("error: {message}; the run goes on, but none of --out's files is kept");
            st.error = Some(message);
        }
    }
}

/// A writer that keeps the first error its inner writer gave, so that the message of a failed
/// write is the system's ("No space left on device") whatever the layers above make of it.
pub struct Checked<W> {
    inner: W,
    error: Option<String>,
}

impl<W> Checked<W> {
    fn new(inner: W) -> Self {
        Checked { inner, error: None }
    }
}

impl<W: Write> Write for Checked<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf).inspect_err(|e| {
            self.error.get_or_insert_with(|| e.to_string());
        })
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush().inspect_err(|e| {
            self.error.get_or_insert_with(|| e.to_string());
        })
    }
}

trait IoError {
    fn io_error(&mut self) -> Option<String>;
}

impl<W: Write> IoError for PcapngStream<BufWriter<Checked<W>>> {
    fn io_error(&mut self) -> Option<String> {
        self.get_mut().get_ref().error.clone()
    }
}

/// Runs `args` and returns the exit status: 0 when the run passes, 1 when it fails (an
/// operation lost, duplicated or unexpected, data corrupted, a switch buffer overrun, the time
/// limit). `Err` is a message for standard error with exit status 2.
pub fn execute(args: &RunArgs, io: &mut crate::Io<'_>) -> Result<u8, String> {
    let result = execute_run(args, io);
    if INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
        // The interrupt handler is removing this run's files and ends the process: whatever
        // failed here failed because of it, and must not be reported as the run's outcome.
        loop {
            std::thread::park();
        }
    }
    result
}

/// Set by the interrupt handler of a run with `--out` before it cleans up and exits.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn execute_run(args: &RunArgs, io: &mut crate::Io<'_>) -> Result<u8, String> {
    let scenario = scenario(args)?;
    for w in scenario.warnings() {
        // A warning that cannot be written is not worth failing the run for.
        let _ = writeln!(io.stderr, "warning: {w}");
    }
    // From here on the scenario carries its derived defaults, as it runs.
    let scenario = scenario.resolved();
    if args.print_scenario {
        let text = scenario_toml(&scenario)?;
        write_stdout(io, &text)?;
        return Ok(crate::EXIT_OK);
    }
    let estimate = check_memory(&scenario, args.max_memory, args.partitioned)?;
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("--out: cannot create {}: {e}", dir.display()))?;
    }
    let mut files = args.out.as_deref().map(OutFiles::new);
    if let Some(dir) = &args.out {
        remove_partials_on_interrupt(dir);
    }
    let mut fabric = Fabric::new(&scenario).map_err(|e| e.to_string())?;
    if args.partitioned {
        fabric
            .set_partitioned_split(true, args.switches_with_gpus)
            .map_err(|e| match e.key.as_str() {
                "switches_with_gpus" => format!("--switches-with-gpus: {}", e.reason),
                _ => format!("--partitioned: {e}"),
            })?;
    }
    let capture = match files.as_mut() {
        Some(f) => Some(start_capture(&mut fabric, args, f)?),
        None => None,
    };
    let report = {
        let mut bar = Progress::new(!args.no_progress && std::io::stderr().is_terminal());
        let mut tick = |sim: u64, end: u64| bar.update(sim, end);
        let r = fabric.run(Some(&mut tick));
        bar.finish();
        r
    };
    drop(fabric);
    let capture = match capture {
        Some(state) => Some(finish_capture(&state)?),
        None => None,
    };
    // The JSON only when it is printed or written: for a long time series it is large.
    let json = if args.json || files.is_some() {
        to_json(&RunJson {
            scenario: &scenario,
            report: &report,
        })?
    } else {
        String::new()
    };
    if let Some(f) = files.as_mut() {
        write_outputs(f, &scenario, &report, &json)?;
    }
    let text = if args.json {
        json
    } else {
        render_text(
            &scenario,
            &report,
            args.out.as_deref(),
            capture.as_ref(),
            Some(estimate),
        )
    };
    write_stdout(io, &text)?;
    if let Some(f) = files.as_mut() {
        f.commit()?;
    }
    Ok(exit_status(&report))
}

fn write_stdout(io: &mut crate::Io<'_>, text: &str) -> Result<(), String> {
    io.stdout
        .write_all(text.as_bytes())
        .and_then(|()| io.stdout.flush())
        .map_err(|e| format!("cannot write the output: {e}"))
}

fn to_json(v: &impl Serialize) -> Result<String, String> {
    serde_json::to_string_pretty(v)
        .map(|mut s| {
            s.push('\n');
            s
        })
        .map_err(|e| format!("cannot render JSON: {e}"))
}

fn start_capture(
    fabric: &mut Fabric,
    args: &RunArgs,
    files: &mut OutFiles,
) -> Result<Rc<RefCell<CaptureState>>, String> {
    let CapturePort { gpu, port } = args.capture_port;
    let end = End::Gpu { gpu, port };
    let cable = fabric
        .cable_of(end)
        .ok_or_else(|| format!("--capture-port: GPU {gpu} port {port} has no cable"))?;
    let info = fabric
        .cables()
        .get(cable)
        .copied()
        .ok_or_else(|| format!("--capture-port: no cable {cable}"))?;
    let other = if info.a == end { info.b } else { info.a };
    let ends = format!("{} <-> {}", end_name(end), end_name(other));
    let path = files.dir.join(CAPTURE_FILE);
    let file = files.create(CAPTURE_FILE)?;
    let stream = PcapngStream::new(
        BufWriter::new(Checked::new(file)),
        &end_name(end),
        &format!(
            "EthLink cable {cable}: {ends}, seed {}",
            fabric.scenario().seed
        ),
    )
    .map_err(|e| format!("{}: {e}", path.display()))?;
    let state = Rc::new(RefCell::new(CaptureState {
        stream: Some(stream),
        error: None,
        port: end,
        limit: args.capture_limit,
        summary: CaptureSummary {
            cable,
            ends,
            ..CaptureSummary::default()
        },
    }));
    let sink_state = Rc::clone(&state);
    let sink: CaptureSink = Box::new(move |f: &CapturedFrame<'_>| {
        capture_frame(&mut sink_state.borrow_mut(), f);
    });
    fabric.capture(cable, sink).map_err(|e| e.to_string())?;
    Ok(state)
}

fn finish_capture(state: &Rc<RefCell<CaptureState>>) -> Result<CaptureSummary, String> {
    let mut st = state.borrow_mut();
    if let Some(e) = st.error.take() {
        return Err(e);
    }
    if let Some(stream) = st.stream.take() {
        let fail = |e: std::io::Error| format!("cannot write {CAPTURE_FILE}: {e}");
        let file = stream
            .into_inner()
            .into_inner()
            .map_err(|e| fail(e.into_error()))?;
        file.inner.sync_all().map_err(fail)?;
    }
    Ok(st.summary.clone())
}

/// A progress bar on standard error, shown only on a terminal and only once the run has taken
/// more than a second.
struct Progress {
    enabled: bool,
    started: Instant,
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    fn new(enabled: bool) -> Progress {
        Progress {
            enabled,
            started: Instant::now(),
            bar: None,
        }
    }

    fn update(&mut self, sim: u64, end: u64) {
        if !self.enabled {
            return;
        }
        if self.bar.is_none() {
            if self.started.elapsed().as_secs_f64() < PROGRESS_AFTER_S {
                return;
            }
            let bar = if end > 0 {
                let b = indicatif::ProgressBar::new(end);
                if let Ok(style) = indicatif::ProgressStyle::with_template(
                    "{elapsed:>4} [{bar:40}] {percent:>3}% {msg}",
                ) {
                    b.set_style(style.progress_chars("=> "));
                }
                b
            } else {
                let b = indicatif::ProgressBar::new_spinner();
                if let Ok(style) =
                    indicatif::ProgressStyle::with_template("{elapsed:>4} {spinner} {msg}")
                {
                    b.set_style(style);
                }
                b
            };
            self.bar = Some(bar);
        }
        if let Some(b) = &self.bar {
            if end > 0 {
                b.set_length(end);
                b.set_position(sim.min(end));
                b.set_message(format!("{} of {} simulated", time(sim), time(end)));
            } else {
                b.set_message(format!("{} simulated", time(sim)));
                b.tick();
            }
        }
    }

    fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

/// The files `--out` writes, each first under a temporary name in the directory
/// (`.NAME.partial`) and renamed to its own name only once every file is whole and the summary
/// is printed: a run that fails half-way leaves nothing of its own behind (its temporary files
/// are removed), and never a file cut short under a final name.
struct OutFiles {
    dir: PathBuf,
    /// The names written so far, under their temporary names.
    names: Vec<&'static str>,
    committed: bool,
}

impl OutFiles {
    fn new(dir: &Path) -> OutFiles {
        OutFiles {
            dir: dir.to_owned(),
            names: Vec::new(),
            committed: false,
        }
    }

    fn partial(&self, name: &str) -> PathBuf {
        self.dir.join(format!(".{name}.partial"))
    }

    /// Creates `name` under its temporary name.
    fn create(&mut self, name: &'static str) -> Result<File, String> {
        let path = self.partial(name);
        let file =
            File::create(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        self.names.push(name);
        Ok(file)
    }

    /// Writes `bytes` as `name` (under its temporary name), synced to the disk.
    fn write(&mut self, name: &'static str, bytes: &[u8]) -> Result<(), String> {
        let mut file = self.create(name)?;
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .map_err(|e| format!("cannot write {}: {e}", self.dir.join(name).display()))
    }

    /// Gives every file its own name. Checked first, so that nothing is renamed when one of
    /// them cannot be: a final name taken by a directory.
    fn commit(&mut self) -> Result<(), String> {
        for name in &self.names {
            let path = self.dir.join(name);
            if path.is_dir() {
                return Err(format!(
                    "cannot write {}: a directory has that name",
                    path.display()
                ));
            }
        }
        for name in &self.names {
            let (from, to) = (self.partial(name), self.dir.join(name));
            std::fs::rename(&from, &to)
                .map_err(|e| format!("cannot write {}: {e}", to.display()))?;
        }
        self.committed = true;
        Ok(())
    }
}

/// Every name `--out` may write.
const OUT_NAMES: [&str; 6] = [
    METRICS_FILE,
    TIMESERIES_FILE,
    CAPTURE_FILE,
    LATENCY_SVG,
    UTILISATION_SVG,
    BUSBW_SVG,
];

/// On Ctrl-C (SIGINT, also SIGTERM) during a run with `--out`: removes the temporary files of
/// every name the run may be writing, so that an interrupted run leaves nothing behind, and exits
/// with status 130 as a shell does for a process ended by SIGINT. The final names are never
/// touched: they are written only by the rename at the very end of a run.
fn remove_partials_on_interrupt(dir: &Path) {
    let dir = dir.to_owned();
    // Only one handler can be installed per process; a second run in the same process (tests)
    // keeps the first, whose directory is the one that matters to the signal.
    let _ = ctrlc::set_handler(move || {
        INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
        for name in OUT_NAMES {
            let _ = std::fs::remove_file(dir.join(format!(".{name}.partial")));
        }
        // Standard error may be locked by the run for its whole length: write through a handle
        // of our own rather than wait for that lock.
        if let Ok(mut err) = std::fs::OpenOptions::new().append(true).open("/dev/stderr") {
            let _ = writeln!(
                err,
                "interrupted: nothing of this run was kept in {}",
                dir.display()
            );
        }
        std::process::exit(130);
    });
}

impl Drop for OutFiles {
    fn drop(&mut self) {
        if !self.committed {
            for name in &self.names {
                let _ = std::fs::remove_file(self.partial(name));
            }
        }
    }
}

fn write_outputs(files: &mut OutFiles, s: &Scenario, r: &Report, json: &str) -> Result<(), String> {
    files.write(METRICS_FILE, json.as_bytes())?;
    files.write(TIMESERIES_FILE, timeseries_csv(s, r).as_bytes())?;
    let plot_err = |name: &str, e: anyhow::Error| format!("cannot draw {name}: {e}");
    let svg = latency_svg(s, r).map_err(|e| plot_err(LATENCY_SVG, e))?;
    files.write(LATENCY_SVG, svg.as_bytes())?;
    let svg = utilisation_svg(s, r).map_err(|e| plot_err(UTILISATION_SVG, e))?;
    files.write(UTILISATION_SVG, svg.as_bytes())?;
    let svg = busbw_svg(s, r).map_err(|e| plot_err(BUSBW_SVG, e))?;
    files.write(BUSBW_SVG, svg.as_bytes())?;
    Ok(())
}

/// The time series as CSV: `t_ns,ops_completed,bytes_completed`, then `gpu{g}_util` for every
/// GPU and, when the scenario records ports, `gpu{g}_p{p}_util` for every port; one row per
/// sample interval (its start), utilisations as fractions of the line rate.
pub fn timeseries_csv(s: &Scenario, r: &Report) -> String {
    let series = &r.series;
    let gpus = usize::from(s.topology.gpus);
    let ports = s.topology.ports();
    let per_port = series.port_utilisation.iter().any(|v| !v.is_empty());
    let mut out = String::from("t_ns,ops_completed,bytes_completed");
    for g in 0..gpus {
        let _ = write!(out, ",gpu{g}_util");
    }
    if per_port {
        for g in 0..gpus {
            for p in 0..ports {
                let _ = write!(out, ",gpu{g}_p{p}_util");
            }
        }
    }
    out.push('\n');
    for (i, t) in series.t_ns.iter().enumerate() {
        let _ = write!(
            out,
            "{t},{},{}",
            series.ops_completed.get(i).copied().unwrap_or(0),
            series.bytes_completed.get(i).copied().unwrap_or(0)
        );
        let row = series.gpu_utilisation.get(i);
        for g in 0..gpus {
            let v = row.and_then(|r| r.get(g)).copied().unwrap_or(0.0);
            let _ = write!(out, ",{v:.4}");
        }
        if per_port {
            let row = series.port_utilisation.get(i);
            for k in 0..gpus * ports {
                let v = row.and_then(|r| r.get(k)).copied().unwrap_or(0.0);
                let _ = write!(out, ",{v:.4}");
            }
        }
        out.push('\n');
    }
    out
}

/// The latency CDF of every kind of operation, from the report's histograms: one point per
/// bucket, (upper bound, share of the operations at or below it).
pub fn latency_svg(s: &Scenario, r: &Report) -> anyhow::Result<String> {
    let points: Lines = r
        .ops
        .kinds
        .iter()
        .map(|k| {
            let total: u64 = k.histogram.counts.iter().sum();
            let mut cum = 0u64;
            let pts = k
                .histogram
                .bounds
                .iter()
                .zip(&k.histogram.counts)
                .map(|(&b, &c)| {
                    cum += c;
                    (b as f64, cum as f64 / total.max(1) as f64)
                })
                .collect();
            (format!("{} ({} ops)", k.kind, total), pts)
        })
        .collect();
    let series: Vec<plots::Series<'_>> = points
        .iter()
        .map(|(n, p)| plots::Series { name: n, points: p })
        .collect();
    plots::latency_cdf(
        &format!(
            "Latency CDF per operation type ({}, seed {})",
            topology_short(s),
            s.seed
        ),
        &series,
    )
}

/// Transmit utilisation over time, averaged over bins of whole sample intervals (at most
/// [`MAX_UTILISATION_BINS`] bins): one line per GPU port when there are at most
/// [`MAX_UTILISATION_LINES`] of them (per GPU when the scenario records no ports); else one
/// line per port index (the port's plane in a single tier), the mean over the GPUs, when there
/// are at most that many; else three lines, the highest, the mean and the lowest port (or GPU)
/// of each bin.
pub fn utilisation_svg(s: &Scenario, r: &Report) -> anyhow::Result<String> {
    let series = &r.series;
    let ports = s.topology.ports();
    let per_port = series.port_utilisation.iter().any(|v| !v.is_empty());
    let (rows, names): (&Vec<Vec<f32>>, Vec<String>) = if per_port {
        let names = (0..usize::from(s.topology.gpus))
            .flat_map(|g| (0..ports).map(move |p| format!("gpu{g}.p{p}")))
            .collect();
        (&series.port_utilisation, names)
    } else {
        let names = (0..usize::from(s.topology.gpus))
            .map(|g| format!("gpu{g}"))
            .collect();
        (&series.gpu_utilisation, names)
    };
    let n = rows.len().min(series.t_ns.len());
    let per_bin = n.div_ceil(MAX_UTILISATION_BINS).max(1);
    // Each bin: its middle (us) and the mean utilisation of every line over it.
    let bins: Vec<(f64, Vec<f64>)> = (0..n)
        .step_by(per_bin)
        .map(|first| {
            let last = (first + per_bin).min(n);
            let t0 = series.t_ns.get(first).copied().unwrap_or(0) as f64;
            let t1 = series.t_ns.get(last).map_or(
                t0 + ((last - first) as u64 * series.interval_ns) as f64,
                |&t| t as f64,
            );
            let mut mean = vec![0.0f64; names.len()];
            for row in rows.get(first..last).unwrap_or_default() {
                for (m, v) in mean.iter_mut().zip(row) {
                    *m += f64::from(*v);
                }
            }
            for m in &mut mean {
                *m /= (last - first) as f64;
            }
            ((t0 + t1) / 2.0 / 1000.0, mean)
        })
        .collect();
    let what = if per_port { "ports" } else { "GPUs" };
    let gpus = usize::from(s.topology.gpus);
    let line = |f: &dyn Fn(&[f64]) -> f64| -> Vec<(f64, f64)> {
        bins.iter().map(|(t, v)| (*t, f(v))).collect()
    };
    let (lines, title): (Lines, String) = if names.len() <= MAX_UTILISATION_LINES {
        let lines = names
            .iter()
            .enumerate()
            .map(|(k, name)| (name.clone(), line(&|v| v.get(k).copied().unwrap_or(0.0))))
            .collect();
        (lines, format!("per {}", &what[..what.len() - 1]))
    } else if per_port && ports <= MAX_UTILISATION_LINES {
        let lines = (0..ports)
            .map(|p| {
                let mean = move |v: &[f64]| {
                    (0..gpus)
                        .map(|g| v.get(g * ports + p).copied().unwrap_or(0.0))
                        .sum::<f64>()
                        / gpus as f64
                };
                let name = if s.topology.kind == TopologyKind::BackToBack {
                    format!("port {p}")
                } else {
                    format!("port {p} (plane {p})")
                };
                (name, line(&mean))
            })
            .collect();
        (lines, format!("per port index, mean of {gpus} GPUs"))
    } else {
        let lines = vec![
            (
                format!("highest of {} {what}", names.len()),
                line(&|v| v.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
            ),
            (
                format!("mean of {} {what}", names.len()),
                line(&|v| v.iter().sum::<f64>() / v.len().max(1) as f64),
            ),
            (
                format!("lowest of {} {what}", names.len()),
                line(&|v| v.iter().copied().fold(f64::INFINITY, f64::min)),
            ),
        ];
        (lines, format!("{} {what}", names.len()))
    };
    let series_refs: Vec<plots::Series<'_>> = lines
        .iter()
        .map(|(name, p)| plots::Series { name, points: p })
        .collect();
    let bin_ns = per_bin as u64 * series.interval_ns;
    plots::utilisation(
        &format!(
            "Transmit utilisation {title}, {} bins (seed {})",
            time(bin_ns),
            s.seed
        ),
        &series_refs,
    )
}

/// Bus bandwidth against size, one line per collective workload of the scenario; a plot saying
/// "no data" when none ran.
pub fn busbw_svg(s: &Scenario, r: &Report) -> anyhow::Result<String> {
    let mut lines: Lines = Vec::new();
    for row in &r.collectives {
        let name = format!("{} (traffic.{})", row.name, row.workload);
        let point = (row.size_bytes as f64, row.busbw_gbytes);
        match lines.iter_mut().find(|(n, _)| *n == name) {
            Some((_, pts)) => pts.push(point),
            None => lines.push((name, vec![point])),
        }
    }
    for (_, pts) in &mut lines {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let series: Vec<plots::Series<'_>> = lines
        .iter()
        .map(|(n, p)| plots::Series { name: n, points: p })
        .collect();
    plots::busbw(
        &format!(
            "Collective bus bandwidth ({}, seed {})",
            topology_short(s),
            s.seed
        ),
        &series,
    )
}

fn topology_short(s: &Scenario) -> String {
    let t = &s.topology;
    let kind = match t.kind {
        TopologyKind::BackToBack => "back to back",
        TopologyKind::SingleTier => "single tier",
        TopologyKind::TwoTier => "two tiers",
    };
    format!(
        "{} GPUs x {} ports, {kind}, {} Gb/s",
        t.gpus,
        t.ports(),
        s.link.rate_gbps
    )
}

/// `n` bytes as `64 B`, `256 KiB`, `1 MiB` when a whole number of those, else in bytes.
pub fn bytes(n: u64) -> String {
    for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if n >= 1 << shift && n.is_multiple_of(1 << shift) {
            return format!("{} {unit}", n >> shift);
        }
    }
    format!("{n} B")
}

/// `ns` of simulated time as `850 ns`, `12.34 us`, `1.234 ms` or `1.234 s`.
pub fn time(ns: u64) -> String {
    let x = ns as f64;
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.2} us", x / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.3} ms", x / 1e6)
    } else {
        format!("{:.3} s", x / 1e9)
    }
}

fn gpus_of(list: &Option<Vec<u16>>, all: &str) -> String {
    match list {
        None => all.to_owned(),
        Some(v) if v.len() == 1 => format!("GPU {}", v[0]),
        Some(v) if v.len() <= 8 => format!(
            "GPUs {}",
            v.iter().map(u16::to_string).collect::<Vec<_>>().join(",")
        ),
        Some(v) => format!("{} GPUs", v.len()),
    }
}

fn iterations(n: u32) -> String {
    match n {
        0 => "until the run stops".to_owned(),
        1 => "once".to_owned(),
        n => format!("{n} times"),
    }
}

fn after(start: u64) -> String {
    if start == 0 {
        String::new()
    } else {
        format!(", from {}", time(start))
    }
}

/// One line describing workload `w`.
pub fn describe_workload(w: &Workload) -> String {
    match w {
        Workload::LoadStore(l) => {
            let sizes = l
                .sizes
                .iter()
                .map(|s| bytes(u64::from(s.bytes)))
                .collect::<Vec<_>>()
                .join("/");
            let pace = match l.rate_mops {
                Some(r) => format!("open loop {r} Mops/s per GPU"),
                None => format!("closed loop, {} outstanding per GPU", l.outstanding),
            };
            let count = match l.ops {
                Some(n) => format!("{n} per GPU"),
                None => "until the run stops".to_owned(),
            };
            format!(
                "load_store: {sizes}, {:.0}% loads, {pace}, {count}, {} -> {}{}",
                l.read_share * 100.0,
                gpus_of(&l.gpus, "every GPU"),
                gpus_of(&l.targets, "every other"),
                after(l.start_ns)
            )
        }
        Workload::AllToAll(a) => format!(
            "all_to_all: {} per pair, {}, window {}, {}{}",
            bytes(a.bytes_per_pair),
            gpus_of(&a.gpus, "every GPU"),
            a.window,
            iterations(a.iterations),
            after(a.start_ns)
        ),
        Workload::RingAllreduce(c)
        | Workload::HalvingDoublingAllreduce(c)
        | Workload::AllGather(c)
        | Workload::ReduceScatter(c) => format!(
            "{}: {}, {}, {} each{}",
            w.kind(),
            c.sizes
                .iter()
                .map(|&b| bytes(b))
                .collect::<Vec<_>>()
                .join(", "),
            gpus_of(&c.gpus, "every GPU"),
            iterations(c.iterations),
            after(c.start_ns)
        ),
        Workload::SendRecv(p) => format!(
            "send_recv: {} microbatches of {} through {}, {}{}",
            p.microbatches,
            bytes(p.bytes),
            gpus_of(&p.stages, "every GPU"),
            iterations(p.iterations),
            after(p.start_ns)
        ),
        Workload::Incast(n) => format!(
            "incast: {} -> GPU {}, {} each, {}{}",
            gpus_of(&n.senders, "every other GPU"),
            n.target,
            bytes(n.bytes),
            iterations(n.iterations),
            after(n.start_ns)
        ),
        Workload::Permutation(p) => format!(
            "permutation: {} each, {}, {}{}",
            bytes(p.bytes),
            gpus_of(&p.gpus, "every GPU"),
            iterations(p.iterations),
            after(p.start_ns)
        ),
    }
}

fn describe_topology(s: &Scenario) -> String {
    let t = &s.topology;
    let ports = format!(
        "{} ports ({} stack{} x {})",
        t.ports(),
        t.stacks,
        if t.stacks == 1 { "" } else { "s" },
        t.ports_per_stack
    );
    match t.kind {
        TopologyKind::BackToBack => format!("2 GPUs back to back, {ports} each, no switch"),
        TopologyKind::SingleTier => format!(
            "{} GPUs x {ports}, a single tier of {} switch planes ({} ports per switch)",
            t.gpus,
            t.ports(),
            t.gpus
        ),
        TopologyKind::TwoTier => format!(
            "{} GPUs x {ports}, two tiers: {} planes of {} leaves and {} spines ({} switches)",
            t.gpus,
            t.ports(),
            t.leaves,
            t.spines,
            t.switches()
        ),
    }
}

fn describe_outage(o: &ethlink_fabric::scenario::Outage) -> String {
    let what = match o.what {
        OutageTarget::Link { gpu, port } => format!("cable of GPU {gpu} port {port}"),
        OutageTarget::SwitchPort { switch, port } => {
            format!("cable of switch {switch} port {port}")
        }
        OutageTarget::Switch { switch } => format!("switch {switch}"),
        OutageTarget::Plane { plane } => format!("plane {plane}"),
    };
    let how = if o.blackout {
        "blacked out (frames vanish)".to_owned()
    } else if o.trickle > 0 {
        format!(
            "trickling (the first {} DATA frames after each 1 us pause arrive)",
            o.trickle
        )
    } else {
        "cut".to_owned()
    };
    let until = match o.duration_ns {
        Some(d) => format!("for {}", time(d)),
        None => "to the end".to_owned(),
    };
    format!("{what} {how} from {} {until}", time(o.start_ns))
}

fn statuses(by: &[(String, u64)]) -> String {
    if by.is_empty() {
        return "-".to_owned();
    }
    by.iter()
        .map(|(s, n)| format!("{s} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the data check found wrong (lost, duplicated or unexpected operations, corrupted or
/// stray bytes, wrong loads, switch buffer drops); empty when the data is intact.
fn data_failures(r: &Report) -> Vec<String> {
    let mut v = Vec::new();
    let o = &r.ops;
    let i = &r.integrity;
    for (n, what) in [
        (o.lost, "operations lost"),
        (o.duplicated, "operations duplicated"),
        (o.unexpected, "unexpected completions"),
        (i.bytes_mismatched, "bytes corrupted"),
        (i.bytes_stray, "stray bytes"),
        (i.loads_mismatched, "loads returned wrong data"),
        (r.switch.buffer_drops, "switch buffer drops"),
    ] {
        if n > 0 {
            v.push(format!("{n} {what}"));
        }
    }
    v
}

/// The exit status of a run: [`EXIT_PASS`] when it passes, [`EXIT_DATA`] when data was lost,
/// duplicated or corrupted, [`EXIT_FABRIC`] when the data is intact but the fabric did not do
/// its job (links that never came up, operations ending in error that the scenario does not
/// expect, the time limit).
pub fn exit_status(r: &Report) -> u8 {
    if r.pass {
        EXIT_PASS
    } else if !r.data_intact {
        EXIT_DATA
    } else {
        EXIT_FABRIC
    }
}

/// A table of right-aligned columns (the first left-aligned), two spaces apart.
fn table(out: &mut String, indent: &str, rows: &[Vec<String>]) {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in rows {
        let mut line = String::from(indent);
        for (c, cell) in row.iter().enumerate() {
            let w = widths.get(c).copied().unwrap_or(0);
            if c == 0 {
                let _ = write!(line, "{cell:<w$}");
            } else {
                let _ = write!(line, "  {cell:>w$}");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

/// The summary `ethlink run` prints without `--json`. `out` and `capture` describe what
/// `--out` wrote; `estimate` is the memory estimate the run was admitted with.
pub fn render_text(
    s: &Scenario,
    r: &Report,
    out_dir: Option<&Path>,
    capture: Option<&CaptureSummary>,
    estimate: Option<u64>,
) -> String {
    let mut out = String::new();
    let l = &s.link;
    let propagation = l.propagation_ns.unwrap_or(l.cable_m * 5.0);
    let _ = writeln!(out, "EthLink fabric run, seed {}", s.seed);
    let mut head: Vec<(&str, String)> = vec![
        (
            "topology",
            format!("{}; {} cables", describe_topology(s), r.cables),
        ),
        (
            "links",
            format!(
                "{} Gb/s, {} ns propagation, BER {:e}{}{}{}{}{}",
                l.rate_gbps,
                propagation,
                l.ber,
                if l.loss > 0.0 {
                    format!(", loss {}", l.loss)
                } else {
                    String::new()
                },
                if l.drop > 0.0 {
                    format!(", drop {}", l.drop)
                } else {
                    String::new()
                },
                if l.duplicate > 0.0 {
                    format!(", duplicate {}", l.duplicate)
                } else {
                    String::new()
                },
                match (l.burst, l.loss + l.drop > 0.0) {
                    (b, true) if b > 1 => format!(", in bursts of {b} frames"),
                    _ => String::new(),
                },
                if l.control_loss > 0.0 {
                    format!(", control loss {}", l.control_loss)
                } else {
                    String::new()
                },
            ),
        ),
        ("buffers", describe_buffers(s)),
        (
            "switches",
            format!(
                "{} ns {}",
                s.switch.latency_ns,
                match s.switch.mode {
                    ethlink_fabric::scenario::SwitchMode::CutThrough => "cut-through",
                    ethlink_fabric::scenario::SwitchMode::StoreAndForward => "store-and-forward",
                }
            ),
        ),
    ];
    if s.topology.kind == TopologyKind::BackToBack {
        head.pop();
    }
    for (i, w) in s.traffic.iter().enumerate() {
        head.push((
            if i == 0 { "traffic" } else { "" },
            format!("[{i}] {}", describe_workload(w)),
        ));
    }
    if s.outages.is_empty() {
        head.push(("outages", "none".to_owned()));
    }
    for (i, o) in s.outages.iter().enumerate() {
        head.push((
            if i == 0 { "outages" } else { "" },
            format!("[{i}] {}", describe_outage(o)),
        ));
    }
    let stop = if s.duration_ns.is_some() {
        "the duration ended"
    } else {
        "the work was done"
    };
    head.push((
        "simulated",
        format!(
            "{} in all: bring-up {}{}, traffic {} (until {stop}), drain {}",
            time(r.end_ns),
            time(r.start_ns),
            if r.all_links_up {
                ""
            } else {
                " (some links never came up)"
            },
            time(r.stop_ns.saturating_sub(r.start_ns)),
            time(r.end_ns.saturating_sub(r.stop_ns))
        ),
    ));
    head.push((
        "result",
        if r.pass {
            "PASS".to_owned()
        } else {
            let mut f = r.failures.clone();
            if f.is_empty() {
                f.push("see the JSON report".to_owned());
            }
            format!("FAIL: {}", f.join(", "))
        },
    ));
    let d = data_failures(r);
    head.push((
        "data",
        if d.is_empty() {
            "intact: nothing lost, duplicated or corrupted".to_owned()
        } else {
            format!("NOT intact: {}", d.join(", "))
        },
    ));
    for (k, v) in &head {
        let _ = writeln!(out, "{k:<10} {v}");
    }

    // Operations.
    out.push('\n');
    let _ = writeln!(out, "Operations (latency in ns, issue to completion)");
    let mut rows = vec![vec![
        "kind".to_owned(),
        "issued".to_owned(),
        "completed".to_owned(),
        "p50".to_owned(),
        "p99".to_owned(),
        "p99.9".to_owned(),
        "max".to_owned(),
        "mean".to_owned(),
        "statuses".to_owned(),
    ]];
    for k in &r.ops.kinds {
        let completed: u64 = k.by_status.iter().map(|(_, n)| n).sum();
        rows.push(vec![
            k.kind.clone(),
            k.issued.to_string(),
            completed.to_string(),
            k.latency.p50.to_string(),
            k.latency.p99.to_string(),
            k.latency.p999.to_string(),
            k.latency.max.to_string(),
            format!("{:.0}", k.latency.mean),
            statuses(&k.by_status),
        ]);
    }
    // The statuses column reads better left-aligned: pad it by hand.
    let width = rows
        .iter()
        .filter_map(|r| r.last())
        .map(String::len)
        .max()
        .unwrap_or(0);
    for row in &mut rows {
        if let Some(last) = row.last_mut() {
            *last = format!("{last:<width$}");
        }
    }
    table(&mut out, "  ", &rows);
    let o = &r.ops;
    let i = &r.integrity;
    let _ = writeln!(
        out,
        "  total {} issued, {} completed ({} OK, {} with an error status{}); lost {}, \
         duplicated {}, unexpected {}{}",
        o.issued,
        o.completed,
        o.completed_ok,
        o.completed_error,
        if o.completed_error > 0 {
            format!(
                ": {} explained by outages, {} not",
                o.errors_explained, o.errors_unexplained
            )
        } else {
            String::new()
        },
        o.lost,
        o.duplicated,
        o.unexpected,
        if o.cut_off > 0 {
            format!(", cut off by the time limit {}", o.cut_off)
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        out,
        "  data check: {} bytes and {} loads checked; corrupted {}, stray {}, wrong loads {}{}",
        i.bytes_checked,
        i.loads_checked,
        i.bytes_mismatched,
        i.bytes_stray,
        i.loads_mismatched,
        {
            let mut notes = Vec::new();
            if i.bytes_unknown > 0 {
                notes.push(format!(
                    "{} bytes left unknown by writes that failed",
                    i.bytes_unknown
                ));
            }
            if i.bytes_in_flight > 0 {
                notes.push(format!(
                    "{} bytes of writes still in flight at the end, of unknown fate",
                    i.bytes_in_flight
                ));
            }
            if i.loads_unjudged > 0 {
                notes.push(format!(
                    "{} loads of ordered streams not judged: they, or a store before them on \
                     the stream, were sent again (TXN-5-6)",
                    i.loads_unjudged
                ));
            }
            if notes.is_empty() {
                String::new()
            } else {
                format!(" ({})", notes.join("; "))
            }
        }
    );
    if o.refused_no_tag > 0 || o.rdma_queue_waits > 0 {
        let _ = writeln!(
            out,
            "  open-loop arrivals refused for want of a tag {}, waits for RDMA queue room {}",
            o.refused_no_tag, o.rdma_queue_waits
        );
    }

    // Throughput.
    out.push('\n');
    let t = &r.throughput;
    let tx: Vec<f64> = t.gpus.iter().map(|g| g.tx_gbps).collect();
    let (mean, min, max) = if tx.is_empty() {
        (0.0, 0.0, 0.0)
    } else {
        (
            tx.iter().sum::<f64>() / tx.len() as f64,
            tx.iter().copied().fold(f64::INFINITY, f64::min),
            tx.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        )
    };
    let util: Vec<f64> = t.gpus.iter().map(|g| g.wire_utilisation).collect();
    let util_mean = util.iter().sum::<f64>() / util.len().max(1) as f64;
    let _ = writeln!(
        out,
        "Throughput per GPU over {} of traffic (DATA payload sent, Gb/s; line rate {} Gb/s per \
         GPU)",
        time(t.window_ns),
        t.gpu_line_rate_gbps
    );
    let _ = writeln!(
        out,
        "  mean {mean:.1}, min {min:.1}, max {max:.1}; transmitters busy {:.1}% of the time on \
         average",
        util_mean * 100.0
    );
    if s.topology.kind == TopologyKind::BackToBack {
        let _ = writeln!(
            out,
            "  load imbalance (max / mean bytes sent): GPU ports {:.3}",
            t.port_imbalance
        );
    } else {
        let _ = writeln!(
            out,
            "  load imbalance (max / mean bytes sent): GPU ports {:.3}, switch ports {:.3}",
            t.port_imbalance, t.switch_port_imbalance
        );
    }

    // Collectives.
    if !r.collectives.is_empty() {
        out.push('\n');
        let _ = writeln!(
            out,
            "Collectives (nccl-tests style: size in bytes, time per instance)"
        );
        let mut rows = vec![vec![
            "workload".to_owned(),
            "gpus".to_owned(),
            "size".to_owned(),
            "count".to_owned(),
            "time (us)".to_owned(),
            "algbw (GB/s)".to_owned(),
            "busbw (GB/s)".to_owned(),
            "line rate".to_owned(),
            "errors".to_owned(),
        ]];
        for c in &r.collectives {
            rows.push(vec![
                format!("[{}] {}", c.workload, c.name),
                c.gpus.to_string(),
                c.size_bytes.to_string(),
                c.count.to_string(),
                format!("{:.2}", c.time_ns / 1000.0),
                format!("{:.2}", c.algbw_gbytes),
                format!("{:.2}", c.busbw_gbytes),
                format!("{:.1}%", c.line_rate_share * 100.0),
                c.errors.to_string(),
            ]);
        }
        table(&mut out, "  ", &rows);
    }

    // Overhead, links, switches, endpoints.
    out.push('\n');
    let ov = &r.overhead;
    let _ = writeln!(
        out,
        "Overhead: {} B RDMA segments carry {} B of framing each, so RDMA payload is at most \
         {:.2}% of the line rate; control frames are {:.2}% and DATA payload {:.2}% of the \
         bytes on the cables",
        ov.segment_bytes,
        ov.segment_overhead_bytes,
        ov.rdma_payload_bound * 100.0,
        ov.control_share * 100.0,
        ov.data_payload_share * 100.0
    );
    let lk = &r.links;
    let _ = writeln!(
        out,
        "Link layer ({} ends): {} DATA frames, {} replayed (LLR: {} replays by NACK, {} by \
         timer), {} NACKs, {} flushes ({} for age), {} FCS errors, {} frames of unknown fate; \
         credit stalls {} ({}), credit overruns {}; {} link-ups, {} re-inits; replay buffer \
         high-water {} B, longest wait for an ACK {}",
        lk.ends,
        lk.data_frames,
        lk.frames_replayed,
        lk.replays_by_nack,
        lk.replay_timeouts,
        lk.nacks,
        lk.flushes,
        lk.flushes_aged,
        lk.fcs_errors,
        lk.frames_unknown_fate,
        lk.credit_stalls,
        time(lk.credit_stall_ns),
        lk.credit_overruns,
        lk.link_ups,
        lk.reinits,
        lk.replay_bytes_max,
        time(lk.replay_age_max_ns)
    );
    if !lk.port_stalls.is_empty() {
        let mut worst: Vec<_> = lk.port_stalls.iter().collect();
        worst.sort_by(|a, b| b.stall_ns.cmp(&a.stall_ns).then_with(|| a.end.cmp(&b.end)));
        let shown: Vec<String> = worst
            .iter()
            .take(5)
            .map(|p| format!("{} {} ({} stalls)", p.end, time(p.stall_ns), p.stalls))
            .collect();
        let _ = writeln!(
            out,
            "  credit stall time by port ({} of {} ends stalled; the JSON lists each): {}{}",
            lk.port_stalls.len(),
            lk.ends,
            shown.join(", "),
            if worst.len() > shown.len() {
                ", ..."
            } else {
                ""
            }
        );
    }
    if s.topology.kind != TopologyKind::BackToBack {
        let sw = &r.switch;
        let _ = writeln!(
            out,
            "Switches ({}): {} DATA frames forwarded; buffer high-water {} B of {} B per input \
             and VC; buffer drops {}, unroutable {}, lost to ports going down {}, malformed {}",
            r.switches,
            sw.forwarded,
            sw.held_max_bytes,
            sw.input_buffer_bytes,
            sw.buffer_drops,
            sw.unroutable,
            sw.lost_port_down,
            sw.malformed
        );
        if sw.cut_through > 0 {
            let _ = writeln!(
                out,
                "  cut through: {} frames began to leave before their last byte arrived; {} of \
                 them ended with a stomped FCS (their input frame damaged, stomped or cut); link \
                 ends: tx_stomped {}, rx_stomped {}",
                sw.cut_through, sw.stomped, r.links.tx_stomped, r.links.rx_stomped
            );
        }
    }
    let e = &r.endpoints;
    let _ = writeln!(
        out,
        "Endpoints: {} requests retried, {} moved to another port, {} responses discarded, {} \
         responses lost with their link; {} frames packed with {} transactions; reorder buffer \
         high-water {} B",
        e.retries,
        e.moved,
        e.responses_discarded,
        e.responses_lost,
        e.packed_frames,
        e.packed_txns,
        e.reorder_bytes_max
    );
    let sim = &r.sim;
    let _ = writeln!(
        out,
        "Faults injected: {} frames damaged, {} vanished, {} duplicated, {} lost on cut cables",
        sim.frames_damaged, sim.frames_dropped, sim.frames_duplicated, sim.frames_cut
    );

    // Speed.
    out.push('\n');
    let w = &r.wall;
    let _ = writeln!(
        out,
        "Simulation: {} events, {} frame-hops ({} DATA), {} DATA frames delivered to GPUs",
        sim.events, sim.frame_hops, sim.data_frame_hops, sim.data_frames_delivered
    );
    let rss = w
        .peak_rss_bytes
        .map_or_else(|| "unknown".to_owned(), |b| format!("{} MiB", b >> 20));
    let rss = match estimate {
        Some(e) => format!("{rss} (estimated at most {})", size(e)),
        None => rss,
    };
    let _ = writeln!(
        out,
        "Speed (wall clock): {:.2} s (final check {:.2} s); {:.3} M frame-hops/s, {:.3} M DATA \
         frames/s, {:.3} M events/s; simulated/wall time {:.2e}; peak RSS {rss}",
        w.seconds,
        w.check_seconds,
        w.frame_hops_per_s / 1e6,
        w.data_frames_per_s / 1e6,
        w.events_per_s / 1e6,
        w.sim_over_wall
    );
    if let Some(p) = &w.partitions {
        let _ = writeln!(
            out,
            "Partitions: {} windows; the GPUs and {} of the {} switches worked {:.2} s, the other \
             switches {:.2} s",
            p.windows,
            p.switches_with_gpus,
            r.switches,
            p.gpus_busy_seconds,
            p.switches_busy_seconds
        );
    }
    if let Some(dir) = out_dir {
        out.push('\n');
        let _ = writeln!(
            out,
            "Wrote {}/{{{METRICS_FILE}, {TIMESERIES_FILE}, {CAPTURE_FILE}, {LATENCY_SVG}, \
             {UTILISATION_SVG}, {BUSBW_SVG}}}",
            dir.display()
        );
        if let Some(c) = capture {
            let kept = if c.written < c.seen {
                format!(" (the first {} kept)", c.written)
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "Capture: cable {} ({}), {} frames{kept}, of which {} arrived damaged and {} \
                 vanished",
                c.cable, c.ends, c.seen, c.damaged, c.vanished
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A disk that is full.
    struct Full;

    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::from_raw_os_error(28))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_full_disk_is_named_as_such() {
        let writer = BufWriter::with_capacity(256, Checked::new(Full));
        let mut stream = match PcapngStream::new(writer, "gpu0.p0", "test") {
            Ok(s) => s,
            Err(e) => panic!("the header fits the buffer's first write: {e}"),
        };
        let frame = [7u8; 64];
        let mut failed = false;
        for _ in 0..8 {
            failed |= stream.write(0, &frame, None, "").is_err();
        }
        assert!(failed, "writes to a full disk succeeded");
        let why = stream.io_error().unwrap_or_default();
        assert!(why.contains("No space left on device"), "{why}");
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("16GiB"), Ok(16 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        for bad in ["", "G", "-1G", "1X", "nan", "0"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn capture_ports_parse() {
        assert_eq!(
            parse_capture_port("3:7"),
            Ok(CapturePort { gpu: 3, port: 7 })
        );
        for bad in ["3", "a:1", "1:", ":1", "-1:0", "70000:0"] {
            assert!(parse_capture_port(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_and_times_read_well() {
        assert_eq!(bytes(64), "64 B");
        assert_eq!(bytes(1 << 20), "1 MiB");
        assert_eq!(bytes(3 << 10), "3 KiB");
        assert_eq!(bytes(1000), "1000 B");
        assert_eq!(time(850), "850 ns");
        assert_eq!(time(12_345), "12.35 us");
        assert_eq!(time(1_234_567), "1.235 ms");
    }

    #[test]
    fn syntax_errors_give_line_and_column() {
        let e = parse_scenario("seed = 1\ntopology = [\n", Format::Toml)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.starts_with("line 2"), "{e}");
        let e = parse_scenario("{\"seed\": }", Format::Json)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.starts_with("line 1, column 10"), "{e}");
    }
}

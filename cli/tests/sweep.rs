//! `ethlink sweep`: a grid run on worker threads gives the same files whatever the number of
//! workers, each run's report is what running its scenario alone gives, a planned grid run
//! elsewhere and collected gives the same summary, and bad grids are refused before anything
//! runs.

mod common;

use std::path::{Path, PathBuf};

use common::{ethlink, status, stderr, stdout};
use serde_json::Value;

/// 4 GPUs of 2 ports on 2 planes, a few loads and stores and a small all-to-all.
const SMALL: &str = r#"
seed = 3
[topology]
gpus = 4
stacks = 1
ports_per_stack = 2
[[traffic]]
kind = "load_store"
ops = 60
[[traffic]]
kind = "all_to_all"
bytes_per_pair = 16384
iterations = 1
[metrics]
sample_ns = 0
"#;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-sweep-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A run's JSON without its wall-clock section, the only part that differs between two runs.
fn without_wall(text: &str) -> Value {
    let mut v: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}"));
    let wall = v.as_object_mut().and_then(|o| o.remove("wall"));
    assert!(wall.is_some(), "a run's report has a wall section");
    v
}

/// summary.csv without its wall_seconds column.
fn without_wall_column(csv: &str) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = csv
        .lines()
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect();
    let col = rows[0]
        .iter()
        .position(|c| c == "wall_seconds")
        .unwrap_or_else(|| panic!("no wall_seconds column in {csv}"));
    for r in &mut rows {
        r.remove(col);
    }
    rows
}

fn sweep(dir: &Path, scenario: &str, extra: &[&str]) -> std::process::Output {
    let out = dir.join("out");
    let mut args = vec![
        "sweep",
        "--scenario",
        scenario,
        "--out",
        out.to_str().unwrap_or_default(),
    ];
    args.extend_from_slice(extra);
    ethlink(&args, "")
}

#[test]
fn one_worker_or_two_give_the_same_files_and_each_run_is_the_run_alone() {
    let base = temp_dir("base");
    let scenario = base.join("small.toml");
    std::fs::write(&scenario, SMALL).unwrap_or_else(|e| panic!("{e}"));
    let scenario = scenario.to_str().unwrap_or_default().to_owned();
    let grid = [
        "--set",
        "switch.mode=cut_through,store_and_forward",
        "--seeds",
        "1-2",
    ];
    let one = temp_dir("one");
    let two = temp_dir("two");
    let a = sweep(&one, &scenario, &[&grid[..], &["--jobs", "1"]].concat());
    let b = sweep(&two, &scenario, &[&grid[..], &["--jobs", "2"]].concat());
    assert_eq!(status(&a), 0, "{}", stderr(&a));
    assert_eq!(status(&b), 0, "{}", stderr(&b));
    let (one, two) = (one.join("out"), two.join("out"));
    let csv = read(&one.join("summary.csv"));
    assert_eq!(stdout(&a), csv, "the summary is printed");
    assert_eq!(csv.lines().count(), 5, "a header and four runs:\n{csv}");
    assert!(csv.starts_with("run,switch.mode,seed,pass,"), "{csv}");
    assert!(
        csv.contains("\nrun-0004,\"\"\"store_and_forward\"\"\",2,true,"),
        "{csv}"
    );
    assert_eq!(
        without_wall_column(&csv),
        without_wall_column(&read(&two.join("summary.csv")))
    );
    assert_eq!(read(&one.join("sweep.json")), read(&two.join("sweep.json")));
    for n in 1..=4 {
        let name = format!("run-{n:04}");
        let toml = one.join(format!("{name}.toml"));
        assert_eq!(read(&toml), read(&two.join(format!("{name}.toml"))));
        let json = read(&one.join(format!("{name}.json")));
        assert_eq!(
            without_wall(&json),
            without_wall(&read(&two.join(format!("{name}.json"))))
        );
        // The run alone, from its own scenario file, prints the same report.
        if n == 3 {
            let alone = ethlink(
                &[
                    "run",
                    "--scenario",
                    toml.to_str().unwrap_or_default(),
                    "--json",
                ],
                "",
            );
            assert_eq!(status(&alone), 0, "{}", stderr(&alone));
            assert_eq!(without_wall(&stdout(&alone)), without_wall(&json));
        }
    }
    let run3 = without_wall(&read(&one.join("run-0003.json")));
    assert_eq!(run3["scenario"]["switch"]["mode"], "store_and_forward");
    assert_eq!(run3["scenario"]["seed"], 1);
}

#[test]
fn a_planned_grid_run_elsewhere_collects_into_the_same_summary() {
    let base = temp_dir("plan-base");
    let scenario = base.join("small.toml");
    std::fs::write(&scenario, SMALL).unwrap_or_else(|e| panic!("{e}"));
    let scenario = scenario.to_str().unwrap_or_default().to_owned();
    let grid = ["--set", "link.rx_credits=512,1024"];
    let local = temp_dir("local");
    let r = sweep(&local, &scenario, &grid);
    assert_eq!(status(&r), 0, "{}", stderr(&r));
    let batch = temp_dir("batch");
    let r = sweep(&batch, &scenario, &[&grid[..], &["--plan"]].concat());
    assert_eq!(status(&r), 0, "{}", stderr(&r));
    let dir = batch.join("out");
    assert!(!dir.join("run-0001.json").exists(), "--plan runs nothing");
    assert!(stdout(&r).contains("2 runs planned"), "{}", stdout(&r));
    // What each task of a job array does.
    for n in 1..=2 {
        let toml = dir.join(format!("run-{n:04}.toml"));
        let out = ethlink(
            &[
                "run",
                "--scenario",
                toml.to_str().unwrap_or_default(),
                "--json",
            ],
            "",
        );
        assert_eq!(status(&out), 0, "{}", stderr(&out));
        std::fs::write(dir.join(format!("run-{n:04}.json")), stdout(&out))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let c = ethlink(
        &["sweep", "--collect", dir.to_str().unwrap_or_default()],
        "",
    );
    assert_eq!(status(&c), 0, "{}", stderr(&c));
    assert_eq!(
        without_wall_column(&read(&dir.join("summary.csv"))),
        without_wall_column(&read(&local.join("out").join("summary.csv")))
    );
    // A run missing from the directory is named.
    std::fs::remove_file(dir.join("run-0002.json")).unwrap_or_else(|e| panic!("{e}"));
    let c = ethlink(
        &["sweep", "--collect", dir.to_str().unwrap_or_default()],
        "",
    );
    assert_eq!(status(&c), 2);
    assert!(stderr(&c).contains("run-0002.json"), "{}", stderr(&c));
}

#[test]
fn the_sweep_exits_with_the_worst_status_of_its_runs() {
    let dir = temp_dir("worst");
    let scenario = dir.join("small.toml");
    std::fs::write(&scenario, SMALL).unwrap_or_else(|e| panic!("{e}"));
    // Every DATA frame damaged: operations end in error, which this scenario does not expect.
    let r = sweep(
        &dir,
        scenario.to_str().unwrap_or_default(),
        &["--set", "link.loss=0.0,1.0"],
    );
    assert_eq!(status(&r), 3, "{}{}", stdout(&r), stderr(&r));
    let csv = stdout(&r);
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[1].contains(",true,true,0,"), "{csv}");
    assert!(lines[2].contains(",false,true,3,"), "{csv}");
}

#[test]
fn bad_grids_are_refused_before_anything_runs() {
    let dir = temp_dir("bad");
    let out = dir.join("out");
    let out = out.to_str().unwrap_or_default();
    for (args, needle) in [
        (vec!["--set", "lnk.ber=0.0"], "the scenario has no lnk"),
        (
            vec!["--set", "link.ber=0.0,2.0"],
            "run-0002 (link.ber = 2.0, seed = 1): link.ber",
        ),
        (vec!["--set", "link.ber"], "expected KEY=V1,V2"),
        (vec!["--seeds", "9-3"], "--seeds: the range 9-3 is empty"),
        (vec!["--set", "link.ber=a b"], "is not a TOML value"),
    ] {
        let mut all = vec!["sweep", "--out", out];
        all.extend(args.iter().copied());
        let r = ethlink(&all, "");
        assert_eq!(status(&r), 2, "{args:?}: {}", stderr(&r));
        assert!(stderr(&r).contains(needle), "{args:?}: {}", stderr(&r));
        assert!(
            !Path::new(out).join("run-0001.json").exists(),
            "{args:?} ran"
        );
    }
}

/// The rows of summary.csv as maps from column to field (no field of these grids is quoted).
fn rows(csv: &str) -> Vec<Vec<(String, String)>> {
    let mut lines = csv.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap_or_default()
        .split(',')
        .map(str::to_owned)
        .collect();
    lines
        .map(|l| {
            header
                .iter()
                .cloned()
                .zip(l.split(',').map(str::to_owned))
                .collect()
        })
        .collect()
}

/// The value at a dotted key of a run's report's scenario, as TOML would write it.
fn scenario_value(report: &Value, key: &str) -> String {
    let v = key
        .split('.')
        .try_fold(&report["scenario"], |at, k| match k.parse::<usize>() {
            Ok(i) => at.get(i),
            Err(_) => at.get(k),
        })
        .unwrap_or_else(|| panic!("the report's scenario has no {key}"));
    match v {
        Value::String(s) => format!("\"\"\"{s}\"\"\""),
        other => other.to_string(),
    }
}

#[test]
fn every_value_a_summary_row_shows_is_the_value_its_run_used() {
    let dir = temp_dir("used");
    let scenario = dir.join("small.toml");
    std::fs::write(&scenario, SMALL).unwrap_or_else(|e| panic!("{e}"));
    let scenario = scenario.to_str().unwrap_or_default().to_owned();
    // The seed swept with --set, as with --seeds: each run has its own.
    let r = sweep(
        &dir,
        &scenario,
        &[
            "--set",
            "link.rx_credits=512,1024",
            "--set",
            "seed=1,2,3",
            "--set",
            "switch.mode=cut_through",
        ],
    );
    assert_eq!(status(&r), 0, "{}", stderr(&r));
    let out = dir.join("out");
    let csv = read(&out.join("summary.csv"));
    assert!(
        csv.starts_with("run,link.rx_credits,switch.mode,seed,pass,"),
        "one seed column: {csv}"
    );
    let rows = rows(&csv);
    assert_eq!(rows.len(), 6, "{csv}");
    let mut seeds = Vec::new();
    for row in &rows {
        let name = &row[0].1;
        let report: Value = serde_json::from_str(&read(&out.join(format!("{name}.json"))))
            .unwrap_or_else(|e| panic!("{e}"));
        for (column, shown) in &row[1..4] {
            assert_eq!(
                &scenario_value(&report, column),
                shown,
                "{name}: summary.csv shows {column} = {shown}"
            );
        }
        let toml = read(&out.join(format!("{name}.toml")));
        let seed = &row[3].1;
        assert!(
            toml.lines().any(|l| l == format!("seed = {seed}")),
            "{name}.toml: {toml}"
        );
        seeds.push(seed.clone());
    }
    assert_eq!(seeds, ["1", "2", "3", "1", "2", "3"]);
    // Both ways of giving the seeds at once: refused, naming both.
    let r = sweep(&dir, &scenario, &["--set", "seed=1,2", "--seeds", "3-4"]);
    assert_eq!(status(&r), 2);
    assert!(
        stderr(&r).contains("--set seed and --seeds 3-4 both give the seeds"),
        "{}",
        stderr(&r)
    );
    let r = sweep(&dir, &scenario, &["--set", "seed=1,x"]);
    assert_eq!(status(&r), 2);
    assert!(
        stderr(&r).contains("--set seed: x is not a seed"),
        "{}",
        stderr(&r)
    );
}

/// A local sweep of SMALL in `dir`/out over `values` of link.rx_credits, seeds 1-2.
fn grid_of(dir: &Path, base: &str, values: &str) -> PathBuf {
    let scenario = dir.join("base.toml");
    std::fs::write(&scenario, base).unwrap_or_else(|e| panic!("{e}"));
    let r = sweep(
        dir,
        scenario.to_str().unwrap_or_default(),
        &[
            "--set",
            &format!("link.rx_credits={values}"),
            "--seeds",
            "1-2",
        ],
    );
    assert_eq!(status(&r), 0, "{}", stderr(&r));
    dir.join("out")
}

fn collect(dir: &Path) -> std::process::Output {
    ethlink(
        &["sweep", "--collect", dir.to_str().unwrap_or_default()],
        "",
    )
}

#[test]
fn collect_refuses_a_report_of_another_run_or_another_grid() {
    let ours = grid_of(&temp_dir("ours"), SMALL, "512,1024");
    let other_values = grid_of(&temp_dir("other-values"), SMALL, "512,2048");
    let other_base = grid_of(
        &temp_dir("other-base"),
        &SMALL.replace("ops = 60", "ops = 61"),
        "512,1024",
    );
    let c = collect(&ours);
    assert_eq!(status(&c), 0, "{}", stderr(&c));
    let good = read(&ours.join("run-0004.json"));
    for (from, needle) in [
        // Another run of the same grid, under this run's name.
        (
            ours.join("run-0003.json"),
            "its scenario has seed = 1, where run-0004 has seed = 2",
        ),
        // The run of the same name in a grid with other values of the key.
        (
            other_values.join("run-0004.json"),
            "its scenario has link.rx_credits = 2048, where run-0004 has link.rx_credits = 1024",
        ),
        // The run of the same name in a grid of another base scenario.
        (
            other_base.join("run-0004.json"),
            "its scenario has traffic.0.ops = 61, where run-0004 has traffic.0.ops = 60",
        ),
    ] {
        std::fs::copy(&from, ours.join("run-0004.json")).unwrap_or_else(|e| panic!("{e}"));
        let c = collect(&ours);
        assert_eq!(status(&c), 2, "{}: {}", from.display(), stdout(&c));
        let err = stderr(&c);
        let file = ours.join("run-0004.json");
        assert!(
            err.contains(&format!(
                "{} is not the report of run-0004 of this grid",
                file.display()
            )),
            "{err}"
        );
        assert!(err.contains(needle), "{err}");
    }
    // A report of another grid whose keys differ: this grid's plan is another grid's.
    let other_keys = temp_dir("other-keys");
    let scenario = other_keys.join("base.toml");
    std::fs::write(&scenario, SMALL).unwrap_or_else(|e| panic!("{e}"));
    let r = sweep(
        &other_keys,
        scenario.to_str().unwrap_or_default(),
        &["--set", "link.ber=0.0,1e-12", "--seeds", "1-2"],
    );
    assert_eq!(status(&r), 0, "{}", stderr(&r));
    std::fs::copy(
        other_keys.join("out").join("run-0004.json"),
        ours.join("run-0004.json"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let c = collect(&ours);
    assert_eq!(status(&c), 2);
    assert!(
        stderr(&c).contains("run-0004.json is not the report of run-0004"),
        "{}",
        stderr(&c)
    );
    // Its own report again: collected.
    std::fs::write(ours.join("run-0004.json"), good).unwrap_or_else(|e| panic!("{e}"));
    let c = collect(&ours);
    assert_eq!(status(&c), 0, "{}", stderr(&c));
}

#[test]
fn a_key_given_twice_or_inside_another_is_refused() {
    let dir = temp_dir("twice");
    let out = dir.join("out");
    let out = out.to_str().unwrap_or_default();
    for (args, needle) in [
        (
            vec!["--set", "link.ber=1e-9", "--set", "link.ber=1e-10"],
            "--set link.ber: the key is given twice",
        ),
        (
            vec!["--set", "traffic.0.ops=5", "--set", "traffic.00.ops=6"],
            "--set traffic.0.ops and --set traffic.00.ops: the same key given twice",
        ),
        (
            vec!["--set", "link.ber=1e-9", "--set", "link={ber=0.0}"],
            "--set link.ber and --set link: link.ber is part of link",
        ),
    ] {
        let mut all = vec!["sweep", "--out", out, "--plan"];
        all.extend(args.iter().copied());
        let r = ethlink(&all, "");
        assert_eq!(status(&r), 2, "{args:?}: {}", stdout(&r));
        assert!(stderr(&r).contains(needle), "{args:?}: {}", stderr(&r));
        assert!(
            !Path::new(out).join("sweep.json").exists(),
            "{args:?} planned"
        );
    }
}

#[test]
fn values_that_are_not_numbers_are_named_as_written() {
    let dir = temp_dir("nan");
    let out = dir.join("out");
    let out = out.to_str().unwrap_or_default();
    for (key, value, says) in [
        ("link.ber", "nan", "NaN is not a probability"),
        ("link.ber", "inf", "inf is not a probability"),
        ("link.ber", "-inf", "-inf is not a probability"),
        ("link.ber", "-1e-9", "-1e-9 is not a probability"),
        ("link.loss", "nan", "NaN is not a probability"),
        ("link.drop", "+inf", "inf is not a probability"),
        ("link.duplicate", "-0.5", "-0.5 is not a probability"),
        ("link.control_loss", "nan", "NaN is not a probability"),
        ("link.rate_gbps", "nan", "NaN is not a positive number"),
        ("link.rate_gbps", "-inf", "-inf is not a positive number"),
        ("link.rate_gbps", "-400", "-400 is not a positive number"),
        ("link.cable_m", "inf", "inf is not a length"),
        ("link.cable_m", "-1.5", "-1.5 is not a length"),
        ("link.propagation_ns", "nan", "NaN is not a delay"),
        ("traffic.0.read_share", "nan", "NaN is not a probability"),
        ("traffic.0.locality", "inf", "inf is not a probability"),
        (
            "traffic.0.ordered_share",
            "-inf",
            "-inf is not a probability",
        ),
        ("traffic.0.rate_mops", "nan", "NaN is not a rate"),
        (
            "traffic.0.sizes.0.weight",
            "-inf",
            "-inf is not a positive number",
        ),
    ] {
        let set = format!("{key}={value}");
        let r = ethlink(&["sweep", "--out", out, "--plan", "--set", &set], "");
        assert_eq!(status(&r), 2, "{set}: {}", stdout(&r));
        let err = stderr(&r);
        assert!(
            err.contains(&format!(
                "run-0001 ({key} = {value}, seed = 1): {key}: {says}"
            )),
            "{set}: {err}"
        );
        assert!(!err.contains("null"), "{set}: {err}");
    }
}

#[test]
fn values_are_one_each_and_none_is_dropped() {
    let dir = temp_dir("values");
    let out = dir.join("out");
    let out = out.to_str().unwrap_or_default();
    for (set, says) in [
        // An empty value between commas is a mistake, not one value less.
        (
            "link.ber=1e-9,,1e-10",
            "--set link.ber: an empty value in \"1e-9,,1e-10\"",
        ),
        // A value is one TOML value, not a line of TOML setting other keys.
        (
            "link.ber=1e-9\nseed = 5",
            "--set link.ber: \"1e-9\\nseed = 5\" is not one TOML value",
        ),
    ] {
        let r = ethlink(&["sweep", "--out", out, "--plan", "--set", set], "");
        assert_eq!(status(&r), 2, "{set}: {}", stdout(&r));
        assert!(stderr(&r).contains(says), "{set}: {}", stderr(&r));
    }
}

#[test]
fn a_scenario_file_is_read_up_to_its_limit() {
    let dir = temp_dir("long");
    let scenario = dir.join("long.toml");
    // Two megabytes of comments: a scenario file that long is not one.
    let line = format!("# {}\n", "x".repeat(1021));
    std::fs::write(&scenario, line.repeat(2048)).unwrap_or_else(|e| panic!("{e}"));
    let r = sweep(&dir, scenario.to_str().unwrap_or_default(), &["--plan"]);
    assert_eq!(status(&r), 2, "{}", stdout(&r));
    assert!(
        stderr(&r).contains(&format!(
            "{} is longer than 1048576 bytes, the most this command reads",
            scenario.display()
        )),
        "{}",
        stderr(&r)
    );
}

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
    let dir = std::env::temp_dir().join(format!("ethlink-sweep-{}-{name}", std::process::id()));
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

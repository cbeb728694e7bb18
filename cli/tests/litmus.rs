//! `ethlink litmus`: litmus tests on the fabric, through the binary.

mod common;

use common::{ethlink, status, stderr, stdout};

fn catalogue(name: &str) -> String {
    format!("{}/../fabric/litmus/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn a_test_prints_its_histogram_and_passes() {
    let mp = catalogue("MP+waits.toml");
    let out = ethlink(&["litmus", &mp, "--iterations", "30", "--seed", "3"], "");
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("Test MP+waits\n"), "{text}");
    assert!(text.contains("Histogram ("), "{text}");
    assert!(
        text.contains("forbidden (1:r0=1 & 1:r1=0): 0 of 30 runs"),
        "{text}"
    );
    assert!(text.contains("Observation MP+waits Never 0 30\n"), "{text}");
    assert!(
        text.contains("Model (transaction.md §4): 3 states allowed; 0 of 30 runs outside them\n"),
        "{text}"
    );
    assert!(
        text.contains("MP+waits                     Never 30 runs"),
        "{text}"
    );
    // The same seed, the same histogram.
    let again = ethlink(&["litmus", &mp, "--iterations", "30", "--seed", "3"], "");
    assert_eq!(stdout(&again), text);
}

#[test]
fn a_file_that_is_not_a_test_is_refused_naming_where() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-litmus");
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        "name = \"bad\"\n[locations]\nx = 1\n[[agents]]\ngpu = 0\nops = [\"stor x 1\"]\n",
    )
    .expect("written");
    let out = ethlink(&["litmus", &bad.display().to_string()], "");
    assert_eq!(status(&out), 2);
    assert!(
        stderr(&out).contains("agents.0.ops.0: `stor x 1` is not an operation"),
        "{}",
        stderr(&out)
    );
    // A test naming a GPU the fabric does not have is refused before anything runs.
    std::fs::write(
        &bad,
        "name = \"far\"\nforbidden = [\"x=0\"]\n[locations]\nx = 40\n[[agents]]\ngpu = 0\nops = [\"store x 1\"]\n",
    )
    .expect("written");
    let out = ethlink(&["litmus", &bad.display().to_string()], "");
    assert_eq!(status(&out), 2);
    assert!(
        stderr(&out).contains("the test names GPU 40, and the topology has 8 GPUs"),
        "{}",
        stderr(&out)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_whole_catalogue_runs_on_the_default_fabric() {
    let dir = format!("{}/../fabric/litmus", env!("CARGO_MANIFEST_DIR"));
    let tests = std::fs::read_dir(&dir)
        .expect("the catalogue")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "toml"))
        })
        .count();
    assert!(tests >= 64, "{tests} tests");
    let out = ethlink(&["litmus", &dir, "--iterations", "2", "--seed", "4"], "");
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let summary = text
        .split("Summary (forbidden states seen)\n")
        .nth(1)
        .expect("a summary");
    assert_eq!(summary.lines().count(), tests, "{summary}");
    assert!(
        summary.lines().all(|l| l.contains(" Never 2 runs")),
        "{summary}"
    );
    // The FENCE request and the port named run on the fabric.
    assert!(text.contains("Test MP+rfences\n"), "{text}");
    assert!(text.contains("Test SB+stacks\n"), "{text}");
}

#[test]
fn a_port_the_fabric_does_not_have_is_refused_before_anything_runs() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-litmus-port");
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let good = dir.join("a.toml");
    std::fs::write(
        &good,
        "name = \"a\"\nforbidden = [\"x=0\"]\n[locations]\nx = 1\n[[agents]]\ngpu = 0\n\
         ops = [\"store x 1 port 7\", \"rfence x port 7\"]\n",
    )
    .expect("written");
    let bad = dir.join("b.toml");
    std::fs::write(
        &bad,
        "name = \"b\"\nforbidden = [\"x=0\"]\n[locations]\nx = 1\n[[agents]]\ngpu = 0\n\
         ops = [\"store x 1 port 0\", \"rfence x port 8\"]\n",
    )
    .expect("written");
    // The default fabric's GPUs have 4 stacks of 2 ports: port 7 is there, port 8 is not.
    let out = ethlink(&["litmus", &dir.display().to_string()], "");
    assert_eq!(status(&out), 2);
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    assert!(
        stderr(&out).contains(
            "b.toml: agents.0.ops.1: `port 8`: the GPUs have 8 ports (4 stacks of 2), numbered 0 to 7"
        ),
        "{}",
        stderr(&out)
    );
    let out = ethlink(
        &["litmus", &good.display().to_string(), "--iterations", "5"],
        "",
    );
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("Observation a Never 0 5\n"),
        "{}",
        stdout(&out)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

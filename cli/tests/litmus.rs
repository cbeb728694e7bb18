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
        text.contains("MP+waits                     Never 30 runs"),
        "{text}"
    );
    // The same seed, the same histogram.
    let again = ethlink(&["litmus", &mp, "--iterations", "30", "--seed", "3"], "");
    assert_eq!(stdout(&again), text);
}

#[test]
fn a_file_that_is_not_a_test_is_refused_naming_where() {
    let dir = std::env::temp_dir().join(format!("ethlink-litmus-{}", std::process::id()));
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

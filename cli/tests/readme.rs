//! The README's commands do what their comments say: each `ethlink` command of its `sh` blocks
//! (written `cargo run --release -p ethlink-cli -- ...`) is run with the binary under test, and
//! its exit status is the one the comment above it gives ("exit status N"; 0 when it gives
//! none). `run` commands are left to the test script, which runs them in a release build.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{ethlink, status, stderr};

const PREFIX: &str = "cargo run --release -p ethlink-cli -- ";

fn readme() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every command line of the README's `sh` blocks with the comment lines just above it.
fn commands(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut comment = String::new();
    for line in text.lines() {
        match line.trim() {
            "```sh" => in_sh = true,
            "```" => {
                in_sh = false;
                comment.clear();
            }
            l if in_sh && l.starts_with('#') => {
                comment.push_str(l);
                comment.push('\n');
            }
            l if in_sh && !l.is_empty() => {
                out.push((l.to_owned(), std::mem::take(&mut comment)));
            }
            _ => {}
        }
    }
    out
}

#[test]
fn the_readme_commands_do_what_their_comments_say() {
    let text = readme();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut ran = 0;
    for (line, comment) in commands(&text) {
        let Some(args) = line.strip_prefix(PREFIX) else {
            continue;
        };
        let args: Vec<&str> = args.split_whitespace().collect();
        if args.first() == Some(&"run") {
            continue;
        }
        let expected = comment
            .split("exit status ")
            .nth(1)
            .and_then(|s| s.chars().next())
            .and_then(|c| c.to_digit(10))
            .map_or(0, |d| d as i32);
        // Paths in the README are relative to the repository's root.
        let args: Vec<String> = args
            .iter()
            .map(|a| {
                if a.contains('/') && root.join(a).exists() {
                    root.join(a).to_string_lossy().into_owned()
                } else {
                    (*a).to_owned()
                }
            })
            .collect();
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = ethlink(&refs, "");
        assert_eq!(status(&out), expected, "{line}\n{comment}{}", stderr(&out));
        ran += 1;
    }
    assert!(ran >= 2, "the README has {ran} ethlink commands to run");
}

#[test]
fn the_readme_says_how_to_install_and_links_the_references() {
    let text = readme();
    for needle in [
        "cargo install --path cli",
        "](docs/cli-json.md)",
        "](docs/scenarios.md)",
        "fabric/examples/",
        "](LICENSE-MIT)",
        "](LICENSE-APACHE)",
        "](CHANGELOG.md)",
        "FUZZ_SECONDS",
        "PROPTEST_CASES",
        "| 3 |",
    ] {
        assert!(text.contains(needle), "the README lacks {needle:?}");
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    for file in ["LICENSE-MIT", "LICENSE-APACHE", "CHANGELOG.md"] {
        assert!(root.join(file).is_file(), "{file} is missing");
    }
}

#[test]
fn the_readme_tshark_line_shows_only_the_deliberate_bad_fcs() {
    if std::env::var("ETHLINK_SKIP_TSHARK").is_ok_and(|v| v == "1") {
        return;
    }
    let text = readme();
    let (line, comment) = commands(&text)
        .into_iter()
        .find(|(l, _)| l.starts_with("tshark "))
        .unwrap_or_else(|| panic!("no tshark line in the README"));
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let args: Vec<&str> = line.split_whitespace().skip(1).collect();
    let out = Command::new("tshark")
        .args(&args)
        .current_dir(&root)
        .output()
        .unwrap_or_else(|e| panic!("cannot run tshark ({e}); ETHLINK_SKIP_TSHARK=1 skips this"));
    let table = String::from_utf8_lossy(&out.stdout);
    let bad = table
        .lines()
        .filter(|l| l.ends_with("\t0") || l.ends_with("Bad"))
        .count();
    assert!(
        comment.contains("four vectors built with a bad FCS on purpose"),
        "{comment}"
    );
    assert_eq!(bad, 4, "{table}");
}

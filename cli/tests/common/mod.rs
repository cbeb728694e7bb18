//! Functions shared by the integration tests.

#![allow(dead_code, unreachable_pub)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use ethlink_cli::vectors::VectorFile;

/// The committed vectors directory.
pub fn vectors_dir() -> PathBuf {
    let cli = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    cli.parent().unwrap_or(&cli).join("conformance/vectors")
}

/// The committed vectors.json, parsed.
pub fn committed_vectors() -> VectorFile {
    let path = vectors_dir().join("vectors.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}; run `cargo run -p ethlink-cli -- vectors --out conformance/vectors`",
            path.display()
        )
    });
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs the `ethlink` binary with `args` and `stdin`.
pub fn ethlink(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ethlink"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start ethlink: {e}"));
    if let Some(mut input) = child.stdin.take() {
        input
            .write_all(stdin.as_bytes())
            .unwrap_or_else(|e| panic!("cannot write stdin: {e}"));
    }
    child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("ethlink did not finish: {e}"))
}

/// Standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The exit status, -1 when killed by a signal.
pub fn status(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

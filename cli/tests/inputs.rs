//! What `decode` and `encode` read is bounded: hex on standard input up to 1 MiB, encode's JSON
//! read as it streams, one frame's object at a time, each up to 1 MiB, so that an endless input
//! (`/dev/zero`) ends with a message naming the source and the limit, and a long array of
//! frames is encoded in memory far below its size.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{ethlink, status, stderr, stdout, vectors_dir};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-inputs-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// What a bounded run gave: its exit status (-1 when killed), standard output and error.
struct Ran {
    status: i32,
    stdout: String,
    stderr: String,
}

/// Runs `ethlink args` with standard input from the shell command `feed` (`cat FILE`, `cat
/// /dev/zero`), its data segment limited to `data_kib` KiB (`ulimit -d`, which bounds the
/// heap), and killed after 60 seconds: a command that reads without bound fails here instead
/// of taking the machine's memory. Its output goes to files, so that nothing waits on a full
/// pipe.
fn bounded(args: &[&str], feed: &str, data_kib: u64) -> Ran {
    let dir = temp_dir(&format!("run-{}", RUNS.fetch_add(1, Ordering::Relaxed)));
    let (out, err) = (dir.join("stdout"), dir.join("stderr"));
    let file =
        |p: &Path| std::fs::File::create(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -d {data_kib} && {{ {feed}; }} | exec \"$0\" \"$@\""
        ))
        .arg(env!("CARGO_BIN_EXE_ethlink"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(file(&out)))
        .stderr(Stdio::from(file(&err)))
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start ethlink: {e}"));
    let start = Instant::now();
    let status = loop {
        if let Ok(Some(s)) = child.try_wait() {
            break s.code().unwrap_or(-1);
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            break -1;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let read =
        |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
    Ran {
        status,
        stdout: read(&out),
        stderr: read(&err),
    }
}

/// `cat PATH`, for [`bounded`].
fn cat(path: &Path) -> String {
    format!("cat '{}'", path.display())
}

static RUNS: AtomicUsize = AtomicUsize::new(0);

#[test]
fn decode_reads_at_most_a_mebibyte_of_hex_from_standard_input() {
    let out = bounded(&["decode"], "cat /dev/zero", 64 << 10);
    assert_eq!(out.status, 2, "{}", out.stderr);
    assert_eq!(
        out.stderr,
        "error: standard input is longer than 1048576 bytes, the most this command reads\n"
    );
    // Two megabytes of hex digits: refused the same way, not decoded as one frame.
    let dir = temp_dir("hex");
    let long = dir.join("long.hex");
    std::fs::write(&long, "00 ".repeat(700_000)).unwrap_or_else(|e| panic!("{e}"));
    let out = bounded(&["decode"], &cat(&long), 64 << 10);
    assert_eq!(out.status, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("standard input is longer than 1048576 bytes"),
        "{}",
        out.stderr
    );
    // A frame written with all the room a mebibyte leaves is still read.
    let frame = vector_hex("ack");
    let padded = format!("{frame}{}", "\n".repeat((1 << 20) - frame.len()));
    let fits = dir.join("fits.hex");
    std::fs::write(&fits, padded).unwrap_or_else(|e| panic!("{e}"));
    let out = bounded(&["decode"], &cat(&fits), 64 << 10);
    assert_eq!(out.status, 0, "{}", out.stderr);
}

#[test]
fn encode_of_an_endless_input_ends_at_once() {
    let out = bounded(&["encode", "--json", "/dev/zero"], "true", 64 << 10);
    assert_eq!(out.status, 2, "{}", out.stderr);
    assert_eq!(
        out.stderr,
        "error: /dev/zero is longer than 1048576 bytes, the most this command reads\n"
    );
    let out = bounded(&["encode"], "cat /dev/zero", 64 << 10);
    assert_eq!(out.status, 2, "{}", out.stderr);
    assert_eq!(
        out.stderr,
        "error: standard input is longer than 1048576 bytes, the most this command reads\n"
    );
    // An array whose first element never ends.
    let out = bounded(&["encode"], "printf '[ '; cat /dev/zero", 64 << 10);
    assert_eq!(out.status, 2, "{}", out.stderr);
    assert_eq!(
        out.stderr,
        "error: standard input: the frame object [0] is longer than 1048576 bytes, the most one \
         frame's JSON may take\n"
    );
}

/// The hex of the named vector.
fn vector_hex(name: &str) -> String {
    common::committed_vectors()
        .vectors
        .iter()
        .find(|v| v.name == name)
        .map(|v| v.hex.clone())
        .unwrap_or_else(|| panic!("no vector {name}"))
}

/// `decode --pcap --jsonl` of the committed vectors: the JSON of every well-formed frame.
fn well_formed_frames() -> Vec<serde_json::Value> {
    let path = vectors_dir().join("vectors.pcapng");
    let out = ethlink(
        &["decode", "--pcap", &path.to_string_lossy(), "--jsonl"],
        "",
    );
    stdout(&out)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v.get("error").is_none() && v.get("capture_error").is_none())
        .collect()
}

#[test]
fn encode_reads_one_frame_object_at_a_time() {
    let frames = well_formed_frames();
    assert!(frames.len() > 50, "{}", frames.len());
    // About 8 MB of JSON, as `decode --json` prints it: encoded in a heap of 32 MiB, where
    // reading it whole, then into a tree of values, took several times its size.
    let mut text = String::from("[\n");
    let mut count = 0;
    while text.len() < 8_000_000 {
        for f in &frames {
            if count > 0 {
                text.push_str(",\n");
            }
            text.push_str(&serde_json::to_string_pretty(f).unwrap_or_default());
            count += 1;
        }
    }
    text.push_str("\n]\n");
    let dir = temp_dir("many");
    let path = dir.join("frames.json");
    std::fs::write(&path, &text).unwrap_or_else(|e| panic!("{e}"));
    let out = bounded(&["encode"], &cat(&path), 32 << 10);
    let all = out.stdout.clone();
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(out.stdout.lines().count(), count);
    // The same frames one by one give the same lines.
    let first: Vec<String> = frames
        .iter()
        .map(|f| {
            let out = ethlink(&["encode"], &f.to_string());
            assert_eq!(status(&out), 0, "{}", stderr(&out));
            stdout(&out)
        })
        .collect();
    assert_eq!(
        all.lines().take(frames.len()).collect::<Vec<_>>(),
        first.iter().map(|l| l.trim_end()).collect::<Vec<_>>()
    );
}

#[test]
fn a_frame_object_beyond_its_limit_is_refused_naming_it() {
    let frames = well_formed_frames();
    let mut long = frames.first().cloned().unwrap_or_default();
    long["comment"] = serde_json::Value::String("x".repeat(2 << 20));
    let array = serde_json::Value::Array(vec![frames[0].clone(), long]);
    let dir = temp_dir("long-frame");
    let path = dir.join("frames.json");
    std::fs::write(&path, array.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let out = ethlink(&["encode", "--json", &path.to_string_lossy()], "");
    assert_eq!(status(&out), 2, "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "error: {}: the frame object [1] is longer than 1048576 bytes, the most one frame's \
             JSON may take\n",
            path.display()
        )
    );
}

#[test]
fn help_states_the_limits() {
    let decode = stdout(&ethlink(&["decode", "--help"], ""));
    assert!(decode.contains("up to 1 MiB"), "{decode}");
    let encode = stdout(&ethlink(&["encode", "--help"], ""));
    assert!(encode.contains("up to 4 GiB"), "{encode}");
    assert!(encode.contains("1 MiB"), "{encode}");
}

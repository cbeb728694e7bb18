//! `ethlink conformance` against devices and surroundings that end processes, crash, fill the
//! disk, close the pipe or are interrupted: the verdict and the reports stay true, whole, or
//! absent, and no device outlives the harness.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{ethlink, status, stderr, stdout};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_ethlink")
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-hostile-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The reference library beside the `ethlink` binary.
fn library() -> PathBuf {
    let dir = Path::new(exe()).parent().unwrap();
    let name = format!(
        "{}ethlink_ffi{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    [dir.join(&name), dir.join("deps").join(&name)]
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} not found beside {}", dir.display()))
}

/// conformance/tests/hostile/wrap.c built with `mode` into `dir`.
fn wrap(dir: &Path, mode: &str) -> PathBuf {
    let out = dir.join(format!("wrap_{mode}.so"));
    let real = std::fs::canonicalize(library()).unwrap();
    let ok = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1"])
        .arg(format!("-DMODE_{mode}"))
        .arg(format!("-DREAL_LIB=\"{}\"", real.display()))
        .arg("-I")
        .arg(root().join("include"))
        .arg(root().join("conformance/tests/hostile/wrap.c"))
        .arg("-o")
        .arg(&out)
        .arg("-ldl")
        .status()
        .expect("a C compiler (cc) builds the libraries of these tests")
        .success();
    assert!(ok, "cc failed for {mode}");
    out
}

/// A Python device: answers like a link end that never comes up, with `twist` run on each
/// answer `a` to request `m` before it is written.
fn device(dir: &Path, name: &str, role: &str, twist: &str) -> String {
    let body = format!(
        "import json, sys, time\n\
         P = {{'vcs': 4, 'credit_size': 64, 'rx_credits': 512, 'credit_overhead': 0, \
         'mfs': 9216, 'llr_window': 524288, 'replay_max_frames': 115, 'replay_max_bytes': 58768, \
         'ack_spacing': 2048, 'ack_timer_ns': 500, 'replay_timer_ns': 5000, \
         'replay_count_max': 3, 'cf_min_credits': 8, 'cf_min_interval_ns': 100, \
         'cf_max_interval_ns': 2000, 'cc_interval_ns': 10000, 'init_interval_ns': 1000, 'llr_max_age_ns': 25000}}\n\
         for line in sys.stdin:\n    \
             m = json.loads(line); op = m['op']\n    \
             if op == 'hello': a = {{'ok': True, 'version': 2, 'name': 'script', 'role': '{role}', 'caps': [], 'ports': 1}}\n    \
             elif op == 'reset': a = {{'ok': True, 'params': P}}\n    \
             elif op == 'advance': a = {{'ok': True, 'out': []}}\n    \
             elif op == 'counters': a = {{'ok': True, 'counters': {{}}}}\n    \
             else: a = {{'ok': True}}\n    \
             a['seq'] = m['seq']\n{}\n    \
             sys.stdout.write(json.dumps(a) + '\\n'); sys.stdout.flush()\n    \
             if op == 'bye': break\n",
        twist
            .lines()
            .map(|l| format!("    {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let path = dir.join(format!("{name}.py"));
    std::fs::write(&path, body).unwrap();
    format!("python3 {}", path.display())
}

fn json_of(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn a_device_of_another_role_than_asked_is_refused_with_exit_2() {
    let dir = temp_dir("role");
    let cmd = device(&dir, "endpoint", "endpoint", "");
    let out = ethlink(
        &["conformance", "--role", "link_end", "--dut-cmd", &cmd],
        "",
    );
    assert_eq!(status(&out), 2, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stderr(&out).contains("the device says it is an endpoint (its hello)"),
        "{}",
        stderr(&out)
    );
    assert!(!stdout(&out).contains("PASS"), "{}", stdout(&out));
}

#[test]
fn a_library_that_calls_exit_cannot_end_the_run_with_status_0() {
    let dir = temp_dir("exit");
    let lib = wrap(&dir, "EXIT");
    let json = dir.join("r.json");
    let out = ethlink(
        &[
            "conformance",
            "--dut-lib",
            lib.to_str().unwrap(),
            "--filter",
            "LE-LLR-?",
            "--json",
            json.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(status(&out), 1, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stderr(&out).contains("the library under test ended the process (it called exit)"),
        "{}",
        stderr(&out)
    );
    // Isolated, it costs its case: the run ends, reports and all.
    let out = ethlink(
        &[
            "conformance",
            "--dut-lib",
            lib.to_str().unwrap(),
            "--isolate",
            "--filter",
            "LE-LLR-?",
            "--json",
            json.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(status(&out), 1, "{}{}", stdout(&out), stderr(&out));
    let v = json_of(&json);
    let first = &v["cases"][0];
    assert_eq!(first["id"], "LE-LLR-1");
    assert_eq!(first["verdict"], "HarnessError");
    assert!(
        first["message"]
            .as_str()
            .unwrap()
            .contains("the process exited by itself: exit status: 0"),
        "{first}"
    );
    assert!(stdout(&out).contains("result: FAIL"), "{}", stdout(&out));
}

#[test]
fn a_library_that_crashes_in_isolation_leaves_every_report() {
    let dir = temp_dir("crash");
    let lib = wrap(&dir, "CRASH");
    let (json, junit, pcaps) = (dir.join("r.json"), dir.join("r.xml"), dir.join("pcap"));
    let out = ethlink(
        &[
            "conformance",
            "--dut-lib",
            lib.to_str().unwrap(),
            "--isolate",
            "--filter",
            "LE-LLR-?",
            "--jobs",
            "2",
            "--json",
            json.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
            "--pcap-dir",
            pcaps.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(status(&out), 1, "{}{}", stdout(&out), stderr(&out));
    let v = json_of(&json);
    let errors = v["totals"]["HarnessError"].as_u64().unwrap_or(0);
    assert!(errors > 0, "{v}");
    assert!(
        std::fs::read_to_string(&junit)
            .unwrap()
            .ends_with("</testsuites>\n")
    );
    for c in v["cases"].as_array().unwrap() {
        if c["verdict"] == "HarnessError" {
            let p = pcaps.join(format!("{}.pcapng", c["id"].as_str().unwrap()));
            assert!(p.is_file(), "no capture {}", p.display());
        }
    }
}

#[test]
fn a_closed_pipe_after_the_first_line_keeps_the_reports_and_the_verdict() {
    let dir = temp_dir("pipe");
    // A device that dies in every case: a summary far longer than a pipe's buffer.
    let cmd = device(
        &dir,
        "dies",
        "link_end",
        "if op == 'advance': sys.stderr.write(('assertion failed: ' + 'x' * 200 + '\\n') * 20); sys.exit(3)",
    );
    let (json, junit) = (dir.join("r.json"), dir.join("r.xml"));
    let script = format!(
        "set -o pipefail; '{}' conformance --dut-cmd '{cmd}' --filter 'LE-LLR-*' --jobs 2 --json '{}' \
         --junit '{}' | head -1",
        exe(),
        json.display(),
        junit.display()
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    // The verdict: the cases could not be judged.
    assert_eq!(status(&out), 1, "{}{}", stdout(&out), stderr(&out));
    assert_eq!(stdout(&out).lines().count(), 1);
    assert_eq!(json_of(&json)["passed"], false);
    assert!(
        std::fs::read_to_string(&junit)
            .unwrap()
            .ends_with("</testsuites>\n")
    );
}

/// Runs `ethlink args` with a file-size limit of `kib` KiB (writes beyond it fail, as on a full
/// disk).
fn with_file_limit(kib: u32, args: &str) -> std::process::Output {
    Command::new("bash")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {kib}; exec '{}' {args}",
            exe()
        ))
        .output()
        .unwrap()
}

#[test]
fn a_full_disk_leaves_no_truncated_report_under_its_name() {
    let dir = temp_dir("full");
    let (json, junit) = (dir.join("r.json"), dir.join("r.xml"));
    let out = with_file_limit(
        16,
        &format!(
            "conformance --junit '{}' --json '{}'",
            junit.display(),
            json.display()
        ),
    );
    assert_eq!(status(&out), 2, "{}{}", stdout(&out), stderr(&out));
    assert!(stderr(&out).contains("cannot write"), "{}", stderr(&out));
    assert!(
        !json.exists() && !junit.exists(),
        "a truncated report was left"
    );
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
    // The golden vectors too.
    let out = with_file_limit(16, &format!("vectors --out '{}'", dir.display()));
    assert_eq!(status(&out), 2, "{}{}", stdout(&out), stderr(&out));
    assert!(!dir.join("vectors.json").exists());
    assert!(!dir.join(".vectors.json.partial").exists());
}

#[test]
fn a_harness_error_before_any_frame_still_gets_its_capture() {
    let dir = temp_dir("capture");
    let cmd = device(
        &dir,
        "no_reset",
        "link_end",
        "if op == 'reset': a = {'ok': False, 'error': 'no model loaded', 'seq': m['seq']}",
    );
    let pcaps = dir.join("pcap");
    let out = ethlink(
        &[
            "conformance",
            "--dut-cmd",
            &cmd,
            "--filter",
            "LE-INIT-1",
            "--pcap-dir",
            pcaps.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(status(&out), 1, "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("no model loaded"), "{}", stdout(&out));
    let cap = std::fs::read(pcaps.join("LE-INIT-1.pcapng")).unwrap();
    // A section and its interface, no packet.
    let mut reader = pcap_file::pcapng::PcapNgReader::new(&cap[..]).unwrap();
    let mut interfaces = 0;
    while let Some(block) = reader.next_block() {
        match block.unwrap() {
            pcap_file::pcapng::Block::InterfaceDescription(_) => interfaces += 1,
            pcap_file::pcapng::Block::EnhancedPacket(_) => panic!("a packet"),
            _ => {}
        }
    }
    assert_eq!(interfaces, 1);
}

#[test]
fn a_library_named_bare_is_the_file_in_the_current_directory() {
    let dir = temp_dir("bare");
    std::fs::copy(library(), dir.join("wrap.so")).unwrap();
    let out = Command::new(exe())
        .args([
            "conformance",
            "--dut-lib",
            "wrap.so",
            "--filter",
            "LE-INIT-1",
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(status(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let out = Command::new(exe())
        .args(["conformance", "--dut-lib", "gone.so"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(status(&out), 2);
    assert!(
        stderr(&out).contains("--dut-lib gone.so: No such file or directory")
            && stderr(&out).contains("not searched for on the loader's path"),
        "{}",
        stderr(&out)
    );
}

/// The process ids whose command line contains `needle`.
fn running(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
            String::from_utf8_lossy(&cmd)
                .replace('\0', " ")
                .contains(needle)
                .then_some(pid)
        })
        .collect()
}

#[test]
fn an_interrupt_ends_the_devices_with_the_harness() {
    let dir = temp_dir("interrupt");
    // Each device answers hello, then hangs in its reset; its script's path marks it.
    let cmd = device(
        &dir,
        "hangs",
        "link_end",
        "if op == 'reset': time.sleep(1000)",
    );
    let mut h = Command::new(exe())
        .args(["conformance", "--dut-cmd", &cmd, "--jobs", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let marker = dir.join("hangs.py").display().to_string();
    let until = Instant::now() + Duration::from_secs(30);
    while running(&marker).len() < 2 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(running(&marker).len() >= 2, "the devices did not start");
    let ok = Command::new("kill")
        .args(["-INT", &h.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let code = h.wait().unwrap();
    assert_eq!(code.code(), Some(130));
    let until = Instant::now() + Duration::from_secs(10);
    while !running(&marker).is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(running(&marker).is_empty(), "devices outlived the harness");
}

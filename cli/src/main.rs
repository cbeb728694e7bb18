//! The `ethlink` binary: parses the command line and hands it to [`ethlink_cli::run()`].

use std::os::fd::AsFd;
use std::process::ExitCode;

use clap::Parser;

/// The binary's allocator. A fabric run allocates and frees a frame buffer per frame-hop, from
/// two threads when it is partitioned; jemalloc's size classes and per-thread caches serve that
/// faster than the system allocator (docs/performance.md, "The binary's allocator"). The
/// libraries choose no allocator: a program embedding them keeps its own.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = ethlink_cli::Cli::parse();
    // Writes to a closed standard output would be lost without an error: say so instead.
    if stdout_closed() {
        eprintln!("error: cannot write the output: standard output is closed");
        return ExitCode::from(ethlink_cli::EXIT_USAGE);
    }
    let (stdin, stdout) = (std::io::stdin(), std::io::stdout());
    // Standard error is not held locked: a thread that panics (a case of the conformance
    // suite, caught and reported) writes its message there, and must not wait for the command.
    let mut io = ethlink_cli::Io {
        stdin: &mut stdin.lock(),
        stdout: &mut stdout.lock(),
        stderr: &mut std::io::stderr(),
    };
    ExitCode::from(ethlink_cli::run(cli, &mut io))
}

/// Whether the process started with its standard output closed. The Rust runtime opens
/// /dev/null read-write in place of a closed standard descriptor before `main`, so a closed
/// standard output is either still closed or /dev/null opened read-write (a shell's `>
/// /dev/null` opens it write-only).
fn stdout_closed() -> bool {
    if std::io::stdout().as_fd().try_clone_to_owned().is_err() {
        return true;
    }
    let target = std::fs::read_link("/proc/self/fd/1");
    if !target.is_ok_and(|t| t == std::path::Path::new("/dev/null")) {
        return false;
    }
    let Ok(info) = std::fs::read_to_string("/proc/self/fdinfo/1") else {
        return false;
    };
    info.lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
        // O_ACCMODE 3, O_RDWR 2.
        .is_some_and(|flags| flags & 3 == 2)
}

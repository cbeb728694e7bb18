//! An external device: any process that speaks the line protocol of docs/conformance.md over its
//! standard input and output, one JSON object per line each way.
//!
//! The process is started as `sh -c COMMAND` (or as a program with its arguments), in a process
//! group of its own. A writer thread feeds its standard input, a reader thread turns its standard
//! output into lines on a channel, and a third keeps the last lines of its standard error for
//! error messages. Every request carries a sequence number the answer must echo, so an answer
//! given twice or out of turn is told from the answer to the next request. Every request waits at
//! most the request time limit for its answer, and every case (from one `reset` to the next) at
//! most the case time limit: a device that crashes, hangs, closes its output, prints something
//! that is not JSON or answers out of protocol is killed and every call after that fails with
//! [`DeviceError::Broken`] naming the first reason and the last lines of its standard error.
//! Nothing here panics, blocks for longer than the limits or keeps more than a bounded amount of
//! what the device writes; [`kill_all`] ends every device still running (the command line calls
//! it when it is interrupted).

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded, unbounded};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::boundary::{MAX_TEXT, device_text};
use crate::device::{
    Advanced, Counters, Description, Device, DeviceError, LinkParams, Output, PROTOCOL_VERSION,
    Reply, Request, Setup, from_hex, to_hex,
};

/// The limits an external device runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest wait for the answer to one request.
    pub request: Duration,
    /// Longest wall time of one case, from its `reset` to the last answer.
    pub case: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            request: Duration::from_secs(10),
            case: Duration::from_secs(60),
        }
    }
}

/// Lines of the device's standard error kept for error messages.
pub const STDERR_LINES: usize = 20;
/// Bytes of one line of the device's standard error kept; the rest of the line is counted only.
pub const STDERR_LINE_BYTES: usize = 4096;
/// Longest answer line accepted, in bytes.
pub const MAX_LINE: usize = 16 << 20;
/// Answer lines read ahead of the harness: a device that writes more than it is asked for waits.
const READ_AHEAD: usize = 2;

/// One request of the line protocol, as it is written (docs/conformance.md §3), without the
/// sequence number every request carries.
#[derive(Debug, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op<'a> {
    /// The version handshake; the answer describes the device.
    Hello {
        /// The protocol version the harness speaks.
        version: u32,
    },
    /// A fresh start; the answer carries the link parameters in force.
    Reset {
        /// The settings.
        setup: &'a Setup,
    },
    /// A frame arrives on `port` at `time_ns`.
    Frame {
        /// The port.
        port: u16,
        /// Its arrival time.
        time_ns: u64,
        /// The whole frame, FCS included, as hex.
        hex: String,
    },
    /// The first bit of a frame arrives on `port` at `time_ns`, its last at `end_ns`: its
    /// header, given ahead to a switch that may cut it through (docs/conformance.md \u{a7}3.3).
    Header {
        /// The port.
        port: u16,
        /// When its first bit arrives.
        time_ns: u64,
        /// When its last bit will.
        end_ns: u64,
        /// The whole frame as it will end, FCS included, as hex.
        hex: String,
    },
    /// An upper-layer request at `time_ns`; the answer carries the reply.
    Request {
        /// Its time.
        time_ns: u64,
        /// The request.
        request: &'a Request,
    },
    /// Time runs to `time_ns`; the answer carries the outputs and the next deadline.
    Advance {
        /// The new time.
        time_ns: u64,
    },
    /// Read the counters.
    Counters,
    /// The end of the session: the device answers and exits.
    Bye,
}

impl Op<'_> {
    fn name(&self) -> &'static str {
        match self {
            Op::Hello { .. } => "hello",
            Op::Reset { .. } => "reset",
            Op::Frame { .. } => "frame",
            Op::Header { .. } => "header",
            Op::Request { .. } => "request",
            Op::Advance { .. } => "advance",
            Op::Counters => "counters",
            Op::Bye => "bye",
        }
    }
}

/// A request as it is written: the operation and its fields, then its sequence number.
#[derive(Serialize)]
struct Line<'o, 'a> {
    #[serde(flatten)]
    op: &'o Op<'a>,
    seq: u64,
}

// The answers, each with exactly its own fields (`ok` and `seq` taken off first): an answer of
// another shape is out of protocol, which also tells most answers meant for another request.

/// The answer to `reset`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResetAnswer {
    params: LinkParams,
}

/// The answer to `frame` and to `bye`: nothing.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Empty {}

/// The answer to `request`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestAnswer {
    #[serde(default)]
    reply: Reply,
}

/// The answer to `advance`: `out` is required, even when empty.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AdvanceAnswer {
    out: Vec<Output>,
    #[serde(default)]
    next_ns: Option<u64>,
}

/// The answer to `counters`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CountersAnswer {
    counters: Counters,
}

/// The process groups of the devices running now, for [`kill_all`].
static RUNNING: Mutex<Vec<u32>> = Mutex::new(Vec::new());
/// Set by [`kill_all`]: no device starts after it.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// Kills every external device still running, with everything each started, and lets no other
/// start: for a harness that is interrupted (Ctrl-C, a termination signal), whose devices run in
/// process groups of their own and would otherwise outlive it.
pub fn kill_all() {
    let groups = RUNNING
        .lock()
        .map(|mut r| {
            STOPPING.store(true, Ordering::SeqCst);
            std::mem::take(&mut *r)
        })
        .unwrap_or_default();
    for g in groups {
        kill_group(g);
    }
}

fn forget_group(pgid: u32) {
    if let Ok(mut r) = RUNNING.lock() {
        r.retain(|g| *g != pgid);
    }
}

/// What the harness keeps of the device's standard error: its last lines, each cut.
#[derive(Debug, Default)]
struct Tail {
    lines: VecDeque<String>,
}

impl Tail {
    fn push(&mut self, line: &[u8], dropped: usize) {
        let mut text = device_text(String::from_utf8_lossy(line).trim_end(), MAX_TEXT);
        if dropped > 0 {
            text.push_str(&format!("... ({dropped} more bytes)"));
        }
        if self.lines.len() == STDERR_LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(text);
    }
}

/// A running external device.
pub struct ExternalDevice {
    command: String,
    limits: Limits,
    child: Option<Child>,
    to_child: Option<Sender<String>>,
    from_child: Receiver<Result<String, String>>,
    stderr: Arc<Mutex<Tail>>,
    stderr_done: Receiver<()>,
    broken: Option<String>,
    case_started: Instant,
    last_time: u64,
    seq: u64,
}

impl std::fmt::Debug for ExternalDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalDevice")
            .field("command", &self.command)
            .field("broken", &self.broken)
            .finish_non_exhaustive()
    }
}

impl ExternalDevice {
    /// Starts `sh -c command` with its standard input and output piped to the harness and its
    /// standard error kept (its last lines appear in error messages).
    pub fn spawn(command: &str, limits: Limits) -> Result<ExternalDevice, DeviceError> {
        let args = [OsString::from("-c"), OsString::from(command)];
        Self::start(Path::new("sh"), &args, command.to_owned(), limits)
    }

    /// Starts `program` with `args`, without a shell, as [`ExternalDevice::spawn`] does.
    pub fn spawn_program(
        program: &Path,
        args: &[OsString],
        limits: Limits,
    ) -> Result<ExternalDevice, DeviceError> {
        let mut shown = program.display().to_string();
        for a in args {
            shown.push(' ');
            shown.push_str(&a.to_string_lossy());
        }
        Self::start(program, args, shown, limits)
    }

    fn start(
        program: &Path,
        args: &[OsString],
        shown: String,
        limits: Limits,
    ) -> Result<ExternalDevice, DeviceError> {
        let mut child = Command::new(program)
            .args(args)
            // Its own process group, so that the processes the shell starts are killed with it.
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| DeviceError::Broken(format!("cannot start `{shown}`: {e}")))?;
        if let Ok(mut r) = RUNNING.lock() {
            if STOPPING.load(Ordering::SeqCst) {
                // Started as the harness stops: it goes at once.
                drop(r);
                kill_group(child.id());
                let _ = child.kill();
                let _ = child.wait();
                return Err(DeviceError::Broken("the harness is stopping".into()));
            }
            r.push(child.id());
        }
        let (stdin, stdout, stderr) =
            match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
                (Some(i), Some(o), Some(e)) => (i, o, e),
                _ => {
                    kill_group(child.id());
                    forget_group(child.id());
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(DeviceError::Broken(
                        "cannot pipe the device's standard streams".into(),
                    ));
                }
            };
        let (to_child, writer_rx) = unbounded::<String>();
        let (reader_tx, from_child) = bounded::<Result<String, String>>(READ_AHEAD);
        let tail = Arc::new(Mutex::new(Tail::default()));
        let keep = Arc::clone(&tail);
        let (done_tx, stderr_done) = bounded::<()>(1);
        let started = spawn_thread("ext-writer", move || writer(stdin, &writer_rx))
            .and_then(|()| spawn_thread("ext-reader", move || reader(stdout, &reader_tx)))
            .and_then(|()| {
                spawn_thread("ext-stderr", move || {
                    // Dropped when the device's standard error closes.
                    let _done = done_tx;
                    keep_stderr(stderr, &keep);
                })
            });
        let device = ExternalDevice {
            command: shown,
            limits,
            child: Some(child),
            to_child: Some(to_child),
            from_child,
            stderr: tail,
            stderr_done,
            broken: None,
            case_started: Instant::now(),
            last_time: 0,
            seq: 0,
        };
        // A thread that could not start: the device is dropped, which kills it.
        started.map(|()| device)
    }

    /// The command the device was started with.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Marks the device broken for `why`, kills it and returns the error every later call gets.
    /// `gone` says the device's output has closed: it has probably exited by itself, and how it
    /// exited is worth waiting a moment for. Only an exit the device made before the harness
    /// did anything to it is reported.
    fn fail(&mut self, why: String, gone: bool) -> DeviceError {
        let exited = self.reap(if gone {
            Duration::from_millis(200)
        } else {
            Duration::ZERO
        });
        let mut msg = why;
        if let Some(status) = exited {
            msg.push_str(&format!(" (the process exited by itself: {status})"));
        }
        // Its standard error closes when it has exited or been killed: wait a little for the
        // last lines.
        let _ = self.stderr_done.recv_timeout(Duration::from_millis(200));
        let tail: Vec<String> = self
            .stderr
            .lock()
            .map(|t| t.lines.iter().cloned().collect())
            .unwrap_or_default();
        if !tail.is_empty() {
            msg.push_str("; its last lines of standard error:\n  ");
            msg.push_str(&tail.join("\n  "));
        }
        self.broken = Some(msg.clone());
        DeviceError::Broken(msg)
    }

    /// Waits up to `grace` for the process to exit by itself, with its input still open, then
    /// kills it with everything it started; returns how it exited when it did so by itself
    /// within `grace`.
    fn reap(&mut self, grace: Duration) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        let pgid = child.id();
        let until = Instant::now() + grace;
        let mut exited = None;
        loop {
            match child.try_wait() {
                Ok(Some(status)) => {
                    exited = Some(status);
                    break;
                }
                Ok(None) if Instant::now() < until => thread::sleep(Duration::from_millis(5)),
                _ => break,
            }
        }
        self.to_child = None;
        // What the shell started may outlive it.
        kill_group(pgid);
        forget_group(pgid);
        if exited.is_none() {
            let _ = child.kill();
            let _ = child.wait();
        }
        exited
    }

    /// Sends `op` with the next sequence number and returns the fields of its `ok: true`
    /// answer, without `ok` and `seq`.
    fn call(&mut self, op: &Op<'_>) -> Result<Map<String, Value>, DeviceError> {
        if let Some(why) = &self.broken {
            return Err(DeviceError::Broken(format!(
                "the device is no longer usable: {why}"
            )));
        }
        let name = op.name();
        self.seq += 1;
        let seq = self.seq;
        let line = serde_json::to_string(&Line { op, seq })
            .map_err(|e| DeviceError::Broken(format!("cannot encode {name}: {e}")))?;
        let sent = self
            .to_child
            .as_ref()
            .is_some_and(|tx| tx.send(line).is_ok());
        if !sent {
            return Err(self.fail(
                format!("cannot write the {name} request: the device's input is closed"),
                true,
            ));
        }
        let mut wait = self.limits.request;
        let mut case_bound = false;
        if !matches!(op, Op::Hello { .. } | Op::Reset { .. } | Op::Bye) {
            let left = self.limits.case.saturating_sub(self.case_started.elapsed());
            if left < wait {
                wait = left;
                case_bound = true;
            }
        }
        let answer = match self.from_child.recv_timeout(wait) {
            Ok(Ok(line)) => line,
            Ok(Err(why)) => {
                return Err(self.fail(
                    format!("while waiting for the answer to {name}: {why}"),
                    false,
                ));
            }
            Err(RecvTimeoutError::Timeout) if case_bound => {
                return Err(self.fail(
                    format!(
                        "the case ran past its wall-time limit of {:.1} s (waiting for the answer to {name})",
                        self.limits.case.as_secs_f64()
                    ),
                    false,
                ));
            }
            Err(RecvTimeoutError::Timeout) => {
                return Err(self.fail(
                    format!(
                        "no answer to {name} within {:.1} s",
                        self.limits.request.as_secs_f64()
                    ),
                    false,
                ));
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(self.fail(
                    format!("the device closed its output before answering {name}"),
                    true,
                ));
            }
        };
        let value: Value = match serde_json::from_str(&answer) {
            Ok(v) => v,
            Err(e) => {
                return Err(self.fail(
                    format!("the answer to {name} is not JSON ({e}): {}", clip(&answer)),
                    false,
                ));
            }
        };
        let Value::Object(mut obj) = value else {
            return Err(self.fail(
                format!(
                    "the answer to {name} is not a JSON object: {}",
                    clip(&answer)
                ),
                false,
            ));
        };
        match obj.remove("seq") {
            Some(v) if v.as_u64() == Some(seq) => {}
            // A device of another version answers hello without one: the version check says so.
            None if matches!(op, Op::Hello { .. }) => {}
            Some(v) => {
                return Err(self.fail(
                    format!(
                        "the answer to {name} (seq {seq}) carries seq {}: the device answered a \
                         request twice, or answered out of turn",
                        clip(&v.to_string())
                    ),
                    false,
                ));
            }
            None => {
                return Err(self.fail(
                    format!(
                        "the answer to {name} carries no seq: every answer echoes its \
                         request's seq (docs/conformance.md \u{a7}3.1)"
                    ),
                    false,
                ));
            }
        }
        match obj.remove("ok") {
            Some(Value::Bool(true)) => Ok(obj),
            Some(Value::Bool(false)) => {
                if let Some(Value::String(why)) = obj.get("refused") {
                    Err(DeviceError::Refused(device_text(why, MAX_TEXT)))
                } else if let Some(Value::String(why)) = obj.get("error") {
                    let why = device_text(why, MAX_TEXT);
                    Err(self.fail(
                        format!("the device answered {name} with an error: {why}"),
                        false,
                    ))
                } else {
                    Err(self.fail(
                        format!(
                            "the answer to {name} has ok false but neither `refused` nor `error`: {}",
                            clip(&answer)
                        ),
                        false,
                    ))
                }
            }
            _ => Err(self.fail(
                format!(
                    "the answer to {name} has no boolean `ok`: {}",
                    clip(&answer)
                ),
                false,
            )),
        }
    }

    /// Decodes the fields of an `ok` answer as `T`.
    fn decode<T: for<'de> Deserialize<'de>>(
        &mut self,
        name: &str,
        obj: Map<String, Value>,
    ) -> Result<T, DeviceError> {
        match serde_json::from_value(Value::Object(obj)) {
            Ok(v) => Ok(v),
            Err(e) => Err(self.fail(
                format!(
                    "the answer to {name} is out of protocol: {}",
                    device_text(&e.to_string(), MAX_TEXT)
                ),
                false,
            )),
        }
    }

    fn time(&mut self, name: &str, time_ns: u64) -> Result<(), DeviceError> {
        if time_ns < self.last_time {
            // The harness never does this; a guard for other users of the type.
            return Err(DeviceError::Broken(format!(
                "{name} at {time_ns} ns, before {} ns: time never goes backwards",
                self.last_time
            )));
        }
        self.last_time = time_ns;
        Ok(())
    }
}

/// Kills the process group `pgid` (the device's shell and everything it started).
fn kill_group(pgid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

fn spawn_thread(name: &str, f: impl FnOnce() + Send + 'static) -> Result<(), DeviceError> {
    thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map(|_| ())
        .map_err(|e| DeviceError::Broken(format!("cannot start a thread: {e}")))
}

fn writer(mut stdin: ChildStdin, lines: &Receiver<String>) {
    for mut line in lines.iter() {
        line.push('\n');
        if stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.flush())
            .is_err()
        {
            return;
        }
    }
}

/// Keeps the last [`STDERR_LINES`] lines of `stderr`, each cut after [`STDERR_LINE_BYTES`]:
/// however long a line, no more of it is held.
fn keep_stderr(stderr: std::process::ChildStderr, tail: &Mutex<Tail>) {
    let mut r = BufReader::new(stderr);
    let mut line = Vec::new();
    let mut dropped = 0usize;
    loop {
        let (used, ended) = match r.fill_buf() {
            Ok([]) | Err(_) => {
                if (!line.is_empty() || dropped > 0)
                    && let Ok(mut t) = tail.lock()
                {
                    t.push(&line, dropped);
                }
                return;
            }
            Ok(buf) => {
                let end = buf.iter().position(|&b| b == b'\n');
                let piece = &buf[..end.unwrap_or(buf.len())];
                let room = STDERR_LINE_BYTES.saturating_sub(line.len());
                line.extend_from_slice(&piece[..piece.len().min(room)]);
                dropped += piece.len().saturating_sub(room);
                (end.map_or(buf.len(), |e| e + 1), end.is_some())
            }
        };
        r.consume(used);
        if ended {
            if let Ok(mut t) = tail.lock() {
                t.push(&line, dropped);
            }
            line.clear();
            dropped = 0;
        }
    }
}

fn reader(stdout: std::process::ChildStdout, lines: &Sender<Result<String, String>>) {
    let mut r = BufReader::new(stdout);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let got = (&mut r)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf);
        let item = match got {
            Ok(0) => return,
            Ok(_) if buf.len() > MAX_LINE => {
                Err(format!("an answer line is longer than {MAX_LINE} bytes"))
            }
            Ok(_) => match String::from_utf8(std::mem::take(&mut buf)) {
                Ok(s) => {
                    let s = s.trim_end_matches(['\n', '\r']).to_owned();
                    if s.trim().is_empty() {
                        continue;
                    }
                    Ok(s)
                }
                Err(_) => Err("an answer line is not UTF-8".to_owned()),
            },
            Err(e) => Err(format!("cannot read the device's output: {e}")),
        };
        let stop = item.is_err();
        if lines.send(item).is_err() || stop {
            return;
        }
    }
}

/// The first 200 characters of a device's answer, made safe to show.
fn clip(s: &str) -> String {
    device_text(s, 200)
}

impl Drop for ExternalDevice {
    fn drop(&mut self) {
        if self.broken.is_none() && self.child.is_some() {
            self.seq += 1;
            let bye = serde_json::to_string(&Line {
                op: &Op::Bye,
                seq: self.seq,
            })
            .unwrap_or_default();
            let _ = self.to_child.as_ref().map(|tx| tx.send(bye));
            self.reap(Duration::from_millis(500));
        } else {
            self.reap(Duration::ZERO);
        }
    }
}

impl Device for ExternalDevice {
    fn hello(&mut self) -> Result<Description, DeviceError> {
        let obj = self.call(&Op::Hello {
            version: PROTOCOL_VERSION,
        })?;
        let version = obj.get("version").and_then(Value::as_u64);
        if version != Some(u64::from(PROTOCOL_VERSION)) {
            let seen = obj.get("version").map_or_else(
                || "no version".to_owned(),
                |v| format!("version {}", clip(&v.to_string())),
            );
            return Err(self.fail(
                format!(
                    "the device speaks {seen} of the line protocol, the harness speaks version \
                     {PROTOCOL_VERSION} (docs/conformance.md \u{a7}3.3 says what changed)"
                ),
                false,
            ));
        }
        self.decode("hello", obj)
    }

    fn reset(&mut self, setup: &Setup) -> Result<LinkParams, DeviceError> {
        self.case_started = Instant::now();
        let obj = self.call(&Op::Reset { setup })?;
        self.last_time = 0;
        let a: ResetAnswer = self.decode("reset", obj)?;
        Ok(a.params)
    }

    fn frame(&mut self, port: u16, time_ns: u64, frame: &[u8]) -> Result<(), DeviceError> {
        self.time("frame", time_ns)?;
        let obj = self.call(&Op::Frame {
            port,
            time_ns,
            hex: to_hex(frame),
        })?;
        let Empty {} = self.decode("frame", obj)?;
        Ok(())
    }

    fn header(
        &mut self,
        port: u16,
        time_ns: u64,
        end_ns: u64,
        frame: &[u8],
    ) -> Result<(), DeviceError> {
        self.time("header", time_ns)?;
        let obj = self.call(&Op::Header {
            port,
            time_ns,
            end_ns,
            hex: to_hex(frame),
        })?;
        let Empty {} = self.decode("header", obj)?;
        Ok(())
    }

    fn request(&mut self, time_ns: u64, request: &Request) -> Result<Reply, DeviceError> {
        self.time("request", time_ns)?;
        let obj = self.call(&Op::Request { time_ns, request })?;
        let a: RequestAnswer = self.decode("request", obj)?;
        Ok(a.reply)
    }

    fn advance(&mut self, time_ns: u64) -> Result<Advanced, DeviceError> {
        self.time("advance", time_ns)?;
        let obj = self.call(&Op::Advance { time_ns })?;
        let a: AdvanceAnswer = self.decode("advance", obj)?;
        Ok(Advanced {
            out: a.out,
            next_ns: a.next_ns,
        })
    }

    fn counters(&mut self) -> Result<Counters, DeviceError> {
        let obj = self.call(&Op::Counters)?;
        let a: CountersAnswer = self.decode("counters", obj)?;
        Ok(a.counters)
    }
}

/// Serves `dev` over the line protocol: reads requests from `input`, one per line, and writes
/// each answer to `out`, echoing each request's `seq`, until `bye` or the end of the input. This
/// is the device side of the protocol, as an adapter implements it; `ethlink conformance
/// --serve` uses it to offer the reference (or a library, `--dut-lib`) as an external device (to
/// compare an adapter's transcript with the reference's, to run a library in a process of its
/// own, or to test the protocol end to end). A request line longer than [`MAX_LINE`] is answered
/// with an error and skipped, never held whole.
pub fn serve(
    dev: &mut dyn Device,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = input
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(());
        }
        let (answer, bye) = if line.len() > MAX_LINE {
            // Skip the rest of the line, without keeping it.
            while !line.ends_with(b"\n") {
                line.clear();
                if input.take(1 << 16).read_until(b'\n', &mut line)? == 0 {
                    break;
                }
            }
            let why = format!("a request line is longer than {MAX_LINE} bytes");
            (serde_json::json!({"ok": false, "error": why}), false)
        } else {
            match std::str::from_utf8(&line) {
                Ok(text) if text.trim().is_empty() => continue,
                Ok(text) => serve_one(dev, text.trim()),
                Err(_) => (
                    serde_json::json!({"ok": false, "error": "a request line is not UTF-8"}),
                    false,
                ),
            }
        };
        let mut text = serde_json::to_string(&answer).unwrap_or_else(|e| {
            format!("{{\"ok\":false,\"error\":\"cannot encode the answer: {e}\"}}")
        });
        text.push('\n');
        out.write_all(text.as_bytes())?;
        out.flush()?;
        if bye {
            return Ok(());
        }
    }
}

/// A request as the device side reads it, without its `seq`.
#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum In {
    Hello {
        version: u32,
    },
    Reset {
        setup: Box<Setup>,
    },
    Frame {
        port: u16,
        time_ns: u64,
        hex: String,
    },
    Header {
        port: u16,
        time_ns: u64,
        end_ns: u64,
        hex: String,
    },
    Request {
        time_ns: u64,
        request: Request,
    },
    Advance {
        time_ns: u64,
    },
    Counters,
    Bye,
}

fn ok(fields: Value) -> Value {
    let mut obj = match fields {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    obj.insert("ok".into(), Value::Bool(true));
    Value::Object(obj)
}

fn err(e: DeviceError) -> Value {
    match e {
        DeviceError::Refused(why) => serde_json::json!({"ok": false, "refused": why}),
        DeviceError::Broken(why) => serde_json::json!({"ok": false, "error": why}),
    }
}

/// The answer to one request line, and whether it was `bye`.
fn serve_one(dev: &mut dyn Device, line: &str) -> (Value, bool) {
    let (msg, seq) = match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(mut m)) => {
            let seq = m.remove("seq");
            (serde_json::from_value::<In>(Value::Object(m)), seq)
        }
        Ok(_) => (
            Err(serde::de::Error::custom("a request is a JSON object")),
            None,
        ),
        Err(e) => (Err(e), None),
    };
    let (answer, bye) = match msg {
        Ok(msg) => answer(dev, msg),
        Err(e) => (
            serde_json::json!({"ok": false, "error": format!("not a request: {e}")}),
            false,
        ),
    };
    // Every answer echoes its request's sequence number (docs/conformance.md §3.1).
    let answer = match (answer, seq) {
        (Value::Object(mut o), Some(seq)) => {
            o.insert("seq".into(), seq);
            Value::Object(o)
        }
        (a, _) => a,
    };
    (answer, bye)
}

/// The answer to the request `msg` of [`serve_one`], and whether it was `bye`.
fn answer(dev: &mut dyn Device, msg: In) -> (Value, bool) {
    let to = |v: Result<Value, serde_json::Error>| v.unwrap_or(Value::Null);
    let answer = match msg {
        In::Hello { version } if version != PROTOCOL_VERSION => serde_json::json!({
            "ok": false,
            "error": format!("this device speaks version {PROTOCOL_VERSION} of the line protocol")
        }),
        In::Hello { .. } => match dev.hello() {
            Ok(d) => ok(to(serde_json::to_value(d))),
            Err(e) => err(e),
        },
        In::Reset { setup } => match dev.reset(&setup) {
            Ok(p) => ok(serde_json::json!({ "params": p })),
            Err(e) => err(e),
        },
        In::Frame { port, time_ns, hex } => {
            match from_hex("frame", &hex).and_then(|b| dev.frame(port, time_ns, &b)) {
                Ok(()) => ok(Value::Null),
                Err(e) => err(e),
            }
        }
        In::Header {
            port,
            time_ns,
            end_ns,
            hex,
        } => match from_hex("header", &hex).and_then(|b| dev.header(port, time_ns, end_ns, &b)) {
            Ok(()) => ok(Value::Null),
            Err(e) => err(e),
        },
        In::Request { time_ns, request } => match dev.request(time_ns, &request) {
            Ok(r) => ok(serde_json::json!({ "reply": r })),
            Err(e) => err(e),
        },
        In::Advance { time_ns } => match dev.advance(time_ns) {
            Ok(a) => ok(to(serde_json::to_value(a))),
            Err(e) => err(e),
        },
        In::Counters => match dev.counters() {
            Ok(c) => ok(serde_json::json!({ "counters": c })),
            Err(e) => err(e),
        },
        In::Bye => return (ok(Value::Null), true),
    };
    (answer, false)
}

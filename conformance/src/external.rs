//! An external device: any process that speaks the line protocol of docs/conformance.md over its
//! standard input and output, one JSON object per line each way.
//!
//! The process is started as `sh -c COMMAND`. A writer thread feeds its standard input, a reader
//! thread turns its standard output into lines on a channel, and a third keeps the last lines of
//! its standard error for error messages. Every request waits at most the request time limit for
//! its answer, and every case (from one `reset` to the next) at most the case time limit: a
//! device that crashes, hangs, closes its output, prints something that is not JSON or answers
//! out of protocol is killed and every call after that fails with [`DeviceError::Broken`] naming
//! the first reason and the last lines of its standard error. Nothing here panics or blocks for
//! longer than the limits.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded, unbounded};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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
const STDERR_LINES: usize = 20;
/// Longest answer line accepted, in bytes.
const MAX_LINE: usize = 16 << 20;

/// One request of the line protocol, as it is written (docs/conformance.md §3).
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
            Op::Request { .. } => "request",
            Op::Advance { .. } => "advance",
            Op::Counters => "counters",
            Op::Bye => "bye",
        }
    }
}

/// The answer to `reset`.
#[derive(Debug, Deserialize)]
struct ResetAnswer {
    #[serde(default)]
    params: LinkParams,
}

/// The answer to `request`.
#[derive(Debug, Deserialize)]
struct RequestAnswer {
    #[serde(default)]
    reply: Reply,
}

/// The answer to `counters`.
#[derive(Debug, Deserialize)]
struct CountersAnswer {
    counters: Counters,
}

/// A running external device.
pub struct ExternalDevice {
    command: String,
    limits: Limits,
    child: Option<Child>,
    to_child: Option<Sender<String>>,
    from_child: Receiver<Result<String, String>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    stderr_done: Receiver<()>,
    broken: Option<String>,
    case_started: Instant,
    last_advance: u64,
    last_time: u64,
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
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(command)
            // Its own process group, so that the processes the shell starts are killed with it.
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| DeviceError::Broken(format!("cannot start `sh -c {command}`: {e}")))?;
        let (stdin, stdout, stderr) =
            match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
                (Some(i), Some(o), Some(e)) => (i, o, e),
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(DeviceError::Broken(
                        "cannot pipe the device's standard streams".into(),
                    ));
                }
            };
        let (to_child, writer_rx) = unbounded::<String>();
        let (reader_tx, from_child) = bounded::<Result<String, String>>(64);
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        spawn_thread("ext-writer", move || writer(stdin, &writer_rx))?;
        spawn_thread("ext-reader", move || reader(stdout, &reader_tx))?;
        let keep = Arc::clone(&tail);
        let (done_tx, stderr_done) = bounded::<()>(1);
        spawn_thread("ext-stderr", move || {
            // Dropped when the device's standard error closes.
            let _done = done_tx;
            let mut r = BufReader::new(stderr);
            let mut line = Vec::new();
            loop {
                line.clear();
                match r.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        let text = String::from_utf8_lossy(&line).trim_end().to_owned();
                        if let Ok(mut t) = keep.lock() {
                            if t.len() == STDERR_LINES {
                                t.pop_front();
                            }
                            t.push_back(text);
                        }
                    }
                }
            }
        })?;
        Ok(ExternalDevice {
            command: command.to_owned(),
            limits,
            child: Some(child),
            to_child: Some(to_child),
            from_child,
            stderr: tail,
            stderr_done,
            broken: None,
            case_started: Instant::now(),
            last_advance: 0,
            last_time: 0,
        })
    }

    /// The command the device was started with.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Marks the device broken for `why`, kills it and returns the error every later call gets.
    fn fail(&mut self, why: String) -> DeviceError {
        // Give the process a moment to finish writing its standard error after a crash.
        let exited = self.reap(Duration::from_millis(200));
        let mut msg = why;
        if let Some(status) = exited {
            msg.push_str(&format!(" (the process exited: {status})"));
        }
        // Its standard error closes when it has exited or been killed: wait a little for the
        // last lines.
        let _ = self.stderr_done.recv_timeout(Duration::from_millis(200));
        let tail: Vec<String> = self
            .stderr
            .lock()
            .map(|t| t.iter().cloned().collect())
            .unwrap_or_default();
        if !tail.is_empty() {
            msg.push_str("; its last lines of standard error:\n  ");
            msg.push_str(&tail.join("\n  "));
        }
        self.broken = Some(msg.clone());
        DeviceError::Broken(msg)
    }

    /// Waits up to `grace` for the process to exit, then kills it; returns how it exited when it
    /// did so by itself.
    fn reap(&mut self, grace: Duration) -> Option<std::process::ExitStatus> {
        self.to_child = None;
        let mut child = self.child.take()?;
        let until = Instant::now() + grace;
        loop {
            match child.try_wait() {
                Ok(Some(status)) => {
                    // What the shell started may outlive it.
                    kill_group(child.id());
                    return Some(status);
                }
                Ok(None) if Instant::now() < until => thread::sleep(Duration::from_millis(5)),
                _ => {
                    kill_group(child.id());
                    let _ = child.kill();
                    let _ = child.wait();
                    return None;
                }
            }
        }
    }

    /// Sends `op` and returns the object of its `ok: true` answer.
    fn call(&mut self, op: &Op<'_>) -> Result<Map<String, Value>, DeviceError> {
        if let Some(why) = &self.broken {
            return Err(DeviceError::Broken(format!(
                "the device is no longer usable: {why}"
            )));
        }
        let name = op.name();
        let line = serde_json::to_string(op)
            .map_err(|e| DeviceError::Broken(format!("cannot encode {name}: {e}")))?;
        let sent = self
            .to_child
            .as_ref()
            .is_some_and(|tx| tx.send(line).is_ok());
        if !sent {
            return Err(self.fail(format!(
                "cannot write the {name} request: the device's input is closed"
            )));
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
                return Err(self.fail(format!("while waiting for the answer to {name}: {why}")));
            }
            Err(RecvTimeoutError::Timeout) if case_bound => {
                return Err(self.fail(format!(
                    "the case ran past its wall-time limit of {:.1} s (waiting for the answer to {name})",
                    self.limits.case.as_secs_f64()
                )));
            }
            Err(RecvTimeoutError::Timeout) => {
                return Err(self.fail(format!(
                    "no answer to {name} within {:.1} s",
                    self.limits.request.as_secs_f64()
                )));
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(self.fail(format!(
                    "the device closed its output before answering {name}"
                )));
            }
        };
        let value: Value = match serde_json::from_str(&answer) {
            Ok(v) => v,
            Err(e) => {
                return Err(self.fail(format!(
                    "the answer to {name} is not JSON ({e}): {}",
                    clip(&answer)
                )));
            }
        };
        let Value::Object(mut obj) = value else {
            return Err(self.fail(format!(
                "the answer to {name} is not a JSON object: {}",
                clip(&answer)
            )));
        };
        match obj.remove("ok") {
            Some(Value::Bool(true)) => Ok(obj),
            Some(Value::Bool(false)) => {
                if let Some(Value::String(why)) = obj.get("refused") {
                    Err(DeviceError::Refused(why.clone()))
                } else if let Some(Value::String(why)) = obj.get("error") {
                    let why = why.clone();
                    Err(self.fail(format!("the device answered {name} with an error: {why}")))
                } else {
                    Err(self.fail(format!(
                        "the answer to {name} has ok false but neither `refused` nor `error`: {}",
                        clip(&answer)
                    )))
                }
            }
            _ => Err(self.fail(format!(
                "the answer to {name} has no boolean `ok`: {}",
                clip(&answer)
            ))),
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
            Err(e) => Err(self.fail(format!("the answer to {name} is out of protocol: {e}"))),
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

fn reader(stdout: std::process::ChildStdout, lines: &Sender<Result<String, String>>) {
    let mut r = BufReader::new(stdout);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let got = std::io::Read::take(&mut r, MAX_LINE as u64 + 1).read_until(b'\n', &mut buf);
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

fn clip(s: &str) -> String {
    const MAX: usize = 200;
    if s.len() <= MAX {
        return s.to_owned();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

impl Drop for ExternalDevice {
    fn drop(&mut self) {
        if self.broken.is_none() && self.child.is_some() {
            let _ = self
                .to_child
                .as_ref()
                .map(|tx| tx.send(serde_json::json!({"op": "bye"}).to_string()));
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
            let seen = obj
                .get("version")
                .map_or_else(|| "no version".to_owned(), |v| format!("version {v}"));
            return Err(self.fail(format!(
                "the device speaks {seen} of the line protocol, the harness speaks version {PROTOCOL_VERSION}"
            )));
        }
        let desc: Description = self.decode("hello", obj)?;
        if desc.ports == 0 {
            return Err(self.fail("the device says it has no port".into()));
        }
        Ok(desc)
    }

    fn reset(&mut self, setup: &Setup) -> Result<LinkParams, DeviceError> {
        self.case_started = Instant::now();
        let obj = self.call(&Op::Reset { setup })?;
        self.last_advance = 0;
        self.last_time = 0;
        let a: ResetAnswer = self.decode("reset", obj)?;
        Ok(a.params)
    }

    fn frame(&mut self, port: u16, time_ns: u64, frame: &[u8]) -> Result<(), DeviceError> {
        self.time("frame", time_ns)?;
        self.call(&Op::Frame {
            port,
            time_ns,
            hex: to_hex(frame),
        })?;
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
        let mut a: Advanced = self.decode("advance", obj)?;
        let mut prev = self.last_advance;
        for o in &mut a.out {
            if let Output::Frame {
                time_ns: t, hex, ..
            } = o
            {
                if *t < prev || *t > time_ns {
                    return Err(self.fail(format!(
                        "advance to {time_ns} ns returned a frame sent at {t} ns, outside {prev}..={time_ns} ns \
                         (frames come in time order, after the previous advance and not after this one)"
                    )));
                }
                prev = *t;
                if let Err(DeviceError::Broken(why) | DeviceError::Refused(why)) =
                    from_hex("frame", hex)
                {
                    return Err(self.fail(format!("advance to {time_ns} ns: {why}")));
                }
                // Frames in upper case are accepted; the harness works in lower case.
                hex.make_ascii_lowercase();
            }
        }
        if let Some(n) = a.next_ns
            && n <= time_ns
        {
            // A deadline that is already due says "act again at once": the harness never steps
            // by less than 1 ns.
            a.next_ns = Some(time_ns + 1);
        }
        self.last_advance = time_ns;
        Ok(a)
    }

    fn counters(&mut self) -> Result<Counters, DeviceError> {
        let obj = self.call(&Op::Counters)?;
        let a: CountersAnswer = self.decode("counters", obj)?;
        Ok(a.counters)
    }
}

/// Serves `dev` over the line protocol: reads requests from `input`, one per line, and writes
/// each answer to `out`, until `bye` or the end of the input. This is the device side of the
/// protocol, as an adapter implements it; `ethlink conformance --serve` uses it to offer the
/// reference as an external device (to compare an adapter's transcript with the reference's, or
/// to test the protocol end to end).
pub fn serve(
    dev: &mut dyn Device,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            return Ok(());
        }
        if line.trim().is_empty() {
            continue;
        }
        let (answer, bye) = serve_one(dev, line.trim());
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

/// The answer to one request line, and whether it was `bye`.
fn serve_one(dev: &mut dyn Device, line: &str) -> (Value, bool) {
    #[derive(Deserialize)]
    #[serde(tag = "op", rename_all = "snake_case")]
    enum In {
        Hello {
            version: u32,
        },
        Reset {
            setup: Setup,
        },
        Frame {
            port: u16,
            time_ns: u64,
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
    let to = |v: Result<Value, serde_json::Error>| v.unwrap_or(Value::Null);
    let msg: In = match serde_json::from_str(line) {
        Ok(m) => m,
        Err(e) => {
            return (
                serde_json::json!({"ok": false, "error": format!("not a request: {e}")}),
                false,
            );
        }
    };
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

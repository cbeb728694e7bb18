//! Devices that try to fool the judge: each gets a verdict that says what it did, never a pass it
//! did not earn, and none makes the harness panic, hang or hold more than a bounded amount of
//! what it sends. The devices here are the reference link end bent one way each (in-process) and
//! small scripts that speak the line protocol (the answers, sequence numbers and standard
//! error of an external device).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ethlink_conformance::boundary::{MAX_CASE_BYTES, MAX_OUTPUTS};
use ethlink_conformance::cases::{self, common};
use ethlink_conformance::device::{
    Advanced, Counters, Description, Device, DeviceError, LinkParams, Output, Reply, Request, Role,
    Setup, to_hex,
};
use ethlink_conformance::external::{ExternalDevice, Limits};
use ethlink_conformance::reference::RefLinkEnd;
use ethlink_conformance::report::{self, Run};
use ethlink_conformance::runner::{self, CaseResult};
use ethlink_conformance::{Case, Verdict};
use ethlink_protocol::{EthernetRepr, LinkFrame, MacAddr, Seq, VlanTag};

type Bend<T> = Arc<dyn Fn(&mut T) + Send + Sync>;

/// The time of a frame a bend adds: the time of the advance that returns it.
const NOW: u64 = u64::MAX;

/// The reference link end with some of its answers bent.
#[derive(Default)]
struct Bent {
    inner: RefLinkEnd,
    hello: Option<Bend<Description>>,
    params: Option<Bend<LinkParams>>,
    refuse_reset: bool,
    refuse_requests: bool,
    out: Option<Bend<Advanced>>,
    counters: Option<Bend<Counters>>,
}

impl Device for Bent {
    fn hello(&mut self) -> Result<Description, DeviceError> {
        let mut d = self.inner.hello()?;
        if let Some(f) = &self.hello {
            f(&mut d);
        }
        Ok(d)
    }
    fn reset(&mut self, setup: &Setup) -> Result<LinkParams, DeviceError> {
        if self.refuse_reset {
            return Err(DeviceError::Refused("no".into()));
        }
        let mut p = self.inner.reset(setup)?;
        if let Some(f) = &self.params {
            f(&mut p);
        }
        Ok(p)
    }
    fn frame(&mut self, port: u16, time_ns: u64, frame: &[u8]) -> Result<(), DeviceError> {
        self.inner.frame(port, time_ns, frame)
    }
    fn request(&mut self, time_ns: u64, request: &Request) -> Result<Reply, DeviceError> {
        if self.refuse_requests {
            return Err(DeviceError::Refused("no".into()));
        }
        self.inner.request(time_ns, request)
    }
    fn advance(&mut self, time_ns: u64) -> Result<Advanced, DeviceError> {
        let mut a = self.inner.advance(time_ns)?;
        if let Some(f) = &self.out {
            f(&mut a);
        }
        // A frame the bend adds at time NOW goes out at the time of this advance.
        for o in &mut a.out {
            if let Output::Frame { time_ns: t, .. } = o
                && *t == NOW
            {
                *t = time_ns;
            }
        }
        Ok(a)
    }
    fn counters(&mut self) -> Result<Counters, DeviceError> {
        let mut c = self.inner.counters()?;
        if let Some(f) = &self.counters {
            f(&mut c);
        }
        Ok(c)
    }
}

fn link_cases() -> Vec<Case> {
    cases::all()
        .into_iter()
        .filter(|c| c.role == Role::LinkEnd)
        .collect()
}

fn only(id: &str) -> Vec<Case> {
    link_cases().into_iter().filter(|c| c.id == id).collect()
}

/// Runs `cases` on fresh `Bent` devices made by `make`.
fn run(
    cases: &[Case],
    make: impl Fn() -> Bent + Sync,
) -> Result<(Description, Vec<CaseResult>), String> {
    runner::run_suite(cases, &|| Ok(Box::new(make()) as Box<dyn Device>), 2)
}

fn result_of<'a>(results: &'a [CaseResult], id: &str) -> &'a CaseResult {
    results.iter().find(|r| r.id == id).unwrap()
}

fn failed(desc: &Description, cases: &[Case], results: &[CaseResult]) -> bool {
    Run {
        desc,
        cases,
        results,
        strict: false,
    }
    .failed()
}

// ----- who the device says it is ------------------------------------------------------------

#[test]
fn a_device_of_another_role_is_refused_before_any_case_runs() {
    let err = run(&link_cases(), || Bent {
        hello: Some(Arc::new(|d| d.role = Role::Endpoint)),
        ..Bent::default()
    })
    .unwrap_err();
    assert!(
        err.contains(
            "the device says it is an endpoint (its hello), and case LE-INIT-1 is for a link_end"
        ),
        "{err}"
    );
    // A caller of run_case alone gets a case that could not be judged, never a pass.
    let mut dut = RefLinkEnd::default();
    let mut desc = dut.hello().unwrap();
    desc.role = Role::Switch;
    let r = runner::run_case(&mut dut, &desc, &only("LE-INIT-1")[0]);
    assert_eq!(r.verdict, Verdict::HarnessError);
}

#[test]
fn what_a_device_says_of_itself_is_checked() {
    let bad: [(&str, Bend<Description>); 6] = [
        ("link end with 0 ports", Arc::new(|d| d.ports = 0)),
        ("link end with 2 ports", Arc::new(|d| d.ports = 2)),
        (
            "capability \"warp\"",
            Arc::new(|d| d.caps = vec!["warp".into()]),
        ),
        ("an empty name", Arc::new(|d| d.name = " ".into())),
        ("speaks version 1", Arc::new(|d| d.version = 1)),
        (
            "has 5000 ports",
            Arc::new(|d| {
                d.role = Role::Switch;
                d.ports = 5000
            }),
        ),
    ];
    for (why, bend) in bad {
        let err = run(&only("LE-INIT-1"), move || Bent {
            hello: Some(bend.clone()),
            ..Bent::default()
        })
        .unwrap_err();
        assert!(err.contains(why), "{why}: {err}");
    }
}

#[test]
fn a_device_name_cannot_forge_lines_of_the_summary() {
    let cases = only("LE-INIT-1");
    let (desc, results) = run(&cases, || Bent {
        hello: Some(Arc::new(|d| {
            d.name = "evil\nFAIL LE-LLR-1: forged\nresult: PASS (no MUST case failed)".into()
        })),
        refuse_requests: true,
        ..Bent::default()
    })
    .unwrap();
    let run = Run {
        desc: &desc,
        cases: &cases,
        results: &results,
        strict: false,
    };
    let text = report::summary(&run);
    assert!(
        text.lines().filter(|l| l.starts_with("result:")).count() == 1,
        "{text}"
    );
    assert!(
        !text.lines().any(|l| l.starts_with("FAIL LE-LLR-1")),
        "{text}"
    );
    assert!(
        text.contains("evil\\nFAIL LE-LLR-1: forged\\nresult: PASS"),
        "{text}"
    );
    assert!(text.ends_with("could not be judged)\n"), "{text}");
}

// ----- refusals ------------------------------------------------------------------------------

#[test]
fn a_device_that_refuses_every_reset_does_not_pass() {
    let cases = link_cases();
    let (desc, results) = run(&cases, || Bent {
        refuse_reset: true,
        ..Bent::default()
    })
    .unwrap();
    assert!(failed(&desc, &cases, &results));
    // LE-INIT-1 asks for no setting a device may refuse.
    let r = result_of(&results, "LE-INIT-1");
    assert_eq!(r.verdict, Verdict::HarnessError);
    assert!(
        r.message
            .as_deref()
            .unwrap_or("")
            .contains("refused a reset that asks for no setting a device may refuse"),
        "{r:?}"
    );
    // A refusal is what LE-INIT-11 asks for (a grant that cannot hold a frame): it passes.
    assert_eq!(result_of(&results, "LE-INIT-11").verdict, Verdict::Pass);
}

#[test]
fn a_device_that_refuses_every_request_does_not_pass() {
    let cases = link_cases();
    let (desc, results) = run(&cases, || Bent {
        refuse_requests: true,
        ..Bent::default()
    })
    .unwrap();
    assert!(failed(&desc, &cases, &results));
    let passed: Vec<&str> = results
        .iter()
        .filter(|r| r.verdict == Verdict::Pass)
        .map(|r| r.id)
        .collect();
    // Only the case whose verdict is the refusal of a bad setting, made before any request.
    assert_eq!(passed, ["LE-INIT-11"]);
    let r = result_of(&results, "LE-INIT-1");
    assert_eq!(r.verdict, Verdict::HarnessError);
    assert!(
        r.message.as_deref().unwrap_or("").contains(
            "the device refused physical_up, which this case needs and every link_end takes"
        ),
        "{r:?}"
    );
}

#[test]
fn a_run_that_judged_no_case_fails() {
    let cases = only("LE-INIT-1");
    let mut results = run(&cases, Bent::default).unwrap().1;
    let desc = RefLinkEnd::default().hello().unwrap();
    assert!(!failed(&desc, &cases, &results));
    results[0].verdict = Verdict::Unsupported;
    let run = Run {
        desc: &desc,
        cases: &cases,
        results: &results,
        strict: false,
    };
    assert!(run.failed());
    assert!(report::summary(&run).contains("result: FAIL (no case was judged"));
}

// ----- the parameters in force ---------------------------------------------------------------

#[test]
fn parameters_out_of_range_missing_or_replaced_cannot_be_judged() {
    let bad: [(&str, Bend<LinkParams>); 4] = [
        ("credit_size = 0", Arc::new(|p| p.credit_size = Some(0))),
        ("mfs = 0", Arc::new(|p| p.mfs = Some(0))),
        (
            "leaves out the parameter ack_spacing",
            Arc::new(|p| p.ack_spacing = None),
        ),
        (
            "asked for replay_timer_ns 3000 and the device answered reset with replay_timer_ns \
             5000",
            Arc::new(|p| {
                if p.replay_timer_ns == Some(3_000) {
                    p.replay_timer_ns = Some(5_000)
                }
            }),
        ),
    ];
    let cases: Vec<Case> = link_cases()
        .into_iter()
        .filter(|c| ["LE-LLR-1", "LE-LLR-11"].contains(&c.id))
        .collect();
    for (why, bend) in bad {
        let (_, results) = run(&cases, move || Bent {
            params: Some(bend.clone()),
            ..Bent::default()
        })
        .unwrap();
        assert!(
            results.iter().any(|r| r.verdict == Verdict::HarnessError
                && r.message.as_deref().unwrap_or("").contains(why)),
            "{why}: {results:?}"
        );
        assert!(
            !results
                .iter()
                .any(|r| r.message.as_deref().unwrap_or("").contains("panicked")),
            "{why}: {results:?}"
        );
    }
}

// ----- what a device sends -------------------------------------------------------------------

/// A bend that adds `frames` to every advance in which the device sends a frame.
fn sends(frames: Vec<Vec<u8>>) -> Bend<Advanced> {
    Arc::new(move |a| {
        if a.out.iter().any(|o| matches!(o, Output::Frame { .. })) {
            for f in &frames {
                a.out.push(Output::Frame {
                    port: 0,
                    time_ns: NOW,
                    hex: to_hex(f),
                });
            }
        }
    })
}

fn with_fcs(mut f: Vec<u8>) -> Vec<u8> {
    let n = f.len();
    let sum = ethlink_protocol::fcs::fcs_bytes(&f[..n - 4]);
    f[n - 4..].copy_from_slice(&sum);
    f
}

//= docs/spec/wire.md#24-frame-size-and-padding
//= type=test
//# WIRE-2.4-8 A transmitter MUST NOT send a frame longer than the MFS in force on its link.
#[test]
fn frames_no_receiver_would_take_fail_the_case_that_saw_them() {
    let ack = common::emit(LinkFrame::Ack(Seq::new(0)));
    let mut bad_fcs = ack.clone();
    *bad_fcs.last_mut().unwrap() ^= 1;
    let mut stomped = ack.clone();
    let n = stomped.len();
    for b in &mut stomped[n - 4..] {
        *b = !*b;
    }
    let mut version = ack.clone();
    version[14] = (version[14] & 0x0F) | 0x20;
    let mut kind = ack.clone();
    kind[14] = (kind[14] & 0xF0) | 0x9;
    let mut ethertype = ack.clone();
    ethertype[12] = 0x08;
    let group = common::emit_with(
        EthernetRepr {
            dst: MacAddr::LINK_LOCAL,
            src: MacAddr([0x03, 0, 0, 0, 0, 1]),
            vlan: None,
        },
        LinkFrame::Ack(Seq::new(0)),
    );
    let tagged = common::emit_with(
        EthernetRepr {
            dst: MacAddr::LINK_LOCAL,
            src: common::peer_mac(1),
            vlan: Some(VlanTag {
                pcp: 0,
                dei: false,
                vid: 1,
            }),
        },
        LinkFrame::Ack(Seq::new(0)),
    );
    let mut long_cf = common::emit(LinkFrame::CreditUpdate(Default::default()));
    // A CF frame with more bytes after its body than the padding needs.
    long_cf.truncate(long_cf.len() - 4);
    long_cf.extend_from_slice(&[0; 100]);
    long_cf.extend_from_slice(&[0; 4]);
    let long_cf = with_fcs(long_cf);
    let ten_thousand: Vec<Vec<u8>> = (0..10_000).map(|_| vec![0x11; 64]).collect();
    let sets: Vec<(&str, Vec<Vec<u8>>)> = vec![
        ("WIRE-2.4-8", vec![vec![0; 1 << 20]]),
        ("WIRE-2.4-1", vec![Vec::new()]),
        ("WIRE-2.4-1", vec![ack[..40].to_vec()]),
        ("WIRE-2.5-1", ten_thousand),
        ("WIRE-2.5-1", vec![bad_fcs]),
        ("CLS-3-3", vec![stomped]),
        ("WIRE-3-1", vec![with_fcs(version)]),
        ("WIRE-3-3", vec![with_fcs(kind)]),
        ("WIRE-2.1-1", vec![with_fcs(ethertype)]),
        ("WIRE-2.3-1", vec![group]),
        ("CLS-3-2", vec![tagged]),
        ("WIRE-4-1", vec![long_cf]),
    ];
    let cases = only("LE-LLR-1");
    for (req, frames) in sets {
        let count = frames.len();
        let bend = sends(frames);
        let (_, results) = run(&cases, move || Bent {
            out: Some(bend.clone()),
            ..Bent::default()
        })
        .unwrap();
        let r = &results[0];
        assert_eq!(r.verdict, Verdict::Fail, "{req} ({count} frames): {r:?}");
        assert_eq!(r.failure.as_ref().unwrap().req, req, "{r:?}");
    }
}

#[test]
fn outputs_beyond_the_bounds_stop_the_case() {
    let cases = only("LE-LLR-1");
    // More outputs than one advance may return.
    let (_, results) = run(&cases, || Bent {
        out: Some(Arc::new(|a| {
            for _ in 0..=MAX_OUTPUTS {
                a.out.push(Output::LinkUp { port: 0 });
            }
        })),
        ..Bent::default()
    })
    .unwrap();
    let m = results[0].message.as_deref().unwrap_or("");
    assert_eq!(results[0].verdict, Verdict::HarnessError);
    assert!(
        m.contains("more than the 65536 one advance may return"),
        "{m}"
    );
    // More bytes than a case may carry: frames of 9216 bytes, 800 an advance.
    let big = common::data(0, 0, false, &common::payload(9000, 1));
    let (_, results) = run(&cases, move || {
        let big = big.clone();
        Bent {
            out: Some(Arc::new(move |a| {
                let t = a.out.first().map_or(0, |_| 0);
                let _ = t;
                for _ in 0..800 {
                    a.out.push(Output::Frame {
                        port: 0,
                        time_ns: NOW,
                        hex: to_hex(&big),
                    });
                }
            })),
            ..Bent::default()
        }
    })
    .unwrap();
    let m = results[0].message.as_deref().unwrap_or("");
    assert_eq!(
        results[0].verdict,
        Verdict::HarnessError,
        "{:?}",
        results[0]
    );
    assert!(
        m.contains(&format!("more than {MAX_CASE_BYTES} bytes of frames")),
        "{m}"
    );
    // An output on a port the device does not have, a VC beyond 7, an unknown reason.
    let bad: [(&str, Output); 4] = [
        ("an output on port 3", Output::LinkUp { port: 3 }),
        (
            "an output on VC 9",
            Output::Delivered {
                port: 0,
                vc: 9,
                payload: String::new(),
            },
        ),
        (
            "a link down with the reason \"x\\\\ny\"",
            Output::LinkDown {
                port: 0,
                reason: "x\ny".into(),
            },
        ),
        (
            "not hex",
            Output::Delivered {
                port: 0,
                vc: 0,
                payload: "zz".into(),
            },
        ),
    ];
    for (why, o) in bad {
        let (_, results) = run(&cases, move || {
            let o = o.clone();
            Bent {
                out: Some(Arc::new(move |a| a.out.push(o.clone()))),
                ..Bent::default()
            }
        })
        .unwrap();
        let m = results[0].message.as_deref().unwrap_or("");
        assert_eq!(results[0].verdict, Verdict::HarnessError, "{why}");
        assert!(m.contains(why), "{why}: {m}");
    }
}

#[test]
fn counters_are_bounded_and_named_as_the_spec_names_them() {
    // LE-LLR-4 reads counters.
    let cases = only("LE-LLR-4");
    let bad: [(&str, Bend<Counters>); 2] = [
        (
            "counters, more than the 65536 the harness reads",
            Arc::new(|c| {
                for i in 0..65_537 {
                    c.insert(format!("x{i}"), 0);
                }
            }),
        ),
        (
            "a counter named \"rx\\\\nresult: PASS\"",
            Arc::new(|c| {
                c.insert("rx\nresult: PASS".into(), 1);
            }),
        ),
    ];
    for (why, bend) in bad {
        let (_, results) = run(&cases, move || Bent {
            counters: Some(bend.clone()),
            ..Bent::default()
        })
        .unwrap();
        let m = results[0].message.as_deref().unwrap_or("");
        assert_eq!(results[0].verdict, Verdict::HarnessError, "{why}: {m}");
        assert!(m.contains(why), "{why}: {m}");
    }
}

// ----- external devices: answers, sequence numbers, standard error ---------------------------

fn python_missing() -> bool {
    std::process::Command::new("python3")
        .arg("-V")
        .output()
        .is_err()
}

/// A device script: the reference's answers from a real `ethlink conformance --serve` would
/// need the binary; instead a small Python link end that never brings its link up, with
/// `twist` run on each answer `a` to request `m` before it is written (`n` counts requests).
fn script(twist: &str) -> String {
    let body = format!(
        "import json, sys\n\
         PARAMS = {{'vcs': 4, 'credit_size': 64, 'rx_credits': 512, 'credit_overhead': 0, \
         'mfs': 9216, 'llr_window': 524288, 'replay_max_frames': 115, 'replay_max_bytes': 58768, \
         'ack_spacing': 2048, 'ack_timer_ns': 500, 'replay_timer_ns': 5000, \
         'replay_count_max': 3, 'cf_min_credits': 8, 'cf_min_interval_ns': 100, \
         'cf_max_interval_ns': 2000, 'cc_interval_ns': 10000, 'init_interval_ns': 1000, 'llr_max_age_ns': 25000}}\n\
         n = 0\n\
         def say(a):\n    sys.stdout.write(json.dumps(a) + '\\n'); sys.stdout.flush()\n\
         for line in sys.stdin:\n    \
             m = json.loads(line); n += 1; op = m['op']\n    \
             if op == 'hello': a = {{'ok': True, 'version': 2, 'name': 'script', 'role': 'link_end', 'caps': [], 'ports': 1}}\n    \
             elif op == 'reset': a = {{'ok': True, 'params': PARAMS}}\n    \
             elif op == 'advance': a = {{'ok': True, 'out': []}}\n    \
             elif op == 'counters': a = {{'ok': True, 'counters': {{}}}}\n    \
             else: a = {{'ok': True}}\n    \
             a['seq'] = m['seq']\n{}\n    \
             say(a)\n    \
             if op == 'bye': break\n",
        twist
            .lines()
            .map(|l| format!("    {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("conformance-hostile");
    std::fs::create_dir_all(&dir).unwrap();
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let path = dir.join(format!("dev{n}.py"));
    std::fs::write(&path, body).unwrap();
    format!("python3 {}", path.display())
}

static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn quick() -> Limits {
    Limits {
        request: Duration::from_secs(10),
        case: Duration::from_secs(30),
    }
}

fn external(cmd: String) -> impl Fn() -> Result<Box<dyn Device>, String> + Sync {
    move || {
        ExternalDevice::spawn(&cmd, quick())
            .map(|d| Box::new(d) as Box<dyn Device>)
            .map_err(|e| e.to_string())
    }
}

#[test]
fn an_answer_given_twice_is_a_protocol_error_not_a_verdict() {
    if python_missing() {
        return;
    }
    // The fifth answer is written twice: every later answer would be one behind.
    let cmd = script("if n == 5: say(a)");
    let cases = only("LE-LLR-1");
    let (_, results) = runner::run_suite(&cases, &external(cmd), 1).unwrap();
    let r = &results[0];
    assert_eq!(r.verdict, Verdict::HarnessError, "{r:?}");
    let m = r.message.as_deref().unwrap_or("");
    assert!(m.contains("(seq 6) carries seq 5"), "{m}");
    assert!(m.contains("answered a request twice"), "{m}");
    // An answer without seq, and one of another request's shape.
    for (twist, why) in [
        ("if n == 3: del a['seq']", "carries no seq"),
        (
            "if op == 'advance': a = {'ok': True, 'seq': m['seq']}",
            "missing field `out`",
        ),
    ] {
        let (_, results) = runner::run_suite(&cases, &external(script(twist)), 1).unwrap();
        let m = results[0].message.as_deref().unwrap_or("");
        assert_eq!(results[0].verdict, Verdict::HarnessError, "{why}: {m}");
        assert!(m.contains(why), "{why}: {m}");
    }
}

#[test]
fn standard_error_is_kept_bounded_and_shown_escaped() {
    // 300 MB on one line, then 20 lines of 5 MB, then a line that tries to pass for a report's.
    let cmd = "head -c 300000000 /dev/zero | tr '\\0' x >&2; \
               for i in $(seq 20); do head -c 5000000 /dev/zero | tr '\\0' y >&2; echo >&2; done; \
               printf 'a\\033[2Jb\\n' >&2; exit 3"
        .to_owned();
    let mut d = ExternalDevice::spawn(&cmd, quick()).unwrap();
    let why = match d.hello() {
        Err(DeviceError::Broken(why)) => why,
        other => panic!("{other:?}"),
    };
    assert!(why.len() < 64 * 1024, "{} bytes", why.len());
    assert!(why.contains("more bytes)"), "{why}");
    assert!(why.contains("a\\u{1b}[2Jb"), "{why}");
    assert!(
        why.contains("(the process exited by itself: exit status: 3)"),
        "{why}"
    );
}

#[test]
fn an_exit_the_harness_caused_is_not_reported_as_the_devices() {
    // The device prints garbage and would exit 0 once its input closes.
    let cmd = "read line; echo not json; cat > /dev/null; exit 0".to_owned();
    let mut d = ExternalDevice::spawn(&cmd, quick()).unwrap();
    let why = match d.hello() {
        Err(DeviceError::Broken(why)) => why,
        other => panic!("{other:?}"),
    };
    assert!(why.contains("not JSON"), "{why}");
    assert!(!why.contains("exited"), "{why}");
}

#[test]
fn a_refusal_text_cannot_forge_lines_of_the_summary() {
    if python_missing() {
        return;
    }
    let cmd = script(
        "if op == 'request': a = {'ok': False, 'refused': 'no\\nresult: PASS (no MUST case failed)', 'seq': m['seq']}",
    );
    let cases = only("LE-INIT-1");
    let (desc, results) = runner::run_suite(&cases, &external(cmd), 1).unwrap();
    let run = Run {
        desc: &desc,
        cases: &cases,
        results: &results,
        strict: false,
    };
    let text = report::summary(&run);
    assert_eq!(
        text.lines().filter(|l| l.starts_with("result: ")).count(),
        1,
        "{text}"
    );
    assert!(text.contains("no\\nresult: PASS"), "{text}");
}

#[test]
fn the_harness_reads_the_example_device_of_this_version() {
    if python_missing() {
        return;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let cmd = format!(
        "python3 {}",
        root.join("examples/conformance/link_end.py").display()
    );
    let (desc, results) = runner::run_suite(&only("LE-INIT-1"), &external(cmd), 1).unwrap();
    assert_eq!(desc.version, 2);
    assert_eq!(results[0].verdict, Verdict::Pass, "{:?}", results[0]);
}

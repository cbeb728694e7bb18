//! A case whose in-process device never returns ends as a HarnessError at the case limit, the
//! next case gets a fresh device, and the run ends. The whole run is watched from another thread:
//! the test fails, rather than hangs, if the limit does not hold.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ethlink_conformance::device::{
    Advanced, Counters, Description, Device, DeviceError, LinkParams, Reply, Request, Setup,
};
use ethlink_conformance::reference::RefLinkEnd;
use ethlink_conformance::runner::{Bounds, SharedFactory, run_suite_bounded};
use ethlink_conformance::{Role, Verdict, cases};

/// The reference link end, except that the first device made loops forever in its first
/// `advance` past 1 us (it sleeps in the loop, so the abandoned thread costs no CPU).
struct Hanging {
    inner: RefLinkEnd,
    hangs: bool,
}

impl Device for Hanging {
    fn hello(&mut self) -> Result<Description, DeviceError> {
        self.inner.hello()
    }
    fn reset(&mut self, setup: &Setup) -> Result<LinkParams, DeviceError> {
        self.inner.reset(setup)
    }
    fn frame(&mut self, port: u16, time_ns: u64, frame: &[u8]) -> Result<(), DeviceError> {
        self.inner.frame(port, time_ns, frame)
    }
    fn request(&mut self, time_ns: u64, request: &Request) -> Result<Reply, DeviceError> {
        self.inner.request(time_ns, request)
    }
    fn advance(&mut self, time_ns: u64) -> Result<Advanced, DeviceError> {
        if self.hangs && time_ns > 1_000 {
            loop {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        self.inner.advance(time_ns)
    }
    fn counters(&mut self) -> Result<Counters, DeviceError> {
        self.inner.counters()
    }
}

#[test]
fn a_hanging_in_process_device_ends_at_the_case_limit() {
    let case = cases::all()
        .into_iter()
        .find(|c| c.id == "LE-INIT-1")
        .expect("LE-INIT-1");
    assert_eq!(case.role, Role::LinkEnd);
    let (done_tx, done_rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let made = Arc::new(AtomicUsize::new(0));
        let factory: SharedFactory = Arc::new(move || {
            let n = made.fetch_add(1, Ordering::SeqCst);
            Ok(Box::new(Hanging {
                inner: RefLinkEnd::default(),
                hangs: n == 0,
            }) as Box<dyn Device>)
        });
        let bounds = Bounds {
            start: Duration::from_secs(30),
            case: Duration::from_millis(500),
        };
        let out = run_suite_bounded(&[case, case], &factory, 1, bounds);
        let _ = done_tx.send(out);
    });
    let (_, results) = done_rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the run ended despite a device that never returns")
        .expect("the first device answers hello");
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].verdict, Verdict::HarnessError);
    let why = results[0].message.as_deref().unwrap_or("");
    assert!(why.contains("wall-time limit of 0.5 s"), "{why}");
    assert!(why.contains("abandoned"), "{why}");
    // The second case ran on a fresh device that does not hang.
    assert_eq!(
        results[1].verdict,
        Verdict::Pass,
        "{:?}",
        results[1].message
    );
}

/// The reference link end, except that it never settles: every `advance` asks to be woken again
/// one nanosecond later, as a device caught in a loop with the harness's peers does.
struct Spinning(RefLinkEnd);

impl Device for Spinning {
    fn hello(&mut self) -> Result<Description, DeviceError> {
        self.0.hello()
    }
    fn reset(&mut self, setup: &Setup) -> Result<LinkParams, DeviceError> {
        self.0.reset(setup)
    }
    fn frame(&mut self, port: u16, time_ns: u64, frame: &[u8]) -> Result<(), DeviceError> {
        self.0.frame(port, time_ns, frame)
    }
    fn request(&mut self, time_ns: u64, request: &Request) -> Result<Reply, DeviceError> {
        self.0.request(time_ns, request)
    }
    fn advance(&mut self, time_ns: u64) -> Result<Advanced, DeviceError> {
        let mut a = self.0.advance(time_ns)?;
        a.next_ns = Some(time_ns + 1);
        Ok(a)
    }
    fn counters(&mut self) -> Result<Counters, DeviceError> {
        self.0.counters()
    }
}

/// A device that never settles uses up the case's budget of simulation steps long before any
/// wall-time limit, and the case fails on its first requirement with the budget named: never a
/// harness error after a minute that names nothing.
#[test]
fn a_device_that_never_settles_fails_its_case_within_the_event_budget() {
    let case = cases::all()
        .into_iter()
        .find(|c| c.id == "LE-INIT-9")
        .expect("LE-INIT-9");
    let mut dut = Spinning(RefLinkEnd::default());
    let desc = dut.hello().unwrap();
    let r = ethlink_conformance::runner::run_case(&mut dut, &desc, &case);
    assert_eq!(r.verdict, Verdict::Fail, "{:?} {:?}", r.failure, r.message);
    let f = r.failure.expect("a failure");
    assert_eq!(f.req, case.reqs[0]);
    assert!(
        f.expected.contains("200000 simulation steps"),
        "{}",
        f.expected
    );
    assert!(f.seen.contains("does not settle"), "{}", f.seen);
    // The same device that settles passes.
    let mut dut = RefLinkEnd::default();
    let r = ethlink_conformance::runner::run_case(&mut dut, &desc, &case);
    assert_eq!(r.verdict, Verdict::Pass);
}

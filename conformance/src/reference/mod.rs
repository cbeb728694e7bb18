//! The reference implementation behind the device boundary, one backend per role.
//!
//! Every backend keeps two bounds, so that no request, however hostile, makes it run or grow
//! without end:
//!
//! - Time: a `time_ns` later than the horizon of link.md §1 ([`HORIZON_NS`], 2^63 - 1 ns) is
//!   refused (LINK-1-3), and a deadline beyond it is never reported as `next_ns`.
//! - Output: one `advance` returns at most [`MAX_ADVANCE_OUTPUTS`] outputs carrying at most
//!   [`MAX_ADVANCE_BYTES`] bytes of frames, payloads and data, and runs at most
//!   [`MAX_ADVANCE_STEPS`] deadlines. An advance that would go beyond ends with a
//!   [`DeviceError::Broken`] that says so (the line protocol's `error` answer), the device left
//!   at the time it had reached. No case of the catalogue comes near them: its largest advance
//!   returns 16 outputs and 25 KB. (An advance to the horizon from a link in INIT, an INIT a
//!   microsecond, meets the bound of outputs after 65.5 ms of simulated time, in about a second
//!   and 30 MB.)

pub mod endpoint;
pub mod link_end;
pub mod switch;

pub use endpoint::RefEndpoint;
pub use link_end::RefLinkEnd;
pub use switch::RefSwitch;

use ethlink_link::Instant;

use crate::device::{Advanced, DeviceError, Output};

/// The horizon of link.md §1 in nanoseconds: the latest time a reference backend takes.
pub const HORIZON_NS: u64 = Instant::HORIZON.as_nanos();
/// The most outputs (frames, deliveries, losses, link changes, completions) one `advance`
/// returns: what the boundary lets any device return ([`crate::boundary::MAX_OUTPUTS`]).
pub const MAX_ADVANCE_OUTPUTS: usize = crate::boundary::MAX_OUTPUTS;
/// The most bytes of frames, payloads and completion data (counted as bytes, not as their hex
/// text) one `advance` returns: what the boundary lets any device return
/// ([`crate::boundary::MAX_ADVANCE_BYTES`], 8 MiB).
pub const MAX_ADVANCE_BYTES: usize = crate::boundary::MAX_ADVANCE_BYTES;
/// The most deadlines one `advance` runs.
pub const MAX_ADVANCE_STEPS: usize = 1 << 20;

/// `time_ns` if it is at or before the horizon; refused otherwise (link.md LINK-1-3).
pub(crate) fn within_horizon(what: &str, time_ns: u64) -> Result<u64, DeviceError> {
    if time_ns > HORIZON_NS {
        return Err(DeviceError::Refused(format!(
            "{what} time_ns = {time_ns} is later than the horizon of {HORIZON_NS} ns \
             (2^63 - 1, link.md LINK-1-3)"
        )));
    }
    Ok(time_ns)
}

/// A deadline as the boundary reports it: none beyond the horizon, where time never comes.
pub(crate) fn reportable(deadline: Option<u64>) -> Option<u64> {
    deadline.filter(|&t| t <= HORIZON_NS)
}

/// What one `advance` has produced so far, kept within the bounds of this module.
pub(crate) struct Outputs {
    /// The advance's target time, for the error text.
    until: u64,
    list: Vec<Output>,
    bytes: usize,
    steps: usize,
}

impl Outputs {
    /// Nothing yet, for an advance to `until`.
    pub(crate) fn new(until: u64) -> Self {
        Outputs {
            until,
            list: Vec::new(),
            bytes: 0,
            steps: 0,
        }
    }

    /// Adds `o` produced at `at`, or says that the advance is over its bounds.
    pub(crate) fn push(&mut self, at: u64, o: Output) -> Result<(), DeviceError> {
        let bytes = match &o {
            Output::Frame { hex, .. } => hex.len() / 2,
            Output::Delivered { payload, .. } | Output::Lost { payload, .. } => payload.len() / 2,
            Output::Completion { data, .. } => data.as_ref().map_or(0, |d| d.len() / 2),
            _ => 0,
        };
        self.bytes = self.bytes.saturating_add(bytes);
        if self.list.len() >= MAX_ADVANCE_OUTPUTS || self.bytes > MAX_ADVANCE_BYTES {
            return Err(DeviceError::Broken(format!(
                "advance to {} ns: by {at} ns the device has produced {} outputs and {} bytes, \
                 more than one advance returns ({MAX_ADVANCE_OUTPUTS} outputs, \
                 {MAX_ADVANCE_BYTES} bytes); advance by shorter steps",
                self.until,
                self.list.len() + 1,
                self.bytes
            )));
        }
        self.list.push(o);
        Ok(())
    }

    /// Counts one deadline run at `at`, or says that the advance is over its bound.
    pub(crate) fn step(&mut self, at: u64) -> Result<(), DeviceError> {
        self.steps += 1;
        if self.steps > MAX_ADVANCE_STEPS {
            return Err(DeviceError::Broken(format!(
                "advance to {} ns: by {at} ns the device has run {MAX_ADVANCE_STEPS} deadlines, \
                 the most one advance runs; advance by shorter steps",
                self.until
            )));
        }
        Ok(())
    }

    /// The outputs, in the order they came.
    pub(crate) fn into_list(self) -> Vec<Output> {
        self.list
    }
}

/// A sans-IO backend driven by its own deadline: what [`advance`] needs of it.
trait Timed {
    /// The backend's time so far, in ns.
    fn now(&mut self) -> &mut u64;
    /// Its next deadline, in ns.
    fn deadline(&mut self) -> Result<Option<u64>, DeviceError>;
    /// Runs the timers due at `at`.
    fn fire(&mut self, at: u64) -> Result<(), DeviceError>;
    /// Moves every event the backend has into `out`.
    fn events(&mut self, out: &mut Outputs) -> Result<(), DeviceError>;
    /// Moves every frame the backend sends at `at` into `out`.
    fn transmit(&mut self, at: u64, out: &mut Outputs) -> Result<(), DeviceError>;
}

/// Lets time run to `time_ns`: each deadline before it fires at its own time, followed by what it
/// sends; then everything due at `time_ns`.
fn advance<T: Timed>(dev: &mut T, time_ns: u64) -> Result<Advanced, DeviceError> {
    let time_ns = within_horizon("advance:", time_ns)?;
    let mut out = Outputs::new(time_ns);
    dev.events(&mut out)?;
    while let Some(due) = dev.deadline()? {
        let due = due.max(*dev.now());
        if due > time_ns {
            break;
        }
        out.step(due)?;
        *dev.now() = due;
        dev.transmit(due, &mut out)?;
        dev.fire(due)?;
        dev.events(&mut out)?;
        dev.transmit(due, &mut out)?;
        if dev.deadline()?.is_some_and(|d| d <= due) {
            // A timer that does not move would spin: let time pass.
            break;
        }
    }
    let now = (*dev.now()).max(time_ns);
    *dev.now() = now;
    dev.transmit(now, &mut out)?;
    dev.events(&mut out)?;
    let next_ns = reportable(dev.deadline()?);
    Ok(Advanced {
        out: out.into_list(),
        next_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{Device, Request, Setup};

    /// One fresh backend of each role, reset with an empty setup.
    fn backends() -> Vec<(&'static str, Box<dyn Device>)> {
        let mut all: Vec<(&'static str, Box<dyn Device>)> = vec![
            ("link end", Box::new(RefLinkEnd::default())),
            ("endpoint", Box::new(RefEndpoint::default())),
            ("switch", Box::new(RefSwitch::default())),
        ];
        for (_, d) in &mut all {
            d.reset(&Setup::default()).expect("reset");
        }
        all
    }

    fn refused(r: Result<impl std::fmt::Debug, DeviceError>, role: &str) -> String {
        match r {
            Err(DeviceError::Refused(why)) => why,
            other => panic!("{role}: {other:?}, not refused"),
        }
    }

    /// A time past the horizon is refused by every call that takes one, before anything runs.
    //= type=test
    //# LINK-1-3 An end MUST NOT take a time later than the horizon as its current time.
    #[test]
    fn a_time_after_the_horizon_is_refused() {
        for (role, mut d) in backends() {
            for t in [HORIZON_NS + 1, u64::MAX] {
                let why = refused(d.request(t, &Request::PhysicalUp { port: 0 }), role);
                assert!(
                    why.contains(&t.to_string()) && why.contains(&HORIZON_NS.to_string()),
                    "{role}: {why}"
                );
                refused(d.frame(0, t, &[0; 64]), role);
                refused(d.advance(t), role);
            }
            // Nothing was taken: the device is where it was, at time 0.
            let a = d.advance(0).expect("advance");
            assert!(a.out.is_empty(), "{role}: {:?}", a.out);
        }
    }

    /// Up to the horizon time runs as anywhere else, and no deadline beyond it is reported.
    //= type=test
    //# LINK-1-2 An end MUST run every timer of Table LINK-T2 at every time up to and including the
    //# horizon as it does near the origin
    #[test]
    fn time_runs_up_to_the_horizon_and_stops_there() {
        for (role, mut d) in backends() {
            d.request(HORIZON_NS - 5_000, &Request::PhysicalUp { port: 0 })
                .expect("physical up");
            let a = d.advance(HORIZON_NS).expect("advance to the horizon");
            // An INIT at once and one per microsecond: six, at most one more for the switch's
            // wire.
            let frames = a.out.iter().filter(|o| matches!(o, Output::Frame { .. }));
            let n = frames.count();
            assert!((6..=7).contains(&n), "{role}: {n} frames: {:?}", a.out);
            assert_eq!(
                a.next_ns, None,
                "{role}: the next INIT is beyond the horizon"
            );
            let again = d.advance(HORIZON_NS).expect("advance at the horizon");
            assert!(again.out.is_empty(), "{role}: {:?}", again.out);
        }
    }

    /// An advance that would return more than its bound ends with an error that says so; the
    /// memory it holds meanwhile is bounded by construction.
    #[test]
    fn an_advance_beyond_its_bounds_is_an_error() {
        for (role, mut d) in backends() {
            d.request(0, &Request::PhysicalUp { port: 0 })
                .expect("physical up");
            // In INIT with no peer, an INIT a microsecond: 200,000 frames in 200 ms.
            match d.advance(200_000_000) {
                Err(DeviceError::Broken(why)) => assert!(
                    why.contains("advance to 200000000 ns")
                        && why.contains(&MAX_ADVANCE_OUTPUTS.to_string()),
                    "{role}: {why}"
                ),
                Err(e) => panic!("{role}: {e}"),
                Ok(a) => panic!("{role}: an advance returned {} outputs", a.out.len()),
            }
        }
    }
}

//! The reference implementation behind the device boundary, one backend per role.

pub mod endpoint;
pub mod link_end;
pub mod switch;

pub use endpoint::RefEndpoint;
pub use link_end::RefLinkEnd;
pub use switch::RefSwitch;

use crate::device::{Advanced, DeviceError, Output};

/// A sans-IO backend driven by its own deadline: what [`advance`] needs of it.
trait Timed {
    /// The backend's time so far, in ns.
    fn now(&mut self) -> &mut u64;
    /// Its next deadline, in ns.
    fn deadline(&mut self) -> Result<Option<u64>, DeviceError>;
    /// Runs the timers due at `at`.
    fn fire(&mut self, at: u64) -> Result<(), DeviceError>;
    /// Moves every event the backend has into `out`.
    fn events(&mut self, out: &mut Vec<Output>) -> Result<(), DeviceError>;
    /// Moves every frame the backend sends at `at` into `out`.
    fn transmit(&mut self, at: u64, out: &mut Vec<Output>) -> Result<(), DeviceError>;
}

/// Lets time run to `time_ns`: each deadline before it fires at its own time, followed by what it
/// sends; then everything due at `time_ns`.
fn advance<T: Timed>(dev: &mut T, time_ns: u64) -> Result<Advanced, DeviceError> {
    let mut out = Vec::new();
    dev.events(&mut out)?;
    while let Some(due) = dev.deadline()? {
        let due = due.max(*dev.now());
        if due > time_ns {
            break;
        }
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
    let next_ns = dev.deadline()?;
    Ok(Advanced { out, next_ns })
}

//! Path pins (switch.md §2.4): while a path is busy it keeps the egress port its frames took, so
//! that neither a port coming back UP nor a table write lets a later frame of the path overtake
//! an earlier one; it moves only once it has been idle for `pin_guard`, long enough for every
//! frame it sent to have left the switch and the link after it, or when its port goes down.
//!
//! A fixed table of buckets, indexed by the path's hash (§2.1), holds for the paths of each
//! bucket the port the last frame took, its destination, when the bucket's busy period began and
//! when its last frame came. Paths that share a bucket share its busy period: they move later
//! than each would alone, never earlier.

use ethlink_link::Instant;
use ethlink_protocol::GpuId;

use super::Switch;

/// No port: a bucket no frame has used yet.
const NO_PORT: u16 = u16::MAX;

/// One bucket of the path pins.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pin {
    port: u16,
    dst: u16,
    since: Instant,
    last: Instant,
}

impl Default for Pin {
    fn default() -> Self {
        Pin {
            port: NO_PORT,
            dst: 0,
            since: Instant::ZERO,
            last: Instant::ZERO,
        }
    }
}

impl Switch {
    /// The egress port of a frame of the path of hash `h` toward `dst` received now (§2.1 with
    /// the pins of §2.4), if any; records the frame in its bucket.
    pub(super) fn pinned(&mut self, h: u64, dst: GpuId) -> Option<u16> {
        let n = self.pins.len() as u64;
        let b = usize::try_from(h % n.max(1)).unwrap_or(0);
        let now = self.now;
        let Some(pin) = self.pins.get(b).copied() else {
            return self.route_with(dst, h, None);
        };
        let busy = pin.port != NO_PORT
            && now.as_nanos().saturating_sub(pin.last.as_nanos()) < self.pin_guard_ns;
        let since = if busy { pin.since } else { now };
        let up = |p: u16| self.ports.get(usize::from(p)).is_some_and(|x| x.up);
        let listed = !self.routes.ports(dst).is_empty();
        let port = if busy && listed && pin.dst == dst.value() && up(pin.port) {
            //= docs/spec/switch.md#24-path-pins
            //# SW-2-12 While a path's bucket is busy, a switch MUST send the path's frames on the
            //# port the bucket's last frame took, when that frame had the same destination and
            //# the port is UP, whatever the table lists now.
            Some(pin.port)
        } else {
            //= docs/spec/switch.md#24-path-pins
            //# SW-2-11 While a path's bucket is busy, a switch MUST NOT choose for the path a port
            //# whose link came UP after the bucket's busy period began.
            //= docs/spec/switch.md#24-path-pins
            //# SW-2-13 A switch MUST move a path at once, by §2.1, when the port the bucket's
            //# last frame took is not UP.
            self.route_with(dst, h, busy.then_some(since))
        };
        if let (Some(p), Some(slot)) = (port, self.pins.get_mut(b)) {
            *slot = Pin {
                port: p,
                dst: dst.value(),
                since,
                last: now,
            };
        }
        port
    }

    /// The port §2.1 gives for the path of hash `h` toward `dst`, counting as UP only the ports
    /// UP since `since` at the latest, if given.
    fn route_with(&self, dst: GpuId, h: u64, since: Option<Instant>) -> Option<u16> {
        self.routes.choose(dst, h, |e| {
            self.ports
                .get(usize::from(e))
                .is_some_and(|x| x.up && since.is_none_or(|s| x.up_since <= s))
        })
    }
}

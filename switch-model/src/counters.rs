//! The switch's counters (switch.md §8, Table SW-T3).

use alloc::vec::Vec;

//= docs/spec/switch.md#8-counters
//# SW-8-1 A switch MUST keep, for every port and VC, every counter of Table SW-T3 under the
//# name the table gives.
/// Counters of one port (Table SW-T3). Every array is indexed by VC; every value is 64 bits and
/// wraps modulo 2^64 (SW-8-3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PortCounters {
    /// DATA frames its input link delivered on this port.
    pub rx_frames: [u64; 8],
    /// Their payload bytes (network header and transactions).
    pub rx_bytes: [u64; 8],
    /// DATA frames handed to this port's link to send.
    pub tx_frames: [u64; 8],
    /// Their payload bytes.
    pub tx_bytes: [u64; 8],
    /// Frames received on this port with a malformed network header (SW-7-1).
    pub discard_malformed: [u64; 8],
    /// Frames received on this port for a destination without an UP egress port (SW-7-2).
    pub discard_unroutable: [u64; 8],
    /// Frames received on this port that stayed in the switch longer than `max_residence`
    /// (SW-4-7).
    pub discard_aged: [u64; 8],
    /// Frames lost to this egress port: waiting for it when its link went down, withdrawn from
    /// its link then, or in its replay buffer with unknown fate (SW-7-3).
    pub discard_port_down: [u64; 8],
    /// Frames this egress port's link could not carry: longer than the MFS or on a VC beyond
    /// those agreed with its peer (SW-7-5).
    pub discard_egress_refused: [u64; 8],
    /// Payload bytes received on this port and VC that the switch holds now (a level).
    pub held_bytes: [u64; 8],
    /// Highest `held_bytes` since reset (SW-4-5).
    pub held_max_bytes: [u64; 8],
    /// Highest residence of a frame this egress port began to send, nanoseconds (SW-4-6).
    pub residence_max_ns: [u64; 8],
    /// Frames whose first transmission on this egress port began before their last byte had
    /// arrived at their input port (cut through, SW-6-7), stomped ones included.
    pub tx_cut: [u64; 8],
    /// Frames this egress port began to send before their input accepted them and ended with a
    /// stomped FCS (SW-6-2, SW-6-9); never counted in `tx_frames`.
    pub tx_stomped: [u64; 8],
}

impl PortCounters {
    /// Frames discarded for any reason, over every VC.
    pub fn discarded(&self) -> u64 {
        [
            &self.discard_malformed,
            &self.discard_unroutable,
            &self.discard_aged,
            &self.discard_port_down,
            &self.discard_egress_refused,
        ]
        .iter()
        .flat_map(|a| a.iter())
        .fold(0u64, |s, &x| s.wrapping_add(x))
    }
}

impl PortCounters {
    /// Calls `f` with the name of every counter of Tables SW-T3 and SW-T4 (as switch.md names
    /// them), the VC and its value: the form a register map or a report reads.
    pub fn for_each(&self, mut f: impl FnMut(&'static str, u8, u64)) {
        let all: [(&'static str, &[u64; 8]); 14] = [
            ("rx_frames", &self.rx_frames),
            ("rx_bytes", &self.rx_bytes),
            ("tx_frames", &self.tx_frames),
            ("tx_bytes", &self.tx_bytes),
            ("discard_malformed", &self.discard_malformed),
            ("discard_unroutable", &self.discard_unroutable),
            ("discard_aged", &self.discard_aged),
            ("discard_port_down", &self.discard_port_down),
            ("discard_egress_refused", &self.discard_egress_refused),
            ("held_bytes", &self.held_bytes),
            ("held_max_bytes", &self.held_max_bytes),
            ("residence_max_ns", &self.residence_max_ns),
            ("tx_cut", &self.tx_cut),
            ("tx_stomped", &self.tx_stomped),
        ];
        for (name, values) in all {
            for (v, x) in values.iter().enumerate() {
                f(name, v as u8, *x);
            }
        }
    }
}

/// Counters of a switch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Counters {
    /// Per port.
    pub ports: Vec<PortCounters>,
}

impl Counters {
    /// `pick` summed over every port and VC (modulo 2^64).
    pub fn total(&self, pick: impl Fn(&PortCounters) -> &[u64; 8]) -> u64 {
        self.ports
            .iter()
            .flat_map(|p| pick(p).iter())
            .fold(0u64, |s, &x| s.wrapping_add(x))
    }

    /// Calls `f` with the port, the name (as Tables SW-T3 and SW-T4 name it), the VC and the
    /// value of every counter of every port.
    pub fn for_each(&self, mut f: impl FnMut(u16, &'static str, u8, u64)) {
        for (p, c) in self.ports.iter().enumerate() {
            let p = u16::try_from(p).unwrap_or(u16::MAX);
            c.for_each(|name, vc, x| f(p, name, vc, x));
        }
    }

    /// Frames forwarded (handed to an egress link) over all ports and VCs.
    pub fn forwarded(&self) -> u64 {
        self.total(|p| &p.tx_frames)
    }

    /// Frames discarded for any reason over all ports.
    pub fn discarded(&self) -> u64 {
        self.ports
            .iter()
            .fold(0u64, |s, p| s.wrapping_add(p.discarded()))
    }

    /// Highest bytes held for any input port and VC.
    pub fn held_max_bytes(&self) -> u64 {
        self.ports
            .iter()
            .flat_map(|p| p.held_max_bytes)
            .max()
            .unwrap_or(0)
    }

    /// Highest residence of any frame sent, nanoseconds.
    pub fn residence_max_ns(&self) -> u64 {
        self.ports
            .iter()
            .flat_map(|p| p.residence_max_ns)
            .max()
            .unwrap_or(0)
    }
}

/// Adds `by` to `a[v]`, modulo 2^64 (SW-8-3).
pub(crate) fn bump(a: &mut [u64; 8], v: usize, by: u64) {
    //= docs/spec/switch.md#8-counters
    //# SW-8-2 A switch MUST increment each counter of Table SW-T3 exactly when the table says,
    //# and at no other time.
    //= docs/spec/switch.md#8-counters
    //# SW-8-3 Every counter of Table SW-T3 MUST be 64 bits wide and wrap modulo 2^64.
    if let Some(x) = a.get_mut(v) {
        *x = x.wrapping_add(by);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_wrap_modulo_2_64() {
        //= docs/spec/switch.md#8-counters
        //= type=test
        //# SW-8-3 Every counter of Table SW-T3 MUST be 64 bits wide and wrap modulo 2^64.
        let mut a = [u64::MAX - 1, 0, 0, 0, 0, 0, 0, 0];
        bump(&mut a, 0, 3);
        assert_eq!(a[0], 1);
        bump(&mut a, 8, 1);
        assert_eq!(a, [1, 0, 0, 0, 0, 0, 0, 0]);
        let mut names = alloc::vec::Vec::new();
        let mut q = PortCounters::default();
        q.residence_max_ns[3] = 9;
        q.for_each(|name, vc, x| names.push((name, vc, x)));
        assert_eq!(names.len(), 14 * 8);
        assert_eq!(names[0], ("rx_frames", 0, 0));
        assert!(names.contains(&("residence_max_ns", 3, 9)));
        let mut p = PortCounters::default();
        p.discard_aged[7] = u64::MAX;
        p.discard_malformed[0] = 2;
        assert_eq!(p.discarded(), 1);
    }
}

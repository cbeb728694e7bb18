//! The forwarding table and the choice among equal egress ports (switch.md §2).

use alloc::vec::Vec;
use core::fmt;

use ethlink_protocol::{GpuId, PathId, Vc};

/// Most egress ports one entry of the forwarding table lists (switch.md §2.2).
pub const ROUTE_PORTS_MAX: usize = 64;

/// Why an entry of the forwarding table was refused (switch.md §2.2). The table is unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteError {
    /// More than [`ROUTE_PORTS_MAX`] ports.
    TooManyPorts {
        /// Ports given.
        ports: usize,
    },
    /// A port listed twice.
    Duplicate {
        /// The port.
        port: u16,
    },
    /// A port the switch does not have.
    NoSuchPort {
        /// The port.
        port: u16,
        /// Ports of the switch.
        ports: u16,
    },
}

impl fmt::Display for RouteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RouteError::TooManyPorts { ports } => {
                write!(f, "{ports} ports in one entry; at most {ROUTE_PORTS_MAX}")
            }
            RouteError::Duplicate { port } => write!(f, "port {port} listed twice"),
            RouteError::NoSuchPort { port, ports } => {
                write!(
                    f,
                    "port {port} does not exist: the switch has {ports} ports"
                )
            }
        }
    }
}

impl core::error::Error for RouteError {}

/// The forwarding table: for each destination GPU, the ordered list of egress ports that lead
/// to it (switch.md §2.2).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Routes {
    by_dst: Vec<Vec<u16>>,
}

impl Routes {
    /// An empty table.
    pub fn new() -> Self {
        Routes::default()
    }

    /// Appends `port` to the entry of `dst` unless it is listed already (order kept). The
    /// entry's length is checked when the table is given to a switch.
    pub fn add(&mut self, dst: GpuId, port: u16) {
        let i = usize::from(dst.value());
        if self.by_dst.len() <= i {
            self.by_dst.resize(i + 1, Vec::new());
        }
        if let Some(v) = self.by_dst.get_mut(i)
            && !v.contains(&port)
        {
            v.push(port);
        }
    }

    /// Replaces the entry of `dst` with `ports`, in that order; an empty list removes it.
    pub fn set(&mut self, dst: GpuId, ports: &[u16]) -> Result<(), RouteError> {
        check_entry(ports, None)?;
        let i = usize::from(dst.value());
        if self.by_dst.len() <= i {
            self.by_dst.resize(i + 1, Vec::new());
        }
        if let Some(v) = self.by_dst.get_mut(i) {
            v.clear();
            v.extend_from_slice(ports);
        }
        Ok(())
    }

    /// The egress ports toward `dst`, in table order.
    pub fn ports(&self, dst: GpuId) -> &[u16] {
        self.by_dst
            .get(usize::from(dst.value()))
            .map_or(&[], Vec::as_slice)
    }

    /// Destinations with at least one port.
    pub fn destinations(&self) -> usize {
        self.by_dst.iter().filter(|v| !v.is_empty()).count()
    }

    /// Checks every entry against a switch of `ports` ports.
    pub fn check(&self, ports: u16) -> Result<(), RouteError> {
        self.by_dst
            .iter()
            .try_for_each(|v| check_entry(v, Some(ports)))
    }
}

/// Checks one entry: at most [`ROUTE_PORTS_MAX`] distinct ports, each below `ports` if given.
pub(crate) fn check_entry(list: &[u16], ports: Option<u16>) -> Result<(), RouteError> {
    //= docs/spec/switch.md#22-the-forwarding-table
    //# SW-2-5 A switch MUST accept, for every destination GPU id 0..=0xFFFE, an entry of 0 to 64
    //# distinct egress ports.
    //= docs/spec/switch.md#22-the-forwarding-table
    //# SW-2-6 A switch MUST refuse an entry that lists more than 64 ports, a port twice or a
    //# port it does not have, and leave its table unchanged.
    if list.len() > ROUTE_PORTS_MAX {
        return Err(RouteError::TooManyPorts { ports: list.len() });
    }
    for (k, &p) in list.iter().enumerate() {
        if let Some(n) = ports
            && p >= n
        {
            return Err(RouteError::NoSuchPort { port: p, ports: n });
        }
        if list.get(..k).is_some_and(|before| before.contains(&p)) {
            return Err(RouteError::Duplicate { port: p });
        }
    }
    Ok(())
}

/// The 64-bit mix of a path (switch.md §2.1): the key `src << 32 | dst << 16 | path << 8 | vc`
/// through the SplitMix64 finaliser.
pub fn path_hash(src: GpuId, dst: GpuId, path: PathId, vc: Vc) -> u64 {
    //= docs/spec/switch.md#21-the-choice-among-equal-ports
    //# SW-2-4 When the entry lists more than one port, the egress port MUST be the one the
    //# function of this section gives for the frame's source GPU, destination GPU, path id and
    //# VC and the link states of the listed ports.
    let key = u64::from(src.value()) << 32
        | u64::from(dst.value()) << 16
        | u64::from(path.0) << 8
        | u64::from(vc.value());
    let mut z = key.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The egress port of a path whose mix is `h` (switch.md §2.1): the listed port at `h mod n`
/// if its link is UP; otherwise the UP port at `h mod m` among the `m` listed ports whose links
/// are UP, in table order; `None` when none is UP.
pub fn select(listed: &[u16], h: u64, up: impl Fn(u16) -> bool) -> Option<u16> {
    let n = u64::try_from(listed.len()).ok().filter(|&n| n > 0)?;
    let first = listed
        .get(usize::try_from(h % n).ok()?)
        .copied()
        .filter(|&p| up(p));
    if first.is_some() {
        return first;
    }
    let m = listed.iter().filter(|&&p| up(p)).count();
    let m = u64::try_from(m).ok().filter(|&m| m > 0)?;
    listed
        .iter()
        .copied()
        .filter(|&p| up(p))
        .nth(usize::try_from(h % m).ok()?)
}

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
    /// Group sizes that are zero or do not add up to the ports listed (switch.md §2.3).
    BadGroups {
        /// Ports listed.
        ports: usize,
        /// Sum of the group sizes given.
        sum: usize,
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
            RouteError::BadGroups { ports, sum } => write!(
                f,
                "group sizes must each be at least 1 and add up to the {ports} ports listed; \
                 they add up to {sum}"
            ),
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

/// One entry of the forwarding table: its ports in table order and where each group after the
/// first begins (switch.md §2.2, §2.3). No split: one group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Entry {
    ports: Vec<u16>,
    splits: Vec<u8>,
}

impl Entry {
    /// Its groups, most preferred first (one, empty, for an empty entry).
    fn groups(&self) -> impl Iterator<Item = &[u16]> {
        let ends = self.splits.iter().map(|&s| usize::from(s));
        let mut at = 0usize;
        ends.chain([self.ports.len()]).map(move |end| {
            let group = self.ports.get(at..end).unwrap_or(&[]);
            at = end;
            group
        })
    }
}

/// The forwarding table: for each destination GPU, the ordered list of egress ports that lead
/// to it, in one or more groups of preference (switch.md §2.2, §2.3).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Routes {
    by_dst: Vec<Entry>,
}

impl Routes {
    /// An empty table.
    pub fn new() -> Self {
        Routes::default()
    }

    fn entry_mut(&mut self, dst: GpuId) -> Option<&mut Entry> {
        let i = usize::from(dst.value());
        if self.by_dst.len() <= i {
            self.by_dst.resize(i + 1, Entry::default());
        }
        self.by_dst.get_mut(i)
    }

    /// Appends `port` to the last group of the entry of `dst` unless it is listed already
    /// (order kept). The entry's length is checked when the table is given to a switch.
    pub fn add(&mut self, dst: GpuId, port: u16) {
        if let Some(e) = self.entry_mut(dst)
            && !e.ports.contains(&port)
        {
            e.ports.push(port);
        }
    }

    /// Replaces the entry of `dst` with `ports`, in that order, as one group; an empty list
    /// removes it.
    pub fn set(&mut self, dst: GpuId, ports: &[u16]) -> Result<(), RouteError> {
        self.set_groups(dst, ports, &[])
    }

    /// Replaces the entry of `dst` with `ports`, in that order, divided into groups of the
    /// sizes `groups` gives, most preferred first (switch.md §2.3); no sizes make one group.
    /// A refused entry leaves the table unchanged.
    pub fn set_groups(
        &mut self,
        dst: GpuId,
        ports: &[u16],
        groups: &[u16],
    ) -> Result<(), RouteError> {
        check_entry(ports, None)?;
        let splits = splits_of(ports.len(), groups)?;
        if let Some(e) = self.entry_mut(dst) {
            e.ports.clear();
            e.ports.extend_from_slice(ports);
            e.splits = splits;
        }
        Ok(())
    }

    /// The egress ports toward `dst`, in table order, every group.
    pub fn ports(&self, dst: GpuId) -> &[u16] {
        self.by_dst
            .get(usize::from(dst.value()))
            .map_or(&[], |e| e.ports.as_slice())
    }

    /// The sizes of the groups of the entry of `dst`, most preferred first: one size for an
    /// entry of one group, none for an empty entry.
    pub fn group_sizes(&self, dst: GpuId) -> Vec<u16> {
        let Some(e) = self.by_dst.get(usize::from(dst.value())) else {
            return Vec::new();
        };
        if e.ports.is_empty() {
            return Vec::new();
        }
        e.groups()
            .map(|g| u16::try_from(g.len()).unwrap_or(u16::MAX))
            .collect()
    }

    /// The egress port of a path whose mix is `h` toward `dst` (switch.md §2.1, §2.3): the
    /// choice of [`select`] within the first group of the entry that lists a port whose link
    /// is UP; `None` when no listed port is UP.
    pub fn choose(&self, dst: GpuId, h: u64, up: impl Fn(u16) -> bool) -> Option<u16> {
        let e = self.by_dst.get(usize::from(dst.value()))?;
        if e.splits.is_empty() {
            return select(&e.ports, h, up);
        }
        //= docs/spec/switch.md#23-groups-of-preference
        //# SW-2-9 When an entry lists its ports in more than one group, the egress port MUST be
        //# the one the function of §2.1 gives over the first group, in table order, that holds a
        //# port whose link is UP, as if the entry were that group alone.
        for group in e.groups() {
            match group {
                // A group of one port: that port if UP, with no hash to reduce.
                [p] if up(*p) => return Some(*p),
                [_] => {}
                _ if group.iter().any(|&p| up(p)) => return select(group, h, up),
                _ => {}
            }
        }
        None
    }

    /// Destinations with at least one port.
    pub fn destinations(&self) -> usize {
        self.by_dst.iter().filter(|e| !e.ports.is_empty()).count()
    }

    /// Checks every entry against a switch of `ports` ports.
    pub fn check(&self, ports: u16) -> Result<(), RouteError> {
        self.by_dst
            .iter()
            .try_for_each(|e| check_entry(&e.ports, Some(ports)))
    }
}

/// Where each group after the first begins, from the group sizes of an entry of `n` ports;
/// refused unless every size is at least 1 and they add up to `n`. No sizes, or one: no split.
fn splits_of(n: usize, groups: &[u16]) -> Result<Vec<u8>, RouteError> {
    //= docs/spec/switch.md#23-groups-of-preference
    //# SW-2-10 A switch MUST refuse an entry whose group sizes are not each at least 1 or do
    //# not add up to the number of ports it lists, and leave its table unchanged.
    let sum: usize = groups.iter().map(|&g| usize::from(g)).sum();
    if groups.is_empty() {
        return Ok(Vec::new());
    }
    if sum != n || groups.contains(&0) {
        return Err(RouteError::BadGroups { ports: n, sum });
    }
    let mut splits = Vec::with_capacity(groups.len().saturating_sub(1));
    let mut at = 0usize;
    for &g in groups.get(..groups.len() - 1).unwrap_or(&[]) {
        at += usize::from(g);
        // at < n <= ROUTE_PORTS_MAX, checked by the caller before.
        splits.push(u8::try_from(at).map_err(|_| RouteError::BadGroups { ports: n, sum })?);
    }
    Ok(splits)
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
    //# SW-2-4 When an entry of one group lists more than one port, the egress port MUST be the one
    //# the function of this section gives for the frame's source GPU, destination GPU, path id and
    //# VC and the link states of the listed ports. (1.2: "of one group"; an entry of several groups
    //# is SW-2-9. 1.3: a path whose bucket is busy keeps its port, §2.4, SW-2-11 and SW-2-12.)
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

//! The memory of one GPU (endpoint.md §2): two byte-addressed spaces, the regions registered in
//! them with their keys and permissions, poisoned bytes, and the checks every remote access passes.
//!
//! - [`Memory`] holds a global and a shared space. Each is sparse and holds three kinds of
//!   bytes: zero (never written, costs nothing), described (a range whose bytes are the data
//!   [`Pattern`] from some position on, kept as one record however long it is), and literal
//!   (held in pages of [`PAGE_SIZE`] bytes allocated on the first non-zero write). So a space of
//!   terabytes costs only the literal pages written and one record per described range.
//! - Bytes become described through [`Memory::write_pattern`], or through
//!   [`Memory::write_received`] when the bytes written turn out to continue the pattern of a
//!   neighbouring described range, or to be the pattern at their place in a transfer: that is
//!   how RDMA data stays described as it crosses the network as real bytes. A described range
//!   is merged with a neighbour it continues, so a transfer received in any order ends as one
//!   record. Every read returns the exact bytes, generated from the description.
//! - [`Region`]s are registered per space with [`Memory::register`]; they never overlap.
//! - Remote accesses ([`Memory::load`], [`Memory::store`], [`Memory::atomic`]) are checked in the
//!   order of EP-2-7: range (OUT_OF_RANGE), key and permission (ACCESS_VIOLATION), alignment of
//!   atomics (MISALIGNED), poison (POISONED). A refused access changes nothing and returns no data.
//! - Local accesses ([`Memory::read`], [`Memory::write`], [`Memory::fill`],
//!   [`Memory::write_pattern`], [`Memory::write_received`], [`Memory::contents`]) are the GPU's
//!   own: they are checked only against the size of the space, and ignore regions and poison.
//! - [`Memory::poison`] marks bytes as holding an uncorrectable error, by granules of
//!   [`POISON_GRANULE`] bytes; writing a granule whole clears it.

#![cfg_attr(
    not(test),
    warn(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::cast_possible_truncation
    )
)]

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::collections::btree_map::Entry;
use core::fmt;

use ethlink_protocol::{AtomicOp, AtomicValue, Opcode, Space, Status, Width};

use crate::pattern::Pattern;

/// Largest size of a memory space in bytes, 2^57 (EP-2-1).
pub const MAX_SPACE_SIZE: u64 = 1 << 57;

/// Bytes of one page, the granule in which backing store is allocated.
pub const PAGE_SIZE: usize = 4096;

/// Bytes of a poison granule: poison covers, and is cleared by, whole naturally aligned blocks of
/// this many bytes (endpoint.md EP-2-6).
pub const POISON_GRANULE: u64 = 64;

/// [`PAGE_SIZE`] as an address quantity.
const PAGE_BYTES: u64 = PAGE_SIZE as u64;

/// One page of backing store.
type Page = Box<[u8; PAGE_SIZE]>;

/// `n` as an address quantity. Every supported target has pointers of at most 64 bits, so this
/// never saturates; if it did, the access would be refused as out of range.
fn to_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// `n`, the length of or an index into a buffer in memory, as a `usize`: it fits whenever it
/// comes from such a buffer; otherwise it saturates and a `get` with it finds nothing.
fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// `n`, at most [`PAGE_SIZE`], as an index into a page.
fn to_index(n: u64) -> usize {
    // Callers pass an offset or length within one page, which fits every usize.
    usize::try_from(n).unwrap_or(PAGE_SIZE)
}

/// The pieces of the address range `[addr, end)` that lie in one page each, in address order:
/// (page number, offset of the first byte in the page, length).
fn chunks(addr: u64, end: u64) -> impl Iterator<Item = (u64, usize, usize)> {
    let mut cur = addr;
    core::iter::from_fn(move || {
        if cur >= end {
            return None;
        }
        let offset = cur % PAGE_BYTES;
        let len = PAGE_BYTES
            .saturating_sub(offset)
            .min(end.saturating_sub(cur));
        let piece = (cur / PAGE_BYTES, to_index(offset), to_index(len));
        cur = cur.saturating_add(len);
        Some(piece)
    })
}

/// The low 32 bits of `v`.
fn low32(v: u64) -> u32 {
    let [a, b, c, d, ..] = v.to_le_bytes();
    u32::from_le_bytes([a, b, c, d])
}

/// Permissions of a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Perms {
    /// LOAD and RDMA_READ may read the region.
    pub read: bool,
    /// STORE and RDMA_WRITE may write the region.
    pub write: bool,
    /// The atomics may operate on the region.
    pub atomic: bool,
}

impl Perms {
    /// No access at all.
    pub const NONE: Perms = Perms {
        read: false,
        write: false,
        atomic: false,
    };
    /// Read only.
    pub const READ: Perms = Perms {
        read: true,
        write: false,
        atomic: false,
    };
    /// Write only.
    pub const WRITE: Perms = Perms {
        read: false,
        write: true,
        atomic: false,
    };
    /// Atomics only.
    pub const ATOMIC: Perms = Perms {
        read: false,
        write: false,
        atomic: true,
    };
    /// Read, write and atomics.
    pub const ALL: Perms = Perms {
        read: true,
        write: true,
        atomic: true,
    };

    /// The permissions granted by `self` or by `other`.
    pub const fn union(self, other: Perms) -> Perms {
        Perms {
            read: self.read || other.read,
            write: self.write || other.write,
            atomic: self.atomic || other.atomic,
        }
    }

    /// Whether these permissions grant an access of kind `a`.
    pub const fn grants(self, a: Access) -> bool {
        //= docs/spec/endpoint.md#2-memory-model
        //# EP-2-4 An access inside a region MUST be refused with ACCESS_VIOLATION if its key
        //# differs from the region's key, or if the region does not grant the access: read for
        //# LOAD and RDMA_READ, write for STORE and RDMA_WRITE, atomic for the atomics.
        match a {
            Access::Read => self.read,
            Access::Write => self.write,
            Access::Atomic => self.atomic,
        }
    }
}

impl core::ops::BitOr for Perms {
    type Output = Perms;

    fn bitor(self, rhs: Perms) -> Perms {
        self.union(rhs)
    }
}

impl fmt::Display for Perms {
    /// `rwa`, with `-` for each permission not granted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flag = |on: bool, c: &'static str| if on { c } else { "-" };
        write!(
            f,
            "{}{}{}",
            flag(self.read, "r"),
            flag(self.write, "w"),
            flag(self.atomic, "a")
        )
    }
}

/// The kind of a remote access, which decides the permission it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// LOAD or RDMA_READ.
    Read,
    /// STORE or RDMA_WRITE.
    Write,
    /// ATOMIC_FADD, ATOMIC_SWAP or ATOMIC_CAS.
    Atomic,
}

impl Access {
    /// The access a request opcode makes, or `None` for FENCE, responses and unknown opcodes.
    pub const fn for_opcode(op: Opcode) -> Option<Access> {
        //= docs/spec/endpoint.md#2-memory-model
        //# EP-2-4 [...] read for LOAD and RDMA_READ, write for STORE and RDMA_WRITE, atomic for
        //# the atomics.
        match op {
            Opcode::Load | Opcode::RdmaRead => Some(Access::Read),
            Opcode::Store | Opcode::RdmaWrite => Some(Access::Write),
            Opcode::AtomicFetchAdd | Opcode::AtomicSwap | Opcode::AtomicCompareSwap => {
                Some(Access::Atomic)
            }
            _ => None,
        }
    }

    /// Lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::Atomic => "atomic",
        }
    }
}

/// A registered range of one memory space with its key and permissions (EP-2-2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Region {
    /// The space the region belongs to.
    pub space: Space,
    /// Address of its first byte.
    pub base: u64,
    /// Its length in bytes, at least 1 once registered.
    pub len: u64,
    /// The key every remote access to it must carry.
    pub key: u32,
    /// The accesses it grants.
    pub perms: Perms,
}

impl Region {
    /// The region of `len` bytes at `base` of `space`.
    pub const fn new(space: Space, base: u64, len: u64, key: u32, perms: Perms) -> Self {
        Region {
            space,
            base,
            len,
            key,
            perms,
        }
    }

    /// The address one past its last byte, `base + len` (saturating at `u64::MAX`; a registered
    /// region never gets there).
    pub const fn end(&self) -> u64 {
        self.base.saturating_add(self.len)
    }

    /// Whether every byte of `[addr, addr + len)` lies in the region. False when `len` is 0 (an
    /// access of no bytes is not inside any region) and when `addr + len` overflows.
    pub const fn contains(&self, addr: u64, len: u64) -> bool {
        match addr.checked_add(len) {
            Some(end) => len != 0 && addr >= self.base && end <= self.end(),
            None => false,
        }
    }
}

impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} [{:#x}, {:#x}) key {:#x} {}",
            self.space.name(),
            self.base,
            self.end(),
            self.key,
            self.perms
        )
    }
}

/// Why [`Memory::register`] or [`Memory::deregister`] refused. Nothing was changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RegionError {
    /// The region has length 0.
    Empty {
        /// Its space.
        space: Space,
        /// Its base.
        base: u64,
    },
    /// The region reaches past the end of its space (or `base + len` overflows).
    PastEnd {
        /// Its space.
        space: Space,
        /// Its base.
        base: u64,
        /// Its length.
        len: u64,
        /// Size of the space.
        size: u64,
    },
    /// The region overlaps one already registered.
    Overlaps {
        /// A registered region it overlaps.
        existing: Region,
    },
    /// The space already holds `max_regions` regions (EP-2-11).
    TableFull {
        /// The space.
        space: Space,
        /// Its bound, [`MemoryConfig::max_regions`].
        max: u32,
    },
    /// No region of the space starts at the base given to [`Memory::deregister`].
    NotFound {
        /// The space.
        space: Space,
        /// The base asked for.
        base: u64,
    },
}

impl fmt::Display for RegionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegionError::Empty { space, base } => {
                write!(f, "{} region at {base:#x} has length 0", space.name())
            }
            RegionError::PastEnd {
                space,
                base,
                len,
                size,
            } => write!(
                f,
                "{} region of {len} bytes at {base:#x} reaches past the end of the space \
                 ({size} bytes)",
                space.name()
            ),
            RegionError::Overlaps { existing } => {
                write!(f, "region overlaps the registered region {existing}")
            }
            RegionError::TableFull { space, max } => {
                write!(
                    f,
                    "the {} region table is full ({max} regions)",
                    space.name()
                )
            }
            RegionError::NotFound { space, base } => {
                write!(f, "no {} region starts at {base:#x}", space.name())
            }
        }
    }
}

impl core::error::Error for RegionError {}

/// A local access reaches past the end of its space. Nothing was read or changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OutOfSpace {
    /// The space.
    pub space: Space,
    /// First address of the access.
    pub addr: u64,
    /// Its length in bytes.
    pub len: u64,
    /// Size of the space.
    pub size: u64,
}

impl fmt::Display for OutOfSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} bytes at {:#x} reach past the end of {} memory ({} bytes)",
            self.len,
            self.addr,
            self.space.name(),
            self.size
        )
    }
}

impl core::error::Error for OutOfSpace {}

/// Most poisoned ranges a space keeps apart: poisoning bytes that touch no poisoned range beyond
/// this many is refused, so that an upper layer cannot grow the poison without bound (ranges
/// that overlap or touch are merged into one, and cost nothing more).
pub const MAX_POISON_RANGES: usize = 65_536;

/// Why [`Memory::poison`] did not poison. Nothing was changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PoisonError {
    /// The bytes reach past the end of the space.
    OutOfSpace(OutOfSpace),
    /// The space keeps [`MAX_POISON_RANGES`] poisoned ranges apart already, and the bytes touch
    /// none of them.
    TooManyRanges {
        /// The space.
        space: Space,
    },
}

impl fmt::Display for PoisonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PoisonError::OutOfSpace(e) => e.fmt(f),
            PoisonError::TooManyRanges { space } => write!(
                f,
                "{} memory keeps {MAX_POISON_RANGES} poisoned ranges apart already, the most it \
                 keeps; poison bytes that touch one of them, or write some",
                space.name()
            ),
        }
    }
}

impl core::error::Error for PoisonError {}

/// Sizes of the two memory spaces of a GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MemoryConfig {
    /// Size of global memory in bytes, 1..=[`MAX_SPACE_SIZE`].
    pub global_size: u64,
    /// Size of shared memory in bytes, 1..=[`MAX_SPACE_SIZE`].
    pub shared_size: u64,
    /// Entries of the region table of each space, 1..=65536 (EP-2-11).
    pub max_regions: u32,
}

impl Default for MemoryConfig {
    /// 1 TiB of global and 256 MiB of shared memory, 1024 regions per space.
    fn default() -> Self {
        MemoryConfig {
            global_size: 1 << 40,
            shared_size: 1 << 28,
            max_regions: 1024,
        }
    }
}

/// A [`MemoryConfig`] field out of range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MemoryConfigError {
    /// The field: `global_size`, `shared_size` or `max_regions`.
    pub field: &'static str,
    /// Its value.
    pub value: u64,
}

impl MemoryConfigError {
    /// The rule the field breaks: `max_regions` its own range, the sizes theirs. A caller that
    /// reports the error in its own words takes the rule from here, so that each field is
    /// judged by its own rule.
    pub fn rule(&self) -> &'static str {
        if self.field == "max_regions" {
            "region table entries must be 1..=65536"
        } else {
            "memory space size must be 1..=2^57 bytes"
        }
    }
}

impl fmt::Display for MemoryConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is {}: {}", self.field, self.value, self.rule())
    }
}

impl core::error::Error for MemoryConfigError {}

/// A range of a space whose bytes the data pattern describes; its start is its key in
/// [`SpaceMem::extents`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Extent {
    /// One past its last byte.
    end: u64,
    /// What its first byte is; the following bytes continue it.
    pattern: Pattern,
}

/// Bytes of the record of one described range.
const EXTENT_RECORD: u64 = core::mem::size_of::<(u64, Extent)>() as u64;

/// One memory space: its bytes, regions and poison.
#[derive(Clone)]
struct SpaceMem {
    /// Size in bytes, 1..=MAX_SPACE_SIZE.
    size: u64,
    /// Allocated pages by page number; an absent page reads as zero. A byte inside a described
    /// range reads from its description, and is zero in its page.
    pages: BTreeMap<u64, Page>,
    /// Described ranges by start; disjoint, never empty, and never two adjacent ones of which
    /// the second continues the first.
    extents: BTreeMap<u64, Extent>,
    /// Registered regions by base; disjoint.
    regions: BTreeMap<u64, Region>,
    /// Poisoned bytes as ranges start -> end (exclusive); disjoint and never adjacent.
    poison: BTreeMap<u64, u64>,
}

impl SpaceMem {
    fn new(size: u64) -> Self {
        SpaceMem {
            size,
            pages: BTreeMap::new(),
            extents: BTreeMap::new(),
            regions: BTreeMap::new(),
            poison: BTreeMap::new(),
        }
    }

    /// The end of `[addr, addr + len)` if it lies inside the space.
    fn end_of(&self, addr: u64, len: u64) -> Option<u64> {
        addr.checked_add(len).filter(|&end| end <= self.size)
    }

    /// The region holding the byte at `addr`.
    fn region_at(&self, addr: u64) -> Option<&Region> {
        self.regions
            .range(..=addr)
            .next_back()
            .map(|(_, r)| r)
            .filter(|r| addr < r.end())
    }

    /// The described ranges overlapping `[start, end)`, as (start, extent), in address order.
    fn extents_in(&self, start: u64, end: u64) -> impl Iterator<Item = (u64, Extent)> + '_ {
        let first = self
            .extents
            .range(..=start)
            .next_back()
            .filter(|(_, x)| x.end > start)
            .map_or(start, |(&s, _)| s);
        self.extents
            .range(first..end.max(first))
            .map(|(&s, &x)| (s, x))
            .filter(move |(_, x)| x.end > start)
    }

    /// Copies `[addr, addr + buf.len())`, which the caller has checked lies in the space; when
    /// one described range holds all of it, the pattern its bytes are.
    fn read_bytes(&self, addr: u64, buf: &mut [u8]) -> Option<Pattern> {
        let end = addr.saturating_add(to_u64(buf.len()));
        // The common case of a described transfer: one range holds all of it.
        if let Some((s, x)) = self.extents_in(addr, end).next()
            && s <= addr
            && x.end >= end
        {
            let p = x.pattern.advance(addr - s);
            p.fill(buf);
            return Some(p);
        }
        let mut pos = 0usize;
        for (page, offset, len) in chunks(addr, end) {
            let next = pos.saturating_add(len);
            let Some(dst) = buf.get_mut(pos..next) else {
                break;
            };
            pos = next;
            //= docs/spec/endpoint.md#2-memory-model
            //# EP-2-1 [...] A byte never written MUST read as zero.
            match self
                .pages
                .get(&page)
                .and_then(|p| p.get(offset..offset.saturating_add(len)))
            {
                Some(src) => dst.copy_from_slice(src),
                None => dst.fill(0),
            }
        }
        for (s, x) in self.extents_in(addr, end) {
            let (lo, hi) = (s.max(addr), x.end.min(end));
            if let Some(dst) = buf.get_mut(to_usize(lo - addr)..to_usize(hi - addr)) {
                x.pattern.advance(lo - s).fill(dst);
            }
        }
        None
    }

    /// Removes the descriptions of `[start, end)`, cutting the ranges that stick out of it. The
    /// bytes there then read from the pages, where they are zero.
    fn cut_extents(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        while let Some((&s, &x)) = self.extents.range(..end).next_back() {
            if x.end <= start {
                break;
            }
            self.extents.remove(&s);
            if x.end > end {
                let rest = Extent {
                    end: x.end,
                    pattern: x.pattern.advance(end - s),
                };
                self.extents.insert(end, rest);
            }
            if s < start {
                // Ends at `start`: the next round stops on it.
                let head = Extent {
                    end: start,
                    pattern: x.pattern,
                };
                self.extents.insert(s, head);
            }
        }
    }

    /// Describes `[addr, end)`, which the caller has checked lies in the space, as the bytes of
    /// `pattern`: frees the pages it covers whole, zeroes the literal bytes it covers in the
    /// others, merges it with the neighbours it continues. Clears the poison of every byte.
    fn write_pattern(&mut self, addr: u64, end: u64, pattern: Pattern) {
        if addr >= end {
            return;
        }
        self.cut_extents(addr, end);
        let last = (end - 1) / PAGE_BYTES;
        let mut next = addr / PAGE_BYTES;
        while let Some((&n, page)) = self.pages.range_mut(next..=last).next() {
            next = n.saturating_add(1);
            let first = n.saturating_mul(PAGE_BYTES);
            let (lo, hi) = (addr.max(first), end.min(first.saturating_add(PAGE_BYTES)));
            if let Some(dst) = page.get_mut(to_index(lo - first)..to_index(hi - first)) {
                dst.fill(0);
            }
            //= docs/spec/endpoint.md#2-memory-model
            //# EP-2-9 *Internal.* Memory SHOULD cost in proportion to the bytes written, not to
            //# the sizes of the spaces or regions, so that a GPU can have terabytes of address
            //# space.
            if page.iter().all(|&b| b == 0) {
                self.pages.remove(&n);
            }
            if n >= last {
                break;
            }
        }
        // A range that continues the one to its left, as the segments of a transfer do, extends
        // that one where it lies.
        let right = self
            .extents
            .get(&end)
            .filter(|r| r.pattern == pattern.advance(end - addr))
            .map(|r| r.end);
        if let Some((&s, left)) = self.extents.range_mut(..addr).next_back()
            && left.end == addr
            && left.pattern.advance(addr - s) == pattern
        {
            left.end = right.unwrap_or(end);
        } else {
            self.extents.insert(
                addr,
                Extent {
                    end: right.unwrap_or(end),
                    pattern,
                },
            );
        }
        if right.is_some() {
            self.extents.remove(&end);
        }
        self.clear_poison(addr, end);
    }

    /// The pattern that `data`, to be written at `addr`, is the bytes of, if it continues the
    /// described range that ends at `addr`, precedes the one that starts at its end, or is the
    /// pattern at position `addr - origin`.
    fn describe(&self, addr: u64, end: u64, data: &[u8], origin: u64) -> Option<Pattern> {
        let left = self
            .extents
            .range(..addr)
            .next_back()
            .filter(|(_, x)| x.end == addr)
            .map(|(&s, x)| x.pattern.advance(addr - s));
        let right = self
            .extents
            .get(&end)
            .map(|x| x.pattern.advance((end - addr).wrapping_neg()));
        left.filter(|p| p.matches(data))
            .or_else(|| right.filter(|p| p.matches(data)))
            .or_else(|| Pattern::recover(addr.wrapping_sub(origin), data))
    }

    /// Writes `data` to `[addr, end)`, which the caller has checked lies in the space and is as
    /// long as `data`, as literal bytes. Absent pages stay absent where the bytes written to them
    /// are all zero. Clears the poison of every byte written.
    fn write_with(&mut self, addr: u64, end: u64, data: Fill<'_>) {
        self.cut_extents(addr, end);
        let mut pos = 0usize;
        for (page, offset, len) in chunks(addr, end) {
            let next = pos.saturating_add(len);
            let piece = match data {
                Fill::Bytes(bytes) => match bytes.get(pos..next) {
                    Some(src) => Fill::Bytes(src),
                    None => break,
                },
                Fill::Byte(b) => Fill::Byte(b),
            };
            pos = next;
            //= docs/spec/endpoint.md#2-memory-model
            //# EP-2-9 Memory SHOULD cost in proportion to the bytes written, not to the sizes of
            //# the spaces or regions, so that a GPU can have terabytes of address space.
            let page = match self.pages.entry(page) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => {
                    if piece.is_zero() {
                        continue;
                    }
                    e.insert(Box::new([0; PAGE_SIZE]))
                }
            };
            if let Some(dst) = page.get_mut(offset..offset.saturating_add(len)) {
                match piece {
                    Fill::Bytes(src) => dst.copy_from_slice(src),
                    Fill::Byte(b) => dst.fill(b),
                }
            }
        }
        self.clear_poison(addr, end);
    }

    /// Whether any byte of `[start, end)` is poisoned.
    fn any_poison(&self, start: u64, end: u64) -> bool {
        start < end
            && self
                .poison
                .range(..end)
                .next_back()
                .is_some_and(|(_, &e)| e > start)
    }

    /// Whether `[start, end)` overlaps or touches a poisoned range.
    fn touches_poison(&self, start: u64, end: u64) -> bool {
        self.poison
            .range(..=end)
            .next_back()
            .is_some_and(|(_, &e)| e >= start)
    }

    /// The poison granules `[start, end)` touches, as one range (empty for an empty one).
    fn granules(&self, start: u64, end: u64) -> (u64, u64) {
        if start >= end {
            return (start, start);
        }
        //= docs/spec/endpoint.md#2-memory-model
        //# EP-2-6 [...] Poison covers whole naturally aligned blocks of 64 bytes (poison
        //# granules): poisoning a byte poisons its granule.
        let lo = start - start % POISON_GRANULE;
        let hi = end
            .div_ceil(POISON_GRANULE)
            .saturating_mul(POISON_GRANULE)
            .min(self.size.max(end));
        (lo, hi)
    }

    /// Poisons the granules `[start, end)` touches, merging with the ranges it overlaps or
    /// touches.
    fn add_poison(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        let (mut lo, mut hi) = self.granules(start, end);
        // The last range starting at or before `hi` is the only one that can end after `hi`;
        // merge ranges from there down while they reach `lo`.
        while let Some((&s, &e)) = self.poison.range(..=hi).next_back() {
            if e < lo {
                break;
            }
            self.poison.remove(&s);
            lo = lo.min(s);
            hi = hi.max(e);
        }
        self.poison.insert(lo, hi);
    }

    /// Clears the poison of the granules `[start, end)` covers whole, splitting the ranges that
    /// stick out of them; a granule written in part keeps its poison.
    fn clear_poison(&mut self, start: u64, end: u64) {
        //= docs/spec/endpoint.md#2-memory-model
        //# EP-2-6 [...] A write clears the poison of every granule it covers whole; a write
        //# that covers part of a poisoned granule writes its bytes and leaves the granule
        //# poisoned.
        let start = start
            .div_ceil(POISON_GRANULE)
            .saturating_mul(POISON_GRANULE);
        let end = if end == self.size {
            end
        } else {
            end - end % POISON_GRANULE
        };
        if start >= end {
            return;
        }
        while let Some((&s, &e)) = self.poison.range(..end).next_back() {
            if e <= start {
                break;
            }
            self.poison.remove(&s);
            if e > end {
                self.poison.insert(end, e);
            }
            if s < start {
                // Ends at `start`: the next round stops on it.
                self.poison.insert(s, start);
            }
        }
    }

    /// The ranges that may hold a non-zero byte, as (start, end), in no particular order.
    fn held(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let pages = self.pages.keys().map(|&n| {
            let a = n.saturating_mul(PAGE_BYTES);
            (a, a.saturating_add(PAGE_BYTES))
        });
        pages.chain(self.extents.iter().map(|(&s, x)| (s, x.end)))
    }

    /// True when every byte of `self` equals the byte at the same address of `other`, however
    /// either holds it.
    fn same_bytes(&self, other: &SpaceMem) -> bool {
        let mut spans: alloc::vec::Vec<(u64, u64)> = self.held().chain(other.held()).collect();
        spans.sort_unstable();
        let mut a = [0u8; PAGE_SIZE];
        let mut b = [0u8; PAGE_SIZE];
        let mut done = 0u64;
        for (s, e) in spans {
            let mut at = s.max(done);
            while at < e {
                let n = to_index((e - at).min(PAGE_BYTES));
                let (Some(x), Some(y)) = (a.get_mut(..n), b.get_mut(..n)) else {
                    return false;
                };
                self.read_bytes(at, x);
                other.read_bytes(at, y);
                if x != y {
                    return false;
                }
                at = at.saturating_add(to_u64(n));
            }
            done = done.max(e);
        }
        true
    }

    /// The pieces of `[addr, end)`, which the caller has checked lies in the space.
    fn pieces(&self, addr: u64, end: u64) -> impl Iterator<Item = Piece<'_>> + '_ {
        let mut cur = addr;
        core::iter::from_fn(move || {
            if cur >= end {
                return None;
            }
            let at = cur;
            if let Some((s, x)) = self.extents_in(at, end).next()
                && s <= at
            {
                cur = x.end.min(end);
                return Some(Piece::Pattern {
                    addr: at,
                    len: cur - at,
                    pattern: x.pattern.advance(at - s),
                });
            }
            // Not described up to the next described range.
            let limit = self.extents.range(at..end).next().map_or(end, |(&s, _)| s);
            let page = at / PAGE_BYTES;
            if let Some(p) = self.pages.get(&page) {
                let page_end = page.saturating_add(1).saturating_mul(PAGE_BYTES);
                cur = limit.min(page_end);
                let first = page.saturating_mul(PAGE_BYTES);
                let bytes = p
                    .get(to_index(at - first)..to_index(cur - first))
                    .unwrap_or(&[]);
                return Some(Piece::Bytes { addr: at, bytes });
            }
            let next_page = self
                .pages
                .range(page.saturating_add(1)..)
                .next()
                .map_or(u64::MAX, |(&n, _)| n.saturating_mul(PAGE_BYTES));
            cur = limit.min(next_page);
            Some(Piece::Zero {
                addr: at,
                len: cur - at,
            })
        })
    }
}

/// A run of bytes of a memory space, as [`Memory::contents`] gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    /// `len` bytes at `addr` that are zero, none of them held.
    Zero {
        /// First address.
        addr: u64,
        /// Length in bytes, at least 1.
        len: u64,
    },
    /// `len` bytes at `addr` that are the bytes of `pattern`.
    Pattern {
        /// First address.
        addr: u64,
        /// Length in bytes, at least 1.
        len: u64,
        /// What the first byte is; the following bytes continue it.
        pattern: Pattern,
    },
    /// Literal bytes at `addr` (some of them may be zero), never more than one page.
    Bytes {
        /// First address.
        addr: u64,
        /// The bytes, at least 1.
        bytes: &'a [u8],
    },
}

impl Piece<'_> {
    /// Its first address.
    pub fn addr(&self) -> u64 {
        match *self {
            Piece::Zero { addr, .. } | Piece::Pattern { addr, .. } | Piece::Bytes { addr, .. } => {
                addr
            }
        }
    }

    /// Its length in bytes.
    pub fn len(&self) -> u64 {
        match *self {
            Piece::Zero { len, .. } | Piece::Pattern { len, .. } => len,
            Piece::Bytes { bytes, .. } => to_u64(bytes.len()),
        }
    }

    /// Whether it has no bytes (a piece given by [`Memory::contents`] never is).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a write puts in memory: a slice of bytes or one byte repeated.
#[derive(Clone, Copy)]
enum Fill<'a> {
    Bytes(&'a [u8]),
    Byte(u8),
}

impl Fill<'_> {
    fn is_zero(self) -> bool {
        match self {
            Fill::Bytes(b) => b.iter().all(|&x| x == 0),
            Fill::Byte(b) => b == 0,
        }
    }
}

/// The value an atomic on a 4-byte operand leaves in memory, if it writes (EP-2-8).
fn atomic_result_u32(old: u32, op: AtomicOp) -> Option<u32> {
    match op {
        AtomicOp::FetchAdd { addend } => Some(old.wrapping_add(low32(addend))),
        AtomicOp::Swap { value } => Some(low32(value)),
        AtomicOp::CompareSwap { compare, value } => (old == low32(compare)).then(|| low32(value)),
    }
}

/// The value an atomic on an 8-byte operand leaves in memory, if it writes (EP-2-8).
fn atomic_result_u64(old: u64, op: AtomicOp) -> Option<u64> {
    match op {
        AtomicOp::FetchAdd { addend } => Some(old.wrapping_add(addend)),
        AtomicOp::Swap { value } => Some(value),
        AtomicOp::CompareSwap { compare, value } => (old == compare).then_some(value),
    }
}

/// The memory of one GPU: a global and a shared space, their regions and their poison.
///
/// Storage is sparse: a range written with the data [`Pattern`] is one record whatever its
/// length, and a page of [`PAGE_SIZE`] bytes is allocated when a non-zero literal byte is first
/// written to it, so memory use grows with the literal bytes written and the number of described
/// ranges, never with the size of a space, a region or a transfer.
#[derive(Clone)]
pub struct Memory {
    global: SpaceMem,
    shared: SpaceMem,
    max_regions: u32,
}

impl fmt::Debug for Memory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Memory")
            .field("global_size", &self.global.size)
            .field("shared_size", &self.shared.size)
            .field("global_regions", &self.global.regions.len())
            .field("shared_regions", &self.shared.regions.len())
            .field("global_pages", &self.global.pages.len())
            .field("shared_pages", &self.shared.pages.len())
            .field("global_extents", &self.global.extents.len())
            .field("shared_extents", &self.shared.extents.len())
            .field("global_poison_ranges", &self.global.poison.len())
            .field("shared_poison_ranges", &self.shared.poison.len())
            .finish()
    }
}

impl Memory {
    /// An empty memory of the configured sizes: every byte zero, no region, no poison.
    pub fn new(cfg: MemoryConfig) -> Result<Self, MemoryConfigError> {
        //= docs/spec/endpoint.md#2-memory-model
        //# EP-2-1 An endpoint MUST provide two memory spaces, global and shared, each addressed
        //# by byte from 0 up to its configured size, at most 2^57 bytes.
        for (field, value) in [
            ("global_size", cfg.global_size),
            ("shared_size", cfg.shared_size),
        ] {
            if value == 0 || value > MAX_SPACE_SIZE {
                return Err(MemoryConfigError { field, value });
            }
        }
        if !(1..=65536).contains(&cfg.max_regions) {
            return Err(MemoryConfigError {
                field: "max_regions",
                value: cfg.max_regions.into(),
            });
        }
        Ok(Memory {
            global: SpaceMem::new(cfg.global_size),
            shared: SpaceMem::new(cfg.shared_size),
            max_regions: cfg.max_regions,
        })
    }

    /// The sizes this memory was built with.
    pub fn config(&self) -> MemoryConfig {
        MemoryConfig {
            global_size: self.global.size,
            shared_size: self.shared.size,
            max_regions: self.max_regions,
        }
    }

    fn space(&self, space: Space) -> &SpaceMem {
        match space {
            Space::Global => &self.global,
            Space::Shared => &self.shared,
        }
    }

    fn space_mut(&mut self, space: Space) -> &mut SpaceMem {
        match space {
            Space::Global => &mut self.global,
            Space::Shared => &mut self.shared,
        }
    }

    /// Size of `space` in bytes.
    pub fn size(&self, space: Space) -> u64 {
        self.space(space).size
    }

    /// Registers `region` in `region.space`. Refused, with nothing changed, when its length is 0,
    /// when it reaches past the end of the space, when it overlaps a registered region of the
    /// same space, or when the space's table holds `max_regions` regions (checked in that
    /// order).
    pub fn register(&mut self, region: Region) -> Result<(), RegionError> {
        //= docs/spec/endpoint.md#2-memory-model
        //# EP-2-2 A region is a range of one space, given by its base and a length of at least
        //# 1, with a 32-bit key and a set of permissions (read, write, atomic). Regions of one
        //# space MUST NOT overlap: a registration that would overlap a registered region, reach
        //# past the end of the space or have length 0 MUST be refused.
        let Region {
            space, base, len, ..
        } = region;
        //= docs/spec/endpoint.md#21-the-region-table
        //# EP-2-10 The region table MUST be changed only through the local interface, by
        //# `register` and `deregister`; no request received from the network changes it.
        let max = self.max_regions;
        let sm = self.space_mut(space);
        if len == 0 {
            return Err(RegionError::Empty { space, base });
        }
        let Some(end) = sm.end_of(base, len) else {
            return Err(RegionError::PastEnd {
                space,
                base,
                len,
                size: sm.size,
            });
        };
        // Regions are disjoint, so the last one starting before `end` reaches furthest.
        if let Some((_, existing)) = sm.regions.range(..end).next_back()
            && existing.end() > base
        {
            return Err(RegionError::Overlaps {
                existing: *existing,
            });
        }
        //= docs/spec/endpoint.md#21-the-region-table
        //# EP-2-11 A space's region table MUST hold at most `max_regions` regions; a registration
        //# beyond it MUST be refused with the reason table full, and nothing changed.
        if sm.regions.len() >= max as usize {
            return Err(RegionError::TableFull { space, max });
        }
        sm.regions.insert(base, region);
        Ok(())
    }

    /// Removes the region of `space` that starts at `base` and returns it. The bytes it covered
    /// keep their values.
    pub fn deregister(&mut self, space: Space, base: u64) -> Result<Region, RegionError> {
        //= docs/spec/endpoint.md#21-the-region-table
        //# EP-2-12 Once a region is removed, every remote access to its bytes MUST be refused as
        //# EP-2-3 A remote access to the bytes [address, address + length) of a space MUST be
        //# refused with OUT_OF_RANGE unless all of them lie inside one registered region of that
        //# space.
        self.space_mut(space)
            .regions
            .remove(&base)
            .ok_or(RegionError::NotFound { space, base })
    }

    /// The regions of `space` in address order.
    pub fn regions(&self, space: Space) -> impl Iterator<Item = &Region> {
        self.space(space).regions.values()
    }

    /// The region of `space` holding the byte at `addr`.
    pub fn region_at(&self, space: Space, addr: u64) -> Option<&Region> {
        self.space(space).region_at(addr)
    }

    /// The status a remote access of `len` bytes at `addr` of `space` carrying `key` gets from the
    /// range and protection checks (EP-2-3, then EP-2-4), and from nothing else: alignment and
    /// poison are checked by [`Memory::atomic`] and [`Memory::load`].
    ///
    /// An access of length 0 is OUT_OF_RANGE: it is not inside any region (the wire never
    /// carries one). So is one whose `addr + len` overflows.
    pub fn check(
        &self,
        space: Space,
        key: u32,
        addr: u64,
        len: u64,
        access: Access,
    ) -> Result<(), Status> {
        //= docs/spec/endpoint.md#2-memory-model
        //# EP-2-3 A remote access to the bytes [address, address + length) of a space MUST be
        //# refused with OUT_OF_RANGE unless all of them lie inside one registered region of that
        //# space.
        let region = self
            .space(space)
            .region_at(addr)
            .filter(|r| r.contains(addr, len))
            .ok_or(Status::OutOfRange)?;
        //= docs/spec/endpoint.md#2-memory-model
        //# EP-2-4 An access inside a region MUST be refused with ACCESS_VIOLATION if its key
        //# differs from the region's key, or if the region does not grant the access: read for
        //# LOAD and RDMA_READ, write for STORE and RDMA_WRITE, atomic for the atomics.
        if region.key != key || !region.perms.grants(access) {
            return Err(Status::AccessViolation);
        }
        Ok(())
    }

    /// A remote LOAD, or one RDMA_READ segment: reads `buf.len()` bytes at `addr` of `space`
    /// into `buf` after the checks of range, key, read permission and poison, in that order.
    ///
    /// On a refusal `buf` is left as it was: no data is returned.
    pub fn load(&self, space: Space, key: u32, addr: u64, buf: &mut [u8]) -> Result<(), Status> {
        let len = to_u64(buf.len());
        //= docs/spec/endpoint.md#2-memory-model
        //# EP-2-7 The checks MUST be made in the order EP-2-3, EP-2-4, EP-2-5, EP-2-6; the first
        //# that fails gives the status. (A request that needs a capability the endpoint lacks is
        //# refused UNSUPPORTED before any of them, §11.)
        self.check(space, key, addr, len, Access::Read)?;
        let sm = self.space(space);
        //= docs/spec/endpoint.md#2-memory-model
        //# EP-2-6 A byte may be poisoned, which models an uncorrectable memory error. A LOAD,
        //# RDMA_READ or atomic that would read a poisoned byte MUST be refused with POISONED.
        if sm.any_poison(addr, addr.saturating_add(len)) {
            return Err(Status::Poisoned);
        }
        sm.read_bytes(addr, buf);
        Ok(())
    }

    /// A remote STORE, or one RDMA_WRITE segment: writes `data` at `addr` of `space` after the
    /// checks of range, key and write permission. Clears the poison of the bytes written.
    pub fn store(&mut self, space: Space, key: u32, addr: u64, data: &[u8]) -> Result<(), Status> {
        let len = to_u64(data.len());
        //= docs/spec/endpoint.md#2-memory-model
        //# EP-2-13 A refused access MUST NOT change any byte of memory and MUST return no data.
        // A refusal returns before anything is written.
        self.check(space, key, addr, len, Access::Write)?;
        let end = addr.saturating_add(len);
        self.space_mut(space)
            .write_with(addr, end, Fill::Bytes(data));
        Ok(())
    }

    /// A remote atomic on the `width`-byte little-endian value at `addr` of `space`: checks range,
    /// key, atomic permission, alignment and poison in that order, performs `op` and returns the
    /// value held before it.
    ///
    /// For [`Width::W4`] only the low 32 bits of the operands of `op` are used: a fetch-add wraps
    /// at 2^32 and a compare-swap compares the low 32 bits of `compare`.
    pub fn atomic(
        &mut self,
        space: Space,
        key: u32,
        addr: u64,
        width: Width,
        op: AtomicOp,
    ) -> Result<AtomicValue, Status> {
        let size = to_u64(width.bytes());
        //= docs/spec/endpoint.md#2-memory-model
        //# EP-2-7 The checks MUST be made in the order EP-2-3, EP-2-4, EP-2-5, EP-2-6; the first
        //# that fails gives the status. (A request that needs a capability the endpoint lacks is
        //# refused UNSUPPORTED before any of them, §11.)
        self.check(space, key, addr, size, Access::Atomic)?;
        //= docs/spec/endpoint.md#2-memory-model
        //# EP-2-5 An atomic that passes EP-2-3 and EP-2-4 but whose address is not a multiple of
        //# its operand size MUST be refused with MISALIGNED (WIRE-6.5-2).
        if !addr.is_multiple_of(size) {
            return Err(Status::Misaligned);
        }
        let sm = self.space_mut(space);
        let end = addr.saturating_add(size);
        //= docs/spec/endpoint.md#2-memory-model
        //# EP-2-6 [...] A LOAD, RDMA_READ or atomic that would read a poisoned byte MUST be
        //# refused with POISONED.
        if sm.any_poison(addr, end) {
            return Err(Status::Poisoned);
        }
        //= docs/spec/endpoint.md#2-memory-model
        //# EP-2-8 An atomic MUST be performed indivisibly on the little-endian value of its
        //# operand size (WIRE-1.1-3): fetch-add stores the old value plus the addend modulo
        //# 2^(8 x size), swap stores the new value, compare-swap stores the new value only if
        //# the old value equals the compare value; each returns the old value.
        // Indivisible: the read and the write happen within this one call on `&mut self`.
        match width {
            Width::W4 => {
                let mut bytes = [0u8; 4];
                sm.read_bytes(addr, &mut bytes);
                let old = u32::from_le_bytes(bytes);
                if let Some(new) = atomic_result_u32(old, op) {
                    sm.write_with(addr, end, Fill::Bytes(&new.to_le_bytes()));
                }
                Ok(AtomicValue::U32(old))
            }
            Width::W8 => {
                let mut bytes = [0u8; 8];
                sm.read_bytes(addr, &mut bytes);
                let old = u64::from_le_bytes(bytes);
                if let Some(new) = atomic_result_u64(old, op) {
                    sm.write_with(addr, end, Fill::Bytes(&new.to_le_bytes()));
                }
                Ok(AtomicValue::U64(old))
            }
        }
    }

    /// The end of the local access `[addr, addr + len)` of `space`, or why it is refused.
    fn local_end(&self, space: Space, addr: u64, len: u64) -> Result<u64, OutOfSpace> {
        let sm = self.space(space);
        sm.end_of(addr, len).ok_or(OutOfSpace {
            space,
            addr,
            len,
            size: sm.size,
        })
    }

    /// A local read (the GPU's own access): copies `buf.len()` bytes at `addr` of `space` into
    /// `buf`, whatever the regions. Local reads ignore poison: poisoned bytes are returned as
    /// they are held. Refused when the bytes reach past the end of the space; a read of 0 bytes
    /// at any address up to the size does nothing.
    pub fn read(&self, space: Space, addr: u64, buf: &mut [u8]) -> Result<(), OutOfSpace> {
        self.read_described(space, addr, buf).map(|_| ())
    }

    /// As [`Memory::read`], and the pattern the bytes read are when one described range holds
    /// all of them (see [`Memory::write_pattern`]): what their reader can tell whoever receives
    /// them, instead of the bytes.
    pub fn read_described(
        &self,
        space: Space,
        addr: u64,
        buf: &mut [u8],
    ) -> Result<Option<Pattern>, OutOfSpace> {
        self.local_end(space, addr, to_u64(buf.len()))?;
        Ok(self.space(space).read_bytes(addr, buf))
    }

    /// A local write (the GPU's own access): writes `data` at `addr` of `space`, whatever the
    /// regions, and clears the poison of the bytes written. Refused when the bytes reach past the
    /// end of the space; a write of 0 bytes at any address up to the size does nothing.
    pub fn write(&mut self, space: Space, addr: u64, data: &[u8]) -> Result<(), OutOfSpace> {
        let end = self.local_end(space, addr, to_u64(data.len()))?;
        self.space_mut(space)
            .write_with(addr, end, Fill::Bytes(data));
        Ok(())
    }

    /// A local write of `len` copies of `byte` at `addr` of `space`; clears their poison. Writing
    /// zero to a page never written allocates nothing.
    pub fn fill(&mut self, space: Space, addr: u64, len: u64, byte: u8) -> Result<(), OutOfSpace> {
        let end = self.local_end(space, addr, len)?;
        self.space_mut(space)
            .write_with(addr, end, Fill::Byte(byte));
        Ok(())
    }

    /// A local write of `len` bytes at `addr` of `space` that are the bytes of `pattern`, kept
    /// as their description: it costs one record, however long it is, and is merged with a
    /// described neighbour it continues. Clears their poison. Refused when the bytes reach past
    /// the end of the space; a write of 0 bytes at any address up to the size does nothing.
    pub fn write_pattern(
        &mut self,
        space: Space,
        addr: u64,
        len: u64,
        pattern: Pattern,
    ) -> Result<(), OutOfSpace> {
        let end = self.local_end(space, addr, len)?;
        self.space_mut(space).write_pattern(addr, end, pattern);
        Ok(())
    }

    /// A local write of `data` at `addr` of `space`, as [`Memory::write`], of bytes received
    /// from the network as part of a transfer whose first byte goes to `origin`: when they are
    /// the bytes of the data pattern continuing the described range that ends at `addr` (or
    /// preceding the one that starts where they end), or the bytes of a pattern at position
    /// `addr - origin`, they are kept as a description, else as literal bytes. The bytes read
    /// back are `data` either way.
    pub fn write_received(
        &mut self,
        space: Space,
        addr: u64,
        data: &[u8],
        origin: u64,
    ) -> Result<(), OutOfSpace> {
        let end = self.local_end(space, addr, to_u64(data.len()))?;
        let sm = self.space_mut(space);
        match sm.describe(addr, end, data, origin) {
            Some(p) => sm.write_pattern(addr, end, p),
            None => sm.write_with(addr, end, Fill::Bytes(data)),
        }
        Ok(())
    }

    /// The bytes `[addr, addr + len)` of `space` as they are held: runs of zeros, described
    /// ranges and literal bytes, in address order, together covering the range exactly. Local
    /// (regions and poison are not looked at); refused when the range reaches past the end of
    /// the space.
    pub fn contents(
        &self,
        space: Space,
        addr: u64,
        len: u64,
    ) -> Result<impl Iterator<Item = Piece<'_>> + '_, OutOfSpace> {
        let end = self.local_end(space, addr, len)?;
        Ok(self.space(space).pieces(addr, end))
    }

    /// The described ranges of `space` as (start, end, pattern of the first byte), in address
    /// order.
    pub fn described(&self, space: Space) -> impl Iterator<Item = (u64, u64, Pattern)> + '_ {
        self.space(space)
            .extents
            .iter()
            .map(|(&s, x)| (s, x.end, x.pattern))
    }

    /// Poisons the `len` bytes at `addr` of `space`: remote reads and atomics of them are refused
    /// with POISONED until they are written. Their values are kept. Refused, changing nothing,
    /// when the bytes reach past the space, or when they touch none of the
    /// [`MAX_POISON_RANGES`] poisoned ranges the space keeps apart already.
    pub fn poison(&mut self, space: Space, addr: u64, len: u64) -> Result<(), PoisonError> {
        //= docs/spec/endpoint.md#2-memory-model
        //# EP-2-6 A byte may be poisoned, which models an uncorrectable memory error.
        let end = self
            .local_end(space, addr, len)
            .map_err(PoisonError::OutOfSpace)?;
        let sm = self.space_mut(space);
        let (lo, hi) = sm.granules(addr, end);
        if sm.poison.len() >= MAX_POISON_RANGES && len > 0 && !sm.touches_poison(lo, hi) {
            return Err(PoisonError::TooManyRanges { space });
        }
        sm.add_poison(addr, end);
        Ok(())
    }

    /// Whether any of the `len` bytes at `addr` of `space` is poisoned (bytes past `u64::MAX` are
    /// not).
    pub fn is_poisoned(&self, space: Space, addr: u64, len: u64) -> bool {
        self.space(space).any_poison(addr, addr.saturating_add(len))
    }

    /// The poisoned bytes of `space` as disjoint, non-adjacent ranges `(start, end)` (end
    /// exclusive) in address order.
    pub fn poisoned(&self, space: Space) -> impl Iterator<Item = (u64, u64)> {
        self.space(space).poison.iter().map(|(&s, &e)| (s, e))
    }

    /// Bytes of backing store held in both spaces: the literal pages times [`PAGE_SIZE`], and
    /// the records of the described ranges (a few dozen bytes each, whatever their length).
    pub fn resident_bytes(&self) -> u64 {
        let pages = self
            .global
            .pages
            .len()
            .saturating_add(self.shared.pages.len());
        let extents = self
            .global
            .extents
            .len()
            .saturating_add(self.shared.extents.len());
        to_u64(pages)
            .saturating_mul(PAGE_BYTES)
            .saturating_add(to_u64(extents).saturating_mul(EXTENT_RECORD))
    }

    /// The allocated pages of literal bytes of `space` in address order: (address of the page's
    /// first byte, its [`PAGE_SIZE`] bytes). Absent pages read as zero: pages never written are
    /// absent, and so may be pages only ever written with zeros. A byte of a described range
    /// (see [`Memory::described`]) is zero in its page.
    pub fn pages(&self, space: Space) -> impl Iterator<Item = (u64, &[u8])> {
        self.space(space)
            .pages
            .iter()
            .map(|(&n, p)| (n.saturating_mul(PAGE_BYTES), p.as_slice()))
    }

    /// True when `self` and `other` hold the same bytes in `space`, an absent page being equal
    /// to a page of zeros and a described range to its bytes. Sizes, regions and poison are not
    /// compared.
    pub fn same_contents(&self, other: &Memory, space: Space) -> bool {
        self.space(space).same_bytes(other.space(space))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::collections::{BTreeMap, BTreeSet};
    use alloc::vec;
    use alloc::vec::Vec;
    use proptest::prelude::*;
    use proptest::sample::Index;
    use proptest::test_runner::RngSeed;

    const G: Space = Space::Global;
    const S: Space = Space::Shared;
    const KEY: u32 = 0x1234_5678;
    const P: u64 = PAGE_BYTES;

    fn mem() -> Memory {
        Memory::new(MemoryConfig {
            global_size: 1 << 20,
            shared_size: 1 << 16,
            ..MemoryConfig::default()
        })
        .unwrap()
    }

    fn region(space: Space, base: u64, len: u64, perms: Perms) -> Region {
        Region::new(space, base, len, KEY, perms)
    }

    /// [`mem`] with one region of global memory: `len` bytes at `base`, key [`KEY`], `perms`.
    fn mem_with(base: u64, len: u64, perms: Perms) -> Memory {
        let mut m = mem();
        m.register(region(G, base, len, perms)).unwrap();
        m
    }

    fn local(m: &Memory, space: Space, addr: u64, len: usize) -> Vec<u8> {
        let mut buf = vec![0u8; len];
        m.read(space, addr, &mut buf).unwrap();
        buf
    }

    fn remote(
        m: &Memory,
        space: Space,
        key: u32,
        addr: u64,
        len: usize,
    ) -> Result<Vec<u8>, Status> {
        let mut buf = vec![0u8; len];
        m.load(space, key, addr, &mut buf).map(|()| buf)
    }

    const SWAP: AtomicOp = AtomicOp::Swap { value: 0x5A5A };

    /// The statuses a load and a store of `len` bytes and an 8-byte swap at `addr` get, each on
    /// its own copy of `m`.
    fn statuses(
        m: &Memory,
        space: Space,
        key: u32,
        addr: u64,
        len: usize,
    ) -> [Result<(), Status>; 3] {
        [
            remote(m, space, key, addr, len).map(|_| ()),
            m.clone().store(space, key, addr, &vec![0xEE; len]),
            m.clone()
                .atomic(space, key, addr, Width::W8, SWAP)
                .map(|_| ()),
        ]
    }

    /// Memory contents, poison and regions of both spaces are those of `before`.
    fn assert_unchanged(m: &Memory, before: &Memory) {
        for space in [G, S] {
            assert!(m.same_contents(before, space), "{space:?} bytes changed");
            assert!(
                m.poisoned(space).eq(before.poisoned(space)),
                "{space:?} poison changed"
            );
            assert!(m.regions(space).eq(before.regions(space)));
        }
        assert_eq!(m.resident_bytes(), before.resident_bytes());
    }

    //= docs/spec/endpoint.md#2-memory-model
    //= type=test
    //# EP-2-1 An endpoint MUST provide two memory spaces, global and shared, each addressed by
    //# byte from 0 up to its configured size, at most 2^57 bytes. A byte never written MUST read
    //# as zero.
    #[test]
    fn spaces_are_sized_and_read_zero_until_written() {
        let cfg = MemoryConfig::default();
        assert_eq!((cfg.global_size, cfg.shared_size), (1 << 40, 1 << 28));
        for (global_size, shared_size, field, value) in [
            (0, 1, "global_size", 0),
            (1, 0, "shared_size", 0),
            (MAX_SPACE_SIZE + 1, 1, "global_size", MAX_SPACE_SIZE + 1),
            (1, u64::MAX, "shared_size", u64::MAX),
        ] {
            let err = Memory::new(MemoryConfig {
                global_size,
                shared_size,
                ..MemoryConfig::default()
            })
            .unwrap_err();
            assert_eq!(err, MemoryConfigError { field, value });
        }
        let mut m = Memory::new(MemoryConfig {
            global_size: MAX_SPACE_SIZE,
            shared_size: 1,
            ..MemoryConfig::default()
        })
        .unwrap();
        assert_eq!((m.size(G), m.size(S)), (MAX_SPACE_SIZE, 1));
        assert_eq!(m.config().global_size, MAX_SPACE_SIZE);

        // Never written: zero, locally and remotely, at both ends of the space.
        m.register(region(G, 0, MAX_SPACE_SIZE, Perms::ALL))
            .unwrap();
        m.register(region(S, 0, 1, Perms::ALL)).unwrap();
        assert_eq!(local(&m, G, MAX_SPACE_SIZE - 16, 16), [0; 16]);
        assert_eq!(remote(&m, G, KEY, 0, 16).unwrap(), [0; 16]);
        assert_eq!(remote(&m, S, KEY, 0, 1).unwrap(), [0]);
        let last = MAX_SPACE_SIZE - 8;
        assert_eq!(
            m.atomic(G, KEY, last, Width::W8, SWAP),
            Ok(AtomicValue::U64(0))
        );
        assert_eq!(
            remote(&m, G, KEY, last, 8).unwrap(),
            0x5A5Au64.to_le_bytes()
        );

        // The spaces are distinct: shared byte 0 is not global byte 0.
        m.write(G, 0, &[7]).unwrap();
        assert_eq!(local(&m, S, 0, 1), [0]);
        m.write(S, 0, &[9]).unwrap();
        assert_eq!(local(&m, G, 0, 1), [7]);

        // Addressed from 0 up to the size, not beyond.
        let mut b = [0u8; 2];
        assert_eq!(
            m.read(S, 0, &mut b),
            Err(OutOfSpace {
                space: S,
                addr: 0,
                len: 2,
                size: 1
            })
        );
        assert!(m.read(G, MAX_SPACE_SIZE - 1, &mut b).is_err());
        assert!(m.write(G, MAX_SPACE_SIZE, &[1]).is_err());
        assert!(m.write(G, u64::MAX, &[1]).is_err());
        assert!(m.read(G, MAX_SPACE_SIZE - 2, &mut b).is_ok());
        // Zero-length local accesses do nothing, up to the size.
        assert!(m.read(G, MAX_SPACE_SIZE, &mut []).is_ok());
        assert!(m.write(S, 1, &[]).is_ok());
        assert!(m.write(S, 2, &[]).is_err());
        assert!(m.fill(G, 5, 0, 1).is_ok());
        assert_eq!(local(&m, G, 0, 8), [7, 0, 0, 0, 0, 0, 0, 0]);
    }

    //= docs/spec/endpoint.md#2-memory-model
    //= type=test
    //# EP-2-2 A region is a range of one space, given by its base and a length of at least 1,
    //# with a 32-bit key and a set of permissions (read, write, atomic). Regions of one space
    //# MUST NOT overlap: a registration that would overlap a registered region, reach past the
    //# end of the space or have length 0 MUST be refused.
    #[test]
    fn registration_refusals() {
        let mut m = mem();
        let r = region(G, 0x1000, 0x100, Perms::READ);
        m.register(r).unwrap();
        let before = m.clone();
        // Every geometry of overlap with [0x1000, 0x1100).
        for (base, len) in [
            (0x1000, 0x100), // identical
            (0x1010, 0x10),  // inside
            (0x0F00, 0x300), // around
            (0x0F00, 0x101), // over the start by one byte
            (0x10FF, 0x100), // over the end by one byte
            (0x1000, 1),     // first byte
            (0x10FF, 1),     // last byte
        ] {
            assert_eq!(
                m.register(region(G, base, len, Perms::ALL)),
                Err(RegionError::Overlaps { existing: r }),
                "[{base:#x}, +{len:#x})"
            );
        }
        assert_eq!(
            m.register(region(G, 0x2000, 0, Perms::ALL)),
            Err(RegionError::Empty {
                space: G,
                base: 0x2000
            })
        );
        for (base, len) in [
            (1 << 20, 1),
            ((1 << 20) - 1, 2),
            (0, (1 << 20) + 1),
            (u64::MAX, 2),
        ] {
            assert_eq!(
                m.register(region(G, base, len, Perms::ALL)),
                Err(RegionError::PastEnd {
                    space: G,
                    base,
                    len,
                    size: 1 << 20
                })
            );
        }
        // Length 0 is refused even where a region lies, and before the range is looked at.
        assert!(matches!(
            m.register(region(G, 0x1000, 0, Perms::ALL)),
            Err(RegionError::Empty { .. })
        ));
        assert!(matches!(
            m.register(region(S, 1 << 16, 0, Perms::ALL)),
            Err(RegionError::Empty { .. })
        ));
        assert_unchanged(&m, &before);
        assert!(m.regions(G).eq([&r]));

        // Adjacent regions on both sides, the same range in the other space, and the whole of
        // the space are accepted.
        let below = region(G, 0x0F00, 0x100, Perms::WRITE);
        let above = region(G, 0x1100, 0x10, Perms::ATOMIC);
        m.register(above).unwrap();
        m.register(below).unwrap();
        m.register(region(S, 0x1000, 0x100, Perms::ALL)).unwrap();
        m.register(region(G, (1 << 20) - 1, 1, Perms::ALL)).unwrap();
        let mut whole = mem();
        whole.register(region(S, 0, 1 << 16, Perms::ALL)).unwrap();

        // Address order, lookup by address.
        let bases: Vec<u64> = m.regions(G).map(|r| r.base).collect();
        assert_eq!(bases, [0x0F00, 0x1000, 0x1100, (1 << 20) - 1]);
        assert_eq!(m.region_at(G, 0x10FF), Some(&r));
        assert_eq!(m.region_at(G, 0x1100), Some(&above));
        assert_eq!(m.region_at(G, 0x1110), None);
        assert_eq!(m.region_at(G, 0x0EFF), None);
        assert_eq!(m.region_at(G, u64::MAX), None);

        // Deregistration: unknown bases (also inside a region) are refused; a freed range can be
        // registered again.
        assert_eq!(
            m.deregister(G, 0x1001),
            Err(RegionError::NotFound {
                space: G,
                base: 0x1001
            })
        );
        assert!(matches!(
            m.deregister(S, 0x0F00),
            Err(RegionError::NotFound { .. })
        ));
        assert_eq!(m.deregister(G, 0x1000), Ok(r));
        assert_eq!(m.region_at(G, 0x1000), None);
        assert!(matches!(
            m.deregister(G, 0x1000),
            Err(RegionError::NotFound { .. })
        ));
        m.register(region(G, 0x1000, 0x100, Perms::ALL)).unwrap();
    }

    //= docs/spec/endpoint.md#2-memory-model
    //= type=test
    //# EP-2-3 A remote access to the bytes [address, address + length) of a space MUST be
    //# refused with OUT_OF_RANGE unless all of them lie inside one registered region of that
    //# space.
    #[test]
    fn accesses_outside_one_region_are_out_of_range() {
        let mut m = mem();
        m.register(region(G, 0x1000, 0x100, Perms::ALL)).unwrap();
        // An adjacent region with the same key and permissions.
        m.register(region(G, 0x1100, 0x100, Perms::ALL)).unwrap();
        m.register(region(G, (1 << 20) - 0x100, 0x100, Perms::ALL))
            .unwrap();
        let oor = [Err(Status::OutOfRange); 3];
        for (addr, len) in [
            (0, 8),              // no region at all
            (0x0FF8, 8),         // just before
            (0x0FFC, 8),         // straddling the start
            (0x1200, 8),         // just after the second region
            (0x11FC, 8),         // straddling the end
            (0x10F8, 16),        // straddling two adjacent regions with the same key
            (0x1000, 0x101),     // one byte too long
            ((1 << 20) - 8, 16), // past the end of the space
            (1 << 20, 8),        // at the end of the space
            (u64::MAX - 7, 8),   // the top of the address space
            (u64::MAX - 3, 16),  // address + length overflows
        ] {
            let got = statuses(&m, G, KEY, addr, len);
            // Atomics use 8 bytes whatever `len` is; they are out of range where those are.
            assert_eq!(got[..2], oor[..2], "{addr:#x} +{len}");
            assert_eq!(m.check(G, KEY, addr, to_u64(len), Access::Read), oor[0]);
        }
        for addr in [
            0u64,
            0x0FF8,
            0x0FFC,
            0x1200,
            0x11FC,
            0x10FC,
            1 << 20,
            u64::MAX - 7,
        ] {
            assert_eq!(statuses(&m, G, KEY, addr, 8)[2], oor[2], "{addr:#x}");
        }
        // The same addresses in the other space, where no region is registered.
        assert_eq!(statuses(&m, S, KEY, 0x1000, 8), oor);
        // Length 0 is never inside a region.
        assert_eq!(m.check(G, KEY, 0x1000, 0, Access::Write), oor[0]);
        assert_eq!(m.load(G, KEY, 0x1000, &mut []), oor[0]);
        assert_eq!(m.store(G, KEY, 0x1000, &[]), oor[0]);
        // Whole regions and their edges are in range.
        assert_eq!(statuses(&m, G, KEY, 0x1000, 0x100), [Ok(()); 3]);
        assert_eq!(statuses(&m, G, KEY, 0x11F8, 8), [Ok(()); 3]);
        assert_eq!(statuses(&m, G, KEY, (1 << 20) - 8, 8), [Ok(()); 3]);
        assert_eq!(m.check(G, KEY, 0x1000, 0x100, Access::Read), Ok(()));
        // Deregistered: out of range again.
        m.deregister(G, 0x1100).unwrap();
        assert_eq!(statuses(&m, G, KEY, 0x1100, 8), oor);
        // Region::contains agrees.
        let r = region(G, 10, 10, Perms::ALL);
        assert!(r.contains(10, 10) && r.contains(19, 1));
        assert!(!r.contains(9, 2) && !r.contains(19, 2) && !r.contains(10, 0));
        assert!(!r.contains(u64::MAX, 2));
    }

    //= docs/spec/endpoint.md#2-memory-model
    //= type=test
    //# EP-2-4 An access inside a region MUST be refused with ACCESS_VIOLATION if its key differs
    //# from the region's key, or if the region does not grant the access: read for LOAD and
    //# RDMA_READ, write for STORE and RDMA_WRITE, atomic for the atomics.
    #[test]
    fn wrong_key_or_missing_permission_is_an_access_violation() {
        use Status::AccessViolation as AV;
        let m = mem_with(0x1000, 0x100, Perms::ALL);
        for key in [0, KEY ^ 1, KEY ^ 0x8000_0000, u32::MAX] {
            assert_eq!(
                statuses(&m, G, key, 0x1000, 8),
                [Err(AV); 3],
                "key {key:#x}"
            );
        }
        // Every combination of permissions against every access kind.
        for bits in 0..8u8 {
            let perms = Perms {
                read: bits & 1 != 0,
                write: bits & 2 != 0,
                atomic: bits & 4 != 0,
            };
            let m = mem_with(0x1000, 0x100, perms);
            let want = |granted: bool| if granted { Ok(()) } else { Err(AV) };
            assert_eq!(
                statuses(&m, G, KEY, 0x1000, 8),
                [want(perms.read), want(perms.write), want(perms.atomic)],
                "{perms}"
            );
            for access in [Access::Read, Access::Write, Access::Atomic] {
                assert_eq!(
                    m.check(G, KEY, 0x1008, 8, access),
                    want(perms.grants(access))
                );
            }
        }
        assert!(Perms::READ.grants(Access::Read) && !Perms::READ.grants(Access::Write));
        assert!(Perms::WRITE.grants(Access::Write) && !Perms::WRITE.grants(Access::Atomic));
        assert!(Perms::ATOMIC.grants(Access::Atomic) && !Perms::ATOMIC.grants(Access::Read));
        assert_eq!(Perms::READ | Perms::WRITE | Perms::ATOMIC, Perms::ALL);
        assert_eq!(Perms::default(), Perms::NONE);
        // The permission each opcode needs.
        for (op, access) in [
            (Opcode::Load, Some(Access::Read)),
            (Opcode::RdmaRead, Some(Access::Read)),
            (Opcode::Store, Some(Access::Write)),
            (Opcode::RdmaWrite, Some(Access::Write)),
            (Opcode::AtomicFetchAdd, Some(Access::Atomic)),
            (Opcode::AtomicSwap, Some(Access::Atomic)),
            (Opcode::AtomicCompareSwap, Some(Access::Atomic)),
            (Opcode::Fence, None),
            (Opcode::LoadResp, None),
            (Opcode::Unknown(0x42), None),
        ] {
            assert_eq!(Access::for_opcode(op), access, "{op:?}");
        }
    }

    //= docs/spec/endpoint.md#2-memory-model
    //= type=test
    //# EP-2-5 An atomic that passes EP-2-3 and EP-2-4 but whose address is not a multiple of its
    //# operand size MUST be refused with MISALIGNED (WIRE-6.5-2).
    #[test]
    fn misaligned_atomics_are_refused() {
        // A region whose base is itself misaligned: alignment is of the address, not the offset.
        let mut m = mem_with(0x1003, 0x100, Perms::ALL);
        let ops = [
            AtomicOp::FetchAdd { addend: 1 },
            AtomicOp::Swap { value: 1 },
            AtomicOp::CompareSwap {
                compare: 0,
                value: 1,
            },
        ];
        let before = m.clone();
        for op in ops {
            for addr in 0x1004..0x1010u64 {
                let w4 = m.atomic(G, KEY, addr, Width::W4, op);
                let w8 = m.atomic(G, KEY, addr, Width::W8, op);
                assert_eq!(w4.is_err(), !addr.is_multiple_of(4), "W4 {addr:#x}");
                assert_eq!(w8.is_err(), !addr.is_multiple_of(8), "W8 {addr:#x}");
                if !addr.is_multiple_of(4) {
                    assert_eq!(w4, Err(Status::Misaligned));
                }
                if !addr.is_multiple_of(8) {
                    assert_eq!(w8, Err(Status::Misaligned));
                }
            }
        }
        // Only the aligned ones wrote anything: bytes outside the aligned words are untouched.
        let mut fresh = before.clone();
        for op in ops {
            for addr in (0x1004..0x1010u64).step_by(4) {
                let _ = fresh.atomic(G, KEY, addr, Width::W4, op);
                if addr.is_multiple_of(8) {
                    let _ = fresh.atomic(G, KEY, addr, Width::W8, op);
                }
            }
        }
        assert!(m.same_contents(&fresh, G));
        // Loads and stores have no alignment requirement.
        assert_eq!(m.store(G, KEY, 0x1005, &[1, 2, 3]), Ok(()));
        assert_eq!(remote(&m, G, KEY, 0x1005, 3), Ok(vec![1, 2, 3]));
    }

    //= docs/spec/endpoint.md#2-memory-model
    //= type=test
    //# EP-2-6 A byte may be poisoned, which models an uncorrectable memory error. A LOAD, RDMA_READ
    //# or atomic that would read a poisoned byte MUST be refused with POISONED. Poison covers whole
    //# naturally aligned blocks of 64 bytes (poison granules): poisoning a byte poisons its
    //# granule. A write clears the poison of every granule it covers whole; a write that covers
    //# part of a poisoned granule writes its bytes and leaves the granule poisoned. (1.3: 1.2 kept
    //# poison per byte and cleared it per byte written; a memory keeps errors per ECC word, which a
    //# write of part of it cannot repair.)
    #[test]
    fn poisoned_bytes_refuse_reads_until_written() {
        use Status::Poisoned as PZ;
        let g = POISON_GRANULE;
        let mut m = mem_with(0, 0x4000, Perms::ALL);
        m.fill(G, 0, 0x4000, 0xAB).unwrap();
        // One byte poisons its granule, [0x100, 0x140).
        m.poison(G, 0x100, 1).unwrap();
        assert!(m.poisoned(G).eq([(0x100, 0x100 + g)]));
        assert!(m.is_poisoned(G, 0x100, 1) && m.is_poisoned(G, 0x13F, 1));
        assert!(!m.is_poisoned(G, 0, 0x100) && !m.is_poisoned(G, 0x140, 100));
        assert!(!m.is_poisoned(G, 0x100, 0) && !m.is_poisoned(S, 0x100, 1));
        // Any read covering a byte of the granule is refused; reads beside it are not.
        assert_eq!(remote(&m, G, KEY, 0x100, 1), Err(PZ));
        assert_eq!(remote(&m, G, KEY, 0x0F0, 32), Err(PZ));
        assert_eq!(remote(&m, G, KEY, 0x13F, 1), Err(PZ));
        assert_eq!(remote(&m, G, KEY, 0x0FF, 1), Ok(vec![0xAB]));
        assert_eq!(remote(&m, G, KEY, 0x140, 7), Ok(vec![0xAB; 7]));
        // Atomics read their operand: every width and op inside the granule.
        for op in [
            SWAP,
            AtomicOp::FetchAdd { addend: 0 },
            AtomicOp::CompareSwap {
                compare: 1,
                value: 2,
            },
        ] {
            assert_eq!(m.atomic(G, KEY, 0x100, Width::W4, op), Err(PZ));
            assert_eq!(m.atomic(G, KEY, 0x138, Width::W8, op), Err(PZ));
            assert!(m.atomic(G, KEY, 0x140, Width::W4, op).is_ok());
        }
        // Poison keeps the value; local reads return it.
        assert_eq!(local(&m, G, 0x100, 1), [0xAB]);
        //= docs/spec/endpoint.md#2-memory-model
        //= type=test
        //# EP-2-6 [...] Poison covers whole naturally aligned blocks of 64 bytes (poison
        //# granules): poisoning a byte poisons its granule. A write clears the poison of every
        //# granule it covers whole; a write that covers part of a poisoned granule writes its
        //# bytes and leaves the granule poisoned.
        // Stores are not refused; one that covers part of a granule leaves it poisoned, one
        // that covers it whole clears it.
        m.poison(G, 0x1000, 2 * g).unwrap();
        assert_eq!(m.store(G, KEY, 0x1008, &[1; 8]), Ok(()));
        assert!(
            m.poisoned(G)
                .eq([(0x100, 0x100 + g), (0x1000, 0x1000 + 2 * g)])
        );
        assert_eq!(remote(&m, G, KEY, 0x1008, 8), Err(PZ));
        assert_eq!(local(&m, G, 0x1008, 8), [1; 8], "the bytes are written");
        assert_eq!(m.store(G, KEY, 0x1000, &[2; 64]), Ok(()));
        assert!(
            m.poisoned(G)
                .eq([(0x100, 0x100 + g), (0x1000 + g, 0x1000 + 2 * g)])
        );
        assert_eq!(remote(&m, G, KEY, 0x1000, 64), Ok(vec![2; 64]));
        assert_eq!(remote(&m, G, KEY, 0x103F, 2), Err(PZ));
        // A store across a granule boundary clears only the granule it covers whole.
        assert_eq!(m.store(G, KEY, 0x1060, &[3; 0x40]), Ok(()));
        assert!(m.poisoned(G).eq([(0x100, 0x100 + g), (0x1040, 0x1080)]));
        // Local writes and fills clear it too, across page boundaries.
        m.poison(G, 3 * P - 4, 8).unwrap();
        assert!(m.poisoned(G).any(|r| r == (3 * P - g, 3 * P + g)));
        m.write(G, 3 * P - 2, &[5, 6, 7]).unwrap();
        assert!(
            m.is_poisoned(G, 3 * P - 4, 8),
            "a part of each granule written"
        );
        m.fill(G, 3 * P - g, 2 * g, 0).unwrap();
        assert!(!m.is_poisoned(G, 3 * P - g, 2 * g));
        assert_eq!(remote(&m, G, KEY, 3 * P - 4, 8), Ok(vec![0; 8]));
        m.write(G, 0x100, &[9; 64]).unwrap();
        m.store(G, KEY, 0x1040, &[0; 0x40]).unwrap();
        assert_eq!(m.poisoned(G).count(), 0);
        assert_eq!(remote(&m, G, KEY, 0x100, 1), Ok(vec![9]));
        // Poison merges adjacent and overlapping granules and stays inside the space.
        m.poison(G, 10, 5).unwrap();
        m.poison(G, 70, 5).unwrap();
        assert!(m.poisoned(G).eq([(0, 2 * g)]));
        m.poison(G, 200, 100).unwrap();
        assert!(m.poisoned(G).eq([(0, 2 * g), (3 * g, 5 * g)]));
        assert!(m.poison(G, (1 << 20) - 1, 2).is_err());
        assert!(m.poison(G, u64::MAX, 2).is_err());
        m.poison(G, (1 << 20) - 1, 1).unwrap();
        assert!(m.poisoned(G).any(|r| r == ((1 << 20) - g, 1 << 20)));
    }

    #[test]
    fn poisoned_ranges_kept_apart_are_bounded() {
        let g = POISON_GRANULE;
        let mut m = Memory::new(MemoryConfig {
            global_size: 1 << 24,
            shared_size: 1 << 16,
            ..MemoryConfig::default()
        })
        .unwrap();
        for i in 0..MAX_POISON_RANGES as u64 {
            m.poison(G, 2 * g * i, 1).unwrap();
        }
        // A range apart from every other is refused, and changes nothing.
        let far = 2 * g * MAX_POISON_RANGES as u64 + 100 * g;
        assert_eq!(
            m.poison(G, far, 1),
            Err(PoisonError::TooManyRanges { space: G })
        );
        assert!(!m.is_poisoned(G, far, 1));
        assert_eq!(m.poisoned(G).count(), MAX_POISON_RANGES);
        // One inside a poisoned granule changes nothing; one that joins two leaves one range
        // fewer.
        m.poison(G, 1, 1).unwrap();
        assert_eq!(m.poisoned(G).count(), MAX_POISON_RANGES);
        m.poison(G, g + 5, 2).unwrap();
        assert_eq!(m.poisoned(G).count(), MAX_POISON_RANGES - 1);
        m.poison(G, far, 1).unwrap();
        assert!(m.is_poisoned(G, far, 1));
        assert!(m.is_poisoned(G, 31, u64::MAX));
    }

    //= docs/spec/endpoint.md#2-memory-model
    //= type=test
    //# EP-2-7 The checks MUST be made in the order EP-2-3, EP-2-4, EP-2-5, EP-2-6; the first that
    //# fails gives the status. (A request that needs a capability the endpoint lacks is refused
    //# UNSUPPORTED before any of them, §11.)
    #[test]
    fn checks_are_made_in_order() {
        use Status::{AccessViolation, Misaligned, OutOfRange, Poisoned};
        // An atomic that fails every check: straddles the region's end, wrong key, no atomic
        // permission, misaligned, poisoned. Fix one check at a time.
        let mut m = mem_with(0x1000, 0x100, Perms::READ | Perms::WRITE);
        m.poison(G, 0x10F0, 0x20).unwrap();
        let before = m.clone();
        let w8 = |m: &mut Memory, key, addr| m.atomic(G, key, addr, Width::W8, SWAP);
        assert_eq!(w8(&mut m, 0, 0x10FC), Err(OutOfRange));
        assert_eq!(w8(&mut m, 0, 0x10F4), Err(AccessViolation));
        assert_eq!(w8(&mut m, KEY, 0x10F4), Err(AccessViolation));
        m.deregister(G, 0x1000).unwrap();
        m.register(region(G, 0x1000, 0x100, Perms::ALL)).unwrap();
        assert_eq!(w8(&mut m, 0, 0x10F4), Err(AccessViolation));
        assert_eq!(w8(&mut m, KEY, 0x10F4), Err(Misaligned));
        assert_eq!(w8(&mut m, KEY, 0x10F0), Err(Poisoned));
        // The poison covers the granules [0x10C0, 0x1100).
        assert_eq!(w8(&mut m, KEY, 0x10C0), Err(Poisoned));
        assert_eq!(w8(&mut m, KEY, 0x10B8), Ok(AtomicValue::U64(0)));

        // Loads: range before key before permission before poison.
        let mut m = before.clone();
        let mut buf = [0xC3u8; 16];
        assert_eq!(m.load(G, 0, 0x10F8, &mut buf), Err(OutOfRange));
        m.deregister(G, 0x1000).unwrap();
        m.register(region(G, 0x1000, 0x100, Perms::WRITE)).unwrap();
        assert_eq!(m.load(G, 0, 0x10F0, &mut buf), Err(AccessViolation));
        assert_eq!(m.load(G, KEY, 0x10F0, &mut buf), Err(AccessViolation));
        m.deregister(G, 0x1000).unwrap();
        m.register(region(G, 0x1000, 0x100, Perms::READ)).unwrap();
        assert_eq!(m.load(G, 0, 0x10F0, &mut buf), Err(AccessViolation));
        assert_eq!(m.load(G, KEY, 0x10F0, &mut buf), Err(Poisoned));
        // No data: the buffer is untouched by every refusal.
        assert_eq!(buf, [0xC3; 16]);
        assert_eq!(m.load(G, KEY, 0x10B0, &mut buf), Ok(()));
        assert_eq!(buf, [0; 16]);

        // Stores: range before key before permission; poison does not stop them.
        let mut m = before.clone();
        m.deregister(G, 0x1000).unwrap();
        m.register(region(G, 0x1000, 0x100, Perms::READ)).unwrap();
        assert_eq!(m.store(G, 0, 0x10F8, &[1; 16]), Err(OutOfRange));
        assert_eq!(m.store(G, 0, 0x10F0, &[1; 16]), Err(AccessViolation));
        assert_eq!(m.store(G, KEY, 0x10F0, &[1; 16]), Err(AccessViolation));
        assert!(m.same_contents(&before, G) && m.poisoned(G).eq(before.poisoned(G)));
        assert_eq!(m.resident_bytes(), 0);
    }

    //= docs/spec/endpoint.md#2-memory-model
    //= type=test
    //# EP-2-13 A refused access MUST NOT change any byte of memory and MUST return no data.
    #[test]
    fn refused_accesses_change_nothing() {
        let mut m = mem_with(0x1000, 0x2000, Perms::READ | Perms::ATOMIC);
        m.register(region(G, 0x8000, 0x2000, Perms::ALL)).unwrap();
        m.fill(G, 0x1000, 0x800, 0x11).unwrap();
        m.poison(G, 0x1800, 8).unwrap();
        m.poison(G, 0x8800, 8).unwrap();
        let before = m.clone();
        // (space, key, addr, len, width) each refused for stores and atomics.
        let cases = [
            (G, KEY, 0x3000, 16, Width::W8), // no region (and a page never written)
            (G, KEY, 0x2FFC, 16, Width::W8), // past the region's end
            (G, KEY, 0x9FFC, 8, Width::W8),  // past the region's end
            (S, KEY, 0x1000, 8, Width::W4),  // other space
            (G, KEY ^ 1, 0x8000, 8, Width::W8), // wrong key
            (G, KEY ^ 1, 0x1000, 8, Width::W4), // wrong key
        ];
        for (space, key, addr, len, width) in cases {
            assert!(m.store(space, key, addr, &vec![0xFF; len]).is_err());
            for op in [
                SWAP,
                AtomicOp::FetchAdd { addend: 3 },
                AtomicOp::CompareSwap {
                    compare: 0,
                    value: 1,
                },
            ] {
                assert!(m.atomic(space, key, addr, width, op).is_err());
            }
            let mut buf = vec![0x77; len];
            assert!(m.load(space, key, addr, &mut buf).is_err());
            assert!(buf.iter().all(|&b| b == 0x77));
        }
        // Refused for want of permission, alignment or because poisoned.
        assert_eq!(
            m.store(G, KEY, 0x1000, &[0xFF; 8]),
            Err(Status::AccessViolation)
        );
        assert_eq!(
            m.atomic(G, KEY, 0x1002, Width::W4, SWAP),
            Err(Status::Misaligned)
        );
        assert_eq!(
            m.atomic(G, KEY, 0x1800, Width::W8, SWAP),
            Err(Status::Poisoned)
        );
        assert_eq!(
            m.atomic(G, KEY, 0x8804, Width::W4, SWAP),
            Err(Status::Poisoned)
        );
        assert_unchanged(&m, &before);
        // A compare-swap that fails writes nothing either (and allocates nothing).
        let old = m.atomic(
            G,
            KEY,
            0x9000,
            Width::W8,
            AtomicOp::CompareSwap {
                compare: 1,
                value: 2,
            },
        );
        assert_eq!(old, Ok(AtomicValue::U64(0)));
        assert_unchanged(&m, &before);
    }

    //= docs/spec/endpoint.md#2-memory-model
    //= type=test
    //# EP-2-8 An atomic MUST be performed indivisibly on the little-endian value of its operand
    //# size (WIRE-1.1-3): fetch-add stores the old value plus the addend modulo 2^(8 x size),
    //# swap stores the new value, compare-swap stores the new value only if the old value equals
    //# the compare value; each returns the old value.
    #[test]
    fn atomics_on_four_byte_values() {
        let mut m = mem_with(0, 0x100, Perms::ALL);
        m.write(G, 0x10, &[0xAA; 12]).unwrap();
        m.write(G, 0x14, &0xFFFF_FFFEu32.to_le_bytes()).unwrap();
        let mut w4 = |op| m.atomic(G, KEY, 0x14, Width::W4, op);
        // Fetch-add wraps at 2^32 and ignores the high half of the addend.
        assert_eq!(
            w4(AtomicOp::FetchAdd {
                addend: 0xDEAD_0000_0003
            }),
            Ok(AtomicValue::U32(0xFFFF_FFFE))
        );
        assert_eq!(
            w4(AtomicOp::FetchAdd { addend: 0 }),
            Ok(AtomicValue::U32(1))
        );
        // Compare-swap: mismatch (also in the high half only being equal), then match on the
        // low 32 bits.
        assert_eq!(
            w4(AtomicOp::CompareSwap {
                compare: 2,
                value: 7
            }),
            Ok(AtomicValue::U32(1))
        );
        assert_eq!(
            w4(AtomicOp::CompareSwap {
                compare: 0x1_0000_0001,
                value: 0x0102_0304
            }),
            Ok(AtomicValue::U32(1))
        );
        assert_eq!(
            w4(AtomicOp::Swap {
                value: 0xFFFF_FFFF_8765_4321
            }),
            Ok(AtomicValue::U32(0x0102_0304))
        );
        assert_eq!(w4(SWAP), Ok(AtomicValue::U32(0x8765_4321)));
        // Little-endian in memory, neighbours untouched.
        let mut want = [0xAA; 12];
        want[4..8].copy_from_slice(&[0x5A, 0x5A, 0, 0]);
        assert_eq!(local(&m, G, 0x10, 12), want);
        assert_eq!(
            m.atomic(G, KEY, 0x14, Width::W4, SWAP)
                .map(AtomicValue::get),
            Ok(0x5A5A)
        );
    }

    //= docs/spec/endpoint.md#2-memory-model
    //= type=test
    //# EP-2-8 An atomic MUST be performed indivisibly on the little-endian value of its operand
    //# size (WIRE-1.1-3): fetch-add stores the old value plus the addend modulo 2^(8 x size),
    //# swap stores the new value, compare-swap stores the new value only if the old value equals
    //# the compare value; each returns the old value.
    #[test]
    fn atomics_on_eight_byte_values() {
        let mut m = mem_with(0, 0x100, Perms::ALL);
        m.write(G, 0x20, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
        let mut w8 = |op| m.atomic(G, KEY, 0x20, Width::W8, op);
        // Little-endian read.
        assert_eq!(
            w8(AtomicOp::FetchAdd { addend: 0 }),
            Ok(AtomicValue::U64(0x0807_0605_0403_0201))
        );
        assert_eq!(
            w8(AtomicOp::Swap { value: u64::MAX }),
            Ok(AtomicValue::U64(0x0807_0605_0403_0201))
        );
        // Wraps at 2^64; the carry leaves no trace in the next word.
        assert_eq!(
            w8(AtomicOp::FetchAdd { addend: 2 }),
            Ok(AtomicValue::U64(u64::MAX))
        );
        assert_eq!(
            w8(AtomicOp::CompareSwap {
                compare: 0,
                value: 9
            }),
            Ok(AtomicValue::U64(1))
        );
        assert_eq!(
            w8(AtomicOp::CompareSwap {
                compare: 1,
                value: 0x1122_3344_5566_7788
            }),
            Ok(AtomicValue::U64(1))
        );
        assert_eq!(
            w8(AtomicOp::FetchAdd { addend: 0 }).map(|v| v.width()),
            Ok(Width::W8)
        );
        assert_eq!(
            local(&m, G, 0x1C, 16),
            [
                0, 0, 0, 0, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0, 0, 0, 0
            ]
        );
        // The low half as a 4-byte atomic sees the little-endian low 32 bits.
        assert_eq!(
            m.atomic(G, KEY, 0x20, Width::W4, AtomicOp::FetchAdd { addend: 0 }),
            Ok(AtomicValue::U32(0x5566_7788))
        );
        assert_eq!(
            m.atomic(G, KEY, 0x24, Width::W4, AtomicOp::FetchAdd { addend: 0 }),
            Ok(AtomicValue::U32(0x1122_3344))
        );
    }

    //= docs/spec/endpoint.md#2-memory-model
    //= type=test
    //# EP-2-9 Memory SHOULD cost in proportion to the bytes written, not to the sizes of the
    //# spaces or regions, so that a GPU can have terabytes of address space.
    #[test]
    fn terabyte_region_costs_only_the_pages_written() {
        let mut m = Memory::new(MemoryConfig::default()).unwrap();
        m.register(region(G, 0, 1 << 40, Perms::ALL)).unwrap();
        m.register(region(S, 0, 1 << 28, Perms::ALL)).unwrap();
        assert_eq!(m.resident_bytes(), 0);
        let addrs = [0u64, 1 << 20, 1 << 30, (1 << 40) - 8, 0x00AB_CDEF_8000];
        for (i, &a) in addrs.iter().enumerate() {
            m.store(G, KEY, a, &(i as u64 + 1).to_le_bytes()).unwrap();
        }
        m.store(S, KEY, (1 << 28) - 1, &[1]).unwrap();
        assert_eq!(m.resident_bytes(), 6 * P);
        // Reads, zero writes, zero fills, poison and failed compare-swaps allocate nothing.
        assert_eq!(remote(&m, G, KEY, 1 << 35, 256), Ok(vec![0; 256]));
        m.store(G, KEY, 1 << 36, &[0; 256]).unwrap();
        m.fill(G, 1 << 37, 1 << 30, 0).unwrap();
        m.poison(G, 1 << 38, 1 << 30).unwrap();
        m.atomic(
            G,
            KEY,
            1 << 39,
            Width::W8,
            AtomicOp::CompareSwap {
                compare: 1,
                value: 1,
            },
        )
        .unwrap();
        assert_eq!(m.resident_bytes(), 6 * P);
        let pages: Vec<u64> = m.pages(G).map(|(a, _)| a).collect();
        assert_eq!(
            pages,
            [0, 1 << 20, 1 << 30, 0x00AB_CDEF_8000, (1 << 40) - P]
        );
        assert!(m.pages(G).all(|(_, p)| p.len() == PAGE_SIZE));
        for (i, &a) in addrs.iter().enumerate() {
            assert_eq!(
                remote(&m, G, KEY, a, 8),
                Ok((i as u64 + 1).to_le_bytes().to_vec())
            );
        }
        // Zeroing a written page keeps its backing; it still compares equal to an empty memory.
        let mut z = mem();
        z.write(G, 5, &[1]).unwrap();
        z.write(G, 5, &[0]).unwrap();
        assert_eq!(z.resident_bytes(), P);
        assert!(z.same_contents(&mem(), G) && mem().same_contents(&z, G));
        z.write(G, 6, &[1]).unwrap();
        assert!(!z.same_contents(&mem(), G) && !mem().same_contents(&z, G));
        assert!(z.same_contents(&mem(), S));
    }

    #[test]
    fn accesses_spanning_pages() {
        let mut m = mem_with(0, 4 * P, Perms::ALL);
        // [P - 10, 3P - 10): the end of page 0, all of page 1, most of page 2.
        let data: Vec<u8> = (0..=250u8).cycle().take(2 * PAGE_SIZE).collect();
        m.store(G, KEY, P - 10, &data).unwrap();
        assert_eq!(m.resident_bytes(), 3 * P);
        assert_eq!(remote(&m, G, KEY, P - 10, data.len()), Ok(data.clone()));
        assert_eq!(local(&m, G, P - 10, data.len()), data);
        assert_eq!(local(&m, G, P - 11, 1), [0]);
        assert_eq!(local(&m, G, 3 * P - 10, 1), [0]);
        assert_eq!(remote(&m, G, KEY, P - 2, 4), Ok(data[8..12].to_vec()));
        let pages: Vec<(u64, &[u8])> = m.pages(G).collect();
        assert_eq!(pages.len(), 3);
        assert_eq!(pages[0].0, 0);
        assert_eq!(&pages[0].1[..PAGE_SIZE - 10], &[0; PAGE_SIZE - 10][..]);
        assert_eq!(&pages[0].1[PAGE_SIZE - 10..], &data[..10]);
        assert_eq!(pages[1], (P, &data[10..10 + PAGE_SIZE]));
        assert_eq!(pages[2].0, 2 * P);
        assert_eq!(&pages[2].1[..PAGE_SIZE - 10], &data[10 + PAGE_SIZE..]);
        // A fill from page 2 into page 3 (never written): reading written, filled and absent
        // bytes in one go.
        m.fill(G, 3 * P - 3, 6, 0xEE).unwrap();
        let mut want = vec![data[2 * PAGE_SIZE - 1]];
        want.extend([0; 7]);
        want.extend([0xEE; 6]);
        want.extend([0; 2]);
        assert_eq!(local(&m, G, 3 * P - 11, 16), want);
        assert_eq!(remote(&m, G, KEY, 3 * P - 11, 16), Ok(want));
        assert_eq!(m.resident_bytes(), 4 * P);
        // Near the top of the largest space.
        let mut big = Memory::new(MemoryConfig {
            global_size: MAX_SPACE_SIZE,
            shared_size: MAX_SPACE_SIZE,
            ..MemoryConfig::default()
        })
        .unwrap();
        big.write(S, MAX_SPACE_SIZE - 3, &[1, 2, 3]).unwrap();
        assert!(big.write(S, MAX_SPACE_SIZE - 3, &[1, 2, 3, 4]).is_err());
        assert_eq!(local(&big, S, MAX_SPACE_SIZE - 4, 4), [0, 1, 2, 3]);
        assert_eq!(
            big.pages(S).map(|(a, _)| a).collect::<Vec<_>>(),
            [MAX_SPACE_SIZE - P]
        );
    }

    fn pattern_bytes(p: Pattern, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        p.fill(&mut v);
        v
    }

    //= docs/spec/endpoint.md#2-memory-model
    //= type=test
    //# EP-2-9 *Internal.* Memory SHOULD cost in proportion to the bytes written, not to the sizes
    //# of the spaces or regions, so that a GPU can have terabytes of address space.
    #[test]
    fn described_ranges_cost_one_record_and_read_exactly() {
        let mut m = Memory::new(MemoryConfig::default()).unwrap();
        m.register(region(G, 0, 1 << 40, Perms::ALL)).unwrap();
        let p = Pattern::new(0xABCD, 0);
        // 64 GiB described: one record, no page.
        m.write_pattern(G, 1 << 36, 1 << 36, p).unwrap();
        assert_eq!(m.resident_bytes(), EXTENT_RECORD);
        assert!(m.pages(G).next().is_none());
        let far = (1 << 36) + (1 << 35) + 3;
        assert_eq!(
            remote(&m, G, KEY, far, 300),
            Ok(pattern_bytes(p.advance((1 << 35) + 3), 300))
        );
        // Across the edges: zero before and after.
        let mut want = vec![0u8; 5];
        want.extend(pattern_bytes(p, 11));
        assert_eq!(local(&m, G, (1 << 36) - 5, 16), want);
        let mut want = pattern_bytes(p.advance((1 << 36) - 4), 4);
        want.extend([0; 4]);
        assert_eq!(local(&m, G, (1 << 37) - 4, 8), want);

        // A store into the middle: literal bytes in one page, the description cut around them.
        let mid = (1 << 36) + 10 * P + 100;
        m.store(G, KEY, mid, &[1, 2, 3]).unwrap();
        assert_eq!(m.resident_bytes(), P + 2 * EXTENT_RECORD);
        let mut want = pattern_bytes(p.advance(10 * P + 98), 2);
        want.extend([1, 2, 3]);
        want.extend(pattern_bytes(p.advance(10 * P + 103), 3));
        assert_eq!(remote(&m, G, KEY, mid - 2, 8), Ok(want));
        let d: Vec<(u64, u64, Pattern)> = m.described(G).collect();
        assert_eq!(
            d,
            [
                (1 << 36, mid, p),
                (mid + 3, 1 << 37, p.advance(10 * P + 103))
            ]
        );
        // Describing the bytes again frees the page and merges the three into one.
        m.write_pattern(G, mid, 3, p.advance(10 * P + 100)).unwrap();
        assert_eq!(m.resident_bytes(), EXTENT_RECORD);
        assert!(m.described(G).eq([(1 << 36, 1 << 37, p)]));

        // An atomic and a fill inside, then poison: the checks see described bytes as any other.
        let a = (1 << 36) + 8 * 1000;
        let old = u64::from_le_bytes(pattern_bytes(p.advance(8000), 8).try_into().unwrap());
        assert_eq!(
            m.atomic(G, KEY, a, Width::W8, AtomicOp::FetchAdd { addend: 1 }),
            Ok(AtomicValue::U64(old))
        );
        assert_eq!(
            remote(&m, G, KEY, a, 8),
            Ok(old.wrapping_add(1).to_le_bytes().to_vec())
        );
        m.fill(G, a + 8, 4, 0).unwrap();
        assert_eq!(local(&m, G, a + 8, 4), [0; 4]);
        assert_eq!(
            local(&m, G, a + 12, 4),
            pattern_bytes(p.advance(8000 + 12), 4)
        );
        m.poison(G, a + 100, 1).unwrap();
        assert_eq!(remote(&m, G, KEY, a + 96, 8), Err(Status::Poisoned));
        // The poison granule of a + 100, written whole, is clean again.
        let gs = (a + 100) - (a + 100) % POISON_GRANULE;
        m.write_pattern(G, gs, POISON_GRANULE, p.advance(8000 + gs - a))
            .unwrap();
        assert!(!m.is_poisoned(G, a + 100, 1));
        assert_eq!(
            remote(&m, G, KEY, a + 96, 8),
            Ok(pattern_bytes(p.advance(8096), 8))
        );
        // Literal bytes over a whole range, then zero: the description is gone.
        let mut z = mem();
        z.write_pattern(G, 100, 50, p).unwrap();
        z.fill(G, 90, 70, 0).unwrap();
        assert!(z.described(G).next().is_none());
        assert_eq!(z.resident_bytes(), 0);
        assert!(z.same_contents(&mem(), G));
        // Out of the space: refused, nothing changed.
        assert!(z.write_pattern(G, (1 << 20) - 1, 2, p).is_err());
        assert!(z.write_received(S, 1 << 16, &[1], 0).is_err());
        assert!(z.contents(G, 1 << 20, 1).is_err());
        assert_eq!(z.resident_bytes(), 0);
    }

    /// A transfer of the data pattern received in pieces, in any order, ends as one record; a
    /// piece that is not the pattern is kept as literal bytes, exactly.
    #[test]
    fn received_pattern_bytes_are_kept_as_one_description() {
        let base = 0x4_0000u64;
        let seg = 4096usize;
        let p = Pattern::new(77, 0);
        let whole = pattern_bytes(p, 5 * seg + 100);
        for order in [
            [0usize, 1, 2, 3, 4, 5],
            [5, 3, 1, 0, 2, 4],
            [4, 5, 2, 3, 0, 1],
        ] {
            let mut m = mem();
            for &k in &order {
                let end = ((k + 1) * seg).min(whole.len());
                m.write_received(G, base + (k * seg) as u64, &whole[k * seg..end], base)
                    .unwrap();
            }
            assert!(
                m.described(G).eq([(base, base + whole.len() as u64, p)]),
                "{order:?}"
            );
            assert_eq!(m.resident_bytes(), EXTENT_RECORD);
            assert_eq!(local(&m, G, base, whole.len()), whole);
        }
        // The pattern at another position than its place in the transfer, no neighbour: the
        // bytes are literal. The next piece at its place (a transfer starting a million bytes
        // before) is described.
        let mut m = mem();
        let q = Pattern::new(5, 1_000_000);
        let first = pattern_bytes(q, 300);
        m.write_received(G, base, &first, base).unwrap();
        assert!(m.described(G).next().is_none());
        let second = pattern_bytes(q.advance(300), 300);
        m.write_received(G, base + 300, &second, base.wrapping_sub(1_000_000))
            .unwrap();
        assert!(
            m.described(G)
                .eq([(base + 300, base + 600, q.advance(300))])
        );
        // Short pieces continuing a described neighbour are described too, on either side.
        m.write_received(G, base + 600, &pattern_bytes(q.advance(600), 3), 0)
            .unwrap();
        m.write_received(G, base + 298, &first[298..], 0).unwrap();
        assert!(
            m.described(G)
                .eq([(base + 298, base + 603, q.advance(298))])
        );
        let mut want = first.clone();
        want.extend(&second);
        want.extend(pattern_bytes(q.advance(600), 3));
        assert_eq!(local(&m, G, base, 603), want);
        // One wrong byte anywhere: literal, and read back as received.
        for i in [0usize, 1, 7, 8, 2000, seg - 1] {
            let mut m = mem();
            let mut data = whole[..seg].to_vec();
            data[i] ^= 1;
            m.write_received(G, base, &data, base).unwrap();
            assert!(m.described(G).next().is_none());
            assert_eq!(local(&m, G, base, seg), data);
            let good = &whole[seg..2 * seg];
            m.write_received(G, base + seg as u64, good, base).unwrap();
            assert_eq!(m.described(G).count(), 1);
            assert_eq!(
                local(&m, G, base + seg as u64 - 1, 2),
                [data[seg - 1], good[0]]
            );
        }
        // A piece received again over a described range changes nothing.
        let mut m = mem();
        m.write_pattern(G, base, whole.len() as u64, p).unwrap();
        m.write_received(G, base + 100, &whole[100..400], base)
            .unwrap();
        assert!(m.described(G).eq([(base, base + whole.len() as u64, p)]));
    }

    #[test]
    fn contents_give_zero_described_and_literal_runs() {
        let mut m = mem();
        let p = Pattern::new(9, 0);
        m.write(G, 10, &[1, 0, 3]).unwrap();
        m.write_pattern(G, 12, 2 * P, p).unwrap();
        m.write(G, 5 * P, &[4]).unwrap();
        let pieces: Vec<Piece<'_>> = m.contents(G, 0, 6 * P).unwrap().collect();
        let head = local(&m, G, 0, 12);
        let mut last = vec![0u8; PAGE_SIZE];
        last[0] = 4;
        assert_eq!(
            pieces,
            [
                Piece::Bytes {
                    addr: 0,
                    bytes: &head
                },
                Piece::Pattern {
                    addr: 12,
                    len: 2 * P,
                    pattern: p
                },
                Piece::Zero {
                    addr: 2 * P + 12,
                    len: 3 * P - 12
                },
                Piece::Bytes {
                    addr: 5 * P,
                    bytes: &last
                },
            ]
        );
        assert_eq!(head, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0]);
        // A window inside a described range starts at its place in the pattern.
        let inner: Vec<Piece<'_>> = m.contents(G, 100, 10).unwrap().collect();
        assert_eq!(
            inner,
            [Piece::Pattern {
                addr: 100,
                len: 10,
                pattern: p.advance(88)
            }]
        );
        assert_eq!(m.contents(G, 7, 0).unwrap().count(), 0);
        assert!(alloc::format!("{m:?}").contains("global_extents: 1"));
    }

    #[test]
    fn the_region_table_is_bounded_and_changed_only_by_the_local_api() {
        use alloc::string::ToString;
        let mut m = Memory::new(MemoryConfig {
            global_size: 1 << 20,
            shared_size: 1 << 16,
            max_regions: 3,
        })
        .unwrap();
        for k in 0..3u64 {
            m.register(region(G, k * 0x100, 0x100, Perms::ALL)).unwrap();
        }
        //= docs/spec/endpoint.md#21-the-region-table
        //= type=test
        //# EP-2-11 A space's region table MUST hold at most `max_regions` regions; a registration
        //# beyond it MUST be refused with the reason table full, and nothing changed.
        let full = m.register(region(G, 0x1000, 0x100, Perms::ALL));
        assert_eq!(full, Err(RegionError::TableFull { space: G, max: 3 }));
        assert_eq!(m.regions(G).count(), 3);
        assert!(full.unwrap_err().to_string().contains("full (3 regions)"));
        // The other space has its own table.
        m.register(region(S, 0, 0x100, Perms::ALL)).unwrap();
        // Removing one makes room; the bytes it covered keep their values.
        //= docs/spec/endpoint.md#21-the-region-table
        //= type=test
        //# EP-2-12 Once a region is removed, every remote access to its bytes MUST be refused as
        //# EP-2-3 A remote access to the bytes [address, address + length) of a space MUST be
        //# refused with OUT_OF_RANGE unless all of them lie inside one registered region of that
        //# space.
        m.write(G, 0x100, &[9]).unwrap();
        assert_eq!(m.deregister(G, 0x100).unwrap().base, 0x100);
        m.register(region(G, 0x1000, 0x100, Perms::ALL)).unwrap();
        let mut b = [0];
        m.read(G, 0x100, &mut b).unwrap();
        assert_eq!(b, [9]);
        assert_eq!(
            m.check(G, KEY, 0x100, 1, Access::Read),
            Err(Status::OutOfRange)
        );
        for bad in [0, 65_537] {
            let e = Memory::new(MemoryConfig {
                max_regions: bad,
                ..MemoryConfig::default()
            })
            .unwrap_err();
            assert_eq!(e.field, "max_regions");
            assert!(e.to_string().contains("1..=65536"));
            // Its own rule, not the sizes'.
            assert_eq!(e.rule(), "region table entries must be 1..=65536");
            assert!(!e.to_string().contains("2^57"), "{e}");
        }
    }

    #[test]
    fn errors_and_debug_describe_themselves() {
        use alloc::format;
        use alloc::string::ToString;
        let r = region(S, 0x10, 0x20, Perms::READ | Perms::ATOMIC);
        assert_eq!(r.to_string(), "shared [0x10, 0x30) key 0x12345678 r-a");
        assert_eq!(r.end(), 0x30);
        assert_eq!(region(G, u64::MAX, 2, Perms::ALL).end(), u64::MAX);
        let msgs = [
            RegionError::Empty { space: G, base: 16 }.to_string(),
            RegionError::PastEnd {
                space: G,
                base: 16,
                len: 32,
                size: 40,
            }
            .to_string(),
            RegionError::Overlaps { existing: r }.to_string(),
            RegionError::NotFound { space: S, base: 16 }.to_string(),
            OutOfSpace {
                space: S,
                addr: 16,
                len: 32,
                size: 40,
            }
            .to_string(),
            MemoryConfigError {
                field: "global_size",
                value: 0,
            }
            .to_string(),
        ];
        assert_eq!(msgs[0], "global region at 0x10 has length 0");
        assert!(msgs[1].contains("32 bytes at 0x10") && msgs[1].contains("40 bytes"));
        assert!(msgs[2].contains("shared [0x10, 0x30)"));
        assert_eq!(msgs[3], "no shared region starts at 0x10");
        assert_eq!(
            msgs[4],
            "32 bytes at 0x10 reach past the end of shared memory (40 bytes)"
        );
        assert!(msgs[5].starts_with("global_size is 0"));
        let mut m = mem();
        m.write(G, 0, &[1]).unwrap();
        let dbg = format!("{m:?}");
        assert!(dbg.contains("global_size: 1048576") && dbg.contains("global_pages: 1"));
        assert_eq!(Access::Atomic.name(), "atomic");
    }

    // -----------------------------------------------------------------------------------------
    // Property: the memory behaves as a naive model written from the rules of §2.

    const MODEL_SIZES: [u64; 2] = [2 * P + 256, P + 512];

    fn idx(space: Space) -> usize {
        match space {
            Space::Global => 0,
            Space::Shared => 1,
        }
    }

    /// Every byte as a map entry, poison as a set of addresses, regions as a list.
    #[derive(Default)]
    struct Model {
        bytes: [BTreeMap<u64, u8>; 2],
        poison: [BTreeSet<u64>; 2],
        regions: [Vec<Region>; 2],
    }

    impl Model {
        fn byte(&self, space: Space, a: u64) -> u8 {
            self.bytes[idx(space)].get(&a).copied().unwrap_or(0)
        }

        fn set(&mut self, space: Space, a: u64, b: u8) {
            self.bytes[idx(space)].insert(a, b);
        }

        /// `len` bytes at `addr` written: the poison granules they cover whole are clean.
        fn written(&mut self, space: Space, addr: u64, len: u64) {
            let g = POISON_GRANULE;
            let size = MODEL_SIZES[idx(space)];
            let end = addr + len;
            let lo = addr.div_ceil(g) * g;
            let hi = if end == size { end } else { end - end % g };
            for a in lo..hi.max(lo) {
                self.poison[idx(space)].remove(&a);
            }
        }

        fn in_space(space: Space, addr: u64, len: u64) -> bool {
            u128::from(addr) + u128::from(len) <= u128::from(MODEL_SIZES[idx(space)])
        }

        fn register(&mut self, r: Region) -> Result<(), RegionError> {
            let (base, len, space) = (r.base, r.len, r.space);
            if len == 0 {
                return Err(RegionError::Empty { space, base });
            }
            if !Self::in_space(space, base, len) {
                let size = MODEL_SIZES[idx(space)];
                return Err(RegionError::PastEnd {
                    space,
                    base,
                    len,
                    size,
                });
            }
            let end = u128::from(base) + u128::from(len);
            if let Some(existing) = self.regions[idx(space)]
                .iter()
                .find(|e| u128::from(e.base) < end && base < e.base + e.len)
            {
                return Err(RegionError::Overlaps {
                    existing: *existing,
                });
            }
            self.regions[idx(space)].push(r);
            Ok(())
        }

        /// The status of a remote access from the rules, in the order of EP-2-7.
        fn status(
            &self,
            space: Space,
            key: u32,
            addr: u64,
            len: u64,
            access: Access,
        ) -> Result<(), Status> {
            let end = u128::from(addr) + u128::from(len);
            let r = self.regions[idx(space)]
                .iter()
                .find(|r| len > 0 && r.base <= addr && end <= u128::from(r.base + r.len))
                .ok_or(Status::OutOfRange)?;
            let permitted = match access {
                Access::Read => r.perms.read,
                Access::Write => r.perms.write,
                Access::Atomic => r.perms.atomic,
            };
            if r.key != key || !permitted {
                return Err(Status::AccessViolation);
            }
            if access == Access::Atomic && !addr.is_multiple_of(len) {
                return Err(Status::Misaligned);
            }
            if access != Access::Write
                && (addr..addr + len).any(|a| self.poison[idx(space)].contains(&a))
            {
                return Err(Status::Poisoned);
            }
            Ok(())
        }

        fn atomic(
            &mut self,
            space: Space,
            key: u32,
            addr: u64,
            width: Width,
            op: AtomicOp,
        ) -> Result<u64, Status> {
            let size = width.bytes() as u64;
            self.status(space, key, addr, size, Access::Atomic)?;
            let modulus = 1u128 << (8 * size);
            let old = (0..size).fold(0u128, |v, i| {
                v | u128::from(self.byte(space, addr + i)) << (8 * i)
            });
            let new = match op {
                AtomicOp::FetchAdd { addend } => Some((old + u128::from(addend)) % modulus),
                AtomicOp::Swap { value } => Some(u128::from(value) % modulus),
                AtomicOp::CompareSwap { compare, value } => {
                    (old == u128::from(compare) % modulus).then(|| u128::from(value) % modulus)
                }
            };
            if let Some(new) = new {
                for i in 0..size {
                    self.set(space, addr + i, (new >> (8 * i)) as u8);
                }
            }
            Ok(old as u64)
        }
    }

    /// Where an operation points: an address, or an offset from 8 bytes before the base of a
    /// region of the model (so that most accesses meet a region, its edges and its neighbours).
    #[derive(Debug, Clone, Copy)]
    enum At {
        Addr(u64),
        Region(Index, u64),
    }

    impl Model {
        fn resolve(&self, space: Space, at: At) -> u64 {
            let list = &self.regions[idx(space)];
            match at {
                At::Region(i, offset) if !list.is_empty() => {
                    let r = list[i.index(list.len())];
                    (r.base + offset % (r.len + 16)).saturating_sub(8)
                }
                At::Region(_, offset) => offset % MODEL_SIZES[idx(space)],
                At::Addr(a) => a,
            }
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Register {
            space: Space,
            at: At,
            len: u64,
            key: u32,
            perms: Perms,
        },
        Deregister {
            space: Space,
            at: At,
            exact: bool,
        },
        Load {
            space: Space,
            key: u32,
            at: At,
            len: usize,
        },
        Store {
            space: Space,
            key: u32,
            at: At,
            data: Vec<u8>,
        },
        Atomic {
            space: Space,
            key: u32,
            at: At,
            align: bool,
            width: Width,
            op: AtomicOp,
        },
        Poison {
            space: Space,
            at: At,
            len: u64,
        },
        Write {
            space: Space,
            at: At,
            data: Vec<u8>,
        },
        Fill {
            space: Space,
            at: At,
            len: u64,
            byte: u8,
        },
        /// A described write of pattern `seed` at position `addr - base`.
        WritePattern {
            space: Space,
            at: At,
            len: u64,
            seed: u64,
            base: u64,
        },
        /// Received bytes of a transfer starting at `addr - back`: pattern `seed` at position
        /// `back + shift` (so the pattern of the transfer when `shift` is 0), with byte `flip`
        /// changed, or other bytes.
        WriteReceived {
            space: Space,
            at: At,
            back: u64,
            data: Received,
        },
    }

    #[derive(Debug, Clone)]
    enum Received {
        Pattern {
            seed: u64,
            len: usize,
            shift: u64,
            flip: Option<Index>,
        },
        Bytes(Vec<u8>),
    }

    impl Received {
        fn bytes(&self, back: u64) -> Vec<u8> {
            match self {
                Received::Pattern {
                    seed,
                    len,
                    shift,
                    flip,
                } => {
                    let mut v = vec![0u8; *len];
                    Pattern::new(*seed, back.wrapping_add(*shift)).fill(&mut v);
                    if let Some(i) = flip {
                        v[i.index(*len)] ^= 0x40;
                    }
                    v
                }
                Received::Bytes(v) => v.clone(),
            }
        }
    }

    fn space() -> impl Strategy<Value = Space> {
        prop_oneof![Just(Space::Global), Just(Space::Shared)]
    }

    /// Addresses all over the model's spaces, often near page boundaries, sometimes huge.
    fn addr() -> impl Strategy<Value = u64> {
        prop_oneof![
            6 => 0..MODEL_SIZES[0] + 16,
            3 => (0..=3u64, 0..32u64).prop_map(|(p, d)| (p * P + d).saturating_sub(16)),
            1 => (0..16u64).prop_map(|d| u64::MAX - d),
        ]
    }

    fn at() -> impl Strategy<Value = At> {
        prop_oneof![
            1 => addr().prop_map(At::Addr),
            3 => (any::<Index>(), any::<u64>()).prop_map(|(i, offset)| At::Region(i, offset)),
        ]
    }

    fn key() -> impl Strategy<Value = u32> {
        prop_oneof![4 => Just(KEY), 1 => Just(KEY ^ 1)]
    }

    fn perms() -> impl Strategy<Value = Perms> {
        prop_oneof![
            3 => Just(Perms::ALL),
            2 => any::<(bool, bool, bool)>().prop_map(|(read, write, atomic)| Perms {
                read,
                write,
                atomic,
            }),
        ]
    }

    fn data() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            2 => proptest::collection::vec(any::<u8>(), 1..16),
            2 => proptest::collection::vec(any::<u8>(), 1..300),
            1 => proptest::collection::vec(Just(0u8), 1..64),
        ]
    }

    fn len() -> impl Strategy<Value = u64> {
        prop_oneof![
            8 => 1..300u64,
            4 => 1..3000u64,
            1 => Just(0u64),
            1 => Just(u64::MAX),
        ]
    }

    fn atomic_op() -> impl Strategy<Value = AtomicOp> {
        let operand = || prop_oneof![any::<u64>(), 0..4u64, (0..4u64).prop_map(|d| u64::MAX - d)];
        (0..3u8, operand(), operand()).prop_map(|(k, a, b)| match k {
            0 => AtomicOp::FetchAdd { addend: a },
            1 => AtomicOp::Swap { value: a },
            _ => AtomicOp::CompareSwap {
                compare: a,
                value: b,
            },
        })
    }

    fn register_op() -> impl Strategy<Value = Op> {
        // Mostly anywhere, sometimes beside or over a registered region.
        let at = prop_oneof![2 => addr().prop_map(At::Addr), 1 => at()];
        (space(), at, len(), key(), perms()).prop_map(|(space, at, len, key, perms)| Op::Register {
            space,
            at,
            len,
            key,
            perms,
        })
    }

    fn load_op() -> impl Strategy<Value = Op> {
        let len = prop_oneof![3 => 1..16usize, 1 => 1..300usize];
        (space(), key(), at(), len).prop_map(|(space, key, at, len)| Op::Load {
            space,
            key,
            at,
            len,
        })
    }

    fn store_op() -> impl Strategy<Value = Op> {
        (space(), key(), at(), data()).prop_map(|(space, key, at, data)| Op::Store {
            space,
            key,
            at,
            data,
        })
    }

    fn atomic() -> impl Strategy<Value = Op> {
        let width = prop_oneof![Just(Width::W4), Just(Width::W8)];
        (space(), key(), at(), any::<bool>(), width, atomic_op()).prop_map(
            |(space, key, at, align, width, op)| Op::Atomic {
                space,
                key,
                at,
                align,
                width,
                op,
            },
        )
    }

    fn poison_op() -> impl Strategy<Value = Op> {
        let len = prop_oneof![4 => 1..16u64, 2 => 1..600u64, 1 => Just(u64::MAX)];
        (space(), at(), len).prop_map(|(space, at, len)| Op::Poison { space, at, len })
    }

    fn write_op() -> impl Strategy<Value = Op> {
        (space(), at(), data()).prop_map(|(space, at, data)| Op::Write { space, at, data })
    }

    fn fill_op() -> impl Strategy<Value = Op> {
        (space(), at(), len(), any::<u8>()).prop_map(|(space, at, len, byte)| Op::Fill {
            space,
            at,
            len,
            byte,
        })
    }

    /// Seeds and bases from small sets, so that writes continue each other's patterns.
    fn write_pattern_op() -> impl Strategy<Value = Op> {
        (
            space(),
            at(),
            len(),
            1..3u64,
            prop_oneof![Just(0u64), Just(1000)],
        )
            .prop_map(|(space, at, len, seed, base)| Op::WritePattern {
                space,
                at,
                len,
                seed,
                base,
            })
    }

    fn write_received_op() -> impl Strategy<Value = Op> {
        let pattern = (
            1..3u64,
            1..600usize,
            prop_oneof![4 => Just(0u64), 1 => 0..9u64],
            proptest::option::weighted(0.2, any::<Index>()),
        )
            .prop_map(|(seed, len, shift, flip)| Received::Pattern {
                seed,
                len,
                shift,
                flip,
            });
        let data = prop_oneof![4 => pattern, 1 => data().prop_map(Received::Bytes)];
        (space(), at(), prop_oneof![Just(0u64), 0..3000u64], data).prop_map(
            |(space, at, back, data)| Op::WriteReceived {
                space,
                at,
                back,
                data,
            },
        )
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            2 => write_pattern_op(),
            2 => write_received_op(),
            4 => register_op(),
            1 => (space(), at(), any::<bool>())
                .prop_map(|(space, at, exact)| Op::Deregister { space, at, exact }),
            4 => load_op(),
            4 => store_op(),
            4 => atomic(),
            3 => poison_op(),
            2 => write_op(),
            1 => fill_op(),
        ]
    }

    fn config() -> ProptestConfig {
        // The defaults honour PROPTEST_CASES and PROPTEST_RNG_SEED; 256 cases otherwise.
        let mut config = ProptestConfig::default();
        if std::env::var_os("PROPTEST_CASES").is_none() {
            config.cases = 256;
        }
        if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
            config.rng_seed = RngSeed::Fixed(0x88B5);
        }
        config.failure_persistence = None;
        config
    }

    /// Applies `ops` to a memory and to the model; every status, every byte returned and the
    /// final state must agree.
    fn run_against_model(ops: Vec<Op>) -> Result<(), TestCaseError> {
        let mut m = Memory::new(MemoryConfig {
            global_size: MODEL_SIZES[0],
            shared_size: MODEL_SIZES[1],
            ..MemoryConfig::default()
        })
        .unwrap();
        let mut model = Model::default();
        for op in ops {
            match op {
                Op::Register {
                    space,
                    at,
                    len,
                    key,
                    perms,
                } => {
                    let r = Region::new(space, model.resolve(space, at), len, key, perms);
                    let got = m.register(r);
                    let want = model.register(r);
                    let kind = |e: &RegionError| core::mem::discriminant(e);
                    let (got_kind, want_kind) =
                        (got.err().map(|e| kind(&e)), want.err().map(|e| kind(&e)));
                    prop_assert_eq!(got_kind, want_kind, "{:?}", r);
                    if let Err(RegionError::Overlaps { existing }) = got {
                        // Any of the regions it overlaps may be named.
                        prop_assert!(existing.base < r.end() && r.base < existing.end());
                        prop_assert!(model.regions[idx(space)].contains(&existing));
                    } else {
                        prop_assert_eq!(got, want);
                    }
                }
                Op::Deregister { space, at, exact } => {
                    let list = &model.regions[idx(space)];
                    let base = match at {
                        At::Region(i, _) if exact && !list.is_empty() => {
                            list[i.index(list.len())].base
                        }
                        _ => model.resolve(space, at),
                    };
                    let list = &mut model.regions[idx(space)];
                    let want = match list.iter().position(|r| r.base == base) {
                        Some(i) => Ok(list.remove(i)),
                        None => Err(RegionError::NotFound { space, base }),
                    };
                    prop_assert_eq!(m.deregister(space, base), want);
                }
                Op::Load {
                    space,
                    key,
                    at,
                    len,
                } => {
                    let addr = model.resolve(space, at);
                    let mut buf = vec![0x99; len];
                    let got = m.load(space, key, addr, &mut buf);
                    let want = model.status(space, key, addr, len as u64, Access::Read);
                    prop_assert_eq!(got, want);
                    let expect: Vec<u8> = match want {
                        Ok(()) => (0..len as u64)
                            .map(|i| model.byte(space, addr + i))
                            .collect(),
                        Err(_) => vec![0x99; len],
                    };
                    prop_assert_eq!(buf, expect);
                }
                Op::Store {
                    space,
                    key,
                    at,
                    data,
                } => {
                    let addr = model.resolve(space, at);
                    let got = m.store(space, key, addr, &data);
                    let want = model.status(space, key, addr, data.len() as u64, Access::Write);
                    prop_assert_eq!(got, want);
                    if want.is_ok() {
                        for (i, &b) in data.iter().enumerate() {
                            model.set(space, addr + i as u64, b);
                        }
                        model.written(space, addr, data.len() as u64);
                    }
                }
                Op::Atomic {
                    space,
                    key,
                    at,
                    align,
                    width,
                    op,
                } => {
                    let mut addr = model.resolve(space, at);
                    if align {
                        addr &= !(width.bytes() as u64 - 1);
                    }
                    let got = m.atomic(space, key, addr, width, op);
                    prop_assert_eq!(got.map(|v| v.width()).unwrap_or(width), width);
                    prop_assert_eq!(
                        got.map(AtomicValue::get),
                        model.atomic(space, key, addr, width, op)
                    );
                }
                Op::Poison { space, at, len } => {
                    let addr = model.resolve(space, at);
                    let got = m.poison(space, addr, len);
                    prop_assert_eq!(got.is_ok(), Model::in_space(space, addr, len));
                    if got.is_ok() && len > 0 {
                        let g = POISON_GRANULE;
                        let end = addr + len;
                        let hi = (end.div_ceil(g) * g).min(MODEL_SIZES[idx(space)].max(end));
                        model.poison[idx(space)].extend(addr - addr % g..hi);
                    }
                }
                Op::Write { space, at, data } => {
                    let addr = model.resolve(space, at);
                    let got = m.write(space, addr, &data);
                    prop_assert_eq!(got.is_ok(), Model::in_space(space, addr, data.len() as u64));
                    if got.is_ok() {
                        for (i, &b) in data.iter().enumerate() {
                            model.set(space, addr + i as u64, b);
                        }
                        model.written(space, addr, data.len() as u64);
                    }
                }
                Op::Fill {
                    space,
                    at,
                    len,
                    byte,
                } => {
                    let addr = model.resolve(space, at);
                    let got = m.fill(space, addr, len, byte);
                    prop_assert_eq!(got.is_ok(), Model::in_space(space, addr, len));
                    if got.is_ok() {
                        for a in addr..addr + len {
                            model.set(space, a, byte);
                        }
                        model.written(space, addr, len);
                    }
                }
                Op::WritePattern {
                    space,
                    at,
                    len,
                    seed,
                    base,
                } => {
                    let addr = model.resolve(space, at);
                    let p = Pattern::new(seed, addr.wrapping_sub(base));
                    let got = m.write_pattern(space, addr, len, p);
                    prop_assert_eq!(got.is_ok(), Model::in_space(space, addr, len));
                    if got.is_ok() {
                        for i in 0..len {
                            model.set(space, addr + i, p.byte(i));
                        }
                        model.written(space, addr, len);
                    }
                }
                Op::WriteReceived {
                    space,
                    at,
                    back,
                    data,
                } => {
                    let addr = model.resolve(space, at);
                    let data = data.bytes(back);
                    let got = m.write_received(space, addr, &data, addr.wrapping_sub(back));
                    prop_assert_eq!(got.is_ok(), Model::in_space(space, addr, data.len() as u64));
                    if got.is_ok() {
                        for (i, &b) in data.iter().enumerate() {
                            model.set(space, addr + i as u64, b);
                        }
                        model.written(space, addr, data.len() as u64);
                    }
                }
            }
        }
        // Final state: every byte, every poisoned byte, every region, and no more pages than
        // were written.
        let mut written_pages = 0;
        for space in [Space::Global, Space::Shared] {
            let size = MODEL_SIZES[idx(space)];
            let mut all = vec![0u8; size as usize];
            m.read(space, 0, &mut all).unwrap();
            let want: Vec<u8> = (0..size).map(|a| model.byte(space, a)).collect();
            prop_assert!(all == want, "{:?} contents differ", space);
            let poisoned: BTreeSet<u64> = m.poisoned(space).flat_map(|(s, e)| s..e).collect();
            prop_assert_eq!(&poisoned, &model.poison[idx(space)]);
            // Ranges are reported merged: neither neighbour of a range is poisoned.
            for (s, e) in m.poisoned(space) {
                prop_assert!(s < e && !m.is_poisoned(space, e, 1));
                prop_assert!(s == 0 || !m.is_poisoned(space, s - 1, 1));
            }
            let mut regions = model.regions[idx(space)].clone();
            regions.sort_by_key(|r| r.base);
            prop_assert!(m.regions(space).eq(regions.iter()));
            let touched: BTreeSet<u64> = model.bytes[idx(space)].keys().map(|a| a / P).collect();
            written_pages += touched.len() as u64;
            // Described ranges: disjoint, not empty, never one continuing its neighbour, over
            // bytes that are zero in their pages.
            let mut prev: Option<(u64, u64, Pattern)> = None;
            for (s, e, p) in m.described(space) {
                prop_assert!(s < e && e <= size);
                if let Some((ps, pe, pp)) = prev {
                    prop_assert!(pe <= s);
                    prop_assert!(pe < s || pp.advance(pe - ps) != p, "unmerged at {:#x}", s);
                }
                prev = Some((s, e, p));
                for (page, bytes) in m.pages(space) {
                    for (i, &b) in bytes.iter().enumerate() {
                        let a = page + i as u64;
                        prop_assert!(a < s || a >= e || b == 0, "literal byte under {:#x}", a);
                    }
                }
            }
            // The pieces cover the space in order and give its bytes.
            let mut at = 0;
            for piece in m.contents(space, 0, size).unwrap() {
                prop_assert_eq!(piece.addr(), at);
                prop_assert!(!piece.is_empty());
                let range = at as usize..(at + piece.len()) as usize;
                match piece {
                    Piece::Zero { .. } => prop_assert!(want[range].iter().all(|&b| b == 0)),
                    Piece::Pattern { pattern, .. } => prop_assert!(pattern.matches(&want[range])),
                    Piece::Bytes { bytes, .. } => prop_assert_eq!(bytes, &want[range]),
                }
                at += piece.len();
            }
            prop_assert_eq!(at, size);
            // The same bytes held literally compare equal, and one byte changed does not.
            let mut literal = Memory::new(m.config()).unwrap();
            literal.write(space, 0, &want).unwrap();
            prop_assert!(m.same_contents(&literal, space) && literal.same_contents(&m, space));
            let b = want[size as usize / 2];
            literal.write(space, size / 2, &[b ^ 1]).unwrap();
            prop_assert!(!m.same_contents(&literal, space) && !literal.same_contents(&m, space));
        }
        let records = m.described(Space::Global).count() + m.described(Space::Shared).count();
        prop_assert!(m.resident_bytes() <= written_pages * P + records as u64 * EXTENT_RECORD);
        Ok(())
    }

    //= docs/spec/endpoint.md#2-memory-model
    //= type=test
    //# EP-2-3 A remote access to the bytes [address, address + length) of a space MUST be
    //# refused with OUT_OF_RANGE unless all of them lie inside one registered region of
    //# that space.
    //# EP-2-6 A byte may be poisoned, which models an uncorrectable memory error. A LOAD, RDMA_READ
    //# or atomic that would read a poisoned byte MUST be refused with POISONED. Poison covers whole
    //# naturally aligned blocks of 64 bytes (poison granules): poisoning a byte poisons its
    //# granule. A write clears the poison of every granule it covers whole; a write that covers
    //# part of a poisoned granule writes its bytes and leaves the granule poisoned. (1.3: 1.2 kept
    //# poison per byte and cleared it per byte written; a memory keeps errors per ECC word, which a
    //# write of part of it cannot repair.)
    //# EP-2-7 The checks MUST be made in the order EP-2-3, EP-2-4, EP-2-5, EP-2-6; the first that
    //# fails gives the status. (A request that needs a capability the endpoint lacks is refused
    //# UNSUPPORTED before any of them, §11.)
    //# EP-2-8 An atomic MUST be performed indivisibly on the little-endian value of its operand
    //# size (WIRE-1.1-3): fetch-add stores the old value plus the addend modulo 2^(8 x size),
    //# swap stores the new value, compare-swap stores the new value only if the old value equals
    //# the compare value; each returns the old value.
    proptest! {
        #![proptest_config(config())]

        /// Random sequences of operations give the statuses, data and final contents of a
        /// model that applies the rules of §2 byte by byte.
        #[test]
        fn behaves_as_the_reference_model(ops in proptest::collection::vec(op(), 1..60)) {
            run_against_model(ops)?;
        }
    }
}

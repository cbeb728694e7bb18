//! Parameters of an endpoint (endpoint.md §1.1).

use core::fmt;

use ethlink_link::{Config as LinkConfig, ConfigError, Duration};
use ethlink_protocol::{Capabilities, GpuId, MacAddr, Role};

use crate::memory::MemoryConfig;

/// Bytes of one reassembly block: RDMA segments start and (except the last) end on multiples of
/// it (EP-6-3, EP-6-8).
pub const BLOCK: u32 = 256;
/// Bytes of an RDMA_WRITE header (wire.md §6.7).
const WRITE_HEADER: usize = 28;
/// Bytes of an untagged DATA frame around its transactions: Ethernet 14, link 6, network 8, FCS 4.
const FRAME_OVERHEAD: usize = 32;
/// Bytes of a frame of one full RDMA_WRITE segment beyond the segment's data, with the 802.1Q
/// tag a peer may add (EP-3-2): 28 + 32 + 4.
pub const SEGMENT_FRAME_OVERHEAD: usize = WRITE_HEADER + FRAME_OVERHEAD + 4;
/// The capabilities an endpoint announces by default (EP-11-1).
pub const DEFAULT_CAPS: Capabilities = Capabilities::RDMA
    .union(Capabilities::ATOMICS)
    .union(Capabilities::SHARED)
    .union(Capabilities::PACKING);
/// VCs every port needs (EP-3-1).
pub const VCS_NEEDED: u8 = 4;

/// How requests are spread over the usable ports (EP-4-2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Policy {
    /// A fixed mix of (destination, stream or tag) picks the port.
    Hash,
    /// The next port in a cycle.
    RoundRobin,
    /// The port with the fewest bytes waiting.
    LeastLoaded,
    /// Round-robin, and every RDMA write segment on the next port.
    #[default]
    Spray,
}

impl Policy {
    /// Every policy, in a fixed order.
    pub const ALL: [Policy; 4] = [
        Policy::Hash,
        Policy::RoundRobin,
        Policy::LeastLoaded,
        Policy::Spray,
    ];

    /// The name endpoint.md uses.
    pub const fn name(self) -> &'static str {
        match self {
            Policy::Hash => "hash",
            Policy::RoundRobin => "round-robin",
            Policy::LeastLoaded => "least-loaded",
            Policy::Spray => "spray",
        }
    }

    /// The policy named `s` (as [`Policy::name`] writes it).
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == s)
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Configuration of one GPU endpoint. [`Config::default`] gives the defaults of endpoint.md §1.1.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// This GPU's id.
    pub gpu: GpuId,
    /// Protocol stacks, 1..=16.
    pub stacks: u8,
    /// Ports per stack, 1..=16.
    pub ports: u8,
    /// Load-balancing policy.
    pub policy: Policy,
    /// Tags of the load-store unit, 1..=32768.
    pub lsu_tags: u16,
    /// Tags of the RDMA engine, 1..=32768.
    pub rdma_tags: u16,
    /// RDMA descriptors outstanding at most, 1..=65536.
    pub rdma_queue: u32,
    /// Fences outstanding at most, 1..=65536 (EP-5-9).
    pub max_fences: u32,
    /// Bytes per RDMA segment: a multiple of 256, 256..=8192, fitting the link MFS.
    pub segment: u32,
    /// Bytes per RDMA_READ: a multiple of `segment`, at most 2^20 (EP-6-7).
    pub read_chunk: u32,
    /// Bytes per RDMA write on the wire: a longer write is sent as writes of this many bytes,
    /// each with its own tag and completion (EP-6-2); the longest write a target reassembles
    /// (EP-6-13). A multiple of 256, `segment..=2^24`.
    pub write_chunk: u32,
    /// Chunks of one RDMA read outstanding at most, 1..=65536.
    pub read_window: u32,
    /// Longest a transaction waits for others to share its frame, at most 100 us.
    pub pack_delay: Duration,
    /// Deadline of an operation after issue, retry or progress, 1 us..=1 s.
    pub op_timeout: Duration,
    /// Retries of one operation, 0..=16.
    pub max_retries: u8,
    /// Rest of a tag whose operation was retried or ended without its final response: at least
    /// `2 * frame_lifetime` and at least `frame_lifetime + op_timeout`.
    pub tag_quarantine: Duration,
    /// Longest a request or response can live in the fabric (EP-1-2), 1 us..=1 s, at most
    /// `op_timeout`.
    pub frame_lifetime: Duration,
    /// Wait before the first retry of an operation answered BUSY; doubles with each retry
    /// (EP-9-5), 100 ns..=1 ms.
    pub busy_backoff: Duration,
    /// RDMA writes a target reassembles at once, 1..=65536.
    pub max_reassemblies: u32,
    /// 256-byte blocks the target's reassembly records cover in all (EP-6-12), at least
    /// `segment / 256`, at most 2^32 - 1.
    pub max_reassembly_blocks: u32,
    /// RDMA reads a target serves at once, 1..=65536.
    pub max_read_jobs: u32,
    /// Bytes of responses held before the target stops taking requests, at least 9216.
    pub response_backlog: u32,
    /// Longest a target keeps a request frame it stopped taking (EP-8-4): one held this long
    /// is discarded unperformed (EP-8-9), 1 us..=1 s. `frame_lifetime` counts it (Figure EP-F1).
    pub hold_max: Duration,
    /// Bytes queued per port and VC before the RDMA engine waits, at least 9216.
    pub port_queue: u32,
    /// The sizes of the memory spaces and of their region tables.
    pub memory: MemoryConfig,
    /// The optional features this endpoint has (EP-11-1): RDMA, ATOMICS and SHARED as a target,
    /// PACKING as a sender. Other bits are ignored. Announced in every port's INIT.
    pub caps: Capabilities,
    /// The configuration of every port's link; each port gets its own MAC address and nonce
    /// seed derived from this one, the GPU id and the port, the role Endpoint and `caps`.
    pub link: LinkConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            gpu: GpuId::new(0).unwrap_or_default(),
            stacks: 4,
            ports: 2,
            policy: Policy::Spray,
            lsu_tags: 1024,
            rdma_tags: 512,
            rdma_queue: 64,
            max_fences: 1024,
            segment: 8192,
            read_chunk: 65536,
            write_chunk: 1 << 20,
            read_window: 16,
            pack_delay: Duration::from_nanos(50),
            op_timeout: Duration::from_micros(200),
            max_retries: 3,
            tag_quarantine: Duration::from_micros(500),
            frame_lifetime: Duration::from_micros(200),
            busy_backoff: Duration::from_micros(1),
            max_reassemblies: 4096,
            max_reassembly_blocks: 1 << 24,
            max_read_jobs: 256,
            response_backlog: 1 << 20,
            hold_max: Duration::from_micros(25),
            port_queue: 64 * 1024,
            memory: MemoryConfig::default(),
            caps: DEFAULT_CAPS,
            link: LinkConfig::default(),
        }
    }
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Config {
    /// Number of ports, `stacks * ports`.
    pub fn port_count(&self) -> usize {
        usize::from(self.stacks) * usize::from(self.ports)
    }

    /// The most completions the endpoint holds for the GPU to take (EP-5-10): as many as it
    /// can have operations outstanding, `lsu_tags + rdma_queue + max_fences`.
    pub fn max_completions(&self) -> usize {
        usize::from(self.lsu_tags)
            .saturating_add(self.rdma_queue as usize)
            .saturating_add(self.max_fences as usize)
    }

    /// Checks every parameter against endpoint.md §1.1 and the link's against link.md §1.1.
    //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
    //# EP-13-15 (§1) An endpoint MUST refuse, with an error that names the parameter, a
    //# configuration that breaks a relation of EP-1-3,
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field, value: u64, rule| Err(ConfigError { field, value, rule });
        if !(1..=16).contains(&self.stacks) {
            return err("stacks", self.stacks.into(), "must be 1..=16");
        }
        if !(1..=16).contains(&self.ports) {
            return err("ports", self.ports.into(), "must be 1..=16");
        }
        if !(1..=32768).contains(&self.lsu_tags) {
            return err("lsu_tags", self.lsu_tags.into(), "must be 1..=32768");
        }
        if !(1..=32768).contains(&self.rdma_tags) {
            return err("rdma_tags", self.rdma_tags.into(), "must be 1..=32768");
        }
        if !(1..=65536).contains(&self.rdma_queue) {
            return err("rdma_queue", self.rdma_queue.into(), "must be 1..=65536");
        }
        if !(1..=65536).contains(&self.max_fences) {
            return err("max_fences", self.max_fences.into(), "must be 1..=65536");
        }
        let mfs = usize::from(self.link.mfs);
        //= docs/spec/endpoint.md#3-ports-and-virtual-channels
        //# EP-3-5 An endpoint's configured MFS MUST hold a frame of one full segment with an
        //# 802.1Q tag (`segment` + 64 bytes).
        let fits = (self.segment as usize)
            .checked_add(SEGMENT_FRAME_OVERHEAD)
            .is_some_and(|n| n <= mfs);
        if !self.segment.is_multiple_of(BLOCK) || !(256..=8192).contains(&self.segment) || !fits {
            return err(
                "segment",
                self.segment.into(),
                "must be a multiple of 256, 256..=8192, and fit in a frame of link.mfs bytes with its 64 bytes of headers (tagged)",
            );
        }
        //= docs/spec/endpoint.md#12-timers-and-their-relations
        //# EP-1-3 An endpoint MUST refuse a configuration that breaks a relation of Table EP-T1:
        //# `lsu_tags + rdma_tags <= 65536`, `read_chunk` a multiple of `segment`
        if self.read_chunk == 0
            || !self.read_chunk.is_multiple_of(self.segment)
            || self.read_chunk > 1 << 20
        {
            return err(
                "read_chunk",
                self.read_chunk.into(),
                "must be a non-zero multiple of segment, at most 2^20",
            );
        }
        if self.write_chunk < self.segment
            || !self.write_chunk.is_multiple_of(256)
            || self.write_chunk > 1 << 24
        {
            return err(
                "write_chunk",
                self.write_chunk.into(),
                "must be a multiple of 256, segment..=2^24",
            );
        }
        if !(1..=65536).contains(&self.read_window) {
            return err("read_window", self.read_window.into(), "must be 1..=65536");
        }
        if ns(self.pack_delay) > 100_000 {
            return err("pack_delay", ns(self.pack_delay), "must be at most 100 us");
        }
        if !(1_000..=1_000_000_000).contains(&ns(self.op_timeout)) {
            return err("op_timeout", ns(self.op_timeout), "must be 1 us..=1 s");
        }
        if self.pack_delay >= self.op_timeout {
            return err(
                "pack_delay",
                ns(self.pack_delay),
                "must be less than op_timeout",
            );
        }
        if self.max_retries > 16 {
            return err("max_retries", self.max_retries.into(), "must be 0..=16");
        }
        //= docs/spec/endpoint.md#12-timers-and-their-relations
        //# EP-1-3 An endpoint MUST refuse a configuration that breaks a relation of Table EP-T1:
        //= docs/spec/endpoint.md#12-timers-and-their-relations
        //# EP-1-2 `frame_lifetime` MUST be at least the longest time a DATA frame can spend
        //# between its first transmission and its delivery to the destination endpoint
        if !(1_000..=1_000_000_000).contains(&ns(self.frame_lifetime)) {
            return err(
                "frame_lifetime",
                ns(self.frame_lifetime),
                "must be 1 us..=1 s",
            );
        }
        if self.op_timeout < self.frame_lifetime {
            return err(
                "op_timeout",
                ns(self.op_timeout),
                "must be at least frame_lifetime",
            );
        }
        if !(100..=1_000_000).contains(&ns(self.busy_backoff)) {
            return err(
                "busy_backoff",
                ns(self.busy_backoff),
                "must be 100 ns..=1 ms",
            );
        }
        //= docs/spec/endpoint.md#12-timers-and-their-relations
        //# EP-1-4 Endpoints that address one another MUST be configured with one
        //# `frame_lifetime`, and the `tag_quarantine` of every requester MUST be at least
        //# `frame_lifetime` plus the `op_timeout` of every target it addresses.
        // The reference checks the local form: the endpoints of a fabric share their timers.
        let twice = ns(self.frame_lifetime).saturating_mul(2);
        let plus = ns(self.frame_lifetime).saturating_add(ns(self.op_timeout));
        if ns(self.tag_quarantine) < twice.max(plus) || ns(self.tag_quarantine) > 10_000_000_000 {
            return err(
                "tag_quarantine",
                ns(self.tag_quarantine),
                "must be at least 2 * frame_lifetime and at least frame_lifetime + op_timeout, at most 10 s",
            );
        }
        if !(1..=65536).contains(&self.max_reassemblies) {
            return err(
                "max_reassemblies",
                self.max_reassemblies.into(),
                "must be 1..=65536",
            );
        }
        if self.max_reassembly_blocks < self.segment / BLOCK
            || self.max_reassembly_blocks == u32::MAX
        {
            return err(
                "max_reassembly_blocks",
                self.max_reassembly_blocks.into(),
                "must be at least segment / 256, below 2^32 - 1",
            );
        }
        if !(1..=65536).contains(&self.max_read_jobs) {
            return err(
                "max_read_jobs",
                self.max_read_jobs.into(),
                "must be 1..=65536",
            );
        }
        if self.response_backlog < 9216 {
            return err(
                "response_backlog",
                self.response_backlog.into(),
                "must be at least 9216",
            );
        }
        if !(1_000..=1_000_000_000).contains(&ns(self.hold_max)) {
            return err("hold_max", ns(self.hold_max), "must be 1 us..=1 s");
        }
        if self.port_queue < 9216 {
            return err(
                "port_queue",
                self.port_queue.into(),
                "must be at least 9216",
            );
        }
        //= docs/spec/endpoint.md#3-ports-and-virtual-channels
        //# EP-3-1 Each port's link MUST have at least 4 VCs, used as follows, so that a full queue
        //# of requests can never hold back the responses that would drain it:
        if self.link.vcs < VCS_NEEDED {
            return err(
                "link.vcs",
                self.link.vcs.into(),
                "must be at least 4 (EP-3-1)",
            );
        }
        self.link.validate()?;
        Ok(())
    }

    /// The link configuration of port `port` of stack `stack`: its own locally administered MAC
    /// address ([`port_mac`]), nonce seed, the role Endpoint and this endpoint's capabilities.
    pub fn port_link(&self, stack: u8, port: u8) -> LinkConfig {
        let mut l = self.link.clone();
        l.mac = port_mac(self.gpu, stack, port);
        //= docs/spec/endpoint.md#11-capabilities
        //# EP-11-1 Every port of an endpoint MUST announce in its INIT and INIT_ECHO the role
        //# Endpoint and the endpoint's capabilities
        l.role = Role::Endpoint;
        //# (RDMA, ATOMICS, SHARED, PACKING as configured, TAGGED when the port sends tagged
        //# frames).
        let mut caps = Capabilities::from_bits_truncate(self.caps.bits() & DEFAULT_CAPS.bits());
        if l.vlan.is_some() {
            caps = caps.union(Capabilities::TAGGED);
        }
        l.caps = caps;
        l.nonce_seed = self
            .link
            .nonce_seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(
                u64::from(self.gpu.value()) << 16 | u64::from(stack) << 8 | u64::from(port),
            );
        l
    }
}

/// The MAC address of port `port` of stack `stack` of GPU `gpu` (EP-12-4): `02:00:gg:gg:ss:pp`,
/// locally administered (bit 1 of the first byte set) and unicast (bit 0 clear), the GPU id in
/// bytes 2..3 (big-endian), the stack in byte 4 and the port in byte 5.
pub fn port_mac(gpu: GpuId, stack: u8, port: u8) -> MacAddr {
    //= docs/spec/endpoint.md#12-reset-and-identity
    //# EP-12-4 Port `p` of stack `s` of GPU `g` MUST use the MAC address `02:00:gg:gg:ss:pp`
    let [hi, lo] = gpu.value().to_be_bytes();
    MacAddr([0x02, 0x00, hi, lo, stack, port])
}

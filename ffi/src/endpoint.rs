//! A GPU endpoint (`ethlink-endpoint`) behind a handle.
//!
//! `ethlink_poll_transmit` visits the ports in rounds: each round offers every port, in port
//! order, one chance to send; rounds go on until one sends nothing. Link changes are found by
//! comparing each port's link with what was last reported, when events are polled; completions
//! follow them.

use std::collections::VecDeque;

use ethlink_endpoint::{
    Bytes, Completion, CompletionData, CompletionStatus, Config, Endpoint, IssueError, LsOp,
    LsRequest as EpLs, OpId, Ordering, Perms, Policy, PostError, RdmaDesc as EpDesc, RdmaDir,
    Region, Remote,
};
use ethlink_link::{Duration, Instant};
use ethlink_protocol::{AtomicOp, AtomicValue, Width};

use crate::conv::{apply_params, caps, config_error, flag, gpu, params_of, space};
use crate::ctx::{Polled, Transmit, describe, link_counters, tick};
use crate::error::{Error, Result};
use crate::types::{
    Description, ETHLINK_DOWN_FLUSH, ETHLINK_DOWN_PHYSICAL, ETHLINK_EVENT_COMPLETION,
    ETHLINK_EVENT_LINK_DOWN, ETHLINK_EVENT_LINK_UP, ETHLINK_LS_COMPARE_SWAP, ETHLINK_LS_FETCH_ADD,
    ETHLINK_LS_LOAD, ETHLINK_LS_STORE, ETHLINK_LS_SWAP, ETHLINK_OP_FENCE, ETHLINK_OP_LS,
    ETHLINK_OP_RDMA, ETHLINK_PERM_ATOMIC, ETHLINK_PERM_READ, ETHLINK_PERM_WRITE,
    ETHLINK_POLICY_HASH, ETHLINK_POLICY_LEAST_LOADED, ETHLINK_POLICY_ROUND_ROBIN,
    ETHLINK_POLICY_SPRAY, ETHLINK_ROLE_ENDPOINT, EndpointConfig, Event, LsRequest, RdmaDesc,
};

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn policy_code(p: Policy) -> u8 {
    match p {
        Policy::Hash => ETHLINK_POLICY_HASH,
        Policy::RoundRobin => ETHLINK_POLICY_ROUND_ROBIN,
        Policy::LeastLoaded => ETHLINK_POLICY_LEAST_LOADED,
        Policy::Spray => ETHLINK_POLICY_SPRAY,
    }
}

/// The default configuration (endpoint.md Table EP-T1).
pub(crate) fn default_config() -> EndpointConfig {
    let c = Config::default();
    EndpointConfig {
        link: params_of(&c.link),
        gpu: c.gpu.value(),
        stacks: c.stacks,
        ports_per_stack: c.ports,
        policy: policy_code(c.policy),
        max_retries: c.max_retries,
        lsu_tags: c.lsu_tags,
        rdma_tags: c.rdma_tags,
        caps: u32::from(c.caps.bits()),
        rdma_queue: c.rdma_queue,
        segment: c.segment,
        read_chunk: c.read_chunk,
        write_chunk: c.write_chunk,
        read_window: c.read_window,
        max_reassemblies: c.max_reassemblies,
        max_reassembly_blocks: c.max_reassembly_blocks,
        max_read_jobs: c.max_read_jobs,
        response_backlog: c.response_backlog,
        port_queue: c.port_queue,
        max_regions: c.memory.max_regions,
        pack_delay_ns: ns(c.pack_delay),
        op_timeout_ns: ns(c.op_timeout),
        tag_quarantine_ns: ns(c.tag_quarantine),
        frame_lifetime_ns: ns(c.frame_lifetime),
        busy_backoff_ns: ns(c.busy_backoff),
        hold_max_ns: ns(c.hold_max),
        global_size: c.memory.global_size,
        shared_size: c.memory.shared_size,
        seed: c.link.nonce_seed,
    }
}

/// An endpoint and what the ABI keeps beside it.
pub(crate) struct EndpointDev {
    ep: Endpoint,
    now: u64,
    /// Per port: the link state last reported.
    up: Vec<bool>,
    /// Per port: its physical link was taken down by the caller.
    asked_down: Vec<bool>,
    /// Link changes found and not yet handed out.
    changes: VecDeque<Event>,
    /// A completion taken from the endpoint and not yet handed out.
    completion: Option<Completion>,
    /// The port the current transmit round offers a chance next, and whether the round has
    /// sent anything.
    cursor: usize,
    round_sent: bool,
    pub(crate) snapshot: Vec<(String, u64)>,
}

const BLANK: Event = Event {
    kind: 0,
    port: 0,
    vc: 0,
    reason: 0,
    op: 0,
    status: 0,
    status_raw: 0,
    id: 0,
    len: 0,
};

impl EndpointDev {
    pub(crate) fn new(cfg: &EndpointConfig) -> Result<Self> {
        let mut c = Config::default();
        let d = Duration::from_nanos;
        c.link = apply_params(&c.link, &cfg.link);
        c.link.nonce_seed = cfg.seed;
        c.gpu = gpu(cfg.gpu, "cfg->gpu")?;
        c.stacks = cfg.stacks;
        c.ports = cfg.ports_per_stack;
        c.policy = match cfg.policy {
            ETHLINK_POLICY_HASH => Policy::Hash,
            ETHLINK_POLICY_ROUND_ROBIN => Policy::RoundRobin,
            ETHLINK_POLICY_LEAST_LOADED => Policy::LeastLoaded,
            ETHLINK_POLICY_SPRAY => Policy::Spray,
            v => {
                return Err(Error::argument(format!(
                    "cfg->policy = {v}: not an ETHLINK_POLICY_* value (0..=3)"
                )));
            }
        };
        c.max_retries = cfg.max_retries;
        c.lsu_tags = cfg.lsu_tags;
        c.rdma_tags = cfg.rdma_tags;
        c.caps = caps(cfg.caps, "cfg->caps")?;
        c.rdma_queue = cfg.rdma_queue;
        c.segment = cfg.segment;
        c.read_chunk = cfg.read_chunk;
        c.write_chunk = cfg.write_chunk;
        c.read_window = cfg.read_window;
        c.max_reassemblies = cfg.max_reassemblies;
        c.max_reassembly_blocks = cfg.max_reassembly_blocks;
        c.max_read_jobs = cfg.max_read_jobs;
        c.response_backlog = cfg.response_backlog;
        c.port_queue = cfg.port_queue;
        c.memory.max_regions = cfg.max_regions;
        c.memory.global_size = cfg.global_size;
        c.memory.shared_size = cfg.shared_size;
        c.pack_delay = d(cfg.pack_delay_ns);
        c.op_timeout = d(cfg.op_timeout_ns);
        c.tag_quarantine = d(cfg.tag_quarantine_ns);
        c.frame_lifetime = d(cfg.frame_lifetime_ns);
        c.busy_backoff = d(cfg.busy_backoff_ns);
        c.hold_max = d(cfg.hold_max_ns);
        let ep = Endpoint::new(c).map_err(|e| config_error(&e, &[("ports", "ports_per_stack")]))?;
        let n = ep.port_count();
        Ok(EndpointDev {
            ep,
            now: 0,
            up: vec![false; n],
            asked_down: vec![false; n],
            changes: VecDeque::new(),
            completion: None,
            cursor: 0,
            round_sent: false,
            snapshot: Vec::new(),
        })
    }

    fn port(&self, port: u16) -> Result<usize> {
        let p = usize::from(port);
        if p < self.ep.port_count() {
            Ok(p)
        } else {
            Err(Error::argument(format!(
                "port = {port}: the endpoint has ports 0..={}",
                self.ep.port_count().saturating_sub(1)
            )))
        }
    }

    /// Starts the caller's time at `now`: a call that is not a transmit poll ends a round.
    fn at(&mut self, now: u64) -> Result<Instant> {
        tick(&mut self.now, now)?;
        Ok(Instant::from_nanos(now))
    }

    fn end_round(&mut self) {
        self.cursor = 0;
        self.round_sent = false;
    }

    pub(crate) fn describe(&self) -> Description {
        describe(
            ETHLINK_ROLE_ENDPOINT,
            u16::try_from(self.ep.port_count()).unwrap_or(u16::MAX),
            u32::from(self.ep.config().caps.bits()),
            "ethlink reference endpoint",
        )
    }

    pub(crate) fn physical(&mut self, port: u16, up: bool, now: u64) -> Result<()> {
        let i = self.port(port)?;
        let at = self.at(now)?;
        self.end_round();
        self.asked_down[i] = !up;
        if up {
            self.ep.port_up(at, i);
        } else {
            self.ep.port_down(at, i);
        }
        Ok(())
    }

    pub(crate) fn handle_frame(&mut self, port: u16, now: u64, frame: &[u8]) -> Result<()> {
        let i = self.port(port)?;
        let at = self.at(now)?;
        self.end_round();
        self.ep.handle_frame(at, i, frame);
        Ok(())
    }

    pub(crate) fn poll_transmit(&mut self, now: u64, buf: &mut [u8]) -> Result<Transmit> {
        if now != self.now {
            self.end_round();
        }
        let at = self.at(now)?;
        let n = self.ep.port_count();
        loop {
            if self.cursor >= n {
                if !self.round_sent {
                    self.end_round();
                    return Ok(Transmit::Nothing);
                }
                self.end_round();
            }
            let i = self.cursor;
            let port = u16::try_from(i).unwrap_or(u16::MAX);
            match self.ep.poll_transmit(at, i, buf) {
                Ok(Some(t)) => {
                    self.cursor += 1;
                    self.round_sent = true;
                    return Ok(Transmit::Frame { port, len: t.len });
                }
                Ok(None) => self.cursor += 1,
                Err(e) => {
                    return Ok(Transmit::TooSmall {
                        port,
                        needed: e.needed,
                    });
                }
            }
        }
    }

    pub(crate) fn poll_timeout(&self) -> Option<u64> {
        self.ep.poll_timeout().map(Instant::as_nanos)
    }

    pub(crate) fn handle_timeout(&mut self, now: u64) -> Result<()> {
        let at = self.at(now)?;
        self.end_round();
        self.ep.handle_timeout(at);
        Ok(())
    }

    pub(crate) fn poll_event(&mut self, data: &mut [u8]) -> Result<Polled> {
        if self.changes.is_empty() {
            for i in 0..self.ep.port_count() {
                let up = self.ep.link(i).is_some_and(|l| l.is_up());
                if up != self.up[i] {
                    self.up[i] = up;
                    let port = u16::try_from(i).unwrap_or(u16::MAX);
                    self.changes.push_back(if up {
                        Event {
                            kind: ETHLINK_EVENT_LINK_UP,
                            port,
                            ..BLANK
                        }
                    } else {
                        Event {
                            kind: ETHLINK_EVENT_LINK_DOWN,
                            port,
                            reason: if self.asked_down[i] {
                                ETHLINK_DOWN_PHYSICAL
                            } else {
                                ETHLINK_DOWN_FLUSH
                            },
                            ..BLANK
                        }
                    });
                }
            }
        }
        if let Some(e) = self.changes.pop_front() {
            return Ok(Polled::Event(e));
        }
        if self.completion.is_none() {
            self.completion = self.ep.poll_completion();
        }
        let Some(c) = &self.completion else {
            return Ok(Polled::Nothing);
        };
        let (op, id) = match c.id {
            OpId::Ls(t) => (ETHLINK_OP_LS, u64::from(t)),
            OpId::Rdma(i) => (ETHLINK_OP_RDMA, i),
            OpId::Fence(i) => (ETHLINK_OP_FENCE, i),
        };
        let mut scratch = [0u8; 8];
        let bytes: &[u8] = match &c.data {
            CompletionData::None => &[],
            CompletionData::Load(b) => b.as_slice(),
            CompletionData::Atomic(AtomicValue::U32(v)) => {
                scratch[..4].copy_from_slice(&v.to_le_bytes());
                &scratch[..4]
            }
            CompletionData::Atomic(AtomicValue::U64(v)) => {
                scratch.copy_from_slice(&v.to_le_bytes());
                &scratch
            }
        };
        let status_raw = match c.status {
            CompletionStatus::Remote(s) => s.to_u8(),
            _ => 0,
        };
        let event = Event {
            kind: ETHLINK_EVENT_COMPLETION,
            op,
            id,
            status: u8::try_from(c.status.class()).unwrap_or(u8::MAX),
            status_raw,
            len: bytes.len(),
            ..BLANK
        };
        match data.get_mut(..bytes.len()) {
            Some(dst) => dst.copy_from_slice(bytes),
            None => return Ok(Polled::TooSmall(event)),
        }
        self.completion = None;
        Ok(Polled::Event(event))
    }

    pub(crate) fn counters(&self, into: &mut Vec<(String, u64)>) {
        self.ep.counters().for_each(|name, port, completed, value| {
            let key = match (port, completed) {
                (Some(p), _) => format!("port{p}.{name}"),
                (None, Some((kind, status))) => format!("{name}.{kind}.{status}"),
                (None, None) => name.to_string(),
            };
            into.push((key, value));
        });
        for i in 0..self.ep.port_count() {
            if let Some(l) = self.ep.link(i) {
                link_counters(l.counters(), &format!("port{i}.link."), into);
            }
        }
    }

    pub(crate) fn register(
        &mut self,
        s: u8,
        base: u64,
        len: u64,
        key: u32,
        perms: u32,
    ) -> Result<()> {
        let s = space(s, "space")?;
        let all = ETHLINK_PERM_READ | ETHLINK_PERM_WRITE | ETHLINK_PERM_ATOMIC;
        if perms & !all != 0 {
            return Err(Error::argument(format!(
                "perms = {perms:#x}: only the ETHLINK_PERM_* bits {all:#x} are defined"
            )));
        }
        let mut p = Perms::NONE;
        for (bit, perm) in [
            (ETHLINK_PERM_READ, Perms::READ),
            (ETHLINK_PERM_WRITE, Perms::WRITE),
            (ETHLINK_PERM_ATOMIC, Perms::ATOMIC),
        ] {
            if perms & bit != 0 {
                p = p.union(perm);
            }
        }
        self.ep
            .memory_mut()
            .register(Region::new(s, base, len, key, p))
            .map_err(|e| Error::refused(format!("register: {e}")))
    }

    pub(crate) fn deregister(&mut self, s: u8, base: u64) -> Result<()> {
        let s = space(s, "space")?;
        self.ep
            .memory_mut()
            .deregister(s, base)
            .map(|_| ())
            .map_err(|e| Error::refused(format!("deregister: {e}")))
    }

    pub(crate) fn poison(&mut self, s: u8, addr: u64, len: u64) -> Result<()> {
        let s = space(s, "space")?;
        self.ep
            .memory_mut()
            .poison(s, addr, len)
            .map_err(|e| match e {
                ethlink_endpoint::PoisonError::OutOfSpace(_) => {
                    Error::argument(format!("poison: {e}"))
                }
                ethlink_endpoint::PoisonError::TooManyRanges { .. } => {
                    Error::refused(format!("poison: {e}"))
                }
            })
    }

    pub(crate) fn mem_write(&mut self, s: u8, addr: u64, data: &[u8]) -> Result<()> {
        let s = space(s, "space")?;
        self.ep
            .memory_mut()
            .write(s, addr, data)
            .map_err(|e| Error::argument(format!("mem_write: {e}")))
    }

    pub(crate) fn mem_read(&mut self, s: u8, addr: u64, buf: &mut [u8]) -> Result<()> {
        let s = space(s, "space")?;
        self.ep
            .memory()
            .read(s, addr, buf)
            .map_err(|e| Error::argument(format!("mem_read: {e}")))
    }

    pub(crate) fn issue(&mut self, now: u64, r: &LsRequest, store: &[u8]) -> Result<u16> {
        let width = |w: u8| match w {
            4 => Ok(Width::W4),
            8 => Ok(Width::W8),
            _ => Err(Error::argument(format!(
                "req->width = {w}: an atomic's operand is 4 or 8 bytes"
            ))),
        };
        let op = match r.kind {
            ETHLINK_LS_LOAD => LsOp::Load { len: r.len },
            ETHLINK_LS_STORE => LsOp::Store {
                data: Bytes::new(store).ok_or_else(|| {
                    Error::argument(format!(
                        "req->data_len = {}: a store writes 1..=256 bytes",
                        store.len()
                    ))
                })?,
            },
            ETHLINK_LS_FETCH_ADD => LsOp::Atomic {
                width: width(r.width)?,
                op: AtomicOp::FetchAdd { addend: r.value },
            },
            ETHLINK_LS_SWAP => LsOp::Atomic {
                width: width(r.width)?,
                op: AtomicOp::Swap { value: r.value },
            },
            ETHLINK_LS_COMPARE_SWAP => LsOp::Atomic {
                width: width(r.width)?,
                op: AtomicOp::CompareSwap {
                    compare: r.compare,
                    value: r.value,
                },
            },
            k => {
                return Err(Error::argument(format!(
                    "req->kind = {k}: not an ETHLINK_LS_* value (0..=4)"
                )));
            }
        };
        let req = EpLs {
            op,
            remote: Remote {
                gpu: gpu(r.dst, "req->dst")?,
                space: space(r.space, "req->space")?,
                key: r.key,
                addr: r.addr,
            },
            ordering: if flag(r.ordered, "req->ordered")? {
                Ordering::Stream(r.stream)
            } else {
                Ordering::Unordered
            },
        };
        let at = self.at(now)?;
        self.end_round();
        self.ep.issue(at, req).map_err(|e| match e {
            IssueError::TagsExhausted { .. } => self.refusal("issue", &e),
            IssueError::Invalid { field, value, rule } => {
                let field = match field {
                    "len" => "req->len",
                    "addr" => "req->addr",
                    "gpu" => "req->dst",
                    "operand" => "the operand (req->value or req->compare)",
                    other => other,
                };
                Error::argument(format!("{field} = {value}: {rule}"))
            }
        })
    }

    pub(crate) fn post(&mut self, now: u64, d: &RdmaDesc) -> Result<u64> {
        let desc = EpDesc {
            dir: if flag(d.write, "desc->write")? {
                RdmaDir::Write
            } else {
                RdmaDir::Read
            },
            local_space: space(d.local_space, "desc->local_space")?,
            local_addr: d.local_addr,
            remote: Remote {
                gpu: gpu(d.dst, "desc->dst")?,
                space: space(d.space, "desc->space")?,
                key: d.key,
                addr: d.addr,
            },
            len: d.len,
        };
        let at = self.at(now)?;
        self.end_round();
        self.ep.post(at, desc).map_err(|e| match e {
            PostError::QueueFull { .. } => self.refusal("post", &e),
            PostError::Invalid { field, value, rule } => {
                let field = match field {
                    "len" => "desc->len",
                    "local_addr" => "desc->local_addr",
                    "remote.addr" => "desc->addr",
                    "gpu" => "desc->dst",
                    other => other,
                };
                Error::argument(format!("{field} = {value}: {rule}"))
            }
        })
    }

    /// The refusal of `what` (issue or post) for want of room, `e` as the model gives it: when
    /// the completions waiting are the cause, the text says so alone.
    fn refusal(&self, what: &str, e: &dyn core::fmt::Display) -> Error {
        let waiting = self.ep.completions_waiting();
        let bound = self.ep.config().max_completions();
        if waiting >= bound {
            Error::refused(format!(
                "{what}: {waiting} completions wait to be taken, the most the endpoint holds \
                 (endpoint.md EP-5-10): take them with ethlink_poll_event and try again"
            ))
        } else {
            Error::refused(format!("{what}: {e}"))
        }
    }

    pub(crate) fn fence(&mut self, now: u64) -> Result<u64> {
        let at = self.at(now)?;
        self.end_round();
        self.ep
            .fence(at)
            .map_err(|e| Error::refused(format!("fence: {e}")))
    }
}

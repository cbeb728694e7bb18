//! The reference GPU endpoint (`ethlink-endpoint`) behind the device boundary.

use ethlink_endpoint::{
    Bytes, CompletionData, Config, Endpoint, LsOp as EpLsOp, LsRequest, OpId, Ordering, Perms,
    Policy, RdmaDesc, RdmaDir, Region, Remote,
};
use ethlink_link::{Duration, Instant};
use ethlink_protocol::{AtomicOp, AtomicValue, Capabilities, GpuId, Space as WireSpace, Width};

use crate::device::{
    Advanced, Counters, Description, Device, DeviceError, EndpointParams, LinkParams, LsOp, Output,
    PROTOCOL_VERSION, Reply, Request, Role, Setup, Space, from_hex, to_hex,
};
use crate::reference::link_end::{apply, cap_names, link_counters, params_of};
use crate::reference::{Outputs, reportable, within_horizon};

/// The reference endpoint as a device under test: one stack of two ports by default, so that
/// cases stay small. Every reset builds it afresh from its base configuration, with the GPU id
/// and link parameters of the setup.
pub struct RefEndpoint {
    ep: Option<Endpoint>,
    base: Config,
    now: u64,
    up: Vec<bool>,
    asked_down: Vec<bool>,
    buf: Vec<u8>,
}

impl Default for RefEndpoint {
    fn default() -> Self {
        RefEndpoint::with_config(RefEndpoint::small_config())
    }
}

impl RefEndpoint {
    /// The configuration of the default reference endpoint: the defaults of endpoint.md Table
    /// EP-T1 but one stack of two ports.
    pub fn small_config() -> Config {
        Config {
            stacks: 1,
            ports: 2,
            ..Config::default()
        }
    }

    /// A reference endpoint built from `base` at every reset.
    pub fn with_config(base: Config) -> Self {
        RefEndpoint {
            ep: None,
            base,
            now: 0,
            up: Vec::new(),
            asked_down: Vec::new(),
            buf: vec![0; 9216],
        }
    }

    /// The default reference endpoint without the capabilities `caps` (it declares them absent
    /// and behaves as endpoint.md §11 says).
    pub fn without(caps: Capabilities) -> Self {
        let mut c = RefEndpoint::small_config();
        c.caps = c.caps.without(caps);
        RefEndpoint::with_config(c)
    }

    /// Performs a fetch-add of `addend` on the `width`-byte value at `addr` of its memory, as a
    /// remote ATOMIC_FADD with `key` would, outside the protocol: how a mutant applies an atomic
    /// twice. Does nothing before the first reset or when the access is refused.
    pub fn add_again(&mut self, shared: bool, key: u32, addr: u64, width: usize, addend: u64) {
        let space = if shared {
            WireSpace::Shared
        } else {
            WireSpace::Global
        };
        let w = if width == 4 { Width::W4 } else { Width::W8 };
        if let Some(ep) = self.ep.as_mut() {
            let _ = ep
                .memory_mut()
                .atomic(space, key, addr, w, AtomicOp::FetchAdd { addend });
        }
    }

    fn ep(&mut self) -> Result<&mut Endpoint, DeviceError> {
        self.ep
            .as_mut()
            .ok_or_else(|| DeviceError::Broken("used before reset".into()))
    }

    fn port(&self, port: u16) -> Result<usize, DeviceError> {
        let p = usize::from(port);
        if p < self.base.port_count() {
            Ok(p)
        } else {
            Err(DeviceError::Broken(format!(
                "the endpoint has no port {port}"
            )))
        }
    }

    /// Sends every frame of every port at `time`, then reports link changes and completions.
    fn transmit(&mut self, time: u64, out: &mut Outputs) -> Result<(), DeviceError> {
        let mut buf = std::mem::take(&mut self.buf);
        let n = self.base.port_count();
        let result = (|| {
            loop {
                let mut any = false;
                for i in 0..n {
                    let ep = self.ep()?;
                    match ep.poll_transmit(Instant::from_nanos(time), i, &mut buf) {
                        Ok(Some(t)) => {
                            any = true;
                            out.push(
                                time,
                                Output::Frame {
                                    port: i as u16,
                                    time_ns: time,
                                    hex: to_hex(buf.get(..t.len).unwrap_or_default()),
                                },
                            )?;
                        }
                        Ok(None) => {}
                        Err(e) => return Err(DeviceError::Broken(format!("transmit: {e:?}"))),
                    }
                }
                self.events(out)?;
                if !any {
                    return Ok(());
                }
            }
        })();
        self.buf = buf;
        result
    }

    /// Link changes and completions since the last call.
    fn events(&mut self, out: &mut Outputs) -> Result<(), DeviceError> {
        let n = self.base.port_count();
        let at = self.now;
        for i in 0..n {
            let up = self.ep()?.link(i).is_some_and(|l| l.is_up());
            if up != self.up[i] {
                self.up[i] = up;
                out.push(
                    at,
                    if up {
                        Output::LinkUp { port: i as u16 }
                    } else {
                        Output::LinkDown {
                            port: i as u16,
                            reason: if self.asked_down[i] {
                                "physical"
                            } else {
                                "flush"
                            }
                            .into(),
                        }
                    },
                )?;
            }
        }
        while let Some(c) = self.ep()?.poll_completion() {
            let (tag, id) = match c.id {
                OpId::Ls(t) => (Some(t), None),
                OpId::Rdma(i) | OpId::Fence(i) => (None, Some(i)),
            };
            let data = match c.data {
                CompletionData::None => None,
                CompletionData::Load(b) => Some(to_hex(b.as_slice())),
                CompletionData::Atomic(AtomicValue::U32(v)) => Some(to_hex(&v.to_le_bytes())),
                CompletionData::Atomic(AtomicValue::U64(v)) => Some(to_hex(&v.to_le_bytes())),
            };
            out.push(
                at,
                Output::Completion {
                    tag,
                    id,
                    status: c.status.to_string(),
                    data,
                },
            )?;
        }
        Ok(())
    }
}

/// Applies the endpoint settings of a setup to `cfg`. A shorter `op_timeout` than the default
/// `frame_lifetime` lowers the frame lifetime with it, and the tag quarantine is raised to its
/// least legal value when needed; a value out of range is left for [`Endpoint::new`] to refuse.
/// A policy this endpoint does not know is refused.
fn endpoint_params(cfg: &mut Config, e: &EndpointParams) -> Result<(), DeviceError> {
    // Each as given: a set that breaks a relation of EP-1-3 is refused by Endpoint::new, never
    // corrected (EP-13-15).
    if let Some(ns) = e.op_timeout_ns {
        cfg.op_timeout = Duration::from_nanos(ns);
    }
    if let Some(ns) = e.frame_lifetime_ns {
        cfg.frame_lifetime = Duration::from_nanos(ns);
    }
    if let Some(ns) = e.tag_quarantine_ns {
        cfg.tag_quarantine = Duration::from_nanos(ns);
    }
    if let Some(v) = e.write_chunk {
        cfg.write_chunk = v;
    }
    if let Some(v) = e.rdma_tags {
        cfg.rdma_tags = v;
    }
    if let Some(v) = e.max_read_jobs {
        cfg.max_read_jobs = v;
    }
    if let Some(v) = e.max_reassemblies {
        cfg.max_reassemblies = v;
    }
    if let Some(v) = e.max_reassembly_blocks {
        cfg.max_reassembly_blocks = v;
    }
    if let Some(v) = e.response_backlog {
        cfg.response_backlog = v;
    }
    if let Some(v) = e.hold_max_ns {
        cfg.hold_max = Duration::from_nanos(v);
    }
    if let Some(v) = e.max_regions {
        cfg.memory.max_regions = v;
    }
    if let Some(name) = &e.policy {
        cfg.policy = Policy::from_name(name)
            .ok_or_else(|| DeviceError::Refused(format!("load-balancing policy {name:?}")))?;
    }
    Ok(())
}

fn space(s: Space) -> WireSpace {
    match s {
        Space::Global => WireSpace::Global,
        Space::Shared => WireSpace::Shared,
    }
}

fn gpu(v: u16) -> Result<GpuId, DeviceError> {
    GpuId::new(v).ok_or_else(|| DeviceError::Refused(format!("GPU id {v:#x} is reserved")))
}

fn width(w: u8) -> Result<Width, DeviceError> {
    match w {
        4 => Ok(Width::W4),
        8 => Ok(Width::W8),
        _ => Err(DeviceError::Refused(format!("operand width {w}"))),
    }
}

fn perms(s: &str) -> Result<Perms, DeviceError> {
    let mut p = Perms::NONE;
    for c in s.chars() {
        p = p.union(match c {
            'r' => Perms::READ,
            'w' => Perms::WRITE,
            'a' => Perms::ATOMIC,
            _ => return Err(DeviceError::Refused(format!("permission letter {c:?}"))),
        });
    }
    Ok(p)
}

fn ls_op(op: &LsOp) -> Result<EpLsOp, DeviceError> {
    Ok(match op {
        LsOp::Load { len } => EpLsOp::Load { len: *len },
        LsOp::Store { data } => EpLsOp::Store {
            data: Bytes::new(&from_hex("store data", data)?)
                .ok_or_else(|| DeviceError::Refused("store of 0 or more than 256 bytes".into()))?,
        },
        LsOp::FetchAdd { width: w, value } => EpLsOp::Atomic {
            width: width(*w)?,
            op: AtomicOp::FetchAdd { addend: *value },
        },
        LsOp::Swap { width: w, value } => EpLsOp::Atomic {
            width: width(*w)?,
            op: AtomicOp::Swap { value: *value },
        },
        LsOp::CompareSwap {
            width: w,
            compare,
            value,
        } => EpLsOp::Atomic {
            width: width(*w)?,
            op: AtomicOp::CompareSwap {
                compare: *compare,
                value: *value,
            },
        },
        LsOp::Fence => EpLsOp::Fence,
    })
}

impl super::Timed for RefEndpoint {
    fn now(&mut self) -> &mut u64 {
        &mut self.now
    }

    fn deadline(&mut self) -> Result<Option<u64>, DeviceError> {
        Ok(reportable(self.ep()?.poll_timeout().map(Instant::as_nanos)))
    }

    fn fire(&mut self, at: u64) -> Result<(), DeviceError> {
        self.ep()?.handle_timeout(Instant::from_nanos(at));
        Ok(())
    }

    fn events(&mut self, out: &mut Outputs) -> Result<(), DeviceError> {
        RefEndpoint::events(self, out)
    }

    fn transmit(&mut self, at: u64, out: &mut Outputs) -> Result<(), DeviceError> {
        RefEndpoint::transmit(self, at, out)
    }
}

impl Device for RefEndpoint {
    fn hello(&mut self) -> Result<Description, DeviceError> {
        Ok(Description {
            version: PROTOCOL_VERSION,
            name: "ethlink reference endpoint".into(),
            role: Role::Endpoint,
            caps: cap_names(self.base.caps),
            ports: self.base.port_count() as u16,
            tick_ns: None,
            rate_gbps: None,
        })
    }

    fn reset(&mut self, setup: &Setup) -> Result<LinkParams, DeviceError> {
        let mut cfg = self.base.clone();
        cfg.gpu = gpu(setup.gpu.unwrap_or(0))?;
        cfg.link = apply(&cfg.link, &setup.link);
        cfg.link.nonce_seed = setup.seed.wrapping_mul(2).wrapping_add(1);
        if let Some(e) = &setup.endpoint {
            endpoint_params(&mut cfg, e)?;
        }
        //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
        //# EP-13-14 (§12) The reset of §12 is the endpoint's own. A conformance harness's reset
        //# (docs/conformance.md §3.3) is not this reset: it builds a fresh device, with every port
        //# physically down and no quiet time, and nothing of one case reaches the next.
        let ep = Endpoint::new(cfg.clone()).map_err(|e| DeviceError::Refused(e.to_string()))?;
        let n = ep.port_count();
        self.ep = Some(ep);
        self.up = vec![false; n];
        self.asked_down = vec![false; n];
        self.now = 0;
        Ok(params_of(&cfg.link))
    }

    fn frame(&mut self, port: u16, time_ns: u64, frame: &[u8]) -> Result<(), DeviceError> {
        let i = self.port(port)?;
        self.now = self.now.max(within_horizon("frame:", time_ns)?);
        let now = Instant::from_nanos(self.now);
        self.ep()?.handle_frame(now, i, frame);
        Ok(())
    }

    fn request(&mut self, time_ns: u64, request: &Request) -> Result<Reply, DeviceError> {
        self.now = self.now.max(within_horizon("request:", time_ns)?);
        let now = Instant::from_nanos(self.now);
        let mut reply = Reply::default();
        match request {
            Request::PhysicalUp { port } => {
                let i = self.port(*port)?;
                self.asked_down[i] = false;
                self.ep()?.port_up(now, i);
            }
            Request::PhysicalDown { port } => {
                let i = self.port(*port)?;
                self.asked_down[i] = true;
                self.ep()?.port_down(now, i);
            }
            Request::Register {
                space: s,
                base,
                len,
                key,
                perms: p,
            } => {
                let region = Region::new(space(*s), *base, *len, *key, perms(p)?);
                self.ep()?
                    .memory_mut()
                    .register(region)
                    .map_err(|e| DeviceError::Refused(format!("register: {e:?}")))?;
            }
            Request::Deregister { space: s, base } => {
                self.ep()?
                    .memory_mut()
                    .deregister(space(*s), *base)
                    .map_err(|e| DeviceError::Refused(format!("deregister: {e:?}")))?;
            }
            Request::Poison {
                space: s,
                addr,
                len,
            } => {
                self.ep()?
                    .memory_mut()
                    .poison(space(*s), *addr, *len)
                    .map_err(|e| DeviceError::Refused(format!("poison: {e:?}")))?;
            }
            Request::MemWrite {
                space: s,
                addr,
                data,
            } => {
                let data = from_hex("mem_write data", data)?;
                self.ep()?
                    .memory_mut()
                    .write(space(*s), *addr, &data)
                    .map_err(|e| DeviceError::Refused(format!("mem_write: {e:?}")))?;
            }
            Request::MemRead {
                space: s,
                addr,
                len,
            } => {
                let len = usize::try_from(*len)
                    .ok()
                    .filter(|l| *l <= 1 << 24)
                    .ok_or_else(|| DeviceError::Refused(format!("mem_read of {len} bytes")))?;
                let mut buf = vec![0; len];
                self.ep()?
                    .memory()
                    .read(space(*s), *addr, &mut buf)
                    .map_err(|e| DeviceError::Refused(format!("mem_read: {e:?}")))?;
                reply.data = Some(to_hex(&buf));
            }
            Request::Issue {
                dst,
                space: s,
                key,
                addr,
                op,
                stream,
                port,
            } => {
                let req = LsRequest {
                    op: ls_op(op)?,
                    remote: Remote {
                        gpu: gpu(*dst)?,
                        space: space(*s),
                        key: *key,
                        addr: *addr,
                    },
                    ordering: match (stream, port) {
                        (Some(s), None) => Ordering::Stream(*s),
                        (None, Some(p)) => Ordering::Port(*p),
                        (None, None) => Ordering::Unordered,
                        (Some(_), Some(_)) => {
                            return Err(DeviceError::Refused(
                                "issue: an operation belongs to a stream or is pinned to a \
                                 port, not both"
                                    .into(),
                            ));
                        }
                    },
                };
                let tag = self
                    .ep()?
                    .issue(now, req)
                    .map_err(|e| DeviceError::Refused(format!("issue: {e}")))?;
                reply.tag = Some(tag);
            }
            Request::Post {
                write,
                local_space,
                local_addr,
                dst,
                space: s,
                key,
                addr,
                len,
            } => {
                let desc = RdmaDesc {
                    dir: if *write {
                        RdmaDir::Write
                    } else {
                        RdmaDir::Read
                    },
                    local_space: space(*local_space),
                    local_addr: *local_addr,
                    remote: Remote {
                        gpu: gpu(*dst)?,
                        space: space(*s),
                        key: *key,
                        addr: *addr,
                    },
                    len: *len,
                };
                let id = self
                    .ep()?
                    .post(now, desc)
                    .map_err(|e| DeviceError::Refused(format!("post: {e}")))?;
                reply.id = Some(id);
            }
            Request::Fence => {
                let id = self
                    .ep()?
                    .fence(now)
                    .map_err(|e| DeviceError::Refused(format!("fence: {e}")))?;
                reply.id = Some(id);
            }
            other => {
                return Err(DeviceError::Refused(format!(
                    "an endpoint does not take {other:?}"
                )));
            }
        }
        Ok(reply)
    }

    fn advance(&mut self, time_ns: u64) -> Result<Advanced, DeviceError> {
        super::advance(self, time_ns)
    }

    fn counters(&mut self) -> Result<Counters, DeviceError> {
        let ep = self
            .ep
            .as_ref()
            .ok_or_else(|| DeviceError::Broken("used before reset".into()))?;
        let mut c = Counters::new();
        ep.counters().for_each(|name, port, completed, value| {
            let key = match (port, completed) {
                (Some(p), _) => format!("port{p}.{name}"),
                (None, Some((kind, status))) => format!("{name}.{kind}.{status}"),
                (None, None) => name.to_string(),
            };
            c.insert(key, value);
        });
        for i in 0..ep.port_count() {
            if let Some(l) = ep.link(i) {
                link_counters(l.counters(), &format!("port{i}.link."), &mut c);
            }
        }
        Ok(c)
    }
}

//! A device under test that is a shared library exporting the C ABI of `include/ethlink.h`
//! (docs/cosim.md): a C or C++ model, or an RTL simulation wrapped in one, run in-process
//! without the line protocol (docs/conformance.md §9).
//!
//! The backend resolves the ABI's symbols by name, makes a context, and maps the boundary's
//! calls onto the ABI's: `hello` describes a device made for the purpose, `reset` destroys the
//! device and makes a new one with the setup written into the configuration structure, and
//! `advance` drives the device's deadlines as the reference backends do, firing each at its own
//! time and collecting what is sent then. The endpoint is made with one stack of two ports and
//! the switch with eight ports, as the reference runs in the suite.

use std::ffi::CStr;
use std::path::Path;
use std::sync::Arc;

use ethlink_ffi::{
    Ctx, Description as CDescription, ETHLINK_DOWN_FLUSH, ETHLINK_DOWN_PEER_RESTART,
    ETHLINK_DOWN_PHYSICAL, ETHLINK_ERR_ARGUMENT, ETHLINK_ERR_BUFFER_TOO_SMALL, ETHLINK_ERR_REFUSED,
    ETHLINK_ERR_WRONG_ROLE, ETHLINK_EVENT_COMPLETION, ETHLINK_EVENT_DELIVERED,
    ETHLINK_EVENT_LINK_DOWN, ETHLINK_EVENT_LINK_UP, ETHLINK_EVENT_LOST,
    ETHLINK_LOST_EXCEEDS_PEER_MFS, ETHLINK_LOST_UNKNOWN_FATE, ETHLINK_LOST_VC_NOT_AGREED,
    ETHLINK_LOST_WITHDRAWN, ETHLINK_LS_COMPARE_SWAP, ETHLINK_LS_FETCH_ADD, ETHLINK_LS_LOAD,
    ETHLINK_LS_STORE, ETHLINK_LS_SWAP, ETHLINK_NONE, ETHLINK_OK, ETHLINK_OP_FENCE, ETHLINK_OP_LS,
    ETHLINK_OP_RDMA, ETHLINK_PERM_ATOMIC, ETHLINK_PERM_READ, ETHLINK_PERM_WRITE,
    ETHLINK_ROLE_ENDPOINT, ETHLINK_ROLE_LINK_END, ETHLINK_ROLE_SWITCH, ETHLINK_SPACE_GLOBAL,
    ETHLINK_SPACE_SHARED, EndpointConfig, Event, LinkEndConfig, LinkParams as CParams, LsRequest,
    RdmaDesc, SwitchConfig,
};
use ethlink_protocol::Capabilities;
use libloading::Library;

use crate::boundary::{
    MAX_ADVANCE_BYTES, MAX_COUNTER_NAME, MAX_COUNTERS, MAX_OUTPUTS, MAX_TEXT, device_text,
};
use crate::device::{
    Advanced, Counters, Description, Device, DeviceError, LinkParams, LsOp, Output,
    PROTOCOL_VERSION, Reply, Request, Role, Setup, Space, from_hex, to_hex,
};

/// Ports of the endpoint the backend makes: one stack of two.
const ENDPOINT_STACKS: u8 = 1;
const ENDPOINT_PORTS_PER_STACK: u8 = 2;
/// Ports of the switch the backend makes.
const SWITCH_PORTS: u16 = 8;
/// Bytes of the frame and event buffers at first (they grow when the library asks for more).
const BUF: usize = 9216;

/// Declares the table of the ABI's functions: each field's type is checked at compile time
/// against the function `ethlink_ffi` exports under the same name.
macro_rules! abi {
    (
        required { $($req:ident: fn($($rarg:ty),*) $(-> $rret:ty)?;)* }
        optional { $($opt:ident: fn($($oarg:ty),*) $(-> $oret:ty)?;)* }
    ) => {
        struct Api {
            _lib: Arc<Library>,
            $($req: extern "C" fn($($rarg),*) $(-> $rret)?,)*
            $($opt: Option<extern "C" fn($($oarg),*) $(-> $oret)?>,)*
        }

        impl Api {
            fn load(lib: Arc<Library>, path: &str) -> Result<Api, DeviceError> {
                $(
                    const _: extern "C" fn($($rarg),*) $(-> $rret)? = ethlink_ffi::$req;
                    let $req = symbol::<extern "C" fn($($rarg),*) $(-> $rret)?>(
                        &lib,
                        stringify!($req),
                    )
                    .ok_or_else(|| DeviceError::Broken(format!(
                        "{path} does not export {}", stringify!($req)
                    )))?;
                )*
                $(
                    const _: extern "C" fn($($oarg),*) $(-> $oret)? = ethlink_ffi::$opt;
                    let $opt = symbol::<extern "C" fn($($oarg),*) $(-> $oret)?>(
                        &lib,
                        stringify!($opt),
                    );
                )*
                Ok(Api { _lib: lib, $($req,)* $($opt,)* })
            }
        }
    };
}

abi! {
    required {
        ethlink_abi_version: fn() -> u32;
        ethlink_ctx_new: fn(*mut *mut Ctx) -> i32;
        ethlink_ctx_free: fn(*mut Ctx);
        ethlink_last_error: fn(*mut Ctx, *mut std::ffi::c_char, usize, *mut usize) -> i32;
        ethlink_destroy: fn(*mut Ctx, u32) -> i32;
        ethlink_describe: fn(*mut Ctx, u32, *mut CDescription) -> i32;
        ethlink_physical: fn(*mut Ctx, u32, u16, u8, u64) -> i32;
        ethlink_handle_frame: fn(*mut Ctx, u32, u16, u64, *const u8, usize) -> i32;
        ethlink_poll_transmit: fn(*mut Ctx, u32, u64, *mut u16, *mut u8, usize, *mut usize) -> i32;
        ethlink_poll_timeout: fn(*mut Ctx, u32, *mut u64) -> i32;
        ethlink_handle_timeout: fn(*mut Ctx, u32, u64) -> i32;
        ethlink_poll_event: fn(*mut Ctx, u32, *mut Event, *mut u8, usize) -> i32;
        ethlink_counter_count: fn(*mut Ctx, u32, *mut usize) -> i32;
        ethlink_counter_at:
            fn(*mut Ctx, u32, usize, *mut std::ffi::c_char, usize, *mut usize, *mut u64) -> i32;
    }
    optional {
        ethlink_link_end_config_default: fn(*mut LinkEndConfig) -> i32;
        ethlink_link_end_new: fn(*mut Ctx, *const LinkEndConfig, *mut u32) -> i32;
        ethlink_link_submit: fn(*mut Ctx, u32, u8, *const u8, usize) -> i32;
        ethlink_link_hold: fn(*mut Ctx, u32, u8, u8) -> i32;
        ethlink_link_withdraw: fn(*mut Ctx, u32, *mut usize) -> i32;
        ethlink_endpoint_config_default: fn(*mut EndpointConfig) -> i32;
        ethlink_endpoint_new: fn(*mut Ctx, *const EndpointConfig, *mut u32) -> i32;
        ethlink_endpoint_register: fn(*mut Ctx, u32, u8, u64, u64, u32, u32) -> i32;
        ethlink_endpoint_deregister: fn(*mut Ctx, u32, u8, u64) -> i32;
        ethlink_endpoint_poison: fn(*mut Ctx, u32, u8, u64, u64) -> i32;
        ethlink_endpoint_mem_write: fn(*mut Ctx, u32, u8, u64, *const u8, usize) -> i32;
        ethlink_endpoint_mem_read: fn(*mut Ctx, u32, u8, u64, *mut u8, usize) -> i32;
        ethlink_endpoint_issue: fn(*mut Ctx, u32, u64, *const LsRequest, *mut u16) -> i32;
        ethlink_endpoint_post: fn(*mut Ctx, u32, u64, *const RdmaDesc, *mut u64) -> i32;
        ethlink_endpoint_fence: fn(*mut Ctx, u32, u64, *mut u64) -> i32;
        ethlink_switch_config_default: fn(*mut SwitchConfig) -> i32;
        ethlink_switch_new: fn(*mut Ctx, *const SwitchConfig, *mut u32) -> i32;
        ethlink_switch_set_route: fn(*mut Ctx, u32, u16, *const u16, usize) -> i32;
        ethlink_switch_set_route_groups:
            fn(*mut Ctx, u32, u16, *const u16, usize, *const u16, usize) -> i32;
    }
}

/// The symbol `name` of `lib` as a `T`, if the library exports it.
#[allow(unsafe_code)]
fn symbol<T: Copy>(lib: &Library, name: &str) -> Option<T> {
    let mut n = name.as_bytes().to_vec();
    n.push(0);
    // SAFETY: `T` is the function-pointer type include/ethlink.h declares for `name` (checked
    // against ethlink_ffi's own function at compile time); a library exporting the name with
    // another signature breaks the ABI it claims. The pointer is used only while `lib`, kept
    // in the same `Api`, is loaded.
    unsafe { lib.get::<T>(&n) }.ok().map(|s| *s)
}

/// Loads the shared library at `path`.
#[allow(unsafe_code)]
fn open(path: &Path) -> Result<Library, DeviceError> {
    // SAFETY: loading runs the library's initialisers; the library is the device under test the
    // user named, trusted as any device command is.
    unsafe { Library::new(path) }
        .map_err(|e| DeviceError::Broken(format!("cannot load {}: {e}", path.display())))
}

/// A context of the library.
struct CtxPtr(*mut Ctx);

// SAFETY: the ABI lets a context move between threads as long as one thread at a time uses it
// (docs/cosim.md §2.4); the device that owns it is used by one worker thread.
#[allow(unsafe_code)]
unsafe impl Send for CtxPtr {}

/// A device under test loaded from a shared library.
pub struct DylibDevice {
    api: Api,
    ctx: CtxPtr,
    role: Role,
    path: String,
    handle: Option<u32>,
    now: u64,
    buf: Vec<u8>,
    data: Vec<u8>,
    /// Bytes of frames and event data taken in the current advance.
    taken: usize,
}

impl std::fmt::Debug for DylibDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DylibDevice")
            .field("path", &self.path)
            .field("role", &self.role)
            .field("handle", &self.handle)
            .finish()
    }
}

impl Drop for DylibDevice {
    fn drop(&mut self) {
        (self.api.ethlink_ctx_free)(self.ctx.0);
    }
}

/// How an error code of a call is judged.
#[derive(Clone, Copy)]
enum Blame {
    /// A refusal of the device (a setting or request it does not take) is `Refused`.
    Request,
    /// Every error is `Broken`.
    Boundary,
}

impl DylibDevice {
    /// Loads the library at `path` and makes a context, to run the cases of `role`.
    pub fn load(path: &Path, role: Role) -> Result<DylibDevice, DeviceError> {
        let shown = path.display().to_string();
        let lib = Arc::new(open(path)?);
        let api = Api::load(lib, &shown)?;
        let version = (api.ethlink_abi_version)();
        if version != ethlink_ffi::ETHLINK_ABI_VERSION {
            return Err(DeviceError::Broken(format!(
                "{shown} exports ABI version {version}, this harness speaks {}",
                ethlink_ffi::ETHLINK_ABI_VERSION
            )));
        }
        let needed: &[(&str, bool)] = match role {
            Role::LinkEnd => &[
                (
                    "ethlink_link_end_config_default",
                    api.ethlink_link_end_config_default.is_some(),
                ),
                ("ethlink_link_end_new", api.ethlink_link_end_new.is_some()),
                ("ethlink_link_submit", api.ethlink_link_submit.is_some()),
                ("ethlink_link_hold", api.ethlink_link_hold.is_some()),
                ("ethlink_link_withdraw", api.ethlink_link_withdraw.is_some()),
            ],
            Role::Endpoint => &[
                (
                    "ethlink_endpoint_config_default",
                    api.ethlink_endpoint_config_default.is_some(),
                ),
                ("ethlink_endpoint_new", api.ethlink_endpoint_new.is_some()),
            ],
            Role::Switch => &[
                (
                    "ethlink_switch_config_default",
                    api.ethlink_switch_config_default.is_some(),
                ),
                ("ethlink_switch_new", api.ethlink_switch_new.is_some()),
                (
                    "ethlink_switch_set_route",
                    api.ethlink_switch_set_route.is_some(),
                ),
            ],
        };
        if let Some((name, _)) = needed.iter().find(|(_, present)| !present) {
            return Err(DeviceError::Broken(format!(
                "{shown} does not offer the role {role}: it does not export {name}"
            )));
        }
        let mut ctx = std::ptr::null_mut();
        let code = (api.ethlink_ctx_new)(&mut ctx);
        if code != ETHLINK_OK {
            return Err(DeviceError::Broken(format!(
                "{shown}: ethlink_ctx_new returned {code}, not ETHLINK_OK"
            )));
        }
        if ctx.is_null() {
            return Err(DeviceError::Broken(format!(
                "{shown}: ethlink_ctx_new returned ETHLINK_OK but wrote no context (NULL)"
            )));
        }
        Ok(DylibDevice {
            api,
            ctx: CtxPtr(ctx),
            role,
            path: shown,
            handle: None,
            now: 0,
            buf: vec![0; BUF],
            data: vec![0; BUF],
            taken: 0,
        })
    }

    fn ctx(&self) -> *mut Ctx {
        self.ctx.0
    }

    fn last_error(&self) -> String {
        let mut buf = vec![0 as std::ffi::c_char; 1024];
        let mut len = 0usize;
        let code = (self.api.ethlink_last_error)(self.ctx(), buf.as_mut_ptr(), buf.len(), &mut len);
        if code == ETHLINK_ERR_BUFFER_TOO_SMALL && len < 1 << 20 {
            buf = vec![0; len + 1];
            (self.api.ethlink_last_error)(self.ctx(), buf.as_mut_ptr(), buf.len(), &mut len);
        }
        let bytes: Vec<u8> = buf
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        device_text(&String::from_utf8_lossy(&bytes), MAX_TEXT)
    }

    /// `Ok(code)` for OK and NONE, else the error named by the library's text.
    fn check(&self, code: i32, what: &str, blame: Blame) -> Result<i32, DeviceError> {
        if code == ETHLINK_OK || code == ETHLINK_NONE {
            return Ok(code);
        }
        let text = format!("{what} returned {code}: {}", self.last_error());
        Err(match (blame, code) {
            (
                Blame::Request,
                ETHLINK_ERR_ARGUMENT | ETHLINK_ERR_REFUSED | ETHLINK_ERR_WRONG_ROLE,
            ) => DeviceError::Refused(text),
            _ => DeviceError::Broken(text),
        })
    }

    fn handle(&self) -> Result<u32, DeviceError> {
        self.handle
            .ok_or_else(|| DeviceError::Broken("used before reset".into()))
    }

    fn missing(&self, name: &str) -> DeviceError {
        DeviceError::Refused(format!("{} does not export {name}", self.path))
    }

    /// Makes a device of the role with the settings of `setup`; returns its handle and the link
    /// parameters in force.
    fn make(&mut self, setup: &Setup) -> Result<(u32, LinkParams), DeviceError> {
        let ctx = self.ctx();
        let mut h = 0u32;
        let seed = setup.seed.wrapping_mul(2).wrapping_add(1);
        let params = match self.role {
            Role::LinkEnd => {
                let (Some(default), Some(new)) = (
                    self.api.ethlink_link_end_config_default,
                    self.api.ethlink_link_end_new,
                ) else {
                    return Err(self.missing("ethlink_link_end_new"));
                };
                let mut cfg = zeroed_link_end();
                self.check(
                    default(&mut cfg),
                    "ethlink_link_end_config_default",
                    Blame::Boundary,
                )?;
                apply(&mut cfg.link, &setup.link);
                cfg.seed = seed;
                self.check(
                    new(ctx, &cfg, &mut h),
                    "ethlink_link_end_new",
                    Blame::Request,
                )?;
                cfg.link
            }
            Role::Endpoint => {
                let (Some(default), Some(new)) = (
                    self.api.ethlink_endpoint_config_default,
                    self.api.ethlink_endpoint_new,
                ) else {
                    return Err(self.missing("ethlink_endpoint_new"));
                };
                let mut cfg = zeroed_endpoint();
                self.check(
                    default(&mut cfg),
                    "ethlink_endpoint_config_default",
                    Blame::Boundary,
                )?;
                cfg.stacks = ENDPOINT_STACKS;
                cfg.ports_per_stack = ENDPOINT_PORTS_PER_STACK;
                cfg.gpu = setup.gpu.unwrap_or(0);
                apply(&mut cfg.link, &setup.link);
                cfg.seed = seed;
                if let Some(e) = &setup.endpoint {
                    // Each as given: the library refuses a set that breaks EP-1-3.
                    if let Some(ns) = e.op_timeout_ns {
                        cfg.op_timeout_ns = ns;
                    }
                    if let Some(ns) = e.frame_lifetime_ns {
                        cfg.frame_lifetime_ns = ns;
                    }
                    if let Some(ns) = e.tag_quarantine_ns {
                        cfg.tag_quarantine_ns = ns;
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
                        cfg.hold_max_ns = v;
                    }
                    if let Some(v) = e.max_regions {
                        cfg.max_regions = v;
                    }
                    if let Some(name) = &e.policy {
                        // The policy by the name endpoint.md §4 gives it, as its ABI constant.
                        cfg.policy = match name.as_str() {
                            "hash" => ethlink_ffi::ETHLINK_POLICY_HASH,
                            "round-robin" => ethlink_ffi::ETHLINK_POLICY_ROUND_ROBIN,
                            "least-loaded" => ethlink_ffi::ETHLINK_POLICY_LEAST_LOADED,
                            "spray" => ethlink_ffi::ETHLINK_POLICY_SPRAY,
                            other => {
                                return Err(DeviceError::Refused(format!(
                                    "load-balancing policy {other:?}"
                                )));
                            }
                        };
                    }
                }
                self.check(
                    new(ctx, &cfg, &mut h),
                    "ethlink_endpoint_new",
                    Blame::Request,
                )?;
                cfg.link
            }
            Role::Switch => {
                let (Some(default), Some(new), Some(set_route)) = (
                    self.api.ethlink_switch_config_default,
                    self.api.ethlink_switch_new,
                    self.api.ethlink_switch_set_route,
                ) else {
                    return Err(self.missing("ethlink_switch_new"));
                };
                let mut cfg = zeroed_switch();
                self.check(
                    default(&mut cfg),
                    "ethlink_switch_config_default",
                    Blame::Boundary,
                )?;
                cfg.ports = SWITCH_PORTS;
                apply(&mut cfg.link, &setup.link);
                cfg.seed = seed;
                if let Some(ns) = setup.max_residence_ns {
                    cfg.max_residence_ns = ns;
                }
                if let Some(ns) = setup.latency_ns {
                    cfg.latency_ns = ns;
                }
                self.check(new(ctx, &cfg, &mut h), "ethlink_switch_new", Blame::Request)?;
                for r in &setup.routes {
                    let (code, name) = if r.groups.is_empty() {
                        let code = set_route(ctx, h, r.dst, r.ports.as_ptr(), r.ports.len());
                        (code, "ethlink_switch_set_route")
                    } else if let Some(f) = self.api.ethlink_switch_set_route_groups {
                        let code = f(
                            ctx,
                            h,
                            r.dst,
                            r.ports.as_ptr(),
                            r.ports.len(),
                            r.groups.as_ptr(),
                            r.groups.len(),
                        );
                        (code, "ethlink_switch_set_route_groups")
                    } else {
                        (self.api.ethlink_destroy)(ctx, h);
                        return Err(DeviceError::Refused(
                            "an entry in groups of preference: the library does not export \
                             ethlink_switch_set_route_groups"
                                .into(),
                        ));
                    };
                    if let Err(e) = self.check(code, name, Blame::Request) {
                        (self.api.ethlink_destroy)(ctx, h);
                        return Err(e);
                    }
                }
                cfg.link
            }
        };
        Ok((h, params_of(&params)))
    }

    /// Fails once `out` holds as many outputs, or as many bytes, as one advance may return: a
    /// library whose `ethlink_poll_transmit` or `ethlink_poll_event` never says NONE is stopped
    /// there instead of filling the memory.
    fn bounded(&self, out: &[Output]) -> Result<(), DeviceError> {
        if out.len() >= MAX_OUTPUTS || self.taken >= MAX_ADVANCE_BYTES {
            return Err(DeviceError::Broken(format!(
                "the library gave {} frames and events ({} bytes) in one advance without \
                 saying NONE: one advance may return at most {MAX_OUTPUTS} outputs and \
                 {MAX_ADVANCE_BYTES} bytes",
                out.len(),
                self.taken
            )));
        }
        Ok(())
    }

    fn events(&mut self, out: &mut Vec<Output>) -> Result<(), DeviceError> {
        let h = self.handle()?;
        loop {
            self.bounded(out)?;
            let mut e = zeroed_event();
            let mut code = (self.api.ethlink_poll_event)(
                self.ctx(),
                h,
                &mut e,
                self.data.as_mut_ptr(),
                self.data.len(),
            );
            if code == ETHLINK_ERR_BUFFER_TOO_SMALL && e.len > self.data.len() && e.len <= 1 << 20 {
                self.data.resize(e.len, 0);
                code = (self.api.ethlink_poll_event)(
                    self.ctx(),
                    h,
                    &mut e,
                    self.data.as_mut_ptr(),
                    self.data.len(),
                );
            }
            if self.check(code, "ethlink_poll_event", Blame::Boundary)? == ETHLINK_NONE {
                return Ok(());
            }
            let data = self.data.get(..e.len).ok_or_else(|| {
                DeviceError::Broken(format!(
                    "ethlink_poll_event: event length {} beyond the buffer",
                    e.len
                ))
            })?;
            self.taken = self.taken.saturating_add(data.len());
            out.push(output(&e, data)?);
        }
    }

    /// Sends every frame the device has at `at`; a link end's events are collected after each
    /// frame, the others' after the last.
    fn transmit(&mut self, at: u64, out: &mut Vec<Output>) -> Result<(), DeviceError> {
        let h = self.handle()?;
        loop {
            self.bounded(out)?;
            let mut port = 0u16;
            let mut len = 0usize;
            let mut code = (self.api.ethlink_poll_transmit)(
                self.ctx(),
                h,
                at,
                &mut port,
                self.buf.as_mut_ptr(),
                self.buf.len(),
                &mut len,
            );
            if code == ETHLINK_ERR_BUFFER_TOO_SMALL && len > self.buf.len() && len <= 1 << 20 {
                self.buf.resize(len, 0);
                code = (self.api.ethlink_poll_transmit)(
                    self.ctx(),
                    h,
                    at,
                    &mut port,
                    self.buf.as_mut_ptr(),
                    self.buf.len(),
                    &mut len,
                );
            }
            if self.check(code, "ethlink_poll_transmit", Blame::Boundary)? == ETHLINK_NONE {
                break;
            }
            let frame = self.buf.get(..len).ok_or_else(|| {
                DeviceError::Broken(format!(
                    "ethlink_poll_transmit: frame length {len} beyond the buffer"
                ))
            })?;
            self.taken = self.taken.saturating_add(frame.len());
            out.push(Output::Frame {
                port,
                time_ns: at,
                hex: to_hex(frame),
            });
            if self.role == Role::LinkEnd {
                self.events(out)?;
            }
        }
        if self.role != Role::LinkEnd {
            self.events(out)?;
        }
        Ok(())
    }

    fn deadline(&mut self) -> Result<Option<u64>, DeviceError> {
        let h = self.handle()?;
        let mut t = 0u64;
        let code = (self.api.ethlink_poll_timeout)(self.ctx(), h, &mut t);
        Ok((self.check(code, "ethlink_poll_timeout", Blame::Boundary)? == ETHLINK_OK).then_some(t))
    }

    fn fire(&mut self, at: u64) -> Result<(), DeviceError> {
        let h = self.handle()?;
        let code = (self.api.ethlink_handle_timeout)(self.ctx(), h, at);
        self.check(code, "ethlink_handle_timeout", Blame::Boundary)?;
        Ok(())
    }

    /// Lets a link end or an endpoint run to `time_ns`: each deadline before it fires at its own
    /// time, followed by what it sends; then everything due at `time_ns`.
    fn advance_timers(&mut self, time_ns: u64) -> Result<Advanced, DeviceError> {
        let mut out = Vec::new();
        self.events(&mut out)?;
        while let Some(due) = self.deadline()? {
            let due = due.max(self.now);
            if due > time_ns {
                break;
            }
            self.now = due;
            self.transmit(due, &mut out)?;
            self.fire(due)?;
            self.events(&mut out)?;
            self.transmit(due, &mut out)?;
            if self.deadline()?.is_some_and(|d| d <= due) {
                // A timer that does not move would spin: let time pass.
                break;
            }
        }
        self.now = self.now.max(time_ns);
        let now = self.now;
        self.transmit(now, &mut out)?;
        self.events(&mut out)?;
        let next_ns = self.deadline()?;
        Ok(Advanced { out, next_ns })
    }

    /// A switch's next event: its next deadline, at least a nanosecond ahead.
    fn next_event(&mut self) -> Result<Option<u64>, DeviceError> {
        let now = self.now;
        Ok(self.deadline()?.map(|t| t.max(now + 1)))
    }

    /// Everything a switch does at `t`: its timers, then every frame it sends.
    fn step(&mut self, t: u64, out: &mut Vec<Output>) -> Result<(), DeviceError> {
        self.fire(t)?;
        self.transmit(t, out)
    }

    /// Lets a switch run to `time_ns`, stepping from event to event.
    fn advance_switch(&mut self, time_ns: u64) -> Result<Advanced, DeviceError> {
        let mut out = Vec::new();
        loop {
            let now = self.now;
            self.step(now, &mut out)?;
            match self.next_event()? {
                Some(t) if t <= time_ns => self.now = t,
                _ => break,
            }
        }
        if time_ns > self.now {
            self.now = time_ns;
            self.step(time_ns, &mut out)?;
        }
        let next_ns = self.next_event()?;
        Ok(Advanced { out, next_ns })
    }
}

/// Whether a library under test runs in this process now: [`on_exit`] then ends a process the
/// library ends.
static IN_RUN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static GUARD: std::sync::Once = std::sync::Once::new();

/// Marks the time a library under test runs in this process (`on` true, then false). A library
/// that calls `exit` meanwhile would end the process with the library's status, 0 for all one
/// knows, and no report: the handler this registers then says so on standard error and ends the
/// process with status 1 instead ([`crate::app::EXIT_FAIL`]).
#[allow(unsafe_code)]
pub fn guard_exit(on: bool) {
    GUARD.call_once(|| {
        // SAFETY: `on_exit` is an `extern "C" fn()` that touches only an atomic and the
        // async-signal-safe `write` and `_exit`; registering it has no other effect.
        unsafe {
            libc::atexit(on_exit);
        }
    });
    IN_RUN.store(on, std::sync::atomic::Ordering::SeqCst);
}

#[allow(unsafe_code)]
extern "C" fn on_exit() {
    if !IN_RUN.load(std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    const MSG: &[u8] = b"error: the library under test ended the process (it called exit) \
        before the run was over: no case was judged after it and no report was written; \
        --isolate runs the library in child processes, where this ends one case only\n";
    // SAFETY: `write` of a static buffer to standard error and `_exit` are async-signal-safe
    // and valid in an exit handler; `_exit` runs no further handler.
    unsafe {
        libc::write(2, MSG.as_ptr().cast(), MSG.len());
        libc::_exit(i32::from(crate::app::EXIT_FAIL));
    }
}

/// Ends the process at once with `code`, without running exit handlers or the destructors of
/// loaded libraries: for a run that abandoned a call into a library that never returned, whose
/// exit handlers could wait on it forever, and for an interrupt. Nothing is flushed: the caller
/// flushes what it wrote (another thread may hold standard output's lock for good).
#[allow(unsafe_code)]
pub fn exit_now(code: u8) -> ! {
    // SAFETY: `_exit` ends the process; nothing runs after it.
    unsafe { libc::_exit(i32::from(code)) }
}

/// The function `f` of the library at `path`, or a refusal naming the symbol `name` it lacks.
fn need<F>(f: Option<F>, path: &str, name: &str) -> Result<F, DeviceError> {
    f.ok_or_else(|| DeviceError::Refused(format!("{path} does not export {name}")))
}

fn role_code(role: Role) -> u8 {
    match role {
        Role::LinkEnd => ETHLINK_ROLE_LINK_END,
        Role::Endpoint => ETHLINK_ROLE_ENDPOINT,
        Role::Switch => ETHLINK_ROLE_SWITCH,
    }
}

fn space_code(s: Space) -> u8 {
    match s {
        Space::Global => ETHLINK_SPACE_GLOBAL,
        Space::Shared => ETHLINK_SPACE_SHARED,
    }
}

/// Writes the parameters `p` gives into `c`; the grant covers the VCs in use, as the reference
/// does.
fn apply(c: &mut CParams, p: &LinkParams) {
    if let Some(v) = p.vcs {
        c.vcs = v;
    }
    let credits = p.rx_credits.unwrap_or(c.rx_credits[0]);
    for (v, x) in c.rx_credits.iter_mut().enumerate() {
        *x = if v < usize::from(c.vcs) { credits } else { 0 };
    }
    if let Some(v) = p.credit_size {
        c.credit_size = v;
    }
    if let Some(v) = p.credit_overhead {
        c.credit_overhead = v;
    }
    if let Some(v) = p.mfs {
        c.mfs = v;
    }
    if let Some(v) = p.llr_window {
        c.llr_window = v;
    }
    if let Some(v) = p.replay_max_frames {
        c.replay_max_frames = v;
    }
    if let Some(v) = p.replay_max_bytes {
        c.replay_max_bytes = v;
    }
    if let Some(v) = p.ack_spacing {
        c.ack_spacing = v;
    }
    if let Some(v) = p.ack_timer_ns {
        c.ack_timer_ns = v;
    }
    if let Some(v) = p.replay_timer_ns {
        c.replay_timer_ns = v;
    }
    if let Some(v) = p.replay_count_max {
        c.replay_count_max = v;
    }
    if let Some(v) = p.cf_min_credits {
        c.cf_min_credits = v;
    }
    if let Some(v) = p.cf_min_interval_ns {
        c.cf_min_interval_ns = v;
    }
    if let Some(v) = p.cf_max_interval_ns {
        c.cf_max_interval_ns = v;
    }
    if let Some(v) = p.cc_interval_ns {
        c.cc_interval_ns = v;
    }
    if let Some(v) = p.init_interval_ns {
        c.init_interval_ns = v;
    }
    if let Some(v) = p.init_timeout_ns {
        c.init_timeout_ns = v;
    }
    if let Some(v) = p.llr_max_age_ns {
        c.llr_max_age_ns = v;
    }
}

/// Every parameter of `c`.
fn params_of(c: &CParams) -> LinkParams {
    LinkParams {
        vcs: Some(c.vcs),
        credit_size: Some(c.credit_size),
        rx_credits: Some(c.rx_credits[0]),
        credit_overhead: Some(c.credit_overhead),
        mfs: Some(c.mfs),
        llr_window: Some(c.llr_window),
        replay_max_frames: Some(c.replay_max_frames),
        replay_max_bytes: Some(c.replay_max_bytes),
        ack_spacing: Some(c.ack_spacing),
        ack_timer_ns: Some(c.ack_timer_ns),
        replay_timer_ns: Some(c.replay_timer_ns),
        replay_count_max: Some(c.replay_count_max),
        cf_min_credits: Some(c.cf_min_credits),
        cf_min_interval_ns: Some(c.cf_min_interval_ns),
        cf_max_interval_ns: Some(c.cf_max_interval_ns),
        cc_interval_ns: Some(c.cc_interval_ns),
        init_interval_ns: Some(c.init_interval_ns),
        init_timeout_ns: Some(c.init_timeout_ns),
        llr_max_age_ns: Some(c.llr_max_age_ns),
    }
}

fn zeroed_params() -> CParams {
    CParams {
        vcs: 0,
        replay_count_max: 0,
        credit_size: 0,
        credit_overhead: 0,
        mfs: 0,
        rx_credits: [0; 8],
        llr_window: 0,
        replay_max_frames: 0,
        replay_max_bytes: 0,
        ack_spacing: 0,
        cf_min_credits: 0,
        tx_queue_frames: 0,
        tx_queue_bytes: 0,
        ack_timer_ns: 0,
        replay_timer_ns: 0,
        cf_min_interval_ns: 0,
        cf_max_interval_ns: 0,
        cc_interval_ns: 0,
        init_interval_ns: 0,
        init_timeout_ns: 0,
        llr_max_age_ns: 0,
    }
}

fn zeroed_link_end() -> LinkEndConfig {
    LinkEndConfig {
        link: zeroed_params(),
        mac: [0; 6],
        caps: 0,
        seed: 0,
    }
}

fn zeroed_endpoint() -> EndpointConfig {
    EndpointConfig {
        link: zeroed_params(),
        gpu: 0,
        stacks: 0,
        ports_per_stack: 0,
        policy: 0,
        max_retries: 0,
        lsu_tags: 0,
        rdma_tags: 0,
        caps: 0,
        rdma_queue: 0,
        segment: 0,
        read_chunk: 0,
        write_chunk: 0,
        read_window: 0,
        max_reassemblies: 0,
        max_reassembly_blocks: 0,
        max_read_jobs: 0,
        response_backlog: 0,
        port_queue: 0,
        max_regions: 0,
        pack_delay_ns: 0,
        op_timeout_ns: 0,
        tag_quarantine_ns: 0,
        frame_lifetime_ns: 0,
        busy_backoff_ns: 0,
        hold_max_ns: 0,
        global_size: 0,
        shared_size: 0,
        seed: 0,
    }
}

fn zeroed_switch() -> SwitchConfig {
    SwitchConfig {
        link: zeroed_params(),
        id: 0,
        ports: 0,
        mode: 0,
        egress_depth: 0,
        latency_ns: 0,
        max_residence_ns: 0,
        rate_gbps: 0.0,
        seed: 0,
    }
}

fn zeroed_event() -> Event {
    Event {
        kind: 0,
        port: 0,
        vc: 0,
        reason: 0,
        op: 0,
        status: 0,
        status_raw: 0,
        id: 0,
        len: 0,
    }
}

fn zeroed_description() -> CDescription {
    CDescription {
        abi_version: 0,
        role: 0,
        ports: 0,
        caps: 0,
        name: [0; ethlink_ffi::ETHLINK_NAME_LEN],
        tick_ns: 0,
        rate_gbps: 0,
    }
}

/// The boundary's form of the event `e` with its bytes `data`.
fn output(e: &Event, data: &[u8]) -> Result<Output, DeviceError> {
    let bad =
        |what: &str, v: u64| DeviceError::Broken(format!("ethlink_poll_event: unknown {what} {v}"));
    Ok(match e.kind {
        ETHLINK_EVENT_DELIVERED => Output::Delivered {
            port: e.port,
            vc: e.vc,
            payload: to_hex(data),
        },
        ETHLINK_EVENT_LOST => Output::Lost {
            port: e.port,
            vc: e.vc,
            reason: match e.reason {
                ETHLINK_LOST_UNKNOWN_FATE => "unknown_fate",
                ETHLINK_LOST_EXCEEDS_PEER_MFS => "exceeds_peer_mfs",
                ETHLINK_LOST_VC_NOT_AGREED => "vc_not_agreed",
                ETHLINK_LOST_WITHDRAWN => "withdrawn",
                r => return Err(bad("loss reason", r.into())),
            }
            .into(),
            payload: to_hex(data),
        },
        ETHLINK_EVENT_LINK_UP => Output::LinkUp { port: e.port },
        ETHLINK_EVENT_LINK_DOWN => Output::LinkDown {
            port: e.port,
            reason: match e.reason {
                ETHLINK_DOWN_FLUSH => "flush",
                ETHLINK_DOWN_PHYSICAL => "physical",
                ETHLINK_DOWN_PEER_RESTART => "peer_restart",
                r => return Err(bad("down reason", r.into())),
            }
            .into(),
        },
        ETHLINK_EVENT_COMPLETION => {
            let status = match e.status {
                8 => format!("UNKNOWN({:#04x})", e.status_raw),
                s @ 0..=11 => ethlink_endpoint::CompletionStatus::class_name(usize::from(s)).into(),
                s => return Err(bad("status", s.into())),
            };
            let (tag, id) = match e.op {
                ETHLINK_OP_LS => (
                    Some(u16::try_from(e.id).map_err(|_| bad("tag", e.id))?),
                    None,
                ),
                ETHLINK_OP_RDMA | ETHLINK_OP_FENCE => (None, Some(e.id)),
                op => return Err(bad("operation kind", op.into())),
            };
            Output::Completion {
                tag,
                id,
                status,
                data: (!data.is_empty()).then(|| to_hex(data)),
            }
        }
        k => return Err(bad("event kind", k.into())),
    })
}

impl Device for DylibDevice {
    fn hello(&mut self) -> Result<Description, DeviceError> {
        let (h, _) = self.make(&Setup::default())?;
        let mut d = zeroed_description();
        let code = (self.api.ethlink_describe)(self.ctx(), h, &mut d);
        let described = self.check(code, "ethlink_describe", Blame::Boundary);
        (self.api.ethlink_destroy)(self.ctx(), h);
        described?;
        let want = role_code(self.role);
        if d.role != want {
            return Err(DeviceError::Broken(format!(
                "ethlink_describe says role {}, the device was made as {} ({want})",
                d.role, self.role
            )));
        }
        let name_bytes: Vec<u8> = d.name.iter().map(|&c| c as u8).collect();
        let name = CStr::from_bytes_until_nul(&name_bytes)
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|_| String::from_utf8_lossy(&name_bytes).into_owned());
        if name.trim().is_empty() {
            return Err(DeviceError::Broken(
                "ethlink_describe gives an empty name".into(),
            ));
        }
        let caps = Capabilities::from_bits_truncate(u16::try_from(d.caps & 0xFFFF).unwrap_or(0));
        Ok(Description {
            version: PROTOCOL_VERSION,
            name,
            role: self.role,
            caps: caps.names().map(str::to_owned).collect(),
            ports: d.ports,
            // 0 leaves each undeclared (a 1 ns clock; frames leave as they are made); the
            // ranges are checked with every device's hello (docs/conformance.md §4.2).
            tick_ns: (d.tick_ns != 0).then_some(d.tick_ns),
            rate_gbps: (d.rate_gbps != 0).then_some(d.rate_gbps),
        })
    }

    fn reset(&mut self, setup: &Setup) -> Result<LinkParams, DeviceError> {
        if let Some(h) = self.handle.take() {
            let code = (self.api.ethlink_destroy)(self.ctx(), h);
            self.check(code, "ethlink_destroy", Blame::Boundary)?;
        }
        self.now = 0;
        let (h, params) = self.make(setup)?;
        self.handle = Some(h);
        Ok(params)
    }

    fn frame(&mut self, port: u16, time_ns: u64, frame: &[u8]) -> Result<(), DeviceError> {
        let h = self.handle()?;
        self.now = self.now.max(time_ns);
        let code = (self.api.ethlink_handle_frame)(
            self.ctx(),
            h,
            port,
            self.now,
            frame.as_ptr(),
            frame.len(),
        );
        self.check(code, "ethlink_handle_frame", Blame::Boundary)?;
        Ok(())
    }

    fn request(&mut self, time_ns: u64, request: &Request) -> Result<Reply, DeviceError> {
        let h = self.handle()?;
        self.now = self.now.max(time_ns);
        let now = self.now;
        let ctx = self.ctx();
        let mut reply = Reply::default();
        let api = &self.api;
        let path = self.path.as_str();
        let (code, what) = match request {
            Request::PhysicalUp { port } => (
                (api.ethlink_physical)(ctx, h, *port, 1, now),
                "ethlink_physical",
            ),
            Request::PhysicalDown { port } => (
                (api.ethlink_physical)(ctx, h, *port, 0, now),
                "ethlink_physical",
            ),
            Request::Submit { port, vc, payload } => {
                if *port != 0 {
                    return Err(DeviceError::Refused(format!(
                        "a link end has no port {port}"
                    )));
                }
                let payload = from_hex("payload", payload)?;
                let f = need(api.ethlink_link_submit, path, "ethlink_link_submit")?;
                (
                    f(ctx, h, *vc, payload.as_ptr(), payload.len()),
                    "ethlink_link_submit",
                )
            }
            Request::Hold { port, vc, hold } => {
                if *port != 0 {
                    return Err(DeviceError::Refused(format!(
                        "a link end has no port {port}"
                    )));
                }
                let f = need(api.ethlink_link_hold, path, "ethlink_link_hold")?;
                (f(ctx, h, *vc, u8::from(*hold)), "ethlink_link_hold")
            }
            Request::Withdraw { port } => {
                if *port != 0 {
                    return Err(DeviceError::Refused(format!(
                        "a link end has no port {port}"
                    )));
                }
                let f = need(api.ethlink_link_withdraw, path, "ethlink_link_withdraw")?;
                let mut n = 0usize;
                (f(ctx, h, &mut n), "ethlink_link_withdraw")
            }
            Request::SetRoute { dst, ports, groups } if groups.is_empty() => {
                let f = need(
                    api.ethlink_switch_set_route,
                    path,
                    "ethlink_switch_set_route",
                )?;
                (
                    f(ctx, h, *dst, ports.as_ptr(), ports.len()),
                    "ethlink_switch_set_route",
                )
            }
            Request::SetRoute { dst, ports, groups } => {
                let f = need(
                    api.ethlink_switch_set_route_groups,
                    path,
                    "ethlink_switch_set_route_groups",
                )?;
                let code = f(
                    ctx,
                    h,
                    *dst,
                    ports.as_ptr(),
                    ports.len(),
                    groups.as_ptr(),
                    groups.len(),
                );
                (code, "ethlink_switch_set_route_groups")
            }
            Request::Register {
                space,
                base,
                len,
                key,
                perms,
            } => {
                let mut bits = 0u32;
                for c in perms.chars() {
                    bits |= match c {
                        'r' => ETHLINK_PERM_READ,
                        'w' => ETHLINK_PERM_WRITE,
                        'a' => ETHLINK_PERM_ATOMIC,
                        _ => {
                            return Err(DeviceError::Refused(format!("permission letter {c:?}")));
                        }
                    };
                }
                let f = need(
                    api.ethlink_endpoint_register,
                    path,
                    "ethlink_endpoint_register",
                )?;
                (
                    f(ctx, h, space_code(*space), *base, *len, *key, bits),
                    "ethlink_endpoint_register",
                )
            }
            Request::Deregister { space, base } => {
                let f = need(
                    api.ethlink_endpoint_deregister,
                    path,
                    "ethlink_endpoint_deregister",
                )?;
                (
                    f(ctx, h, space_code(*space), *base),
                    "ethlink_endpoint_deregister",
                )
            }
            Request::Poison { space, addr, len } => {
                let f = need(api.ethlink_endpoint_poison, path, "ethlink_endpoint_poison")?;
                (
                    f(ctx, h, space_code(*space), *addr, *len),
                    "ethlink_endpoint_poison",
                )
            }
            Request::MemWrite { space, addr, data } => {
                let data = from_hex("mem_write data", data)?;
                let f = need(
                    api.ethlink_endpoint_mem_write,
                    path,
                    "ethlink_endpoint_mem_write",
                )?;
                (
                    f(ctx, h, space_code(*space), *addr, data.as_ptr(), data.len()),
                    "ethlink_endpoint_mem_write",
                )
            }
            Request::MemRead { space, addr, len } => {
                let n = usize::try_from(*len)
                    .ok()
                    .filter(|l| *l <= 1 << 24)
                    .ok_or_else(|| DeviceError::Refused(format!("mem_read of {len} bytes")))?;
                let f = need(
                    api.ethlink_endpoint_mem_read,
                    path,
                    "ethlink_endpoint_mem_read",
                )?;
                let mut buf = vec![0u8; n];
                let code = f(ctx, h, space_code(*space), *addr, buf.as_mut_ptr(), n);
                self.check(code, "ethlink_endpoint_mem_read", Blame::Request)?;
                reply.data = Some(to_hex(&buf));
                (code, "ethlink_endpoint_mem_read")
            }
            Request::Issue {
                dst,
                space,
                key,
                addr,
                op,
                stream,
                port,
            } => {
                if port.is_some() {
                    return Err(DeviceError::Refused(
                        "the C ABI (version 5) cannot pin an operation to a port".into(),
                    ));
                }
                let mut store = Vec::new();
                let mut r = LsRequest {
                    kind: ETHLINK_LS_LOAD,
                    space: space_code(*space),
                    width: 0,
                    ordered: u8::from(stream.is_some()),
                    dst: *dst,
                    len: 0,
                    key: *key,
                    stream: stream.unwrap_or(0),
                    addr: *addr,
                    value: 0,
                    compare: 0,
                    data: std::ptr::null(),
                    data_len: 0,
                };
                match op {
                    LsOp::Load { len } => r.len = *len,
                    LsOp::Store { data } => {
                        store = from_hex("store data", data)?;
                        r.kind = ETHLINK_LS_STORE;
                    }
                    LsOp::FetchAdd { width, value } => {
                        (r.kind, r.width, r.value) = (ETHLINK_LS_FETCH_ADD, *width, *value);
                    }
                    LsOp::Swap { width, value } => {
                        (r.kind, r.width, r.value) = (ETHLINK_LS_SWAP, *width, *value);
                    }
                    LsOp::CompareSwap {
                        width,
                        compare,
                        value,
                    } => {
                        (r.kind, r.width, r.compare, r.value) =
                            (ETHLINK_LS_COMPARE_SWAP, *width, *compare, *value);
                    }
                    LsOp::Fence => {
                        return Err(DeviceError::Refused(
                            "the C ABI (version 5) has no FENCE request".into(),
                        ));
                    }
                }
                r.data = store.as_ptr();
                r.data_len = store.len();
                let f = need(api.ethlink_endpoint_issue, path, "ethlink_endpoint_issue")?;
                let mut tag = 0u16;
                let code = f(ctx, h, now, &r, &mut tag);
                reply.tag = Some(tag);
                (code, "ethlink_endpoint_issue")
            }
            Request::Post {
                write,
                local_space,
                local_addr,
                dst,
                space,
                key,
                addr,
                len,
            } => {
                let d = RdmaDesc {
                    write: u8::from(*write),
                    local_space: space_code(*local_space),
                    space: space_code(*space),
                    dst: *dst,
                    key: *key,
                    local_addr: *local_addr,
                    addr: *addr,
                    len: *len,
                };
                let f = need(api.ethlink_endpoint_post, path, "ethlink_endpoint_post")?;
                let mut id = 0u64;
                let code = f(ctx, h, now, &d, &mut id);
                reply.id = Some(id);
                (code, "ethlink_endpoint_post")
            }
            Request::Fence => {
                let f = need(api.ethlink_endpoint_fence, path, "ethlink_endpoint_fence")?;
                let mut id = 0u64;
                let code = f(ctx, h, now, &mut id);
                reply.id = Some(id);
                (code, "ethlink_endpoint_fence")
            }
        };
        self.check(code, what, Blame::Request)?;
        Ok(reply)
    }

    fn advance(&mut self, time_ns: u64) -> Result<Advanced, DeviceError> {
        self.taken = 0;
        match self.role {
            Role::Switch => self.advance_switch(time_ns),
            Role::LinkEnd | Role::Endpoint => self.advance_timers(time_ns),
        }
    }

    fn counters(&mut self) -> Result<Counters, DeviceError> {
        let h = self.handle()?;
        let mut n = 0usize;
        let code = (self.api.ethlink_counter_count)(self.ctx(), h, &mut n);
        self.check(code, "ethlink_counter_count", Blame::Boundary)?;
        let mut c = Counters::new();
        let mut name = vec![0 as std::ffi::c_char; 256];
        if n > MAX_COUNTERS {
            return Err(DeviceError::Broken(format!(
                "ethlink_counter_count says {n} counters, more than the {MAX_COUNTERS} the \
                 harness reads"
            )));
        }
        for i in 0..n {
            let mut len = 0usize;
            let mut value = 0u64;
            let mut code = (self.api.ethlink_counter_at)(
                self.ctx(),
                h,
                i,
                name.as_mut_ptr(),
                name.len(),
                &mut len,
                &mut value,
            );
            if code == ETHLINK_ERR_BUFFER_TOO_SMALL && len >= name.len() && len <= MAX_COUNTER_NAME
            {
                name.resize(len + 1, 0);
                code = (self.api.ethlink_counter_at)(
                    self.ctx(),
                    h,
                    i,
                    name.as_mut_ptr(),
                    name.len(),
                    &mut len,
                    &mut value,
                );
            }
            self.check(code, "ethlink_counter_at", Blame::Boundary)?;
            let bytes: Vec<u8> = name.iter().take(len).map(|&b| b as u8).collect();
            c.insert(String::from_utf8_lossy(&bytes).into_owned(), value);
        }
        Ok(c)
    }
}

//! The exported functions. Each one converts its pointers through [`crate::ptr`], runs its body
//! under `catch_unwind`, and turns the outcome into a return code, with the text of an error
//! kept in the context.
// `#[unsafe(no_mangle)]` is the only unsafe construct here; pointer reads are in `ptr`.
#![allow(unsafe_code)]

use core::ffi::c_char;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::ctx::{Ctx, Model, Polled, Transmit};
use crate::endpoint::EndpointDev;
use crate::error::{Error, Result, code_name};
use crate::link_end::LinkEndDev;
use crate::ptr;
use crate::switch::SwitchDev;
use crate::types::{
    Description, ETHLINK_ABI_VERSION, ETHLINK_ERR_NULL_POINTER, ETHLINK_ERR_PANIC, ETHLINK_NONE,
    ETHLINK_OK, EndpointConfig, Event, LinkEndConfig, LsRequest, RdmaDesc, SwitchConfig,
};
use ethlink_switch::ROUTE_PORTS_MAX;

/// The text of a caught panic's payload.
fn panic_text(p: &(dyn std::any::Any + Send)) -> &str {
    p.downcast_ref::<&str>()
        .copied()
        .or_else(|| p.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message")
}

/// Runs `f` on the context `ctx` points to: the code it returns, or the code of its error with
/// the error's text kept, prefixed with `name`.
fn call(ctx: *mut Ctx, name: &str, f: impl FnOnce(&mut Ctx) -> Result<i32>) -> i32 {
    let Some(c) = ptr::ctx(ctx) else {
        return ETHLINK_ERR_NULL_POINTER;
    };
    c.begin_call();
    match catch_unwind(AssertUnwindSafe(|| f(&mut *c))) {
        Ok(Ok(code)) => code,
        Ok(Err(e)) => {
            if e.code == ETHLINK_ERR_PANIC {
                // An internal inconsistency found without a panic: the device is as unusable
                // as after one (the code's promise).
                c.mark_broken();
            }
            c.set_error(format!("{name}: {}", e.text));
            e.code
        }
        Err(p) => {
            c.mark_broken();
            c.set_error(format!(
                "{name}: internal error ({}); the device is unusable, destroy it",
                panic_text(p.as_ref())
            ));
            ETHLINK_ERR_PANIC
        }
    }
}

/// Runs `f`, which needs no context: its code, or the code of its error (whose text has nowhere
/// to go).
fn call_free(f: impl FnOnce() -> Result<i32>) -> i32 {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(code)) => code,
        Ok(Err(e)) => e.code,
        Err(_) => ETHLINK_ERR_PANIC,
    }
}

/// The version of the ABI the library exports (`ETHLINK_ABI_VERSION` of its header). A caller
/// checks it against the version of the header it was compiled with.
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_abi_version() -> u32 {
    ETHLINK_ABI_VERSION
}

/// The name of a return code ("ETHLINK_ERR_HANDLE", ...), as a static NUL-terminated string;
/// "ETHLINK_UNKNOWN_CODE" for a value that is none. Never NULL.
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_code_name(code: i32) -> *const c_char {
    code_name(code).as_ptr()
}

/// Makes a context and writes it to `*out`. Free it with `ethlink_ctx_free`.
///
/// Errors: NULL_POINTER (`out` is NULL).
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_ctx_new(out: *mut *mut Ctx) -> i32 {
    call_free(|| {
        ptr::check_out(out, "out")?;
        let mut c = Box::new(Ctx::new(0));
        // The context's own address varies its handles (see ctx.rs).
        *c = Ctx::new(&*c as *const Ctx as u64);
        ptr::write(out, "out", ptr::ctx_into_raw(c))?;
        Ok(ETHLINK_OK)
    })
}

/// Frees a context and every device it holds. NULL is ignored. The pointer and every handle of
/// the context are invalid afterwards.
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_ctx_free(ctx: *mut Ctx) {
    let _ = catch_unwind(AssertUnwindSafe(|| ptr::ctx_free(ctx)));
}

/// Copies the text of the last error returned by a call on `ctx` into `buf` (at most `cap`
/// bytes, NUL-terminated; truncated when it does not fit) and writes its full length, without
/// the NUL, to `*len`. The text is empty when no call has failed. `buf` may be NULL when `cap`
/// is 0. This call leaves the text as it is.
///
/// Errors: NULL_POINTER (`ctx` or `len` NULL, or `buf` NULL with `cap` > 0), BUFFER_TOO_SMALL
/// (the text was truncated to `cap - 1` bytes; `*len` says how many `cap` needs, less one).
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_last_error(
    ctx: *mut Ctx,
    buf: *mut c_char,
    cap: usize,
    len: *mut usize,
) -> i32 {
    let Some(c) = ptr::ctx(ctx) else {
        return ETHLINK_ERR_NULL_POINTER;
    };
    let text = c.last_error().to_owned();
    call_free(|| {
        ptr::check_out(len, "len")?;
        let out = ptr::bytes_mut(buf.cast::<u8>(), cap, "buf", "cap")?;
        ptr::write(len, "len", text.len())?;
        let Some(room) = cap.checked_sub(1) else {
            return Err(Error::too_small(
                "buf",
                cap,
                text.len() + 1,
                "the text with its NUL",
            ));
        };
        let n = text.len().min(room);
        if let (Some(dst), Some(src)) = (out.get_mut(..n), text.as_bytes().get(..n)) {
            dst.copy_from_slice(src);
        }
        if let Some(b) = out.get_mut(n) {
            *b = 0;
        }
        if n < text.len() {
            return Err(Error::too_small(
                "buf",
                cap,
                text.len() + 1,
                "the text with its NUL",
            ));
        }
        Ok(ETHLINK_OK)
    })
}

/// Fills `*cfg` with the default configuration of a link end (link.md §1.1).
///
/// Errors: NULL_POINTER.
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_link_end_config_default(cfg: *mut LinkEndConfig) -> i32 {
    call_free(|| {
        ptr::write(cfg, "cfg", crate::link_end::default_config())?;
        Ok(ETHLINK_OK)
    })
}

/// Fills `*cfg` with the default configuration of an endpoint (endpoint.md Table EP-T1).
///
/// Errors: NULL_POINTER.
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_endpoint_config_default(cfg: *mut EndpointConfig) -> i32 {
    call_free(|| {
        ptr::write(cfg, "cfg", crate::endpoint::default_config())?;
        Ok(ETHLINK_OK)
    })
}

/// Fills `*cfg` with the default configuration of a switch (switch.md Table SW-T1).
///
/// Errors: NULL_POINTER.
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_switch_config_default(cfg: *mut SwitchConfig) -> i32 {
    call_free(|| {
        ptr::write(cfg, "cfg", crate::switch::default_config())?;
        Ok(ETHLINK_OK)
    })
}

/// Makes a link end with the configuration `*cfg` and writes its handle to `*out`. Its
/// physical link starts down and its time at 0.
///
/// Errors: NULL_POINTER, ARGUMENT (a field out of range, or a group address as `mac`: the text
/// names the field), REFUSED (the context holds the most devices it can).
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_link_end_new(
    ctx: *mut Ctx,
    cfg: *const LinkEndConfig,
    out: *mut u32,
) -> i32 {
    call(ctx, "ethlink_link_end_new", |c| {
        let cfg = ptr::read(cfg, "cfg")?;
        ptr::check_out(out, "out")?;
        let dev = LinkEndDev::new(&cfg)?;
        let h = c.insert(Model::LinkEnd(Box::new(dev)))?;
        ptr::write(out, "out", h)?;
        Ok(ETHLINK_OK)
    })
}

/// Makes an endpoint with the configuration `*cfg` and writes its handle to `*out`. Every port's
/// physical link starts down and its time at 0.
///
/// Errors: NULL_POINTER, ARGUMENT (a field out of range), REFUSED (the context is full).
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_endpoint_new(
    ctx: *mut Ctx,
    cfg: *const EndpointConfig,
    out: *mut u32,
) -> i32 {
    call(ctx, "ethlink_endpoint_new", |c| {
        let cfg = ptr::read(cfg, "cfg")?;
        ptr::check_out(out, "out")?;
        let dev = EndpointDev::new(&cfg)?;
        let h = c.insert(Model::Endpoint(Box::new(dev)))?;
        ptr::write(out, "out", h)?;
        Ok(ETHLINK_OK)
    })
}

/// Makes a switch with the configuration `*cfg` and an empty forwarding table
/// (`ethlink_switch_set_route` fills it), and writes its handle to `*out`. Every port's physical
/// link starts down and its time at 0.
///
/// Errors: NULL_POINTER, ARGUMENT (a field out of range), REFUSED (the context is full).
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_switch_new(
    ctx: *mut Ctx,
    cfg: *const SwitchConfig,
    out: *mut u32,
) -> i32 {
    call(ctx, "ethlink_switch_new", |c| {
        let cfg = ptr::read(cfg, "cfg")?;
        ptr::check_out(out, "out")?;
        let dev = SwitchDev::new(&cfg)?;
        let h = c.insert(Model::Switch(Box::new(dev)))?;
        ptr::write(out, "out", h)?;
        Ok(ETHLINK_OK)
    })
}

/// Destroys the device `h` names; the handle names nothing afterwards.
///
/// Errors: NULL_POINTER, HANDLE.
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_destroy(ctx: *mut Ctx, h: u32) -> i32 {
    call(ctx, "ethlink_destroy", |c| {
        c.remove(h)?;
        Ok(ETHLINK_OK)
    })
}

/// Writes what the device is to `*out`: role, ports, capabilities and a name.
///
/// Errors: NULL_POINTER, HANDLE.
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_describe(ctx: *mut Ctx, h: u32, out: *mut Description) -> i32 {
    call(ctx, "ethlink_describe", |c| {
        ptr::check_out(out, "out")?;
        let d = c.model(h)?.describe();
        ptr::write(out, "out", d)?;
        Ok(ETHLINK_OK)
    })
}

/// The physical link of `port` comes up (`up` = 1: signal detected, the MAC ready) or goes down
/// (`up` = 0) at `now_ns`.
///
/// Errors: NULL_POINTER, HANDLE, ARGUMENT (no such port, `up` neither 0 nor 1, `now_ns` after
/// ETHLINK_TIME_MAX_NS), TIME_BACKWARDS.
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_physical(ctx: *mut Ctx, h: u32, port: u16, up: u8, now_ns: u64) -> i32 {
    call(ctx, "ethlink_physical", |c| {
        let up = crate::conv::flag(up, "up")?;
        c.model(h)?.physical(port, up, now_ns)?;
        Ok(ETHLINK_OK)
    })
}

/// The frame of `len` bytes at `bytes` (destination MAC address through FCS) arrived whole on
/// `port` at `now_ns`. A damaged frame is given as it is: the model checks it.
///
/// Errors: NULL_POINTER (`bytes` NULL with `len` > 0), HANDLE, ARGUMENT (no such port, `now_ns`
/// after ETHLINK_TIME_MAX_NS), TIME_BACKWARDS.
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_handle_frame(
    ctx: *mut Ctx,
    h: u32,
    port: u16,
    now_ns: u64,
    bytes: *const u8,
    len: usize,
) -> i32 {
    call(ctx, "ethlink_handle_frame", |c| {
        let frame = ptr::bytes(bytes, len, "bytes", "len")?;
        c.model(h)?.handle_frame(port, now_ns, frame)?;
        Ok(ETHLINK_OK)
    })
}

/// Writes the next frame to send at `now_ns`, if any, to `buf` (`cap` bytes), its port to
/// `*port` and its length (FCS included) to `*len`. Call it until it returns ETHLINK_NONE. A
/// buffer of 9216 bytes (the largest MFS) always suffices.
///
/// Returns OK (a frame was written) or NONE (nothing to send now).
/// Errors: NULL_POINTER (`port` or `len` NULL, `buf` NULL with `cap` > 0), HANDLE, ARGUMENT
/// (`now_ns` after ETHLINK_TIME_MAX_NS), TIME_BACKWARDS, BUFFER_TOO_SMALL (nothing consumed;
/// `*port` and `*len` say which port's frame needs how many bytes).
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_poll_transmit(
    ctx: *mut Ctx,
    h: u32,
    now_ns: u64,
    port: *mut u16,
    buf: *mut u8,
    cap: usize,
    len: *mut usize,
) -> i32 {
    call(ctx, "ethlink_poll_transmit", |c| {
        ptr::check_out(port, "port")?;
        ptr::check_out(len, "len")?;
        let out = ptr::bytes_mut(buf, cap, "buf", "cap")?;
        match c.model(h)?.poll_transmit(now_ns, out)? {
            Transmit::Frame { port: p, len: n } => {
                ptr::write(port, "port", p)?;
                ptr::write(len, "len", n)?;
                Ok(ETHLINK_OK)
            }
            Transmit::Nothing => {
                ptr::write(len, "len", 0)?;
                Ok(ETHLINK_NONE)
            }
            Transmit::TooSmall { port: p, needed } => {
                ptr::write(port, "port", p)?;
                ptr::write(len, "len", needed)?;
                Err(Error::too_small(
                    "buf",
                    cap,
                    needed,
                    &format!("the next frame, for port {p},"),
                ))
            }
        }
    })
}

/// Writes to `*deadline_ns` the time at which `ethlink_handle_timeout` must be called next. The
/// deadline may be at or before the device's current time: then call it at once.
///
/// Returns OK, or NONE when the device has no deadline at or before ETHLINK_TIME_MAX_NS (nothing
/// happens until the next input; a deadline after it is never reached).
/// Errors: NULL_POINTER, HANDLE.
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_poll_timeout(ctx: *mut Ctx, h: u32, deadline_ns: *mut u64) -> i32 {
    call(ctx, "ethlink_poll_timeout", |c| {
        ptr::check_out(deadline_ns, "deadline_ns")?;
        match c.model(h)?.poll_timeout() {
            Some(t) => {
                ptr::write(deadline_ns, "deadline_ns", t)?;
                Ok(ETHLINK_OK)
            }
            None => Ok(ETHLINK_NONE),
        }
    })
}

/// Runs the timers due at or before `now_ns`. Calling it when nothing is due does nothing.
///
/// Errors: NULL_POINTER, HANDLE, ARGUMENT (`now_ns` after ETHLINK_TIME_MAX_NS), TIME_BACKWARDS.
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_handle_timeout(ctx: *mut Ctx, h: u32, now_ns: u64) -> i32 {
    call(ctx, "ethlink_handle_timeout", |c| {
        c.model(h)?.handle_timeout(now_ns)?;
        Ok(ETHLINK_OK)
    })
}

/// Writes the next event, if any, to `*event` and the bytes that go with it (a payload, the
/// data of a completion) to `data` (`cap` bytes); `event->len` says how many. Call it until it
/// returns ETHLINK_NONE. A buffer of 9216 bytes always suffices.
///
/// Returns OK (an event was written) or NONE.
/// Errors: NULL_POINTER (`event` NULL, `data` NULL with `cap` > 0), HANDLE, BUFFER_TOO_SMALL
/// (nothing consumed: `*event` is written, and `event->len` is the size `data` needs).
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_poll_event(
    ctx: *mut Ctx,
    h: u32,
    event: *mut Event,
    data: *mut u8,
    cap: usize,
) -> i32 {
    call(ctx, "ethlink_poll_event", |c| {
        ptr::check_out(event, "event")?;
        let out = ptr::bytes_mut(data, cap, "data", "cap")?;
        match c.model(h)?.poll_event(out)? {
            Polled::Event(e) => {
                ptr::write(event, "event", e)?;
                Ok(ETHLINK_OK)
            }
            Polled::Nothing => Ok(ETHLINK_NONE),
            Polled::TooSmall(e) => {
                let needed = e.len;
                ptr::write(event, "event", e)?;
                Err(Error::too_small(
                    "data",
                    cap,
                    needed,
                    "the next event's data",
                ))
            }
        }
    })
}

/// Takes a snapshot of the device's counters and writes how many there are to `*count`;
/// `ethlink_counter_at` reads the snapshot. Names are those of the conformance boundary
/// (docs/conformance.md): `<name>` or `<name>.vc<v>` for a link end, `port<p>.<name>...` and
/// `port<p>.link.<name>...` for the ports of an endpoint or a switch.
///
/// Errors: NULL_POINTER, HANDLE.
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_counter_count(ctx: *mut Ctx, h: u32, count: *mut usize) -> i32 {
    call(ctx, "ethlink_counter_count", |c| {
        ptr::check_out(count, "count")?;
        let m = c.model(h)?;
        let all = m.counters();
        let n = all.len();
        *m.snapshot() = all;
        ptr::write(count, "count", n)?;
        Ok(ETHLINK_OK)
    })
}

/// Writes counter `index` of the last snapshot (`ethlink_counter_count`; counters are in name
/// order): its NUL-terminated name to `name` (`cap` bytes), the name's length without the NUL
/// to `*name_len`, and its value to `*value`.
///
/// Errors: NULL_POINTER (`name_len` or `value` NULL, `name` NULL with `cap` > 0), HANDLE,
/// ARGUMENT (`index` beyond the snapshot), BUFFER_TOO_SMALL (nothing written to `name`;
/// `*name_len` + 1 bytes are needed).
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_counter_at(
    ctx: *mut Ctx,
    h: u32,
    index: usize,
    name: *mut c_char,
    cap: usize,
    name_len: *mut usize,
    value: *mut u64,
) -> i32 {
    call(ctx, "ethlink_counter_at", |c| {
        ptr::check_out(name_len, "name_len")?;
        ptr::check_out(value, "value")?;
        let out = ptr::bytes_mut(name.cast::<u8>(), cap, "name", "cap")?;
        let snap = c.model(h)?.snapshot();
        let (n, v) = snap.get(index).ok_or_else(|| {
            Error::argument(format!(
                "index = {index}: the snapshot holds {} counters (take one with \
                 ethlink_counter_count)",
                snap.len()
            ))
        })?;
        ptr::write(name_len, "name_len", n.len())?;
        let Some(dst) = out.get_mut(..=n.len()) else {
            return Err(Error::too_small(
                "name",
                cap,
                n.len() + 1,
                &format!("counter {index}'s name with its NUL"),
            ));
        };
        let (text, nul) = dst.split_at_mut(n.len());
        text.copy_from_slice(n.as_bytes());
        nul.fill(0);
        ptr::write(value, "value", *v)?;
        Ok(ETHLINK_OK)
    })
}

/// Writes the value of the counter named `name` (NUL-terminated) to `*value`.
///
/// Errors: NULL_POINTER, HANDLE, ARGUMENT (no counter has that name).
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_counter_get(
    ctx: *mut Ctx,
    h: u32,
    name: *const c_char,
    value: *mut u64,
) -> i32 {
    call(ctx, "ethlink_counter_get", |c| {
        let name = ptr::cstr(name, "name")?;
        ptr::check_out(value, "value")?;
        let name = name.to_str().map_err(|_| {
            Error::argument(format!(
                "name = {:?}: not UTF-8 text, and every counter's name is ASCII",
                name.to_string_lossy()
            ))
        })?;
        let all = c.model(h)?.counters();
        let v = all
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .ok()
            .and_then(|i| all.get(i))
            .map(|(_, v)| *v)
            .ok_or_else(|| {
                Error::argument(format!(
                    "name = {name:?}: no counter has this name (ethlink_counter_at lists them)"
                ))
            })?;
        ptr::write(value, "value", v)?;
        Ok(ETHLINK_OK)
    })
}

/// Link end: queues `payload` (`len` bytes: network header and transactions) for sending on
/// `vc`.
///
/// Errors: NULL_POINTER, HANDLE, WRONG_ROLE, ARGUMENT (no such VC, a payload that is not a
/// network header followed by its length, a frame longer than the MFS), REFUSED (the VC's
/// transmit queue is full: send frames and try again).
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_link_submit(
    ctx: *mut Ctx,
    h: u32,
    vc: u8,
    payload: *const u8,
    len: usize,
) -> i32 {
    call(ctx, "ethlink_link_submit", |c| {
        let payload = ptr::bytes(payload, len, "payload", "len")?;
        c.link_end(h)?.submit(vc, payload)?;
        Ok(ETHLINK_OK)
    })
}

/// Link end: with `hold` = 1, the payloads delivered on `vc` from now on keep their space in
/// the receive buffer after their event is taken, so that the buffer fills and the peer runs
/// out of credits; with `hold` = 0, every payload kept is drained and its credits returned (none
/// for a payload delivered before the link last left UP: the link comes UP again only once every
/// such payload has been drained, LINK-6-4, LINK-2-18).
///
/// Errors: NULL_POINTER, HANDLE, WRONG_ROLE, ARGUMENT (no such VC, `hold` neither 0 nor 1).
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_link_hold(ctx: *mut Ctx, h: u32, vc: u8, hold: u8) -> i32 {
    call(ctx, "ethlink_link_hold", |c| {
        let hold = crate::conv::flag(hold, "hold")?;
        c.link_end(h)?.hold(vc, hold)?;
        Ok(ETHLINK_OK)
    })
}

/// Link end: takes back every payload submitted and not sent yet (link.md LINK-6-5). Each comes
/// back as an ETHLINK_EVENT_LOST with reason ETHLINK_LOST_WITHDRAWN, in submission order on its
/// VC. Writes how many to `*count`.
///
/// Errors: NULL_POINTER, HANDLE, WRONG_ROLE.
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_link_withdraw(ctx: *mut Ctx, h: u32, count: *mut usize) -> i32 {
    call(ctx, "ethlink_link_withdraw", |c| {
        ptr::check_out(count, "count")?;
        let n = c.link_end(h)?.withdraw();
        ptr::write(count, "count", n)?;
        Ok(ETHLINK_OK)
    })
}

/// Endpoint: registers the region of `len` bytes at `base` of memory space `space`
/// (`ETHLINK_SPACE_*`) under `key`, with the permissions `perms` (`ETHLINK_PERM_*` bits).
///
/// Errors: NULL_POINTER, HANDLE, WRONG_ROLE, ARGUMENT (bad space or permission bits), REFUSED
/// (the region is out of the space, overlaps another, or the table is full: the text says).
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_endpoint_register(
    ctx: *mut Ctx,
    h: u32,
    space: u8,
    base: u64,
    len: u64,
    key: u32,
    perms: u32,
) -> i32 {
    call(ctx, "ethlink_endpoint_register", |c| {
        c.endpoint(h)?.register(space, base, len, key, perms)?;
        Ok(ETHLINK_OK)
    })
}

/// Endpoint: removes the region of `space` that starts at `base`.
///
/// Errors: NULL_POINTER, HANDLE, WRONG_ROLE, ARGUMENT (bad space), REFUSED (no region starts
/// there).
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_endpoint_deregister(ctx: *mut Ctx, h: u32, space: u8, base: u64) -> i32 {
    call(ctx, "ethlink_endpoint_deregister", |c| {
        c.endpoint(h)?.deregister(space, base)?;
        Ok(ETHLINK_OK)
    })
}

/// Endpoint: poisons `len` bytes of its own memory from `addr`, as an uncorrectable memory
/// error would (writing a byte clears its poison).
///
/// Errors: NULL_POINTER, HANDLE, WRONG_ROLE, ARGUMENT (bad space, bytes outside the space),
/// REFUSED (the space keeps 65536 poisoned ranges apart already and these bytes touch none of
/// them: poison bytes that touch one, or write some).
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_endpoint_poison(
    ctx: *mut Ctx,
    h: u32,
    space: u8,
    addr: u64,
    len: u64,
) -> i32 {
    call(ctx, "ethlink_endpoint_poison", |c| {
        c.endpoint(h)?.poison(space, addr, len)?;
        Ok(ETHLINK_OK)
    })
}

/// Endpoint: writes the `len` bytes at `data` to its own memory at `addr` directly (set-up; no
/// network traffic).
///
/// Errors: NULL_POINTER, HANDLE, WRONG_ROLE, ARGUMENT (bad space, bytes outside the space).
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_endpoint_mem_write(
    ctx: *mut Ctx,
    h: u32,
    space: u8,
    addr: u64,
    data: *const u8,
    len: usize,
) -> i32 {
    call(ctx, "ethlink_endpoint_mem_write", |c| {
        let data = ptr::bytes(data, len, "data", "len")?;
        c.endpoint(h)?.mem_write(space, addr, data)?;
        Ok(ETHLINK_OK)
    })
}

/// Endpoint: reads `len` bytes of its own memory at `addr` into `buf` directly (a check; no
/// network traffic).
///
/// Errors: NULL_POINTER, HANDLE, WRONG_ROLE, ARGUMENT (bad space, bytes outside the space).
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_endpoint_mem_read(
    ctx: *mut Ctx,
    h: u32,
    space: u8,
    addr: u64,
    buf: *mut u8,
    len: usize,
) -> i32 {
    call(ctx, "ethlink_endpoint_mem_read", |c| {
        let out = ptr::bytes_mut(buf, len, "buf", "len")?;
        c.endpoint(h)?.mem_read(space, addr, out)?;
        Ok(ETHLINK_OK)
    })
}

/// Endpoint: issues the load-store operation `*req` at `now_ns` and writes its tag to `*tag`;
/// its end comes as an ETHLINK_EVENT_COMPLETION with op ETHLINK_OP_LS and this tag as id.
///
/// Errors: NULL_POINTER (`req` or `tag` NULL, `req->data` NULL for a store with `data_len` >
/// 0), HANDLE, WRONG_ROLE, ARGUMENT (bad kind, space, width, ordered flag, length, address,
/// `now_ns` after ETHLINK_TIME_MAX_NS), REFUSED (every tag is in use, or the completions not yet
/// taken fill the endpoint's bound, endpoint.md EP-5-10: take completions), TIME_BACKWARDS.
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_endpoint_issue(
    ctx: *mut Ctx,
    h: u32,
    now_ns: u64,
    req: *const LsRequest,
    tag: *mut u16,
) -> i32 {
    call(ctx, "ethlink_endpoint_issue", |c| {
        let r = ptr::read(req, "req")?;
        ptr::check_out(tag, "tag")?;
        let store = if r.kind == crate::types::ETHLINK_LS_STORE {
            ptr::bytes(r.data, r.data_len, "req->data", "req->data_len")?
        } else {
            &[]
        };
        let t = c.endpoint(h)?.issue(now_ns, &r, store)?;
        ptr::write(tag, "tag", t)?;
        Ok(ETHLINK_OK)
    })
}

/// Endpoint: posts the RDMA descriptor `*desc` at `now_ns` and writes its id to `*id`; its end
/// comes as an ETHLINK_EVENT_COMPLETION with op ETHLINK_OP_RDMA and this id.
///
/// Errors: NULL_POINTER, HANDLE, WRONG_ROLE, ARGUMENT (a bad field, `now_ns` after
/// ETHLINK_TIME_MAX_NS), REFUSED (the RDMA queue is full, or the completions not yet taken fill
/// the endpoint's bound: take completions), TIME_BACKWARDS.
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_endpoint_post(
    ctx: *mut Ctx,
    h: u32,
    now_ns: u64,
    desc: *const RdmaDesc,
    id: *mut u64,
) -> i32 {
    call(ctx, "ethlink_endpoint_post", |c| {
        let d = ptr::read(desc, "desc")?;
        ptr::check_out(id, "id")?;
        let i = c.endpoint(h)?.post(now_ns, &d)?;
        ptr::write(id, "id", i)?;
        Ok(ETHLINK_OK)
    })
}

/// Endpoint: a fence at `now_ns` (transaction.md §4); writes its id to `*id`. It completes
/// (op ETHLINK_OP_FENCE) once every operation issued or posted before it has.
///
/// Errors: NULL_POINTER, HANDLE, WRONG_ROLE, ARGUMENT (`now_ns` after ETHLINK_TIME_MAX_NS),
/// REFUSED (as many fences are outstanding as the endpoint holds, endpoint.md EP-5-9, or the
/// completions not yet taken fill its bound, EP-5-10: take completions), TIME_BACKWARDS.
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_endpoint_fence(ctx: *mut Ctx, h: u32, now_ns: u64, id: *mut u64) -> i32 {
    call(ctx, "ethlink_endpoint_fence", |c| {
        ptr::check_out(id, "id")?;
        let i = c.endpoint(h)?.fence(now_ns)?;
        ptr::write(id, "id", i)?;
        Ok(ETHLINK_OK)
    })
}

/// Switch: writes the forwarding-table entry of GPU `dst`: frames for it leave by one of the
/// `count` ports at `ports` (at most 64, each once), chosen by the path hash among those UP. An
/// empty list (`ports` may then be NULL) leaves `dst` unroutable. Frames already received keep
/// the port they were given.
///
/// Errors: NULL_POINTER (`ports` NULL with `count` > 0), HANDLE, WRONG_ROLE, ARGUMENT (GPU id
/// 0xffff, more than 64 ports, a port twice, a port the switch does not have).
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_switch_set_route(
    ctx: *mut Ctx,
    h: u32,
    dst: u16,
    ports: *const u16,
    count: usize,
) -> i32 {
    call(ctx, "ethlink_switch_set_route", |c| {
        let list = ptr::u16s(
            ports,
            count,
            ("ports", "count"),
            ROUTE_PORTS_MAX,
            "more ports than one entry holds",
        )?;
        c.switch(h)?.set_route(dst, &list, &[])?;
        Ok(ETHLINK_OK)
    })
}

/// Switch: writes the forwarding-table entry of GPU `dst` as `ethlink_switch_set_route` does,
/// with its `count` ports divided into `group_count` groups of preference whose sizes are at
/// `groups`, most preferred first (switch.md §2.3): frames for `dst` leave by a port of the
/// first group that has one UP, chosen there by the path hash. No sizes (`groups` may then be
/// NULL) make the list one group.
///
/// Errors: NULL_POINTER (`ports` or `groups` NULL with a count > 0), HANDLE, WRONG_ROLE,
/// ARGUMENT (as `ethlink_switch_set_route`, and a group size of 0 or sizes that do not add up
/// to `count`).
#[unsafe(no_mangle)]
pub extern "C" fn ethlink_switch_set_route_groups(
    ctx: *mut Ctx,
    h: u32,
    dst: u16,
    ports: *const u16,
    count: usize,
    groups: *const u16,
    group_count: usize,
) -> i32 {
    call(ctx, "ethlink_switch_set_route_groups", |c| {
        let list = ptr::u16s(
            ports,
            count,
            ("ports", "count"),
            ROUTE_PORTS_MAX,
            "more ports than one entry holds",
        )?;
        let sizes = ptr::u16s(
            groups,
            group_count,
            ("groups", "group_count"),
            ROUTE_PORTS_MAX,
            "more groups than one entry holds ports",
        )?;
        c.switch(h)?.set_route(dst, &list, &sizes)?;
        Ok(ETHLINK_OK)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ETHLINK_ERR_PANIC, ETHLINK_ERR_REFUSED};

    fn text(ctx: *mut Ctx) -> String {
        let mut buf = [0 as c_char; 512];
        let mut len = 0usize;
        assert_eq!(
            ethlink_last_error(ctx, buf.as_mut_ptr(), buf.len(), &mut len),
            ETHLINK_OK
        );
        let bytes: Vec<u8> = buf[..len].iter().map(|&b| b as u8).collect();
        String::from_utf8(bytes).expect("UTF-8")
    }

    /// An internal error is caught at the boundary, reported as PANIC with its text, and leaves
    /// the device it happened in unusable but destroyable.
    #[test]
    fn a_panic_is_caught_and_the_device_is_retired() {
        let mut ctx = core::ptr::null_mut();
        assert_eq!(ethlink_ctx_new(&mut ctx), ETHLINK_OK);
        let mut cfg = crate::link_end::default_config();
        assert_eq!(ethlink_link_end_config_default(&mut cfg), ETHLINK_OK);
        let mut h = 0;
        assert_eq!(ethlink_link_end_new(ctx, &cfg, &mut h), ETHLINK_OK);
        let code = call(ctx, "ethlink_test", |c| {
            c.model(h)?;
            panic!("deliberate");
        });
        assert_eq!(code, ETHLINK_ERR_PANIC);
        let t = text(ctx);
        assert!(
            t.contains("ethlink_test") && t.contains("deliberate"),
            "{t}"
        );
        let mut d = 0u64;
        assert_eq!(ethlink_poll_timeout(ctx, h, &mut d), ETHLINK_ERR_PANIC);
        assert!(text(ctx).contains("unusable"));
        assert_eq!(ethlink_destroy(ctx, h), ETHLINK_OK);
        // A panic outside any device leaves the devices alone.
        let mut h2 = 0;
        assert_eq!(ethlink_link_end_new(ctx, &cfg, &mut h2), ETHLINK_OK);
        assert_eq!(
            call(ctx, "ethlink_test", |_| panic!("no device")),
            ETHLINK_ERR_PANIC
        );
        // A link end whose physical link is down has no deadline.
        assert_eq!(ethlink_poll_timeout(ctx, h2, &mut d), ETHLINK_NONE);
        assert_eq!(call_free(|| panic!("free")), ETHLINK_ERR_PANIC);
        ethlink_ctx_free(ctx);
    }

    /// An internal inconsistency reported without a panic retires the device as a panic does,
    /// so that ETHLINK_ERR_PANIC always means what the header says.
    #[test]
    fn an_internal_error_without_a_panic_retires_the_device_too() {
        let mut ctx = core::ptr::null_mut();
        assert_eq!(ethlink_ctx_new(&mut ctx), ETHLINK_OK);
        let cfg = crate::link_end::default_config();
        let mut h = 0;
        assert_eq!(ethlink_link_end_new(ctx, &cfg, &mut h), ETHLINK_OK);
        let code = call(ctx, "ethlink_test", |c| {
            c.model(h)?;
            Err(Error::panic("an inconsistency"))
        });
        assert_eq!(code, ETHLINK_ERR_PANIC);
        let mut d = 0u64;
        assert_eq!(ethlink_poll_timeout(ctx, h, &mut d), ETHLINK_ERR_PANIC);
        assert!(text(ctx).contains("unusable"));
        ethlink_ctx_free(ctx);
    }

    /// The ABI's latest time is the models' horizon.
    #[test]
    fn the_latest_time_is_the_horizon() {
        assert_eq!(
            crate::types::ETHLINK_TIME_MAX_NS,
            ethlink_link::Instant::HORIZON.as_nanos()
        );
        assert_eq!(crate::types::ETHLINK_TIME_MAX_NS, (1 << 63) - 1);
    }

    /// The table refuses a device beyond its size, and a slot freed is used again under a new
    /// generation.
    #[test]
    fn the_table_is_bounded_and_reuses_slots() {
        let mut ctx = core::ptr::null_mut();
        assert_eq!(ethlink_ctx_new(&mut ctx), ETHLINK_OK);
        let mut cfg = crate::types::SwitchConfig {
            ports: 1,
            ..crate::switch::default_config()
        };
        cfg.ports = 1;
        let mut handles = Vec::new();
        for _ in 0..crate::ctx::MAX_DEVICES {
            let mut h = 0;
            assert_eq!(ethlink_switch_new(ctx, &cfg, &mut h), ETHLINK_OK);
            handles.push(h);
        }
        let mut h = 0;
        assert_eq!(ethlink_switch_new(ctx, &cfg, &mut h), ETHLINK_ERR_REFUSED);
        assert!(text(ctx).contains("destroy one first"));
        assert_eq!(ethlink_destroy(ctx, handles[7]), ETHLINK_OK);
        assert_eq!(ethlink_switch_new(ctx, &cfg, &mut h), ETHLINK_OK);
        assert_ne!(h, handles[7]);
        assert_eq!(h & 0xFFF, handles[7] & 0xFFF);
        assert_eq!(
            ethlink_destroy(ctx, handles[7]),
            crate::types::ETHLINK_ERR_HANDLE
        );
        ethlink_ctx_free(ctx);
    }
}

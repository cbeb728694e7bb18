//! The only place where C pointers become Rust references. Each helper checks for NULL and for
//! lengths a slice cannot have, and relies for the rest on the contract every function of the
//! ABI states (docs/cosim.md §2): a non-NULL pointer points to memory of the type and length
//! given, valid and not used by anything else for the duration of the call, and a context
//! pointer is one `ethlink_ctx_new` returned and `ethlink_ctx_free` has not freed.
#![allow(unsafe_code)]

use core::ffi::{CStr, c_char};

use crate::ctx::Ctx;
use crate::error::{Error, Result};

/// Largest length a slice may have.
const MAX_LEN: usize = isize::MAX as usize;

/// The context `p` points to.
pub(crate) fn ctx<'a>(p: *mut Ctx) -> Option<&'a mut Ctx> {
    // SAFETY: a non-NULL context pointer came from `ethlink_ctx_new` (a leaked `Box<Ctx>`), is
    // not freed, and is used by one thread at a time (the threading rule), so no other reference
    // to it exists during the call.
    unsafe { p.as_mut() }
}

/// A new context, as a pointer for C.
pub(crate) fn ctx_into_raw(ctx: Box<Ctx>) -> *mut Ctx {
    Box::into_raw(ctx)
}

/// Frees the context `p` points to (nothing when NULL).
pub(crate) fn ctx_free(p: *mut Ctx) {
    if !p.is_null() {
        // SAFETY: `p` came from `ctx_into_raw` and is freed once (the caller's contract).
        drop(unsafe { Box::from_raw(p) });
    }
}

/// Writes `v` through the out-pointer `p`, named `name` in the error.
pub(crate) fn write<T>(p: *mut T, name: &str, v: T) -> Result<()> {
    if p.is_null() {
        return Err(Error::null(name));
    }
    // SAFETY: `p` is non-NULL, aligned and points to writable memory for a `T` (the contract);
    // `write` does not read or drop the old value, which may be uninitialised.
    unsafe { p.write(v) };
    Ok(())
}

/// Checks that the out-pointer `p` is not NULL, before anything is done that a later write
/// through it would report.
pub(crate) fn check_out<T>(p: *mut T, name: &str) -> Result<()> {
    if p.is_null() {
        Err(Error::null(name))
    } else {
        Ok(())
    }
}

/// The value `p` points to.
pub(crate) fn read<T: Copy>(p: *const T, name: &str) -> Result<T> {
    if p.is_null() {
        return Err(Error::null(name));
    }
    // SAFETY: `p` is non-NULL, aligned and points to an initialised `T` (the contract). `T` is
    // one of the ABI's plain structures, valid for every bit pattern of its fields.
    Ok(unsafe { p.read() })
}

/// The error of a length argument `len_name` = `len` that no buffer can have.
fn too_long(len_name: &str, len: usize, name: &str) -> Error {
    Error::argument(format!(
        "{len_name} = {len}: longer than any buffer `{name}` can be (at most {MAX_LEN} bytes)"
    ))
}

/// The `len` bytes at `p` (the argument `name`, its length the argument `len_name`); NULL is
/// allowed when `len` is 0.
pub(crate) fn bytes<'a>(p: *const u8, len: usize, name: &str, len_name: &str) -> Result<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Error::null(name));
    }
    if len > MAX_LEN {
        return Err(too_long(len_name, len, name));
    }
    // SAFETY: `p` is non-NULL and points to `len` initialised bytes that nothing writes during
    // the call (the contract); `len` fits an `isize`.
    Ok(unsafe { core::slice::from_raw_parts(p, len) })
}

/// The `cap` writable bytes at `p` (the argument `name`, its capacity the argument
/// `cap_name`); NULL is allowed when `cap` is 0.
pub(crate) fn bytes_mut<'a>(
    p: *mut u8,
    cap: usize,
    name: &str,
    cap_name: &str,
) -> Result<&'a mut [u8]> {
    if cap == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(Error::null(name));
    }
    if cap > MAX_LEN {
        return Err(too_long(cap_name, cap, name));
    }
    // SAFETY: `p` is non-NULL and points to `cap` writable bytes that nothing else reads or
    // writes during the call (the contract); `cap` fits an `isize`. Every bit
    // pattern is a valid u8.
    Ok(unsafe { core::slice::from_raw_parts_mut(p, cap) })
}

/// The NUL-terminated string at `p`.
pub(crate) fn cstr<'a>(p: *const c_char, name: &str) -> Result<&'a CStr> {
    if p.is_null() {
        return Err(Error::null(name));
    }
    // SAFETY: `p` is non-NULL and points to a NUL-terminated string that nothing writes during
    // the call (the contract).
    Ok(unsafe { CStr::from_ptr(p) })
}

/// A copy of the `count` 16-bit values at `p` (the argument `name`, its count the argument
/// `count_name`), at most `max` of them (`what` says why); NULL is allowed when `count` is 0.
/// The count is checked before anything is read or allocated.
pub(crate) fn u16s(
    p: *const u16,
    count: usize,
    (name, count_name): (&str, &str),
    max: usize,
    what: &str,
) -> Result<Vec<u16>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if p.is_null() {
        return Err(Error::null(name));
    }
    if count > max.min(MAX_LEN / 2) {
        return Err(Error::argument(format!(
            "{count_name} = {count}: {what} (`{name}` holds at most {max})"
        )));
    }
    // SAFETY: `p` is non-NULL, aligned, and points to `count` initialised values that nothing
    // writes during the call (the contract); the byte length fits an `isize`.
    Ok(unsafe { core::slice::from_raw_parts(p, count) }.to_vec())
}

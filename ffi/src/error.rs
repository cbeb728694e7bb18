//! Errors as the ABI returns them: a code and a text for `ethlink_last_error`.

use crate::types::{
    ETHLINK_ERR_ARGUMENT, ETHLINK_ERR_BUFFER_TOO_SMALL, ETHLINK_ERR_HANDLE,
    ETHLINK_ERR_NULL_POINTER, ETHLINK_ERR_PANIC, ETHLINK_ERR_REFUSED, ETHLINK_ERR_TIME_BACKWARDS,
    ETHLINK_ERR_WRONG_ROLE,
};

/// A failed call: the code returned and the text kept for `ethlink_last_error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Error {
    pub(crate) code: i32,
    pub(crate) text: String,
}

/// What every internal function returns.
pub(crate) type Result<T> = core::result::Result<T, Error>;

impl Error {
    pub(crate) fn new(code: i32, text: impl Into<String>) -> Self {
        Error {
            code,
            text: text.into(),
        }
    }

    /// The pointer parameter `name` was NULL.
    pub(crate) fn null(name: &str) -> Self {
        Error::new(ETHLINK_ERR_NULL_POINTER, format!("`{name}` is NULL"))
    }

    pub(crate) fn argument(text: impl Into<String>) -> Self {
        Error::new(ETHLINK_ERR_ARGUMENT, text)
    }

    pub(crate) fn refused(text: impl Into<String>) -> Self {
        Error::new(ETHLINK_ERR_REFUSED, text)
    }

    pub(crate) fn handle(text: impl Into<String>) -> Self {
        Error::new(ETHLINK_ERR_HANDLE, text)
    }

    pub(crate) fn wrong_role(text: impl Into<String>) -> Self {
        Error::new(ETHLINK_ERR_WRONG_ROLE, text)
    }

    pub(crate) fn panic(text: impl Into<String>) -> Self {
        Error::new(ETHLINK_ERR_PANIC, text)
    }

    /// `buffer` holds `cap` bytes (its capacity argument is `cap`) where `needed` are needed
    /// for `what`.
    pub(crate) fn too_small(buffer: &str, cap: usize, needed: usize, what: &str) -> Self {
        Error::new(
            ETHLINK_ERR_BUFFER_TOO_SMALL,
            format!("cap = {cap}: `{buffer}` holds {cap} bytes, {what} needs {needed}"),
        )
    }

    /// `now` is before `last`.
    pub(crate) fn backwards(now: u64, last: u64) -> Self {
        Error::new(
            ETHLINK_ERR_TIME_BACKWARDS,
            format!("time went backwards: now_ns = {now} is before {last}, a time given earlier"),
        )
    }

    /// `now` is later than the latest time a model takes (link.md LINK-1-3).
    pub(crate) fn too_late(now: u64) -> Self {
        Error::argument(format!(
            "now_ns = {now} is later than ETHLINK_TIME_MAX_NS = {}, the latest time a model \
             takes (2^63 - 1 ns, about 292 years)",
            crate::types::ETHLINK_TIME_MAX_NS
        ))
    }
}

/// The name of a return code, as the header spells it; "ETHLINK_UNKNOWN_CODE" for a value that
/// is none.
pub(crate) fn code_name(code: i32) -> &'static core::ffi::CStr {
    match code {
        crate::types::ETHLINK_OK => c"ETHLINK_OK",
        crate::types::ETHLINK_NONE => c"ETHLINK_NONE",
        ETHLINK_ERR_NULL_POINTER => c"ETHLINK_ERR_NULL_POINTER",
        ETHLINK_ERR_HANDLE => c"ETHLINK_ERR_HANDLE",
        ETHLINK_ERR_ARGUMENT => c"ETHLINK_ERR_ARGUMENT",
        ETHLINK_ERR_BUFFER_TOO_SMALL => c"ETHLINK_ERR_BUFFER_TOO_SMALL",
        ETHLINK_ERR_TIME_BACKWARDS => c"ETHLINK_ERR_TIME_BACKWARDS",
        ETHLINK_ERR_REFUSED => c"ETHLINK_ERR_REFUSED",
        ETHLINK_ERR_WRONG_ROLE => c"ETHLINK_ERR_WRONG_ROLE",
        ETHLINK_ERR_PANIC => c"ETHLINK_ERR_PANIC",
        _ => c"ETHLINK_UNKNOWN_CODE",
    }
}

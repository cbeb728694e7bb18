//! # ethlink-ffi: the C ABI of the EthLink models
//!
//! A C ABI over the three device models of this workspace, the link end (`ethlink-link`), the
//! GPU endpoint (`ethlink-endpoint`) and the switch (`ethlink-switch`), for C and C++ programs,
//! SystemVerilog testbenches through DPI-C, and any language with a C foreign-function
//! interface. Built as a static library, a shared library and an rlib; `include/ethlink.h`
//! declares it, and `docs/cosim.md` documents every function, the event loop and how
//! simulators load the library.
//!
//! The models are sans-IO: the caller owns time and the wires. It hands each frame that arrives
//! on a port to `ethlink_handle_frame`, polls `ethlink_poll_transmit` for frames to put on the
//! wire, calls `ethlink_handle_timeout` when the deadline `ethlink_poll_timeout` gives is
//! reached, and polls `ethlink_poll_event` for what the upper layer must learn.
//!
//! Rules every function keeps:
//! - It checks every argument and returns an error code (`ETHLINK_ERR_*`, negative) rather than
//!   crash; the text of the error is kept in the context for `ethlink_last_error`.
//! - No panic crosses the boundary: an internal error is caught, reported as
//!   `ETHLINK_ERR_PANIC`, and makes the device it happened in unusable.
//! - No global state: everything lives in a context (`ethlink_ctx`). A context and its devices
//!   are used by one thread at a time; separate contexts are independent and may be used on
//!   different threads at once.
//! - Time is in nanoseconds and never goes backwards on a handle.
//!
//! The only `unsafe` code turns C pointers into Rust references, in one module, after NULL and
//! length checks; the modules that export functions allow `unsafe_code` only for the
//! `#[unsafe(no_mangle)]` attribute.

mod api;
mod conv;
mod ctx;
mod endpoint;
mod error;
mod link_end;
mod ptr;
mod switch;
pub mod types;

pub use api::*;
pub use ctx::Ctx;
pub use types::*;

//! # ethlink-switch: an EthLink switch
//!
//! This crate is the switch model of ethlink, as `docs/spec/switch.md` specifies it. A
//! [`Switch`] has N ports, each one [`ethlink_link::Link`] end (LLR and CBFC on every hop); it
//! forwards DATA frames by destination GPU through a [`Routes`] table, with a fixed per-path
//! choice among equal egress ports ([`path_hash`], [`select`]) so that every path keeps its
//! order. Frames wait in virtual output queues (one per input port, VC and egress port, kept
//! sparse) inside the input's link buffer, whose credits go back upstream only when the frame
//! leaves: the switch never drops a frame for want of buffer. Egress ports serve the response VCs
//! first and the inputs round-robin, and add a port-to-port latency (cut-through or
//! store-and-forward). A frame that stays longer than `max_residence` is discarded and counted
//! (`discard_aged`), wherever it waits, so that no frame leaves a switch late.
//!
//! Modules: `config` (parameters, port identity), `routes` (the forwarding table and the choice
//! among equal ports), `counters`, `switch` (the state machine, with its aging in
//! `switch/aging.rs`), `voq` (the virtual output queues and the bitmaps their round-robin scans)
//! and `timers` (an indexed min-heap of per-port deadlines that move in place).
//!
//! Like the link and the endpoint, a switch is sans-IO: frames and time in, frames and a deadline
//! out; no clock, no randomness. The fabric simulation wires switches and endpoints together.

#![no_std]

extern crate alloc;
#[cfg(any(feature = "std", test))]
extern crate std;

mod config;
mod counters;
mod routes;
mod switch;
mod timers;
mod voq;

pub use config::{Config, Mode};
pub use counters::{Counters, PortCounters};
pub use ethlink_link::ConfigError;
pub use routes::{ROUTE_PORTS_MAX, RouteError, Routes, path_hash, select};
pub use switch::{FrameEnd, Switch};

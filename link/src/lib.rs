//! # ethlink-link: one end of one EthLink link
//!
//! This crate is the link layer of ethlink, as `docs/spec/link.md` specifies it: link bring-up
//! (INIT / INIT_ECHO), link-level retry (LLR: sequence numbers, a bounded replay buffer,
//! cumulative ACKs, NACK and go-back-N replay, a replay timer, FLUSH and re-initialisation) and
//! credit-based flow control (CBFC: per-VC cumulative credit counters, CF and CC updates). It
//! sits on `ethlink-protocol`, which it uses for every byte it reads or writes, and under the
//! endpoint and the switch model, which own one [`Link`] per port.
//!
//! [`Link`] is a sans-IO state machine: frames and time in, frames, events and a deadline out.
//! Besides the link's going up and down and the fate of every frame, its events carry
//! [`Notice`]s (an INIT refused for a grant too small, an initialisation that takes longer than
//! `init_timeout`). An embedder that ends frames with a stomped FCS takes the frame back with
//! [`Link::stomp_last`].
//! It reads no clock and spawns nothing. [`Link::new`] bounds every buffer from the [`Config`];
//! a buffer takes its storage as traffic first reaches into it (so that an idle link holds
//! little) and never grows past its bound, whatever arrives. Same inputs, same outputs, bit for
//! bit.
//!
//! Frames can also travel by reference, for an embedder that holds payloads for a while or
//! carries frames on a simulated wire: [`Link::outgoing`] (or [`Layout::outgoing`]) lays a
//! payload out once with room for its headers and [`Link::submit_outgoing`] queues it without a
//! copy; [`Link::poll_transmit_shared`] hands a DATA frame out as a [`SharedFrame`] shared with
//! the replay buffer (a short frame as a copy, which costs less than sharing it), its FCS
//! deferred if [`Link::defer_fcs`] asks (the exact bytes are then made by
//! [`SharedFrame::write_exact`]); [`Link::handle_frame_deliver`] hands an accepted payload
//! straight to the caller. The bytes and behaviour are those of the copying calls. A payload's
//! writer can also say what some of its bytes are without anyone reading them
//! ([`Outgoing::vouch`], a [`Provenance`]): the link carries that with the payload into its
//! replay buffer and out with the [`SharedFrame`], first sent or replayed, for a receiver of the
//! same simulation to take instead of the bytes.
//!
//! [`harness`] joins two ends by a simulated wire with a seeded fault injector; tests, benches,
//! the `ethlink link` experiment and later layers use it. Its [`harness::Channel`] (one
//! direction of a wire) and [`harness::Injector`] (the seeded faults of one direction) build the
//! wires of other harnesses.
//!
//! Requirements are cited beside the code that implements them as
//! `//= docs/spec/link.md#section` followed by `//#` lines quoting the requirement.

#![no_std]

extern crate alloc;
#[cfg(any(feature = "std", test))]
extern crate std;

mod config;
mod counters;
pub mod harness;
mod link;
mod ring;
mod slots;
mod time;

pub use config::{Agreed, Config, ConfigError};
pub use counters::Counters;
pub use link::{
    BufferTooSmall, Deliver, DownReason, Event, Layout, Link, LostReason, Notice, Outgoing,
    Provenance, Release, ReleaseError, RxState, SharedFrame, Stomped, SubmitError, Transmit,
    TxState, payload_offset,
};
pub use time::{Duration, Instant};

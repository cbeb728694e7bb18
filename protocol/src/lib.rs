//! # ethlink-protocol: the EthLink wire format
//!
//! This crate is the bottom layer of ethlink. It knows every byte EthLink puts on an Ethernet
//! link, as `docs/spec/wire.md` specifies them, and nothing about behaviour: no state, no time,
//! no allocation. Every other layer (link, endpoint, switch, fabric, the C ABI and the CLI) builds
//! and reads frames through it.
//!
//! - [`Frame`] is a checked zero-copy view of a whole frame (size, FCS, EtherType, version, kind);
//!   [`FrameRepr`] is the validated representation of a frame and its control body, with
//!   `parse`, `buffer_len` and `emit`.
//! - [`DataRepr`] is a DATA frame's payload: the network header and the packed transactions,
//!   which [`Txns::iter`] walks one at a time as a receiver must (wire.md §6.1).
//! - [`TxnRepr`] is one transaction; the zero-copy header structs ([`LinkHeader`],
//!   [`NetworkHeader`], [`TxnPrefix`], ...) are views over bytes.
//! - [`fcs`] computes the Ethernet FCS with SIMD where the CPU has it, and the stomped FCS.
//! - [`Discard`] is the table of discard reasons of wire.md §7 (Table WIRE-T1): the counter
//!   each one increments, whether the link layer has taken the frame's sequence number, and
//!   whether it draws a NACK. [`Error::discard`] and [`TxnRepr::discard`] classify what a
//!   receiver drops.
//!
//! ## Where the link layer's acceptance ends
//! The receive pipeline of wire.md §7 is split the same way here. [`Frame::new_checked`] makes
//! the checks that come before link-layer acceptance (size, FCS, EtherType, version, kind); a
//! control frame's body is then checked by [`FrameRepr::parse`]. A DATA frame that passes
//! [`Frame::new_checked`] is judged by the link layer on its link header alone: errors that
//! [`FrameRepr::parse`] and [`DataRepr::parse`] report for it afterwards (padding, network
//! header, transactions) come after its sequence number was taken ([`Discard::seq_consumed`]).
//!
//! ## Contract
//! No function of this crate panics on any input, and none does more than linear work in the
//! length of its input. A parse error is an [`Error`] naming the field, its offset, the
//! requirement violated and the [`Action`] the receiver must take. `emit` on a buffer of at least
//! `buffer_len()` bytes succeeds for every representation that `parse` can return.
//!
//! Requirements are cited beside the code that implements them as
//! `//= docs/spec/wire.md#section` followed by `//#` lines quoting the requirement.

#![no_std]
#![cfg_attr(
    not(test),
    warn(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic
    )
)]

#[cfg(any(feature = "std", test))]
extern crate std;

mod data;
mod error;
pub mod fcs;
mod frame;
mod txn;
mod types;

pub use data::{
    DataRepr, MAX_TXNS_PER_FRAME, NETWORK_HEADER_LEN, NetworkHeader, TxnIter, Txns, data_frame_len,
    emit_data_frame, emit_data_headers,
};
pub use error::{Action, Discard, EmitError, Error, ErrorKind, Field};
pub use frame::{
    CREDIT_BODY_LEN, CreditBody, CreditRepr, DataFlags, DataHeader, ETH_HEADER_LEN, ETHERTYPE,
    EthernetRepr, FLAG_ACK_REQ, FLAG_REPLAY, Frame, FrameKind, FrameRepr, INIT_BODY_LEN, InitBody,
    InitRepr, LINK_HEADER_LEN, LinkFrame, LinkHeader, MAX_FRAME_LEN, MIN_FRAME_LEN, MIN_MFS,
    ShortGrant, TPID_8021Q, VLAN_TAG_LEN, VlanTag, WIRE_OVERHEAD, emit_data_in_place,
    emit_data_in_place_without_fcs, frame_len, write_fcs,
};
pub use txn::{
    AtomicKind, AtomicOp, AtomicValue, MAX_LOAD_STORE_LEN, MemTarget, PREFIX_LEN, TxnPrefix,
    TxnRepr, Width,
};
pub use types::{Capabilities, GpuId, MacAddr, Opcode, PathId, Role, Seq, Space, Status, Vc};

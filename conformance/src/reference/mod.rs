//! The reference implementation behind the device boundary, one backend per role.

pub mod link_end;

pub use link_end::RefLinkEnd;

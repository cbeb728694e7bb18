//! The reference implementation behind the device boundary, one backend per role.

pub mod endpoint;
pub mod link_end;

pub use endpoint::RefEndpoint;
pub use link_end::RefLinkEnd;

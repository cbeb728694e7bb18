//! The reference implementation behind the device boundary, one backend per role.

pub mod endpoint;
pub mod link_end;
pub mod switch;

pub use endpoint::RefEndpoint;
pub use link_end::RefLinkEnd;
pub use switch::RefSwitch;

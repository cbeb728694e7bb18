//! The reference implementation behind the device boundary, one backend per role.

pub mod link_end;
pub mod switch;

pub use link_end::RefLinkEnd;
pub use switch::RefSwitch;

//! Deliberately broken devices: each must fail at least one case of its role.

pub mod link;

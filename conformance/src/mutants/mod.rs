//! Deliberately broken variants of the reference, one module per role: the suite must fail each.

pub mod endpoint;

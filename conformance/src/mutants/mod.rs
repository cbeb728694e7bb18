//! Deliberately broken variants of the reference, one module per role: each must fail at least
//! one case of its role, which shows that the suite catches that kind of break.

pub mod endpoint;
pub mod link;
pub mod switch;

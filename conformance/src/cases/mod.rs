//! The catalogue: every case, by role and area.

pub mod common;
pub mod link;
pub mod vectors;

use crate::case::Case;

/// Every case of the suite, in catalogue order.
pub fn all() -> Vec<Case> {
    let mut v = Vec::new();
    v.extend(link::cases());
    v.extend(vectors::cases());
    v
}

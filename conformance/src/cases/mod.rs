//! The catalogue: every case, by role and area.

pub mod common;
pub mod endpoint;
pub mod endpoint_common;
pub mod endpoint_limits;
pub mod endpoint_litmus;
pub mod endpoint_paths;
pub mod endpoint_vectors;
pub mod link;
pub mod switch;
pub mod vectors;

use crate::case::Case;

/// Every case of the suite, in catalogue order.
pub fn all() -> Vec<Case> {
    let mut v = Vec::new();
    v.extend(link::cases());
    v.extend(vectors::cases());
    v.extend(endpoint::cases());
    v.extend(endpoint_limits::cases());
    v.extend(endpoint_paths::cases());
    v.extend(endpoint_vectors::cases());
    v.extend(endpoint_litmus::cases());
    v.extend(switch::cases());
    v
}

#[cfg(test)]
mod tests {
    #[test]
    fn case_ids_are_unique() {
        let all = super::all();
        let mut ids: Vec<&str> = all.iter().map(|c| c.id).collect();
        ids.sort_unstable();
        let twice: Vec<&str> = ids
            .windows(2)
            .filter(|w| w[0] == w[1])
            .map(|w| w[0])
            .collect();
        assert!(twice.is_empty(), "case ids used twice: {twice:?}");
        assert!(ids.len() > 300, "{} cases", ids.len());
    }
}

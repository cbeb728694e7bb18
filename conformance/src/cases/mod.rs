//! The catalogue: every case, by role and area.
//!
//! A case's id names its area, and each area has one file, after the section of the spec it
//! checks (in the manner of h2spec and web-platform-tests). The catalogue's list of each role is
//! in the role's `mod.rs`, in catalogue order, with the helpers several areas share; each case's
//! function is in the file of its area:
//!
//! - `LE-INIT-*` in `link/init.rs`: link.md §2 bring-up, §2.1 nonces and restarts, §6
//!   re-initialisation
//! - `LE-LLR-*` in `link/llr.rs`: link.md §3 and §3.1 link-level retry, transmit side; §4 receive
//!   side
//! - `LE-CBFC-*` in `link/cbfc.rs`: link.md §5 credit-based flow control
//! - `LE-RX-*` in `link/rx.rs`: wire.md §7 receive pipeline, with the fields of §1-§5 it checks
//! - `LE-CNT-*` in `link/counters.rs`: link.md §7 counters
//! - `LE-TX-*` in `link/tx.rs`: wire.md §1-§4 the frames an end sends; classes.md §3
//! - `LE-WD-*` in `link/withdraw.rs`: link.md §6 frames withdrawn before they are sent
//! - `VEC-*` in `link/vectors.rs`: wire.md §7 Table WIRE-T1 with link.md §4 and §7, one case per
//!   golden vector
//! - `EPT-OPS-*` in `endpoint/operations.rs`: transaction.md §2 operations, as a target performs
//!   them (endpoint.md §8)
//! - `EPT-PROT-*`, `EPT-MEM-*`, `EPT-POIS-*` in `endpoint/memory.rs`: endpoint.md §2 memory model,
//!   §2.1 region table
//! - `EPT-VC-*`, `EPT-MFS-*`, `EPT-PATH-*` in `endpoint/paths.rs`: endpoint.md §3 ports and virtual
//!   channels, §4 paths and load balancing
//! - `EPT-REQ-*` in `endpoint/requester.rs`: endpoint.md §5 load-store unit; transaction.md §3
//!   statuses
//! - `EPT-RDMA-*` in `endpoint/rdma.rs`: endpoint.md §6 RDMA engine
//! - `EPT-PACK-*` in `endpoint/packing.rs`: endpoint.md §7 packing
//! - `EPT-BACK-*`, `EPT-HELD-*` in `endpoint/target.rs`: endpoint.md §8 target: responses held back
//! - `EPT-DL-*`, `EPT-TAG-*` in `endpoint/deadlines.rs`: endpoint.md §9 ports going down, deadlines
//!   and BUSY; transaction.md §5
//! - `EPT-RX-*` in `endpoint/rx.rs`: endpoint.md §8 and §10 traffic discarded; wire.md §5-§7
//! - `EPT-CAP-*`, `EPT-ID-*` in `endpoint/capabilities.rs`: endpoint.md §11 capabilities, §12 reset
//!   and identity
//! - `EPT-ORD-*` in `endpoint/ordering.rs`: transaction.md §4 ordering
//! - `EPT-VEC-*` in `endpoint/vectors.rs`: wire.md Table WIRE-T1 stages 7 and 8, one case per
//!   golden vector
//! - `EPT-LIT-*` in `endpoint/litmus.rs`: transaction.md §4 the memory model, by litmus tests
//! - `SWT-FWD-*`, `SWT-TBL-*`, `SWT-PIN-*` in `switch/forwarding.rs`: switch.md §2 forwarding
//!   (§2.1-§2.4)
//! - `SWT-ORD-*`, `SWT-ARB-*` in `switch/order.rs`: switch.md §3 order, §5 arbitration
//! - `SWT-BUF-*`, `SWT-VC-*`, `SWT-AGE-*` in `switch/buffers.rs`: switch.md §4 buffers and
//!   losslessness, §4.1 frame lifetime
//! - `SWT-LAT-*`, `SWT-FCS-*` in `switch/latency.rs`: switch.md §6 latency, store-and-forward
//! - `SWT-CUT-*` in `switch/cut.rs`: switch.md §6 the cut-through profile
//! - `SWT-DISC-*` in `switch/discards.rs`: switch.md §7 frames a switch cannot forward, §8 their
//!   counters
//! - `SWT-INIT-*`, `SWT-RST-*`, `SWT-TAG-*` in `switch/identity.rs`: switch.md §9 reset and
//!   identity
//!
//! What the cases of every role share (set-ups, peers, frame builders and readers) is in
//! [`common`]; what the endpoint cases share to speak to an endpoint, in [`endpoint::common`].

pub mod common;
pub mod endpoint;
pub mod link;
pub mod switch;

use crate::case::Case;

/// Every case of the suite, in catalogue order.
pub fn all() -> Vec<Case> {
    let mut v = Vec::new();
    v.extend(link::cases());
    v.extend(link::vectors::cases());
    v.extend(endpoint::cases());
    v.extend(endpoint::vectors::cases());
    v.extend(endpoint::litmus::cases());
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

//! The suite against the reference implementation: every case of every role passes.

use ethlink_conformance::cases;
use ethlink_conformance::device::Device;
use ethlink_conformance::reference::RefLinkEnd;
use ethlink_conformance::runner::run_case;
use ethlink_conformance::{Role, Verdict};

#[test]
fn every_link_end_case_passes_against_the_reference() {
    let mut dut = RefLinkEnd::default();
    let desc = dut.hello().unwrap();
    let mut ran = 0;
    for case in cases::all().iter().filter(|c| c.role == Role::LinkEnd) {
        let r = run_case(&mut dut, &desc, case);
        assert_eq!(
            r.verdict,
            Verdict::Pass,
            "{}: {:?} {:?}",
            case.id,
            r.failure,
            r.message
        );
        ran += 1;
    }
    assert!(ran >= 2);
}

//! The suite against the reference implementation: every case of every role passes.

use ethlink_conformance::cases;
use ethlink_conformance::device::Device;
use ethlink_conformance::reference::{RefLinkEnd, RefSwitch};
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

#[test]
fn every_switch_case_passes_against_the_reference() {
    let mut dut = RefSwitch::default();
    let desc = dut.hello().unwrap();
    let mut failed = Vec::new();
    let mut ran = 0;
    for case in cases::all().iter().filter(|c| c.role == Role::Switch) {
        let r = run_case(&mut dut, &desc, case);
        println!(
            "{} {} {}us {:?} {:?}",
            case.id, r.verdict, r.wall_us, r.failure, r.message
        );
        if r.verdict != Verdict::Pass {
            failed.push((case.id, r.verdict, r.failure, r.message));
        }
        ran += 1;
    }
    assert!(failed.is_empty(), "{failed:#?}");
    assert!(ran >= 10);
}

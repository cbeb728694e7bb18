//! Every link-end case against the reference (with a per-case report) and against each link
//! mutant: every mutant must fail at least one case.

mod mutants;

use ethlink_conformance::cases;
use ethlink_conformance::device::Device;
use ethlink_conformance::reference::RefLinkEnd;
use ethlink_conformance::runner::run_case;
use ethlink_conformance::{Role, Verdict};

#[test]
fn link_cases_report_against_the_reference() {
    let mut dut = RefLinkEnd::default();
    let desc = dut.hello().unwrap();
    let mut bad = Vec::new();
    for case in cases::all().iter().filter(|c| c.role == Role::LinkEnd) {
        let r = run_case(&mut dut, &desc, case);
        println!(
            "{} {:?} {} us {:?} {:?}",
            case.id, r.verdict, r.wall_us, r.failure, r.message
        );
        if r.verdict != Verdict::Pass {
            bad.push(case.id);
        }
    }
    assert!(bad.is_empty(), "failing: {bad:?}");
}

#[test]
fn every_link_mutant_fails_a_link_case() {
    let link_cases: Vec<_> = cases::all()
        .into_iter()
        .filter(|c| c.role == Role::LinkEnd)
        .collect();
    let mutants = mutants::link::mutants();
    assert!(mutants.len() >= 8);
    let mut survivors = Vec::new();
    for (name, make) in mutants {
        let mut dut = make();
        let desc = dut.hello().unwrap();
        // The first case that catches it is enough: the catalogue grows, this test should not.
        let caught = link_cases.iter().find_map(|case| {
            let r = run_case(dut.as_mut(), &desc, case);
            (r.verdict == Verdict::Fail).then(|| {
                let f = r.failure.map(|f| f.req).unwrap_or("?");
                format!("{} ({f})", case.id)
            })
        });
        println!("mutant {name}: caught by {caught:?}");
        if caught.is_none() {
            survivors.push(name);
        }
    }
    assert!(
        survivors.is_empty(),
        "mutants no case caught: {survivors:?}"
    );
}

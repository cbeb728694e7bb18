//! Every switch mutant is caught: at least one switch case fails against it (the run stops at
//! the first for each mutant).

use ethlink_conformance::cases;
use ethlink_conformance::mutants::switch::mutants;
use ethlink_conformance::runner::run_case;
use ethlink_conformance::{Role, Verdict};

#[test]
fn every_switch_mutant_is_caught() {
    let catalogue: Vec<_> = cases::all()
        .into_iter()
        .filter(|c| c.role == Role::Switch)
        .collect();
    let mut escaped = Vec::new();
    for (name, make) in mutants() {
        let mut dut = make();
        let desc = dut.hello().unwrap();
        // The first case that catches it is enough: the catalogue grows, this test should not.
        let caught = catalogue.iter().find_map(|case| {
            let r = run_case(dut.as_mut(), &desc, case);
            (r.verdict == Verdict::Fail).then(|| {
                let f = r.failure.as_ref().map(|f| f.req).unwrap_or("");
                format!("{} ({f})", case.id)
            })
        });
        println!("{name}: caught by {caught:?}");
        if caught.is_none() {
            escaped.push(name);
        }
    }
    assert!(escaped.is_empty(), "mutants no case caught: {escaped:?}");
}

//! Every switch mutant is caught: at least one switch case fails against it.

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
        let mut caught = Vec::new();
        for case in &catalogue {
            let r = run_case(dut.as_mut(), &desc, case);
            if r.verdict == Verdict::Fail {
                let f = r.failure.as_ref().map(|f| f.req).unwrap_or("");
                caught.push(format!("{} ({f})", case.id));
            }
        }
        println!("{name}: caught by {caught:?}");
        if caught.is_empty() {
            escaped.push(name);
        }
    }
    assert!(escaped.is_empty(), "mutants no case caught: {escaped:?}");
}

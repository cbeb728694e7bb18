//! Every endpoint mutant is caught: the endpoint cases fail each at least once.

mod mutants;

use ethlink_conformance::cases;
use ethlink_conformance::runner::run_case;
use ethlink_conformance::{Role, Verdict};

#[test]
fn every_endpoint_mutant_fails_a_case() {
    let list = mutants::endpoint::mutants();
    assert!(list.len() >= 4);
    let mut escaped = Vec::new();
    for (name, make) in list {
        let mut dut = make();
        let desc = dut.hello().expect("hello");
        let mut caught = Vec::new();
        // The first case that fails it is enough: the run stops there, so that the test stays
        // short as the catalogue grows.
        for case in cases::all().iter().filter(|c| c.role == Role::Endpoint) {
            let r = run_case(dut.as_mut(), &desc, case);
            if r.verdict == Verdict::Fail {
                let f = r.failure.expect("a failure says what broke");
                caught.push(format!("{} ({})", case.id, f.req));
                break;
            }
        }
        if caught.is_empty() {
            escaped.push(name);
        } else {
            println!("mutant {name}: caught by {}", caught.join(", "));
        }
    }
    assert!(escaped.is_empty(), "mutants no case caught: {escaped:?}");
}

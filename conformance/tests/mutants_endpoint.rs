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

/// Runs the case `id` against the mutant `name`; its verdict and the requirement it failed.
fn verdict(name: &str, id: &str) -> (Verdict, Option<&'static str>) {
    let (_, make) = mutants::endpoint::mutants()
        .into_iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no mutant {name}"));
    let case = cases::all()
        .into_iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no case {id}"));
    let mut dut = make();
    let desc = dut.hello().expect("hello");
    let r = run_case(dut.as_mut(), &desc, &case);
    (r.verdict, r.failure.map(|f| f.req))
}

/// The cases written for a rule of docs/conformance.md §4.1 catch the mutant the rule is about,
/// each with the requirement it breaks.
#[test]
fn the_design_rule_cases_catch_their_mutants() {
    for (name, id, reqs) in [
        // Two requesters: a target that keeps the state of one.
        ("one_requester", "EPT-OPS-4", &["WIRE-6.1-2"][..]),
        (
            "one_requester",
            "EPT-RDMA-14",
            &["EP-6-5", "EP-6-8", "WIRE-6.1-2"][..],
        ),
        // Wide values: an 8-byte add without the carry between its halves.
        ("add_without_carry", "EPT-OPS-5", &["TXN-2-3"][..]),
    ] {
        let (v, req) = verdict(name, id);
        println!("mutant {name}, {id}: {v} {req:?}");
        assert_eq!(v, Verdict::Fail, "{name} against {id}");
        assert!(
            req.is_some_and(|r| reqs.contains(&r)),
            "{name} against {id} failed {req:?}, not one of {reqs:?}"
        );
    }
}

//! The suite as the yardstick of mutation testing (scripts/mutants.py): one test per role runs
//! that role's cases against the in-process reference and stops at the first case that does not
//! give the verdict the reference earns. cargo-mutants mutates link/, endpoint/ or switch-model/
//! and runs the test of the matching role; a mutant is caught when that test fails.
//!
//! Each test is also an ordinary check that the reference passes its role's cases, so it runs
//! in the test command like every other.

use ethlink_conformance::cases;
use ethlink_conformance::device::Device;
use ethlink_conformance::reference::{RefEndpoint, RefLinkEnd, RefSwitch};
use ethlink_conformance::runner::run_case;
use ethlink_conformance::{Role, Verdict};
use ethlink_protocol::Capabilities;

/// Runs every case of `role` against `dut` and panics at the first whose verdict is not the
/// one `expected` gives for it.
fn judge(dut: &mut dyn Device, role: Role, expected: impl Fn(&str, &[&str]) -> Verdict) {
    judge_some(dut, role, |_| true, expected);
}

/// As [`judge`], for the cases whose id `pick` takes.
fn judge_some(
    dut: &mut dyn Device,
    role: Role,
    pick: impl Fn(&str) -> bool,
    expected: impl Fn(&str, &[&str]) -> Verdict,
) {
    let desc = dut.hello().expect("the reference describes itself");
    let mut ran = 0;
    for case in cases::all().iter().filter(|c| c.role == role && pick(c.id)) {
        let r = run_case(dut, &desc, case);
        let want = expected(case.id, case.needs);
        assert_eq!(
            r.verdict, want,
            "{}: {:?} {:?}",
            case.id, r.failure, r.message
        );
        ran += 1;
    }
    assert!(ran > 0, "no case of {role:?}");
}

#[test]
fn yardstick_link_end() {
    judge(&mut RefLinkEnd::default(), Role::LinkEnd, |_, _| {
        Verdict::Pass
    });
}

#[test]
fn yardstick_switch() {
    judge(&mut RefSwitch::default(), Role::Switch, |_, _| {
        Verdict::Pass
    });
    // A switch of 72 ports, as switches of the field's radix have: state kept in words of 64
    // ports (the bit maps of the inputs with frames waiting) then takes more than one word.
    // SWT-BUF-1's incast of seven inputs shows a map read in the wrong word; the whole catalogue
    // at 72 ports takes twenty times as long.
    judge_some(
        &mut RefSwitch::with_config(ethlink_switch::Config {
            ports: 72,
            ..ethlink_switch::Config::default()
        }),
        Role::Switch,
        |id| id == "SWT-BUF-1",
        |_, _| Verdict::Pass,
    );
}

/// The endpoint with every capability, then without the optional ones: a case about a
/// capability the device lacks (or, for EPT-CAP, one it declares) is Unsupported.
#[test]
fn yardstick_endpoint() {
    judge(&mut RefEndpoint::default(), Role::Endpoint, |id, _| {
        if id.starts_with("EPT-CAP-") && id != "EPT-CAP-5" {
            Verdict::Unsupported
        } else {
            Verdict::Pass
        }
    });
    let lacking = Capabilities::RDMA
        .union(Capabilities::ATOMICS)
        .union(Capabilities::SHARED)
        .union(Capabilities::PACKING);
    judge(
        &mut RefEndpoint::without(lacking),
        Role::Endpoint,
        |_, needs| {
            if needs.is_empty() {
                Verdict::Pass
            } else {
                Verdict::Unsupported
            }
        },
    );
}

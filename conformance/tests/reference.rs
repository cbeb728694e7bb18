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

/// Every endpoint case against the reference endpoint with every capability, and against one
/// without RDMA, ATOMICS, SHARED and PACKING: a case passes, or is unsupported only because of a
/// capability (declared or lacking) it is about.
#[test]
fn every_endpoint_case_passes_against_the_reference() {
    use ethlink_conformance::reference::RefEndpoint;
    use ethlink_protocol::Capabilities;
    let lacking = Capabilities::RDMA
        .union(Capabilities::ATOMICS)
        .union(Capabilities::SHARED)
        .union(Capabilities::PACKING);
    let mut failures = Vec::new();
    let mut passed = 0;
    for (full, mut dut) in [
        (true, RefEndpoint::default()),
        (false, RefEndpoint::without(lacking)),
    ] {
        //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
        //= type=test
        //# EP-13-14 (§12) The reset of §12 is the endpoint's own. A conformance harness's reset
        //# (docs/conformance.md §3.3) is not this reset: it builds a fresh device, with every port
        //# physically down and no quiet time, and nothing of one case reaches the next.
        let desc = dut.hello().unwrap();
        for case in cases::all().iter().filter(|c| c.role == Role::Endpoint) {
            let r = run_case(&mut dut, &desc, case);
            let cap_case = case.id.starts_with("EPT-CAP-") && case.id != "EPT-CAP-5";
            let expected = if (full && cap_case) || (!full && !case.needs.is_empty()) {
                Verdict::Unsupported
            } else {
                Verdict::Pass
            };
            eprintln!(
                "{} ({}): {} in {} us",
                case.id,
                if full { "all caps" } else { "no caps" },
                r.verdict,
                r.wall_us
            );
            if r.verdict == expected {
                passed += 1;
            } else {
                failures.push(format!(
                    "{} ({}): {} {:?} {:?}",
                    case.id,
                    if full { "all caps" } else { "no caps" },
                    r.verdict,
                    r.failure,
                    r.message
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(passed >= 40);
    // The same device gives the same verdicts and the same simulated times.
    let mut dut = RefEndpoint::default();
    let desc = dut.hello().unwrap();
    for case in cases::all().iter().filter(|c| c.role == Role::Endpoint) {
        let a = run_case(&mut dut, &desc, case);
        let b = run_case(&mut dut, &desc, case);
        assert_eq!(
            (a.verdict, a.simulated_ns),
            (b.verdict, b.simulated_ns),
            "{} differs between runs",
            case.id
        );
    }
}

//! The suite through `--dut-lib`'s backend against the reference built as a shared library
//! (the `ethlink-ffi` cdylib cargo builds as a dependency of this crate): every case of every
//! role concludes as it does against the reference in-process, and none fails.

mod common;

use std::path::Path;

use ethlink_conformance::app::reference;
use ethlink_conformance::device::{Device, DeviceError};
use ethlink_conformance::dylib::DylibDevice;
use ethlink_conformance::runner::run_suite;
use ethlink_conformance::{Role, Verdict, cases};

use common::library;

fn suite(role: Role) {
    let lib = library();
    let selected: Vec<_> = cases::all()
        .into_iter()
        .filter(|c| c.role == role)
        .collect();
    let dylib = move || {
        DylibDevice::load(&lib, role)
            .map(|d| Box::new(d) as Box<dyn Device>)
            .map_err(|e| e.to_string())
    };
    let (desc, got) = run_suite(&selected, &dylib, 2).expect("the library answers hello");
    assert_eq!(desc.role, role);
    let (_, want) = run_suite(&selected, &move || Ok(reference(role)), 2).expect("reference");
    assert_eq!(got.len(), selected.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g.id, w.id);
        assert!(
            matches!(g.verdict, Verdict::Pass | Verdict::Unsupported),
            "{}: {} through the library: {:?} {:?}",
            g.id,
            g.verdict,
            g.failure,
            g.message
        );
        // What version 5 of the ABI cannot express (a port named for an operation, a FENCE
        // request) is refused by the adapter, saying so: Unsupported through the library only.
        let abi_lacks = g
            .message
            .as_deref()
            .is_some_and(|m| m.contains("the C ABI (version 5)"));
        if abi_lacks {
            assert_eq!(g.verdict, Verdict::Unsupported, "{}", g.id);
            continue;
        }
        assert_eq!(
            g.verdict, w.verdict,
            "{}: {} through the library, {} in-process",
            g.id, g.verdict, w.verdict
        );
    }
    let passed = got.iter().filter(|r| r.verdict == Verdict::Pass).count();
    assert!(
        passed * 10 >= got.len() * 9,
        "{passed} of {} pass",
        got.len()
    );
}

#[test]
fn every_link_end_case_passes_through_the_library() {
    suite(Role::LinkEnd);
}

#[test]
fn every_endpoint_case_passes_through_the_library() {
    suite(Role::Endpoint);
}

#[test]
fn every_switch_case_passes_through_the_library() {
    suite(Role::Switch);
}

#[test]
fn the_library_describes_the_role_it_was_asked_for() {
    for (role, ports) in [(Role::LinkEnd, 1), (Role::Endpoint, 2), (Role::Switch, 8)] {
        let mut d = DylibDevice::load(&library(), role).expect("loads");
        let desc = d.hello().expect("hello");
        assert_eq!((desc.role, desc.ports), (role, ports));
        assert!(desc.name.starts_with("ethlink reference"), "{}", desc.name);
    }
}

#[test]
fn a_path_that_is_no_library_is_a_clear_error() {
    let missing = Path::new("/nonexistent/libnothing.so");
    match DylibDevice::load(missing, Role::LinkEnd) {
        Err(DeviceError::Broken(why)) => {
            assert!(
                why.contains("cannot load /nonexistent/libnothing.so"),
                "{why}"
            )
        }
        other => panic!("{other:?}"),
    }
    let not_elf = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    assert!(matches!(
        DylibDevice::load(&not_elf, Role::Switch),
        Err(DeviceError::Broken(_))
    ));
}

#[test]
fn requests_before_reset_and_settings_out_of_range_are_errors_not_crashes() {
    let mut d = DylibDevice::load(&library(), Role::LinkEnd).expect("loads");
    assert!(matches!(d.advance(10), Err(DeviceError::Broken(_))));
    let mut setup = ethlink_conformance::device::Setup::default();
    setup.link.vcs = Some(9);
    match d.reset(&setup) {
        Err(DeviceError::Refused(why)) => assert!(why.contains("vcs"), "{why}"),
        other => panic!("{other:?}"),
    }
    setup.link.vcs = Some(2);
    d.reset(&setup).expect("two VCs");
    let submit = ethlink_conformance::device::Request::Submit {
        port: 0,
        vc: 5,
        payload: "00".into(),
    };
    assert!(matches!(
        d.request(0, &submit),
        Err(DeviceError::Refused(_))
    ));
    assert!(matches!(
        d.frame(3, 0, &[0; 64]),
        Err(DeviceError::Broken(_))
    ));
}

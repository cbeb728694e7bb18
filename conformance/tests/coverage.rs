//! The coverage report: for every MUST of docs/spec/, the cases that check it. Printed here, and
//! committed as docs/conformance-coverage.md, which must equal what the generator writes.

use std::path::Path;

use ethlink_conformance::cases;
use ethlink_conformance::coverage::{self, Totals};

const REGENERATE: &str =
    "ETHLINK_WRITE_COVERAGE=1 cargo test -p ethlink-conformance --test coverage";

#[test]
fn committed_coverage_report_matches_the_generator() {
    let reqs = coverage::requirements(&coverage::spec_dir()).unwrap_or_else(|e| panic!("{e}"));
    let docs = coverage::coverage(&reqs, &cases::all());
    let text = coverage::render(&docs);
    assert_eq!(coverage::report().as_deref(), Ok(text.as_str()));
    println!("{text}");
    let t: Totals = coverage::totals(&docs);
    assert!(t.musts > 0, "no MUST found in docs/spec/");
    assert_eq!(t.musts, t.with_case + t.without_case + t.internal);
    assert!(t.with_case > 0, "no MUST has a case");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/conformance-coverage.md");
    if std::env::var_os("ETHLINK_WRITE_COVERAGE").is_some() {
        std::fs::write(&path, &text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == text,
        "{} differs from what the catalogue and docs/spec/ give; run `{REGENERATE}`",
        path.display()
    );
}

/// Every id a case names is a requirement of docs/spec/ (at any level), so that coverage cannot
/// be claimed with a misspelt id.
#[test]
fn every_id_a_case_names_is_a_requirement() {
    let reqs = coverage::requirements(&coverage::spec_dir()).unwrap_or_else(|e| panic!("{e}"));
    let mut unknown = Vec::new();
    for c in cases::all() {
        for r in c.reqs {
            if !reqs.iter().any(|q| q.id == *r) {
                unknown.push(format!("{}: {r}", c.id));
            }
        }
    }
    assert!(unknown.is_empty(), "{}", unknown.join("\n"));
}

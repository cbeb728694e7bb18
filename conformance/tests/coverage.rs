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
    assert_eq!(coverage::report(), text);
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

/// Every observable MUST that no case names has a reason in `coverage::NO_CASE`, a reason is
/// given only for a MUST that has no case, and each id appears at most once in the list.
#[test]
fn every_must_without_a_case_says_why() {
    let reqs = coverage::requirements(&coverage::spec_dir()).unwrap_or_else(|e| panic!("{e}"));
    let docs = coverage::coverage(&reqs, &cases::all());
    let mut problems = Vec::new();
    for r in docs.iter().flat_map(|d| &d.rows) {
        let why = coverage::no_case_reason(&r.req.id);
        if r.req.internal || !r.cases.is_empty() {
            if why.is_some() {
                problems.push(format!(
                    "{}: has a reason for no case, but {}",
                    r.req.id,
                    if r.req.internal {
                        "it is internal".to_owned()
                    } else {
                        format!("cases {:?} check it", r.cases)
                    }
                ));
            }
        } else if why.is_none() {
            problems.push(format!(
                "{}: no case and no reason in coverage::NO_CASE",
                r.req.id
            ));
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for id in coverage::NO_CASE.iter().map(|(id, _)| *id) {
        if !seen.insert(id) {
            problems.push(format!("{id}: listed twice"));
        }
        match reqs.iter().find(|q| q.id == id) {
            Some(q) if q.is_must() => {}
            _ => problems.push(format!("{id}: not a MUST of docs/spec/")),
        }
    }
    for (id, why) in coverage::NO_CASE {
        if why.trim().is_empty() || why.contains('|') || why.contains('\n') {
            problems.push(format!(
                "{id}: the reason must be one line of text without '|'"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The requirements the catalogue quotes (embedded when the suite is built) are those of
/// docs/spec/ as it is: the same documents, ids, levels and text.
#[test]
fn the_embedded_spec_is_the_spec() {
    let reqs = coverage::requirements(&coverage::spec_dir()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(coverage::embedded(), reqs.as_slice());
    for r in &reqs {
        assert!(!r.text.is_empty(), "{}: no text", r.id);
    }
    for c in cases::all() {
        for id in c.reqs {
            let r = coverage::requirement(id).unwrap_or_else(|| panic!("{}: {id}", c.id));
            assert!(r.text.contains(' '), "{id}: {:?}", r.text);
        }
    }
}

/// A MUST case judges at least one requirement with a key word at MUST level: a case whose
/// requirements only define terms, or say SHOULD or MAY, cannot fail a device at MUST level.
/// (Requirements it names beside those give context; the failures it reports name the MUST.)
#[test]
fn every_must_case_judges_a_must() {
    use ethlink_conformance::case::Level;
    let reqs = coverage::requirements(&coverage::spec_dir()).unwrap_or_else(|e| panic!("{e}"));
    let weak: Vec<&str> = cases::all()
        .iter()
        .filter(|c| c.level == Level::Must)
        .filter(|c| {
            !c.reqs
                .iter()
                .any(|id| reqs.iter().any(|r| r.id == *id && r.is_must()))
        })
        .map(|c| c.id)
        .collect();
    assert!(
        weak.is_empty(),
        "MUST cases with no MUST among their requirements: {weak:?}"
    );
}

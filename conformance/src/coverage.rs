//! Which requirements of `docs/spec/` the catalogue checks: for every MUST, the cases whose
//! `reqs` name it, and the MUSTs no case names, per document. A requirement whose text starts
//! with `*Internal.*` constrains the inside of a device and is listed as not observable.
//!
//! The requirements are read the way `scripts/traceability.py` reads them: a bullet that starts
//! with its id in bold (`- **WIRE-2.5-3** A receiver MUST ...`), continued by the indented lines
//! after it; a withdrawn id (`Withdrawn` early in its text) or one marked `Not assigned` is no
//! requirement; the level is the first of MUST NOT, MUST, REQUIRED, SHALL NOT, SHALL, SHOULD NOT,
//! SHOULD, RECOMMENDED, MAY, OPTIONAL that the text contains as a word.
//!
//! [`render`] writes `docs/conformance-coverage.md`; a test keeps the committed file equal to it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::case::Case;

/// The key words, in the order the level is looked for.
const LEVELS: [&str; 10] = [
    "MUST NOT",
    "MUST",
    "REQUIRED",
    "SHALL NOT",
    "SHALL",
    "SHOULD NOT",
    "SHOULD",
    "RECOMMENDED",
    "MAY",
    "OPTIONAL",
];
/// The levels that make a requirement a MUST.
const MUST_LEVELS: [&str; 5] = ["MUST", "MUST NOT", "REQUIRED", "SHALL", "SHALL NOT"];

/// One requirement of the spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// Its id, such as `WIRE-2.5-3`.
    pub id: String,
    /// The document that defines it, such as `wire.md`.
    pub doc: String,
    /// Its line in that document, from 1.
    pub line: usize,
    /// Its key word (`MUST`, `SHOULD`, ...), or `informative`.
    pub level: &'static str,
    /// Whether its text starts with `*Internal.*`.
    pub internal: bool,
    /// Its text as the spec writes it, the lines of its bullet joined by spaces.
    pub text: String,
}

impl Requirement {
    /// Whether it is at MUST level.
    pub fn is_must(&self) -> bool {
        MUST_LEVELS.contains(&self.level)
    }
}

/// The spec directory of this source tree.
pub fn spec_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/spec")
}

/// Every requirement of the documents `*.md` of `dir`, documents in name order, requirements in
/// the order they appear.
pub fn requirements(dir: &Path) -> Result<Vec<Requirement>, String> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    let mut out = Vec::new();
    for path in docs {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let doc = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        parse_doc(&doc, &text, &mut out);
    }
    Ok(out)
}

/// The documents of `docs/spec/` that define requirements, as they were when the suite was built:
/// the catalogue quotes its requirements from them, so a quotation cannot drift from the spec.
/// A test checks that this list holds every document of the directory that defines one.
pub const EMBEDDED: &[(&str, &str)] = &[
    ("classes.md", include_str!("../../docs/spec/classes.md")),
    ("endpoint.md", include_str!("../../docs/spec/endpoint.md")),
    ("link.md", include_str!("../../docs/spec/link.md")),
    ("switch.md", include_str!("../../docs/spec/switch.md")),
    (
        "transaction.md",
        include_str!("../../docs/spec/transaction.md"),
    ),
    ("wire.md", include_str!("../../docs/spec/wire.md")),
];

/// Every requirement of the embedded documents ([`EMBEDDED`]), documents in name order.
pub fn embedded() -> &'static [Requirement] {
    static REQS: std::sync::OnceLock<Vec<Requirement>> = std::sync::OnceLock::new();
    REQS.get_or_init(|| {
        let mut out = Vec::new();
        for (doc, text) in EMBEDDED {
            parse_doc(doc, text, &mut out);
        }
        out
    })
}

/// The requirement `id` of the embedded spec.
pub fn requirement(id: &str) -> Option<&'static Requirement> {
    embedded().iter().find(|r| r.id == id)
}

/// The id and the text after it, when `line` starts a requirement.
fn req_start(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim_start();
    let rest = rest.strip_prefix('-').or_else(|| rest.strip_prefix('*'))?;
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let rest = rest.trim_start().strip_prefix("**")?;
    let end = rest.find("**")?;
    let id = &rest[..end];
    valid_id(id).then(|| (id, rest[end + 2..].trim_start()))
}

/// `[A-Z]{2,}-\d+(\.\d+)*-\d+`.
fn valid_id(id: &str) -> bool {
    let mut parts = id.split('-');
    let (Some(prefix), Some(mid), Some(last), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    prefix.len() >= 2
        && prefix.bytes().all(|b| b.is_ascii_uppercase())
        && mid.split('.').all(digits)
        && digits(last)
}

fn parse_doc(doc: &str, text: &str, out: &mut Vec<Requirement>) {
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let Some((id, first)) = req_start(lines[i]) else {
            i += 1;
            continue;
        };
        let line = i + 1;
        let mut body = vec![first.to_owned()];
        i += 1;
        while i < lines.len() && lines[i].starts_with("  ") && req_start(lines[i]).is_none() {
            body.push(lines[i].trim().to_owned());
            i += 1;
        }
        let body = body.join(" ");
        let head: String = body.chars().take(20).collect();
        if head.contains("Withdrawn") || body.starts_with("Not assigned") {
            continue;
        }
        let level = LEVELS
            .iter()
            .find(|lv| has_word(&body, lv))
            .copied()
            .unwrap_or("informative");
        out.push(Requirement {
            id: id.to_owned(),
            doc: doc.to_owned(),
            line,
            level,
            internal: body.starts_with("*Internal.*"),
            text: body,
        });
    }
}

/// Whether `word` occurs in `text` with no word character on either side.
fn has_word(text: &str, word: &str) -> bool {
    let is_word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    text.match_indices(word).any(|(at, _)| {
        !is_word(text[..at].chars().next_back()) && !is_word(text[at + word.len()..].chars().next())
    })
}

/// The MUSTs no case checks, each with why it cannot be checked at the device boundary, one
/// entry a line. The report prints the reason beside the requirement, and a test requires one
/// for every MUST that has no case.
pub const NO_CASE: &[(&str, &str)] = &[
    (
        "EP-8-10",
        "the rate is a design point; what a port sees of it, nothing dropped and the request frames held with their credits while the target is behind, is judged by the backlog cases (EP-8-4)",
    ),
    (
        "EP-9-9",
        "how many segments of an attempt were queued for the link before the BUSY came depends on the device's queues, which the spec does not bound; the harness cannot tell a segment built before the BUSY from one built after",
    ),
    (
        "EP-13-1",
        "the harness knows a device's ports by their indexes and their path ids only; that index i is port i mod ports_per_stack of stack i / ports_per_stack needs the device's stack layout, which it does not announce",
    ),
    (
        "EP-13-2",
        "the tag ranges depend on the device's lsu_tags and rdma_tags, which the setup does not set and the device does not announce; the cases check that tags are unique (EP-5-1)",
    ),
    (
        "EP-13-7",
        "needs a device with no retry left when its own link reports a loss of unknown fate; the setup cannot set max_retries",
    ),
    (
        "EP-13-8",
        "needs a loss of unknown fate at the device's own link while a later request of the stream is issued, and the times of the hold inside the device",
    ),
    (
        "EP-13-9",
        "one cycle shows only when choices of several kinds interleave in an order the device decides inside, and round-robin is an optional policy (EP-4-2)",
    ),
    (
        "EP-13-11",
        "the backlog's unit is inside the device; what a port sees of the rule, request VCs held while response VCs are still taken, is judged by the backlog cases (EP-8-4)",
    ),
    (
        "EP-13-13",
        "which usable port a response moves to is the device's choice by its policy and the response's tag; that it moves and arrives is judged for TXN-5-5",
    ),
    (
        "EP-13-15",
        "a device that refuses a setup is judged Unsupported, whatever its reason; the suite cannot tell a refusal for a broken relation from a setting the device lacks",
    ),
    (
        "EP-1-3",
        "a refusal by the endpoint's own configuration interface; of the parameters these relations tie together Setup carries only op_timeout, and no value of it in its range breaks a relation for a device that keeps the others to it, so a case cannot offer a configuration that must be refused",
    ),
    (
        "EP-1-4",
        "a rule on how several endpoints are configured together, not on what one device does at its ports",
    ),
    (
        "EP-1-5",
        "the horizon (2^63 - 1 ns) is reached only by advancing a device there, and an advance covers every timer due on the way: about 2^52 periodic frames of an UP link, beyond any run; the unit tests of the endpoint and the C ABI set the time there directly",
    ),
    (
        "EP-5-10",
        "completions that wait to be taken by the GPU: the boundary hands every completion over at the advance that produces it, so a device under test never holds one untaken; the endpoint's unit tests and the C ABI check the bound",
    ),
    (
        "EP-12-2",
        "tag_quarantine is the endpoint's own configuration, which Setup cannot set and the device does not report, so a case cannot compute the earliest INIT allowed after a reset",
    ),
    (
        "LINK-1-2",
        "the horizon (2^63 - 1 ns) is reached only by advancing a device there, and an advance covers every timer due on the way: about 2^52 periodic frames of an UP link, beyond any run; link/tests/horizon.rs and the C ABI's tests set the time there directly",
    ),
    (
        "LINK-1-3",
        "a time after the horizon is refused or taken as the horizon; the boundary's cases never run that far (see LINK-1-2), and the C ABI's tests check the refusal",
    ),
    (
        "LINK-3-19",
        "the transmit queue's bounds are local settings the boundary neither sets nor reads, and a submit the device refuses is a refusal the harness cannot tell from a broken device",
    ),
    (
        "WIRE-7-6",
        "binds the reports of tools (a decoder, a verdict, a trace), not a device's behaviour at its ports; the decoder's own tests check it",
    ),
    (
        "LINK-7-5",
        "counts the frames a device stomps (LINK-3-12); nothing at a link end's boundary can make it stomp one",
    ),
    (
        "SW-1-1",
        "the horizon (2^63 - 1 ns) is reached only by advancing a device there, timer by timer; the switch's unit tests set the time there directly",
    ),
    (
        "SW-2-11",
        "a port coming back UP while a path is busy: the boundary can take a port down and up, but a switch's choice of port for a path hangs on its hash and the links' states, and an external device's pin_guard is not known, so no case can tell a busy bucket from an idle one without reading the device; switch-model/tests/repin.rs checks it on the reference",
    ),
    (
        "SW-2-13",
        "needs a path pinned to a port that then goes down and a frame of it after; the frames lost with the port are the endpoints' to retry, and the move of an idle path to another port when its port is down is what the equal-ports cases with a port down show (SW-2-3); switch-model/tests/repin.rs checks it",
    ),
    (
        "SW-2-14",
        "about which pin_guard a switch accepts; the boundary's setup does not carry pin_guard",
    ),
    (
        "SW-2-15",
        "a duty of the tables of a whole fabric, which management writes; one switch at the boundary forwards by whatever table it is given",
    ),
    (
        "SW-8-3",
        "a wrap at 2^64 needs 2^64 events, unreachable in bounded time, and the boundary has no way to preset a counter",
    ),
    (
        "TXN-4-3",
        "the device is only permitted to reorder operations on different paths; the duty (wait for a completion or fence) falls on the program that issues them, which at the boundary is the suite, not the device",
    ),
    (
        "WIRE-1.2-5",
        "about which requirement id a receiver reports; a device reports no ids at its ports, and the action is the same whichever id it picks; the golden vectors check the reference's decoder",
    ),
    (
        "WIRE-2.5-4",
        "applies only to a device that learns its outgoing frame is damaged after it began to send it (a cut-through switch fed a damaged frame); the boundary delivers whole frames, so it cannot make a device begin a frame it has not received whole",
    ),
];

/// Why `id` has no case, if [`NO_CASE`] says.
pub fn no_case_reason(id: &str) -> Option<&'static str> {
    NO_CASE.iter().find(|(r, _)| *r == id).map(|(_, why)| *why)
}

/// One MUST and what checks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The requirement.
    pub req: Requirement,
    /// The ids of the cases whose `reqs` name it, in catalogue order.
    pub cases: Vec<&'static str>,
}

/// The coverage of the MUSTs of one document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocCoverage {
    /// The document, such as `wire.md`.
    pub doc: String,
    /// Its MUSTs, in the order they appear.
    pub rows: Vec<Row>,
}

/// Totals over every document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Totals {
    /// MUSTs.
    pub musts: usize,
    /// Observable MUSTs that at least one case names.
    pub with_case: usize,
    /// Observable MUSTs that no case names.
    pub without_case: usize,
    /// MUSTs marked internal (not observable at a device's ports).
    pub internal: usize,
}

/// The coverage of `reqs` by `cases`, per document.
pub fn coverage(reqs: &[Requirement], cases: &[Case]) -> Vec<DocCoverage> {
    let mut docs: BTreeMap<String, Vec<Row>> = BTreeMap::new();
    for r in reqs.iter().filter(|r| r.is_must()) {
        let named: Vec<&'static str> = cases
            .iter()
            .filter(|c| c.reqs.contains(&r.id.as_str()))
            .map(|c| c.id)
            .collect();
        docs.entry(r.doc.clone()).or_default().push(Row {
            req: r.clone(),
            cases: named,
        });
    }
    docs.into_iter()
        .map(|(doc, rows)| DocCoverage { doc, rows })
        .collect()
}

/// The totals of `docs`.
pub fn totals(docs: &[DocCoverage]) -> Totals {
    let mut t = Totals::default();
    for r in docs.iter().flat_map(|d| &d.rows) {
        t.musts += 1;
        if r.req.internal {
            t.internal += 1;
        } else if r.cases.is_empty() {
            t.without_case += 1;
        } else {
            t.with_case += 1;
        }
    }
    t
}

/// The Markdown report of `docs`.
pub fn render(docs: &[DocCoverage]) -> String {
    let t = totals(docs);
    let mut out = String::new();
    let _ = writeln!(out, "# Conformance coverage\n");
    let _ = writeln!(
        out,
        "Generated from docs/spec/ and the catalogue of `ethlink-conformance` by \
         `ethlink_conformance::coverage`; do not edit. Regenerate with\n\
         `ETHLINK_WRITE_COVERAGE=1 cargo test -p ethlink-conformance --test coverage`.\n"
    );
    let _ = writeln!(
        out,
        "For every MUST of the spec: the cases that check it (their `reqs` name it), or none. A \
         requirement marked *Internal.* constrains the inside of a device and cannot be observed \
         at its ports: it has no case. A MUST that has no case for another reason says why.\n"
    );
    let _ = writeln!(
        out,
        "{} MUSTs: {} with a case, {} without, {} internal (not observable).\n",
        t.musts, t.with_case, t.without_case, t.internal
    );
    let _ = writeln!(
        out,
        "| document | MUSTs | with a case | without | internal |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|");
    for d in docs {
        let t = totals(std::slice::from_ref(d));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            d.doc, t.musts, t.with_case, t.without_case, t.internal
        );
    }
    for d in docs {
        let _ = writeln!(out, "\n## {}\n", d.doc);
        let _ = writeln!(out, "| requirement | level | cases |");
        let _ = writeln!(out, "|---|---|---|");
        for r in &d.rows {
            let cases = if r.req.internal {
                "not observable (internal)".to_owned()
            } else if r.cases.is_empty() {
                match no_case_reason(&r.req.id) {
                    Some(why) => format!("no case: {why}"),
                    None => "**no case**".to_owned(),
                }
            } else {
                r.cases.join(", ")
            };
            let _ = writeln!(out, "| {} | {} | {} |", r.req.id, r.req.level, cases);
        }
    }
    // What the cases catch: the last mutation-testing run and every mutant it missed, written
    // by hand in docs/mutation/results.md (docs/conformance.md §4.3).
    let _ = writeln!(out, "\n{}", MUTATION.trim_end());
    out
}

/// The results of mutation testing, with a reason for every mutant missed.
const MUTATION: &str = include_str!("../../docs/mutation/results.md");

/// The report for the spec the suite was built with and the whole catalogue.
pub fn report() -> String {
    render(&coverage(embedded(), &crate::cases::all()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_levels() {
        assert_eq!(
            req_start("- **WIRE-2.5-3** A receiver MUST x"),
            Some(("WIRE-2.5-3", "A receiver MUST x"))
        );
        assert_eq!(req_start("  * **LINK-7-1** y"), Some(("LINK-7-1", "y")));
        assert_eq!(req_start("- **Note** y"), None);
        assert_eq!(req_start("-**LINK-7-1** y"), None);
        assert!(has_word("it MUST NOT x", "MUST NOT"));
        assert!(!has_word("MUSTARD", "MUST"));
        let mut out = Vec::new();
        parse_doc(
            "x.md",
            "- **AB-1-1** *Internal.* The end MUST\n  keep it.\n- **AB-1-2** Withdrawn.\n\
             - **AB-1-3** It SHOULD.\n- **AB-1-4** Not assigned.\n",
            &mut out,
        );
        let got: Vec<(&str, &str, bool)> = out
            .iter()
            .map(|r| (r.id.as_str(), r.level, r.internal))
            .collect();
        assert_eq!(got, [("AB-1-1", "MUST", true), ("AB-1-3", "SHOULD", false)]);
    }
}

//! Reports of a run (docs/conformance.md §6): a readable summary per requirement and per
//! verdict, JUnit XML, JSON, and a pcapng capture per failed case.
//!
//! Every report depends only on the device's answers, except the wall-time fields (`wall_us` in
//! JSON, `time` in JUnit), which are documented as such.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use pcap_file::DataLink;
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::pcapng::blocks::enhanced_packet::{EnhancedPacketBlock, EnhancedPacketOption};
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::blocks::section_header::SectionHeaderBlock;
use serde::Serialize;

use crate::case::{Case, Level, Verdict};
use crate::cases::common::{Kind, kind_of};
use crate::ctx::Logged;
use crate::device::Description;
use crate::runner::CaseResult;

/// Frames of the exchange shown around a failure.
pub const FRAMES_SHOWN: usize = 12;

/// A finished run: the device, the cases run and their results, in catalogue order.
#[derive(Debug, Clone, Copy)]
pub struct Run<'a> {
    /// What the device said of itself.
    pub desc: &'a Description,
    /// The cases run.
    pub cases: &'a [Case],
    /// Their results, `results[i]` for `cases[i]`.
    pub results: &'a [CaseResult],
    /// Whether SHOULD cases count (`--strict`).
    pub strict: bool,
}

impl Run<'_> {
    /// Whether the run fails: a MUST case failed, a case could not be judged because the device
    /// broke the boundary (HarnessError), with `strict` a SHOULD case was missed, or no case was
    /// judged at all (a run of nothing but Unsupported and Inconclusive cases shows nothing the
    /// device did, and is no pass).
    pub fn failed(&self) -> bool {
        self.judged_nothing()
            || self.results.iter().any(|r| {
                matches!(r.verdict, Verdict::Fail | Verdict::HarnessError)
                    || (self.strict && r.verdict == Verdict::NonStrict)
            })
    }

    /// Whether no case was judged: none passed or failed.
    pub fn judged_nothing(&self) -> bool {
        !self.results.iter().any(|r| {
            matches!(
                r.verdict,
                Verdict::Pass | Verdict::Fail | Verdict::NonStrict
            )
        })
    }

    /// Results per verdict, in the order of [`Verdict`].
    pub fn totals(&self) -> BTreeMap<Verdict, usize> {
        let mut t = BTreeMap::new();
        for r in self.results {
            *t.entry(r.verdict).or_insert(0) += 1;
        }
        t
    }
}

/// One line for a frame of the log: time, port, direction, kind, sequence number, flags, size.
pub fn frame_line(l: &Logged) -> String {
    let dir = if l.from_dut { "dut->" } else { "->dut" };
    let b = &l.bytes;
    let what = match kind_of(b) {
        Some(Kind::Data(s)) => {
            let off = if b.get(12..14) == Some(&[0x81, 0x00]) {
                18
            } else {
                14
            };
            let flags = b.get(off + 1).copied().unwrap_or(0);
            let vc = flags >> 5;
            let mut f = String::new();
            if flags & 1 != 0 {
                f.push_str(" REPLAY");
            }
            if flags & 2 != 0 {
                f.push_str(" ACK_REQ");
            }
            format!("DATA seq {s} vc {vc}{f}")
        }
        Some(Kind::Ack(s)) => format!("ACK {s}"),
        Some(Kind::Nack(s)) => format!("NACK {s}"),
        Some(Kind::Cf) => "CF".to_owned(),
        Some(Kind::Cc) => "CC".to_owned(),
        Some(Kind::Init) => "INIT".to_owned(),
        Some(Kind::InitEcho) => "INIT_ECHO".to_owned(),
        None => "unparsed (damaged or malformed)".to_owned(),
    };
    format!(
        "{:>10} ns  port {}  {dir}  {what}  ({} B)",
        l.time_ns,
        l.port,
        b.len()
    )
}

/// The frames shown around a failure: the last [`FRAMES_SHOWN`] frames of `log` that are not
/// CF or CC (the periodic credit frames would hide the exchange), oldest first, with the number
/// of CF and CC frames left out between them.
pub fn shown(log: &[Logged]) -> (Vec<&Logged>, usize) {
    let mut picked = Vec::new();
    let mut skipped = 0;
    for l in log.iter().rev() {
        if picked.len() == FRAMES_SHOWN {
            break;
        }
        if matches!(kind_of(&l.bytes), Some(Kind::Cf | Kind::Cc)) {
            skipped += 1;
        } else {
            picked.push(l);
        }
    }
    picked.reverse();
    (picked, skipped)
}

/// The readable summary: the device, totals, every requirement with its cases and verdicts,
/// the cases per verdict, and each failure with its exchange.
pub fn summary(run: &Run<'_>) -> String {
    let mut s = String::new();
    let d = run.desc;
    let caps = if d.caps.is_empty() {
        "none".to_owned()
    } else {
        d.caps.join(", ")
    };
    let _ = writeln!(
        s,
        "ethlink conformance: {} (role {}, {} port{}, capabilities: {caps})",
        d.name,
        d.role,
        d.ports,
        if d.ports == 1 { "" } else { "s" }
    );
    let _ = writeln!(s);
    let _ = writeln!(s, "per clause and requirement:");
    let mut per_req: BTreeMap<&str, Vec<(&str, Verdict)>> = BTreeMap::new();
    for r in run.results {
        for req in r.reqs {
            per_req.entry(req).or_default().push((r.id, r.verdict));
        }
    }
    let mut reqs: Vec<&&str> = per_req.keys().collect();
    reqs.sort_by_key(|r| req_key(r));
    let mut clause = String::new();
    for req in reqs {
        let c = clause_of(req);
        if c != clause {
            // The clause's line: its requirements and the verdicts of their cases.
            let in_clause: Vec<&&str> = per_req.keys().filter(|r| clause_of(r) == c).collect();
            let mut verdicts: BTreeMap<Verdict, usize> = BTreeMap::new();
            for r in &in_clause {
                for (_, v) in &per_req[**r] {
                    *verdicts.entry(*v).or_insert(0) += 1;
                }
            }
            let tally: Vec<String> = verdicts
                .iter()
                .map(|(v, n)| format!("{n} {}", v.name()))
                .collect();
            let _ = writeln!(
                s,
                "  {c}: {} requirement{}, {}",
                in_clause.len(),
                if in_clause.len() == 1 { "" } else { "s" },
                tally.join(", ")
            );
            clause = c;
        }
        let cases: Vec<String> = per_req[*req]
            .iter()
            .map(|(id, v)| format!("{id} {v}"))
            .collect();
        let _ = writeln!(s, "    {:<14} {}", req, cases.join(", "));
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "per verdict:");
    for (v, n) in run.totals() {
        let ids: Vec<&str> = run
            .results
            .iter()
            .filter(|r| r.verdict == v)
            .map(|r| r.id)
            .collect();
        let _ = writeln!(s, "  {:<13} {:>4}  {}", v.name(), n, ids.join(" "));
    }
    for (case, r) in run.cases.iter().zip(run.results) {
        if matches!(r.verdict, Verdict::Pass | Verdict::Unsupported) {
            continue;
        }
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "{} {}: {}",
            r.verdict.name().to_uppercase(),
            r.id,
            case.title
        );
        if let Some(f) = &r.failure {
            let _ = writeln!(s, "  requirement: {} {}", f.req, quote(f.req));
            let _ = writeln!(s, "  expected:    {}", f.expected);
            let _ = writeln!(s, "  seen:        {}", f.seen);
        }
        if let Some(m) = &r.message {
            for (i, line) in m.lines().enumerate() {
                let _ = writeln!(s, "  {}{line}", if i == 0 { "why: " } else { "     " });
            }
        }
        for note in &r.notes {
            for line in note.lines() {
                let _ = writeln!(s, "  | {line}");
            }
        }
        if !r.log.is_empty() {
            let (frames, skipped) = shown(&r.log);
            let _ = writeln!(
                s,
                "  last {} of {} frames, {skipped} CF/CC among them left out (case ended at {} ns):",
                frames.len(),
                r.log.len(),
                r.simulated_ns
            );
            for l in frames {
                let _ = writeln!(s, "    {}", frame_line(l));
            }
        }
    }
    let _ = writeln!(s);
    let t = run.totals();
    let n = |v| t.get(&v).copied().unwrap_or(0);
    let _ = writeln!(
        s,
        "{} cases: {} pass, {} fail, {} non-strict, {} unsupported, {} inconclusive, {} harness error",
        run.results.len(),
        n(Verdict::Pass),
        n(Verdict::Fail),
        n(Verdict::NonStrict),
        n(Verdict::Unsupported),
        n(Verdict::Inconclusive),
        n(Verdict::HarnessError),
    );
    let _ = writeln!(
        s,
        "result: {}",
        if run.judged_nothing() {
            "FAIL (no case was judged: each was unsupported, inconclusive or could not be judged)"
        } else if run.failed() {
            "FAIL (a MUST case failed or could not be judged, or a SHOULD case failed with --strict)"
        } else {
            "PASS (no MUST case failed)"
        }
    );
    s
}

/// The clause of a requirement id, as a document and section: `LINK-2-3` is `link.md §2`,
/// `WIRE-2.5-3` is `wire.md §2.5`, a table id such as `LINK-T3` is `link.md tables`.
pub fn clause_of(id: &str) -> String {
    let mut parts = id.split('-');
    let prefix = parts.next().unwrap_or("");
    let section = parts.next().unwrap_or("");
    let doc = match prefix {
        "WIRE" => "wire.md",
        "LINK" => "link.md",
        "TXN" => "transaction.md",
        "EP" => "endpoint.md",
        "SW" => "switch.md",
        "CLS" => "classes.md",
        other => other,
    };
    if section.starts_with('T') {
        format!("{doc} tables")
    } else {
        format!("{doc} \u{a7}{section}")
    }
}

/// A sort key for requirement ids that keeps the ids of a clause together and orders numbers
/// numerically (`LINK-2-10` after `LINK-2-9`, `WIRE-2-9` before `WIRE-2.5-1`).
fn req_key(id: &str) -> (String, u8, Vec<u64>, String, Vec<u64>) {
    let mut parts = id.splitn(3, '-');
    let prefix = parts.next().unwrap_or("").to_owned();
    let section = parts.next().unwrap_or("");
    let rest = parts.next().unwrap_or("");
    let nums = |t: &str| -> Option<Vec<u64>> { t.split('.').map(|n| n.parse().ok()).collect() };
    match nums(section) {
        // A section of a document: all of §2 before §2.5, and §2.5 before §3.
        Some(sec) => (
            prefix,
            0,
            sec,
            String::new(),
            nums(rest).unwrap_or_default(),
        ),
        // A table (`T3`) or an id of another form, after the sections, by its text.
        None => (
            prefix,
            1,
            Vec::new(),
            format!("{section}-{rest}"),
            Vec::new(),
        ),
    }
}

/// What `--list` prints for `case`: a line with its id, role, level, requirement ids, title and
/// needed capabilities, then an indented line per requirement with its document, key word and
/// text as docs/spec/ writes them.
pub fn list_entry(case: &Case) -> String {
    let level = match case.level {
        Level::Must => "MUST",
        Level::Should => "SHOULD",
    };
    let needs = if case.needs.is_empty() {
        String::new()
    } else {
        format!(" [needs {}]", case.needs.join(", "))
    };
    let mut s = format!(
        "{:<14} {:<9} {:<6} {:<32} {}{needs}",
        case.id,
        case.role.name(),
        level,
        case.reqs.join(","),
        case.title
    );
    for id in case.reqs {
        let _ = write!(s, "\n    {id:<12} {}", quote(id));
    }
    s
}

/// The text of requirement `id` as docs/spec/ writes it, with its document and key word.
pub fn quote(id: &str) -> String {
    match crate::coverage::requirement(id) {
        Some(r) => format!("({} {}) {}", r.doc, r.level, r.text),
        None => "(not a requirement of docs/spec/)".to_owned(),
    }
}

/// One requirement a case names, for the machine-readable catalogue.
#[derive(Serialize)]
struct JsonReq<'a> {
    id: &'a str,
    doc: Option<&'a str>,
    level: Option<&'a str>,
    text: Option<&'a str>,
}

impl<'a> JsonReq<'a> {
    fn of(id: &'a str) -> Self {
        let r = crate::coverage::requirement(id);
        JsonReq {
            id,
            doc: r.map(|r| r.doc.as_str()),
            level: r.map(|r| r.level),
            text: r.map(|r| r.text.as_str()),
        }
    }
}

/// One case of the machine-readable catalogue.
#[derive(Serialize)]
struct JsonListed<'a> {
    id: &'a str,
    title: &'a str,
    role: &'a str,
    level: Level,
    needs: &'a [&'a str],
    reqs: Vec<JsonReq<'a>>,
}

/// The catalogue of `cases` as JSON (`--list --json FILE`): an object with `cases`, each with its
/// id, title, role, level, needed capabilities and `reqs`, every requirement with its document,
/// key word and text as docs/spec/ writes them.
pub fn list_json(cases: &[Case]) -> String {
    #[derive(Serialize)]
    struct List<'a> {
        cases: Vec<JsonListed<'a>>,
    }
    let list = List {
        cases: cases
            .iter()
            .map(|c| JsonListed {
                id: c.id,
                title: c.title,
                role: c.role.name(),
                level: c.level,
                needs: c.needs,
                reqs: c.reqs.iter().map(|id| JsonReq::of(id)).collect(),
            })
            .collect(),
    };
    let mut s =
        serde_json::to_string_pretty(&list).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::{clause_of, req_key};

    #[test]
    fn requirement_order_keeps_clauses_together() {
        let mut ids = vec![
            "WIRE-2.5-3",
            "LINK-2-10",
            "WIRE-2-9",
            "LINK-T3",
            "LINK-2-9",
            "WIRE-3-1",
            "WIRE-2-1",
        ];
        ids.sort_by_key(|r| req_key(r));
        assert_eq!(
            ids,
            [
                "LINK-2-9",
                "LINK-2-10",
                "LINK-T3",
                "WIRE-2-1",
                "WIRE-2-9",
                "WIRE-2.5-3",
                "WIRE-3-1"
            ]
        );
        assert_eq!(clause_of("WIRE-2.5-3"), "wire.md \u{a7}2.5");
        assert_eq!(clause_of("LINK-T3"), "link.md tables");
        assert_eq!(clause_of("EP-4-1"), "endpoint.md \u{a7}4");
    }
}

#[derive(Serialize)]
struct JsonCase<'a> {
    id: &'a str,
    title: &'a str,
    role: &'a str,
    reqs: &'a [&'a str],
    level: Level,
    verdict: &'a str,
    simulated_ns: u64,
    wall_us: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure: Option<JsonFailure<'a>>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    notes: &'a [String],
    #[serde(skip_serializing_if = "Vec::is_empty")]
    frames: Vec<String>,
}

/// A failure in the JSON report: the requirement with its text, what was expected and seen.
#[derive(Serialize)]
struct JsonFailure<'a> {
    req: &'a str,
    text: Option<&'a str>,
    expected: &'a str,
    seen: &'a str,
}

impl<'a> JsonFailure<'a> {
    fn of(f: &'a crate::case::Failure) -> Self {
        JsonFailure {
            req: f.req,
            text: crate::coverage::requirement(f.req).map(|r| r.text.as_str()),
            expected: &f.expected,
            seen: &f.seen,
        }
    }
}

#[derive(Serialize)]
struct JsonReport<'a> {
    device: &'a Description,
    strict: bool,
    passed: bool,
    totals: BTreeMap<&'static str, usize>,
    cases: Vec<JsonCase<'a>>,
}

/// The JSON report: the device, the totals per verdict, and per case its id, title, role,
/// requirement ids, level, verdict, simulated time, wall time (`wall_us`, the only field that
/// differs between runs), message, failure (requirement, expected, seen), the notes the case
/// added (a litmus case's histograms, whatever its verdict) and, for a failed case, the last
/// frames around the failure as one-liners.
pub fn json(run: &Run<'_>) -> String {
    let report = JsonReport {
        device: run.desc,
        strict: run.strict,
        passed: !run.failed(),
        totals: run
            .totals()
            .into_iter()
            .map(|(v, n)| (v.name(), n))
            .collect(),
        cases: run
            .cases
            .iter()
            .zip(run.results)
            .map(|(c, r)| JsonCase {
                id: r.id,
                title: c.title,
                role: c.role.name(),
                reqs: r.reqs,
                level: r.level,
                verdict: r.verdict.name(),
                simulated_ns: r.simulated_ns,
                wall_us: r.wall_us,
                message: r.message.as_deref(),
                failure: r.failure.as_ref().map(JsonFailure::of),
                notes: &r.notes,
                frames: shown(&r.log).0.into_iter().map(frame_line).collect(),
            })
            .collect(),
    };
    let mut s =
        serde_json::to_string_pretty(&report).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    s.push('\n');
    s
}

/// `s` escaped for XML text and attribute values; characters XML 1.0 cannot carry become `?`.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' => out.push_str("&#9;"),
            '\r' => out.push_str("&#13;"),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// The JUnit XML report: one `testsuite` per role, one `testcase` per case (class name
/// `<role>.<AREA>`), Fail and (with `strict`) NonStrict as `failure`, HarnessError as `error`,
/// Unsupported and Inconclusive as `skipped`; `time` attributes are wall times in seconds.
pub fn junit(run: &Run<'_>) -> String {
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let t = run.totals();
    let n = |v| t.get(&v).copied().unwrap_or(0);
    let failures = n(Verdict::Fail) + if run.strict { n(Verdict::NonStrict) } else { 0 };
    let secs = |us: u64| format!("{:.6}", us as f64 / 1e6);
    let total_us: u64 = run.results.iter().map(|r| r.wall_us).sum();
    let _ = writeln!(
        s,
        "<testsuites name=\"ethlink conformance\" tests=\"{}\" failures=\"{failures}\" errors=\"{}\" skipped=\"{}\" time=\"{}\">",
        run.results.len(),
        n(Verdict::HarnessError),
        n(Verdict::Unsupported) + n(Verdict::Inconclusive),
        secs(total_us)
    );
    let mut roles: Vec<crate::Role> = run.cases.iter().map(|c| c.role).collect();
    roles.dedup();
    roles.sort();
    roles.dedup();
    for role in roles {
        let pairs: Vec<(&Case, &CaseResult)> = run
            .cases
            .iter()
            .zip(run.results)
            .filter(|(c, _)| c.role == role)
            .collect();
        let count =
            |f: &dyn Fn(Verdict) -> bool| pairs.iter().filter(|(_, r)| f(r.verdict)).count();
        let _ = writeln!(
            s,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{}\">",
            role.name(),
            pairs.len(),
            count(&|v| v == Verdict::Fail || (run.strict && v == Verdict::NonStrict)),
            count(&|v| v == Verdict::HarnessError),
            count(&|v| matches!(v, Verdict::Unsupported | Verdict::Inconclusive)),
            secs(pairs.iter().map(|(_, r)| r.wall_us).sum())
        );
        let _ = writeln!(
            s,
            "    <properties><property name=\"device\" value=\"{}\"/></properties>",
            xml_escape(&run.desc.name)
        );
        for (c, r) in pairs {
            let area = c.id.split('-').nth(1).unwrap_or("");
            let _ = write!(
                s,
                "    <testcase classname=\"{}.{}\" name=\"{}\" time=\"{}\"",
                role.name(),
                xml_escape(area),
                xml_escape(&format!("{} {}", c.id, c.title)),
                secs(r.wall_us)
            );
            let mut body = String::new();
            let detail = detail_text(r);
            match r.verdict {
                Verdict::Pass if !r.notes.is_empty() => {
                    let _ = write!(
                        body,
                        "<system-out>{}</system-out>",
                        xml_escape(&r.notes.join("\n"))
                    );
                }
                Verdict::Pass => {}
                Verdict::NonStrict if !run.strict => {
                    let _ = write!(
                        body,
                        "<system-out>{}</system-out>",
                        xml_escape(&format!("NonStrict (a SHOULD missed)\n{detail}"))
                    );
                }
                Verdict::Fail | Verdict::NonStrict => {
                    let msg = r.failure.as_ref().map_or_else(
                        || r.verdict.name().to_owned(),
                        |f| {
                            format!(
                                "{} {}: expected {}; seen {}",
                                f.req,
                                quote(f.req),
                                f.expected,
                                f.seen
                            )
                        },
                    );
                    let _ = write!(
                        body,
                        "<failure message=\"{}\" type=\"{}\">{}</failure>",
                        xml_escape(&msg),
                        r.verdict.name(),
                        xml_escape(&detail)
                    );
                }
                Verdict::HarnessError => {
                    let _ = write!(
                        body,
                        "<error message=\"{}\" type=\"HarnessError\">{}</error>",
                        xml_escape(r.message.as_deref().unwrap_or("")),
                        xml_escape(&detail)
                    );
                }
                Verdict::Unsupported | Verdict::Inconclusive => {
                    let _ = write!(
                        body,
                        "<skipped message=\"{}\"/>",
                        xml_escape(&format!(
                            "{}: {}",
                            r.verdict.name(),
                            r.message.as_deref().unwrap_or("")
                        ))
                    );
                }
            }
            if body.is_empty() {
                let _ = writeln!(s, "/>");
            } else {
                let _ = writeln!(s, ">{body}</testcase>");
            }
        }
        let _ = writeln!(s, "  </testsuite>");
    }
    let _ = writeln!(s, "</testsuites>");
    s
}

fn detail_text(r: &CaseResult) -> String {
    let mut d = String::new();
    if let Some(f) = &r.failure {
        let _ = writeln!(
            d,
            "requirement: {} {}\nexpected: {}\nseen: {}",
            f.req,
            quote(f.req),
            f.expected,
            f.seen
        );
    }
    if let Some(m) = &r.message {
        let _ = writeln!(d, "{m}");
    }
    for note in &r.notes {
        let _ = writeln!(d, "{note}");
    }
    for l in shown(&r.log).0 {
        let _ = writeln!(d, "{}", frame_line(l));
    }
    d
}

/// A pcapng capture of `log`: one Ethernet interface per port of the device, `ports` of them
/// (named `port<p>`, nanosecond timestamps, frames with their FCS), one packet per frame at its
/// simulated time with its direction in `epb_flags` (outbound: sent by the device; inbound: sent
/// to it) and a comment naming the case. A case that ended before any frame crossed a port gets
/// a capture of its interfaces alone.
pub fn pcapng(case_id: &str, ports: u16, log: &[Logged]) -> Result<Vec<u8>, String> {
    let bad = |e: pcap_file::PcapError| format!("cannot write pcapng: {e}");
    let section = SectionHeaderBlock {
        endianness: pcap_file::Endianness::Little,
        major_version: 1,
        minor_version: 0,
        section_length: -1,
        options: vec![],
    };
    let mut w = PcapNgWriter::with_section_header(Vec::new(), section).map_err(bad)?;
    let ports = log
        .iter()
        .map(|l| u32::from(l.port) + 1)
        .max()
        .unwrap_or(1)
        .max(u32::from(ports));
    for p in 0..ports {
        let name = format!("port{p}");
        let idb = InterfaceDescriptionBlock {
            linktype: DataLink::ETHERNET,
            snaplen: 0,
            options: vec![
                InterfaceDescriptionOption::IfName(Cow::Owned(name)),
                InterfaceDescriptionOption::IfDescription(Cow::Owned(format!(
                    "device under test, case {case_id}"
                ))),
                InterfaceDescriptionOption::IfTsResol(9),
                InterfaceDescriptionOption::IfFcsLen(4),
            ],
        };
        w.write_pcapng_block(idb).map_err(bad)?;
    }
    for l in log {
        let len = u32::try_from(l.bytes.len()).map_err(|_| "a frame is too long".to_owned())?;
        let comment = if l.from_dut {
            "sent by the device"
        } else {
            "sent to the device"
        };
        let epb = EnhancedPacketBlock {
            interface_id: u32::from(l.port),
            timestamp: Duration::from_nanos(l.time_ns),
            original_len: len,
            data: Cow::Borrowed(&l.bytes),
            options: vec![
                EnhancedPacketOption::Flags(if l.from_dut { 2 } else { 1 }),
                EnhancedPacketOption::Comment(Cow::Borrowed(comment)),
            ],
        };
        w.write_pcapng_block(epb).map_err(bad)?;
    }
    Ok(w.into_inner())
}

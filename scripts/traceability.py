#!/usr/bin/env python3
"""Requirement traceability for docs/spec/.

Every requirement in docs/spec/*.md is a bullet that starts with its id in bold, for example
`- **WIRE-2.5-3** A receiver MUST ...`. This script finds them all, then looks for their ids in
the Rust sources and in the golden vectors, and reports for each requirement where it is
implemented (cited in non-test code) and where it is checked (cited in test code or exercised by a
golden vector that the test suite replays).

Test code is: a file under a `tests/` directory, a conformance case (conformance/src/cases/), or
any line at or after the first `#[cfg(test)]` of a source file (test modules sit at the end of
their file). The rest of the conformance crate (its harness and backends) is neither, except
conformance/src/vectors*, the frame JSON codec of the `ethlink` command and the vector generator,
which is code.

A requirement whose text starts with `*Internal.*` constrains the inside of a device and cannot be
observed at its ports; it must still be implemented and tested (by a unit test that looks inside),
and the report marks it so that a conformance suite knows it has no case for it.

Usage:
  scripts/traceability.py                 print the report: per requirement, its level, status
                                          and every place (file:line) that implements or checks it
  scripts/traceability.py --summary       print one line per requirement with counts only
  scripts/traceability.py --check         also exit 1 if a MUST-level requirement lacks code or
                                          a test and is not listed in docs/spec/deferred.txt
  scripts/traceability.py --json          print the report as JSON
  scripts/traceability.py --markdown F    also write the report as a Markdown table to F
"""

import argparse
import json
import pathlib
import re
import signal
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SPEC_DIR = ROOT / "docs" / "spec"
DEFERRED = SPEC_DIR / "deferred.txt"
ID_RE = re.compile(r"\b([A-Z]{2,}-\d+(?:\.\d+)*-\d+)\b")
REQ_RE = re.compile(r"^\s*[-*]\s+\*\*([A-Z]{2,}-\d+(?:\.\d+)*-\d+)\*\*\s*(.*)$")
LEVELS = ["MUST NOT", "MUST", "REQUIRED", "SHALL NOT", "SHALL", "SHOULD NOT", "SHOULD",
          "RECOMMENDED", "MAY", "OPTIONAL"]
MUST_LEVELS = ("MUST", "MUST NOT", "REQUIRED", "SHALL", "SHALL NOT")
SKIP_DIRS = {"target", ".git", "corpus", "artifacts"}


def spec_requirements():
    reqs = {}
    for md in sorted(SPEC_DIR.glob("*.md")):
        lines = md.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            m = REQ_RE.match(lines[i])
            if not m:
                i += 1
                continue
            rid, text = m.group(1), [m.group(2)]
            i += 1
            # Continuation lines: indented, not a new bullet, not blank.
            while i < len(lines) and lines[i].startswith("  ") and not REQ_RE.match(lines[i]):
                text.append(lines[i].strip())
                i += 1
            body = " ".join(text)
            if "Withdrawn" in body[:20] or body.startswith("Not assigned"):
                continue
            level = next((lv for lv in LEVELS if re.search(r"\b%s\b" % lv, body)), "informative")
            if rid in reqs:
                sys.exit(f"duplicate requirement id {rid} in {md.name}")
            reqs[rid] = {"id": rid, "doc": md.name, "line": i - len(text) + 1, "level": level,
                         "internal": body.startswith("*Internal.*"), "text": body,
                         "code": [], "tests": []}
    return reqs


def rust_files():
    for path in ROOT.rglob("*.rs"):
        if any(part in SKIP_DIRS for part in path.relative_to(ROOT).parts):
            continue
        yield path


def scan(reqs):
    for path in rust_files():
        rel = path.relative_to(ROOT).as_posix()
        in_tests_dir = "/tests/" in f"/{rel}"
        # The conformance suite checks requirements; it implements none of them. Its
        # conformance/src/vectors/ is the exception: the frame JSON decoder and encoder of
        # `ethlink decode` and `ethlink encode`, and the generator of the golden vectors.
        if (rel.startswith("conformance/") and not rel.startswith("conformance/src/cases/")
                and not rel.startswith("conformance/src/vectors")):
            continue
        in_test = in_tests_dir or rel.startswith("conformance/src/cases/")
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "#[cfg(test)]" in line:
                in_test = True
            if "//" not in line and '"' not in line:
                continue
            for rid in ID_RE.findall(line):
                if rid in reqs:
                    where = f"{rel}:{n}"
                    (reqs[rid]["tests"] if in_test else reqs[rid]["code"]).append(where)
    vectors = ROOT / "conformance" / "vectors" / "vectors.json"
    if vectors.exists():
        data = json.loads(vectors.read_text(encoding="utf-8"))
        items = data.get("vectors", data) if isinstance(data, dict) else data
        for v in items:
            ids = set(v.get("spec", []) or v.get("spec_ids", []))
            err = v.get("expected_error") or {}
            if isinstance(err, dict) and err.get("spec"):
                ids.add(err["spec"])
            for rid in ids:
                if rid in reqs:
                    reqs[rid]["tests"].append(f"vector:{v.get('name')}")


def normalise(text):
    """Text with backquotes removed and runs of white space made one space."""
    return re.sub(r"\s+", " ", text.replace("`", "")).strip()


def quote_matches(rid, quote, reqs):
    """Whether `quote` (the `//#` lines after an id, `[...]` marking left-out words) reads as the
    current text of requirement `rid`: each piece found in order."""
    text, pos = normalise(reqs[rid]["text"]), 0
    body = quote.split(None, 1)[1] if quote.startswith(rid) and " " in quote else ""
    for piece in body.split("[...]"):
        piece = normalise(piece).rstrip(".")
        if not piece:
            continue
        at = text.find(piece, pos)
        if at < 0:
            return False
        pos = at + len(piece)
    return True


def stale_quotes(reqs):
    """(file:line, id) of every `//#` quote whose words are not the requirement's current text."""
    out = []
    for path in rust_files():
        rel = path.relative_to(ROOT).as_posix()
        lines = path.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            m = re.match(r"\s*//#\s?(.*)", lines[i])
            if not m:
                i += 1
                continue
            start, cur, parts = i, None, []
            while i < len(lines) and re.match(r"\s*//#", lines[i]):
                text = re.match(r"\s*//#\s?(.*)", lines[i]).group(1)
                head = re.match(r"([A-Z]{2,}-\d+(?:\.\d+)*-\d+)\s", text + " ")
                if head and head.group(1) in reqs:
                    cur = [head.group(1), text, i + 1]
                    parts.append(cur)
                elif cur:
                    cur[1] += " " + text
                i += 1
            for rid, quote, line in parts:
                if not quote_matches(rid, quote, reqs):
                    out.append((f"{rel}:{line}", rid))
    return out


def deferred():
    out = {}
    if DEFERRED.exists():
        for line in DEFERRED.read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                rid, _, why = line.partition(" ")
                out[rid] = why.strip()
    return out


def main():
    # Printing into a pager or `head` that closes early is not an error.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--summary", action="store_true")
    ap.add_argument("--markdown", metavar="FILE")
    args = ap.parse_args()

    reqs = spec_requirements()
    scan(reqs)
    later = deferred()
    for rid in later:
        if rid not in reqs:
            sys.exit(f"docs/spec/deferred.txt names {rid}, which no spec defines")

    rows = sorted(reqs.values(), key=lambda r: [int(x) if x.isdigit() else x
                                                 for x in re.split(r"[-.]", r["id"])])
    failures = []
    for r in rows:
        r["status"] = ("complete" if r["code"] and r["tests"] else
                       "deferred" if r["id"] in later else
                       "untested" if r["code"] else
                       "unimplemented" if r["tests"] else "missing")
        must = r["level"] in MUST_LEVELS
        if must and r["status"] not in ("complete", "deferred"):
            failures.append(r)

    if args.json:
        print(json.dumps({"requirements": rows, "deferred": later}, indent=2))
    else:
        width = max((len(r["id"]) for r in rows), default=10)
        for r in rows:
            note = f"  ({later[r['id']]})" if r["status"] == "deferred" else ""
            internal = " internal" if r["internal"] else ""
            if args.summary:
                print(f"{r['id']:<{width}}  {r['level']:<11} {r['status']:<13} "
                      f"code:{len(r['code']):<3} tests:{len(r['tests']):<3}{internal}{note}")
                continue
            print(f"{r['id']}  {r['level']}  {r['status']}{internal}  "
                  f"(docs/spec/{r['doc']}:{r['line']}){note}")
            for where in r["code"]:
                print(f"    implemented  {where}")
            for where in r["tests"]:
                print(f"    checked      {where}")
        counts = {}
        for r in rows:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        must = [r for r in rows if r["level"] in MUST_LEVELS]
        print(f"\n{len(rows)} requirements: " +
              ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
        print(f"{len(must)} at MUST level: "
              f"{sum(r['status'] == 'complete' for r in must)} implemented and tested, "
              f"{sum(r['internal'] for r in must)} of them internal (not observable at a "
              f"device's ports)")

    if args.markdown:
        lines = ["# Requirement traceability", "",
                 "Generated by `scripts/traceability.py --markdown`.", "",
                 "| id | level | status | implemented in | checked by |", "|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['id']} | {r['level']}{' (internal)' if r['internal'] else ''} | "
                         f"{r['status']} | {'<br>'.join(r['code'])} | {'<br>'.join(r['tests'])} |")
        pathlib.Path(args.markdown).write_text("\n".join(lines) + "\n", encoding="utf-8")

    stale = stale_quotes(reqs)
    if stale:
        for where, rid in stale:
            print(f"warning: {where}: the quote of {rid} is not its current text "
                  f"(scripts/fix_quotes.py rewrites it)", file=sys.stderr)
    if args.check and stale:
        print(f"error: {len(stale)} requirement quotes differ from docs/spec/", file=sys.stderr)
        sys.exit(1)
    if args.check and failures:
        for r in failures:
            print(f"error: {r['id']} ({r['level']}) is {r['status']}: "
                  f"cite it where it is implemented and in a test that checks it", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Mutation testing of the reference devices, with the conformance suite as the yardstick.

cargo-mutants mutates one crate at a time and judges every mutant by the conformance cases of
the role that crate implements, run against the in-process reference device
(conformance/tests/yardstick.rs): a mutant is caught when one of those cases no longer gives the
reference's verdict. Unit tests of the crate itself are not run, so the table measures the
suite, not the crate's own tests.

    crate          role       cases                          files left out
    link/          link_end   LE-*, VEC-*                    link/src/harness.rs
    endpoint/      endpoint   EPT-*                          endpoint/src/harness.rs
    switch-model/  switch     SWT-*                          (none)

The harness files are test benches (two devices joined by a simulated wire), not part of any
device, so no conformance case can reach them. ROLES[...]["skip"] names, with the reason for
each, functions a device of the role never runs (the link crate's paths that only the endpoint,
the switch or the fabric call): their mutants are sampled with the rest and counted apart, as
"not run by the role", outside the viable ones; `--list-skipped` prints the functions.

Usage:
    scripts/mutants.py                      # every mutant of the three crates (hours on 2 cores)
    scripts/mutants.py --sample 16          # every 16th mutant of each crate (about an hour)
    scripts/mutants.py --roles switch --sample 64 --shard 3
    scripts/mutants.py --report-only        # the table again from the last run's outcomes
    scripts/mutants.py --sample 500 --in-place --check   # the test command's smoke test

Needs cargo-mutants (`cargo install --locked cargo-mutants`; written against 27.1). Each role's
outcomes go to target/mutants/<role>/mutants.out/; the table (markdown) to
target/mutants/table.md and a summary to target/mutants/summary.json. A miss is listed by file,
line and the mutation; docs/conformance-coverage.md says for each miss of the published run why
it is not caught (equivalent, internal, not observable at the boundary) or which case now
catches it.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ROLES = {
    "link_end": {
        "package": "ethlink-link",
        "files": ["link/src/*.rs"],
        "exclude": ["link/src/harness.rs"],
        # Functions of the link crate that a link end never runs: the shared-buffer and
        # pre-checked paths the endpoint, the switch and the fabric use, and counters the
        # boundary does not report. Their mutants belong to those roles' measures.
        "skip": {
            r"Link::handle_frame_fcs\b": "pre-checked FCS path: link harness and benches only",
            r"Link::poll_transmit_shared\b": "shared-buffer transmit: endpoint, switch, fabric",
            r"Ring<M>::shared\b": "shared-buffer transmit: endpoint, switch, fabric",
            r"Provenance::": "frame provenance: the endpoint's target",
            r"Outgoing::vouch\b": "frames vouched for in place: endpoint and switch",
            r"Layout::in_place\b": "frames built in place: the switch's VOQs",
            r"Link::rx_grant\b": "grant query: the switch's cut-through",
            r"Link::is_idle\b": "idleness query: the endpoint and the simulators",
            r"Counters::(discarded|frames_arrived)\b": "derived sums the boundary does not report",
            r"Slots<T>::iter\b": "iteration for Debug formatting only",
            r"Link::stomp_last\b": "ending a frame begun on its header: the switch's cut-through",
            r"Link::handle_frame_deliver\b": "delivery into the caller's buffer: endpoint, fabric",
            r"SharedFrame::": "shared-buffer transmit: endpoint, switch, fabric",
            r"Link::agreed\b": "agreed-parameters query: endpoint and switch",
        },
        "test": "yardstick_link_end",
    },
    "endpoint": {
        "package": "ethlink-endpoint",
        "files": ["endpoint/src/*.rs", "endpoint/src/endpoint/*.rs"],
        "exclude": ["endpoint/src/harness.rs"],
        # The fabric's queries, which the conformance boundary never makes.
        "skip": {
            r"Endpoint::is_usable\b": "port usability query: the fabric's path choice",
            r"SpaceMem::pieces\b": "memory as held (runs, descriptions): the fabric's checks",
            r"Memory::contents\b": "memory as held (runs, descriptions): the fabric's checks",
            r"fmt::Debug for Bytes\b": "Debug formatting only",
        },
        "test": "yardstick_endpoint",
    },
    "switch": {
        "package": "ethlink-switch",
        "files": ["switch-model/src/*.rs", "switch-model/src/switch/*.rs"],
        "exclude": [],
        "skip": {
            r"Switch::handle_frame_fcs\b": "pre-checked FCS path: the fabric only",
            r"Switch::handle_frame_by_ref\b": "frames lent by the caller: the fabric only",
            r"PortCounters::discarded\b": "a derived sum the boundary does not report",
            r"Timers::grow\b": "never needed: the timers are sized for every key at construction",
        },
        "test": "yardstick_switch",
    },
}

OUTCOMES = ("caught", "missed", "unviable", "timeout", "skipped")


def run_role(role: str, args: argparse.Namespace, out: Path) -> float:
    spec = ROLES[role]
    cmd = [
        "cargo",
        "mutants",
        "--package",
        spec["package"],
        "--test-package",
        "ethlink-conformance",
        "--baseline",
        "skip",
        "--timeout",
        str(args.timeout),
        "--build-timeout",
        "900",
        "--jobs",
        str(args.jobs),
        "--output",
        str(out),
    ]
    for f in spec["files"]:
        cmd += ["--file", f]
    for f in spec["exclude"]:
        cmd += ["--exclude", f]
    if args.in_place:
        cmd += ["--in-place"]
    if args.sample > 1:
        cmd += ["--shard", f"{args.shard}/{args.sample}", "--sharding", "round-robin"]
    cmd += ["--", "--test", "yardstick", "--", spec["test"], "--exact"]
    print("$ " + " ".join(cmd), flush=True)
    out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    # cargo-mutants exits 2 when a mutant is missed and 3 on a timeout: both are results.
    rc = subprocess.call(cmd, cwd=ROOT)
    wall = time.monotonic() - start
    if rc not in (0, 2, 3):
        sys.exit(f"cargo mutants for {role} exited with status {rc}")
    (out / "wall_s").write_text(f"{wall:.0f}\n")
    (out / "sample").write_text(f"{args.shard}/{args.sample}\n")
    return wall


def summarise(role: str, out: Path) -> dict:
    path = out / "mutants.out" / "outcomes.json"
    if not path.exists():
        sys.exit(f"no outcomes for {role}: {path} is missing (run without --report-only)")
    data = json.loads(path.read_text())
    counts = {k: 0 for k in OUTCOMES}
    missed = []
    for o in data["outcomes"]:
        scenario = o["scenario"]
        if not isinstance(scenario, dict) or "Mutant" not in scenario:
            continue  # the baseline, when one ran
        summary = o["summary"].lower()
        key = {
            "caughtmutant": "caught",
            "missedmutant": "missed",
            "unviable": "unviable",
            "timeout": "timeout",
        }.get(summary)
        if key is None:
            sys.exit(f"{role}: outcome {o['summary']!r} not understood")
        name = scenario["Mutant"]["name"]
        if any(re.search(p, name) for p in ROLES[role]["skip"]):
            # Sampled with the rest, so that the sample stays every N-th mutant of the crate,
            # then set apart: a device of this role never runs that function.
            key = "skipped"
        counts[key] += 1
        if key == "missed":
            missed.append(name)
    wall_file = out / "wall_s"
    sample_file = out / "sample"
    viable = counts["caught"] + counts["missed"] + counts["timeout"]
    return {
        "role": role,
        "package": ROLES[role]["package"],
        "version": data.get("cargo_mutants_version"),
        **counts,
        "viable": viable,
        # A timeout is a device that stopped answering in time: the suite noticed it.
        "caught_pct": round(100.0 * (counts["caught"] + counts["timeout"]) / viable, 1)
        if viable
        else None,
        "wall_s": int(wall_file.read_text()) if wall_file.exists() else None,
        "sample": sample_file.read_text().strip() if sample_file.exists() else None,
        "missed_mutants": sorted(missed),
    }


def table(rows: list[dict]) -> str:
    lines = [
        "Sample per crate: shard K/N of cargo-mutants' round-robin sharding (every N-th mutant "
        "from the K-th); 0/1 is every mutant.",
        "",
        "| crate | role | sample | caught | missed | timeout | unviable | not run by the role | caught of viable | wall time |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        pct = "-" if r["caught_pct"] is None else f"{r['caught_pct']:.1f} %"
        wall = "-" if r["wall_s"] is None else f"{r['wall_s'] // 60} min {r['wall_s'] % 60} s"
        lines.append(
            f"| {r['package']} | {r['role']} | {r['sample'] or '?'} | {r['caught']} | {r['missed']} "
            f"| {r['timeout']} "
            f"| {r['unviable']} | {r['skipped']} | {pct} | {wall} |"
        )
    for r in rows:
        if r["missed_mutants"]:
            lines += ["", f"Missed ({r['role']}):", ""]
            lines += [f"- `{m}`" for m in r["missed_mutants"]]
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--roles", default="link_end,endpoint,switch",
                   help="comma-separated roles among link_end, endpoint, switch")
    p.add_argument("--sample", type=int, default=1,
                   help="run every N-th mutant of each crate (default 1: all)")
    p.add_argument("--shard", type=int, default=0,
                   help="which of the N round-robin shards to run with --sample (default 0)")
    p.add_argument("--jobs", type=int, default=1, help="mutants built and tested at once")
    p.add_argument("--timeout", type=int, default=60,
                   help="seconds one mutant's cases may take before it counts as a timeout")
    p.add_argument("--out", type=Path, default=ROOT / "target" / "mutants")
    p.add_argument("--in-place", action="store_true",
                   help="mutate the working tree itself and build in its target/ (no copy, no "
                        "full first build; the tree must not be edited meanwhile)")
    p.add_argument("--check", action="store_true",
                   help="exit 1 unless every role ran at least one mutant to an outcome (a "
                        "smoke test of the pipeline, for the test command)")
    p.add_argument("--list-skipped", action="store_true",
                   help="print the functions each role sets apart and why; run nothing")
    p.add_argument("--report-only", action="store_true",
                   help="run nothing: summarise the outcomes already under --out")
    args = p.parse_args()

    roles = [r.strip() for r in args.roles.split(",") if r.strip()]
    for r in roles:
        if r not in ROLES:
            sys.exit(f"unknown role {r!r}: expected one of {', '.join(ROLES)}")
    if args.sample < 1 or not 0 <= args.shard < args.sample:
        sys.exit("--shard must be at least 0 and below --sample, and --sample at least 1")
    if not args.report_only and shutil.which("cargo-mutants") is None:
        sys.exit("cargo-mutants is not installed: cargo install --locked cargo-mutants")

    if args.list_skipped:
        for role in roles:
            for pattern, why in ROLES[role]["skip"].items():
                print(f"{role}: {pattern}: {why}")
        return

    rows = []
    for role in roles:
        out = args.out / role
        if not args.report_only:
            run_role(role, args, out)
        rows.append(summarise(role, out))
    text = table(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "table.md").write_text(text)
    (args.out / "summary.json").write_text(json.dumps({"sample": args.sample, "shard": args.shard,
                                                       "roles": rows}, indent=2) + "\n")
    print(text)
    if args.check:
        empty = [r["role"] for r in rows if not any(r[k] for k in OUTCOMES)]
        if empty:
            sys.exit(f"no mutant ran to an outcome for {', '.join(empty)}")


if __name__ == "__main__":
    main()

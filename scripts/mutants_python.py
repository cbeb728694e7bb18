#!/usr/bin/env python3
"""Mutation testing of the Python example device, judged by the conformance suite.

What it does
    Takes a copy of examples/conformance/link_end.py (the Python link end of
    docs/conformance.md §8) into a temporary directory, makes the mutants of that copy with
    mutmut (a mutation tool from PyPI, pinned below), and runs the link-end cases of the
    conformance suite against each mutant through `--dut-cmd`:

        target/debug/ethlink conformance --role link_end \
            --dut-cmd "python3 <copy>/link_end.py" --jobs 2 --case-timeout-s 20 --filter ...

    A mutant is *caught* when a run exits non-zero (a MUST case failed or ended in a harness
    error), *missed* when every run exits 0. To keep a caught mutant cheap the cases run in two
    stages: first the `LE-*` cases, and only when they all pass the rest (`VEC-*`, the golden
    vectors; every case but `LE-*` if the catalogue ever holds another prefix). A stage that
    outlives its time limit is stopped (SIGTERM, which makes ethlink stop its devices) and the
    mutant counts as a *timeout*; a mutant that passes but takes far longer than the unmutated
    device is *suspicious* (mutmut's word), listed with the missed ones.

    mutmut is used as the mutation engine (its parser and mutation operators, through its
    library API: `list_mutations` and `mutate`); this script runs the test command itself, so
    that it can sample, stage and time-limit the runs. The file in the work tree is never
    written: the copy is taken once at the start (with a copy of the ethlink binary, so that a
    build during the run changes neither), every mutant is written over the copy, and the
    copy's directory is removed at the end. A snapshot of the source the mutants were made
    from is kept beside the results (results.json: results.source.py), so that the line numbers
    of the results stay meaningful when examples/conformance/link_end.py changes afterwards.

How to run it
    python3 scripts/mutants_python.py                 # every mutant (about 1,700; long)
    python3 scripts/mutants_python.py --sample 20     # every 20th mutant (index % 20 == 0)
    python3 scripts/mutants_python.py --sample 20 --offset 7   # another 20th (index % 20 == 7)
    python3 scripts/mutants_python.py --sample 3 --limit 100 --json out.json

    Options: --sample N, --limit K, --json OUT (default target/mutants/python/results.json),
    --jobs N (ethlink's, default 2), --case-timeout-s S (default 20), --stage-timeout-s S
    (default: 10 times the stage's baseline, at least 30 s), --python CMD (the interpreter of
    the device, default python3), --source PATH (default examples/conformance/link_end.py),
    --git-rev REV (mutate the file as commit REV has it rather than the work tree's copy).
    `--help` lists them all.

    At the end it prints a markdown table (caught, missed, timeout, suspicious, total run,
    percent caught of the run, wall time) and writes the JSON results: the tool and its
    version, the mutants generated, selected and run, the counts, the wall time, the baseline,
    and every missed or suspicious mutant with its line number, original line, mutated line, a
    unified diff and the cases whose verdict differed from the unmutated device's (a mutant
    that turns a Pass into NonStrict, Unsupported or Inconclusive still exits 0). The file is
    rewritten after every mutant, with "complete": false until the run ends, so an interrupted
    run leaves its partial results.

What it needs
    Python 3.9 or newer with the venv module, cargo (it runs `cargo build -q -p ethlink-cli`
    once), and PyPI: it makes the virtual environment target/mutants/python/venv and installs
    mutmut there when it is missing or of another version, then runs itself again with that
    environment's interpreter. The device under test runs with the `--python` interpreter (the
    one on PATH by default), standard library only.

Exit status: 0 when the run completed (whatever the counts), 1 when the unmutated device does
not pass (no mutant runs then) or a step fails, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mutants_proc import stop

TOOL = "mutmut"
TOOL_VERSION = "2.5.1"  # the 2.x line: a library API and arbitrary runners (3.x is pytest-only)

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "target" / "mutants" / "python"
VENV = OUT_DIR / "venv"
VENV_PYTHON = VENV / "bin" / "python"
ETHLINK = ROOT / "target" / "debug" / "ethlink"
DEFAULT_SOURCE = ROOT / "examples" / "conformance" / "link_end.py"
DEFAULT_JSON = OUT_DIR / "results.json"
ROLE = "link_end"

# A passing mutant slower than this many times the baseline is "suspicious".
SUSPICIOUS_FACTOR = 5.0
# A stage's default time limit: this many times its baseline, and never less than the floor.
TIMEOUT_FACTOR = 10.0
TIMEOUT_FLOOR_S = 30.0
# How long a stopped ethlink gets to stop its devices before it is killed.


class Failure(Exception):
    """A step that cannot go on; its message is printed as the error."""


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# The tool: a virtual environment with the pinned mutmut, and this script run inside it


def installed_tool_version() -> str | None:
    if not VENV_PYTHON.exists():
        return None
    r = subprocess.run(
        [str(VENV_PYTHON), "-c", "import importlib.metadata as m; print(m.version('mutmut'))"],
        capture_output=True,
        text=True,
    )
    return r.stdout.strip() if r.returncode == 0 else None


def ensure_tool() -> None:
    """Makes the virtual environment and installs the pinned mutmut when needed."""
    if installed_tool_version() == TOOL_VERSION:
        return
    if not VENV_PYTHON.exists():
        log(f"making the virtual environment {VENV.relative_to(ROOT)}")
        r = subprocess.run([sys.executable, "-m", "venv", str(VENV)])
        if r.returncode != 0:
            raise Failure(f"`{sys.executable} -m venv {VENV}` failed (is the venv module installed?)")
    log(f"installing {TOOL}=={TOOL_VERSION} from PyPI into {VENV.relative_to(ROOT)}")
    r = subprocess.run(
        [str(VENV_PYTHON), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         f"{TOOL}=={TOOL_VERSION}"]
    )
    if r.returncode != 0 or installed_tool_version() != TOOL_VERSION:
        raise Failure(f"could not install {TOOL}=={TOOL_VERSION} into {VENV}")


def in_venv() -> bool:
    return Path(sys.prefix).resolve() == VENV.resolve()


# --------------------------------------------------------------------------------------------
# Runs of the suite


def build_ethlink() -> None:
    log("building ethlink (cargo build -q -p ethlink-cli)")
    try:
        r = subprocess.run(["cargo", "build", "-q", "-p", "ethlink-cli"], cwd=ROOT)
    except FileNotFoundError:
        raise Failure("cargo is not on PATH: it is needed to build target/debug/ethlink")
    if r.returncode != 0 or not ETHLINK.exists():
        raise Failure("`cargo build -q -p ethlink-cli` failed")


def catalogue_ids(ethlink: Path) -> list[str]:
    r = subprocess.run(
        [str(ethlink), "conformance", "--list", "--role", ROLE],
        cwd=ROOT, capture_output=True, text=True,
    )
    if r.returncode != 0:
        raise Failure(f"`ethlink conformance --list --role {ROLE}` failed:\n{r.stderr}")
    return [line.split()[0] for line in r.stdout.splitlines() if line and not line[0].isspace()]


class Stage:
    """One run of the suite on a subset of the cases."""

    def __init__(self, name: str, pattern: str | None):
        self.name = name
        self.pattern = pattern
        self.timeout_s = 0.0
        self.baseline_s = 0.0
        self.baseline_verdicts: dict[str, str] = {}

    def command(self, dut_cmd: str, args: argparse.Namespace, report: Path | None,
                program: str | None = None) -> list[str]:
        cmd = [program or str(args.ethlink), "conformance", "--role", ROLE, "--dut-cmd", dut_cmd,
               "--jobs", str(args.jobs), "--case-timeout-s", str(args.case_timeout_s)]
        if self.pattern is not None:
            cmd += ["--filter", self.pattern]
        if report is not None:
            cmd += ["--json", str(report)]
        return cmd


def run_stage(stage: Stage, dut_cmd: str, args: argparse.Namespace, work: Path,
              timeout_s: float | None) -> dict:
    """Runs one stage; returns its exit status (None on a timeout), wall time, verdicts and
    the tail of its output."""
    report = work / f"report-{stage.name}.json"
    report.unlink(missing_ok=True)
    out_path = work / f"out-{stage.name}.txt"
    start = time.monotonic()
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(stage.command(dut_cmd, args, report), cwd=ROOT,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            code: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            code = None
            stop(proc, str(work))
        except BaseException:
            # Interrupted: ethlink runs in a process group of its own, which Ctrl-C does not reach.
            stop(proc, str(work))
            raise
    elapsed = time.monotonic() - start
    verdicts: dict[str, str] = {}
    first_failure = ""
    if code is not None and report.exists():
        try:
            cases = json.loads(report.read_text())["cases"]
            verdicts = {c["id"]: c["verdict"] for c in cases}
            bad = [c for c in cases if c["verdict"] not in ("Pass", "Unsupported")]
            if bad:
                first_failure = f"{bad[0]['id']} {bad[0]['verdict']}: {bad[0].get('message', '')}"
        except (ValueError, KeyError, TypeError):
            verdicts = {}
    tail = out_path.read_text(errors="replace").splitlines()[-2:]
    return {"code": code, "elapsed_s": elapsed, "verdicts": verdicts, "tail": tail,
            "first_failure": first_failure[:600]}


def make_stages(ids: list[str]) -> list[Stage]:
    le = [i for i in ids if i.startswith("LE-")]
    rest = [i for i in ids if not i.startswith("LE-")]
    if not le or not rest:
        return [Stage("all", None)]
    second = "VEC-*" if all(i.startswith("VEC-") for i in rest) else None
    return [Stage("LE", "LE-*"), Stage("VEC" if second else "all", second)]


# --------------------------------------------------------------------------------------------
# Mutants


def list_mutants(source: str, filename: str) -> list:
    import mutmut  # only in the virtual environment

    return mutmut.list_mutations(mutmut.Context(source=source, filename=filename))


def mutated_source(source: str, filename: str, mutation_id) -> str:
    import mutmut

    context = mutmut.Context(source=source, mutation_id=mutation_id, filename=filename)
    text, count = mutmut.mutate(context)
    if count != 1:
        raise Failure(f"mutmut made {count} mutations for one id (line {mutation_id.line_number + 1})")
    return text


def describe(original: str, mutated: str, mutation_id) -> dict:
    """Line number (1-based), original and mutated line, and a unified diff of the mutant."""
    old_lines = original.splitlines()
    new_lines = mutated.splitlines()
    n = mutation_id.line_number
    diff = "".join(
        difflib.unified_diff(
            original.splitlines(keepends=True), mutated.splitlines(keepends=True),
            "link_end.py", "link_end.py (mutant)", n=0,
        )
    )
    changed = [i for i, (a, b) in enumerate(zip(old_lines, new_lines)) if a != b]
    return {
        "line": n + 1,
        "original": old_lines[n].strip() if n < len(old_lines) else mutation_id.line,
        "mutated": new_lines[n].strip() if n < len(new_lines) else "",
        "lines_changed": [i + 1 for i in changed],
        "diff": diff,
    }


# --------------------------------------------------------------------------------------------
# Results


def summary_counts(results: list[dict]) -> dict:
    counts = {"caught": 0, "missed": 0, "timeout": 0, "suspicious": 0}
    for r in results:
        counts[r["outcome"]] += 1
    return counts


def markdown_table(counts: dict, run: int, wall_s: float) -> str:
    pct = f"{100.0 * counts['caught'] / run:.1f} %" if run else "-"
    return "\n".join([
        "| role | caught | missed | timeout | suspicious | total run | caught of run | wall time |",
        "|---|---|---|---|---|---|---|---|",
        f"| link_end (Python example device) | {counts['caught']} | {counts['missed']} "
        f"| {counts['timeout']} | {counts['suspicious']} | {run} | {pct} | {wall_s:.0f} s |",
    ])


def write_results(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.replace(path)


def git_show(rev: str, source: Path) -> str:
    try:
        rel = source.relative_to(ROOT)
    except ValueError:
        raise Failure(f"--git-rev needs a --source inside {ROOT}")
    r = subprocess.run(["git", "show", f"{rev}:{rel.as_posix()}"], cwd=ROOT,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise Failure(f"`git show {rev}:{rel}` failed: {r.stderr.strip()}")
    return r.stdout


def git_state(source: Path) -> dict:
    def git(*a: str) -> str:
        r = subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else ""

    try:
        rel = str(source.resolve().relative_to(ROOT))
    except ValueError:
        return {}
    return {"head": git("rev-parse", "HEAD"),
            "source_differs_from_head": bool(git("status", "--porcelain", "--", rel))}


# --------------------------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Mutation testing of examples/conformance/link_end.py with mutmut, "
                    "judged by the link-end cases of the conformance suite.")
    p.add_argument("--sample", type=int, default=1, metavar="N",
                   help="run every N-th mutant only (index %% N == 0); default 1, every mutant")
    p.add_argument("--offset", type=int, default=0, metavar="K",
                   help="with --sample N, run the mutants whose index %% N == K (default 0): "
                        "another sample of the same size")
    p.add_argument("--limit", type=int, default=None, metavar="K",
                   help="run at most K mutants (after --sample)")
    p.add_argument("--json", type=Path, default=DEFAULT_JSON, metavar="OUT",
                   help="results file (default target/mutants/python/results.json)")
    p.add_argument("--jobs", type=int, default=2, help="ethlink's --jobs (default 2)")
    p.add_argument("--case-timeout-s", type=int, default=20, metavar="S",
                   help="ethlink's --case-timeout-s (default 20)")
    p.add_argument("--stage-timeout-s", type=float, default=None, metavar="S",
                   help="wall-time limit of one stage for a mutant (default: 10 times the "
                        "stage's baseline, at least 30 s)")
    p.add_argument("--git-rev", default=None, metavar="REV",
                   help="take the device as commit REV has it (git show REV:PATH) instead of "
                        "the work tree's file, which someone may be editing")
    p.add_argument("--python", default="python3", metavar="CMD",
                   help="the interpreter that runs the device (default python3)")
    p.add_argument("--source", type=Path, default=DEFAULT_SOURCE, metavar="PATH",
                   help="the device to mutate (default examples/conformance/link_end.py); "
                        "it is copied, never written")
    a = p.parse_args(argv)
    if a.sample < 1:
        p.error("--sample must be at least 1")
    if not 0 <= a.offset < a.sample:
        p.error("--offset must be at least 0 and below --sample")
    if a.limit is not None and a.limit < 0:
        p.error("--limit must not be negative")
    if a.jobs < 1:
        p.error("--jobs must be at least 1")
    if a.case_timeout_s < 1:
        p.error("--case-timeout-s must be at least 1")
    if not a.source.is_file():
        p.error(f"--source {a.source}: no such file")
    a.source = a.source.resolve()
    a.json = a.json.resolve()
    return a


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if not in_venv():
        ensure_tool()
        os.execv(str(VENV_PYTHON), [str(VENV_PYTHON), str(Path(__file__).resolve()), *argv])
    import mutmut

    if mutmut.__version__ != TOOL_VERSION:
        raise Failure(f"{TOOL} {mutmut.__version__} found, {TOOL_VERSION} expected")

    started = time.monotonic()
    build_ethlink()
    work = Path(tempfile.mkdtemp(prefix="ethlink-mutants-"))
    copy = work / "link_end.py"
    try:
        # The suite and the device are both copied once: a build or an edit in the work tree
        # during the run changes neither.
        # A hard link holds the built binary as it is (a rebuild writes a new file) without a
        # second copy of it on disk; a copy where the two places cannot share one.
        try:
            os.link(ETHLINK, work / "ethlink")
        except OSError:
            shutil.copy2(ETHLINK, work / "ethlink")
        args.ethlink = work / "ethlink"
        if args.git_rev:
            copy.write_text(git_show(args.git_rev, args.source))
        else:
            shutil.copyfile(args.source, copy)
        original = copy.read_text()
        snapshot = args.json.with_suffix(".source.py")
        snapshot.parent.mkdir(parents=True, exist_ok=True)
        snapshot.write_text(original)
        dut_cmd = f"{args.python} {shlex.quote(str(copy))}"

        stages = make_stages(catalogue_ids(args.ethlink))
        log("baseline: the unmutated copy, stages "
            + ", ".join(f"{s.name} ({s.pattern or 'every case'})" for s in stages))
        for s in stages:
            r = run_stage(s, dut_cmd, args, work, timeout_s=None)
            if r["code"] != 0:
                raise Failure(
                    f"the unmutated device does not pass stage {s.name} (exit {r['code']}), so no "
                    f"mutant can be judged: {' | '.join(r['tail'])}\n  first: {r['first_failure']}")
            s.baseline_s = r["elapsed_s"]
            s.baseline_verdicts = r["verdicts"]
            s.timeout_s = args.stage_timeout_s or max(TIMEOUT_FLOOR_S, TIMEOUT_FACTOR * r["elapsed_s"])
            log(f"  {s.name}: {len(r['verdicts'])} cases pass in {r['elapsed_s']:.1f} s "
                f"(limit per mutant {s.timeout_s:.0f} s)")
        baseline_total_s = sum(s.baseline_s for s in stages)

        mutation_ids = list_mutants(original, "link_end.py")
        selected = [i for i in range(len(mutation_ids)) if i % args.sample == args.offset]
        if args.limit is not None:
            selected = selected[: args.limit]
        log(f"{TOOL} {TOOL_VERSION}: {len(mutation_ids)} mutants, {len(selected)} selected "
            f"(--sample {args.sample} --offset {args.offset}"
            f"{'' if args.limit is None else f', --limit {args.limit}'})")

        results: list[dict] = []
        doc = {
            "tool": {"name": TOOL, "version": TOOL_VERSION},
            "role": ROLE,
            "device": str(args.source.relative_to(ROOT)) if args.source.is_relative_to(ROOT)
            else str(args.source),
            "source_sha256": hashlib.sha256(original.encode()).hexdigest(),
            "source_snapshot": str(snapshot.relative_to(ROOT)) if snapshot.is_relative_to(ROOT)
            else str(snapshot),
            "git": git_state(args.source),
            "git_rev": args.git_rev,
            "commands": [" ".join(shlex.quote(c) for c in s.command(
                f"{args.python} <copy>/link_end.py", args, None, "target/debug/ethlink"))
                for s in stages],
            "stages": [{"name": s.name, "filter": s.pattern, "cases": len(s.baseline_verdicts),
                        "baseline_s": round(s.baseline_s, 2), "timeout_s": round(s.timeout_s, 1)}
                       for s in stages],
            "sample": args.sample,
            "offset": args.offset,
            "limit": args.limit,
            "complete": False,
        }

        def flush() -> dict:
            counts = summary_counts(results)
            doc.update({
                "generated": len(mutation_ids),
                "selected": len(selected),
                "run": len(results),
                **counts,
                "wall_time_s": round(time.monotonic() - started, 1),
                "missed_mutants": [
                    {k: r[k] for k in ("index", "outcome", "line", "original", "mutated",
                                       "lines_changed", "diff", "elapsed_s", "verdict_changes")}
                    for r in results if r["outcome"] in ("missed", "suspicious")
                ],
                "mutants": [{k: r[k] for k in ("index", "line", "outcome", "stage", "exit",
                                               "elapsed_s")} for r in results],
            })
            write_results(args.json, doc)
            return counts

        for n, index in enumerate(selected, 1):
            mid = mutation_ids[index]
            text = mutated_source(original, "link_end.py", mid)
            copy.write_text(text)
            info = describe(original, text, mid)
            outcome, stage_name, code, elapsed, changes = "missed", None, 0, 0.0, []
            for s in stages:
                r = run_stage(s, dut_cmd, args, work, timeout_s=s.timeout_s)
                elapsed += r["elapsed_s"]
                stage_name, code = s.name, r["code"]
                if r["code"] is None:
                    outcome = "timeout"
                    break
                if r["code"] != 0:
                    outcome = "caught"
                    break
                changes += [f"{cid}: {v0} -> {r['verdicts'].get(cid, 'absent')}"
                            for cid, v0 in s.baseline_verdicts.items()
                            if r["verdicts"].get(cid) != v0]
            if outcome == "missed" and elapsed > SUSPICIOUS_FACTOR * baseline_total_s + 5.0:
                outcome = "suspicious"
            results.append({"index": index, "outcome": outcome, "stage": stage_name,
                            "exit": code, "elapsed_s": round(elapsed, 2),
                            "verdict_changes": changes, **info})
            counts = flush()
            mark = "" if outcome == "caught" else "  <--"
            log(f"[{n}/{len(selected)}] #{index} line {info['line']}: {outcome} "
                f"({stage_name}, {elapsed:.1f} s; so far {counts['caught']} caught, "
                f"{counts['missed']} missed, {counts['timeout']} timeout){mark}")

        doc["complete"] = True
        counts = flush()
        copy.write_text(original)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    wall = time.monotonic() - started
    print(markdown_table(counts, len(results), wall))
    print(f"\n{TOOL} {TOOL_VERSION}: {len(mutation_ids)} mutants generated, {len(results)} run; "
          f"results in {args.json}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Failure as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)

#!/usr/bin/env python3
"""Mutation testing of the SystemVerilog link end, judged by the conformance suite.

What it does
    Makes mutants of the RTL of hw/link_end/rtl (el_link_end.sv, el_rx.sv, el_tx.sv, el_sub.sv
    and el_up.sv; el_pkg.sv and el_ram.sv are left alone), one small edit each, and runs the
    link-end cases of the conformance suite against every mutant through the Verilator bridge:

        bash hw/link_end/build.sh --rtl <copy> --out <build>        # the mutant's el_bridge
        target/release/ethlink conformance --role link_end --dut-cmd <build>/el_bridge \
            --jobs 2 --json <report>

    There is no mutation tool for SystemVerilog in the project's toolbox, so the mutants are made
    here, by a small lexer (comments and strings blanked, brackets and parentheses matched) and
    a fixed list of operator classes chosen so that a mutant always parses:

        eq      `==` -> `!=` and `!=` -> `==`
        rel     `<` -> `<=`, `>` -> `>=`, `>=` -> `>` and a comparison `<=` -> `<`.  `<=` is also
                the nonblocking assignment: a `<=` is taken for a comparison only inside
                parentheses (an `if (...)` condition, a ternary's condition, a call) or when what
                stands before it is not an lvalue right after the start of a statement (so
                `ok = n <= x;` and `a && b <= c` are comparisons, `if (c) x[i] <= y;` is not).
        and     `&&` -> `||`
        inc     `+ 1` -> `- 1` and `- 1` -> `+ 1`, the 1 plain or sized (`16'd1`, `9'd1`, ...),
                but not in a size cast such as `(QAW + 1)'(x)` (a width, not arithmetic)
        flag    a nonblocking assignment of a one-bit variable (a scalar, or one bit of a vector
                with a single packed dimension), `x <= 1;` -> `x <= 0;` and back; reset values
                included

    Never mutated: comments and strings; `ifndef SYNTHESIS ... `endif blocks (debug prints) and
    any line with a `$` system task; the module header (parameters and ports); `localparam`,
    `parameter`, `typedef` and `import` statements; `for (...)` loop headers (their bounds walk
    fixed-size arrays: a mutant would index past them); anything inside `[...]` (widths, bit
    selects and part selects).

    The sites are numbered in a fixed order (the files in the order above, then position in the
    file), so `--sample N --offset K` (the sites whose number % N == K) picks the same mutants
    on every run of the same RTL. `--list` prints them without building anything.

    Outcomes of a mutant:
        CAUGHT    the suite exits non-zero, or some case's verdict is not Pass (the unmutated
                  RTL passes all of them); the first such case, in catalogue order, is recorded
        MISSED    the suite exits 0 and every case passes
        UNVIABLE  the build fails (Verilator or the C++ compiler refuses the mutant)
        TIMEOUT   the suite runs longer than --timeout-factor (default 5) times the unmutated
                  run; it is stopped, and the bridges it started with it

How it runs
    The RTL and the ethlink binary are copied once into a temporary directory, so an edit of
    hw/link_end/rtl or a cargo build during the run changes neither. The unmutated copy is built
    first and the suite run against it: it must pass every case (the run stops otherwise), and
    its wall time sets the time limit. Then, for each mutant, the copy is restored, the one edit
    written, and the bridge rebuilt with build.sh in ONE build directory for the whole run
    (Verilator regenerates the model, make recompiles it; the bridge's own object is reused).
    Before each build the old el_bridge and Verilator's record of its inputs are deleted, so a
    failed build can never leave the previous mutant's bridge to be tested, and every mutant is
    verilated afresh. Everything is written under /tmp (or --work); nothing in the repository
    is touched but the --out file, rewritten after every mutant (a table of what has run so
    far), so an interrupted run leaves its partial results.

How to run it
    python3 scripts/mutants_rtl.py --list                     # every site (551 today), nothing built
    python3 scripts/mutants_rtl.py --sample 22 --list         # the sites a sample would run
    python3 scripts/mutants_rtl.py --sample 22 --out docs/mutation/rtl-link_end.md
    python3 scripts/mutants_rtl.py --sample 22 --offset 7 --out /tmp/rtl-22-7.md   # another 22nd

    `--sample 22` is 26 mutants, about 25 minutes on a shared 2-core machine (the published run,
    docs/mutation/rtl-link_end.md, whose missed mutants are judged there by hand).

    Options: --sample N, --offset K, --limit K (at most K of the sample), --list, --jobs N
    (ethlink's, default 2), --out FILE (markdown; default /tmp/mutants_rtl.md), --work DIR
    (where the copies and the build go; default a new directory under /tmp), --ethlink PATH
    (default target/release/ethlink), --timeout-factor F (default 5), --file NAME (only the
    sites of one file, repeatable). Each mutant costs a rebuild of the model (tens of seconds
    on 2 cores) and a run of the suite (about ten seconds): count a minute a mutant.

What it needs
    Python 3.9 or newer (standard library only), bash, Verilator 5 with g++ and
    nlohmann-json3-dev (what hw/link_end/build.sh needs), and a built ethlink.

Exit status: 0 when the run completed (whatever the counts), 1 when the unmutated RTL does not
build or pass, or a step fails, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from mutants_proc import kill_leftovers, stop

ROOT = Path(__file__).resolve().parent.parent
RTL_DIR = ROOT / "hw" / "link_end" / "rtl"
BUILD_SH = ROOT / "hw" / "link_end" / "build.sh"
DEFAULT_ETHLINK = ROOT / "target" / "release" / "ethlink"
ROLE = "link_end"

# The files mutated, in the order their sites are numbered. el_pkg.sv (constants, the CRC step)
# and el_ram.sv (the memory) are left out.
FILES = ["el_link_end.sv", "el_rx.sv", "el_tx.sv", "el_sub.sv", "el_up.sv"]

# The suite's time limit for a mutant: this many times the unmutated run, and never below the
# floor (a run of ten seconds on a loaded machine can easily take twice as long).
TIMEOUT_FACTOR = 5.0
TIMEOUT_FLOOR_S = 30.0
# A build that takes longer than this is stopped and the mutant counted unviable.
BUILD_TIMEOUT_S = 900.0
# How long a stopped ethlink gets to stop its bridges before it is killed.


class Failure(Exception):
    """A step that cannot go on; its message is printed as the error."""


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# Lexing: the code of a file with its comments and strings blanked, and what may be mutated


def blank_comments_and_strings(text: str) -> str:
    """The text with every comment and string literal replaced by spaces (newlines kept), so
    that a position in it is the same position in the file and no operator is found inside
    a comment or a string."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
        else:
            i += 1
            continue
        for k in range(i, j):
            if out[k] != "\n":
                out[k] = " "
        i = j
    return "".join(out)


def matching(code: str, i: int, open_c: str, close_c: str, step: int) -> int:
    """The position of the bracket that matches the one at i, searching forward (step 1, from
    an opening one) or backward (step -1, from a closing one); -1 when there is none."""
    depth = 0
    n = len(code)
    while 0 <= i < n:
        c = code[i]
        if c == (open_c if step > 0 else close_c):
            depth += 1
        elif c == (close_c if step > 0 else open_c):
            depth -= 1
            if depth == 0:
                return i
        i += step
    return -1


@dataclass
class Lexed:
    text: str       # the file as it is
    code: str       # comments and strings blanked
    excluded: list  # per position: never mutated
    paren: list     # per position: depth of parentheses
    line_starts: list

    def line_of(self, pos: int) -> int:
        lo, hi = 0, len(self.line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.line_starts[mid] <= pos:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    def line_text(self, line: int) -> str:
        start = self.line_starts[line - 1]
        end = self.text.find("\n", start)
        return self.text[start:] if end < 0 else self.text[start:end]


def lex(text: str) -> Lexed:
    code = blank_comments_and_strings(text)
    n = len(code)
    excluded = [False] * n

    def exclude(a: int, b: int) -> None:
        for k in range(max(a, 0), min(b, n)):
            excluded[k] = True

    line_starts = [0] + [m.end() for m in re.finditer(r"\n", code)]

    # `ifndef SYNTHESIS ... `endif (the debug prints), nesting counted.
    for m in re.finditer(r"`ifndef\s+SYNTHESIS\b", code):
        depth, pos = 0, m.start()
        for d in re.finditer(r"`(ifdef|ifndef|endif)\b", code[m.start():]):
            depth += -1 if d.group(1) == "endif" else 1
            if depth == 0:
                pos = m.start() + d.end()
                break
        else:
            pos = n
        exclude(m.start(), pos)

    # Any line holding a system task or function ($fdisplay, $clog2, ...).
    for k, start in enumerate(line_starts):
        end = line_starts[k + 1] if k + 1 < len(line_starts) else n
        if "$" in code[start:end]:
            exclude(start, end)

    # The module header (parameters and ports) up to its `;`, and the declarations whose
    # expressions are constants: localparam, parameter, typedef, import.
    for m in re.finditer(r"\b(module|localparam|parameter|typedef|import)\b", code):
        end = code.find(";", m.start())
        exclude(m.start(), n if end < 0 else end + 1)

    # for (...) headers.
    for m in re.finditer(r"\bfor\s*\(", code):
        close = matching(code, m.end() - 1, "(", ")", 1)
        exclude(m.start(), n if close < 0 else close + 1)

    # Inside [...]: widths, bit and part selects.
    depth = 0
    for k, c in enumerate(code):
        if c == "[":
            depth += 1
        elif c == "]":
            depth = max(depth - 1, 0)
        if depth > 0 or c == "]":
            excluded[k] = True

    # Depth of parentheses at each position.
    paren = [0] * n
    depth = 0
    for k, c in enumerate(code):
        if c == "(":
            paren[k] = depth
            depth += 1
        elif c == ")":
            depth = max(depth - 1, 0)
            paren[k] = depth
        else:
            paren[k] = depth
    return Lexed(text, code, excluded, paren, line_starts)


IDENT = re.compile(r"[A-Za-z0-9_]")
STATEMENT_WORDS = {"begin", "end", "else", "default", "endcase", "fork", "join"}


def skip_space_back(code: str, i: int) -> int:
    while i >= 0 and code[i].isspace():
        i -= 1
    return i


def lvalue_before(code: str, pos: int) -> tuple[int, int] | None:
    """When the text just before position pos (the `<` of a `<=`) is an lvalue (`x`, `x[i]`,
    `x[i][j]`, `{a, b}`), the span (start, end) of that lvalue; None otherwise."""
    end = skip_space_back(code, pos - 1)
    i = end
    if i < 0:
        return None
    if code[i] == "}":
        o = matching(code, i, "{", "}", -1)
        return None if o < 0 else (o, end + 1)
    while i >= 0 and code[i] == "]":
        o = matching(code, i, "[", "]", -1)
        if o < 0:
            return None
        i = skip_space_back(code, o - 1)
    if i < 0 or not IDENT.match(code[i]):
        return None
    while i >= 0 and IDENT.match(code[i]):
        i -= 1
    start = i + 1
    if code[start].isdigit():
        return None  # a number, such as the d1 of 16'd1, is no lvalue
    if i >= 0 and code[i] in "'.$":
        return None  # part of a literal, a hierarchical name or a system call
    return (start, end + 1)


def is_nba(lx: Lexed, pos: int) -> bool:
    """Is the `<=` at pos a nonblocking assignment: outside parentheses, right after an lvalue
    that itself begins a statement (after `;`, `begin`, `end`, `else`, a case label's `:` or
    the `)` of an `if`/`case`/`@(...)`)?"""
    if lx.paren[pos] > 0:
        return False
    span = lvalue_before(lx.code, pos)
    if span is None:
        return False
    i = skip_space_back(lx.code, span[0] - 1)
    if i < 0:
        return True
    c = lx.code[i]
    if c in ";)":
        return True
    if c == ":" and (i == 0 or lx.code[i - 1] != ":"):
        return True
    if IDENT.match(c):
        j = i
        while j >= 0 and IDENT.match(lx.code[j]):
            j -= 1
        return lx.code[j + 1:i + 1] in STATEMENT_WORDS
    return False


# --------------------------------------------------------------------------------------------
# Declarations: which variables are one bit wide, for the `flag` class


def one_bit_names(code: str) -> tuple[set, set]:
    """(scalars, vectors): names declared `logic x` with no dimension at all, and names declared
    with a single packed dimension and no unpacked one (so `x[i]` is one bit)."""
    scalars: set = set()
    vectors: set = set()

    def record(packed: str, names: str) -> None:
        dims = len(re.findall(r"\[", packed))
        for item in names.split(","):
            item = item.split("=")[0].strip()
            m = re.match(r"([A-Za-z_]\w*)\s*(\[.*)?$", item)
            if not m:
                continue
            if m.group(2):  # an unpacked dimension: an array, not a bit
                continue
            (scalars if dims == 0 else vectors if dims == 1 else set()).add(m.group(1))

    # Ports: `input logic [3:0] x,` one name each.
    for m in re.finditer(r"\b(?:input|output|inout)\s+(?:logic|wire|bit)\b\s*((?:\[[^\]]*\]\s*)*)"
                         r"([A-Za-z_]\w*)", code):
        record(m.group(1), m.group(2))
    # Body declarations: `logic [7:0] a, b;`
    for m in re.finditer(r"(?<![\w.])(?:logic|bit|reg)\b\s*((?:\[[^\]]*\]\s*)*)([^;()]*);", code):
        record(m.group(1), m.group(2))
    return scalars, vectors


# --------------------------------------------------------------------------------------------
# Sites


@dataclass
class Site:
    index: int
    file: str
    line: int
    col: int
    cls: str
    start: int       # span of the text replaced, in the file
    end: int
    old: str         # the text replaced
    new: str         # and its replacement
    shown_old: str   # the edit as the results print it
    shown_new: str
    line_text: str   # the line as it is

    def where(self) -> str:
        return f"{self.file}:{self.line}"

    def edit(self) -> str:
        return f"`{self.shown_old}` → `{self.shown_new}`"

    def mutated_line(self, text: str) -> str:
        ls = text.rfind("\n", 0, self.start) + 1
        le = text.find("\n", self.end)
        le = len(text) if le < 0 else le
        return text[ls:self.start] + self.new + text[self.end:le]


ONE = r"(?:1|\d+'[sS]?[dD]0*1|\d+'[sS]?[hH]0*1|\d+'[sS]?[bB]0*1)"


def sites_of(text: str) -> list[tuple[int, str, int, int, str, str, str]]:
    """The mutation sites of one file, in order: (position, class, start, end, replacement,
    shown_old, shown_new). The text from start to end is replaced by the replacement; the shown
    forms are what the results print (`+ 1` -> `- 1`, `<= 1;` -> `<= 0;`)."""
    lx = lex(text)
    code = lx.code
    found = []

    def ok(a: int, b: int) -> bool:
        return not any(lx.excluded[a:b])

    # eq: == <-> !=
    for m in re.finditer(r"(?<![=!<>])==(?!=)|(?<![=!])!=(?!=)", code):
        if ok(m.start(), m.end()):
            new = "!=" if m.group() == "==" else "=="
            found.append((m.start(), "eq", m.start(), m.end(), new, m.group(), new))

    # rel: < -> <=, > -> >=, >= -> >, a comparison's <= -> <
    for m in re.finditer(r"(?<![<>=!])<(?![<=])|(?<![<>=\-])>(?![>=])|(?<![<>=])>=|(?<![<>=])<=(?!=)",
                         code):
        a, b, op = m.start(), m.end(), m.group()
        if not ok(a, b):
            continue
        if op == "<=" and is_nba(lx, a):
            continue
        new = {"<": "<=", ">": ">=", ">=": ">", "<=": "<"}[op]
        found.append((a, "rel", a, b, new, op, new))

    # and: && -> ||
    for m in re.finditer(r"&&", code):
        if ok(m.start(), m.end()):
            found.append((m.start(), "and", m.start(), m.end(), "||", "&&", "||"))

    # inc: + 1 <-> - 1 (binary, spaces around the operator, the 1 plain or sized)
    for m in re.finditer(r"(?<=[\w)\]'])(\s+)([+-])(\s+)(" + ONE + r")(?![\w'.])", code):
        op_pos = m.start(2)
        after = code[m.end():].lstrip(" \t")
        if after.startswith(")'"):
            continue  # a size cast: (QAW + 1)'(x)
        if not ok(op_pos, m.end()):
            continue
        new = "-" if m.group(2) == "+" else "+"
        found.append((op_pos, "inc", op_pos, op_pos + 1, new, m.group(2) + " " + m.group(4),
                      new + " " + m.group(4)))

    # flag: a one-bit nonblocking assignment of 1 or 0
    scalars, vectors = one_bit_names(code)
    for m in re.finditer(r"<=(\s*)(1'b[01]|[01])(\s*);", code):
        a = m.start()
        if not ok(a, m.end()) or not is_nba(lx, a):
            continue
        span = lvalue_before(code, a)
        lhs = code[span[0]:span[1]].strip()
        lm = re.fullmatch(r"([A-Za-z_]\w*)(\s*\[([^\]:]*)\])?", lhs)
        if not lm or ":" in lhs:
            continue
        one_bit = (lm.group(2) is None and lm.group(1) in scalars) or \
                  (lm.group(2) is not None and lm.group(1) in vectors)
        if not one_bit:
            continue
        vs, ve = m.start(2), m.end(2)
        old = code[vs:ve]
        new = {"1": "0", "0": "1", "1'b1": "1'b0", "1'b0": "1'b1"}[old]
        found.append((vs, "flag", vs, ve, new, f"<= {old};", f"<= {new};"))

    found.sort(key=lambda s: (s[0], s[1]))
    return found


def enumerate_sites(rtl: Path, files: list[str]) -> tuple[list[Site], dict]:
    """Every site of the files, numbered in order, and the files' texts."""
    sites: list[Site] = []
    texts = {}
    for name in files:
        text = (rtl / name).read_text()
        texts[name] = text
        lx = lex(text)
        for pos, cls, a, b, repl, shown_old, shown_new in sites_of(text):
            line = lx.line_of(pos)
            col = pos - lx.line_starts[line - 1] + 1
            sites.append(Site(len(sites), name, line, col, cls, a, b, text[a:b], repl,
                              shown_old, shown_new, lx.line_text(line)))
    return sites, texts


# --------------------------------------------------------------------------------------------
# Building and running


def build(rtl: Path, out: Path, log_path: Path) -> tuple[bool, float, str]:
    """Builds the bridge of the RTL in rtl into out; (built, seconds, the first error line)."""
    bridge = out / "el_bridge"
    bridge.unlink(missing_ok=True)
    # Verilator's record of its inputs: without it every build verilates afresh.
    for dat in out.glob("*__verFiles.dat"):
        dat.unlink()
    start = time.monotonic()
    with open(log_path, "wb") as f:
        try:
            r = subprocess.run(["bash", str(BUILD_SH), "--rtl", str(rtl), "--out", str(out)],
                               cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=f, timeout=BUILD_TIMEOUT_S)
            code = r.returncode
        except subprocess.TimeoutExpired:
            code = None
    elapsed = time.monotonic() - start
    if code == 0 and bridge.exists():
        return True, elapsed, ""
    first = "build timed out" if code is None else f"build exit {code}"
    for line in log_path.read_text(errors="replace").splitlines():
        if "%Error" in line or "error:" in line:
            first = line.strip()
            break
    return False, elapsed, first[:200]


def run_suite(ethlink: Path, bridge: Path, jobs: int, work: Path, timeout_s: float | None) -> dict:
    """One run of the link-end cases; its exit status (None on a timeout), wall time, the
    verdicts in catalogue order and the tail of its output."""
    report = work / "report.json"
    report.unlink(missing_ok=True)
    out_path = work / "suite.txt"
    cmd = [str(ethlink), "conformance", "--role", ROLE, "--dut-cmd", str(bridge),
           "--jobs", str(jobs), "--json", str(report)]
    start = time.monotonic()
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            code = None
            stop(proc, str(work))
        except BaseException:
            stop(proc, str(work))
            raise
    elapsed = time.monotonic() - start
    verdicts: list[tuple[str, str]] = []
    if code is not None and report.exists():
        try:
            verdicts = [(c["id"], c["verdict"]) for c in json.loads(report.read_text())["cases"]]
        except (ValueError, KeyError, TypeError):
            verdicts = []
    tail = out_path.read_text(errors="replace").splitlines()[-2:]
    return {"code": code, "elapsed_s": elapsed, "verdicts": verdicts, "tail": tail}


# --------------------------------------------------------------------------------------------
# The results document


def machine_note() -> str:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        load = "?"
    try:
        ver = subprocess.run(["verilator", "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        ver = "verilator ?"
    return (f"{os.cpu_count()} CPUs ({cpu or platform.machine()}), load average {load} at the "
            f"start (the machine is shared with other jobs); {ver}; Python {platform.python_version()}")


def counts_of(results: list[dict]) -> dict:
    c = {"CAUGHT": 0, "MISSED": 0, "UNVIABLE": 0, "TIMEOUT": 0}
    for r in results:
        c[r["result"]] += 1
    return c


def summary_line(results: list[dict]) -> str:
    c = counts_of(results)
    viable = c["CAUGHT"] + c["MISSED"] + c["TIMEOUT"]
    pct = f"{100.0 * c['CAUGHT'] / viable:.1f} %" if viable else "-"
    det = f"{100.0 * (c['CAUGHT'] + c['TIMEOUT']) / viable:.1f} %" if viable else "-"
    return (f"{len(results)} mutants run: {c['CAUGHT']} caught, {c['MISSED']} missed, "
            f"{c['UNVIABLE']} unviable, {c['TIMEOUT']} timeouts; caught of viable {pct} "
            f"({c['CAUGHT']}/{viable}; counting timeouts as caught {det})")


def md_cell(s: str) -> str:
    return s.replace("|", "\\|")


def write_doc(path: Path, head: dict, sites_all: list[Site], selected: list[Site],
              results: list[dict], complete: bool) -> None:
    per_class: dict = {}
    per_file: dict = {}
    for s in sites_all:
        per_class[s.cls] = per_class.get(s.cls, 0) + 1
        per_file[s.file] = per_file.get(s.file, 0) + 1
    lines = [
        "# Mutation testing of the SystemVerilog link end (hw/link_end/rtl)",
        "",
        f"Command: `{head['command']}`",
        "",
        f"Date: {head['date']}. Machine: {head['machine']}.",
        "",
        f"Judged by: `{head['suite']}` ({head['cases']} link-end cases). The unmutated RTL "
        f"builds in {head['base_build_s']:.0f} s and passes every case in "
        f"{head['base_suite_s']:.1f} s; a mutant's suite run is stopped after "
        f"{head['timeout_s']:.0f} s (TIMEOUT).",
        "",
        f"Sites: {len(sites_all)} in {', '.join(f'{f} {n}' for f, n in per_file.items())}; by "
        f"class {', '.join(f'{k} {v}' for k, v in sorted(per_class.items()))}. Selected: "
        f"{len(selected)} (--sample {head['sample']} --offset {head['offset']}"
        f"{'' if head['limit'] is None else ', --limit ' + str(head['limit'])}). "
        f"Wall time: {head['wall_s'] / 60:.1f} min{'' if complete else ' (run not complete)'}.",
        "",
        "Outcomes: CAUGHT, the suite exits non-zero or a case is not Pass (the first such case "
        "in catalogue order is given); MISSED, every case passes; UNVIABLE, the mutant does not "
        "build; TIMEOUT, the suite outlived its limit. Caught of viable counts CAUGHT over "
        "CAUGHT + MISSED + TIMEOUT.",
        "",
        f"**Summary: {summary_line(results)}.**",
        "",
        "| # | site | class | edit | line | result | first catching case | build + suite |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['index']} | {r['where']} | {r['class']} | {md_cell(r['edit'])} "
            f"| `{md_cell(r['line'].strip())}` | {r['result']} | {md_cell(r['catcher'])} "
            f"| {r['build_s']:.0f} s + {r['suite_s']:.0f} s |")
    missed = [r for r in results if r["result"] == "MISSED"]
    lines += ["", "## Missed mutants", ""]
    if not missed:
        lines.append("None.")
    for r in missed:
        lines.append(f"- **#{r['index']} {r['where']}** {r['edit']} in "
                     f"`{r['line'].strip()}` (mutated: `{r['mutated'].strip()}`): to be judged.")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(path)


# --------------------------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Mutation testing of hw/link_end/rtl, judged by the link-end cases of the "
                    "conformance suite through the Verilator bridge.")
    p.add_argument("--sample", type=int, default=1, metavar="N",
                   help="run every N-th site only (index %% N == offset); default 1, every site")
    p.add_argument("--offset", type=int, default=0, metavar="K",
                   help="with --sample N, the sites whose index %% N == K (default 0)")
    p.add_argument("--limit", type=int, default=None, metavar="K",
                   help="run at most K mutants (after --sample)")
    p.add_argument("--list", action="store_true",
                   help="print the selected mutants (site, class, edit, line) and stop")
    p.add_argument("--jobs", type=int, default=2, help="ethlink's --jobs (default 2)")
    p.add_argument("--out", type=Path, default=Path("/tmp/mutants_rtl.md"), metavar="FILE",
                   help="the markdown results (default /tmp/mutants_rtl.md)")
    p.add_argument("--work", type=Path, default=None, metavar="DIR",
                   help="directory for the RTL copies, the build and the reports (default: a "
                        "new one under /tmp, removed at the end)")
    p.add_argument("--ethlink", type=Path, default=DEFAULT_ETHLINK, metavar="PATH",
                   help="the ethlink binary (default target/release/ethlink); it is copied")
    p.add_argument("--timeout-factor", type=float, default=TIMEOUT_FACTOR, metavar="F",
                   help="a mutant's suite run is stopped after F times the unmutated run "
                        f"(default {TIMEOUT_FACTOR:g}, at least {TIMEOUT_FLOOR_S:g} s)")
    p.add_argument("--file", action="append", default=None, choices=FILES,
                   help="only the sites of this file (repeatable); the indices stay those of "
                        "the whole enumeration")
    a = p.parse_args(argv)
    if a.sample < 1:
        p.error("--sample must be at least 1")
    if not 0 <= a.offset < a.sample:
        p.error("--offset must be at least 0 and below --sample")
    if a.limit is not None and a.limit < 0:
        p.error("--limit must not be negative")
    if a.jobs < 1:
        p.error("--jobs must be at least 1")
    if a.timeout_factor <= 0:
        p.error("--timeout-factor must be positive")
    return a


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    sites, texts = enumerate_sites(RTL_DIR, FILES)
    selected = [s for s in sites if s.index % args.sample == args.offset
                and (args.file is None or s.file in args.file)]
    if args.limit is not None:
        selected = selected[: args.limit]

    if args.list:
        for s in selected:
            print(f"#{s.index:<4} {s.where():<22} {s.cls:<5} {s.edit():<22} "
                  f"{s.line_text.strip()}")
        print(f"{len(selected)} of {len(sites)} sites", file=sys.stderr)
        return 0

    if not args.ethlink.is_file():
        raise Failure(f"{args.ethlink}: no such file (build ethlink first)")
    started = time.monotonic()
    head = {
        "command": "python3 scripts/mutants_rtl.py " + " ".join(shlex.quote(x) for x in argv),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine_note(),
        "sample": args.sample, "offset": args.offset, "limit": args.limit,
    }
    own_work = args.work is None
    work = Path(tempfile.mkdtemp(prefix="ethlink-mutants-rtl-")) if own_work else args.work
    work.mkdir(parents=True, exist_ok=True)
    work = work.resolve()
    try:
        # The snapshot: the RTL and the suite, copied once.
        snap = work / "rtl-orig"
        mut = work / "rtl"
        bdir = work / "build"
        for d in (snap, mut):
            shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(RTL_DIR, snap)
        shutil.copytree(RTL_DIR, mut)
        for name in FILES:
            if (snap / name).read_text() != texts[name]:
                raise Failure(f"{name} changed while the run started; try again")
        ethlink = work / "ethlink"
        shutil.copy2(args.ethlink, ethlink)
        bdir.mkdir(exist_ok=True)
        bridge = bdir / "el_bridge"
        head["suite"] = (f"ethlink conformance --role {ROLE} --dut-cmd <build>/el_bridge "
                         f"--jobs {args.jobs}")

        log(f"baseline: building the unmutated RTL into {bdir}")
        built, b_s, err = build(mut, bdir, work / "build-baseline.log")
        if not built:
            raise Failure(f"the unmutated RTL does not build ({err}); see {work}/build-baseline.log")
        r = run_suite(ethlink, bridge, args.jobs, work, None)
        bad = [(i, v) for i, v in r["verdicts"] if v != "Pass"]
        if r["code"] != 0 or not r["verdicts"] or bad:
            raise Failure(f"the unmutated RTL does not pass (exit {r['code']}, "
                          f"{bad[:3]}): {' | '.join(r['tail'])}")
        timeout_s = max(TIMEOUT_FLOOR_S, args.timeout_factor * r["elapsed_s"])
        head.update({"base_build_s": b_s, "base_suite_s": r["elapsed_s"], "timeout_s": timeout_s,
                     "cases": len(r["verdicts"])})
        log(f"  built in {b_s:.0f} s; {len(r['verdicts'])} cases pass in {r['elapsed_s']:.1f} s; "
            f"limit per mutant {timeout_s:.0f} s; {len(selected)} of {len(sites)} sites selected")

        results: list[dict] = []
        for n, s in enumerate(selected, 1):
            # Restore the copy, then the one edit.
            for name in FILES:
                if (mut / name).read_text() != texts[name]:
                    (mut / name).write_text(texts[name])
            text = texts[s.file]
            mutated = text[:s.start] + s.new + text[s.end:]
            (mut / s.file).write_text(mutated)
            rec = {"index": s.index, "where": s.where(), "class": s.cls, "edit": s.edit(),
                   "line": s.line_text, "mutated": s.mutated_line(text), "catcher": "",
                   "build_s": 0.0, "suite_s": 0.0}
            built, b_s, err = build(mut, bdir, work / "build.log")
            rec["build_s"] = b_s
            if not built:
                rec["result"] = "UNVIABLE"
                rec["catcher"] = err
            else:
                r = run_suite(ethlink, bridge, args.jobs, work, timeout_s)
                rec["suite_s"] = r["elapsed_s"]
                bad = [(i, v) for i, v in r["verdicts"] if v != "Pass"]
                if r["code"] is None:
                    rec["result"] = "TIMEOUT"
                    rec["catcher"] = f"stopped after {r['elapsed_s']:.0f} s"
                elif r["code"] != 0 or bad or not r["verdicts"]:
                    rec["result"] = "CAUGHT"
                    if bad:
                        rec["catcher"] = f"{bad[0][0]} ({bad[0][1]}; {len(bad)} not Pass)"
                    else:
                        rec["catcher"] = f"exit {r['code']}: " + " ".join(r["tail"])[-120:]
                else:
                    rec["result"] = "MISSED"
            results.append(rec)
            head["wall_s"] = time.monotonic() - started
            write_doc(args.out, head, sites, selected, results, complete=False)
            c = counts_of(results)
            mark = "" if rec["result"] == "CAUGHT" else "  <--"
            log(f"[{n}/{len(selected)}] #{s.index} {s.where()} {s.cls} {s.edit()}: "
                f"{rec['result']} {rec['catcher']} (build {b_s:.0f} s, suite "
                f"{rec['suite_s']:.0f} s; so far {c['CAUGHT']} caught, {c['MISSED']} missed, "
                f"{c['UNVIABLE']} unviable, {c['TIMEOUT']} timeouts){mark}")

        head["wall_s"] = time.monotonic() - started
        write_doc(args.out, head, sites, selected, results, complete=True)
    finally:
        kill_leftovers(str(work))
        if own_work:
            shutil.rmtree(work, ignore_errors=True)

    print(summary_line(results))
    for r in results:
        if r["result"] != "CAUGHT":
            print(f"  {r['result']:<8} #{r['index']} {r['where']} {r['edit']}: {r['line'].strip()}")
    print(f"results in {args.out}")
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

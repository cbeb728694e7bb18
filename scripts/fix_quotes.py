#!/usr/bin/env python3
"""Rewrites the `//#` quotes of requirements in Rust sources whose text no longer matches
docs/spec/ with the requirement's current text. Usage: scripts/fix_quotes.py FILE..."""
import importlib.util
import pathlib
import re
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("trace", ROOT / "scripts" / "traceability.py")
trace = importlib.util.module_from_spec(spec)
spec.loader.exec_module(trace)
REQS = trace.spec_requirements()
QUOTE = re.compile(r"^(\s*)//#\s?(.*)$")
ID_AT_START = re.compile(r"^([A-Z]{2,}-\d+(?:\.\d+)*-\d+)\s")


def fix(path):
    lines = path.read_text(encoding="utf-8").split("\n")
    out, i, changed = [], 0, 0
    while i < len(lines):
        m = QUOTE.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        indent = m.group(1)
        block = []
        while i < len(lines) and QUOTE.match(lines[i]):
            block.append(QUOTE.match(lines[i]).group(2))
            i += 1
        parts, cur = [], None
        for b in block:
            mm = ID_AT_START.match(b + " ")
            if mm and mm.group(1) in REQS:
                cur = [mm.group(1), [b]]
                parts.append(cur)
            elif cur:
                cur[1].append(b)
            else:
                parts.append([None, [b]])
        for rid, qlines in parts:
            if rid is None or trace.quote_matches(rid, " ".join(qlines), REQS):
                out.extend(f"{indent}//# {q}".rstrip() for q in qlines)
                continue
            text = f"{rid} " + trace.normalise(REQS[rid]["text"])
            width = max(40, 100 - len(indent) - 4)
            wrapped = textwrap.wrap(text, width, break_on_hyphens=False)
            # A line must not begin with a requirement id, or it would read as a quote of its own.
            for k in range(1, len(wrapped)):
                while ID_AT_START.match(wrapped[k] + " "):
                    first, _, rest = wrapped[k].partition(" ")
                    wrapped[k - 1] += " " + first
                    wrapped[k] = rest
            out.extend(f"{indent}//# {w}" for w in wrapped if w)
            changed += 1
    if changed:
        path.write_text("\n".join(out), encoding="utf-8")
    return changed


if __name__ == "__main__":
    total = sum(fix(pathlib.Path(p)) for p in sys.argv[1:])
    print(f"{total} quotes rewritten")

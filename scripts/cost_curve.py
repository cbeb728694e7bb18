#!/usr/bin/env python3
"""What a run costs against the number of GPUs: wall time, events per second, peak memory.

One workload family from 8 to 4096 GPUs: two tiers in each of 2 planes (GPUs of 1 stack x 2
ports at 400 Gb/s), leaves of at most 64 GPUs and at least 2 leaves, as many spines as a leaf
has GPUs (at most 64: non-blocking), two rounds of random-permutation RDMA writes of 256 KiB
beside 64 B loads and stores (4 outstanding per GPU). Its 4096-GPU member is
examples/scenarios/gpus4096.toml.

Every size runs --repeat times, the sizes taking turns (one pass over every size, then the
next), so that a change in the machine's load spreads over all of them; the table gives each
size's median. It prints a Markdown table and writes an SVG plot (three log-log panels).

    cargo build --release -p ethlink-cli
    python3 scripts/cost_curve.py --repeat 3 --svg docs/cost_curve.svg > /tmp/table.md
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES = [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]


def scenario(gpus: int) -> str:
    """The family's member of `gpus` GPUs, as TOML."""
    leaves = max(2, gpus // 64)
    per_leaf = gpus // leaves
    spines = min(per_leaf, 64)
    return f"""seed = 1
[topology]
kind = "two_tier"
gpus = {gpus}
stacks = 1
ports_per_stack = 2
leaves = {leaves}
spines = {spines}
[link]
rate_gbps = 400.0
ber = 1e-10
[[traffic]]
kind = "permutation"
bytes = 262144
iterations = 2
[[traffic]]
kind = "load_store"
outstanding = 4
[[traffic.sizes]]
bytes = 64
weight = 1.0
[metrics]
sample_ns = 0
"""


def run(ethlink: Path, path: Path) -> dict:
    """One run's figures, from its JSON report."""
    out = subprocess.run(
        [str(ethlink), "run", "--scenario", str(path), "--json", "--no-progress",
         "--max-memory", "64G"],
        capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{path}: ethlink run exited with {out.returncode}: "
                         f"{out.stderr.strip()[:500]}")
    r = json.loads(out.stdout)
    w = r["wall"]
    return {
        "seconds": w["seconds"],
        "events": r["sim"]["events"],
        "events_per_s": w["events_per_s"],
        "frame_hops_per_s": w["frame_hops_per_s"],
        "peak": w.get("peak_rss_bytes") or 0,
        "estimate": w.get("memory_estimate_bytes") or 0,
        "sim_ns": r["end_ns"],
    }


def mib(b: float) -> str:
    return f"{b / 2**20:,.0f} MiB" if b < 10 * 2**30 else f"{b / 2**30:.1f} GiB"


def table(rows: list[tuple[int, dict]], repeat: int) -> str:
    lines = [
        f"| GPUs | events | wall time (median of {repeat}) | events per second | "
        "frame-hops per second | peak RSS | estimate | estimate / peak |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for g, m in rows:
        ratio = m["estimate"] / m["peak"] if m["peak"] else float("nan")
        lines.append(
            f"| {g} | {m['events']:,} | {m['seconds']:.2f} s | "
            f"{m['events_per_s'] / 1e6:.2f} M | {m['frame_hops_per_s'] / 1e6:.2f} M | "
            f"{mib(m['peak'])} | {mib(m['estimate'])} | {ratio:.2f} |")
    return "\n".join(lines)


def svg(rows: list[tuple[int, dict]], title: str) -> str:
    """Three log-log panels against the GPU count: wall time, events/s, peak memory."""
    panels = [
        ("wall time (s)", [m["seconds"] for _, m in rows]),
        ("events per second (M)", [m["events_per_s"] / 1e6 for _, m in rows]),
        ("peak RSS (MiB)", [m["peak"] / 2**20 for _, m in rows]),
    ]
    xs = [g for g, _ in rows]
    w, h, pad_l, pad_r, pad_t, pad_b = 300, 240, 58, 14, 30, 40
    total_w = 3 * w
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{h + 24}" '
        f'viewBox="0 0 {total_w} {h + 24}" font-family="sans-serif" font-size="11">',
        f'<rect width="{total_w}" height="{h + 24}" fill="white"/>',
        f'<text x="{total_w / 2}" y="14" text-anchor="middle" font-size="12">{title}</text>',
    ]
    lx0, lx1 = math.log10(min(xs)), math.log10(max(xs))
    for k, (name, ys) in enumerate(panels):
        ox = k * w
        pos = [y for y in ys if y > 0]
        if not pos:
            continue
        ly0 = math.floor(math.log10(min(pos)))
        ly1 = math.ceil(math.log10(max(pos)))
        if ly1 == ly0:
            ly1 += 1
        x0, x1 = ox + pad_l, ox + w - pad_r
        y0, y1 = h + 24 - pad_b, pad_t + 10

        def px(x: float) -> float:
            return x0 + (math.log10(x) - lx0) / max(lx1 - lx0, 1e-9) * (x1 - x0)

        def py(y: float) -> float:
            return y0 - (math.log10(y) - ly0) / (ly1 - ly0) * (y0 - y1)

        out.append(f'<text x="{(x0 + x1) / 2}" y="{pad_t + 2}" text-anchor="middle">{name}</text>')
        out.append(f'<rect x="{x0}" y="{y1}" width="{x1 - x0}" height="{y0 - y1}" '
                   'fill="none" stroke="#888"/>')
        for e in range(ly0, ly1 + 1):
            y = py(10 ** e)
            out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x1}" y2="{y:.1f}" stroke="#ddd"/>')
            out.append(f'<text x="{x0 - 4}" y="{y + 4:.1f}" text-anchor="end">{10 ** e:g}</text>')
        for g in xs:
            x = px(g)
            out.append(f'<line x1="{x:.1f}" y1="{y0}" x2="{x:.1f}" y2="{y1}" stroke="#eee"/>')
            out.append(f'<text x="{x:.1f}" y="{y0 + 14}" text-anchor="middle" '
                       f'font-size="9">{g}</text>')
        out.append(f'<text x="{(x0 + x1) / 2}" y="{y0 + 28}" text-anchor="middle">GPUs</text>')
        pts = " ".join(f"{px(g):.1f},{py(y):.1f}" for g, y in zip(xs, ys) if y > 0)
        out.append(f'<polyline points="{pts}" fill="none" stroke="#1f5fa8" stroke-width="2"/>')
        for g, y in zip(xs, ys):
            if y > 0:
                out.append(f'<circle cx="{px(g):.1f}" cy="{py(y):.1f}" r="3" fill="#1f5fa8"/>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ethlink", type=Path, default=ROOT / "target/release/ethlink",
                   help="the ethlink binary (default: target/release/ethlink)")
    p.add_argument("--sizes", default=",".join(map(str, SIZES)),
                   help="GPU counts, comma-separated (each a multiple of 4, at most 4096)")
    p.add_argument("--repeat", type=int, default=3, help="runs per size (default 3)")
    p.add_argument("--svg", type=Path, help="write the plot here")
    p.add_argument("--print-scenario", type=int, metavar="GPUS",
                   help="print the family's member of GPUS GPUs and stop")
    a = p.parse_args(argv)
    if a.print_scenario:
        sys.stdout.write(scenario(a.print_scenario))
        return 0
    try:
        sizes = [int(s) for s in a.sizes.split(",") if s.strip()]
    except ValueError:
        p.error(f"--sizes: {a.sizes!r} is not a list of numbers")
    if not sizes or any(g < 8 or g > 4096 or g % 4 for g in sizes):
        p.error("--sizes: each size must be a multiple of 4 in 8..=4096")
    if a.repeat < 1:
        p.error("--repeat must be at least 1")
    if not a.ethlink.exists():
        p.error(f"--ethlink: {a.ethlink} does not exist (cargo build --release -p ethlink-cli)")
    runs: dict[int, list[dict]] = {g: [] for g in sizes}
    with tempfile.TemporaryDirectory(prefix="ethlink-cost-") as d:
        paths = {}
        for g in sizes:
            paths[g] = Path(d) / f"family{g}.toml"
            paths[g].write_text(scenario(g))
        for r in range(a.repeat):
            for g in sizes:
                m = run(a.ethlink, paths[g])
                runs[g].append(m)
                print(f"pass {r + 1}/{a.repeat}: {g} GPUs, {m['seconds']:.2f} s, "
                      f"{m['events_per_s'] / 1e6:.2f} M events/s, {mib(m['peak'])}",
                      file=sys.stderr)
    rows = []
    for g in sizes:
        ms = runs[g]
        med = {k: statistics.median(m[k] for m in ms) for k in ms[0]}
        rows.append((g, med))
    host = f"{platform.machine()}, {os.cpu_count()} cores"
    print(table(rows, a.repeat))
    if a.svg:
        a.svg.write_text(svg(rows, f"ethlink run, 2 planes of two tiers, permutation + "
                                   f"loads/stores; medians of {a.repeat} ({host})"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

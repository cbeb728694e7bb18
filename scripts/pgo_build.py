#!/usr/bin/env python3
"""A profile-guided build of the `ethlink` binary, for long runs of the simulator.

The same program, compiled twice: once instrumented to count the branches and calls that a few
training runs take, then again with those counts, so that the compiler lays out and inlines the
code for the paths that are hot. What the program computes does not change: every training
run's report (the JSON, its "wall" section aside) is checked against the same run of the
optimised binary, and the script fails if one differs.

    rustup component add llvm-tools
    python3 scripts/pgo_build.py
    target/pgo/release/ethlink run --scenario examples/scenarios/gpus1024.toml

The training runs are example scenarios of several kinds (a saturated all-to-all, 64 GPUs of
8 ports with loads, stores and collectives, a 1024-GPU permutation, a plane failure, lossy and
cut-through links, the built-in default), the all-to-all and the permutation also as two
partitions on two threads (`--partitioned`);
the scenarios a user then runs need not be among them. docs/performance.md gives the
speed-up measured on the examples. The two release builds take about 7 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The training runs: a scenario file under examples/scenarios/ (None for the built-in default)
# and the flags of the run. Two run as two partitions on two threads, so that the code of the
# windows, the channels between the partitions and the threads' exchange is counted too.
TRAINING: list[tuple[str | None, tuple[str, ...]]] = [
    (None, ()),
    ("a2a64_800g.toml", ()),
    ("a2a64_800g.toml", ("--partitioned",)),
    ("gpus64.toml", ()),
    ("perm1024_400g.toml", ()),
    ("perm1024_400g.toml", ("--partitioned",)),
    ("plane_failure.toml", ()),
    ("lossy_link.toml", ()),
    ("cut_through_lossy.toml", ()),
]


def run_name(scenario: str | None, flags: tuple[str, ...]) -> str:
    return " ".join([scenario or "the built-in default", *flags])


def fail(msg: str) -> None:
    print(f"pgo_build: {msg}", file=sys.stderr)
    sys.exit(1)


def llvm_profdata() -> Path:
    """llvm-profdata of the toolchain's own LLVM (rustup's llvm-tools component): another
    version's cannot read the counts rustc's LLVM writes."""
    sysroot = subprocess.run(
        ["rustc", "--print", "sysroot"], capture_output=True, text=True, check=True
    ).stdout.strip()
    host = next(
        (
            line.split(":", 1)[1].strip()
            for line in subprocess.run(
                ["rustc", "-vV"], capture_output=True, text=True, check=True
            ).stdout.splitlines()
            if line.startswith("host:")
        ),
        None,
    )
    if host is None:
        fail("rustc -vV names no host")
    tool = Path(sysroot) / "lib" / "rustlib" / host / "bin" / "llvm-profdata"
    if not tool.is_file():
        fail(f"{tool} is missing: install it with `rustup component add llvm-tools`")
    return tool


def build(target_dir: Path, rustflags: str) -> Path:
    env = dict(os.environ)
    env["RUSTFLAGS"] = (env.get("RUSTFLAGS", "") + " " + rustflags).strip()
    subprocess.run(
        [
            "cargo",
            "build",
            "--release",
            "-p",
            "ethlink-cli",
            "--target-dir",
            str(target_dir),
        ],
        cwd=ROOT,
        env=env,
        check=True,
    )
    return target_dir / "release" / "ethlink"


def report(binary: Path, scenario: str | None, flags: tuple[str, ...]) -> str:
    """The run's JSON report without its "wall" section, as canonical text."""
    cmd = [str(binary), "run", "--json", *flags]
    if scenario is not None:
        cmd += ["--scenario", str(ROOT / "examples" / "scenarios" / scenario)]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"{' '.join(cmd)} exited with {out.returncode}: {out.stderr.strip()[-400:]}")
    data = json.loads(out.stdout)
    data.pop("wall", None)
    return json.dumps(data, sort_keys=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--target-dir",
        type=Path,
        default=ROOT / "target" / "pgo",
        help="where the optimised build goes (default target/pgo; the binary is "
        "release/ethlink in it)",
    )
    ap.add_argument(
        "--keep-profile",
        type=Path,
        help="also keep the merged profile at this path",
    )
    args = ap.parse_args()
    tool = llvm_profdata()
    gen_dir = args.target_dir.with_name(args.target_dir.name + "-gen")
    # The instrumented build's flags name a fixed place, so that a second run reuses that
    # build; the optimised build's name the merged profile in a fresh place, so that cargo,
    # which does not look at the profile's contents, builds again with every new profile.
    raw = gen_dir / "profraw"
    with tempfile.TemporaryDirectory(prefix="ethlink-pgo-") as tmp:
        merged = Path(tmp) / "ethlink.profdata"
        print("pgo_build: the instrumented build", file=sys.stderr)
        instrumented = build(gen_dir, f"-Cprofile-generate={raw}")
        # The build scripts run under the instrumentation too: only the training runs count.
        shutil.rmtree(raw, ignore_errors=True)
        expected = {}
        for s, flags in TRAINING:
            name = run_name(s, flags)
            print(f"pgo_build: training on {name}", file=sys.stderr)
            expected[name] = report(instrumented, s, flags)
        if not raw.is_dir() or not any(raw.iterdir()):
            fail(f"the training runs wrote no profile under {raw}")
        subprocess.run(
            [str(tool), "merge", "-o", str(merged), str(raw)], check=True
        )
        print("pgo_build: the optimised build", file=sys.stderr)
        optimised = build(args.target_dir, f"-Cprofile-use={merged}")
        if args.keep_profile is not None:
            shutil.copyfile(merged, args.keep_profile)
    for s, flags in TRAINING:
        name = run_name(s, flags)
        if report(optimised, s, flags) != expected[name]:
            fail(f"{name}: the optimised binary's report differs from the instrumented one's")
    print(f"pgo_build: {optimised} (its reports match on {len(TRAINING)} training runs)")


if __name__ == "__main__":
    main()

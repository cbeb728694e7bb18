#!/usr/bin/env bash
# Runs every test of the workspace on a fresh machine: installs what the tests need and is
# missing (tshark, verilator and iverilog from Debian's packages, cargo-fuzz; cocotb from PyPI
# into a virtual environment under target/), then formatting, lints, the test suites (the C
# header's drift check among them), the Wireshark dissector against `ethlink decode` (through
# tshark), the conformance suite in-process, through a subprocess and through the C ABI
# library, the C example, the Verilator testbench over DPI-C, the cocotb test over ctypes, the
# SystemVerilog link end of hw/link_end (Verilator lint, then every link-end case through its
# Verilator bridge; nlohmann-json3-dev from Debian's packages), a bounded fuzz run, the
# traceability check and a bounded sample of mutation testing.
#
# Environment:
#   PROPTEST_CASES   property-test cases per property (default 256)
#   FUZZ_SECONDS     length of the bounded fuzz run (default 30; 0 skips it)
#   MUTANTS          1: also a bounded cargo-mutants run over the switch crate (installs it)
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\n==> [%ss, %s free] %s\n' "$SECONDS" "$(df -h . | awk 'NR==2{print $4}')" "$*"; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else "$@"; fi
}

if ! command -v tshark >/dev/null 2>&1; then
  log "installing tshark (Debian package)"
  export DEBIAN_FRONTEND=noninteractive
  echo "wireshark-common wireshark-common/install-setuid boolean false" | as_root debconf-set-selections || true
  as_root apt-get update -qq
  as_root apt-get install -y -qq tshark >/dev/null
fi
tshark --version | head -1
# tshark warns on standard error when it runs as root; scripts/tshark_check.py, which runs it
# below (once ethlink is built), ignores that line and fails on any other.

if ! command -v verilator >/dev/null 2>&1 || ! command -v g++ >/dev/null 2>&1 ||
   ! command -v make >/dev/null 2>&1; then
  log "installing verilator, g++ and make (Debian packages)"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  as_root apt-get install -y -qq verilator g++ make >/dev/null
fi
verilator --version
if ! command -v iverilog >/dev/null 2>&1; then
  log "installing iverilog (Debian package)"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  as_root apt-get install -y -qq iverilog >/dev/null
fi
iverilog -V 2>&1 | head -1 || true
if [ ! -f /usr/include/nlohmann/json.hpp ]; then
  log "installing nlohmann-json3-dev (Debian package, for the link end's Verilator bridge)"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  as_root apt-get install -y -qq nlohmann-json3-dev >/dev/null
fi

export PROPTEST_CASES="${PROPTEST_CASES:-256}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# Disk: a full run builds the workspace in the dev, release and fuzz profiles and two Verilator
# models. Incremental caches and full debug information would make that near 8 GB; without
# them (line tables still give backtraces their file and line) it is under 3 GB.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-line-tables-only}"
export CARGO_PROFILE_TEST_DEBUG="${CARGO_PROFILE_TEST_DEBUG:-line-tables-only}"

log "cargo fmt --check"
cargo fmt --all -- --check

log "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

log "cargo doc (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace --locked --quiet

log "cargo test (PROPTEST_CASES=$PROPTEST_CASES)"
cargo test --workspace --locked

log "golden vectors are what the code generates"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cargo run --quiet --locked -p ethlink-cli -- vectors --out "$tmp"
for f in vectors.json vectors.pcapng examples.md; do
  if ! cmp -s "$tmp/$f" "conformance/vectors/$f"; then
    echo "conformance/vectors/$f differs from what the code generates;" \
         "run: cargo run -p ethlink-cli -- vectors --out conformance/vectors" >&2
    exit 1
  fi
done
for f in examples.md; do
  if ! cmp -s "$tmp/$f" "docs/spec/$f"; then
    echo "docs/spec/$f differs from what the golden vectors generate;" \
         "run: cargo run -p ethlink-cli -- vectors --out conformance/vectors" \
         "&& cp conformance/vectors/examples.md docs/spec/examples.md" >&2
    exit 1
  fi
done
echo "vectors.json, vectors.pcapng and the worked examples (docs/spec/examples.md) match"

log "the Wireshark dissector (tools/wireshark/ethlink.lua) against ethlink decode, through tshark"
cargo build --quiet --locked -p ethlink-cli
# The golden vectors, a capture of a lossy link (NACK, replays, every control kind) and 2000
# mutated vectors that reach every check of the receive pipeline.
target/debug/ethlink run --scenario examples/scenarios/lossy_link.toml --capture-limit 2000 \
  --no-progress --out "$tmp/run" >/dev/null
python3 scripts/tshark_check.py --self-test --mutate 2000 conformance/vectors/vectors.pcapng \
  "$tmp/run/capture.pcapng"

log "the README's ethlink run command, on the test build; the release profile type-checked"
# The same command and scenario as the README's, run by the debug binary the tests built (about
# a minute): a release build would cost four more minutes of CI, and gives the same results
# (every run is deterministic), only sooner.
cargo check --quiet --release --locked -p ethlink-cli
cargo run --quiet --locked -p ethlink-cli -- run --no-progress >/dev/null
echo "ethlink run passes"
# The cost curve's script (docs/performance.md) on its two smallest sizes, on the test build.
python3 scripts/cost_curve.py --ethlink target/debug/ethlink --sizes 8,16 --repeat 1 \
  --svg "$tmp/cost_curve.svg" >/dev/null 2>&1
grep -q "</svg>" "$tmp/cost_curve.svg"
echo "scripts/cost_curve.py runs"

log "requirement traceability"
python3 scripts/traceability.py --check --summary | tail -2

log "the conformance suite against the reference and against the Python example link end"
for role in link_end endpoint switch; do
  cargo run --quiet --locked -p ethlink-cli -- conformance --role "$role" --jobs 2 | tail -2
done
cargo run --quiet --locked -p ethlink-cli -- conformance \
  --dut-cmd "python3 examples/conformance/link_end.py" --jobs 2 --timing | tail -2

log "the conformance suite against the reference built as a shared library (--dut-lib)"
cargo build --quiet --locked -p ethlink-ffi
for role in link_end endpoint switch; do
  cargo run --quiet --locked -p ethlink-cli -- conformance \
    --dut-lib target/debug/libethlink_ffi.so --role "$role" --jobs 2 | tail -2
done

log "the C example over include/ethlink.h (examples/c)"
examples/c/build.sh

log "the SystemVerilog testbench over DPI-C, built with Verilator (examples/cosim/verilator)"
examples/cosim/verilator/run.sh

log "the cocotb test over the shared library, with Icarus Verilog (examples/cosim/cocotb)"
if ! examples/cosim/cocotb/run.sh >"$tmp/cocotb.log" 2>&1; then
  cat "$tmp/cocotb.log" >&2
  exit 1
fi
tail -2 "$tmp/cocotb.log"

log "the SystemVerilog link end (hw/link_end): lint, then every link-end case through its bridge"
hw/link_end/lint.sh
bridge=$(bash hw/link_end/build.sh 2>"$tmp/hw-build.log") || { cat "$tmp/hw-build.log" >&2; exit 1; }
cargo run --quiet --locked -p ethlink-cli -- conformance --role link_end \
  --dut-cmd "$bridge" --jobs 2 --timing | tail -2

FUZZ_SECONDS="${FUZZ_SECONDS:-30}"
if [ "$FUZZ_SECONDS" != 0 ] && [ -d fuzz ]; then
  log "bounded fuzz run (${FUZZ_SECONDS}s per target)"
  if ! command -v cargo-fuzz >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked --quiet
  fi
  # cargo-fuzz has no --locked: the committed fuzz/Cargo.lock must already be what cargo
  # resolves, or the run would rewrite it.
  cargo metadata --locked --format-version 1 --manifest-path fuzz/Cargo.toml >/dev/null
  (cd fuzz && for t in $(basename -s .rs fuzz_targets/*.rs); do
     seeds=()
     [ -d "seeds/$t" ] && seeds=("seeds/$t")
     mkdir -p "corpus/$t"
     echo "fuzz target $t (${FUZZ_SECONDS}s):"
     cargo fuzz run "$t" --sanitizer none "corpus/$t" "${seeds[@]}" -- -max_total_time="$FUZZ_SECONDS" 2>&1 | tail -3
   done)
fi

log "mutation testing, a bounded sample (the full runs are opt-in: docs/mutation/results.md)"
# A few mutants of the Python example device (mutmut, from PyPI), judged by the link-end cases
# through --dut-cmd: the pipeline works end to end.
python3 scripts/mutants_python.py --sample 400 --limit 4 --json "$tmp/mutants_python.json" |
  tail -3
# cargo-mutants over the reference devices (two mutants of the switch crate, judged by the
# switch cases) when MUTANTS=1: installing cargo-mutants costs minutes of CI.
if [ "${MUTANTS:-0}" = 1 ]; then
  command -v cargo-mutants >/dev/null 2>&1 || cargo install cargo-mutants --locked --quiet
  python3 scripts/mutants.py --roles switch --sample 600 --in-place --check --timeout 120 |
    sed -n '/^| crate/,/^$/p'
fi

log "all tests passed"

#!/usr/bin/env bash
# Runs the cocotb test of the EthLink models: two link ends loaded from libethlink_ffi.so
# through ctypes, joined by the Verilog cable of ethlink_wires.v simulated by Icarus Verilog.
# Installs cocotb into a virtual environment under target/ when it is missing there. Exits
# non-zero when the test fails.
#
#   examples/cosim/cocotb/run.sh             # debug build of the library
#   PROFILE=release examples/cosim/cocotb/run.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
cd "$root"
profile="${PROFILE:-debug}"
cocotb_version=2.1.0
export PYTHONDONTWRITEBYTECODE=1

if ! command -v iverilog >/dev/null 2>&1; then
  echo "iverilog is not installed (Debian: apt-get install iverilog)" >&2
  exit 1
fi

if [ "$profile" = release ]; then
  cargo build --quiet --locked --release -p ethlink-ffi
else
  cargo build --quiet --locked -p ethlink-ffi
fi

venv="$root/target/cocotb/venv"
if ! "$venv/bin/python" -c "import cocotb, sys; sys.exit(cocotb.__version__ != '$cocotb_version')" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "cocotb==$cocotb_version"
fi

target="${CARGO_TARGET_DIR:-$root/target}"
out="$target/$profile/cosim-cocotb"
mkdir -p "$out"
t0=$(date +%s.%N)
"$venv/bin/python" "$here/run.py" "$target/$profile/libethlink_ffi.so" "$out"
t1=$(date +%s.%N)
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "cocotb build and test: %.2f s\n", b - a }'

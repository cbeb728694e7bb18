#!/usr/bin/env bash
# Builds the SystemVerilog testbench of the EthLink models (tb_ethlink.sv over DPI-C) with
# Verilator, linking the static library of ethlink-ffi by absolute path, and runs its two
# tests, then the link test once more with no frame damaged, which must fail. Prints the build
# and run times; exits non-zero when the build fails or a test does not end as it must.
#
#   examples/cosim/verilator/run.sh            # debug build of the library
#   PROFILE=release examples/cosim/verilator/run.sh
#   JOBS=4 examples/cosim/verilator/run.sh     # parallel C++ compilation (default 2)
#   OPT=-O2 examples/cosim/verilator/run.sh    # optimisation of the model's C++ (default -O1:
#                                              # the shortest build and run of these tests)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
cd "$root"
profile="${PROFILE:-debug}"

if ! command -v verilator >/dev/null 2>&1; then
  echo "verilator is not installed (Debian: apt-get install verilator)" >&2
  exit 1
fi

if [ "$profile" = release ]; then
  cargo build --quiet --locked --release -p ethlink-ffi
else
  cargo build --quiet --locked -p ethlink-ffi
fi
target="${CARGO_TARGET_DIR:-$root/target}"
lib="$target/$profile/libethlink_ffi.a"
out="$target/$profile/cosim-verilator"
top=tb_ethlink

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

echo "$(verilator --version)"
# The build does not track the library: relink whenever it is newer than the testbench.
if [ -e "$out/V$top" ] && [ "$lib" -nt "$out/V$top" ]; then
  rm -f "$out/V$top"
fi
t0=$(now)
verilator --binary --timing -j "${JOBS:-2}" --quiet-exit -MAKEFLAGS "OPT_FAST=${OPT:--O1} OPT_SLOW=-O0" \
  --top-module "$top" --prefix "V$top" -Mdir "$out" \
  -CFLAGS "-I$root/include -DETHLINK_DPI_HEADER=V${top}__Dpi.h" \
  -LDFLAGS "$lib" -LDFLAGS -lpthread -LDFLAGS -ldl -LDFLAGS -lm \
  "$here/ethlink_dpi_pkg.sv" "$here/$top.sv" "$here/ethlink_dpi.cc" >"$out.log" 2>&1 || {
  cat "$out.log" >&2
  echo "the Verilator build failed" >&2
  exit 1
}
t1=$(now)
echo "verilator build: $(elapsed "$t0" "$t1") s (into ${out#"$root"/})"

ulimit -c 0
for test in link endpoint; do
  t0=$(now)
  timeout 600 "$out/V$top" "+test=$test"
  t1=$(now)
  echo "test $test: $(elapsed "$t0" "$t1") s"
done

# The checks can fail: without the damaged frame there is no NACK and no replay.
# ($fatal aborts the model; an inner shell takes the signal, so the abort is reported in the log
# rather than on this script's standard error.)
if bash -c 'timeout 600 "$1" +test=link +damage=0; exit $?' _ "$out/V$top" >"$out.negative.log" 2>&1; then
  cat "$out.negative.log" >&2
  echo "the link test passed with no frame damaged: its checks do not hold" >&2
  exit 1
fi
grep -q "check failed: B counted the damaged frame's FCS error" "$out.negative.log" || {
  cat "$out.negative.log" >&2
  echo "the link test with no frame damaged failed for another reason than expected" >&2
  exit 1
}
echo "test link with no frame damaged fails as it must"

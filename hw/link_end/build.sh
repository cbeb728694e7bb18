#!/usr/bin/env bash
# Builds el_bridge: the Verilated link end el_link_end (rtl/) with its line-protocol bridge
# (bridge/bridge.cpp), and prints the path of the executable on standard output (everything
# else goes to standard error).
#
#   bash hw/link_end/build.sh [--width 8|64] [--out DIR] [--rtl DIR] [--param NAME=VALUE]... [--trace]
#
#   --width W         bytes per beat of the AXI4-Stream ports: 8 (64-bit, default) or 64 (512-bit)
#   --out DIR         Verilator's output directory; default target/hw/link_end_w<W> in the repository
#   --rtl DIR         the SystemVerilog sources (every *.sv in it, packages first); default hw/link_end/rtl
#   --param N=V       another parameter of el_link_end (RPL_BYTES, RPL_FRAMES, TXQ_BYTES), repeatable
#   --trace           build with VCD tracing, so that `el_bridge --trace FILE` works (slower)
#
# Then: ethlink conformance --dut-cmd "$(bash hw/link_end/build.sh)"
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

width=8
out=""
rtl="$here/rtl"
params=()
trace=()

die() { echo "build.sh: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
  case "$1" in
    --width) [ $# -ge 2 ] || die "--width needs a value"; width=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || die "--out needs a value"; out=$2; shift 2 ;;
    --rtl) [ $# -ge 2 ] || die "--rtl needs a value"; rtl=$2; shift 2 ;;
    --param)
      [ $# -ge 2 ] || die "--param needs NAME=VALUE"
      [[ $2 =~ ^[A-Za-z_][A-Za-z0-9_]*=[0-9]+$ ]] || die "--param $2: expected NAME=VALUE"
      params+=("-G$2"); shift 2 ;;
    --trace) trace=(--trace -CFLAGS -DEL_TRACE); shift ;;
    -h|--help) sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 0 ;;
    *) die "unknown argument $1 (try --help)" ;;
  esac
done

case "$width" in
  8) tick=2 ;;   # the bridge's default tick for W = 8: 64 bits every 2 ns, 32 Gb/s for 25 Gb/s
  64) tick=1 ;;  # W = 64: 512 bits every ns, 512 Gb/s for 400 Gb/s
  *) die "--width must be 8 or 64" ;;
esac
[ -n "$out" ] || out="$root/target/hw/link_end_w$width"
command -v verilator >/dev/null || die "verilator is not installed"
[ -d "$rtl" ] || die "no RTL directory $rtl"
rtl=$(cd "$rtl" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

# Packages first, so that every module that imports one finds it defined.
shopt -s nullglob
pkgs=("$rtl"/*pkg*.sv)
srcs=("${pkgs[@]}")
for f in "$rtl"/*.sv; do
  case "$f" in *pkg*.sv) ;; *) srcs+=("$f") ;; esac
done
[ ${#srcs[@]} -gt 0 ] || die "no *.sv in $rtl"

# -O3 and the X options are Verilator's; OPT_FAST/OPT_GLOBAL are the C++ optimisation of the
# model (Verilator's default is -Os).
verilator --cc --exe --build -O3 --x-assign fast --x-initial fast -Wno-fatal \
  --top-module el_link_end "-GW=$width" "-GTICK_NS=$tick" ${params[@]+"${params[@]}"} \
  ${trace[@]+"${trace[@]}"} \
  -CFLAGS -std=c++17 -CFLAGS -O2 -MAKEFLAGS "OPT_FAST=-O2 OPT_GLOBAL=-O2" -j 2 \
  -Mdir "$out" -o el_bridge \
  "${srcs[@]}" "$here/bridge/bridge.cpp" >&2

[ -x "$out/el_bridge" ] || die "the build made no $out/el_bridge"
echo "$out/el_bridge"

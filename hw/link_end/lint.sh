#!/usr/bin/env bash
# Lints the link end with Verilator's every warning on, at both parameter points of
# docs/hardware.md; any warning fails.
set -euo pipefail
cd "$(dirname "$0")/rtl"
files="el_pkg.sv el_ram.sv el_rx.sv el_sub.sv el_tx.sv el_up.sv el_link_end.sv"
for point in "-GW=8 -GTICK_NS=2" "-GW=64 -GTICK_NS=1 -GRPL_BYTES=131072"; do
  # shellcheck disable=SC2086
  out=$(verilator --lint-only -Wall $point $files --top-module el_link_end 2>&1) || true
  if [ -n "$out" ]; then
    echo "$out" >&2
    echo "hw/link_end/lint.sh: warnings at $point" >&2
    exit 1
  fi
  echo "verilator --lint-only -Wall $point: clean"
done

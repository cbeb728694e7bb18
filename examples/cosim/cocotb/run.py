"""Builds ethlink_wires.v with Icarus Verilog and runs test_link.py on it through cocotb's
runner; exits non-zero when the test fails.

    python run.py LIBRARY BUILD_DIR

SPDX-License-Identifier: MIT OR Apache-2.0
"""

import sys
from pathlib import Path

from cocotb_tools.check_results import get_results
from cocotb_tools.runner import get_runner


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: run.py LIBRARY BUILD_DIR")
    library = Path(sys.argv[1]).resolve()
    build_dir = Path(sys.argv[2]).resolve()
    if not library.is_file():
        sys.exit(f"{library}: no such library (cargo build -p ethlink-ffi)")
    here = Path(__file__).resolve().parent
    runner = get_runner("icarus")
    runner.build(
        sources=[here / "ethlink_wires.v"],
        hdl_toplevel="ethlink_wires",
        build_dir=build_dir,
        timescale=("1ns", "1ps"),
        always=True,
    )
    xml = runner.test(
        hdl_toplevel="ethlink_wires",
        test_module="test_link",
        test_dir=here,
        build_dir=build_dir,
        extra_env={"ETHLINK_FFI_LIB": str(library)},
        results_xml=str(build_dir / "results.xml"),
    )
    tests, failed = get_results(Path(xml))
    if tests == 0 or failed != 0:
        sys.exit(f"{failed} of {tests} cocotb tests failed")
    print(f"{tests} passed, {failed} failed")


if __name__ == "__main__":
    main()

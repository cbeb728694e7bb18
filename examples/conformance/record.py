#!/usr/bin/env python3
"""Records the line-protocol exchange with a device (docs/conformance.md).

    ethlink conformance --filter LE-LLR-1 \
        --dut-cmd "python3 examples/conformance/record.py /tmp/llr1.jsonl python3 examples/conformance/link_end.py"

runs the device command given after the transcript file, passes every request line to it and
every answer line back, and appends both to the transcript, requests prefixed with "> " and
answers with "< ". Standard library only.
"""

import subprocess
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: record.py TRANSCRIPT COMMAND [ARG...]")
    log = open(sys.argv[1], "a", buffering=1)
    dev = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    for line in sys.stdin:
        log.write("> " + line)
        dev.stdin.write(line)
        dev.stdin.flush()
        answer = dev.stdout.readline()
        if not answer:
            break
        log.write("< " + answer)
        sys.stdout.write(answer)
        sys.stdout.flush()
    dev.stdin.close()
    sys.exit(dev.wait())


if __name__ == "__main__":
    main()

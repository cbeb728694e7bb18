"""Stopping a run of `ethlink conformance` and the devices it started, for the mutation scripts
(scripts/mutants_python.py, scripts/mutants_rtl.py): a device runs in a process group of its
own, so a killed ethlink can leave one behind."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

# Seconds ethlink has after SIGTERM to stop its devices and exit.
TERM_GRACE_S = 10.0


def kill_leftovers(marker: str) -> None:
    """Kills, by pid, the processes whose command line holds `marker` (the run's work
    directory): the devices a stopped ethlink left behind."""
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            try:
                os.kill(int(entry.name), signal.SIGKILL)
            except OSError:
                pass


def stop(proc: subprocess.Popen, marker: str) -> None:
    """SIGTERM makes ethlink stop its devices and exit; one that does not is killed, with its
    process group and whatever it left behind."""
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=TERM_GRACE_S)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()
    kill_leftovers(marker)

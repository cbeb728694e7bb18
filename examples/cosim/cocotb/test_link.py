"""cocotb test: two EthLink link ends (libethlink_ffi.so through ctypes) joined by the Verilog
cable of ethlink_wires.v. Frames cross the cable one byte per clock; the test raises the
cable's `corrupt` input on one byte of one DATA frame, and checks that the receiver NACKs, the
sender replays from the damaged frame, and every payload arrives once and in order on its VC.

Run by run.py (examples/cosim/cocotb/run.sh); ETHLINK_FFI_LIB names the library.

SPDX-License-Identifier: MIT OR Apache-2.0
"""

import os

import cocotb
from cocotb.clock import Clock
from cocotb.simtime import get_sim_time
from cocotb.triggers import RisingEdge

from ethlink_ctypes import EVENT_DELIVERED, EVENT_LINK_DOWN, EVENT_LINK_UP, EVENT_LOST, Ethlink

CLOCK_NS = 2
PAYLOADS = 16
VCS = 2
# The first transmission of this DATA frame (counting from 1) is damaged.
DAMAGE_AT = 3

KIND_DATA = 0
KIND_NACK = 2


def link_header(frame):
    """Kind, REPLAY flag and sequence number of a frame's link header (wire.md §3)."""
    o = 18 if frame[12:14] == b"\x81\x00" else 14
    kind = frame[o] & 0x0F
    replay = frame[o + 1] & 1
    seq = ((frame[o + 3] & 0x0F) << 16) | (frame[o + 4] << 8) | frame[o + 5]
    return kind, replay, seq


def make_payload(i):
    """The network header (to GPU 2 from GPU 1, one transaction), then a body of its own."""
    body = 24 + (i * 53) % 300
    head = bytes([0, 2, 0, 1, 0, 1, body >> 8, body & 0xFF])
    return head + bytes((i * 7 + j * 13 + 5) & 0xFF for j in range(body))


class Side:
    """One link end with the transmit half of its cable's input and the receive half of the
    other direction's output."""

    def __init__(self, name, handle, tx, rx):
        self.name = name
        self.h = handle
        self.tx = tx  # (valid, last, data, corrupt) signals the end drives
        self.rx = rx  # (valid, last, data) signals the end receives
        self.sending = b""
        self.pos = 0
        self.corrupt_at = -1
        self.receiving = bytearray()


@cocotb.test()
async def damaged_frame_is_nacked_and_replayed(dut):
    lib = Ethlink(os.environ["ETHLINK_FFI_LIB"])
    try:
        await run(dut, lib)
    finally:
        lib.close()


async def run(dut, lib):
    Clock(dut.clk, CLOCK_NS, unit="ns").start()
    a = Side(
        "A",
        lib.link_end_new(0x0A, 11, tx_queue_frames=4),
        (dut.ab_in_valid, dut.ab_in_last, dut.ab_in_data, dut.ab_corrupt),
        (dut.ba_out_valid, dut.ba_out_last, dut.ba_out_data),
    )
    b = Side(
        "B",
        lib.link_end_new(0x0B, 12),
        (dut.ba_in_valid, dut.ba_in_last, dut.ba_in_data, dut.ba_corrupt),
        (dut.ab_out_valid, dut.ab_out_last, dut.ab_out_data),
    )
    sides = (a, b)
    for s in sides:
        for sig in s.tx:
            sig.value = 0
    await RisingEdge(dut.clk)

    seen = {"first": 0, "replays": 0, "nacks": 0, "damaged": None, "nack_last_good": None}
    seen["first_replay"] = None
    links_up = 0
    submitted = [[] for _ in range(VCS)]
    delivered = [0] * VCS
    problems = []

    def tap(side, frame):
        """Looks at every frame as it enters the cable; picks the byte to damage."""
        kind, replay, seq = link_header(frame)
        if side is a and kind == KIND_DATA:
            if replay:
                if seen["replays"] == 0:
                    seen["first_replay"] = seq
                seen["replays"] += 1
                return
            seen["first"] += 1
            if seen["first"] == DAMAGE_AT:
                side.corrupt_at = len(frame) // 2
                seen["damaged"] = seq
                dut._log.info("DATA frame seq %d (%d bytes) is damaged on the cable", seq,
                              len(frame))
        elif side is b and kind == KIND_NACK:
            if seen["nacks"] == 0:
                seen["nack_last_good"] = seq
            seen["nacks"] += 1

    def on_event(side, event, data):
        nonlocal links_up
        if event.kind == EVENT_LINK_UP:
            links_up += 1
        elif event.kind == EVENT_DELIVERED:
            vc = event.vc
            if side is not b or vc >= VCS or not submitted[vc]:
                problems.append(f"{side.name} delivered an unexpected payload on VC {vc}")
                return
            want = submitted[vc].pop(0)
            if data != want:
                problems.append(f"payload {delivered[vc]} of VC {vc} differs from the one sent")
            delivered[vc] += 1
        elif event.kind in (EVENT_LOST, EVENT_LINK_DOWN):
            problems.append(f"{side.name}: event {event.kind} (reason {event.reason})")

    def cycle():
        now = int(get_sim_time(unit="ns"))
        # Arrivals: bytes leaving the cable, a frame at its last byte.
        for s in sides:
            valid, last, data = s.rx
            if int(valid.value):
                s.receiving.append(int(data.value))
                if int(last.value):
                    lib.handle_frame(s.h, now, s.receiving)
                    s.receiving = bytearray()
        # Timers.
        for s in sides:
            deadline = lib.poll_timeout(s.h)
            if deadline is not None and deadline <= now:
                lib.handle_timeout(s.h, now)
        # Transmission: the next frame is taken when the cable's input is free.
        for s in sides:
            valid, last, data, corrupt = s.tx
            if s.pos >= len(s.sending):
                frame = lib.poll_transmit(s.h, now)
                s.sending, s.pos, s.corrupt_at = (frame or b""), 0, -1
                if frame:
                    tap(s, frame)
            if s.pos < len(s.sending):
                valid.value = 1
                data.value = s.sending[s.pos]
                last.value = int(s.pos == len(s.sending) - 1)
                corrupt.value = int(s.pos == s.corrupt_at)
                s.pos += 1
            else:
                valid.value = 0
                last.value = 0
                corrupt.value = 0
        # Events.
        for s in sides:
            while (e := lib.poll_event(s.h)) is not None:
                on_event(s, *e)

    now = int(get_sim_time(unit="ns"))
    for s in sides:
        lib.physical(s.h, 1, now)
    for _ in range(20_000 // CLOCK_NS):
        cycle()
        await RisingEdge(dut.clk)
        if links_up == 2:
            break
    assert links_up == 2, "the link ends did not come up"

    refusals = 0
    for i in range(PAYLOADS):
        payload, vc = make_payload(i), i % VCS
        while not lib.submit(a.h, vc, payload):
            refusals += 1
            cycle()
            await RisingEdge(dut.clk)
        submitted[vc].append(payload)
    for _ in range(400_000 // CLOCK_NS):
        cycle()
        await RisingEdge(dut.clk)
        if sum(delivered) == PAYLOADS:
            break
    # Settle: a late duplicate would show here.
    for _ in range(10_000 // CLOCK_NS):
        cycle()
        await RisingEdge(dut.clk)

    counters = {
        "B rx_fcs_errors": lib.counter(b.h, "rx_fcs_errors"),
        "B nacks_sent": lib.counter(b.h, "nacks_sent"),
        "A nacks_received": lib.counter(a.h, "nacks_received"),
        "A replays_by_nack": lib.counter(a.h, "replays_by_nack"),
        "A frames_replayed": lib.counter(a.h, "frames_replayed"),
    }
    dut._log.info("delivered %s, refusals %d, seen on the cable %s, counters %s", delivered,
                  refusals, seen, counters)
    assert not problems, problems
    assert refusals > 0, "A's transmit queue never pushed back"
    assert seen["damaged"] is not None, "no DATA frame was damaged"
    assert counters["B rx_fcs_errors"] == 1, "B did not count exactly one FCS error"
    assert seen["nacks"] >= 1 and counters["B nacks_sent"] == seen["nacks"], "NACKs"
    assert seen["nack_last_good"] == (seen["damaged"] - 1) % (1 << 20), "NACK's last good"
    assert counters["A nacks_received"] == seen["nacks"], "A did not receive every NACK"
    assert counters["A replays_by_nack"] >= 1, "A did not replay on the NACK"
    assert seen["replays"] >= 1 and counters["A frames_replayed"] == seen["replays"], "replays"
    assert seen["first_replay"] == seen["damaged"], "the replay did not start at the damage"
    assert delivered == [PAYLOADS // VCS] * VCS and not any(submitted), "payloads missing"

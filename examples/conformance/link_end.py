#!/usr/bin/env python3
"""A small EthLink link end speaking the conformance line protocol (docs/conformance.md).

Standard library only. It implements one end of one link as docs/spec/link.md specifies it:
bring-up with INIT and INIT_ECHO, link-level retry (sequence numbers, cumulative ACK, NACK on a
damaged frame or a gap, go-back-N replay with the REPLAY flag, the replay timer, FLUSH, the
withdrawal of frames not sent yet), credit-based flow control (CF and CC) and the receive pipeline
of wire.md section 7 up to link-layer acceptance, with the counters of link.md Table LINK-T3.

Run it as the device under test:

    ethlink conformance --dut-cmd "python3 examples/conformance/link_end.py"

It reads one JSON request per line on standard input and writes one JSON answer per line on
standard output; it logs nothing unless ETHLINK_DEVICE_LOG is set, and then to standard error.
"""

import argparse
import json
import os
import sys
import zlib

PROTOCOL_VERSION = 2
ETHERTYPE = 0x88B5
SEQ_MOD = 1 << 20
SEQ_MASK = SEQ_MOD - 1
HALF = 1 << 19
DATA, ACK, NACK, CF, CC, INIT, INIT_ECHO = range(7)
REPLAY_FLAG, ACK_REQ_FLAG = 1, 2
MY_MAC = bytes([0x02, 0x00, 0x00, 0x00, 0x0E, 0x02])
DEFAULT_DST = bytes([0x01, 0x80, 0xC2, 0x00, 0x00, 0x0E])
LOG = bool(os.environ.get("ETHLINK_DEVICE_LOG"))

DEFAULTS = {
    "vcs": 4,
    "credit_size": 64,
    "rx_credits": 1280,
    "credit_overhead": 0,
    "mfs": 9216,
    "llr_window": 1 << 19,
    "replay_max_frames": 115,
    "replay_max_bytes": 58768,
    "ack_spacing": 2048,
    "ack_timer_ns": 500,
    "replay_timer_ns": 5000,
    "replay_count_max": 3,
    "cf_min_credits": 8,
    "cf_min_interval_ns": 100,
    "cf_max_interval_ns": 2000,
    "cc_interval_ns": 10000,
    "init_interval_ns": 1000,
    "init_timeout_ns": 1_000_000,
    "llr_max_age_ns": 25000,
}

LINK_COUNTERS = (
    "acks_sent acks_received nacks_sent nacks_received frames_replayed replays_by_nack "
    "replay_timeouts flushes flushes_aged frames_unknown_fate rx_fcs_errors rx_damaged rx_stomped rx_foreign "
    "rx_bad_version rx_unknown_kind rx_malformed_control rx_vc_not_agreed rx_not_up duplicates "
    "discarded_after_nack stale_acks stale_cf_entries stale_cc_entries cf_sent cf_received "
    "cc_sent cc_received inits_sent inits_received init_echoes_sent init_echoes_received "
    "init_echoes_ignored init_refused init_timeouts link_ups reinits oversize_for_peer "
    "not_agreed_vc frames_withdrawn tx_stomped replay_bytes_max replay_frames_max "
    "rx_occupied_max_credits replay_age_max_ns"
).split()
VC_COUNTERS = (
    "tx_frames tx_bytes rx_frames rx_bytes credit_overruns credit_stalls credit_stall_ns "
    "credits_recovered"
).split()


class Refused(Exception):
    """The request or setting is outside what this device supports."""


def log(*args):
    if LOG:
        print(*args, file=sys.stderr, flush=True)


def seq_add(a, b):
    return (a + b) & SEQ_MASK


def seq_diff(a, b):
    """(a - b) modulo 2^20."""
    return (a - b) & SEQ_MASK


def fcs(content):
    return zlib.crc32(content) & 0xFFFFFFFF


def ceil_div(a, b):
    return -(-a // b)


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return z ^ (z >> 31)


class Frame:
    """A parsed frame that passed the pipeline up to the kind (wire.md section 7, stages 1-5)."""

    def __init__(self, raw, hdr, kind, vc, flags, seq, body):
        self.raw, self.hdr, self.kind, self.vc = raw, hdr, kind, vc
        self.flags, self.seq, self.body = flags, seq, body


class LinkEnd:
    def __init__(self, tick_ns=1, rate_gbps=None):
        self.tick = tick_ns  # the timer clock's tick (LINK-1-5)
        self.rate = rate_gbps  # None: frames leave as they are made; else serialised at this rate
        self.reset({})

    # ---------------------------------------------------------------- set-up

    def reset(self, setup):
        link = dict(setup.get("link") or {})
        p = dict(DEFAULTS)
        for k, v in link.items():
            if k not in p:
                raise Refused("unknown link parameter %s" % k)
            p[k] = int(v)
        self.check_params(p)
        self.p = p
        self.seed = int(setup.get("seed", 0))
        self.draws = 0
        self.nonce = 0
        self.now = 0
        self.c = {k: 0 for k in LINK_COUNTERS}
        for k in VC_COUNTERS:
            for v in range(8):
                self.c["%s.vc%d" % (k, v)] = 0
        self.out = []
        self.txq = []  # (first bit, frame, last bit): frames made, in wire order, not yet told
        self.wire_free = 0  # when the frame on the wire ends
        self.phys = False
        self.state = "OFF"  # OFF, INIT, UP
        self.peer_mac = None
        self.peer_nonce = None
        self.queues = [[] for _ in range(8)]  # payloads submitted, not sent yet
        self.rr = 0
        self.hold = [False] * 8
        self.held = [[] for _ in range(8)]  # (incarnation, cost) of payloads kept by a hold
        self.incarnation = 0  # advances at every edge out of UP (LINK-6-4)
        self.echo_due = None  # nonce of the newest INIT to answer
        self.echoed = set()
        self.init_next = None
        self.init_deadline = None
        self.stall_since = [None] * 8
        self.peer = None
        self.reset_link_state()
        return dict(p)

    @staticmethod
    def check_params(p):
        ranges = {
            "vcs": (1, 8),
            "credit_size": (32, 2048),
            "rx_credits": (1, (1 << 19) - 1),
            "credit_overhead": (0, 255),
            "mfs": (320, 9216),
            "llr_window": (1, 1 << 19),
            "replay_max_frames": (1, p["llr_window"]),
            "replay_max_bytes": (p["mfs"], 1 << 30),
            "ack_spacing": (64, 1 << 20),
            "ack_timer_ns": (1, 10**9),
            "replay_timer_ns": (1, 10**9),
            "replay_count_max": (1, 255),
            "cf_min_credits": (1, (1 << 32) - 1),
            "cf_min_interval_ns": (0, 10**9),
            "cf_max_interval_ns": (1, 10**9),
            "cc_interval_ns": (1, 10**9),
            "init_interval_ns": (1, 10**9),
            "init_timeout_ns": (1, 10**9),
            "llr_max_age_ns": (1, 10**9),
        }
        for k, (lo, hi) in ranges.items():
            if not lo <= p[k] <= hi:
                raise Refused("%s = %d is outside %d..%d" % (k, p[k], lo, hi))
        if p["credit_size"] & (p["credit_size"] - 1):
            raise Refused("credit_size %d is not a power of two" % p["credit_size"])
        if p["init_timeout_ns"] < p["init_interval_ns"]:
            raise Refused("init_timeout_ns must be at least init_interval_ns")
        if p["cf_min_interval_ns"] >= p["cf_max_interval_ns"]:
            raise Refused("cf_min_interval_ns must be below cf_max_interval_ns")
        if p["rx_credits"] * p["credit_size"] < p["mfs"] + p["credit_overhead"]:
            raise Refused("rx_credits cannot hold one frame of the MFS (LINK-2-13)")

    def reset_link_state(self):
        """What LINK-2-5 resets on entering UP (and the state of a fresh end)."""
        # TX
        self.tx_seq = 0
        self.replay = []  # (seq, frame bytes, vc, payload, first sent at), oldest first
        self.replay_bytes = 0
        self.replay_next = None  # index of the next frame to re-send, None: not replaying
        self.replay_sent_first = False
        self.replay_count = 0
        self.replay_deadline = None
        self.consumed = [0] * 8
        self.freed_seen = [0] * 8
        self.cc_deadline = None
        # RX
        self.rx_state = "OFF"
        self.expected = 0
        self.last_good = SEQ_MASK
        self.remembered = None
        self.dup_run = False
        self.dup_bytes = 0
        self.ack_due = False
        self.nack_due = False
        self.bytes_since_ack = 0
        self.ack_deadline = None
        self.received = [0] * 8
        self.freed = [0] * 8
        self.freed_since_cf = 0
        self.last_cf = None
        self.cf_due = False
        self.cf_max_deadline = None
        self.gate_open = False

    # ---------------------------------------------------------------- helpers

    def emit(self, o):
        self.out.append(o)

    def tick_up(self, t):
        """The first tick of the timer clock at or after t (LINK-1-5)."""
        return -(-t // self.tick) * self.tick

    def expiry(self, duration):
        """When a timer started now for duration acts."""
        return self.tick_up(self.now + duration)

    def draw_nonce(self):
        while True:
            seed = (self.seed * 2 + 1) & 0xFFFFFFFFFFFFFFFF
            x = (seed + self.draws * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
            self.draws += 1
            n = splitmix64(x) >> 32
            if n != 0 and n != self.nonce:
                self.nonce = n
                return

    def agreed_vcs(self):
        return min(self.p["vcs"], self.peer["vcs"])

    def agreed_mfs(self):
        return min(self.p["mfs"], self.peer["mfs"])

    def mfs_in_force(self):
        return self.agreed_mfs() if self.state == "UP" else self.p["mfs"]

    def window(self):
        return min(self.p["llr_window"], self.peer["llr_window"])

    def build(self, kind, body=b"", vc=0, flags=0, seq=0):
        dst = self.peer_mac or DEFAULT_DST
        hdr = bytes([0x10 | kind, (vc << 5) | flags]) + (seq & SEQ_MASK).to_bytes(4, "big")
        content = dst + MY_MAC + ETHERTYPE.to_bytes(2, "big") + hdr + body
        if len(content) < 60:
            content += bytes(60 - len(content))
        return content + fcs(content).to_bytes(4, "little")

    def send(self, frame):
        """Puts frame on the wire: now, or once the frames before it have left. Returns the time
        its first bit leaves."""
        t = self.now
        end = t
        if self.rate:
            t = max(t, self.wire_free)
            end = t + -(-(len(frame) + 20) * 8 // self.rate)  # ser(n) of link.md 1.2
            self.wire_free = end
        self.txq.append((t, frame, end))
        return t

    def drop_unsent(self):
        """The link went down: frames whose first bit has not left never will."""
        self.txq = [x for x in self.txq if x[0] <= self.now]
        self.wire_free = max([self.now] + [x[2] for x in self.txq])

    def params_body(self, echo):
        p = self.p
        b = self.nonce.to_bytes(4, "big") + echo.to_bytes(4, "big")
        b += bytes([p["vcs"], p["credit_overhead"]]) + p["credit_size"].to_bytes(2, "big")
        b += p["mfs"].to_bytes(2, "big") + (0).to_bytes(2, "big")  # role link end, no capability
        b += p["llr_window"].to_bytes(4, "big")
        for v in range(8):
            b += (p["rx_credits"] if v < p["vcs"] else 0).to_bytes(4, "big")
        return b

    def credit_body(self, values):
        n = self.agreed_vcs()
        b = bytes([(1 << n) - 1, 0, 0, 0])
        for v in range(8):
            b += (values[v] & SEQ_MASK if v < n else 0).to_bytes(4, "big")
        return b

    def lose(self, vc, reason, payload):
        self.emit({"out": "lost", "port": 0, "vc": vc, "reason": reason, "payload": payload.hex()})

    # ---------------------------------------------------------------- bring-up

    def enter_init(self):
        self.state = "INIT"
        self.draw_nonce()
        self.echoed = set()
        self.init_next = self.now
        self.init_deadline = self.expiry(self.p["init_timeout_ns"])

    def leave_up(self, reason):
        """Every edge out of UP (Table LINK-T6), or physical down from INIT."""
        was_up = self.state == "UP"
        self.drop_unsent()
        self.incarnation += 1
        lost = len(self.replay)
        # LINK-6-7: the link-down event first, then the frames of unknown fate in order.
        if was_up or lost:
            self.emit({"out": "link_down", "port": 0, "reason": reason})
        for _, frame, vc, payload, _ in self.replay:
            self.lose(vc, "unknown_fate", payload)
        self.c["frames_unknown_fate"] += lost
        self.replay = []
        self.replay_bytes = 0
        self.replay_next = None
        self.replay_count = 0
        self.replay_deadline = None
        self.cc_deadline = None
        self.cf_max_deadline = None
        self.rx_state = "OFF"
        self.ack_due = self.nack_due = False
        self.ack_deadline = None
        self.gate_open = False
        self.end_stalls()
        if was_up or self.state == "INIT":
            self.c["reinits"] += 1

    def come_up(self, peer):
        self.peer = peer
        self.peer_nonce = peer["nonce"]
        self.reset_link_state()
        self.state = "UP"
        self.rx_state = "SEND_ACKS"
        self.init_next = self.init_deadline = None
        self.cc_deadline = self.expiry(self.p["cc_interval_ns"])
        self.cf_max_deadline = self.expiry(self.p["cf_max_interval_ns"])
        self.gate_open = self.peer_nonce in self.echoed
        self.c["link_ups"] += 1
        self.c["init_echoes_received"] += 1
        self.emit({"out": "link_up", "port": 0})
        # Queued frames the agreed parameters cannot carry are reported now.
        for v in range(8):
            keep = []
            for payload in self.queues[v]:
                if v >= self.agreed_vcs():
                    self.c["not_agreed_vc"] += 1
                    self.lose(v, "vc_not_agreed", payload)
                elif self.data_len(payload) > self.agreed_mfs():
                    self.c["oversize_for_peer"] += 1
                    self.lose(v, "exceeds_peer_mfs", payload)
                else:
                    keep.append(payload)
            self.queues[v] = keep

    def refuses(self, peer):
        """LINK-2-12: the grants of `peer` cannot carry a frame of the agreed MFS."""
        vcs = min(self.p["vcs"], peer["vcs"])
        mfs = min(self.p["mfs"], peer["mfs"])
        need = ceil_div(mfs + peer["credit_overhead"], peer["credit_size"])
        return any(peer["grants"][v] < need for v in range(vcs))

    def on_init(self, f, peer):
        if self.refuses(peer):
            self.c["init_refused"] += 1
            return
        self.c["inits_received"] += 1
        self.peer_mac = f.raw[6:12]
        if self.state == "UP" and peer["nonce"] != self.peer_nonce:
            self.leave_up("peer_restart")
            self.enter_init()
        self.echo_due = peer["nonce"]

    def on_init_echo(self, f, peer):
        # LINK-2-18: no UP while the buffer holds a payload of an earlier incarnation.
        if self.state != "INIT" or peer["echo"] != self.nonce or self.holds_stale():
            self.c["init_echoes_ignored"] += 1
            return
        if self.refuses(peer):
            self.c["init_refused"] += 1
            return
        self.peer_mac = f.raw[6:12]
        self.come_up(peer)

    # ---------------------------------------------------------------- receive

    def on_frame(self, raw):
        n = len(raw)
        if n < 64 or n > self.mfs_in_force():
            self.c["rx_damaged"] += 1
            self.damaged()
            return
        good = fcs(raw[:-4])
        got = int.from_bytes(raw[-4:], "little")
        if got != good:
            if got == good ^ 0xFFFFFFFF:
                self.c["rx_stomped"] += 1
            else:
                self.c["rx_fcs_errors"] += 1
                self.damaged()
            return
        off = 12
        if raw[12:14] == b"\x81\x00":
            off = 16
        if int.from_bytes(raw[off : off + 2], "big") != ETHERTYPE:
            self.c["rx_foreign"] += 1
            return
        hdr = off + 2
        if raw[hdr] >> 4 != 1:
            self.c["rx_bad_version"] += 1
            return
        kind = raw[hdr] & 0x0F
        if kind > INIT_ECHO:
            self.c["rx_unknown_kind"] += 1
            return
        vc, flags = raw[hdr + 1] >> 5, raw[hdr + 1] & 0x1F
        seq = int.from_bytes(raw[hdr + 2 : hdr + 6], "big") & SEQ_MASK
        body = raw[hdr + 6 : -4]
        f = Frame(raw, hdr, kind, vc, flags, seq, body)
        if kind == DATA:
            self.on_data(f)
        else:
            self.on_control(f)

    def damaged(self):
        if self.state == "UP" and self.rx_state == "SEND_ACKS":
            self.rx_state = "SEND_NACK"
            self.nack_due = True
            self.remembered = None

    def on_control(self, f):
        size = {ACK: 0, NACK: 0, CF: 36, CC: 36, INIT: 52, INIT_ECHO: 52}[f.kind]
        pad = max(0, 60 - (f.hdr + 6 + size))
        if not size <= len(f.body) <= size + pad:
            self.c["rx_malformed_control"] += 1
            return
        body = f.body[:size]
        if f.kind in (INIT, INIT_ECHO):
            peer = self.parse_params(body)
            if peer is None:
                self.c["rx_malformed_control"] += 1
                return
            if not self.phys:
                self.c["rx_not_up"] += 1
                return
            (self.on_init if f.kind == INIT else self.on_init_echo)(f, peer)
            return
        if self.state != "UP":
            self.c["rx_not_up"] += 1
            return
        self.gate_open = True
        if f.kind == ACK:
            self.c["acks_received"] += 1
            self.on_ack(f.seq, nack=False)
        elif f.kind == NACK:
            self.c["nacks_received"] += 1
            self.on_ack(f.seq, nack=True)
        elif f.kind == CF:
            self.c["cf_received"] += 1
            self.on_cf(body)
        else:
            self.c["cc_received"] += 1
            self.on_cc(body)

    @staticmethod
    def parse_params(b):
        peer = {
            "nonce": int.from_bytes(b[0:4], "big"),
            "echo": int.from_bytes(b[4:8], "big"),
            "vcs": b[8],
            "credit_overhead": b[9],
            "credit_size": int.from_bytes(b[10:12], "big"),
            "mfs": int.from_bytes(b[12:14], "big"),
            "llr_window": int.from_bytes(b[16:20], "big") & SEQ_MASK,
            "grants": [int.from_bytes(b[20 + 4 * v : 24 + 4 * v], "big") & SEQ_MASK for v in range(8)],
        }
        cs = peer["credit_size"]
        ok = (
            1 <= peer["vcs"] <= 8
            and 32 <= cs <= 2048
            and cs & (cs - 1) == 0
            and 320 <= peer["mfs"] <= 9216
            and 1 <= peer["llr_window"] <= HALF
            and all(1 <= peer["grants"][v] < HALF for v in range(peer["vcs"]))
        )
        return peer if ok else None

    def on_data(self, f):
        if self.state != "UP":
            self.c["rx_not_up"] += 1
            return
        self.gate_open = True
        d = seq_diff(f.seq, self.expected)
        if d == 0:
            self.accept(f)
        elif 1 <= seq_diff(self.expected, f.seq) <= self.window():
            self.c["duplicates"] += 1
            # LINK-4-16: the first duplicate since an accept, a NACK or UP makes an ACK due;
            # then one per ack_spacing bytes of duplicates.
            if self.dup_run:
                self.dup_bytes += len(f.raw)
                if self.dup_bytes >= self.p["ack_spacing"]:
                    self.dup_bytes = 0
                    self.ack_due = True
            else:
                self.dup_run = True
                self.dup_bytes = 0
                self.ack_due = True
        else:
            self.c["discarded_after_nack"] += 1
            if self.rx_state == "SEND_ACKS":
                self.rx_state = "SEND_NACK"
                self.nack_due = True
                self.remembered = d
            elif self.rx_state == "SEND_NACK":
                self.remembered = d if self.remembered is None else max(self.remembered, d)
            else:  # NACK_SENT
                if self.remembered is not None and d <= self.remembered:
                    self.rx_state = "SEND_NACK"
                    self.nack_due = True
                self.remembered = d

    def accept(self, f):
        v = f.vc
        n = len(f.raw)
        if v < self.agreed_vcs():
            cost = ceil_div(n + self.p["credit_overhead"], self.p["credit_size"])
            occupied = seq_diff(self.received[v], self.freed[v])
            if cost > self.p["rx_credits"] - occupied:
                self.c["credit_overruns.vc%d" % v] += 1
                return
            self.received[v] = seq_add(self.received[v], cost)
            occ = sum(seq_diff(self.received[w], self.freed[w]) for w in range(8))
            self.c["rx_occupied_max_credits"] = max(self.c["rx_occupied_max_credits"], occ)
            self.c["rx_frames.vc%d" % v] += 1
            self.c["rx_bytes.vc%d" % v] += n
            payload = self.payload_of(f)
            self.emit({"out": "delivered", "port": 0, "vc": v, "payload": payload.hex()})
            if self.hold[v]:
                self.held[v].append((self.incarnation, cost))
            else:
                self.free(v, cost)
        else:
            self.c["rx_vc_not_agreed"] += 1
        self.last_good = self.expected
        self.expected = seq_add(self.expected, 1)
        if self.rx_state in ("SEND_NACK", "NACK_SENT"):
            self.nack_due = False
        self.rx_state = "SEND_ACKS"
        self.remembered = None
        self.dup_run = False
        self.bytes_since_ack += n
        if self.ack_deadline is None:
            self.ack_deadline = self.expiry(self.p["ack_timer_ns"])
        if self.bytes_since_ack >= self.p["ack_spacing"] or f.flags & ACK_REQ_FLAG:
            self.ack_due = True

    def payload_of(self, f):
        """The network header and what follows, without padding: the length comes from the
        network header's payload length when it is consistent, else the frame is handed up
        marked malformed (an empty payload, LINK-4-17)."""
        body = f.body
        if len(body) < 8:
            return b""
        total = 8 + int.from_bytes(body[6:8], "big")
        if total > len(body):
            return b""
        # Only padding may follow (WIRE-2.4-3): the content stops at 60 B, or at its own end.
        if len(body) > total and f.hdr + 6 + len(body) > max(60, f.hdr + 6 + total):
            return b""
        return body[:total]

    def holds_stale(self):
        """Whether a payload kept by a hold came in an earlier incarnation (LINK-6-4)."""
        return any(i != self.incarnation for held in self.held for i, _ in held)

    def free(self, v, cost):
        self.freed[v] = seq_add(self.freed[v], cost)
        self.freed_since_cf += cost

    def on_ack(self, s, nack):
        if self.replay:
            oldest = self.replay[0][0]
            n = seq_diff(s, seq_add(oldest, SEQ_MASK))
            ok = n <= len(self.replay)
        else:
            n = 0
            ok = s == seq_add(self.tx_seq, SEQ_MASK)
        if not ok:
            self.c["stale_acks"] += 1
            return
        if n:
            # The oldest frame acknowledged waited longest (replay_age_max_ns, LINK-3-18).
            age = self.now - self.replay[0][4]
            self.c["replay_age_max_ns"] = max(self.c["replay_age_max_ns"], age)
            for _ in range(n):
                _, frame, _, _, _ = self.replay.pop(0)
                self.replay_bytes -= len(frame)
            self.replay_count = 0
            if self.replay_next is not None:
                self.replay_next = max(0, self.replay_next - n)
                if self.replay_next >= len(self.replay):
                    self.replay_next = None
            self.replay_deadline = self.expiry(self.p["replay_timer_ns"]) if self.replay else None
        if nack and self.replay:
            self.start_replay("replays_by_nack")

    def start_replay(self, counter):
        if self.replay_next is not None and not self.replay_sent_first:
            # LINK-3-9: a replay is pending and has sent nothing yet.
            self.replay_deadline = self.expiry(self.p["replay_timer_ns"])
            return
        self.c[counter] += 1
        if self.replay_count >= self.p["replay_count_max"]:
            self.flush()
            return
        self.replay_count += 1
        self.replay_deadline = self.expiry(self.p["replay_timer_ns"])
        self.replay_next = 0
        self.replay_sent_first = False

    def flush(self):
        self.c["flushes"] += 1
        self.leave_up("flush")
        self.enter_init()

    def age_deadline(self):
        # LINK-3-18: the oldest frame's first transmission plus llr_max_age.
        return self.tick_up(self.replay[0][4] + self.p["llr_max_age_ns"]) if self.replay else None

    def aged(self):
        d = self.age_deadline()
        return self.state == "UP" and d is not None and d <= self.now

    def on_cf(self, b):
        mask = b[0]
        for v in range(8):
            if not mask >> v & 1:
                continue
            val = int.from_bytes(b[4 + 4 * v : 8 + 4 * v], "big") & SEQ_MASK
            if v >= self.agreed_vcs():
                self.c["stale_cf_entries"] += 1
                continue
            ahead = seq_diff(val, self.freed_seen[v])
            if ahead == 0:
                continue
            if ahead < HALF and seq_diff(self.consumed[v], val) < HALF:
                self.freed_seen[v] = val
            else:
                self.c["stale_cf_entries"] += 1

    def on_cc(self, b):
        mask = b[0]
        if mask == 0:
            return  # WIRE-4.3-2: ignored whole, no CF (LINK-5-13)
        for v in range(8):
            if not mask >> v & 1:
                continue
            val = int.from_bytes(b[4 + 4 * v : 8 + 4 * v], "big") & SEQ_MASK
            if v >= self.agreed_vcs():
                self.c["stale_cc_entries"] += 1
                continue
            d = seq_diff(val, self.received[v])
            if d == 0:
                continue
            if d < HALF:
                self.received[v] = seq_add(self.received[v], d)
                self.freed[v] = seq_add(self.freed[v], d)
                self.c["credits_recovered.vc%d" % v] += d
            else:
                self.c["stale_cc_entries"] += 1
        self.cf_due = True

    # ---------------------------------------------------------------- transmit

    def data_len(self, payload):
        return max(64, 14 + 6 + len(payload) + 4)

    def credit_left(self, v):
        return self.peer["grants"][v] - seq_diff(self.consumed[v], self.freed_seen[v])

    def end_stalls(self):
        for v in range(8):
            if self.stall_since[v] is not None:
                self.c["credit_stall_ns.vc%d" % v] += self.now - self.stall_since[v]
                self.stall_since[v] = None

    def transmit(self):
        """Sends every frame due now, in the order of LINK-3-15."""
        # LINK-2-18: no INIT_ECHO while the buffer holds a payload of an earlier incarnation.
        if self.echo_due is not None and self.phys and not self.holds_stale():
            self.send(self.build(INIT_ECHO, self.params_body(self.echo_due)))
            self.c["init_echoes_sent"] += 1
            self.echoed.add(self.echo_due)
            if self.state == "UP" and self.echo_due == self.peer_nonce:
                self.gate_open = True
            self.echo_due = None
        if self.state == "INIT" and self.phys and self.init_next is not None and self.init_next <= self.now:
            self.send(self.build(INIT, self.params_body(0)))
            self.c["inits_sent"] += 1
            self.init_next = self.expiry(self.p["init_interval_ns"])
        if self.state != "UP":
            return
        if self.nack_due:
            self.send(self.build(NACK, seq=self.last_good))
            self.c["nacks_sent"] += 1
            self.nack_due = self.ack_due = False
            self.rx_state = "NACK_SENT"
            self.dup_run = False
            self.bytes_since_ack = 0
            self.ack_deadline = None
        if self.ack_due:
            self.send(self.build(ACK, seq=self.last_good))
            self.c["acks_sent"] += 1
            self.ack_due = False
            self.bytes_since_ack = 0
            self.ack_deadline = None
        cf_ready = (
            self.freed_since_cf >= self.p["cf_min_credits"]
            and (self.last_cf is None or self.now >= self.tick_up(self.last_cf + self.p["cf_min_interval_ns"]))
        )
        if self.cf_due or cf_ready:
            self.send(self.build(CF, self.credit_body(self.freed)))
            self.c["cf_sent"] += 1
            self.cf_due = False
            self.freed_since_cf = 0
            self.last_cf = self.now
            self.cf_max_deadline = self.expiry(self.p["cf_max_interval_ns"])
        if not self.replay and self.cc_deadline is not None and self.now >= self.cc_deadline:
            self.send(self.build(CC, self.credit_body(self.consumed)))
            self.c["cc_sent"] += 1
            self.cc_deadline = self.expiry(self.p["cc_interval_ns"])
        if self.aged():
            self.c["flushes_aged"] += 1
            self.flush()
            return
        while self.replay_next is not None:
            entry = self.replay[self.replay_next]
            frame = bytearray(entry[1])
            frame[15] |= REPLAY_FLAG  # byte 1 of the link header of an untagged frame
            content = bytes(frame[:-4])
            self.send(content + fcs(content).to_bytes(4, "little"))
            self.c["frames_replayed"] += 1
            self.replay_sent_first = True
            self.replay_next += 1
            if self.replay_next >= len(self.replay):
                self.replay_next = None
        if self.gate_open:
            self.send_new()

    def send_new(self):
        limit = min(self.window(), self.p["replay_max_frames"])
        while True:
            sent = False
            for i in range(8):
                v = (self.rr + i) % 8
                q = self.queues[v]
                if not q:
                    continue
                payload = q[0]
                n = self.data_len(payload)
                if v >= self.agreed_vcs() or n > self.agreed_mfs():
                    q.pop(0)
                    if v >= self.agreed_vcs():
                        self.c["not_agreed_vc"] += 1
                        self.lose(v, "vc_not_agreed", payload)
                    else:
                        self.c["oversize_for_peer"] += 1
                        self.lose(v, "exceeds_peer_mfs", payload)
                    sent = True
                    break
                if len(self.replay) >= limit or self.replay_bytes + n > self.p["replay_max_bytes"]:
                    return  # LINK-3-3, LINK-3-17: nothing new until it fits
                cost = ceil_div(n + self.peer["credit_overhead"], self.peer["credit_size"])
                if cost > self.credit_left(v):
                    if self.stall_since[v] is None:
                        self.stall_since[v] = self.now
                        self.c["credit_stalls.vc%d" % v] += 1
                    continue
                q.pop(0)
                if self.stall_since[v] is not None:
                    self.c["credit_stall_ns.vc%d" % v] += self.now - self.stall_since[v]
                    self.stall_since[v] = None
                flags = 0
                fr, by = len(self.replay), self.replay_bytes
                if fr < -(-limit // 2) <= fr + 1 or by < self.p["replay_max_bytes"] // 2 <= by + n:
                    flags |= ACK_REQ_FLAG
                frame = self.build(DATA, payload, vc=v, flags=flags, seq=self.tx_seq)
                first = self.send(frame)
                if not self.replay:
                    self.replay_deadline = self.expiry(self.p["replay_timer_ns"])
                self.replay.append((self.tx_seq, frame, v, payload, first))
                self.replay_bytes += len(frame)
                self.c["replay_frames_max"] = max(self.c["replay_frames_max"], len(self.replay))
                self.c["replay_bytes_max"] = max(self.c["replay_bytes_max"], self.replay_bytes)
                self.tx_seq = seq_add(self.tx_seq, 1)
                self.consumed[v] = seq_add(self.consumed[v], cost)
                self.c["tx_frames.vc%d" % v] += 1
                self.c["tx_bytes.vc%d" % v] += len(frame)
                self.rr = (v + 1) % 8
                sent = True
                break
            if not sent:
                return

    # ---------------------------------------------------------------- time

    def deadlines(self):
        d = []
        if self.state == "INIT" and self.phys:
            d.append(self.init_next)
            d.append(self.init_deadline)
        if self.state == "UP":
            d += [self.replay_deadline, self.ack_deadline, self.cf_max_deadline, self.age_deadline()]
            if not self.replay:
                d.append(self.cc_deadline)
            if self.freed_since_cf >= self.p["cf_min_credits"] and self.last_cf is not None:
                d.append(self.tick_up(self.last_cf + self.p["cf_min_interval_ns"]))
        return [t for t in d if t is not None]

    def fire(self):
        """Acts on every timer due at self.now."""
        t = self.now
        if self.state == "INIT" and self.init_deadline is not None and self.init_deadline <= t:
            self.c["init_timeouts"] += 1
            self.init_deadline = None
        if self.state != "UP":
            return
        if self.ack_deadline is not None and self.ack_deadline <= t:
            self.ack_due = True
            self.ack_deadline = None
        if self.cf_max_deadline is not None and self.cf_max_deadline <= t:
            self.cf_due = True
            self.cf_max_deadline = None
        if self.aged():
            self.c["flushes_aged"] += 1
            self.flush()
            return
        if self.replay_deadline is not None and self.replay_deadline <= t:
            self.replay_deadline = None
            if self.replay:
                self.start_replay("replay_timeouts")

    def advance(self, t):
        self.transmit()
        while True:
            due = [d for d in self.deadlines() if d <= t]
            if not due:
                break
            self.now = max(self.now, min(due))
            self.fire()
            self.transmit()
            if any(d <= self.now for d in self.deadlines()):
                # A deadline that does not move: let time pass rather than spin.
                break
        self.now = max(self.now, t)
        self.transmit()
        out, self.out = self.out, []
        while self.txq and self.txq[0][0] <= t:
            first, frame, _ = self.txq.pop(0)
            out.append({"out": "frame", "port": 0, "time_ns": first, "hex": frame.hex()})
        later = [d for d in self.deadlines() if d > self.now]
        if self.txq:
            later.append(self.txq[0][0])
        ans = {"out": out}
        if later:
            ans["next_ns"] = min(later)
        return ans

    # ---------------------------------------------------------------- requests

    def request(self, r):
        kind = r.get("req")
        port = r.get("port", 0)
        if port != 0:
            raise Refused("a link end has port 0 only")
        if kind == "physical_up":
            if not self.phys:
                self.phys = True
                self.enter_init()
        elif kind == "physical_down":
            if self.phys:
                self.drop_unsent()
                self.leave_up("physical")
                self.phys = False
                self.state = "OFF"
                self.peer_mac = None
                self.echo_due = None
                self.init_next = self.init_deadline = None
        elif kind == "submit":
            vc = int(r["vc"])
            if not 0 <= vc < 8:
                raise Refused("VC %d" % vc)
            payload = bytes.fromhex(r["payload"])
            if self.data_len(payload) > self.p["mfs"]:
                raise Refused("a frame of %d B exceeds the MFS" % self.data_len(payload))
            self.queues[vc].append(payload)
        elif kind == "hold":
            vc = int(r["vc"])
            if not 0 <= vc < 8:
                raise Refused("VC %d" % vc)
            self.hold[vc] = bool(r["hold"])
            if not self.hold[vc]:
                # A payload of an earlier incarnation leaves the buffer without returning a
                # credit: the counters were reset at UP (LINK-6-4).
                stale = self.holds_stale()
                for incarnation, cost in self.held[vc]:
                    if incarnation == self.incarnation:
                        self.free(vc, cost)
                self.held[vc] = []
                if stale and not self.holds_stale() and self.state == "INIT" and self.phys:
                    # LINK-2-18: drained, a new nonce, then the echo and the INIT at once.
                    self.draw_nonce()
                    self.init_next = self.now
        elif kind == "withdraw":
            # LINK-6-5, LINK-6-6: every payload not sent yet leaves its queue and is reported,
            # after the outputs already pending, VC by VC in submission order. The replay
            # buffer holds frames already sent: they stay.
            for v in range(8):
                if not self.queues[v]:
                    continue
                for payload in self.queues[v]:
                    self.c["frames_withdrawn"] += 1
                    self.lose(v, "withdrawn", payload)
                self.queues[v] = []
                if self.stall_since[v] is not None:
                    self.c["credit_stall_ns.vc%d" % v] += self.now - self.stall_since[v]
                    self.stall_since[v] = None
        else:
            raise Refused("a link end does not take %s" % kind)
        return {}

    def counters(self):
        return dict(self.c)


def main():
    ap = argparse.ArgumentParser(description="An EthLink link end speaking the conformance line protocol.")
    ap.add_argument("--tick-ns", type=int, default=1,
                    help="tick of the clock the timers run on, 1..256 ns (LINK-1-5); default 1")
    ap.add_argument("--rate-gbps", type=int, default=None,
                    help="serialise frames at this line rate (Gb/s); default: frames leave as "
                         "they are made")
    args = ap.parse_args()
    if not 1 <= args.tick_ns <= 256:
        ap.error("--tick-ns must be 1 to 256")
    if args.rate_gbps is not None and args.rate_gbps < 1:
        ap.error("--rate-gbps must be at least 1")
    dev = LinkEnd(args.tick_ns, args.rate_gbps)
    out = sys.stdout
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = {}
        try:
            msg = json.loads(line)
            op = msg.get("op")
            log("<-", line[:200])
            if op == "hello":
                if msg.get("version") != PROTOCOL_VERSION:
                    ans = {"ok": False, "error": "this device speaks version %d" % PROTOCOL_VERSION}
                else:
                    ans = {"ok": True, "version": PROTOCOL_VERSION, "name": "python example link end",
                           "role": "link_end", "caps": [], "ports": 1}
                    if args.tick_ns != 1:
                        ans["tick_ns"] = args.tick_ns
                    if args.rate_gbps is not None:
                        ans["rate_gbps"] = args.rate_gbps
            elif op == "reset":
                ans = {"ok": True, "params": dev.reset(msg.get("setup") or {})}
            elif op == "frame":
                t = int(msg["time_ns"])
                dev.now = max(dev.now, t)
                if msg.get("port", 0) != 0:
                    ans = {"ok": False, "error": "a link end has port 0 only"}
                else:
                    dev.on_frame(bytes.fromhex(msg["hex"]))
                    ans = {"ok": True}
            elif op == "request":
                dev.now = max(dev.now, int(msg["time_ns"]))
                ans = {"ok": True, "reply": dev.request(msg["request"])}
            elif op == "advance":
                ans = dict(ok=True, **dev.advance(int(msg["time_ns"])))
            elif op == "counters":
                ans = {"ok": True, "counters": dev.counters()}
            elif op == "bye":
                out.write(json.dumps({"ok": True, "seq": msg.get("seq")}, separators=(",", ":")) + "\n")
                out.flush()
                return
            else:
                ans = {"ok": False, "error": "unknown op %r" % op}
        except Refused as e:
            ans = {"ok": False, "refused": str(e)}
        except Exception as e:  # a bug here is the device's, reported as such
            ans = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
        # Every answer echoes the sequence number of its request (docs/conformance.md 3.1).
        if isinstance(msg, dict) and "seq" in msg:
            ans["seq"] = msg["seq"]
        out.write(json.dumps(ans, separators=(",", ":")) + "\n")
        out.flush()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Cross-checks the Wireshark dissector (tools/wireshark/ethlink.lua) against `ethlink decode`.

For every capture given, runs

    tshark -X lua_script:tools/wireshark/ethlink.lua -r CAPTURE -T pdml
    ethlink decode --pcap CAPTURE --jsonl

and compares the two, frame by frame and field by field, through the explicit mapping below from
the decoder's JSON keys to the dissector's field names (and, for the Ethernet header, to
Wireshark's own eth/vlan fields). A frame present on one side only, a field missing on either
side, a field the mapping does not know, or a different value fails, naming the capture, the
frame number, the field and both values. Prints "N frames, M fields compared" and exits 0 only
when everything matched.

Frames the dissector never sees are those Wireshark does not hand to EtherType 0x88B5 (a foreign
EtherType): the decoder must reject them at the frame stage, and when it names the EtherType
(WIRE-2.1-2) its offset must be where Wireshark found the last EtherType.

--mutate N adds a capture of N frames made from the golden vectors (conformance/vectors/
vectors.json) by a seeded mutator: bytes of the link header and body overwritten, frames cut or
lengthened, tags inserted, the FCS recomputed (or stomped), so that every check of the receive
pipeline is reached with values no vector holds.

--self-test runs the comparison on the given captures and then alters one value, removes one
field, adds one field and removes one frame, and checks that each alteration is reported: the
check cannot pass by comparing nothing.

Python 3 standard library only.
"""

import argparse
import copy
import json
import os
import random
import re
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zlib

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
DISSECTOR = os.path.join(ROOT, "tools", "wireshark", "ethlink.lua")

KINDS = {"DATA": 0, "ACK": 1, "NACK": 2, "CF": 3, "CC": 4, "INIT": 5, "INIT_ECHO": 6}
OPCODES = {
    "LOAD": 0x01, "STORE": 0x02, "ATOMIC_FADD": 0x03, "ATOMIC_SWAP": 0x04, "ATOMIC_CAS": 0x05,
    "FENCE": 0x06, "RDMA_WRITE": 0x10, "RDMA_READ": 0x11, "LOAD_RESP": 0x81, "STORE_RESP": 0x82,
    "ATOMIC_FADD_RESP": 0x83, "ATOMIC_SWAP_RESP": 0x84, "ATOMIC_CAS_RESP": 0x85,
    "FENCE_RESP": 0x86, "RDMA_COMPLETION": 0x90, "RDMA_READ_RESP": 0x91,
}
STATUSES = {
    "OK": 0, "ACCESS_VIOLATION": 1, "OUT_OF_RANGE": 2, "UNSUPPORTED": 3, "POISONED": 4,
    "MALFORMED": 5, "MISALIGNED": 6, "BUSY": 7,
}
ROLES = {"link_end": 0, "endpoint": 1, "switch": 2, "reserved": 3}
CAPS = ["rdma", "atomics", "shared", "packing", "tagged", "cut_through"]
SPACES = {"global": 0, "shared": 1}
# Frame-stage errors a receiver finds at or before the EtherType check (wire.md §7 stages 1..3).
BEFORE_ETHERTYPE = {"WIRE-2.4-2", "WIRE-2.5-3", "WIRE-2.5-5", "WIRE-2.1-2"}


def as_int(text):
    return int(text, 0)


def as_bool(value):
    if isinstance(value, bool):
        return int(value)
    return int(str(value), 0)


def as_hex(text):
    return text.replace(":", "").lower()


def status_code(name):
    return int(name, 16) if name.lower().startswith("0x") else STATUSES[name]


# The mapping of the decoder's keys: key -> (dissector field, converter of the decoder's value).
# Keys of the frame object ("link.seq" is key "seq" of object "link").
FRAME_KEYS = {
    "frame": ("frame.number", int),
    "length": ("ethlink.length", int),
    "eth.dst": ("eth.dst", str.lower),
    "eth.src": ("eth.src", str.lower),
    "eth.vlan.pcp": ("vlan.priority", int),
    "eth.vlan.dei": ("vlan.dei", as_bool),
    "eth.vlan.vid": ("vlan.id", int),
    "link.version": ("ethlink.version", int),
    "link.kind": ("ethlink.kind", KINDS.__getitem__),
    "link.vc": ("ethlink.vc", int),
    "link.replay": ("ethlink.flags.replay", as_bool),
    "link.ack_req": ("ethlink.flags.ack_req", as_bool),
    "link.seq": ("ethlink.seq", int),
    "credits.vc_mask": ("ethlink.credits.vc_mask", int),
    "init.nonce": ("ethlink.init.nonce", int),
    "init.echo_nonce": ("ethlink.init.echo_nonce", int),
    "init.vcs": ("ethlink.init.vcs", int),
    "init.credit_size": ("ethlink.init.credit_size", int),
    "init.mfs": ("ethlink.init.mfs", int),
    "init.llr_window": ("ethlink.init.llr_window", int),
    "init.credit_overhead": ("ethlink.init.credit_overhead", int),
    "init.role": ("ethlink.init.role", ROLES.__getitem__),
    "network.dst_gpu": ("ethlink.net.dst", int),
    "network.src_gpu": ("ethlink.net.src", int),
    "network.path.stack": ("ethlink.net.path.stack", int),
    "network.path.port": ("ethlink.net.path.port", int),
    "network.txn_count": ("ethlink.net.txn_count", int),
    "network.payload_length": ("ethlink.net.payload_length", int),
    "fcs_present": ("ethlink.fcs_present", as_bool),
    "error.level": ("ethlink.error.level", str),
    "error.transaction": ("ethlink.error.transaction", int),
    "error.field": ("ethlink.error.field", str),
    "error.kind": ("ethlink.error.kind", str),
    "error.offset": ("ethlink.error.offset", int),
    "error.spec": ("ethlink.error.spec", str),
    "error.action": ("ethlink.error.action", str),
    "error.nack": ("ethlink.error.nack", as_bool),
    "error.message": ("ethlink.error.message", str),
    "capture_error": ("ethlink.capture_error", str),
}
# Keys of a transaction object.
TXN_KEYS = {
    "frame_offset": ("ethlink.txn.frame_offset", int),
    "tag": ("ethlink.txn.tag", int),
    "space": ("ethlink.txn.flags.shared", SPACES.__getitem__),
    "key": ("ethlink.txn.key", int),
    "address": ("ethlink.txn.address", as_int),
    "length": ("ethlink.txn.length", int),
    "width": ("ethlink.txn.width", int),
    "addend": ("ethlink.txn.addend", int),
    "value": ("ethlink.txn.value", int),
    "compare": ("ethlink.txn.compare", int),
    "old": ("ethlink.txn.old", int),
    "offset": ("ethlink.txn.offset", int),
    "total_length": ("ethlink.txn.total_length", int),
    "dlen": ("ethlink.txn.dlen", int),
    "hlen": ("ethlink.txn.hlen", int),
    "status": ("ethlink.txn.status", status_code),
    "code": ("ethlink.txn.opcode", int),
    "flags_status": ("ethlink.txn.flags_status", int),
    "receiver_action": ("ethlink.txn.receiver_action", str),
}
# Decoder keys with a rule of their own (in `expected_fields`).
SPECIAL_KEYS = {"credits.counters", "init.credits", "init.caps", "txns", "reserved", "fcs",
                "opcode", "data", "header"}

# How each dissector field's PDML "show" text is read.
BYTES_FIELDS = {"ethlink.fcs", "ethlink.txn.data", "ethlink.txn.header", "ethlink.reserved",
                "ethlink.undecoded"}
STRING_FIELDS = {"ethlink.capture_error", "ethlink.error.level", "ethlink.error.field",
                 "ethlink.error.kind", "ethlink.error.spec", "ethlink.error.action",
                 "ethlink.error.message", "ethlink.txn.receiver_action", "eth.dst", "eth.src",
                 "ethlink.fcs.status"}
# Dissector fields the decoder has no key for: containers of subtrees, raw bytes whose parts are
# compared one by one, the FCS verdict, the undecoded rest, and the prefix's hlen and dlen, which
# the dissector shows for every transaction and the decoder only for some opcodes (when the
# decoder reports them they are compared). Nothing else may appear unasked.
DISSECTOR_ONLY = {"ethlink.credits", "ethlink.init", "ethlink.net", "ethlink.error",
                  "ethlink.flags", "ethlink.txn.flags", "ethlink.init.caps", "ethlink.net.path",
                  "ethlink.fcs.status", "ethlink.undecoded", "ethlink.txn.hlen",
                  "ethlink.txn.dlen"}
# Wireshark's own fields read for the comparison (the Ethernet header); the rest are ignored.
WIRESHARK_FIELDS = {"frame.number", "frame.len", "frame.cap_len", "eth.dst", "eth.src", "eth.type",
                    "eth.fcs",
                    "vlan.priority", "vlan.dei", "vlan.id", "vlan.etype"}


class Mismatch(Exception):
    pass


def run(cmd):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), \
        proc.stderr.decode("utf-8", "replace")


def tshark_warnings(stderr):
    """The lines of tshark's standard error that are not the warning it prints for root."""
    return [line for line in stderr.splitlines()
            if line.strip() and not line.startswith("Running as user \"root\"")]


def decode_frames(ethlink, capture, mfs):
    code, out, err = run(ethlink + ["decode", "--pcap", capture, "--jsonl", "--mfs", str(mfs)])
    # Exit 1 means some frame was rejected, which the comparison covers; anything else is a failure.
    if code not in (0, 1) or not out.strip():
        raise Mismatch(f"{capture}: ethlink decode failed (exit {code}): {err.strip()}")
    frames = {}
    for line in out.splitlines():
        obj = json.loads(line)
        frames[obj["frame"]] = obj
    return frames


def tshark_frames(capture, mfs, dissector):
    code, out, err = run(["tshark", "-n", "-X", f"lua_script:{dissector}", "-o",
                          f"ethlink.mfs:{mfs}", "-r", capture, "-T", "pdml"])
    problems = tshark_warnings(err)
    if code != 0 or problems:
        raise Mismatch(f"{capture}: tshark failed (exit {code}): {' '.join(problems)}")
    if "Lua Error" in out:
        raise Mismatch(f"{capture}: the dissector raised a Lua error:\n" +
                       "\n".join(line for line in out.splitlines() if "Lua Error" in line)[:2000])
    root = ET.fromstring(out)
    frames = {}
    for packet in root.iter("packet"):
        frame = parse_packet(packet)
        frames[frame["frame.number"]] = frame
    return frames


def parse_packet(packet):
    """What tshark decoded of one frame: Wireshark's own fields and the ethlink tree."""
    own = {}
    ethertypes = []
    ethlink = None
    for proto in packet.findall("proto"):
        name = proto.get("name")
        if name == "ethlink":
            if ethlink is not None:
                raise Mismatch("two ethlink layers in one frame")
            ethlink = proto
            continue
        for f in proto.iter("field"):
            fname = f.get("name")
            # The EtherType, or the 802.3 length in its place.
            if fname in ("eth.type", "vlan.etype", "eth.len", "vlan.len"):
                ethertypes.append((as_int(f.get("show")), int(f.get("pos"))))
            if fname in WIRESHARK_FIELDS and fname not in own:
                own[fname] = f.get("value") if fname == "eth.fcs" else f.get("show")
    frame = {"frame.number": int(own["frame.number"]), "own": own, "ethertypes": ethertypes,
             "ethlink": None}
    if ethlink is not None:
        frame["ethlink"] = flatten(ethlink)
    return frame


def field_value(f):
    name = f.get("name")
    if name in BYTES_FIELDS:
        return as_hex(f.get("value") or "")
    if name in STRING_FIELDS:
        return f.get("show")
    return as_int(f.get("show"))


def flatten(proto):
    """The ethlink tree as {"fields": {...}, "txns": [...], "reserved": [...]}, each scope a dict
    of field name to value; a field twice in one scope is an error."""
    out = {"fields": {}, "txns": [], "reserved": []}

    def put(scope, key, value):
        if key in scope:
            raise Mismatch(f"field {key} appears twice in one scope")
        scope[key] = value

    def expert_text(f):
        for sub in f.iter("field"):
            if sub.get("name") == "_ws.expert.message":
                return sub.get("show")
        return None

    def walk(node, scope):
        for f in node.findall("field"):
            name = f.get("name") or ""
            if name == "_ws.expert":
                put(scope, "ethlink.expert", expert_text(f))
                continue
            if name == "ethlink.txn":
                txn = {"@pos": int(f.get("pos"))}
                out["txns"].append(txn)
                walk(f, txn)
                continue
            if name == "ethlink.reserved":
                run_ = {"@pos": int(f.get("pos")), "ethlink.reserved": field_value(f)}
                out["reserved"].append(run_)
                walk(f, run_)
                continue
            if name == "ethlink.error":
                walk(f, scope)
                expert = None
                for sub in f.findall("field"):
                    if sub.get("name") == "_ws.expert":
                        expert = expert_text(sub)
                scope.pop("ethlink.expert", None)
                put(scope, "ethlink.error.expert", expert)
                put(scope, name, "")
                continue
            if not name.startswith("ethlink."):
                raise Mismatch(f"unexpected item {name or f.get('show')!r} in the ethlink tree")
            put(scope, name, "" if name in DISSECTOR_ONLY and not f.get("value")
                else field_value(f))
            walk(f, scope)

    walk(proto, out["fields"])
    return out


def expected_fields(dec, wire):
    """The decoder's frame object as {"fields": {...}, "txns": [...], "reserved": [...]} in the
    dissector's names and values. `wire` is what Wireshark itself decoded of the frame."""
    exp = {"fields": {}, "txns": [], "reserved": []}
    f = exp["fields"]

    def walk(obj, prefix):
        for key, value in obj.items():
            path = prefix + key
            if path in SPECIAL_KEYS:
                continue
            if isinstance(value, dict):
                walk(value, path + ".")
                continue
            if path not in FRAME_KEYS:
                raise Mismatch(f"decoder key {path!r} has no dissector field in the mapping")
            name, conv = FRAME_KEYS[path]
            f[name] = conv(value)

    walk(dec, "")
    if "error" in dec:
        f["ethlink.error.expert"] = dec["error"]["message"]
    if "capture_error" in dec:
        f["ethlink.expert"] = dec["capture_error"]
    credits = dec.get("credits")
    if credits:
        for v, counter in enumerate(credits["counters"]):
            if counter is not None:
                f[f"ethlink.credits.vc{v}"] = counter
    init = dec.get("init")
    if init:
        for v, grant in enumerate(init["credits"]):
            f[f"ethlink.init.credits.vc{v}"] = grant
        for name in CAPS:
            f[f"ethlink.init.caps.{name}"] = int(name in init["caps"])
        unknown = set(init["caps"]) - set(CAPS)
        if unknown:
            raise Mismatch(f"decoder capability names not in the mapping: {sorted(unknown)}")
    if dec.get("fcs"):
        f["ethlink.fcs"] = as_hex(dec["fcs"])
    elif "error" in dec and "eth.fcs" in wire["own"]:
        # A rejected frame's FCS is not in the decoder's object; the dissector must show the
        # bytes Wireshark's Ethernet dissector found there.
        f["ethlink.fcs"] = as_hex(wire["own"]["eth.fcs"])
    for txn in dec.get("txns") or []:
        t = {}
        for key, value in txn.items():
            if key == "opcode":
                if value != "UNKNOWN":
                    t["ethlink.txn.opcode"] = OPCODES[value]
                continue
            if key in ("data", "header"):
                if value:
                    t[f"ethlink.txn.{key}"] = as_hex(value)
                continue
            if key not in TXN_KEYS:
                raise Mismatch(f"decoder key 'txns.{key}' has no dissector field in the mapping")
            name, conv = TXN_KEYS[key]
            t[name] = conv(value)
        t["@pos"] = txn["frame_offset"]
        if txn["opcode"] == "UNKNOWN":
            t["ethlink.expert"] = txn["receiver_action"]
        exp["txns"].append(t)
    for run_ in dec.get("reserved", []):
        exp["reserved"].append({
            "@pos": run_["offset"],
            "ethlink.reserved": as_hex(run_["hex"]),
            "ethlink.expert": f"non-zero reserved bits or padding at offset {run_['offset']}, "
                      "ignored (WIRE-1.2-2)",
        })
    return exp


def compare_scope(where, exp, got, optional, problems):
    compared = 0
    for key, value in exp.items():
        if key not in got:
            problems.append(f"{where}: field {key}: decoder {value!r}, dissector missing")
        elif got[key] != value:
            problems.append(f"{where}: field {key}: decoder {value!r}, dissector {got[key]!r}")
        else:
            compared += 1
    for key, value in got.items():
        if key not in exp and key not in optional:
            problems.append(f"{where}: field {key}: decoder missing, dissector {value!r}")
    return compared


def compare_frame(capture, number, dec, wire, min_fields, problems):
    """Compares one frame; returns the number of fields that matched."""
    where = f"{capture} frame {number}"
    before = len(problems)
    try:
        exp = expected_fields(dec, wire)
    except (Mismatch, KeyError, ValueError) as e:
        problems.append(f"{where}: {e}")
        return 0
    own = wire["own"]
    got_own = {"frame.number": number}
    for name in ("eth.dst", "eth.src", "vlan.priority", "vlan.dei", "vlan.id"):
        if name in own:
            got_own[name] = own[name] if name.startswith("eth.") else as_int(own[name])
    # The Ethernet fields come from Wireshark's own dissector, which decodes them for every
    # frame; the decoder reports them only for frames that pass the frame checks.
    exp_own = {k: v for k, v in exp["fields"].items() if not k.startswith("ethlink.")}
    exp_link = {k: v for k, v in exp["fields"].items() if k.startswith("ethlink.")}
    compared = 0
    for key, value in exp_own.items():
        if got_own.get(key) != value:
            problems.append(f"{where}: field {key}: decoder {value!r}, "
                            f"Wireshark {got_own.get(key)!r}")
        else:
            compared += 1
    cut = re.fullmatch(r"the capture kept (\d+) of the frame's (\d+) bytes \(snap length\): .*",
                       dec.get("capture_error", ""))
    if wire["ethlink"] is None and cut:
        # A frame cut short by the snap length, which Wireshark handed to another dissector:
        # both must agree on how much of it the capture kept.
        for key, value in (("frame.cap_len", cut.group(1)), ("frame.len", cut.group(2))):
            if own.get(key) != value:
                problems.append(f"{where}: field {key}: decoder {value!r}, "
                                f"Wireshark {own.get(key)!r}")
            else:
                compared += 1
    elif wire["ethlink"] is None:
        # Not handed to the dissector: Wireshark found another EtherType, and the decoder must
        # have rejected the frame at or before its EtherType check.
        error = dec.get("error") or {}
        last = wire["ethertypes"][-1] if wire["ethertypes"] else None
        if last is not None and last[0] == 0x88B5:
            problems.append(f"{where}: EtherType 0x88b5 but the dissector did not run")
        elif error.get("level") != "frame" or error.get("spec") not in BEFORE_ETHERTYPE:
            problems.append(f"{where}: field ethlink: decoder decoded it "
                            f"(error {error.get('spec')!r}), dissector missing (EtherType "
                            f"{last[0] if last else None!r})")
        else:
            compared += 1
            if error["spec"] == "WIRE-2.1-2":
                # The EtherType a receiver judges: the first, or the one after one 802.1Q tag
                # (where Wireshark may have read an 802.3 length or gone on into a second tag).
                chain = wire["ethertypes"]
                at = None
                if chain:
                    at = chain[0][1]
                    if chain[0][0] == 0x8100:
                        at = chain[1][1] if len(chain) > 1 else at + 4
                if error["offset"] != at:
                    problems.append(f"{where}: field error.offset: decoder {error['offset']!r}, "
                                    f"Wireshark's EtherType at {at!r}")
                else:
                    compared += 1
            if int(own.get("frame.len", -1)) == dec["length"] or dec.get("fcs_present") is False:
                compared += 1
            else:
                problems.append(f"{where}: field length: decoder {dec['length']!r}, "
                                f"Wireshark frame.len {own.get('frame.len')!r}")
    else:
        got = wire["ethlink"]
        optional = set(DISSECTOR_ONLY)
        if "error" in dec and "eth.fcs" not in own:
            # A rejected frame whose FCS Wireshark's Ethernet dissector did not show (it gives up
            # on some frames shorter than 64 bytes): nothing to compare the dissector's with.
            optional.add("ethlink.fcs")
        compared += compare_scope(where, exp_link, got["fields"], optional, problems)
        for name, key in (("transactions", "txns"), ("reserved runs", "reserved")):
            e_list, g_list = exp[key], got[key]
            if len(e_list) != len(g_list):
                problems.append(f"{where}: {name}: decoder {len(e_list)}, "
                                f"dissector {len(g_list)}")
            for i, (e, g) in enumerate(zip(e_list, g_list)):
                compared += compare_scope(f"{where} {key}[{i}]", e, g, DISSECTOR_ONLY, problems)
    if len(problems) == before and compared < min_fields:
        problems.append(f"{where}: only {compared} fields compared (at least {min_fields} "
                        "required)")
    return compared


def compare_capture(capture, decoded, dissected, min_fields, problems):
    frames = fields = 0
    for number in sorted(set(decoded) | set(dissected)):
        if number not in decoded:
            problems.append(f"{capture} frame {number}: decoder missing, dissector present")
            continue
        if number not in dissected:
            problems.append(f"{capture} frame {number}: decoder present, tshark missing")
            continue
        frames += 1
        fields += compare_frame(capture, number, decoded[number], dissected[number], min_fields,
                                problems)
    if frames == 0:
        problems.append(f"{capture}: no frames compared")
    return frames, fields


def pcapng_block(kind, body):
    body += bytes(-len(body) % 4)
    return struct.pack("<II", kind, len(body) + 12) + body + struct.pack("<I", len(body) + 12)


def write_mutated(path, count, seed):
    """Writes `count` mutated golden vectors as a pcapng capture whose interface keeps the FCS."""
    with open(os.path.join(ROOT, "conformance", "vectors", "vectors.json"), encoding="utf-8") as f:
        vectors = json.load(f)["vectors"]
    rng = random.Random(seed)
    out = [pcapng_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))]
    # One Ethernet interface, if_fcslen (option 13) = 4.
    options = struct.pack("<HHB3xHH", 13, 1, 4, 0, 0)
    out.append(pcapng_block(1, struct.pack("<HHI", 1, 0, 0) + options))
    for i in range(count):
        frame = bytearray(bytes.fromhex(rng.choice(vectors)["hex"])[:-4])
        for _ in range(rng.choice([0, 1, 1, 2, 3, 5])):
            at = rng.randrange(14, len(frame))
            flipped = frame[at] ^ (1 << rng.randrange(8))
            frame[at] = rng.choice([0, 0xFF, rng.randrange(256), flipped])
        r = rng.random()
        if r < 0.15:
            frame = frame[:rng.randrange(10, len(frame) + 1)]
        elif r < 0.3:
            frame += bytes(rng.randrange(40))
        if rng.random() < 0.05:
            frame[12:14] = b"\x81\x00"
        crc = zlib.crc32(bytes(frame))
        if rng.random() < 0.03:
            crc ^= 0xFFFFFFFF
        data = bytes(frame) + struct.pack("<I", crc)
        header = struct.pack("<IIIII", 0, 0, i * 1000, len(data), len(data))
        out.append(pcapng_block(6, header + data))
    with open(path, "wb") as f:
        f.write(b"".join(out))


def self_test(loaded, min_fields):
    """Alters the data of a passing comparison four ways and checks that each is caught."""
    capture, decoded, dissected = loaded[0]

    def caught(label, dec, dis, needle):
        problems = []
        compare_capture(capture, dec, dis, min_fields, problems)
        if not any(needle in p for p in problems):
            raise Mismatch(f"self-test: {label} was not reported (looked for {needle!r}; "
                           f"got {problems[:3]})")
        print(f"self-test: {label}: reported ({problems[0]})")

    number = next(n for n in sorted(decoded) if decoded[n].get("txns"))
    dec = copy.deepcopy(decoded)
    dec[number]["txns"][0]["tag"] += 1
    caught("a transaction's tag changed in the decoder's output", dec, dissected,
           f"frame {number} txns[0]: field ethlink.txn.tag")
    dis = copy.deepcopy(dissected)
    del dis[number]["ethlink"]["fields"]["ethlink.seq"]
    caught("the sequence number removed from the dissector's output", decoded, dis,
           f"frame {number}: field ethlink.seq: decoder")
    dis = copy.deepcopy(dissected)
    dis[number]["ethlink"]["fields"]["ethlink.colour"] = 7
    caught("an unknown field added to the dissector's output", decoded, dis,
           f"frame {number}: field ethlink.colour: decoder missing")
    dis = copy.deepcopy(dissected)
    del dis[number]
    caught("a frame removed from tshark's output", decoded, dis,
           f"frame {number}: decoder present, tshark missing")
    dec = copy.deepcopy(decoded)
    dec[number]["link"]["wire_speed"] = 1
    caught("a decoder key the mapping does not know", dec, dissected,
           "decoder key 'link.wire_speed' has no dissector field")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("captures", nargs="*", help="pcap or pcapng captures")
    parser.add_argument("--ethlink", default=os.path.join(ROOT, "target", "debug", "ethlink"),
                        help="the ethlink binary (default: target/debug/ethlink)")
    parser.add_argument("--dissector", default=DISSECTOR,
                        help="the Lua dissector (default: tools/wireshark/ethlink.lua)")
    parser.add_argument("--mfs", type=int, default=9216, help="maximum frame size (default 9216)")
    parser.add_argument("--min-fields", type=int, default=3,
                        help="fields every frame must have compared (default 3)")
    parser.add_argument("--mutate", type=int, default=0, metavar="N",
                        help="also check a capture of N mutated golden vectors")
    parser.add_argument("--mutate-seed", type=int, default=1, help="seed of --mutate (default 1)")
    parser.add_argument("--self-test", action="store_true",
                        help="also check that altered outputs are reported as mismatches")
    args = parser.parse_args()
    if not args.captures and not args.mutate:
        parser.error("give at least one capture, or --mutate N")
    problems = []
    loaded = []
    frames = fields = 0
    workdir = tempfile.TemporaryDirectory()
    captures = list(args.captures)
    if args.mutate:
        mutated = os.path.join(workdir.name, "mutated.pcapng")
        write_mutated(mutated, args.mutate, args.mutate_seed)
        captures.append(mutated)
    try:
        for capture in captures:
            decoded = decode_frames([args.ethlink], capture, args.mfs)
            dissected = tshark_frames(capture, args.mfs, args.dissector)
            loaded.append((capture, decoded, dissected))
            n, m = compare_capture(capture, decoded, dissected, args.min_fields, problems)
            frames += n
            fields += m
    except Mismatch as e:
        problems.append(str(e))
    for p in problems[:50]:
        print(f"mismatch: {p}", file=sys.stderr)
    if len(problems) > 50:
        print(f"... and {len(problems) - 50} more mismatches", file=sys.stderr)
    print(f"{frames} frames, {fields} fields compared")
    if problems:
        return 1
    if args.self_test:
        try:
            self_test(loaded, args.min_fields)
        except Mismatch as e:
            print(e, file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

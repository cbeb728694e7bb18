-- EthLink dissector for Wireshark 4.0 and later (Lua 5.2 API).
--
-- Decodes every EthLink frame kind (DATA, ACK, NACK, CF, CC, INIT, INIT_ECHO) and every
-- transaction type of docs/spec/wire.md, registered on EtherType 0x88B5. It applies the checks of
-- the receive pipeline (wire.md §7) in the order a receiver must, exactly as `ethlink decode`
-- does: a frame that fails a check carries an "ethlink.error" subtree and an expert item whose
-- text is the decoder's error line, with the requirement id (for example WIRE-6.1-3). Fields
-- decoded before the failing check are shown; the bytes from the failing structure on are shown as
-- "ethlink.undecoded". Non-zero reserved bits and padding, which a receiver ignores (WIRE-1.2-2),
-- are listed as "ethlink.reserved" runs.
--
-- The FCS: when the capture keeps it (a pcapng interface with if_fcslen=4, as `ethlink run --out`
-- and `ethlink vectors` write), Wireshark's Ethernet dissector hands this dissector the frame
-- without its last four bytes; this dissector reads them from the frame itself and checks the
-- CRC-32 (WIRE-2.5-1), telling a stomped FCS (WIRE-2.5-4) from a bad one. When the frame reaches
-- the end of the capture record, the FCS was not stored and is not checked; sizes are then judged
-- as if its four bytes were there, as `ethlink decode --no-fcs` does.
--
-- The checks read the whole frame from the capture record, so EthLink is decoded in captures of
-- Ethernet frames only (link type 1), for the frame that starts the record; a frame the capture
-- cut short (snap length) is named as such and not decoded, as `ethlink decode` does.
--
-- Use: wireshark -X lua_script:tools/wireshark/ethlink.lua capture.pcapng
-- or copy this file into ~/.local/lib/wireshark/plugins/.

local ETHERTYPE = 0x88B5
local TPID_8021Q = 0x8100
local MIN_FRAME = 64
local MAX_FRAME = 9216
local MIN_MFS = 320
local MAX_WINDOW = 524288 -- 2^19
local SEQ_MASK = 0xFFFFF

local band, bor, bxor, rshift, lshift, bnot =
    bit32.band, bit32.bor, bit32.bxor, bit32.rshift, bit32.lshift, bit32.bnot

local p = Proto("ethlink", "EthLink")

local KINDS = {
    [0] = "DATA", [1] = "ACK", [2] = "NACK", [3] = "CF", [4] = "CC", [5] = "INIT",
    [6] = "INIT_ECHO",
}
local OPCODES = {
    [0x01] = "LOAD", [0x02] = "STORE", [0x03] = "ATOMIC_FADD", [0x04] = "ATOMIC_SWAP",
    [0x05] = "ATOMIC_CAS", [0x06] = "FENCE", [0x10] = "RDMA_WRITE", [0x11] = "RDMA_READ",
    [0x81] = "LOAD_RESP", [0x82] = "STORE_RESP", [0x83] = "ATOMIC_FADD_RESP",
    [0x84] = "ATOMIC_SWAP_RESP", [0x85] = "ATOMIC_CAS_RESP", [0x86] = "FENCE_RESP",
    [0x90] = "RDMA_COMPLETION", [0x91] = "RDMA_READ_RESP",
}
-- Header length in 32-bit words of each defined opcode (wire.md Table WIRE-T3).
local HLEN = {
    [0x01] = 6, [0x02] = 5, [0x03] = 5, [0x04] = 5, [0x05] = 5, [0x06] = 2, [0x10] = 7,
    [0x11] = 6, [0x81] = 2, [0x82] = 2, [0x83] = 2, [0x84] = 2, [0x85] = 2, [0x86] = 2,
    [0x90] = 4, [0x91] = 4,
}
-- Opcodes whose dlen is fixed at 0 (WIRE-6.1-10).
local DLEN_ZERO = { [0x01] = true, [0x06] = true, [0x11] = true, [0x82] = true, [0x86] = true,
    [0x90] = true }
local STATUSES = {
    [0] = "OK", [1] = "ACCESS_VIOLATION", [2] = "OUT_OF_RANGE", [3] = "UNSUPPORTED",
    [4] = "POISONED", [5] = "MALFORMED", [6] = "MISALIGNED", [7] = "BUSY",
}
local ROLES = { [0] = "link_end", [1] = "endpoint", [2] = "switch", [3] = "reserved" }
local CAPS = { "rdma", "atomics", "shared", "packing", "tagged", "cut_through" }
local CONTROL_BODY = { [1] = 0, [2] = 0, [3] = 36, [4] = 36, [5] = 52, [6] = 52 }
local KIND_DESCRIBE = {
    truncated = "truncated", out_of_range = "out of range", unknown = "unknown value",
    inconsistent = "inconsistent", bad_fcs = "FCS mismatch", stomped_fcs = "stomped FCS",
}
local ACTIONS = {
    damaged = "discard as damaged, count FCS error, NACK",
    stomped = "discard as stomped, count; no NACK",
    foreign = "discard as foreign, count",
    malformed = "discard as malformed, count",
    rest = "discard the rest of the frame, count",
    txn = "discard the transaction, count",
}

local F = {}

-- Frame.
F.length = ProtoField.uint32("ethlink.length", "Frame length (with FCS)", base.DEC)
F.fcs = ProtoField.bytes("ethlink.fcs", "FCS (wire order)")
F.fcs_status = ProtoField.string("ethlink.fcs.status", "FCS status")
F.fcs_present = ProtoField.bool("ethlink.fcs_present", "FCS present in the capture")
F.capture_error = ProtoField.string("ethlink.capture_error", "Not decodable")
F.undecoded = ProtoField.bytes("ethlink.undecoded", "Not decoded (after the failing check)")
F.reserved = ProtoField.bytes("ethlink.reserved", "Non-zero reserved bits or padding (ignored)")
-- Link header (wire.md §3).
F.version = ProtoField.uint8("ethlink.version", "Version", base.DEC, nil, 0xF0)
F.kind = ProtoField.uint8("ethlink.kind", "Kind", base.HEX, KINDS, 0x0F)
F.vc = ProtoField.uint8("ethlink.vc", "Virtual channel", base.DEC, nil, 0xE0)
F.flags = ProtoField.uint8("ethlink.flags", "Flags", base.HEX, nil, 0x1F)
F.flag_replay = ProtoField.bool("ethlink.flags.replay", "REPLAY", 8, nil, 0x01)
F.flag_ack_req = ProtoField.bool("ethlink.flags.ack_req", "ACK_REQ", 8, nil, 0x02)
F.seq = ProtoField.uint24("ethlink.seq", "Sequence number", base.DEC, nil, SEQ_MASK)
-- CF / CC body (wire.md §4.3, §4.4).
F.credits = ProtoField.none("ethlink.credits", "Credit counters")
F.vc_mask = ProtoField.uint8("ethlink.credits.vc_mask", "VC mask", base.HEX)
F.counter = {}
for v = 0, 7 do
    F.counter[v] = ProtoField.uint32("ethlink.credits.vc" .. v, "Counter of VC " .. v, base.DEC,
        nil, SEQ_MASK)
end
-- INIT / INIT_ECHO body (wire.md §4.5).
F.init = ProtoField.none("ethlink.init", "Link parameters")
F.nonce = ProtoField.uint32("ethlink.init.nonce", "Nonce", base.HEX)
F.echo_nonce = ProtoField.uint32("ethlink.init.echo_nonce", "Echo nonce", base.HEX)
F.vcs = ProtoField.uint8("ethlink.init.vcs", "Number of VCs", base.DEC)
F.credit_overhead = ProtoField.uint8("ethlink.init.credit_overhead", "Credit overhead", base.DEC)
F.credit_size = ProtoField.uint16("ethlink.init.credit_size", "Credit size", base.DEC)
F.mfs = ProtoField.uint16("ethlink.init.mfs", "Maximum frame size", base.DEC)
F.caps = ProtoField.uint16("ethlink.init.caps", "Capability field", base.HEX)
F.role = ProtoField.uint16("ethlink.init.role", "Role", base.DEC, ROLES, 0xC000)
F.cap = {}
for i, name in ipairs(CAPS) do
    F.cap[i] = ProtoField.bool("ethlink.init.caps." .. name, string.upper(name), 16, nil,
        lshift(1, i - 1))
end
F.llr_window = ProtoField.uint32("ethlink.init.llr_window", "LLR window", base.DEC, nil, SEQ_MASK)
F.grant = {}
for v = 0, 7 do
    F.grant[v] = ProtoField.uint32("ethlink.init.credits.vc" .. v, "Credit grant of VC " .. v,
        base.DEC, nil, SEQ_MASK)
end
-- Network header (wire.md §5).
F.net = ProtoField.none("ethlink.net", "Network header")
F.net_dst = ProtoField.uint16("ethlink.net.dst", "Destination GPU", base.DEC)
F.net_src = ProtoField.uint16("ethlink.net.src", "Source GPU", base.DEC)
F.net_path = ProtoField.uint8("ethlink.net.path", "Path id", base.HEX)
F.net_stack = ProtoField.uint8("ethlink.net.path.stack", "Source stack", base.DEC, nil, 0xF0)
F.net_port = ProtoField.uint8("ethlink.net.path.port", "Port", base.DEC, nil, 0x0F)
F.net_count = ProtoField.uint8("ethlink.net.txn_count", "Transaction count", base.DEC)
F.net_plen = ProtoField.uint16("ethlink.net.payload_length", "Payload length", base.DEC)
-- Transactions (wire.md §6).
F.txn = ProtoField.none("ethlink.txn", "Transaction")
F.txn_frame_offset = ProtoField.uint32("ethlink.txn.frame_offset", "Offset in the frame", base.DEC)
F.opcode = ProtoField.uint8("ethlink.txn.opcode", "Opcode", base.HEX, OPCODES)
F.txn_flags = ProtoField.uint8("ethlink.txn.flags", "Flags", base.HEX)
F.shared = ProtoField.bool("ethlink.txn.flags.shared", "SHARED", 8, nil, 0x01)
F.status = ProtoField.uint8("ethlink.txn.status", "Status", base.HEX, STATUSES)
F.flags_status = ProtoField.uint8("ethlink.txn.flags_status", "Flags or status (raw)", base.HEX)
F.tag = ProtoField.uint16("ethlink.txn.tag", "Tag", base.DEC)
F.hlen = ProtoField.uint8("ethlink.txn.hlen", "Header length (32-bit words)", base.DEC)
F.dlen = ProtoField.uint16("ethlink.txn.dlen", "Data length", base.DEC)
F.key = ProtoField.uint32("ethlink.txn.key", "Key", base.HEX)
F.address = ProtoField.uint64("ethlink.txn.address", "Address", base.HEX)
F.load_length = ProtoField.uint16("ethlink.txn.length", "Length", base.DEC)
F.width = ProtoField.uint8("ethlink.txn.width", "Operand size", base.DEC)
F.addend = ProtoField.uint64("ethlink.txn.addend", "Addend (little-endian)", base.HEX)
F.value = ProtoField.uint64("ethlink.txn.value", "New value (little-endian)", base.HEX)
F.compare = ProtoField.uint64("ethlink.txn.compare", "Compare value (little-endian)", base.HEX)
F.old = ProtoField.uint64("ethlink.txn.old", "Value before (little-endian)", base.HEX)
F.rdma_offset = ProtoField.uint32("ethlink.txn.offset", "Segment offset", base.DEC)
F.total = ProtoField.uint32("ethlink.txn.total_length", "Total length", base.DEC)
F.data = ProtoField.bytes("ethlink.txn.data", "Data")
F.header = ProtoField.bytes("ethlink.txn.header", "Header after the prefix")
F.receiver_action = ProtoField.string("ethlink.txn.receiver_action", "Receiver action")
-- The error of a rejected frame, payload or transaction.
F.error = ProtoField.none("ethlink.error", "Rejected")
F.err_level = ProtoField.string("ethlink.error.level", "Stage")
F.err_txn = ProtoField.uint32("ethlink.error.transaction", "Transaction", base.DEC)
F.err_field = ProtoField.string("ethlink.error.field", "Field")
F.err_kind = ProtoField.string("ethlink.error.kind", "What")
F.err_offset = ProtoField.uint32("ethlink.error.offset", "Offset in the frame", base.DEC)
F.err_spec = ProtoField.string("ethlink.error.spec", "Requirement")
F.err_action = ProtoField.string("ethlink.error.action", "Receiver action")
F.err_nack = ProtoField.bool("ethlink.error.nack", "Draws a NACK")
F.err_message = ProtoField.string("ethlink.error.message", "Message")

local list = {}
local function collect(t)
    for _, v in pairs(t) do
        if type(v) == "table" then
            collect(v)
        else
            list[#list + 1] = v
        end
    end
end
collect(F)
p.fields = list

-- Expert items: one per discard class of wire.md Table WIRE-T1, and the notes for frames a
-- receiver accepts but must treat specially.
local E = {
    damaged = ProtoExpert.new("ethlink.damaged", "Damaged frame", expert.group.MALFORMED,
        expert.severity.ERROR),
    fcs = ProtoExpert.new("ethlink.fcs.bad", "Bad FCS", expert.group.CHECKSUM,
        expert.severity.ERROR),
    stomped = ProtoExpert.new("ethlink.fcs.stomped", "Stomped FCS", expert.group.CHECKSUM,
        expert.severity.WARN),
    foreign = ProtoExpert.new("ethlink.foreign", "Not an EthLink frame", expert.group.PROTOCOL,
        expert.severity.WARN),
    version = ProtoExpert.new("ethlink.bad_version", "Unknown version", expert.group.MALFORMED,
        expert.severity.ERROR),
    kind = ProtoExpert.new("ethlink.unknown_kind", "Unknown kind", expert.group.MALFORMED,
        expert.severity.ERROR),
    control = ProtoExpert.new("ethlink.malformed_control", "Malformed control frame",
        expert.group.MALFORMED, expert.severity.ERROR),
    frame = ProtoExpert.new("ethlink.malformed_frame", "Malformed DATA frame",
        expert.group.MALFORMED, expert.severity.ERROR),
    structure = ProtoExpert.new("ethlink.malformed_txn", "Malformed transaction structure",
        expert.group.MALFORMED, expert.severity.ERROR),
    request = ProtoExpert.new("ethlink.malformed_request", "Malformed request",
        expert.group.MALFORMED, expert.severity.ERROR),
    response = ProtoExpert.new("ethlink.bad_response", "Bad response", expert.group.MALFORMED,
        expert.severity.ERROR),
    unknown_request = ProtoExpert.new("ethlink.unknown_request", "Unknown request opcode",
        expert.group.PROTOCOL, expert.severity.NOTE),
    unknown_response = ProtoExpert.new("ethlink.unknown_response", "Unknown response opcode",
        expert.group.PROTOCOL, expert.severity.WARN),
    reserved = ProtoExpert.new("ethlink.reserved_nonzero", "Non-zero reserved bits",
        expert.group.PROTOCOL, expert.severity.NOTE),
    capture = ProtoExpert.new("ethlink.not_decodable", "Frame not decodable from this capture",
        expert.group.UNDECODED, expert.severity.WARN),
}
p.experts = { E.damaged, E.fcs, E.stomped, E.foreign, E.version, E.kind, E.control, E.frame,
    E.structure, E.request, E.response, E.unknown_request, E.unknown_response, E.reserved,
    E.capture }

p.prefs.mfs = Pref.uint("Maximum frame size", MAX_FRAME,
    "The MFS in force on the link (320..9216): longer frames are damaged (WIRE-2.4-2)")

local f_frame = Field.new("frame")
local f_encap = Field.new("frame.encap_type")
local ENCAP_ETHERNET = 1

-- CRC-32 of IEEE 802.3 (reflected polynomial 0xEDB88320), table driven.
local CRC_TABLE = {}
for i = 0, 255 do
    local c = i
    for _ = 1, 8 do
        if band(c, 1) ~= 0 then
            c = bxor(0xEDB88320, rshift(c, 1))
        else
            c = rshift(c, 1)
        end
    end
    CRC_TABLE[i] = c
end

local function crc32(s, n)
    local c = 0xFFFFFFFF
    for i = 1, n do
        c = bxor(CRC_TABLE[band(bxor(c, s:byte(i)), 0xFF)], rshift(c, 8))
    end
    return bnot(c)
end

-- Readers over the frame's bytes `s` (a Lua string), frame-relative offsets from 0.
local function u8(s, o) return s:byte(o + 1) or 0 end
local function be16(s, o) return u8(s, o) * 256 + u8(s, o + 1) end
local function be32(s, o) return be16(s, o) * 65536 + be16(s, o + 2) end
local function le32(s, o)
    return u8(s, o) + u8(s, o + 1) * 256 + u8(s, o + 2) * 65536 + u8(s, o + 3) * 16777216
end
local function le64(s, o) return UInt64.new(le32(s, o), le32(s, o + 4)) end

local function is_power_of_two(v) return v > 0 and band(v, v - 1) == 0 end

-- An error as the decoder reports it: level, field name, kind, frame offset, requirement id,
-- action, and the expert item to raise.
local function err(level, kind, fieldname, offset, spec, action, ex, txn)
    return { level = level, kind = kind, field = fieldname, offset = offset, spec = spec,
        action = action, expert = ex, txn = txn }
end

local function message(e)
    return string.format("%s %s at offset %d (%s): %s", e.field, KIND_DESCRIBE[e.kind], e.offset,
        e.spec, e.action)
end

-- The state of one dissection: the frame tvb, its bytes, and the reserved-bit masks.
local Ctx = {}
Ctx.__index = Ctx

function Ctx:range(o, n)
    return self.ftvb:range(o, n)
end

function Ctx:reserve(o, mask)
    self.masks[o] = bor(self.masks[o] or 0, mask)
end

function Ctx:reserve_bytes(o, n)
    for i = o, o + n - 1 do self:reserve(i, 0xFF) end
end

-- Frame checks of wire.md §7 stages 1..5: size, FCS, EtherType, version, kind.
local function check_frame(c)
    local mfs = math.min(p.prefs.mfs, MAX_FRAME)
    if c.length < MIN_FRAME then
        return err("frame", "truncated", "frame.length", c.length, "WIRE-2.4-2", ACTIONS.damaged,
            E.damaged)
    end
    if c.length > mfs then
        return err("frame", "out_of_range", "frame.length", c.length, "WIRE-2.4-2",
            ACTIONS.damaged, E.damaged)
    end
    if c.has_fcs then
        local good = crc32(c.s, c.content)
        local got = le32(c.s, c.content)
        if got == good then
            c.fcs_status = "good"
        elseif got == bnot(good) then
            c.fcs_status = "stomped"
            return err("frame", "stomped_fcs", "eth.fcs", c.content, "WIRE-2.5-5", ACTIONS.stomped,
                E.stomped)
        else
            c.fcs_status = "bad"
            return err("frame", "bad_fcs", "eth.fcs", c.content, "WIRE-2.5-3", ACTIONS.damaged,
                E.fcs)
        end
    end
    c.eth_len = 14
    local ethertype = be16(c.s, 12)
    if ethertype == TPID_8021Q then
        c.eth_len = 18
        ethertype = be16(c.s, 16)
    end
    if ethertype ~= ETHERTYPE then
        return err("frame", "unknown", "eth.ethertype", c.eth_len - 2, "WIRE-2.1-2",
            ACTIONS.foreign, E.foreign)
    end
    local b0 = u8(c.s, c.eth_len)
    if rshift(b0, 4) ~= 1 then
        return err("frame", "unknown", "link.version", c.eth_len, "WIRE-3-2", ACTIONS.malformed,
            E.version)
    end
    if band(b0, 0x0F) > 6 then
        return err("frame", "unknown", "link.kind", c.eth_len, "WIRE-3-3", ACTIONS.malformed,
            E.kind)
    end
    return nil
end

local function add_link_header(c, tree)
    local o = c.eth_len
    local kind = band(u8(c.s, o), 0x0F)
    c.kind = kind
    tree:add(F.version, c:range(o, 1))
    tree:add(F.kind, c:range(o, 1))
    if kind == 0 then
        tree:add(F.vc, c:range(o + 1, 1))
        local ft = tree:add(F.flags, c:range(o + 1, 1))
        ft:add(F.flag_replay, c:range(o + 1, 1))
        ft:add(F.flag_ack_req, c:range(o + 1, 1))
        c:reserve(o + 1, 0x1C)
    else
        c:reserve(o + 1, 0xFF)
    end
    c:reserve(o + 2, 0xFF)
    if kind <= 2 then
        tree:add(F.seq, c:range(o + 3, 3))
        c:reserve(o + 3, 0xF0)
    else
        c:reserve_bytes(o + 3, 3)
    end
end

-- Body checks of FrameRepr::parse: control body size, the network header's lengths, bytes
-- beyond the padding (WIRE-4-1, WIRE-5-3, WIRE-2.4-3). Returns the body bytes in use, or an error.
local function check_body(c)
    local body_off = c.eth_len + 6
    local body_len = c.content - body_off
    local used
    local size = CONTROL_BODY[c.kind]
    if size then
        if body_len < size then
            return nil, err("frame", "truncated", "control.body", body_off + body_len, "WIRE-4-1",
                ACTIONS.malformed, E.control)
        end
        used = size
    else
        if body_len < 8 then
            return nil, err("payload", "truncated", "net.header", body_off, "WIRE-5-3",
                ACTIONS.malformed, E.frame)
        end
        used = 8 + be16(c.s, body_off + 6)
        if used > body_len then
            return nil, err("payload", "inconsistent", "net.payload_length", body_off + 6,
                "WIRE-5-3", ACTIONS.malformed, E.frame)
        end
    end
    if c.length ~= math.max(MIN_FRAME, body_off + used + 4) then
        if c.kind == 0 then
            return nil, err("frame", "inconsistent", "eth.padding", body_off + used, "WIRE-2.4-3",
                ACTIONS.malformed, E.frame)
        end
        return nil, err("frame", "out_of_range", "control.body", body_off + used, "WIRE-4-1",
            ACTIONS.malformed, E.control)
    end
    return used
end

local function add_credits(c, tree, o)
    local t = tree:add(F.credits, c:range(o, 36))
    local mask = u8(c.s, o)
    t:add(F.vc_mask, c:range(o, 1))
    c:reserve_bytes(o + 1, 3)
    for v = 0, 7 do
        local e = o + 4 + 4 * v
        if band(mask, lshift(1, v)) ~= 0 then
            t:add(F.counter[v], c:range(e, 4))
            c:reserve(e, 0xFF)
            c:reserve(e + 1, 0xF0)
        else
            c:reserve_bytes(e, 4)
        end
    end
    c.info = string.format("mask 0x%02x", mask)
end

-- INIT ranges (WIRE-4.5-1), in the order the decoder checks them.
local function check_init(c, o)
    local bad = function(name, at)
        return err("frame", "out_of_range", name, o + at, "WIRE-4.5-1", ACTIONS.malformed,
            E.control)
    end
    local vcs = u8(c.s, o + 8)
    if vcs < 1 or vcs > 8 then return bad("init.vcs", 8) end
    local cs = be16(c.s, o + 10)
    if cs < 32 or cs > 2048 or not is_power_of_two(cs) then return bad("init.credit_size", 10) end
    local mfs = be16(c.s, o + 12)
    if mfs < MIN_MFS or mfs > MAX_FRAME then return bad("init.mfs", 12) end
    local window = band(be32(c.s, o + 16), SEQ_MASK)
    if window < 1 or window > MAX_WINDOW then return bad("init.llr_window", 16) end
    for v = 0, vcs - 1 do
        local g = band(be32(c.s, o + 20 + 4 * v), SEQ_MASK)
        if g == 0 or g >= MAX_WINDOW then return bad("init.credits", 20 + 4 * v) end
    end
    return nil
end

local function add_init(c, tree, o)
    local t = tree:add(F.init, c:range(o, 52))
    t:add(F.nonce, c:range(o, 4))
    if c.kind == 6 then
        t:add(F.echo_nonce, c:range(o + 4, 4))
    else
        c:reserve_bytes(o + 4, 4)
    end
    local vcs = u8(c.s, o + 8)
    t:add(F.vcs, c:range(o + 8, 1))
    t:add(F.credit_overhead, c:range(o + 9, 1))
    t:add(F.credit_size, c:range(o + 10, 2))
    t:add(F.mfs, c:range(o + 12, 2))
    local ct = t:add(F.caps, c:range(o + 14, 2))
    ct:add(F.role, c:range(o + 14, 2))
    for i = 1, #CAPS do ct:add(F.cap[i], c:range(o + 14, 2)) end
    c:reserve(o + 14, 0x3F)
    c:reserve(o + 15, 0xC0)
    t:add(F.llr_window, c:range(o + 16, 4))
    c:reserve(o + 16, 0xFF)
    c:reserve(o + 17, 0xF0)
    for v = 0, 7 do
        local e = o + 20 + 4 * v
        if v < vcs then
            t:add(F.grant[v], c:range(e, 4))
            c:reserve(e, 0xFF)
            c:reserve(e + 1, 0xF0)
        else
            -- Grants of VCs at or above the number of VCs are reserved: shown as 0.
            t:add(F.grant[v], c:range(e, 4), 0)
            c:reserve_bytes(e, 4)
        end
    end
    c.info = string.format("nonce 0x%08x vcs %d mfs %d", be32(c.s, o), vcs, be16(c.s, o + 12))
end

-- The network header checks of DataRepr::parse_at (WIRE-5-3, WIRE-5-7).
local function check_network(c, o)
    local bad = function(name, at, spec)
        return err("payload", "out_of_range", name, o + at, spec or "WIRE-5-3", ACTIONS.malformed,
            E.frame)
    end
    if be16(c.s, o) == 0xFFFF then return bad("net.dst_gpu", 0) end
    if be16(c.s, o + 2) == 0xFFFF then return bad("net.src_gpu", 2) end
    if u8(c.s, o + 5) == 0 then return bad("net.txn_count", 5) end
    if be16(c.s, o + 6) < 8 then return bad("net.payload_length", 6, "WIRE-5-7") end
    return nil
end

local function add_network(c, tree, o)
    local t = tree:add(F.net, c:range(o, 8))
    t:add(F.net_dst, c:range(o, 2))
    t:add(F.net_src, c:range(o + 2, 2))
    local pt = t:add(F.net_path, c:range(o + 4, 1))
    pt:add(F.net_stack, c:range(o + 4, 1))
    pt:add(F.net_port, c:range(o + 4, 1))
    t:add(F.net_count, c:range(o + 5, 1))
    t:add(F.net_plen, c:range(o + 6, 2))
end

-- Checks one transaction whose structure has been walked (TxnRepr::parse): hlen, dlen and the
-- opcode's fields, in the order of wire.md §6.1. Returns an error or nil.
local function check_txn(c, at, index)
    local s = c.s
    local opcode, fs, tag = u8(s, at), u8(s, at + 1), be16(s, at + 2)
    local hlen, dlen = u8(s, at + 4), be16(s, at + 6)
    local expected = HLEN[opcode]
    if not expected then return nil end
    local request = opcode < 0x80
    local ok = fs == 0
    local mspec = request and "WIRE-6.1-6" or "WIRE-6.1-9"
    local function reject(name, off, spec)
        local action, ex = ACTIONS.txn, E.response
        if request then
            action = string.format("respond with opcode 0x%02x tag %d status MALFORMED",
                bor(opcode, 0x80), tag)
            ex = E.request
        end
        return err("transaction", "out_of_range", name, at + off, spec, action, ex, index)
    end
    if hlen ~= expected then return reject("txn.hlen", 4, mspec) end
    if DLEN_ZERO[opcode] and dlen ~= 0 then return reject("txn.dlen", 6, "WIRE-6.1-10") end
    if not request and not ok and dlen ~= 0 then return reject("txn.dlen", 6, "WIRE-6.9-1") end
    if opcode == 0x01 then
        local len = be16(s, at + 20)
        if len < 1 or len > 256 then return reject("txn.length", 20, mspec) end
    elseif opcode == 0x02 then
        if dlen < 1 or dlen > 256 then return reject("txn.dlen", 6, mspec) end
    elseif opcode >= 0x03 and opcode <= 0x05 then
        local operand = dlen
        if opcode == 0x05 then operand = math.floor(dlen / 2) end
        if (operand ~= 4 and operand ~= 8) or (opcode == 0x05 and dlen % 2 ~= 0) then
            return reject("txn.dlen", 6, "WIRE-6.5-1")
        end
    elseif opcode == 0x10 then
        if dlen < 1 then return reject("txn.dlen", 6, mspec) end
        local offset, total = be32(s, at + 20), be32(s, at + 24)
        if total == 0 then return reject("txn.total_length", 24, mspec) end
        if offset + dlen > total then return reject("txn.offset", 20, "WIRE-6.7-1") end
    elseif opcode == 0x11 then
        if be32(s, at + 20) == 0 then return reject("txn.total_length", 20, mspec) end
    elseif opcode == 0x81 then
        if ok and (dlen < 1 or dlen > 256) then return reject("txn.dlen", 6, "WIRE-6.9-4") end
    elseif opcode >= 0x83 and opcode <= 0x85 then
        if ok and dlen ~= 4 and dlen ~= 8 then return reject("txn.dlen", 6, "WIRE-6.9-4") end
    elseif opcode == 0x91 then
        local offset, total = be32(s, at + 8), be32(s, at + 12)
        if ok and dlen == 0 then return reject("txn.dlen", 6, "WIRE-6.9-3") end
        if ok and total == 0 then return reject("txn.total_length", 12, "WIRE-6.9-3") end
        if ok and offset + dlen > total then return reject("txn.offset", 8, "WIRE-6.9-3") end
    end
    return nil
end

-- Adds one valid transaction that starts at `at` (frame offset) and occupies `size` bytes.
local function add_txn(c, tree, at, size, index, pinfo)
    local s = c.s
    local opcode, fs, tag = u8(s, at), u8(s, at + 1), be16(s, at + 2)
    local hlen, dlen = u8(s, at + 4), be16(s, at + 6)
    local hdr = hlen * 4
    local name = OPCODES[opcode] or string.format("UNKNOWN 0x%02x", opcode)
    local t = tree:add(F.txn, c:range(at, size))
    t:set_text(string.format("Transaction %d: %s, tag %d", index, name, tag))
    t:add(F.txn_frame_offset, at):set_generated()
    t:add(F.opcode, c:range(at, 1))
    local known = HLEN[opcode] ~= nil
    local request = opcode < 0x80
    if not known then
        t:add(F.flags_status, c:range(at + 1, 1))
    elseif request then
        local ft = t:add(F.txn_flags, c:range(at + 1, 1))
        if opcode == 0x06 then
            c:reserve(at + 1, 0xFF)
        else
            ft:add(F.shared, c:range(at + 1, 1))
            c:reserve(at + 1, 0xFE)
        end
    else
        t:add(F.status, c:range(at + 1, 1))
    end
    t:add(F.tag, c:range(at + 2, 2))
    t:add(F.hlen, c:range(at + 4, 1))
    c:reserve(at + 5, 0xFF)
    t:add(F.dlen, c:range(at + 6, 2))
    local data_at = at + hdr
    c:reserve_bytes(data_at + dlen, size - hdr - dlen)
    local function mem()
        t:add(F.key, c:range(at + 8, 4))
        t:add(F.address, c:range(at + 12, 8))
    end
    local function data()
        if dlen > 0 then t:add(F.data, c:range(data_at, dlen)) end
    end
    local function le(o, w)
        if w == 8 then return le64(s, o) end
        return UInt64.new(le32(s, o), 0)
    end
    if not known then
        if hdr > 8 then t:add(F.header, c:range(at + 8, hdr - 8)) end
        data()
        local action
        if request then
            action = string.format(
                "respond with opcode 0x%02x tag %d status UNSUPPORTED (WIRE-6.1-5)",
                bor(opcode, 0x80), tag)
            t:add_proto_expert_info(E.unknown_request, action)
        else
            action = ACTIONS.txn .. " (WIRE-6.1-7)"
            t:add_proto_expert_info(E.unknown_response, action)
        end
        t:add(F.receiver_action, action):set_generated()
    elseif opcode == 0x01 then
        mem()
        t:add(F.load_length, c:range(at + 20, 2))
        c:reserve_bytes(at + 22, 2)
    elseif opcode == 0x02 then
        mem()
        data()
    elseif opcode >= 0x03 and opcode <= 0x05 then
        mem()
        local w = dlen
        if opcode == 0x05 then w = dlen / 2 end
        t:add(F.width, w):set_generated()
        if opcode == 0x03 then
            t:add(F.addend, c:range(data_at, w), le(data_at, w))
        elseif opcode == 0x04 then
            t:add(F.value, c:range(data_at, w), le(data_at, w))
        else
            t:add(F.compare, c:range(data_at, w), le(data_at, w))
            t:add(F.value, c:range(data_at + w, w), le(data_at + w, w))
        end
    elseif opcode == 0x10 then
        mem()
        t:add(F.rdma_offset, c:range(at + 20, 4))
        t:add(F.total, c:range(at + 24, 4))
        data()
    elseif opcode == 0x11 then
        mem()
        t:add(F.total, c:range(at + 20, 4))
    elseif opcode == 0x81 then
        data()
    elseif opcode >= 0x83 and opcode <= 0x85 then
        if fs == 0 then
            t:add(F.width, dlen):set_generated()
            t:add(F.old, c:range(data_at, dlen), le(data_at, dlen))
        end
    elseif opcode == 0x90 then
        t:add(F.total, c:range(at + 8, 4))
        c:reserve_bytes(at + 12, 4)
    elseif opcode == 0x91 then
        t:add(F.rdma_offset, c:range(at + 8, 4))
        t:add(F.total, c:range(at + 12, 4))
        data()
    end
    if index == 1 then
        pinfo.cols.info:append(": " .. name)
    elseif index <= 4 then
        pinfo.cols.info:append(", " .. name)
    elseif index == 5 then
        pinfo.cols.info:append(", ...")
    end
end

-- Walks the transactions of a DATA payload (the Txns iterator): returns an error or nil.
local function walk_txns(c, tree, o, pinfo)
    local count = u8(c.s, o + 5)
    local plen = be16(c.s, o + 6)
    local base = o + 8
    local pos = 0
    local index = 0
    while true do
        local at = base + pos
        local rest = plen - pos
        c.txn_at = at
        local function structure(kind, name, off, spec)
            return err("transaction", kind, name, at + off, spec, ACTIONS.rest, E.structure,
                index + 1)
        end
        if index == count then
            if rest > 0 then
                return structure("inconsistent", "net.txn_count", 0, "WIRE-6.1-4")
            end
            return nil
        end
        if rest < 8 then return structure("truncated", "txn.prefix", 0, "WIRE-6.1-3") end
        local hdr = u8(c.s, at + 4) * 4
        if hdr < 8 then return structure("out_of_range", "txn.hlen", 4, "WIRE-6.1-3") end
        local dlen = be16(c.s, at + 6)
        if hdr > rest then return structure("inconsistent", "txn.hlen", 4, "WIRE-6.1-3") end
        if hdr + dlen > rest then return structure("inconsistent", "txn.dlen", 6, "WIRE-6.1-3") end
        local size = hdr + band(dlen + 3, 0x1FFFC)
        if size > rest then return structure("inconsistent", "txn.dlen", 6, "WIRE-6.1-3") end
        local e = check_txn(c, at, index + 1)
        if e then return e end
        index = index + 1
        add_txn(c, tree, at, size, index, pinfo)
        pos = pos + size
    end
end

-- The reserved runs: bytes with a non-zero reserved bit, consecutive ones merged.
local function add_reserved(c, tree)
    local runs = {}
    local open = nil
    for i = 0, c.content - 1 do
        local m = c.masks[i] or 0
        if band(u8(c.s, i), m) ~= 0 then
            if open and open.last == i - 1 then
                open.last = i
            else
                open = { first = i, last = i }
                runs[#runs + 1] = open
            end
        end
    end
    for _, r in ipairs(runs) do
        local item = tree:add(F.reserved, c:range(r.first, r.last - r.first + 1))
        item:add_proto_expert_info(E.reserved, string.format(
            "non-zero reserved bits or padding at offset %d, ignored (WIRE-1.2-2)", r.first))
    end
end

local function add_error(c, tree, e)
    -- The error item covers the offending bytes where they are in the frame (none for a frame
    -- that is too short), and carries the expert item.
    local at = math.min(e.offset, c.content)
    local len = 1
    if e.field == "eth.fcs" then
        len = 4
    elseif e.field == "frame.length" then
        at, len = 0, c.content
    end
    len = math.min(len, c.ftvb:len() - at)
    local t = tree:add(F.error, c:range(at, len))
    t:set_generated()
    t:set_text("Rejected: " .. message(e))
    t:add(F.err_level, e.level):set_generated()
    if e.txn then t:add(F.err_txn, e.txn):set_generated() end
    t:add(F.err_field, e.field):set_generated()
    t:add(F.err_kind, e.kind):set_generated()
    t:add(F.err_offset, e.offset):set_generated()
    t:add(F.err_spec, e.spec):set_generated()
    t:add(F.err_action, e.action):set_generated()
    t:add(F.err_nack, e.action == ACTIONS.damaged):set_generated()
    t:add(F.err_message, message(e)):set_generated()
    t:add_proto_expert_info(e.expert, message(e))
    if e.undecoded < c.content then
        tree:add(F.undecoded, c:range(e.undecoded, c.content - e.undecoded))
    end
end

-- Whether the EtherType that led here is the one of the frame that starts the capture record,
-- after its VLAN tags (802.1Q, 802.1ad and the older 0x9100 that Wireshark's VLAN dissector reads).
local function starts_record(s, offset)
    local o = 12
    while o + 2 <= #s do
        local ethertype = be16(s, o)
        if o + 2 == offset then return ethertype == ETHERTYPE end
        if ethertype ~= 0x8100 and ethertype ~= 0x88A8 and ethertype ~= 0x9100 then
            return false
        end
        o = o + 4
    end
    return false
end

function p.dissector(tvb, pinfo, tree)
    local fi = f_frame()
    if not fi then return 0 end
    local ftvb = fi.source
    local n = ftvb:len()
    local c = setmetatable({ ftvb = ftvb, masks = {} }, Ctx)
    pinfo.cols.protocol = "EthLink"
    local root = tree:add(p, tvb())
    -- The checks read the whole Ethernet frame, FCS included: only a capture of Ethernet frames
    -- (not, say, a Linux cooked capture or a tunnel's inner frame) holds it where they look.
    local encap = f_encap()
    local why
    if not encap or encap.value ~= ENCAP_ETHERNET then
        why = "not an Ethernet capture: EthLink frames are decoded from Ethernet captures only"
    elseif not starts_record(ftvb:raw(0, math.min(n, tvb:offset())), tvb:offset()) then
        why = "not the outer frame of the capture record (a tunnel's inner frame?): not decoded"
    end
    if why then
        root:add(F.capture_error, why):set_generated()
        root:add_proto_expert_info(E.capture, why)
        pinfo.cols.info = why
        return tvb:len()
    end
    -- The FCS is present when the Ethernet dissector held back four bytes after ours.
    c.has_fcs = ftvb:reported_len() - (tvb:offset() + tvb:reported_len()) >= 4
    if n < ftvb:reported_len() then
        local missing = "the end of the frame is missing"
        if c.has_fcs then missing = "the end of the frame and its FCS are missing" end
        local why = string.format(
            "the capture kept %d of the frame's %d bytes (snap length): %s", n,
            ftvb:reported_len(), missing)
        root:add(F.capture_error, why):set_generated()
        root:add_proto_expert_info(E.capture, why)
        pinfo.cols.info = why
        return tvb:len()
    end
    c.content = c.has_fcs and n - 4 or n
    c.length = c.content + 4
    c.s = ftvb:raw(0, n)
    root:add(F.length, c.length):set_generated()
    if c.has_fcs then
        root:add(F.fcs, ftvb:range(c.content, 4))
    else
        root:add(F.fcs_present, false):set_generated()
    end
    local e = check_frame(c)
    if c.has_fcs then
        root:add(F.fcs_status, c.fcs_status or "not checked"):set_generated()
    else
        root:add(F.fcs_status, "not present"):set_generated()
    end
    local body_off
    if not e then
        add_link_header(c, root)
        body_off = c.eth_len + 6
        local used
        used, e = check_body(c)
        if not e then
            c:reserve_bytes(body_off + used, c.content - body_off - used)
            if c.kind == 3 or c.kind == 4 then
                add_credits(c, root, body_off)
            elseif c.kind == 5 or c.kind == 6 then
                e = check_init(c, body_off)
                if not e then add_init(c, root, body_off) end
            elseif c.kind == 0 then
                e = check_network(c, body_off)
                if not e then
                    add_network(c, root, body_off)
                    c.info = string.format("%d -> %d", be16(c.s, body_off + 2), be16(c.s, body_off))
                end
            end
        end
    end
    local kind = c.kind and KINDS[c.kind] or "?"
    local summary = kind
    if c.kind and c.kind <= 2 then
        summary = string.format("%s seq %d", kind, band(be32(c.s, c.eth_len + 2), SEQ_MASK))
    end
    if c.kind == 0 then
        summary = string.format("DATA vc %d seq %d", rshift(u8(c.s, c.eth_len + 1), 5),
            band(be32(c.s, c.eth_len + 2), SEQ_MASK))
    end
    if c.info then summary = summary .. " " .. c.info end
    pinfo.cols.info = summary
    if not e and c.kind == 0 then
        e = walk_txns(c, root, body_off, pinfo)
    end
    if e then
        -- Where the undecoded part starts: the link header for frame checks, the body for body
        -- and network-header checks, the failing transaction for transaction checks.
        if e.level == "transaction" then
            e.undecoded = c.txn_at
        elseif c.kind then
            e.undecoded = c.eth_len + 6
        else
            e.undecoded = math.min(tvb:offset(), c.content)
        end
        add_error(c, root, e)
        pinfo.cols.info = "[" .. e.spec .. "] " .. summary
        root:append_text(", rejected: " .. e.spec)
    else
        add_reserved(c, root)
    end
    return tvb:len()
end

DissectorTable.get("ethertype"):add(ETHERTYPE, p)

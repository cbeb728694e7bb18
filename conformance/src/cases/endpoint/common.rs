//! What the endpoint cases share: bringing the device up with the harness's link ends on its
//! ports, the regions every case registers, transactions written byte by byte (the harness plays
//! the remote GPU), and readers of what the device sends and completes.
//!
//! Everything here goes through the boundary ([`Ctx`]); nothing reads the reference's types.

use crate::case::Stop;
use crate::cases::common::{peer_config, setup};
use crate::ctx::Ctx;
use crate::device::{LinkParams, LsOp, Output, Request, Setup, Space, from_hex, to_hex};
use ethlink_link::Config as LinkConfig;

/// Data bytes [`Txn::show`] writes out in full.
const SHOW_DATA: usize = 64;

/// The GPU id the device is given.
pub const DUT: u16 = 5;
/// The GPU id the harness plays.
pub const REM: u16 = 9;
/// A second GPU the harness plays, for cases with two requesters (docs/conformance.md §4.1).
pub const REM2: u16 = 12;

/// The read-write-atomic region of global memory: base, length, key.
pub const G: (u64, u64, u32) = (0x1_0000, 0x1_0000, 0xA5A5_0001);
/// A read-only region of global memory.
pub const RO: (u64, u64, u32) = (0x4_0000, 0x1000, 0xB0B0_0002);
/// A read-write region without the atomic permission.
pub const NA: (u64, u64, u32) = (0x5_0000, 0x1000, 0xC0C0_0003);
/// The region of shared memory (registered only when the device declares `shared`).
pub const SH: (u64, u64, u32) = (0, 0x1000, 0x5151_0004);

/// Request opcodes (wire.md Table WIRE-T3).
pub mod op {
    /// LOAD.
    pub const LOAD: u8 = 0x01;
    /// STORE.
    pub const STORE: u8 = 0x02;
    /// ATOMIC_FADD.
    pub const FADD: u8 = 0x03;
    /// ATOMIC_SWAP.
    pub const SWAP: u8 = 0x04;
    /// ATOMIC_CAS.
    pub const CAS: u8 = 0x05;
    /// FENCE.
    pub const FENCE: u8 = 0x06;
    /// RDMA_WRITE.
    pub const RDMA_WRITE: u8 = 0x10;
    /// RDMA_READ.
    pub const RDMA_READ: u8 = 0x11;
    /// RDMA_COMPLETION.
    pub const RDMA_COMPLETION: u8 = 0x90;
    /// RDMA_READ_RESP.
    pub const RDMA_READ_RESP: u8 = 0x91;
}

/// Wire statuses (wire.md §6.9).
pub mod st {
    /// OK.
    pub const OK: u8 = 0;
    /// ACCESS_VIOLATION.
    pub const ACCESS_VIOLATION: u8 = 1;
    /// OUT_OF_RANGE.
    pub const OUT_OF_RANGE: u8 = 2;
    /// UNSUPPORTED.
    pub const UNSUPPORTED: u8 = 3;
    /// POISONED.
    pub const POISONED: u8 = 4;
    /// MALFORMED.
    pub const MALFORMED: u8 = 5;
    /// MISALIGNED.
    pub const MISALIGNED: u8 = 6;
    /// BUSY.
    pub const BUSY: u8 = 7;
}

/// One transaction the device sent, with the frame that carried it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Txn {
    /// The device's port it left by.
    pub port: u16,
    /// The VC.
    pub vc: u8,
    /// Network header: destination GPU.
    pub dst: u16,
    /// Network header: source GPU.
    pub src: u16,
    /// Network header: path id.
    pub path: u8,
    /// Transactions in its frame.
    pub count: u8,
    /// Opcode.
    pub opcode: u8,
    /// Flags (request) or status (response).
    pub fs: u8,
    /// Tag.
    pub tag: u16,
    /// Header words.
    pub hlen: u8,
    /// Data bytes.
    pub dlen: u16,
    /// Header bytes after the 8-byte prefix.
    pub ext: Vec<u8>,
    /// Data bytes (padding removed).
    pub data: Vec<u8>,
}

impl Txn {
    /// The 32-bit header field `at` bytes after the prefix, 0 when absent.
    pub fn word(&self, at: usize) -> u32 {
        self.ext
            .get(at..at + 4)
            .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The 64-bit header field `at` bytes after the prefix, 0 when absent.
    pub fn dword(&self, at: usize) -> u64 {
        (u64::from(self.word(at)) << 32) | u64::from(self.word(at + 4))
    }

    /// The 16-bit header field `at` bytes after the prefix, 0 when absent.
    pub fn half(&self, at: usize) -> u16 {
        self.ext
            .get(at..at + 2)
            .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]))
    }

    /// A line for failure reports; data longer than 64 bytes shows its first 64 and its length.
    pub fn show(&self) -> String {
        format!(
            "port {} vc {} {}->{} path {:#04x} opcode {:#04x} fs {:#04x} tag {:#06x} hlen {} dlen {} ext {} data {}",
            self.port,
            self.vc,
            self.src,
            self.dst,
            self.path,
            self.opcode,
            self.fs,
            self.tag,
            self.hlen,
            self.dlen,
            to_hex(&self.ext),
            if self.data.len() > SHOW_DATA {
                format!(
                    "{}... ({} bytes)",
                    to_hex(&self.data[..SHOW_DATA]),
                    self.data.len()
                )
            } else {
                to_hex(&self.data)
            }
        )
    }
}

/// Splits a DATA payload the device sent into its transactions, or says why it cannot.
pub fn parse_payload(port: u16, vc: u8, p: &[u8]) -> Result<Vec<Txn>, String> {
    if p.len() < 8 {
        return Err(format!("payload of {} bytes: no network header", p.len()));
    }
    let dst = u16::from_be_bytes([p[0], p[1]]);
    let src = u16::from_be_bytes([p[2], p[3]]);
    let path = p[4];
    let count = p[5];
    let plen = usize::from(u16::from_be_bytes([p[6], p[7]]));
    if 8 + plen > p.len() {
        return Err(format!(
            "payload length {plen} runs past the {} bytes delivered",
            p.len() - 8
        ));
    }
    let body = &p[8..8 + plen];
    let mut out = Vec::new();
    let mut pos = 0;
    for i in 0..count {
        let t = body
            .get(pos..pos + 8)
            .ok_or_else(|| format!("transaction {i} of {count} missing"))?;
        let hlen = t[4];
        let dlen = u16::from_be_bytes([t[6], t[7]]);
        let h = usize::from(hlen) * 4;
        let d = usize::from(dlen);
        let size = h + d.div_ceil(4) * 4;
        if hlen < 2 || pos + size > body.len() {
            return Err(format!(
                "transaction {i}: hlen {hlen} dlen {dlen} runs past the payload"
            ));
        }
        let t = &body[pos..pos + size];
        out.push(Txn {
            port,
            vc,
            dst,
            src,
            path,
            count,
            opcode: t[0],
            fs: t[1],
            tag: u16::from_be_bytes([t[2], t[3]]),
            hlen,
            dlen,
            ext: t[8..h].to_vec(),
            data: t[h..h + d].to_vec(),
        });
        pos += size;
    }
    if pos != body.len() {
        return Err(format!(
            "payload length {plen} but the {count} transactions take {pos} bytes"
        ));
    }
    Ok(out)
}

/// Resets the device as GPU [`DUT`], attaches a reference link end to each of its first `ports`
/// ports, runs until every one is UP both ways, and registers the regions [`G`], [`RO`], [`NA`]
/// (and [`SH`] when the device declares `shared`).
pub fn ep_up(ctx: &mut Ctx<'_>, ports: u16) -> Result<(), Stop> {
    ep_up_with(
        ctx,
        ports,
        Setup {
            gpu: Some(DUT),
            ..setup(LinkParams::default())
        },
    )
}

/// As [`ep_up`] with `setup`.
pub fn ep_up_with(ctx: &mut Ctx<'_>, ports: u16, setup: Setup) -> Result<(), Stop> {
    ep_up_peers(ctx, ports, setup, |_, _| {})
}

/// As [`ep_up_with`], with the configuration of each port's peer changed by `peer` first (for
/// example a peer that announces a smaller MFS).
pub fn ep_up_peers(
    ctx: &mut Ctx<'_>,
    ports: u16,
    setup: Setup,
    peer: impl Fn(u16, &mut LinkConfig),
) -> Result<(), Stop> {
    ctx.reset(&setup)?;
    let ports = ports.min(ctx.desc.ports);
    for p in 0..ports {
        let mut cfg = peer_config(ctx, p);
        peer(p, &mut cfg);
        ctx.attach(p, cfg)?;
    }
    let mut seen = vec![false; usize::from(ports)];
    let mut pending = Vec::new();
    let up = ctx.run_until(300_000, |c| {
        for o in c.take_outputs() {
            match o {
                Output::LinkUp { port } if port < ports => seen[usize::from(port)] = true,
                other => pending.push(other),
            }
        }
        seen.iter().all(|s| *s)
            && (0..ports).all(|p| c.peer(p).map(|x| x.link.is_up()).unwrap_or(false))
    })?;
    if !up {
        return Err(Stop::fail(
            "LINK-2-3",
            format!("ports 0..{ports} come UP with conforming peers within 300 us"),
            format!("ports up at the device: {seen:?}"),
        ));
    }
    ctx.run_for(2_000)?;
    ctx.take_outputs();
    for (base, len, key, perms) in [
        (G.0, G.1, G.2, "rwa"),
        (RO.0, RO.1, RO.2, "r"),
        (NA.0, NA.1, NA.2, "rw"),
    ] {
        ctx.request(&Request::Register {
            space: Space::Global,
            base,
            len,
            key,
            perms: perms.into(),
        })?;
    }
    if ctx.has_cap("shared") {
        ctx.request(&Request::Register {
            space: Space::Shared,
            base: SH.0,
            len: SH.1,
            key: SH.2,
            perms: "rwa".into(),
        })?;
    }
    Ok(())
}

/// A transaction written byte by byte: the prefix with `hlen` as given and `dlen` =
/// `data.len()`, the header bytes after the prefix, the data and its zero padding.
pub fn raw(opcode: u8, fs: u8, tag: u16, hlen: u8, ext: &[u8], data: &[u8]) -> Vec<u8> {
    raw_dlen(opcode, fs, tag, hlen, data.len() as u16, ext, data)
}

/// As [`raw`] with a `dlen` field that may disagree with the data (for malformed requests).
pub fn raw_dlen(
    opcode: u8,
    fs: u8,
    tag: u16,
    hlen: u8,
    dlen: u16,
    ext: &[u8],
    data: &[u8],
) -> Vec<u8> {
    let mut v = vec![opcode, fs];
    v.extend(tag.to_be_bytes());
    v.push(hlen);
    v.push(0);
    v.extend(dlen.to_be_bytes());
    v.extend(ext);
    v.extend(data);
    v.resize(v.len().div_ceil(4) * 4, 0);
    v
}

/// Key and address, the header of STORE and the atomics after the prefix.
pub fn mem_ext(key: u32, addr: u64) -> Vec<u8> {
    let mut v = key.to_be_bytes().to_vec();
    v.extend(addr.to_be_bytes());
    v
}

/// A LOAD.
pub fn load(tag: u16, flags: u8, key: u32, addr: u64, len: u16) -> Vec<u8> {
    let mut ext = mem_ext(key, addr);
    ext.extend(len.to_be_bytes());
    ext.extend([0, 0]);
    raw(op::LOAD, flags, tag, 6, &ext, &[])
}

/// A STORE.
pub fn store(tag: u16, flags: u8, key: u32, addr: u64, data: &[u8]) -> Vec<u8> {
    raw(op::STORE, flags, tag, 5, &mem_ext(key, addr), data)
}

/// An atomic with its operand bytes (little-endian values, compare first for CAS).
pub fn atomic(opcode: u8, tag: u16, key: u32, addr: u64, data: &[u8]) -> Vec<u8> {
    raw(opcode, 0, tag, 5, &mem_ext(key, addr), data)
}

/// `v` as `width` little-endian bytes.
pub fn le(v: u64, width: usize) -> Vec<u8> {
    v.to_le_bytes()[..width].to_vec()
}

/// A FENCE request.
pub fn fence(tag: u16) -> Vec<u8> {
    raw(op::FENCE, 0, tag, 2, &[], &[])
}

/// An RDMA_WRITE segment.
pub fn rdma_write(
    tag: u16,
    flags: u8,
    key: u32,
    addr: u64,
    offset: u32,
    total: u32,
    data: &[u8],
) -> Vec<u8> {
    let mut ext = mem_ext(key, addr);
    ext.extend(offset.to_be_bytes());
    ext.extend(total.to_be_bytes());
    raw(op::RDMA_WRITE, flags, tag, 7, &ext, data)
}

/// An RDMA_READ.
pub fn rdma_read(tag: u16, flags: u8, key: u32, addr: u64, total: u32) -> Vec<u8> {
    let mut ext = mem_ext(key, addr);
    ext.extend(total.to_be_bytes());
    raw(op::RDMA_READ, flags, tag, 6, &ext, &[])
}

/// A load-store response (hlen 2).
pub fn resp(opcode: u8, status: u8, tag: u16, data: &[u8]) -> Vec<u8> {
    raw(opcode, status, tag, 2, &[], data)
}

/// An RDMA_COMPLETION.
pub fn completion(status: u8, tag: u16, total: u32) -> Vec<u8> {
    let mut ext = total.to_be_bytes().to_vec();
    ext.extend([0; 4]);
    raw(op::RDMA_COMPLETION, status, tag, 4, &ext, &[])
}

/// An RDMA_READ_RESP segment.
pub fn read_resp(status: u8, tag: u16, offset: u32, total: u32, data: &[u8]) -> Vec<u8> {
    let mut ext = offset.to_be_bytes().to_vec();
    ext.extend(total.to_be_bytes());
    raw(op::RDMA_READ_RESP, status, tag, 4, &ext, data)
}

/// A DATA payload: network header (`dst`, `src`, path 0, the count and length of `txns`) and
/// the transactions.
pub fn data_payload(dst: u16, src: u16, txns: &[Vec<u8>]) -> Vec<u8> {
    let body = txns.concat();
    let mut p = dst.to_be_bytes().to_vec();
    p.extend(src.to_be_bytes());
    p.push(0);
    p.push(txns.len() as u8);
    p.extend((body.len() as u16).to_be_bytes());
    p.extend(body);
    p
}

/// The harness, as GPU [`REM`], sends `txns` to the device in one frame on `port` and `vc`.
pub fn send(ctx: &mut Ctx<'_>, port: u16, vc: u8, txns: &[Vec<u8>]) -> Result<(), Stop> {
    send_from(ctx, REM, port, vc, txns)
}

/// As [`send`], from GPU `src` (a second requester is [`REM2`]).
pub fn send_from(
    ctx: &mut Ctx<'_>,
    src: u16,
    port: u16,
    vc: u8,
    txns: &[Vec<u8>],
) -> Result<(), Stop> {
    ctx.peer_submit(port, vc, &data_payload(DUT, src, txns))
}

/// What the harness has seen of the device: transactions on the wire, completions.
#[derive(Debug, Default)]
pub struct Seen {
    /// Every transaction the peers received, in arrival order per port.
    pub txns: Vec<Txn>,
    /// Every completion, in output order.
    pub done: Vec<Done>,
    /// Link events and other outputs.
    pub other: Vec<Output>,
    /// A payload the device sent that does not parse.
    pub bad: Option<String>,
    /// The longest payload the device sent that carried more than one transaction (a packed
    /// frame), in bytes: network header and transactions, padding excluded.
    pub largest_packed: usize,
}

/// A completion the device reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Done {
    /// Tag of a load-store operation.
    pub tag: Option<u16>,
    /// Id of a descriptor or fence.
    pub id: Option<u64>,
    /// Status name.
    pub status: String,
    /// Data.
    pub data: Option<Vec<u8>>,
    /// When the harness took it.
    pub at_ns: u64,
}

/// The bytes of a DATA payload up to its last transaction: the network header's payload length
/// (WIRE-5-2), without the link's padding.
fn packed_len(payload: &[u8]) -> usize {
    match payload.get(6..8) {
        Some(b) => 8 + usize::from(u16::from_be_bytes([b[0], b[1]])),
        None => payload.len(),
    }
}

impl Seen {
    /// Takes what is new from the peers of the first `ports` ports and the device's outputs.
    pub fn poll(&mut self, ctx: &mut Ctx<'_>, ports: u16) {
        for p in 0..ports {
            let Ok(got) = ctx.peer_delivered(p) else {
                continue;
            };
            for (vc, payload) in got {
                match parse_payload(p, vc, &payload) {
                    Ok(t) => {
                        if t.len() > 1 {
                            self.largest_packed = self.largest_packed.max(packed_len(&payload));
                        }
                        self.txns.extend(t);
                    }
                    Err(e) => {
                        self.bad.get_or_insert(format!(
                            "port {p} vc {vc}: {e}: payload {}",
                            to_hex(&payload)
                        ));
                    }
                }
            }
        }
        let now = ctx.now();
        for o in ctx.take_outputs() {
            match o {
                Output::Completion {
                    tag,
                    id,
                    status,
                    data,
                } => self.done.push(Done {
                    tag,
                    id,
                    status,
                    data: data.and_then(|d| hex::decode(d).ok()),
                    at_ns: now,
                }),
                other => self.other.push(other),
            }
        }
    }

    /// Runs until `want` holds of what was seen, at most `ns`; then fails on a payload that did
    /// not parse.
    pub fn run(
        &mut self,
        ctx: &mut Ctx<'_>,
        ports: u16,
        ns: u64,
        mut want: impl FnMut(&Seen) -> bool,
    ) -> Result<bool, Stop> {
        let ok = ctx.run_until(ns, |c| {
            self.poll(c, ports);
            want(self)
        })?;
        self.check_parse()?;
        Ok(ok)
    }

    /// Fails when the device sent a payload that does not parse.
    pub fn check_parse(&self) -> Result<(), Stop> {
        match &self.bad {
            Some(b) => Err(Stop::fail(
                "WIRE-5-2",
                "every DATA payload the device sends parses: the count and length match its transactions",
                b.clone(),
            )),
            None => Ok(()),
        }
    }

    /// The transactions carrying `tag` with an opcode of `class` (request < 0x80, response >= 0x80).
    pub fn with_tag(&self, tag: u16, responses: bool) -> Vec<&Txn> {
        self.txns
            .iter()
            .filter(|t| t.tag == tag && (t.opcode >= 0x80) == responses)
            .collect()
    }

    /// The requests with `opcode`.
    pub fn requests(&self, opcode: u8) -> Vec<&Txn> {
        self.txns.iter().filter(|t| t.opcode == opcode).collect()
    }

    /// Data bytes of every RDMA_WRITE segment seen.
    pub fn write_bytes(&self) -> usize {
        self.requests(op::RDMA_WRITE)
            .iter()
            .map(|t| usize::from(t.dlen))
            .sum()
    }

    /// The completions of the load-store operation `tag`.
    pub fn done_tag(&self, tag: u16) -> Vec<&Done> {
        self.done.iter().filter(|d| d.tag == Some(tag)).collect()
    }

    /// The completions of the descriptor or fence `id`.
    pub fn done_id(&self, id: u64) -> Vec<&Done> {
        self.done.iter().filter(|d| d.id == Some(id)).collect()
    }
}

/// The one response to the request tagged `tag`: fails TXN-2-8 unless exactly one came.
pub fn one_response<'a>(seen: &'a Seen, tag: u16, what: &str) -> Result<&'a Txn, Stop> {
    let v = seen.with_tag(tag, true);
    if v.len() == 1 {
        Ok(v[0])
    } else {
        Err(Stop::fail(
            "TXN-2-8",
            format!("exactly one response with tag {tag:#06x} to {what}"),
            format!(
                "{} responses with that tag: [{}]; all responses: [{}]",
                v.len(),
                v.iter().map(|t| t.show()).collect::<Vec<_>>().join("; "),
                seen.txns
                    .iter()
                    .filter(|t| t.opcode >= 0x80)
                    .map(|t| t.show())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        ))
    }
}

/// Checks a load-store response: opcode, status, tag, hlen 2, the data, VC 2, the network header
/// (to [`REM`] from [`DUT`]). `status_req` is the requirement that gives the status.
pub fn check_resp(
    t: &Txn,
    opcode: u8,
    status: u8,
    data: &[u8],
    status_req: &'static str,
) -> Result<(), Stop> {
    check_resp_to(t, REM, opcode, status, data, status_req)
}

/// As [`check_resp`], for a response to GPU `dst` (a second requester, [`REM2`]).
pub fn check_resp_to(
    t: &Txn,
    dst: u16,
    opcode: u8,
    status: u8,
    data: &[u8],
    status_req: &'static str,
) -> Result<(), Stop> {
    let what = format!("the response with tag {:#06x}", t.tag);
    if t.opcode != opcode {
        let defined = matches!(opcode & 0x7F, 0x01..=0x06 | 0x10 | 0x11);
        return Err(Stop::fail(
            if defined { "TXN-2-8" } else { "WIRE-6.1-5" },
            format!("{what}: opcode {opcode:#04x} (the request's opcode | 0x80)"),
            t.show(),
        ));
    }
    if t.fs != status {
        return Err(Stop::fail(
            status_req,
            format!("{what}: status {status:#04x}"),
            t.show(),
        ));
    }
    if t.data != data || usize::from(t.dlen) != data.len() {
        let req = if status == st::OK {
            "TXN-2-1"
        } else {
            "WIRE-6.9-1"
        };
        return Err(Stop::fail(
            req,
            format!("{what}: data {}", to_hex(data)),
            t.show(),
        ));
    }
    let vc = if opcode == op::RDMA_READ_RESP { 3 } else { 2 };
    if t.vc != vc {
        return Err(Stop::fail(
            "EP-8-6",
            format!("{what}: on VC {vc}"),
            t.show(),
        ));
    }
    let hlen = if opcode == op::RDMA_COMPLETION || opcode == op::RDMA_READ_RESP {
        4
    } else {
        2
    };
    if t.hlen != hlen {
        return Err(Stop::fail(
            "WIRE-6.1-1",
            format!("{what}: hlen {hlen}"),
            t.show(),
        ));
    }
    if t.dst != dst {
        return Err(Stop::fail(
            "WIRE-6.1-2",
            format!("{what}: destination GPU {dst}, the request's source"),
            t.show(),
        ));
    }
    if t.src != DUT {
        return Err(Stop::fail(
            "EP-12-3",
            format!("{what}: source GPU {DUT}, the device's id"),
            t.show(),
        ));
    }
    Ok(())
}

/// Reads `len` bytes of the device's own memory.
pub fn mem_read(ctx: &mut Ctx<'_>, space: Space, addr: u64, len: u64) -> Result<Vec<u8>, Stop> {
    let r = ctx.request(&Request::MemRead { space, addr, len })?;
    let d = r
        .data
        .ok_or_else(|| Stop::Harness("mem_read answered without data".into()))?;
    Ok(from_hex("mem_read", &d)?)
}

/// Writes the device's own memory.
pub fn mem_write(ctx: &mut Ctx<'_>, space: Space, addr: u64, data: &[u8]) -> Result<(), Stop> {
    ctx.request(&Request::MemWrite {
        space,
        addr,
        data: to_hex(data),
    })?;
    Ok(())
}

/// Posts an RDMA descriptor between the endpoint's global memory at `local` and [`REM`]'s global
/// memory at `addr` (region `key`): a write from local to remote when `write`, else a read.
/// Returns its id.
pub fn post(
    ctx: &mut Ctx<'_>,
    write: bool,
    local: u64,
    key: u32,
    addr: u64,
    len: u64,
) -> Result<u64, Stop> {
    ctx.request(&Request::Post {
        write,
        local_space: Space::Global,
        local_addr: local,
        dst: REM,
        space: Space::Global,
        key,
        addr,
        len,
    })?
    .id
    .ok_or_else(|| Stop::Harness("post answered without an id".into()))
}

/// Issues a load-store operation to [`REM`] and returns its tag.
pub fn issue(
    ctx: &mut Ctx<'_>,
    space: Space,
    key: u32,
    addr: u64,
    op: LsOp,
    stream: Option<u32>,
) -> Result<u16, Stop> {
    let r = ctx.request(&Request::Issue {
        dst: REM,
        space,
        key,
        addr,
        op,
        stream,
        port: None,
    })?;
    r.tag
        .ok_or_else(|| Stop::Harness("issue answered without a tag".into()))
}

/// Issues `n` unordered 4-byte LOADs to [`REM`] (region key 0x77, addresses 0x40 apart from 0)
/// and returns their tags.
pub fn issue_loads(ctx: &mut Ctx<'_>, n: u64) -> Result<Vec<u16>, Stop> {
    (0..n)
        .map(|i| {
            issue(
                ctx,
                Space::Global,
                0x77,
                0x40 * i,
                LsOp::Load { len: 4 },
                None,
            )
        })
        .collect()
}

/// `n` bytes of a pattern seeded by `seed`.
pub fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ ((i >> 8) as u8))
        .collect()
}

/// Fails `req` unless the device's memory at `addr` holds `want`.
pub fn expect_mem(
    ctx: &mut Ctx<'_>,
    req: &'static str,
    space: Space,
    addr: u64,
    want: &[u8],
    why: &str,
) -> Result<(), Stop> {
    let got = mem_read(ctx, space, addr, want.len() as u64)?;
    if got == want {
        Ok(())
    } else {
        Err(Stop::fail(
            req,
            format!("memory at {addr:#x}: {} ({why})", to_hex(want)),
            format!("memory at {addr:#x}: {}", to_hex(&got)),
        ))
    }
}

/// The transactions of the DATA frames in the log that the device sent (`from_dut`) or received,
/// with the time of the frame and whether it was a replay (REPLAY flag set).
pub fn logged_txns(ctx: &Ctx<'_>, from_dut: bool) -> Vec<(u64, bool, Txn)> {
    let mut out = Vec::new();
    for l in ctx.log().iter().filter(|l| l.from_dut == from_dut) {
        let b = &l.bytes;
        let at = if b.get(12..14) == Some(&[0x81, 0x00]) {
            18
        } else {
            14
        };
        if b.len() < at + 6 + 8 + 4 || b[at] & 0x0F != 0 {
            continue;
        }
        let vc = b[at + 1] >> 5;
        let replay = b[at + 1] & 1 != 0;
        if let Ok(ts) = parse_payload(l.port, vc, &b[at + 6..b.len() - 4]) {
            out.extend(ts.into_iter().map(|t| (l.time_ns, replay, t)));
        }
    }
    out
}

//! Endpoint vector cases (`EPT-VEC-<vector name>`): every golden vector of
//! `conformance/vectors/vectors.json` that is a DATA frame carrying requests or responses (stages 7
//! and 8 of wire.md Table WIRE-T1), sent to an UP endpoint by the harness's link end on port 0.
//!
//! The DATA payload of the vector (network header and transactions, without the padding and the
//! FCS) is sent as it is, but for the network header's destination, set to the device's GPU id,
//! and its source, set to the harness's (unless the vector is about that field). Before it, the
//! harness registers a read-write-atomic region around each address the vector's requests name,
//! with the vector's key, so that a well-formed request passes the checks of EP-2-7 and the
//! status is the one the vector decides.
//!
//! Each case checks what the vector's row requires:
//! - a request the vector marks malformed is answered with the response opcode, tag and status
//!   MALFORMED the vector names (WIRE-6.1-6, WIRE-6.1-10, WIRE-6.5-1, WIRE-6.7-1);
//! - a frame or transaction the vector marks for a discard adds exactly one to the counter its row
//!   names (`malformed_frames`, `malformed_txns`, `bad_responses`) and draws no response to it;
//! - each well-formed request is answered once with its tag and response opcode: UNSUPPORTED for
//!   an undefined opcode (WIRE-6.1-5), MISALIGNED for a misaligned atomic (WIRE-6.5-2, WIRE-6.5-3),
//!   OK otherwise; a segment of an RDMA write that does not cover the write is not answered;
//! - a response with an undefined opcode adds one to `unknown_responses` (WIRE-6.1-7).

use std::sync::OnceLock;

use crate::case::{Case, Level, Stop, check};
use crate::cases::endpoint::common::{DUT, G, NA, REM, RO, SH, Seen, Txn, ep_up, parse_payload};
use crate::ctx::Ctx;
use crate::device::{Request, Role, Space, to_hex};
use crate::vectors::{VectorFile, VectorJson};

fn file() -> &'static VectorFile {
    static FILE: OnceLock<VectorFile> = OnceLock::new();
    FILE.get_or_init(|| {
        serde_json::from_str(include_str!("../../../vectors/vectors.json")).unwrap_or_else(|_| {
            VectorFile {
                format: String::new(),
                version: 0,
                spec: String::new(),
                mfs: 0,
                well_formed: 0,
                malformed: 0,
                vectors: Vec::new(),
            }
        })
    })
}

/// The DATA payload of a vector's frame: VC, and the bytes from the network header to the end of
/// the payload its header gives (or to the FCS when that runs past it).
fn data_payload(bytes: &[u8]) -> Option<(u8, Vec<u8>)> {
    let at = if bytes.get(12..14) == Some(&[0x81, 0x00]) {
        16
    } else {
        12
    };
    if bytes.get(at..at + 2) != Some(&[0x88, 0xB5]) {
        return None;
    }
    let l = at + 2;
    let link = bytes.get(l..l + 6)?;
    if link[0] & 0x0F != 0 || link[0] >> 4 != 1 {
        return None;
    }
    let vc = link[1] >> 5;
    let body = bytes.get(l + 6..bytes.len().checked_sub(4)?)?;
    if body.len() < 8 {
        return None;
    }
    let plen = usize::from(u16::from_be_bytes([body[6], body[7]]));
    // A payload length past the frame cannot be sent by a conforming link end.
    let end = body.get(..8 + plen)?;
    Some((vc % 4, end.to_vec()))
}

/// What the device must do with a vector.
#[derive(Debug, Clone)]
struct Plan {
    vc: u8,
    payload: Vec<u8>,
    /// (space, key, address, bytes) of each request, for the regions to register.
    regions: Vec<(Space, u32, u64, u64)>,
    /// (response opcode, tag, status) the device must answer, once each.
    answers: Vec<(u8, u16, u8)>,
    /// (counter, requirement) that must go up by exactly one.
    counter: Option<(&'static str, &'static str)>,
    /// Responses allowed beside the answers: those to the well-formed requests before a
    /// malformed transaction.
    before: usize,
    /// The requirement an answer gives.
    answer_req: Vec<&'static str>,
    needs: Vec<&'static str>,
}

const DEFINED_REQ: [u8; 8] = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x10, 0x11];

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

fn needs_of(opcode: u8, flags: u8, needs: &mut Vec<&'static str>) {
    let n = match opcode & 0x7F {
        0x03..=0x05 => Some("atomics"),
        0x10 | 0x11 => Some("rdma"),
        _ => None,
    };
    let shared = DEFINED_REQ.contains(&opcode) && opcode != 0x06 && flags & 1 != 0;
    for n in n.into_iter().chain(shared.then_some("shared")) {
        if !needs.contains(&n) {
            needs.push(n);
        }
    }
}

/// The plan of a vector, or None when it is not a DATA frame an endpoint can be judged on.
fn plan(v: &VectorJson) -> Option<Plan> {
    let bytes = hex::decode(&v.hex).ok()?;
    let (vc, mut payload) = data_payload(&bytes)?;
    let mut p = Plan {
        vc,
        payload: Vec::new(),
        regions: Vec::new(),
        answers: Vec::new(),
        counter: None,
        before: 0,
        answer_req: Vec::new(),
        needs: Vec::new(),
    };
    let field = v.expected_error.as_ref().map(|e| e.field.as_str());
    if field != Some("net.dst_gpu") {
        payload[0..2].copy_from_slice(&DUT.to_be_bytes());
    }
    if field != Some("net.src_gpu") {
        payload[2..4].copy_from_slice(&REM.to_be_bytes());
    }
    match &v.expected_error {
        Some(e) if e.level == "frame" => return None,
        Some(e) => {
            let spec = leak(&e.spec);
            if let Some(c) = &e.counter {
                let c: &'static str = match c.as_str() {
                    "malformed_frames" => "malformed_frames",
                    "malformed_txns" => "malformed_txns",
                    "bad_responses" => "bad_responses",
                    _ => return None,
                };
                p.counter = Some((c, spec));
                p.before = e.transaction.map_or(0, |t| t.saturating_sub(1));
                // The opcode of the first transaction decides the capability it needs.
                if let (Some(o), Some(f), "transaction") =
                    (payload.get(8), payload.get(9), e.level.as_str())
                {
                    needs_of(*o, *f, &mut p.needs);
                }
            } else {
                // "respond with opcode 0x82 tag 16 status MALFORMED"
                let w: Vec<&str> = e.action.split_whitespace().collect();
                let opcode = w
                    .iter()
                    .position(|x| *x == "opcode")
                    .and_then(|i| w.get(i + 1))
                    .and_then(|x| u8::from_str_radix(x.trim_start_matches("0x"), 16).ok())?;
                let tag = w
                    .iter()
                    .position(|x| *x == "tag")
                    .and_then(|i| w.get(i + 1))
                    .and_then(|x| x.parse::<u16>().ok())?;
                if !w.contains(&"MALFORMED") {
                    return None;
                }
                p.answers.push((opcode, tag, 5));
                // A vector's own id may only describe the field; the answer MALFORMED is the
                // MUST of WIRE-6.1-6.
                let must = crate::coverage::requirement(spec).is_some_and(|r| r.is_must());
                p.answer_req.push(if must { spec } else { "WIRE-6.1-6" });
                needs_of(opcode, 0, &mut p.needs);
            }
        }
        None => {
            let txns = parse_payload(0, vc, &payload).ok()?;
            for t in &txns {
                needs_of(t.opcode, t.fs, &mut p.needs);
                plan_txn(t, &mut p);
            }
            if p.answers.is_empty() && p.counter.is_none() {
                return None;
            }
        }
    }
    // The vectors are wire vectors: an endpoint takes a transaction only on a VC of its class
    // (endpoint.md EP-3-7), so the payload goes on the VC that EP-3-1 gives its first
    // transaction, as the GPU ids are made the device's above.
    if let Some(&o) = payload.get(8) {
        p.vc = match o {
            0x10 | 0x11 => 1,
            0x00..=0x7F => 0,
            0x91 => 3,
            _ => 2,
        };
    }
    p.payload = payload;
    Some(p)
}

fn plan_txn(t: &Txn, p: &mut Plan) {
    let space = if t.fs & 1 != 0 {
        Space::Shared
    } else {
        Space::Global
    };
    if t.opcode >= 0x80 {
        if !matches!(t.opcode, 0x81..=0x86 | 0x90 | 0x91) {
            p.counter = Some(("unknown_responses", "WIRE-6.1-7"));
        }
        return;
    }
    if !DEFINED_REQ.contains(&t.opcode) {
        p.answers.push((t.opcode | 0x80, t.tag, 3));
        p.answer_req.push("WIRE-6.1-5");
        return;
    }
    if t.opcode == 0x06 {
        p.answers.push((0x86, t.tag, 0));
        p.answer_req.push("WIRE-6.1-1");
        return;
    }
    let key = t.word(0);
    let addr = t.dword(4);
    let len = match t.opcode {
        0x11 => u64::from(t.word(12)),
        0x10 => u64::from(t.word(16)),
        _ => 256,
    };
    p.regions.push((space, key, addr, len));
    match t.opcode {
        0x03..=0x05 => {
            let width = if t.opcode == 0x05 {
                u64::from(t.dlen) / 2
            } else {
                u64::from(t.dlen)
            };
            if width != 0 && !addr.is_multiple_of(width) {
                p.answers.push((t.opcode | 0x80, t.tag, 6));
                p.answer_req.push("WIRE-6.5-2");
            } else {
                p.answers.push((t.opcode | 0x80, t.tag, 0));
                p.answer_req.push("WIRE-6.1-1");
            }
        }
        0x10 => {
            // Only a segment that is the whole write is answered at once.
            if t.word(12) == 0 && u32::from(t.dlen) == t.word(16) {
                p.answers.push((0x90, t.tag, 0));
                p.answer_req.push("WIRE-6.7-2");
            }
        }
        _ => {
            p.answers.push((t.opcode | 0x80, t.tag, 0));
            p.answer_req.push("WIRE-6.1-1");
        }
    }
}

struct Meta {
    id: &'static str,
    title: &'static str,
    reqs: &'static [&'static str],
    needs: &'static [&'static str],
}

fn metas() -> &'static [(usize, Meta)] {
    static METAS: OnceLock<Vec<(usize, Meta)>> = OnceLock::new();
    METAS.get_or_init(|| {
        let mut out = Vec::new();
        for (i, v) in file().vectors.iter().enumerate() {
            let Some(p) = plan(v) else { continue };
            let mut reqs: Vec<&'static str> = Vec::new();
            for s in v
                .spec
                .iter()
                .map(|s| leak(s))
                .chain(p.answer_req.iter().copied())
                .chain(p.counter.map(|c| c.1))
            {
                if !reqs.contains(&s) {
                    reqs.push(s);
                }
            }
            // A discard is EP-10-1's; the order of the network header's checks is WIRE-5-8's.
            let extra: &[&'static str] = match p.counter {
                Some(("malformed_frames", _)) => &["WIRE-5-8", "EP-10-1"],
                Some(_) => &["EP-10-1"],
                None => &[],
            };
            for s in extra {
                if !reqs.contains(s) {
                    reqs.push(s);
                }
            }
            out.push((
                i,
                Meta {
                    id: leak(&format!("EPT-VEC-{}", v.name)),
                    title: leak(&format!(
                        "endpoint: the DATA vector {} ({}) is answered or counted as its row says",
                        v.name, v.description
                    )),
                    reqs: Box::leak(reqs.into_boxed_slice()),
                    needs: Box::leak(p.needs.into_boxed_slice()),
                },
            ));
        }
        out
    })
}

/// The endpoint vector cases, in the order of the vector file.
pub fn cases() -> Vec<Case> {
    metas()
        .iter()
        .filter_map(|(i, m)| RUNS.get(*i).map(|r| (*r, m)))
        .map(|(run, m)| Case {
            id: m.id,
            title: m.title,
            reqs: m.reqs,
            level: Level::Must,
            role: Role::Endpoint,
            needs: m.needs,
            run,
        })
        .collect()
}

type Run = fn(&mut Ctx<'_>) -> Result<(), Stop>;

macro_rules! runs {
    ($($i:literal)*) => { [$(run_at::<$i> as Run),*] };
}

/// One run per vector index; a vector past the table has no endpoint case (a test keeps the
/// vectors within it).
const RUNS: [Run; 192] = runs!(
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
    64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95
    96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119
    120 121 122 123 124 125 126 127 128 129 130 131 132 133 134 135 136 137 138 139 140 141 142 143
    144 145 146 147 148 149 150 151 152 153 154 155 156 157 158 159 160 161 162 163 164 165 166 167
    168 169 170 171 172 173 174 175 176 177 178 179 180 181 182 183 184 185 186 187 188 189 190 191
);

fn run_at<const I: usize>(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let v = file()
        .vectors
        .get(I)
        .ok_or_else(|| Stop::Harness(format!("no vector {I}")))?;
    let p = plan(v).ok_or_else(|| Stop::Harness(format!("no plan for vector {I}")))?;
    ep_up(ctx, 1)?;
    let mut done: Vec<(Space, u64)> = Vec::new();
    let mut theirs = vec![
        (Space::Global, G.0, G.1),
        (Space::Global, RO.0, RO.1),
        (Space::Global, NA.0, NA.1),
    ];
    if ctx.has_cap("shared") {
        theirs.push((Space::Shared, SH.0, SH.1));
    }
    for (space, key, addr, bytes) in &p.regions {
        let base = addr & !0xFFF;
        if done.contains(&(*space, base)) {
            continue;
        }
        done.push((*space, base));
        let len = (addr - base + bytes).div_ceil(0x1000) * 0x1000 + 0x1000;
        // A region of the bring-up in the way is removed first.
        for (s, b, l) in &theirs {
            if s == space && *b < base + len && base < b + l {
                ctx.request(&Request::Deregister {
                    space: *s,
                    base: *b,
                })?;
            }
        }
        theirs.retain(|(s, b, l)| !(s == space && *b < base + len && base < b + l));
        ctx.request(&Request::Register {
            space: *space,
            base,
            len,
            key: *key,
            perms: "rwa".into(),
        })?;
    }
    let before = p.counter.map(|c| ctx.counter(c.0)).transpose()?;
    ctx.peer_submit(0, p.vc, &p.payload)?;
    let mut seen = Seen::default();
    let answers = p.answers.clone();
    seen.run(ctx, 1, 100_000, |s| {
        answers
            .iter()
            .all(|(_, tag, _)| !s.with_tag(*tag, true).is_empty())
    })?;
    seen.run(ctx, 1, 10_000, |_| false)?;
    for (k, (opcode, tag, status)) in p.answers.iter().enumerate() {
        let req = p.answer_req.get(k).copied().unwrap_or("TXN-2-8");
        let got = seen.with_tag(*tag, true);
        let first = got.first().copied();
        check(
            first.is_some_and(|t| t.opcode == *opcode && t.fs == *status && t.dst == REM),
            req,
            format!("a response opcode {opcode:#04x} tag {tag} status {status:#04x} to GPU {REM}"),
            || {
                format!(
                    "responses: [{}], payload sent {}",
                    seen.txns
                        .iter()
                        .map(|t| t.show())
                        .collect::<Vec<_>>()
                        .join("; "),
                    to_hex(&p.payload)
                )
            },
        )?;
        if *opcode != 0x91 {
            check(
                got.len() == 1,
                "TXN-2-8",
                format!("exactly one response with tag {tag}"),
                || format!("{} responses", got.len()),
            )?;
        }
    }
    if let (Some((name, req)), Some(before)) = (p.counter, before) {
        let after = ctx.counter(name)?;
        check(
            after == before + 1,
            req,
            format!("{name} up by exactly 1 (from {before})"),
            || format!("{name} = {after}"),
        )?;
        if p.answers.is_empty() {
            check(
                seen.txns.len() <= p.before,
                req,
                format!(
                    "no response to a frame or transaction discarded (at most {} to the requests before it)",
                    p.before
                ),
                || {
                    seen.txns
                        .iter()
                        .map(|t| t.show())
                        .collect::<Vec<_>>()
                        .join("; ")
                },
            )?;
        }
    }
    Ok(())
}

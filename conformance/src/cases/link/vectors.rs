//! Vector cases (`VEC-<vector name>`): every golden vector of `conformance/vectors/vectors.json`
//! injected into a link end's raw port, once before the link is UP and once on an UP link, with
//! the disposition wire.md §7 (Table WIRE-T1) and link.md §4 and §7 require.
//!
//! Each case checks, in each of the two states:
//! - the frame is counted once: the counter its row of Table WIRE-T1 names (or, for a frame that
//!   is not discarded, `rx_frames` of its VC or the received-control counter of its kind) goes up
//!   by exactly one, and the sum of every counter LINK-7-3 lists goes up by exactly one;
//! - a NACK is sent only where the table says so (a damaged frame on an UP link, LINK-4-3), and
//!   then it carries the last good sequence number;
//! - on the UP link the sequence number is consumed exactly when the frame crosses the LLR line:
//!   the next expected DATA frame (sequence number 1 after a consumed number, 0 otherwise) is
//!   delivered with its exact payload and draws no NACK, and the link stays UP;
//! - a well-formed DATA frame is delivered with its exact payload; a DATA frame whose network
//!   header is malformed (stage 7) is delivered marked as malformed (LINK-4-17: the boundary
//!   cannot carry the mark, so an empty payload or the frame's body are both accepted); a frame
//!   whose transactions are malformed (stage 8) is delivered as it is, since a link end does not
//!   read transactions;
//! - INIT is answered with an INIT_ECHO carrying its nonce (and on an UP link the end
//!   re-initialises, LINK-2-6); an INIT_ECHO that does not echo the end's nonce is ignored.
//!
//! The link is brought UP with raw frames: the harness answers the device's INIT with an
//! INIT_ECHO built by `ethlink-protocol`, so the case runs against any link end. A DATA vector
//! that crosses the LLR line is injected with its sequence number set to the expected one (its FCS
//! recomputed); every other vector is injected byte for byte.

use std::sync::OnceLock;

use ethlink_protocol::{
    Capabilities, DataFlags, DataHeader, EthernetRepr, FrameRepr, InitRepr, LinkFrame,
    Role as WireRole, Seq, Vc, fcs,
};

use crate::case::{Case, Level, Stop, check};
use crate::cases::common::{Kind, kind_of, payload, peer_mac, setup};
use crate::ctx::Ctx;
use crate::device::{Counters, LinkParams, Output, Request, Role};
use crate::vectors::{VectorFile, VectorJson};

/// The committed golden vectors, parsed once.
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

/// Id, title and requirement ids of each vector's case, made once.
struct Meta {
    id: &'static str,
    title: &'static str,
    reqs: &'static [&'static str],
}

fn metas() -> &'static [Meta] {
    static METAS: OnceLock<Vec<Meta>> = OnceLock::new();
    METAS.get_or_init(|| {
        file()
            .vectors
            .iter()
            .map(|v| {
                let mut reqs: Vec<&'static str> = Vec::new();
                let leak = |s: &str| -> &'static str { Box::leak(s.to_owned().into_boxed_str()) };
                let bytes = hex::decode(&v.hex).unwrap_or_default();
                let discarded = matches!(disposition(v, &bytes), Disp::Discard { .. });
                let rejected_for = v.expected_error.as_ref().map(|e| e.spec.as_str());
                // Only what a link end's disposition shows: the link-level clauses the vector
                // exercises, and the reason of a discard the link end counts. The clauses of the
                // network header and the transactions are the endpoint's and the switch's.
                for s in &v.spec {
                    if link_level(s)
                        && !TRANSMITTER.contains(&s.as_str())
                        && (discarded || Some(s.as_str()) != rejected_for)
                    {
                        reqs.push(leak(s));
                    }
                }
                if let (true, Some(r)) = (discarded, rejected_for) {
                    reqs.push(leak(r));
                }
                for r in extra_reqs(v) {
                    reqs.push(r);
                }
                let mut seen = std::collections::BTreeSet::new();
                reqs.retain(|r| seen.insert(*r));
                Meta {
                    id: leak(&format!("VEC-{}", v.name)),
                    title: leak(&v.description),
                    reqs: Box::leak(reqs.into_boxed_slice()),
                }
            })
            .collect()
    })
}

/// Whether `id` is a clause of wire.md a link end applies: reserved bits (§1.2), framing (§2),
/// the link header (§3), control frames (§4) and the receive pipeline (§7).
fn link_level(id: &str) -> bool {
    id == "WIRE-1.2-2"
        || ["WIRE-2.", "WIRE-3-", "WIRE-4-", "WIRE-4.", "WIRE-7-"]
            .iter()
            .any(|p| id.starts_with(p))
}

/// Clauses of wire.md §1.2-§4 that bind the transmitter of a frame (or, for WIRE-4.2-1, what the
/// device sends): a vector exercises them, its disposition at a receiver does not show them.
/// WIRE-4.2-1 is claimed by the cases of damaged frames, whose NACK carries the number it fixes,
/// and WIRE-3-6 by the cases of DATA frames with ACK_REQ, which check the ACK.
const TRANSMITTER: [&str; 8] = [
    "WIRE-2.4-1",
    "WIRE-3-5",
    "WIRE-3-6",
    "WIRE-4.2-1",
    "WIRE-4.3-1",
    "WIRE-4.5-5",
    "WIRE-4.5-6",
    "WIRE-4.5-7",
];

/// Whether the DATA frame `bytes` carries the ACK_REQ flag.
fn ack_req(bytes: &[u8]) -> bool {
    link_at(bytes)
        .and_then(|at| bytes.get(at + 1))
        .is_some_and(|b| b & ethlink_protocol::FLAG_ACK_REQ != 0)
}

/// The requirements of wire.md §7 and link.md the disposition of `v` checks.
fn extra_reqs(v: &VectorJson) -> Vec<&'static str> {
    let mut r = vec!["WIRE-7-1", "LINK-7-1", "LINK-7-3"];
    let bytes = hex::decode(&v.hex).unwrap_or_default();
    match disposition(v, &bytes) {
        Disp::Discard { counter } => {
            r.push("WIRE-7-2");
            if counter == "rx_damaged" || counter == "rx_fcs_errors" {
                r.extend(["LINK-4-3", "WIRE-4.2-1"]);
            }
            if counter == "rx_damaged" {
                r.push("LINK-2-16");
            }
            if counter == "rx_stomped" {
                r.push("LINK-4-10");
            }
        }
        Disp::Data { stage } => {
            r.extend(["WIRE-7-3", "WIRE-7-5", "LINK-2-10", "LINK-4-1", "LINK-4-12"]);
            if stage == Stage::Network {
                r.push("LINK-4-17");
            }
            if ack_req(&bytes) {
                r.push("WIRE-3-6");
            }
        }
        Disp::Control { kind } => match kind {
            Kind::Init => r.extend(["LINK-2-2", "LINK-2-6"]),
            Kind::InitEcho => r.extend(["LINK-2-3", "LINK-2-17"]),
            _ => r.push("LINK-2-11"),
        },
    }
    r
}

/// Where a DATA frame's defect, if any, lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Well formed.
    None,
    /// Network header, padding or payload length (stage 7).
    Network,
    /// Transactions (stage 8), read by the endpoint only.
    Transactions,
}

/// What a link end does with a vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Disp {
    /// Discarded before the LLR, in any state, under this counter.
    Discard { counter: &'static str },
    /// A DATA frame the LLR accepts on its link header.
    Data { stage: Stage },
    /// A well-formed control frame of this kind.
    Control { kind: Kind },
}

const LINK_DISCARDS: [&str; 7] = [
    "rx_damaged",
    "rx_fcs_errors",
    "rx_stomped",
    "rx_foreign",
    "rx_bad_version",
    "rx_unknown_kind",
    "rx_malformed_control",
];

fn disposition(v: &VectorJson, bytes: &[u8]) -> Disp {
    if let Some(e) = &v.expected_error {
        if let Some(c) = e
            .counter
            .as_deref()
            .and_then(|c| LINK_DISCARDS.iter().find(|d| **d == c))
        {
            return Disp::Discard { counter: c };
        }
        let stage = if e.level == "transaction" {
            Stage::Transactions
        } else {
            Stage::Network
        };
        return Disp::Data { stage };
    }
    match link_at(bytes)
        .and_then(|at| bytes.get(at))
        .map(|b| b & 0x0F)
    {
        Some(0) => Disp::Data { stage: Stage::None },
        Some(1) => Disp::Control { kind: Kind::Ack(0) },
        Some(2) => Disp::Control {
            kind: Kind::Nack(0),
        },
        Some(3) => Disp::Control { kind: Kind::Cf },
        Some(4) => Disp::Control { kind: Kind::Cc },
        Some(5) => Disp::Control { kind: Kind::Init },
        _ => Disp::Control {
            kind: Kind::InitEcho,
        },
    }
}

/// The offset of the link header: 14, or 18 behind an 802.1Q tag.
fn link_at(bytes: &[u8]) -> Option<usize> {
    let t = bytes.get(12..14)?;
    Some(if t == [0x81, 0x00] { 18 } else { 14 })
}

/// The vector cases, one per golden vector, in the order of vectors.json.
pub fn cases() -> Vec<Case> {
    let metas = metas();
    RUNS.iter()
        .zip(metas)
        .map(|(run, m)| Case {
            id: m.id,
            title: m.title,
            reqs: m.reqs,
            level: Level::Must,
            role: Role::LinkEnd,
            needs: &[],
            run: *run,
        })
        .collect()
}

/// The number of vectors the case table can hold; a test keeps the vectors within it.
pub const CAPACITY: usize = RUNS.len();

fn run_at<const I: usize>(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let v = file()
        .vectors
        .get(I)
        .ok_or_else(|| Stop::Harness(format!("no vector {I}")))?;
    run_vector(ctx, v)
}

type Run = fn(&mut Ctx<'_>) -> Result<(), Stop>;

macro_rules! runs {
    ($($i:literal)*) => { [$(run_at::<$i> as Run),*] };
}

const RUNS: [Run; 192] = runs!(
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
    64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95
    96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119
    120 121 122 123 124 125 126 127 128 129 130 131 132 133 134 135 136 137 138 139 140 141 142 143
    144 145 146 147 148 149 150 151 152 153 154 155 156 157 158 159 160 161 162 163 164 165 166 167
    168 169 170 171 172 173 174 175 176 177 178 179 180 181 182 183 184 185 186 187 188 189 190 191
);

/// The nonce of the harness's raw peer.
const PEER_NONCE: u32 = 0x0BAD_CAFE;
/// How long the case waits for the device's answer to one frame.
const SETTLE_NS: u64 = 20_000;

/// The counters a frame handed to a link end is counted in, exactly one of them (LINK-7-3).
fn accounting(c: &Counters) -> u64 {
    let mut sum = 0u64;
    for (name, value) in c {
        let base = name.split('.').next().unwrap_or("");
        let counted = matches!(
            base,
            "rx_frames"
                | "acks_received"
                | "nacks_received"
                | "cf_received"
                | "cc_received"
                | "inits_received"
                | "init_echoes_received"
                | "rx_fcs_errors"
                | "rx_damaged"
                | "rx_stomped"
                | "rx_foreign"
                | "rx_bad_version"
                | "rx_unknown_kind"
                | "rx_malformed_control"
                | "rx_vc_not_agreed"
                | "rx_not_up"
                | "duplicates"
                | "discarded_after_nack"
                | "credit_overruns"
                | "init_echoes_ignored"
                | "init_refused"
        );
        if counted {
            sum = sum.wrapping_add(*value);
        }
    }
    sum
}

fn get(c: &Counters, name: &str) -> u64 {
    c.get(name).copied().unwrap_or(0)
}

/// Checks that `name` went up by one from `before` to `after`, and nothing else LINK-7-3 lists.
fn counted_once(before: &Counters, after: &Counters, name: &str, when: &str) -> Result<(), Stop> {
    let d = get(after, name).wrapping_sub(get(before, name));
    let req = if LINK_DISCARDS.contains(&name) || name == "rx_not_up" {
        "LINK-7-1"
    } else {
        "LINK-7-3"
    };
    check(
        d == 1,
        req,
        format!("{when}: {name} up by exactly 1"),
        || format!("{when}: {name} up by {d}; {}", changed(before, after)),
    )?;
    let total = accounting(after).wrapping_sub(accounting(before));
    check(
        total == 1,
        "LINK-7-3",
        format!("{when}: exactly one of the counters of LINK-7-3 up by 1 ({name})"),
        || format!("{when}: {total} counts; {}", changed(before, after)),
    )
}

fn changed(before: &Counters, after: &Counters) -> String {
    let v: Vec<String> = after
        .iter()
        .filter(|(k, v)| get(before, k) != **v)
        .map(|(k, v)| format!("{k} +{}", v.wrapping_sub(get(before, k))))
        .collect();
    if v.is_empty() {
        "no counter changed".into()
    } else {
        format!("changed: {}", v.join(", "))
    }
}

/// The device's MAC address as its INIT showed it.
#[derive(Clone, Copy)]
struct Up {
    dut_mac: ethlink_protocol::MacAddr,
}

fn emit(repr: &FrameRepr<'_>) -> Result<Vec<u8>, Stop> {
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut buf)
        .map_err(|e| Stop::Harness(format!("emit: {e}")))?;
    Ok(buf)
}

/// The harness's INIT parameters: eight VCs, the device's MFS and credit size, room for many
/// frames of the largest size.
fn peer_init(ctx: &Ctx<'_>, nonce: u32) -> InitRepr {
    InitRepr {
        nonce,
        vcs: 8,
        credit_size: 64,
        mfs: ctx.params.mfs.unwrap_or(9216),
        window: Seq::MAX_WINDOW,
        credits: [4096; 8],
        credit_overhead: 0,
        caps: Capabilities::NONE,
        role: WireRole::LinkEnd,
    }
}

/// Resets the device with eight VCs and brings its physical link up on a raw port; returns the
/// device's first INIT, parsed.
fn start(ctx: &mut Ctx<'_>) -> Result<(ethlink_protocol::MacAddr, InitRepr), Stop> {
    ctx.reset(&setup(LinkParams {
        vcs: Some(8),
        ..LinkParams::default()
    }))?;
    ctx.request(&Request::PhysicalUp { port: 0 })?;
    let mut found = None;
    ctx.run_until(200_000, |c| {
        for (_, f) in c.take_frames(0) {
            if let Ok(FrameRepr {
                eth,
                link: LinkFrame::Init(i),
            }) = FrameRepr::parse_bytes(&f, 9216)
            {
                found.get_or_insert((eth.src, i));
            }
        }
        found.is_some()
    })?;
    found.ok_or_else(|| {
        Stop::fail(
            "LINK-2-1",
            "an INIT after the physical link came up",
            "none within 200 us",
        )
    })
}

/// Brings the device UP by answering its INIT with an INIT_ECHO.
fn bring_up(ctx: &mut Ctx<'_>) -> Result<Up, Stop> {
    let (dut_mac, init) = start(ctx)?;
    let echo = emit(&FrameRepr {
        eth: EthernetRepr {
            dst: dut_mac,
            src: peer_mac(0),
            vlan: None,
        },
        link: LinkFrame::InitEcho {
            echo_nonce: init.nonce,
            init: peer_init(ctx, PEER_NONCE),
        },
    })?;
    ctx.take_outputs();
    ctx.inject(0, &echo)?;
    let mut up = false;
    ctx.run_until(50_000, |c| {
        up |= c
            .take_outputs()
            .iter()
            .any(|o| matches!(o, Output::LinkUp { port: 0 }));
        up
    })?;
    if !up {
        return Err(Stop::fail(
            "LINK-2-3",
            "UP on an INIT_ECHO that echoes the device's nonce",
            "no link-up event within 50 us",
        ));
    }
    ctx.run_for(2_000)?;
    ctx.take_frames(0);
    ctx.take_outputs();
    Ok(Up { dut_mac })
}

/// A well-formed DATA frame with `seq` on VC 0, and its payload.
fn probe(up: Up, seq: u32, tag: u32) -> Result<(Vec<u8>, Vec<u8>), Stop> {
    let p = payload(64, tag);
    let f = emit(&FrameRepr {
        eth: EthernetRepr {
            dst: up.dut_mac,
            src: peer_mac(0),
            vlan: None,
        },
        link: LinkFrame::Data {
            header: DataHeader {
                vc: Vc::new(0).unwrap_or_default(),
                flags: DataFlags::default(),
                seq: Seq::new(seq),
            },
            payload: &p,
        },
    })?;
    Ok((f, p))
}

/// The NACKs among `frames`, by their sequence numbers.
fn nacks(frames: &[(u64, Vec<u8>)]) -> Vec<u32> {
    frames
        .iter()
        .filter_map(|(_, f)| match kind_of(f) {
            Some(Kind::Nack(s)) => Some(s),
            _ => None,
        })
        .collect()
}

fn delivered(outs: &[Output]) -> Vec<(u8, Vec<u8>)> {
    outs.iter()
        .filter_map(|o| match o {
            Output::Delivered { vc, payload, .. } => {
                Some((*vc, hex::decode(payload).unwrap_or_default()))
            }
            _ => None,
        })
        .collect()
}

/// `bytes` with the link header's sequence number set to `seq` and the FCS recomputed.
fn with_seq(bytes: &[u8], seq: u32) -> Vec<u8> {
    let mut f = bytes.to_vec();
    if let Some(h) = link_at(&f).and_then(|at| f.get_mut(at + 3..at + 6)) {
        let [_, b, c, d] = seq.to_be_bytes();
        h[0] = (h[0] & 0xF0) | (b & 0x0F);
        h[1] = c;
        h[2] = d;
    }
    let end = f.len().saturating_sub(fcs::FCS_LEN);
    let sum = fcs::fcs_bytes(&f[..end]);
    if let Some(tail) = f.get_mut(end..) {
        tail.copy_from_slice(&sum);
    }
    f
}

fn run_vector(ctx: &mut Ctx<'_>, v: &VectorJson) -> Result<(), Stop> {
    let bytes = hex::decode(&v.hex).map_err(|e| Stop::Harness(format!("vector hex: {e}")))?;
    let disp = disposition(v, &bytes);
    not_up(ctx, v, &bytes, disp)?;
    on_up_link(ctx, &bytes, disp)
}

/// The vector before the link is UP (the end in INIT, physical link up).
fn not_up(ctx: &mut Ctx<'_>, v: &VectorJson, bytes: &[u8], disp: Disp) -> Result<(), Stop> {
    start(ctx)?;
    ctx.run_for(1_000)?;
    ctx.take_frames(0);
    ctx.take_outputs();
    let before = ctx.counters()?;
    ctx.inject(0, bytes)?;
    ctx.run_for(SETTLE_NS)?;
    let after = ctx.counters()?;
    let sent = ctx.take_frames(0);
    let outs = ctx.take_outputs();
    let when = "before UP";
    let (counter, req_nack) = match disp {
        Disp::Discard { counter } => (counter.to_owned(), "WIRE-7-2"),
        Disp::Data { .. } => ("rx_not_up".to_owned(), "WIRE-7-5"),
        Disp::Control { kind: Kind::Init } => (init_counter(ctx, bytes), "LINK-2-2"),
        Disp::Control {
            kind: Kind::InitEcho,
        } => ("init_echoes_ignored".to_owned(), "LINK-2-17"),
        Disp::Control { .. } => ("rx_not_up".to_owned(), "LINK-2-11"),
    };
    counted_once(&before, &after, &counter, when)?;
    let n = nacks(&sent);
    check(
        n.is_empty(),
        req_nack,
        format!("{when}: no NACK for {}", v.name),
        || format!("NACKs carrying {n:?}"),
    )?;
    let d = delivered(&outs);
    check(
        d.is_empty(),
        "LINK-2-10",
        format!("{when}: nothing delivered"),
        || format!("delivered {} payloads", d.len()),
    )?;
    let up = outs.iter().any(|o| matches!(o, Output::LinkUp { .. }));
    check(
        !up,
        "LINK-2-3",
        format!("{when}: not UP without an INIT_ECHO for its nonce"),
        || "the link came UP".into(),
    )?;
    if disp == (Disp::Control { kind: Kind::Init }) && counter == "inits_received" {
        answered(&sent, bytes, "LINK-2-2", when)?;
    }
    Ok(())
}

/// The counter an INIT vector goes to: refused when its grants cannot carry one frame of the MFS
/// that would be agreed on a VC that would be agreed (LINK-2-12).
fn init_counter(ctx: &Ctx<'_>, bytes: &[u8]) -> String {
    let Ok(r) = FrameRepr::parse_bytes(bytes, 9216) else {
        return "rx_malformed_control".into();
    };
    let LinkFrame::Init(i) = r.link else {
        return "inits_received".into();
    };
    let mfs = u32::from(i.mfs.min(ctx.params.mfs.unwrap_or(9216)));
    let vcs = i.vcs.min(ctx.params.vcs.unwrap_or(8));
    let need = (mfs + u32::from(i.credit_overhead)).div_ceil(u32::from(i.credit_size.max(1)));
    let refused = i.credits.iter().take(usize::from(vcs)).any(|g| *g < need);
    if refused {
        "init_refused"
    } else {
        "inits_received"
    }
    .into()
}

/// Checks that an INIT_ECHO echoing the nonce of the INIT `init` is among `sent`.
fn answered(
    sent: &[(u64, Vec<u8>)],
    init: &[u8],
    req: &'static str,
    when: &str,
) -> Result<(), Stop> {
    let nonce = match FrameRepr::parse_bytes(init, 9216).map(|r| r.link) {
        Ok(LinkFrame::Init(i)) => i.nonce,
        _ => return Ok(()),
    };
    let echoes: Vec<u32> = sent
        .iter()
        .filter_map(
            |(_, f)| match FrameRepr::parse_bytes(f, 9216).map(|r| r.link) {
                Ok(LinkFrame::InitEcho { echo_nonce, .. }) => Some(echo_nonce),
                _ => None,
            },
        )
        .collect();
    check(
        echoes.contains(&nonce),
        req,
        format!("{when}: an INIT_ECHO with echo nonce {nonce:#010x}"),
        || format!("INIT_ECHO frames echoing {echoes:x?}"),
    )
}

/// The vector on an UP link, then the next expected DATA frame.
fn on_up_link(ctx: &mut Ctx<'_>, bytes: &[u8], disp: Disp) -> Result<(), Stop> {
    let up = bring_up(ctx)?;
    let when = "on an UP link";
    let before = ctx.counters()?;
    let (frame, consumed) = match disp {
        Disp::Data { .. } => (with_seq(bytes, 0), true),
        _ => (bytes.to_vec(), false),
    };
    ctx.inject(0, &frame)?;
    ctx.run_for(SETTLE_NS)?;
    let after = ctx.counters()?;
    let sent = ctx.take_frames(0);
    let outs = ctx.take_outputs();
    let down = outs.iter().any(|o| matches!(o, Output::LinkDown { .. }));
    let n = nacks(&sent);
    match disp {
        Disp::Discard { counter } => {
            counted_once(&before, &after, counter, when)?;
            if counter == "rx_damaged" || counter == "rx_fcs_errors" {
                check(
                    n == vec![Seq::MASK],
                    "LINK-4-3",
                    format!(
                        "{when}: one NACK carrying the last good number {:#x}",
                        Seq::MASK
                    ),
                    || format!("NACKs carrying {n:x?}"),
                )?;
            } else {
                check(
                    n.is_empty(),
                    "WIRE-7-2",
                    format!("{when}: no NACK for a frame discarded as {counter}"),
                    || format!("NACKs carrying {n:x?}"),
                )?;
            }
        }
        Disp::Data { stage } => {
            let vc = link_at(&frame)
                .and_then(|at| frame.get(at + 1))
                .map_or(0, |b| b >> 5);
            counted_once(&before, &after, &format!("rx_frames.vc{vc}"), when)?;
            check(
                n.is_empty(),
                "WIRE-7-3",
                format!("{when}: no NACK for the expected DATA frame"),
                || format!("NACKs carrying {n:x?}"),
            )?;
            if ack_req(&frame) {
                let acks: Vec<u32> = sent
                    .iter()
                    .filter_map(|(_, f)| match kind_of(f) {
                        Some(Kind::Ack(s)) => Some(s),
                        _ => None,
                    })
                    .collect();
                check(
                    acks.contains(&0),
                    "WIRE-3-6",
                    format!("{when}: an ACK carrying 0 for a DATA frame with ACK_REQ"),
                    || format!("ACKs carrying {acks:x?}"),
                )?;
            }
            let d = delivered(&outs);
            let body = FrameRepr::parse_bytes(&frame, 9216)
                .ok()
                .and_then(|r| match r.link {
                    LinkFrame::Data { payload, .. } => Some(payload.to_vec()),
                    _ => None,
                });
            let ok = match (stage, &body) {
                (Stage::Network, _) => {
                    let at = link_at(&frame).unwrap_or(14) + 6;
                    let raw = frame
                        .get(at..frame.len().saturating_sub(fcs::FCS_LEN))
                        .unwrap_or(&[]);
                    d.len() == 1 && d[0].0 == vc && (d[0].1.is_empty() || raw.starts_with(&d[0].1))
                }
                (_, Some(p)) => d == vec![(vc, p.clone())],
                (_, None) => false,
            };
            let req = if stage == Stage::Network {
                "LINK-4-17"
            } else {
                "LINK-4-1"
            };
            check(
                ok,
                req,
                format!(
                    "{when}: the payload delivered once on VC {vc}{}",
                    if stage == Stage::Network {
                        ", marked malformed (empty) or as received"
                    } else {
                        ", byte for byte"
                    }
                ),
                || {
                    format!(
                        "delivered {:?}",
                        d.iter()
                            .map(|(v, p)| format!("vc{v}: {}", hex::encode(p)))
                            .collect::<Vec<_>>()
                    )
                },
            )?;
        }
        Disp::Control { kind: Kind::Init } => {
            let counter = init_counter(ctx, bytes);
            counted_once(&before, &after, &counter, when)?;
            if counter == "inits_received" {
                answered(&sent, bytes, "LINK-2-2", when)?;
                // A new nonce from the peer while UP: the peer restarted (LINK-2-6).
                return check(
                    down,
                    "LINK-2-6",
                    format!("{when}: re-initialisation on an INIT with a new nonce"),
                    || "the link stayed UP".into(),
                );
            }
            return Ok(());
        }
        Disp::Control { kind } => {
            let counter = match kind {
                Kind::Ack(_) => "acks_received",
                Kind::Nack(_) => "nacks_received",
                Kind::Cf => "cf_received",
                Kind::Cc => "cc_received",
                _ => "init_echoes_ignored",
            };
            counted_once(&before, &after, counter, when)?;
            check(
                n.is_empty(),
                "LINK-7-3",
                format!("{when}: no NACK for a control frame"),
                || format!("NACKs carrying {n:x?}"),
            )?;
        }
    }
    check(
        !down,
        "LINK-2-3",
        format!("{when}: the link stays UP"),
        || "the link went down".into(),
    )?;
    // The sequence number was consumed exactly when the frame crossed the LLR line.
    let next = u32::from(consumed);
    let (p_frame, p_payload) = probe(up, next, 0x7E57)?;
    ctx.inject(0, &p_frame)?;
    ctx.run_for(SETTLE_NS)?;
    let sent = ctx.take_frames(0);
    let outs = ctx.take_outputs();
    let n = nacks(&sent);
    let d = delivered(&outs);
    let req = if consumed { "WIRE-7-3" } else { "WIRE-7-2" };
    check(
        n.is_empty() && d == vec![(0, p_payload)],
        req,
        format!(
            "the next DATA frame, sequence number {next}, delivered byte for byte and not NACKed \
             (the vector {} its sequence number)",
            if consumed { "consumed" } else { "did not take" }
        ),
        || format!("NACKs carrying {n:x?}; {} payloads delivered", d.len()),
    )
}

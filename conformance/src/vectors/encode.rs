//! Encoding the JSON form of a frame back into bytes.
//!
//! The frame is built with the protocol crate's emitters, so every reserved bit and all padding
//! are zero (WIRE-1.2-1, WIRE-2.4-1); the runs listed under `reserved` are then written back and
//! the FCS is computed last (WIRE-2.5-1, WIRE-2.5-2). Finally the frame is decoded again and
//! every key the JSON gives, derived ones included, must agree with that decode: what `encode`
//! prints is exactly the frame the JSON describes. A frame whose JSON says it was given without
//! its FCS (`decode --no-fcs`) is printed without it.

use std::fmt;

use ethlink_protocol::{
    AtomicKind, AtomicOp, AtomicValue, Capabilities, CreditRepr, DataFlags, DataHeader, DataRepr,
    EthernetRepr, FrameRepr, GpuId, InitRepr, LinkFrame, MAX_FRAME_LEN, MemTarget, PathId, Role,
    Seq, Space, TxnRepr, Txns, Vc, VlanTag, Width, data_frame_len, emit_data_frame, fcs,
};
use serde_json::Value;

use crate::vectors::decode;
use crate::vectors::model::{
    CreditsJson, FrameJson, InitJson, KindJson, LinkJson, NetworkJson, SpaceJson, TxnJson,
};

/// Why JSON could not be encoded: the JSON path of the offending key and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodeError {
    /// Path of the key, for example `txns[2].width` (empty for the document as a whole).
    pub path: String,
    /// What is wrong with it.
    pub message: String,
}

impl EncodeError {
    fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        EncodeError {
            path: path.into(),
            message: message.into(),
        }
    }

    fn prefixed(mut self, prefix: &str) -> Self {
        self.path = if self.path.is_empty() {
            prefix.to_owned()
        } else if self.path.starts_with('[') {
            format!("{prefix}{}", self.path)
        } else {
            format!("{prefix}.{}", self.path)
        };
        self
    }
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for EncodeError {}

/// Keys whose value is a JSON object (or null) in `decode --json`'s output, besides a frame's
/// `credits`: no other shape is read for them (serde would take a struct from a positional
/// array too).
const OBJECT_KEYS: [&str; 7] = ["eth", "vlan", "link", "init", "network", "path", "error"];

/// Checks that `v` (at `path`) is written only in the documented forms: frames and the objects
/// of [`OBJECT_KEYS`] as objects, transactions as objects, `0x` hex strings with nothing but hex
/// digits after the `0x`, MAC addresses as six pairs of hex digits. Rust's integer parsers take
/// a leading `+`, which no documented form has.
fn check_forms(v: &serde_json::Value, path: &str, object: bool) -> Result<(), EncodeError> {
    use serde_json::Value;
    let bad = |why: String| Err(EncodeError::new(path.to_owned(), why));
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                // A frame's `credits` (a CF) is an object; an INIT's is a list.
                let frame_level = path.is_empty()
                    || (path.starts_with('[') && path.ends_with(']') && !path.contains('.'));
                let want_object =
                    OBJECT_KEYS.contains(&k.as_str()) || (k == "credits" && frame_level);
                if want_object && !(x.is_object() || x.is_null()) {
                    return Err(EncodeError::new(
                        p,
                        format!("must be a JSON object of keys, not {x}"),
                    ));
                }
                if k == "txns" {
                    for (i, t) in x.as_array().into_iter().flatten().enumerate() {
                        check_forms(t, &format!("{p}[{i}]"), true)?;
                    }
                } else {
                    check_forms(x, &p, false)?;
                }
            }
            Ok(())
        }
        _ if object => bad(format!("must be a JSON object of keys, not {v}")),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                check_forms(x, &format!("{path}[{i}]"), false)?;
            }
            Ok(())
        }
        Value::String(t) => {
            if let Some(digits) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X"))
                && (digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()))
            {
                return bad(format!("{t:?} is not 0x followed by hex digits"));
            }
            let parts: Vec<&str> = t.split(':').collect();
            if parts.len() == 6
                && !parts
                    .iter()
                    .all(|p| p.len() == 2 && p.bytes().all(|b| b.is_ascii_hexdigit()))
            {
                return bad(format!(
                    "{t:?} is not a MAC address of six pairs of hex digits like 02:00:00:00:00:01"
                ));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Parses JSON text holding one frame object or an array of them, as `decode --json` prints.
pub fn parse_json(text: &str) -> Result<Vec<FrameJson>, EncodeError> {
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
        match &value {
            serde_json::Value::Array(frames) => {
                for (i, f) in frames.iter().enumerate() {
                    check_forms(f, &format!("[{i}]"), true)?;
                }
            }
            frame => check_forms(frame, "", true)?,
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let is_array = text.trim_start().starts_with('[');
    let frames = if is_array {
        serde_path_to_error::deserialize::<_, Vec<FrameJson>>(&mut de)
    } else {
        serde_path_to_error::deserialize::<_, FrameJson>(&mut de).map(|f| vec![f])
    }
    .map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        let message = e.into_inner().to_string();
        // serde_json says "trailing characters" of an array longer than a fixed-size one.
        let message = match message.strip_prefix("trailing characters") {
            Some(at) if path.ends_with("counters") || path.ends_with("credits") => {
                format!("holds more than 8 elements: it has exactly one per VC, 8{at}")
            }
            Some(at) if !path.is_empty() => format!("holds more elements than it may{at}"),
            _ => message,
        };
        EncodeError::new(path, message)
    })?;
    de.end()
        .map_err(|e| EncodeError::new("", format!("trailing characters after the JSON: {e}")))?;
    if frames.is_empty() {
        return Err(EncodeError::new("", "the array holds no frames"));
    }
    Ok(frames)
}

/// Encodes each frame of JSON text (one frame object or an array of them) on its own: the
/// outer `Err` is for text that is not JSON at all, each inner one for a frame that cannot be
/// read or encoded, so that the others still can.
pub fn encode_each(text: &str) -> Result<Vec<Result<Vec<u8>, EncodeError>>, EncodeError> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| EncodeError::new("", e.to_string()))?;
    let frames = match value {
        serde_json::Value::Array(frames) => frames,
        frame => vec![frame],
    };
    if frames.is_empty() {
        return Err(EncodeError::new("", "the array holds no frames"));
    }
    Ok(frames
        .iter()
        .map(|f| {
            check_forms(f, "", true)?;
            let json: FrameJson = serde_path_to_error::deserialize(f).map_err(|e| {
                let path = e.path().to_string();
                let path = if path == "." { String::new() } else { path };
                EncodeError::new(path, e.into_inner().to_string())
            })?;
            encode_frame(&json)
        })
        .collect())
}

/// Encodes JSON text (one frame object or an array of them) into frames, FCS included unless
/// the JSON says the frame has none.
pub fn encode_text(text: &str) -> Result<Vec<Vec<u8>>, EncodeError> {
    let frames = parse_json(text)?;
    let single = frames.len() == 1;
    frames
        .iter()
        .enumerate()
        .map(|(i, f)| {
            encode_frame(f).map_err(|e| {
                if single {
                    e
                } else {
                    e.prefixed(&format!("[{i}]"))
                }
            })
        })
        .collect()
}

/// Encodes one frame: canonical emission, the `reserved` runs written back, the FCS, and the
/// check that the result decodes to what the JSON says. A frame whose JSON says it has no FCS
/// (`"fcs_present": false` or `"fcs": null`) is returned without it.
pub fn encode_frame(json: &FrameJson) -> Result<Vec<u8>, EncodeError> {
    if let Some(e) = &json.error {
        return Err(EncodeError::new(
            "error",
            format!(
                "the JSON describes a rejected frame ({}); only well-formed frames can be encoded",
                e.message
            ),
        ));
    }
    if let Some(reason) = &json.capture_error {
        return Err(EncodeError::new(
            "capture_error",
            format!("the capture did not hold this frame whole ({reason}); it cannot be encoded"),
        ));
    }
    let has_fcs = fcs_wanted(json)?;
    let mut frame = emit_canonical(json)?;
    let end = frame.len().saturating_sub(fcs::FCS_LEN);
    for (i, run) in json.reserved.iter().enumerate() {
        let path = format!("reserved[{i}]");
        let stop = run
            .offset
            .checked_add(run.hex.0.len())
            .filter(|&stop| stop <= end)
            .ok_or_else(|| {
                EncodeError::new(
                    &path,
                    format!(
                        "{} bytes at offset {} run past the frame's last byte before the FCS ({end})",
                        run.hex.0.len(),
                        run.offset
                    ),
                )
            })?;
        if let Some(dst) = frame.get_mut(run.offset..stop) {
            dst.copy_from_slice(&run.hex.0);
        }
    }
    refresh_fcs(&mut frame);
    let decoded = if has_fcs {
        decode::decode_frame(&frame, MAX_FRAME_LEN)
    } else {
        frame.truncate(end);
        decode::decode_frame_without_fcs(&frame, MAX_FRAME_LEN)
    };
    if let Some(e) = decoded.error {
        return Err(EncodeError::new(
            "",
            format!("the frame built from the JSON does not decode: {}", e.error),
        ));
    }
    check_agrees(json, &decoded.json)?;
    Ok(frame)
}

/// Whether the frame is to be printed with its FCS: not when `fcs_present` is `false` or `fcs` is
/// `null` (what `decode --no-fcs --json` prints), and the two must not contradict each other.
fn fcs_wanted(json: &FrameJson) -> Result<bool, EncodeError> {
    match (json.fcs_present, &json.fcs) {
        (Some(false), Some(Some(_))) => Err(EncodeError::new(
            "fcs",
            "the JSON gives FCS bytes but says \"fcs_present\": false; drop one of them",
        )),
        (Some(true), Some(None)) => Err(EncodeError::new(
            "fcs",
            "null says the frame has no FCS but the JSON says \"fcs_present\": true; \
             drop one of them",
        )),
        (Some(present), _) => Ok(present),
        (None, Some(None)) => Ok(false),
        (None, _) => Ok(true),
    }
}

/// Recomputes the FCS over everything before the last four bytes (WIRE-2.5-1, WIRE-2.5-2).
pub fn refresh_fcs(frame: &mut [u8]) {
    let end = frame.len().saturating_sub(fcs::FCS_LEN);
    let (content, fcs_out) = frame.split_at_mut(end);
    if fcs_out.len() == fcs::FCS_LEN {
        fcs_out.copy_from_slice(&fcs::fcs_bytes(content));
    }
}

/// Requires every key of `given` (except `frame`, `fcs` and `fcs_present`, which
/// [`fcs_wanted`] has read) to equal the same key of `decoded`.
fn check_agrees(given: &FrameJson, decoded: &FrameJson) -> Result<(), EncodeError> {
    let to_value = |f: &FrameJson| {
        serde_json::to_value(f).map_err(|e| EncodeError::new("", format!("internal: {e}")))
    };
    let (mut given, decoded) = (to_value(given)?, to_value(decoded)?);
    if let Some(obj) = given.as_object_mut() {
        obj.remove("frame");
        obj.remove("fcs");
        obj.remove("fcs_present");
    }
    subset(&given, &decoded, "")
}

fn subset(given: &Value, decoded: &Value, path: &str) -> Result<(), EncodeError> {
    match (given, decoded) {
        (Value::Object(g), Value::Object(d)) => {
            for (key, gv) in g {
                let sub = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match d.get(key) {
                    Some(dv) => subset(gv, dv, &sub)?,
                    None => {
                        return Err(EncodeError::new(
                            sub,
                            format!(
                                "the JSON gives {gv} but the frame built from it has no such key"
                            ),
                        ));
                    }
                }
            }
            Ok(())
        }
        (Value::Array(g), Value::Array(d)) if g.len() == d.len() => g
            .iter()
            .zip(d)
            .enumerate()
            .try_for_each(|(i, (gv, dv))| subset(gv, dv, &format!("{path}[{i}]"))),
        _ if given == decoded => Ok(()),
        _ => Err(EncodeError::new(
            path,
            format!("the JSON gives {given} but the frame built from it decodes as {decoded}"),
        )),
    }
}

/// Emits the frame `json` describes with every reserved bit and all padding zero.
pub fn emit_canonical(json: &FrameJson) -> Result<Vec<u8>, EncodeError> {
    let eth_json = json
        .eth
        .as_ref()
        .ok_or_else(|| EncodeError::new("eth", "missing: every frame needs an Ethernet header"))?;
    let link = json
        .link
        .as_ref()
        .ok_or_else(|| EncodeError::new("link", "missing: every frame needs a link header"))?;
    let vlan = match &eth_json.vlan {
        Some(v) => {
            in_range("eth.vlan.pcp", u64::from(v.pcp), 0, 7)?;
            in_range("eth.vlan.vid", u64::from(v.vid), 0, 4095)?;
            Some(VlanTag {
                pcp: v.pcp,
                dei: v.dei,
                vid: v.vid,
            })
        }
        None => None,
    };
    let eth = EthernetRepr {
        dst: eth_json.dst.0,
        src: eth_json.src.0,
        vlan,
    };
    let kind = link.kind;
    let only = |present: bool, key: &str, kinds: &str| {
        if present {
            Err(EncodeError::new(
                key,
                format!(
                    "not allowed in {} frames: only {kinds} frames carry it",
                    kind.name()
                ),
            ))
        } else {
            Ok(())
        }
    };
    let is_data = kind == KindJson::Data;
    only(!is_data && link.vc.is_some(), "link.vc", "DATA")?;
    only(!is_data && link.replay.is_some(), "link.replay", "DATA")?;
    only(!is_data && link.ack_req.is_some(), "link.ack_req", "DATA")?;
    only(
        !matches!(kind, KindJson::Data | KindJson::Ack | KindJson::Nack) && link.seq.is_some(),
        "link.seq",
        "DATA, ACK and NACK",
    )?;
    only(!is_data && json.network.is_some(), "network", "DATA")?;
    only(!is_data && json.txns.is_some(), "txns", "DATA")?;
    only(
        !matches!(kind, KindJson::Cf | KindJson::Cc) && json.credits.is_some(),
        "credits",
        "CF and CC",
    )?;
    only(
        !matches!(kind, KindJson::Init | KindJson::InitEcho) && json.init.is_some(),
        "init",
        "INIT and INIT_ECHO",
    )?;
    if is_data {
        return emit_data(&eth, link, json);
    }
    let control = match kind {
        KindJson::Ack => LinkFrame::Ack(seq_of(link)?),
        KindJson::Nack => LinkFrame::Nack(seq_of(link)?),
        KindJson::Cf | KindJson::Cc => {
            let credits = json
                .credits
                .as_ref()
                .ok_or_else(|| EncodeError::new("credits", "missing: CF and CC frames need it"))?;
            let repr = credit_repr(credits)?;
            if kind == KindJson::Cf {
                LinkFrame::CreditUpdate(repr)
            } else {
                LinkFrame::CreditResync(repr)
            }
        }
        _ => {
            let init = json.init.as_ref().ok_or_else(|| {
                EncodeError::new("init", "missing: INIT and INIT_ECHO frames need it")
            })?;
            let repr = init_repr(init)?;
            match (kind, init.echo_nonce) {
                (KindJson::InitEcho, Some(echo_nonce)) => LinkFrame::InitEcho {
                    echo_nonce,
                    init: repr,
                },
                (KindJson::InitEcho, None) => {
                    return Err(EncodeError::new(
                        "init.echo_nonce",
                        "missing: an INIT_ECHO carries the nonce of the INIT it answers",
                    ));
                }
                (_, Some(_)) => {
                    return Err(EncodeError::new(
                        "init.echo_nonce",
                        "not allowed in an INIT: its echo nonce is reserved (WIRE-4.5-2)",
                    ));
                }
                (_, None) => LinkFrame::Init(repr),
            }
        }
    };
    let repr = FrameRepr { eth, link: control };
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut buf)
        .map_err(|e| EncodeError::new("", e.to_string()))?;
    Ok(buf)
}

fn in_range(path: &str, v: u64, lo: u64, hi: u64) -> Result<(), EncodeError> {
    if (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(EncodeError::new(
            path,
            format!("{v} is out of range {lo}..={hi}"),
        ))
    }
}

fn seq_of(link: &LinkJson) -> Result<Seq, EncodeError> {
    let seq = link.seq.ok_or_else(|| {
        EncodeError::new("link.seq", "missing: this kind carries a sequence number")
    })?;
    // WIRE-3-4: sequence numbers are 20-bit values.
    in_range("link.seq", u64::from(seq), 0, u64::from(Seq::MASK))?;
    Ok(Seq::new(seq))
}

fn credit_repr(credits: &CreditsJson) -> Result<CreditRepr, EncodeError> {
    for (v, c) in credits.counters.iter().enumerate() {
        if let Some(c) = c {
            in_range(
                &format!("credits.counters[{v}]"),
                u64::from(*c),
                0,
                u64::from(Seq::MASK),
            )?;
        }
    }
    Ok(CreditRepr {
        counters: credits.counters,
    })
}

fn init_repr(init: &InitJson) -> Result<InitRepr, EncodeError> {
    //= docs/spec/wire.md#45-init-kind-0x5-and-init_echo-kind-0x6
    //# WIRE-4.5-1 The number of VCs MUST be 1..8, the credit size a power of two in 32..2048, the
    //# MFS in 320..9216, the LLR window in 1..2^19, and the credit grant of each VC below the
    //# number of VCs 1..2^19 - 1. The entries of VCs at or above the number of VCs are reserved
    //# (WIRE-1.2-1, WIRE-1.2-2): they are not range-checked. (1.1: a grant of 0 was allowed; a VC
    //# with no credit can never carry a frame, so it is now out of range.)
    // Entries at or above the number of VCs are reserved; the JSON must give them as zero so that
    // the frame round-trips (InitRepr::validate enforces the same).
    in_range("init.vcs", u64::from(init.vcs), 1, 8)?;
    in_range("init.credit_size", u64::from(init.credit_size), 32, 2048)?;
    if !init.credit_size.is_power_of_two() {
        return Err(EncodeError::new(
            "init.credit_size",
            format!("{} is not a power of two", init.credit_size),
        ));
    }
    in_range("init.mfs", u64::from(init.mfs), 320, 9216)?;
    in_range(
        "init.llr_window",
        u64::from(init.llr_window),
        1,
        u64::from(Seq::MAX_WINDOW),
    )?;
    for (v, c) in init.credits.iter().enumerate() {
        let max = if v < usize::from(init.vcs) {
            u64::from(Seq::MAX_WINDOW - 1)
        } else {
            0
        };
        let min = u64::from(v < usize::from(init.vcs));
        in_range(&format!("init.credits[{v}]"), u64::from(*c), min, max)?;
    }
    let mut caps = Capabilities::NONE;
    for name in &init.caps {
        caps = caps
            | Capabilities::from_name(name).ok_or_else(|| {
                EncodeError::new(
                    "init.caps",
                    format!(
                        "unknown capability {name:?} (rdma, atomics, shared, packing, tagged, \
                         cut_through)"
                    ),
                )
            })?;
    }
    let role = match init.role.as_str() {
        "link_end" => Role::LinkEnd,
        "endpoint" => Role::Endpoint,
        "switch" => Role::Switch,
        // Role 3 is reserved; decode names it so, and it re-encodes raw (WIRE-1.2-4).
        "reserved" => Role::Unknown(3),
        other => {
            return Err(EncodeError::new(
                "init.role",
                format!("unknown role {other:?} (link_end, endpoint, switch)"),
            ));
        }
    };
    Ok(InitRepr {
        nonce: init.nonce,
        vcs: init.vcs,
        credit_size: init.credit_size,
        mfs: init.mfs,
        window: init.llr_window,
        credits: init.credits,
        credit_overhead: init.credit_overhead,
        caps,
        role,
    })
}

fn emit_data(
    eth: &EthernetRepr,
    link: &LinkJson,
    json: &FrameJson,
) -> Result<Vec<u8>, EncodeError> {
    let vc = link
        .vc
        .ok_or_else(|| EncodeError::new("link.vc", "missing: a DATA frame needs its VC"))?;
    let vc = Vc::new(vc)
        .ok_or_else(|| EncodeError::new("link.vc", format!("{vc} is out of range 0..=7")))?;
    let header = DataHeader {
        vc,
        flags: DataFlags {
            replay: link.replay.unwrap_or(false),
            ack_req: link.ack_req.unwrap_or(false),
        },
        seq: seq_of(link)?,
    };
    let network = json.network.as_ref().ok_or_else(|| {
        EncodeError::new("network", "missing: a DATA frame needs a network header")
    })?;
    let txns = json
        .txns
        .as_ref()
        .ok_or_else(|| EncodeError::new("txns", "missing: a DATA frame carries transactions"))?;
    let data = network_repr(network)?;
    //= docs/spec/wire.md#5-data-frames-the-network-header
    //# WIRE-5-1 A DATA frame MUST carry at least one transaction.
    if txns.is_empty() || txns.len() > ethlink_protocol::MAX_TXNS_PER_FRAME {
        return Err(EncodeError::new(
            "txns",
            format!(
                "{} transactions: a DATA frame carries 1..=255 (WIRE-5-1)",
                txns.len()
            ),
        ));
    }
    let reprs = txns
        .iter()
        .enumerate()
        .map(|(i, t)| txn_repr(t).map_err(|e| e.prefixed(&format!("txns[{i}]"))))
        .collect::<Result<Vec<_>, _>>()?;
    // Emit each transaction on its own first, so an error names the transaction.
    for (i, r) in reprs.iter().enumerate() {
        let mut scratch = vec![0u8; r.buffer_len()];
        r.emit(&mut scratch)
            .map_err(|e| EncodeError::new(format!("txns[{i}]"), e.to_string()))?;
    }
    let data = DataRepr {
        txns: Txns::Slice(&reprs),
        ..data
    };
    let len = data_frame_len(eth, &data);
    let mut buf = vec![0u8; len];
    emit_data_frame(eth, header, &data, &mut buf)
        .map_err(|e| EncodeError::new("txns", e.to_string()))?;
    Ok(buf)
}

fn network_repr(n: &NetworkJson) -> Result<DataRepr<'static>, EncodeError> {
    let gpu = |path: &str, v: u16| {
        GpuId::new(v).ok_or_else(|| {
            EncodeError::new(path, "0xFFFF is the reserved GPU id (WIRE-5-3)".to_owned())
        })
    };
    in_range("network.path.stack", u64::from(n.path.stack), 0, 15)?;
    in_range("network.path.port", u64::from(n.path.port), 0, 15)?;
    Ok(DataRepr {
        dst: gpu("network.dst_gpu", n.dst_gpu)?,
        src: gpu("network.src_gpu", n.src_gpu)?,
        path: PathId::from_parts(n.path.stack, n.path.port),
        txns: Txns::Slice(&[]),
    })
}

fn space(s: SpaceJson) -> Space {
    match s {
        SpaceJson::Global => Space::Global,
        SpaceJson::Shared => Space::Shared,
    }
}

fn width(w: u8) -> Result<Width, EncodeError> {
    match w {
        4 => Ok(Width::W4),
        8 => Ok(Width::W8),
        other => Err(EncodeError::new(
            "width",
            format!("{other}: an atomic operand is 4 or 8 bytes (WIRE-6.5-1)"),
        )),
    }
}

/// Checks that `v` fits an operand of `w` bytes.
fn operand(key: &str, v: u64, w: Width) -> Result<u64, EncodeError> {
    if w == Width::W4 && v > u64::from(u32::MAX) {
        return Err(EncodeError::new(
            key,
            format!("{v} does not fit a 4-byte operand"),
        ));
    }
    Ok(v)
}

fn atomic_value(
    w: Option<u8>,
    old: Option<u64>,
    ok: bool,
) -> Result<Option<AtomicValue>, EncodeError> {
    match (ok, w, old) {
        (true, Some(4), Some(v)) => u32::try_from(v)
            .map(|v| Some(AtomicValue::U32(v)))
            .map_err(|_| EncodeError::new("old", format!("{v} does not fit a 4-byte operand"))),
        (true, Some(8), Some(v)) => Ok(Some(AtomicValue::U64(v))),
        (true, Some(other), Some(_)) => Err(EncodeError::new(
            "width",
            format!("{other}: an atomic result is 4 or 8 bytes (WIRE-6.9-4)"),
        )),
        (true, _, _) => Err(EncodeError::new(
            "old",
            "an OK atomic response needs both `width` and `old` (WIRE-6.9-4)",
        )),
        (false, None, None) => Ok(None),
        (false, _, _) => Err(EncodeError::new(
            "old",
            "a response whose status is not OK carries no data: drop `width` and `old` (WIRE-6.9-1)",
        )),
    }
}

fn txn_repr(t: &TxnJson) -> Result<TxnRepr<'_>, EncodeError> {
    let target = |s: SpaceJson, key: u32, addr: u64| MemTarget {
        space: space(s),
        key,
        addr,
    };
    Ok(match t {
        TxnJson::Load {
            tag,
            space,
            key,
            address,
            length,
            ..
        } => TxnRepr::Load {
            tag: *tag,
            target: target(*space, *key, address.0),
            len: *length,
        },
        TxnJson::Store {
            tag,
            space,
            key,
            address,
            data,
            ..
        } => TxnRepr::Store {
            tag: *tag,
            target: target(*space, *key, address.0),
            data: &data.0,
        },
        TxnJson::AtomicFadd {
            tag,
            space,
            key,
            address,
            width: w,
            addend,
            ..
        } => {
            let w = width(*w)?;
            TxnRepr::Atomic {
                tag: *tag,
                target: target(*space, *key, address.0),
                width: w,
                op: AtomicOp::FetchAdd {
                    addend: operand("addend", *addend, w)?,
                },
            }
        }
        TxnJson::AtomicSwap {
            tag,
            space,
            key,
            address,
            width: w,
            value,
            ..
        } => {
            let w = width(*w)?;
            TxnRepr::Atomic {
                tag: *tag,
                target: target(*space, *key, address.0),
                width: w,
                op: AtomicOp::Swap {
                    value: operand("value", *value, w)?,
                },
            }
        }
        TxnJson::AtomicCas {
            tag,
            space,
            key,
            address,
            width: w,
            compare,
            value,
            ..
        } => {
            let w = width(*w)?;
            TxnRepr::Atomic {
                tag: *tag,
                target: target(*space, *key, address.0),
                width: w,
                op: AtomicOp::CompareSwap {
                    compare: operand("compare", *compare, w)?,
                    value: operand("value", *value, w)?,
                },
            }
        }
        TxnJson::Fence { tag, .. } => TxnRepr::Fence { tag: *tag },
        TxnJson::RdmaWrite {
            tag,
            space,
            key,
            address,
            offset,
            total_length,
            data,
            ..
        } => TxnRepr::RdmaWrite {
            tag: *tag,
            target: target(*space, *key, address.0),
            offset: *offset,
            total: *total_length,
            data: &data.0,
        },
        TxnJson::RdmaRead {
            tag,
            space,
            key,
            address,
            total_length,
            ..
        } => TxnRepr::RdmaRead {
            tag: *tag,
            target: target(*space, *key, address.0),
            total: *total_length,
        },
        TxnJson::LoadResp {
            tag, status, data, ..
        } => TxnRepr::LoadResp {
            tag: *tag,
            status: status.0,
            data: &data.0,
        },
        TxnJson::StoreResp { tag, status, .. } => TxnRepr::StoreResp {
            tag: *tag,
            status: status.0,
        },
        TxnJson::AtomicFaddResp {
            tag,
            status,
            width,
            old,
            ..
        } => TxnRepr::AtomicResp {
            tag: *tag,
            kind: AtomicKind::FetchAdd,
            status: status.0,
            old: atomic_value(*width, *old, status.0.is_ok())?,
        },
        TxnJson::AtomicSwapResp {
            tag,
            status,
            width,
            old,
            ..
        } => TxnRepr::AtomicResp {
            tag: *tag,
            kind: AtomicKind::Swap,
            status: status.0,
            old: atomic_value(*width, *old, status.0.is_ok())?,
        },
        TxnJson::AtomicCasResp {
            tag,
            status,
            width,
            old,
            ..
        } => TxnRepr::AtomicResp {
            tag: *tag,
            kind: AtomicKind::CompareSwap,
            status: status.0,
            old: atomic_value(*width, *old, status.0.is_ok())?,
        },
        TxnJson::FenceResp { tag, status, .. } => TxnRepr::FenceResp {
            tag: *tag,
            status: status.0,
        },
        TxnJson::RdmaCompletion {
            tag,
            status,
            total_length,
            ..
        } => TxnRepr::RdmaCompletion {
            tag: *tag,
            status: status.0,
            total: *total_length,
        },
        TxnJson::RdmaReadResp {
            tag,
            status,
            offset,
            total_length,
            data,
            ..
        } => TxnRepr::RdmaReadResp {
            tag: *tag,
            status: status.0,
            offset: *offset,
            total: *total_length,
            data: &data.0,
        },
        TxnJson::Unknown {
            code,
            flags_status,
            tag,
            header,
            data,
            ..
        } => {
            if ethlink_protocol::Opcode::from_u8(*code).hlen().is_some() {
                return Err(EncodeError::new(
                    "code",
                    format!(
                        "{code:#04x} is a defined opcode ({}): use \"opcode\": \"{}\"",
                        ethlink_protocol::Opcode::from_u8(*code).name(),
                        ethlink_protocol::Opcode::from_u8(*code).name()
                    ),
                ));
            }
            if header.0.len() % 4 != 0 {
                return Err(EncodeError::new(
                    "header",
                    format!(
                        "{} bytes: the header is a whole number of 32-bit words",
                        header.0.len()
                    ),
                ));
            }
            TxnRepr::Unknown {
                opcode: *code,
                flags_status: *flags_status,
                tag: *tag,
                header: &header.0,
                data: &data.0,
            }
        }
    })
}

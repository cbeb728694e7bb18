//! What the harness holds every device to, whatever its backend (docs/conformance.md §3.7): the
//! bounds of what it may hand the harness, the checks of what it says about itself, and the wire
//! rules every frame it sends must meet.
//!
//! A device under test is not trusted. What it says of itself (`hello`, the parameters in force
//! after `reset`) is checked before any case reads it; everything it hands over is bounded, so
//! that no answer can make the harness run out of memory; every text it supplies is escaped and
//! cut before a report shows it, so that it can neither break a report's format nor forge its
//! lines; and every frame it sends is checked against the sender's rules of wire.md, so that a
//! frame no conforming receiver would take fails the case that saw it instead of passing
//! unnoticed.

use ethlink_protocol::{
    Capabilities, ErrorKind, Field, Frame, FrameKind, FrameRepr, LinkFrame, MacAddr,
};

use crate::case::Stop;
use crate::device::{Description, LinkParams, MAX_TICK_NS, RATE_RANGE_GBPS, Role};

/// Most ports a device may declare.
pub const MAX_PORTS: u16 = 1024;
/// Most outputs (frames, deliveries, losses, link events, completions) one `advance` may return.
pub const MAX_OUTPUTS: usize = 65_536;
/// Most bytes of frames and payloads one `advance` may return.
pub const MAX_ADVANCE_BYTES: usize = 8 << 20;
/// Most bytes of frames that may cross the device's ports in one case, both ways (they are
/// logged for its report).
pub const MAX_CASE_BYTES: usize = 64 << 20;
/// Most counters a device may report.
pub const MAX_COUNTERS: usize = 65_536;
/// Longest counter name, in bytes.
pub const MAX_COUNTER_NAME: usize = 256;
/// Longest text of a device (a refusal, an error, a line of its standard error) a report
/// shows, in characters; the rest is cut.
pub const MAX_TEXT: usize = 1024;
/// Longest device name a report shows, in characters.
pub const MAX_NAME: usize = 200;

/// `text` as a report may show it: every control character escaped (`\n`, `\r`, `\t`, `\u{..}`,
/// and `\\` for a backslash), so that no line of a device's text can pass for a line of the
/// report, and cut at `max` characters of the escaped text with a note of how much was left out.
pub fn device_text(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max) + 16);
    let mut shown = 0usize;
    for (at, c) in text.char_indices() {
        let piece = match c {
            '\n' => "\\n".to_owned(),
            '\r' => "\\r".to_owned(),
            '\t' => "\\t".to_owned(),
            '\\' => "\\\\".to_owned(),
            c if c.is_control() || c == '\u{FFFE}' || c == '\u{FFFF}' => {
                format!("\\u{{{:x}}}", u32::from(c))
            }
            c => c.to_string(),
        };
        let n = piece.chars().count();
        if shown + n > max {
            out.push_str(&format!("... ({} more bytes)", text.len() - at));
            break;
        }
        out.push_str(&piece);
        shown += n;
    }
    out
}

/// Checks what a device said in answer to `hello`, and makes its name safe to show: the role's
/// number of ports (a link end has one, an endpoint or a switch 1 to [`MAX_PORTS`]), known
/// capability names, a name that is not empty. The error says what is wrong.
pub fn check_description(d: &mut Description) -> Result<(), String> {
    if d.name.trim().is_empty() {
        return Err("the device's hello gives an empty name".into());
    }
    d.name = device_text(&d.name, MAX_NAME);
    match d.role {
        Role::LinkEnd if d.ports != 1 => {
            return Err(format!(
                "the device says it is a link end with {} ports: a link end has exactly one",
                d.ports
            ));
        }
        _ if d.ports == 0 || d.ports > MAX_PORTS => {
            return Err(format!(
                "the device says it has {} ports: the harness takes 1 to {MAX_PORTS}",
                d.ports
            ));
        }
        _ => {}
    }
    for c in &mut d.caps {
        if Capabilities::from_name(c).is_none() {
            return Err(format!(
                "the device declares the capability {:?}, which classes.md Table CLS-T2 does not \
                 define (rdma, atomics, shared, packing, tagged, cut_through)",
                device_text(c, 64)
            ));
        }
    }
    d.caps.sort();
    d.caps.dedup();
    if let Some(t) = d.tick_ns
        && !(1..=MAX_TICK_NS).contains(&t)
    {
        return Err(format!(
            "the device declares a clock tick of {t} ns: link.md LINK-1-5 allows 1 to \
             {MAX_TICK_NS} ns"
        ));
    }
    if let Some(r) = d.rate_gbps
        && !RATE_RANGE_GBPS.contains(&r)
    {
        return Err(format!(
            "the device declares a line rate of {r} Gb/s: the cases are designed for {} to {} \
             Gb/s (docs/conformance.md §4.2)",
            RATE_RANGE_GBPS.start(),
            RATE_RANGE_GBPS.end()
        ));
    }
    Ok(())
}

/// The name of each parameter of `p` with its value, in the order of link.md Table LINK-T1, then
/// `llr_max_age` (Table LINK-T2).
fn fields(p: &LinkParams) -> [(&'static str, Option<u64>); 18] {
    [
        ("vcs", p.vcs.map(u64::from)),
        ("credit_size", p.credit_size.map(u64::from)),
        ("rx_credits", p.rx_credits.map(u64::from)),
        ("credit_overhead", p.credit_overhead.map(u64::from)),
        ("mfs", p.mfs.map(u64::from)),
        ("llr_window", p.llr_window.map(u64::from)),
        ("replay_max_frames", p.replay_max_frames.map(u64::from)),
        ("replay_max_bytes", p.replay_max_bytes.map(u64::from)),
        ("ack_spacing", p.ack_spacing.map(u64::from)),
        ("ack_timer_ns", p.ack_timer_ns),
        ("replay_timer_ns", p.replay_timer_ns),
        ("replay_count_max", p.replay_count_max.map(u64::from)),
        ("cf_min_credits", p.cf_min_credits.map(u64::from)),
        ("cf_min_interval_ns", p.cf_min_interval_ns),
        ("cf_max_interval_ns", p.cf_max_interval_ns),
        ("cc_interval_ns", p.cc_interval_ns),
        ("init_interval_ns", p.init_interval_ns),
        ("llr_max_age_ns", p.llr_max_age_ns),
    ]
}

/// Checks the link parameters a device answered `reset` with against what the setup `asked`:
/// every field of link.md Table LINK-T1 given, each field the setup set given the value it set
/// (a device that cannot use a value refuses the reset, it never replaces the value), and the
/// whole within the ranges of the table (checked as the reference checks its own
/// configuration). The cases compute their expectations from these values, so a value out of
/// range would make them judge nonsense.
pub fn check_params(asked: &LinkParams, got: &LinkParams) -> Result<(), String> {
    let missing: Vec<&str> = fields(got)
        .iter()
        .filter(|(_, v)| v.is_none())
        .map(|(n, _)| *n)
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "the answer to reset leaves out the parameter{} {}: it gives every parameter in \
             force (docs/conformance.md \u{a7}3.3)",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", ")
        ));
    }
    for ((name, want), (_, have)) in fields(asked).iter().zip(fields(got).iter()) {
        if let (Some(w), Some(h)) = (want, have)
            && w != h
        {
            return Err(format!(
                "the setup asked for {name} {w} and the device answered reset with {name} {h}: \
                 a device that cannot use a value refuses the reset, it never replaces the value"
            ));
        }
    }
    let base = ethlink_link::Config::default();
    crate::reference::link_end::apply(&base, got)
        .validate()
        .map_err(|e| {
            format!("the device answered reset with a parameter outside link.md Table LINK-T1: {e}")
        })
}

/// Whether `setup` asks for no setting a device may be unable to use: no link parameter, no
/// endpoint setting, no switch latency or residence (a GPU id, a seed and a forwarding table
/// every device of its role takes). Refusing such a reset is a broken boundary, not an
/// unsupported setting.
pub fn only_defaults(setup: &crate::device::Setup) -> bool {
    setup.link == LinkParams::default()
        && setup
            .endpoint
            .as_deref()
            .is_none_or(|e| *e == crate::device::EndpointParams::default())
        && setup.latency_ns.is_none()
        && setup.max_residence_ns.is_none()
}

/// Checks a frame the device sent against the sender's rules of wire.md §2 to §4 that any
/// receiver would notice: its size (at least 64 B, at most the device's own MFS), its FCS (the
/// CRC, or the stomped FCS only from a device that declares `cut_through`), the EtherType, the
/// link header's version and kind, the source address (unicast), a control frame's body, and the
/// 802.1Q tag only from a device that declares `tagged`. The body of a DATA frame is the upper
/// layer's and is not read here. A frame that breaks a rule fails the case with that rule.
pub fn check_sent(bytes: &[u8], mfs: usize, caps: &[String]) -> Result<(), Stop> {
    let has = |name: &str| caps.iter().any(|c| c == name);
    let len = bytes.len();
    let fail = |req: &'static str, expected: &str, seen: String| {
        Err(Stop::fail(
            req,
            format!("every frame the device sends: {expected}"),
            seen,
        ))
    };
    if len < ethlink_protocol::MIN_FRAME_LEN {
        return fail(
            "WIRE-2.4-1",
            "at least 64 B with its FCS, padded",
            format!("a frame of {len} B"),
        );
    }
    //= docs/spec/wire.md#24-frame-size-and-padding
    //# WIRE-2.4-8 A transmitter MUST NOT send a frame longer than the MFS in force on its link.
    if len > mfs {
        return fail(
            "WIRE-2.4-8",
            &format!("at most the MFS in force ({mfs} B)"),
            format!("a frame of {len} B"),
        );
    }
    let frame = match Frame::new_checked(bytes, mfs) {
        Ok(f) => f,
        Err(e) => {
            return match e.kind {
                ErrorKind::StompedFcs if has("cut_through") => Ok(()),
                ErrorKind::StompedFcs => fail(
                    "CLS-3-3",
                    "no stomped FCS from a device that does not declare cut_through",
                    format!("a frame of {len} B ending with the stomped FCS"),
                ),
                ErrorKind::BadFcs => fail(
                    "WIRE-2.5-1",
                    "an FCS that is the CRC-32 of the frame",
                    format!("a frame of {len} B with a bad FCS"),
                ),
                _ => match e.field {
                    Field::EtherType => fail(
                        "WIRE-2.1-1",
                        "the EtherType 0x88B5",
                        format!("a frame of {len} B with another EtherType"),
                    ),
                    Field::Version => fail(
                        "WIRE-3-1",
                        "link header version 1",
                        format!("a frame of {len} B with another version"),
                    ),
                    Field::Kind => fail(
                        "WIRE-3-3",
                        "a defined kind (0x0 to 0x6)",
                        format!("a frame of {len} B of kind 0x7..0xF"),
                    ),
                    _ => fail(
                        "WIRE-2.4-1",
                        "an Ethernet header and a link header",
                        format!("a frame of {len} B that does not hold them: {e}"),
                    ),
                },
            };
        }
    };
    let eth = frame.ethernet();
    if is_group(eth.src) {
        return fail(
            "WIRE-2.3-1",
            "the port's own unicast address as its source",
            format!("the source address {} (a group address)", eth.src),
        );
    }
    if eth.vlan.is_some() && !has("tagged") {
        return fail(
            "CLS-3-2",
            "no 802.1Q tag from a device that does not declare tagged",
            "a tagged frame".into(),
        );
    }
    if frame.kind() == FrameKind::Data {
        return Ok(());
    }
    match FrameRepr::parse(&frame) {
        Ok(r) => {
            debug_assert!(!matches!(r.link, LinkFrame::Data { .. }));
            Ok(())
        }
        Err(e) if matches!(e.field, Field::ControlBody | Field::Padding) => fail(
            "WIRE-4-1",
            "a control body of exactly its kind's size, then padding only",
            format!("a {:?} frame of {len} B: {e}", frame.kind()),
        ),
        Err(e) => fail(
            "WIRE-4.5-1",
            "INIT and INIT_ECHO fields within their ranges",
            format!("a {:?} frame of {len} B: {e}", frame.kind()),
        ),
    }
}

/// Checks the counters a device reported: at most [`MAX_COUNTERS`] of them, each named with
/// letters, digits, `_` and `.` only (the names of the spec's counter tables), in at most
/// [`MAX_COUNTER_NAME`] bytes.
pub fn check_counters(c: &crate::device::Counters) -> Result<(), String> {
    if c.len() > MAX_COUNTERS {
        return Err(format!(
            "the device reports {} counters, more than the {MAX_COUNTERS} the harness reads",
            c.len()
        ));
    }
    match c.keys().find(|n| !is_counter_name(n)) {
        Some(bad) => Err(format!(
            "the device reports a counter named {:?}: a counter's name is 1 to \
             {MAX_COUNTER_NAME} letters, digits, '_' and '.', as the spec's tables write it",
            device_text(bad, 64)
        )),
        None => Ok(()),
    }
}

fn is_counter_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= MAX_COUNTER_NAME
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
}

/// The reasons a lost payload may give (docs/conformance.md \u{a7}3.5).
pub const LOST_REASONS: [&str; 4] = [
    "unknown_fate",
    "exceeds_peer_mfs",
    "vc_not_agreed",
    "withdrawn",
];
/// The reasons a link may go down for.
pub const DOWN_REASONS: [&str; 3] = ["flush", "physical", "peer_restart"];

/// Checks the fields of one output that the boundary defines: a VC below 8, a known reason, a
/// completion status that is a status name (`OK`, `UNKNOWN(0x42)`, ...) and names a tag or an id.
/// The error describes the output.
pub fn check_output(o: &crate::device::Output) -> Result<(), String> {
    use crate::device::Output;
    match o {
        Output::Delivered { vc, .. } | Output::Lost { vc, .. } if *vc >= 8 => {
            Err(format!("an output on VC {vc}: VCs are 0 to 7"))
        }
        Output::Lost { reason, .. } if !LOST_REASONS.contains(&reason.as_str()) => Err(format!(
            "a lost payload with the reason {:?}, which is none of {}",
            device_text(reason, 64),
            LOST_REASONS.join(", ")
        )),
        Output::LinkDown { reason, .. } if !DOWN_REASONS.contains(&reason.as_str()) => {
            Err(format!(
                "a link down with the reason {:?}, which is none of {}",
                device_text(reason, 64),
                DOWN_REASONS.join(", ")
            ))
        }
        Output::Completion { status, .. }
            if status.is_empty()
                || status.len() > 32
                || !status.bytes().all(|b| {
                    b.is_ascii_uppercase() || b.is_ascii_digit() || b"_()x".contains(&b)
                }) =>
        {
            Err(format!(
                "a completion with the status {:?}, which is no status name of transaction.md \
                 \u{a7}3",
                device_text(status, 64)
            ))
        }
        Output::Completion {
            tag: None,
            id: None,
            ..
        } => Err("a completion that names neither a tag nor an id".into()),
        _ => Ok(()),
    }
}

/// Whether `mac` is a group (multicast or broadcast) address: bit 0 of its first octet.
fn is_group(mac: MacAddr) -> bool {
    mac.0[0] & 1 != 0
}

#[cfg(test)]
mod tests {
    use super::{MAX_NAME, check_description, device_text};
    use crate::device::{Description, Role};

    #[test]
    fn a_device_text_cannot_forge_a_line_of_the_report() {
        assert_eq!(
            device_text("acme\nFAIL LE-LLR-1\nresult: PASS", 100),
            "acme\\nFAIL LE-LLR-1\\nresult: PASS"
        );
        assert_eq!(device_text("a\u{1b}[2Jb", 100), "a\\u{1b}[2Jb");
        assert_eq!(device_text("été", 100), "été");
        assert_eq!(device_text("abcdef", 3), "abc... (3 more bytes)");
    }

    #[test]
    fn hello_is_checked_and_its_name_made_safe() {
        let mut d = Description {
            version: 2,
            name: "x\nresult: PASS".repeat(100),
            role: Role::LinkEnd,
            caps: vec!["tagged".into(), "tagged".into()],
            ports: 1,
            tick_ns: None,
            rate_gbps: None,
        };
        check_description(&mut d).unwrap();
        assert!(!d.name.contains('\n'));
        assert!(d.name.chars().count() < MAX_NAME + 30);
        assert_eq!(d.caps, ["tagged"]);
        d.ports = 2;
        assert!(check_description(&mut d).is_err());
        d.ports = 1;
        d.caps = vec!["warp".into()];
        assert!(check_description(&mut d).unwrap_err().contains("\"warp\""));
        d.caps = vec![];
        d.tick_ns = Some(crate::device::MAX_TICK_NS);
        d.rate_gbps = Some(25);
        check_description(&mut d).unwrap();
        d.tick_ns = Some(crate::device::MAX_TICK_NS + 1);
        assert!(check_description(&mut d).unwrap_err().contains("LINK-1-5"));
        d.tick_ns = Some(0);
        assert!(check_description(&mut d).is_err());
        d.tick_ns = None;
        d.rate_gbps = Some(24);
        assert!(check_description(&mut d).unwrap_err().contains("24 Gb/s"));
    }
}
